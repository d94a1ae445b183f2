"""Two-node mode of the Soft-RoCE rig (`softroce-run --nodes 2`).

Two virtme-ng VMs, each with one virtio NIC; qemu's UDP socket backend joins
the two NICs point to point through the host's loopback (no root, no bridge).
Each guest puts rxe0 on its NIC (10.99.0.1 / 10.99.0.2), optionally adds a
netem qdisc, meets the other over the link, then runs COMMAND with
PB_NODE_INDEX (0|1), PB_NODE_COUNT=2, PB_PEER_IP and the usual PB_RDMA_*.
So RDMA traffic really crosses a (virtual) wire, which one VM cannot give:
two rxe devices in one network namespace do not reach each other.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import vm
from vm import RigError, log, procutil

GRACE_S = 15.0  # how long the other node may still run after one node's command failed


def free_udp_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Node:
    def __init__(self, index: int, ctrl: str, argv: list[str]) -> None:
        self.index = index
        self.ctrl = ctrl
        self.argv = argv
        self.proc: subprocess.Popen | None = None
        self.pumps: list[threading.Thread] = []
        self.setup_s: float | None = None

    def status(self) -> list[str]:
        return vm.read_status(self.ctrl)

    def field(self, prefix: str) -> str | None:
        return next((s.removeprefix(prefix) for s in self.status() if s.startswith(prefix)),
                    None)

    def kill(self) -> None:
        vm.kill(self.proc)


def start(nodes: list[Node], out_lock: threading.Lock, err_lock: threading.Lock) -> None:
    for node in nodes:
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(node.argv[0]) + ":" + env.get("PATH", "/usr/bin:/bin")
        try:
            node.proc = subprocess.Popen(node.argv, start_new_session=True,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env)
        except OSError as e:
            raise RigError(f"start VM of node {node.index}: cannot run {node.argv[0]}: "
                           f"{e.strerror}") from e
        vm.prioritise(node.proc)
        # stdout lines unprefixed (data), stderr lines tagged with the node.
        node.pumps = [
            procutil.start_copy(node.proc.stdout, procutil.fd_writer(1, out_lock), by_line=True),
            procutil.start_copy(node.proc.stderr, procutil.fd_writer(2, err_lock), by_line=True,
                                prefix=f"[node{node.index}] ".encode()),
        ]


def supervise(nodes: list[Node], deadline: float, boot_deadline: float) -> str:
    """Wait for both VMs. Returns 'done', 'deadline', 'boot-deadline', 'setup-failed'
    or 'peer-failed' (one command failed, the other was stopped after a grace)."""
    t0 = time.monotonic()
    failed_at: float | None = None
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in sigs}
    try:
        while True:
            now = time.monotonic()
            for node in nodes:
                if node.setup_s is None and node.field("setup-") is not None:
                    node.setup_s = now - t0
            running = [n for n in nodes if n.proc.poll() is None]
            if not running:
                return "done"
            if any(n.field("setup-failed ") is not None for n in nodes):
                verdict = "setup-failed"
            elif any(n.setup_s is None for n in nodes) and now >= boot_deadline:
                verdict = "boot-deadline"
            elif now >= deadline:
                verdict = "deadline"
            else:
                verdict = None
                # A node that ended without exit 0 (command failed, or VM died).
                bad = [n for n in nodes if n.proc.poll() is not None
                       and n.field("command-exit ") != "0"]
                if bad and failed_at is None:
                    failed_at = now
                    log(f"node {bad[0].index} ended with a failure; giving node "
                        f"{running[0].index} {GRACE_S:.0f} s to finish")
                if failed_at is not None and now - failed_at >= GRACE_S:
                    verdict = "peer-failed"
            if verdict:
                for node in nodes:
                    node.kill()
                return verdict
            time.sleep(0.5)
    except KeyboardInterrupt:
        for node in nodes:
            node.kill()
        raise RigError("interrupted; VMs stopped") from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def result(nodes: list[Node], verdict: str, args) -> int:
    for node in nodes:
        failed = node.field("setup-failed ")
        if failed:
            raise RigError(f"node {node.index}: vm set-up failed at step {failed}")
    if verdict == "boot-deadline":
        late = [str(n.index) for n in nodes if n.setup_s is None]
        raise RigError(f"boot the VMs: node {', '.join(late)} not set up within "
                       f"--boot-timeout {args.boot_timeout:.0f} s")
    codes = {n.index: n.field("command-exit ") for n in nodes}
    if verdict == "deadline":
        if any(n.field("setup-ok ") is None for n in nodes):
            raise RigError(f"boot the VMs: deadline of {args.timeout:.0f} s reached "
                           "before both nodes were set up")
        log(f"deadline of {args.timeout:.0f} s reached while the command was running; "
            "stopped both VMs")
        return vm.EXIT_TIMEOUT
    for node in nodes:
        if node.field("setup-ok ") is None:
            raise RigError(f"node {node.index}: VM stopped (vng exit "
                           f"{node.proc.returncode}) before set-up finished")
    # Both ran COMMAND: the first non-zero exit (node order) is the result.
    for node in nodes:
        code = codes[node.index]
        if code is not None and code != "0":
            return int(code)
    missing = [str(n.index) for n in nodes if codes[n.index] is None]
    if missing:
        raise RigError(f"run command: node {', '.join(missing)} stopped before the command "
                       "finished (guest crash or out of memory? try --memory)")
    return 0


def run(args, deadline: float, root: str) -> int:
    vm.ensure_vm_deps(root, args.kernel, not args.no_install)
    kernel, ver = vm.find_kernel(args.kernel)
    ports = free_udp_ports(2)
    ips = ["10.99.0.1", "10.99.0.2"]
    macs = ["52:54:00:99:00:01", "52:54:00:99:00:02"]
    ctrls = [tempfile.mkdtemp(prefix=f"softroce-run.node{i}.") for i in range(2)]
    try:
        nodes = []
        for i in range(2):
            link = {"node": i, "ip": ips[i], "peer_ip": ips[1 - i], "mac": macs[i],
                    "netem": args.netem or "", "rendezvous_timeout_s": args.boot_timeout}
            env = vm.command_env(root)
            env["PB_RIG_GUEST_CPU"] = vm.guest_cpu(args) or "default"
            request = {"argv": args.command, "cwd": os.getcwd(),
                       "env": env, "setup_timeout_s": args.setup_timeout,
                       "rxe": "rxe0", "netdev": "", "cidr": ips[i] + "/24",
                       "fault": os.environ.get("SOFTROCE_RUN_FAULT", ""),
                       "link": link}
            with open(os.path.join(ctrls[i], "request.json"), "w", encoding="utf-8") as f:
                json.dump(request, f)
            qemu = (f"-netdev socket,id=pblink,udp=127.0.0.1:{ports[1 - i]},"
                    f"localaddr=127.0.0.1:{ports[i]} "
                    f"-device virtio-net-pci,netdev=pblink,mac={macs[i]}")
            argv = vm.vng_argv(args, root, ctrls[i], kernel)
            argv[1:1] = ["--name", f"pbnode{i}", "--qemu-opts=" + qemu]
            nodes.append(Node(i, ctrls[i], argv))
        log(f"mode vm, 2 nodes: booting kernel {ver} twice ({args.memory}, {args.cpus} cpus "
            f"each), linked by qemu UDP sockets 127.0.0.1:{ports[0]}<->{ports[1]}"
            + (f", netem '{args.netem}'" if args.netem else "")
            + "; running: " + shlex.join(args.command))
        t0 = time.monotonic()
        boot_deadline = min(deadline, t0 + args.boot_timeout)
        out_lock, err_lock = threading.Lock(), threading.Lock()
        try:
            start(nodes, out_lock, err_lock)
            verdict = supervise(nodes, deadline, boot_deadline)
        finally:
            for node in nodes:
                node.kill()
                for t in node.pumps:
                    t.join(timeout=10)
        code = result(nodes, verdict, args)
        setups = ", ".join(f"{n.setup_s:.1f}" if n.setup_s is not None else "?" for n in nodes)
        log(f"2-node vm run took {time.monotonic() - t0:.1f} s (boot + set-up {setups} s); "
            f"command exits: " + ", ".join(f"node{n.index}={n.field('command-exit ')}"
                                            for n in nodes) + f"; result {code}")
        return code
    finally:
        for c in ctrls:
            shutil.rmtree(c, ignore_errors=True)
