"""Queues in whole scenarios (simulator): bufferbloat and its cures, the
policer and the shaper, DCTCP's step marking. Tolerances are justified next to
each assertion; every run is seeded."""

import pytest

import bloatlab

BASE_RTT = 50.0


def ndown(qdisc: str, params: str = "", duration: str = "30s"):
    """4 CUBIC downloads and a UDP latency probe on 10 Mbit/s, 50 ms (seed 000's tcp_ndown)."""
    return bloatlab.run(f"""
name = "ndown-{qdisc}"
duration = "{duration}"
[link.down]
rate = "10Mbit"
buffer = "1000pkt"
qdisc = "{qdisc}"
{params}
[link.up]
rate = "10Mbit"
[[flow]]
cc = "cubic"
rtt = "{BASE_RTT:g}ms"
count = 4
[[probe]]
kind = "udp"
interval = "10ms"
rtt = "{BASE_RTT:g}ms"
""").summary


def test_a_1000_packet_fifo_adds_hundreds_of_milliseconds_under_load():
    # 1000 packets at 10 Mbit/s drain in 1.2 s; four CUBIC flows keep it
    # mostly full, so the probe's p95 sits hundreds of ms above the base RTT.
    s = ndown("fifo")
    assert s["probes"][0]["rtt_ms"]["p95"] > BASE_RTT + 300
    assert s["links"]["down"]["utilization"] > 0.95


@pytest.mark.parametrize("qdisc", ["fq_codel", "cake"])
def test_flow_queueing_with_an_aqm_keeps_the_probe_within_a_few_ms_of_base(qdisc):
    # The probe is a sparse flow: fq_codel/CAKE serve it ahead of the bulk
    # queues (new-flow list / sparse tin), and CoDel keeps the bulk queues'
    # sojourn near 5 ms. A few ms above base: p95 < base + 15 ms, while the
    # link stays busy (> 90 %: CoDel trades a little throughput for latency).
    s = ndown(qdisc)
    assert s["probes"][0]["rtt_ms"]["p95"] < BASE_RTT + 15
    assert s["links"]["down"]["utilization"] > 0.90
    assert s["jain_fairness"] > 0.95


def test_a_policer_drops_the_excess_and_adds_no_queueing_delay():
    s = bloatlab.run("""
name = "policer"
duration = "20s"
[link.down]
rate = "100Mbit"
buffer = "1bdp"
policer = { rate = "2Mbit", burst = "10KB" }
[[flow]]
cc = "cubic"
rtt = "50ms"
""").summary
    link, flow = s["links"]["down"], s["flows"][0]
    # Long-run throughput cannot exceed the committed rate (+ the burst once).
    assert flow["goodput_mbps"] < 2.0
    assert link["drops_by_reason"]["policer"] > 0
    # Conforming packets pass at once: on a 100 Mbit/s wire a packet waits at
    # most for the few packets ahead of it (one packet = 0.12 ms).
    assert link["qdelay_ms"]["p99"] < 1.0


def test_a_shaper_holds_the_rate_and_queues_instead_of_dropping():
    s = bloatlab.run("""
name = "shaper"
duration = "20s"
[link.down]
rate = "100Mbit"
buffer = "100KB"
shaper = { rate = "2Mbit", burst = "10KB" }
[[flow]]
cc = "cubic"
rtt = "50ms"
""").summary
    link, flow = s["links"]["down"], s["flows"][0]
    # 2 Mbit/s of wire, of which 1448/1500 is payload; slow start excluded: > 85 %.
    assert 0.85 * 2 * 1448 / 1500 < flow["goodput_mbps"] < 2.0
    # The queue fills: 100 KB at 2 Mbit/s is 400 ms.
    assert link["qdelay_ms"]["max"] > 300
    assert link["drops_by_reason"]["policer"] == 0


def test_dctcp_with_step_marking_holds_the_queue_near_the_threshold():
    # CoDel with ce_threshold marks every packet whose sojourn exceeds 1 ms
    # (Linux's DCTCP-style step marking). DCTCP cuts cwnd by alpha/2 per
    # window, so the queue oscillates around the threshold instead of filling
    # the 1000-packet buffer: mean queueing delay within a few ms, no drops.
    s = bloatlab.run("""
name = "dctcp"
duration = "20s"
[link.down]
rate = "100Mbit"
buffer = "1000pkt"
qdisc = "codel"
[link.down.qdisc_params]
ecn = true
ce_threshold = "1ms"
target = "50ms"
[link.up]
rate = "100Mbit"
[[flow]]
cc = "dctcp"
rtt = "10ms"
count = 2
""").summary
    link = s["links"]["down"]
    assert link["marks"] > 100
    assert link["drops"] == 0
    assert link["qdelay_ms"]["mean"] < 3.0
    assert link["utilization"] > 0.9


def test_a_device_queue_hides_the_queue_from_the_aqm_above_it():
    # seed 000: a deep driver queue below fq_codel adds its own delay that
    # CoDel cannot see. 100 packets at 10 Mbit/s = 120 ms more for the probe.
    shallow = ndown("fq_codel", duration="20s")
    deep = ndown("fq_codel", 'device_queue = "100pkt"', duration="20s")
    assert deep["probes"][0]["rtt_ms"]["p50"] > shallow["probes"][0]["rtt_ms"]["p50"] + 80
