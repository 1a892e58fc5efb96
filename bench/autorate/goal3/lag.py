"""Mean |difference| of two shaper trajectories and the time lag that minimises it: python lag.py SIM_DIR EMU_DIR..."""
import sys, numpy as np, json
grid = np.arange(1, 59, 0.01)
def sh(d, g):
    log = json.load(open(d + "/summary.json"))["links"]["down"]["autorate"]["log"]
    lt = np.array([e[0] for e in log]); lr = np.array([e[1] for e in log])
    return lr[np.maximum(np.searchsorted(lt, g, side="right") - 1, 0)]
a = sh(sys.argv[1], grid)
for d in sys.argv[2:]:
    best = min(((np.abs(a - sh(d, grid + L)).mean(), L) for L in np.arange(-0.5, 0.5001, 0.01)))
    print(d, "mean |diff| at lag 0: %.2f Mbit/s; best lag %+.2f s (mean |diff| %.2f)" % (np.abs(a - sh(d, grid)).mean(), best[1], best[0]))
