#!/usr/bin/env python3
"""A fake scripts/softroce-run: `fake_rig.py [--timeout S] -- CMD ARGS`.

Runs CMD on this host with the variables the real rig exports, and counts its own
invocations in FAKE_RIG_COUNT (one line per boot). FAKE_RIG_MODE=fail exits 77 without
running CMD (as the real rig does when it cannot start).
"""

import os
import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    if "--" not in args:
        print("fake-rig: usage: fake_rig.py [--timeout S] -- CMD ARGS", file=sys.stderr)
        return 2
    cmd = args[args.index("--") + 1:]
    if os.environ.get("FAKE_RIG_COUNT"):
        with open(os.environ["FAKE_RIG_COUNT"], "a") as f:
            f.write(" ".join(args) + "\n")
    if os.environ.get("FAKE_RIG_MODE") == "fail":
        print("fake-rig: cannot boot the VM: no kernel with rdma_rxe", file=sys.stderr)
        return 77
    env = dict(os.environ, PB_RIG_MODE="fake", PB_RDMA_DEVICE="rxe0", PB_RDMA_GID_INDEX="1",
               PB_RDMA_IP="10.99.0.1")
    return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
