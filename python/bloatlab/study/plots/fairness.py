"""``fairness``: per-flow goodput with Jain's index (a run), each control's share per point (a store)."""

from __future__ import annotations

from ...errors import UserError
from .common import _figure, _title, legend_outside, varying_keys

def fairness_run(result):
    """Each flow's goodput, grouped by direction (downloads, then uploads: a
    gap between them), the control by colour; the title gives Jain's index of
    each direction (docs/results.md: never across directions; the title gave
    the downloads' index over bars that included the uploads, issue 35)."""
    s = result.summary
    fl = sorted(s.get("flows", []), key=lambda f: (f.get("direction", "down") != "down", f["id"]))
    fig, ax = _figure(figsize=(max(5, 0.5 * len(fl) + 3), 3.8))
    ccs = sorted({f["cc"] for f in fl})
    colors = {cc: f"C{i}" for i, cc in enumerate(ccs)}
    x, prev = [], None
    for f in fl:
        d = f.get("direction", "down")
        x.append((x[-1] + (2 if prev is not None and d != prev else 1)) if x else 0)
        prev = d
    ax.bar(x, [f["goodput_mbps"] for f in fl], color=[colors[f["cc"]] for f in fl],
           hatch=[("//" if f.get("direction") == "up" else None) for f in fl], edgecolor="white")
    ax.set_xticks(x, [f["name"] for f in fl], rotation=45 if len(fl) > 4 else 0,
                  ha="right" if len(fl) > 4 else "center", fontsize=7)
    from matplotlib.patches import Patch

    # legend handles apart from the axes (the axes hold one patch per flow, no more); the controls only: the
    # uploads are told by their names, their hatching and the gap before them
    handles = [Patch(color=colors[cc], label=cc) for cc in ccs]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7,
              title="control", title_fontsize=7)
    ax.set_xlabel("flow (uploads hatched)" if any(f.get("direction") == "up" for f in fl) else "flow")
    ax.set_ylabel("goodput (Mbit/s)")
    by = s.get("jain_fairness_by_direction") or {"down": s.get("jain_fairness")}
    js = "; ".join(f"{'downloads' if d == 'down' else 'uploads'} {v:.3f}" for d, v in by.items() if v is not None)
    ax.set_title(f"{_title(result)}\nJain's index per direction: {js}" if js else _title(result), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def fairness_store(store, group: list[str] | None = None):
    """Each point's goodput share per congestion control, stacked; a panel per
    direction where the runs carry data both ways (``<d>_share_<cc>``: the
    shares of both directions pooled mixed two links, issue 35)."""
    runs = store.runs
    per_dir = [d for d in ("down", "up") if any(c.startswith(f"{d}_share_") for c in runs.columns)]
    panels = [(d, [c for c in runs.columns if c.startswith(f"{d}_share_")], f"{d}_share_") for d in per_dir] \
        or [(None, [c for c in runs.columns if c.startswith("share_")], "share_")]
    if not panels[0][1]:
        raise UserError("plot fairness: the runs have no per-control shares")
    keys = group or varying_keys(store)
    import numpy as np

    ccs = sorted({c[len(pre):] for _, cols, pre in panels for c in cols})
    color = {cc: f"C{i}" for i, cc in enumerate(ccs)}
    fig, axes = _figure(len(panels), 1, figsize=(max(6, 0.5 * len(runs) + 3), 3.6 * len(panels) + 0.6), squeeze=False)
    for ax, (d, shares, pre) in zip(axes[:, 0], panels):
        if keys:
            agg = runs.groupby(keys, sort=False)[shares].mean().fillna(0.0)
            labels = [", ".join(str(v) for v in (i if isinstance(i, tuple) else (i,))) for i in agg.index]
        else:
            agg = runs[shares].fillna(0.0)
            labels = list(runs["run_id"])
        bottom = np.zeros(len(agg))
        for c in shares:
            cc = c[len(pre):]
            ax.bar(range(len(agg)), agg[c].values, bottom=bottom, label=cc, color=color[cc])
            bottom = bottom + agg[c].values
        ax.set_xticks(range(len(agg)), labels, rotation=45 if len(agg) > 4 else 0,
                      ha="right" if len(agg) > 4 else "center", fontsize=7)
        ax.set_ylabel("share of total goodput" if d is None else f"share of the\n{d}loads' goodput")
        ax.set_xlabel(", ".join(keys) if keys else "run")
        ax.set_ylim(0, 1.05)
        legend_outside(ax, title="control", title_fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    what = "per direction, " if per_dir else ""
    axes[0, 0].set_title(f"{store.study.get('name', '')}: goodput share per congestion control ({what}mean over runs)",
                         fontsize=10)
    return fig
