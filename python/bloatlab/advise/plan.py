"""How long each of ``measure``'s phases runs and how many probes it sends: the idle probes
(:func:`idle_plan`), the loaded phases (:func:`_phase_secs`, :func:`bbr_phase_secs`, :func:`fill_floor_s`),
the loss stream (:func:`loss_stream_plan`).
"""

from __future__ import annotations

import math

import numpy as np

from .path import BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE
from .physics import (
    MSS, PROBE_WIRE, WIRE_SEGMENT, cubic_loss, loss_lower, loss_upper, mathis_loss, median_ci_ms, one_way,
    serialization_rate_mbps
)

#: a slow start begins at the initial window (RFC 6928: 10 segments, bytes): where COBALT's bound
#: (cobalt_first_signal) is no larger, no first loss can fall below it, and the rule cannot tell
INITIAL_WINDOW = 10 * MSS


#: TCP_INFO samples a flow per loaded phase (``load --sample-interval`` = the phase / this, 10 ms at least): 150
#: a flow of 10-ms samples was 1.4 MB of JSON for 4 flows and 15 s, which over a 2 Mbit/s policer at 483 ms
#: did not come back (the campaign lost 3 of 40 paths so); the window keeps ~75, enough for a p95
SAMPLES_PER_PHASE = 150


#: The loss stream (:func:`loss_stream_plan`): random loss below what the idle probes resolve still limits a
#: loss-based flow at a high BDP (Mathis: one flow at 239 Mbit/s over 126 ms needs a loss below 2e-7; a 0.2 % loss
#: that 300 idle probes did not see held the kernel's Reno to 3.6 Mbit/s, campaign seed 7 path 15, and an unseen
#: 0.2 % on a 100 Mbit/s FIFO at 100 ms had CUBIC's fill collapse and read a policer). Where the idle probes' 95 %
#: upper bound exceeds the loss that would hold one flow below the path's rate and they counted fewer than
#: :data:`LOSS_RESOLVED` losses, ``measure`` sends more echo probes, evenly spaced, before the loads (whose verdicts
#: weigh drops against it): periodic packets below a constant rate never queue (each leaves before the next
#: arrives), so the stream sees the path's random loss and no queue's. Its pace: this share of the rate the idle
#: probes' serialization shows (:func:`serialization_ms`: 1 / (1/down + 1/up) of the ports they cross, at most the
#: slower direction's port), which leaves room for a policer at a tenth of its port (the stream sends at most half
#: its rate) and for a rate that moves
LOSS_STREAM_SHARE = 0.05


#: ... at most this many probes a second: the probe client's fixed schedule keeps a 200-us spacing (its send lateness
#: p50 15 us, p99 0.45 ms at 1 ms spacing on this VM) and a few thousand echoes a second cost either end little;
#: 3.7 Mbit/s of 92-B packets, half of a 1-%-of-port policer's rate behind a 1-Gbit/s port
LOSS_STREAM_PPS = 5000


#: ... and behind a WiFi hop (the first packet train's batches) this many: each probe costs two transmissions of
#: ~150 us of airtime (AIFS, a mean backoff, the preamble, SIFS and the ACK), so 300 a second hold ~10 % of the medium
LOSS_STREAM_WIFI_PPS = 300


#: ... for this long (s; ``--quick``, full): 2 s at 5000 a second resolve a round-trip loss of 0.1 % to +-35 %
LOSS_STREAM_S = (2.0, 4.0)


#: losses a count needs for its rate to be known within 50 % at 95 % (Poisson: 1.96 / sqrt(k) <= 0.5, k >= 15.4)
LOSS_RESOLVED = 16


#: of issue 30's goal for the base RTT (path.BASE_RTT_GOAL_SHARE and _MS: within 5 % or 1 ms, whichever is
#: larger) the idle median's 95 % interval may take half either side; the other half is left for what the median
#: does not see (the serialization taken out of it, :func:`serialization_ms`, and the path's own jitter)
IDLE_CI_SHARE = 0.5


def idle_plan(rtts, lost: int, stream: bool) -> tuple[bool, str]:
    """Whether the first idle probes (their RTTs ``rtts``, ms, and ``lost`` of them lost) need the rest of
    :data:`IDLE_PROBES`: (more, why). More where a loss ``stream`` follows (the rest go beside it, at no cost
    in time, so that its losses are weighed against all of them: 100 probes without a loss bound the round trip's
    loss below 3 %, 300 below 1 %, and a stream that loses more than that met something else than the path's
    random loss, :func:`_loss_stream`), where the median's 95 % interval (:func:`median_ci_ms`) is wider than
    :data:`IDLE_CI_SHARE` of the base RTT's goal either side, or where they lost some (fewer than
    :data:`LOSS_RESOLVED`)."""
    x = np.asarray(rtts, float)
    x = x[np.isfinite(x)]
    if stream:
        return True, "a loss stream follows: the rest beside it, to weigh its losses against"
    if x.size < 2:
        return True, f"{x.size} idle probe(s) answered: too few for a median"
    lo, hi = median_ci_ms(x)
    p50 = float(np.median(x))
    tol = max(BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE * p50)
    half = (hi - lo) / 2
    ci = f"the idle median {p50:.3g} ms within +-{half:.2g} ms (95 %) of {x.size} probes"
    if half > IDLE_CI_SHARE * tol:
        return True, f"{ci}, wider than +-{IDLE_CI_SHARE * tol:.2g} ms (half the goal's {tol:.2g} ms)"
    if 0 < lost < LOSS_RESOLVED:
        return True, f"{ci}; {lost} lost, unresolved, and no loss stream follows"
    return False, f"{ci}, within half the goal's {tol:.2g} ms" + (f"; {lost} lost" if lost else "")


#: The ``--quick`` rate phase's length follows BBR's own rounds (Linux net/ipv4/tcp_bbr.c, BBRv1): STARTUP grows
#: the window by what is acked, doubling it each round from the initial window (:data:`INITIAL_WINDOW`) up to the
#: flow's share of the BDP, then needs this many rounds without 25 % growth to call the pipe full
#: (``bbr_full_bw_cnt``) ...
BBR_FULL_BW_ROUNDS = 3


#: ... and about one round of DRAIN; from there PROBE_BW cycles its pacing gain over 8 rounds (1.25, 0.75, then
#: 1 x 6: ``bbr_pacing_gain``), so a window holding one whole cycle after the ramp reads its mean, the rate
BBR_DRAIN_ROUNDS = 1


BBR_CYCLE_ROUNDS = 8


#: ... and at least this long (s). The rounds alone ask less below ~150 ms (13 at 20 Mbit/s and 30 ms: 0.4 s), and
#: the capacity's variation windows (:data:`VARIATION_MIN_WINDOWS` x :data:`VARIATION_MIN_WINDOW_S` = 1 s in the
#: second half) ask 2 s; but a 2-s floor read a 30-Mbit/s CoDel at 100 ms 6.9 % low (campaign seed 22, path 6:
#: 27.95 Mbit/s, the 3-s phase 29.99 on the same path), four BBRv1 flows converging on their shares over more than
#: one gain cycle. The old floor stays until that convergence is derived
BBR_MIN_S = 3.0


#: round trips between a loaded phase's start and its flows' first data (``bloatlab-probe load``,
#: crates/probe/src/tcp/client.rs): the control connection's handshake (1), its parameters and the server's hello
#: (1), the data connections' handshakes (1, together), and a download's request reaching the server (1/2),
#: whose first TCP_INFO sample is then taken; an upload's sender starts with its connection (3). The probes
#: run from the phase's start for its length, each flow from its own start for as long (then its ack grace),
#: so flows and probes run together for the phase less these rounds (:func:`_window`). Measured through the
#: emulator: the server's first sample 1.197 s after the phase began at 339.8 ms (3.52 round trips)
SETUP_ROUNDS = 3.5


#: a BBR phase that delivers this multiple of the fill phase's rate or more shows the fill phase never reached
#: the rate: the limiter is read from the BBR phase (a 25 % gap is beyond the rate phases' run-to-run spread,
#: 5 %, and below what a collapse leaves: 2.4-10x on the campaign's development seed)
UNSATURATED = 1.25


def slow_start_secs(rate_mbps: float, flows: int, base_ms: float, queue_ms: float) -> float:
    """How long (s) ``flows`` slow starts without HyStart (Reno's) take from the phase's start until their senders
    see a loss at a FIFO ``queue_ms`` deep, at ``rate_mbps`` over ``base_ms`` (the gate of measure's deep step,
    ``measure._deep_fill``): :data:`SETUP_ROUNDS` before the first data; the windows doubling every round trip
    from the initial window to the flows' share of the BDP; then, the pipe full, every ACK comes back at the
    bottleneck's rate and adds a segment, so the queue grows as fast as time passes (1 s of queue a second) and
    reaches ``queue_ms`` that long after; and the round trip at the full queue (base + queue) until the loss comes
    back. Through the emulator, the loss seen (the watcher's interval that saw it ends a round trip or less
    after): 36.7 MB at 484.6 Mbit/s and 44.6 ms (606.6 ms of queue), 4 flows, at 1.70 s, this 1.66 s; 33.1 MB at
    150.8 Mbit/s and 538 ms (1760 ms), at 11.7 s, this 9.9 s; 1.34 MB at 2.47 Mbit/s and 549 ms (4.35 s), at
    14.9 s (intervals of 4.9 s there), this 12.0 s."""
    return ((SETUP_ROUNDS + _doublings(rate_mbps, flows, base_ms) + 1.0) * base_ms + 2.0 * max(queue_ms, 0.0)) / 1e3


def _doublings(rate_mbps: float, flows: int, base_ms: float) -> float:
    """A slow start's doublings from the initial window (:data:`INITIAL_WINDOW`) to each of ``flows`` flows' share
    of the BDP at ``rate_mbps`` over ``base_ms`` (none below it)."""
    share = max(rate_mbps, 1e-6) * 1e6 * base_ms / 1e3 / 8 / max(flows, 1)
    return math.log2(max(share / INITIAL_WINDOW, 1.0))


def bbr_rounds(rate_mbps: float, flows: int, base_ms: float) -> int:
    """Round trips a ``--quick`` BBR rate phase needs (:data:`BBR_FULL_BW_ROUNDS`): its ramp S (STARTUP's
    doublings from the initial window to each flow's share of the BDP at ``rate_mbps`` over ``base_ms``, the
    full-pipe rounds and DRAIN) must lie in the phase's first half and a whole gain cycle after it, so
    max(2 S, S + 8)."""
    ramp = math.ceil(_doublings(rate_mbps, flows, base_ms)) + BBR_FULL_BW_ROUNDS + BBR_DRAIN_ROUNDS
    return max(2 * ramp, ramp + BBR_CYCLE_ROUNDS)


def bbr_phase_secs(base_ms: float, rate_mbps: float, flows: int, quick: bool) -> float:
    """The rate phase's length (s): ``--quick``, :data:`SETUP_ROUNDS` and :func:`bbr_rounds` round trips of
    ``base_ms`` (the fill's rate ``rate_mbps`` sizes the ramp), :data:`BBR_MIN_S` to 8 s; without ``--quick``
    as :func:`_phase_secs`. The rounds count from the flows' first data, the phase (and its probes) from
    the setup's start: so the time flows and probes run together is the rounds, and its second half, which
    the probes are read over (:func:`_window`), starts after the ramp (without them, where twice the ramp
    sets the length, 1.75 round trips before its end)."""
    if not quick:
        return _phase_secs(base_ms, quick, fill=False)
    rounds = SETUP_ROUNDS + bbr_rounds(rate_mbps, flows, base_ms)
    return float(min(max(BBR_MIN_S, rounds * base_ms / 1e3), 8.0))


def _phase_secs(base_ms: float, quick: bool, fill: bool) -> float:
    """Length of a loaded phase, scaled to the path: CUBIC needs many round
    trips to fill a long path's BDP and buffer (at 200 ms, 5 s is 25 RTTs —
    too few: the transcontinental path read 25 % low), BBR's startup needs
    about 10 (log2 of the BDP in initial windows) plus its drain. For the
    fill this is the ceiling: the phase ends earlier once the load is
    saturated (:func:`fill_floor_s`)."""
    rtts = (40 if quick else 60) if fill else (20 if quick else 30)
    lo, hi = ((5, 15) if quick else (10, 20)) if fill else ((3, 8) if quick else (5, 10))
    return float(min(max(lo, rtts * base_ms / 1e3), hi))


def variation_window_s(step_s: float, rate_bps: float) -> float:
    """:func:`rate_variation`'s window (s): at least :data:`VARIATION_MIN_WINDOW_S`, :data:`VARIATION_SAMPLES`
    TCP_INFO samples ``step_s`` apart, and :data:`VARIATION_PACKETS` wire segments at ``rate_bps`` (none where
    the rate is unknown, 0)."""
    packets_s = VARIATION_PACKETS * WIRE_SEGMENT * 8 / rate_bps if rate_bps > 0 else 0.0
    return max(VARIATION_MIN_WINDOW_S, VARIATION_SAMPLES * step_s, packets_s)


def fill_floor_s(ceiling_s: float) -> float:
    """The shortest fill phase (s) (``bloatlab-probe load --until-stable``): the phase ends once its load is
    saturated — the flows' goodput and the probes' round trip stable over a moving window of round trips
    (draft-ietf-ippm-responsiveness-08 §4.3's stability, after a standing queue or a loss shows the pipe
    found; crates/probe/src/live.rs) — at twice that time, so that the second half its figures are read from
    (:func:`_window`) is saturated throughout; and not before its second half holds what
    :func:`rate_variation` needs: :data:`VARIATION_MIN_WINDOWS` windows of :data:`VARIATION_MIN_WINDOW_S` and
    :data:`VARIATION_SAMPLES` samples (the load samples every ``ceiling_s`` / :data:`SAMPLES_PER_PHASE`) — this
    floor, 2 s at the 5-s ceiling — and of :data:`VARIATION_PACKETS` packets at the phase's own rate, which the
    load counts as it runs (:data:`FILL_FLOOR_PACKETS`). At most ``ceiling_s``: the old fixed length, measured
    to read the rate and the buffer (the phase never saturates on a link whose rate moves, and runs to it)."""
    step = max(ceiling_s / SAMPLES_PER_PHASE, 0.01)
    return float(min(2 * VARIATION_MIN_WINDOWS * max(VARIATION_MIN_WINDOW_S, VARIATION_SAMPLES * step), ceiling_s))


def loaded_phase(j: dict) -> dict:
    """The loaded phase of ``load``'s JSON ``j`` (its last; ``{}`` where there is none)."""
    return ((j.get("load") or {}).get("phases") or [{}])[-1]


def _loaded_s(j: dict) -> tuple[float | None, float | None]:
    """(how long the loaded phase of ``load``'s JSON ``j`` ran, s; when its load was saturated, s since it began —
    None where it never was or the probe does not say)."""
    ph = loaded_phase(j)
    ran = ph["to_s"] - ph["from_s"] if isinstance(ph.get("to_s"), (int, float)) and isinstance(ph.get("from_s"), (int, float)) else None
    return ran, ph.get("saturated_at_s")


#: the capacity's variation (issue 31) is read over windows this long (s) at least: the scale on which a
#: cellular link's capacity fades (python/bloatlab/traces.py, FADE_PERIOD_MS: 100 ms) ...
VARIATION_MIN_WINDOW_S = 0.1


#: ... and at least this many of the flows' TCP_INFO samples (the load samples every phase / 150, 10 ms at least)
VARIATION_SAMPLES = 2


#: ... and long enough to carry this many packets at the phase's median rate: one packet, what whole packets
#: resolve, is then at most 5 % of a window — the margin of a shaper at 95 % that the verdict (variable_rate)
#: reads against (at 1.2 Mbit/s 100 ms carry 10 packets: a tbf's bucket and the estimator's noise read +-15 %)
VARIATION_PACKETS = 20


#: windows a variation needs to be read at all (a p10 and a p90 of fewer are the extremes)
VARIATION_MIN_WINDOWS = 10


#: the full segments a fill must deliver before it may end (``bloatlab-probe load --floor-packets``): its second
#: half then holds :data:`VARIATION_MIN_WINDOWS` windows of :data:`VARIATION_PACKETS` at the rate it ran at, a
#: steady phase's half of them (400: 4.8 s at 1 Mbit/s, 0.48 s at 10). A floor in seconds needed that rate in
#: advance, the port's as the idle path showed it: where it showed none (an upload's port, seldom read; a train
#: its sender could not pace) the fill ran its ceiling, 5 s of `--quick`'s 20 (campaign seed 51: 101 stored up
#: fills); and behind a policer the port's rate is above the phase's, so its floor was short
FILL_FLOOR_PACKETS = 2 * VARIATION_MIN_WINDOWS * VARIATION_PACKETS


#: the quiet gap before each loaded phase (the probe's ``--idle``, s): what the previous phase left in the queue
#: drains within its queueing p95, and its last packets and ACKs cross within two round trips; at least this, so
#: the phase's own idle UDP probes (25 at 10 ms) reach the server; at most :data:`IDLE_MAX_S`
IDLE_MIN_S = 0.25


#: ... and at most the probe's fixed idle before (1 s): a deeper queue than that drains while the next phase
#: ramps up, before the window its figures are read from (the second half)
IDLE_MAX_S = 1.0


def gap_s(queue_ms: float, base_ms: float) -> float:
    """The quiet gap before a loaded phase after one that queued ``queue_ms`` (its flows' p95) on a path of
    ``base_ms`` (:data:`IDLE_MIN_S`)."""
    return min(max(IDLE_MIN_S, (queue_ms + 2 * base_ms) / 1e3), IDLE_MAX_S)


#: The one-way random loss from which every fill runs BBR, whatever the path's BDP: the rule before
#: :func:`fill_plan` derived the choice from the loss and the port, kept as its upper end since no loss-based fill
#: has been read on a path this lossy (the campaigns' 0.5-3.7 % paths all filled with BBR: 15 of their 18 down
#: limiters right over measure-only seeds 134-146's recordings), not a loss at which CUBIC could not fill
LOSSY = 0.005


def fill_plan(loss: float, lost: int, sent: int, port_mbps: float | None, flows: int, base_ms: float) -> tuple[bool, str]:
    """Whether a direction's fill runs BBR (True) rather than a loss-based control, and why. A loss-based fill is
    there to fill the bottleneck's queue (what reveals a FIFO's depth and an AQM's hold), which CUBIC does only
    where the path's random loss lets its ``flows`` flows reach the rate: where the loss's 95 % lower bound (the
    ``lost`` of ``sent`` idle round trips the figure ``loss``, each way, is from: :func:`one_way` of
    :func:`loss_lower`) is above :func:`cubic_loss` at ``port_mbps`` (a lower bound of the direction's port the idle
    path showed) over the base RTT ``base_ms``, the flows sit on a plateau below the rate with no queue: the fill
    then runs to its ceiling (``--queue-only``: no standing queue ends it), reads neither queue nor rate, and the
    BBR phase after it reads the rate (campaign seed 146 path 49: 0.27 % at 3.6 ms hold four CUBIC flows below 311
    Mbit/s, the port 518: a 5-s fill at 257 Mbit/s without a queue, then 3.4 s of BBR, each way). BBR fills such a path itself
    (:data:`LOSSY`'s rule: it does not read a random loss as congestion)."""
    if loss >= LOSSY:
        return True, f"the idle path lost {loss * 100:.2g} % each way (from {LOSSY * 100:g} % every fill is BBR's)"
    if lost <= 0 or not port_mbps or base_ms <= 0:
        return False, "no random loss" if lost <= 0 else "no port rate to weigh the random loss against"
    low = one_way(loss_lower(lost, sent))
    holds = cubic_loss(port_mbps, flows, base_ms)
    if low <= holds:
        return False, (f"the random loss, at least {low * 100:.2g} % each way, lets {flows} CUBIC flows reach "
                       f"{port_mbps:.4g} Mbit/s (held below it from {holds * 100:.2g} %)")
    return True, (f"the random loss, at least {low * 100:.2g} % each way, holds {flows} CUBIC flows below the "
                  f"{port_mbps:.4g} Mbit/s the idle path showed the port at (above the {holds * 100:.2g} % at which they "
                  f"reach it: RFC 9438's response): their fill would find no queue")


def loss_stream_plan(lost: int, sent: int, ser_ms: float | None, base_ms: float, wifi: bool,
                     quick: bool, down_mbps: float | None = None) -> tuple[int | None, int, str]:
    """Whether the idle probes (``lost`` of ``sent`` round trips) leave a
    random loss unresolved that would still limit one loss-based flow on the
    path, and if so the loss stream's probes a second and count (see
    :data:`LOSS_STREAM_SHARE`): (pps or None, count, why). ``ser_ms``: the
    idle probes' serialization (:func:`serialization_ms`), which gives the
    ports' rate R = 1 / (1/down + 1/up), at most the slower port's, which
    paces the stream (its echoes cross both). Which loss matters is the
    download's: Mathis' loss that holds one flow under a rate falls as the
    square of the rate, so it is read at the faster of R and ``down_mbps``,
    the idle packet train's head (the down port's spacing, or the server's
    pace where that was slower: a lower bound of the port). R alone, the
    slower direction's, skipped streams a fast download needed: campaign
    seed 49 path 60, 431 Mbit/s down and 23.5 up at 2.4 ms with 0.088 %
    random loss, read R = 22.3 Mbit/s, where 6.6 % holds one flow, and no
    loss at all (100 idle probes); at the train's 291 Mbit/s that loss is
    0.04 %."""
    if lost >= LOSS_RESOLVED:
        return None, 0, f"the idle probes lost {lost} of {sent}: resolved within 50 %"
    if not ser_ms:
        return None, 0, "the large idle probes found no serialization (no rate to pace a stream by)"
    rate = serialization_rate_mbps(ser_ms)
    fastest = max(rate, down_mbps or 0.0)
    bound = one_way(loss_upper(lost, sent))
    limits = mathis_loss(fastest, 1, base_ms)
    if bound <= limits:
        return None, 0, (f"the idle probes bound the loss below {bound * 100:.2g} % each way, below the "
                         f"{limits * 100:.2g} % that would hold one flow under {fastest:.3g} Mbit/s")
    pps = int(min(LOSS_STREAM_SHARE * rate * 1e6 / (PROBE_WIRE * 8), LOSS_STREAM_WIFI_PPS if wifi else LOSS_STREAM_PPS))
    count = int(pps * LOSS_STREAM_S[0 if quick else 1])
    if count < sent:
        return None, 0, (f"a stream at {LOSS_STREAM_SHARE:.0%} of {rate:.3g} Mbit/s would add fewer probes than the idle "
                         f"phase had ({count} < {sent})")
    return pps, count, (f"the idle probes bound the loss only below {bound * 100:.2g} % each way, above the "
                             f"{limits * 100:.2g} % that would hold one flow under {fastest:.3g} Mbit/s")
