"""advise's check of the readings measure could not tell apart, on stored campaign measurements, offline (issue
30; docs/advise.md "Readings it cannot tell apart").

``python bench/advise/readings_check.py DIR [DIR ...] [--json OUT]``: for every path of each campaign directory whose
stored measurement named alternatives to its down reading (``paths/NNNN/measure.json``'s
``down.limiter_alternatives``), advise runs again on the stored twin with those alternatives (the simulator, as the
campaign advises: its goal, today's control, the kernel's controls, its run length) and prints whether the
recommendation held on every reading or moved (``recommend.robust_choice``). Where it moved, every candidate this
kernel runs is scored on the *true* path in the simulator (alone and beside a CUBIC neighbour, as the campaign's
ranking does on the kernel: ``campaign.truth_doc``, advise's score) and both picks' regret there is printed: a
proxy for the ranking goal (the kernel is its judge; ``bloatlab fidelity --advise --rank`` runs it). Nothing is
written into DIR and nothing is sent on the network.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def _key(c: dict) -> tuple:
    return (c["cc"], c["queue"], None if c["shaper_mbps"] is None else round(c["shaper_mbps"], 6), c["paced"])


def _truth_scores(t: dict, dur: float, cands: list[dict]) -> dict:
    """Each candidate (advise's figures dicts) scored on the true path in the simulator, by advise's rule."""
    import bloatlab
    from bloatlab.advise import campaign, recommend
    from bloatlab.advise.path import Path

    truth = Path(base_rtt_ms=t["base_rtt_ms"], down_mbps=t["down_mbps"])
    out = []
    for a in cands:
        c = recommend.Candidate(a["cc"], a["queue"], a["shaper_mbps"], a["paced"])
        c._base_ms = t["base_rtt_ms"]
        ss = []
        for nb in (False, True):
            doc = campaign.truth_doc(t, dur, c.cc, c.queue, c.shaper_mbps, neighbour=nb, paced=c.paced)
            doc["seed"] = 1
            ss.append(bloatlab.run(doc, engine="sim").summary)
        for k, v in recommend.pair_figures(*ss).items():
            setattr(c, k, v)
        out.append(c)
    recommend.score(out, truth, campaign.GOAL)
    return {_key(a): c.score for a, c in zip(cands, out)}


def main(argv=None) -> int:
    from bloatlab.advise import campaign, recommend
    from bloatlab.advise.path import Path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--json", default=None, help="write every row here")
    a = ap.parse_args(argv)
    rows = []
    for d in a.dirs:
        for rec in campaign.load(d):
            if "failed" in rec or not rec.get("advice"):
                continue
            pdir = os.path.join(d, "paths", f"{rec['index']:04d}")
            try:
                with open(os.path.join(pdir, "measure.json")) as f:
                    m = json.load(f)
            except (OSError, ValueError):
                continue
            down = m.get("down") or {}
            alts = [x for x in down.get("limiter_alternatives") or [] if x.get("limiter") != down.get("limiter")]
            if not alts:
                continue
            path = Path.from_twin(os.path.join(pdir, "twin.toml"))
            path.alternatives = alts
            if not path.alternative_paths():
                continue
            t = rec["truth"]
            dur = rec["duration_s"]
            out = recommend.advise(path, campaign.GOAL, campaign.TODAY_CC, list(recommend.KERNEL_CCS), 1,
                                   queues=recommend.QUEUES, host_qdisc_state=recommend.host_qdisc(), duration_s=dur)
            ranked = out["alternatives"]
            measured_best = next(c for c in ranked if c["available_here"])
            pick = out["expected"]
            row = {"dir": d, "index": rec["index"], "truth": t["limiter"], "measured": path.limiter,
                   "said": campaign.limiter_said(t, rec["measured"]) if rec.get("measured") else None,
                   "readings": [{k: r[k] for k in ("limiter", "best", "regret")} for r in out["readings"]],
                   "measured_best": f"{measured_best['cc']} + {measured_best['queue']}",
                   "pick": f"{pick['cc']} + {pick['queue']}", "moved": _key(measured_best) != _key(pick)}
            if row["moved"]:
                kc = [c for c in ranked if c["cc"] in recommend.KERNEL_CCS]
                sc = _truth_scores(t, dur, kc)
                top = max(sc.values())
                row["truth_regret_measured_best"] = top - sc[_key(measured_best)]
                row["truth_regret_pick"] = top - sc[_key(pick)]
            rows.append(row)
            moved = (f" -> {row['pick']}: regret on the true path (model) {row['truth_regret_measured_best']:.3f} -> "
                     f"{row['truth_regret_pick']:.3f}" if row["moved"] else " (held)")
            print(f"{os.path.basename(os.path.abspath(d))} path {rec['index']}: truth {t['limiter']}, read "
                  f"{path.limiter} (+{', '.join(r['limiter'] for r in out['readings'])}), "
                  f"{row['measured_best']}{moved}", flush=True)
    moved = [r for r in rows if r["moved"]]
    better = sum(r["truth_regret_pick"] < r["truth_regret_measured_best"] - 1e-9 for r in moved)
    worse = sum(r["truth_regret_pick"] > r["truth_regret_measured_best"] + 1e-9 for r in moved)
    within = lambda key: sum(r[key] <= recommend.SCORE_RESOLUTION for r in moved)
    print(f"{len(rows)} paths with alternatives; the advice held on every reading on {len(rows) - len(moved)}, moved "
          f"on {len(moved)}: on the true path (model) better {better}, worse {worse}; within "
          f"{recommend.SCORE_RESOLUTION} of the best {within('truth_regret_measured_best')} -> {within('truth_regret_pick')}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
