"""The advisor's ensemble over two RTT spans, on a stored campaign (issue 30's twin goals; docs/advise.md "An
ensemble, not one run"): for each path with a kernel judgement, the recommended configuration simulated on the stored
twin as advise's ensemble does (7 members, advise's seeds and starts), its RTTs spread over the goal's +- 5 % / 1 ms
and over the measurement's own spread (the stored idle probes' median less their least), each against the median of
the kernel's runs (the record's, and ``--judge`` F: bench/advise/judge_rerun.py's JSON lines). Offline, the
simulator only; nothing is written into the campaign.

    .venv/bin/python bench/advise/rtt_span.py CAMPAIGN_DIR [--judge F.jsonl] [--json OUT]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def main(argv=None) -> int:
    from bloatlab.advise import campaign, recommend
    from bloatlab.advise.path import Path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign_dir")
    ap.add_argument("--judge", default=None, help="more kernel runs (judge_rerun.py's JSON lines)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    extra: dict = {}
    if a.judge:
        with open(a.judge) as f:
            for line in f:
                x = json.loads(line)
                extra.setdefault(x["index"], []).append(x)
    rows = []
    for f in sorted(glob.glob(os.path.join(a.campaign_dir, "paths", "[0-9]*.json"))):
        with open(f) as fh:
            rec = json.load(fh)
        if not rec.get("kernel") or not rec.get("predicted"):
            continue
        with open(os.path.join(f[:-5], "measure.json")) as fh:
            base = json.load(fh)["base_rtt_ms"]
        runs = (rec["kernel"].get("runs") or [rec["kernel"]]) + extra.get(rec["index"], [])
        med = campaign.kernel_medians(runs)
        kg, kp = med["goodput_mbps"], med["p95_rtt_ms"]
        adv = rec["advice"]
        row = {"index": rec["index"], "spread_ms": base["p50"] - base["min"], "kernel": kg, "kernel_p95": kp}
        for name, spread in (("goal", None), ("measured", max(base["p50"] - base["min"], 0.0))):
            p = Path.from_twin(os.path.join(f[:-5], "twin.toml"))
            p.base_rtt_spread_ms = spread
            # the campaign's host has no sch_fq: its candidates run unpaced (recommend.advise's fq_planned)
            c = recommend.Candidate(adv["cc"], adv["queue"], adv["shaper_mbps"], False)
            recommend.simulate_all(p, [c], 1, "sim", rec["duration_s"], recommend.ENSEMBLE)
            row[name], row[name + "_p95"] = c.goodput_mbps, c.p95_rtt_ms
        rows.append(row)
        print(f"path {row['index']:3d} spread {row['spread_ms']:.3f} ms: kernel {kg:8.4g} Mbit/s, p95 {kp:7.4g} ms; "
              + "; ".join(f"{n} {row[n]:8.4g} ({(row[n] / kg - 1) * 100:+.1f} %, p95 {(row[n + '_p95'] / kp - 1) * 100:+.1f} %)"
                          for n in ("goal", "measured")), flush=True)
    for n in ("goal", "measured"):
        g = sum(abs(r[n] / r["kernel"] - 1) <= 0.15 for r in rows)
        p = sum(abs(r[n + "_p95"] / r["kernel_p95"] - 1) <= 0.25 for r in rows)
        print(f"{n} span: goodput within 15 % on {g} of {len(rows)}, p95 within 25 % on {p}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
