"""The scenario language v1: TOML in, validated and resolved scenario out.

A scenario file (docs/scenario.md documents every key) is parsed with
``tomllib``, ``--set`` overrides are applied, every key is checked (unknown
keys, wrong units, out-of-range values are a :class:`ScenarioError` naming the
key path), and :meth:`Scenario.resolved` produces the engine-neutral form of
``docs/engine-interface.md``: SI base units, ``count`` expanded, ``bdp``
buffers turned into bytes.
"""

from __future__ import annotations

import copy
import math
import os
import tomllib
from dataclasses import dataclass
from typing import Any, Iterable

from . import units
from .errors import ScenarioError

DIRECTIONS = ("down", "up")
PROBE_KINDS = ("udp",)
MTU = 1500  # bytes on the wire of a full-size TCP segment (MSS 1448 + 52 B of headers)
DEFAULT_SAMPLE_INTERVAL = "10ms"


def _native():
    from . import _native  # the compiled core: congestion-control and qdisc tables

    return _native


def cc_names() -> list[str]:
    """Congestion controls the simulator knows (from the Rust core)."""
    return list(_native().cc_names())


def qdisc_table() -> dict[str, dict]:
    """Qdiscs and their parameters (from the Rust core's ``QDISCS`` table)."""
    return {q["name"]: q for q in _native().qdiscs()}


# ---------------------------------------------------------------- key checks

TOP_KEYS = {"name", "duration", "seed", "sample_interval", "start_jitter", "link", "flow", "probe", "page", "description", "wifi", "limits"}

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
LINK_KEYS = {"rate", "buffer", "qdisc", "qdisc_params", "loss", "policer", "shaper", "device_queue"}
BUCKET_KEYS = {"rate", "burst"}
FLOW_KEYS = {"name", "cc", "direction", "rtt", "count", "start", "stop", "size", "rate", "on", "off", "ecn", "tso", "pacing", "station", "dscp"}
#: An application's write clock (both engines): `rate` sources write every 10 ms.
APP_TICK_NS = 10_000_000
PROBE_KEYS = {"name", "kind", "interval", "rtt", "size", "direction", "station", "dscp"}
PAGE_KEYS = {"name", "objects", "size", "sizes", "connections", "rtt", "start", "cc", "station", "dscp"}
#: A browser opens 6 connections per host (RFC 7230 leaves it open; Chrome
#: and Firefox use 6); wget -p fetches one object at a time (connections = 1).
PAGE_CONNECTIONS = 6
MAX_PAGE_OBJECTS = 1000
MAX_PAGE_CONNECTIONS = 64


def _unknown(table: dict, allowed: Iterable[str], path: str) -> None:
    for k in table:
        if k not in allowed:
            where = f"{path}.{k}" if path else k
            raise ScenarioError(where, f"unknown key (known here: {', '.join(sorted(allowed))})")


def _conv(path: str, fn, value):
    try:
        return fn(value)
    except ValueError as e:
        raise ScenarioError(path, str(e)) from None


def _table(doc: dict, key: str, path: str) -> dict:
    v = doc.get(key, {})
    if not isinstance(v, dict):
        raise ScenarioError(path, f"expected a table, got {v!r}")
    return v


def _positive_duration(path: str, v) -> int:
    ns = _conv(path, units.parse_duration, v)
    if ns <= 0:
        raise ScenarioError(path, f'expected a positive duration, got "{v}"')
    return ns


def _int(path: str, v, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ScenarioError(path, f"expected a whole number, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ScenarioError(path, f"expected a whole number {rng}, got {v}")
    return v


def _str(path: str, v, choices: Iterable[str] | None = None) -> str:
    if not isinstance(v, str):
        raise ScenarioError(path, f"expected a string, got {v!r}")
    if choices is not None:
        choices = list(choices)
        if v not in choices:
            raise ScenarioError(path, f'unknown value "{v}" (expected one of: {", ".join(choices)})')
    return v


def parse_buffer(path: str, v) -> tuple[str, float]:
    """``"375KB"`` -> ("bytes", 375000); ``"1000pkt"`` -> ("pkts", 1000); ``"1 BDP"`` -> ("bdp", 1.0)."""
    return _conv(path, units.parse_buffer, v)


def _param(path: str, spec: dict, v) -> float:
    kind = spec["kind"]
    if kind == "time":
        return float(_conv(path, units.parse_duration, v))
    if kind == "size":
        return float(_conv(path, units.parse_size, v))
    if kind == "rate":
        if v == 0 or v == "0":
            return 0.0
        return float(_conv(path, units.parse_rate, v))
    if kind == "ratio":
        return _conv(path, units.parse_ratio, v)
    if kind == "bool":
        if not isinstance(v, bool):
            raise ScenarioError(path, f"expected true or false, got {v!r}")
        return 1.0 if v else 0.0
    if kind == "count":
        return float(_int(path, v, 0))
    if kind.startswith("choice:"):
        choices = kind.split(":", 1)[1].split(",")
        return float(choices.index(_str(path, v, choices)))
    raise ScenarioError(path, f"parameter kind {kind} not understood")  # a core/Python mismatch


#: DiffServ code point names (RFC 2474 class selectors, RFC 2597 assured
#: forwarding AFxy = 8x + 2y, RFC 3246 EF, RFC 5865 VOICE-ADMIT, RFC 8622 LE).
DSCP_NAMES = {"BE": 0, "DF": 0, "LE": 1, "EF": 46, "VA": 44} | {f"CS{n}": 8 * n for n in range(8)} | {
    f"AF{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)}


def _dscp(path: str, v) -> int:
    """A DiffServ code point: 0-63 or a name (``"EF"``, ``"CS1"``, ``"AF41"``)."""
    if isinstance(v, str) and v.strip().upper() in DSCP_NAMES:
        return DSCP_NAMES[v.strip().upper()]
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 63:
        return v
    raise ScenarioError(path, f"expected a DiffServ code point 0-63 or a name (EF, CS0-CS7, AF11-AF43, VA, LE), got {units.echo(v)!s}")


def _loss(path: str, v) -> float:
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
        raise ScenarioError(path, f'a bare {v:g} would mean {v * 100:g} % loss; write "{v:g}%" for {v:g} percent (or "100%" if you mean it)')
    return _conv(path, units.parse_ratio, v)


def _limits(doc: dict) -> dict:
    lim = dict(LIMITS)
    for k, v in _table(doc, "limits", "limits").items():
        if k not in LIMITS:
            raise ScenarioError(f"limits.{k}", f"unknown limit (known: {', '.join(sorted(LIMITS))})")
        lim[k] = _int(f"limits.{k}", v, 1, units.MAX_INT)
    return lim


def _check_limits(doc: dict, out: dict, flows_doc: list, lim: dict) -> None:
    """Refuse up front what a run would exceed (see :data:`LIMITS`)."""
    dur = out["duration_ns"]
    flows = out["flows"]
    if len(flows) > lim["max_flows"] and not flows_doc:
        raise ScenarioError("page", f"{len(flows):,} page objects, more than limits.max_flows ({lim['max_flows']:,}); raise it knowingly with [limits]")
    if len(flows) > lim["max_flows"]:
        big = max(range(len(flows_doc)), key=lambda i: flows_doc[i].get("count", 1) if isinstance(flows_doc[i].get("count", 1), int) else 1)
        raise ScenarioError(f"flow.{big}.count", f"{len(flows):,} flows in all, more than limits.max_flows ({lim['max_flows']:,}); raise it knowingly with [limits]")
    samples = dur // out["sample_interval_ns"]
    rows = samples * (len(flows) + 2)
    if rows > lim["max_series_rows"]:
        raise ScenarioError(
            "sample_interval",
            f"{samples:,} samples x {len(flows) + 2} series = {rows:,} time-series rows, more than limits.max_series_rows "
            f"({lim['max_series_rows']:,}, ~{lim['max_series_rows'] * 400 / 1e9:.0f} GB); sample less often, shorten the run, "
            "or raise the limit knowingly with [limits]",
        )
    total = 0
    for pr in out["probes"]:
        total += dur // pr["interval_ns"]
        if total > lim["max_probe_packets"]:
            raise ScenarioError(
                f"probe.{pr['id']}.interval",
                f"the probes would send {total:,}+ packets, more than limits.max_probe_packets ({lim['max_probe_packets']:,}); "
                "probe less often or raise the limit knowingly with [limits]",
            )
    rate = sum(l["rate_bps"] for l in out["links"].values() if l)
    if out.get("wifi"):
        rate += sum(st.get("phy_rate_bps") or 600_000_000 for st in out["wifi"].get("stations", []))
    pkts = rate * (dur / 1e9) / (8 * MTU)
    if pkts > lim["max_packets"]:
        raise ScenarioError(
            "duration",
            f"{doc.get('duration')} at these rates carries up to {pkts:.3g} packets, more than limits.max_packets "
            f"({lim['max_packets']:.3g}); shorten the run or raise the limit knowingly with [limits]",
        )


def _bucket(path: str, v) -> dict | None:
    """``{ rate = "2Mbit", burst = "10KB" }`` -> {"rate_bps", "burst_bytes"}.
    ``burst`` defaults to 10 ms at ``rate``, at least two full packets."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ScenarioError(path, f'expected a table like {{ rate = "2Mbit", burst = "10KB" }}, got {v!r}')
    _unknown(v, BUCKET_KEYS, path)
    if "rate" not in v:
        raise ScenarioError(f"{path}.rate", 'missing (e.g. rate = "2Mbit")')
    rate = _conv(f"{path}.rate", units.parse_rate, v["rate"])
    if "burst" in v:
        burst = _conv(f"{path}.burst", units.parse_size, v["burst"])
        if burst < MTU:
            raise ScenarioError(f"{path}.burst", f"expected at least one full packet ({MTU} B), got {burst} B")
    else:
        burst = max(int(rate * 0.010 / 8), 2 * MTU)
    return {"rate_bps": rate, "burst_bytes": burst}


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
        target, rest, allowed = items[i], parts[2:], {"flow": FLOW_KEYS, "probe": PROBE_KEYS, "page": PAGE_KEYS}[head]
    elif head == "wifi" and len(parts) >= 2 and parts[1] == "station":
        items = doc.get("wifi", {}).get("station")
        if len(parts) < 4 or not parts[2].isdigit():
            raise ScenarioError(where, "expected wifi.station.N.KEY (N counts from 0)")
        i = int(parts[2])
        if not isinstance(items, list) or i >= len(items):
            n = len(items) if isinstance(items, list) else 0
            raise ScenarioError(where, f"there is no wifi.station {i} (the scenario has {n})")
        target, rest, allowed = items[i], parts[3:], WIFI_STATION_KEYS
    elif head == "wifi":
        target, rest, allowed = doc.setdefault("wifi", {}), parts[1:], WIFI_KEYS - {"station"}
        if not rest:
            raise ScenarioError(where, "expected wifi.KEY")
    elif head == "link":
        if len(parts) < 3 or parts[1] not in DIRECTIONS:
            raise ScenarioError(where, "expected link.down.KEY or link.up.KEY")
        link = doc.setdefault("link", {})
        target, rest, allowed = link.setdefault(parts[1], {}), parts[2:], LINK_KEYS
    else:
        target, rest, allowed = doc, parts, TOP_KEYS - {"link", "flow", "probe", "page"}
    if rest[0] not in allowed:
        raise ScenarioError(where, f"unknown key \"{rest[0]}\" (known here: {', '.join(sorted(allowed))})")
    for p in rest[:-1]:
        nxt = target.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ScenarioError(where, f'"{p}" is not a table')
        target = nxt
    target[rest[-1]] = value


# ---------------------------------------------------------------- scenario


@dataclass
class Scenario:
    """A validated scenario. ``doc`` is the TOML document (overrides applied),
    ``source`` the file it came from (or None)."""

    doc: dict
    source: str | None = None

    @property
    def name(self) -> str:
        return self.doc.get("name") or (os.path.splitext(os.path.basename(self.source))[0] if self.source else "scenario")

    @property
    def seed(self) -> int:
        return self.doc.get("seed", 1)

    def resolved(self) -> dict:
        """The engine-neutral scenario (docs/engine-interface.md)."""
        return resolve(self.doc, self.name, os.path.dirname(os.path.abspath(self.source)) if self.source else None)


def load(scenario: "str | os.PathLike | dict | Scenario", overrides: Iterable[str] = (), **sets) -> Scenario:
    """Load and validate a scenario from a TOML path, a TOML string, or a dict.

    ``overrides`` are ``--set`` strings; keyword ``sets`` use ``__`` for dots
    (``link__down__loss="1%"``) or pass a dict via ``set={"flow.0.cc": "bbr"}``.
    """
    source = None
    if isinstance(scenario, Scenario):
        doc, source = copy.deepcopy(scenario.doc), scenario.source
    elif isinstance(scenario, dict):
        doc = copy.deepcopy(scenario)
    else:
        text = None
        s = os.fspath(scenario)
        if "\n" in s or "=" in s and not os.path.exists(s):
            text = s
        else:
            source = s
            try:
                with open(s, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise ScenarioError("", f"cannot read scenario {s}: {e.strerror}") from None
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ScenarioError("", f"{s}: not UTF-8 text") from None
        try:
            doc = tomllib.loads(text)
        except RecursionError:
            raise ScenarioError("", f"{source or 'scenario'}: tables or arrays nested too deeply") from None
        except tomllib.TOMLDecodeError as e:
            where = source or "scenario"
            raise ScenarioError("", f"{where}: TOML syntax error: {e}") from None
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


def _load_trace(path: str, file: str, base_dir: str | None) -> list[int]:
    """A Mahimahi trace: one 1500-byte delivery opportunity per line, in ms;
    the last time is the period after which it repeats."""
    full = file if os.path.isabs(file) or base_dir is None else os.path.join(base_dir, file)
    try:
        with open(full) as f:
            words = f.read().split()
    except OSError as e:
        raise ScenarioError(path, f"cannot read trace {full}: {e.strerror}") from None
    if not words or not all(w.isdigit() for w in words):
        raise ScenarioError(path, f"trace {full}: expected one whole number of milliseconds per line")
    ms = [int(w) for w in words]
    if ms[-1] <= 0 or any(b < a for a, b in zip(ms, ms[1:])):
        raise ScenarioError(path, f"trace {full}: times must not decrease and must end after 0 ms")
    return ms


def _resolve_pages(pages_doc, flows: list, known_cc, n_groups: int, duration_ns: int) -> list[dict]:
    """``[[page]]`` -> the resolved pages; each object becomes a download of
    its size (a flow naming its page, appended to ``flows``), which the
    engines open at most ``connections`` at a time (docs/scenario.md)."""
    if not isinstance(pages_doc, list) or not all(isinstance(x, dict) for x in pages_doc):
        raise ScenarioError("page", "expected [[page]] tables")
    pages = []
    for i, pd in enumerate(pages_doc):
        p = f"page.{i}"
        _unknown(pd, PAGE_KEYS, p)
        name = _str(f"{p}.name", pd.get("name", f"page-{i}"))
        if "sizes" in pd:
            if "objects" in pd or "size" in pd:
                raise ScenarioError(f"{p}.sizes", "give either sizes (each object's) or objects and size (the page's total), not both")
            if not isinstance(pd["sizes"], list) or not 1 <= len(pd["sizes"]) <= MAX_PAGE_OBJECTS:
                raise ScenarioError(f"{p}.sizes", f"expected a list of 1..{MAX_PAGE_OBJECTS} sizes like [\"30KB\", \"2KB\"]")
            sizes = [_conv(f"{p}.sizes.{k}", units.parse_size, v) for k, v in enumerate(pd["sizes"])]
            for k, v in enumerate(sizes):
                if v <= 0:
                    raise ScenarioError(f"{p}.sizes.{k}", f"expected a positive size, got {pd['sizes'][k]!r}")
        else:
            for k in ("objects", "size"):
                if k not in pd:
                    raise ScenarioError(f"{p}.{k}", 'missing (e.g. objects = 62 and size = "1.8MB", or sizes = ["30KB", ...])')
            n = _int(f"{p}.objects", pd["objects"], 1, MAX_PAGE_OBJECTS)
            total = _conv(f"{p}.size", units.parse_size, pd["size"])
            if total < n:
                raise ScenarioError(f"{p}.size", f"expected at least one byte per object ({n}), got {pd['size']!r}")
            # the page's weight split evenly, the remainder on the first objects
            sizes = [total // n + (1 if k < total % n else 0) for k in range(n)]
        conns = _int(f"{p}.connections", pd.get("connections", PAGE_CONNECTIONS), 1, MAX_PAGE_CONNECTIONS)
        if "rtt" not in pd:
            raise ScenarioError(f"{p}.rtt", 'missing (the base RTT to the page\'s server, e.g. rtt = "50ms")')
        rtt = _positive_duration(f"{p}.rtt", pd["rtt"])
        start = _conv(f"{p}.start", units.parse_duration, pd.get("start", "0s"))
        if start >= duration_ns:
            raise ScenarioError(f"{p}.start", "must be before the end of the run")
        cc = _str(f"{p}.cc", pd.get("cc", "cubic"), known_cc)
        dscp = _dscp(f"{p}.dscp", pd.get("dscp", 0))
        for k, size in enumerate(sizes):
            flows.append({
                "id": len(flows), "group": n_groups + i, "name": f"{name}/{k}", "cc": cc, "direction": "down",
                "rtt_ns": rtt, "start_ns": start, "stop_ns": None, "size_bytes": size, "app_rate_bps": None,
                "on_ns": None, "off_ns": None, "ecn": None, "tso": True, "pacing": False, "page": i, "dscp": dscp,
            })
        pages.append({"id": i, "name": name, "connections": conns})
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


def resolve(doc: dict, name: str, base_dir: str | None = None) -> dict:
    _unknown(doc, TOP_KEYS, "")
    out: dict[str, Any] = {"name": _str("name", doc.get("name", name))}
    if "description" in doc:
        _str("description", doc["description"])
    if "duration" not in doc:
        raise ScenarioError("duration", 'missing (e.g. duration = "60s")')
    out["duration_ns"] = _positive_duration("duration", doc["duration"])
    out["seed"] = _int("seed", doc.get("seed", 1), 0, 2**63 - 1)
    out["sample_interval_ns"] = _positive_duration("sample_interval", doc.get("sample_interval", DEFAULT_SAMPLE_INTERVAL))

    # Flows first: buffers in BDPs need their RTTs.
    flows_doc = doc.get("flow", [])
    if flows_doc == [] and not doc.get("page"):
        raise ScenarioError("flow", "no flow: add at least one [[flow]] table (or a [[page]])")
    if not isinstance(flows_doc, list) or not all(isinstance(f, dict) for f in flows_doc):
        raise ScenarioError("flow", "expected [[flow]] tables")
    known_cc = cc_names()
    flows = []
    for gi, f in enumerate(flows_doc):
        p = f"flow.{gi}"
        _unknown(f, FLOW_KEYS, p)
        cc = _str(f"{p}.cc", f.get("cc", "cubic"), known_cc)
        direction = _str(f"{p}.direction", f.get("direction", "down"), DIRECTIONS)
        if "rtt" not in f:
            raise ScenarioError(f"{p}.rtt", 'missing (the flow\'s base RTT, e.g. rtt = "50ms")')
        rtt = _positive_duration(f"{p}.rtt", f["rtt"])
        count = _int(f"{p}.count", f.get("count", 1), 1, 100_000)
        start = _conv(f"{p}.start", units.parse_duration, f.get("start", "0s"))
        stop = None
        if "stop" in f:
            stop = _conv(f"{p}.stop", units.parse_duration, f["stop"])
            if stop <= start:
                raise ScenarioError(f"{p}.stop", f'must be after start ({f.get("start", "0s")}), got "{f["stop"]}"')
        if start >= out["duration_ns"]:
            raise ScenarioError(f"{p}.start", f'must be before the end of the run (duration {doc["duration"]})')
        size = None
        if "size" in f:
            size = _conv(f"{p}.size", units.parse_size, f["size"])
            if size <= 0:
                raise ScenarioError(f"{p}.size", f'expected a positive size, got "{f["size"]}"')
        app_rate = None
        if "rate" in f:
            # an application-limited source (video, a rate-capped upload): it offers at most this rate
            app_rate = _conv(f"{p}.rate", units.parse_rate, f["rate"])
            if app_rate <= 0:
                raise ScenarioError(f"{p}.rate", f'expected a positive rate, got "{f["rate"]}"')
        on = off = None
        if "on" in f or "off" in f:
            # an on/off application: `rate` for `on`, silent for `off`, repeating
            for k in ("on", "off", "rate"):
                if k not in f:
                    raise ScenarioError(f"{p}.{k}", 'missing: an on/off source needs rate, on and off (e.g. rate = "20Mbit", on = "1s", off = "4s")')
            on = _positive_duration(f"{p}.on", f["on"])
            off = _conv(f"{p}.off", units.parse_duration, f["off"])
            for k, v in (("on", on), ("off", off)):
                if v % APP_TICK_NS:
                    raise ScenarioError(f"{p}.{k}", f'the application writes every 10 ms: give a multiple of 10ms, got "{f[k]}"')
        ecn = f.get("ecn")
        if ecn is not None and not isinstance(ecn, bool):
            raise ScenarioError(f"{p}.ecn", f"expected true or false, got {ecn!r}")
        tso = f.get("tso", True)
        if not isinstance(tso, bool):
            raise ScenarioError(f"{p}.tso", f"expected true or false, got {tso!r}")
        pacing = f.get("pacing", False)
        if not isinstance(pacing, bool):
            raise ScenarioError(f"{p}.pacing", f"expected true or false, got {pacing!r}")
        dscp = _dscp(f"{p}.dscp", f.get("dscp", 0))
        label = _str(f"{p}.name", f.get("name", f"{cc}-{direction}-{gi}"))
        for k in range(count):
            flows.append({
                "id": len(flows), "group": gi, "name": label if count == 1 else f"{label}.{k}",
                "cc": cc, "direction": direction, "rtt_ns": rtt, "start_ns": start,
                "stop_ns": stop, "size_bytes": size, "app_rate_bps": app_rate, "on_ns": on, "off_ns": off,
                "ecn": ecn, "tso": tso, "pacing": pacing, "dscp": dscp,
            })
    if "start_jitter" in doc:
        _jitter_starts(flows, _conv("start_jitter", units.parse_duration, doc["start_jitter"]), out)
    pages_doc = doc.get("page", [])
    out["pages"] = _resolve_pages(pages_doc, flows, known_cc, len(flows_doc), out["duration_ns"])
    out["flows"] = flows

    probes = []
    probes_doc = doc.get("probe", [])
    if not isinstance(probes_doc, list) or not all(isinstance(x, dict) for x in probes_doc):
        raise ScenarioError("probe", "expected [[probe]] tables")
    for i, pr in enumerate(probes_doc):
        p = f"probe.{i}"
        _unknown(pr, PROBE_KEYS, p)
        kind = _str(f"{p}.kind", pr.get("kind", "udp"), PROBE_KINDS)
        interval = _positive_duration(f"{p}.interval", pr.get("interval", "10ms"))
        if "rtt" in pr:
            rtt = _positive_duration(f"{p}.rtt", pr["rtt"])
        else:
            rtt = min(f["rtt_ns"] for f in flows)
        size = _conv(f"{p}.size", units.parse_size, pr.get("size", "64B"))
        if not 16 <= size <= 1472:
            raise ScenarioError(f"{p}.size", f"expected a UDP payload of 16..1472 bytes, got {size}")
        direction = _str(f"{p}.direction", pr.get("direction", "down"), DIRECTIONS)
        probes.append({"id": i, "name": _str(f"{p}.name", pr.get("name", f"{kind}-{i}")), "kind": kind,
                       "interval_ns": interval, "rtt_ns": rtt, "size_bytes": size, "direction": direction,
                       "dscp": _dscp(f"{p}.dscp", pr.get("dscp", 0))})
    out["probes"] = probes

    links_doc = _table(doc, "link", "link")
    _unknown(links_doc, DIRECTIONS, "link")
    out["wifi"] = _resolve_wifi(doc, flows_doc, flows, probes_doc, probes, pages_doc)
    if out["wifi"] is not None and links_doc:
        raise ScenarioError("link", "a [wifi] medium cannot be combined with [link] bottlenecks yet (docs/wifi.md)")
    if not links_doc and out["wifi"] is None:
        raise ScenarioError("link", "no bottleneck: add [link.down] (and/or [link.up]) with a rate, or a [wifi] medium")
    qdiscs = qdisc_table()
    links: dict[str, Any] = {}
    for d in DIRECTIONS:
        if d not in links_doc:
            links[d] = None
            continue
        p = f"link.{d}"
        ld = _table(links_doc, d, p)
        _unknown(ld, LINK_KEYS, p)
        if "rate" not in ld:
            raise ScenarioError(f"{p}.rate", 'missing (e.g. rate = "100Mbit")')
        trace_ms = None
        if isinstance(ld["rate"], str) and ld["rate"].startswith("trace:"):
            trace_ms = _load_trace(f"{p}.rate", ld["rate"][len("trace:"):], base_dir)
            rate = max(int(len(trace_ms) * MTU * 8 * 1000 / trace_ms[-1]), 1)  # mean capacity
        else:
            rate = _conv(f"{p}.rate", units.parse_rate, ld["rate"])
        kind, amount = parse_buffer(f"{p}.buffer", ld.get("buffer", "1bdp"))
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
                raise ScenarioError(f"{p}.buffer", f'"{ld.get("buffer")}" of this path\'s BDP is too large a buffer')
        qname = _str(f"{p}.qdisc", ld.get("qdisc", "fifo"), list(qdiscs))
        params_doc = _table(ld, "qdisc_params", f"{p}.qdisc_params")
        specs = {s["name"]: s for s in qdiscs[qname]["params"]}
        params = {}
        for k, v in params_doc.items():
            if k not in specs:
                known = ", ".join(sorted(specs)) or "none"
                raise ScenarioError(f"{p}.qdisc_params.{k}", f"unknown parameter of {qname} (known: {known})")
            params[k] = _param(f"{p}.qdisc_params.{k}", specs[k], v)
        loss = _loss(f"{p}.loss", ld.get("loss", 0))
        links[d] = {"rate_bps": rate, "buffer_bytes": buf_bytes, "buffer_pkts": buf_pkts, "loss": loss,
                    "qdisc": {"kind": qname, "params": params}, "trace_ms": trace_ms,
                    "policer": _bucket(f"{p}.policer", ld.get("policer")),
                    "shaper": _bucket(f"{p}.shaper", ld.get("shaper")),
                    "device_queue_bytes": None, "device_queue_pkts": None}
        if "device_queue" in ld:
            kind, amount = parse_buffer(f"{p}.device_queue", ld["device_queue"])
            if kind == "bdp":
                raise ScenarioError(f"{p}.device_queue", 'expected packets or bytes like "2pkt" or "3000B"')
            links[d]["device_queue_pkts" if kind == "pkts" else "device_queue_bytes"] = int(amount)
    out["links"] = {d: links.get(d) for d in DIRECTIONS}
    _check_limits(doc, out, flows_doc, _limits(doc))
    return out


# ---------------------------------------------------------------- wifi (docs/wifi.md)

WIFI_KEYS = {"mac", "qdisc", "qdisc_params", "buffer", "station"}
WIFI_STATION_KEYS = {"name", "phy_rate", "count", "mpdu_error", "weight"}
WIFI_MACS = ("legacy", "fq", "airtime")
WIFI_DEFAULT_BUFFER = "1000pkt"  # Linux txqueuelen, the legacy interface qdisc's limit


def _station_phy(path: str, v) -> dict:
    """``"mcs15"`` (HT20, long GI) or a rate like ``"144.4Mbit"`` (>= 1 Mbit/s)."""
    if isinstance(v, str) and v.strip().lower().startswith("mcs"):
        idx = v.strip().lower()[3:]
        if not idx.isdigit() or not 0 <= int(idx) <= 15:
            raise ScenarioError(path, f'expected an HT MCS "mcs0".."mcs15" or a rate like "144.4Mbit", got "{v}"')
        return {"mcs": int(idx), "phy_rate_bps": None}
    try:
        rate = units.parse_rate(v)
    except ValueError:
        raise ScenarioError(path, f'expected a PHY rate like "144.4Mbit" or an MCS like "mcs15", got {v!r}') from None
    if rate < 1_000_000:
        raise ScenarioError(path, f'expected a PHY rate of at least 1Mbit, got "{v}"')
    return {"mcs": None, "phy_rate_bps": rate}


def _resolve_wifi(doc: dict, flows_doc: list, flows: list, probes_doc: list, probes: list, pages_doc: list) -> dict | None:
    """``[wifi]`` and ``[[wifi.station]]`` -> the resolved medium; sets each
    flow's and probe's ``station`` index (``count`` copies of a flow naming a
    station group are spread over its stations round robin)."""
    if "wifi" not in doc:
        for what, items in (("flow", flows_doc), ("probe", probes_doc), ("page", pages_doc)):
            for i, x in enumerate(items):
                if "station" in x:
                    raise ScenarioError(f"{what}.{i}.station", "names a station, but the scenario has no [wifi] medium")
        return None
    w = _table(doc, "wifi", "wifi")
    _unknown(w, WIFI_KEYS, "wifi")
    mac = _str("wifi.mac", w.get("mac", "airtime"), WIFI_MACS)
    qdiscs = qdisc_table()
    qname = _str("wifi.qdisc", w.get("qdisc", "fifo"), list(qdiscs))
    specs = {s["name"]: s for s in qdiscs[qname]["params"]}
    params = {}
    for k, v in _table(w, "qdisc_params", "wifi.qdisc_params").items():
        if k not in specs:
            raise ScenarioError(f"wifi.qdisc_params.{k}", f"unknown parameter of {qname} (known: {', '.join(sorted(specs)) or 'none'})")
        params[k] = _param(f"wifi.qdisc_params.{k}", specs[k], v)
    kind, amount = parse_buffer("wifi.buffer", w.get("buffer", WIFI_DEFAULT_BUFFER))
    if kind == "bdp":
        raise ScenarioError("wifi.buffer", 'expected packets or bytes like "1000pkt" or "1.5MB"')
    st_doc = w.get("station")
    if not st_doc:
        raise ScenarioError("wifi.station", "no station: add at least one [[wifi.station]] with a phy_rate")
    if not isinstance(st_doc, list) or not all(isinstance(x, dict) for x in st_doc):
        raise ScenarioError("wifi.station", "expected [[wifi.station]] tables")
    stations: list[dict] = []
    groups: dict[str, list[int]] = {}
    for gi, sd in enumerate(st_doc):
        p = f"wifi.station.{gi}"
        _unknown(sd, WIFI_STATION_KEYS, p)
        name = _str(f"{p}.name", sd.get("name", f"sta{gi}"))
        if name in groups:
            raise ScenarioError(f"{p}.name", f'station name "{name}" is used twice')
        if "phy_rate" not in sd:
            raise ScenarioError(f"{p}.phy_rate", 'missing (e.g. phy_rate = "144.4Mbit" or "mcs15")')
        phy = _station_phy(f"{p}.phy_rate", sd["phy_rate"])
        count = _int(f"{p}.count", sd.get("count", 1), 1, 1000)
        err = _loss(f"{p}.mpdu_error", sd.get("mpdu_error", 0))
        if err >= 1:
            raise ScenarioError(f"{p}.mpdu_error", f"expected an error rate below 100%, got {sd['mpdu_error']!r}")
        weight = sd.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1000:
            raise ScenarioError(f"{p}.weight", f"expected a number in (0, 1000], got {weight!r}")
        groups[name] = []
        for k in range(count):
            groups[name].append(len(stations))
            stations.append({"name": name if count == 1 else f"{name}.{k}", **phy,
                             "mpdu_error": err, "weight": float(weight)})
    by_name = {s["name"]: [i] for i, s in enumerate(stations)} | groups

    def pick(path: str, x: dict, k: int) -> int:
        if "station" not in x:
            if len(stations) == 1:
                return 0
            raise ScenarioError(path, f"missing: with several wifi stations every flow and probe names one (known: {', '.join(groups)})")
        name = _str(path, x["station"])
        if name not in by_name:
            raise ScenarioError(path, f'unknown station "{name}" (known: {", ".join(groups)})')
        members = by_name[name]
        return members[k % len(members)]

    copies: dict[int, int] = {}
    for f in flows:
        if f.get("page") is not None:
            # all objects of a page are loaded on one station
            f["station"] = pick(f"page.{f['page']}.station", pages_doc[f["page"]], 0)
            continue
        k = copies.get(f["group"], 0)
        copies[f["group"]] = k + 1
        f["station"] = pick(f"flow.{f['group']}.station", flows_doc[f["group"]], k)
    for i, pr in enumerate(probes):
        pr["station"] = pick(f"probe.{i}.station", probes_doc[i], 0)
    return {"mac": mac, "qdisc": {"kind": qname, "params": params},
            "buffer_bytes": int(amount) if kind == "bytes" else None,
            "buffer_pkts": int(amount) if kind == "pkts" else None, "stations": stations}
