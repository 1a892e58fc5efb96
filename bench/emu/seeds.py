#!/usr/bin/env python3
"""A fidelity scenario over many seeds on both engines, compared as distributions.

A three-seed median of a scenario whose outcome is a race (which of several
BBR flows wins, a loss cliff) meets or misses a target by chance. This runs
the scenario over a range of seeds on each engine, appends one JSON line per
run to a file (resumable: seeds already there are skipped), and compares the
engines' distributions with the Mann-Whitney U test: the flows' goodput shares
of the total, ranked within each run among the flows of the same congestion
control, Jain's index over the flows of the most common control, the
retransmissions, the queue the flows kept (the median over the flows of their
smoothed RTT's p50 and p95 above the base), the total goodput. Emulator runs whose timing
was flagged (docs/emulator.md "Timing quality") are counted apart.

    .venv/bin/python bench/emu/seeds.py scenarios/fidelity/23-bbr-x4-reno-x4-100M-20ms.toml \\
        --sim 1-30 --emu 4-13 --out /tmp/23.jsonl          # runs, then the comparison
    .venv/bin/python bench/emu/seeds.py FILE --out /tmp/23.jsonl   # the comparison of what is stored

The emulator needs root; every run notes the load average at its start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

import numpy as np


def seeds(spec: str | None) -> list[int]:
    if not spec:
        return []
    lo, _, hi = spec.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def stored(out: str) -> list[dict]:
    if not os.path.exists(out):
        return []
    with open(out) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_one(path: str, engine: str, seed: int) -> dict:
    import bloatlab

    load = os.getloadavg()[0]
    s = bloatlab.run(path, engine=engine, overrides=[f"seed={seed}"]).summary
    late = (s.get("meta") or {}).get("lateness") or {}
    return {"scenario": os.path.basename(path), "engine": engine, "seed": seed, "load": round(load, 1),
            "flows": [[f["cc"], f["goodput_mbps"]] for f in s["flows"]],
            "retransmits": sum(f.get("retransmits") or 0 for f in s["flows"]),
            # each flow's smoothed-RTT p50 and p95 above its base (ms): the queue the flows keep
            "queue_ms": [[f["rtt_ms"]["p50"] - f["rtt_base_ms"], f["rtt_ms"]["p95"] - f["rtt_base_ms"]]
                         for f in s["flows"] if f.get("rtt_ms") and f["rtt_ms"].get("p50") is not None],
            "flagged": bool(late.get("flagged")), "reasons": late.get("reasons") or []}


def ranked_shares(r: dict, cc: str) -> list[float]:
    total = sum(g for _, g in r["flows"]) or 1.0
    return sorted((g / total for c, g in r["flows"] if c == cc), reverse=True)


def jain(xs: list[float]) -> float:
    a = np.asarray(xs, dtype=float)
    return float(a.sum() ** 2 / (len(a) * (a ** 2).sum())) if len(a) and a.any() else float("nan")


def compare(rows: list[dict], name: str) -> str:
    from scipy.stats import mannwhitneyu

    sim = [r for r in rows if r["scenario"] == name and r["engine"] == "sim"]
    emu_all = [r for r in rows if r["scenario"] == name and r["engine"] == "emu"]
    emu = [r for r in emu_all if not r["flagged"]]
    if not sim or not emu:
        return f"{name}: need runs on both engines (sim {len(sim)}, emu unflagged {len(emu)})"
    counts = Counter(c for c, _ in sim[0]["flows"])
    cc = counts.most_common(1)[0][0]
    loads = [r["load"] for r in emu_all if r["load"] is not None]  # None: not recorded (tinybdp-*.jsonl)
    load = f"load {min(loads)}-{max(loads)}" if loads else "load not recorded"
    out = [f"{name}: sim seeds {len(sim)}, emu seeds {len(emu_all)} ({len(emu_all) - len(emu)} flagged, left out; "
           f"{load})"]

    def row(label: str, a: list[float], b: list[float], fmt: str = "{:.3f}") -> str:
        p = mannwhitneyu(a, b).pvalue if len(set(a) | set(b)) > 1 else 1.0
        return (f"  {label:<28} sim {fmt.format(np.median(a))} ({fmt.format(min(a))}-{fmt.format(max(a))})   "
                f"emu {fmt.format(np.median(b))} ({fmt.format(min(b))}-{fmt.format(max(b))})   Mann-Whitney p {p:.3f}")

    for c, n in counts.items():  # each control's flows, ranked among themselves
        for i in range(n):
            label = f"{c} share, rank {i + 1}" if n > 1 else f"{c} share"
            out.append(row(label, [ranked_shares(r, c)[i] for r in sim], [ranked_shares(r, c)[i] for r in emu]))
    n = counts[cc]
    if n > 1:
        out.append(row(f"Jain over the {cc} flows", [jain(ranked_shares(r, cc)) for r in sim],
                       [jain(ranked_shares(r, cc)) for r in emu]))
    out.append(row("retransmits", [r["retransmits"] for r in sim], [r["retransmits"] for r in emu], "{:.0f}"))
    if all(r.get("queue_ms") for r in sim + emu):  # (runs stored before the queue was kept: none)
        for i, pct in enumerate(("p50", "p95")):
            def queue(runs: list[dict]) -> list[float]:
                return [float(np.median([q[i] for q in r["queue_ms"]])) for r in runs]
            out.append(row(f"flows' RTT {pct} - base, ms", queue(sim), queue(emu), "{:.1f}"))
    out.append(row("total goodput Mbit/s", [sum(g for _, g in r["flows"]) for r in sim],
                   [sum(g for _, g in r["flows"]) for r in emu], "{:.2f}"))
    flagged = [r for r in emu_all if r["flagged"]]
    if flagged:
        out.append("  flagged emu runs, first-rank share: " + ", ".join(
            f"seed {r['seed']} {ranked_shares(r, cc)[0]:.3f} ({','.join(r['reasons'])})" for r in flagged))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", help="a scenario file (e.g. scenarios/fidelity/15-...toml)")
    ap.add_argument("--sim", metavar="A-B", help="simulator seeds to run")
    ap.add_argument("--emu", metavar="A-B", help="emulator seeds to run (root)")
    ap.add_argument("--out", required=True, help="JSON lines file (appended; resumable)")
    a = ap.parse_args(argv)
    if not os.path.exists(a.scenario):
        print(f"error: {a.scenario}: no such file", file=sys.stderr)
        return 2
    name = os.path.basename(a.scenario)
    have = {(r["engine"], r["seed"]) for r in stored(a.out) if r["scenario"] == name}
    for engine, spec in (("sim", a.sim), ("emu", a.emu)):
        for seed in seeds(spec):
            if (engine, seed) in have:
                continue
            rec = run_one(a.scenario, engine, seed)
            with open(a.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"{engine} seed {seed}: load {rec['load']}, retransmits {rec['retransmits']}"
                  + (f", flagged ({','.join(rec['reasons'])})" if rec["flagged"] else ""), file=sys.stderr)
    print(compare(stored(a.out), name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
