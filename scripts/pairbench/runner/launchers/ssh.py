"""`--launcher ssh`: verbs only in practice; server (--server) on hosts[0], client
(--connect ADDR) on hosts[1], the executable at --remote-binary (else --binary) on them.

ssh hands its command to the remote shell, so the remote argv is quoted with shlex.join:
every element stays one argument whatever it contains. The rows come back on the client's
stdout (no files on this host)."""

from __future__ import annotations

import shlex

from pairbench.errors import UsageError
from pairbench.runner.launchers.base import Launcher, Side

SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


class Ssh(Launcher):
    name = "ssh"
    rank = 40
    program = "ssh"
    remote_binary = True
    multi_node = True

    def check(self) -> None:
        self._hosts()  # the host count, before looking for the program
        super().check()

    def _hosts(self) -> tuple[str, str]:
        if len(self.cfg.hosts) != 2:
            raise UsageError("--launcher ssh needs --hosts A,B (server on A, client on B)")
        return self.cfg.hosts[0], self.cfg.hosts[1]

    def sides(self, exe: list[str], pairs: int, raw: str) -> tuple[Side, ...]:
        cfg = self.cfg
        server_host, client_host = self._hosts()
        remote = [cfg.remote_binary or cfg.binary, *exe]
        ssh = [str(self.command), *SSH_OPTIONS, *cfg.launcher_args]
        server = [*ssh, server_host, "--", shlex.join([*remote, "--server"])]
        client = [*ssh, client_host, "--", shlex.join([*remote, *self.verbs_connect()])]
        return (Side("server", tuple(server), f"{raw}.server.stdout", f"{raw}.server.stderr"),
                Side("client", tuple(client), f"{raw}.client.stdout", f"{raw}.client.stderr"))


LAUNCHER = Ssh
