"""Host side of the Soft-RoCE rig: `scripts/softroce-run [options] -- COMMAND [ARGS...]`.

Gives COMMAND an RDMA device, in the first mode that works here:
  hardware   an existing RDMA device with an ACTIVE port: run COMMAND directly;
  local-rxe  the running kernel can load rdma_rxe: create rxe on a dummy netdev,
             run COMMAND, remove the device again (needs root);
  vm         boot Debian's stock kernel with virtme-ng under qemu (software
             emulation), create rxe0 there, run COMMAND inside, return its result.
See docs/softroce-rig.md.  Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rdmasys
import twonode
from vm import (
    EXIT_CANNOT,
    EXIT_RIG,
    EXIT_TIMEOUT,
    RigError,
    command_env,
    ensure_vm_deps,
    find_kernel,
    find_vng,
    guest_cpu,
    kill,
    log,
    prioritise,
    procutil,
    read_status,
    repo_root,
    vng_argv,
)

MODES = ("auto", "hardware", "local-rxe", "vm")
RXE_CIDR = "10.99.0.1/24"


# --------------------------------------------------------------------------- modes

def choose_mode(requested: str) -> str:
    if requested != "auto":
        return requested
    if rdmasys.find_active():
        return "hardware"
    if os.geteuid() == 0 and rdmasys.rxe_available():
        return "local-rxe"
    return "vm"


def report(mode: str, dev: rdmasys.Device) -> None:
    log(f"mode {mode}: {dev.describe()}")


def supervise(proc: subprocess.Popen, deadline: float, tick=None) -> int:
    """Wait for proc (started with start_new_session=True), polling every 0.5 s.

    Returns its exit code (128+N if killed by signal N), -1 at the deadline, or
    the value tick() returns when that is not None.  In the last two cases, and
    on SIGINT/SIGTERM/SIGHUP, the whole process group is stopped first.
    """
    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, on_signal) for s in sigs}
    try:
        while True:
            verdict = tick() if tick else None
            if proc.poll() is not None:
                return procutil.exit_status(proc.returncode)
            if verdict is not None or time.monotonic() >= deadline:
                kill(proc)
                return -1 if verdict is None else verdict
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.01, min(0.5, deadline - time.monotonic())))
    except KeyboardInterrupt:
        kill(proc)
        raise RigError("interrupted; stopped the command") from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def raise_memlock() -> None:
    """ulimit -l unlimited if allowed (root), else as high as the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    for want in (resource.RLIM_INFINITY, hard):
        try:
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (want, want))
            break
        except (ValueError, OSError):
            continue
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft != resource.RLIM_INFINITY:
        log(f"note: ulimit -l stays at {soft // 1024} KiB (cannot raise it here); "
            "large memory registrations may fail")


def run_direct(mode: str, devs: list[rdmasys.Device], args, deadline: float, root: str) -> int:
    env = command_env(root)
    env.update(devs[0].env(mode))
    env.update(rdmasys.devices_env(devs))
    for dev in devs:
        report(mode, dev)
    raise_memlock()
    log("set-up done, running: " + shlex.join(args.command))
    try:
        proc = subprocess.Popen(args.command, env=env, start_new_session=True)
    except OSError as e:
        log(f"{args.command[0]}: {e.strerror}")
        return 127 if isinstance(e, FileNotFoundError) else 126
    rc = supervise(proc, deadline)
    if rc == -1:
        log(f"deadline of {args.timeout:.0f} s reached while the command was running; killed it")
        return EXIT_TIMEOUT
    return rc


def mode_hardware(args, deadline: float, root: str) -> int:
    devs = rdmasys.find_all_active()
    if not devs:
        raise RigError("find device: no RDMA device with an ACTIVE port and a usable GID "
                       f"in {rdmasys.SYSFS_IB}")
    if len(devs) < args.devices:
        raise RigError(f"find devices: --devices {args.devices} but only {len(devs)} RDMA "
                       f"device(s) with an ACTIVE port here ({', '.join(d.name for d in devs)})")
    return run_direct("hardware", devs[:args.devices], args, deadline, root)


def mode_local_rxe(args, deadline: float, root: str) -> int:
    if os.geteuid() != 0:
        raise RigError("local-rxe needs root (modprobe, ip link, rdma link)")
    names = [(f"pbrxe{i}", f"pbdummy{i}") for i in range(args.devices)]
    setup_deadline = min(deadline, time.monotonic() + args.setup_timeout)
    try:
        devs = []
        try:
            for i, (rxe, netdev) in enumerate(names):
                devs.append(rdmasys.create_rxe(rxe, netdev, rdmasys.rxe_cidr(i), setup_deadline,
                                               log, os.environ.get("SOFTROCE_RUN_FAULT", "")))
        except rdmasys.StepError as e:
            raise RigError(f"local-rxe set-up failed at step {e}") from e
        return run_direct("local-rxe", devs, args, deadline, root)
    finally:
        for rxe, netdev in names:
            for err in rdmasys.remove_rxe(rxe, netdev):
                if "Cannot find device" not in err and "does not exist" not in err:
                    log(f"clean-up: {err}")


def mode_vm(args, deadline: float, root: str) -> int:
    ensure_vm_deps(root, args.kernel, not args.no_install)
    kernel, ver = find_kernel(args.kernel)
    ctrl = tempfile.mkdtemp(prefix="softroce-run.")
    try:
        env = command_env(root)
        env["PB_RIG_GUEST_CPU"] = guest_cpu(args) or "default"
        request = {"argv": args.command, "cwd": os.getcwd(), "env": env,
                   "setup_timeout_s": args.setup_timeout, "rxe": "rxe0",
                   "netdev": "dummy0", "cidr": RXE_CIDR, "devices": args.devices,
                   "fault": os.environ.get("SOFTROCE_RUN_FAULT", "")}
        with open(os.path.join(ctrl, "request.json"), "w", encoding="utf-8") as f:
            json.dump(request, f)
        argv = vng_argv(args, root, ctrl, kernel)
        log(f"mode vm: booting kernel {ver} with virtme-ng "
            f"({'KVM' if args.kvm else 'software emulation'}, {args.memory}, {args.cpus} cpus, "
            f"cpu model {env['PB_RIG_GUEST_CPU']}, kernel args '{args.guest_append}'; "
            "typically 20-60 s)")
        t0 = time.monotonic()
        rc, setup_s = run_vm(argv, ctrl, deadline, args)
        status = read_status(ctrl)
        code = vm_result(rc, status, args)
        total = time.monotonic() - t0
        setup = f"{setup_s:.1f}" if setup_s is not None else "?"
        log(f"vm run took {total:.1f} s: boot + set-up {setup} s, then the command; "
            f"command exit {code}")
        return code
    finally:
        shutil.rmtree(ctrl, ignore_errors=True)


def run_vm(argv: list[str], ctrl: str, deadline: float, args) -> tuple[int, float | None]:
    """Run vng; (its exit code, or -1 at the deadline, or -2 at the boot deadline;
    seconds until the guest finished set-up, None if it did not).

    Polls the control dir: the guest's set-up marker must appear before the boot
    deadline (boot + set-up), the whole run must end before the overall deadline.
    """
    boot_deadline = min(deadline, time.monotonic() + args.boot_timeout)
    # qemu (re)opens /proc/self/fd/1 and /2 itself, once per virtio channel: on a
    # regular file that truncates it and the channels overwrite each other.  Give
    # it pipes and copy them to our stdout/stderr instead.
    try:
        # vng runs its helper virtme-run through PATH: put vng's own directory
        # (e.g. the repo's .venv/bin) first.
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(argv[0]) + ":" + env.get("PATH", "/usr/bin:/bin")
        proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as e:
        raise RigError(f"start VM: cannot run {argv[0]}: {e.strerror}") from e
    prioritise(proc)
    pumps = [procutil.start_copy(src, procutil.fd_writer(dst))
             for src, dst in ((proc.stdout, 1), (proc.stderr, 2))]

    t0 = time.monotonic()
    setup_s: float | None = None

    def tick() -> int | None:
        # The guest prints the device report itself (before COMMAND's stderr).
        nonlocal setup_s
        if setup_s is None:
            status = read_status(ctrl)
            if any(s.startswith(("setup-ok ", "setup-failed ")) for s in status):
                setup_s = time.monotonic() - t0
        return -2 if setup_s is None and time.monotonic() >= boot_deadline else None

    rc = supervise(proc, deadline, tick)
    for t in pumps:
        t.join(timeout=10)
    return rc, setup_s


def vm_result(rc: int, status: list[str], args) -> int:
    booted = "booted" in status
    ok = next((s for s in status if s.startswith("setup-ok ")), None)
    failed = next((s for s in status if s.startswith("setup-failed ")), None)
    done = next((s for s in status if s.startswith("command-exit ")), None)
    if failed:
        raise RigError(f"vm set-up failed at step {failed.removeprefix('setup-failed ')}")
    if rc == -2:
        step, why = (("set up the rxe device", "guest started but set-up did not finish")
                     if booted else ("boot the VM", "the guest never started"))
        raise RigError(f"{step}: not done within --boot-timeout {args.boot_timeout:.0f} s ({why})")
    if not ok:
        if rc == -1:
            raise RigError(f"boot the VM: deadline of {args.timeout:.0f} s reached before set-up")
        if not booted:
            raise RigError(f"boot the VM: vng exited {rc} before the guest started "
                           "(see the messages of vng above)")
        raise RigError(f"vm set-up: guest stopped (vng exit {rc}) before reporting a result")
    if rc == -1:
        log(f"deadline of {args.timeout:.0f} s reached while the command was running; "
            "stopped the VM")
        return EXIT_TIMEOUT
    if not done:
        raise RigError(f"run command: the VM stopped (vng exit {rc}) before the command "
                       "finished (guest crash or out of memory? try --memory)")
    code = int(done.split()[1])
    if code != rc:
        log(f"warning: vng exit {rc} differs from the command's exit {code}; using the latter")
    return code


# --------------------------------------------------------------------------- CLI

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="softroce-run",
        usage="softroce-run [options] -- COMMAND [ARGS...]\n       softroce-run --check",
        description="Run COMMAND with an RDMA device: existing hardware, a local Soft-RoCE "
                    "device, or Soft-RoCE inside a virtme-ng VM. Inside, COMMAND sees "
                    "PB_RDMA_DEVICE, PB_RDMA_PORT, PB_RDMA_GID_INDEX, PB_RDMA_IP, PB_RIG_MODE.",
        epilog="exit codes: COMMAND's own exit code (128+N if killed by signal N); "
               "124 deadline reached while COMMAND ran; 125 rig failure or usage error "
               "(COMMAND did not run / result unknown); with --check: 0 can run, "
               "77 cannot run here. See docs/softroce-rig.md.")
    p.add_argument("--mode", choices=MODES, default=os.environ.get("SOFTROCE_RUN_MODE", "auto"),
                   help="force a mode (default: auto, or $SOFTROCE_RUN_MODE)")
    p.add_argument("--timeout", type=float, default=1800.0, metavar="SEC",
                   help="deadline for the whole run incl. boot (default: %(default).0f)")
    p.add_argument("--boot-timeout", type=float, default=300.0, metavar="SEC",
                   help="vm: deadline for boot + device set-up (default: %(default).0f)")
    p.add_argument("--setup-timeout", type=float, default=60.0, metavar="SEC",
                   help="deadline for module load + port ACTIVE (default: %(default).0f)")
    p.add_argument("--memory", default="2G", help="vm: guest memory (default: %(default)s)")
    p.add_argument("--cpus", type=int, default=None,
                   help="vm: guest CPUs (default: 2; 1 per node with --nodes 2)")
    p.add_argument("--nodes", type=int, choices=(1, 2), default=1,
                   help="vm: 2 = two VMs joined by a virtual link, each with its own rxe0; "
                        "COMMAND runs on both with PB_NODE_INDEX, PB_PEER_IP (default: 1)")
    p.add_argument("--devices", type=int, default=1, metavar="N",
                   help="Soft-RoCE devices to create: rxe0..rxeN-1 on dummy0..dummyN-1, each "
                        "its own subnet 10.99.0.1/24, 10.98.0.1/24, ...; a pair uses one device "
                        "for both sides (two rxe devices of one VM do not reach each other); "
                        "hardware mode: needs N devices with an ACTIVE port (default: 1). "
                        "COMMAND also sees PB_RDMA_DEVICES, PB_RDMA_IPS (comma-separated)")
    p.add_argument("--netem", metavar="SPEC",
                   help="with --nodes 2: netem qdisc on each node's link, e.g. 'delay 5ms'")
    p.add_argument("--kernel", metavar="VMLINUZ",
                   help="vm: kernel to boot (default: newest /boot/vmlinuz-* with rdma_rxe)")
    p.add_argument("--rwdir", action="append", default=[], metavar="DIR",
                   help="vm: extra host directory whose writes persist (the repo root "
                        "always does); repeatable")
    p.add_argument("--guest-cpu", default=os.environ.get("SOFTROCE_RUN_GUEST_CPU", "auto"),
                   metavar="SPEC",
                   help="vm: qemu -cpu model; 'auto' (default) = max with the host's vendor on "
                        "an Intel host with an invariant TSC, so the guest's clocksource is "
                        "tsc; 'default' = virtme-ng's choice; anything else is passed to qemu")
    p.add_argument("--guest-append",
                   default=os.environ.get("SOFTROCE_RUN_GUEST_APPEND", "mitigations=off"),
                   metavar="ARGS",
                   help="vm: extra guest kernel command line (default: %(default)s: the "
                        "guest runs only the test, and under emulation the CPU-bug "
                        "mitigations triple the cost of every kernel entry; '' = none)")
    p.add_argument("--kvm", action="store_true",
                   help="vm: use KVM (hangs with Debian's stock kernel on our machines)")
    p.add_argument("--no-install", action="store_true",
                   help="never install missing packages; fail instead")
    p.add_argument("--check", action="store_true",
                   help="only report the mode that would be used and whether it can run "
                        "(installs missing deps unless --no-install)")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.check and not args.command:
        p.error("no COMMAND given (usage: softroce-run [options] -- COMMAND [ARGS...])")
    for name in ("timeout", "boot_timeout", "setup_timeout"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be > 0")
    if args.cpus is None:
        args.cpus = 2 if args.nodes == 1 else 1
    if args.cpus < 1:
        p.error("--cpus must be >= 1")
    if args.nodes == 2 and args.mode not in ("auto", "vm"):
        p.error("--nodes 2 needs --mode vm (two VMs)")
    if not 1 <= args.devices <= 8:
        p.error("--devices must be 1..8")
    if args.devices > 1 and args.nodes == 2:
        p.error("--devices > 1 is for one node (--nodes 1)")
    if args.netem is not None and args.nodes != 2:
        p.error("--netem needs --nodes 2")
    return args


def check(args, root: str) -> int:
    mode = "vm" if args.nodes == 2 else choose_mode(args.mode)
    if mode == "hardware":
        dev = rdmasys.find_active()
        if dev is None:
            log("check: no RDMA device with an ACTIVE port")
            return EXIT_CANNOT
        report(mode, dev)
        return 0
    if mode == "local-rxe":
        ok = os.geteuid() == 0 and rdmasys.rxe_available()
        log(f"check: mode local-rxe {'can run' if ok else 'cannot run (needs root + rdma_rxe)'}")
        return 0 if ok else EXIT_CANNOT
    try:
        ensure_vm_deps(root, args.kernel, not args.no_install)
    except RigError as e:
        log(f"check: mode vm cannot run here: {e}")
        return EXIT_CANNOT
    kernel = find_kernel(args.kernel)
    log(f"check: mode vm can run (kernel {kernel[1]}, vng {find_vng(root)})")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        # argparse exits 2 on usage errors; the rig reserves 125 for its own failures.
        return 0 if e.code == 0 else EXIT_RIG
    root = repo_root()
    deadline = time.monotonic() + args.timeout
    try:
        if args.check:
            return check(args, root)
        if args.nodes == 2:
            return twonode.run(args, deadline, root)
        mode = choose_mode(args.mode)
        if args.mode == "auto":
            log(f"auto-selected mode {mode}")
        if mode == "hardware":
            return mode_hardware(args, deadline, root)
        if mode == "local-rxe":
            try:
                return mode_local_rxe(args, deadline, root)
            except RigError as e:
                if args.mode != "auto":
                    raise
                log(f"{e}; falling back to mode vm")
        return mode_vm(args, deadline, root)
    except RigError as e:
        log(f"FAILED: {e}")
        return EXIT_RIG
