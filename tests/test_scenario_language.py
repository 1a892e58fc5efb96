"""The scenario language (crates/schema/src/language, issue 34 §1): its JSON Schema
for editors is generated and checked in, every ready scenario conforms to it, a
scenario is resolved once per run, any value of any key gives a scenario or an
error naming a key, and a run does not import pydantic, pandas or the plotting stack."""

import glob
import json
import os
import tomllib

import jsonschema
import pytest

import bloatlab
from bloatlab import scenario
from bloatlab.errors import ScenarioError

from conftest import ROOT

SCHEMA_PATH = os.path.join(ROOT, "docs", "schema", "scenario-toml.schema.json")
SCENARIOS = sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True))


def _validator():
    schema = json.load(open(SCHEMA_PATH))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_checked_in_schema_is_what_the_models_generate():
    text = scenario.json_schema_text()
    if os.environ.get("BLOATLAB_WRITE_SCHEMA"):
        with open(SCHEMA_PATH, "w") as f:
            f.write(text)
    with open(SCHEMA_PATH) as f:
        assert f.read() == text, ("docs/schema/scenario-toml.schema.json is stale: regenerate it with "
                                  "`bloatlab scenarios --schema > docs/schema/scenario-toml.schema.json`")


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_ready_scenario_conforms_to_the_language_schema(path):
    with open(path, "rb") as f:
        _validator().validate(tomllib.load(f))


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(surprise=1),
    lambda d: d["flow"][0].update(colour="red"),
    lambda d: d["flow"][0].update(cc="nosuchcc"),
    lambda d: d["link"]["down"].update(qdisc="codel", qdisc_params={"quantum": 300}),  # fq_codel's, not codel's
    lambda d: d["link"]["down"].update(qdisc="nosuchqdisc"),
    lambda d: d.pop("duration"),
], ids=["top-level key", "flow key", "cc", "qdisc parameter of another qdisc", "qdisc", "missing duration"])
def test_the_schema_refuses_what_the_scenario_layer_refuses(mutate):
    with open(os.path.join(ROOT, "scenarios", "bbr-1pct.toml"), "rb") as f:
        doc = tomllib.load(f)
    mutate(doc)
    assert not _validator().is_valid(doc)
    with pytest.raises(ScenarioError):
        scenario.load(doc)


def test_qdisc_params_are_checked_against_the_named_qdisc_with_the_key_path():
    with open(os.path.join(ROOT, "scenarios", "bbr-1pct.toml"), "rb") as f:
        doc = tomllib.load(f)
    doc["link"]["up"].update(qdisc="codel", qdisc_params={"target": "5ms", "quantum": 300})
    with pytest.raises(ScenarioError) as e:
        scenario.load(doc)
    assert e.value.key == "link.up.qdisc_params.quantum"
    assert "unknown parameter of codel" in e.value.message


def test_loads_reads_text_and_load_reads_a_file_to_the_same_scenario():
    path = os.path.join(ROOT, "scenarios", "bbr-1pct.toml")
    with open(path) as f:
        text = f.read()
    from_text = scenario.loads(text)
    from_file = scenario.load(path)
    assert from_text.source is None and from_file.source == path
    assert json.dumps(from_text.resolved()) == json.dumps(from_file.resolved())


def test_loads_names_a_toml_syntax_error():
    with pytest.raises(ScenarioError, match="TOML syntax error"):
        scenario.loads('duration = "60s"\n[link.down\n')


def test_a_run_resolves_its_scenario_once(monkeypatch):
    calls = []
    real = scenario._resolve  # resolve() and Scenario.resolved() both go through it

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(scenario, "_resolve", counting)
    bloatlab.run(os.path.join(ROOT, "scenarios", "bbr-1pct.toml"), set={"duration": "1s"})
    assert len(calls) == 1


def test_a_loaded_scenario_is_not_resolved_again_by_the_runs_it_is_passed_to(monkeypatch):
    sc = scenario.load(os.path.join(ROOT, "scenarios", "bbr-1pct.toml"), set={"duration": "1s"})
    calls = []
    real = scenario._resolve
    monkeypatch.setattr(scenario, "_resolve", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = bloatlab.run(sc).summary
    second = bloatlab.run(sc).summary
    assert calls == [] and first["flows"] == second["flows"]
    bloatlab.run(sc, set={"seed": 2})  # an override is a new scenario, resolved once
    assert calls == [1]


# ---------------------------------------------------------------- any value of any key

# Values of every kind a TOML file can hold, good for some keys and bad for others.
PROBES = [None, True, False, 0, 1, -1, 2, 10, 63, 64, 1000, 1001, 100_000, 100_001, 2**63 - 1, 2**63, 0.0, 0.01, 0.5,
          1.0, 1.5, -0.5, float("nan"), "", "x", "0", "1", "0s", "0ms", "10ms", "25ms", "1.5s", "-1ms", "100Mbit", "0Mbit",
          "1Kbit", "64B", "15B", "1473B", "1500B", "375KB", "1000pkt", "2pkt", "1bdp", "0.5bdp", "1%", "0%", "100%",
          "0.01", "EF", "cs1", "AF41", "BE", "down", "up", "sideways", "cubic", "bbr", "fifo", "fq_codel", "udp", "tcp",
          "mcs3", "mcs16", "trace:x.trace", [], [1], ["1KB"], {}, {"a": 1}, "x" * 200]
_LINKED = {"duration": "5s", "link": {"down": {"rate": "20Mbit", "policer": {"rate": "10Mbit", "burst": "20KB"}}},
           "flow": [{"rtt": "40ms", "count": 2}], "probe": [{"interval": "100ms"}], "limits": {"max_flows": 100}}
_WIFI = {"duration": "5s", "wifi": {"mac": "fq", "station": [{"name": "a", "phy_rate": "mcs7"}]}, "flow": [{"rtt": "20ms"}]}
_PAGE = {"duration": "5s", "link": {"down": {"rate": "20Mbit"}}, "page": [{"rtt": "20ms", "objects": 4, "size": "40KB"}]}
_TRAIN = {"duration": "5s", "link": {"down": {"rate": "20Mbit"}}, "flow": [{"rtt": "40ms"}],
          "train": [{"packets": 200, "rate": "100Mbit", "start": "1s"}]}
# (table, a document with it, where it is, the language's name of its keys)
_TABLES = [("top", _LINKED, lambda d: d, "TOP_KEYS"), ("flow", _LINKED, lambda d: d["flow"][0], "FLOW_KEYS"),
           ("probe", _LINKED, lambda d: d["probe"][0], "PROBE_KEYS"), ("link", _LINKED, lambda d: d["link"]["down"], "LINK_KEYS"),
           ("bucket", _LINKED, lambda d: d["link"]["down"]["policer"], "BUCKET_KEYS"),
           ("limits", _LINKED, lambda d: d["limits"], "LIMITS_KEYS"), ("wifi", _WIFI, lambda d: d["wifi"], "WIFI_KEYS"),
           ("station", _WIFI, lambda d: d["wifi"]["station"][0], "WIFI_STATION_KEYS"),
           ("page", _PAGE, lambda d: d["page"][0], "PAGE_KEYS"), ("train", _TRAIN, lambda d: d["train"][0], "TRAIN_KEYS")]


@pytest.mark.parametrize("table,base,where,keys", _TABLES, ids=[t[0] for t in _TABLES])
def test_any_value_of_any_key_gives_a_scenario_or_an_error_naming_a_key(table, base, where, keys):
    import copy

    names = sorted(scenario.key_names()[keys]) + ["nonsense"]
    for key in names:
        for v in PROBES:
            doc = copy.deepcopy(base)
            if v is None:
                where(doc).pop(key, None)  # TOML has no null: None stands for the key left out
            else:
                where(doc)[key] = v
            try:
                sc = scenario.load(doc)
            except ScenarioError as e:
                assert e.message and "Traceback" not in e.message, (key, v, e)
                continue
            assert sc.resolved()["duration_ns"] > 0 and sc.resolved()["flows"], (key, v)


def test_an_unknown_key_lists_the_keys_known_there_and_a_bad_value_the_expected_form():
    doc = {"duration": "5s", "link": {"down": {"rate": "20Mbit"}}, "flow": [{"rtt": "40ms", "colour": "red"}]}
    with pytest.raises(ScenarioError) as e:
        scenario.load(doc)
    assert e.value.key == "flow.0.colour"
    assert e.value.message.startswith("unknown key (known here: cc, count, direction, dscp, ecn, name, off, on, pacing,")
    doc["flow"][0] = {"rtt": 40}
    with pytest.raises(ScenarioError) as e:
        scenario.load(doc)
    assert (e.value.key, e.value.message) == ("flow.0.rtt", 'expected a duration like "10ms", got 40')
    doc["flow"][0] = {"rtt": "40ms", "count": 1.5}
    with pytest.raises(ScenarioError) as e:
        scenario.load(doc)
    assert (e.value.key, e.value.message) == ("flow.0.count", "expected a whole number, got 1.5")


def test_a_set_path_is_checked_against_the_languages_keys():
    doc = {"duration": "5s", "link": {"down": {"rate": "20Mbit"}}, "flow": [{"rtt": "40ms"}]}
    with pytest.raises(ScenarioError) as e:
        scenario.load(doc, ["flow.0.colour=red"])
    assert e.value.key == "--set flow.0.colour" and "known here:" in e.value.message
    assert scenario.load(doc, ["link.down.qdisc=codel", "link.down.qdisc_params.target=5ms"]).resolved()["links"]["down"]["qdisc"] == {
        "kind": "codel", "params": {"target": 5e6}}
    # a list of tables by its index, [[train]] as [[flow]]
    doc["train"] = [{"packets": 200}]
    assert scenario.load(doc, ["train.0.packets=10"]).resolved()["trains"][0]["packets"] == 10
    with pytest.raises(ScenarioError) as e:
        scenario.load(doc, ["train.1.packets=10"])
    assert (e.value.key, e.value.message) == ("--set train.1.packets", "there is no train 1 (the scenario has 1)")


@pytest.mark.parametrize("extra", [[], ["--seed", "2", "--set", "flow.0.cc=bbr"]], ids=["plain", "with --set"])
def test_a_run_with_json_output_imports_neither_pydantic_nor_pandas_nor_the_plotting_stack(tmp_path, extra):
    import subprocess
    import sys

    f = tmp_path / "s.toml"
    f.write_text('duration = "1s"\n[link.down]\nrate = "10Mbit"\n[[flow]]\nrtt = "20ms"\n')
    code = ("import sys; from bloatlab.cli import main; rc = main(['run', sys.argv[1], '--json'] + sys.argv[2:]); "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code, str(f)] + extra, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    loaded = set(p.stderr.split())
    assert "bloatlab" in loaded
    assert loaded & {"pydantic", "pydantic_core", "pandas", "pyarrow", "numpy", "rich", "matplotlib", "duckdb"} == set()


def test_every_key_of_the_language_is_named_in_docs_scenario_md():
    import re

    with open(os.path.join(ROOT, "docs", "scenario.md")) as f:
        doc = f.read()
    missing = []
    for table, keys in scenario.key_names().items():
        for k in sorted(keys):
            named = (re.search(rf"`{re.escape(k)}`|\b{re.escape(k)}\s*=", doc)
                     or re.search(rf"\[\[?(\w+\.)?{re.escape(k)}\b", doc))  # a table: [[flow]], [link.down], [wifi]
            if not named:
                missing.append(f"{table}: {k}")
    assert not missing, f"keys of the language that docs/scenario.md does not name: {missing}"
