"""Guest side of the Soft-RoCE rig: runs as the `vng --exec` command inside the VM.

usage (by rig.py only): python3 guest.py CONTROL_DIR

CONTROL_DIR is shared read-write with the host.  It holds request.json (argv,
cwd, env, set-up deadline) written by the host; this script appends progress
lines to CONTROL_DIR/status so the host knows which step was reached even if
the VM dies:
    booted
    setup-ok <json Device>             # the marker: set-up succeeded
    setup-failed <step>: <message>
    command-exit <code>
COMMAND's stdout/stderr are inherited (vng's virtio-serial channels), so they
reach the caller separately; the kernel console goes elsewhere (/dev/null).
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import asdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rdmasys

EXIT_RIG = 125


def log(msg: str) -> None:
    print(f"softroce-run: guest: {msg}", file=sys.stderr, flush=True)


def status(ctrl: str, line: str) -> None:
    with open(os.path.join(ctrl, "status"), "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def setup(req: dict) -> rdmasys.Device:
    deadline = time.monotonic() + float(req["setup_timeout_s"])
    dev = rdmasys.create_rxe(req["rxe"], req["netdev"], req["cidr"], deadline, log,
                             req.get("fault", ""))
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK,
                           (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError) as e:
        raise rdmasys.StepError("raise locked-memory limit (ulimit -l)", str(e)) from e
    if not os.path.isdir(req["cwd"]):
        raise rdmasys.StepError("enter working directory",
                                f"{req['cwd']} is not visible in the guest")
    return dev


def main() -> int:
    ctrl = sys.argv[1]
    status(ctrl, "booted")
    with open(os.path.join(ctrl, "request.json"), encoding="utf-8") as f:
        req = json.load(f)
    try:
        dev = setup(req)
    except rdmasys.StepError as e:
        status(ctrl, f"setup-failed {e}")
        log(f"set-up failed at step {e}")
        return EXIT_RIG
    except Exception as e:  # report anything unexpected as a set-up failure, never hang
        status(ctrl, f"setup-failed unexpected error: {e!r}")
        log(f"set-up failed: {e!r}")
        return EXIT_RIG
    env = dict(req["env"])
    env.update(dev.env("vm"))
    status(ctrl, "setup-ok " + json.dumps(asdict(dev)))
    # Printed by the guest so that it precedes COMMAND's own stderr.
    print(f"softroce-run: mode vm: {dev.describe()}", file=sys.stderr)
    print("softroce-run: set-up done, running: " + shlex.join(req["argv"]),
          file=sys.stderr, flush=True)
    try:
        proc = subprocess.Popen(req["argv"], cwd=req["cwd"], env=env,
                                stdin=subprocess.DEVNULL)
    except OSError as e:
        # Same convention as the shell: 127 not found, 126 not executable.
        code = 127 if isinstance(e, FileNotFoundError) else 126
        print(f"softroce-run: {req['argv'][0]}: {e.strerror}", file=sys.stderr, flush=True)
        status(ctrl, f"command-exit {code}")
        return code
    rc = proc.wait()
    code = 128 + (-rc) if rc < 0 else rc
    if rc < 0:
        log(f"command killed by signal {signal.Signals(-rc).name}")
    status(ctrl, f"command-exit {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
