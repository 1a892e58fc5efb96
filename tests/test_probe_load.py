"""`bloatlab-probe load` through an emulated link (issue 14 §3): connect probes
run on schedule and only while the load runs, so the loaded TCP handshake time
agrees with the loaded UDP round trip and with the queue the emulator reports.
Before, one thread ran the connects back to back: through a 2 Mbit/s loaded
uplink it reported connect p50 1.09 ms against a UDP RTT p50 of 409 ms."""

import json
import os
import subprocess

import pytest

from conftest import ROOT

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                                reason="emulated links need root and /dev/net/tun")


@needs_root
def test_loaded_connects_wait_in_the_same_queue_as_the_udp_probes(tmp_path):
    env = dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"])
    raw = tmp_path / "link.json"
    r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", "--down", "20Mbit", "--up", "2Mbit",
                        "--rtt", "20ms", "--buffer", "4bdp", "--out", str(raw),
                        "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                        "sh", "-c", "sleep 0.5; bloatlab-probe load $BLOATLAB_SERVER --down 0 --up 2 -t 6 --idle 1 --json"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout[r.stdout.index("{"):])
    ld = j["load"]["loaded"]
    conn, udp = ld["connect_ms"]["p50"], ld["udp_rtt_ms"]["p50"]
    # the SYN waits in the loaded uplink's FIFO as the UDP request does (4 BDP at 2 Mbit/s, 20 ms:
    # up to 80 ms of queue); both cross the same queues once each way
    assert udp > 20 + 30, ld
    assert conn == pytest.approx(udp, rel=0.25), (conn, udp)
    assert ld["connects_unanswered"] == 0 and ld["connects_late"] == 0, ld
    # ... and the queueing the emulator measured on the uplink over the run (mean ~ what a probe meets)
    q = json.loads(raw.read_text())["links"]["up"]["qdelay_ms"]
    assert q["p95"] > 30 and udp - 20 <= q["max"] + 5, (q, udp)
    # no connect probe after the load: the loaded ones start within the loaded phase
    assert ld["connect_ms"]["n"] <= 6 * 10 + 1


def _shell_load(tmp_path, up_rate: str, load_args: str) -> tuple[dict, dict]:
    env = dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"])
    raw = tmp_path / "link.json"
    r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", "--down", "20Mbit", "--up", up_rate,
                        "--rtt", "20ms", "--buffer", "4bdp", "--out", str(raw),
                        "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                        "sh", "-c", f"sleep 0.5; bloatlab-probe load $BLOATLAB_SERVER {load_args} --json"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout[r.stdout.index("{"):]), json.loads(raw.read_text())


@needs_root
def test_foreign_and_self_probes_wait_in_the_shaped_uplinks_queue_as_the_udp_probes_do(tmp_path):
    """draft-ietf-ippm-responsiveness's probes through a 10 Mbit/s uplink with a
    4-BDP FIFO (100 KB at 20 ms: up to 80 ms of queue) loaded by 2 uploads.

    Tolerances: the UDP echo, the handshake and the foreign request each cross
    the uplink queue once and the idle downlink once, so their medians agree
    within 15 % (the queue swings 0-80 ms through a CUBIC sawtooth; 48 foreign
    probes against 480 UDP ones). A self probe also waits at the sending end
    behind its own connection's unsent data, held to L = 5 ms of that
    connection's rate (at least 2 segments, probewire.rs): for the frame being
    written and the unsent bytes, at most 2 L, 10 ms at a flow's 5 Mbit/s. The
    median of 48 self probes drawn from a queue spread over 0-80 ms (sd ~18 ms)
    is itself uncertain by ~3 ms (1.25 sd / sqrt(48)), 6 ms at two standard
    errors, and the self probe crosses two more user-space hops than the UDP
    echo (~4 ms on a shared 2-CPU machine): its median is within [-8, +20] ms of
    the UDP one (measured: +9.6, +10.5, +12.0, +15.3 ms; before the sending end
    held its unsent data to L, +410 ms). The emulator's queue over the run is
    what they wait in: the UDP RTT minus the 20 ms base is within its range."""
    j, link = _shell_load(tmp_path, "10Mbit", "--down 0 --up 2 -t 6 --idle 1")
    ph = j["load"]["phases"][0]
    udp, conn, req, selfp = (ph[k]["p50"] for k in ("udp_rtt_ms", "connect_ms", "foreign_request_ms", "self_probe_ms"))
    assert udp > 20 + 30, ph
    assert conn == pytest.approx(udp, rel=0.15), (conn, udp)
    assert req == pytest.approx(udp, rel=0.15), (req, udp)
    assert ph["self_probe_source"].startswith("bloatlab frames"), ph["self_probe_source"]
    assert udp - 8 <= selfp <= udp + 20, (selfp, udp)
    sp = ph["self_probes"]
    assert sp["answered"] >= 50 and sp["unanswered"] <= 1, sp
    q = link["links"]["up"]["qdelay_ms"]
    assert q["p50"] > 30 and udp - 20 <= q["max"] + 5, (q, udp)
    # the draft's figures are made of these: foreign and loaded RPM near 60000 / the medians
    assert ph["foreign_rpm"] == pytest.approx(60000 / udp, rel=0.25), ph
    assert ph["loaded_rpm"] == pytest.approx(60000 / selfp, rel=0.25), ph
    assert ph["rpm"] == pytest.approx((ph["foreign_rpm"] + ph["loaded_rpm"]) / 2)
    assert ph["confidence"] in ("medium", "high") and ph["intervals"] == 6
    # the uplink's added latency (its queue) is what the grade grades; the idle downlink adds none
    added = ph["added_one_way_ms"]
    assert added["up"] == pytest.approx(q["mean"], abs=15) and abs(added["down"]) < 5, (added, q)
    bb = j["load"]["bufferbloat"]
    assert bb["up"] in ("B", "C") and bb["down"] == "?", bb
    # the goodput is the link's: the frames and the 5-ms mark cost no throughput
    assert ph["goodput_mbps"]["up"] > 0.85 * 10 * 1448 / 1500, ph["goodput_mbps"]


@needs_root
def test_halt_at_end_stops_the_flows_with_their_phase_instead_of_waiting_for_a_deep_queues_acks():
    # 1 Mbit/s down behind a 500-KB FIFO (4 s) at 20 ms: two CUBIC downloads' send buffers hold seconds of data. Without
    # --halt-at-end the server's senders wait TIMED_ACK_GRACE (2 s) for their acks after the 2-s phase; with it the
    # client asks them to stop at the phase's end, and the last TCP_INFO sample falls there
    # (the probe built beside the tree first, where BLOATLAB_BIN_DIR names it: the venv's may be older)
    bins = [d for d in (os.environ.get("BLOATLAB_BIN_DIR"), os.path.join(ROOT, ".venv", "bin")) if d]
    env = dict(os.environ, PATH=":".join(bins + [os.environ["PATH"]]))
    spans = {}
    for flag in ("", "--halt-at-end", "--halt-rtts 20"):
        spans[flag] = _flow_spans(env, "500KB", 2, 2, flag)[0]
    # halted: within the phase and a few samples; waiting: the 2-s grace on top (the send buffer is not acked by then)
    assert spans["--halt-at-end"] < 2.0 + 0.3, spans
    assert spans[""] > spans["--halt-at-end"] + 1.5, spans
    # --halt-rtts 20: the 2-s phase's second half spans no 20 round trips of a queue seconds deep: the grace, as without
    assert spans["--halt-rtts 20"] > spans["--halt-at-end"] + 1.5, spans


def _flow_spans(env: dict, buffer: str, secs: float, flows: int, flag: str) -> tuple[float, float]:
    """The shortest and the longest time a flow of ``flows`` CUBIC downloads at 1 Mbit/s and 20 ms behind a FIFO
    of ``buffer`` reported TCP_INFO samples over, a ``secs``-long ``load`` with ``flag``."""
    r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", "--down", "1Mbit", "--up", "1Mbit",
                        "--rtt", "20ms", "--buffer", buffer, "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                        "sh", "-c", f"sleep 0.5; bloatlab-probe load $BLOATLAB_SERVER --down {flows} --up 0 -t {secs:g} "
                                    f"--idle 250ms --no-self-probes --sample-interval 20ms --json {flag}"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout[r.stdout.index("{"):])
    fs = j["raw"]["series"]["flows"]
    t, fid = fs["t"], fs["flow"]
    spans = [max(x for x, i in zip(t, fid) if i == f) - min(x for x, i in zip(t, fid) if i == f) for f in set(fid)]
    # --halt-rtts: the rule's verdict at the ceiling, in the phase's JSON
    halt = j["load"]["phases"][-1].get("halt")
    assert (halt is not None) == ("--halt-rtts" in flag), halt
    if halt is not None:
        assert halt["stopped"] == (max(spans) < secs + 0.3) and halt["loaded_rtt_ms"] > 20, (halt, spans)
    return min(spans), max(spans)


@needs_root
def test_halt_rtts_stops_the_flows_at_their_phases_end_where_its_second_half_spans_the_round_trips():
    # 4 CUBIC downloads at 1 Mbit/s behind a 3-KB FIFO (24 ms) at 20 ms: the loaded round trip is ~45 ms, and a 4-s
    # phase's second half (~1.9 s) spans 20 of them (0.9 s): with --halt-rtts 20 every flow stops at the phase's end.
    # Without it the server's senders wait up to 2 s for the acks of their send buffers, which windows of a few
    # segments drain slowly, with timeouts (one run: the flows' samples over 4.65-6.08 s, with the option 3.97-3.98;
    # 2.05-2.07 s of each phase of shapers at 0.4-0.9 Mbit/s, campaign seed 69). Behind a 10-KB FIFO the second half
    # no longer spans 20 round trips and the grace stays (5.58-5.92 s in one run: the rule's unit test, crates/probe)
    bins = [d for d in (os.environ.get("BLOATLAB_BIN_DIR"), os.path.join(ROOT, ".venv", "bin")) if d]
    env = dict(os.environ, PATH=":".join(bins + [os.environ["PATH"]]))
    flags = ("", "--halt-rtts 20", "--halt-rtts 20 --halt-packets 200")
    spans = {flag: _flow_spans(env, "3KB", 4, 4, flag) for flag in flags}
    # the loaded round trip is the largest of the probes' p95 and each receiving flow's own estimate (tcpi_rcv_rtt):
    # a flow starved behind the 2-packet FIFO now and then reads 250 ms there (2026-12-02: 1 run of 8; the rule then
    # rightly keeps the grace, as _flow_spans checks). The case under test is the path's ~45 ms: a run again for it
    for _ in range(2):
        if spans["--halt-rtts 20"][1] < 4.0 + 0.3:
            break
        spans["--halt-rtts 20"] = _flow_spans(env, "3KB", 4, 4, "--halt-rtts 20")
    assert spans["--halt-rtts 20"][1] < 4.0 + 0.3, spans
    assert spans[""][1] > spans["--halt-rtts 20"][1] + 1.0, spans
    # the half carried ~160 full segments at 1 Mbit/s, not 200: the grace stays
    assert spans["--halt-rtts 20 --halt-packets 200"][1] > spans["--halt-rtts 20"][1] + 1.0, spans


@needs_root
def test_until_stable_ends_a_saturated_phase_at_twice_its_saturation_and_its_flows_with_it():
    # 20 Mbit/s down behind a 1-BDP FIFO at 20 ms: four CUBIC downloads fill it (a standing queue, losses) within a
    # second; the phase then ends at max(floor, 2 t_sat) of crates/probe/src/live.rs, well before its 8-s ceiling, and
    # the flows stop with it (their last TCP_INFO sample within a few samples of the end). A load that never
    # saturates runs to its ceiling: the rule's unit tests (a plateau without queue or loss, a queue still growing)
    bins = [d for d in (os.environ.get("BLOATLAB_BIN_DIR"), os.path.join(ROOT, ".venv", "bin")) if d]
    env = dict(os.environ, PATH=":".join(bins + [os.environ["PATH"]]))
    r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", "--down", "20Mbit", "--up", "5Mbit",
                        "--rtt", "20ms", "--buffer", "1bdp", "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                        "sh", "-c", "sleep 0.5; bloatlab-probe load $BLOATLAB_SERVER --down 4 --up 0 -t 8 --idle 250ms "
                                    "--no-self-probes --sample-interval 20ms --until-stable 1500ms --json"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout[r.stdout.index("{"):])
    ph = j["load"]["phases"][-1]
    ran = ph["to_s"] - ph["from_s"]
    assert ph["saturated_at_s"] is not None and ph["watched_intervals"] >= 7, ph
    # at twice the saturation, not before the floor, and well before the ceiling
    assert ran == pytest.approx(max(1.5, 2 * ph["saturated_at_s"]), abs=0.05) and ran < 6.0, ph
    # the flows' samples span the phase, not the 2-s ack grace of a phase that ends at its -t
    fs = j["raw"]["series"]["flows"]
    t, fid = fs["t"], fs["flow"]
    span = max(max(x for x, i in zip(t, fid) if i == f) - min(x for x, i in zip(t, fid) if i == f) for f in set(fid))
    assert span < ran + 0.3, (span, ran)


def test_measure_reads_a_phase_from_the_flows_that_reached_the_server_and_leaves_out_the_missing_ones():
    # issue 30: one upload flow's hello dropped again and again behind a 0.22-Mbit/s policer (campaign seed 57
    # path 6); the probe names it (missing_flows) and measure reads the phase from the other flows
    from bloatlab.advise.measure import _without_missing

    j = {"flows": [{"id": 0, "direction": "up"}, {"id": 1, "direction": "up"}, {"id": 2, "direction": "up"}],
         "missing_flows": [1], "problem": "2 of 3 data connections reached the server; never: up1 (flow 1)",
         "raw": {"series": {"flows": {"flow": [0, 1, 2, 0, 1, 2], "t": [0.1, 0.1, 0.1, 0.2, 0.2, 0.2],
                                      "delivered_bytes": [10, 0, 20, 30, 0, 40]}}}}
    out = _without_missing(j)
    assert [f["id"] for f in out["flows"]] == [0, 2]
    assert out["raw"]["series"]["flows"] == {"flow": [0, 2, 0, 2], "t": [0.1, 0.1, 0.2, 0.2], "delivered_bytes": [10, 20, 30, 40]}
    assert out["problem"].endswith("up1 (flow 1)")
    # an older probe (no missing_flows) and a phase without one missing are unchanged
    old = {"flows": [{"id": 0}], "raw": {"series": {"flows": {"flow": [0], "t": [0.1]}}}}
    assert _without_missing(json.loads(json.dumps(old))) == old
