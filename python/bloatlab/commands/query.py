"""``bloatlab query DIR "SQL"``: SQL (DuckDB) over a results directory; also imports flent/iperf3 files."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("query", help="SQL over a results directory (DuckDB)",
                       description='SQL over a results directory. Tables: runs (one row per run: run_id, part, '
                                   'engine, seed, build (the build that made it; null: unknown), a column per '
                                   'swept key named by its path — quote it: '
                                   '"link.down.loss" — and the summary metrics), flows (one row per flow per run); '
                                   'views flow_series, link_series, probe_series (the time series, with run_id). '
                                   '--import adds flent (.flent.gz) or iperf3 (-J JSON) measurements to DIR first.')
    p.add_argument("dir", metavar="DIR", help="results directory")
    p.add_argument("sql", metavar="SQL", nargs="?", default=None,
                   help='e.g. \'SELECT "flow.0.cc", avg(total_goodput_mbps) FROM runs GROUP BY 1\' '
                        "(default: the runs with their swept keys and headline figures; --all: every column)")
    p.add_argument("--all", action="store_true", help="without SQL: every column of runs, not only the headline ones")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="FILE",
                   help="import a .flent.gz / .flent or an iperf3 -J .json file into DIR (repeatable)")
    p.add_argument("--label", help="the experiment name recorded for imported files")
    p.add_argument("--new", action="store_true",
                   help="--import may create DIR as a new results directory (without it DIR must be one already, "
                        "so that a mistyped DIR is an error, not a new store)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="rows as JSON")
    fmt.add_argument("--csv", action="store_true", help="rows as CSV")
    p.set_defaults(func=main)


#: the figures `query DIR` shows without SQL, beside the run id and the swept keys
#: (column, how it is shown, its header with the unit: headers wrap between words, a table keeps 80 columns)
HEADLINE = (("total_goodput_mbps", "round({}, 2)", "goodput Mbit/s"), ("rtt_p95_ms", "round({}, 1)", "flows' rtt p95 ms"),
            ("retrans_rate", "round(100 * {}, 2)", "retx %"), ("jain_fairness", "round({}, 3)", "jain index"),
            ("down_qdelay_p95_ms", "round({}, 1)", "down qdelay p95 ms"), ("probe_rtt_p95_ms", "round({}, 1)", "probe rtt p95 ms"))


def main(args) -> int:
    from ..study import importers, store

    import os

    from ..errors import UserError

    if args.imports and not store.is_store(args.dir) and not args.new:
        what = "does not exist" if not os.path.exists(args.dir) else "is not a results directory"
        raise UserError(f"DIR: {args.dir} {what}; add --new to create a results directory there for --import")
    for f in args.imports:
        rid = importers.import_file(f, args.dir, label=args.label)
        print(f"imported {f} as run {rid}", file=sys.stderr)
    if args.imports and args.sql is None:
        return 0
    st = store.Store(args.dir)
    note = None
    if args.sql:
        sql = args.sql
    elif args.all or args.json or args.csv:
        sql = "SELECT * FROM runs"
    else:
        # a readable default: what was swept and what came out (53 columns squeezed to one character each before)
        def q(name):
            return '"' + name.replace('"', '""') + '"'

        cols = [q(c) for c in ["run_id"] + st.swept_keys() if c in st.runs.columns]
        if "seed" in st.runs and st.runs["seed"].nunique() > 1:
            cols.insert(1, q("seed"))
        if "build" in st.runs and st.runs["build"].nunique(dropna=False) > 1:  # runs of several builds: say which
            cols.insert(1, q("build"))
        cols += [f"{how.format(q(c))} AS {q(head)}" for c, how, head in HEADLINE if c in st.runs.columns]
        sql = "SELECT " + ", ".join(cols) + " FROM runs"
        note = (f"(the swept keys and headline figures of {len(st.runs)} runs; --all: all {len(st.runs.columns)} "
                "columns; or SQL, e.g. 'SELECT * FROM runs')")
    df = st.query(sql)
    if args.json:
        json.dump(json.loads(df.to_json(orient="records")), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif args.csv:
        df.to_csv(sys.stdout, index=False)
    elif not len(df):
        print("(no rows)")
    else:
        from ._table import print_table

        print_table([(str(c), "right" if df[c].dtype.kind in "iuf" else "left") for c in df.columns],
                    df.astype(object).where(df.notna(), None).itertuples(index=False, name=None), caption=note)
    return 0
