"""``bloatlab report DIR``: one self-contained HTML file (scenario, metadata, tables, every plot)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("report", help="write an HTML report of a run or a results directory",
                       description="Write one self-contained HTML file (images embedded) with the scenario, "
                                   "metadata, summary tables and every plot.")
    p.add_argument("dir", metavar="DIR", help="run directory or results directory")
    p.add_argument("--out", "-o", metavar="FILE", help="HTML file (default DIR/report.html)")
    p.set_defaults(func=main)


def main(args) -> int:
    import os

    from ..study import check, report
    from ..study.experiments import get

    experiment = claims = extra = None
    if args.out:
        if os.path.islink(args.out) and not os.path.exists(args.out):
            from ..errors import UserError

            raise UserError(f"--out {args.out}: a symbolic link to nothing (or a loop of links)")
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            from ..errors import UserError

            raise UserError(f"--out {args.out}: the directory {parent} does not exist")
    cj = os.path.join(args.dir, "check.json")
    if os.path.exists(cj):  # a reproduced experiment: keep its claims and figures in the report
        name = check.read(cj).get("experiment")
        experiment, claims = get(name), check.load(cj)
        from ..study.store import Store

        extra = experiment.analyze(Store(args.dir))
    print(report.report(args.dir, args.out, experiment, claims, extra))
    return 0
