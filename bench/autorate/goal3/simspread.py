"""The simulator's own sensitivity: the same case with the flow starting 0, 5, ..., 95 ms later."""
import json, os, sys, tomllib, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
import autorate_study as st
import bloatlab
trace, cc = sys.argv[1:3]
doc = tomllib.load(open(os.path.join(st.GALLERY, st.CASES[trace]), "rb"))
meds = []
for ms in range(0, 100, 5):
    d = json.loads(json.dumps(doc))
    down = d["link"]["down"]
    down["rate"] = "trace:" + os.path.join(st.GALLERY, down["rate"][len("trace:"):])
    down["autorate"] = {k: v for k, v in down["autorate"].items() if k != "sss"}
    d["flow"][0]["cc"] = cc
    d["flow"][0]["start"] = f"{ms}ms"
    r = bloatlab.run(d, engine="sim")
    meds.append(r.summary["links"]["down"]["autorate"]["rate_median_mbps"])
print(trace, cc, "shaper medians over 20 start offsets:", sorted(round(m, 2) for m in meds))
print("  min %.2f median %.2f max %.2f" % (min(meds), statistics.median(meds), max(meds)))
