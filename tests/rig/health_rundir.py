#!/usr/bin/env python3
"""Turn what tests/rig/in-rig-health wrote into run directories the driver reads
(data.csv, metadata.json with the points' --env-json records, counters.csv), through the
driver's own collection code (pairbench.runner.collect: rows, counter flags, counters.csv).

    health_rundir.py OUT RESULTS PHASE TEST[,TEST...]

The rig's two-node mode runs the executables directly (the sweep has no two-node
launcher): this does what the sweep's collection would have done with their output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from pairbench.runner.collect import (
    flag_counters,
    parse_csv_text,
    rows_to_csv,
    write_counters,
)


def main() -> int:
    out, results, phase, tests = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    run = results / phase
    run.mkdir(parents=True, exist_ok=True)
    fp = json.loads((out / "fingerprint.json").read_text())
    meta: dict = {"run_id": f"health-rig-{phase}", "kind": "tests/rig/in-rig-health",
                  "status": "complete", "config": {"layer": "verbs"}, "fingerprint": fp,
                  "points": []}
    data = []
    for test in tests.split(","):
        rec = json.loads((out / f"{phase}-{test}.json").read_text())
        _, rows = parse_csv_text((out / f"{phase}-{test}.csv").read_text())
        for r in rows:
            r.update(run_id=meta["run_id"], repetition="1")
        flag_counters(rows, rec)
        data += rows
        pairs = int(rows[0]["pairs"]) if rows else 1
        meta["points"].append({"name": f"r1-{test}-p{pairs}", "test": test, "pairs": pairs,
                               "repetition": 1, "status": "ok", "env_record": rec})
    (run / "data.csv").write_text(rows_to_csv(data))
    meta["counter_rows"] = write_counters(run, meta)
    (run / "metadata.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
