"""A tbf's bucket and queue on fresh paths (issue 30 §1-2; docs/advise.md, "A tbf's bucket in the twin"): for each
path of the campaign's seeded draw (:func:`bloatlab.advise.campaign.draw`) whose limiter is a tbf (the draw's
``shaper``: sch_tbf's queue, its bucket, a port faster than its rate), ``measure --quick`` from the true path's client
namespace as the campaign runs it (``campaign.measured``), then per direction the reading against the truth the
draw built (``campaign.direction_truth``, ``truth_bucket_bytes``):

- the limiter read and whether it names the truth (``campaign.limiter_said``);
- where it reads a tbf (``fifo`` with a bucket), the bucket within 30 % (the campaign's ``tbf_bucket``), and the
  queue (the FIFO's buffer) within 30 %;
- where it reads a ``policer``, the bucket it read (a tbf whose queue drains within the noise acts as a policer of
  bucket + queue: judged against that sum).

Real time, root (namespaces); about 15-40 s a path, resumable (a path whose ``measure.json`` is in ``--out`` is read
back, not measured again)::

    sudo .venv/bin/python bench/advise/tbf_check.py --seed 109 --paths 120 --out DIR [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from bloatlab.advise import campaign as C  # noqa: E402

#: the campaign's tolerance on a policer's and a tbf's figures (campaign.GOALS: policer_bucket, tbf_bucket)
TOL = 0.30


def judge(t: dict, m: dict) -> list[dict]:
    """One path's rows, a direction each."""
    rows = []
    for d in ("down", "up"):
        x = m.get(d)
        if not x:
            continue
        td = t if d == "down" else C.direction_truth(t, "up")
        bucket, queue = C.truth_bucket_bytes(td), td["buffer_bytes"]
        read_b, read_q = x.get("bucket_bytes"), x.get("buffer_bytes")
        tbf = x["limiter"] == "fifo" and bool(read_b)
        # a policer reading stands for the bucket and the queue in front of it (both pass a burst at the port)
        want = bucket if tbf else bucket + queue if x["limiter"] == "policer" else None
        rows.append({"index": t["index"], "direction": d, "rate_mbps": td["down_mbps"], "rtt_ms": t["base_rtt_ms"],
                     "loss": t["loss"], "limiter": x["limiter"], "said": C.limiter_said(td, x), "tbf": tbf,
                     "truth_bucket": bucket, "truth_queue": queue, "bucket": read_b, "queue": read_q if tbf else None,
                     "bucket_err": read_b / want - 1 if read_b and want else None,
                     "queue_err": read_q / queue - 1 if tbf and read_q and queue else None,
                     "bucket_note": x.get("bucket_note"), "measure_s": m.get("elapsed_s")})
    return rows


def _pct(e: float | None) -> str:
    return "-" if e is None else f"{e * 100:+.1f} %"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--paths", type=int, default=120, help="the draw's size (its tbf paths run)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = []
    for t, m in C.measured_draw(a.paths, a.seed, a.out, lambda t: t["limiter"] == "shaper"):
        for r in judge(t, m):
            rows.append(r)
            print(f"{a.seed}/{r['index']:<3d} {r['direction']:4s} tbf {r['rate_mbps']:8.3g} Mbit/s {r['rtt_ms']:6.3g} ms "
                  f"bucket {r['truth_bucket']:9.0f} B queue {r['truth_queue']:9.0f} B  read {r['limiter']:7s}"
                  f"{' (tbf)' if r['tbf'] else ''} {'named' if r['said'] else 'WRONG'}  bucket {_pct(r['bucket_err'])}"
                  f"  queue {_pct(r['queue_err'])}", flush=True)
    summary = {"seed": a.seed, "paths": a.paths}
    for d in ("down", "up"):
        mine = [r for r in rows if r["direction"] == d]
        summary[d] = {"directions": len(mine), "limiters": dict(collections.Counter(r["limiter"] for r in mine)),
                      "named": sum(r["said"] for r in mine)}
        for key in ("bucket_err", "queue_err"):
            errs = [r[key] for r in mine if r[key] is not None]
            summary[d][key.replace("_err", "_within_30pct")] = [sum(abs(e) <= TOL for e in errs), len(errs)]
    print(json.dumps(summary, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
