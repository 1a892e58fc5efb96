"""``bloatlab probe ...``: the standalone measurement binary (bloatlab-probe),
with its own arguments passed through unchanged (docs/probe.md)."""

from __future__ import annotations

import argparse
import subprocess


def register(sub) -> None:
    p = sub.add_parser("probe", help="measure a real network (runs bloatlab-probe)", add_help=False,
                       description="Runs bloatlab-probe with these arguments; see `bloatlab probe --help`.")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="bloatlab-probe's own arguments, passed through unchanged (`bloatlab probe --help` lists them)")
    p.set_defaults(func=main)


def main(args) -> int:
    from .._bin import find

    exe = find("bloatlab-probe")
    try:
        return subprocess.call([exe, *args.args])
    except KeyboardInterrupt:
        return 130
