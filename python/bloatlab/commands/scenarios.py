"""``bloatlab scenarios``: the ready scenarios under ``scenarios/``, one line each.

A scenario's line is its ``description`` key, else its first comment line.
``--schema`` prints the JSON Schema of the scenario language instead
(docs/schema/scenario-toml.schema.json is this output, for editors).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib

#: the repository's scenarios/ (beside python/)
DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "scenarios")


def register(sub) -> None:
    p = sub.add_parser("scenarios", help="list the ready scenarios (scenarios/), one line each",
                       description="The scenarios that come with bloatlab: run one with `bloatlab run PATH`.")
    p.add_argument("--dir", default=DIR, help="list this directory instead (default: the repository's scenarios/)")
    p.add_argument("--json", action="store_true", help="print [{path, about}] as JSON")
    p.add_argument("--schema", action="store_true",
                   help="print the JSON Schema of the scenario language (for editors: docs/scenario.md, \"Editors\")")
    p.set_defaults(func=main)


def summary(path: str) -> str:
    with open(path, "rb") as f:
        raw = f.read()
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        return f"(not a valid scenario: {e})"
    if isinstance(doc.get("description"), str):
        return doc["description"].strip().splitlines()[0]
    # else the leading comment block's first sentence
    block = []
    for line in raw.decode().splitlines():
        if not line.startswith("#"):
            if block:
                break
            continue
        block.append(line.lstrip("#").strip())
    text = " ".join(block)
    first = text.split(". ")[0]
    return (first if first.endswith(".") or first == text else first + ".") if text else "(no description)"


def find(d: str) -> list[dict]:
    out = []
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".toml"):
                p = os.path.join(root, f)
                out.append({"path": os.path.relpath(p, os.path.dirname(d)), "about": summary(p)})
    return out


def main(args) -> int:
    from ..errors import UserError

    if args.schema:
        from ..scenario_model import json_schema_text

        sys.stdout.write(json_schema_text())
        return 0
    if not os.path.isdir(args.dir):
        raise UserError(f"--dir: {args.dir} is not a directory")
    rows = find(args.dir)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from ._table import print_table

    print_table(["scenario", "what it is"], [(r["path"], r["about"]) for r in rows])
    return 0
