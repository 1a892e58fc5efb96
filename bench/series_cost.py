#!/usr/bin/env python3
"""What the time series cost on their way from the engine to Python (issue 9 §2).

The 1000-flow dumbbell (1 Gbit/s, 100 ms base RTT, 1-BDP tail-drop FIFO, CUBIC
bulk flows, 10 s simulated, seed 1), each line one whole process under
``/usr/bin/time -v`` (wall time and peak RSS), best of ``--repeat`` runs:

  * engine: the simulator alone, without Python (``cargo run --example engine_only``
    on the resolved scenario; the raw result, time series included, is still in
    memory when its peak RSS is read): the engine's own time and memory;
  * ``bloatlab run FILE --json``: the CLI, summary on stdout;
  * ``bloatlab run FILE --json --out DIR``: the same, plus the time series as
    pandas DataFrames written to Parquet;
  * Python alone: ``import bloatlab, pandas, pyarrow`` (the interpreter's floor).

Issue 9's goal: the whole ``bloatlab run`` process within 1.3x of the engine's
time and its peak memory within 2x of the engine's own.

    python3 bench/series_cost.py [--repeat N] [--duration S] [--before DIR] [--out FILE.md] [--json FILE.json]

Python's bytecode is cached as in an installed package (``PYTHONDONTWRITEBYTECODE``
is dropped from the environment, one untimed warm-up run per line).

``--before DIR``: also run the two ``bloatlab run`` lines with another build of
the Python package first on the path (DIR holds ``bloatlab/`` with its own
``_native`` module, e.g. an older commit: ``git archive COMMIT | tar -x -C SRC``,
``CARGO_TARGET_DIR=T cargo build --release -p bloatlab-py`` in SRC, then
``cp T/release/lib_native.so SRC/python/bloatlab/_native.abi3.so`` and
``--before SRC/python``), each run interleaved with this build's so that both
see the same machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_vs_ns3 import BLOATLAB_BIN, REPO, machine_info, scenario_toml  # noqa: E402

PY = REPO / ".venv" / "bin" / "python"
FLOWS, RATE_BPS, RTT_MS = 1000, 1e9, 100.0


def timed(cmd: list[str], pythonpath: str | None = None) -> dict:
    """Run ``cmd`` under /usr/bin/time -v (with ``pythonpath`` first on
    Python's path if given): wall s, peak RSS MB, stdout."""
    env = dict(os.environ)
    # as installed: Python's modules compiled once and cached (not compiled anew by every process)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        p = subprocess.run(["/usr/bin/time", "-v", "-o", tf.name] + cmd, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, env=env)
        report = Path(tf.name).read_text()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", report)
    wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report).group(1))
    return {"wall_s": wall, "peak_rss_mb": rss_kb / 1024.0, "stdout": p.stdout}


def best(runs: list[dict]) -> dict:
    """The fastest run's figures, the smallest peak RSS seen, and the median
    over the runs of process wall time / the same run's engine time (the
    ratio holds still when the machine's load moves both)."""
    import statistics

    b = dict(min(runs, key=lambda r: r["wall_s"]))
    b["peak_rss_mb"] = min(r["peak_rss_mb"] for r in runs)
    ratios = [r["wall_s"] / r["engine_wall_s"] for r in runs if r.get("engine_wall_s")]
    b["wall_over_engine"] = statistics.median(ratios) if ratios else None
    extra = [r["wall_s"] - r["engine_wall_s"] for r in runs if r.get("engine_wall_s")]
    b["beyond_engine_s"] = statistics.median(extra) if extra else None
    b["runs"] = [{k: v for k, v in r.items() if k != "stdout"} for r in runs]
    b.pop("stdout", None)
    return b


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per line, the best is kept (default 3)")
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds (default 10)")
    ap.add_argument("--out", metavar="FILE.md", help="write the markdown table to FILE.md")
    ap.add_argument("--json", metavar="FILE.json", help="also write the figures as JSON")
    ap.add_argument("--before", metavar="DIR", help="a directory holding another build's bloatlab/ package, "
                    "measured side by side")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat: expected a count >= 1, got {args.repeat}")
    if not args.duration > 0:
        ap.error(f"--duration: expected seconds > 0, got {args.duration:g}")
    argv_s = " ".join(["python3", "bench/series_cost.py"] + list(sys.argv[1:] if argv is None else argv))
    if not BLOATLAB_BIN.exists():
        print(f"{BLOATLAB_BIN} does not exist yet (make setup): nothing to measure", file=sys.stderr)
        return 1
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "bloatlab-sim", "--example", "engine_only"],
                   cwd=REPO, check=True)
    engine_bin = REPO / "target" / "release" / "examples" / "engine_only"
    info = machine_info()

    with tempfile.TemporaryDirectory(prefix="bloatlab-series-cost-") as d:
        toml = Path(d) / "flows1000.toml"
        toml.write_text(scenario_toml(name="series-cost", cc="cubic", loss=0.0, duration_s=args.duration,
                                      rate_bps=RATE_BPS, rtt_ms=RTT_MS, flows=FLOWS))
        resolved = Path(d) / "resolved.json"
        subprocess.run([str(PY), "-c", "import json, sys, bloatlab; "
                        "json.dump(bloatlab.load_scenario(sys.argv[1]).resolved(), open(sys.argv[2], 'w'))",
                        str(toml), str(resolved)], check=True)
        lines = {
            "engine": [str(engine_bin), str(resolved)],
            "run": [str(BLOATLAB_BIN), "run", str(toml), "--json"],
            "run_out": [str(BLOATLAB_BIN), "run", str(toml), "--json", "--out", str(Path(d) / "out"), "--force"],  # each run replaces the last
            "python": [str(PY), "-c", "import bloatlab, pandas, pyarrow"],
        }
        if args.before and not (Path(args.before) / "bloatlab" / "__init__.py").exists():
            ap.error(f"--before: {args.before} holds no bloatlab/ package")
        figures: dict[str, dict] = {}
        for name, cmd in lines.items():
            builds = [("", None)] + ([("before_", args.before)] if args.before and name.startswith("run") else [])
            runs: dict[str, list] = {label: [] for label, _ in builds}
            for _, path in builds:  # warm-up, not counted: bytecode cached, files in the page cache
                timed(cmd, path)
            for _ in range(args.repeat):
                for label, path in builds:
                    r = timed(cmd, path)
                    if name == "engine":
                        r["engine_wall_s"] = json.loads(r["stdout"].strip().splitlines()[-1])["wall_s"]
                    elif name.startswith("run"):
                        r["engine_wall_s"] = json.loads(r["stdout"])["meta"]["wall_s"]
                    runs[label].append(r)
                    print(f"{label}{name}: {r['wall_s']:.2f} s, {r['peak_rss_mb']:.0f} MB", file=sys.stderr)
            for label, _ in builds:
                figures[label + name] = best(runs[label])

    eng = figures["engine"]

    def row(label: str, cmd: str, f: dict) -> str:
        e, r, x = f.get("engine_wall_s"), f.get("wall_over_engine"), f.get("beyond_engine_s")
        return (f"| {label} | `{cmd}` | {'-' if e is None else f'{e:.2f}'} | {f['wall_s']:.2f} | "
                f"{'-' if x is None else f'{x:.2f}'} | {'-' if r is None else f'{r:.2f}x'} | {f['peak_rss_mb']:.0f} | "
                f"{f['peak_rss_mb'] / eng['peak_rss_mb']:.2f}x |")

    md = "\n".join([
        "# The time series' cost from the engine to Python", "",
        f"Command: `{argv_s}`  ",
        f"{FLOWS} CUBIC flows, 1 Gbit/s, {RTT_MS:g} ms base RTT, 1-BDP FIFO, {args.duration:g} s simulated, seed 1; "
        f"{args.repeat} runs per line, each a whole process under `/usr/bin/time -v`: engine s and process s of the "
        "fastest run; process - engine and process / engine: medians over the runs of each run's process wall time "
        "less / over its own `meta.wall_s`; the smallest peak RSS, against the engine alone's.",
        "",
        f"- machine: {info['cpu']}, {info['cores']} cores, {info['memory']}, Linux {info['kernel']}, "
        f"load average at start {info['loadavg_at_start']}, at the end {_loadavg()}; Python {info['python']}", "",
        "| what | command | engine s (meta.wall_s) | process s | process - engine s | process / engine | "
        "peak RSS MB | peak RSS / engine alone's |",
        "|---|---|---|---|---|---|---|---|",
        row("engine alone", "target/release/examples/engine_only resolved.json", eng)]
        + ([row("before: bloatlab run", "bloatlab run FILE --json", figures["before_run"])] if args.before else [])
        + [row("bloatlab run", "bloatlab run FILE --json", figures["run"])]
        + ([row("before: bloatlab run, Parquet out", "bloatlab run FILE --json --out DIR", figures["before_run_out"])]
           if args.before else [])
        + [row("bloatlab run, Parquet out", "bloatlab run FILE --json --out DIR", figures["run_out"]),
        row("Python floor", "python -c 'import bloatlab, pandas, pyarrow'", figures["python"]),
        "",
        "Goal (issue 9 §2): `bloatlab run` within 1.3x of the engine's time and 2x of its peak memory.", ""])
    print(md)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(md)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"machine": info, "duration_s": args.duration, "repeat": args.repeat,
                                               "figures": figures}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
