#!/usr/bin/env python3
"""The 1-MB download at 20 % loss, 200 ms (`reproduce janog-lossy-download`) on both engines, as distributions.

One sized transfer at 20 % random loss is a handful of draws (which SYN-ACK, which segment of the first window,
which retransmission is lost), so its completion time spreads over an order of magnitude on both engines: the
question is whether the model's distribution is the kernel's (issue 32 §3). This runs the experiment's own scenario
document (python/bloatlab/study/experiments/janog_lossy_download.py: 100 Mbit/s, 200 ms, 1-BDP FIFO, 20 % loss on
the data direction, 1 MB, up to 600 s) over a range of seeds on each engine, appends one JSON line per run to a file
(resumable: seeds already there are skipped), and compares the completion times (`fct_s`, from the first SYN):
median, quartiles, range, the Mann-Whitney U test and a bootstrap 95 % interval of the ratio of the medians.
Emulator runs whose timing was flagged (docs/emulator.md "Timing quality") are kept in the file and left out of
the comparison, counted. Every run notes the 1-minute load average at its start.

    .venv/bin/python bench/emu/janog.py --sim 1-40 --out /tmp/janog.jsonl          # the model (seconds)
    sudo .venv/bin/python bench/emu/janog.py --emu 1-20 --out /tmp/janog.jsonl     # the kernel (real time)
    .venv/bin/python bench/emu/janog.py --out /tmp/janog.jsonl                      # the comparison only

`--cc cubic` for CUBIC; `--tag NAME` labels the model's runs (e.g. a branch), and the comparison takes the model's
runs of the latest tag unless `--model-tag` names one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))


def seeds_of(text: str | None) -> list[int]:
    out: list[int] = []
    for part in (text or "").split(","):
        if part:
            a, _, b = part.partition("-")
            out += list(range(int(a), int(b or a) + 1))
    return out


def scenario(cc: str) -> dict:
    from bloatlab.study.experiments.janog_lossy_download import EXPERIMENT

    doc = json.loads(json.dumps(EXPERIMENT.sweep(False).parts[0].base))
    doc["flow"][0]["cc"] = cc
    return doc


def run_one(cc: str, engine: str, seed: int, tag: str) -> dict:
    import bloatlab

    load = os.getloadavg()[0]
    s = bloatlab.run(scenario(cc), engine=engine, overrides=[f"seed={seed}"]).summary
    f = s["flows"][0]
    late = (s.get("meta") or {}).get("lateness") or {}
    return {"cc": cc, "engine": engine, "seed": seed, "tag": tag if engine == "sim" else "kernel",
            "load": round(load, 1), "fct_s": f.get("fct_s"), "completed": bool(f.get("completed")),
            "retransmits": f.get("retransmits"), "flagged": bool(late.get("flagged")),
            "reasons": late.get("reasons") or []}


def fct(r: dict, timeout: float = 600.0) -> float:
    return float(r["fct_s"]) if r["completed"] and r["fct_s"] is not None else timeout


def median_ratio_ci(a: list[float], b: list[float], n: int = 10000, seed: int = 1) -> tuple[float, float]:
    """A percentile-bootstrap 95 % interval of median(a) / median(b), resampling each side apart."""
    rng = np.random.default_rng(seed)
    ra = np.median(rng.choice(a, (n, len(a))), axis=1)
    rb = np.median(rng.choice(b, (n, len(b))), axis=1)
    lo, hi = np.percentile(ra / rb, [2.5, 97.5])
    return float(lo), float(hi)


def describe(xs: list[float]) -> str:
    q1, m, q3 = np.percentile(xs, [25, 50, 75])
    return f"median {m:.2f} s (quartiles {q1:.2f}-{q3:.2f}; {min(xs):.2f}-{max(xs):.2f}; n {len(xs)})"


def compare(rows: list[dict], cc: str, model_tag: str | None) -> str:
    from scipy.stats import mannwhitneyu

    sims = [r for r in rows if r["engine"] == "sim" and r["cc"] == cc]
    tag = model_tag or (sims[-1]["tag"] if sims else None)
    sim = [r for r in sims if r["tag"] == tag]
    emu_all = [r for r in rows if r["engine"] == "emu" and r["cc"] == cc]
    emu = [r for r in emu_all if not r["flagged"]]
    out = [f"{cc}: model ({tag}) seeds {len(sim)}; kernel runs {len(emu_all)}, {len(emu_all) - len(emu)} flagged "
           f"and left out" + (": seeds " + ", ".join(f"{r['seed']} ({','.join(r['reasons'])})"
                                                      for r in emu_all if r["flagged"]) if len(emu) < len(emu_all)
                              else "")]
    for label, rs in (("model", sim), ("kernel", emu)):
        if rs:
            loads = [r["load"] for r in rs]
            out.append(f"  {label:<7}{describe([fct(r) for r in rs])}; not done {sum(not r['completed'] for r in rs)}"
                       f"; retransmits median {np.median([r['retransmits'] or 0 for r in rs]):.0f}; "
                       f"load {min(loads)}-{max(loads)}")
    if sim and emu:
        a, b = [fct(r) for r in sim], [fct(r) for r in emu]
        p = mannwhitneyu(a, b).pvalue
        lo, hi = median_ratio_ci(a, b)
        out.append(f"  model / kernel median {np.median(a) / np.median(b):.2f} (bootstrap 95 % {lo:.2f}-{hi:.2f}); "
                   f"Mann-Whitney p {p:.3f}")
        out.append(seed_by_seed(sim, emu))
    return "\n".join(out)


def seed_by_seed(sim: list[dict], emu: list[dict]) -> str:
    """Both engines draw the same losses for a seed: the kernel's minus the model's time over the seeds both ran
    (a kernel seed run twice counts by its median), their median, how many the kernel is slower on, and the Wilcoxon
    signed-rank test of those differences (the paired test: stronger than the two distributions' when the draws are
    the same)."""
    from scipy.stats import wilcoxon

    model = {r["seed"]: fct(r) for r in sim}
    kernel: dict[int, list[float]] = {}
    for r in emu:
        kernel.setdefault(r["seed"], []).append(fct(r))
    d = [float(np.median(kernel[s])) - model[s] for s in sorted(kernel) if s in model]
    if len(d) < 2:
        return f"  seed by seed: {len(d)} seed(s) on both engines"
    p = wilcoxon(d).pvalue if any(d) else 1.0
    return (f"  seed by seed ({len(d)} seeds): kernel - model median {np.median(d):+.2f} s, kernel slower on "
            f"{sum(x > 0 for x in d)}; Wilcoxon signed-rank p {p:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cc", default="bbr", choices=["bbr", "cubic", "reno"])
    ap.add_argument("--sim", metavar="A-B", help="simulator seeds to run")
    ap.add_argument("--emu", metavar="A-B", help="emulator seeds to run (root)")
    ap.add_argument("--tag", help="label of the model's runs (default: the checkout's short commit)")
    ap.add_argument("--model-tag", help="compare the model's runs of this tag (default: the latest run's)")
    ap.add_argument("--out", required=True, help="JSON lines file (appended; resumable)")
    a = ap.parse_args(argv)
    for opt in ("sim", "emu"):
        try:
            seeds_of(getattr(a, opt))
        except ValueError:
            print(f"error: --{opt}: expected seeds like 1-30, got {getattr(a, opt)!r}", file=sys.stderr)
            return 2
    tag = a.tag or subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True).stdout.strip() or "model"
    rows = [json.loads(line) for line in open(a.out) if line.strip()] if os.path.exists(a.out) else []
    have = {(r["engine"], r["cc"], r["tag"], r["seed"]) for r in rows}
    for engine, spec in (("sim", a.sim), ("emu", a.emu)):
        for seed in seeds_of(spec):
            if (engine, a.cc, tag if engine == "sim" else "kernel", seed) in have:
                continue
            rec = run_one(a.cc, engine, seed, tag)
            rows.append(rec)
            with open(a.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"{engine} seed {seed}: load {rec['load']}, fct {fct(rec):.2f} s, retransmits {rec['retransmits']}"
                  + (f", flagged ({','.join(rec['reasons'])})" if rec["flagged"] else ""), file=sys.stderr)
    print(compare(rows, a.cc, a.model_tag))
    return 0


if __name__ == "__main__":
    sys.exit(main())
