"""Built-in experiments: one file per study of the seed documents.

Each module defines ``EXPERIMENT``, an :class:`Experiment` with

- ``name``, ``title``, ``source`` (the citation) and ``published`` (the
  numbers the source reports, as text);
- ``sweep(quick)`` -> :class:`~bloatlab.study.spec.Sweep` (``quick``: a
  reduced version that finishes in well under a minute on 2 cores);
- ``analyze(store)`` -> figures and tables for the report;
- ``claims(store)`` -> :class:`~bloatlab.study.check.Claim` list for ``--check``.
"""

from __future__ import annotations

import importlib

from ...errors import UserError

MODULES = {
    "bbr-vs-cubic-loss": "bbr_vs_cubic_loss",
    "imc2019": "imc2019",
    "bufferbloat": "bufferbloat",
    "janog-policer-shaper": "janog_policer_shaper",
    "janog-lossy-download": "janog_lossy_download",
    "multi-bbr": "multi_bbr",
    "make-wifi-fast": "make_wifi_fast",
    "google-nsperf": "google_nsperf",
}


class Experiment:
    name = ""
    title = ""
    source = ""
    published = ""

    def sweep(self, quick: bool):  # -> Sweep
        raise NotImplementedError

    #: the report's generic plots of every part (an experiment of many one-point parts draws its own instead)
    generic_plots = True

    def sweep_for(self, quick: bool, engine: str):  # -> Sweep
        """The sweep for ``engine`` (an experiment may leave out what that engine cannot run)."""
        return self.sweep(quick)

    def timeout(self, quick: bool) -> float:
        """Seconds after which one point is killed (a hung engine must not hang CI)."""
        return 30.0 if quick else 900.0

    def analyze(self, store) -> dict:
        """{"figures": [(caption, Figure)], "tables": [(caption, DataFrame)]}"""
        return {"figures": [], "tables": []}

    def claims(self, store) -> list:
        return []


def names() -> list[str]:
    return list(MODULES)


def get(name: str) -> Experiment:
    if name not in MODULES:
        raise UserError(f'reproduce: unknown experiment "{name}" (known: {", ".join(MODULES)})')
    return importlib.import_module(f".{MODULES[name]}", __package__).EXPERIMENT
