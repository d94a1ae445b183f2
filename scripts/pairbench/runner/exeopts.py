"""The executables' own options that the driver passes through, declared once (EXE_OPTIONS).

Each entry says what the option is called (the executables' spelling, and the driver's where
it differs), its type, which layers have it, its check (the executables' range, with the
message the driver gives before anything runs), and how it is passed. From this one table
come: the options of `pairbench sweep` and `pairbench fabric` (add_exe_arguments), the fields
of their options and configurations (ExeSettings: SweepOptions, SweepConfig and FabricConfig
inherit them), the checks (check_exe), the executable's argv for a point (exe_argv) and the
driver's own command line that asks for the same (driver_argv, what `pairbench default`
logs). Adding an executable option is one new entry here (tests/python/test_layout.py checks
every entry against both binaries' --help).

Options that make points rather than pass through (--sizes, --pairs, verbs --qps) and the
ones the driver itself owns (--timeout: its deadline too; --output, --env-json: the run
directory's files) are not in the table: the planner builds them.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, make_dataclass
from typing import Any

from pairbench.contract.testtable import LAYERS
from pairbench.errors import UsageError

MAX_TIMEOUT_S = 86400.0  # the executables' --timeout and window range is up to 86400 s
MAX_LAT_SAMPLES = 524288  # PB_TARGET_MAX_SAMPLES in core/pb_common.h


def _seconds(low: float) -> Callable[[str, float], None]:
    def check(flag: str, v: float) -> None:
        if not (math.isfinite(v) and low <= v <= MAX_TIMEOUT_S):
            rule = f"seconds in {low:g}..{MAX_TIMEOUT_S:g}"
            raise UsageError(f"{flag} {v:g}: expected {rule}"
                             + (" (the executables' range)" if low > 0 else ""))
    return check


def _nonneg(flag: str, v: int) -> None:
    if v < 0:
        raise UsageError(f"{flag} must be >= 0")


def _lat_samples(flag: str, v: int) -> None:
    if not 1 <= v <= MAX_LAT_SAMPLES:
        raise UsageError(f"{flag} {v}: expected 1..{MAX_LAT_SAMPLES} (PB_TARGET_MAX_SAMPLES)")


DEVICE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,63}")


def _devices(flag: str, v: str) -> None:
    """pairbench-verbs -d's rule: 'all' or a list of distinct device names."""
    names = v.split(",")
    if v != "all" and (not all(DEVICE_NAME.fullmatch(n) for n in names)
                       or len(set(names)) != len(names)):
        raise UsageError(f"{flag} {v!r}: expected 'all' or distinct device names separated by "
                         "commas (e.g. rxe0,rxe1)")


MAX_SOAK_S = 604800.0  # core/pb_soak.h PB_SOAK_OPTS: --soak up to a week


def _soak_seconds(flag: str, v: float) -> None:
    if not (math.isfinite(v) and 0 < v <= MAX_SOAK_S):
        raise UsageError(f"{flag} {v:g}: expected seconds in (0, {MAX_SOAK_S:g}]")


def _bucket_seconds(flag: str, v: float) -> None:
    if not (math.isfinite(v) and 0.001 <= v <= 3600):
        raise UsageError(f"{flag} {v:g}: expected seconds in 0.001..3600 (the executables' range)")


def _fraction(flag: str, v: float) -> None:
    if not (math.isfinite(v) and 0.01 <= v <= 0.99):
        raise UsageError(f"{flag} {v:g}: expected a fraction in 0.01..0.99")


def _one_of(*choices: str) -> Callable[[str, str], None]:
    def check(flag: str, v: str) -> None:
        if v not in choices:
            raise UsageError(f"{flag} {v!r}: expected one of {', '.join(choices)}")
    return check


@dataclass(frozen=True)
class ExeOption:
    """One option of the executables that the driver passes through unchanged."""

    flag: str                    # the executables' long option, e.g. "--pin-list"
    kind: type                   # int, float, str, or bool (a switch without a value)
    help: str
    short: str | None = None     # the driver's short spelling ("-n"), as the executables'
    cli: str | None = None       # the driver's spelling when it differs ("--devices")
    dest: str | None = None      # the field name when it is not the flag's ("duration_s")
    layers: tuple[str, ...] = LAYERS
    check: Callable[[str, Any], None] | None = None   # raises UsageError naming the option
    layer_hint: str = ""         # the error when a layer that lacks it is asked for it
    metavar: str | None = None   # the help's name of the value when the kind's is wrong

    @property
    def field(self) -> str:
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    @property
    def driver_flag(self) -> str:
        return self.cli or self.flag

    def passed(self, value: Any) -> list[str]:
        """The executable's argv for this option at `value` (None: not given)."""
        if value is None or value is False:
            return []
        if self.kind is bool:
            return [self.flag]
        return [self.flag, f"{value:g}" if self.kind is float else str(value)]


EXE_OPTIONS: tuple[ExeOption, ...] = (
    ExeOption("--iterations", int, "a fixed count of timed iterations per point instead of a "
              "time (the executables' -n)", short="-n", check=_nonneg),
    ExeOption("--warmup", int, "untimed warm-up iterations per size (the executables' -w)",
              short="-w", check=_nonneg),
    ExeOption("--duration", float, "every test: one common window of SEC seconds per point "
              "(latency into a histogram); default: --bw-seconds / --lat-seconds", short="-D",
              dest="duration_s", check=_seconds(0.0)),
    ExeOption("--bw-seconds", float, "bandwidth, message rate without -n/-D: the common window "
              "of every point (the executables' default 0.2)", check=_seconds(0.001)),
    ExeOption("--lat-seconds", float, "latency without -n/-D: sample until SEC after the common "
              "start (default 0.1) and --lat-samples, whichever is later",
              check=_seconds(0.001)),
    ExeOption("--lat-samples", int, "latency without -n/-D: at least N samples per pair "
              "(default 1000)", check=_lat_samples),
    ExeOption("--pin", str, "process placement (the executables' --pin POLICY)",
              metavar="POLICY"),
    ExeOption("--pin-list", str, "PU OS indices for --pin list", metavar="LIST"),
    ExeOption("--allow-oversubscribe", bool, "allow more pinned processes than PUs"),
    ExeOption("--buffers", str, "buffer layout of the tests that have a choice: fresh (one "
              "buffer or slot per message in flight) or peer (one reused buffer, as OSU, IMB "
              "and perftest); the rows' buffers column says which ran (docs/mpi.md, docs/verbs.md)",
              check=_one_of("fresh", "peer"), metavar="fresh|peer"),
    ExeOption("--soak", float, "soak: bandwidth and message-rate points run one common window "
              "of SEC seconds each, counted per bucket (--bucket); stalls per pair in the rows, "
              "the time series in the run's soak.parquet (docs/methodology.md \"Soak\")",
              dest="soak_s", layers=("mpi", "verbs"), check=_soak_seconds,
              layer_hint="--soak is for --layer mpi and --layer verbs"),
    ExeOption("--bucket", float, "soak: bucket length in seconds (the executables' default "
              "0.1); --soak must be a whole number of buckets", dest="bucket_s",
              layers=("mpi", "verbs"), check=_bucket_seconds,
              layer_hint="--bucket is for --layer mpi and --layer verbs (a soak's bucket)"),
    ExeOption("--stall-fraction", float, "soak: a stall is a run of buckets below this fraction "
              "of the pair's median bucket (the executables' default 0.5)", layers=("mpi", "verbs"),
              check=_fraction, metavar="F",
              layer_hint="--stall-fraction is for --layer mpi and --layer verbs (a soak's stalls)"),
    ExeOption("--validate-live", int, "soak: data checked under load: the receiver checks the "
              "first message of every Nth window (mpi) or every Nth message (verbs read_bw, "
              "send_bw); a corruption makes the pair's row an error and is counted per bucket in "
              "soak.parquet (0 = off)", dest="validate_every",
              layers=("mpi", "verbs"), check=_nonneg,
              layer_hint="--validate-live is for --layer mpi and --layer verbs (read_bw, send_bw)"),
    ExeOption("--device", str, "verbs: RDMA devices of every point (pairbench-verbs -d: pairs "
              "round-robin over them; all = every device with an ACTIVE port); per-device "
              "aggregate rows follow (docs/verbs.md)", cli="--devices", dest="devices",
              layers=("verbs",), check=_devices,
              layer_hint="--devices is for --layer verbs (RDMA devices of pairbench-verbs)"),
    ExeOption("--probe", str, "verbs --pattern incast|fanout: a victim latency flow (write_lat "
              "or send_lat, 8 B) into the hub from the second host, measured during the "
              "pattern's window and idle in the same point; its row is scope=probe with the "
              "idle twin and the inflation (docs/patterns.md)", layers=("verbs",),
              check=_one_of("write_lat", "send_lat"),
              layer_hint="--probe is for --layer verbs --pattern incast|fanout"),
)

# Rules between options (the executables' own, checked here first so that a sweep fails
# before it creates anything).
METAVARS = {int: "N", float: "SEC", str: "VALUE"}


def _rules(v: Mapping[str, Any]) -> None:
    if v.get("iterations") and v.get("duration_s"):
        raise UsageError(f"-n/--iterations {v['iterations']} and -D/--duration "
                         f"{v['duration_s']:g} both given: choose a fixed count or a common "
                         "window")
    # the executables' pb_window_check_time_opts: -n or -D decides a point's length, and
    # would silently override the default timing's options
    decides = (f"-n/--iterations {v['iterations']}" if v.get("iterations") else
               f"-D/--duration {v['duration_s']:g}" if v.get("duration_s") else None)
    for key_, flag in (("bw_seconds", "--bw-seconds"), ("lat_seconds", "--lat-seconds"),
                       ("lat_samples", "--lat-samples")):
        if decides and v.get(key_) is not None:
            raise UsageError(f"{flag} applies without -n/-D (the default timing); {decides} "
                             "decides the point's length: drop one of them")
    soak, bucket = v.get("soak_s"), v.get("bucket_s")
    for key_, flag in (("bucket_s", "--bucket"), ("stall_fraction", "--stall-fraction"),
                       ("validate_every", "--validate-live")):
        if soak is None and v.get(key_) is not None:
            raise UsageError(f"{flag} applies to a soak: add --soak SECONDS")
    if soak is not None:
        if v.get("iterations") or v.get("duration_s"):
            raise UsageError("--soak is the window of every point: drop "
                             + ("-n/--iterations" if v.get("iterations") else "-D/--duration"))
        n = soak / (bucket if bucket is not None else 0.1)
        if abs(n - round(n)) > 1e-6 * n:
            raise UsageError(f"--soak {soak:g} is not a whole number of --bucket "
                             f"{bucket if bucket is not None else 0.1:g} buckets ({n:.3f}): "
                             "choose a soak that is")
        if round(n) < 2:
            raise UsageError(f"--soak {soak:g}: at least 2 buckets are needed (a median needs 2)")
    if v.get("pin_list") is not None and v.get("pin") != "list":
        raise UsageError("--pin-list is used only with --pin list (add --pin list)")


# The fields every options/config class carries, one per table entry (keyword-only, None =
# not given: the executable's own default).
ExeSettings = make_dataclass(
    "ExeSettings",
    [(o.field, o.kind if o.kind is bool else (o.kind | None),
      False if o.kind is bool else None) for o in EXE_OPTIONS],
    frozen=True, kw_only=True)
ExeSettings.__doc__ = "The executables' pass-through options (EXE_OPTIONS), as fields."
ExeSettings.__module__ = __name__

EXE_FIELDS = tuple(f.name for f in fields(ExeSettings))


def add_exe_arguments(p: argparse.ArgumentParser) -> None:
    """The table's options on a driver command's parser."""
    for o in EXE_OPTIONS:
        names = [n for n in (o.short, o.driver_flag) if n]
        if o.kind is bool:
            p.add_argument(*names, dest=o.field, action="store_true", help=o.help)
        else:
            p.add_argument(*names, dest=o.field, type=o.kind, default=None,
                           metavar=o.metavar or METAVARS[o.kind], help=o.help)


def exe_values(source: object) -> dict[str, Any]:
    """The table's fields of an argparse namespace or of any ExeSettings."""
    return {f: getattr(source, f) for f in EXE_FIELDS}


def check_exe(values: object, layer: str) -> None:
    """Every given option: its layer, its range; then the rules between options."""
    v = exe_values(values)
    for o in EXE_OPTIONS:
        val = v[o.field]
        if val is None or val is False:
            continue
        if layer not in o.layers:
            raise UsageError(o.layer_hint or f"{o.driver_flag} is not an option of "
                             f"pairbench-{layer}")
        if o.check is not None:
            o.check(o.driver_flag, val)
    _rules(v)


def exe_argv(values: object) -> list[str]:
    """The executable's options for these values, in the table's order."""
    v = exe_values(values)
    return [a for o in EXE_OPTIONS for a in o.passed(v[o.field])]


def driver_argv(values: object, switches: bool = False) -> list[str]:
    """The driver's own options asking for the same (for logs and round trips): those with a
    value, or (switches=True) the switches."""
    v = exe_values(values)
    out: list[str] = []
    for o in EXE_OPTIONS:
        val = v[o.field]
        if val is None or val is False or (o.kind is bool) != switches:
            continue
        out += [o.driver_flag] if o.kind is bool else [
            o.driver_flag, f"{val:g}" if o.kind is float else str(val)]
    return out


def flags_of(layers: Iterable[str]) -> dict[str, set[str]]:
    """Layer -> the executables' option names the table claims it has (for the --help test)."""
    return {layer: {o.flag for o in EXE_OPTIONS if layer in o.layers} for layer in layers}
