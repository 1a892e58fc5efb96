"""bbr-vs-cubic-loss: goodput of one BBR or CUBIC flow against random loss.

Source: N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh, V. Jacobson,
"BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016, figure 8
(also IETF 97 ICCRG slides, reproduced in seed 003 as "Fully use bandwidth,
despite high loss — BBR vs CUBIC: synthetic bulk TCP test with 1 flow,
bottleneck_bw 100Mbps, RTT 100ms"), and the Linux commit that added BBR
(0f8782ea1497, net/ipv4/tcp_bbr.c, 2016): "if the packet loss rate is below
15% then BBR is able to fully utilize the path (reaching
link_bandwidth*(1 - loss_rate))".

Setup here: 100 Mbit/s both ways, 100 ms base RTT, a 1-BDP FIFO (the
sources do not give the buffer), i.i.d. loss on the data direction, one
flow for 60 s; loss 0.001 % … 50 %, 3 seeds per point.
"""

from __future__ import annotations

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, fmt, mean_at, missing, pct

LOSSES = ["0.001%", "0.01%", "0.1%", "0.2%", "0.5%", "1%", "2%", "5%", "10%", "15%", "20%", "30%", "40%", "50%"]
QUICK_LOSSES = ["0.001%", "0.1%", "1%", "5%", "15%", "30%"]
RATE_MBPS = 100.0
# Goodput counts TCP payload: 1448 B of every 1500 B on the wire.
PAYLOAD = 1448 / 1500


class BbrVsCubicLoss(Experiment):
    name = "bbr-vs-cubic-loss"
    title = "goodput vs random loss, 100 Mbit/s, 100 ms: BBR vs CUBIC"
    source = ("Cardwell et al., \"BBR: Congestion-Based Congestion Control\", ACM Queue 14(5) 2016, fig. 8; "
              "IETF 97 ICCRG BBR slides (seed 003); Linux commit 0f8782ea1497 (tcp_bbr: add BBR congestion control)")
    published = """
ACM Queue fig. 8 caption (60-second flows, 100 Mbit/s / 100 ms link, 0.001-50 % random loss):
  - CUBIC's throughput decreases by 10 times at 0.1 percent loss and totally stalls above 1 percent.
  - The maximum possible throughput is the link rate times the fraction delivered (1 - loss rate).
    BBR meets this limit up to a 5 percent loss and is close up to 15 percent.
Linux commit message: below 15 % loss BBR reaches link_bandwidth * (1 - loss_rate).
"""

    def sweep(self, quick: bool) -> Sweep:
        base = dumbbell("bbr-vs-cubic-loss", "100Mbit", "100ms", "1bdp", [{"name": "bulk", "cc": "bbr"}],
                        "20s" if quick else "60s")
        part = Part("loss", base, grid={"link.down.loss": QUICK_LOSSES if quick else LOSSES,
                                        "flow.0.cc": ["bbr", "cubic"]}, repeat=1 if quick else 3)
        return Sweep(self.name + ("-quick" if quick else ""), [part],
                     description="One flow, 100 Mbit/s, 100 ms, 1-BDP FIFO, random loss on the data path.")

    def claims(self, store) -> list:
        runs = store.runs
        cl = []
        losses = sorted(set(runs["link.down.loss"]), key=pct) if len(runs) else []

        def gp(cc, loss):
            return mean_at(runs, "total_goodput_mbps", **{"flow.0.cc": cc, "link.down.loss": loss})

        c = Claim("cubic-10x-at-0.1pct", "CUBIC's throughput decreases by 10 times at 0.1 % loss (ACM Queue fig. 8)",
                  "CUBIC goodput at 0.001 % / at 0.1 % >= 5 (the published 10x within a factor 2)")
        lo, hi = gp("cubic", "0.001%"), gp("cubic", "0.1%")
        if lo is None or hi is None:
            cl.append(c.skip(missing("CUBIC at 0.001 % and 0.1 % loss")))
        else:
            r = lo / hi if hi > 0 else float("inf")
            cl.append(c.judge(r >= 5, f"CUBIC {lo:.1f} Mbit/s at 0.001 %, {hi:.1f} Mbit/s at 0.1 %: {r:.1f}x lower",
                              ratio=r))
        c = Claim("cubic-stalls-above-1pct", "CUBIC totally stalls above 1 % loss (ACM Queue fig. 8)",
                  "CUBIC goodput <= 5 % of the link rate (5 Mbit/s) at every loss rate above 1 %")
        above = [l for l in losses if pct(l) > 0.01]
        vals = {l: gp("cubic", l) for l in above}
        if not above or any(v is None for v in vals.values()):
            cl.append(c.skip(missing("CUBIC above 1 % loss")))
        else:
            cl.append(c.judge(all(v <= 0.05 * RATE_MBPS for v in vals.values()),
                              "CUBIC " + ", ".join(f"{v:.2f} Mbit/s at {l}" for l, v in vals.items()), **vals))
        for cid, upto, frac, text in (
                ("bbr-meets-limit-to-5pct", 0.05, 0.90, "BBR meets the limit rate*(1-p) up to 5 % loss"),
                ("bbr-close-to-15pct", 0.15, 0.75, "BBR is close to the limit rate*(1-p) up to 15 % loss")):
            c = Claim(cid, f"{text} (ACM Queue fig. 8; Linux commit 0f8782ea1497)",
                      f"BBR goodput >= {frac:.0%} of 100 Mbit/s x 1448/1500 x (1-p) at every loss p <= {upto:.0%}")
            pts = [l for l in losses if pct(l) <= upto + 1e-12]
            vals = {l: gp("bbr", l) for l in pts}
            if not pts or any(v is None for v in vals.values()):
                cl.append(c.skip(missing(f"BBR at loss <= {upto:.0%}")))
                continue
            ratios = {l: v / (RATE_MBPS * PAYLOAD * (1 - pct(l))) for l, v in vals.items()}
            worst = min(ratios, key=ratios.get)
            cl.append(c.judge(all(r >= frac for r in ratios.values()),
                              f"lowest at {worst}: {vals[worst]:.1f} Mbit/s = {ratios[worst]:.0%} of the limit; "
                              + ", ".join(f"{l}: {fmt(v, '{:.1f}')}" for l, v in vals.items()), **ratios))
        return cl

    def analyze(self, store) -> dict:
        from .. import plots

        runs = store.runs
        fig = plots.param(store, "link.down.loss", "total_goodput_mbps", hue="flow.0.cc",
                          title="goodput vs random loss (cf. ACM Queue 2016 fig. 8)")
        ax = fig.axes[0]
        xs = sorted({plots.to_number(v)[0] for v in runs["link.down.loss"]})
        ax.plot(xs, [RATE_MBPS * PAYLOAD * (1 - x / 100) for x in xs], "k:", lw=1, label="limit rate*(1-p)")
        plots.legend_outside(ax, title="flow.0.cc", title_fontsize=7)
        tab = runs.groupby(["link.down.loss", "flow.0.cc"], sort=False)[["total_goodput_mbps", "retrans_rate"]] \
            .mean().unstack("flow.0.cc").reset_index()
        tab.columns = [" ".join(c).strip() if isinstance(c, tuple) else c for c in tab.columns]
        return {"figures": [("goodput vs loss, BBR and CUBIC, with the limit rate x (1 - p)", fig)],
                "tables": [("goodput (Mbit/s) and retransmitted share per loss rate", tab)]}


EXPERIMENT = BbrVsCubicLoss()
