"""Fault suite, output targets (issue 11, classes 1 and 9): no command replaces what is not a
regular file of ours, and an output that cannot be written is one line and exit 2.

Every command that writes a file is tried against a device node made with mknod in a temp
directory, a symbolic link, /dev/full, a FIFO with and without a reader, a read-only or
missing directory; each case checks the exit code, the one line, the target's type
afterwards and that no temporary file is left next to it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultlib import read_only_directory, stderr_lines, temp_files

from conftest import REPO, SCRIPTS, assert_clean_error, cli

SPEC = REPO / "examples" / "accept-spec.toml"
# Generous: the bound proves "no hang", it is not a benchmark.
PROMPT_S = 60.0


def writers(run: Path, target: Path) -> dict[str, list[str]]:
    """The argv of every command that writes a file, writing to target."""
    return {
        "report --out": ["report", str(run), "--out", str(target)],
        "accept --junit": ["accept", str(run), "--spec", str(SPEC), "--junit", str(target)],
        "compare --json": ["compare", str(run), str(run), "--json", str(target)],
        "compare --markdown": ["compare", str(run), str(run), "--markdown", str(target)],
    }


COMMANDS = ["report --out", "accept --junit", "compare --json", "compare --markdown"]
VERDICT_CODES = (0, 1)  # accept/compare: 1 is a verdict, not a failure to write


def need_root_for_mknod() -> None:
    if os.geteuid() != 0:
        pytest.skip("mknod of a device node needs root")


@pytest.mark.parametrize("cmd", COMMANDS)
def test_device_node_is_written_through_not_replaced(cmd: str, base_run: Path,
                                                     tmp_path: Path) -> None:
    need_root_for_mknod()
    node = tmp_path / "null-node"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    proc = cli(*writers(base_run, node)[cmd])
    assert proc.returncode in VERDICT_CODES, proc.stderr
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3), "device node replaced"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("cmd", COMMANDS)
def test_dev_full_is_one_line_and_exit_2(cmd: str, base_run: Path) -> None:
    t0 = time.monotonic()
    proc = cli(*writers(base_run, Path("/dev/full"))[cmd])
    assert time.monotonic() - t0 < PROMPT_S
    assert_clean_error(proc, "/dev/full", "No space left on device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_full_device_node_in_temp_dir(base_run: Path, tmp_path: Path) -> None:
    need_root_for_mknod()
    node = tmp_path / "full-node"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    assert_clean_error(cli(*writers(base_run, node)["accept --junit"]),
                       "No space left on device")
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("cmd", COMMANDS)
def test_symlink_stays_a_link_and_its_target_is_written(cmd: str, base_run: Path,
                                                        tmp_path: Path) -> None:
    real = tmp_path / "real.out"
    real.write_text("old\n")
    link = tmp_path / "link.out"
    link.symlink_to(real)
    proc = cli(*writers(base_run, link)[cmd])
    assert proc.returncode in VERDICT_CODES, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() != "old\n" and real.stat().st_size > 0
    assert temp_files(tmp_path) == []


def test_symlink_to_nowhere_is_refused(base_run: Path, tmp_path: Path) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "missing" / "x.xml")
    assert_clean_error(cli(*writers(base_run, link)["accept --junit"]), "does not exist")
    assert link.is_symlink() and not (tmp_path / "missing").exists()


def test_symlink_to_device_is_written_through(base_run: Path, tmp_path: Path) -> None:
    link = tmp_path / "to-full"
    link.symlink_to("/dev/full")
    assert_clean_error(cli(*writers(base_run, link)["compare --json"]), "No space left")
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_fifo_without_reader_is_refused_promptly(base_run: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    proc = cli(*writers(base_run, fifo)["accept --junit"], timeout=PROMPT_S)
    assert time.monotonic() - t0 < PROMPT_S
    assert_clean_error(proc, "FIFO with no reader")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_fifo_with_reader_gets_the_content(base_run: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    time.sleep(0.5)  # the reader must have opened it: the writer does not wait for one
    proc = cli(*writers(base_run, fifo)["compare --json"], timeout=PROMPT_S)
    reader.join(timeout=PROMPT_S)
    assert proc.returncode in VERDICT_CODES, proc.stderr
    assert got and got[0].startswith(b"{")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("cmd", COMMANDS)
def test_missing_directory_is_one_line(cmd: str, base_run: Path, tmp_path: Path) -> None:
    assert_clean_error(cli(*writers(base_run, tmp_path / "no" / "such" / "out")[cmd]),
                       "cannot write in", "No such file or directory")


def test_directory_target_is_refused(base_run: Path, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert_clean_error(cli(*writers(base_run, tmp_path / "d")["report --out"]),
                       "is a directory")
    assert (tmp_path / "d").is_dir()


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    with read_only_directory(tmp_path) as d:
        yield d


def test_read_only_directory(base_run: Path, tmp_path: Path, read_only_dir: Path) -> None:
    for cmd in COMMANDS:
        assert_clean_error(cli(*writers(base_run, read_only_dir / "out")[cmd]),
                           str(read_only_dir))
    assert list(read_only_dir.iterdir()) == []


def test_regular_file_is_replaced_atomically(base_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old")
    before = out.stat().st_ino
    proc = cli(*writers(base_run, out)["compare --json"])
    assert proc.returncode in VERDICT_CODES
    assert out.read_text().startswith("{") and out.stat().st_ino != before
    assert temp_files(tmp_path) == []


def test_plot_out_that_cannot_be_a_directory(base_run: Path, tmp_path: Path) -> None:
    for target, needle in ((Path("/dev/full"), "not a directory"),
                           (tmp_path / "file", "not a directory")):
        if target.name == "file":
            target.write_text("keep")
        assert_clean_error(cli("plot", str(base_run), "--out", str(target)), needle)
    assert (tmp_path / "file").read_text() == "keep"


def test_plot_out_symlinked_file_inside_is_kept(base_run: Path, tmp_path: Path) -> None:
    """plot writes its figures through the same writer: a symlink among them stays one."""
    out = tmp_path / "plots"
    proc = cli("plot", str(base_run), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    png = sorted(out.glob("*.png"))[0]
    real = tmp_path / "kept.png"
    png.rename(real)
    png.symlink_to(real)
    assert cli("plot", str(base_run), "--out", str(out)).returncode == 0
    assert png.is_symlink() and real.stat().st_size > 0
    assert temp_files(out) == []


def test_binary_spec_is_one_line(base_run: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_bytes(b"\xff\xfe\x00\x01binary\x80")
    assert_clean_error(cli("accept", str(base_run), "--spec", str(spec)), "not UTF-8")


@pytest.mark.parametrize("body,needle", [
    ("[[max_latency]]\ntest='write_lat'\nsize_bytes=8\nmax_us=-1\n", "finite number >= 0"),
    ("[[max_latency]]\ntest='write_lat'\nsize_bytes=-8\nmax_us=10\n", "size >= 1"),
    ("[[min_link_pct]]\ntest='write_bw'\nmin_pct=-5\n", "finite number >= 0"),
    ("[[max_pair_scaling]]\ntest='write_lat'\nmax_ratio=-2\n", "finite number >= 0"),
])
def test_accept_rejects_negative_limits_and_sizes(body: str, needle: str, base_run: Path,
                                                  tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    assert_clean_error(cli("accept", str(base_run), "--spec", str(spec)), needle)


def test_messages_stay_one_line_with_a_huge_value(tmp_path: Path) -> None:
    huge = "x" * 10240
    proc = cli("sweep", "--layer", "verbs", "--test", "write_lat", "--sizes", f"8,{huge}",
               "--results-dir", str(tmp_path))
    assert_clean_error(proc, "bad message size")
    assert len(stderr_lines(proc.stderr)[0]) < 500


def test_a_long_path_is_named_whole() -> None:
    """A message names its file whole up to 300 characters (a deep results tree, a CI
    workspace); only a longer word is elided, keeping its end (the file name and ':LINE:')."""
    from pairbench.errors import one_line

    path = "/ci/workspace/" + "/".join(["results-of-a-long-night"] * 8) + "/osu_bw.out:17:"
    assert 150 < len(path) <= 300
    assert one_line(f"{path} 3 field(s), the header has 4") == \
        f"{path} 3 field(s), the header has 4"
    huge = "/x" * 5000 + "/osu_bw.out:17:"
    cut = one_line(f"{huge} truncated?")
    assert cut.endswith("/osu_bw.out:17: truncated?") and len(cut) < 400


def _run_with_stdout(args: list[str], stdout_spec: str) -> subprocess.CompletedProcess:
    """Run the CLI with stdout on /dev/full ('full') or closed ('closed')."""
    env = dict(os.environ, PYTHONPATH=str(SCRIPTS))
    argv = [sys.executable, "-m", "pairbench", *args]
    if stdout_spec == "closed":
        return subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *argv], env=env,
                              stderr=subprocess.PIPE, text=True, timeout=PROMPT_S, check=False)
    with open("/dev/full", "w") as full:
        return subprocess.run(argv, env=env, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=PROMPT_S, check=False)


@pytest.mark.parametrize("stdout_spec,needle", [
    ("full", "writing to stdout failed: No space left on device"),
    ("closed", "stdout is closed"),
])
@pytest.mark.parametrize("cmd", ["compare", "accept"])
def test_stdout_full_or_closed(cmd: str, stdout_spec: str, needle: str,
                               base_run: Path) -> None:
    args = (["compare", str(base_run), str(base_run)] if cmd == "compare"
            else ["accept", str(base_run), "--spec", str(SPEC)])
    proc = _run_with_stdout(args, stdout_spec)
    proc.stdout = ""
    assert_clean_error(proc, needle)
