"""multi-bbr: several BBR flows — standing queue, inflight cap, RTT unfairness (KIT; seed 003).

Source: M. Hock, R. Bless, M. Zitterbart, "Experimental Evaluation of BBR
Congestion Control", IEEE ICNP 2017 (KIT), as summarised on the IETF 100
ICCRG slide quoted in seed 003: "Works well if no congestion present (e.g.,
single flow at the bottleneck). Multiple flows: BBR steadily increases the
amount of inflight data. Large buffers: BBR operates at inflight cap, RTT
unfairness. Small buffers: high amount of packet losses."

Setup here (the seed gives no path): 100 Mbit/s, 40 ms (BDP 500 KB).
``large``: 1, 2 or 4 BBR flows, 4 MB buffer (8 BDP). ``small``: 4 BBR or
4 CUBIC flows, 100 KB buffer (0.2 BDP). ``rtt``: one BBR flow at 20 ms and
one at 80 ms base RTT, 4 MB buffer.
"""

from __future__ import annotations

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, mean_at, missing

RTT_MS, RATE_MBPS = 40.0, 100.0
BDP_BYTES = RATE_MBPS * 1e6 * RTT_MS / 1e3 / 8


class MultiBbr(Experiment):
    name = "multi-bbr"
    title = "several BBR flows: standing queue, inflight cap, RTT unfairness, losses in small buffers"
    source = ("Hock, Bless, Zitterbart, \"Experimental Evaluation of BBR Congestion Control\", IEEE ICNP 2017 (KIT); "
              "IETF 100 ICCRG summary slide quoted in seed 003")
    published = """
KIT (seed 003): BBR works well if a single flow is at the bottleneck. Multiple flows: BBR steadily increases
the amount of inflight data. Large buffers: BBR operates at its inflight cap (2 BDP: a standing queue of about
one BDP), with RTT unfairness (the longer-RTT flow gets more). Small buffers: high amount of packet losses.
"""

    def sweep(self, quick: bool) -> Sweep:
        dur = "20s" if quick else "60s"
        rep = 1 if quick else 2
        large = dumbbell("multi-bbr-large", "100Mbit", "40ms", "4MB", [{"name": "bbr", "cc": "bbr", "count": 1}], dur)
        small = dumbbell("multi-bbr-small", "100Mbit", "40ms", "100KB", [{"name": "flows", "cc": "bbr", "count": 4}], dur)
        rtt = dumbbell("multi-bbr-rtt", "100Mbit", "40ms", "4MB",
                       [{"name": "bbr-20ms", "cc": "bbr", "rtt": "20ms"}, {"name": "bbr-80ms", "cc": "bbr", "rtt": "80ms"}],
                       dur)
        parts = [Part("large", large, grid={"flow.0.count": [1, 2, 4]}, repeat=rep),
                 Part("small", small, grid={"flow.0.cc": ["bbr", "cubic"]}, repeat=rep),
                 Part("rtt", rtt, repeat=rep)]
        return Sweep(self.name + ("-quick" if quick else ""), parts,
                     description="100 Mbit/s, 40 ms (BDP 500 KB); large buffer 4 MB, small buffer 100 KB.")

    @staticmethod
    def inflight_bdp(store, count):
        """Median over t >= 5 s of the flows' summed inflight, in BDPs (mean over seeds)."""
        runs = store.runs
        sel = runs[(runs["part"] == "large") & (runs["flow.0.count"] == count)]
        if sel.empty:
            return None
        vals = []
        for rid in sel["run_id"]:
            s = store.series("flows", [rid])
            if s.empty or "inflight_bytes" not in s:
                continue
            # the flows' samples are summed per 100-ms bin: the emulator's senders sample TCP_INFO on
            # their own clocks, so equal timestamps across flows exist only in the simulator
            s = s[s["t"] >= 5].assign(bin=lambda d: (d["t"] / 0.1).round().astype(int))
            per_flow = s.groupby(["bin", "flow"])["inflight_bytes"].mean()
            whole = per_flow.groupby("bin").count() == count  # bins where every flow has a sample
            tot = per_flow.groupby("bin").sum()[whole]
            if tot.empty:
                continue
            vals.append(float(tot.median()) / BDP_BYTES)
        return sum(vals) / len(vals) if vals else None

    def claims(self, store) -> list:
        runs, cl = store.runs, []
        lg = runs[runs["part"] == "large"]

        def q50(n):
            return mean_at(lg, "down_qdelay_p50_ms", **{"flow.0.count": n}) if len(lg) else None

        c = Claim("single-flow-small-queue", "BBR works well with a single flow at the bottleneck (KIT, seed 003)",
                  f"1 BBR flow, 8-BDP buffer: median queueing delay <= 25 % of the base RTT ({0.25 * RTT_MS:.0f} ms)")
        v = q50(1)
        cl.append(c.skip(missing("large/1 flow")) if v is None else
                  c.judge(v <= 0.25 * RTT_MS, f"median queueing delay {v:.1f} ms", qdelay=v))
        c = Claim("multi-flow-standing-queue", "multiple BBR flows build a standing queue: they operate at the "
                                               "inflight cap in large buffers (KIT, seed 003)",
                  f"2 and 4 BBR flows: median queueing delay >= 50 % of the base RTT ({0.5 * RTT_MS:.0f} ms)")
        v2, v4 = q50(2), q50(4)
        cl.append(c.skip(missing("large/2 and 4 flows")) if v2 is None or v4 is None else
                  c.judge(min(v2, v4) >= 0.5 * RTT_MS, f"median queueing delay {v2:.1f} ms (2 flows), {v4:.1f} ms "
                                                       "(4 flows)", q2=v2, q4=v4))
        c = Claim("inflight-cap-2bdp", "at the inflight cap (cwnd_gain 2: 2 BDP) (KIT, seed 003; tcp_bbr.c)",
                  "4 BBR flows, 8-BDP buffer: median total inflight between 1.5 and 2.5 BDP")
        v = self.inflight_bdp(store, 4)
        cl.append(c.skip(missing("large/4 flows with time series")) if v is None else
                  c.judge(1.5 <= v <= 2.5, f"median total inflight {v:.2f} BDP", inflight_bdp=v))
        c = Claim("rtt-unfairness", "RTT unfairness in large buffers: the longer-RTT BBR flow gets more (KIT, seed 003)",
                  "20 ms vs 80 ms flow, 4 MB buffer: the 80 ms flow's goodput > the 20 ms flow's")
        rt = store.flows[store.flows["run_id"].isin(runs[runs["part"] == "rtt"]["run_id"])] if len(runs) else None
        if rt is None or rt.empty:
            cl.append(c.skip(missing("rtt")))
        else:
            g = rt.groupby("name")["goodput_mbps"].mean()
            cl.append(c.judge(g.get("bbr-80ms", 0) > g.get("bbr-20ms", 0),
                              f"80 ms flow {g.get('bbr-80ms', 0):.1f} Mbit/s, 20 ms flow {g.get('bbr-20ms', 0):.1f} Mbit/s",
                              long=g.get("bbr-80ms"), short=g.get("bbr-20ms")))
        c = Claim("small-buffer-losses", "small buffers: high amount of packet losses with BBR (KIT, seed 003)",
                  "4 flows, 0.2-BDP buffer: BBR's retransmitted share >= 1 % and >= 5x CUBIC's in the same buffer")
        sm = runs[runs["part"] == "small"]
        b = mean_at(sm, "retrans_rate", **{"flow.0.cc": "bbr"}) if len(sm) else None
        cu = mean_at(sm, "retrans_rate", **{"flow.0.cc": "cubic"}) if len(sm) else None
        if b is None or cu is None:
            cl.append(c.skip(missing("small/bbr and small/cubic")))
        else:
            cl.append(c.judge(b >= 0.01 and b >= 5 * cu, f"BBR {b:.2%}, CUBIC {cu:.2%} of segments retransmitted",
                              bbr=b, cubic=cu))
        return cl

    def analyze(self, store) -> dict:
        from .. import plots

        runs = store.runs
        figs = []
        for part in ("large", "rtt"):
            sel = runs[runs["part"] == part]
            for _, row in sel.drop_duplicates([c for c in ("part", "flow.0.count") if c in sel]).iterrows():
                r = store.result(row["run_id"])
                n = row.get("flow.0.count")
                figs.append((f"{part}: {r.summary['scenario'].get('name')} ({'' if n != n else f'{n:g} flows'})",
                             plots.timeseries(r, panels=("goodput", "cwnd", "rtt", "qdelay"))))
        cols = ["part", "flow.0.count", "flow.0.cc", "total_goodput_mbps", "jain_fairness", "retrans_rate",
                "down_qdelay_p50_ms", "down_qdelay_p95_ms"]
        tab = runs[[c for c in cols if c in runs]].copy()
        return {"figures": figs, "tables": [("per run", tab)]}


EXPERIMENT = MultiBbr()
