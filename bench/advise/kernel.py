"""The advisor's model against the kernel (docs/advise.md): for paths whose truth is
known, `advise` runs every candidate twice — in the simulator and, with
`--engine emu`, with the real kernel's TCP through the emulated path — and this
prints whether the model's recommendation is the kernel's, and how the model's
pick scores among the kernel's runs. The kernel is the judge: a pick that
scores below 95 % of the kernel's best is a miss of the model, recorded with
its figures. Needs root; ~3.5 min per path (9 candidates x 2 runs x 10 s).

    .venv/bin/python bench/advise/kernel.py [--only NAME] [--duration 10]
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ["PATH"] = os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"]

from bloatlab.advise import recommend  # noqa: E402
from bloatlab.advise.path import Path  # noqa: E402

# name, down Mbit/s, rtt ms, buffer (BDP), loss, limiter — the kernel's ccs (reno, cubic, bbr)
PATHS = [
    ("home-fifo", 20, 30, 4.0, 0.0, "fifo"),
    ("shallow", 100, 20, 0.2, 0.0, "fifo"),
    ("lossy-2pct", 20, 40, 1.0, 0.02, "fifo"),
    ("policed", 20, 40, 1.0, 0.0, "policer"),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--duration", type=float, default=10.0)
    a = ap.parse_args()
    print("| path | kernel's pick | model's pick | model's pick among the kernel's runs (score ratio) | figures (model / kernel): goodput Mbit/s, loaded RTT ms, neighbour share of the pick |")
    print("|---|---|---|---|---|")
    for name, down, rtt, bdp, loss, limiter in PATHS:
        if a.only and a.only != name:
            continue
        p = Path(base_rtt_ms=rtt, down_mbps=down, buffer_bytes=int(bdp * down * 1e6 * rtt / 1e3 / 8), loss=loss, limiter=limiter)
        kw = dict(goal="balanced", current="cubic", available=list(recommend.KERNEL_CCS), duration_s=a.duration)
        sim = recommend.advise(p, **kw)
        emu = recommend.advise(p, engine="emu", progress=lambda i, n, c: print(f"  {name}: {i}/{n} {c.label}", file=sys.stderr), **kw)
        # compare among the candidates both ran (the kernel has no bbr3)
        key = lambda x: (x["cc"], x["queue"])  # noqa: E731
        sim_ranked = [x for x in sim["alternatives"] if x["cc"] in recommend.KERNEL_CCS]
        pick, kbest = sim_ranked[0], emu["alternatives"][0]
        kscores = {key(x): x for x in emu["alternatives"]}
        kp = kscores[key(pick)]
        ratio = kp["score"] / kbest["score"]
        lab = lambda x: f"{x['cc']}+{x['queue']}"  # noqa: E731
        figs = (f"{pick['goodput_mbps']:.3g} / {kp['goodput_mbps']:.3g}, {pick['loaded_rtt_ms']:.0f} / {kp['loaded_rtt_ms']:.0f}, "
                f"{pick['neighbour_share'] * 100:.0f} / {kp['neighbour_share'] * 100:.0f} %")
        verdict = "" if ratio >= 0.95 else " **miss**"
        print(f"| {name} | {lab(kbest)} | {lab(pick)} | {ratio:.3f}{verdict} | {figs} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
