"""``bloatlab scenarios``: the ready scenarios, one line each.

They are the gallery, which ships inside the package (``bloatlab/gallery/``,
so an installed wheel has them), and in a repository checkout also the
repository's ``scenarios/`` (the fidelity points, the examples the docs run).
The repository's ``scenarios/gallery`` is a symbolic link to the package's
gallery: one copy of each file, and the repository paths (docs, exp.toml,
tests) keep working. ``bloatlab run NAME`` takes a file's name (its stem)
from any directory, as ``flent rrul`` does.

A scenario's line is its ``description`` key, else its first comment line.
``--schema`` prints the JSON Schema of the scenario language instead
(docs/schema/scenario-toml.schema.json is this output, for editors).
"""

from __future__ import annotations

import re

import json
import os
import sys
import tomllib

from ..ready import GALLERY, REPO, by_name, lookup, names, sources, toml_files  # noqa: F401  (lookup: run's argument)


def register(sub) -> None:
    p = sub.add_parser("scenarios", help="list the ready scenarios (the gallery), one line each",
                       description="The scenarios that come with bloatlab (the gallery, in the package; in a "
                                   "repository checkout also its scenarios/): run one with `bloatlab run NAME`.")
    p.add_argument("--dir", help="list this directory instead (default: the gallery, and the repository's "
                                 "scenarios/ in a checkout)")
    p.add_argument("--json", action="store_true", help="print [{name, path, file, about}] as JSON (name: what "
                                                       "`bloatlab run NAME` takes, or null where two files share it)")
    p.add_argument("--schema", action="store_true",
                   help="print the JSON Schema of the scenario language (for editors: docs/scenario.md, \"Editors\")")
    p.set_defaults(func=main)


def summary(path: str) -> str:
    from .. import files
    from ..errors import UserError

    try:
        raw = files.read_bytes(path, files.TEXT_LIMIT, "scenario")
    except UserError as e:
        return f"(not read: {e})"
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
    # a sentence ends at ". " — not after an abbreviation ("Hock et al. 2017", "e.g. 10 ms")
    first = re.split(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)\. ", text)[0]
    return (first if first.endswith(".") or first == text else first + ".") if text else "(no description)"


def find(dirs: str | list[str]) -> list[dict]:
    """Rows {name, path, file, about} of the scenarios in ``dirs``; ``path`` is relative to each directory's
    parent (``gallery/rrul.toml``, ``scenarios/bbr-1pct.toml``)."""
    dirs = [dirs] if isinstance(dirs, str) else dirs
    paths = [(d, p) for d in dirs for p in toml_files(d)]
    named = names([p for _, p in paths])
    return [{"name": named.get(p), "path": os.path.relpath(p, os.path.dirname(d)), "file": os.path.abspath(p),
             "about": summary(p)} for d, p in paths]


def main(args) -> int:
    from ..errors import UserError

    if args.schema:
        from ..scenario import json_schema_text

        sys.stdout.write(json_schema_text())
        return 0
    if args.dir is not None and not os.path.isdir(args.dir):
        raise UserError(f"--dir: {args.dir} is not a directory")
    rows = find(args.dir if args.dir is not None else sources())
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
