"""The resolved scenario that Python hands an engine conforms to the contract
the engines read (issue 9): docs/schema/scenario.schema.json, generated from
crates/schema's types (kept current by crates/schema/tests/json_schema.rs)."""

import glob
import json
import os

import jsonschema
import pytest

from bloatlab.scenario import load

from conftest import ROOT

SCHEMA = json.load(open(os.path.join(ROOT, "docs", "schema", "scenario.schema.json")))
SCENARIOS = sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_resolved_scenario_matches_the_engines_contract(path):
    jsonschema.validate(load(path).resolved(), SCHEMA)


def test_the_schema_catches_what_the_engines_would_refuse():
    r = load(SCENARIOS[0]).resolved()
    for bad in ({**r, "surprise": 1}, {**r, "seed": -1}, {k: v for k, v in r.items() if k != "flows"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)
