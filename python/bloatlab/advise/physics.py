"""What the measurement itself knows, written once: the wire sizes, the noise, the flows' own bursts
(:func:`burst_floor_ms`), the receiver's ACK wait (:func:`ack_wait_ms`), the loss a window explains
(:func:`mathis_loss`), the ports' serialization, CUBIC's return time. Every constant with its source and unit.
"""

from __future__ import annotations

import math

import numpy as np


#: The limiter's rule (:func:`classify`) compares queueing delays with the wait a
#: path without a standing queue still shows, :func:`burst_floor_ms`. Its parts:
#:
#: the measurement's own noise (ms): on a path with no queue at all the probes'
#: p95 reads +0.18-0.23 ms and the flows' smoothed RTT +0.1-0.5 ms, but the VM
#: pauses ~5 ms every few seconds, which reaches a p95 now and then; 3 ms keeps
#: one such pause per window out of the verdict
NOISE_MS = 3.0


#: the wire size of a full segment (B): 1448 B of payload + 52 B of headers
WIRE_SEGMENT = 1500


#: Linux's smallest TSO/GSO burst: ``tcp_min_tso_segs`` = 2 segments (net/ipv4/tcp_output.c, tcp_tso_autosize)
MIN_TSO_SEGS = 2


#: ... and its size otherwise: ``sk_pacing_rate >> sk_pacing_shift`` (shift 10: ~1 ms of data at the pacing rate),
#: with the pacing rate at 2x the delivery rate in slow start (``tcp_pacing_ss_ratio`` = 200 %): a flow's burst
#: is at most ~2 ms of its share of the rate
TSO_BURST_S = 2e-3


#: Linux's delayed ACK (net/ipv4/tcp_input.c __tcp_ack_snd_check, tcp_event_data_recv; tcp_output.c
#: tcp_send_delayed_ack; include/net/tcp.h, Linux 6.18): a receiver ACKs at once when more than one full segment
#: is unacknowledged, in quick-ack mode, or on a filled hole; a lone segment waits for the delayed-ACK timer. The
#: timer's timeout is ``icsk_ack.ato``, which starts at TCP_ATO_MIN (= TCP_DELACK_MIN, HZ/25 = 40 ms) and follows
#: the segments' inter-arrival time m (m <= 20 ms: ato/2 + 20 ms, a fixed point of 40 ms; 20 ms < m < ato: ato/2 +
#: m; never below 40 ms), and tcp_send_delayed_ack bounds it above ``TCP_DELACK_MIN`` by the receiver's srtt (at
#: least TCP_DELACK_MIN), HZ/2, and ``icsk_delack_max`` (TCP_DELACK_MAX = HZ/5 = 200 ms by default). So a lone
#: segment's ACK waits between these two (ms): :func:`ack_wait_ms`. A probe's echo never waits; a flow's RTT sample
#: does, so the flows' smoothed RTT exceeds the probe's by that much with no queue of their own (campaign seed 28:
#: two policers and a tbf at 3.6-7.1 Mbit/s, read as flow isolation with the flows 5-17 ms above the probe)
DELACK_MIN_MS = 40.0


DELACK_MAX_MS = 200.0


#: TCP's payload per full segment (B): 1500 - IPv4 20 - TCP 20 - timestamps 12
MSS = 1448


def median_ci_ms(rtts) -> tuple[float, float]:
    """The 95 % confidence interval of the median of ``rtts`` (ms), free of any distribution: the order
    statistics at ranks n/2 -+ 1.96 sqrt(n)/2 (the count below the median is binomial(n, 1/2); normal
    approximation), widened to whole ranks. At n = 100 the 41st and 61st smallest."""
    x = np.sort(np.asarray(rtts, float)[np.isfinite(np.asarray(rtts, float))])
    n = x.size
    if n == 0:
        return float("nan"), float("nan")
    h = 1.96 * math.sqrt(n) / 2
    return float(x[max(math.floor(n / 2 - h), 0)]), float(x[min(math.ceil(n / 2 + h), n - 1)])


def burst_floor_ms(rate_mbps: float, flows: int) -> float:
    """The queueing delay (ms) a path without a standing queue still shows
    under ``flows`` bulk flows that together deliver ``rate_mbps``: each flow
    may have one TSO/GSO burst waiting at the bottleneck (at least
    :data:`MIN_TSO_SEGS` segments, else ~:data:`TSO_BURST_S` of its share of
    the rate), drained at the measured rate — an upper bound behind a policer,
    whose port is faster — plus the measurement's noise (:data:`NOISE_MS`).

    At 20 Mbit/s and 4 flows: 4 x 2 x 1500 B = 4.8 ms + 3 = 7.8 ms; at 1
    Mbit/s 96 + 3 ms (one segment alone takes 12 ms); from 50 Mbit/s up the
    2-ms bursts set it: 5 ms. A FIFO shallower than this drops like a policer
    and is read as one (it acts as one: the twin says which, see
    :func:`classify`)."""
    rate_bps = max(rate_mbps, 1e-3) * 1e6
    segs_ms = flows * MIN_TSO_SEGS * WIRE_SEGMENT * 8 / rate_bps * 1e3
    return NOISE_MS + max(segs_ms, TSO_BURST_S * 1e3)


def delack_ms(rtt_ms: float) -> float:
    """The longest a lone segment's ACK waits at the receiver (ms): D = min(:data:`DELACK_MAX_MS`, max(
    :data:`DELACK_MIN_MS`, RTT)), the delayed-ACK timer's ato bounded by the receiver's srtt
    (tcp_send_delayed_ack)."""
    return min(DELACK_MAX_MS, max(DELACK_MIN_MS, rtt_ms))


def ack_wait_ms(rate_mbps: float, flows: int, rtt_ms: float, idle: bool = False) -> float:
    """The most the receiver's ACK policy adds to the mean of the flows'
    RTT samples (ms) beyond the queue they wait in, for ``flows`` flows that
    together deliver ``rate_mbps`` (on the wire, as measure reads it) over a
    round trip of ``rtt_ms``
    (their smoothed RTT): a wait the probe, echoed at once, never has.

    A sender's RTT sample is taken at the ACK from the oldest segment it
    newly covers (tcp_clean_rtx_queue). The receiver ACKs at once when a
    second full segment arrives (__tcp_ack_snd_check) and a lone one when
    the delayed-ACK timer fires, after at most ``D`` = min(
    :data:`DELACK_MAX_MS`, max(:data:`DELACK_MIN_MS`, RTT)) (ato bounded by
    the receiver's srtt, tcp_send_delayed_ack). So each sample carries its
    first segment's wait for the next one, cut at ``D``. A flow's segments
    come ``s`` = flows x :data:`WIRE_SEGMENT` / rate apart on average (its share of
    the rate; its window is w = RTT / s segments). Two ways they arrive:

    - spread over the round trip, one flow's segment after each of the
      others' (a bottleneck kept busy: DRR's one packet per flow a round, a
      shared queue): each first segment waits ~s: min(D, s) — the default.
      (A sender's TSO pairs, back to back, wait less: this is the bound.)
    - as one burst a round trip (``idle``: the bottleneck idled through the
      phase — a window-limited flow, CUBIC collapsed behind a policer): the
      pairs wait nothing and an odd last segment waits for the timer, D,
      one sample of ceil(w / 2) >= w / 2: D x 2 / w = 2 D s / RTT, which
      exceeds s where RTT < 2 D; so min(D, s x max(1, 2 D / RTT)).

    At 20 Mbit/s, 4 flows, 40 ms: 2.4 ms (4.8 idle); 9.5 Mbit/s: 5.1 ms;
    a 6.8-Mbit/s tbf (campaign seed 28 path 16, BBR's phase): 7.0 ms; 4
    CUBIC flows collapsed to 0.46 Mbit/s behind a 7.1-Mbit/s policer at
    357 ms (path 18: windows of 3.5 segments): 118 ms; 2 Mbit/s (CAKE, 4
    flows): 23.6 ms; from 100 Mbit/s up 0.48 ms or less, within the noise
    (:data:`NOISE_MS`)."""
    rtt = max(rtt_ms, 1e-3)
    d = delack_ms(rtt)
    s = max(flows, 1) * WIRE_SEGMENT * 8 / (max(rate_mbps, 1e-6) * 1e6) * 1e3
    return min(d, s * max(1.0, 2 * d / rtt) if idle else s)


#: tcp_rtt_estimator's gain on a new RTT sample: srtt += (m - srtt) / 8 (RFC 6298's alpha)
SRTT_GAIN = 1 / 8


def ack_tail_ms(rtt_ms: float) -> float:
    """The most one delayed ACK lifts a flow's smoothed RTT (ms) where its window arrives as bursts with gaps
    between them (a bottleneck idle part of the time: the flows' windows arrive as they were sent, a burst a round
    trip): the burst's last, odd segment is ACKed on the receiver's timer, after up to D
    (:func:`delack_ms`), and that one sample moves the smoothed RTT by
    :data:`SRTT_GAIN` of it; the lifted value stands until the next burst's samples pull it back, so TCP_INFO read
    every few ms (measure's flow samples) finds it for much of the gap. The mean's bound :func:`ack_wait_ms` is the
    median's; this is the tail's: D / 8, 5 ms at 40 ms and below, 25 ms from 200 ms up. Measured in the model (4
    CUBIC flows, 250 Mbit/s, delivering 68 % of it at 350 ms and 43 % at 550 over the run's second half): under PIE and CoDel at 350 and 550 ms the link's own
    queue p95 1.3-1.9 ms, the probe's the same, the flows' smoothed RTT p95 10.7-17.7 ms above the base; the
    kernel through the emulator (ranked seed 50 path 6, PIE at 260 Mbit/s, 348 ms, the fill at 223): the probe's
    p95 3.05 ms, the flows' 8.33."""
    return delack_ms(rtt_ms) * SRTT_GAIN


def mathis_loss(rate_mbps: float, flows: int, rtt_ms: float) -> float:
    """The loss rate ``flows`` ACK-clocked loss-based flows need to sit at
    ``rate_mbps`` together over ``rtt_ms`` (Mathis et al., CCR 1997: one loss
    per congestion epoch, p = 1.5 / W² with W each flow's window in
    segments of :data:`MSS` bytes). A queue that signals congestion (a FIFO's
    tail, an AQM's control law) drops about this much; a policer drops what
    exceeds its bucket whatever the window."""
    w = max(rate_mbps, 1e-6) * 1e6 / max(flows, 1) * rtt_ms / 1e3 / (MSS * 8)
    return min(1.5 / max(w, 1.0) ** 2, 1.0)


def loss_upper(lost: int, sent: int, confidence: float = 0.95) -> float:
    """The one-sided upper bound on a loss rate that lost ``lost`` of
    ``sent`` packets (Clopper-Pearson: the rate at which seeing ``lost`` or
    fewer has probability 1 - ``confidence``); 3/sent-ish with no loss."""
    if sent <= 0:
        return 1.0
    if lost >= sent:
        return 1.0

    def cdf(p: float) -> float:
        # P(X <= lost), X ~ Binomial(sent, p), summed in logs
        lq, lp = math.log1p(-p), math.log(p)
        return sum(math.exp(_log_comb(sent, i) + i * lp + (sent - i) * lq) for i in range(lost + 1))

    lo, hi = lost / sent, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if mid <= 0.0 or cdf(mid) > 1 - confidence:
            lo = mid
        else:
            hi = mid
    return hi


def loss_lower(lost: int, sent: int, confidence: float = 0.95) -> float:
    """The one-sided lower bound on a loss rate that lost ``lost`` of ``sent`` packets (Clopper-Pearson, as
    :func:`loss_upper`: the rate at which seeing ``lost`` or more has probability 1 - ``confidence``); 0 with no
    loss."""
    if sent <= 0 or lost <= 0:
        return 0.0
    if lost >= sent:
        return (1 - confidence) ** (1 / sent)
    lo, hi = 0.0, lost / sent
    for _ in range(60):
        mid = (lo + hi) / 2
        if binomial_sf(lost, sent, mid) < 1 - confidence:
            lo = mid
        else:
            hi = mid
    return lo


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= ``k``), X ~ Binomial(``n``, ``p``), summed in logs."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    return min(1.0, sum(math.exp(_log_comb(n, i) + i * lp + (n - i) * lq) for i in range(k, n + 1)))


def more_lost_than(lost: int, sent: int, ref_lost: int, ref_sent: int) -> float:
    """Fisher's exact one-sided p-value that a sample which lost ``lost`` of ``sent`` lost more often than one
    which lost ``ref_lost`` of ``ref_sent`` (the two alike: the losses spread over both as the draws of a
    hypergeometric; the chance that the first got ``lost`` or more of them)."""
    total, lost_all = sent + ref_sent, lost + ref_lost
    if sent <= 0 or lost <= 0:
        return 1.0
    lo = _log_comb(total, sent)
    return min(1.0, sum(math.exp(_log_comb(lost_all, i) + _log_comb(total - lost_all, sent - i) - lo)
                        for i in range(lost, min(sent, lost_all) + 1)))


def losses_cluster_p(runs: list, lost: int, sent: int) -> float:
    """How likely as many losses following a loss as ``runs`` shows (``(length, count)`` pairs of consecutive
    losses) are where each packet is lost independently at the rate seen (``lost`` / ``sent``): a path's random
    loss. A loss follows a loss with that probability, so the follow-ups of ``lost`` losses (``lost`` less the
    runs) are Binomial(``lost`` - 1, rate) (the rate taken from the same packets, bursts included: the test errs
    towards independence). A pause or an overflowing queue drops several packets in a row: a small value."""
    n_runs = sum(int(c) for _, c in runs)
    follow = lost - n_runs
    if lost < 2 or sent <= 0:
        return 1.0
    return binomial_sf(follow, lost - 1, lost / sent)


def one_way(round_trip: float) -> float:
    """A round trip's loss as each direction's, if alike: 1 - sqrt(1 - rt)."""
    return 1 - (1 - min(max(round_trip, 0.0), 1.0)) ** 0.5


#: Linux CUBIC (net/ipv4/tcp_cubic.c, 6.18; RFC 9438): the window after a loss is beta = 717/1024 of the window
#: at it, and grows back to that window W (segments) in K = cbrt(W (1 - beta) / C) s, C = 0.4 segments/s^3
#: (bic_scale 41: 41 x 10 / 1024), or sooner in the TCP-friendly region, where it grows
#: 3 (1 - beta) / (1 + beta) segments a round trip (tcp_friendliness: one segment per cwnd x beta_scale / 8 ACKs)
CUBIC_BETA = 717 / 1024


CUBIC_C = 0.4


CUBIC_FRIENDLY = 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA)


#: RFC 9438 §5.1 (Linux CUBIC's constants): a CUBIC flow's average window (segments) where its losses are random
#: at rate p and its window lies in the cubic region is (C (3 + beta) / (4 (1 - beta)))^(1/4) x (RTT / p)^(3/4),
#: RTT in s; its TCP-friendly region's is Reno's, sqrt(3/2) / sqrt(p) (§4.3's alpha is chosen for that), and the
#: window is the larger of the two (§5.1, Figure 2)
CUBIC_RESPONSE = CUBIC_C * (3 + CUBIC_BETA) / (4 * (1 - CUBIC_BETA))


def cubic_loss(rate_mbps: float, flows: int, rtt_ms: float) -> float:
    """The random loss rate that holds ``flows`` CUBIC flows at ``rate_mbps`` together over ``rtt_ms`` (each at a
    window W of ``rate_mbps / flows`` x RTT in :data:`MSS` segments): the larger of the two regions' inverses
    (:data:`CUBIC_RESPONSE`), the cubic one's RTT x CUBIC_RESPONSE^(1/3) / W^(4/3) and Reno's (:func:`mathis_loss`),
    as the window at a loss rate is the larger of the two regions' windows; a loss above it holds them below the
    rate. At 100 Mbit/s, 4 flows and 20 ms (W = 43 segments) Reno's 0.081 % (the cubic region's 0.014 %); at 209
    Mbit/s and 178 ms (W = 803) the cubic region's 0.0026 % (Reno's 0.00023 %)."""
    w = max(max(rate_mbps, 1e-6) * 1e6 / max(flows, 1) * rtt_ms / 1e3 / (MSS * 8), 1.0)
    cubic = rtt_ms / 1e3 * CUBIC_RESPONSE ** (1 / 3) / w ** (4 / 3)
    return min(max(cubic, mathis_loss(rate_mbps, flows, rtt_ms)), 1.0)


def cubic_return_s(window_bytes: float, rtt_ms: float) -> float:
    """How long (s) a CUBIC flow that lost at ``window_bytes`` takes to grow
    back to that window (:data:`CUBIC_BETA`): the cubic's K or the TCP-friendly
    growth's (1 - beta) W / alpha round trips, whichever is shorter. At 683
    segments and 30 ms: K = 8.0 s (friendly: 11.6 s); at 90 segments and 11
    ms: 0.56 s (K: 4.1 s)."""
    w = max(window_bytes, MSS) / MSS
    k = (w * (1 - CUBIC_BETA) / CUBIC_C) ** (1 / 3)
    return min(k, (1 - CUBIC_BETA) * w / CUBIC_FRIENDLY * rtt_ms / 1e3)


def _significant(retransmits: float, segments: float, idle_loss: float, handful: float = 3) -> bool:
    """Retransmissions beyond the idle path's random loss at three standard
    deviations (binomial, ``segments`` draws at ``idle_loss``), and more than
    ``handful``: a few retransmissions of a TCP flow (a SYN, a tail probe)
    are no drop pattern."""
    expected = idle_loss * segments
    return retransmits - expected > 3 * (expected * (1 - idle_loss)) ** 0.5 + handful


#: an ACK of every segment on the wire (B), as a receiver sends them in its quick-ACK start and through a loss's
#: recovery (out of order: no delayed ACK): IPv4 20 + TCP 20 + timestamps 12 + a SACK option of three blocks (2
#: NOPs, kind and length, 3 x 8 = 28) — the largest, so the ACK stream's load below is an upper bound
ACK_SACK_WIRE = 80


def ack_queue_ms(rate_mbps: float, reverse_mbps: float | None, other_mbps: float = 0.0) -> float:
    """The wait (ms) a direction's ACKs find at the reverse direction's port of ``reverse_mbps`` where its
    receivers ACK every segment of ``rate_mbps`` (:data:`ACK_SACK_WIRE` a :data:`WIRE_SEGMENT`) beside other
    traffic of ``other_mbps`` there (the loaded phases' probe): the load rho = (rate x ACK_SACK_WIRE /
    WIRE_SEGMENT + other) / reverse, and M/D/1's mean wait, rho / (2 (1 - rho)) ACK serializations at the reverse
    port — a flow's smoothed RTT, an average over its last samples, carries it. An upper estimate: a saturated
    bottleneck spaces its ACKs, which then wait less than random arrivals. Infinite where rho >= 1 (the reverse port
    is overloaded, and its queue grows with no bound the measurement knows); 0 where the reverse port is unknown.
    Campaign seed 65 path 1 (8.82 Mbit/s down, a 0.475-Mbit/s up port, 437 ms): the ACKs 0.97 and the probe's 92 B
    every 10 ms 0.15, rho 1.13 — the fill's slow start, through its recovery, stood 14 ms above what the window's
    flows, on delayed ACKs, showed in a FIFO 382 ms deep."""
    if not reverse_mbps:
        return 0.0
    rho = (rate_mbps * ACK_SACK_WIRE / WIRE_SEGMENT + other_mbps) / reverse_mbps
    if rho >= 1:
        return float("inf")
    return rho / (2 * (1 - rho)) * ACK_SACK_WIRE * 8 / (reverse_mbps * 1e3)


def reply_wait_ms(rate_mbps: float, reverse_mbps: float | None, other_mbps: float = 0.0) -> float:
    """What the reverse port adds to a probe's reply beside a direction's ACKs (:func:`ack_queue_ms`'s load): the
    ACK on the wire there (one :data:`ACK_SACK_WIRE` serialization at ``reverse_mbps``) and the mean wait of those
    queued before it. Infinite where the reverse port is unknown (nothing bounds it) or overloaded."""
    if not reverse_mbps:
        return float("inf")
    return ACK_SACK_WIRE * 8 / (reverse_mbps * 1e3) + ack_queue_ms(rate_mbps, reverse_mbps, other_mbps)


#: the idle probes' wire size (B): bloatlab-probe udp client's 64-byte payload + UDP 8 + IPv4 20 (the emulator
#: and a router serialize the IP packet); the reply is as large
PROBE_WIRE = 92


def probe_mbps(interval_ms: float) -> float:
    """The rate (Mbit/s) of a probe of :data:`PROBE_WIRE` bytes every ``interval_ms`` (each way): 73.6 kbit/s at
    the loaded phases' 10 ms."""
    return PROBE_WIRE * 8 / (interval_ms * 1e3)


#: the large probes' payload (B): 1400 + UDP 8 + IPv4 20 on the wire, below any path's 1500-B MTU
LARGE_PROBE = 1400


LARGE_WIRE = LARGE_PROBE + 28


def serialization_ms(rmin_small_ms: float, rmin_large_ms: float) -> float:
    """The idle probes' own serialization (ms) in their RTT, from the minimum
    RTT of small (:data:`PROBE_WIRE`) and large (:data:`LARGE_WIRE`) probes:
    a probe of S bytes and its echo take ``base + S x k`` at their fastest,
    k the time a byte takes at both ways' ports, so k is the slope and the
    small probes carry ``PROBE_WIRE x k`` (pathchar, Jacobson 1997). At 1
    Mbit/s each way 1.5 ms; at 100 Mbit/s 15 µs. Read from the ports the
    probes actually cross, so a policer's port (faster than its rate) and a
    verdict gone wrong cannot mislead it as a rate-based estimate did (a
    policed 1.2 Mbit/s read as an AQM took 5 ms off an 11.7-ms path)."""
    k = max(rmin_large_ms - rmin_small_ms, 0.0) / (LARGE_WIRE - PROBE_WIRE)
    return PROBE_WIRE * k


def serialization_rate_mbps(ser_ms: float) -> float:
    """The ports' rate (Mbit/s of IP bytes) a serialization of the small
    probes (:func:`serialization_ms`) means: R = 1 / (1/down + 1/up)."""
    return 8e-3 * PROBE_WIRE / ser_ms


def serialization_at_ms(down_mbps: float, up_mbps: float) -> float:
    """What a small probe (:data:`PROBE_WIRE`) and its echo take at ports of
    ``down_mbps`` and ``up_mbps`` (ms): :func:`serialization_rate_mbps`'s
    inverse, 0.074 ms at 20 Mbit/s each way."""
    return 8e-3 * PROBE_WIRE * (1 / down_mbps + 1 / up_mbps)
