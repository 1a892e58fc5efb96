"""A quick reader of the common scenarios, without pydantic.

Importing pydantic and building the language's models (:mod:`bloatlab.scenario_model`)
costs about 0.11 s of CPU, more than the simulator needs for a minute of one
100-Mbit/s flow (BENCHMARKS.md, "Simulator vs ns-3"). Most scenarios use only the
top-level keys, ``[[flow]]``, ``[[probe]]``, ``[limits]`` and ``[link.*]`` without
``policer``, ``shaper`` or ``qdisc_params``: :func:`validate` reads those with the
same value checkers (:mod:`bloatlab.scenario_values`) and defaults as the models,
and gives what :func:`bloatlab.scenario_model.validate` would give, as plain
attributes.

It only ever says yes: for anything else — another table, an unknown or missing
key, a value a checker refuses — it returns None and the models decide, so every
error message is theirs. ``tests/test_scenario_quick.py`` holds the tables here
against the models (same keys in the same order, same defaults, the same answers
to a set of good and bad values) so that the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from . import units
from .scenario import LIMITS
from .scenario_values import (_app_period, _buffer_no_bdp, _positive, check_bool, check_cc, check_direction,
                              check_dscp, check_loss, check_optional_bool, check_probe_kind, check_qdisc, check_text,
                              link_rate, positive_duration, probe_size, whole)

#: A required key (no default).
REQUIRED = object()

# Each table: key -> (checker, default, validate_default), in the models' order.
# A default is given to the checker as the models do (validate_default), else used as it is.
FLOW = {
    "name": (check_text, None, False),
    "cc": (check_cc, "cubic", True),
    "direction": (check_direction, "down", True),
    "rtt": (positive_duration, REQUIRED, True),
    "count": (whole(1, 100_000), 1, True),
    "start": (units.parse_duration, "0s", True),
    "stop": (units.parse_duration, None, False),
    "size": (_positive(units.parse_size, "size"), None, False),
    "rate": (_positive(units.parse_rate, "rate"), None, False),
    "on": (_app_period(True), None, False),
    "off": (_app_period(False), None, False),
    "ecn": (check_optional_bool, None, True),
    "tso": (check_bool, True, True),
    "pacing": (check_bool, False, True),
    "station": (check_text, None, False),
    "dscp": (check_dscp, 0, True),
}
PROBE = {
    "name": (check_text, None, False),
    "kind": (check_probe_kind, "udp", True),
    "interval": (positive_duration, "10ms", True),
    "rtt": (positive_duration, None, False),
    "size": (probe_size, "64B", True),
    "direction": (check_direction, "down", True),
    "station": (check_text, None, False),
    "dscp": (check_dscp, 0, True),
}
LIMITS_TABLE = {k: (whole(1, units.MAX_INT), v, True) for k, v in LIMITS.items()}
#: ``[link.*]``; ``policer``, ``shaper`` and ``qdisc_params`` are left to the models.
LINK = {
    "rate": (link_rate, REQUIRED, True),
    "buffer": (units.parse_buffer, "1bdp", True),
    "loss": (check_loss, 0, True),
    "device_queue": (_buffer_no_bdp('"2pkt" or "3000B"'), None, False),
    "qdisc": (check_qdisc, "fifo", True),
}
#: The document; ``flow``, ``probe``, ``link`` and ``limits`` are read by their tables.
TOP = {
    "name": (check_text, None, False),
    "description": (check_text, None, False),
    "duration": (positive_duration, REQUIRED, True),
    "seed": (whole(0, 2**63 - 1), 1, True),
    "sample_interval": (positive_duration, "10ms", True),
    "start_jitter": (units.parse_duration, None, False),
}
TABLES = {"flow", "probe", "link", "limits"}
#: The keys whose documents this reader leaves to the models.
TOP_LEFT = frozenset({"page", "wifi"})
LINK_LEFT = frozenset({"policer", "shaper", "qdisc_params"})


def key_names() -> dict[str, frozenset[str]]:
    """The keys of the tables read here, as :func:`bloatlab.scenario.key_names` gives them (for ``--set`` paths)."""
    return {"TOP_KEYS": frozenset(TOP) | TABLES | TOP_LEFT, "FLOW_KEYS": frozenset(FLOW), "PROBE_KEYS": frozenset(PROBE),
            "LINK_KEYS": frozenset(LINK) | LINK_LEFT}


class _Unsure(Exception):
    """The quick reader leaves this document to the models."""


class Values:
    """A validated table: its keys as attributes (what the models' instances offer)."""

    def __init__(self, **values: Any):
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"Values({self.__dict__!r})"


class Link(Values):
    def qdisc_values(self) -> dict[str, float]:
        """The qdisc parameters given, in base units: none (``qdisc_params`` goes to the models)."""
        return {}


def _table(spec: dict, data: Any, cls: type = Values, **extra: Any) -> Values:
    if not isinstance(data, dict) or any(k not in spec for k in data):
        raise _Unsure
    out = {}
    for key, (check, default, validate_default) in spec.items():
        if key in data:
            out[key] = check(data[key])
        elif default is REQUIRED:
            raise _Unsure
        else:
            out[key] = check(default) if validate_default else default
    return cls(**out, **extra)


def _tables(spec: dict, items: Any) -> list[Values]:
    if not isinstance(items, list):
        raise _Unsure
    return [_table(spec, x) for x in items]


def validate(doc: dict) -> Values | None:
    """``doc`` validated as :func:`bloatlab.scenario_model.validate` would, or
    None if this reader leaves it to the models (they then give the answer or the error)."""
    try:
        if not isinstance(doc, dict) or any(k not in TOP and k not in TABLES for k in doc):
            return None
        top = {k: v for k, v in doc.items() if k in TOP}
        link = doc.get("link")
        if link is not None:
            if not isinstance(link, dict) or any(k not in ("down", "up") for k in link):
                return None
            link = Values(**{d: _table(LINK, link[d], Link, policer=None, shaper=None) if d in link else None
                             for d in ("down", "up")})
        return _table(TOP, top, flow=_tables(FLOW, doc.get("flow", [])), page=[],
                      probe=_tables(PROBE, doc.get("probe", [])), link=link, wifi=None,
                      limits=_table(LIMITS_TABLE, doc.get("limits", {})))
    except Exception:  # noqa: BLE001 - whatever a checker raises, the models raise it again with its key
        return None
