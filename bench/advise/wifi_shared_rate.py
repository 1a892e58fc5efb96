"""What a shared WiFi hop's rate goal measures: the campaign's truth against the model in the measurement's own
conditions, offline.

``python bench/advise/wifi_shared_rate.py DIR [DIR ...] [--json OUT]``: for every path of each campaign directory
whose truth is a WiFi hop with other busy stations (``wifi_others``), three figures of the measuring host's four
CUBIC downloads:

- the truth's rate (``campaign._wifi_rate``: the four flows and the others' downloads all begun together, at
  ``path.WIFI_RATE_RTT_MS``, over 4 s: a steady share);
- what ``measure`` read (the fill's rate, ``DIR/paths/NNNN/measure.json``);
- the model of the true hop in the campaign's own conditions: the others' downloads running from the start (the
  shell starts them with the emulator), the four flows begun where the fill began (the idle, serialization, WiFi
  train and loss stream phases' time, and the fill's quiet gap), at the path's RTT, their rate read over the
  fill's second half (as ``measure`` reads it; the fill's length as it ran, ``load_timing_s``).

Where the model in the measurement's conditions lies near what it read and far from the truth, the rate goal's
miss is the yardstick's (a steady share no fill of a few seconds reaches: a legacy AP's one FIFO that the others
hold full gives late flows a small share for many round trips), not the reading's. Prints one line a path and the
counts within the rate goal's 10 %; nothing is sent on the network and nothing is written into DIR.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

from bloatlab.advise import campaign as C
from bloatlab.advise.evidence import WIRE_PER_PAYLOAD

#: the phases before the down fill (measure's ``phases_s`` keys)
BEFORE_FILL = ("idle", "serialization", "wifi_train", "loss_stream")


def model_rate(t: dict, start_s: float, ran_s: float, together: bool = False) -> float:
    """The model's rate (Mbit/s on the wire) of the true hop ``t``'s four CUBIC downloads begun at ``start_s`` (0
    with ``together``) beside the others' downloads begun at 0, over the second half of their ``ran_s``."""
    import bloatlab

    start = 0.0 if together else start_s
    doc = {"name": "shared-rate", "duration": f"{start + ran_s + 0.1:.6g}s", "seed": 1, "wifi": C._wifi_doc(t),
           "flow": [{"cc": "cubic", "count": 4, "rtt": f"{t['base_rtt_ms']:.6g}ms", "station": "you",
                     "start": f"{start:.6g}s"}] + C._others_flows(t)}
    f = bloatlab.run(doc).flows.dropna(subset=["delivered_bytes"]).sort_values("t")
    f = f[f.flow < 4]
    lo, hi = start + ran_s / 2, start + ran_s
    bps = 0.0
    for _, g in f.groupby("flow"):
        a, b = g[g.t <= lo], g[g.t <= hi]
        if len(a) and len(b) and b.t.iloc[-1] > a.t.iloc[-1]:
            bps += (b.delivered_bytes.iloc[-1] - a.delivered_bytes.iloc[-1]) * 8 / (b.t.iloc[-1] - a.t.iloc[-1])
    return bps / 1e6 * WIRE_PER_PAYLOAD


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="campaign directories (bloatlab fidelity --advise --out)")
    ap.add_argument("--json", metavar="OUT", help="write every row here")
    a = ap.parse_args(argv)
    tol = dict((k, t) for k, t, _ in C.GOALS)["rate"]
    rows = []
    for d in a.dirs:
        if not os.path.isdir(os.path.join(d, "paths")):
            print(f"wifi_shared_rate.py: {d}: no paths/ (not a campaign directory)", file=sys.stderr)
            return 2
        for f in sorted(glob.glob(os.path.join(d, "paths", "[0-9][0-9][0-9][0-9].json"))):
            with open(f) as fh:
                r = json.load(fh)
            t = r.get("truth") or {}
            mj = os.path.join(f[:-5], "measure.json")
            if t.get("limiter") != "wifi" or not t.get("wifi_others") or not os.path.exists(mj):
                continue
            with open(mj) as fh:
                m = json.load(fh)
            fill = ((m["down"].get("load_timing_s") or {}).get("fill")) or {}
            if not isinstance(fill.get("to_s"), (int, float)):
                continue
            start = sum(v for k, v in m.get("phases_s", {}).items() if k in BEFORE_FILL) + fill["from_s"]
            ran = fill["to_s"] - fill["from_s"]
            row = {"dir": d, "path": r["index"], "mac": t["wifi_mac"], "mcs": t["mcs"], "others": t["wifi_others"],
                   "rtt_ms": t["base_rtt_ms"], "truth": t["down_mbps"], "measured": m["down"]["rate_mbps"],
                   "model_conditions": model_rate(t, start, ran), "model_together": model_rate(t, start, ran, True)}
            rows.append(row)
            print(f"{d} path {row['path']}: {row['mac']} MCS {row['mcs']} beside {row['others']['count']} at MCS "
                  f"{row['others']['mcs']}, {row['rtt_ms']:.0f} ms: truth {row['truth']:.3g}, measured "
                  f"{row['measured']:.3g}, the model begun beside the others {row['model_conditions']:.3g} "
                  f"(all begun together at the path's RTT {row['model_together']:.3g}) Mbit/s")
    near = lambda x, ref: abs(x / ref - 1) <= tol
    print(f"{len(rows)} shared hops: measured within {tol:.0%} of the truth on "
          f"{sum(near(r['measured'], r['truth']) for r in rows)}, of the model in the measurement's conditions on "
          f"{sum(near(r['measured'], r['model_conditions']) for r in rows)}; that model within {tol:.0%} of the "
          f"truth on {sum(near(r['model_conditions'], r['truth']) for r in rows)}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
