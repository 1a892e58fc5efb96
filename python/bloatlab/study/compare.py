"""Comparing the simulator with the kernel: one scenario on both engines, and
the compared quantities of the two summaries side by side with the
simulator's relative difference from the kernel (the reference):
``rel = (sim - emu) / |emu|``.

The library half of ``bloatlab compare`` (``commands/compare.py`` is its
CLI); also used by the fidelity matrix and ``bench/emu/fidelity.py``.
"""

from __future__ import annotations

import math


def rel(sim, emu) -> float | None:
    """(sim - emu) / |emu|; None when undefined (a missing value, or emu = 0 with sim != 0)."""
    if sim is None or emu is None or (isinstance(sim, float) and math.isnan(sim)) or (isinstance(emu, float) and math.isnan(emu)):
        return None
    if emu == 0:
        return 0.0 if sim == 0 else None
    return (sim - emu) / abs(emu)


def rows(s: dict, e: dict) -> list[dict]:
    """The compared quantities of two summaries (sim ``s``, emu ``e``)."""
    out = []

    def add(group, name, what, unit, a, b):
        out.append({"group": group, "name": name, "what": what, "unit": unit, "sim": a, "emu": b, "rel": rel(a, b)})

    ef = {f["id"]: f for f in e["flows"]}
    for f in s["flows"]:
        g = ef.get(f["id"], {})
        label = f"{f['name']} ({f['cc']}, {f['direction']}, {f['rtt_base_ms']:g}ms)"
        add("flow", label, "goodput", "Mbit/s", f["goodput_mbps"], g.get("goodput_mbps"))
        add("flow", label, "retransmits", "segs", f["retransmits"], g.get("retransmits"))
        add("flow", label, "retrans rate", "%", 100 * f["retrans_rate"], None if g.get("retrans_rate") is None else 100 * g["retrans_rate"])
        add("flow", label, "rtt p50", "ms", f["rtt_ms"].get("p50"), (g.get("rtt_ms") or {}).get("p50"))
        add("flow", label, "rtt p95", "ms", f["rtt_ms"].get("p95"), (g.get("rtt_ms") or {}).get("p95"))
    for d, l in s["links"].items():
        m = e["links"].get(d, {})
        label = f"link {d} ({l['rate_mbps']:g} Mbit/s {l['qdisc']})"
        add("link", label, "utilization", "%", 100 * l["utilization"], None if "utilization" not in m else 100 * m["utilization"])
        add("link", label, "qdelay mean", "ms", l["qdelay_ms"].get("mean"), (m.get("qdelay_ms") or {}).get("mean"))
        add("link", label, "qdelay p95", "ms", l["qdelay_ms"].get("p95"), (m.get("qdelay_ms") or {}).get("p95"))
        add("link", label, "drops", "pkts", l["drops"], m.get("drops"))
    es = {st["name"]: st for st in e.get("stations", [])}
    for st in s.get("stations", []):  # WiFi runs (docs/wifi.md)
        m = es.get(st["name"], {})
        label = f"station {st['name']} ({st['phy_rate_mbps']:g} Mbit/s PHY)"
        add("station", label, "goodput", "Mbit/s", st["goodput_mbps"], m.get("goodput_mbps"))
        add("station", label, "airtime", "%", 100 * st["airtime_share"], None if "airtime_share" not in m else 100 * m["airtime_share"])
        add("station", label, "AP qdelay p95", "ms", st["qdelay_ms"].get("p95"), (m.get("qdelay_ms") or {}).get("p95"))
    ep = {p["id"]: p for p in e["probes"]}
    for p in s["probes"]:
        q = ep.get(p["id"], {})
        label = f"probe {p['name']}"
        add("probe", label, "rtt p50", "ms", p["rtt_ms"].get("p50"), (q.get("rtt_ms") or {}).get("p50"))
        add("probe", label, "rtt p95", "ms", p["rtt_ms"].get("p95"), (q.get("rtt_ms") or {}).get("p95"))
    add("total", "all flows", "goodput", "Mbit/s", s["total_goodput_mbps"], e["total_goodput_mbps"])
    add("total", "all flows", "jain fairness", "", s["jain_fairness"], e["jain_fairness"])
    return out


def compare(scenario, overrides=(), save_dir: str | None = None) -> dict:
    """Run on both engines; {"sim": summary, "emu": summary, "rows": [...]}. The
    emulator's availability is checked first, so a missing root fails fast."""
    import os

    import bloatlab
    from ..engines import emu as emu_engine

    emu_engine.check()
    sc = bloatlab.load_scenario(scenario, list(overrides))  # resolved once, run on both engines
    rs = bloatlab.run(sc, engine="sim")
    re_ = bloatlab.run(sc, engine="emu")
    if save_dir:
        rs.save(os.path.join(save_dir, "sim"))
        re_.save(os.path.join(save_dir, "emu"))
    return {"sim": rs.summary, "emu": re_.summary, "rows": rows(rs.summary, re_.summary),
            "timing_flagged": emu_engine.timing_flagged(re_.summary), "timing_reason": emu_engine.timing_reason(re_.summary)}
