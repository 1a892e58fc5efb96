"""Where ``measure --quick``'s time goes (issue 30 §1; docs/advise.md, "Where measure's time goes").

Runs ``measure --quick`` through the emulator (root) against six true paths spanning 1-1000 Mbit/s and 5-600 ms,
built as the campaign builds its truths (``campaign.truth_doc``, the up port a quarter of the down), one at a time,
and prints one JSON line a path: the truth, what measure found, its elapsed time and its ``phases_s``.

    PYTHONPATH=python BLOATLAB_BIN_DIR=target/release python bench/advise/measure_phases.py OUT [INDEX ...]
"""

import json
import os
import sys

from bloatlab.advise import campaign as C


def truth(i, limiter, port, rtt, buf_bdp, loss=0.0, cir=None, bucket_ms=None):
    rate = port * cir if cir else port
    bdp = rate * 1e6 * rtt / 1e3 / 8
    return {"index": i, "limiter": limiter, "port_mbps": port, "up_port_mbps": port / 4, "down_mbps": rate,
            "up_mbps": (port / 4) * cir if cir else port / 4, "base_rtt_ms": rtt, "buffer_bdp": buf_bdp,
            "buffer_bytes": int(max(buf_bdp * bdp, 3000)), "cir_fraction": cir, "bucket_ms": bucket_ms, "loss": loss,
            "observable": C.OBSERVABLE[limiter], "variable": None}


PATHS = [
    truth(0, "fifo", 1.0, 20, 4.0),
    truth(1, "fq_codel", 10.0, 5, 1.0),
    truth(2, "policer", 100.0, 30, 1.0, cir=0.2, bucket_ms=10),
    truth(3, "fifo", 50.0, 100, 1.0),
    truth(4, "fifo", 1000.0, 10, 0.5),
    truth(5, "fifo", 5.0, 600, 1.0),
]

if __name__ == "__main__":
    out = sys.argv[1]
    for i in [int(x) for x in sys.argv[2:]] or range(len(PATHS)):
        p = PATHS[i]
        pdir = os.path.join(out, f"{i:02d}")
        os.makedirs(pdir, exist_ok=True)
        try:
            m = C._measure(p, pdir)
        except Exception as e:  # a path that fails is reported and the others still run
            print(json.dumps({"i": i, "failed": str(e)}), flush=True)
            continue
        d = m["down"]
        print(json.dumps({"i": i, "truth": [p["limiter"], round(p["down_mbps"], 3), p["base_rtt_ms"], p["buffer_bytes"]],
                          "got": [d["limiter"], round(d["rate_mbps"], 3), round(m["base_rtt_ms"]["p50"], 2), d["buffer_bytes"]],
                          "elapsed": round(m["elapsed_s"], 1), "phases": m.get("phases_s"),
                          "planned": {k: (m.get(k) or {}).get("planned_s") for k in ("down", "up")}}), flush=True)
