"""Packet trains (`[[train]]`) on the emulator agree with the simulator's.

The emulator asks a `bloatlab-probe udp server` of its own (server namespace, port 35000 + k) for each train:
its client (`udp train --wait-go`, client namespace) does the handshake ahead and asks on its go line, half an
RTT before the train's start, so that the server sends its first packet at about that start
(crates/emu/src/supervise.rs, `Starts`). The record (`trains[]`) is built from the client's stamps: kernel
receive times and the server's send times, one host clock (crates/emu/src/result.rs, `train_out`).

One run, two trains down a 2 Mbit/s FIFO of 1000 packets (a 40-ms path): 200 full packets back to back at
0.1 s (they drain in 1.2 s: each waits behind those before it), then 50 paced at 1 Mbit/s at 1.4 s (half the
link's rate: none meets a queue). The language wants a flow: a 10-KB download after both trains.

Root and /dev/net/tun needed; elsewhere skipped with the reason. ~4 s.
"""

from __future__ import annotations

import pytest

import bloatlab
from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")

SCENARIO = """
name = "emu-trains"
duration = "2.5s"
[link.down]
rate = "2Mbit"
buffer = "1000pkt"
qdisc = "fifo"
[[flow]]
cc = "cubic"
rtt = "40ms"
start = "2.2s"
size = "10KB"
[[train]]
name = "burst"
packets = 200
start = "100ms"
rtt = "40ms"
[[train]]
name = "paced"
packets = 50
rate = "1Mbit"
start = "1.4s"
rtt = "40ms"
"""

#: a full packet (1472 B of payload, 1500 on the wire) on the 2-Mbit/s link, ms
WIRE_MS = 1500 * 8 / 2e6 * 1e3


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    p = tmp_path_factory.mktemp("train") / "trains.toml"
    p.write_text(SCENARIO)
    return {e: {t["name"]: t for t in bloatlab.run(str(p), engine=e).summary["trains"]} for e in ("emu", "sim")}


def test_a_back_to_back_train_queues_behind_itself_and_leaves_at_the_links_rate_as_in_the_simulator(runs):
    emu, sim = runs["emu"]["burst"], runs["sim"]["burst"]
    assert emu.keys() == sim.keys()
    assert (emu["sent"], emu["received"], emu["loss"]) == (200, 200, 0.0), emu
    # the dispersion rate is the link's: measured 2.000 Mbit/s (the simulator's 2.0)
    assert emu["dispersion_mbps"] == pytest.approx(2.0, rel=0.05), emu
    # the last packet waited behind 199 (1.2 s): measured 1218.4 ms against the simulator's 1220.0 (the server's
    # loop takes ~1.6 ms to hand the 200 packets to its kernel, so the last is stamped that much later)
    assert emu["delay_ms"]["max"] == pytest.approx(sim["delay_ms"]["max"], rel=0.10), (emu, sim)
    # its first packet arrives 20 ms and its own 6 ms on the wire after it left: leaving at the train's start
    # within a few ms (measured 1.0 ms late: the go's 1-ms poll, the client's wake-up, the server's thread)
    late_ms = (emu["first_s"] - emu["start_s"]) * 1e3 - (20 + WIRE_MS)
    assert -0.5 < late_ms < 15, emu


def test_a_train_paced_below_the_links_rate_meets_no_queue(runs):
    emu, sim = runs["emu"]["paced"], runs["sim"]["paced"]
    assert (emu["received"], emu["rate_mbps"]) == (50, 1.0), emu
    assert sim["delay_ms"]["max"] == pytest.approx(20 + WIRE_MS), sim
    # each packet alone on the link: 26 ms (measured p50 26.016 ms); the pacer sends at most one packet early
    # (crates/probe/src/train.rs, next_due), which then waits behind one packet at most
    assert emu["delay_ms"]["p50"] == pytest.approx(20 + WIRE_MS, abs=1.0), emu
    assert emu["delay_ms"]["p95"] < 20 + 2 * WIRE_MS + 1.0, emu
    assert emu["dispersion_mbps"] == pytest.approx(1.0, rel=0.05), emu
    late_ms = (emu["first_s"] - emu["start_s"]) * 1e3 - (20 + WIRE_MS)
    assert -0.5 < late_ms < 15, emu
