"""The scenario language v1: TOML in, validated and resolved scenario out.

The language itself — its tables, keys, units, defaults, the rules across
values and every error message — is written once, in Rust
(``crates/schema/src/language``), and called here through the native module.
What is Python's: reading the file (:func:`load`, :func:`loads`), applying
``--set`` overrides to the document before it is checked (:func:`apply_override`;
sweeps use :func:`set_path`), reading trace files with the project's bounds,
and drawing ``start_jitter`` from the seed. An unknown key, a wrong unit or an
out-of-range value anywhere is a :class:`ScenarioError` naming the key path.
A :class:`Scenario` is resolved once, when loaded, into the engine-neutral
form of ``docs/engine-interface.md``: SI base units, ``count`` expanded,
``bdp`` buffers turned into bytes.
"""

from __future__ import annotations

import functools
import os
import tomllib
from typing import Any, Iterable

from .errors import ScenarioError, UserError

DIRECTIONS = ("down", "up")
MTU = 1500  # bytes on the wire of a full-size TCP segment (MSS 1448 + 52 B of headers)


def _mem_available() -> int | None:
    """MemAvailable of /proc/meminfo, bytes (None where there is none): a run
    whose time series would need more is refused before it starts."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def cc_names() -> list[str]:
    """Congestion controls the simulator knows (from the Rust core)."""
    return list(_native().cc_names())


def qdisc_table() -> dict[str, dict]:
    """Qdiscs and their parameters (from the Rust core's ``QDISCS`` table)."""
    return {q["name"]: q for q in _native().qdiscs()}


# ---------------------------------------------------------------- key names (for --set paths)


@functools.cache
def key_names() -> dict[str, frozenset[str]]:
    """Each table's keys, from the language: TOP_KEYS, LINK_KEYS, FLOW_KEYS, ..."""
    return {name: frozenset(keys) for name, keys in _native().scenario_keys()}


def _keys(name: str) -> frozenset[str]:
    return key_names()[name]


def __getattr__(name: str):
    if name.endswith("_KEYS") and name in key_names():
        return key_names()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def json_schema() -> dict:
    """The JSON Schema of the TOML scenario language (docs/schema/scenario-toml.schema.json,
    written by ``bloatlab scenarios --schema``)."""
    return _native().scenario_schema()


def json_schema_text() -> str:
    """:func:`json_schema` as the checked-in file holds it."""
    import json

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- overrides


def _parse_value(text: str):
    """A ``--set`` value: a TOML literal if it is one (``3``, ``true``,
    ``0.01``, ``"x"``, ``[1, 2]``), else the bare string (``5%``, ``cubic``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(doc: dict, assignment: str) -> None:
    """Apply ``path=value`` (``link.down.loss=5%``, ``flow.0.cc=cubic``) to a
    scenario document in place. Paths are checked against the language, so a
    typo is an error naming it instead of a silently ignored key."""
    if "=" not in assignment:
        raise ScenarioError("--set", f'expected KEY=VALUE like "link.down.loss=1%", got "{assignment}"')
    path, text = assignment.split("=", 1)
    path = path.strip()
    value = _parse_value(text.strip())
    set_path(doc, path, value, where=f"--set {path}")


#: the language's lists of tables (``[[flow]]`` ...): a key path into one names its index, ``flow.0.cc``
LIST_TABLES = ("flow", "probe", "page", "train", "expect")


def set_path(doc: dict, path: str, value: Any, where: str | None = None) -> None:
    where = where or path
    parts = path.split(".")
    if not path or any(p == "" for p in parts):
        raise ScenarioError(where, "empty key path")
    head = parts[0]
    if head in LIST_TABLES:
        items = doc.get(head)
        if len(parts) < 3 or not parts[1].isdigit():
            raise ScenarioError(where, f"expected {head}.N.KEY (N counts from 0)")
        i = int(parts[1])
        if not isinstance(items, list) or i >= len(items):
            n = len(items) if isinstance(items, list) else 0
            raise ScenarioError(where, f"there is no {head} {i} (the scenario has {n})")
        target, rest, allowed = items[i], parts[2:], _keys(f"{head.upper()}_KEYS")
    elif head == "wifi" and len(parts) >= 2 and parts[1] == "station":
        items = doc.get("wifi", {}).get("station")
        if len(parts) < 4 or not parts[2].isdigit():
            raise ScenarioError(where, "expected wifi.station.N.KEY (N counts from 0)")
        i = int(parts[2])
        if not isinstance(items, list) or i >= len(items):
            n = len(items) if isinstance(items, list) else 0
            raise ScenarioError(where, f"there is no wifi.station {i} (the scenario has {n})")
        target, rest, allowed = items[i], parts[3:], _keys("WIFI_STATION_KEYS")
    elif head == "wifi":
        target, rest, allowed = doc.setdefault("wifi", {}), parts[1:], _keys("WIFI_KEYS") - {"station"}
        if not rest:
            raise ScenarioError(where, "expected wifi.KEY")
    elif head == "link":
        if len(parts) < 3 or parts[1] not in DIRECTIONS:
            raise ScenarioError(where, "expected link.down.KEY or link.up.KEY")
        link = doc.setdefault("link", {})
        target, rest, allowed = link.setdefault(parts[1], {}), parts[2:], _keys("LINK_KEYS")
    else:
        target, rest, allowed = doc, parts, _keys("TOP_KEYS") - {"link", *LIST_TABLES}
    if rest[0] not in allowed:
        raise ScenarioError(where, f"unknown key \"{rest[0]}\" (known here: {', '.join(sorted(allowed))})")
    for p in rest[:-1]:
        nxt = target.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ScenarioError(where, f'"{p}" is not a table')
        target = nxt
    target[rest[-1]] = value


# ---------------------------------------------------------------- scenario


class Scenario:
    """A validated scenario. ``doc`` is the TOML document (overrides applied),
    ``source`` the file it came from (or None). :meth:`resolved` is computed
    once, when the scenario is loaded; change ``doc`` through :func:`load`
    (``overrides``/``set``), not in place.

    (What ``@dataclass`` would write, by hand: the dataclasses module and the
    ``inspect`` it imports cost ~5 ms of CPU of every ``bloatlab run``'s start-up.)"""

    __match_args__ = ("doc", "source", "_resolved")
    __hash__ = None  # type: ignore[assignment]  # compared by value, so not hashable
    #: the resolved scenario as JSON text, made by the language with it (or by :func:`check_engine`),
    #: checked with and read by the simulator: no ``json.dumps`` of it in a run (1000 flows: ~2.5 ms
    #: each). Not pickled.
    _json: str | None = None

    def __init__(self, doc: dict, source: str | None = None, _resolved: dict | None = None):
        self.doc = doc
        self.source = source
        self._resolved = _resolved

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(doc={self.doc!r}, source={self.source!r})"

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_json"}

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.doc, self.source) == (other.doc, other.source)  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        name = self.doc.get("name")
        if isinstance(name, str) and name:
            return name  # (a name of another type is the language's error, when resolved)
        return os.path.splitext(os.path.basename(self.source))[0] if self.source else "scenario"

    @property
    def seed(self) -> int:
        return self.doc.get("seed", 1)

    def resolved(self) -> dict:
        """The engine-neutral scenario (docs/engine-interface.md), resolved once."""
        if self._resolved is None:
            base = os.path.dirname(os.path.abspath(self.source)) if self.source else None
            self._resolved, self._json = _resolve(self.doc, self.name, base)
        return self._resolved


def read_toml(path: "str | os.PathLike") -> dict:
    """A scenario file's TOML document; :class:`ScenarioError` if unreadable."""
    from . import files

    s = os.fspath(path)
    try:
        raw = files.read_bytes(s, files.TEXT_LIMIT, "scenario")
    except UserError as e:
        raise ScenarioError("", str(e)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError("", f"{s}: not UTF-8 text") from None
    return parse_toml(text, s)


def parse_toml(text: str, source: str | None = None) -> dict:
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ScenarioError("", f"{source or 'scenario'}: tables or arrays nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError("", f"{source or 'scenario'}: TOML syntax error: {e}") from None


def _copied(doc: dict) -> dict:
    """A deep copy of a caller's document (``copy`` imported only here: a file's document is new anyway)."""
    import copy

    return copy.deepcopy(doc)


def load(scenario: "str | os.PathLike | dict | Scenario", overrides: Iterable[str] = (), **sets) -> Scenario:
    """Load, validate and resolve a scenario: a TOML file's path, the name of a
    ready one (``"rrul"``, :mod:`bloatlab.ready`), a dict (a TOML document) or a :class:`Scenario` (returned as it is when it was
    loaded and nothing is overridden, so a run does not resolve it again). A string holding TOML text is
    still taken (as :func:`loads`) for the callers that pass one.

    ``overrides`` are ``--set`` strings; keyword ``sets`` use ``__`` for dots
    (``link__down__loss="1%"``) or pass a dict via ``set={"flow.0.cc": "bbr"}``.
    """
    if isinstance(scenario, Scenario):
        if scenario._resolved is not None and not overrides and not sets:
            return scenario  # loaded already: validated and resolved once
        return _build(_copied(scenario.doc), scenario.source, overrides, sets)
    if isinstance(scenario, dict):
        return _build(_copied(scenario), None, overrides, sets)
    s = os.fspath(scenario)
    if "\n" in s or "=" in s and not os.path.exists(s):
        return loads(s, overrides, **sets)
    from .ready import lookup

    s = lookup(s, key="scenario")  # a ready scenario's name ("rrul") is its file
    return _build(read_toml(s), s, overrides, sets)


def loads(text: str, overrides: Iterable[str] = (), **sets) -> Scenario:
    """Load, validate and resolve a scenario from TOML text (see :func:`load`)."""
    return _build(parse_toml(text), None, overrides, sets)


def _build(doc: dict, source: str | None, overrides: Iterable[str], sets: dict) -> Scenario:
    try:
        for o in overrides:
            apply_override(doc, o)
        extra = sets.pop("set", None) or {}
        for k, v in list(extra.items()) + [(k.replace("__", "."), v) for k, v in sets.items()]:
            set_path(doc, k, v, where=f"set {k}")
        sc = Scenario(doc, source)
        sc._json = check_engine(sc.resolved(), sc._json)  # validates everything, also what only the engine checks
    except RecursionError:
        raise ScenarioError("", f"{source or 'scenario'}: tables or arrays nested too deeply") from None
    return sc


def check_engine(resolved: dict, text: str | None = None) -> str:
    """What only the Rust core checks (qdisc parameter ranges, stage rates):
    built once here, before any engine starts, so the error names the key and
    exits 2 whichever engine runs. ``text``: ``resolved`` as JSON, if the
    caller has it. Returns the JSON text it checked."""
    import json

    if text is None:
        text = json.dumps(resolved)
    try:
        _native().check_sim(text)
    except ValueError as e:
        msg = str(e)
        key, sep, rest = msg.partition(": ")
        if sep and " " not in key:
            raise ScenarioError(key, rest) from None
        raise ScenarioError("", msg) from None
    return text


def _native():
    from . import _native  # the compiled core

    return _native


# ---------------------------------------------------------------- resolving


def resolve(doc: dict, name: str, base_dir: str | None = None) -> dict:
    """The engine-neutral form of a scenario document (docs/engine-interface.md),
    read, checked and resolved by the language (``crates/schema/src/language``);
    :class:`ScenarioError` naming the key. ``base_dir``: where trace files
    named in the document are (the scenario file's directory)."""
    return _resolve(doc, name, base_dir)[0]


def _resolve(doc: dict, name: str, base_dir: str | None = None) -> tuple[dict, str | None]:
    """:func:`resolve`, and the resolved scenario as the JSON text an engine
    reads (None when ``start_jitter`` moved starts here: then made from the dict)."""
    from . import files

    def read_trace(file: str) -> bytes | str:
        full = file if os.path.isabs(file) or base_dir is None else os.path.join(base_dir, file)
        try:
            return files.read_bytes(full, files.TRACE_LIMIT, "trace")
        except UserError as e:
            return str(e)

    try:
        out, jitter_ns, text = _native().resolve_scenario(doc, name, read_trace, _mem_available())
    except ValueError as e:
        if len(e.args) == 2:
            raise ScenarioError(*e.args) from None
        raise
    if jitter_ns is not None:
        _jitter_starts(out["flows"], jitter_ns, out)
        text = None
    return out, text


def _jitter_starts(flows: list[dict], jitter_ns: int, out: dict) -> None:
    """``start_jitter``: each connection starts up to this much later than its
    ``start``, by an amount drawn from the scenario's seed (uniform, whole µs;
    its own stream, so the other random draws do not move). Testbeds and ns-3
    studies start flows at random offsets for the same reason: without it, a
    deterministic scenario (CUBIC, a FIFO, no loss) gives byte-identical runs
    for every seed, and "the mean over seeds" claims a spread it does not
    have. The objects of a ``[[page]]`` start with their page. (The language
    checked the bound; the draw stays Python's ``random`` so that stored
    sweeps keep their starts.)"""
    import random

    rng = random.Random(f"start_jitter:{out['seed']}")
    for f in flows:
        if f.get("page") is not None:
            continue
        f["start_ns"] += rng.randrange(jitter_ns // 1000 + 1) * 1000
        if f["start_ns"] >= out["duration_ns"] or (f["stop_ns"] is not None and f["start_ns"] >= f["stop_ns"]):
            raise ScenarioError("start_jitter", f"moves {f['name']}'s start past its stop or the run's end; use a smaller jitter")
