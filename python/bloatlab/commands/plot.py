"""``bloatlab plot RESULT --kind KIND``: a plot of a run or of a results directory."""

from __future__ import annotations

import os


def register(sub) -> None:
    from ..study.plots import KINDS

    p = sub.add_parser("plot", help="plot a run or a sweep (matplotlib)",
                       description="Plot a run directory (bloatlab run --out) or a results directory "
                                   "(bloatlab sweep/reproduce). Kinds: all, timeseries, cdf, fairness (a run, or "
                                   "--run ID of a sweep); cdf (one line per point), scatter, param, bars, heatmap, "
                                   "fairness (a sweep).")
    p.add_argument("result", metavar="RESULT", help="run directory or results directory")
    p.add_argument("--kind", required=True, choices=KINDS,
                   help="what to draw: all, timeseries, cdf, fairness (a run); cdf, scatter, param, bars, heatmap, "
                        "fairness (a sweep)")
    p.add_argument("--out", "-o", metavar="FILE", help="image file (.png, .svg, .pdf; default RESULT/<kind>.png)")
    p.add_argument("--run", metavar="RUN_ID", help="one run of a sweep (timeseries, cdf, fairness)")
    p.add_argument("--x", metavar="KEY", help="swept key on the x axis (param, bars, heatmap)")
    p.add_argument("--y", metavar="KEY", help="swept key on the y axis (heatmap)")
    p.add_argument("--metric", help="runs column to show (param, bars, heatmap; heatmap also takes gpgain)")
    p.add_argument("--hue", metavar="KEY", help="one colour per value of this key (param, bars, scatter; cdf: one "
                                                "line per value, the other keys pooled)")
    p.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                   help="only runs with KEY=VALUE (repeatable), e.g. --where link.down.buffer=100KB")
    p.set_defaults(func=main)


def main(args) -> int:
    from .. import load
    from ..errors import UserError
    from ..study import plots

    target = load(args.result)
    where = {}
    for w in args.where:
        if "=" not in w:
            raise UserError(f'--where: expected KEY=VALUE, got "{w}"')
        k, v = w.split("=", 1)
        where[k.strip()] = v.strip()
    out = args.out or os.path.join(args.result, f"{args.kind}.png")
    ext = os.path.splitext(out)[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        raise UserError(f"--out: expected a .png, .svg or .pdf file, got {out}")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise UserError(f"--out: directory {parent} does not exist")
    fig = plots.plot(target, args.kind, run=args.run, x=args.x, y=args.y, metric=args.metric, hue=args.hue,
                     where=where or None)
    from ..atomic import write_with

    write_with(out, lambda p: fig.savefig(p, dpi=120, format=ext[1:]))
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(out)
    return 0
