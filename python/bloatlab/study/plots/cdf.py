"""``cdf``: CDFs of RTT and queueing delay, of a run or one line per point of a store."""

from __future__ import annotations

from ...errors import UserError
from .common import _check_col, _ecdf, _figure, _groups, _srtt, _title, varying_keys

def _cdf_axes(fig, a1, a2, rtt_label, qdelay_label, legend_title=None):
    a1.set_xlabel(rtt_label)
    a2.set_xlabel(qdelay_label)
    for a in (a1, a2):
        a.set_ylabel("CDF")
        a.set_ylim(0, 1.02)
        a.grid(True, alpha=0.3)
    handles, labels = [], []
    for a in (a1, a2):
        for h, lb in zip(*a.get_legend_handles_labels()):
            if lb not in labels:
                handles.append(h)
                labels.append(lb)
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=7, title=legend_title, title_fontsize=7)


def cdf(results, labels=None):
    """CDFs of RTT and queueing delay of one or several runs (a line per run and quantity)."""
    if not isinstance(results, (list, tuple)):
        results = [results]
    labels = labels or [None] * len(results)
    fig, (a1, a2) = _figure(1, 2, figsize=(11, 3.8))
    # every quantity its own line style (and, for one run, its own colour): the two panels share one legend, where
    # "flows' srtt" and "link down" were both solid blue (issue 35); several runs: a colour per run
    style = {"srtt": ("C0", "-"), "probe": ("C1", "--"), "down": ("C2", "-."), "up": ("C3", ":")}
    for i, (r, lab) in enumerate(zip(results, labels)):
        pre = f"{lab}: " if lab else ""

        def kw(q):
            color, ls = style[q]
            return {"color": f"C{i % 10}" if len(results) > 1 else color, "ls": ls}

        if not r.flows.empty and "srtt_ms" in r.flows:
            _ecdf(a1, _srtt(r.flows), f"{pre}flows' srtt", **kw("srtt"))
        if not r.probes.empty:
            _ecdf(a1, r.probes["rtt_ms"], f"{pre}probe RTT", **kw("probe"))
        if not r.links.empty:
            for d, g in r.links.groupby("direction"):
                _ecdf(a2, g["qdelay_ms"], f"{pre}link {d}", **kw("down" if d == "down" else "up"))
    _cdf_axes(fig, a1, a2, "RTT (ms)", "queueing delay (ms)")
    if len(results) == 1:
        fig.suptitle(_title(results[0]), fontsize=10)
    return fig


def cdf_store(store, hue: str | None = None, max_groups: int = 20):
    """CDFs of a store's RTT and queueing delay, one line per point (the runs
    that share the values of the swept keys, or of ``hue`` alone, pooled: the
    seeds of a point make one line, not one each). RTT is the probe's when the
    runs have probes, else the flows' smoothed RTT."""
    runs = store.runs
    if hue:
        _check_col(runs, hue, "plot cdf --hue")
    keys = [hue] if hue else varying_keys(store)
    groups = _groups(runs, keys)
    if len(groups) > max_groups:
        raise UserError(f"plot cdf: {len(groups)} points ({', '.join(keys)}) make too many lines to read; keep "
                        f"fewer with --where KEY=VALUE or pool by one key with --hue KEY")
    ids = list(runs["run_id"])
    probes, links = store.series("probes", ids), store.series("links", ids)
    use_probe = not probes.empty and probes["rtt_ms"].notna().any()
    rtts = probes if use_probe else store.series("flows", ids)
    if not use_probe and not rtts.empty:
        rtts = rtts.assign(rtt_ms=_srtt(rtts))
    fdirs = set(store.flows["direction"]) if "direction" in store.flows else {"down"}
    dirs = [d for d in ("down", "up") if d in fdirs] or ["down"]
    fig, (a1, a2) = _figure(1, 2, figsize=(11.5, 4))
    styles = {"down": "-", "up": "--"}
    for i, (label, g) in enumerate(groups):
        c = {"color": f"C{i % 10}", "lw": 1.2}
        sel = set(g["run_id"])
        if not rtts.empty:
            _ecdf(a1, rtts.loc[rtts["run_id"].isin(sel), "rtt_ms"], label, ls="-" if i < 10 else "--", **c)
        if not links.empty:
            for d in dirs:
                v = links.loc[links["run_id"].isin(sel) & (links["direction"] == d), "qdelay_ms"]
                _ecdf(a2, v, label if d == dirs[0] else f"_{label} {d}", ls=styles[d] if i < 10 else ":", **c)
    n = runs.groupby(keys, sort=False, dropna=False).size() if keys else [len(runs)]
    seeds = f"{min(n)}–{max(n)}" if min(n) != max(n) else f"{min(n)}"
    _cdf_axes(fig, a1, a2, "probe RTT (ms)" if use_probe else "flows' smoothed RTT (ms)",
              "queueing delay, link " + (" (solid) and ".join(dirs) + " (dashed)" if len(dirs) > 1 else dirs[0]) + " (ms)",
              legend_title=", ".join(keys) if len(keys) == 1 else "point")
    runs_word = "runs" if max(n) > 1 else "run"
    what = f"value of {hue}" if hue else "point"
    fig.suptitle(f"{store.study.get('name', '')}: CDFs, one line per {what} ({seeds} {runs_word} pooled in each)",
                 fontsize=10)
    return fig
