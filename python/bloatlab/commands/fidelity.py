"""``bloatlab fidelity EXPERIMENT.toml --out DIR``: the fidelity matrix —
every point of a sweep on the simulator and on the emulator (the kernel),
with the simulator's error per point (docs/fidelity.md)."""

from __future__ import annotations

import json
import os
import sys


def register(sub) -> None:
    from .sweep import REUSE_HELP

    p = sub.add_parser("fidelity", help="run a sweep on both engines and measure the simulator's error (emu needs root)",
                       description="Run every point of an experiment file (docs/studies.md) on --engine sim and on "
                                   "--engine emu, each into its own results store (DIR/sim, DIR/emu; re-running "
                                   "resumes), then write per-point errors against the kernel (DIR/fidelity.parquet, "
                                   ".csv) and a report with heatmaps over the swept keys (DIR/report.html).")
    p.add_argument("experiment", metavar="EXPERIMENT.toml", nargs="?", help="experiment file (docs/studies.md); not with --advise")
    p.add_argument("--out", metavar="DIR", help="results directory (default: results/<name>-fidelity)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="kill a point that runs longer than this")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N new runs per engine (resume later)")
    p.add_argument("--json", action="store_true", help="print {summary, points} as JSON")
    p.add_argument("--reuse-any-build", action="store_true", help=REUSE_HELP)
    g = p.add_argument_group("the advisor's campaign (issue 30; docs/advise.md)")
    g.add_argument("--advise", action="store_true", help="instead of an experiment: draw --paths random paths, emulate "
                   "each, run measure and advise against it and the kernel's controls through it (root, real time: "
                   "~1-2 min a path; resumes from --out)")
    g.add_argument("--paths", type=int, default=20, metavar="N", help="paths to draw (default 20)")
    g.add_argument("--seed", type=int, default=1, metavar="S", help="the draw's seed (default 1)")
    g.add_argument("--quick", action="store_true", help="shorter predicted and kernel runs (3-5 s)")
    g.add_argument("--rank", action="store_true", help="also run every kernel candidate on the true path (18 more "
                   "runs a path) and score them as advise does: was the recommendation the kernel's best?")
    g.add_argument("--rank-repeats", type=int, metavar="N", help="with --rank: kernel runs for each candidate the "
                   "verdict turns on (the recommended one, the best, and those within the kernel's spread of it), each "
                   "figure their median (default 3, campaign.RANK_REPEATS; one run is one draw of the kernel's timing)")
    g.add_argument("--judge-repeats", type=int, metavar="N", help="kernel runs of the recommended configuration on "
                   "the true path that the prediction goals judge, each figure their median (default 3, "
                   "campaign.JUDGE_REPEATS; one run is one draw of the kernel's timing)")
    g.add_argument("--rank-paths", type=int, metavar="K", help="with --rank: rank only the draw's first K paths (the "
                   "ranking goal asks >= 30, the measurement goals >= 200: one campaign, one code version)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


def main(args) -> int:
    from ..errors import UserError
    from ..study import fidelity, spec

    if args.timeout is not None and args.timeout <= 0:
        raise UserError(f"--timeout: expected a positive number of seconds, got {args.timeout:g}")
    if args.limit is not None and args.limit < 0:
        raise UserError(f"--limit: expected a whole number >= 0, got {args.limit}")
    if args.advise:
        if args.reuse_any_build:
            raise UserError("--reuse-any-build: for an experiment's sweeps, not with --advise (the campaign keeps "
                            "its records and counts the code versions they were made with: docs/advise.md)")
        return _advise_campaign(args)
    if args.experiment is None:
        raise UserError("fidelity: give an EXPERIMENT.toml, or --advise for the advisor's campaign")
    sw = spec.load(args.experiment)
    out = args.out or os.path.join("results", f"{sw.name}-fidelity")
    table, summ, path, reps = fidelity.run(sw, out, timeout=args.timeout, progress=not args.quiet, limit=args.limit,
                                           reuse_any_build=args.reuse_any_build)
    if args.json:
        pts = json.loads(table.to_json(orient="records"))
        json.dump({"summary": summ, "points": pts, "report": path}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 1 if any(r.failed for r in reps) else 0
    keys = [k for k in fidelity_keys(table)]
    from ._table import print_table

    cells = []
    for r in table.to_dict("records"):
        label = ", ".join(f"{k}={r[k]}" for k in keys) or r["run_id"]
        g = r.get("total_goodput_mbps_err")
        q = r.get("down_qdelay_p95_ms_err")
        x = r.get("retransmits_err")
        late = r.get("emu_late_p99_us")
        flag = f" (emu timing flagged: {r.get('timing_reasons') or 'p99'})" if r["timing_flagged"] else ""
        cells.append((label, _pct(g), _pct(q), "-" if x is None or x != x else f"{x:.2f}",
                      "-" if late is None or late != late else f"{late:.0f} µs", f"{r['misses'] or 'ok'}{flag}"))
    print_table(["point", ("goodput", "right"), ("qd p95", "right"), ("retx x", "right"), ("late p99", "right"),
                 "misses"], cells)
    med = summ["median_goodput_error"]
    print(f"{summ['points']} points: median |goodput error| {'-' if med is None else f'{100 * med:.1f} %'} "
          f"(target ≤ {100 * summ['goodput_target']:.0f} %), {summ['points_missing_a_target']} miss a target, "
          f"{summ['timing_flagged']} with flagged emulator timing (not counted)")
    print(f"report: {path}")
    return 1 if any(r.failed for r in reps) else 0


def _advise_campaign(args) -> int:
    from ..advise import campaign, campaign_report
    from ..errors import UserError

    if args.experiment is not None:
        raise UserError("--advise: draws its own paths; give no EXPERIMENT.toml")
    if not 1 <= args.paths <= 100_000:
        raise UserError(f"--paths: expected 1..100000, got {args.paths}")
    if args.rank_repeats is not None and not 1 <= args.rank_repeats <= campaign.MAX_RANK_REPEATS:
        raise UserError(f"--rank-repeats: expected 1..{campaign.MAX_RANK_REPEATS}, got {args.rank_repeats}")
    if args.rank_repeats is not None and not args.rank:
        raise UserError("--rank-repeats: ranks nothing without --rank")
    repeats = campaign.RANK_REPEATS if args.rank_repeats is None else args.rank_repeats
    if args.judge_repeats is not None and not 1 <= args.judge_repeats <= campaign.MAX_JUDGE_REPEATS:
        raise UserError(f"--judge-repeats: expected 1..{campaign.MAX_JUDGE_REPEATS}, got {args.judge_repeats}")
    judge = campaign.JUDGE_REPEATS if args.judge_repeats is None else args.judge_repeats
    if args.rank_paths is not None and not args.rank:
        raise UserError("--rank-paths: ranks nothing without --rank")
    if args.rank_paths is not None and not 1 <= args.rank_paths <= args.paths:
        raise UserError(f"--rank-paths: expected 1..{args.paths} (--paths), got {args.rank_paths}")
    out = args.out or os.path.join("results", f"advise-campaign-{args.seed}")
    records, summ = campaign.run(args.paths, args.seed, out, quick=args.quick, limit=args.limit,
                                 progress=not (args.quiet or args.json), ranked=args.rank, rank_repeats=repeats,
                                 rank_paths=args.rank_paths, judge_repeats=judge)
    if args.json:
        json.dump({"summary": summ, "paths": records}, sys.stdout, indent=1, default=float)
        sys.stdout.write("\n")
        return 0
    from ._table import print_table

    cells = []
    for key, tol, want in campaign.GOALS:
        s = summ[key]
        share = "-" if s["share"] is None else f"{s['share'] * 100:.0f} %"
        cells.append((key, campaign_report.tolerance_text(key, tol), f"{want * 100:.0f} %", f"{s['met']}/{s['of']}", share))
    print_table(["goal", ("tolerance", "right"), ("wanted", "right"), ("met", "right"), ("share", "right")], cells)
    # the time goal by base RTT band (the report's Time section has where the time went)
    ok = [r for r in records if "failed" not in r and r.get("errors")]
    if any(r["errors"].get("measure_s") is not None for r in ok):
        goal_s = summ["measure_s"]["tolerance"]
        bands, _ = campaign_report.time_tables(ok, out, goal_s)
        print_table([(c, "right") for c in bands.columns], [tuple(str(v) for v in row) for row in bands.itertuples(index=False)],
                    title=f"measure --quick within {goal_s:g} s by base RTT")
    code = summ.get("code") or {}
    versions = ", ".join(f"{k} ({v})" for k, v in code.items())
    print(f"{summ['paths']} paths measured, {summ['failed']} failed; kernel judgements still flagged by the "
          f"emulator after {campaign.KERNEL_TRIES} tries (left out of the prediction and ranking goals): "
          f"{summ.get('judge_flagged', 0)} predictions, {summ.get('rank_flagged', 0)} rankings; a server short of a "
          f"paced train's rate: {summ.get('server_short', 0)}; advice checked on readings measure could not tell "
          f"apart: {summ.get('readings', {}).get('paths', 0)} paths, held on every reading on "
          f"{summ.get('readings', {}).get('held', 0)}; code {versions or '-'}"
          + (" (mixed versions: judge each apart)" if len(code) > 1 else ""))
    print(f"{out}/campaign.json, report: {out}/report.html")
    return 0


def fidelity_keys(table) -> list[str]:
    fixed = {"run_id", "part", "seed", "misses", "emu_late_p99_us", "timing_flagged", "timing_reasons"}
    return [c for c in table.columns if c not in fixed and not c.endswith(("_sim", "_emu", "_err"))]


def _pct(v) -> str:
    return "-" if v is None or v != v else f"{100 * v:+.1f}%"
