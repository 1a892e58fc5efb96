"""`bloatlab advise` / `measure` / `host` (docs/advise.md).

Layer 2: the recommendation on paths whose answer is physics, and equal to
the best of the full candidate sweep; layer 3: `measure` against emulated
paths of known truth (root only; the issue's accuracy targets)."""

import dataclasses
import json
import os
import subprocess
import tempfile

import numpy as np
import pytest

from bloatlab import scenario
from bloatlab.advise import recommend
from bloatlab.advise.physics import _significant, burst_floor_ms, mathis_loss, serialization_ms
from bloatlab.advise.evidence import MIN_RAMP_PROBES, _evidence, _window
from bloatlab.advise.classify import ambiguity, classify
from bloatlab.advise.path import Path, grade

from conftest import ROOT, on_kept_timing, run_cli

ALL = ["reno", "cubic", "bbr", "bbr3"]


def test_grades_follow_the_dslreports_scale():
    assert [grade(x) for x in (0, 4.9, 5, 29, 59, 199, 399, 400)] == ["A+", "A+", "A", "A", "B", "C", "D", "F"]


@pytest.mark.parametrize("probe_q95, flow_q50, flow_q95, dropped, rate, loss, rtt, kind", [
    # figures measured through emulated paths, 4 CUBIC flows, 40 ms, two runs each (2026-11-23, docs/advise.md);
    # the rule's floor is derived (burst_floor_ms): 7.8 ms at 20 Mbit/s, 12.7 at 10, 5.0 from 50 Mbit/s up
    (0.20, 1.13, 2.90, True, 19.1, 0.018, 31, "policer"),   # 20 Mbit/s policer on a 100 Mbit/s port, down
    (0.18, 1.90, 4.31, True, 19.1, 0.024, 32, "policer"),   # ... the second run
    (0.18, 3.12, 6.34, True, 19.1, 0.031, 33, "policer"),   # ... up: the flows wait behind their own TSO bursts at the port;
    (0.23, 1.24, 3.84, True, 19.1, 0.026, 31, "policer"),   #     their p95 passed 6 ms in one run of two
    (0.49, 1.68, 7.19, True, 49.5, 0.001, 42, "aqm"),       # fq_codel at 50 Mbit/s: the probe is isolated
    (0.55, 3.17, 8.10, True, 49.5, 0.001, 43, "aqm"),
    (2.84, 10.31, 17.89, True, 9.9, 0.017, 50, "aqm"),      # fq_codel at 10 Mbit/s: drops, probes below 3 ms,
    (3.02, 10.51, 18.38, True, 9.9, 0.017, 50, "aqm"),      #     but the flows queue
    (8.88, 5.13, 7.93, True, 99.0, 0.006, 45, "fifo"),      # a 0.2-BDP FIFO at 100 Mbit/s: the probe waits as the flows do
    (7.80, 5.32, 8.56, True, 19.8, 0.010, 45, "fifo"),      # ... at 20 Mbit/s with 1 % retransmitted: the queue says FIFO
    (47.39, 20.13, 34.92, True, 198.0, 0.004, 60, "fifo"),  # a 1-BDP FIFO at 200 Mbit/s; the probes' p95 carries the VM's pauses
    (0.2, 0.3, 0.5, False, 500.0, 0.0, 20, "fifo"),         # no queue, no drops: nothing limits here (measure warns: not saturated)
    # the campaign's development seed (seed 1, 2026-11-25), where the first derived rule failed; the rule was then
    # judged on later seeds (BENCHMARKS.md, "The advisor's campaign")
    (0.06, 0.34, 7.68, True, 430.0, 0.019, 312, "policer"), # a 431 Mbit/s policer (2.7-ms bucket) at 312 ms: slow start's
                                                             #     bursts at the port lift the flows' p95, not their median;
                                                             #     they lose 10^4 x what a signalling queue drops
    (6.61, 6.85, 7.39, True, 0.57, 0.56, 12, "policer"),    # a 0.57 Mbit/s policer on a 1.5 Mbit/s port, 5 ms
])
def test_the_limiter_classification_on_measured_figures(probe_q95, flow_q50, flow_q95, dropped, rate, loss, rtt, kind):
    assert classify(probe_q95, flow_q50, flow_q95, dropped, rate, 4, loss, rtt) == kind


def test_the_loss_a_signalling_queue_gives_is_mathis_rate():
    # 4 flows sharing 20 Mbit/s over 40 ms: W = 5e6 x 0.04 / (1448 x 8) = 17.3 segments, p = 1.5 / W^2 = 0.5 %
    assert mathis_loss(20, 4, 40) == pytest.approx(1.5 / (5e6 * 0.04 / (1448 * 8)) ** 2)
    assert mathis_loss(0.001, 4, 1) == 1.0  # below one segment per RTT: every window loses


def test_the_idle_probes_serialization_leaves_the_base_rtt():
    # 92-byte probes and 1428-byte ones at 1.05 Mbit/s down and 0.336 up: the slope is 8/1.05e3 + 8/0.336e3 ms a
    # byte, the small probes carry 0.70 + 2.19 ms of it (the campaign's path read +2.77 ms)
    k = 8 / 1.05e3 + 8 / 0.336e3
    assert serialization_ms(20.0 + 92 * k, 20.0 + 1428 * k) == pytest.approx(92 * k)
    assert serialization_ms(20.0, 19.9) == 0.0  # a large probe faster than a small one: noise, nothing taken


def test_a_serialization_beyond_the_rates_the_path_carried_goes_back_into_the_base_rtt():
    from bloatlab.advise.measure import serialization_capped
    from bloatlab.advise.physics import serialization_at_ms

    # 92 B each way at 20 Mbit/s: 2 x 736 bits / 20e6 = 0.0736 ms
    assert serialization_at_ms(20.0, 20.0) == pytest.approx(0.0736)

    def report(ser, down=15.101, up=11.738, **kw):
        return {"base_rtt_ms": {"min": 76.530 - ser, "p50": 160.0 - ser, "serialization_ms": ser},
                "down": {"rate_mbps": down, **kw}, "up": {"rate_mbps": up} if up else None}

    # campaign seed 182 path 6 (a legacy AP beside a busy station, 76.11 ms): the small probes' least 76.53 ms, the
    # large ones' 160.31, a slope of 5.77 ms for the small probe where 15.1 / 11.7 Mbit/s allow 0.111
    r = report(5.769)
    serialization_capped(r)
    cap = 0.736 * (1 / 15.101 + 1 / 11.738)
    assert r["base_rtt_ms"] == pytest.approx({"min": 76.530 - cap, "p50": 160.0 - cap, "serialization_ms": cap,
                                              "serialization_read_ms": 5.769})
    # within the rates: as read (a 1-Mbit/s line each way allows 1.47 ms)
    r = report(1.2, down=1.0, up=1.0)
    serialization_capped(r)
    assert r["base_rtt_ms"] == {"min": 75.33, "p50": 158.8, "serialization_ms": 1.2}
    # no up direction read, or a capacity that moved: its port unbounded, as read
    for r in (report(5.769, up=None), report(5.769, variable=True)):
        serialization_capped(r)
        assert r["base_rtt_ms"]["serialization_ms"] == 5.769 and "serialization_read_ms" not in r["base_rtt_ms"]


def test_the_burst_floor_scales_with_the_rate_and_the_flows():
    """The floor is the flows' bursts at the measured rate plus the noise: a
    slow port queues one segment for 12 ms (1 Mbit/s), so a policer there
    shows queueing a fixed 6-ms rule read as a queue (issue 30)."""
    assert burst_floor_ms(20, 4) == pytest.approx(3 + 4 * 2 * 1500 * 8 / 20e6 * 1e3)
    assert burst_floor_ms(1, 4) == pytest.approx(3 + 96)
    assert burst_floor_ms(1000, 4) == pytest.approx(5.0)
    assert burst_floor_ms(1, 1) == pytest.approx(27.0)
    # a 1 Mbit/s policer whose 4 flows' bursts queue 40 ms at a 2 Mbit/s port: no standing queue at 1 Mbit/s
    assert classify(35.0, 20.0, 60.0, True, 1.0) == "policer"
    # the floor with its noise: the rule reads a policer while the flows stay below all of it (99 ms x 1 Mbit/s)
    assert ambiguity("policer", 1.0, 4).startswith("drops without a queue: a policer, or a FIFO shallower than ~12.4 KB")
    assert ambiguity("fifo", 1.0, 4) is None


def _phase(rate_sample_bps, acked_bps, srtt_ms, secs=10.0):
    t = [i * 0.01 for i in range(int(secs / 0.01))]
    fl = {"flow": [1] * len(t), "t": t, "delivery_rate_bps": [rate_sample_bps] * len(t), "srtt_ms": [srtt_ms] * len(t),
          "delivered_bytes": [x * acked_bps / 8 for x in t]}
    return {"flows": [{"id": 1, "direction": "down"}],
            "raw": {"series": {"flows": fl, "probes": {"t": t, "rtt_ms": [srtt_ms] * len(t)}}}}


def test_the_rate_comes_from_the_acked_bytes_where_the_window_spans_twenty_round_trips():
    """Behind a policer with a deep bucket the per-ACK samples over-read (they
    are taken while the bucket drains at the port's rate); the acked bytes
    over a window of many round trips do not. Over few round trips the
    cumulative ACK's jumps make the samples' median the better reading."""
    wire = 1500 / 1448
    probes = 92 * 8 * 100 / 1e6  # the probes every 10 ms, all answered: 0.0736 Mbit/s the link carried beside
    w = _window(_phase(20e6, 15e6, 5.0), "down")  # 5 s window, 5 ms: 1000 round trips
    assert w["rate_from"] == "acked_bytes" and w["rate_mbps"] == pytest.approx(15 * wire + probes, rel=1e-4)
    assert w["probes_mbps"] == pytest.approx(probes, rel=1e-2)
    w = _window(_phase(20e6, 15e6, 400.0), "down")  # 400 ms of 5 s: 12 round trips
    assert w["rate_from"] == "delivery_rate" and w["rate_mbps"] == pytest.approx(20 * wire + probes, rel=1e-4)


def test_bbrs_flows_over_few_round_trips_are_read_by_their_median_round_trip():
    """A BBR window too short for the acked bytes (400-ms round trips, a 5-s window: 12.5 of them): the median
    over its round trips of what the flows delivered in each (the counter in any order), not the delivery-rate
    samples' median — a sample never reads more than its flow sent — nor the window's mean, which counts the round
    trips a recovery left nearly idle. The link at 20 Mbit/s, the flows stalled 6.0-6.8 s: the round trips that
    hold the stall are fewer than half, so the median is the link's."""
    from bloatlab.advise.evidence import round_trip_rate_bps

    wire = 1500 / 1448
    probes = 92 * 8 * 100 / 1e6
    j = _phase(15e6, 20e6, 400.0)
    fl = j["raw"]["series"]["flows"]
    t = np.asarray(fl["t"])
    fl["sack_delivered_bytes"] = list((t - np.clip(t - 6.0, 0.0, 0.8)) * 20e6 / 8)
    fid, ids = np.ones(t.size, int), [1]
    assert round_trip_rate_bps(fl, fid, t, ids, 4.995, 9.99, 0.4) == pytest.approx(20e6, rel=1e-9)
    # the window's mean counts the stall: 0.8 s of 5 without delivery
    got = (fl["sack_delivered_bytes"][-1] - np.interp(4.995, t, fl["sack_delivered_bytes"])) * 8 / (9.99 - 4.995)
    assert got == pytest.approx(20e6 * (1 - 0.8 / 4.995), rel=1e-6)
    # fewer than three round trips, no RTT, or only the cumulative ACK (its jumps as a hole fills): none
    assert round_trip_rate_bps(fl, fid, t, ids, 4.995, 5.9, 0.4) is None
    assert round_trip_rate_bps(fl, fid, t, ids, 4.995, 9.99, float("nan")) is None
    assert round_trip_rate_bps({k: v for k, v in fl.items() if k != "sack_delivered_bytes"}, fid, t, ids, 4.995,
                               9.99, 0.4) is None
    # in _window: BBR's flows read 20 Mbit/s; CUBIC's the samples' median (15) as before
    w = _window(dict(j, flows=[{"id": 1, "direction": "down", "cc": "bbr"}]), "down")
    assert w["rate_from"] == "round_trips" and w["rate_mbps"] == pytest.approx(20 * wire + probes, rel=1e-3)
    w = _window(dict(j, flows=[{"id": 1, "direction": "down", "cc": "cubic"}]), "down")
    assert w["rate_from"] == "delivery_rate" and w["rate_mbps"] == pytest.approx(15 * wire + probes, rel=1e-3)


def test_the_ramp_is_the_probes_from_the_flows_first_sample_to_the_window():
    """The probes before the window, from the flows' first sample on: the queue the slow start built, which a sparse
    probe waits behind in one queue (isolation.isolation_by_model). A flow's series from 1 s to 10 s, the probes
    from 0 s every 10 ms: the window from 5.495 s (half of 1-9.99 s); the ramp 1.0-5.49 s, 450 probes, whose RTTs
    here are their send times in ms."""
    j = _phase(20e6, 15e6, 5.0)
    fl, ps = j["raw"]["series"]["flows"], j["raw"]["series"]["probes"]
    keep = [i for i, t in enumerate(fl["t"]) if t >= 1.0]
    j["raw"]["series"]["flows"] = {k: [v[i] for i in keep] for k, v in fl.items()}
    ps["rtt_ms"] = [t * 1e3 for t in ps["t"]]
    ps["rtt_ms"][150] = float("nan")  # one lost in the ramp: not counted
    w = _window(j, "down")
    assert w["probe_window_s"][0] == pytest.approx(5.495)
    assert w["ramp_probes"].size == 449 and w["ramp_probes"].min() == pytest.approx(1000.0)
    assert w["ramp_probes"].max() == pytest.approx(5490.0)
    ev = _evidence(j, w, "down", 5.0, 0.0)
    assert ev["probe_ramp_rtt"] == {"p50": pytest.approx(np.percentile(w["ramp_probes"], 50)),
                                    "p95": pytest.approx(np.percentile(w["ramp_probes"], 95))}
    # fewer than MIN_RAMP_PROBES answered there: no ramp figures
    w["ramp_probes"] = w["ramp_probes"][:MIN_RAMP_PROBES - 1]
    assert _evidence(j, w, "down", 5.0, 0.0)["probe_ramp_rtt"] is None


def test_the_rate_counts_sacked_segments_as_they_come_not_as_the_hole_before_them_fills():
    """A window that begins inside a SACK recovery: the cumulative ACK stood at a hole while 2 MB above it were
    SACKed, and leaps by them when the retransmission lands 0.2 s into the window. Over the window the cumulative
    ACK covers the link's 15 Mbit/s plus those 2 MB; the segments counted as they were delivered (Linux's
    ``tcpi_delivered``, ``sack_delivered_bytes``) cover the link's rate alone. A series without that column (an
    older probe's) is read from the cumulative ACK as before."""
    wire = 1500 / 1448
    probes = 92 * 8 * 100 / 1e6
    j = _phase(20e6, 15e6, 5.0)
    fl = j["raw"]["series"]["flows"]
    t = np.asarray(fl["t"])
    delivered = t * 15e6 / 8
    hole = 2_000_000
    fl["sack_delivered_bytes"] = list(delivered)
    fl["delivered_bytes"] = list(np.where(t < 5.2, np.maximum(delivered - hole, 0), delivered))
    w = _window(j, "down")  # the window: 4.995-9.99 s
    assert w["rate_from"] == "sack_delivered_bytes" and w["rate_mbps"] == pytest.approx(15 * wire + probes, rel=1e-4)
    del fl["sack_delivered_bytes"]
    w = _window(j, "down")
    assert w["rate_from"] == "acked_bytes"
    span = t[-1] / 2  # the window: the second half of the samples, 4.995 s
    assert w["rate_mbps"] == pytest.approx((15 + hole * 8 / span / 1e6) * wire + probes, rel=1e-4)  # 18.2 Mbit/s
    fl["sack_delivered_bytes"] = [float("nan")] * t.size  # an import's column of unknowns: the cumulative ACK
    assert _window(j, "down")["rate_from"] == "acked_bytes"


def test_the_probes_bytes_count_where_they_were_answered():
    """The load probes share the bottleneck with the flows (92 B each way every 10 ms): each span's rate is its
    answered probes' bytes; a probe the bottleneck dropped (no RTT) took none of its time."""
    from bloatlab.advise.evidence import probes_bps

    t = [0.005 + i * 0.01 for i in range(100)]  # one second of probes
    rtt = [20.0 if i < 50 or i % 2 else float("nan") for i in range(100)]  # the second half: every other lost
    j = {"raw": {"series": {"probes": {"t": t, "rtt_ms": rtt}}}}
    got = probes_bps(j, np.array([0.0, 0.5, 1.0]))
    assert list(got) == [50 * 92 * 8 / 0.5, 25 * 92 * 8 / 0.5]
    assert list(probes_bps({"raw": {"series": {}}}, np.array([0.0, 1.0]))) == [0.0]  # no probes (UDP blocked)


def test_a_flow_whose_delivery_stood_still_past_its_rto_reads_no_rate():
    """tcpi_delivery_rate keeps a flow's last rate sample while it waits in
    retransmission timeouts; past its srtt + 200 ms (Linux's TCP_RTO_MIN)
    with neither its cumulative ACK nor its sample moving, the flow counts 0.
    A flow in SACK recovery (cumulative ACK still, samples moving) counts."""
    from bloatlab.advise.evidence import RTO_MIN_S, flow_rates

    t = np.arange(0.0, 2.0, 0.01)
    at = np.array([0.5, 0.5 + 0.05 + RTO_MIN_S - 0.02, 0.5 + 0.05 + RTO_MIN_S + 0.02, 1.9])
    acked = np.where(t < 0.5, t * 1e6 / 8, 0.5 * 1e6 / 8)  # delivers 1 Mbit/s, then nothing from 0.5 s
    fs = {"delivery_rate_bps": [1e6] * t.size, "delivered_bytes": list(acked), "srtt_ms": [50.0] * t.size}
    fid = np.ones(t.size, int)
    assert list(flow_rates(fs, fid, t, 1, at)) == [1e6, 1e6, 0.0, 0.0]
    # its rate samples moving (SACKed data delivered while a hole holds the cumulative ACK): counted throughout
    fs["delivery_rate_bps"] = [1e6 + (i % 2) for i in range(t.size)]
    assert all(flow_rates(fs, fid, t, 1, at) >= 1e6)
    # an older probe's JSON without delivered_bytes: the samples as they are
    del fs["delivered_bytes"]
    fs["delivery_rate_bps"] = [1e6] * t.size
    assert list(flow_rates(fs, fid, t, 1, at)) == [1e6] * 4


def test_a_phase_without_samples_says_what_ended_it():
    # the server gone mid-phase: bloatlab-probe printed what it had and exited 1 (measure._probe's partial result)
    j = {"flows": [{"id": 1, "direction": "down"}], "raw": {"series": {"flows": {}, "probes": {"t": [], "rtt_ms": []}}}}
    from bloatlab.errors import UserError

    with pytest.raises(UserError, match=r"no TCP_INFO samples \(a server of another version\?\)"):
        _window(j, "down")
    with pytest.raises(UserError, match="no TCP_INFO samples before the phase ended with: connection reset by peer"):
        _window(dict(j, problem="connection reset by peer"), "down")


def _timed_phase(rate_bps, flow_rtt_ms, probe_rtt_ms, secs, setup_s, grace_s, flows=4, retx=0, segs=1):
    """One loaded phase as ``bloatlab-probe load`` times it: the probes every 10 ms from the phase's start
    for ``secs`` (their RTT ``probe_rtt_ms``, or a function of their send time), each flow's samples from
    ``setup_s`` on for ``secs`` and its ack grace ``grace_s``."""
    ft = [setup_s + k * 0.01 for k in range(round((secs + grace_s) / 0.01) + 1)]
    fl = {"flow": [], "t": [], "delivery_rate_bps": [], "srtt_ms": [], "delivered_bytes": []}
    for f in range(1, flows + 1):
        fl["flow"] += [f] * len(ft)
        fl["t"] += ft
        fl["delivery_rate_bps"] += [rate_bps / flows] * len(ft)
        fl["srtt_ms"] += [flow_rtt_ms] * len(ft)
        fl["delivered_bytes"] += [(x - setup_s) * rate_bps / flows / 8 for x in ft]
    pt = [i * 0.01 for i in range(round(secs / 0.01))]
    rtt = [probe_rtt_ms(x) if callable(probe_rtt_ms) else probe_rtt_ms for x in pt]
    return {"flows": [{"id": f, "direction": "down", "retransmits": retx / flows, "retrans_rate": retx / segs}
                      for f in range(1, flows + 1)],
            "raw": {"series": {"flows": fl, "probes": {"t": pt, "rtt_ms": rtt}}}}


def test_the_probes_are_read_over_the_second_half_of_the_time_they_ran_with_the_flows():
    """The probes run the phase's length from its start; the flows start
    SETUP_ROUNDS round trips later and run as long, then up to their 2-s ack
    grace. At 4 s with a 1.205-s setup the flows' second half (4.205-7.205 s)
    begins after the last probe (3.99 s): the probes are read over the second
    half of 1.205-3.99 s, the 140 sent at 2.60-3.99 s. The rate keeps the
    flows' own window."""
    j = _timed_phase(7e6, 341.0, lambda x: 340.0 + 1000 * x, secs=4.0, setup_s=1.205, grace_s=2.0)
    w = _window(j, "down")
    assert w["probes"].size == 140
    assert w["probes"].min() == pytest.approx(340 + 2600) and w["probes"].max() == pytest.approx(340 + 3990)
    assert w["rate_mbps"] == pytest.approx(7 * 1500 / 1448, rel=1e-9)
    # probes that outlast the flows (a phase that ends once saturated stops its flows with it): the flows'
    # window, 3.005-5.005 s, as before
    j = _timed_phase(7e6, 341.0, lambda x: 340.0 + 1000 * x, secs=6.0, setup_s=1.005, grace_s=0.0)
    for k in ("flow", "t", "delivery_rate_bps", "srtt_ms", "delivered_bytes"):
        j["raw"]["series"]["flows"][k] = [v for v, x in zip(j["raw"]["series"]["flows"][k], j["raw"]["series"]["flows"]["t"]) if x <= 5.0051]
    w = _window(j, "down")
    assert w["probes"].size == 200 and w["probes"].min() == pytest.approx(340 + 3010) and w["probes"].max() == pytest.approx(340 + 5000)
    # no probe answered once the flows ran (UDP blocked under load): none, not the idle ones before
    j = _timed_phase(7e6, 341.0, 340.0, secs=4.0, setup_s=1.205, grace_s=2.0)
    j["raw"]["series"]["probes"] = {"t": [i * 0.01 for i in range(100)], "rtt_ms": [340.0] * 100}
    assert _window(j, "down")["probes"].size == 0


def test_drops_beyond_random_loss_are_told_at_three_sigma():
    assert not _significant(3, 10_000, 0.0)
    assert _significant(4, 10_000, 0.0)
    # 1 % random loss over 10 000 segments: 100 expected, sigma ~9.9
    assert not _significant(130, 10_000, 0.01)
    assert _significant(135, 10_000, 0.01)


def test_without_sch_fq_the_advice_leaves_the_qdisc_alone_and_says_why():
    p = Path(base_rtt_ms=40, down_mbps=20, buffer_bytes=int(20e6 * 0.040 / 8))
    out = recommend.advise(p, "balanced", current="cubic", available=ALL, queues=("as-is",),
                           host_qdisc_state=("pfifo_fast", False))
    rec = out["recommendation"]
    assert "net.core.default_qdisc" not in rec["sysctl"] and rec["sysctl"]["net.ipv4.tcp_congestion_control"] == rec["cc"]
    assert rec["qdisc"] == "pfifo_fast" and any("no sch_fq" in r for r in out["reasons"])
    out = recommend.advise(p, "balanced", current="cubic", available=ALL, queues=("as-is",),
                           host_qdisc_state=("pfifo_fast", True))
    assert out["recommendation"]["sysctl"]["net.core.default_qdisc"] == "fq" and out["recommendation"]["qdisc"] == "fq"


def test_a_policed_twin_sits_on_a_faster_port_and_the_shaped_candidates_leave_the_policer_out():
    p = Path(base_rtt_ms=40, down_mbps=20, buffer_bytes=3000, limiter="policer")
    d = p.link_doc()
    assert d["rate"] == "200Mbit" and d["policer"] == {"rate": "20Mbit"}
    s = p.link_doc(19.0, "cake")
    # CAKE shapes with its own deficit shaper (tc-cake bandwidth), no token bucket to burst from
    assert "policer" not in s and "shaper" not in s and s["qdisc"] == "cake" and s["rate"] == "200Mbit"
    assert s["qdisc_params"] == {"bandwidth": "19Mbit"}
    # fq_codel behind an HTB-like bucket of 1 ms of its rate (sqm-scripts' SHAPER_BURST_DUR_US), one MTU at least
    f = p.link_doc(19.0, "fq_codel")
    assert "policer" not in f and f["shaper"] == {"rate": "19Mbit", "burst": "2375B"} and f["qdisc"] == "fq_codel"
    assert Path(base_rtt_ms=40, down_mbps=2, limiter="policer").link_doc(1.9, "fq_codel")["shaper"]["burst"] == "1514B"
    # an AQM's limit is not measurable: the twin takes fq_codel's own (10240 packets)
    assert Path(base_rtt_ms=40, down_mbps=20, limiter="aqm").link_doc()["buffer"] == "10240pkt"


def test_a_shaped_recommendation_says_how_to_set_it_up_as_modelled():
    """recommendation.router: OpenWrt SQM's script and rate, and the tc lines of the queue the twin ran (CAKE's own
    shaper; fq_codel behind HTB with a 1-ms burst); None for a pick that shapes nothing."""
    cake = recommend.router_advice(recommend.Candidate("cubic", "cake", 19.0))
    assert cake["rate_kbit"] == 19000 and cake["tc"] == ["tc qdisc replace dev DEV root cake bandwidth 19000kbit"]
    assert "piece_of_cake.qos" in cake["how"]
    fq = recommend.router_advice(recommend.Candidate("cubic", "fq_codel", 95.0))
    assert fq["tc"][1] == "tc class add dev DEV parent 1: classid 1:1 htb rate 95000kbit burst 11875b cburst 11875b"
    assert fq["tc"][2].endswith("fq_codel") and "simple.qos" in fq["how"]
    assert recommend.router_advice(recommend.Candidate("cubic", "as-is", None)) is None
    out = recommend.advise(Path(base_rtt_ms=20, down_mbps=20, buffer_bytes=int(10 * 20e6 * 0.020 / 8)), "latency",
                           current="cubic", available=ALL)
    assert out["recommendation"]["router"]["queue"] == out["recommendation"]["qdisc"]


def test_random_loss_on_a_long_path_recommends_the_bbr_family():
    # 1 % random loss at 100 ms: Mathis bounds CUBIC/Reno near 1.4 Mbit/s; BBR keeps most of the link
    out = recommend.advise(Path(base_rtt_ms=100, down_mbps=100, loss=0.01), "throughput", current="cubic", available=ALL)
    rec = out["recommendation"]
    assert rec["cc"] in ("bbr", "bbr3"), out["alternatives"][:3]
    assert out["expected"]["goodput_mbps"] > 10 * out["current"]["goodput_mbps"]
    assert any("random loss" in r for r in out["reasons"])


def test_a_bloated_fifo_with_a_latency_goal_recommends_an_aqm_shaped_below_the_rate():
    p = Path(base_rtt_ms=20, down_mbps=20, buffer_bytes=int(10 * 20e6 * 0.020 / 8))  # 10 BDP
    out = recommend.advise(p, "latency", current="cubic", available=ALL)
    assert out["recommendation"]["qdisc"] in ("fq_codel", "cake")
    assert out["recommendation"]["shaper_mbps"] == pytest.approx(19.0)
    assert out["current"]["p95_rtt_ms"] > 150  # the 10-BDP FIFO fills: ~200 ms of queue
    assert out["expected"]["p95_rtt_ms"] < 30


def test_the_fair_goal_on_a_shallow_clean_path_does_not_pick_bbr_v1():
    # seed 001: BBRv1 starves CUBIC in shallow buffers
    p = Path(base_rtt_ms=40, down_mbps=50, buffer_bytes=int(0.3 * 50e6 * 0.040 / 8))
    out = recommend.advise(p, "fair", current="cubic", available=ALL, queues=("as-is",))
    assert out["recommendation"]["cc"] != "bbr", out["alternatives"][:4]


def test_the_recommendation_is_the_best_score_of_the_full_sweep_and_json_has_the_contract_keys():
    p = Path(base_rtt_ms=50, down_mbps=30, buffer_bytes=int(0.5 * 30e6 * 0.05 / 8), loss=0.002)
    out = recommend.advise(p, "balanced", current="cubic", available=ALL)
    best = max(out["alternatives"], key=lambda a: a["score"])
    assert (best["cc"], best["queue"]) == (out["expected"]["cc"], out["expected"]["queue"])
    assert set(out) >= {"path", "recommendation", "expected", "current", "alternatives", "reasons"}
    assert set(out["recommendation"]) >= {"cc", "qdisc", "shaper_mbps", "sysctl"}
    for k in ("goodput_mbps", "p95_rtt_ms", "retrans_rate"):
        assert isinstance(out["expected"][k], float) and isinstance(out["current"][k], float)
    assert len(out["alternatives"]) == 12


def test_advise_cli_json_and_bad_input(tmp_path):
    r = run_cli("advise", "--rtt", "40ms", "--rate", "20Mbit", "--buffer", "2bdp", "--json", "--any-kernel")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["recommendation"]["cc"] in ALL
    for bad, key in ((["--rtt", "40ms"], "--rate"), (["--rtt", "fast", "--rate", "1Mbit"], "--rtt"),
                     (["--rtt", "40ms", "--rate", "1Mbit", "--loss", "60%"], "--loss"),
                     (["--path", str(tmp_path / "none.toml")], "none.toml"),
                     (["--rtt", "40ms", "--rate", "1Mbit", "--current-cc", "htcp"], "--current-cc"),
                     (["--rtt", "40ms", "--rate", "1Mbit", "--duration", "0.1s"], "--duration"),
                     (["--rtt", "40ms", "--rate", "1Mbit", "--engine", "ns3"], "--engine")):
        r = run_cli("advise", *bad)
        assert r.returncode == 2 and key in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_advise_takes_measures_json_report_as_the_twin_it_gives_and_a_file_given_as_host_is_an_error(tmp_path):
    """`bloatlab measure HOST --json > m.json; bloatlab advise --path m.json`: the report's twin (measure.twin_of), the
    same advice as on the twin file measure would have written from it. A file where HOST goes was looked up as a
    host name ("failed to lookup address information"); JSON that is not a report names what it lacks."""
    from bloatlab.advise.measure import twin_of

    report = os.path.join(ROOT, "bench", "autorate", "twin", "lte", "measure.json")  # a stored `measure --json`
    with open(report) as f:
        twin_of(json.load(f)).write_twin(str(tmp_path / "twin.toml"))
    args = ["--json", "--members", "1", "--duration", "5s", "--current-cc", "cubic"]
    a = run_cli("advise", "--path", report, *args)
    b = run_cli("advise", "--path", str(tmp_path / "twin.toml"), *args)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    # (the twin file writes the RTT to 6 digits: 41.559 for 41.5590380748503)
    pick = [(j["recommendation"]["cc"], j["recommendation"]["qdisc"], j["recommendation"]["shaper_mbps"]) for j in (ja, jb)]
    assert pick[0] == pick[1]
    for k in ("goodput_mbps", "p95_rtt_ms"):
        assert ja["expected"][k] == pytest.approx(jb["expected"][k], rel=1e-3)
    r = run_cli("advise", str(tmp_path / "twin.toml"))
    assert r.returncode == 2 and f"give it as --path {tmp_path / 'twin.toml'}" in r.stderr and "lookup" not in r.stderr
    for text, said in (("{}", "no 'down'"), ('{"down": {}, "base_rtt_ms": 40}', "measure --json"),
                       ("{oops", "nor measure's report")):
        (tmp_path / "x.json").write_text(text)
        r = run_cli("advise", "--path", str(tmp_path / "x.json"))
        assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_advise_tables_fit_the_width_of_a_pipe():
    # as every CLI table (commands/_table.py): COLUMNS when set; advise's own 110 columns otherwise
    # (before, advise drew 110 columns whatever COLUMNS said)
    for cols, width in (("72", 72), ("", 110)):
        env = dict(os.environ, COLUMNS=cols)
        r = run_cli("advise", "--rtt", "40ms", "--rate", "20Mbit", "--buffer", "2bdp", "--any-kernel", env=env)
        assert r.returncode == 0, r.stderr
        assert "Recommendation" in r.stdout and max(len(x) for x in r.stdout.splitlines()) == width


def test_an_aqm_twin_keeps_the_aqms_own_buffer_through_its_file(tmp_path):
    # measure writes an AQM's unseen limit as fq_codel's own 10240 packets; read back it was "a buffer of
    # 15360 KB (7.5e+03 BDP)" in advise's words (campaign seed 8 path 1)
    from bloatlab.advise.path import to_toml

    p = Path(base_rtt_ms=8, down_mbps=2.04, up_mbps=1.09, buffer_bytes=None, limiter="aqm")
    f = tmp_path / "twin.toml"
    f.write_text(to_toml(p.twin()))
    q = Path.from_twin(str(f))
    assert q.buffer_bytes is None and "the AQM's own buffer" in q.describe() and "15360 KB" not in q.describe()
    # CoDel, PIE and CAKE run their own limits in the twin whatever buffer was read: no "a buffer of 9 KB" beside them
    # (campaign seed 50 path 3: "a buffer of 9 KB (1 BDP) ... a single-queue AQM (codel, Linux's defaults)")
    for kind in ("codel", "pie", "cake"):
        a = Path(base_rtt_ms=13.4, down_mbps=5.6, limiter="aqm", aqm_qdisc=kind, buffer_bytes=9000)
        assert "the AQM's own buffer" in a.describe() and "9 KB" not in a.describe() and "buffer" not in a.link_doc()
    assert q.twin()["link"]["down"]["buffer"] == p.twin()["link"]["down"]["buffer"]


def test_a_twin_file_round_trips_through_advise(tmp_path):
    from bloatlab.advise.path import to_toml

    p = Path(base_rtt_ms=30, down_mbps=40, up_mbps=10, buffer_bytes=300_000, loss=0.001, limiter="policer")
    f = tmp_path / "twin.toml"
    f.write_text(to_toml(p.twin()))
    q = Path.from_twin(str(f))
    assert (q.base_rtt_ms, q.down_mbps, q.up_mbps, q.loss, q.limiter) == (30, 40, 10, 0.001, "policer")
    r = run_cli("run", str(f), "--json")
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- measure (emulated paths, root)

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="measure tests need root and /dev/net/tun (emulated paths)")


def measure_through(shell_args, extra=(), quick=True, *, check):
    """``bloatlab measure`` (``--quick`` unless ``quick`` is False, then ``extra``) from the client namespace of
    ``bloatlab shell SHELL_ARGS``: its JSON report, judged by ``check`` (a function of the report that asserts what
    the test wants) on a run whose timing the emulator kept (conftest.on_kept_timing: a late VM's run that fails the
    check is made again, up to three times, then the test is skipped with the emulator's reason). ``extra`` may be a
    function of the try (0, 1, 2) for arguments naming a place to write."""
    env = dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"])

    def run(i):
        args = extra(i) if callable(extra) else extra
        with tempfile.TemporaryDirectory() as tmp:
            raw = os.path.join(tmp, "raw.json")
            r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", *shell_args,
                                "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--out", raw, "--",
                                "sh", "-c", "sleep 0.5; bloatlab measure $BLOATLAB_SERVER " + ("--quick " if quick else "")
                                + "--json " + " ".join(args)],
                               capture_output=True, text=True, timeout=120, env=env)
            assert r.returncode == 0, r.stderr
            with open(raw) as f:
                return json.loads(r.stdout[r.stdout.index("{"):]), json.load(f)

    return on_kept_timing(run, check, f"measure through {' '.join(shell_args)}")


@needs_root
def test_measure_a_bloated_fifo_path_within_the_targets():
    def check(m):
        assert abs(m["base_rtt_ms"]["p50"] - 40) <= 2 + 0.05 * 40
        assert m["down"]["rate_mbps"] == pytest.approx(20, rel=0.10)
        assert m["up"]["rate_mbps"] == pytest.approx(10, rel=0.10)
        assert m["down"]["buffer_bdp"] == pytest.approx(2.0, abs=max(0.3 * 2.0, 0.2))
        assert m["down"]["limiter"] == "fifo" and m["up"]["limiter"] == "fifo"
        assert m["down"]["grade"] in ("B", "C")  # 2 BDP at 40 ms: ~80 ms added

    measure_through(["--down", "20Mbit", "--up", "10Mbit", "--rtt", "40ms", "--buffer", "2bdp"], check=check)


@needs_root
def test_measure_reads_a_fifo_deeper_than_its_fill_reached_from_a_slow_start_that_overflowed_it():
    # 12 BDP at 100 Mbit/s and 20 ms (3 MB, 240 ms of queue): four CUBIC flows after HyStart add 0.4 t^3 segments
    # each, 10.9 s to reach it, past the 5-s fill; Reno's slow start (or the fill's own, where HyStart did not end
    # it) overflows it within a second, and the smoothed RTT then holds the depth (docs/advise.md, the deep step)
    def check(m):
        d = m["down"]
        assert d["limiter"] == "fifo" and d["buffer_bound"] is None, d.get("buffer_note")
        assert d["deep_fill"]["overflowed"] and d["buffer_from"] == "slow_start", d["deep_fill"]
        assert d["buffer_bdp"] == pytest.approx(12.0, rel=0.30), d["buffer_note"]

    measure_through(["--down", "100Mbit", "--up", "20Mbit", "--rtt", "20ms", "--buffer", "12bdp"], ["--no-up"], check=check)


@needs_root
def test_measure_finds_a_policer_and_its_rate_and_its_recording_replays_to_the_same_reading(tmp_path):
    # seed 003: a 20 Mbit/s policer on a 100 Mbit/s port; CUBIC alone would read ~15 Mbit/s
    def check(m):
        assert m["down"]["limiter"] == "policer", m["down"]
        assert m["down"]["rate_mbps"] == pytest.approx(20, rel=0.10), m["down"]["rate_by_cc"]
        assert m["down"]["buffer_bytes"] is None and m["down"]["grade"] == "A+"  # the port never queued: its buffer is not seen
        assert "policer" in m["down"]["limiter_note"] and m["down"]["evidence"]["dropped"]

    recs = []

    def record(i):
        recs.append(tmp_path / f"try{i}")
        return ["--no-up", "--record", str(recs[-1])]

    m = measure_through(["--down", "100Mbit", "--policer", "20Mbit", "--rtt", "30ms"], record, check=check)
    rec = recs[-1]  # the try that passed
    # measured again from its recording, offline (advise/recording.py): the same report, its wall times to the
    # microsecond the recording keeps them to, and what was served
    r = run_cli("measure", "--replay", str(rec), "--json")
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    runs = sum('"args"' in x for x in (rec / "probes.jsonl").read_text().splitlines())
    assert again.pop("replay") == {"dir": str(rec), "runs": runs, "substituted": [], "unused": []} and runs >= 6

    def timeless(x):
        if isinstance(x, dict):
            return {k: timeless(v) for k, v in x.items() if k not in ("elapsed_s", "phases_s")}
        return [timeless(v) for v in x] if isinstance(x, list) else x
    assert timeless(again) == timeless(m)
    assert again["elapsed_s"] == pytest.approx(m["elapsed_s"], abs=1e-5)
    assert again["down"]["phases_s"] == pytest.approx(m["down"]["phases_s"], abs=1e-5)


@needs_root
def test_measure_sees_an_aqm_and_a_clean_grade():
    def check(m):
        assert m["down"]["limiter"] == "aqm"
        assert m["down"]["grade"] in ("A+", "A")
        assert m["down"]["rate_mbps"] == pytest.approx(20, rel=0.10)
        assert m["down"]["buffer_bytes"] is None  # an AQM's limit is not visible from outside

    measure_through(["--down", "20Mbit", "--rtt", "40ms", "--qdisc", "fq_codel"], ["--no-up"], check=check)


def test_measure_refuses_a_host_without_a_server():
    r = run_cli("measure", "127.0.0.1:1", "--quick", timeout=60)
    assert r.returncode == 2 and "bloatlab-probe server" in r.stderr, r.stderr


def test_measure_takes_iperf3s_port_flag_and_refuses_two_ports():
    from bloatlab.advise.measure import with_port

    assert (with_port("example.net", None), with_port("example.net", 5201), with_port("h:5201", 5201)) == (
        "example.net", "example.net:5201", "h:5201")
    r = run_cli("measure", "127.0.0.1", "-p", "1", "--quick", timeout=60)
    assert r.returncode == 2 and "127.0.0.1:1" in r.stderr, r.stderr
    for args, key in ((["measure", "127.0.0.1:5301", "-p", "5201"], "name different ports"),
                      (["measure", "127.0.0.1", "-p", "70000"], "expected 1-65535"),
                      (["advise", "-p", "5301", "--rtt", "10ms", "--rate", "10Mbit"], "goes with HOST")):
        r = run_cli(*args)
        assert r.returncode == 2 and "-p/--port" in r.stderr and key in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_measure_refuses_an_unreachable_host_within_its_timeout():
    # TEST-NET-1 (RFC 5737): never routed; the idle phase gives up after 3 s without a reply
    r = run_cli("measure", "192.0.2.1", "--quick", timeout=60)
    assert r.returncode == 2 and "192.0.2.1" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_measure_refuses_a_server_that_is_not_bloatlab_probe(tmp_path):
    # a plain UDP echo server (seed 002's board) answers with our own request: not a server of ours
    import socket
    import threading

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(0.2)
    port = s.getsockname()[1]
    stop = threading.Event()

    def echo():
        while not stop.is_set():
            try:
                data, a = s.recvfrom(2048)
                s.sendto(data, a)
            except OSError:
                pass

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    try:
        r = run_cli("measure", f"127.0.0.1:{port}", "--quick", timeout=60)
    finally:
        stop.set()
        t.join()
        s.close()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "not as `bloatlab-probe server` does" in r.stderr, r.stderr


@needs_root
def test_advise_with_the_kernels_controls_through_the_emulated_twin():
    # a 4-BDP FIFO at 20 Mbit/s and 20 ms: the kernel's CUBIC fills it (~80 ms of queue), BBR holds
    # about one BDP in flight beyond the pipe; the kernel decides, not the model
    r = run_cli("advise", "--rtt", "20ms", "--rate", "20Mbit", "--buffer", "4bdp", "--engine", "emu", "--host-only",
                "--duration", "4s", "--current-cc", "cubic", "--any-kernel", "--json", timeout=240)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["engine"] == "emu" and "kernel" in out["model"]
    by = {a["cc"]: a for a in out["alternatives"]}
    assert set(by) == {"reno", "cubic", "bbr"}
    assert by["cubic"]["goodput_mbps"] > 0.8 * 20 * 1448 / 1500  # each kernel flow ran and filled the link
    assert by["cubic"]["loaded_rtt_ms"] > 60  # CUBIC fills the buffer: 4 BDP = 80 ms of queue
    assert by["bbr"]["loaded_rtt_ms"] < by["cubic"]["loaded_rtt_ms"]
    assert out["recommendation"]["cc"] == max(out["alternatives"], key=lambda a: a["score"])["cc"]


def test_a_host_without_fq_today_is_compared_with_the_same_control_paced_by_fq():
    """Seed 004's sysctl line (default_qdisc = fq) paces every control; a host
    that does not run fq today (pfifo_fast) but could is a candidate of its own.
    On a 0.05-BDP buffer at 200 Mbit/s and 100 ms, unpaced CUBIC's slow-start
    bursts overflow the buffer (measured 48 Mbit/s), paced CUBIC does not
    (135 Mbit/s): the advice says pacing is what helps, with both figures."""
    p = Path(100.0, 200.0, buffer_bytes=125_000)
    out = recommend.advise(p, "balanced", "cubic", None, 1, queues=("as-is",), host_qdisc_state=("pfifo_fast", True))
    assert out["current"]["paced"] is False and out["expected"]["paced"] is True
    assert out["expected"]["goodput_mbps"] > 2 * out["current"]["goodput_mbps"]
    assert out["recommendation"]["sysctl"]["net.core.default_qdisc"] == "fq"
    assert any("Pacing on the sending host" in r for r in out["reasons"]) or out["recommendation"]["cc"] != "cubic"
    # Without sch_fq nothing is paced but what paces itself.
    out = recommend.advise(p, "balanced", "cubic", None, 1, queues=("as-is",), host_qdisc_state=("pfifo_fast", False))
    assert not any(a["paced"] for a in out["alternatives"])


def _load_json(rate_bps, flow_rtt_ms, probe_rtt_ms, retx, segs, flows=4, secs=10.0):
    return _timed_phase(rate_bps, flow_rtt_ms, probe_rtt_ms, secs, 0.0, 0.0, flows, retx, segs)


def test_a_fill_phase_that_never_reached_the_rate_leaves_the_verdict_to_the_phase_that_did(monkeypatch):
    """Behind an 8.9 Mbit/s policer on a 14.6 Mbit/s port (63 ms, the campaign's
    development seed) CUBIC collapsed to 1.4 Mbit/s, its flows' smoothed RTT
    lifted by slow start's bursts at the port while the probe saw none — read
    as flow isolation. BBR reached 8.2: its phase, without a queue and with
    drops, says policer."""
    from bloatlab.advise import measure as M

    phases = {"cubic": _load_json(1.4e6, 63 + 22.6, 63 + 0.8, 137, 880),
              "bbr": _load_json(8.2e6, 63 + 1.5, 63 + 0.5, 300, 7000)}
    monkeypatch.setattr(M, "_load", lambda host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False: phases[cc])
    x = M._direction("h", 1, "down", 4, 63.0, None, True, False, 0.0, lambda m: None)
    assert x["evidence"]["phase"] == "bbr" and x["limiter"] == "policer", x["evidence"]
    # a fill phase that reached the rate keeps its own evidence (a FIFO: the probe waits as the flows do)
    phases = {"cubic": _load_json(19.5e6, 63 + 40, 63 + 42, 30, 20000), "bbr": _load_json(19.8e6, 63 + 30, 63 + 31, 5, 20000)}
    x = M._direction("h", 1, "down", 4, 63.0, None, True, False, 0.0, lambda m: None)
    assert x["evidence"]["phase"] == "fill" and x["limiter"] == "fifo"


def test_a_short_rate_phase_on_a_long_path_gives_its_evidence_once_its_probes_are_read_while_they_ran(monkeypatch):
    """Campaign seed 28 path 18: a 7.1-Mbit/s policer at 340 ms, the fill's four CUBIC flows collapsed at
    0.46 Mbit/s together (their smoothed RTT +16.9 ms over the probes' +0.4: the ACK wait of a window-limited
    flow), BBR reached 3.57. Its phase, timed as the load times it (the flows 3.5 round trips after the
    probes, then a 2-s ack grace), had its flows' second half after the probes' end: the evidence stayed the
    collapsed fill's. Read while the probes ran, BBR's phase says policer: drops, no queue."""
    from bloatlab.advise import measure as M
    from bloatlab.advise import evidence as M_evidence
    from bloatlab.advise import plan as M_plan

    base = 339.8
    setup = M_plan.SETUP_ROUNDS * base / 1e3
    seen = {}

    def load(host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False):
        seen[cc] = secs
        if cc == "cubic":
            return _timed_phase(0.456e6 / M_evidence.WIRE_PER_PAYLOAD, base + 16.9, base + 0.37, secs, setup, 2.0, retx=102, segs=598)
        return _timed_phase(3.57e6 / M_evidence.WIRE_PER_PAYLOAD, base + 1.3, base + 0.5, secs, setup, 2.0, retx=391, segs=1658)

    monkeypatch.setattr(M, "_load", load)
    x = M._direction("h", 1, "down", 4, base, None, True, False, 0.0, lambda m: None)
    # 12 rounds (the fill's rate sizes no doubling: 3 full-pipe rounds, DRAIN, a gain cycle) and the 3.5 of setup
    assert seen["bbr"] == pytest.approx(15.5 * base / 1e3)
    assert x["evidence"]["phase"] == "bbr" and x["limiter"] == "policer", x["evidence"]
    # the link's rate: the median instant's flows and probes (evidence.probes_bps); the probes ended at 5.26 s, a
    # third into the flows' window, and the flows ran on alone through their ack grace: 3.57, the probes' mean
    # share over the whole window not added to it
    assert 0 < x["evidence"]["probes_mbps"] < 0.0736 / 2  # all answered, over less than half the window
    assert x["rate_mbps"] == pytest.approx(3.57, rel=1e-4) and x["evidence"]["probe_q95_ms"] == pytest.approx(0.5)
    # the probes sent 0-5.26 s, the flows' first sample at 1.1893 s: the second half from 3.2247 s, 204 probes
    assert x["evidence"]["probes"] == 204 and x["evidence"]["probe_window_s"] == pytest.approx([3.22465, 5.26])
    # the phase's old length (4.08 s): its probes too are read while they ran (1.19-4.07 s: 144 of them)
    monkeypatch.setattr(M_plan, "SETUP_ROUNDS", 0.0)
    x = M._direction("h", 1, "down", 4, base, None, True, False, 0.0, lambda m: None)
    assert seen["bbr"] == pytest.approx(12 * base / 1e3)
    assert x["evidence"]["phase"] == "bbr" and x["limiter"] == "policer", x["evidence"]


def test_a_fill_that_kept_the_ports_rate_busy_needs_no_bbr_phase(monkeypatch):
    """The BBR phase finds the rate where the fill did not (measure.BUSY_SHARE):
    a fill whose flows queued through every window at the rate of the port the
    idle path's packet train showed delivered the link's rate, and BBR's 3-8 s
    are left out; behind a policer the train reads the faster port and BBR runs
    although the flows' smoothed RTT (lifted by bursts at the port) looks busy."""
    from bloatlab.advise import measure as M
    from bloatlab.advise import evidence as M_evidence

    calls = []

    def load(host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False):
        calls.append(cc)
        return phases[cc]

    monkeypatch.setattr(M, "_load", load)
    # the policer of the test above: busy-looking srtt, the port 14.6 Mbit/s
    phases = {"cubic": _load_json(1.4e6, 63 + 22.6, 63 + 0.8, 137, 880), "bbr": _load_json(8.2e6, 63 + 1.5, 63 + 0.5, 300, 7000)}
    x = M._direction("h", 1, "down", 4, 63.0, None, True, False, 0.0, lambda m: None, port_mbps=14.6)
    assert calls == ["cubic", "bbr"] and x["limiter"] == "policer"
    # fq_codel-like at 7 Mbit/s: the flows 20 ms above base throughout (campaign seed 8 path 3, fq_codel at 7.1
    # Mbit/s: 22 ms), the probe 1 ms, the port 7.05 (8 ms would be within the noise and the 6.9 ms the 4 flows'
    # ACKs wait for a pair's second segment, measure.ack_wait_ms: no isolation to read)
    calls.clear()
    phases = {"cubic": _load_json(6.93e6 / M_evidence.WIRE_PER_PAYLOAD, 6 + 20, 6 + 1, 40, 15000)}
    x = M._direction("h", 1, "down", 4, 6.0, None, True, False, 0.0, lambda m: None, port_mbps=7.05)
    assert calls == ["cubic"] and x["limiter"] == "aqm"
    assert x["rate_by_cc"] == {"cubic": pytest.approx(6.93 + x["evidence"]["probes_mbps"], rel=1e-4)}
    # the same fill where the port reads 1.2x faster (a shaper's bucket, a policer): BBR runs
    calls.clear()
    phases["bbr"] = _load_json(6.93e6 / M_evidence.WIRE_PER_PAYLOAD, 6 + 1, 6 + 1, 5, 15000)
    M._direction("h", 1, "down", 4, 6.0, None, True, False, 0.0, lambda m: None, port_mbps=1.2 * 6.93)
    assert calls == ["cubic", "bbr"]


def test_the_ports_from_the_idle_path():
    from bloatlab.advise import measure as M
    from bloatlab.advise import physics as M_physics

    ser = M_physics.PROBE_WIRE * 8 * (1 / 7e6 + 1 / 3e6) * 1e3
    p = M._ports({"leading_mbps": 7.0}, ser)
    assert p["down"] == 7.0 and p["up"] == pytest.approx(3.0)
    assert M._ports({"leading_mbps": 7.0, "sender_limited": True}, ser) == {"down": None, "up": None}
    assert M._ports(None, ser) == {"down": None, "up": None}
    # a serialization no slower than the down port's alone: nothing left for the up port
    assert M._ports({"leading_mbps": 7.0}, M_physics.PROBE_WIRE * 8 / 8e6 * 1e3)["up"] is None


def test_a_load_that_printed_its_result_then_failed_keeps_its_figures(monkeypatch):
    """bloatlab-probe load prints its JSON, then exits 1 when a flow's peer
    went away before the last ACKs (a policer dropping most of an uplink's
    0.15 Mbit/s): measure keeps the figures and says so; a run that printed
    nothing is still an error."""
    import types

    from bloatlab.advise import measure as M

    done = types.SimpleNamespace(returncode=1, stdout=json.dumps({"flows": [{"id": 1}]}),
                                 stderr="bloatlab-probe: stream 3: the peer closed the connection before acking everything\n")
    monkeypatch.setattr(M.subprocess, "run", lambda *a, **k: done)
    j = M._probe(["load", "h"], 10, partial=True)
    assert j["flows"] and j["problem"] == "stream 3: the peer closed the connection before acking everything"
    with pytest.raises(M.UserError, match="peer closed"):
        M._probe(["load", "h"], 10)  # not a load: the exit status decides
    done.stdout = ""
    with pytest.raises(M.UserError, match="peer closed"):
        M._probe(["load", "h"], 10, partial=True)


def test_a_load_phase_without_echoes_after_answered_idle_probes_names_both_causes(monkeypatch):
    """A load phase whose idle probes got no echo within the probe's 2 s, after measure's own idle probes were
    answered (campaign seed 49 path 24: a legacy access point's FIFO that another station kept full): the server
    was there, so the message says the path held the packets (others' traffic) or the server stopped — not only
    "is the server running?"."""
    import types

    from bloatlab.advise import measure as M

    done = types.SimpleNamespace(returncode=1, stdout="", stderr=(
        "bloatlab-probe: 10.77.0.2:5301: no UDP echo: none of the idle phase's 100 probes came back within 2 s (is "
        "`bloatlab-probe server` running there? if it is, the path held or dropped every probe: a queue that others' "
        "traffic keeps full)\n"))
    monkeypatch.setattr(M.subprocess, "run", lambda *a, **k: done)
    with pytest.raises(M.UserError) as e:
        M._load("10.77.0.2", 5301, "down", 4, 5.0, None, "cubic")
    msg = str(e.value)
    assert msg.startswith("measure: the down phase's idle probes got no echo, where measure's first idle probes")
    assert "another host's traffic" in msg and "or the server stopped" in msg and "none of the idle phase's 100" in msg
    # any other failure passes through as the probe said it
    done.stderr = "bloatlab-probe: stream 3: the peer closed the connection before acking everything\n"
    with pytest.raises(M.UserError, match="^measure: bloatlab-probe: stream 3: the peer closed"):
        M._load("10.77.0.2", 5301, "down", 4, 5.0, None, "cubic")


def test_the_capacitys_variation_over_the_windows_where_the_bottleneck_stayed_busy():
    """Issue 31: measure reports how the capacity moved — the flows' summed
    delivery rate over 100-ms windows (or two samples) where every flow's
    queue stayed above the noise: p10, p50, p90 and the time scale (the lag
    where the windows' autocorrelation falls below 1/e)."""
    from bloatlab.advise.evidence import rate_variation

    wire = 1500 / 1448
    probes = 92 * 8 * 100 / 1e6  # the probes' bytes each window carried beside the flows' (10 every 100 ms)
    # a fixed 15 Mbit/s: every window the same, nothing moved
    v = rate_variation(_phase(15e6, 15e6, 40.0, secs=20.0), "down", 20.0)
    assert v["window_s"] == pytest.approx(0.1) and v["windows"] == 99 == v["busy_windows"]  # the second half: 9.995 s
    assert v["p10_mbps"] == pytest.approx(15 * wire + probes) and v["p90_mbps"] == pytest.approx(15 * wire + probes)
    assert v["timescale_s"] is None
    # the windows themselves (what advise.capacity fits) and the round trip each delivery-rate sample spans
    assert v["series_mbps"] == [pytest.approx(15 * wire + probes, abs=1e-4)] * 99 and v["srtt_ms"] == 40.0
    # capacity alternating 40 / 10 Mbit/s every second: p10 and p90 are the two rates, the time scale within the dwell
    j = _phase(0, 0, 100.0, secs=20.0)
    t = j["raw"]["series"]["flows"]["t"]
    j["raw"]["series"]["flows"]["delivery_rate_bps"] = [40e6 if int(x) % 2 == 0 else 10e6 for x in t]
    # (its cumulative ACK advances with it: a flow whose delivery stands still reads 0, evidence.flow_rates)
    j["raw"]["series"]["flows"]["delivered_bytes"] = [0.01 * i * 25e6 / 8 for i in range(len(t))]
    v = rate_variation(j, "down", 50.0)
    assert v["p10_mbps"] == pytest.approx(10 * wire + probes, rel=1e-3) and v["p90_mbps"] == pytest.approx(40 * wire + probes, rel=1e-3)
    assert 0.2 <= v["timescale_s"] <= 1.0
    # the flows' queue empty (their smoothed RTT at the base): the windows read the senders, not the link
    assert rate_variation(_phase(15e6, 15e6, 40.0, secs=20.0), "down", 39.0) is None
    # busy in the slow seconds only: only those windows count
    j["raw"]["series"]["flows"]["srtt_ms"] = [100.0 if int(x) % 2 else 50.0 for x in t]
    v = rate_variation(j, "down", 50.0)
    # (the windows start 5 ms before each second: one that reaches 5 ms into a fast second reads ~11.5)
    assert v["busy_windows"] < v["windows"] and v["p90_mbps"] == pytest.approx(10 * wire, rel=0.15)
    assert sum(x is None for x in v["series_mbps"]) == v["windows"] - v["busy_windows"]
    # too short a phase for ten windows: not read
    short = _phase(15e6, 15e6, 40.0, secs=1.5)
    assert rate_variation(short, "down", 20.0) is None


def test_a_variable_capacity_moves_both_ways_beyond_what_a_shaper_at_95_percent_of_the_median_allows():
    from bloatlab.advise.evidence import variable_rate

    # through the emulator, 2026-11-25: a fixed 20 Mbit/s FIFO dips (loss recovery) but never rises; the LTE-like trace both
    assert not variable_rate({"p10_mbps": 18.51, "p50_mbps": 19.95, "p90_mbps": 20.04, "window_s": 0.1})
    assert variable_rate({"p10_mbps": 4.43, "p50_mbps": 4.94, "p90_mbps": 5.75, "window_s": 0.1})
    # each way by more than one packet a window (0.12 Mbit/s over 100 ms)
    assert not variable_rate({"p10_mbps": 1.72, "p50_mbps": 1.86, "p90_mbps": 2.0, "window_s": 0.1})
    assert not variable_rate(None)
    # samples that averaged more than the cumulative ACKs delivered over the same (all busy) windows: campaign seed 68
    # path 3, a fixed 1.754-Mbit/s FIFO behind a 0.2-Mbit/s uplink, measured again with the check: its 16 windows'
    # mean 2.18, the acked bytes 1.68. Beyond 1.68 / 0.95 + one packet a window (0.093 Mbit/s over 129 ms) = 1.86: not
    # a capacity that moved. Within it, the spread stands
    seed68 = {"p10_mbps": 1.782, "p50_mbps": 2.094, "p90_mbps": 2.640, "window_s": 0.1287, "mean_mbps": 2.18}
    assert variable_rate(seed68) and not variable_rate({**seed68, "acked_mbps": 1.68})
    assert variable_rate({**seed68, "acked_mbps": 2.1})
    # the evidence: a steady 1.754 Mbit/s acked while the samples alternate 1.65 / 2.45 (bunched ACKs: +17 %) ...
    from bloatlab.advise.evidence import rate_variation

    j = _phase(0, 1.754e6, 100.0, secs=20.0)
    t = j["raw"]["series"]["flows"]["t"]
    j["raw"]["series"]["flows"]["delivery_rate_bps"] = [1.65e6 if int(x * 2) % 2 == 0 else 2.45e6 for x in t]
    v = rate_variation(j, "down", 50.0)
    # (both with the probes' 0.0736 Mbit/s: 10 answered every 100 ms)
    assert v["acked_mbps"] == pytest.approx(1.754 * 1500 / 1448 + 0.0736, rel=1e-3) and v["mean_mbps"] > v["acked_mbps"] / 0.95
    assert not variable_rate(v)
    # ... against the same samples where the ACKs delivered what they read: a capacity that moved
    mean_bps = (1.65e6 + 2.45e6) / 2
    j["raw"]["series"]["flows"]["delivered_bytes"] = [x * mean_bps / 8 for x in t]
    v = rate_variation(j, "down", 50.0)
    assert v["acked_mbps"] == pytest.approx(v["mean_mbps"], rel=0.02) and variable_rate(v)
    # not compared where the windows' span holds fewer than 20 round trips (the ACKs lag by what is in flight at
    # each end), nor where a window was not busy (a stalled flow's stale sample, ACKs a round trip late)
    j["raw"]["series"]["flows"]["srtt_ms"] = [600.0] * len(t)
    assert rate_variation(j, "down", 50.0)["acked_mbps"] is None
    j["raw"]["series"]["flows"]["srtt_ms"] = [100.0 if x < 15.0 else 50.0 for x in t]
    v = rate_variation(j, "down", 50.0)
    assert v["busy_windows"] < v["windows"] and v["acked_mbps"] is None
    # the busy windows' median is no rate either where the samples over-read (busy_rate)
    from bloatlab.advise.evidence import busy_rate

    over = {**seed68, "acked_mbps": 1.68, "p10_mbps": 2.0, "p90_mbps": 2.2, "windows": 16, "busy_windows": 12}
    assert not variable_rate(over) and busy_rate(over, 1.6) is None
    assert busy_rate({**over, "acked_mbps": None}, 1.6) == pytest.approx(2.094)


def test_a_fixed_link_at_the_directions_rate_bounds_what_reads_as_a_rise():
    """evidence.variable_rate with the direction's rate: windows whose median sat in the flows' own dips rise above
    that median but not above what a fixed link at the rate carries (fixed_ceiling_mbps: the rate, a packet and a
    read bucket a window)."""
    from bloatlab.advise.evidence import fixed_ceiling_mbps, variable_rate

    # campaign seed 182 path 5: a tbf at 1.14 Mbit/s (3000-B bucket and queue, 126 ms), CUBIC's windows below the
    # 1.132 the direction read: a move by the median alone, none above a fixed link's 1.132 + 1.2 + 2.49 KB / 308 ms
    tbf = {"p10_mbps": 0.6914, "p50_mbps": 0.7931, "p90_mbps": 1.036, "window_s": 0.308}
    assert variable_rate(tbf) and not variable_rate(tbf, 1.132, 2491)
    assert fixed_ceiling_mbps(0.308, 1.132, 2491) == pytest.approx(1.132 + (1500 + 2491) * 8 / 0.308 / 1e6)
    # bench/autorate/twin/lte (the gallery's LTE-like trace through the emulator): a rise well above the rate read
    lte = {"p10_mbps": 3.908, "p50_mbps": 4.987, "p90_mbps": 7.373, "window_s": 0.134}
    assert variable_rate(lte, 4.951)
    # seed 181 path 32, a tbf at 4.09 Mbit/s (2284-B bucket read): p90 4.461 passes 4.09 + (1500 + 2284) B / 100 ms
    # = 4.393 only as the samples read, 6.8 % over what the ACKs delivered (mean 3.894 against 3.647)
    t32 = {"p10_mbps": 3.422, "p50_mbps": 3.814, "p90_mbps": 4.461, "window_s": 0.1, "mean_mbps": 3.894}
    assert variable_rate(t32, 4.09, 2284) and not variable_rate({**t32, "acked_mbps": 3.647}, 4.09, 2284)


def test_a_collapsed_fill_is_no_run_of_the_isolation_models():
    """isolation.fill_collapsed: the fill's evidence and a fill 1.25x or more below the rate (seed 181 path 44: a
    policer's paced train read 16.19 Mbit/s, the CUBIC fill got 0.457)."""
    from bloatlab.advise.isolation import fill_collapsed

    x = {"evidence": {"phase": "fill"}, "load_cc": "cubic", "rate_mbps": 16.19,
         "rate_by_cc": {"cubic": 0.457, "paced_train": 16.19}}
    assert fill_collapsed(x)
    assert not fill_collapsed({**x, "rate_by_cc": {"cubic": 16.19 / 1.2}})
    assert not fill_collapsed({**x, "evidence": {"phase": "bbr"}})


def test_where_the_link_idled_its_rate_is_the_busy_windows():
    """evidence.busy_rate: a phase's rate counts the time its flows left the link idle; the busy windows' median
    is the link's. Campaign seed 55 path 2's down direction (PIE at 58.39 Mbit/s, 538 ms, 0.18 % random loss):
    BBR's phase read 51.92, its link idle in 26 of 47 windows, the 21 busy ones' median 58.21. Not where every
    window was busy, where the capacity moves, or where the median is no higher."""
    from bloatlab.advise.evidence import busy_rate

    v = {"p10_mbps": 52.14378911111804, "p50_mbps": 58.20722301112004, "p90_mbps": 58.37040268692128,
         "window_s": 0.106, "windows": 47, "busy_windows": 21}
    assert busy_rate(v, 51.92024821663206) == 58.20722301112004
    # at most what the busy windows carry if the idle ones carried nothing (a delivery-rate sample can over-read):
    # 10 x 47 / 21 = 22.4; never below the phase's own rate
    assert busy_rate(dict(v, p50_mbps=30.0), 10.0) == pytest.approx(10 * 47 / 21)
    # seed 54 path 21's up direction: the phase's 66.19, the busy windows' 66.21 (43 of 45), the serialization's
    # "port" 51.37 — a least, which the figure does not take as a most
    up21 = {"p10_mbps": 64.0, "p50_mbps": 66.20607887721975, "p90_mbps": 66.9, "window_s": 0.1, "windows": 45,
            "busy_windows": 43}
    assert busy_rate(up21, 66.18787358554349) == 66.20607887721975
    assert busy_rate(dict(v, busy_windows=47), 51.92) is None
    assert busy_rate(v, 58.3) is None and busy_rate(None, 51.92) is None
    # a capacity that moves both ways (the LTE-like trace's spread): its mean is the trace's, not the busy median
    assert busy_rate(dict(v, p10_mbps=4.43, p50_mbps=4.94, p90_mbps=5.75, window_s=0.1), 4.0) is None


def test_an_up_fill_that_kept_the_ports_queue_busy_reads_at_least_the_port():
    """measure.take_busy_port: campaign seed 69 path 16's up direction (fq_codel at 1.02 Mbit/s, 15 ms) measured
    again: its CUBIC fill busy in 11 of 11 windows, its window too short in round trips for the acked bytes, its
    delivery-rate samples 0.917 Mbit/s (-10.1 %), the large probes' port 0.991 (a lower bound of a port whose queue
    drains at it): the rate is the port's (-2.8 %). Not down, not on a policer reading, not below the fill's own
    rate, not where a window idled or the port is beyond the train's resolution."""
    from bloatlab.advise import measure as M

    v = {"p10_mbps": 0.7917814129988475, "p50_mbps": 0.915893843346275, "p90_mbps": 0.9873595045212024,
         "timescale_s": 0.542299723646858, "window_s": 0.271149861823429, "windows": 11, "busy_windows": 11,
         "phase": "cubic"}
    rates, rate_from = {"cubic": 0.9169054443121408}, {"cubic": "delivery_rate"}
    assert M.take_busy_port(rates, rate_from, v, 0.9912636827394421, 0.9169054443121408, "aqm", "up") == 0.9912636827394421
    assert rates["port"] == 0.9912636827394421 and rate_from["port"].startswith("the port's rate")
    for args in [(v, 0.99126, 0.91690, "aqm", "down"), (v, 0.99126, 0.91690, "policer", "up"),
                 (v, 0.90, 0.91690, "aqm", "up"), (dict(v, busy_windows=10), 0.99126, 0.91690, "aqm", "up"),
                 (v, 1.02, 0.91690, "aqm", "up"), (v, None, 0.91690, "aqm", "up"), (None, 0.99126, 0.91690, "aqm", "up"),
                 # a capacity that moves both ways (the port was read at one instant of it)
                 (dict(v, p10_mbps=0.40, p90_mbps=1.60), 0.99126, 0.91690, "aqm", "up")]:
        rates = {}
        assert M.take_busy_port(rates, {}, *args) == args[2] and rates == {}, args
    # a policer the trains read after: the flows' rate stands, not the port's
    x = {"limiter": "policer", "rate_mbps": 0.99126, "rate_by_cc": {"cubic": 0.9169, "port": 0.99126}}
    M.policer_keeps_the_flows_rate(x)
    assert x["rate_mbps"] == 0.9169


def _variable_path(**kw):
    return Path(base_rtt_ms=40, down_mbps=10, buffer_bytes=500_000, down_variable=True, down_rate_p10_mbps=4,
                down_rate_p50_mbps=10, down_rate_p90_mbps=25, down_rate_timescale_s=2.0, **kw)


def test_a_variable_path_twin_follows_a_fitted_trace_and_advise_weighs_cake_autorate(tmp_path):
    """Issue 31: on a variable-rate path the twin's link follows the fitted
    model's trace (traces.fitted_rates), the candidates are no shaping, CAKE
    fixed at the p10 and the median, and cake-autorate between p10 and p90;
    recommendation.autorate carries its settings (null on a fixed path)."""
    from bloatlab import traces
    from bloatlab.advise.path import to_toml

    p = _variable_path(down_trace=str(tmp_path / "twin-down.trace"))
    doc = p.twin(10)
    assert doc["link"]["down"]["rate"] == f"trace:{tmp_path / 'twin-down.trace'}"
    ms = [int(x) for x in (tmp_path / "twin-down.trace").read_text().split()]
    pc = traces.capacity_percentiles(ms, 1000)
    # 120 s of the fitted log-normal process: its p10/median/p90 near 4/10/25 (1-s windows of a 2-s process)
    assert 3 < pc["p10_mbps"] < 6 and 7 < pc["median_mbps"] < 13 and 18 < pc["p90_mbps"] < 32
    (tmp_path / "twin.toml").write_text(to_toml(dict(doc, link={"down": dict(doc["link"]["down"], rate="trace:twin-down.trace")})))
    q = Path.from_twin(str(tmp_path / "twin.toml"))
    assert q.down_variable and q.down_trace == str(tmp_path / "twin-down.trace")
    a = recommend.advise(p, "latency", "cubic", ["reno", "cubic", "bbr"], 1, duration_s=10)
    shapes = {(c["queue"], c["shaper_mbps"]) for c in a["alternatives"]}
    assert shapes == {("as-is", None), ("cake", 4), ("cake", 10), ("autorate", None)}
    ar = a["recommendation"]["autorate"]
    assert (ar["min_mbps"], ar["base_mbps"], ar["max_mbps"]) == (4, 10, 25)
    assert "min_dl_shaper_rate_kbps=4000" in ar["how"] and "max_dl_shaper_rate_kbps=25000" in ar["how"]
    assert ar["recommended"] == (a["recommendation"]["qdisc"] == "autorate")
    assert any(r.startswith("Your capacity varies (p10 4, median 10, p90 25") for r in a["reasons"])
    # the latency goal on a 500-KB modem buffer: some shaping, not the bloated FIFO as it is
    assert a["expected"]["queue"] != "as-is"
    # a fixed-rate path: no autorate
    fixed = recommend.advise(Path(base_rtt_ms=40, down_mbps=10), "balanced", "cubic", ["cubic"], 1, duration_s=5)
    assert fixed["recommendation"]["autorate"] is None
    # cake-autorate refuses a minimum below its connection-active threshold (2 Mbit/s): a p10 below it keeps its
    # rate and brings the threshold down with it, as a slow link's user sets connection_active_thr_kbps
    low = _variable_path(down_trace=str(tmp_path / "low.trace"))
    low.down_rate_p10_mbps, low.down_rate_p50_mbps, low.down_rate_p90_mbps = 0.5, 1.0, 1.5
    a = recommend.autorate_settings(low)
    assert (a["min_mbps"], a["base_mbps"], a["max_mbps"], a["active_threshold_mbps"]) == (0.5, 1.0, 1.5, 0.5)
    assert recommend.autorate_element(a) == {"min": "0.5Mbit", "base": "1Mbit", "max": "1.5Mbit", "active_threshold": "0.5Mbit"}
    assert "connection_active_thr_kbps=500" in recommend._autorate_advice(low, recommend.Candidate("cubic", "autorate", None))["how"]
    assert "connection_active_thr_kbps" not in ar["how"]
    # CAKE fixed below 2 Mbit/s on the variable twin is CAKE at that rate (it was raised to 2 Mbit/s, above what
    # the advice said), and the scenario resolves
    d = low.link_doc(1.337, "cake")
    assert d["autorate"] == {"min": "1.337Mbit", "base": "1.337Mbit", "max": "1.337Mbit", "active_threshold": "1.337Mbit"}
    assert low.link_doc(3.5, "cake")["autorate"] == {"min": "3.5Mbit", "base": "3.5Mbit", "max": "3.5Mbit"}
    for c in (recommend.Candidate("cubic", "cake", 1.337), recommend.Candidate("cubic", "autorate", None)):
        sc = scenario.load(recommend._scenario(low, c, False, 1, 5)).resolved()
        assert sc["links"]["down"]["autorate"]["active_threshold_bps"] == (1_337_000 if c.queue == "cake" else 500_000)


def _measured_variable_path(base_rtt_ms=40.0):
    """A variable path as measure builds it (evidence._variation_fields): the windows measure would read of 6 s of
    the LTE-like model (seed 7, 134-ms windows, samples spanning the 400-ms loaded round trip)."""
    import numpy as np

    from bloatlab import traces
    from bloatlab.advise import capacity
    from bloatlab.advise.evidence import _variation_fields

    s = [round(float(x), 4) for x in capacity.read_windows(traces.lte_rates(30_000, 7)[20_000:26_500], 0.134, 0.4)]
    p10, p50, p90 = (float(x) for x in np.percentile(s, [10, 50, 90]))
    v = {"p10_mbps": p10, "p50_mbps": p50, "p90_mbps": p90, "timescale_s": 0.536, "window_s": 0.134,
         "windows": len(s), "busy_windows": len(s), "series_mbps": s, "srtt_ms": 400.0}
    report = {"down": {"rate_variation": v, "limiter": "fifo"}}
    p = Path(base_rtt_ms=base_rtt_ms, down_mbps=float(np.mean(s)), buffer_bytes=500_000, **_variation_fields(report))
    assert p.down_variable and p.down_rate_variation is v
    return p


def test_a_measured_variable_twin_gives_back_what_measure_read_and_the_same_advice(tmp_path):
    """Issue 31: measure -> twin file -> advise --path gives what advise gives right after measure. The twin's trace
    is one realization; the measured rate, p10/p50/p90, time scale and windows travel beside it
    (TWIN-down.trace.json) and come back exactly (they came back from the trace over 1-s windows before: the
    stored LTE-like measurement's 3.91/4.99/7.37 Mbit/s read 4.52/6.35/9.12); the recommendation, CAKE's rates and
    cake-autorate's settings are the same, each member on the same realization."""
    import dataclasses

    p = _measured_variable_path()
    p.write_twin(str(tmp_path / "twin.toml"))
    assert 'rate = "trace:twin-down.trace"' in (tmp_path / "twin.toml").read_text()
    side = json.loads((tmp_path / "twin-down.trace.json").read_text())
    assert side["realization"]["within_tolerance"]
    q = Path.from_twin(str(tmp_path / "twin.toml"))
    assert q.down_trace == str(tmp_path / "twin-down.trace")
    assert {f.name: getattr(q, f.name) for f in dataclasses.fields(Path)} == {f.name: getattr(p, f.name) for f in dataclasses.fields(Path)}
    a = recommend.advise(p, "balanced", "cubic", ["reno", "cubic", "bbr"], 1, duration_s=5, members=3)
    b = recommend.advise(q, "balanced", "cubic", ["reno", "cubic", "bbr"], 1, duration_s=5, members=3)
    assert a["recommendation"] == b["recommendation"] and a["alternatives"] == b["alternatives"]
    ar = a["recommendation"]["autorate"]
    v = p.down_rate_variation
    assert (ar["min_mbps"], ar["base_mbps"], ar["max_mbps"]) == (max(v["p10_mbps"], 2.0), v["p50_mbps"], v["p90_mbps"])
    assert {c["shaper_mbps"] for c in a["alternatives"] if c["queue"] == "cake"} == {round(v["p10_mbps"], 6), round(v["p50_mbps"], 6)}
    # the members ran on three realizations: the twin's own and the next two within the measured tolerances, the
    # two temporary traces removed once read
    assert "_member_traces" not in p.__dict__ and os.path.exists(p.down_trace)
    tr = p.member_traces(3)
    assert len(tr) == 3 and tr[0] == p.down_trace and all(os.path.exists(f) for f in tr)
    p.remove_member_traces()
    assert os.path.exists(tr[0]) and not any(os.path.exists(f) for f in tr[1:])


def test_a_twins_measured_figures_that_are_not_what_measure_writes_are_an_error_naming_the_key(tmp_path):
    p = _measured_variable_path()
    p.write_twin(str(tmp_path / "twin.toml"))
    side = tmp_path / "twin-down.trace.json"
    doc = json.loads(side.read_text())
    side.write_text(json.dumps(dict(doc, down_rate_p10_mbps="fast")))
    r = run_cli("advise", "--path", str(tmp_path / "twin.toml"), "--json")
    assert r.returncode == 2 and "down_rate_p10_mbps: expected a positive number" in r.stderr and "Traceback" not in r.stderr
    side.write_text("{not json")
    r = run_cli("advise", "--path", str(tmp_path / "twin.toml"), "--json")
    assert r.returncode == 2 and "twin-down.trace.json: not the measured figures" in r.stderr
    side.write_text(json.dumps(dict(doc, down_rate_variation=dict(doc["down_rate_variation"], series_mbps="x"))))
    r = run_cli("advise", "--path", str(tmp_path / "twin.toml"), "--json")
    assert r.returncode == 2 and "down_rate_variation.series_mbps" in r.stderr
    side.write_text(json.dumps(dict(doc, down_rate_variation=dict(doc["down_rate_variation"], window_s=None))))
    r = run_cli("advise", "--path", str(tmp_path / "twin.toml"), "--json")
    assert r.returncode == 2 and "down_rate_variation.window_s: expected a positive number, got None" in r.stderr


@needs_root
def test_measure_reads_a_variable_capacity_and_its_twin_weighs_cake_autorate(tmp_path):
    """Issue 31 through the emulator: the gallery's LTE-like trace behind a 500-KB modem FIFO reads as a
    variable capacity (its p10 and p90 beyond what CAKE at 95 % of the median allows: measured 0.90 and 1.16 x
    the median, against 0.95 and 1.05 plus a packet), the twin follows a fitted trace written beside it, and
    advise on that twin weighs CAKE fixed and cake-autorate. (The Starlink-like trace moves by epochs of 15 s:
    a quick measurement within one sees only its fading, 0.91-1.07 x, too close to the verdict's margin.) The
    full measurement (20 s): `--quick`'s shorter phases saw 0.91-0.93 and 1.12-1.13 x of the LTE-like trace in two
    runs of 2026-11-25 evening, at the verdict's margin (one CI run failed so); the full one 0.88 and 3.85 x."""
    trace = os.path.join(ROOT, "python", "bloatlab", "gallery", "traces", "lte-like.trace")
    def check(m):
        d = m["down"]
        assert d["limiter"] == "fifo", d.get("wifi_note")  # a trace's milliseconds are not WiFi aggregates
        v = d["rate_variation"]
        assert d["variable"], v
        assert v["p10_mbps"] < v["p50_mbps"] < v["p90_mbps"] and v["busy_windows"] >= 10

    m = measure_through(["--down", f"trace:{trace}", "--up", "10Mbit", "--rtt", "40ms", "--buffer", "500KB"],
                        ["--no-up", f"--out {tmp_path}/twin.toml"], quick=False, check=check)
    v = m["down"]["rate_variation"]
    twin = (tmp_path / "twin.toml").read_text()
    assert 'rate = "trace:twin-down.trace"' in twin and (tmp_path / "twin-down.trace").exists()
    # what measure read comes back from the file exactly (the figures beside the trace), not the trace's own
    from bloatlab.advise.path import TRACE_FIGURES

    q = Path.from_twin(str(tmp_path / "twin.toml"))
    assert {k: getattr(q, k) for k in TRACE_FIGURES} == {k: m["twin"][k] for k in TRACE_FIGURES}
    assert q.down_rate_variation == v
    r = run_cli("advise", "--path", str(tmp_path / "twin.toml"), "--current-cc", "cubic", "--json", "--duration", "10s")
    assert r.returncode == 0, r.stderr
    a = json.loads(r.stdout)
    assert {c["queue"] for c in a["alternatives"]} == {"as-is", "cake", "autorate"}
    ar = a["recommendation"]["autorate"]
    assert ar["min_mbps"] <= ar["base_mbps"] <= ar["max_mbps"] and "base_dl_shaper_rate_kbps" in ar["how"]


def test_the_ensemble_spans_the_measured_rtt_within_its_accuracy_and_its_starts_one_jiffy():
    from bloatlab._native import NS_PER_JIFFY

    assert NS_PER_JIFFY == 4_000_000  # crates/core/src/kernel.rs: HZ = 250
    # RTTs: 5 % of the RTT, at most 1 ms either side, the measured RTT in the middle member (recommend.members_of),
    # which starts at 0; the starts cover one jiffy in steps of a fifth
    m = recommend.members_of(10.0, 5)
    assert [r for r, _ in m] == pytest.approx([9.5, 9.75, 10.0, 10.25, 10.5])
    assert [s for _, s in m] == [2_400_000, 3_200_000, 0, 800_000, 1_600_000]
    assert [r for r, _ in recommend.members_of(190.0, 3)] == pytest.approx([189.0, 190.0, 191.0])
    assert recommend.members_of(40.0, 1) == [(40.0, 0)]
    # fewer members where the candidates' runs would move more than the budget's packets (odd, at least one)
    assert recommend.ensemble_size(Path(base_rtt_ms=40, down_mbps=20), 13) == recommend.ENSEMBLE
    assert recommend.ensemble_size(Path(base_rtt_ms=600, down_mbps=1000), 13) == 1
    k = recommend.ensemble_size(Path(base_rtt_ms=100, down_mbps=300), 13, 15)
    assert k % 2 == 1 and 1 < k < recommend.ENSEMBLE


def test_the_ensemble_spreads_a_fixed_wired_down_rate_over_its_measured_accuracy_and_nothing_else():
    # recommend.member_rates: evenly over 1 +- RATE_SPREAD_SHARE (1 %), the middle member the measurement itself
    assert recommend.RATE_SPREAD_SHARE == 0.01
    assert recommend.member_rates(5) == pytest.approx([0.99, 0.995, 1.0, 1.005, 1.01])
    assert recommend.member_rates(7)[3] == 1.0 and recommend.member_rates(1) == [1.0]
    assert recommend.member_rates(3, 0.0) == [1.0, 1.0, 1.0]
    fixed = recommend.simulate(Path(base_rtt_ms=20, down_mbps=5, buffer_bytes=25000),
                               recommend.Candidate("cubic", "as-is", None), duration_s=2, members=3)
    assert fixed.ranges["rate_mbps"] == pytest.approx([4.95, 5.05])
    # a member's twin is the path at its rate: the policed rate behind a policer, its port and bucket as read
    p = Path(base_rtt_ms=30, down_mbps=20, port_mbps=100, bucket_bytes=30000, limiter="policer")
    q = recommend._at_rate(p, 1.01)
    assert (q.down_mbps, q.port_mbps, q.bucket_bytes) == (pytest.approx(20.2), 100, 30000) and p.down_mbps == 20
    assert recommend._at_rate(p, 1.0) is p
    # a WiFi hop's rate is the MAC's at a PHY rate of Minstrel's table, a variable one runs its realizations
    assert not recommend._rate_spread(Path(base_rtt_ms=20, down_mbps=30, limiter="wifi", wifi_mac="fq", wifi_phy_mbps=65))
    assert recommend._rate_spread(p)


def test_a_today_whose_members_split_between_two_outcomes_is_said_with_their_range():
    """Campaign seed 104 path 7: CAKE at 88.4 Mbit/s and 103.1 ms, read as CAKE at 86.43 Mbit/s and 103.15 ms (an
    RTT spread of +- 0.017 ms). One CUBIC flow over 10.3 s ends its slow start at COBALT's first drop in one of two
    places as the rate moves: 16.0 Mbit/s on the twin at 84.7-86.4 Mbit/s, 64.4-64.8 at 86.9-88.4; the kernel on the
    true path got 64.5. advise said "against today: goodput 16 -> 63.4 Mbit/s", a gain that was not there. Over the
    measured rate's +- 1 % the members land in both outcomes, and the sentence quotes both."""
    p = Path(base_rtt_ms=103.153, down_mbps=86.4329, up_mbps=5.43603, limiter="aqm", aqm_qdisc="cake",
             base_rtt_spread_ms=0.016551)
    c = recommend.simulate(p, recommend.Candidate("cubic", "as-is", None, paced=False), duration_s=10.3153)
    lo, hi = c.ranges["goodput_mbps"]
    assert lo < 20 and hi > 60, c.ranges
    said = recommend._goodput(c)
    assert said.startswith(f"{c.goodput_mbps:.3g} (its twin's members {lo:.3g}-{hi:.3g})"), said
    # a candidate whose members agree is said as one figure
    one = recommend.Candidate("cubic", "as-is", None)
    one.goodput_mbps, one.ranges = 50.0, {"goodput_mbps": [48.0, 52.0]}
    one.p95_rtt_ms = one.p95_rtt_shared_ms = c.p95_rtt_ms
    assert recommend._goodput(one) == "50"
    # and a change from a split figure claims no multiple of it: "with 4 times the goodput" was seed 104 path 7's
    change = recommend._change(c, one)
    assert f"at a goodput of {said} -> 50 Mbit/s" in change and "times" not in change, change
    assert "with 4.2 % more goodput (48 -> 50 Mbit/s)" in recommend._change(dataclasses.replace(one, goodput_mbps=48.0), one)


def test_a_recommendation_whose_members_split_says_so_and_names_the_candidate_that_does_not():
    """Seed 101 path 48 measured by hand (CAKE at 41.4 Mbit/s, 115 ms): advise told a BBR user to run CUBIC as is,
    "CUBIC is enough here: BBR would reach 36.7 vs CUBIC's 30.3 Mbit/s", where two of its seven members gave 9.19
    and the kernel gave 9.03-9.04 in three runs; BBR's members 35.3-37.1. The reasons quote the range, and a caveat
    says what the median hides and which candidate does not split."""
    p = Path(base_rtt_ms=115.3, down_mbps=41.1, up_mbps=2.46, limiter="aqm", aqm_qdisc="cake")

    def cand(cc, g, lo, hi, score):
        c = recommend.Candidate(cc, "as-is", None, paced=False)
        c.goodput_mbps, c.ranges, c.score, c.neighbour_share = g, {"goodput_mbps": [lo, hi]}, score, 0.47
        return c

    cubic, bbr = cand("cubic", 30.3, 9.19, 30.4, 0.90), cand("bbr", 36.7, 35.3, 37.1, 0.80)
    said = recommend.split_caveat(p, cubic, [cubic, bbr])
    assert said.startswith("cubic + as is: the twin's members spread from 9.19 to 30.4 Mbit/s") and "COBALT" in said
    assert said.endswith("bbr + as is does not: 35.3-37.1 Mbit/s on every member (score 0.80)."), said
    assert said in recommend.caveats(p, cubic, [cubic, bbr])
    # no caveat where the members agree; no steadier candidate named where none beats the lower figure by 15 %,
    # and no CAKE where the bottleneck is none
    assert recommend.split_caveat(p, bbr, [cubic, bbr]) is None
    low = cand("bbr", 10.0, 9.9, 10.1, 0.5)
    fifo = dataclasses.replace(p, limiter="fifo", aqm_qdisc=None)
    plain = recommend.split_caveat(fifo, cubic, [cubic, low])
    assert "does not" not in plain and "COBALT" not in plain, plain
    # the control's reason quotes both figures' ranges, and claims no multiple of a split one
    why = " ".join(recommend.reasons(p, cubic, cubic, [cubic, bbr], [cubic, bbr]))
    assert "BBR would reach 36.7 vs CUBIC's 30.3 (its twin's members 9.19-30.4) Mbit/s" in why, why
    bbr.score, cubic.score = 0.95, 0.90
    why = " ".join(recommend.reasons(p, bbr, cubic, [cubic, bbr], [bbr, cubic]))
    assert "BBR against CUBIC here: 36.7 vs 30.3 (its twin's members 9.19-30.4) Mbit/s" in why and "x CUBIC" not in why, why


def test_the_ensemble_shrinks_to_what_its_first_members_wall_time_says_fits_advises_time():
    # recommend.members_within_time: k members cost k x the first's wall time, within ENSEMBLE_BUDGET_S (50 s)
    assert recommend.ENSEMBLE_BUDGET_S == 50.0
    assert recommend.members_within_time(7.0) == 7  # 49 s
    assert recommend.members_within_time(7.2) == 5  # 50.4 s > 50: 36 s
    assert recommend.members_within_time(10.0) == 5
    assert recommend.members_within_time(16.7) == 1  # 3 x 16.7 = 50.1 s
    assert recommend.members_within_time(16.6) == 3
    assert recommend.members_within_time(36.9) == 1  # campaign seed 8 path 16's twin at a load of 12
    assert recommend.members_within_time(0.1, 5) == 5
    assert recommend.members_within_time(1.0, 7, budget_s=2.0) == 1


def test_a_first_member_that_took_the_budget_leaves_the_ensemble_at_the_measurement_itself(monkeypatch):
    p = Path(base_rtt_ms=20, down_mbps=5, buffer_bytes=25000)
    full = recommend.simulate(p, recommend.Candidate("cubic", "as-is", None), duration_s=2)
    assert full.ranges["members"] == recommend.ENSEMBLE
    monkeypatch.setattr(recommend, "ENSEMBLE_BUDGET_S", 0.0)
    one = recommend.simulate(p, recommend.Candidate("cubic", "as-is", None), duration_s=2)
    assert one.ranges["members"] == 1 and one.ranges["rtt_ms"] == [20, 20]
    # the one member is the seven's middle one: the measured RTT, started at 0, the seed itself
    alone = recommend.simulate(p, recommend.Candidate("cubic", "as-is", None), duration_s=2, members=1)
    assert one.goodput_mbps == alone.goodput_mbps and one.p95_rtt_ms == alone.p95_rtt_ms


def test_a_multimodal_slow_start_is_predicted_by_the_ensembles_median():
    # a 62.7-Mbit/s policer on an 80.6-Mbit/s port at 190 ms (campaign seed 5, path 8): unpaced Reno behind fq_codel
    # at 59.5 Mbit/s ends its slow start in one of several modes as its start and RTT move within a millisecond; the
    # kernel on the true path (190.14 ms) got 20.2 Mbit/s and the model there 20.3. (One run of the twin at the
    # measured 190.23 ms gave 27.5 while the twin's shaped candidate put the wire at the policed rate; with the
    # policer's port behind the shaper, as on the true path, it gives 20.95, and the upper mode was a member's
    # (> 25 Mbit/s). Since the server ACKs the request at once and DRS measures a read skb by skb (issue 32, 2026-11-26)
    # the seven members all end slow start in the lower mode here: 20.80-21.04 Mbit/s, median 20.93.)
    p = Path(base_rtt_ms=190.23, down_mbps=62.7, port_mbps=80.6, bucket_bytes=228185, limiter="policer")
    c = recommend.simulate(p, recommend.Candidate("reno", "fq_codel", 59.5, paced=False), duration_s=19)
    lo, hi = c.ranges["goodput_mbps"]
    assert c.ranges["members"] == recommend.ENSEMBLE and lo <= c.goodput_mbps <= hi
    # the median within 1 Mbit/s (5 %) of the kernel's 20.2: a member in an upper mode would not move it
    assert c.goodput_mbps == pytest.approx(20.2, abs=1.0)


def test_the_quick_rate_phase_lasts_bbrs_ramp_twice_or_its_ramp_and_a_gain_cycle():
    from bloatlab.advise import plan as M_plan

    # 20 Mbit/s at 30 ms, 4 flows: 18.75 KB each, 1.29 initial windows: 1 doubling + 3 full-pipe rounds + 1 drain
    # = 5; max(10, 5 + 8) = 13 rounds, 0.39 s: the 3-s floor
    assert M_plan.bbr_rounds(20, 4, 30) == 13
    assert M_plan.bbr_phase_secs(30, 20, 4, quick=True) == 3.0
    # 100 Mbit/s at 200 ms: 625 KB a flow, 43.2 initial windows: 6 doublings, ramp 10, 20 rounds, and the 3.5
    # rounds before the flows' first data (measure.SETUP_ROUNDS) = 4.7 s
    assert M_plan.bbr_rounds(100, 4, 200) == 20
    assert M_plan.bbr_phase_secs(200, 100, 4, quick=True) == pytest.approx(4.7)
    # the 3-s floor holds up to 12 + 3.5 rounds of 194 ms (a collapsed fill's rate: no doubling)
    assert M_plan.bbr_rounds(0.456, 4, 193) == 12 and M_plan.bbr_phase_secs(193, 0.456, 4, quick=True) == 3.0
    assert M_plan.bbr_phase_secs(339.8, 0.456, 4, quick=True) == pytest.approx(15.5 * 0.3398)
    # 1000 Mbit/s at 300 ms: 9.4 MB a flow (647 windows): 10 doublings, ramp 14, 28 rounds = 8.4 s, at most 8
    # (the old rule's 20 RTTs, 6 s, started the window at round 10, inside the 14-round ramp)
    assert M_plan.bbr_rounds(1000, 4, 300) == 28
    assert M_plan.bbr_phase_secs(300, 1000, 4, quick=True) == 8.0
    assert M_plan.bbr_rounds(1000, 4, 100) == 24 and M_plan.bbr_phase_secs(100, 1000, 4, quick=True) == pytest.approx(3.0)
    # without --quick the RTT rule as before (30 RTTs, 5-10 s)
    assert M_plan.bbr_phase_secs(200, 100, 4, quick=False) == M_plan._phase_secs(200, False, fill=False) == 6.0


def test_the_fill_ends_once_saturated_not_before_its_second_half_holds_the_variations_windows():
    from bloatlab.advise import plan as M_plan

    # --quick at 20 ms: the 5-s ceiling; the load samples every 5/150 s, 2 samples = 67 ms, below the 100-ms window:
    # ten 100-ms windows in the second half, 2 s
    assert M_plan.fill_floor_s(5.0) == pytest.approx(2.0)
    # a 15-s ceiling (600 ms): 2 samples of 0.1 s = 0.2 s windows, 4 s
    assert M_plan.fill_floor_s(15.0) == pytest.approx(4.0)
    # never beyond the ceiling
    assert M_plan.fill_floor_s(1.0) == 1.0
    # and 20 packets a window, at the rate the phase runs, which the load counts: 400 segments, a steady phase's
    # half of them in its second half (at 1 Mbit/s on the wire 4.8 s, the old floor there from the port's rate)
    assert M_plan.FILL_FLOOR_PACKETS == 400
    assert M_plan.FILL_FLOOR_PACKETS * 1500 * 8 / 1e6 == pytest.approx(4.8)
    # the load's JSON: how long its phase ran and when it was saturated
    j = {"load": {"phases": [{"from_s": 1.0, "to_s": 3.4, "saturated_at_s": 1.2}]}}
    assert M_plan._loaded_s(j) == (pytest.approx(2.4), 1.2)
    assert M_plan._loaded_s({}) == (None, None)


def test_a_fills_drops_all_in_its_ramp_are_not_read_as_a_policers(monkeypatch):
    """Four CUBIC flows at 13.3 Mbit/s over 310 ms (campaign seed 49 path 6's figures, docs/advise.md "Drops in the
    ramp"): 50 retransmissions in 11280 segments, the flows' and the probes' queueing below the 10.2-ms floor. Where
    every drop came 2 s in (slow start's overshoot) and none in the window (5-10 s), the window had 25 of them to
    show (sd 3.5): the flag is false and the reading a FIFO the flows sat below; the same drops spread over the
    phase are drops without a queue: a policer."""
    from bloatlab.advise import measure as M

    def fill(ramp: bool) -> dict:
        j = _load_json(13.3e6, 310 + 0.9, 310 + 0.5, 50, 11280)
        t = j["raw"]["series"]["flows"]["t"]
        j["raw"]["series"]["flows"]["retransmits"] = [12.5 * (x >= 2.0) if ramp else 12.5 * x / 10 for x in t]
        return j

    for ramp, limiter, flag, alts in ((True, "fifo", False, ["fifo", "aqm", "policer"]),
                                      (False, "policer", True, ["policer", "fifo", "aqm"])):
        # (a Reno phase until the first loss reads a FIFO the fill never overflowed in its window again: here its
        # queue no deeper than the fill's, so the bound stays)
        phases = {"cubic": fill(ramp), "bbr": _load_json(13.5e6, 310 + 0.8, 310 + 0.5, 40, 11400), "reno": fill(ramp)}
        monkeypatch.setattr(M, "_load", lambda host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False, until_loss=False: phases[cc])
        x = M._direction("h", 1, "down", 4, 310.0, None, True, False, 0.0, lambda m: None)
        assert x["evidence"]["phase"] == "fill" and x["evidence"]["window_dropped"] is flag, x["evidence"]
        assert x["limiter"] == limiter and [a["limiter"] for a in x["limiter_alternatives"]] == alts


def test_a_fast_variable_twins_trace_fits_the_loaders_bound_and_loads(tmp_path):
    """Campaign seed 53 path 44: a Starlink-like capacity at 205 Mbit/s wrote a 120-s twin trace of 23.8 MB, over the
    16-MiB bound the scenario loader puts on a trace (files.TRACE_LIMIT), so advise refused the twin measure had
    written. The twin's trace loops: its head that fits is written, at least path.TRACE_MIN_SECONDS; a capacity
    too fast for that is a clear error."""
    from bloatlab import files, scenario as sc, traces
    from bloatlab.advise import path as M_path
    from bloatlab.errors import UserError

    # 400 Mbit/s for 120 s: ~4 M opportunities, ~27 MB of text; 50 Mbit/s: all of its 120 s
    cut = M_path.within_trace_limit([400e6] * 120_000)
    assert M_path.TRACE_MIN_SECONDS * 1000 <= len(cut) < 120_000
    assert len(M_path.within_trace_limit([50e6] * 120_000)) == 120_000
    f = tmp_path / "fast.trace"
    traces.write_mahimahi(str(f), cut)
    assert f.stat().st_size <= files.TRACE_LIMIT
    doc = {"name": "fast-twin", "duration": "1s", "link": {"down": {"rate": f"trace:{f}"}},
           "flow": [{"cc": "cubic", "rtt": "20ms"}]}
    sc.load(doc).resolved()  # loads: within the bound
    with pytest.raises(UserError, match="33 s within the 16-MiB bound"):
        M_path.within_trace_limit([3e9] * 120_000)


def _down_error(monkeypatch, j: dict, base_ms: float) -> str:
    """The error measure's down direction raises on the loaded phase ``j`` (its load replaced), at ``base_ms``."""
    from bloatlab.advise import measure as M
    from bloatlab.errors import UserError

    monkeypatch.setattr(M, "_load", lambda *a, **k: j)
    with pytest.raises(UserError) as e:
        M._direction("h", 1, "down", 4, base_ms, None, True, False, 0.0, lambda m: None)
    return str(e.value)


def _down_reading(monkeypatch, j: dict, base_ms: float) -> tuple[dict, list]:
    """Measure's down direction read from the loaded phase ``j`` (its load replaced), at ``base_ms``, and what it said."""
    from bloatlab.advise import measure as M

    monkeypatch.setattr(M, "_load", lambda *a, **k: j)
    said: list = []
    return M._direction("h", 1, "down", 4, base_ms, None, True, False, 0.0, said.append), said


def test_a_phase_whose_probes_were_lost_beside_the_load_is_read_from_its_flows(monkeypatch):
    """Campaign seed 91 path 56 (a 0.2-Mbit/s uplink with a 3000-B FIFO): the idle probes were answered, 95 % of the
    up fill's were lost beside its flows (2 replies left, the phase here a download's). The direction is read from
    the flows' own smoothed RTT (122 ms over a 2-ms base: 120 ms of queue) in the probes' place, and says so; the
    flows dropped 30 of 400 segments at that queue, which at 0.2 Mbit/s is below four flows' bursts (the floor:
    4 x 2 x 1500 B at the rate, + 3 ms): read as a policer, with a FIFO that shallow named beside it — a FIFO of
    3000 B is one."""
    from bloatlab.advise.campaign import limiter_said

    j = _load_json(0.2e6, 2 + 120, 2 + 120, 30, 400)
    j["raw"]["series"]["probes"] = {"t": [0.1, 0.2], "rtt_ms": [130.0, 131.0]}
    j["probes"] = [{"loss": 0.9485714285714286}]
    x, said = _down_reading(monkeypatch, j, 2.0)
    assert "down: 95% of the probes under load lost beside the 4 flows: the loaded queue is read from the flows' " \
           "own smoothed RTT" in "\n".join(said)
    ev = x["evidence"]
    assert ev["probes_lost"] == pytest.approx(0.9486, abs=1e-4) and ev["probe_ramp_rtt"] is None
    assert ev["probe_q95_ms"] == pytest.approx(120.0) and ev["flow_q95_ms"] == pytest.approx(120.0)
    assert x["added_delay_ms"] == pytest.approx(120.0)
    assert x["limiter"] == "policer" and x["evidence"]["burst_floor_ms"] == pytest.approx(3 + 4 * 2 * 1500 * 8 / (x["rate_mbps"] * 1e3))
    truth = {"limiter": "fifo", "observable": "fifo", "down_mbps": 0.2, "buffer_bytes": 3000}
    assert limiter_said(truth, x) and not limiter_said(dict(truth, buffer_bytes=30000), x)


def test_probes_lost_from_the_flows_first_packets_on_leave_the_flows_to_read_the_queue(monkeypatch):
    """Campaign seed 194 path 45 (a tbf at 0.2 Mbit/s up with a 3000-B FIFO): the flows' first data came at 0.265 s,
    just after the last probe answered (0.261 s), because from then on the FIFO they filled dropped 95 % of the
    probes (before, measure failed there). Read from the flows' smoothed RTT, 127.4 ms over the 2.6-ms base: without
    drops a FIFO at least 127 ms deep, 3.3 KB at the rate (the flows' p95 x the rate). Where most probes were not lost
    the flows cannot stand in: a window emptied another way is still the error that says why."""
    j = _timed_phase(0.2e6, 130.0, 130.0, secs=5.0, setup_s=0.265, grace_s=0.0)
    t = j["raw"]["series"]["probes"]["t"]
    j["raw"]["series"]["probes"]["rtt_ms"] = [r if x < 0.262 else float("nan")
                                             for x, r in zip(t, j["raw"]["series"]["probes"]["rtt_ms"])]
    j["probes"] = [{"loss": 0.9485714285714286}]
    x, _ = _down_reading(monkeypatch, j, 2.6)
    assert x["limiter"] == "fifo" and x["evidence"]["probes_lost"] == pytest.approx(0.9486, abs=1e-4)
    assert x["added_delay_ms"] == pytest.approx(127.4) and x["buffer_bytes"] == pytest.approx(127.4e-3 * x["rate_mbps"] * 1e6 / 8, abs=1)
    j["probes"] = [{"loss": 0.4}]
    msg = _down_error(monkeypatch, j, 2.6)
    assert msg.startswith("measure: down: the 4 flows' first data came 0.3 s into the 5-s loaded phase, after its last probe")


def test_a_phase_whose_flows_began_after_its_probes_says_the_round_trip_grew_not_that_probes_were_lost(monkeypatch):
    """Live seed 166 path 50 (a legacy access point beside a station at MCS 0): the up fill's flows sent their first
    data 14.0 s into the 5-s phase (their handshakes behind a round trip grown to seconds), after its last probe,
    answered in ~2.3 s where the idle path's took 78 ms. The probes were not lost: the error says the round trip
    grew under the measurement and no loaded window is left, with the figures."""
    j = _timed_phase(2e6, 5721.0, 2348.0, secs=5.0, setup_s=14.0, grace_s=0.0)
    j["probes"] = [{"loss": 0.18}]
    j["load"] = {"phases": [{"udp_rtt_ms": {"p50": 2348.0}}]}  # the load's own summary of its probes
    msg = _down_error(monkeypatch, j, 77.7)
    assert msg.startswith("measure: down: the 4 flows' first data came 14.0 s into the ")
    assert "2348 ms at the median (78 ms on the idle path before)" in msg and "round trip grew" in msg
    assert "lost" not in msg


def test_the_flows_queue_is_the_one_their_bytes_sat_in_not_a_starved_flows_stale_srtt():
    """evidence.flows_rtt: each flow's srtt percentile weighted by the bytes it delivered in the window. Four flows at
    28, 30, 200 and 460 ms: two delivered 200 KB each, two starved ones 10 KB (campaign seed 100 path 7's kernel fill
    behind PIE at 1.62 Mbit/s: 214 / 194 KB at 27-37 ms, 13 / 20 KB at 200-460 ms)."""
    from bloatlab.advise.evidence import flows_rtt, flows_srtt

    t = np.arange(0.0, 4.0, 0.01)
    n = t.size
    srtt = {0: 28.0, 1: 30.0, 2: 200.0, 3: 460.0}
    rate = {0: 50e3, 1: 50e3, 2: 2.5e3, 3: 2.5e3}  # bytes a second
    fs = {"flow": sum(([i] * n for i in range(4)), []), "t": list(t) * 4,
          "srtt_ms": sum(([srtt[i]] * n for i in range(4)), []),
          "sack_delivered_bytes": sum((list(t * rate[i]) for i in range(4)), [])}
    fid, tt = np.asarray(fs["flow"]), np.asarray(fs["t"])
    # the plain median over the flows: the middle two's mean, 115 ms
    assert float(np.median(flows_srtt(np.asarray(fs["srtt_ms"]), fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50))) == 115.0
    # weighted: the flows' figures (28, 30, 200, 460 ms) at the middles of their shares of the bytes (weights 50,
    # 50, 2.5, 2.5: 0.238, 0.714, 0.964, 0.988), read at half: between the two live flows, 29.1 ms
    w = np.array([50e3, 50e3, 2.5e3, 2.5e3]) * (3.99 - 2.0)
    pos = (np.cumsum(w) - w / 2) / w.sum()
    assert flows_rtt(fs, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50) == pytest.approx(float(np.interp(0.5, pos, [28, 30, 200, 460])))
    assert flows_rtt(fs, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50) == pytest.approx(28.0 + 2.0 * (0.5 - pos[0]) / (pos[1] - pos[0]))
    assert flows_rtt(fs, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50) == pytest.approx(29.1)
    assert flows_rtt(fs, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50) < 40.0
    # equal shares (flow isolation's DRR): the plain median
    eq = dict(fs, sack_delivered_bytes=list(t * 10e3) * 4)
    assert flows_rtt(eq, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50) == pytest.approx(115.0)
    # no counter (an older probe's series): the plain median; a flow that delivered nothing weighs nothing
    assert flows_rtt({k: v for k, v in fs.items() if k != "sack_delivered_bytes"}, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 50) == 115.0
    still = dict(fs, sack_delivered_bytes=sum((list(t * (rate[i] if i != 3 else 0.0)) for i in range(4)), []))
    assert flows_rtt(still, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 95) < flows_rtt(fs, fid, tt, [0, 1, 2, 3], 2.0, 4.0, 95)
    assert np.isnan(flows_rtt(fs, fid, tt, [7], 2.0, 4.0, 50))


def test_idle_probes_that_never_came_back_are_sent_again_slowly_to_tell_no_server_from_a_standing_queue(monkeypatch):
    """Campaign seed 138 path 3: a legacy access point whose one 1.68-MB FIFO another station's download kept full
    answered none of measure's first 100 idle probes within their 1-s timeout, and measure said "is the server
    running?". A few probes waited for 5 s each now tell the two apart: answered late, the message gives the idle
    round trip and its cause; unanswered, the server question stands."""
    from bloatlab.advise import measure as M

    none = {"probes": [{"id": 0, "loss": 1.0, "rtt_ms": {"p50": None}}]}
    late = {"probes": [{"id": 0, "loss": 0.1, "rtt_ms": {"p50": 1312.0}}]}
    asked = []

    def probe(args, timeout, who="measure", partial=False):
        asked.append(args)
        return none if len(asked) == 1 else answer

    monkeypatch.setattr(M, "_probe", probe)
    for answer, said, why in ((late, "answers, but its idle round trip is 1.31 s", "a queue that other traffic keeps full"),
                              (none, "no UDP echo from 10.77.0.2:5301 within 5 s", "is `bloatlab-probe server` running")):
        asked.clear()
        with pytest.raises(M.UserError, match=said) as e:
            M._measure("10.77.0.2", 5301, True, 4, True, None, False)
        assert why in str(e.value) and len(asked) == 2 and asked[1][asked[1].index("--timeout") + 1] == "5s", asked
