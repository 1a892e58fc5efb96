"""A ranked campaign judged with today's code, offline: today's reading of each stored measurement, today's advice on
the twin it gives, today's score on the kernel runs the campaign stored (issue 30's ranking goal, docs/advise.md
"Ranking on the kernel").

For every ranked path of each campaign directory (``DIR/paths/NNNN.json`` with ``rank``, ``NNNN/measure.json``):

1. the down direction read again from what the campaign stored (``replay.read_direction``: the loaded phase's
   evidence and the packet trains it sent, nothing sent anew; then ``measure.isolation_after``, the model's
   isolation reading), and the twin ``measure`` would write from it (``measure.twin_of``);
2. ``recommend.advise`` on that twin as the campaign calls it (its goal, today's control, this kernel's controls,
   its run length; the host without sch_fq, as the campaign's);
3. the recommended candidate's stored kernel figures (each candidate's median over its runs, as ``rank`` stored
   them), every candidate scored by today's ``recommend.score`` against the best kernel goodput: the regret, as
   ``campaign.rank`` judges it.

A pick no stored candidate matches (a shaper rate the campaign did not run) is reported, not judged. Prints one line
a path and the count within ``campaign`` 's 0.02; ``--json OUT`` writes the rows. Nothing is sent on the network
and nothing is written into DIR.

    PYTHONPATH=python .venv/bin/python bench/advise/rank_today.py /work/rank50 [--paths 4,6,8] [--json OUT]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rank_rerun  # noqa: E402  (bench/advise: the stored candidates as Candidates)
import replay  # noqa: E402  (bench/advise: a stored direction read with today's code)

from bloatlab.advise import campaign, measure, recommend  # noqa: E402
from bloatlab.advise.path import Path  # noqa: E402


#: the ranking goal's tolerance on the regret (issue 30; campaign.summary's rank_regret)
TOLERANCE = 0.02
#: a shaper rate within this share of a stored candidate's is that candidate: the rate read again from the same
#: evidence moves in its sixth digit (seed 50 path 0: 218.4766 against the stored 218.4763 Mbit/s); the rate
#: goal's tolerance is 10 %
SHAPER_SAME = 0.001


def today(rec: dict, report: dict) -> dict:
    """One ranked path judged with today's code: its reading, pick, regret (None: the pick was not run)."""
    report = copy.deepcopy(report)
    report["down"] = replay.read_direction(copy.deepcopy(report), "down")
    if hasattr(measure, "isolation_after"):
        measure.isolation_after(report)
    path = measure.twin_of(report)
    adv = recommend.advise(path, campaign.GOAL, campaign.TODAY_CC, list(recommend.KERNEL_CCS), 1,
                           queues=recommend.QUEUES, host_qdisc_state=("pfifo_fast", False),
                           duration_s=campaign.campaign_duration(path.base_rtt_ms, False))
    t = rec["truth"]
    cands = rank_rerun._candidates(rec)
    cs = [c for _, c, _ in cands]
    # each candidate's stored figures (the medians rank kept) as its one run, scored as campaign.rank scores them
    campaign._judge(cs, [[first] for _, _, first in cands], Path(base_rtt_ms=t["base_rtt_ms"], down_mbps=t["down_mbps"]))
    best = max(cs, key=lambda c: c.score)
    row = {"path": rec["index"], "truth": t["limiter"], "reading": report["down"]["limiter"],
           "reading_qdisc": report["down"].get("aqm_qdisc"), "stored_regret": rec["rank"]["regret"],
           "best": best.label}
    try:
        mine = campaign._recommended(cs, adv)
    except IndexError:
        # today's reading may give the shaper a rate a few digits off the stored one (the rate read again):
        # the stored run of the same control and queue within SHAPER_SAME of it stands for it
        r = adv["recommendation"]
        near = [c for c in cs if c.cc == r["cc"] and c.queue == r["qdisc"] and c.shaper_mbps and r["shaper_mbps"]
                and abs(c.shaper_mbps / r["shaper_mbps"] - 1) <= SHAPER_SAME]
        if not near:
            return row | {"pick": f"{r['cc']} + {r['qdisc']} @ {r['shaper_mbps']}", "regret": None}
        mine = near[0]
    return row | {"pick": mine.label, "regret": best.score - mine.score}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--paths", help="only these path indices (comma-separated)")
    ap.add_argument("--json", help="write every row here")
    a = ap.parse_args(argv)
    only = None
    if a.paths:
        try:
            only = {int(x) for x in a.paths.split(",")}
        except ValueError:
            print("rank_today: --paths: comma-separated integers", file=sys.stderr)
            return 2
    rows = []
    for d in a.dirs:
        for rec in campaign.load(d):
            mj = os.path.join(d, "paths", f"{rec['index']:04d}", "measure.json")
            if not rec.get("rank") or not os.path.exists(mj) or (only and rec["index"] not in only):
                continue
            row = {"campaign": os.path.basename(d.rstrip("/"))} | today(rec, json.load(open(mj)))
            rows.append(row)
            reg = "not run" if row["regret"] is None else f"{row['regret']:.3f}"
            print(f"{row['campaign']} {row['path']:3d} {row['truth']:9s} read {row['reading']}"
                  f"{'/' + row['reading_qdisc'] if row['reading_qdisc'] else ''}: pick {row['pick']}, kernel's best "
                  f"{row['best']}, regret {reg} (stored {row['stored_regret']:.3f})", flush=True)
    judged = [r for r in rows if r["regret"] is not None]
    print(f"within {TOLERANCE}: {sum(r['regret'] <= TOLERANCE for r in judged)} of {len(judged)} judged "
          f"(stored: {sum(r['stored_regret'] <= TOLERANCE for r in rows)} of {len(rows)})")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
