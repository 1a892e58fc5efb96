"""The link stages around the qdisc — policer, shaper, device queue — on the
emulator (the real kernel's TCP) against the simulator on the same scenario
(issue 13 §3).

Root and /dev/net/tun needed; elsewhere skipped with the reason. Each
scenario runs 8 s on each engine (~35 s for the file).

Tolerances: the ones docs/fidelity.md states for short runs (goodput within
10 %, mean queueing delay within 25 % or 2 ms, probe RTT p50 within 15 %),
except where a stage makes goodput hinge on a handful of loss events (the
policer: ~60 drops in 8 s, each one a CUBIC back-off), which gets 25 %.
Measured when written (2 cores, load average 5-9 from other builds):
policer goodput sim 7.10 / kernel 6.43 Mbit/s, drops 60 / 64; shaper goodput
9.51 / 9.43, qdelay mean 65.0 / 61.5 ms; device queue probe p50 91.5 / 93.6 ms
(later: sim 84.0, kernel 79.7 in a CI run).
A disagreement seen and not asserted: behind the shaper the simulator's CUBIC
loses 101 packets at the end of slow start, the kernel's 8 (HyStart leaves
slow start earlier in the kernel).
"""

from __future__ import annotations

import os
import tempfile

import pytest

from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")

BASE_RTT_MS = 40.0


def both(stage: str, rate: str = "50Mbit", buffer: str = "1bdp", qdisc: str = "fifo"):
    """Compare a CUBIC download (+ a UDP probe every 10 ms) through ``stage`` on both engines."""
    from bloatlab.commands.compare import compare

    text = f"""
name = "emu-stage"
duration = "8s"
[link.down]
rate = "{rate}"
buffer = "{buffer}"
qdisc = "{qdisc}"
{stage}
[link.up]
rate = "{rate}"
[[flow]]
cc = "cubic"
rtt = "{BASE_RTT_MS:g}ms"
[[probe]]
interval = "10ms"
rtt = "{BASE_RTT_MS:g}ms"
"""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "stage.toml")
        with open(p, "w") as f:
            f.write(text)
        # Known defect (issue 13, seen in ~1 of 5 runs under load): a kernel sender now and then ended
        # without a result ("no result from bloatlab-probe"), which reads as 0 goodput: the emulator
        # killed it 3 s after the scenario's end while it still waited for its server's line (starved
        # under load). The grace is now 8 s (crates/emu/src/supervise.rs REPORT_GRACE_NS; 0 of 20 under two
        # CPU-bound jobs, was 1 of 10); should it recur, the run is re-run once, and said so.
        for _ in range(2):
            r = compare(p, [])
            if all((f.get("rtt_ms") or {}).get("p50") is not None for f in r["emu"]["flows"]):
                break
            print("emulator: a sender gave no result (issue 13's known defect); re-running once")
    return r["sim"], r["emu"]


def agree(s, e, goodput_rel=0.10):
    gs, ge = s["total_goodput_mbps"], e["total_goodput_mbps"]
    assert gs == pytest.approx(ge, rel=goodput_rel), (gs, ge)
    qs, qe = s["links"]["down"]["qdelay_ms"]["mean"], e["links"]["down"]["qdelay_ms"]["mean"]
    assert abs(qs - qe) <= max(0.25 * qe, 2.0), (qs, qe)
    ps, pe = s["probes"][0]["rtt_ms"]["p50"], e["probes"][0]["rtt_ms"]["p50"]
    assert ps == pytest.approx(pe, rel=0.15), (ps, pe)


def test_the_policer_drops_the_excess_on_both_engines_and_they_agree():
    s, e = both('policer = { rate = "10Mbit", burst = "30KB" }')
    for r in (s, e):
        link = r["links"]["down"]
        # Long-run throughput cannot exceed the committed rate (+ one burst: 30 KB in 8 s = 0.03 Mbit/s).
        assert r["total_goodput_mbps"] < 10.0 * 1448 / 1500 + 0.03
        assert link["drops_by_reason"]["policer"] > 0
        # Conforming packets pass at once: a 1500 B packet is 0.24 ms on the 50 Mbit/s wire.
        assert link["qdelay_ms"]["p95"] < 2.0
    agree(s, e, goodput_rel=0.25)


def test_the_shaper_queues_instead_of_dropping_on_both_engines_and_they_agree():
    s, e = both('shaper = { rate = "10Mbit", burst = "10KB" }', buffer="100KB")
    for r in (s, e):
        link = r["links"]["down"]
        assert link["drops_by_reason"]["policer"] == 0
        # The shaper, not the 50 Mbit/s wire, sets the rate: at most 10 Mbit/s of wire, 1448/1500 of it payload.
        assert 0.85 * 10 * 1448 / 1500 < r["total_goodput_mbps"] < 10.0
        # The 100 KB qdisc in front of a 10 Mbit/s shaper holds up to 80 ms.
        assert link["qdelay_ms"]["p95"] > 40
    agree(s, e)


def test_a_device_queue_below_fq_codel_adds_the_delay_codel_cannot_see_on_both_engines():
    # 50 packets at 10 Mbit/s = 60 ms below fq_codel: the probe, a sparse flow fq_codel would
    # otherwise serve at once (p50 within ~1 ms of the base RTT), waits behind them on both engines.
    # How full the device queue is depends on where CUBIC is in its cycle: fq_codel keeps its own
    # queue at ~5 ms, so the sender's window is about BDP (33 packets) + 50 + 4; right after a
    # back-off (beta 0.7) that is ~61 packets, of which ~28 still sit in the device queue (34 ms).
    # So the median wait is between ~30 and 60 ms: measured sim 84.0 / kernel 79.7-93.6 ms p50
    # (base 40). The bound is the post-back-off floor, 25 ms; agree() compares the engines.
    s, e = both('device_queue = "50pkt"', rate="10Mbit", buffer="1000pkt", qdisc="fq_codel")
    for r in (s, e):
        assert r["probes"][0]["rtt_ms"]["p50"] > BASE_RTT_MS + 25
        assert r["links"]["down"]["utilization"] > 0.9
    agree(s, e)
