#!/usr/bin/env python3
"""A fake ssh that runs the remote command on this machine, as if on HOST: the command
gets FAKE_PB_HOST=HOST (fake_pairbench.py writes it as its host column). For driver tests
of launches on many hosts (pairbench fabric --layer verbs --launcher ssh). Logs its argv
to FAKE_SSH_LOG (one JSON list a line) when set."""

import json
import os
import sys

args = sys.argv[1:]
if os.environ.get("FAKE_SSH_LOG"):
    with open(os.environ["FAKE_SSH_LOG"], "a") as f:
        f.write(json.dumps(args) + "\n")
i = 0
while i < len(args) and args[i].startswith("-") and args[i] != "--":
    i += 2 if args[i] in ("-o", "-p", "-i", "-l") else 1
host = args[i]
rest = args[i + 1:]
if rest and rest[0] == "--":
    rest = rest[1:]
os.environ["FAKE_PB_HOST"] = host
os.execvp("sh", ["sh", "-c", " ".join(rest)])
