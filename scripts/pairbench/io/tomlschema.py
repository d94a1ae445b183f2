"""One declarative schema for the TOML inputs (accept's spec, compare's thresholds).

A schema is a dataclass: each field is a key, its `metadata["kind"]` a Kind that checks
and converts the value, a field without a default is required. `load(cls, path)` parses
the file and returns an instance, or raises UsageError with one line naming the file and
the key: unknown keys, wrong types and missing keys are errors.

Dataclasses rather than pydantic or msgspec: the specs are a dozen keys, the standard
library keeps the driver's dependency list as it is, and the one-line messages (which
name the key the way the spec spells it, e.g. `max_latency[0].max_us`) stay ours
instead of being rewritten from a library's multi-line error report.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from pairbench.errors import UsageError

T = TypeVar("T")


class Kind:
    """Checks one value; `where` is 'FILE: key.path' for the message."""

    def __call__(self, value: Any, where: str) -> Any:
        raise NotImplementedError


class Str(Kind):
    def __init__(self, choices: Collection[str] | None = None) -> None:
        self.choices = choices

    def __call__(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise UsageError(f"{where}: expected a string, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise UsageError(f"{where}: expected one of {', '.join(self.choices)}, "
                             f"got {value!r}")
        return value


class Num(Kind):
    """A finite number >= 0 (limits are latencies, %, ratios, thresholds)."""

    def __init__(self, open_unit: bool = False) -> None:
        self.open_unit = open_unit  # must lie in (0, 1)

    def __call__(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UsageError(f"{where}: expected a number, got {value!r}")
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{where}: expected a finite number >= 0, got {value!r}")
        if self.open_unit and not 0 < value < 1:
            raise UsageError(f"{where}: must be in (0, 1), got {value!r}")
        return float(value)


class ListOf(Kind):
    """A list of `item` (a single value counts as a list of one unless strict)."""

    def __init__(self, item: Kind, strict: bool = False) -> None:
        self.item, self.strict = item, strict

    def __call__(self, value: Any, where: str) -> list:
        if self.strict and not isinstance(value, list):
            raise UsageError(f"{where}: expected a list, got {value!r}")
        return [self.item(v, where) for v in (value if isinstance(value, list) else [value])]


class PositiveInt(Kind):
    def __call__(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{where}: expected positive integers, got {value!r}")
        return value


class Bool(Kind):
    def __call__(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false, got {value!r}")
        return value


class NonNegInt(Kind):
    def __call__(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"{where}: expected an integer >= 0, got {value!r}")
        return value


class _Nested(Kind):
    """Kinds holding tables: parse() hands them the file and key path separately."""

    def __call__(self, value: Any, where: str) -> Any:  # pragma: no cover - see nested()
        raise AssertionError("nested kinds are called through nested()")

    def nested(self, value: Any, file: str, path: str) -> Any:
        raise NotImplementedError


class Table(_Nested):
    """A [table] whose keys are those of dataclass `cls`."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def nested(self, value: Any, file: str, path: str) -> Any:
        if not isinstance(value, dict):
            raise UsageError(f"{file}: [{path}] must be a table")
        return parse(self.cls, value, file, path, quote=False)


class ArrayOfTables(_Nested):
    """[[name]] entries, each a table of dataclass `cls`."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def nested(self, value: Any, file: str, path: str) -> list:
        if not isinstance(value, list):
            raise UsageError(f"{file}: {path} must be an array of tables ([[{path}]])")
        out = []
        for i, tab in enumerate(value):
            if not isinstance(tab, dict):
                raise UsageError(f"{file}: {path}[{i}]: must be a table")
            out.append(parse(self.cls, tab, file, f"{path}[{i}]"))
        return out


class TablesByName(_Nested):
    """[name.NAME] tables, NAME checked by `key(name, file)` (e.g. a metric name)."""

    def __init__(self, cls: type, key: Callable[[str, str], None]) -> None:
        self.cls, self.key = cls, key

    def nested(self, value: Any, file: str, path: str) -> dict:
        if not isinstance(value, dict):
            raise UsageError(f"{file}: [{path}.NAME] must be tables")
        out = {}
        for name, tab in value.items():
            self.key(name, file)
            if not isinstance(tab, dict):
                raise UsageError(f"{file}: {path}.{name} must be a table")
            out[name] = parse(self.cls, tab, file, f"{path}.{name}", quote=False)
        return out


def key(kind: Kind, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING,
        doc: str = "") -> Any:
    """A schema field: required unless a default (or default factory) is given."""
    return dataclasses.field(default=default, default_factory=factory,
                             metadata={"kind": kind, "doc": doc})


def parse(cls: type[T], raw: dict, file: str, path: str = "", quote: bool = True) -> T:
    """An instance of schema `cls` from the TOML table at `path` ('' = the file itself).

    An unknown key is named 'key' at the top level and in [[array]] entries, and as the
    dotted path table.key inside a [table]."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    where = f"{file}: {path}" if path else file
    for k in raw:
        if k not in fields:
            name, at = (repr(k), where) if quote or not path else (f"{path}.{k}", file)
            raise UsageError(f"{at}: unknown key {name} (allowed: {', '.join(fields)})")
    kw = {}
    for name, f in fields.items():
        if name in raw:
            kind = f.metadata["kind"]
            sub = f"{path}.{name}" if path else name
            kw[name] = (kind.nested(raw[name], file, sub) if isinstance(kind, _Nested)
                        else kind(raw[name], f"{file}: {sub}"))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise UsageError(f"{where}: missing key {name!r}")
    return cls(**kw)


def load(cls: type[T], path: Path) -> T:
    """Read and validate a TOML file against schema `cls`."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a TOML file (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML ({exc})") from None
    return parse(cls, raw, str(path))
