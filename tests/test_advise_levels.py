"""A capacity that moved between the instants `measure` read it (issue 31 in `measure --quick`): where a packet
train's head read the down capacity below what the fill delivered, the fill's windows saw one level, and the
variation is read from the levels at every instant (`measure.capacity_levels`, `capacity.levels_variation`).
The figures are campaign seed 90 path 13's (an LTE-like FIFO, its trace 0.57 / 2.18 / 7.43 Mbit/s over 1-s
windows): the fill 2.40 / 2.56 / 2.90 over eleven 100-ms windows, both trains 1.167."""

import dataclasses
import json
import math

import pytest

from bloatlab.advise import capacity
from bloatlab.advise.evidence import _variation_fields
from bloatlab.advise.measure import capacity_levels
from bloatlab.advise.path import Path

FILL = {"p10_mbps": 2.40, "p50_mbps": 2.56, "p90_mbps": 2.90, "timescale_s": 0.2, "window_s": 0.1, "windows": 11,
        "busy_windows": 11, "series_mbps": [2.5] * 11, "srtt_ms": 47.8, "mean_mbps": 2.59, "acked_mbps": None,
        "phase": "cubic"}
Z90 = 1.2815515655446004


def test_the_levels_give_the_median_their_geometric_mean_and_the_spread_the_slow_part_beyond_the_windows():
    v = capacity.levels_variation(FILL, 2.58, 6.3, [(2.0, 1.167, "wifi_train"), (7.4, 1.167, "aqm_train")], 0.1)
    s_f2 = (math.log(2.90 / 2.40) / (2 * Z90)) ** 2  # the windows' own log spread: 0.0738 ** 2
    x2 = math.log(1.167 / 2.56) ** 2  # each train's log over the fill's: -0.786
    slow2 = (x2 - s_f2) / 2  # E[x^2] = 2 S^2 + s_f^2
    assert v["slow_sd"] == pytest.approx(math.sqrt(slow2)) and v["slow_sd"] == pytest.approx(0.5530, abs=1e-4)
    assert v["p50_mbps"] == pytest.approx((2.56 * 1.167 ** 2) ** (1 / 3)) and v["p50_mbps"] == pytest.approx(1.5163, abs=1e-4)
    sd = math.sqrt(s_f2 + slow2)
    assert v["p10_mbps"] == pytest.approx(v["p50_mbps"] * math.exp(-Z90 * sd))
    assert v["p90_mbps"] == pytest.approx(v["p50_mbps"] * math.exp(Z90 * sd))
    assert (round(v["p10_mbps"], 3), round(v["p90_mbps"], 3)) == (0.742, 3.1)  # the fill's alone: 2.40 / 2.90
    assert v["timescale_s"] == pytest.approx((4.3 + 1.1) / 2)  # the instants' mean distance from the fill's
    assert v["series_mbps"] is None and v["phase"] == "levels" and v["fill"] is FILL
    assert (v["window_s"], v["windows"], v["srtt_ms"]) == (0.1, 11, 47.8)
    assert [(lv["at_s"], lv["mbps"], lv["from"]) for lv in v["levels"]] == [
        (6.3, 2.56, "fill"), (2.0, 1.167, "wifi_train"), (7.4, 1.167, "aqm_train")]


def test_instants_within_the_windows_own_spread_add_no_slow_part_and_a_fill_without_windows_is_its_rate():
    fill = dict(FILL, p10_mbps=2.0, p50_mbps=2.5, p90_mbps=3.0)
    v = capacity.levels_variation(fill, 2.5, 5.0, [(2.0, 2.3, "wifi_train")], 0.1)
    # ln(2.3 / 2.5)^2 = 0.0070 below the windows' (ln 1.5 / 2.563)^2 = 0.0250: the instants agree
    assert v["slow_sd"] == 0.0
    sd = math.log(3.0 / 2.0) / (2 * Z90)
    assert v["p90_mbps"] / v["p10_mbps"] == pytest.approx(math.exp(2 * Z90 * sd))  # the windows' own p90 / p10
    v = capacity.levels_variation(None, 18.6, 4.0, [(2.0, 16.0, "wifi_train"), (8.0, 16.0, "aqm_train")], 0.1)
    assert v["levels"][0]["mbps"] == 18.6 and v["window_s"] == 0.1 and v["windows"] is None
    assert v["slow_sd"] == pytest.approx(abs(math.log(16.0 / 18.6)) / math.sqrt(2))
    assert v["timescale_s"] == pytest.approx(3.0)


def _down(**kw) -> dict:
    x = {"limiter": "fifo", "rate_mbps": 2.58, "rate_variation": dict(FILL), "phases_s": {"fill": 3.3},
         "load_timing_s": {"fill": {"from_s": 0.25, "to_s": 2.644}},
         "wifi_train": {"leading_mbps": 1.167, "sender_limited": False},
         "aqm_train": {"leading_mbps": 1.167, "sender_limited": False}}
    x.update(kw)
    return x


MARKS = {"wifi_train": 2.05, "down": 4.13, "after_fill": 7.5}


def test_a_train_below_the_fill_reads_the_capacity_from_its_levels_at_every_instant():
    x = _down()
    capacity_levels(x, MARKS)
    v = x["rate_variation"]
    assert v["phase"] == "levels" and v["fill"] == FILL
    # the fill's windows: the middle of the second half of the time its flows ran, from the phase's start
    assert [lv["at_s"] for lv in v["levels"]] == [pytest.approx(4.13 + 0.25 + 0.75 * 2.394), 2.05, 7.5]
    report = {"down": x}
    p = Path(base_rtt_ms=4.0, down_mbps=2.58, buffer_bytes=11_226, **_variation_fields(report))
    assert x["variable"] and p.down_variable and p.down_rate_p10_mbps == v["p10_mbps"]
    # the twin follows the log-normal through the figures (no windows to fit a process to)
    assert capacity.fit(v) is None
    rates = p.down_realizations(1)[0][1]
    assert len(rates) > 0 and min(rates) > 0


@pytest.mark.parametrize("change, why", [
    ({"wifi_train": {"leading_mbps": 1.167, "sender_limited": True},
      "aqm_train": {"leading_mbps": 1.167, "sender_limited": True}}, "the senders set the heads' pace"),
    ({"wifi_train": {"leading_mbps": 5.0}, "aqm_train": {"leading_mbps": 4.0}}, "heads above the fill: a bucket's port too"),
    ({"wifi_train": {"leading_mbps": 2.4}, "aqm_train": None}, "within the train's 10 %: 2.58 / 2.4 = 1.075"),
    ({"limiter": "policer"}, "a policer's trains read its port"),
    ({"wifi": {"mac": "fq"}}, "a WiFi hop's trains read its aggregates"),
])
def test_no_level_reading_where_no_train_read_the_capacity_below_the_fill(change, why):
    x = _down(**change)
    before = x["rate_variation"]
    capacity_levels(x, MARKS)
    assert x["rate_variation"] is before, why


def test_a_levels_twin_gives_back_what_measure_read(tmp_path):
    """The figures and every instant's reading travel beside the twin's trace and come back exactly."""
    x = _down()
    capacity_levels(x, MARKS)
    p = Path(base_rtt_ms=4.0, down_mbps=2.58, buffer_bytes=11_226, **_variation_fields({"down": x}))
    p.write_twin(str(tmp_path / "twin.toml"))
    side = json.loads((tmp_path / "twin-down.trace.json").read_text())
    assert side["down_rate_variation"]["levels"] == x["rate_variation"]["levels"]
    q = Path.from_twin(str(tmp_path / "twin.toml"))
    assert {f.name: getattr(q, f.name) for f in dataclasses.fields(Path)} == {f.name: getattr(p, f.name) for f in dataclasses.fields(Path)}
