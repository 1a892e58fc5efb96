"""``bloatlab compare FILE``: run a scenario on the simulator and on the
emulator (the real kernel) and print the two side by side, with the
simulator's relative difference from the kernel (the reference):
``rel = (sim - emu) / emu``.
"""

from __future__ import annotations

import json
import sys

from ..study.compare import compare, rel, rows  # noqa: F401  (re-exported: bloatlab.commands.compare.compare)
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
    from ._table import print_table

    cells, last = [], None
    for r in res["rows"]:
        name = r["name"] if r["name"] != last else ""
        last = r["name"]
        sim, emu = _fmt(r["sim"], r["unit"]), _fmt(r["emu"], r["unit"])
        if r["rel"] is None:
            d = "-"
        elif sim == emu and abs(r["rel"]) >= 0.0005:
            d = "—"  # two figures the table shows alike (0.00 and 0.00): their ratio says nothing
        else:
            d = f"{100 * r['rel']:+.1f}%"
        what = r["what"] + (f" ({r['unit']})" if r["unit"] and r["unit"] not in ("segs", "pkts") else "")
        cells.append((name, what, sim, emu, d))
    print_table(["", "what", ("sim", "right"), ("emu", "right"), ("sim vs emu", "right")], cells)
    late = e["meta"].get("lateness") or {}
    if late:
        from ..engines.emu import timing_reason

        why = timing_reason(e)
        flag = f"  FLAGGED: timing less accurate than configured: {why}" if why else ""
        print(f"emulator lateness: p50 {late.get('p50_us')} µs  p99 {late.get('p99_us')} µs  max {late.get('max_us')} µs{flag}")


def main(args) -> int:
    import bloatlab

    from ..progress import Long
    from .run import EMU_SETUP_S

    sc = bloatlab.load_scenario(args.scenario, overrides_of(args))
    secs = sc.resolved()["duration_ns"] / 1e9
    with Long(f"comparing {sc.name} on the simulator and the kernel (emulator)", secs + EMU_SETUP_S):
        res = compare(args.scenario, overrides_of(args), save_dir=args.out)
    if args.json:
        json.dump(res, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print_table(res)
    return 0
