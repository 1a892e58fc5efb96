"""The probe's queueing over a fill's ramp on a drawn truth, its qdisc idle or primed by a train, model and kernel.

``[sudo] .venv/bin/python bench/advise/unprimed_ramp.py SEED:INDEX [--engine sim|emu] [--start S] [--window S]
[--train N --before S]``:
the truth of ``campaign.draw(60, SEED)[INDEX]`` (its qdisc running, as the campaign's), four CUBIC flows begun
``--start`` s in (default 1.265: isolation.QDISC_RUNNING_S and a quiet gap of 0.265 s, as ``measure``'s fill) and a
10-ms probe; prints the probe's queueing above the base and the flows' median cwnd every 250 ms, and the probe's
p95 over the ramp (the flows' first sample to ``--window`` s after it, default 1.5). ``measure`` sends a WiFi train
of 200 packets back to back just before its fill, which this run leaves out unless ``--train N`` asks for one of N
full packets ``--before`` s before the load's clock begins (``--start`` less the quiet gap, 0.265 s; default 0.5): on a
slow PIE that train primes the drop probability the fill's slow start meets (docs/advise.md "The slow start's
ramp"). Root for ``--engine emu``. 2026-12-04, 146:53 with ``--start 3.265``: idle 641.5 ms (sim) / 652.9 (emu); with
``--train 200 --before 1.68`` 25.3 ms (sim) / 21.9-25.4 (emu, three runs).
"""

from __future__ import annotations

import argparse

import numpy as np

import bloatlab
from bloatlab.advise import campaign as C


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="SEED:INDEX of campaign.draw(60, SEED)")
    ap.add_argument("--engine", default="sim", choices=("sim", "emu"))
    ap.add_argument("--start", type=float, default=1.265)
    ap.add_argument("--window", type=float, default=1.5)
    ap.add_argument("--train", type=int, default=0, help="packets of a back-to-back train before the load")
    ap.add_argument("--before", type=float, default=0.5, help="how long before the load's clock the train is sent (s)")
    a = ap.parse_args()
    seed, index = (int(x) for x in a.path.split(":"))
    t = C.draw(60, seed)[index]
    base = t["base_rtt_ms"]
    doc = C.truth_doc(t, a.start + 5.0, "cubic")
    doc["flow"] = [{"name": "load", "cc": "cubic", "count": 4, "rtt": f"{base:.6g}ms", "start": f"{a.start:g}s"}]
    doc["probe"] = [{"name": "ping", "interval": "10ms"}]
    if a.train:
        doc["train"] = [{"name": "idle-train", "packets": a.train, "start": f"{a.start - 0.265 - a.before:g}s",
                         "rtt": f"{base:.6g}ms"}]
    print(f"{a.path}: {t['limiter']} at {t['down_mbps']:.4g} Mbit/s, {base:.3g} ms; engine {a.engine}")
    r = bloatlab.run(doc, engine=a.engine)
    p, f = r.probes, r.flows
    for at in np.arange(a.start - 0.25, a.start + 5.0, 0.25):
        s = p[(p.t >= at) & (p.t < at + 0.25)].rtt_ms.dropna() - base
        c = f[(f.t >= at) & (f.t < at + 0.25)].cwnd_bytes
        print(f"{at:5.2f} s  probe {s.median() if len(s) else float('nan'):7.1f} ms (max {s.max() if len(s) else float('nan'):7.1f})"
              f"  cwnd {c.median() if len(c) else float('nan'):8.0f} B")
    t0 = float(f.t.min())
    ramp = p[(p.t >= t0) & (p.t < t0 + a.window)].rtt_ms.dropna() - base
    print(f"the ramp ({t0:.3f}-{t0 + a.window:.3f} s): the probe's queueing p95 {ramp.quantile(0.95):.1f} ms, "
          f"{len(ramp)} probes answered")


if __name__ == "__main__":
    main()
