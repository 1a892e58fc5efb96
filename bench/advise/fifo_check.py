"""The limiter on fresh paths, and what the fill's own slow start says of a FIFO reading (issue 30 §1's "limiter
right on >= 95 %"; docs/advise.md, "A FIFO its own slow start contradicts"): for each wired path of the campaign's
seeded draw (:func:`bloatlab.advise.campaign.draw`; the paths whose bottleneck is a WiFi hop left out, those with
one in front of a wired line kept), ``measure --quick`` from the true
path's client namespace, as the campaign runs it (``campaign._measure``), then per direction

- the limiter read against the truth's observable class (``campaign.OBSERVABLE``; the up direction's is the down's:
  the draw makes both alike), right or named (``campaign.limiter_said``);
- the check of :func:`bloatlab.advise.classify.fifo_check` (``fifo_check`` in the direction's report): its rule,
  the slow start's queue and the deepest FIFO the window allows, and whether it contradicted a FIFO.

Real time, root (namespaces); about 15-30 s a path, resumable (a path whose ``measure.json`` is in ``--out`` is read
back, not measured again)::

    sudo .venv/bin/python bench/advise/fifo_check.py --seed 62 --paths 48 --out DIR [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from bloatlab.advise import campaign as C  # noqa: E402


def judge(t: dict, m: dict) -> list[dict]:
    """One path's rows, a direction each."""
    rows = []
    for d in ("down", "up"):
        x = m.get(d)
        if not x:
            continue
        c = x.get("fifo_check") or {}
        rows.append({"index": t["index"], "direction": d, "truth": t["limiter"], "observable": t["observable"],
                     "rate_mbps": t["down_mbps"] if d == "down" else t["up_mbps"], "rtt_ms": t["base_rtt_ms"],
                     "loss": t["loss"], "variable": t.get("variable"), "wifi_front": bool(t.get("wifi_front")),
                     "limiter": x["limiter"], "aqm_qdisc": x.get("aqm_qdisc"), "right": x["limiter"] == t["observable"],
                     "said": C.limiter_said(t, x), "rule": c.get("rule"), "contradicted": bool(c.get("contradicted")),
                     "slow_start_ms": c.get("slow_start_ms"), "deepest_fifo_ms": c.get("deepest_fifo_ms"),
                     "rate_read_mbps": x.get("rate_mbps"),
                     # the rate's error against the link's (as campaign.score's down "rate"): none on a variable
                     # link, whose truth is a mean (the draw varies the down link only)
                     "rate_err": (None if (d == "down" and t.get("variable")) or not x.get("rate_mbps") else
                                  x["rate_mbps"] / (t["down_mbps"] if d == "down" else t["up_mbps"]) - 1),
                     "measure_s": m.get("elapsed_s")})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--paths", type=int, default=48, help="the draw's size (its wired paths run)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = []
    for t, m in C.measured_draw(a.paths, a.seed, a.out, lambda t: t["limiter"] != "wifi"):
        for r in judge(t, m):
            rows.append(r)
            print(f"{a.seed}/{r['index']:<3d} {r['direction']:4s} {r['truth']:8s} {r['rate_mbps']:8.3g} Mbit/s "
                  f"{r['rtt_ms']:6.3g} ms  read {r['limiter']:7s} {'right' if r['right'] else 'named' if r['said'] else 'WRONG'}"
                  f"  check {r['rule'] or '-'}{' CONTRADICTED' if r['contradicted'] else ''}"
                  + (f" ({r['slow_start_ms']:.3g} > {r['deepest_fifo_ms']:.3g} ms)" if r['contradicted'] else ""), flush=True)
    by = collections.Counter((r["direction"], r["right"]) for r in rows)
    fired = [r for r in rows if r["contradicted"]]
    summary = {"seed": a.seed, "paths": a.paths,
               "down_right": [by[("down", True)], by[("down", True)] + by[("down", False)]],
               "up_right": [by[("up", True)], by[("up", True)] + by[("up", False)]],
               "contradicted": len(fired),
               "contradicted_by_truth": dict(collections.Counter(r["truth"] for r in fired)),
               "contradicted_not_aqm": [(r["index"], r["direction"], r["truth"]) for r in fired if r["observable"] != "aqm"]}
    # issue 30's rate goal (within 10 %) per direction, and its `measure --quick` goal (<= 20 s) per path
    for d in ("down", "up"):
        errs = [r["rate_err"] for r in rows if r["direction"] == d and r["rate_err"] is not None]
        summary[f"{d}_rate_within_10pct"] = [sum(abs(e) <= 0.1 for e in errs), len(errs)]
    secs = sorted({r["index"]: r["measure_s"] for r in rows if r["measure_s"] is not None}.values())
    summary["measure_s"] = {"median": statistics.median(secs) if secs else None, "within_20": sum(s <= 20 for s in secs),
                            "paths": len(secs)}
    print(json.dumps(summary, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
