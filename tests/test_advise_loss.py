"""Random loss below what the idle probes resolve (issue 30: "random loss
within 50 % where >= 0.5 %", and the twin's goodput on lossy high-BDP
paths): `measure` paces more echo probes before the loads where the idle
ones cannot rule out a loss that would hold one flow below the path's rate
(docs/advise.md, "Random loss"). Exact values of the plan and the pooling;
one emulated path (root)."""

import math

import pytest

from bloatlab.advise import measure as m
from bloatlab.advise import physics as m_physics
from bloatlab.advise import plan as m_plan


def ser_ms(down_mbps, up_mbps):
    """The small idle probes' serialization across both ports (ms), as serialization_ms reads it."""
    return m_physics.PROBE_WIRE * 8 * (1 / (down_mbps * 1e6) + 1 / (up_mbps * 1e6)) * 1e3


def test_the_upper_bound_is_clopper_pearsons():
    # no loss in n: (1 - p)^n = 0.05 exactly
    assert m_physics.loss_upper(0, 300) == pytest.approx(1 - 0.05 ** (1 / 300), rel=1e-9)
    # one loss in 300: P(X <= 1) = 0.05 at the bound
    p = m_physics.loss_upper(1, 300)
    assert (1 - p) ** 300 + 300 * p * (1 - p) ** 299 == pytest.approx(0.05, rel=1e-6)
    assert m_physics.loss_upper(0, 0) == 1.0 and m_physics.loss_upper(5, 5) == 1.0
    assert m_physics.one_way(0.0199) == pytest.approx(1 - math.sqrt(1 - 0.0199))


def test_a_stream_where_an_unseen_loss_would_hold_one_flow_below_the_rate():
    # seed 7 path 15's kind: 239 Mbit/s down at 126 ms; 300 idle probes without loss bound it only below 0.5 %
    pps, count, why = m_plan.loss_stream_plan(0, 300, ser_ms(239, 24), 125.6, wifi=False, quick=True)
    rate = 1 / (1 / 239 + 1 / 24)
    assert pps == int(m_plan.LOSS_STREAM_SHARE * rate * 1e6 / (m_physics.PROBE_WIRE * 8))
    assert count == int(pps * m_plan.LOSS_STREAM_S[0])
    assert "above the" in why
    # behind a WiFi hop at most 300 a second; a fast path at most 5000; the full measure streams twice as long
    assert m_plan.loss_stream_plan(0, 300, ser_ms(239, 24), 125.6, wifi=True, quick=True)[0] == m_plan.LOSS_STREAM_WIFI_PPS
    assert m_plan.loss_stream_plan(0, 500, ser_ms(1000, 1000), 10, wifi=False, quick=False)[:2] == (5000, 20000)


def test_the_streams_loss_is_weighed_at_the_downloads_rate_its_pace_at_the_slower_ports():
    """Campaign seed 49 path 60: 431 Mbit/s down, 23.5 up, 2.4 ms, 0.088 % random loss; 100 idle probes lost none.
    The serialization's R (22.3 Mbit/s) alone holds a flow only from 6.6 % and skipped the stream; the idle train's
    head (291 Mbit/s) from 0.04 %: the stream runs, paced at R's share."""
    ser = ser_ms(431, 23.5)
    pps, _, why = m_plan.loss_stream_plan(0, 100, ser, 2.4, wifi=False, quick=True)
    assert pps is None and "under 22.3 Mbit/s" in why
    pps, count, why = m_plan.loss_stream_plan(0, 100, ser, 2.4, wifi=False, quick=True, down_mbps=291.3)
    rate = 1 / (1 / 431 + 1 / 23.5)
    assert pps == int(m_plan.LOSS_STREAM_SHARE * rate * 1e6 / (m_physics.PROBE_WIRE * 8)) and count == int(pps * 2)
    assert "under 291 Mbit/s" in why
    # a train no faster than R changes nothing
    assert m_plan.loss_stream_plan(0, 100, ser, 2.4, wifi=False, quick=True, down_mbps=5.0)[0] is None


def test_the_drops_the_stream_shows_as_random_loss_read_as_no_policer_on_path_60s_stored_evidence():
    """Campaign seed 49 path 60 (fq_codel at 430.7 Mbit/s, 2.37 ms, 0.088 % random loss) as stored, from a
    measurement that skipped the stream: the CUBIC fill retransmitted 164 of 180217 segments (0.091 %) with the
    flows' queue at 3.73 ms (p95), below CoDel's 5-ms target, the probe's at 0.22. With the loss unseen (0) those are
    drops without a queue, a policer; with the 0.117 % each way the stream read through the emulator (7 of 2992 round
    trips) they are the path's random loss (211 expected), and the flows' wait above the probe's is flow
    isolation: fq_codel's, the truth."""
    from bloatlab.advise import classify as m_classify

    ev = dict(probe_q95=0.2155460116766461, flow_q50=1.1189996616766464, flow_q95=3.729674661676647,
              rate_mbps=430.96189738333004, flows=4, rtt_ms=3.585, loss_rate_mbps=429.4315588017938)
    assert m_physics._significant(164, 180217, 0.0, handful=3)
    assert m_classify.classify(dropped=True, loss=0.0009100140386312057, **ev) == "policer"
    loss = m_physics.one_way(7 / 2992)
    assert round(loss * 100, 3) == 0.117 and not m_physics._significant(164, 180217, loss)
    assert m_classify.classify(dropped=False, loss=0.0, **ev) == "aqm"


def test_no_stream_where_the_idle_probes_already_tell_or_the_loss_cannot_matter():
    # 10 / 1 Mbit/s at 20 ms: one flow meets the idle probes' 0.5 % bound at 0.91 Mbit/s anyway
    pps, _, why = m_plan.loss_stream_plan(0, 300, ser_ms(10, 1), 20, wifi=False, quick=True)
    assert pps is None and "below the" in why
    # 16 losses: the idle count is within 50 % already
    assert m_plan.loss_stream_plan(16, 300, ser_ms(239, 24), 125.6, wifi=False, quick=True)[0] is None
    assert m_plan.loss_stream_plan(15, 300, ser_ms(239, 24), 125.6, wifi=False, quick=True)[0] is not None
    # no serialization read: nothing to pace by
    assert m_plan.loss_stream_plan(0, 300, None, 125.6, wifi=False, quick=True)[0] is None


def test_the_stream_is_pooled_with_the_idle_probes_unless_it_lost_more_than_they_allow(monkeypatch):
    def report():
        return {"base_rtt_ms": {"p50": 100.0}, "loss": 0.0, "loss_round_trip": 0.0, "loss_idle": {"sent": 300, "lost": 0}}

    seen = []
    monkeypatch.setattr(m, "_probe", lambda args, timeout: seen.append(args) or {"udp": {"sent": 3000, "lost": 12}})
    r = report()
    m._loss_stream("h", 1, None, r, ser_ms(100, 100), False, True, lambda s: None)
    assert r["loss_round_trip"] == 12 / 3300 and r["loss"] == m_physics.one_way(12 / 3300)
    assert r["loss_upper"] == m_physics.one_way(m_physics.loss_upper(12, 3300)) and r["loss_stream"]["lost"] == 12
    assert seen[0][seen[0].index("--send-interval") + 1] == f"{1e6 / r['loss_stream']['pps']:.0f}us"
    # 10 % lost: far above the idle probes' 1 % bound, and beyond chance, each loss alone (a policer below the
    # pace drops a steady share): not the path's random loss, whether or not the losses' order is known
    for runs in ([[1, 300]], None):
        udp = {"sent": 3000, "lost": 300} | ({"loss_runs": runs} if runs else {})
        monkeypatch.setattr(m, "_probe", lambda args, timeout: {"udp": udp})
        r = report()
        m._loss_stream("h", 1, None, r, ser_ms(100, 100), False, True, lambda s: None)
        assert r["loss"] == 0.0 and "not the path's random loss" in r["loss_stream"]["discarded"]
        assert "beyond what chance" in r["loss_stream"]["discarded"]


def test_a_stream_above_the_idle_probes_bound_is_kept_where_its_losses_come_alone_within_chance(monkeypatch):
    """Campaign seed 84 path 11 (a 10.3-Mbit/s policer with 1 % random loss each way, 2.0 % of round trips): the
    idle probes lost 2 of 300 (their bound 2.1 %), the stream 26 of 1004 (2.6 %), each loss alone. Discarded
    before (the loss read 0.33 % each way); Fisher's p 0.027 is chance at the 1/1000 level and 26 lone losses are
    what independent loss gives: pooled, 28 of 1304. The same count in two runs of 13 (a pause, a queue
    overflowing) is not the path's random loss."""
    def report():
        return {"base_rtt_ms": {"p50": 22.5}, "loss": 0.0, "loss_round_trip": 0.0, "loss_idle": {"sent": 300, "lost": 2}}

    monkeypatch.setattr(m, "_probe", lambda args, timeout: {"udp": {"sent": 1004, "lost": 26, "loss_runs": [[1, 26]]}})
    r = report()
    m._loss_stream("h", 1, None, r, ser_ms(100, 100), False, True, lambda s: None)
    assert "discarded" not in r["loss_stream"] and "one by one" in r["loss_stream"]["kept"]
    assert r["loss_round_trip"] == 28 / 1304 and r["loss_stream"]["beyond_idle_p"] == pytest.approx(0.0273, abs=1e-4)
    assert r["loss_stream"]["clustered_p"] == 1.0
    monkeypatch.setattr(m, "_probe", lambda args, timeout: {"udp": {"sent": 1004, "lost": 26, "loss_runs": [[13, 2]]}})
    r = report()
    m._loss_stream("h", 1, None, r, ser_ms(100, 100), False, True, lambda s: None)
    assert "came in runs" in r["loss_stream"]["discarded"] and r["loss_round_trip"] == 0.0
    # a stream whose losses' order is not known (neither counted nor in its series) cannot show them alone
    monkeypatch.setattr(m, "_probe", lambda args, timeout: {"udp": {"sent": 1004, "lost": 26}})
    r = report()
    m._loss_stream("h", 1, None, r, ser_ms(100, 100), False, True, lambda s: None)
    assert "order is not known" in r["loss_stream"]["discarded"]


def test_the_losses_runs_of_a_recording_without_them_come_from_the_answered_probes_send_times():
    # every 2 ms; 3 lost alone and 2 in a row: gaps of 2, 2, 2 and 3 intervals
    t = [0.000, 0.002, 0.006, 0.008, 0.012, 0.014, 0.018, 0.024, 0.026]
    res = {"udp": {"lost": 5}, "raw": {"series": {"probes": {"t": t}}}}
    assert m.stream_loss_runs(res, 5, 0.002) == [(1, 3), (2, 1)]
    # gaps that do not account for the count: not known
    assert m.stream_loss_runs(res, 6, 0.002) is None
    assert m.stream_loss_runs({"udp": {"lost": 2, "loss_runs": [[2, 1]]}}, 2, 0.002) == [(2, 1)]


def test_independent_losses_rarely_follow_one_another_and_fishers_test_is_exact():
    # 26 lone losses of 1004: no follow-up, p = 1; 26 in runs of 13: 24 follow-ups at a 2.6 % rate
    assert m_physics.losses_cluster_p([(1, 26)], 26, 1004) == 1.0
    assert m_physics.losses_cluster_p([(13, 2)], 26, 1004) < 1e-30
    # one follow-up among 26 at 2.6 %: P(X >= 1), X ~ Binomial(25, 26/1004)
    assert m_physics.losses_cluster_p([(1, 24), (2, 1)], 26, 1004) == pytest.approx(1 - (1 - 26 / 1004) ** 25)
    # Fisher's one-sided test (scipy.stats.fisher_exact's figures for these tables)
    assert m_physics.more_lost_than(26, 1004, 2, 300) == pytest.approx(0.0273244, rel=1e-5)
    assert m_physics.more_lost_than(17, 996, 1, 300) == pytest.approx(0.0549722, rel=1e-5)
    assert m_physics.more_lost_than(0, 1000, 3, 300) == 1.0
    assert m_physics.binomial_sf(0, 10, 0.5) == 1.0 and m_physics.binomial_sf(10, 10, 0.5) == pytest.approx(0.5 ** 10)


needs_root = pytest.mark.skipif(__import__("os").geteuid() != 0 or not __import__("os").path.exists("/dev/net/tun"),
                                reason="measure tests need root and /dev/net/tun (emulated paths)")


@needs_root
def test_measure_finds_a_random_loss_the_idle_probes_do_not_see():
    from test_advise import measure_through

    # 0.3 % each way, 50 Mbit/s both ways at 80 ms, a 1-BDP FIFO: 300 idle probes expect 1.8 round-trip losses,
    # the stream (5 % of 25 Mbit/s: 1698 a second for 2 s) 20 more: the pooled count is within 50 % with
    # probability > 0.99 (Poisson, lambda 22); the verdicts weigh the flows' drops against it (before, an unseen
    # 0.2 % had CUBIC's fill collapse and read a policer, then PIE)
    def check(m_):
        assert "sent" in m_["loss_stream"], m_["loss_stream"]
        assert m_["loss"] == pytest.approx(0.003, rel=0.5), (m_["loss"], m_["loss_idle"], m_["loss_stream"])
        assert m_["down"]["limiter"] == "fifo", m_["down"]

    measure_through(["--down", "50Mbit", "--up", "50Mbit", "--rtt", "80ms", "--loss", "0.3%", "--buffer", "1bdp"],
                    ["--no-up"], check=check)


def test_the_idle_medians_interval_is_the_order_statistics_around_the_middle():
    # n = 100: ranks 50 -+ 1.96 x 10 / 2 = 40.2 .. 59.8, widened to whole ranks: the 41st and 61st smallest
    x = list(range(100, 0, -1))
    assert m_physics.median_ci_ms(x) == (41.0, 61.0)
    # n = 300: 150 -+ 16.97: the 134th and 168th smallest; lost probes (NaN, None) left out
    assert m_physics.median_ci_ms([float(i) for i in range(1, 301)] + [float("nan")]) == (134.0, 168.0)
    assert m_physics.median_ci_ms([None, 5.0, None]) == (5.0, 5.0)


def test_the_idle_probes_stop_after_the_first_hundred_where_the_median_and_the_loss_are_told():
    def spread(base, ms):
        # 100 RTTs evenly over base .. base + ms: the 41st and 61st smallest lie ms x 20/99 apart
        return [base + ms * i / 99 for i in range(100)]

    # at 10 ms the goal is 1 ms (5 % is less), half of it either side: 4 ms of spread gives +-0.40 ms, 6 ms +-0.61
    more, why = m_plan.idle_plan(spread(10, 4), 0, stream=False)
    assert not more and "+-0.4 ms" in why and "within half the goal's 1 ms" in why
    more, why = m_plan.idle_plan(spread(10, 6), 0, stream=False)
    assert more and "wider than +-0.5 ms" in why
    # at 400 ms the goal is 5 % (22.25 ms at the median 445): 90 ms of spread, +-9.1 ms, stops; 130 ms (+-13.1
    # against 11.6) does not
    assert m_plan.idle_plan(spread(400, 90), 0, stream=False)[0] is False
    assert m_plan.idle_plan(spread(400, 130), 0, stream=False)[0] is True
    # a loss seen and unresolved (fewer than LOSS_RESOLVED): more probes; resolved: none
    assert m_plan.idle_plan(spread(20, 1), 3, stream=False)[0] is True
    assert m_plan.idle_plan(spread(20, 1), m_plan.LOSS_RESOLVED, stream=False)[0] is False
    # a loss stream follows: the rest go beside it (its losses weighed against all 300), however tight the median
    more, why = m_plan.idle_plan(spread(20, 1), 0, stream=True)
    assert more and "beside it" in why
    # nothing to take a median of
    assert m_plan.idle_plan([None, 20.0], 1, stream=True)[0] is True


def test_the_replay_marks_a_stored_measurement_that_skipped_the_stream_todays_code_paces():
    """bench/advise/replay.py reads stored measurements with today's code but cannot send what they did not: campaign
    seed 49 path 60's measurement skipped the stream (its plan weighed the loss at R, 22.3 Mbit/s); today's weighs it
    at the idle train's head, 291.3 Mbit/s, and paces 3032 probes at 1516 a second. The replay marks the direction
    (``loss_stream`` among its ``needs_train``) instead of reading it as today's code would after that stream."""
    import os
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(repo, "bench", "advise"))
    try:
        from replay import stream_not_stored
    finally:
        sys.path.pop(0)
    report = {"base_rtt_ms": {"min": 2.4400773383233534, "p50": 2.4660003383233535,
                              "serialization_ms": 0.032977661676646695},
              "loss_idle": {"sent": 100, "lost": 0},
              "loss_stream": {"skipped": "the idle probes bound the loss below 1.5 % each way, below the 6.6 % that "
                                         "would hold one flow under 22.3 Mbit/s"},
              "down": {"wifi_train": {"leading_mbps": 291.31315871785125, "sender_limited": True,
                                      "batches": {"count": 2, "packets_max": 1, "packets_p50": 1.0,
                                                  "period_ms_p50": 0.03, "periods_ms": [0.03], "sizes": [1, 1]}}}}
    why = stream_not_stored(report)
    assert why.startswith("3032 probes at 1516 a second") and "under 291 Mbit/s" in why
    # a stream that ran, or none today's code would pace (the head no faster than R), is not marked
    assert stream_not_stored(dict(report, loss_stream={"sent": 3032, "lost": 3})) is None
    slow = dict(report, down={"wifi_train": dict(report["down"]["wifi_train"], leading_mbps=5.0)})
    assert stream_not_stored(slow) is None


def test_the_loss_bounds_are_clopper_pearsons_two_sides():
    """loss_lower and loss_upper are the two one-sided 95 % Clopper-Pearson bounds: at each, seeing the count (or
    more, or fewer) has probability 5 %; none lost bounds nothing from below."""
    lo, hi = m_physics.loss_lower(6, 10000), m_physics.loss_upper(6, 10000)
    assert m_physics.binomial_sf(6, 10000, lo) == pytest.approx(0.05, rel=1e-6)
    assert 1 - m_physics.binomial_sf(7, 10000, hi) == pytest.approx(0.05, rel=1e-6)
    assert lo < 6 / 10000 < hi
    # the textbook value: 1 of 100 lost, the lower bound 1 - 0.95^(1/100) = 0.0513 %
    assert m_physics.loss_lower(1, 100) == pytest.approx(1 - 0.95 ** 0.01, rel=1e-6)
    assert m_physics.loss_lower(0, 100) == 0.0


def test_cubic_loss_is_the_larger_of_rfc_9438s_two_regions():
    """The loss that holds CUBIC flows at a rate: at a small window Reno's (the TCP-friendly region, Mathis),
    at a large one the cubic region's, RTT x (C (3 + beta) / (4 (1 - beta)))^(1/3) / W^(4/3)."""
    # 100 Mbit/s, 4 flows, 20 ms: W = 43.16 segments; Reno's 1.5 / W^2 = 0.0805 %, the cubic region's 0.0141 %
    w = 100e6 / 4 * 0.020 / (m_physics.MSS * 8)
    assert m_physics.cubic_loss(100, 4, 20) == pytest.approx(1.5 / w ** 2, rel=1e-9)
    # 209 Mbit/s, 4 flows, 178 ms: W = 803; the cubic region's 0.178 x 1.0726 / 803^(4/3) = 2.56e-5 (Reno's 2.3e-6)
    w = 209e6 / 4 * 0.178 / (m_physics.MSS * 8)
    k = (0.4 * (3 + 717 / 1024) / (4 * (1 - 717 / 1024))) ** (1 / 3)
    assert k == pytest.approx(1.0726, abs=1e-4)
    assert m_physics.cubic_loss(209, 4, 178) == pytest.approx(0.178 * k / w ** (4 / 3), rel=1e-9)
    assert m_physics.cubic_loss(209, 4, 178) > 10 * m_physics.mathis_loss(209, 4, 178)


def test_a_fill_is_bbr_where_the_random_loss_holds_cubic_below_the_port():
    """Campaign seed 146 path 49 (fq_codel at 518 Mbit/s, 3.6 ms, 0.27 % random loss): 56 of 10 300 idle round
    trips lost (the idle probes' and the loss stream's), the idle train's head (the server's pace) 373 Mbit/s. The
    loss's lower bound, 0.215 % each way, is above the 0.178 % at which four CUBIC flows reach 373 Mbit/s: the fill
    is BBR's (it ran CUBIC for its 5-s ceiling at 257 Mbit/s with no queue, then 3.4 s of BBR, each way). Seed 146
    path 58's loss, 5 of 930 at 62.6 Mbit/s over 13.5 ms, lets them reach it (0.11 % against 0.45 %): CUBIC. From
    LOSSY up every fill is BBR's; with no loss or no port, CUBIC's."""
    loss = m_physics.one_way(56 / 10300)
    lossy, why = m_plan.fill_plan(loss, 56, 10300, 373.3, 4, 3.6)
    assert lossy and "holds 4 CUBIC flows below the 373.3 Mbit/s" in why
    low = m_physics.one_way(m_physics.loss_lower(56, 10300))
    assert low == pytest.approx(0.00215, abs=1e-5) and m_physics.cubic_loss(373.3, 4, 3.6) == pytest.approx(0.00178, abs=1e-5)
    lossy, why = m_plan.fill_plan(m_physics.one_way(5 / 930), 5, 930, 62.6, 4, 13.5)
    assert not lossy and "lets 4 CUBIC flows reach 62.6 Mbit/s" in why
    assert m_plan.fill_plan(0.006, 60, 10000, 1.0, 4, 5.0)[0]
    assert m_plan.fill_plan(0.0, 0, 10000, 373.3, 4, 3.6) == (False, "no random loss")
    assert not m_plan.fill_plan(loss, 56, 10300, None, 4, 3.6)[0]


def test_where_no_loss_was_seen_the_reading_says_how_much_its_probes_could_not_exclude(monkeypatch, tmp_path):
    """Campaign seed 185 path 44 (CAKE at 3.47 Mbit/s, 456 ms, 0.24 % random loss each way): 100 idle probes lost
    none and the stream was skipped (5 % of the 0.26-Mbit/s up rate would have added 34): the reading was "no
    random loss", the twin ran without it and its CUBIC got 75 % more than the kernel's. 0 of 100 round trips
    excludes no loss below 2.95 % of round trips (the one-sided 95 % bound), 1.5 % each way: the report, the twin's
    words and the file beside the twin carry that bound; a loss read is its own figure (no bound in the words)."""
    from bloatlab.advise.path import Path, measured_file
    from bloatlab.errors import UserError

    def report():
        return {"base_rtt_ms": {"p50": 456.0}, "loss": 0.0, "loss_round_trip": 0.0, "loss_idle": {"sent": 100, "lost": 0}}

    monkeypatch.setattr(m, "_probe", lambda args, timeout: pytest.fail("a skipped stream sends nothing"))
    r = report()
    # no serialization read: the stream is skipped (loss_stream_plan), as seed 185 path 44's was for its count
    m._loss_stream("h", 1, None, r, None, False, True, lambda s: None)
    assert "skipped" in r["loss_stream"] and r["loss"] == 0.0
    assert r["loss_upper"] == m_physics.one_way(m_physics.loss_upper(0, 100))
    assert round(r["loss_upper"] * 100, 2) == 1.49
    p = Path(base_rtt_ms=456.0, down_mbps=3.22, limiter="aqm", loss_upper=r["loss_upper"])
    assert "no random loss seen (at most 1.5 % each way)" in p.describe()
    twin = str(tmp_path / "twin.toml")
    p.write_twin(twin)
    assert Path.from_twin(twin).loss_upper == r["loss_upper"]
    # a loss read: its figure, no bound
    assert "0.24 % random loss" in Path(base_rtt_ms=456.0, down_mbps=3.22, loss=0.0024, loss_upper=0.015).describe()
    # a file beside the twin whose bound is not a loss rate: a clear error naming the file and the key
    with open(measured_file(twin), "w") as f:
        f.write('{"loss_upper": 2}')
    with pytest.raises(UserError, match="loss_upper: expected a loss rate from 0 to 1"):
        Path.from_twin(twin)
