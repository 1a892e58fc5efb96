"""One point of `reproduce google-nsperf` as a scenario file, and the model's spread on it (issue 32).

    .venv/bin/python bench/emu/nsperf_point.py shallow:cubic:10 > FILE.toml             # the --quick point as TOML
    .venv/bin/python bench/emu/nsperf_point.py shallow:cubic:10 --full > FILE.toml      # the full matrix's point
    .venv/bin/python bench/emu/nsperf_point.py shallow:cubic:10 --ensemble 15           # the model's members
    .venv/bin/bloatlab run FILE.toml --seed 1 --json                         # one run (sudo ... --engine emu)

A point is a part of the experiment, ``CASE:CC:X`` (``coexist:cubic+bbr3:0.1``, ``random_loss:bbr:10``). The figures
are the experiment's (``GoogleNsperf.table``): the link's throughput (every flow's bytes delivered over the run), and
for coexist the second control's share (its goodput over the link's throughput).

``--ensemble N`` runs the model N times with advise's members (``recommend.members_of``: the base RTT over the
path's +- min(5 %, 1 ms), every flow's start shifted within one 4-ms jiffy; the middle member is the point itself)
and prints each member and the median and range. A point without random loss is the same run on every seed in the
model, so one run is one draw of what may be a race (shallow CUBIC at 10 flows: members 590-809 Mbit/s); the
ensemble is its spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))


def figures(summary: dict, cc: str) -> tuple[float, float | None]:
    """(the link's throughput Mbit/s, the second control's share or None) of a run's summary."""
    tput = sum(f["bytes_delivered"] for f in summary["flows"]) * 8 / summary["duration_s"] / 1e6
    if "+" not in cc:
        return tput, None
    second = cc.split("+")[1] + "."
    return tput, sum(f["goodput_mbps"] for f in summary["flows"] if f["name"].startswith(second)) / tput


def member_doc(doc: dict, rtt_ms: float, shift_ns: int) -> dict:
    """``doc`` with every flow at base RTT ``rtt_ms`` and started ``shift_ns`` later."""
    from bloatlab.units import parse_duration

    out = {**doc, "flow": []}
    for f in doc["flow"]:
        out["flow"].append({**f, "rtt": f"{rtt_ms:.6g}ms", "start": f"{parse_duration(f['start']) + shift_ns}ns"})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("point", help="CASE:CC:X, a part of reproduce google-nsperf (e.g. shallow:cubic:10)")
    ap.add_argument("--full", action="store_true", help="the full matrix's point (default: --quick's)")
    ap.add_argument("--ensemble", type=int, metavar="N", help="run the model's N members and print their figures")
    a = ap.parse_args()
    from bloatlab.advise.path import to_toml
    from bloatlab.study.experiments.google_nsperf import case_points

    pts = {f"{case}:{cc}:{x}": doc for case, cc, x, doc, _ in case_points(not a.full)}
    if a.point not in pts:
        print(f"error: point: {a.point!r} is not a point of reproduce google-nsperf{'' if a.full else ' --quick'} "
              f"(one of: {', '.join(pts)})", file=sys.stderr)
        return 2
    doc = pts[a.point]
    if a.ensemble is None:
        sys.stdout.write(to_toml(doc))
        return 0
    if not 1 <= a.ensemble <= 99:
        print(f"error: --ensemble: {a.ensemble} members, expected 1-99", file=sys.stderr)
        return 2
    import bloatlab
    from bloatlab.advise.recommend import members_of
    from bloatlab.units import parse_duration

    cc = a.point.split(":")[1]
    rows = []
    for i, (rtt, shift) in enumerate(members_of(parse_duration(doc["flow"][0]["rtt"]) / 1e6, a.ensemble)):
        tput, share = figures(bloatlab.run(member_doc(doc, rtt, shift), engine="sim").summary, cc)
        rows.append((tput, share))
        print(f"member {i}: rtt {rtt:.3f} ms, start +{shift} ns: {tput:.1f} Mbit/s"
              + ("" if share is None else f", share {share:.3f}"))
    t = [r[0] for r in rows]
    print(f"throughput median {statistics.median(t):.1f} Mbit/s ({min(t):.1f}-{max(t):.1f})")
    if rows[0][1] is not None:
        s = [r[1] for r in rows]
        print(f"share median {statistics.median(s):.3f} ({min(s):.3f}-{max(s):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
