"""A campaign PIE truth's PIE running before the flows, or created with the run, on the kernel and in the model
(docs/advise.md "The twin's PIE has run before its flows too"): today's control as it is (campaign.TODAY_CC, the
bottleneck as it is) through the emulator (``--repeats`` runs, their median) and the model's ensemble
(campaign._model), on the true path with its PIE ``running`` (path.path_aqm, today's) and without (as before
2026-12-02). Needs root; ~1 min per path at the campaign's run lengths.

    .venv/bin/python bench/advise/pie_kernel.py 131:35 130:26 129:42 131:42 129:49 130:12 [--repeats 3] [--json OUT]

SEED:IDX names the draw (campaign.draw(--n, SEED)[IDX], a PIE).
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ["PATH"] = os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"]

from bloatlab.advise import campaign as C  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("paths", nargs="+")
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--n", type=int, default=60)
ap.add_argument("--json")
a = ap.parse_args()

orig = C.path_aqm
rows = []
for spec in a.paths:
    seed, idx = (int(x) for x in spec.split(":"))
    t = C.draw(a.n, seed)[idx]
    if t["limiter"] != "pie":
        sys.exit(f"pie_kernel: draw {spec} is a {t['limiter']}, not a PIE")
    dur = C.campaign_duration(t["base_rtt_ms"], False)
    row = {"path": spec, "down_mbps": t["down_mbps"], "rtt_ms": t["base_rtt_ms"], "loss": t["loss"], "duration_s": dur}
    for running in (True, False):
        C.path_aqm = orig if running else (lambda kind: {"qdisc": kind})
        k = C._kernel(t, dur, C.TODAY_CC, "as-is", None, repeats=a.repeats)
        m = C._model(t, dur, C.TODAY_CC, "as-is", None)
        tag = "running" if running else "created"
        row[tag] = {"kernel": {x: k[x] for x in ("goodput_mbps", "p95_rtt_ms")},
                    "kernel_runs": [(r["goodput_mbps"], r["p95_rtt_ms"]) for r in k.get("runs", [])],
                    "model": {x: m[x] for x in ("goodput_mbps", "p95_rtt_ms")}, "ensemble": m["ensemble"]}
        print(spec, tag, json.dumps(row[tag]), flush=True)
    C.path_aqm = orig
    rows.append(row)
if a.json:
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)
print("| path | Mbit/s | RTT ms | kernel p95 running / created | model p95 running / created | model/kernel p95 running, created |")
for r in rows:
    kr, kc = r["running"]["kernel"]["p95_rtt_ms"], r["created"]["kernel"]["p95_rtt_ms"]
    mr, mc = r["running"]["model"]["p95_rtt_ms"], r["created"]["model"]["p95_rtt_ms"]
    print(f"| {r['path']} | {r['down_mbps']:.3g} | {r['rtt_ms']:.3g} | {kr:.1f} / {kc:.1f} | {mr:.1f} / {mc:.1f} | "
          f"{mr / kr - 1:+.1%}, {mc / kc - 1:+.1%} |")
