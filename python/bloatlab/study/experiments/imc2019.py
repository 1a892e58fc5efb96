"""imc2019: when to use and not use BBR (Cao et al., IMC 2019; seed 001).

Source: Y. Cao, A. Jain, K. Sharma, A. Balasubramanian, A. Gandhi, "When to
use and when not to use BBR: An empirical analysis and evaluation study",
ACM IMC 2019; summarised in seed 001 (APNIC blog, 2020-01-10, in Chinese).

The seed gives the grid's ranges and size (640 iperf3 runs: RTT 5–200 ms ×
bandwidth 10–1000 Mbit/s × buffer 0.1–50 MB, BBR and CUBIC, tc netem + tbf)
but not every value; the values below are ours, chosen inside those ranges to
make 8 × 8 × 5 × 2 = 640 runs of 60 s:

- RTT 5, 10, 25, 50, 75, 100, 150, 200 ms
- bandwidth 10, 20, 50, 100, 250, 500, 750, 1000 Mbit/s (both directions)
- buffer 100 KB, 1 MB, 10 MB, 20 MB, 50 MB (FIFO, bytes)

Two more parts measure what the seed reports beside the grid (their paths
are not in the seed; ours are stated): ``fairness``, one BBR and one CUBIC
flow sharing 100 Mbit/s, 25 ms (BDP 312.5 KB) with buffers 10 KB … 10 MB;
``loss``, one flow of each at 100 Mbit/s, 25 ms, 1-BDP buffer, random loss
0 … 40 % (the "cliff").
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, fmt, mean_at, missing, num

RTTS = ["5ms", "10ms", "25ms", "50ms", "75ms", "100ms", "150ms", "200ms"]
RATES = ["10Mbit", "20Mbit", "50Mbit", "100Mbit", "250Mbit", "500Mbit", "750Mbit", "1000Mbit"]
BUFFERS = ["100KB", "1MB", "10MB", "20MB", "50MB"]
QUICK_RTTS, QUICK_RATES, QUICK_BUFFERS = ["10ms", "50ms", "200ms"], ["10Mbit", "100Mbit", "500Mbit"], ["100KB", "10MB"]
FAIR_BUFFERS = ["10KB", "30KB", "100KB", "300KB", "1MB", "3MB", "10MB"]
QUICK_FAIR_BUFFERS = ["10KB", "100KB", "1MB", "10MB"]
LOSSES = ["0%", "1%", "5%", "10%", "15%", "20%", "25%", "30%", "40%"]
QUICK_LOSSES = ["0%", "10%", "15%", "25%", "30%"]
CC = "flow.0.cc"


def _rate_points(rates):
    return [{"link.down.rate": r, "link.up.rate": r} for r in rates]


class Imc2019(Experiment):
    name = "imc2019"
    title = "when to use and not use BBR: the RTT x bandwidth x buffer grid, BBR vs CUBIC"
    source = ("Cao, Jain, Sharma, Balasubramanian, Gandhi, \"When to use and when not to use BBR: An empirical "
              "analysis and evaluation study\", ACM IMC 2019 (seed 001: APNIC blog summary, 2020-01-10)")
    published = """
Seed 001 (summary of IMC 2019):
  - 640 iperf3 runs over RTT x bandwidth x buffer, BBR and CUBIC; a decision tree shows BBR wins with
    large BDP and shallow buffers, CUBIC with small BDP and deep buffers.
  - GpGain = (goodput_BBR - goodput_CUBIC) / goodput_CUBIC x 100; with a 100 KB buffer, at 200 ms RTT
    and 500 Mbit/s: GpGain = +115 %.
  - BBR can cause 100x more retransmissions than CUBIC (shallow buffers).
  - BBR vs CUBIC unfairness depends on the buffer: with 10 KB BBR takes over 90 % of the bandwidth;
    with 10 MB CUBIC gets about 80 %.
  - Cliff point: BBR's goodput stays almost full until the loss rate reaches 20 %, then collapses
    (pacing_gain 1.25 x (1 - p) < 1 when p > 20 %).
"""

    def sweep(self, quick: bool) -> Sweep:
        dur = "10s" if quick else "60s"
        grid_base = dumbbell("imc2019-grid", "100Mbit", "25ms", "100KB", [{"name": "iperf3", "cc": "bbr"}], dur,
                             sample="100ms")
        grid = Part("grid", grid_base, points=_rate_points(QUICK_RATES if quick else RATES),
                    grid={"flow.0.rtt": QUICK_RTTS if quick else RTTS,
                          "link.down.buffer": QUICK_BUFFERS if quick else BUFFERS, CC: ["bbr", "cubic"]})
        fair_base = dumbbell("imc2019-fairness", "100Mbit", "25ms", "100KB",
                             [{"name": "bbr", "cc": "bbr"}, {"name": "cubic", "cc": "cubic"}],
                             "20s" if quick else "60s", sample="100ms")
        fair = Part("fairness", fair_base, grid={"link.down.buffer": QUICK_FAIR_BUFFERS if quick else FAIR_BUFFERS},
                    repeat=1 if quick else 2)
        loss_base = dumbbell("imc2019-loss", "100Mbit", "25ms", "1bdp", [{"name": "iperf3", "cc": "bbr"}],
                             "20s" if quick else "60s", sample="100ms")
        loss = Part("loss", loss_base, grid={"link.down.loss": QUICK_LOSSES if quick else LOSSES,
                                             CC: ["bbr", "cubic"]}, repeat=1 if quick else 2)
        return Sweep(self.name + ("-quick" if quick else ""), [grid, fair, loss],
                     description="grid: one flow per run (iperf3-like); fairness: BBR and CUBIC together; "
                                 "loss: one flow with random loss.")

    # ------------------------------------------------------------ analysis

    @staticmethod
    def grid(store):
        g = store.runs[store.runs["part"] == "grid"].copy()
        if g.empty:
            return g
        g["rtt_ms"] = [num(v) for v in g["flow.0.rtt"]]
        g["rate_mbps"] = [num(v) for v in g["link.down.rate"]]
        g["buffer_bytes"] = [num(v) * 1e3 for v in g["link.down.buffer"]]
        g["bdp_bytes"] = g["rate_mbps"] * 1e6 * g["rtt_ms"] / 1e3 / 8
        return g

    @staticmethod
    def winners(store) -> pd.DataFrame:
        """One row per (path, buffer, loss) with both controls: goodputs and who wins."""
        rows = []
        runs = store.runs
        for part in ("grid", "loss"):
            r = runs[runs["part"] == part]
            if r.empty:
                continue
            keys = [k for k in ("flow.0.rtt", "link.down.rate", "link.down.buffer", "link.down.loss") if k in r
                    and r[k].notna().any()]
            m = r.groupby(keys + [CC])["total_goodput_mbps"].mean().unstack(CC)
            if "bbr" not in m or "cubic" not in m:
                continue
            for idx, row in m.iterrows():
                idx = idx if isinstance(idx, tuple) else (idx,)
                d = dict(zip(keys, idx))
                rtt = num(d.get("flow.0.rtt", "25ms"))
                rate = num(d.get("link.down.rate", "100Mbit"))
                bdp = rate * 1e6 * rtt / 1e3 / 8
                buf = d.get("link.down.buffer", "1bdp")
                buf_bytes = bdp * num(buf) if str(buf).endswith("bdp") else num(buf) * 1e3
                loss = (num(d.get("link.down.loss", 0)) or 0) / 100
                rows.append({"part": part, "rtt_ms": rtt, "rate_mbps": rate, "buffer_bytes": buf_bytes,
                             "bdp_bytes": bdp, "loss": loss, "bbr": row["bbr"], "cubic": row["cubic"],
                             "winner": "bbr" if row["bbr"] > row["cubic"] else "cubic"})
        return pd.DataFrame(rows)

    @staticmethod
    def tree(w: pd.DataFrame):
        from sklearn.tree import DecisionTreeClassifier

        X = pd.DataFrame({"log10_bdp_bytes": np.log10(w["bdp_bytes"]), "log10_buffer_bytes": np.log10(w["buffer_bytes"]),
                          "buffer_over_bdp": w["buffer_bytes"] / w["bdp_bytes"], "loss": w["loss"]})
        clf = DecisionTreeClassifier(max_depth=3, min_samples_leaf=2, random_state=0).fit(X, w["winner"])
        return clf, X

    def claims(self, store) -> list:
        runs, cl = store.runs, []
        g = self.grid(store)
        # GpGain at 200 ms, 500 Mbit/s, 100 KB.
        c = Claim("gpgain-200ms-500mbit-100kb", "GpGain = +115 % at 200 ms RTT, 500 Mbit/s, 100 KB buffer (seed 001)",
                  "GpGain at that cell between +57 % and +230 % (the published value within a factor 2)")
        w = {"flow.0.rtt": "200ms", "link.down.rate": "500Mbit", "link.down.buffer": "100KB"}
        b = mean_at(g, "total_goodput_mbps", **w, **{CC: "bbr"}) if len(g) else None
        cu = mean_at(g, "total_goodput_mbps", **w, **{CC: "cubic"}) if len(g) else None
        if b is None or cu is None:
            cl.append(c.skip(missing("200 ms / 500 Mbit/s / 100 KB, BBR and CUBIC")))
        else:
            gain = (b - cu) / cu * 100
            cl.append(c.judge(57.5 <= gain <= 230, f"BBR {b:.1f} Mbit/s, CUBIC {cu:.1f} Mbit/s: GpGain {gain:+.0f} %",
                              gpgain=gain))
        wins = self.winners(store)
        wg = wins[wins["part"] == "grid"] if len(wins) else wins
        for cid, text, sel, who in (
                ("bbr-wins-large-bdp-shallow-buffer", "BBR gets the higher goodput with a large BDP and a shallow buffer",
                 lambda d: d["buffer_bytes"] < d["bdp_bytes"], "bbr"),
                ("cubic-wins-small-bdp-deep-buffer", "CUBIC gets the higher goodput with a small BDP and a deep buffer",
                 lambda d: d["buffer_bytes"] >= 10 * d["bdp_bytes"], "cubic")):
            region = "buffer < BDP" if who == "bbr" else "buffer >= 10 x BDP"
            c = Claim(cid, f"{text} (decision tree, seed 001)",
                      f"{who.upper()} wins in at least 2/3 of the grid points with {region}")
            if wg.empty:
                cl.append(c.skip(missing("grid points with both controls")))
                continue
            d = wg[sel(wg)]
            if d.empty:
                cl.append(c.skip(f"the grid has no point with {region}"))
                continue
            share = float((d["winner"] == who).mean())
            cl.append(c.judge(share >= 2 / 3, f"{who.upper()} wins {int((d['winner'] == who).sum())} of {len(d)} "
                                              f"points with {region} ({share:.0%})", share=share))
        # Retransmissions at 100 KB.
        c = Claim("bbr-100x-retransmits", "BBR can cause 100x more retransmissions than CUBIC (shallow buffer, seed 001)",
                  "with the 100 KB buffer: BBR retransmits more than CUBIC in most (RTT, bandwidth) cells, and the "
                  "ratio of their totals over the heatmap is >= 10 (within a decade of 100x)")
        s = g[g["link.down.buffer"] == "100KB"] if len(g) else g
        if s.empty:
            cl.append(c.skip(missing("the 100 KB grid")))
        else:
            m = s.groupby(["flow.0.rtt", "link.down.rate", CC])["retransmits"].mean().unstack(CC)
            tb, tc = float(m["bbr"].sum()), float(m["cubic"].sum())
            more = float((m["bbr"] > m["cubic"]).mean())
            ratio = tb / tc if tc > 0 else float("inf")
            cl.append(c.judge(more > 0.5 and ratio >= 10,
                              f"BBR {tb:.0f} vs CUBIC {tc:.0f} retransmitted segments in total ({fmt(ratio, '{:.0f}')}x); "
                              f"BBR more in {more:.0%} of cells", ratio=ratio, more=more))
        # Fairness.
        f = runs[runs["part"] == "fairness"]
        for cid, buf, cc, lo, hi, text in (
                ("bbr-share-10kb", "10KB", "bbr", 0.9, 1.0, "with a 10 KB buffer BBR takes over 90 % of the bandwidth"),
                ("cubic-share-10mb", "10MB", "cubic", 0.65, 0.95, "with a 10 MB buffer CUBIC gets about 80 %")):
            c = Claim(cid, f"{text} (seed 001)", f"mean share_{cc} at {buf} in [{lo:.0%}, {hi:.0%}] "
                                                 "(one BBR + one CUBIC flow, 100 Mbit/s, 25 ms)")
            v = mean_at(f, f"share_{cc}", **{"link.down.buffer": buf}) if len(f) else None
            if v is None:
                cl.append(c.skip(missing(f"the fairness run at {buf}")))
            else:
                cl.append(c.judge(lo <= v <= hi, f"{cc.upper()} share {v:.0%} at {buf}", share=v))
        # Loss cliff.
        c = Claim("bbr-loss-cliff-20pct", "BBR's goodput stays almost full until 20 % loss, then falls off a cliff "
                                          "(seed 001; pacing_gain 1.25 x (1 - p) < 1 beyond 20 %)",
                  "BBR goodput at 15 % loss >= 70 % of its goodput at 0 %, and at 30 % loss < 50 % of its goodput at 15 %")
        L = runs[runs["part"] == "loss"]
        v0, v15, v30 = (mean_at(L, "total_goodput_mbps", **{"link.down.loss": l, CC: "bbr"}) if len(L) else None
                        for l in ("0%", "15%", "30%"))
        if None in (v0, v15, v30):
            cl.append(c.skip(missing("BBR at 0 %, 15 % and 30 % loss")))
        else:
            cl.append(c.judge(v15 >= 0.7 * v0 and v30 < 0.5 * v15,
                              f"BBR {v0:.1f} Mbit/s at 0 %, {v15:.1f} at 15 % ({v15 / v0:.0%}), {v30:.1f} at 30 % "
                              f"({v30 / v15:.0%} of 15 %)", g0=v0, g15=v15, g30=v30))
        # The decision tree itself: reported, and judged on its agreement with the seed's reading.
        c = Claim("decision-tree", "a decision tree on BDP and buffer separates where BBR or CUBIC wins (seed 001)",
                  "a depth-3 tree on log BDP, log buffer, buffer/BDP and loss classifies >= 80 % of the points "
                  "correctly, and its root split is on buffer, BDP or buffer/BDP")
        if len(wins) < 8 or wins["winner"].nunique() < 2:
            cl.append(c.skip("fewer than 8 points with both controls, or one control wins everywhere"))
        else:
            clf, X = self.tree(wins)
            acc = float(clf.score(X, wins["winner"]))
            root = X.columns[clf.tree_.feature[0]] if clf.tree_.feature[0] >= 0 else "none"
            cl.append(c.judge(acc >= 0.8 and root != "loss", f"accuracy {acc:.0%} on {len(wins)} points; root split "
                                                             f"on {root}", accuracy=acc, root=root))
        return cl

    def analyze(self, store) -> dict:
        from sklearn.tree import export_text, plot_tree

        from .. import plots

        figs, tabs = [], []
        g = self.grid(store)
        if len(g):
            for buf in ("100KB", "10MB"):
                if (g["link.down.buffer"] == buf).any():
                    figs.append((f"GpGain (%) over RTT x bandwidth, {buf} buffer (seed 001 fig. 2: +115 % at 200 ms, "
                                 "500 Mbit/s, 100 KB)",
                                 plots.heatmap(store, "link.down.rate", "flow.0.rtt", "gpgain",
                                               where={"part": "grid", "link.down.buffer": buf},
                                               title=f"GpGain (%), buffer {buf}")))
            for cc in ("bbr", "cubic"):
                figs.append((f"retransmitted segments, {cc.upper()}, 100 KB buffer (seed 001 fig. 3)",
                             plots.heatmap(store, "link.down.rate", "flow.0.rtt", "retransmits",
                                           where={"part": "grid", "link.down.buffer": "100KB", CC: cc},
                                           title=f"retransmits, {cc.upper()}, 100 KB", cmap="magma")))
        f = store.runs[store.runs["part"] == "fairness"]
        if len(f):
            figs.append(("BBR's and CUBIC's shares against the buffer (one flow each, 100 Mbit/s, 25 ms)",
                         plots.param(store, "link.down.buffer", "share_bbr", where={"part": "fairness"},
                                     title="BBR's share of goodput vs buffer (CUBIC has the rest)")))
        if (store.runs["part"] == "loss").any():
            figs.append(("goodput vs random loss: the BBR cliff near 20 %",
                         plots.param(store, "link.down.loss", "total_goodput_mbps", hue=CC, where={"part": "loss"},
                                     title="goodput vs loss, 100 Mbit/s, 25 ms")))
        wins = self.winners(store)
        if len(wins) >= 8 and wins["winner"].nunique() == 2:
            clf, X = self.tree(wins)
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(11, 5))
            plot_tree(clf, feature_names=list(X.columns), class_names=list(clf.classes_), filled=True, ax=ax,
                      fontsize=7, impurity=False)
            figs.append(("decision tree: which control wins (cf. seed 001)", fig))
            tabs.append(("decision tree (text)", pd.DataFrame({"tree": export_text(clf, feature_names=list(X.columns))
                                                               .splitlines()})))
            tabs.append(("who wins, per point", wins))
        return {"figures": figs, "tables": tabs}


EXPERIMENT = Imc2019()
