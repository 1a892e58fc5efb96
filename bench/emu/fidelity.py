"""Fidelity suite: every scenario of scenarios/fidelity/ on the simulator and
on the emulator (the real kernel, the reference), and the table of
docs/fidelity.md.

    sudo .venv/bin/python bench/emu/fidelity.py              # all, writes docs/fidelity.md + bench/emu/fidelity.json
    sudo .venv/bin/python bench/emu/fidelity.py 01 05        # only scenarios whose name starts with these
    .venv/bin/python bench/emu/fidelity.py --table-only      # re-render the table from bench/emu/fidelity.json

A scenario is flagged when the simulator's goodput (a flow's, or the total)
differs from the kernel's by more than GOODPUT_TOL, or the mean queueing
delay by more than QDELAY_TOL (and by more than QDELAY_FLOOR_MS: below a
millisecond a relative difference means nothing).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

GOODPUT_TOL = 0.10
QDELAY_TOL = 0.20
QDELAY_FLOOR_MS = 1.0
JSON_OUT = os.path.join(HERE, "fidelity.json")
MD_OUT = os.path.join(REPO, "docs", "fidelity.md")


def rel(a, b):
    if a is None or b is None or b == 0:
        return None
    return (a - b) / abs(b)


def pct(x):
    return "-" if x is None else f"{100 * x:+.0f}%"


def run_all(prefixes: list[str]) -> list[dict]:
    from bloatlab.commands.compare import compare

    files = sorted(glob.glob(os.path.join(REPO, "scenarios", "fidelity", "*.toml")))
    if prefixes:
        files = [f for f in files if any(os.path.basename(f).startswith(p) for p in prefixes)]
    out = []
    for f in files:
        t = time.time()
        name = os.path.splitext(os.path.basename(f))[0]
        print(f"== {name}", file=sys.stderr, flush=True)
        try:
            r = compare(f)
            out.append({"name": name, "file": os.path.relpath(f, REPO), "sim": r["sim"], "emu": r["emu"],
                        "wall_s": time.time() - t})
        except Exception as e:  # keep going: one failing scenario must not hide the others
            print(f"   failed: {e}", file=sys.stderr)
            out.append({"name": name, "file": os.path.relpath(f, REPO), "error": str(e)})
    return out


def judge(r: dict) -> dict:
    """Per-scenario numbers and flags."""
    s, e = r["sim"], r["emu"]
    flows = []
    for fs, fe in zip(s["flows"], e["flows"]):
        flows.append({"name": fs["name"], "cc": fs["cc"], "sim": fs["goodput_mbps"], "emu": fe["goodput_mbps"],
                      "rel": rel(fs["goodput_mbps"], fe["goodput_mbps"]),
                      "retx_sim": fs["retransmits"], "retx_emu": fe["retransmits"]})
    links = {}
    for d, ls in s["links"].items():
        le = e["links"].get(d, {})
        qs, qe = ls["qdelay_ms"].get("mean"), (le.get("qdelay_ms") or {}).get("mean")
        links[d] = {"sim": qs, "emu": qe, "rel": rel(qs, qe)}
    probes = []
    for ps, pe in zip(s["probes"], e["probes"]):
        probes.append({"sim": ps["rtt_ms"].get("p50"), "emu": pe["rtt_ms"].get("p50"),
                       "rel": rel(ps["rtt_ms"].get("p50"), pe["rtt_ms"].get("p50"))})
    tot = rel(s["total_goodput_mbps"], e["total_goodput_mbps"])
    bad_g = [f for f in flows if f["rel"] is not None and abs(f["rel"]) > GOODPUT_TOL]
    if tot is not None and abs(tot) > GOODPUT_TOL:
        bad_g.append({"name": "total"})
    bad_q = [d for d, l in links.items() if l["rel"] is not None and abs(l["rel"]) > QDELAY_TOL
             and abs((l["sim"] or 0) - (l["emu"] or 0)) > QDELAY_FLOOR_MS]
    late = e["meta"].get("lateness") or {}
    return {"flows": flows, "links": links, "probes": probes, "total": (s["total_goodput_mbps"], e["total_goodput_mbps"], tot),
            "bad_goodput": bad_g, "bad_qdelay": bad_q, "lateness_p99_us": late.get("p99_us"),
            "late_flagged": late.get("flagged", False)}


def render(results: list[dict]) -> str:
    lines = [
        "# Fidelity: the simulator against the kernel",
        "",
        "Each scenario of `scenarios/fidelity/` runs on `--engine sim` and on `--engine emu` (Linux "
        f"{_kernel(results)} TCP through bloatlab's emulated link: the reference). `rel` = (sim − emu) / emu. "
        f"Flag: goodput off by more than {100 * GOODPUT_TOL:.0f}% (a flow or the total) or mean queueing "
        f"delay off by more than {100 * QDELAY_TOL:.0f}% (and {QDELAY_FLOOR_MS:g} ms).",
        "",
        "Regenerate: `sudo .venv/bin/python bench/emu/fidelity.py` (about 5 minutes). Raw summaries: "
        "`bench/emu/fidelity.json`.",
        "",
        "| scenario | flows: goodput sim / emu Mbit/s (rel) | total rel | retx sim / emu | qdelay mean sim / emu ms (rel) | probe p50 sim / emu ms | emu late p99 µs | flag |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['name']} | failed: {r['error']} | | | | | | |")
            continue
        j = judge(r)
        fl = "<br>".join(f"{f['cc']} {f['sim']:.2f} / {f['emu']:.2f} ({pct(f['rel'])})" for f in j["flows"])
        rx = "<br>".join(f"{f['retx_sim']} / {f['retx_emu']}" for f in j["flows"])
        q = "<br>".join(f"{d}: {l['sim']:.1f} / {l['emu']:.1f} ({pct(l['rel'])})" for d, l in j["links"].items()
                        if l["sim"] is not None and l["emu"] is not None)
        pr = "<br>".join(f"{p['sim']:.1f} / {p['emu']:.1f}" for p in j["probes"] if p["sim"] is not None and p["emu"] is not None)
        flag = []
        if j["bad_goodput"]:
            flag.append("goodput")
        if j["bad_qdelay"]:
            flag.append("qdelay")
        if j["late_flagged"]:
            flag.append("emu timing")
        lines.append(f"| {r['name']} | {fl} | {pct(j['total'][2])} | {rx} | {q} | {pr} | "
                     f"{j['lateness_p99_us']} | {', '.join(flag) or 'ok'} |")
    return "\n".join(lines) + "\n"


def _kernel(results):
    for r in results:
        if "emu" in r:
            return r["emu"]["meta"].get("kernel", "?")
    return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="scenario name prefixes")
    ap.add_argument("--table-only", action="store_true", help="re-render docs/fidelity.md's table from fidelity.json")
    ap.add_argument("--print", action="store_true", help="print the table instead of writing docs/fidelity.md")
    a = ap.parse_args()
    if a.table_only:
        with open(JSON_OUT) as f:
            results = json.load(f)
    else:
        results = run_all(a.only)
        if a.only and os.path.exists(JSON_OUT):  # merge a partial re-run into the stored results
            with open(JSON_OUT) as f:
                old = {r["name"]: r for r in json.load(f)}
            old.update({r["name"]: r for r in results})
            results = [old[k] for k in sorted(old)]
        with open(JSON_OUT, "w") as f:
            json.dump(results, f, indent=1, default=str)
    table = render(results)
    if a.print:
        print(table)
        return 0
    # Keep the hand-written analysis below the table: replace only the generated part.
    marker = "<!-- end of generated table -->"
    tail = ""
    if os.path.exists(MD_OUT):
        with open(MD_OUT) as f:
            old = f.read()
        if marker in old:
            tail = old.split(marker, 1)[1]
    with open(MD_OUT, "w") as f:
        f.write(table + "\n" + marker + tail)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
