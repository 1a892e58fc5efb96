"""The limiter's reading where the evidence cannot tell two limiters apart
(issue 30 §1: "a path it cannot tell apart says so, with the evidence,
rather than guessing"), and the campaign's check that such a reading names
the truth only where the truth really gives that evidence.

Every figure below is a stored measurement of the advisor's campaign (seed 8:
/work/camp8, seed 9: /work/camp9; `paths/NNNN/measure.json`): the evidence of
the loaded phase the verdict came from and the packet train `measure` sent,
with the truth the campaign emulated. Each of these paths was misread before
(docs/advise.md, "When the evidence cannot tell")."""

import pytest

from bloatlab.advise import campaign as c
from bloatlab.advise import evidence as m_evidence
from bloatlab.advise import measure as m
from bloatlab.advise import classify as m_classify
from bloatlab.advise import physics as m_physics
from bloatlab.advise import trains as m_trains
from bloatlab.advise import wifi_hop as m_wifi_hop


def read_down(monkeypatch, ev: dict, rate: float, train: dict, idle_loss: float = 0.0, base_ms: float = 10.0,
              paced: dict | None = None, first_loss: dict | None = None, **classify_kw) -> dict:
    """The down direction as `measure` reads it from one loaded phase's
    evidence and the packet train(s) it sends: the verdict (classify), then
    the trains in measure's order (_down_trains): behind a policer reading
    the policer's train and, where ``paced`` is given, the paced one
    (_policer_train, _queue_before_bucket, _held_not_policed,
    _not_a_policer), then behind a FIFO with drops the AQM train (_aqm_train:
    the policer's train where one was sent); ``classify_kw``: classify's
    loss, rtt_ms and loss_rate_mbps; ``first_loss``: the fill's first losses (evidence.first_losses)."""
    # the evidence as measure stores it: what classify read (its loss, RTT and the phase's rate too); its drops in the
    # window or only in the ramp where ``ev`` says (window_dropped)
    evidence = {"excess_loss": classify_kw.get("loss", 0.0), "rate_mbps": classify_kw.get("loss_rate_mbps") or rate,
                **({"loaded_rtt_ms": classify_kw["rtt_ms"]} if classify_kw.get("rtt_ms") else {}), **ev,
                "dropped": True, "burst_floor_ms": m_physics.burst_floor_ms(rate, 4)}
    lim = m_classify.classify(ev["probe_q95_ms"], ev["flow_q50_ms"], ev["flow_q95_ms"], m_classify.queue_dropped(evidence),
                              rate, 4, **classify_kw)
    q95 = ev["flow_q95_ms"]
    und = m_classify.undropped_alternatives(lim, evidence, rate, 4)
    x = {"rate_mbps": rate, "flows": 4, "limiter": lim, "limiter_note": m_classify.ambiguity(lim, rate, 4) or und[1],
         "limiter_alternatives": m_classify.alternatives(lim, rate, 4) or und[0], "load_cc": m.LOAD_CC,
         "evidence": evidence,
         "buffer_bytes": None if lim in ("aqm", "policer") else int(q95 / 1e3 * rate * 1e6 / 8), "buffer_bdp": None,
         "first_loss": first_loss or {"flows": [], "lossless": 0}}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: dict(train))

    def paced_train(*_):
        # most readings here are the back-to-back train's: the paced one (for the bucket) is not sent (it used to
        # reach the real probe binary, which failed on host "h" with this error's kind)
        if paced is None:
            raise m.UserError("no paced train in this test")
        return dict(paced)

    monkeypatch.setattr(m, "_paced_train", paced_train)
    monkeypatch.setattr(m, "_sleep", lambda s: None)
    wp = {"train": None, "phy_mbps": None, "note": "no idle train in this test"}
    m._down_trains("h", 5301, None, x, wp, base_ms, idle_loss, lambda s: None)
    return x


def truth(limiter: str, down_mbps: float, buffer_bytes: int | None = None) -> dict:
    return {"limiter": limiter, "observable": c.OBSERVABLE[limiter], "down_mbps": down_mbps, "buffer_bytes": buffer_bytes}


# seed 8 path 18: a tbf at 177.7 Mbit/s on a 273-Mbit/s port, its FIFO 72.7 KB (3.27 ms at the rate), 13.3 ms
TBF_FAST_EV = {"probe_q95_ms": 3.0745, "flow_q50_ms": 1.7436, "flow_q95_ms": 3.1906}
TBF_FAST_TRAIN = {"first_loss": 136, "head_bytes": 204000, "head_packets": 136, "head_send_mbps": 421.98, "leading_mbps": 273.09,
                  "lost": 383, "received": 617, "sender_limited": False, "send_mbps": 480.76, "sent": 1000, "tail_packets": 481,
                  "tail_mbps": 273.6, "wire_bytes": 1500, "notes": []}


def test_a_tbf_whose_queue_drains_within_the_floor_reads_as_a_policer_that_names_it(monkeypatch):
    """The flows' p95 (3.19 ms) stayed below the 5-ms floor (2-ms bursts + 3 ms of noise): a queue that shallow
    never shows itself, so the policer reading names a FIFO (or a tbf's queue) shallower than the floor — 5 ms x
    178.7 Mbit/s = 112 KB, not the 2 ms less the noise it named before — and the train's head at the 273-Mbit/s
    port excludes an AQM at the rate (it would have delivered the head at its own)."""
    x = read_down(monkeypatch, TBF_FAST_EV, 178.698, TBF_FAST_TRAIN)
    assert x["limiter"] == "policer" and x["port_mbps"] == 273.09
    assert x["limiter_alternatives"] == [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": 5.0}]
    assert "shallower than ~112 KB (5 ms at 179 Mbit/s" in x["limiter_note"]
    # the truth's 72.7-KB tbf queue drains in 3.27 ms at 177.7: said; one of 200 KB (9 ms) would have shown: a miss
    assert c.limiter_said(truth("shaper", 177.70, 72728), x)
    assert not c.limiter_said(truth("shaper", 177.70, 200_000), x)
    assert not c.limiter_said(truth("fq_codel", 177.70), x), "no AQM alternative behind a faster port"


# seed 9 path 5: a tbf at 2.78 Mbit/s on a 3.7-Mbit/s port, its FIFO 4.8 KB (13.9 ms), 59 ms
TBF_SLOW_EV = {"probe_q95_ms": 15.348, "flow_q50_ms": 18.743, "flow_q95_ms": 24.867}
TBF_SLOW_TRAIN = {"first_loss": 4, "head_bytes": 6000, "head_packets": 4, "head_send_mbps": 410.36, "leading_mbps": 3.70,
                  "lost": 994, "received": 6, "sender_limited": False, "send_mbps": 1319.48, "sent": 1000, "tail_packets": 2,
                  "tail_mbps": 3.70, "wire_bytes": 1500, "notes": []}


def test_a_slow_tbf_shallower_than_four_flows_bursts_is_named_beside_the_policer(monkeypatch):
    """At 2.79 Mbit/s four flows' two-segment bursts take 34.4 ms (+ 3: a 37.4-ms floor); the tbf's 4.8-KB queue
    (13.9 ms) drops them as a policer does."""
    x = read_down(monkeypatch, TBF_SLOW_EV, 2.791, TBF_SLOW_TRAIN, base_ms=59.5)
    floor = m_physics.burst_floor_ms(2.791, 4)
    assert round(floor, 2) == 37.40
    assert x["limiter"] == "policer" and x["limiter_alternatives"] == [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": floor}]
    assert c.limiter_said(truth("shaper", 2.779, 4830), x)
    # a FIFO holding 40 ms at that rate would have stood above the floor: not said
    assert not c.limiter_said(truth("shaper", 2.779, 14_000), x)


# seed 8 path 29: a 3000-B FIFO on an LTE-like capacity (mean 22.7 Mbit/s), 6.5 ms; read from the BBR phase
LTE_EV = {"probe_q95_ms": 1.9074, "flow_q50_ms": 0.4678, "flow_q95_ms": 1.1556}
LTE_TRAIN = {"first_loss": 2, "head_bytes": 3000, "head_packets": 2, "head_send_mbps": 778.01, "leading_mbps": 2294.46,
             "lost": 961, "received": 39, "sender_limited": True, "send_mbps": 647.68, "sent": 1000, "tail_packets": 37,
             "tail_mbps": 23.38, "wire_bytes": 1500, "notes": []}


def test_a_two_packet_fifo_on_a_variable_link_acts_as_a_policer_and_is_named(monkeypatch):
    """A 2-packet FIFO drops every burst: it acts as a policer does on these flows. The train's head was the
    server's pace (no port read), so neither the FIFO nor an AQM below the floor (8.07 ms) is excluded."""
    x = read_down(monkeypatch, LTE_EV, 18.935, LTE_TRAIN, base_ms=7.7)
    floor = m_physics.burst_floor_ms(18.935, 4)
    assert x["limiter"] == "policer"
    assert x["limiter_alternatives"] == [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": floor},
                                         {"limiter": "aqm", "target_below_ms": floor}]
    assert c.limiter_said(dict(truth("fifo", 22.68, 3000), variable="lte"), x)
    assert c.limiter_said(truth("codel", 18.9), x)  # CoDel's 5 ms < 8.07
    assert not c.limiter_said(truth("pie", 18.9), x)  # PIE's 15 ms would have stood above the floor


# seed 8 path 22: PIE at 1.82 Mbit/s (Linux's defaults), 8.6 ms
PIE_SLOW_EV = {"probe_q95_ms": 19.575, "flow_q50_ms": 23.499, "flow_q95_ms": 32.259}
PIE_SLOW_TRAIN = {"first_loss": 4, "head_bytes": 6000, "head_packets": 4, "head_send_mbps": 1412.04, "leading_mbps": 1.816,
                  "lost": 996, "received": 4, "sender_limited": False, "send_mbps": 2807.95, "sent": 1000, "tail_packets": 0,
                  "tail_mbps": None, "wire_bytes": 1500, "notes": []}


def test_pie_holding_its_queue_below_the_bursts_is_named_beside_the_shallow_fifo(monkeypatch):
    """The head came at the rate (no faster port: no policer) and the train lost all but 4 packets: PIE's drop
    probability the load left behind, or a 7.4-KB FIFO's tail drop (it admits C/U = 0.07 % of the tail) — the
    same packets. PIE's 15-ms target is below the 55-ms floor (four flows' bursts at 1.84 Mbit/s)."""
    x = read_down(monkeypatch, PIE_SLOW_EV, 1.841, PIE_SLOW_TRAIN, base_ms=8.6)
    floor = m_physics.burst_floor_ms(1.841, 4)
    # the shallow queue's figure: the probes' queueing p95 (19.6 ms) at the rate, below the flows' bursts (buffer_reading)
    assert x["limiter"] == "fifo" and x["buffer_bytes"] == 4504 and "not a policer" in x["limiter_note"]
    assert x["limiter_alternatives"] == [{"limiter": "fifo"}, {"limiter": "aqm", "target_below_ms": floor},
                                         {"limiter": "policer", "port_within": 1.1}]
    assert c.limiter_said(truth("pie", 1.816), x)
    # a policer behind a faster port would have passed the head at that port's rate: excluded; one on a port within
    # 1.1x of its rate (campaign seed 29 path 1: 1.10 Mbit/s on a 1.18-Mbit/s port) cannot be told from the rate
    assert not c.limiter_said(truth("policer", 1.816), x)
    assert not c.limiter_said(dict(truth("policer", 1.816), port_mbps=2.0), x)
    assert c.limiter_said(dict(truth("policer", 1.816), port_mbps=1.9), x)


# seed 9 path 2: PIE at 225.9 Mbit/s, 112 ms; the AQM train right after the loads
PIE_FAST_TRAIN = {"first_loss": 618, "head_bytes": 927000, "head_packets": 618, "head_send_mbps": 518.44, "leading_mbps": 225.92,
                  "lost": 13, "received": 987, "sender_limited": False, "send_mbps": 531.09, "sent": 1000, "tail_packets": 369,
                  "tail_mbps": 225.68, "wire_bytes": 1500}


def test_a_train_too_short_for_the_burst_shows_pie_by_a_first_loss_no_fifo_of_that_depth_gives():
    """1000 packets at 531 Mbit/s build at most 54.3 x (1 - 221/531) = 31.7 ms at 221 Mbit/s, less than twice the
    flows' 52.8 ms: no burst to read. But the first loss came at 927 KB sent at 518 Mbit/s, 19.2 ms of queue, where
    a FIFO as deep as the flows' (52.8 ms) drops none, and then 97 % of the tail arrived where a full FIFO admits
    42 %: PIE (its first drop 33.5 ms into the queue, before CoDel's interval)."""
    assert round(m_trains.train_reach_ms(PIE_FAST_TRAIN, 221.14), 1) == 31.7
    kind, why = m_trains.single_queue_aqm(PIE_FAST_TRAIN, 221.14, 52.78)
    assert kind == "pie" and "first packet at 19.2 ms of queue" in why and "97% arrived" in why
    # the same train's head behind a FIFO whose depth (what the flows filled) is the train's first-loss queue: it
    # drops what its drain cannot take of the tail, 1 - 221/531 of the 382 packets (223 lost, 159 arrived): a FIFO's
    fifo_tail = dict(PIE_FAST_TRAIN, lost=223, tail_packets=159, received=777)
    assert m_trains.single_queue_aqm(fifo_tail, 221.14, 19.2 * 1.5)[0] is None
    # ... where PIE's tail (13 of 382 lost, none of the first 618) is no FIFO's at that depth either: a FIFO that
    # drops so little of a tail met it at a pace P with 1 - C/P <= (sqrt 14 + 1)^2 / 382, and was full at 33.5 ms
    # x that = 1.97 ms, less than half the 28.8 ms the flows stood in
    kind, why = m_trains.single_queue_aqm(PIE_FAST_TRAIN, 221.14, 19.2 * 1.5)
    assert kind == "pie" and "is at most 1.97 ms deep" in why


def test_an_aqm_train_that_cannot_build_the_burst_says_it_cannot_tell():
    """PIE at 425 Mbit/s behind a server that sends at ~500: a 1000-packet train builds 28.2 x (1 - 425/500) =
    4.2 ms, whole — no AQM can show twice the flows' 15 ms there. The reading stays a FIFO and names a CoDel or PIE
    from the rate a train of 1.5 MB at 500 Mbit/s can no longer show (C* = 1 / (30 ms / 12 Mbit + 1 / 500 Mbit/s)
    = 222 Mbit/s)."""
    whole = {"first_loss": None, "head_bytes": 1_500_000, "head_packets": 1000, "lost": 0, "tail_packets": 0, "received": 1000,
             "wire_bytes": 1500, "head_send_mbps": 500.0, "send_mbps": 500.0, "sent": 1000}
    assert m_trains.single_queue_aqm(whole, 425.0, 15.0)[0] is None
    alt = m_trains.train_cannot_tell(whole, 425.0, 15.0)
    assert alt["limiter"] == "aqm" and alt["kinds"] == ["codel", "pie"] and round(alt["rate_above_mbps"]) == 222
    x = {"limiter": "fifo", "limiter_alternatives": [{"limiter": "fifo"}, alt]}
    assert c.limiter_said(truth("pie", 425.0), x) and c.limiter_said(truth("codel", 239.0), x)
    assert not c.limiter_said(truth("codel", 100.0), x), "below C* the train could have shown it"
    assert not c.limiter_said(truth("fq_codel", 425.0), x), "flow isolation is read from the loads, not the train"
    # at 20 Mbit/s the same train builds 570 ms: it can tell, and nothing is named
    assert m_trains.train_cannot_tell(whole, 20.0, 15.0) is None
    # a FIFO's tail drop (C/U of the tail arrived) tells a FIFO whatever the reach
    dropped = dict(whole, first_loss=100, head_packets=100, head_bytes=150_000, lost=765, tail_packets=135, received=235)
    assert m_trains.train_cannot_tell(dropped, 425.0 * 0.3, 400.0) is None
    # ... but not where U is so near C that a full FIFO admits about all of the tail as well
    near = dict(whole, first_loss=900, head_packets=900, head_bytes=1_350_000, lost=2, tail_packets=98, received=998)
    assert m_trains.train_cannot_tell(near, 471.0, 92.5) is not None


def test_a_note_in_words_names_nothing_and_unknown_conditions_hold_for_nothing():
    """The campaign's check cannot become a catch-all: the verdict itself, or an alternative with conditions the
    truth meets — not a note, not an alternative without conditions, not a condition it does not know."""
    t = truth("fifo", 20.0, 3000)
    assert not c.limiter_said(t, {"limiter": "policer", "limiter_note": "a policer, or a FIFO ..."})
    assert not c.limiter_said(t, {"limiter": "policer", "limiter_alternatives": [{"limiter": "fifo"}]})
    assert not c.limiter_said(t, {"limiter": "policer", "limiter_alternatives": [{"limiter": "fifo", "anything": 1}]})
    assert c.limiter_said(t, {"limiter": "fifo"})
    assert c.limiter_said(t, {"limiter": "policer", "limiter_alternatives": [{"limiter": "fifo", "depth_below_ms": 1.3}]})
    assert not c.limiter_said(t, {"limiter": "policer", "limiter_alternatives": [{"limiter": "fifo", "depth_below_ms": 1.1}]})
    # and the campaign's error keys use it
    rec = {"truth": dict(t, loss=0.0, base_rtt_ms=10.0), "measured": {"limiter": "policer", "down_mbps": 20.0, "base_rtt_ms": 10.0,
           "buffer_bytes": None, "loss": 0.0, "limiter_alternatives": [{"limiter": "fifo", "depth_below_ms": 5.0}]},
           "predicted": {"goodput_mbps": 1.0, "p95_rtt_ms": 1.0}, "kernel": {"goodput_mbps": 1.0, "p95_rtt_ms": 1.0},
           "predicted_today": {"goodput_mbps": 1.0}, "kernel_today": {"goodput_mbps": 1.0}}
    e = c.errors(rec)
    assert e["limiter_right"] is False and e["limiter_right_or_named"] is True


# seed 23 path 4: a policer at 156.6 Mbit/s (24 % of a 663-Mbit/s port, a 9.9-ms bucket), 269 ms; the fill collapsed
# (CUBIC 11.1 Mbit/s), the BBR phase's probes read a p95 of 5.20 ms against the 5-ms floor on a VM at load 9-11
POLICER_SLOW_PROBES_EV = {"probe_q95_ms": 5.1982, "flow_q50_ms": 0.7125, "flow_q95_ms": 1.1456}
POLICER_AQM_TRAIN = {"first_loss": 132, "head_bytes": 198000, "head_packets": 132, "head_send_mbps": 4749.93, "leading_mbps": 633.06,
                     "lost": 847, "received": 153, "sender_limited": False, "send_mbps": 6204.53, "sent": 1000, "tail_packets": 21,
                     "tail_mbps": 160.84, "wire_bytes": 1500, "notes": []}


def test_a_fifo_reading_whose_train_arrives_faster_than_the_rate_is_a_token_bucket(monkeypatch):
    """The probes' p95 passed the floor by 0.2 ms, so classify read a FIFO; but the flows' p95 stayed at 1.15 ms
    and the AQM train's head came at 633 Mbit/s, 4x the rate: a queue at 156 Mbit/s passes nothing faster than
    that. The reading becomes the policer (the train's port), naming a tbf shallower than the floor."""
    assert m_classify.classify(5.1982, 0.7125, 1.1456, True, 156.4, 4) == "fifo"
    x = read_down(monkeypatch, POLICER_SLOW_PROBES_EV, 156.4, POLICER_AQM_TRAIN, base_ms=269.0)
    assert x["limiter"] == "policer" and x["port_mbps"] == 633.06 and x["buffer_bytes"] is None
    assert x["limiter_alternatives"] == [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": 5.0}]
    assert "faster than a queue at 156.4 Mbit/s" in x["limiter_note"]
    assert c.limiter_said(truth("policer", 156.6), x)
    # a head at the rate (a FIFO at the port), the server's own pace, or flows that queued past the floor: no change
    assert m_trains.faster_port(dict(POLICER_AQM_TRAIN, leading_mbps=160.0), 156.4, 1.15, 5.0) is None
    assert m_trains.faster_port(dict(POLICER_AQM_TRAIN, sender_limited=True), 156.4, 1.15, 5.0) is None
    assert m_trains.faster_port(POLICER_AQM_TRAIN, 156.4, 5.3, 5.0) is None


# seed 28 path 128: a tbf at 15.6 Mbit/s on a 26.1-Mbit/s port, its queue 35.2 KB (18.0 ms), its bucket 6.8 KB, 154 ms
TBF_QUEUE_EV = {"probe_q95_ms": 3.4404, "flow_q50_ms": 3.3712, "flow_q95_ms": 14.2052}
# classify's loss figures: 89 of 7011 segments retransmitted (21x Mathis's rate at 14.9 Mbit/s over 157.9 ms)
TBF_QUEUE_LOSS = {"loss": 0.012694, "rtt_ms": 157.9005, "loss_rate_mbps": 14.8749}
TBF_QUEUE_TRAIN = {"first_loss": 25, "head_bytes": 37500, "head_packets": 25, "head_send_mbps": 506.33, "leading_mbps": 18.317,
                   "lost": 941, "received": 59, "sender_limited": False, "send_mbps": 493.31, "sent": 1000, "tail_packets": 34,
                   "tail_mbps": 15.628, "tail_arrival_mbps": 15.628, "tail_send_mbps": 17.474, "wire_bytes": 1500, "notes": []}


def paced(count: int, pace_mbps: float, first_loss: int | None, gained_ms: float, lost: int = 0) -> dict:
    """A paced train of ``count`` packets sent evenly at ``pace_mbps`` whose head (the packets before
    ``first_loss``) arrived over its send span and ``gained_ms`` more."""
    gap = 1500 * 8 / (pace_mbps * 1e3)
    head = count if first_loss is None else first_loss
    return {"first_loss": first_loss, "head_packets": head, "head_bytes": head * 1500, "head_send_mbps": pace_mbps,
            "leading_mbps": pace_mbps, "pace_mbps": pace_mbps, "sent": count, "lost": lost, "received": count - lost,
            "tail_packets": count - head - lost, "wire_bytes": 1500, "sender_limited": False, "notes": [],
            "tx_ms": [i * gap for i in range(count)], "head_span_ms": (head - 1) * gap + gained_ms}


def test_a_paced_train_whose_head_gained_a_queue_before_its_first_loss_is_a_tbf_not_a_policer(monkeypatch):
    """The flows lost 21x Mathis's rate with their median queue (3.4 ms) below the 9.2-ms floor: classify read a
    policer, and the back-to-back train's head came at 18.3 Mbit/s, a faster port. But the train paced at 17.1
    Mbit/s (below the port: nothing queues there) arrived 18.0 ms later than it was sent by its first loss, at
    packet 309: a queue stood in front of the bucket, 18.0 ms x 15.56 Mbit/s = 35.0 KB (the tbf's 35.2). A
    policer passes or drops each packet at once (the campaign's 17 stored policers: within 0.16 ms)."""
    tbf = paced(1451, 17.1176, 309, 18.0, lost=88)
    assert round(m_trains.paced_queue_ms(tbf), 6) == 18.0
    x = read_down(monkeypatch, TBF_QUEUE_EV, 15.5604, TBF_QUEUE_TRAIN, base_ms=154.5, paced=tbf, **TBF_QUEUE_LOSS)
    assert x["limiter"] == "fifo" and round(x["tbf_queue_ms"], 6) == 18.0
    assert x["buffer_bytes"] == 35010 and "tbf" in x["limiter_note"]
    assert c.limiter_said(truth("shaper", 15.63, 35201), x)
    assert not c.limiter_said(truth("policer", 15.63), x)
    # before (no paced train read), the policer reading named only a FIFO shallower than the floor: not the truth's
    y = read_down(monkeypatch, TBF_QUEUE_EV, 15.5604, TBF_QUEUE_TRAIN, base_ms=154.5, **TBF_QUEUE_LOSS)
    assert y["limiter"] == "policer" and not c.limiter_said(truth("shaper", 15.63, 35201), y)
    # a policer's paced head (0.16 ms: the most of the stored policers) and a tbf's queue within the measurement's
    # noise stay policers
    for gained in (0.16, 0.99 * m_physics.NOISE_MS):
        z = read_down(monkeypatch, TBF_QUEUE_EV, 15.5604, TBF_QUEUE_TRAIN, base_ms=154.5, paced=paced(1451, 17.1176, 309, gained, 88),
                      **TBF_QUEUE_LOSS)
        assert z["limiter"] == "policer", gained
    # a tbf's queue above the noise but within the flows' burst floor (9.2 ms here) is a tbf: a paced train carries
    # none of the flows' bursts (it read as a policer before: seed 31 path 31, a 63.5-ms tbf queue at 0.57 Mbit/s
    # whose paced head gained 72.5 ms, below that rate's 171-ms floor)
    floor = m_physics.burst_floor_ms(15.5604, 4)
    assert m_physics.NOISE_MS < 0.5 * floor
    z = read_down(monkeypatch, TBF_QUEUE_EV, 15.5604, TBF_QUEUE_TRAIN, base_ms=154.5, paced=paced(1451, 17.1176, 309, 0.5 * floor, 88),
                  **TBF_QUEUE_LOSS)
    assert z["limiter"] == "fifo" and abs(z["tbf_queue_ms"] - 0.5 * floor) < 1e-9
    assert abs(z["buffer_bytes"] - 0.5 * floor / 1e3 * 15.5604e6 / 8) <= 1
    # a paced head the server sent no faster than the rate could queue nowhere: it tells nothing
    slow = dict(paced(1451, 17.1176, 309, 18.0, 88), head_send_mbps=15.0)
    z = read_down(monkeypatch, TBF_QUEUE_EV, 15.5604, TBF_QUEUE_TRAIN, base_ms=154.5, paced=slow, **TBF_QUEUE_LOSS)
    assert z["limiter"] == "policer"


def test_a_tbfs_bucket_is_the_paced_heads_bytes_less_the_queue_in_front_of_it(monkeypatch):
    """A tbf (queue Q in front of a bucket B refilled at C, on a faster port): a train paced at U > C draws the bucket
    dry after B U / (U - C) bytes, then fills the queue after Q U / (U - C) more, and its first loss follows. The
    policer's formula reads B + Q from that head; the queue is what the head gained (Q / C), so the bucket is the
    difference. Before, the tbf kept the policer's reading, B + Q, or the back-to-back head the queue cut (campaign
    seed 108 path 5: a 3000-B bucket read 5.23 KB; seed 102 path 45: 13.2 KB read 5.23)."""
    rate, pace, w = 15.5604, 17.1176, 1500
    bucket, queue = 60_000, 35_010
    head = round((bucket + queue) / (1 - rate / pace) / w)
    # the losses from the first on (how many the bucket's refill passes after it does not enter its formula)
    lost = {"lost_seq": [head + 2 * i for i in range(88)]}
    tbf = dict(paced(1451, pace, head, queue * 8 / (rate * 1e3), lost=88), **lost)
    x = read_down(monkeypatch, TBF_QUEUE_EV, rate, TBF_QUEUE_TRAIN, base_ms=154.5, paced=tbf, **TBF_QUEUE_LOSS)
    assert x["limiter"] == "fifo" and abs(x["buffer_bytes"] - queue) <= 1
    # the paced reading is B + Q within its half packet and the head's rounding to whole packets
    assert abs(x["paced_bucket_bytes"] - (bucket + queue)) <= w
    assert abs(x["bucket_bytes"] - (x["paced_bucket_bytes"] - queue)) <= 1
    assert abs(x["bucket_bytes"] - bucket) <= w and "the bucket ~" in x["bucket_note"]
    # a queue as deep as what the head passed leaves a bucket of one packet, no less (sch_tbf passes nothing larger
    # than its burst)
    deep = dict(paced(1451, pace, head, (bucket + queue + w) * 8 / (rate * 1e3), lost=88), **lost)
    y = read_down(monkeypatch, TBF_QUEUE_EV, rate, TBF_QUEUE_TRAIN, base_ms=154.5, paced=deep, **TBF_QUEUE_LOSS)
    assert y["limiter"] == "fifo" and y["bucket_bytes"] == w
    # a policer's paced head (no queue): its bucket as the policer's trains read it (the two within their resolution
    # here, the first train's is kept), nothing taken out
    z = read_down(monkeypatch, TBF_QUEUE_EV, rate, TBF_QUEUE_TRAIN, base_ms=154.5, paced=dict(paced(1451, pace, head, 0.16, 88), **lost),
                  **TBF_QUEUE_LOSS)
    assert z["limiter"] == "policer" and z["bucket_bytes"] == m_trains.policer_figures(TBF_QUEUE_TRAIN, rate)[1]
    assert "bucket_note" not in z


def test_a_fifo_reading_the_aqm_train_turns_policer_is_read_again_for_a_queue_before_the_bucket(monkeypatch):
    """A FIFO reading with drops (the probes' p95 at the floor) whose AQM train's head came faster than the rate turns
    `policer` (_not_a_fifo) and sends the paced train; where that train's head gained a queue above the noise, the
    direction is a tbf's `fifo` again, with the queue the paced train met (before, it stayed `policer`: seed 31 path
    41, a 3.3-ms tbf queue at 7.9 Mbit/s, whose paced head gained 3.15 ms)."""
    rate = 15.5604
    floor = m_physics.burst_floor_ms(rate, 4)
    ev = {"probe_q95_ms": 1.05 * floor, "flow_q50_ms": 0.95 * floor, "flow_q95_ms": 0.98 * floor}
    assert m_classify.classify(ev["probe_q95_ms"], ev["flow_q50_ms"], ev["flow_q95_ms"], True, rate, 4) == "fifo"
    x = read_down(monkeypatch, ev, rate, TBF_QUEUE_TRAIN, base_ms=154.5, paced=paced(1451, 17.1176, 309, 6.0, 88))
    assert x["limiter"] == "fifo" and abs(x["tbf_queue_ms"] - 6.0) < 1e-9 and "a tbf" in x["limiter_note"]
    assert abs(x["buffer_bytes"] - 6.0e-3 * rate * 1e6 / 8) <= 1 and x["aqm_note"] == x["limiter_note"]
    # its bucket the paced head's less that queue, not the back-to-back head _not_a_fifo read as a policer's
    assert abs(x["bucket_bytes"] - (x["paced_bucket_bytes"] - 6.0e-3 * rate * 1e6 / 8)) <= 1
    # a policer's paced head (no queue) leaves the policer reading _not_a_fifo gave
    y = read_down(monkeypatch, ev, rate, TBF_QUEUE_TRAIN, base_ms=154.5, paced=paced(1451, 17.1176, 309, 0.16, 88))
    assert y["limiter"] == "policer" and "tbf_queue_ms" not in y


# seed 32 path 38: a policer at 26.07 Mbit/s (CIR 81 % of a 32.04-Mbit/s port, 24.1-ms bucket), its port's FIFO 19.7 KB,
# 2.15 ms; the fill's evidence, measured 2026-11-26 through the emulator
ISOLATION_POLICER_EV = {"probe_q95_ms": 3.3935, "flow_q50_ms": 2.6134, "flow_q95_ms": 8.2859}


def isolation_train(lead: float, head: int = 52) -> dict:
    """A back-to-back train of 1000 packets whose head of ``head`` packets arrived at ``lead`` Mbit/s."""
    return {"first_loss": head, "head_bytes": head * 1500, "head_packets": head, "head_send_mbps": 4000.0,
            "leading_mbps": lead, "lost": 900, "received": 100, "sender_limited": False, "send_mbps": 4000.0,
            "sent": 1000, "tail_packets": 100 - head, "tail_mbps": 26.0, "tail_arrival_mbps": 26.0, "wire_bytes": 1500,
            "notes": []}


def test_flow_isolation_whose_train_head_came_faster_than_the_rate_is_a_policer(monkeypatch):
    """The flows' p95 (8.29 ms) exceeded the probes' (3.39) by more than the noise and twice over: flow isolation,
    read as fq_codel with nothing named — but the path is a policer whose bucket let the flows' bursts into the
    port's FIFO. A packet train's head arrived at 32.0 Mbit/s, 1.23x the rate: fq_codel or CAKE at 25.96 Mbit/s passes
    no packet closer to the one before than a packet at that rate, so the direction is a policer's (the FIFO or tbf
    shallower than the floor named beside it), with the train's port."""
    rate = 25.9554
    assert m_classify.classify(ISOLATION_POLICER_EV["probe_q95_ms"], ISOLATION_POLICER_EV["flow_q50_ms"],
                               ISOLATION_POLICER_EV["flow_q95_ms"], True, rate, 4) == "aqm"
    x = read_down(monkeypatch, ISOLATION_POLICER_EV, rate, isolation_train(32.04))
    assert x["limiter"] == "policer" and x["port_mbps"] == 32.04 and "faster than fq_codel or CAKE" in x["limiter_note"]
    assert x["isolation_train"]["leading_mbps"] == 32.04 and x["aqm_qdisc"] is None
    floor = m_physics.burst_floor_ms(rate, 4)
    assert x["limiter_alternatives"] == [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": floor}]
    assert c.limiter_said(truth("policer", 26.07), x)
    # fq_codel at the rate: its train's head comes at the rate (here 1.05x, within the 1.1 margin): isolation stays
    y = read_down(monkeypatch, ISOLATION_POLICER_EV, rate, isolation_train(1.05 * rate))
    assert y["limiter"] == "aqm" and y["isolation_train"]["leading_mbps"] == 1.05 * rate
    assert c.limiter_said(truth("fq_codel", 26.0), y) and not c.limiter_said(truth("policer", 26.07), y)
    # ... and where the flows read the rate low, the train's own tail (drained at the AQM's rate) holds the bar
    w = read_down(monkeypatch, ISOLATION_POLICER_EV, 0.85 * rate, dict(isolation_train(1.02 * rate, head=500),
                                                                          tail_packets=20, tail_arrival_mbps=rate))
    assert w["limiter"] == "aqm"
    # a server that could not send faster than the head arrived shows no port
    z = read_down(monkeypatch, ISOLATION_POLICER_EV, rate, dict(isolation_train(32.04), sender_limited=True))
    assert z["limiter"] == "aqm"


def test_a_short_heads_faster_port_gives_way_to_the_idle_trains_longer_head():
    """Campaign seed 143 path 58 (fq_codel at 22.0 Mbit/s, 2.3 ms, 1.7 % random loss; measured through the emulator
    2026-12-04): flow isolation read, then the isolation train's head — 7 packets over 2.67 ms, cut by a random
    loss, its first packet ~0.6 ms late — came at 26.9 Mbit/s, 1.22x the rate, and turned the direction `policer`.
    The idle path's train had read the port from 51 packets over 27.2 ms: 22.02. A head's dispersion rate errs by its
    packets' arrival-time noise over its span, so the longer head's port stands and the isolation is kept; where
    the idle head is the shorter one, or itself read a faster port (seed 32 path 38's policer on a 32-Mbit/s port),
    the train's head decides as before."""
    rate = 22.0225
    x = {"limiter": "aqm", "aqm_qdisc": None, "rate_mbps": rate, "flows": 4, "evidence": {"dropped": True},
         "wifi_train": {"leading_mbps": 22.0209, "head_packets": 51, "head_span_ms": 27.2469, "sender_limited": False}}
    t = dict(isolation_train(26.9243, head=7), head_span_ms=2.6742, tail_packets=967, tail_arrival_mbps=22.0006)
    y = dict(x)
    assert not m_trains._isolation_behind_a_faster_port(t, y)
    assert y["limiter"] == "aqm" and y["isolation_note"].startswith(
        "the train's head (7 packets over 2.67 ms) arrived at 26.92 Mbit/s, but the idle path's (51 over 27.2 ms) at 22.02")
    # the idle head shorter than the train's: the train's reading stands
    z = dict(x, wifi_train=dict(x["wifi_train"], head_span_ms=2.0))
    assert m_trains._isolation_behind_a_faster_port(t, z) and z["limiter"] == "policer"
    # the idle head read a faster port too (a policer's bucket passed 52 packets at the port): a policer
    w = dict(x, wifi_train=dict(x["wifi_train"], leading_mbps=32.04))
    assert m_trains._isolation_behind_a_faster_port(t, w) and w["limiter"] == "policer"
    # no idle train (the up direction): as before
    v = {k: val for k, val in x.items() if k != "wifi_train"}
    assert m_trains._isolation_behind_a_faster_port(t, v) and v["limiter"] == "policer"


# seed 28 path 188: CoDel at 2.32 Mbit/s (measured 2.10), 232 ms; the policer's train right after the loads
CODEL_SLOW_EV = {"probe_q95_ms": 39.519, "flow_q50_ms": 23.227, "flow_q95_ms": 39.681}
CODEL_SLOW_TRAIN = {"first_loss": 21, "head_bytes": 31500, "head_packets": 21, "head_send_mbps": 904.74, "leading_mbps": 2.31786,
                    "lost": 342, "received": 658, "sender_limited": False, "send_mbps": 6999.83, "sent": 1000, "tail_packets": 637,
                    "tail_mbps": 2.31767, "tail_arrival_mbps": 2.31767, "tail_send_mbps": 5281.41, "wire_bytes": 1500, "notes": []}


def test_a_policer_trains_tail_that_kept_arriving_is_a_single_queue_aqm_not_a_token_bucket(monkeypatch):
    """Drops while the flows' p95 (39.7 ms) stayed below the 48.7-ms floor: a policer reading, and the train's head
    at 2.318 Mbit/s passed 1.1x the measured 2.10 by 0.3 %, so no port excluded it. But 637 of the 979 packets
    after its first loss arrived, where a token bucket (or a full FIFO) passes its rate's share of a tail sent at
    5281 Mbit/s: 0.4 packets. A queue held them and dropped a few: the AQM train's reading, its first loss 120 ms
    into the queue, CoDel's (100 ms + the 5-ms target)."""
    assert m_trains.tail_held(CODEL_SLOW_TRAIN)
    x = read_down(monkeypatch, CODEL_SLOW_EV, 2.1015, CODEL_SLOW_TRAIN, base_ms=231.7)
    assert x["limiter"] == "aqm" and x["aqm_qdisc"] == "codel" and x["buffer_bytes"] is None
    assert "no token bucket passes" in x["limiter_note"] and c.limiter_said(truth("codel", 2.3177), x)
    # the stored policers' and tbfs' trains: cut to their drain's share (a policer's rate, a full port FIFO's)
    assert not m_trains.tail_held(POLICER_AQM_TRAIN) and not m_trains.tail_held(TBF_FAST_TRAIN) and not m_trains.tail_held(TBF_QUEUE_TRAIN)
    # ... and a tail that lost no more than the path's random loss is no drop pattern at all
    assert not m_trains.tail_held(dict(CODEL_SLOW_TRAIN, lost=3), idle_loss=0.005)


# seed 28 path 82: a tbf at 559 Mbit/s on a 943-Mbit/s port (bucket 56.6 ms, 3.95 MB), its queue 1.08 MB (15.5 ms),
# 138 ms, 0.91 % random loss each way (the fill is BBR's)
TBF_LOSSY_EV = {"probe_q95_ms": 15.8246, "flow_q50_ms": 15.4897, "flow_q95_ms": 16.2120}
TBF_LOSSY_LOST = [36, 41, 64, 157, 303, 451, 606, 647, 654, 669, 734, 857] + list(range(869, 921)) + list(range(925, 969))
TBF_LOSSY_TRAIN = {"first_loss": 36, "head_bytes": 54000, "head_packets": 36, "head_send_mbps": 4168.82, "leading_mbps": 969.92,
                   "lost": 108, "received": 892, "sender_limited": False, "send_mbps": 4125.92, "sent": 1000, "tail_packets": 856,
                   "tail_mbps": 942.58, "tail_arrival_mbps": 942.58, "tail_send_mbps": 3662.31, "wire_bytes": 1500,
                   "lost_seq": TBF_LOSSY_LOST, "notes": []}


def test_an_aqm_train_that_arrived_faster_than_the_rate_shows_no_aqm_at_the_rate(monkeypatch):
    """The flows stood 16.2 ms in a queue (a FIFO reading), and the AQM train's losses in its first 1000 packets
    went beyond the random loss: read as PIE when its first loss (packet 36, the path's) was taken as the queue's.
    From where the losses beyond the random ones begin (packet 869: 12 before it, ~9 expected) the train read alone
    is a FIFO's tail drop. And its head came at 970 Mbit/s and its tail at 943, 1.5x the 616 Mbit/s the flows got:
    the tbf's 3.95-MB bucket passed the whole 1.5-MB train at the port's rate, and the run of losses at its end is
    the port's FIFO. An AQM at the rate delivers nothing faster than the rate: a tbf's queue, the FIFO the flows
    stood in."""
    assert len(TBF_LOSSY_LOST) == 108
    kind, why = m_trains.single_queue_aqm(TBF_LOSSY_TRAIN, 615.80, 16.212, 0.010345)
    assert kind is None and "its 12 losses before packet 869" in why and "a FIFO's buffer" in why
    x = read_down(monkeypatch, TBF_LOSSY_EV, 615.80, TBF_LOSSY_TRAIN, idle_loss=0.010345, base_ms=138.5)
    assert x["limiter"] == "fifo" and x.get("aqm_qdisc") is None and x["buffer_bytes"] == int(16.212e-3 * 615.8e6 / 8)
    assert "token bucket" in x["limiter_note"] and c.limiter_said(truth("shaper", 558.97, 1083182), x)


# campaign seed 111 path 9: fq_codel at 49.46 Mbit/s, 84.8 ms, behind an airtime WiFi hop at MCS 13; the CUBIC fill
# delivered 41.78 Mbit/s, and the hop's access delay lifted the probe as much as the flows (no isolation read)
HELD_EV = {"probe_q95_ms": 5.9411, "flow_q50_ms": 5.6962, "flow_q95_ms": 8.5316}
HELD_TRAIN = {"first_loss": 434, "head_bytes": 651000, "head_packets": 434, "head_send_mbps": 3750.67, "leading_mbps": 49.203,
              "lost": 2, "lost_seq": [434, 848], "received": 998, "sender_limited": False, "send_mbps": 3841.14,
              "sent": 1000, "tail_packets": 564, "tail_mbps": 49.367, "tail_arrival_mbps": 49.367,
              "tail_send_mbps": 3899.53, "wire_bytes": 1500, "notes": []}


def test_a_train_whose_tail_a_queue_held_gives_the_rate_and_its_head_then_shows_no_bucket(monkeypatch):
    """The AQM train's head came at 49.2 Mbit/s, 1.18x the flows' 41.78: read alone, a token bucket in front of a
    faster port (a tbf). But its tail after the first loss kept arriving — 564 packets, 2 lost, where a full FIFO or
    an empty bucket passes r/U = 1.3 % of a tail sent at 3.9 Gbit/s — at 49.37 Mbit/s: a queue that never emptied,
    drained at the bottleneck's rate, the head's too (no bucket ran dry: its tail would have come at the bucket's
    rate). The rate is the tail's, and the train reads CoDel from it (its first loss 105 ms into the queue); the
    truth's fq_codel is an AQM as said."""
    assert m_trains.held_tail_mbps(HELD_TRAIN) == 49.367
    x = read_down(monkeypatch, HELD_EV, 41.7837, HELD_TRAIN, base_ms=84.82)
    assert x["rate_mbps"] == 49.367 and x["rate_from"]["held_tail"] == "aqm_train" and "1.2x the 41.78" in x["rate_note"]
    assert x["limiter"] == "aqm" and x["aqm_qdisc"] == "codel" and "token bucket" not in x["limiter_note"]
    assert c.limiter_said(truth("fq_codel", 49.455), x)
    # a tail a full FIFO cut (the port's, behind a bucket that outlasted the train: r/U of it arrived) is no queue's
    # rate; nor, on a lossy path, one counted from a random first loss (the queue's losses begin at packet 869)
    assert m_trains.held_tail_mbps(TBF_FAST_TRAIN) is None
    assert m_trains.held_tail_mbps(TBF_LOSSY_TRAIN, 0.010345) is None
    # a tail within the margin of the flows' rate leaves it theirs
    y = read_down(monkeypatch, HELD_EV, 46.0, HELD_TRAIN, base_ms=84.82)
    assert y["rate_mbps"] == 46.0 and "held_tail" not in y.get("rate_from", {})
    # read as flow isolation (the probe skipping the flows' backlog), the isolation train's held tail is the rate too,
    # and its head no faster port: the isolation stands
    z = read_down(monkeypatch, dict(HELD_EV, probe_q95_ms=0.8), 41.7837, HELD_TRAIN, base_ms=84.82)
    assert z["limiter"] == "aqm" and z.get("aqm_qdisc") is None and z["rate_mbps"] == 49.367
    assert z["rate_from"]["held_tail"] == "isolation_train"


# campaign seed 120 path 12: a FIFO at 39.98 Mbit/s, 11.8 ms, 10.2 KB (0.17 BDP), 0.055 % random loss; the CUBIC fill
# delivered 37.40 (its flows left the link idle after each loss), and the policer's back-to-back train lost 887 of 1000
FIFO_TAIL_TRAIN = {"first_loss": 7, "head_bytes": 10500, "head_packets": 7, "head_send_mbps": 705.592, "leading_mbps": 40.06,
                   "lost": 887, "received": 113, "sender_limited": False, "send_mbps": 375.657, "sent": 1000,
                   "tail_packets": 106, "tail_mbps": 39.98, "tail_arrival_mbps": 39.98, "tail_send_mbps": 40.089,
                   "wire_bytes": 1500, "pace_mbps": None, "lost_seq": list(range(7, 894)), "tail_span_ms": 31.815, "notes": []}


# campaign seed 120 path 10's up direction: CAKE at 0.452 Mbit/s, 26.5 ms; the up policer's train of 92 packets
CAKE_UP_TRAIN = {"first_loss": 6, "head_bytes": 9000, "head_packets": 6, "head_send_mbps": 335.3548, "leading_mbps": 0.452,
                 "lost": 37, "received": 55, "sender_limited": False, "send_mbps": 593.7894, "sent": 92, "tail_packets": 49,
                 "tail_mbps": 0.452, "tail_arrival_mbps": 0.452, "tail_send_mbps": 356.7238, "wire_bytes": 1500,
                 "pace_mbps": None, "tail_span_ms": 1300.956, "notes": []}


def test_a_train_tail_a_full_queue_drained_is_the_rate_the_flows_fell_short_of():
    """A full FIFO admits a packet as one leaves: the 106 packets that arrived after the train's first loss (887 of
    its 1000 dropped, sent at 376 Mbit/s) came at the FIFO's drain, 39.98 Mbit/s — the truth's rate — where the
    flows delivered 37.40 (-6.4 %). Within the train's margin above the flows' rate, the direction takes it; its
    buffer read in bytes by a train stays, one read as a queue in time scales with the rate."""
    assert m_trains.drained_mbps(FIFO_TAIL_TRAIN, 0.000455) == 39.98
    x = {"limiter": "fifo", "rate_mbps": 37.4037, "train": FIFO_TAIL_TRAIN, "buffer_bytes": 9196, "buffer_from": "train"}
    assert m.rate_from_drained_tail(x, 0.000455, lambda s: None)
    assert x["rate_mbps"] == 39.98 and x["rate_from"]["drained_tail"] == "train" and x["buffer_bytes"] == 9196
    assert "6.9 % above the 37.4 the flows delivered" in x["rate_note"]
    y = {"limiter": "fifo", "rate_mbps": 37.4037, "wifi_train": FIFO_TAIL_TRAIN, "buffer_bytes": 9000,
         "buffer_bytes_max": 20000, "buffer_from": None}
    assert m.rate_from_drained_tail(y, 0.000455, lambda s: None)
    assert (y["buffer_bytes"], y["buffer_bytes_max"]) == (int(9000 * 39.98 / 37.4037), int(20000 * 39.98 / 37.4037))
    # beyond the margin (a capacity that moved, or a held tail's case), below the flows' rate, or behind a WiFi hop
    # that limits: the flows' rate stands
    for rate, extra in ((36.0, {}), (40.5, {}), (37.4037, {"wifi": {"design": "airtime"}})):
        z = dict({"limiter": "fifo", "rate_mbps": rate, "train": FIFO_TAIL_TRAIN}, **extra)
        assert not m.rate_from_drained_tail(z, 0.000455, lambda s: None) and z["rate_mbps"] == rate
    # below the rate: a tail between what the load phases read decides between them (seed 120 path 10, up: CAKE at
    # 0.452 Mbit/s, the BBR phase's delivery-rate samples 0.553, the CUBIC fill's delivered bytes 0.445); below
    # every phase it is another bottleneck's, and the rate stands
    up = {"limiter": "aqm", "rate_mbps": 0.553, "rate_by_cc": {"cubic": 0.4451, "bbr": 0.553},
          "rate_from": {"cubic": "sack_delivered_bytes", "bbr": "delivery_rate"}, "train": CAKE_UP_TRAIN}
    assert m.rate_from_drained_tail(up, 0.0, lambda s: None) and up["rate_mbps"] == 0.452
    assert "between the 0.4451 and 0.553 the load phases read" in up["rate_note"] and "bbr from delivery_rate" in up["rate_note"]
    # a higher reading the tail lies just below prints with the digits that tell them apart (seed 193 path 31's
    # replay printed "arrived at 35.54 Mbit/s, between the 2.57 and 35.54")
    near = {"limiter": "aqm", "rate_mbps": 0.45201, "rate_by_cc": {"cubic": 0.4451, "bbr": 0.45201},
            "rate_from": {"cubic": "sack_delivered_bytes", "bbr": "round_trips"}, "train": CAKE_UP_TRAIN}
    assert m.rate_from_drained_tail(near, 0.0, lambda s: None) and near["rate_mbps"] == 0.452
    assert "arrived at 0.452 Mbit/s, between the 0.4451 and 0.45201 the load phases read" in near["rate_note"]
    low = {"limiter": "aqm", "rate_mbps": 0.553, "rate_by_cc": {"cubic": 0.50, "bbr": 0.553}, "train": CAKE_UP_TRAIN}
    assert not m.rate_from_drained_tail(low, 0.0, lambda s: None) and low["rate_mbps"] == 0.553
    # a policer's tail: its first packet passed on what the head left of a token, so 12 packets read up to 1/12 high
    # (seed 122 path 10: 6.85 Mbit/s on a 17.3-Mbit/s port, the tail 7.43, the flows 6.79): no policer reading takes
    # one, nor a rate a train read already (that policer's paced train, 560 packets at 6.854); and a tail too quick
    # for its bounds to clear the rate: a FIFO's 32 packets at 442 Mbit/s over 0.87 ms with 0.03 ms of timing noise
    # (seed 122 path 21: 429 Mbit/s, the flows 418.5)
    short = dict(FIFO_TAIL_TRAIN, tail_packets=12, tail_arrival_mbps=7.4278, tail_mbps=7.4278, tail_span_ms=19.386,
                 send_mbps=547.1, lost=984, received=16, lost_seq=list(range(4, 988)))
    lo, hi = m_trains.tail_bounds(short)
    assert round(lo, 3) == 6.809 and round(hi, 3) == 7.428
    fast = dict(short, tail_packets=32, tail_arrival_mbps=442.26, tail_mbps=442.26, tail_span_ms=0.8682, send_mbps=2373.4)
    for limiter, t, rate, jitter, by in (("policer", short, 6.7863, 0.0, {}), ("fifo", fast, 418.53, 0.03, {}),
                                         ("fifo", short, 6.8538, 0.0, {"cubic": 6.7863, "paced_train": 6.8538})):
        z = {"limiter": limiter, "rate_mbps": rate, "train": t, "rate_by_cc": by}
        assert not m.rate_from_drained_tail(z, 0.0, lambda s: None, jitter) and z["rate_mbps"] == rate
    # a tail the server paced, a sender that set the train's pace, one sent no faster than it arrived (the sender's
    # spacing, not the bottleneck's), one that lost no more than the random loss, a lossy tbf's counted from a
    # random first loss: no rate
    for t, loss in ((dict(FIFO_TAIL_TRAIN, pace_mbps=60.0), 0.0), (dict(FIFO_TAIL_TRAIN, sender_limited=True), 0.0),
                    (dict(FIFO_TAIL_TRAIN, send_mbps=42.0), 0.0), (dict(FIFO_TAIL_TRAIN, lost=2, lost_seq=[7, 50]), 0.01),
                    (TBF_LOSSY_TRAIN, 0.010345)):
        assert m_trains.drained_mbps(t, loss) is None


def test_cubic_grows_back_to_its_loss_window_in_k_or_in_the_friendly_regions_time():
    """tcp_cubic.c: beta 717/1024, C 0.4; K = cbrt(W (1 - beta) / C), or (1 - beta) W / (3 (1 - beta) / (1 + beta))
    round trips in the TCP-friendly region, whichever is shorter."""
    assert round(m_physics.cubic_return_s(683 * m_physics.MSS, 30.0), 2) == 8.0
    assert round(m_physics.cubic_return_s(90 * m_physics.MSS, 11.0), 3) == 0.561


# seed 28 path 151: fq_codel at 375 Mbit/s (Linux's defaults), 49.5 ms; the CUBIC fill's first losses at 0.46 s
FQ_FAST_FIRST = {"flows": [{"id": i, "t_s": 0.4621, "cwnd_bytes": w, "sent_bytes": 2.0e6}
                           for i, w in enumerate((813776.0, 744272.0, 822464.0, 734136.0))], "sample_s": 0.033}


def test_flows_that_could_not_grow_back_to_their_first_losses_leave_the_depth_unseen_up_to_their_backoffs_bound():
    """Drops (7 retransmissions, the slow start's) while the flows' p95 stayed at 4.18 ms, below the 5-ms floor: a
    policer reading, naming a FIFO or an AQM below 5 ms — which fq_codel's 5-ms target is not. But the median flow
    lost at 814 KB (562 segments): CUBIC grows back to that in K = 7.5 s, after the 5-s phase ended, so the queue
    the flows stood in after shows nothing of what dropped them. Their backoff still bounds it: 0.7 x (BDP + D)
    stood less than the floor above the BDP, D < 49.66 x 0.428 + 5 / 0.7 = 28.4 ms."""
    bound, why = m_classify.unreturned_depth_ms(FQ_FAST_FIRST, 375.33, 4, 49.66, 5.0)
    assert round(bound, 1) == 28.4 and "could not grow back" in why
    alts = m_classify.alternatives("policer", 375.33, 4, bound)
    assert alts[1:] == [{"limiter": "fifo", "depth_below_ms": bound}, {"limiter": "aqm", "target_below_ms": bound}]
    x = {"limiter": "policer", "limiter_alternatives": alts}
    assert c.limiter_said(truth("fq_codel", 375.03), x)
    assert not c.limiter_said(truth("fq_codel", 375.03), {"limiter": "policer", "limiter_alternatives": m_classify.alternatives("policer", 375.33, 4)})
    assert not c.limiter_said(truth("fifo", 375.03, 3_000_000), x), "a 64-ms FIFO would have stood after the backoff"
    # a phase long enough for them to come back (or flows that lost at small windows) leaves the floor as it was
    assert m_classify.unreturned_depth_ms(FQ_FAST_FIRST, 375.33, 4, 49.66, 8.0)[0] is None
    small = {"flows": [dict(f, cwnd_bytes=130e3) for f in FQ_FAST_FIRST["flows"]], "sample_s": 0.033}
    assert m_classify.unreturned_depth_ms(small, 83.2, 4, 10.65, 5.0)[0] is None


# seed 28 path 165: a policer at 82.8 Mbit/s (its bucket 57 ms) on an 88.8-Mbit/s port whose FIFO holds 278 KB, 10.6 ms
POLICER_NEAR_EV = {"probe_q95_ms": 3.7039, "flow_q50_ms": 0.9081, "flow_q95_ms": 3.9265}
POLICER_NEAR_TRAIN = {"first_loss": 187, "head_bytes": 280500, "head_packets": 187, "head_send_mbps": 8056.48, "leading_mbps": 88.763,
                      "lost": 804, "received": 196, "sender_limited": False, "send_mbps": 8098.62, "sent": 1000, "tail_packets": 9,
                      "tail_mbps": 88.240, "tail_arrival_mbps": 88.240, "tail_send_mbps": 99.144, "wire_bytes": 1500, "notes": []}


def test_a_train_that_filled_a_fifo_far_deeper_than_the_flows_queue_shows_the_token_bucket_in_front_of_it(monkeypatch):
    """Drops while the flows' p95 stayed at 3.9 ms: a policer reading; the train's head came at 88.76 Mbit/s, within
    1.1x of the measured 83.2, so no faster port — read as a FIFO shallower than the bursts before. But the train
    filled a FIFO of 277 KB (24.9 ms at its head's rate) and was tail-dropped there, and the flows (windows of ~90
    segments at 11 ms: back at their losses in 0.6 s) would have stood at that depth had it dropped them: a token
    bucket in front of it did — the policer, with the port's FIFO (the truth's: 277.9 KB)."""
    x = read_down(monkeypatch, POLICER_NEAR_EV, 83.2035, POLICER_NEAR_TRAIN, base_ms=10.65)
    assert x["limiter"] == "policer" and x["port_mbps"] == 88.763 and x["port_buffer_bytes"] == int(186.5 * 1500 * (1 - 88.763 / 8056.48))
    assert x["limiter_alternatives"] == [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": 5.0}]
    assert c.limiter_said(truth("policer", 82.82), x)
    # flows that never came back to their losses' windows, or that stood at the train's depth: the FIFO stays
    y = read_down(monkeypatch, POLICER_NEAR_EV, 83.2035, POLICER_NEAR_TRAIN, base_ms=10.65)
    y.update(limiter="fifo", unseen_depth_ms=30.0)
    assert not m_trains._fifo_deeper_than_the_flows(POLICER_NEAR_TRAIN, y)
    z = read_down(monkeypatch, dict(POLICER_NEAR_EV, probe_q95_ms=24.0, flow_q50_ms=20.0, flow_q95_ms=24.5), 83.2035,
                  POLICER_NEAR_TRAIN, base_ms=10.65)
    assert z["limiter"] == "fifo"
    # ... or a random loss that alone holds their windows below the FIFO's depth (Mathis: 83 Mbit/s over 10.65 +
    # 25.1 ms takes no more than 0.035 %)
    lossy = dict(POLICER_NEAR_EV, loaded_rtt_ms=11.56, flow_q50_ms=0.91)
    w = read_down(monkeypatch, lossy, 83.2035, POLICER_NEAR_TRAIN, base_ms=10.65, idle_loss=0.001)
    assert w["limiter"] == "fifo"
    v = read_down(monkeypatch, lossy, 83.2035, POLICER_NEAR_TRAIN, base_ms=10.65, idle_loss=0.0001)
    assert v["limiter"] == "policer"
    # ... or a head slower than the flows got through beyond 1.1x: no port of theirs, the capacity moved between the
    # load and the train (campaign seed 80 path 49, an LTE-like FIFO: flows 15.8 Mbit/s, the head 6.0, read as "a
    # policer at 15.78 Mbit/s on a port of ~6.005"); within 1.1x the rule reads as before
    slow_head = dict(POLICER_NEAR_TRAIN, leading_mbps=83.2035 / 1.11)
    assert read_down(monkeypatch, POLICER_NEAR_EV, 83.2035, slow_head, base_ms=10.65)["limiter"] == "fifo"
    near_head = dict(POLICER_NEAR_TRAIN, leading_mbps=83.2035 / 1.09)
    assert read_down(monkeypatch, POLICER_NEAR_EV, 83.2035, near_head, base_ms=10.65)["limiter"] == "policer"


def test_bbrs_own_queue_tells_no_fifos_depth_only_a_port_beyond_the_margin_tells_a_bucket(monkeypatch):
    """The same train and queue as above, but the evidence BBR's (its queue the larger; fresh seed 78 path 55, a
    7.06-ms FIFO at 284 Mbit/s and 68 ms: BBR's queueing p95 0.41 ms, 8.9 % retransmitted, read `policer`). BBR paces
    at its estimate and queues about nothing whatever the FIFO's depth, so its queue bounds none: with the head's
    88.76 Mbit/s within 1.1x of the flows' 83.2 the FIFO reading stays, the policer on a port within 1.1x named
    beside it. Held 1.14x below the head (seed 78 path 49, a policer at 268 Mbit/s on a 304-Mbit/s port: BBR got
    267.6, the head read 303.9), BBR met something slower than the port's FIFO: the token bucket in front of it."""
    ev = dict(POLICER_NEAR_EV, phase="bbr")
    x = read_down(monkeypatch, ev, 83.2035, POLICER_NEAR_TRAIN, base_ms=10.65)
    assert x["limiter"] == "fifo"
    assert {"limiter": "policer", "port_within": 1.1} in x["limiter_alternatives"]
    assert c.limiter_said(truth("fifo", 83.2, 277_900), x)
    # the rule itself on a FIFO reading of flows held to 78 Mbit/s (88.763 / 78 = 1.138x)
    y = dict(x, rate_mbps=78.0, limiter="fifo")
    assert m_trains._fifo_deeper_than_the_flows(POLICER_NEAR_TRAIN, y)
    assert y["limiter"] == "policer" and y["port_mbps"] == 88.763
    assert y["limiter_note"].startswith("drops while BBR's flows got 78 Mbit/s with their queueing p95 at 3.93 ms")
    assert "more than 1.1x below it is a token bucket" in y["limiter_note"]
    assert c.limiter_said(truth("policer", 78.0), y)
    # within the margin the rule reads nothing
    assert not m_trains._fifo_deeper_than_the_flows(POLICER_NEAR_TRAIN, dict(x, limiter="fifo"))


# seed 28 path 199: PIE at 279 Mbit/s, 3.2 ms, 2.3 % random loss each way (the fill is BBR's)
PIE_LOSSY_EV = {"phase": "fill", "rate_mbps": 275.577, "probe_q95_ms": 16.1314, "flow_q50_ms": 9.1150, "flow_q95_ms": 14.8586,
                "dropped": False, "loaded_rtt_ms": 12.44925}


def test_a_queue_that_stood_without_drops_names_an_aqm_whose_target_is_above_it():
    """BBR's flows stood 14.9 ms (p95) and lost no more than the 2.4 % random loss: a FIFO at least that deep, or an
    AQM that drops nothing there — one whose target is above what stood: 14.86 less their ACK wait (4 x 1500 B at
    275.6 Mbit/s, 0.17 ms) and the 3-ms noise = 11.68 ms. PIE's 15 ms is; CoDel's 5 ms would have dropped beyond
    the random loss."""
    alts, note = m_classify.undropped_alternatives("fifo", PIE_LOSSY_EV, 275.577, 4)
    assert alts[0] == {"limiter": "fifo"} and alts[1]["limiter"] == "aqm" and round(alts[1]["target_above_ms"], 2) == 11.68
    assert "without drops beyond the random loss" in note
    x = {"limiter": "fifo", "limiter_alternatives": alts}
    assert c.limiter_said(truth("pie", 278.7), x) and not c.limiter_said(truth("codel", 278.7), x)
    # seed 9 path 3 (CoDel at 65.7 Mbit/s, 184 ms): a fill that reached a third of the rate (its bottleneck idle) and
    # lost nothing beyond the random loss stood 5.72 ms, within its ACK wait (4.18 ms) and the noise: any AQM
    idle = {"phase": "fill", "rate_mbps": 22.9606, "flow_q95_ms": 5.7178, "dropped": False, "loaded_rtt_ms": 184.746}
    assert m_classify.undropped_alternatives("fifo", idle, 64.14, 4)[0][1]["target_above_ms"] == 0.0
    # drops, or another verdict: nothing of the kind
    assert m_classify.undropped_alternatives("fifo", dict(PIE_LOSSY_EV, dropped=True), 275.577, 4) == (None, None)
    assert m_classify.undropped_alternatives("policer", PIE_LOSSY_EV, 275.577, 4) == (None, None)


# campaign seed 71 path 2: a policer at 405 Mbit/s (bucket 6.5 ms, 330 KB) on a 592-Mbit/s port, 5 ms
POLICER_FAST_EV = {"probe_q95_ms": 1.1548, "flow_q50_ms": 0.2712, "flow_q95_ms": 0.4689}
POLICER_FAST_TRAIN = {"first_loss": 230, "head_bytes": 345000, "head_packets": 230, "head_send_mbps": 516.53, "leading_mbps": 425.22,
                      "lost": 713, "received": 287, "sender_limited": False, "send_mbps": 1752.68, "sent": 1000, "tail_packets": 57,
                      "tail_mbps": 462.19, "tail_arrival_mbps": 593.71, "tail_send_mbps": 462.19, "wire_bytes": 1500, "notes": []}


def test_a_tail_that_arrived_faster_than_the_rate_shows_the_policers_port_where_the_head_could_not(monkeypatch):
    """The server sent the head at 517 Mbit/s and it arrived at 425, within 1.1x of the measured 405.8: no faster port
    by the head, read as a FIFO too shallow for the bursts before. But the 57 packets after the first loss arrived
    at 594 Mbit/s: a queue at 405.8 passes nothing that fast; a policer before the port passes its tail into the
    port's queue behind the head, which delivers it at the port's rate (592)."""
    x = read_down(monkeypatch, POLICER_FAST_EV, 405.8165, POLICER_FAST_TRAIN, base_ms=5.04)
    assert x["limiter"] == "policer" and x["port_mbps"] == 593.71
    assert c.limiter_said(truth("policer", 405.2), x)
    # a tail of fewer packets than the probe reads a rate from, or one at the rate: the FIFO reading as before
    y = read_down(monkeypatch, POLICER_FAST_EV, 405.8165, dict(POLICER_FAST_TRAIN, tail_packets=9), base_ms=5.04)
    assert y["limiter"] == "fifo"
    z = read_down(monkeypatch, POLICER_FAST_EV, 405.8165, dict(POLICER_FAST_TRAIN, tail_arrival_mbps=430.0), base_ms=5.04)
    assert z["limiter"] == "fifo"


# fresh seed 35 path 38 through the emulator: a 129.7-Mbit/s policer (bucket 7.8 ms) on a 149.2-Mbit/s port, 232 ms,
# 1 % random loss; BBR's flows read 137.7 Mbit/s (6 % high)
POLICER_ADMITTED_EV = {"probe_q95_ms": 0.6938, "flow_q50_ms": 1.1124, "flow_q95_ms": 2.4632}
POLICER_ADMITTED_TRAIN = {"first_loss": 87, "head_bytes": 130500, "head_packets": 87, "head_send_mbps": 3462.46,
                      "leading_mbps": 149.003, "lost": 881, "received": 119, "sender_limited": False, "send_mbps": 3603.50,
                      "sent": 1000, "tail_packets": 32, "tail_mbps": 130.107, "tail_arrival_mbps": 149.338,
                      "tail_send_mbps": 130.107, "wire_bytes": 1500, "notes": []}


def test_a_tail_that_arrived_faster_than_it_was_admitted_shows_the_port_where_the_flows_read_high(monkeypatch):
    """The head arrived at 149.0 Mbit/s and the tail at 149.3, both within 1.1x of the flows' 137.7 (6 % above the
    policed 129.7): read as a FIFO too shallow for the bursts before, with nothing named. But the tail's 32 packets
    were admitted at 130.1 (their send span after the head): a queue admits a tail sent faster than it drains one
    packet a drain time, so they would arrive as far apart as they were admitted; 149.3 > 1.1 x 130.1 is a policer
    in front of a faster port."""
    x = read_down(monkeypatch, POLICER_ADMITTED_EV, 137.679, POLICER_ADMITTED_TRAIN, idle_loss=0.0104, base_ms=232.47)
    assert x["limiter"] == "policer" and x["port_mbps"] == 149.338
    assert "faster than a queue at 130.1 (what admitted them)" in x["train_evidence"][-1]
    # a tail that arrived as it was admitted (a queue's: arrival over send 0.98-1.002 on the stored FIFO trains)
    y = read_down(monkeypatch, POLICER_ADMITTED_EV, 137.679, dict(POLICER_ADMITTED_TRAIN, tail_send_mbps=149.0),
                  idle_loss=0.0104, base_ms=232.47)
    assert y["limiter"] == "fifo"


# seed 33 path 32 through the emulator: a 31.94-Mbit/s FIFO of 3.5 KB, 2.24 ms; 4 CUBIC flows read 21.48, each losing
# its first packet within the first 33-ms sample (91.2 KB delivered in all)
SHALLOW_FIFO_EV = {"probe_q95_ms": 1.0361, "flow_q50_ms": 2.0398, "flow_q95_ms": 5.8593}
SHALLOW_FIFO_TRAIN = {"first_loss": 3, "head_bytes": 4500, "head_packets": 3, "head_send_mbps": 830.94, "leading_mbps": 32.122,
                      "lost": 988, "received": 12, "sender_limited": False, "send_mbps": 3322.3, "sent": 1000, "tail_packets": 9,
                      "tail_mbps": 31.854, "tail_arrival_mbps": 31.940, "tail_send_mbps": 31.854, "wire_bytes": 1500, "notes": []}
SHALLOW_FIFO_PACED = {"sent": 2000, "lost": 0, "lost_seq": [], "first_loss": None, "received": 2000, "wire_bytes": 1500,
                      "head_send_mbps": 30.483, "leading_mbps": 30.484, "pace_mbps": 30.516, "send_ms": 786.93,
                      "head_packets": 2000, "sender_limited": False, "handshake_rtt_ms": 2.58, "tail_packets": 0, "notes": []}
SHALLOW_FIFO_FIRST = {"flows": [{"id": i, "sent_bytes": b} for i, b in enumerate((8688.0, 15928.0, 55024.0, 11584.0))],
                      "lossless": 0}


def test_a_shallow_fifo_whose_flows_lost_before_any_bucket_the_paced_train_needs_reads_fifo_at_the_port(monkeypatch):
    """Drops without a queue: `policer` at the flows' 21.48. The first train read the port (32.12) and the FIFO its
    head filled (3.6 KB); the paced train passed 3 MB whole at 30.48, which a bucket at 21.48 passes only if it holds
    at least 886 KB — but every flow had lost its first packet with 91.2 KB delivered in all (_paced_past_the_flows):
    a FIFO at the port, as the truth."""
    x = read_down(monkeypatch, SHALLOW_FIFO_EV, 21.4832, SHALLOW_FIFO_TRAIN, base_ms=2.24, paced=SHALLOW_FIFO_PACED,
                  first_loss=SHALLOW_FIFO_FIRST)
    assert x["limiter"] == "fifo" and x["rate_mbps"] == 32.122 and x["buffer_bytes"] == 3605
    # its buffer: (3 - 1/2) x 1500 x (1 - 32.122 / 830.94) = 3605 B (port_fifo; the truth 3478)
    assert c.limiter_said(truth("fifo", 31.94, 3478), x)
    # the same trains with flows that delivered what such a bucket holds before their first losses: the policer stays
    big = {"flows": [{"id": i, "sent_bytes": 250e3} for i in range(4)], "lossless": 0}
    y = read_down(monkeypatch, SHALLOW_FIFO_EV, 21.4832, SHALLOW_FIFO_TRAIN, base_ms=2.24, paced=SHALLOW_FIFO_PACED,
                  first_loss=big)
    assert y["limiter"] == "policer"


def test_a_bursty_fills_tail_is_a_delayed_acks_lift_not_flow_isolation():
    """Ranked seed 50 path 6 (PIE, one queue, at 260 Mbit/s and 348 ms): the fill delivered 223 Mbit/s of the
    direction's 259, so its bottleneck idled and the flows' windows came as bursts; their smoothed RTT's p95
    stood 8.33 ms above the base, the probe's 3.05, with no queue of their own (rule 3 read flow isolation, then
    COBALT's first signal: CAKE). One delayed ACK, after up to D = 200 ms at this RTT, lifts the smoothed RTT
    by D / 8 = 25 ms: the tail no longer exceeds the probe by the noise beyond it."""
    from bloatlab.advise import physics

    assert physics.ack_tail_ms(348.0) == 25.0 and physics.ack_tail_ms(10.0) == 5.0 and physics.ack_tail_ms(97.0) == 97.0 / 8
    ev = dict(probe_q95=3.0517714955090582, flow_q50=2.353187245509048, flow_q95=8.325437245509022)
    args = (ev["probe_q95"], ev["flow_q50"], ev["flow_q95"], True, 259.3341299644235, 4, 0.0077343546647826574,
            350.64825)
    # drops without a queue of the flows' own: rule 2's policer, which the packet train (no faster port) turns
    # into a queue; with the policer excluded, rule 4's shared queue
    assert m_classify.classify(*args, 223.06365073905465) == "policer"
    assert m_classify.classify(*args, 223.06365073905465, policer=False) == "fifo"
    # the same figures from a fill within the rate phases' spread of the rate (no idle bottleneck): the tail's
    # wait is the mean's (0.22 ms at 4 flows and 259 Mbit/s), and 8.33 ms against the probe's 3.05 is isolation
    within = 259.3341299644235 / (1 + m_classify.RATE_SPREAD) * 1.001
    assert m_classify.classify(*args, within, policer=False) == "aqm"


# campaign seed 49 path 6 (/work/camp49): a 181-KB FIFO at 15.7 Mbit/s, 310 ms (Starlink-like capacity). The CUBIC
# fill's four flows first lost 1.9-2.4 s in (windows of 77-253 KB), then nothing in the window its queue was read over
RAMP_EV = {"phase": "fill", "rate_mbps": 13.33175891751941, "probe_q95_ms": 8.444275145808376, "flow_q50_ms": 0.8684325958083718,
           "flow_q95_ms": 9.34133259580841, "dropped": True, "retransmits": 50.0, "segments": 11280.0,
           "retrans_rate": 0.004432624113475178, "loaded_rtt_ms": 312.084}
RAMP_WINDOW = {"retransmits": 0.0, "segments": 6842.099015951459, "overflowed": False, "queue_max_ms": 15.694932595808353}
RAMP_TRAIN = {"first_loss": 122, "head_bytes": 183000, "head_packets": 122, "head_send_mbps": 694.0968781415413,
              "leading_mbps": 9.248965114375014, "lost": 867, "received": 133, "sender_limited": False,
              "send_mbps": 686.9200351848831, "sent": 1000, "tail_packets": 11, "tail_mbps": 8.851920645482053,
              "tail_arrival_mbps": 10.999881751271174, "tail_send_mbps": 8.851920645482053, "wire_bytes": 1500, "notes": []}


def test_a_loss_based_window_that_lost_none_of_the_phases_drops_it_had_the_power_to_show_puts_them_in_the_ramp():
    """Seed 49 path 6: 50 retransmissions in 11280 segments, none in the window's 6842 (0.6066 of them): were the
    window's rate the rest's it would hold 30.33 of the 50, sd 3.45 — nothing there is the ramp's loss alone. Seed
    47 path 8 (fq_codel at 781 Mbit/s): 8 in 321815, none in the window's 165507: 4.11 expected, sd 1.41, within
    three — chance can leave that window empty, so no claim. A BBR fill never claims it (seed 50 path 1 up, a
    policer: its window lost 15 of 333 where 33.9 were expected, sd 4.1: BBR held at the policed rate), and a
    window that overflowed is the queue at its depth."""
    assert m_evidence.window_dropped(RAMP_EV, RAMP_WINDOW, loss_based=True) is False
    assert m_evidence.window_dropped(RAMP_EV, RAMP_WINDOW, loss_based=False) is None
    fq = {"dropped": True, "retransmits": 8.0, "segments": 321815.0}
    assert m_evidence.window_dropped(fq, {"retransmits": 0.0, "segments": 165506.93, "overflowed": False}, True) is None
    bbr = {"dropped": True, "retransmits": 63.0, "segments": 620.0}
    assert m_evidence.window_dropped(bbr, {"retransmits": 15.0, "segments": 333.0, "overflowed": False}, False) is None
    assert m_evidence.window_dropped(RAMP_EV, dict(RAMP_WINDOW, retransmits=9.0, overflowed=True), True) is True
    assert m_evidence.window_dropped(dict(RAMP_EV, dropped=False), RAMP_WINDOW, True) is None


def test_drops_only_in_the_ramp_are_not_drops_without_a_queue_and_name_what_the_window_could_not_tell(monkeypatch):
    """Seed 49 path 6 read as a policer (drops while the flows' p95, 9.34 ms, stayed below the 10.2-ms floor), and its
    packet train (tail-dropped at a 181-KB FIFO, far deeper than the flows' queue) kept it one: both read the ramp's
    drops as the flows' at their window's queue. With the drops in the ramp the reading is a FIFO at least the
    window's queue deep, or an AQM whose target is above its 9.34 ms less the 3.60-ms ACK wait and the 3-ms noise
    (2.74 ms), or a policer at 0.95 x the window's 13.33 Mbit/s or more the flows sat below; the truth's FIFO is
    the verdict."""
    before = read_down(monkeypatch, {k: v for k, v in RAMP_EV.items() if k != "dropped"}, 13.33175891751941,
                       RAMP_TRAIN, base_ms=311.21556740419163)
    assert before["limiter"] == "policer" and not c.limiter_said(truth("fifo", 15.7491, 181454), before)
    x = read_down(monkeypatch, dict({k: v for k, v in RAMP_EV.items() if k != "dropped"}, window_dropped=False),
                  13.33175891751941, RAMP_TRAIN, base_ms=311.21556740419163)
    assert x["limiter"] == "fifo" and x["limiter_alternatives"][0] == {"limiter": "fifo"}
    aqm, pol = x["limiter_alternatives"][1:3]
    assert round(aqm["target_above_ms"], 3) == 2.741 and round(pol["rate_above_mbps"], 3) == 12.665
    assert "only in their ramp" in x["limiter_note"]
    assert c.limiter_said(truth("fifo", 15.7491, 181454), x)
    assert c.limiter_said(truth("codel", 15.7491), x) and c.limiter_said(truth("policer", 14.0), x)
    assert not c.limiter_said(truth("policer", 12.0), x)
    # the train's rule alone, on the FIFO reading: its premise (the flows' drops at their queue) is the ramp's
    assert not m_trains._fifo_deeper_than_the_flows(RAMP_TRAIN, x)


# camp33 path 3: CoDel both ways (its Linux default limit), 626 Mbit/s down, 104.9 up, 6.6 ms; the up direction's
# stored loaded evidence (a CUBIC fill): the flows shared one queue (p95 9.00 ms, the probe's 8.81) with drops
UP_CODEL_EV = {"phase": "fill", "rate_mbps": 104.90714438649731, "probe_q95_ms": 8.812795147305389,
               "flow_q50_ms": 6.816264347305388, "flow_q95_ms": 8.999264347305388, "dropped": True,
               "excess_loss": 0.001578374052419803, "mathis_loss": 0.001581890897849064, "burst_floor_ms": 5.0}


def test_an_up_direction_read_fifo_with_drops_names_a_single_queue_aqm_it_sent_no_train_to_exclude():
    x = {"limiter": m_classify._classify_ev(UP_CODEL_EV, 104.90714438649731, 4), "evidence": UP_CODEL_EV,
         "limiter_note": None, "limiter_alternatives": None}
    assert x["limiter"] == "fifo"
    t = c.direction_truth({"limiter": "codel", "observable": "aqm", "port_mbps": 626.1683032682288,
                           "up_port_mbps": 104.87410009675176, "down_mbps": 626.1683032682288,
                           "up_mbps": 104.87410009675176, "base_rtt_ms": 6.609066814904411,
                           "buffer_bdp": 0.21284105799082495, "buffer_bytes": 110102, "variable": None}, "up")
    assert not c.limiter_said(t, x)  # as measured (no alternative): a guess
    m_trains.untrained_aqm(x)
    assert x["limiter_alternatives"][0] == {"limiter": "fifo"}
    assert {k: v for k, v in x["limiter_alternatives"][1].items() if k != "why"} == {
        "limiter": "aqm", "kinds": ["codel", "pie"], "rate_above_mbps": 0.0}
    assert c.limiter_said(t, x)
    # a true FIFO stays right, a flow-isolating AQM is not named (the probe's wait tells it without a train)
    assert c.limiter_said(truth("fifo", 104.9, 11_000), x)
    assert not c.limiter_said(truth("fq_codel", 104.9), x) and not c.limiter_said(truth("cake", 104.9), x)
    # no drops, or another verdict: nothing added
    y = {"limiter": "fifo", "evidence": dict(UP_CODEL_EV, dropped=False), "limiter_alternatives": None}
    m_trains.untrained_aqm(y)
    assert y["limiter_alternatives"] is None


def test_a_train_sends_what_the_rate_drains_in_two_seconds_and_no_fewer_than_twenty_packets():
    """The measured rate drains a train (a single-queue AQM holds all of it up to its 1000-packet limit), up and
    down alike: at most TRAIN_S (2 s) of the rate, at least TRAIN_MIN_PACKETS (20), never more than asked; the AQM
    train twice what it must build behind the flows' queue where that is longer (aqm_train_s)."""
    assert m.train_count(0.2, None) == 33          # 2 s x 0.2 Mbit/s / 1500 B = 33.3
    assert m.train_count(0.05, None) == 20         # 8.3 packets: the floor
    assert m.train_count(6.0, None) == 1000        # 1000 packets: the down AQM train's count, 2 s at 6 Mbit/s
    assert m.train_count(100.0, None) == 1000 and m.train_count(100.0, 300) == 300
    assert m.train_count(2.1015, m_trains.AQM_TRAIN_PACKETS) == 350
    # behind 600 ms of queue a reading needs 1.2 s built and a tail as long: 2.4 s (AQM_BURST_RATIO = 2)
    assert m.aqm_train_s(100.0) == m.TRAIN_S and m.aqm_train_s(600.0) == pytest.approx(2.4)
    assert m.train_count(2.0, m_trains.AQM_TRAIN_PACKETS, seconds=m.aqm_train_s(600.0)) == 400


def _up(x: dict) -> dict:
    return dict(x, direction="up")


def test_the_up_direction_reads_the_train_it_sends_as_the_down_reads_the_servers(monkeypatch):
    """The plumbing: the up direction's trains go through the readers of the down's (measure._trains_after_load),
    sent up (``udp train --up``) with the up rate's count, and a train served for them is read as down reads it
    (seed 28 path 39's CoDel train: CoDel either way)."""
    calls = []
    down = read_down(monkeypatch, CODEL_SLOW_EV, 2.1015, CODEL_SLOW_TRAIN, base_ms=231.7)
    x = {k: v for k, v in down.items() if k in ("rate_mbps", "flows", "load_cc", "evidence", "first_loss")}
    lim = m_classify.classify(CODEL_SLOW_EV["probe_q95_ms"], CODEL_SLOW_EV["flow_q50_ms"], CODEL_SLOW_EV["flow_q95_ms"],
                              True, 2.1015, 4)
    x.update(direction="up", limiter=lim, limiter_note=m_classify.ambiguity(lim, 2.1015, 4),
             limiter_alternatives=m_classify.alternatives(lim, 2.1015, 4), buffer_bytes=None, buffer_bdp=None)
    monkeypatch.undo()  # read_down's stand-ins for the trains
    monkeypatch.setattr(m, "_sleep", lambda s: None)

    def train(host, port, secret, count=None, pace_mbps=None, up=False):
        calls.append((count, pace_mbps, up))
        if pace_mbps:
            raise m.UserError("no paced train in this test")
        return dict(CODEL_SLOW_TRAIN)

    monkeypatch.setattr(m, "_train", train)
    said = []
    m._up_trains("h", 5301, None, x, 231.7, 0.0, said.append)
    assert (x["limiter"], x.get("aqm_qdisc")) == (down["limiter"], down["aqm_qdisc"]) == ("aqm", "codel")
    assert calls and all(up for _, _, up in calls) and calls[0] == (350, None, True)
    # the paced train's refusal is that train's: the server sent one up, so later trains are still asked for
    assert x["up_trains_sent"] == 1 and "no_up_train" not in x
    assert all(s.startswith("  up: ") or s.startswith("  (") for s in said) and said


def test_a_server_without_up_trains_is_asked_once_and_what_a_train_would_tell_stays_named(monkeypatch):
    """A server older than up trains (or none answering them): the first up train's error is kept
    (``no_up_train``) and every later one fails with it at once, without the handshake's timeouts; the
    direction keeps its flows' reading and untrained_aqm names the single-queue AQM, as before up trains."""
    calls = []

    def train(*a, **k):
        calls.append(k)
        raise m.UserError("bloatlab-probe udp train: the server predates up trains")

    monkeypatch.setattr(m, "_train", train)
    x = _up({"limiter": m_classify._classify_ev(UP_CODEL_EV, 104.907, 4), "evidence": UP_CODEL_EV, "rate_mbps": 104.907,
             "flows": 4, "limiter_note": None, "limiter_alternatives": None, "buffer_bytes": 118_000, "buffer_bdp": None})
    assert x["limiter"] == "fifo"
    m._up_trains("h", 5301, None, x, 6.6, 0.0, lambda s: None)
    assert len(calls) == 1 and calls[0]["up"] and "predates up trains" in x["aqm_note"] and x.get("aqm_train") is None
    with pytest.raises(m.UserError, match="predates up trains"):
        m._send_up("h", 5301, None, x, None)
    assert len(calls) == 1
    m_trains.untrained_aqm(x)
    assert x["limiter_alternatives"][-1]["kinds"] == ["codel", "pie"]
    # a WiFi hop the down train read, the up flows through it: no train up
    w = _up({"limiter": "wifi", "rate_mbps": 20.0})
    m._up_trains("h", 5301, None, w, 6.6, 0.0, lambda s: None)
    assert len(calls) == 1


def test_an_up_trains_refusal_or_its_own_queues_drops_end_that_train_only(monkeypatch):
    """Only a server that does not serve up trains (older, or none answering) ends the direction's up trains; a
    refusal of the first (the address's budget, shared with the down trains) is that train's. A train some of
    whose packets this host's own queue dropped (the send's ENOBUFS: `server_send_errors` up) or the server's
    socket did (`local_drops`) is not read: its losses are not the path's."""
    errs = iter(["the server refused the train: the server's budget for this address is spent (8 MB of trains per "
                 "10 s): try again in 2.0 s"])

    def train(host, port, secret, count=None, pace_mbps=None, up=False):
        e = next(errs, None)
        if e:
            raise m.UserError(e)
        return {"sent": count, "received": count - 3, "server_send_errors": 3, "local_drops": 0}

    monkeypatch.setattr(m, "_train", train)
    x = _up({"rate_mbps": 0.5})
    with pytest.raises(m.UserError, match="budget"):
        m._send_up("h", 5301, None, x, None)
    assert "no_up_train" not in x
    with pytest.raises(m.UserError, match="3 of its packets dropped by this host's own queue"):
        m._send_up("h", 5301, None, x, None)
    assert x["up_trains_sent"] == 1 and "no_up_train" not in x


def test_an_up_fifo_with_drops_reads_the_policers_train_as_its_aqm_train_where_it_is_as_long(monkeypatch):
    """Up, the AQM train is the up rate's count (train_count), so the back-to-back train a policer reading
    sent serves as it where it was as long (as down where it had the AQM train's 1000 packets): one train up."""
    calls = []
    t = dict(CODEL_SLOW_TRAIN, sent=350, received=300, lost=50, tail_packets=279)

    def train(host, port, secret, count=None, pace_mbps=None, up=False):
        if not pace_mbps:  # (the paced trains a policer reading of it asks for after are not this test's)
            calls.append(count)
        return dict(t)

    monkeypatch.setattr(m, "_train", train)
    monkeypatch.setattr(m, "_sleep", lambda s: None)
    def fifo(sent: int) -> dict:
        return _up({"limiter": "fifo", "rate_mbps": 2.1015, "flows": 4, "evidence": dict(CODEL_SLOW_EV, dropped=True),
                    "limiter_note": None, "limiter_alternatives": None, "buffer_bytes": 10_000, "buffer_bdp": None,
                    "train": dict(t, sent=sent)})

    x = fifo(350)
    m._aqm_train("h", 5301, None, x, lambda s: None, 0.0, 231.7)
    assert calls == [] and x["aqm_train"]["sent"] == 350
    y = fifo(100)
    m._aqm_train("h", 5301, None, y, lambda s: None, 0.0, 231.7)
    assert calls == [350] and y["aqm_train"]["sent"] == 350


def test_what_the_up_trains_leave_open_is_named_beside_the_verdict():
    """Up, this host's own first hop paces the train after its stamps: a CoDel/PIE reading from a train's tail
    names the FIFO as deep as the flows' queue (seed 69 path 29, a 9.5-Mbit/s FIFO behind a WiFi hop in front of
    the line, read PIE: now named); an AQM train shortened to 2 s of the rate that read a FIFO names CoDel and PIE
    (seed 69 path 17, CoDel at 0.335 Mbit/s: 52 packets built 1.9x the flows' 555 ms). A whole train's reading, a
    full-length train's FIFO and a flow-isolating verdict name nothing new."""
    tail = {"sent": 1000, "received": 80, "lost": 920, "first_loss": 5}
    x = _up({"limiter": "aqm", "aqm_qdisc": "pie", "limiter_note": "a train's tail", "limiter_alternatives": None,
             "evidence": {"flow_q95_ms": 7.54, "dropped": True}, "aqm_train": tail})
    m.up_left_open(x)
    assert x["limiter_alternatives"] == [{"limiter": "aqm", "kinds": ["pie"]},
                                         {"limiter": "fifo", "depth_below_ms": 7.54 + m_physics.NOISE_MS,
                                          "why": m_trains.FIRST_HOP_CAVEAT}]
    assert c.limiter_said(truth("fifo", 9.53, 7_000), x) and c.limiter_said(truth("pie", 9.53), x)
    whole = _up(dict(x, aqm_train=dict(tail, first_loss=None, lost=0, received=1000), limiter_alternatives=None))
    m.up_left_open(whole)
    assert whole["limiter_alternatives"] is None
    iso = _up(dict(x, aqm_qdisc=None, limiter_alternatives=None))
    m.up_left_open(iso)
    assert iso["limiter_alternatives"] is None
    short = {"sent": 52, "received": 28, "lost": 24, "first_loss": 4}
    f = _up({"limiter": "fifo", "limiter_note": None, "limiter_alternatives": None, "aqm_train": short,
             "evidence": {"flow_q95_ms": 555.19, "dropped": True}})
    m.up_left_open(f)
    assert [a.get("kinds") for a in f["limiter_alternatives"]] == [None, ["codel", "pie"]]
    assert "52 packets (2 s of the rate" in f["limiter_note"] and c.limiter_said(truth("codel", 0.335), f)
    full = _up(dict(f, aqm_train=dict(short, sent=1000), limiter_alternatives=None, limiter_note=None))
    m.up_left_open(full)
    assert full["limiter_alternatives"] is None


def test_the_up_directions_truth_is_its_own_links_rate_port_buffer_and_bucket():
    # camp47 path 10: a tbf at 47.8 % of a 56.8-Mbit/s port down, of a 23.2-Mbit/s port up, 0.082 BDP, 66-ms bucket
    t = {"index": 10, "limiter": "shaper", "port_mbps": 56.83225561838954, "up_port_mbps": 23.24410390958926,
         "down_mbps": 27.144670095767143, "up_mbps": 11.10203220745246, "base_rtt_ms": 22.726707071982077,
         "buffer_bdp": 0.0820875002824727, "buffer_bytes": 6330, "cir_fraction": 0.47762788579138826,
         "bucket_ms": 65.9937366606059, "loss": 0.0, "observable": "fifo", "variable": None}
    assert c.direction_truth(t, "down") is t
    u = c.direction_truth(t, "up")
    assert (u["down_mbps"], u["port_mbps"], u["buffer_bytes"]) == (11.10203220745246, 23.24410390958926, 3000)
    assert t["buffer_bytes"] == 6330  # not touched
    # as the emulated truth's up link is built
    doc = c._dir_doc(t, "up")
    assert doc["buffer"] == f"{u['buffer_bytes']}B" and doc["shaper"]["burst"] == f"{int(c.truth_bucket_bytes(u))}B"
    assert abs(c.truth_depth_ms(u) - 3000 * 8 / 11102.03220745246) < 1e-12  # 2.16 ms, not the down 1.87
    # only the down link follows a trace
    assert c.direction_truth(dict(t, limiter="fifo", variable="lte"), "up")["variable"] is None


def _hop_dirs(down_mbps: float, up_mbps: float, wifi: dict) -> tuple[dict, dict]:
    down = {"limiter": "wifi", "load_cc": "cubic", "wifi": wifi, "evidence": {"phase": "fill", "rate_mbps": down_mbps}}
    up = {"limiter": "fifo", "load_cc": "cubic", "limiter_note": None, "limiter_alternatives": None,
          "evidence": {"phase": "fill", "rate_mbps": up_mbps, "dropped": True}}
    return down, up


def test_the_up_direction_is_the_down_directions_lone_wifi_hop_where_its_flows_got_the_hops_rate():
    # camp47 path 14: an airtime AP at MCS 5 (52 Mbit/s), one station; the down train read it (PHY 51.8), the
    # down CUBIC fill got 36.16 Mbit/s and the up one 38.32 (1.06 x): the hop holds both ways
    down, up = _hop_dirs(36.16399024410361, 38.32416289041263, {"phy_mbps": 51.8197212974663, "mac": "airtime"})
    m_wifi_hop.up_through_the_hop(up, down)
    assert up["limiter"] == "wifi" and up["limiter_alternatives"] is None
    assert up["wifi"] == {"phy_mbps": 51.8197212974663, "mac": "airtime", "read": "down"}
    assert "its queue read as fifo" in up["limiter_note"]
    m_trains.untrained_aqm(up)  # a hop, not a FIFO: no single-queue AQM named
    assert up["limiter_alternatives"] is None
    # camp47 path 62: the up fill got 81.98 of the down's 89.72 (0.914 < 0.95): the queue's reading stays
    down, up = _hop_dirs(89.72298775471576, 81.97545440802847, {"phy_mbps": 116.68983876563735, "mac": "airtime"})
    m_wifi_hop.up_through_the_hop(up, down)
    assert up["limiter"] == "fifo" and "0.91 x" in up["wifi_note"]


def test_a_wifi_hop_shared_with_other_stations_or_a_phase_unlike_the_downs_is_not_read_up():
    # camp49 path 75: the down saw another station (idle probes 17.7 ms apart); up 16.56 against 14.66 (1.13 x)
    # proves nothing there: the station's share differs each way
    shared = {"phy_mbps": 36.38127195511979, "mac": "airtime",
              "shared": {"idle_spread_ms": 17.660645000000006, "others": 1, "alone_mbps": 27.969}}
    down, up = _hop_dirs(14.664935062238591, 16.56119094966507, shared)
    m_wifi_hop.up_through_the_hop(up, down)
    assert up["limiter"] == "fifo"
    down, up = _hop_dirs(36.16399024410361, 38.32416289041263, {"phy_mbps": 51.8197212974663, "mac": "airtime"})
    up["evidence"]["phase"] = "bbr"
    m_wifi_hop.up_through_the_hop(up, down)
    assert up["limiter"] == "fifo"
    down["limiter"] = "fifo"
    up["evidence"]["phase"] = "fill"
    m_wifi_hop.up_through_the_hop(up, down)
    assert up["limiter"] == "fifo"


def test_a_random_loss_that_hides_an_aqms_drops_names_codel_and_pie_at_any_target():
    """Campaign seed 51 path 38: CoDel at 521 Mbit/s and 2.6 ms with 1.5 % random loss; the lossy path's BBR fill
    queued 8.9 ms (p95) and lost 1.59 % against the idle 1.52 %: no drop beyond the random loss, so the reading
    named an AQM only with a target above 5.8 ms, which CoDel's 5 ms is not. But a queue standing above CoDel's
    target through the phase the counts cover (89134 segments at 520 Mbit/s: 2.08 s) costs it only
    1 + ((2.08 - 0.1) / 0.2)^2 = 96.7 drops, and three standard deviations of the 1359 random ones and a handful
    (112.8) go unseen: any target is possible."""
    ev = {"phase": "fill", "rate_mbps": 520.1904671008881, "probe_window_s": [1.301393074, 2.290649973],
          "probe_q95_ms": 8.912991141916168, "flow_q50_ms": 7.725974541916168, "flow_q95_ms": 8.893224541916167,
          "dropped": False, "retransmits": 1419.0, "segments": 89134.0, "retrans_rate": 0.015919851010837614,
          "excess_loss": 0.0, "loaded_rtt_ms": 10.359, "window_dropped": None}
    hidden, fewest, unseen = m_classify.aqm_drops_hidden(ev, 0.015247722942500836)
    assert hidden and fewest == pytest.approx(96.6665, abs=1e-3) and unseen == pytest.approx(112.7511, abs=1e-3)
    alts, note = m_classify.undropped_alternatives("fifo", ev, 513.73, 4, 0.015247722942500836)
    assert alts[0] == {"limiter": "fifo"} and alts[1]["limiter"] == "aqm" and alts[1]["kinds"] == ["codel", "pie"]
    assert "at any target" in note
    # without random loss every drop of the AQM's would show: the target bound stands
    assert m_classify.aqm_drops_hidden(ev, 0.0)[0] is False
    assert "target_above_ms" in m_classify.undropped_alternatives("fifo", ev, 513.73, 4)[0][1]
    # at 0.01 % the random loss's 9 expected hide no more than 12: CoDel's 97 would show
    assert m_classify.aqm_drops_hidden(ev, 0.0001)[0] is False


def test_a_slow_start_deeper_than_the_windows_drops_or_the_flows_backoff_allow_is_no_fifo():
    """classify.fifo_check on the figures of this machine's emulator runs (2026-11-28, measure --quick on
    hand-built truths, the fill's own slow start read by buffer.slow_start_depth): a FIFO drops only when full, so
    its drops in the window put its depth at the flows' largest queue there, and after its last overflow the
    flows hold beta x (BDP + depth); a slow start that queued deeper met an AQM's packet limit."""
    beta, noise = m_physics.CUBIC_BETA, m_physics.NOISE_MS
    # PIE at 420 Mbit/s, 30 ms: its 1000 packets hold 28.8 ms, its flows were dropped at <= 20.5 ms
    ss = {"queue_ms": 28.8, "overflowed": True, "retransmits": 103.0}
    w = {"queue_max_ms": 20.45, "retransmits": 2.0}
    x = m_classify.fifo_check(ss, w, True, 419.9, 4, 30.0)
    assert x["rule"] == "dropped" and x["contradicted"] is True
    assert x["deepest_fifo_ms"] == pytest.approx(20.45 + noise)
    assert "single-queue AQM" in x["why"] and "28.8 ms" in x["why"]
    # a 0.5-BDP FIFO at 600 Mbit/s, 20 ms: the slow start at 10.0, the window's drops at 9.85
    x = m_classify.fifo_check({"queue_ms": 10.0, "overflowed": True, "retransmits": 50.0},
                              {"queue_max_ms": 9.85, "retransmits": 40.0}, True, 598.9, 4, 20.0)
    assert x["contradicted"] is False and "consistent with a FIFO" in x["why"]
    # the window's queue below the burst floor reads as the floor: 5 ms at these rates, 7.8 ms at 20 Mbit/s
    x = m_classify.fifo_check({"queue_ms": 10.0, "overflowed": True}, {"queue_max_ms": 1.0, "retransmits": 9.0}, True,
                              20.0, 4, 30.0)
    assert x["deepest_fifo_ms"] == pytest.approx(m_physics.burst_floor_ms(20.0, 4) + noise) and x["contradicted"] is False
    # CoDel at 300 Mbit/s, 40 ms: the slow start overflowed its 1000 packets at 40.25 ms (116 retransmissions), the
    # window then lossless at <= 3.29 ms, where one backoff from a 40-ms FIFO leaves the flows 16 ms above the BDP
    ss = {"queue_ms": 40.25, "overflowed": True, "retransmits": 116.0}
    w = {"queue_max_ms": 3.29, "retransmits": 0.0}
    x = m_classify.fifo_check(ss, w, False, 298.4, 4, 40.0)
    want = 40.0 * (1 - beta) / beta + (5.0 + noise) / beta
    assert x["rule"] == "backoff" and x["deepest_fifo_ms"] == pytest.approx(want) and want == pytest.approx(28.55, abs=0.01)
    assert x["contradicted"] is True
    # a 1-BDP FIFO at 300 Mbit/s, 40 ms: overflowed at 40.4 ms, the window lossless up to 28.7 ms: within 62.4
    x = m_classify.fifo_check({"queue_ms": 40.4, "overflowed": True, "retransmits": 300.0},
                              {"queue_max_ms": 28.68, "retransmits": 0.0}, False, 300.1, 4, 40.0)
    assert x["deepest_fifo_ms"] == pytest.approx(40.0 * (1 - beta) / beta + (28.68 + noise) / beta)
    assert x["contradicted"] is False
    # no backoff to read: the slow start did not overflow (a random loss's count), the idle probes lost something
    # (a random loss cuts the flows below the backoff), or the window lost a little, within the random loss
    for s, wd, loss in (({"queue_ms": 40.25, "overflowed": False}, False, 0.0), (ss, False, 1e-4)):
        x = m_classify.fifo_check(s, w, wd, 298.4, 4, 40.0, loss)
        assert x["rule"] is None and x["contradicted"] is False
    x = m_classify.fifo_check(ss, {"queue_max_ms": 3.29, "retransmits": 3.0}, False, 298.4, 4, 40.0)
    assert x["rule"] is None and x["contradicted"] is False
    # CoDel at 372 Mbit/s, 80 ms: its 32-ms limit within the backoff's reach of the BDP: not told apart
    x = m_classify.fifo_check({"queue_ms": 31.66, "overflowed": True, "retransmits": 1372.0},
                              {"queue_max_ms": 3.38, "retransmits": 0.0}, False, 372.3, 4, 80.0)
    assert x["contradicted"] is False and x["deepest_fifo_ms"] == pytest.approx(80.0 * (1 - beta) / beta + 8.0 / beta)


def test_bbrs_flows_standing_deeper_than_where_the_slow_start_was_first_dropped_is_no_fifo():
    """classify.bbr_stood_deeper on campaign seed 79's figures (through the emulator, 2026-11-29): a FIFO drops only
    when full, so the fill's slow start was first dropped at its depth, and BBR's dropped flows (they do not back
    off on loss) stand there too; standing deeper, beyond the floor and the noise, they filled what dropped the slow
    start below its own limit."""
    noise = m_physics.NOISE_MS
    # CoDel at 136 Mbit/s, 382 ms (path 31): slow start first dropped at 70.07 ms, BBR's median 86.35 (the
    # 1000-packet limit, 89 ms): 86.35 - 5 - 3 = 78.35 > 70.07
    ss = {"queue_ms": 70.07, "overflowed": True, "retransmits": 260.0}
    floor = m_physics.burst_floor_ms(136.1, 4)
    x = m_classify.bbr_stood_deeper(ss, 86.35, 136.1, 4)
    assert floor == pytest.approx(5.0) and x["contradicted"] is True and x["rule"] == "bbr"
    assert x["slow_start_ms"] == x["deepest_fifo_ms"] == 70.07
    assert "78.3 ms" in x["why"] and "single-queue AQM" in x["why"]
    # the tbf's FIFO at 220 Mbit/s, 438 ms (path 7): 50.0 and 49.7 — level, as a FIFO's are; and exactly at the
    # margin nothing is contradicted
    assert m_classify.bbr_stood_deeper({"queue_ms": 50.0, "overflowed": True}, 49.7, 219.8, 4) is None
    assert m_classify.bbr_stood_deeper(ss, 70.07 + floor + noise, 136.1, 4) is None
    assert m_classify.bbr_stood_deeper(ss, 70.07 + floor + noise + 0.01, 136.1, 4)["contradicted"] is True
    # nothing to hold the depth to: a slow start whose losses a random loss gives, or any idle loss (it ends a
    # slow start anywhere), or none read
    assert m_classify.bbr_stood_deeper(dict(ss, overflowed=False), 86.35, 136.1, 4) is None
    assert m_classify.bbr_stood_deeper(ss, 86.35, 136.1, 4, idle_loss=1e-4) is None
    assert m_classify.bbr_stood_deeper({"queue_ms": None, "overflowed": False}, 86.35, 136.1, 4) is None


def test_a_flow_that_met_a_retransmission_timeout_holds_no_backoff_to_read():
    """After a timeout a flow slow-starts from one segment, and HyStart may end that below beta x (BDP + D): the
    backoff rule is not read (classify.fifo_check's ``timed_out``)."""
    ss = {"queue_ms": 40.25, "overflowed": True, "retransmits": 116.0}
    w = {"queue_max_ms": 3.29, "retransmits": 0.0}
    assert m_classify.fifo_check(ss, w, False, 298.4, 4, 40.0)["contradicted"] is True
    x = m_classify.fifo_check(ss, w, False, 298.4, 4, 40.0, timed_out=True)
    assert x["rule"] is None and x["contradicted"] is False and "retransmission timeout" in x["why"]


def test_the_slow_starts_acks_at_a_slow_reverse_port_read_the_fifo_deeper_not_an_aqm():
    """Campaign seed 65 path 1: a FIFO 382 ms deep at 8.82 Mbit/s, 437 ms, behind a 0.475-Mbit/s up port. The fill's
    slow start stood at 408 ms, its window's flows (dropped) at 394: 11 ms above a FIFO's q = 394.4 + 3 — read a
    CoDel. Through the slow start's quick ACKs and its recovery every segment is ACKed (80 B with three SACK
    blocks), the window's mostly every other: at 8.67 Mbit/s those ACKs load the reverse port 8.67 x 80 / 1500 /
    0.4749 = 0.974, the loaded probe's 92 B every 10 ms 0.155 more: overloaded, its queue unbounded — nothing is
    compared. Below that, M/D/1's mean wait rho / (2 (1 - rho)) ACK serializations reads the FIFO deeper."""
    probe = 92 * 8 / 10e3
    ss = {"queue_ms": 407.97, "overflowed": True, "retransmits": 59.0}
    w = {"queue_max_ms": 394.42, "retransmits": 59.0}
    assert m_classify.fifo_check(ss, w, True, 8.668, 4, 436.87)["contradicted"] is True  # the reverse port unknown
    x = m_classify.fifo_check(ss, w, True, 8.668, 4, 436.87, reverse_mbps=0.47486)
    assert x["rule"] is None and x["contradicted"] is False
    assert "and the probe overload the 0.4749-Mbit/s reverse port" in x["why"]
    assert m_physics.ack_queue_ms(8.668, 0.47486) < float("inf")  # the ACKs alone would not: the probe tips it
    assert m_physics.ack_queue_ms(8.668, 0.47486, probe) == float("inf")
    assert m_physics.ack_queue_ms(8.668, None, probe) == 0.0 and m_physics.ack_queue_ms(8.668, 0.0) == 0.0
    # a 0.6-Mbit/s reverse port: rho = (0.4623 + 0.0736) / 0.6 = 0.893, 4.18 ACKs of 1.067 ms = 4.46 ms more
    rho = (8.668 * 80 / 1500 + probe) / 0.6
    want = rho / (2 * (1 - rho)) * 80 * 8 / 600
    assert m_physics.ack_queue_ms(8.668, 0.6, probe) == pytest.approx(want) and want == pytest.approx(4.46, abs=0.01)
    x = m_classify.fifo_check(ss, w, True, 8.668, 4, 436.87, reverse_mbps=0.6)
    assert x["deepest_fifo_ms"] == pytest.approx(394.42 + 3.0 + want) and x["contradicted"] is True
    assert "waited ~4.5 ms at the 0.6-Mbit/s reverse port" in x["why"]
    # the backoff rule reads the same wait: CoDel at 300 Mbit/s, 40 ms beside a 20-Mbit/s reverse port (rho 0.80)
    ss2, w2 = {"queue_ms": 40.25, "overflowed": True, "retransmits": 116.0}, {"queue_max_ms": 3.29, "retransmits": 0.0}
    ack = m_physics.ack_queue_ms(298.4, 20.0, probe)
    beta = m_physics.CUBIC_BETA
    x = m_classify.fifo_check(ss2, w2, False, 298.4, 4, 40.0, reverse_mbps=20.0)
    assert x["rule"] == "backoff" and x["deepest_fifo_ms"] == pytest.approx(40.0 * (1 - beta) / beta + 8.0 / beta + ack)
    assert 0.05 < ack < 0.2 and x["contradicted"] is True
    # a fast reverse port moves nothing: PIE at 420 Mbit/s beside a 100-Mbit/s up port (rho 0.22: 2 us)
    x = m_classify.fifo_check({"queue_ms": 28.8, "overflowed": True, "retransmits": 103.0},
                              {"queue_max_ms": 20.45, "retransmits": 2.0}, True, 419.9, 4, 30.0, reverse_mbps=100.0)
    assert x["contradicted"] is True and x["deepest_fifo_ms"] == pytest.approx(23.45, abs=0.01)


def test_a_probe_beyond_its_fair_share_cannot_show_flow_isolation_and_the_reading_names_it():
    """Campaign seed 64 path 1 up: CAKE at 0.16 Mbit/s, read `fifo` — the probe (92 B every 10 ms: 73.6 kbit/s)
    sent more than its share beside 4 flows (0.16 / 5 = 32 kbit/s), so CAKE's DRR queued it as a bulk flow (871 ms
    at p95, the flows' 427): no isolation to see. Below 5 x 73.6 kbit/s = 0.368 Mbit/s the reading names fq_codel
    and CAKE; above it, nothing changes."""
    assert m_classify.probe_share_exceeded(0.367, 4, 10) and not m_classify.probe_share_exceeded(0.369, 4, 10)
    assert m_classify.probe_share_exceeded(0.5, 4, 5) and not m_classify.probe_share_exceeded(0.5, 2, 10)
    x = {"limiter": "fifo", "rate_mbps": 0.16, "flows": 4, "limiter_note": "no packet train is sent up",
         "limiter_alternatives": [{"limiter": "fifo"}, {"limiter": "aqm", "kinds": ["codel", "pie"], "rate_above_mbps": 0.0}]}
    assert not c.limiter_said(truth("cake", 0.16), x)
    m_classify.isolation_unseen(x, 10)
    assert [a.get("kinds") for a in x["limiter_alternatives"]] == [None, ["codel", "pie"], ["fq_codel", "cake"]]
    assert c.limiter_said(truth("cake", 0.16), x) and c.limiter_said(truth("fq_codel", 0.16), x)
    assert c.limiter_said(truth("fifo", 0.16, 3000), x)
    assert x["limiter_note"].startswith("no packet train is sent up; the probe sent more than its share of 0.16 Mbit/s")
    # a single-queue AQM reading there (the AQM train's, or a contradicted FIFO's) names them too, the verdict first
    z = {"limiter": "aqm", "aqm_qdisc": "codel", "rate_mbps": 0.16, "flows": 4, "limiter_alternatives": None}
    m_classify.isolation_unseen(z, 10)
    assert [a.get("kinds") for a in z["limiter_alternatives"]] == [["codel"], ["fq_codel", "cake"]]
    # a faster link, or another verdict: nothing added
    for y in ({"limiter": "fifo", "rate_mbps": 0.4, "flows": 4, "limiter_alternatives": None},
              {"limiter": "aqm", "aqm_qdisc": None, "rate_mbps": 0.16, "flows": 4, "limiter_alternatives": None},
              {"limiter": "policer", "rate_mbps": 0.16, "flows": 4, "limiter_alternatives": None}):
        m_classify.isolation_unseen(y, 10)
        assert y["limiter_alternatives"] is None and "limiter_note" not in y


def test_probes_lost_beside_the_flows_cannot_show_flow_isolation_and_the_reading_names_it():
    """A direction whose loaded probes were lost beside its flows is read from the flows' own smoothed RTT
    (evidence.probes_lost_beside): the probe's shorter wait under flow isolation is then unseen at any rate, so a
    `fifo` reading at 2 Mbit/s (above the probe's fair share, 0.368 Mbit/s) names fq_codel and CAKE, with the share
    lost in the note; the same reading with its probes read names nothing."""
    x = {"limiter": "fifo", "rate_mbps": 2.0, "flows": 4, "limiter_alternatives": None,
         "evidence": {"probes_lost": 0.9486}}
    assert not m_classify.probe_share_exceeded(2.0, 4, 10)
    m_classify.isolation_unseen(x, 10)
    assert x["limiter_alternatives"][0] == {"limiter": "fifo"}
    assert x["limiter_alternatives"][1]["kinds"] == ["fq_codel", "cake"]
    assert x["limiter_note"].startswith("95% of the probes under load were lost beside the 4 flows")
    assert c.limiter_said(truth("cake", 2.0), x) and c.limiter_said(truth("fq_codel", 2.0), x)
    y = {"limiter": "fifo", "rate_mbps": 2.0, "flows": 4, "limiter_alternatives": None, "evidence": {"probes_lost": None}}
    m_classify.isolation_unseen(y, 10)
    assert y["limiter_alternatives"] is None and "limiter_note" not in y
