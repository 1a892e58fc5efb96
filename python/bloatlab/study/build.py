"""The build a run is made with: what the store records beside each run, so
that a resumed sweep knows whether a stored run still stands for this code.

A point's ``run_id`` (spec.run_id) says *what* was run (part, base scenario,
overrides, seed); it says nothing of the code that ran it. The build does:

- ``sim``: bloatlab's version, the SHA-256 of the native module file this
  process imported (``bloatlab/_native*.so``: the whole Rust model — TCP,
  congestion controls, queues, links — and the scenario language), and the
  SHA-256 of the Python sources that turn a point into a run and its figures
  (:data:`SOURCES`: the scenario compiler, the engines, the summary builder).
- ``emu``: all of that (the native module resolves the scenario), plus the
  ``bloatlab-emu`` and ``bloatlab-probe`` binaries the engine runs (the link
  and the traffic generators) and the kernel release (``uname -r``): there
  the kernel is the engine.

A build's ``id`` is ``<version>+<12 hex>``, the first 12 hex digits of the
SHA-256 of its parts (canonical JSON). It is computed once per process and
engine (hashing the ~4 MB native module takes a few ms; BENCHMARKS.md
"Results store") and inherited by forked pool workers.

What is left out, on purpose: the store and sweep code (they file runs, they
do not compute them: an edit there must not make every stored run stale),
the report and plots (they read stored figures), and the kernel's sysctls
(a run's summary records those it saw).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field

#: the Python sources (relative to the package) that shape a run: the scenario
#: compiler's Python half (overrides, start_jitter, units, traces), the
#: engines' drivers, the summary that turns a raw result into the stored
#: figures, and ``bloatlab.run`` that strings them together
SOURCES = ("__init__.py", "scenario.py", "units.py", "traces.py", "summary.py",
           "engines/__init__.py", "engines/sim.py", "engines/emu.py")

#: what a build part reads when its file is not there (a binary not built):
#: a point of that engine fails anyway, and the id still differs from a
#: build that had it
MISSING = "missing"

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Build:
    """One build: ``id`` (what the store's ``build`` column holds) and the
    ``parts`` it is the hash of (what each stored run.json keeps)."""

    id: str
    parts: dict = field(compare=False)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return MISSING
    return h.hexdigest()


def native_path() -> str:
    """The native module file this process imported."""
    from .. import _native

    return os.path.abspath(_native.__file__)


def sources_digest() -> str:
    """SHA-256 over :data:`SOURCES` (each file's name and content, in order)."""
    h = hashlib.sha256()
    for rel in SOURCES:
        h.update(rel.encode() + b"\0")
        h.update(_sha256(os.path.join(_PKG, rel)).encode() + b"\0")
    return h.hexdigest()


def _binary(name: str) -> str:
    from .. import _bin
    from ..errors import EngineUnavailable

    try:
        return _sha256(_bin.find(name))
    except EngineUnavailable:
        return MISSING


@functools.cache
def identity(engine: str = "sim") -> Build:
    """This process's build for ``engine`` (``sim`` or ``emu``), computed once."""
    from .._version import __version__

    if engine == "emu":  # the simulator's parts (hashed once for both engines) and the emulator's own
        parts = dict(identity("sim").parts)
        parts.update({"bloatlab-emu": _binary("bloatlab-emu"), "bloatlab-probe": _binary("bloatlab-probe"),
                      "kernel": os.uname().release})
    else:
        parts = {"version": __version__, "native": _sha256(native_path()), "python": sources_digest()}
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return Build(f"{__version__}+{digest[:12]}", parts)


def differs(old: dict | None, new: dict) -> list[str]:
    """The parts in which a stored build (its run.json's ``build``; None for a
    run stored before builds were recorded) differs from ``new``: what the
    sweep names when it runs a point again."""
    if not isinstance(old, dict):
        return []
    return [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
