"""The rig's soak runs as a timeline (results/soak-rig-2026-11-28/README.md): each flow's messages
per 0.2 s bucket and every counter that moved per 0.5 s sample, both on the wall clock relative
to the soak's start, and the event (link down, process stop) from event.txt / flap.txt.

usage: python3 summarize.py DIR   (DIR: s-*B-pair*.pbsoak, c-*.pbcnt.csv, event.txt|flap.txt)
stdlib only."""

from __future__ import annotations

import glob
import struct
import sys
from pathlib import Path


def main(d: str) -> None:
    start = None
    for path in sorted(glob.glob(f"{d}/s-*B-pair*.pbsoak")):
        b = Path(path).read_bytes()
        h = struct.unpack_from("=8s8I5Qqd", b)
        n = (len(b) - 512) // 16
        msgs = [struct.unpack_from("=QII", b, 512 + 16 * i) for i in range(n)]
        start = h[14] / 1e9 if start is None else min(start, h[14] / 1e9)
        print(f"{Path(path).name}: complete={h[6]} partial={h[7]} bucket {h[10] / 1e9:g} s, "
              f"{n} buckets on file")
        print("  messages per bucket: " + " ".join(str(m) for m, _, _ in msgs))
        if any(c for _, c, _ in msgs):
            print("  checked per bucket:  " + " ".join(str(c) for _, c, _ in msgs))
            print("  corrupt per bucket:  " + " ".join(str(x) for _, _, x in msgs))
    for name in ("event.txt", "flap.txt"):
        ev = Path(d, name)
        if ev.is_file() and start is not None:
            w = ev.read_text().split()
            print(f"event: {w[0]} {float(w[1]) - start:.2f}..{float(w[2]) - start:.2f} s, "
                  f"{w[3]} {float(w[4]) - start:.2f}..{float(w[5]) - start:.2f} s "
                  "(before..after the command, after the soak's start)")
    for path in glob.glob(f"{d}/c-*.pbcnt.csv"):
        lines = Path(path).read_text().splitlines()
        print(f"{Path(path).name}: {lines[1][2:]}")
        hdr, vals = lines[2].split(","), [ln.split(",") for ln in lines[3:]]
        for k in range(1, len(vals)):
            t = int(vals[k][1]) / 1e9 - (start or 0)
            moved = {hdr[i].split("/", 2)[2]: int(vals[k][i]) - int(vals[k - 1][i])
                     for i in range(2, len(hdr))
                     if vals[k][i] and vals[k - 1][i] and vals[k][i] != vals[k - 1][i]}
            if moved:
                print(f"  {t:+7.2f} s  " + ", ".join(f"{c} {v:+d}" for c, v in moved.items()))


if __name__ == "__main__":
    main(sys.argv[1])
