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
import glob
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rdmasys
from vmcpu import guest_cpu

EXIT_TIMEOUT = 124  # the deadline was reached while COMMAND was running
EXIT_RIG = 125  # the rig failed (usage, install, boot, module, device): COMMAND did not run
EXIT_CANNOT = 77  # --check only: the rig cannot run on this machine

HERE = os.path.dirname(os.path.abspath(__file__))
APT_FILE = os.path.join(os.path.dirname(HERE), "deps", "softroce.apt")
MODES = ("auto", "hardware", "local-rxe", "vm")
RXE_CIDR = "10.99.0.1/24"


class RigError(Exception):
    """The rig failed before or around COMMAND; message names the step."""


def log(msg: str) -> None:
    print(f"softroce-run: {msg}", file=sys.stderr, flush=True)


def repo_root() -> str:
    """Git top-level of this script's checkout (falls back to scripts/..)."""
    fallback = os.path.dirname(os.path.dirname(HERE))
    try:
        res = subprocess.run(["git", "-C", HERE, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=10)
        if res.returncode == 0 and res.stdout.strip():
            return res.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return fallback


def command_env(root: str) -> dict[str, str]:
    """The caller's environment, with the repo's .venv/bin first on PATH."""
    env = dict(os.environ)
    venv_bin = os.path.join(root, ".venv", "bin")
    path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    if os.path.isdir(venv_bin) and venv_bin not in path.split(":"):
        path = venv_bin + ":" + path
    # Guests and plain users often lack sbin; ibv tools live in /usr/bin anyway.
    for extra in ("/usr/sbin", "/sbin"):
        if extra not in path.split(":"):
            path += ":" + extra
    env["PATH"] = path
    return env


# --------------------------------------------------------------------------- deps

def apt_packages() -> list[str]:
    with open(APT_FILE, encoding="utf-8") as f:
        return [ln.split("#", 1)[0].strip() for ln in f if ln.split("#", 1)[0].strip()]


def find_kernel(explicit: str | None) -> tuple[str, str] | None:
    """(vmlinuz path, version) of a kernel whose modules include rdma_rxe."""
    cands = [explicit] if explicit else sorted(glob.glob("/boot/vmlinuz-*"), reverse=True)
    for path in cands:
        ver = os.path.basename(path).removeprefix("vmlinuz-")
        mods = glob.glob(f"/lib/modules/{ver}/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*")
        if os.path.isfile(path) and mods:
            return path, ver
    return None


def find_vng(root: str) -> str | None:
    venv = os.path.join(root, ".venv", "bin", "vng")
    if os.access(venv, os.X_OK):
        return venv
    return shutil.which("vng")


def missing_vm_deps(root: str, kernel: str | None) -> list[str]:
    missing = []
    if not shutil.which("qemu-system-x86_64"):
        missing.append("qemu-system-x86_64 (apt qemu-system-x86)")
    if not find_kernel(kernel):
        missing.append("a /boot/vmlinuz-* with rdma_rxe.ko (apt linux-image-amd64)")
    if not shutil.which("busybox"):
        missing.append("busybox (apt busybox-static, used by virtme-ng)")
    if not find_vng(root):
        missing.append("vng (pip virtme-ng)")
    return missing


def can_install() -> list[str] | None:
    """Command prefix that gives root for apt-get, or None."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        res = subprocess.run(["sudo", "-n", "true"], capture_output=True, timeout=10,
                             stdin=subprocess.DEVNULL)
        if res.returncode == 0:
            return ["sudo", "-n"]
    return None


def run_logged(argv: list[str], timeout_s: float, env: dict | None = None) -> None:
    """Run an install step with its output on our stderr (never on stdout)."""
    log("running: " + shlex.join(argv))
    try:
        res = subprocess.run(argv, stdout=sys.stderr, stderr=sys.stderr, timeout=timeout_s,
                             stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        raise RigError(f"install: '{shlex.join(argv)}' did not finish "
                       f"within {timeout_s:.0f} s") from None
    except OSError as e:
        raise RigError(f"install: cannot run {argv[0]}: {e.strerror}") from e
    if res.returncode != 0:
        raise RigError(f"install: '{shlex.join(argv)}' exited {res.returncode}")


def ensure_vm_deps(root: str, kernel: str | None, allow_install: bool) -> None:
    missing = missing_vm_deps(root, kernel)
    if not missing:
        return
    log("missing for vm mode: " + "; ".join(missing))
    if not allow_install:
        raise RigError("dependencies missing and --no-install given: " + "; ".join(missing))
    apt_missing = [m for m in missing if not m.startswith("vng")]
    if apt_missing:
        prefix = can_install()
        if prefix is None:
            raise RigError("install: need root (or passwordless sudo) for apt-get; run "
                           "scripts/install-deps as root, or install: " + " ".join(apt_packages()))
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        log("installing Debian packages from scripts/deps/softroce.apt")
        run_logged([*prefix, "apt-get", "update", "-q"], 900, env)
        run_logged([*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends",
                    *apt_packages()], 1800, env)
    if not find_vng(root):
        venv = os.path.join(root, ".venv")
        if not os.path.isdir(venv):
            log(f"creating Python venv {venv}")
            run_logged([sys.executable, "-m", "venv", venv], 600)
        log("installing virtme-ng into the venv")
        run_logged([os.path.join(venv, "bin", "pip"), "install", "-q", "virtme-ng"], 1800)
    still = missing_vm_deps(root, kernel)
    if still:
        raise RigError("install: still missing after installing: " + "; ".join(still))


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
    def kill_group() -> None:
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, on_signal) for s in sigs}
    try:
        while True:
            verdict = tick() if tick else None
            if proc.poll() is not None:
                rc = proc.returncode
                return 128 + (-rc) if rc < 0 else rc
            if verdict is not None or time.monotonic() >= deadline:
                kill_group()
                return -1 if verdict is None else verdict
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.01, min(0.5, deadline - time.monotonic())))
    except KeyboardInterrupt:
        kill_group()
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


def run_direct(mode: str, dev: rdmasys.Device, args, deadline: float, root: str) -> int:
    env = command_env(root)
    env.update(dev.env(mode))
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
    dev = rdmasys.find_active()
    if dev is None:
        raise RigError("find device: no RDMA device with an ACTIVE port and a usable GID "
                       f"in {rdmasys.SYSFS_IB}")
    return run_direct("hardware", dev, args, deadline, root)


def mode_local_rxe(args, deadline: float, root: str) -> int:
    if os.geteuid() != 0:
        raise RigError("local-rxe needs root (modprobe, ip link, rdma link)")
    rxe, netdev = "pbrxe0", "pbdummy0"
    setup_deadline = min(deadline, time.monotonic() + args.setup_timeout)
    try:
        try:
            dev = rdmasys.create_rxe(rxe, netdev, RXE_CIDR, setup_deadline, log,
                                     os.environ.get("SOFTROCE_RUN_FAULT", ""))
        except rdmasys.StepError as e:
            raise RigError(f"local-rxe set-up failed at step {e}") from e
        return run_direct("local-rxe", dev, args, deadline, root)
    finally:
        for err in rdmasys.remove_rxe(rxe, netdev):
            if "Cannot find device" not in err and "does not exist" not in err:
                log(f"clean-up: {err}")


def read_status(ctrl: str) -> list[str]:
    try:
        with open(os.path.join(ctrl, "status"), encoding="utf-8") as f:
            return [ln.rstrip("\n") for ln in f]
    except OSError:
        return []


def vng_argv(args, root: str, ctrl: str, kernel: str) -> list[str]:
    guest = os.path.join(HERE, "guest.py")
    argv = [find_vng(root) or "vng", "--run", kernel, "--memory", args.memory,
            "--cpus", str(args.cpus), "--rwdir", root, "--rwdir", ctrl,
            "--exec", shlex.join([sys.executable, guest, ctrl])]
    for d in args.rwdir:
        argv += ["--rwdir", os.path.abspath(d)]
    if not args.kvm:
        argv.insert(1, "--disable-kvm")
    cpu = guest_cpu(args)
    if cpu:
        argv[1:1] = ["--qemu-opts=-cpu " + cpu]
    if args.guest_append:
        argv[1:1] = ["--append", args.guest_append]
    return argv


def mode_vm(args, deadline: float, root: str) -> int:
    ensure_vm_deps(root, args.kernel, not args.no_install)
    kernel, ver = find_kernel(args.kernel)
    ctrl = tempfile.mkdtemp(prefix="softroce-run.")
    try:
        env = command_env(root)
        env["PB_RIG_GUEST_CPU"] = guest_cpu(args) or "default"
        request = {"argv": args.command, "cwd": os.getcwd(), "env": env,
                   "setup_timeout_s": args.setup_timeout, "rxe": "rxe0",
                   "netdev": "dummy0", "cidr": RXE_CIDR,
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
    pumps = [threading.Thread(target=pump, args=(src, dst), daemon=True)
             for src, dst in ((proc.stdout, 1), (proc.stderr, 2))]
    for t in pumps:
        t.start()

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


def pump(src, dst_fd: int) -> None:
    """Copy a pipe to a file descriptor until EOF, as it arrives."""
    fd = src.fileno()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        while chunk:
            try:
                n = os.write(dst_fd, chunk)
            except BrokenPipeError:
                n = len(chunk)  # caller stopped reading: drain and drop
            chunk = chunk[n:]


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
            import twonode
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
