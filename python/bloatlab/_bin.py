"""Find bloatlab's helper binaries (bloatlab-probe, bloatlab-emu)."""

from __future__ import annotations

import os
import shutil
import sys

from .errors import EngineUnavailable

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


def find(name: str) -> str:
    """The path of binary ``name``: next to this Python (the venv's bin, where
    ``make setup`` installs it), then the repo's release build, then PATH."""
    candidates = [
        os.path.join(os.path.dirname(sys.executable), name),
        os.path.join(_REPO, "target", "release", name),
    ]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which(name)
    if found:
        return found
    raise EngineUnavailable(f"{name} not found (run `make setup` to build it)")
