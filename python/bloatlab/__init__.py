"""bloatlab: a laboratory for congestion control and bufferbloat.

>>> import bloatlab
>>> r = bloatlab.run("scenarios/bbr-vs-cubic.toml", set={"link.down.loss": "1%"})
>>> r.summary["flows"][0]["goodput_mbps"], r.flows.head()
"""

from __future__ import annotations

import os
from typing import Iterable

from ._version import __version__
from .errors import ScenarioError, UserError
from .result import Result
from .scenario import Scenario, load as load_scenario

__all__ = ["run", "load", "Result", "Scenario", "load_scenario", "ScenarioError", "UserError", "__version__"]


def run(
    scenario: "str | os.PathLike | dict | Scenario",
    engine: str = "sim",
    overrides: Iterable[str] = (),
    *,
    pcap: "str | os.PathLike | None" = None,
    **sets,
) -> Result:
    """Run a scenario and return its :class:`Result`.

    ``scenario`` is a TOML path, a ready scenario's name (``"rrul"``: ``bloatlab
    scenarios`` lists them), a TOML string, a dict or a :class:`Scenario`;
    ``overrides`` are ``--set``-style strings (``"link.down.loss=5%"``); keyword
    arguments override keys too, ``__`` standing for a dot
    (``flow__0__cc="bbr"``) or all at once as ``set={"flow.0.cc": "bbr"}``.
    ``pcap=DIR`` (not a scenario key) writes DIR/down.pcap and DIR/up.pcap on
    either engine: every packet's headers as it enters the link.
    """
    return _run(scenario, engine, overrides, pcap, sets)


def _run(scenario, engine: str, overrides: Iterable[str], pcap, sets: dict, flow_series: bool = True) -> Result:
    """:func:`run`; ``flow_series=False`` (the run verb without ``--out``):
    the simulator does not store the flows' samples unless the scenario's
    expectations read them. The summary is the same either way."""
    from . import summary as _summary
    from .engines import run_raw

    sc = load_scenario(scenario, overrides, **sets)
    resolved = sc.resolved()
    opts: dict = {"pcap": pcap} if pcap is not None else {}
    if engine == "sim" and sc is not scenario and sc._json is not None:
        opts["resolved_json"] = sc._json  # loaded just now: the text it was checked with is the run's
    if engine == "sim" and not flow_series and not sc.doc.get("expect"):
        opts["flow_series"] = False
    raw = run_raw(resolved, engine, **opts)
    doc = dict(sc.doc)
    doc.setdefault("name", sc.name)
    return Result(_summary.build(raw, resolved, doc, engine), raw.get("series", {}))


def load(path: "str | os.PathLike"):
    """Open stored results: a results directory (``bloatlab sweep``/``reproduce``)
    as a Store whose ``.runs`` and ``.flows`` are pandas DataFrames (plus
    ``.series()``, ``.query(sql)``), or one run directory as a :class:`Result`."""
    from .study.store import load as _load

    return _load(path)
