"""The localisation step's own cost on a finished scan: RUN's links read and judged as the
driver does, then present.fabricloc.localise_verdict timed per (test, size).
Usage: .venv/bin/python results/fabric-localise/time_localise.py RUN [CABLES] [ROUTING]"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from pairbench.analysis.outliers import iter_analysed
from pairbench.analysis.scanlinks import read_scan
from pairbench.present import fabricloc

run = Path(sys.argv[1])
cables = sys.argv[2] if len(sys.argv) > 2 else str(run.parent / "tree.csv")
routing = sys.argv[3] if len(sys.argv) > 3 else "dmodk"
t0 = time.process_time()
loc = fabricloc.load(cables, routing)
t_load = time.process_time() - t0
lk = read_scan(run)
for key, _, v in iter_analysed(lk, 0.10, 3.5):
    t1 = time.process_time()
    got = fabricloc.localise_verdict(loc, v)
    t_loc = time.process_time() - t1
    print(json.dumps({"test": key["test"], "size": key["msg_size_bytes"], "routing": routing,
                      "cables_load_cpu_s": round(t_load, 2),
                      "localise_cpu_s": round(t_loc, 2),
                      "named": [f.name for f in got.found],
                      "unexplained": len(got.unexplained), "solver": got.solver,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      // 1024}))
