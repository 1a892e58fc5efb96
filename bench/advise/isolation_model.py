"""Flow isolation read by the model (advise/isolation.py) on stored campaign measurements, offline.

``python bench/advise/isolation_model.py DIR [DIR ...] [--json OUT]``: for every stored down direction
read as a single-queue AQM (CoDel or PIE), today's :func:`isolation.isolation_by_model` on the stored report
(its twin as :func:`measure.twin_of` makes it), against the truth: flow isolation (fq_codel, CAKE) or not.
Prints one line per direction and the counts. Nothing is sent on the network and nothing is written into DIR.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os

from bloatlab.advise import campaign as C
from bloatlab.advise.isolation import isolation_by_model
from bloatlab.advise.measure import twin_of


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for d in a.dirs:
        for rec in C.load(d):
            if "failed" in rec:
                continue
            mf = os.path.join(d, "paths", f"{rec['index']:04d}", "measure.json")
            if not os.path.exists(mf):
                continue
            rep = json.load(open(mf))
            x = rep["down"]
            if x.get("limiter") != "aqm" or x.get("aqm_qdisc") not in ("codel", "pie"):
                continue
            rep2 = copy.deepcopy(rep)
            isolation_by_model(rep2["down"], twin_of(rep2))
            after = rep2["down"].get("aqm_qdisc") or "fq_codel"
            truth = rec["truth"]["limiter"]
            right = (after == "fq_codel") == (truth in ("fq_codel", "cake"))
            m = rep2["down"].get("isolation_model") or {}
            rows.append({"camp": os.path.basename(os.path.normpath(d)), "path": rec["index"], "truth": truth,
                         "before": x["aqm_qdisc"], "after": after, "right": right,
                         "rate_mbps": x["rate_mbps"], "distance": m.get("distance"), "measured": m.get("measured")})
            r = rows[-1]
            print(f"{r['camp']:>7} {r['path']:4d} {truth:9s} {r['before']:6s} -> {after:9s} {r['rate_mbps']:8.3g} Mbit/s "
                  f"{'right' if right else 'WRONG'}  {r['distance']}", flush=True)
    iso = [r for r in rows if r["truth"] in ("fq_codel", "cake")]
    print(f"isolating truths read isolated: {sum(r['right'] for r in iso)} of {len(iso)}; "
          f"others kept single-queue: {sum(r['right'] for r in rows if r not in iso)} of {len(rows) - len(iso)}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
