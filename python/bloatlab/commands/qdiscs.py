"""``bloatlab qdiscs``: the queue disciplines and their parameters.

The table lives in the Rust core (``crates/core/src/qdisc/mod.rs``,
``QdiscKind``, and each qdisc's ``PARAMS``) — validation, the simulator and
the emulator read the same one; this prints it. ``docs/queues.md`` is this command's ``--markdown`` output
(a test keeps it current).
"""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("qdiscs", help="list the queue disciplines and their parameters",
                       description="The qdiscs a link can run (link.DIR.qdisc) and their parameters "
                                   "(link.DIR.qdisc_params), with Linux's defaults.")
    p.add_argument("name", nargs="?", help="show only this qdisc")
    p.add_argument("--json", action="store_true", help="print the qdiscs and their parameters as JSON")
    p.add_argument("--markdown", action="store_true", help="as docs/queues.md")
    p.set_defaults(func=main)


def _num(x: float) -> str:
    """``x`` short (``%g``) when that is exact, else with every digit it needs."""
    s = f"{x:g}"
    return s if float(s) == x else repr(x)


def default_text(kind: str, v: float) -> str:
    """A parameter's default as a scenario would write it (exactly: the
    listing's text reads back as the same value)."""
    if kind == "bool":
        return "true" if v else "false"
    if kind.startswith("choice:"):
        names = kind[len("choice:"):].split(",")
        return f'"{names[int(v)]}"' if 0 <= int(v) < len(names) else repr(v)
    if kind == "time":
        if v >= 1e18:
            return "off"
        return f'"{_num(v / 1e9)}s"' if v >= 1e9 else f'"{_num(v / 1e6)}ms"' if v >= 1e6 else f'"{_num(v / 1e3)}us"' if v else '"0ms"'
    if kind == "size":
        return f'"{int(v)}B"'
    if kind == "rate":
        # a rate is positive in a scenario: 0 means "leave it out" (its meaning is in the doc)
        return f'"{_num(v / 1e6)}Mbit"' if v else "unset"
    return _num(v)


def table() -> list[dict]:
    from .._native import qdiscs

    return [dict(q, params=[dict(p, default_text=default_text(p["kind"], p["default"])) for p in q["params"]]) for q in qdiscs()]


def markdown(qs: list[dict]) -> str:
    out = []
    for q in qs:
        out += [f"## `{q['name']}`", "", q["doc"], ""]
        if q["params"]:
            out += ["| parameter | kind | default | meaning |", "|---|---|---|---|"]
            for p in q["params"]:
                kind = p["kind"] if not p["kind"].startswith("choice:") else "one of " + ", ".join(f"`{c}`" for c in p["kind"][7:].split(","))
                out.append(f"| `{p['name']}` | {kind} | {p['default_text']} | {p['doc'].replace('|', '/')} |")
            out.append("")
        else:
            out += ["No parameters: its limit is the link's `buffer`.", ""]
    return "\n".join(out)


def main(args) -> int:
    from ..errors import UserError

    qs = table()
    if args.name:
        qs = [q for q in qs if q["name"] == args.name]
        if not qs:
            raise UserError(f'qdiscs: unknown qdisc "{args.name}" (known: {", ".join(q["name"] for q in table())})')
    if args.json:
        json.dump(qs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(markdown(qs) + "\n")
    else:
        from ._table import print_table

        if args.name:
            q = qs[0]
            print_table(["parameter", "default", "meaning"], [(p["name"], p["default_text"], p["doc"]) for p in q["params"]],
                        title=f"{q['name']}: {q['doc']}",
                        caption=None if q["params"] else "No parameters: its limit is the link's buffer.")
        else:
            print_table(["qdisc", "what it is"], [(q["name"], q["doc"]) for q in qs],
                        caption="`bloatlab qdiscs NAME` shows a qdisc's parameters (link.DIR.qdisc_params); "
                                "docs/queues.md has them all.")
    return 0
