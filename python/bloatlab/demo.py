"""``make demo``: the seeds' headline result.

One BBR flow and one CUBIC flow, separately, on 100 Mbit/s, 100 ms RTT,
1-BDP FIFO, with random loss 0 … 30 % (seed 003's throughput-vs-loss plot,
seed 004's before/after). Prints goodput per control and loss rate, writes
the runs' results and a PNG plot, and says where they are.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

SCENARIO = """
name = "demo-loss"
duration = "60s"
seed = 1
[link.down]
rate = "100Mbit"
buffer = "1bdp"
qdisc = "fifo"
[link.up]
rate = "100Mbit"
[[flow]]
name = "bulk"
cc = "bbr"
direction = "down"
rtt = "100ms"
"""

LOSSES = ["0%", "0.1%", "1%", "2%", "5%", "10%", "20%", "30%"]
CCS = ["bbr", "cubic"]


def _one(args):
    cc, loss, out = args
    import bloatlab

    r = bloatlab.run(SCENARIO, set={"flow.0.cc": cc, "link.down.loss": loss})
    r.save(os.path.join(out, f"{cc}-loss{loss.rstrip('%')}"))
    f = r.summary["flows"][0]
    return cc, loss, f["goodput_mbps"], f["retrans_rate"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bloatlab-demo")
    ap.add_argument("--out", default="results/demo")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    jobs = [(cc, loss, args.out) for cc in CCS for loss in LOSSES]
    from rich.progress import Progress

    res = {}
    with Progress(transient=True) as prog, ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        task = prog.add_task("60 s runs", total=len(jobs))
        for cc, loss, gp, rr in ex.map(_one, jobs):
            res[(cc, loss)] = (gp, rr)
            prog.advance(task)
    wall = time.perf_counter() - t0

    print("Goodput (Mbit/s) of one flow on 100 Mbit/s, 100 ms RTT, 1-BDP FIFO, 60 s, vs random loss")
    print(f"{'loss':>6} " + " ".join(f"{cc:>14}" for cc in CCS) + "   bbr/cubic")
    for loss in LOSSES:
        cells = " ".join(f"{res[(cc, loss)][0]:>8.2f} ({100 * res[(cc, loss)][1]:4.1f}%)" for cc in CCS)
        b, c = res[("bbr", loss)][0], res[("cubic", loss)][0]
        ratio = f"{b / c:8.1f}x" if c > 0 else "       -"
        print(f"{loss:>6} {cells} {ratio}")
    print("(in parentheses: retransmitted share of segments sent)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = [float(l.rstrip("%")) for l in LOSSES]
    xs_plot = [x if x > 0 else 0.01 for x in xs]
    for cc, style in zip(CCS, ("o-", "s--")):
        ax.plot(xs_plot, [res[(cc, l)][0] for l in LOSSES], style, label=cc.upper())
    ax.set_xscale("log")
    ax.set_xlabel("random loss rate (%)  [0 % drawn at 0.01 %]")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title("1 flow, 100 Mbit/s, 100 ms RTT, 1-BDP FIFO (bloatlab sim)")
    ax.set_ylim(0, 105)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png = os.path.join(args.out, "goodput-vs-loss.png")
    fig.savefig(png, dpi=120)
    print(f"\n{len(jobs)} runs in {wall:.1f} s. Results: {args.out}/<cc>-loss<rate>/ (summary.json, *.parquet)")
    print(f"Plot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
