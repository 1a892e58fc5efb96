"""A FIFO's buffer from the queue the flows sat in, and what that figure is: the depth, or a bound
(:func:`buffer_reading`); the twin's buffer (:func:`_twin_buffer`) and its words (:func:`_buffer_text`).
"""

from __future__ import annotations

import numpy as np

from .evidence import _flows_window
from .physics import MSS, _significant, burst_floor_ms

def _buffer_text(x: dict) -> str:
    if x["buffer_bytes"] is None and x["limiter"] == "policer":
        return "no queue (the port's buffer never filled: not seen)"
    if x["buffer_bytes"] is None and x["limiter"] == "wifi":
        return "buffer unknown (the access point's fq_codel holds the queue below it)"
    if x["buffer_bytes"] is None:
        return "buffer unknown (an AQM holds the queue below it)"
    bdp = f" ({x['buffer_bdp']:.2g} BDP)" if x.get("buffer_bdp") else ""
    if x.get("buffer_bound") == "lower":
        return f"buffer >= {x['buffer_bytes'] / 1e3:.0f} KB{bdp} (it never filled)"
    if x.get("buffer_bound") == "upper":
        return f"buffer <= {x['buffer_bytes_max'] / 1e3:.0f} KB (below what the flows' bursts resolve; read ~{x['buffer_bytes'] / 1e3:.0f} KB)"
    return f"buffer ~{x['buffer_bytes'] / 1e3:.0f} KB{bdp}"


def _twin_buffer(x: dict) -> int | None:
    """The twin's buffer of a direction: at least one packet; None (the
    qdisc's own limit) behind an AQM. Where the reading is a bound
    (:func:`buffer_reading`) the twin takes the figure read, which is the
    bound: a lower bound is what a load like the fill met in its time (a
    deeper buffer than the flows reached changes nothing for flows no longer
    than the fill's), an upper bound is above the figure read only by the
    flows' own bursts and the noise."""
    return None if x["buffer_bytes"] is None else max(x["buffer_bytes"], 1500)


def buffer_reading(queue_ms: float, rate_mbps: float, flows: int, base_ms: float, overflowed: bool | None,
                   queued_bytes: float | None = None, queue_max_ms: float | None = None,
                   probe_q95_ms: float | None = None) -> dict:
    """A FIFO's (or a tbf's: its ``limit`` at its rate) buffer from the
    queue the flows sat in: ``queue_ms`` (their queueing p95) x
    ``rate_mbps``, or ``queued_bytes`` where given (a moving capacity:
    :func:`queued_bytes_p95`) — and what that figure is:

    - a **lower bound** (``buffer_bound`` "lower", ``buffer_bytes_min``)
      where the queue did not overflow while it was read (``overflowed``
      False: :func:`window_drops`): the flows' queue was below the depth, so
      the depth is at least what they queued. A loss-based fill overflows a
      buffer only once its windows hold BDP + buffer: 4 CUBIC flows grow
      their windows by 0.4 t^3 segments each after slow start, so a buffer
      of B bytes takes about (B / (4 x 1448 x 0.4))^(1/3) s past the BDP —
      24 s for 33 MB (seed 28 path 44, 2.75 BDP at 535 ms), beyond the fill's
      ceiling; a BBR fill (a lossy path) holds its own queue, about one BDP
      and its quanta, whatever is deeper;
    - an **upper bound** (``buffer_bound`` "upper", ``buffer_bytes_max``)
      where it overflowed but the flows' queueing stayed below the burst
      floor (:func:`burst_floor_ms`, the floor the limiter is read against):
      below it their queueing cannot be told from their own TSO/GSO bursts
      and the noise — the resolution of a buffer read from queueing delay x
      rate (4 flows: 5 ms from 50 Mbit/s up, 7.8 ms at 20, 99 ms at 1
      Mbit/s; seed 28: a 6.1-KB FIFO at 61.5 Mbit/s read 24.5 KB, a 16.5-KB
      one at 106 read 21.9). The depth is at most the larger of the floor and
      the most the flows queued (``queue_max_ms``, :func:`window_drops`: the
      queue overflowed, so it was full at least once; where that is not
      known, the floor alone). The figure is then the probes' where given
      (``probe_q95_ms``: their queueing p95 in the same loads; not for a
      moving capacity): the flows' own figure below the floor is their
      bursts and their receivers' ACK waits (:func:`physics.ack_wait_ms`: 4
      flows at 12 Mbit/s send each ~4 ms apart), which an echo sent alone
      and answered at once does not carry, so the probes find the queue as
      it stood (the stored campaigns' six FIFOs read so, seeds 46-51: the
      flows' figure within 30 % of the depth on 1, the probes' on 4; a
      6.5-KB FIFO at 12 Mbit/s, seed 51 path 3: the flows 8.42 ms, the
      probes 4.56, the depth 4.35);
    - the depth itself otherwise (``buffer_bound`` None).

    ``overflowed`` None (no retransmission count): the figure, unqualified.
    ``buffer_bytes`` is the figure in each case (what the twin holds,
    :func:`_twin_buffer`); ``buffer_note`` says why a bound is one."""
    buf = queued_bytes if queued_bytes is not None else queue_ms / 1e3 * rate_mbps * 1e6 / 8
    bdp = rate_mbps * 1e6 * base_ms / 1e3 / 8
    out = {"buffer_bytes": int(buf), "buffer_bdp": buf / bdp if bdp else None, "buffer_bound": None,
           "buffer_bytes_min": None, "buffer_bytes_max": None, "buffer_note": None}
    floor = burst_floor_ms(rate_mbps, flows)
    if overflowed is False:
        out.update(buffer_bound="lower", buffer_bytes_min=int(buf),
                   buffer_note=f"at least {buf / 1e3:.3g} KB: the flows queued {queue_ms:.3g} ms and lost nothing beyond "
                               f"the random loss while it was read, so the buffer never filled")
    elif overflowed and queue_ms < floor:
        top = max(floor, queue_max_ms or 0.0) / 1e3 * rate_mbps * 1e6 / 8
        probed = ""
        if probe_q95_ms is not None and queued_bytes is None:
            buf = probe_q95_ms / 1e3 * rate_mbps * 1e6 / 8
            out.update(buffer_bytes=int(buf), buffer_bdp=buf / bdp if bdp else None)
            probed = (f"; read ~{buf / 1e3:.3g} KB from the probe's queueing ({probe_q95_ms:.3g} ms p95), which carries "
                      f"neither their bursts nor their ACK waits")
        out.update(buffer_bound="upper", buffer_bytes_max=int(max(top, buf)),
                   buffer_note=f"at most {max(top, buf) / 1e3:.3g} KB: the flows queued {queue_ms:.3g} ms, below what "
                               f"{flows} flows' own bursts and the noise show without a queue ({floor:.3g} ms at "
                               f"{rate_mbps:.4g} Mbit/s){probed}")
    return out


#: the load that reads a buffer deeper than the fill reached (:func:`slow_start_depth`, measure's ``deep`` step):
#: Linux's Reno has no HyStart (``tcp_cong.c``'s ``tcp_reno_cong_avoid`` slow-starts with ``tcp_slow_start`` until
#: ssthresh, infinite until the first loss), so its slow start doubles the windows every round trip until the
#: buffer overflows; CUBIC's HyStart (``tcp_cubic.c``, ``hystart_update``) leaves slow start near the BDP instead,
#: and its window then grows as 0.4 t^3 segments (:func:`buffer_reading`'s lower bound)
DEEP_CC = "reno"


def _top_to_loss(t, srtt, retx) -> float:
    """One flow's largest smoothed RTT (ms) from its samples (times ``t``, s) up to a round trip after its first
    retransmission (the round trip its smoothed RTT then had: the queue is full while the loss travels back and the
    smoothed RTT climbs to it), or over all of them where it lost nothing: what a later queue did (a fill's CUBIC
    window after its slow start's loss) does not enter."""
    lost = np.flatnonzero(retx > 0)
    if lost.size == 0:
        return float(srtt.max())
    k = lost[0]
    return float(srtt[t <= t[k] + srtt[k] / 1e3].max())


def slow_start_depth(j: dict, d: str, base_ms: float, rate_mbps: float, fill_segments: float | None,
                     own_window: bool = False) -> dict:
    """What a phase of Reno flows run until their first loss (``load -C reno --until-loss``, its JSON ``j``) read
    of direction ``d``'s FIFO: ``{"overflowed", "queue_ms", "depth_bytes", "retransmits", "segments", "why"}``.

    Slow start doubles the windows each round trip until the buffer overflows. The queue is then at the depth and
    stays there for the round trip it takes the senders to see the loss (fast retransmit's duplicate ACKs), over
    which each flow's smoothed RTT (gain 1/8 an ACK, RFC 6298) reaches base + depth / rate: the depth in time is
    the median over the flows of each one's largest smoothed RTT up to a round trip after its first
    retransmission (:func:`_top_to_loss`) less ``base_ms``, in bytes that times
    ``rate_mbps`` (a FIFO drains at the bottleneck's rate; through the emulator, a 36.7-MB FIFO at 484.6 Mbit/s
    and 44.6 ms, 606.6 ms deep: 4 Reno flows' loss seen 1.70 s into the phase, smoothed RTTs 651.4-653.1 ms).

    The loss is the overflow only if it is more than a random loss would give: the fill before this phase
    (``fill_segments``, the segments its window carried without one retransmission) bounds the path's random loss
    at 3 / ``fill_segments`` (the rule of three, 95 %), and the phase's retransmissions must exceed that bound's
    expectation by three binomial standard deviations and a handful (:func:`physics._significant`). An overflow in
    slow start drops up to half of the last round trip's packets (the windows double while the loss travels back:
    845 retransmissions in the case above), a random loss one. Where it is not an overflow (or no flow lost
    anything by the phase's end) the queue reached is only a lower bound (``overflowed`` False).

    ``own_window``: the lossless segments are this phase's own (the fill's window, read against the fill's own
    slow start): they are not draws of the ramp's random loss, whose count is known for them (none), so the
    expectation is over the phase's other segments only. Counted over all of them it took the window's segments
    twice, once for the bound and once as draws at it — 3 retransmissions expected, and their 3 standard
    deviations, that no segment of the window can have (campaign seed 138 path 56, PIE at 211 Mbit/s: 14
    retransmissions in the ramp of a fill whose window carried 24529 of its 48988 segments without one, 14 - 6.0
    expected against 10.3, read as no overflow; over the ramp's 24459, 14 - 3.0 against 8.2)."""
    fs, fid, t, ids, _, _ = _flows_window(j, d)
    srtt = np.asarray(fs.get("srtt_ms", []), float)
    retx = np.asarray(fs.get("retransmits", []), float)
    acked = np.asarray(fs.get("delivered_bytes", []), float)
    out = {"overflowed": False, "queue_ms": None, "depth_bytes": None, "retransmits": None, "segments": None,
           "why": None}
    if not ids or srtt.size != t.size or retx.size != t.size or acked.size != t.size:
        out["why"] = "the phase's flows carried no samples"
        return out
    q = max(float(np.median([_top_to_loss(t[fid == i], srtt[fid == i], retx[fid == i]) for i in ids])) - base_ms, 0.0)
    lost = float(sum(retx[fid == i].max() for i in ids))
    segs = float(sum(acked[fid == i].max() for i in ids)) / MSS
    out.update(queue_ms=q, depth_bytes=int(q / 1e3 * rate_mbps * 1e6 / 8), retransmits=lost, segments=segs)
    bound = 3.0 / fill_segments if fill_segments else 1.0
    drawn = max(segs - fill_segments, 0.0) if own_window and fill_segments else segs
    if lost == 0:
        out["why"] = "no flow lost a segment before the phase's end: the buffer is deeper than the slow start reached"
    elif not _significant(lost, drawn, min(bound, 1.0)):
        out["why"] = (f"{lost:.0f} retransmissions in {drawn:.0f} segments: no more than a random loss below the "
                      f"fill's bound ({bound * 100:.2g} %) gives, not an overflow")
    else:
        out["overflowed"] = True
    return out
