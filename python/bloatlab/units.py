"""Unit strings of the scenario language (see docs/scenario.md).

The grammar is written once, in Rust (``crates/core/src/units.rs``), and
called here through the native module, so the scenario files, ``--set``, the
probe's and the emulator's command lines read ``"10 ms"``, ``"1500"`` (bytes)
or ``"1 BDP"`` alike. Rates are SI bits per second like tc (``Mbit`` = 10^6
bit/s, also ``Mbit/s``); sizes are SI bytes (``KB`` = 1000 B, ``KiB`` = 1024 B);
durations take ns/us/ms/s/min. What is Python's own is only what TOML adds:
integers for sizes, numbers for fractions. Every parser raises ``ValueError``
with the expected form; the scenario layer prefixes the key path.
"""

from __future__ import annotations

import math

from . import _native

#: The largest value any engine holds (ns, bytes, bit/s are 64-bit integers there).
MAX_INT = 2**63 - 1
#: Bad values are echoed at most this long in messages.
ECHO_MAX = 60


def echo(v: object) -> str:
    """``repr``/text of a bad value for a message, cut to :data:`ECHO_MAX` characters."""
    t = v if isinstance(v, str) else repr(v)
    return t if len(t) <= ECHO_MAX else f"{t[:ECHO_MAX]}... ({len(t)} characters)"


def _text(text: object, example: str, what: str) -> str:
    if isinstance(text, bool) or not isinstance(text, str):
        raise ValueError(f'expected {what} like "{example}", got {echo(text)}')
    return text


def parse_rate(text: object) -> int:
    """``"100Mbit"`` -> 100_000_000 (bit/s). Must be positive."""
    return _native.parse_unit("rate", _text(text, "100Mbit", "a rate"))


def parse_duration(text: object) -> int:
    """``"10ms"`` -> 10_000_000 (ns). May be zero, never negative."""
    return _native.parse_unit("duration", _text(text, "10ms", "a duration"))


def parse_size(text: object) -> int:
    """``"375KB"`` -> 375_000 (bytes). Integers and unitless strings are bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"expected a non-negative size, got {text}")
        if text > MAX_INT:
            raise ValueError(f"the size {echo(text)} is too large (the engines hold at most {MAX_INT:.3g} base units)")
        return text
    return _native.parse_unit("size", _text(text, "375KB", "a size"))


def parse_ratio(text: object) -> float:
    """``"1%"`` or ``0.01`` -> 0.01. Must lie in [0, 1]."""
    if isinstance(text, bool):
        raise ValueError(f'expected a fraction like "1%" or 0.01, got {text!r}')
    if isinstance(text, (int, float)):
        v = float(text)
        if not (0.0 <= v <= 1.0) or math.isnan(v):
            raise ValueError(f"expected a value in [0, 1] (0%..100%), got {text!r}")
        return v
    return _native.parse_unit("ratio", _text(text, "1%", "a fraction"))


def parse_buffer(text: object) -> tuple[str, float]:
    """``"375KB"`` -> ("bytes", 375000); ``"1000pkt"`` -> ("pkts", 1000);
    ``"1 BDP"`` -> ("bdp", 1.0). Integers are bytes. Must be positive."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text <= 0:
            raise ValueError(f'expected a positive buffer, got "{text}"')
        return "bytes", float(parse_size(text))
    if isinstance(text, bool) or not isinstance(text, str):
        raise ValueError(f'expected a buffer like "375KB", "1000pkt" or "1bdp", got {echo(text)}')
    kind, amount = _native.parse_unit("buffer", text)
    return kind, amount


def fmt_rate(bps: float) -> str:
    for unit, mult in (("Gbit", 1e9), ("Mbit", 1e6), ("Kbit", 1e3)):
        if bps >= mult:
            return f"{bps / mult:g}{unit}"
    return f"{bps:g}bit"
