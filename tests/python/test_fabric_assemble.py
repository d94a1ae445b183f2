"""data.csv of a scan assembled from its parts: a part that exited 0 with every round kept
is copied in blocks (scanrows.WholePart), with exactly the text the line-by-line path
(part_lines) writes; a part whose file does not hold exactly the rows its progress reader
counted goes line by line."""

from __future__ import annotations

from pathlib import Path

from pairbench.contract.columns import COLUMNS
from pairbench.runner.scanrows import (
    PartScan,
    part_lines,
    scan_part,
    whole_part,
    write_data_csv,
)


def row(rnd: int, host: str, status: str = "ok") -> str:
    cells = dict.fromkeys(COLUMNS, "")
    cells.update(layer="mpi", test="bw", pattern=f"scan:{rnd}", status=status, host=host,
                 error='"a, b"' if status != "ok" else "")
    return ",".join(cells[c] for c in COLUMNS)


def part(tmp: Path, lines: list[str], end: str = "\n") -> tuple[Path, PartScan]:
    p = tmp / "part.csv"
    p.write_text(",".join(COLUMNS) + "\n" + "\n".join(lines) + end)
    ps, _ = scan_part(p, True)
    return p, ps


def test_whole_part_copies_what_part_lines_writes(tmp_path: Path) -> None:
    lines = [row(r, f"n{i}", "error" if (r, i) == (2, 1) else "ok")
             for r in (1, 2, 3) for i in range(3)]
    p, ps = part(tmp_path, lines)
    assert ps.rows == 9
    whole = whole_part(p, ps.rows)
    assert whole is not None
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert write_data_csv(a, [(whole, "RUN", 1)]) == 9
    assert write_data_csv(b, [(part_lines(p, {1, 2, 3}), "RUN", 1)]) == 9
    assert a.read_text() == b.read_text()
    assert a.read_text().splitlines()[1].endswith(",RUN,1")


def test_a_part_that_is_not_whole_goes_line_by_line(tmp_path: Path) -> None:
    lines = [row(1, "n0"), row(1, "n1")]
    p, ps = part(tmp_path, lines)
    assert whole_part(p, ps.rows + 1) is None  # not the rows counted
    p, ps = part(tmp_path, [*lines, "mpi,bw,cut"])  # a cut line the reader did not count
    assert whole_part(p, ps.rows) is None
    p, ps = part(tmp_path, lines, end="")  # the last line without its newline
    assert whole_part(p, ps.rows) is None
    (tmp_path / "part.csv").write_text(",".join(COLUMNS) + "\r\n" + row(1, "n0") + "\r\n")
    assert whole_part(tmp_path / "part.csv", 1) is None
