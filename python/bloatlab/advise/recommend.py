"""Recommend a congestion control and a queue for a path, with evidence.

Every candidate runs on the path's twin in the simulator, twice: alone with a
latency probe (goodput, p95 RTT under load, retransmissions), and beside one
CUBIC flow of the same RTT (the share it leaves to a neighbour — seed 001's
question). Candidates are the sender's control × the queue the user
controls:

- ``as-is``: the bottleneck stays as measured; the sending host gets
  ``net.core.default_qdisc = fq`` (the seeds' line: pacing for every control,
  required by BBR before Linux 4.13) where its kernel has sch_fq, and the
  candidates are simulated so: CUBIC and Reno paced at Linux's pacing rate
  (the scenario's ``pacing``), as sch_fq paces them. The host's current setup
  runs as it is (paced only if its default qdisc is fq);
- ``fq_codel`` / ``cake`` shaped at ``SHAPE_FRACTION`` of the measured rate on
  a router the user owns in front of the bottleneck: the user's AQM then owns
  the queue (CAKE only helps if it owns the bottleneck — seed 000); each as it
  is deployed (``path.user_shaped``: CAKE's own shaper, fq_codel behind SQM's
  HTB), and the recommendation says how (:func:`router_advice`);
- on a variable-rate FIFO path (``path.down_variable``: measure saw the
  capacity move both ways, issue 31) the twin's link follows a fitted trace
  and the options are cake-autorate's: no shaping, CAKE at a fixed rate (the
  capacity's p10, ``cake@low``, and its median) and cake-autorate steering
  CAKE between the p10 and the p90 from the median (``autorate``, settings in
  ``recommendation.autorate``);
- behind a WiFi hop (``path.limiter == "wifi"``) the queue that matters is the
  access point's own: its MAC designs (:data:`WIFI_QUEUES`: mac80211's
  per-station fq_codel, ``fq``, Linux 4.9; with airtime fairness,
  ``airtime``, 4.11) take the shapers' place — a shaper in front of an AP
  does not own a queue whose rate moves with the station's signal.

Each run is an ensemble (:data:`ENSEMBLE` members, :func:`members_of`): the
twin at base RTTs and (a fixed wired capacity) down rates spread over the
measurement's uncertainty (:func:`member_rates`) and with starts spread over
one jiffy, each figure the members' median and its range kept beside it; a
goodput whose members split wider than :data:`GOODPUT_SPLIT` is said with its
range. An unpaced slow start's end at a long RTT is multimodal in the RTT
and in the start's phase against the kernel's clocks (a 62.7-Mbit/s policer
at 190 ms: Reno behind fq_codel delivered 20.7, 27.5 or 35.2 Mbit/s); the
kernel's one run lands in any mode, one run of the twin too, the median in the
common one.

Scores (docs/advise.md): each figure is normalised to [0, 1] — goodput by the
best candidate's, latency as base RTT / loaded RTT (the larger of the probe's
p95 RTT and base + the bottleneck's p95 queueing delay), fairness as the
neighbour's share / ½ (capped at 1), retransmissions as 1 − rate/10 % — and
weighted by the goal (:data:`GOALS`). Nothing here is tuned per path; the
numbers come from the runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from .path import BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE, SHAPE_FRACTION, Path, user_shaper_burst

CCS = ("reno", "cubic", "bbr", "bbr3")
QUEUES = ("as-is", "fq_codel", "cake")
#: the access point's designs a WiFi path's candidates run: mac80211's fq_codel with airtime fairness (Linux 4.11+,
#: the default of every mac80211 driver with TXQs since). Not the legacy design (no one moves to it), nor ``fq``
#: apart: without airtime fairness it is the same design for the twin's one station (the runs are identical)
WIFI_QUEUES = ("airtime",)
#: goal -> weights of (goodput, latency, fairness, retransmissions)
GOALS = {
    "throughput": (0.75, 0.10, 0.05, 0.10),
    "latency": (0.30, 0.55, 0.05, 0.10),
    "balanced": (0.45, 0.30, 0.15, 0.10),
    "fair": (0.30, 0.15, 0.45, 0.10),
}
#: what the score's latency part weighs (Candidate.loaded_rtt_ms), as the reasons and advise's table name it
LATENCY_SCORED = ("the larger of the probe's p95 RTT and the base plus the flow's own packets' p95 wait at the "
                  "bottleneck, alone or beside a CUBIC download")
#: retransmission rate at which that figure scores 0
RETRANS_ZERO = 0.10
#: members of each candidate's ensemble on the simulated twin (odd: the median is a member's); the emulated
#: twin (real time) runs one
ENSEMBLE = 7
#: the most packets (at the bottleneck, every candidate's runs together) the ensemble may simulate: fewer members
#: (odd) where the whole would take more, so that advise stays within issue 30's 60 s. The simulator moves ~2.5 M
#: packets a second on this 2-core VM with both cores busy (advise on a 1000-Mbit/s, 600-ms twin: 65 M packets in
#: 25.6 s, one member), so 60 M is ~25 s of members; a fast path's slow start is no more bimodal for it (that twin's
#: goodput over 7 members: 706.8-707.8 Mbit/s)
ENSEMBLE_BUDGET_PKTS = 60e6
#: ... and the most wall time (s) the ensemble's simulations may take together: issue 30's 60 s for a whole
#: advise less a sixth for what a member's cost may vary by as the machine's load moves (the members run after the
#: first and are priced by it, :func:`members_within_time`). The packet budget prices a packet at an idle machine's
#: cost; a loaded one (other jobs, the emulator) or a costly path (a large window's SACK scoreboard under random
#: loss) costs more: a 204-Mbit/s, 169-ms twin with 3 % loss (campaign seed 8, path 16: 16 candidates) took 36.9 s
#: for its first member alone at a load average of 12 on 2 cores, and 74.5 s for its 5 members in the campaign
ENSEMBLE_BUDGET_S = 50.0
#: the share of the ensemble's budget each reading measure could not tell apart from its own
#: (``Path.alternatives``) gets beside the measured reading's: the measured reading is what the figures quote, the
#: others only check the choice, so each runs on half the measured one's time
ALTERNATIVE_BUDGET_SHARE = 0.5
#: a recommendation holds on another reading where its score there is within this of that reading's best: issue
#: 30's ranking goal ("the recommended configuration ... within 0.02 of the best ... among the candidates")
SCORE_RESOLUTION = 0.02


def kernel_ccs() -> list[str] | None:
    """Controls this host's kernel offers (None when unknown: not Linux)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            avail = set(f.read().split())
    except OSError:
        return None
    # loadable modules count too (tcp_bbr.ko not yet loaded)
    try:
        rel = os.uname().release
        for root, _, files in os.walk(f"/lib/modules/{rel}/kernel/net/ipv4"):
            avail |= {f.split(".")[0][4:] for f in files if f.startswith("tcp_")}
    except OSError:
        pass
    return sorted(avail)


def current_cc() -> str:
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip() or "cubic"
    except OSError:
        return "cubic"


def host_qdisc() -> tuple[str | None, bool | None]:
    """This host's ``net.core.default_qdisc`` and whether it can run sch_fq
    (built in, loaded or loadable; None when nothing tells: not Linux)."""
    from .host import module_state

    try:
        with open("/proc/sys/net/core/default_qdisc") as f:
            cur = f.read().strip() or None
    except OSError:
        return None, None
    st = module_state("/", "sch_fq")
    return cur, None if st == "unknown" else st in ("built in", "loaded", "loadable")


#: controls the emulator's kernel flows can run (mainline Linux: no BBRv3)
KERNEL_CCS = ("reno", "cubic", "bbr")
#: the neighbour every candidate runs beside (seed 001's question: what a control leaves the CUBIC flows around it),
#: unpaced, at the candidate's RTT and start
NEIGHBOUR_CC = "cubic"


def autorate_settings(path: Path) -> dict | None:
    """cake-autorate's rates for a variable path (docs/autorate.md "Running it for real"): the minimum at the
    capacity's p10, the base at its median, the maximum at its p90; below 2 Mbit/s the connection-active
    threshold comes down to the minimum (``active_threshold_mbps``: the script refuses a minimum below it). None
    where the capacity's p10 or p90 was not read."""
    from .path import AUTORATE_ACTIVE_MBPS

    lo, mid, hi = path.down_rate_p10_mbps, path.down_rate_p50_mbps or path.down_mbps, path.down_rate_p90_mbps
    if not lo or not hi or lo <= 0 or hi <= 0:
        return None
    lo = min(lo, hi)
    mid = min(max(mid, lo), hi)
    return {"min_mbps": lo, "base_mbps": mid, "max_mbps": hi, "active_threshold_mbps": min(lo, AUTORATE_ACTIVE_MBPS)}


def autorate_element(a: dict) -> dict:
    """The scenario's ``autorate`` element of :func:`autorate_settings`."""
    from .path import autorate_doc

    return autorate_doc(a["min_mbps"], a["base_mbps"], a["max_mbps"])


@dataclass
class Candidate:
    cc: str
    queue: str
    shaper_mbps: float | None
    #: the sending host paces every control (sch_fq); BBR paces anyway
    paced: bool = False
    goodput_mbps: float = 0.0
    p95_rtt_ms: float = 0.0
    retrans_rate: float = 0.0
    neighbour_share: float = 0.0
    qdelay_p95_ms: float = 0.0
    #: the same two figures with the CUBIC neighbour running beside the candidate
    p95_rtt_shared_ms: float = 0.0
    qdelay_p95_shared_ms: float = 0.0
    available: bool = True
    score: float = 0.0
    parts: dict = field(default_factory=dict)
    #: the ensemble's members, RTT span, and its goodput's and p95 RTT's ranges (:func:`simulate`)
    ranges: dict = field(default_factory=dict)

    @property
    def share_left(self) -> float:
        """The share of the link this candidate leaves a CUBIC neighbour: ½ where the candidate is that neighbour's
        twin (:data:`NEIGHBOUR_CC`, unpaced as the neighbour is, at the same RTT and start), else the run's
        ``neighbour_share``. Two identical flows split a link evenly in expectation; one run's split says which
        one's slow start ended first. At long RTTs that is a coin the engines toss differently: ranked seed 50
        path 8 (PIE, 46.5 Mbit/s, 287 ms) left the neighbour 0.22-0.32 in 18 runs of the simulator (the flow
        listed first wins there: listed first, the neighbour kept 0.68-0.78 over seeds 1-4) and 0.64-0.84 in 3
        of the kernel; seed 50 path 6 0.24-0.76 in the kernel's
        three. What the candidate does to a neighbour is nothing of that."""
        return 0.5 if self.cc == NEIGHBOUR_CC and not self.paced else self.neighbour_share

    @property
    def loaded_rtt_ms(self) -> float:
        """Latency under load as both a new sparse flow (the probe) and the
        loaded flow itself see it: the larger of the probe's p95 RTT and the
        base RTT plus the bottleneck's p95 queueing delay. A flow-isolating
        queue protects the probe while the bulk flow may still wait behind
        its own backlog; the score counts that wait too. Both runs count:
        the candidate alone and beside a CUBIC neighbour — the line a user
        shares with another download is the line whose latency matters (BBR
        alone keeps a deep FIFO short; a CUBIC flow beside it fills it)."""
        own = max(self.p95_rtt_ms, self._base_ms + self.qdelay_p95_ms)
        shared = max(self.p95_rtt_shared_ms, self._base_ms + self.qdelay_p95_shared_ms)
        return max(own, shared)

    _base_ms: float = 0.0

    @property
    def label(self) -> str:
        q = ("as is" if self.queue == "as-is" else f"{self.queue} @ {self.shaper_mbps:.3g} Mbit/s" if self.shaper_mbps
             else "cake-autorate" if self.queue == "autorate" else f"{self.queue} on the access point")
        host = " (host fq)" if self.paced and not self.cc.startswith("bbr") else ""
        return f"{self.cc}{host} + {q}"

    def figures(self) -> dict:
        return {"cc": self.cc, "queue": self.queue, "shaper_mbps": self.shaper_mbps, "paced": self.paced, "goodput_mbps": self.goodput_mbps,
                "p95_rtt_ms": self.p95_rtt_ms, "p95_rtt_shared_ms": self.p95_rtt_shared_ms, "retrans_rate": self.retrans_rate, "neighbour_share": self.share_left, "neighbour_share_run": self.neighbour_share,
                "qdelay_p95_ms": self.qdelay_p95_ms, "qdelay_p95_shared_ms": self.qdelay_p95_shared_ms, "loaded_rtt_ms": self.loaded_rtt_ms, "available_here": self.available, "score": self.score,
                "ensemble": self.ranges or None}


def members_of(base_rtt_ms: float, members: int = ENSEMBLE, span: float | None = None) -> list[tuple[float, int]]:
    """The ensemble's members, (base RTT ms, the flows' start ns): the RTTs evenly over the measured RTT +- its
    uncertainty — ``span``, a measured path's own (``Path.base_rtt_spread_ms``: the idle probes' median less their
    least), else the accuracy issue 30 asks of measure's base RTT (path.BASE_RTT_GOAL_SHARE, at most
    path.BASE_RTT_GOAL_MS) — and the starts evenly over one
    jiffy of the model's clock (a kernel connection starts at no particular phase of its jiffies and of its 1-ms
    TCP timestamps; a slow start's end can turn on it: the policed path above, at one RTT, delivered 20.7, 27.5 or
    35.2 Mbit/s as its start moved by 0.1-ms steps). The middle member is the measurement itself (start 0).
    (The fidelity suite's ensemble judge spreads a factor of 1 by ``span`` +- 1 %.) Why a measured path's own: the
    goal's +- 1 ms is ten times what the measurement leaves open (campaign seeds 33 and 45: the median base RTT
    0.05-0.2 ms above the truth, the least probe within 0.1 ms of it), and an RTT 1 ms away can end a slow start in
    another round: seed 33 path 35 (a 14.2-Mbit/s FIFO at 128.6 ms, CUBIC) read 8.74-11.49 Mbit/s over 127.7-129.7
    ms, median 10.99, where the kernel's three runs gave 8.66-8.68 and the members within +- 0.06 ms (that path's
    spread) 8.96."""
    from .._native import NS_PER_JIFFY

    if members <= 1:
        return [(base_rtt_ms, 0)]
    u = min(BASE_RTT_GOAL_SHARE * base_rtt_ms, BASE_RTT_GOAL_MS) if span is None else span
    mid = (members - 1) // 2
    return [(base_rtt_ms + u * (2 * i / (members - 1) - 1), (i - mid) % members * NS_PER_JIFFY // members)
            for i in range(members)]


#: how far the measured down rate may lie from the path's, as a share of it: advise's ensemble spreads its members'
#: down rates evenly over +- this (:func:`member_rates`), as it spreads their RTTs over the measured RTT's
#: uncertainty. The share is the down rate's error on the campaigns' fixed wired paths (measured / true - 1): its
#: size at the 68th percentile (one standard deviation's worth) 0.82 % over the 104 of fresh seeds 97-102, then
#: 0.72 % over the 72 of seeds 103, 104 and 106 (median 0.26 / 0.20 %, 90th percentile 2.4 / 3.8 %); 1 %,
#: rounded up. Why: where a slow start's end decides a run the rate moves it as the RTT does — campaign seed 104
#: path 7 (CAKE at 88.4 Mbit/s, 103 ms, read 86.4): one CUBIC flow over 10.3 s got 16.0 Mbit/s on the twin at
#: 84.7-86.4 Mbit/s and 64.4-64.8 at 86.9-88.4, the kernel on the true path 64.5, so the twin's members, all at
#: the measured rate, said 16.0 as if it were sure
RATE_SPREAD_SHARE = 0.01


def member_rates(members: int, share: float | None = None) -> list[float]:
    """Each member's factor on the twin's down rate (:func:`members_of`'s order): evenly over 1 +- ``share``
    (None: :data:`RATE_SPREAD_SHARE`), the middle member's 1 (the measurement itself) — the lowest rate with the
    lowest RTT, so the members' BDPs span both uncertainties."""
    if members <= 1:
        return [1.0]
    share = RATE_SPREAD_SHARE if share is None else share
    return [1.0 + share * (2 * i / (members - 1) - 1) for i in range(members)]


def _at_rate(path: Path, factor: float) -> Path:
    """``path`` with its down rate times ``factor`` (:func:`member_rates`): the policed rate behind a policer (its port
    and bucket as read), the line's elsewhere; itself at 1."""
    return path if factor == 1.0 else replace(path, down_mbps=path.down_mbps * factor)


def _rate_spread(path: Path) -> bool:
    """Whether the ensemble spreads ``path``'s down rate (:func:`member_rates`): a fixed wired capacity. A variable
    one runs each member on its own realization of the fitted process instead (:meth:`Path.member_traces`); a WiFi
    hop's rate is the MAC's at the station's PHY rate, a step of Minstrel-HT's table, not a figure read to 1 %."""
    return not path.down_variable and path.limiter != "wifi"


def _scenario(path: Path, c: Candidate, neighbour: bool, seed: int, duration_s: float | None = None,
              member: tuple[float, int] | None = None, trace: str | None = None) -> dict:
    doc = path.twin(duration_s, cc=c.cc)
    doc["seed"] = seed
    if member is not None:
        doc["flow"][0]["rtt"] = f"{member[0]:.6g}ms"
        if member[1]:
            doc["flow"][0]["start"] = f"{member[1]}ns"
    doc["flow"][0]["pacing"] = c.paced
    if path.limiter == "wifi":
        if c.queue != "as-is":
            doc["wifi"] = path.wifi_doc(c.queue)
    elif c.queue == "autorate":
        doc["link"]["down"] = path.link_doc(autorate=autorate_element(autorate_settings(path)))
    else:
        doc["link"]["down"] = path.link_doc(c.shaper_mbps, None if c.queue == "as-is" else c.queue)
    if trace is not None:
        # a variable capacity's member: its own realization of the fitted process (Path.member_traces)
        doc["link"]["down"]["rate"] = f"trace:{trace}"
    if neighbour:
        # second, before a shared WiFi medium's other stations (Path.wifi_others_flows): pair_figures reads flows 0 and 1
        doc["flow"].insert(1, {k: v for k, v in doc["flow"][0].items() if k in ("rtt", "station", "start")} | {"name": "neighbour", "cc": NEIGHBOUR_CC})
    return doc


def _latency(s: dict) -> tuple[float, float]:
    """(the probe's p95 RTT, the bottleneck's p95 queueing delay) of a run's summary."""
    p95 = s["probes"][0]["rtt_ms"]["p95"] if s["probes"] and s["probes"][0]["rtt_ms"] else float("nan")
    # a WiFi hop's queue is the access point's, per station (the first: the measuring host); behind a wired line
    # (a WiFi hop in front of it, Path.front_wifi_mac) the line's
    link = s["links"]["down"] if (s.get("links") or {}).get("down") else s["stations"][0]
    q = link["qdelay_ms"]["p95"] if link["qdelay_ms"] else 0.0
    return p95, q


def _run_figures(path: Path, c: Candidate, seed: int, engine: str, duration_s: float | None,
                 member: tuple[float, int], trace: str | None = None) -> dict:
    """One member (:func:`members_of`; on a variable capacity its realization's ``trace``): candidate ``c`` on
    the twin, alone with a probe, then beside a CUBIC neighbour; its figures."""
    import bloatlab

    s = bloatlab.run(_scenario(path, c, False, seed, duration_s, member, trace), engine=engine).summary
    sn = bloatlab.run(_scenario(path, c, True, seed, duration_s, member, trace), engine=engine).summary
    return pair_figures(s, sn)


def pair_figures(s: dict, sn: dict) -> dict:
    """A candidate's figures from its run alone with a probe (summary ``s``) and beside a CUBIC neighbour (``sn``):
    what :func:`score` reads."""
    f = s["flows"][0]
    p95, q95 = _latency(s)
    p95s, q95s = _latency(sn)
    n = sn["flows"]
    total = n[0]["goodput_mbps"] + n[1]["goodput_mbps"]
    return {"goodput_mbps": f["goodput_mbps"], "retrans_rate": f["retrans_rate"], "p95_rtt_ms": p95, "qdelay_p95_ms": q95,
            "p95_rtt_shared_ms": p95s, "qdelay_p95_shared_ms": q95s,
            "neighbour_share": n[1]["goodput_mbps"] / total if total > 0 else 0.0}


def _spread(xs: list[float]) -> tuple[float, float, float]:
    """(min, median, max) of the members' figures that are numbers (a run without probe replies has none)."""
    import math
    import statistics

    ys = [x for x in xs if not math.isnan(x)]
    return (min(ys), statistics.median(ys), max(ys)) if ys else (float("nan"),) * 3


def simulate(path: Path, c: Candidate, seed: int = 1, engine: str = "sim", duration_s: float | None = None,
             members: int | None = None) -> Candidate:
    """Run candidate ``c`` on ``path``'s twin (:func:`simulate_all` of one)."""
    simulate_all(path, [c], seed, engine, duration_s, members)
    return c


def _set_figures(c: Candidate, runs: list[dict], ms: list[tuple[float, int]], rates: list[float]) -> None:
    """``c``'s figures, each the median of its members' ``runs`` (at RTTs ``ms``, down rates ``rates`` Mbit/s), and
    their ranges."""
    for k in runs[0]:
        setattr(c, k, _spread([r[k] for r in runs])[1])
    g, p = (_spread([r[k] for r in runs]) for k in ("goodput_mbps", "p95_rtt_ms"))
    c.ranges = {"members": len(runs), "rtt_ms": [min(m[0] for m in ms), max(m[0] for m in ms)],
                "rate_mbps": [min(rates), max(rates)], "goodput_mbps": [g[0], g[2]], "p95_rtt_ms": [p[0], p[2]]}


def ensemble_size(path: Path, candidates: int, duration_s: float | None = None) -> int:
    """Members per candidate: :data:`ENSEMBLE`, fewer (odd, at least 1) where all candidates' runs (alone and
    beside a neighbour) would move more than :data:`ENSEMBLE_BUDGET_PKTS` packets at the bottleneck."""
    dur = duration_s or float(path.twin()["duration"].removesuffix("s"))
    return members_within_budget(candidates * 2 * path.down_mbps * 1e6 / 8 / 1500 * dur)


def members_within_budget(per_member_pkts: float, members: int = ENSEMBLE) -> int:
    """``members`` (odd), fewer by twos down to 1 while they would move more than :data:`ENSEMBLE_BUDGET_PKTS`
    packets at the bottleneck, ``per_member_pkts`` each."""
    k = members
    while k > 1 and k * per_member_pkts > ENSEMBLE_BUDGET_PKTS:
        k -= 2
    return k


def members_within_time(first_s: float, members: int = ENSEMBLE, budget_s: float | None = None) -> int:
    """``members`` (odd), fewer by twos down to 1 while the whole ensemble would take more than ``budget_s``
    (:data:`ENSEMBLE_BUDGET_S`), each member costing what the first took (``first_s``: every candidate's middle
    member, the runs spread over the same threads)."""
    budget_s = ENSEMBLE_BUDGET_S if budget_s is None else budget_s
    k = members
    while k > 1 and k * first_s > budget_s:
        k -= 2
    return k


def simulate_all(path: Path, cands: list[Candidate], seed: int = 1, engine: str = "sim",
                 duration_s: float | None = None, members: int | None = None, progress=None,
                 budget_s: float | None = None) -> None:
    """Run every candidate on ``path``'s twin: alone with a probe, then beside a CUBIC neighbour, for each member
    of its ensemble (:func:`members_of`; ``members`` default :func:`ensemble_size` on the simulator, 1 on the
    emulator: real time); each figure the members' median, the goodput's and p95's ranges in ``c.ranges``. On the
    simulator the runs go on a thread each core (the engine releases the GIL while it runs); ``engine="emu"``: the
    real kernel's TCP through the emulated twin (root), one run at a time.

    Without ``members`` on the simulator the middle member (the measurement itself, the same in every ensemble)
    runs first for every candidate, and the others only as far as its wall time says they fit
    :data:`ENSEMBLE_BUDGET_S` (``budget_s`` instead where given; :func:`members_within_time`): an ensemble on a
    loaded machine shrinks instead of overrunning advise's 60 s; the members run are in ``c.ranges["members"]``."""
    from concurrent.futures import ThreadPoolExecutor

    timed = not members and engine == "sim"
    members = members or (ensemble_size(path, len(cands), duration_s) if engine == "sim" else 1)
    variable = path.down_variable and path.limiter == "fifo"
    if variable:
        path.down_trace_file()  # written once, before the threads read it
    with ThreadPoolExecutor(max_workers=max(os.cpu_count() or 1, 1) if engine == "sim" else 1) as pool:
        # each member its own seed (the middle one, the measurement itself, ``seed``): a kernel connection draws
        # its random loss, BBR's phase and a PIE's drops anew each run, and seven members on one seed drew the same
        # losses (seed 7 path 10's truth, 0.058 % at 310 ms: 2.60, 1.31 x 5, 1.30 Mbit/s; the kernel 3.2-14.8)
        first: list = []
        if timed and members > 1:
            import time

            t0 = time.monotonic()
            first = [pool.submit(_run_figures, path, c, seed, engine, duration_s, members_of(path.base_rtt_ms, 1)[0])
                     for c in cands]
            first = [f.result() for f in first]
            members = members_within_time(time.monotonic() - t0, members, budget_s)
        ms = members_of(path.base_rtt_ms, members, path.base_rtt_spread_ms)
        factors = member_rates(len(ms)) if _rate_spread(path) else [1.0] * len(ms)
        rates = [path.down_mbps * f for f in factors]
        mid = (len(ms) - 1) // 2
        # a variable capacity: each member on its own realization of the fitted process, the middle one on the
        # twin's own (Path.member_traces), so that one realization does not pick the option
        tr = path.member_traces(len(ms)) if variable and len(ms) > 1 else [None] * len(ms)
        try:
            futures = [[pool.submit(_run_figures, _at_rate(path, factors[k]), c, seed + (k - mid) % len(ms), engine,
                                    duration_s, m, tr[(k - mid) % len(ms)])
                        if not (first and k == mid) else None for k, m in enumerate(ms)] for c in cands]
            for i, (c, fs) in enumerate(zip(cands, futures)):
                c._base_ms = path.base_rtt_ms
                _set_figures(c, [first[i] if f is None else f.result() for f in fs], ms, rates)
                if progress:
                    progress(i + 1, len(cands), c)
        finally:
            if variable:
                pool.shutdown(wait=True)  # every run has read its trace
                path.remove_member_traces()


def score(cands: list[Candidate], path: Path, goal: str) -> None:
    """Each candidate's ``parts`` and ``score`` (:func:`score_one`), goodput normalised by the best goodput among
    the candidates this host runs (all of them where it runs none): the goodput a user could have, as the
    campaign's ranking normalises the kernel's runs (``campaign._judge``). Normalised by every candidate's, a
    control this kernel lacks (BBRv3) would set the scale and move the trade-off between the ones it has."""
    usable = [c for c in cands if c.available] or cands
    best_g = max(c.goodput_mbps for c in usable) or 1.0
    for c in cands:
        c.parts, c.score = score_one(c, path, goal, best_g)


def score_one(c: Candidate, path: Path, goal: str, best_g: float) -> tuple[dict, float]:
    """One candidate's normalised figures and its score by ``goal``'s weights, its goodput against ``best_g``."""
    parts = {
        "goodput": c.goodput_mbps / best_g,
        "latency": min(path.base_rtt_ms / c.loaded_rtt_ms, 1.0) if c.loaded_rtt_ms > 0 else 0.0,
        "fairness": min(c.share_left / 0.5, 1.0),
        "retransmissions": max(1.0 - c.retrans_rate / RETRANS_ZERO, 0.0),
    }
    return parts, sum(wi * v for wi, v in zip(GOALS[goal], parts.values()))


def candidates(path: Path, ccs=CCS, queues=QUEUES, paced: bool = True) -> list[Candidate]:
    """Every control under every queue; ``paced``: the host will run sch_fq.
    Behind a WiFi hop the queues are the access point's designs
    (:data:`WIFI_QUEUES`, the measured one being ``as-is``)."""
    if path.limiter == "wifi":
        queues = ("as-is",) + tuple(q for q in WIFI_QUEUES if q != path.wifi_mac)
        return [Candidate(cc, q, None, paced) for q in queues for cc in ccs]
    if path.down_variable:
        # cake-autorate's options (docs/autorate.md): CAKE fixed at the capacity's p10 and at its median, and steered
        a = autorate_settings(path)
        fixed = [Candidate(cc, "cake", round(r, 6), paced) for r in (path.down_rate_p10_mbps, path.down_rate_p50_mbps or path.down_mbps)
                 for cc in ccs]
        steered = [Candidate(cc, "autorate", None, paced) for cc in ccs] if a else []
        return [Candidate(cc, "as-is", None, paced) for cc in ccs] + fixed + steered
    shaper = round(path.down_mbps * SHAPE_FRACTION, 6)
    return [Candidate(cc, q, None if q == "as-is" else shaper, paced) for q in queues for cc in ccs]


def advise(path: Path, goal: str = "balanced", current: str | None = None, available: list[str] | None = None,
           seed: int = 1, progress=None, queues=QUEUES, engine: str = "sim",
           host_qdisc_state: tuple[str | None, bool | None] = (None, None), duration_s: float | None = None,
           members: int | None = None) -> dict:
    """Run every candidate on ``path``'s twin and recommend one.

    ``engine="emu"`` runs the kernel's controls (:data:`KERNEL_CCS`) through the
    emulated twin instead of the model; ``duration_s`` sets each run's length
    (default: 100 base RTTs, 10-30 s); ``members``: each candidate's ensemble
    (default :data:`ENSEMBLE` on the simulator, 1 on the emulator). ``host_qdisc_state`` is (this host's
    default qdisc, whether sch_fq is available here) from :func:`host_qdisc`:
    without sch_fq the sysctl lines leave the qdisc alone (BBR paces by itself
    since Linux 4.13; the reasons say so)."""
    from ..errors import UserError

    if goal not in GOALS:
        raise UserError(f"--goal: expected one of {', '.join(GOALS)}, got {goal!r}")
    if engine not in ("sim", "emu"):
        raise UserError(f"--engine: expected sim or emu, got {engine!r}")
    current = current or current_cc()
    ccs = CCS if engine == "sim" else KERNEL_CCS
    cur_qdisc, fq_here = host_qdisc_state
    # The recommended host runs sch_fq where it can: every candidate paced. Today's host is paced only by fq.
    fq_planned = fq_here is not False
    fq_now = cur_qdisc == "fq" if cur_qdisc is not None else fq_planned
    cands = candidates(path, ccs, queues, paced=fq_planned)
    if current not in ccs:
        from .._native import cc_names

        known = KERNEL_CCS if engine == "emu" else tuple(cc_names())
        if current not in known:
            raise UserError(f"--current-cc: {current!r} (what this host runs today, unless given) is not one "
                            f"{'the emulator runs' if engine == 'emu' else 'the model has'}; give the nearest of "
                            f"{', '.join(known)}")
        cands.append(Candidate(current, "as-is", None, fq_now))
    elif fq_now != fq_planned and not current.startswith("bbr"):
        # today's host paces differently from the candidates (no fq yet): it is a candidate of its own
        cands.append(Candidate(current, "as-is", None, fq_now))
    alts = path.alternative_paths() if engine == "sim" else []
    budget = ENSEMBLE_BUDGET_S / (1 + ALTERNATIVE_BUDGET_SHARE * len(alts))
    simulate_all(path, cands, seed, engine, duration_s, members, progress, budget_s=budget)
    for c in cands:
        c.available = available is None or c.cc in available
    score(cands, path, goal)
    ranked = sorted(cands, key=lambda c: -c.score)
    usable = [c for c in ranked if c.available]
    best = usable[0] if usable else ranked[0]
    others = []
    for alt, ap in alts:
        ac = [Candidate(c.cc, c.queue, c.shaper_mbps, c.paced, available=c.available) for c in cands]
        simulate_all(ap, ac, seed, engine, duration_s, members, budget_s=budget * ALTERNATIVE_BUDGET_SHARE)
        score(ac, ap, goal)
        others.append((alt, ap, ac))
    best, readings = robust_choice(cands, others, best)
    cur = next(c for c in reversed(cands) if c.cc == current and c.queue == "as-is")
    host_q = "fq" if fq_here is not False else (cur_qdisc or "as-is")
    out_reasons = reasons(path, best, cur, cands, ranked)
    out_reasons[1:1] = readings_reasons(best, readings)
    if fq_here is False:
        out_reasons.append(f"This kernel has no sch_fq (not built in, not loadable), so the host keeps its qdisc "
                           f"({cur_qdisc or 'unknown'}): {'BBR paces by itself since Linux 4.13 (TCP internal pacing)' if best.cc.startswith('bbr') else best.cc.upper() + ' then runs unpaced, as it does on most hosts'}.")
    model = ("the real kernel's TCP through the emulated twin (bloatlab-emu, docs/advise.md)" if engine == "emu"
             else "bloatlab simulator on the path's twin (docs/advise.md)")
    return {
        "path": path.as_dict(),
        "goal": goal,
        "engine": engine,
        "recommendation": {
            "cc": best.cc,
            "qdisc": host_q if best.queue == "as-is" or path.limiter == "wifi" else best.queue,
            "host_qdisc": host_q,
            "shaper_mbps": best.shaper_mbps,
            "sysctl": sysctl_for(best, fq_here is not False),
            # behind a WiFi hop: the access point's MAC design (None on a wired path)
            "ap_mac": (path.wifi_mac if best.queue == "as-is" else best.queue) if path.limiter == "wifi" else None,
            # on a variable-rate path: cake-autorate's settings, and whether it is the recommended option (None: fixed rate)
            "autorate": _autorate_advice(path, best),
            # a shaped queue on the router: SQM's script and the tc lines, as modelled (None otherwise)
            "router": router_advice(best) if path.limiter != "wifi" else None,
        },
        "expected": best.figures(),
        "current": cur.figures(),
        "alternatives": [c.figures() for c in ranked],
        # the readings measure could not tell apart from the measured one, each with the candidates' scores on its
        # twin (robust_choice); [] where the reading stood alone
        "readings": readings,
        "reasons": out_reasons,
        "caveats": caveats(path, best, cands),
        "model": model + "; scores: " + ", ".join(f"{k}={v}" for k, v in zip(("goodput", "latency", "fairness", "retrans"), GOALS[goal])),
    }


def robust_choice(cands: list[Candidate], others: list[tuple[dict, Path, list[Candidate]]],
                  best: Candidate) -> tuple[Candidate, list[dict]]:
    """The candidate to recommend where measure could not tell its reading from others: ``cands`` scored on the
    measured reading's twin (``best`` its best), ``others`` the same candidates (in the same order) scored on each
    other reading's twin. A candidate's regret on a reading is how far its score falls below that reading's best
    (among the candidates this host runs). ``best`` stays where its regret is within :data:`SCORE_RESOLUTION` on
    every reading; else the candidate whose largest regret is smallest (minimax regret: the choice that loses least
    whichever reading is the path's), where that is smaller than ``best``'s. Returns it and, per other reading,
    what :func:`readings_reasons` and the JSON say of it."""
    if not others:
        return best, []
    tables = [cands] + [ac for _, _, ac in others]

    def usable(i: int) -> bool:
        return cands[i].available or not any(c.available for c in cands)

    tops = [max(t[i].score for i in range(len(cands)) if usable(i)) for t in tables]

    def worst(i: int) -> float:
        return max(top - t[i].score for top, t in zip(tops, tables))

    b = next(i for i, c in enumerate(cands) if c is best)
    pick = b
    if worst(b) > SCORE_RESOLUTION:
        # ties on the largest regret go to the better score on the measured reading
        i = min((i for i in range(len(cands)) if usable(i)), key=lambda i: (worst(i), -cands[i].score))
        if worst(i) < worst(b):
            pick = i
    out = []
    for (alt, ap, ac), top in zip(others, tops[1:]):
        top_c = max((c for i, c in enumerate(ac) if usable(i)), key=lambda c: c.score)
        buf, lim = ap.reading()
        out.append({"limiter": ap.limiter, "alternative": alt, "path": ap.describe(), "reading": f"{lim}, {buf}",
                    "best": top_c.label,
                    "best_score": top_c.score, "recommended_score": ac[pick].score,
                    "measured_best_score": ac[b].score, "regret": top - ac[pick].score,
                    # the recommended candidate's regret on the measured reading (0 where the choice held)
                    "measured_regret": tops[0] - cands[pick].score,
                    "figures": ac[pick].figures()})
    return cands[pick], out


def readings_reasons(best: Candidate, readings: list[dict]) -> list[str]:
    """The sentences on the readings measure could not tell apart (:func:`robust_choice`): what each is, and
    whether the recommendation holds on its twin or what it costs there; only what the scores show."""
    out = []
    moved = bool(readings) and readings[0]["measured_regret"] > 0
    for r in readings:
        what = r["reading"]
        held = r["regret"] <= SCORE_RESOLUTION
        head = (f"The measurement could not tell this from another reading of the same evidence: {what}"
                + (f" ({r['alternative']['why']})" if r["alternative"].get("why") else "") + ". On that reading's twin ")
        if held:
            there = "the best there" if r["regret"] <= 0 else f"within {r['regret']:.2f} of the best there ({r['best']})"
            out.append(head + f"{best.label} is {there}" + (": the advice holds either way." if not moved else "."))
        else:
            out.append(head + f"{r['best']} would be best ({r['best_score']:.2f}; {best.label} {r['recommended_score']:.2f}).")
    if moved:
        loss = max(r["regret"] for r in readings)
        mine = readings[0]["measured_regret"]
        out.append(f"{best.label} is recommended as the choice that loses least whichever reading is your path's: "
                   f"{mine:.2f} below the best on the measured one, at most {max(loss, mine):.2f} "
                   "below the best on any.")
    return out


def _autorate_advice(path: Path, best: Candidate) -> dict | None:
    a = autorate_settings(path) if path.down_variable else None
    if a is None:
        return None
    from .path import AUTORATE_ACTIVE_MBPS

    kbps = {k: int(round(v * 1000)) for k, v in a.items()}
    active = (f" connection_active_thr_kbps={kbps['active_threshold_mbps']}"
              if a["active_threshold_mbps"] < AUTORATE_ACTIVE_MBPS else "")
    return a | {"recommended": best.queue == "autorate", "delay_threshold_ms": 30.0, "ping_interval_ms": 50.0,
                "how": ("cake-autorate (github.com/lynxthecat/cake-autorate) on the router in front of the link, its "
                        f"config: min_dl_shaper_rate_kbps={kbps['min_mbps']} base_dl_shaper_rate_kbps={kbps['base_mbps']} "
                        f"max_dl_shaper_rate_kbps={kbps['max_mbps']}{active}, the rest at defaults.sh (docs/autorate.md)")}


def router_advice(best: Candidate) -> dict | None:
    """How to set up the recommended shaped queue on the router, as the twin modelled it (``path.user_shaped``):
    OpenWrt's SQM script and rate, and the Linux ``tc`` lines on the interface that carries the download toward
    the user (``DEV``); None where the pick is no shaped queue (as-is, autorate, a WiFi access point's design)."""
    if best.queue not in ("fq_codel", "cake") or not best.shaper_mbps:
        return None
    kbit = int(round(best.shaper_mbps * 1000))
    if best.queue == "cake":
        tc = [f"tc qdisc replace dev DEV root cake bandwidth {kbit}kbit"]
        sqm = "piece_of_cake.qos"
    else:
        burst = user_shaper_burst(best.shaper_mbps)
        tc = ["tc qdisc replace dev DEV root handle 1: htb default 1",
              f"tc class add dev DEV parent 1: classid 1:1 htb rate {kbit}kbit burst {burst}b cburst {burst}b",
              "tc qdisc add dev DEV parent 1:1 fq_codel"]
        sqm = "simple.qos"
    return {"queue": best.queue, "rate_kbit": kbit, "tc": tc,
            "how": (f"OpenWrt SQM (luci-app-sqm): script {sqm}, download {kbit} kbit/s; or on a Linux router the tc "
                    f"lines, DEV the interface toward you (the download's egress there)")}


def sysctl_for(c: Candidate, fq: bool = True) -> dict:
    """The sending host's lines (seed 004): the control, and sch_fq for pacing
    where the kernel has it. A shaped AQM lives on the router that owns the
    bottleneck, not in sysctl."""
    return ({"net.core.default_qdisc": "fq"} if fq else {}) | {"net.ipv4.tcp_congestion_control": c.cc}


def _find(cands, cc, queue):
    return next((c for c in cands if c.cc == cc and c.queue == queue), None)


def reasons(path: Path, best: Candidate, cur: Candidate, cands: list[Candidate], ranked: list[Candidate]) -> list[str]:
    out = [f"Your path: {path.describe()}."]
    if path.front_wifi_mac:
        # the measuring host on WiFi in front of the line (Path.front_wifi_mac): what the hop does to the figures
        out.append(f"This host reaches the line through a WiFi hop (its access point taken as {path.front_wifi_mac}, its "
                   f"rate as ~{path.front_wifi_phy_mbps:.3g} Mbit/s: the measurement sees the hop, not those). Its ACKs go up in "
                   f"aggregates, so the sender's windows meet the line's queue in bursts, which can end a CUBIC slow start "
                   f"early behind an AQM; every figure here is simulated with the hop in front.")
    # the control, under the recommended queue
    cubic = _find(cands, "cubic", best.queue)
    if best.cc != "cubic" and cubic and cubic.goodput_mbps > 0:
        ratio = best.goodput_mbps / cubic.goodput_mbps
        why = ""
        if path.loss >= 0.001:
            why = f": loss-based controls read the {path.loss * 100:.2g} % random loss as congestion and back off"
        elif path.buffer_bdp < 1:
            why = f": a {path.buffer_bdp:.2g}-BDP buffer drains when CUBIC halves its window"
        # (a figure whose members split is said with its range, and no multiple is claimed of it: _goodput)
        if _split(best) or _split(cubic):
            out.append(f"{best.cc.upper()} against CUBIC here: {_goodput(best)} vs {_goodput(cubic)} Mbit/s{why}.")
        elif ratio >= 1.1:
            out.append(f"{best.cc.upper()} keeps {ratio:.2g}x CUBIC's goodput here ({best.goodput_mbps:.3g} vs {cubic.goodput_mbps:.3g} Mbit/s){why}.")
        else:
            out.append(f"{best.cc.upper()} and CUBIC reach about the same goodput here ({best.goodput_mbps:.3g} vs {cubic.goodput_mbps:.3g} Mbit/s); "
                       f"{best.cc.upper()} wins on the other figures of your goal.")
    elif best.cc == "cubic":
        bbr = _find(cands, "bbr", best.queue)
        if bbr:
            # the latency the score weighs where BBR's is the larger by what the figures print apart (behind a
            # flow-isolating queue the probe's p95s match while BBR's own packets wait: Candidate.loaded_rtt_ms)
            lat = (f"; its latency as scored {bbr.loaded_rtt_ms:.0f} ms against CUBIC's {best.loaded_rtt_ms:.0f} "
                   f"({LATENCY_SCORED})" if bbr.loaded_rtt_ms > best.loaded_rtt_ms
                   and _told_apart(bbr.loaded_rtt_ms, best.loaded_rtt_ms) else "")
            out.append(f"CUBIC is enough here: BBR would reach {_goodput(bbr)} vs CUBIC's {_goodput(best)} Mbit/s "
                       f"and leave a CUBIC neighbour {bbr.neighbour_share * 100:.0f} % of the link (CUBIC: {best.share_left * 100:.0f} %){lat}.")
    # the queue
    same_cc_asis = _find(cands, best.cc, "as-is")
    if path.limiter == "wifi" and best.queue != "as-is" and same_cc_asis:
        out.append(f"The WiFi hop is the bottleneck, and its queue is the access point's: {WIFI_HOW[best.queue]} "
                   f"{_change(same_cc_asis, best)} (base {path.base_rtt_ms:.0f} ms).")
    elif path.limiter == "wifi" and best.queue == "as-is":
        out.append(f"The WiFi hop is the bottleneck and its access point ({path.wifi_mac}) can stay as it is: "
                   f"{_loaded_words(path, best)}.")
    elif best.queue != "as-is" and same_cc_asis:
        out.append(f"{_queue_words(path, best)} {_change(same_cc_asis, best)} (base {path.base_rtt_ms:.0f} ms).")
    elif best.queue == "as-is":
        out.append(f"The bottleneck can stay as it is: {_loaded_words(path, best)}.")
    if best.queue == "as-is" and not path.down_variable:
        # the queue not taken that would have cut the delay: what it costs, and its score (ranked seed 159 path 3,
        # a legacy AP at 551 ms: "can stay as it is ... grade F" said nothing of airtime's 564 ms at 3.52 Mbit/s);
        # on a varying capacity the sentence below lists the control's queues with their figures
        alt = _delay_not_taken(best, cands)
        if alt is not None:
            a, b = _scores(alt.score, best.score)
            out.append(f"{_queue_words(path, alt)} {_change(best, alt)}; it scores {a} against {b} for this goal.")
    if path.down_variable:
        opts = [c for c in cands if c.cc == best.cc and (c.queue in ("as-is", "autorate") or c.queue == "cake")]
        if len(opts) > 1:
            out.append(f"Your capacity varies (p10 {path.down_rate_p10_mbps:.3g}, median {(path.down_rate_p50_mbps or path.down_mbps):.3g}, "
                       f"p90 {path.down_rate_p90_mbps:.3g} Mbit/s); with {best.cc.upper()}: "
                       + "; ".join(f"{c.label.split(' + ', 1)[1]}: {c.goodput_mbps:.3g} Mbit/s at a p95 RTT of {_rtts(c)}" for c in opts) + ".")
    # pacing on the host: today's unpaced control against the same control paced by sch_fq
    if cur is not best and cur.cc == best.cc and best.paced and not cur.paced and not best.cc.startswith("bbr"):
        why = (f" (unpaced, slow start sends at twice the rate its ACKs return, and the bursts overflow a "
               f"{path.buffer_bdp:.2g}-BDP buffer)" if path.buffer_bdp < 1 else "")
        out.append(f"Pacing on the sending host (sch_fq) is what helps {best.cc.upper()} here: "
                   f"{best.goodput_mbps:.3g} Mbit/s paced against {cur.goodput_mbps:.3g} unpaced{why}.")
    if cur is not best:
        out.append(f"Against today ({cur.label}): goodput {_goodput(cur)} -> {_goodput(best)} Mbit/s, p95 RTT "
                   f"{_rtts(cur)} -> {_rtts(best)}, retransmissions {cur.retrans_rate * 100:.2g} -> "
                   f"{best.retrans_rate * 100:.2g} %, a CUBIC neighbour keeps {cur.share_left * 100:.0f} -> {best.share_left * 100:.0f} %.")
    else:
        out.append("What you run today is already the best of the candidates for this goal.")
    close = [c for c in ranked if c is not best and c.available and c.cc != best.cc and best.score - c.score < 0.01]
    if close:
        c = close[0]
        a, b = _scores(c.score, best.score)
        out.append(f"A near tie: {c.label} scores {a} against {b}; either serves this goal.")
    better_unavailable = [c for c in ranked if not c.available and c.score > best.score]
    if better_unavailable:
        u = better_unavailable[0]
        a, b = _scores(u.score, best.score)
        higher = "about as high" if a == b else "higher"
        out.append(f"{u.label} would score {higher} ({a} vs {b}) but this host's kernel does not offer {u.cc}.")
    return out


def _scores(a: float, b: float) -> tuple[str, str]:
    """Two scores as a sentence compares them: to 2 decimals, to 3 or 4 where fewer print them alike (ranked seed
    50 path 14: "bbr3 + as is would score higher (0.74 vs 0.74)"), to 2 where 4 do too."""
    for d in (2, 3, 4):
        x, y = f"{a:.{d}f}", f"{b:.{d}f}"
        if x != y:
            return x, y
    return f"{a:.2f}", f"{b:.2f}"  # alike to 4 decimals: a tie, said as one


#: how an access point gets each design (docs/wifi.md, docs/advise.md "A WiFi hop")
WIFI_HOW = {
    "fq": "mac80211's per-station fq_codel (Linux 4.9+ with a driver on mac80211's TXQs: ath9k, ath10k, mt76; OpenWrt 18.06+)",
    "airtime": "mac80211's per-station fq_codel with airtime fairness (Linux 4.11+ on ath9k, 5.x on ath10k and mt76; "
               "OpenWrt 19.07+, on by default)",
}

#: a change of latency or goodput smaller than this share reads as "about the same": a sentence says only what
#: its numbers show (a p95 RTT quoted to the ms, a goodput to 3 digits)
SAME = 0.05


def _queue_words(path: Path, c: Candidate) -> str:
    """Where ``c``'s queue would run, as a sentence's subject: the access point's design behind a WiFi hop, else the
    user's router (a shaper's rate; cake-autorate steers its own, so none is named)."""
    if path.limiter == "wifi" and c.queue in WIFI_HOW:
        return f"{c.queue.capitalize()} on the access point ({WIFI_HOW[c.queue].split(' (')[0]})"
    if c.queue == "autorate":
        return "cake-autorate on a router you own"
    return f"{c.queue} shaped at {c.shaper_mbps:.3g} Mbit/s on a router you own" if c.shaper_mbps else f"{c.queue} on a router you own"


def _delay_not_taken(best: Candidate, cands: list[Candidate]) -> Candidate | None:
    """The best-scoring candidate of ``best``'s control on another queue this host can have, scored no higher than
    ``best``, whose p95 RTT under load lies below ``best``'s by more than :data:`SAME` and than the words print alike
    (every pair :func:`_change` quotes), or None: what leaving the queue as it is forgoes."""
    for c in sorted(cands, key=lambda c: -c.score):
        # (one that scores higher was passed over for another reason, which robust_choice's sentences give)
        if c is best or c.cc != best.cc or c.queue == best.queue or not c.available or c.paced != best.paced \
                or c.score > best.score:
            continue
        pairs = _rtt_pairs(best, c)
        if all(b < a * (1 - SAME) and _told_apart(a, b) for a, b in pairs):
            return c
    return None


def _rtt_pairs(before: Candidate, after: Candidate) -> list[tuple[float, float]]:
    """The p95 RTTs under load :func:`_change` quotes, (before, after): one pair (the larger of alone and beside the
    CUBIC neighbour) where each candidate's two are close, else alone and beside."""
    if not _told_apart(before.p95_rtt_ms, before.p95_rtt_shared_ms) and not _told_apart(after.p95_rtt_ms, after.p95_rtt_shared_ms):
        return [(max(before.p95_rtt_ms, before.p95_rtt_shared_ms), max(after.p95_rtt_ms, after.p95_rtt_shared_ms))]
    return [(before.p95_rtt_ms, after.p95_rtt_ms), (before.p95_rtt_shared_ms, after.p95_rtt_shared_ms)]


def _change(before: Candidate, after: Candidate) -> str:
    """What a change of queue does to the p95 RTT under load and to the goodput, in words its numbers support:
    "cuts" only a fall, "raises" a rise, "keeps about" what moved less than :data:`SAME`; the goodput's change as
    a positive percentage with its direction in words (issue 30: "cuts the p95 RTT from 30 ms to 31 ms for
    -810 % of the goodput")."""
    # the figures quoted are the figures judged (_rtt_pairs); a cut is a cut of every pair quoted
    def ms(v):
        # enough digits that a move beyond SAME (5 %) shows: whole ms from 20 ms, a tenth from 2 ms, a hundredth
        # below (3.4 -> 2.6 ms read "3 ms to 3 ms" in whole ms)
        return f"{v:.0f}" if v >= 19.95 else f"{v:.1f}" if v >= 1.995 else f"{v:.2f}"

    pairs = _rtt_pairs(before, after)
    if len(pairs) == 1:
        text = f"{ms(pairs[0][0])} ms to {ms(pairs[0][1])} ms"
    else:
        text = (f"{ms(pairs[0][0])} ms to {ms(pairs[0][1])} ms alone and from {ms(pairs[1][0])} ms to "
                f"{ms(pairs[1][1])} ms beside a CUBIC download")
    moves = [(b - a) / a if a > 0 else 0.0 for a, b in pairs]
    if all(m < -SAME for m in moves):
        rtt = f"cuts the p95 RTT under load from {text}"
    elif all(m > SAME for m in moves):
        rtt = f"raises the p95 RTT under load from {text}"
    elif all(abs(m) <= SAME for m in moves):
        rtt = f"keeps the p95 RTT under load about the same (from {text})"
    else:
        rtt = f"moves the p95 RTT under load from {text}"
    g0, g1 = before.goodput_mbps, after.goodput_mbps
    if g0 <= 0 or g1 <= 0:
        return f"{rtt}, at {g1:.3g} Mbit/s of goodput against {g0:.3g}"
    d = g1 / g0 - 1
    figures = f"{_goodput(before)} -> {_goodput(after)} Mbit/s"
    if _split(before) or _split(after):
        # members in two outcomes: their median's ratio is no change the twin can claim (seed 104 path 7 read "with
        # 4 times the goodput" where the kernel's today was the recommendation's)
        good = f"at a goodput of {figures}"
    elif abs(d) < 0.005:
        good = "at the same goodput"
    elif d < 0:
        good = f"for {-d * 100:.2g} % less goodput ({figures})"
    elif g1 >= 2 * g0:
        # a multiple reads as one ("1.1e+03 % more" did: campaign seed 50 path 0, 14.7 -> 179 Mbit/s)
        good = f"with {g1 / g0:.2g} times the goodput ({figures})"
    else:
        good = f"with {d * 100:.2g} % more goodput ({figures})"
    return f"{rtt} {good}"


#: a goodput whose ensemble members spread wider than this (their most over their least, less 1) is said with its
#: range: issue 30 judges a predicted goodput within 15 % of the kernel's, and members further apart than that do
#: not make one prediction (campaign seed 104 path 7: 16.0 on four members, 64.4-64.6 on three; the kernel 64.5)
GOODPUT_SPLIT = 0.15


def _goodput(c: Candidate) -> str:
    """A candidate's goodput as the reasons quote it: its members' median, and their range where they spread wider
    than :data:`GOODPUT_SPLIT` (where a slow start's end decides a run, the rate and RTT the measurement cannot
    exclude move it between outcomes)."""
    if _split(c):
        lo, hi = c.ranges["goodput_mbps"]
        return f"{c.goodput_mbps:.3g} (its twin's members {lo:.3g}-{hi:.3g})"
    return f"{c.goodput_mbps:.3g}"


def _split(c: Candidate) -> bool:
    """Whether ``c``'s ensemble members' goodputs spread wider than :data:`GOODPUT_SPLIT`."""
    lo, hi = (c.ranges or {}).get("goodput_mbps") or (c.goodput_mbps, c.goodput_mbps)
    return lo > 0 and hi / lo - 1 > GOODPUT_SPLIT


def split_caveat(path: Path, best: Candidate, cands: list[Candidate]) -> str | None:
    """Where the recommended candidate's members split (:func:`_split`), what its lower figure means, and the
    usable candidate whose members agree with the best goodput where that beats the lower figure by more than
    :data:`GOODPUT_SPLIT`: the score weighs the members' median, and a real path lands on either figure (seed 101
    path 48, CAKE at 41.4 Mbit/s and 115 ms: CUBIC as is 30.3 on five members and 9.19 on two; the kernel 9.03-9.04
    in three runs, BBR's 36.7 steady on every member)."""
    if not _split(best):
        return None
    lo, hi = best.ranges["goodput_mbps"]
    cake = best.queue == "cake" or (best.queue == "as-is" and path.aqm_qdisc == "cake")
    said = (f"{best.label}: the twin's members spread from {lo:.3g} to {hi:.3g} Mbit/s, and the score weighs their "
            f"median; where a slow start's end decides a run"
            + (" (behind CAKE: COBALT's first signal, docs/fidelity.md)" if cake else "")
            + ", the real path can give the lower figure.")
    steady = [c for c in cands if c is not best and c.available and not _split(c) and c.ranges
              and c.ranges["goodput_mbps"][0] > lo * (1 + GOODPUT_SPLIT)]
    if steady:
        alt = max(steady, key=lambda c: c.ranges["goodput_mbps"][0])
        a_lo, a_hi = alt.ranges["goodput_mbps"]
        said += f" {alt.label} does not: {a_lo:.3g}-{a_hi:.3g} Mbit/s on every member (score {alt.score:.2f})."
    return said


def _told_apart(a_ms: float, b_ms: float) -> bool:
    """Whether two delays (ms) differ by more than the words print alike: a millisecond (they print whole ms), or
    a tenth of the smaller."""
    return abs(a_ms - b_ms) > max(1.0, 0.1 * min(a_ms, b_ms))


def _rtts(c: Candidate) -> str:
    """A candidate's p95 RTT alone and beside the CUBIC neighbour, as the reasons quote it."""
    a, b = c.p95_rtt_ms, c.p95_rtt_shared_ms
    if not _told_apart(a, b):
        return f"{max(a, b):.0f} ms"
    return f"{a:.0f} ms ({b:.0f} ms beside a CUBIC download)"


def _loaded_words(path: Path, c: Candidate) -> str:
    """What a queue left as it is adds under load: ``c``'s p95 RTT (:func:`_rtts`) and the most it adds to the base,
    with its bufferbloat grade. Below a millisecond that is "within 1 ms of the base", not "at worst 0 ms above"
    it (a CAKE at 139.7 Mbit/s, 21.5 ms: its twin's p95 22 ms; ranked seed 130 path 1), nor a negative figure where
    the ensemble's p95 falls within the base's rounding."""
    added = max(c.p95_rtt_ms, c.p95_rtt_shared_ms) - path.base_rtt_ms
    by = f"at worst {added:.0f} ms above the base" if added >= 1.0 else "within 1 ms of the base"
    return f"the p95 RTT under load is {_rtts(c)}, {by} (bufferbloat grade {_grade(max(added, 0.0))})"


def _grade(added_ms: float) -> str:
    from .path import grade

    return grade(added_ms)


def caveats(path: Path, best: Candidate, cands: list[Candidate]) -> list[str]:
    out = []
    split = split_caveat(path, best, cands)
    if split:
        out.append(split)
    if best.cc == "bbr" and best.share_left < 0.35:
        out.append(f"BBRv1 takes more than its share: a CUBIC flow beside it keeps only {best.share_left * 100:.0f} % of the link "
                   "(seed 001: BBR is unfair to CUBIC, most in buffers below 1-2 BDP).")
    if best.cc.startswith("bbr") and best.retrans_rate > 0.01:
        out.append(f"{best.cc.upper()} retransmits {best.retrans_rate * 100:.2g} % of its segments on this path (it does not back off on loss).")
    if path.limiter == "policer":
        out.append("A policer punishes bursts: drops come in bursts when a sender exceeds the token bucket; pacing (sch_fq) helps every control.")
    if path.limiter == "wifi":
        out.append("A shaper (CAKE, fq_codel) in front of the access point would not own its queue: the WiFi rate moves "
                   "with the station's signal and the other stations' airtime; the access point's own queue does.")
    elif best.queue != "as-is":
        out.append("fq_codel/CAKE only help if they own the bottleneck: shape just below the line rate on the router in front of it "
                   "(and re-measure if the line rate changes).")
    if best.cc == "bbr3":
        out.append("BBRv3 is not in mainline Linux: it needs Google's tree (github.com/google/bbr, branch v3).")
    return out
