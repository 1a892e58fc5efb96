"""``timeseries`` and ``all`` (flent's): a run's flows and links against time."""

from __future__ import annotations

import math

from ...errors import UserError
from .common import _figure, _flow_directions, _flow_names, _srtt, _title, human, legend_outside

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
