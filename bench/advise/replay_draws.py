"""Read measure-only draws again with today's code, offline: ``measure --replay`` of each recording.

``python bench/advise/replay_draws.py DIR[:SEED] [DIR[:SEED] ...] [--limiters codel pie fq_codel cake]``: each DIR
holds what ``campaign.measured_draw(n, seed, DIR)`` wrote (``DIR/NNNN/measure.json`` and ``DIR/NNNN/probes/``, no
kernel runs); the seed is the number the directory's name ends with unless given after a colon. For every path whose
truth (``campaign.draw(n, seed)[NNNN]``) is one of ``--limiters`` or whose stored down reading is an AQM, today's
``measure --replay`` of its recording reads the down direction again; prints truth, stored and today's reading
(limiter/qdisc, ``<-- moved`` where they differ) and, per truth class, how many today's code reads as the truth
(CoDel and PIE by kind; fq_codel and CAKE as flow isolation or CAKE). Nothing is sent on the network and nothing
is written into DIR. ``bench/advise/replay.py`` does the same for whole campaign directories (``DIR/paths/``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from bloatlab.advise import campaign


def right(truth: str, limiter: str | None, qdisc: str | None) -> bool:
    """Whether a down reading names the truth's AQM (CoDel and PIE by kind; fq_codel and CAKE read isolated)."""
    if truth in ("fq_codel", "cake"):
        return limiter == "aqm" and qdisc in (None, "cake")
    return limiter == "aqm" and qdisc == truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR[:SEED]")
    ap.add_argument("--limiters", nargs="+", default=["codel", "pie", "fq_codel", "cake"])
    a = ap.parse_args(argv)
    counts: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.dirs:
            d, _, s = spec.partition(":")
            m = re.fullmatch(r"\d+", s) or (None if s else re.search(r"(\d+)$", d.rstrip("/")))
            if m is None:
                ap.error(f"{spec}: no seed (give it as DIR:SEED, or name the directory after it, as d121)")
            seed = int(m.group(m.lastindex or 0))
            idx = sorted(int(os.path.basename(p)) for p in glob.glob(os.path.join(d, "[0-9]" * 4)))
            if not idx:
                ap.error(f"{d}: no path directories (NNNN/) of a measured draw here")
            truths = campaign.draw(max(idx) + 1, seed)
            for i in idx:
                pdir = os.path.join(d, f"{i:04d}")
                if not glob.glob(os.path.join(pdir, "probes", "*")):
                    continue
                t = truths[i]
                try:
                    with open(os.path.join(pdir, "measure.json")) as f:
                        stored = json.load(f).get("down") or {}
                except (OSError, ValueError):
                    stored = {}
                if t["limiter"] not in a.limiters and stored.get("limiter") != "aqm":
                    continue
                out = subprocess.run([sys.executable, "-m", "bloatlab", "measure", "--replay", os.path.join(pdir, "probes"),
                                      "--json", "--out", os.path.join(tmp, "twin.toml")], capture_output=True, text=True)
                try:
                    now = json.loads(out.stdout)["down"]
                except (ValueError, KeyError):
                    print(f"{os.path.basename(d)} {i} replay failed: {out.stderr.strip()[-200:]}")
                    continue
                before, after = (stored.get("limiter"), stored.get("aqm_qdisc")), (now.get("limiter"), now.get("aqm_qdisc"))
                print(f"{os.path.basename(d)} {i} {t['limiter']} {t['down_mbps']:.3g} Mbit/s {t['base_rtt_ms']:.1f} ms "
                      f"stored {before[0]}/{before[1]} now {after[0]}/{after[1]}" + ("  <-- moved" if before != after else ""),
                      flush=True)
                c = counts.setdefault(t["limiter"], [0, 0, 0])
                c[0] += right(t["limiter"], *before)
                c[1] += right(t["limiter"], *after)
                c[2] += 1
    for k, (b, n, of) in sorted(counts.items()):
        print(f"{k}: read as the truth {b} of {of} as stored -> {n} today")
    return 0


if __name__ == "__main__":
    sys.exit(main())
