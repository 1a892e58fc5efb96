"""A WiFi hop from an idle packet train: the batches an access point's aggregates make
(:func:`wifi_hop`) and its queue's design (:func:`wifi_design`), from IEEE 802.11 timing and mac80211's
queues.
"""

from __future__ import annotations

import numpy as np

from .physics import WIRE_SEGMENT
from .classify import CODEL_INTERVAL_MS, RATE_SPREAD
from .path import HT20_MCS_MBPS

#: A WiFi hop delivers a packet train in batches, one aggregate (A-MPDU) a transmission, handed to the
#: receiver together at its end (crates/probe/src/train.rs, "Batches"); a wired port spaces every packet. A
#: batch period shorter than the shortest 802.11n transmission cannot be a transmission's: AIFS[BE] 43 us +
#: the HT-mixed preamble of one stream 36 us + SIFS 16 us + a compressed BlockAck at 24 Mbit/s 32 us
#: (IEEE 802.11-2016; crates/core/src/wifi/airtime.rs) = 127 us, before any backoff and any data. (A host that
#: batches its receive interrupts, or the emulator's own wake-ups, batches a fast wired path's arrivals tens of
#: us apart: below this floor.)
TXOP_FLOOR_MS = 0.127


#: ... and the mean of that overhead on an idle medium: the floor + the mean backoff, CWmin / 2 = 7.5 slots of
#: 9 us (67.5 us): what a period holds beyond its aggregate's data airtime
TXOP_OVERHEAD_MS = TXOP_FLOOR_MS + 0.0675


#: an aggregating link hands over batches of at least this many packets (the median batch): one packet a
#: batch is a wired port's spacing
WIFI_BATCH_PACKETS = 2


#: A WiFi hop in front of a line (the measuring host on a station of an access point whose line is the path,
#: :func:`front_hop`) has a PHY rate at least this multiple of the line's down rate: the model's MAC delivers
#: 0.72-0.79 of the PHY rate to one backlogged station (Path.wifi_rate_mbps, MCS 0-15, each design), so the hop
#: carries at least 1.44x the line and the line holds the queue (a slower hop holds the queue itself, and reads as
#: the limiter: :func:`wifi_hop`). The campaign draws its front hops so (campaign.draw)
WIFI_FRONT_PHY_OVER = 2.0


#: An idle round trip through a WiFi hop crosses it twice (the station's request up, the access point's reply
#: down), each transmission after a backoff drawn uniformly over 0..CWmin slots (IEEE 802.11-2016 EDCA, best
#: effort: CWmin 15, a slot 9 us; crates/core/src/wifi): the idle probes spread above their least by the sum of two
#: such backoffs, whose median is 15 slots (135 us) and whose least over 100 probes lies within two slots of 0
#: (P(sum <= 2 slots) = 6/256 a probe). A wired path's spread is the hosts' timing alone. So a spread of at least
#: the sum's median less those two slots and two more for the hosts' timing (which moves the median as much), 99
#: us, is a WiFi hop's access: this, rounded
WIFI_ACCESS_SPREAD_MS = 0.1


#: ... and at most the two backoffs' largest sum (30 slots, 270 us) and the same two slots for the hosts' timing:
#: a lone hop's accesses spread the probes no wider (a wider spread waited for something else: a capacity's slots,
#: a queue, other stations, which :func:`wifi_hop` and measure's shared reading tell)
WIFI_ACCESS_SPREAD_MAX_MS = 0.288


#: the PHY rate a WiFi hop in front is taken at where nothing reads it (Mbit/s): HT20's fastest, MCS 15 (two
#: streams, 64-QAM 5/6, long guard), or :data:`WIFI_FRONT_PHY_OVER` x the line where that is faster. Its figures
#: turn on the hop's being there (its aggregated ACKs), hardly on its rate: the twins of the 15 front hops of
#: campaign seeds 111 and 113-115 (legacy, fq and airtime at MCS 2-15) predicted the kernel's goodput with errors
#: within 2.2 points of each other given the truth's design and MCS and given airtime at this (docs/advise.md)
FRONT_PHY_MBPS = 130.0


#: the MAC bytes around each IP packet of an A-MPDU subframe: QoS header 26 + LLC/SNAP 8 + FCS 4 + the
#: delimiter 4 (airtime.rs MPDU_OVERHEAD, AMPDU_DELIMITER), padding to 4 B aside
WIFI_SUBFRAME_OVERHEAD = 42


#: a backlogged access point sends full aggregates: ath9k stops one at 32 subframes (half the 64-frame block-ack
#: window) or at the frame length that takes 4096 us at the rate (airtime.rs MAX_AMPDU_FRAMES, MAX_AGGR_US). Once
#: a train backs up the AP's queue its batches are full aggregates: at least 32 packets, or an airtime within one
#: subframe of 4096 us — read from their median period less the mean overhead, so within that and half the
#: backoff's spread (:data:`BACKOFF_HALF_SPREAD_MS`). Not every batch: the first packets of the train reach an
#: idle AP, which sends them at once in small aggregates while the driver's two-aggregate queue fills
#: (ATH_AGGR_MIN_QDEPTH), and the last batch is the remainder; so the batches judged are the upper quartile by
#: size (:data:`WIFI_BACKLOG_QUANTILE`). A link that delivers in fixed slots (an LTE TTI of 1 ms, a Mahimahi
#: trace's milliseconds) batches too, but only what a slot carries: a few packets each millisecond
WIFI_FULL_FRAMES = 32


WIFI_AGGR_MS = 4.096


#: the batches that tell a full aggregate: those at or above this quantile of the train's batch sizes. An airtime
#: AP at MCS 13 (campaign seed 28, path 5) delivered a 200-packet train as 1, 1, 1, 10, 8, then four aggregates of
#: 32 and a remainder of 19: the median (19) was the ramp's and the remainder's, the upper quartile (32) the
#: backlog's; a slotted link's one merged batch (a pause of the host: several slots in one) moves neither
WIFI_BACKLOG_QUANTILE = 75


#: the backoff before a transmission is uniform over 0..CWmin slots (15 x 9 us): a period's overhead lies within
#: half that spread of the mean (:data:`TXOP_OVERHEAD_MS`), and so does the airtime read from it
BACKOFF_HALF_SPREAD_MS = 0.0675


#: the quantile of the backlog's periods (per packet) that the PHY rate is read from: the lower quartile. A period
#: holds its aggregate's airtime, the floor and a backoff uniform over 0..CWmin slots (crates/core/src/wifi/medium.rs);
#: on a shared medium other stations' frames (their aggregates, their TCP ACKs going up, a collision's doubled
#: backoff) lengthen some periods and shorten none, so the mean reads a PHY rate too low (campaign seed 49: 6.1-6.7 %
#: below the truth at paths 50, 61 and 75; at path 10 a batch that three aggregates made together, 4.01 ms after the
#: previous one, read it 20 % too high) and the lower quartile reads a lone period's while fewer than three in four
#: were lengthened. The lone period's lower quartile holds the floor and the backoff's lower quartile
#: (:data:`TXOP_Q1_OVERHEAD_MS`)
WIFI_PHY_QUANTILE = 25


#: the floor and the lower quartile of the backoff (uniform over 0..2 x :data:`BACKOFF_HALF_SPREAD_MS`: CWmin / 4
#: = 3.75 slots of 9 us, 33.75 us): what a period at the lower quartile of a lone station's holds beyond its
#: aggregate's data airtime
TXOP_Q1_OVERHEAD_MS = TXOP_FLOOR_MS + BACKOFF_HALF_SPREAD_MS / 2


#: a period longer than this multiple of the median held something else than our aggregate (another
#: station's transmission, a collision's backoff, a pause of the VM): left out of the PHY rate
WIFI_PERIOD_OUTLIER = 2.0


#: the fastest 802.11n PHY (MCS 31: four streams, 40 MHz, short guard interval; IEEE 802.11-2016 Table 19-41):
#: a batch that came sooner after the previous one than the floor and its packets at this rate cannot have been a
#: transmission of its own; the receiver split one delivery (a wake-up of the emulator or the host between two
#: packets of an aggregate: 130 us inside a 17-packet aggregate at MCS 5, 2026-11-26)
WIFI_PHY_MAX_MBPS = 600.0


#: mac80211's CoDel target for every station's TXQ (``ieee80211_txq_setup_flows``, Linux 6.18; the 50-ms target
#: of slow stations, ``sta_update_codel_params``, was removed in 2023): ms
WIFI_CODEL_TARGET_MS = 20.0


#: what a flow's queueing delay holds beyond the TXQ's sojourn behind mac80211's fq_codel: the driver's two
#: aggregates in the radio (ATH_AGGR_MIN_QDEPTH) and its own aggregate's airtime, each at most
#: :data:`WIFI_AGGR_MS` (the idle base RTT already holds a short aggregate): ms
WIFI_HW_QUEUE_MS = 3 * WIFI_AGGR_MS


#: the microseconds of data an aggregate's byte limit allows: ath9k stops an aggregate at the PSDU that takes
#: :data:`WIFI_AGGR_MS` at its rate (``ath_max_framelen(4096, ...)``; crates/core/src/wifi/airtime.rs
#: ``Phy::max_framelen``): whole 4-us symbols after the preamble, one stream's HT-mixed 36 us. A second stream's
#: HT-LTF adds 4 us and the short guard interval counts 3.6-us symbols (4057.2 us): their limits are lower, so the
#: least rate read with this stays a bound; the most is up to 0.1 % low for them
AGGR_DATA_US = 4096 - 36


#: the SERVICE (16) and tail (6) bits inside an aggregate's data symbols (IEEE 802.11-2016 §19.3.11; airtime.rs
#: SERVICE_TAIL_BITS)
SERVICE_TAIL_BITS = 22


#: the PHY rates an HT20 station sends at (Mbit/s): MCS 0-15, one and two streams, with the long guard interval
#: (:data:`path.HT20_MCS_MBPS`, 4-us symbols) and the short one (3.6-us symbols: 10/9 of it); IEEE 802.11-2016
#: Tables 19-27 and 19-28
HT20_RATES_MBPS = tuple(sorted(set(HT20_MCS_MBPS) | {r * 10 / 9 for r in HT20_MCS_MBPS}))


def _aggr_bytes(k: int, wire: int) -> int:
    """The PSDU of an A-MPDU of ``k`` packets of ``wire`` bytes: each subframe the packet and
    :data:`WIFI_SUBFRAME_OVERHEAD`, every one but the last padded to 4 B (ath9k's ``al`` and ``bpad``)."""
    sub = wire + WIFI_SUBFRAME_OVERHEAD
    return k * sub + (k - 1) * (-sub % 4)


def phy_from_aggregates(sizes: list, wire: int) -> tuple[float, float | None, int] | None:
    """The PHY rates (Mbit/s) a backlogged access point's aggregates allow: (least, most or None, packets a
    full aggregate), or None where the batches show no full aggregate.

    A backlogged AP sends full aggregates, and ath9k stops one at the PSDU that takes :data:`WIFI_AGGR_MS` at
    its rate, or at :data:`WIFI_FULL_FRAMES` subframes. So an aggregate of ``k`` packets fitted in
    :data:`AGGR_DATA_US` of data symbols: the rate is at least ``k`` subframes' bits (and the SERVICE and tail
    bits) over that time; and where ``k`` is below the frame cap, the ``k + 1``-th did not fit: the rate is
    below ``k + 1`` subframes' bits over it. The full aggregate's size is the train's most frequent batch of at
    least :data:`WIFI_BATCH_PACKETS` packets, seen at least twice: the backlog's batches are alike (campaign
    seeds 53-54's hops: 2, 6, 8, 12, 21, 25 and 32 packets at 6.5, 19.5, 26, 39, 65, 78 and 104 Mbit/s), the
    ramp's, a remainder and two aggregates a receiver took together are not. Unlike the periods, which other
    stations' transmissions lengthen, the aggregate's size is what this station's own transmissions hold."""
    full = [k for k in sizes if k >= WIFI_BATCH_PACKETS]
    if not full:
        return None
    ks, counts = np.unique(full, return_counts=True)
    best = int(np.max(counts))
    if best < 2:
        return None
    k = int(max(kk for kk, c in zip(ks, counts) if c == best))
    lo = (8 * _aggr_bytes(k, wire) + SERVICE_TAIL_BITS) / AGGR_DATA_US
    hi = (8 * _aggr_bytes(k + 1, wire) + SERVICE_TAIL_BITS) / AGGR_DATA_US if k < WIFI_FULL_FRAMES else None
    return lo, hi, k


def _subframe_ms(wire: int, phy_mbps: float) -> float:
    """The airtime (ms) of one A-MPDU subframe: the IP packet and :data:`WIFI_SUBFRAME_OVERHEAD` at the PHY rate."""
    return (wire + WIFI_SUBFRAME_OVERHEAD) * 8 / (phy_mbps * 1e3)


def _rejoin_split_batches(sizes: list, periods: list, wire: int) -> tuple[list, list]:
    """The train's batches with those a receiver split joined again: a batch
    whose period (from the previous batch's first arrival) is shorter than
    the shortest transmission of its packets (:data:`TXOP_FLOOR_MS` and its
    subframes at :data:`WIFI_PHY_MAX_MBPS`) belongs to the previous one; the
    joined batch's period to the next runs from its first part's start."""
    s, p, carry = [sizes[0]], [], 0.0
    for k, period in zip(sizes[1:], periods):
        if period < TXOP_FLOOR_MS + k * _subframe_ms(wire, WIFI_PHY_MAX_MBPS):
            s[-1] += k
            carry += period
        else:
            s.append(k)
            p.append(period + carry)
            carry = 0.0
    return s, p


def _phy_mbps(sizes: list, periods: list, wire: int, p50: float, k_full: float) -> float | None:
    """The PHY rate (Mbit/s) from the periods that ended the backlog's batches (``k_full`` packets or more;
    others where none did), those beyond :data:`WIFI_PERIOD_OUTLIER` x the median ``p50`` left out: the lower
    quartile (:data:`WIFI_PHY_QUANTILE`) of their airtime per packet (the period less
    :data:`TXOP_Q1_OVERHEAD_MS`, over its packets), a subframe's bits over it. None: no period left airtime."""
    def per_packet(least: float) -> list:
        return [(p - TXOP_Q1_OVERHEAD_MS) / k for k, p in zip(sizes[1:], periods)
                if k >= least and TXOP_Q1_OVERHEAD_MS < p <= WIFI_PERIOD_OUTLIER * p50]
    air = per_packet(k_full) or per_packet(1)
    if not air:
        return None
    return (wire + WIFI_SUBFRAME_OVERHEAD) * 8 / float(np.percentile(air, WIFI_PHY_QUANTILE)) / 1e3


def wifi_hop(train: dict, shared: bool = False) -> tuple[float | None, str]:
    """Whether a packet train crossed a WiFi hop (an aggregating MAC): (its
    PHY rate in Mbit/s, or None where the train shows a wired port; why).

    The train's batches (``train["batches"]``): a median batch of at least
    :data:`WIFI_BATCH_PACKETS` packets whose median period is no shorter than
    an 802.11n transmission (:data:`TXOP_FLOOR_MS`) and that is a full
    aggregate (:data:`WIFI_FULL_FRAMES` packets, or within one subframe and
    half the backoff's spread of :data:`WIFI_AGGR_MS` of airtime), once the
    batches a receiver split are joined (:func:`_rejoin_split_batches`). The PHY rate: each
    period holds one transmission of the batch that ends it, so a subframe's
    bits (IP packet + :data:`WIFI_SUBFRAME_OVERHEAD`) over the lower quartile
    of the backlog's airtime per packet (:func:`_phy_mbps`: what other
    stations' frames on a shared medium do not lengthen), periods beyond
    :data:`WIFI_PERIOD_OUTLIER` x the median left out (another station's
    aggregate, a pause). ``shared``: other stations held the medium (the idle
    probes' wait, measure._wifi_train): where the periods read less than the
    aggregates' size allows (more than three in four lengthened), that bounds
    the rate (:func:`phy_from_aggregates`), and an HT20 rate within it is read. Only there: the bound is ath9k's 4-ms
    limit (the model's), and a lone station behind a driver whose limit is
    longer (802.11's 5.484-ms PPDU) would read above its rate by it."""
    b = train.get("batches") or {}
    sizes, periods = b.get("sizes") or [], b.get("periods_ms") or []
    if len(periods) < 2 or b.get("period_ms_p50") is None:
        return None, f"the train arrived in {len(sizes)} batch(es): too few to tell a WiFi hop"
    p50, k50 = b["period_ms_p50"], b["packets_p50"]
    if k50 < WIFI_BATCH_PACKETS:
        return None, f"the train's packets arrived one at a time (median batch {k50:g}): a wired port's spacing"
    if p50 < TXOP_FLOOR_MS:
        return None, (f"the train arrived in batches of {k50:g} packets {p50 * 1e3:.0f} us apart, shorter than any 802.11 "
                      f"transmission ({TXOP_FLOOR_MS * 1e3:.0f} us): the receiver's batching, not a WiFi hop")
    wire = train.get("wire_bytes", WIRE_SEGMENT)
    sizes, periods = _rejoin_split_batches(sizes, periods, wire)
    if not periods:
        return None, "the train's batches came too close together to be transmissions of their own"
    p50, k50 = float(np.median(periods)), float(np.median(sizes))
    # the backlog's batches (WIFI_BACKLOG_QUANTILE): their size, and the median period that ended them
    k_full = float(np.percentile(sizes, WIFI_BACKLOG_QUANTILE))
    phy = _phy_mbps(sizes, periods, wire, p50, k_full)
    if phy is None:
        return None, "the train's batches left no airtime to read a PHY rate from"
    agg, lengthened = phy_from_aggregates(sizes, wire) if shared else None, ""
    if agg is not None and phy < agg[0]:
        # the periods were lengthened (other stations' transmissions between ours): the aggregates' size bounds
        # the rate from below, and below the frame cap from above; of the HT20 rates within, their median (the
        # least where no cap bounds it from above), else the middle of the bounds (campaign seed 54 path 48, an
        # airtime AP at 65 Mbit/s beside two busy stations: periods 24.5, aggregates of 21: 63.9-66.9, MCS 7's 65)
        lo, hi, k = agg
        rates = [r for r in HT20_RATES_MBPS if lo <= r and (hi is None or r < hi)]
        lengthened = (f" (its periods read {phy:.3g}, but aggregates of {k} packets need at least {lo:.3g} Mbit/s "
                      f"to fit in {WIFI_AGGR_MS:g} ms{f', and one more would have fitted from {hi:.3g}' if hi else ''}: "
                      f"other stations' transmissions lengthened the periods"
                      f"{'; the HT20 rates within: ' + ', '.join(f'{r:.3g}' for r in rates) if rates else ''})")
        if rates:
            phy = float(np.median(rates)) if hi is not None else rates[0]
        else:
            phy = (lo + hi) / 2 if hi is not None else lo
    subframe_ms = _subframe_ms(wire, phy)
    p_full = float(np.median([p for k, p in zip(sizes[1:], periods) if k >= k_full] or [p50]))
    if k_full < WIFI_FULL_FRAMES and p_full - TXOP_OVERHEAD_MS < WIFI_AGGR_MS - subframe_ms - BACKOFF_HALF_SPREAD_MS:
        return None, (f"the train arrived in batches of {k50:g} packets every {p50:.3g} ms (its largest quarter "
                      f"{k_full:g} packets every {p_full:.3g} ms): not the full aggregates a backlogged access point "
                      f"sends ({WIFI_FULL_FRAMES} subframes or {WIFI_AGGR_MS:g} ms), but what a slotted link carries "
                      f"a slot (a cellular TTI, a capacity trace's milliseconds)")
    return phy, (f"the train arrived in batches of {k50:g} packets (largest {b.get('packets_max')}) every "
                 f"{p50:.3g} ms, as an 802.11 aggregate MAC hands them over: a WiFi hop at a PHY rate of ~{phy:.3g} "
                 f"Mbit/s{lengthened}")


def wifi_design(flow_q95_ms: float, dropped: bool, base_rtt_ms: float,
                flow_q50_ms: float | None = None) -> tuple[str, str]:
    """The access point's design behind a WiFi hop, from the queue the
    loss-based flows sat in (their queueing p95 and p50, ms), whether they
    lost segments, and the base RTT: (``legacy`` or ``airtime``, why).

    mac80211's per-station fq_codel (``fq``, Linux 4.9; ``airtime`` adds
    airtime fairness, 4.11) drops once the queue has stood above its 20-ms
    target for an interval (:data:`CODEL_INTERVAL_MS`), and the senders hear
    of it a round trip later: a queue that grows as fast as it drains (slow
    start sends twice what the link carries) stands at most about an
    interval and a base RTT. A legacy AP's qdisc and driver FIFO (1000 + 123
    packets: 135 ms at 100 Mbit/s, the most a 130-Mbit/s HT20 station
    delivers, 2.6 s at 5 Mbit/s) fill beyond that before they drop. A fill
    too short to fill them (a ``--quick`` one: 140-200 ms of a 337-ms FIFO at
    MCS 5, no loss, 2026-11-26) still tells them apart where it lost nothing:
    a queue whose median stood above CoDel's target and the radio's
    aggregates (:data:`WIFI_CODEL_TARGET_MS` + :data:`WIFI_HW_QUEUE_MS`) stood
    there for half the phase, longer than an interval, and CoDel would have
    dropped. Where they lost segments, a median more than an interval above
    that level tells them apart at any RTT: a sojourn that stays above the
    target for an interval sets CoDel dropping, at a rate that grows while it
    stays (interval / sqrt(n)), and a loss-based flow cuts its window within a
    round trip of each loss, so under fq_codel the queue cannot stand that
    high for half of the phase's second half (many round trips). Measured: the
    model's 4 CUBIC flows behind the airtime design, 15 s, RTT 20-500 ms, PHY
    13-150 Mbit/s: the median at most 47 ms (a 1-BDP legacy FIFO's 145-562 ms
    from 150 ms up); the kernel's through the emulator on the campaigns' 20
    fq/airtime hops (seeds 33-49): at most 62 ms (MCS 0 beside another
    station's download); two legacy hops read airtime before it (rank 46 path
    1, 146 ms at 303 ms; seed 49 path 20, 242 ms at 338 ms). Otherwise (a FIFO shorter than the interval and the RTT on a
    fast and long path, flows that never stood in it) a FIFO cannot be told
    from fq_codel: the note says so. A sparse probe does not tell them
    apart: behind the hardware's two aggregates and the shared medium it
    waits about as long as the flows under either (the model and ath9k's
    figures alike, docs/wifi.md). One station cannot tell ``fq`` from
    ``airtime``: ``airtime`` is taken, the default since 4.11."""
    bound = CODEL_INTERVAL_MS + base_rtt_ms
    if flow_q95_ms > bound:
        return "legacy", (f"the flows' queue stood at {flow_q95_ms:.3g} ms (p95), beyond what CoDel lets stand "
                          f"(its {CODEL_INTERVAL_MS:g}-ms interval and a {base_rtt_ms:.3g}-ms round trip): a FIFO, the "
                          f"qdisc above the driver's (legacy, before Linux 4.9)")
    standing = WIFI_CODEL_TARGET_MS + WIFI_HW_QUEUE_MS
    if not dropped and flow_q50_ms is not None and flow_q50_ms > standing:
        return "legacy", (f"the flows lost nothing with their queue's median at {flow_q50_ms:.3g} ms, above CoDel's "
                          f"{WIFI_CODEL_TARGET_MS:g}-ms target and the radio's aggregates ({standing:.3g} ms) for half "
                          f"the phase, longer than its {CODEL_INTERVAL_MS:g}-ms interval, where mac80211's fq_codel "
                          f"would have dropped: a FIFO, the qdisc above the driver's (legacy, before Linux 4.9)")
    if dropped and flow_q50_ms is not None and flow_q50_ms > standing + CODEL_INTERVAL_MS:
        return "legacy", (f"the flows' queue stood at {flow_q50_ms:.3g} ms for half the phase (median), above "
                          f"{standing + CODEL_INTERVAL_MS:.3g} ms: more than an interval ({CODEL_INTERVAL_MS:g} ms) "
                          f"above what CoDel lets stand ({standing:.3g} ms): "
                          f"mac80211's fq_codel would have been dropping, ever faster, all that time, which the flows' "
                          f"windows (cut by each loss) cannot outlast: a FIFO, the qdisc above the driver's (legacy, "
                          f"before Linux 4.9)")
    how = "lost segments" if dropped else "lost nothing"
    return "airtime", (f"the flows {how} with their queue at {flow_q95_ms:.3g} ms (p95), within CoDel's "
                       f"{CODEL_INTERVAL_MS:g}-ms interval and a round trip: mac80211's per-station fq_codel (fq, or "
                       f"airtime since Linux 4.11: one station cannot tell them apart; airtime taken; a legacy FIFO "
                       f"shorter than {bound:.3g} ms cannot be excluded)")


def up_through_the_hop(up: dict, down: dict) -> None:
    """The up direction ``up`` of a path whose down direction ``down`` read a
    WiFi hop (``limiter`` ``wifi``, its ``wifi`` figures from the down idle
    train; the WiFi train is the down one alone). A station's uplink crosses the same medium,
    through the same design (docs/wifi.md: each station's own uplink uses the
    AP's design with a single destination), at the station's own PHY rate, and
    the other way carries the TCP ACKs as the uplink does for a download: the
    same load (the same flows, control and RTT) gets the same rate through it
    each way, within the rate phases' run-to-run spread
    (:data:`classify.RATE_SPREAD`; the model, 4 CUBIC flows each way through
    a lone station's hop, legacy / fq / airtime at MCS 2, 7, 12 and 10, 60,
    250 ms: up / down 0.972-1.038, 27 of 27 within it; the kernel on the
    campaigns' lone hops: 24 of 25). So where the up flows delivered at least
    (1 - RATE_SPREAD) x what the down flows did in the same phase, the hop held
    them too (a line behind it slower up would have held them lower; one as
    fast limits alike): the direction becomes ``wifi``, the down's hop, its
    queue reading in the note. The buffer stays the one read (the station's
    own uplink queue: the legacy design's FIFO, or what mac80211's fq_codel
    let stand). Below that the reading stays the queue's (a slower line up:
    the model's up flows behind a wired line at 0.5, 0.9, 0.97 x a 45.7-Mbit/s
    hop got 0.48, 0.85, 0.92 x the down's). Not where the down direction saw
    other stations on the medium (``wifi.shared``): their traffic contends
    with a station's uplink as a node of its own, not inside the AP's queue,
    so its share differs each way (the model beside 1-2 busy stations: up /
    down 0.79-1.18), and a line slower than the station's up share but faster
    than its down share would read as the hop. Nothing either where the down
    is not a WiFi hop or the two phases differ."""
    hop = down.get("wifi")
    ev_u, ev_d = up.get("evidence") or {}, down.get("evidence") or {}
    if (down.get("limiter") != "wifi" or not hop or hop.get("shared") or up.get("limiter") == "wifi"
            or ev_u.get("phase") != ev_d.get("phase") or up.get("load_cc") != down.get("load_cc")
            or not ev_u.get("rate_mbps") or not ev_d.get("rate_mbps")):
        return
    ratio = ev_u["rate_mbps"] / ev_d["rate_mbps"]
    said = (f"the up flows got {ev_u['rate_mbps']:.4g} Mbit/s, {ratio:.2f} x the down flows' {ev_d['rate_mbps']:.4g} in "
            f"the same {ev_u.get('phase')} phase")
    if ratio < 1 - RATE_SPREAD:
        up["wifi_note"] = (f"{said}: less than the {1 - RATE_SPREAD:.2f} a WiFi hop gives both ways, so the down "
                           f"direction's hop is not read up (a slower line up, or the medium shared unlike down)")
        return
    queue = up["limiter"]
    up.update(limiter="wifi", wifi={"phy_mbps": hop.get("phy_mbps"), "mac": hop.get("mac"), "read": "down"},
              limiter_alternatives=None, aqm_qdisc=None,
              limiter_note=(f"the WiFi hop the down direction read ({hop.get('mac')}, PHY ~{hop.get('phy_mbps') or 0:.3g} "
                            f"Mbit/s): {said}, at least the {1 - RATE_SPREAD:.2f} one medium gives both ways (no "
                            f"slower line behind it up); its queue read as {queue}"))


def front_hop(spread_ms: float | None, first_hop: str | None, down_mbps: float) -> tuple[dict | None, str]:
    """A WiFi hop in front of a wired bottleneck (the measuring host on a station, the access point's line the
    path): ``({"mac", "phy_mbps"}, why)`` or ``(None, why)``. ``first_hop``: what this host's interface towards the
    server is (:func:`measure.first_hop_kind`: ``"wifi"``, ``"wired"``, or None where it is virtual — a namespace's
    veth or TUN, a container's — or not read); where it is none of those the idle probes tell, their median above
    their least (``spread_ms``) by :data:`WIFI_ACCESS_SPREAD_MS` to :data:`WIFI_ACCESS_SPREAD_MAX_MS`: two channel
    accesses' backoffs. The hop's
    design is taken as ``airtime`` (mac80211's default since Linux 4.11, as for a lone station, :func:`wifi_design`)
    and its PHY rate as :data:`FRONT_PHY_MBPS`, which nothing here reads."""
    phy = max(FRONT_PHY_MBPS, WIFI_FRONT_PHY_OVER * down_mbps)
    if first_hop == "wired":
        return None, "this host's interface towards the server is a wired one"
    if first_hop == "wifi":
        return {"mac": "airtime", "phy_mbps": phy}, ("this host's interface towards the server is a wireless one: a "
                                                     f"WiFi hop in front of the line (airtime, PHY ~{phy:.3g} Mbit/s: "
                                                     f"taken, not read)")
    if spread_ms is None or spread_ms < WIFI_ACCESS_SPREAD_MS:
        return None, (f"the idle probes' median lies {spread_ms or 0:.3g} ms above their least, less than the "
                      f"{WIFI_ACCESS_SPREAD_MS:g} ms two WiFi channel accesses' backoffs add: no WiFi hop in front")
    if spread_ms > WIFI_ACCESS_SPREAD_MAX_MS:
        return None, (f"the idle probes' median lies {spread_ms:.3g} ms above their least, more than two WiFi channel "
                      f"accesses' backoffs add ({WIFI_ACCESS_SPREAD_MAX_MS:g} ms): they waited for something else (a "
                      f"capacity's slots, a queue); no WiFi hop in front is read")
    return {"mac": "airtime", "phy_mbps": phy}, (
        f"the idle probes' median lies {spread_ms:.3g} ms above their least, at least the {WIFI_ACCESS_SPREAD_MS:g} ms "
        f"two WiFi channel accesses' backoffs add (a wired path's spread is its hosts' timing): a WiFi hop in front of "
        f"the line (airtime, PHY ~{phy:.3g} Mbit/s: taken, not read)")


#: The access point's designs that queue each station apart (mac80211's per-station TXQs, fq and airtime): there a
#: sparse probe's reply waits only for the turns of the other stations' aggregates, which the twin's MAC models. A
#: legacy AP's one FIFO holds the others' packets too, a standing queue their windows set, which the twin's others
#: (at its base RTT, their PHY rate not seen) do not reproduce: the model's least wait there read 36.8 and 124.4 ms
#: where the measured least stood 25.0 and 0.4 ms above the truth (seed 143 path 26, seed 146 path 46)
PER_STATION_MACS = ("fq", "airtime")

#: the twin's other stations download for this many of its base round trips, and at least OTHERS_RAMP_S, before its
#: probes are read: their slow starts have filled their share of the medium by then (the measurement's idle probes
#: ran seconds after the other stations began)
OTHERS_RAMP_RTTS, OTHERS_RAMP_S = 20, 2.0

#: the twin's runs the least is read from (seeds 1..N), their median taken: one run's least is one draw of where its
#: probes fell in the others' turns
OTHERS_WAIT_SEEDS = 3


def others_least_wait_ms(path, probes: int, interval_ms: float) -> float:
    """What a sparse probe's least round trip waits, beside the twin's other busy stations, for their aggregates'
    turns on the medium (ms): the twin ``path`` (its hop, its :attr:`~.path.Path.wifi_others` backlogged
    downloads at its base RTT) run with a probe every ``interval_ms`` from the measuring station, the least of
    ``probes`` of them (as many as the measurement's idle probes it is taken off: the least of more samples lies
    lower) after the others' ramp (:data:`OTHERS_RAMP_RTTS`), less the twin's base RTT; the median over
    :data:`OTHERS_WAIT_SEEDS` seeds, at least 0. An idle probe beside busy stations never finds the medium free both
    ways: the measured least of 300 idle probes stood 1.3-3.6 ms above the truth's base RTT on five fq and airtime
    hops of campaign seeds 138, 143, 146 and 154 (1-2 other stations), and this wait came within 0.07-1.37 ms of
    that excess on them (docs/advise.md "Other stations on the medium")."""
    import bloatlab

    from .path import WIFI_STATION

    ramp = max(OTHERS_RAMP_S, OTHERS_RAMP_RTTS * path.base_rtt_ms / 1e3)
    span = max(probes, 1) * interval_ms / 1e3
    waits = []
    for seed in range(1, OTHERS_WAIT_SEEDS + 1):
        doc = {"name": "others-wait", "duration": f"{ramp + span:.6g}s", "seed": seed, "wifi": path.wifi_doc(),
               "flow": path.wifi_others_flows(),
               "probe": [{"name": "idle", "interval": f"{interval_ms:g}ms", "station": WIFI_STATION}]}
        p = bloatlab.run(doc).probes
        x = p[(p["t"] >= ramp)]["rtt_ms"].dropna()
        if len(x):
            waits.append(float(x.min()) - path.base_rtt_ms)
    return max(float(np.median(waits)), 0.0) if waits else 0.0
