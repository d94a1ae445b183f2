"""Writing output files without ever destroying what is not ours: one function for every
command that writes a file (sweep's run directory, report --out, plot --out, accept --junit,
compare --json/--markdown).

The rule, by what the path is when we write:
- absent, or a regular file: write a temporary file in the same directory, fsync, then
  os.replace it onto the path, so readers see the old or the new content, never a torn one
  (and the temporary file is removed on every failure);
- a symbolic link: the same rule applies to what it points to (the link stays a link); a
  link that points nowhere is refused;
- a character device (/dev/null, /dev/stdout, a terminal) or a FIFO with a reader: written in
  place, never replaced (/dev/full then fails with "No space left on device");
- a directory, a block device, a socket, a FIFO without a reader: refused.

Every failure raises OutputError: one line naming the path and the reason, exit code 2 (the
command could not do what it was asked; 1 stays the verdict "regression" / "not accepted").
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import uuid
from pathlib import Path

from pairbench.errors import UsageError


class OutputError(UsageError):
    """An output file could not be written: one line, exit code 2."""


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENXIO:
        return "a FIFO with no reader (or a device that is not there)"
    return exc.strerror or str(exc)


def _write_in_place(path: Path, data: bytes, what: str) -> None:
    """Open an existing special file without creating or truncating, write, close."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise OutputError(f"{what} {path}: {_reason(exc)}") from None
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError as exc:
        raise OutputError(f"{what} {path}: {_reason(exc)}") from None
    finally:
        os.close(fd)


def _replace_atomically(path: Path, data: bytes, what: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        where = path.parent if exc.errno in (errno.EACCES, errno.EROFS, errno.ENOENT,
                                             errno.ENOTDIR) else path
        raise OutputError(f"{what} {path}: cannot write in {where}: {_reason(exc)}") from None
    try:
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError(f"{what} {path}: {_reason(exc)}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_output(path: Path | str, data: str | bytes, what: str = "output") -> None:
    """Write data to path by the rule above. `what` names the option in messages
    (e.g. "--junit"). Raises OutputError."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    target = path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{what} {path}: {_reason(exc)}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        target = Path(os.path.realpath(path))
        try:
            st = os.stat(target)
        except FileNotFoundError:
            raise OutputError(f"{what} {path}: a symbolic link to {target}, which does not "
                              "exist; refusing to create it") from None
        except OSError as exc:
            raise OutputError(f"{what} {path}: {_reason(exc)}") from None
    if st is None or stat.S_ISREG(st.st_mode):
        _replace_atomically(target, raw, what)
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        _write_in_place(target, raw, what)
    else:
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                "a block device" if stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise OutputError(f"{what} {path}: is {kind}; refusing to write there")


def write_json(path: Path | str, obj: object, what: str = "output") -> None:
    write_output(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n", what)


def output_dir(path: Path | str, what: str = "output directory") -> Path:
    """Create (if needed) a directory for outputs; OutputError if that is impossible."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"{what} {path}: exists and is not a directory") from None
    except OSError as exc:
        raise OutputError(f"{what} {path}: {_reason(exc)}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path}: not writable")
    return path
