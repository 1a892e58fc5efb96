"""The model against the kernel on the same random-loss draws, seed by seed.

    sudo .venv/bin/python bench/emu/same_draws.py FILE --seeds 1-16 --kernel --out DIR   # run the kernel too
    .venv/bin/python bench/emu/same_draws.py FILE --seeds 1-16 --out DIR                 # the kernel runs DIR holds

Why: until 2026-11-26 the two engines drew a link's random loss from different RNG streams of the
scenario's seed (the emulator: ``stream(seed, LOSS_STREAM + d)``; the simulator: its down link's RNG
``stream(seed, 1)``), so one kernel run and one model run at the same seed lost different packets.
Where a run is short beside the time between losses (nsperf's random_loss at 1 Gbit/s, 100 ms, 10 s)
the index of the first lost packet decides the goodput (4-56 Mbit/s at 0.1 %), and one run against
one run compared two draws, not two TCPs. Since then both engines take ``bloatlab_core::rng::
LOSS_STREAM + d`` for the loss and ``QDISC_STREAM + d`` for the qdisc (docs/fidelity.md, "One seed,
one draw"), so the model runs with the kernel run's own seed and packet i of a direction is lost in
both engines or in neither, for as long as they send the same packets in the same order (the
emulator skips its generators' control connections, which the model does not have).

Printed per seed: goodput (Mbit/s), retransmitted segments, retransmit rate, the median of the
10-ms smoothed-RTT series (the kernel's ``rtt_ms`` is tcpi_rtt sampled every 10 ms; the model's
``rtt_ms`` is its per-ACK samples, so the series' median is the like-for-like one) and the kernel's
timing verdict (a flagged run is listed, not counted). Kernel runs are stored as DIR/kernel-sN.json
(``bloatlab run FILE --seed N --engine emu --json``) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

def sim_seed_for(emu_seed: int) -> int:
    """The simulator seed that draws the emulator's losses of ``emu_seed``: the same seed (one stream for both)."""
    return emu_seed


def seeds_of(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def model(resolved: dict, emu_seed: int) -> dict:
    from bloatlab import _native
    import pyarrow as pa

    doc = dict(resolved, seed=sim_seed_for(emu_seed))
    raw = _native.run_sim(json.dumps(doc), None)
    f = raw["flows"][0]
    srtt = [x for x in pa.table(raw["series"]["flows"]).column("srtt_ms").to_pylist() if x and x > 0]
    dur = resolved["duration_ns"] / 1e9
    return {"goodput": f["bytes_delivered"] * 8 / dur / 1e6, "retx": f["retrans_segs"],
            "retx_pct": 100 * f["retrans_segs"] / max(f["segs_sent"], 1), "srtt_p50": statistics.median(srtt),
            "rtt_p50_acks": f["rtt_ms"]["p50"], "flagged": False}


def kernel(file: str, seed: int, out: str, run: bool) -> dict | None:
    path = os.path.join(out, f"kernel-s{seed}.json")
    if not os.path.exists(path):
        if not run:
            return None
        cmd = [sys.executable, "-m", "bloatlab", "run", file, "--seed", str(seed), "--engine", "emu", "--json",
               "--out", os.path.join(out, f"kernel-s{seed}"), "--force"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"error: the kernel run of seed {seed} failed (exit {r.returncode})")
        with open(path, "w") as fh:
            fh.write(r.stdout)
    d = json.load(open(path))
    f = d["flows"][0]
    import pandas as pd

    series = os.path.join(out, f"kernel-s{seed}", "flows.parquet")
    srtt = pd.read_parquet(series).srtt_ms if os.path.exists(series) else None
    return {"goodput": f["goodput_mbps"], "retx": f["retransmits"], "retx_pct": 100 * f["retrans_rate"],
            "srtt_p50": float(srtt[srtt > 0].median()) if srtt is not None else f["rtt_ms"]["p50"],
            "flagged": bool(d["meta"].get("lateness", {}).get("flagged"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--seeds", default="1-10", help="emulator seeds, e.g. 1-16 or 1,3,5")
    ap.add_argument("--kernel", action="store_true", help="run the kernel where DIR has no run (root)")
    ap.add_argument("--out", required=True, help="directory of the kernel runs (kernel-sN.json)")
    a = ap.parse_args()
    from bloatlab.errors import UserError
    from bloatlab.scenario import load

    try:
        seeds = seeds_of(a.seeds)
    except ValueError:
        print(f"error: --seeds: expected seeds like 1-16 or 1,3,5, got {a.seeds!r}", file=sys.stderr)
        return 2
    try:
        resolved = load(a.file).resolved()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if len(resolved["flows"]) != 1:
        print("error: flow: one flow only", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    rows = []
    print("seed | kernel: goodput Mbit/s, retx, retx %, srtt p50 ms | model, same draws | goodput model/kernel")
    for s in seeds:
        k = kernel(a.file, s, a.out, a.kernel)
        m = model(resolved, s)
        if k is None:
            print(f"s{s:<3} kernel: no run in {a.out} | model {m['goodput']:8.1f} {m['retx']:5d} {m['retx_pct']:.3f} "
                  f"{m['srtt_p50']:6.1f}")
            continue
        rows.append((s, k, m))
        print(f"s{s:<3} K {k['goodput']:8.1f} {k['retx']:5d} {k['retx_pct']:.3f} {k['srtt_p50']:6.1f}"
              f"{' FLAGGED' if k['flagged'] else ''} | M {m['goodput']:8.1f} {m['retx']:5d} {m['retx_pct']:.3f} "
              f"{m['srtt_p50']:6.1f} | {m['goodput'] / k['goodput']:.2f}")
    ok = [(k, m) for _, k, m in rows if not k["flagged"]]
    if ok:
        med = lambda side, key: statistics.median(x[side][key] for x in ok)  # noqa: E731
        within = sum(abs(m["goodput"] / k["goodput"] - 1) <= 0.15 for k, m in ok)
        print(f"unflagged {len(ok)}: median goodput K {med(0, 'goodput'):.1f} M {med(1, 'goodput'):.1f}; "
              f"retx % K {med(0, 'retx_pct'):.3f} M {med(1, 'retx_pct'):.3f}; srtt p50 K {med(0, 'srtt_p50'):.1f} "
              f"M {med(1, 'srtt_p50'):.1f}; goodput within 15 % on {within} of {len(ok)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
