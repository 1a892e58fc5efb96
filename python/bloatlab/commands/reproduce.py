"""``bloatlab reproduce NAME``: run a built-in experiment of the seed documents, check it, report it."""

from __future__ import annotations

import os
import sys


def register(sub) -> None:
    from ..study.experiments import names
    from .sweep import REUSE_HELP

    p = sub.add_parser("reproduce", help="reproduce a published experiment (see --list)",
                       description="Run a built-in experiment (each cites its source and the published numbers), "
                                   "optionally check the outcome against those numbers, and write a report. "
                                   f"Experiments: {', '.join(names())}.")
    p.add_argument("name", metavar="NAME", nargs="?", help="experiment name")
    p.add_argument("--list", action="store_true", help="list the experiments and their sources")
    p.add_argument("--quick", action="store_true", help="a reduced version (fewer points, shorter runs)")
    p.add_argument("--engine", choices=["sim", "emu"], default="sim",
                   help="sim: the model (default); emu: the real kernel through the emulator (root)")
    p.add_argument("--check", action="store_true", help="compare with the published numbers, claim by claim")
    p.add_argument("--strict", action="store_true", help="with --check: exit 1 when a claim fails")
    p.add_argument("--out", metavar="DIR", help="results directory (default results/reproduce/NAME[-quick])")
    p.add_argument("--report", action="store_true", help="write the HTML report also for --quick")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--reuse-any-build", action="store_true", help=REUSE_HELP)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


#: What an emulator point may take beyond its duration before it is killed (s): namespace
#: set-up, the senders' connection lead, the grace for sized transfers (4 RTTs + 2 s) and for
#: the generators' reports (8 s), with room for a busy machine.
EMU_GRACE_S = 60.0


def main(args) -> int:
    from ..errors import UserError
    from ..study import check, report, sweep
    from ..study.experiments import get, names
    from ..study.store import Store

    if args.list or not args.name:
        from ._table import print_table

        print_table(["experiment", "what it reproduces (source)"],
                    [(n, f"{get(n).title}\nsource: {get(n).source.splitlines()[0]}") for n in names()])
        return 0 if args.list else 2
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs: expected a whole number >= 1, got {args.jobs}")
    exp = get(args.name)
    sw = exp.sweep_for(args.quick, args.engine)
    out = args.out or os.path.join("results", "reproduce", sw.name)
    timeout = exp.timeout(args.quick)
    if args.engine == "emu":
        # the experiments' timeouts catch a hung simulator; the emulator runs in real time, so a
        # point takes its whole duration plus set-up and its senders' reports
        timeout = max(timeout, sw.longest_duration_s() + EMU_GRACE_S)
    rep = sweep.run(sw, out, engine=args.engine, jobs=args.jobs, progress=not args.quiet, timeout=timeout,
                    reuse_any_build=args.reuse_any_build)
    sweep.print_report(rep)
    st = Store(out)
    claims = exp.claims(st)
    if sw.expect:  # transperf's scores the experiment's sweep carries (study/expect.py)
        from ..study import expect

        claims += expect.evaluate(st, sw.expect)
    meta = {"engine": args.engine, "quick": args.quick, "runs": len(st.runs),
            "failed_points": [{"part": p.part, "params": p.params, "seed": p.seed, "error": e} for p, e in rep.failed]}
    check.write(os.path.join(out, "check.json"), exp.name, claims, meta)
    status = 0
    if args.check:
        check.print_claims(exp.name + (" (quick)" if args.quick else ""), claims)
        if args.strict and any(c.verdict == check.FAILS for c in claims):
            status = 1
    if not args.quick or args.report:
        path = report.report(out, None, exp, claims, exp.analyze(st))
        print(f"report: {path}")
    if rep.failed:
        print(f"{len(rep.failed)} points failed (see above; the claims that need them are not evaluated)",
              file=sys.stderr)
        if args.strict:
            status = 1
    return status
