"""What a resume that has nothing to run costs: a 640-point store (the size of
the imc2019 grid; tiny runs, so that the store is quick to make) is swept
again by a fresh ``bloatlab sweep`` process, as a user re-runs the command.
With several ``--code`` checkouts (their ``python/`` directories, each with
its own native module) each gets its own store, made by itself, and the
resumes alternate between them (A B A B ...), so that the machine's load
falls on all alike; the medians are printed, one line per checkout, and the
median of the paired differences against the first.

    .venv/bin/python bench/store/resume.py --code python --code ../main/python [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

SCENARIO = """
name = "resume-bench"
duration = "0.5s"
seed = 1
[link.down]
rate = "2Mbit"
[link.up]
rate = "2Mbit"
[[flow]]
cc = "cubic"
rtt = "20ms"
"""

#: 4 controls x 16 losses x 10 RTTs = 640 points
EXP = """
name = "resume-bench"
base = "scenario.toml"
[grid]
"flow.0.cc" = ["cubic", "bbr", "reno", "bbr3"]
"link.down.loss" = ["0%", "0.01%", "0.02%", "0.05%", "0.1%", "0.2%", "0.5%", "1%", "2%", "3%", "4%", "5%", "6%",
                    "8%", "10%", "15%"]
"flow.0.rtt" = ["5ms", "10ms", "15ms", "20ms", "30ms", "40ms", "60ms", "80ms", "100ms", "150ms"]
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sweep(code: str, d: str) -> tuple[float, float, str]:
    """One ``bloatlab sweep`` process of checkout ``code`` into ``d``: (wall s, CPU s, what it said)."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(code))
    t0, c0 = time.perf_counter(), _cpu()
    res = subprocess.run([sys.executable, "-m", "bloatlab", "sweep", os.path.join(d, "exp.toml"), "--out",
                          os.path.join(d, "out"), "-q"], env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    if res.returncode != 0:
        sys.exit(f"{code}: sweep failed: {res.stderr}")
    return wall, cpu, res.stdout.strip() + (" | " + res.stderr.strip() if res.stderr.strip() else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", action="append", required=True, metavar="DIR", help="a checkout's python/ directory")
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dirs = []
        for i, code in enumerate(a.code):
            d = os.path.join(tmp, str(i))
            os.makedirs(d)
            open(os.path.join(d, "scenario.toml"), "w").write(textwrap.dedent(SCENARIO))
            open(os.path.join(d, "exp.toml"), "w").write(textwrap.dedent(EXP))
            wall, _, said = sweep(code, d)
            print(f"{code}: store made in {wall:.1f} s ({said})", flush=True)
            dirs.append(d)
        walls: list[list[float]] = [[] for _ in a.code]
        cpus: list[list[float]] = [[] for _ in a.code]
        last = [""] * len(a.code)
        for _ in range(a.repeats):
            for i, code in enumerate(a.code):
                w, c, last[i] = sweep(code, dirs[i])
                walls[i].append(w)
                cpus[i].append(c)
        for code, w, c, said in zip(a.code, walls, cpus, last):
            print(f"{code}: resume of 640 stored points, wall median {statistics.median(w):.3f} s (min {min(w):.3f}, "
                  f"max {max(w):.3f}), CPU median {statistics.median(c):.3f} s (min {min(c):.3f}), n {len(w)}; "
                  f"it said: {said}")
        for i in range(1, len(a.code)):  # each resume against the first checkout's just before it
            for what, xs in (("wall", walls), ("CPU", cpus)):
                d = sorted(x - y for x, y in zip(xs[0], xs[i]))
                print(f"{a.code[0]} - {a.code[i]}, paired {what}: median {1e3 * statistics.median(d):+.0f} ms "
                      f"(middle half {1e3 * d[len(d) // 4]:+.0f} .. {1e3 * d[(3 * len(d)) // 4]:+.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
