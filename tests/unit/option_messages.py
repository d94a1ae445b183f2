#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The messages of both executables about bad option values (issue 28.4), without a device:

  - one clipping rule for every value a message echoes (core: pb_opts_clip): at most 40
    characters, a longer value as its start and its end around "...", so a 10 KB value or
    path never pushes the reason (the errno text) out of the first line;
  - control bytes never reach the terminal raw (they print as '?');
  - a range a message states ([0, N]) is the one docs/verbs.md gives for that option.

usage: option_messages.py verbs BINARY | mpi BINARY (mpi: run under `mpirun -np 1`)
Python standard library only.  Exit 0 = pass, 1 = fail, 77 = cannot run here.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
LONG = "7" * 10240
CTRL = "wr\x01\x1b[31m\nite"
MAX_LINE = 300
CLIP = 40  # PB_CLIP_CHARS


def run(layer: str, binary: str, args: list) -> tuple[int, str]:
    if layer == "mpi":
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        cmd = ["mpirun", "-np", "1", binary, *args]
    else:
        env, cmd = None, [binary, "--loopback", *args]
    p = subprocess.run(cmd, capture_output=True, timeout=120, env=env, check=False)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def cases(layer: str) -> list:
    """(what, args, reason the first error line must end with or None, echoed value)."""
    c = []
    for name, value, why in (("a 10 KB value", LONG, "File name too long"),
                             ("control bytes", CTRL, "No such file or directory")):
        c += [(f"--test with {name}", ["--test", value], None, value),
              (f"--output in a missing directory, {name}", ["-o", f"/nonexistent/{value}"],
               why, value),
              (f"--env-json in a missing directory, {name}",
               ["--env-json", f"/nonexistent/{value}"], why, value),
              (f"--pin-list with {name}", ["--pin", "list", "--pin-list", value], None, value),
              (f"--timeout with {name}", ["--timeout", value], None, value)]
        if layer == "mpi":
            c.append((f"--pattern with {name}", ["--pattern", value], None, value))
        else:
            c += [(f"-x with {name}", ["-x", value], None, value),
                  (f"-I with {name}", ["-I", value], None, value),
                  (f"--connect with {name}", ["--connect", value, "--loopback"], None, value)]
    return c


def check_message(layer: str, binary: str, what: str, args: list, reason, value) -> list:
    rc, err = run(layer, binary, args)
    bad = []
    first = next((ln for ln in err.splitlines() if f"pairbench-{layer}: error:" in ln), None)
    if rc == 0 or first is None:
        return [f"{what}: exit {rc}, no error line"]
    if len(first) > MAX_LINE:
        bad.append(f"{what}: a first line of {len(first)} characters")
    if reason and not first.rstrip().endswith(reason):
        bad.append(f"{what}: the reason {reason!r} is not at the end of {first[-120:]!r}")
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", err) or "\nite" in err:
        bad.append(f"{what}: control bytes printed raw: {first[:120]!r}")
    if value == LONG and "7" * (CLIP + 1) in first:
        bad.append(f"{what}: the value is echoed beyond {CLIP} characters")
    return bad


def check_ranges(layer: str, binary: str) -> list:
    """The [0, N] a range message states equals the range docs/verbs.md gives."""
    if layer != "verbs":
        return []
    bad = []
    table = (DOCS / "verbs.md").read_text()
    for opt in ("-x/--gid-index", "-I/--inline-size"):
        short = opt.split("/")[0]
        _, err = run(layer, binary, [short, "100000"])
        m = re.search(r"\[0, (\d+)\]", err)
        if not m:
            bad.append(f"{short} 100000: no range in {err.strip()[:200]!r}")
            continue
        row = next((ln for ln in table.splitlines() if ln.startswith(f"| `{opt}")), "")
        if f"0..{m.group(1)}" not in row:
            bad.append(f"{short}: the code accepts [0, {m.group(1)}], docs/verbs.md's row says "
                       f"{row[:160]!r}")
        fm = (DOCS / "failure-modes.md").read_text()
        for stated in re.findall(rf"{re.escape(short)}[^|]*?integer in \[0, (\d+)\]", fm):
            if stated != m.group(1):
                bad.append(f"{short}: docs/failure-modes.md says [0, {stated}], the code "
                           f"[0, {m.group(1)}]")
    return bad


def check_env_json_full(layer: str, binary: str) -> list:
    """--env-json /dev/full: reported before the run (the record is written at its end),
    not after it; here, without a device, before the probe that finds none."""
    rc, err = run(layer, binary, ["--env-json", "/dev/full", "--test", "allreduce" if
                                  layer == "mpi" else "write_lat", "-s", "8"])
    first = next((ln for ln in err.splitlines() if "error:" in ln), "")
    if rc in (0, 77) or "--env-json /dev/full" not in first or \
            "No space left on device" not in first:
        return [f"--env-json /dev/full: exit {rc}, first error {first[:160]!r} (not reported "
                "before the run)"]
    return []


def check_cm_templates(layer: str) -> list:
    """The client's "no server answered" message names the wait that timed out; it cannot
    run without a device (the rig runs verbs.noserver), so its template is filled here with
    every phrase the connect code waits on ('no answer to the server's answer' was one)."""
    if layer != "verbs":
        return []
    bad = []
    src = DOCS.parent / "verbs"
    for name in ("vb_cm.c", "vb_cm_tcp.c"):
        text = (src / name).read_text()
        phrases = set(re.findall(r'(?:vb_cm_wait|vb_watch_start)\([^;]*?"([^"]+)"\)', text))
        phrases |= set(re.findall(r'what = "([^"]+)"', text))
        # The message of a wait that timed out ("still waiting for %s"); the other one, the
        # deadline passing between attempts, names the last attempt's outcome instead.
        templates = re.findall(r'"(no server answered at [^"]*waiting for %s[^"]*)"', text)
        if not templates:
            bad.append(f"{name}: no 'no server answered ... waiting for %s' message found")
        for tmpl in templates:
            for ph in sorted(phrases):
                msg = tmpl.replace("%s", "10.0.0.1", 1).replace("%s", ph)
                if "answer to the server's answer" in msg or f"waiting for {ph}" not in msg:
                    bad.append(f"{name}: {msg!r}")
    return bad


def main() -> int:
    layer, binary = sys.argv[1], os.path.abspath(sys.argv[2])
    if layer == "mpi" and not shutil.which("mpirun"):
        print("skip: mpirun not found")
        return 77
    bad = []
    for what, args, reason, value in cases(layer):
        bad += check_message(layer, binary, what, args, reason, value)
    bad += check_ranges(layer, binary)
    bad += check_cm_templates(layer)
    bad += check_env_json_full(layer, binary)
    for b in bad:
        print(f"FAIL: {b}")
    if not bad:
        print(f"ok: {len(cases(layer))} option messages of pairbench-{layer}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
