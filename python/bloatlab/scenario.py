"""The scenario language v1: TOML in, validated and resolved scenario out.

A scenario file (docs/scenario.md documents every key) is parsed with
``tomllib`` (:func:`load` a file, :func:`loads` text), ``--set`` overrides are
applied, the document is validated against the language's pydantic models
(:mod:`bloatlab.scenario_model`: unknown keys, wrong units, out-of-range
values are a :class:`ScenarioError` naming the key path), and :func:`resolve`
turns the validated model into the engine-neutral form of
``docs/engine-interface.md``: SI base units, ``count`` expanded, ``bdp``
buffers turned into bytes. A :class:`Scenario` is resolved once, when loaded.
"""

from __future__ import annotations

import functools
import os
import tomllib
from typing import Any, Iterable

from . import units
from .errors import ScenarioError, UserError
DIRECTIONS = ("down", "up")
PROBE_KINDS = ("udp",)
WIFI_MACS = ("legacy", "fq", "airtime")
MTU = 1500  # bytes on the wire of a full-size TCP segment (MSS 1448 + 52 B of headers)
#: An application's write clock (both engines): `rate` sources write every 10 ms.
APP_TICK_NS = 10_000_000
MAX_PAGE_OBJECTS = 1000
MAX_PAGE_CONNECTIONS = 64
#: A browser opens 6 connections per host (RFC 7230 leaves it open; Chrome
#: and Firefox use 6); wget -p fetches one object at a time (connections = 1).
PAGE_CONNECTIONS = 6

#: What one run may produce, checked before it starts (docs/scenario.md,
#: "Limits"): a run beyond one is refused naming the key that makes it so.
#: Raise a limit knowingly with ``[limits]`` or ``--set limits.KEY=N``.
#: Sizes: a series row costs ~400 B on its way into pandas today (1000 flows x
#: 1000 samples = 420 MB, BENCHMARKS.md), so 5 M rows is ~2 GB; the simulator
#: moves ~5-10 M packets per wall second, so 2e9 packets is several minutes.
LIMITS = {
    "max_flows": 10_000,            # connections after `count` is expanded
    "max_series_rows": 5_000_000,   # time-series rows: (flows + 2 links) x duration / sample_interval
    "max_probe_packets": 10_000_000,  # latency probes sent: sum of duration / interval
    "max_packets": 2_000_000_000,   # full-size packets the bottlenecks can carry: rate x duration / 1500 B
}

#: DiffServ code point names (RFC 2474 class selectors, RFC 2597 assured
#: forwarding AFxy = 8x + 2y, RFC 3246 EF, RFC 5865 VOICE-ADMIT, RFC 8622 LE).
DSCP_NAMES = {"BE": 0, "DF": 0, "LE": 1, "EF": 46, "VA": 44} | {f"CS{n}": 8 * n for n in range(8)} | {
    f"AF{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)}


#: Bytes a time-series row costs the whole `bloatlab run --out` process at its
#: peak: 191 MB for the 985 000 flow rows of the 1000-flow run (BENCHMARKS.md,
#: "Time series from the engine to Python"), rounded up. A run whose series
#: would need more than the memory this machine has available is refused even
#: when [limits] was raised: an allocation the system cannot give ends a
#: process by abort or by the OOM killer, never by a message.
SERIES_ROW_BYTES = 200


def _mem_available() -> int | None:
    """MemAvailable of /proc/meminfo, bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


DEFAULT_SAMPLE_INTERVAL = "10ms"
WIFI_DEFAULT_BUFFER = "1000pkt"  # Linux txqueuelen, the legacy interface qdisc's limit

# The language's models (scenario_model) import pydantic and are built from the
# core's tables: loaded on first use, so `import bloatlab` and `bloatlab --help` stay quick.


def cc_names() -> list[str]:
    """Congestion controls the simulator knows (from the Rust core)."""
    from . import scenario_values

    return list(scenario_values.cc_names())


def qdisc_table() -> dict[str, dict]:
    """Qdiscs and their parameters (from the Rust core's ``QDISCS`` table)."""
    from . import scenario_values

    return {q["name"]: q for q in scenario_values.qdisc_list()}


# ---------------------------------------------------------------- key names (for --set paths)


@functools.cache
def key_names() -> dict[str, frozenset[str]]:
    """Each table's keys, from the language's models: TOP_KEYS, LINK_KEYS, ..."""
    from . import scenario_model as sm

    qdisc = {"qdisc", "qdisc_params"}
    return {"TOP_KEYS": frozenset(sm.models().model_fields), "LINK_KEYS": frozenset(sm.LinkBase.model_fields) | qdisc,
            "BUCKET_KEYS": frozenset(sm.Bucket.model_fields), "FLOW_KEYS": frozenset(sm.Flow.model_fields),
            "PROBE_KEYS": frozenset(sm.Probe.model_fields), "PAGE_KEYS": frozenset(sm.Page.model_fields),
            "WIFI_KEYS": frozenset(sm.WifiBase.model_fields) | qdisc, "WIFI_STATION_KEYS": frozenset(sm.Station.model_fields)}


def _keys(name: str) -> frozenset[str]:
    """One table's keys (``FLOW_KEYS``, ...): the tables the quick reader knows
    without building the models (a ``--set`` costs no pydantic), the others from them."""
    from . import scenario_quick

    quick = scenario_quick.key_names()
    return quick[name] if name in quick else key_names()[name]


def __getattr__(name: str):
    if name.endswith("_KEYS") and name in key_names():
        return key_names()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def set_path(doc: dict, path: str, value: Any, where: str | None = None) -> None:
    where = where or path
    parts = path.split(".")
    if not path or any(p == "" for p in parts):
        raise ScenarioError(where, "empty key path")
    head = parts[0]
    if head in ("flow", "probe", "page"):
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
        target, rest, allowed = doc, parts, _keys("TOP_KEYS") - {"link", "flow", "probe", "page"}
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

    def __init__(self, doc: dict, source: str | None = None, _resolved: dict | None = None):
        self.doc = doc
        self.source = source
        self._resolved = _resolved

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(doc={self.doc!r}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.doc, self.source) == (other.doc, other.source)  # type: ignore[attr-defined]

    @property
    def name(self) -> str:
        return self.doc.get("name") or (os.path.splitext(os.path.basename(self.source))[0] if self.source else "scenario")

    @property
    def seed(self) -> int:
        return self.doc.get("seed", 1)

    def resolved(self) -> dict:
        """The engine-neutral scenario (docs/engine-interface.md), resolved once."""
        if self._resolved is None:
            self._resolved = resolve(self.doc, self.name, os.path.dirname(os.path.abspath(self.source)) if self.source else None)
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
        check_engine(sc.resolved())  # validates everything, also what only the engine checks
    except RecursionError:
        raise ScenarioError("", f"{source or 'scenario'}: tables or arrays nested too deeply") from None
    return sc


def check_engine(resolved: dict) -> None:
    """What only the Rust core checks (qdisc parameter ranges, stage rates):
    built once here, before any engine starts, so the error names the key and
    exits 2 whichever engine runs."""
    import json

    try:
        _native().check_sim(json.dumps(resolved))
    except ValueError as e:
        msg = str(e)
        key, sep, rest = msg.partition(": ")
        if sep and " " not in key:
            raise ScenarioError(key, rest) from None
        raise ScenarioError("", msg) from None


def _native():
    from . import _native  # the compiled core

    return _native


# ---------------------------------------------------------------- resolving


def resolve(doc: dict, name: str, base_dir: str | None = None) -> dict:
    """The engine-neutral form of a scenario document (docs/engine-interface.md):
    SI base units, ``count`` expanded, ``bdp`` buffers turned into bytes. The
    document is validated first (:func:`bloatlab.scenario_model.validate`, or
    for the common tables the same without pydantic: :mod:`bloatlab.scenario_quick`);
    what follows reads the validated model (``doc`` only to echo a value as
    written in a message)."""
    from . import scenario_quick

    m = scenario_quick.validate(doc)
    if m is None:
        from .scenario_model import validate

        m = validate(doc)
    out: dict[str, Any] = {"name": m.name if m.name is not None else name}
    out["duration_ns"] = m.duration
    out["seed"] = m.seed
    out["sample_interval_ns"] = m.sample_interval

    # Flows first: buffers in BDPs need their RTTs.
    if not m.flow and not m.page:
        raise ScenarioError("flow", "no flow: add at least one [[flow]] table (or a [[page]])")
    flows = _resolve_flows(m, doc)
    if m.start_jitter is not None:
        _jitter_starts(flows, m.start_jitter, out)
    out["pages"] = _resolve_pages(m, doc, flows)
    out["flows"] = flows
    out["probes"] = probes = _resolve_probes(m, flows)

    links_given = m.link is not None and (m.link.down is not None or m.link.up is not None)
    out["wifi"] = _resolve_wifi(m, flows, probes)
    if out["wifi"] is not None and links_given:
        raise ScenarioError("link", "a [wifi] medium cannot be combined with [link] bottlenecks yet (docs/wifi.md)")
    if not links_given and out["wifi"] is None:
        raise ScenarioError("link", "no bottleneck: add [link.down] (and/or [link.up]) with a rate, or a [wifi] medium")
    out["links"] = {d: _resolve_link(f"link.{d}", getattr(m.link, d) if m.link else None, flows, d, doc, base_dir)
                    for d in DIRECTIONS}
    _check_limits(doc, out, m)
    return out


def _resolve_flows(m, doc: dict) -> list[dict]:
    flows = []
    for gi, f in enumerate(m.flow):
        p, raw = f"flow.{gi}", doc["flow"][gi]
        if f.stop is not None and f.stop <= f.start:
            raise ScenarioError(f"{p}.stop", f'must be after start ({raw.get("start", "0s")}), got "{raw["stop"]}"')
        if f.start >= m.duration:
            raise ScenarioError(f"{p}.start", f'must be before the end of the run (duration {doc["duration"]})')
        if f.on is not None or f.off is not None:
            # an on/off application: `rate` for `on`, silent for `off`, repeating
            for k in ("on", "off", "rate"):
                if getattr(f, k) is None:
                    raise ScenarioError(f"{p}.{k}", 'missing: an on/off source needs rate, on and off (e.g. rate = "20Mbit", on = "1s", off = "4s")')
        label = f.name if f.name is not None else f"{f.cc}-{f.direction}-{gi}"
        for k in range(f.count):
            flows.append({
                "id": len(flows), "group": gi, "name": label if f.count == 1 else f"{label}.{k}",
                "cc": f.cc, "direction": f.direction, "rtt_ns": f.rtt, "start_ns": f.start,
                "stop_ns": f.stop, "size_bytes": f.size, "app_rate_bps": f.rate, "on_ns": f.on, "off_ns": f.off,
                "ecn": f.ecn, "tso": f.tso, "pacing": f.pacing, "dscp": f.dscp,
            })
    return flows


def _resolve_pages(m, doc: dict, flows: list) -> list[dict]:
    """``[[page]]`` -> the resolved pages; each object becomes a download of
    its size (a flow naming its page, appended to ``flows``), which the
    engines open at most ``connections`` at a time (docs/scenario.md)."""
    pages = []
    n_groups = len(m.flow)
    for i, pg in enumerate(m.page):
        p = f"page.{i}"
        name = pg.name if pg.name is not None else f"page-{i}"
        if pg.sizes is not None:
            sizes = pg.sizes
        else:
            n, total = pg.objects, pg.size
            if total < n:
                raise ScenarioError(f"{p}.size", f"expected at least one byte per object ({n}), got {doc['page'][i]['size']!r}")
            # the page's weight split evenly, the remainder on the first objects
            sizes = [total // n + (1 if k < total % n else 0) for k in range(n)]
        if pg.start >= m.duration:
            raise ScenarioError(f"{p}.start", "must be before the end of the run")
        for k, size in enumerate(sizes):
            flows.append({
                "id": len(flows), "group": n_groups + i, "name": f"{name}/{k}", "cc": pg.cc, "direction": "down",
                "rtt_ns": pg.rtt, "start_ns": pg.start, "stop_ns": None, "size_bytes": size, "app_rate_bps": None,
                "on_ns": None, "off_ns": None, "ecn": None, "tso": True, "pacing": False, "page": i, "dscp": pg.dscp,
            })
        pages.append({"id": i, "name": name, "connections": pg.connections})
    return pages


def _jitter_starts(flows: list[dict], jitter_ns: int, out: dict) -> None:
    """``start_jitter``: each connection starts up to this much later than its
    ``start``, by an amount drawn from the scenario's seed (uniform, whole µs;
    its own stream, so the other random draws do not move). Testbeds and ns-3
    studies start flows at random offsets for the same reason: without it, a
    deterministic scenario (CUBIC, a FIFO, no loss) gives byte-identical runs
    for every seed, and "the mean over seeds" claims a spread it does not
    have."""
    import random

    if jitter_ns < 0 or jitter_ns >= out["duration_ns"]:
        raise ScenarioError("start_jitter", "expected a duration from 0 up to the run's length")
    rng = random.Random(f"start_jitter:{out['seed']}")
    for f in flows:
        f["start_ns"] += rng.randrange(jitter_ns // 1000 + 1) * 1000
        if f["start_ns"] >= out["duration_ns"] or (f["stop_ns"] is not None and f["start_ns"] >= f["stop_ns"]):
            raise ScenarioError("start_jitter", f"moves {f['name']}'s start past its stop or the run's end; use a smaller jitter")


def _resolve_probes(m, flows: list) -> list[dict]:
    probes = []
    for i, pr in enumerate(m.probe):
        rtt = pr.rtt if pr.rtt is not None else min(f["rtt_ns"] for f in flows)
        probes.append({"id": i, "name": pr.name if pr.name is not None else f"{pr.kind}-{i}", "kind": pr.kind,
                       "interval_ns": pr.interval, "rtt_ns": rtt, "size_bytes": pr.size, "direction": pr.direction,
                       "dscp": pr.dscp})
    return probes


def _resolve_link(p: str, ld, flows: list, d: str, doc: dict, base_dir: str | None) -> dict | None:
    if ld is None:
        return None
    trace_ms = None
    if isinstance(ld.rate, str):  # "trace:FILE"
        trace_ms = _load_trace(f"{p}.rate", ld.rate[len("trace:"):], base_dir)
        rate = max(int(len(trace_ms) * MTU * 8 * 1000 / trace_ms[-1]), 1)  # mean capacity
    else:
        rate = ld.rate
    kind, amount = ld.buffer
    buf_bytes = buf_pkts = None
    if kind == "bytes":
        buf_bytes = int(amount)
    elif kind == "pkts":
        buf_pkts = int(amount)
    else:
        crossing = [f["rtt_ns"] for f in flows if f["direction"] == d] or [f["rtt_ns"] for f in flows]
        bdp = rate * min(crossing) / 8e9
        buf_bytes = max(int(round(amount * bdp)), MTU)
        if buf_bytes > units.MAX_INT:
            raise ScenarioError(f"{p}.buffer", f'"{doc["link"][d].get("buffer")}" of this path\'s BDP is too large a buffer')
    link = {"rate_bps": rate, "buffer_bytes": buf_bytes, "buffer_pkts": buf_pkts, "loss": ld.loss,
            "qdisc": {"kind": ld.qdisc, "params": ld.qdisc_values()}, "trace_ms": trace_ms,
            "policer": _bucket(ld.policer), "shaper": _bucket(ld.shaper),
            "device_queue_bytes": None, "device_queue_pkts": None}
    if ld.device_queue is not None:
        kind, amount = ld.device_queue
        link["device_queue_pkts" if kind == "pkts" else "device_queue_bytes"] = int(amount)
    return link


def _bucket(b) -> dict | None:
    """``{ rate = "2Mbit", burst = "10KB" }`` -> {"rate_bps", "burst_bytes"}.
    ``burst`` defaults to 10 ms at ``rate``, at least two full packets."""
    if b is None:
        return None
    burst = b.burst if b.burst is not None else max(int(b.rate * 0.010 / 8), 2 * MTU)
    return {"rate_bps": b.rate, "burst_bytes": burst}


def _load_trace(path: str, file: str, base_dir: str | None) -> list[int]:
    """A Mahimahi trace: one 1500-byte delivery opportunity per line, in ms;
    the last time is the period after which it repeats."""
    from . import files

    full = file if os.path.isabs(file) or base_dir is None else os.path.join(base_dir, file)
    try:
        words = files.read_bytes(full, files.TRACE_LIMIT, "trace").split()
    except UserError as e:
        raise ScenarioError(path, str(e)) from None
    if not words or not all(w.isdigit() for w in words):
        raise ScenarioError(path, f"trace {full}: expected one whole number of milliseconds per line")
    ms = [int(w) for w in words]
    if ms[-1] <= 0 or any(b < a for a, b in zip(ms, ms[1:])):
        raise ScenarioError(path, f"trace {full}: times must not decrease and must end after 0 ms")
    return ms


def _check_limits(doc: dict, out: dict, m) -> None:
    """Refuse up front what a run would exceed (see :data:`LIMITS`)."""
    lim = m.limits
    dur = out["duration_ns"]
    flows = out["flows"]
    if len(flows) > lim.max_flows and not m.flow:
        raise ScenarioError("page", f"{len(flows):,} page objects, more than limits.max_flows ({lim.max_flows:,}); raise it knowingly with [limits]")
    if len(flows) > lim.max_flows:
        big = max(range(len(m.flow)), key=lambda i: m.flow[i].count)
        raise ScenarioError(f"flow.{big}.count", f"{len(flows):,} flows in all, more than limits.max_flows ({lim.max_flows:,}); raise it knowingly with [limits]")
    samples = dur // out["sample_interval_ns"]
    rows = samples * (len(flows) + 2)
    if rows > lim.max_series_rows:
        raise ScenarioError(
            "sample_interval",
            f"{samples:,} samples x {len(flows) + 2} series = {rows:,} time-series rows, more than limits.max_series_rows "
            f"({lim.max_series_rows:,}, ~{lim.max_series_rows * 400 / 1e9:.0f} GB); sample less often, shorten the run, "
            "or raise the limit knowingly with [limits]",
        )
    total = 0
    for pr in out["probes"]:
        total += dur // pr["interval_ns"]
        if total > lim.max_probe_packets:
            raise ScenarioError(
                f"probe.{pr['id']}.interval",
                f"the probes would send {total:,}+ packets, more than limits.max_probe_packets ({lim.max_probe_packets:,}); "
                "probe less often or raise the limit knowingly with [limits]",
            )
    avail = _mem_available()
    if avail is not None and (rows + total) * SERIES_ROW_BYTES > avail:
        key = "sample_interval" if rows >= total else f"probe.{out['probes'][0]['id']}.interval"
        raise ScenarioError(
            key, f"{rows + total:,} time-series rows (samples and probes) need ~{(rows + total) * SERIES_ROW_BYTES / 1e9:.3g} GB, "
                 f"more than the {avail / 1e9:.3g} GB this machine has available; sample less often or shorten the run")
    rate = sum(l["rate_bps"] for l in out["links"].values() if l)
    if out.get("wifi"):
        rate += sum(st.get("phy_rate_bps") or 600_000_000 for st in out["wifi"].get("stations", []))
    pkts = rate * (dur / 1e9) / (8 * MTU)
    if pkts > lim.max_packets:
        raise ScenarioError(
            "duration",
            f"{doc.get('duration')} at these rates carries up to {pkts:.3g} packets, more than limits.max_packets "
            f"({lim.max_packets:.3g}); shorten the run or raise the limit knowingly with [limits]",
        )


# ---------------------------------------------------------------- wifi (docs/wifi.md)


def _resolve_wifi(m, flows: list, probes: list) -> dict | None:
    """``[wifi]`` and ``[[wifi.station]]`` -> the resolved medium; sets each
    flow's and probe's ``station`` index (``count`` copies of a flow naming a
    station group are spread over its stations round robin)."""
    if m.wifi is None:
        for what, items in (("flow", m.flow), ("probe", m.probe), ("page", m.page)):
            for i, x in enumerate(items):
                if x.station is not None:
                    raise ScenarioError(f"{what}.{i}.station", "names a station, but the scenario has no [wifi] medium")
        return None
    w = m.wifi
    stations: list[dict] = []
    groups: dict[str, list[int]] = {}
    for gi, sd in enumerate(w.station):
        p = f"wifi.station.{gi}"
        name = sd.name if sd.name is not None else f"sta{gi}"
        if name in groups:
            raise ScenarioError(f"{p}.name", f'station name "{name}" is used twice')
        groups[name] = []
        for k in range(sd.count):
            groups[name].append(len(stations))
            stations.append({"name": name if sd.count == 1 else f"{name}.{k}", **sd.phy_rate,
                             "mpdu_error": sd.mpdu_error, "weight": sd.weight})
    by_name = {s["name"]: [i] for i, s in enumerate(stations)} | groups

    def pick(path: str, station: str | None, k: int) -> int:
        if station is None:
            if len(stations) == 1:
                return 0
            raise ScenarioError(path, f"missing: with several wifi stations every flow and probe names one (known: {', '.join(groups)})")
        if station not in by_name:
            raise ScenarioError(path, f'unknown station "{station}" (known: {", ".join(groups)})')
        members = by_name[station]
        return members[k % len(members)]

    copies: dict[int, int] = {}
    for f in flows:
        if f.get("page") is not None:
            # all objects of a page are loaded on one station
            f["station"] = pick(f"page.{f['page']}.station", m.page[f["page"]].station, 0)
            continue
        k = copies.get(f["group"], 0)
        copies[f["group"]] = k + 1
        f["station"] = pick(f"flow.{f['group']}.station", m.flow[f["group"]].station, k)
    for i, pr in enumerate(probes):
        pr["station"] = pick(f"probe.{i}.station", m.probe[i].station, 0)
    kind, amount = w.buffer
    return {"mac": w.mac, "qdisc": {"kind": w.qdisc, "params": w.qdisc_values()},
            "buffer_bytes": int(amount) if kind == "bytes" else None,
            "buffer_pkts": int(amount) if kind == "pkts" else None, "stations": stations}
