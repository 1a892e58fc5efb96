"""Whether ``measure`` runs the BBR rate phase after a direction's fill (``measure.rate_phase_plan``), on the fill
evidence campaigns stored (bench/advise/phase_value.py reads them all; docs/advise.md "Where measure's time
goes")."""

import pytest

from test_advise import _load_json


def _up(j):
    # a load's JSON of test_advise's making (a download) as an upload's
    for f in j["flows"]:
        f["direction"] = "up"
    return j


def _ev(probe_q95, flow_q50, flow_q95, excess, loaded, rate):
    # a fill's evidence as measure keeps it (the figures classify reads), its window's drops not told
    return {"phase": "fill", "probe_q95_ms": probe_q95, "flow_q50_ms": flow_q50, "flow_q95_ms": flow_q95,
            "dropped": True, "excess_loss": excess, "loaded_rtt_ms": loaded, "rate_mbps": rate, "window_dropped": None}


#: ranked seed 50 path 17's upload (fq_codel at 5.64 Mbit/s, 3.5 ms): the fill 5.514, its BBR phase 5.533 (4.5 s)
FQ_CODEL_UP = _ev(2.1338, 23.7466, 26.0477, 0.1022, 27.3125, 5.5141)


def test_each_flows_own_backlog_above_the_burst_floor_at_the_ports_rate_needs_no_bbr_phase():
    from bloatlab.advise import measure as M

    run, why = M.rate_phase_plan(FQ_CODEL_UP, 5.5141, 4, False, None, 5.5397)
    # the burst floor at 5.514 Mbit/s: 4 flows x 2 segments of 1500 B = 17.41 ms, and the 3-ms noise
    assert (run, why.split(":")[0]) == (False, "own backlog") and "20.4-ms burst floor" in why
    # the same flows beside a port the idle path showed 1.2x faster: a collapse's bursts at it are not excluded
    run, why = M.rate_phase_plan(FQ_CODEL_UP, 5.5141, 4, False, None, 1.2 * 5.5141)
    assert run and why.startswith("flow isolation at the median (23.7 ms), but the idle path showed a port of 6.617")
    # ... and where no port was read (seed 49 path 60's upload: the serialization left nothing for the up port)
    assert M.rate_phase_plan(FQ_CODEL_UP, 5.5141, 4, False, None, None)[0]


def test_flow_isolation_below_the_burst_floor_leaves_the_rate_to_the_bbr_phase():
    """Seed 45 path 4's upload, CAKE at 1.40 Mbit/s and 110 ms: the flows 55.3 ms at the median over the probe's
    9.8, under the 81.6-ms floor (4 x 2 segments at 1.22 Mbit/s, and the noise); the fill read 1.222 (-13 %),
    the BBR phase 1.292 (-8 %): within the rate goal only with it."""
    from bloatlab.advise import measure as M

    ev = _ev(9.7635, 55.2911, 67.3841, 0.1176, 164.989, 1.2221)
    run, why = M.rate_phase_plan(ev, 1.2221, 4, False, None, 1.3968)
    assert run and "the burst floor 81.6 ms" in why


def test_a_wifi_hop_in_front_raises_the_burst_floor_by_the_radios_aggregates():
    """Seed 131 path 20's download (a FIFO at 63.9 Mbit/s, 62 ms, 0.15 % random loss, behind a legacy access
    point at MCS 15): the loss-limited CUBIC fill read 51.5 Mbit/s with its flows 5.85 ms above the idle base, over
    the 5-ms burst floor — the hop's aggregates, not a backlog at the line — so the phase was skipped (-19 %).
    With the hop in front the floor holds the radio's aggregates too (wifi_hop.WIFI_HW_QUEUE_MS, 12.3 ms): the
    phase runs; through the emulator (2026-12-02) BBR read 63.4 Mbit/s (-0.8 %)."""
    from bloatlab.advise import measure as M

    ev = _ev(11.7785, 5.8466, 13.1069, 0.0, 68.1686, 51.5428)
    ev["dropped"] = False
    run, why = M.rate_phase_plan(ev, 51.5428, 4, False, None, 63.3502, port_spaced=True)
    assert (run, why.split(":")[0]) == (False, "shared backlog") and "5-ms burst floor" in why
    run, why = M.rate_phase_plan(ev, 51.5428, 4, False, None, 63.3502, port_spaced=True, hop=True)
    assert run and "the burst floor 17.3 ms" in why


def test_a_fill_at_the_port_a_trains_spacing_showed_needs_no_bbr_phase_and_one_at_a_serializations_does():
    """Seed 49 path 19's download (fq_codel at 69.1 Mbit/s): the fill 64.02 within 1.1x of the 69.07 the idle train's
    head showed, the BBR phase 68.94 (3.9 s). Ranked seed 50 path 0's upload (CAKE at 140 Mbit/s, 46 ms): the fill
    109.7 above the 98.3 the large probes' serialization left the up port — a lower bound of the port (every
    per-byte cost on the probes' way adds to it) — and the BBR phase read 140.0: it runs."""
    from bloatlab.advise import measure as M

    down = _ev(0.5611, 0.9378, 3.0334, 0.0, 28.6345, 64.0169)
    down["dropped"] = False
    run, why = M.rate_phase_plan(down, 64.0169, 4, False, None, 69.0656, port_spaced=True)
    assert (run, why.split(":")[0]) == (False, "at the port")
    up = _ev(0.2924, 0.4141, 0.7623, 0.0003, 45.9915, 109.6738)
    assert M.rate_phase_plan(up, 109.6738, 4, False, None, 98.2758)[0]
    # even read as a train's port it bounds nothing: the fill got 1.12x more than it (seed 49 path 6's download, a
    # trace whose instant the train read at 7.1 Mbit/s, the fill 13.3, is such a port)
    assert M.rate_phase_plan(up, 109.6738, 4, False, None, 98.2758, port_spaced=True)[0]
    assert not M.rate_phase_plan(up, 109.6738, 4, False, None, 110.0, port_spaced=True)[0]  # a train's port it reached


def test_the_direction_says_whether_its_rate_phase_ran_and_why(monkeypatch):
    from bloatlab.advise import evidence as M_evidence
    from bloatlab.advise import measure as M

    calls = []

    def load(host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False):
        calls.append(cc)
        return phases[cc]

    monkeypatch.setattr(M, "_load", load)
    # fq_codel-like at 7 Mbit/s up: the flows 20 ms above base, the probe 1 ms, the port at the fill's rate
    # (the flows' 6.8 and the probes' 0.07 read 6.87: below the port)
    phases = {"cubic": _up(_load_json(6.8e6 / M_evidence.WIRE_PER_PAYLOAD, 6 + 20, 6 + 1, 40, 15000)),
              "bbr": _up(_load_json(6.8e6 / M_evidence.WIRE_PER_PAYLOAD, 6 + 1, 6 + 1, 5, 15000))}
    x = M._direction("h", 1, "up", 4, 6.0, None, True, False, 0.0, lambda m: None, port_mbps=7.0)
    assert calls == ["cubic"] and "bbr" not in x["phases_s"] and x["limiter"] == "aqm"
    assert x["rate_phase"]["ran"] is False and x["rate_phase"]["why"].startswith("own backlog")
    # its queue busy at the port throughout: the rate is the port's, a lower bound up (measure.take_busy_port)
    # (the fill's own: the flows' 6.8 and the probes', evidence.probes_bps)
    assert x["rate_by_cc"] == {"cubic": pytest.approx(6.8 + x["evidence"]["probes_mbps"], rel=1e-4), "port": 7.0}
    assert x["rate_mbps"] == 7.0
    # the port the idle path showed 1.2x faster: the phase runs, and says why
    calls.clear()
    x = M._direction("h", 1, "up", 4, 6.0, None, True, False, 0.0, lambda m: None, port_mbps=1.2 * 6.93)
    assert calls == ["cubic", "bbr"] and x["rate_phase"]["ran"] is True and "bbr" in x["phases_s"]


def test_an_unread_port_leaves_the_fill_its_floor_in_time_and_packets_not_its_ceiling(monkeypatch):
    """Campaign seed 51 path 0 (CAKE at 672 Mbit/s, 8.6 ms): the idle train's server sent no faster than it arrived,
    so no port was read, and the fill ran its 5-s ceiling both ways (22 s in all); an upload's port is seldom read
    at all (101 stored up fills ran the ceiling). The floor's windows need packets at the rate the phase runs,
    which the load counts as it runs (--floor-packets): the fill asks for saturation, 2 s and 400 packets."""
    from bloatlab.advise import measure as M

    t = {"sender_limited": True, "leading_mbps": 412.71743494385885, "send_mbps": 410.8040077818803}
    assert M._ports(t, 0.011756511976047967) == {"down": None, "up": None}
    seen = []

    def load(host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False):
        seen.append((cc, secs, floor_s))
        raise M.UserError("stop here")

    monkeypatch.setattr(M, "_load", load)
    with pytest.raises(M.UserError):
        M._direction("h", 1, "up", 4, 8.6, None, True, False, 0.0, lambda m: None, port_mbps=None)
    assert seen == [("cubic", 5.0, pytest.approx(2.0))]
    # a random loss seen idle, a loss-based fill: the floor too, and only a standing queue ends it (before: the
    # 5-s ceiling whatever the path)
    seen.clear()

    def load_q(host, port, d, flows, secs, secret, cc, idle_s=1.0, floor_s=None, queue_only=False):
        seen.append((cc, secs, floor_s, queue_only))
        raise M.UserError("stop here")

    monkeypatch.setattr(M, "_load", load_q)
    with pytest.raises(M.UserError):
        M._direction("h", 1, "down", 4, 8.6, None, True, False, 0.001, lambda m: None, port_mbps=None)
    # a lossy path's fill is BBR's, which ends at a loss as anywhere
    with pytest.raises(M.UserError):
        M._direction("h", 1, "down", 4, 8.6, None, True, True, 0.01, lambda m: None, port_mbps=None)
    # without --quick the ceiling
    with pytest.raises(M.UserError):
        M._direction("h", 1, "down", 4, 8.6, None, False, False, 0.001, lambda m: None, port_mbps=None)
    assert seen == [("cubic", 5.0, pytest.approx(2.0), True), ("bbr", 5.0, pytest.approx(2.0), False),
                    ("cubic", 10.0, 10.0, True)]
    # the load's arguments: --until-stable with the floor, and the packets
    args = []
    monkeypatch.setattr(M, "_probe", lambda a, timeout, partial=False: args.extend(a) or {"flows": [1]})
    monkeypatch.undo()
    monkeypatch.setattr(M, "_probe", lambda a, timeout, partial=False: args.extend(a) or {"flows": [1]})
    M._load("h", 1, "up", 4, 5.0, None, "cubic", 0.25, floor_s=2.0)
    assert args[args.index("--until-stable") + 1] == "2000ms" and args[args.index("--floor-packets") + 1] == "400"
    assert "--queue-only" not in args
    # at its ceiling the phase stops its flows where its second half spanned 1/ACKED_EDGE round trips and carried
    # half the fill's packets (load --halt-rtts, crates/probe/src/live.rs); not a phase --until-loss ends
    assert args[args.index("--halt-rtts") + 1] == "20" and args[args.index("--halt-packets") + 1] == "200"
    args.clear()
    M._load("h", 1, "up", 4, 5.0, None, "reno", 0.25, until_loss=True)
    assert "--until-loss" in args and "--halt-rtts" not in args and "--halt-packets" not in args
    args.clear()
    M._load("h", 1, "up", 4, 5.0, None, "cubic", 0.25, floor_s=2.0, queue_only=True)
    assert "--queue-only" in args


def test_the_probes_busy_share_counts_a_probe_that_waited_a_segment_at_the_rate_beyond_its_own_serialization():
    from bloatlab.advise.evidence import probes_busy

    import numpy as np

    # 1 Mbit/s: a 1500-B segment is 12 ms; the base 20 ms, the probe's own serialization 1.5 ms both ways
    w = {"probes": np.array([20 + 1.5 + 12.0, 20 + 1.5 + 11.9, 20 + 1.5 + 30.0, 20 + 3.1])}
    assert probes_busy(w, 20.0, 1.5, 1.0) == {"share": 0.5, "probes": 4, "threshold_ms": 12.0}
    # 10 Mbit/s: the segment's 1.2 ms is below the noise, which sets the threshold
    assert probes_busy(w, 20.0, 1.5, 10.0) == {"share": 0.75, "probes": 4, "threshold_ms": 3.0}
    assert probes_busy({"probes": np.array([])}, 20.0, 1.5, 1.0) is None


def test_where_the_reverse_port_is_known_a_probe_counts_busy_beyond_the_noise_and_that_ports_acks():
    """A probe's wait above the noise finds the link busy (a segment's remaining time counts, which the segment
    threshold left out), but for what the reverse port's ACKs add to its reply: one ACK-with-SACK's serialization
    and their M/D/1 mean wait (physics.ack_queue_ms), every segment of the phase's rate ACKed beside the load
    probes' 73.6 kbit/s. Capped by the segment, and the segment where those ACKs overload the reverse port."""
    from bloatlab.advise.evidence import probes_busy
    from bloatlab.advise.physics import ACK_SACK_WIRE, WIRE_SEGMENT, probe_mbps

    import numpy as np

    # 1 Mbit/s forward (a 12.1-ms segment), base 20 ms, the probe's own serialization 1.5 ms: waits of 12, 11.9,
    # 30, 4 and 1.6 ms
    w = {"probes": np.array([20 + 1.5 + q for q in (12.0, 11.9, 30.0, 4.0, 1.6)])}
    other = probe_mbps(10.0)
    seg = WIRE_SEGMENT * 8 / 1e6 * 1e3
    assert probes_busy(w, 20.0, 1.5, 1.0)["threshold_ms"] == pytest.approx(seg)  # no reverse port: the segment
    assert probes_busy(w, 20.0, 1.5, 1.0)["share"] == pytest.approx(2 / 5)
    # a 10-Mbit/s reverse port: an ACK 0.064 ms, rho 0.0126: the noise sets it, 4 of 5 busy
    assert probes_busy(w, 20.0, 1.5, 1.0, 10.0, other) == {"share": 0.8, "probes": 5, "threshold_ms": 3.0}
    # 0.2 Mbit/s: an ACK 3.2 ms, rho (1 x 80 / 1514 + 0.0736) / 0.2 = 0.632, the mean wait 2.75 ACKs' worth of it
    rho = (1.0 * ACK_SACK_WIRE / WIRE_SEGMENT + other) / 0.2
    ack = ACK_SACK_WIRE * 8 / 200.0
    x = probes_busy(w, 20.0, 1.5, 1.0, 0.2, other)
    assert x["threshold_ms"] == pytest.approx(ack + rho / (2 * (1 - rho)) * ack) and x["share"] == pytest.approx(3 / 5)
    # 0.15: ACK and wait above the segment, which caps it; 0.05: overloaded (rho 2.5), the segment
    assert probes_busy(w, 20.0, 1.5, 1.0, 0.15, other)["threshold_ms"] == pytest.approx(seg)
    assert probes_busy(w, 20.0, 1.5, 1.0, 0.05, other)["threshold_ms"] == pytest.approx(seg)


#: campaign seed 84 path 28's upload (CAKE at 0.281 Mbit/s, 19.5 ms): the fill 0.2811 with all 190 of its window's
#: probes waiting 42.7 ms (a segment at that rate) or more; its BBR phase (5.6 s) read 0.3403, 21 % above the truth
CAKE_UP = dict(_ev(289.1874, 283.7083, 325.8723, 0.4583, 303.235, 0.2811),
               probes_busy={"share": 1.0, "probes": 190, "threshold_ms": 42.6907})


def test_a_fill_whose_probes_found_the_link_busy_needs_no_bbr_phase():
    from bloatlab.advise import measure as M

    # without the probes the phase runs: the flows' 284 ms lie below the burst floor (8 segments at 0.28 Mbit/s)
    plain = {k: v for k, v in CAKE_UP.items() if k != "probes_busy"}
    run, why = M.rate_phase_plan(plain, 0.2811, 4, False, None, 0.281)
    assert run and "the burst floor 345 ms" in why
    run, why = M.rate_phase_plan(CAKE_UP, 0.2811, 4, False, None, 0.281)
    assert (run, why.split(":")[0]) == (False, "probes busy")
    assert why.startswith("probes busy: 100 % of the window's 190 probes waited 42.7 ms or more")
    # a share below BUSY_SHARE, or read from fewer than BUSY_PROBES probes (one probe is then more than 5 %)
    assert M.BUSY_PROBES == 20
    for pb in ({"share": 0.94, "probes": 190}, {"share": 1.0, "probes": 19}):
        assert M.rate_phase_plan(dict(CAKE_UP, probes_busy=dict(CAKE_UP["probes_busy"], **pb)), 0.2811, 4, False,
                                 None, 0.281)[0]
    # none read (a WiFi hop: measure leaves it out there)
    assert M.rate_phase_plan(dict(CAKE_UP, probes_busy=None), 0.2811, 4, False, None, 0.281)[0]
    # below a port a packet train's spacing showed faster (a capacity that moved since, or a policer's port): the
    # phase runs; at the port the train's own rule skips it
    assert M.rate_phase_plan(CAKE_UP, 0.2811, 4, False, None, 0.35, port_spaced=True)[0]
    assert not M.rate_phase_plan(CAKE_UP, 0.2811, 4, False, None, 0.3, port_spaced=True)[0]


def test_a_fill_whose_probes_found_the_link_busy_on_a_capacity_that_moves_leaves_the_rate_to_the_bbr_phase(monkeypatch):
    from bloatlab.advise import measure as M

    monkeypatch.setattr(M, "variable_rate", lambda v: v is not None)
    assert M.rate_phase_plan(CAKE_UP, 0.2811, 4, False, {"windows": 10, "busy_windows": 0}, 0.281)[0]
    assert not M.rate_phase_plan(CAKE_UP, 0.2811, 4, False, None, 0.281)[0]
