"""What Minstrel-HT does to the make-wifi-fast figures (docs/wifi.md, "Rate control").

The ``anomaly`` and ``latency`` scenarios of ``reproduce make-wifi-fast``
(python/bloatlab/study/experiments/make_wifi_fast.py) with fixed rates, then
with the fast stations (and the pinging one) on ``rate_control = "minstrel_ht"``
over MCS 0-15 at a given SNR and the slow station at a fixed MCS 0, then with
every station on Minstrel-HT (the slow one capped at MCS 0), which is the
experiment's own setup since 2026-11-25 (docs/wifi.md). Not tuned: each variant
is a channel the commit does not publish, run as is.

    PYTHONPATH=python .venv/bin/python bench/wifi_minstrel.py [--duration 60s] [--seeds 1,2,3]
    PYTHONPATH=python .venv/bin/python bench/wifi_minstrel.py --many 30,100 [--duration 60s]

``--many``: the ``many`` part (30/100 stations, 2 MB each; groups capped at MCS 15/7/3/0), every station on
Minstrel over MCS 0 up to its group's MCS, no SNR errors, seed 1, fixed vs Minstrel, legacy and airtime.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics

import bloatlab
from bloatlab.study.experiments.make_wifi_fast import anomaly_doc, many_doc

# (label, rate control, SNR, the slow MCS 0 station on it too)
VARIANTS = [("fixed MCS 15, clean", None, None, False),
            ("minstrel, no SNR errors", "minstrel_ht", None, False),
            ("minstrel, 30 dB", "minstrel_ht", 30.0, False),
            ("minstrel, 25 dB", "minstrel_ht", 25.0, False),
            ("minstrel, 20 dB", "minstrel_ht", 20.0, False),
            ("every station minstrel, 40 dB (the experiment)", "minstrel_ht", 40.0, True)]


def variant(doc: dict, rc: str | None, snr: float | None, slow: bool = False) -> dict:
    d = copy.deepcopy(doc)
    for st in d["wifi"]["station"]:
        if rc and (st["phy_rate"] == "mcs15" or slow):
            st["rate_control"] = rc
            if snr is not None:
                st["snr_db"] = snr
    return d


def many(ns: list[int], duration: str) -> None:
    for n in ns:
        for rc in (None, "minstrel_ht"):
            for mac in ("legacy", "airtime"):
                d = many_doc(n, duration, rate_control=None, snr_db=None)
                if rc:
                    for st in d["wifi"]["station"]:
                        st["rate_control"] = rc
                s = bloatlab.run(d, set={"wifi.mac": mac}).summary
                done = sum(1 for f in s["flows"] if f["completed"])
                going = sum(1 for f in s["flows"] if (f.get("bytes_delivered") or 0) > 0)
                pr = [p["rtt_ms"]["p95"] for p in s["probes"] if p["rtt_ms"]["p95"] is not None]
                print(json.dumps({"stations": n, "rate_control": rc or "fixed", "mac": mac, "completed": done,
                                  "going": going, "worst_ping_p95": round(max(pr), 1) if pr else None}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--many", default="")
    a = ap.parse_args()
    if a.many:
        many([int(n) for n in a.many.split(",")], a.duration)
        return
    seeds = [int(s) for s in a.seeds.split(",")]
    rows = []
    for label, rc, snr, slow_rc in VARIANTS:
        for mac in ("legacy", "fq", "airtime"):
            acc: dict[str, list[float]] = {}
            for seed in seeds:
                base = anomaly_doc(a.duration, rate_control=None, snr_db=None)
                r = bloatlab.run(variant(base, rc, snr, slow_rc), set={"wifi.mac": mac, "seed": seed})
                st = r.summary["stations"]
                fast = [s for s in st if s["name"].startswith("fast")]
                slow = [s for s in st if s["name"] == "slow"][0]
                vals = {"fast": statistics.mean(s["goodput_mbps"] for s in fast), "slow": slow["goodput_mbps"],
                        "total": sum(s["goodput_mbps"] for s in st), "slow_air": slow["airtime_share"],
                        "fast_agg": statistics.mean(s["aggregate_frames_down"] for s in fast)}
                ping = anomaly_doc(a.duration, pinger=True, rate_control=None, snr_db=None)
                p = bloatlab.run(variant(ping, rc, snr, slow_rc), set={"wifi.mac": mac, "seed": seed})
                vals["ping_p95"] = p.summary["probes"][0]["rtt_ms"]["p95"]
                for k, v in vals.items():
                    acc.setdefault(k, []).append(v)
            row = {"variant": label, "mac": mac, **{k: round(statistics.mean(v), 3) for k, v in acc.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
