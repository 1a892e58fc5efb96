"""[[expect]]: transperf's scores (google/transperf README, __init__.py default_check_*) on hand-made numbers, their
validation, and one transperf sample configuration run end to end through `bloatlab sweep`."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from bloatlab.cli import main as cli
from bloatlab.errors import ScenarioError
from bloatlab.study import expect as ex
from bloatlab.study import spec

from conftest import ROOT


def test_jains_index_is_transperfs_times_100_and_0_when_nothing_moved():
    assert ex.jain([1.0, 1.0, 1.0, 1.0]) == 100.0
    assert ex.jain([1.0, 0.0]) == 50.0
    assert ex.jain([3.0, 1.0]) == 80.0          # 100 * 16 / (2 * 10)
    assert ex.jain([0.0, 0.0]) == 0.0


def test_tput_is_the_mean_over_buckets_of_the_summed_goodput_over_the_bottleneck():
    assert ex.tput_score([40.0, 45.0, 50.0], 50.0) == 90.0


def test_rtt_med_is_min_over_median_and_its_bound_is_transperfs():
    assert ex.rtt_med_score(40.0, 80.0) == 50.0
    assert ex.rtt_med_score(40.0, 70.0) == pytest.approx(400 / 7, abs=1e-12)
    # 1.1 * (40 ms + ceil(165 pkt * 1514 B * 8 / 50 Mbit/s = 39.97 ms))
    assert ex.rtt_bound_ms(40.0, 165, 50.0) == pytest.approx(88.0, abs=1e-12)
    assert ex.buffer_pkts({"buffer_pkts": 165, "buffer_bytes": 0}) == 165.0
    assert ex.buffer_pkts({"buffer_pkts": None, "buffer_bytes": 15140}) == 10.0


def test_loss_avoid_and_lock_on_bw_are_transperfs_percentages():
    assert ex.loss_avoid_score(0.0125) == 98.75
    assert ex.lock_on_bw_score(11.0, 50.0, 4) == 88.0    # 100 * 11 / (50 / 4)


def test_fairness_averages_and_convergence_fairness_takes_the_worst_bucket_after_convergence_sec():
    b = [(1.0, [1.0, 1.0]), (2.0, [3.0, 1.0]), (3.0, [1.0, 1.0])]
    assert ex.fairness_score(b, 1.5) == 90.0              # (80 + 100) / 2: the bucket ending at 1 s is before it
    assert ex.fairness_score(b, 0.0) == pytest.approx(280 / 3, abs=1e-12)
    assert ex.convergence_fairness_score(b, 1.5) == 80.0
    assert ex.fairness_score(b, 4.0) is None and ex.convergence_fairness_score(b, 4.0) is None


def test_buckets_are_each_flows_delivered_bytes_per_whole_second():
    f = pd.DataFrame({"flow": [0, 0, 0, 0, 1, 1],
                      "t": [0.5, 1.0, 1.5, 2.0, 1.0, 2.0],
                      "delivered_bytes": [62_500, 125_000, 200_000, 250_000, 0, 375_000]})
    assert ex.buckets(f, 2.0) == [(1.0, [1.0, 0.0]), (2.0, [1.0, 3.0])]
    assert ex.buckets(f, 2.5) == ex.buckets(f, 2.0)       # only whole buckets within the run


def test_lock_on_bw_is_the_highest_delivery_rate_until_startup_ends():
    named = pd.DataFrame({"t": [0.1, 0.2, 0.3, 0.4], "state": ["STARTUP", "STARTUP", "DRAIN", "PROBE_BW"],
                          "pacing_rate_bps": [29e6, 58e6, 7e6, 20e6], "delivery_rate_bps": [10e6, 20e6, 15e6, 50e6]})
    assert ex.lock_on_bw_mbps(named) == 20.0
    # the kernel names no state: STARTUP ends where the pacing rate falls under half its highest (2.89x -> 0.35x)
    kernel = named.drop(columns="state").assign(delivery_rate_bps=[10e6, 20e6, 21e6, 50e6])
    assert ex.lock_on_bw_mbps(kernel) == 21.0
    assert ex.lock_on_bw_mbps(kernel.assign(pacing_rate_bps=[29e6, 30e6, 31e6, 32e6])) is None
    assert ex.lock_on_bw_mbps(named.assign(state="STARTUP")) is None


def test_the_bottleneck_is_the_policer_when_it_is_slower():
    s = {"links": {"down": {"rate_mbps": 50.0}}, "scenario": {"link": {"down": {"policer": {"rate": "10Mbit"}}}}}
    assert ex.bottleneck_mbps(s) == 10.0
    assert ex.bottleneck_mbps({"links": {"down": {"rate_mbps": 50.0}}, "scenario": {}}) == 50.0


@pytest.mark.parametrize("doc,key", [
    ([{"check": "goodput", "min": 80}], "expect.0.check"),
    ([{"check": "tput", "min": 120}], "expect.0.min"),
    ([{"check": "tput", "min": 80}, {"check": "tput", "min": "80"}], "expect.1.min"),
    ([{"check": "tput", "min": 80, "convergence_sec": 4}], "expect.0.convergence_sec"),
    ([{"check": "fairness", "min": 80, "convergence_sec": -1}], "expect.0.convergence_sec"),
    ([{"check": "tput", "min": 80, "max": 90}], "expect.0.max"),
    ({"check": "tput"}, "expect"),
])
def test_a_bad_expectation_is_an_error_naming_its_key(doc, key):
    with pytest.raises(ScenarioError) as e:
        ex.parse(doc)
    assert e.value.key == key


def test_convergence_sec_defaults_to_transperfs_4_s():
    assert ex.parse([{"check": "fairness", "min": 70}]) == [{"check": "fairness", "min": 70.0, "convergence_sec": 4.0}]


def test_transperfs_4bbr_sample_runs_with_its_thresholds_through_sweep(tmp_path, capsys):
    path = os.path.join(ROOT, "bench", "transperf", "4bbr3-50M-40ms-bdp.toml")
    out = str(tmp_path / "tp")
    status = cli(["sweep", path, "--out", out, "-q"])
    doc = json.load(open(os.path.join(out, "check.json")))
    claims = {c["id"]: c for c in doc["claims"]}
    assert set(claims) == {"expect.0.tput", "expect.1.rtt_med", "expect.2.lock_on_bw", "expect.3.loss_avoid",
                           "expect.4.fairness", "expect.5.convergence_fairness"}
    assert all(c["verdict"] in ("holds", "fails") for c in claims.values())
    assert status == (1 if any(c["verdict"] == "fails" for c in claims.values()) else 0)
    printed = capsys.readouterr().out
    assert "== check: transperf-4bbr3-50M-40ms-bdp ==" in printed
    # tput from the 1-s buckets is the delivered bytes over the 60 s against 50 Mbit/s: at most the payload's share
    import bloatlab

    st = bloatlab.load(out)
    res = st.result(st.runs["run_id"].iloc[0])
    delivered = res.flows.groupby("flow")["delivered_bytes"].max().sum()
    tput = claims["expect.0.tput"]["values"]["lowest"]
    assert tput == pytest.approx(100 * delivered * 8 / 60 / 50e6, rel=1e-9)
    assert 80 <= tput <= 100 * 1448 / 1500
    # rtt_med and loss_avoid per flow: the worst flow's score, between 0 and 100
    assert 0 < claims["expect.1.rtt_med"]["values"]["lowest"] <= 100
    assert 0 < claims["expect.3.loss_avoid"]["values"]["lowest"] <= 100


def test_a_missed_score_fails_the_sweep_and_a_bad_one_is_exit_2(tmp_path, capsys):
    exp = tmp_path / "e.toml"
    exp.write_text('name = "e"\n[scenario]\nduration = "3s"\n[scenario.link.down]\nrate = "10Mbit"\n'
                   '[scenario.link.up]\nrate = "10Mbit"\n[[scenario.flow]]\ncc = "cubic"\nrtt = "20ms"\n'
                   '[[expect]]\ncheck = "tput"\nmin = 99\n[[expect]]\ncheck = "loss_avoid"\nmin = 90\n')
    assert cli(["sweep", str(exp), "--out", str(tmp_path / "o"), "-q"]) == 1
    doc = json.load(open(tmp_path / "o" / "check.json"))
    assert [c["verdict"] for c in doc["claims"]] == ["fails", "not evaluated"]
    assert "BBR flows only" in doc["claims"][1]["reason"]
    exp.write_text(exp.read_text().replace('check = "tput"', 'check = "goodput"'))
    assert cli(["sweep", str(exp), "--out", str(tmp_path / "o2"), "-q"]) == 2
    assert "expect.0.check" in capsys.readouterr().err


def test_reproduce_check_adds_the_expectations_an_experiments_sweep_carries(tmp_path, monkeypatch, capsys):
    from bloatlab.study import experiments, spec

    class Tiny(experiments.Experiment):
        name = "tiny"

        def sweep(self, quick):
            doc = {"name": "tiny", "duration": "3s", "link": {"down": {"rate": "10Mbit"}, "up": {"rate": "10Mbit"}},
                   "flow": [{"cc": "bbr", "rtt": "20ms", "count": 2}]}
            return spec.Sweep("tiny", [spec.Part("main", doc)], expect=ex.parse([{"check": "loss_avoid", "min": 0}]))

    monkeypatch.setattr(experiments, "get", lambda name: Tiny())
    assert cli(["reproduce", "tiny", "--quick", "--check", "--out", str(tmp_path / "r"), "-q"]) == 0
    doc = json.load(open(tmp_path / "r" / "check.json"))
    assert [(c["id"], c["verdict"]) for c in doc["claims"]] == [("expect.0.loss_avoid", "holds")]
    assert "[HOLDS] expect.0.loss_avoid" in capsys.readouterr().out


def test_a_scenario_carries_expectations_that_run_judges_with_exit_status_1_on_a_miss(tmp_path, capsys):
    from bloatlab.cli import main

    f = tmp_path / "s.toml"
    f.write_text('duration = "6s"\n[link.down]\nrate = "20Mbit"\n[[flow]]\ncc = "bbr"\nrtt = "20ms"\ncount = 2\n'
                 '[[expect]]\ncheck = "tput"\nmin = 80\n[[expect]]\ncheck = "fairness"\nmin = 50\nconvergence_sec = 3\n')
    assert main(["run", str(f)]) == 0
    out = capsys.readouterr().out
    assert "expect tput >= 80:" in out and "holds" in out and "MISSES" not in out
    # a threshold no run reaches: the same run misses it, exit 1
    assert main(["run", str(f), "--set", "expect.0.min=100", "--json"]) == 1
    judged = json.loads(capsys.readouterr().out)["expect"]
    assert [(j["check"], j["holds"]) for j in judged] == [("tput", False), ("fairness", True)]
    assert 80 < judged[0]["score"] < 100
    # a bad table is the language's error, exit 2 naming the key
    assert main(["run", str(f), "--set", "expect.1.convergence_sec=-1"]) == 2
    assert "expect.1.convergence_sec" in capsys.readouterr().err


def test_a_sweep_judges_its_base_scenarios_expectations(tmp_path):
    (tmp_path / "s.toml").write_text('duration = "3s"\n[link.down]\nrate = "20Mbit"\n[[flow]]\nrtt = "20ms"\n'
                                     '[[expect]]\ncheck = "tput"\nmin = 50\n')
    (tmp_path / "exp.toml").write_text('name = "e"\nbase = "s.toml"\n[[expect]]\ncheck = "tput"\nmin = 50\n'
                                       '[[expect]]\ncheck = "loss_avoid"\nmin = 90\n')
    sw = spec.load(str(tmp_path / "exp.toml"))
    assert [(e["check"], e["min"]) for e in sw.expect] == [("tput", 50.0), ("loss_avoid", 90.0)]  # the repeat once
