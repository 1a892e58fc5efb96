"""Find bloatlab's helper binaries (bloatlab-probe, bloatlab-emu).

They are found, in order: in ``$BLOATLAB_BIN_DIR`` when it is set (a
developer's second checkout: its own ``target/release``), next to this Python (the venv's bin, where ``make
setup`` installs them), in the package's own ``bin/`` (where ``make dist``
puts them into the wheel), in the repository's release build, on PATH. Only
an executable ELF file counts: a wheel's ``bloatlab-probe`` console script
(:func:`probe_main`, which runs the packaged binary) is not the binary.
"""

from __future__ import annotations

import os
import shutil
import sys

from .errors import EngineUnavailable

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
#: the wheel's copy of the helper binaries (``make dist``)
PACKAGE_BIN = os.path.join(_HERE, "bin")


def _is_binary(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return os.access(path, os.X_OK) and f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find(name: str) -> str:
    """The path of binary ``name`` (see the module's docstring for the order)."""
    override = os.environ.get("BLOATLAB_BIN_DIR")
    candidates = [os.path.join(override, name)] if override else []
    candidates += [os.path.join(os.path.dirname(sys.executable), name), os.path.join(PACKAGE_BIN, name),
                  os.path.join(_REPO, "target", "release", name)]
    for c in candidates:
        if os.path.isfile(c) and _is_binary(c):
            return c
    found = shutil.which(name)
    if found and _is_binary(found):
        return found
    raise EngineUnavailable(f"{name} not found (run `make setup` in a checkout to build it, or install a wheel "
                            f"made by `make dist`, which carries it)")


def _exec(name: str) -> None:
    try:
        path = find(name)
    except EngineUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    os.execv(path, [path, *sys.argv[1:]])


def probe_main() -> None:
    """``bloatlab-probe`` as a wheel's console script: run the packaged binary."""
    _exec("bloatlab-probe")


def emu_main() -> None:
    """``bloatlab-emu`` as a wheel's console script: run the packaged binary."""
    _exec("bloatlab-emu")
