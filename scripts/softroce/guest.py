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
import socket
import subprocess
import sys
import tempfile
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


def setup(req: dict) -> list[rdmasys.Device]:
    deadline = time.monotonic() + float(req["setup_timeout_s"])
    link = req.get("link")
    if link:  # two-node mode: rxe on the virtio NIC that qemu joins to the peer VM
        rdmasys.run_tool("load module virtio_net", ["modprobe", "virtio_net"])
        netdev = rdmasys.netdev_by_mac(link["mac"], deadline)
    else:
        netdev = req["netdev"]
    devs = [rdmasys.create_rxe(req["rxe"], netdev, req["cidr"], deadline, log,
                               req.get("fault", ""), create_dummy=not link)]
    # --devices N: rxe1 on dummy1, ... each on its own subnet (rdmasys.rxe_cidr)
    for i in range(1, int(req.get("devices", 1))):
        devs.append(rdmasys.create_rxe(f"rxe{i}", f"dummy{i}", rdmasys.rxe_cidr(i), deadline,
                                       log, req.get("fault", "")))
    if link:
        if link.get("netem"):
            log(f"netem on {netdev}: {link['netem']}")
            rdmasys.run_tool("load module sch_netem", ["modprobe", "sch_netem"])
            rdmasys.run_tool("add netem qdisc", ["tc", "qdisc", "add", "dev", netdev, "root",
                                                 "netem", *shlex.split(link["netem"])])
        rendezvous(link, time.monotonic() + float(link["rendezvous_timeout_s"]))
    only_rxe_provider()
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK,
                           (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError) as e:
        raise rdmasys.StepError("raise locked-memory limit (ulimit -l)", str(e)) from e
    if not os.path.isdir(req["cwd"]):
        raise rdmasys.StepError("enter working directory",
                                f"{req['cwd']} is not visible in the guest")
    return devs


def only_rxe_provider(conf: str = "/etc/libibverbs.d") -> None:
    """libibverbs dlopens every provider its config directory lists on a process's first
    device lookup (17 on Debian 12), though this guest has rxe devices only.  In the emulated
    VM that cost ~0.27 s per verbs process (a loopback write_lat run: 0.80-0.87 s with all,
    0.54-0.59 s with rxe alone, interleaved, docs/softroce-rig.md).  The guest's view of the
    directory becomes a copy holding rxe.driver alone (a bind mount inside the guest; the
    host's /etc is untouched).  Without an rxe.driver file, or where the mount fails, every
    provider stays: slower, nothing else."""
    driver = os.path.join(conf, "rxe.driver")
    if not os.path.isfile(driver):
        log(f"note: no {driver}: libibverbs keeps every provider")
        return
    only = tempfile.mkdtemp(prefix="pb-ibverbs-d-")
    # mkdtemp makes a 0700 directory: bound over /etc/libibverbs.d it would hide every
    # provider from all but root, and a verbs run as any other user would say "no RDMA
    # device found" (issue 37). The copy is as readable as the original: 0755, 0644.
    os.chmod(only, 0o755)
    with open(driver, encoding="utf-8") as src, \
            open(os.path.join(only, "rxe.driver"), "w", encoding="utf-8") as dst:
        dst.write(src.read())
    os.chmod(os.path.join(only, "rxe.driver"), 0o644)
    try:
        rdmasys.run_tool("libibverbs: the rxe provider only", ["mount", "--bind", only, conf])
    except rdmasys.StepError as e:  # only slower without it
        log(f"note: {e}; libibverbs keeps every provider")
        return
    log(f"libibverbs: {conf} lists the rxe provider only")


def rendezvous(link: dict, deadline: float) -> None:
    """Both nodes set up and the link passes IP: node 0 accepts, node 1 connects."""
    port = 7470
    log(f"node {link['node']}: waiting for the peer {link['peer_ip']} over the link")
    if link["node"] == 0:
        with socket.create_server((link["ip"], port)) as srv:
            srv.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                conn, _ = srv.accept()
            except OSError as e:  # socket.timeout is an OSError
                raise rdmasys.StepError("meet the peer node",
                                        f"node 1 did not connect to {link['ip']}:{port}: {e}"
                                        ) from e
            with conn:
                conn.sendall(b"go\n")
        return
    last = ""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((link["peer_ip"], port), timeout=2) as conn:
                conn.settimeout(max(0.1, deadline - time.monotonic()))
                if conn.recv(3) == b"go\n":
                    return
        except OSError as e:
            last = str(e)
        time.sleep(0.5)
    raise rdmasys.StepError("meet the peer node",
                            f"cannot reach node 0 at {link['peer_ip']}:{port}: {last}")


def main() -> int:
    ctrl = sys.argv[1]
    status(ctrl, "booted")
    with open(os.path.join(ctrl, "request.json"), encoding="utf-8") as f:
        req = json.load(f)
    try:
        devs = setup(req)
        dev = devs[0]
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
    env.update(rdmasys.devices_env(devs))
    env["PB_RIG_CLOCKSOURCE"] = rdmasys.read_text(
        "/sys/devices/system/clocksource/clocksource0/current_clocksource") or "unknown"
    if req.get("link"):
        link = req["link"]
        env.update(PB_NODE_INDEX=str(link["node"]), PB_NODE_COUNT="2",
                   PB_PEER_IP=link["peer_ip"])
    status(ctrl, "setup-ok " + json.dumps(asdict(dev)))
    # Printed by the guest so that it precedes COMMAND's own stderr.
    for other in devs[1:]:
        print(f"softroce-run: mode vm: {other.describe()}", file=sys.stderr)
    print(f"softroce-run: mode vm: {dev.describe()}; guest clocksource "
          f"{env['PB_RIG_CLOCKSOURCE']} (cpu model {env.get('PB_RIG_GUEST_CPU', '?')})",
          file=sys.stderr)
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
