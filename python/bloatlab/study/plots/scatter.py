"""``scatter``: Pantheon-style throughput against p95 delay, per point."""

from __future__ import annotations

import math

from ...errors import UserError
from .common import _check_col, _figure, _groups, _label, _label_points, _log_ticks, _plt, human, legend_outside, varying_keys

def _ellipse(mean, cov, n=120):
    """The 1-σ ellipse of a 2-D normal with this mean and covariance, as (x, y) points."""
    import numpy as np

    vals, vecs = np.linalg.eigh(cov)
    th = np.linspace(0, 2 * np.pi, n)
    pts = vecs @ (np.sqrt(np.maximum(vals, 0))[:, None] * np.vstack([np.cos(th), np.sin(th)]))
    return pts[0] + mean[0], pts[1] + mean[1]


def scatter(store, hue: str | None = None, delay: str | None = None):
    """Pantheon's throughput–delay plot: each point of the sweep (the runs that
    share the swept keys' values, or ``hue``'s alone) labelled, its runs as
    small dots, their mean as a large marker and their 1-σ ellipse. The delay
    axis is logarithmic, so the mean and the ellipse are taken over log(delay)
    (the marker sits at the geometric mean delay) and the arithmetic goodput.
    The delay axis is reversed: better is up and to the right."""
    import numpy as np

    runs = store.runs
    delay = delay or next((c for c in ("probe_rtt_p95_ms", "rtt_p95_ms") if c in runs and runs[c].notna().any()), None)
    if delay is None:
        raise UserError("plot scatter: the runs have no p95 delay")
    if hue:
        _check_col(runs, hue, "plot scatter --hue")
    keys = [hue] if hue else varying_keys(store)
    fig, ax = _figure(figsize=(9, 5.2))
    markers = "osD^vP*X<>"
    lo, hi = math.inf, 0.0
    placed = []
    for i, (label, g) in enumerate(_groups(runs, keys)):
        g = g[[delay, "total_goodput_mbps"]].dropna()
        g = g[g[delay] > 0]
        if g.empty:
            continue
        c = f"C{i % 10}"
        d, y = g[delay].to_numpy(dtype=float), g["total_goodput_mbps"].to_numpy(dtype=float)
        lo, hi = min(lo, d.min()), max(hi, d.max())
        ax.scatter(d, y, s=10, alpha=0.35, color=c, lw=0)
        lx = np.log10(d)
        mean = (lx.mean(), y.mean())
        if len(g) >= 2:
            cov = np.cov(np.vstack([lx, y]))
            if np.any(cov != 0):
                ex, ey = _ellipse(mean, cov)
                ax.plot(10 ** ex, ey, color=c, lw=1.0)
        ax.plot([10 ** mean[0]], [mean[1]], marker=markers[(i // 10) % len(markers)], ms=8, color=c, mec="k", mew=0.6,
                ls="none", label=f"{label} ({len(g)} run{'s' if len(g) > 1 else ''})")
        placed.append((label, 10 ** mean[0], mean[1], c))
    if hi == 0.0:
        raise UserError(f"plot scatter: no run has a positive {delay}")
    ax.set_xscale("log")
    pad = (hi / lo) ** 0.08 if hi > lo else 1.15
    ax.set_xlim(hi * pad, lo / pad)  # reversed: lower delay to the right
    ax.set_xticks(_log_ticks(lo / pad, hi * pad))
    ax.xaxis.set_major_formatter(_plt().FuncFormatter(lambda v, _: human(v)))
    ax.xaxis.set_minor_formatter(_plt().NullFormatter())
    ax.set_xlabel(f"{_label(delay)}, log scale, reversed  —  better: up and to the right ↗")
    ax.set_ylabel("goodput (Mbit/s)")
    _label_points(ax, placed)
    ax.set_title(f"{store.study.get('name', '')}: goodput vs {_label(delay)}\n(per point: the runs, their mean and "
                 "1-σ ellipse)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    legend_outside(ax, title=", ".join(keys) if len(keys) == 1 else "point", title_fontsize=7)
    return fig
