"""Plots (matplotlib), from a run (:class:`bloatlab.Result`) or a store.

Kinds (``bloatlab plot RESULT --kind KIND``):

- ``all``: flent's "all" plot of a run — each flow's goodput and the total
  per direction (a panel per direction), and the probe's RTT, on one time axis.
- ``timeseries``: per flow and link, against time — goodput, cwnd, RTT (and
  probe RTT), pacing rate, queueing delay; one panel each, like flent's. More
  than ``max_flows`` flows: their mean and min–max band, and the total.
- ``cdf``: CDFs of RTT (flows' smoothed RTT samples and probe RTTs) and of
  the bottleneck's queueing delay; of a store, one line per point (its seeds
  pooled), not one per run.
- ``scatter``: Pantheon-style throughput against p95 delay, per point its
  runs, their mean and 1-σ ellipse, and its name (delay axis reversed and
  logarithmic: better is up and to the right).
- ``param``: a metric against a swept parameter (mean and min–max over
  seeds), one colour per value of a second parameter (``--hue``): lines for a
  numeric parameter, grouped bars for a categorical one; ``bars``: bars always.
- ``heatmap``: a metric over two swept parameters; ``--metric gpgain`` is
  the IMC 2019 GpGain = (goodput_BBR − goodput_CUBIC)/goodput_CUBIC × 100.
- ``fairness``: per-flow goodput bars with Jain's index (a run), or each
  congestion control's share per point (a store).

Legends stand outside the axes; numbers printed on a plot or in the report
go through :func:`human` (never ``2.38e+03``).
Every function returns a Figure and never calls ``plt.show()``.
"""

from __future__ import annotations

import math
import re

from ..errors import UserError

KINDS = ("all", "timeseries", "cdf", "scatter", "param", "bars", "heatmap", "fairness")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---------------------------------------------------------------- parameters as numbers


def to_number(v):
    """A swept value as a number and its unit: "1%" -> (1.0, "%"),
    "100Mbit" -> (100.0, "Mbit/s"), "50ms" -> (50.0, "ms"), "10MB" -> (10000.0, "KB")."""
    from .. import units

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


# ---------------------------------------------------------------- numbers and legends for people


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


# ---------------------------------------------------------------- one run


def goodput_series(flows, window_s: float = 0.2):
    """Per-flow goodput (Mbit/s) in windows aligned to multiples of ``window_s``,
    the same windows for every flow, so that the flows of a direction add up to
    its total window by window.

    A window's bytes are the delivered bytes at the last sample at or before its
    end minus those at the last sample at or before its start (0 before a flow's
    first sample: a flow starts with nothing delivered, so a page object that
    lives less than a window still counts). Inside a flow's sampled life they are
    divided by the time between *those two samples*, never by the nominal window:
    a window that catches one sample interval more than it spans (a sampling
    clock of its own, as the kernel's flows have) cannot read above the link
    rate. A window the flow only partly lived in is divided by the window.
    Delivered bytes are in order at the receiver: the window in which a lost
    segment's retransmission arrives gets the bytes that waited behind it, which
    can exceed the link rate — that is the data, not the binning. ``t`` is the
    window's middle."""
    import numpy as np
    import pandas as pd

    eps = 1e-6  # s: sample times are floats of a 10-ms grid; 0.05 may be stored as 0.04999...
    out = []
    for fid, g in flows.groupby("flow"):
        g = g.sort_values("t")
        t = g["t"].to_numpy(dtype=float)
        d = g["delivered_bytes"].to_numpy(dtype=float)
        if len(t) == 0:
            continue
        k0, k1 = math.floor(t[0] / window_s + eps), math.ceil(t[-1] / window_s - eps)
        edges = np.arange(k0, max(k1, k0 + 1) + 1) * window_s
        idx = np.searchsorted(t, edges + eps, side="right") - 1
        dd = np.where(idx >= 0, d[np.maximum(idx, 0)], 0.0)
        i0, i1 = idx[:-1], idx[1:]
        inside = (i0 >= 0) & (edges[1:] <= t[-1] + eps)
        span = np.where(inside, t[np.maximum(i1, 0)] - t[np.maximum(i0, 0)], window_s)
        ok = span > 0
        rate = (dd[1:] - dd[:-1])[ok] * 8 / span[ok] / 1e6
        mid = (edges[:-1] + edges[1:])[ok] / 2
        out.append(pd.DataFrame({"flow": fid, "t": np.round(mid, 9), "goodput_mbps": rate}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=["flow", "t", "goodput_mbps"])


def _flow_names(result):
    return {f["id"]: f"{f['name']} ({f['cc']})" for f in result.summary.get("flows", [])}


def _flow_directions(result):
    return {f["id"]: f.get("direction", "down") for f in result.summary.get("flows", [])}


def _srtt(flows):
    """A flow's smoothed RTT with the samples before its first ACK (0: no
    RTT measured yet) left out, so that they draw no line at 0 ms and do not
    enter CDFs."""
    return flows["srtt_ms"].where(flows["srtt_ms"] > 0)


def _across_flows(frame, col):
    """Mean, min and max of ``col`` across the flows, per sample time (binned
    to the median sampling interval, for flows that sample on clocks of their own)."""
    import numpy as np

    t = frame["t"].to_numpy(dtype=float)
    step = np.median(np.diff(np.unique(t))) if len(np.unique(t)) > 1 else 1.0
    b = frame.assign(_b=np.round(t / step) * step)
    per = b.groupby(["_b", "flow"])[col].mean().groupby(level=0)
    return per.mean(), per.min(), per.max(), per.size()


def _flow_lines(ax, frame, col, colors, names, many: bool, scale=1.0):
    """One line per flow; with many flows their mean and min–max band instead (named with the count)."""
    if not many:
        for fid, g in frame.groupby("flow"):
            ax.plot(g["t"], g[col] * scale, lw=0.9, color=colors.get(fid), label=names.get(fid, f"flow {fid}"))
        return
    mean, lo, hi, _ = _across_flows(frame, col)
    n = frame["flow"].nunique()
    ax.fill_between(mean.index, lo.values * scale, hi.values * scale, color="C0", alpha=0.2, lw=0,
                    label=f"min–max of {n} flows")
    ax.plot(mean.index, mean.values * scale, lw=0.9, color="C0", label=f"mean of {n} flows")


def _goodput_panel(ax, result, gp, colors, names, many: bool, directions=None):
    """Per-flow goodput (or the flows' mean and band), the total per direction
    as an aggregate line, and the link's rate for scale."""
    dirs = _flow_directions(result)
    links = result.summary.get("links", {}) or {}
    gp = gp.assign(direction=gp["flow"].map(dirs).fillna("down"))
    want = directions or sorted(gp["direction"].unique())
    styles = {"down": "-", "up": "--"}
    for d in want:
        g = gp[gp["direction"] == d]
        if g.empty:
            continue
        _flow_lines(ax, g, "goodput_mbps", colors, names, many)
        if g["flow"].nunique() > 1:
            tot = g.groupby("t")["goodput_mbps"].sum()
            ax.plot(tot.index, tot.values, color="k", lw=1.4, ls=styles.get(d, "-"), label=f"total {d}",
                    zorder=1.9)  # under the flows: one flow that carries nearly all stays visible
        rate = (links.get(d) or {}).get("rate_mbps")
        if rate:
            ax.axhline(rate, color="0.4", lw=0.8, ls=":", label=f"link {d} rate {human(rate)} Mbit/s")
    ax.set_ylabel("goodput\n(Mbit/s)")
    ax.set_ylim(bottom=0)


def _probe_lines(ax, probes):
    for pid, g in probes.groupby("probe"):
        ax.plot(g["t"], g["rtt_ms"], ".", ms=1.5, color="k", alpha=0.5, label=f"probe {pid}")


def timeseries(result, panels=("goodput", "cwnd", "rtt", "pacing", "qdelay"), max_flows: int = 12):
    """flent's time-series panels of one run: per flow (or, with more than
    ``max_flows`` flows, their mean and min–max band) and per link direction.
    Goodput gets a panel per direction that has flows (as ``all``): a
    download's tens of Mbit/s and an upload's few on one axis hid the uploads
    (issue 35)."""
    flows, links, probes = result.flows, result.links, result.probes
    names = _flow_names(result)
    dirs = _flow_directions(result)
    present = [d for d in ("down", "up") if not flows.empty and any(dirs.get(f, "down") == d for f in flows["flow"].unique())]
    avail = []
    for p in panels:
        if p == "qdelay" and (links.empty or "qdelay_ms" not in links):
            continue
        if p in ("goodput", "cwnd", "pacing") and (flows.empty or {"goodput": "delivered_bytes", "cwnd": "cwnd_bytes",
                                                                    "pacing": "pacing_rate_bps"}[p] not in flows):
            continue
        if p == "rtt" and (flows.empty or "srtt_ms" not in flows) and probes.empty:
            continue
        if p == "pacing" and not (flows["pacing_rate_bps"].fillna(0) > 0).any():
            continue  # the controls of this run do not pace (or the engine reports no rate): no panel of zeros
        if p == "goodput" and len(present) > 1:
            avail += [("goodput", d) for d in present]
            continue
        avail.append(p)
    if not avail:
        raise UserError("plot timeseries: the run has no time series")
    fig, axes = _figure(len(avail), 1, figsize=(9.5, 2.1 * len(avail) + 0.6), sharex=True, squeeze=False)
    axes = axes[:, 0]
    ids = sorted(flows["flow"].unique()) if not flows.empty else []
    many = len(ids) > max_flows
    colors = {fid: f"C{i % 10}" for i, fid in enumerate(ids)}
    gp = goodput_series(flows) if any(p == "goodput" or isinstance(p, tuple) for p in avail) else None
    for ax, p in zip(axes, avail):
        if isinstance(p, tuple):  # one direction's goodput
            sel = [f for f in ids if dirs.get(f, "down") == p[1]]
            _goodput_panel(ax, result, gp[gp["flow"].isin(sel)], colors, names, len(sel) > max_flows, [p[1]])
            ax.set_ylabel(f"goodput {p[1]}\n(Mbit/s)")
        elif p == "goodput":
            _goodput_panel(ax, result, gp, colors, names, many)
        elif p == "cwnd":
            _flow_lines(ax, flows, "cwnd_bytes", colors, names, many, scale=1e-3)
            ax.set_ylabel("cwnd (KB)")
        elif p == "rtt":
            if "srtt_ms" in flows:
                _flow_lines(ax, flows.assign(srtt_ms=_srtt(flows)), "srtt_ms", colors, names, many)
            if not probes.empty:
                _probe_lines(ax, probes)
            ax.set_ylabel("RTT (ms)")
        elif p == "pacing":
            _flow_lines(ax, flows, "pacing_rate_bps", colors, names, many, scale=1e-6)
            ax.set_ylabel("pacing rate\n(Mbit/s)")
        elif p == "qdelay":
            for d, g in links.groupby("direction"):
                ax.plot(g["t"], g["qdelay_ms"], lw=0.9, label=f"link {d}")
            ax.set_ylabel("queueing\ndelay (ms)")
        ax.grid(True, alpha=0.3)
        # The flows' colours are the same in every panel: their names once (the goodput panels), then only what
        # is new.
        if ax is axes[0] or isinstance(p, tuple) or p in ("rtt", "qdelay"):
            handles, labels = ax.get_legend_handles_labels()
            if ax is not axes[0]:
                seen = {lb for a in axes[:list(axes).index(ax)] for lb in a.get_legend_handles_labels()[1]}
                keep = [(h, lb) for h, lb in zip(handles, labels) if lb not in seen]
                handles, labels = [h for h, _ in keep], [lb for _, lb in keep]
            if handles:
                ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                          fontsize=7, markerscale=4)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(_title(result), fontsize=10)
    return fig


def all_plot(result, max_flows: int = 12):
    """flent's "all" plot: every flow's goodput and the total per direction
    (one panel per direction that has flows), and the latency probe's RTT (the
    flows' smoothed RTT when the run has no probe), on one time axis."""
    flows, probes = result.flows, result.probes
    if flows.empty or "delivered_bytes" not in flows:
        raise UserError("plot all: the run has no flow time series")
    names = _flow_names(result)
    dirs = _flow_directions(result)
    ids = sorted(flows["flow"].unique())
    colors = {fid: f"C{i % 10}" for i, fid in enumerate(ids)}
    present = [d for d in ("down", "up") if any(dirs.get(f, "down") == d for f in ids)]
    fig, axes = _figure(len(present) + 1, 1, figsize=(9.5, 2.3 * (len(present) + 1) + 0.6), sharex=True,
                        squeeze=False)
    axes = axes[:, 0]
    gp = goodput_series(flows)
    for ax, d in zip(axes, present):
        sel = [f for f in ids if dirs.get(f, "down") == d]
        _goodput_panel(ax, result, gp[gp["flow"].isin(sel)], colors, names, len(sel) > max_flows, [d])
        ax.set_ylabel(f"goodput {d}\n(Mbit/s)")
    ax = axes[-1]
    if not probes.empty:
        _probe_lines(ax, probes)
        ax.set_ylabel("probe RTT (ms)")
    else:
        _flow_lines(ax, flows.assign(srtt_ms=_srtt(flows)), "srtt_ms", colors, names, len(ids) > max_flows)
        ax.set_ylabel("flows' smoothed\nRTT (ms) (no probe)")
    for a in axes:
        a.grid(True, alpha=0.3)
        legend_outside(a, markerscale=4)
    ax.set_xlabel("time (s)")
    fig.suptitle(_title(result), fontsize=10)
    return fig


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


# ---------------------------------------------------------------- a store


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


def gpgain_frame(runs, x: str, y: str, cc_key: str = "flow.0.cc"):
    """Mean GpGain (%) per (x, y) cell: (goodput_BBR − goodput_CUBIC) / goodput_CUBIC × 100."""
    _check_col(runs, cc_key, "gpgain")
    m = runs.groupby([y, x, cc_key], sort=False)["total_goodput_mbps"].mean().unstack(cc_key)
    if "bbr" not in m or "cubic" not in m:
        raise UserError("gpgain: needs runs with flow.0.cc = bbr and = cubic")
    return ((m["bbr"] - m["cubic"]) / m["cubic"] * 100).unstack(x)


def heatmap(store, x: str, y: str, metric: str = "gpgain", where: dict | None = None, ax=None, title=None,
            fmt: str | None = None, cmap: str | None = None, center: float | None = None, span: float | None = None):
    """A metric (mean over the runs) over two swept keys, each cell's value
    written in it in black or white, whichever contrasts with the cell. A gain
    (``gpgain``, or any ``center``) gets a diverging map centred on it; with
    ``span`` its colours run from ``center - span`` to ``center + span``
    whatever the data (a tolerance: an error well inside it stays pale, one
    beyond it saturates), else to the data's largest distance from the centre."""
    import numpy as np

    runs = _filter(store.runs, where)
    for c in (x, y):
        _check_col(runs, c, "plot heatmap")
    if metric == "gpgain":
        table = gpgain_frame(runs, x, y)
        cmap, center = cmap or "RdBu", 0.0 if center is None else center
        fmt = fmt or "{:+.0f}"
    else:
        _check_col(runs, metric, "plot heatmap --metric")
        table = runs.groupby([y, x], sort=False)[metric].mean().unstack(x)
    units = {}
    for axis in (0, 1):
        labels = table.index if axis == 0 else table.columns
        nums, units[axis] = numeric_column(list(labels))
        if nums is not None:
            order = [lab for _, lab in sorted(zip(nums, labels))]
            table = table.loc[order] if axis == 0 else table[order]
    fig = None
    if ax is None:
        fig, ax = _figure(figsize=(max(6.0, 2.4 + 1.0 * table.shape[1]), max(3.6, 1.6 + 0.55 * table.shape[0])))
    vals = table.to_numpy(dtype=float)
    finite = vals[np.isfinite(vals)]
    kw = {}
    if center is not None and (finite.size or span):
        lim = span if span else (max(abs(finite.min() - center), abs(finite.max() - center)) or 1.0)
        kw = {"vmin": center - lim, "vmax": center + lim}
    im = ax.imshow(vals, cmap=cmap or "viridis", aspect="auto", origin="lower", **kw)
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=45 if table.shape[1] > 6 else 0,
                  ha="right" if table.shape[1] > 6 else "center", fontsize=8)
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index], fontsize=8)
    ax.set_xlabel(f"{x} ({units[1]})" if units[1] else x)
    ax.set_ylabel(f"{y} ({units[0]})" if units[0] else y)
    size = 9 if max(table.shape) <= 10 else 7
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            r, g, b, _ = im.cmap(im.norm(v))
            ink = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
            text = fmt.format(v) if fmt else human(v)
            text = "0" if re.fullmatch(r"[+-]0", text) else text  # a rounded zero has no sign
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color=ink)
    ax.figure.colorbar(im, ax=ax, label=_label(metric), shrink=0.9)
    ax.set_title(title or f"{store.study.get('name', '')}: {_label(metric)}", fontsize=10)
    return fig if fig is not None else ax.figure


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


def plot(target, kind: str, **kw):
    """Dispatch: ``target`` is a Result or a Store (see bloatlab.load).

    ``where`` ({key: value}) keeps only the matching runs of a Store for every
    kind of plot, says so in each title, and fails when no run matches."""
    from .store import Store

    if kind not in KINDS:
        raise UserError(f'--kind: unknown plot "{kind}" (expected one of: {", ".join(KINDS)})')
    where = kw.pop("where", None)
    if not where:
        return _plot(target, kind, **kw)
    if not isinstance(target, Store):
        raise UserError("plot --where: selects runs of a results directory; this is a single run")
    target = target.subset(_filter(target.runs, where)["run_id"])
    fig = _plot(target, kind, **kw)
    desc = ", ".join(f"{k}={v}" for k, v in where.items())
    sup = fig._suptitle
    titled = [ax for ax in fig.axes if ax.get_title()]
    if sup is not None and sup.get_text():
        fig.suptitle(f"{sup.get_text()}\n(only {desc})", fontsize=sup.get_fontsize())
    elif titled:
        for ax in titled:
            ax.set_title(f"{ax.get_title()}\n(only {desc})", fontsize=ax.title.get_fontsize())
    else:
        fig.suptitle(f"only {desc}", fontsize=10)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    return fig


def _plot(target, kind: str, **kw):
    from .store import Store

    is_store = isinstance(target, Store)
    if kind == "all":
        return all_plot(_one_run(target, kw.get("run")) if is_store else target)
    if kind == "timeseries":
        if is_store:
            target = _one_run(target, kw.get("run"))
        return timeseries(target)
    if kind == "cdf":
        if is_store and kw.get("run"):
            return cdf(_one_run(target, kw["run"]))
        return cdf_store(target, hue=kw.get("hue")) if is_store else cdf(target)
    if kind == "fairness":
        if is_store and not kw.get("run"):
            return fairness_store(target)
        return fairness_run(_one_run(target, kw.get("run")) if is_store else target)
    if not is_store:
        raise UserError(f"plot --kind {kind}: needs a results directory of a sweep, not a single run")
    if kind == "scatter":
        return scatter(target, hue=kw.get("hue"))
    keys = varying_keys(target)
    if kind in ("param", "bars"):
        x = kw.get("x") or (keys[0] if keys else None)
        if not x:
            raise UserError(f"plot {kind}: give --x KEY (a swept key)")
        hue = kw.get("hue")
        others = [k for k in keys if k not in (x, hue)]
        if hue is None and len(others) == 1:
            hue, others = others[0], []  # the one other swept key: a colour each, not pooled away
        return param(target, x, kw.get("metric") or "total_goodput_mbps", hue, bars=True if kind == "bars" else None)
    if kind == "heatmap":
        x, y = kw.get("x"), kw.get("y")
        if not (x and y):
            num = [k for k in keys if numeric_column(target.runs[k])[0] is not None]
            if len(num) < 2:
                raise UserError("plot heatmap: give --x KEY --y KEY (two swept numeric keys)")
            x, y = x or num[0], y or num[1]
        metric = kw.get("metric") or ("gpgain" if "flow.0.cc" in keys else "total_goodput_mbps")
        return heatmap(target, x, y, metric)
    raise UserError(f"plot: {kind}")


def _one_run(target, run_id):
    runs = target.runs
    if run_id is None:
        if len(runs) != 1:
            raise UserError(f"this plot shows one run: give --run RUN_ID (one of {len(runs)}, see bloatlab query)")
        run_id = runs["run_id"].iloc[0]
    if run_id not in set(runs["run_id"]):
        raise UserError(f'--run: no run "{run_id}" in {target.path}')
    return target.result(run_id)
