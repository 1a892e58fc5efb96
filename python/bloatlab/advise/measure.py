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
      left out where the fill already read the link's rate (:func:`rate_phase_plan`: a backlog stood through
      its window, it kept the port's rate busy, or its probes found the link busy), the reason in the
      direction's ``rate_phase``.
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
import os
import socket
import subprocess
from dataclasses import dataclass, field, replace

import numpy as np

from . import recording
from .._bin import find as find_bin
from ..errors import UserError
from .path import WIFI_SHARE_SEEDS, Path, grade, is_the_reading
from .physics import (
    LARGE_PROBE, WIRE_SEGMENT, burst_floor_ms, loss_upper, losses_cluster_p, more_lost_than, one_way, probe_mbps,
    serialization_at_ms, serialization_ms, serialization_rate_mbps
)
from .plan import (
    FILL_FLOOR_PACKETS, IDLE_MAX_S, SAMPLES_PER_PHASE, VARIATION_MIN_WINDOW_S, _loaded_s, _phase_secs, bbr_phase_secs,
    fill_floor_s, fill_plan, gap_s, idle_plan, loaded_phase, loss_stream_plan, slow_start_secs
)
from .evidence import (
    ACKED_EDGE, MIN_WINDOW_PROBES, MOSTLY_LOST, _evidence, _variation_fields, capacity_moves, _window, busy_rate, first_losses, probes_busy,
    phase_probe_loss, probes_lost_beside, queued_bytes_p95, rate_variation, timed_out, variable_rate, window_drops, window_dropped
)
from .classify import (
    RATE_SPREAD, UNSATURATED, _classify_ev, _cobalt, alternatives, ambiguity, bbr_stood_deeper, cobalt_first_signal, fifo_check, isolation_unseen,
    median_isolated,
    undropped_alternatives,
    unreturned_depth_ms
)
from .buffer import DEEP_CC, _buffer_text, _twin_buffer, buffer_reading, slow_start_depth
from .trains import (
    AQM_BURST_RATIO, AQM_TRAIN_PACKETS, RATE_ERROR, TRAIN_PORT_MARGIN, bucket_before_fifo, _fifo_deeper_than_the_flows, _held_not_policed, _isolation_behind_a_faster_port,
    _not_a_fifo, _not_a_policer, _paced_past_the_flows, _queue_before_bucket, paced_bucket, paced_cut, paced_rate,
    policed_tail_count, policer_figures, port_fifo_from_delays,
    CODEL_OR_PIE, OVERFLOW_WINDOW, _fifo_depth_from_trains, aqm_alternatives, lone_first_loss, port_fifo, pressed_hardest, single_queue_aqm,
    drained_mbps, held_tail_mbps, tail_bounds, train_cannot_tell, untrained_aqm, up_first_hop
)
from .wifi_hop import (PER_STATION_MACS, WIFI_AGGR_MS, WIFI_HW_QUEUE_MS, front_hop, others_least_wait_ms,
                       up_through_the_hop, wifi_design, wifi_hop)
from .isolation import (LOAD_PROBE_INTERVAL_MS, bucket_by_model, fifo_checked_by_model, fill_by_model,
                        isolation_by_model, isolation_checked_by_model, port_buffer_by_model)

#: the train that looks for a WiFi hop: long enough for several aggregates of the largest size ath9k builds
#: (32 subframes, airtime.rs MAX_AMPDU_FRAMES) and short enough to cost ~2.4 s at 1 Mbit/s
WIFI_TRAIN_PACKETS = 200


DEFAULT_PORT = 5301


LOAD_CC = "cubic"


#: how long after its phase a load may take to bring its result back (s): ~150 KB at 0.2 Mbit/s is 6 s, loss
#: recovery behind a policer with a small bucket several times that
RESULTS_WAIT_S = 120


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


def with_port(host: str, port: int | None) -> str:
    """``HOST[:PORT]`` with ``-p PORT`` (iperf3's flag) folded in: the one port named either way, a clear error where
    the two name different ports or the port is out of range."""
    if port is None:
        return host
    if not 0 < port < 65536:
        raise UserError(f"-p/--port: expected 1-65535, got {port}")
    h, p = _split_host(host)
    if host.count(":") == 1 and p != port:
        raise UserError(f"-p/--port: {port} and HOST:PORT {host!r} name different ports")
    return f"{h}:{port}"


def _split_host(host: str) -> tuple[str, int]:
    if host.count(":") == 1:
        h, p = host.split(":")
        if not p.isdigit() or not 0 < int(p) < 65536:
            raise UserError(f"HOST[:PORT]: bad port in {host!r}")
        return h, int(p)
    return host, DEFAULT_PORT


def _now() -> float:
    """measure's clock: the machine's, or a replayed recording's (:mod:`.recording`)."""
    return recording.active().now()


def _sleep(s: float) -> None:
    recording.active().sleep(s)


def _probe(args: list[str], timeout: float, who: str = "measure", partial: bool = False) -> dict:
    """Run ``bloatlab-probe ARGS --json``; its JSON. With ``partial``, a run
    that printed its result and then exited 1 over a problem (a flow's peer
    gone before the last ACKs, on a path that drops most of what it gets)
    returns that result with ``problem`` set: what the flows measured until
    then stands. Recorded, or served from a recording, where measure runs in a
    :func:`recording.session`."""
    return recording.active().run(args, lambda: _run_probe(args, timeout, who, partial))


def _run_probe(args: list[str], timeout: float, who: str, partial: bool) -> dict:
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


@dataclass
class Measurement:
    path: Path
    report: dict = field(default_factory=dict)

    def show(self) -> None:
        r = self.report
        of = (r.get("loss_counts") or r.get("loss_idle") or {}).get("sent", 0)
        upper = f", at most {r['loss_upper'] * 100:.2g} %" if r.get("loss_upper") is not None else ""
        why = base_is_least(r) if r.get("down") else None
        least = f"min {r['base_rtt_ms']['min']:.2f}" + (f": the twin's, {why}" if why else "")
        print(f"base RTT {r['base_rtt_ms']['p50']:.2f} ms ({least}), random loss {r['loss'] * 100:.2g} % "
              f"each way ({r['loss_round_trip'] * 100:.2g} % of {of or 'the'} round trips{upper})")
        for d in ("down", "up"):
            x = r.get(d)
            if not x:
                continue
            print(f"{d:>4}: {x['rate_mbps']:.4g} Mbit/s, loaded RTT p50 {x['loaded_rtt_ms']['p50']:.1f} / p95 {x['loaded_rtt_ms']['p95']:.1f} ms, "
                  f"+{x['added_delay_ms']:.1f} ms (grade {x['grade']}), {_buffer_text(x)}, limiter: {x['limiter']}, retransmitted {x['retrans_rate'] * 100:.2g} %")
            v = x.get("rate_variation")
            if v and v.get("levels"):
                print(f"      rate p10-p90 {v['p10_mbps']:.3g}-{v['p90_mbps']:.3g} Mbit/s from its levels at "
                      f"{len(v['levels'])} instants (" + ", ".join(f"{lv['mbps']:.3g} at {lv['at_s']:.1f} s"
                                                    for lv in sorted(v["levels"], key=lambda lv: lv["at_s"]))
                      + f"), moving over ~{v['timescale_s']:.2g} s")
            elif v:
                moved = f", moving over ~{v['timescale_s']:.2g} s" if v["timescale_s"] else ""
                print(f"      rate p10-p90 {v['p10_mbps']:.3g}-{v['p90_mbps']:.3g} Mbit/s over {v['window_s'] * 1e3:.0f}-ms windows{moved}")
            if x.get("rate_note"):
                print(f"      (the rate: {x['rate_note']})")
            if x.get("limiter_note"):
                print(f"      ({x['limiter_note']})")
        if r.get("wifi_front"):
            print(f"WiFi in front: {r['wifi_front_note']}")
        for w in r.get("warnings", []):
            print(f"warning: {w}")
        rp = r.get("replay")
        if rp:
            print(f"replayed from {rp['dir']}: {rp['runs']} probe runs, {len(rp['substituted'])} served for other "
                  f"arguments, {len(rp['unused'])} not asked for")
            for x in rp["substituted"]:
                print(f"      {x}")


#: a fill phase that kept the bottleneck busy (:func:`rate_variation`'s busy windows) in this share of its
#: windows or more, at the rate of the port the idle path showed (the packet train's head down, the large probes'
#: serialization up: within :data:`TRAIN_PORT_MARGIN`), delivered the link's rate: a busy link carries exactly its
#: capacity, and idle windows take at most their share off the rate read over the window, here 5 %, half the rate
#: goal of issue 30 — the BBR rate phase (3-8 s, ~4-9 s with its connections and results) would only cost time.
#: Both are needed: behind a policer on a faster port slow start's bursts at the port lift the flows' smoothed
#: RTT through a collapse (8.9 Mbit/s policed on a 14.6 Mbit/s port: CUBIC 1.4 Mbit/s, +22.6 ms), which the busy
#: windows alone read as a busy link
BUSY_SHARE = 0.95

#: the fewest window probes the *probes busy* rule (:func:`rate_phase_plan`) reads a share from: one probe is then
#: the 5 % a busy share may leave out, 1 / (1 - :data:`BUSY_SHARE`) = 20
BUSY_PROBES = round(1 / (1 - BUSY_SHARE))


def busy_at_port(vfill: dict | None, port_mbps: float | None, rate_mbps: float) -> bool:
    """The fill's bottleneck busy (its flows' queue standing) in :data:`BUSY_SHARE` of its variation windows
    ``vfill``, at a fill's rate ``rate_mbps`` within :data:`TRAIN_PORT_MARGIN` of the port's ``port_mbps`` the idle
    path showed: a queue at the port, which drains at the port's rate (:func:`rate_phase_plan`'s *busy*)."""
    return (vfill is not None and vfill["busy_windows"] >= BUSY_SHARE * vfill["windows"] and port_mbps is not None
            and rate_mbps * TRAIN_PORT_MARGIN >= port_mbps)


def capacity_moved(d: str, rate_mbps: float, port_mbps: float | None) -> str | None:
    """Why a down direction's capacity moved between the idle train and the fill, or None: the fill delivered
    more than :data:`TRAIN_PORT_MARGIN` x the port the idle train's spacing showed (a port delivers no more than
    itself: the train read one instant of a capacity that moves, as :func:`rate_phase_plan` says of seed 49 path
    6's trace). A queue in time is then no depth, and :func:`classify.fifo_check`'s depths in ms are not compared,
    as where :func:`evidence.variable_rate` reads the move from the fill's own windows. Not up, where the port is a
    serialization's lower bound (fills read up to 3.4x it on true AQMs). On the stored measurements of seeds
    61-72 (the fresh draws of ``bench/advise/fifo_check.py``) every down direction the check contradicted had its
    fill within 0.69-1.01x the train's port but one: an LTE-like FIFO at 1.56 Mbit/s (seed 72 path 36), 1.918
    Mbit/s delivered against the train's 1.231, its slow start 352 ms deep at a low instant against the window's
    155, read ``aqm`` (the other FIFO the check contradicted there, seed 65 path 1, had its fill at 0.98x)."""
    if d != "down" or port_mbps is None or rate_mbps <= TRAIN_PORT_MARGIN * port_mbps:
        return None
    return (f"the fill delivered {rate_mbps:.4g} Mbit/s, beyond {TRAIN_PORT_MARGIN:g}x the {port_mbps:.4g} the idle "
            f"train's spacing showed: the capacity moved between them (a port delivers no more than itself), and a "
            f"queue in time is no depth: the slow start's and the window's queues not compared")


def capacity_levels(x: dict, marks: dict[str, float]) -> None:
    """A down direction read ``fifo`` (no WiFi hop) whose capacity moved between the instants it was read: where a
    packet train's head (the idle train before the loads, the AQM train after the fill; one the sender did not
    limit) read it below what the fill delivered by more than the train's resolution (:func:`capacity_moved`: a
    port delivers no more than itself), the fill's windows saw one level of a capacity that moves slower than their
    stretch, and its variation is read from the levels at every instant instead (:func:`capacity.levels_variation`;
    the fill's own kept in it as ``fill``). ``marks``: when each was read (s since the measurement began: the idle
    train's middle, the fill's start, the trains' after it). Only a train below the fill tells: a head above the
    fill is a tbf's bucket at its port as much as a capacity that rose. Over the stored measurements of campaign
    seeds 80-90 (240 paths) the rule fired on 8 down directions, each a variable truth (LTE-like or Starlink-like;
    a ninth, read ``policer``, is out of its reach), and on no fixed one; on the unseen seed 91 (59 paths) on 2
    of its 5 variable truths (of the others one read moving by its windows, one read a policer, one read fixed and
    predicted within 1 %) and on no fixed one. The trains the senders limited (high rates through the emulator: the head left no faster than it
    arrived) are not readings."""
    from .capacity import levels_variation

    if x["limiter"] != "fifo" or x.get("wifi"):
        return
    readings = []
    for key, at in (("wifi_train", marks.get("wifi_train")), ("aqm_train", marks.get("after_fill"))):
        t = x.get(key) or {}
        lead = t.get("leading_mbps")
        if lead and not t.get("sender_limited") and at is not None:
            readings.append((at, lead, key))
    if not any(capacity_moved("down", x["rate_mbps"], r) for _, r, _ in readings):
        return
    lt = (x.get("load_timing_s") or {}).get("fill") or {}
    start = marks["down"]
    if isinstance(lt.get("from_s"), (int, float)) and isinstance(lt.get("to_s"), (int, float)):
        at = start + lt["from_s"] + 0.75 * (lt["to_s"] - lt["from_s"])  # the middle of the second half
    else:
        at = start + 0.75 * x["phases_s"].get("fill", 0.0)
    x["rate_variation"] = levels_variation(x.get("rate_variation"), x["rate_mbps"], at, readings, VARIATION_MIN_WINDOW_S)


def take_busy_port(rates: dict, rate_from: dict, vfill: dict | None, port_mbps: float | None, rate: float,
                   limiter: str, direction: str) -> float:
    """The direction's rate where its fill kept a queue at the port busy (:func:`busy_at_port`) and read below
    the port: the port's rate, entered in ``rates`` and ``rate_from`` as ``port``; ``rate`` itself elsewhere. A
    busy queue drains at its link's rate, which :func:`busy_at_port` says is the port's; the up port is a lower
    bound of it (:func:`_ports`: every per-byte cost on the large probes' way adds to their time), and a loss-based
    fill over a slow link reads below a link it kept busy (its delivery-rate samples, where its window spans too
    few round trips for the acked bytes, :data:`evidence.ACKED_EDGE`). Up only (the down port is the idle train's
    spacing, which the *at the port* rule reads instead); not where the capacity moves (the port was read at one
    instant) nor on a ``policer`` reading (its port is faster than the policed rate its flows got), and only where
    no BBR rate phase was planned (the caller: a phase that ran read the rate itself; the fill of a lossy path is
    BBR's own, and reads below a busy link too: -7.9 -> -0.3 % on seed 69 path 35). The up trains that follow judge
    their heads against this rate: a head between 1.1x the flows' own rate and 1.1x the port (a band of at most
    10 %, where the port read above the flows) no longer reads as a faster port. Offline, on the stored measurements of
    the fresh seeds 61-69 (``bench/advise/fifo_check.py``'s runs; each up direction read again against its
    truth): 24 directions move, each nearer its truth but one (a policer read as an AQM at the port, +0.7 ->
    +2.9 %), errors -11.0..+0.7 % -> -4.9..+2.9 %, within 10 % 22 -> 24 (a 1.02-Mbit/s fq_codel -10.1 -> -2.8 %,
    a 1.21-Mbit/s PIE -11.0 -> -3.5 %)."""
    if (direction != "up" or limiter == "policer" or variable_rate(vfill) or not busy_at_port(vfill, port_mbps, rate)
            or port_mbps <= rate):
        return rate
    rates["port"], rate_from["port"] = port_mbps, "the port's rate (its queue busy throughout the fill)"
    return port_mbps


def rate_phase_plan(ev: dict, rate_mbps: float, flows: int, lossy: bool, vfill: dict | None,
                    port_mbps: float | None, port_spaced: bool = False, hop: bool = False) -> tuple[bool, str]:
    """Whether a direction needs the BBR rate phase after its fill (its evidence ``ev``, its rate ``rate_mbps``,
    its variation windows ``vfill`` and the port's rate the idle path showed, ``port_mbps``): (run, why), in the
    report's ``rate_phase``. The phase answers one question, whether a rate above the fill's was to be had —
    what a loss-based fill cannot tell where it collapsed (behind a policer, under random loss, on a long path
    it could not grow in its time). The fill has answered it already where its bottleneck held a backlog through
    the window: a work-conserving queue with a backlog sends at its rate, so the fill delivered the link's rate
    and BBR could deliver no more. Skipped where:

    - ``lossy``: the fill ran BBR itself;
    - *shared backlog*: the fill reads ``fifo`` and its flows' median queueing passes the burst floor
      (:func:`burst_floor_ms`, what bursts give without a standing queue): one queue all flows share stood
      through at least half the window. Behind a WiFi hop in front of the line (``hop``) the floor holds the
      radio's aggregates too (:data:`wifi_hop.WIFI_HW_QUEUE_MS`: the one on the air and the driver's two, each at
      most :data:`wifi_hop.WIFI_AGGR_MS`), which the flows' packets wait for at a hop that is no backlog at the
      line (seed 131 path 20, a FIFO at 63.9 Mbit/s with 0.15 % random loss: the loss-limited fill 5.85 ms above
      the base, -19 %, the phase skipped; with it BBR read -0.8 % through the emulator). Not where the hop is the
      limiter: its aggregates are then the bottleneck's backlog. Over the 494 stored recordings with a hop's
      signs replayed, 7 directions of 6 paths ask for the phase since; measured again through the emulator, the
      phase ran on 5 directions of 4 of them, each within 0.2 % of its truth but that one, which it mends (the
      other two read no hop in front that time);
    - *own backlog*: flow isolation read from the flows' median (:func:`classify.classify`'s rule 1: their
      median wait beyond the probe's p95 by the noise and their ACK wait, and twice over) above the burst floor
      too: each flow's own queue stood, and DRR over per-flow queues (fq_codel, CAKE) is work-conserving like a
      FIFO. Not where the idle path showed a port faster than the fill's rate (``port_mbps`` beyond
      :data:`TRAIN_PORT_MARGIN` x the rate) or none was read: a window-limited CUBIC collapsed behind a policer
      on a faster port sends its windows as bursts that wait at the port, which lifts its smoothed RTT while the
      sparse probe passes — an isolation look without a backlog (8.9 Mbit/s policed on a 14.6 port: CUBIC 1.4,
      +22.6 ms over the probe's +0.8); with the port at the fill's rate there is nothing faster to burst into.
      Up, where the port is a lower bound (below), the guard catches only a port shown faster; that lift is a
      collapsed flow's small windows and delayed ACKs, and stayed below the floor there (22.6 of 71.6 ms);
    - *at the port*: the port was read by a packet train's spacing (``port_spaced``: the idle train's head down,
      the dispersion the slowest port gives back-to-back packets, :func:`_ports`) and the fill delivered it
      within :data:`TRAIN_PORT_MARGIN`, the train's own resolution (a tenth: the rate goal's tolerance too): no
      phase delivers more than the port, so BBR could add at most that, and its evidence could never take the
      fill's place (that needs :data:`classify.UNSATURATED` x the fill's rate). Not where the fill delivered
      more than that: a capacity that moves (the train read one instant of it: seed 49 path 6's trace, its port
      read 7.1 Mbit/s, the fill 13.3) bounds nothing. The up port is read otherwise
      (the large probes' serialization less the down port's share): every per-byte cost on their way (the
      hosts' copies, an emulator's) adds to that time, so it is a lower bound of the port, which cannot show
      that the fill reached it (campaign seed 50 path 0: 98.3 read for a 140-Mbit/s CAKE, the fill 110);
    - *busy*: :data:`BUSY_SHARE` (the fill's variation windows busy at the port's rate);
    - *probes busy*: :data:`BUSY_SHARE` of the window's probes or more waited behind the other traffic longer than
      the noise and the reverse port's ACKs can lift them (a segment at the fill's rate where that port is unknown)
      (``ev["probes_busy"]``, :func:`evidence.probes_busy`: the time the link was busy, a lower bound, which needs
      no port's rate), over at least :data:`BUSY_PROBES` of them, on a capacity the fill's windows
      show fixed (``vfill``, :func:`evidence.variable_rate`: the phase that follows would read another level of a
      moving one), not below a port a packet train's spacing showed faster (``port_spaced``: a capacity that moved
      since the train, or a policer's port; seed 90 path 23, an LTE-like capacity: the fill 5.0 Mbit/s with its
      probes busy, the BBR phase 18.6) and without a WiFi hop (the caller: there a probe also waits for other
      stations' airtime, which is not this link busy). A link idle no more than 5 % of the time delivered its
      capacity within 5 %, whatever limits it: at a slow port the burst floor (8 segments of 4 flows, 0.49 s at
      0.2 Mbit/s) lies above any queue a few-packet FIFO or an AQM holds, so neither backlog rule can tell this. Over
      the 338 recorded measurements of campaign seeds 80-97 replayed (``measure --replay``) it leaves out 15 BBR
      phases, all up at 0.17-1.6 Mbit/s (5.3-8.6 s each), and moves two rates: a 0.28-Mbit/s CAKE whose BBR phase
      read 21 % high (now 0.0 %), a 1.87-Mbit/s FIFO +0.2 → -4.2 %; no limiter or buffer (docs/advise.md). With the
      bar at the noise and the reverse port's ACKs (2026-12-04), replayed on seeds 138, 143 and 144 (143 recordings):
      11 more up phases left out at 0.2-0.97 Mbit/s, 5.2-6.4 s each, no limiter or buffer moved, one rate -2.4 →
      0.0 %."""
    floor = burst_floor_ms(rate_mbps, flows) + (WIFI_HW_QUEUE_MS if hop else 0.0)
    if lossy:
        return False, "the fill ran BBR (a lossy path): its rate is BBR's"
    q50 = ev["flow_q50_ms"]
    if q50 >= floor and _classify_ev(ev, rate_mbps, flows) == "fifo":
        return False, (f"shared backlog: the fill's flows queued {q50:.3g} ms at the median in the queue they share, "
                       f"above the {floor:.3g}-ms burst floor: the link never idled, the fill's rate is its rate")
    # classify's rule 1 alone (the flows' median backlog the probe skips)
    own = q50 >= floor and median_isolated(ev["probe_q95_ms"], q50, rate_mbps, flows, ev.get("loaded_rtt_ms"),
                                           ev["rate_mbps"])
    if own and port_mbps is not None and port_mbps <= TRAIN_PORT_MARGIN * rate_mbps:
        return False, (f"own backlog: each flow's own queue stood {q50:.3g} ms at the median (flow isolation, the "
                       f"probe {ev['probe_q95_ms']:.3g} ms at p95), above the {floor:.3g}-ms burst floor, at the "
                       f"port's rate the idle path showed ({port_mbps:.4g} Mbit/s): the fill's rate is the link's")
    if port_spaced and port_mbps is not None and port_mbps / TRAIN_PORT_MARGIN <= rate_mbps <= TRAIN_PORT_MARGIN * port_mbps:
        return False, (f"at the port: the fill delivered {rate_mbps:.4g} Mbit/s, within {TRAIN_PORT_MARGIN:g}x of the "
                       f"{port_mbps:.4g} a packet train's spacing showed: no phase delivers more than the port")
    if busy_at_port(vfill, port_mbps, rate_mbps):
        return False, (f"busy: the bottleneck busy in {vfill['busy_windows']} of {vfill['windows']} windows at the "
                       f"port's {port_mbps:.4g} Mbit/s: the link's rate")
    pb = ev.get("probes_busy")
    faster = port_spaced and port_mbps is not None and port_mbps > TRAIN_PORT_MARGIN * rate_mbps
    if pb and pb["probes"] >= BUSY_PROBES and pb["share"] >= BUSY_SHARE and not variable_rate(vfill) and not faster:
        return False, (f"probes busy: {pb['share'] * 100:.0f} % of the window's {pb['probes']} probes waited "
                       f"{pb['threshold_ms']:.3g} ms or more behind the other traffic (more than the noise and the "
                       f"reverse port's ACKs give, evidence.probes_busy): the link was busy that share of the time, "
                       f"the fill's rate is its rate")
    if own:
        seen = f"a port of {port_mbps:.4g} Mbit/s" if port_mbps is not None else "no port's rate"
        return True, (f"flow isolation at the median ({q50:.3g} ms), but the idle path showed {seen} beside the "
                      f"fill's {rate_mbps:.4g}: a collapse's bursts at a faster port are not excluded")
    return True, (f"no backlog through the fill's window (its flows' median queueing {q50:.3g} ms, the burst floor "
                  f"{floor:.3g} ms) and no busy port: whether more was to be had is BBR's to tell")


def _load(host: str, port: int, d: str, flows: int, secs: float, secret: str | None, cc: str,
          idle_s: float = IDLE_MAX_S, floor_s: float | None = None, queue_only: bool = False,
          until_loss: bool = False) -> dict:
    # no self probes: their frames hold the senders to 5 ms of unsent data, and measure wants the rate as a plain sender gets it;
    # no foreign probes: measure reads the UDP probes alone, and a phase whose loaded queue dropped a foreign
    # probe's handshake waited up to 2 s after its end for it (1.0-1.8 s of a lossy 3.1-Mbit/s PIE's phases,
    # campaign seed 52 path 10)
    # not --halt-at-end: each sender then waits up to 2 s (the probe's TIMED_ACK_GRACE) for the acks of its send
    # buffer, 2-2.5 s of each loaded phase at 1 Mbit/s (phases_s) — but the link stays loaded meanwhile and the
    # flows' samples run on, so the window (the second half of all the samples) is that much longer: halted at the
    # phase's end, a lossy 1.43-Mbit/s CoDel at 64 ms (campaign seed 22, path 1) no longer spanned 20 round trips
    # (ACKED_EDGE) and its rate fell back to the delivery-rate samples, 10.1 % low (0.3 % with the grace).
    # --halt-rtts 1/ACKED_EDGE: the probe stops the flows at -t where the second half already spans those round
    # trips (loaded: the probes' and the flows' own, crates/probe/src/live.rs), so the grace runs only where the
    # window needs it: it took 3.5 s of a measure on average (campaign seed 69's 41 paths, 1.9 s of a 163-Mbit/s
    # phase at 45 ms whose window spanned 50 round trips without it); and where the half carried the 200 packets the
    # fill's early end asks of its second half (FILL_FLOOR_PACKETS / 2): read over fewer, behind a policer at a
    # fraction of a Mbit/s, the rates moved by -42 to +16 % without the grace (docs/advise.md, "Where measure's
    # time goes")
    # TCP_INFO samples: about SAMPLES_PER_PHASE a flow (the window, the phase's second half, keeps half of them:
    # enough for a p95); their JSON comes back over the path just measured
    sample_ms = min(max(secs * 1e3 / SAMPLES_PER_PHASE, 10.0), 1000.0)
    args = ["load", host, "-p", str(port), "--down", str(flows if d == "down" else 0), "--up", str(flows if d == "up" else 0),
            "-t", f"{secs:g}", "--idle", f"{idle_s * 1e3:.0f}ms", "--probe-interval", f"{LOAD_PROBE_INTERVAL_MS}ms", "-C", cc, "--no-self-probes",
            "--no-foreign-probes",
            "--sample-interval", f"{sample_ms:.0f}ms"]
    if floor_s is not None and floor_s < secs:
        # the phase ends once saturated, at twice that time, not before floor_s (fill_floor_s); its flows stop
        # with it (the grace above is for a phase that ends at a fixed time: here the second half is
        # saturated by construction)
        args += ["--until-stable", f"{floor_s * 1e3:.0f}ms", "--floor-packets", str(FILL_FLOOR_PACKETS)]
        if queue_only:
            # a random loss on the path: only a standing queue shows the pipe found (_direction)
            args += ["--queue-only"]
    if until_loss:
        # the phase ends a round trip after a flow's first loss (_deep_fill)
        args += ["--until-loss"]
    else:
        args += ["--halt-rtts", f"{1 / ACKED_EDGE:g}", "--halt-packets", str(FILL_FLOOR_PACKETS // 2)]
    if secret:
        args += ["--secret", secret]
    try:
        return _without_missing(_probe(args, timeout=secs + RESULTS_WAIT_S, partial=True))
    except UserError as e:
        if "no UDP echo" not in str(e):
            raise
        # measure's own idle probes were answered before this phase: the server is (or was) there, and what the
        # probe cannot tell apart from here, measure can
        raise UserError(f"measure: the {d} phase's idle probes got no echo, where measure's first idle probes had "
                        f"been answered: the path now holds or drops every packet for longer than the probe waits "
                        f"(2 s) — another host's traffic keeping a deep queue full (a busy shared WiFi medium, a "
                        f"saturated line) — or the server stopped. Measure when the path is quiet, or from a host "
                        f"that does not share its bottleneck ({str(e).removeprefix('measure: ')})") from None


def load_timing(j: dict | None) -> dict | None:
    """Where a ``load`` run's wall time went (s since it began): its loaded phase's start and end (``from_s``,
    ``to_s``: the idle gap before), when its flows' workers ended (``streams_done_s``: the senders' wait for the
    acks of what they wrote), when the server's results began and were read whole, and the run's whole length
    (``duration_s``) — in the report as each direction's ``load_timing_s``, beside ``phases_s`` (the wall time
    around the process as well)."""
    if not j:
        return None
    ph = loaded_phase(j)
    t = ph.get("timing_s") or {}
    cl = next(iter((t.get("clients") or {}).values()), {})
    out = {"from_s": ph.get("from_s"), "to_s": ph.get("to_s"), "streams_done_s": cl.get("streams_done_s"),
           "server_results_s": cl.get("server_results_s"), "results_read_s": cl.get("results_read_s"),
           "results_bytes": cl.get("results_bytes"), "duration_s": j.get("duration_s")}
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}


def _without_missing(j: dict) -> dict:
    """A phase read from the flows that ran: a flow whose data connection
    never reached the server (``missing_flows``: its hello dropped again and
    again behind a slow policer whose bucket the other flows kept empty,
    campaign seed 57 path 6's upload) carried nothing the server read, and
    its samples are a connection's that never got going — it leaves the
    flows and their samples; the probe's ``problem`` names it (a warning)."""
    gone = set(j.get("missing_flows") or [])
    if not gone:
        return j
    j["flows"] = [f for f in j.get("flows", []) if f.get("id") not in gone]
    fs = j.get("raw", {}).get("series", {}).get("flows")
    if isinstance(fs, dict) and isinstance(fs.get("flow"), list):
        keep = [k for k, i in enumerate(fs["flow"]) if i not in gone]
        n = len(fs["flow"])
        for col, v in fs.items():
            if isinstance(v, list) and len(v) == n:
                fs[col] = [v[k] for k in keep]
    return j


#: The level at which the loss stream's losses are judged not the path's random loss (:func:`_loss_stream`): a
#: stream that lost more than the idle probes' 95-% bound is still the path's random loss unless its losses come in
#: runs independent losses give less than once in a thousand streams (:func:`physics.losses_cluster_p`: a pause, an
#: overflowing queue) or exceed the idle probes' beyond that chance (:func:`physics.more_lost_than`: a policer below
#: the stream's pace drops a steady share). The 95-% bound alone discarded the stream of 2 of the 26 lossy paths of
#: campaign seeds 80, 83 and 84 whose stream ran, about what a 5-% test does: seed 80 path 49 and seed 84 path 11
#: (1.7 and 2.6 % of round trips for a true 1.5 and 2.0 %, each loss alone; Fisher p 0.055 and 0.027)
LOSS_STREAM_ALPHA = 0.001


def stream_loss_runs(res: dict | None, lost: int, interval_s: float) -> list | None:
    """The loss stream's runs of consecutive losses (``(length, count)``): the probe's own ``loss_runs``; in a
    recording made before it counted them, from the answered probes' send times (``t``, spaced by
    ``interval_s``) where the gaps account for every loss exactly; else None (not known)."""
    if not res:
        return None
    u = res.get("udp") or {}
    if u.get("loss_runs") is not None:
        return [tuple(r) for r in u["loss_runs"]]
    t = (((res.get("raw") or {}).get("series") or {}).get("probes") or {}).get("t") or []
    if len(t) < 2 or interval_s <= 0:
        return None
    gaps = np.round(np.diff(np.asarray(t, dtype=float)) / interval_s).astype(int) - 1
    gaps = gaps[gaps > 0]
    if int(gaps.sum()) != lost:
        return None
    lengths, counts = np.unique(gaps, return_counts=True)
    return [(int(a), int(b)) for a, b in zip(lengths, counts)]


def _loss_stream(host: str, port: int, secret: str | None, report: dict, ser_ms: float | None, wifi: bool, quick: bool,
                 say, beside=None, down_mbps: float | None = None):
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
    pps, count, why = loss_stream_plan(idle["lost"], idle["sent"], ser_ms, report["base_rtt_ms"]["p50"], wifi, quick,
                                       down_mbps)
    u, err, res = None, None, None
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
                res = _probe(args, timeout=count / pps + 20)
                u = res["udp"]
            except UserError as e:
                err = e
        extra = more.result() if more is not None else None
    if extra:
        idle["sent"] += int(extra["sent"])
        idle["lost"] += int(extra["lost"])
        report["loss_round_trip"] = idle["lost"] / max(idle["sent"], 1)
        report["loss"] = one_way(report["loss_round_trip"])
    # the round trips the figure is from (plan.fill_plan weighs their count): the idle probes', pooled with the
    # stream's below where it is kept; so is the bound on what they could not see (each way): 0 of 100 idle probes
    # lost excludes no loss below ~1.5 % (seed 185 path 44: 0.24 % at 456 ms, the stream skipped at 34 probes)
    report["loss_counts"] = {"lost": idle["lost"], "sent": idle["sent"]}
    if idle["sent"]:
        report["loss_upper"] = one_way(loss_upper(idle["lost"], idle["sent"]))
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
        runs = stream_loss_runs(res, lost, 1 / pps)
        clustered = losses_cluster_p(runs, lost, sent) if runs is not None else None
        beyond = more_lost_than(lost, sent, idle["lost"], idle["sent"])
        st.update(clustered_p=clustered, beyond_idle_p=beyond)
        above = f"it lost {lost} of {sent}, more than the idle probes allow ({idle_bound * 100:.2g} % of round trips)"
        if clustered is None or clustered < LOSS_STREAM_ALPHA or beyond < LOSS_STREAM_ALPHA:
            why_not = ("its losses came in runs, as a pause or an overflowing queue drops" if clustered is not None
                       and clustered < LOSS_STREAM_ALPHA else "beyond what chance gives two samples of one loss"
                       if beyond < LOSS_STREAM_ALPHA else "its losses' order is not known")
            st["discarded"] = f"{above}, {why_not}: not the path's random loss"
            say(f"  loss: {st['discarded']}; the idle probes' figure is kept")
            return extra
        st["kept"] = (f"{above}, but one by one, as independent losses come, and within chance of theirs (p = "
                      f"{beyond:.2g}): the path's random loss, which the idle probes saw less of")
    report["loss_counts"] = {"lost": idle["lost"] + lost, "sent": idle["sent"] + sent}
    rt = (idle["lost"] + lost) / max(idle["sent"] + sent, 1)
    report["loss_round_trip"] = rt
    report["loss"] = one_way(rt)
    report["loss_upper"] = one_way(loss_upper(idle["lost"] + lost, idle["sent"] + sent))
    say(f"  loss: {lost} of {sent} lost: {report['loss'] * 100:.2g} % each way with the idle probes' "
        f"(at most {report['loss_upper'] * 100:.2g} %)")
    return extra


def take_busy_rate(rates: dict, rate_from: dict, variation: dict | None, rate: float, limiter: str) -> float:
    """The direction's rate once the link's rate while it was busy is read (:func:`evidence.busy_rate`, entered
    in ``rates`` and ``rate_from`` as ``busy``), where the phases' ``rate`` counted time it idled; ``rate`` itself
    where not, and where the flows' drops came without a queue (a ``policer`` reading: its busy windows are its
    port's, and the trains read the policed rate from the flows')."""
    busy = busy_rate(variation, rate) if limiter != "policer" else None
    if busy is None:
        return rate
    rates["busy"], rate_from["busy"] = busy, f"busy_windows ({variation['phase']} phase)"
    return busy


def policer_keeps_the_flows_rate(x: dict) -> None:
    """A direction the trains turned into a ``policer`` after :func:`take_busy_rate` read its busy windows: those
    were its port's (the bucket's bursts queue there), not the policed rate, so the flows' rate stands."""
    by = x.get("rate_by_cc") or {}
    if x["limiter"] == "policer" and any(k in by and x["rate_mbps"] == by[k] for k in ("busy", "port")):
        x["rate_mbps"] = max(v for k, v in by.items() if k not in ("busy", "port"))


def few_probes_words(j: dict, w: dict, d: str, host: str, flows: int, secs: float, base_ms: float) -> str:
    """Why a loaded phase (``load``'s JSON ``j``, its window ``w``, :func:`evidence._window`) left too few probe replies
    to read its loaded RTT from, where the idle probes were answered (UDP passes).

    Where the flows' first data came after the last probe answered, the probes were not lost: the flows' connections
    took longer than the phase to open, their handshakes behind a round trip grown to seconds (live seed 166 path 50:
    a legacy access point beside a station at MCS 0; the up fill's flows began 14.0 s into its 5-s phase, its
    probes answered in 1.7-3.2 s where the idle path's took 78 ms; 18 % of them lost). Else they were lost beside the
    load (campaign seed 91 path 56: a 0.2-Mbit/s uplink with a 3000-B FIFO, 95 % of the up fill's probes lost) — also
    where the flows began just after the last probe answered, as they do when their first packets fill such a FIFO
    (seed 194 path 45: the flows' first data at 0.265 s, the last reply at 0.261, 95 % lost): most probes lost is
    that story, not the other's. Such a direction is read from its flows' own smoothed RTT wherever they report one
    (:func:`evidence.probes_lost_beside`): these words are for the window neither can read."""
    late, last = w.get("flows_from_s"), w.get("probes_answered_to_s")
    lost = phase_probe_loss(j)
    if late is not None and last is not None and late > last and not (lost is not None and lost > MOSTLY_LOST):
        # the probes' round trip as the load itself summed it up (its phase's udp_rtt_ms)
        p50 = (loaded_phase(j).get("udp_rtt_ms") or {}).get("p50")
        rtt = f"came back in {p50:.0f} ms at the median" if isinstance(p50, (int, float)) else "came back"
        return (f"measure: {d}: the {flows} flows' first data came {late:.1f} s into the {secs:g}-s loaded phase, after "
                f"its last probe answered: their connections took that long to open, where the probes toward {host} "
                f"{rtt} ({base_ms:.0f} ms on the idle path before): "
                f"the path's round trip grew under the measurement (a queue other traffic fills?), and no loaded "
                f"window is left to read")
    said = f", {lost * 100:.0f} % of them lost" if lost is not None else ""
    return (f"measure: {d}: too few probe replies under load toward {host} ({w['probes'].size} in the phase's "
            f"window{said}) where the idle probes were answered: the bottleneck's queue drops them beside {flows} "
            f"flows (a queue of a few packets at a slow port), or UDP is dropped under load; the loaded RTT cannot "
            f"be read")


def _direction(host: str, port: int, d: str, flows: int, base_p50: float, secret: str | None, quick: bool, lossy: bool,
               idle_loss: float, say, after_ms: float = 0.0, port_mbps: float | None = None,
               reverse_mbps: float | None = None, probe_ser_ms: float = 0.0, wifi: bool = False,
               hop: bool = False, early_trains=None) -> dict:
    """One direction: a phase that fills the buffer (CUBIC: a loss-based
    control fills whatever buffer there is, which is what reveals it; BBR
    would hold the queue near one BDP and hide a deep buffer), then a phase
    that finds the rate (BBR, which neither reads random loss as congestion
    nor collapses behind a policer: its long-term sampling finds the policed
    rate — through a 20 Mbit/s policer 4 CUBIC flows delivered 13.9 Mbit/s,
    4 BBR flows 19.1). The rate is the larger of the two. ``after_ms``: the
    queue (ms) a phase before left on the path (:func:`gap_s`); ``port_mbps``:
    the port's rate the idle path showed (:func:`_ports`), with which a fill
    that kept it busy needs no BBR phase (:func:`rate_phase_plan`), as does one whose probes found the link busy
    (:func:`evidence.probes_busy`: ``probe_ser_ms`` their own serialization both ways, the base's; not where the idle
    path showed a WiFi hop, ``wifi``); ``hop``: a WiFi hop read in front of the line (its aggregates raise the
    rate phase's burst floor, :func:`rate_phase_plan`); ``early_trains(pre)``: where the fill reads a policer and
    asks for the rate phase, the policer's trains sent first (:func:`_policer_trains_first`)."""
    fill_cc = "bbr" if lossy else LOAD_CC
    secs = _phase_secs(base_p50, quick, fill=True)
    # the saturation end (fill_floor_s, and not before the flows delivered FILL_FLOOR_PACKETS, the load's own
    # count) with --quick only: the full measurement keeps its length for the capacity's variation (the LTE-like
    # trace, full measurement with the saturation end: p10 / p90 at 0.89 / 1.06 x its median, within a fixed
    # link's margin; 0.88 / 3.85 before, tests/test_advise.py). Where a random loss was seen and the fill is
    # loss-based, only a standing queue ends it (--queue-only): a random loss is no evidence of the pipe's end
    # for such a load, whose flows sit on a plateau below the rate after one (50 Mbit/s at 80 ms with 0.3 %, a
    # 1-BDP FIFO: ended at a loss, CUBIC's fill read 41 Mbit/s and an AQM instead of the FIFO,
    # tests/test_advise_loss.py); it ran to its ceiling there before (a quarter of the campaign's paths)
    floor = fill_floor_s(secs) if quick else secs
    queue_only = fill_cc == LOAD_CC and idle_loss > 0
    say(f"  loading the path {d} ({flows} {fill_cc} flows, {floor:.3g}-{secs:g} s: until saturated) ...")
    tf = _now()
    j = _load(host, port, d, flows, secs, secret, fill_cc, gap_s(after_ms, base_p50), floor_s=floor, queue_only=queue_only)
    phases = {"fill": _now() - tf}
    ran, sat = _loaded_s(j)
    # what the phases were planned to take (the quiet gap and the load: its ceiling), beside what they took,
    # and what the fill's load ran (its end condition: floor, saturation, ceiling)
    planned = {"fill": gap_s(after_ms, base_p50) + secs}
    fill_end = {"floor_s": floor, "ceiling_s": secs, "saturated_at_s": sat, "ran_s": ran, "queue_only": queue_only}
    w = _window(j, d)
    lost = probes_lost_beside(j, w)
    if w["probes"].size < MIN_WINDOW_PROBES and lost is None:
        raise UserError(few_probes_words(j, w, d, host, flows, secs, base_p50))
    if lost is not None:
        say(f"  {d}: {lost:.0%} of the probes under load lost beside the {flows} flows: the loaded queue is read "
            f"from the flows' own smoothed RTT")
    ev = _evidence(j, w, d, base_p50, idle_loss)
    ev["probes_busy"] = None if wifi or lost is not None else probes_busy(
        w, base_p50, probe_ser_ms, w["rate_mbps"], reverse_mbps, probe_mbps(LOAD_PROBE_INTERVAL_MS))
    fill = ev
    # the share a paced train's tail is held to (tail_above_a_busy_fill); not behind a WiFi hop in front, where a
    # probe's wait may be other stations' airtime, not the line busy
    fill_busy = None if hop else ev["probes_busy"]
    rates = {fill_cc: w["rate_mbps"]}
    rate_from = {fill_cc: w["rate_from"]}
    try:
        vfill = rate_variation(j, d, base_p50)
    except (KeyError, ValueError):
        vfill = None
    jb = None
    # the down port is the idle train's spacing, the up port a serialization's lower bound (_ports)
    run_bbr, why_bbr = rate_phase_plan(ev, w["rate_mbps"], flows, lossy, vfill, port_mbps, port_spaced=d == "down",
                                       hop=hop)
    ev0 = None
    if run_bbr and early_trains is not None:
        # the fill's own reading as the direction's would be without a rate phase (its window's drops, as below)
        ev0 = dict(ev, window_dropped=window_dropped(
            ev, dict(window_drops(j, d, idle_loss, base_p50), phase=fill_cc, queued_bytes=None), fill_cc == LOAD_CC))
    if ev0 is not None and _classify_ev(ev0, w["rate_mbps"], flows) == "policer":
        tt = _now()
        c_early, why_early = _policer_trains_first(early_trains, d, ev0, w["rate_mbps"], flows, fill_busy)
        phases["early_trains"] = _now() - tt
        if c_early is not None:
            run_bbr, why_bbr = False, why_early
            rates["paced_train"], rate_from["paced_train"] = c_early, "tail"
        else:
            say(f"  {d}: {why_early}")
            why_bbr = f"{why_bbr}; {why_early}"
    if not run_bbr:
        say(f"  {d}: {w['rate_mbps']:.4g} Mbit/s with {fill_cc}, no BBR phase ({why_bbr})")
    else:
        rsecs = bbr_phase_secs(base_p50, w["rate_mbps"], flows, quick)
        say(f"  {d}: {w['rate_mbps']:.4g} Mbit/s with {fill_cc}; the rate with {flows} bbr flows ({rsecs:g} s) ...")
        tb = _now()
        try:
            jb = _load(host, port, d, flows, rsecs, secret, "bbr", gap_s(ev["flow_q95_ms"], base_p50))
            phases["bbr"] = _now() - tb
            planned["bbr"] = gap_s(ev["flow_q95_ms"], base_p50) + rsecs
            wb = _window(jb, d)
            rates["bbr"], rate_from["bbr"] = wb["rate_mbps"], wb["rate_from"]
            # the fill phase never reached the rate (CUBIC collapsed behind a policer or under random loss, or
            # could not grow on a long path in its time): its queueing describes that collapse, not the
            # bottleneck under load — the phase that reached the rate tells what limits it
            if wb["rate_mbps"] >= UNSATURATED * w["rate_mbps"] and wb["probes"].size >= MIN_WINDOW_PROBES:
                ev = _evidence(jb, wb, d, base_p50, idle_loss)
                ev["phase"] = "bbr"
        except UserError as e:
            phases["bbr"] = _now() - tb
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
    from_bbr = ev.get("phase") == "bbr" and jb is not None and ev["flow_q95_ms"] > fill["flow_q95_ms"]
    rj = jb if from_bbr else j
    # the window's drops and deepest queue, kept whatever the limiter (_not_a_policer reads them)
    drops = dict(window_drops(rj, d, idle_loss, base_p50), phase="bbr" if from_bbr else fill_cc, queued_bytes=None)
    # whether the evidence's drops came in its window or only in its ramp (classify.queue_dropped), where the window
    # read here is the evidence's own phase's (else None: a BBR phase's window never puts its drops in the ramp anyway)
    own = ev["phase"] == "fill" or from_bbr
    ev["window_dropped"] = window_dropped(ev, drops, fill_cc == LOAD_CC and ev["phase"] == "fill") if own else None
    # the bursts drain at the bottleneck's rate: the larger of the phases'
    limiter = _classify_ev(ev, rate, flows)
    busy = take_busy_rate(rates, rate_from, variation, rate, limiter)
    if not run_bbr:
        busy = take_busy_port(rates, rate_from, vfill, port_mbps, busy, limiter, d)
    if busy != rate:
        rate = busy
        limiter = _classify_ev(ev, rate, flows)
    # a FIFO reading its loss-based fill contradicts (classify.fifo_check): the fill's slow start queued deeper than
    # its window's drops or its flows' backoff allow a FIFO to be — an AQM that drops below its packet limit; read
    # from the fill's own window whichever phase the evidence is (a BBR phase's queue says nothing of a backoff).
    # Not where the capacity moves: a queue in time is then no depth
    check = fill_ss = None
    if limiter == "fifo" and fill_cc == LOAD_CC and not variable_rate(variation):
        fdrops = drops if drops["phase"] == fill_cc else window_drops(j, d, idle_loss, base_p50)
        # the fill's own slow start, read once: the check's, and the deep step's where it reads the depth
        lossless = fdrops["segments"] if fdrops.get("retransmits") == 0 else None
        fill_ss = slow_start_depth(j, d, base_p50, rate, lossless, own_window=True)
        # the window's own loss beyond the random loss (not queue_dropped, which holds too where the window cannot
        # tell: a ramp with a few drops, a window with none)
        moved = capacity_moved(d, rate, port_mbps)
        check = fifo_check(fill_ss, fdrops, bool(fdrops.get("overflowed")), rate, flows, base_p50, idle_loss,
                           timed_out(j, d), reverse_mbps, moved)
        if not check["contradicted"] and from_bbr and drops["overflowed"] and moved is None:
            # the other way round: BBR's dropped flows stood deeper than where the slow start was first dropped
            # (classify.bbr_stood_deeper); not where the capacity moved between the phases
            check.update(bbr_stood_deeper(fill_ss, ev["flow_q50_ms"], rate, flows, idle_loss) or {})
        if check["contradicted"]:
            # (one line while it runs; the whole reason is the limiter's note, in the summary)
            if check["rule"] == "bbr":
                say(f"  {d}: not a FIFO: BBR's flows stood at {ev['flow_q50_ms']:.3g} ms, deeper than the "
                    f"{check['slow_start_ms']:.3g} ms at which the fill's slow start was first dropped")
            else:
                said = {"dropped": "the window's drops", "backoff": "the flows' backoff"}[check["rule"]]
                say(f"  {d}: not a FIFO: the fill's slow start queued {check['slow_start_ms']:.3g} ms, where {said} allow a "
                    f"FIFO {check['deepest_fifo_ms']:.3g} ms deep at most")
            # a policer drops below a queue's limit too: down, behind a port the idle train showed faster than the
            # rate, the trains and the classifier's policer rules tell, and the reading stays theirs; else a policer
            # only on a port within TRAIN_PORT_MARGIN of its rate is left (61/0 of the campaign's seed 61: 12.6
            # Mbit/s on a 13.3-Mbit/s port, a 3-BDP FIFO behind a 99-ms bucket), named beside the AQM. Up no train
            # runs: a policer on any port is named
            faster = d == "down" and port_mbps and port_mbps > TRAIN_PORT_MARGIN * rate
            check["faster_port_mbps"] = port_mbps if faster else None
            if check["faster_port_mbps"] is None:
                limiter = "aqm"
    # the buffer: what a FIFO holds under load, the flows' p95 (smoothed RTT: the VM's pauses do not enter it
    # as they enter the probes' p95) — the larger of the two phases' where both ran (a loss-based control fills
    # whatever buffer there is, BBR about one BDP beyond the pipe, and either may not have had the time); none
    # behind a policer (its port's buffer is never filled, so not seen either); unknown behind an AQM,
    # which holds its queue below its limit
    # — and what that figure is (buffer_reading): a lower bound where the queue did not overflow while it was read,
    # an upper bound where it did but stayed within the flows' own bursts (its figure then the probes'), else the depth
    reading = {"buffer_bytes": None, "buffer_bdp": None, "buffer_window": drops}
    if limiter not in ("aqm", "policer"):
        # a moving capacity: the bytes queued at each sample's own drain rate (queued_bytes_p95)
        drops["queued_bytes"] = queued_bytes_p95(rj, d, base_p50) if variable_rate(variation) else None
        reading = dict(buffer_reading(max(ev["flow_q95_ms"], fill["flow_q95_ms"]), rate, flows, base_p50,
                                      drops["overflowed"], drops["queued_bytes"], drops["queue_max_ms"],
                                      max(ev["probe_q95_ms"], fill["probe_q95_ms"])),
                       buffer_window=drops)
        if (reading["buffer_bound"] == "lower" and limiter == "fifo" and fill_cc == LOAD_CC and idle_loss == 0
                and drops["queued_bytes"] is None):
            td = _now()
            queued = max(ev["flow_q95_ms"], fill["flow_q95_ms"])
            reading = _deep_fill(host, port, d, flows, base_p50, secret, quick, rate, reading, queued, say, fill_ss,
                                 drain=d == "down")
            if reading["deep_fill"].get("phase") == "deep":
                phases["deep"] = _now() - td
                # its gap, its ceiling, and the drain after it of at most the time it ran (a queue grows no faster)
                planned["deep"] = deep_gap_s(queued, base_p50) + 2 * _phase_secs(base_p50, quick, fill=True)
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
    undropped, why_undropped = undropped_alternatives(limiter, ev, rate, flows, idle_loss)
    note = ambiguity(limiter, rate, flows, unseen) or why_undropped
    alts = alternatives(limiter, rate, flows, unseen) or undropped
    return {"direction": d, "first_loss": first, "rate_mbps": rate, "rate_by_cc": rates, "rate_from": rate_from, "load_cc": fill_cc,
            "loaded_rtt_ms": {"p50": fill["probe_p50_rtt"], "p95": fill["probe_p95_rtt"]},
            "added_delay_ms": added, "grade": grade(added), **reading,
            "limiter": limiter, **_not_a_fifo_reading(check, limiter, note, alts, rate, port_mbps if d == "down" else None),
            "unseen_depth_ms": unseen, "unseen_depth_note": why_unseen,
            "evidence": dict(ev, burst_floor_ms=burst_floor_ms(rate, flows)),
            "retrans_rate": fill["retrans_rate"], "flow_rtt_ms": {"p50": w["flow_rtt_p50"], "p95": w["flow_rtt_p95"]},
            "flows": flows, "phase_s": ran if ran is not None else secs, "fill_end": fill_end, "phases_s": phases, "planned_s": planned,
            # whether the BBR rate phase ran and why (rate_phase_plan): a phase left out is in no phases_s
            "rate_phase": {"ran": run_bbr, "why": why_bbr}, "saturated": saturated, "rate_variation": variation,
            "load_timing_s": {"fill": load_timing(j), "bbr": load_timing(jb)},
            # the loss-based fill's own queue and drops (the evidence may be BBR's phase): what tells a WiFi AP's design
            "fill_flow_q95_ms": fill["flow_q95_ms"], "fill_flow_q50_ms": fill["flow_q50_ms"], "fill_dropped": fill["dropped"],
            # and how busy its probes found the link (a paced train's tail is held to it after the loads too)
            "fill_probes_busy": fill_busy,
            "problems": [x for x in (j.get("problem"), (jb or {}).get("problem")) if x], "fifo_check": check}


def _policer_trains_first(send, d: str, ev: dict, fill_mbps: float, flows: int,
                          busy: dict | None = None) -> tuple[float | None, str]:
    """The policer's trains before the BBR rate phase, for a fill its own evidence ``ev`` reads as a policer's
    (at its rate ``fill_mbps``) whose rate phase was planned: ``send(pre)`` sends them (:func:`_policer_train`, its
    runs kept on a :class:`recording.Tape`: :func:`_taped_policer_trains`) as after the loads, into a provisional
    report ``pre`` of the direction ``d`` at the fill's rate. Where the paced train's tail read the policed rate C
    (:func:`trains.paced_rate`: an emptied token bucket passes exactly what it refills, RFC 2697; Linux act_police),
    no phase delivers more through the policer, and the phase, there to find a rate above the collapsed fill's, is
    left out: (C, why). :func:`_trains_after_load` reads the same trains again at the direction's rate
    (:class:`recording.Rewind`; the first train's bucket is its head less what the rate refilled: read at a
    collapsed fill's rate it came out 59 % high, campaign seed 146 path 8), as it does where the phase runs.
    Behind a policer the phase took 3-15 s a direction with its ack grace (4.7-6.6 s a direction of campaign seed
    153's three policers below 150 ms, whose measurements took 24.7-38.7 s), and the rate taken was the paced
    train's wherever one read it (BBR's 0-75 % below it). Not where C is below the fill's rate beyond the train's
    resolution (:data:`TRAIN_PORT_MARGIN`: the flows got no more than C through the bucket), nor above what the
    fill could get through C where its probes found the link as busy as ``busy`` says (:func:`tail_above_a_busy_fill`),
    nor where the fill's evidence at C reads no policer: (None, why) — the phase runs, as where the trains read no C."""
    pre = {"direction": d, "rate_mbps": fill_mbps, "limiter": "policer", "limiter_alternatives": None}
    send(pre)
    c = (pre.get("rate_by_cc") or {}).get("paced_train")
    if c is None:
        return None, "the policer's trains read no rate of its own: the BBR phase runs"
    if tail_below_the_flows(c, "", fill_mbps)[0] is None:
        return None, (f"the policer's paced train read {c:.4g} Mbit/s, below the {fill_mbps:.4g} the fill got: the BBR "
                      f"phase runs")
    busy_c, why_busy = tail_above_a_busy_fill(c, "", busy, fill_mbps)
    if busy_c is None:
        return None, f"{why_busy}: the BBR phase runs"
    if _classify_ev(ev, max(c, fill_mbps), flows) != "policer":
        return None, f"at the paced train's {c:.4g} Mbit/s the fill reads no policer: the BBR phase runs"
    return c, (f"the policer's trains first: the paced train's tail read the policed rate, {c:.4g} Mbit/s (an "
               f"emptied bucket passes what it refills), which no phase delivers more than through the policer; "
               f"the fill got {fill_mbps:.4g}")


def _taped_policer_trains(host: str, port: int, secret: str | None, pre: dict, wp: dict, say, idle_loss: float,
                          idle_port_mbps: float | None) -> recording.Tape:
    """:func:`_policer_train` into the provisional report ``pre`` (:func:`_policer_trains_first`; down with the idle
    path's train ``wp``'s, as :func:`_wifi_train` puts it in the report, which :func:`_paced_policer_train` weighs
    against the first train for the port's FIFO), its runs and clock reads on a tape."""
    if _way(pre) == "down" and wp.get("train") is not None:
        pre["wifi_train"] = wp["train"]
    tape = recording.Tape(recording.active())
    with recording.session(tape):
        _policer_train(host, port, secret, pre, say, idle_loss, idle_port_mbps)
    return tape


def _port_read_not_aqm(d: dict) -> None:
    """Where a policer's train read a port (``d["port_mbps"]``: its head came faster than the rate), the port is
    faster than what holds the flows to their rate, so that is no queue at the port's rate (an AQM dequeues at its
    own: sch_cake's shaper paces without a bucket) but a token bucket — a policer, or a tbf whose queue is shallower
    than the floor — or a capacity that moved: the AQM is no longer among ``d``'s limiter alternatives."""
    if d.get("port_mbps") is not None and d.get("limiter_alternatives"):
        d["limiter_alternatives"] = [a for a in d["limiter_alternatives"] if a["limiter"] != "aqm"]


def _not_a_fifo_reading(check: dict | None, limiter: str, note: str | None, alts: list | None, rate: float,
                        port_mbps: float | None) -> dict:
    """A direction's ``limiter_note`` and ``limiter_alternatives`` (and ``aqm_qdisc``) where its fill contradicted a
    FIFO (:func:`classify.fifo_check`; else ``note`` and ``alts`` as they are): a single-queue AQM, CoDel or PIE
    not told apart (advise checks both), and a policer on a port within :data:`TRAIN_PORT_MARGIN` of its rate,
    which drops below the queue's limit too — ``port_mbps`` the port the idle train's spacing showed (down); where
    none did (the up direction's is only a serialization's lower bound) a policer on any port, as
    :func:`trains.untrained_aqm` names an AQM at any rate; where the idle path showed a faster port
    (``check["faster_port_mbps"]``) the reading stays ``limiter`` (a FIFO, the trains to tell) and the AQM and a
    policer on that port are named beside it (advise checks its pick on each one's twin)."""
    if not check or not check["contradicted"]:
        return {"limiter_note": note, "limiter_alternatives": alts}
    if check.get("faster_port_mbps"):
        why = (f"{check['why']}; but the idle path showed a port at {check['faster_port_mbps']:.4g} Mbit/s, faster "
               f"than the {rate:.4g} Mbit/s the flows got: a policer in front of it drops below the queue's limit too")
        return {"limiter_note": "; ".join(n for n in (note, why) if n),
                "limiter_alternatives": (alts or [{"limiter": limiter}]) + [
                    {"limiter": "aqm", "kinds": ["codel", "pie"], "why": why},
                    {"limiter": "policer", "port_mbps": check["faster_port_mbps"], "why": why}]}
    if port_mbps:
        policer = {"limiter": "policer", "port_within": TRAIN_PORT_MARGIN}
        said = f"or a policer on a port within {TRAIN_PORT_MARGIN:g}x of its rate (the idle path's {port_mbps:.4g} Mbit/s)"
    else:
        policer = {"limiter": "policer", "rate_above_mbps": 0.0}
        said = "or a policer (no packet train showed the port)"
    return {"aqm_qdisc": "codel", "limiter_note": f"{check['why']}: {CODEL_OR_PIE}, {said}",
            "limiter_alternatives": aqm_alternatives(CODEL_OR_PIE) + [policer]}


def deep_gap_s(queue_ms: float, base_ms: float) -> float:
    """The quiet gap (s) before the deep step: the fill's queue (``queue_ms``, its flows' p95) drained and two round
    trips, as :func:`gap_s` but not held to its 1-s most — the step runs where that queue is deep (3.5 s at 2.58
    Mbit/s and 549 ms, campaign seed 56 path 38), and a slow start begun over a standing queue is read against it."""
    return max(gap_s(queue_ms, base_ms), (queue_ms + 2 * base_ms) / 1e3)


def _deep_fill(host: str, port: int, d: str, flows: int, base_ms: float, secret: str | None, quick: bool,
               rate: float, reading: dict, queued_ms: float, say, fill_ss: dict | None = None, drain: bool = True) -> dict:
    """A FIFO the fill never overflowed (``reading``'s lower bound, :func:`buffer_reading`) read again by
    ``flows`` Reno flows run until their first loss (:data:`buffer.DEEP_CC`, ``load --until-loss``), whose slow
    start doubles the windows until the buffer overflows, at most the fill's own ceiling (:func:`_phase_secs`): the
    reading with the depth where they overflowed it (:func:`buffer.slow_start_depth`), else with the deeper
    lower bound of the two; the phase's figures in ``deep_fill``. ``queued_ms``: the queue the phases before
    left (the quiet gap before this one, :func:`deep_gap_s`). Its own queue drains after it (``drain``: a phase
    follows, the down direction's trains and the up direction; nothing follows the up direction's).

    Only on a path whose idle probes lost nothing and whose fill kept no moving capacity (the caller): a random
    loss ends a slow start early, below any deep buffer (at 0.2 % within some 500 segments, where 4 flows fill
    36 MB with about 50 000), and a queue in time is no depth in bytes where the capacity moves (the fill's reading
    is then the bytes at each sample's rate, ``buffer_window.queued_bytes``). Slow start takes
    the rounds to the BDP, then twice the depth in time (:func:`plan.slow_start_secs`): 1.7 s for a 606-ms FIFO at
    44.6 ms. Where it could not see a loss at the fill's own bound within the ceiling it does not run; a FIFO
    deeper than the ceiling allows stays a lower bound.

    Where the fill's own slow start overflowed it (``fill_ss``: :func:`buffer.slow_start_depth` of the fill, read
    against its window's lossless segments, where the reading's window is the fill's: HyStart did not end that slow
    start, and its drops came before the window, :func:`evidence.window_drops`), that overflow
    reads the depth the same way, and no phase runs. Either depth must lie beyond the most the lossless window
    queued."""
    secs = _phase_secs(base_ms, quick, fill=True)
    low = reading["buffer_bytes_min"]
    win = reading["buffer_window"]
    lossless = win["segments"] if win.get("retransmits") == 0 else None
    to_bytes = lambda ms: ms / 1e3 * rate * 1e6 / 8  # noqa: E731  (a queue in time at the rate it drains at)
    bdp = to_bytes(base_ms)
    # a depth must lie beyond the most the lossless window queued (its flows' largest smoothed RTT, not only its
    # p95 the bound comes from): a loss below that was not this FIFO's overflow (a burst's at a faster hop)
    beyond = max(low, int(to_bytes(win.get("queue_max_ms") or 0.0)))

    def depth(x: dict, who: str, since: str) -> dict:
        """The reading with the overflow ``x`` read as the depth."""
        b = x["depth_bytes"]
        return dict(reading, deep_fill=x, buffer_bytes=b, buffer_bdp=b / bdp if bdp else None, buffer_bound=None,
                    buffer_bytes_min=None, buffer_from="slow_start",
                    buffer_note=(f"~{b / 1e3:.4g} KB: {who} slow start overflowed it at {x['queue_ms']:.4g} ms of queue "
                                 f"({x['retransmits']:.0f} retransmissions), {since}"))

    own = fill_ss is not None and win.get("phase") == LOAD_CC  # the window read is the fill's own
    x = dict(fill_ss) if own else None
    if x is not None and x["overflowed"] and x["depth_bytes"] > beyond:
        x.update(phase="fill", fill_bound_bytes=low)
        return depth(x, "the fill's", "before the window its queue was read over")
    low_ms = low / to_bytes(1.0)
    need = slow_start_secs(rate, flows, base_ms, low_ms)
    if need >= secs:
        return dict(reading, deep_fill={"phase": None, "fill_bound_bytes": low, "why": (
            f"not run: a slow start would see a loss at the fill's {low / 1e3:.4g} KB no sooner than {need:.3g} s "
            f"after it began, past the {secs:g}-s ceiling")})
    say(f"  {d}: the fill never overflowed the buffer (at least {low / 1e3:.4g} KB); {flows} {DEEP_CC} flows until "
        f"their first loss (at most {secs:g} s) ...")
    try:
        j = _load(host, port, d, flows, secs, secret, DEEP_CC, deep_gap_s(queued_ms, base_ms), until_loss=True)
    except UserError as e:
        if drain:
            _sleep((low_ms + 2 * base_ms) / 1e3)  # what it may have queued: the bound's
        return dict(reading, deep_fill={"phase": "deep", "overflowed": False, "failed": str(e), "why": f"the phase failed ({e})",
                                        "fill_bound_bytes": low})
    x = slow_start_depth(j, d, base_ms, rate, lossless)
    ran, _ = _loaded_s(j)
    x.update(phase="deep", ran_s=ran, ceiling_s=secs, lost_at_s=loaded_phase(j).get("lost_at_s"), fill_bound_bytes=low)
    if x["lost_at_s"] is not None and x["retransmits"] == 0:
        # the watcher saw a receiver's data out of order that no sender retransmitted: a reordering (which ends the
        # phase as a loss would: crates/probe/src/live.rs), or a loss its sender had not yet seen
        x["why"] = (f"the phase ended at {x['lost_at_s']:.3g} s on data a receiver got out of order that no sender "
                    f"retransmitted (a reordering, or a loss seen too late): the queue reached is a lower bound")
    out = dict(reading, deep_fill=x)
    b = x["depth_bytes"]
    if x["overflowed"] and b > beyond:
        out = depth(x, f"{flows} {DEEP_CC} flows'",
                    f"where the fill had queued {reading['buffer_bytes'] / 1e3:.4g} KB without a loss")
    elif x["overflowed"]:
        x["why"] = (f"the slow start overflowed a queue of {b / 1e3:.4g} KB, no deeper than the fill's lossless "
                    f"{beyond / 1e3:.4g} KB: not the FIFO the fill met")
    elif b is not None and b > low:
        out.update(buffer_bytes=b, buffer_bdp=b / bdp if bdp else None, buffer_bytes_min=b,
                   buffer_note=f"at least {b / 1e3:.4g} KB: {x['why']}")
    if out.get("buffer_bound") == "lower":
        say(f"  {d}: buffer still a lower bound ({x['why']})")
    if drain:
        # what it queued drains before the next phase: the deepest queue its flows (else its probes) saw, and two
        # round trips
        probed = max([p["rtt_ms"]["max"] - base_ms for p in j.get("probes") or [] if (p.get("rtt_ms") or {}).get("max")]
                     or [0.0])
        _sleep(((x["queue_ms"] if x["queue_ms"] is not None else probed) + 2 * base_ms) / 1e3)
    return out


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


def _way(d: dict) -> str:
    """The direction a direction's report ``d`` is (its ``direction``; the reports stored before it had one: down)."""
    return d.get("direction", "down")


#: A packet train drains at its direction's rate, which the draw puts as low as 0.05 Mbit/s up and 1 Mbit/s down,
#: where the probe's default 1000 packets (AQM_TRAIN_PACKETS) would queue for 240 s (12 s down) behind a
#: single-queue AQM, which holds them all (its limit is 1000 packets): PIE at 1.4-2.0 Mbit/s held the down trains
#: 4.8-6.6 s of `measure --quick` (campaign seed 146 paths 25, 29, 53). So a train sends at most what the measured
#: rate drains in this long (s) (:func:`train_count`): the AQM train's reading needs a queue of AQM_BURST_RATIO (2)
#: x the flows' (a single-queue AQM holds theirs near its target plus a packet's serialization: 5-15 ms + 60 ms at
#: 0.2 Mbit/s; :func:`aqm_train_s` where the flows stood deeper) and more than PIE's 150-ms burst allowance
#: (trains.PIE_BURST_MS); 2 s is 13x that allowance, and 2 s of queue is what 1000 packets build at 6 Mbit/s; a
#: policer's bucket (at most 100 ms of its rate, the draw's) passes a back-to-back train's head for bucket / (1 -
#: rate / port): 1 s at a rate of 90 % of the port
TRAIN_S = 2.0

#: ... and at least this many packets: a tail of 10 packets after a first loss is the least whose rate the probe
#: reads as more than coarse (crates/probe/src/train.rs), and a head before it as many again (4.8 s at 0.05 Mbit/s)
TRAIN_MIN_PACKETS = 20


def train_count(rate_mbps: float, count: int | None, wire: int = WIRE_SEGMENT, seconds: float = TRAIN_S) -> int:
    """The packets a train at ``rate_mbps`` sends for ``count`` asked (None: the probe's default, 1000): at most what
    the rate drains in ``seconds`` (:data:`TRAIN_S`), at least :data:`TRAIN_MIN_PACKETS`."""
    want = count or AQM_TRAIN_PACKETS
    return int(min(want, max(TRAIN_MIN_PACKETS, seconds * rate_mbps * 1e6 / 8 / wire)))


def aqm_train_s(queue_ms: float) -> float:
    """How long (s) of the rate an AQM train may be (:func:`train_count`) behind a queue the flows stood in for
    ``queue_ms``: :data:`TRAIN_S`, or where that is short of it, twice what the train must build to show a
    single-queue AQM's burst (AQM_BURST_RATIO x ``queue_ms``: trains.single_queue_aqm), a tail after it as long
    as that head (its rate and its drops are what tell a FIFO's tail drop, trains.train_cannot_tell)."""
    return max(TRAIN_S, 2 * AQM_BURST_RATIO * queue_ms / 1e3)


def _sender(d: dict) -> str:
    """Who sends a direction's packet trains: the probe server down, this host up."""
    return "this host" if _way(d) == "up" else "the server"


def _train_or_note(host: str, port: int, secret: str | None, count: int | None, d: dict, note: str, assumed: str,
                   say, seconds: float = TRAIN_S) -> dict | None:
    """:func:`_train` (up where ``d`` is the up direction's report: :func:`_send_up`), or None where it failed:
    then ``d[note]`` says why and what is ``assumed`` instead. A train after the direction's loads (``d`` has its
    rate) sends :func:`train_count` packets of ``count`` (``seconds`` of the rate; up, :func:`_send_up` sizes it);
    down, where that is the probe's default, it asks for none (the run as it was recorded before trains were sized
    down)."""
    try:
        if _way(d) == "up":
            return _send_up(host, port, secret, d, count, seconds=seconds)
        n = train_count(d["rate_mbps"], count, seconds=seconds) if d.get("rate_mbps") else count
        return _train(host, port, secret, None if count is None and n == AQM_TRAIN_PACKETS else n)
    except UserError as e:
        d[note] = f"no packet train ({e}): {assumed}"
        say(f"  ({d[note]})")
        return None


def _send_up(host: str, port: int, secret: str | None, d: dict, count: int | None, pace_mbps: float | None = None,
             sized: bool = False, seconds: float = TRAIN_S) -> dict:
    """An up train for the up direction's report ``d``: :func:`train_count` packets (``seconds`` of its rate; ``sized``:
    ``count`` as its caller sized it, :func:`_paced_policer_train`'s), counted in
    ``d["up_trains_sent"]``; where the first failed (``d["no_up_train"]``: a server that predates up trains, or none
    answering them) every later one fails with its error at once, without the handshake's timeouts again (a later
    train's refusal — the server's budget, a pace too long — is that train's alone)."""
    if d.get("no_up_train"):
        raise UserError(d["no_up_train"])
    try:
        n = count if sized and count else train_count(d["rate_mbps"], count, seconds=seconds)
        t = _train(host, port, secret, n, pace_mbps, up=True)
    except UserError as e:
        if not d.get("up_trains_sent") and any(w in str(e) for w in UP_TRAINS_UNSERVED):
            d["no_up_train"] = str(e)
        raise
    d["up_trains_sent"] = d.get("up_trains_sent", 0) + 1
    # losses that are not the path's: this host's own queue (its qdisc or NIC: the send's ENOBUFS, crates/probe
    # sys::set_recverr), or the server's socket (its receive buffer) — the train's losses would read as a
    # policer's or a queue's
    own, theirs = t.get("server_send_errors") or 0, t.get("local_drops") or 0
    if own or theirs:
        raise UserError(f"{own} of its packets dropped by this host's own queue and {theirs} by the server's socket "
                        f"before or after the path: its losses are not the path's")
    return t


#: The probe's errors that say the server sends up trains no answer (crates/probe/src/train_up.rs): a server older
#: than up trains, or none (nor its echo) answering: the direction's other up trains are not asked for
UP_TRAINS_UNSERVED = ("predates up trains", "no answer from")


def _train(host: str, port: int, secret: str | None, count: int | None = None, pace_mbps: float | None = None,
           up: bool = False) -> dict:
    """A packet train from the server (``bloatlab-probe udp train``; ``count``
    full packets, its default 1000; back to back, or paced at ``pace_mbps``:
    ``--rate``), or to it (``up``: ``--up``, this host sends and the server
    stamps the arrivals): the ``train`` object of its JSON."""
    args = ["udp", "train", host, "-p", str(port)] + (["--up"] if up else []) + (["--count", str(count)] if count else [])
    if pace_mbps:
        args += ["--rate", f"{pace_mbps * 1e6:.0f}bit"]
    if secret:
        args += ["--secret", secret]
    what = ("paced " if pace_mbps else "") + ("up " if up else "") + "packet train"
    return _probe(args, timeout=90 if up else 30, who=f"measure ({what})")["train"]


def _paced_train(host: str, port: int, secret: str | None, count: int, pace_mbps: float) -> dict:
    """:func:`_train` of ``count`` packets paced at ``pace_mbps``."""
    return _train(host, port, secret, count, pace_mbps)


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


#: a paced train's bucket is a full one only where the policer had time to refill it since the train before:
#: where the gap's refill (the measured rate x the time since) was less than the bucket read, the train may have
#: found it part full; it is sent again once, after the time the largest bucket it can read takes to refill (at
#: most this long, s)
PACED_REFILL_MAX_S = 5.0


#: A train ends once its receiver has heard nothing of it for a while (the train's ``quiet_ms``, crates/probe
#: train.rs TrainRun::quiet_ns): a token bucket in front of the receiver has refilled since the last packet that
#: took its tokens passed (any later one arrived or was dropped behind it), so the train's end is that much later
#: than the bucket's last drain. Up, the server's quiet at the client's last poll; a recording made before the probe
#: said it holds at least the quiet that ends an up train with losses (UP_QUIET_S: UP_QUIET_MIN_NS). What spent
#: tokens meanwhile: up, the client's polls (at most one every UP_POLL_S, UP_POLL_WIRE bytes each: the 56-B
#: request, 72 signed, in IPv4 and UDP) and then its fetch requests, each padded to the train's packet size
#: (UP_FETCH_MIN_LEN at least) to carry (length - 72) / 10 records back; down, the server's two DONE answers
UP_QUIET_S = 0.25
UP_POLL_S = 0.02
UP_POLL_WIRE = 100
UP_FETCH_MIN_LEN = 548
DONE_ANSWERS = 2


def quiet_refill(train: dict, bps: float) -> float:
    """Bytes a token bucket filling at ``bps`` (B/s) in front of ``train``'s receiver had refilled by the train's
    end since the last packet that drained it: the receiver's quiet (``quiet_ms``) less what the polls, the fetch
    requests or the DONE answers took. 0 where nothing says (an older recording of a down train, or of an up train
    that lost nothing: it ended on its last record, without the quiet)."""
    up = train.get("direction") == "up"
    q = train.get("quiet_ms")
    quiet_s = q / 1e3 if q is not None else (UP_QUIET_S if up and train.get("lost") else 0.0)
    if quiet_s <= 0:
        return 0.0
    if up:
        size = min(max(train.get("size") or 1472, UP_FETCH_MIN_LEN), 1472)
        fetches = -(-(train.get("received") or 0) // max(1, (size - 72) // 10))
        spent = quiet_s / UP_POLL_S * UP_POLL_WIRE + fetches * (size + 28)
    else:
        spent = DONE_ANSWERS * UP_POLL_WIRE
    return max(0.0, bps * quiet_s - spent)


def _policer_train(host: str, port: int, secret: str | None, d: dict, say, random_loss: float = 0.0,
                   idle_port_mbps: float | None = None) -> None:
    """Behind a policer: a packet train back to back, then where it read a
    port (its head sent faster than the port drained it, so the port's FIFO
    may have cut it) one paced at :data:`PACE_SHARE` of the port
    (:func:`_paced_policer_train`); their figures into the direction's report
    ``d`` (``train``, ``paced_train``, ``port_mbps``, ``bucket_bytes``,
    ``port_buffer_bytes``, ``train_note``, ``train_evidence``); ``random_loss``:
    the idle path's, each way (:func:`paced_bucket`). Where the first train's
    head was a single packet (a bucket under two: no spacing to read a port
    from) the paced train goes at PACE_SHARE of the port the idle path showed,
    ``idle_port_mbps`` (:func:`_ports`: the idle train's head down, the large
    probes' serialization up), where that is faster than the flows' rate;
    where the server set the first train's pace (``sender_limited``: the port
    is at least that fast), at PACE_SHARE of that pace."""
    say(f"  {_way(d)}: a packet train for the policer's port rate and bucket ...")
    t = _train_or_note(host, port, secret, None, d, "train_note", "the port and bucket are assumed", say)
    done_at = _now()
    if t is None:
        d.update(train=None, port_mbps=None, bucket_bytes=None)
        return
    p, b, why = policer_figures(t, d["rate_mbps"])
    d.update(train=t, port_mbps=p, bucket_bytes=b, train_note="; ".join(why) or None, train_evidence=[_train1_said(t, p)])
    # a FIFO in front of the policer that a train kept full, from its one-way delays; the port with it where the
    # server's pace hid it: the paced train then goes below that port
    port_fifo_from_delays(d)
    if p is None and d["port_mbps"] is not None:
        # the delays told the port the head's spacing did not: the note no longer says it is unknown
        d["train_note"] = "; ".join(w for w in why if not w.startswith("port:")) or None
    p = d["port_mbps"]
    _port_read_not_aqm(d)
    pace_port = p
    if (p is None and t.get("head_packets", 0) < 2 and idle_port_mbps
            and idle_port_mbps >= TRAIN_PORT_MARGIN * d["rate_mbps"]):
        # without a paced train the rate stays the flows' goodput, which a bucket of a few packets holds far below
        # the policed rate (campaign seed 86 path 13: a 0.363-Mbit/s up policer with a 3-KB bucket passed one
        # packet of the train, and four CUBIC flows 0.186 Mbit/s)
        pace_port = idle_port_mbps
        d["train_evidence"].append(f"its head a single packet: the paced train goes at {PACE_SHARE:.0%} of the port the "
                                   f"idle path showed ({idle_port_mbps:.4g} Mbit/s)")
    elif (p is None and t.get("sender_limited") and t.get("first_loss") is not None and t.get("leading_mbps")
          and t["leading_mbps"] >= TRAIN_PORT_MARGIN * d["rate_mbps"]):
        # the server, not the path, set the head's pace: the port is at least that fast, so a train paced just below
        # it queues at no port, and its tail's delays tell a queue in front of the bucket (a tbf) from none
        # (trains._queue_before_bucket). Without it such a tbf stayed `policer` (campaign seed 134 path 34 down and
        # path 7 up: tbfs at 2-4 ms whose back-to-back trains left a loaded server at 230-257 Mbit/s). A train that
        # passed whole sends none (as below): the evidence says so only where one goes (seed 142 path 46)
        pace_port = t["leading_mbps"]
        d["train_evidence"].append(f"its head left at the server's pace ({pace_port:.4g} Mbit/s; the port is no "
                                   f"slower): the paced train goes at {PACE_SHARE:.0%} of it")
    if pace_port is not None and t.get("first_loss") is not None and b is not None:
        _paced_policer_train(host, port, secret, d, t, pace_port, b, done_at, say, random_loss)
    b = d["bucket_bytes"]
    port_txt = f"port {p:.4g} Mbit/s" if p else "port not told"
    bucket_txt = f"bucket {b / 1e3:.3g} KB" if b else "bucket not told"
    fifo_txt = f", port buffer {d['port_buffer_bytes'] / 1e3:.3g} KB" if d.get("port_buffer_bytes") else ""
    say(f"  {_way(d)}: {port_txt}, {bucket_txt}{fifo_txt}" + (f" ({d['train_note']})" if d.get("train_note") else ""))


def _train1_said(t: dict, p: float | None) -> str:
    """What the first (back-to-back) train behind a policer reading told: its port and head."""
    return (f"train 1 (back to back, {t.get('head_send_mbps') or 0:.4g} Mbit/s): port "
            + (f"{p:.4g} Mbit/s" if p else "not told") + f", {t.get('head_packets', 0)} packets before its first loss")


def loaded_flows_mbps(d: dict) -> float | None:
    """What direction ``d``'s loaded phases' flows got through (``rate_by_cc``'s fill and BBR phase; not the busy
    windows or the port, which read the port's rate); None before they ran."""
    return max((v for k, v in (d.get("rate_by_cc") or {}).items() if k in (LOAD_CC, "bbr")), default=None)


def tail_below_the_flows(c: float | None, why: str, flows: float | None) -> tuple[float | None, str]:
    """The paced train's tail rate ``c`` (:func:`trains.paced_rate`, ``why`` its reason) as the policed rate,
    unless the loaded phases' flows got ``flows`` Mbit/s through the same path (:func:`loaded_flows_mbps`), more
    beyond the train's resolution (:data:`TRAIN_PORT_MARGIN`): an emptied bucket passes exactly what it refills, so
    flows that took more over a window of seconds than the tail passed over its milliseconds refute the tail as C —
    before the rate phase (:func:`_policer_trains_first`) and after the loads alike. Campaign seed 195 path 42, a tbf at 216.3
    Mbit/s (a 31.5-KB queue, a 1.14-ms bucket on a 486-Mbit/s port): the fill's four CUBIC flows delivered 216.4,
    the train paced at 964 Mbit/s passed 175.6 over its 24.6-ms tail, and the direction took 175.6 (−18.8 %; the
    twin's CUBIC −45 % of the kernel's). Then (None, why): the flows' rate stands."""
    if c is None or flows is None or c * TRAIN_PORT_MARGIN >= flows:
        return c, why
    return None, (f"the paced train's tail passed {c:.4g} Mbit/s, below the {flows:.4g} the flows got through beyond "
                  f"the train's resolution ({TRAIN_PORT_MARGIN:g}x): an emptied bucket passes what it refills, no less "
                  f"than the flows took through it, so the tail read something else (the sender, the receiver)")


def tail_above_a_busy_fill(c: float | None, why: str, busy: dict | None, fill_mbps: float | None) -> tuple[float | None, str]:
    """The paced train's tail rate ``c`` (``why`` its reason) as the policed rate, unless the fill's probes found
    the link busy (``busy``, :func:`evidence.probes_busy` of the fill's window, whose flows got ``fill_mbps``) so
    much of the time that a bottleneck of rate C would have passed more than the fill got, beyond the train's
    resolution (:data:`TRAIN_PORT_MARGIN`): the other side of :func:`tail_below_the_flows`.

    A probe that waited behind the other traffic found the port in front of the limiter sending (PASTA: the share
    of such probes is a lower bound of the time it was, ``share``). A port busy for a stretch T offers the policer
    behind it more than C (it is faster than C, or C could not pass), and an emptied bucket passes what it refills
    over T, its tokens kept across a drop, less at most one packet a stretch where a too-short stretch leaves the
    bucket a packet short: none where each busy stretch the probes counted lasts at least one wire segment at C,
    which a probe's wait above the threshold guarantees once the threshold is that long (``threshold_ms`` at least
    a segment at C; else the tail stands). A tbf, a FIFO or an AQM at C pass C whenever busy, so the fill
    delivered at least ``share`` x C whatever limits the path at C. A fill that got less while its probes found the
    link that busy met a capacity below C: the tail read a capacity that moves at one of its peaks, not a fixed
    rate. Campaign seed 195 path 19: an LTE-like trace (1.34 Mbit/s on average, a 3-KB FIFO, 38 ms):
    the fill's four CUBIC flows got 0.95 Mbit/s with 47 % of its 232 probes waiting 4.7 ms or more, the train paced
    at 3.86 passed 3.39 over its 1.1-s tail (0.47 x 3.39 = 1.59 Mbit/s at least through a link of 3.39, 1.68 x
    what the fill got), and the direction read a policer at 3.39: its twin's CUBIC +67 % of the kernel's on the true path. Then (None, why).
    Not where the probes were too few to read a share from (:data:`BUSY_PROBES`) or none was read or passed: a WiFi
    hop that is the limiter, the probes lost beside the flows, and a WiFi hop in front of the line (the caller: a
    probe's wait there may be other stations' airtime, not the line busy)."""
    if c is None or not busy or fill_mbps is None or busy["probes"] < BUSY_PROBES:
        return c, why
    if busy["threshold_ms"] < WIRE_SEGMENT * 8 / (c * 1e3):
        return c, why
    least = busy["share"] * c
    if least <= TRAIN_PORT_MARGIN * fill_mbps:
        return c, why
    return None, (f"the paced train's tail passed {c:.4g} Mbit/s, but {busy['share']:.0%} of the fill's "
                  f"{busy['probes']} probes found the link busy (waiting {busy['threshold_ms']:.3g} ms or more), in "
                  f"which a link of {c:.4g} Mbit/s passes at least {least:.4g}, beyond the train's resolution "
                  f"({TRAIN_PORT_MARGIN:g}x) above the {fill_mbps:.4g} the fill got: the capacity was below the tail's "
                  f"through the fill (one that moves, whose peak the tail read), not a policed rate")


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
    # an up train is sent no longer than its rate drains in TRAIN_S (train_count: the queue it would build
    # behind an AQM); behind a policer the paced train builds none, and it needs the packets whose tail reads the
    # policed rate (trains.policed_tail_count: campaign seed 80 path 37, a 0.87-Mbit/s up policer with a 3-KB
    # bucket, its flows at 0.223 Mbit/s sized a 37-packet train whose 8 tail packets were too few, and the rate
    # was read -74 %)
    if _way(d) == "up":
        count = min(count, max(train_count(rate, count, w), policed_tail_count(b1, rate, pace, w, random_loss)))
    ended, before = done_at, t1
    for attempt in range(2):
        say(f"  {_way(d)}: a packet train paced at {pace:.4g} Mbit/s ({count} packets) for the bucket ...")
        start = _now()
        try:
            t2 = (_send_up(host, port, secret, d, count, pace, sized=True) if _way(d) == "up"
                  else _paced_train(host, port, secret, count, pace))
        except UserError as e:
            d["train_evidence"].append(f"no paced train ({e}): the first train's bucket is kept")
            return
        done_at = _now()
        sent_at = t2.get("send_mbps")
        if sent_at and sent_at < rate:
            # paced above the flows' rate to outrun them, it left the server slower than they got through: the
            # server (its CPU or NIC), not the path, set its rate, and what it reads falls back on the flows'
            # (trains.paced_rate); the user hears of it (seed 39 path 192 at load 12: 88.3 for a 295.9 pace)
            d.setdefault("server_short", []).append(
                f"a packet train paced at {pace:.4g} Mbit/s left {_sender(d)} at {sent_at:.4g}, slower than the "
                f"{rate:.4g} the flows got through")
        # the policer idled at least from the last train's end to this one's handshake (a round trip) after, and
        # since the last train's receiver last heard of it (quiet_refill)
        gap = start - ended + (t2.get("handshake_rtt_ms") or 0.0) / 1e3
        ended = done_at
        # the policed rate from the tail (paced_rate), where the train reads it: the bucket's formula takes it as C.
        # The tail from where the bucket ran dry, past the random losses before it (paced_bucket's cut)
        c, why_c = paced_rate(t2, pace, b1, rate, cut=paced_cut(t2, random_loss) if t2.get("lost_seq") else None)
        c, why_c = tail_below_the_flows(c, why_c, loaded_flows_mbps(d))
        c, why_c = tail_above_a_busy_fill(c, why_c, d.get("fill_probes_busy"),
                                          (d.get("rate_by_cc") or {}).get(d.get("load_cc")))
        b2, res, k, how = paced_bucket(t2, c or rate, pace, random_loss)
        # the bucket refills at the policed rate: the tail's where it read one, else the flows' (no more than it)
        bps = (c or rate) * 1e6 / 8
        quiet = quiet_refill(before, bps)
        refilled = bps * gap + quiet
        before = t2
        if b2 is None and not res:
            sent = t2.get("head_send_mbps") or pace
            if attempt == 0 and sent <= (c or rate):
                # a server short of CPU paced below the rate (seed 31 path 15 on a loaded VM: 45.7 Mbit/s for a 95.5
                # pace): once more, as the refill's retry below
                d["train_evidence"].append(f"paced train 1: {how}: sent again")
                continue
            d["train_evidence"].append(f"train 2 (paced at {pace:.4g} Mbit/s): {how}; the first train's bucket is kept")
            return
        read = b2 if b2 is not None else res
        # a bucket the gap since the last train did not refill may have been part full: once more, after the
        # time the largest bucket this train can read (what it sent beyond the rate's refill) takes to refill
        if read < refilled or attempt == 1:
            break
        largest = count * w * (1 - (c or rate) / pace)
        wait = min((largest - refilled) / bps, PACED_REFILL_MAX_S)
        in_quiet = f", {quiet / 1e3:.3g} KB of it in the quiet that ended that train" if quiet else ""
        d["train_evidence"].append(f"paced train {attempt + 1}: {read / 1e3:.3g} KB, more than the {gap:.2g} s since the "
                                   f"train before refilled ({refilled / 1e3:.3g} KB{in_quiet}): sent again after "
                                   f"{wait:.2g} s")
        _sleep(max(wait, 0.0))
    d["paced_train"] = t2
    # what the paced head passed beyond the refill: the bucket behind a policer; behind a tbf the bucket and the queue
    # in front of it, which trains._queue_before_bucket then takes out
    d["paced_bucket_bytes"] = int(read)
    if c is not None:
        # the policed rate is the tail's, not the flows' goodput through the bucket (paced_rate)
        d.setdefault("rate_by_cc", {})["paced_train"] = c
        d.setdefault("rate_from", {})["paced_train"] = "tail"
        d["rate_mbps"] = c
    said = f"; its rate: {why_c}" + ("" if c is not None else f" (the flows' {rate:.4g} Mbit/s is kept)")
    full = read < refilled
    if b2 is None:
        # passed whole: a bucket at least that large (its least is taken, as policer_figures does)
        d["train_evidence"].append(f"train 2 (paced at {pace:.4g} Mbit/s): {how}{said}")
        b2, res = read, 0.0
    else:
        d["train_evidence"].append(f"train 2 (paced at {pace:.4g} Mbit/s): bucket {b2 / 1e3:.3g} KB (+-{res / 1e3:.2g}): {how}"
                                   + ("" if full else f"; the {gap:.2g} s since the train before may not have refilled it") + said)
    # the first train's reading resolves to half a packet either way
    if b2 - b1 > res + w:
        d["bucket_bytes"] = int(max(b2, 1500))
        q = port_fifo(t1)
        if d.get("port_buffer_bytes") is not None:
            # the trains' delays read the FIFO full (trains.port_fifo_by_delay): its whole packets stand
            d["train_evidence"].append(f"train 1's head was cut by the port's FIFO, not the policer (its {b1 / 1e3:.3g} "
                                       f"KB < the paced {b2 / 1e3:.3g} KB)")
        elif q is not None and lone_first_loss(t1):
            # the head passed the port's FIFO whole: at least that (as where both trains read alike, below)
            d["port_buffer_min_bytes"] = int(q)
            d["train_evidence"].append(f"train 1's first loss, packet {t1['first_loss']}, was a lone one (the "
                                       f"{OVERFLOW_WINDOW} packets from it went on as no full FIFO lets them): a random "
                                       f"loss ended its head, not the port's FIFO, which is at least {q / 1e3:.3g} KB "
                                       f"(not seen)")
        elif q is not None:
            # read from the train that pressed the port hardest: the idle one where the server sent train 1 hardly
            # faster than the port (trains.pressed_hardest), where its head too read less than the paced bucket (the
            # FIFO, not a bucket train 1's gap had left part empty, cut it)
            idle = d.get("wifi_train")
            b_idle = policer_figures(idle, rate)[1] if idle and idle.get("first_loss") is not None else None
            t = pressed_hardest(t1, [idle] if b_idle is not None and b2 - b_idle > res + w else [])
            q = port_fifo(t)
            which = "its" if t is t1 else f"the {t.get('sent')}-packet train's"
            d["port_buffer_bytes"] = int(max(q, 1500))
            d["train_evidence"].append(f"train 1's head was cut by the port's FIFO, not the policer (its {b1 / 1e3:.3g} KB "
                                       f"< the paced {b2 / 1e3:.3g} KB): the FIFO holds {q / 1e3:.3g} KB ({which} head's "
                                       f"bytes less what the port drained while they came, sent at "
                                       f"{t['head_send_mbps']:.4g} Mbit/s to the port's {t['leading_mbps']:.4g})")
    elif b1 - b2 > res + w:
        d["train_evidence"].append(f"the paced train read less than the first ({b2 / 1e3:.3g} < {b1 / 1e3:.3g} KB): "
                                   f"its bucket was not full; the first train's is kept")
    elif d.get("port_buffer_bytes") is not None:
        # the trains' delays read the FIFO full (trains.port_fifo_by_delay): its whole packets stand
        d["train_evidence"].append(f"both trains read the bucket alike ({b1 / 1e3:.3g}, {b2 / 1e3:.3g} KB): the policer cut "
                                   f"both")
    else:
        q = port_fifo(t1)
        d["port_buffer_min_bytes"] = int(q) if q else None
        d["train_evidence"].append(f"both trains read the bucket alike ({b1 / 1e3:.3g}, {b2 / 1e3:.3g} KB): the policer cut "
                                   f"both; the port's FIFO is at least {q / 1e3 if q else 0:.3g} KB (not seen)")


def _aqm_train(host: str, port: int, secret: str | None, x: dict, say, idle_loss: float = 0.0,
               base_ms: float | None = None) -> None:
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
    done_at = _now()
    secs = aqm_train_s(queue_ms)
    if not t or t.get("sent", 0) < train_count(x["rate_mbps"], AQM_TRAIN_PACKETS, seconds=secs):
        say(f"  {_way(x)}: a packet train for an AQM behind the {queue_ms:.3g}-ms queue ...")
        t = _train_or_note(host, port, secret, AQM_TRAIN_PACKETS, x, "aqm_note", "a FIFO is assumed", say, secs)
        done_at = _now()
        if t is None:
            return
    x["aqm_train"] = t
    if _rate_from_held_tail(t, x, idle_loss, say, "aqm_train"):
        queue_ms = x["buffer_bytes"] * 8 / (x["rate_mbps"] * 1e3)
    # a train that arrived faster than the rate was not drained at it: no AQM at the rate (it dequeues at its own:
    # sch_cake's shaper paces without a bucket) held it, and its queue and drops are a faster port's; what holds the
    # flows to the rate is a token bucket — a policer where the flows stood no queue (_not_a_fifo), a tbf's queue
    # where they did
    if _not_a_fifo(t, x):
        x["aqm_note"] = x["limiter_note"]
        say(f"  {_way(x)}: {x['limiter_note']}")
        # a policer read from this train: its paced train as behind a policer reading (_policer_train) — the bucket,
        # the port's FIFO and the policed rate (trains.paced_rate), which the flows' goodput through a bucket of a few
        # packets falls short of (seed 28 path 18 through the emulator: 4.42 Mbit/s read for a 7.08 CIR)
        _turned_policer(host, port, secret, x, t, done_at, say, idle_loss, base_ms)
        if x["limiter"] == "fifo":
            x["aqm_note"] = x["limiter_note"]
        return
    lead = t.get("leading_mbps")
    if lead and not t.get("sender_limited") and lead >= TRAIN_PORT_MARGIN * x["rate_mbps"]:
        x["aqm_note"] = (f"a packet train's head arrived at {lead:.4g} Mbit/s, faster than a queue at {x['rate_mbps']:.4g} "
                         f"Mbit/s passes packets: not a single-queue AQM at the rate, but a token bucket in front of a "
                         f"faster port, behind the {queue_ms:.3g}-ms queue the flows stood in (a tbf)")
        x["limiter_note"] = x["aqm_note"]
        say(f"  {_way(x)}: {x['aqm_note']}")
        return
    kind, why = single_queue_aqm(t, x["rate_mbps"], queue_ms, idle_loss)
    x["aqm_note"] = why
    if kind:
        x.update(limiter="aqm", aqm_qdisc=kind, buffer_bytes=None, buffer_bdp=None, limiter_note=why,
                 limiter_alternatives=aqm_alternatives(why, kind, queue_ms))
        say(f"  {_way(x)}: {kind} ({why})")
        return
    if _fifo_deeper_than_the_flows(t, x, idle_loss):
        x["aqm_note"] = x["limiter_note"]
        say(f"  {_way(x)}: {x['limiter_note']}")
        return
    alt = train_cannot_tell(t, x["rate_mbps"], queue_ms)
    if alt:
        x["limiter_alternatives"] = (x.get("limiter_alternatives") or [{"limiter": "fifo"}]) + [alt]
        x["aqm_note"] = alt["why"]
        x["limiter_note"] = "; ".join(n for n in (x.get("limiter_note"), alt["why"]) if n)
        say(f"  {_way(x)}: {alt['why']}")


def _rate_from_held_tail(t: dict, x: dict, idle_loss: float, say, which: str) -> bool:
    """A direction whose AQM or isolation train ``t`` (``which``) shows a queue that drained it at a rate
    (:func:`trains.held_tail_mbps`) more than :data:`TRAIN_PORT_MARGIN` x the flows' takes that rate
    (``rate_by_cc["held_tail"]``; ``rate_from["held_tail"]`` names the train), and its buffer the same time at it:
    the flows left the bottleneck idle part of the time, and a queue draining a train's tail at its own rate is the
    bottleneck's rate. A head that came as fast is then no faster port (no bucket
    ran dry: its tail would have come at the bucket's rate), so no tbf is read from it. Campaign seed 111 path 9:
    fq_codel at 49.5 Mbit/s, 84.8 ms, behind a WiFi hop whose access delay lifted the probe as much as the flows (no
    isolation read, and no BBR phase after a queue that stood like a FIFO's): the CUBIC fill's 41.8 Mbit/s, the
    train's head 49.2 and its tail 49.4 (564 packets, 2 lost), read a tbf. Not where the capacity moves (a tail is
    one instant's rate). True where it took the rate."""
    if capacity_moves(x):
        return False
    drained = held_tail_mbps(t, idle_loss)
    rate = x["rate_mbps"]
    if drained is None or drained < TRAIN_PORT_MARGIN * rate:
        return False
    _take_train_rate(x, drained, "held_tail", which,
                     f"a packet train's last {t['tail_packets']} packets, held in a queue that dropped {t.get('lost', 0)} "
                     f"of them, arrived at {drained:.4g} Mbit/s, {drained / rate:.2g}x the {rate:.4g} the flows delivered: "
                     f"the bottleneck's rate, which the flows left idle part of the time", say)
    return True


def _take_train_rate(x: dict, rate_mbps: float, key: str, which: str, note: str, say) -> None:
    """Direction ``x`` takes the rate a packet train (``x[which]``) read, as ``rate_by_cc[key]`` and
    ``rate_from[key]``, with ``rate_note``; its buffer's figures the same time at it where they were read as a queue
    in time (the flows', a slow start's), not where a train's overflow read them in bytes (``buffer_from``)."""
    if x.get("buffer_from") not in BACK_TO_BACK_TRAINS:
        for k in ("buffer_bytes", "buffer_bytes_min", "buffer_bytes_max"):
            if x.get(k) is not None:
                x[k] = int(x[k] * rate_mbps / x["rate_mbps"])
    x["rate_mbps"] = rate_mbps
    x.setdefault("rate_by_cc", {})[key] = rate_mbps
    x.setdefault("rate_from", {})[key] = which
    x["rate_note"] = note
    say(f"  {_way(x)}: {note}")


#: the direction's back-to-back packet trains, whose tails :func:`rate_from_drained_tail` reads, with their names in
#: words: the idle path's first (down), the policer's first, the AQM's and the isolation's (not a paced train: the
#: server set its pace)
BACK_TO_BACK_TRAINS = {"wifi_train": "the idle path's train", "train": "the policer's first train",
                       "aqm_train": "the AQM train", "isolation_train": "the isolation train"}


def rate_from_drained_tail(x: dict, idle_loss: float, say, jitter_ms: float = 0.0) -> bool:
    """A direction whose flows delivered less than its bottleneck passed a packet train's tail at
    (:func:`trains.drained_mbps`: the drain of a full queue, the refill of a bucket run dry), by at most
    :data:`TRAIN_PORT_MARGIN`, takes the tail's rate (``rate_by_cc["drained_tail"]``, ``rate_from`` naming the
    train; the longest tail of :data:`BACK_TO_BACK_TRAINS` that reads one). The flows' rate counts the time they
    left the link idle — the losses of a shallow buffer, a window short of the path, the acked bytes' edge — and so
    lies below the capacity (campaign seed 120: a 7.21-Mbit/s FIFO of two packets read 6.62 with four BBR flows, a
    40.0-Mbit/s FIFO of 0.17 BDP 37.4 with CUBIC, where the trains' tails arrived at 7.22 and 39.99); a link delivers
    no more than its rate, so a tail above them is the nearer figure. Below the rate, a tail between what the load
    phases read decides between them: the higher one over-read (campaign seed 120 path 10, up: CAKE at 0.452
    Mbit/s, the BBR phase's delivery-rate samples 0.553, the CUBIC fill's delivered bytes 0.445, the tail 0.452).
    Not a tail beyond the margin above (a capacity that moved, or :func:`_rate_from_held_tail`'s case) or below
    every phase (another bottleneck than the flows'), nor where the capacity moves (a tail is one instant's rate)
    or the limiter is a WiFi hop (its MAC's aggregates set the tail's arrivals). Only where the tail's bounds
    (:func:`trains.tail_bounds`: a bucket's first packet of the tail early by up to a packet's time, each end of its
    span late by the path's timing noise ``jitter_ms``) lie wholly on the side of the rate it moves to — a 32-packet
    tail at 440 Mbit/s spans 0.87 ms (seed 122 path 21: 442 for a 429-Mbit/s FIFO the flows read at 418.5) — and not
    over a rate a train read already (a paced train's tail, a held tail), nor on a ``policer`` reading: its bucket
    passes the tail's first packet on what the head left of a token, up to a packet's time early, so its rate reads
    up to 1/n high, while the policer's paced train reads it from hundreds of packets. True where it took the rate."""
    by = x.get("rate_by_cc") or {}
    if (x.get("wifi") or x["limiter"] == "policer" or capacity_moves(x)
            or any(by.get(k) == x["rate_mbps"] for k in ("paced_train", "held_tail"))):
        return False
    best = None
    for which in BACK_TO_BACK_TRAINS:
        t = x.get(which)
        r = drained_mbps(t, idle_loss) if isinstance(t, dict) else None
        if r is not None and (best is None or t["tail_packets"] > best[1]["tail_packets"]):
            best = (r, t, which)
    if best is None:
        return False
    r, t, which = best
    rate = x["rate_mbps"]
    phases = [v for k, v in by.items() if k in (LOAD_CC, "bbr")]
    lo, hi = tail_bounds(t, jitter_ms) or (0.0, float("inf"))
    n = 4
    if rate < lo and r <= TRAIN_PORT_MARGIN * rate:
        why = (f"{(r / rate - 1) * 100:.1f} % above the {rate:.4g} the flows delivered: the bottleneck's rate, which the "
               f"flows left idle part of the time")
    elif len(phases) > 1 and min(phases) <= r and hi < rate:
        # as many digits as tell the tail from the higher reading (a tail 0.01 % below it printed as equal to it)
        n = next((n for n in range(4, 9) if f"{r:.{n}g}" != f"{rate:.{n}g}"), 9)
        why = (f"between the {min(phases):.4g} and {rate:.{n}g} the load phases read: the bottleneck's rate, which the "
               f"higher one over-read (" + ", ".join(f"{k} from {v}" for k, v in (x.get("rate_from") or {}).items()) + ")")
    else:
        return False
    _take_train_rate(x, r, "drained_tail", which,
                     f"the last {t['tail_packets']} packets of {BACK_TO_BACK_TRAINS[which]}, after {t.get('lost', 0)} of "
                     f"its {t.get('sent', 0)} were dropped, arrived at {r:.{n}g} Mbit/s, {why}", say)
    return True


def _isolation_train(host: str, port: int, secret: str | None, x: dict, say, idle_loss: float = 0.0,
                     base_ms: float | None = None) -> None:
    """A direction read as flow isolation with drops: one packet train down
    (``isolation_train``); where its head came faster than the rate
    (:func:`_isolation_behind_a_faster_port`) the direction is a policer's,
    and the paced train reads its bucket, its rate and a queue in front of
    it, as behind a policer reading."""
    if x["limiter"] != "aqm" or x.get("aqm_qdisc") is not None or not x["evidence"].get("dropped"):
        return
    say(f"  {_way(x)}: a packet train for the port behind the flow isolation ...")
    t = _train_or_note(host, port, secret, AQM_TRAIN_PACKETS, x, "isolation_note", "the isolation is kept", say)
    done_at = _now()
    if t is None:
        return
    x["isolation_train"] = t
    _rate_from_held_tail(t, x, idle_loss, say, "isolation_train")
    if not _isolation_behind_a_faster_port(t, x):
        return
    say(f"  {_way(x)}: {x['limiter_note']}")
    _turned_policer(host, port, secret, x, t, done_at, say, idle_loss, base_ms)


def _turned_policer(host: str, port: int, secret: str | None, x: dict, t: dict, done_at: float, say,
                    idle_loss: float = 0.0, base_ms: float | None = None) -> None:
    """A direction a back-to-back train ``t`` (ended at ``done_at``) turned ``policer``: as behind a policer reading
    (:func:`_policer_train`, unless one sent it already) the paced train for the bucket, the port's FIFO and the
    policed rate, then a shallow FIFO the paced train shows (:func:`_paced_past_the_flows`) and a queue in front of the
    bucket (:func:`_queue_before_bucket`: a tbf whose queue the flows' bursts hid reads ``fifo`` again)."""
    if x.get("paced_train") is None:
        p, b = x.get("port_mbps"), x.get("bucket_bytes")
        x["train_evidence"] = [_train1_said(t, p)]
        if p is not None and t.get("first_loss") is not None and b is not None:
            _paced_policer_train(host, port, secret, x, t, p, b, done_at, say, idle_loss)
    if base_ms is not None:
        _paced_past_the_flows(x, base_ms)
        _queue_before_bucket(x, base_ms)
        if x["limiter"] == "fifo":
            say(f"  {_way(x)}: {x['limiter_note']}")


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


#: the times a packet train's request is sent before the probe gives up on an answer (crates/probe/src/train.rs,
#: run_train: `tries == 3`, a --timeout apart)
TRAIN_HANDSHAKE_TRIES = 3


def _wifi_probe(host: str, port: int, secret: str | None, say, rt_loss: float = 0.0) -> dict:
    """One short packet train down, on the idle path (before the loads: the
    loss stream's pace depends on it): ``{"train", "phy_mbps", "note"}``, the
    PHY rate from the train's batches (:func:`wifi_hop`) or None where they
    show no WiFi hop (``note`` says why). ``rt_loss``: the idle probes' share
    of round trips lost, with which a handshake that went unanswered is put
    beside the path's own loss (the probe's words ask whether a server is
    there, which the idle probes answered)."""
    say("  down: a packet train for a WiFi hop ...")
    out: dict = {"train": None, "phy_mbps": None, "note": None}
    t = _train_or_note(host, port, secret, WIFI_TRAIN_PACKETS, out, "note", "a wired path is assumed", say)
    if t is None and "no answer from" in (out["note"] or "") and rt_loss > 0:
        # the handshake is one small round trip like an idle probe's
        said = (f"the idle probes to the same server were answered with {rt_loss:.0%} of their round trips lost, at "
                f"which the handshake's {TRAIN_HANDSHAKE_TRIES} tries all fail "
                f"{rt_loss ** TRAIN_HANDSHAKE_TRIES:.1%} of the time")
        out["note"] += "; " + said
        say(f"  ({said})")
    if t is not None:
        out["train"] = t
        out["phy_mbps"], out["note"] = wifi_hop(t)
    return out


def wifi_train_before_fill(train: dict | None, gap_s: float, base_ms: float) -> dict | None:
    """The idle path's packet train (:func:`_wifi_probe`'s, sent back to back before the loads) as the down fill's
    load met it: ``{"packets", "size_bytes", "before_s"}``, ``before_s`` how long before the load's clock began the
    train's first packet entered the path (s): ``gap_s`` between the train's run and the fill's (measure's laps: the
    loss stream and the rest of the idle probes), the run's end after its last arrival (``quiet_ms``), its arrivals'
    spread (the largest of ``delay_ms``: the queue its last packet met) and the one-way base delay (half
    ``base_ms``). A slow single queue still drains the train, or holds the probability or drop state it left, when
    the fill's slow start comes (PIE at 1.45 Mbit/s, campaign seed 146 path 53: 200 packets are 1.6 s of its
    queue); the isolation model runs it (:func:`isolation.model_figures`). None where no train ran or none of it
    arrived."""
    if not train or not train.get("received"):
        return None
    spread_ms = max((v for v in train.get("delay_ms") or [] if v is not None), default=0.0)
    before = gap_s + ((train.get("quiet_ms") or 0.0) + spread_ms + (train.get("send_ms") or 0.0) + base_ms / 2) / 1e3
    return {"packets": int(train.get("server_sent") or train["sent"]), "size_bytes": int(train.get("size") or 1472),
            "before_s": round(before, 4)}


#: how far a fill may fall below what the model gives the same fill of a lone station on the hop it read before
#: other stations are taken to have used the medium (:func:`_wifi_train`): the model over the kernel's fill on the
#: lone hops of campaigns 80, 83 and 84 (16 of them: 1.01-1.12, median 1.06, the kernel's fewer ACKs, docs/wifi.md)
#: is the noise, and this is twice its largest excess; the shared hops gave 1.28-4.01 (9, two of them unseen by
#: the idle probes: 1.53 and 2.59, an airtime and an fq AP at 277 and 576 ms)
WIFI_LONE_FILL_MARGIN = 1.25


def _wifi_train(wp: dict, x: dict, base_ms: float, say) -> None:
    """Where the train of :func:`_wifi_probe` (``wp``) showed a WiFi hop the
    direction becomes ``wifi``: the AP's design (:func:`wifi_design`, from
    the loads' queue) and the PHY rate; where the idle probes waited behind
    other stations (``wp["idle_spread_ms"]``) ``wifi.shared`` and the flows'
    rate, else the MAC's where the flows got less."""
    t, phy, why = wp["train"], wp["phy_mbps"], wp["note"]
    if t is None:
        x["wifi_note"] = why
        return
    x["wifi_train"] = t
    if phy is not None and (wp.get("idle_spread_ms") or 0.0) > WIFI_AGGR_MS:
        # other stations on the medium (below): where they lengthened most of the train's periods, the aggregates'
        # size bounds the PHY rate (wifi_hop's shared reading, phy_from_aggregates)
        phy, why = wifi_hop(t, shared=True)
    x["wifi_note"] = why
    if phy is None:
        return
    # the loss-based fill's queue: BBR keeps ~a BDP queued whatever the AP does (4 BBR flows at 256 ms sat 524 ms
    # (p95) behind mac80211's fq_codel, read as a legacy FIFO on the campaign's evaluation seed 3)
    mac, why_mac = wifi_design(x.get("fill_flow_q95_ms", x["evidence"]["flow_q95_ms"]),
                               x.get("fill_dropped", x["evidence"]["dropped"]), base_ms,
                               x.get("fill_flow_q50_ms", x["evidence"].get("flow_q50_ms")))
    spread = wp.get("idle_spread_ms")
    idle_saw = spread is not None and spread > WIFI_AGGR_MS
    # the fill in the model of this station alone behind an airtime AP, run once: the design's check below and the
    # other stations' after it both weigh it
    air_fill = fill_by_model(x, _lone_hop(phy, "airtime", base_ms, None)) if mac == "airtime" and not idle_saw else None
    if air_fill is not None:
        # a lone station: the model of each design under the fill tells what the queue's figures could not
        legacy, why_legacy = _legacy_by_model(x, phy, base_ms, *air_fill)
        if legacy:
            mac, why_mac = "legacy", f"{why_mac}; but {why_legacy}"
    # what the wired reading was (the flows' evidence alone): the shared hop's reading below may rest on a rate that
    # a wired limiter behind the hop would give as well
    wired, wired_alts = x.get("limiter"), x.get("limiter_alternatives")
    # (an AQM the wired reading took the AP's queue for is no qdisc of the twin's: aqm_qdisc goes too)
    x.update(limiter="wifi", wifi={"phy_mbps": phy, "mac": mac}, limiter_note=f"{why}; {why_mac}", limiter_alternatives=None,
             aqm_qdisc=None)
    if mac == "airtime":
        x.update(buffer_bytes=None, buffer_bdp=None)
    elif x.get("buffer_bytes") is None:
        # a legacy FIFO the wired reading took for an AQM's queue (no depth read): its depth from the queue the
        # loss-based fill sat in, as a wired FIFO's (buffer_reading)
        win = x.get("buffer_window") or {}
        x.update(buffer_reading(x.get("fill_flow_q95_ms", x["evidence"]["flow_q95_ms"]), x["rate_mbps"],
                                x.get("flows", 4), base_ms, win.get("overflowed"), queue_max_ms=win.get("queue_max_ms")))
    say(f"  down: a WiFi hop, {mac}, PHY ~{phy:.3g} Mbit/s")
    # the hop's rate is what its MAC delivers to a backlogged station at that PHY rate (_at_least_the_macs; from_twin
    # reads it so)
    alone = _lone_hop(phy, mac, base_ms, x.get("buffer_bytes"))
    mac_mbps = alone.wifi_rate_mbps()
    # other stations on the medium: the idle probes' median waited more than a full aggregate's airtime (ath9k's
    # 4.096 ms) beyond their least. An idle AP sends a sparse flow's packet at once (a frame, under 0.5 ms at any
    # HT20 rate); what holds the medium that long is another station's aggregates, so the medium was shared for
    # at least half the probes. Through the emulator (an airtime AP, MCS 7, 20 ms; 2026-11-27): alone 0.25 ms, beside
    # a station's CUBIC download 13.1 ms, its flows 21.8 Mbit/s of the MAC's 48.7
    # ... or the fill got less than this station alone gets in the model: other stations' downloads at a long RTT
    # leave the medium idle in gaps the sparse idle probes pass through, but take their airtime under load
    lone, got = (None, None) if idle_saw else air_fill if mac == "airtime" else fill_by_model(x, alone)
    fill_saw = lone is not None and lone > WIFI_LONE_FILL_MARGIN * got
    if idle_saw or fill_saw:
        if mac == "legacy" and x.get("buffer_bytes"):
            # a legacy AP's one FIFO holds every station's packets and drains at what the medium delivers to all of
            # them: the queue the flows sat in (their sojourn) at the rate of the twin's medium, where the others
            # run at this PHY rate (a lone station's, mac_mbps), not at this station's share (seed 49 path 50: the
            # FIFO read 287 KB at the flows' 2.26 Mbit/s, 638 KB at the medium's 5.03; CUBIC as it is on the twin
            # waited 797 / 1628 ms at p95 against 1770 on the true path in the model)
            scale = mac_mbps / max(x["rate_mbps"], 1e-9)
            x["buffer_bytes"] = int(x["buffer_bytes"] * scale)
            for k in ("buffer_bdp", "buffer_bytes_min", "buffer_bytes_max"):
                if x.get(k) is not None:
                    x[k] *= scale
            alone = replace(alone, buffer_bytes=x["buffer_bytes"])
        # the twin gives the others backlogged downloads at this PHY rate, as many as leave this station, in the
        # twin's own MAC, the rate its flows got beside them (Path.wifi_others_and_share) — behind an AP that queues
        # each station apart (fq, airtime) beside the loads' own echo probes too, each of which its scheduler gives
        # one of this station's turns on the medium, and the rate is the share without them: the fill's reading over
        # the share the probes took in the twin at that count. Behind a legacy AP's one FIFO the twin's probes moved
        # the share either way (-35 to +37 %: seeds 182 path 6, 185 path 38, 186 path 42, where the count read
        # without them was nearer the truth's): there the reading stays as it is
        probe_ms = None if mac == "legacy" else LOAD_PROBE_INTERVAL_MS
        probed = x["rate_mbps"]
        others, with_probes = alone.wifi_others_and_share(max(probed, 1e-9), probe_ms=probe_ms)
        took = 0.0
        if probe_ms:
            bare = replace(alone, wifi_others=others).wifi_rate_mbps(seeds=WIFI_SHARE_SEEDS)
            took = 1 - with_probes / max(bare, 1e-9)
            x["rate_mbps"] = probed * bare / max(with_probes, 1e-9)
        x["wifi"]["shared"] = {"idle_spread_ms": spread, "others": others, "alone_mbps": mac_mbps,
                               "probed_mbps": probed, "probes_took": took}
        if idle_saw:
            seen = (f"the idle probes waited {spread:.3g} ms at the median beyond their least, more than a full "
                    f"aggregate ({WIFI_AGGR_MS:g} ms)")
        else:
            x["wifi"]["shared"].update(lone_fill_mbps=lone, fill_mbps=got)
            seen = (f"the fill's {x.get('flows', 4)} {x.get('load_cc', 'cubic')} flows got {got:.4g} Mbit/s where the "
                    f"model of this station alone on the hop gives them {lone:.4g} over the same fill, more than "
                    f"{WIFI_LONE_FILL_MARGIN:g}x (the idle probes, {spread or 0:.3g} ms beyond their least, passed "
                    f"while the others' downloads left the medium idle)")
        x["limiter_note"] += (f"; other stations used the medium: {seen}: the rate is this station's share while "
                              f"they did ({x['rate_mbps']:.4g} of the {mac_mbps:.4g} Mbit/s a lone station gets: "
                              f"{others} other busy station(s) in the twin" + (
                                  f"; the loads read {probed:.4g} beside their own echo probes every "
                                  f"{probe_ms:g} ms, which take {took:.0%} of this "
                                  f"station's share in the twin)" if probe_ms else ")"))
        if not idle_saw:
            _wired_behind_the_hop(x, wired, wired_alts, lone, got)
        return
    _at_least_the_macs(x, mac_mbps, phy)


def _wired_behind_the_hop(x: dict, wired: str | None, wired_alts: list | None, lone: float, got: float) -> None:
    """A WiFi hop read as shared (``x``: the down direction, now ``wifi``) on the fill's deficit alone — its flows
    got ``got`` Mbit/s where the model of this station alone on the hop carries that fill at ``lone``, and the idle
    probes saw no other station — names what the flows' evidence read before the hop was (``wired``, with its own
    alternatives ``wired_alts``) as an alternative: a wired limiter behind the hop, slower than what the lone hop
    passes (``lone`` / :data:`WIFI_LONE_FILL_MARGIN`, the deficit the shared reading needs), holds the fill to its
    rate with the medium as idle, which is the same evidence (``rate_below_mbps``). Campaign seed 146 path 11: a
    4.9-Mbit/s policer behind an fq AP at MCS 1 with no other station; the fill 4.59 Mbit/s where a lone station's
    gets 9.39, the idle probes 0.27 ms beyond their least: read `wifi` with one other busy station, the flows' own
    evidence `policer`. The first alternative is the verdict, as everywhere (:func:`classify.alternatives`)."""
    bound = lone / WIFI_LONE_FILL_MARGIN
    alts = [a for a in (wired_alts or [{"limiter": wired}]) if a.get("limiter") not in (None, "wifi")]
    if not alts:
        return
    kinds = list(dict.fromkeys(a["limiter"] for a in alts))

    def why(kind: str) -> str:
        return (f"or a wired {kind} behind the hop holds the flows to their {got:.4g} Mbit/s, below the {bound:.4g} a "
                f"lone station's fill would have passed: the same deficit with the medium idle, not told apart (the "
                f"flows' own evidence read {wired})")

    x["limiter_alternatives"] = [{"limiter": "wifi"}] + [
        dict({k: v for k, v in a.items() if k != "why"}, rate_below_mbps=bound, why=why(a["limiter"])) for a in alts]
    x["limiter_note"] += "; " + why(" or ".join(kinds))


def _legacy_by_model(x: dict, phy: float, base_ms: float, air: float | None, got: float | None) -> tuple[bool, str | None]:
    """Whether a lone station's WiFi hop that :func:`wifi_design` read as mac80211's fq_codel (``airtime``: its
    queue's figures within what CoDel lets stand for an interval and a round trip, where a legacy FIFO that short
    cannot be excluded) is a legacy AP's FIFO, by the model of each design under the fill ``x`` measured (its flows,
    control and length; :func:`isolation.fill_by_model`; ``air`` the airtime AP's, ``got`` what the fill got):
    (legacy, why). Legacy where the airtime AP's model carries that fill below what it got by more than the rate phases' run-to-run spread
    (:data:`classify.RATE_SPREAD`), while a legacy AP whose FIFO is as deep as the flows' queue stood (the depth a
    wired FIFO's reading takes, :func:`buffer_reading`: a full FIFO is where a loss-based fill stands) carries at
    least what it got and nearer than the airtime one. The second condition decides: at a long RTT the model can
    under-read the kernel's CUBIC behind CoDel (seed 128 path 22, an airtime AP at MCS 14 and 362 ms: its model
    0.86x the fill), but a FIFO of the few tens of ms such a queue stands in starves the fill (0.47x there), where a
    legacy AP's full FIFO carries it. Campaign seed 125 path 19 (a legacy AP at MCS 12, 1.68 MB, 519 ms): 4 CUBIC
    flows got 53.9 Mbit/s with their queue at 130 / 226 ms (median / p95); the airtime model 44.5 (0.83x), a
    1.52-MB FIFO 58.1 (1.08x); its twin's CUBIC 21.1 → 35.1 Mbit/s (p95 532 → 672 ms) for the kernel's 34.2 / 665.
    Checked on hops not looked at while writing it (docs/advise.md "A legacy AP by the model")."""
    if air is None or not got or air >= (1 - RATE_SPREAD) * got:
        return False, None
    q95 = x.get("fill_flow_q95_ms", x["evidence"]["flow_q95_ms"])
    win = x.get("buffer_window") or {}
    buf = buffer_reading(q95, x["rate_mbps"], x.get("flows", 4), base_ms, win.get("overflowed"),
                         queue_max_ms=win.get("queue_max_ms"))["buffer_bytes"]
    if not buf:
        return False, None
    fifo, _ = fill_by_model(x, _lone_hop(phy, "legacy", base_ms, int(buf)))
    if fifo is None or fifo < (1 - RATE_SPREAD) * got or abs(fifo / got - 1) >= abs(air / got - 1):
        return False, None
    return True, (f"the model of an airtime AP carries the fill's {x.get('flows', 4)} {x.get('load_cc', 'cubic')} flows "
                  f"at {air:.4g} Mbit/s where they got {got:.4g}, more than {RATE_SPREAD:.0%} below, and a legacy AP's "
                  f"FIFO as deep as their queue stood ({buf / 1e3:.4g} KB) at {fifo:.4g}: a FIFO, the qdisc above the "
                  f"driver's (legacy, before Linux 4.9)")


def _at_least_the_macs(x: dict, mac_mbps: float, phy: float) -> None:
    """A lone station's WiFi hop (direction ``x``, read ``wifi``) delivers what its MAC does to a backlogged
    station at the PHY rate ``phy`` that way (``mac_mbps``: Path.wifi_rate_mbps, the twin's own figure, which the
    RTT does not change); the flows' rate is a lower bound of it — at a long RTT the AP's CoDel (mac80211's
    20 ms / 100 ms) holds four CUBIC flows below the MAC's rate (campaign seeds 28-30: 12-44 % below at 141-574
    ms, the kernel's own CUBIC lower still; docs/advise.md "The rate goal's misses"). So the rate is the MAC's
    where the flows got less."""
    if mac_mbps <= x["rate_mbps"]:
        return
    x.setdefault("rate_by_cc", {})["wifi_mac"] = mac_mbps
    x.setdefault("rate_from", {})["wifi_mac"] = "the MAC's rate at the measured PHY rate"
    x["limiter_note"] += (f"; the flows got {x['rate_mbps']:.4g} Mbit/s, below what the MAC delivers to a "
                          f"backlogged station at PHY {phy:.3g} Mbit/s ({mac_mbps:.4g}): the hop's rate is the MAC's")
    x["rate_mbps"] = mac_mbps


def _up_hop_rate(x: dict, down: dict, base_ms: float) -> None:
    """The up direction ``x`` that :func:`up_through_the_hop` read as the down direction's lone WiFi hop: its rate
    at least what the MAC delivers to a backlogged station's uploads at the down train's PHY rate
    (:func:`_at_least_the_macs`; four CUBIC uploads, the AP's TCP ACKs contending with them for the medium as
    the station's own do with a download's: within 0.97-1.04 of the down's in the model, wifi_hop's
    ``up_through_the_hop``). Campaign seed 80 path 13 (fq at MCS 7, 75 ms): the up flows got 44.03 Mbit/s, the
    MAC's uploads 49.7 in the model, and the kernel's four CUBIC uploads through the emulated hop 49.6 at 5 ms."""
    hop = x.get("wifi") or {}
    if x.get("limiter") != "wifi" or hop.get("read") != "down" or not hop.get("phy_mbps") or not hop.get("mac"):
        return
    phy = hop["phy_mbps"]
    _at_least_the_macs(x, _lone_hop(phy, hop["mac"], base_ms, down.get("buffer_bytes")).wifi_rate_mbps(direction="up"),
                       phy)


def _lone_hop(phy: float, mac: str, base_ms: float, buffer_bytes: int | None) -> Path:
    """The twin of a WiFi hop with this station alone on it: the PHY rate ``phy`` and the AP's design ``mac`` read,
    over ``base_ms``; a legacy AP's FIFO the one read (``buffer_bytes``), the other designs' queues their own."""
    return Path(base_rtt_ms=base_ms, down_mbps=phy, limiter="wifi", wifi_mac=mac, wifi_phy_mbps=phy,
                buffer_bytes=buffer_bytes if mac == "legacy" else None)


def _down_trains(host: str, port: int, secret: str | None, x: dict, wp: dict, base_ms: float, idle_loss: float, say,
                 lap=lambda name: None, idle_port_mbps: float | None = None, tape: recording.Tape | None = None) -> None:
    """The down direction ``x`` after its loads, read again from packet
    trains, in this order: a WiFi hop (the idle train ``wp``,
    :func:`_wifi_train`); behind a ``policer`` reading the policer's trains
    (:func:`_policer_train`), then a queue in front of the bucket (a tbf,
    :func:`_queue_before_bucket`), a tail no token bucket passes (an AQM,
    :func:`_held_not_policed`), no faster port (:func:`_not_a_policer`) —
    and before those, a paced train that passed whole where no bucket the
    flows' early losses allow could (a shallow FIFO, :func:`_paced_past_the_flows`); then
    behind a ``fifo`` with drops the AQM train (:func:`_aqm_train`); last, a
    ``fifo``'s depth in bytes from a train the FIFO cut, where the flows' figure
    is none in bytes or agrees with it (:func:`_fifo_depth_from_trains`).
    ``lap(name)`` marks where the time went; ``idle_port_mbps`` the port the idle path showed (:func:`_ports`);
    ``tape``: the policer's trains sent before the rate phase (:func:`_policer_trains_first`)."""
    _wifi_train(wp, x, base_ms, say)
    _trains_after_load(host, port, secret, x, base_ms, idle_loss, say, lap, idle_port_mbps, tape)


def _up_trains(host: str, port: int, secret: str | None, x: dict, base_ms: float, idle_loss: float, say,
               lap=lambda name: None, idle_port_mbps: float | None = None, tape: recording.Tape | None = None) -> None:
    """The up direction ``x`` after its loads, read again from packet trains
    this host sends up (``udp train --up``: the server stamps their
    arrivals) as the down direction is from the server's
    (:func:`_trains_after_load`), each at most :data:`TRAIN_S` of the
    measured rate (:func:`train_count`); not behind a WiFi hop the down
    train read (``up_through_the_hop``: the up flows through the same hop).
    Where a server predates up trains the direction keeps its flows' reading,
    and :func:`trains.untrained_aqm` names what a train would have told; ``tape`` as :func:`_down_trains`'s."""
    if x["limiter"] == "wifi":
        return
    _trains_after_load(host, port, secret, x, base_ms, idle_loss, say, lap, idle_port_mbps, tape)


def up_left_open(x: dict) -> None:
    """What the up direction ``x``'s trains (:func:`_up_trains`) leave open, named beside its verdict: a FIFO
    behind this host's own first hop where a train's tail read a single-queue AQM (:func:`trains.up_first_hop`);
    a single-queue AQM where no AQM train went up, or where the one that went, shortened to :data:`TRAIN_S` of
    the rate (fewer than the probe's :data:`AQM_TRAIN_PACKETS`), read a FIFO (:func:`trains.untrained_aqm`):
    at 0.34 Mbit/s behind CoDel the flows stood in 555 ms and 52 packets built 1.9x that, short of the
    AQM_BURST_RATIO x a reading needs (campaign seed 69 path 17), where the down train's 1000 would have built 21x."""
    up_first_hop(x)
    t = x.get("aqm_train")
    if t is None:
        untrained_aqm(x)
    elif t.get("sent", AQM_TRAIN_PACKETS) < AQM_TRAIN_PACKETS:
        untrained_aqm(x, f"the AQM train sent up was {t['sent']} packets ({TRAIN_S:g} s of the rate, not the "
                         f"probe's {AQM_TRAIN_PACKETS}): a FIFO at the flows' depth or a single-queue AQM (CoDel, PIE) "
                         f"holding it there, not told apart")


def _trains_after_load(host: str, port: int, secret: str | None, x: dict, base_ms: float, idle_loss: float, say,
                       lap=lambda name: None, idle_port_mbps: float | None = None,
                       tape: recording.Tape | None = None) -> None:
    """:func:`_down_trains` but the WiFi hop's, along either direction (``x["direction"]``); ``idle_port_mbps``: the
    direction's port as the idle path showed it (:func:`_ports`); the policer's trains sent before the rate phase
    (``tape``, :func:`_policer_trains_first`) are read again, not sent again."""
    if x["limiter"] == "policer":
        if tape is None:
            _policer_train(host, port, secret, x, say, idle_loss, idle_port_mbps)
        else:
            # sent before the rate phase and said then: read again at the direction's rate (a train it asks
            # otherwise than then is sent), not sent again
            with recording.session(recording.Rewind(tape, recording.active())):
                _policer_train(host, port, secret, x, lambda *a, **k: None, idle_loss, idle_port_mbps)
        _paced_past_the_flows(x, base_ms)
        if x["limiter"] == "fifo":
            say(f"  {_way(x)}: {x['limiter_note']}")
        _queue_before_bucket(x, base_ms)
        _held_not_policed(x, idle_loss)
        _not_a_policer(x, base_ms)
        lap("policer_train")
    _isolation_train(host, port, secret, x, say, idle_loss, base_ms)
    _aqm_train(host, port, secret, x, say, idle_loss, base_ms)
    _fifo_depth_from_trains(x, base_ms)
    lap("aqm_train")


def measure(host: str | None, quick: bool = False, flows: int = 4, up: bool = True, secret: str | None = None,
            show: bool = True, record: str | None = None, replay: str | None = None) -> Measurement:
    """Measure the path to ``host`` (``HOST[:PORT]``). ``record``: keep every probe run in that directory
    (:mod:`.recording`); ``replay``: measure from such a recording instead of the network — its host and options
    are the recording's (``host``, ``quick``, ``flows``, ``up`` are not read), and the report says what was served
    (``replay``)."""
    if record is not None and replay is not None:
        raise UserError("measure: --record or --replay, not both (a replay sends nothing to record)")
    if replay is not None:
        s = recording.Replayer(replay)
        o = s.head["options"]
        host, quick, flows, up = f"{s.host}:{s.port}", bool(o.get("quick")), int(o.get("flows", 4)), bool(o.get("up", True))
        # the recorded arguments carry "{secret}" where there was one: any placeholder matches it
        secret = "{secret}" if o.get("secret") else None
        if show:
            print(f"replaying {replay} (recorded {s.head.get('started', '?')} by bloatlab {s.head.get('bloatlab', '?')}): "
                  f"nothing is sent", flush=True)
    if host is None:
        raise UserError("measure: HOST is needed (or --replay DIR)")
    h, port = _split_host(host)
    if not 1 <= flows <= 64:
        raise UserError(f"--flows: expected 1..64, got {flows}")
    # what this host's interface towards the server is (a WiFi hop in front of the line, wifi_hop.front_hop): a
    # recording keeps it, a replay takes the recording's
    first_hop = (s.head["options"].get("first_hop") if replay is not None else first_hop_kind(h))
    if record is not None:
        s = recording.Recorder(record, h, port, {"quick": quick, "flows": flows, "up": up, "secret": bool(secret),
                                                 "first_hop": first_hop})
    elif replay is None:
        s = recording.Live()
    try:
        with recording.session(s):
            m = _measure(h, port, quick, flows, up, secret, show, first_hop)
    finally:
        done = s.close()
    if done is not None:
        m.report["replay"] = done
    return m


#: The slow probes that tell a server not there from an idle path whose round trip is beyond the first probes'
#: 1-s timeout (:func:`_no_idle_echo`): this many, this far apart, each waited for this long. A legacy access point's
#: one FIFO that another station's download keeps full holds every packet for its depth at the shared rate: campaign
#: seed 138 path 3, a 1.68-MB FIFO behind a station at MCS 3, answered none of 100 probes within 1 s. Five seconds is
#: the longest round trip a reading can wait for and still end within the quick measurement's budget
SLOW_ECHO_PROBES, SLOW_ECHO_INTERVAL_MS, SLOW_ECHO_TIMEOUT_S = 20, 50, 5


def _no_idle_echo(h: str, port: int, secret: str | None) -> None:
    """The first idle probes came back from nowhere: a few more, waited for :data:`SLOW_ECHO_TIMEOUT_S` each, tell a
    server that is not there from a path that held them; a UserError that says which."""
    args = ["udp", "client", h, "-p", str(port), "--count", str(SLOW_ECHO_PROBES), "--interval",
            f"{SLOW_ECHO_INTERVAL_MS}ms", "--timeout", f"{SLOW_ECHO_TIMEOUT_S}s", "--give-up", f"{SLOW_ECHO_TIMEOUT_S + 1}s"]
    slow = _probe(args + (["--secret", secret] if secret else []), timeout=4 * SLOW_ECHO_TIMEOUT_S)
    pr = (slow.get("probes") or [{}])[0]
    p50 = (pr.get("rtt_ms") or {}).get("p50")
    if p50 is not None and pr.get("loss", 1.0) < 1.0:
        raise UserError(f"measure: {h}:{port} answers, but its idle round trip is {p50 / 1e3:.3g} s (the median of "
                        f"{SLOW_ECHO_PROBES} slow probes, {pr.get('loss', 0.0):.0%} lost within {SLOW_ECHO_TIMEOUT_S} s; "
                        f"none of the first {IDLE_FIRST} came back within 1 s): a queue that other traffic keeps "
                        f"full (another host's download through a shared access point or link) holds every packet; "
                        f"measure reads the path from its idle round trip: measure again while that traffic pauses")
    raise UserError(f"measure: no UDP echo from {h}:{port} within {SLOW_ECHO_TIMEOUT_S} s (is `bloatlab-probe server` "
                    f"running there? if it is, the path drops every probe)")


def _measure(h: str, port: int, quick: bool, flows: int, up: bool, secret: str | None, show: bool,
             first_hop: str | None = None) -> Measurement:
    t0 = _now()
    # wall time per phase (s), in the report as ``phases_s``: where measure's time goes (docs/advise.md)
    phases: dict[str, float] = {}
    lap_at = [t0]

    def lap(name: str) -> None:
        now = _now()
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
        _no_idle_echo(h, port, secret)
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
    wp = _wifi_probe(h, port, secret, say, rt_loss)
    marks = {"wifi_train": (lap_at[0] - t0)}  # when each down reading was taken (capacity_levels)
    lap("wifi_train")
    marks["wifi_train"] = (marks["wifi_train"] + lap_at[0] - t0) / 2
    wifi = wp["phy_mbps"] is not None
    li = report["loss_idle"]
    base["p50"] -= ser or 0.0  # the base RTT the stream's plan reads (the serialization out; the floor below)
    # the rest of the idle probes, beside the loss stream where there is one (IDLE_PROBES)
    # the download's rate the stream's plan weighs the loss at: the idle train's head (plan.loss_stream_plan)
    lead = (wp["train"] or {}).get("leading_mbps")
    stream = loss_stream_plan(li["lost"], li["sent"], ser, base["p50"], wifi, quick, lead)[0] is not None
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
    _loss_stream(h, port, secret, report, ser, wifi, quick, say, beside=rest if more else None, down_mbps=lead)
    lap("loss_stream")
    marks["down"] = lap_at[0] - t0
    if more:
        x = np.asarray(series, float)
        x = x[np.isfinite(x)]
        if x.size:
            base["min"], base["p50"] = float(x.min()), float(np.median(x)) - (ser or 0.0)
    if ser is not None:
        base["serialization_ms"] = ser
        base["p50"] = max(base["p50"], 0.01)
        base["min"] = max(base["min"] - ser, 0.01)
    # how many idle probes the least was taken over (_others_aggregates reads as many in the twin)
    base["probes"] = int(np.isfinite(np.asarray(series, float)).sum()) if len(series) else None
    idle_loss = report["loss"]
    say(f"  base RTT {base['p50']:.2f} ms, idle loss {idle_loss * 100:.2g} % each way")
    ports = report["ports_mbps"] = _ports(wp["train"], ser)
    # where the random loss holds CUBIC below the port, a direction's phases both use BBR, which does not read random
    # loss as congestion (plan.fill_plan); the buffer then reads low (BBR holds about one BDP in flight beyond the
    # pipe) and is reported as such. The ports' lower bounds: down, the idle train's head (the server's pace where it
    # was slower); up, the port the serialization and that head show, else the serialization's own rate (1/R =
    # 1/down + 1/up: up is at least R). Not through a WiFi hop (the train's head is its PHY rate, not the line's)
    lower = {"down": lead, "up": ports["up"] or (serialization_rate_mbps(ser) if ser else None)}
    wp["idle_spread_ms"] = base["p50"] - base["min"]  # (_wifi_train: other stations on a WiFi hop)
    # a WiFi hop in front of the line, the idle probes' channel accesses (wifi_hop.front_hop, which _front_hop reads
    # again for the twin once the directions are read), where the train read no hop of its own (a hop that holds
    # the queue: its aggregates are then the bottleneck's backlog)
    hop = not wifi and front_hop(wp["idle_spread_ms"], first_hop, 0.0)[0] is not None
    dirs = ("down", "up") if up else ("down",)
    tapes: dict[str, recording.Tape] = {}
    for d in dirs:
        after = max((report["down"]["evidence"]["flow_q95_ms"], report["down"]["fill_flow_q95_ms"])) if d == "up" else 0.0
        lossy, why_lossy = fill_plan(idle_loss, report["loss_counts"]["lost"], report["loss_counts"]["sent"],
                                     None if wifi or hop else lower[d], flows, base["p50"])
        # a fill read as a policer's: its trains before the rate phase (_policer_trains_first), kept in tapes[d] for
        # the trains after the loads; not where the idle train read a WiFi hop, which may be the limiter (_wifi_train;
        # a hop in front of the line is not)
        def early(pre, d=d):
            tapes[d] = _taped_policer_trains(h, port, secret, pre, wp, say, report["loss"], ports[d])
        x = report[d] = _direction(h, port, d, flows, base["p50"], secret, quick, lossy, report["loss"], say, after,
                                   ports[d], ports["up" if d == "down" else "down"], ser or 0.0, wifi, hop,
                                   None if wifi else early)
        x["load_cc_why"] = why_lossy
        for k, v in x["phases_s"].items():
            phases[f"{d}_{k}"] = v
        lap_at[0] += sum(x["phases_s"].values())
        lap(f"{d}_other")
        say(f"  {d}: {x['rate_mbps']:.4g} Mbit/s, +{x['added_delay_ms']:.1f} ms under load, limiter {x['limiter']}")
        loaded_reading = x["limiter"]
        if d == "down":
            # the idle path's train as the fill met it: the loss stream's phase (and the idle probes' rest) between
            x["wifi_train_before_fill"] = wifi_train_before_fill(wp["train"], phases.get("loss_stream", 0.0), base["p50"])
            trains_from = lap_at[0] - t0
            _down_trains(h, port, secret, x, wp, base["p50"], report["loss"], say, lap, ports[d], tapes.get(d))
            marks["after_fill"] = (trains_from + lap_at[0] - t0) / 2
            capacity_levels(x, marks)
        else:
            # the down's WiFi hop where the up flows got its rate, else the trains sent up; where none could be
            # (a server that predates them), what the AQM train would have told stays named
            up_through_the_hop(x, report["down"])
            _up_hop_rate(x, report["down"], base["p50"])
            _up_trains(h, port, secret, x, base["p50"], report["loss"], say, lambda name: lap(f"up_{name}"), ports[d],
                       tapes.get(d))
            up_left_open(x)
        isolation_unseen(x, LOAD_PROBE_INTERVAL_MS)
        policer_keeps_the_flows_rate(x)
        rate_from_drained_tail(x, report["loss"], say, wp["idle_spread_ms"])
        _cobalt(x)
        if x["limiter"] != loaded_reading:
            # the line above said the loaded phases' reading; the packet trains after them may change it
            say(f"  {d}: limiter {x['limiter']} after the packet trains (the load alone read {loaded_reading})")
        if x.get("aqm_qdisc") == "cake":
            say(f"  {d}: cake (COBALT's first signal ended the fill's slow starts)")
        if ((x.get("wifi") or {}).get("shared")):
            report.setdefault("warnings", []).append(
                f"{d}: other stations were using the WiFi medium ("
                + (f"the fill got {x['wifi']['shared']['fill_mbps']:.4g} Mbit/s, the model of this station "
                   f"alone {x['wifi']['shared']['lone_fill_mbps']:.4g}"
                   if x["wifi"]["shared"].get("lone_fill_mbps") is not None else
                   f"the idle probes waited {x['wifi']['shared']['idle_spread_ms']:.3g} ms at the median")
                + "): the rate is this station's share "
                f"then; the twin gives {x['wifi']['shared']['others']} other station(s) a backlogged download at this "
                f"station's PHY rate (their real rates and traffic were not seen), and this station gets more when "
                f"they are quiet")
        for short in x.get("server_short", []):
            who = "this host" if d == "up" else "the server"
            report.setdefault("warnings", []).append(
                f"{d}: {short}: {who} is short of CPU (or of its NIC), and the figures that rest on its packet "
                f"trains fall back on the flows'; measure again when {who} is idle")
        if (x.get("evidence") or {}).get("probes_lost") is not None:
            report.setdefault("warnings", []).append(
                f"{d}: {x['evidence']['probes_lost']:.0%} of the probes under load were lost beside the flows (a queue "
                f"of a few packets kept full, or UDP dropped under load): the loaded RTT and the queue are the flows' "
                f"own smoothed RTT, and whether the queue isolates flows is not seen")
        for prob in x["problems"]:
            report.setdefault("warnings", []).append(f"{d}: a load phase ended with a problem ({prob}); its flows' "
                                                     f"figures until then are kept")
        if not x["saturated"]:
            report.setdefault("warnings", []).append(
                f"{d}: no queue and no drops under load — the bottleneck is not on the path but here (CPU, NIC, "
                f"or a path faster than {flows} flows fill): the rate is a lower bound, the buffer unknown")
    _front_hop(report, first_hop, say)
    serialization_capped(report, say)
    _others_aggregates(report, say)
    isolation_after(report, say)
    # a policer's port FIFO a train's one-way delays read full, for a reading that became a policer after the
    # policer's trains (_isolation_train, _aqm_train: their own trains); _policer_train read it for the rest
    port_fifo_from_delays(report["down"])
    # a policer's bucket no train read: the least under which the model carries the fill at its measured rate
    bucket_by_model(report["down"], twin_of(report), RATE_ERROR)
    # ... and its port's FIFO no train read, where the model carries the fill far beyond what it got
    port_buffer_by_model(report["down"], twin_of(report))
    # a FIFO behind a token bucket the idle train passed at a faster port (a tbf)
    bucket_before_fifo(report["down"], wp["train"])
    if report["down"].get("bucket_note"):
        say(f"  down: {report['down']['bucket_note']}")
    lap("other")
    report["elapsed_s"] = _now() - t0
    report["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
    path = twin_of(report)
    report["twin"] = path.as_dict()
    return Measurement(path, report)


def isolation_after(report: dict, say=lambda m: None) -> None:
    """A down direction read as a single-queue AQM where the flows' ACK wait may hide flow isolation: the model of
    each AQM under the measurement's own load decides (:func:`isolation.isolation_by_model`), once both directions
    are read (the model takes the up direction as read); an isolation reading then reads CAKE as any does
    (:func:`classify._cobalt`). A direction the rules read isolated is checked by the same models where the probe's
    ramp is there (:func:`isolation.isolation_checked_by_model`), and so is one read as a FIFO, beside the FIFO's
    own model (:func:`isolation.fifo_checked_by_model`)."""
    x = report["down"]
    if x.get("limiter") == "aqm" and x.get("aqm_qdisc") in (None, "cake"):
        # isolation the rules read, checked by the same models where the ramp's figure is there
        isolation_checked_by_model(x, twin_of(report))
        if x.get("aqm_qdisc") in ("codel", "pie"):
            say(f"  down: {x['limiter_note']}")
        return
    if x.get("limiter") == "fifo":
        # a FIFO reading, checked by the same models with the FIFO as read beside them
        fifo_checked_by_model(x, twin_of(report))
    elif x.get("aqm_qdisc") in ("codel", "pie"):
        isolation_by_model(x, twin_of(report))
    else:
        return
    if x.get("limiter") == "aqm" and x.get("aqm_qdisc") is None:
        why = x["limiter_note"]
        _cobalt(x)
        # the model's reading stays in the words beside what the first losses say of CAKE
        if x["limiter_note"] != why:
            x["limiter_note"] = f"{why}; {x['limiter_note']}"
        say(f"  down: {x['limiter_note']}")


def first_hop_kind(host: str) -> str | None:
    """What this host's interface towards ``host`` is (:func:`wifi_hop.front_hop`): ``"wifi"`` where it is a
    wireless one (``/sys/class/net/DEV/wireless`` or ``phy80211``), ``"wired"`` where it is another with a device
    behind it (a NIC), None where it is virtual (a namespace's veth or TUN, a bridge, loopback) or the route cannot
    be read (``ip -j route get``)."""
    try:
        ip = socket.getaddrinfo(host, None)[0][4][0]
        out = subprocess.run(["ip", "-j", "route", "get", ip], capture_output=True, text=True, timeout=2)
        dev = json.loads(out.stdout)[0]["dev"]
    except (OSError, ValueError, KeyError, IndexError, subprocess.SubprocessError):
        return None
    base = os.path.join("/sys/class/net", os.path.basename(dev))
    if os.path.exists(os.path.join(base, "wireless")) or os.path.exists(os.path.join(base, "phy80211")):
        return "wifi"
    return "wired" if os.path.exists(os.path.join(base, "device")) else None


def _front_hop(report: dict, first_hop: str | None, say) -> None:
    """``report["wifi_front"]``: a WiFi hop in front of a wired bottleneck (:func:`wifi_hop.front_hop`), which the
    twin puts the flows and the probe behind (Path.front_wifi_mac); its reason in ``wifi_front_note``. Not where
    the hop is the limiter (read as such), where the idle probes queued (their spread is then a queue's:
    :func:`base_is_least`), or where the down capacity moves (its slots spread the probes: a trace's milliseconds)."""
    d, base = report["down"], report["base_rtt_ms"]
    if d["limiter"] == "wifi" or d.get("variable") or base_is_least(report):
        return
    hop, why = front_hop(base["p50"] - base["min"], first_hop, d["rate_mbps"])
    report["wifi_front_note"] = why
    if hop is not None:
        report["wifi_front"] = hop
        say(f"  {why}")


def serialization_capped(report: dict, say=lambda m: None) -> None:
    """The idle probes' serialization taken out of the base RTT (``base_rtt_ms.serialization_ms``, the slope of the
    least RTT against the probe's size: :func:`physics.serialization_ms`) at most what a small probe and its echo
    take at the rates the path carried each way (:func:`physics.serialization_at_ms`): a port carries at least its
    direction's rate, so a larger slope is not the probes' size but their wait — the 20 large probes' least behind
    traffic the small probes' least slipped past. Behind a legacy access point beside another busy station (campaign
    seed 182 path 6: 15.1 / 11.7 Mbit/s, 76.1 ms) the small probes' least found the AP's shared FIFO empty (76.5
    ms) and every large probe waited behind the other station's standing queue (160.3 ms at least), a slope of
    5.77 ms for the small probe where the rates allow 0.11: the base RTT read 70.8 ms, below the propagation. The
    excess goes back into the base RTT (its least and median), the figure read kept (``serialization_read_ms``).
    Not where the up direction was not read (its port is then unbounded) nor where either direction's capacity
    moved (a port slower while the large probes crossed it than its rate over the fill).

    Only here, once both directions' rates are read: until then nothing bounds the up port from below. The loaded
    phases read the base as it stood; their probe's queueing (less the least and the serialization, both taken
    together) does not move with it, their flows' (smoothed RTT less the base) stands higher by the excess, which
    is left as read there (seed 182 path 6: 5.7 ms of the flows' 263-ms p95 behind a legacy AP)."""
    base, d, u = report["base_rtt_ms"], report["down"], report.get("up")
    ser = base.get("serialization_ms")
    if not ser or u is None or d.get("variable") or u.get("variable") or not d.get("rate_mbps") or not u.get("rate_mbps"):
        return
    cap = serialization_at_ms(d["rate_mbps"], u["rate_mbps"])
    if ser <= cap:
        return
    back = ser - cap
    base.update(min=base["min"] + back, p50=base["p50"] + back, serialization_ms=cap, serialization_read_ms=ser)
    say(f"  base RTT: the large probes' slope gave the small ones {ser:.3g} ms of serialization, more than the "
        f"{cap:.2g} ms they take at the rates the path carried ({d['rate_mbps']:.4g} / {u['rate_mbps']:.4g} Mbit/s): "
        f"the large ones waited behind other traffic; {back:.3g} ms back into the base RTT: {base['min']:.2f} ms")


def _others_aggregates(report: dict, say) -> None:
    """Beside other busy stations on a WiFi hop whose AP queues each station apart (wifi_hop.PER_STATION_MACS) the
    idle probes' least still waited for the others' aggregates: ``base_rtt_ms.others_wait_ms``, what the twin's own
    MAC gives a sparse probe's least there (wifi_hop.others_least_wait_ms), which the twin's base RTT leaves out
    (:func:`twin_of`). Not behind a legacy AP (its one FIFO's standing queue is not the twin's to give), nor where
    the idle probes were not counted (a report read back from before they were)."""
    shared = (report["down"].get("wifi") or {}).get("shared")
    base = report["base_rtt_ms"]
    mac = report["down"]["wifi"].get("mac") if shared else None
    if not shared or mac not in PER_STATION_MACS or not base.get("probes"):
        return
    w = others_least_wait_ms(twin_of(report), base["probes"], IDLE_INTERVAL_MS)
    base["others_wait_ms"] = w
    say(f"  base RTT: the least of the idle probes waited ~{w:.2g} ms for the other stations' aggregates (the twin's "
        f"MAC beside its {shared.get('others')} other station(s)): {max(base['min'] - w, 0.01):.2f} ms")


def base_is_least(report: dict) -> str | None:
    """Why the twin's base RTT is the idle probes' least rather than their median (None where it is the median).
    - *Other stations on a shared WiFi medium* (``down.wifi.shared``): the median waited behind them, and the twin
      runs them (Path.wifi_others).
    - *The probes queued*: their median lies above their least by more than their own serialization
      (``base_rtt_ms.serialization_ms``, what one probe and its echo take at the ports) and by more than the
      accuracy the base RTT is read to (issue 30's 5 % or 1 ms, path.BASE_RTT_GOAL_SHARE / _MS). Timing noise
      moves an idle probe by a fraction of that (over the 187 fixed-rate, single-station paths of campaign seeds
      52-56 the spread's median is 0.044 ms, its 99th percentile 0.28 ms); a wider one is waiting behind
      something — a capacity that moved under the probes (a trace the twin replays where it reads one), a slow
      link the probes themselves load. Seed 56 path 20 (Starlink-like, 7.6 Mbit/s down / 0.81 up, 16.8 ms):
      least 17.11, median 19.14 ms (spread 2.03, serialization 0.94); path 39 (1.0 / 0.38 Mbit/s, 179.8 ms):
      180.51 and 193.70 (spread 13.19, serialization 2.04). The propagation is the least; the median is not
      what the flows meet either: their own queue is the twin's to build."""
    from .path import BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE

    if (report["down"].get("wifi") or {}).get("shared"):
        return "the median waited behind other stations"
    base = report["base_rtt_ms"]
    spread = base["p50"] - base["min"]
    if spread > max(base.get("serialization_ms") or 0.0, BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE * base["min"]):
        return f"the idle probes queued: their median {spread:.3g} ms above their least"
    return None


def twin_of(report: dict) -> Path:
    """The twin of a measurement's report (``measure``'s ``report``: its base RTT and directions, the up direction
    where it was measured)."""
    d, base = report["down"], report["base_rtt_ms"]
    up = report.get("up") is not None
    u = report["up"] if up else {"limiter": None}
    shared = (d.get("wifi") or {}).get("shared") or {}
    least = base_is_least(report)
    # beside other stations, less what the least waited for their aggregates (_others_aggregates)
    return Path(base_rtt_ms=max((base["min"] - base.get("others_wait_ms", 0.0)) if least else base["p50"], 0.01),
                # the spread the ensemble spans: none where the twin runs the other stations themselves; the
                # goal's accuracy where the probes queued (their spread is not the path's uncertainty)
                base_rtt_spread_ms=0.0 if shared else None if least else max(base["p50"] - base["min"], 0.0),
                down_mbps=d["rate_mbps"], up_mbps=report["up"]["rate_mbps"] if up else None,
                buffer_bytes=_twin_buffer(d), loss=min(report["loss"], 0.49), limiter=d["limiter"],
                # where it read none, how much it could not exclude (the words say "no random loss seen")
                loss_upper=report.get("loss_upper") if not report["loss"] else None,
                up_buffer_bytes=_twin_buffer(report["up"]) if up else None,
                up_port_mbps=u.get("port_mbps") if u["limiter"] == "policer" else None,
                up_bucket_bytes=u.get("bucket_bytes") if u["limiter"] == "policer" else None,
                port_mbps=d.get("port_mbps"), bucket_bytes=d.get("bucket_bytes"), aqm_qdisc=d.get("aqm_qdisc"),
                port_buffer_bytes=d.get("port_buffer_bytes") if d["limiter"] == "policer" else None,
                wifi_mac=(d.get("wifi") or {}).get("mac"), wifi_phy_mbps=(d.get("wifi") or {}).get("phy_mbps"),
                wifi_others=shared.get("others", 0),
                front_wifi_mac=(report.get("wifi_front") or {}).get("mac"),
                front_wifi_phy_mbps=(report.get("wifi_front") or {}).get("phy_mbps"),
                # what the down reading could not be told apart from: advise checks its advice on each
                alternatives=[a for a in d.get("limiter_alternatives") or []
                              if not is_the_reading(a, d["limiter"], d.get("aqm_qdisc"))] or None,
                **_variation_fields(report))
