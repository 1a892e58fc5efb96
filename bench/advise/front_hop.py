"""A WiFi hop in front of the line (issue 30 §3; docs/advise.md, "A WiFi hop in front: the twin carries it"): of
the campaign's seeded draw of ``--draw`` paths (:func:`bloatlab.advise.campaign.draw`, whose paths depend on its
size), the first ``--front`` wired paths with a hop in front and the first ``--wired`` without one (WiFi limiters
left out), ``measure --quick`` from the true path's client namespace as the campaign runs it
(``campaign.measured``), and

- whether it read a WiFi hop in front (``report.wifi_front``) where the truth has one (``wifi_front``), and not
  where it has none; the idle probes' median above their least beside it;
- with ``--judge``, on each path it read one: ``advise`` on the twin as measured and on the same twin without the
  hop (the twin before the hop was read), and the kernel's three runs of each recommendation on the true path
  (``campaign._kernel``, shared where the two advise alike): the twin's goodput and p95 RTT against the kernel's.

Real time, root (namespaces); ~15-60 s a path to measure, 1-4 min more to judge; resumable (a path whose
``measure.json`` is in ``--out`` is read back; judged paths are kept in ``--out``/judged.json)::

    sudo .venv/bin/python bench/advise/front_hop.py --seed 118 --front 9 --wired 8 --out DIR [--judge] [--json OUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
# `measure` runs as `python -m bloatlab` inside the client namespace: this checkout's package and binaries
os.environ["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ.setdefault("BLOATLAB_BIN_DIR", os.path.join(ROOT, "target", "release"))

from bloatlab.advise import campaign as C  # noqa: E402
from bloatlab.advise.path import Path  # noqa: E402

#: the campaign's tolerances on the twin's goodput and p95 RTT (campaign.GOALS: pred_goodput, pred_p95_rtt)
GOODPUT_TOL, P95_TOL = 0.15, 0.25


def judge(t: dict, twin: str) -> dict:
    """The twin at ``twin`` (with its hop) and without the hop: each one's advice, its prediction and the kernel's
    three runs of it on the true path ``t``."""
    new = Path.from_twin(twin)
    plain = dataclasses.replace(new, front_wifi_mac=None, front_wifi_phy_mbps=None)
    dur = C.campaign_duration(new.base_rtt_ms, False)
    kernel: dict = {}
    out = {}
    for name, path in (("with_hop", new), ("without_hop", plain)):
        adv, advice = C.advise_path(path, dur)
        r = adv["recommendation"]
        cfg = (r["cc"], advice["queue"], r["shaper_mbps"])
        if cfg not in kernel:
            k = C._kernel(t, dur, r["cc"], advice["queue"], r["shaper_mbps"], autorate=advice.get("autorate"), repeats=3)
            kernel[cfg] = {"goodput_mbps": k["goodput_mbps"], "p95_rtt_ms": k["p95_rtt_ms"],
                           "timing_flagged": k.get("timing_flagged"),
                           "runs": [(u["goodput_mbps"], u["p95_rtt_ms"]) for u in k.get("runs", [])]}
        k = kernel[cfg]
        e = adv["expected"]
        out[name] = {"advice": list(cfg), "goodput_mbps": e["goodput_mbps"], "p95_rtt_ms": e["p95_rtt_ms"], "kernel": k,
                     "goodput_err": e["goodput_mbps"] / k["goodput_mbps"] - 1, "p95_err": e["p95_rtt_ms"] / k["p95_rtt_ms"] - 1}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--draw", type=int, default=60, help="the draw's size (default 60, a campaign's)")
    ap.add_argument("--front", type=int, default=9, help="the first N wired paths with a hop in front (default 9)")
    ap.add_argument("--wired", type=int, default=8, help="... and the first N without one (default 8)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--judge", action="store_true", help="advise with and without the hop, the kernel on the truth")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    if a.draw < 1 or a.front < 0 or a.wired < 0:
        ap.error("--draw: at least 1; --front, --wired: at least 0")
    wired = [t for t in C.draw(a.draw, a.seed) if t["limiter"] != "wifi"]
    keep = set([t["index"] for t in wired if t.get("wifi_front")][:a.front]
               + [t["index"] for t in wired if not t.get("wifi_front")][:a.wired])
    judged_file = os.path.join(a.out, "judged.json")
    judged = json.load(open(judged_file)) if os.path.exists(judged_file) else {}
    rows, tally = [], {"hop read": 0, "hop missed": 0, "none read": 0, "hop read, none there": 0}
    for t, m in C.measured_draw(a.draw, a.seed, a.out, keep=lambda t: t["index"] in keep):
        b = m["base_rtt_ms"]
        read, there = bool(m.get("wifi_front")), bool(t.get("wifi_front"))
        tally["hop read" if read and there else "hop missed" if there else "hop read, none there" if read else "none read"] += 1
        row = {"index": t["index"], "limiter": t["limiter"], "variable": t.get("variable"), "front": t.get("wifi_front"),
               "read": m.get("wifi_front"), "spread_ms": b["p50"] - b["min"], "note": m.get("wifi_front_note")}
        if a.judge and read:
            key = str(t["index"])
            if key not in judged:
                judged[key] = judge(t, os.path.join(a.out, f"{t['index']:04d}", "twin.toml"))
                with open(judged_file, "w") as f:
                    json.dump(judged, f, indent=1)
            row["judged"] = judged[key]
        rows.append(row)
        j = row.get("judged")
        said = "" if not j else " | " + " | ".join(
            f"{n}: {' + '.join(str(x) for x in v['advice'] if x is not None)} {v['goodput_mbps']:.3g} vs {v['kernel']['goodput_mbps']:.3g} "
            f"Mbit/s ({v['goodput_err'] * 100:+.1f} %), p95 {v['p95_err'] * 100:+.1f} %" for n, v in j.items())
        print(f"{a.seed}/{t['index']}: {t['limiter']}{' (variable)' if t.get('variable') else ''}, hop "
              f"{'there' if there else 'none'}, read {'a hop' if read else 'none'} (spread {row['spread_ms']:.3f} ms){said}",
              flush=True)
    print(", ".join(f"{k}: {v}" for k, v in tally.items()))
    js = [r["judged"] for r in rows if r.get("judged")]
    for n in ("with_hop", "without_hop"):
        if js:
            g = sum(abs(j[n]["goodput_err"]) <= GOODPUT_TOL for j in js)
            p = sum(abs(j[n]["p95_err"]) <= P95_TOL for j in js)
            print(f"{n}: goodput within {GOODPUT_TOL:.0%} {g} of {len(js)}, p95 within {P95_TOL:.0%} {p} of {len(js)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seed": a.seed, "tally": tally, "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
