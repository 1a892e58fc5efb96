"""The flows' summed delivery rate with and without a stalled flow's stale sample (``evidence.flow_rates``).

``tcpi_delivery_rate`` keeps a flow's last rate sample while it waits in retransmission timeouts, so the sum over
flows that ``measure`` reads where its window spans few round trips over-reads a slow, lossy bottleneck. This runs
seeded simulator scenarios drawn like a campaign's slow paths (four flows of one control through a FIFO, PIE, CoDel or
fq_codel, random loss), reads each run's flow series as ``measure`` reads a phase's TCP_INFO samples — the median
over the second half of the summed rates, once with the samples as they are and once with ``flow_rates`` — and
compares both with the bytes the cumulative ACKs covered over that half (20 s runs: hundreds of round trips, so
the edges' error is small). The simulator's ``delivery_rate_bps`` is Linux's ``tcp_rate.c`` sample, kept as
``tcpi_delivery_rate`` keeps it.

    PYTHONPATH=python .venv/bin/python bench/advise/stale_rates.py [--seed S] [--paths N] [--slow] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

from bloatlab.advise.evidence import flow_rates  # noqa: E402


def readings(f: pd.DataFrame) -> tuple[float, float, float]:
    """(summed samples' median, the same with stale samples at 0, cumulative ACKs) over the second half, Mbit/s."""
    fs = {c: f[c].to_numpy() for c in f.columns}
    fid, t = f["flow"].to_numpy(int), f["t"].to_numpy(float)
    ids = sorted(set(fid.tolist()))
    t0, t1 = t.min(), min(t[fid == i].max() for i in ids)
    w0 = t0 + 0.5 * (t1 - t0)
    grid = np.arange(w0, t1, 0.01)
    raw = sum(np.interp(grid, t[fid == i], fs["delivery_rate_bps"][fid == i]) for i in ids)
    live = sum(flow_rates(fs, fid, t, i, grid) for i in ids)
    acked = sum(np.interp(t1, t[fid == i], fs["delivered_bytes"][fid == i])
                - np.interp(w0, t[fid == i], fs["delivered_bytes"][fid == i]) for i in ids)
    return float(np.median(raw)) / 1e6, float(np.median(live)) / 1e6, acked * 8 / (t1 - w0) / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--paths", type=int, default=30)
    ap.add_argument("--slow", action="store_true", help="0.5-5 Mbit/s and 0.2-3 %% loss (default 1-100, 0-2 %%)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    lo, hi, losses = (0.5, 5, [0.002, 0.005, 0.01, 0.03]) if a.slow else (1, 100, [0, 0.001, 0.005, 0.02])
    exe = os.path.join(os.path.dirname(sys.executable), "bloatlab")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(a.paths):
            rate = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
            rtt = float(np.exp(rng.uniform(np.log(5), np.log(300))))
            q = str(rng.choice(["fifo", "pie", "codel", "fq_codel"]))
            loss = float(rng.choice(losses))
            cc = str(rng.choice(["bbr", "cubic"]))
            queue = 'buffer = "1bdp"' if q == "fifo" else f'qdisc = "{q}"'
            doc = (f'name = "stale-{n}"\nduration = "20s"\nseed = {n + 1}\n[link.down]\nrate = "{rate:.4g}Mbit"\n{queue}\n'
                   f'loss = {loss}\n[link.up]\nrate = "{rate / 4:.4g}Mbit"\n[[flow]]\nname = "f"\ncc = "{cc}"\n'
                   f'count = 4\nrtt = "{rtt:.4g}ms"\n')
            path, out = os.path.join(tmp, f"{n}.toml"), os.path.join(tmp, f"r{n}")
            with open(path, "w") as fh:
                fh.write(doc)
            r = subprocess.run([exe, "run", path, "--out", out], capture_output=True, text=True)
            if r.returncode:
                print(f"{n}: {r.stderr.strip()[:200]}", file=sys.stderr)
                continue
            raw, live, acked = readings(pd.read_parquet(os.path.join(out, "flows.parquet")))
            row = {"n": n, "qdisc": q, "cc": cc, "rate_mbps": round(rate, 3), "rtt_ms": round(rtt, 1), "loss": loss,
                   "acked_mbps": acked, "samples": raw / acked - 1, "live": live / acked - 1}
            rows.append(row)
            if not a.json:
                print(f"{n:2d} {q:8s} {cc:5s} {rate:7.2f} Mbit/s {rtt:6.1f} ms loss {loss:.3f} | acked {acked:.3f} "
                      f"samples {100 * row['samples']:+.1f} %  stale at 0 {100 * row['live']:+.1f} %", flush=True)
    d = pd.DataFrame(rows)
    summary = {"seed": a.seed, "paths": len(d), "slow": a.slow,
               "within_5pct": {"samples": int((d.samples.abs() <= 0.05).sum()), "live": int((d.live.abs() <= 0.05).sum())},
               "within_10pct": {"samples": int((d.samples.abs() <= 0.10).sum()), "live": int((d.live.abs() <= 0.10).sum())},
               "worst": {"samples": float(d.samples.abs().max()), "live": float(d.live.abs().max())}}
    print(json.dumps({"summary": summary, "rows": rows} if a.json else summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
