"""The 1000-flow run against the 1-flow run, whole processes (issue 34 §5: <= 2x the wall time, <= 200 MB).

``.venv/bin/python bench/flows_ratio.py [--pairs 21]``: writes the two scenarios ``bench/same_results.py`` runs as
``flows-1`` and ``flows-1000`` (1 Gbit/s, 1 BDP FIFO, 100 ms, 10 s, CUBIC), then runs ``python -m bloatlab run F
--json`` on each in turn, A B A B ..., after one warm-up of each, the output discarded. Each run's CPU (user + sys)
and peak RSS come from the operating system's accounting of the finished child (``os.wait4``, as ``/usr/bin/time
-v`` reads them), its wall time from a monotonic clock around it. Prints the medians and, pair by pair, the ratios
1000 flows / 1 flow with their median: the machine's load moves absolute times by up to 2x, the ratio of
interleaved pairs much less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from same_results import SCALING  # noqa: E402  (one scenario text for both benchmarks)


def one(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one whole process."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=21, help="interleaved A/B pairs counted (default 21)")
    a = ap.parse_args(argv)
    if not 1 <= a.pairs <= 1000:
        ap.error(f"--pairs: {a.pairs} is not within 1..1000")
    with tempfile.TemporaryDirectory(prefix="bloatlab-flows-") as tmp:
        files = {}
        for n in (1, 1000):
            files[n] = Path(tmp) / f"f{n}.toml"
            files[n].write_text(SCALING.format(n=n))
        cmds = {n: [sys.executable, "-m", "bloatlab", "run", str(f), "--json"] for n, f in files.items()}
        for n in (1000, 1):
            one(cmds[n])  # warm-up: bytecode and page cache
        runs = {1: [], 1000: []}
        for _ in range(a.pairs):
            for n in (1000, 1):
                runs[n].append(one(cmds[n]))
    med = {n: [statistics.median(r[i] for r in runs[n]) for i in range(3)] for n in runs}
    ratio = [statistics.median(a_[i] / b[i] for a_, b in zip(runs[1000], runs[1])) for i in range(2)]
    load = os.getloadavg()[0]
    print(f"{a.pairs} pairs, load {load:.1f}")
    for n in (1000, 1):
        print(f"{n:>5} flows: wall {med[n][0]:.3f} s, CPU {med[n][1]:.3f} s, peak RSS {med[n][2]:.1f} MB (medians)")
    print(f"1000 / 1: wall {ratio[0]:.2f}x, CPU {ratio[1]:.2f}x (median of the pairs' ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
