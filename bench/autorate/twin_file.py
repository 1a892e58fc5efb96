#!/usr/bin/env python3
"""Issue 31 goal 2, the twin file: does ``advise --path twin.toml`` give what ``advise`` gives right after ``measure``?

For each stored measurement of ``twin.py`` (``bench/autorate/twin/CASE/measure.json``, the emulated true paths of
2026-11-26): the path ``measure`` built (its JSON's ``twin``, with the capacity's windows where the code carries
them), its twin written as ``measure --out`` writes it, read back with ``Path.from_twin``; then ``advise`` (the
simulator, default ensemble, balanced goal, current CUBIC) on both. Prints the capacity's p10/p50/p90 measured and
read back, the realization's own figures, whether the recommendation and its settings are the same, and each
advise's wall time. Runs on any version of the code (before the figures travelled beside the trace: the file's
percentiles came from the trace over 1-s windows).

    PYTHONPATH=python .venv/bin/python bench/autorate/twin_file.py [--cases lte lte-s2 starlink] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

from bloatlab.advise import recommend
from bloatlab.advise.path import Path, to_toml

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "twin")
CCS = ["reno", "cubic", "bbr"]


def measured_path(m: dict) -> Path:
    known = {f.name for f in dataclasses.fields(Path)}
    t = {k: v for k, v in m["twin"].items() if k in known}
    if "down_rate_variation" in known:
        t["down_rate_variation"] = m["down"]["rate_variation"]
    return Path(**t)


def write_twin(p: Path, out: str) -> None:
    if hasattr(p, "write_twin"):
        p.write_twin(out)
        return
    # the code before: measure --out's own lines (commands/measure.py)
    p.down_trace = os.path.splitext(os.path.abspath(out))[0] + "-down.trace"
    doc = p.twin()
    doc["link"]["down"]["rate"] = "trace:" + os.path.basename(p.down_trace)
    with open(out, "w") as f:
        f.write(to_toml(doc))


def advise(p: Path) -> tuple[dict, float]:
    t0 = time.monotonic()
    a = recommend.advise(p, "balanced", "cubic", CCS, 1)
    return a, time.monotonic() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["lte", "lte-s2", "starlink"])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    rows = []
    for case in a.cases:
        with open(os.path.join(HERE, case, "measure.json")) as f:
            m = json.load(f)
        p = measured_path(m)
        d = tempfile.mkdtemp(prefix=f"twin-file-{case}-")
        out = os.path.join(d, "twin.toml")
        write_twin(p, out)
        q = Path.from_twin(out)
        side = out[:-len(".toml")] + "-down.trace.json"
        real = json.load(open(side))["realization"] if os.path.exists(side) else None
        am, tm = advise(p)
        af, tf = advise(q)
        rec = lambda x: {k: x["recommendation"][k] for k in ("cc", "qdisc", "shaper_mbps", "autorate")}  # noqa: E731
        row = {"case": case,
               "measured": [p.down_rate_p10_mbps, p.down_rate_p50_mbps, p.down_rate_p90_mbps],
               "from_file": [q.down_rate_p10_mbps, q.down_rate_p50_mbps, q.down_rate_p90_mbps],
               "realization": real, "after_measure": rec(am), "from_file_advice": rec(af),
               "same_advice": rec(am) == rec(af), "advise_s": [round(tm, 1), round(tf, 1)],
               "members": am["expected"]["ensemble"]["members"] if am["expected"].get("ensemble") else None,
               "options": {f"{c['cc']} {c['queue']} {c['shaper_mbps'] or ''}".strip():
                           {"goodput": round(c["goodput_mbps"], 2), "goodput_range": c["ensemble"]["goodput_mbps"],
                            "p95": round(c["p95_rtt_ms"]), "p95_range": c["ensemble"]["p95_rtt_ms"]}
                           for c in am["alternatives"] if c["cc"] == "cubic"}}
        rows.append(row)
        fmt = lambda xs: "/".join(f"{x:.3g}" for x in xs)  # noqa: E731
        print(f"{case}: measured {fmt(row['measured'])}, from the file {fmt(row['from_file'])}"
              + (f", realization seed {real['seed']} reads {real['p10_mbps']:.3g}/{real['p50_mbps']:.3g}/"
                 f"{real['p90_mbps']:.3g} (within tolerance: {real['within_tolerance']})" if real and "p10_mbps" in real else "")
              + f"; advice {'the same' if row['same_advice'] else 'differs'}: {rec(am)['cc']}+{rec(am)['qdisc']}"
              + (f" vs {rec(af)['cc']}+{rec(af)['qdisc']}" if not row["same_advice"] else "")
              + f"; advise {tm:.1f} s / {tf:.1f} s, {row['members']} members", flush=True)
        for k, o in row["options"].items():
            print(f"    {k:28} goodput {o['goodput']:6.2f} [{o['goodput_range'][0]:.2f}-{o['goodput_range'][1]:.2f}]"
                  f"  p95 {o['p95']:5d} [{o['p95_range'][0]:.0f}-{o['p95_range'][1]:.0f}] ms", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
