"""``bloatlab compare FILE``: run a scenario on the simulator and on the
emulator (the real kernel) and print the two side by side, with the
simulator's relative difference from the kernel (the reference):
``rel = (sim - emu) / emu``.
"""

from __future__ import annotations

import json
import math
import sys

from .run import add_scenario_args, overrides_of


def register(sub) -> None:
    p = sub.add_parser("compare", help="run a scenario on both engines and compare (emu needs root)",
                       description="Run FILE on --engine sim and --engine emu and print, side by side, per-flow "
                                   "goodput, retransmits and RTT, per-direction queueing delay and the probes' RTT, "
                                   "with the simulator's relative difference from the kernel.")
    add_scenario_args(p)
    p.add_argument("--json", action="store_true", help="print {sim, emu, rows} as JSON")
    p.add_argument("--out", metavar="DIR", help="also save both results into DIR/sim and DIR/emu")
    p.set_defaults(func=main)


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
    rs = bloatlab.run(scenario, engine="sim", overrides=list(overrides))
    re_ = bloatlab.run(scenario, engine="emu", overrides=list(overrides))
    if save_dir:
        rs.save(os.path.join(save_dir, "sim"))
        re_.save(os.path.join(save_dir, "emu"))
    return {"sim": rs.summary, "emu": re_.summary, "rows": rows(rs.summary, re_.summary),
            "timing_flagged": emu_engine.timing_flagged(re_.summary)}


def _fmt(v, unit):
    if v is None:
        return "-"
    if unit in ("segs", "pkts"):
        return f"{v:.0f}"
    if unit == "":
        return f"{v:.3f}"
    return f"{v:.2f}"


def print_table(res: dict) -> None:
    s, e = res["sim"], res["emu"]
    print(f"{s['scenario'].get('name', '')}  seed={s['seed']}  duration={s['duration_s']:g}s  "
          f"kernel={e['meta'].get('kernel', '?')}")
    print(f"{'':44} {'what':<14} {'sim':>10} {'emu':>10} {'sim vs emu':>11}")
    last = None
    for r in res["rows"]:
        name = r["name"] if r["name"] != last else ""
        last = r["name"]
        d = "-" if r["rel"] is None else f"{100 * r['rel']:+.1f}%"
        what = r["what"] + (f" ({r['unit']})" if r["unit"] and r["unit"] not in ("segs", "pkts") else "")
        print(f"{name[:44]:<44} {what:<14} {_fmt(r['sim'], r['unit']):>10} {_fmt(r['emu'], r['unit']):>10} {d:>11}")
    late = e["meta"].get("lateness") or {}
    if late:
        from ..engines.emu import timing_flagged

        flag = "  FLAGGED: timing less accurate than configured" if timing_flagged(e) else ""
        print(f"emulator lateness: p50 {late.get('p50_us')} µs  p99 {late.get('p99_us')} µs  max {late.get('max_us')} µs{flag}")


def main(args) -> int:
    res = compare(args.scenario, overrides_of(args), save_dir=args.out)
    if args.json:
        json.dump(res, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print_table(res)
    return 0
