"""The `flags` column of a run's rows as frames (the flags themselves and what they mean:
pairbench.contract.flags), and the flags of runs made before the executables set them,
inferred from metadata.json."""

from __future__ import annotations

import pandas as pd

from pairbench.contract.flags import EMULATED_PREFIXES, split


def row_flags(df: pd.DataFrame) -> pd.Series:
    """The set of flags of every row."""
    return df["flags"].fillna("").map(split)


def has_flag(df: pd.DataFrame, flag: str) -> pd.Series:
    return row_flags(df).map(lambda s: flag in s)


def _point_procs(meta: dict) -> dict[tuple[str, int, int], int]:
    """(test, pairs, repetition) -> processes placed on the node, from metadata.json."""
    pin = meta.get("pinning") or {}
    out: dict[tuple[str, int, int], int] = {}
    for p in meta.get("points") or []:
        places = pin.get(p.get("name"))
        if isinstance(places, list) and places:
            hosts: dict[str, int] = {}
            for pl in places:
                h = str(pl.get("host", "")) if isinstance(pl, dict) else ""
                hosts[h] = hosts.get(h, 0) + 1
            out[(str(p.get("test")), int(p.get("pairs", 0)), int(p.get("repetition", 1)))] = \
                max(hosts.values())
    return out


def infer_legacy(df: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Rows of CSV schema versions 1-2 (no machine flags from the executables) get them from
    metadata; newer rows are returned as they are."""
    if df.empty or "schema_version" not in df.columns:
        return df
    old = pd.to_numeric(df["schema_version"], errors="coerce").fillna(3) < 3
    if not old.any() or not meta:
        return df
    fp = meta.get("fingerprint") or {}
    cpus = (fp.get("cpu") or {}).get("logical_cpus")
    devs = [str(d.get("name", "")) for d in fp.get("rdma_devices") or [] if isinstance(d, dict)]
    emulated = bool(devs) and all(d.startswith(EMULATED_PREFIXES) for d in devs)
    procs = _point_procs(meta)
    df = df.copy()
    for i in df.index[old]:
        r = df.loc[i]
        add: list[str] = []
        n = procs.get((str(r["test"]), int(r["pairs"]), int(r.get("repetition", 1) or 1)))
        if cpus and n and n > int(cpus):
            add.append("oversubscribed")
        if emulated and r["layer"] == "verbs":
            add += ["emulated_device", "link_rate_nominal"]
        have = split(r["flags"])
        new = [f for f in add if f not in have]
        if new:
            df.at[i, "flags"] = ";".join([*(f for f in str(r["flags"] or "").split(";") if f),
                                          *new])
            if "link_rate_nominal" in new:
                df.at[i, "link_pct"] = float("nan")
    return df


