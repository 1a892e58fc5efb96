"""The rate read from the two delivered counters of one measurement, paired (docs/advise.md "A window begun inside
a recovery").

``python bench/advise/counter_pair.py DIR [DIR ...] [--json OUT]``: every path of each campaign directory that kept
its recording (``DIR/paths/NNNN/probes/``, campaigns since ``measure --record``) is read twice by today's
``measure``, offline (``measure --replay``): as recorded, where the probe's series carry the segments delivered in
any order (``sack_delivered_bytes``, Linux's ``tcpi_delivered`` x the MSS), and with that column removed from every
run's series, so that the flows' cumulative ACK (``delivered_bytes``) is read as before the column existed. Same
runs, same code, one counter apart. Prints each direction whose rate moved by more than 0.5 points or whose limiter
changed, then per direction the count within the issue's 10 % and the median |error| of the moved ones (the fixed
capacities only: a variable link's truth is its trace's mean, not the window's). Nothing is sent on the network and
nothing is written into DIR (the stripped copies live in a temporary directory)."""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile

from bloatlab.advise import campaign as C
from bloatlab.advise import measure as M
from bloatlab.advise import recording

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import _rate_truth  # noqa: E402

COLUMN = "sack_delivered_bytes"
#: a reading moved where its error changed by more than this (points of the truth)
MOVED = 0.005


def stripped(src: str, out: str) -> int:
    """The recording in ``src`` copied to ``out`` with :data:`COLUMN` removed from every run's flow series; how many
    series held it."""
    head, runs, reads = recording.read(src)
    n = 0
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, recording.FILE), "w") as w:
        w.write(json.dumps(head) + "\n")
        for k in range(len(runs) + 1):
            for now in reads.get(k, []):
                w.write(json.dumps({"now_s": now}) + "\n")
            if k < len(runs):
                r = runs[k]
                fl = (((r.get("result") or {}).get("raw") or {}).get("series") or {}).get("flows")
                if isinstance(fl, dict) and COLUMN in fl:
                    del fl[COLUMN]
                    n += 1
                w.write(json.dumps(r) + "\n")
    return n


def rows(dirs: list[str]) -> list[dict]:
    out = []
    for camp in dirs:
        for f in sorted(glob.glob(os.path.join(camp, "paths", "[0-9]*.json"))):
            rec = json.load(open(f))
            probes = os.path.join(f[:-5], "probes")
            if not rec.get("measured") or recording.file_of(probes) is None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                if not stripped(probes, tmp):
                    continue  # a recording from before the column: one counter only
                both = [M.measure(None, show=False, replay=p).report for p in (probes, tmp)]
            for d in ("down", "up"):
                if not (both[0].get(d) and both[1].get(d)):
                    continue
                t = C.direction_truth(rec["truth"], d)
                truth = _rate_truth(t, d)
                a, b = both[0][d], both[1][d]
                out.append({"camp": os.path.basename(camp.rstrip("/")), "path": rec["index"], "dir": d,
                            "truth": t["limiter"], "rate_truth": truth, "variable": bool(t.get("variable")),
                            "rate_any_order": a["rate_mbps"], "rate_cumulative": b["rate_mbps"],
                            "limiter_any_order": a["limiter"], "limiter_cumulative": b["limiter"]})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    ap.add_argument("--json", metavar="OUT", help="write every row to OUT")
    args = ap.parse_args(argv)
    for d in args.dirs:
        if not os.path.isdir(os.path.join(d, "paths")):
            ap.error(f"{d}: not a campaign directory (no paths/ in it: `bloatlab fidelity --advise --out DIR` writes one)")
    rs = rows(args.dirs)
    for r in rs:
        if r["rate_truth"]:
            r["error_any_order"] = r["rate_any_order"] / r["rate_truth"] - 1
            r["error_cumulative"] = r["rate_cumulative"] / r["rate_truth"] - 1
        moved = r.get("rate_truth") and abs(r["error_any_order"] - r["error_cumulative"]) > MOVED
        if moved or r["limiter_any_order"] != r["limiter_cumulative"]:
            errs = (f"{100 * r['error_any_order']:+.1f} % (cumulative ACK {100 * r['error_cumulative']:+.1f} %)"
                    if r.get("rate_truth") else "")
            print(f"{r['camp']} path {r['path']} {r['dir']}: {r['truth']} at {r['rate_truth'] or 0:.4g} Mbit/s, "
                  f"read {r['rate_any_order']:.4g} {errs}, {r['limiter_any_order']} (cumulative: "
                  f"{r['limiter_cumulative']}){' variable' if r['variable'] else ''}")
    for d in ("down", "up"):
        fixed = [r for r in rs if r["dir"] == d and not r["variable"] and r.get("rate_truth")]
        moved = [r for r in fixed if abs(r["error_any_order"] - r["error_cumulative"]) > MOVED]
        nearer = sum(abs(r["error_any_order"]) < abs(r["error_cumulative"]) for r in moved)
        med = (lambda k: statistics.median(abs(r[k]) for r in moved) * 100) if moved else (lambda k: float("nan"))
        print(f"{d}: {len(fixed)} fixed-capacity directions; within 10 %: any order "
              f"{sum(abs(r['error_any_order']) <= 0.1 for r in fixed)}, cumulative "
              f"{sum(abs(r['error_cumulative']) <= 0.1 for r in fixed)}; moved {len(moved)}, nearer {nearer}, their "
              f"median |error| {med('error_cumulative'):.2f} % -> {med('error_any_order'):.2f} %; limiter changed "
              f"{sum(r['limiter_any_order'] != r['limiter_cumulative'] for r in rs if r['dir'] == d)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
