"""The policer's bucket and its port's FIFO through the emulator (issue 30, docs/advise.md "Behind a policer"):
for policed truths built as the campaign builds them (campaign.truth_doc: loss -> policer -> the port's FIFO), runs
`bloatlab measure --quick` from the client namespace (campaign._measure), reads the twin, and compares the bucket and
the port's buffer with the truth and the twin's CUBIC as-is (the model, advise's ensemble) with the kernel's on the
true path (one emulator run) and the model's there (its ensemble). ``--before`` adds the twin the code before the
paced train wrote (the back-to-back train's bucket, a port buffer of 1 BDP), in the model. Needs root; ~1 min a
path; one at a time (the emulator is real time).

    .venv/bin/python bench/advise/policer_check.py [--out DIR] [--before] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
# `measure` runs as `python -m bloatlab` inside the client namespace: this checkout's package, and its binaries
os.environ["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ.setdefault("BLOATLAB_BIN_DIR", os.path.join(ROOT, "target", "release"))

#: (port Mbit/s, CIR share of it, bucket ms at the CIR, port FIFO B, RTT ms[, random loss each way]): port/CIR
#: 1.3-10, buckets 30-80 ms, FIFOs shallower and deeper than the bucket, one with random loss (the paced train's cut
#: where the loss rate rises); "p14" is campaign seed 8 path 14 (rebuilt by campaign.draw)
TRUTHS = {"r10shallow": (200.0, 0.1, 80.0, 60_000, 30.0),   # 20 Mbit/s, bucket 200 KB, FIFO 60 KB
          "r2deep": (20.0, 0.5, 30.0, 100_000, 40.0),       # 10 Mbit/s, bucket 37.5 KB, FIFO 100 KB
          "r1p3shallow": (50.0, 0.77, 40.0, 45_000, 25.0),  # 38.5 Mbit/s, bucket 192.5 KB, FIFO 45 KB
          "r2lossy": (50.0, 0.5, 50.0, 40_000, 30.0, 0.005),  # 25 Mbit/s, bucket 156 KB, FIFO 40 KB, 0.5 % loss
          # a port the server's train hardly outpaces (trains.port_fifo_by_delay): FIFOs of a few whole packets, the
          # campaign's seed 91 path 12 and seed 83 path 53 rebuilt, one at 400 Mbit/s, and a deep one the delays read
          "p91_12": (189.9, 0.182, 96.6, 5386, 4.1),          # 34.6 Mbit/s, bucket 418 KB, FIFO 3 packets
          "p83_53": (185.6, 0.512, 78.0, 4143, 6.5),          # 95.1 Mbit/s, bucket 927 KB, FIFO 2 packets
          "r3tiny": (400.0, 0.3, 20.0, 4500, 10.0),           # 120 Mbit/s, bucket 300 KB, FIFO 3 packets
          "r2deep51": (185.6, 0.512, 78.0, 77_000, 6.5)}      # 95.1 Mbit/s, bucket 927 KB, FIFO 51 packets


def truth(name: str) -> dict:
    if name == "p14":
        from bloatlab.advise import campaign as cp

        return cp.draw(15, 8)[14]
    port, cir, bucket_ms, fifo, rtt, *loss = TRUTHS[name]
    rate = port * cir
    bdp = rate * 1e6 * rtt / 1e3 / 8
    return {"index": 900, "limiter": "policer", "port_mbps": port, "up_port_mbps": port / 2, "down_mbps": rate,
            "up_mbps": port / 2 * cir, "base_rtt_ms": rtt, "buffer_bdp": fifo / bdp, "buffer_bytes": fifo,
            "cir_fraction": cir, "bucket_ms": bucket_ms, "loss": loss[0] if loss else 0.0, "observable": "policer", "variable": None}


def check(name: str, out: str, before: bool) -> dict:
    from bloatlab.advise import campaign as cp, recommend
    from bloatlab.advise.trains import policer_figures
    from bloatlab.advise.path import Path

    t = truth(name)
    pdir = os.path.join(out, name)
    os.makedirs(pdir, exist_ok=True)
    t0 = time.monotonic()
    m = cp._measure(t, pdir)
    d = m["down"]
    path = Path.from_twin(os.path.join(pdir, "twin.toml"))
    dur = cp.campaign_duration(path.base_rtt_ms, True)
    c = recommend.simulate(path, recommend.Candidate("cubic", "as-is", None), duration_s=dur)
    k = cp._kernel(t, dur, "cubic", "as-is", None)
    mt = cp._kernel(t, dur, "cubic", "as-is", None, engine="sim")
    bdp = t["down_mbps"] * 1e6 / 8 * t["base_rtt_ms"] / 1e3
    rec = {"name": name,
           "truth": {"bucket_bytes": max(t["down_mbps"] * 1e6 / 8 * t["bucket_ms"] / 1e3, 3000),
                     "port_buffer_bytes": int(max(t["buffer_bdp"] * bdp, 3000)), "port_mbps": t["port_mbps"],
                     "down_mbps": t["down_mbps"]},
           "measured": {k2: d.get(k2) for k2 in ("limiter", "rate_mbps", "port_mbps", "bucket_bytes", "port_buffer_bytes",
                                                  "port_buffer_min_bytes", "train_evidence", "train_note")},
           "measure_s": m["elapsed_s"], "twin_cubic": {"goodput_mbps": c.goodput_mbps, "ensemble": c.ranges},
           "kernel_cubic": k, "model_truth_cubic": mt, "duration_s": dur}
    if before and d.get("train"):
        _, b1, _ = policer_figures(d["train"], d["rate_mbps"])
        path.bucket_bytes, path.port_buffer_bytes = b1, None
        c0 = recommend.simulate(path, recommend.Candidate("cubic", "as-is", None), duration_s=dur)
        rec["before"] = {"bucket_bytes": b1, "twin_cubic": c0.goodput_mbps}
    rec["wall_s"] = time.monotonic() - t0
    with open(os.path.join(pdir, "check.json"), "w") as f:
        json.dump(rec, f, indent=1)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=["p14", *TRUTHS])
    ap.add_argument("--out", default="/tmp/policer-check")
    ap.add_argument("--before", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("policer_check: the emulator needs root")
    for n in a.names:
        r = check(n, a.out, a.before)
        tr, me = r["truth"], r["measured"]
        rel = lambda x, y: f"{(x / y - 1) * 100:+.1f} %" if x and y else "-"
        print(f"{n}: bucket {me['bucket_bytes']} ({rel(me['bucket_bytes'], tr['bucket_bytes'])}), port buffer "
              f"{me['port_buffer_bytes']} ({rel(me['port_buffer_bytes'], tr['port_buffer_bytes'])}; at least "
              f"{me['port_buffer_min_bytes']}), twin CUBIC {r['twin_cubic']['goodput_mbps']:.3g}, kernel "
              f"{r['kernel_cubic']['goodput_mbps']:.3g} ({rel(r['twin_cubic']['goodput_mbps'], r['kernel_cubic']['goodput_mbps'])}"
              f"{', FLAGGED' if r['kernel_cubic']['timing_flagged'] else ''}), model on the truth "
              f"{r['model_truth_cubic']['goodput_mbps']:.3g}"
              + (f"; before: bucket {r['before']['bucket_bytes']}, twin {r['before']['twin_cubic']:.3g}" if "before" in r else ""),
              flush=True)


if __name__ == "__main__":
    main()
