"""``bloatlab measure``: a real path, measured against ``bloatlab-probe server``.

Phases (each a run of the probe binary, its JSON read back):

1. idle: UDP echo probes every 10 ms — base RTT (min, p50) and random loss,
   100 first and the rest of 300 only where those leave something unresolved
   (:func:`idle_plan`); large probes (the ports' serialization); a short packet
   train down (a WiFi hop's batches, the down port's rate); where the idle
   probes cannot rule out a loss that would matter, more echo probes
   (:func:`loss_stream_plan`), the rest of the idle probes beside them;
2. per direction (down: server -> client, then up), ``--flows`` parallel TCP
   flows with UDP probes running (``bloatlab-probe load``), twice:
   a. *fill*: CUBIC, a loss-based control that fills whatever buffer there is
      (BBR on a lossy path, where CUBIC cannot fill the link) — the queue the
      flows sit in (their smoothed RTT), the queue a sparse probe sees, the
      retransmissions;
   b. *rate*: BBR, which neither reads random loss as congestion nor
      collapses behind a policer (its long-term sampling finds the policed
      rate) — the rate like a speed test's, the larger of the two phases';
      left out where the fill kept the port's rate busy (:data:`BUSY_SHARE`).
   Each phase lasts a number of RTTs (:func:`_phase_secs`: a long path needs
   longer to fill; :func:`bbr_phase_secs`: BBR's ramp) and is read over its
   second half, after every ramp. Each phase's wall time is in the report's
   ``phases_s``.

From those (docs/advise.md): added delay = the probes' loaded p95 − idle p50;
the grade on DSLReports' scale; the buffer = the flows' queueing p95 × rate
(what a FIFO must hold to delay that much), or a bound where the queue was not
full while it was read (:func:`buffer_reading`); the limiter by :func:`classify`.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from dataclasses import dataclass, field

import numpy as np

from .._bin import find as find_bin
from ..errors import UserError
from .path import BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE, SHAPE_FRACTION, Path, grade

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
#: flow isolation: under a flow-isolating queue (fq_codel, CAKE: DRR over per-flow queues, a new sparse flow
#: served first) the probe waits about one packet per active flow while the bulk flows wait behind their own
#: backlog; under one shared queue the probe waits as they do (ratio ~1: measured 3.85 of 3.92 ms, 8.9 of 7.9 ms).
#: Isolation is read where the probe waits less than half of what the flows wait: the middle between the two
#: mechanisms' ratios (measured isolated: 0.07-0.2, fq_codel at 10-50 Mbit/s, docs/advise.md)
ISOLATION = 0.5
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
#: a policer's loss is not a congestion signal sized to the window: "far above" what a signalling queue drops
#: (Mathis) is an order of magnitude. Measured: fq_codel at 10 / 50 / 3.75 Mbit/s drops 1.3 / 1.6 / 3.3 x
#: Mathis's rate; a 430 Mbit/s policer with a 2.7-ms bucket at 312 ms 10^4 x (its CUBIC flows' p95 queueing,
#: slow start's bursts at the port, passed the burst floor)
FAR_ABOVE_MATHIS = 10.0
#: a BBR phase that delivers this multiple of the fill phase's rate or more shows the fill phase never reached
#: the rate: the limiter is read from the BBR phase (a 25 % gap is beyond the rate phases' run-to-run spread,
#: 5 %, and below what a collapse leaves: 2.4-10x on the campaign's development seed)
UNSATURATED = 1.25
#: a single-queue AQM (CoDel, PIE) looks like a shallow FIFO under load: one shared queue, drops, the flows'
#: queueing low. A packet train tells them apart by what a queue lets a burst build: a FIFO passes its buffer,
#: which a loss-based fill reaches (the flows' queueing p95 is the buffer's depth: ratio ~1), then drops all but
#: what the rate drains of the rest (tail drop at a sender U >> C: 1 - C/U); CoDel lets the queue stand above its
#: target for a whole interval before it drops (RFC 8289: 100 ms, then sparse drops at interval/sqrt(n)), PIE
#: lets a 150-ms burst in and raises its drop probability 15 ms at a time (RFC 8033). A train is an AQM's burst
#: where it built at least this multiple of the flows' queue and its tail was not tail-dropped (single_queue_aqm).
#: Measured in the emulator (2026-11-25, 20 and 100 Mbit/s, 20 and 60 ms): FIFOs of 0.5 and 1 BDP 0.9-1.4x, CoDel 8.8-18x, PIE
#: 5.5-41x (docs/advise.md, "A single-queue AQM")
AQM_BURST_RATIO = 2.0
#: CoDel's interval (RFC 8289; sch_codel's default): a train shorter than it at the rate cannot tell CoDel from PIE
CODEL_INTERVAL_MS = 100.0
#: PIE's burst allowance (RFC 8033 MAX_BURST; sch_pie's default): a queue younger than this is not dropped from
PIE_BURST_MS = 150.0
#: the AQM train: 1000 packets, the packet limit of sch_codel and sch_pie (tc's default `limit`): a longer train
#: overflows it and is tail-dropped like a FIFO's (CoDel at 100 Mbit/s lost 82 % of a 1666-packet train's tail)
AQM_TRAIN_PACKETS = 1000
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
#: the train that looks for a WiFi hop: long enough for several aggregates of the largest size ath9k builds
#: (32 subframes, airtime.rs MAX_AMPDU_FRAMES) and short enough to cost ~2.4 s at 1 Mbit/s
WIFI_TRAIN_PACKETS = 200
#: a period longer than this multiple of the median held something else than our aggregate (another
#: station's transmission, a collision's backoff, a pause of the VM): left out of the PHY rate
WIFI_PERIOD_OUTLIER = 2.0
#: the fastest 802.11n PHY (MCS 31: four streams, 40 MHz, short guard interval; IEEE 802.11-2016 Table 19-41):
#: a batch that came sooner after the previous one than the floor and its packets at this rate cannot have been a
#: transmission of its own; the receiver split one delivery (a wake-up of the emulator or the host between two
#: packets of an aggregate: 130 us inside a 17-packet aggregate at MCS 5, 2026-11-26)
WIFI_PHY_MAX_MBPS = 600.0
#: TCP's payload per full segment (B): 1500 - IPv4 20 - TCP 20 - timestamps 12
MSS = 1448
#: a slow start begins at the initial window (RFC 6928: 10 segments, bytes): where COBALT's bound
#: (cobalt_first_signal) is no larger, no first loss can fall below it, and the rule cannot tell
INITIAL_WINDOW = 10 * MSS
DEFAULT_PORT = 5301
LOAD_CC = "cubic"
#: TCP_INFO samples a flow per loaded phase (``load --sample-interval`` = the phase / this, 10 ms at least): 150
#: a flow of 10-ms samples was 1.4 MB of JSON for 4 flows and 15 s, which over a 2 Mbit/s policer at 483 ms
#: did not come back (the campaign lost 3 of 40 paths so); the window keeps ~75, enough for a p95
SAMPLES_PER_PHASE = 150
#: how long after its phase a load may take to bring its result back (s): ~150 KB at 0.2 Mbit/s is 6 s, loss
#: recovery behind a policer with a small bucket several times that
RESULTS_WAIT_S = 120
#: one-way idle loss from which the rate is measured with BBR flows instead
LOSSY = 0.005
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

#: The idle probes (echo probes every :data:`IDLE_INTERVAL_MS`) end by a stopping rule (:func:`idle_plan`): first
#: this many (1 s), enough for a median's 95 % interval to span no more than the 40th-60th percentiles of the idle
#: RTTs (order statistics, :func:`median_ci_ms`) ...
IDLE_FIRST = 100
#: ... then the rest of :data:`IDLE_PROBES` (``--quick``, full: the counts measure always sent before) only where
#: the first ones leave the base RTT or the loss unresolved (a median whose interval is wider than the goal allows,
#: a loss seen and not resolved) or a loss stream follows, beside which they go: both are
#: echo probes spaced wider than they take at the ports (the stream at 5 % of the rate, these 92 B every 10 ms:
#: 7 % of 1 Mbit/s), so neither queues behind the other but for a small probe's serialization where they meet
#: (0.74 ms at 1 Mbit/s, in a few % of the probes: the median and the minimum stay)
IDLE_PROBES = (300, 500)
IDLE_INTERVAL_MS = 10
#: of issue 30's goal for the base RTT (path.BASE_RTT_GOAL_SHARE and _MS: within 5 % or 1 ms, whichever is
#: larger) the idle median's 95 % interval may take half either side; the other half is left for what the median
#: does not see (the serialization taken out of it, :func:`serialization_ms`, and the path's own jitter)
IDLE_CI_SHARE = 0.5


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

#: the rate from the cumulative ACKs' bytes over the window where a round trip (the flows' smoothed RTT p95)
#: is at most this share of the window: the edges' error (what is in flight, ~ one RTT of data) stays within
#: 5 %, half the rate goal of issue 30; else from the per-ACK delivery-rate samples (see _window)
ACKED_EDGE = 0.05
#: TCP goodput -> the bottleneck's wire rate: a full segment carries 1448 B of
#: payload in 1500 B on the wire (IPv4 20 + TCP 20 + timestamps 12).
WIRE_PER_PAYLOAD = 1500 / 1448


def _split_host(host: str) -> tuple[str, int]:
    if host.count(":") == 1:
        h, p = host.split(":")
        if not p.isdigit() or not 0 < int(p) < 65536:
            raise UserError(f"HOST[:PORT]: bad port in {host!r}")
        return h, int(p)
    return host, DEFAULT_PORT


def _probe(args: list[str], timeout: float, who: str = "measure", partial: bool = False) -> dict:
    """Run ``bloatlab-probe ARGS --json``; its JSON. With ``partial``, a run
    that printed its result and then exited 1 over a problem (a flow's peer
    gone before the last ACKs, on a path that drops most of what it gets)
    returns that result with ``problem`` set: what the flows measured until
    then stands."""
    exe = find_bin("bloatlab-probe")
    try:
        p = subprocess.run([exe, *args, "--json"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"{who}: bloatlab-probe {args[0]} did not finish within {timeout:.0f} s") from None
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["no message"])[-1]
        if partial and p.returncode == 1:
            try:
                j = json.loads(p.stdout)
            except ValueError:
                j = None
            if isinstance(j, dict) and j.get("flows"):
                j["problem"] = msg.removeprefix("bloatlab-probe: ")
                return j
        raise UserError(f"{who}: {msg}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise UserError(f"{who}: bloatlab-probe {args[0]} printed no JSON (a server of another version?)") from None


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


@dataclass
class Measurement:
    path: Path
    report: dict = field(default_factory=dict)

    def show(self) -> None:
        r = self.report
        st = r.get("loss_stream") or {}
        of = (r.get("loss_idle") or {}).get("sent", 0) + st.get("sent", 0)
        upper = f", at most {r['loss_upper'] * 100:.2g} %" if r.get("loss_upper") is not None else ""
        print(f"base RTT {r['base_rtt_ms']['p50']:.2f} ms (min {r['base_rtt_ms']['min']:.2f}), random loss {r['loss'] * 100:.2g} % "
              f"each way ({r['loss_round_trip'] * 100:.2g} % of {of or 'the'} round trips{upper})")
        for d in ("down", "up"):
            x = r.get(d)
            if not x:
                continue
            print(f"{d:>4}: {x['rate_mbps']:.4g} Mbit/s, loaded RTT p50 {x['loaded_rtt_ms']['p50']:.1f} / p95 {x['loaded_rtt_ms']['p95']:.1f} ms, "
                  f"+{x['added_delay_ms']:.1f} ms (grade {x['grade']}), {_buffer_text(x)}, limiter: {x['limiter']}, retransmitted {x['retrans_rate'] * 100:.2g} %")
            v = x.get("rate_variation")
            if v:
                moved = f", moving over ~{v['timescale_s']:.2g} s" if v["timescale_s"] else ""
                print(f"      rate p10-p90 {v['p10_mbps']:.3g}-{v['p90_mbps']:.3g} Mbit/s over {v['window_s'] * 1e3:.0f}-ms windows{moved}")
            if x.get("limiter_note"):
                print(f"      ({x['limiter_note']})")
        for w in r.get("warnings", []):
            print(f"warning: {w}")


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


def bbr_rounds(rate_mbps: float, flows: int, base_ms: float) -> int:
    """Round trips a ``--quick`` BBR rate phase needs (:data:`BBR_FULL_BW_ROUNDS`): its ramp S (STARTUP's
    doublings from the initial window to each flow's share of the BDP at ``rate_mbps`` over ``base_ms``, the
    full-pipe rounds and DRAIN) must lie in the phase's first half and a whole gain cycle after it, so
    max(2 S, S + 8)."""
    share = max(rate_mbps, 1e-6) * 1e6 * base_ms / 1e3 / 8 / max(flows, 1)
    ramp = math.ceil(math.log2(max(share / INITIAL_WINDOW, 1.0))) + BBR_FULL_BW_ROUNDS + BBR_DRAIN_ROUNDS
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


def fill_floor_s(port_mbps: float | None, ceiling_s: float) -> float:
    """The shortest fill phase (s) (``bloatlab-probe load --until-stable``): the phase ends once its load is
    saturated — the flows' goodput and the probes' round trip stable over a moving window of round trips
    (draft-ietf-ippm-responsiveness-08 §4.3's stability, after a standing queue or a loss shows the pipe
    found; crates/probe/src/live.rs) — at twice that time, so that the second half its figures are read from
    (:func:`_window`) is saturated throughout; and not before its second half holds what
    :func:`rate_variation` needs, :data:`VARIATION_MIN_WINDOWS` windows of :data:`VARIATION_MIN_WINDOW_S`,
    :data:`VARIATION_SAMPLES` samples (the load samples every ``ceiling_s`` / :data:`SAMPLES_PER_PHASE`) or
    :data:`VARIATION_PACKETS` packets at the port's rate the idle path showed (``port_mbps``), whichever is
    longest: 2 s from 12 Mbit/s up, 4.8 s at 1 Mbit/s. At most ``ceiling_s``: the old fixed length, measured
    to read the rate and the buffer (the phase never saturates on a link whose rate moves, and runs to it);
    ``ceiling_s`` too where the port is unknown."""
    if not port_mbps or port_mbps <= 0:
        return ceiling_s
    step = max(ceiling_s / SAMPLES_PER_PHASE, 0.01)
    win = variation_window_s(step, port_mbps * 1e6)
    return float(min(2 * VARIATION_MIN_WINDOWS * win, ceiling_s))


def _loaded_s(j: dict) -> tuple[float | None, float | None]:
    """(how long the loaded phase of ``load``'s JSON ``j`` ran, s; when its load was saturated, s since it began —
    None where it never was or the probe does not say)."""
    ph = ((j.get("load") or {}).get("phases") or [{}])[-1]
    ran = ph["to_s"] - ph["from_s"] if isinstance(ph.get("to_s"), (int, float)) and isinstance(ph.get("from_s"), (int, float)) else None
    return ran, ph.get("saturated_at_s")


def _window(j: dict, d: str) -> dict:
    """Figures of one loaded phase over the second half of the time all its
    flows ran (after every flow's ramp, whatever the path's RTT):

    - the rate: the bytes their cumulative ACKs covered over the window,
      where it spans 1/:data:`ACKED_EDGE` round trips or more; otherwise the
      median of the flows' summed delivery rate
      (``tcpi_delivery_rate``, the kernel's own per-ACK rate sample, which
      counts SACKed data and which BBR uses). Not the acked bytes over a
      window of few round trips: the cumulative ACK advances in jumps when
      SACK recovery fills a hole, and over 2-3 s that over-read by up to 17 %
      on a 200-ms path and by ±10 % at 1 Mbit/s behind a 500-ms queue, where
      the median of the sum read within 5 % of the link (1, 5, 100 Mbit/s);
    - the flows' smoothed RTT (p50, p95; median over flows): the queue the
      bulk flows sit in, smoothed against the VM's pauses;
    - the probes' RTT: what a new, sparse flow sees, over the second half of
      the time all flows ran *while the probes ran* (the probes have no
      samples beyond their phase; where they outlast the first flow, the
      same window as the flows'). The flows start :data:`SETUP_ROUNDS`
      round trips after the probes and run on through their ack grace (at
      most 2 s: ``_load``) after the probes' end: the rate's reading wants
      that, and the probes cannot give it."""
    fs = j["raw"]["series"]["flows"]
    ids = sorted({f["id"] for f in j["flows"] if f["direction"] == d})
    fid, t = np.asarray(fs.get("flow", []), int), np.asarray(fs.get("t", []), float)
    rate_s, srtt = np.asarray(fs.get("delivery_rate_bps", []), float), np.asarray(fs.get("srtt_ms", []), float)
    ids = [i for i in ids if (fid == i).sum() >= 2]
    if not ids:
        raise UserError(f"measure: the {d} flows reported no TCP_INFO samples (a server of another version?)")
    t0 = min(t[fid == i].min() for i in ids)
    t1 = min(t[fid == i].max() for i in ids)  # the first flow to end
    w0 = t0 + 0.5 * (t1 - t0)
    grid = np.arange(w0, t1, 0.01)
    total = sum(np.interp(grid, t[fid == i], rate_s[fid == i]) for i in ids) if grid.size else np.zeros(1)
    p50s, p95s = [], []
    for i in ids:
        r = srtt[(fid == i) & (t >= w0) & (t <= t1)]
        r = r[np.isfinite(r) & (r > 0)]
        if r.size:
            p50s.append(np.percentile(r, 50))
            p95s.append(np.percentile(r, 95))
    # the probes: over the second half of the time all flows ran while the probes ran. The probes run the
    # phase's length D from its start; each flow from its own start, SETUP_ROUNDS x RTT later, for D too and
    # then up to its ack grace g (2 s) on what its send buffer holds: the flows' second half [w0, t1] overlaps
    # the probes for D / 2 - setup - g / 2: nothing at D = 3 s and 150 ms with a full grace (a slow drain, as
    # behind a policer), nor at 4.1 s and 340 ms (campaign seed 28 path 18's truth through the emulator: the
    # flows' window 5.63-8.67 s, the probes' last reply sent at 5.45 s, all 478 answered)
    ps = j["raw"]["series"]["probes"]
    pt, prtt = np.asarray(ps.get("t", []), float), np.asarray(ps.get("rtt_ms", []), float)
    pe = min(t1, float(pt.max())) if pt.size else t0
    p0 = t0 + 0.5 * max(pe - t0, 0.0)  # none where no probe came back after the flows began (UDP blocked)
    sel = prtt[(pt >= p0) & (pt <= pe) & np.isfinite(prtt)]
    rate = float(np.median(total))
    how = "delivery_rate"
    # the bytes the flows' cumulative ACKs covered over the window: unbiased where the window spans many
    # round trips (at each edge the ACK lags the data by at most what is in flight, ~ rate x srtt), and
    # right where the per-ACK samples are not: behind a policer with a deep bucket the samples taken while
    # the bucket drains at the port's rate outnumber those of the recovery between (a 15.8 Mbit/s policer
    # with a 45-ms bucket on a 34 Mbit/s port, 4.6 ms: the samples' median read 19.2)
    acked = np.asarray(fs.get("delivered_bytes", []), float)
    srtt95 = float(np.median(p95s)) / 1e3 if p95s else float("nan")
    if acked.size == t.size and t1 > w0 and np.isfinite(srtt95) and srtt95 / (t1 - w0) <= ACKED_EDGE:
        got = sum(np.interp(t1, t[fid == i], acked[fid == i]) - np.interp(w0, t[fid == i], acked[fid == i]) for i in ids)
        if got > 0:
            rate, how = got * 8 / (t1 - w0), "acked_bytes"
    return {"rate_mbps": rate / 1e6 * WIRE_PER_PAYLOAD, "rate_from": how,
            "flow_rtt_p50": float(np.median(p50s)) if p50s else float("nan"),
            "flow_rtt_p95": float(np.median(p95s)) if p95s else float("nan"), "probes": sel,
            "probe_window_s": [p0, pe]}


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
#: a fill phase that kept the bottleneck busy (:func:`rate_variation`'s busy windows) in this share of its
#: windows or more, at the rate of the port the idle path showed (the packet train's head down, the large probes'
#: serialization up: within :data:`TRAIN_PORT_MARGIN`), delivered the link's rate: a busy link carries exactly its
#: capacity, and idle windows take at most their share off the rate read over the window, here 5 %, half the rate
#: goal of issue 30 — the BBR rate phase (3-8 s, ~4-9 s with its connections and results) would only cost time.
#: Both are needed: behind a policer on a faster port slow start's bursts at the port lift the flows' smoothed
#: RTT through a collapse (8.9 Mbit/s policed on a 14.6 Mbit/s port: CUBIC 1.4 Mbit/s, +22.6 ms), which the busy
#: windows alone read as a busy link
BUSY_SHARE = 0.95


def rate_variation(j: dict, d: str, base_ms: float) -> dict | None:
    """How the capacity of direction ``d`` moved over one loaded phase (its
    JSON ``j``), through the phase's second half (after every ramp), in
    consecutive windows of :data:`VARIATION_MIN_WINDOW_S`,
    :data:`VARIATION_SAMPLES` samples or :data:`VARIATION_PACKETS` packets at
    the median rate, whichever is longest: the flows' summed
    delivery rate (``tcpi_delivery_rate``, the kernel's per-ACK sample, which
    counts SACKed data: the cumulative ACK advances in jumps after a loss and
    read ±14 % over 200-ms windows on a fixed 20 Mbit/s FIFO) averaged over
    each window, Mbit/s on the wire, counting only the windows in which the
    bottleneck stayed busy — every flow's smoothed RTT above ``base_ms`` by
    more than the noise (:data:`NOISE_MS`) throughout: a queue that never
    emptied, so what was delivered is what the link carried (where the
    senders left the link idle — CUBIC after a loss on a shallow buffer, BBR
    draining — a window reads the senders, not the link). Of those windows:
    p10, p50, p90, and the time scale — the lag at which their
    autocorrelation first falls below 1/e (None where it never does within
    half the series: a capacity that moves slower than the phase lasts, or
    not at all; nor where the windows spread less than one packet a window).
    And the windows themselves in order (``series_mbps``, None where not busy)
    and the flows' median smoothed RTT over them (``srtt_ms``).
    None where fewer than :data:`VARIATION_MIN_WINDOWS` windows were busy."""
    fs = j["raw"]["series"]["flows"]
    fid, t = np.asarray(fs.get("flow", []), int), np.asarray(fs.get("t", []), float)
    rate_s = np.asarray(fs.get("delivery_rate_bps", []), float)
    srtt = np.asarray(fs.get("srtt_ms", []), float)
    ids = [i for i in sorted({f["id"] for f in j["flows"] if f["direction"] == d}) if (fid == i).sum() >= 2]
    if not ids or rate_s.size != t.size or srtt.size != t.size:
        return None
    t0 = min(t[fid == i].min() for i in ids)
    t1 = min(t[fid == i].max() for i in ids)
    w0 = t0 + 0.5 * (t1 - t0)
    step = float(np.median(np.concatenate([np.diff(t[fid == i]) for i in ids])))
    grid = np.arange(w0, t1, 0.01)
    median_bps = float(np.median(sum(np.interp(grid, t[fid == i], rate_s[fid == i]) for i in ids))) if grid.size else 0.0
    win = variation_window_s(step, median_bps)
    edges = np.arange(w0, t1 + 1e-9, win)
    if edges.size - 1 < VARIATION_MIN_WINDOWS:
        return None
    rates = np.zeros(edges.size - 1)
    busy = np.ones(rates.size, bool)
    for i in ids:
        ti, ri, qi = t[fid == i], rate_s[fid == i], srtt[fid == i] - base_ms
        for k in range(rates.size):
            grid = np.linspace(edges[k], edges[k + 1], 11)
            rates[k] += float(np.interp(grid, ti, ri).mean())
            inside = qi[(ti >= edges[k]) & (ti <= edges[k + 1])]
            low = inside.min() if inside.size else float(np.interp(grid, ti, qi).min())
            busy[k] &= bool(low > NOISE_MS)
    rates *= WIRE_PER_PAYLOAD / 1e6
    if busy.sum() < VARIATION_MIN_WINDOWS:
        return None
    kept = rates[busy]
    x = np.where(busy, rates - kept.mean(), 0.0)  # an idle window counts as the mean: no motion read there
    scale = None
    # a spread below one packet a window is below what whole packets resolve: nothing moved
    if kept.std() > WIRE_SEGMENT * 8 / win / 1e6:
        ac = np.correlate(x, x, "full")[x.size - 1:] / (x.var() * x.size)
        below = np.nonzero(ac[: x.size // 2 + 1] < np.exp(-1))[0]
        scale = float(below[0] * win) if below.size else None
    return {"p10_mbps": float(np.percentile(kept, 10)), "p50_mbps": float(np.percentile(kept, 50)),
            "p90_mbps": float(np.percentile(kept, 90)), "timescale_s": scale, "window_s": win,
            "windows": int(rates.size), "busy_windows": int(busy.sum()),
            # the windows in order (None: not busy) and the flows' median smoothed RTT over them (the span each
            # delivery-rate sample averages): what a fit of the capacity's process reads (advise.capacity)
            "series_mbps": [round(float(r), 4) if b else None for r, b in zip(rates, busy)],
            "srtt_ms": float(np.median(srtt[np.isin(fid, ids) & (t >= w0) & (t <= t1)]))}


def _retrans(j: dict, d: str) -> tuple[float, float]:
    """(segments retransmitted, segments sent) of direction ``d``'s flows."""
    fl = [f for f in j["flows"] if f["direction"] == d]
    segs = sum(f.get("retransmits", 0) / f["retrans_rate"] for f in fl if f.get("retrans_rate"))
    return float(sum(f.get("retransmits", 0) for f in fl)), float(segs)


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


def _load(host: str, port: int, d: str, flows: int, secs: float, secret: str | None, cc: str,
          idle_s: float = IDLE_MAX_S, floor_s: float | None = None) -> dict:
    # no self probes: their frames hold the senders to 5 ms of unsent data, and measure wants the rate as a plain sender gets it
    # not --halt-at-end: each sender then waits up to 2 s (the probe's TIMED_ACK_GRACE) for the acks of its send
    # buffer, 2-2.5 s of each loaded phase at 1 Mbit/s (phases_s) — but the link stays loaded meanwhile and the
    # flows' samples run on, so the window (the second half of all the samples) is that much longer: halted at the
    # phase's end, a lossy 1.43-Mbit/s CoDel at 64 ms (campaign seed 22, path 1) no longer spanned 20 round trips
    # (ACKED_EDGE) and its rate fell back to the delivery-rate samples, 10.1 % low (0.3 % with the grace)
    # TCP_INFO samples: about SAMPLES_PER_PHASE a flow (the window, the phase's second half, keeps half of them:
    # enough for a p95); their JSON comes back over the path just measured
    sample_ms = min(max(secs * 1e3 / SAMPLES_PER_PHASE, 10.0), 1000.0)
    args = ["load", host, "-p", str(port), "--down", str(flows if d == "down" else 0), "--up", str(flows if d == "up" else 0),
            "-t", f"{secs:g}", "--idle", f"{idle_s * 1e3:.0f}ms", "--probe-interval", "10ms", "-C", cc, "--no-self-probes",
            "--sample-interval", f"{sample_ms:.0f}ms"]
    if floor_s is not None and floor_s < secs:
        # the phase ends once saturated, at twice that time, not before floor_s (fill_floor_s); its flows stop
        # with it (the grace above is for a phase that ends at a fixed time: here the second half is
        # saturated by construction)
        args += ["--until-stable", f"{floor_s * 1e3:.0f}ms"]
    if secret:
        args += ["--secret", secret]
    return _probe(args, timeout=secs + RESULTS_WAIT_S, partial=True)


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
    d = min(DELACK_MAX_MS, max(DELACK_MIN_MS, rtt))
    s = max(flows, 1) * WIRE_SEGMENT * 8 / (max(rate_mbps, 1e-6) * 1e6) * 1e3
    return min(d, s * max(1.0, 2 * d / rtt) if idle else s)


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
        return sum(math.exp(math.lgamma(sent + 1) - math.lgamma(i + 1) - math.lgamma(sent - i + 1) + i * lp + (sent - i) * lq)
                   for i in range(lost + 1))

    lo, hi = lost / sent, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if mid <= 0.0 or cdf(mid) > 1 - confidence:
            lo = mid
        else:
            hi = mid
    return hi


def one_way(round_trip: float) -> float:
    """A round trip's loss as each direction's, if alike: 1 - sqrt(1 - rt)."""
    return 1 - (1 - min(max(round_trip, 0.0), 1.0)) ** 0.5


def loss_stream_plan(lost: int, sent: int, ser_ms: float | None, base_ms: float, wifi: bool,
                     quick: bool) -> tuple[int | None, int, str]:
    """Whether the idle probes (``lost`` of ``sent`` round trips) leave a
    random loss unresolved that would still limit one loss-based flow on the
    path, and if so the loss stream's probes a second and count (see
    :data:`LOSS_STREAM_SHARE`): (pps or None, count, why). ``ser_ms``: the
    idle probes' serialization (:func:`serialization_ms`), which gives the
    ports' rate R = 1 / (1/down + 1/up), at most the slower port's: the
    loss that holds one flow under R over ``base_ms`` (Mathis) is no smaller
    than the one that holds it under the download's rate, so a path skipped
    here needs no stream at its true rate either."""
    if lost >= LOSS_RESOLVED:
        return None, 0, f"the idle probes lost {lost} of {sent}: resolved within 50 %"
    if not ser_ms:
        return None, 0, "the large idle probes found no serialization (no rate to pace a stream by)"
    rate = serialization_rate_mbps(ser_ms)
    bound = one_way(loss_upper(lost, sent))
    limits = mathis_loss(rate, 1, base_ms)
    if bound <= limits:
        return None, 0, (f"the idle probes bound the loss below {bound * 100:.2g} % each way, below the "
                         f"{limits * 100:.2g} % that would hold one flow under {rate:.3g} Mbit/s")
    pps = int(min(LOSS_STREAM_SHARE * rate * 1e6 / (PROBE_WIRE * 8), LOSS_STREAM_WIFI_PPS if wifi else LOSS_STREAM_PPS))
    count = int(pps * LOSS_STREAM_S[0 if quick else 1])
    if count < sent:
        return None, 0, (f"a stream at {LOSS_STREAM_SHARE:.0%} of {rate:.3g} Mbit/s would add fewer probes than the idle "
                         f"phase had ({count} < {sent})")
    return pps, count, (f"the idle probes bound the loss only below {bound * 100:.2g} % each way, above the "
                             f"{limits * 100:.2g} % that would hold one flow under {rate:.3g} Mbit/s")


def _loss_stream(host: str, port: int, secret: str | None, report: dict, ser_ms: float | None, wifi: bool, quick: bool,
                 say, beside=None):
    """More echo probes where the idle ones leave the path's random loss
    unresolved (:func:`loss_stream_plan`); their count pooled with the idle
    phase's into ``report["loss"]`` (each way) and ``report["loss_round_trip"]``,
    the stream's own figures in ``report["loss_stream"]``. A stream that
    lost more than the idle probes' upper bound met something they did not
    (a policer below its pace, a burst of the path's own): random loss is
    the same for both, so the idle figure stays and the reason is kept.

    ``beside``: a function run at the same time as the stream (the rest of
    the idle probes, :func:`idle_plan`) returning ``{"sent", "lost"}`` (or
    None), pooled into ``report["loss_idle"]`` before the stream is weighed;
    its result is returned."""
    idle = report["loss_idle"]
    pps, count, why = loss_stream_plan(idle["lost"], idle["sent"], ser_ms, report["base_rtt_ms"]["p50"], wifi, quick)
    u, err = None, None
    if pps is not None:
        say(f"  loss: {count} more echo probes at {pps} a second ({why}) ...")
        args = ["udp", "client", host, "-p", str(port), "--count", str(count), "--send-interval", f"{1e6 / pps:.0f}us",
                "--timeout", "1s", "--give-up", "3s"]
        if secret:
            args += ["--secret", secret]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        more = pool.submit(beside) if beside is not None else None
        if pps is not None:
            try:
                u = _probe(args, timeout=count / pps + 20)["udp"]
            except UserError as e:
                err = e
        extra = more.result() if more is not None else None
    if extra:
        idle["sent"] += int(extra["sent"])
        idle["lost"] += int(extra["lost"])
        report["loss_round_trip"] = idle["lost"] / max(idle["sent"], 1)
        report["loss"] = one_way(report["loss_round_trip"])
    if pps is None:
        report["loss_stream"] = {"skipped": why}
        return extra
    if err is not None:
        report["loss_stream"] = {"skipped": f"the stream failed ({err}); the idle probes' loss is kept"}
        return extra
    lost, sent = int(u["lost"]), int(u["sent"])
    st = report["loss_stream"] = {"sent": sent, "lost": lost, "pps": pps, "why": why, "loss_round_trip": lost / max(sent, 1)}
    idle_bound = loss_upper(idle["lost"], idle["sent"])
    if st["loss_round_trip"] > idle_bound:
        st["discarded"] = (f"it lost {lost} of {sent}, more than the idle probes allow "
                           f"({idle_bound * 100:.2g} % of round trips): not the path's random loss")
        say(f"  loss: {st['discarded']}; the idle probes' figure is kept")
        return extra
    rt = (idle["lost"] + lost) / max(idle["sent"] + sent, 1)
    report["loss_round_trip"] = rt
    report["loss"] = one_way(rt)
    report["loss_upper"] = one_way(loss_upper(idle["lost"] + lost, idle["sent"] + sent))
    say(f"  loss: {lost} of {sent} lost: {report['loss'] * 100:.2g} % each way with the idle probes' "
        f"(at most {report['loss_upper'] * 100:.2g} %)")
    return extra


def classify(probe_q95: float, flow_q50: float, flow_q95: float, dropped: bool, rate_mbps: float, flows: int = 4,
             loss: float = 0.0, rtt_ms: float | None = None, loss_rate_mbps: float | None = None) -> str:
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
       the tail);
    4. ``fifo`` otherwise: the probe waits behind the flows' queue. A
       single-queue AQM (CoDel, PIE) reads ``fifo`` too — one queue all flows
       share, at the depth the AQM holds, which is what its twin models.

    The flows' figures are their queue plus their ACKs' wait: less the
    bound on that wait they are a lower bound on the queue, which is what
    the claim of a backlog (isolation) needs; the claim of none (the
    policer's floor) keeps them as read, an upper bound. No ACK wait is
    taken off without ``rtt_ms`` (it sets the timer's ceiling)."""
    floor = burst_floor_ms(rate_mbps, flows)
    phase = loss_rate_mbps or rate_mbps
    idle = phase * UNSATURATED <= rate_mbps
    ack = ack_wait_ms(phase, flows, rtt_ms, idle) if rtt_ms is not None else 0.0

    def isolated(flow_q):
        return not idle and flow_q - ack - probe_q95 >= NOISE_MS and probe_q95 < ISOLATION * flow_q

    if isolated(flow_q50):
        return "aqm"
    if dropped and probe_q95 < floor:
        far = rtt_ms is not None and loss > FAR_ABOVE_MATHIS * mathis_loss(phase, flows, rtt_ms)
        if idle or flow_q95 < floor or (far and flow_q50 < floor):
            return "policer"
    if isolated(flow_q95):
        return "aqm"
    return "fifo"


#: Linux CUBIC (net/ipv4/tcp_cubic.c, 6.18; RFC 9438): the window after a loss is beta = 717/1024 of the window
#: at it, and grows back to that window W (segments) in K = cbrt(W (1 - beta) / C) s, C = 0.4 segments/s^3
#: (bic_scale 41: 41 x 10 / 1024), or sooner in the TCP-friendly region, where it grows
#: 3 (1 - beta) / (1 + beta) segments a round trip (tcp_friendliness: one segment per cwnd x beta_scale / 8 ACKs)
CUBIC_BETA = 717 / 1024
CUBIC_C = 0.4
CUBIC_FRIENDLY = 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA)


def cubic_return_s(window_bytes: float, rtt_ms: float) -> float:
    """How long (s) a CUBIC flow that lost at ``window_bytes`` takes to grow
    back to that window (:data:`CUBIC_BETA`): the cubic's K or the TCP-friendly
    growth's (1 - beta) W / alpha round trips, whichever is shorter. At 683
    segments and 30 ms: K = 8.0 s (friendly: 11.6 s); at 90 segments and 11
    ms: 0.56 s (K: 4.1 s)."""
    w = max(window_bytes, MSS) / MSS
    k = (w * (1 - CUBIC_BETA) / CUBIC_C) ** (1 / 3)
    return min(k, (1 - CUBIC_BETA) * w / CUBIC_FRIENDLY * rtt_ms / 1e3)


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


def undropped_alternatives(limiter: str, ev: dict, rate_mbps: float, flows: int) -> tuple[list[dict] | None, str | None]:
    """A ``fifo`` reading whose flows lost no more than the path's random loss
    (``ev["dropped"]`` False): the queue they stood in is what they brought,
    not the depth of what limits them, which dropped nothing at it. A FIFO at
    least that deep gives it (the verdict), and so does an AQM whose target
    lies above it: CoDel and PIE drop only while the queue's delay exceeds
    their target, and drops of theirs beyond it would have shown beyond the
    random loss. The queue is bounded below by the flows' p95 less their ACK
    wait (:func:`ack_wait_ms`, as :func:`classify` reads the phase) and the
    noise (:data:`NOISE_MS`): an AQM with a target above that is not
    excluded. As data: ``[{"limiter": "fifo"}, {"limiter": "aqm",
    "target_above_ms": that}]``, and the words; (None, None) where the
    reading is not such a one."""
    if limiter != "fifo" or ev.get("dropped", True):
        return None, None
    phase = ev.get("rate_mbps") or rate_mbps
    ack = ack_wait_ms(phase, flows, ev["loaded_rtt_ms"], phase * UNSATURATED <= rate_mbps) if "loaded_rtt_ms" in ev else 0.0
    above = max(ev["flow_q95_ms"] - ack - NOISE_MS, 0.0)
    return ([{"limiter": "fifo"}, {"limiter": "aqm", "target_above_ms": above}],
            f"a queue of {ev['flow_q95_ms']:.3g} ms (the flows' p95; at least {above:.3g} ms less their ACK wait and the "
            f"noise) without drops beyond the random loss: a FIFO at least that deep, or an AQM whose target is above "
            f"{above:.3g} ms, which drops nothing there; not told apart")


def _significant(retransmits: float, segments: float, idle_loss: float, handful: float = 3) -> bool:
    """Retransmissions beyond the idle path's random loss at three standard
    deviations (binomial, ``segments`` draws at ``idle_loss``), and more than
    ``handful``: a few retransmissions of a TCP flow (a SYN, a tail probe)
    are no drop pattern."""
    expected = idle_loss * segments
    return retransmits - expected > 3 * (expected * (1 - idle_loss)) ** 0.5 + handful


def _direction(host: str, port: int, d: str, flows: int, base_p50: float, secret: str | None, quick: bool, lossy: bool,
               idle_loss: float, say, after_ms: float = 0.0, port_mbps: float | None = None) -> dict:
    """One direction: a phase that fills the buffer (CUBIC: a loss-based
    control fills whatever buffer there is, which is what reveals it; BBR
    would hold the queue near one BDP and hide a deep buffer), then a phase
    that finds the rate (BBR, which neither reads random loss as congestion
    nor collapses behind a policer: its long-term sampling finds the policed
    rate — through a 20 Mbit/s policer 4 CUBIC flows delivered 13.9 Mbit/s,
    4 BBR flows 19.1). The rate is the larger of the two. ``after_ms``: the
    queue (ms) a phase before left on the path (:func:`gap_s`); ``port_mbps``:
    the port's rate the idle path showed (:func:`_ports`), with which a fill
    that kept it busy needs no BBR phase (:data:`BUSY_SHARE`)."""
    fill_cc = "bbr" if lossy else LOAD_CC
    secs = _phase_secs(base_p50, quick, fill=True)
    # the saturation end (fill_floor_s) with --quick only, where no random loss was seen or the fill is BBR's: a
    # random loss is no evidence of the pipe's end for a loss-based load (50 Mbit/s at 80 ms with 0.3 %, a 1-BDP
    # FIFO: with the saturation end CUBIC's fill read 41 Mbit/s and an AQM instead of the FIFO,
    # tests/test_advise_loss.py), and the full measurement keeps its length for the capacity's variation (the
    # LTE-like trace, full measurement with the saturation end: p10 / p90 at 0.89 / 1.06 x its median, within a
    # fixed link's margin; 0.88 / 3.85 before, tests/test_advise.py)
    floor = fill_floor_s(port_mbps, secs) if quick and (idle_loss == 0 or fill_cc == "bbr") else secs
    say(f"  loading the path {d} ({flows} {fill_cc} flows, {floor:.3g}-{secs:g} s: until saturated) ...")
    tf = time.monotonic()
    j = _load(host, port, d, flows, secs, secret, fill_cc, gap_s(after_ms, base_p50), floor_s=floor)
    phases = {"fill": time.monotonic() - tf}
    ran, sat = _loaded_s(j)
    # what the phases were planned to take (the quiet gap and the load: its ceiling), beside what they took,
    # and what the fill's load ran (its end condition: floor, saturation, ceiling)
    planned = {"fill": gap_s(after_ms, base_p50) + secs}
    fill_end = {"floor_s": floor, "ceiling_s": secs, "saturated_at_s": sat, "ran_s": ran}
    w = _window(j, d)
    if w["probes"].size < 5:
        raise UserError(f"measure: too few probe replies under load toward {host} ({w['probes'].size}); is UDP blocked?")
    ev = _evidence(j, w, d, base_p50, idle_loss)
    fill = ev
    rates = {fill_cc: w["rate_mbps"]}
    rate_from = {fill_cc: w["rate_from"]}
    # a standing queue at a shared queue through the window (the flows' median queueing above the burst
    # floor) means the link never idled: the fill phase's rate is the link's, and a BBR phase would only
    # cost time (at 200 ms, two more load runs of ~7 s each)
    floor = burst_floor_ms(w["rate_mbps"], flows)
    standing = _classify_ev(ev, w["rate_mbps"], flows) == "fifo" and ev["flow_q50_ms"] >= floor
    try:
        vfill = rate_variation(j, d, base_p50)
    except (KeyError, ValueError):
        vfill = None
    busy = (vfill is not None and vfill["busy_windows"] >= BUSY_SHARE * vfill["windows"] and port_mbps is not None
            and w["rate_mbps"] * TRAIN_PORT_MARGIN >= port_mbps)
    jb = None
    if busy and not standing:
        say(f"  {d}: {w['rate_mbps']:.4g} Mbit/s with {fill_cc}, the bottleneck busy in {vfill['busy_windows']} of "
            f"{vfill['windows']} windows at the port's {port_mbps:.4g}: the link's rate (no BBR phase)")
    if not lossy and not standing and not busy:
        rsecs = bbr_phase_secs(base_p50, w["rate_mbps"], flows, quick)
        say(f"  {d}: {w['rate_mbps']:.4g} Mbit/s with {fill_cc}; the rate with {flows} bbr flows ({rsecs:g} s) ...")
        tb = time.monotonic()
        try:
            jb = _load(host, port, d, flows, rsecs, secret, "bbr", gap_s(ev["flow_q95_ms"], base_p50))
            phases["bbr"] = time.monotonic() - tb
            planned["bbr"] = gap_s(ev["flow_q95_ms"], base_p50) + rsecs
            wb = _window(jb, d)
            rates["bbr"], rate_from["bbr"] = wb["rate_mbps"], wb["rate_from"]
            # the fill phase never reached the rate (CUBIC collapsed behind a policer or under random loss, or
            # could not grow on a long path in its time): its queueing describes that collapse, not the
            # bottleneck under load — the phase that reached the rate tells what limits it
            if wb["rate_mbps"] >= UNSATURATED * w["rate_mbps"] and wb["probes"].size >= 5:
                ev = _evidence(jb, wb, d, base_p50, idle_loss)
                ev["phase"] = "bbr"
        except UserError as e:
            phases["bbr"] = time.monotonic() - tb
            say(f"  (no BBR phase: {e}; the rate is CUBIC's)")
    rate = max(rates.values())
    # the capacity's variation (issue 31): of the phases, the one that kept the bottleneck busy longest
    variation = None
    for vj, vcc in ((j, fill_cc), (jb, "bbr")):
        try:
            v = rate_variation(vj, d, base_p50) if vj is not None else None
        except (KeyError, ValueError):
            v = None
        if v and (variation is None or v["busy_windows"] > variation["busy_windows"]):
            variation = dict(v, phase=vcc)
    # the bursts drain at the bottleneck's rate: the larger of the phases'
    limiter = _classify_ev(ev, rate, flows)
    # the buffer: what a FIFO holds under load, the flows' p95 (smoothed RTT: the VM's pauses do not enter it
    # as they enter the probes' p95) — the larger of the two phases' where both ran (a loss-based control fills
    # whatever buffer there is, BBR about one BDP beyond the pipe, and either may not have had the time); none
    # behind a policer (its port's buffer is never filled, so not seen either); unknown behind an AQM,
    # which holds its queue below its limit
    # — and what that figure is (buffer_reading): a lower bound where the queue did not overflow while it was read,
    # an upper bound where it did but stayed within the flows' own bursts, else the depth
    from_bbr = ev.get("phase") == "bbr" and jb is not None and ev["flow_q95_ms"] > fill["flow_q95_ms"]
    rj = jb if from_bbr else j
    # the window's drops and deepest queue, kept whatever the limiter (_not_a_policer reads them)
    drops = dict(window_drops(rj, d, idle_loss, base_p50), phase="bbr" if from_bbr else fill_cc, queued_bytes=None)
    reading = {"buffer_bytes": None, "buffer_bdp": None, "buffer_window": drops}
    if limiter not in ("aqm", "policer"):
        # a moving capacity: the bytes queued at each sample's own drain rate (queued_bytes_p95)
        drops["queued_bytes"] = queued_bytes_p95(rj, d, base_p50) if variable_rate(variation) else None
        reading = dict(buffer_reading(max(ev["flow_q95_ms"], fill["flow_q95_ms"]), rate, flows, base_p50,
                                      drops["overflowed"], drops["queued_bytes"], drops["queue_max_ms"]),
                       buffer_window=drops)
    saturated = ev["flow_q95_ms"] >= 1.0 or ev["dropped"]
    added = fill["probe_q95_ms"]
    # the loss-based fill's first losses: COBALT's first signal (CAKE) where an AQM is read (_cobalt)
    first = first_losses(j, d) if fill_cc == LOAD_CC else {"flows": [], "sample_s": None, "lossless": 0}
    bbr = (None, "the fill ran BBR (a lossy path): no loss-based slow start to read")
    cake, why_cake = cobalt_first_signal(first, rate, flows, base_p50, idle_loss) if fill_cc == LOAD_CC else bbr
    shared, why_shared = cobalt_first_signal(first, rate, flows, base_p50, idle_loss, shared=True) if fill_cc == LOAD_CC else bbr
    first.update(cake=cake, note=why_cake, cake_shared=shared, note_shared=why_shared)
    # the loss-based fill's flows that never came back to their first losses' queue show no depth below a bound
    unseen, why_unseen = (unreturned_depth_ms(first, rate, flows, base_p50, ran if ran is not None else secs)
                          if fill_cc == LOAD_CC and ev["phase"] == "fill" else (None, "the evidence is not a loss-based fill's"))
    return {"first_loss": first, "rate_mbps": rate, "rate_by_cc": rates, "rate_from": rate_from, "load_cc": fill_cc,
            "loaded_rtt_ms": {"p50": fill["probe_p50_rtt"], "p95": fill["probe_p95_rtt"]},
            "added_delay_ms": added, "grade": grade(added), **reading,
            "limiter": limiter, "limiter_note": ambiguity(limiter, rate, flows, unseen) or undropped_alternatives(limiter, ev, rate, flows)[1],
            "limiter_alternatives": alternatives(limiter, rate, flows, unseen) or undropped_alternatives(limiter, ev, rate, flows)[0],
            "unseen_depth_ms": unseen, "unseen_depth_note": why_unseen,
            "evidence": dict(ev, burst_floor_ms=burst_floor_ms(rate, flows)),
            "retrans_rate": fill["retrans_rate"], "flow_rtt_ms": {"p50": w["flow_rtt_p50"], "p95": w["flow_rtt_p95"]},
            "flows": flows, "phase_s": ran if ran is not None else secs, "fill_end": fill_end, "phases_s": phases, "planned_s": planned, "saturated": saturated, "rate_variation": variation,
            # the loss-based fill's own queue and drops (the evidence may be BBR's phase): what tells a WiFi AP's design
            "fill_flow_q95_ms": fill["flow_q95_ms"], "fill_dropped": fill["dropped"],
            "problems": [x for x in (j.get("problem"), (jb or {}).get("problem")) if x]}


def _evidence(j: dict, w: dict, d: str, base_p50: float, idle_loss: float) -> dict:
    """The figures the limiter is read from, of one loaded phase (its JSON
    ``j`` and its window ``w``): the probes' and the flows' queueing above
    the base RTT, the drops beyond the idle loss, the loss against Mathis's."""
    p50, p95 = float(np.percentile(w["probes"], 50)), float(np.percentile(w["probes"], 95))
    retx, segs = _retrans(j, d)
    retrans = retx / segs if segs else 0.0
    # the flows' queueing from their smoothed RTT; the probes' where the flows reported none
    flow_q50 = max((w["flow_rtt_p50"] if np.isfinite(w["flow_rtt_p50"]) else p50) - base_p50, 0.0)
    flow_q95 = max((w["flow_rtt_p95"] if np.isfinite(w["flow_rtt_p95"]) else p95) - base_p50, 0.0)
    flows = len({f["id"] for f in j["flows"] if f["direction"] == d}) or 1
    excess = max(retrans - idle_loss, 0.0)
    loaded = base_p50 + flow_q50
    # the probes' count and their window (s since the load began, its quiet gap included): what the choice asks
    # (_direction) and what to look at where a reading surprises (the raw series are not kept)
    return {"phase": "fill", "rate_mbps": w["rate_mbps"], "probes": int(w["probes"].size),
            "probe_window_s": [float(x) for x in w["probe_window_s"]], "probe_q95_ms": max(p95 - base_p50, 0.0), "probe_p50_rtt": p50,
            "probe_p95_rtt": p95, "flow_q50_ms": flow_q50, "flow_q95_ms": flow_q95, "dropped": _significant(retx, segs, idle_loss),
            "retransmits": retx, "segments": segs, "retrans_rate": retrans, "excess_loss": excess, "loaded_rtt_ms": loaded,
            "mathis_loss": mathis_loss(w["rate_mbps"], flows, loaded)}


def first_losses(j: dict, d: str) -> dict:
    """Each of direction ``d``'s flows in one loaded phase (its JSON ``j``) at
    its first loss: ``{"flows": [{"id", "t_s" (since the flow's first
    sample), "cwnd_bytes" (the largest window sampled up to and with the
    first sample that counts a retransmission: the window the slow start had
    reached), "sent_bytes" (delivered by then)}], "sample_s" (the median
    spacing of the TCP_INFO samples), "lossless" (flows that lost nothing),
    "first" (all flows together at the first of those losses: {"t_s" since
    the phase's first sample, "cwnd_bytes" (the sum of each flow's largest
    window sampled until then), "sent_bytes"}, or None)}``.
    A flow whose very first sample already counts a retransmission (its
    handshake or its first window) tells nothing of its slow start and is left out."""
    fs = j["raw"]["series"]["flows"]
    fid, t = np.asarray(fs.get("flow", []), int), np.asarray(fs.get("t", []), float)
    cwnd, retx = np.asarray(fs.get("cwnd_bytes", []), float), np.asarray(fs.get("retransmits", []), float)
    sent = np.asarray(fs.get("delivered_bytes", []), float)
    ids = [i for i in sorted({f["id"] for f in j["flows"] if f["direction"] == d}) if (fid == i).sum() >= 2]
    out: dict = {"flows": [], "sample_s": None, "lossless": 0, "first": None}
    if not ids or cwnd.size != t.size or retx.size != t.size:
        return out
    if sent.size != t.size:
        sent = np.zeros(t.size)
    out["sample_s"] = float(np.median(np.concatenate([np.diff(t[fid == i]) for i in ids])))
    for i in ids:
        s = fid == i
        k = np.nonzero(retx[s] > 0)[0]
        if not k.size:
            out["lossless"] += 1
            continue
        if k[0] == 0:
            continue
        k = int(k[0])
        out["flows"].append({"id": i, "t_s": float(t[s][k] - t[s][0]), "cwnd_bytes": float(cwnd[s][: k + 1].max()),
                             "sent_bytes": float(sent[s][k]), "at": float(t[s][k])})
    if out["flows"]:
        at = min(f["at"] for f in out["flows"])
        upto = [(fid == i) & (t <= at) for i in ids]
        out["first"] = {"t_s": float(at - t[np.isin(fid, ids)].min()),
                        "cwnd_bytes": float(sum(cwnd[u].max() for u in upto if u.any())),
                        "sent_bytes": float(sum(sent[u].max() for u in upto if u.any()))}
    for f in out["flows"]:
        del f["at"]
    return out


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
    bound = codel / 2 ** (dt * 1e3 / base_ms)
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


def _classify_ev(ev: dict, rate_mbps: float, flows: int) -> str:
    return classify(ev["probe_q95_ms"], ev["flow_q50_ms"], ev["flow_q95_ms"], ev["dropped"], rate_mbps, flows,
                    ev["excess_loss"], ev["loaded_rtt_ms"], ev["rate_mbps"])


#: the idle probes' wire size (B): bloatlab-probe udp client's 64-byte payload + UDP 8 + IPv4 20 (the emulator
#: and a router serialize the IP packet); the reply is as large
PROBE_WIRE = 92


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


def _probe_serialization(host: str, port: int, secret: str | None, rmin_small_ms: float) -> float | None:
    """20 large probes, 50 ms apart (1 s), for :func:`serialization_ms`;
    None where they found no answer (a path that drops large datagrams)."""
    args = ["udp", "client", host, "-p", str(port), "--count", "20", "--interval", "50ms", "--size", str(LARGE_PROBE),
            "--timeout", "1s", "--give-up", "3s"]
    if secret:
        args += ["--secret", secret]
    try:
        j = _probe(args, timeout=20)
    except UserError:
        return None
    series = np.asarray((j.get("raw") or {}).get("series", {}).get("probes", {}).get("rtt_ms", []), float)
    series = series[np.isfinite(series)]
    if not series.size:
        return None
    return serialization_ms(rmin_small_ms, float(series.min()))


def _twin_buffer(x: dict) -> int | None:
    """The twin's buffer of a direction: at least one packet; None (the
    qdisc's own limit) behind an AQM. Where the reading is a bound
    (:func:`buffer_reading`) the twin takes the figure read, which is the
    bound: a lower bound is what a load like the fill met in its time (a
    deeper buffer than the flows reached changes nothing for flows no longer
    than the fill's), an upper bound is above the figure read only by the
    flows' own bursts and the noise."""
    return None if x["buffer_bytes"] is None else max(x["buffer_bytes"], 1500)


#: the fewest packets after a train's first loss whose arrival rate is read (bloatlab-probe calls a shorter tail's
#: rate coarse: crates/probe/src/train.rs, analyse_with)
TAIL_RATE_PACKETS = 10
def _flows_window(j: dict, d: str):
    """Direction ``d``'s flow samples of one loaded phase (its JSON ``j``) and the window they are read over, as
    :func:`_window` reads it (the second half of the time all flows ran): (series, flow ids per sample, times,
    the flows with two samples or more, window start, window end); no flows: an empty list and a 0-s window."""
    fs = j["raw"]["series"]["flows"]
    fid, t = np.asarray(fs.get("flow", []), int), np.asarray(fs.get("t", []), float)
    ids = [i for i in sorted({f["id"] for f in j["flows"] if f["direction"] == d}) if (fid == i).sum() >= 2]
    if not ids:
        return fs, fid, t, ids, 0.0, 0.0
    t0 = min(t[fid == i].min() for i in ids)
    t1 = min(t[fid == i].max() for i in ids)
    return fs, fid, t, ids, t0 + 0.5 * (t1 - t0), t1


def window_drops(j: dict, d: str, idle_loss: float, base_ms: float) -> dict:
    """Whether direction ``d``'s flows of one loaded phase (its JSON ``j``)
    lost segments beyond the random loss **within the window the queue is read
    from** (the second half of the time all flows ran, as :func:`_window`),
    and the most they queued there: ``{"retransmits", "segments",
    "overflowed", "queue_max_ms"}`` — the median over the flows of each one's
    largest smoothed RTT − ``base_ms`` in the window (a FIFO that overflowed
    held its depth then, and every flow's RTT crossed it; a queue full only
    briefly — CUBIC's sawtooth on a shallow buffer at a long RTT — keeps the
    p95 below the depth: campaign seed 9 path 4, 13.6 ms read 9.8). A FIFO drops only when
    full, so a drop there within the window is the queue at its depth in
    the window; the phase's ``dropped`` counts its slow start's overshoot too,
    after which CUBIC may not come back to the depth within the phase (its
    window regrows to W_max in K = (W_max x 0.3 / 0.4)^(1/3) s, 10 s for 1380
    segments a flow: campaign seed 28 path 42, 0.6 BDP at 151 ms). Any
    retransmission counts where the idle path lost nothing (a FIFO without
    random loss drops only when full); beside a random loss, those beyond its
    expectation at three binomial standard deviations (:func:`_significant`,
    no handful: one overflow may cost one segment a flow at low rates).
    ``overflowed`` is None where the samples carry no retransmission count."""
    fs, fid, t, ids, w0, t1 = _flows_window(j, d)
    retx, acked = np.asarray(fs.get("retransmits", []), float), np.asarray(fs.get("delivered_bytes", []), float)
    srtt = np.asarray(fs.get("srtt_ms", []), float)
    tops = [float(np.max(srtt[s])) - base_ms for s in ((fid == i) & (t >= w0) & (t <= t1) for i in ids)
            if srtt.size == t.size and s.any()]
    top = max(float(np.median(tops)), 0.0) if tops else None
    if not ids or retx.size != t.size or acked.size != t.size:
        return {"retransmits": None, "segments": None, "overflowed": None, "queue_max_ms": top}
    lost = sum(float(np.interp(t1, t[fid == i], retx[fid == i]) - np.interp(w0, t[fid == i], retx[fid == i])) for i in ids)
    segs = sum(float(np.interp(t1, t[fid == i], acked[fid == i]) - np.interp(w0, t[fid == i], acked[fid == i])) for i in ids) / MSS
    return {"retransmits": lost, "segments": segs, "overflowed": _significant(lost, segs, idle_loss, handful=0),
            "queue_max_ms": top}


def queued_bytes_p95(j: dict, d: str, base_ms: float) -> float | None:
    """The bytes the bottleneck held, from each TCP_INFO sample of direction
    ``d``'s flows in the window (:func:`_window`): the sample's queueing
    (smoothed RTT − ``base_ms``) x the flows' summed delivery rate then (wire
    bytes: x 1500/1448) — a queue of B bytes delays by B / the rate that
    drains it, and ``tcpi_delivery_rate`` is that rate over the sample's
    last round trip (Linux ``tcp_rate.c``), the sojourn included. On a link
    whose capacity moves the delay's p95 falls where the capacity is low,
    so its product with the median rate over-reads (campaign seed 28: LTE-like
    traces at 7.2 and 256 Mbit/s, 3 ms, read 2.7 and 2.2 x their FIFO's
    bytes). The p95 of each flow's products, the median over the flows (as
    :func:`_window`'s p95); None without samples."""
    fs, fid, t, ids, w0, t1 = _flows_window(j, d)
    rate_s, srtt = np.asarray(fs.get("delivery_rate_bps", []), float), np.asarray(fs.get("srtt_ms", []), float)
    if not ids or rate_s.size != t.size or srtt.size != t.size:
        return None
    p95s = []
    for i in ids:
        s = (fid == i) & (t >= w0) & (t <= t1) & np.isfinite(srtt) & (srtt > 0)
        if not s.any():
            continue
        total = sum(np.interp(t[s], t[fid == k], rate_s[fid == k]) for k in ids) * WIRE_PER_PAYLOAD
        p95s.append(float(np.percentile(np.maximum(srtt[s] - base_ms, 0.0) / 1e3 * total / 8, 95)))
    return float(np.median(p95s)) if p95s else None


def buffer_reading(queue_ms: float, rate_mbps: float, flows: int, base_ms: float, overflowed: bool | None,
                   queued_bytes: float | None = None, queue_max_ms: float | None = None) -> dict:
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
      known, the floor alone);
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
        out.update(buffer_bound="upper", buffer_bytes_max=int(max(top, buf)),
                   buffer_note=f"at most {max(top, buf) / 1e3:.3g} KB: the flows queued {queue_ms:.3g} ms, below what "
                               f"{flows} flows' own bursts and the noise show without a queue ({floor:.3g} ms at "
                               f"{rate_mbps:.4g} Mbit/s)")
    return out


#: a port the train reads no faster than this multiple of the policed rate is not told apart from it
#: (the head's spacing then is the policer's own, or the sender's): the twin keeps POLICER_PORT
TRAIN_PORT_MARGIN = 1.1


def _train_or_note(host: str, port: int, secret: str | None, count: int | None, d: dict, note: str, assumed: str,
                   say) -> dict | None:
    """:func:`_train`, or None where it failed: then ``d[note]`` says why and what is ``assumed`` instead."""
    try:
        return _train(host, port, secret, count)
    except UserError as e:
        d[note] = f"no packet train ({e}): {assumed}"
        say(f"  ({d[note]})")
        return None


def _train(host: str, port: int, secret: str | None, count: int | None = None, pace_mbps: float | None = None) -> dict:
    """A packet train from the server (``bloatlab-probe udp train``; ``count``
    full packets, its default 1000; back to back, or paced at ``pace_mbps``:
    ``--rate``): the ``train`` object of its JSON."""
    args = ["udp", "train", host, "-p", str(port)] + (["--count", str(count)] if count else [])
    if pace_mbps:
        args += ["--rate", f"{pace_mbps * 1e6:.0f}bit"]
    if secret:
        args += ["--secret", secret]
    return _probe(args, timeout=30, who="measure (" + ("paced " if pace_mbps else "") + "packet train)")["train"]


def _paced_train(host: str, port: int, secret: str | None, count: int, pace_mbps: float) -> dict:
    """:func:`_train` of ``count`` packets paced at ``pace_mbps``."""
    return _train(host, port, secret, count, pace_mbps)


def policer_figures(train: dict, rate_mbps: float) -> tuple[float | None, int | None, list[str]]:
    """The port's rate and the bucket behind a policer of ``rate_mbps``
    (measured) from a packet train: (port Mbit/s, bucket B, why not) — each
    None where the train cannot tell, with the reason.

    The port is the head's dispersion rate (the packets before the first
    loss) unless the server set that pace or it is no faster than the
    policed rate. The bucket is the head's bytes and half a packet (the middle
    of the packet-wide interval it lies in) less what the policed rate
    refilled while the head reached the policer (at the rate it was sent):
    ``head_bytes + W/2 - head_bytes * rate / send rate`` (crates/probe/src/train.rs)."""
    why = []
    lead = port = train.get("leading_mbps")
    if port is None:
        why.append("port: " + next((n for n in train.get("notes", []) if "no port rate" in n or "one instant" in n), "no head to read it from"))
    elif train.get("sender_limited"):
        why.append(f"port: the server, not the path, set the head's pace (the port is at least {port:.4g} Mbit/s)")
        port = None
    elif port < TRAIN_PORT_MARGIN * rate_mbps:
        why.append(f"port: the head arrived at {port:.4g} Mbit/s, no faster than the policed rate")
        port = None
    bucket = None
    half = train.get("wire_bytes", 1500) / 2
    # the rate the head reached the policer at: as the server sent it (None: all at one instant)
    sent_at = max(train.get("head_send_mbps") or float("inf"), lead or 0.0)
    if train.get("first_loss") is None:
        # a bucket at least that large: its least, the train's bytes less what the rate refilled meanwhile, is
        # the figure the twin takes (the scenario's default, 10 ms of the rate, may be far below what passed)
        bucket = max(int(train["head_bytes"] - train["head_bytes"] * rate_mbps / sent_at), 1500)
        why.append(f"bucket: the train's {train['head_bytes']} B passed whole: at least {bucket} B (taken as that)")
    elif train.get("head_packets", 0) < 2:
        # a bucket of less than two packets: its bytes are all a train can say
        bucket = max(int(train["head_bytes"] + half), 1500)
        why.append(f"bucket: {train.get('head_packets', 0)} packet(s) before the first loss: at most "
                   f"{train.get('head_packets', 0) + 1} packets' bytes, taken as {bucket} B")
    elif sent_at <= rate_mbps:
        why.append(f"bucket: the head was sent at {sent_at:.4g} Mbit/s, no faster than the policed rate: not read")
    else:
        bucket = max(int(train["head_bytes"] + half - train["head_bytes"] * rate_mbps / sent_at), 1500)
    return port, bucket, why


#: The paced train (_paced_policer_train): a back-to-back train reaches the port at the server's 6-10 Gbit/s, so
#: its head is cut by whichever runs out first, the policer's bucket or the port's FIFO (seed 8 path 14: a 106-KB
#: FIFO on a 67.7-Mbit/s port cut it after 71 packets, long before the 271-KB bucket). A train paced at most at the
#: port's rate never queues there, so its first loss is the policer's. Its pace: this share of the port the first
#: train's head read: the head's dispersion reads the port within ~1 % (67.76 for 67.71 Mbit/s), and a pace that
#: exceeded it by e would queue e x the pace x its length; 5 % below keeps that at none, and costs the bucket's
#: reading little (the bucket drains at pace - C, 5 % of the port less)
PACE_SHARE = 0.95
#: ... of at most this many full packets (3 MB): with the first train (1.5 MB) and the WiFi train (0.3 MB) within
#: the server's budget (crates/probe/src/train.rs BUDGET_BYTES, 8 MB per 10 s) with room for a second paced train;
#: and no longer than the server allows a paced train (MAX_PACED_NS, 1 s)
PACED_TRAIN_PACKETS = 2000
PACED_TRAIN_S = 1.0
#: the measured rate's error, the rate goal of issue 30: the bucket's refill is read from it (the tail's own rate and
#: its share of packets that passed read the server's pace as much as the policer's: a server short of CPU fell
#: from 64.5 to 35 Mbit/s through the tail of seed 8 path 14's paced train, where no packet was lost, and the tail
#: read 34.8 Mbit/s for a 39-Mbit/s policer), so the bucket is known within this share of the refill
RATE_ERROR = 0.10
#: a paced train's bucket is a full one only where the policer had time to refill it since the train before:
#: where the gap's refill (the measured rate x the time since) was less than the bucket read, the train may have
#: found it part full; it is sent again once, after the time the largest bucket it can read takes to refill (at
#: most this long, s)
PACED_REFILL_MAX_S = 5.0


def policer_cut(lost_seq: list[int], count: int) -> int:
    """Where a train's bucket ran dry: the packet index k that splits its
    ``count`` packets (``lost_seq``: those lost) into two runs of loss rates
    p1 (before k, the path's random loss) and p2 (from k on, the policer's:
    1 - C/U) at the largest likelihood (two Bernoulli runs). Without random
    loss it is the first loss (a run without loss before it has likelihood
    1); with it, a random loss in the head no longer cuts the head short."""
    if not lost_seq:
        return count
    lost = np.zeros(count, bool)
    lost[[s for s in lost_seq if 0 <= s < count]] = True
    before = np.concatenate([[0], np.cumsum(lost)])  # losses in [0, k)
    k = np.arange(count + 1)
    total = before[-1]

    def ll(n, x):
        # log-likelihood of x losses in n draws at their own rate
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(n > 0, x / np.maximum(n, 1), 0.0)
            a = np.where(x > 0, x * np.log(np.where(p > 0, p, 1.0)), 0.0)
            b = np.where(n - x > 0, (n - x) * np.log(np.where(p < 1, 1 - p, 1.0)), 0.0)
        return a + b

    score = ll(k, before) + ll(count - k, total - before)
    # the policer's run loses more than the head's: a tail that loses nothing (a sender that fell below the
    # policed rate, or a train that ended as the bucket did) is no second run
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p2 = before / np.maximum(k, 1), (total - before) / np.maximum(count - k, 1)
    score = np.where(p2 > p1, score, -np.inf)
    # among equals, the earliest cut (the first loss where nothing before it was lost)
    return int(np.argmax(score))


def paced_bucket(train: dict, rate_mbps: float, pace_mbps: float, random_loss: float = 0.0) -> tuple[float | None, float, int, str]:
    """The bucket from a paced train (``train``, sent at ``pace_mbps``;
    ``rate_mbps`` measured): (bucket B or None where it passed whole, its
    resolution in B (where None: the least bucket), the cut, how). The cut
    k: the first loss, or where the idle path showed random loss
    (``random_loss``, each way) :func:`policer_cut` — not on a loss-free path:
    a server short of CPU paces unevenly, and where it fell below the policed
    rate for a while the bucket refilled between the policer's first losses,
    which the likelihood then reads as random (seed 8 path 14 through the
    emulator on a loaded VM: losses at 775 and 794, then from 892 on; 273 KB
    from the first, 311 from 892, for 271). h packets arrived before k; the policer passed
    those h from a full bucket plus what it refilled while the k packets
    came at the rate U the server sent the head at (its send times; the pace
    where it has none): ``B = (h + 1/2) W - k W C/U`` — the formula of
    :func:`policer_figures` with the paced head's send rate, C the measured
    rate (within :data:`RATE_ERROR`)."""
    w = train.get("wire_bytes", WIRE_SEGMENT)
    count = int(train.get("sent", 0))
    lost = train.get("lost_seq") or []
    if not lost:
        sent = train.get("head_send_mbps") or pace_mbps
        b = count * w * (1 - rate_mbps / sent)
        return None, b, count, (f"the paced train's {count * w} B passed whole: the bucket is at least {b / 1e3:.3g} KB")
    k = policer_cut(lost, count) if random_loss > 0 else min(lost)
    before = sum(1 for s in lost if s < k)
    h = k - before
    u = train.get("head_send_mbps") or pace_mbps
    # the rate the k packets were sent at, from their own send times where the probe gives them (a server short of
    # CPU paces unevenly, and the head before a random first loss is not the head before the cut: r2lossy through the
    # emulator, cut at 569 after losses at 72 and 363, read 344 KB for 156 with the send rate of the first 72)
    tx = train.get("tx_ms") or []
    sent = [i for i in range(min(k, len(tx))) if tx[i] is not None]
    if len(sent) >= 2 and tx[sent[-1]] > tx[sent[0]]:
        u = (sent[-1] - sent[0]) * w * 8 / ((tx[sent[-1]] - tx[sent[0]]) * 1e3)
    if u <= rate_mbps:
        return None, 0.0, k, f"the paced head was sent at {u:.4g} Mbit/s, no faster than the policed rate: not read"
    f = rate_mbps / u
    res = w + k * w * f * RATE_ERROR
    how = f"C/U {f:.3g}: the measured {rate_mbps:.4g} Mbit/s over the head's send rate {u:.4g}"
    cut = f"the first loss at packet {k}" if before == 0 else f"the bucket ran dry at packet {k} ({before} random losses before)"
    return (h + 0.5) * w - k * w * f, res, k, f"{cut}, {h} packets through; {how}"


def port_fifo(train: dict) -> float | None:
    """The port's FIFO from a back-to-back train whose head the FIFO cut:
    it filled where what arrived at the sender's rate U exceeded what the
    port drained at P by its size: ``Q = (h + 1/2) W - h W P/U`` (the half
    packet as for the bucket: Q plus the drain lies in [h W, (h+1) W))."""
    w = train.get("wire_bytes", WIRE_SEGMENT)
    h, p = train.get("head_packets", 0), train.get("leading_mbps")
    u = train.get("head_send_mbps")
    if not p or not u or h < 2:
        return None
    return (h + 0.5) * w - h * w * p / max(u, p)


def _policer_train(host: str, port: int, secret: str | None, d: dict, say, random_loss: float = 0.0) -> None:
    """Behind a policer: a packet train back to back, then where it read a
    port (its head sent faster than the port drained it, so the port's FIFO
    may have cut it) one paced at :data:`PACE_SHARE` of the port
    (:func:`_paced_policer_train`); their figures into the direction's report
    ``d`` (``train``, ``paced_train``, ``port_mbps``, ``bucket_bytes``,
    ``port_buffer_bytes``, ``train_note``, ``train_evidence``); ``random_loss``:
    the idle path's, each way (:func:`paced_bucket`)."""
    say("  down: a packet train for the policer's port rate and bucket ...")
    t = _train_or_note(host, port, secret, None, d, "train_note", "the port and bucket are assumed", say)
    done_at = time.monotonic()
    if t is None:
        d.update(train=None, port_mbps=None, bucket_bytes=None)
        return
    p, b, why = policer_figures(t, d["rate_mbps"])
    d.update(train=t, port_mbps=p, bucket_bytes=b, train_note="; ".join(why) or None,
             train_evidence=[f"train 1 (back to back, {t.get('head_send_mbps') or 0:.4g} Mbit/s): port "
                             + (f"{p:.4g} Mbit/s" if p else "not told") + f", {t.get('head_packets', 0)} packets before "
                             f"its first loss"])
    if p is not None and d.get("limiter_alternatives"):
        # the head came faster than the rate: the port is faster than what holds the flows to it, so that is no
        # queue at the port's rate (an AQM dequeues at its own: sch_cake's shaper paces without a bucket) but a
        # token bucket — a policer, or a tbf whose queue is shallower than the floor — or a capacity that moved
        d["limiter_alternatives"] = [a for a in d["limiter_alternatives"] if a["limiter"] != "aqm"]
    if p is not None and t.get("first_loss") is not None and b is not None:
        _paced_policer_train(host, port, secret, d, t, p, b, done_at, say, random_loss)
    b = d["bucket_bytes"]
    port_txt = f"port {p:.4g} Mbit/s" if p else "port not told"
    bucket_txt = f"bucket {b / 1e3:.3g} KB" if b else "bucket not told"
    fifo_txt = f", port buffer {d['port_buffer_bytes'] / 1e3:.3g} KB" if d.get("port_buffer_bytes") else ""
    say(f"  down: {port_txt}, {bucket_txt}{fifo_txt}" + (f" ({d['train_note']})" if d.get("train_note") else ""))


def _paced_policer_train(host: str, port: int, secret: str | None, d: dict, t1: dict, port_mbps: float, b1: int,
                         done_at: float, say, random_loss: float = 0.0) -> None:
    """The second train, paced at :data:`PACE_SHARE` of ``port_mbps`` (the
    first train ``t1``'s; ``b1`` its bucket reading, ``done_at`` when it
    ended): its bucket (:func:`paced_bucket`) where it is a full one
    (:data:`PACED_REFILL_MAX_S`). Where it exceeds the first train's reading
    by more than the two readings' resolution, the first train's head was
    cut by the port's FIFO, which :func:`port_fifo` then reads; otherwise the
    policer cut both, and the FIFO is at least what that formula gives."""
    rate = d["rate_mbps"]
    w = t1.get("wire_bytes", WIRE_SEGMENT)
    pace = PACE_SHARE * port_mbps
    if pace <= rate:
        d["train_evidence"].append(f"no paced train: {PACE_SHARE:.0%} of the port ({pace:.4g} Mbit/s) is no faster than "
                                   f"the policed rate")
        return
    count = int(min(PACED_TRAIN_PACKETS, PACED_TRAIN_S * pace * 1e6 / 8 / w + 1))
    bps = rate * 1e6 / 8
    ended = done_at
    for attempt in range(2):
        say(f"  down: a packet train paced at {pace:.4g} Mbit/s ({count} packets) for the bucket ...")
        start = time.monotonic()
        try:
            t2 = _paced_train(host, port, secret, count, pace)
        except UserError as e:
            d["train_evidence"].append(f"no paced train ({e}): the first train's bucket is kept")
            return
        done_at = time.monotonic()
        # the policer idled at least from the last train's end to this one's handshake (a round trip) after
        gap = start - ended + (t2.get("handshake_rtt_ms") or 0.0) / 1e3
        ended = done_at
        b2, res, k, how = paced_bucket(t2, rate, pace, random_loss)
        if b2 is None and not res:
            d["train_evidence"].append(f"train 2 (paced at {pace:.4g} Mbit/s): {how}; the first train's bucket is kept")
            return
        read = b2 if b2 is not None else res
        # a bucket the gap since the last train did not refill may have been part full: once more, after the
        # time the largest bucket this train can read (what it sent beyond the rate's refill) takes to refill
        if read < bps * gap or attempt == 1:
            break
        largest = count * w * (1 - rate / pace)
        wait = min(largest / bps - gap, PACED_REFILL_MAX_S)
        d["train_evidence"].append(f"paced train {attempt + 1}: {read / 1e3:.3g} KB, more than the {gap:.2g} s since the "
                                   f"train before refilled ({bps * gap / 1e3:.3g} KB): sent again after {wait:.2g} s")
        time.sleep(max(wait, 0.0))
    d["paced_train"] = t2
    full = read < bps * gap
    if b2 is None:
        # passed whole: a bucket at least that large (its least is taken, as policer_figures does)
        d["train_evidence"].append(f"train 2 (paced at {pace:.4g} Mbit/s): {how}")
        b2, res = read, 0.0
    else:
        d["train_evidence"].append(f"train 2 (paced at {pace:.4g} Mbit/s): bucket {b2 / 1e3:.3g} KB (+-{res / 1e3:.2g}): {how}"
                                   + ("" if full else f"; the {gap:.2g} s since the train before may not have refilled it"))
    # the first train's reading resolves to half a packet either way
    if b2 - b1 > res + w:
        d["bucket_bytes"] = int(max(b2, 1500))
        q = port_fifo(t1)
        if q is not None:
            d["port_buffer_bytes"] = int(max(q, 1500))
            d["train_evidence"].append(f"train 1's head was cut by the port's FIFO, not the policer (its {b1 / 1e3:.3g} KB "
                                       f"< the paced {b2 / 1e3:.3g} KB): the FIFO holds {q / 1e3:.3g} KB (its head's bytes "
                                       f"less what the port drained while they came)")
    elif b1 - b2 > res + w:
        d["train_evidence"].append(f"the paced train read less than the first ({b2 / 1e3:.3g} < {b1 / 1e3:.3g} KB): "
                                   f"its bucket was not full; the first train's is kept")
    else:
        q = port_fifo(t1)
        d["port_buffer_min_bytes"] = int(q) if q else None
        d["train_evidence"].append(f"both trains read the bucket alike ({b1 / 1e3:.3g}, {b2 / 1e3:.3g} KB): the policer cut "
                                   f"both; the port's FIFO is at least {q / 1e3 if q else 0:.3g} KB (not seen)")


def paced_queue_ms(train: dict) -> float | None:
    """The queue (ms) that stood in front of what cut a paced train: its
    head's arrival span less the span the server sent the same packets over
    (``tx_ms``), the delay the last of them gained over the first; None where
    the train has no send times or fewer than two head packets.

    A paced train (:func:`_paced_policer_train`) arrives no faster than the
    port drains it, so nothing queues there. A policer passes or drops each
    packet at once: its head arrives as it was sent (the campaign's 17 stored
    policer paths: -0.15 to +0.16 ms). A tbf (a token bucket behind a queue,
    sch_tbf's ``limit``) queues what the bucket does not pass, and drops only
    once that queue is full: its head gains the queue's depth Q/C (the
    stored tbf paths: 5.0 ms for a 5.3-ms queue, 10.6 for 10.2, 18.0 for
    18.0, 18.7 for 20.2, 3.0 for 3.2). That is what tells a tbf from a
    policer: whether a queue stands in front of the bucket."""
    tx = train.get("tx_ms") or []
    cut = train.get("first_loss")
    head = [v for v in tx[: train.get("sent", len(tx)) if cut is None else cut] if v is not None]
    span = train.get("head_span_ms")
    if len(head) < 2 or span is None:
        return None
    return span - (head[-1] - head[0])


def _queue_before_bucket(x: dict, base_ms: float) -> None:
    """A ``policer`` direction whose paced train's head gained more delay
    (:func:`paced_queue_ms`) than the burst floor: a queue stood in front of
    the bucket, deeper than the flows' bursts and the noise explain — a tbf,
    not a policer. The direction becomes ``fifo`` (a tbf's queue is a FIFO at
    its rate) with that queue's depth at the measured rate. A gain within
    the floor keeps the reading, whose alternatives already name a FIFO (or
    a tbf's queue) that shallow."""
    t = x.get("paced_train")
    if x["limiter"] != "policer" or not t:
        return
    q = paced_queue_ms(t)
    floor = burst_floor_ms(x["rate_mbps"], x.get("flows", 4))
    if q is None or q < floor:
        return
    buf = q / 1e3 * x["rate_mbps"] * 1e6 / 8
    bdp = x["rate_mbps"] * 1e6 * base_ms / 1e3 / 8
    note = (f"a token bucket behind a queue (a tbf): the paced train's head gained {q:.3g} ms of delay before its first "
            f"loss, more than the {floor:.2g}-ms floor, where a policer passes or drops each packet at once; the queue "
            f"holds ~{buf / 1e3:.3g} KB at {x['rate_mbps']:.4g} Mbit/s")
    x.update(limiter="fifo", buffer_bytes=int(max(buf, WIRE_SEGMENT)), buffer_bdp=buf / bdp if bdp else None,
             limiter_note=note, limiter_alternatives=None, tbf_queue_ms=q)


def tail_held(train: dict, idle_loss: float = 0.0) -> bool:
    """Whether a packet train that lost packets beyond the path's random loss
    had its tail held in a queue rather than cut: more of the packets after
    its first loss arrived than what drained them admits of a tail sent
    faster (its arrival rate r over its send rate U: r/U of them, twice over
    and two standard deviations, as :func:`_tail_dropped`). A token bucket
    passes at most its rate of what exceeds it and a full FIFO its drain;
    only a queue that keeps taking packets while it drops some (an AQM's
    spread drops) passes more."""
    if train.get("first_loss") is None:
        return False
    lost, tail = train.get("lost", 0), train.get("tail_packets", 0)
    after = tail + lost
    if not _significant(lost, after, idle_loss, handful=0):
        return False
    r = train.get("tail_arrival_mbps") or train.get("tail_mbps")
    u = train.get("tail_send_mbps") or train.get("send_mbps")
    if not r or not u:
        return False
    admits = after * min(r / u, 1.0)
    return tail > 2 * admits + 2 * max(admits, 1.0) ** 0.5


def _held_not_policed(x: dict, idle_loss: float = 0.0) -> None:
    """A ``policer`` direction whose policer's train had its tail held
    (:func:`tail_held`): no token bucket cut it, so the train is read as the
    AQM train (:func:`single_queue_aqm`) against the flows' queue; where that
    shows a single-queue AQM the direction becomes ``aqm``."""
    t = x.get("train")
    if x["limiter"] != "policer" or not t or not tail_held(t, idle_loss):
        return
    ev = x["evidence"]
    queue_ms = max(ev["flow_q95_ms"], x.get("fill_flow_q95_ms", 0.0), 0.1)
    kind, why = single_queue_aqm(t, x["rate_mbps"], queue_ms, idle_loss)
    if not kind:
        return
    why = (f"the policer's train kept arriving after its first loss ({t.get('tail_packets', 0)} of its last "
           f"{t.get('tail_packets', 0) + t.get('lost', 0)} packets), which no token bucket passes: {why}")
    x.update(limiter="aqm", aqm_qdisc=kind, aqm_train=t, aqm_note=why, limiter_note=why, limiter_alternatives=None,
             buffer_bytes=None, buffer_bdp=None, port_mbps=None, bucket_bytes=None)


def single_queue_aqm(train: dict, rate_mbps: float, queue_ms: float, idle_loss: float = 0.0) -> tuple[str | None, str]:
    """Whether a packet train shows a single-queue AQM behind a queue that looked
    like a FIFO of ``queue_ms`` under load (see :data:`AQM_BURST_RATIO`):
    (``"codel"``, ``"pie"`` or None, why).

    The queue the train built is what arrived at the rate C less the time it
    took to send (U: the rate the server sent it at): a FIFO of B admits B plus
    what C drained meanwhile, so it builds B/C whatever the train's length,
    then admits no more than C/U of the rest. An AQM's queue is not its
    buffer: it builds more than the flows held (:data:`AQM_BURST_RATIO`), and
    what it drops after the first loss is spread, most of the tail arriving
    (PIE drops each packet with its probability, CoDel one now and then) —
    more than twice what a full FIFO admits (C/U) and more than the tail's
    binomial noise, its losses beyond the path's random loss (``idle_loss``,
    at three standard deviations: a deep FIFO on a lossy path loses a
    train's packets here and there too). Which AQM: CoDel drops only what waited above its target
    for a whole interval (RFC 8289: 100 ms), so a first loss among the packets
    the rate drains within :data:`CODEL_INTERVAL_MS` is PIE's (its drop
    probability, which a loaded phase just before leaves high for seconds:
    RFC 8033 lowers it 2 % a 15-ms update once the queue is empty); a later
    one here and there, CoDel's; a train that passed whole and built more
    than CoDel's interval, PIE's burst allowance; a whole train shorter than
    that cannot tell the two (CoDel is taken, and the reason says so).

    On a lossy path (``idle_loss``) the first loss may be the path's, so the
    rules read losses beyond it: a train that lost no more than the random
    loss passed whole for the queue's part; PIE is told by losses beyond the
    random ones among the packets the rate drains within CoDel's interval;
    and a whole train that built more than CoDel's interval is CoDel's (its
    few drops — the first after the interval, the next interval/sqrt(n)
    apart — hide in the random loss, where PIE's allowance, if exceeded, is
    followed by a drop probability raised every 15 ms), or either where it
    built no more than PIE's allowance (:data:`PIE_BURST_MS`)."""
    wire = train.get("wire_bytes", WIRE_SEGMENT)
    sent = train.get("send_mbps") or train.get("head_send_mbps") or float("inf")
    if sent <= rate_mbps:
        return None, f"the train was sent at {sent:.4g} Mbit/s, no faster than the rate: it built no queue to read"
    received = train.get("received", train.get("head_packets", 0) + train.get("tail_packets", 0))
    built_ms = queue_built_ms(received * wire, rate_mbps, sent)
    ratio = built_ms / max(queue_ms, 0.1)
    tail, lost = train.get("tail_packets", 0), train.get("lost", 0)
    n = train.get("sent") or AQM_TRAIN_PACKETS
    # no more lost than the path's random loss: whole, as far as the queue is concerned
    random_only = (train.get("first_loss") is not None and idle_loss > 0
                   and not _significant(lost, n, idle_loss, handful=0))
    whole = train.get("first_loss") is None or random_only
    passed = (f"passed whole but for the path's random loss ({lost} of {n} lost, ~{idle_loss * n:.2g} expected)"
              if random_only else "passed whole")
    after = tail + lost
    fifo = after * rate_mbps / sent
    # drops not a full FIFO's (_tail_dropped), and lost beyond the path's random loss (no handful: a train is no
    # TCP flow, and CoDel drops one packet of it here and there, which is beyond a loss-free path's)
    spread = whole or (not _tail_dropped(train, rate_mbps) and _significant(lost, after, idle_loss, handful=0))
    arrived = 1.0 if whole else tail / max(after, 1)
    if whole and ratio < AQM_BURST_RATIO:
        return None, (f"a packet train {passed}, {built_ms:.3g} ms of queue at the rate ({ratio:.2g}x "
                      f"the flows' {queue_ms:.3g} ms): too short to tell a FIFO from a single-queue AQM (taken as a FIFO)")
    # a train too short to build AQM_BURST_RATIO x the flows' queue at this rate (train_reach_ms: the sender's pace
    # near the rate, or a queue that stood high) shows an AQM where it could: by its first loss, at a queue a FIFO
    # as deep as the flows' would not have dropped at (a FIFO drops nothing before its depth, which a loss-based
    # fill reaches: the same factor between the mechanisms as the burst's), and spread drops after it
    first_q_ms = queue_built_ms(train.get("head_bytes", 0), rate_mbps, train.get("head_send_mbps") or sent)
    early = (not whole and train_reach_ms(train, rate_mbps) < AQM_BURST_RATIO * queue_ms
             and AQM_BURST_RATIO * first_q_ms <= queue_ms)
    if (ratio < AQM_BURST_RATIO and not early) or not spread:
        return None, (f"a packet train built {built_ms:.3g} ms of queue at the rate, {ratio:.2g}x the flows' "
                      f"{queue_ms:.3g} ms" + ("" if whole else f", {arrived:.0%} of its tail arrived") + ": a FIFO's buffer")
    if ratio < AQM_BURST_RATIO:
        why = (f"the flows' queue stood at {queue_ms:.3g} ms, but a packet train lost its first packet at {first_q_ms:.3g} ms "
               f"of queue, where a FIFO as deep as the flows' drops none")
    else:
        why = f"the flows' queue stood at {queue_ms:.3g} ms, but a packet train built {built_ms:.3g} ms of queue ({ratio:.2g}x)"
    if not whole:
        first_ms = train.get("head_bytes", 0) * 8 / (rate_mbps * 1e3)
        drops = f", losing {lost} of its last {after} packets here and there ({arrived:.0%} arrived; a full FIFO admits {fifo / max(after, 1):.1%})"
        lost_seq = train.get("lost_seq")
        if idle_loss > 0 and lost_seq is not None:
            # the packets the rate drains within CoDel's interval, and how many of them were lost
            n_int = min(int(CODEL_INTERVAL_MS * rate_mbps * 1e3 / (wire * 8)), n)
            k = sum(1 for q in lost_seq if q < n_int)
            if _significant(k, n_int, idle_loss, handful=0):
                return "pie", why + drops + (f", {k} of the first {n_int} (what the rate drains within CoDel's "
                                             f"{CODEL_INTERVAL_MS:g}-ms interval), beyond the path's random loss "
                                             f"(~{idle_loss * n_int:.2g} expected): PIE's drop probability")
            return "codel", why + drops + (f", the first {n_int} (CoDel's {CODEL_INTERVAL_MS:g}-ms interval at the rate) "
                                           f"no more than the path's random loss: CoDel's drops after its interval")
        if first_ms < CODEL_INTERVAL_MS:
            return "pie", why + drops + (f", the first {first_ms:.3g} ms into the queue, before CoDel's "
                                         f"{CODEL_INTERVAL_MS:g}-ms interval: PIE's drop probability")
        # CoDel drops once the sojourn has stood above its target for an interval: the train's packets wait
        # what the rate drained of those before them less their own arrival (x (1 - C/U)), so at the dequeue
        # clock the target is crossed at target / (1 - C/U) and the first drop comes an interval later; PIE's
        # first drop after a fresh burst comes no sooner than its allowance, and any time where its drop
        # probability was already up. A first loss past the middle of the two is not CoDel's.
        codel_first = CODEL_INTERVAL_MS + CODEL_TARGET_MS / max(1 - rate_mbps / sent, 1e-3)
        if first_ms > (codel_first + max(PIE_BURST_MS, codel_first)) / 2:
            return "pie", why + drops + (f", the first {first_ms:.3g} ms into the queue, well after CoDel's first drop "
                                         f"would have come ({codel_first:.3g} ms: its {CODEL_INTERVAL_MS:g}-ms interval "
                                         f"after the sojourn passed its {CODEL_TARGET_MS:g}-ms target): PIE's drop probability")
        return "codel", why + drops + (f", the first {first_ms:.3g} ms into the queue, where CoDel's first drop comes "
                                       f"({codel_first:.3g} ms): CoDel's drops after its interval")
    if random_only:
        lossy = f", and {passed}"
        if built_ms > PIE_BURST_MS:
            return "codel", why + lossy + (f": CoDel, whose few drops in it (the first after its {CODEL_INTERVAL_MS:g}-ms "
                                           f"interval, the next interval/sqrt(n) apart) hide in the random loss, where PIE "
                                           f"past its {PIE_BURST_MS:g}-ms burst allowance raises its drop probability every 15 ms")
        return "codel", why + lossy + (f", within PIE's {PIE_BURST_MS:g}-ms burst allowance: CoDel or PIE (taken as CoDel)")
    if built_ms > CODEL_INTERVAL_MS:
        return "pie", why + f" without a loss, longer than CoDel's {CODEL_INTERVAL_MS:g}-ms interval: PIE's burst allowance"
    return "codel", why + (f" whole, but shorter than CoDel's interval: CoDel or PIE (taken as CoDel)")


def _tail_dropped(train: dict, rate_mbps: float) -> bool:
    """Whether a packet train that lost packets shows a full FIFO's tail drop:
    no more of the packets after its first loss arrived than a full FIFO
    admits, C/U of them (the train sent at U, drained at C), twice over and
    two standard deviations."""
    if train.get("first_loss") is None:
        return False
    sent = train.get("send_mbps") or train.get("head_send_mbps") or float("inf")
    tail = train.get("tail_packets", 0)
    fifo = (tail + train.get("lost", 0)) * rate_mbps / sent
    return tail <= 2 * fifo + 2 * max(fifo, 1.0) ** 0.5


def queue_built_ms(nbytes: float, rate_mbps: float, sent_mbps: float) -> float:
    """The queue (ms at the rate C) that ``nbytes`` sent at U = ``sent_mbps``
    build at a port of C = ``rate_mbps`` when they all arrive: what arrived
    less what C drained while they came, bytes / C x (1 - C/U) (none where U
    is no faster than C)."""
    return max(nbytes * 8 / (rate_mbps * 1e3) * (1 - rate_mbps / sent_mbps), 0.0)


def train_reach_ms(train: dict, rate_mbps: float) -> float:
    """The most queue (ms) a packet train can build at the rate: all its
    packets (``sent``, else :data:`AQM_TRAIN_PACKETS`) arriving at the pace
    the server sent them (:func:`queue_built_ms`). At 226 Mbit/s and the
    ~530 Mbit/s this VM's server sends at: 53 ms x 0.57 = 31 ms."""
    sent = train.get("send_mbps") or train.get("head_send_mbps") or float("inf")
    n = train.get("sent") or AQM_TRAIN_PACKETS
    return queue_built_ms(n * train.get("wire_bytes", WIRE_SEGMENT), rate_mbps, sent)


def train_cannot_tell(train: dict, rate_mbps: float, queue_ms: float) -> dict | None:
    """Where a packet train read no AQM (:func:`single_queue_aqm`) but could
    not have shown one: the alternative it leaves open, as data for the
    direction's ``limiter_alternatives`` (see :func:`alternatives`), with a
    ``why``; None where the train could tell (it had the reach, or it showed a
    FIFO's tail drop).

    A train shows a single-queue AQM by building at least
    :data:`AQM_BURST_RATIO` x the flows' queue; N packets sent at U build at
    most N x W / C x (1 - C/U) at a rate C (:func:`train_reach_ms`), so from
    the rate C* = 1 / (R / (N x W) + 1/U) up, R = the ratio x the flows'
    queue, no CoDel or PIE can show its burst (the server sends ~450-540
    Mbit/s here: a PIE at 425 Mbit/s builds 4 ms). A FIFO's tail drop (no
    more of the tail arriving than the drain admits, C/U, and its binomial
    noise) is a FIFO's signature whatever the reach; a train that passed
    whole, or lost a few packets here and there that do not show an AQM,
    tells nothing. The alternative: ``{"limiter": "aqm", "kinds": ["codel",
    "pie"], "rate_above_mbps": C*}``."""
    need = AQM_BURST_RATIO * queue_ms
    reach = train_reach_ms(train, rate_mbps)
    if reach >= need:
        return None
    sent = train.get("send_mbps") or train.get("head_send_mbps") or float("inf")
    after = train.get("tail_packets", 0) + train.get("lost", 0)
    fifo = after * rate_mbps / sent
    # a tail drop tells a FIFO only where a full FIFO's share of the tail (C/U, twice over and its noise) is
    # below the whole of it: with U near C a FIFO admits about all of it, as an AQM's spread drops do
    if _tail_dropped(train, rate_mbps) and 2 * fifo + 2 * max(fifo, 1.0) ** 0.5 < after:
        return None
    bits = (train.get("sent") or AQM_TRAIN_PACKETS) * train.get("wire_bytes", WIRE_SEGMENT) * 8
    c_star = 1 / (need / 1e3 / bits + 1 / (sent * 1e6)) / 1e6
    return {"limiter": "aqm", "kinds": ["codel", "pie"], "rate_above_mbps": c_star,
            "why": (f"a train of {bits / 8e3:.0f} KB sent at {sent:.4g} Mbit/s builds at most {reach:.3g} ms of queue at "
                    f"{rate_mbps:.4g} Mbit/s, less than the {need:.3g} ms ({AQM_BURST_RATIO:g}x the flows' {queue_ms:.3g} ms) "
                    f"that would show a CoDel's or PIE's burst (from {c_star:.4g} Mbit/s up): a FIFO or a single-queue AQM, "
                    f"not told apart")}


def _aqm_train(host: str, port: int, secret: str | None, x: dict, say, idle_loss: float = 0.0) -> None:
    """A direction that read as a FIFO with drops: one packet train down (or
    the policer's, where one was sent: a second right after it would meet the
    drop probability the first left behind), and the direction becomes
    ``aqm`` (``aqm_qdisc`` codel or pie, no buffer: the AQM's own limit)
    where the train shows an AQM's burst. The drops are beyond the path's
    random loss (``evidence["dropped"]``), so the flows' queue reached what
    limits it: a loss-based fill fills a FIFO to its depth, and so does BBR's
    (a lossy path's fill) where its flows lost more than the random loss —
    BBR does not back off on loss, so those losses are a full buffer's or an
    AQM's — and the train is read against that depth as against CUBIC's."""
    if x["limiter"] != "fifo" or not x["evidence"].get("dropped") or x["buffer_bytes"] is None:
        return
    queue_ms = x["buffer_bytes"] * 8 / (x["rate_mbps"] * 1e3)
    t = x.get("train")
    if not t or t.get("sent", 0) < AQM_TRAIN_PACKETS:
        say(f"  down: a packet train for an AQM behind the {queue_ms:.3g}-ms queue ...")
        t = _train_or_note(host, port, secret, AQM_TRAIN_PACKETS, x, "aqm_note", "a FIFO is assumed", say)
        if t is None:
            return
    x["aqm_train"] = t
    # a train that arrived faster than the rate was not drained at it: no AQM at the rate (it dequeues at its own:
    # sch_cake's shaper paces without a bucket) held it, and its queue and drops are a faster port's; what holds the
    # flows to the rate is a token bucket — a policer where the flows stood no queue (_not_a_fifo), a tbf's queue
    # where they did
    if _not_a_fifo(t, x):
        x["aqm_note"] = x["limiter_note"]
        say(f"  down: {x['limiter_note']}")
        return
    lead = t.get("leading_mbps")
    if lead and not t.get("sender_limited") and lead >= TRAIN_PORT_MARGIN * x["rate_mbps"]:
        x["aqm_note"] = (f"a packet train's head arrived at {lead:.4g} Mbit/s, faster than a queue at {x['rate_mbps']:.4g} "
                         f"Mbit/s passes packets: not a single-queue AQM at the rate, but a token bucket in front of a "
                         f"faster port, behind the {queue_ms:.3g}-ms queue the flows stood in (a tbf)")
        x["limiter_note"] = x["aqm_note"]
        say(f"  down: {x['aqm_note']}")
        return
    kind, why = single_queue_aqm(t, x["rate_mbps"], queue_ms, idle_loss)
    x["aqm_note"] = why
    if kind:
        x.update(limiter="aqm", aqm_qdisc=kind, buffer_bytes=None, buffer_bdp=None, limiter_note=why,
                 limiter_alternatives=None)
        say(f"  down: {kind} ({why})")
        return
    if _fifo_deeper_than_the_flows(t, x, idle_loss):
        x["aqm_note"] = x["limiter_note"]
        say(f"  down: {x['limiter_note']}")
        return
    alt = train_cannot_tell(t, x["rate_mbps"], queue_ms)
    if alt:
        x["limiter_alternatives"] = (x.get("limiter_alternatives") or [{"limiter": "fifo"}]) + [alt]
        x["aqm_note"] = alt["why"]
        x["limiter_note"] = "; ".join(n for n in (x.get("limiter_note"), alt["why"]) if n)
        say(f"  down: {alt['why']}")


def faster_port(train: dict, rate_mbps: float, flow_q95_ms: float, floor_ms: float) -> float | None:
    """The port's rate (Mbit/s) where a packet train shows that what held a
    direction's flows to ``rate_mbps`` is no queue at that rate: the train's
    head arrived faster than :data:`TRAIN_PORT_MARGIN` x the rate (its
    dispersion, not the server's pace) — a queue at the rate C spaces every
    packet it passes C apart — while the flows' queueing p95 stayed below the
    burst floor (drops without a queue, as :func:`classify` reads a policer by
    the flows). The converse of :func:`_not_a_policer`: a verdict of ``fifo``
    that the probes' p95 alone made (it passes the floor where the VM pauses
    reach it) meets a port faster than the rate. None otherwise."""
    lead = train.get("leading_mbps")
    if not lead or train.get("sender_limited") or lead < TRAIN_PORT_MARGIN * rate_mbps or flow_q95_ms >= floor_ms:
        return None
    return lead


def _not_a_fifo(t: dict, x: dict) -> bool:
    """A ``fifo`` direction with drops whose packet train ``t`` shows a port
    faster than its rate (:func:`faster_port`) becomes ``policer``, with the
    train's port and bucket (:func:`policer_figures`) and what it cannot
    exclude: a tbf whose queue is shallower than the floor (the head rules out
    an AQM at the rate, as behind a policer reading). True where it did."""
    ev = x.get("evidence") or {}
    if "flow_q95_ms" not in ev:
        return False
    floor = burst_floor_ms(x["rate_mbps"], x.get("flows", 4))
    lead = faster_port(t, x["rate_mbps"], ev["flow_q95_ms"], floor)
    if lead is None:
        return False
    p, b, why = policer_figures(t, x["rate_mbps"])
    note = (f"drops while the flows' queueing p95 stayed at {ev['flow_q95_ms']:.3g} ms, below the {floor:.2g}-ms floor, and a "
            f"packet train's head arrived at {lead:.4g} Mbit/s, faster than a queue at {x['rate_mbps']:.4g} Mbit/s lets "
            f"packets through: a token bucket, not a FIFO at the rate (the probes' p95, "
            f"{ev.get('probe_q95_ms', float('nan')):.3g} ms, had passed the floor); ") + ambiguity("policer", x["rate_mbps"], x.get("flows", 4))
    x.update(limiter="policer", buffer_bytes=None, buffer_bdp=None, train=t, port_mbps=p, bucket_bytes=b,
             train_note="; ".join(why) or None, limiter_note=note,
             limiter_alternatives=[{"limiter": "policer"},
                                   {"limiter": "fifo", "depth_below_ms": max(floor, x.get("unseen_depth_ms") or 0.0)}])
    return True


def _fifo_deeper_than_the_flows(t: dict, x: dict, idle_loss: float = 0.0) -> bool:
    """A ``fifo`` direction with drops whose packet train ``t`` filled a FIFO
    (a full FIFO's tail drop, :func:`_tail_dropped`) far deeper than any
    queue the flows stood in becomes ``policer``: a loss-based flow that
    comes back to its losses' window (``unseen_depth_ms`` None:
    :func:`unreturned_depth_ms`) stands at the depth of the FIFO that drops
    it (measured 0.98-1.04 of it, "A single-queue AQM"), so a FIFO of at
    least :data:`AQM_BURST_RATIO` x the flows' queueing p95, and deeper than
    the floor they stayed below, did not drop them: a token bucket in front
    of it did, at a rate below the FIFO's drain (the head's, taken as the
    port: a policer whose port is within :data:`TRAIN_PORT_MARGIN` of its
    rate, which the head's spacing alone cannot tell). The FIFO is the
    port's (:func:`port_fifo`). Still named: a tbf whose queue is shallower
    than the floor, its bucket larger than the train. Not where the path's
    random loss (``idle_loss``) alone holds the flows' windows below that
    FIFO's depth (above :func:`mathis_loss` at the rate over the base RTT and
    the depth): they could not stand at it. True where it did."""
    ev = x.get("evidence") or {}
    if "flow_q95_ms" not in ev or x.get("unseen_depth_ms") is not None or not _tail_dropped(t, x["rate_mbps"]):
        return False
    floor = burst_floor_ms(x["rate_mbps"], x.get("flows", 4))
    lead, q = t.get("leading_mbps"), port_fifo(t)
    if ev["flow_q95_ms"] >= floor or not lead or t.get("sender_limited") or q is None:
        return False
    q_ms = q * 8 / (lead * 1e3)
    if q_ms < max(floor, AQM_BURST_RATIO * ev["flow_q95_ms"]):
        return False
    base = ev.get("loaded_rtt_ms", 0.0) - ev.get("flow_q50_ms", 0.0)
    if idle_loss > 0 and idle_loss >= mathis_loss(x["rate_mbps"], x.get("flows", 4), base + q_ms):
        return False
    note = (f"drops while the flows' queueing p95 stayed at {ev['flow_q95_ms']:.3g} ms, below the {floor:.2g}-ms floor, "
            f"though they grew back to their first losses' windows within the phase; but a packet train filled a FIFO of "
            f"{q / 1e3:.3g} KB ({q_ms:.3g} ms at its head's {lead:.4g} Mbit/s) and was tail-dropped there: a FIFO that deep "
            f"would have held the flows' queue at its depth, so what dropped them is a token bucket in front of it — a "
            f"policer at {x['rate_mbps']:.4g} Mbit/s on a port of ~{lead:.4g} (within {TRAIN_PORT_MARGIN:g}x: the head's "
            f"spacing alone cannot tell), or a tbf whose queue is shallower than the floor")
    x.update(limiter="policer", buffer_bytes=None, buffer_bdp=None, train=t, port_mbps=lead, bucket_bytes=None,
             port_buffer_bytes=int(max(q, WIRE_SEGMENT)), limiter_note=note,
             limiter_alternatives=[{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": floor}])
    return True


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
        seen = "flow isolation" if isolated else f"an AQM's burst in a packet train ({x['aqm_qdisc']} by the train alone)"
        x.update(aqm_qdisc="cake", buffer_bytes=None, buffer_bdp=None, limiter_note=f"{seen}; {why}")
    elif isolated:
        x["limiter_note"] = (f"flow isolation, taken as fq_codel; CAKE is not excluded ({why}). Behind CAKE a new flow's "
                             f"slow start ends at COBALT's first signal or goes on as under fq_codel (docs/advise.md)")


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


def wifi_hop(train: dict) -> tuple[float | None, str]:
    """Whether a packet train crossed a WiFi hop (an aggregating MAC): (its
    PHY rate in Mbit/s, or None where the train shows a wired port; why).

    The train's batches (``train["batches"]``): a median batch of at least
    :data:`WIFI_BATCH_PACKETS` packets whose median period is no shorter than
    an 802.11n transmission (:data:`TXOP_FLOOR_MS`) and that is a full
    aggregate (:data:`WIFI_FULL_FRAMES` packets, or within one subframe and
    half the backoff's spread of :data:`WIFI_AGGR_MS` of airtime), once the
    batches a receiver split are joined (:func:`_rejoin_split_batches`). The PHY rate: each
    period holds one transmission of the batch that ends it, so the bits of
    those batches (IP packet + :data:`WIFI_SUBFRAME_OVERHEAD` a subframe) over
    their periods less the transmission's mean overhead
    (:data:`TXOP_OVERHEAD_MS`), periods beyond :data:`WIFI_PERIOD_OUTLIER` x
    the median left out (another station's airtime, a pause)."""
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
    bits = air = 0.0
    for k, period in zip(sizes[1:], periods):
        if period <= WIFI_PERIOD_OUTLIER * p50 and period > TXOP_OVERHEAD_MS:
            bits += k * (wire + WIFI_SUBFRAME_OVERHEAD) * 8
            air += (period - TXOP_OVERHEAD_MS) / 1e3
    if air <= 0:
        return None, "the train's batches left no airtime to read a PHY rate from"
    phy = bits / air / 1e6
    subframe_ms = _subframe_ms(wire, phy)
    # the backlog's batches (WIFI_BACKLOG_QUANTILE): their size, and the median period that ended them
    k_full = float(np.percentile(sizes, WIFI_BACKLOG_QUANTILE))
    p_full = float(np.median([p for k, p in zip(sizes[1:], periods) if k >= k_full] or [p50]))
    if k_full < WIFI_FULL_FRAMES and p_full - TXOP_OVERHEAD_MS < WIFI_AGGR_MS - subframe_ms - BACKOFF_HALF_SPREAD_MS:
        return None, (f"the train arrived in batches of {k50:g} packets every {p50:.3g} ms (its largest quarter "
                      f"{k_full:g} packets every {p_full:.3g} ms): not the full aggregates a backlogged access point "
                      f"sends ({WIFI_FULL_FRAMES} subframes or {WIFI_AGGR_MS:g} ms), but what a slotted link carries "
                      f"a slot (a cellular TTI, a capacity trace's milliseconds)")
    return phy, (f"the train arrived in batches of {k50:g} packets (largest {b.get('packets_max')}) every "
                 f"{p50:.3g} ms, as an 802.11 aggregate MAC hands them over: a WiFi hop at a PHY rate of ~{phy:.3g} Mbit/s")


def wifi_design(flow_q95_ms: float, dropped: bool, base_rtt_ms: float) -> tuple[str, str]:
    """The access point's design behind a WiFi hop, from the queue the
    loss-based flows sat in (their queueing p95, ms), whether they lost
    segments, and the base RTT: (``legacy`` or ``airtime``, why).

    mac80211's per-station fq_codel (``fq``, Linux 4.9; ``airtime`` adds
    airtime fairness, 4.11) drops once the queue has stood above its 20-ms
    target for an interval (:data:`CODEL_INTERVAL_MS`), and the senders hear
    of it a round trip later: a queue that grows as fast as it drains (slow
    start sends twice what the link carries) stands at most about an
    interval and a base RTT. A legacy AP's qdisc and driver FIFO (1000 + 123
    packets: 135 ms at 100 Mbit/s, the most a 130-Mbit/s HT20 station
    delivers, 2.6 s at 5 Mbit/s) fill beyond that before they drop, except
    on a fast and long path (a FIFO shorter than the interval and the RTT
    cannot be told from fq_codel: the note says so). A sparse probe does not
    tell them apart: behind the hardware's two aggregates and the shared
    medium it waits about as long as the flows under either (the model and
    ath9k's figures alike, docs/wifi.md). One station cannot tell ``fq`` from
    ``airtime``: ``airtime`` is taken, the default since 4.11."""
    bound = CODEL_INTERVAL_MS + base_rtt_ms
    if flow_q95_ms > bound:
        return "legacy", (f"the flows' queue stood at {flow_q95_ms:.3g} ms (p95), beyond what CoDel lets stand "
                          f"(its {CODEL_INTERVAL_MS:g}-ms interval and a {base_rtt_ms:.3g}-ms round trip): a FIFO, the "
                          f"qdisc above the driver's (legacy, before Linux 4.9)")
    how = "lost segments" if dropped else "lost nothing"
    return "airtime", (f"the flows {how} with their queue at {flow_q95_ms:.3g} ms (p95), within CoDel's "
                       f"{CODEL_INTERVAL_MS:g}-ms interval and a round trip: mac80211's per-station fq_codel (fq, or "
                       f"airtime since Linux 4.11: one station cannot tell them apart; airtime taken; a legacy FIFO "
                       f"shorter than {bound:.3g} ms cannot be excluded)")


def _ports(train: dict | None, ser_ms: float | None) -> dict:
    """The ports' rates (Mbit/s, IP bytes) the idle path showed: down, the
    packet train's head (the spacing the slowest port gave it; None where
    the server could not send faster than it arrived); up, from the large
    probes' serialization (:func:`serialization_ms`: 1/R = 1/down + 1/up)
    less the down port's share (None where that leaves nothing to read)."""
    t = train or {}
    down = t.get("leading_mbps") if not t.get("sender_limited") else None
    up = None
    if ser_ms and down:
        inv = 1 / serialization_rate_mbps(ser_ms) - 1 / down
        up = 1 / inv if inv > 0 else None
    return {"down": down, "up": up}


def _wifi_probe(host: str, port: int, secret: str | None, say) -> dict:
    """One short packet train down, on the idle path (before the loads: the
    loss stream's pace depends on it): ``{"train", "phy_mbps", "note"}``, the
    PHY rate from the train's batches (:func:`wifi_hop`) or None where they
    show no WiFi hop (``note`` says why)."""
    say("  down: a packet train for a WiFi hop ...")
    out: dict = {"train": None, "phy_mbps": None, "note": None}
    t = _train_or_note(host, port, secret, WIFI_TRAIN_PACKETS, out, "note", "a wired path is assumed", say)
    if t is not None:
        out["train"] = t
        out["phy_mbps"], out["note"] = wifi_hop(t)
    return out


def _wifi_train(wp: dict, x: dict, base_ms: float, say) -> None:
    """Where the train of :func:`_wifi_probe` (``wp``) showed a WiFi hop the
    direction becomes ``wifi``: the AP's design (:func:`wifi_design`, from
    the loads' queue) and the PHY rate."""
    t, phy, why = wp["train"], wp["phy_mbps"], wp["note"]
    if t is None:
        x["wifi_note"] = why
        return
    x["wifi_train"] = t
    x["wifi_note"] = why
    if phy is None:
        return
    # the loss-based fill's queue: BBR keeps ~a BDP queued whatever the AP does (4 BBR flows at 256 ms sat 524 ms
    # (p95) behind mac80211's fq_codel, read as a legacy FIFO on the campaign's evaluation seed 3)
    mac, why_mac = wifi_design(x.get("fill_flow_q95_ms", x["evidence"]["flow_q95_ms"]),
                               x.get("fill_dropped", x["evidence"]["dropped"]), base_ms)
    x.update(limiter="wifi", wifi={"phy_mbps": phy, "mac": mac}, limiter_note=f"{why}; {why_mac}", limiter_alternatives=None)
    if mac == "airtime":
        x.update(buffer_bytes=None, buffer_bdp=None)
    say(f"  down: a WiFi hop, {mac}, PHY ~{phy:.3g} Mbit/s")


def _not_a_policer(x: dict, base_ms: float) -> None:
    """Drops without a queue, yet the packet train's head arrived no faster
    than the measured rate, and its tail (:data:`TAIL_RATE_PACKETS` or more
    packets) no faster either: no faster port, so no policer — a queue at that
    rate too shallow for the flows' bursts (or an AQM holding it below
    them). The direction becomes ``fifo`` with the depth the flows saw (their
    queueing p95 at the rate, at least two packets): a twin that queues at
    the rate instead of one that polices behind a port ten times faster."""
    t = x.get("train") or {}
    lead = t.get("leading_mbps")
    if x["limiter"] != "policer" or not lead or t.get("sender_limited") or lead >= TRAIN_PORT_MARGIN * x["rate_mbps"]:
        return
    tail = t.get("tail_arrival_mbps")
    if tail and t.get("tail_packets", 0) >= TAIL_RATE_PACKETS and tail >= TRAIN_PORT_MARGIN * x["rate_mbps"]:
        # the tail came faster than any queue at the rate passes packets: a policer that saw the train before the
        # port, whose tail queued behind the head there and arrived at the port's rate (crates/probe/src/train.rs,
        # "The tail's rate"), the head slowed on its way (the server's pace, or the emulator's near 500 Mbit/s)
        x["port_mbps"] = x.get("port_mbps") or tail
        x.setdefault("train_evidence", []).append(
            f"the head arrived at {lead:.4g} Mbit/s, but the {t['tail_packets']} packets after its first loss at "
            f"{tail:.4g}, faster than a queue at {x['rate_mbps']:.4g} passes them: a faster port (taken as the tail's)")
        return
    q95 = x["evidence"]["flow_q95_ms"]
    # drops seen (the policer's reading): an upper bound where the flows' queueing is within their bursts
    reading = buffer_reading(q95, x["rate_mbps"], x.get("flows", 4), base_ms, True,
                             queue_max_ms=(x.get("buffer_window") or {}).get("queue_max_ms"))
    buf = max(reading["buffer_bytes"], 2 * WIRE_SEGMENT)
    bdp = x["rate_mbps"] * 1e6 * base_ms / 1e3 / 8
    # the policer is excluded; an AQM holding its queue below the flows' bursts is not (what the queue is when a
    # packet train is then read: _aqm_train)
    alts = [{"limiter": "fifo"}, {"limiter": "aqm", "target_below_ms": max(burst_floor_ms(x["rate_mbps"], x.get("flows", 4)),
                                                                        x.get("unseen_depth_ms") or 0.0)}]
    x.update(reading)
    x.update(limiter="fifo", buffer_bytes=int(buf), buffer_bdp=buf / bdp if bdp else None, port_mbps=None, bucket_bytes=None,
             limiter_alternatives=alts,
             limiter_note=f"drops without a queue, but a packet train arrived at {lead:.4g} Mbit/s, no faster than the "
                          f"rate: not a policer but a queue too shallow for the flows' bursts (~{buf / 1e3:.3g} KB), or an "
                          f"AQM holding its queue below them")


def _down_trains(host: str, port: int, secret: str | None, x: dict, wp: dict, base_ms: float, idle_loss: float, say,
                 lap=lambda name: None) -> None:
    """The down direction ``x`` after its loads, read again from packet
    trains, in this order: a WiFi hop (the idle train ``wp``,
    :func:`_wifi_train`); behind a ``policer`` reading the policer's trains
    (:func:`_policer_train`), then a queue in front of the bucket (a tbf,
    :func:`_queue_before_bucket`), a tail no token bucket passes (an AQM,
    :func:`_held_not_policed`), no faster port (:func:`_not_a_policer`); then
    behind a ``fifo`` with drops the AQM train (:func:`_aqm_train`).
    ``lap(name)`` marks where the time went."""
    _wifi_train(wp, x, base_ms, say)
    if x["limiter"] == "policer":
        _policer_train(host, port, secret, x, say, idle_loss)
        _queue_before_bucket(x, base_ms)
        _held_not_policed(x, idle_loss)
        _not_a_policer(x, base_ms)
        lap("policer_train")
    _aqm_train(host, port, secret, x, say, idle_loss)
    lap("aqm_train")


def variable_rate(v: dict | None) -> bool:
    """Whether a direction's capacity moves enough to matter to a shaper,
    both ways: in more than a tenth of the busy windows (its p10) the link
    carried less than a shaper at the median leaves it
    (:data:`path.SHAPE_FRACTION`, 95 %: that CAKE then no longer owns the
    queue), and in more than a tenth (its p90) more than the median over that
    fraction (the capacity such a shaper leaves unused) — each by more than
    one packet a window (what whole packets resolve). One-sided dips are what
    a fixed link shows too: a busy link never carries more than its rate, but
    the delivery-rate samples of flows recovering from a loss read below it
    (a fixed 20 Mbit/s FIFO through the emulator: p10 0.93, p90 1.004 x the
    median; the gallery's LTE-like trace 0.90 and 1.16)."""
    if not v:
        return False
    packet_mbps = WIRE_SEGMENT * 8 / v["window_s"] / 1e6
    return (v["p10_mbps"] < SHAPE_FRACTION * v["p50_mbps"] - packet_mbps
            and v["p90_mbps"] > v["p50_mbps"] / SHAPE_FRACTION + packet_mbps)


def _variation_fields(report: dict) -> dict:
    """The path's capacity variation (``down_rate_p10_mbps``, ...) from each measured direction's, and
    whether the down capacity is variable (the twin then follows a fitted trace: a FIFO path only)."""
    out = {}
    for d in ("down", "up"):
        v = (report.get(d) or {}).get("rate_variation")
        if v:
            out.update({f"{d}_rate_p10_mbps": v["p10_mbps"], f"{d}_rate_p90_mbps": v["p90_mbps"],
                        f"{d}_rate_timescale_s": v["timescale_s"]})
    v = report["down"].get("rate_variation")
    if v:
        out["down_rate_p50_mbps"] = v["p50_mbps"]
        report["down"]["variable"] = variable_rate(v)
        out["down_variable"] = report["down"]["variable"] and report["down"]["limiter"] == "fifo"
    return out


def measure(host: str, quick: bool = False, flows: int = 4, up: bool = True, secret: str | None = None, show: bool = True) -> Measurement:
    h, port = _split_host(host)
    if not 1 <= flows <= 64:
        raise UserError(f"--flows: expected 1..64, got {flows}")
    t0 = time.monotonic()
    # wall time per phase (s), in the report as ``phases_s``: where measure's time goes (docs/advise.md)
    phases: dict[str, float] = {}
    lap_at = [t0]

    def lap(name: str) -> None:
        now = time.monotonic()
        phases[name] = phases.get(name, 0.0) + now - lap_at[0]
        lap_at[0] = now

    say = (lambda m: print(m, flush=True)) if show else (lambda m: None)
    say(f"measuring {h}:{port}: idle RTT and loss ...")
    def idle_args(count: int) -> list[str]:
        a = ["udp", "client", h, "-p", str(port), "--count", str(count), "--interval", f"{IDLE_INTERVAL_MS}ms",
             "--timeout", "1s", "--give-up", "3s"]
        return a + (["--secret", secret] if secret else [])

    # the first idle probes (IDLE_FIRST); the rest of IDLE_PROBES only where they leave something unresolved
    idle = _probe(idle_args(IDLE_FIRST), timeout=20)
    lap("idle")
    if "echo" in idle or not idle.get("probes"):
        # the probe found a plain echo server there and measured it as one (udp client's detection)
        raise UserError(f"measure: {h}:{port} answers as a plain UDP echo server, not as `bloatlab-probe server` does: "
                        "measure needs bloatlab-probe server there (its TCP load and timestamps); "
                        "`bloatlab-probe udp client --echo` measures an echo server's round trips")
    pr = idle["probes"][0]
    if not pr.get("rtt_ms") or pr.get("loss", 1.0) >= 1.0:
        if (idle.get("udp") or {}).get("foreign"):
            raise UserError(f"measure: something answers on {h}:{port}, but not as `bloatlab-probe server` does "
                            f"({idle['udp']['foreign']} foreign replies): a plain echo server, another program, or a "
                            f"server of another version (compare `bloatlab-probe --version` on both ends)")
        raise UserError(f"measure: no UDP echo from {h}:{port} (is `bloatlab-probe server` running there?)")
    series = list(idle["raw"]["series"]["probes"]["rtt_ms"]) if "raw" in idle else []
    rmin = float(np.nanmin(series)) if len(series) else pr["rtt_ms"]["p50"]
    base = {"min": rmin, "p50": pr["rtt_ms"]["p50"]}
    # the idle probes' own serialization is in their RTT, and the twin's links add it again: read it from a few
    # large probes (the slope of the minimum RTT against the size: pathchar's way) and take it out
    ser = _probe_serialization(h, port, secret, rmin)
    lap("serialization")
    # the probes' loss is a round trip's: each direction's, if alike, is 1 - sqrt(1 - rt)
    rt_loss = pr["loss"]
    u = idle.get("udp") or {}
    sent = int(u.get("sent", 0))
    report = {"host": h, "port": port, "base_rtt_ms": base, "loss": one_way(rt_loss), "loss_round_trip": rt_loss,
              "loss_idle": {"sent": sent, "lost": int(u.get("lost", round(rt_loss * sent)))}}
    wp = _wifi_probe(h, port, secret, say)
    lap("wifi_train")
    wifi = wp["phy_mbps"] is not None
    li = report["loss_idle"]
    base["p50"] -= ser or 0.0  # the base RTT the stream's plan reads (the serialization out; the floor below)
    # the rest of the idle probes, beside the loss stream where there is one (IDLE_PROBES)
    stream = loss_stream_plan(li["lost"], li["sent"], ser, base["p50"], wifi, quick)[0] is not None
    more, why_more = idle_plan(series, li["lost"], stream)
    report["idle_plan"] = {"more": more, "why": why_more}

    def rest() -> dict | None:
        try:
            j = _probe(idle_args(IDLE_PROBES[0 if quick else 1] - IDLE_FIRST), timeout=20)
        except UserError as e:
            report["idle_plan"]["failed"] = f"the rest of the idle probes failed ({e}): the first {sent} are kept"
            return None
        uu = j.get("udp") or {}
        series.extend((j.get("raw") or {}).get("series", {}).get("probes", {}).get("rtt_ms", []))
        return {"sent": int(uu.get("sent", 0)), "lost": int(uu.get("lost", 0))}

    if more:
        say(f"  idle: more probes ({why_more}) ...")
    _loss_stream(h, port, secret, report, ser, wifi, quick, say, beside=rest if more else None)
    lap("loss_stream")
    if more:
        x = np.asarray(series, float)
        x = x[np.isfinite(x)]
        if x.size:
            base["min"], base["p50"] = float(x.min()), float(np.median(x)) - (ser or 0.0)
    if ser is not None:
        base["serialization_ms"] = ser
        base["p50"] = max(base["p50"], 0.01)
        base["min"] = max(base["min"] - ser, 0.01)
    idle_loss = report["loss"]
    # on a lossy path CUBIC cannot fill the link (Mathis): both phases use BBR,
    # which does not read random loss as congestion; the buffer then reads low
    # (BBR holds about one BDP in flight beyond the pipe) and is reported as such
    say(f"  base RTT {base['p50']:.2f} ms, idle loss {idle_loss * 100:.2g} % each way")
    lossy = report["loss"] >= LOSSY
    ports = report["ports_mbps"] = _ports(wp["train"], ser)
    dirs = ("down", "up") if up else ("down",)
    for d in dirs:
        after = max((report["down"]["evidence"]["flow_q95_ms"], report["down"]["fill_flow_q95_ms"])) if d == "up" else 0.0
        x = report[d] = _direction(h, port, d, flows, base["p50"], secret, quick, lossy, report["loss"], say, after,
                                   ports[d])
        for k, v in x["phases_s"].items():
            phases[f"{d}_{k}"] = v
        lap_at[0] += sum(x["phases_s"].values())
        lap(f"{d}_other")
        say(f"  {d}: {x['rate_mbps']:.4g} Mbit/s, +{x['added_delay_ms']:.1f} ms under load, limiter {x['limiter']}")
        if d == "down":
            _down_trains(h, port, secret, x, wp, base["p50"], report["loss"], say, lap)
        _cobalt(x)
        if x.get("aqm_qdisc") == "cake":
            say(f"  {d}: cake (COBALT's first signal ended the fill's slow starts)")
        for prob in x["problems"]:
            report.setdefault("warnings", []).append(f"{d}: a load phase ended with a problem ({prob}); its flows' "
                                                     f"figures until then are kept")
        if not x["saturated"]:
            report.setdefault("warnings", []).append(
                f"{d}: no queue and no drops under load — the bottleneck is not on the path but here (CPU, NIC, "
                f"or a path faster than {flows} flows fill): the rate is a lower bound, the buffer unknown")
    lap("other")
    report["elapsed_s"] = time.monotonic() - t0
    report["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
    d = report["down"]
    path = Path(base_rtt_ms=max(base["p50"], 0.01), down_mbps=d["rate_mbps"], up_mbps=report["up"]["rate_mbps"] if up else None,
                buffer_bytes=_twin_buffer(d), loss=min(report["loss"], 0.49), limiter=d["limiter"],
                up_buffer_bytes=_twin_buffer(report["up"]) if up else None,
                port_mbps=d.get("port_mbps"), bucket_bytes=d.get("bucket_bytes"), aqm_qdisc=d.get("aqm_qdisc"),
                port_buffer_bytes=d.get("port_buffer_bytes") if d["limiter"] == "policer" else None,
                wifi_mac=(d.get("wifi") or {}).get("mac"), wifi_phy_mbps=(d.get("wifi") or {}).get("phy_mbps"),
                **_variation_fields(report))
    report["twin"] = path.as_dict()
    return Measurement(path, report)
