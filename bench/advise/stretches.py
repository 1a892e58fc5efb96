"""A stored campaign's variable truths judged over the capacity's stretches (docs/advise.md "The campaign":
campaign.STRETCHES). For each path of CAMPAIGN_DIR whose truth follows a trace and whose record has a prediction,
runs the recommended configuration (the record's ``advice``) on each later stretch of the trace (campaign.stretches:
the trace's start moved 24, 48, 72 and 96 s on) — the kernel through the emulator (``--engine emu``, one run a
stretch, a flagged run tried again) or the model's ensemble (``--engine sim``) — appends each path's runs to
``--out`` (JSON lines: a stopped run resumes where it stopped), then scores the twin's prediction against the first
stretch's judge alone (the campaign's ``pred_goodput``) and against the median over the stretches, as
campaign.errors does for a record that has them. ``--today``: the path's recording replayed with today's code
(``measure --replay``) and advised as the campaign advises (campaign.advise_path), that advice run on every stretch,
the first too (what today's code would have recommended and predicted). ``--capacity``: only what the capacity itself gives, no runs: how
far a run-long stretch's mean capacity lies from its median over the trace's stretches (every 0.5 s), which bounds
what any twin can meet on one stretch. Reads the campaigns, never writes them. Needs root for ``--engine emu``
(``--judge-only`` and ``--capacity`` do not); one emulator run at a time.

    .venv/bin/python bench/advise/stretches.py CAMPAIGN_DIR... [--engine emu|sim] [--today] [--out F.jsonl]
        [--judge-only] [--capacity] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("BLOATLAB_BIN_DIR", os.path.join(ROOT, "target", "release"))

#: where the stretches' capacity is read from for ``--capacity``: a window of the run's length every this many ms
CAPACITY_STEP_MS = 500


def capacity_spread(t: dict, duration_s: float) -> dict:
    """How a run-long stretch's mean capacity of the variable truth ``t`` lies against the median of all of them
    (a window every :data:`CAPACITY_STEP_MS`): its p10 and p90 over that median, and the share within 15 %."""
    import numpy as np

    from bloatlab import traces
    from bloatlab.advise import campaign

    ms = np.array(traces.read_mahimahi(campaign._variable_trace(t)[0]))
    per_ms = np.bincount(ms, minlength=ms.max() + 1)[1:]  # opportunities of 1500 B in each millisecond
    dur = int(duration_s * 1000)
    cum = np.concatenate([[0], np.cumsum(per_ms)])
    starts = np.arange(0, per_ms.size - dur, CAPACITY_STEP_MS)
    means = (cum[starts + dur] - cum[starts]) / dur
    r = means / np.median(means)
    return {"p10": float(np.percentile(r, 10)), "p90": float(np.percentile(r, 90)),
            "within_15": float(np.mean(np.abs(r - 1) <= 0.15))}


def today(camp: str, r: dict) -> tuple[dict, dict] | None:
    """The path's recording replayed with today's code and advised as the campaign advises: (advice, prediction:
    the recommended configuration's figures and ensemble); None where the recording is not there or today's code
    asks for a run it does not have (said)."""
    import contextlib
    import io

    from bloatlab.advise import campaign
    from bloatlab.advise import measure as M
    from bloatlab.errors import UserError

    rec = os.path.join(camp, "paths", f"{r['index']:04d}", "probes")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            m = M.measure(None, show=False, replay=rec)
    except UserError as e:
        print(f"{camp} path {r['index']}: not replayed ({e})", file=sys.stderr)
        return None
    adv, advice = campaign.advise_path(m.path, r["duration_s"])
    return advice, {k: adv["expected"][k] for k in ("goodput_mbps", "p95_rtt_ms", "retrans_rate", "ensemble")}


def _emit(rows: list[dict]) -> int:
    json.dump(rows, sys.stdout, indent=1)
    print()
    return 0


def main(argv=None) -> int:
    from bloatlab.advise import campaign

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign_dirs", nargs="+")
    ap.add_argument("--engine", choices=("emu", "sim"), default="emu")
    ap.add_argument("--out", default=None, help="JSON lines of the runs (default: beside the first campaign, "
                                                "stretches-ENGINE-NAME.jsonl)")
    ap.add_argument("--today", action="store_true", help="advise again from each recording replayed with today's code "
                                                         "and run that advice on every stretch")
    ap.add_argument("--judge-only", action="store_true", help="score the runs already in --out, run nothing")
    ap.add_argument("--capacity", action="store_true", help="only the capacity's stretches, no runs")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args(argv)
    recs = []
    for d in a.campaign_dirs:
        name = os.path.basename(os.path.abspath(d))
        recs += [(name, r) for r in campaign.load(d) if "failed" not in r and r["truth"].get("variable")
                 and r.get("kernel") and r.get("predicted")]
    if a.capacity:
        rows = [{"campaign": n, "index": r["index"], "variable": r["truth"]["variable"],
                 **capacity_spread(r["truth"], r["duration_s"])} for n, r in recs]
        if a.json:
            return _emit(rows)
        for x in rows:
            print(f"{x['campaign']} {x['index']:4d} {x['variable']:8s} a stretch's mean over the stretches' median: "
                  f"p10 {x['p10']:.2f} p90 {x['p90']:.2f}, within 15 % {x['within_15']:.0%}")
        if rows:
            print(f"within 15 %: {min(x['within_15'] for x in rows):.0%}-{max(x['within_15'] for x in rows):.0%} "
                  f"of the stretches, mean {statistics.mean(x['within_15'] for x in rows):.0%} ({len(rows)} truths)")
        return 0
    first = os.path.abspath(a.campaign_dirs[0])
    out = a.out or os.path.join(os.path.dirname(first), f"stretches-{a.engine}{'-today' if a.today else ''}-"
                                                       f"{os.path.basename(first)}.jsonl")
    done: dict = {}
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                x = json.loads(line)
                done[(x["campaign"], x["index"])] = x
    dirs = {os.path.basename(os.path.abspath(d)): d for d in a.campaign_dirs}
    for name, r in recs:
        if a.judge_only:
            break
        if (name, r["index"]) in done:
            continue
        x = {"campaign": name, "index": r["index"], "engine": a.engine}
        advice = r["advice"]
        if a.today:
            got = today(dirs[name], r)
            if got is None:
                continue
            advice, x["predicted"] = got
            x["advice"] = {k: advice[k] for k in ("cc", "queue", "shaper_mbps", "autorate") if k in advice}
        # with today's advice the first stretch too: the stored judge ran the stored advice
        runs = campaign.stretch_runs(r["truth"], r["duration_s"], advice, engine=a.engine, first=a.today)
        if a.today:
            x["first"], runs = runs[0], runs[1:]
        x["runs"] = runs
        done[(name, r["index"])] = x
        with open(out, "a") as f:
            f.write(json.dumps(x) + "\n")
        print(f"{name} path {r['index']}: {['%.4g' % k['goodput_mbps'] for k in runs]} Mbit/s", file=sys.stderr, flush=True)
    rows = []
    for name, r in recs:
        x = done.get((name, r["index"]))
        if x is None:
            continue
        first_fig = x.get("first") or (r["kernel"] if a.engine == "emu" else r["model_truth"])
        st = campaign.stretch_figures(first_fig, x["runs"])
        p = x.get("predicted") or r["predicted"]
        adv = x.get("advice") or r["advice"]
        lo, hi = (p.get("ensemble") or {}).get("goodput_mbps") or (p["goodput_mbps"], p["goodput_mbps"])
        each = st["goodput_mbps_each"]
        rows.append({"campaign": name, "index": r["index"], "variable": r["truth"]["variable"],
                     "advice": f"{adv['cc']} + {adv['queue']}", "predicted": p["goodput_mbps"],
                     "goodput_each": each, "p95_each": st["p95_rtt_ms_each"],
                     "pred_goodput_first": campaign._rel(p["goodput_mbps"], first_fig["goodput_mbps"]),
                     "pred_goodput_stretches": campaign._rel(p["goodput_mbps"], st["goodput_mbps"]),
                     "pred_p95_first": campaign._rel(p["p95_rtt_ms"], first_fig["p95_rtt_ms"]),
                     "pred_p95_stretches": campaign._rel(p["p95_rtt_ms"], st["p95_rtt_ms"]),
                     # the stretches within the twin's ensemble range, 15 % either side (campaign.errors' in_range)
                     "in_range": sum(0.85 * lo <= g <= 1.15 * hi for g in each) / len(each) if each else None})
    if a.json:
        return _emit(rows)
    for x in rows:
        print(f"{x['campaign']} {x['index']:4d} {x['variable']:8s} {x['advice']:22s} twin {x['predicted']:.4g}, "
              f"{a.engine} {['%.4g' % g for g in x['goodput_each']]}: first {x['pred_goodput_first']:+.1%}, "
              f"median {x['pred_goodput_stretches']:+.1%}; p95 first {x['pred_p95_first']:+.1%}, median "
              f"{x['pred_p95_stretches']:+.1%}; in the twin's range {x['in_range']:.0%}")
    for key, first_key, tol in (("pred_goodput_stretches", "pred_goodput_first", 0.15),
                                ("pred_p95_stretches", "pred_p95_first", 0.25)):
        n = sum(x[key] is not None for x in rows)
        print(f"{key} within {tol:.0%}: the first stretch {sum(abs(x[first_key]) <= tol for x in rows if x[first_key] is not None)} "
              f"of {n}, the stretches' median {sum(abs(x[key]) <= tol for x in rows if x[key] is not None)} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
