"""Plots (matplotlib), from a run (:class:`bloatlab.Result`) or a store.

Kinds (``bloatlab plot RESULT --kind KIND``):

- ``timeseries``: per flow and link, against time — goodput, cwnd, RTT (and
  probe RTT), pacing rate, queueing delay; one panel each, like flent's.
- ``cdf``: CDFs of RTT (flows' smoothed RTT samples and probe RTTs) and of
  the bottleneck's queueing delay.
- ``scatter``: Pantheon-style throughput against p95 delay, one point per run
  (delay axis reversed and logarithmic: better is up and to the right).
- ``param``: a metric against a swept parameter (mean and min–max over
  seeds), one line per value of a second parameter (``--hue``).
- ``heatmap``: a metric over two swept parameters; ``--metric gpgain`` is
  the IMC 2019 GpGain = (goodput_BBR − goodput_CUBIC)/goodput_CUBIC × 100.
- ``fairness``: per-flow goodput bars with Jain's index (a run), or each
  congestion control's share per point (a store).

Every function returns a Figure and never calls ``plt.show()``.
"""

from __future__ import annotations

import math
import re

from ..errors import UserError

KINDS = ("timeseries", "cdf", "scatter", "param", "heatmap", "fairness")


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


# ---------------------------------------------------------------- one run


def goodput_series(flows, window_s: float = 0.2):
    """Per-flow goodput (Mbit/s) over ``window_s`` windows from delivered_bytes."""
    import numpy as np
    import pandas as pd

    out = []
    for fid, g in flows.groupby("flow"):
        g = g.sort_values("t")
        t = g["t"].to_numpy()
        d = g["delivered_bytes"].to_numpy(dtype=float)
        if len(t) < 2:
            continue
        step = max(1, int(round(window_s / max(np.median(np.diff(t)), 1e-9))))
        tt, dd = t[::step], d[::step]
        rate = np.diff(dd) * 8 / np.maximum(np.diff(tt), 1e-9) / 1e6
        out.append(pd.DataFrame({"flow": fid, "t": tt[1:], "goodput_mbps": rate}))
    return pd.concat(out) if out else pd.DataFrame(columns=["flow", "t", "goodput_mbps"])


def _flow_names(result):
    return {f["id"]: f"{f['name']} ({f['cc']})" for f in result.summary.get("flows", [])}


def _srtt(flows):
    """A flow's smoothed RTT with the samples before its first ACK (0: no
    RTT measured yet) left out, so that they draw no line at 0 ms and do not
    enter CDFs."""
    return flows["srtt_ms"].where(flows["srtt_ms"] > 0)


def timeseries(result, panels=("goodput", "cwnd", "rtt", "pacing", "qdelay"), max_flows: int = 12):
    plt = _plt()
    flows, links, probes = result.flows, result.links, result.probes
    names = _flow_names(result)
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
        avail.append(p)
    if not avail:
        raise UserError("plot timeseries: the run has no time series")
    fig, axes = plt.subplots(len(avail), 1, figsize=(8, 2.1 * len(avail) + 0.6), sharex=True, squeeze=False)
    axes = axes[:, 0]
    shown = sorted(flows["flow"].unique())[:max_flows] if not flows.empty else []
    gp = goodput_series(flows[flows["flow"].isin(shown)]) if "goodput" in avail else None
    for ax, p in zip(axes, avail):
        if p == "goodput":
            for fid, g in gp.groupby("flow"):
                ax.plot(g["t"], g["goodput_mbps"], lw=0.9, label=names.get(fid, f"flow {fid}"))
            ax.set_ylabel("goodput\n(Mbit/s)")
        elif p == "cwnd":
            for fid in shown:
                g = flows[flows["flow"] == fid]
                ax.plot(g["t"], g["cwnd_bytes"] / 1e3, lw=0.9, label=names.get(fid, f"flow {fid}"))
            ax.set_ylabel("cwnd (KB)")
        elif p == "rtt":
            if "srtt_ms" in flows:
                for fid in shown:
                    g = flows[flows["flow"] == fid]
                    ax.plot(g["t"], _srtt(g), lw=0.9, label=names.get(fid, f"flow {fid}"))
            if not probes.empty:
                for pid, g in probes.groupby("probe"):
                    ax.plot(g["t"], g["rtt_ms"], ".", ms=1.5, color="k", alpha=0.5, label=f"probe {pid}")
                ax.legend(fontsize=7, loc="upper right", ncol=min(4, max(1, len(shown) + 1)), markerscale=4)
            ax.set_ylabel("RTT (ms)")
        elif p == "pacing":
            for fid in shown:
                g = flows[flows["flow"] == fid]
                ax.plot(g["t"], g["pacing_rate_bps"] / 1e6, lw=0.9, label=names.get(fid, f"flow {fid}"))
            ax.set_ylabel("pacing rate\n(Mbit/s)")
        elif p == "qdelay":
            for d, g in links.groupby("direction"):
                ax.plot(g["t"], g["qdelay_ms"], lw=0.9, label=f"link {d}")
            ax.set_ylabel("queueing\ndelay (ms)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, ncol=min(4, max(1, len(shown))), loc="upper right")
    if "qdelay" in avail:
        axes[avail.index("qdelay")].legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(_title(result), fontsize=10)
    fig.tight_layout()
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


def cdf(results, labels=None):
    """CDFs of RTT and queueing delay of one or several runs."""
    plt = _plt()
    if not isinstance(results, (list, tuple)):
        results = [results]
    labels = labels or [None] * len(results)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for r, lab in zip(results, labels):
        pre = f"{lab}: " if lab else ""
        if not r.flows.empty and "srtt_ms" in r.flows:
            _ecdf(a1, _srtt(r.flows), f"{pre}flows' srtt")
        if not r.probes.empty:
            _ecdf(a1, r.probes["rtt_ms"], f"{pre}probe RTT", ls="--")
        if not r.links.empty:
            for d, g in r.links.groupby("direction"):
                _ecdf(a2, g["qdelay_ms"], f"{pre}link {d}")
    a1.set_xlabel("RTT (ms)")
    a2.set_xlabel("queueing delay (ms)")
    for a in (a1, a2):
        a.set_ylabel("CDF")
        a.grid(True, alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=7)
    if len(results) == 1:
        fig.suptitle(_title(results[0]), fontsize=10)
    fig.tight_layout()
    return fig


def fairness_run(result):
    plt = _plt()
    fl = result.summary.get("flows", [])
    fig, ax = plt.subplots(figsize=(max(4, 0.5 * len(fl) + 2), 3.6))
    ccs = sorted({f["cc"] for f in fl})
    colors = {cc: f"C{i}" for i, cc in enumerate(ccs)}
    ax.bar(range(len(fl)), [f["goodput_mbps"] for f in fl], color=[colors[f["cc"]] for f in fl])
    ax.set_xticks(range(len(fl)), [f["name"] for f in fl], rotation=45 if len(fl) > 4 else 0, ha="right", fontsize=7)
    for cc in ccs:
        ax.bar([], [], color=colors[cc], label=cc)
    ax.legend(fontsize=8)
    ax.set_ylabel("goodput (Mbit/s)")
    j = result.summary.get("jain_fairness")
    ax.set_title(f"{_title(result)}\nJain's index {j:.3f}" if j is not None else _title(result), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- a store


def point_label(row, keys):
    return ", ".join(f"{k.split('.')[-1] if k.count('.') >= 2 else k}={row[k]}" for k in keys if k in row)


def _agg(df, by, metric):
    g = df.groupby(by, dropna=False, sort=False)[metric]
    return g.mean(), g.min(), g.max()


def scatter(store, hue: str | None = None, delay: str | None = None):
    plt = _plt()
    runs = store.runs
    delay = delay or next((c for c in ("probe_rtt_p95_ms", "rtt_p95_ms") if c in runs and runs[c].notna().any()), None)
    if delay is None:
        raise UserError("plot scatter: the runs have no p95 delay")
    if hue:
        _check_col(runs, hue, "plot scatter --hue")
    hue = hue or next((k for k in store.swept_keys() if k.endswith(".cc")), None)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    groups = runs.groupby(hue, sort=False) if hue else [("runs", runs)]
    for i, (h, g) in enumerate(groups):
        ax.scatter(g[delay], g["total_goodput_mbps"], s=18, alpha=0.75, label=str(h), color=f"C{i % 10}")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel(f"{_label(delay)} (log, reversed: better →)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title(f"{store.study.get('name', '')}: throughput vs delay (Pantheon-style)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, title=hue, title_fontsize=8)
    fig.tight_layout()
    return fig


def param(store, x: str, metric: str = "total_goodput_mbps", hue: str | None = None, where: dict | None = None,
          logx: bool | None = None, ax=None, title: str | None = None):
    plt = _plt()
    runs = _filter(store.runs, where)
    _check_col(runs, x, "plot param --x")
    _check_col(runs, metric, "plot param --metric")
    if hue:
        _check_col(runs, hue, "plot param --hue")
    xs, unit = numeric_column(runs[x])
    runs = runs.assign(_x=xs if xs is not None else runs[x].astype(str))
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 4))
    groups = runs.groupby(hue, sort=False) if hue else [(None, runs)]
    for i, (h, g) in enumerate(groups):
        mean, lo, hi = _agg(g, "_x", metric)
        order = sorted(mean.index) if xs is not None else list(mean.index)
        m, l, u = mean[order], lo[order], hi[order]
        ax.plot(order, m.values, "o-", ms=4, label=str(h) if h is not None else metric, color=f"C{i % 10}")
        if (u - l).abs().sum() > 0:
            ax.fill_between(order, l.values, u.values, alpha=0.15, color=f"C{i % 10}")
    if xs is not None:
        pos = [v for v in xs if v > 0]
        if logx or (logx is None and pos and max(pos) / min(pos) >= 100):
            ax.set_xscale("symlog", linthresh=min(pos)) if 0 in xs else ax.set_xscale("log")
    ax.set_xlabel(f"{x} ({unit})" if unit else x)
    ax.set_ylabel(_label(metric))
    ax.grid(True, which="both", alpha=0.3)
    if hue:
        ax.legend(fontsize=8, title=hue, title_fontsize=8)
    ax.set_title(title or f"{store.study.get('name', '')}: {_label(metric)} vs {x}", fontsize=10)
    if fig is not None:
        fig.tight_layout()
        return fig
    return ax.figure


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
            fmt: str = "{:.0f}", cmap: str | None = None, center: float | None = None):
    plt = _plt()
    import numpy as np

    runs = _filter(store.runs, where)
    for c in (x, y):
        _check_col(runs, c, "plot heatmap")
    if metric == "gpgain":
        table = gpgain_frame(runs, x, y)
        cmap, center = cmap or "RdBu", 0.0 if center is None else center
    else:
        _check_col(runs, metric, "plot heatmap --metric")
        table = runs.groupby([y, x], sort=False)[metric].mean().unstack(x)
    for axis in (0, 1):
        labels = table.index if axis == 0 else table.columns
        nums, _ = numeric_column(list(labels))
        if nums is not None:
            order = [lab for _, lab in sorted(zip(nums, labels))]
            table = table.loc[order] if axis == 0 else table[order]
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.75 * table.shape[1], 1.2 + 0.45 * table.shape[0]))
    vals = table.to_numpy(dtype=float)
    finite = vals[np.isfinite(vals)]
    kw = {}
    if center is not None and finite.size:
        lim = max(abs(finite.min() - center), abs(finite.max() - center)) or 1.0
        kw = {"vmin": center - lim, "vmax": center + lim}
    im = ax.imshow(vals, cmap=cmap or "viridis", aspect="auto", origin="lower", **kw)
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index], fontsize=7)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=6)
    ax.figure.colorbar(im, ax=ax, label=_label(metric), shrink=0.85)
    ax.set_title(title or f"{store.study.get('name', '')}: {_label(metric)}", fontsize=10)
    if fig is not None:
        fig.tight_layout()
        return fig
    return ax.figure


def fairness_store(store, group: list[str] | None = None):
    plt = _plt()
    runs = store.runs
    shares = [c for c in runs.columns if c.startswith("share_")]
    if not shares:
        raise UserError("plot fairness: the runs have no per-control shares")
    keys = group or [k for k in store.swept_keys() if runs[k].nunique() > 1]
    if keys:
        agg = runs.groupby(keys, sort=False)[shares].mean().fillna(0.0)
        labels = [", ".join(str(v) for v in (i if isinstance(i, tuple) else (i,))) for i in agg.index]
    else:
        agg = runs[shares].fillna(0.0)
        labels = list(runs["run_id"])
    fig, ax = plt.subplots(figsize=(max(5, 0.45 * len(agg) + 2), 4))
    import numpy as np

    bottom = np.zeros(len(agg))
    for i, c in enumerate(shares):
        ax.bar(range(len(agg)), agg[c].values, bottom=bottom, label=c[len("share_"):], color=f"C{i}")
        bottom = bottom + agg[c].values
    ax.set_xticks(range(len(agg)), labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("share of total goodput")
    ax.set_xlabel(", ".join(keys) if keys else "run")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title(f"{store.study.get('name', '')}: goodput share per congestion control", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
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
    fig.tight_layout()
    return fig


def _plot(target, kind: str, **kw):
    from .store import Store

    is_store = isinstance(target, Store)
    if kind == "timeseries":
        if is_store:
            target = _one_run(target, kw.get("run"))
        return timeseries(target)
    if kind == "cdf":
        if is_store:
            ids = [kw["run"]] if kw.get("run") else list(target.runs["run_id"])[:8]
            keys = target.swept_keys()
            rows = target.runs.set_index("run_id")
            return cdf([target.result(i) for i in ids], [point_label(rows.loc[i], keys) or i for i in ids])
        return cdf(target)
    if kind == "fairness":
        if is_store and not kw.get("run"):
            return fairness_store(target)
        return fairness_run(_one_run(target, kw.get("run")) if is_store else target)
    if not is_store:
        raise UserError(f"plot --kind {kind}: needs a results directory of a sweep, not a single run")
    if kind == "scatter":
        return scatter(target, hue=kw.get("hue"))
    keys = target.swept_keys()
    if kind == "param":
        x = kw.get("x") or (keys[0] if keys else None)
        if not x:
            raise UserError("plot param: give --x KEY (a swept key)")
        return param(target, x, kw.get("metric") or "total_goodput_mbps", kw.get("hue"))
    if kind == "heatmap":
        x, y = kw.get("x"), kw.get("y")
        if not (x and y):
            num = [k for k in keys if numeric_column(target.runs[k])[0] is not None and target.runs[k].nunique() > 1]
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
