"""`pacing = true` on a flow (issue 10 §1): a control that does not pace by
itself (CUBIC, Reno) is paced at Linux's pacing rate, as `sch_fq` on the
sending host or `SO_MAX_PACING_RATE` make the kernel do; both engines.

The case: one CUBIC flow, 500 Mbit/s, 200 ms, a 100 KB FIFO (66 packets,
0.008 BDP: IMC 2019's shallow-buffer cell). Unpaced, slow start sends two
segments per segment acked, at twice the rate the ACKs return: the queue
grows by half a round's packets and overflows at a cwnd of a few hundred
packets, and CUBIC then grows from there for the rest of the run (measured:
sim 13.6, kernel 7.5 Mbit/s over 10 s). Paced at 200 % of cwnd/srtt the
round is spread over half an RTT, the queue stays near empty and slow start
runs on towards the BDP (measured: sim 248.6 Mbit/s; the kernel, paced,
155 and 204 Mbit/s in two runs). The assertions are the physics — a factor
of 5 between paced and unpaced — not the figures.
"""

from __future__ import annotations

import pytest

import bloatlab
from bloatlab.engines import emu as emu_engine

SCENARIO = """
name = "pacing"
duration = "10s"
[link.down]
rate = "500Mbit"
buffer = "100KB"
[[flow]]
cc = "cubic"
rtt = "200ms"
pacing = {pacing}
"""


def goodput(engine, pacing):
    s = bloatlab.run(SCENARIO.format(pacing=str(pacing).lower()), engine=engine).summary
    return s["flows"][0]["goodput_mbps"]


def test_the_simulator_paces_cubic_when_asked_and_slow_start_then_survives_a_shallow_buffer():
    unpaced, paced = goodput("sim", False), goodput("sim", True)
    assert unpaced < 40 and paced > 5 * unpaced, (unpaced, paced)


def test_every_control_reports_the_kernels_pacing_rate():
    r = bloatlab.run(SCENARIO.format(pacing="false"), duration="2s")
    rates = r.flows["pacing_rate_bps"]
    assert (rates[r.flows["srtt_ms"] > 0] > 0).all()


REASON = emu_engine.unavailable_reason()


@pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")
def test_the_kernel_paces_cubic_when_asked_and_not_otherwise():
    unpaced, paced = goodput("emu", False), goodput("emu", True)
    assert unpaced < 40 and paced > 5 * unpaced, (unpaced, paced)
