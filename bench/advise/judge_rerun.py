"""A stored campaign's prediction goals re-judged on the kernel's median of several runs (issue 30's twin goals,
docs/advise.md "The campaign": ``--judge-repeats``). For each path of CAMPAIGN_DIR whose record has a prediction,
runs the recommended configuration (the record's ``advice``) on the true path through the emulator for seeds 2..N
(the stored ``kernel`` is seed 1's run, or seeds 1..k where the record kept its ``runs``; campaign.kernel_run: a flagged run tried again up to campaign.KERNEL_TRIES
times), appends each run to ``--out`` (JSON lines: a stopped run resumes where it stopped), then scores the twin's
prediction against the stored run alone and against the median of the runs, as campaign.errors does. Reads the
campaign, never writes it. Needs root for the runs (``--judge-only`` does not); one emulator run at a time.

    .venv/bin/python bench/advise/judge_rerun.py CAMPAIGN_DIR [--repeats 3] [--paths 0,11] [--out F.jsonl]
        [--judge-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("BLOATLAB_BIN_DIR", os.path.join(ROOT, "target", "release"))


def main(argv=None) -> int:
    from bloatlab.advise import campaign

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign_dir")
    ap.add_argument("--repeats", type=int, default=campaign.JUDGE_REPEATS)
    ap.add_argument("--paths", default=None, help="comma-separated path indices (default: every judged path)")
    ap.add_argument("--out", default=None, help="JSON lines of the runs (default: CAMPAIGN_DIR/../judge-rerun-NAME.jsonl)")
    ap.add_argument("--judge-only", action="store_true", help="score the runs already in --out, run nothing")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args(argv)
    if not 2 <= a.repeats <= campaign.MAX_JUDGE_REPEATS:
        print(f"--repeats: expected 2..{campaign.MAX_JUDGE_REPEATS}, got {a.repeats}", file=sys.stderr)
        return 2
    recs = [r for r in campaign.load(a.campaign_dir) if "failed" not in r and r.get("kernel") and r.get("predicted")]
    if a.paths:
        want = {int(x) for x in a.paths.split(",")}
        recs = [r for r in recs if r["index"] in want]
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.campaign_dir)),
                                f"judge-rerun-{os.path.basename(os.path.abspath(a.campaign_dir))}.jsonl")
    done: dict = {}
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                x = json.loads(line)
                done[(x["index"], x["seed"])] = x
    for r in recs:
        if a.judge_only:
            break
        adv, dur = r["advice"], r["duration_s"]
        have = len(r["kernel"].get("runs") or [None])  # a record judged on N runs (campaign.JUDGE_REPEATS) has them
        for seed in range(have + 1, a.repeats + 1):
            if (r["index"], seed) in done:
                continue
            t = dict(r["truth"])
            k = campaign.kernel_run(t, dur, adv["cc"], adv["queue"], adv["shaper_mbps"], seed,
                                    autorate=adv.get("autorate"))
            x = {"index": r["index"], "seed": seed, **k}
            done[(r["index"], seed)] = x
            with open(out, "a") as f:
                f.write(json.dumps(x) + "\n")
            print(f"path {r['index']} seed {seed}: {k['goodput_mbps']:.4g} Mbit/s, p95 {k['p95_rtt_ms']}",
                  file=sys.stderr, flush=True)
    rows = []
    for r in recs:
        stored = r["kernel"].get("runs") or [r["kernel"]]
        k1 = stored[0]
        runs = stored[:a.repeats] + [done[(r["index"], s)] for s in range(len(stored) + 1, a.repeats + 1)
                                     if (r["index"], s) in done]
        med = campaign.kernel_medians(runs)
        p = r["predicted"]
        rows.append({"index": r["index"], "limiter": r["truth"]["limiter"], "runs": len(runs),
                     "kernel_goodput": [k["goodput_mbps"] for k in runs], "kernel_p95": [k["p95_rtt_ms"] for k in runs],
                     "pred_goodput_one_run": campaign._rel(p["goodput_mbps"], k1["goodput_mbps"]),
                     "pred_goodput": campaign._rel(p["goodput_mbps"], med["goodput_mbps"]),
                     "pred_p95_one_run": campaign._rel(p["p95_rtt_ms"], k1["p95_rtt_ms"]),
                     "pred_p95_rtt": campaign._rel(p["p95_rtt_ms"], med["p95_rtt_ms"])})
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    for x in rows:
        print(f"{x['index']:4d} {x['limiter']:8s} runs {x['runs']} goodput {['%.4g' % g for g in x['kernel_goodput']]} "
              f"pred one run {x['pred_goodput_one_run']:+.1%} median {x['pred_goodput']:+.1%}; p95 one run "
              f"{x['pred_p95_one_run']:+.1%} median {x['pred_p95_rtt']:+.1%}")
    full = [x for x in rows if x["runs"] == a.repeats]
    for key, one, tol in (("pred_goodput", "pred_goodput_one_run", 0.15), ("pred_p95_rtt", "pred_p95_one_run", 0.25)):
        met1 = sum(abs(x[one]) <= tol for x in full if x[one] is not None)
        metm = sum(abs(x[key]) <= tol for x in full if x[key] is not None)
        print(f"{key} within {tol:.0%}: one run {met1} of {len(full)}, median of {a.repeats} {metm} of {len(full)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
