"""Scenario language v1: every malformed-scenario class exits 2 naming the key;
--set overrides; defaults; resolution of BDP buffers and counts."""

import json

import pytest

import bloatlab
from bloatlab.errors import ScenarioError
from bloatlab.scenario import load

from conftest import scenario_text


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


BAD = [
    # (description, scenario text edit, --set args, key the message must name)
    ("unknown top-level key", "colour = 'red'\n", [], "colour"),
    ("unknown link key", None, ["link.down.speed=1"], "--set link.down.speed"),
    ("wrong rate unit", None, ["link.down.rate=fast"], "link.down.rate"),
    ("zero rate", None, ["link.down.rate=0Mbit"], "link.down.rate"),
    ("negative duration", None, ["duration=-5s"], "duration"),
    ("zero duration", None, ["duration=0s"], "duration"),
    ("zero buffer", None, ["link.down.buffer=0KB"], "link.down.buffer"),
    ("bad buffer", None, ["link.down.buffer=lots"], "link.down.buffer"),
    ("loss above one", None, ["link.down.loss=150%"], "link.down.loss"),
    ("negative loss", None, ["link.down.loss=-0.1"], "link.down.loss"),
    ("unknown cc", None, ["flow.0.cc=vegas2"], "flow.0.cc"),
    ("unknown direction", None, ["flow.0.direction=sideways"], "flow.0.direction"),
    ("count zero", None, ["flow.0.count=0"], "flow.0.count"),
    ("zero rtt", None, ["flow.0.rtt=0ms"], "flow.0.rtt"),
    ("negative size", None, ["flow.0.size=-1MB"], "flow.0.size"),
    ("unknown --set path", None, ["flow.0.colour=blue"], "--set flow.0.colour"),
    ("--set on a missing flow", None, ["flow.3.cc=bbr"], "--set flow.3.cc"),
    ("unknown qdisc", None, ["link.down.qdisc=magic"], "link.down.qdisc"),
]


@pytest.mark.parametrize("desc,extra,sets,key", BAD, ids=[b[0] for b in BAD])
def test_malformed_scenarios_exit_2_naming_the_key(tmp_path, cli, desc, extra, sets, key):
    text = scenario_text()
    if extra:
        text = extra + text
    path = write(tmp_path, text)
    args = ["run", path]
    for s in sets:
        args += ["--set", s]
    r = cli(*args)
    assert r.returncode == 2, (desc, r.stdout, r.stderr)
    assert key in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_no_flow_is_an_error_naming_flow(tmp_path, cli):
    text = scenario_text().split("[[flow]]")[0]
    r = cli("run", write(tmp_path, text))
    assert r.returncode == 2 and "flow" in r.stderr and "Traceback" not in r.stderr


def test_toml_syntax_error_exits_2(tmp_path, cli):
    r = cli("run", write(tmp_path, "name = \n[[flow"))
    assert r.returncode == 2 and "TOML syntax error" in r.stderr


def test_missing_file_exits_2(cli):
    r = cli("run", "/nonexistent/scenario.toml")
    assert r.returncode == 2 and "cannot read scenario" in r.stderr


def test_bdp_buffer_is_rate_times_smallest_rtt_of_flows_crossing():
    sc = load(scenario_text() + '[[flow]]\ncc = "bbr"\ndirection = "down"\nrtt = "10ms"\n')
    r = sc.resolved()
    assert r["links"]["down"]["buffer_bytes"] == 20_000_000 * 0.010 / 8  # 25 KB, the 10 ms flow's BDP
    assert r["links"]["down"]["buffer_pkts"] is None


def test_units_and_counts_resolve_to_si_base_units():
    text = scenario_text(buffer='"1000pkt"', loss='"1%"').replace('rtt = "40ms"', 'rtt = "40ms"\ncount = 3')
    r = load(text).resolved()
    assert r["links"]["down"]["rate_bps"] == 20_000_000
    assert r["links"]["down"]["buffer_pkts"] == 1000
    assert r["links"]["down"]["loss"] == pytest.approx(0.01)
    assert [f["id"] for f in r["flows"]] == [0, 1, 2]
    assert r["flows"][0]["rtt_ns"] == 40_000_000
    assert r["duration_ns"] == 10_000_000_000


def test_set_overrides_any_key_and_accepts_plain_fractions():
    sc = load(scenario_text(), ["link.down.loss=0.05", "flow.0.cc=bbr", "link.down.buffer=375KB"])
    r = sc.resolved()
    assert r["links"]["down"]["loss"] == pytest.approx(0.05)
    assert r["flows"][0]["cc"] == "bbr"
    assert r["links"]["down"]["buffer_bytes"] == 375_000


def test_python_api_raises_scenario_error_with_the_key():
    with pytest.raises(ScenarioError) as e:
        bloatlab.run(scenario_text(), set={"link.down.rate": "fast"})
    assert e.value.key == "link.down.rate"
    assert 'expected a rate like "100Mbit", got "fast"' in str(e.value)


def test_same_seed_gives_an_identical_summary_and_another_seed_differs(tmp_path):
    text = scenario_text(loss='"1%"', duration='"5s"')
    a = bloatlab.run(text).summary
    b = bloatlab.run(text).summary
    c = bloatlab.run(text, set={"seed": 2}).summary
    for s in (a, b, c):
        s.pop("meta")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert json.dumps(a["flows"], sort_keys=True) != json.dumps(c["flows"], sort_keys=True)
