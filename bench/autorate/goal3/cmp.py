"""Per-epoch table of saved runs (drive.py outputs): capacity, shaper median, goodput, retransmits, queueing delay.

    python cmp.py starlink RUN_DIR...
"""
import os, sys, bisect, json
import numpy as np
import bloatlab.result as R
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
import autorate_study as st, tomllib, os
from bloatlab import traces
doc = tomllib.load(open(os.path.join(st.GALLERY, st.CASES[sys.argv[1]]), "rb"))
ms = np.array(st.trace_ms(doc))
dirs = sys.argv[2:]
def cap(t0, t1, shift=0.0):
    a, b = np.searchsorted(ms, (t0 + shift) * 1000), np.searchsorted(ms, (t1 + shift) * 1000)
    return (b - a) * traces.OPPORTUNITY_BYTES * 8 / (t1 - t0) / 1e6
edges = [0] + st.switch_times(60) + [60] if sys.argv[1] == "starlink" else list(range(0, 61, 10))
out = {}
for d in dirs:
    r = R.Result.load(d)
    log = r.summary["links"]["down"]["autorate"]["log"]
    lt = np.array([e[0] for e in log]); lr = np.array([e[1] for e in log])
    grid = np.arange(0, 60, 0.01)
    sh = lr[np.maximum(np.searchsorted(lt, grid, side="right") - 1, 0)]
    f = r.flows
    dl = f.groupby("t")["delivered_bytes"].sum()
    rt = f.groupby("t")["retransmits"].sum()
    q = r.links[r.links.direction == "down"].set_index("t")
    rows = []
    for a, b in zip(edges[:-1], edges[1:]):
        m = (grid >= a) & (grid < b)
        g = (dl[(dl.index < b)].iloc[-1] - dl[(dl.index < a)].iloc[-1] if a > 0 else dl[dl.index < b].iloc[-1]) * 8 / (b - a) / 1e6
        rx = rt[rt.index < b].iloc[-1] - (rt[rt.index < a].iloc[-1] if a > 0 else 0)
        qq = q[(q.index >= a) & (q.index < b)]
        rows.append((a, b, cap(a, b), float(np.median(sh[m])), g, int(rx), float(qq.qdelay_ms.mean()), int(qq.drops.sum()) if "drops" in qq else -1))
    out[d] = (sh, rows, lt, r)
    print(d, "changes", len(log), "median", float(np.median(sh)))
    for x in rows:
        print("  %5.1f-%5.1f cap %5.1f shaper med %5.1f goodput %5.1f retx %4d qdelay %6.1f drops %4d" % x)
