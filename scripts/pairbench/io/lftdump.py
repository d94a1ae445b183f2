"""Forwarding tables as `ibroute` prints them (`pairbench fabric --lft FILE`): the
concatenated output of `ibroute` for every switch (e.g. `for g in $(ibswitches | awk
'{print $3}'); do ibroute -G $g; done`, or `dump_lfts.sh`), each block

    Unicast lids [0x0-0x8] of switch Lid 3 guid 0x... (MF0;leaf1:MQM8700/U1):
      Lid  Out   Destination
           Port     Info
    0x0005 001 : (Channel Adapter portguid 0x...: 'node0001 mlx5_0')
    0x0002 033 : (Switch portguid 0x...: 'MF0;spine1:MQM8700/U1')
    8 valid lids dumped

gives, per switch (named as pairbench.io.fabrictopo names it from ibnetdiscover's
description), the out port towards each node (named by its adapter's description's first
word). Rows towards switches are not needed (routes run between nodes) and are skipped.
A bad file is a UsageError naming the file and line."""

from __future__ import annotations

import re
from pathlib import Path

from pairbench.errors import UsageError
from pairbench.io.fabrictopo import switch_name

HEAD = re.compile(r"^Unicast lids \[[^\]]*\] of switch .*?guid (?P<guid>0x[0-9a-fA-F]+)"
                  r"(?: \((?P<desc>.*)\))?:\s*$")
ROW = re.compile(r"^(?P<lid>0x[0-9a-fA-F]+)\s+(?P<port>\d+)\s*:\s*\((?P<kind>Channel Adapter|"
                 r"Switch|Router) portguid 0x[0-9a-fA-F]+:\s*'(?P<desc>[^']*)'\)\s*$")
SKIP = re.compile(r"^\s*(Lid\s+Out|Port\s+Info|\d+ (valid )?lids dumped|#|$)")


def load(path: Path | str) -> dict[str, dict[str, int]]:
    """{switch: {node: out port}} of an ibroute dump."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--lft {p}: unreadable ({exc})") from None
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for no, ln in enumerate(text.splitlines(), 1):
        m = HEAD.match(ln.strip())
        if m:
            name = switch_name(m["desc"] or "") or f"S-{m['guid'][2:].lower().zfill(16)}"
            if name in out:
                raise UsageError(f"{p}: line {no}: switch {name} is dumped twice")
            cur = out[name] = {}
            continue
        if SKIP.match(ln.strip()) or not ln.strip():
            continue
        m = ROW.match(ln.strip())
        if not m or cur is None:
            raise UsageError(f"{p}: line {no}: neither an ibroute block header ('Unicast "
                             f"lids ... of switch ... guid ...') nor a row of one: "
                             f"{ln.strip()[:60]!r}")
        if m["kind"] != "Channel Adapter":
            continue
        words = m["desc"].split()
        if words:
            cur[words[0]] = int(m["port"])
    if not out:
        raise UsageError(f"{p}: no 'Unicast lids ... of switch' block: not ibroute output")
    return out
