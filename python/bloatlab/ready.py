"""The ready scenarios, found by name from any directory (``bloatlab run rrul``, as ``flent rrul``).

They are the gallery, which ships inside the package (``bloatlab/gallery/*.toml``: maturin's ``python-source``
puts every file of the package into the wheel), and in a repository checkout also the repository's
``scenarios/`` (the fidelity points, the examples the docs run). The repository's ``scenarios/gallery`` is a
symbolic link to the package's gallery: one copy of each file, and repository paths keep working. A ready
scenario's name is its file's stem, where no other ready file has that stem.
"""

from __future__ import annotations

import os

#: the gallery, inside the package (package data: pyproject's maturin python-source ships it in the wheel)
GALLERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gallery")
#: the repository's scenarios/ (beside python/); absent from an installed package
REPO = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scenarios")


def sources() -> list[str]:
    """The directories of ready scenarios: the gallery, then the repository's scenarios/ where there is one."""
    return [GALLERY] + ([REPO] if os.path.isdir(REPO) else [])


def toml_files(d: str) -> list[str]:
    # os.walk does not follow the repository's scenarios/gallery link: the gallery is listed once, as itself
    out = []
    for root, dirs, files in os.walk(d):
        dirs.sort()
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".toml")]
    return out


def names(paths: list[str]) -> dict[str, str]:
    """Each file's name as `bloatlab run NAME` takes it: its stem where no other file has that stem."""
    stems: dict[str, list[str]] = {}
    for p in paths:
        stems.setdefault(os.path.splitext(os.path.basename(p))[0], []).append(p)
    return {ps[0]: stem for stem, ps in stems.items() if len(ps) == 1}


def by_name(name: str) -> str | None:
    """The file of the ready scenario called ``name`` (a file's stem, unique among the ready ones), or None."""
    for p, n in names([p for d in sources() for p in toml_files(d)]).items():
        if n == name:
            return p
    return None


def lookup(arg: str, key: str = "FILE") -> str:
    """A scenario argument: a file as given, or the name of a ready scenario (``rrul``, as ``flent rrul``), found
    in the scenarios that come with bloatlab from any directory; a name that matches none is an error (naming
    ``key``) listing the way to find them."""
    from .errors import UserError

    if os.path.exists(arg) or os.sep in arg or arg.endswith(".toml"):
        return arg
    p = by_name(arg)
    if p is None:
        raise UserError(f"{key}: {arg}: neither a scenario file nor the name of a ready scenario "
                        "(bloatlab scenarios lists them)")
    return p
