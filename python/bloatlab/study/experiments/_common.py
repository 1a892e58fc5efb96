"""Helpers shared by the built-in experiments: scenario documents and
lookups of a metric at a point of the store."""

from __future__ import annotations

import math

import pandas as pd

from ..plots import to_number


def dumbbell(name: str, rate: str, rtt: str, buffer: str, flows: list[dict], duration: str, qdisc: str = "fifo",
             up_rate: str | None = None, loss=0, probes: list[dict] | None = None, sample: str = "10ms") -> dict:
    """A one-bottleneck scenario document: ``flows`` are [[flow]] tables
    (``rtt`` defaults to the path's)."""
    doc = {"name": name, "duration": duration, "seed": 1, "sample_interval": sample,
           "link": {"down": {"rate": rate, "buffer": buffer, "qdisc": qdisc, "loss": loss},
                    "up": {"rate": up_rate or rate}},
           "flow": [dict({"rtt": rtt, "direction": "down"}, **f) for f in flows]}
    if probes:
        doc["probe"] = probes
    return doc


def num(v) -> float | None:
    return to_number(v)[0]


def select(runs: pd.DataFrame, **where) -> pd.DataFrame:
    """Runs whose columns equal the given values (keys with dots: pass a dict
    via ``**{"flow.0.cc": "bbr"}``)."""
    m = pd.Series(True, index=runs.index)
    for k, v in where.items():
        if k not in runs:
            return runs.iloc[0:0]
        col = runs[k]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and pd.api.types.is_numeric_dtype(col):
            m &= col == v
        else:
            m &= col.astype(str) == str(v)
    return runs[m]


def mean_at(runs, metric, **where) -> float | None:
    sel = select(runs, **where)
    if sel.empty or metric not in sel or sel[metric].isna().all():
        return None
    return float(sel[metric].mean())


def median_at(runs, metric, **where) -> float | None:
    sel = select(runs, **where)
    if sel.empty or metric not in sel or sel[metric].isna().all():
        return None
    return float(sel[metric].median())


def fmt(v, f="{:.2f}") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f.format(v)


def missing(what: str) -> str:
    return f"no finished run for {what} in the store (failed or not run: see the sweep's output)"


def pct(s: str) -> float:
    return num(s) / 100.0
