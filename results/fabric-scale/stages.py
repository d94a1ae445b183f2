#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The driver's analysis after the jobs, stage by stage, on an existing scan's run directory
(benchmark, not a test): read_scan, suspects_to_confirm (the judging that chooses the
confirmation pairs), write_outputs; per stage CPU (user + system), wall and peak RSS (VmHWM,
reset before each stage through /proc/self/clear_refs). Rewrites the run's outputs.

    results/fabric-scale/stages.py RUN_DIR [SCRIPTS_DIR of the tree to measure]"""
import sys, time, resource, threading, json
from pathlib import Path
sys.path.insert(0, sys.argv[2] if len(sys.argv) > 2 else "/work/main/scripts")
run = Path(sys.argv[1])

def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) / 1024
def hwm():
    for l in open("/proc/self/status"):
        if l.startswith("VmHWM"): return int(l.split()[1]) / 1024
def reset():
    open("/proc/self/clear_refs", "w").write("5")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
out = {}
def stage(name, f):
    reset(); c0, t0, r0 = cpu(), time.monotonic(), rss()
    x = f()
    out[name] = dict(cpu=round(cpu()-c0, 1), wall=round(time.monotonic()-t0, 1),
                     rss_before=round(r0), peak=round(hwm()), rss_after=round(rss()))
    print(name, out[name], file=sys.stderr, flush=True)
    return x
import pandas, numpy, matplotlib
from pairbench.present import fabricout as fo
from pairbench.analysis.scanlinks import read_scan
meta = json.loads((run / "metadata.json").read_text()).get("analysis", {})
tol, z = meta.get("tolerance", 0.1), meta.get("z", 3.5)
lk = stage("read_scan", lambda: read_scan(run))
print("links frame MiB", round(lk.memory_usage(deep=True).sum() / 2**20), file=sys.stderr)
import inspect
JUDGED = {}
sig = inspect.signature(fo.suspects_to_confirm)
def s2c():
    import pairbench.analysis.scanlinks as sl
    orig = sl.read_scan
    fo.read_scan = lambda r: lk
    try:
        if "judged" in inspect.signature(fo.suspects_to_confirm).parameters:
            return fo.suspects_to_confirm(run, tol, z, judged=JUDGED)
        return fo.suspects_to_confirm(run, tol, z)
    finally:
        fo.read_scan = orig
res = stage("suspects_to_confirm", s2c)
kw = {"judged": JUDGED} if "judged" in inspect.signature(fo.write_outputs).parameters else {}
summ = stage("write_outputs", lambda: fo.write_outputs(run, tol, z, lk, None, None, ("png", "svg"), **kw))
out["total_cpu"] = round(cpu(), 1); out["maxrss"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)
print(json.dumps(out))
print(summ["text"], file=sys.stderr)
