"""Error types that the CLI turns into one line on stderr and an exit code."""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable


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


_LONG_WORD_MAX = 300  # a word longer than this (and than a third of the limit) is elided


def one_line(text: str, limit: int = 1000) -> str:
    """A message as one line of bounded length that keeps its reason: newlines become
    spaces, any word longer than 300 characters (or a third of `limit`: a 10 KB option
    value) keeps its start and its end (where a path has its file name and ':LINE:') with
    the middle elided, and only then is the whole line cut. A path of up to 300 characters
    stays whole in a message: it names the file (with 80, a pytest temporary path lost the
    file's name)."""
    flat = " ".join(text.split())
    longest = min(_LONG_WORD_MAX, max(80, limit // 3))
    tail = max(16, longest * 2 // 3)

    def elide(m: re.Match[str]) -> str:
        w = m.group(0)
        return f"{w[:40]}...[{len(w) - 40 - tail} chars]...{w[-tail:]}"

    flat = re.sub(rf"\S{{{longest + 1},}}", elide, flat)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def call(command: str, run: Callable[[], int]) -> int:
    """Run a command's function the way every pairbench command runs: its exit code, and
    whatever it raised as one line on stderr with an exit code, never a traceback."""
    try:
        rc = run()
        _flush_stdout()
        return rc
    except UsageError as exc:
        return fail(command, str(exc), exc.exit_code)
    except KeyboardInterrupt:
        print("pairbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return 1
    except StdoutError as exc:
        return fail(command, f"writing to stdout failed: {exc}")
    # Last line of defence: whatever a command did not turn into a UsageError itself is
    # still one line and exit 2, never a traceback.
    except UnicodeDecodeError as exc:
        return fail(command, f"input is not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        if exc.filename is None and exc.errno in _WRITE_ERRNOS:
            _drop_stdout()  # a write without a file name: stdout (a full disk, ...)
            return fail(command, f"writing to stdout failed: {exc.strerror or exc}")
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(command, f"{where}{exc.strerror or exc}")


_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF})


class StdoutError(Exception):
    """stdout could not be written (a full disk, a closed descriptor)."""


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _drop_stdout()
        raise StdoutError(exc.strerror or str(exc)) from None


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's own final flush of what is still
    buffered cannot fail again and print a traceback-like 'Exception ignored' block."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def fail(command: str, message: str, code: int = 2) -> int:
    print(f"pairbench {command}: error: {one_line(message)}", file=sys.stderr)
    return code


