"""Emulator benchmarks (needs root): writes bench/emu/RESULTS.md.

1. Throughput: one CUBIC flow through the emulated link at rising rates
   (10 ms RTT, 1 BDP buffer, 8 s). "Fills the link" = goodput at least 90 %
   of the payload capacity (rate x 1448/1500). The highest such rate is the
   emulator's ceiling on this machine.
2. Delay accuracy: latency probes (UDP echo, 64-byte payload, one per ms) on
   an idle link at 10 Mbit/s, 100 Mbit/s and 1 Gbit/s with a 20 ms RTT.
   Error = measured RTT - (configured RTT + the probe's own serialization
   both ways). It includes the kernels' UDP path and the probe's timestamps,
   so it bounds the emulator's error from above.
3. The emulator's own lateness (write time - scheduled time) in every run.

    sudo .venv/bin/python bench/emu/bench.py [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import bloatlab  # noqa: E402

PAYLOAD = 1448 / 1500
FILL = 0.90


def throughput(rate_mbit: float, seconds: int, cc: str = "cubic") -> dict:
    doc = {"name": f"tput-{rate_mbit:g}M", "duration": f"{seconds}s",
           "link": {"down": {"rate": f"{rate_mbit:g}Mbit", "buffer": "1bdp"}},
           "flow": [{"cc": cc, "rtt": "10ms"}]}
    s = bloatlab.run(doc, engine="emu").summary
    g = s["flows"][0]["goodput_mbps"]
    late = s["meta"]["lateness"]
    return {"rate": rate_mbit, "goodput": g, "fill": g / (rate_mbit * PAYLOAD), "util": s["links"]["down"]["utilization"],
            "late_p50": late["p50_us"], "late_p99": late["p99_us"], "late_max": late["max_us"],
            "tun_drops": s["meta"].get("tun_drops", {})}


def delay(rate_mbit: float, seconds: int) -> dict:
    import numpy as np

    doc = {"name": f"delay-{rate_mbit:g}M", "duration": f"{seconds}s",
           "link": {"down": {"rate": f"{rate_mbit:g}Mbit", "buffer": "1bdp"},
                    "up": {"rate": f"{rate_mbit:g}Mbit", "buffer": "1bdp"}},
           # The scenario language needs a flow: a 1 kB transfer, over in the first 100 ms.
           "flow": [{"cc": "cubic", "rtt": "20ms", "size": "1KB"}],
           "probe": [{"interval": "1ms", "rtt": "20ms", "size": "64B"}]}
    r = bloatlab.run(doc, engine="emu")
    df = r.probes
    rtt = df[df["t"] > 0.5]["rtt_ms"].dropna().to_numpy()  # after the 1 kB transfer
    ser_ms = 2 * (64 + 28) * 8 / (rate_mbit * 1e6) * 1e3
    err_us = (rtt - 20.0 - ser_ms) * 1e3
    late = r.summary["meta"]["lateness"]
    return {"rate": rate_mbit, "n": len(err_us), "err_p50": float(np.percentile(err_us, 50)),
            "err_p99": float(np.percentile(err_us, 99)), "err_max": float(err_us.max()), "err_min": float(err_us.min()),
            "late_p50": late["p50_us"], "late_p99": late["p99_us"], "late_max": late["max_us"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter runs, fewer rates")
    a = ap.parse_args()
    secs = 4 if a.quick else 8
    rates = [100, 500, 1000, 2000] if a.quick else [100, 300, 500, 1000, 1500, 2000, 3000]
    tp = []
    for r in rates:
        print(f"throughput {r} Mbit/s ...", file=sys.stderr, flush=True)
        tp.append(throughput(r, secs))
    dl = []
    for r in (10, 100, 1000):
        print(f"delay {r} Mbit/s ...", file=sys.stderr, flush=True)
        dl.append(delay(r, 5 if a.quick else 10))
    best = max((t["rate"] for t in tp if t["fill"] >= FILL), default=None)
    lines = [
        "# Emulator benchmarks",
        "",
        f"Machine: {os.cpu_count()} cores, Linux {platform.release()}; {datetime.date.today()}. "
        "Command: `sudo .venv/bin/python bench/emu/bench.py` (or `make bench`).",
        "",
        "## Highest rate the kernel still fills",
        "",
        f"One CUBIC flow, 10 ms RTT, 1 BDP FIFO, {secs} s. Fill = goodput / (rate x 1448/1500); "
        f"the link counts as filled at >= {100 * FILL:.0f} %.",
        "",
        "| rate Mbit/s | goodput Mbit/s | fill | link utilization | lateness p50 / p99 / max µs |",
        "|---|---|---|---|---|",
    ]
    for t in tp:
        lines.append(f"| {t['rate']:g} | {t['goodput']:.1f} | {100 * t['fill']:.1f} % | {100 * t['util']:.1f} % | "
                     f"{t['late_p50']:.0f} / {t['late_p99']:.0f} / {t['late_max']:.0f} |")
    lines += ["", f"**Highest filled rate: {best:g} Mbit/s.**" if best else "**No rate was filled.**", "",
              "## Delay accuracy on an idle link", "",
              "Probes (64 B UDP payload, 1 per ms) with a configured 20 ms RTT. Error = measured RTT - 20 ms - the "
              "probe's serialization both ways; it includes the kernels' UDP path and the probe's timestamping.", "",
              "| rate Mbit/s | probes | error p50 µs | error p99 µs | error max µs | lateness p50 / p99 / max µs |",
              "|---|---|---|---|---|---|"]
    for d in dl:
        lines.append(f"| {d['rate']:g} | {d['n']} | {d['err_p50']:.0f} | {d['err_p99']:.0f} | {d['err_max']:.0f} | "
                     f"{d['late_p50']:.0f} / {d['late_p99']:.0f} / {d['late_max']:.0f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
