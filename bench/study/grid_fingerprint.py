#!/usr/bin/env python3
"""Is a sweep's results store what it was? A fingerprint of every stored run, for a change that must not move one
byte of the model's output (BENCHMARKS.md "The imc2019 grid").

Per run (by run_id): the SHA-256 of summary.json with the engine's own clock readings (`wall_s`) masked, and of each
time-series table's Arrow IPC stream (flows, links, probes: every column, read back from the run's Parquet). Also the
store's index with its `wall_s` and `build` columns dropped (`build` names the native module's SHA-256,
study/build.py: another for every rebuild, a compiler setting's too, with the model's output the same).

    python bench/study/grid_fingerprint.py STORE > before.txt    # on the code before
    python bench/study/grid_fingerprint.py STORE --check before.txt  # after: exit 1 on any difference
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sys
from pathlib import Path

WALL = re.compile(r'("wall_s": )[0-9.eE+-]+')


def table_hash(path: Path, drop: tuple[str, ...] = ()) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    t = t.drop_columns([c for c in drop if c in t.column_names])
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return hashlib.sha256(sink.getvalue()).hexdigest()


def fingerprint(store: Path) -> dict[str, str]:
    out = {}
    for d in sorted((store / "runs").glob("run_id=*")):
        rid = d.name.split("=", 1)[1]
        out[f"{rid} summary"] = hashlib.sha256(WALL.sub(r"\1_", (d / "summary.json").read_text()).encode()).hexdigest()
        for name in ("flows", "links", "probes"):
            p = d / f"{name}.parquet"
            out[f"{rid} {name}"] = table_hash(p) if p.exists() else "absent"
    out["index"] = table_hash(store / "index.parquet", drop=("wall_s", "build"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--check", metavar="FILE", help="a fingerprint printed before: exit 1 if any line differs")
    a = ap.parse_args(argv)
    fp = fingerprint(Path(a.store))
    if a.check is None:
        for k, v in fp.items():
            print(k, v)
        return 0
    before = dict(line.rsplit(" ", 1) for line in Path(a.check).read_text().splitlines() if line)
    diff = sorted(k for k in before.keys() | fp.keys() if before.get(k) != fp.get(k))
    for k in diff[:20]:
        print(f"differs: {k}", file=sys.stderr)
    runs = len([k for k in fp if k.endswith(" summary")])
    print(f"{runs} runs, {len(fp)} fingerprints, {len(diff)} differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
