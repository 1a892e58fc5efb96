"""``param`` and ``bars``: a metric against a swept parameter."""

from __future__ import annotations

from ...errors import UserError
from .common import _agg, _check_col, _figure, _filter, _label, _plt, human, legend_outside, numeric_column, varying_keys

def _bars(ax, runs, x, metric, hue, order):
    """Grouped bars for a categorical x: the mean over the runs, each run a dot, the mean written on the bar."""
    import numpy as np

    hues = list(dict.fromkeys(runs[hue].astype(str))) if hue else [None]
    w = 0.8 / len(hues)
    for j, h in enumerate(hues):
        g = runs if h is None else runs[runs[hue].astype(str) == h]
        c = f"C{j % 10}"
        pos = np.arange(len(order)) + (j - (len(hues) - 1) / 2) * w
        vals = [g.loc[g["_x"] == o, metric].dropna().to_numpy(dtype=float) for o in order]
        means = [v.mean() if len(v) else np.nan for v in vals]
        ax.bar(pos, means, width=w * 0.9, color=c, alpha=0.85, label=str(h) if h is not None else "_")
        for p, v, m in zip(pos, vals, means):
            if len(v) > 1:
                ax.plot([p] * len(v), v, "o", ms=3, color="k", alpha=0.55, mew=0,
                        label="runs (one dot each)" if j == 0 and p == pos[0] else "_")
            if len(v):
                ax.annotate(human(m), (p, max(m, 0)), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7)
    ax.set_xticks(range(len(order)), [str(o) for o in order], rotation=30 if len(order) > 6 else 0,
                  ha="right" if len(order) > 6 else "center")
    ax.margins(y=0.12)


def param(store, x: str, metric: str = "total_goodput_mbps", hue: str | None = None, where: dict | None = None,
          logx: bool | None = None, ax=None, title: str | None = None, bars: bool | None = None):
    """A metric against a swept key, one colour per value of ``hue``: lines
    (mean, min–max band over the runs) for a numeric key, grouped bars (mean,
    each run a dot) for a categorical one (fifo / fq_codel / cake are not on a
    line) or with ``bars=True``."""
    runs = _filter(store.runs, where)
    _check_col(runs, x, "plot param --x")
    _check_col(runs, metric, "plot param --metric")
    if hue:
        _check_col(runs, hue, "plot param --hue")
    # runs without the key (an imported flent/iperf3 measurement beside a sweep) have no place on its axis: they
    # are left out and said so in the title, not drawn as a "nan" category (issue 35)
    missing = int(runs[x].isna().sum())
    runs = runs[runs[x].notna()]
    if runs.empty:
        raise UserError(f"plot param: no run has a value for {x}")
    xs, unit = numeric_column(runs[x])
    bars = xs is None if bars is None else bars
    runs = runs.assign(_x=xs if xs is not None else runs[x].astype(str))
    fig = None
    if ax is None:
        fig, ax = _figure(figsize=(8, 4.2))
    if bars:
        order = sorted(set(runs["_x"])) if xs is not None else list(dict.fromkeys(runs["_x"]))
        _bars(ax, runs.assign(_x=runs["_x"]), x, metric, hue, order)
        if xs is not None:  # numbers drawn as categories: label them as swept
            first = runs.drop_duplicates("_x").set_index("_x")[x]
            ax.set_xticks(range(len(order)), [str(first[o]) for o in order])
    else:
        groups = runs.groupby(hue, sort=False) if hue else [(None, runs)]
        for i, (h, g) in enumerate(groups):
            mean, lo, hi = _agg(g, "_x", metric)
            order = sorted(mean.index)
            m, l, u = mean[order], lo[order], hi[order]
            ax.plot(order, m.values, "o-", ms=4, label=str(h) if h is not None else "_", color=f"C{i % 10}")
            if (u - l).abs().sum() > 0:
                ax.fill_between(order, l.values, u.values, alpha=0.15, color=f"C{i % 10}",
                                label="min–max over runs" if i == 0 else "_")
        pos = [v for v in xs if v > 0]
        if logx or (logx is None and pos and max(pos) / min(pos) >= 100):
            ax.set_xscale("symlog", linthresh=min(pos)) if 0 in xs else ax.set_xscale("log")
        first = runs.drop_duplicates("_x").set_index("_x")[x]
        if len(first) <= 12:  # the swept values are the ticks, as the experiment wrote them ("10KB", not 10^1)
            ax.set_xticks(sorted(first.index), [str(first[v]) for v in sorted(first.index)])
            ax.xaxis.set_minor_formatter(_plt().NullFormatter())
    ax.set_xlabel(f"{x} ({unit})" if unit else x)
    ax.set_ylabel(_label(metric))
    ax.grid(True, axis="y" if bars else "both", alpha=0.3)
    if hue or ax.get_legend_handles_labels()[0]:
        legend_outside(ax, title=hue, title_fontsize=7)
    title = title or f"{store.study.get('name', '')}: {_label(metric)} vs {x}"
    pooled = [k for k in varying_keys(store, runs) if k not in (x, hue)] if hasattr(store, "swept_keys") else []
    if pooled:  # say what a bar or a point pools
        title += f"\n(each: mean over {', '.join(pooled)} and seeds)"
    if missing:
        title += f"\n({missing} run{'s' if missing > 1 else ''} without {x}, e.g. imported, left out)"
    ax.set_title(title, fontsize=10)
    return fig if fig is not None else ax.figure
