"""A verbs fabric scan through mpirun or srun: ONE launch per round, starting every node pair
of the round at once (`--launcher ssh` keeps one launch per node pair: pairbench.runner.scan).

The launch puts one pairbench-verbs rank on each node, rank i on the node of line i of a host
file (Launcher.rank_job: mpirun --hostfile --map-by node, srun --distribution=arbitrary);
each rank finds its node pair in the round from its rank, the round and the node count
(pairbench-verbs --scan R[,skip=...] --scan-hosts FILE: the tournament of core/pb_scan.c,
the one pairbench-mpi runs and pairbench.runner.schedule mirrors), side A the client (it
measures and, in one-way bandwidth tests, sends), side B the server; the client connects to
its peer's name in the host file (--cm rdma_cm or tcp). No argument grows with the node
count: the hosts travel in the file, the round as a number.

Every client writes its own CSV (--output ...round{R}.%r.csv); after the launch the driver
merges them into the round's file (raw/rREP-TEST/roundR.csv: the clients' ok rows, their
scope=all row as scope=node with the peer node named, since it is that node pair's
aggregate, and an error row per size for each node pair without an ok one, naming both
nodes). A round's file is written
when the round is over: rows flushed per round, `--resume` goes on with the rounds that
have none. A node the launcher reports lost, or whose node pairs failed in STRIKES rounds
in a row, is left out of the following rounds (--scan R,skip=POS; its node pairs get error
rows; a node lost during a round: the round runs again without it); a launch that produced
no ok node pair at all is tried once more, then that test's scan stops (resumable; the
launch's exit code does not tell: mpirun without abort-on-failure exits 0). data.csv is
assembled from the round files, streamed. In the first rounds every node also records its
environment once (env_round: its device, firmware, port rate, PCIe link, kernel), gathered
into raw/node-env.jsonl for analysis.nodeenv.

pairbench.runner.scan calls this module (the configuration and Job: pairbench.runner.scancfg).
"""

from __future__ import annotations

import csv
import io
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from pairbench.runner import launchers
from pairbench.runner.collect import failure_reason
from pairbench.runner.exeopts import exe_argv
from pairbench.runner.launchers.base import Launcher, Side
from pairbench.runner.plan import Point
from pairbench.runner.run import PointResult, run_point
from pairbench.runner.scancfg import (
    MAX_DROP,
    FabricConfig,
    Job,
    ScanStopped,
    Stop,
    fmt_s,
    never,
    ranges,
    scan_rounds,
    unranges,
)
from pairbench.runner.scanrows import (
    HEADER,
    IDX,
    error_line,
    header_problem,
    pattern_status,
    split_line,
    write_rows,
)
from pairbench.runner.schedule import round_links, total_rounds

STRIKES = 2  # rounds in a row in which a node's pair failed: the node is left out
NODE_ENV = "raw/node-env.jsonl"  # per line {"host": its scan name, "record": --env-json's}
PRINT_S = 2.0  # progress: at most one line this often (and the last round's)


def round_dir(rep: int, test: str) -> str:
    return f"raw/r{rep}-{test}"


def hostfile_name(dropped: tuple[str, ...]) -> str:
    """The job's host file (the hosts left after `dropped`, which only grows)."""
    return f"raw/verbs-hosts-d{len(dropped)}.txt"


def round_job(cfg: FabricConfig, rep: int, test: str, rnd: int,
              dropped: tuple[str, ...] = (),
              live: tuple[Launcher, str] | None = None,
              files: tuple[str, str] | None = None, record_env: bool = False) -> Job:
    """The launch of round rnd of one (repetition, test): one rank per live node. live:
    the launcher over the live nodes and its host file's text (computed once per plan);
    files: (folder of the ranks' files, host file), by default the scan's; record_env: each
    rank also writes its --env-json record (env_round, gather_env)."""
    launcher, text = live or live_launcher(cfg, dropped)
    sub, hostfile = files or (round_dir(rep, test), hostfile_name(dropped))
    spec = str(rnd)
    if dropped:  # their positions (a map of K hosts: only then, K² in a plan of K launches)
        pos = {h: i for i, h in enumerate(cfg.hosts)}
        spec += ",skip=" + ",".join(str(pos[h]) for h in sorted(dropped, key=pos.get))
    exe = [cfg.binary, "--test", test, "--sizes", ",".join(map(str, cfg.sizes)),
           "--pairs", str(cfg.ranks_per_node), *exe_argv(cfg),
           "--timeout", f"{cfg.timeout_s:g}", "--quiet", "--scan", spec,
           "--scan-hosts", f"{cfg.run_dir}/{hostfile}",
           "--output", f"{cfg.run_dir}/{sub}/round{rnd}.%r.csv",
           *(["--env-json", f"{cfg.run_dir}/{sub}/round{rnd}.%r.env.json"] if record_env
             else []),
           *cfg.exe_args]
    argv, env = launcher.rank_job(exe, f"{cfg.run_dir}/{hostfile}")
    side = Side("main", tuple(argv), f"{sub}/round{rnd}.stdout", f"{sub}/round{rnd}.stderr")
    p = Point(index=0, name=f"r{rep}-{test}-round{rnd}", layer="verbs", test=test,
              pairs=cfg.ranks_per_node, repetition=rep, sizes=cfg.sizes, sides=(side,),
              timeout_s=cfg.timeout_s, csv=None, env_json=None, env=(*launcher.env(), *env))
    return Job(point=p, subdir=".", wave=0, rounds=(rnd, rnd), dropped=dropped,
               hostfile=(hostfile, text))


def env_round(cfg: FabricConfig, rep: int, test: str, rnd: int) -> bool:
    """Whether the ranks of this round record their environment: round 1 of the scan's first
    (repetition, test), where every node has a peer, and round 2 when K is odd (round 1's
    bye): each node once, not K times."""
    first = scan_rounds(cfg)[:2]  # round 1 and 2, or a cover plan's first two
    return (rep == 1 and test == cfg.tests[0]
            and (rnd == first[0] or (rnd == first[-1] and len(cfg.hosts) % 2 == 1)))


def gather_env(run_dir: Path, job: Job, live: list[str]) -> int:
    """Move the ranks' --env-json records of an env_round launch into NODE_ENV (one line per
    node, its scan name and record; a node recorded earlier keeps its line). live: the
    launch's hosts, rank i = live[i]. Returns the nodes added."""
    sub = run_dir / Path(job.point.sides[0].stdout).parent
    rnd = job.rounds[0] if job.rounds else 0
    path = run_dir / NODE_ENV
    have = set(read_node_env(run_dir))
    new: list[str] = []
    for i, host in enumerate(live):
        f = sub / f"round{rnd}.{i}.env.json"
        try:
            rec = json.loads(f.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            rec = None  # a bye, a rank that never started, a record cut short
        f.unlink(missing_ok=True)
        if isinstance(rec, dict) and host not in have:
            have.add(host)
            new.append(json.dumps({"host": host, "record": rec}, separators=(",", ":")))
    if new:
        with open(path, "a", encoding="utf-8") as out:
            out.write("".join(f"{line}\n" for line in new))
    return len(new)


def read_node_env(run_dir: Path | str) -> dict[str, dict]:
    """host -> its record, from the run's NODE_ENV (a host's first line wins; a line that is
    not a record is skipped). {} when the scan recorded none."""
    out: dict[str, dict] = {}
    path = Path(run_dir) / NODE_ENV
    if not path.is_file():
        return out
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                x = json.loads(line)
            except ValueError:
                continue
            if (isinstance(x, dict) and isinstance(x.get("host"), str)
                    and isinstance(x.get("record"), dict)):
                out.setdefault(x["host"], x["record"])
    return out


def live_launcher(cfg: FabricConfig, dropped: tuple[str, ...]) -> tuple[Launcher,
                                                                        str]:
    """The launcher over the hosts not dropped, and the text of their host file."""
    launcher = launchers.get(replace(cfg, hosts=tuple(h for h in cfg.hosts
                                                      if h not in dropped)))
    return launcher, launcher.hostfile_text(1)


def plan_rounds(cfg: FabricConfig) -> list[Job]:
    """Every launch of the scan, a wave per round (--dry-run and the tests read them)."""
    out: list[Job] = []
    live = live_launcher(cfg, ())
    for rep in range(1, cfg.repetitions + 1):
        for test in cfg.tests:
            for r in scan_rounds(cfg):
                j = round_job(cfg, rep, test, r, (), live,
                              record_env=env_round(cfg, rep, test, r))
                out.append(replace(j, point=replace(j.point, index=len(out)), wave=len(out)))
    return out


def _to_line(cells: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def client_rows(path: Path, peer: str) -> tuple[list[str], set[str], str]:
    """A client's CSV: (its ok rows, the scope=all row as scope=node naming the peer node;
    the sizes with an ok aggregate; the first error text of its other rows)."""
    lines: list[str] = []
    sizes: set[str] = set()
    why = ""
    try:
        f = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        return lines, sizes, why
    with f:
        problem = header_problem(f.readline())
        if problem:
            return lines, sizes, problem
        for raw in f:
            if not raw.endswith("\n"):
                break  # cut short
            line = raw.rstrip("\r\n")
            if pattern_status(line) is None:
                continue
            cells = split_line(line)
            if cells[IDX["status"]] != "ok":
                why = why or cells[IDX["error"]]
                continue
            if cells[IDX["pair_id"]] == "all" and cells[IDX["scope"]] == "all":
                cells[IDX["scope"]] = "node"
                cells[IDX["peer"]] = peer
                sizes.add(cells[IDX["msg_size_bytes"]])
                line = _to_line(cells)
            lines.append(line)
    return lines, sizes, why


def collect_round(cfg: FabricConfig, job: Job, res: PointResult, run_dir: Path,
                  lost: list[str]) -> tuple[list[str], list[tuple[str, str]], int]:
    """The round's lines (see the module's docstring); (lines, node pairs that failed,
    node pairs with every size ok). The clients' files are removed."""
    k, test, rnd = len(cfg.hosts), job.point.test, job.rounds[0] if job.rounds else 0
    pos = {h: i for i, h in enumerate(cfg.hosts)}
    skip = sorted(pos[h] for h in job.dropped)
    live = [p for p in range(k) if p not in set(skip)]
    node = {p: j for j, p in enumerate(live)}
    sub = run_dir / Path(job.point.sides[0].stdout).parent  # the ranks' files (round_job)
    label, pairs = f"scan:{rnd}", cfg.ranks_per_node
    want = [str(s) for s in cfg.sizes]
    job_why = failure_reason(res, run_dir) or "no rows from the client"
    lines: list[str] = []
    failed: list[tuple[str, str]] = []
    n_ok = 0
    for a, b in round_links(k, rnd, skip):
        ha, hb = cfg.hosts[a], cfg.hosts[b]
        path = sub / f"round{rnd}.{node[a]}.csv"
        ok, sizes, why = client_rows(path, hb)
        path.unlink(missing_ok=True)
        path.with_name(f"round{rnd}.{node[b]}.csv").unlink(missing_ok=True)
        gone = [h for h in (ha, hb) if h in lost]
        reason = (f"node {' '.join(gone)} lost during the round" if gone else
                  why or f"pairbench-verbs on {ha} (client of {hb}): {job_why}")
        lines += ok
        bad = [s for s in want if s not in sizes]
        for s in bad:
            lines.append(error_line("verbs", test, label, int(s), pairs, ha, hb, "node",
                                    reason))
        if bad:
            failed.append((ha, hb))
        else:
            n_ok += 1
    if skip:
        why = ("not run: node(s) " + " ".join(job.dropped) + " left out of the scan "
               "(lost or failing in earlier rounds)")
        for a, b in round_links(k, rnd):
            if a in skip or b in skip:
                lines += [error_line("verbs", test, label, s, pairs, cfg.hosts[a],
                                     cfg.hosts[b], "node", why) for s in cfg.sizes]
    return lines, failed, n_ok


def failure_text(lines: list[str]) -> str:
    """The error text of the first error row of a round's lines."""
    for line in lines:
        cells = split_line(line)
        if cells[IDX["status"]] != "ok":
            return cells[IDX["error"]]
    return ""


def write_round(path: Path, lines: list[str]) -> None:
    """The round's file, whole or not at all (a temporary file renamed)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(HEADER + "\n" + "".join(f"{ln}\n" for ln in lines), encoding="utf-8")
    tmp.replace(path)


class Strikes:
    """Rounds in a row in which each node's pair failed."""

    def __init__(self) -> None:
        self.n: dict[str, int] = {}

    def update(self, failed: list[tuple[str, str]], hosts: list[str]) -> list[str]:
        bad = {h for ab in failed for h in ab}
        for h in hosts:
            self.n[h] = self.n.get(h, 0) + 1 if h in bad else 0
        return [h for h in hosts if self.n[h] >= STRIKES]


def run_verbs_scan(cfg: FabricConfig, run_dir: Path, meta: dict,
                   save: Callable[[], None], quiet: bool = False, stop: Stop = never) -> None:
    """Every (repetition, test) of the scan, round by round, each round one launch (see the
    module's docstring). State in meta["scan"]: the rounds complete (as ranges) per
    (repetition, test) and the hosts left out; one line per launch in raw/rounds.jsonl."""
    k, n = len(cfg.hosts), total_rounds(len(cfg.hosts))
    plan = set(scan_rounds(cfg))  # every round, or a cover plan's
    grace = min(10.0, max(1.0, 0.1 * cfg.timeout_s))
    state = meta.setdefault("scan", {"dropped": [], "jobs": {}})
    log = run_dir / "raw" / "rounds.jsonl"
    (run_dir / "raw").mkdir(exist_ok=True)
    for rep in range(1, cfg.repetitions + 1):
        for test in cfg.tests:
            js = state["jobs"].setdefault(f"r{rep}-{test}", {"rep": rep, "test": test,
                                                              "complete": []})
            done = unranges(js["complete"])
            (run_dir / round_dir(rep, test)).mkdir(parents=True, exist_ok=True)
            strikes, stuck, start, printed, ran = Strikes(), 0, time.monotonic(), 0.0, 0
            r = 1
            while r <= n:
                if stop():  # a stop signal: the rounds complete so far are kept
                    raise ScanStopped(None)
                dropped = tuple(state["dropped"])
                if r in done or r not in plan:
                    r += 1
                    continue
                if k - len(dropped) < 2:
                    break
                record_env = env_round(cfg, rep, test, r)
                job = round_job(cfg, rep, test, r, dropped, record_env=record_env)
                assert job.hostfile is not None
                hf = run_dir / job.hostfile[0]
                if not hf.is_file():
                    hf.write_text(job.hostfile[1])
                res = run_point(job.point, run_dir, grace, stop=stop)
                if res.interrupted:  # its process group killed; the round is not complete
                    raise ScanStopped(job.point.name)
                err = (run_dir / job.point.sides[0].stderr).read_text(errors="replace")
                lost = [h for h in launchers.get(cfg).lost_nodes(err) if h not in dropped]
                lines, failed, n_ok = collect_round(cfg, job, res, run_dir, lost)
                if record_env:
                    gather_env(run_dir, job, [h for h in cfg.hosts if h not in dropped])
                for side in (job.point.sides[0].stdout, job.point.sides[0].stderr):
                    if (run_dir / side).stat().st_size == 0:
                        (run_dir / side).unlink()  # K files a round otherwise, most empty
                rec = {"round": r, "rep": rep, "test": test, "dropped": list(dropped),
                       "exit_codes": res.exit_codes, "timed_out": res.timed_out,
                       "elapsed_s": round(res.elapsed_s, 3), "pairs_ok": n_ok,
                       "pairs_failed": [list(ab) for ab in failed], "lost": lost,
                       "reason": None if res.ok else failure_reason(res, run_dir)}
                with open(log, "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")
                if 0 < len(lost) <= MAX_DROP:
                    # the launcher ended the round when it lost them: the round again
                    # without them (their node pairs then get error rows)
                    state["dropped"] += lost
                    print(f"fabric: node(s) {', '.join(lost)} lost in round {r}: the round "
                          "runs again, the scan continues without them (their node pairs "
                          "are reported failed)", file=sys.stderr)
                    save()
                    continue
                if not n_ok and (failed or not res.ok):
                    # (mpirun without abort-on-failure exits 0 whatever its ranks did: the
                    # rows say whether anything ran)
                    stuck += 1
                    then = ("; trying once more" if stuck < 2 else
                            "; the scan of this test stops (go on with --resume)")
                    print(f"fabric: r{rep} {test}: round {r}: no node pair ran "
                          f"({rec['reason'] or failure_text(lines)}){then}", file=sys.stderr)
                    if stuck >= 2:
                        break
                    continue
                stuck = 0
                write_round(run_dir / round_dir(rep, test) / f"round{r}.csv", lines)
                done.add(r)
                js["complete"] = ranges(done)
                live = [h for h in cfg.hosts if h not in dropped]
                drop = strikes.update(failed, live)
                if 0 < len(drop) <= MAX_DROP:
                    state["dropped"] += drop
                    print(f"fabric: node(s) {', '.join(drop)}: node pairs failed in "
                          f"{STRIKES} rounds in a row: the scan continues without them "
                          "(their node pairs are reported failed)", file=sys.stderr)
                elif failed:
                    print(f"fabric: r{rep} {test}: round {r}: {len(failed)} node pair(s) "
                          f"failed, e.g. {'-'.join(failed[0])}", file=sys.stderr)
                save()
                ran += 1
                now = time.monotonic()
                if not quiet and (now - printed >= PRINT_S or r == n):
                    printed = now
                    el = now - start
                    left = n - len(done)
                    print(f"fabric: r{rep} {test}: round {r}/{n} ({100 * len(done) / n:.1f} "
                          f"%), {el / ran:.2f} s/round"
                          + (f", ETA {fmt_s(el / ran * left)}" if left else ""),
                          file=sys.stderr, flush=True)
                r += 1
            save()


def confirm_order(pairs: list[tuple[str, str]]) -> list[str]:
    """The hosts of one confirmation launch (disjoint node pairs, side A first) in the order
    in which round 1 of the tournament over them pairs exactly these, each first node as
    side A: round 1 meets position i with position 2n-1-i (core/pb_scan.c; round_links
    says which of the two is side A)."""
    order = [""] * (2 * len(pairs))
    for (pa, pb), (a, b) in zip(round_links(len(order), 1), pairs, strict=True):
        order[pa], order[pb] = a, b
    return order


def confirm_verbs(cfg: FabricConfig, test: str, rounds: list[list[tuple[str, str]]],
                  repeat: int, run_dir: Path, grace: float, stop: Stop = never) -> list[dict]:
    """Re-measure the node pairs of `rounds` (each a list of disjoint node pairs, side A
    first) once: one launch per round, round 1 of the tournament over the round's hosts in
    confirm_order (pairbench-verbs --scan 1, the scan's own path). Their rows, as a scan
    round's (the clients' ok rows, the node pair's aggregate as scope=node naming the peer,
    an error row per size for a node pair that did not run), labelled confirm:I, go to
    raw/confirm-TEST-REPEAT.csv, where analysis.outliers.judge_scan reads them. Returns a
    record per launch (for metadata.json["confirm"])."""
    name = f"confirm-{test}-{repeat}"
    lines: list[str] = []
    recs: list[dict] = []
    for i, rnd in enumerate(rounds, 1):
        sub_cfg = replace(cfg, hosts=tuple(confirm_order(rnd)))
        files = (f"raw/{name}-{i}", f"raw/{name}-{i}.hosts")
        job = round_job(sub_cfg, repeat, test, 1, files=files)
        assert job.hostfile is not None
        (run_dir / files[0]).mkdir(parents=True, exist_ok=True)
        (run_dir / job.hostfile[0]).write_text(job.hostfile[1])
        res = run_point(job.point, run_dir, grace, stop=stop)
        if res.interrupted:
            raise ScanStopped(job.point.name)
        got, failed, n_ok = collect_round(sub_cfg, job, res, run_dir, [])
        for line in got:
            cells = split_line(line)
            cells[IDX["pattern"]] = f"confirm:{i}"
            lines.append(_to_line(cells))
        recs.append({"csv": f"raw/{name}.csv", "argv": list(job.point.sides[0].argv),
                     "pairs": [list(ab) for ab in rnd], "pairs_ok": n_ok,
                     "pairs_failed": [list(ab) for ab in failed],
                     "exit_codes": res.exit_codes, "elapsed_s": round(res.elapsed_s, 3),
                     "reason": None if res.ok else failure_reason(res, run_dir)})
    write_round(run_dir / "raw" / f"{name}.csv", lines)
    return recs


def _round_lines(path: Path, errors: list[int]) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        f.readline()
        for raw in f:
            line = raw.rstrip("\r\n")
            ps = pattern_status(line)
            if ps is not None and ps[1] != "ok":
                errors[0] += 1
            yield line


def assemble_verbs(cfg: FabricConfig, run_dir: Path, meta: dict) -> int:
    """The rows file (data.csv, or data.parquet: meta["rows_format"]) from the round
    files, streamed; a round without one gets an error row per size. Returns the error
    rows."""
    errors = [0]

    def sources():
        for js in meta["scan"]["jobs"].values():
            rep, test = js["rep"], js["test"]
            done = unranges(js["complete"])
            for r in scan_rounds(cfg):
                path = run_dir / round_dir(rep, test) / f"round{r}.csv"
                if r in done and path.is_file():
                    yield _round_lines(path, errors), meta["run_id"], rep
                    continue
                why = "not run: the scan stopped before this round"
                errors[0] += len(cfg.sizes)
                yield ([error_line("verbs", test, f"scan:{r}", s, 0, "", "", "all", why)
                        for s in cfg.sizes], meta["run_id"], rep)

    write_rows(run_dir, sources(), meta.get("rows_format", "csv"))
    return errors[0]


def unfinished(cfg: FabricConfig, meta: dict) -> list[str]:
    """The (repetition, test) scans with a round not complete."""
    return [key for key, js in meta["scan"]["jobs"].items()
            if set(scan_rounds(cfg)) - unranges(js["complete"])]
