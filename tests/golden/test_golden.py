#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The golden comparison (golden.py) finds a change in any column that is not a
measurement, and ignores measurements, machine names and row order."""
import csv
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden

COLS = list(golden.KEPT + golden.MEASURED + golden.MACHINE)


def row(**kw: str) -> dict:
    r = {c: "" for c in COLS}
    r.update(schema_version="2", layer="mpi", test="latency", msg_size_bytes="8", pairs="2",
             pair_id="0", iterations="20", warmup_iterations="2", lat_kind="half_rtt",
             status="ok", lat_us_min="1.5", lat_us_p50="2.0", lat_us_p90="3", duration_s="0.1",
             host="a", peer="b", cpu="0", numa_node="0")
    r.update(kw)
    return r


def text(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def differs(a: list[dict], b: list[dict]) -> list[str]:
    return golden.diff(golden.render(golden.normalise(text(a))),
                       golden.render(golden.normalise(text(b))))


BASE = [row(), row(pair_id="1", cpu="1"), row(pair_id="all", lat_us_p90="4")]


class GoldenTest(unittest.TestCase):
    def test_same_run_is_same(self) -> None:
        self.assertEqual(differs(BASE, BASE), [])

    def test_measurements_machine_and_order_ignored(self) -> None:
        other = [row(pair_id="all", lat_us_p50="9"), row(pair_id="1", host="z", cpu="7"),
                 row(lat_us_min="0.2", duration_s="3", flags="above_link_rate")]
        self.assertEqual(differs(BASE, other), [])

    def test_machine_flags_ignored_others_kept(self) -> None:
        machine = "oversubscribed;emulated_device;link_rate_nominal"
        self.assertEqual(differs(BASE, [row(flags=machine), *BASE[1:]]), [])
        bad = differs(BASE, [row(flags="probe;" + machine), *BASE[1:]])
        self.assertTrue(any("flags" in b for b in bad), bad)

    def test_kept_column_change_found(self) -> None:
        for col, val in (("iterations", "21"), ("window", "64"), ("lat_kind", "op"),
                         ("variant", "cswap"), ("flags", "probe"), ("status", "error")):
            with self.subTest(col=col):
                bad = differs(BASE, [row(**{col: val}), *BASE[1:]])
                self.assertTrue(any(col in b for b in bad), bad)

    def test_measured_cell_emptied_found(self) -> None:
        bad = differs(BASE, [row(lat_us_p90=""), *BASE[1:]])
        self.assertTrue(bad and "lat_us_p90" in bad[0], bad)

    def test_missing_row_found(self) -> None:
        self.assertTrue(differs(BASE, BASE[:2]))

    def test_loading_pair_counts_are_measurements(self) -> None:
        load = [row(test="loaded_lat", flags="probe"),
                row(test="loaded_lat", pair_id="1", lat_kind="", iterations="56"),
                row(test="loaded_lat", pair_id="all", iterations="56")]
        other = [dict(r) for r in load]
        other[1]["iterations"] = other[2]["iterations"] = "32"
        self.assertEqual(differs(load, other), [])
        other[0]["iterations"] = "19"
        self.assertTrue(differs(load, other))

    def test_unknown_column_refused(self) -> None:
        rows = [dict(r, new_col="x") for r in BASE]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=[*COLS, "new_col"], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        with self.assertRaises(golden.Fail):
            golden.normalise(buf.getvalue())


if __name__ == "__main__":
    unittest.main()
