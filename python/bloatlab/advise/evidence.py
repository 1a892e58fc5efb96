"""A loaded phase's JSON read into evidence: the window a phase is read over (:func:`_window`), its
queueing and drops (:func:`_evidence`, :func:`window_drops`), the first losses, the capacity's variation
(:func:`rate_variation`).
"""

from __future__ import annotations

import numpy as np

from ..errors import UserError
from .path import SHAPE_FRACTION
from .physics import MSS, NOISE_MS, PROBE_WIRE, WIRE_SEGMENT, _significant, mathis_loss, reply_wait_ms
from .plan import VARIATION_MIN_WINDOW_S, VARIATION_MIN_WINDOWS, variation_window_s

#: the rate from the cumulative ACKs' bytes over the window where a round trip (the flows' smoothed RTT p95)
#: is at most this share of the window: the edges' error (what is in flight, ~ one RTT of data) stays within
#: 5 %, half the rate goal of issue 30; else from the per-ACK delivery-rate samples (see _window)
ACKED_EDGE = 0.05
#: how a window's rate names the counter it read (_window's ``rate_from``): the SACK-inclusive column by its name;
#: the cumulative ACK (the column ``delivered_bytes``) as ``acked_bytes``, the label it had before the other existed
COUNTER_NAMES = {"sack_delivered_bytes": "sack_delivered_bytes", "delivered_bytes": "acked_bytes"}


#: TCP goodput -> the bottleneck's wire rate: a full segment carries 1448 B of
#: payload in 1500 B on the wire (IPv4 20 + TCP 20 + timestamps 12).
WIRE_PER_PAYLOAD = 1500 / 1448


#: the fewest answered probes a loaded window's (:func:`_window`'s ``probes``) queueing is read from: a p95 of fewer
#: is its largest sample. Below it the flows' own smoothed RTT stands in where the probes were lost beside them
#: (:func:`probes_lost_beside`); else ``measure`` says why none is left (``measure.few_probes_words``)
MIN_WINDOW_PROBES = 5

#: the fewest answered probes over a load's ramp (:func:`_window`'s ``ramp_probes``) whose queueing p50 and p95 the
#: evidence reports (``probe_ramp_rtt``, ms; else None): the least asked of the window itself
MIN_RAMP_PROBES = MIN_WINDOW_PROBES

#: Linux's least retransmission timeout beyond the smoothed RTT (``TCP_RTO_MIN``, 200 ms: ``__tcp_set_rto`` sets
#: the RTO to srtt + rttvar with rttvar at least that): a flow whose delivery has stood still longer than its srtt
#: plus this has timed out (see :func:`flow_rates`)
RTO_MIN_S = 0.2


def probes_bps(j: dict, edges: np.ndarray) -> np.ndarray:
    """The load probes' own rate through the path (bit/s on the wire) in each span between consecutive ``edges``
    (s, the flows' clock): the probes answered there (by their send times), :data:`physics.PROBE_WIRE` each (the
    echo as long as the request). The probes cross the bottleneck beside the flows — a request up, its echo down,
    every :data:`isolation.LOAD_PROBE_INTERVAL_MS` — so the link carried their bytes as well as the flows'
    (:func:`physics.probe_mbps`: 73.6 kbit/s each way while all are answered, 7 % of a 1-Mbit/s link, a third of
    a 0.2-Mbit/s one). Counted from the answered probes, not the sent: a probe the bottleneck dropped took none of
    its time (one whose echo a later hop dropped is not counted, a bound below). Zeros where the phase had no probes
    (UDP blocked, an older JSON)."""
    ps = (j.get("raw") or {}).get("series", {}).get("probes", {})
    pt, prtt = np.asarray(ps.get("t", []), float), np.asarray(ps.get("rtt_ms", []), float)
    spans = np.diff(edges)
    if pt.size != prtt.size or not pt.size or not spans.size:
        return np.zeros(spans.size)
    n = np.histogram(pt[np.isfinite(prtt)], bins=edges)[0]
    return np.where(spans > 0, n * PROBE_WIRE * 8 / np.where(spans > 0, spans, 1.0), 0.0)


def probes_bps_at(j: dict, w0: float, t1: float, at: np.ndarray) -> np.ndarray:
    """The load probes' rate (bit/s on the wire, :func:`probes_bps`) at each instant of ``at`` (s, the flows'
    clock) within the window [``w0``, ``t1``]: that of the :data:`VARIATION_MIN_WINDOW_S` span from ``w0`` the
    instant falls in. The flows run on alone through their ack grace after the probes end, so a sum of the flows'
    rate and the probes' at each instant reads the link there, where the window's mean probe rate would count the
    probes in the grace too."""
    at = np.asarray(at, float)
    if not at.size or not t1 > w0:
        return np.zeros(at.size)
    starts = np.arange(w0, t1, VARIATION_MIN_WINDOW_S)
    edges = np.r_[starts[starts < t1], t1]  # (a float arange can reach its stop: edges must rise)
    rates = probes_bps(j, edges)
    return rates[np.clip(np.searchsorted(edges, at, "right") - 1, 0, rates.size - 1)]


def flow_rates(fs: dict, fid: np.ndarray, t: np.ndarray, i: int, at: np.ndarray) -> np.ndarray:
    """Flow ``i``'s delivery rate (bit/s of payload) at the times ``at``:
    its ``tcpi_delivery_rate`` samples interpolated, **0 where the sample is
    stale** — neither the flow's cumulative ACK (``delivered_bytes``) nor its
    rate sample moved for longer than its smoothed RTT + :data:`RTO_MIN_S`.
    Linux takes a rate sample on an ACK that delivers data (``tcp_rate_gen``)
    and ``tcpi_delivery_rate`` keeps the last one, so a flow stalled in
    retransmission timeouts goes on reporting the rate of its last round
    trip: summed with the live flows' it over-read a slow, lossy bottleneck
    (campaign seed 45 path 15, PIE at 1.69 Mbit/s, 58 ms, 0.11 % loss: 2.43;
    in the simulator, 4 BBR flows there: 1.99 Mbit/s of payload summed, 1.64
    with stale samples at 0, 1.57 from the cumulative ACKs over 4 s). A flow
    in SACK recovery keeps taking samples (its rate moves), so it stays
    counted while its cumulative ACK waits for a hole. Without
    ``delivered_bytes`` (an older probe's JSON) the samples stand as they are."""
    k = fid == i
    ti = t[k]
    ri = np.asarray(fs.get("delivery_rate_bps", []), float)[k]
    out = np.interp(at, ti, ri)
    acked, srtt = fs.get("delivered_bytes"), fs.get("srtt_ms")
    if acked is None or srtt is None or len(acked) != t.size or len(srtt) != t.size or ti.size < 2:
        return out
    ai, si = np.asarray(acked, float)[k], np.asarray(srtt, float)[k]
    moved = np.r_[True, (np.diff(ai) > 0) | (np.diff(ri) != 0)]
    last = np.maximum.accumulate(np.where(moved, ti, -np.inf))
    s = np.clip(np.searchsorted(ti, at, side="right") - 1, 0, ti.size - 1)
    still = at - last[s]
    limit = np.where(np.isfinite(si[s]) & (si[s] > 0), si[s], 0.0) / 1e3 + RTO_MIN_S
    return np.where(still > limit, 0.0, out)


def _window(j: dict, d: str) -> dict:
    """Figures of one loaded phase over the second half of the time all its
    flows ran (after every flow's ramp, whatever the path's RTT):

    - the rate: the bytes they delivered over the window (SACKed ones as
      they were SACKed, :func:`acked_bps`; an older probe's series: the
      bytes their cumulative ACKs covered), where it spans
      1/:data:`ACKED_EDGE` round trips or more; otherwise the
      median of the flows' summed delivery rate
      (``tcpi_delivery_rate``, the kernel's own per-ACK rate sample, which
      counts SACKed data and which BBR uses) — BBR's flows' the median round
      trip's delivery (:func:`round_trip_rate_bps`). Not the acked bytes over a
      window of few round trips: the cumulative ACK advances in jumps when
      SACK recovery fills a hole, and over 2-3 s that over-read by up to 17 %
      on a 200-ms path and by ±10 % at 1 Mbit/s behind a 500-ms queue, where
      the median of the sum read within 5 % of the link (1, 5, 100 Mbit/s);
      on the wire, and with the probes' own bytes (:func:`probes_bps`; the window's beside the acked bytes, in
      ``probes_mbps``, each instant's beside the samples): the link carried both;
    - the flows' smoothed RTT (p50, p95; median over flows): the queue the
      bulk flows sit in, smoothed against the VM's pauses;
    - the probes' RTT: what a new, sparse flow sees, over the second half of
      the time all flows ran *while the probes ran* (the probes have no
      samples beyond their phase; where they outlast the first flow, the
      same window as the flows'). The flows start :data:`SETUP_ROUNDS`
      round trips after the probes and run on through their ack grace (at
      most 2 s: ``_load``) after the probes' end where the phase's second
      half spanned fewer than 1/:data:`ACKED_EDGE` loaded round trips
      (``load --halt-rtts``; elsewhere they stop with the probes): the
      rate's reading wants that, and the probes cannot give it."""
    fs = j["raw"]["series"]["flows"]
    ids = sorted({f["id"] for f in j["flows"] if f["direction"] == d})
    fid, t = np.asarray(fs.get("flow", []), int), np.asarray(fs.get("t", []), float)
    srtt = np.asarray(fs.get("srtt_ms", []), float)
    ids = [i for i in ids if (fid == i).sum() >= 2]
    if not ids:
        # a phase that ended with a problem (the server gone mid-phase: measure._probe's partial result) says so
        why = f" before the phase ended with: {j['problem']}" if j.get("problem") else " (a server of another version?)"
        raise UserError(f"measure: the {d} flows reported no TCP_INFO samples{why}")
    t0 = min(t[fid == i].min() for i in ids)
    t1 = min(t[fid == i].max() for i in ids)  # the first flow to end
    w0 = t0 + 0.5 * (t1 - t0)
    grid = np.arange(w0, t1, 0.01)
    total = sum(flow_rates(fs, fid, t, i, grid) for i in ids) if grid.size else np.zeros(1)
    p50, p95 = flows_rtt(fs, fid, t, ids, w0, t1, 50), flows_rtt(fs, fid, t, ids, w0, t1, 95)
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
    # and over the ramp before that window, from the flows' first sample: the queue their slow start built, which
    # a sparse probe waits behind in one queue and not under flow isolation (isolation.isolation_by_model)
    ramp = prtt[(pt >= t0) & (pt < p0) & np.isfinite(prtt)]
    # the link carried the probes' bytes beside the flows' (probes_bps): the rate is the link's. Over the whole window
    # beside the acked bytes; beside the delivery-rate samples, each instant's own (probes_bps_at), before the median
    beside = float(probes_bps(j, np.array([w0, t1]))[0]) if t1 > w0 else 0.0
    rate = float(np.median(total * WIRE_PER_PAYLOAD + probes_bps_at(j, w0, t1, grid))) if grid.size else 0.0
    how = "delivery_rate"
    # the bytes the flows delivered over the window (acked_bps): unbiased where the window spans many
    # round trips (at each edge the ACK lags the data by at most what is in flight, ~ rate x srtt), and
    # right where the per-ACK samples are not: behind a policer with a deep bucket the samples taken while
    # the bucket drains at the port's rate outnumber those of the recovery between (a 15.8 Mbit/s policer
    # with a 45-ms bucket on a 34 Mbit/s port, 4.6 ms: the samples' median read 19.2)
    got = acked_bps(fs, fid, t, ids, w0, t1, p95 / 1e3)
    if got is not None:
        rate, how = got[0] * WIRE_PER_PAYLOAD + beside, COUNTER_NAMES[got[1]]
    elif all(f.get("cc") == "bbr" for f in j["flows"] if f["direction"] == d):
        # BBR's flows over too few round trips for that: the median round trip's delivery (round_trip_rate_bps),
        # not the samples' median, which reads below the link where the flows left it idle part of a round trip
        rt = round_trip_rate_bps(fs, fid, t, ids, w0, t1, p50 / 1e3)
        if rt is not None:
            rate, how = rt * WIRE_PER_PAYLOAD + beside, "round_trips"
    return {"rate_mbps": rate / 1e6, "rate_from": how, "probes_mbps": beside / 1e6,
            "flow_rtt_p50": p50, "flow_rtt_p95": p95, "probes": sel, "ramp_probes": ramp,
            "probe_window_s": [p0, pe], "flows_from_s": float(t0),
            "probes_answered_to_s": float(pt[np.isfinite(prtt)].max()) if np.isfinite(prtt).any() else None}


def flows_srtt(srtt: np.ndarray, fid: np.ndarray, t: np.ndarray, ids: list, a: float, b: float, q: float) -> list:
    """Each flow of ``ids``' ``q``-th percentile of its smoothed RTT (ms) over [``a``, ``b``] s
    (:func:`flow_srtt`); a flow with no sample there left out."""
    out = [flow_srtt(srtt, fid, t, i, a, b, q) for i in ids]
    return [v for v in out if v is not None]


def flow_srtt(srtt: np.ndarray, fid: np.ndarray, t: np.ndarray, i: int, a: float, b: float, q: float) -> float | None:
    """Flow ``i``'s ``q``-th percentile of its smoothed RTT (ms) over [``a``, ``b``] s, its valid samples only (None
    where it has none)."""
    r = srtt[(fid == i) & (t >= a) & (t <= b)]
    r = r[np.isfinite(r) & (r > 0)]
    return float(np.percentile(r, q)) if r.size else None


def flows_rtt(fs: dict, fid: np.ndarray, t: np.ndarray, ids: list, a: float, b: float, q: float) -> float:
    """The queue the flows' bytes sat in: the median over the flows of ``ids`` of each one's ``q``-th percentile
    of its smoothed RTT over [``a``, ``b``] (:func:`flow_srtt`), each weighted by the bytes it delivered there
    (:func:`delivered_column`; equal weights, the plain median, where the series has no counter or nothing moved
    it), each flow's figure taken at the middle of its share of the weight; NaN where no flow has a sample.

    Linux updates ``tcpi_rtt`` on an ACK that brings an RTT sample (``tcp_rtt_estimator``) and reports the last
    value in between, as it does the delivery rate (:func:`flow_rates`): a flow starved by its losses, stalled in
    retransmission timeouts, delivers little or nothing and keeps an srtt made of the queue its last samples met
    (the smoothed estimator takes 1/8 of each new sample, so the few ACKs it gets leave it near the stale figure).
    Behind a single queue at a few Mbit/s that is the slow start's queue: campaign seed 100 path 7 (PIE at 1.62
    Mbit/s, 3.7 ms, 0.31 % loss; the fill's four BBR flows, 24 % retransmitted): two flows delivered 214 and 194
    KB in the window at 27-37 ms, two 13 and 20 KB at 200-460 ms, and the plain median, 125 ms above the base where
    the probe's p95 was 25, read as flow isolation; its twin's fq_codel gave the probe 15 ms at p95 where the
    kernel's got 464 on the true path (in the simulator there one flow never moved from 37.8 ms, one held 517.7
    through most of the window). DRR gives each backlogged flow the same share, so under flow isolation the
    weights are near equal and the figure the plain median's."""
    srtt = np.asarray(fs.get("srtt_ms", []), float)
    col = delivered_column(fs, t.size)
    inside = (t >= a) & (t <= b)
    vals, wts = [], []
    for i in ids:
        v = flow_srtt(srtt, fid, t, i, a, b, q)
        if v is None:
            continue
        d = col[0][(fid == i) & inside] if col is not None else None
        vals.append(v)
        wts.append(1.0 if d is None else float(d.max() - d.min()) if d.size else 0.0)
    if not vals:
        return float("nan")
    v, w = np.asarray(vals), np.asarray(wts)
    if w.sum() > 0:
        # a flow that delivered nothing in the window weighs nothing (and takes no place in the interpolation)
        v, w = v[w > 0], w[w > 0]
    else:
        w = np.ones_like(v)
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    # each flow's figure at the middle of its share of the weight, read at half of it: the plain median where the
    # weights are equal (the middle two's mean for an even count), and near it where they are near equal
    pos = (np.cumsum(w) - w / 2) / w.sum()
    return float(np.interp(0.5, pos, v))


def delivered_column(fs: dict, n: int) -> tuple[np.ndarray, str] | None:
    """The flows' counter of delivered payload bytes (one per sample of ``n``) and its name: the segments delivered
    in any order (``sack_delivered_bytes``, Linux's ``tcpi_delivered`` x the MSS: a SACKed segment counts when it is
    SACKed) where the series has it whole, else the cumulative ACK (``delivered_bytes``: an older probe's, an
    import's), None where neither. The cumulative ACK jumps over SACKed data as recovery fills a hole, so a window
    that begins inside a recovery over-reads by what was SACKed then: campaign seed 79 path 28, a policer at 293
    Mbit/s on a 326-Mbit/s port, read 315.8 over a BBR window begun while the startup's losses were repaired, where
    the delivery-rate samples' median read 292.8 and the kernel's BBR holds 287-293."""
    for name in ("sack_delivered_bytes", "delivered_bytes"):
        col = fs.get(name)
        if col is not None and len(col) == n:
            v = np.asarray(col, float)
            if v.size and np.isfinite(v).all():
                return v, name
    return None


def round_trip_rate_bps(fs: dict, fid: np.ndarray, t: np.ndarray, ids: list, a: float, b: float,
                        srtt_s: float, step_s: float = 0.01) -> float | None:
    """The payload the flows ``ids`` delivered over each round trip within [``a``, ``b``] s (one ending each
    ``step_s``; ``srtt_s``: the flows' median smoothed RTT), summed over the flows: the median, bit/s. Counted in
    any order (``sack_delivered_bytes``, :func:`delivered_column`): what the sender sees delivered over a round trip
    is what the bottleneck sent over one, a return trip earlier. Why the median round trip's, not the window's mean
    (:func:`acked_bps`) nor the delivery-rate samples' median: through an AQM at a long RTT a few round trips
    deliver little (a flow's recovery, its timeout, BBR's drain), which the mean counts, and a sample reads
    delivered / max(send interval, ACK interval) (net/ipv4/tcp_rate.c), never more than its flow sent, so its
    median sits below the link too; the median round trip is the link's where the flows kept it busy through most
    of theirs. Over the BBR loads of the recordings of campaign seeds 180-193 (ranked 180; 181, 182, 185, 186, 193)
    whose window spans fewer than 1/:data:`ACKED_EDGE` round trips, the WiFi-limited truths left out (their steady
    share is not what a few seconds read): down 38 windows of 4-542 ms within 5 % of the truth on 38 (median
    −0.02 %, −4.0 to +1.0 %), where the samples' median read 34 (median −1.36 %; −6.4, −7.2, −9.9 and −10.6 %
    behind CAKE, CoDel and fq_codel at 324-498 ms); up 33 of 34 (median −0.04 %) for 29 — the one left a policer
    behind a WiFi hop in front, −24.5 % (−25.9 before). None without the counter in any order (the cumulative ACK
    jumps as a recovery fills its hole), or over fewer than three round trips."""
    col = delivered_column(fs, t.size)
    if col is None or col[1] != "sack_delivered_bytes" or not np.isfinite(srtt_s) or srtt_s <= 0:
        return None
    w = max(int(round(srtt_s / step_s)), 1)
    grid = np.arange(a, b, step_s)
    if grid.size < 3 * w:
        return None
    cum = sum(np.interp(grid, t[fid == i], col[0][fid == i]) for i in ids)
    return float(np.median(cum[w:] - cum[:-w])) * 8 / (w * step_s)


def acked_bps(fs: dict, fid: np.ndarray, t: np.ndarray, ids: list, a: float, b: float,
              srtt95_s: float) -> tuple[float, str] | None:
    """The payload the flows ``ids`` delivered from ``a`` to ``b`` s as bit/s, and the counter it read
    (:func:`delivered_column`: in any order where the series counts it so, else by their cumulative ACKs):
    unbiased where the span holds 1/:data:`ACKED_EDGE` of the flows' round trips (``srtt95_s``: the median over
    the flows of each one's smoothed-RTT p95), since at each end the count lags the data by what is in flight,
    ~ rate x srtt. None where it holds fewer, where the JSON has neither counter (an older probe's), or where
    nothing was delivered."""
    col = delivered_column(fs, t.size)
    if col is None or not b > a or not np.isfinite(srtt95_s) or srtt95_s / (b - a) > ACKED_EDGE:
        return None
    acked, name = col
    got = sum(float(np.interp(b, t[fid == i], acked[fid == i]) - np.interp(a, t[fid == i], acked[fid == i])) for i in ids)
    return (got * 8 / (b - a), name) if np.isfinite(got) and got > 0 else None


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
    and the flows' median smoothed RTT over them (``srtt_ms``); the busy
    windows' mean (``mean_mbps``) and, where every window was busy, what the
    cumulative ACKs delivered over their span (``acked_mbps``,
    :func:`acked_bps`; :func:`samples_over_read`).
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
    median_bps = float(np.median(sum(flow_rates(fs, fid, t, i, grid) for i in ids))) if grid.size else 0.0
    win = variation_window_s(step, median_bps)
    edges = np.arange(w0, t1 + 1e-9, win)
    if edges.size - 1 < VARIATION_MIN_WINDOWS:
        return None
    rates = np.zeros(edges.size - 1)
    busy = np.ones(rates.size, bool)
    # each window's rate: the mean of 11 points across it (one flow_rates call a flow for all windows)
    grids = np.linspace(edges[:-1], edges[1:], 11, axis=1)
    for i in ids:
        ti, qi = t[fid == i], srtt[fid == i] - base_ms
        rates += flow_rates(fs, fid, t, i, grids.ravel()).reshape(grids.shape).mean(axis=1)
        for k in range(rates.size):
            grid = grids[k]
            inside = qi[(ti >= edges[k]) & (ti <= edges[k + 1])]
            low = inside.min() if inside.size else float(np.interp(grid, ti, qi).min())
            busy[k] &= bool(low > NOISE_MS)
    # on the wire, with the probes' bytes each window carried beside the flows' (probes_bps: as _window's rate)
    beside = probes_bps(j, edges)
    rates = (rates * WIRE_PER_PAYLOAD + beside) / 1e6
    if busy.sum() < VARIATION_MIN_WINDOWS:
        return None
    kept = rates[busy]
    # what the flows' cumulative ACKs covered over the windows' span, against the windows' mean
    # (samples_over_read): only where every window was busy — the flows' queue stood throughout, so no window
    # holds a stalled flow's stale sample (flow_rates keeps one for srtt + RTO_MIN), and the busy windows are the
    # span; not over busy windows between idle ones, whose ACKs return a round trip after the data they cover (an
    # idle stretch's few ACKs land in the busy window after it: seed 67 path 9, a tbf at 87 Mbit/s under BBR, 22
    # of 33 windows busy, read 43.5 over the busy ones) — and where the span holds 1/ACKED_EDGE round trips
    acked_mbps = None
    if busy.all():
        p95s = flows_srtt(srtt, fid, t, ids, w0, t1, 95)
        got = acked_bps(fs, fid, t, ids, float(edges[0]), float(edges[-1]),
                        float(np.median(p95s)) / 1e3 if p95s else float("nan"))
        acked_mbps = (got[0] * WIRE_PER_PAYLOAD + float(beside.mean())) / 1e6 if got is not None else None
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
            # the busy windows' mean, and what the cumulative ACKs delivered over the span where every window was
            # busy (None otherwise, or not in the JSON, or the span under 1/ACKED_EDGE round trips)
            "mean_mbps": float(kept.mean()), "acked_mbps": acked_mbps,
            # the windows in order (None: not busy) and the flows' median smoothed RTT over them (the span each
            # delivery-rate sample averages): what a fit of the capacity's process reads (advise.capacity)
            "series_mbps": [round(float(r), 4) if b else None for r, b in zip(rates, busy)],
            "srtt_ms": float(np.median(srtt[np.isin(fid, ids) & (t >= w0) & (t <= t1)]))}


def _retrans(j: dict, d: str) -> tuple[float, float]:
    """(segments retransmitted, segments sent) of direction ``d``'s flows."""
    fl = [f for f in j["flows"] if f["direction"] == d]
    segs = sum(f.get("retransmits", 0) / f["retrans_rate"] for f in fl if f.get("retrans_rate"))
    return float(sum(f.get("retransmits", 0) for f in fl)), float(segs)


def probes_busy(w: dict, base_ms: float, ser_ms: float, rate_mbps: float, reverse_mbps: float | None = None,
                other_mbps: float = 0.0) -> dict | None:
    """The share of a phase's window probes (``w``, :func:`_window`) that found the bottleneck busy: their round
    trip above the base (``base_ms``, the idle probes' with their serialization out) and their own serialization
    both ways (``ser_ms``) by more than anything but the link being busy can give. A probe that waited behind the
    other traffic found the link sending something else at its arrival, whatever serves the queue: a FIFO, an
    AQM, per-flow queues, a port in front of a policer (where a busy port offers more than the policed rate, which
    then passes exactly that). Probes are sent evenly, 10 ms apart by the client's clock, and sample the time as
    it passes where nothing in the queue's ups and downs keeps step with that period (Poisson arrivals see time
    averages whatever the queue does, Wolff's PASTA; even ones need that). None where no probe came back in the
    window.

    What else lifts a probe's round trip, and the threshold it sets (``threshold_ms``, the largest):

    - the measurement's noise, :data:`NOISE_MS` (the VM's pauses);
    - the reverse direction (its port ``reverse_mbps``, the other direction's the idle path showed), which queues
      the phase's ACKs and the probes' replies (``other_mbps``: the loaded phases' probe, each way): the reply
      waits out the ACK on the wire there and the ones queued before it (:func:`physics.reply_wait_ms`: one
      ACK-with-SACK's serialization and :func:`physics.ack_queue_ms`'s mean wait, every segment ACKed — an upper
      estimate: delayed ACKs send half as many).

    Where the reverse port is unknown, or the ACKs would overload it, the threshold is one wire segment at the
    phase's rate instead (as all probes were judged before 2026-12-04): a queued ACK takes less than that on a
    link at least 1/20 as fast (ADSL's and cable's asymmetry) below 45 % utilisation, so it alone never counts a
    probe busy. That segment threshold counted a probe sent while one segment was on the wire and nothing waited
    as idle (its wait is that segment's remaining time, uniform over a segment's), which at a slow link is most of
    a busy one's probes: 0.83 Mbit/s up behind a tbf (campaign seed 138 path 28, a 14.4-ms segment), 66 % of the
    probes busy at the segment threshold, 92 % at the noise, the fill's rate within 0.2 % of the link's. Either
    share is a lower bound of the time the link was busy; the noise's is the nearer one. Other traffic on the
    reverse link (a neighbour's upload) can still count a probe busy: the measurement assumes the path is its
    own."""
    q = np.asarray(w["probes"], float) - base_ms - ser_ms  # (physics.serialization_ms is never negative)
    if not q.size or rate_mbps <= 0:
        return None
    segment = WIRE_SEGMENT * 8 / (rate_mbps * 1e6) * 1e3
    threshold = float(max(min(segment, reply_wait_ms(rate_mbps, reverse_mbps, other_mbps)), NOISE_MS))
    return {"share": float(np.mean(q >= threshold)), "probes": int(q.size), "threshold_ms": threshold}


#: the share of a loaded phase's probes lost above which they were lost, not late: flows that opened after the
#: probes' last reply (a round trip grown to seconds) leave them mostly answered — 18 % lost on live seed 166 path
#: 50 — where a queue of a few packets kept full drops nearly all (95 % on seed 91 path 56 and seed 194 path 45);
#: "most of them", the line between
MOSTLY_LOST = 0.5


def phase_probe_loss(j: dict) -> float | None:
    """The share of one loaded phase's probes that were lost, as the load counted them (its JSON ``j``); None where
    it does not say."""
    lost = ((j.get("probes") or [{}])[0]).get("loss")
    return float(lost) if isinstance(lost, (int, float)) else None


def probes_lost_beside(j: dict, w: dict) -> float | None:
    """The share of one loaded phase's probes that were lost (its JSON ``j``: the load's own count) where its window
    ``w`` (:func:`_window`) kept fewer than :data:`MIN_WINDOW_PROBES` replies because most of them (more than
    :data:`MOSTLY_LOST`) were lost once the flows ran, and the flows reported their smoothed RTT there; None otherwise (a window with
    probes enough, or one emptied another way: flows whose connections opened after the probes' last reply,
    ``measure.few_probes_words``).

    A queue of a few packets at a slow port, kept full by the flows, drops a sparse probe as often as it arrives:
    campaign seed 91 path 56 and seed 194 path 45 (a 0.2-Mbit/s uplink behind a 3000-B FIFO, 95 % of the up fill's
    probes lost, the flows' smoothed RTT 130 ms over a 2.6-ms base). Their queue is then the one TCP itself timed:
    :func:`_evidence` reads the flows' smoothed RTT in the probes' place (``probes_lost``), which is what every
    flow's bytes sat in; what the probes alone show — a sparse flow served ahead of the bulk ones (flow isolation,
    ``classify.isolation_unseen``) — is not read."""
    if w["probes"].size >= MIN_WINDOW_PROBES or not np.isfinite(w.get("flow_rtt_p50", np.nan)):
        return None
    lost = phase_probe_loss(j)
    return lost if lost is not None and lost > MOSTLY_LOST else None


def _evidence(j: dict, w: dict, d: str, base_p50: float, idle_loss: float) -> dict:
    """The figures the limiter is read from, of one loaded phase (its JSON
    ``j`` and its window ``w``): the probes' and the flows' queueing above
    the base RTT, the drops beyond the idle loss, the loss against Mathis's.
    Where the probes were lost beside the flows (:func:`probes_lost_beside`) the flows' smoothed RTT stands in for
    theirs, and ``probes_lost`` says what share was lost (None where the probes were read)."""
    lost = probes_lost_beside(j, w)
    if lost is None:
        p50, p95 = float(np.percentile(w["probes"], 50)), float(np.percentile(w["probes"], 95))
    else:
        p50, p95 = w["flow_rtt_p50"], w["flow_rtt_p95"]
    ramp = np.asarray(w.get("ramp_probes", []), float)
    ramp_rtt = ({"p50": float(np.percentile(ramp, 50)), "p95": float(np.percentile(ramp, 95))}
                if ramp.size >= MIN_RAMP_PROBES and lost is None else None)
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
    return {"phase": "fill", "rate_mbps": w["rate_mbps"], "probes_mbps": w.get("probes_mbps"), "probes": int(w["probes"].size),
            "probe_window_s": [float(x) for x in w["probe_window_s"]], "probe_q95_ms": max(p95 - base_p50, 0.0), "probe_p50_rtt": p50,
            "probe_p95_rtt": p95, "probe_ramp_rtt": ramp_rtt, "probes_lost": lost, "flow_q50_ms": flow_q50, "flow_q95_ms": flow_q95, "dropped": _significant(retx, segs, idle_loss),
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


#: the most segments a loss-based flow's window holds right after a retransmission timeout (tcp_enter_loss:
#: cwnd = packets in flight + 1, everything in flight marked lost) and one it sent since
RTO_WINDOW_SEGMENTS = 2


def timed_out(j: dict, d: str) -> bool:
    """Whether a flow of direction ``d`` in one loaded phase (its JSON ``j``) met a retransmission timeout: after its
    first retransmission a TCP_INFO sample showed its window at :data:`RTO_WINDOW_SEGMENTS` segments or fewer,
    where its largest before held twice that or more. Fast recovery leaves CUBIC at beta (0.7) of the window (PRR
    shrinks it below that only with the flight); a timeout drops it to one segment and slow-starts it again, which
    HyStart may end early. Samples ``dt`` apart see such a window only for the round trips it takes to double past
    them, so False says no more than none was seen."""
    fs = j["raw"]["series"]["flows"]
    fid, cwnd = np.asarray(fs.get("flow", []), int), np.asarray(fs.get("cwnd_bytes", []), float)
    retx = np.asarray(fs.get("retransmits", []), float)
    if cwnd.size != fid.size or retx.size != fid.size:
        return False
    low = RTO_WINDOW_SEGMENTS * MSS
    for i in set(fid.tolist()):
        c, r = cwnd[fid == i], retx[fid == i]
        k = np.flatnonzero(r > 0)
        if k.size and c[: k[0] + 1].max() >= 2 * low and (c[k[0]:] <= low).any():
            return True
    return False


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
    largest smoothed RTT − ``base_ms`` in the window and the loaded round trip
    after it, where its drops' queue shows (a FIFO that overflowed
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
    tops = []
    if srtt.size == t.size:
        for i in ids:
            # to a loaded round trip past the window's end: a drop counted in the window shows its queue in the
            # smoothed RTTs of the segments behind it, which met the full queue and are ACKed through the round
            # trip after the loss is seen — after the window's end where the drop came late in it (the flows run on
            # through their ack grace). slow_start_depth reads the slow start's to a round trip after its first loss
            # the same way, so one overflow near the end is the same depth to both (fresh seed 73 path 13 up: a
            # 1.67-s FIFO at 2.74 Mbit/s and 186 ms, its slow start's 1632 ms against the window's 1610)
            k = fid == i
            rtt = float(np.interp(t1, t[k], srtt[k]))
            s = k & (t >= w0) & (t <= t1 + (rtt / 1e3 if np.isfinite(rtt) and rtt > 0 else 0.0))
            if s.any():
                tops.append(float(np.max(srtt[s])) - base_ms)
    top = max(float(np.median(tops)), 0.0) if tops else None
    if not ids or retx.size != t.size or acked.size != t.size:
        return {"retransmits": None, "segments": None, "overflowed": None, "queue_max_ms": top}
    lost = sum(float(np.interp(t1, t[fid == i], retx[fid == i]) - np.interp(w0, t[fid == i], retx[fid == i])) for i in ids)
    segs = sum(float(np.interp(t1, t[fid == i], acked[fid == i]) - np.interp(w0, t[fid == i], acked[fid == i])) for i in ids) / MSS
    return {"retransmits": lost, "segments": segs, "overflowed": _significant(lost, segs, idle_loss, handful=0),
            "queue_max_ms": top}


def window_dropped(ev: dict, win: dict, loss_based: bool) -> bool | None:
    """Whether the drops of the phase the evidence ``ev`` (:func:`_evidence`)
    comes from came while its window's queue was read: ``win`` is that same
    phase's :func:`window_drops`. False only where the phase's drops were its
    ramp's (slow start's) and the window tells so with power — the claim
    :func:`classify.classify`'s policer rule must not make for these drops,
    that they came without a queue:

    - the fill is loss-based (``loss_based``: CUBIC). A loss-based flow grows
      its window until it loses, so a window without a drop is a queue below
      what limits it, not at it. BBR does not back off on loss (its window
      follows its bandwidth and RTT estimates; behind a policer its long-term
      sampling holds it at the policed rate, BBRv1 ``tcp_bbr.c``
      ``bbr_lt_bw_sampling``): its quiet window is what a policer it has learnt
      gives, so no claim is made for it (None);
    - the window lost nothing beyond the random loss (``win["overflowed"]``
      False), and fewer of the phase's k retransmissions than its share f of
      the phase's segments gives it, by three binomial standard deviations
      (the convention of :func:`physics._significant`): were the window's
      loss rate the rest of the phase's, each of the k would fall in it with
      probability f, so it would hold k f of them, sd (k f (1 - f))^0.5 —
      the window had the power to show the ramp's rate. With none lost in
      a window of half the segments that takes k above 9: below it "nothing
      in the window" may be chance (a phase of 8 retransmissions in 321815
      segments, 165507 of them in the window: 4.1 expected, sd 1.4).

    True where the window overflowed; None where it cannot tell (a phase
    without drops, no samples, a BBR fill, too few segments)."""
    if not ev.get("dropped") or win.get("overflowed") is None or not win.get("segments"):
        return None
    if win["overflowed"]:
        return True
    if not loss_based:
        return None
    k = ev["retransmits"]
    f = min(win["segments"] / ev["segments"], 1.0) if ev.get("segments") else 1.0
    return False if k * f - win["retransmits"] > 3 * (k * f * (1 - f)) ** 0.5 else None


def queued_bytes_p95(j: dict, d: str, base_ms: float) -> float | None:
    """The bytes the bottleneck held, from each TCP_INFO sample of direction
    ``d``'s flows in the window (:func:`_window`): the sample's queueing
    (smoothed RTT − ``base_ms``) x the rate that drained it then: the flows'
    summed delivery rate (wire bytes: x 1500/1448) and the load probes' own
    (:func:`probes_bps_at`, as :func:`_window`'s rate) — a queue of B bytes delays by B / the rate that
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
        total = sum(flow_rates(fs, fid, t, k, t[s]) for k in ids) * WIRE_PER_PAYLOAD + probes_bps_at(j, w0, t1, t[s])
        p95s.append(float(np.percentile(np.maximum(srtt[s] - base_ms, 0.0) / 1e3 * total / 8, 95)))
    return float(np.median(p95s)) if p95s else None


def busy_rate(v: dict | None, rate_mbps: float) -> float | None:
    """The link's rate while it was busy (Mbit/s, on the wire), where a phase's own rate ``rate_mbps`` counted
    time it idled: the median of the busy windows of :func:`rate_variation` (``v``), where some windows were not
    busy (the flows' queue at or below the noise there: a window reads the senders, not the link), the capacity
    does not move (:func:`variable_rate`) and that median is above ``rate_mbps``; else None. A busy link carries
    its rate, never more; a phase's rate over its window (its acked bytes, or its delivery-rate samples' median)
    also counts the time its flows left the link idle — BBR's ProbeRTT, a recovery that stalls, CUBIC's climb
    back at a long RTT — and reads below it. Campaign seed 55 path 2 (PIE at 58.39 Mbit/s, 538 ms, 0.18 %
    random loss): BBR's phase read 51.92 (-11.1 %; 21 % of its segments retransmitted) and idled in 26 of 47
    windows, whose 21 busy ones read 58.21 (-0.3 %); its up direction -13.1 -> -3.1 %; seed 55 path 8 up (PIE at
    46.99): -48.8 -> +0.1 %. Over the stored campaigns of seeds 52-55 (the 20 directions this moved) every
    reading came nearer the truth, none passed it by more than 0.1 %. Where every window was busy the link never
    idled: the phase's rate is its rate (and per-window rates of a slow link are noisy: a 3-Mbit/s PIE's busy
    median read +17 %). The windows' rates are delivery-rate samples, which can over-read (a SACK's jump, a
    bucket drained at its port's rate): the figure is at most what the busy windows could have carried if the
    idle ones carried nothing (``rate_mbps`` x windows / busy windows), and none where they over-read what the
    cumulative ACKs delivered over them (:func:`samples_over_read`). Not the idle path's port figures: the
    train's head and the serialization give a port's least, not its most (seed 54 path 21's up: 51.4 from the
    serialization for a 66.3-Mbit/s link whose flows got 66.2)."""
    if (not v or variable_rate(v) or samples_over_read(v) or v["busy_windows"] >= v["windows"]
            or v["p50_mbps"] <= rate_mbps):
        return None
    return float(min(v["p50_mbps"], rate_mbps * v["windows"] / max(v["busy_windows"], 1)))


def samples_over_read(v: dict) -> bool:
    """Whether :func:`rate_variation`'s windows (``v``), all busy, averaged more than the flows' cumulative ACKs
    delivered over their span (``acked_mbps``), beyond the margin :func:`variable_rate` reads a move at
    (:data:`path.SHAPE_FRACTION` and one packet a window). Whatever the capacity did, both are means of the same
    link's delivery over the same time, so the delivery-rate samples over-read there — ACKs bunched on a slower
    way back (``tcp_rate_gen`` takes the longer of the send and the ACK spans, and bunched ACKs release bunched
    sends), a bucket drained at its port's rate — and their spread and median are the bunching's as much as the
    link's. Campaign seed 68 path 3, a fixed 1.754-Mbit/s FIFO with a 0.2-Mbit/s uplink: busy windows p10 / p50 /
    p90 1.65 / 1.90 / 2.21 Mbit/s (above the link itself; the acked bytes over the phase's half 1.712), read as a
    moving capacity: its twin followed a trace and advise weighed cake-autorate (+29 % goodput against the
    kernel); measured again with the check, its 16 windows all busy, their mean 2.18 against 1.68 acked. False
    where ``acked_mbps`` is None."""
    if not v.get("acked_mbps") or v.get("mean_mbps") is None:
        return False
    return v["mean_mbps"] > v["acked_mbps"] / SHAPE_FRACTION + WIRE_SEGMENT * 8 / v["window_s"] / 1e6


def variable_rate(v: dict | None, rate_mbps: float | None = None, bucket_bytes: float | None = None) -> bool:
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
    median; the gallery's LTE-like trace 0.90 and 1.16). Not where the
    windows' mean exceeds what the cumulative ACKs delivered over their span
    (``acked_mbps``) by that margin and a packet: samples that over-read.

    Where the direction's rate is known (``rate_mbps``, the most any of its
    phases or trains delivered: the capacity's estimate), the rise must also
    pass what a fixed link at that rate can carry in a window
    (:func:`fixed_ceiling_mbps`): a median in the flows' own dips (a loss-based
    flow that cannot keep a shallow queue busy between its losses) puts the
    median low and a fixed link's own rate above it. Campaign seed 182 path 5,
    a tbf at 1.14 Mbit/s with a 3000-B bucket and queue at 126 ms: CUBIC's
    windows p10 / p50 / p90 0.69 / 0.79 / 1.04 Mbit/s under the 1.13 the
    direction read, taken for a moving capacity: its twin followed a trace,
    advise recommended cake-autorate (the twin -30 % goodput against the
    kernel, today's CUBIC -65 %); seed 181 path 44, a 16.2-Mbit/s policer read
    as a FIFO, its collapsed fill's windows 0.40 / 0.46 / 0.56 (+83 %)."""
    if not v or samples_over_read(v):
        return False
    packet_mbps = WIRE_SEGMENT * 8 / v["window_s"] / 1e6
    if not (v["p10_mbps"] < SHAPE_FRACTION * v["p50_mbps"] - packet_mbps
            and v["p90_mbps"] > v["p50_mbps"] / SHAPE_FRACTION + packet_mbps):
        return False
    if rate_mbps is None:
        return True
    over = min(1.0, v["acked_mbps"] / v["mean_mbps"]) if v.get("acked_mbps") and v.get("mean_mbps") else 1.0
    return bool(v["p90_mbps"] * over > fixed_ceiling_mbps(v["window_s"], rate_mbps, bucket_bytes))


def fixed_ceiling_mbps(window_s: float, rate_mbps: float, bucket_bytes: float | None = None) -> float:
    """The most a fixed link of ``rate_mbps`` carries in one window of ``window_s`` (Mbit/s, on the wire): its
    rate, one packet (a window's edges cut packets: :func:`variable_rate`'s resolution) and, behind a token
    bucket of ``bucket_bytes`` (a tbf or a policer read), the bucket, which refills while the flows leave the
    link idle and then passes at its port's rate. A window above it saw a capacity above the rate; the
    delivery-rate samples are scaled to what the cumulative ACKs delivered where they over-read by less than
    :func:`samples_over_read` rejects (:func:`variable_rate`)."""
    return rate_mbps + (WIRE_SEGMENT + (bucket_bytes or 0.0)) * 8 / window_s / 1e6


def capacity_moves(x: dict) -> bool:
    """Whether the direction ``x`` (a report's ``down`` or ``up``, its rate read) saw its capacity move:
    :func:`variable_rate` of its ``rate_variation`` against a fixed link at its ``rate_mbps`` behind the bucket it
    read (``bucket_bytes``; the two-sided test alone where no rate is read), the one test of the readings made once
    the rate is known."""
    return variable_rate(x.get("rate_variation"), x.get("rate_mbps"), x.get("bucket_bytes"))


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
        out["down_rate_variation"] = v
        x = report["down"]
        x["variable"] = capacity_moves(x)
        out["down_variable"] = x["variable"] and x["limiter"] == "fifo"
    return out
