"""``bloatlab store check DIR``: find the runs of a results directory whose files were damaged."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("store", help="look after a results directory (check)",
                       description="Look after a results directory. check: list the runs whose files are damaged "
                                   "(truncated or edited run.json/summary.json, unreadable Parquet, a run directory "
                                   "without run.json); exit 0 when none, 1 when some (a resumed sweep re-runs them).")
    ssub = p.add_subparsers(dest="action", metavar="ACTION")
    ssub.required = True
    c = ssub.add_parser("check", help="list damaged runs")
    c.add_argument("dir", metavar="DIR", help="results directory")
    c.add_argument("--json", action="store_true", help="{run_id: what is wrong} as JSON")
    c.set_defaults(func=main)


def main(args) -> int:
    from ..errors import UserError
    from ..study import store

    if not store.is_store(args.dir):
        raise UserError(f"DIR: {args.dir} is not a results directory (no {store.RUNS}/ in it)")
    bad = store.damaged(args.dir)
    try:
        store.read_study(args.dir)
    except UserError as e:
        bad = {store.STUDY: str(e), **bad}
    n = len(store.done_ids(args.dir) - set(bad))
    if args.json:
        json.dump({"ok": n, "damaged": bad}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for rid, why in bad.items():
            print(f"damaged {rid}: {why}")
        print(f"{args.dir}: {n} runs whole, {len(bad)} damaged"
              + (" (bloatlab sweep EXP.toml --out DIR re-runs them)" if bad else ""))
    return 1 if bad else 0
