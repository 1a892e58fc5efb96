"""The scenario language as pydantic models (issue 9 §4): its JSON Schema for
editors is generated and checked in, every ready scenario conforms to it, and
a scenario is resolved once per run."""

import glob
import json
import os
import tomllib

import jsonschema
import pytest

import bloatlab
from bloatlab import scenario
from bloatlab.errors import ScenarioError
from bloatlab.scenario_model import json_schema_text

from conftest import ROOT

SCHEMA_PATH = os.path.join(ROOT, "docs", "schema", "scenario-toml.schema.json")
SCENARIOS = sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True))


def _validator():
    schema = json.load(open(SCHEMA_PATH))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_checked_in_schema_is_what_the_models_generate():
    text = json_schema_text()
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
    real = scenario.resolve

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(scenario, "resolve", counting)
    bloatlab.run(os.path.join(ROOT, "scenarios", "bbr-1pct.toml"), set={"duration": "1s"})
    assert len(calls) == 1


def test_a_loaded_scenario_is_not_resolved_again_by_the_runs_it_is_passed_to(monkeypatch):
    sc = scenario.load(os.path.join(ROOT, "scenarios", "bbr-1pct.toml"), set={"duration": "1s"})
    calls = []
    real = scenario.resolve
    monkeypatch.setattr(scenario, "resolve", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = bloatlab.run(sc).summary
    second = bloatlab.run(sc).summary
    assert calls == [] and first["flows"] == second["flows"]
    bloatlab.run(sc, set={"seed": 2})  # an override is a new scenario, resolved once
    assert calls == [1]
