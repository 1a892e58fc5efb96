"""Benchmark: the full imc2019 grid (640 runs of 60 s) in the simulator.

    .venv/bin/python bench/study/imc2019_grid.py [--out DIR] [--jobs N]

Runs only the ``grid`` part of ``bloatlab reproduce imc2019`` (8 RTTs × 8
bandwidths × 5 buffers × BBR/CUBIC, 60 s each) into a fresh results
directory and prints the wall time, the machine and the load average, for
bench/study/RESULTS.md. The IMC 2019 testbed needed about 53 hours for its
640 iperf3 runs.
"""

from __future__ import annotations

import argparse
import os
import platform
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
    args = ap.parse_args(argv)
    full = get("imc2019").sweep(quick=False)
    grid = Sweep("imc2019-grid-bench", [p for p in full.parts if p.name == "grid"])
    n = len(grid.points())
    shutil.rmtree(args.out, ignore_errors=True)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    rep = sweep.run(grid, args.out, jobs=args.jobs, progress=sys.stderr.isatty())
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    from bloatlab.study.store import Store

    runs = Store(args.out).runs
    print(f"points {n}, stored {len(runs)}, failed {len(rep.failed)}")
    print(f"wall {wall:.1f} s ({wall / 60:.2f} min); sum of per-run engine wall {runs['wall_s'].sum():.1f} s; "
          f"slowest run {runs['wall_s'].max():.2f} s")
    print(f"machine: {platform.node()} {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}")
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f} (1 min)")
    return 0 if not rep.failed and len(runs) == n else 1


if __name__ == "__main__":
    sys.exit(main())
