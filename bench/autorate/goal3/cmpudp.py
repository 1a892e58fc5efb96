"""Two runs' shaper trajectories side by side per Starlink epoch: python cmpudp.py SIM_DIR EMU_DIR."""
import os, sys, numpy as np, bloatlab.result as R
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
import autorate_study as st
edges = [0] + st.switch_times(60) + [60]
grid = np.arange(0, 60, 0.01)
def sh(d):
    log = R.Result.load(d).summary["links"]["down"]["autorate"]["log"]
    lt = np.array([e[0] for e in log]); lr = np.array([e[1] for e in log])
    return lr[np.maximum(np.searchsorted(lt, grid, side="right") - 1, 0)]
a, b = sh(sys.argv[1]), sh(sys.argv[2])
for x, y in zip(edges[:-1], edges[1:]):
    m = (grid >= x) & (grid < y)
    print("%4.0f-%4.0f  median %6.2f %6.2f  mean %6.2f %6.2f  mean |diff| %5.2f" % (x, y, np.median(a[m]), np.median(b[m]), a[m].mean(), b[m].mean(), np.abs(a[m]-b[m]).mean()))
r = np.abs(a - b) / a
i = np.argmax(r > 0.10)
print("first time the two differ by > 10 %:", grid[i] if r[i] > 0.10 else None, "share of time > 10 % apart:", (r > 0.10).mean())
