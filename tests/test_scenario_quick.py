"""The quick reader of common scenarios (bloatlab.scenario_quick) against the
language's pydantic models: same keys, defaults and value checks, the same
validated values where it answers, no answer where the models refuse, and a
plain `bloatlab run --json` that never imports pydantic, pandas or the plotting stack."""

import copy
import glob
import os
import subprocess
import sys
import tomllib
import typing

import pytest
from pydantic import PlainValidator

from bloatlab import scenario_model as sm
from bloatlab import scenario_quick as quick
from bloatlab.errors import ScenarioError

from conftest import ROOT

SCENARIOS = sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True))


def _link_model():
    return sm.models().model_fields["link"].annotation.model_fields["down"].annotation


# (quick table, its model, the model's keys the quick reader leaves to the models or reads as tables)
PAIRS = {
    "flow": (quick.FLOW, lambda: sm.Flow, set()),
    "probe": (quick.PROBE, lambda: sm.Probe, set()),
    "limits": (quick.LIMITS_TABLE, lambda: sm.Limits, set()),
    "link": (quick.LINK, _link_model, quick.LINK_LEFT),
    "top": (quick.TOP, sm.models, quick.TABLES | quick.TOP_LEFT),
}

# Values of every kind a TOML file can hold, good for some keys and bad for others.
PROBES = [None, True, False, 0, 1, -1, 2, 10, 63, 64, 1000, 1001, 100_000, 100_001, 2**63 - 1, 2**63, 0.0, 0.01, 0.5,
          1.0, 1.5, -0.5, "", "x", "0", "1", "0s", "0ms", "10ms", "25ms", "1.5s", "-1ms", "100Mbit", "0Mbit", "1Kbit",
          "64B", "15B", "1473B", "1500B", "375KB", "1000pkt", "2pkt", "1bdp", "0.5bdp", "1%", "0%", "100%", "0.01",
          "EF", "cs1", "AF41", "BE", "down", "up", "sideways", "cubic", "bbr", "reno", "fifo", "fq_codel", "cake",
          "udp", "tcp", "trace:x.trace", [], [1], {}, {"a": 1}]


def _checker(field):
    """The function a model's field validates with (PlainValidator), also inside Optional[...]."""
    for m in field.metadata:
        if isinstance(m, PlainValidator):
            return m.func
    for arg in typing.get_args(field.annotation):
        for m in getattr(arg, "__metadata__", ()):
            if isinstance(m, PlainValidator):
                return m.func
    raise AssertionError(f"no PlainValidator on {field}")


def _boundaries(field) -> list:
    """Values at the edges the field's JSON Schema states (minimum, maximum, enum)."""
    out = []
    for m in list(field.metadata) + [m for a in typing.get_args(field.annotation) for m in getattr(a, "__metadata__", ())]:
        schema = getattr(m, "json_schema", None) or {}
        for s in [schema] + schema.get("anyOf", []):
            for k in ("minimum", "maximum"):
                if k in s:
                    out += [s[k] - 1, s[k], s[k] + 1]
            out += s.get("enum", [])
    return out


def _answer(fn, v):
    try:
        return ("ok", fn(v))
    except Exception as e:  # noqa: BLE001 - the same exception and message is what is compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("table", PAIRS)
def test_each_quick_table_has_the_models_keys_defaults_and_checks(table):
    spec, model, left = PAIRS[table]
    assert left <= set(model().model_fields)
    fields = {k: f for k, f in model().model_fields.items() if k not in left}
    assert list(spec) == list(fields), "the quick reader's keys (in order) are the model's"
    for key, (check, default, validate_default) in spec.items():
        f = fields[key]
        if default is quick.REQUIRED:
            assert f.is_required(), key
            continue
        assert not f.is_required() and f.default == default, key
        assert validate_default == (f.validate_default is not False), key
        model_check = _checker(f)
        for v in PROBES + _boundaries(f):
            assert _answer(check, v) == _answer(model_check, v), f"{table}.{key} = {v!r}"


def test_the_keys_a_set_path_may_name_are_the_models_for_the_tables_read_quickly():
    from bloatlab import scenario

    quick_keys = quick.key_names()
    assert set(quick_keys) == {"TOP_KEYS", "FLOW_KEYS", "PROBE_KEYS", "LINK_KEYS"}
    for name, keys in quick_keys.items():
        assert keys == scenario.key_names()[name], name


def _agree(q, m, where="") -> None:
    """The quick reader's value ``q`` is the models' ``m``: same attributes, same values of the same types."""
    if isinstance(q, quick.Values):
        for k, v in vars(q).items():
            _agree(v, getattr(m, k), f"{where}.{k}")
        if hasattr(q, "qdisc_values"):
            assert q.qdisc_values() == m.qdisc_values(), where
    elif isinstance(q, list):
        assert isinstance(m, list) and len(q) == len(m), where
        for i, (a, b) in enumerate(zip(q, m)):
            _agree(a, b, f"{where}.{i}")
    else:
        assert (type(q), q) == (type(m), m), where


def _same_as_models(doc) -> bool:
    """The quick reader agrees with the models: no answer where they refuse, the same values where it answers.
    Returns whether it answered."""
    q = quick.validate(copy.deepcopy(doc))
    try:
        m = sm.validate(copy.deepcopy(doc))
    except ScenarioError:
        assert q is None, f"the quick reader accepts what the models refuse: {doc}"
        return False
    if q is None:
        return False
    _agree(q, m, repr(doc))
    return True


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_ready_scenario_reads_the_same_quick_or_through_the_models(path):
    with open(path, "rb") as f:
        _same_as_models(tomllib.load(f))


BASE = {
    "name": "x", "duration": "10s", "seed": 3, "sample_interval": "20ms",
    "flow": [{"cc": "bbr", "rtt": "40ms", "count": 2, "start": "1s", "stop": "9s"}, {"rtt": "80ms", "direction": "up"}],
    "probe": [{"interval": "100ms"}],
    "link": {"down": {"rate": "100Mbit", "buffer": "1bdp", "qdisc": "fq_codel"}, "up": {"rate": "10Mbit", "loss": "1%"}},
    "limits": {"max_flows": 20},
}


def test_the_base_document_and_the_ns3_comparison_scenario_are_read_quickly():
    assert _same_as_models(BASE)
    ns3 = {"name": "ns3-compare", "duration": "60s", "seed": 1,
           "link": {"down": {"rate": "100Mbit", "buffer": "1bdp", "qdisc": "fifo"}},
           "flow": [{"cc": "cubic", "direction": "down", "rtt": "100ms", "count": 1}]}
    assert _same_as_models(ns3)


def _places(doc):
    """(table dict, label) of every table of the base document."""
    yield doc, "top"
    yield doc["flow"][0], "flow"
    yield doc["probe"][0], "probe"
    yield doc["link"]["down"], "link"
    yield doc["limits"], "limits"


@pytest.mark.parametrize("table", ["top", "flow", "probe", "link", "limits"])
def test_any_value_of_any_key_gives_the_models_answer_or_none(table):
    spec = PAIRS[table][0]
    for key in spec:
        for v in PROBES:
            doc = copy.deepcopy(BASE)
            where = next(t for t, label in _places(doc) if label == table)
            if v is None:
                where.pop(key, None)  # TOML has no null: None stands for the key left out
            else:
                where[key] = v
            _same_as_models(doc)


@pytest.mark.parametrize("table", ["top", "flow", "probe", "link", "limits"])
def test_unknown_keys_other_tables_and_non_tables_are_left_to_the_models(table):
    doc = copy.deepcopy(BASE)
    next(t for t, label in _places(doc) if label == table)["nonsense"] = 1
    assert quick.validate(doc) is None
    for extra in ({"page": [{"rtt": "10ms", "objects": 2, "size": "10KB"}]}, {"wifi": {"station": [{"phy_rate": "mcs7"}]}},
                  {"link": {"down": {"rate": "1Mbit", "policer": {"rate": "1Mbit"}}}},
                  {"link": {"down": {"rate": "1Mbit", "qdisc": "codel", "qdisc_params": {"target": "5ms"}}}},
                  {"link": {"sideways": {"rate": "1Mbit"}}}, {"link": "fast"}, {"flow": {"rtt": "10ms"}},
                  {"flow": ["x"]}, {"probe": [1]}, {"limits": 5}):
        doc = copy.deepcopy(BASE) | extra
        assert quick.validate(doc) is None, extra
        _same_as_models(doc)


@pytest.mark.parametrize("extra", [[], ["--seed", "2", "--set", "flow.0.cc=bbr"]], ids=["plain", "with --set"])
def test_a_run_with_json_output_imports_neither_pydantic_nor_pandas_nor_the_plotting_stack(tmp_path, extra):
    f = tmp_path / "s.toml"
    f.write_text('duration = "1s"\n[link.down]\nrate = "10Mbit"\n[[flow]]\nrtt = "20ms"\n')
    code = ("import sys; from bloatlab.cli import main; rc = main(['run', sys.argv[1], '--json'] + sys.argv[2:]); "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, str(f)] + extra, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    loaded = set(p.stderr.split())
    assert "bloatlab" in loaded
    assert loaded & {"pydantic", "pydantic_core", "pandas", "pyarrow", "numpy", "rich", "matplotlib", "duckdb"} == set()
