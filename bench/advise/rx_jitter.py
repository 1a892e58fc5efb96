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
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def model(rec: dict, us: float) -> tuple[float | None, float | None]:
    """The model on the true path as the campaign judges it (``campaign._model``) with ``rx_jitter`` = ``us``."""
    from bloatlab.advise import campaign as C

    k = rec["kernel"]
    m = C._model(rec["truth"], rec["duration_s"], k["cc"], k["queue"], k["shaper_mbps"],
                 autorate=(rec.get("advice") or {}).get("autorate"), rx_jitter_us=us)
    return m["goodput_mbps"], m["p95_rtt_ms"]


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


def _within(x, ref, goal):
    """``x`` within the campaign's tolerance of ``goal`` (campaign.GOALS) of the kernel's ``ref``."""
    from bloatlab.advise import campaign as C

    e = C._rel(x, ref)
    return e is not None and abs(e) <= dict((k, t) for k, t, _ in C.GOALS)[goal]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="+")
    ap.add_argument("--us", type=float, nargs="+", default=[0.0, 140.0], help="rx_jitter values, µs")
    ap.add_argument("--twin", action="store_true", help="also advise's ensemble on each stored twin")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    from bloatlab.advise import campaign as C

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
            med = C.kernel_medians(k.get("runs") or [k])
            row = {"campaign": os.path.basename(os.path.normpath(d)), "index": rec["index"],
                   "limiter": rec["truth"]["limiter"], "kernel": med["goodput_mbps"], "kernel_p95": med["p95_rtt_ms"]}
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
            g = sum(_within(r[key][0], r["kernel"], "pred_goodput") for r in got)
            p = sum(_within(r[key][1], r["kernel_p95"], "pred_p95_rtt") for r in got)
            print(f"{what} rx_jitter {u:g} us: {len(got)} paths, goodput within 15 % {g}, p95 within 25 % {p}")
        k0 = f"{what}_{a.us[0]:g}"
        for r in rows:
            for u in a.us[1:]:
                k1 = f"{what}_{u:g}"
                if k0 in r and k1 in r and (_within(r[k0][0], r["kernel"], "pred_goodput")
                                            != _within(r[k1][0], r["kernel"], "pred_goodput")):
                    print(f"  {what} {r['campaign']} {r['index']} {r['limiter']}: kernel {r['kernel']:.4g}, "
                          f"{a.us[0]:g} us {r[k0][0]:.4g} -> {u:g} us {r[k1][0]:.4g}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
