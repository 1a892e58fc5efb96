"""The run summary says what ran (issue 15 §4): every stage of a direction, in
order, and fairness within a direction, never across both."""

import pytest

import bloatlab
from bloatlab.summary import jain

from conftest import run_cli

MIXED = {
    "name": "mixed", "duration": "10s", "seed": 3,
    "link": {"down": {"rate": "20Mbit"}, "up": {"rate": "2Mbit"}},
    "flow": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "cubic", "rtt": "20ms", "direction": "up"}],
}


def test_fairness_is_per_direction_and_jain_fairness_is_the_download_flows():
    # one download on 20 Mbit/s, one upload on 2 Mbit/s: each has its link to itself (fair), yet an
    # index across both directions would read (18+1.9)^2 / (2 (18^2+1.9^2)) ~ 0.6
    s = bloatlab.run(MIXED).summary
    g = {d: [f["goodput_mbps"] for f in s["flows"] if f["direction"] == d] for d in ("down", "up")}
    assert len(g["down"]) == 1 and len(g["up"]) == 1
    assert jain(g["down"] + g["up"]) < 0.7
    by = s["jain_fairness_by_direction"]
    assert by == {"down": 1.0, "up": 1.0} and s["jain_fairness"] == 1.0
    two = bloatlab.run({**MIXED, "flow": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "reno", "rtt": "80ms"},
                                          {"cc": "cubic", "rtt": "20ms", "direction": "up"}]}).summary
    down = [f["goodput_mbps"] for f in two["flows"] if f["direction"] == "down"]
    assert two["jain_fairness"] == pytest.approx(jain(down)) and two["jain_fairness_by_direction"]["up"] == 1.0
    up_only = bloatlab.run({**MIXED, "flow": MIXED["flow"][1:]}).summary
    assert up_only["jain_fairness"] == up_only["jain_fairness_by_direction"]["up"] == 1.0
    assert up_only["jain_fairness_by_direction"]["down"] is None


def test_the_summary_names_every_stage_in_order(tmp_path):
    f = tmp_path / "stages.toml"
    f.write_text('''name = "stages"
duration = "2s"
[link.down]
rate = "20Mbit"
loss = "1%"
buffer = "50KB"
policer = { rate = "15Mbit", burst = "20KB" }
shaper = { rate = "10Mbit" }
device_queue = "2pkt"
[[flow]]
cc = "cubic"
rtt = "20ms"
''')
    s = bloatlab.run(str(f)).summary
    assert s["links"]["down"]["stages"] == ["loss 1%", "policer 15 Mbit/s (burst 20 KB)", "fifo 50 KB",
                                            "shaper 10 Mbit/s (burst 12.5 KB)", "device queue 2 pkt", "wire 20 Mbit/s"]
    r = run_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    assert "loss 1% -> policer 15 Mbit/s (burst 20 KB) -> fifo 50 KB -> shaper 10 Mbit/s (burst 12.5 KB) -> device queue 2 pkt -> wire 20 Mbit/s" in r.stdout
    assert "jain fairness down" in r.stdout
