"""Run one autorate study case and save the full Result (flows, links, probes, summary) for side-by-side comparison.

    python drive.py sim|emu starlink|lte cubic|bbr OUT_DIR            # the gallery scenario, autorate without sss
    python drive.py sim|emu starlink cubic OUT_DIR udp 250us       # a constant-rate UDP load instead of TCP
"""
import json, os, sys, tomllib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
import autorate_study as st
import bloatlab
engine, trace, cc, out = sys.argv[1:5]
extra = sys.argv[5] if len(sys.argv) > 5 else ""
with open(os.path.join(st.GALLERY, st.CASES[trace]), "rb") as f:
    doc = tomllib.load(f)
d = json.loads(json.dumps(doc))
down = d["link"]["down"]
down["rate"] = "trace:" + os.path.join(st.GALLERY, down["rate"][len("trace:"):])
down["autorate"] = {k: v for k, v in down["autorate"].items() if k != "sss"}
d["flow"][0]["cc"] = cc
if extra == "udp":
    # a constant-rate load instead of TCP: 1472-B UDP echo replies every 0.25 ms on the downlink (1500 B of IP: 48 Mbit/s),
    # beside a 100-kbit/s application-limited TCP flow (a scenario needs a flow)
    d["flow"] = [{"cc": "cubic", "rtt": "40ms", "rate": "100kbit"}]
    d["probe"] = [{"interval": "10ms"}, {"name": "cbr", "interval": sys.argv[6] if len(sys.argv) > 6 else "250us", "size": "1472B", "rtt": "40ms"}]
res = bloatlab.run(d, engine=engine)
res.save(out)
a = res.summary["links"]["down"].get("autorate") or {}
print(engine, trace, cc, extra, "goodput", res.summary["total_goodput_mbps"], "shaper median", a.get("rate_median_mbps"))
