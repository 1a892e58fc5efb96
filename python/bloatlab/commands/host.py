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
                        ("revert", "restore what `apply` replaced")):
        q = hs.add_parser(name, help=help_, description=help_)
        q.add_argument("--root", default="/", metavar="DIR", help="work on a directory tree instead of / (tests)")
        q.add_argument("--json", action="store_true")
        if name != "check":
            q.add_argument("--dry-run", action="store_true", help="print the change, change nothing")
        if name == "apply":
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
