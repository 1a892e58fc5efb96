"""The advisor's ensemble with and without its members' down rates spread over the measured rate's uncertainty
(recommend.RATE_SPREAD_SHARE, docs/advise.md "An ensemble, not one run"), on stored campaigns: for each path with a
kernel judgement, the recommended configuration and today's (CUBIC, unpaced, the bottleneck as it is) simulated on
the stored twin as advise's ensemble does (as many members as advise ran, advise's seeds, starts and RTT span),
each against the kernel on the true path (the recommended one: the median of its runs; today's: its one run).
Counted per variant: goodput within 15 % and p95 RTT within 25 % (issue 30's goals), the kernel's goodput inside
the members' range widened by 15 % either side (``in range``, campaign.in_range: what the range a user is shown
holds), and the figures advise now says with their range (members spread wider than recommend.GOODPUT_SPLIT).
Offline, the simulator only; nothing is written into the campaigns.

    .venv/bin/python bench/advise/rate_span.py CAMPAIGN_DIR [CAMPAIGN_DIR ...] [--shares 0 0.01] [--json OUT]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def main(argv=None) -> int:
    from bloatlab.advise import campaign, recommend
    from bloatlab.advise.path import Path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign_dirs", nargs="+")
    ap.add_argument("--shares", type=float, nargs="+", default=[0.0, recommend.RATE_SPREAD_SHARE])
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = []
    for d in a.campaign_dirs:
        for f in sorted(glob.glob(os.path.join(d, "paths", "[0-9]*.json"))):
            with open(f) as fh:
                rec = json.load(fh)
            if not rec.get("kernel") or not rec.get("predicted") or not rec.get("kernel_today"):
                continue
            med = campaign.kernel_medians(rec["kernel"].get("runs") or [rec["kernel"]])
            today = rec["kernel_today"]
            adv = rec["advice"]
            row = {"campaign": os.path.basename(os.path.normpath(d)), "index": rec["index"],
                   "limiter": rec["truth"]["limiter"], "kernel": med["goodput_mbps"], "kernel_p95": med["p95_rtt_ms"],
                   "kernel_today": today["goodput_mbps"], "kernel_today_p95": today["p95_rtt_ms"]}
            for share in a.shares:
                recommend.RATE_SPREAD_SHARE = share
                p = Path.from_twin(os.path.join(f[:-5], "twin.toml"))
                # the campaign's host has no sch_fq: its candidates run unpaced (recommend.advise's fq_planned)
                best = recommend.Candidate(adv["cc"], adv["queue"], adv["shaper_mbps"], False)
                cur = recommend.Candidate(campaign.TODAY_CC, "as-is", None, False)
                # as many members as advise ran in the campaign (its packet and time budgets)
                k = (rec["predicted"].get("ensemble") or {}).get("members") or recommend.ENSEMBLE
                recommend.simulate_all(p, [best, cur], 1, "sim", rec["duration_s"], k)
                for name, c in (("best", best), ("today", cur)):
                    row[f"{name}@{share:g}"] = {"goodput": c.goodput_mbps, "p95": c.p95_rtt_ms,
                                                "range": c.ranges["goodput_mbps"]}
            rows.append(row)
            print(f"{row['campaign']} path {row['index']:3d} {row['limiter']:8s} kernel {row['kernel']:7.4g} / today "
                  f"{row['kernel_today']:7.4g}: " + "; ".join(
                      f"{s:g}: {row[f'best@{s:g}']['goodput']:7.4g} {_r(row[f'best@{s:g}']['range'])} / "
                      f"{row[f'today@{s:g}']['goodput']:7.4g} {_r(row[f'today@{s:g}']['range'])}" for s in a.shares),
                  flush=True)
    for share in a.shares:
        for name, k, kp in (("best", "kernel", "kernel_p95"), ("today", "kernel_today", "kernel_today_p95")):
            xs = [(r[f"{name}@{share:g}"], r[k], r[kp]) for r in rows if r[k] and r[kp]]
            g = sum(abs(x["goodput"] / kg - 1) <= 0.15 for x, kg, _ in xs)
            p = sum(abs(x["p95"] / kq - 1) <= 0.25 for x, _, kq in xs)
            inr = sum(bool(campaign.in_range({"goodput_mbps": x["range"]}, kg)) for x, kg, _ in xs)
            split = sum(x["range"][0] > 0 and x["range"][1] / x["range"][0] - 1 > 0.15 for x, _, _ in xs)
            print(f"share {share:g}, {name}: goodput within 15 % on {g} of {len(xs)}, p95 within 25 % on {p}, "
                  f"the kernel in the members' range (+-15 %) on {inr}, said with a range on {split}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def _r(r) -> str:
    return f"[{r[0]:.4g}-{r[1]:.4g}]"


if __name__ == "__main__":
    sys.exit(main())
