"""A path model and its twin scenario.

The model holds what a measurement can learn of a path (docs/advise.md): the
base RTT, the bottleneck rate per direction, the bottleneck buffer, random
loss, and what enforces the rate (``fifo``: a queue that fills; ``policer``:
drops beyond a rate with little queueing; ``aqm``: a queue held near a
target; ``wifi``: a WiFi hop, the access point's MAC design and the
station's PHY rate). :meth:`Path.twin` writes it as a scenario that both
engines run.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import tomllib
from dataclasses import asdict, dataclass, replace

from .. import units
from ..errors import UserError
from .physics import WIRE_SEGMENT

LIMITERS = ("fifo", "policer", "aqm", "wifi")
#: the access point's MAC designs (docs/wifi.md)
WIFI_MACS = ("legacy", "fq", "airtime")
#: the frames a legacy access point's driver holds below its qdisc (ath9k ATH_MAX_QDEPTH, crates/core/src/wifi/mac.rs
#: LEGACY_DRIVER_FRAMES): a queue measured behind a legacy AP is the qdisc's and these; the twin's qdisc gets the rest
LEGACY_DRIVER_FRAMES = 123
#: issue 30's accuracy goal for a measured base RTT: within this share of it or :data:`BASE_RTT_GOAL_MS`, whichever
#: is larger (measure's idle stopping rule, the advisor's ensemble span, the campaign's verdict)
BASE_RTT_GOAL_SHARE = 0.05
BASE_RTT_GOAL_MS = 1.0
#: A shaper just below the line rate moves the queue into the user's AQM; 95 %
#: is the usual advice for CAKE/SQM (OpenWrt's SQM guide: 85-95 %). advise shapes
#: there; measure reads a capacity as variable against it.
SHAPE_FRACTION = 0.95
#: the burst of the user's fq_codel shaper (ms of its rate): OpenWrt's SQM (sqm-scripts' simple.qos) shapes fq_codel
#: with HTB whose burst is ``SHAPER_BURST_DUR_US`` = 1000 us of the rate, at least one MTU (defaults.sh,
#: functions.sh ``get_htb_burst``). The scenario's own shaper default, a tbf's 10 ms, let 10 ms of the rate leave at
#: the wire's speed, and where the wire was barely faster than the shaper the burst queued after fq_codel, out of its
#: sight: the same twin delivered 109, 149 or 115 Mbit/s as the wire went 197, 203 or 207 Mbit/s under a 193-Mbit/s
#: shaper (seed 49 path 49, CUBIC at 147 ms), 388-392 or 297-303 from 544 to 560 Mbit/s under 516 (path 21); at 1 ms
#: 387-388 at every wire rate from 530 Mbit/s to 5.4 Gbit/s
USER_SHAPER_BURST_MS = 1.0


def user_shaper_burst(shaper_mbps: float) -> int:
    """The burst (B) of the user's fq_codel shaper at ``shaper_mbps``: :data:`USER_SHAPER_BURST_MS` of it, at least
    one MTU (1514 B with its Ethernet header, as sqm-scripts' ``get_burst``)."""
    return max(int(shaper_mbps * 1e6 / 8 * USER_SHAPER_BURST_MS / 1e3), 1514)


def token_bucket(rate_mbps: float, bucket_bytes: float | None) -> dict:
    """A token bucket element of a link (the scenario's ``policer`` or ``shaper``): its rate and, where one was
    measured, its bucket (the scenario's default burst otherwise)."""
    tb = {"rate": f"{rate_mbps:.6g}Mbit"}
    if bucket_bytes:
        tb["burst"] = f"{int(bucket_bytes)}B"
    return tb


def path_aqm(kind: str) -> dict:
    """The keys of a link direction whose bottleneck is the single-queue AQM ``kind`` (``codel``, ``pie``) of a
    path people have: one that has run long before any flow of theirs comes (an ISP's PIE for days), so PIE's
    probability update fires every tupdate from the run's start (the qdisc's ``running`` parameter,
    crates/core/src/qdisc/pie.rs), not first HZ/2 after the run created it — 500 ms in which a slow start meets
    only the packet limit (4 CUBIC flows at 11.3 Mbit/s: 56-59 ms at the peak, 42 ms behind a PIE already
    running; docs/advise.md). CoDel keeps no timer: its state is the packets'. Linux's defaults otherwise, the
    AQM's own packet limit (the direction's buffer is not used)."""
    return {"qdisc": kind, **({"qdisc_params": {"running": True}} if kind == "pie" else {})}


def user_shaped(qdisc: str, shaper_mbps: float) -> dict:
    """The keys of a link direction for the user's AQM shaped at ``shaper_mbps`` on a router, as it is deployed:
    CAKE with its own deficit shaper (tc-cake ``bandwidth``: each packet leaves at its time, no bucket to burst
    from), fq_codel behind an HTB-like token bucket of :data:`USER_SHAPER_BURST_MS` (sqm-scripts)."""
    if qdisc == "cake":
        return {"qdisc": "cake", "qdisc_params": {"bandwidth": f"{shaper_mbps:.6g}Mbit"}}
    return {"qdisc": qdisc, "shaper": {"rate": f"{shaper_mbps:.6g}Mbit", "burst": f"{user_shaper_burst(shaper_mbps)}B"}}


def is_the_reading(alt: dict, limiter: str, aqm_qdisc: str | None) -> bool:
    """Whether a named alternative (measure's ``limiter_alternatives``) is the reading itself: the same limiter, and
    for an AQM of the kind taken (an AQM of another kind, ``kinds``, is a reading of its own: CoDel or PIE)."""
    return alt.get("limiter") == limiter and (limiter != "aqm" or (alt.get("kinds") or [aqm_qdisc])[0] == aqm_qdisc)


#: cake-autorate's connection-active threshold (defaults.sh ``connection_active_thr_kbps``), 2 Mbit/s: it refuses a
#: minimum rate below it, so a shaper slower than that lowers it (the scenario's ``active_threshold``, docs/scenario.md)
AUTORATE_ACTIVE_MBPS = 2.0


def autorate_doc(min_mbps: float, base_mbps: float, max_mbps: float) -> dict:
    """The scenario's ``autorate`` element: cake-autorate between ``min`` and ``max`` from ``base``, its
    connection-active threshold lowered to ``min`` where ``min`` is below the default (as a user of a slow link sets
    it in the script's config); ``min = base = max`` is CAKE at a fixed rate in front of the link's own queue."""
    lo, mid, hi = (float(f"{r:.6g}") for r in (min_mbps, base_mbps, max_mbps))
    d = {"min": f"{lo:g}Mbit", "base": f"{mid:g}Mbit", "max": f"{hi:g}Mbit"}
    if lo < AUTORATE_ACTIVE_MBPS:
        d["active_threshold"] = d["min"]
    return d


#: the length of a variable twin's capacity trace (s; Mahimahi traces loop): longer than any run advise makes (30 s)
TRACE_SECONDS = 120


#: ... and at least this long where 120 s would not fit the loader's bound on a trace (``files.TRACE_LIMIT``, 16 MiB:
#: ~2 M opportunities, 120 s up to ~130 Mbit/s): advise's longest run, 30 s, which an autorate candidate must not
#: outrun (a trace under autorate does not repeat), with a tenth to spare
TRACE_MIN_SECONDS = 33


def within_trace_limit(rates_bps: list[float]) -> list[float]:
    """The longest head of a capacity per ms whose Mahimahi text fits :data:`files.TRACE_LIMIT` (all of it where it
    fits: the twin's trace loops, so a shorter one is the same process). A Starlink-like capacity at 205 Mbit/s
    (campaign seed 53 path 44) wrote 23.8 MB for 120 s, which ``advise`` then refused to read. At least
    :data:`TRACE_MIN_SECONDS`; a capacity too fast for that is a clear error."""
    import numpy as np

    from .. import files, traces

    # the text's size by the millisecond, without building it (traces.to_mahimahi's credit: the opportunities by
    # ms i are the cumulative bytes over 1500, each a line of ms i's digits and a newline); a thousandth spare
    # for the float sum's rounding against the trace's own
    ops = np.floor(np.cumsum(np.asarray(rates_bps, float) / 8000.0) / traces.OPPORTUNITY_BYTES)
    lines = np.diff(ops, prepend=0.0) * (np.floor(np.log10(np.arange(1, len(ops) + 1))) + 2)
    size = np.cumsum(lines)
    bound = files.TRACE_LIMIT * 0.999
    cut = len(rates_bps) if not len(size) or size[-1] <= bound else int(np.searchsorted(size, bound, side="right"))
    if cut < TRACE_MIN_SECONDS * 1000:
        mean = sum(rates_bps) / max(len(rates_bps), 1) / 1e6
        raise UserError(f"a variable capacity of {mean:.4g} Mbit/s on average: its twin's trace would hold less than "
                        f"{TRACE_MIN_SECONDS} s within the {files.TRACE_LIMIT >> 20}-MiB bound on a trace file")
    return rates_bps[:cut]


#: the twin's station (the measuring host)
WIFI_STATION = "you"
#: the twin's other busy stations on a shared medium (Path.wifi_others), and the most it models
WIFI_OTHERS_STATION = "others"
WIFI_OTHERS_MAX = 8
#: the RTT of the flows that read a WiFi twin's rate (Path.wifi_rate_mbps): 5 ms, so that four CUBIC flows fill
#: the access point's queue within a second at 130 Mbit/s
WIFI_RATE_RTT_MS = 5.0
#: the runs (seeds 1..N) whose mean is a shared hop's share where ``measure`` reads the other stations' count from it
#: (Path.wifi_others_and_share): beside other busy stations one 4-s run's share moves with the seed by 1.6-7.4 %
#: (sd / mean over seeds 1-10, the twins of campaign seeds 185 paths 32, 45 and 186 paths 7, 27, with and without
#: the fill's probes), so eight runs' mean is within ~2.5 % (7.4 / sqrt 8), well inside the steps between counts
#: (one other station more takes a quarter to a half of the share) and the rate's 10 %; a run costs ~0.02 s
WIFI_SHARE_SEEDS = 8
#: HT20 long-GI MCS 0-15 (Mbit/s): crates/core/src/wifi/airtime.rs HT20_MCS
HT20_MCS_MBPS = (6.5, 13, 19.5, 26, 39, 52, 58.5, 65, 13, 26, 39, 52, 78, 104, 117, 130)
#: the twin's port rate behind a policer, as a multiple of the policed rate (an
#: assumption, not a measurement: ISPs police 20-100 Mbit/s plans on 1 Gbit/s
#: ports; any multiple that drains a 10-ms bucket in about a millisecond models
#: the measured "no queue")
POLICER_PORT = 10
#: the least FIFO the twin gives a policer's port where no train read it (:attr:`Path.port_buffer`): two full
#: packets, the floor the scenario language gives a bucket (docs/scenario.md, `policer`'s `burst`; its resolver's
#: `2 * PACKET_BYTES`) — one BDP of a slow policed rate at a short RTT is less than one packet (0.51 Mbit/s at
#: 5.1 ms: 323 B), a FIFO that holds none
PORT_BUFFER_MIN_BYTES = 2 * WIRE_SEGMENT
#: fq_codel's default limit (packets): net/sched/sch_fq_codel.c, q->limit = 10*1024
FQ_CODEL_LIMIT_PKTS = 10240
#: each AQM's target queueing delay (ms) with Linux's defaults, as both engines run them: sch_codel and
#: sch_fq_codel 5 ms (RFC 8289), sch_cake 5 ms (its default rtt of 100 ms / 20), sch_pie 15 ms (RFC 8033,
#: include/net/pie.h pie_params_init; pie.rs)
AQM_TARGET_MS = {"codel": 5.0, "fq_codel": 5.0, "cake": 5.0, "pie": 15.0}

#: DSLReports' bufferbloat grades: added latency under load (ms) -> grade.
GRADES = ((5, "A+"), (30, "A"), (60, "B"), (200, "C"), (400, "D"))


def grade(added_ms: float) -> str:
    for bound, g in GRADES:
        if added_ms < bound:
            return g
    return "F"


def _station_phy_mbps(st: dict) -> float:
    """A resolved ``[[wifi.station]]``'s PHY rate (Mbit/s): a rate given directly, an 802.11b station's DSSS/CCK
    rate (docs/wifi.md), else its HT20 MCS's."""
    return (st["phy_rate_bps"] or st.get("dsss_rate_bps") or HT20_MCS_MBPS[st["mcs"]] * 1e6) / 1e6


@dataclass
class Path:
    base_rtt_ms: float
    down_mbps: float
    up_mbps: float | None = None
    buffer_bytes: int | None = None  # the down bottleneck's buffer; None: 1 BDP
    loss: float = 0.0
    limiter: str = "fifo"
    up_buffer_bytes: int | None = None  # the up bottleneck's buffer; None: 1 BDP
    # behind a policer, as a packet train measured them (measure's _policer_train); None: assumed
    # (POLICER_PORT x the policed rate; the emulator's 10 ms of the rate)
    port_mbps: float | None = None
    bucket_bytes: int | None = None
    # ... and the port's FIFO, where a back-to-back train's head was cut by it before the bucket ran dry (a
    # paced train read the larger bucket: measure's _paced_policer_train); None: not seen (1 BDP in the twin)
    port_buffer_bytes: int | None = None
    # the up direction behind a policer, as its packet trains measured them (measure's up policer trains): the
    # port its ACKs and the probes' echoes cross, and the bucket; None: not a policer up, or its port not read
    up_port_mbps: float | None = None
    up_bucket_bytes: int | None = None
    # behind an AQM: the twin's qdisc (measure: "fq_codel" where the flows are isolated, "codel" or "pie" where a
    # packet train showed a single-queue AQM's burst, "cake" where either was read and the fill's slow starts ended
    # at COBALT's first signal); None: fq_codel
    aqm_qdisc: str | None = None
    # behind a WiFi hop (limiter "wifi"): the access point's design and the station's PHY rate (measure's
    # wifi_hop); the twin is a [wifi] medium and no wired bottleneck
    wifi_mac: str | None = None
    wifi_phy_mbps: float | None = None
    # other stations that held the medium while measure ran (its wifi "shared" reading): the twin gives each a
    # backlogged CUBIC download at the measuring station's PHY rate (:data:`WIFI_OTHERS_STATION`)
    wifi_others: int = 0
    # ... and their PHY rate (Mbit/s); None: the measuring station's (:attr:`wifi_phy_mbps`)
    wifi_others_phy_mbps: float | None = None
    # a WiFi hop in front of a wired bottleneck (the measuring host on a station of an access point whose line is
    # the path; measure's wifi_hop.front_hop, docs/advise.md "A WiFi hop in front"): the access point's design and
    # the station's PHY rate; the twin puts its flows and probe on that station, the line behind it. None: none
    front_wifi_mac: str | None = None
    front_wifi_phy_mbps: float | None = None
    # how the delivered rate moved under load (measure's rate_variation, issue 31): p10, median and p90 over
    # measure's windows, and the time scale (s) over which it moved; None: not measured
    down_rate_p10_mbps: float | None = None
    down_rate_p50_mbps: float | None = None
    down_rate_p90_mbps: float | None = None
    down_rate_timescale_s: float | None = None
    up_rate_p10_mbps: float | None = None
    up_rate_p90_mbps: float | None = None
    up_rate_timescale_s: float | None = None
    # ... and all measure read of the down capacity (evidence.rate_variation: the figures above with their window,
    # the windows themselves and the round trip each sample spans): what the twin's process is fitted to
    # (advise.capacity); None: given as numbers (the log-normal of traces.fitted_rates then)
    down_rate_variation: dict | None = None
    # the down capacity varies (measure's variable_rate): the twin's down link follows a realization of the
    # fitted process (advise.capacity.realizations), written to ``down_trace`` with the measured figures beside it
    # (write_down_trace; None: written on first use to a temporary directory)
    down_variable: bool = False
    down_trace: str | None = None
    # what measure could not tell its limiter's reading apart from on the same evidence: the down direction's
    # ``limiter_alternatives`` other than the reading itself, in measure's vocabulary (``{"limiter": ...}`` and the
    # conditions under which that limiter gives the same evidence, docs/advise.md "Readings it cannot tell apart");
    # advise checks its recommendation on each one's twin (:meth:`alternative_paths`). None: the reading stood alone.
    # A twin file keeps them beside it (:func:`measured_file`)
    alternatives: list | None = None
    # how far the measured base RTT may lie from the path's: the idle probes' median less their least (ms; measure
    # takes the median, the least is the nearest the path's own RTT a probe came; on the campaigns' paths the truth
    # lay within it). advise's ensemble spreads its members' RTTs over +- this (recommend.members_of); None (a path
    # given as numbers, or idle probes that queued: measure.base_is_least): the accuracy issue 30 asks of a measured
    # RTT (BASE_RTT_GOAL_SHARE of it, at most BASE_RTT_GOAL_MS)
    base_rtt_spread_ms: float | None = None
    # where measure read no random loss: the most its echo probes could not exclude (each way, the one-sided 95 %
    # bound of none lost of those sent: physics.loss_upper); the twin runs without loss, the words say "no random
    # loss seen (at most ...)". None: a loss was read, or the path was given as numbers
    loss_upper: float | None = None

    def __post_init__(self):
        if not (self.base_rtt_ms > 0):
            raise UserError(f"--rtt: expected a positive RTT, got {self.base_rtt_ms} ms")
        if not (self.down_mbps > 0):
            raise UserError(f"--rate: expected a positive rate, got {self.down_mbps} Mbit/s")
        if self.up_mbps is not None and not self.up_mbps > 0:
            raise UserError(f"--up-rate: expected a positive rate, got {self.up_mbps} Mbit/s")
        if not 0 <= self.loss < 0.5:
            raise UserError(f"--loss: expected a loss below 50 %, got {self.loss:.3g}")
        if self.limiter not in LIMITERS:
            raise UserError(f"--limiter: expected one of {', '.join(LIMITERS)}, got {self.limiter!r}")
        if self.port_mbps is not None and not self.port_mbps > 0:
            raise UserError(f"port rate: expected a positive rate, got {self.port_mbps} Mbit/s")
        if self.bucket_bytes is not None and self.bucket_bytes < 1500:
            raise UserError(f"bucket: expected at least one packet (1500 B), got {self.bucket_bytes} B")
        if self.port_buffer_bytes is not None and self.port_buffer_bytes < 1500:
            raise UserError(f"port buffer: expected at least one packet (1500 B), got {self.port_buffer_bytes} B")
        if self.buffer_bytes is not None and self.buffer_bytes < 1500:
            raise UserError(f"--buffer: expected at least one packet (1500 B), got {self.buffer_bytes} B")
        if self.down_variable and not (self.down_rate_p10_mbps and self.down_rate_p90_mbps
                                       and 0 < self.down_rate_p10_mbps <= self.down_rate_p90_mbps):
            raise UserError("a variable rate needs its p10 and p90 (0 < p10 <= p90)")
        for alt in self.alternatives or []:
            if not (isinstance(alt, dict) and alt.get("limiter") in LIMITERS):
                raise UserError(f"alternatives: each needs a limiter of {', '.join(LIMITERS)}, got {alt!r}")
        if self.base_rtt_spread_ms is not None and not 0 <= self.base_rtt_spread_ms < self.base_rtt_ms:
            raise UserError(f"base_rtt_spread_ms: expected 0 up to the base RTT ({self.base_rtt_ms} ms), "
                            f"got {self.base_rtt_spread_ms}")
        if not 0 <= self.wifi_others <= WIFI_OTHERS_MAX or (self.wifi_others and self.limiter != "wifi"):
            raise UserError(f"wifi others: expected 0 up to {WIFI_OTHERS_MAX} stations beside a WiFi hop, got "
                            f"{self.wifi_others}")
        if self.wifi_others_phy_mbps is not None and not self.wifi_others_phy_mbps >= 1:
            raise UserError(f"wifi others' PHY rate: expected at least 1 Mbit/s, got {self.wifi_others_phy_mbps}")
        if self.front_wifi_mac is not None:
            if self.limiter == "wifi" or self.front_wifi_mac not in WIFI_MACS:
                raise UserError(f"wifi in front: expected one of {', '.join(WIFI_MACS)} in front of a wired bottleneck, "
                                f"got {self.front_wifi_mac!r} in front of {self.limiter!r}")
            if not (self.front_wifi_phy_mbps is not None and self.front_wifi_phy_mbps >= 1):
                raise UserError(f"wifi in front: PHY rate expected at least 1 Mbit/s, got {self.front_wifi_phy_mbps}")
        if self.limiter == "wifi":
            if self.wifi_mac not in WIFI_MACS:
                raise UserError(f"wifi mac: expected one of {', '.join(WIFI_MACS)}, got {self.wifi_mac!r}")
            if not (self.wifi_phy_mbps is not None and self.wifi_phy_mbps >= 1):
                raise UserError(f"wifi PHY rate: expected at least 1 Mbit/s, got {self.wifi_phy_mbps}")

    @property
    def bdp_bytes(self) -> float:
        return self.down_mbps * 1e6 * self.base_rtt_ms / 1e3 / 8

    @property
    def buffer(self) -> int:
        return int(self.buffer_bytes if self.buffer_bytes is not None else self.bdp_bytes)

    @property
    def buffer_bdp(self) -> float:
        return self.buffer / self.bdp_bytes

    def describe(self) -> str:
        up = f", {self.up_mbps:.3g} Mbit/s up" if self.up_mbps else ""
        if self.up_policed:
            up += f" (policed, on a {self.up_port_mbps:.3g} Mbit/s port)"
        loss = (f"{self.loss * 100:.2g} % random loss" if self.loss else
                f"no random loss seen (at most {self.loss_upper * 100:.2g} % each way)" if self.loss_upper else
                "no random loss")
        var = (f" (varying: p10 {self.down_rate_p10_mbps:.3g}, p90 {self.down_rate_p90_mbps:.3g} Mbit/s"
               + (f", over ~{self.down_rate_timescale_s:.2g} s)" if self.down_rate_timescale_s else ")")
               if self.down_variable else "")
        buf, lim = self.reading()
        front = (f", behind a WiFi hop in front ({self.front_wifi_mac} access point, PHY ~{self.front_wifi_phy_mbps:.3g} "
                 f"Mbit/s)" if self.front_wifi_mac else "")
        return f"{self.down_mbps:.3g} Mbit/s down{var}{up}, {self.base_rtt_ms:.3g} ms base RTT, {buf}, {loss}, {lim}{front}"

    def reading(self) -> tuple[str, str]:
        """The bottleneck's buffer and what limits the rate, in words (:meth:`describe`'s)."""
        lim = {"fifo": "a FIFO bottleneck", "policer": "a policer enforcing the rate", "aqm": "an AQM at the bottleneck",
               "wifi": f"a WiFi hop ({self.wifi_mac} access point, PHY ~{self.wifi_phy_mbps or 0:.3g} Mbit/s)"}[self.limiter]
        if self.wifi_others:
            lim += (f", shared with {self.wifi_others} other busy station{'s' if self.wifi_others > 1 else ''} "
                    f"(modelled as backlogged downloads at the same PHY rate)")
        if self.limiter == "aqm" and self.aqm_qdisc in ("codel", "pie"):
            lim = f"a single-queue AQM at the bottleneck ({self.aqm_qdisc}, Linux's defaults in the twin)"
        if self.limiter == "aqm" and self.aqm_qdisc == "cake":
            lim = "CAKE at the bottleneck (flow isolation; COBALT's first signal ended the slow starts early)"
        if self.tbf:
            lim = (f"a FIFO behind a token bucket (a tbf: bucket at least {self.bucket_bytes / 1e3:.3g} KB, on a "
                   f"{self.port_mbps:.3g} Mbit/s port)")
        if self.limiter == "policer":
            lim += (f" on a {self.port_mbps:.3g} Mbit/s port" if self.policer_port_measured
                    else f" on a port assumed {POLICER_PORT}x faster")
            lim += (f", bucket {self.bucket_bytes / 1e3:.3g} KB" if self.bucket_bytes
                    else ", bucket assumed 10 ms of the rate")
        buf = ("the access point's per-station fq_codel" if self.limiter == "wifi" and self.wifi_mac != "legacy"
               # CoDel, PIE and CAKE run their own limits in the twin (link_doc), whatever buffer was read
               else "the AQM's own buffer" if self.limiter == "aqm" and (self.buffer_bytes is None
                                                                          or self.aqm_qdisc in ("codel", "pie", "cake"))
               else f"no queue before the policer (its port's buffer {self.port_buffer_bytes / 1e3:.3g} KB)"
               if self.limiter == "policer" and self.port_buffer_bytes is not None
               else "no queue before the policer (its port's buffer not seen; 1 BDP in the twin)"
               if self.limiter == "policer" and self.buffer_bytes is None
               else f"a buffer of {self.buffer / 1e3:.0f} KB ({self.buffer_bdp:.2g} BDP)")
        return buf, lim

    @property
    def policer_port_measured(self) -> bool:
        """A measured port rate the twin can use: faster than the policed rate
        (else the policer would never see a burst)."""
        return self.port_mbps is not None and self.port_mbps > self.down_mbps

    @property
    def port_buffer(self) -> int:
        """The FIFO of a policer's port in the twin (bytes): the measured one (:attr:`port_buffer_bytes`), else one
        BDP of the policed rate (:attr:`buffer`), at least :data:`PORT_BUFFER_MIN_BYTES`."""
        return int(self.port_buffer_bytes) if self.port_buffer_bytes else max(self.buffer, PORT_BUFFER_MIN_BYTES)

    @property
    def policer_port_mbps(self) -> float:
        """The port a policer sits on in the twin: the measured one, else
        :data:`POLICER_PORT` x the policed rate."""
        return self.port_mbps if self.policer_port_measured else self.down_mbps * POLICER_PORT

    def as_dict(self) -> dict:
        d = asdict(self)
        d["buffer_bdp"] = self.buffer_bdp
        return d

    def alternative_paths(self) -> list[tuple[dict, "Path"]]:
        """Each of :attr:`alternatives` as a twin of its own, (the alternative, its path): the same rates, RTT,
        loss and up direction, the limiter the alternative names under the condition it states — a FIFO
        ``depth_below_ms`` deep at the rate (the deepest the evidence allows; at least two packets, the
        campaign's shallowest), else the buffer measured; a policer on the port ``port_mbps`` (a packet train's) or
        ``port_within`` x its rate, else
        the port and bucket the twin assumes (:data:`POLICER_PORT`); an AQM of the first of the ``kinds`` named; where
        its target must lie above a queue that stood, the first single-queue AQM whose Linux default target does
        (:data:`AQM_TARGET_MS`: CoDel 5 ms, PIE 15 ms; none: no twin); else the twin's default AQM (fq_codel). An alternative the twin cannot hold (a WiFi hop, a variable capacity,
        the reading itself) is left out."""
        import dataclasses

        if self.limiter == "wifi" or self.down_variable:
            return []
        keep = dict(port_mbps=None, bucket_bytes=None, port_buffer_bytes=None, aqm_qdisc=None, alternatives=None)
        measured_buf = self.buffer_bytes if self.limiter != "policer" else self.port_buffer_bytes
        out = []
        for alt in self.alternatives or []:
            lim = alt["limiter"]
            if is_the_reading(alt, self.limiter, self.aqm_qdisc) or lim == "wifi":
                continue
            if lim == "fifo":
                depth = alt.get("depth_below_ms")
                buf = (max(int(depth / 1e3 * self.down_mbps * 1e6 / 8), 2 * 1500) if depth is not None
                       else measured_buf)
                p = dataclasses.replace(self, **(keep | dict(limiter="fifo", buffer_bytes=buf)))
            elif lim == "policer":
                within = alt.get("port_within")
                port = alt.get("port_mbps") or (self.down_mbps * within if within else None)
                p = dataclasses.replace(self, **(keep | dict(limiter="policer", buffer_bytes=None, port_mbps=port,
                                                              port_buffer_bytes=measured_buf)))
            else:
                kinds = alt.get("kinds") or []
                above = alt.get("target_above_ms")
                if above is not None:
                    # the single-queue AQMs whose default target lies above the queue that stood without drops
                    kinds = [k for k in ("codel", "pie") if AQM_TARGET_MS[k] > above]
                    if not kinds:
                        continue
                kind = kinds[0] if kinds else None
                p = dataclasses.replace(self, **(keep | dict(limiter="aqm", buffer_bytes=None, aqm_qdisc=kind)))
            out.append((alt, p))
        return out

    # ------------------------------------------------------------ the twin

    def link_doc(self, shaper_mbps: float | None = None, qdisc: str | None = None, autorate: dict | None = None) -> dict:
        """``[link.down]`` of the twin; with ``shaper_mbps`` the user's own
        qdisc (``qdisc``) shaped just below the line rate owns the queue. On
        a variable-rate FIFO path the link follows the fitted trace and the
        user's shaper is CAKE in front of it, fixed at ``shaper_mbps`` or
        steered by cake-autorate (``autorate``: the scenario's element)."""
        d: dict = {"rate": f"{self.down_mbps:.6g}Mbit", "loss": self.loss}
        if self.down_variable and self.limiter == "fifo":
            # the capacity follows the fitted trace; the user's shaper there is CAKE at a fixed rate or
            # steered by cake-autorate, the autorate element (min = base = max: fixed), as docs/autorate.md
            d["rate"] = f"trace:{self.down_trace_file()}"
            d["qdisc"] = "fifo"
            d["buffer"] = f"{self.buffer}B"
            if autorate:
                d["autorate"] = autorate
            elif shaper_mbps:
                d["autorate"] = autorate_doc(shaper_mbps, shaper_mbps, shaper_mbps)
            return d
        if shaper_mbps:
            # the user's shaper below the line rate: behind a policer, a shaper
            # slower than the policer (with a smaller bucket) sends only what
            # conforms, so the policer never drops and leaves the model
            d.update(user_shaped(qdisc, shaper_mbps))
            d["buffer"] = f"{self.buffer}B"
            if self.limiter == "policer":
                # ... and what the shaper lets out crosses the policer's port, not a wire at the policed rate:
                # the shaper's bursts (its bucket: 10 ms of its rate) leave at the port's speed. A wire at the
                # policed rate, 5 % above the shaper, spread them and cut fq_codel's p95 sojourn from 14.5 to
                # 6 ms: seed 8 path 14 (a 39-Mbit/s policer on a 67.7-Mbit/s port, 100 ms), CUBIC behind
                # fq_codel shaped at 37.3: 32.6 Mbit/s on such a twin, 27.0 with the port (any port from 50
                # Mbit/s to 1 Gbit/s: 26.9-27.0), the kernel on the true path 22.5 (the campaign's true path,
                # truth_doc, keeps the port too)
                d["rate"] = f"{self.policer_port_mbps:.6g}Mbit"
            return d
        if self.limiter == "policer":
            # a policer sits on a faster port (a measured policed path shows no
            # queue at all: bursts pass at the wire rate). A packet train (measure's _policer_train)
            # measures the port's rate (its head's spacing) and the bucket (its bytes before the first
            # loss: with a wrong bucket the twin's CUBIC read 22 Mbit/s where the kernel got 7); where it
            # could not tell, POLICER_PORT x the policed rate stands for the port and the scenario's
            # default (10 ms of the rate) for the bucket. The port's buffer never filled during the
            # measurement (no queue), so it is not seen either: the twin gives it one BDP of the policed rate,
            # at least two packets (Path.port_buffer), which the policed flows do not fill (a 3-KB port buffer,
            # as before, dropped the bursts the policer let through: CUBIC read 1.9 Mbit/s on the twin, 8.7 on
            # the true path)
            # Where a back-to-back train's head was cut by the port's FIFO before the bucket ran dry (a paced
            # train read the bucket), that FIFO is the port's buffer (port_buffer_bytes): a bucket larger than
            # it passes bursts the port drops (seed 8 path 14: a 271-KB bucket on a 106-KB FIFO)
            d["rate"] = f"{self.policer_port_mbps:.6g}Mbit"
            d["qdisc"] = "fifo"
            d["buffer"] = f"{self.port_buffer}B"
            d["policer"] = token_bucket(self.down_mbps, self.bucket_bytes)
        elif self.limiter == "aqm" and self.aqm_qdisc in ("codel", "pie"):
            # a single-queue AQM with Linux's defaults, running before the twin's flows (path_aqm)
            d.update(path_aqm(self.aqm_qdisc))
        elif self.limiter == "aqm" and self.aqm_qdisc == "cake":
            # CAKE (measure: COBALT's first signal in the fill's slow start) at the link's rate, its own memory
            # limit (sch_cake.c cake_reconfigure: 4 x rate x its 100-ms rtt, at least 4 MiB, at most 10240 x 1514 B;
            # the direction's buffer is not used)
            d["qdisc"] = "cake"
        elif self.limiter == "aqm":
            # fq_codel with Linux's own limit unless a buffer was given: a
            # measurement cannot see an AQM's limit, only the queue it holds
            d["qdisc"] = "fq_codel"
            d["buffer"] = f"{self.buffer_bytes}B" if self.buffer_bytes is not None else f"{FQ_CODEL_LIMIT_PKTS}pkt"
        else:
            d["qdisc"] = "fifo"
            d["buffer"] = f"{self.buffer}B"
            if self.tbf:
                # a tbf (measure's trains.bucket_before_fifo): the FIFO's packets leave at the port's rate while its
                # bucket holds tokens, refilled at the rate; BBR's bandwidth filter sees the port through it
                d["rate"] = f"{self.port_mbps:.6g}Mbit"
                d["shaper"] = token_bucket(self.down_mbps, self.bucket_bytes)
        return d

    def twin(self, duration_s: float | None = None, cc: str = "cubic") -> dict:
        """The twin scenario as a dict (``bloatlab.run`` takes it; :func:`to_toml` writes it)."""
        dur = duration_s or min(max(100 * self.base_rtt_ms / 1e3, 10.0), 30.0)
        doc: dict = {
            "name": "twin",
            "description": f"measured path: {self.describe()}",
            "duration": f"{dur:g}s",
            "link": {"down": self.link_doc()},
            "flow": [{"name": "bulk", "cc": cc, "rtt": f"{self.base_rtt_ms:.6g}ms"}],
            "probe": [{"name": "ping", "interval": "20ms"}],
        }
        if self.limiter == "wifi":
            # the WiFi hop is the bottleneck both ways (one medium): the twin has no line behind it (the AP's line,
            # docs/wifi.md, where measure read the hop as the limiter, does not queue), so the up direction's own
            # figures are not the twin's
            del doc["link"]
            doc["wifi"] = self.wifi_doc()
            doc["flow"][0]["station"] = doc["probe"][0]["station"] = WIFI_STATION
            doc["flow"] += self.wifi_others_flows()
            return doc
        if self.up_mbps:
            doc["link"]["up"] = {"rate": f"{self.up_mbps:.6g}Mbit"}
            if self.up_buffer_bytes:
                doc["link"]["up"]["buffer"] = f"{max(self.up_buffer_bytes, 1500)}B"
            if self.up_policed:
                # a policer up: the ACKs and the probes' echoes leave at its port's rate while its bucket holds
                # tokens; a FIFO at the policed rate spaced them at that rate, so a ping waited behind a few ACKs
                # for several ms more (campaign seed 101 path 21, 0.238 Mbit/s up on a 0.81 port, the downloading
                # CUBIC's ACKs: the twin's ping p95 10.1-11.1 ms, the kernel's 6.5-6.8, with the policer 6.8-7.1)
                doc["link"]["up"].update(rate=f"{self.up_port_mbps:.6g}Mbit",
                                         policer=token_bucket(self.up_mbps, self.up_bucket_bytes))
        if self.front_wifi_mac:
            # the measuring host's own WiFi hop, faster than the line (its one station: the flows and the probe
            # need not name it): it aggregates the flows' ACKs going up, which the line's queue then meets as bursts
            doc["wifi"] = {"mac": self.front_wifi_mac,
                           "station": [{"name": WIFI_STATION, "phy_rate": f"{self.front_wifi_phy_mbps:.6g}Mbit"}]}
        return doc

    @property
    def tbf(self) -> bool:
        """A FIFO behind a token bucket on a port measured faster than its rate (measure's
        trains.bucket_before_fifo, or a tbf read from its paced train's queue)."""
        return self.limiter == "fifo" and bool(self.bucket_bytes) and self.policer_port_measured

    @property
    def up_policed(self) -> bool:
        """The up direction is a policer on a port measured faster than its rate."""
        return bool(self.up_mbps) and self.up_port_mbps is not None and self.up_port_mbps > self.up_mbps

    def write_twin(self, out: str, cc: str = "cubic") -> str:
        """Write the twin scenario to ``out`` (``measure --out``): on a variable capacity with its trace and the
        measured figures beside it (``TWIN-down.trace``, ``TWIN-down.trace.json``: :meth:`write_down_trace`,
        written anew: a previous twin's trace there is another measurement's), named relative to it; the
        readings measure could not tell apart from its own (:attr:`alternatives`), the base RTT's spread and the
        loss its probes could not exclude in ``TWIN-measured.json`` (:func:`measured_file`; a previous twin's removed
        where there are none)."""
        from ..result import atomic_write_text

        if self.down_variable and self.limiter == "fifo":
            self.write_down_trace(os.path.splitext(os.path.abspath(out))[0] + "-down.trace")
        doc = self.twin(cc=cc)
        if self.down_variable and self.limiter == "fifo":
            doc["link"]["down"]["rate"] = "trace:" + os.path.basename(self.down_trace)
        side = measured_file(out)
        extra = {k: getattr(self, k) for k in MEASURED_EXTRAS if getattr(self, k) is not None}
        if extra:
            atomic_write_text(side, json.dumps(extra, indent=1) + "\n")
        elif os.path.exists(side):
            os.unlink(side)  # another measurement's
        atomic_write_text(out, to_toml(doc))
        return out

    def down_trace_file(self) -> str:
        """The twin's down capacity trace (:meth:`write_down_trace`); written once (to ``down_trace`` if set,
        else to a temporary file)."""
        if self.down_trace and os.path.exists(self.down_trace):
            return self.down_trace
        if not self.down_trace:
            fd, trace = tempfile.mkstemp(prefix="bloatlab-twin-", suffix=".trace")
            os.close(fd)
            self.down_trace = trace
        return self.write_down_trace(self.down_trace)

    def down_realizations(self, count: int) -> list[tuple[int, list[float], dict]]:
        """``count`` realizations of the down capacity, (seed, capacity per ms, figures): of the process fitted
        to what measure read, its median the one whose windows have the measured median (advise.capacity: the
        first seeds whose windows read as measure read them lie within what the measurement can tell of its p10,
        p50 and p90); where the capacity was given as numbers
        (no windows), the log-normal through them (traces.fitted_rates), seeds 1 ...; :data:`TRACE_SECONDS`
        long."""
        from .. import traces
        from . import capacity

        dur = TRACE_SECONDS * 1000
        if "_capacity" not in self.__dict__:
            cap = capacity.fit(self.down_rate_variation, self.base_rtt_ms) if self.down_rate_variation else None
            # the process's median, not its windows' (capacity.through_windows)
            self.__dict__["_capacity"] = cap and capacity.through_windows(cap, self.down_rate_variation, self.base_rtt_ms)
        cap = self.__dict__["_capacity"]
        if cap is not None:
            return capacity.realizations(cap, self.down_rate_variation, dur, count, self.base_rtt_ms)
        p50 = (self.down_rate_p50_mbps or self.down_mbps) * 1e6
        return [(k, traces.fitted_rates(self.down_rate_p10_mbps * 1e6, p50, self.down_rate_p90_mbps * 1e6,
                                        self.down_rate_timescale_s, dur, k), {"seed": k}) for k in range(1, count + 1)]

    def member_traces(self, count: int) -> list[str]:
        """The down capacity traces of ``count`` ensemble members (advise's: recommend.simulate_all): the twin's
        own (:meth:`down_trace_file`) and the next realizations of :meth:`down_realizations`, written once to
        temporary files."""
        from .. import traces

        own = self.down_trace_file()
        cache = self.__dict__.setdefault("_member_traces", {})
        if (own, count) not in cache:
            files = [own]
            for _, rates, _ in self.down_realizations(count)[1:]:
                fd, f = tempfile.mkstemp(prefix="bloatlab-twin-member-", suffix=".trace")
                os.close(fd)
                traces.write_mahimahi(f, within_trace_limit(rates))
                files.append(f)
            cache[(own, count)] = files
        return cache[(own, count)]

    def remove_member_traces(self) -> None:
        """Remove the temporary traces of :meth:`member_traces` (the twin's own stays): advise's runs have read them
        (a 50-Mbit/s capacity's 120 s is ~3.5 MB a member)."""
        for files in self.__dict__.pop("_member_traces", {}).values():
            for f in files[1:]:
                try:
                    os.unlink(f)
                except OSError:
                    pass

    def write_down_trace(self, trace: str) -> str:
        """Write the twin's down capacity trace to ``trace`` (Mahimahi; the first of :meth:`down_realizations`)
        and, beside it, what the scenario cannot hold of the
        measurement (:func:`trace_figures_file`: the rate, the capacity's p10/p50/p90, time scale, and all measure
        read of it), so that :meth:`from_twin` gives the measured figures back exactly; ``down_trace`` becomes
        ``trace``."""
        from .. import traces
        from ..result import atomic_write_text

        _, rates, fig = self.down_realizations(1)[0]
        traces.write_mahimahi(trace, within_trace_limit(rates))
        doc = {k: getattr(self, k) for k in TRACE_FIGURES} | {"realization": fig}
        atomic_write_text(trace_figures_file(trace), json.dumps(doc, indent=1) + "\n")
        self.down_trace = trace
        return trace

    def wifi_rate_mbps(self, seconds: float = 4.0, direction: str = "down", probe_ms: float | None = None,
                       seeds: int = 1) -> float:
        """What the twin's WiFi hop delivers to one station when its queue
        stays backlogged (Mbit/s of IP packets): four CUBIC downloads
        (``direction`` ``up``: uploads, the station's own uplink queue
        contending for the medium) over :data:`WIFI_RATE_RTT_MS` in the
        simulator (a saturated MAC's rate does not depend on the RTT; a short
        one saturates it within the run). A twin read back from a file carries
        the PHY rate, not the rate measured over it. ``probe_ms``: beside an
        echo probe from the station at that interval, as ``measure``'s loads
        run (:data:`~.isolation.LOAD_PROBE_INTERVAL_MS`); ``seeds``: the mean of
        that many runs (seeds 1..N, :data:`WIFI_SHARE_SEEDS`)."""
        import bloatlab

        got = []
        for seed in range(1, seeds + 1):
            doc = {"name": "wifi-rate", "duration": f"{seconds:g}s", "seed": seed, "wifi": self.wifi_doc(),
                   "flow": [{"cc": "cubic", "count": 4, "rtt": f"{WIFI_RATE_RTT_MS:g}ms", "station": WIFI_STATION,
                             "direction": direction}]
                   + self.wifi_others_flows(WIFI_RATE_RTT_MS)}
            if probe_ms:
                doc["probe"] = [{"name": "ping", "interval": f"{probe_ms:g}ms", "station": WIFI_STATION}]
            s = bloatlab.run(doc).summary
            # this station's four flows, listed first (the others' share of the medium is theirs)
            got.append(sum(f["goodput_mbps"] for f in s["flows"][:4]) * 1500 / 1448)
        return sum(got) / len(got)

    def wifi_others_and_share(self, rate_mbps: float, probe_ms: float | None = None) -> tuple[int, float]:
        """How many other busy stations (:attr:`wifi_others`, at this path's PHY rates) leave this station the
        rate ``rate_mbps`` (Mbit/s of IP packets) that four backlogged CUBIC flows of its own got beside them
        (:meth:`wifi_rate_mbps`'s run, as ``measure``'s loads ran): the count, 1 up to :data:`WIFI_OTHERS_MAX`, whose
        rate is nearest on a log scale (rates compared as ratios, as shares are). The twin's own MAC, not a formula: a station's share is 1 / (N + 1) of the medium's
        airtime only where nothing else takes airtime; the others' TCP ACKs going up, a legacy AP's one FIFO
        shared by flows, not by stations, move it (campaign seed 49 path 10, an airtime AP at 39 Mbit/s: the
        flows got 8.57 Mbit/s of the MAC's 30.0, 1 / (N + 1) read 3 others, the twin leaves 9.54 beside 2 and
        6.00 beside 3; the truth had 2). The rate falls as the count grows: the counts are tried upwards until
        the rate is below ``rate_mbps``. ``probe_ms``: the loads ran beside echo probes at that interval, and the
        twin's runs do too (:data:`WIFI_SHARE_SEEDS` of them each): beside other stations each probe and its echo
        take one of this station's turns on the medium for a frame of ~100 B, so the share the loads read is below
        a bare station's — by 2-13 % in the twins of campaign seeds 185-186 (the mean of ten seeds at a 10-ms
        probe), where a count read against one bare run each came out one too many (seed 186 path 27: 17.3 Mbit/s
        read, 20.1 in one bare run beside two others, 15.0 beside three; eight runs' mean beside the probes 18.5 and
        12.6). Returns the count and the twin's rate beside it (as run: with the probes, the runs' mean)."""
        best, best_d, best_r = 1, math.inf, math.nan
        for n in range(1, WIFI_OTHERS_MAX + 1):
            r = replace(self, wifi_others=n).wifi_rate_mbps(probe_ms=probe_ms, seeds=WIFI_SHARE_SEEDS)
            d = abs(math.log(max(r, 1e-9) / rate_mbps))
            if d < best_d:
                best, best_d, best_r = n, d, r
            if r < rate_mbps:
                break
        return best, best_r

    def wifi_others_flows(self, rtt_ms: float | None = None) -> list[dict]:
        """The other stations' downloads (:attr:`wifi_others`): one backlogged CUBIC flow each, at the base RTT."""
        if not self.wifi_others:
            return []
        return [{"name": "others", "cc": "cubic", "count": self.wifi_others, "station": WIFI_OTHERS_STATION,
                 "rtt": f"{rtt_ms or self.base_rtt_ms:.6g}ms"}]

    def wifi_doc(self, mac: str | None = None) -> dict:
        """``[wifi]`` of the twin: the access point (``mac``: another design in its place) and one station, the
        measuring host, at the measured PHY rate. Behind a legacy AP the measured queue is its qdisc's and
        the driver's :data:`LEGACY_DRIVER_FRAMES`: the qdisc gets what the driver does not hold, in packets of
        :data:`WIRE_SEGMENT` as the access point's qdisc counts them (``pfifo_fast``'s ``txqueuelen``, 1000 packets:
        crates/core/src/wifi/mac.rs). A limit in bytes would leave the twin's data the slots its probes and ACKs
        take in the true AP's queue: ranked seed 159 path 3 (a legacy AP at 551 ms, 1.3 s of queue, a probe every
        20 ms: ~65 of its 1000 slots), CUBIC over 15 s on the model at the true 1000 packets 6.24 Mbit/s (median
        of 11 members), at the same depth in bytes (1 514 000 B) 6.65, the kernel 5.93 (6 runs)."""
        mac = mac or self.wifi_mac
        w: dict = {"mac": mac, "station": [{"name": WIFI_STATION, "phy_rate": f"{self.wifi_phy_mbps:.6g}Mbit"}]}
        if self.wifi_others:
            o_phy = self.wifi_others_phy_mbps or self.wifi_phy_mbps
            w["station"].append({"name": WIFI_OTHERS_STATION, "phy_rate": f"{o_phy:.6g}Mbit", "count": self.wifi_others})
        if mac == "legacy" and self.buffer_bytes is not None:
            w["buffer"] = f"{max(round(self.buffer_bytes / WIRE_SEGMENT) - LEGACY_DRIVER_FRAMES, 1)}pkt"
        return w

    @classmethod
    def from_twin(cls, path: str) -> "Path":
        """Read a twin written by ``measure --out`` (or any scenario with a
        ``[link.down]`` and a flow): the first flow's RTT is the base RTT."""
        from ..scenario import load

        sc = load(path)
        r = sc.resolved()
        if r.get("wifi") and r["links"]["down"] is None:
            w = r["wifi"]
            st = w["stations"][r["flows"][0].get("station") or 0]
            phy = _station_phy_mbps(st)
            buf = None
            if w["mac"] == "legacy":
                buf = (w["buffer_bytes"] or (w["buffer_pkts"] or 0) * WIRE_SEGMENT) + LEGACY_DRIVER_FRAMES * WIRE_SEGMENT
            # the stations beyond the measuring host's: other busy stations (Path.wifi_others_flows), at their own
            # PHY rate where it is not the measuring host's
            others = [s for s in w["stations"] if s is not st]
            o_phy = None
            if others:
                o = others[0]
                o_phy = _station_phy_mbps(o)
            # what measure kept beside the twin (read_measured) reads back here as beside a wired one: the base
            # RTT's spread sets the ensemble's RTTs (recommend.members_of: 0 on a shared medium, where the idle
            # probes' median waited behind the others), the loss bound the words
            p = cls(base_rtt_ms=r["flows"][0]["rtt_ns"] / 1e6, down_mbps=phy, buffer_bytes=buf, limiter="wifi",
                    **read_measured(path), wifi_mac=w["mac"], wifi_phy_mbps=phy, wifi_others=len(others),
                    wifi_others_phy_mbps=o_phy if o_phy is not None and abs(o_phy - phy) > 1e-6 * phy else None)
            p.down_mbps = p.wifi_rate_mbps()
            return p
        down = r["links"]["down"]
        if down is None:
            raise UserError(f"--path {path}: the advisor needs a [link.down] bottleneck")
        up = r["links"]["up"]
        limiter = "policer" if down.get("policer") else ("aqm" if down["qdisc"]["kind"] in ("codel", "fq_codel", "pie", "fq_pie", "cake") else "fifo")
        # a FIFO behind a token bucket on a faster port (a tbf, link_doc's): the rate is the bucket's
        tbf = down.get("shaper") if limiter == "fifo" else None
        rate = (down["policer"]["rate_bps"] if down.get("policer") else tbf["rate_bps"] if tbf else down["rate_bps"]) / 1e6
        buf = down["buffer_bytes"] or (down["buffer_pkts"] or 0) * 1500 or None
        if limiter == "aqm" and not down["buffer_bytes"] and down["buffer_pkts"] == FQ_CODEL_LIMIT_PKTS:
            # what link_doc writes for "the AQM's own buffer" (measure saw none): not a buffer of 15 MB
            buf = None
        up_buf = (up["buffer_bytes"] or (up["buffer_pkts"] or 0) * 1500 or None) if up else None
        up_pol = (up or {}).get("policer")
        pol = down.get("policer")
        variable = {}
        if down.get("trace_ms"):
            # a variable-rate twin: its trace file and what measure read of the capacity, written beside the trace
            # (write_down_trace); a trace nobody measured: its capacity's p10/median/p90 over 1-s windows
            from .. import traces

            with open(path, "rb") as f:
                raw = tomllib.load(f)["link"]["down"]["rate"]
            trace = os.path.join(os.path.dirname(os.path.abspath(path)), raw[len("trace:"):])
            variable = {"down_variable": True, "down_trace": trace}
            figures = read_trace_figures(trace)
            if figures is not None:
                variable |= figures
            else:
                pc = traces.capacity_percentiles(down["trace_ms"], 1000)
                variable |= {"down_rate_p10_mbps": pc["p10_mbps"], "down_rate_p50_mbps": pc["median_mbps"],
                             "down_rate_p90_mbps": pc["p90_mbps"]}
        # a WiFi hop in front of the line (a twin's, Path.twin): its design and its one station's PHY rate
        front = {}
        if r.get("wifi"):
            st = r["wifi"]["stations"][0]
            front = {"front_wifi_mac": r["wifi"]["mac"],
                     "front_wifi_phy_mbps": _station_phy_mbps(st)}
        # behind a policer the down buffer is its port's (the policed rate's own queue is none)
        port_buf = buf if limiter == "policer" else None
        buf = None if limiter == "policer" else buf
        return cls(**({"down_mbps": rate} | variable), **read_measured(path), base_rtt_ms=r["flows"][0]["rtt_ns"] / 1e6,
                   up_mbps=((up_pol or up)["rate_bps"] / 1e6) if up else None,
                   up_port_mbps=up["rate_bps"] / 1e6 if up_pol else None,
                   up_bucket_bytes=up_pol.get("burst_bytes") if up_pol else None,
                   buffer_bytes=buf, loss=down["loss"], limiter=limiter, up_buffer_bytes=up_buf, port_buffer_bytes=port_buf,
                   port_mbps=down["rate_bps"] / 1e6 if pol or tbf else None,
                   bucket_bytes=pol.get("burst_bytes") if pol else tbf.get("burst_bytes") if tbf else None,
                   aqm_qdisc=down["qdisc"]["kind"] if limiter == "aqm" else None, **front)

    @classmethod
    def from_args(cls, rtt: str, rate: str, buffer: str | None, loss: str | None, up_rate: str | None, limiter: str) -> "Path":
        def conv(flag, fn, v):
            try:
                return fn(v)
            except ValueError as e:
                raise UserError(f"{flag}: {e}") from None

        rtt_ms = conv("--rtt", units.parse_duration, rtt) / 1e6
        down = conv("--rate", units.parse_rate, rate) / 1e6
        up = conv("--up-rate", units.parse_rate, up_rate) / 1e6 if up_rate else None
        p = cls(base_rtt_ms=rtt_ms, down_mbps=down, up_mbps=up, loss=conv("--loss", units.parse_ratio, loss) if loss else 0.0,
                limiter=limiter)
        if buffer:
            b = buffer.strip()
            if b.endswith("bdp"):
                p.buffer_bytes = int(conv("--buffer", float, b[:-3]) * p.bdp_bytes)
            elif b.endswith("pkt"):
                p.buffer_bytes = int(conv("--buffer", float, b[:-3]) * 1500)
            else:
                p.buffer_bytes = conv("--buffer", units.parse_size, b)
            p.__post_init__()
        return p


#: what a variable twin's trace carries beside it (:meth:`Path.write_down_trace`, :func:`read_trace_figures`): the
#: measured figures a Mahimahi trace cannot hold (the rate measure read, not the realization's mean; the capacity's
#: percentiles over measure's own windows, not the trace's)
TRACE_FIGURES = ("down_mbps", "down_rate_p10_mbps", "down_rate_p50_mbps", "down_rate_p90_mbps", "down_rate_timescale_s",
                 "down_rate_variation")
#: ... and the keys of ``down_rate_variation`` that read back as positive numbers (evidence.rate_variation's), the
#: last two of them possibly null
VARIATION_NUMBERS = ("p10_mbps", "p50_mbps", "p90_mbps", "window_s", "srtt_ms", "timescale_s")


#: what a twin file cannot hold of a measurement and :func:`measured_file` keeps beside it (Path's fields)
MEASURED_EXTRAS = ("alternatives", "base_rtt_spread_ms", "loss_upper")


def measured_file(twin: str) -> str:
    """Where a twin's :data:`MEASURED_EXTRAS` are kept: beside it, ``TWIN-measured.json`` (the scenario language
    has no place for what a measurement could not tell apart, nor for how sure its base RTT is, nor for the loss
    its probes could not exclude)."""
    return os.path.splitext(os.path.abspath(twin))[0] + "-measured.json"


def read_measured(twin: str) -> dict:
    """:data:`MEASURED_EXTRAS` kept beside ``twin`` (:func:`measured_file`; {} where there is no such file); a file
    that is not what measure writes is a clear error naming it and the key."""
    f = measured_file(twin)
    if not os.path.exists(f):
        return {}
    try:
        with open(f) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise UserError(f"{f}: not what measure writes beside a twin ({e})") from None
    if not isinstance(doc, dict) or set(doc) - set(MEASURED_EXTRAS):
        raise UserError(f"{f}: expected an object with some of {', '.join(MEASURED_EXTRAS)}")
    alts = doc.get("alternatives")
    if alts is not None and not (isinstance(alts, list) and all(isinstance(a, dict) and a.get("limiter") in LIMITERS
                                                                   for a in alts)):
        raise UserError(f"{f}: alternatives: expected a list of {{\"limiter\": {' | '.join(LIMITERS)}, ...}}")
    spread = doc.get("base_rtt_spread_ms")
    if spread is not None and (isinstance(spread, bool) or not isinstance(spread, (int, float)) or not spread >= 0):
        raise UserError(f"{f}: base_rtt_spread_ms: expected a number of ms >= 0, got {spread!r}")
    upper = doc.get("loss_upper")
    if upper is not None and (isinstance(upper, bool) or not isinstance(upper, (int, float)) or not 0 <= upper <= 1):
        raise UserError(f"{f}: loss_upper: expected a loss rate from 0 to 1, got {upper!r}")
    return {"alternatives": alts or None, "base_rtt_spread_ms": spread, "loss_upper": upper}


def trace_figures_file(trace: str) -> str:
    """The file beside a twin's trace that holds the measured figures: the trace's name and ``.json``."""
    return trace + ".json"


def read_trace_figures(trace: str) -> dict | None:
    """The measured figures written beside ``trace`` (:data:`TRACE_FIGURES`), as :class:`Path`'s fields; None
    where there are none (a trace nobody measured). A file that is not what :meth:`Path.write_down_trace` writes
    is an error naming the file and the key."""
    f = trace_figures_file(trace)
    if not os.path.exists(f):
        return None
    try:
        with open(f) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise UserError(f"{f}: not the measured figures of a twin's trace ({e})") from None
    if not isinstance(doc, dict):
        raise UserError(f"{f}: expected a JSON object of {', '.join(TRACE_FIGURES)}")

    def number(key: str, v, optional: bool = False):
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise UserError(f"{f}: {key}: expected a positive number, got {v!r}")
        return v

    # the median and the time scale may be unknown (a path given as numbers; a capacity that moved slower than the
    # phase), the rate and the p10 and p90 of a variable capacity not (Path's own check)
    out = {k: number(k, doc.get(k), optional=k in ("down_rate_p50_mbps", "down_rate_timescale_s"))
           for k in TRACE_FIGURES[:-1]}
    v = doc.get("down_rate_variation")
    if v is not None:
        if not isinstance(v, dict):
            raise UserError(f"{f}: down_rate_variation: expected an object, got {v!r}")
        for k in VARIATION_NUMBERS:
            number(f"down_rate_variation.{k}", v.get(k), optional=k in VARIATION_NUMBERS[-2:])
        series = v.get("series_mbps")
        if series is not None and not (isinstance(series, list) and all(
                x is None or (not isinstance(x, bool) and isinstance(x, (int, float)) and x >= 0) for x in series)):
            raise UserError(f"{f}: down_rate_variation.series_mbps: expected a list of rates (Mbit/s) or nulls")
    out["down_rate_variation"] = v
    return out


def to_toml(doc: dict) -> str:
    """A scenario dict as TOML text (the subset the twin uses)."""

    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        raise TypeError(v)

    lines = [f"{k} = {val(v)}" for k, v in doc.items() if not isinstance(v, (dict, list))]
    for d, t in doc.get("link", {}).items():
        lines += ["", f"[link.{d}]"] + [f"{k} = {val(v)}" for k, v in t.items()]
    if "wifi" in doc:
        w = doc["wifi"]
        lines += ["", "[wifi]"] + [f"{k} = {val(v)}" for k, v in w.items() if k != "station"]
        for t in w.get("station", []):
            lines += ["", "[[wifi.station]]"] + [f"{k} = {val(v)}" for k, v in t.items()]
    for arr in ("flow", "probe"):
        for t in doc.get(arr, []):
            lines += ["", f"[[{arr}]]"] + [f"{k} = {val(v)}" for k, v in t.items()]
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what we write must read back
    return text

