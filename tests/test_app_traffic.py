"""Traffic as applications make it (issue 10 §1–§2): the handshake and the
request before a download, and application-limited flows (`rate` on a flow),
in the simulator and — for the rate — against the kernel through the
emulator."""

from __future__ import annotations

import pytest

import bloatlab
from bloatlab.engines import emu as emu_engine
from bloatlab.errors import ScenarioError
from bloatlab.scenario import load

VIDEO = {
    "name": "video-beside-bulk", "duration": "8s",
    "link": {"down": {"rate": "20Mbit", "buffer": "2bdp"}},
    "flow": [{"name": "video", "cc": "cubic", "rtt": "40ms", "rate": "5Mbit"},
             {"name": "bulk", "cc": "cubic", "rtt": "40ms", "start": "2s"}],
}


def _goodputs(s):
    return {f["name"]: f["goodput_mbps"] for f in s["flows"]}


def _unflagged_emu_run(doc) -> dict:
    """The summary of ``doc`` run through the emulator: a run whose timing the emulator flagged (a stall or p99
    lateness over its bound: docs/emulator.md) is not truth and is run again, as sweeps do (--retry-flagged); after
    three flagged runs the test is skipped with the reason."""
    for _ in range(3):
        s = bloatlab.run(doc, engine="emu").summary
        if not emu_engine.timing_flagged(s):
            return s
    pytest.skip(f"the emulator flagged 3 runs' timing on this machine: {emu_engine.timing_reason(s)}")


def test_a_download_completes_after_handshake_request_data_and_ack():
    # 1000 B at 200 ms, no loss: SYN 0.1 s, SYN-ACK 0.2 s, request 0.3 s, data 0.4 s, ACK back 0.5 s
    doc = {"duration": "3s", "link": {"down": {"rate": "100Mbit"}, "up": {"rate": "100Mbit"}},
           "flow": [{"cc": "cubic", "rtt": "200ms", "size": "1000B"},
                    {"cc": "cubic", "rtt": "200ms", "size": "1000B", "direction": "up"}]}
    f = bloatlab.run(doc).summary["flows"]
    assert f[0]["fct_s"] == pytest.approx(0.5, abs=0.001)
    # an upload sends with the handshake's ACK: SYN-ACK back at 0.2 s, data 0.3 s, ACK 0.4 s
    assert f[1]["fct_s"] == pytest.approx(0.4, abs=0.001)


def test_lost_syns_cost_whole_initial_rtos():
    # every packet toward the server is lost: connect() never succeeds, the flow never starts
    doc = {"duration": "20s", "link": {"down": {"rate": "10Mbit"}, "up": {"rate": "10Mbit", "loss": "100%"}},
           "flow": [{"cc": "cubic", "rtt": "50ms", "size": "10KB"}]}
    f = bloatlab.run(doc).summary["flows"][0]
    assert f["completed"] is False and f["fct_s"] is None


def test_an_application_limited_flow_offers_its_rate_and_leaves_the_rest():
    s = _goodputs(bloatlab.run(VIDEO).summary)
    # the video flow runs 8 s at 5 Mbit/s minus its first RTT and handshake (< 1 %)
    assert s["video"] == pytest.approx(5.0, rel=0.03)
    # the bulk flow takes what is left of 20 Mbit/s (6 s of it, from 2 s)
    assert 13.0 < s["bulk"] < 15.2


def test_a_rate_must_be_a_positive_rate():
    for bad in ("0Mbit", "fast", "-1Mbit"):
        doc = dict(VIDEO, flow=[{"cc": "cubic", "rtt": "40ms", "rate": bad}])
        with pytest.raises(ScenarioError, match=r"flow\.0\.rate"):
            load(doc).resolved()


@pytest.mark.skipif(emu_engine.unavailable_reason() is not None, reason=f"emulator unavailable: {emu_engine.unavailable_reason()}")
def test_the_kernel_offers_the_same_rate_through_the_emulator():
    sim = _goodputs(bloatlab.run(VIDEO).summary)
    # a CI run under load read the video at 4.68 (_unflagged_emu_run)
    emu = _goodputs(_unflagged_emu_run(VIDEO))
    # measured on this machine: video 4.912 vs 4.907, bulk 14.009 vs 13.988 Mbit/s. The video flow is the
    # application's clock on both engines (2 %); the bulk flow gets the rest of a shared FIFO, where the
    # model matches the kernel to a few % (docs/fidelity.md), so 8 %.
    assert emu["video"] == pytest.approx(sim["video"], rel=0.02)
    assert emu["bulk"] == pytest.approx(sim["bulk"], rel=0.08)


@pytest.mark.skipif(emu_engine.unavailable_reason() is not None, reason=f"emulator unavailable: {emu_engine.unavailable_reason()}")
def test_the_kernels_download_and_upload_take_as_long_as_the_models():
    # The emulator's client connects and, for a download, sends its request (bloatlab-probe tcp client -R), as
    # the model does: 2.5 RTT for a one-segment download, 2 RTT for a one-segment upload. Measured: sim 0.500 /
    # 0.400 s, kernel 0.501 / 0.401 s. Before the probe counted an accepted socket's bytes_acked without its
    # SYN, the kernel's download waited for the client's delayed ACK of the FIN: 0.548 s.
    # 100 KB takes three rounds of slow start (10 + 20 + 40 segments): 0.9 / 0.8 s. Before the probe sent an
    # upload's 16-byte header with its first data (MSG_MORE), the header took one of the initial window's 10
    # segments and the kernel's upload needed a fourth round for its last 88 bytes: 1.00 s against 0.80.
    doc = {"duration": "3s", "link": {"down": {"rate": "100Mbit"}, "up": {"rate": "100Mbit"}},
           "flow": [{"cc": "cubic", "rtt": "200ms", "size": "1000B"},
                    {"cc": "cubic", "rtt": "200ms", "size": "1000B", "direction": "up"},
                    {"cc": "cubic", "rtt": "200ms", "size": "100KB"},
                    {"cc": "cubic", "rtt": "200ms", "size": "100KB", "direction": "up"}]}
    sim = [f["fct_s"] for f in bloatlab.run(doc).summary["flows"]]
    # a clean clone's make test on a late VM (p99 lateness 3.7-6.1 ms, ~2000 stalls a run) finished each flow 11-22
    # ms after the model (_unflagged_emu_run)
    emu = [f["fct_s"] for f in _unflagged_emu_run(doc)["flows"]]
    for s, e in zip(sim, emu):
        assert e == pytest.approx(s, abs=0.010), (sim, emu)  # the emulator's timing (< 1 ms) and process wake-ups


ON_OFF = {"name": "on-off", "duration": "5s", "link": {"down": {"rate": "20Mbit", "buffer": "1bdp"}},
          "flow": [{"cc": "cubic", "rtt": "50ms", "rate": "10Mbit", "on": "1s", "off": "2s"}]}


def _cwnd_segments(res, t0, t1):
    t = res.flows
    return [int(c / 1448) for c in t[(t.t >= t0) & (t.t <= t1)]["cwnd_bytes"]]


def _restarts_slow_start(res):
    # the first on-second grows cwnd well past the initial window; after 2 s of silence (8 RTOs of
    # ~250 ms) the next write finds an idle connection and tcp_cwnd_restart takes cwnd back to IW 10
    # (measured 2026-11-23: sim 127 -> 10 at 3.08 s, kernel 201 -> 10 at 3.13 s)
    assert max(_cwnd_segments(res, 0.7, 1.0)) >= 60
    assert min(_cwnd_segments(res, 3.0, 3.3)) == 10


def test_an_on_off_source_writes_its_rate_only_while_on_and_restarts_slow_start_after_idle():
    res = bloatlab.run(ON_OFF)
    # on for 1 s of every 3 s at 10 Mbit/s: 2 on-seconds in 5 s = 2.5 MB
    assert res.summary["flows"][0]["bytes_delivered"] == pytest.approx(2 * 10e6 / 8, rel=0.03)
    _restarts_slow_start(res)


def test_on_off_needs_a_rate_and_whole_write_ticks():
    for bad, key in (({"on": "1s", "off": "2s", "rate": None}, r"flow\.0\.rate"),
                     ({"on": "15ms"}, r"flow\.0\.on"), ({"off": "1s", "on": None}, r"flow\.0\.on")):
        f = {k: v for k, v in {**ON_OFF["flow"][0], **bad}.items() if v is not None}
        with pytest.raises(ScenarioError, match=key):
            load(dict(ON_OFF, flow=[f])).resolved()


@pytest.mark.skipif(emu_engine.unavailable_reason() is not None, reason=f"emulator unavailable: {emu_engine.unavailable_reason()}")
def test_the_kernel_restarts_slow_start_after_the_same_silence():
    # tcp_slow_start_after_idle = 1 (Linux's default) in the emulator's namespaces
    _restarts_slow_start(bloatlab.run(ON_OFF, engine="emu"))
