#!/usr/bin/env python3
"""Does a change leave the simulator's results as they were? A fingerprint of a set of runs, saved once on
the code before a change and checked on the code after it (issue 34 §5: a data-layout or bookkeeping change
must not move one byte of the model's output).

Each case is one whole `python -m bloatlab run FILE --json` process (the CLI's summary, its text as printed)
plus the run's three time-series tables through the Python API (each table's Arrow IPC stream bytes). The
only field masked is `meta.wall_s`, the engine's own clock reading; everything else must be byte-identical.

    PYTHONPATH=CHECKOUT/python python bench/same_results.py --save DIR    # on the code before
    PYTHONPATH=CHECKOUT/python python bench/same_results.py --check DIR   # on the code after: exit 1 if any differs

The cases: the scaling section's 1-flow and 1000-flow runs (CUBIC, 1 Gbit/s, 100 ms, 1-BDP FIFO, 10 s) and
gallery scenarios with random loss (lossy-download, BBR at 20 % loss), BBR (bbr-x4), fq_codel
(home-line-bloat), a WiFi medium (wifi-anomaly) and CAKE (home-line-cake-shaped), shortened where noted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCALING = """name = "scaling-flows"
duration = "10s"
seed = 1
[link.down]
rate = "1Gbit"
buffer = "1bdp"
qdisc = "fifo"
[[flow]]
cc = "cubic"
direction = "down"
rtt = "100ms"
count = {n}
"""
# (case name, scenario file or None for the scaling text, flow count, --set overrides)
CASES = [
    ("flows-1", None, 1, []),
    ("flows-1000", None, 1000, []),
    ("lossy-download", "scenarios/gallery/lossy-download.toml", 0, ["duration=60s"]),
    ("bbr-x4", "scenarios/gallery/bbr-x4.toml", 0, ["duration=10s"]),
    ("home-line-bloat", "scenarios/gallery/home-line-bloat.toml", 0, ["duration=10s"]),
    ("home-line-cake-shaped", "scenarios/gallery/home-line-cake-shaped.toml", 0, ["duration=10s"]),
    ("wifi-anomaly", "scenarios/wifi-anomaly.toml", 0, ["duration=10s"]),
]
WALL = re.compile(rb'("wall_s": )[0-9.eE+-]+')


def case_file(tmp: Path, name: str, path: str | None, n: int) -> Path:
    if path is not None:
        return ROOT / path
    f = tmp / f"{name}.toml"
    f.write_text(SCALING.format(n=n))
    return f


def fingerprint(tmp: Path) -> dict:
    import pyarrow as pa

    import bloatlab
    from bloatlab.result import SERIES

    out = {}
    for name, path, n, sets in CASES:
        f = case_file(tmp, name, path, n)
        cmd = [sys.executable, "-m", "bloatlab", "run", str(f), "--json"] + [a for s in sets for a in ("--set", s)]
        p = subprocess.run(cmd, capture_output=True, env=os.environ.copy())
        if p.returncode != 0:
            raise SystemExit(f"{name}: exit {p.returncode}: {p.stderr.decode()[-400:]}")
        text = WALL.sub(rb"\1<masked>", p.stdout)
        res = bloatlab.run(str(f), overrides=sets)
        tables = {}
        for t in SERIES:
            tbl = res.table(t)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, tbl.schema) as w:
                w.write_table(tbl)
            tables[t] = {"rows": tbl.num_rows, "sha256": hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()}
        out[name] = {"json_sha256": hashlib.sha256(text).hexdigest(), "json_bytes": len(text), "tables": tables,
                     "json": text.decode()}
        print(f"{name}: json {out[name]['json_sha256'][:16]} ({len(text)} B); "
              + ", ".join(f"{t} {v['rows']} rows {v['sha256'][:12]}" for t, v in tables.items()), file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", metavar="DIR", help="write the fingerprint (and each case's JSON) into DIR")
    g.add_argument("--check", metavar="DIR", help="compare against the fingerprint saved in DIR; exit 1 on a difference")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bloatlab-same-") as tmp:
        fp = fingerprint(Path(tmp))
    if args.save:
        d = Path(args.save)
        d.mkdir(parents=True, exist_ok=True)
        (d / "fingerprint.json").write_text(json.dumps(fp, indent=1))
        print(f"saved {len(fp)} cases in {d / 'fingerprint.json'}")
        return 0
    ref_path = Path(args.check) / "fingerprint.json"
    try:
        ref = json.loads(ref_path.read_text())
    except (OSError, ValueError) as e:
        print(f"--check: cannot read {ref_path}: {e}", file=sys.stderr)
        return 2
    bad = 0
    for name, now in fp.items():
        was = ref.get(name)
        if was is None:
            print(f"{name}: not in the saved fingerprint")
            bad += 1
            continue
        same_json = was["json_sha256"] == now["json_sha256"]
        same_tables = was["tables"] == now["tables"]
        print(f"{name}: summary JSON {'identical' if same_json else 'DIFFERS'}, "
              f"time series {'identical' if same_tables else 'DIFFER'}")
        bad += not (same_json and same_tables)
    print("all identical" if bad == 0 else f"{bad} case(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
