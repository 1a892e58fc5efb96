"""``bloatlab advise``: which congestion control and queue to run on a path."""

from __future__ import annotations

import json
import os
import sys


def register(sub) -> None:
    p = sub.add_parser("advise", help="recommend a congestion control and a queue for a path",
                       description="Simulate the candidates (reno, cubic, bbr, bbr3 x the queue you control) on the path's "
                                   "twin and recommend one, with its expected figures, the reasons and the caveats "
                                   "(docs/advise.md). Give the path as a twin file (bloatlab measure --out) or as numbers.")
    p.add_argument("host", nargs="?", metavar="HOST[:PORT]", help="measure this host first (runs `bloatlab measure`)")
    p.add_argument("-p", "--port", type=int, help="with HOST: the server's port (as iperf3's -p; default 5301)")
    p.add_argument("--path", metavar="TWIN.toml", help="a path's twin scenario (from `bloatlab measure --out`), or "
                                                       "the report `bloatlab measure --json` printed")
    p.add_argument("--rtt", help='base RTT, e.g. "40ms"')
    p.add_argument("--rate", help='bottleneck rate down, e.g. "100Mbit"')
    p.add_argument("--up-rate", help='bottleneck rate up, e.g. "20Mbit"')
    p.add_argument("--buffer", help='bottleneck buffer: "375KB", "250pkt" or "0.5bdp" (default 1bdp)')
    p.add_argument("--loss", help='random loss, e.g. "1%%"')
    p.add_argument("--limiter", default="fifo", choices=["fifo", "policer", "aqm"], help="what enforces the rate (default fifo)")
    p.add_argument("--goal", default="balanced", choices=["throughput", "latency", "balanced", "fair"],
                   help="what the score weighs most: goodput, latency under load, both (default), or fairness to a "
                        "CUBIC neighbour")
    p.add_argument("--current-cc", help="the control you run today (default: this host's tcp_congestion_control)")
    p.add_argument("--host-only", action="store_true",
                   help="you do not own a router in front of the bottleneck: only the sender's control and qdisc")
    p.add_argument("--any-kernel", action="store_true", help="recommend controls this host's kernel lacks too")
    p.add_argument("--engine", default="sim", choices=["sim", "emu"],
                   help="sim: the model (seconds); emu: the real kernel's reno/cubic/bbr through the emulated twin "
                        "(root, real time: about 20 s per candidate)")
    p.add_argument("--duration", metavar="TIME", help="length of each candidate's run (default: 100 base RTTs, 10-30 s)")
    p.add_argument("--seed", type=int, default=1, help="seed of the simulated runs (default 1)")
    p.add_argument("--members", type=int, metavar="N",
                   help="runs per candidate on the simulated twin, at base RTTs over the measurement's uncertainty "
                        "(the figures are their median; default 7, fewer on a fast path; 1: the measured RTT only)")
    p.add_argument("--json", action="store_true", help="print the recommendation and every candidate as JSON")
    p.set_defaults(func=main)


def twin_or_report(f: str):
    """The path in file ``f``: a twin scenario (``measure --out``), or ``measure --json``'s report (a JSON object:
    the twin ``measure`` writes from it, :func:`measure.twin_of`)."""
    from ..advise.measure import twin_of
    from ..advise.path import Path
    from ..errors import UserError

    try:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"--path {f}: {getattr(e, 'strerror', None) or e}") from None
    if not text.lstrip().startswith("{"):
        return Path.from_twin(f)
    try:
        report = json.loads(text)
    except ValueError as e:
        raise UserError(f"--path {f}: not a twin scenario (TOML) nor measure's report (JSON: {e})") from None
    try:
        return twin_of(report)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        what = f"no {e}" if isinstance(e, KeyError) else str(e)
        raise UserError(f"--path {f}: JSON that is not the report `bloatlab measure --json` prints ({what}); a "
                        f"twin is the TOML file `bloatlab measure --out` writes") from None


def path_of(args):
    from ..advise.path import Path
    from ..errors import UserError

    given = [x for x in (args.host, args.path, args.rtt or args.rate) if x]
    if len(given) != 1:
        raise UserError("advise: give exactly one of HOST, --path TWIN.toml, or --rtt with --rate")
    if args.host and os.path.isfile(args.host):
        # a file where a host goes would be looked up as a host name ("failed to lookup address information")
        raise UserError(f"advise: {args.host} is a file, not a host: give it as --path {args.host} (the twin "
                        f"`bloatlab measure --out` writes, or the report `bloatlab measure --json` prints)")
    if args.path:
        return twin_or_report(args.path)
    if args.port is not None and not args.host:
        raise UserError("advise: -p/--port goes with HOST (the server advise measures first)")
    if args.host:
        from ..advise.measure import measure, with_port

        return measure(with_port(args.host, args.port), quick=True, show=not args.json).path
    if not (args.rtt and args.rate):
        raise UserError("advise: --rtt and --rate go together (e.g. --rtt 40ms --rate 100Mbit)")
    return Path.from_args(args.rtt, args.rate, args.buffer, args.loss, args.up_rate, args.limiter)


def _duration(text: str | None) -> float | None:
    from .. import units
    from ..errors import UserError

    if text is None:
        return None
    try:
        s = units.parse_duration(text) / 1e9
    except ValueError as e:
        raise UserError(f"--duration: {e}") from None
    if not 1 <= s <= 600:
        raise UserError(f"--duration: expected 1 s to 10 min, got {text}")
    return s


def main(args) -> int:
    from ..advise import recommend
    from ..errors import UserError

    path = path_of(args)
    queues = ("as-is",) if args.host_only else recommend.QUEUES
    avail = None if args.any_kernel else recommend.kernel_ccs()
    qstate = (None, None) if args.any_kernel else recommend.host_qdisc()
    if args.members is not None and not 1 <= args.members <= 99:
        raise UserError(f"--members: expected 1..99, got {args.members}")
    kw = dict(queues=queues, engine=args.engine, host_qdisc_state=qstate, duration_s=_duration(args.duration),
              members=args.members)
    from rich.progress import Progress

    if not sys.stderr.isatty():
        # a log or a pipe: a start and an end line (with --engine emu this runs for minutes), and a line per
        # candidate so that a log shows where it is
        from ..progress import Long

        what = "emulating" if args.engine == "emu" else "simulating"
        with Long(f"{what} the candidates on the twin"):
            out = recommend.advise(path, args.goal, args.current_cc, avail, args.seed, **kw,
                                   progress=(lambda i, n, c: print(f"bloatlab: {i}/{n} {c.label}", file=sys.stderr,
                                                                   flush=True)) if args.engine == "emu" else None)
    else:
        with Progress(transient=True) as prog:
            what = "emulating" if args.engine == "emu" else "simulating"
            task = prog.add_task(f"{what} the candidates on the twin", total=None)
            out = recommend.advise(path, args.goal, args.current_cc, avail, args.seed, **kw,
                                   progress=lambda i, n, c: prog.update(task, completed=i, total=n, description=f"{what[:-3]}ed {c.label}"))
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    show(out)
    return 0


def _with_range(f: dict) -> str:
    """The goodput (the ensemble's median) and, where its members differ by 1 % or more, their range."""
    e = f.get("ensemble") or {}
    lo, hi = e.get("goodput_mbps") or (f["goodput_mbps"],) * 2
    g = f"{f['goodput_mbps']:.3g}"
    return g if hi - lo < 0.01 * max(hi, 1e-9) else f"{g} ({lo:.3g}-{hi:.3g})"


def show(out: dict) -> None:
    from rich.table import Table

    from ..advise.recommend import LATENCY_SCORED
    from ._table import console

    # piped (a log, a doc, `| less`) without COLUMNS: 110 columns keep each row of its tables on one line
    con = console(pipe_width=110, markup=True)
    rec = out["recommendation"]
    shaped = f" shaped at {rec['shaper_mbps']:.3g} Mbit/s on the router you own" if rec["shaper_mbps"] else ""
    ap = f", and [bold green]{rec['ap_mac']}[/] on the WiFi access point" if rec.get("ap_mac") else ""
    con.print(f"[bold]Recommendation[/bold] (goal: {out['goal']}): [bold green]{rec['cc']}[/] with [bold green]{rec['qdisc']}[/]{shaped}{ap}")
    fq = " --qdisc fq" if rec["sysctl"].get("net.core.default_qdisc") == "fq" else ""
    con.print("  on the sending host: " + "; ".join(f"{k} = {v}" for k, v in rec["sysctl"].items())
              + f"   (bloatlab host apply --cc {rec['cc']}{fq})")
    if rec.get("router"):
        # the shaped queue as the twin ran it: SQM's script, or the tc lines (markup off: the lines are literal)
        con.print(f"  on the router: {rec['router']['how']}:")
        for line in rec["router"]["tc"]:
            con.print(f"    {line}", markup=False, highlight=False)
    twin = "emulated twin, the kernel's TCP" if out.get("engine") == "emu" else "simulated twin"
    t = Table(title=f"expected on your path ({twin})")
    for c in ("", "goodput Mbit/s (range)", "p95 RTT under load ms (alone / beside CUBIC)", "retransmitted", "CUBIC neighbour keeps"):
        t.add_column(c, justify="right", no_wrap=not c)
    for name, f in (("today", out["current"]), ("recommended", out["expected"])):
        t.add_row(f"{name}: {f['cc']} / {f['queue']}", _with_range(f), f"{f['p95_rtt_ms']:.0f} / {f['p95_rtt_shared_ms']:.0f}",
                  f"{f['retrans_rate'] * 100:.2g} %", f"{f['neighbour_share'] * 100:.0f} %")
    con.print(t)
    con.print("[bold]Why[/bold]")
    for r in out["reasons"]:
        con.print(f"  - {r}")
    if out["caveats"]:
        con.print("[bold]Caveats[/bold]")
        for r in out["caveats"]:
            con.print(f"  - {r}")
    # the latency the score weighs (Candidate.loaded_rtt_ms) beside the probe's p95s: behind a flow-isolating queue
    # the probe's stay at the base while the flow's own packets wait (BBR beside CUBIC in CAKE at 139.7 Mbit/s: the
    # probe 22 / 22 ms, its own packets 50 ms, so it scored 0.10 below CUBIC with nothing in the table to say why)
    alt = Table(title="all candidates, best first", caption=f"latency scored: {LATENCY_SCORED}")
    for c in ("control", "queue", "score", "goodput", "p95 RTT alone / shared", "latency scored", "retrans", "neighbour",
              "this kernel"):
        alt.add_column(c, justify="right", no_wrap=c == "queue")
    for a in out["alternatives"]:
        q = (a["queue"] if a["queue"] == "as-is" else f"{a['queue']} @ {a['shaper_mbps']:.3g}" if a["shaper_mbps"]
             else f"{a['queue']} (AP)")
        alt.add_row(a["cc"], q, f"{a['score']:.3f}", f"{a['goodput_mbps']:.3g}", f"{a['p95_rtt_ms']:.0f} / {a['p95_rtt_shared_ms']:.0f}",
                    f"{a['loaded_rtt_ms']:.0f}", f"{a['retrans_rate'] * 100:.2g} %", f"{a['neighbour_share'] * 100:.0f} %",
                    "yes" if a["available_here"] else "no")
    con.print(alt)
