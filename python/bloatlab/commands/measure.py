"""``bloatlab measure HOST``: a model of a real path (its digital twin)."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("measure", help="measure a path to a bloatlab-probe server and write its twin",
                       description="Base RTT and loss at idle, the bottleneck rate per direction, latency under load and its "
                                   "bufferbloat grade, the buffer, and what limits the rate — against a host running "
                                   "`bloatlab-probe server` (docs/advise.md).")
    p.add_argument("host", metavar="HOST[:PORT]", nargs="?", help="a host running `bloatlab-probe server` (not with --replay)")
    p.add_argument("-p", "--port", type=int, help="the server's port (as iperf3's -p; or HOST:PORT; default 5301)")
    p.add_argument("--quick", action="store_true", help="shorter phases: a fill ends once its load is saturated (over a fresh campaign of 60 random paths: median 20 s in all, 14 s below 150 ms and 2 Mbit/s, longer on long or slow paths); without it each fill runs 60 round trips, 10-20 s a direction")
    p.add_argument("--flows", type=int, default=4, help="parallel TCP flows per direction (default 4)")
    p.add_argument("--no-up", action="store_true", help="measure the download direction only")
    p.add_argument("--secret", help="the server's shared secret")
    p.add_argument("--out", metavar="TWIN.toml", help="write the path's twin scenario here")
    p.add_argument("--json", action="store_true", help="print the measurements as JSON (no progress lines)")
    p.add_argument("--record", metavar="DIR", help="keep every probe run (arguments, result, times; never the secret) in "
                                                   "DIR/probes.jsonl, to measure again from it with --replay")
    p.add_argument("--replay", metavar="DIR", help="measure from a recording (--record) instead of the network: today's "
                                                   "analysis of the runs it kept, with its host and options")
    p.set_defaults(func=main)


def main(args) -> int:
    from ..advise.measure import measure, with_port

    from ..errors import UserError

    if args.replay is not None and (args.host is not None or args.record is not None):
        raise UserError("--replay DIR measures from the recording's host and options: no HOST and no --record beside it")
    host = with_port(args.host, args.port) if args.host is not None else None
    m = measure(host, quick=args.quick, flows=args.flows, up=not args.no_up, secret=args.secret, show=not args.json,
                record=args.record, replay=args.replay)
    if args.out:
        m.path.write_twin(args.out)
    if args.json:
        json.dump(m.report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        m.show()
        if args.out:
            print(f"twin written to {args.out} (bloatlab run {args.out}; bloatlab advise --path {args.out})")
    return 0
