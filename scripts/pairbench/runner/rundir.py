"""Where a run lives: the checkout (repo_root), a new run directory under results/ that is
never reused (new_run_dir), the one for a sweep's options (prepare_run_dir), and the time
stamps every record carries (now_iso)."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pairbench.errors import UsageError
from pairbench.io.safeio import output_dir


def repo_root() -> Path:
    """The checkout this package lives in (PAIRBENCH_ROOT overrides; else the cwd)."""
    env = os.environ.get("PAIRBENCH_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents[3]
    if (here / "core" / "pb_schema.h").is_file():
        return here
    return Path.cwd().resolve()


def new_run_dir(results_dir: Path) -> Path:
    """results/<date>-<host>-<shortid>/, created exclusively (never reused)."""
    output_dir(results_dir, "--results-dir")
    host = socket.gethostname().split(".")[0] or "host"
    for _ in range(10):
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        d = results_dir / f"{stamp}-{host}-{uuid.uuid4().hex[:6]}"
        try:
            d.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(f"--results-dir {results_dir}: cannot create a run directory: "
                             f"{exc.strerror}") from None
        return d
    raise UsageError(f"cannot create a new run directory under {results_dir}")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def prepare_run_dir(run_dir: str | None, results_dir: str | None, root: Path) -> Path:
    """--run-dir (created if needed, refused if it holds a run), else a new directory under
    --results-dir (default <root>/results)."""
    if run_dir:
        d = output_dir(Path(run_dir).absolute(), "--run-dir")
        if (d / "data.csv").exists():
            raise UsageError(f"{d} already holds data.csv; runs are never overwritten")
        return d
    results = Path(results_dir).absolute() if results_dir else root / "results"
    return new_run_dir(results)


