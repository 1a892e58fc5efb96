#!/usr/bin/env python3
"""How bloatlab's simulator scales: wall time and peak RSS against link rate and flow count.

Two sweeps of the dumbbell (100 ms base RTT, 1-BDP tail-drop FIFO, no random loss,
CUBIC bulk flows), each point one whole `bloatlab run FILE --json` process:

  * link rate: 10 Mbit/s, 100 Mbit/s, 1 Gbit/s, 10 Gbit/s; 1 flow; 10 s simulated;
  * flows: 1, 10, 100, 1000 (scenario `count = N`) on 1 Gbit/s; 10 s simulated.

Work grows with the packets simulated (rate x time), so the table also gives packets per
wall second and the wall time per simulated second.

    python3 bench/sim_scaling.py [--quick] [--out FILE.md] [--json FILE.json]

--quick: 2 simulated seconds instead of 10. If .venv/bin/bloatlab does not exist yet the
script says so and writes that into the table file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_vs_ns3 import BLOATLAB_BIN, f, machine_info, rate_units, run_bloatlab  # noqa: E402

RATES_BPS = [10e6, 100e6, 1e9, 10e9]
FLOW_COUNTS = [1, 10, 100, 1000]
RTT_MS = 100.0
FLOWS_RATE_BPS = 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 simulated seconds instead of 10 (smoke test)")
    ap.add_argument("--duration", type=float, help="simulated seconds (overrides --quick)")
    ap.add_argument("--out", metavar="FILE.md", help="write the markdown tables to FILE.md")
    ap.add_argument("--json", metavar="FILE.json", help="also write every raw measurement as JSON")
    ap.add_argument("--bloatlab", default=str(BLOATLAB_BIN), help="the bloatlab CLI (default .venv/bin/bloatlab)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="give up on one point after this many wall seconds (default 1800)")
    args = ap.parse_args(argv)
    argv_s = " ".join(["python3", "bench/sim_scaling.py"] + list(sys.argv[1:] if argv is None else argv))
    if args.duration is None:
        args.duration = 2.0 if args.quick else 10.0
    elif not args.duration > 0:
        ap.error(f"--duration: expected seconds > 0, got {args.duration:g}")
    if not args.timeout > 0:
        ap.error(f"--timeout: expected seconds > 0, got {args.timeout:g}")

    info = machine_info()
    head = ["# bloatlab simulator scaling", "", f"Command: `{argv_s}`  ",
            f"Dumbbell, {RTT_MS:g} ms base RTT, 1-BDP tail-drop FIFO, no random loss, CUBIC bulk flows, "
            f"{args.duration:g} s simulated, seed 1.", "",
            f"- machine: {info['cpu']}, {info['cores']} cores, {info['memory']}, Linux {info['kernel']}, "
            f"load average at start {info['loadavg_at_start']}; Python {info['python']}", ""]

    bloatlab = Path(args.bloatlab)
    if not bloatlab.exists():
        msg = f"bloatlab CLI {bloatlab} does not exist yet: nothing to measure."
        print(msg, file=sys.stderr)
        md = "\n".join(head + [f"**{msg}**", ""])
        print(md)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(md)
        return 0

    points = [("rate", r, 1) for r in RATES_BPS] + [("flows", FLOWS_RATE_BPS, n) for n in FLOW_COUNTS]
    results = []
    for sweep, rate, n in points:
        label = f"{sweep:<5} {rate_units(rate)[0]:>8} x {n:<4} flows"
        print(f"bloatlab {label} {args.duration:g}s ...", end="", flush=True, file=sys.stderr)
        s = run_bloatlab(bloatlab, name=f"scaling-{sweep}", cc="cubic", loss=0.0, duration_s=args.duration,
                         rate_bps=rate, rtt_ms=RTT_MS, flows=n, timeout_s=args.timeout)
        print(f" {f(s.wall_s)} s, {f(s.goodput_mbps)} Mbit/s{'' if s.ok else ' FAILED ' + s.error}",
              file=sys.stderr)
        results.append({"sweep": sweep, "rate_bps": rate, "flows": n, "side": s})

    def table(sweep: str, title: str) -> list[str]:
        rows = [f"## {title}", "",
                "| rate | flows | wall s | wall s per simulated s | engine wall s | total goodput Mbit/s | "
                "packets | pkts/s | events | events/s | peak RSS MB |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            if r["sweep"] != sweep:
                continue
            s = r["side"]
            if not s.ok:
                rows.append(f"| {rate_units(r['rate_bps'])[0]} | {r['flows']} | failed after {f(s.wall_s)} s: "
                            f"{s.error.replace('|', '/')[:120]} | | | | | | | | {f(s.peak_rss_mb, '{:.1f}')} |")
                continue
            ev_s = s.events / s.wall_s if s.events is not None and s.wall_s else None
            rows.append(
                f"| {rate_units(r['rate_bps'])[0]} | {r['flows']} | {f(s.wall_s)} | "
                f"{f(s.wall_s / args.duration, '{:.3f}')} | {f(s.engine_wall_s)} | {f(s.goodput_mbps, '{:.1f}')} | "
                f"{f(s.packets, '{:,}')} | {f(s.pkts_per_s, '{:,.0f}')} | {f(s.events, '{:,}')} | "
                f"{f(ev_s, '{:,.0f}')} | {f(s.peak_rss_mb, '{:.1f}')} |")
        return rows + [""]

    md = "\n".join(head + table("rate", "Wall time vs link rate (1 flow)")
                   + table("flows", f"Wall time vs number of flows ({rate_units(FLOWS_RATE_BPS)[0]})")
                   + ["Wall time and peak RSS: the whole `bloatlab run` process (Python start-up included); "
                      "engine wall s, packets and events: `summary.meta` when the engine reports them.", ""])
    print(md)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(md)
    if args.json:
        data = {"machine": info, "duration_s": args.duration,
                "points": [{"sweep": r["sweep"], "rate_bps": r["rate_bps"], "flows": r["flows"],
                            "bloatlab": vars(r["side"])} for r in results]}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 0 if all(r["side"].ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
