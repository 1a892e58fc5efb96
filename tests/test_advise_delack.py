"""The isolation rule and the receiver's ACK (issue 30; docs/advise.md, "The
receiver's ACK wait"): a flow's RTT sample waits for the receiver's ACK — for
a pair's second segment, or for the delayed-ACK timer — and a probe's echo
does not, so the flows' smoothed RTT exceeds the probe's with no queue of
their own. Exact values of the bound (measure.ack_wait_ms, from Linux's
TCP_DELACK_MIN / TCP_DELACK_MAX and the flows' spacing) and the verdicts on
the stored evidence of the campaign's paths (`/work/campNN/paths/NNNN/
measure.json`, the down direction's `evidence`, its rate and flows)."""

import pytest

from bloatlab.advise import classify as m_classify
from bloatlab.advise import physics as m_physics


def test_the_ack_wait_is_the_flows_spacing_cut_at_the_delayed_ack_timer():
    s = 4 * 1500 * 8 / 20e6 * 1e3  # 4 flows sharing 20 Mbit/s (on the wire): a flow's 1500-B segment every 2.4 ms
    assert m_physics.ack_wait_ms(20, 4, 40) == pytest.approx(s)
    # a burst a round trip (the bottleneck idled): an odd last segment on the timer, one sample of w / 2;
    # D = max(40 ms, RTT) = 40 at 40 ms, so 2 D s / RTT = 2 s
    assert m_physics.ack_wait_ms(20, 4, 40, idle=True) == pytest.approx(2 * s)
    assert m_physics.ack_wait_ms(20, 4, 400, idle=True) == pytest.approx(s)  # RTT >= 2 D (D = 200 ms): the spacing's
    # one flow at 0.1 Mbit/s: a segment every 120 ms, cut at the timer: 40 ms at 20 ms (TCP_DELACK_MIN, above the
    # srtt bound), the spacing at 130 ms (the timer's srtt bound above it), the RTT itself at 60 ms, and 200 ms
    # (TCP_DELACK_MAX) at 300 ms for a segment every 1.2 s
    assert m_physics.ack_wait_ms(0.1, 1, 20) == pytest.approx(40.0)
    assert m_physics.ack_wait_ms(0.1, 1, 130) == pytest.approx(1500 * 8 / 0.1e6 * 1e3)
    assert m_physics.ack_wait_ms(0.1, 1, 60) == pytest.approx(60.0)
    assert m_physics.ack_wait_ms(0.01, 1, 300) == pytest.approx(200.0)
    assert m_physics.ack_wait_ms(1000, 4, 40) == pytest.approx(4 * 1500 * 8 / 1e9 * 1e3)  # 48 us: nothing at a fast port


# (probe_q95, flow_q50, flow_q95, dropped, bottleneck rate, excess loss, loaded RTT, the evidence phase's rate);
# campaign seed 28 (code f29571f), read as flow isolation before
@pytest.mark.parametrize("ev, truth", [
    # path 16: a tbf at 6.9 Mbit/s, 55 ms, a 3.3-KB queue; BBR's phase: the flows 7.5 ms above the probe at the
    # median, within the 7.0-ms spacing of 4 flows and the noise; their p95 below the burst floor (17.1 ms)
    ((4.5606, 12.0198, 16.0254, True, 6.8176, 0.1331, 67.1883, 6.8176), "policer"),
    # path 18: a 7.1-Mbit/s policer (2.8-ms bucket) at 340 ms: 4 CUBIC flows collapsed to 0.46 Mbit/s, 3.5
    # segments a flow a round trip, while BBR's phase got 3.57: the fill's bottleneck idled
    ((0.3729, 16.9186, 30.4096, True, 3.5669, 0.1706, 356.754, 0.4564), "policer"),
    # path 19: a 3.9-Mbit/s policer at 48 ms with 1.25 % random loss (a BBR fill): 4.9 ms above the probe, within the
    # 12-ms spacing of 4 flows at 3.9 Mbit/s
    ((2.0511, 6.9752, 13.3952, True, 3.8771, 0.1975, 55.6355, 3.8771), "policer"),
])
def test_a_policer_and_a_tbf_whose_flows_wait_for_their_acks_are_not_read_as_isolation(ev, truth):
    probe, q50, q95, dropped, rate, loss, rtt, phase = ev
    assert m_classify.classify(probe, q50, q95, dropped, rate, 4, loss, rtt, phase) == truth


@pytest.mark.parametrize("ev", [
    (1.3702, 13.9093, 16.5101, True, 9.4901, 0.0336, 26.2835, 9.4901),     # seed 8 path 0: fq_codel 9.6 Mbit/s
    (7.6942, 35.7349, 39.2079, True, 2.0427, 0.2653, 43.744, 2.0333),      # seed 8 path 1: CAKE 2.1 Mbit/s
    (26.7199, 54.6622, 69.4806, True, 1.5234, 0.1762, 74.7595, 1.5181),    # seed 8 path 7: fq_codel 1.6 Mbit/s
    (39.2441, 51.5173, 88.8962, True, 1.1586, 0.1956, 83.3685, 1.1586),    # seed 9 path 1: fq_codel 1.2 Mbit/s
    (9.7509, 45.7746, 50.3878, True, 1.765, 0.2711, 50.53, 1.765),         # seed 28 path 4: CAKE 1.8 Mbit/s
    (4.6086, 28.1783, 34.1884, True, 3.2989, 0.0959, 42.4265, 3.2989),     # seed 26 path 1: CAKE 3.4 Mbit/s
    (2.2446, 53.0582, 429.2087, True, 11.8984, 0.1628, 361.088, 11.8984),  # seed 28 path 22: fq_codel 13 Mbit/s, 308 ms
])
def test_flow_isolation_at_slow_rates_still_exceeds_the_ack_wait(ev):
    probe, q50, q95, dropped, rate, loss, rtt, phase = ev
    assert m_classify.classify(probe, q50, q95, dropped, rate, 4, loss, rtt, phase) == "aqm"


def test_a_phase_whose_bottleneck_idled_shows_no_backlog():
    """The same figures as isolation, once from a phase that kept the
    bottleneck busy and once from one that delivered a fifth of the rate
    another phase got (below 1 / UNSATURATED): no backlog stands at an idle
    bottleneck, so the second is not isolation (with drops: the policer's
    reading, which names the FIFO and the AQM it cannot exclude)."""
    assert m_classify.classify(1.0, 20.0, 30.0, True, 5.0, 4, 0.05, 100.0, 5.0) == "aqm"
    assert m_classify.classify(1.0, 20.0, 30.0, True, 5.0, 4, 0.05, 100.0, 1.0) == "policer"
    assert m_classify.classify(1.0, 20.0, 30.0, False, 5.0, 4, 0.0, 100.0, 1.0) == "fifo"
    # exactly 1 / UNSATURATED of the rate is idle; above it, not
    assert m_classify.classify(1.0, 20.0, 30.0, True, 5.0, 4, 0.05, 100.0, 4.0) == "policer"
    assert m_classify.classify(1.0, 20.0, 30.0, True, 5.0, 4, 0.05, 100.0, 4.01) == "aqm"


def test_cake_at_one_mbit_is_within_the_ack_wait_and_the_reading_names_it():
    """The campaign's development seed (seed 1): CAKE at 1.05 Mbit/s, 186
    ms, 4 flows, read as isolation by the flows' median 65.1 ms against the
    probe's 14.2 ms (tests/test_advise.py kept it until this rule). DRR
    serves one 1500-B packet of each flow a round: a flow's segments come
    4 x 12 ms = 48 ms apart, and each first segment's ACK waits that for
    its pair (below the 186-ms timer): 65.1 - 48.0 - 14.2 = 2.9 ms, within
    the noise (3). The flows' p95 (81.5 ms) stays below the burst floor (99
    ms at 1 Mbit/s), so the reading is the policer's, whose alternatives name
    an AQM with a target below the floor (CAKE's 5 ms): said, not guessed;
    measure's packet trains then look for the port and the AQM's burst."""
    assert m_physics.ack_wait_ms(1.0, 4, 186) == pytest.approx(48.0)
    assert m_classify.classify(14.23, 65.1, 81.46, True, 1.0, 4, 0.148, 186) == "policer"
    assert {"limiter": "aqm", "target_below_ms": pytest.approx(99.0)} in m_classify.alternatives("policer", 1.0, 4)
