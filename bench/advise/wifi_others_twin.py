"""The twin of a WiFi hop shared with other busy stations, before and after today's code, against the model on the
true path and the kernel (issue 30 §3), offline.

``python bench/advise/wifi_others_twin.py DIR [DIR ...] [--members N]``: for every stored path of each campaign
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


def _err(x: tuple, ref: tuple) -> tuple[float, float]:
    return x[0] / ref[0] - 1, x[1] / ref[1] - 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--members", type=int, default=7, help="ensemble members of each run (odd)")
    a = ap.parse_args(argv)
    if a.members < 1 or a.members % 2 == 0:
        print(f"--members: expected an odd count of at least 1, got {a.members}", file=sys.stderr)
        return 2
    out = []
    print("goodput Mbit/s / p95 ms; (the error against the model on the true path | against the kernel)")
    for r in rows(a.dirs, a.members):
        out.append(r)
        print(f"{r['camp']} {r['path']:3d} truth {r['truth']}; {r['run']}: {r['advice']}, {r['duration_s']:.3g} s")
        print(f"    twin before: {r['twin_before']}")
        print(f"    twin after:  {r['twin_after']}")
        for k in ("before", "after", "model_truth", "kernel"):
            g, p = r[k]
            em, ek = _err(r[k], r["model_truth"]), _err(r[k], r["kernel"])
            print(f"    {k:12} {g:7.3f} / {p:6.1f}   ({em[0] * 100:+6.1f} % / {em[1] * 100:+6.1f} % | "
                  f"{ek[0] * 100:+6.1f} % / {ek[1] * 100:+6.1f} %)", flush=True)
    for k in ("before", "after", "model_truth"):
        for ref in ("model_truth", "kernel"):
            if k == ref:
                continue
            e = [_err(r[k], r[ref]) for r in out]
            ok = sum(abs(g) <= GOODPUT_TOL and abs(p) <= P95_TOL for g, p in e)
            worst = max((abs(g) for g, _ in e), default=0.0)
            print(f"{k} against {ref}: {ok} of {len(e)} within {GOODPUT_TOL:.0%} (goodput) and {P95_TOL:.0%} (p95); "
                  f"worst goodput {worst * 100:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
