"""Expectations: transperf's pass/fail scores, as ``[[expect]]`` tables of an experiment file.

Source: google/transperf, README "Testing Metrics" and ``__init__.py``
(``default_check_tput``, ``default_check_rtt``, ``default_check_loss``,
``default_check_fairness``, ``default_check_convergence``; commit 50b9cf8).
Every score is 0-100, higher is better, and a check passes when its score is
at least the threshold (``min``)::

    [[expect]]
    check = "tput"                 # tput rtt_med lock_on_bw loss_avoid fairness convergence_fairness
    min = 80                       # transperf's threshold for that score
    convergence_sec = 4            # fairness, convergence_fairness: seconds before fairness is asked for

The scores, as transperf computes them (b_i: flow i's goodput in 1-s buckets,
from its cumulative delivered bytes at each whole second; BW the bottleneck
rate, or the policer's if lower):

- ``tput``: the mean over the buckets t = 1 s ... duration of 100 * sum_i b_i / BW.
- ``rtt_med``: per BBR flow, 100 * minRTT_i / medRTT_i (minRTT: the lowest
  smoothed RTT sampled, medRTT: the median of its RTT samples); transperf
  also fails a flow whose medRTT exceeds 1.1 * (base RTT + the buffer's
  drain time, ceil(buffer_pkts * 1514 * 8 / BW) ms), and so does this.
- ``lock_on_bw``: per BBR flow, 100 * (the bandwidth estimate when it left
  STARTUP) / (BW / number of flows). transperf reads the estimate from the
  kernel's BBR log; here it is the flow's highest delivery rate up to its
  first sample outside STARTUP (the simulator names the state; the kernel
  does not, and there the exit is the first sample whose pacing rate falls
  under half the highest so far: STARTUP paces at 2.89x, DRAIN at 0.35x).
- ``loss_avoid``: per BBR flow, 100 * (1 - retransmitted / sent segments).
- ``fairness``: the mean over the buckets t >= convergence_sec of Jain's
  index 100 * (sum b_i)^2 / (n * sum b_i^2) over all n flows (n = 1: passes).
- ``convergence_fairness``: the same index in *every* bucket t >= convergence_sec
  (transperf skips it for runs of 2 s or less, and for one flow).

"Per BBR flow" is transperf's rule: rtt_med, loss_avoid and lock_on_bw look at
BBR flows only (its ``_BBR = ['bbr', 'bbr2']``: here ``bbr`` and ``bbr3``); a
run without one leaves them not evaluated. transperf's convergence check also
compares each bucket's summed throughput in bit/s with the ``tput``
percentage (a comparison that always passes); that part is not copied.

A check holds when it holds in every run of the sweep; each becomes a
:class:`~bloatlab.study.check.Claim`, so ``sweep`` and ``reproduce --check``
print and store them like an experiment's claims.
"""

from __future__ import annotations

import math

from ..errors import ScenarioError
from .check import Claim

CHECKS = ("tput", "rtt_med", "lock_on_bw", "loss_avoid", "fairness", "convergence_fairness")
#: transperf's ``_BBR``: the controls rtt_med, loss_avoid and lock_on_bw apply to
BBR_CCS = ("bbr", "bbr3")
#: transperf's CONVERGENCE_BUCKET (s)
BUCKET_S = 1.0
#: transperf's default_target_score()['convergence_sec'] (s)
DEFAULT_CONVERGENCE_S = 4.0
#: the frame transperf's RTT bound counts a buffered packet as (B)
WIRE_PKT = 1514
#: BBR's STARTUP exit as the kernel's pacing rate shows it: DRAIN paces 0.35/2.89 of STARTUP
PACING_DROP = 0.5
#: transperf's relaxed_requirement on the median RTT ("for false-positives")
RTT_SLACK = 1.1


# -- the scores (pure; transperf's arithmetic) ------------------------------------------------------------------------

def jain(xs: list[float]) -> float:
    """100 * (sum x)^2 / (n * sum x^2); 0 when every x is 0 (transperf's ConvergenceMetricPublisher)."""
    s2 = sum(x * x for x in xs)
    return 100.0 * sum(xs) ** 2 / s2 / len(xs) if s2 > 0 else 0.0


def tput_score(totals_mbps: list[float], bw_mbps: float) -> float:
    """Mean over the buckets of 100 * (the flows' summed goodput) / BW."""
    return sum(100.0 * t / bw_mbps for t in totals_mbps) / len(totals_mbps)


def rtt_med_score(min_rtt_ms: float, med_rtt_ms: float) -> float:
    return 100.0 * min_rtt_ms / med_rtt_ms


def rtt_bound_ms(base_rtt_ms: float, buffer_pkts: float, bw_mbps: float) -> float:
    """transperf's ceiling on the median RTT: 1.1 * (RTT + ceil(buffer drain time in ms))."""
    return RTT_SLACK * (base_rtt_ms + math.ceil(1000.0 * buffer_pkts * WIRE_PKT * 8 / (bw_mbps * 1e6)))


def loss_avoid_score(retrans_rate: float) -> float:
    return 100.0 * (1.0 - retrans_rate)


def lock_on_bw_score(lock_bw_mbps: float, bw_mbps: float, nconns: int) -> float:
    return 100.0 * lock_bw_mbps / (bw_mbps / nconns)


def fairness_score(buckets: list[tuple[float, list[float]]], convergence_s: float) -> float | None:
    """Mean Jain index over the buckets ending at t >= convergence_s (None: no such bucket)."""
    js = [jain(b) for t, b in buckets if t >= convergence_s]
    return sum(js) / len(js) if js else None


def convergence_fairness_score(buckets: list[tuple[float, list[float]]], convergence_s: float) -> float | None:
    """The lowest Jain index of a bucket ending at t >= convergence_s (None: no such bucket)."""
    js = [jain(b) for t, b in buckets if t >= convergence_s]
    return min(js) if js else None


# -- from a run ---------------------------------------------------------------------------------------------------

def buckets(flows, duration_s: float) -> list[tuple[float, list[float]]]:
    """(t, [b_i in Mbit/s]) for t = 1, 2, ... <= duration_s: each flow's delivered bytes in (t - 1, t], from its
    cumulative ``delivered_bytes`` samples (the last sample at or before each whole second)."""
    ids = sorted(flows["flow"].unique())
    n = int(math.floor(duration_s / BUCKET_S + 1e-9))
    ends = [BUCKET_S * (k + 1) for k in range(n)]
    at = {}
    for fid in ids:
        f = flows[flows["flow"] == fid].sort_values("t")
        t, d = f["t"].to_numpy(), f["delivered_bytes"].to_numpy()
        vals, j, last = [], 0, 0.0
        for e in ends:
            while j < len(t) and t[j] <= e + 1e-9:
                last = float(d[j])
                j += 1
            vals.append(last)
        at[fid] = vals
    out = []
    for k, e in enumerate(ends):
        out.append((e, [8 * (at[f][k] - (at[f][k - 1] if k else 0.0)) / BUCKET_S / 1e6 for f in ids]))
    return out


def lock_on_bw_mbps(flow) -> float | None:
    """The flow's highest delivery rate up to its STARTUP exit (Mbit/s); None if the exit is not seen."""
    f = flow.sort_values("t")
    if "state" in f and f["state"].notna().any():
        out = f.index[(f["state"].astype(str) != "STARTUP").to_numpy()]
        if len(out) == 0:
            return None
        upto = f.loc[:out[0]]
    else:
        p = f["pacing_rate_bps"].to_numpy()
        run_max, cut = 0.0, None
        for i, v in enumerate(p):
            if run_max > 0 and v < PACING_DROP * run_max:
                cut = i
                break
            run_max = max(run_max, v)
        if cut is None:
            return None
        upto = f.iloc[:cut + 1]
    return float(upto["delivery_rate_bps"].max()) / 1e6


def bottleneck_mbps(summary: dict) -> float:
    """transperf's bwlink: the down link's rate, or its policer's if lower."""
    from ..units import parse_rate

    bw = float(summary["links"]["down"]["rate_mbps"])
    pol = (summary.get("scenario", {}).get("link", {}).get("down", {}) or {}).get("policer")
    if isinstance(pol, dict) and pol.get("rate"):
        pr = parse_rate(pol["rate"]) / 1e6
        if 0 < pr < bw:
            bw = pr
    return bw


def buffer_pkts(link: dict) -> float:
    """The down link's buffer in packets (transperf's exp.buf): as configured, else its bytes in 1514-B frames."""
    if link.get("buffer_pkts"):
        return float(link["buffer_pkts"])
    return float(link.get("buffer_bytes") or 0) / WIRE_PKT


def scores(result) -> dict:
    """Every check's score for one run: {check: (score or None, detail text)}; per-flow checks give the worst
    flow's score."""
    s = result.summary
    dur = float(s["duration_s"])
    bw = bottleneck_mbps(s)
    flows = result.flows
    fl = [f for f in s["flows"] if f.get("page") is None]
    n = len(fl)
    b = buckets(flows, dur) if not flows.empty else []
    out: dict = {}
    out["tput"] = ((tput_score([sum(x) for _, x in b], bw), f"{len(b)} 1-s buckets, BW {bw:g} Mbit/s")
                   if b else (None, "no time series"))
    bbr = [f for f in fl if f["cc"] in BBR_CCS]
    worst: dict = {"rtt_med": [], "loss_avoid": [], "lock_on_bw": []}
    down = s["links"]["down"]
    for f in bbr:
        ser = flows[flows["flow"] == f["id"]]
        srtt = ser["srtt_ms"][ser["srtt_ms"] > 0] if "srtt_ms" in ser else []
        med = (f.get("rtt_ms") or {}).get("p50")
        if len(srtt) and med:
            sc = rtt_med_score(float(srtt.min()), float(med))
            bound = rtt_bound_ms(float(f["rtt_base_ms"]), buffer_pkts(down), bw)
            if med >= bound:  # transperf's case.expect(med_rtt < max_allowed_rtt): a failure whatever the score
                sc = min(sc, 0.0)
            worst["rtt_med"].append((sc, f"{f['name']}: min {float(srtt.min()):.1f} / median {med:.1f} ms"
                                     + (f" (above transperf's bound {bound:.1f} ms)" if med >= bound else "")))
        worst["loss_avoid"].append((loss_avoid_score(float(f["retrans_rate"])),
                                    f"{f['name']}: {float(f['retrans_rate']):.2%} retransmitted"))
        lk = lock_on_bw_mbps(ser) if len(ser) else None
        if lk is not None:
            worst["lock_on_bw"].append((lock_on_bw_score(lk, bw, n), f"{f['name']}: left STARTUP at {lk:.2f} Mbit/s, "
                                        f"fair share {bw / n:.2f}"))
    for k, v in worst.items():
        if not bbr:
            out[k] = (None, "no BBR flow (transperf scores it on BBR flows only)")
        elif not v:
            out[k] = (None, "no STARTUP exit seen" if k == "lock_on_bw" else "no RTT samples")
        else:
            out[k] = min(v, key=lambda x: x[0])
    return out


def run_scores(result, check: str, convergence_s: float) -> tuple[float | None, str]:
    """One check's score for one run, with what it was computed from."""
    if check in ("tput", "rtt_med", "loss_avoid", "lock_on_bw"):
        return scores(result)[check]
    s = result.summary
    dur = float(s["duration_s"])
    nflows = sum(1 for f in s["flows"] if f.get("page") is None)
    if nflows <= 1:
        return None, "one flow (transperf skips fairness for one connection)"
    if not 0 <= convergence_s <= dur:
        return None, f"convergence_sec {convergence_s:g} not in [0, {dur:g}] (transperf: an error)"
    if check == "convergence_fairness" and dur <= 2 * BUCKET_S:
        return None, f"a run of {dur:g} s (transperf checks convergence only beyond 2 s)"
    b = buckets(result.flows, dur)
    f = fairness_score if check == "fairness" else convergence_fairness_score
    v = f(b, convergence_s)
    what = "mean" if check == "fairness" else "lowest"
    return (v, f"{what} Jain index over {sum(1 for t, _ in b if t >= convergence_s)} 1-s buckets from "
               f"{convergence_s:g} s") if v is not None else (None, "no bucket after convergence_sec")


# -- the [[expect]] tables -----------------------------------------------------------------------------------------

def parse(doc) -> list[dict]:
    """Validate ``[[expect]]`` tables with the scenario language (a scenario's
    and an experiment file's are one table: crates/schema/src/language); an
    error names the key (``expect.1.min``). Each: {check, min, convergence_sec}."""
    from .. import _native

    try:
        return list(_native.scenario_expect(doc))
    except ValueError as e:
        if len(e.args) == 2:
            raise ScenarioError(*e.args) from None
        raise


def judge_run(result, expects: list[dict]) -> list[dict]:
    """Each expectation on one run (``bloatlab run``): {check, min, score, holds, detail}; ``holds`` is None
    where transperf does not score it (one flow for fairness, no BBR flow for rtt_med, ...)."""
    out = []
    for e in expects:
        v, detail = run_scores(result, e["check"], e["convergence_sec"])
        out.append({"check": e["check"], "min": e["min"], "score": v, "holds": None if v is None else v >= e["min"],
                    "detail": detail})
    return out


def evaluate(store, expects: list[dict]) -> list[Claim]:
    """One claim per expectation: it holds when every run of the store scores at least ``min``."""
    runs = store.runs
    results = {rid: store.result(rid) for rid in runs["run_id"]} if len(runs) else {}
    claims = []
    for i, e in enumerate(expects):
        chk, lo = e["check"], e["min"]
        conv = f", convergence_sec {e['convergence_sec']:g}" if chk in ("fairness", "convergence_fairness") else ""
        c = Claim(f"expect.{i}.{chk}", f"transperf score {chk} >= {lo:g}{conv} (google/transperf README)",
                  f"{chk} >= {lo:g} in every run (transperf's definition: python/bloatlab/study/expect.py)")
        if not results:
            claims.append(c.skip("no finished run in the store"))
            continue
        got, why_not = {}, {}
        for rid, res in results.items():
            v, detail = run_scores(res, chk, e["convergence_sec"])
            (got if v is not None else why_not)[rid] = (v, detail)
        if not got:
            claims.append(c.skip("; ".join(sorted({d for _, d in why_not.values()}))))
            continue
        rid, (v, detail) = min(got.items(), key=lambda kv: kv[1][0])
        fails = sum(1 for x, _ in got.values() if x < lo)
        text = (f"lowest {chk} {v:.1f} (run {rid}: {detail}); {len(got) - fails} of {len(got)} runs >= {lo:g}"
                + (f"; {len(why_not)} not scored: {next(iter(why_not.values()))[1]}" if why_not else ""))
        claims.append(c.judge(fails == 0, text, lowest=v, runs=len(got), failing=fails))
    return claims
