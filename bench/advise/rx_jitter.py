"""The receiving host's timing noise (the scenario's ``rx_jitter``) judged by the kernel runs a campaign stored
(docs/fidelity.md, "The receiving host's timing noise"): for every path with a kernel judgement, the model on the
true path (the judge's control and queue, as ``campaign._model`` runs it: its members, the median) and, with
``--twin``, advise's ensemble on the stored twin, each with ``rx_jitter`` = U, against the median of the kernel's
runs; the counts within the campaign's goals (goodput 15 %, p95 RTT 25 %) for each U, and the paths whose verdict
changes. Offline, the simulator only (one process); nothing is written into the campaigns.

    .venv/bin/python bench/advise/rx_jitter.py CAMPAIGN_DIR... [--us 0 140] [--twin] [--json OUT]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def model(rec: dict, us: float) -> tuple[float | None, float | None]:
    """The model's members on the true path with ``rx_jitter`` = ``us``: their median goodput and p95 RTT."""
    import bloatlab
    from bloatlab.advise import campaign as C
    from bloatlab.advise.recommend import members_of, members_within_budget

    t, k, dur = rec["truth"], rec["kernel"], rec["duration_s"]
    ar = (rec.get("advice") or {}).get("autorate")
    figs = []
    n = members_within_budget(t["down_mbps"] * 1e6 / 8 / 1500 * dur, C.MODEL_MEMBERS)
    for i, (_, start) in enumerate(members_of(t["base_rtt_ms"], n)):
        doc = C.truth_doc(t, dur, k["cc"], k["queue"], k["shaper_mbps"], autorate=ar)
        doc.update(seed=1 + i, rx_jitter=f"{us:g}us")
        if start:
            doc["flow"][0]["start"] = f"{start}ns"
        figs.append(C._figures(bloatlab.run(doc).summary))
    return (_median([f["goodput_mbps"] for f in figs]), _median([f["p95_rtt_ms"] for f in figs]))


def twin(rec: dict, twin_toml: str, us: float) -> tuple[float | None, float | None]:
    """advise's ensemble on the stored twin for the recommended configuration, its runs with ``rx_jitter``."""
    from bloatlab.advise import recommend
    from bloatlab.advise.path import Path

    p = Path.from_twin(twin_toml)
    plain = Path.twin

    def noisy(self, *a, **kw):
        return dict(plain(self, *a, **kw), rx_jitter=f"{us:g}us")

    adv = rec["advice"]
    # the campaign's host has no sch_fq: its candidates run unpaced (recommend.advise's fq_planned)
    c = recommend.Candidate(adv["cc"], adv["queue"], adv["shaper_mbps"], False)
    Path.twin = noisy
    try:
        recommend.simulate_all(p, [c], 1, "sim", rec["duration_s"], recommend.ENSEMBLE)
    finally:
        Path.twin = plain
    return c.goodput_mbps, c.p95_rtt_ms


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 2] if xs else None


def _within(x, ref, tol):
    return x is not None and bool(ref) and abs(x / ref - 1) <= tol


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="+")
    ap.add_argument("--us", type=float, nargs="+", default=[0.0, 140.0], help="rx_jitter values, µs")
    ap.add_argument("--twin", action="store_true", help="also advise's ensemble on each stored twin")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    if any(not 0 <= u <= 10_000 for u in a.us):
        ap.error("--us: expected values from 0 to 10000 µs")
    rows = []
    for d in a.campaigns:
        for f in sorted(glob.glob(os.path.join(d, "paths", "[0-9]*.json"))):
            with open(f) as fh:
                rec = json.load(fh)
            k = rec.get("kernel") or {}
            if "truth" not in rec or k.get("goodput_mbps") is None or k.get("timing_flagged"):
                continue
            runs = k.get("runs") or [k]
            held = [r for r in runs if not r.get("timing_flagged")] or runs
            row = {"campaign": os.path.basename(os.path.normpath(d)), "index": rec["index"],
                   "limiter": rec["truth"]["limiter"],
                   "kernel": statistics.median(r["goodput_mbps"] for r in held),
                   "kernel_p95": statistics.median(r["p95_rtt_ms"] for r in held)}
            for u in a.us:
                row[f"model_{u:g}"] = model(rec, u)
                if a.twin and rec.get("advice"):
                    row[f"twin_{u:g}"] = twin(rec, f[:-5] + "/twin.toml", u)
            rows.append(row)
            print(f"{row['campaign']} {row['index']:4d} done", file=sys.stderr, flush=True)
    for what in ("model", "twin") if a.twin else ("model",):
        for u in a.us:
            key = f"{what}_{u:g}"
            got = [r for r in rows if key in r]
            g = sum(_within(r[key][0], r["kernel"], 0.15) for r in got)
            p = sum(_within(r[key][1], r["kernel_p95"], 0.25) for r in got)
            print(f"{what} rx_jitter {u:g} us: {len(got)} paths, goodput within 15 % {g}, p95 within 25 % {p}")
        k0 = f"{what}_{a.us[0]:g}"
        for r in rows:
            for u in a.us[1:]:
                k1 = f"{what}_{u:g}"
                if k0 in r and k1 in r and _within(r[k0][0], r["kernel"], 0.15) != _within(r[k1][0], r["kernel"], 0.15):
                    print(f"  {what} {r['campaign']} {r['index']} {r['limiter']}: kernel {r['kernel']:.4g}, "
                          f"{a.us[0]:g} us {r[k0][0]:.4g} -> {u:g} us {r[k1][0]:.4g}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
