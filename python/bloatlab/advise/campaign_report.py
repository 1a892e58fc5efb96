"""The campaign's report page (``DIR/report.html``): the goals met, the
limiter's confusion matrix, CDFs of the measurement's and the twin's errors,
and the paths it got wrong with their evidence."""

from __future__ import annotations

import json
import os

import numpy as np

from . import recording
from ..study.report import _Sections, render
from ..result import atomic_write_text

#: the goals whose tolerance is in seconds, not a share (campaign.GOALS)
SECONDS_GOALS = ("measure_s", "advise_s")


def tolerance_text(key: str, tol: float | None) -> str:
    """A goal's tolerance as the report and the CLI print it."""
    if tol is None:
        return ""
    return f"{tol:g} s" if key in SECONDS_GOALS else f"{tol * 100:.0f} %"


#: the classes measure tells (rows: what the physics shows; columns: measured)
CLASSES = ("fifo", "policer", "aqm", "wifi")



def describe_truth(t: dict) -> str:
    """A true path in one line (the progress lines, the report's wrong paths)."""
    if t["limiter"] == "wifi":
        o = t.get("wifi_others")
        others = f", {o['count']} other busy station{'s' if o['count'] > 1 else ''} at MCS {o['mcs']}" if o else ""
        lim = f"wifi ({t['wifi_mac']} AP, MCS {t['mcs']}, PHY {t['port_mbps']:.3g} Mbit/s{others})"
    else:
        lim = f"{t['limiter']}" + (f" ({t['variable']}-like capacity, median {t['port_mbps']:.3g})" if t.get("variable") else
                                   f" (port {t['port_mbps']:.4g})")
    buf = f", {t['buffer_bdp']:.2g} BDP" if t.get("buffer_bdp") is not None else ""
    wf = t.get("wifi_front")
    front = f", behind a WiFi hop ({wf['mac']} AP, MCS {wf['mcs']})" if wf else ""
    return f"{lim}, {t['down_mbps']:.4g} Mbit/s, {t['base_rtt_ms']:.3g} ms{buf}, loss {t['loss'] * 100:.2g} %{front}"

def _cdf(ax, vals, label, pct=True, style="-"):
    v = np.sort(np.abs(np.asarray([x for x in vals if x is not None], float)))
    if v.size == 0:
        return
    ax.step(v * (100 if pct else 1), np.arange(1, v.size + 1) / v.size, where="post", label=f"{label} ({v.size})",
            linestyle=style)


def _figure_errors(ok, keys, xlabel, pct=True, tol=None, title="", linear=False):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    styles = ["-", "--", ":", "-."]
    for (key, label), st in zip(keys, styles):
        _cdf(ax, [r["errors"].get(key) for r in ok], label, pct, st)
    for t, lab in tol or []:
        # the goal's label from the top down, clear of the legend in the lower right
        ax.axvline(t, color="grey", linewidth=0.8, linestyle=":")
        ax.text(t, 0.98, f" {lab}", color="grey", fontsize=8, rotation=90, va="top", ha="right")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of paths")
    ax.set_ylim(0, 1.02)
    if not linear:
        ax.set_xscale("symlog", linthresh=1 if pct else 0.1)
    ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def confusion(ok: list[dict]):
    import pandas as pd

    m = pd.DataFrame(0, index=[f"true {c}" for c in CLASSES], columns=[f"measured {c}" for c in CLASSES])
    for r in ok:
        m.loc[f"true {r['truth']['observable']}", f"measured {r['measured']['limiter']}"] += 1
    return m


def by_kind(ok: list[dict]):
    import pandas as pd

    rows = []
    for kind in sorted({r["truth"]["limiter"] for r in ok}):
        rs = [r for r in ok if r["truth"]["limiter"] == kind]
        row = {"true limiter": kind, "reads as": rs[0]["truth"]["observable"], "paths": len(rs)}
        for c in CLASSES:
            row[f"measured {c}"] = sum(r["measured"]["limiter"] == c for r in rs)
        rows.append(row)
    return pd.DataFrame(rows)


#: where measure's time goes, grouped (the keys of its report's ``phases_s``, docs/advise.md "Where measure's time
#: goes"): the group of a key, by its name; a key none names is "other" (each direction's ``*_other``, ``other``)
PHASE_GROUPS = (("idle and large probes", lambda k: k in ("idle", "serialization")),
                ("WiFi train", lambda k: k == "wifi_train"),
                ("loss stream", lambda k: k == "loss_stream"),
                ("fills", lambda k: k.endswith("_fill")),
                ("deep steps", lambda k: k.endswith("_deep")),
                ("BBR rate phases", lambda k: k.endswith("_bbr")),
                ("packet trains", lambda k: "train" in k))

#: the base RTT bands the time goal is read over (ms): docs/advise.md "Where ≤ 20 s is not physics'" puts the
#: bound near 150 ms (two fills of 40 round trips, 6 s or more each, with the up direction)
RTT_BANDS_MS = (0.0, 20.0, 50.0, 150.0, float("inf"))


def phase_groups(phases: dict) -> dict[str, float]:
    """A measurement's ``phases_s`` summed by :data:`PHASE_GROUPS` (seconds; every group, 0 where none ran)."""
    out = {g: 0.0 for g, _ in PHASE_GROUPS} | {"other": 0.0}
    for k, v in phases.items():
        out[next((g for g, pick in PHASE_GROUPS if pick(k)), "other")] += float(v)
    return out


def _bbr_ran(phases: dict | None) -> bool:
    """Whether a measurement's ``phases_s`` holds a BBR rate phase (either direction's ``*_bbr``)."""
    return any(k.endswith("_bbr") for k in phases or {})


def phases_of(ok: list[dict], base: str) -> dict[int, dict | None]:
    """Each record's ``phases_s`` by its index (:func:`_phases`), read once."""
    return {r["index"]: _phases(r, base) for r in ok}


def _phases(r: dict, base: str) -> dict | None:
    """A record's ``phases_s``: the record's own (campaigns since 2026-12-04), else its stored ``measure.json``
    (``base``: the campaign's directory); None where neither has them."""
    ph = r["measured"].get("phases_s")
    if ph is None:
        try:
            with open(os.path.join(base, "paths", f"{r['index']:04d}", "measure.json")) as f:
                ph = json.load(f).get("phases_s")
        except (OSError, ValueError, KeyError):
            return None
    return ph


def time_tables(ok: list[dict], base: str, goal_s: float, phases: dict | None = None):
    """The time goal by base RTT band (:data:`RTT_BANDS_MS`) and where the time went (:func:`phase_groups`, mean
    seconds a path, within and beyond ``goal_s``); None for the second where no record has its phases.
    ``phases``: :func:`phases_of`, read here where not given."""
    import pandas as pd

    phases = phases_of(ok, base) if phases is None else phases

    rows = []
    for lo, hi in zip(RTT_BANDS_MS, RTT_BANDS_MS[1:]):
        rs = [r for r in ok if lo <= r["truth"]["base_rtt_ms"] < hi and r["errors"].get("measure_s") is not None]
        if not rs:
            continue
        s = np.asarray([r["errors"]["measure_s"] for r in rs], float)
        bbr = [r for r in rs if _bbr_ran(phases[r["index"]])]
        rows.append({"base RTT": f"{lo:g}-{hi:g} ms" if np.isfinite(hi) else f"{lo:g} ms or more", "paths": len(rs),
                     f"within {goal_s:g} s": int((s <= goal_s).sum()), "median s": f"{np.median(s):.1f}",
                     "longest s": f"{s.max():.1f}", "a BBR rate phase ran": len(bbr)})
    groups = []
    for r in ok:
        ph, sec = phases[r["index"]], r["errors"].get("measure_s")
        if ph is not None and sec is not None:
            groups.append((sec <= goal_s, phase_groups(ph)))
    if not groups:
        return pd.DataFrame(rows), None
    cols = {"all": [g for _, g in groups], f"within {goal_s:g} s": [g for ok_, g in groups if ok_],
            f"beyond {goal_s:g} s": [g for ok_, g in groups if not ok_]}
    where = pd.DataFrame([{"phases": name} | {f"{c} ({len(gs)})": (f"{np.mean([g[name] for g in gs]):.2f}" if gs else "")
                                             for c, gs in cols.items()}
                          for name in list(dict(PHASE_GROUPS)) + ["other"]])
    return pd.DataFrame(rows), where


def _figure_times(ok: list[dict], phases: dict, goal_s: float):
    """``measure --quick``'s seconds against the base RTT, a BBR rate phase or none (``phases``: :func:`phases_of`),
    the goal's line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    pts = [(r["truth"]["base_rtt_ms"], r["errors"]["measure_s"], _bbr_ran(phases[r["index"]]))
           for r in ok if r["errors"].get("measure_s") is not None]
    for bbr, mark, lab in ((False, "o", "no BBR rate phase"), (True, "^", "a BBR rate phase")):
        xs = [x for x, _, b in pts if b == bbr]
        ys = [y for _, y, b in pts if b == bbr]
        if xs:
            ax.scatter(xs, ys, marker=mark, s=18, label=f"{lab} ({len(xs)})", alpha=0.8)
    ax.axhline(goal_s, color="grey", linewidth=0.8, linestyle=":")
    ax.text(0.99, goal_s, f"goal {goal_s:g} s", color="grey", fontsize=8, va="bottom", ha="right",
            transform=ax.get_yaxis_transform())
    ax.set_xscale("log")
    ax.set_xlabel("base RTT (ms)")
    ax.set_ylabel("measure --quick (s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("How long measure took", fontsize=10)
    fig.tight_layout()
    return fig


def _runs(meta: dict) -> str:
    """How long the campaign's predicted and kernel runs were (``meta``: ``campaign.run``'s; a campaign stored before
    it kept the bounds says only whether it ran ``--quick``)."""
    quick = " (--quick)" if meta.get("quick") else ""
    if "run_bounds_s" in meta:
        lo, hi = meta["run_bounds_s"]
        return f"{meta['run_rtts']} base RTTs within {lo:g}-{hi:g} s{quick}"
    return "the --quick lengths" if quick else "the full lengths"


def write(records: list[dict], summ: dict, meta: dict, path: str) -> str:
    import pandas as pd

    ok = [r for r in records if "failed" not in r]
    sec = _Sections()
    rows = []
    # the goals as the summary carries them (campaign.GOALS, in its order)
    for key, s in ((k, v) for k, v in summ.items() if isinstance(v, dict) and "goal" in v):
        tol, want = s["tolerance"], s["goal"]
        rows.append({"goal": key, "tolerance": tolerance_text(key, tol),
                     "wanted": f"{want * 100:.0f} % of paths", "met": s.get("met"), "of": s.get("of"),
                     "share": None if s.get("share") is None else f"{s['share'] * 100:.0f} %"})
    sec.table("Goals (issue 30 §1)", pd.DataFrame(rows))
    sec.text(None, f"{len(ok)} paths measured, {summ.get('failed', 0)} failed (listed below); the kernel's judgement "
                   f"stayed flagged by the emulator's timing verdict through its tries on {summ.get('judge_flagged', 0)} "
                   f"predictions and {summ.get('rank_flagged', 0)} rankings, which count in no goal; the server fell "
                   f"short of a paced train's rate on {summ.get('server_short', 0)} measurements (a loaded host: counted "
                   f"as measured); advise checked its recommendation on the readings measure could not tell apart on "
                   f"{summ.get('readings', {}).get('paths', 0)} paths and it held on every reading on "
                   f"{summ.get('readings', {}).get('held', 0)} (docs/advise.md \"Readings it cannot tell apart\"). "
                   "base_rtt_ok: within 5 % or "
                   "1 ms. buffer: FIFO paths only. loss: paths with ≥ 0.5 % random loss. pred_*: the twin's prediction "
                   "of the recommended configuration against the kernel's run of it on the true path. model_*: the model's "
                   "ensemble on the true path (seeds 1-7, starts over one jiffy; its median, and in_range: the kernel's "
                   "run within its least and most, 15 % either side) against that kernel run. today_*: today's configuration (CUBIC, "
                   "the bottleneck as it is), the twin's figure and its members' range against the kernel's run of it. wifi_*: the WiFi "
                   "hops' PHY rate (within 10 %), the access point's design (fq and airtime are one for one station) "
                   "and a legacy AP's queue (within 30 %). wifi_front_right: a WiFi hop in front of a wired line read where the "
                   "truth has one (a quarter of the wired paths) and not elsewhere. variable_right: a variable capacity (half the FIFO paths up to "
                   "200 Mbit/s) told from a fixed one; rate: not on those (the measurement reads seconds of a trace whose "
                   "mean is the truth's). policer_*: behind a policer read as one, the bucket, the port's rate and "
                   "the port's FIFO measure read (within 30 %; none where its trains could not read them). "
                   "The ranking goal only with --rank (every candidate this kernel runs, on the true path). "
                   # what the campaign's distribution did not draw, as its module said when it ran (campaign.not_drawn)
                   + meta.get("not_drawn", ""))
    if ok:
        sec.table("The limiter: what the physics shows against what measure read", confusion(ok).reset_index(names=""))
        sec.table("... by the true limiter", by_kind(ok))
        sec.figure("|measured − true| / true: the rate (down), the buffer (FIFO paths), the random loss (≥ 0.5 %)",
                   _figure_errors(ok, [("rate", "rate"), ("buffer", "buffer"), ("loss", "loss")], "|error| %",
                                  tol=[(10, "rate goal 10 %"), (30, "buffer goal 30 %")], title="Measurement errors"),
                   heading="Measurement")
        sec.figure("|measured − true| base RTT, ms",
                   _figure_errors(ok, [("base_rtt_ms", "base RTT")], "|error| ms", pct=False, tol=[(1, "1 ms")],
                                  title="Base RTT error"))
        sec.figure("|predicted − kernel| / kernel for the recommended configuration on the true path (the twin); "
                   "the model on the true path against the kernel (the engine's share of that error); today's "
                   "setup predicted on the twin",
                   _figure_errors(ok, [("pred_goodput", "goodput (twin)"), ("pred_p95_rtt", "p95 RTT (twin)"),
                                       ("model_goodput", "goodput (model, true path)"), ("today_goodput", "today's goodput (twin)")], "|error| %",
                                  tol=[(15, "goodput goal"), (25, "RTT goal")], title="The twin's predictions"),
                   heading="The twin")
        if any(r["errors"].get("rank_regret") is not None for r in ok):
            sec.figure("best kernel score − the recommended configuration's kernel score (advise's own scoring, "
                       "every candidate this kernel runs, on the true path)",
                       _figure_errors(ok, [("rank_regret", "regret")], "score regret", pct=False, tol=[(0.02, "goal 0.02")],
                                      title="Did the twin rank as the kernel does?", linear=True), heading="Ranking")
        # the goals' tolerances (campaign.GOALS, as the summary carries them): what the lists below count as got
        # wrong; the rankings whose kernel runs stayed flagged (campaign.rank_flagged)
        tol = {key: s["tolerance"] for key, s in summ.items() if isinstance(s, dict) and "tolerance" in s}
        # the time goals: measure --quick by base RTT, where its time went, and advise's longest
        base = os.path.dirname(os.path.abspath(path))
        if any(r["errors"].get("measure_s") is not None for r in ok):
            goal_s = tol["measure_s"]
            phases = phases_of(ok, base)
            bands, where = time_tables(ok, base, goal_s, phases)
            sec.figure(f"measure --quick's seconds on each path against its base RTT (the goal: {goal_s:g} s); a "
                       "triangle where a BBR rate phase ran in either direction",
                       _figure_times(ok, phases, goal_s), heading="Time")
            sec.table(f"measure --quick within {goal_s:g} s by base RTT (docs/advise.md \"Where ≤ 20 s is not "
                      "physics'\": with the up direction, two fills of 40 round trips each from ~150 ms)", bands)
            if where is not None:
                sec.table("Where measure --quick's time went: mean seconds a path in each group of phases "
                          "(measure's phases_s; the paths counted in brackets)", where)
            adv = [r["errors"]["advise_s"] for r in ok if r["errors"].get("advise_s") is not None]
            if adv:
                sec.text(None, f"advise within {tol['advise_s']:g} s on {sum(a <= tol['advise_s'] for a in adv)} of "
                               f"{len(adv)} paths, the longest {max(adv):.1f} s, the median {float(np.median(adv)):.1f} s.")
        flagged = set(summ.get("rank_flagged_paths", ()))
        rank_tol = tol["rank_regret"]
        ranked = [r for r in ok if (r.get("rank") or {}).get("regret") is not None and r["rank"]["regret"] > rank_tol]
        if ranked:
            sec.table(f"Rankings it got wrong (the pick more than {rank_tol:g} below the kernel's best by advise's own "
                      f"score; a flagged ranking, whose kernel runs the emulator's timing did not hold, counts in no goal)",
                      pd.DataFrame([{"path": r["index"], "truth": describe_truth(r["truth"]),
                                     "measured": f"{r['measured']['limiter']} {r['measured']['down_mbps']:.3g} Mbit/s",
                                     "advised": f"{r['advice']['cc']} + {r['advice']['queue']}"
                                                + (f" at {r['advice']['shaper_mbps']:.4g} Mbit/s" if r["advice"].get("shaper_mbps") else ""),
                                     "the kernel's best": r["rank"].get("best"), "regret": f"{r['rank']['regret']:.3f}",
                                     "counted": "no (flagged)" if r["index"] in flagged else "yes"} for r in ranked]))
        wrong = [r for r in ok if not r["errors"]["limiter_right"]
                 or any(r["errors"].get(k) is not None and abs(r["errors"][k]) > tol[k] for k in ("rate", "pred_goodput", "pred_p95_rtt"))]
        rows = []
        for r in wrong:
            t, m, ev = r["truth"], r["measured"], r["measured"].get("evidence") or {}
            rec = os.path.join("paths", f"{r['index']:04d}", "probes")
            rows.append({"path": r["index"], "truth": describe_truth(t),
                         "measured": f"{m['limiter']} {m['down_mbps']:.3g} Mbit/s, {m['base_rtt_ms']:.3g} ms",
                         "evidence (queueing ms: probe p95 / flows p50 / p95 / floor; drops)":
                             f"{ev.get('probe_q95_ms', float('nan')):.2f} / {ev.get('flow_q50_ms', float('nan')):.2f} / "
                             f"{ev.get('flow_q95_ms', float('nan')):.2f} / {ev.get('burst_floor_ms', float('nan')):.2f}; "
                             f"{int(ev.get('retransmits', 0))} of {int(ev.get('segments', 0))}",
                         # what the reading named beside itself, and whether the truth is one that gives that evidence
                         "named (said so)": ", ".join(a["limiter"] for a in (m.get("limiter_alternatives") or [])[1:])
                                            + (" (yes)" if r["errors"].get("limiter_right_or_named") and not r["errors"]["limiter_right"] else ""),
                         "advice": f"{r['advice']['cc']} + {r['advice']['queue']}",
                         "goodput predicted / kernel": f"{r['predicted']['goodput_mbps']:.3g} / {r['kernel']['goodput_mbps']:.3g}",
                         "p95 RTT predicted / kernel (ms)": f"{r['predicted']['p95_rtt_ms']:.4g} / {r['kernel']['p95_rtt_ms']:.4g}",
                         "note": m.get("limiter_note") or "; ".join(m.get("warnings") or []),
                         # the measurement itself, offline (measure --record: the campaigns since the recordings)
                         "replay": (f"bloatlab measure --replay {rec}"
                                    if recording.file_of(os.path.join(os.path.dirname(path), rec)) else "")})
        if rows:
            sec.table(f"Paths it got wrong (limiter, rate beyond {tol['rate'] * 100:.0f} %, goodput predicted beyond "
                      f"{tol['pred_goodput'] * 100:.0f} % or p95 RTT beyond {tol['pred_p95_rtt'] * 100:.0f} %), with their evidence "
                      "and the command that measures each again from its recording (in this directory)", pd.DataFrame(rows))
    failed = [r for r in records if "failed" in r]
    if failed:
        sec.table("Paths that failed", pd.DataFrame([{"path": r["index"], "limiter": r["truth"]["limiter"], "why": r["failed"]}
                                                     for r in failed]))
    import re

    text = re.sub(r":(?:func|data|mod|class|meth):`([^`]+)`", r"\1", meta["distribution"]).replace("``", "")
    sec.pre("The distribution (seed %d)" % meta["seed"], text)
    html = render(f"Advisor campaign: {len(records)} paths, seed {meta['seed']}", [("paths", len(records)), ("seed", meta["seed"]), ("measured with", meta.get("measured_with", "measure --quick")),  # every campaign so far
                                                                                  ("judged runs", _runs(meta)),
                                                                                  ("goal", meta["goal"]),
                                                                                  ("today's control", f"{meta['today']} (the bottleneck as it is)"),
                                                                                  ("code", ", ".join(f"{k} ({v} path{'' if v == 1 else 's'})" for k, v in (summ.get("code") or {}).items()))], sec)
    atomic_write_text(path, html)
    return path
