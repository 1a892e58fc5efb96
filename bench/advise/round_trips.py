"""BBR's loads over few round trips, read by today's code against the samples' median, offline.

``python bench/advise/round_trips.py DIR [DIR ...]``: for every recorded BBR load of each campaign directory
(``DIR/paths/NNNN/probes/probes.jsonl``: campaigns since ``measure --record``) whose window today's
``evidence._window`` reads as the median round trip (``rate_from`` ``round_trips``: too few round trips for the
acked bytes), each direction's reading and the delivery-rate samples' median over the same window (the reading
before 2026-12-05), both against the truth's rate; the WiFi-limited truths (a steady share a few seconds do not
read) and variable capacities left out. Prints one line a window and, per direction, how many lie within 5 and 10 %
and the median and range of the errors (docs/advise.md "BBR's window over few round trips"). Nothing is sent on
the network and nothing is written.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import numpy as np

from bloatlab.advise import evidence as E
from bloatlab.advise import recording

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import _rate_truth  # noqa: E402


def rows(dirs: list[str]) -> list[dict]:
    out = []
    for store in dirs:
        for pj in sorted(glob.glob(f"{store}/paths/0*.json")):
            with open(pj) as f:
                rec = json.load(f)
            tr = rec["truth"]
            if tr.get("variable") or tr["limiter"] == "wifi":
                continue
            rec_dir = pj[:-len(".json")] + "/probes"
            if recording.file_of(rec_dir) is None:
                continue
            for run in recording.read(rec_dir)[1]:
                a = run["args"]
                if a[0] != "load" or "bbr" not in a or "result" not in run:
                    continue
                j = run["result"]
                for d in ("down", "up"):
                    if a[a.index("--" + d) + 1] == "0":
                        continue
                    w = E._window(j, d)
                    if w["rate_from"] != "round_trips":
                        continue
                    # the same window read as any other control's: the samples' median
                    before = E._window(dict(j, flows=[dict(fl, cc="other") for fl in j["flows"]]), d)
                    truth = _rate_truth(tr, d)
                    out.append({"camp": store.rstrip("/").split("/")[-1], "path": rec["index"], "dir": d,
                                "truth": tr["limiter"], "rate_truth": truth, "base_rtt_ms": tr["base_rtt_ms"],
                                "front_hop": bool(tr.get("wifi_front")), "now": w["rate_mbps"] / truth - 1,
                                "before": before["rate_mbps"] / truth - 1, "before_from": before["rate_from"]})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args(argv)
    rs = rows(a.dirs)
    for r in rs:
        print(f"{r['camp']:>10} {r['path']:4d} {r['dir']:4} {r['truth']:8} {r['rate_truth']:8.4g} Mbit/s "
              f"{r['base_rtt_ms']:5.0f} ms{' (WiFi hop in front)' if r['front_hop'] else ''}: "
              f"{r['now'] * 100:+6.1f} % (samples' median {r['before'] * 100:+6.1f} %)")
    for d in ("down", "up"):
        for key, name in (("now", "median round trip"), ("before", "samples' median")):
            e = np.array([r[key] for r in rs if r["dir"] == d])
            if e.size:
                print(f"{d} {name}: {e.size} windows, within 5 % {int((abs(e) <= 0.05).sum())}, within 10 % "
                      f"{int((abs(e) <= 0.10).sum())}, median {np.median(e) * 100:+.2f} %, "
                      f"{e.min() * 100:+.1f} to {e.max() * 100:+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
