"""Where the airtime goes under ``fq`` and ``airtime`` (docs/wifi.md, "Measured disagreements": the size of
the fq -> airtime change).

The ``anomaly`` part of ``reproduce make-wifi-fast`` (two stations up to MCS 15, one at MCS 0, every one on
Minstrel-HT at 40 dB, one CUBIC download each; python/bloatlab/study/experiments/make_wifi_fast.py), per design
and seed (averaged over the seeds): each station's goodput, airtime share and airtime fraction of the run (both
directions: its downlink A-MPDUs and its uplink TCP ACKs, with SIFS and (Block)Ack), downlink turns (A-MPDUs) and
uplink transmissions per second, frames per downlink turn, and airtime per downlink turn (all its airtime over
its turns: the uplink that comes with a turn included); the turns the AP built a second (each aggregate once, its
retries along the chain not counted again) and the share of them that left the station with nothing queued at the
AP (under ``fq`` it then leaves 4.10's list: docs/wifi.md, "Why the fast stations' TXQs empty under fq"). Then what
4.10's round robin (``fq``) would give with equal turns: each station's share in proportion to its airtime per
turn, against the measured shares. Measured 2026-11-27 (docs/wifi.md, "Measured disagreements", second entry): 6
runs of 60 s, 6.1 s wall on the 2-core VM (nice 10, load ~9); 4.1 s at nice 19, load ~2 (wifi15).

    PYTHONPATH=python .venv/bin/python bench/wifi_shares.py [--duration 60s] [--seeds 1,2,3] [--set KEY=VALUE ...]

``--set`` changes the part's scenario for a what-if (not a claim's setup), as ``bloatlab run --set`` does: e.g.
``--set flow.0.rtt=1ms --set flow.1.rtt=1ms`` (every flow's wired RTT) or ``flow.0.pacing=true``.
"""

from __future__ import annotations

import argparse
import json
import statistics

from bloatlab import summary as _summary
from bloatlab import load_scenario
from bloatlab.engines import run_raw
from bloatlab.study.experiments.make_wifi_fast import anomaly_doc


def run(mac: str, seed: int, duration: str, sets: list[str]) -> dict:
    """Per station: goodput, airtime share, downlink turns and uplink aggregates per second, frames per turn."""
    sc = load_scenario(anomaly_doc(duration), sets, wifi__mac=mac, seed=seed)
    resolved = sc.resolved()
    raw = run_raw(resolved, "sim")
    summ = _summary.build(raw, resolved, dict(sc.doc), "sim")
    dur = float(duration.rstrip("s"))
    out = {}
    for s, r in zip(summ["stations"], raw["wifi"]["stations"]):
        out[s["name"]] = {"goodput": s["goodput_mbps"], "air_share": s["airtime_share"], "air_frac": r["airtime_s"] / dur,
                          "turns_per_s": r["down_aggregates"] / dur, "up_aggs_per_s": r["up_aggregates"] / dur,
                          "frames_per_turn": r["down_frames"] / max(r["down_aggregates"], 1),
                          "air_ms_per_turn": 1e3 * r["airtime_s"] / max(r["down_aggregates"], 1),
                          "built_turns_per_s": r["down_turns"] / dur,
                          "emptied_share": r["down_turns_emptied"] / max(r["down_turns"], 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a what-if change of the scenario")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    for mac in ("fq", "airtime"):
        acc: dict[str, dict[str, list[float]]] = {}
        for seed in seeds:
            for name, row in run(mac, seed, a.duration, a.set).items():
                for k, v in row.items():
                    acc.setdefault(name, {}).setdefault(k, []).append(v)
        out = {n: {k: round(statistics.mean(v), 4) for k, v in d.items()} for n, d in acc.items()}
        # Equal turns (4.10's round robin, one A-MPDU per station per round): each station's share of the airtime
        # in proportion to its airtime per turn (its A-MPDU plus the uplink that comes with it, as measured).
        per_turn = {n: d["air_ms_per_turn"] for n, d in out.items()}
        equal = {n: round(v / sum(per_turn.values()), 4) for n, v in per_turn.items()}
        print(json.dumps({"mac": mac, "stations": out, "equal_turn_shares": equal}), flush=True)


if __name__ == "__main__":
    main()
