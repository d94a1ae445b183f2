#!/usr/bin/env python3
"""A fake ssh that cannot reach any host (exit 255, like ssh), logging its argv."""

import json
import os
import sys

if os.environ.get("FAKE_SSH_LOG"):
    with open(os.environ["FAKE_SSH_LOG"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
host = next((a for a in sys.argv[1:] if not a.startswith("-") and "=" not in a), "?")
print(f"ssh: Could not resolve hostname {host}: Name or service not known", file=sys.stderr)
sys.exit(255)
