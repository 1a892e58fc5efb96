"""Benchmark: the full imc2019 grid (640 runs of 60 s) in the simulator.

    .venv/bin/python bench/study/imc2019_grid.py [--out DIR] [--jobs N] [--rates 10Mbit,1000Mbit]

Runs only the ``grid`` part of ``bloatlab reproduce imc2019`` (8 RTTs × 8
bandwidths × 5 buffers × BBR/CUBIC, 60 s each) into a fresh results
directory and prints the wall time, the CPU time (this process and its pool's
workers, user + sys: what to compare on a shared machine), the machine and the
load average, for bench/study/RESULTS.md. The IMC 2019 testbed needed about
53 hours for its 640 iperf3 runs. ``--rates`` keeps the grid's points at those bandwidths only
(80 each), for a quick profile of one part of it.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sys
import time


def main(argv=None) -> int:
    from bloatlab.study import sweep
    from bloatlab.study.experiments import get
    from bloatlab.study.spec import Sweep

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/bloatlab-bench-imc2019-grid")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--rates", default=None, help="comma-separated bandwidths of the grid to run (default: all 8)")
    args = ap.parse_args(argv)
    full = get("imc2019").sweep(quick=False)
    grid = Sweep("imc2019-grid-bench", [p for p in full.parts if p.name == "grid"])
    if args.rates is not None:
        from bloatlab.study.experiments.imc2019 import RATES

        rates = args.rates.split(",")
        if not rates or any(r not in RATES for r in rates):
            print(f"--rates: expected some of {','.join(RATES)}, got {args.rates!r}", file=sys.stderr)
            return 2
        part = grid.parts[0]
        part.points = [p for p in part.points if p["link.down.rate"] in rates]
    n = len(grid.points())
    shutil.rmtree(args.out, ignore_errors=True)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    rep = sweep.run(grid, args.out, jobs=args.jobs, progress=sys.stderr.isatty())
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    cpu = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    user, sys_ = sum(r.ru_utime for r in cpu), sum(r.ru_stime for r in cpu)
    from bloatlab.study.store import Store

    runs = Store(args.out).runs
    print(f"points {n}, stored {len(runs)}, failed {len(rep.failed)}")
    print(f"wall {wall:.1f} s ({wall / 60:.2f} min); sum of per-run engine wall {runs['wall_s'].sum():.1f} s; "
          f"slowest run {runs['wall_s'].max():.2f} s")
    print(f"cpu {user + sys_:.1f} s ({user:.1f} user + {sys_:.1f} sys; this process and its workers, imports included)")
    print(f"machine: {platform.node()} {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}")
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f} (1 min)")
    return 0 if not rep.failed and len(runs) == n else 1


if __name__ == "__main__":
    sys.exit(main())
