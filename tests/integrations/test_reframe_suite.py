"""scripts/test-all's ReFrame stage, as one test in the driver tests' pytest pool (one worker
runs it beside the others): tests/integrations/test-reframe, whose output says what it did.
Its exit 77 (a prerequisite missing) is a skip with its reason; under CI=true the script
itself turns that into a failure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "test-reframe"


def test_reframe_runs_the_checks_locally_and_through_slurm_and_judges_them() -> None:
    p = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                       timeout=900, check=False)
    out = p.stdout + p.stderr
    if p.returncode == 77:
        pytest.skip(out.strip().splitlines()[-1] if out.strip() else "test-reframe: exit 77")
    assert p.returncode == 0, out
