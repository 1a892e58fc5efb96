"""Unit strings of the scenario language (see docs/scenario.md).

Rates are SI bits per second like tc (``Mbit`` = 10^6 bit/s); sizes are SI
bytes (``KB`` = 1000 B, ``KiB`` = 1024 B); durations take ns/us/ms/s/min.
Every parser raises ``ValueError`` with the expected form; the scenario layer
prefixes the key path. The Rust front ends follow the same rules
(``crates/core/src/units.rs``).
"""

from __future__ import annotations

import math
import re

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_RE = re.compile(rf"^\s*{_NUM}\s*([A-Za-zµ%]*)\s*$")

RATE_UNITS = {"bit": 1, "bps": 1, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6, "gbit": 1e9, "gbps": 1e9}
TIME_UNITS = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9}
SIZE_UNITS = {"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


#: The largest value any engine holds (ns, bytes, bit/s are 64-bit integers there).
MAX_INT = 2**63 - 1
#: Bad values are echoed at most this long in messages.
ECHO_MAX = 60


def echo(v: object) -> str:
    """``repr``/text of a bad value for a message, cut to :data:`ECHO_MAX` characters."""
    t = v if isinstance(v, str) else repr(v)
    return t if len(t) <= ECHO_MAX else f"{t[:ECHO_MAX]}... ({len(t)} characters)"


def _bounded(x: float, text: object, what: str) -> int:
    v = round(x)
    if v > MAX_INT:
        raise ValueError(f'{what} "{echo(text)}" is too large (the engines hold at most {MAX_INT:.3g} base units)')
    return v


def _split(text: object, example: str, what: str) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, str):
        raise ValueError(f'expected {what} like "{example}", got {echo(text)}')
    m = _RE.match(text) if len(text) <= 100 else None
    if not m:
        raise ValueError(f'expected {what} like "{example}", got "{echo(text)}"')
    v = float(m.group(1))
    if not math.isfinite(v):
        raise ValueError(f'expected {what} like "{example}", got "{echo(text)}"')
    return v, m.group(2)


def parse_rate(text: object) -> int:
    """``"100Mbit"`` -> 100_000_000 (bit/s). Must be positive."""
    v, unit = _split(text, "100Mbit", "a rate")
    mult = RATE_UNITS.get(unit.lower())
    if mult is None:
        raise ValueError(f'expected a rate like "100Mbit" (units: bit, Kbit, Mbit, Gbit), got "{text}"')
    bps = _bounded(v * mult, text, "the rate")
    if bps <= 0:
        raise ValueError(f'expected a positive rate, got "{text}"')
    return bps


def parse_duration(text: object) -> int:
    """``"10ms"`` -> 10_000_000 (ns). May be zero, never negative."""
    v, unit = _split(text, "10ms", "a duration")
    mult = TIME_UNITS.get(unit)
    if mult is None:
        raise ValueError(f'expected a duration like "10ms" (units: ns, us, ms, s, min), got "{text}"')
    if v < 0:
        raise ValueError(f'expected a non-negative duration, got "{text}"')
    return _bounded(v * mult, text, "the duration")


def parse_size(text: object) -> int:
    """``"375KB"`` -> 375_000 (bytes). Integers are bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"expected a non-negative size, got {text}")
        return _bounded(text, text, "the size")
    v, unit = _split(text, "375KB", "a size")
    mult = SIZE_UNITS.get(unit)
    if mult is None:
        raise ValueError(f'expected a size like "375KB" (units: B, KB, MB, GB, KiB, MiB, GiB), got "{text}"')
    if v < 0:
        raise ValueError(f'expected a non-negative size, got "{text}"')
    return _bounded(v * mult, text, "the size")


def parse_ratio(text: object) -> float:
    """``"1%"`` or ``0.01`` -> 0.01. Must lie in [0, 1]."""
    if isinstance(text, bool):
        raise ValueError(f'expected a fraction like "1%" or 0.01, got {text!r}')
    if isinstance(text, (int, float)):
        v = float(text)
    else:
        num, unit = _split(text, "1%", "a fraction")
        if unit == "%":
            v = num / 100.0
        elif unit == "":
            v = num
        else:
            raise ValueError(f'expected a fraction like "1%" or 0.01, got "{text}"')
    if not (0.0 <= v <= 1.0) or math.isnan(v):
        raise ValueError(f"expected a value in [0, 1] (0%..100%), got {text!r}")
    return v


def fmt_rate(bps: float) -> str:
    for unit, mult in (("Gbit", 1e9), ("Mbit", 1e6), ("Kbit", 1e3)):
        if bps >= mult:
            return f"{bps / mult:g}{unit}"
    return f"{bps:g}bit"
