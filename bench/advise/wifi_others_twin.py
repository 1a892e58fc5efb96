"""The twin of a WiFi hop shared with other busy stations, before and after today's code, against the model on the
true path and the kernel (issue 30 §3), offline.

``python bench/advise/wifi_others_twin.py DIR [DIR ...] [--members N]`` (or ``--draws N SEED``: the description's
physics on new draws, :func:`draws`): for every stored path of each campaign
directory whose truth is a WiFi hop with other busy stations (``truth.wifi_others``) and that was measured and
advised, the candidate the campaign recommended (``advice``) run for the campaign's duration
(``duration_s``) — and today's configuration (CUBIC, the access point as it is) where the advice is another — in
the simulator on

- the twin as the campaign stored it (``NNNN/twin.toml``, read as the campaign read it: ``Path.from_twin``),
- the twin today's code builds from the stored measurement (``NNNN/measure.json``, its down direction read again
  as ``bench/advise/replay.py`` reads it, ``measure.twin_of``, written and read back as ``measure --out`` and the
  campaign do),
- the true path (``campaign._model``: the model's ensemble, today's code),

each an ensemble of ``--members`` (default 7, recommend.ENSEMBLE) whose goodput and probe p95 are the members'
median; beside them the kernel's stored figures (``kernel``, ``kernel_today``: the emulator's runs of that
configuration on the true path).
Prints one line per path, the twins' error against the model on the true path and the kernel, and the counts within
15 % (goodput) and 25 % (p95) of each. Nothing is written into DIR.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import replay  # noqa: E402  (bench/advise/replay.py: the stored down direction read by today's code)

from bloatlab.advise import campaign as C  # noqa: E402
from bloatlab.advise import measure as M  # noqa: E402
from bloatlab.advise.path import Path, to_toml  # noqa: E402
from bloatlab.advise.recommend import Candidate, simulate  # noqa: E402

#: the issue's goals: the twin's goodput within 15 % and its p95 within 25 % of the kernel's
GOODPUT_TOL, P95_TOL = 0.15, 0.25


def twin_today(report: dict) -> Path:
    """The twin today's code builds from a stored ``measure.json`` (``report``), read back from its file."""
    report = copy.deepcopy(report)
    report["down"] = replay.read_direction(copy.deepcopy(report), "down")
    p = M.twin_of(report)
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "twin.toml")
        with open(f, "w") as fh:
            fh.write(to_toml(p.twin()))
        return Path.from_twin(f)


def figures(p: Path, cc: str, queue: str, dur: float, members: int) -> tuple[float, float]:
    c = simulate(p, Candidate(cc, queue, None), duration_s=dur, members=members)
    return c.goodput_mbps, c.p95_rtt_ms


def describe(p: Path) -> str:
    o = f"{p.wifi_others} @ {p.wifi_others_phy_mbps or p.wifi_phy_mbps:.3g}" if p.wifi_others else "none"
    return f"{p.wifi_mac} {p.wifi_phy_mbps:.3g} Mbit/s, others {o}, {p.base_rtt_ms:.4g} ms"


def rows(dirs: list[str], members: int):
    from bloatlab.advise.path import HT20_MCS_MBPS

    for camp in dirs:
        for f in sorted(glob.glob(os.path.join(camp, "paths", "[0-9]*.json"))):
            rec = json.load(open(f))
            t = rec["truth"]
            mj = os.path.join(f[:-5], "measure.json")
            if t["limiter"] != "wifi" or not t.get("wifi_others") or not rec.get("advice") or not os.path.exists(mj):
                continue
            a, dur = rec["advice"], rec["duration_s"]
            if a.get("shaper_mbps"):
                continue  # a wired shaper cannot sit in front of the access point (campaign.truth_doc)
            before = Path.from_twin(os.path.join(f[:-5], "twin.toml"))
            after = twin_today(json.load(open(mj)))
            o = t["wifi_others"]
            head = {"camp": os.path.basename(camp.rstrip("/")), "path": rec["index"],
                    "truth": f"{t['wifi_mac']} {HT20_MCS_MBPS[t['mcs']]:.3g} Mbit/s, others {o['count']} @ "
                             f"{HT20_MCS_MBPS[o['mcs']]:.3g}, {t['base_rtt_ms']:.4g} ms", "duration_s": dur,
                    "twin_before": describe(before), "twin_after": describe(after)}
            # the recommended configuration, and today's (CUBIC, the AP as it is) where that is another
            runs = [("advice", a["cc"], a["queue"], "kernel", "model_truth")]
            if (a["cc"], a["queue"]) != (C.TODAY_CC, "as-is"):
                runs.append(("today", C.TODAY_CC, "as-is", "kernel_today", "model_truth_today"))
            for what, cc, queue, kernel, _ in runs:
                mt = C._model(t, dur, cc, queue, None, members=members)
                yield head | {"run": what, "advice": f"{cc} + {queue}",
                              "before": figures(before, cc, queue, dur, members),
                              "after": figures(after, cc, queue, dur, members),
                              "model_truth": (mt["goodput_mbps"], mt["p95_rtt_ms"]),
                              "kernel": (rec[kernel]["goodput_mbps"], rec[kernel]["p95_rtt_ms"])}


def draws(n: int, seed: int, members: int):
    """The description's physics on new draws, where ``measure`` cannot run (the emulator): each WiFi path with other
    stations of ``campaign.draw(n, seed)``, CUBIC as it is for the campaign's duration, the model on the true path
    against a twin-like path — the truth's own PHY rate and RTT, the design ``measure`` reads (``airtime`` for
    ``fq``: one station cannot tell them apart), the others at this PHY rate, counted from the rate the truth's MAC
    leaves four CUBIC flows of this station (``campaign._wifi_rate``, the truth's ``down_mbps``) by the former rule
    (lone MAC / rate − 1, rounded) and by ``Path.wifi_others_and_share`` — and the latter with the others at their true
    PHY rate (what ``measure`` does not see)."""
    import dataclasses

    from bloatlab.advise.path import HT20_MCS_MBPS, WIFI_OTHERS_MAX

    for t in C.draw(n, seed):
        if t["limiter"] != "wifi" or not t.get("wifi_others"):
            continue
        phy, o = HT20_MCS_MBPS[t["mcs"]], t["wifi_others"]
        alone = Path(base_rtt_ms=t["base_rtt_ms"], down_mbps=phy, limiter="wifi", wifi_phy_mbps=phy,
                     wifi_mac="legacy" if t["wifi_mac"] == "legacy" else "airtime", buffer_bytes=t["buffer_bytes"])
        lone = alone.wifi_rate_mbps()
        n_old = int(min(max(round(lone / t["down_mbps"] - 1), 1), WIFI_OTHERS_MAX))
        n_new = alone.wifi_others_and_share(t["down_mbps"])[0]
        dur = C.campaign_duration(t["base_rtt_ms"], False)
        mt = C._model(t, dur, C.TODAY_CC, "as-is", None, members=members)
        r = {"camp": f"draw {seed}", "path": t["index"], "run": "today", "advice": f"{C.TODAY_CC} + as-is",
             "duration_s": dur, "mac": t["wifi_mac"],
             "truth": f"{t['wifi_mac']} {phy:.3g} Mbit/s, others {o['count']} @ {HT20_MCS_MBPS[o['mcs']]:.3g}, "
                      f"{t['base_rtt_ms']:.4g} ms",
             "twin_before": f"others {n_old} @ {phy:.3g} (lone MAC / rate - 1)",
             "twin_after": f"others {n_new} @ {phy:.3g} (Path.wifi_others_and_share)",
             "model_truth": (mt["goodput_mbps"], mt["p95_rtt_ms"]), "kernel": None}
        for k, p in (("before", dataclasses.replace(alone, wifi_others=n_old)),
                     ("after", dataclasses.replace(alone, wifi_others=n_new)),
                     ("their_phy", dataclasses.replace(alone, wifi_others=n_new,
                                                       wifi_others_phy_mbps=HT20_MCS_MBPS[o["mcs"]]))):
            r[k] = figures(p, C.TODAY_CC, "as-is", dur, members)
        yield r


#: the stored twin's figures set to the truth's one at a time (``--factors``), then all together
FACTORS = ("base_rtt", "mac", "phy", "count", "others_phy", "all")


def factors(dirs: list[str], members: int):
    """Where the stored twin and the true path differ (``--factors``): each stored path's recommended configuration on
    the twin as stored with one of its figures set to the truth's (:data:`FACTORS`: the base RTT, the access point's
    design, this station's PHY rate, the others' count, their PHY rate), then with all of them (what is left: the
    two ensembles' own spread, their seeds and RTTs paired otherwise), against the model on the true path."""
    import dataclasses

    from bloatlab.advise.path import HT20_MCS_MBPS

    for camp in dirs:
        for f in sorted(glob.glob(os.path.join(camp, "paths", "[0-9]*.json"))):
            rec = json.load(open(f))
            t = rec["truth"]
            if t["limiter"] != "wifi" or not t.get("wifi_others") or not rec.get("advice") or rec["advice"].get("shaper_mbps"):
                continue
            a, dur, o = rec["advice"], rec["duration_s"], t["wifi_others"]
            p0 = Path.from_twin(os.path.join(f[:-5], "twin.toml"))
            truth = {"base_rtt": {"base_rtt_ms": t["base_rtt_ms"]}, "mac": {"wifi_mac": t["wifi_mac"]},
                     "phy": {"wifi_phy_mbps": HT20_MCS_MBPS[t["mcs"]]}, "count": {"wifi_others": o["count"]},
                     "others_phy": {"wifi_others_phy_mbps": HT20_MCS_MBPS[o["mcs"]]}}
            truth["all"] = {k: v for d in truth.values() for k, v in d.items()}
            mt = C._model(t, dur, a["cc"], a["queue"], None, members=members)
            row = {"camp": os.path.basename(camp.rstrip("/")), "path": rec["index"],
                   "twin": _err(figures(p0, a["cc"], a["queue"], dur, members), (mt["goodput_mbps"], mt["p95_rtt_ms"]))}
            for k in FACTORS:
                p = dataclasses.replace(p0, **truth[k])
                if p.wifi_mac == "legacy" and p.buffer_bytes is None:
                    p.buffer_bytes = t["buffer_bytes"]
                row[k] = _err(figures(p, a["cc"], a["queue"], dur, members), (mt["goodput_mbps"], mt["p95_rtt_ms"]))
            yield row


def _err(x: tuple, ref: tuple) -> tuple[float, float]:
    return x[0] / ref[0] - 1, x[1] / ref[1] - 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--members", type=int, default=7, help="ensemble members of each run (odd)")
    ap.add_argument("--draws", type=int, nargs=2, metavar=("N", "SEED"),
                    help="instead of stored paths: the twin-like description on campaign.draw(N, SEED)'s WiFi paths "
                         "with other stations, against the model on each true path (draws())")
    ap.add_argument("--factors", action="store_true",
                    help="the stored twin with one figure at a time set to the truth's, against the model on the true "
                         "path (factors())")
    a = ap.parse_args(argv)
    if a.members < 1 or a.members % 2 == 0:
        print(f"--members: expected an odd count of at least 1, got {a.members}", file=sys.stderr)
        return 2
    if a.factors:
        print("goodput / p95 error against the model on the true path: the twin as stored, then with the truth's "
              + ", ".join(FACTORS))
        for r in factors(a.dirs, a.members):
            print(f"{r['camp']} {r['path']:3d} " + " | ".join(f"{k} {r[k][0] * 100:+.1f} / {r[k][1] * 100:+.1f} %"
                                                             for k in ("twin",) + FACTORS), flush=True)
        return 0
    if not a.dirs and not a.draws:
        print("expected campaign directories or --draws N SEED", file=sys.stderr)
        return 2
    out = []
    keys = ("before", "after", "their_phy", "model_truth", "kernel")
    print("goodput Mbit/s / p95 ms; (the error against the model on the true path | against the kernel)")
    for r in (draws(*a.draws, a.members) if a.draws else rows(a.dirs, a.members)):
        out.append(r)
        print(f"{r['camp']} {r['path']:3d} truth {r['truth']}; {r['run']}: {r['advice']}, {r['duration_s']:.3g} s")
        print(f"    twin before: {r['twin_before']}")
        print(f"    twin after:  {r['twin_after']}")
        for k in (k for k in keys if r.get(k) is not None):
            g, p = r[k]
            em = _err(r[k], r["model_truth"])
            ek = f" | {_err(r[k], r['kernel'])[0] * 100:+6.1f} % / {_err(r[k], r['kernel'])[1] * 100:+6.1f} %" if r["kernel"] else ""
            print(f"    {k:12} {g:7.3f} / {p:6.1f}   ({em[0] * 100:+6.1f} % / {em[1] * 100:+6.1f} %{ek})", flush=True)
    for k in keys[:-1]:
        for ref in ("model_truth", "kernel"):
            rs = [r for r in out if r.get(k) is not None and r.get(ref) is not None]
            if k == ref or not rs:
                continue
            for sel, of in (("", rs), (" (legacy)", [r for r in rs if "legacy" in r["truth"].split()[0]]),
                            (" (fq, airtime)", [r for r in rs if "legacy" not in r["truth"].split()[0]])):
                if not of or (sel and len(of) == len(rs)):
                    continue
                e = [_err(r[k], r[ref]) for r in of]
                ok = sum(abs(g) <= GOODPUT_TOL and abs(p) <= P95_TOL for g, p in e)
                worst = max(abs(g) for g, _ in e)
                print(f"{k} against {ref}{sel}: {ok} of {len(e)} within {GOODPUT_TOL:.0%} (goodput) and "
                      f"{P95_TOL:.0%} (p95); worst goodput {worst * 100:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
