"""``bloatlab shell [--down 10Mbit] [--up 2Mbit] [--rtt 100ms] ... -- COMMAND``:
run any program in the client namespace behind the emulated link
(Mahimahi-style), with the server namespace reachable at a printed address.

Examples::

    bloatlab shell --down 10Mbit --up 2Mbit --rtt 100ms -- curl -o /dev/null http://$SERVER/
    bloatlab shell --server "python3 -m http.server 8000" -- curl -s -o /dev/null -w '%{time_total}\\n' http://10.77.0.2:8000/
    bloatlab shell --scenario scenarios/fidelity/cubic-1.toml -- sh -c 'curl ...'   # bulk flows load the link meanwhile
    bloatlab shell --down trace:cellular.down --up trace:cellular.up -- ...
    bloatlab shell --scenario scenarios/wifi-anomaly.toml --station slow -- ping $BLOATLAB_SERVER   # on a WiFi station

The command gets ``BLOATLAB_SERVER`` (the server's address) and
``BLOATLAB_SERVER_NS`` in its environment; ``ip netns exec $BLOATLAB_SERVER_NS
CMD`` runs more programs on the server side.
"""

from __future__ import annotations

import argparse
import copy

from ..errors import UserError

# One hour unless the scenario says otherwise: the command decides when the shell ends.
SHELL_DURATION = "3600s"


def register(sub) -> None:
    p = sub.add_parser(
        "shell",
        help="run a program behind the emulated link (needs root)",
        description="Run COMMAND in the client network namespace behind bloatlab's emulated link. "
        "RATE is like 10Mbit, or trace:FILE for a Mahimahi trace (one 1500-byte delivery opportunity "
        "per line, in ms). Without --scenario: down 100Mbit, up 100Mbit, rtt 20ms, no loss, a 1bdp fifo.",
    )
    p.add_argument("--scenario", metavar="FILE", help="take links, flows and probes from a scenario: its flows "
                   "load the link while COMMAND runs; the options below override its links")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key (with --scenario)")
    p.add_argument("--down", metavar="RATE", help="server -> client rate, e.g. 10Mbit or trace:FILE")
    p.add_argument("--up", metavar="RATE", help="client -> server rate, e.g. 2Mbit or trace:FILE")
    p.add_argument("--rtt", metavar="TIME", help="base round-trip time of the shell's traffic (default 20ms)")
    p.add_argument("--loss", metavar="P", help="random loss in each direction, e.g. 1%%")
    p.add_argument("--buffer", metavar="SIZE", help='bottleneck buffer per direction: "1bdp", "375KB", "100pkt"')
    p.add_argument("--qdisc", metavar="NAME", help="bottleneck qdisc (fifo, codel, fq_codel, ...)")
    p.add_argument("--policer", metavar="RATE", help="a policer at RATE in front of the qdisc in each direction (drops "
                   "beyond a 10-ms token bucket, delays nothing); --down/--up are then the port's rate")
    p.add_argument("--station", metavar="NAME", help="with a [wifi] --scenario: the station COMMAND sits on "
                   "(a station or group name; a group: its first station)")
    p.add_argument("--server", metavar="CMD", help="a command to run in the server namespace meanwhile "
                   '(e.g. "python3 -m http.server 8000"); it is stopped when COMMAND ends')
    p.add_argument("--pcap", metavar="DIR", help="write DIR/down.pcap and DIR/up.pcap (open with tcpdump -r, Wireshark)")
    p.add_argument("--out", metavar="RAW.json", help="write the link's (and flows') raw result here")
    p.add_argument("--no-rt", action="store_true", help="do not use SCHED_FIFO and /dev/cpu_dma_latency")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the program to run")
    p.set_defaults(func=main)


def build_resolved(args) -> dict:
    """The resolved scenario of a shell: the scenario's (if any) with the options' links."""
    from .. import scenario as sc_mod
    from ..engines.emu import load_trace, trace_rate_bps

    traces: dict[str, list[int]] = {}
    if args.scenario:
        doc = copy.deepcopy(sc_mod.load(args.scenario, args.overrides).doc)
    else:
        if args.overrides:
            raise UserError("--set: only with --scenario")
        doc = {"duration": SHELL_DURATION,
               "link": {"down": {"rate": "100Mbit"}, "up": {"rate": "100Mbit"}},
               "flow": [{"cc": "cubic", "rtt": args.rtt or "20ms"}]}  # placeholder: sizes "bdp" buffers; removed below
    links = doc.setdefault("link", {})
    for d in ("down", "up"):
        rate = getattr(args, d)
        if rate is None:
            continue
        ld = links.setdefault(d, {})
        if rate.startswith("trace:"):
            ms = load_trace(rate[len("trace:"):])
            traces[d] = ms
            ld["rate"] = f"{trace_rate_bps(ms):.0f}bit"  # for "bdp" buffers and utilization
        else:
            ld["rate"] = rate
    for key, opt in (("loss", args.loss), ("buffer", args.buffer), ("qdisc", args.qdisc)):
        if opt is None:
            continue
        for d in ("down", "up"):
            if d in links:
                links[d][key] = opt
    if args.policer is not None:
        for d in ("down", "up"):
            if d in links:
                links[d]["policer"] = {"rate": args.policer}
    if args.rtt and args.scenario is None:
        doc["flow"][0]["rtt"] = args.rtt
    resolved = sc_mod.load(doc).resolved()  # errors name the key: link.down.rate is --down, ...
    station = getattr(args, "station", None)
    if resolved.get("wifi"):
        names = [st["name"] for st in resolved["wifi"]["stations"]]
        if station is None and len(names) > 1:
            raise UserError(f"--station: the scenario has several WiFi stations; name the one COMMAND sits on "
                            f"({', '.join(names)})")
        pick = [i for i, n in enumerate(names) if n == station or n.split(".")[0] == station] if station else [0]
        if not pick:
            raise UserError(f'--station: unknown station "{station}" (known: {", ".join(names)})')
        resolved["shell_station"] = pick[0]
    elif station is not None:
        raise UserError("--station: only with a --scenario that has a [wifi] medium")
    for d, ms in traces.items():
        resolved["links"][d]["trace_ms"] = ms
    if args.scenario is None:
        resolved["flows"] = []
    rtt = None
    if args.rtt:
        try:
            from .. import units

            rtt = units.parse_duration(args.rtt)
        except ValueError as e:
            raise UserError(f"--rtt: {e}") from None
    if rtt is None:
        rtts = [f["rtt_ns"] for f in resolved["flows"]] or [20_000_000]
        rtt = min(rtts)
    resolved["default_rtt_ns"] = rtt
    return resolved


def main(args) -> int:
    from ..engines import emu

    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UserError("shell: no command given (bloatlab shell [OPTIONS] -- COMMAND [ARGS...])")
    try:
        resolved = build_resolved(args)
    except ValueError as e:
        raise UserError(str(e)) from None
    return emu.shell(resolved, cmd, server=args.server, raw_out=args.out, pcap=args.pcap, no_rt=args.no_rt)

