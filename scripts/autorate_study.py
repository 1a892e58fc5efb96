"""The autorate trade-off on the gallery's variable-rate traces (docs/autorate.md).

For each trace (gallery/traces/lte-like.trace, starlink-like.trace), each
congestion control and each option — no shaping, CAKE fixed at the trace's p10
and at its median (1-s windows), cake-autorate as it is today (option
`autorate`: without satellite switch compensation, which starlink-autorate.toml
itself turns on), and (option `autorate+sss`, not in the default list)
cake-autorate with its Starlink satellite switch compensation at defaults.sh's
values — one run of the gallery scenario
(lte-autorate.toml, starlink-autorate.toml): the goodput as a share of the
capacity the trace offers over the run, the probe's p95 RTT above the base RTT
(the latency a user adds under load), and the controller's median shaper rate.

    python scripts/autorate_study.py --engine sim --out /tmp/autorate        # table + autorate.png
    python scripts/autorate_study.py --engine emu --duration 30s --cc cubic bbr
    python scripts/autorate_study.py --trace starlink --options autorate autorate+sss
    python scripts/autorate_study.py --steady --options autorate     # the link held at each trace's median

CAKE fixed at a rate is the same path with the controller pinned (min = base =
max): CAKE in front of the modem's FIFO, exactly what a user gets with a fixed
`tc qdisc ... cake bandwidth` on the router.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib

import bloatlab
from bloatlab import traces, units

HERE = os.path.dirname(os.path.abspath(bloatlab.__file__))
GALLERY = os.path.join(HERE, "gallery")
CASES = {"lte": "lte-autorate.toml", "starlink": "starlink-autorate.toml"}


def trace_ms(doc: dict) -> list[int]:
    path = os.path.join(GALLERY, doc["link"]["down"]["rate"][len("trace:"):])
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def steady_ms(rate_mbps: float, duration_s: float) -> list[int]:
    """The delivery opportunities (ms) of a constant `rate_mbps`: what `late_causes` and the plots read for `--steady`."""
    n = int(rate_mbps * 1e6 * duration_s / (traces.OPPORTUNITY_BYTES * 8))
    return [int(i * traces.OPPORTUNITY_BYTES * 8 / (rate_mbps * 1e6) * 1000) for i in range(n)]


def capacity_mbps(ms: list[int], duration_s: float) -> float:
    """Mean capacity the trace offers over the first `duration_s`."""
    n = sum(1 for t in ms if t <= duration_s * 1000)
    return n * traces.OPPORTUNITY_BYTES * 8 / duration_s / 1e6


def one(doc: dict, option: str, rates: dict, cc: str, engine: str, duration: str) -> dict:
    d = json.loads(json.dumps(doc))
    d["duration"] = duration
    d["flow"][0]["cc"] = cc
    down = d["link"]["down"]
    if down["rate"].startswith("trace:"):
        down["rate"] = "trace:" + os.path.join(GALLERY, down["rate"][len("trace:"):])
    if option == "none":
        del down["autorate"]
    elif option.startswith("cake@"):
        r = units.fmt_rate(rates[option[len("cake@"):]] * 1e6)
        down["autorate"] = {"min": r, "base": r, "max": r}
    elif option == "autorate":
        # cake-autorate as it is today (v3.2 on): no satellite switch compensation, whatever the gallery file sets
        down["autorate"] = {k: v for k, v in down["autorate"].items() if k != "sss"}
    elif option == "autorate+sss":
        # cake-autorate's Starlink satellite switch compensation at its defaults.sh values (docs/autorate.md)
        down["autorate"] = dict(down["autorate"], sss={})
    res = bloatlab.run(d, engine=engine)
    s = res.summary
    base_ms = units.parse_duration(doc["flow"][0]["rtt"]) / 1e6
    a = s["links"]["down"].get("autorate") or {}
    p = res.probes.dropna()
    return {
        "goodput_mbps": s["total_goodput_mbps"],
        "p95_added_ms": (s["probes"][0]["rtt_ms"]["p95"] or 0) - base_ms,
        "p50_added_ms": (s["probes"][0]["rtt_ms"]["p50"] or 0) - base_ms,
        "shaper_median_mbps": a.get("rate_median_mbps"),
        "series": {"t": [float(x) for x in p["t"]], "added_ms": [float(x) - base_ms for x in p["rtt_ms"]],
                   "shaper": a.get("log") or []},
    }


#: Where the Starlink-like trace changes its rate (traces.py: the first epoch ends at 12 s, then every 15 s), and the
#: neighbourhood of a switch we attribute a late probe to: from cake-autorate's SSS window's opening (300 ms before)
#: to 2 s after (a handover dip's queue at the new rate and the controller's reaction, 3 samples + a few 300-ms cuts)
SWITCH_BEFORE_S, SWITCH_AFTER_S = 0.3, 2.0


def switch_times(duration_s: float) -> list[float]:
    out, t = [], traces.STARLINK_FIRST_EPOCH_S
    while t < duration_s:
        out.append(t)
        t += traces.STARLINK_EPOCH_S
    return out


def by_switch(series: dict, duration_s: float, thr_ms: float = 30.0) -> dict:
    """Of the probe samples more than `thr_ms` above the base RTT, the share near a Starlink switch, and the p95 added
    latency of the samples away from every switch."""
    sw = switch_times(duration_s)
    near = [any(s - SWITCH_BEFORE_S < t < s + SWITCH_AFTER_S for s in sw) for t in series["t"]]
    late = [n for n, x in zip(near, series["added_ms"]) if x > thr_ms]
    away = sorted(x for n, x in zip(near, series["added_ms"]) if not n)
    return {"late_near_switch": (sum(late) / len(late)) if late else None,
            "p95_added_away_ms": away[min(len(away) - 1, int(0.95 * len(away)))] if away else None}


def late_causes(series: dict, ms: list[int], thr_ms: float = 30.0) -> dict:
    """Where the probe samples more than `thr_ms` late come from (docs/autorate.md, "What limits it"):
    - `late_share`: their share of all samples;
    - `late_shaper_above`: the share of them taken while the shaper rate was above the capacity the trace offered
      over the 200 ms before (the controller has not caught up: it overshot or has not cut far enough yet);
    - `late_after_drop`: the share of them in episodes (late samples less than 100 ms apart) whose capacity is more
      than 20 % below that of the second before the episode (0.2 s margin): a capacity drop; the rest come without
      one (the controller's own raise past a steady capacity).
    The capacity is read on the series' clock, which is the trace's in both engines (the emulator's trace starts at
    the scenario's t = 0, not at its link clock's 0, since issue 31 goal 3)."""
    import bisect

    def cap(t0: float, t1: float) -> float:
        a, b = bisect.bisect_left(ms, t0 * 1000), bisect.bisect_left(ms, t1 * 1000)
        return (b - a) * traces.OPPORTUNITY_BYTES * 8 / (t1 - t0) / 1e6

    t, x, log = series["t"], series["added_ms"], series["shaper"]
    lt = [e[0] for e in log]

    def shaper(tt: float) -> float:
        return log[max(bisect.bisect_right(lt, tt) - 1, 0)][1] if log else float("inf")

    late = [i for i, v in enumerate(x) if v > thr_ms]
    if not late:
        return {"late_share": 0.0, "late_shaper_above": None, "late_after_drop": None}
    episodes: list[list] = []
    for i in late:
        if episodes and t[i] - episodes[-1][1] <= 0.1:
            episodes[-1][1] = t[i]
            episodes[-1][2] += 1
        else:
            episodes.append([t[i], t[i], 1])
    drop = sum(n for a, b, n in episodes if cap(a, b + 0.01) < 0.8 * cap(a - 1.0, a - 0.2))
    return {"late_share": len(late) / len(x),
            "late_shaper_above": sum(1 for i in late if shaper(t[i]) > cap(t[i] - 0.2, t[i])) / len(late),
            "late_after_drop": drop / len(late)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default="sim", choices=["sim", "emu"])
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--cc", nargs="+", default=["cubic", "bbr"])
    ap.add_argument("--trace", nargs="+", default=sorted(CASES), choices=sorted(CASES))
    ap.add_argument("--options", nargs="+", default=["none", "cake@p10", "cake@median", "autorate"])
    ap.add_argument("--out", help="directory for results.json and autorate.png")
    ap.add_argument("--steady", action="store_true",
                    help="hold the link at the trace's median (1-s windows) instead of the trace: the controller on a "
                         "capacity that does not move (what its own cycle adds)")
    ap.add_argument("--series", action="store_true",
                    help="keep each run's probe samples and shaper rate in results.json and draw timeseries-ENGINE.png")
    a = ap.parse_args(argv)
    dur_s = units.parse_duration(a.duration) / 1e9
    rows = []
    for name in a.trace:
        with open(os.path.join(GALLERY, CASES[name]), "rb") as f:
            doc = tomllib.load(f)
        ms = trace_ms(doc)
        pct = traces.capacity_percentiles(ms)
        rates = {"p10": pct["p10_mbps"], "median": pct["median_mbps"]}
        if a.steady:
            doc["link"]["down"]["rate"] = units.fmt_rate(pct["median_mbps"] * 1e6)
            ms = steady_ms(pct["median_mbps"], dur_s)
        cap = capacity_mbps(ms, dur_s)
        for cc in a.cc:
            for opt in a.options:
                r = one(doc, opt, rates, cc, a.engine, a.duration)
                r.update(trace=name, cc=cc, option=opt, engine=a.engine, capacity_mbps=cap,
                         share=r["goodput_mbps"] / cap, steady=a.steady)
                if name == "starlink" and not a.steady:
                    r.update(by_switch(r["series"], dur_s))
                if opt.startswith("autorate"):
                    r.update(late_causes(r["series"], ms))
                if not a.series:
                    del r["series"]
                rows.append(r)
                print(f"{name:8} {cc:5} {opt:12} goodput {r['goodput_mbps']:6.2f} Mbit/s = {100 * r['share']:5.1f} % of "
                      f"{cap:.2f}; added RTT p50 {r['p50_added_ms']:6.1f} p95 {r['p95_added_ms']:6.1f} ms"
                      + (f"; shaper median {r['shaper_median_mbps']:.2f}" if r["shaper_median_mbps"] else "")
                      + (f"; late (>30 ms) near a switch {100 * r['late_near_switch']:.0f} %, p95 away "
                         f"{r['p95_added_away_ms']:.1f} ms" if r.get("late_near_switch") is not None else "")
                      + (f"; late {100 * r['late_share']:.1f} % of samples, of them with the shaper above capacity "
                         f"{100 * r['late_shaper_above']:.0f} %, after a capacity drop {100 * r['late_after_drop']:.0f} %"
                         if r.get("late_shaper_above") is not None else ""), flush=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"results-{a.engine}.json"), "w") as f:
            json.dump(rows, f, indent=1)
        plot(rows, os.path.join(a.out, f"autorate-{a.engine}.png"))
        if a.series:
            plot_series(rows, {n: steady_ms(traces.capacity_percentiles(m)["median_mbps"], dur_s) if a.steady else m
                               for n in a.trace
                               for m in [trace_ms(tomllib.load(open(os.path.join(GALLERY, CASES[n]), "rb")))]},
                        dur_s, os.path.join(a.out, f"timeseries-{a.engine}.png"))
    return 0


def plot_series(rows: list[dict], ms: dict, duration_s: float, path: str) -> None:
    """One panel pair per (trace, CC): the capacity the trace offers (100-ms windows) and each option's shaper rate
    above, each option's added probe latency below; Starlink's switches as dotted lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["trace"], r["cc"]) for r in rows})
    fig, axes = plt.subplots(2 * len(keys), 1, figsize=(14, 4.5 * len(keys)), squeeze=False, sharex=True)
    colours = {"none": "grey", "cake@p10": "tab:green", "cake@median": "tab:purple", "autorate": "tab:blue",
               "autorate+sss": "tab:red"}
    for k, (name, cc) in enumerate(keys):
        top, bottom = axes[2 * k][0], axes[2 * k + 1][0]
        bins = [0] * int(duration_s * 10)
        for t in ms[name]:
            if t < duration_s * 1000:
                bins[int(t // 100)] += 1
        top.step([i / 10 for i in range(len(bins))], [b * traces.OPPORTUNITY_BYTES * 8 * 10 / 1e6 for b in bins],
                 where="post", color="black", lw=0.6, label="capacity (100-ms windows)")
        for r in (r for r in rows if (r["trace"], r["cc"]) == (name, cc)):
            c = colours.get(r["option"], "tab:orange")
            log = r["series"]["shaper"]
            if log:
                top.step([x[0] for x in log] + [duration_s], [x[1] for x in log] + [log[-1][1]], where="post",
                         color=c, lw=1, label=f"shaper, {r['option']}")
            bottom.plot(r["series"]["t"], r["series"]["added_ms"], color=c, lw=0.5, label=r["option"])
        for ax in (top, bottom):
            if name == "starlink":
                for s in switch_times(duration_s):
                    ax.axvline(s, color="grey", lw=0.6, ls=":")
            ax.grid(alpha=0.3)
        bottom.axhline(30, color="grey", lw=0.8, ls="--")
        top.set_ylabel("Mbit/s")
        bottom.set_ylabel("probe RTT added, ms")
        bottom.set_yscale("symlog", linthresh=10)
        bottom.set_ylim(bottom=0)
        top.set_title(f"{name}-like trace, {cc} ({rows[0]['engine']})")
        top.legend(fontsize=7, loc="upper right")
        bottom.legend(fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("run time, s")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def plot(rows: list[dict], path: str) -> None:
    """The trade-off as a user reads it: latency added (x, lower is better) against the share of the
    capacity delivered (y, higher is better), one panel per trace, one marker per option, one colour per CC."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["trace"] for r in rows})
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    markers = {"none": "x", "cake@p10": "v", "cake@median": "s", "autorate": "o", "autorate+sss": "D"}
    colours = {"cubic": "tab:blue", "bbr": "tab:orange", "reno": "tab:green"}
    for ax, name in zip(axes[0], names):
        for r in (r for r in rows if r["trace"] == name):
            ax.scatter(r["p95_added_ms"], 100 * r["share"], marker=markers.get(r["option"], "."),
                       color=colours.get(r["cc"], "grey"), s=60)
            ax.annotate(f"{r['option']} ({r['cc']})", (r["p95_added_ms"], 100 * r["share"]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
        ax.set_ylim(0, 105)
        ax.axvline(30, color="grey", lw=0.8, ls=":")
        ax.text(30, 2, " cake-autorate's 30-ms threshold", fontsize=7, color="grey")
        ax.set_xlabel("p95 RTT added under load (ms, log above 10)")
        ax.set_ylabel("goodput, % of the trace's capacity")
        ax.set_title(f"{name}-like trace ({rows[0]['engine']})")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
