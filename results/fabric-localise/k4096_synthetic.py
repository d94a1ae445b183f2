"""Localisation alone at K = 4,096 (128 leaves x 32 nodes, 32 spines, D-mod-K): every node
pair's perf made from the route model (1 +- 5 %, halved through a planted leaf-spine cable,
spine port and node cable), then Localiser.localise_codes. No driver, no simulator: the
cost of the routes and of the cover at that size.
Usage (from scripts/): ../.venv/bin/python ../results/fabric-localise/k4096_synthetic.py"""

import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "sim"))
from fattree import write_fat_tree

from pairbench.analysis.localise import Localiser
from pairbench.analysis.routes import Routing
from pairbench.io import fabrictopo

tree = Path("/tmp/ft4096.csv")
write_fat_tree(tree, 128, 32, 32)
r = Routing(fabrictopo.load(tree))
loc = Localiser(r)
a, b = np.triu_indices(4096, 1)
t0 = time.process_time()
inc = loc.incidence(a, b)
t1 = time.process_time()
perf = 1 + 0.05 * (2 * np.random.default_rng(1).random(len(a)) - 1)
for fault in ["leaf3:35 <-> spine3:3", "spine7:9", "n0100"]:
    perf[inc.column(r.component(fault))] /= 2
t2 = time.process_time()
got = loc.localise_codes(a, b, r.node_list, perf, 0.9)
t3 = time.process_time()
tree.unlink()
print({"pairs": len(a), "incidence_cpu_s": round(t1 - t0, 1),
       "localise_cpu_s": round(t3 - t2, 1), "named": [x.name for x in got.found],
       "unexplained": len(got.unexplained),
       "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024})
