"""Single-bit flips in a stored run against what reading the store reports
(issue 16 §3, issue 36 §4). A small sweep is stored; then, one at a time, a
random bit of one file is flipped and it is read back: a run's
flows.parquet and run.json through the store's query, the store's study.json
through the store, and a single run directory's summary.json and
checksums.json (``bloatlab run --out``) through ``bloatlab.load``. Each flip ends as: *detected* (an error naming the file),
*harmless* (the same result), or *silent* (a different result, no error: the
defect). Prints one line per file kind.

    .venv/bin/python bench/store/bitflips.py [--flips 300]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import bloatlab  # noqa: E402
from bloatlab.cli import main as cli  # noqa: E402
from bloatlab.errors import UserError  # noqa: E402

# integer aggregates only: DuckDB sums floats in parallel in no fixed order, which would read as a change
SQL = {"flows.parquet": "SELECT count(*) AS n, sum(cwnd_bytes) AS c, sum(round(srtt_ms * 1000)::BIGINT) AS s, "
                        "sum(delivered_bytes) AS d FROM flow_series",
       "run.json": "SELECT * FROM runs ORDER BY run_id"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flips", type=int, default=300)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "scenario.toml"), "w").write(textwrap.dedent("""
            name = "flips"
            duration = "3s"
            [link.down]
            rate = "20Mbit"
            [[flow]]
            cc = "cubic"
            rtt = "20ms"
        """))
        open(os.path.join(d, "exp.toml"), "w").write('name = "flips"\nbase = "scenario.toml"\n[grid]\n"flow.0.cc" = ["cubic", "bbr"]\n')
        out = os.path.join(d, "out")
        assert cli(["sweep", os.path.join(d, "exp.toml"), "--out", out, "-q"]) == 0
        rid = sorted(x for x in os.listdir(os.path.join(out, "runs")) if not x.startswith("."))[0]
        single = os.path.join(d, "single")
        assert cli(["run", os.path.join(d, "scenario.toml"), "--out", single]) == 0
        rng = random.Random(0x5eed0016)

        def store_query(sql):
            return lambda: bloatlab.load(out).query(sql)

        def store_study():
            st = bloatlab.load(out)
            return (repr(st.study), st.query("SELECT * FROM runs ORDER BY run_id"))

        def run_dir():
            import json

            r = bloatlab.load(single)
            return json.dumps(r.summary, sort_keys=True, default=str)

        targets = [(f"runs/{rid}/{n}", os.path.join(out, "runs", rid, n), store_query(sql)) for n, sql in SQL.items()]
        targets += [("study.json", os.path.join(out, "study.json"), store_study),
                    ("run dir summary.json", os.path.join(single, "summary.json"), run_dir),
                    ("run dir checksums.json", os.path.join(single, "checksums.json"), run_dir)]
        for name, p, read in targets:
            orig = open(p, "rb").read()
            want = read()
            n = {"detected": 0, "harmless": 0, "silent": 0}
            for _ in range(a.flips):
                b = bytearray(orig)
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
                open(p, "wb").write(b)
                try:
                    got = read()
                    same = all(x.equals(y) if hasattr(x, "equals") else x == y for x, y in zip(got, want)) \
                        if isinstance(got, tuple) else (got.equals(want) if hasattr(got, "equals") else got == want)
                    n["harmless" if same else "silent"] += 1
                except UserError:
                    n["detected"] += 1
                except Exception as e:  # a crash is a defect too: counted apart
                    n[f"crash {type(e).__name__}"] = n.get(f"crash {type(e).__name__}", 0) + 1
            open(p, "wb").write(orig)
            print(f"{name} ({len(orig)} B): {a.flips} single-bit flips -> " + ", ".join(f"{k} {v}" for k, v in n.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
