"""``bloatlab sweep EXPERIMENT.toml --out DIR``: run a grid of scenarios into a results store."""

from __future__ import annotations

import os


#: --reuse-any-build (sweep, reproduce, fidelity): what resume does with a stored run of another build
REUSE_HELP = ("keep stored runs that another build made (another native module, Python sources or version; for "
              "emu also the emulator's binaries or the kernel release): for a change known not to touch the model "
              "(default: such points run again, each new run replacing the old one)")


def register(sub) -> None:
    p = sub.add_parser("sweep", help="run a sweep over scenario keys into a results directory",
                       description="Run every point of an experiment file (a base scenario, a [grid] and/or "
                                   "[[points]] of overrides, repeat = seeds per point) and store each run as it "
                                   "finishes. Re-running the same command resumes: points stored by this build are "
                                   "skipped, those another build stored run again.")
    p.add_argument("experiment", metavar="EXPERIMENT.toml", help="experiment file (docs/studies.md)")
    p.add_argument("--out", metavar="DIR", help="results directory (default: results/<name>)")
    p.add_argument("--engine", choices=["sim", "emu"], help="engine (default: the file's engine, else sim); "
                   "emu runs points one at a time")
    p.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="local: a process pool on this machine; dask: a Dask cluster (--scheduler)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler address, e.g. tcp://127.0.0.1:8786")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (local; default: all cores)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="kill a point that runs longer than this (local executor and every --engine emu point; it is retried on resume)")
    p.add_argument("--retry-flagged", type=int, default=1, metavar="N",
                   help="--engine emu: run a point whose emulator timing was flagged (docs/emulator.md \"Timing "
                        "quality\") up to N more times; if every attempt is flagged the last is stored, marked "
                        "(column timing_flagged) (default: 1)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N new runs (resume later)")
    p.add_argument("--append", action="store_true",
                   help="--out may hold another sweep (another name or grid): keep its runs and add this one's "
                        "(query/load see all, column experiment); without it that is an error")
    p.add_argument("--reuse-any-build", action="store_true", help=REUSE_HELP)
    p.add_argument("--dry-run", action="store_true", help="list the points and exit")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


def main(args) -> int:
    from ..errors import UserError
    from ..study import spec, sweep

    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs: expected a whole number >= 1, got {args.jobs}")
    if args.timeout is not None and args.timeout <= 0:
        raise UserError(f"--timeout: expected a positive number of seconds, got {args.timeout:g}")
    if args.retry_flagged < 0:
        raise UserError(f"--retry-flagged: expected a whole number >= 0, got {args.retry_flagged}")
    if args.limit is not None and args.limit < 0:
        raise UserError(f"--limit: expected a whole number >= 0, got {args.limit}")
    sw = spec.load(args.experiment)
    if args.dry_run:
        pts = sw.points(args.engine)
        for p in pts:
            print(f"{p.run_id}  seed={p.seed}  " + "  ".join(f"{k}={v}" for k, v in p.params.items()))
        print(f"{len(pts)} points")
        return 0
    out = args.out or os.path.join("results", sw.name)
    rep = sweep.run(sw, out, engine=args.engine, executor=args.executor, scheduler=args.scheduler,
                    jobs=args.jobs, progress=not args.quiet, limit=args.limit,
                    timeout=args.timeout, other="append" if args.append else "refuse",
                    retry_flagged=args.retry_flagged, reuse_any_build=args.reuse_any_build)
    sweep.print_report(rep)
    if sw.expect:
        return max(1 if rep.failed else 0, _check_expect(sw, out))
    return 1 if rep.failed else 0


def _check_expect(sw, out: str) -> int:
    """Evaluate the file's [[expect]] tables (transperf's scores) on the store: print them, write DIR/check.json;
    1 when one fails (as a transperf test fails)."""
    from ..study import check, expect
    from ..study.store import Store

    claims = expect.evaluate(Store(out), sw.expect)
    check.write(os.path.join(out, "check.json"), sw.name, claims, {"expect": sw.expect})
    check.print_claims(sw.name, claims)
    return 1 if any(c.verdict == check.FAILS for c in claims) else 0
