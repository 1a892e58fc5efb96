"""What packet trains tell after the loads: a policer's rate, bucket and port (:func:`policer_figures`,
:func:`paced_bucket`), a tbf's queue before its bucket, a single-queue AQM's burst
(:func:`single_queue_aqm`), a FIFO too shallow for the flows' bursts (:func:`_not_a_policer`). Pure
functions of a train's analysis; ``measure`` sends the trains.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .physics import NOISE_MS, WIRE_SEGMENT, _significant, burst_floor_ms, mathis_loss
from .classify import CODEL_INTERVAL_MS, CODEL_TARGET_MS, _classify_ev, ambiguity, queue_dropped
from .buffer import buffer_reading
from .plan import IDLE_MIN_S
from .isolation import fifo_holds_the_fill
from .wifi_hop import WIFI_BATCH_PACKETS

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


#: PIE's burst allowance (RFC 8033 MAX_BURST; sch_pie's default): a queue younger than this is not dropped from
PIE_BURST_MS = 150.0


#: the AQM train: 1000 packets, the packet limit of sch_codel and sch_pie (tc's default `limit`): a longer train
#: overflows it and is tail-dropped like a FIFO's (CoDel at 100 Mbit/s lost 82 % of a 1666-packet train's tail)
AQM_TRAIN_PACKETS = 1000


#: the fewest packets after a train's first loss whose arrival rate is read (bloatlab-probe calls a shorter tail's
#: rate coarse: crates/probe/src/train.rs, analyse_with)
TAIL_RATE_PACKETS = 10


#: a port the train reads no faster than this multiple of the policed rate is not told apart from it
#: (the head's spacing then is the policer's own, or the sender's): the twin keeps POLICER_PORT
TRAIN_PORT_MARGIN = 1.1


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
        if sent_at <= rate_mbps * (1 + RATE_ERROR):
            # a bucket refilled faster than the train drew on it never ran dry, however small: the train passing
            # whole says nothing of it (campaign seed 54 path 16, fq_codel at 692 Mbit/s read as a policer at 683: a
            # 1000-packet train at 434 Mbit/s passed, and the floor of 1500 B it was taken as held the twin's CUBIC to
            # 0.1 Mbit/s where the kernel's got 390 on the true path). Nor where it drew on it by less than the rate's
            # own error (RATE_ERROR) refills: the least it read, H (1 - rate / U), is then within its uncertainty,
            # H x 0.1 x rate / U, of nothing (seed 54 path 18, a tbf at 265 Mbit/s with a 572-KB bucket: 1.5 MB at 275
            # Mbit/s read 51 KB). measure then takes the bucket the model finds (isolation.bucket_by_model)
            why.append(f"bucket: the train passed whole, sent at {sent_at:.4g} Mbit/s, within the measured rate's "
                       f"{RATE_ERROR:.0%} of the policed {rate_mbps:.4g}: not read")
        else:
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


#: the measured rate's error, the rate goal of issue 30: the bucket's refill is read from it (the tail's own rate and
#: its share of packets that passed read the server's pace as much as the policer's: a server short of CPU fell
#: from 64.5 to 35 Mbit/s through the tail of seed 8 path 14's paced train, where no packet was lost, and the tail
#: read 34.8 Mbit/s for a 39-Mbit/s policer), so the bucket is known within this share of the refill
RATE_ERROR = 0.10


def policer_cut(lost_seq: list[int], count: int, random_loss: float | None = None) -> int:
    """Where a train's bucket ran dry: the packet index k that splits its
    ``count`` packets (``lost_seq``: those lost) into two runs of loss rates
    p1 (before k, the path's random loss) and p2 (from k on, the policer's:
    1 - C/U) at the largest likelihood (two Bernoulli runs). Without random
    loss it is the first loss (a run without loss before it has likelihood
    1); with it, a random loss in the head no longer cuts the head short.
    With the path's ``random_loss`` measured (each way), a head whose losses
    are beyond it (three standard deviations: :func:`_significant`) is no
    head of random losses: a free p1 let the likelihood cut a train policed
    from its first packet before its last (seed 50 path 1: a 1.4-KB bucket at
    6.1 Mbit/s with 2.8 % random loss; 776 of a paced train's 1286 packets
    lost, 60 % from the first on, cut at 1285 "after 775 random losses": a
    136-KB bucket)."""
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
    if random_loss is not None:
        score = np.where(_significant(before, k, random_loss, handful=0), -np.inf, score)
    # among equals, the earliest cut (the first loss where nothing before it was lost)
    return int(np.argmax(score))


def paced_cut(train: dict, random_loss: float) -> int:
    """Where a paced train's bucket ran dry (it lost something): its first loss, or where the idle path showed
    random loss (``random_loss``, each way) :func:`policer_cut` — :func:`paced_bucket`'s cut, and where
    :func:`paced_rate` reads the tail from."""
    lost = train["lost_seq"]
    return policer_cut(lost, int(train.get("sent", 0)), random_loss) if random_loss > 0 else min(lost)


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
        if sent <= rate_mbps:
            # a server short of CPU paced below what it was asked (seed 31 path 15 on a loaded VM: 45.7 Mbit/s sent
            # for a 95.5 pace, under a tbf at 86.6): a train no faster than the rate passes whole through any bucket
            return None, 0.0, count, (f"the paced train was sent at {sent:.4g} Mbit/s, no faster than the policed "
                                      f"rate: it passed whole, which tells nothing of the bucket")
        b = count * w * (1 - rate_mbps / sent)
        return None, b, count, (f"the paced train's {count * w} B passed whole: the bucket is at least {b / 1e3:.3g} KB")
    k = paced_cut(train, random_loss)
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


def paced_rate(train: dict, pace_mbps: float, bucket_bytes: float | None,
               flows_mbps: float | None = None, cut: int | None = None) -> tuple[float | None, str]:
    """The policed rate from a paced train's tail (``train``, paced at
    ``pace_mbps`` through a bucket of ``bucket_bytes``, the reading so far;
    ``flows_mbps`` what the loaded phase's flows got through the same path;
    ``cut`` where the bucket ran dry, :func:`policer_cut`'s, where random
    losses came before it — the tail then starts there, :func:`tail_from`):
    (Mbit/s or None, why).

    Once a token bucket is empty it passes exactly what its tokens refill
    (RFC 2697's single-rate meter; Linux act_police): a train offered faster
    than that arrives, after its first loss, at the committed rate C, whatever
    the flows made of it. TCP's goodput through a bucket of a few packets
    stays below C (its bursts meet an empty bucket: seed 28 path 177, 4.74
    Mbit/s with a 2-packet bucket, four CUBIC and four BBR flows 3.71 and
    3.62), and the twin's policer runs C, not that goodput. The tail's rate
    (bytes after the head's last packet over their arrival span; the probe's
    ``tail_mbps``) is C where:

    - it has :data:`TAIL_RATE_PACKETS` packets or more (the probe calls a
      shorter tail's rate coarse);
    - the train was offered faster than it passed: the server's own rate
      over the tail (the packets it sent, lost or not, from the head's last
      to the tail's last received, over their send times) at least
      :data:`TRAIN_PORT_MARGIN` times the tail's. A train no faster than the
      rate is not cut by the bucket, and a server short of CPU may pace below
      what it was asked: its tail then reads the sender (seed 8 path 14, a
      64.5-Mbit/s pace fell below the 39-Mbit/s policer in the tail, which
      read 34.8). Where it was not, the stretches between its losses that
      the bucket could not have refilled across still read C
      (:func:`_refill_between_losses`: fresh seed 36 path 4, a tail offered
      at 6.7 Mbit/s for a 6.28 policer, read 6.30 where the flows read 5.42)
      — but not where the tail was offered below ``flows_mbps``: the flows'
      bytes over their window W passed the bucket, so C >= flows - B/W, and
      a tail slower than C empties the bucket only at the server's own
      bursts, so its losses tell nothing of the refill (fresh seed 39 path
      192 measured again at load 12: a 295.9-Mbit/s pace sent at 88.3, its
      33 losses read 92.4 for a 266.8 policer the flows read 267.7);
      and where neither holds, a tail that passed faster than ``flows_mbps``
      by :data:`TRAIN_PORT_MARGIN` still bounds C from below (an emptied
      bucket passes C T and a packet over the tail's span T, whoever paced
      it): the tail's rate, not the flows' (campaign seed 80 path 40's up
      direction: a FIFO of two packets at 67.2 Mbit/s read as a
      tbf, four BBR flows 48.35 through it; the train paced at 63.93 lost 21
      packets in one run at packet 1476 (a stall) and passed its other 503 at
      61.37: the flows' rate had stood, −28 %);
    - the server's stalls are allowed for. Between two received tail packets
      the server was silent for their gap less their spacing at the pace; a
      silence s shorter than the time the bucket takes to refill costs the
      policer nothing (the tokens pass at once when the train resumes), a
      longer one wastes the rest of s (the bucket sits full). While the
      train is policed the bucket holds less than a packet's tokens when a
      silence begins (a packet passes where it holds one), W/2 on average,
      so it refills in (B - W/2)/C. The tail passed C (T - E) over its
      span T, E the sum of those wasted times, so C = tail x T / (T - E);
      where E/T exceeds :data:`RATE_ERROR` the figure would rest on that
      model more than the goal's tolerance, and the tail is not taken (seed 28
      path 28: a 189-ms stall in a 1.15-s tail read 15.0 for 17.7). The VM's
      own pauses are shorter: tests/test_advise.py's 20-Mbit/s policer (a
      10-ms bucket) stalled 10.5 ms once, E/T 0.04 %."""
    moved = cut is not None and train.get("first_loss") is not None and cut > train["first_loss"]
    after = f"packet {cut}, where the bucket ran dry" if moved else "its first loss"
    if moved:
        train = tail_from(train, cut)
    tail, n = train.get("tail_mbps"), int(train.get("tail_packets") or 0)
    if train.get("first_loss") is None:
        return None, "the paced train lost nothing: no tail to read the rate from"
    if not tail:
        return None, (f"no send times of the packets after {after}" if moved else
                      f"nothing arrived after {after}") + ": no tail to read the rate from"
    if n < TAIL_RATE_PACKETS:
        return None, f"{n} packets after {after}: fewer than {TAIL_RATE_PACKETS}, too coarse for the rate"
    w = train.get("wire_bytes", WIRE_SEGMENT)
    tx = train.get("tx_ms") or []
    got = [i for i in range(len(tx)) if tx[i] is not None]
    head = [i for i in got if i < train["first_loss"]]
    if not head or got[-1] <= head[-1] or tx[got[-1]] <= tx[head[-1]]:
        return None, "no send times for the tail: whether the sender or the bucket set its rate is not known"
    offered = (got[-1] - head[-1]) * w * 8 / ((tx[got[-1]] - tx[head[-1]]) * 1e3)
    if offered < TRAIN_PORT_MARGIN * tail:
        if flows_mbps and offered < flows_mbps:
            return None, (f"the server sent the tail at {offered:.4g} Mbit/s, slower than the {flows_mbps:.4g} the flows "
                          f"got through: its losses are the sender's bursts, not what the emptied bucket refills")
        c, kept = _refill_between_losses(train, got, offered, bucket_bytes)
        if c is None and flows_mbps and tail > TRAIN_PORT_MARGIN * flows_mbps:
            # what passed after the first loss bounds C from below: an emptied bucket passes no more than it
            # refills (C T and a packet over the tail's span T), so a tail faster than the flows by more than the
            # train's resolution refutes their rate as C — whoever set the tail's pace, the path passed it
            return float(tail), (f"the server sent the tail at {offered:.4g} Mbit/s and {tail:.4g} passed, more than "
                                 f"{TRAIN_PORT_MARGIN:g}x the {flows_mbps:.4g} the flows got: an emptied bucket passes "
                                 f"no more than it refills, so the rate is at least the tail's (the sender may have "
                                 f"held it below the bucket's)")
        if c is None:
            return None, (f"the server sent the tail at {offered:.4g} Mbit/s, within {TRAIN_PORT_MARGIN:g}x of the "
                          f"{tail:.4g} that passed, and fewer than {TAIL_RATE_PACKETS} packets came between losses the "
                          f"bucket could not have refilled across: the sender, not the bucket, may have set the tail's rate")
        return c, (f"the paced train's tail, offered at {offered:.4g} Mbit/s: {kept} packets between losses it could "
                   f"not refill across at {c:.4g} Mbit/s, what the emptied bucket refills")
    refill_ms = max((bucket_bytes or 0.0) - w / 2, 0.0) * 8 / (tail * 1e3)
    span_ms = tx[got[-1]] - tx[head[-1]]
    tail_got = [i for i in got if i >= head[-1]]
    wasted, worst = 0.0, 0.0
    for i, j in zip(tail_got, tail_got[1:]):
        silent = (tx[j] - tx[i]) - (j - i) * w * 8 / (pace_mbps * 1e3)
        wasted += max(silent - refill_ms, 0.0)
        worst = max(worst, silent)
    if wasted > RATE_ERROR * span_ms:
        return None, (f"the server stalled (up to {worst:.3g} ms), {wasted:.3g} ms of its {span_ms:.4g}-ms tail beyond the "
                      f"bucket's {refill_ms:.3g}-ms refill: the tail's {tail:.4g} Mbit/s reads the sender")
    c = float(tail) * span_ms / (span_ms - wasted)
    return c, (f"the paced train's tail: {n} packets after {after} at {tail:.4g} Mbit/s, what the emptied bucket "
               f"refills" + (f" ({c:.4g} with the {wasted:.3g} ms the server's stalls wasted)" if wasted > 0 else ""))


def policed_tail_count(bucket_bytes: float, rate_mbps: float, pace_mbps: float, wire: int = WIRE_SEGMENT,
                       random_loss: float = 0.0) -> int:
    """The packets a train paced at ``pace_mbps`` must offer a policer for :func:`paced_rate` to read its rate:
    :data:`TAIL_RATE_PACKETS` after the bucket ran dry. The policed rate C is taken as the flows' ``rate_mbps``
    (they got no more through it). The head drains the full bucket (``bucket_bytes``, the reading so far) at the
    pace less C: B / (wire (1 - C / pace)) packets pass before the first loss; after it the emptied bucket passes
    C / pace of what is offered, of which a ``random_loss`` share is lost on the way. So the train offers the head
    and TAIL_RATE_PACKETS x pace / C / (1 - loss) more, and one for the first loss. A C above the flows' rate
    passes a larger share of the tail and lengthens the head; behind the buckets of a few packets this is for
    (where the flows fall far below C) the head is a few packets either way. The train's own cap (the server's
    paced length, 1 s) bounds the count."""
    share = min(rate_mbps / pace_mbps, 1.0)
    if share >= 1.0 or rate_mbps <= 0:
        return 0  # a pace no faster than the rate is not cut by the bucket: no tail to read (paced_rate)
    head = bucket_bytes / wire / (1.0 - share)
    tail = TAIL_RATE_PACKETS / share / (1.0 - min(random_loss, 0.5))  # (a path losing half is no policer's reading)
    return math.ceil(head + tail) + 1


def tail_from(train: dict, cut: int) -> dict:
    """``train`` (a paced train's JSON) with its tail read from packet ``cut`` on instead of from its first loss
    (:func:`queue_losses`' view of it, and ``tail_mbps``: the bytes received after the cut over the span
    from the last packet received before it, as the probe reads its tail from the first loss,
    crates/probe/src/train.rs), from the send times (``tx_ms``: the JSON has no arrival times; behind a bucket with
    no queue after it they are the arrivals' spacing). Where random losses came before the bucket ran dry
    (:func:`policer_cut`) the probe's tail, from the first of them, also holds the packets the full bucket passed
    at the pace: campaign seed 73 path 9 (a 48.3-Mbit/s policer with a 452-KB bucket and 0.54 % random loss), a
    2000-packet train paced at 68.3 Mbit/s lost packet 48 at random and ran the bucket dry at 1063: its tail from
    48 read 58.3 Mbit/s, which replaced the flows' 48.5. No send times: ``tail_mbps`` None (not read)."""
    tx, w = train.get("tx_ms") or [], train.get("wire_bytes", WIRE_SEGMENT)
    got = [i for i in range(len(tx)) if tx[i] is not None]
    head, tail = [i for i in got if i < cut], [i for i in got if i > cut]
    rate = None
    if head and tail and tx[tail[-1]] > tx[head[-1]]:
        rate = len(tail) * w * 8 / ((tx[tail[-1]] - tx[head[-1]]) * 1e3)
    # the first-loss view's other timings are not the cut's: left out
    return dict(queue_losses(train, cut), tail_packets=len(tail), tail_mbps=rate, tail_send_mbps=rate,
                tail_arrival_mbps=None, tail_span_ms=None, head_span_ms=None, bucket_bytes=None)


def _refill_between_losses(train: dict, got: list[int], offered: float, bucket_bytes: float | None) -> tuple[float | None, int]:
    """The policed rate from the stretches between a paced train's
    consecutive losses (``got``: the received packets' indices, ``offered``
    Mbit/s the tail's send rate, ``bucket_bytes`` the bucket read so far):
    (Mbit/s or None, the packets it rests on).

    At each loss the bucket held less than a packet (W); between two losses
    it refilled C per second and passed what was offered while it could.
    Unless it filled (its tokens then overflow and are lost), what passed
    between the packets received just before each loss is C over their
    send times within a packet. It can fill only where the offered rate
    fell below C long enough to gather B - W: across a stretch of span T
    that passed p packets, at most ``offered`` x T - p W (``offered`` >= C:
    the bucket ran dry). Stretches where that reaches B - W are left out
    (seed 32 path 40: a server at 46.5 Mbit/s for a 45.9 policer fell below
    it for 377 ms between two losses); the rest give C. None where they
    hold fewer than :data:`TAIL_RATE_PACKETS` packets or no bucket was read."""
    tx, w = train.get("tx_ms") or [], train.get("wire_bytes", WIRE_SEGMENT)
    losses = sorted(s for s in train.get("lost_seq") or [] if s >= train["first_loss"])
    if not bucket_bytes or len(losses) < 2:
        return None, 0
    # the received packet just before each loss, by its place in ``got`` (ascending): the packets between two are
    # the places between
    before = [bisect.bisect_left(got, k) - 1 for k in losses]
    passed_total, span_total = 0, 0.0
    for a, b in zip(before, before[1:]):
        if a < 0 or b <= a:
            continue
        span_ms = tx[got[b]] - tx[got[a]]
        passed = b - a
        if span_ms <= 0 or offered * 1e3 / 8 * span_ms - passed * w >= bucket_bytes - w:
            continue
        passed_total += passed
        span_total += span_ms
    if passed_total < TAIL_RATE_PACKETS or span_total <= 0:
        return None, passed_total
    return passed_total * w * 8 / (span_total * 1e3), passed_total


def port_fifo(train: dict) -> float | None:
    """A FIFO's depth from a back-to-back train whose head it cut (h packets
    of W bytes through, arriving at the sender's rate U, drained at the
    port's P): ``Q = (h - 1/2) W (1 - P/U)``. The first packet goes on the
    wire at once and is not in the FIFO (as a qdisc's packet is not once the
    device has it); by packet k's arrival the port has taken it and what it
    drained since, so packet k finds (k - 1) W - (k - 1) W P/U queued (whole
    packets: Linux and the emulator drain a packet at a time) and is taken
    where that and its own W fit: Q lies in [(h - 1) W (1 - P/U), h W (1 -
    P/U)), and the figure is the middle. Stored paths (emulator): a 5215-B
    FIFO at 1.77 Mbit/s cut a train at h = 4 (5225), 3478 B at 32.1 (3605),
    105.8 KB at 67.8 (104.6), 222.7 KB under an LTE-like capacity (220.5);
    the middle of [h W, (h + 1) W) that this read before, 6721, 5076,
    106.1 and 222.0 KB, put a packet more in the shallow ones."""
    w = train.get("wire_bytes", WIRE_SEGMENT)
    h, p = train.get("head_packets", 0), train.get("leading_mbps")
    u = train.get("head_send_mbps")
    if not p or not u or h < 2:
        return None
    return (h - 0.5) * w * (1 - p / max(u, p))


#: packets right after a back-to-back train's first loss that tell the overflow of a FIFO from a lone loss before
#: it: a FIFO the train keeps full (sent at U at least :data:`OVERFLOW_MIN_PRESSURE` times its drain P) passes at most
#: one of them per W / P and drops the rest, at least half; a random loss, or a lone drop elsewhere, lets the packets
#: after it through (campaign seed 53 path 1: a 981-Mbit/s FIFO of 371 KB took a 3.9-Gbit/s train's packets 109-138
#: after its first loss at 108 and overflowed from packet 310: its 1.22 % random loss, which the campaign's emulated
#: paths draw from one seeded stream, so packets 51, 55, 88, 95 and 127 of the 200-packet trains go on every path
#: with 0.4-2.4 % of it, whose FIFOs held 77-16 000 KB). Ten: a full FIFO drops at least five
OVERFLOW_WINDOW = 10


#: the least send rate over the head's drain rate (U / P) at which a train's head is read as a FIFO's depth: the FIFO
#: fills at least twice as fast as it drains, so the drain's share of the head (P / U, read from the head's own
#: spacing) is at most half, and a full FIFO drops at least half of the packets after it
OVERFLOW_MIN_PRESSURE = 2.0


def fifo_overflow_depth(train: dict | None, rate_mbps: float) -> float | None:
    """A FIFO's depth (B, wire bytes) from a back-to-back train whose first
    loss was that FIFO's overflow (:func:`port_fifo`: the head less what the
    FIFO drained while it arrived): the train reached it at least
    :data:`OVERFLOW_MIN_PRESSURE` times faster than it drained (the head's
    send rate U over its arrival rate P), the :data:`OVERFLOW_WINDOW`
    packets after the first loss lost at least half of what a full FIFO
    drops of them, ``(1 - P/U)`` each, and the rest of the train was
    tail-dropped as a full FIFO at ``rate_mbps`` drops it
    (:func:`_tail_dropped`). None otherwise: no loss, a lone loss before the
    overflow, a train no faster than the port.

    It reads bytes, not a delay: a FIFO's queueing delay at a capacity that
    moves is its bytes over the capacity of the moment (campaign seed 53 path
    42, an LTE-like capacity at 7.35 Mbit/s and 451 ms: the flows' p95 of 92
    ms at 6.26 Mbit/s read 72 KB where the FIFO held 19.0; a train's head
    17.2), and a FIFO shallower than the flows' bursts is only bounded by
    them (seed 52 path 0, a tbf's 16.3-KB queue at 64 Mbit/s: 8.1 KB from the
    probes' queueing; the head 14.5)."""
    if not train or train.get("first_loss") is None or train.get("head_packets") != train["first_loss"]:
        return None
    h, p, u = train["first_loss"], train.get("leading_mbps"), train.get("head_send_mbps")
    if not p or not u or u < OVERFLOW_MIN_PRESSURE * p or (train.get("sent") or 0) - h < OVERFLOW_WINDOW:
        return None
    if not train.get("lost_seq") or lone_first_loss(train):
        return None
    return port_fifo(train) if _tail_dropped(train, rate_mbps) else None


def lone_first_loss(train: dict) -> bool:
    """Whether a back-to-back train's first loss let the :data:`OVERFLOW_WINDOW` packets from it (itself the first
    of them) through as no full queue does: they lost fewer than half of what a FIFO kept full at the head's send
    rate U and drain P drops of them, ``(1 - P/U)`` each (a token bucket run dry at a policed rate C < P drops more,
    ``(1 - C/U)``); never where U < 1.25 P (half of that is under the one loss counted). A random
    loss, or a lone drop elsewhere, then ended the head, not the queue or the bucket, and the head says nothing of
    their depth. False where the train lost nothing, does not list its losses, has no head rate, or ended within
    the window (nothing to tell by). Campaign seed 70 path 3 (a 180.9-Mbit/s policer with a 95-KB bucket and
    0.33 % random loss on a 266-Mbit/s port): a 3.3-Gbit/s train lost packet 11, then 12-65 passed and the bucket
    ran dry at 66; read as the port's FIFO, 14.5 KB, its twin's port dropped the bursts the bucket lets through:
    BBR 106.7 Mbit/s on the twin, the kernel 148.1 on the true path."""
    h, p, u = train.get("first_loss"), train.get("leading_mbps"), train.get("head_send_mbps")
    if h is None or not p or not u or not train.get("lost_seq") or (train.get("sent") or 0) - h < OVERFLOW_WINDOW:
        return False
    lost = set(train["lost_seq"])
    return sum(1 for k in range(h, h + OVERFLOW_WINDOW) if k in lost) < OVERFLOW_WINDOW * (1 - p / max(u, p)) / 2


def port_fifo_by_delay(train: dict | None, rate_mbps: float) -> tuple[int | None, str]:
    """The whole packets N of a FIFO in front of a policer of ``rate_mbps``,
    read from a back-to-back train's one-way delays (``delay_ms``: each
    packet's beyond the train's least, the hosts' clock offset cancelled;
    bloatlab-probe's `udp train --json`), as (bytes N x W, why) or (None, why
    not).

    A FIFO the train keeps full admits a packet only into the room a
    departure left: it waits for the N - 1 whole packets queued before it and
    the rest of the one on the wire, so its delay beyond the train's first
    packet, which found the port idle, lies in (N - 1, N] packet times at the
    port's rate P. Where the train's packets come at a pace unrelated to the
    port's, that rest is spread evenly and the tail's median sits at N - 1/2;
    where admissions follow departures closely (the emulator hands a port its
    packets at its ticks) nearer N. N is taken as the whole number nearest
    the median plus a quarter packet (the middle of the two, N - 1/4), which
    holds within half a packet either way. Taken where the FIFO was full at
    the first loss and after it: the head's largest delay within one packet
    time of the tail's median (a FIFO still filling when the bucket ran dry
    shows less in the head), the tail (at least :data:`TAIL_RATE_PACKETS`
    packets) arriving at the port's pace (within :data:`RATE_ERROR`: neither a
    bucket run dry, which passes its rate C below P /
    :data:`TRAIN_PORT_MARGIN`, nor a server that slowed let the FIFO drain),
    and not a lone first loss. P is the head's arrival rate: a head that
    queued left the port at its pace, whatever pace the server sent it at.

    Where the server sends hardly faster than the port (U within 5-20 % of P
    here) the head's bytes less what P drained (:func:`port_fifo`) rest on the
    difference of two nearly equal rates and miss by a packet or more
    (campaign seed 83 path 53, a 4.1-KB FIFO of two whole packets on a
    186-Mbit/s port: 1.6 KB), where a FIFO of a few packets moves the flows by
    whole packets (its twin's one CUBIC flow 3.4, 6.6 and 23 Mbit/s at one,
    two and four packets). Emulated (2026-11-30: 95-, 35- and 120-Mbit/s
    policers on 186-, 190- and 400-Mbit/s ports, FIFOs of 2-7 and 51 whole
    packets): the medians of the trains whose tails arrived at the port's pace
    lay 0.01-0.46 packet times below N; 23 trains on 21 paths, all read right
    (the ceiling of the median, the bound alone, read them too, but two of
    them within 0.04 of a packet time of one packet more)."""
    if not train or not train.get("delay_ms") or train.get("pace_mbps") or train.get("first_loss") is None:
        return None, "no back-to-back train with one-way delays and a loss"
    h, p, w = train["first_loss"], train.get("leading_mbps"), train.get("wire_bytes", WIRE_SEGMENT)
    d = train["delay_ms"]
    head = [v for v in d[:h] if v is not None]
    tail = [v for v in d[h + 1:] if v is not None]
    if not p or len(head) < 2 or len(tail) < TAIL_RATE_PACKETS:
        return None, f"a head of {len(head)} and a tail of {len(tail)} packets: too few to read a FIFO's delay from"
    if p < TRAIN_PORT_MARGIN * rate_mbps:
        return None, f"the head arrived at {p:.4g} Mbit/s, no faster than the policed rate: no port to read"
    arrived = train.get("tail_arrival_mbps")
    if not arrived or arrived * (1 + RATE_ERROR) < p:
        return None, (f"the tail arrived at {arrived or 0:.4g} Mbit/s, below the port's {p:.4g}: what cut it stood "
                      f"after the FIFO")
    if lone_first_loss(train):
        return None, "a lone first loss: a random loss, not a full FIFO"
    pkt_ms = w * 8 / (p * 1e3)
    full = float(np.median(tail))
    if abs(max(head) - full) > pkt_ms:
        return None, (f"the head's largest delay ({max(head) * 1e3:.0f} us) more than a packet time "
                      f"({pkt_ms * 1e3:.0f} us) from the tail's ({full * 1e3:.0f} us): the FIFO was not full at the first loss")
    n = max(math.floor(full / pkt_ms + 0.75), 1)
    return n * w, (f"the train's tail met a full FIFO: its packets waited {full * 1e3:.0f} us at the median beyond the "
                   f"first's ({full / pkt_ms:.2f} packet times at the port's {p:.4g} Mbit/s, as its head's last did), "
                   f"so the FIFO holds {n} whole packet(s) ({n * w / 1e3:.3g} KB)")


def port_fifo_from_delays(x: dict) -> None:
    """A ``policer`` direction whose port's FIFO no train read (``port_buffer_bytes`` None) takes it from the first of
    its back-to-back trains — the 200 packets before the loads (``wifi_train``), then the 1000 after them
    (``train``) — whose one-way delays show it full (:func:`port_fifo_by_delay`), and the port's rate with it where
    the server's pace hid it (``port_mbps`` None: a head that queued left the port at the port's pace). The twin's
    default, one BDP, would pass the flows' bursts that such a FIFO drops (campaign seed 91 path 12: a 35-Mbit/s
    policer behind a 5.4-KB FIFO, three packets, on a 190-Mbit/s port: the twin's one CUBIC flow 33.0 Mbit/s with
    the default, 21.5 with three packets, the kernel's 21.1 on the true path)."""
    if x.get("limiter") != "policer" or x.get("port_buffer_bytes") is not None:
        return
    for key in ("wifi_train", "train"):
        t = x.get(key)
        b, why = port_fifo_by_delay(t, x["rate_mbps"])
        if b is not None:
            x["port_buffer_bytes"] = int(b)
            if x.get("port_mbps") is None:
                x["port_mbps"] = t["leading_mbps"]
            x.setdefault("train_evidence", []).append(f"the {t.get('sent')}-packet train: {why}")
            return


def pressed_hardest(first: dict, others: list) -> dict:
    """Of back-to-back trains whose heads a port's FIFO cut (``first``, the one known to be cut so, and
    ``others``: trains of the same path taken at other times, None where there is none), the one
    :func:`port_fifo` reads best: the least ratio of the port's drain to its send rate, P/U.

    The FIFO's figure ``(h - 1/2) W (1 - P/U)`` rests on the difference of two rates: an error e in P/U moves
    it by e / (1 - P/U) of itself, ten times more at P/U = 0.9 than at 0.1. A server that sends a train hardly
    faster than the port (the 1000-packet train behind a policer, which the server paces within 5-20 % of the
    port on some paths) leaves 1 - P/U a few hundredths, where the 200 packets of the idle train, sent at the
    host's line rate, leave it most of one (campaign seed 91 path 12: a 5.4-KB FIFO on a 190-Mbit/s port,
    read 42 KB from the former). Another train's head was cut by the same FIFO where ``first``'s was: the FIFO
    overflows after about Q / (W (1 - P/U)) packets, fewer the faster a train comes, while the bucket behind
    it runs dry after B / (W (1 - C/P)) whatever U is (its packets reach it at P). Taken from ``others`` only
    a train that reads a FIFO at all (a loss, a head of two packets, the port's rate within
    :data:`RATE_ERROR` of ``first``'s, not a lone first loss) and presses the port harder."""
    best = first

    def pressure(t: dict) -> float:
        return t["leading_mbps"] / max(t["head_send_mbps"], t["leading_mbps"])

    p = first.get("leading_mbps")
    for t in others:
        if (not t or t.get("pace_mbps") or t.get("first_loss") is None or t.get("head_packets", 0) < 2
                or not t.get("leading_mbps") or not t.get("head_send_mbps") or not p
                or abs(t["leading_mbps"] / p - 1) > RATE_ERROR or lone_first_loss(t)):
            continue
        if port_fifo(best) is None or pressure(t) < pressure(best):
            best = t
    return best


def no_room_for_a_probe(train: dict, q: float, rate_mbps: float, probe_q95_ms: float | None,
                        flows: int = 4) -> tuple[float | None, str]:
    """Whether a shallow FIFO that :func:`port_fifo` read from ``train`` (``q``, B: the middle of ``[(h - 1) W (1 -
    P/U), h W (1 - P/U))``, h packets of W through) has room for a probe behind the h - 1 whole packets it holds:
    (the whole packets' bytes, why) where the loaded phase's probes say it has none, else (None, why not).

    A FIFO in bytes (Linux's bfifo, the tbf's ``limit``) holds ``floor(Q / W)`` full packets and the rest of Q for
    smaller ones; anywhere in the train's interval that is h - 1 full packets, and what the train cannot tell is the
    rest, from none to nearly a packet: its middle leaves half a packet, room for a 92-B probe behind a full queue.
    The loaded phase's probes tell it where the flows keep the FIFO full (a depth below their own bursts,
    :func:`burst_floor_ms`): a probe admitted behind the h - 1 full packets waits for them and the rest of the one
    leaving, (h - 1, h] packet times at the rate; where no probe fits behind them, only probes that found fewer get
    in, (h - 2, h - 1], and the rest are dropped — the probes' p95 sits near the top of either. Below the middle
    of the two tops, h - 1/2 packet times, they never waited behind a full FIFO: its depth is the whole packets'
    bytes, (h - 1) W (a twin with the interval's middle lets every probe in behind them and predicts a packet time
    more: campaign seed 197 path 1, a tbf at 0.697 Mbit/s whose 3000-B queue the train read 3737 B, the probes'
    p95 33.4 ms of queue, 1.94 packet times; its twin's probe p95 52.4 ms, 35.4 with the FIFO at 3027 B, the
    kernel's 34.7). Read only where half a packet time is at least the measurement's noise (:data:`NOISE_MS`):
    the two tops lie a packet time apart (6 ms at 2 Mbit/s)."""
    h, w = train.get("first_loss"), train.get("wire_bytes", WIRE_SEGMENT)
    if not h or h < 2 or probe_q95_ms is None or rate_mbps <= 0:
        return None, "no train head of two packets or no loaded probes"
    packet_ms = w * 8 / (rate_mbps * 1e3)
    if packet_ms / 2 < NOISE_MS:
        return None, f"a packet time ({packet_ms:.2g} ms) within twice the {NOISE_MS:g}-ms noise"
    depth_ms = q * 8 / (rate_mbps * 1e3)
    floor = burst_floor_ms(rate_mbps, flows)
    if depth_ms >= floor:
        return None, f"the FIFO ({depth_ms:.3g} ms) is no shallower than the flows' bursts ({floor:.3g} ms)"
    if probe_q95_ms >= (h - 0.5) * packet_ms:
        return None, (f"the loaded probes' p95 ({probe_q95_ms:.3g} ms of queue) reached {h - 1} full packets "
                      f"({(h - 1) * packet_ms:.3g} ms)")
    whole = (h - 1) * w
    return float(whole), (f"no room for a probe behind its {h - 1} full packets: the loaded probes' p95 queue of "
                          f"{probe_q95_ms:.3g} ms ({probe_q95_ms / packet_ms:.2f} packet times at {rate_mbps:.4g} "
                          f"Mbit/s) stayed below {h - 0.5:g}, so {whole / 1e3:.3g} KB")


def _fifo_depth_from_trains(x: dict, base_ms: float) -> None:
    """A ``fifo`` direction's buffer in bytes from a back-to-back train the
    FIFO cut (:func:`fifo_overflow_depth`; the port's train first, then the
    AQM train, then the WiFi hop's), where it is the FIFO the flows met: the
    flows' queueing gives the depth only to within their own bursts and the
    noise (:func:`burst_floor_ms` at the rate: 14.7 KB at 7.15 Mbit/s and 4
    flows), a train to within a packet. The train's depth replaces

    - a depth the flows read, within that resolution of it (campaign seeds
      52-53's five such FIFOs: the flows' figures -11 to +17 %, the trains'
      -1.7 to +4 %);
    - a bound the flows set (``buffer_bound``: a FIFO shallower than their
      bursts, or one they never filled: :func:`buffer_reading`) that it keeps
      within (seed 53 path 24: a 5215-B FIFO at 1.77 Mbit/s read at most 12.7
      KB, ~4.7; the train 5225);
    - a depth read at a capacity that moves (``buffer_window.queued_bytes``,
      whose delays fall where the capacity is low; seed 53 path 42: 72 KB for
      19.0, the train 17.2);
    - a slow start's overflow (``buffer_from`` "slow_start", measure's deep
      step where the flows left a lower bound) that it lies between that bound
      and, within the flows' resolution, the overflow's queue.

    A train's FIFO outside those is another than the one the flows met (a
    faster hop's, say) and is left out. ``buffer_from`` says which train."""
    if x.get("limiter") != "fifo":
        return
    for key in ("train", "aqm_train", "wifi_train"):
        q = fifo_overflow_depth(x.get(key), x["rate_mbps"])
        if q is not None:
            break
    else:
        return
    moving = (x.get("buffer_window") or {}).get("queued_bytes") is not None
    bound = x.get("buffer_bound")
    res = burst_floor_ms(x["rate_mbps"], x.get("flows", 4)) / 1e3 * x["rate_mbps"] * 1e6 / 8
    if x.get("buffer_from") == "slow_start":
        # a slow start's overflow (measure._deep_fill) where the fill left a lower bound: the train, a packet's
        # resolution, where it lies between that bound and the overflow's queue (within the flows' resolution)
        # (where the reading since lost its figure, a stale "slow_start" holds nothing)
        held = (x.get("buffer_bytes") is not None
                and (x.get("deep_fill") or {}).get("fill_bound_bytes", 0) <= q <= x["buffer_bytes"] + res)
    elif bound == "upper":
        held = q <= (x.get("buffer_bytes_max") or 0)
    elif bound == "lower":
        held = q >= (x.get("buffer_bytes_min") or 0)
    else:
        held = moving or (x.get("buffer_bytes") is not None and abs(q - x["buffer_bytes"]) <= res)
    if not held:
        return
    was = x.get("buffer_note") or (f"the flows' queueing {'at a capacity that moves ' if moving else ''}read "
                                  f"{x['buffer_bytes'] / 1e3:.3g} KB" if x.get("buffer_bytes") is not None else "")
    bdp = x["rate_mbps"] * 1e6 * base_ms / 1e3 / 8
    t = x[key]
    whole, why_whole = no_room_for_a_probe(t, q, x["rate_mbps"], (x.get("evidence") or {}).get("probe_q95_ms"),
                                           x.get("flows", 4))
    if whole is not None:
        q = whole
    x.update(buffer_bytes=int(max(q, WIRE_SEGMENT)), buffer_bdp=q / bdp if bdp else None, buffer_bound=None,
             buffer_bytes_min=None, buffer_bytes_max=None, buffer_from=key,
             buffer_note=(f"~{q / 1e3:.3g} KB: a packet train sent at {t['head_send_mbps']:.4g} Mbit/s overflowed the "
                          f"FIFO after {t['first_loss']} packets, which drained at {t['leading_mbps']:.4g} Mbit/s while "
                          f"they came (bytes, not a delay)" + (f"; {why_whole}" if whole is not None else "")
                          + (f"; {was}" if was else "")))


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


#: what a paced train's head must gain over its send span to show a queue in front of the bucket (ms), where the train
#: carries no one-way delays (a recording made before the probe gave them; :func:`paced_tail_queue` reads those): the
#: measurement's noise alone (physics.NOISE_MS). The flows' burst floor (burst_floor_ms) does not apply: a paced
#: train carries no TSO bursts and reaches the port no faster than the port drains it (PACE_SHARE), so behind a
#: policer its head arrives as it was sent (the campaign's 17 stored policer paths: -0.15 to +0.16 ms); what
#: stays unseen is a tbf whose queue drains within the noise, which acts as a policer does (its alternatives say so)
PACED_QUEUE_MIN_MS = NOISE_MS


#: the head's first packets whose delays are the baseline a queue is measured from (:func:`paced_tail_queue`): they
#: met the bucket full, so nothing queued in front of it yet. Behind a bucket of less than a packet a tbf's queue
#: ramps from the second packet on, (1 - C/U) packet times a packet: the median of three then sits at most one
#: such step above the empty queue (a bias against reading the queue, never for it)
PACED_HEAD_START = 3


#: the standard deviations of the difference of two medians a queue must stand above (:func:`paced_tail_queue`):
#: a one-sided test at ~0.1 % under the hypothesis that nothing queued (a policer: head and tail alike)
PACED_QUEUE_SIGMAS = 3.0


#: a normal spread's standard deviation over its median absolute deviation, 1 / Φ⁻¹(3/4)
MAD_TO_SIGMA = 1.4826


#: a median's standard error over its sample's sigma / sqrt(n) for a normal spread, sqrt(π/2)
MEDIAN_SE = math.sqrt(math.pi / 2)


def _paced_head_tail(train: dict) -> tuple[list[float], np.ndarray] | None:
    """A paced train's one-way delays (``delay_ms``) as (its head's first :data:`PACED_HEAD_START`, the packets
    after its first loss), or None where they cannot tell a queue: no delays, no loss, no head, or a tail shorter
    than :data:`TAIL_RATE_PACKETS`."""
    d = train.get("delay_ms") or []
    h = train.get("first_loss")
    if not d or h is None:
        return None
    head = [v for v in d[:h] if v is not None][:PACED_HEAD_START]
    tail = np.array([v for v in d[h + 1:] if v is not None], dtype=float)
    return (head, tail) if head and len(tail) >= TAIL_RATE_PACKETS else None


def paced_tail_queue(train: dict, rate_mbps: float) -> tuple[float | None, str]:
    """The queue (ms) a paced train's packets met after its first loss,
    read from their one-way delays (``delay_ms``: each packet's beyond the
    train's least, the hosts' clock offset cancelled): the median delay of
    the tail (the packets after the first loss) less that of the head's
    first :data:`PACED_HEAD_START` packets, where it is a queue — (ms, why)
    — or (None, why not).

    Behind a tbf the paced train (sent at U above the rate C, below the
    port: nothing queues there) empties the bucket, then fills the queue in
    front of it (sch_tbf's ``limit``, Q bytes), which drops once full and
    stays full while the train goes on faster than it drains: each tail
    packet admitted waits for what is queued ahead of it, Q - W to Q bytes,
    (Q - W/2)/C on average. Behind a policer each packet passes or is
    dropped at once, and head and tail meet the same nothing. Unlike the
    head's last packet alone (:func:`paced_queue_ms`), hundreds of tail
    packets read it however the first loss fell (campaign seed 134 path 10,
    a tbf with a 4.15-ms queue at 34.2 Mbit/s: its head's last packet met
    no queue, -0.03 ms, its 745 tail packets 4.04 ms at the median), and the
    noise is the train's own: a VM pause moves a few packets, not the
    median, and the delays' spread sets the bar. A queue is read where the
    difference exceeds both:

    - :data:`PACED_QUEUE_SIGMAS` standard errors of the difference of the
      two medians under the hypothesis of no queue (the same delays in head
      and tail): ``sqrt(π/2) s sqrt(1/n_head + 1/n_tail)``
      (:data:`MEDIAN_SE`), s the tail's spread (:data:`MAD_TO_SIGMA` times
      its median absolute deviation; the head's start is too few for its
      own);
    - half a packet time at the rate, ``W / (2 C)``: a queue that holds a
      whole packet delays the tail that much on average at least; less is
      no queue a packet waits in (the host's timing then, not the path's).

    Seed 134 (the stored draws' tbf and policer paths with a paced train,
    read when this was written): tbf queues of 0.44-4.15 ms at 30-260 Mbit/s
    read 0.42-4.01 ms (bars 0.006-0.09 ms); five policers' tails -0.07 to
    +0.015 ms from their heads' start, their bars 0.03-13 ms."""
    ht = _paced_head_tail(train)
    if ht is None:
        return None, (f"no one-way delays, no loss, or fewer than {TAIL_RATE_PACKETS} packets after it: no tail to "
                      f"read a queue from")
    head, tail = ht
    start, full = float(np.median(head)), float(np.median(tail))
    gained = full - start
    spread = MAD_TO_SIGMA * float(np.median(np.abs(tail - full)))
    noise = PACED_QUEUE_SIGMAS * MEDIAN_SE * spread * math.sqrt(1 / len(head) + 1 / len(tail))
    w = train.get("wire_bytes", WIRE_SEGMENT)
    half = w * 8 / (2 * rate_mbps * 1e3)
    bar = max(noise, half)
    said = (f"the {len(tail)} packets after its first loss met {full:.3g} ms at the median, its first {len(head)} "
            f"{start:.3g}: {gained:.3g} ms")
    if gained <= bar:
        return None, (f"{said}, within {bar:.2g} ms (" + ("the delays' noise" if noise >= half else
                      f"half a packet time at {rate_mbps:.4g} Mbit/s") + "): no queue")
    return gained, said


def _queue_before_bucket(x: dict, base_ms: float) -> None:
    """A ``policer`` direction whose paced train met a queue in front of
    what cut it — a tbf, not a policer: its tail's delays above its head's
    start by more than their noise (:func:`paced_tail_queue`), or, where the
    train carries no delays, lost nothing or has too short a tail to read
    them by, its head's gain over its send span (:func:`paced_queue_ms`) above :data:`PACED_QUEUE_MIN_MS`. The
    direction becomes ``fifo`` (a tbf's queue is a FIFO at its rate) with
    that queue's depth at the measured rate, and its bucket what the paced
    head passed beyond the refill (``paced_bucket_bytes``) less that queue.
    A head the server sent no faster than the rate could queue nowhere and
    tells nothing; a smaller gain keeps the reading, whose alternatives
    already name a FIFO (or a tbf's queue) that shallow."""
    t = x.get("paced_train")
    if x["limiter"] != "policer" or not t:
        return
    sent = t.get("head_send_mbps") or t.get("pace_mbps")
    if sent is not None and sent <= x["rate_mbps"]:
        return
    w = t.get("wire_bytes", WIRE_SEGMENT)
    tail_q, why = paced_tail_queue(t, x["rate_mbps"])
    if tail_q is not None:
        # a tail packet waits for Q - W to Q bytes queued ahead of it: (Q - W/2)/C on average
        q = tail_q
        buf = q / 1e3 * x["rate_mbps"] * 1e6 / 8 + w / 2
        how = (f"the paced train's tail met a queue: {why}, beyond its noise and half a packet time, where a policer "
               f"passes or drops each packet at once")
    elif _paced_head_tail(t) is not None:
        # the tail's delays said no queue: the head's last packet alone is not asked
        x.setdefault("train_evidence", []).append(f"the paced train: {why}")
        return
    else:
        q = paced_queue_ms(t)
        if q is None or q < PACED_QUEUE_MIN_MS:
            return
        buf = q / 1e3 * x["rate_mbps"] * 1e6 / 8
        how = (f"the paced train's head gained {q:.3g} ms of delay before its first loss, more than the measurement's "
               f"{PACED_QUEUE_MIN_MS:.2g}-ms noise, where a policer passes or drops each packet at once")
    bdp = x["rate_mbps"] * 1e6 * base_ms / 1e3 / 8
    note = f"a token bucket behind a queue (a tbf): {how}; the queue holds ~{buf / 1e3:.3g} KB at {x['rate_mbps']:.4g} Mbit/s"
    x.update(limiter="fifo", buffer_bytes=int(max(buf, WIRE_SEGMENT)), buffer_bdp=buf / bdp if bdp else None,
             limiter_note=note, limiter_alternatives=None, tbf_queue_ms=q)
    paced = x.get("paced_bucket_bytes")
    if paced is not None:
        # the paced head filled the bucket's deficit and then this queue: at the pace U above the refill C the
        # bucket runs dry after B U / (U - C) bytes and the queue fills after Q U / (U - C) more, so what the
        # policer's formula read, h W (1 - C/U), is B + Q (a train that passed whole queued Q at its end: the
        # bucket ran dry too). The bucket is that less the queue, at least a packet (sch_tbf passes nothing
        # larger than its burst). The back-to-back train's head is the queue's, not the bucket's (campaign seed 108
        # path 5, a tbf at 1.21 Mbit/s with a 3000-B bucket and a 3000-B queue: 6.3 KB paced, 3.44 KB queued,
        # the back-to-back head 5.23 KB taken before, the twin's CUBIC +16 % over the kernel's)
        bucket = max(paced - buf, w)
        x.update(bucket_bytes=int(bucket),
                 bucket_note=(f"the paced train's head passed {paced / 1e3:.3g} KB beyond the refill: the bucket and "
                              f"the {buf / 1e3:.3g}-KB queue in front of it, so the bucket ~{bucket / 1e3:.3g} KB"))


def bucket_before_fifo(x: dict, train: dict | None) -> None:
    """A ``fifo`` direction (down) whose idle packet train (``train``: measure's WiFi train, back to back on the idle
    path) arrived whole at a port faster than the direction's rate by more than :data:`TRAIN_PORT_MARGIN`: a token
    bucket in front of the FIFO (a tbf, sch_tbf: a queue, its bucket, a faster port) passed the train at the port's
    rate, so the bucket held at least what the train took from it — its bytes at the port, P, less what refilled
    at the rate, C, meanwhile: ``bytes x (1 - C / P)``, the bound ``bucket_bytes`` takes, with ``port_mbps``
    (:meth:`path.Path.link_doc` then gives the twin that tbf). The bytes are the train's head (its packets before its
    first loss), and its tail too where that kept the port's rate (within :data:`TRAIN_PORT_MARGIN`: a random loss,
    not the bucket's end). A plain FIFO spaces a train at its own rate, the slowest on the path; only a bucket, a
    capacity that moves (the twin follows a trace there: not read here) or an aggregating WiFi hop (its own
    reading: not here either) lets a train through faster than the path carries a load. Only a train that came one
    packet at a time (no batch beyond :data:`wifi_hop.WIFI_BATCH_PACKETS`) is read: a batch is a pause of the
    receiver's or the emulator's that compressed the spacing (20-55 packets at once on seed 100 paths 2, 14, 15
    and 20; on path 14, CAKE at 93.9 Mbit/s, the head read 114.8).

    Why it matters: BBR's bandwidth filter keeps the highest delivery rate of its last ten round trips, and the
    bucket lets each probing round's excess through at the port's rate, so BBR paces above the tbf's rate and holds
    its queue full. Campaign seed 101 path 8, a tbf at 19.0 Mbit/s (a 229-KB bucket, 96 ms of the rate) on a
    23.0-Mbit/s port, 15.5 ms: the kernel's BBR on the true path had a p95 RTT of 40.7-47.1 ms, the twin without the
    bucket 21.8-22.3 (−46 %); with this bound (the idle train of 195 packets at 23.06 Mbit/s: 55.8 KB) 36.2-42.7,
    with the true bucket 39.3-42.8. A tbf on a port the train reads within the margin (seed 101 path 3: 308 Mbit/s
    on 333, a 1.85-MB bucket; BBR's p95 153-157 ms on the kernel, the twin 110) stays a FIFO: its port cannot be
    told from its rate."""
    if x.get("limiter") != "fifo" or x.get("bucket_bytes") or x.get("wifi") or not train or train.get("sender_limited"):
        return
    if x.get("variable") or (train.get("batches") or {}).get("packets_max", 1) > WIFI_BATCH_PACKETS:
        return
    rate, port = x["rate_mbps"], train.get("leading_mbps")
    if not port or port <= TRAIN_PORT_MARGIN * rate:
        return
    wire = train.get("wire_bytes", WIRE_SEGMENT)
    n = train.get("head_packets") or 0
    tail = train.get("tail_arrival_mbps")
    if train.get("tail_packets", 0) >= TAIL_RATE_PACKETS and tail and tail * TRAIN_PORT_MARGIN >= port:
        n += train["tail_packets"]
    bucket = n * wire * (1 - rate / port)
    if bucket < wire:
        return
    x.update(port_mbps=port, bucket_bytes=int(bucket),
             bucket_note=(f"a token bucket in front of the FIFO (a tbf): the idle packet train's {n} packets arrived "
                          f"at {port:.4g} Mbit/s, faster than the {rate:.4g} the direction carries, so its bucket held "
                          f"at least {bucket / 1e3:.3g} KB (their bytes less what refilled at the rate meanwhile)"))


def _shallow_queue_reading(x: dict, rate_mbps: float, base_ms: float) -> dict:
    """The buffer of a queue too shallow for the flows' bursts, read from the flows' queueing p95 at ``rate_mbps``
    (:func:`buffer_reading`; drops seen: an upper bound where the queueing is within their bursts, its figure then
    the probes' queueing), at least two packets, with its BDP share over ``base_ms``."""
    ev = x["evidence"]
    reading = buffer_reading(ev["flow_q95_ms"], rate_mbps, x.get("flows", 4), base_ms, True,
                             queue_max_ms=(x.get("buffer_window") or {}).get("queue_max_ms"),
                             probe_q95_ms=max(ev.get("probe_q95_ms") or 0.0, x.get("added_delay_ms") or 0.0))
    buf = max(reading["buffer_bytes"], 2 * WIRE_SEGMENT)
    bdp = rate_mbps * 1e6 * base_ms / 1e3 / 8
    return dict(reading, buffer_bytes=int(buf), buffer_bdp=buf / bdp if bdp else None)


def _paced_past_the_flows(x: dict, base_ms: float) -> None:
    """A ``policer`` direction whose paced train passed whole at a pace P
    above the flows' rate C, while every flow lost its first packet having
    delivered little: no policer at C dropped them. A FIFO too shallow for
    the flows' bursts did (a loss-based flow cannot fill a link through a
    queue of a few packets: seed 33 path 32, 21.5 Mbit/s read through a
    3.5-KB FIFO at 31.9, its paced train passing 3 MB at 30.5 whole).

    A token bucket of rate r and depth B drops a flow's first packet only
    once it runs dry: the bytes through it by then — at most S, the flows'
    deliveries at their first retransmissions (a flow's packets before its
    first loss are acknowledged by then, and the first drop comes no later
    than any flow's own) — exceed what it held when the load began. After
    the quiet gap before the load (plan.IDLE_MIN_S, g) it held min(B, r g),
    so B < S, or r < S / g (then it passed the flows' C over their phase
    from a bucket of less than S: C <= 2 S / g, excluded below). The paced
    train, n packets of W bytes over its send span T at P, passed whole:
    B >= (P - r) T. Both hold only for r >= P - S / T. Where that is above
    :data:`TRAIN_PORT_MARGIN` x C the flows' rate is no token bucket's: the
    direction becomes ``fifo`` at the port's rate (the first train's head;
    the paced train's own rate where the port was not told), its buffer the
    FIFO the first train's head filled (:func:`port_fifo`) where that was
    read, else the flows' queueing at the port's rate, as
    :func:`_not_a_policer` reads it. Named beside it: a policer at r or
    above (its bucket below S), which the twin's FIFO at the port acts
    like. A policer the flows reached within that margin never meets it:
    the paced train needs B >= (P - r) T, and its first drop came after
    S >= min(B, r g) — which, with C g > 2 S and C <= r, is B — so
    P - S / T <= P - B / T <= r. What is left
    unseen: a policer the flows (CUBIC's phase and BBR's both) stayed more
    than the margin below, whose bucket lay between (P - r) T and S — it
    is named. Measured on the stored campaign paths (seeds 31-33, 63 down
    directions): this path the one it turned; the one policer whose paced
    train passed whole (seed 33 path 15, 59.9 Mbit/s) bounds r at 0.74 x
    its flows' rate. A train that lost anything, or flows not all seen at
    a first loss, tell nothing here.

    The shallow FIFO that dropped the flows' first packets must also hold
    them to their rate: where the twin's model of that FIFO gives the fill's
    flows more than :data:`TRAIN_PORT_MARGIN` x what they got
    (:func:`isolation.fifo_holds_the_fill`), a token bucket the paced train
    did not run dry holds them behind it, and the policer reading stays
    (campaign seed 84 path 7: a 119-Mbit/s policer, 1.1-MB bucket, on a
    185-Mbit/s port with a 27.9-KB FIFO; the model's FIFO 180 Mbit/s for
    the flows' 119)."""
    t = x.get("paced_train")
    if x["limiter"] != "policer" or not t or t.get("lost") or t.get("first_loss") is not None or t.get("sender_limited"):
        return
    first = x.get("first_loss") or {}
    flows = first.get("flows") or []
    if not flows or len(flows) < x.get("flows", 4):
        return
    c = x["rate_mbps"]
    pace = t.get("head_send_mbps") or t.get("pace_mbps")
    span_s = (t.get("send_ms") or 0.0) / 1e3
    n, w = int(t.get("sent", 0)), t.get("wire_bytes", WIRE_SEGMENT)
    if not pace or span_s <= 0 or n < 2:
        return
    s = sum(f["sent_bytes"] for f in flows)
    if c * 1e6 / 8 * IDLE_MIN_S <= 2 * s:
        return
    r_min = pace - s * 8 / span_s / 1e6
    if r_min < TRAIN_PORT_MARGIN * c:
        return
    port = x.get("port_mbps") or t.get("leading_mbps") or pace
    q = x.get("port_buffer_bytes")
    if q:
        bdp = port * 1e6 * base_ms / 1e3 / 8
        reading = {"buffer_bytes": int(q), "buffer_bdp": q / bdp if bdp else None, "buffer_bound": None,
                   "buffer_bytes_min": None, "buffer_bytes_max": None,
                   "buffer_note": "the FIFO the first train's head filled: its bytes less what the port drained while "
                                  "they came, within half a packet (port_fifo)"}
        said = f"the FIFO the first train's head filled, {q / 1e3:.3g} KB"
    else:
        reading = _shallow_queue_reading(x, port, base_ms)
        said = f"the flows' queueing at the port, ~{reading['buffer_bytes'] / 1e3:.3g} KB"
    # the FIFO the first train's head read lies within half a packet of its figure (port_fifo): the model runs
    # its least, since a FIFO of a few packets holds loss-based flows by the whole packets it fits (seed 33 path
    # 32: 3.5 KB at 31.94 Mbit/s gives the model's four CUBIC flows 21.6 Mbit/s, the kernel's 21.5; 4.5 KB 29.6)
    holds, why = (fifo_holds_the_fill(x, port, max(q - w / 2, w), base_ms, TRAIN_PORT_MARGIN) if q else
                  (None, "no FIFO a train read"))
    if holds is False:
        # the shallow FIFO dropped the flows' first bursts, but does not hold them to their rate: a bucket the
        # paced train did not run dry did (its figures stay the policer's)
        x.setdefault("train_evidence", []).append(
            f"the paced train passed whole at {pace:.4g} Mbit/s, above the flows' {c:.4g}, and every flow lost its "
            f"first packet with {s / 1e3:.3g} KB delivered: a shallow FIFO dropped them first, but {why}: not what "
            f"holds them, so a token bucket still does (the paced train's {n * w / 1e3:.4g} KB did not run it dry)")
        return
    note = (f"drops without a queue, but the paced train passed {n * w / 1e3:.4g} KB whole at {pace:.4g} Mbit/s, faster "
            f"than the flows' {c:.4g}, while every flow lost its first packet having delivered {s / 1e3:.3g} KB in all: "
            f"a token bucket that dropped them holds less than that, so it polices at {r_min:.4g} Mbit/s or more "
            f"(the paced train ran it down by at most the bucket) — not at the flows' rate. A FIFO too shallow for "
            f"their bursts held them below the port's {port:.4g} Mbit/s: {said}")
    x.setdefault("rate_by_cc", {})["paced_train"] = port
    x.setdefault("rate_from", {})["paced_train"] = "port" if x.get("port_mbps") else "paced train"
    x.update(reading)
    x.update(limiter="fifo", rate_mbps=port, port_mbps=None, bucket_bytes=None, port_buffer_bytes=None, limiter_note=note,
             limiter_alternatives=[{"limiter": "fifo"}, {"limiter": "policer", "rate_above_mbps": r_min}])


def lost_beyond_random(train: dict, idle_loss: float = 0.0) -> bool:
    """Whether a packet train lost more of its packets from its first loss on than the path's random loss
    explains (:func:`physics._significant`, no handful: a train is no TCP flow): its bottleneck dropped."""
    lost, tail = train.get("lost", 0), train.get("tail_packets", 0)
    return _significant(lost, tail + lost, idle_loss, handful=0)


def tail_held(train: dict, idle_loss: float = 0.0) -> bool:
    """Whether a packet train that lost packets beyond the path's random loss
    had its tail held in a queue rather than cut: more of the packets after
    its first loss arrived than what drained them admits of a tail sent
    faster (its arrival rate r over its send rate U: r/U of them, twice over
    and two standard deviations, as :func:`_tail_dropped`). A token bucket
    passes at most its rate of what exceeds it and a full FIFO its drain;
    only a queue that keeps taking packets while it drops some (an AQM's
    spread drops) passes more."""
    if train.get("first_loss") is None or not lost_beyond_random(train, idle_loss):
        return False
    lost, tail = train.get("lost", 0), train.get("tail_packets", 0)
    after = tail + lost
    r = train.get("tail_arrival_mbps") or train.get("tail_mbps")
    u = train.get("tail_send_mbps") or train.get("send_mbps")
    if not r or not u:
        return False
    admits = after * min(r / u, 1.0)
    return tail > 2 * admits + 2 * max(admits, 1.0) ** 0.5


def _tail_mbps(train: dict, idle_loss: float = 0.0) -> float | None:
    """The arrival rate (Mbit/s) of a train's tail after its first loss, where :data:`TAIL_RATE_PACKETS` or more of
    it arrived and, on a lossy path, the first loss is where its bottleneck began to drop (:func:`policer_cut`);
    None otherwise: what :func:`held_tail_mbps` and :func:`drained_mbps` read, each under its own condition."""
    if train.get("first_loss") is None or (train.get("tail_packets") or 0) < TAIL_RATE_PACKETS:
        return None
    if idle_loss > 0 and train.get("lost_seq"):
        if policer_cut(train["lost_seq"], train.get("sent") or AQM_TRAIN_PACKETS, idle_loss) > train["first_loss"]:
            return None
    return train.get("tail_arrival_mbps") or train.get("tail_mbps")


def drained_mbps(train: dict, idle_loss: float = 0.0) -> float | None:
    """The rate (Mbit/s) a back-to-back packet train's bottleneck passed its tail at, after the first loss
    (:func:`_tail_mbps`), where the train came faster than that (its send rate at least :data:`TRAIN_PORT_MARGIN`
    x the tail's arrival: the bottleneck, not the sender's pace, spaced it) and lost more than the path's random
    loss explains (:func:`lost_beyond_random`: the bottleneck dropped). A full queue admits a packet as one leaves,
    so the tail arrives at the queue's drain rate whatever its kind (a FIFO full, an AQM holding a standing queue);
    a token bucket run dry passes at its refill, the policed rate: either way the bottleneck's rate, read over the
    tail's packets (:func:`tail_bounds`: a tenth at ten packets at most, the train's resolution). None for a paced
    train (``pace_mbps``: the server set its pace) or one whose sender could not send it faster than it arrived."""
    if train.get("pace_mbps") or train.get("sender_limited"):
        return None
    r = _tail_mbps(train, idle_loss)
    u = train.get("send_mbps")
    if r is None or not u or u < TRAIN_PORT_MARGIN * r or not lost_beyond_random(train, idle_loss):
        return None
    return r


def tail_bounds(train: dict, jitter_ms: float = 0.0) -> tuple[float, float] | None:
    """The least and the most (Mbit/s) the bottleneck's rate can be, given a train's tail of n packets whose
    arrival rate r = n W / span was counted from its head's last packet (crates/probe/src/train.rs) and arrivals
    each ``jitter_ms`` late at most (the path's own timing noise: the idle probes' median above their least).
    A full queue sends its next packet a whole packet's time after the head's last, so r is its rate; a token bucket
    the head left with part of a packet's tokens passes the first of the tail sooner, by up to that time, so the
    rate lies between (n - 1) W / span and r — and each end of the span may be off by the jitter. None where the
    train has no tail span."""
    n, span = train.get("tail_packets") or 0, train.get("tail_span_ms")
    if n < 2 or not span:
        return None
    w = train.get("wire_bytes", WIRE_SEGMENT) * 8 / 1e3  # kbit: / ms = Mbit/s
    return (n - 1) * w / (span + 2 * jitter_ms), n * w / max(span - 2 * jitter_ms, 1e-9)


def held_tail_mbps(train: dict, idle_loss: float = 0.0) -> float | None:
    """The rate (Mbit/s) a queue drained a packet train at, where the train shows one that never emptied: the
    arrival rate of its tail after its first loss, where that tail was held (:func:`tail_held`: the queue kept
    taking packets while it dropped a few, as an AQM does; a full FIFO or an empty bucket passes at most what
    drains it, r/U of a tail sent at U) and :data:`TAIL_RATE_PACKETS` or more of it arrived. Each of those packets
    left the bottleneck a packet's time at its own rate after the one before, so the tail's rate is the
    bottleneck's, whatever the flows delivered. None otherwise, and on a lossy path where the queue's first loss
    lies after the train's (:func:`policer_cut`): the tail's rate is then counted from a random loss, and a tbf
    whose bucket outlasted the train passed that much at its port's rate before its FIFO's losses (campaign seed
    28 path 82: a tbf at 559 Mbit/s with 0.91 % random loss, its train's tail at the port's 943)."""
    r = _tail_mbps(train, idle_loss)
    return r if r is not None and tail_held(train, idle_loss) else None


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
    x.update(limiter="aqm", aqm_qdisc=kind, aqm_train=t, aqm_note=why, limiter_note=why,
             limiter_alternatives=aqm_alternatives(why, kind, queue_ms), buffer_bytes=None, buffer_bdp=None, port_mbps=None,
             bucket_bytes=None)


#: how :func:`single_queue_aqm` ends a reason where the train could not tell CoDel from PIE
CODEL_OR_PIE = "CoDel or PIE (taken as CoDel)"


#: how :func:`single_queue_aqm` ends a reason that rests on the depth a FIFO would need to give the train's losses
#: (:func:`fifo_depth_for_losses`): that reading holds where the train met the queue at one pace; a FIFO as deep as
#: the flows' queue behind a hop whose pace fell to within the tail's loss fraction of the rate after the train's head
#: (a tbf slightly faster than the rate, its bucket as large as the head) gives the same losses, and is named
PACE_CAVEAT = "a FIFO as deep as the flows' behind a hop whose pace fell after the train's head gives the same: named"


def aqm_alternatives(why: str, kind: str | None = None, queue_ms: float | None = None) -> list | None:
    """The readings a single-queue AQM's verdict (:func:`single_queue_aqm`'s ``why``) leaves open: CoDel and PIE
    where the train could not tell them (advise checks its pick on each one's twin, :meth:`Path.alternative_paths`:
    their targets, 5 and 15 ms, set the queue a loss-based flow keeps, and so which queue is worth shaping — campaign
    seed 50 path 4: PIE at 132 Mbit/s, 2.5 ms, taken as CoDel; the CoDel twin kept CUBIC's p95 at 9 ms and advised
    the path as it is, where the kernel's CUBIC sat at 32 ms behind PIE and CAKE scored 0.047 higher); else None. Where ``why`` rests on the
    depth a FIFO would need to give a train's losses (:data:`PACE_CAVEAT`), the FIFO that caveat names, as deep as the
    flows' queue ``queue_ms`` (the verdict ``kind`` first where the train told CoDel from PIE)."""
    alts = [{"limiter": "aqm", "kinds": ["codel"]}, {"limiter": "aqm", "kinds": ["pie"]}] if why.endswith(CODEL_OR_PIE) else None
    if PACE_CAVEAT in why and queue_ms is not None:
        # the FIFO the caveat names: as deep as the flows' queue, read to the noise
        alts = (alts or [{"limiter": "aqm", "kinds": [kind or "codel"]}]) + [
            {"limiter": "fifo", "depth_below_ms": queue_ms + NOISE_MS, "why": PACE_CAVEAT}]
    return alts


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
    loss passed whole for the queue's part; the queue's first loss is where
    the losses beyond the random ones begin (:func:`policer_cut`, the change
    point a bucket's run is read from), and the train is read from there
    (:func:`queue_losses`: campaign seed 49 path 59, a 1.31-MB FIFO with 1 %
    random loss, lost packet 235 and 7 more here and there, ~7.8 expected,
    then 91 of its last 94, and read CoDel from packet 235); PIE is told by losses beyond the
    random ones among the packets the rate drains within CoDel's interval;
    and a train that passed whole but for the random loss is PIE's where
    CoDel's drops at dequeue (:func:`codel_train_drops`: the first after the
    interval, the next interval/sqrt(n) apart) would have stood out of the
    random loss, else either (PIE decides at enqueue, and drops none of a
    burst that arrives within its allowance, :data:`PIE_BURST_MS`, or while
    its probability climbs from 0: ranked seed 130 path 21, PIE at 37.9
    Mbit/s and 241 ms with 1 % random loss, whose train built 286 ms and lost
    8 of 1000 where ~11 were expected, was read CoDel by the rule that PIE
    past its allowance would drop — CoDel's 3 drops hide in that loss — and
    the twin's p95 was 74 % above the kernel's)."""
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
    # on a lossy path the first loss may be the path's: the queue's first is where the losses beyond the random
    # loss begin (policer_cut, the same change point as a bucket's), and the train is read from there on
    cut = ""
    if not whole and idle_loss > 0 and train.get("lost_seq"):
        k = policer_cut(train["lost_seq"], n, idle_loss)
        if k > train["first_loss"]:
            cut = (f"; its {sum(1 for q in train['lost_seq'] if q < k)} losses before packet {k} no more than the "
                   f"path's random loss (~{idle_loss * k:.2g} expected)")
            train = queue_losses(train, k)
            tail, lost = train["tail_packets"], train["lost"]
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
    # ... or, whatever its reach, by the depth a FIFO would need to give its losses (fifo_depth_for_losses: the tail's
    # loss fraction sets the pace a FIFO met it at, a slower hop's in front of it included), where they are a
    # queue's, not losses here and there over the whole train (losses_cluster): campaign seeds 62 and 64, CoDel at
    # 79-86 Mbit/s and 213-230 ms, lost 9-12 of a train's last 251-308 packets and none of its first 692-749, where
    # the flows stood in 137-150 ms: a FIFO that drops so few of a tail is at most 7.2-7.3 ms deep
    # Read only where the train's losses are all the queue's (no random loss cut off before them: losses_cluster
    # reads the whole train) and where the server's own pace for the tail does not explain them (sent at U_t, a
    # FIFO drops 1 - C/U_t of it: a server that slowed after the head leaves a FIFO's tail spread too)
    fifo_ms = min(first_q_ms, fifo_depth_for_losses(train, rate_mbps))
    tail_sent = train.get("tail_send_mbps") or sent
    paced_tail = tail_sent <= rate_mbps or loss_fraction_bound(train) >= 1 - rate_mbps / tail_sent
    by_depth = not whole and not cut and not paced_tail and losses_cluster(train) and AQM_BURST_RATIO * fifo_ms <= queue_ms
    early = not whole and (
        (train_reach_ms(train, rate_mbps) < AQM_BURST_RATIO * queue_ms and AQM_BURST_RATIO * first_q_ms <= queue_ms)
        or by_depth)
    if (ratio < AQM_BURST_RATIO and not early) or not spread:
        return None, (f"a packet train built {built_ms:.3g} ms of queue at the rate, {ratio:.2g}x the flows' "
                      f"{queue_ms:.3g} ms" + ("" if whole else f", {arrived:.0%} of its tail arrived") + cut
                      + ": a FIFO's buffer")
    if ratio < AQM_BURST_RATIO and AQM_BURST_RATIO * first_q_ms <= queue_ms:
        why = (f"the flows' queue stood at {queue_ms:.3g} ms, but a packet train lost its first packet at {first_q_ms:.3g} ms "
               f"of queue, where a FIFO as deep as the flows' drops none")
    elif ratio < AQM_BURST_RATIO:
        why = (f"the flows' queue stood at {queue_ms:.3g} ms, but a packet train lost none of its first "
               f"{train['first_loss']} packets and then few: a queue's drops, and a FIFO that drops no more of a tail is "
               f"at most {fifo_ms:.3g} ms deep ({PACE_CAVEAT})")
    else:
        why = f"the flows' queue stood at {queue_ms:.3g} ms, but a packet train built {built_ms:.3g} ms of queue ({ratio:.2g}x)"
    if not whole:
        first_ms = train.get("head_bytes", 0) * 8 / (rate_mbps * 1e3)
        drops = (f", losing {lost} of its last {after} packets here and there ({arrived:.0%} arrived; a full FIFO admits "
                 f"{fifo / max(after, 1):.1%})" + cut)
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
        codel_first = codel_first_drop_ms(rate_mbps, sent)
        if first_ms > (codel_first + max(PIE_BURST_MS, codel_first)) / 2:
            return "pie", why + drops + (f", the first {first_ms:.3g} ms into the queue, well after CoDel's first drop "
                                         f"would have come ({codel_first:.3g} ms: its {CODEL_INTERVAL_MS:g}-ms interval "
                                         f"after the sojourn passed its {CODEL_TARGET_MS:g}-ms target): PIE's drop probability")
        return "codel", why + drops + (f", the first {first_ms:.3g} ms into the queue, where CoDel's first drop comes "
                                       f"({codel_first:.3g} ms): CoDel's drops after its interval")
    if random_only:
        lossy = f", and {passed}"
        # PIE decides at enqueue, and a fresh burst's packets all arrive within its allowance (or while its drop
        # probability, raised from 0 by updates scaled down below 10 %, accumulates far below the 0.85 its
        # de-randomization asks before a drop): it drops none of a train. CoDel drops at dequeue, a few
        # (codel_train_drops), which tell it only where they would stand out of the path's random loss.
        k = codel_train_drops(built_ms, rate_mbps, sent)
        if _significant(idle_loss * n + k, n, idle_loss, handful=0):
            return "pie", why + lossy + (f": not CoDel, whose {k} drops at dequeue (the first after its "
                                         f"{CODEL_INTERVAL_MS:g}-ms interval, the next interval/sqrt(n) apart) would stand "
                                         f"out of the random loss; PIE drops at enqueue, none of a burst within its "
                                         f"{PIE_BURST_MS:g}-ms allowance")
        return "codel", why + lossy + (f": CoDel's {k} drops at dequeue would hide in the random loss, and PIE drops "
                                       f"none of a burst at enqueue: {CODEL_OR_PIE}")
    if built_ms > CODEL_INTERVAL_MS:
        return "pie", why + f" without a loss, longer than CoDel's {CODEL_INTERVAL_MS:g}-ms interval: PIE's burst allowance"
    return "codel", why + (f" whole, but shorter than CoDel's interval: {CODEL_OR_PIE}")


def _waiting_share(rate_mbps: float, sent_mbps: float) -> float:
    """1 - C/U: the share of its time in the queue a train's packet dequeued t after the first has waited (at
    least 1e-3: a train sent no faster than the rate builds no queue)."""
    return max(1 - rate_mbps / sent_mbps, 1e-3)


def codel_first_drop_ms(rate_mbps: float, sent_mbps: float) -> float:
    """When CoDel drops a train's first packet (ms after its first was dequeued): the sojourn passes the target at
    target / (1 - C/U), and the drop comes an interval later (:func:`codel_train_drops`)."""
    return CODEL_INTERVAL_MS + CODEL_TARGET_MS / _waiting_share(rate_mbps, sent_mbps)


def codel_train_drops(built_ms: float, rate_mbps: float, sent_mbps: float, wire: int = WIRE_SEGMENT) -> int:
    """How many packets CoDel drops from a packet train of ``wire``-byte packets that builds ``built_ms`` of queue at
    the rate C (``rate_mbps``), sent at U (``sent_mbps``), into an idle queue: the packet dequeued t after the first
    waited t (1 - C/U), so the sojourn passes the target at target / (1 - C/U) and the queue drains by
    built / (1 - C/U), less a packet's time at C for every packet dropped (a dropped packet takes none of the dequeue
    clock); the first drop comes an interval after the target was passed, and while the queue lasts each next one
    interval / sqrt(count) later (RFC 8289's control law; Linux ``codel_control_law``). Without the dropped packets'
    time the count ran away below a few Mbit/s, where the control law's spacing nears a packet's time: a 1000-packet
    train at 2 Mbit/s gave 912 drops where the model's CoDel (crates/core/src/qdisc/codel.rs, Linux's) drops 368, at
    1 Mbit/s 3625 of 1000 (595); now within two packets of the model over 1-120 Mbit/s and 100-1000 packets
    (tests/test_advise_train.py: a drop falls on a dequeue, up to a packet's time after the control law's instant)."""
    end = built_ms / _waiting_share(rate_mbps, sent_mbps)
    packet_ms = wire * 8 / (rate_mbps * 1e3)
    t, count = codel_first_drop_ms(rate_mbps, sent_mbps), 1
    while t <= end:
        end -= packet_ms
        t += CODEL_INTERVAL_MS / count ** 0.5
        count += 1
    return count - 1


def fifo_depth_for_losses(train: dict, rate_mbps: float) -> float:
    """The deepest FIFO (ms at the rate C) that gives a packet train's losses as
    its tail drop: full at the first loss, it then drops what its drain cannot
    take of what reaches it, 1 - C/P of the tail at the pace P the train met
    it at (the server's, or a slower hop's in front of it) — so the tail's
    loss fraction is 1 - C/P, taken at its upper bound, and the queue at the first loss is
    the head's bytes at C times it: ``head_bytes / C x`` :func:`loss_fraction_bound`.
    A FIFO deeper than this drops more of the tail, or none of the train
    before it. It assumes one pace P over the whole train and a FIFO empty
    when the train came (a hop whose pace fell after the head gives a FIFO's
    tail fewer losses: :data:`PACE_CAVEAT`). Infinite where the train lost
    nothing."""
    if train.get("first_loss") is None:
        return float("inf")
    return train.get("head_bytes", 0) * 8 / (rate_mbps * 1e3) * loss_fraction_bound(train)


def loss_fraction_bound(train: dict) -> float:
    """The upper bound of a packet train's loss fraction after its first loss: ``lost`` of ``lost + tail``, the
    count at its upper bound (sqrt(lost + 1) + 1)^2 — the Poisson count's two-standard-deviation bound on the square
    root scale, which stays one for few losses (1 lost: 5.8; 9: 17.3), where lost + 2 sqrt(lost) would not (3, 15);
    at most 1."""
    lost, tail = train.get("lost", 0), train.get("tail_packets", 0)
    return min(((lost + 1) ** 0.5 + 1) ** 2 / max(lost + tail, 1), 1.0)


#: the chance below which losses that all came after a train's first ``k`` packets are not losses here and there
#: over the whole train (:func:`losses_cluster`): three standard deviations' two-sided tail, the bar
#: :func:`physics._significant` sets
CLUSTER_CHANCE = 0.0027


def losses_cluster(train: dict) -> bool:
    """Whether a packet train's losses are a queue's: all ``lost`` of them
    came after its first ``first_loss`` packets, which ``lost`` losses spread
    at random over its ``sent`` packets do with the chance C(n - k, L) / C(n,
    L) — below :data:`CLUSTER_CHANCE`. A loss or two late in a train that a
    FIFO deeper than all of it passed (a stray loss) is not."""
    k, lost = train.get("first_loss"), train.get("lost", 0)
    n = train.get("sent") or AQM_TRAIN_PACKETS
    if k is None or lost <= 0 or n <= k:
        return False
    return math.comb(n - k, lost) / math.comb(n, lost) < CLUSTER_CHANCE


def queue_losses(train: dict, k: int) -> dict:
    """A packet train as the queue it crossed dropped it, where its losses before packet ``k`` were the path's
    random loss (:func:`single_queue_aqm`): a new dict whose first loss is packet ``k``, its head the ``k``
    packets sent before it (``head_packets``, ``head_bytes``: what the queue received of the train by then), and
    its tail and losses those from ``k`` on (``tail_packets``: arrived, ``lost``: not)."""
    after = [q for q in train["lost_seq"] if q >= k]
    n = train.get("sent") or AQM_TRAIN_PACKETS
    return dict(train, first_loss=k, head_packets=k, head_bytes=k * train.get("wire_bytes", WIRE_SEGMENT),
                lost=len(after), tail_packets=n - k - len(after), lost_seq=after)


def _tail_dropped(train: dict, rate_mbps: float) -> bool:
    """Whether a packet train that lost packets shows a full FIFO's tail drop:
    no more of the packets after its first loss arrived than a full FIFO
    admits, C/U of them (the train sent at U, drained at C), twice over and
    two standard deviations — and, where that bound is no bound (U below 2 C:
    twice C/U is all of them), no fewer lost than half of what it drops,
    (1 - C/U) of them, less two standard deviations: a train sent at 400.6
    Mbit/s into CAKE at 230 lost one packet and 753 of 754 arrived, where a
    full FIFO drops 324 (campaign seed 50 path 0, read a FIFO)."""
    if train.get("first_loss") is None:
        return False
    sent = train.get("send_mbps") or train.get("head_send_mbps") or float("inf")
    tail, lost = train.get("tail_packets", 0), train.get("lost", 0)
    fifo = (tail + lost) * rate_mbps / sent
    drops = (tail + lost) - fifo
    return tail <= 2 * fifo + 2 * max(fifo, 1.0) ** 0.5 and lost >= drops / 2 - 2 * max(drops, 1.0) ** 0.5


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


#: Up, the train crosses this host's own first hop (its WiFi, its NIC, its qdisc) after its send stamps and before
#: the bottleneck: a FIFO behind a first hop slower than the stamps' pace admits C over that hop's pace of the tail,
#: spread as an AQM's drops are (campaign seed 67 path 7: a 4.9-ms FIFO at 26 Mbit/s behind a WiFi hop in front of
#: the line admitted 10 % of a tail stamped at 830 Mbit/s, read PIE; seed 69 path 29 the same at 9.5 Mbit/s, 8 %)
FIRST_HOP_CAVEAT = ("sent up, the train crossed this host's own first hop (its WiFi, its NIC) after its send "
                    "stamps: a FIFO behind a hop slower than they say admits as much of its tail: named")


def up_first_hop(x: dict) -> None:
    """An up direction read as a single-queue AQM (CoDel, PIE) from a packet train that lost part of its tail: the
    tail's arrivals tell an AQM's spread drops from a FIFO's only against the pace the train reached the bottleneck
    at, which up is this host's own first hop's, not its send stamps' (:data:`FIRST_HOP_CAVEAT`; the down train's
    first hop is the server's, as fast as its stamps in every campaign path). So the FIFO as deep as the flows'
    queue (to the noise) is named beside the verdict, as :data:`PACE_CAVEAT` names it down. Nothing elsewhere."""
    if x.get("limiter") != "aqm" or x.get("aqm_qdisc") not in ("codel", "pie"):
        return
    t = x.get("aqm_train") or x.get("train") or {}
    alts = x.get("limiter_alternatives") or [{"limiter": "aqm", "kinds": [x["aqm_qdisc"]]}]
    if t.get("first_loss") is None or any(a.get("limiter") == "fifo" for a in alts):
        return
    ev = x.get("evidence") or {}
    queue_ms = max(ev.get("flow_q95_ms", 0.0), x.get("fill_flow_q95_ms") or 0.0)
    x["limiter_alternatives"] = alts + [{"limiter": "fifo", "depth_below_ms": queue_ms + NOISE_MS, "why": FIRST_HOP_CAVEAT}]
    x["limiter_note"] = "; ".join(n for n in (x.get("limiter_note"), FIRST_HOP_CAVEAT) if n)


def untrained_aqm(x: dict, why: str | None = None) -> None:
    """A direction no packet train went along (the up direction where the
    server predates up trains, or none answered them: ``measure._up_trains``)
    that read as a FIFO with drops: what the AQM train (``measure._aqm_train``)
    would have been asked to tell stays open. Its flows' evidence is one queue all flows share and drops at the
    depth it reached, which a FIFO of that depth and a single-queue AQM
    (CoDel, PIE) holding its queue there give alike (:func:`classify.classify`,
    rule 4); no train, no reach (:func:`train_cannot_tell` with a reach of
    0 ms: no rate from which a burst would show it), so the alternative is
    ``{"limiter": "aqm", "kinds": ["codel", "pie"], "rate_above_mbps": 0.0}``,
    appended to ``limiter_alternatives`` (the verdict first) and said in the
    note. A flow-isolating AQM (fq_codel, CAKE) is not named: the probe's
    wait against the flows' tells it without a train (classify, rules 1 and
    3). Nothing where the reading is not such a FIFO."""
    if x["limiter"] != "fifo" or not queue_dropped(x.get("evidence") or {"dropped": False}):
        return
    why = why or ("no packet train went up: the flows' drops at the queue they shared are a FIFO's at that depth or a "
                  "single-queue AQM's (CoDel, PIE) holding it there, not told apart")
    x["limiter_alternatives"] = (x.get("limiter_alternatives") or [{"limiter": "fifo"}]) + [
        {"limiter": "aqm", "kinds": ["codel", "pie"], "rate_above_mbps": 0.0, "why": why}]
    x["limiter_note"] = "; ".join(n for n in (x.get("limiter_note"), why) if n)


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


def _isolation_behind_a_faster_port(t: dict, x: dict) -> bool:
    """An ``aqm`` direction read from flow isolation (``aqm_qdisc`` not yet
    set) with drops, whose packet train ``t`` shows a head faster than
    :data:`TRAIN_PORT_MARGIN` x its rate, becomes ``policer`` (the port and
    bucket of :func:`policer_figures`). fq_codel and CAKE at the rate hold
    every flow to it by dequeueing at it (DRR on a link at the rate; CAKE's
    shaper paces without a bucket), so no packet they pass comes closer than
    a packet at the rate to the one before: a head that did passed no queue
    at the rate but a token bucket in front of a faster port, whose FIFO the
    flows' own bursts through the bucket fill while the sparse probes
    mostly miss them (seed 32 path 38: a 26.1-Mbit/s policer with a 24-ms
    bucket on a 32-Mbit/s port, 2.2 ms: the flows' p95 8.3 ms, less their
    1.85-ms ACK wait 3.05 ms above the probes' 3.4, read as isolation). The
    heads of 14 fq_codel and CAKE paths at 2.9-801 Mbit/s (seeds 31-32
    through the emulator) came at 0.62-1.05x the rate (0.86-1.05x where the
    server outran them). Named
    beside it: a FIFO, or a tbf's queue, shallower than the floor, as behind
    any policer reading. True where it did.

    Not where the idle path's train (``x["wifi_train"]``, down) read the port
    over a longer head, no faster than that margin: two heads through one
    port, and a head's dispersion rate errs by its packets' arrival-time
    noise over its span, so the longer one's reading stands (campaign seed
    143 path 58, fq_codel at 22.0 Mbit/s with 1.7 % random loss: a random
    loss cut this train after 7 packets, 2.67 ms, whose first arrived ~0.6
    ms late and made them 26.9 Mbit/s; the idle train's 51, 27.2 ms, read
    22.02)."""
    lead = t.get("leading_mbps")
    idle = x.get("wifi_train") or {}
    # the rate the head is held to: the flows' (which a long round trip can hold a few % below an AQM's rate: 5 %
    # at 547 ms behind fq_codel at 8.06 Mbit/s) or the train's own tail after its first loss, drained at the rate
    # behind either (where it has TAIL_RATE_PACKETS or more), whichever is higher
    tail = t.get("tail_arrival_mbps") if (t.get("tail_packets") or 0) >= TAIL_RATE_PACKETS else None
    held = max(x["rate_mbps"], tail or 0.0)
    if (x["limiter"] != "aqm" or x.get("aqm_qdisc") is not None or not (x.get("evidence") or {}).get("dropped")
            or not lead or t.get("sender_limited") or lead < TRAIN_PORT_MARGIN * held):
        return False
    if (idle.get("leading_mbps") and not idle.get("sender_limited") and idle["leading_mbps"] < TRAIN_PORT_MARGIN * held
            and (idle.get("head_span_ms") or 0.0) > (t.get("head_span_ms") or 0.0)):
        x["isolation_note"] = (f"the train's head ({t.get('head_packets')} packets over {t.get('head_span_ms') or 0:.3g} ms) "
                               f"arrived at {lead:.4g} Mbit/s, but the idle path's ({idle.get('head_packets')} over "
                               f"{idle['head_span_ms']:.3g} ms) at {idle['leading_mbps']:.4g}, within {TRAIN_PORT_MARGIN:g}x "
                               f"of the {held:.4g} held: the longer head reads the port; the isolation is kept")
        return False
    floor = burst_floor_ms(x["rate_mbps"], x.get("flows", 4))
    p, b, why = policer_figures(t, x["rate_mbps"])
    note = (f"flow isolation read from the loads (the flows' queueing above the probes'), but a packet train's head "
            f"arrived at {lead:.4g} Mbit/s, faster than fq_codel or CAKE at {x['rate_mbps']:.4g} Mbit/s passes packets: a "
            f"token bucket in front of a faster port, whose FIFO the flows' bursts through the bucket filled; ")
    note += ambiguity("policer", x["rate_mbps"], x.get("flows", 4))
    x.update(limiter="policer", aqm_qdisc=None, buffer_bytes=None, buffer_bdp=None, train=t, port_mbps=p, bucket_bytes=b,
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
    the depth): they could not stand at it. Nor where the flows' drops all
    came in their ramp (:func:`classify.queue_dropped` False): a slow start's
    bursts overflow a FIFO the flows' window queue stays below, so the FIFO
    the train filled may be what dropped them. Nor where the head arrived
    slower than the flows' rate by more than :data:`TRAIN_PORT_MARGIN`: a
    port is no slower than what passed through it, so the capacity moved
    between the load and the train, and a FIFO's depth at the head's rate
    says nothing of the flows' queue at theirs (campaign seed 80 path 49, an
    LTE-like FIFO: the flows 15.8 Mbit/s, the head 6.0, read as a policer
    "on a port of ~6.0", and the twin's goodput twice the kernel's).

    Where the evidence is BBR's (its queue the larger), the premise does not
    hold: BBR paces at its bandwidth estimate and keeps about nothing queued,
    so its queue says nothing of a FIFO's depth (its gain-1.25 rounds overflow a
    shallow one: fresh seed 78 path 55, a 7.06-ms FIFO at 284 Mbit/s and 68
    ms, BBR's queueing p95 0.41 ms with 8.9 % of its segments retransmitted).
    What still tells a bucket there is the port: BBR keeps a FIFO's port busy
    and gets its rate, so flows held below the head's rate beyond
    :data:`TRAIN_PORT_MARGIN` met something slower in front of it (seed 78 path
    49, a policer at 268 Mbit/s on a 304-Mbit/s port: BBR 267.6, the head
    303.9); within the margin nothing is read. True where it did."""
    ev = x.get("evidence") or {}
    if ("flow_q95_ms" not in ev or x.get("unseen_depth_ms") is not None or not queue_dropped(ev)
            or not _tail_dropped(t, x["rate_mbps"])):
        return False
    floor = burst_floor_ms(x["rate_mbps"], x.get("flows", 4))
    lead, q = t.get("leading_mbps"), port_fifo(t)
    if ev["flow_q95_ms"] >= floor or not lead or t.get("sender_limited") or q is None:
        return False
    if x["rate_mbps"] > TRAIN_PORT_MARGIN * lead:
        return False
    bbr = ev.get("phase") == "bbr"
    if bbr and lead <= TRAIN_PORT_MARGIN * x["rate_mbps"]:
        return False
    q_ms = q * 8 / (lead * 1e3)
    if q_ms < max(floor, AQM_BURST_RATIO * ev["flow_q95_ms"]):
        return False
    base = ev.get("loaded_rtt_ms", 0.0) - ev.get("flow_q50_ms", 0.0)
    if idle_loss > 0 and idle_loss >= mathis_loss(x["rate_mbps"], x.get("flows", 4), base + q_ms):
        return False
    filled = (f"a packet train filled a FIFO of {q / 1e3:.3g} KB ({q_ms:.3g} ms at its head's {lead:.4g} Mbit/s) and "
              f"was tail-dropped there")
    policer = f"a policer at {x['rate_mbps']:.4g} Mbit/s on a port of ~{lead:.4g}"
    tbf = "or a tbf whose queue is shallower than the floor"
    if bbr:
        note = (f"drops while BBR's flows got {x['rate_mbps']:.4g} Mbit/s with their queueing p95 at "
                f"{ev['flow_q95_ms']:.3g} ms, below the {floor:.2g}-ms floor; {filled}: BBR keeps a FIFO's port busy "
                f"and gets its rate, so what held the flows more than {TRAIN_PORT_MARGIN:g}x below it is a token bucket "
                f"in front of it — {policer}, {tbf}")
    else:
        note = (f"drops while the flows' queueing p95 stayed at {ev['flow_q95_ms']:.3g} ms, below the {floor:.2g}-ms "
                f"floor, though they grew back to their first losses' windows within the phase; but {filled}: a FIFO "
                f"that deep would have held the flows' queue at its depth, so what dropped them is a token bucket in "
                f"front of it — {policer} (within {TRAIN_PORT_MARGIN:g}x: the head's spacing alone cannot tell), {tbf}")
    x.update(limiter="policer", buffer_bytes=None, buffer_bdp=None, train=t, port_mbps=lead, bucket_bytes=None,
             port_buffer_bytes=int(max(q, WIRE_SEGMENT)), limiter_note=note,
             limiter_alternatives=[{"limiter": "policer"}, {"limiter": "fifo", "depth_below_ms": floor}])
    return True


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
    # what the tail was admitted at: the flows' rate, or the tail's own send rate where lower — a queue admits a
    # tail sent faster than it drains one packet per drain time, so the packets it passed were sent as far apart
    # as they arrive (FIFOs, tbfs and AQMs on the stored trains with 10 or more tail packets: arrival over send
    # 0.001-1.002, 61 trains), where a policer in front of a faster port admits them at its rate and the port
    # delivers them at its own (1.1-2.0 on 6 of the 11 policers'; seed 35 path 38: 149.3 over 130.1 for a
    # 129.7-Mbit/s policer on a 149.2 port whose flows read 137.7, 6 % high, within 1.1x of the port)
    admitted = min(x["rate_mbps"], t.get("tail_send_mbps") or float("inf"))
    if tail and t.get("tail_packets", 0) >= TAIL_RATE_PACKETS and tail >= TRAIN_PORT_MARGIN * admitted:
        # the tail came faster than any queue at the rate passes packets: a policer that saw the train before the
        # port, whose tail queued behind the head there and arrived at the port's rate (crates/probe/src/train.rs,
        # "The tail's rate"), the head slowed on its way (the server's pace, or the emulator's near 500 Mbit/s)
        x["port_mbps"] = x.get("port_mbps") or tail
        x.setdefault("train_evidence", []).append(
            f"the head arrived at {lead:.4g} Mbit/s, but the {t['tail_packets']} packets after its first loss at "
            f"{tail:.4g}, faster than a queue at {admitted:.4g} (what admitted them) passes them: a faster port (taken "
            f"as the tail's)")
        return
    ev = x.get("evidence")
    if ev and _classify_ev(ev, x["rate_mbps"], x.get("flows", 4), policer=False) == "aqm":
        # with the policer excluded, classify's next rule: the flows' tail queue stood where the probe's did not
        # (flow isolation, its rule 3), which no shared queue at the rate gives either (seed 47 path 37: CAKE at
        # 254.7 Mbit/s with 0.15 % random loss, BBR's flows 9.5 ms at p95, the probe 0.24 ms)
        x.update(limiter="aqm", port_mbps=None, bucket_bytes=None, buffer_bytes=None, buffer_bdp=None,
                 limiter_alternatives=None,
                 limiter_note=f"drops without a queue the probe saw, but a packet train arrived at {lead:.4g} Mbit/s, "
                              f"no faster than the rate (no policer behind a faster port), and the flows queued "
                              f"{ev['flow_q95_ms']:.3g} ms at p95 where the probe queued {ev['probe_q95_ms']:.2g}: "
                              f"a flow-isolating AQM (fq_codel, CAKE)")
        return
    reading = _shallow_queue_reading(x, x["rate_mbps"], base_ms)
    buf = reading["buffer_bytes"]
    # a policer behind a faster port is excluded, but not one on a port within TRAIN_PORT_MARGIN of its rate (the
    # train cannot tell such a port from the policed rate, and such a policer drops the flows' bursts as a shallow
    # FIFO at the rate does); nor an AQM holding its queue below the flows' bursts (what the queue is when a packet
    # train is then read: _aqm_train)
    alts = [{"limiter": "fifo"}, {"limiter": "aqm", "target_below_ms": max(burst_floor_ms(x["rate_mbps"], x.get("flows", 4)),
                                                                        x.get("unseen_depth_ms") or 0.0)},
            {"limiter": "policer", "port_within": TRAIN_PORT_MARGIN}]
    x.update(reading)
    x.update(limiter="fifo", port_mbps=None, bucket_bytes=None,
             limiter_alternatives=alts,
             limiter_note=f"drops without a queue, but a packet train arrived at {lead:.4g} Mbit/s, no faster than the "
                          f"rate: not a policer behind a faster port but a queue too shallow for the flows' bursts "
                          f"(~{buf / 1e3:.3g} KB), an AQM holding its queue below them, or a policer on a port within "
                          f"{TRAIN_PORT_MARGIN:g}x of its rate")
