"""A stored campaign's ranking re-judged on more kernel runs (issue 30's ranking goal, docs/advise.md "Ranking on
the kernel"): for the ranked paths given, runs the recommended candidate and the kernel's best of the stored ranking
(``rank.candidates``, one run each, seed 1) again on the true path, seeds 2..N, each alone and beside a CUBIC
neighbour (campaign._kernel_candidate: a flagged run tried again up to campaign.KERNEL_TRIES times); with
``--contenders`` then every candidate within the kernel's spread of the best too, until none lacks the seeds
(campaign.rank's rule). Each run is appended to ``--out`` (JSON lines: a stopped run resumes where it stopped);
then every path is judged by campaign.rank's rule on the runs at hand (campaign._judge: each figure the median of
a candidate's unflagged runs, the kernel's spread), printing the one-run verdict beside the medians' and the
candidates within the spread that have run once. Reads the campaign, never writes it. Needs root for the runs
(``--judge-only`` does not); one emulator run at a time.

    .venv/bin/python bench/advise/rank_rerun.py CAMPAIGN_DIR --paths 7,11,12 [--seeds 2,3] [--out F.jsonl]
        [--contenders] [--judge-only]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("BLOATLAB_BIN_DIR", os.path.join(ROOT, "target", "release"))


def _key(c: dict) -> tuple:
    return c["cc"], c["queue"], round(c["shaper_mbps"] or 0.0, 3), bool(c["paced"])


def _advice(rec: dict) -> dict:
    """The stored advice as campaign._recommended reads a recommendation."""
    a = rec["advice"]
    # an access point's design (the record's queue on a WiFi path) is the recommendation's ap_mac
    ap = a["queue"] if a["queue"] in ("legacy", "fq", "airtime") else None
    return {"recommendation": {"cc": a["cc"], "qdisc": a["queue"], "shaper_mbps": a["shaper_mbps"], "sysctl": {},
                               "autorate": {"recommended": a["queue"] == "autorate"}, "ap_mac": ap},
            "path": {"wifi_mac": None}}


def _candidates(rec: dict):
    from bloatlab.advise import campaign, recommend

    t = rec["truth"]
    out = []
    for c0 in rec["rank"]["candidates"]:
        c = recommend.Candidate(c0["cc"], c0["queue"], c0["shaper_mbps"], c0["paced"])
        c._base_ms = t["base_rtt_ms"]
        # a record before the shared queueing delay was kept: the loaded RTT's excess over the base stands for it
        first = {k: c0.get(k, c0["loaded_rtt_ms"] - t["base_rtt_ms"]) for k in campaign.FIGURES}
        out.append((c0, c, first | {"flagged": bool(c0["ensemble"]["flagged"]), "tries": c0["ensemble"]["tries"]}))
    return out


def rerun(rec: dict, seeds: list[int], out: str, done: set) -> None:
    from bloatlab.advise import campaign

    cands = _candidates(rec)
    mine = campaign._recommended([c for _, c, _ in cands], _advice(rec))
    best = max(cands, key=lambda x: x[0]["score"])[1]
    for seed in seeds:
        for c in [mine] + ([best] if best is not mine else []):
            _run(rec, c, [seed], out, done)


def _judged(rec: dict, rows: list[dict]):
    """campaign.rank's judgement on the stored run and the unflagged ``rows``: (candidates, their runs, the
    recommended one, the kernel's spread)."""
    from bloatlab.advise import campaign
    from bloatlab.advise.path import Path

    t = rec["truth"]
    cands = _candidates(rec)
    runs = [[first] + [r for r in rows if r["path"] == rec["index"] and _key(r) == _key(c0) and not r["flagged"]]
            for c0, _, first in cands]
    cs = [c for _, c, _ in cands]
    mine = campaign._recommended(cs, _advice(rec))
    return cs, runs, mine, campaign._judge(cs, runs, Path(base_rtt_ms=t["base_rtt_ms"], down_mbps=t["down_mbps"]))


def rerun_contenders(rec: dict, seeds: list[int], out: str, done: set) -> None:
    """campaign.rank's rule on the stored ranking: every candidate within the kernel's spread of the best runs the
    seeds too, until none lacks them (a flagged run counts as run: its tries were taken)."""
    from bloatlab.advise import campaign

    while True:
        with open(out) as f:
            rows = [json.loads(x) for x in f if x.strip()]
        rows = [r for r in rows if r["seed"] in seeds]
        cs, runs, mine, spread = _judged(rec, rows)
        todo = [cs[i] for i in campaign.contenders(cs, mine, spread)
                if any((rec["index"], cs[i].cc, cs[i].queue, round(cs[i].shaper_mbps or 0.0, 3), cs[i].paced, s)
                       not in done for s in seeds)]
        if not todo:
            return
        for c in todo:
            _run(rec, c, seeds, out, done)


def _run(rec: dict, c, seeds: list[int], out: str, done: set) -> None:
    from bloatlab.advise import campaign

    for seed in seeds:
        k = (rec["index"], c.cc, c.queue, round(c.shaper_mbps or 0.0, 3), c.paced, seed)
        if k in done:
            continue
        f = campaign._kernel_candidate(rec["truth"], rec["duration_s"], c, rec["advice"].get("autorate"), seed)
        row = {"path": rec["index"], "cc": c.cc, "queue": c.queue, "shaper_mbps": c.shaper_mbps, "paced": c.paced,
               "seed": seed} | f
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        done.add(k)
        print(f"path {rec['index']} {c.cc} + {c.queue} seed {seed}: {f['goodput_mbps']:.4g} Mbit/s, neighbour "
              f"{f['neighbour_share']:.2f}, flagged {f['flagged']} after {f['tries']} tries", flush=True)


def judge(rec: dict, rows: list[dict]) -> str:
    t = rec["truth"]
    cs, runs, mine, spread = _judged(rec, rows)
    best = max(cs, key=lambda c: c.score)
    once = [f"{c.cc} + {c.queue}" for c, rs in zip(cs, runs) if len(rs) == 1 and c.score >= best.score - spread]
    lines = [f"path {rec['index']} ({t['limiter']}, {t['down_mbps']:.4g} Mbit/s, {t['base_rtt_ms']:.3g} ms): one run "
             f"{rec['rank']['regret']:.3f} ({rec['rank']['best']}), medians {best.score - mine.score:.3f} "
             f"({best.cc} + {best.queue}); spread {spread:.3f}; within it, run once: {', '.join(once) or 'none'}"]
    for c, rs in zip(cs, runs):
        if len(rs) > 1:
            g = ", ".join(f"{r['goodput_mbps']:.4g}" for r in rs)
            nb = ", ".join(f"{r['neighbour_share']:.2f}" for r in rs)
            lines.append(f"  {c.cc} + {c.queue}: {len(rs)} runs, goodput {g} Mbit/s, neighbour {nb}, score "
                         f"{c.ranges['score'][0]:.3f}-{c.ranges['score'][1]:.3f}, of the medians {c.score:.3f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign", metavar="CAMPAIGN_DIR")
    ap.add_argument("--paths", required=True, help="ranked path indices, comma-separated")
    ap.add_argument("--seeds", default="2,3", help="the new runs' seeds (default 2,3: three runs with the stored one)")
    ap.add_argument("--out", default="rank_rerun.jsonl", help="the runs, JSON lines (appended; resumes)")
    ap.add_argument("--judge-only", action="store_true", help="judge the runs in --out, run nothing")
    ap.add_argument("--contenders", action="store_true", help="then run every candidate within the kernel's spread "
                    "of the best the seeds too (campaign.rank's rule), until none lacks them")
    a = ap.parse_args()
    try:
        idx = [int(x) for x in a.paths.split(",")]
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError:
        print("rank_rerun: --paths and --seeds: comma-separated integers", file=sys.stderr)
        return 2
    recs = {}
    for i in idx:
        p = os.path.join(a.campaign, "paths", f"{i:04d}.json")
        try:
            with open(p) as f:
                recs[i] = json.load(f)
        except (OSError, ValueError) as e:
            print(f"rank_rerun: --paths: {p}: {e}", file=sys.stderr)
            return 2
        if not recs[i].get("rank"):
            print(f"rank_rerun: --paths: {p} was not ranked", file=sys.stderr)
            return 2
    rows = []
    if os.path.exists(a.out):
        with open(a.out) as f:
            rows = [json.loads(x) for x in f if x.strip()]
    if not a.judge_only:
        done = {(r["path"], r["cc"], r["queue"], round(r["shaper_mbps"] or 0.0, 3), r["paced"], r["seed"]) for r in rows}
        for i in idx:
            rerun(recs[i], seeds, a.out, done)
            if a.contenders:
                rerun_contenders(recs[i], seeds, a.out, done)
        with open(a.out) as f:
            rows = [json.loads(x) for x in f if x.strip()]
    for i in idx:
        print(judge(recs[i], [r for r in rows if r["seed"] in seeds]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
