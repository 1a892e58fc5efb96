"""The indented JSON text of a result (``run --json``, a run's summary.json).

Written by orjson (a kept library, Rust): Python's ``json`` has no C path
with ``indent`` and spent ~20 ms on the summary of 1000 flows (quiet machine;
~150-290 ms under load) where orjson takes ~3-6 ms (BENCHMARKS.md,
"Scaling"). The text is the same as ``json.dumps(obj, indent=2)`` for what a
summary holds (dicts with string keys, lists, str, int, float, bool, None;
floats printed shortest-round-trip by both), with three differences, all
valid JSON: a float NaN or infinity is ``null`` (``json`` writes ``NaN``,
which is not JSON), text outside ASCII is written as UTF-8 instead of
``\\uXXXX`` escapes, and numpy scalars are numbers.
"""

from __future__ import annotations

from typing import Any, Callable


def indented(obj: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """``obj`` as UTF-8 JSON text indented by 2, with a final newline;
    ``default`` converts what JSON has no type for (as ``json.dumps``'s)."""
    import orjson

    opts = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    return orjson.dumps(obj, default=default, option=opts)
