"""The scenario language v1 as pydantic models: what a TOML scenario may say.

Every table of docs/scenario.md is a model here (``extra="forbid"``), every
value a typed field: unit-bearing values (``"10ms"``, ``"100Mbit"``,
``"375KB"``, ``"1bdp"``, ``"1%"``) are :data:`typing.Annotated` types whose
validators call the Rust unit parser through the native module
(:mod:`bloatlab.units`), and the links' and the WiFi medium's qdisc
parameters are models built from the core's qdisc table
(``_native.qdiscs()``), one per qdisc, chosen by the ``qdisc`` key. So an
unknown key or a bad value anywhere is found with its key path, which
:func:`scenario_error` turns into the project's :class:`ScenarioError`
(``flow.0.cc: unknown value ...``), and :func:`json_schema` exports the
language for editors (docs/scenario.schema.json).

What needs more than one value (a flow's ``stop`` after its ``start``, a
buffer in BDPs, the run's limits) is checked where the scenario is resolved
(:func:`bloatlab.scenario.resolve`), which reads only validated models.

Messages are the scenario layer's own, not pydantic's: each validator raises
``ValueError`` with the expected form, and the table checks raise
:class:`~pydantic_core.PydanticCustomError` naming the key.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Callable, ClassVar, Literal, Optional, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, PlainValidator, PrivateAttr,
                      Tag, ValidationError, WithJsonSchema, create_model, model_validator)
from pydantic_core import PydanticCustomError

from . import units
from .errors import ScenarioError

from .scenario import (DIRECTIONS, DSCP_NAMES, LIMITS, MAX_PAGE_CONNECTIONS, MAX_PAGE_OBJECTS, PAGE_CONNECTIONS,
                       PROBE_KINDS, WIFI_MACS)
from .scenario_values import (_app_period, _buffer_no_bdp, _positive, burst_size, cc_names, check_bool, check_cc,
                              check_choice, check_direction, check_dscp, check_loss, check_mpdu_error,
                              check_optional_bool, check_probe_kind, check_qdisc, check_text, check_whole,
                              check_wifi_mac, link_rate, object_size, positive_duration, probe_size, qdisc_list,
                              qdisc_names, station_phy, station_weight, whole)


# ---------------------------------------------------------------- values
# Each validator (bloatlab.scenario_values) takes the TOML value as written and
# returns it in base units (ns, bytes, bit/s), or raises ValueError with the expected form.

def _value(fn: Callable[[Any], Any], schema: dict) -> Any:
    """A field type: ``fn`` validates (no coercion by pydantic), ``schema`` is its TOML form."""
    return Annotated[Any, PlainValidator(fn), WithJsonSchema(schema)]


# JSON Schema of the TOML forms (docs/scenario.md "Units").
_S_DURATION = {"type": "string", "description": 'a duration: "10ms", "1.5s", "2min" (ns, us, ms, s, min)', "examples": ["10ms"]}
_S_RATE = {"type": "string", "description": 'a rate in bit/s, SI like tc: "100Mbit", "1Gbit", "500Kbit"', "examples": ["100Mbit"]}
_S_SIZE = {"type": ["string", "integer"], "description": 'a size in bytes, SI: "375KB", "1.5MB", "64KiB", or a whole number of bytes', "examples": ["64KB"]}
_S_RATIO = {"type": ["string", "number"], "description": 'a fraction: "1%" or 0.01', "examples": ["1%"]}
_S_BUFFER = {"type": ["string", "integer"], "description": 'bytes ("375KB"), packets ("1000pkt") or bandwidth-delay products ("1bdp")', "examples": ["1bdp"]}
_S_PKT_OR_BYTES = {"type": ["string", "integer"], "description": 'packets ("1000pkt") or bytes ("1.5MB")'}
_S_DSCP = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 63},
                     {"type": "string", "enum": sorted(DSCP_NAMES, key=lambda n: (DSCP_NAMES[n], n))}],
           "description": "a DiffServ code point: 0-63 or a name (EF, CS0-CS7, AF11-AF43, VA, LE, BE)"}
_S_BOOL = {"type": "boolean"}
_S_TEXT = {"type": "string"}


def _s_whole(lo: int, hi: int | None = None) -> dict:
    return {"type": "integer", "minimum": lo} | ({"maximum": hi} if hi is not None else {})


def _s_choice(choices) -> dict:
    return {"type": "string", "enum": list(choices)}


Text = _value(check_text, _S_TEXT)
Bool = _value(check_bool, _S_BOOL)
Duration = _value(units.parse_duration, _S_DURATION)
PositiveDuration = _value(positive_duration, _S_DURATION)
Rate = _value(units.parse_rate, _S_RATE)
Size = _value(units.parse_size, _S_SIZE)
Buffer = _value(units.parse_buffer, _S_BUFFER)
Loss = _value(check_loss, _S_RATIO | {"description": 'a drop probability: "1%" or a fraction below 1 like 0.01'})
Dscp = _value(check_dscp, _S_DSCP)
Direction = _value(check_direction, _s_choice(DIRECTIONS))


def Whole(lo: int, hi: int | None = None) -> Any:
    return _value(whole(lo, hi), _s_whole(lo, hi))


def _cc_schema(schema: dict) -> None:
    schema["enum"] = list(cc_names())  # read from the core when the schema is generated


CC = Annotated[Any, PlainValidator(check_cc),
               WithJsonSchema({"type": "string", "description": "a congestion control of the simulator"}),
               Field(json_schema_extra=_cc_schema)]


# ---------------------------------------------------------------- tables


def _tables(what: str, empty: str | None = None):
    """A ``[[what]]`` array: a list of tables (else one message naming the array)."""
    def check(v):
        if empty is not None and not v:
            raise ValueError(empty)
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise ValueError(f"expected [[{what}]] tables")
        return v
    return BeforeValidator(check)


class Table(BaseModel):
    """A TOML table: unknown keys and missing required keys are errors naming
    the key (``ctx["key"]``), in the scenario layer's words."""

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True, defer_build=True)

    #: the message for a key this table does not know; {known} lists those it does
    unknown_message: ClassVar[str] = "unknown key (known here: {known})"
    #: the message for a value that is not a table
    not_table_message: ClassVar[str] = "expected a table, got {value!r}"
    #: what to say when a required key is missing, by key
    missing_messages: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        if isinstance(data, BaseModel):
            return data
        if not isinstance(data, dict):
            raise PydanticCustomError("not_table", "{message}", {"message": cls.not_table_message.format(value=data)})
        fields = cls.__pydantic_fields__
        for k in data:
            if k not in fields:
                raise PydanticCustomError("unknown_key", "{message}", {
                    "key": k, "message": cls.unknown_message.format(known=", ".join(sorted(fields)) or "none")})
        for k, message in cls.missing_messages.items():
            if k not in data:
                raise PydanticCustomError("missing_key", "{message}", {"key": k, "message": message})
        return data


class Bucket(Table):
    """A token bucket in front of the link (``policer``/``shaper``)."""

    not_table_message = 'expected a table like {{ rate = "2Mbit", burst = "10KB" }}, got {value!r}'
    missing_messages = {"rate": 'missing (e.g. rate = "2Mbit")'}
    rate: Rate = Field(description="the bucket's rate")
    burst: _value(burst_size, _S_SIZE) = Field(None, validate_default=False, description="bucket depth (default: 10 ms at rate, at least 2 full packets)")


class Flow(Table):
    """``[[flow]]``: one or ``count`` TCP connections."""

    missing_messages = {"rtt": 'missing (the flow\'s base RTT, e.g. rtt = "50ms")'}
    name: Text = Field(None, validate_default=False, description='label (default "CC-DIRECTION-N")')
    cc: CC = "cubic"
    direction: Direction = "down"
    rtt: PositiveDuration = Field(description="base round-trip time")
    count: Whole(1, 100_000) = Field(1, description="identical connections")
    start: Duration = "0s"
    stop: Duration = Field(None, validate_default=False)
    size: _value(_positive(units.parse_size, "size"), _S_SIZE) = Field(None, validate_default=False, description="bytes to send, then stop (default: bulk)")
    rate: _value(_positive(units.parse_rate, "rate"), _S_RATE) = Field(None, validate_default=False, description="application-limited: offer at most this rate")
    on: _value(_app_period(True), _S_DURATION) = Field(None, validate_default=False, description="on/off source: send at rate for this long (a multiple of 10ms)")
    off: _value(_app_period(False), _S_DURATION) = Field(None, validate_default=False, description="on/off source: then stay silent this long (a multiple of 10ms)")
    ecn: Optional[_value(check_optional_bool, _S_BOOL)] = Field(None, description="negotiate ECN (default: per cc)")
    tso: Bool = True
    pacing: Bool = False
    station: Text = Field(None, validate_default=False, description="the [[wifi.station]] this flow's client sits on")
    dscp: Dscp = 0


class Probe(Table):
    """``[[probe]]``: a latency probe."""

    name: Text = Field(None, validate_default=False)
    kind: _value(check_probe_kind, _s_choice(PROBE_KINDS)) = "udp"
    interval: PositiveDuration = "10ms"
    rtt: PositiveDuration = Field(None, validate_default=False, description="base RTT (default: the smallest flow RTT)")
    size: _value(probe_size, _S_SIZE) = "64B"
    direction: Direction = "down"
    station: Text = Field(None, validate_default=False)
    dscp: Dscp = 0


class Page(Table):
    """``[[page]]``: a web page load, each object a download."""

    missing_messages = {"rtt": 'missing (the base RTT to the page\'s server, e.g. rtt = "50ms")'}
    name: Text = Field(None, validate_default=False)
    objects: Whole(1, MAX_PAGE_OBJECTS) = Field(None, validate_default=False, description="number of objects (with size)")
    size: Size = Field(None, validate_default=False, description="the page's total size, split evenly over its objects")
    sizes: Annotated[list[_value(object_size, _S_SIZE)], BeforeValidator(lambda v: _page_sizes(v))] = Field(
        None, validate_default=False, description="each object's size (instead of objects and size)")
    connections: Whole(1, MAX_PAGE_CONNECTIONS) = PAGE_CONNECTIONS
    rtt: PositiveDuration
    start: Duration = "0s"
    cc: CC = "cubic"
    station: Text = Field(None, validate_default=False)
    dscp: Dscp = 0

    @model_validator(mode="before")
    @classmethod
    def _sizes_or_objects(cls, data: Any) -> Any:
        if isinstance(data, dict) and "sizes" in data and ("objects" in data or "size" in data):
            raise PydanticCustomError("conflict", "{message}", {
                "key": "sizes", "message": "give either sizes (each object's) or objects and size (the page's total), not both"})
        if isinstance(data, dict) and "sizes" not in data:
            for k in ("objects", "size"):
                if k not in data:
                    raise PydanticCustomError("missing_key", "{message}", {
                        "key": k, "message": 'missing (e.g. objects = 62 and size = "1.8MB", or sizes = ["30KB", ...])'})
        return data


def _page_sizes(v):
    if not isinstance(v, list) or not 1 <= len(v) <= MAX_PAGE_OBJECTS:
        raise ValueError(f"expected a list of 1..{MAX_PAGE_OBJECTS} sizes like [\"30KB\", \"2KB\"]")
    return v


class Station(Table):
    """``[[wifi.station]]``: one or ``count`` WiFi clients."""

    missing_messages = {"phy_rate": 'missing (e.g. phy_rate = "144.4Mbit" or "mcs15")'}
    name: Text = Field(None, validate_default=False)
    phy_rate: _value(station_phy, {"type": "string", "description": 'a PHY rate like "144.4Mbit" or an HT MCS "mcs0".."mcs15"'})
    count: Whole(1, 1000) = 1
    mpdu_error: _value(check_mpdu_error, _S_RATIO) = 0
    weight: _value(station_weight, {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}) = 1


class Limits(Table):
    """``[limits]``: what one run may produce (see :data:`LIMITS`)."""

    unknown_message = "unknown limit (known: {known})"
    max_flows: Whole(1, units.MAX_INT) = LIMITS["max_flows"]
    max_series_rows: Whole(1, units.MAX_INT) = LIMITS["max_series_rows"]
    max_probe_packets: Whole(1, units.MAX_INT) = LIMITS["max_probe_packets"]
    max_packets: Whole(1, units.MAX_INT) = LIMITS["max_packets"]


# ---------------------------------------------------------------- qdiscs (from the core's table)


def _param_rate(v) -> float:
    if v == 0 or v == "0":
        return 0.0
    return float(units.parse_rate(v))


def _param_type(kind: str, lo: float | None = None, hi: float | None = None) -> Any:
    """The field type of a qdisc parameter of this kind (crates/core's ParamKind);
    a count takes the table's range (CAKE's ``overhead`` may be negative)."""
    if kind == "time":
        return _value(lambda v: float(units.parse_duration(v)), _S_DURATION)
    if kind == "size":
        return _value(lambda v: float(units.parse_size(v)), _S_SIZE)
    if kind == "rate":
        return _value(_param_rate, {"anyOf": [_S_RATE, {"const": 0}]})
    if kind == "ratio":
        return _value(units.parse_ratio, _S_RATIO)
    if kind == "bool":
        return _value(lambda v: 1.0 if check_bool(v) else 0.0, _S_BOOL)
    if kind == "count":
        c_lo = 0 if lo is None else int(lo)
        c_hi = None if hi is None else int(hi)
        return _value(lambda v: float(check_whole(v, c_lo, c_hi)), _s_whole(c_lo, c_hi))
    if kind.startswith("choice:"):
        choices = kind.split(":", 1)[1].split(",")
        return _value(lambda v: float(choices.index(check_choice(v, choices))), _s_choice(choices))
    raise ValueError(f"qdisc parameter kind {kind} not understood")  # a core/Python mismatch


class QdiscParams(Table):
    """A qdisc's ``qdisc_params``: only the keys given are kept, in their order."""

    qdisc: ClassVar[str] = ""
    _given: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler):
        m = handler(data)
        if isinstance(data, dict):
            m._given = list(data)
        return m

    def values(self) -> dict[str, float]:
        """The parameters given, in base units (floats, as the core's table holds them)."""
        return {k: getattr(self, k) for k in self._given}


def _default_text(kind: str, default: float) -> str:
    if kind.startswith("choice:"):
        return kind.split(":", 1)[1].split(",")[int(default)]
    if kind == "time":
        return f"{default / 1e6:g}ms"
    if kind == "bool":
        return "true" if default else "false"
    return f"{default:g}"


def _params_model(q: dict) -> type[QdiscParams]:
    fields = {}
    for p in q["params"]:
        desc = f"{p['doc']} (default {_default_text(p['kind'], p['default'])})"
        fields[p["name"]] = (_param_type(p["kind"], p.get("min"), p.get("max")), Field(None, description=desc, validate_default=False))
    name = "".join(w.capitalize() for w in q["name"].split("_"))
    m = create_model(f"{name}Params", __base__=QdiscParams, __doc__=f"qdisc_params of {q['name']}: {q['doc']}", **fields)
    m.unknown_message = f"unknown parameter of {q['name']} (known: {{known}})"
    m.qdisc = q["name"]
    return m


@functools.cache
def _params_model_named(name: str) -> type[QdiscParams]:
    """The ``qdisc_params`` model of one qdisc, built on first use."""
    return _params_model(next(q for q in qdisc_list() if q["name"] == name))


def _lazy_qdisc(base: type[Table], name: str) -> type[Table]:
    """``base`` with its ``qdisc`` and ``qdisc_params`` keys, for validation:
    one model whose parameters are checked by the named qdisc's model, built
    only for the qdiscs a scenario uses. (All of them as pydantic models cost
    ~0.15 s of every run's start-up; :func:`_by_qdisc` builds that union for
    the JSON Schema only.)"""

    class Lazy(base):  # type: ignore[valid-type, misc]
        qdisc: _value(check_qdisc, _s_choice(qdisc_names())) = "fifo"
        qdisc_params: Any = Field(None, validate_default=False)
        _params: Any = PrivateAttr(None)

        @model_validator(mode="after")
        def _check_params(self):
            model = _params_model_named(self.qdisc)
            try:
                self._params = model.model_validate({} if self.qdisc_params is None else self.qdisc_params)
            except ValidationError as e:
                inner = scenario_error(e)
                key = "qdisc_params" + (f".{inner.key}" if inner.key else "")
                raise PydanticCustomError("qdisc_params", "{message}", {"key": key, "message": inner.message}) from None
            return self

        def qdisc_values(self) -> dict[str, float]:
            """The qdisc parameters given, in base units."""
            return self._params.values()

    Lazy.__name__ = Lazy.__qualname__ = name
    return Lazy


def _by_qdisc(base: type[Table], variant: Callable[[str], str]) -> Any:
    """``base`` with its ``qdisc`` and ``qdisc_params`` keys, one model per
    qdisc of the core, chosen by the ``qdisc`` key (default fifo): the JSON
    Schema's form (validation uses :func:`_lazy_qdisc`)."""
    members = []
    for q in qdisc_list():
        params = _params_model_named(q["name"])
        qdisc_t = Literal[q["name"]]  # type: ignore[valid-type]
        qfield = (qdisc_t, Field("fifo", description="the queue discipline")) if q["name"] == "fifo" else (qdisc_t, Field(description=q["doc"]))
        m = create_model(variant(q["name"]), __base__=base, __doc__=base.__doc__,
                         qdisc=qfield, qdisc_params=(params, Field(default_factory=params)))
        members.append(Annotated[m, Tag(q["name"])])

    def tag(v: Any) -> str | None:
        if not isinstance(v, dict):
            return "fifo"  # its table check says "expected a table"
        q = v.get("qdisc", "fifo")
        return q if isinstance(q, str) and q in qdisc_names() else None

    return Annotated[Union[tuple(members)], Discriminator(tag)]


class LinkBase(Table):
    """``[link.down]``/``[link.up]``: a bottleneck."""

    missing_messages = {"rate": 'missing (e.g. rate = "100Mbit")'}
    rate: _value(link_rate, {"type": "string", "description": 'the bottleneck rate ("100Mbit") or "trace:FILE" (a Mahimahi trace)'})
    buffer: Buffer = "1bdp"
    loss: Loss = 0
    policer: Optional[Bucket] = Field(None, description="a token-bucket policer in front of the queue")
    shaper: Optional[Bucket] = Field(None, description="a token-bucket shaper in front of the queue")
    device_queue: _value(_buffer_no_bdp('"2pkt" or "3000B"'), _S_PKT_OR_BYTES) = Field(
        None, validate_default=False, description="a driver/device queue below the qdisc")


class WifiBase(Table):
    """``[wifi]``: a shared WiFi medium instead of ``[link]`` bottlenecks (docs/wifi.md)."""

    missing_messages = {"station": "no station: add at least one [[wifi.station]] with a phy_rate"}
    mac: _value(check_wifi_mac, _s_choice(WIFI_MACS)) = "airtime"
    buffer: _value(_buffer_no_bdp('"1000pkt" or "1.5MB"'), _S_PKT_OR_BYTES) = "1000pkt"  # Linux txqueuelen
    station: Annotated[list[Station], _tables("wifi.station", empty="no station: add at least one [[wifi.station]] with a phy_rate")]


# ---------------------------------------------------------------- the document


@functools.cache
def models(full: bool = False) -> type[Table]:
    """The scenario document's model (built once). ``full``: with one model
    per qdisc for ``[link.*]`` and ``[wifi]`` (the JSON Schema's form);
    otherwise a qdisc's parameters are validated by its model on first use."""
    if full:
        LinkT = _by_qdisc(LinkBase, lambda q: f"Link{''.join(w.capitalize() for w in q.split('_'))}")
        WifiT = _by_qdisc(WifiBase, lambda q: f"Wifi{''.join(w.capitalize() for w in q.split('_'))}")
    else:
        LinkT, WifiT = _lazy_qdisc(LinkBase, "Link"), _lazy_qdisc(WifiBase, "Wifi")
    LinksT = create_model("Links", __base__=Table, __doc__="``[link]``: the bottlenecks, by direction.",
                         down=(LinkT, Field(None, validate_default=False, description="the downlink (server -> client)")),
                         up=(LinkT, Field(None, validate_default=False, description="the uplink (client -> server)")))

    class Scenario(Table):
        """A bloatlab scenario (docs/scenario.md)."""

        model_config = ConfigDict(title="bloatlab scenario")
        missing_messages = {"duration": 'missing (e.g. duration = "60s")'}
        name: Text = Field(None, validate_default=False, description="the scenario's name (default: the file's)")
        description: Text = Field(None, validate_default=False)
        duration: PositiveDuration = Field(description="length of the run")
        seed: Whole(0, 2**63 - 1) = 1
        sample_interval: PositiveDuration = Field("10ms", description="time-series sampling interval")
        start_jitter: Duration = Field(None, validate_default=False, description="start each connection up to this much later (seeded)")
        flow: Annotated[list[Flow], _tables("flow")] = []
        page: Annotated[list[Page], _tables("page")] = []
        probe: Annotated[list[Probe], _tables("probe")] = []
        link: LinksT = Field(None, validate_default=False)
        wifi: WifiT = Field(None, validate_default=False)
        limits: Limits = Field(default_factory=Limits, description="what one run may produce; raise knowingly")

    return Scenario


def validate(doc: dict) -> Table:
    """The validated scenario document; :class:`ScenarioError` naming the key."""
    try:
        return models().model_validate(doc)
    except ValidationError as e:
        raise scenario_error(e) from None


def scenario_error(e: ValidationError) -> ScenarioError:
    """pydantic's first error as the scenario layer's: a dotted key path
    (``flow.0.cc``) and our message."""
    err = e.errors(include_url=False)[0]
    loc = list(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "value_error":
        message = str(ctx["error"])
    elif "message" in ctx:
        message = ctx["message"]
        if "key" in ctx:
            loc.append(ctx["key"])
    else:  # not expected: our validators say what they expect
        message = err["msg"]
    return ScenarioError(".".join(str(x) for x in loc), message)


def json_schema() -> dict:
    """The JSON Schema of the TOML scenario language (docs/schema/scenario-toml.schema.json,
    written by ``bloatlab scenarios --schema``)."""
    schema = _drop_null_defaults(models(full=True).model_json_schema(mode="validation"))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema"} | schema


def _drop_null_defaults(node: Any) -> Any:
    """An absent key is not ``null`` (TOML has none): no ``"default": null`` for editors to offer."""
    if isinstance(node, dict):
        return {k: _drop_null_defaults(v) for k, v in node.items() if not (k == "default" and v is None)}
    if isinstance(node, list):
        return [_drop_null_defaults(v) for v in node]
    return node


def json_schema_text() -> str:
    """:func:`json_schema` as the checked-in file holds it."""
    import json

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
