"""`measure` and `advise` on emulated paths whose truth is known (docs/advise.md).

For every path: `bloatlab shell` builds it (the scenario below), `bloatlab-probe
server` runs on the far side, `bloatlab measure --quick` measures it from the
near side; the measured figures are checked against the issue's targets (base
RTT within 2 ms + 5 %, rate within 10 %, buffer within 30 % or 0.2 BDP where
a FIFO holds it, loss within 50 % where >= 0.5 %, limiter kind right), and
`advise` on the measured twin is compared with `advise` on the true path (the
full simulator sweep of the truth): same recommendation, or within 5 % of its
score. Needs root. Prints a Markdown table for BENCHMARKS.md.

    .venv/bin/python bench/advise/bench.py [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from bloatlab.advise import recommend  # noqa: E402
from bloatlab.advise.path import Path  # noqa: E402

#: the port behind the policed path, x the policed rate (the twin assumes
#: path.POLICER_PORT = 10: a different figure, so the bench does not check the
#: twin against its own assumption)
POLICED_PORT = 5

# name, down Mbit/s, up Mbit/s, rtt ms, buffer (BDP), loss, limiter
PATHS = [
    ("home-fifo", 20, 5, 30, 4.0, 0.0, "fifo"),
    ("shallow", 100, 20, 20, 0.2, 0.0, "fifo"),
    ("deep-slow", 5, 1, 50, 10.0, 0.0, "fifo"),
    ("long-lossy", 50, 10, 100, 1.0, 0.01, "fifo"),
    ("lossy-2pct", 20, 5, 40, 1.0, 0.02, "fifo"),
    ("transcontinental", 100, 100, 200, 1.0, 0.0, "fifo"),
    ("fast", 200, 50, 10, 1.0, 0.0, "fifo"),
    ("policed", 20, 20, 40, 1.0, 0.0, "policer"),
    ("aqm", 50, 10, 40, 1.0, 0.0, "aqm"),
    ("asymmetric", 100, 5, 30, 2.0, 0.0, "fifo"),
]


def shell_args(down, up, rtt, bdp, loss, limiter) -> list[str]:
    """The path as `bloatlab shell` flags (buffer and loss apply to both directions).
    A policer polices `down` (both directions) on a port of POLICED_PORT x that
    rate, as ISPs police plans on faster ports; `fq_codel` owns the link."""
    if limiter == "policer":
        a = ["--down", f"{down * POLICED_PORT}Mbit", "--up", f"{up * POLICED_PORT}Mbit", "--policer", f"{down}Mbit"]
    else:
        a = ["--down", f"{down}Mbit", "--up", f"{up}Mbit"]
    a += ["--rtt", f"{rtt}ms", "--buffer", f"{bdp}bdp"]
    if loss:
        a += ["--loss", f"{loss * 100:g}%"]
    if limiter == "aqm":
        a += ["--qdisc", "fq_codel"]
    return a


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    a = ap.parse_args()
    env = dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"])
    rows = []
    for name, down, up, rtt, bdp, loss, limiter in PATHS:
        if a.only and a.only != name:
            continue
        r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", *shell_args(down, up, rtt, bdp, loss, limiter),
                            "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                            "sh", "-c", "sleep 0.5; bloatlab measure $BLOATLAB_SERVER --quick --json"],
                           capture_output=True, text=True, timeout=300, env=env)
        busy = [x for x in r.stderr.splitlines() if "timing quality" in x]
        if busy:
            # the emulator's own warning: the machine was loaded, its delays less exact (recorded, not hidden)
            print(name, busy[-1], file=sys.stderr)
        if r.returncode != 0:
            errs = [x for x in r.stderr.splitlines() if "error" in x and "timing quality" not in x]
            rows.append((name, f"measure failed: {(errs or r.stderr.strip().splitlines() or ['?'])[-1]}"))
            print(rows[-1], file=sys.stderr)
            continue
        m = json.loads(r.stdout[r.stdout.index("{"):])
        dn = m["down"]
        truth = Path(base_rtt_ms=rtt, down_mbps=down, up_mbps=up, buffer_bytes=int(bdp * down * 1e6 * rtt / 1e3 / 8),
                     loss=loss, limiter=limiter)
        twin = Path(**{k: v for k, v in m["twin"].items() if k != "buffer_bdp"})
        avail = ["reno", "cubic", "bbr", "bbr3"]
        a_true = recommend.advise(truth, "balanced", "cubic", avail)
        a_twin = recommend.advise(twin, "balanced", "cubic", avail)
        pick = (a_twin["recommendation"]["cc"], a_twin["expected"]["queue"])
        best = (a_true["recommendation"]["cc"], a_true["expected"]["queue"])
        true_scores = {(x["cc"], x["queue"]): x["score"] for x in a_true["alternatives"]}
        within = true_scores[pick] >= 0.95 * true_scores[best]
        checks = {
            "rtt": abs(m["base_rtt_ms"]["p50"] - rtt) <= 2 + 0.05 * rtt,
            "rate": abs(dn["rate_mbps"] - down) <= 0.10 * down,
            "buffer": limiter != "fifo" or (dn["buffer_bdp"] is not None and abs(dn["buffer_bdp"] - bdp) <= max(0.3 * bdp, 0.2)),
            "loss": loss < 0.005 or abs(m["loss"] - loss) <= 0.5 * loss,
            "limiter": dn["limiter"] == limiter,
            "advice": pick == best or within,
        }
        rows.append((name, down, up, rtt, bdp, loss, limiter, m, pick, best, true_scores[pick] / true_scores[best], checks))
        print(name, {k: v for k, v in checks.items()}, file=sys.stderr)
    print("| path | truth (down/up Mbit/s, RTT ms, buffer BDP, loss, limiter) | measured | advice on twin / on truth (score ratio) | targets |")
    print("|---|---|---|---|---|")
    for row in rows:
        if len(row) == 2:
            print(f"| {row[0]} | | {row[1]} | | |")
            continue
        name, down, up, rtt, bdp, loss, limiter, m, pick, best, ratio, checks = row
        dn, upm = m["down"], m["up"]
        bufs = "?" if dn["buffer_bdp"] is None else f"{dn['buffer_bdp']:.2g}"
        meas = (f"{dn['rate_mbps']:.3g}/{upm['rate_mbps']:.3g}, {m['base_rtt_ms']['p50']:.1f}, {bufs}, "
                f"{m['loss'] * 100:.2g} %, {dn['limiter']} ({m['elapsed_s']:.0f} s)")
        ok = " ".join(k if v else f"**{k} missed**" for k, v in checks.items())
        print(f"| {name} | {down}/{up}, {rtt}, {bdp}, {loss * 100:g} %, {limiter} | {meas} | {'+'.join(pick)} / {'+'.join(best)} ({ratio:.3f}) | {ok} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
