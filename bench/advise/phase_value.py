"""Whether ``measure``'s BBR rate phase changes a reading, and what ``measure.rate_phase_plan`` leaving it out
saves: stored measurements read again offline (issue 30 §1, ``measure --quick`` ≤ 20 s; docs/advise.md "Where
measure's time goes").

    PYTHONPATH=python python bench/advise/phase_value.py DIR [DIR ...] [--rows] [--json OUT]

For every stored direction whose BBR phase ran (``phases_s["bbr"]``) two readings of today's code, as
``replay.read_direction`` makes them from what was stored: *with* the phase, and *without* it — its rate out of
``rate_by_cc``, the evidence the fill's (where the stored evidence was the BBR phase's, rebuilt from the fill's
figures the record keeps: ``fill_flow_q50_ms`` / ``q95``, ``fill_dropped``, ``added_delay_ms`` (the fill's probes),
``retrans_rate``, the idle loss; its window's drops are not kept, so ``window_dropped`` is unknown), the capacity's
variation the fill's where that is the one kept. Each is judged against the truth (``campaign.direction_truth``,
replay's judge): the limiter right, right or named (``campaign.limiter_said``), the rate within 10 % (fixed
capacities), a FIFO's or tbf's buffer within the campaign's 30 %. The base RTT is read before the loads and no
loaded phase moves it.

Then ``measure.rate_phase_plan`` on the fill's evidence as stored (its variation only where the fill's is the one
kept: else the *busy* rule cannot be read and the phase counts as run), and per measurement the ``elapsed_s`` less
the wall time (``phases_s``) of each BBR phase the rule leaves out, against 20 s: per campaign directory, and on
paths ``--paths A-B`` separately. Printed: each direction the rule skips and what moved; each direction whose
reading the phase moves (``--rows``: every direction whose phase ran); the counts; and what the other phase that
always runs and can be withheld from a stored measurement, the large probes, moves (:func:`serialization_withheld`).
Nothing is sent on the network and nothing is written into DIR.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import replay  # noqa: E402  (bench/advise/replay.py: today's reading of a stored direction)

from bloatlab.advise import campaign as C  # noqa: E402
from bloatlab.advise import measure as M  # noqa: E402
from bloatlab.advise.evidence import variable_rate  # noqa: E402
from bloatlab.advise.path import BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE  # noqa: E402
from bloatlab.advise.physics import mathis_loss  # noqa: E402

#: issue 30's goal for ``measure --quick`` (s)
GOAL_S = 20.0

#: the rate goal (campaign.GOALS)
RATE_TOL = next(tol for key, tol, _ in C.GOALS if key == "rate")

#: the buffer goal (campaign.GOALS)
BUFFER_TOL = next(tol for key, tol, _ in C.GOALS if key == "buffer")

#: what is judged, in the order of :func:`judge`'s tuple (after the limiter itself)
JUDGED = ("right", "named", "rate", "buffer", "variable")


def fill_evidence(report: dict, d: str) -> dict:
    """The fill phase's evidence of direction ``d`` of a stored ``measure.json``: the stored evidence where it is the
    fill's, else rebuilt from the fill's figures the record keeps (its window's drops unknown)."""
    x = report[d]
    ev = x["evidence"]
    if ev.get("phase") == "fill":
        return dict(ev)
    rate = x["rate_by_cc"][x["load_cc"]]
    base, loss = report["base_rtt_ms"]["p50"], report.get("loss", 0.0)
    loaded = base + x["fill_flow_q50_ms"]
    return {"phase": "fill", "rate_mbps": rate, "probe_q95_ms": x["added_delay_ms"],
            "probe_p50_rtt": x["loaded_rtt_ms"]["p50"], "probe_p95_rtt": x["loaded_rtt_ms"]["p95"],
            "flow_q50_ms": x["fill_flow_q50_ms"], "flow_q95_ms": x["fill_flow_q95_ms"], "dropped": x["fill_dropped"],
            "retrans_rate": x["retrans_rate"], "excess_loss": max(x["retrans_rate"] - loss, 0.0),
            "loaded_rtt_ms": loaded, "mathis_loss": mathis_loss(rate, x.get("flows", 4), loaded), "window_dropped": None}


def fill_variation(x: dict) -> dict | None:
    """The fill's variation windows where the stored one is the fill's (``rate_variation.phase``), else None."""
    v = x.get("rate_variation")
    return v if v and v.get("phase") == x["load_cc"] else None


def without_rate_phase(report: dict, d: str) -> dict:
    """A copy of the stored ``report`` as if direction ``d``'s BBR phase had not run."""
    r = copy.deepcopy(report)
    x = r[d]
    fc = x["load_cc"]
    x["evidence"] = fill_evidence(report, d)
    x["rate_mbps"] = x["rate_by_cc"][fc]
    x["rate_by_cc"] = {fc: x["rate_by_cc"][fc]}
    x["rate_from"] = {k: v for k, v in (x.get("rate_from") or {}).items() if k == fc}
    x["rate_variation"] = fill_variation(report[d])
    if (x.get("buffer_window") or {}).get("phase") == "bbr":
        x["buffer_window"] = None
    x["phases_s"] = {k: s for k, s in x["phases_s"].items() if k != "bbr"}
    return r


def plan(report: dict, d: str) -> tuple[bool, str]:
    """``measure.rate_phase_plan`` on direction ``d``'s stored fill (the path was lossy where the fill ran BBR)."""
    x = report[d]
    return M.rate_phase_plan(fill_evidence(report, d), x["rate_by_cc"][x["load_cc"]], x.get("flows", 4),
                             x["load_cc"] == "bbr", fill_variation(x), (report.get("ports_mbps") or {}).get(d),
                             port_spaced=d == "down")


def judge(y: dict, t: dict, d: str, variation_known: bool = True) -> tuple:
    """(limiter, right, right or named, rate within the goal, buffer within the goal, a FIFO's capacity read
    variable as the truth's is (down: ``evidence.variable_rate``, the campaign's ``variable_right``)); None where
    the goal does not apply or, for the variation, where it is not known (a fill whose variation was not kept)."""
    said = C.limiter_said(t, {"limiter": y["limiter"], "limiter_alternatives": y.get("limiter_alternatives"),
                              "aqm_qdisc": y.get("aqm_qdisc")})
    truth_rate = None if t.get("variable") else t["down_mbps"]
    rate = None if truth_rate is None else abs(y["rate_mbps"] / truth_rate - 1) <= RATE_TOL
    buf = None
    if t["limiter"] in ("fifo", "shaper") and y.get("buffer_bytes") and t.get("buffer_bytes"):
        buf = abs(y["buffer_bytes"] / t["buffer_bytes"] - 1) <= BUFFER_TOL
    var = None
    if d == "down" and t["limiter"] == "fifo" and variation_known:
        var = bool(variable_rate(y.get("rate_variation"))) == bool(t.get("variable"))
    return y["limiter"], y["limiter"] == t["observable"], said, rate, buf, var


def moves(a: tuple, b: tuple) -> list[str]:
    """What moved from judgement ``a`` to ``b``: ``limiter``, ``K right->wrong`` / ``K wrong->right``."""
    out = ["limiter"] if a[0] != b[0] else []
    for k, x, y in zip(JUDGED, a[1:], b[1:]):
        if x is True and y is False:
            out.append(f"{k} right->wrong")
        elif x is False and y is True:
            out.append(f"{k} wrong->right")
    return out


def serialization_withheld(report: dict, truth: dict) -> dict:
    """The other phase that always runs and that a stored measurement can be read without: the large probes'
    (``measure._probe_serialization``, 1 s). Without them the base RTT keeps the small probes' own serialization
    (``base_rtt_ms.serialization_ms``), and no loss stream can be paced (``plan.loss_stream_plan``: no rate to pace
    it by). {"base_ok", "base_ok_without" (the campaign's ``base_rtt_ok`` either way), "stream" (one ran)}."""
    b = report["base_rtt_ms"]
    shared = ((report["down"].get("wifi") or {}).get("shared"))
    base = b["min"] if shared else b["p50"]
    tol = max(BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE * truth["base_rtt_ms"])
    return {"base_ok": abs(base - truth["base_rtt_ms"]) <= tol,
            "base_ok_without": abs(base + (b.get("serialization_ms") or 0.0) - truth["base_rtt_ms"]) <= tol,
            "stream": "skipped" not in (report.get("loss_stream") or {"skipped": ""})}


def rows(dirs: list[str]) -> tuple[list[dict], list[dict]]:
    """(a row per direction whose BBR phase ran, a row per measurement)."""
    out, meas = [], []
    for camp in dirs:
        name = os.path.basename(camp.rstrip("/"))
        for f in sorted(glob.glob(os.path.join(camp, "paths", "[0-9]*.json"))):
            rec = json.load(open(f))
            mj = os.path.join(f[:-5], "measure.json")
            if not rec.get("measured") or not os.path.exists(mj):
                continue
            try:
                report = json.load(open(mj))
            except ValueError:
                continue  # a measurement still being written
            if "elapsed_s" not in report:
                continue
            with_, rule = {}, {}
            saved = 0.0
            for d in ("down", "up"):
                if not report.get(d):
                    continue
                x = report[d]
                with_[d] = replay.read_direction(copy.deepcopy(report), d, with_.get("down"))
                if "bbr" not in x.get("phases_s", {}):
                    rule[d] = with_[d]
                    continue
                run, why = plan(report, d)
                t = C.direction_truth(rec["truth"], d)
                wo = replay.read_direction(without_rate_phase(report, d), d, rule.get("down"))
                rule[d] = with_[d] if run else wo
                if not run:
                    saved += x["phases_s"]["bbr"]
                a = judge(with_[d], t, d)
                b = judge(wo, t, d, variation_known=(x.get("rate_variation") or {}).get("phase") != "bbr")
                out.append({"camp": name, "path": rec["index"], "dir": d, "truth": t["limiter"],
                            "truth_mbps": None if t.get("variable") else t["down_mbps"],
                            "base_rtt_ms": rec["truth"]["base_rtt_ms"], "fill_mbps": x["rate_by_cc"][x["load_cc"]],
                            "bbr_mbps": x["rate_by_cc"].get("bbr"), "bbr_s": x["phases_s"]["bbr"],
                            "with": a, "without": b, "moves": moves(a, b), "rule_runs": run, "why": why})
            # the bound no rule from the fill's evidence passes: every BBR phase whose withholding moves nothing
            idle = sum(r["bbr_s"] for r in out if (r["camp"], r["path"]) == (name, rec["index"]) and not r["moves"])
            meas.append({"camp": name, "path": rec["index"], "elapsed_s": report["elapsed_s"], "saved_s": saved,
                         "harmless_s": idle, **serialization_withheld(report, rec["truth"]),
                         "up_bbr_s": (report.get("up") or {}).get("phases_s", {}).get("bbr", 0.0)})
    return out, meas


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--paths", default="14-29", help="a range of path indices counted apart on each directory (A-B)")
    ap.add_argument("--rows", action="store_true", help="print every direction whose BBR phase ran")
    ap.add_argument("--json", help="write every row here")
    a = ap.parse_args(argv)
    lo, hi = (int(v) for v in a.paths.split("-"))
    rs, ms = rows(a.dirs)
    for r in rs:
        if a.rows or not r["rule_runs"] or r["moves"]:
            tr = f"{r['truth_mbps']:8.4g}" if r["truth_mbps"] is not None else "variable"
            print(f"{r['camp']:>8} {r['path']:4d} {r['dir']:4} {r['truth']:8} {tr} Mbit/s {r['base_rtt_ms']:6.0f} ms: "
                  f"fill {r['fill_mbps']:8.4g} bbr {r['bbr_mbps'] or 0:8.4g} ({r['bbr_s']:.1f} s) "
                  f"{'RUN ' if r['rule_runs'] else 'SKIP'} without it: {', '.join(r['moves']) or 'nothing moves'}")
            if not r["rule_runs"]:
                print(f"{'':14}{r['why']}")
    for d in ("down", "up"):
        R = [r for r in rs if r["dir"] == d]
        skip = [r for r in R if not r["rule_runs"]]
        print(f"{d}: the BBR phase ran on {len(R)}; withheld, a reading moves on {sum(bool(r['moves']) for r in R)} "
              f"(" + ", ".join(f"{k} {s} {sum(any(m == k + ' ' + s for m in r['moves']) for r in R)}"
                               for k in JUDGED for s in ("right->wrong", "wrong->right")) + ")")
        print(f"{d}: the rule leaves it out on {len(skip)}; a reading moves on {sum(bool(r['moves']) for r in skip)}"
              + "".join(f"; {r['camp']}/{r['path']}: {', '.join(r['moves'])}" for r in skip if r["moves"]))
    groups = [(os.path.basename(c.rstrip("/")), None) for c in a.dirs]
    groups += [(os.path.basename(c.rstrip("/")), (lo, hi)) for c in a.dirs]
    tot = [0, 0, 0, 0]
    for name, rng in groups:
        sel = [m for m in ms if m["camp"] == name and (rng is None or rng[0] <= m["path"] <= rng[1])]
        if not sel or (rng is not None and len(sel) == len([m for m in ms if m["camp"] == name])):
            continue
        fit = sum(m["elapsed_s"] <= GOAL_S for m in sel)
        after = sum(m["elapsed_s"] - m["saved_s"] <= GOAL_S for m in sel)
        no_up = sum(m["elapsed_s"] - m["up_bbr_s"] <= GOAL_S for m in sel)
        if rng is None:
            tot = [tot[0] + len(sel), tot[1] + fit, tot[2] + after, tot[3] + no_up]
        print(f"{name}{f' paths {rng[0]}-{rng[1]}' if rng else ''}: within {GOAL_S:g} s {fit} of {len(sel)} as stored, "
              f"{after} with the rule ({sum(m['saved_s'] > 0 for m in sel)} measurements shorter, "
              f"{sum(m['saved_s'] for m in sel):.1f} s); without every up BBR phase {no_up}")
    print(f"all: within {GOAL_S:g} s {tot[1]} of {tot[0]} as stored, {tot[2]} with the rule; without every up BBR "
          f"phase {tot[3]}; without every BBR phase whose withholding moves nothing (no rule's bound) "
          f"{sum(m['elapsed_s'] - m['harmless_s'] <= GOAL_S for m in ms)}")
    print(f"the large probes (always run, 1 s) withheld: the base RTT right -> wrong on "
          f"{sum(m['base_ok'] and not m['base_ok_without'] for m in ms)} of {len(ms)} (wrong -> right "
          f"{sum(m['base_ok_without'] and not m['base_ok'] for m in ms)}), and {sum(m['stream'] for m in ms)} loss "
          f"streams could not have been paced")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"directions": rs, "measurements": ms}, f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
