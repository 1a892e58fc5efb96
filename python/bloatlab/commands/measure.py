"""``bloatlab measure HOST``: a model of a real path (its digital twin)."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("measure", help="measure a path to a bloatlab-probe server and write its twin",
                       description="Base RTT and loss at idle, the bottleneck rate per direction, latency under load and its "
                                   "bufferbloat grade, the buffer, and what limits the rate — against a host running "
                                   "`bloatlab-probe server` (docs/advise.md).")
    p.add_argument("host", metavar="HOST[:PORT]", help="a host running `bloatlab-probe server`")
    p.add_argument("-p", "--port", type=int, help="the server's port (as iperf3's -p; or HOST:PORT; default 5301)")
    p.add_argument("--quick", action="store_true", help="shorter phases (~25-30 s in all instead of ~45-60 s; longer on long paths)")
    p.add_argument("--flows", type=int, default=4, help="parallel TCP flows per direction (default 4)")
    p.add_argument("--no-up", action="store_true", help="measure the download direction only")
    p.add_argument("--secret", help="the server's shared secret")
    p.add_argument("--out", metavar="TWIN.toml", help="write the path's twin scenario here")
    p.add_argument("--json", action="store_true", help="print the measurements as JSON (no progress lines)")
    p.set_defaults(func=main)


def main(args) -> int:
    from ..advise.measure import measure, with_port

    m = measure(with_port(args.host, args.port), quick=args.quick, flows=args.flows, up=not args.no_up, secret=args.secret, show=not args.json)
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
