"""Helpers every plot kind shares: matplotlib in Agg mode, parameters as numbers, labels and numbers for people, legends, the runs of a store grouped by point."""

from __future__ import annotations

import math
import re

from ...errors import UserError

def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def to_number(v):
    """A swept value as a number and its unit: "1%" -> (1.0, "%"),
    "100Mbit" -> (100.0, "Mbit/s"), "50ms" -> (50.0, "ms"), "10MB" -> (10000.0, "KB")."""
    from ... import units

    if v is None or isinstance(v, bool):
        return None, ""
    if isinstance(v, (int, float)):
        return (None, "") if isinstance(v, float) and math.isnan(v) else (float(v), "")
    s = str(v).strip()
    if s.endswith("%"):
        try:
            return units.parse_ratio(s) * 100, "%"
        except ValueError:
            return None, ""
    for fn, scale, unit in ((units.parse_rate, 1e6, "Mbit/s"), (units.parse_duration, 1e6, "ms"),
                            (units.parse_size, 1e3, "KB")):
        try:
            return fn(s) / scale, unit
        except ValueError:
            pass
    m = re.match(r"^([\d.]+)\s*(bdp|pkt|pkts)$", s)
    if m:
        return float(m.group(1)), m.group(2)
    return None, ""


def numeric_column(values):
    """(list of floats or None, unit) if every value is numeric, else (None, "")."""
    nums, unit = [], ""
    for v in values:
        x, u = to_number(v)
        if x is None:
            return None, ""
        nums.append(x)
        unit = unit or u
    return nums, unit


METRIC_LABELS = {
    "total_goodput_mbps": "goodput (Mbit/s)", "retransmits": "retransmitted segments",
    "retrans_rate": "retransmitted share of segments", "rtt_p95_ms": "RTT p95 (ms)", "rtt_p50_ms": "RTT p50 (ms)",
    "probe_rtt_p95_ms": "probe RTT p95 (ms)", "probe_rtt_p50_ms": "probe RTT p50 (ms)",
    "down_qdelay_p95_ms": "queueing delay p95 (ms)", "down_qdelay_mean_ms": "mean queueing delay (ms)",
    "jain_fairness": "Jain's fairness index", "fct_s": "completion time (s)", "plt_s": "page-load time (s)", "gpgain": "GpGain (%)",
    "share_bbr": "BBR's share of goodput", "share_cubic": "CUBIC's share of goodput",
}


def _label(metric):
    return METRIC_LABELS.get(metric, metric)


def _check_col(df, col, what):
    if col not in df.columns:
        cols = ", ".join(c for c in df.columns if c not in ("run_id",))
        raise UserError(f'{what}: no column "{col}" in the runs (columns: {cols})')


def human(v) -> str:
    """A number as people read it: 3 significant digits in positional notation (never ``2.38e+03``),
    thousands separated: 2381.7 -> "2,382", 18.94 -> "18.9", 0.0209 -> "0.0209", 7 -> "7"."""
    if v is None or isinstance(v, bool):
        return "" if v is None else str(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return ""
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 100:
        return f"{round(x):,}"
    x = float(f"{x:.3g}")  # 3 significant digits first: 9.9996 is "10.0", not "10.00"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{min(digits, 9)}f}"


def legend_outside(ax, **kw):
    """A legend to the right of the axes, never on the data (the figure's layout makes room for it)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7, **kw)


def _figure(nrows=1, ncols=1, **kw):
    """A figure whose layout keeps outside legends and colour bars in view."""
    return _plt().subplots(nrows, ncols, layout="constrained", **kw)


def _flow_names(result):
    return {f["id"]: f"{f['name']} ({f['cc']})" for f in result.summary.get("flows", [])}


def _flow_directions(result):
    return {f["id"]: f.get("direction", "down") for f in result.summary.get("flows", [])}


def _srtt(flows):
    """A flow's smoothed RTT with the samples before its first ACK (0: no
    RTT measured yet) left out, so that they draw no line at 0 ms and do not
    enter CDFs."""
    return flows["srtt_ms"].where(flows["srtt_ms"] > 0)


def _title(result):
    s = result.summary
    return f"{s['scenario'].get('name', '')} — {s['engine']}, seed {s['seed']}, {s['duration_s']:g} s"


def _ecdf(ax, values, label, **kw):
    import numpy as np

    v = np.sort(np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))],
                           dtype=float))
    if len(v) == 0:
        return
    ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label, **kw)


def point_label(row, keys):
    return ", ".join(f"{k.split('.')[-1] if k.count('.') >= 2 else k}={row[k]}" for k in keys if k in row)


def varying_keys(store, runs=None) -> list[str]:
    """The keys that tell this store's points apart: the swept keys that take
    more than one value here (a key ``[set]`` for every point tells nothing
    apart), and ``part`` when the sweep has several parts (an imported run's
    part, ``import/TOOL``, does not count: it is told by its own label, and
    made every point read ``part=main, ...``, issue 35)."""
    runs = store.runs if runs is None else runs
    keys = [k for k in store.swept_keys() if k in runs and runs[k].nunique(dropna=True) > 1]
    if "part" in runs:
        parts = runs["part"].dropna()
        if parts[~parts.astype(str).str.startswith("import/")].nunique() > 1:
            keys = ["part"] + keys
    return keys


def _groups(runs, keys):
    """(label, runs) per point — per combination of ``keys`` — in the sweep's order."""
    if not keys:
        return [("all runs", runs)]
    out = []
    for vals, g in runs.groupby(keys, sort=False, dropna=False):
        vals = vals if isinstance(vals, tuple) else (vals,)
        out.append((point_label(dict(zip(keys, vals)), keys) if len(keys) > 1 else str(vals[0]), g))
    return out


def _agg(df, by, metric):
    g = df.groupby(by, dropna=False, sort=False)[metric]
    return g.mean(), g.min(), g.max()


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Round numbers between lo and hi for a log axis (1, 2, 5 per decade, finer
    when the range is narrow, coarser when it is wide)."""
    for mants in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8), (1, 1.2, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for m in mants if lo <= m * 10.0 ** e <= hi]
        if len(ticks) >= 4:
            break
    while len(ticks) > 9:
        ticks = ticks[::2]
    return ticks


def _label_points(ax, placed, step_pt: float = 8.0):
    """Each point's name beside it (to the left near the right edge); a name
    that would print on another is moved down until it does not."""
    ax.figure.canvas.draw()  # the data-to-pixel transform of the final limits
    renderer = ax.figure.canvas.get_renderer()
    from matplotlib.transforms import Bbox

    right = ax.transAxes.transform((0.7, 0))[0]
    r = 6 * ax.figure.dpi / 72  # a mean marker's half size (8 pt wide) in pixels
    boxes = [Bbox.from_extents(px - r, py - r, px + r, py + r)
             for px, py in (ax.transData.transform((x, y)) for _, x, y, _ in placed)]
    for label, x, y, c in placed:
        left = ax.transData.transform((x, y))[0] > right
        for k in range(12):
            ann = ax.annotate(label, (x, y), xytext=(-7 if left else 7, 4 - step_pt * k), textcoords="offset points",
                              fontsize=7, color=c, ha="right" if left else "left")
            box = ann.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in boxes) or k == 11:
                break
            ann.remove()
        boxes.append(box)


def _filter(runs, where: dict | None):
    if not where:
        return runs
    for k, v in where.items():
        _check_col(runs, k, "plot --where")
        col = runs[k]
        runs = runs[(col == v) | (col.astype(str) == str(v))]
    if runs.empty:
        raise UserError(f"plot --where {where}: no run matches")
    return runs
