"""What both Soft-RoCE rig modes that boot VMs share (rig.py: one VM, twonode.py: two):
exit codes, the error and the log line, the repo and the command's environment, the VM's
dependencies (found or installed), the virtme-ng command line and the guest's status file.
rig.py and twonode.py import this module, never each other. Standard library only (plus
pairbench.procutil, itself standard library only, for child processes).
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
if os.path.dirname(HERE) not in sys.path:  # scripts/, for pairbench.procutil
    sys.path.insert(0, os.path.dirname(HERE))
from vmcpu import guest_cpu  # noqa: E402

from pairbench.io import procutil  # noqa: E402

EXIT_TIMEOUT = 124  # the deadline was reached while COMMAND was running
EXIT_RIG = 125  # the rig failed (usage, install, boot, module, device): COMMAND did not run
EXIT_CANNOT = 77  # --check only: the rig cannot run on this machine

APT_FILE = os.path.join(os.path.dirname(HERE), "deps", "softroce.apt")


class RigError(Exception):
    """The rig failed before or around COMMAND; message names the step."""


def log(msg: str) -> None:
    print(f"softroce-run: {msg}", file=sys.stderr, flush=True)


def repo_root() -> str:
    """Git top-level of this script's checkout (falls back to scripts/..)."""
    fallback = os.path.dirname(os.path.dirname(HERE))
    res = procutil.run_captured(["git", "-C", HERE, "rev-parse", "--show-toplevel"], 10)
    if res is not None and res.returncode == 0 and res.stdout.strip():
        return res.stdout.strip()
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
        res = procutil.run_captured(["sudo", "-n", "true"], 10)
        if res is not None and res.returncode == 0:
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


KILL_GRACE_S = 10.0  # a VM or COMMAND: SIGTERM, then SIGKILL after this long


def prioritise(proc: subprocess.Popen) -> None:
    """PB_RIG_AUTOGROUP_NICE=N (e.g. -10; scripts/test-all sets it for its VM lane): the VM's
    session (vng and its qemu, started with start_new_session) gets that nice as a scheduler
    autogroup.  With autogroups (kernel.sched_autogroup_enabled, on in Debian's kernels) every
    session competes for the CPU as one unit, whatever its processes' nice: a busy job beside
    the rig (each pairbench or MPI job is a session of its own) otherwise takes an equal share
    from the guest, whose timeouts run on the wall clock.  Nothing happens without the
    variable; a kernel without autogroups or a refusal is one note."""
    want = os.environ.get("PB_RIG_AUTOGROUP_NICE", "").strip()
    if not want:
        return
    try:
        nice = int(want)
        if not -20 <= nice <= 19:
            raise ValueError
    except ValueError:
        raise RigError(f"PB_RIG_AUTOGROUP_NICE={want!r}: not a nice value (-20..19)") from None
    try:
        with open(f"/proc/{proc.pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError as e:
        log(f"note: cannot set the VM's autogroup nice to {nice}: {e.strerror or e}")


def kill(proc: subprocess.Popen | None) -> None:
    """Stop a VM (vng and its qemu) or a command: its whole process group, reaped."""
    if proc is not None:
        procutil.kill_group(proc, KILL_GRACE_S)
