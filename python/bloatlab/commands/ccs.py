"""``bloatlab ccs``: the congestion controls, and which this host's kernel runs.

The catalogue lives in the Rust core (``crates/core/src/cc/mod.rs``,
``CcKind``); the kernel column reads this host's
``tcp_available_congestion_control`` and its loadable modules (what
``--engine emu`` and ``bloatlab host apply`` can use).
"""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("ccs", help="list the congestion controls (flow.cc) and which this kernel has",
                       description="The congestion controls a flow can run (flow.cc): the model's source, whether "
                                   "mainline Linux ships it, whether this host's kernel offers it (for --engine emu).")
    p.add_argument("--json", action="store_true", help="print the congestion controls as JSON")
    p.set_defaults(func=main)


def main(args) -> int:
    from .._native import ccs
    from ..advise.recommend import kernel_ccs

    here = kernel_ccs()
    rows = [dict(c, this_kernel=None if here is None else c["name"] in here) for c in ccs()]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from ._table import print_table

    yn = {True: "yes", False: "no", None: "?"}
    print_table(["cc", "mainline", "here", "what it does (source)"],
                [(r["name"], yn[r["mainline"]], yn[r["this_kernel"]], f"{r['doc']} ({r['source']})") for r in rows],
                caption="here: this host's kernel offers it (built in, loaded or loadable) — "
                        "what --engine emu's kernel flows can run.")
    return 0
