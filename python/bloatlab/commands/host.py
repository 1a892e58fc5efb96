"""``bloatlab host``: check, apply and revert the host's congestion control and qdisc."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("host", help="check / apply / revert this host's congestion control and qdisc",
                       description="The server operator's part (docs/advise.md): what this host runs, and the two sysctl "
                                   "lines that change it (seed 004), applied so that they can be taken back.")
    hs = p.add_subparsers(dest="action", metavar="ACTION")
    hs.required = True
    for name, help_ in (("check", "kernel, controls, qdiscs, modules, interfaces, which sysctl file sets what"),
                        ("apply", "write /etc/sysctl.d/90-bloatlab.conf, set the running values, verify"),
                        ("revert", "restore what `apply` replaced"),
                        ("before-after", "seed 004 in one command: throughput test, apply, the same test, the comparison, revert")):
        q = hs.add_parser(name, help=help_, description=help_)
        q.add_argument("--root", default="/", metavar="DIR", help="work on a directory tree instead of / (tests)")
        q.add_argument("--json", action="store_true", help="print what was found and done as JSON")
        if name == "before-after":
            q.add_argument("server", metavar="HOST[:PORT]", help="a host running `bloatlab-probe server` (this host uploads to it)")
            q.add_argument("-t", "--time", type=float, default=10.0, metavar="SECS", help="length of each test (default 10)")
            q.add_argument("-P", "--parallel", type=int, default=1, help="parallel streams (default 1)")
            q.add_argument("--keep", action="store_true", help="keep the change afterwards (default: revert)")
        if name not in ("check", "before-after"):
            q.add_argument("--dry-run", action="store_true", help="print the change, change nothing")
        if name in ("apply", "before-after"):
            q.add_argument("--cc", help="congestion control, e.g. bbr")
            q.add_argument("--qdisc", help="default qdisc: fq, fq_codel, cake, pfifo_fast")
    p.set_defaults(func=main)


def main(args) -> int:
    import os

    from ..advise import host
    from ..errors import UserError

    if not os.path.isdir(args.root):
        raise UserError(f"--root {args.root}: not a directory")
    if args.action == "check":
        out = host.check(args.root)
    elif args.action == "before-after":
        if not 0.5 <= args.time <= 300:
            raise UserError(f"-t/--time: expected 0.5..300 seconds, got {args.time:g}")
        if not 1 <= args.parallel <= 64:
            raise UserError(f"-P/--parallel: expected 1..64, got {args.parallel}")
        out = host.before_after(args.server, args.cc, args.qdisc, args.time, args.parallel, args.keep, args.root,
                                show=not args.json)
    elif args.action == "apply":
        out = host.apply(args.root, args.cc, args.qdisc, args.dry_run)
    else:
        out = host.revert(args.root, args.dry_run)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.action == "check":
        print(f"kernel {out['kernel']} ({out['distro']['name']})")
        print(f"congestion control: {out['tcp_congestion_control']} (available: {' '.join(out['tcp_available_congestion_control'])})")
        print(f"default qdisc: {out['default_qdisc']}")
        print("modules: " + ", ".join(f"{m} {s}" for m, s in out["modules"].items()))
        for i in out["interfaces"]:
            print(f"  {i['name']}: root qdisc {i['root_qdisc'] or '?'}, BQL {'yes' if i['bql'] else 'no'}")
        for k, where in out["set_by"].items():
            if where:
                w = where[-1]
                print(f"{k} is set by {w['file']}:{w['line']} = {w['value']}" + (f" (and {len(where) - 1} earlier lines it overrides)" if len(where) > 1 else ""))
            else:
                print(f"{k}: no sysctl file sets it (kernel default)")
        for h in out["hints"]:
            print(f"hint: {h}")
    elif args.action == "before-after":
        b, a = out["before"], out["after"]
        from ._table import print_table

        print_table(["", "cc", ("goodput", "right"), ("retransmits", "right"), ("RTT p50", "right")],
                    [(name, x["cc"] or "?", f"{x['goodput_mbps']:.2f} Mbit/s", x["retransmits"], f"{x['rtt_p50_ms']:.1f} ms")
                     for name, x in (("before", b), ("after", a))])
        if out["ratio"]:
            print(f"after / before: {out['ratio']:.2f}x goodput")
        for n in out["notes"]:
            print(f"note: {n}")
        print("kept the change" if out["kept"] else "reverted: the host runs what it ran before")
    elif args.action == "apply":
        verb = "would write" if out.get("dry_run") else "wrote"
        print(f"{verb} {out['file']}:\n{out['text']}")
        for k, c in out["changes"].items():
            print(f"{k}: {c['was']} -> {c['now']}" + (" (verified)" if out.get("verified") else ""))
        if not out.get("dry_run"):
            print("`bloatlab host revert` restores the previous values")
    else:
        verb = "would restore" if out.get("dry_run") else "restored"
        for k, v in out["restore"].items():
            print(f"{verb} {k} = {v}")
    return 0
