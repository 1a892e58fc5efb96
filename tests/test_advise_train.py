"""The policed twin from a packet train (issue 30 §2): `measure` runs
`bloatlab-probe udp train` behind a policer and gives the twin the port's
rate (the head's spacing) and the bucket (its bytes before the first loss),
falling back to the assumptions, with the reason, where the train cannot
tell. The train's own analysis is tested in crates/probe (train.rs)."""

import json
import math
import os

import pytest

from bloatlab.advise import campaign as c
from bloatlab.advise import measure as m
from bloatlab.advise import trains as m_trains
from bloatlab.advise.path import POLICER_PORT, Path, to_toml
from bloatlab.errors import UserError


def paced(count: int, w: int, pace: float, c: float, bucket: float, random_lost=(), rtt_ms: float = 100.0,
          slow_from: int | None = None, slow_pace: float = 0.0, stall_at: int | None = None, stall_ms: float = 0.0) -> dict:
    """The JSON of a train paced at ``pace`` Mbit/s through a full token bucket (``c`` Mbit/s, ``bucket`` B) in
    front of a port that never queues it, ``random_lost`` lost before the policer (no tokens taken); from packet
    ``slow_from`` on the server falls behind, to ``slow_pace``; before packet ``stall_at`` it stalls ``stall_ms``."""
    tokens, lost, tx, t = bucket, [], [], 0.0
    for s in range(count):
        gap = w * 8 / ((slow_pace if slow_from is not None and s >= slow_from else pace) * 1e6)
        gap += stall_ms / 1e3 if s == stall_at else 0.0
        if s:
            tokens = min(tokens + c * 1e6 / 8 * gap, bucket)
            t += gap
        tx.append(t * 1e3)
        if s in random_lost:
            lost.append(s)
        elif tokens >= w:
            tokens -= w
        else:
            lost.append(s)
    first = lost[0] if lost else None
    tx = [None if s in lost else x for s, x in enumerate(tx)]
    return {"tx_ms": tx, "sent": count, "lost_seq": lost, "lost": len(lost), "first_loss": first, "wire_bytes": w,
            "head_send_mbps": pace, "leading_mbps": pace, "head_packets": first if first is not None else count,
            "handshake_rtt_ms": rtt_ms, "received": count - len(lost)}


def with_tail(t: dict) -> dict:
    """``t`` with the tail's figures as the probe computes them (crates/probe/src/train.rs): the bytes received
    after the first loss over their span from the head's last packet (arrival = send: the port never queues it)."""
    cut, w, tx = t["first_loss"], t["wire_bytes"], t["tx_ms"]
    tail = [x for s, x in enumerate(tx) if x is not None and s > cut]
    start = max(x for x in tx[:cut] if x is not None)
    rate = len(tail) * w * 8 / ((tail[-1] - start) * 1e3)
    return {**t, "tail_packets": len(tail), "tail_mbps": rate, "tail_arrival_mbps": rate, "tail_send_mbps": rate}


# seed 8 path 14's first train (back to back): a 39-Mbit/s policer with a 271-KB bucket on a 67.7-Mbit/s port
# whose FIFO holds 105.8 KB; the FIFO cut the head after 71 packets (/work/camp8/paths/0014/measure.json)
PATH14 = {"bucket_bytes": 106393.9, "first_loss": 71, "head_bytes": 106500, "head_packets": 71, "head_send_mbps": 6223.605,
          "leading_mbps": 67.76008, "lost": 925, "notes": [], "received": 75, "sender_limited": False, "sent": 1000,
          "tail_mbps": 50.03, "tail_packets": 4, "wire_bytes": 1500, "handshake_rtt_ms": 100.7}


def test_the_cut_is_the_first_loss_and_a_random_loss_in_the_head_does_not_move_it():
    t = paced(1000, 1500, 64.0, 39.0, 271_000)
    assert m_trains.policer_cut(t["lost_seq"], 1000) == t["first_loss"] == 460
    # three random losses among the first 460 (before the policer: they take no tokens, so the bucket lasts
    # 3 / (1 - 39/64) = 7.7 packets longer): the two-run likelihood cuts where the policer's first drop is
    t = paced(1000, 1500, 64.0, 39.0, 271_000, random_lost=(40, 200, 333))
    assert t["first_loss"] == 40
    assert m_trains.policer_cut(t["lost_seq"], 1000) == 468 == [s for s in t["lost_seq"] if s > 333][0]
    assert m_trains.policer_cut([], 10) == 10
    # a server that fell below the policed rate after packet 1259 loses nothing from there: no second run
    # (seed 8 path 14's paced train through the emulator on a loaded machine: losses 570-1258, none after)
    t = paced(2000, 1500, 64.37, 39.0, 271_000, slow_from=1259, slow_pace=30.0)
    assert t["lost_seq"][-1] < 1259 and m_trains.policer_cut(t["lost_seq"], 2000) == t["first_loss"] == 456


def test_a_paced_train_the_server_sent_below_the_rate_tells_nothing_of_the_bucket():
    """Seed 31 path 15 through the emulator on a loaded VM: a train asked at 95.5 Mbit/s left the server at 45.7,
    below the 86.4 measured, and passed whole: its bucket read -2.67 MB ("at least" a negative size). A train no
    faster than the rate passes any bucket whole: no figure, and the first train's bucket is kept."""
    t = paced(2000, 1500, 95.48, 86.42, 36_900)
    assert t["lost_seq"]
    slow = dict(t, lost_seq=[], lost=0, first_loss=None, head_send_mbps=45.716)
    assert m_trains.paced_bucket(slow, 86.42, 95.48) == (None, 0.0, 2000, "the paced train was sent at 45.72 Mbit/s, no "
                                                         "faster than the policed rate: it passed whole, which tells "
                                                         "nothing of the bucket")
    # sent faster than the rate and passed whole: a bucket at least the train's bytes less the refill
    fast = dict(slow, head_send_mbps=95.48)
    b, least, k, how = m_trains.paced_bucket(fast, 86.42, 95.48)
    assert b is None and k == 2000 and abs(least - 2000 * 1500 * (1 - 86.42 / 95.48)) < 1e-6 and "passed whole" in how


def test_a_paced_train_reads_the_bucket_the_ports_fifo_hid_from_the_first():
    t = paced(2000, 1500, 64.37, 39.0, 271_000)
    b, res, k, how = m_trains.paced_bucket(t, 39.0, 64.37)
    # 456 packets through, less what 39 Mbit/s refilled while they came at 64.37: 271 KB within a packet
    assert k == 456 and "456 packets through" in how
    assert abs(b - (456.5 * 1500 - 456 * 1500 * (39.0 / 64.37))) < 1e-3 and abs(b - 271_000) < 1500
    # the resolution: a packet and the rate goal's 10 % of the refill
    assert abs(res - (1500 + 456 * 1500 * (39.0 / 64.37) * 0.1)) < 1e-3
    # the rate as measure read it on seed 8 path 14 (39.3, 0.8 % high): 1.4 % low
    assert abs(m_trains.paced_bucket(t, 39.3, 64.37)[0] - 271_000) / 271_000 < 0.015
    # with random loss in the head, on a path whose idle probes saw random loss: the same bucket within a packet
    # (the lost packets took no tokens)
    lossy = paced(2000, 1500, 64.37, 39.0, 271_000, random_lost=(40, 200, 333))
    b2, _, k2, how2 = m_trains.paced_bucket(lossy, 39.0, 64.37, random_loss=0.002)
    assert k2 == 464 and "3 random losses" in how2 and abs(b2 - 271_000) < 1500
    # on a path without random loss the first loss is the policer's (an unevenly paced head let the bucket refill)
    assert m_trains.paced_bucket(lossy, 39.0, 64.37)[2] == 40
    # the send rate over the cut's head, from the packets' send times: a server that fell to 50 Mbit/s after packet
    # 100 sent the 464 at 52.6 on average (the head's first 100 said 64.37); without them it reads the pace
    uneven = paced(2000, 1500, 64.37, 39.0, 271_000, random_lost=(40,), slow_from=100, slow_pace=50.0)
    b5, _, k5, how5 = m_trains.paced_bucket(uneven, 39.0, 64.37, random_loss=0.002)
    first = next(s for s in uneven["lost_seq"] if s > 40)
    u = (first - 1) * 1500 * 8 / (uneven["tx_ms"][first - 1] * 1e3)
    assert k5 == first and f"{u:.4g}" in how5 and abs(b5 - 271_000) < 1500
    b6, _, _, _ = m_trains.paced_bucket({**uneven, "tx_ms": None}, 39.0, 64.37, random_loss=0.002)
    assert b6 > 271_000 + 100_000, "the pace over-states the head's send rate, so under-states its refill: the bucket reads high"
    # the server fell behind in the tail: the head's send rate and the measured rate still read it
    b3, _, k3, _ = m_trains.paced_bucket(paced(2000, 1500, 64.37, 39.0, 271_000, slow_from=1259, slow_pace=30.0), 39.0, 64.37)
    assert (k3, b3) == (k, b)
    # no loss: at least the train's bytes less the refill
    b4, least, _, how4 = m_trains.paced_bucket(paced(100, 1500, 64.37, 39.0, 271_000), 39.3, 64.37)
    assert b4 is None and least == 100 * 1500 * (1 - 39.3 / 64.37) and "passed whole" in how4


def test_the_first_trains_head_bounds_the_ports_fifo():
    # (71 - 1/2) x 1500 less the share 67.76 Mbit/s drained while they came at 6224 (the first packet went on the wire
    # at once, not into the FIFO): the true FIFO is 105.8 KB
    q = m_trains.port_fifo(PATH14)
    assert q == 70.5 * 1500 * (1 - 67.76008 / 6223.605)
    assert abs(q - 105_841) / 105_841 < 0.015
    assert m_trains.port_fifo({**PATH14, "leading_mbps": None}) is None


def test_seed8_path14_the_paced_train_finds_the_bucket_and_the_first_the_ports_fifo(monkeypatch):
    d = {"rate_mbps": 39.30, "limiter": "policer"}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: PATH14)
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: paced(count, 1500, pace, 38.99, 271_048))
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert abs(d["bucket_bytes"] - 271_048) / 271_048 < 0.02
    assert abs(d["port_buffer_bytes"] - 105_841) / 105_841 < 0.015  # port_fifo: 104.6 KB, within a packet
    ev = " | ".join(d["train_evidence"])
    assert "train 1 (back to back" in ev and "train 2 (paced at 64.37" in ev and "cut by the port's FIFO" in ev
    # the twin's port holds that FIFO and its policer the paced train's bucket
    p = Path(base_rtt_ms=100.4, down_mbps=39.3, limiter="policer", port_mbps=d["port_mbps"], bucket_bytes=d["bucket_bytes"],
             port_buffer_bytes=d["port_buffer_bytes"])
    ld = p.link_doc()
    assert ld["buffer"] == f"{d['port_buffer_bytes']}B" and ld["policer"]["burst"] == f"{d['bucket_bytes']}B"
    assert "port's buffer 105 KB" in p.describe()


def test_a_paced_train_the_server_sent_slower_than_the_flows_got_through_is_said(monkeypatch):
    # seed 39 path 192 measured again at load 12: a 295.9-Mbit/s pace left the server at 88.3, below the 267.7 the
    # flows got through a 266.8 policer: the server, not the path, set the train's rate, and the user hears of it
    d = {"rate_mbps": 39.30, "limiter": "policer"}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: PATH14)
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace:
                        {**paced(count, 1500, pace, 38.99, 271_048), "send_mbps": 30.0})
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert d["server_short"] == ["a packet train paced at 64.37 Mbit/s left the server at 30, slower than the 39.3 "
                                 "the flows got through"]
    # sent at its pace: nothing said
    d = {"rate_mbps": 39.30, "limiter": "policer"}
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace:
                        {**paced(count, 1500, pace, 38.99, 271_048), "send_mbps": pace})
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert "server_short" not in d


def test_a_paced_train_the_gap_did_not_refill_is_sent_again(monkeypatch):
    """A bucket larger than the gap since the last train refilled: the paced train may have found it part full;
    it is sent again after the largest readable bucket's refill time (here capped, and slept for)."""
    d = {"rate_mbps": 39.30, "limiter": "policer"}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: PATH14)
    calls, slept = [], []
    # a 1-ms handshake: the gap refills ~5 KB of a 271-KB bucket
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: calls.append(1) or paced(count, 1500, pace, 38.99, 271_048, rtt_ms=1.0))
    monkeypatch.setattr(m, "_sleep", lambda s: slept.append(s))
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert len(calls) == 2 and len(slept) == 1 and 0 < slept[0] <= m.PACED_REFILL_MAX_S
    assert "sent again" in d["train_evidence"][1] and "may not have refilled" in d["train_evidence"][2]

def test_a_trains_receiver_quiet_at_its_end_is_refill_less_the_requests_that_spent_it():
    # up, the server heard nothing of it for 0.4 s at the client's last poll: at 3 Mbit/s that refilled 150000 B,
    # less 20 polls of 100 B and two 1500-B fetch requests (254 records, 140 each)
    t = {"direction": "up", "lost": 221, "received": 254, "size": 1472, "quiet_ms": 400.0}
    assert m.quiet_refill(t, 3e6 / 8) == 150000 - 2000 - 3000
    # a recording from before the probe said: an up train with losses ended on at least the 0.25-s quiet
    # (crates/probe UP_QUIET_MIN_NS); one that lost nothing ended on its last record, a down train's end is unknown
    old = {k: v for k, v in t.items() if k != "quiet_ms"}
    assert m.quiet_refill(old, 3e6 / 8) == 93750 - 1250 - 3000
    assert m.quiet_refill({**old, "lost": 0}, 3e6 / 8) == 0.0
    assert m.quiet_refill({**old, "direction": "down"}, 3e6 / 8) == 0.0
    # down, the client's 30 ms after its last arrival, less the server's two DONE answers
    assert m.quiet_refill({"direction": "down", "lost": 900, "quiet_ms": 30.0}, 3e6 / 8) == 11250 - 200
    # at 0.1 Mbit/s the polls and the fetch take more than the quiet refilled: nothing counted
    assert m.quiet_refill(old, 0.1e6 / 8) == 0.0


def test_an_up_paced_train_after_a_lossy_up_train_counts_its_quiet_and_goes_once(monkeypatch):
    # campaign seed 102 path 5's up direction (a 2.99-Mbit/s tbf on a 5.99-Mbit/s port, its queue 3 KB): the
    # back-to-back train read a 5.2-KB bucket, the paced one 6.4 KB 3.3 ms after it; that gap alone refilled
    # 1.25 KB and the paced train was sent again after 0.9 s. The first ended on the server's quiet: sent once
    b2b = {"direction": "up", "first_loss": 3, "head_bytes": 4500, "head_packets": 3, "head_send_mbps": 299.0,
           "leading_mbps": 5.988, "lost": 489, "received": 7, "sent": 496, "sender_limited": False, "wire_bytes": 1500,
           "size": 1472, "tail_packets": 4, "tail_mbps": 2.99, "lost_seq": [s for s in range(3, 496) if s % 120],
           "bucket_bytes": 5205.0, "notes": [], "handshake_rtt_ms": 3.33}
    asked, slept = [], []

    def train(host, port, secret, count=None, pace_mbps=None, up=False):
        asked.append(pace_mbps)
        if pace_mbps is None:
            return b2b
        return {**with_tail(paced(count, 1500, pace_mbps, 2.99, 6400, rtt_ms=3.3)), "direction": "up", "size": 1472}

    monkeypatch.setattr(m, "_train", train)
    monkeypatch.setattr(m, "_sleep", lambda s: slept.append(s))
    monkeypatch.setattr(m, "_now", iter([1.0, 1.0, 2.0]).__next__)  # the paced one asked at once
    d = {"direction": "up", "rate_mbps": 2.99, "limiter": "policer", "rate_by_cc": {"cubic": 2.99},
         "rate_from": {"cubic": "delivered_bytes"}}
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert len(asked) == 2 and slept == [], d["train_evidence"]
    assert abs(d["bucket_bytes"] - 6400) <= 1500 and "may not have refilled" not in " ".join(d["train_evidence"])
    # a bucket larger than the quiet and the gap refilled (150 KB: 0.4 s of the rate) may have been found part full:
    # sent again
    asked.clear()
    bucket = [150_000]
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None, pace_mbps=None, up=False: asked.append(
        pace_mbps) or (b2b if pace_mbps is None else {**with_tail(paced(count, 1500, pace_mbps, 2.99, bucket[0], rtt_ms=3.3)),
                                                      "direction": "up", "size": 1472}))
    d = {"direction": "up", "rate_mbps": 2.99, "limiter": "policer", "rate_by_cc": {"cubic": 2.99},
         "rate_from": {"cubic": "delivered_bytes"}}
    monkeypatch.setattr(m, "_now", iter([1.0, 1.0, 2.0, 2.9, 3.9]).__next__)
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert len(asked) == 3 and len(slept) == 1, d["train_evidence"]
    assert "of it in the quiet that ended that train): sent again" in d["train_evidence"][1], d["train_evidence"]


# `udp train --json` through the emulator (--down 100Mbit --policer 20Mbit --rtt 30ms: a 25-KB bucket)
EMULATED = {"bucket_bytes": 23794.5, "bucket_min_bytes": 18942.2, "first_loss": 16, "head_bytes": 24000, "head_packets": 16,
            "head_send_mbps": 2462.3, "head_span_ms": 1.80, "leading_mbps": 100.06, "lost": 970, "notes": [], "received": 30,
            "sender_limited": False, "sent": 1000, "tail_mbps": 21.09, "tail_packets": 14, "wire_bytes": 1500}


def test_a_trains_head_gives_the_port_and_its_bytes_the_bucket():
    port, bucket, why = m_trains.policer_figures(EMULATED, 19.5)
    assert port == 100.06 and why == []
    # the head's bytes and half a packet less what 19.5 Mbit/s refilled while they reached the policer at 2.46 Gbit/s
    assert bucket == int(24000 + 750 - 24000 * 19.5 / 2462.3)
    assert 24_000 < bucket < 25_000


def test_where_the_train_cannot_tell_it_says_why_and_the_twin_keeps_its_assumptions():
    port, bucket, why = m_trains.policer_figures({**EMULATED, "sender_limited": True, "head_send_mbps": 100.0}, 19.5)
    assert port is None and "the server, not the path" in why[0]
    assert bucket is not None, "the bucket needs only the rate the head was sent at"
    port, bucket, why = m_trains.policer_figures({**EMULATED, "first_loss": None, "head_bytes": 1_500_000}, 19.5)
    # a train that passed whole: the bucket is at least its bytes less what the rate refilled while they came
    assert port == 100.06 and bucket == int(1_500_000 - 1_500_000 * 19.5 / 2462.3) and "passed whole" in why[0]
    # ... sent no faster than the policed rate, though, it never drew the bucket down: not read (seed 54 path 16: a
    # 1000-packet train at 434 Mbit/s under a rate of 683, taken as a 1500-B bucket before)
    whole = {**EMULATED, "first_loss": None, "head_bytes": 1_500_000, "head_packets": 1000, "head_send_mbps": 434.2,
             "leading_mbps": 434.2}
    port, bucket, why = m_trains.policer_figures(whole, 683.1)
    assert (port, bucket) == (None, None) and "passed whole, sent at 434.2 Mbit/s" in why[1] and "not read" in why[1]
    # ... or faster by less than the measured rate's 10 % (seed 54 path 18: 1.5 MB at 275.2 Mbit/s, a rate of 265.8)
    port, bucket, why = m_trains.policer_figures(dict(whole, head_send_mbps=275.2, leading_mbps=275.2), 265.8)
    assert bucket is None and "within the measured rate's 10% of the policed 265.8" in why[-1]
    port, bucket, why = m_trains.policer_figures(dict(whole, head_send_mbps=300.0, leading_mbps=300.0), 265.8)
    assert bucket == int(1_500_000 - 1_500_000 * 265.8 / 300.0)
    port, bucket, why = m_trains.policer_figures({**EMULATED, "leading_mbps": 20.5}, 19.5)
    assert port is None and "no faster than the policed rate" in why[0]
    port, bucket, why = m_trains.policer_figures({**EMULATED, "leading_mbps": None, "head_packets": 1, "head_bytes": 1500,
                                           "head_send_mbps": None, "notes": ["1 packet(s) before the first loss: no spacing, no port rate"]}, 19.5)
    assert (port, bucket) == (None, 2250) and "no port rate" in why[0] and "at most 2 packets" in why[1]


def test_the_policed_twin_takes_the_trains_port_and_bucket_else_the_assumption():
    p = Path(base_rtt_ms=30, down_mbps=20, limiter="policer", port_mbps=100.06, bucket_bytes=23_800)
    d = p.link_doc()
    assert d["rate"] == "100.06Mbit" and d["policer"] == {"rate": "20Mbit", "burst": "23800B"}
    assert "100 Mbit/s port" in p.describe() and "bucket 23.8 KB" in p.describe()
    # not measured, or no faster than the policed rate: POLICER_PORT x the rate, the scenario's own bucket
    for q in (Path(base_rtt_ms=30, down_mbps=20, limiter="policer"), Path(base_rtt_ms=30, down_mbps=20, limiter="policer", port_mbps=18)):
        d = q.link_doc()
        assert d["rate"] == f"{20 * POLICER_PORT}Mbit" and d["policer"] == {"rate": "20Mbit"}
        assert "assumed" in q.describe()
    # a shaped candidate leaves the policer out (the shaper stays under it) but not its port: the shaper's
    # bursts leave at the port's speed, as on the campaign's true path
    s = p.link_doc(19.0, "cake")
    assert "policer" not in s and s["rate"] == "100.06Mbit" and s["qdisc_params"] == {"bandwidth": "19Mbit"}
    assert Path(base_rtt_ms=30, down_mbps=20, limiter="policer").link_doc(19.0, "cake")["rate"] == f"{20 * POLICER_PORT}Mbit"
    # a FIFO path's shaped candidate keeps the bottleneck's own rate on the wire
    assert Path(base_rtt_ms=30, down_mbps=20, buffer_bytes=75_000).link_doc(19.0, "cake")["rate"] == "20Mbit"


def test_a_twin_with_the_trains_port_and_bucket_round_trips(tmp_path):
    p = Path(base_rtt_ms=30, down_mbps=20, limiter="policer", port_mbps=100, bucket_bytes=24_000)
    f = tmp_path / "twin.toml"
    f.write_text(to_toml(p.twin()))
    q = Path.from_twin(str(f))
    assert (q.down_mbps, q.port_mbps, q.bucket_bytes, q.limiter) == (20, 100, 24_000, "policer")
    assert q.link_doc() == p.link_doc()


def test_a_policed_direction_records_its_train_and_survives_its_failure(monkeypatch):
    d = {"rate_mbps": 19.5, "limiter": "policer"}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: EMULATED)
    # the paced train (at 95 % of the 100.06-Mbit/s port) meets the same 24.75-KB bucket: the policer cut both
    paced_counts = []

    def paced_train(host, port, secret, count, pace):
        paced_counts.append((count, round(pace, 2)))
        return paced(count, 1500, pace, 19.5, 24_750)

    monkeypatch.setattr(m, "_paced_train", paced_train)
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert d["train"] is EMULATED and d["port_mbps"] == 100.06 and 24_000 < d["bucket_bytes"] < 25_000 and d["train_note"] is None
    # 2000 packets (the cap; 1 s at 95.06 Mbit/s is 7922) at 95 % of the port
    assert paced_counts == [(2000, 95.06)]
    # the port's FIFO passed the 16-packet head whole: at least what port_fifo reads of it, (16 - 1/2) x 1500 less the
    # share the port drained while it came at 2462 Mbit/s
    assert d.get("port_buffer_bytes") is None and d["port_buffer_min_bytes"] == int(15.5 * 1500 * (1 - 100.06 / 2462.3))
    assert "the policer cut both" in d["train_evidence"][-1]

    def refused(host, port, secret, count=None):
        raise UserError("measure (packet train): the server refused the train: ...")

    monkeypatch.setattr(m, "_train", refused)
    d = {"rate_mbps": 19.5, "limiter": "policer"}
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert (d["train"], d["port_mbps"], d["bucket_bytes"]) == (None, None, None) and "refused" in d["train_note"]


def test_a_train_no_faster_than_the_rate_turns_a_policer_reading_into_a_shallow_queue():
    """Drops without a queue and a train whose head came at the measured
    rate: no faster port, so no policer (fq_codel at 1.5 Mbit/s, 486 ms,
    the campaign's development seed read it as one): a shallow FIFO."""
    from bloatlab.advise.trains import _not_a_policer

    # the probe queued as the flows did (one shared queue)
    ev = {"probe_q95_ms": 40.0, "flow_q50_ms": 20.0, "flow_q95_ms": 51.7, "dropped": True, "excess_loss": 0.02,
          "loaded_rtt_ms": 506.0, "rate_mbps": 1.45}
    x = {"rate_mbps": 1.45, "limiter": "policer", "buffer_bytes": None, "buffer_bdp": None, "flows": 4,
         "evidence": ev, "train": {"leading_mbps": 1.47, "sender_limited": False}}
    _not_a_policer(x, 486.0)
    # below the flows' burst floor the figure is the probes' queueing (buffer_reading), not the flows' 51.7 ms
    assert x["limiter"] == "fifo" and x["buffer_bytes"] == 7249  # 40 ms x 1.45 Mbit/s, as the float rounds down
    assert "not a policer" in x["limiter_note"]
    y = {"rate_mbps": 20.0, "limiter": "policer", "buffer_bytes": None, "evidence": dict(ev, flow_q95_ms=3.0),
         "train": {"leading_mbps": 100.0, "sender_limited": False}}
    _not_a_policer(y, 30.0)
    assert y["limiter"] == "policer"  # a port five times faster: a policer


def test_with_the_policer_excluded_the_flows_tail_queue_the_probe_skipped_is_flow_isolation():
    """classify reads a policer before it looks at the flows' tail (rule 2
    before rule 3: a policer's port bursts lift the flows' p95); once the
    train excludes the policer, rule 3 applies as it stands. Campaign seed 47
    path 37 (CAKE at 254.7 Mbit/s, 34 ms, 0.15 % random loss): BBR's flows
    2.9 / 9.5 ms at p50 / p95, the probe 0.24 ms, drops beyond the idle loss,
    a train at the rate — it was read as a shallow FIFO."""
    from bloatlab.advise.classify import _classify_ev
    from bloatlab.advise.trains import _not_a_policer

    ev = {"phase": "bbr", "rate_mbps": 252.58, "probe_q95_ms": 0.2375, "flow_q50_ms": 2.9248, "flow_q95_ms": 9.4738,
          "dropped": True, "excess_loss": 0.000795, "loaded_rtt_ms": 37.058}
    assert _classify_ev(ev, 252.58, 4) == "policer"
    assert _classify_ev(ev, 252.58, 4, policer=False) == "aqm"
    x = {"rate_mbps": 252.58, "limiter": "policer", "buffer_bytes": None, "buffer_bdp": None, "flows": 4, "evidence": ev,
         "train": {"leading_mbps": 250.0, "sender_limited": False}}
    _not_a_policer(x, 34.07)
    assert x["limiter"] == "aqm" and x["buffer_bytes"] is None and x["port_mbps"] is None
    assert "flow-isolating AQM" in x["limiter_note"]


# Trains measured through the emulator (2026-11-25; bloatlab-probe udp train, 1000 packets) behind a FIFO of 1 BDP
# at 100 Mbit/s / 20 ms, CoDel at 20 Mbit/s / 20 ms and PIE at 100 Mbit/s / 20 ms (Linux's defaults), with the
# queue the flows of measure's CUBIC fill held there (their queueing p95).
FIFO_TRAIN = {"first_loss": 169, "head_bytes": 253_500, "head_packets": 169, "lost": 825, "tail_packets": 6, "received": 175,
              "wire_bytes": 1500, "head_send_mbps": 9422.8}
CODEL_TRAIN = {"first_loss": 176, "head_bytes": 264_000, "head_packets": 176, "lost": 11, "tail_packets": 813, "received": 989,
               "wire_bytes": 1500, "head_send_mbps": 4609.1}
PIE_TRAIN = {"first_loss": None, "head_bytes": 1_500_000, "head_packets": 1000, "lost": 0, "tail_packets": 0, "received": 1000,
             "wire_bytes": 1500, "head_send_mbps": 1259.8}


def test_a_train_tells_a_single_queue_aqm_from_a_fifo_by_the_burst_it_lets_build():
    # a FIFO passes its buffer and what the rate drained meanwhile (175 packets: 21.0 ms x (1 - 100/9423) = 20.8 ms
    # built, the flows held 19.9), then drops what the rate cannot drain
    kind, why = m_trains.single_queue_aqm(FIFO_TRAIN, 100.0, 19.9)
    assert kind is None and "20.8 ms of queue" in why and "a FIFO's buffer" in why
    # CoDel: 989 packets, 593.4 x (1 - 20/4609) = 591 ms of queue built (the flows held 12.1: 49x), the first
    # drop 105.6 ms into the queue (after CoDel's interval), then drops here and there
    kind, why = m_trains.single_queue_aqm(CODEL_TRAIN, 20.0, 12.1)
    assert kind == "codel" and "591 ms of queue (49x)" in why
    # PIE: the whole train passed, 120 x (1 - 100/1260) = 110 ms built (21.7 ms held: 5.1x), beyond CoDel's interval
    kind, why = m_trains.single_queue_aqm(PIE_TRAIN, 100.0, 21.7)
    assert kind == "pie" and "110 ms" in why
    # a whole train that built less than CoDel's interval (at 150 Mbit/s: 80 x (1 - 150/1260) = 70 ms) cannot tell
    # CoDel from PIE
    kind, why = m_trains.single_queue_aqm(PIE_TRAIN, 150.0, 10.0)
    assert kind == "codel" and "CoDel or PIE" in why
    # a train sent no faster than the rate builds no queue: nothing to read
    assert m_trains.single_queue_aqm(dict(PIE_TRAIN, head_send_mbps=90.0), 100.0, 10.0)[0] is None
    # a deep FIFO the flows filled passes the whole train too, but no more than the queue they held
    assert m_trains.single_queue_aqm(PIE_TRAIN, 100.0, 150.0)[0] is None


# Trains through the emulator's PIE (Linux's defaults) and a FIFO at a few Mbit/s, each sent right after measure's
# loaded phases (the advisor's campaign, evaluation seed 4, paths 28 and 25: 3.8 and 4.6 Mbit/s).
PIE_LOADED_TRAIN = {"first_loss": 6, "head_bytes": 9000, "head_packets": 6, "lost": 414, "tail_packets": 580, "received": 586,
                    "wire_bytes": 1500, "head_send_mbps": 608.5, "send_mbps": 1087.5}
FIFO_SLOW_TRAIN = {"first_loss": 10, "head_bytes": 15000, "head_packets": 10, "lost": 985, "tail_packets": 5, "received": 15,
                   "wire_bytes": 1500, "head_send_mbps": 493.2, "send_mbps": 895.9}


def truth(limiter: str, down_mbps: float, buffer_bytes: int | None = None) -> dict:
    return {"limiter": limiter, "observable": c.OBSERVABLE[limiter], "down_mbps": down_mbps, "buffer_bytes": buffer_bytes}


# The AQM train behind CoDel at 85.5 Mbit/s and 213 ms (campaign seed 64, path 19, through the emulator, 2026-11-28),
# right after measure's loads; the flows' CUBIC slow start had stood in 137.7 ms of queue.
CODEL_LONG_TRAIN = {"first_loss": 749, "head_bytes": 1_123_500, "head_packets": 749, "head_send_mbps": 5409.0,
                    "leading_mbps": 85.56, "lost": 9, "received": 991, "sender_limited": False, "send_mbps": 5398.3,
                    "sent": 1000, "tail_packets": 242, "tail_mbps": 85.53, "wire_bytes": 1500,
                    "lost_seq": [749, 780, 811, 843, 874, 905, 936, 966, 997]}


def test_a_tail_no_fifo_drops_so_little_of_shows_an_aqm_whatever_the_trains_reach():
    """1000 packets at 5.4 Gbit/s into 85.5 Mbit/s build at most 139 ms, about the 137.7 ms the flows stood in: no
    burst to read, and the first loss came 105 ms into the queue, where a FIFO of 137.7 ms drops none; then 9 of
    the last 251 packets were lost, every ~31st. A FIFO full at the first loss drops 1 - C/P of a tail reaching it
    at P, so one that drops so little ((sqrt 10 + 1)^2 = 17.3 of 251 at most) met the train at P within 7 % of the
    rate, and was full at 105.15 ms x 17.3/251 = 7.26 ms — not the flows' 137.7. Nor were they losses here and
    there: all 9 after the first 749 packets, which 9 losses at random over 1000 do with the chance 3.5e-6. The
    server sent the tail at 5.4 Gbit/s, so its own pace explains none of it. A FIFO as deep as the flows' behind a
    hop whose pace fell after the head would give the same: the reading names it."""
    assert round(m_trains.fifo_depth_for_losses(CODEL_LONG_TRAIN, 85.476), 2) == 7.26
    assert m_trains.losses_cluster(CODEL_LONG_TRAIN)
    kind, why = m_trains.single_queue_aqm(CODEL_LONG_TRAIN, 85.476, 137.67)
    assert kind == "codel" and "lost none of its first 749 packets and then few" in why
    assert "losing 9 of its last 251 packets here and there" in why
    assert "is at most 7.26 ms deep" in why and "CoDel's drops after its interval" in why
    alts = m_trains.aqm_alternatives(why, kind, 137.67)
    assert alts[0] == {"limiter": "aqm", "kinds": ["codel"]}
    assert {k: v for k, v in alts[1].items() if k != "why"} == {"limiter": "fifo", "depth_below_ms": 140.67}
    assert c.limiter_said(truth("codel", 85.5), {"limiter": "aqm", "limiter_alternatives": alts})
    assert c.limiter_said(truth("fifo", 85.5, 1_400_000), {"limiter": "aqm", "limiter_alternatives": alts})
    assert not c.limiter_said(truth("fifo", 85.5, 2_000_000), {"limiter": "aqm", "limiter_alternatives": alts})
    # the reading rests on the comparison with the flows' queue: a FIFO 100 ms deep at 85 Mbit/s behind a hop of
    # 400 (a constant pace: 1 - 85/400 of the tail lost, 80 of 101), the flows in its 100 ms, bounds the FIFO at
    # 115 ms — no contradiction (a packet-level FIFO's losses)
    behind_hop = dict(CODEL_LONG_TRAIN, first_loss=899, head_bytes=1_348_500, head_packets=899, lost=80,
                      tail_packets=21, received=920, head_send_mbps=5400.0, send_mbps=5400.0,
                      lost_seq=list(range(899, 1000))[:80])
    assert m_trains.fifo_depth_for_losses(behind_hop, 85.0) > 100.0
    assert m_trains.single_queue_aqm(behind_hop, 85.0, 100.0)[0] is None
    # a server that slowed to 428 Mbit/s for the tail into a 3.8-ms FIFO at 420: 9 of 406 lost, spread — but a
    # FIFO drops 1 - 420/428 = 1.9 % of such a tail, within the bound (17.3 / 406 = 4.3 %): its own pace explains it
    slowed = {"first_loss": 594, "head_bytes": 891_000, "head_packets": 594, "lost": 9, "tail_packets": 397,
              "received": 991, "wire_bytes": 1500, "head_send_mbps": 540.0, "send_mbps": 488.9, "tail_send_mbps": 428.0,
              "sent": 1000, "lost_seq": [594, 599, 636, 690, 743, 797, 850, 904, 957]}
    assert m_trains.losses_cluster(slowed) and 2 * m_trains.fifo_depth_for_losses(slowed, 420.0) <= 3.8
    assert m_trains.single_queue_aqm(slowed, 420.0, 3.8)[0] is None
    assert m_trains.single_queue_aqm(dict(slowed, tail_send_mbps=540.0), 420.0, 3.8)[0] == "pie"
    # on a lossy path whose random losses were cut off before the queue's (policer_cut), all the rest come after the
    # cut by construction: no cluster to read there (12 random losses at ~1.2 %, the cut at 951 on a 0.5 % path)
    lossy = dict(CODEL_LONG_TRAIN, first_loss=28, head_bytes=42_000, head_packets=28, lost=12, tail_packets=960,
                 received=988, lost_seq=[28, 216, 354, 363, 417, 546, 630, 709, 830, 854, 951, 968])
    assert m_trains.single_queue_aqm(lossy, 85.0, 200.0, idle_loss=0.005)[0] is None
    # one loss late in a train is no queue's pattern: a stray loss (50 of 1000 packets after it: chance 0.05) a FIFO
    # deeper than the whole train passes too
    stray = dict(CODEL_LONG_TRAIN, first_loss=950, head_bytes=1_425_000, head_packets=950, lost=1, tail_packets=49,
                 received=999, lost_seq=[950])
    assert not m_trains.losses_cluster(stray)
    assert m_trains.single_queue_aqm(stray, 85.476, 137.67)[0] is None
    # a FIFO's own tail drop at the flows' depth (all but C/U of the 251 lost): its depth, not an AQM
    fifo = dict(CODEL_LONG_TRAIN, lost=247, tail_packets=4, received=753, lost_seq=list(range(749, 996)))
    assert m_trains.losses_cluster(fifo) and round(m_trains.fifo_depth_for_losses(fifo, 85.476), 1) == 105.2
    assert m_trains.single_queue_aqm(fifo, 85.476, 137.67)[0] is None
    # nothing lost: no depth a FIFO would need, no cluster
    assert m_trains.fifo_depth_for_losses(dict(CODEL_LONG_TRAIN, first_loss=None), 85.476) == float("inf")
    assert not m_trains.losses_cluster(dict(CODEL_LONG_TRAIN, first_loss=None, lost=0))


def test_a_train_after_the_load_shows_pie_by_its_spread_drops_not_its_head():
    """PIE's drop probability, raised by the loaded phase, outlasts it by seconds: the train loses its 7th packet,
    sooner than a FIFO of the flows' queue would, but then only 42 % of its tail, here and there, where a full FIFO
    admits C/U (3.8/1087: 3.5 packets of 994) — the 586 packets that arrived stood 1.85 s in the queue (92x the
    flows' 20 ms), and the first loss came 19 ms into it, before CoDel could drop (100 ms): PIE's."""
    kind, why = m_trains.single_queue_aqm(PIE_LOADED_TRAIN, 3.79, 20.1)
    assert kind == "pie" and "1.85e+03 ms of queue (92x)" in why and "before CoDel's 100-ms interval" in why
    # the FIFO at 4.6 Mbit/s: 15 packets arrived (38.8 ms built, 1.2x the flows' 31.4 ms), 5 of 990 after the first
    # loss — what its drain admits (990 x 4.61/896 = 5.1)
    kind, why = m_trains.single_queue_aqm(FIFO_SLOW_TRAIN, 4.61, 31.4)
    assert kind is None and "38.8 ms of queue" in why and "a FIFO's buffer" in why
    # the same tail through a queue that built no more than the flows held: a FIFO's, however spread
    assert m_trains.single_queue_aqm(PIE_LOADED_TRAIN, 3.79, 1000.0)[0] is None
    # a deep FIFO on a path that loses 0.4 % at random: a train's losses here and there are the path's, not an AQM's
    # (the flows dropped beyond the random loss, or no train is sent: so they filled the FIFO to its depth, and the
    # train, 996 x 1500 B at 1 Gbit/s into 20 Mbit/s, 586 ms, builds about what they held)
    lossy_fifo = {"first_loss": 200, "head_bytes": 300_000, "head_packets": 200, "lost": 4, "tail_packets": 796, "received": 996,
                  "wire_bytes": 1500, "head_send_mbps": 1000.0, "send_mbps": 1000.0}
    kind, why = m_trains.single_queue_aqm(lossy_fifo, 20.0, 500.0, idle_loss=0.004)
    assert kind is None and "passed whole but for the path's random loss (4 of 1000 lost, ~4 expected)" in why
    # ... the same train where the flows, dropping, held 100 ms: 5.9x that passed, a queue that is not its buffer. Its
    # 586 ms of queue would have given CoDel 10 drops at dequeue (after 105 ms, then 100 / sqrt(n) ms apart), beyond
    # the ~4 +- 2 the random loss explains; it lost 4: not CoDel. PIE decides at enqueue, and the burst arrived within
    # 12 ms, inside its 150-ms allowance: PIE
    assert m_trains.codel_train_drops(586, 20.0, 1000.0) == 10
    kind, why = m_trains.single_queue_aqm(lossy_fifo, 20.0, 100.0, idle_loss=0.004)
    assert kind == "pie" and "10 drops at dequeue" in why and "would stand out of the random loss" in why
    # CoDel at 105 Mbit/s / 28 ms drops one packet of a train after its interval (the campaign's evaluation seed 5,
    # path 7: 944 passed, 1 lost, 55 arrived after it): on a path without random loss that one loss is CoDel's
    codel_one = {"first_loss": 944, "head_bytes": 1_416_000, "head_packets": 944, "lost": 1, "tail_packets": 55, "received": 999,
                 "wire_bytes": 1500, "head_send_mbps": 486.7, "send_mbps": 486.5}
    kind, why = m_trains.single_queue_aqm(codel_one, 105.4, 6.43)
    assert kind == "codel" and "losing 1 of its last 56 packets" in why
    # ... and on a path losing 0.4 % at random, one loss in 1000 is the path's: the train passed whole for the queue's
    # part, 89 ms built (13.8x the flows' 6.43), within PIE's allowance: CoDel or PIE
    kind, why = m_trains.single_queue_aqm(codel_one, 105.4, 6.43, idle_loss=0.004)
    assert kind == "codel" and "CoDel or PIE" in why and "(1 of 1000 lost, ~4 expected)" in why


def test_a_train_whose_codel_drops_would_hide_in_the_random_loss_leaves_codel_and_pie_open():
    """Ranked seed 130 path 21: PIE at 37.9 Mbit/s and 241 ms with 1.03 % random loss. The train, 1000 packets sent
    at 348 Mbit/s (34 ms: inside PIE's 150-ms allowance), built 286 ms of queue and lost 8 where ~11 were expected.
    CoDel would have dropped 3 of it at dequeue (at 105, 205 and 276 ms), which hide in that loss (3 sigma: 9.8
    packets); PIE drops none of a burst at enqueue. It was read CoDel ("PIE past its allowance raises its drop
    probability"), the twin's p95 74 % above the kernel's; now the train leaves both open for the model to decide."""
    train = {"first_loss": 36, "head_bytes": 54000, "head_packets": 36, "lost": 8, "tail_packets": 956, "received": 992,
             "sent": 1000, "send_mbps": 348.2432857573202, "head_send_mbps": 314.72508763595,
             "tail_send_mbps": 346.6938606174632, "lost_seq": [36, 51, 140, 393, 466, 472, 855, 938], "wire_bytes": 1500}
    assert m_trains.codel_train_drops(286, 37.2, 348.2) == 3
    kind, why = m_trains.single_queue_aqm(train, 37.204722410298565, 1.46, idle_loss=0.010850230659153248)
    assert kind == "codel" and why.endswith(m_trains.CODEL_OR_PIE) and "3 drops at dequeue would hide" in why
    assert m_trains.aqm_alternatives(why) == [{"limiter": "aqm", "kinds": ["codel"]}, {"limiter": "aqm", "kinds": ["pie"]}]


def test_on_a_lossy_path_the_aqm_is_told_by_losses_beyond_the_random_ones():
    """Behind CoDel or PIE at 10 Mbit/s on a path that loses 1 % at random, a train of 1000 packets (sent at ~700
    Mbit/s after BBR's loaded phases, 2026-11-26) builds ~1 s of queue and loses ~14 %: spread drops, an AQM. Which:
    the rate drains 83 packets within CoDel's 100-ms interval; random loss takes ~0.8 of them. CoDel drops none of
    them, PIE's probability (left high by the load) drops several."""
    random_early = [7, 60]                                        # the path's own, 2 of the first 83 (3 sigma: 2.7)
    late = list(range(100, 1000, 8))                              # 113 more, here and there after the interval
    codel = {"first_loss": 7, "head_bytes": 10_500, "head_packets": 7, "lost": 115, "tail_packets": 878, "received": 885,
             "wire_bytes": 1500, "head_send_mbps": 700.0, "send_mbps": 700.0, "sent": 1000, "lost_seq": random_early + late}
    kind, why = m_trains.single_queue_aqm(codel, 10.0, 60.0, idle_loss=0.01)
    assert kind == "codel" and "the first 83 (CoDel's 100-ms interval at the rate) no more than the path's random loss" in why
    # the first loss is the path's: on the rule without random loss (the first loss 8.4 ms into the queue) it read PIE
    assert m_trains.single_queue_aqm({k: v for k, v in codel.items() if k != "lost_seq"}, 10.0, 60.0, idle_loss=0.01)[0] == "pie"
    pie = dict(codel, lost_seq=[3, 7, 15, 22, 30, 41, 60, 77] + late, lost=121, tail_packets=872, received=879)
    kind, why = m_trains.single_queue_aqm(pie, 10.0, 60.0, idle_loss=0.01)
    assert kind == "pie" and "8 of the first 83" in why and "PIE's drop probability" in why


def test_on_a_lossy_path_the_queues_first_loss_is_where_the_losses_beyond_the_random_ones_begin():
    """Campaign seed 49 path 59 (a FIFO of 1.31 MB on a Starlink-like capacity, 1 % random loss; measured 0.86 %):
    the AQM train, sent at 593 Mbit/s after flows that queued 235 ms at 47.32 Mbit/s, lost 8 packets here and there
    before packet 906 (7.8 expected at 0.86 %) and 91 of the 94 from it on, a full FIFO's tail drop (1.31 MB, what
    the train's first 906 packets fill). Its first loss, packet 235 (54.7 ms of queue), was the path's: read from
    there the train showed CoDel (no truth named); read from the change point it is a FIFO's buffer."""
    lost_seq = [235, 414, 425, 496, 506, 509, 596, 666] + [s for s in range(906, 1000) if s not in (909, 955, 956)]
    train = {"first_loss": 235, "head_bytes": 352_500, "head_packets": 235, "head_send_mbps": 576.1369728721146,
             "lost": 99, "tail_packets": 666, "received": 901, "sent": 1000, "send_mbps": 592.9580445086535,
             "wire_bytes": 1500, "lost_seq": lost_seq}
    assert m_trains.policer_cut(lost_seq, 1000, 0.008608481548715852) == 906
    q = m_trains.queue_losses(train, 906)
    assert (q["first_loss"], q["head_packets"], q["head_bytes"], q["lost"], q["tail_packets"]) == (906, 906, 1_359_000, 91, 3)
    # the flows' queue: their p95 (234.8 ms) as the buffer today's reading holds, 1389064 B at the rate
    rate = 47.31932203182679
    kind, why = m_trains.single_queue_aqm(train, rate, 1_389_064 * 8 / (rate * 1e3), idle_loss=0.008608481548715852)
    assert kind is None and "a FIFO's buffer" in why
    assert "its 8 losses before packet 906 no more than the path's random loss (~7.8 expected)" in why


def test_the_twin_of_a_single_queue_aqm_runs_that_qdisc_with_its_own_limit():
    from bloatlab.advise.path import Path

    p = Path(base_rtt_ms=20.0, down_mbps=20.0, limiter="aqm", aqm_qdisc="pie")
    d = p.link_doc()
    assert d["qdisc"] == "pie" and "buffer" not in d
    assert "single-queue AQM" in p.describe()
    assert Path(base_rtt_ms=20.0, down_mbps=20.0, limiter="aqm").link_doc()["qdisc"] == "fq_codel"


def test_the_aqm_verdict_reads_the_policer_train_where_one_was_sent(monkeypatch):
    """A direction read as a policer and turned into a shallow queue by its train (no faster port) is judged on that
    train: a second one right after it would meet the drop probability the first left behind (path 28 above: 586
    of the first train's packets arrived, none but 4 of a second's)."""
    x = {"limiter": "fifo", "rate_mbps": 3.79, "buffer_bytes": 9536, "load_cc": m.LOAD_CC,
         "evidence": {"dropped": True}, "train": dict(PIE_LOADED_TRAIN, sent=1000)}

    def no_second(*a, **k):
        raise AssertionError("a second train was sent")

    monkeypatch.setattr(m, "_train", no_second)
    m._aqm_train("h", 5301, None, x, lambda s: None)
    assert x["limiter"] == "aqm" and x["aqm_qdisc"] == "pie" and x["buffer_bytes"] is None
    # without a train of its own length before, the direction sends one
    sent = []
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: sent.append(count) or FIFO_SLOW_TRAIN)
    y = {"limiter": "fifo", "rate_mbps": 4.61, "buffer_bytes": 18095, "load_cc": m.LOAD_CC, "evidence": {"dropped": True}}
    m._aqm_train("h", 5301, None, y, lambda s: None)
    # (2 s of the 4.61 Mbit/s: 768 packets, not the probe's 1000, measure.train_count)
    assert sent == [768] and y["limiter"] == "fifo" and "a FIFO's buffer" in y["aqm_note"]


def test_a_lossy_paths_bbr_fill_that_dropped_beyond_the_random_loss_sends_the_aqm_train(monkeypatch):
    """On a lossy path the fill runs BBR, which does not back off on loss: where its flows lost beyond the path's
    random loss the queue reached what limits it — a FIFO's depth (the emulator, 2026-11-26, 1 % loss: FIFOs of
    0.5-2 BDP at 10-60 Mbit/s, the flows' p95 within 1.0-1.1x of what the train then built, its tail dropped), or
    an AQM's drops — so the train is read as after CUBIC's fill. CoDel at 33 Mbit/s / 63 ms (the campaign's seed 25,
    path 3, read as a FIFO when no train was sent there): 346 ms built, 2.8x the flows' 124 ms."""
    sent = []
    codel33 = {"first_loss": 90, "head_bytes": 135_000, "head_packets": 90, "lost": 73, "tail_packets": 837, "received": 927,
               "wire_bytes": 1500, "head_send_mbps": 10054.0, "send_mbps": 10054.0, "sent": 1000,
               "lost_seq": [90] + list(range(300, 1000, 10))}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: sent.append(count) or codel33)
    x = {"limiter": "fifo", "rate_mbps": 32.1, "buffer_bytes": int(124e-3 * 32.1e6 / 8), "load_cc": "bbr",
         "evidence": {"dropped": True, "flow_q95_ms": 124.0}}
    m._aqm_train("h", 5301, None, x, lambda s: None, idle_loss=0.011)
    assert sent == [m_trains.AQM_TRAIN_PACKETS] and x["limiter"] == "aqm" and x["aqm_qdisc"] == "codel"
    # BBR's flows that lost no more than the random loss held less than the buffer: no train (a deep FIFO's 161 ms
    # at 3 BDP, the same path)
    y = {"limiter": "fifo", "rate_mbps": 32.1, "buffer_bytes": 646_000, "load_cc": "bbr", "evidence": {"dropped": False}}
    m._aqm_train("h", 5301, None, y, lambda s: None, idle_loss=0.011)
    assert sent == [m_trains.AQM_TRAIN_PACKETS] and y["limiter"] == "fifo" and "aqm_train" not in y


def test_a_first_loss_well_after_codels_first_drop_is_pies():
    """PIE at 15.1 Mbit/s / 71 ms (the campaign's seed 26, path 4, 2026-11-26; read as CoDel by the rule "a first loss
    after CoDel's interval"): the train (sent at 592 Mbit/s, all of it arrived within 20 ms) lost its first packet
    373 ms into the queue and 7 more here and there. CoDel drops once the sojourn has stood above 5 ms for 100 ms: at
    the dequeue clock 100 + 5 / (1 - 15.6/592) = 105.1 ms; PIE drops at enqueue with its probability, so its first
    loss can lie anywhere, past its 150-ms allowance on a fresh burst. Past the middle (127.6 ms): PIE."""
    pie = {"sent": 1000, "received": 992, "lost": 8, "first_loss": 486, "head_packets": 486, "head_bytes": 729_000,
           "head_send_mbps": 725.7, "send_mbps": 592.2, "tail_packets": 506, "wire_bytes": 1500,
           "lost_seq": [486, 614, 647, 735, 812, 855, 925, 981]}
    kind, why = m_trains.single_queue_aqm(pie, 15.627654715169848, 11.68)
    assert kind == "pie" and "373 ms into the queue, well after CoDel's first drop would have come (105 ms" in why
    # CoDel's own first drops (CODEL_TRAIN above: 105.6 ms; seed 5's path 7: 944 x 1500 B at 105.4 Mbit/s, 107.5 ms)
    assert m_trains.single_queue_aqm(CODEL_TRAIN, 20.0, 12.1)[0] == "codel"
    assert m_trains.single_queue_aqm(dict(pie, first_loss=160, head_packets=160, head_bytes=240_000), 15.63, 11.68)[0] == "codel"  # 122.8 ms


def test_a_paced_trains_tail_reads_the_policed_rate_the_flows_fall_short_of():
    # seed 28 path 177's truth: 4.736 Mbit/s with a 2-packet bucket, paced at 10.86 (95 % of its 11.43-Mbit/s port);
    # four CUBIC flows read 3.71 there: their bursts meet an empty bucket. Once empty, the bucket passes what it refills
    t = with_tail(paced(906, 1500, 10.86, 4.736, 3000))
    c, why = m_trains.paced_rate(t, 10.86, 3000)
    assert c == t["tail_mbps"] and "what the emptied bucket refills" in why
    # within one packet over the tail's span of the committed rate
    assert abs(c - 4.736) <= c / t["tail_packets"]
    # too short a tail to read
    short = {**t, "tail_packets": m_trains.TAIL_RATE_PACKETS - 1}
    assert m_trains.paced_rate(short, 10.86, 3000)[0] is None
    # no send times for the tail: who set its rate is not known
    assert m_trains.paced_rate({**t, "tx_ms": []}, 10.86, 3000)[0] is None
    # nothing lost: no tail
    assert m_trains.paced_rate({**t, "first_loss": None}, 10.86, 3000)[0] is None


def test_an_up_train_behind_a_slow_policer_offers_the_packets_its_tail_needs():
    # campaign seed 80 path 37's up direction through the emulator: a 0.870-Mbit/s policer (a 3-KB bucket) on a
    # 3.757-Mbit/s port; four CUBIC flows got 0.2232 through it (60 % retransmitted), and the up train paced at
    # 3.569 was sized from them (train_count: what 0.2232 drains in 2 s, 37 packets). Its tail held 8 packets,
    # too few to read, and the rate stood at the flows' (-74 %)
    old = with_tail(paced(m.train_count(0.2232, 298), 1500, 3.569, 0.870, 3000))
    assert m.train_count(0.2232, 298) == 37 and old["tail_packets"] < m_trains.TAIL_RATE_PACKETS
    assert m_trains.paced_rate(old, 3.569, 3750, 0.2232)[0] is None
    # the head drains the 3.75-KB reading at the pace less 0.2232 (2.67 packets), then 10 x 3.569 / 0.2232 = 159.9
    # packets offered pass 10 at the flows' rate, and one for the first loss
    n = m_trains.policed_tail_count(3750, 0.2232, 3.569)
    assert n == math.ceil(3750 / 1500 / (1 - 0.2232 / 3.569) + 10 * 3.569 / 0.2232) + 1 == 164
    # through the true policer (0.870, above the flows' rate) the tail passes 39 packets, and reads it
    t = with_tail(paced(n, 1500, 3.569, 0.870, 3000))
    assert t["tail_packets"] >= m_trains.TAIL_RATE_PACKETS
    c, why = m_trains.paced_rate(t, 3.569, 3750, 0.2232)
    assert abs(c - 0.870) <= c / t["tail_packets"], (c, why)
    # a random loss on the way lengthens the tail by its share; a pace no faster than the rate asks for nothing
    assert m_trains.policed_tail_count(3750, 0.2232, 3.569, random_loss=0.02) == math.ceil(2.6667 + 160.0 / 0.98) + 1
    assert m_trains.policed_tail_count(3750, 5.0, 4.0) == 0


def test_behind_a_slow_up_policer_the_paced_train_is_long_enough_to_read_its_rate(monkeypatch):
    # the same path through measure's policer reading: the back-to-back train read the port and a 3.75-KB bucket
    # (path 37's, as stored), then the paced train, sized for its tail, reads the policed rate where the flows' stood
    b2b = {"direction": "up", "first_loss": 2, "head_bytes": 3000, "head_packets": 2, "head_send_mbps": 716.2,
           "leading_mbps": 3.757, "lost": 35, "received": 2, "sent": 37, "sender_limited": False, "wire_bytes": 1500,
           "tail_packets": 0, "tail_mbps": None, "lost_seq": list(range(2, 37)), "bucket_bytes": 3750.0, "notes": [],
           "handshake_rtt_ms": 6.19}
    asked = []

    def train(host, port, secret, count=None, pace_mbps=None, up=False):
        assert up
        asked.append((count, pace_mbps))
        return b2b if pace_mbps is None else with_tail(paced(count, 1500, pace_mbps, 0.870, 3000, rtt_ms=6.2))

    monkeypatch.setattr(m, "_train", train)
    monkeypatch.setattr(m, "_sleep", lambda s: None)
    d = {"direction": "up", "rate_mbps": 0.2232, "limiter": "policer", "rate_by_cc": {"cubic": 0.2232},
         "rate_from": {"cubic": "delivered_bytes"}}
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert asked[0] == (37, None) and [a for a, _ in asked[1:]] == [164] * (len(asked) - 1)
    assert abs(d["rate_mbps"] - 0.870) / 0.870 < 0.03 and d["rate_from"]["paced_train"] == "tail", d["train_evidence"]


def test_a_single_packet_head_paces_the_second_train_at_the_port_the_idle_path_showed(monkeypatch):
    # campaign seed 86 path 13's up direction through the emulator: a 0.363-Mbit/s policer whose 3-KB bucket passed
    # one packet of the back-to-back train (no spacing: no port), four CUBIC flows 0.186 Mbit/s (61 % retransmitted);
    # the large idle probes' serialization showed the up port at 2.469 Mbit/s (truth 2.48). No paced train went, and
    # the rate stood at the flows' (-49 %)
    b2b = {"direction": "up", "first_loss": 1, "head_bytes": 1500, "head_packets": 1, "head_send_mbps": None,
           "leading_mbps": None, "lost": 29, "received": 2, "sent": 31, "sender_limited": False, "wire_bytes": 1500,
           "tail_packets": 1, "tail_mbps": 2.48, "lost_seq": [1, 2, 3, 4, 5] + list(range(7, 31)), "bucket_bytes": None,
           "notes": ["1 packet(s) before the first loss: no spacing, no port rate"], "handshake_rtt_ms": 2.68}
    asked = []

    def train(host, port, secret, count=None, pace_mbps=None, up=False):
        asked.append((count, pace_mbps))
        return b2b if pace_mbps is None else with_tail(paced(count, 1500, pace_mbps, 0.363, 2999, rtt_ms=2.7))

    monkeypatch.setattr(m, "_train", train)
    monkeypatch.setattr(m, "_sleep", lambda s: None)

    def up():
        return {"direction": "up", "rate_mbps": 0.1861, "limiter": "policer", "rate_by_cc": {"cubic": 0.1861},
                "rate_from": {"cubic": "sack_delivered_bytes"}}
    d = up()
    m._policer_train("h", 5301, None, d, lambda s: None, idle_port_mbps=2.469)
    assert asked[1][1] == pytest.approx(m.PACE_SHARE * 2.469) and d["port_mbps"] is None
    assert abs(d["rate_mbps"] - 0.363) / 0.363 < 0.03 and d["rate_from"]["paced_train"] == "tail", d["train_evidence"]
    assert "the port the idle path showed (2.469 Mbit/s)" in d["train_evidence"][1]
    # no port from the idle path either (or none faster than the flows): no paced train, the flows' rate stands
    for idle in (None, 0.2):
        asked.clear()
        e = up()
        m._policer_train("h", 5301, None, e, lambda s: None, idle_port_mbps=idle)
        assert len(asked) == 1 and e["rate_mbps"] == 0.1861 and "paced_train" not in e


def test_a_server_that_fell_below_the_policed_rate_in_the_tail_is_read_up_to_its_last_loss():
    # seed 8 path 14 through the emulator: paced at 64.5 Mbit/s, the server fell to 34.8 in the tail behind a 39-Mbit/s
    # policer, whose tail then read the server's 34.8. The bucket was dry at each loss, so between the first and the
    # last (before the server fell below the rate) it passed what it refilled: C within a packet
    slow = with_tail(paced(2000, 1500, 64.37, 38.99, 271_048, slow_from=600, slow_pace=34.8))
    assert abs(slow["tail_mbps"] - 34.8) / 34.8 < 0.02
    c, why = m_trains.paced_rate(slow, 64.37, 271_048)
    assert abs(c - 38.99) / 38.99 < 0.005 and "between losses it could not refill across" in why
    # fewer than TAIL_RATE_PACKETS between them, and the tail sent within 1.1x of what passed: the sender may have
    # set the tail's rate, and it is not read
    first = slow["first_loss"]
    early = with_tail(paced(2000, 1500, 64.37, 38.99, 271_048, slow_from=first + 3, slow_pace=34.8))
    c, why = m_trains.paced_rate(early, 64.37, 271_048)
    assert c is None and "the sender, not the bucket" in why
    # the same train kept at its pace: the tail is the policer's
    c2, _ = m_trains.paced_rate(with_tail(paced(2000, 1500, 64.37, 38.99, 271_048)), 64.37, 271_048)
    assert abs(c2 - 38.99) / 38.99 < 0.005


def test_a_tail_that_passed_faster_than_the_flows_bounds_the_rate_from_below():
    # campaign seed 80 path 40's up direction through the emulator: a FIFO of two packets at 67.2 Mbit/s, read as a
    # tbf (four BBR flows got 48.35 through it, 11 % retransmitted); the train paced at 63.93 (95 % of the port the
    # back-to-back train showed) lost 21 packets in one run from packet 1476 and none of the 503 after: offered
    # within 1.1x of what passed, with no stretch between losses to read a refill from, and the flows' rate had stood
    t = with_tail(paced(2000, 1500, 63.93, 1000.0, 3000, random_lost=range(1476, 1497)))
    assert t["first_loss"] == 1476 and t["tail_packets"] == 503 and t["tail_mbps"] == pytest.approx(63.93 * 503 / 524)
    assert m_trains.paced_rate(t, 63.93, 537_000)[0] is None  # no flows' rate to refute: as before
    # an emptied bucket passes C x span and a packet: C >= the tail's 61.37, the flows' 48.35 is refuted
    c, why = m_trains.paced_rate(t, 63.93, 537_000, 48.35)
    assert c == t["tail_mbps"] and "the rate is at least the tail's" in why
    # flows within the train's resolution (1.1x) of the tail: nothing refuted, nothing read
    assert m_trains.paced_rate(t, 63.93, 537_000, 56.0)[0] is None


def test_a_server_stall_longer_than_the_buckets_refill_keeps_the_flows_rate():
    # seed 28 path 28: a 17.68-Mbit/s policer with a 35-KB bucket, paced at 21.4; the server stalled 189 ms in the
    # tail, whose rate read 15.0. Tokens overflow the bucket after B/C (15.8 ms here): the tail reads the sender
    stalled = with_tail(paced(1786, 1500, 21.42, 17.68, 35_000, stall_at=600, stall_ms=189.0))
    assert stalled["tail_mbps"] < 0.9 * 17.68
    c, why = m_trains.paced_rate(stalled, 21.42, 35_000)
    assert c is None and "the server stalled (up to 189 ms)" in why
    # a stall shorter than the refill costs the policer nothing: the tokens it refilled pass once the train resumes
    brief = with_tail(paced(1786, 1500, 21.42, 17.68, 35_000, stall_at=600, stall_ms=10.0))
    c2, why2 = m_trains.paced_rate(brief, 21.42, 35_000)
    assert c2 == brief["tail_mbps"] and abs(c2 - 17.68) / 17.68 < 0.005 and "wasted" not in why2
    # a 60-ms stall wastes 60 - 15.8 ms of refill (B/C at the tail's rate): the tail reads 3.7 % low, and the
    # figure with the wasted time taken out is C again
    longer = with_tail(paced(1786, 1500, 21.42, 17.68, 35_000, stall_at=600, stall_ms=60.0))
    c3, why3 = m_trains.paced_rate(longer, 21.42, 35_000)
    assert longer["tail_mbps"] < 0.97 * 17.68 and "wasted" in why3
    assert abs(c3 - 17.68) / 17.68 < 0.005


def test_behind_a_policer_the_paced_trains_tail_is_the_rate_and_the_buckets_c(monkeypatch):
    # seed 8 path 14 with the flows' rate read 10 % low (35.1 for 38.99): the tail gives the rate, and the bucket's
    # formula takes it as C (the flows' 35.1 would read the bucket ~66 KB high: 456 x 1500 x (38.99 - 35.1) / 64.37)
    d = {"rate_mbps": 35.1, "limiter": "policer", "rate_by_cc": {"cubic": 35.1}, "rate_from": {"cubic": "acked_bytes"}}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: PATH14)
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: with_tail(paced(count, 1500, pace, 38.99, 271_048)))
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert abs(d["rate_mbps"] - 38.99) / 38.99 < 0.005 and d["rate_by_cc"]["cubic"] == 35.1
    assert d["rate_from"]["paced_train"] == "tail" and abs(d["bucket_bytes"] - 271_048) / 271_048 < 0.02
    assert any("its rate: the paced train's tail" in e for e in d["train_evidence"])


def test_a_paced_train_the_server_sent_below_the_rate_is_sent_once_more(monkeypatch):
    """A server short of CPU paced the first paced train below the policed rate (it passed whole: nothing read);
    the second, paced as asked, reads the bucket and the rate. Both fell short: the first train's bucket is kept."""
    good = with_tail(paced(2000, 1500, 64.37, 38.99, 271_048))
    slow = dict(good, lost_seq=[], lost=0, first_loss=None, head_send_mbps=30.0)
    sent = []

    def paced_train(host, port, secret, count, pace):
        sent.append(pace)
        return dict(slow if len(sent) == 1 else good)

    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: PATH14)
    monkeypatch.setattr(m, "_paced_train", paced_train)
    monkeypatch.setattr(m, "_sleep", lambda s: None)
    d = {"rate_mbps": 35.1, "limiter": "policer", "rate_by_cc": {"cubic": 35.1}, "rate_from": {"cubic": "acked_bytes"}}
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert len(sent) == 2 and any("sent at 30 Mbit/s" in e and "sent again" in e for e in d["train_evidence"])
    assert abs(d["bucket_bytes"] - 271_048) / 271_048 < 0.02 and d["rate_from"]["paced_train"] == "tail"
    # twice short: no third, and the first (back-to-back) train's bucket stays
    sent.clear()
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: sent.append(pace) or dict(slow))
    e = {"rate_mbps": 35.1, "limiter": "policer", "rate_by_cc": {"cubic": 35.1}, "rate_from": {"cubic": "acked_bytes"}}
    m._policer_train("h", 5301, None, e, lambda s: None)
    assert len(sent) == 2 and "paced_train" not in e and e["bucket_bytes"] is not None
    assert "the first train's bucket is kept" in e["train_evidence"][-1]


def test_a_fifo_reading_its_train_turns_into_a_policer_sends_the_paced_train_for_the_rate(monkeypatch):
    # seed 28 path 18's truth through the emulator (branch rate30, 2026-11-26): a 7.08-Mbit/s policer with a 2.8-ms
    # bucket on a 39.4-Mbit/s port, 340 ms. Its BBR phase read 4.42, a FIFO with drops whose AQM train's head came at
    # the port's 39.69 (_not_a_fifo: a policer). The policer's paced train then gives the rate, as behind a policer
    # reading
    aqm_train = {"first_loss": 2, "head_bytes": 3000, "head_packets": 2, "head_send_mbps": 429.0, "leading_mbps": 39.69,
                 "lost": 997, "received": 3, "sender_limited": False, "sent": 1000, "wire_bytes": 1500,
                 "tail_packets": 1, "tail_mbps": 7.04, "notes": [], "lost_seq": [2] + list(range(4, 1000))}
    x = {"limiter": "fifo", "rate_mbps": 4.424, "buffer_bytes": 1564, "load_cc": m.LOAD_CC, "flows": 4,
         "rate_by_cc": {"cubic": 0.427, "bbr": 4.424}, "rate_from": {"cubic": "acked_bytes", "bbr": "delivery_rate"},
         "evidence": {"dropped": True, "flow_q95_ms": 2.83, "flow_q50_ms": 0.70, "probe_q95_ms": 949.8}}
    paced_at = []
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: aqm_train)
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: paced_at.append(pace)
                        or with_tail(paced(count, 1500, pace, 7.082, 2497, rtt_ms=340.0)))
    monkeypatch.setattr(m, "_sleep", lambda s: None)
    m._aqm_train("h", 5301, None, x, lambda s: None)
    assert x["limiter"] == "policer" and paced_at and abs(paced_at[0] - 0.95 * 39.69) < 1e-9
    assert abs(x["rate_mbps"] - 7.082) / 7.082 < 0.005 and x["rate_from"]["paced_train"] == "tail"
    assert x["train_evidence"][0].startswith("train 1 (back to back, 429 Mbit/s): port 39.69 Mbit/s")


def _past_the_flows(delivered=(8688.0, 15928.0, 55024.0, 11584.0), lost: int = 0) -> dict:
    """Seed 33 path 32 through the emulator (a 31.94-Mbit/s FIFO of 3.5 KB, 2.24 ms; the campaign's store): 4 CUBIC
    flows delivered 21.48 Mbit/s, each losing its first packet within the first 33-ms sample; the first train read the
    port at 32.12 Mbit/s and its FIFO at 5.08 KB; the paced train, 2000 packets sent at 30.48 Mbit/s over 786.93 ms,
    passed whole."""
    return {"limiter": "policer", "rate_mbps": 21.48, "flows": 4, "port_mbps": 32.12, "port_buffer_bytes": 5076,
            "bucket_bytes": 885713, "evidence": {"flow_q95_ms": 5.86},
            "first_loss": {"flows": [{"id": i, "sent_bytes": s} for i, s in enumerate(delivered)]},
            "paced_train": {"sent": 2000, "lost": lost, "first_loss": None if not lost else 1990, "wire_bytes": 1500,
                            "head_send_mbps": 30.48, "pace_mbps": 30.52, "send_ms": 786.93, "leading_mbps": 30.48,
                            "sender_limited": False}}


def test_a_paced_train_past_the_flows_rate_and_their_early_first_losses_show_a_shallow_fifo_not_a_policer():
    # what dropped the flows let less than their 91.2 KB through, so a bucket that passed the paced train's 3 MB at
    # 30.48 polices at 30.48 - 91224 B x 8 / 0.78693 s = 29.55 Mbit/s or more: not at the flows' 21.48
    x = _past_the_flows()
    m_trains._paced_past_the_flows(x, base_ms=2.24)
    assert x["limiter"] == "fifo" and x["rate_mbps"] == 32.12
    assert x["buffer_bytes"] == 5076 and x["port_mbps"] is None and x["bucket_bytes"] is None
    assert abs(x["buffer_bdp"] - 5076 / (32.12e6 * 2.24e-3 / 8)) < 1e-12
    alt = x["limiter_alternatives"][1]
    assert alt["limiter"] == "policer" and abs(alt["rate_above_mbps"] - (30.48 - 91224 * 8 / 0.78693 / 1e6)) < 1e-9
    assert "29.55 Mbit/s or more" in x["limiter_note"]


def test_a_policer_at_the_flows_rate_never_reads_as_a_shallow_fifo():
    # a bucket that passed the paced train holds at least (P - C) T = (30.48 - 21.48) x 0.78693 s = 885 KB, so the
    # flows' first drop came after at least that much: P - S / T <= C
    x = _past_the_flows(delivered=(300e3, 300e3, 200e3, 100e3))
    m_trains._paced_past_the_flows(x, base_ms=2.24)
    assert x["limiter"] == "policer" and x["rate_mbps"] == 21.48
    # flows at 28 Mbit/s that lost after 100 KB: whatever dropped them polices at 30.48 - 1.02 = 29.46 or more, within
    # TRAIN_PORT_MARGIN (1.1) of their rate: a policer there is not excluded, and the reading stays
    x = _past_the_flows(delivered=(25e3, 25e3, 25e3, 25e3))
    x["rate_mbps"] = 28.0
    m_trains._paced_past_the_flows(x, base_ms=2.24)
    assert x["limiter"] == "policer" and x["rate_mbps"] == 28.0
    # a paced train that lost a packet, or a flow not seen at its first loss, tells nothing here
    for x in (_past_the_flows(lost=10), _past_the_flows(delivered=(8688.0, 15928.0, 55024.0))):
        m_trains._paced_past_the_flows(x, base_ms=2.24)
        assert x["limiter"] == "policer"


def test_a_shallow_fifo_that_dropped_the_flows_first_must_also_hold_them_to_their_rate():
    # seed 33 path 32 with its fill's figures (4 CUBIC flows over the 5-s fill): the model's FIFO at the least the
    # head's reading allows (5076 B less half a packet: 2 packets fit) gives them 21.6 Mbit/s, within 1.1x of their
    # 21.48: the shallow FIFO holds them, and the reading turns as before
    x = _past_the_flows()
    x.update(load_cc="cubic", rate_by_cc={"cubic": 21.48}, phase_s=5.0)
    m_trains._paced_past_the_flows(x, base_ms=2.24)
    assert x["limiter"] == "fifo" and x["rate_mbps"] == 32.12
    # campaign seed 84 path 7 through the emulator: a 119-Mbit/s policer with a 1.1-MB bucket on a 185-Mbit/s port
    # whose 27.9-KB FIFO dropped the flows' first bursts (560 KB delivered in all); the paced train passed 3 MB whole
    # at 174.3 Mbit/s, short of running the bucket dry. A FIFO of 25.8 KB (26.5 read, less half a packet) at 185.2
    # gives the fill's four CUBIC flows ~180 Mbit/s in the model (the kernel's got 119.05): not what held them —
    # the policer reading stays (it had turned to a FIFO at 185.2, +55.7 %)
    y = {"limiter": "policer", "rate_mbps": 119.05, "flows": 4, "port_mbps": 185.2, "port_buffer_bytes": 26518,
         "bucket_bytes": 951_000, "evidence": {"flow_q95_ms": 0.62}, "load_cc": "cubic",
         "rate_by_cc": {"cubic": 119.05, "bbr": 118.98}, "phase_s": 2.0,
         "first_loss": {"flows": [{"id": i, "sent_bytes": b} for i, b in enumerate((53576, 4344, 472048, 30408))]},
         "paced_train": {"sent": 2000, "lost": 0, "first_loss": None, "wire_bytes": 1500, "head_send_mbps": 174.31,
                         "pace_mbps": 175.94, "send_ms": 137.61, "leading_mbps": 174.30, "sender_limited": False}}
    m_trains._paced_past_the_flows(y, base_ms=5.6)
    assert y["limiter"] == "policer" and y["rate_mbps"] == 119.05 and y["port_buffer_bytes"] == 26518
    assert "a shallow FIFO dropped them first, but in the model a FIFO of 25.8 KB at 185.2 Mbit/s" in y["train_evidence"][-1]
    got = float(y["train_evidence"][-1].split("cubic flows ")[1].split(" Mbit/s")[0])
    assert got > 1.1 * 119.05
    # without the fill's figures the model is not run, and the reading turns as before
    z = dict(y, phase_s=None, train_evidence=[])
    m_trains._paced_past_the_flows(z, base_ms=5.6)
    assert z["limiter"] == "fifo" and z["rate_mbps"] == 185.2


def test_flows_that_lost_late_against_the_quiet_gaps_refill_tell_nothing_of_the_bucket():
    # the bucket the load met held min(B, r x 0.25 s) (plan.IDLE_MIN_S): flows that delivered half of what the
    # flows' rate refills in that gap (21.48 Mbit/s x 0.25 s / 2 = 335.6 KB) may have met a bucket the last train
    # ran dry, refilled at a rate below theirs
    x = _past_the_flows(delivered=(84e3, 84e3, 84e3, 84e3))
    m_trains._paced_past_the_flows(x, base_ms=2.24)
    assert x["limiter"] == "policer"


def test_a_tail_offered_near_the_rate_is_read_between_losses_the_bucket_could_not_refill_across():
    # fresh seed 36 path 4 through the emulator: a 6.28-Mbit/s policer with a 3.7-KB bucket on a 7.07 port, paced at
    # 6.72 (95 % of the port): the tail was offered within 1.1x of what passed, which alone leaves the sender's pace
    # and the bucket's refill apart; but it lost a packet every ~15, each loss an empty bucket: between them it passed
    # what it refilled (the flows read 5.42, 14 % low)
    t = with_tail(paced(561, 1500, 6.72, 6.28, 3700))
    c, why = m_trains.paced_rate(t, 6.72, 3700)
    assert abs(c - 6.28) / 6.28 < 0.01 and "could not refill across" in why
    # a 100-ms stall lets the bucket fill (3.7 KB in 4.7 ms at 6.28): the stretch across it may have passed what
    # overflowed; left out, the rest still read C
    stalled = with_tail(paced(561, 1500, 6.72, 6.28, 3700, stall_at=300, stall_ms=100.0))
    c2, _ = m_trains.paced_rate(stalled, 6.72, 3700)
    assert abs(c2 - 6.28) / 6.28 < 0.01
    # no bucket read: which stretches it could refill across is not known
    assert m_trains.paced_rate(t, 6.72, None)[0] is None
    # the flows' 5.42 (below the 6.72 offered) leave the reading as it was
    assert m_trains.paced_rate(t, 6.72, 3700, 5.42)[0] == c


def test_a_tail_offered_slower_than_the_flows_got_through_reads_no_rate():
    # the flows' bytes passed the bucket (C >= their rate less B over their window): a tail offered below their rate
    # empties the bucket only at the sender's own bursts, and what passed between its losses is the sender's (fresh
    # seed 39 path 192 measured again at load 12: a 295.9-Mbit/s pace sent at 88.3, 33 losses, read 92.4 for a 266.8
    # policer the flows read 267.7). The same train as above, the flows through at 7.0 Mbit/s: not read
    t = with_tail(paced(561, 1500, 6.72, 6.28, 3700))
    c, why = m_trains.paced_rate(t, 6.72, 3700, 7.0)
    assert c is None and "slower than the 7 the flows got through" in why


def test_a_full_fifos_tail_drop_where_the_train_was_sent_below_twice_the_rate():
    """Campaign seed 50 path 0: a 1000-packet train sent at 400.6 Mbit/s into CAKE at 230 lost one packet (its
    246th) and 753 of the 754 after it arrived. A full FIFO admits C/U = 57 % of those: "no more than twice that"
    holds for any tail, so the train read as a FIFO's tail drop; a full FIFO drops 43 % (324), one loss is none of
    it. Sent 10x faster the two tests agree."""
    from bloatlab.advise import trains as T

    cake = {"first_loss": 246, "send_mbps": 400.6, "tail_packets": 753, "lost": 1}
    assert not T._tail_dropped(cake, 230.0)
    # a FIFO at the same pace: it drops (1 - C/U) of the tail, 324 of 754
    assert T._tail_dropped(dict(cake, tail_packets=430, lost=324), 230.0)
    # ... within two standard deviations of half of that
    assert T._tail_dropped(dict(cake, tail_packets=754 - 150, lost=150), 230.0)
    assert not T._tail_dropped(dict(cake, tail_packets=754 - 100, lost=100), 230.0)
    # sent at 4 Gbit/s: the admission bound alone decides, as before
    fast = {"first_loss": 100, "send_mbps": 4000.0, "tail_packets": 60, "lost": 840}
    assert T._tail_dropped(fast, 230.0) and not T._tail_dropped(dict(fast, tail_packets=899, lost=1), 230.0)


def test_a_train_policed_from_its_first_packet_is_not_cut_at_its_last():
    """Campaign seed 50 path 1: a 6.1-Mbit/s policer with a one-packet bucket (1.36 KB) and 2.8 % random loss each
    way; a train paced at 15.43 Mbit/s lost 60 % from its first packet on. With the head's loss rate free, the
    likelihood cut it at its last packet, "after 775 random losses" (a 136-KB bucket); a head whose losses are
    beyond the path's random loss is none, and the bucket is read where the policer began."""
    # the stored train's pattern: from its first packet, three of every five lost (the bucket refills 6.1 Mbit/s'
    # worth of a 15.43-Mbit/s pace), the second packet the bucket's one
    lost = [s for s in range(1286) if s % 5 in (0, 1, 3) and s != 1]
    assert m_trains.policer_cut(lost, 1286) == 1285  # the free head: "775 random losses before"
    assert m_trains.policer_cut(lost, 1286, 0.028) == 0
    t = {"sent": 1286, "lost_seq": lost, "lost": len(lost), "first_loss": 0, "wire_bytes": 1500, "head_send_mbps": 15.43}
    b, res, k, why = m_trains.paced_bucket(t, 6.1, 15.43, 0.028)
    assert (b, res, k) == (750.0, 1500.0, 0) and why.startswith("the first loss at packet 0")
    # the head of random losses before a bucket that lasted (three in the first 460) is still a head
    t = paced(1000, 1500, 64.0, 39.0, 271_000, random_lost=(40, 200, 333))
    assert m_trains.policer_cut(t["lost_seq"], 1000, 3 / 468) == 468


def test_the_policed_rate_is_read_from_where_the_bucket_ran_dry_past_the_random_losses_before_it(monkeypatch):
    # campaign seed 73 path 9: a 48.3-Mbit/s policer with a 452-KB bucket and 0.54 % random loss; a train paced at
    # 68.3 Mbit/s loses packets 48 and 79 at random, then the bucket runs dry (policer_cut's k)
    t = with_tail(paced(2000, 1500, 68.28, 48.32, 452_000, random_lost=(48, 79, 203, 213, 438, 708)))
    k = m_trains.policer_cut(t["lost_seq"], 2000, 0.0054)
    assert k > 1000 and k == min(s for s in t["lost_seq"] if s > 708)
    # the probe's tail, from the first loss, holds the ~1000 packets the full bucket passed at the pace
    assert t["tail_mbps"] > 55
    c, why = m_trains.paced_rate(t, 68.28, 64e3, 48.5)
    assert abs(c - t["tail_mbps"]) < 1e-9 and "after its first loss" in why  # 58.3, as the campaign read
    # from the cut: the refill alone
    c, why = m_trains.paced_rate(t, 68.28, 64e3, 48.5, cut=k)
    assert abs(c - 48.32) / 48.32 < 0.01 and f"after packet {k}, where the bucket ran dry" in why
    v = m_trains.tail_from(t, k)
    assert v["first_loss"] == k and v["tail_packets"] == sum(1 for s in range(k + 1, 2000) if s not in t["lost_seq"])
    assert v["tail_span_ms"] is None and v["head_span_ms"] is None  # the first-loss view's timings are not the cut's
    assert m_trains.tail_from({**t, "tx_ms": None}, k)["tail_mbps"] is None
    c, why = m_trains.paced_rate({**t, "tx_ms": None}, 68.28, 64e3, 48.5, cut=k)
    assert c is None and f"no send times of the packets after packet {k}" in why
    assert m_trains.paced_cut(t, 0.0054) == k and m_trains.paced_cut(t, 0.0) == 48  # no random loss: the first loss
    # measure's paced train takes that cut where the idle path showed random loss: the rate and the bucket both
    d = {"rate_mbps": 48.5, "limiter": "policer"}
    first = {"first_loss": 48, "head_packets": 48, "head_bytes": 72_000, "head_send_mbps": 404.6, "leading_mbps": 71.87,
             "sent": 1000, "sender_limited": False, "notes": [], "wire_bytes": 1500, "handshake_rtt_ms": 19.5,
             "lost_seq": list(range(48, 1000))[:900]}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: first)
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: with_tail(
        paced(count, 1500, pace, 48.32, 452_000, random_lost=(48, 79, 203, 213, 438, 708))))
    m._policer_train("h", 5301, None, d, lambda s: None, random_loss=0.0054)
    assert abs(d["rate_mbps"] - 48.32) / 48.32 < 0.01 and abs(d["bucket_bytes"] - 452_000) / 452_000 < 0.02


# campaign seed 70 path 3's first train (back to back, 3.3 Gbit/s): a 180.9-Mbit/s policer with a 95.5-KB bucket and
# 0.33 % random loss on a 266-Mbit/s port whose 2.59-MB FIFO sits behind it; packet 11 a random loss, 12-65 through,
# the bucket dry from 66 (packets 113 and a few later through on its refill); /work/camp70/paths/0003/measure.json
LONE11 = {"first_loss": 11, "head_packets": 11, "head_bytes": 16500, "bucket_bytes": 15933.0, "head_send_mbps": 3331.3,
          "leading_mbps": 272.21, "sent": 1000, "lost": 916, "received": 84, "sender_limited": False, "notes": [],
          "wire_bytes": 1500, "tail_packets": 73, "tail_mbps": 265.9, "handshake_rtt_ms": 76.9,
          "lost_seq": [11] + [k for k in range(66, 1000) if k not in (113, 190, 260, 330, 400, 470, 540, 610, 680,
                                                                       750, 820, 890, 960, 990, 995, 998, 999)][:915]}


def test_a_random_first_loss_of_the_first_train_is_not_read_as_the_ports_fifo(monkeypatch):
    # the ten packets from the first loss: 1 lost, where a FIFO kept full at 3331 Mbit/s and drained at 272 drops
    # (1 - 272.21 / 3331.3) = 92 % of them: a lone loss
    assert m_trains.lone_first_loss(LONE11)
    assert not m_trains.lone_first_loss(PATH14)  # its losses are not listed: nothing to tell by
    assert not m_trains.lone_first_loss({**PATH14, "lost_seq": list(range(71, 1000))[:925]})
    assert not m_trains.lone_first_loss({**LONE11, "sent": 20})  # the train ended within the window
    d = {"rate_mbps": 188.7, "limiter": "policer"}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: LONE11)
    monkeypatch.setattr(m, "_paced_train",
                        lambda host, port, secret, count, pace: with_tail(paced(count, 1500, pace, 180.9, 95_484)))
    m._policer_train("h", 5301, None, d, lambda s: None, random_loss=0.0033)
    # the paced train reads the bucket; the first train's short head is not the port's FIFO
    assert abs(d["bucket_bytes"] - 95_484) / 95_484 < 0.1
    assert d.get("port_buffer_bytes") is None
    ev = " | ".join(d["train_evidence"])
    assert "was a lone one" in ev and "cut by the port's FIFO" not in ev
    # so the twin's port holds a BDP of the policed rate (Path.buffer), not the 14.5 KB the head would read
    assert d["port_buffer_min_bytes"] == int(m_trains.port_fifo(LONE11))  # the head passed it whole: at least that
    p = Path(base_rtt_ms=76.57, down_mbps=188.7, limiter="policer", port_mbps=d["port_mbps"], bucket_bytes=d["bucket_bytes"],
             port_buffer_bytes=d.get("port_buffer_bytes"))
    assert p.link_doc()["buffer"] == f"{max(p.buffer, 3000)}B" and p.buffer > 1_000_000


# campaign seed 53 path 24: a 5215-B FIFO at 1.77 Mbit/s; its port's train passed 4 packets, then lost all but 3 of 996
FIFO_CUT_TRAIN = {"sent": 1000, "first_loss": 4, "head_packets": 4, "head_send_mbps": 380.2924, "leading_mbps": 1.795693,
                  "lost": 993, "tail_packets": 3, "send_mbps": 594.74, "wire_bytes": 1500, "sender_limited": False,
                  "lost_seq": [k for k in range(4, 1000) if k not in (309, 690, 996)]}


def test_a_train_a_fifo_cut_reads_its_depth_in_bytes():
    q = m_trains.fifo_overflow_depth(FIFO_CUT_TRAIN, 1.7733)
    # the first packet on the wire, three in the FIFO, the fourth's half: (4 - 1/2) x 1500 less the drain's share
    assert q == 3.5 * 1500 * (1 - 1.795693 / 380.2924)
    assert abs(q - 5215) / 5215 < 0.01
    # seed 53 path 1 (371 KB at 981 Mbit/s): a lone loss at 108, the next ten through, the overflow from 310 on
    lone = {"sent": 1000, "first_loss": 108, "head_packets": 108, "head_send_mbps": 3931.5, "leading_mbps": 996.19,
            "lost": 369, "tail_packets": 523, "send_mbps": 2519.6, "wire_bytes": 1500,
            "lost_seq": [108, 139] + list(range(310, 677))}
    assert m_trains.fifo_overflow_depth(lone, 981.28) is None
    # seed 53 path 26 (1.78 MB at 35 Mbit/s): five lone losses of a 200-packet train, the rest through
    sparse = {"sent": 200, "first_loss": 51, "head_packets": 51, "head_send_mbps": 384.11, "leading_mbps": 40.0036,
              "lost": 5, "tail_packets": 144, "send_mbps": 668.78, "wire_bytes": 1500, "lost_seq": [51, 55, 88, 95, 127]}
    assert m_trains.fifo_overflow_depth(sparse, 35.45) is None
    # a train that reached the FIFO less than twice as fast as it drained, or lost nothing: no reading
    assert m_trains.fifo_overflow_depth(dict(FIFO_CUT_TRAIN, head_send_mbps=3.5), 1.7733) is None
    assert m_trains.fifo_overflow_depth(dict(FIFO_CUT_TRAIN, first_loss=None), 1.7733) is None


def test_a_fifo_the_flows_could_not_read_in_bytes_takes_its_trains_depth():
    # seed 53 path 42: an LTE-like capacity (7.35 Mbit/s mean, 451 ms) through a 19.0-KB FIFO; the flows' queueing p95
    # of 92 ms at 6.26 Mbit/s read 72 KB (their delays fall where the capacity is low); the AQM train's head 12 packets
    aqm = {"sent": 1000, "first_loss": 12, "head_packets": 12, "head_send_mbps": 2178.36, "leading_mbps": 5.5624,
           "lost": 987, "tail_packets": 1, "send_mbps": 5906.5, "wire_bytes": 1500,
           "lost_seq": [k for k in range(12, 1000) if k != 128]}
    x = {"limiter": "fifo", "rate_mbps": 6.2637, "flows": 4, "buffer_bytes": 72089, "buffer_bdp": 0.204,
         "buffer_bound": None, "buffer_window": {"queued_bytes": 72089.6}, "aqm_train": aqm}
    m_trains._fifo_depth_from_trains(x, 451.57)
    assert x["buffer_bytes"] == int(11.5 * 1500 * (1 - 5.5624 / 2178.36)) and x["buffer_from"] == "aqm_train"
    assert "overflowed the FIFO after 12 packets" in x["buffer_note"] and "moves read 72.1 KB" in x["buffer_note"]
    assert abs(x["buffer_bdp"] - x["buffer_bytes"] / (6.2637e6 * 0.45157 / 8)) < 1e-3

    def fifo(**kw):
        return {"limiter": "fifo", "rate_mbps": 1.7733, "flows": 4, "buffer_bytes": 4744, "buffer_bound": None,
                "buffer_bytes_min": None, "buffer_bytes_max": None, "buffer_window": {"queued_bytes": None},
                "train": FIFO_CUT_TRAIN, **kw}

    depth = int(3.5 * 1500 * (1 - 1.795693 / 380.2924))
    # the flows' upper bound (their bursts: 57.1 ms at 1.77 Mbit/s, 12.7 KB) holds the train's 5.2 KB: the depth
    x = fifo(buffer_bound="upper", buffer_bytes_max=12664)
    m_trains._fifo_depth_from_trains(x, 3.07)
    assert x["buffer_bytes"] == depth and x["buffer_bound"] is None and x["buffer_bytes_max"] is None
    # a bound it does not keep within: another FIFO than the flows met; kept
    for kw in ({"buffer_bound": "upper", "buffer_bytes_max": 4000}, {"buffer_bound": "lower", "buffer_bytes_min": 9000}):
        x = fifo(**kw)
        m_trains._fifo_depth_from_trains(x, 3.07)
        assert x["buffer_bytes"] == 4744 and "buffer_from" not in x
    # a depth the flows read: the train's within their bursts' 12.7 KB of it, else kept; no FIFO, nothing
    x = fifo()
    m_trains._fifo_depth_from_trains(x, 3.07)
    assert x["buffer_bytes"] == depth
    for kw in ({"buffer_bytes": 40_000}, {"limiter": "policer"}):
        x = fifo(**kw)
        m_trains._fifo_depth_from_trains(x, 3.07)
        assert x["buffer_bytes"] == kw.get("buffer_bytes", 4744) and "buffer_from" not in x
    # a slow start's overflow (measure's deep step) where the flows left a lower bound: the train's 5.2 KB between
    # that bound and the overflow's queue (within the flows' 12.7-KB resolution) is the depth, as it was against the
    # bound alone; below the bound, another FIFO: the slow start's kept
    for over, low, took in ((6000, 3000, True), (30_000, 1000, True), (20_000, 6000, False)):
        x = fifo(buffer_bytes=over, buffer_from="slow_start", deep_fill={"fill_bound_bytes": low})
        m_trains._fifo_depth_from_trains(x, 3.07)
        assert (x["buffer_bytes"], x["buffer_from"]) == ((depth, "train") if took else (over, "slow_start")), (over, low)
    # a slow start's reading whose figure a later step took away (a policer or an AQM read since, then a FIFO
    # again, as an offline re-reading does: bench/advise/phase_value.py): nothing to hold the train to, kept as is
    x = fifo(buffer_bytes=None, buffer_from="slow_start", deep_fill={"fill_bound_bytes": 3000})
    m_trains._fifo_depth_from_trains(x, 3.07)
    assert (x["buffer_bytes"], x["buffer_from"]) == (None, "slow_start")


def _delay_train(n_full: float, head_max: float | None = None, tail_mbps: float = 185.0, sent: int = 200, cut: int = 30):
    """A back-to-back train through a FIFO on a 186-Mbit/s port: its head's delays grow to ``head_max`` packet times
    (default: the full FIFO's), its tail's lie around ``n_full`` packet times (+-0.05), every third tail packet lost."""
    pkt_ms = 1500 * 8 / 186e3
    head_max = n_full if head_max is None else head_max
    d = [round(head_max * pkt_ms * k / (cut - 1), 6) for k in range(cut)]
    lost = [cut] + [k for k in range(cut + 1, sent) if k % 3 == 0]
    d += [None]
    d += [None if k in lost else round((n_full + 0.05 * ((k % 5) - 2) / 2) * pkt_ms, 6) for k in range(cut + 1, sent)]
    return {"sent": sent, "first_loss": cut, "head_packets": cut, "head_bytes": cut * 1500, "leading_mbps": 186.0,
            "head_send_mbps": 195.0, "tail_arrival_mbps": tail_mbps, "tail_packets": sent - len(lost),
            "lost_seq": lost, "lost": len(lost), "wire_bytes": 1500, "pace_mbps": None, "delay_ms": d}


def test_a_full_fifos_tail_delays_give_its_whole_packets():
    # admitted into the room a departure left: N - 1 packets before it and the rest of the one on the wire, (N-1, N]
    assert m_trains.port_fifo_by_delay(_delay_train(1.7), 95.0)[0] == 2 * 1500
    assert m_trains.port_fifo_by_delay(_delay_train(2.76), 95.0)[0] == 3 * 1500
    b, why = m_trains.port_fifo_by_delay(_delay_train(3.9), 34.6)
    assert b == 4 * 1500 and "4 whole packet(s)" in why


def test_a_fifo_not_full_at_the_first_loss_or_cut_after_it_or_a_paced_train_reads_nothing():
    # the head's delays a packet and more below the tail's: the FIFO was still filling when the train lost its first
    b, why = m_trains.port_fifo_by_delay(_delay_train(3.0, head_max=1.5), 95.0)
    assert b is None and "not full at the first loss" in why
    # the tail at the policed rate: a bucket run dry cut it, after the FIFO
    b, why = m_trains.port_fifo_by_delay(_delay_train(2.0, tail_mbps=95.0), 95.0)
    assert b is None and "stood after the FIFO" in why
    # a port no faster than the policed rate
    assert m_trains.port_fifo_by_delay(_delay_train(2.0), 180.0)[0] is None
    assert m_trains.port_fifo_by_delay({**_delay_train(2.0), "pace_mbps": 100.0}, 95.0)[0] is None
    assert m_trains.port_fifo_by_delay({**_delay_train(2.0), "delay_ms": None}, 95.0)[0] is None
    assert m_trains.port_fifo_by_delay(None, 95.0)[0] is None


def test_a_policers_port_fifo_the_delays_read_goes_to_the_twin_with_the_ports_rate():
    x = {"limiter": "policer", "rate_mbps": 95.0, "port_mbps": None, "port_buffer_bytes": None,
         "wifi_train": _delay_train(2.76), "train": None}
    m_trains.port_fifo_from_delays(x)
    assert x["port_buffer_bytes"] == 4500 and x["port_mbps"] == 186.0
    assert "full FIFO" in x["train_evidence"][-1]
    # a FIFO another train read, or a reading that is not a policer, is left alone
    y = dict(x, port_buffer_bytes=9000, port_mbps=None, train_evidence=[])
    m_trains.port_fifo_from_delays(y)
    assert y["port_buffer_bytes"] == 9000 and y["port_mbps"] is None
    z = dict(x, limiter="fifo", port_buffer_bytes=None, port_mbps=None)
    m_trains.port_fifo_from_delays(z)
    assert z["port_buffer_bytes"] is None


def test_a_train_the_server_paced_near_the_port_reads_the_port_from_a_full_fifo_and_paces_the_next_below_it(monkeypatch):
    # the server sent the head at 195 Mbit/s, the port drained it at 186: "sender limited", no port told from the
    # spacing; its delays show the FIFO full (two whole packets), so the head queued and left at the port's pace
    t1 = {**_delay_train(1.7), "sender_limited": True, "notes": []}
    d = {"rate_mbps": 95.0, "limiter": "policer"}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: t1)
    paces = []

    def paced_train(host, port, secret, count, pace):
        paces.append(round(pace, 2))
        return paced(count, 1500, pace, 95.0, 900_000)

    monkeypatch.setattr(m, "_paced_train", paced_train)
    monkeypatch.setattr(m, "_sleep", lambda s: None)
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert d["port_mbps"] == 186.0 and paces and paces[0] == round(m.PACE_SHARE * 186.0, 2) and d["train_note"] is None
    # the paced train's bucket stands; the FIFO is the delays' two packets, not the head's bytes less the drain
    assert abs(d["bucket_bytes"] - 900_000) / 900_000 < 0.02
    assert d["port_buffer_bytes"] == 3000 and d.get("port_buffer_min_bytes") is None
    ev = " | ".join(d["train_evidence"])
    assert "met a full FIFO" in ev and "cut by the port's FIFO, not the policer" in ev


def _fifo_cut(u: float, p_true: float, p_read: float, q: float = 5450.0, w: int = 1500, sent: int = 1000) -> dict:
    """A back-to-back train sent at ``u`` Mbit/s into a port of ``p_true`` whose ``q``-byte FIFO cut its head
    (port_fifo's bounds: Q in [(h - 1) W (1 - P/U), h W (1 - P/U))), the port read ``p_read`` from the head's
    spacing; the ten packets from the first loss all lost (a full FIFO's overflow)."""
    h = math.floor(q / (w * (1 - p_true / u))) + 1
    return {"sent": sent, "first_loss": h, "head_packets": h, "head_bytes": h * w, "head_send_mbps": u,
            "leading_mbps": p_read, "wire_bytes": w, "lost_seq": list(range(h, h + 10)), "lost": sent - h}


def test_the_ports_fifo_is_read_from_the_train_that_pressed_the_port_hardest(monkeypatch):
    # a 35-Mbit/s policer with a 417-KB bucket behind a 5.45-KB FIFO on a 190-Mbit/s port (campaign seed 91 path 12's
    # figures): the server sent the 1000-packet train at 200 Mbit/s, 1.05x the port, and its head's spacing read the
    # port 2 % low; the 200 packets of the idle train left at 1900
    t1 = _fifo_cut(200.0, 190.0, 186.0)
    idle = _fifo_cut(1900.0, 190.0, 186.0, sent=200)
    assert t1["first_loss"] == 73 and idle["first_loss"] == 5
    # the former reads the FIFO 40 % high (1 - P/U a few hundredths, its error 0.02 x 190 / 200 over it), the latter
    # within the half packet of its bounds
    assert abs(m_trains.port_fifo(t1) / 5450 - 1) > 0.35
    assert abs(m_trains.port_fifo(idle) - 5450) < 750
    assert m_trains.pressed_hardest(t1, [idle]) is idle
    assert m_trains.pressed_hardest(idle, [t1]) is idle
    # none but trains that read a FIFO of the same port: no loss, a one-packet head, another port, a lone first loss
    assert m_trains.pressed_hardest(t1, [None, {**idle, "first_loss": None}]) is t1
    assert m_trains.pressed_hardest(t1, [{**idle, "head_packets": 1}, {**idle, "leading_mbps": 150.0}]) is t1
    assert m_trains.pressed_hardest(t1, [{**idle, "lost_seq": [5], "sent": 200}]) is t1

    d = {"rate_mbps": 35.0, "limiter": "policer", "wifi_train": idle}
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None: t1)
    monkeypatch.setattr(m, "_paced_train", lambda host, port, secret, count, pace: paced(count, 1500, pace, 35.0, 417_000))
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert abs(d["bucket_bytes"] - 417_000) / 417_000 < 0.02
    assert d["port_buffer_bytes"] == int(m_trains.port_fifo(idle))
    ev = " | ".join(d["train_evidence"])
    assert "cut by the port's FIFO" in ev and "the 200-packet train's head's bytes" in ev and "sent at 1900 Mbit/s" in ev
    # without the idle train the first train's reading stands, said as its own; and where the idle train's head read
    # the bucket the paced train did (the bucket, not the FIFO, cut it: a FIFO deeper at its pressure)
    for d in ({"rate_mbps": 35.0, "limiter": "policer"},
              {"rate_mbps": 35.0, "limiter": "policer", "wifi_train": {**idle, "head_packets": 287, "first_loss": 287,
                                                                        "head_bytes": 287 * 1500, "lost_seq": list(range(287, 297))}}):
        m._policer_train("h", 5301, None, d, lambda s: None)
        assert d["port_buffer_bytes"] == int(m_trains.port_fifo(t1)) and "(its head's bytes" in " | ".join(d["train_evidence"])


def _idle_train(lead: float, tail: float | None, head: int, tail_packets: int, **kw) -> dict:
    """An idle packet train's figures as bloatlab-probe reports them (crates/probe/src/train.rs)."""
    return dict(leading_mbps=lead, tail_arrival_mbps=tail, head_packets=head, tail_packets=tail_packets,
                wire_bytes=1500, sender_limited=False, batches={"packets_max": 1, "packets_p50": 1.0}, **kw)


def test_a_fifo_whose_idle_train_passed_at_a_faster_port_is_a_tbf_with_a_bucket_at_least_what_the_train_took():
    """trains.bucket_before_fifo on campaign seed 101 path 8's figures: a tbf at 19.0 Mbit/s (a 229-KB bucket) on a
    23.0-Mbit/s port; the fill read a FIFO at 18.66 Mbit/s, the idle train 51 packets at 23.056 before a random loss
    and 144 after it at 23.048. The bucket held at least 195 x 1500 B x (1 - 18.66 / 23.056) = 55.8 KB."""
    x = {"limiter": "fifo", "rate_mbps": 18.66, "variable": False}
    m_trains.bucket_before_fifo(x, _idle_train(23.056, 23.048, 51, 144))
    assert x["port_mbps"] == 23.056
    assert x["bucket_bytes"] == int(195 * 1500 * (1 - 18.66 / 23.056)) == 55769
    assert "at least 55.8 KB" in x["bucket_note"]
    # a tail that slowed to the rate (the bucket ran dry at the loss): the head's bytes alone
    x = {"limiter": "fifo", "rate_mbps": 18.66}
    m_trains.bucket_before_fifo(x, _idle_train(23.056, 18.7, 51, 144))
    assert x["bucket_bytes"] == int(51 * 1500 * (1 - 18.66 / 23.056))
    # ... and a tail too short to read a rate from is left out
    x = {"limiter": "fifo", "rate_mbps": 18.66}
    m_trains.bucket_before_fifo(x, _idle_train(23.056, 23.0, 51, m_trains.TAIL_RATE_PACKETS - 1))
    assert x["bucket_bytes"] == int(51 * 1500 * (1 - 18.66 / 23.056))
    # nothing read: a port within the margin (seed 101 path 3: 333 for 307.7), a sender that could not outpace the
    # port, a capacity that moves, a WiFi hop, another limiter, a bucket a policer's train read already, a train
    # that came in batches
    for x, t in [({"limiter": "fifo", "rate_mbps": 307.7}, _idle_train(333.0, None, 200, 0)),
                 ({"limiter": "fifo", "rate_mbps": 18.66}, _idle_train(23.056, None, 200, 0) | {"sender_limited": True}),
                 ({"limiter": "fifo", "rate_mbps": 18.66, "variable": True}, _idle_train(23.056, None, 200, 0)),
                 ({"limiter": "fifo", "rate_mbps": 18.66, "wifi": {"phy_mbps": 26.0}}, _idle_train(23.056, None, 200, 0)),
                 ({"limiter": "aqm", "rate_mbps": 18.66}, _idle_train(23.056, None, 200, 0)),
                 ({"limiter": "fifo", "rate_mbps": 18.66, "bucket_bytes": 9000}, _idle_train(23.056, None, 200, 0)),
                 # a batch of 31 packets at once (a pause: seed 100 path 14's head read 114.8 for a 93.9 link)
                 ({"limiter": "fifo", "rate_mbps": 92.1}, _idle_train(114.8, 107.6, 59, 140) | {"batches": {"packets_max": 38}})]:
        before = dict(x)
        m_trains.bucket_before_fifo(x, t)
        assert x == before
    m_trains.bucket_before_fifo(x, None)


def test_a_tbfs_twin_is_its_fifo_behind_the_bucket_on_the_port_and_reads_back():
    """Path.link_doc: a FIFO with a bucket and a faster measured port is a tbf (the shaper on the port's link,
    the FIFO its queue); the twin file reads back to the same path; a FIFO without a bucket stays the plain FIFO
    at the rate; the user's shaper below the rate replaces the tbf (it never fills: what the shaper lets out
    conforms)."""
    p = Path(base_rtt_ms=15.5, down_mbps=18.66, buffer_bytes=189095, loss=0.0195, limiter="fifo", up_mbps=8.77,
             port_mbps=23.056, bucket_bytes=55781)
    d = p.link_doc()
    assert d["rate"] == "23.056Mbit" and d["qdisc"] == "fifo" and d["buffer"] == "189095B"
    assert d["shaper"] == {"rate": "18.66Mbit", "burst": "55781B"}
    assert "a tbf: bucket at least 55.8 KB, on a 23.1 Mbit/s port" in p.describe()
    plain = Path(base_rtt_ms=15.5, down_mbps=18.66, buffer_bytes=189095, limiter="fifo")
    assert plain.link_doc() == {"rate": "18.66Mbit", "loss": 0.0, "qdisc": "fifo", "buffer": "189095B"}
    user = p.link_doc(shaper_mbps=17.7, qdisc="fq_codel")
    assert user["rate"] == "18.66Mbit" and user["qdisc"] == "fq_codel" and user["shaper"]["rate"] == "17.7Mbit"


def test_a_tbfs_twin_file_reads_back(tmp_path):
    p = Path(base_rtt_ms=15.5, down_mbps=18.66, buffer_bytes=189095, loss=0.0195, limiter="fifo", up_mbps=8.77,
             port_mbps=23.056, bucket_bytes=55781)
    q = Path.from_twin(p.write_twin(str(tmp_path / "twin.toml")))
    assert (q.limiter, q.down_mbps, q.port_mbps, q.bucket_bytes, q.buffer_bytes) == ("fifo", 18.66, 23.056, 55781, 189095)
    assert q.link_doc() == p.link_doc()


def test_an_up_policers_twin_puts_the_acks_on_its_port_and_reads_back(tmp_path):
    """Path.twin: an up direction read as a policer whose port a train measured is that policer on its port (the
    ACKs and the probes' echoes leave at the port's rate while the bucket holds tokens); campaign seed 101 path 21's
    figures, 0.238 Mbit/s up on a 0.81-Mbit/s port with a 3.7-KB bucket. Without a port faster than the rate the up
    link stays a FIFO at the rate."""
    p = Path(base_rtt_ms=4.9, down_mbps=3.64, up_mbps=0.238, limiter="policer", port_mbps=12.48, bucket_bytes=16340,
             up_port_mbps=0.8095, up_bucket_bytes=3747)
    assert p.twin()["link"]["up"] == {"rate": "0.8095Mbit", "policer": {"rate": "0.238Mbit", "burst": "3747B"}}
    assert "0.238 Mbit/s up (policed, on a 0.809 Mbit/s port)" in p.describe()
    q = Path.from_twin(p.write_twin(str(tmp_path / "twin.toml")))
    assert (q.up_mbps, q.up_port_mbps, q.up_bucket_bytes) == (0.238, 0.8095, 3747)
    for up_port in (None, 0.2):
        plain = Path(base_rtt_ms=4.9, down_mbps=3.64, up_mbps=0.238, up_port_mbps=up_port, up_bucket_bytes=3747)
        assert plain.twin()["link"]["up"] == {"rate": "0.238Mbit"} and not plain.up_policed


# --- a queue in front of the bucket, from the paced train's one-way delays (trains.paced_tail_queue) ---

with open(os.path.join(os.path.dirname(__file__), "data", "paced_trains_seed134.json")) as _f:
    PACED_134 = json.load(_f)


def delayed(head: list[float], tail: list[float]) -> dict:
    """A paced train whose head met ``head`` ms and whose packets after the first loss ``tail`` ms (one lost between)."""
    return {"first_loss": len(head), "delay_ms": list(head) + [None] + list(tail), "wire_bytes": 1500}


def test_a_tail_above_the_heads_start_by_more_than_its_noise_and_half_a_packet_is_a_queue():
    """Exact values: a head at 0.02 ms, a tail of 20 packets at 1.00 ms ± 0.01 (median 1.00, MAD 0.01): 0.98 ms
    gained; the noise 3 x 1.2533 x 1.4826 x 0.01 x sqrt(1/3 + 1/20) = 0.0345 ms, half a packet at 100 Mbit/s
    0.06 ms: a queue. The same tail 0.05 ms above the head is within half a packet (no whole packet waits); at
    1 Gbit/s (half a packet 0.006 ms) a queue, unless the tail's spread is twice as wide (the noise 0.069 ms)."""
    tail = [1.00 + (0.01 if i % 2 else -0.01) for i in range(20)]
    q, why = m_trains.paced_tail_queue(delayed([0.02] * 5, tail), 100.0)
    assert q == pytest.approx(0.98) and "20 packets after its first loss" in why
    near = [v - 0.93 for v in tail]
    q, why = m_trains.paced_tail_queue(delayed([0.02] * 5, near), 100.0)
    assert q is None and "half a packet time at 100 Mbit/s" in why
    assert m_trains.paced_tail_queue(delayed([0.02] * 5, near), 1000.0)[0] == pytest.approx(0.05)
    wide = [0.07 + (0.02 if i % 2 else -0.02) for i in range(20)]
    q, why = m_trains.paced_tail_queue(delayed([0.02] * 5, wide), 1000.0)
    assert q is None and "the delays' noise" in why
    assert 3 * 1.2533 * 1.4826 * 0.02 * math.sqrt(1 / 3 + 1 / 20) == pytest.approx(0.069, abs=0.001)
    # too short a tail, no loss, no delays: nothing read
    assert m_trains.paced_tail_queue(delayed([0.0] * 5, [1.0] * 9), 100.0)[0] is None
    assert m_trains.paced_tail_queue({"first_loss": None, "delay_ms": [0.0] * 50}, 100.0)[0] is None
    assert m_trains.paced_tail_queue({"first_loss": 5}, 100.0)[0] is None


def test_a_vm_pause_in_a_policers_tail_moves_a_few_packets_not_the_median():
    """A policer's tail (nothing queued: 0.02-0.04 ms) with a 5-ms pause that held 30 of its 200 packets, draining
    after it: the median stays, no queue is read."""
    tail = [0.02 + 0.02 * (i % 3) / 2 for i in range(200)]
    for k in range(30):
        tail[100 + k] += 5.0 * (30 - k) / 30
    assert m_trains.paced_tail_queue(delayed([0.03] * 40, tail), 90.0)[0] is None


def test_seed134_path10_a_tbf_whose_paced_head_met_no_queue_is_read_by_its_tail():
    """Campaign seed 134 path 10 through the emulator: a tbf at 34.2 Mbit/s with a 17.7-KB queue (4.15 ms) and a
    118-KB bucket, read `policer` (the flows drop without a queue). Its paced train's head's last packet gained
    -0.03 ms over the first (paced_queue_ms: no queue), but its 745 tail packets met 4.04 ms at the median: a tbf,
    17.9 KB of queue, the bucket 116.7 KB. Policer seed 134 path 29 (90.8 Mbit/s): its tail 0.07 ms below its
    head's start, a policer still."""
    rec = PACED_134["tbf_seed134_path10_down"]
    t = rec["paced_train"]
    assert m_trains.paced_queue_ms(t) == pytest.approx(-0.026, abs=0.001)
    q, _ = m_trains.paced_tail_queue(t, rec["rate_mbps"])
    assert q == pytest.approx(4.01, abs=0.01)
    x = {"limiter": "policer", "rate_mbps": rec["rate_mbps"], "paced_train": t,
         "paced_bucket_bytes": rec["paced_bucket_bytes"], "limiter_alternatives": [{"limiter": "fifo"}]}
    m_trains._queue_before_bucket(x, 2.75)
    assert x["limiter"] == "fifo" and "tail met a queue" in x["limiter_note"]
    assert abs(x["buffer_bytes"] / 17748 - 1) < 0.05 and abs(x["bucket_bytes"] / 117636 - 1) < 0.05
    shaper = {"limiter": "shaper", "observable": c.OBSERVABLE["shaper"], "down_mbps": 34.2, "buffer_bytes": 17748}
    assert c.limiter_said(shaper, x)
    pol = PACED_134["policer_seed134_path29_down"]
    y = {"limiter": "policer", "rate_mbps": pol["rate_mbps"], "paced_train": pol["paced_train"],
         "paced_bucket_bytes": pol["paced_bucket_bytes"]}
    m_trains._queue_before_bucket(y, 2.58)
    assert y["limiter"] == "policer" and "no queue" in y["train_evidence"][-1]


def test_a_paced_tail_too_short_for_its_delays_falls_back_on_the_heads_gain():
    """A slow up train whose 9 tail packets are too few for the delays' medians (TAIL_RATE_PACKETS): the head's last
    packet's gain over its send span decides as before the delays were read, against PACED_QUEUE_MIN_MS."""
    tx = [i * 60.0 for i in range(12)]
    t = {"first_loss": 2, "delay_ms": [0.0, 50.0, None] + [50.0] * 9, "tx_ms": tx, "head_span_ms": 60.0 + 50.0,
         "wire_bytes": 1500, "head_send_mbps": 0.3}
    assert m_trains.paced_tail_queue(t, 0.2)[0] is None and m_trains.paced_queue_ms(t) == pytest.approx(50.0)
    x = {"limiter": "policer", "rate_mbps": 0.2, "paced_train": t}
    m_trains._queue_before_bucket(x, 20.0)
    assert x["limiter"] == "fifo" and "head gained 50 ms" in x["limiter_note"]


def tbf_paced(count: int, pace: float, c: float, bucket: float, queue: float, w: int = 1500) -> dict:
    """The JSON of a train paced at ``pace`` Mbit/s through sch_tbf's model (a drop-tail queue of ``queue`` B in
    front of a full bucket of ``bucket`` B refilled at ``c`` Mbit/s; ``queue`` 0: a policer), with each packet's
    one-way delay above the path's (``delay_ms``: its wait in the queue) and the tail's figures (:func:`with_tail`)."""
    bps, gap = c * 1e6 / 8, w * 8 / (pace * 1e6)
    tokens, t_tok, waiting, delay, lost = float(bucket), 0.0, [], [None] * count, []

    def at(t: float) -> float:
        return min(bucket, tokens + bps * (t - t_tok))

    def drain(until: float) -> None:
        nonlocal tokens, t_tok
        while waiting:
            s, a = waiting[0]
            t0 = max(t_tok, a)
            go = t0 + max(0.0, w - at(t0)) / bps
            if go > until:
                return
            tokens, t_tok = at(go) - w, go
            delay[s] = (go - a) * 1e3
            waiting.pop(0)

    for s in range(count):
        a = s * gap
        drain(a)
        if not waiting and at(a) >= w:
            tokens, t_tok, delay[s] = at(a) - w, a, 0.0
        elif (len(waiting) + 1) * w <= queue:
            waiting.append((s, a))
        else:
            lost.append(s)
    drain(math.inf)
    first = lost[0] if lost else None
    tx = [None if s in lost else s * gap * 1e3 for s in range(count)]
    t = {"tx_ms": tx, "delay_ms": delay, "sent": count, "lost_seq": lost, "lost": len(lost), "first_loss": first,
         "wire_bytes": w, "head_send_mbps": pace, "leading_mbps": pace, "pace_mbps": pace, "handshake_rtt_ms": 3.0,
         "head_packets": first if first is not None else count, "received": count - len(lost)}
    return with_tail(t) if first is not None else t


def test_a_head_at_the_servers_pace_paces_the_second_train_below_it_and_its_tail_tells_a_tbf(monkeypatch):
    """A back-to-back train the server sent at 250 Mbit/s (``sender_limited``: the port is at least that fast)
    behind a token bucket of 20 KB at 200 Mbit/s: its head reads no port, and before, no paced train went, so a tbf
    (a 10.5-KB queue in front of the bucket) stayed `policer` (campaign seed 134 path 34 down, 7 up). Now the second
    train goes at 95 % of the server's pace (237.5 Mbit/s): its tail waits ~0.4 ms behind a tbf's queue, and the
    direction reads a FIFO of ~10.5 KB and its bucket, where behind a policer (no queue) it stays `policer`."""
    for queue in (10_500, 0):
        # back to back at the server's 250 Mbit/s: through the same bucket and queue as a train paced at that
        b2b = {**tbf_paced(1000, 250.0, 200.0, 20_000, queue), "sender_limited": True, "pace_mbps": None}
        b2b["head_bytes"] = b2b["head_packets"] * 1500
        asked = []

        def train(host, port, secret, count=None, pace_mbps=None, up=False):
            asked.append((count, pace_mbps))
            return b2b if pace_mbps is None else tbf_paced(count, pace_mbps, 200.0, 20_000, queue)

        monkeypatch.setattr(m, "_train", train)
        monkeypatch.setattr(m, "_sleep", lambda s: None)
        d = {"direction": "down", "rate_mbps": 190.0, "limiter": "policer", "rate_by_cc": {"cubic": 190.0},
             "rate_from": {"cubic": "delivered_bytes"}}
        m._policer_train("h", 5301, None, d, lambda s: None)
        assert d["port_mbps"] is None and asked[1][1] == pytest.approx(m.PACE_SHARE * 250.0), asked
        assert "its head left at the server's pace (250 Mbit/s" in d["train_evidence"][1]
        assert "both trains read the bucket alike" in d["train_evidence"][3], d["train_evidence"]
        assert abs(d["rate_mbps"] / 200.0 - 1) < 0.02, d["train_evidence"]
        m_trains._queue_before_bucket(d, 3.0)
        if queue:
            assert d["limiter"] == "fifo" and "tail met a queue" in d["limiter_note"], d.get("train_evidence")
            assert abs(d["buffer_bytes"] / queue - 1) < 0.1 and abs(d["bucket_bytes"] / 20_000 - 1) < 0.1, d
        else:
            assert d["limiter"] == "policer" and "no queue" in d["train_evidence"][-1], d["train_evidence"]
            assert abs(d["paced_bucket_bytes"] / 20_000 - 1) < 0.1


def test_a_head_at_the_servers_pace_that_passed_whole_sends_no_paced_train_and_says_none(monkeypatch):
    """Seed 142 path 46 down through the emulator: a 280-Mbit/s policer with a 591-KB bucket; the server's 349.2
    Mbit/s train passed whole. No paced train goes (its bucket is read at least that large), and no evidence
    claims one."""
    b2b = {**tbf_paced(1000, 349.2, 280.2, 591_000, 0), "sender_limited": True, "pace_mbps": None}
    assert b2b["first_loss"] is None
    b2b["head_bytes"] = 1000 * 1500
    asked = []
    monkeypatch.setattr(m, "_train", lambda host, port, secret, count=None, pace_mbps=None, up=False:
                        asked.append(pace_mbps) or b2b)
    d = {"direction": "down", "rate_mbps": 280.3, "limiter": "policer"}
    m._policer_train("h", 5301, None, d, lambda s: None)
    assert asked == [None] and not any("paced train goes" in e for e in d["train_evidence"]), d["train_evidence"]


def test_a_policers_trains_go_before_the_rate_phase_which_their_paced_rate_leaves_out():
    """measure._policer_trains_first: the trains are sent into a provisional report at the fill's rate; the phase is
    left out (the paced train's rate C returned) only where C was read, is no lower than the fill's rate beyond
    TRAIN_PORT_MARGIN, and at C the fill's own evidence still reads a policer; else the phase runs (C None); the
    trains are sent either way, for the reading after the loads."""
    from bloatlab.advise.classify import _classify_ev

    # drops with no queue the probe saw: a policer at 5 Mbit/s (the 4 flows' burst floor 22 ms there), a FIFO at
    # 20 (the floor 7.8 ms, below the 12-ms queue)
    ev = {"probe_q95_ms": 12.0, "flow_q50_ms": 12.0, "flow_q95_ms": 13.0, "dropped": True, "window_dropped": True,
          "excess_loss": 0.05, "loaded_rtt_ms": 30.0, "rate_mbps": 5.0}
    assert (_classify_ev(ev, 5.0, 4), _classify_ev(ev, 20.0, 4)) == ("policer", "fifo")
    sent = []

    def send(c):
        def f(pre):
            sent.append(dict(pre))
            if c is not None:
                pre.setdefault("rate_by_cc", {})["paced_train"] = c
        return f

    c, why = m._policer_trains_first(send(5.3), "down", ev, 5.0, 4)
    assert c == 5.3 and why.startswith("the policer's trains first")
    assert sent[-1] == {"direction": "down", "rate_mbps": 5.0, "limiter": "policer", "limiter_alternatives": None}
    # the fill's 5.0 within TRAIN_PORT_MARGIN above C: still left out; beyond it, the phase runs
    assert m._policer_trains_first(send(5.0 / 1.1 + 1e-9), "up", ev, 5.0, 4)[0] == pytest.approx(5.0 / 1.1)
    c, why = m._policer_trains_first(send(4.5), "up", ev, 5.0, 4)
    assert c is None and "below the 5 the fill got" in why
    c, why = m._policer_trains_first(send(None), "down", ev, 5.0, 4)
    assert c is None and why.startswith("the policer's trains read no rate")
    c, why = m._policer_trains_first(send(20.0), "down", ev, 5.0, 4)
    assert c is None and why == "at the paced train's 20 Mbit/s the fill reads no policer: the BBR phase runs"
    assert len(sent) == 5  # the trains went every time


#: rates (Mbit/s) and train lengths (full packets) where ``trains.codel_train_drops`` is held to the model's CoDel; the
#: model dropped, 2026-12-04: 595 of 1000 at 1 Mbit/s, 368 at 2, 18 at 15, none at 120
CODEL_TRAINS = [(1, 100), (1, 1000), (2, 200), (2, 500), (2, 1000), (3.5, 350), (5, 700), (15, 500), (15, 1000), (120, 1000)]


@pytest.mark.parametrize("rate, n", CODEL_TRAINS)
def test_codels_drops_of_a_train_are_the_models_within_two_packets(rate, n):
    """``trains.codel_train_drops`` against the model's CoDel (crates/core/src/qdisc/codel.rs, Linux's): a train of
    ``n`` full packets sent back to back into an idle CoDel (its 1000-packet limit) at ``rate``, through the simulator.
    Two packets: a drop falls on a dequeue, up to a packet's time after the control law's instant, which can move the
    last drop of a train over its end or the count's growth by one step (the residuals over 54 rates and lengths,
    1-120 Mbit/s and 100-1000 packets: -2 to +1)."""
    import bloatlab

    doc = {"name": "codel-train", "duration": "30s", "link": {"down": {"rate": f"{rate}Mbit", "qdisc": "codel", "buffer": "1000pkt"}},
           "flow": [{"cc": "cubic", "rtt": "20ms", "start": "29s", "size": "10KB"}],
           "train": [{"packets": n, "start": "1s", "rtt": "20ms"}]}
    t = bloatlab.run(doc).summary["trains"][0]
    built = n * 1500 * 8 / (rate * 1e3)
    assert abs(m_trains.codel_train_drops(built, rate, float("inf")) - (t["sent"] - t["received"])) <= 2


def test_a_paced_tail_slower_than_the_flows_got_through_is_not_the_policed_rate():
    """Campaign seed 195 path 42 (a tbf at 216.3 Mbit/s on a 486-Mbit/s port): the fill's four CUBIC flows got
    216.4 Mbit/s through it, the train paced at 964 passed 175.6 over its tail. An emptied bucket passes what it
    refills, no less than the flows took through it: beyond the train's resolution (1.1x) the tail is not C and the
    flows' rate stands. The busy windows and the port read the port's rate, so they do not refute a tail; a tail
    within the resolution, or above the flows, is C."""
    from bloatlab.advise.measure import loaded_flows_mbps, tail_below_the_flows

    def tail_below_the_flows_of(c, why, d):
        return tail_below_the_flows(c, why, loaded_flows_mbps(d))

    d = {"rate_by_cc": {"cubic": 216.4135502470304}}
    c, why = tail_below_the_flows_of(175.57578368578433, "the paced train's tail", d)
    assert c is None and why.startswith("the paced train's tail passed 175.6 Mbit/s, below the 216.4 the flows")
    assert tail_below_the_flows_of(197.0, "tail", d) == (197.0, "tail")  # 197 x 1.1 = 216.7: within the resolution
    assert tail_below_the_flows_of(250.0, "tail", d) == (250.0, "tail")
    d = {"rate_by_cc": {"cubic": 40.0, "bbr": 216.4}}
    assert tail_below_the_flows_of(175.6, "tail", d)[0] is None
    # a policer's busy windows and port are its port's rate: the tail below them is the policed rate
    d = {"rate_by_cc": {"cubic": 12.0, "busy": 95.0, "port": 100.0}}
    assert tail_below_the_flows_of(19.6, "tail", d) == (19.6, "tail")
    assert tail_below_the_flows_of(None, "no tail", d) == (None, "no tail")
    assert tail_below_the_flows_of(19.6, "tail", {}) == (19.6, "tail")


def test_a_paced_tail_faster_than_a_busy_fill_could_pass_is_not_the_policed_rate():
    """Campaign seed 195 path 19, an LTE-like trace (1.34 Mbit/s on average, a 3-KB FIFO, 38 ms): the fill's four
    CUBIC flows got 0.9475 Mbit/s while 47 % of its 232 probes waited 4.71 ms or more behind them; the train paced
    at 3.86 Mbit/s caught a peak and passed 3.388 over its tail. A link of C busy that share of the time passes at
    least share x C = 1.592 Mbit/s, beyond the train's resolution above the fill's 0.9475 x 1.1 = 1.042: the tail
    is no policed rate. Through a collapsed CUBIC behind a real policer the port idles and the share is small; the
    share is only read where each counted wait lasts a wire segment at C (3.54 ms at 3.388 Mbit/s), else a busy
    stretch may leave the bucket a packet short."""
    from bloatlab.advise.measure import tail_above_a_busy_fill

    busy = {"share": 0.4698275862068966, "probes": 232, "threshold_ms": 4.714508015599318}
    c, why = tail_above_a_busy_fill(3.387995377373934, "the paced train's tail", busy, 0.9475206488839237)
    assert c is None
    assert why.startswith("the paced train's tail passed 3.388 Mbit/s, but 47% of the fill's 232 probes found the "
                          "link busy (waiting 4.71 ms or more), in which a link of 3.388 Mbit/s passes at least 1.592")
    # 0.47 x C within 1.1 x a fill of 1.2 Mbit/s: C up to 2.81 stands
    assert tail_above_a_busy_fill(2.8, "tail", busy, 1.2) == (2.8, "tail")
    assert tail_above_a_busy_fill(2.85, "tail", busy, 1.2)[0] is None
    # a collapsed fill behind a policer: the port idled most of the window
    assert tail_above_a_busy_fill(3.388, "tail", dict(busy, share=0.2), 0.9475) == (3.388, "tail")
    # waits shorter than a segment at C (3.54 ms at 3.388 Mbit/s) do not bound the busy stretches
    assert tail_above_a_busy_fill(3.388, "tail", dict(busy, threshold_ms=3.0), 0.9475) == (3.388, "tail")
    # (4.71 ms is a segment at 2.548 Mbit/s: a busier fill does not refute a slower tail)
    assert tail_above_a_busy_fill(2.5, "tail", dict(busy, share=1.0), 0.9475) == (2.5, "tail")
    # too few probes, no share read, no tail, no fill
    assert tail_above_a_busy_fill(3.388, "tail", dict(busy, probes=19), 0.9475) == (3.388, "tail")
    assert tail_above_a_busy_fill(3.388, "tail", None, 0.9475) == (3.388, "tail")
    assert tail_above_a_busy_fill(None, "no tail", busy, 0.9475) == (None, "no tail")
    assert tail_above_a_busy_fill(3.388, "tail", busy, None) == (3.388, "tail")


def test_a_shallow_fifo_whose_loaded_probes_never_stood_behind_its_whole_packets_has_no_room_for_one():
    # campaign seed 197 path 1: a tbf at 0.697 Mbit/s (on a 2.42-Mbit/s port) whose queue holds 3000 B, two 1500-B
    # packets and no room for a 92-B probe behind them. The port's train passed 3 packets (port_fifo: the FIFO in
    # [2993, 4490) B, its middle 3737), and the fill's probes queued 33.4 ms at the p95: 1.94 packet times (17.2 ms
    # each), never behind two full packets and the one leaving, which a probe with room waits for (2-3 packet times)
    train = {"sent": 116, "first_loss": 3, "head_packets": 3, "head_send_mbps": 426.93231343947343,
             "leading_mbps": 1.4168319637291018, "wire_bytes": 1500, "lost": 113, "lost_seq": list(range(3, 116)),
             "tail_packets": 0, "send_mbps": 754.497}
    rate = 0.6968741350406032
    packet_ms = 1500 * 8 / (rate * 1e3)
    middle = m_trains.port_fifo(train)
    assert int(middle) == 3737
    whole, why = m_trains.no_room_for_a_probe(train, middle, rate, 33.41342023712575)
    assert whole == 3000 and "no room for a probe behind its 2 full packets" in why
    # the probes' p95 at the middle of the two tops (h - 1/2 = 2.5 packet times) or above: they stood behind the full
    # packets, there is room; the middle kept
    assert m_trains.no_room_for_a_probe(train, middle, rate, 2.5 * packet_ms)[0] is None
    assert m_trains.no_room_for_a_probe(train, middle, rate, 2.5 * packet_ms - 0.01)[0] == 3000
    # a packet time within twice the noise (above 2 Mbit/s): the two tops are not told apart, nothing read
    assert m_trains.no_room_for_a_probe(train, middle, 2.1, 1.0)[0] is None
    # a FIFO no shallower than the flows' own bursts (not kept full through the phase), or no loaded probes: nothing
    assert m_trains.no_room_for_a_probe(train, 40 * 1500, rate, 10.0)[0] is None
    assert m_trains.no_room_for_a_probe(train, middle, rate, None)[0] is None
    assert m_trains.no_room_for_a_probe(dict(train, first_loss=1), middle, rate, 1.0)[0] is None
    # through the FIFO's reading from its train: the whole packets' bytes, said in the note
    x = {"limiter": "fifo", "rate_mbps": rate, "flows": 4, "buffer_bytes": 4448, "buffer_bound": None,
         "buffer_bytes_min": None, "buffer_bytes_max": None, "buffer_window": {"queued_bytes": None},
         "evidence": {"probe_q95_ms": 33.41342023712575}, "train": train}
    m_trains._fifo_depth_from_trains(x, 3.27)
    assert (x["buffer_bytes"], x["buffer_from"]) == (3000, "train")
    assert "overflowed the FIFO after 3 packets" in x["buffer_note"] and "stayed below 2.5, so 3 KB" in x["buffer_note"]
    x.update(buffer_bytes=4448, evidence={"probe_q95_ms": 49.0}, buffer_from=None)
    m_trains._fifo_depth_from_trains(x, 3.27)
    assert x["buffer_bytes"] == 3737
