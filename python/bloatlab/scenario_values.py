"""The scenario language's values: each checker takes a TOML value as written
and returns it in base units (ns, bytes, bit/s), or raises ``ValueError`` with
the expected form (the scenario layer prefixes the key path).

No pydantic here: the language's pydantic models (:mod:`bloatlab.scenario_model`)
and the quick reader of common scenarios (:mod:`bloatlab.scenario_quick`) both
call these functions, so a value means the same whichever reads it.
"""

from __future__ import annotations

import functools

from . import units
from .scenario import APP_TICK_NS, DIRECTIONS, DSCP_NAMES, MTU, PROBE_KINDS, WIFI_MACS


@functools.cache
def cc_names() -> tuple[str, ...]:
    """Congestion controls the simulator knows (from the Rust core)."""
    from . import _native

    return tuple(_native.cc_names())


@functools.cache
def qdisc_list() -> tuple[dict, ...]:
    """Qdiscs and their parameters (the Rust core's ``QDISCS`` table), in its order."""
    from . import _native

    return tuple(_native.qdiscs())


def check_text(v):
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {v!r}")
    return v


def check_choice(v, choices):
    check_text(v)
    if v not in choices:
        raise ValueError(f'unknown value "{v}" (expected one of: {", ".join(choices)})')
    return v


def check_whole(v, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"expected a whole number, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"expected a whole number {rng}, got {v}")
    return v


def check_bool(v) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {v!r}")
    return v


def positive_duration(v) -> int:
    ns = units.parse_duration(v)
    if ns <= 0:
        raise ValueError(f'expected a positive duration, got "{v}"')
    return ns


def check_dscp(v) -> int:
    """A DiffServ code point: 0-63 or a name (``"EF"``, ``"CS1"``, ``"AF41"``)."""
    if isinstance(v, str) and v.strip().upper() in DSCP_NAMES:
        return DSCP_NAMES[v.strip().upper()]
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 63:
        return v
    raise ValueError(f"expected a DiffServ code point 0-63 or a name (EF, CS0-CS7, AF11-AF43, VA, LE), got {units.echo(v)!s}")


def check_loss(v) -> float:
    """A drop/error probability: ``"1%"`` or a bare fraction ``0.01``. A bare
    number of 1 or more is refused: ``loss = 1`` almost always means "1 %",
    and silently dropping every packet helps nobody."""
    bare = isinstance(v, (int, float)) and not isinstance(v, bool)
    if isinstance(v, str) and v.strip() and v.strip()[-1].isdigit():
        try:
            v, bare = float(v), True
        except ValueError:
            pass
    if bare and v >= 1:
        raise ValueError(f'a bare {v:g} would mean {v * 100:g} % loss; write "{v:g}%" for {v:g} percent (or "100%" if you mean it)')
    return units.parse_ratio(v)


def _positive(parse, what):
    def check(v):
        x = parse(v)
        if x <= 0:
            raise ValueError(f'expected a positive {what}, got "{v}"')
        return x
    return check


def _app_period(positive: bool):
    """An on/off period: the application writes every 10 ms, so a multiple of it."""
    def check(v):
        ns = positive_duration(v) if positive else units.parse_duration(v)
        if ns % APP_TICK_NS:
            raise ValueError(f'the application writes every 10 ms: give a multiple of 10ms, got "{v}"')
        return ns
    return check


def link_rate(v):
    """A rate, or ``"trace:FILE"`` (a Mahimahi trace, read when the scenario is resolved)."""
    if isinstance(v, str) and v.startswith("trace:"):
        return v
    return units.parse_rate(v)


def _buffer_no_bdp(example: str):
    def check(v):
        kind, amount = units.parse_buffer(v)
        if kind == "bdp":
            raise ValueError(f"expected packets or bytes like {example}")
        return kind, amount
    return check


def probe_size(v) -> int:
    size = units.parse_size(v)
    if not 16 <= size <= 1472:
        raise ValueError(f"expected a UDP payload of 16..1472 bytes, got {size}")
    return size


def burst_size(v) -> int:
    burst = units.parse_size(v)
    if burst < MTU:
        raise ValueError(f"expected at least one full packet ({MTU} B), got {burst} B")
    return burst


def object_size(v) -> int:
    size = units.parse_size(v)
    if size <= 0:
        raise ValueError(f"expected a positive size, got {v!r}")
    return size


def station_phy(v) -> dict:
    """``"mcs15"`` (HT20, long GI) or a rate like ``"144.4Mbit"`` (>= 1 Mbit/s)."""
    if isinstance(v, str) and v.strip().lower().startswith("mcs"):
        idx = v.strip().lower()[3:]
        if not idx.isdigit() or not 0 <= int(idx) <= 15:
            raise ValueError(f'expected an HT MCS "mcs0".."mcs15" or a rate like "144.4Mbit", got "{v}"')
        return {"mcs": int(idx), "phy_rate_bps": None}
    try:
        rate = units.parse_rate(v)
    except ValueError:
        raise ValueError(f'expected a PHY rate like "144.4Mbit" or an MCS like "mcs15", got {v!r}') from None
    if rate < 1_000_000:
        raise ValueError(f'expected a PHY rate of at least 1Mbit, got "{v}"')
    return {"mcs": None, "phy_rate_bps": rate}


def check_mpdu_error(v) -> float:
    err = check_loss(v)
    if err >= 1:
        raise ValueError(f"expected an error rate below 100%, got {v!r}")
    return err


def station_weight(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1000:
        raise ValueError(f"expected a number in (0, 1000], got {v!r}")
    return float(v)


def whole(lo: int, hi: int | None = None):
    """The checker of a whole number in [lo, hi] (no upper bound if ``hi`` is None)."""
    def check(v):
        return check_whole(v, lo, hi)
    return check


def check_optional_bool(v):
    return v if v is None else check_bool(v)


def check_direction(v) -> str:
    return check_choice(v, DIRECTIONS)


def check_cc(v) -> str:
    return check_choice(v, cc_names())


def check_probe_kind(v) -> str:
    return check_choice(v, PROBE_KINDS)


def check_wifi_mac(v) -> str:
    return check_choice(v, WIFI_MACS)


@functools.cache
def qdisc_names() -> tuple[str, ...]:
    return tuple(q["name"] for q in qdisc_list())


def check_qdisc(v) -> str:
    return check_choice(v, qdisc_names())
