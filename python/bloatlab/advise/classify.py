"""The limiter from the loaded phases' evidence (:func:`classify`), and what the evidence cannot tell
apart (:func:`alternatives`, :func:`ambiguity`, :func:`undropped_alternatives`); CAKE's first signal
(:func:`cobalt_first_signal`). docs/advise.md has each rule's derivation.
"""

from __future__ import annotations

from .physics import CUBIC_BETA, MSS, NOISE_MS, PROBE_WIRE, WIRE_SEGMENT, _significant, ack_queue_ms, ack_tail_ms, ack_wait_ms, burst_floor_ms, cubic_return_s, mathis_loss, probe_mbps
from .plan import INITIAL_WINDOW, UNSATURATED
from .isolation import LOAD_PROBE_INTERVAL_MS
from .evidence import WIRE_PER_PAYLOAD

#: flow isolation: under a flow-isolating queue (fq_codel, CAKE: DRR over per-flow queues, a new sparse flow
#: served first) the probe waits about one packet per active flow while the bulk flows wait behind their own
#: backlog; under one shared queue the probe waits as they do (ratio ~1: measured 3.85 of 3.92 ms, 8.9 of 7.9 ms).
#: Isolation is read where the probe waits less than half of what the flows wait: the middle between the two
#: mechanisms' ratios (measured isolated: 0.07-0.2, fq_codel at 10-50 Mbit/s, docs/advise.md)
ISOLATION = 0.5


#: a policer's loss is not a congestion signal sized to the window: "far above" what a signalling queue drops
#: (Mathis) is an order of magnitude. Measured: fq_codel at 10 / 50 / 3.75 Mbit/s drops 1.3 / 1.6 / 3.3 x
#: Mathis's rate; a 430 Mbit/s policer with a 2.7-ms bucket at 312 ms 10^4 x (its CUBIC flows' p95 queueing,
#: slow start's bursts at the port, passed the burst floor)
FAR_ABOVE_MATHIS = 10.0


#: the rate phases' run-to-run spread (the fill's and BBR's readings of one saturated link differ by up to this,
#: :data:`UNSATURATED`'s note): a fill that delivered less than the direction's rate by more than it left its
#: bottleneck idle part of the time, and its flows' windows arrived as bursts (:func:`physics.ack_tail_ms`)
RATE_SPREAD = 0.05


#: CoDel's interval (RFC 8289; sch_codel's default): a train shorter than it at the rate cannot tell CoDel from PIE
CODEL_INTERVAL_MS = 100.0


#: Flow isolation is fq_codel or CAKE; their AQMs end a slow start differently (docs/advise.md, "CAKE or
#: fq_codel"). CoDel (RFC 8289; fq_codel per flow queue) signals only once a queue's sojourn has stood above its
#: target (5 ms) for a whole interval (:data:`CODEL_INTERVAL_MS`), so a flow's first loss needs a window of at
#: least its share of the rate x (min(RTT, interval) + target): a standing queue above target for an interval
#: (RTT <= interval), or a slow-start burst that keeps it above target that long (RTT > interval). COBALT, CAKE's
#: CoDel (sch_cake.c, cobalt_should_drop), starts a fresh flow queue with rec_inv_sqrt = 0: its first dropping
#: episode schedules the signal at once and drops the second packet over target in a row — a slow start's burst
#: queue crossing 5 ms, at a window of a few times target x the rate (kernel and model, 312 Mbit/s at 112 ms:
#: 0.15-0.25 of the flow's BDP). Where the loss-based fill's flows lost their first segment at a window below
#: CoDel's least, the queue is COBALT's. The window is read from TCP_INFO samples dt apart: the largest sampled
#: before the first retransmission is at least the window at the drop less what a slow start adds within dt
#: (it at most doubles a round trip), so the bound is CoDel's least / 2^(dt / RTT).
CODEL_TARGET_MS = 5.0


#: ... counted beyond what the idle path's random loss explains (at three standard deviations, _significant). No
#: handful beyond that: under CoDel no flow loses below the bound but to random loss (the model's fq_codel at 8-312
#: Mbit/s and 20-200 ms: none of 120 flows below 1.09 of its fair BDP; the kernel's at 312 Mbit/s and 112 ms: none
#: below 1.34), while behind CAKE a fresh queue's first episode can also end CoDel's way (one packet over target,
#: then one under it: its count decays to 0 and rec_inv_sqrt becomes 1), so that as few as one of the four
#: flows shows it (the model at 312 Mbit/s: 1 of 4)
EARLY_LOSS_HANDFUL = 0


def median_isolated(probe_q95: float, flow_q50: float, rate_mbps: float, flows: int = 4, rtt_ms: float | None = None,
                    loss_rate_mbps: float | None = None) -> bool:
    """:func:`classify`'s rule 1 on its own: the flows' *median* wait exceeds the probe's p95 by more than the noise
    and their receivers' ACK wait (:func:`ack_wait_ms`), and twice over, in a phase whose bottleneck did not idle
    (``loss_rate_mbps`` x :data:`UNSATURATED` above ``rate_mbps``): a backlog of each flow's own that a sparse probe
    skips (flow isolation)."""
    phase = loss_rate_mbps or rate_mbps
    idle = phase * UNSATURATED <= rate_mbps
    ack = ack_wait_ms(phase, flows, rtt_ms, idle) if rtt_ms is not None else 0.0
    return not idle and flow_q50 - ack - probe_q95 >= NOISE_MS and probe_q95 < ISOLATION * flow_q50


def classify(probe_q95: float, flow_q50: float, flow_q95: float, dropped: bool, rate_mbps: float, flows: int = 4,
             loss: float = 0.0, rtt_ms: float | None = None, loss_rate_mbps: float | None = None,
             policer: bool = True) -> str:
    """What enforces the rate, from the queue a sparse probe sees (p95 above
    the base RTT, ms), the queue the bulk flows sit in (p50 and p95 above the
    base RTT, ms, from their smoothed RTT), whether the flows lost segments
    beyond what the idle path's random loss explains (``dropped``; ``loss``:
    their loss rate beyond it), and the measured rate and number of flows,
    which set the wait a path without a standing queue still shows, ``floor``
    = :func:`burst_floor_ms` (docs/advise.md). In order:

    1. ``aqm`` where the flows' *median* wait exceeds the probe's p95 by more
       than the noise and the receiver's ACK wait (:func:`ack_wait_ms`: the
       delayed ACK and the wait for a pair's second segment, in every flow
       sample and in no probe), and twice over: a standing backlog the
       probe skips — flow isolation (fq_codel, CAKE: DRR over per-flow
       queues serves a sparse flow first), which no shared queue and no
       policer gives. Not where the phase the evidence comes from delivered
       ``loss_rate_mbps`` x :data:`UNSATURATED` <= ``rate_mbps`` (``idle``):
       its bottleneck idled, so no backlog stood in it (DRR, like any
       work-conserving queue, serves while one does), and its flows' excess
       is their ACKs' (a CUBIC fill collapsed behind a policer);
    2. ``policer``: drops while the probe does not queue (p95 below
       ``floor``) and either the bottleneck idled (``idle``), the flows' p95
       stays below ``floor`` too, or they
       lose more than :data:`FAR_ABOVE_MATHIS` × what a signalling queue
       would drop (:func:`mathis_loss` at the rate they had while they lost,
       ``loss_rate_mbps``, default ``rate_mbps``, and their RTT ``rtt_ms``)
       without a standing queue (median below ``floor``): losses not preceded
       by a growing RTT (Flach et al., SIGCOMM 2016). A FIFO shallower than
       ``floor`` or an AQM holding its queue below it cannot be told from it
       by delays and drops (and acts as one): :func:`ambiguity` says so, and
       :func:`alternatives` states it as data the campaign can check;
    3. ``aqm`` where the flows' p95 exceeds the probe's by more than the
       noise and the ACK wait, and twice over (the same isolation, seen in
       the tail). Where the phase delivered less than ``rate_mbps`` by more
       than :data:`RATE_SPREAD` (its bottleneck idled part of the time, so
       the flows' windows came as bursts), the tail's ACK wait is
       :func:`ack_tail_ms`, one delayed ACK's lift of the smoothed RTT, not
       the mean's: a single-queue PIE at 260 Mbit/s and 348 ms (ranked seed
       50 path 6, the fill at 223) showed the flows' p95 at 8.33 ms and the
       probe's at 3.05 with no queue of the flows' own, and read as CAKE;
    4. ``fifo`` otherwise: the probe waits behind the flows' queue. A
       single-queue AQM (CoDel, PIE) reads ``fifo`` too — one queue all flows
       share, at the depth the AQM holds, which is what its twin models.

    The flows' figures are their queue plus their ACKs' wait: less the
    bound on that wait they are a lower bound on the queue, which is what
    the claim of a backlog (isolation) needs; the claim of none (the
    policer's floor) keeps them as read, an upper bound. No ACK wait is
    taken off without ``rtt_ms`` (it sets the timer's ceiling).

    ``policer=False``: a packet train has excluded a policer
    (``trains._not_a_policer``: no faster port), so rule 2 is passed over and
    the evidence read by rules 3 and 4 as it stands."""
    floor = burst_floor_ms(rate_mbps, flows)
    phase = loss_rate_mbps or rate_mbps
    idle = phase * UNSATURATED <= rate_mbps
    ack = ack_wait_ms(phase, flows, rtt_ms, idle) if rtt_ms is not None else 0.0

    bursty = rtt_ms is not None and phase * (1 + RATE_SPREAD) < rate_mbps
    tail_ack = max(ack, ack_tail_ms(rtt_ms)) if bursty else ack

    def isolated(flow_q, wait):
        return not idle and flow_q - wait - probe_q95 >= NOISE_MS and probe_q95 < ISOLATION * flow_q

    if median_isolated(probe_q95, flow_q50, rate_mbps, flows, rtt_ms, loss_rate_mbps):
        return "aqm"
    if policer and dropped and probe_q95 < floor:
        far = rtt_ms is not None and loss > FAR_ABOVE_MATHIS * mathis_loss(phase, flows, rtt_ms)
        if idle or flow_q95 < floor or (far and flow_q50 < floor):
            return "policer"
    if isolated(flow_q95, tail_ack):
        return "aqm"
    return "fifo"


def unreturned_depth_ms(first: dict, rate_mbps: float, flows: int, base_ms: float, phase_s: float | None) -> tuple[float | None, str]:
    """Where a loss-based fill's flows could not grow back to the windows of
    their first losses before the phase ended (:func:`cubic_return_s`, the
    median flow from its first loss; ``first``: :func:`first_losses`), the
    queue the flows stood in after it shows no depth of what dropped them: a
    loss-based flow stands at a queue's depth only where it comes back to it.
    What still bounds that depth (a FIFO's, or an AQM's target: either had
    at least that much queued at its first drop) is the backoff: the flows
    lost at a window of at least the BDP and the depth D, and after one
    multiplicative decrease held beta (BDP + D), which stood above the BDP by
    less than the floor (their p95 below it, the reading this qualifies): D <
    BDP (1 - beta) / beta + floor / beta, in ms at the rate RTT (1 - beta) /
    beta + floor / beta. Returns (that bound, why) or (None, why) where the
    flows came back (or nothing tells)."""
    fl = sorted(first.get("flows") or [], key=lambda f: f["cwnd_bytes"])
    if not fl or phase_s is None:
        return None, "no first losses of a loss-based fill to read"
    mid = fl[len(fl) // 2]
    back = mid["t_s"] + cubic_return_s(mid["cwnd_bytes"], base_ms)
    if back <= phase_s:
        return None, (f"the flows' windows grew back to their first losses ({mid['cwnd_bytes'] / 1e3:.3g} KB, the median) "
                      f"{back:.2g} s in, within the {phase_s:.2g}-s phase")
    floor = burst_floor_ms(rate_mbps, flows)
    bound = base_ms * (1 - CUBIC_BETA) / CUBIC_BETA + floor / CUBIC_BETA
    return bound, (f"the flows' windows could not grow back to their first losses ({mid['cwnd_bytes'] / 1e3:.3g} KB, the "
                   f"median, at {mid['t_s']:.2g} s) before the {phase_s:.2g}-s phase ended (CUBIC: {back:.2g} s), so the "
                   f"queue they stood in after shows no depth of what dropped them; their backoff bounds it below "
                   f"{bound:.3g} ms (a window of {CUBIC_BETA:.2f} x (the BDP and the depth) stood less than the "
                   f"{floor:.2g}-ms floor above the BDP)")


def fifo_check(slow_start: dict, window: dict, window_dropped: bool, rate_mbps: float, flows: int, base_ms: float,
               idle_loss: float = 0.0, timed_out: bool = False, reverse_mbps: float | None = None,
               moved: str | None = None) -> dict:
    """Whether a loss-based fill read as a FIFO contradicts a FIFO by its own slow start: a FIFO drops only when
    it is full, so no queue in front of it stands deeper than its depth, and every drop of its comes at that depth.
    ``slow_start``: :func:`buffer.slow_start_depth` of the fill itself (the queue its slow start reached, each
    flow's largest smoothed RTT up to a round trip after its first loss, the median over the flows, less the base
    RTT); ``window``: :func:`evidence.window_drops` of the fill's window (its largest queue ``queue_max_ms``, its
    ``retransmits``); ``window_dropped``: the window lost beyond the random loss (that same ``overflowed``);
    ``moved``: why the capacity moved between the slow start and the window (``measure.capacity_moved``), where
    nothing is compared: a queue in time is then no depth. The window's flows' queue is resolved to the burst floor (:func:`burst_floor_ms`) and the noise (:data:`NOISE_MS`):
    q = max(its largest queue, the floor) + the noise. Two readings, each the deepest FIFO the window allows:

    - **the window dropped**: a FIFO's drops there came with the queue at the depth, which the flows' smoothed
      RTTs then show (their largest queue): the FIFO is at most q deep;
    - **the window lost nothing, and the slow start overflowed** (``slow_start["overflowed"]``: more
      retransmissions than a random loss gives; on a path whose idle probes lost nothing, and where no flow was
      seen to meet a retransmission timeout, ``timed_out``: :func:`evidence.timed_out`): after a FIFO's last
      overflow the flows hold at least beta (BDP + D) in flight (each backs off by CUBIC's beta at most once a
      loss episode, and the episode began with BDP + D in flight), so they stand at least beta (BDP + D) - BDP
      above the pipe, which the window's queue bounds: D <= BDP (1 - beta) / beta + q / beta (in ms at the rate,
      the RTT for the BDP) — the backoff :func:`unreturned_depth_ms` reads, at the window's own queue.

    Where the slow start queued more than that, what held the window's flows lower drops below its own limit: a
    single-queue AQM (CoDel, PIE; a flow-isolating one reads so by :func:`classify`), whose packet limit the slow
    start met (sch_codel's and sch_pie's 1000 packets: 40 ms at 300 Mbit/s, where CoDel holds the flows near its 5-ms
    target). Through the emulator (2026-11-28): FIFOs of 0.2-3 BDP at 2-800 Mbit/s and 5-200 ms, the slow start
    at most 0.15 ms above the window's largest queue where the window dropped, 14-102 ms inside the bound where it
    did not; CoDel at 20-500 Mbit/s and PIE at 100-600 contradicted (docs/advise.md, "A FIFO its own slow start
    contradicts", with fresh seed 62). Where the slow start met its limit and the flows'
    backoff still leaves them below the pipe (the limit within BDP (1 - beta) / beta: CoDel at 372 Mbit/s and 80 ms,
    32 ms for a bound of 46) nothing tells the two apart within a fill.

    The slow start's smoothed RTTs run through its receivers' quick-ACK start and a loss's recovery, where every
    segment is ACKed, the window's mostly on delayed ACKs: the ACKs' wait at the reverse port (``reverse_mbps``,
    the other direction's port the idle path showed; beside the loaded phases' probe there),
    :func:`physics.ack_queue_ms`, is in the first and not the second, so the deepest FIFO either rule allows is read
    that much deeper; where those ACKs and the probe overload the reverse port, nothing is compared (campaign seed
    65 path 1: a FIFO 382 ms deep at 8.82 Mbit/s behind a 0.475-Mbit/s up port, the slow start 408 ms against the
    window's 394). At 80-B ACKs a segment that happens from a down rate of ~18 x the up port's (1000/50 Mbit/s).

    Returns ``{"contradicted", "slow_start_ms", "deepest_fifo_ms", "rule" ("dropped" | "backoff" | None), "why"}``."""
    q_ss = slow_start.get("queue_ms")
    out = {"contradicted": False, "slow_start_ms": q_ss, "deepest_fifo_ms": None, "rule": None, "why": None}
    if moved:
        # the capacity moved between the figures (measure.capacity_moved: why): a queue in time is no depth
        out["why"] = moved
        return out
    floor = burst_floor_ms(rate_mbps, flows)
    top = window.get("queue_max_ms")
    if q_ss is None or top is None:
        out["why"] = "the fill's samples show no slow start or no window queue to compare"
        return out
    ack = ack_queue_ms(rate_mbps, reverse_mbps, probe_mbps(LOAD_PROBE_INTERVAL_MS))
    if ack == float("inf"):
        out["why"] = (f"ACKs of every segment at {rate_mbps:.4g} Mbit/s and the probe overload the {reverse_mbps:.4g}-Mbit/s "
                      f"reverse port: their queue there enters the slow start's RTTs with no bound to hold them to")
        return out
    q = max(top, floor) + NOISE_MS
    if window_dropped:
        out.update(rule="dropped", deepest_fifo_ms=q + ack)
        seen = (f"the flows were dropped in the window with their queue at no more than {top:.3g} ms, so a FIFO there "
                f"is at most {q:.3g} ms deep (with the {floor:.2g}-ms floor and the {NOISE_MS:g}-ms noise): its drops "
                f"come only when it is full")
    elif window.get("retransmits") == 0 and slow_start.get("overflowed") and idle_loss == 0 and not timed_out:
        deepest = base_ms * (1 - CUBIC_BETA) / CUBIC_BETA + q / CUBIC_BETA
        out.update(rule="backoff", deepest_fifo_ms=deepest + ack)
        seen = (f"its flows then stood at no more than {top:.3g} ms without a loss, where after a FIFO's last overflow "
                f"they hold {CUBIC_BETA:.2f} x (the BDP and its depth) in flight: a FIFO there is at most {deepest:.3g} ms "
                f"deep (a {base_ms:.3g}-ms BDP, their queue read to {q:.3g} ms)")
    else:
        out["why"] = ("the window lost, but not beyond the random loss; or it lost nothing, but its slow start did not "
                      "overflow, the idle path lost something, or a flow met a retransmission timeout (whose slow start "
                      "again HyStart may end below the backoff): nothing to hold a FIFO's depth to")
        return out
    said = (f"the fill's slow start queued {q_ss:.3g} ms before its first losses ({slow_start.get('retransmits') or 0:.0f} "
            f"retransmissions)")
    if ack >= 0.05:
        seen += (f"; its ACKs, every segment's through the slow start, waited ~{ack:.2g} ms at the {reverse_mbps:.4g}-Mbit/s "
                 f"reverse port, which the window's did not: at most {out['deepest_fifo_ms']:.3g} ms")
    if q_ss <= out["deepest_fifo_ms"]:
        out["why"] = f"{said}; {seen}: consistent with a FIFO"
        return out
    out.update(contradicted=True, why=(f"{said}, deeper than a FIFO allows: {seen}. What held the flows lower drops "
                                       f"below its own limit, a single-queue AQM whose packet limit the slow start met"))
    return out


def bbr_stood_deeper(slow_start: dict, bbr_q50_ms: float, rate_mbps: float, flows: int, idle_loss: float = 0.0) -> dict | None:
    """Whether BBR's flows contradict a FIFO by the fill's own slow start: the contradiction of :func:`fifo_check`
    read the other way round, where the evidence is a BBR phase whose window dropped (None where nothing
    contradicts, else :func:`fifo_check`'s dict with ``rule`` ``"bbr"``).

    A FIFO drops only when it is full, so the fill's slow start was first dropped with the queue at the FIFO's
    depth (``slow_start["queue_ms"]``: :func:`buffer.slow_start_depth`, each flow's largest smoothed RTT up to a
    round trip after its first loss, where it is an overflow: more than a random loss gives), and no queue in front
    of it stands deeper. BBR does not back off on loss: where its flows were dropped while their median queue
    (``bbr_q50_ms``, resolved to the burst floor and the noise as :func:`fifo_check` resolves the window's) stood
    deeper than that, the slow start's drops came before the queue was full — a single-queue AQM's (CoDel after
    its interval above target, PIE by its probability), whose packet limit BBR then filled: CoDel at 136 Mbit/s
    and 382 ms (campaign seed 79 path 31), the slow start first dropped at 70.1 ms and BBR standing at 86.4 ms, the
    1000 packets of sch_codel's limit (89 ms); a tbf's FIFO at 220 Mbit/s and 438 ms (its path 7), 50.0 and 49.7
    ms. Only on a path whose idle probes lost nothing (a random loss ends a slow start anywhere)."""
    q_ss = slow_start.get("queue_ms")
    if q_ss is None or not slow_start.get("overflowed") or idle_loss > 0:
        return None
    floor = burst_floor_ms(rate_mbps, flows)
    stood = bbr_q50_ms - floor - NOISE_MS
    if stood <= q_ss:
        return None
    return {"contradicted": True, "rule": "bbr", "slow_start_ms": q_ss, "deepest_fifo_ms": q_ss,
            "why": (f"the fill's slow start was first dropped with its queue at {q_ss:.3g} ms "
                    f"({slow_start.get('retransmits') or 0:.0f} retransmissions), where a FIFO is full; BBR's flows, "
                    f"which do not back off on loss, were then dropped with their median queue at {bbr_q50_ms:.3g} ms "
                    f"(beyond the {floor:.2g}-ms floor and the {NOISE_MS:g}-ms noise: {stood:.3g} ms), deeper than a FIFO "
                    f"that full allows. What dropped the slow start drops below its own limit, a single-queue AQM whose "
                    f"packet limit BBR filled")}


def ambiguity(limiter: str, rate_mbps: float, flows: int, depth_ms: float | None = None) -> str | None:
    """What a verdict cannot exclude, in words (None where nothing): a policer
    reading is also what a FIFO, or an AQM's queue, shallower than the burst
    floor gives — or than ``depth_ms`` where the flows could not come back to
    their first losses' queue (:func:`unreturned_depth_ms`) — (:func:`alternatives`
    states the same as data)."""
    if limiter != "policer":
        return None
    floor = burst_floor_ms(rate_mbps, flows)
    bound = max(floor, depth_ms or 0.0)
    depth = bound / 1e3 * rate_mbps * 1e6 / 8
    why = (f"the {flows} flows' bursts and the measurement's noise" if bound == floor else
           "what the flows' backoff from their first losses leaves unseen")
    return (f"drops without a queue: a policer, or a FIFO shallower than ~{depth / 1e3:.3g} KB "
            f"({bound:.2g} ms at {rate_mbps:.3g} Mbit/s: {why}), or an "
            f"AQM whose target is below that; they act alike on these flows")


def alternatives(limiter: str, rate_mbps: float, flows: int, depth_ms: float | None = None) -> list[dict] | None:
    """What the evidence of :func:`classify` cannot tell apart from its
    verdict, as data (the words: :func:`ambiguity`): the verdict first, then
    each alternative with the condition under which it gives the same
    evidence, so that a check against a known truth (the campaign's
    ``limiter_said``) can hold the reading to it:

    - ``{"limiter": "fifo", "depth_below_ms": floor}``: a FIFO (or a tbf's
      queue) whose whole depth drains within the burst floor: its queue can
      never reach the floor, so the flows' p95 stays below it as behind a
      policer, and it drops the bursts a deeper queue would hold;
    - ``{"limiter": "aqm", "target_below_ms": floor}``: an AQM that holds
      its queue at a target below the floor (CoDel's 5 ms at a few Mbit/s,
      where four flows' bursts take tens of ms) drops those bursts too.

    Where the flows could not grow back to their first losses' queue within
    the phase (:func:`unreturned_depth_ms`), the bound is ``depth_ms``, if
    larger: their queue after it shows nothing below that.

    None where the verdict excludes the others (``fifo``, ``aqm`` by the
    rules of :func:`classify`; the packet trains add their own)."""
    if limiter != "policer":
        return None
    floor = max(burst_floor_ms(rate_mbps, flows), depth_ms or 0.0)
    return [{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": floor},
            {"limiter": "aqm", "target_below_ms": floor}]


def probe_share_exceeded(rate_mbps: float, flows: int, probe_interval_ms: float) -> bool:
    """Whether the loaded phases' probe (:data:`physics.PROBE_WIRE` bytes every ``probe_interval_ms``) sends more
    than its fair share of ``rate_mbps`` beside ``flows`` bulk flows, rate / (flows + 1): a flow-isolating queue
    (fq_codel, CAKE: DRR over per-flow queues) then serves it no sooner than a bulk flow — its own queue stands and
    grows — so the isolation :func:`classify` reads from the probe's wait against the flows' cannot show. With
    4 flows and a probe every 10 ms (73.6 kbit/s) below 0.368 Mbit/s: campaign seed 64 path 1, CAKE at 0.16 Mbit/s
    up, the probe waited 871 ms at p95 where the flows' smoothed RTT stood 427 ms above the base."""
    return probe_mbps(probe_interval_ms) * (flows + 1) > rate_mbps


def isolation_unseen(x: dict, probe_interval_ms: float) -> None:
    """A direction read ``fifo``, or a single-queue AQM (``aqm`` with ``aqm_qdisc`` codel or pie: the AQM train,
    :func:`fifo_check`), where its probe could not show flow isolation — it sent more than its share
    (:func:`probe_share_exceeded`), or its replies were lost beside the flows, whose own smoothed RTT was read in
    their place (the evidence's ``probes_lost``, :func:`evidence.probes_lost_beside`): a
    flow-isolating AQM (fq_codel, CAKE) is named beside the verdict (``limiter_alternatives``, the verdict first)
    and said in the note, and advise checks its pick on that twin too. Nothing elsewhere: a ``policer`` reading
    names an AQM below the burst floor already (:func:`alternatives`), flow isolation is the verdict itself."""
    single = x["limiter"] == "aqm" and x.get("aqm_qdisc") in ("codel", "pie")
    lost = (x.get("evidence") or {}).get("probes_lost")
    if not (x["limiter"] == "fifo" or single):
        return
    if lost is not None:
        why = (f"{lost:.0%} of the probes under load were lost beside the {x['flows']} flows, whose own smoothed RTT "
               f"was read in their place: a flow-isolating AQM (fq_codel, CAKE), which would serve a sparse probe "
               f"ahead of them, cannot be told from one shared queue")
    elif probe_share_exceeded(x["rate_mbps"], x["flows"], probe_interval_ms):
        why = (f"the probe sent more than its share of {x['rate_mbps']:.3g} Mbit/s beside {x['flows']} flows (a "
               f"{PROBE_WIRE}-B packet every {probe_interval_ms:g} ms): a flow-isolating AQM (fq_codel, CAKE) queues it "
               f"as a bulk flow, so the isolation its wait would show cannot")
    else:
        return
    verdict = {"limiter": "aqm", "kinds": [x.get("aqm_qdisc")]} if single else {"limiter": "fifo"}
    x["limiter_alternatives"] = (x.get("limiter_alternatives") or [verdict]) + [
        {"limiter": "aqm", "kinds": ["fq_codel", "cake"], "why": why}]
    x["limiter_note"] = "; ".join(n for n in (x.get("limiter_note"), why) if n)


def queue_dropped(ev: dict) -> bool:
    """Whether the flows of the evidence ``ev`` lost segments beyond the
    random loss at the queue the evidence reads (its window, the second half
    of the phase): ``ev["dropped"]`` (the whole phase's count) unless the
    phase's drops were all its ramp's (``ev["window_dropped"]`` False,
    :func:`evidence.window_dropped`: a loss-based fill whose window, with the
    power to show the phase's loss rate, lost nothing). A slow start's bursts
    (sent at twice the rate the ACKs return) overflow a FIFO shallower than
    about half its window, and CUBIC at a long RTT may then sit below the
    depth for the rest of the phase: its drops came at a queue the window
    never saw, so they are no "drops without a queue" (rule 2 of
    :func:`classify`) and no evidence that the flows' queue was the depth of
    what limits them (:func:`trains._fifo_deeper_than_the_flows`)."""
    return bool(ev.get("dropped", True)) and ev.get("window_dropped") is not False


def aqm_drops_hidden(ev: dict, idle_loss: float) -> tuple[bool, float, float]:
    """Whether a single-queue AQM's drops would hide in the path's random loss over the phase the evidence counts
    (its ``segments`` and ``retransmits``, which :func:`queue_dropped` weighs against the idle loss): (hidden, the
    fewest drops such an AQM makes there, the most the random loss's count leaves unseen). The fewest: a queue
    standing above CoDel's target through the phase's span T (s: its segments at the window's rate, which the
    ramp's slower start only shortens) — CoDel drops after an interval I (:data:`CODEL_INTERVAL_MS`) above
    target, then at I / sqrt(n) (RFC 8289's control law), so 1 + ((T - I) / 2I)^2 drops (Σ I / sqrt(k) ≈
    2 I sqrt(n)); PIE against a flow that ignores losses (the BBR fill of a lossy path) drops more as its
    probability climbs. Unseen: what :func:`physics._significant` does not count beyond the idle loss, three
    standard deviations of the random loss's count over those segments and a handful. Seed 51 path 38 (CoDel at
    521 Mbit/s, 1.5 % random loss, a BBR fill of 89134 segments, ~2.08 s): ~97 drops against 113 unseen of 1359
    random ones."""
    segs = ev.get("segments") or 0.0
    rate = ev.get("rate_mbps") or 0.0
    if not segs or rate <= 0 or idle_loss <= 0:
        return False, 0.0, 0.0
    t_s, i_s = segs * WIRE_SEGMENT * 8 / (rate * 1e6), CODEL_INTERVAL_MS / 1e3
    fewest = 1 + ((t_s - i_s) / (2 * i_s)) ** 2 if t_s > i_s else 0.0
    expected = idle_loss * segs
    unseen = 3 * (expected * (1 - idle_loss)) ** 0.5 + 3
    return fewest > 0 and fewest <= unseen, fewest, unseen


def undropped_alternatives(limiter: str, ev: dict, rate_mbps: float, flows: int,
                           idle_loss: float = 0.0) -> tuple[list[dict] | None, str | None]:
    """A ``fifo`` reading whose flows lost no more than the path's random loss
    at the queue the evidence reads (:func:`queue_dropped` False): the queue
    they stood in is what they brought, not the depth of what limits them,
    which dropped nothing at it. A FIFO at least that deep gives it (the
    verdict), and so does an AQM whose target lies above it: CoDel and PIE
    drop only while the queue's delay exceeds their target, and drops of
    theirs beyond it would have shown beyond the random loss. The queue is
    bounded below by the flows' p95 less their ACK wait (:func:`ack_wait_ms`,
    as :func:`classify` reads the phase) and the noise (:data:`NOISE_MS`): an
    AQM with a target above that is not excluded. As data: ``[{"limiter":
    "fifo"}, {"limiter": "aqm", "target_above_ms": that}]``, and the words;
    (None, None) where the reading is not such a one.

    Where the path's random loss (``idle_loss``) would hide a single-queue
    AQM's drops over the window (:func:`aqm_drops_hidden`), no drop was to be
    seen whatever the AQM's target: CoDel and PIE at any target are named
    (``{"limiter": "aqm", "kinds": ["codel", "pie"]}``) instead.

    Where the phase dropped but only in its ramp (``ev["dropped"]`` True,
    ``ev["window_dropped"]`` False), the ramp's bursts met what limits the
    path and the window's flows stood below it: a policer too, whose rate the
    flows sat below — at least the rate they delivered in the window
    (``ev["rate_mbps"]``) less the rate phases' spread (:data:`RATE_SPREAD`):
    a loss-based flow above it would have lost there. Added as ``{"limiter":
    "policer", "rate_above_mbps": that}``."""
    if limiter != "fifo" or queue_dropped(ev):
        return None, None
    phase = ev.get("rate_mbps") or rate_mbps
    ack = ack_wait_ms(phase, flows, ev["loaded_rtt_ms"], phase * UNSATURATED <= rate_mbps) if "loaded_rtt_ms" in ev else 0.0
    above = max(ev["flow_q95_ms"] - ack - NOISE_MS, 0.0)
    alts = [{"limiter": "fifo"}, {"limiter": "aqm", "target_above_ms": above}]
    hidden, fewest, unseen = aqm_drops_hidden(ev, idle_loss)
    if hidden and not ev.get("dropped"):
        why = (f"a queue of {ev['flow_q95_ms']:.3g} ms (the flows' p95) without drops beyond the random loss, which "
               f"hides a single-queue AQM's: CoDel drops at least {fewest:.0f} times in the phase where a queue stands "
               f"above its target, and {unseen:.0f} beyond the random loss's "
               f"{idle_loss * ev['segments']:.0f} go unseen: a FIFO at least that deep, or CoDel or PIE at any target; "
               f"not told apart")
        return [{"limiter": "fifo"}, {"limiter": "aqm", "kinds": ["codel", "pie"], "why": why}], why
    if not ev.get("dropped"):
        return (alts, f"a queue of {ev['flow_q95_ms']:.3g} ms (the flows' p95; at least {above:.3g} ms less their ACK wait "
                      f"and the noise) without drops beyond the random loss: a FIFO at least that deep, or an AQM whose "
                      f"target is above {above:.3g} ms, which drops nothing there; not told apart")
    policed = phase * (1 - RATE_SPREAD)
    return (alts + [{"limiter": "policer", "rate_above_mbps": policed}],
            f"the flows lost segments only in their ramp (slow start's bursts), none in the window their queue was read "
            f"over, where it stood at {ev['flow_q95_ms']:.3g} ms (their p95; at least {above:.3g} ms less their ACK wait "
            f"and the noise): what dropped the ramp is below the window's queue or beside it — a FIFO at least that deep, "
            f"an AQM whose target is above {above:.3g} ms, or a policer at {policed:.4g} Mbit/s or more that the flows "
            f"sat below; not told apart")


def cobalt_first_signal(losses: dict, rate_mbps: float, flows: int, base_ms: float, idle_loss: float = 0.0,
                        shared: bool = False) -> tuple[bool | None, str]:
    """Whether a loss-based fill's first losses (:func:`first_losses`) show
    COBALT's first signal (CAKE) rather than CoDel's (fq_codel), behind a
    flow-isolating queue that delivered ``rate_mbps`` (wire) to ``flows``
    flows over ``base_ms``: (True, False, or None where the samples cannot
    tell; why). See :data:`CODEL_TARGET_MS`: CoDel's least window at its
    first signal is the flow's share of the rate x (min(base RTT, interval)
    + target); True where the flows that lost their first segment below
    it, as samples ``dt`` apart see it (/ 2^(dt / RTT): a slow start at most
    doubles its window a round trip), are more than the idle loss
    explains (None where that is within the initial window,
    :data:`INITIAL_WINDOW`: no first loss can fall below it). With
    ``shared`` (a single-queue AQM's reading: one queue, CoDel's or PIE's, which
    may drop any flow's packet once the queue has stood, so no flow's own
    window bounds its first loss) the same bound on all flows together, the
    whole rate, at the first loss of any (``losses["first"]``): the queue
    could stand above target for an interval only with at least that in
    flight (PIE's 150-ms burst allowance asks more). False does not exclude
    CAKE: a fresh queue whose first over-target packet is followed by one
    under target (or by the queue emptying) has its count decay to 0 and
    rec_inv_sqrt set to 1, and then signals one interval later, as CoDel."""
    dt = losses.get("sample_s")
    if dt is None:
        return None, "the fill reported no TCP_INFO windows to read the first losses from"
    share = max(rate_mbps, 1e-6) * 1e6 / WIRE_PER_PAYLOAD / 8 / (1 if shared else max(flows, 1))
    codel = share * (min(base_ms, CODEL_INTERVAL_MS) + CODEL_TARGET_MS) / 1e3
    # (as a negative power: samples many round trips apart, a LAN's, see nothing; 2 ** +x overflowed there)
    bound = codel * 2.0 ** -(dt * 1e3 / max(base_ms, 1e-3))
    if bound <= INITIAL_WINDOW:
        return None, (f"CoDel signals a flow of {share * 8 / 1e6:.3g} Mbit/s no earlier than at {codel / 1e3:.3g} KB, and what "
                      f"{dt * 1e3:.0f}-ms samples can tell of that ({bound / 1e3:.3g} KB) is within a slow start's initial "
                      f"window ({INITIAL_WINDOW / 1e3:.3g} KB): its first losses cannot tell COBALT's first signal from CoDel's")
    if shared:
        first = losses.get("first")
        early = [first] if first and first["cwnd_bytes"] < bound else []
        segs = (first or {}).get("sent_bytes", 0.0) / MSS
        seen = ((f"the flows' first loss came {first['t_s']:.2f} s in, with {first['cwnd_bytes'] / 1e3:.3g} KB in their windows"
                 if first else "the flows lost nothing")
                + f"; one queue's CoDel signals no earlier than at {codel / 1e3:.3g} KB in flight (the rate x (min(RTT, "
                  f"{CODEL_INTERVAL_MS:g} ms) + {CODEL_TARGET_MS:g} ms); PIE later), {bound / 1e3:.3g} KB as "
                  f"{dt * 1e3:.0f}-ms samples see it")
    else:
        early = [f for f in losses["flows"] if f["cwnd_bytes"] < bound]
        segs = sum(f["sent_bytes"] for f in losses["flows"]) / MSS
        windows = ", ".join(f"{f['cwnd_bytes'] / 1e3:.3g}" for f in sorted(losses["flows"], key=lambda f: f["cwnd_bytes"]))
        seen = (f"the flows' first losses came at windows of {windows or 'none'} KB ({losses.get('lossless', 0)} lost nothing); "
                f"CoDel signals a flow of {share * 8 / 1e6:.3g} Mbit/s no earlier than at {codel / 1e3:.3g} KB "
                f"(its share x (min(RTT, {CODEL_INTERVAL_MS:g} ms) + {CODEL_TARGET_MS:g} ms)), {bound / 1e3:.3g} KB as "
                f"{dt * 1e3:.0f}-ms samples see it")
    if _significant(len(early), segs, idle_loss, handful=EARLY_LOSS_HANDFUL):
        return True, (f"{seen}: {len(early)} below, as COBALT signals a fresh queue's first burst over "
                      f"{CODEL_TARGET_MS:g} ms at once: CAKE")
    return False, f"{seen}: {len(early)} below, too few to tell CAKE (fq_codel taken)"


def _classify_ev(ev: dict, rate_mbps: float, flows: int, policer: bool = True) -> str:
    return classify(ev["probe_q95_ms"], ev["flow_q50_ms"], ev["flow_q95_ms"], queue_dropped(ev), rate_mbps, flows,
                    ev["excess_loss"], ev.get("loaded_rtt_ms"), ev["rate_mbps"], policer=policer)


def _cobalt(x: dict) -> None:
    """A direction read as an AQM — flow isolation, or a single-queue AQM's
    burst in a packet train — becomes CAKE (``aqm_qdisc`` ``cake``) where its
    fill's first losses show COBALT's first signal (:func:`cobalt_first_signal`:
    each flow's own window under isolation, all flows' together under a
    single-queue reading, since CoDel or PIE on one queue may drop any flow's
    packet): neither CoDel (an interval above target first) nor PIE (its
    150-ms burst allowance, RFC 8033) drops a slow start's first burst, and a
    train behind CAKE meets the same first signal (its own fresh queue), which
    reads as PIE's early drop. Where flow isolation was read and the first
    losses do not show it, the note says CAKE is not excluded."""
    if x["limiter"] != "aqm":
        return
    first = x.get("first_loss") or {}
    isolated = x.get("aqm_qdisc") is None
    cake, why = (first.get("cake"), first.get("note")) if isolated else (first.get("cake_shared"), first.get("note_shared"))
    why = why or "no first losses read"
    if cake:
        seen = ("flow isolation" if isolated else
                "a single queue whose limit the fill's slow start met (fifo_check)" if (x.get("fifo_check") or {}).get("contradicted")
                else f"an AQM's burst in a packet train ({x['aqm_qdisc']} by the train alone)")
        x.update(aqm_qdisc="cake", buffer_bytes=None, buffer_bdp=None, limiter_note=f"{seen}; {why}")
    elif isolated:
        x["limiter_note"] = (f"flow isolation, taken as fq_codel; CAKE is not excluded ({why}). Behind CAKE a new flow's "
                             f"slow start ends at COBALT's first signal or goes on as under fq_codel (docs/advise.md)")
