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
    p.add_argument("--json", action="store_true", help="print [{name, path, file, about}] as JSON (name: what "
                                                       "`bloatlab run NAME` takes, or null where two files share it)")
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


def _files(d: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(d):
        dirs.sort()
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".toml")]
    return out


def _names(paths: list[str]) -> dict[str, str]:
    """Each file's name as `bloatlab run NAME` takes it: its stem where no other file has that stem."""
    stems: dict[str, list[str]] = {}
    for p in paths:
        stems.setdefault(os.path.splitext(os.path.basename(p))[0], []).append(p)
    return {ps[0]: stem for stem, ps in stems.items() if len(ps) == 1}


def find(d: str) -> list[dict]:
    paths = _files(d)
    names = _names(paths)
    return [{"name": names.get(p), "path": os.path.relpath(p, os.path.dirname(d)), "file": os.path.abspath(p),
             "about": summary(p)} for p in paths]


def lookup(arg: str) -> str:
    """A scenario argument: a file as given, or the name of a ready scenario (``rrul``, as ``flent rrul``), found
    in the scenarios that come with bloatlab from any directory; a name that matches none is an error listing
    the way to find them."""
    from ..errors import UserError

    if os.path.exists(arg) or os.sep in arg or arg.endswith(".toml") or not os.path.isdir(DIR):
        return arg
    paths = _files(DIR)
    for p, name in _names(paths).items():
        if name == arg:
            return p
    raise UserError(f"FILE: {arg}: neither a scenario file nor the name of a ready scenario "
                    "(bloatlab scenarios lists them)")


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

    here = os.getcwd()
    # what `bloatlab run` accepts: the name, else the path (relative to here when below it)
    shown = [(r["name"] or (os.path.relpath(r["file"]) if r["file"].startswith(here + os.sep) else r["file"]),
              r["about"]) for r in rows]
    print_table(["scenario (bloatlab run NAME)", "what it is"], shown)
    return 0
