"""Simulator speed on WiFi scenarios (docs/wifi.md): simulated seconds per
wall second and wall time per TXOP, for 30 stations (and 10 and 100 for scale)
under each MAC design.

Scenario: N stations (40 % MCS 15, 30 % MCS 7, 20 % MCS 3, 10 % MCS 0, as
`reproduce make-wifi-fast`'s many-stations part), one CUBIC download per
station (10 ms), a ping from one station every 100 ms, 60 s simulated.
Each point runs 3 times; the table gives the fastest (the least disturbed by
other jobs on the machine). "Simulated s per wall s" and "µs per TXOP" use
the engine's own wall time (`meta.wall_s`); "end to end" is `bloatlab.run`
as a user calls it.

Run: .venv/bin/python bench/wifi_bench.py [--out bench/out/wifi_bench.md] [--json ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import bloatlab
from bloatlab.study.experiments.make_wifi_fast import many_doc


def scenario(n: int, mac: str, duration: str) -> dict:
    doc = many_doc(n, duration)
    doc["wifi"]["mac"] = mac
    for f in doc["flow"]:
        f.pop("size", None)  # bulk downloads: the medium stays loaded for the whole run
    doc["probe"] = doc["probe"][:1]
    return doc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/wifi_bench.md")
    ap.add_argument("--json", default="bench/out/wifi_bench.json")
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rows = []
    for n in (10, 30, 100):
        for mac in ("legacy", "fq", "airtime"):
            walls, engine, s = [], [], None
            for _ in range(a.repeat):
                t = time.perf_counter()
                s = bloatlab.run(scenario(n, mac, a.duration)).summary
                walls.append(time.perf_counter() - t)
                engine.append(s["meta"]["wall_s"])
            sim_s = s["duration_s"]
            txops = s["wifi"]["txops"]
            best, med = min(engine), statistics.median(engine)
            rows.append({"stations": n, "mac": mac, "sim_s": sim_s, "wall_best_s": best, "wall_median_s": med,
                         "end_to_end_best_s": min(walls),
                         "sim_per_wall": sim_s / best, "txops": txops, "us_per_txop": best / txops * 1e6,
                         "events": s["meta"]["events"], "packets": s["meta"]["packets"],
                         "ns_per_packet": best / s["meta"]["packets"] * 1e9,
                         "total_goodput_mbps": s["total_goodput_mbps"]})
            r = rows[-1]
            print(f"{n:>3} stations {mac:<7}: {r['sim_per_wall']:7.0f} simulated s per wall s (engine; end to end "
                  f"{sim_s / r['end_to_end_best_s']:.0f}), "
                  f"{r['us_per_txop']:6.2f} µs per TXOP, {r['ns_per_packet']:6.0f} ns per packet "
                  f"({txops} TXOPs, {r['packets']} packets, {r['total_goodput_mbps']:.1f} Mbit/s)")
    for path in (a.out, a.json):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"machine": platform.node(), "cpus": os.cpu_count(), "load": os.getloadavg(), "rows": rows}, f, indent=1)
    with open(a.out, "w") as f:
        f.write(f"# WiFi simulator speed\n\n`{' '.join(['.venv/bin/python', 'bench/wifi_bench.py'])}` on "
                f"{platform.node()} ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end), "
                f"{a.duration} simulated, best of {a.repeat}.\n\n")
        f.write("Engine wall time (`meta.wall_s`: the simulator alone); end to end adds Python's scenario "
                "resolution, JSON and the time-series DataFrames.\n\n")
        f.write("| stations | mac | simulated s / wall s | end to end | µs per TXOP | ns per packet | TXOPs | goodput Mbit/s |\n")
        f.write("|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['stations']} | {r['mac']} | {r['sim_per_wall']:.0f} | {r['sim_s'] / r['end_to_end_best_s']:.0f} | "
                    f"{r['us_per_txop']:.2f} | "
                    f"{r['ns_per_packet']:.0f} | {r['txops']} | {r['total_goodput_mbps']:.1f} |\n")
    print(f"written: {a.out}")


if __name__ == "__main__":
    main()
