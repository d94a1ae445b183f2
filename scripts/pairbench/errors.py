"""Error types that the CLI turns into one line on stderr and an exit code."""

from __future__ import annotations

import re


class UsageError(Exception):
    """Bad input (options, files, specs): exit code 2, one clear line, no traceback."""

    exit_code = 2


class RunFailure(UsageError):
    """Valid input, but a step could not finish (an executable that does not answer the
    sweep's start-up probe within --timeout): exit code 1, one line, no traceback."""

    exit_code = 1


class Interrupted(UsageError):
    """A stop signal (SIGINT, SIGTERM, SIGHUP) before anything was measured: exit code
    128 + N, one line."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


_LONG_WORD = re.compile(r"\S{81,}")


def one_line(text: str, limit: int = 400) -> str:
    """A message as one line of bounded length that keeps its reason: newlines become
    spaces, any word longer than 80 characters (a 10 KB option value, a path) keeps its
    start and end with the middle elided, and only then is the whole line cut."""
    flat = " ".join(text.split())

    def elide(m: re.Match[str]) -> str:
        w = m.group(0)
        return f"{w[:40]}...[{len(w) - 56} chars]...{w[-16:]}"

    flat = _LONG_WORD.sub(elide, flat)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
