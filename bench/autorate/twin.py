#!/usr/bin/env python3
"""Issue 31's second goal: the twin of a measured variable path predicts the kernel under each option.

For each gallery trace (LTE-like, Starlink-like: scenarios/gallery/*-autorate.toml without the autorate
line: the modem's FIFO on the trace), as the truth:

1. ``bloatlab measure`` (not --quick: 10-20 s phases) from the client namespace of the emulated true path
   writes the twin (a variable FIFO path follows a fitted trace: docs/advise.md, "A variable capacity");
2. for each option advise weighs there — no shaping, CAKE fixed at the measured p10 and median, cake-autorate
   between the measured p10 and p90 — and each control, the twin's prediction (the simulator on the twin) and
   the kernel's TCP through the emulated *true* path with the same settings, one bulk flow and a 10-ms probe,
   ``--duration`` each;
3. the errors: goodput within 15 %, p95 RTT within 25 % (issue 31).

    sudo .venv/bin/python bench/autorate/twin.py --out bench/autorate/twin   # ~6 min

Writes ``OUT/twin.json`` (every run) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
import tomllib

import bloatlab
from bloatlab import scenario as sc_mod
from bloatlab import units
from bloatlab._bin import find as find_bin
from bloatlab.advise import recommend
from bloatlab.advise.path import Path
from bloatlab.engines import emu

GALLERY = os.path.join(os.path.dirname(os.path.abspath(bloatlab.__file__)), "gallery")
CASES = {"lte": "lte-autorate.toml", "starlink": "starlink-autorate.toml"}
OPTIONS = ("as-is", "cake@p10", "cake@median", "autorate")


def truth(name: str, duration: str) -> dict:
    with open(os.path.join(GALLERY, CASES[name]), "rb") as f:
        doc = tomllib.load(f)
    down = doc["link"]["down"]
    down.pop("autorate", None)
    down["rate"] = "trace:" + os.path.join(GALLERY, down["rate"][len("trace:"):])
    doc.setdefault("link", {})["up"] = {"rate": "10Mbit"}
    doc["duration"] = duration
    doc["probe"] = [{"name": "ping", "interval": "10ms"}]
    return doc


def measure(doc: dict, out: str) -> tuple[dict, str]:
    resolved = sc_mod.load(doc).resolved()
    resolved["flows"], resolved["probes"] = [], []
    resolved["default_rtt_ns"] = int(units.parse_duration(doc["flow"][0]["rtt"]))
    twin = os.path.join(out, "twin.toml")
    mj = os.path.join(out, "measure.json")
    bl = f"{shlex.quote(sys.executable)} -m bloatlab"
    cmd = ["sh", "-c", f"sleep 0.5; {bl} measure $BLOATLAB_SERVER --no-up --json --out {shlex.quote(twin)} > {shlex.quote(mj)}"]
    rc = emu.shell(resolved, cmd, server=f"{find_bin('bloatlab-probe')} server --bind 0.0.0.0:5301")
    if rc != 0:
        raise SystemExit(f"measure failed ({rc}) for {doc['name']}")
    with open(mj) as f:
        return json.load(f), twin


def option_element(p: Path, option: str) -> dict | None:
    """The autorate element of an option, from the twin's figures (what a user would set)."""
    if option == "as-is":
        return None
    if option == "autorate":
        return recommend.autorate_element(recommend.autorate_settings(p))
    r = p.down_rate_p10_mbps if option == "cake@p10" else (p.down_rate_p50_mbps or p.down_mbps)
    r = f"{max(r, 2.0):.6g}Mbit"
    return {"min": r, "base": r, "max": r}


def figures(s: dict) -> dict:
    pr = s["probes"][0]["rtt_ms"] if s["probes"] and s["probes"][0]["rtt_ms"] else {}
    return {"goodput_mbps": s["flows"][0]["goodput_mbps"], "p95_rtt_ms": pr.get("p95")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--cc", nargs="+", default=["cubic", "bbr"])
    ap.add_argument("--trace", nargs="+", default=sorted(CASES), choices=sorted(CASES))
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    emu.check()
    rows = []
    for name in a.trace:
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        doc = truth(name, a.duration)
        t0 = time.monotonic()
        m, twin_file = measure(doc, d)
        p = Path.from_twin(twin_file)
        v = m["down"].get("rate_variation") or {}
        print(f"{name}: measured in {time.monotonic() - t0:.0f} s: {m['down']['rate_mbps']:.3g} Mbit/s, variable "
              f"{m['down'].get('variable')}, p10/p50/p90 {v.get('p10_mbps', 0):.3g}/{v.get('p50_mbps', 0):.3g}/"
              f"{v.get('p90_mbps', 0):.3g}", flush=True)
        for cc in a.cc:
            for opt in OPTIONS:
                el = option_element(p, opt)
                tw = p.twin(float(a.duration.rstrip("s")), cc=cc)
                tw["seed"] = 1
                tw["probe"] = [{"name": "ping", "interval": "10ms"}]
                if el:
                    tw["link"]["down"]["autorate"] = el
                pred = figures(bloatlab.run(tw).summary)
                tr = json.loads(json.dumps(doc))
                tr["flow"][0]["cc"] = cc
                if el:
                    tr["link"]["down"]["autorate"] = el
                kern = figures(bloatlab.run(tr, engine="emu").summary)
                row = {"trace": name, "cc": cc, "option": opt, "setting": el, "predicted": pred, "kernel": kern,
                       "goodput_err": pred["goodput_mbps"] / kern["goodput_mbps"] - 1 if kern["goodput_mbps"] else None,
                       "p95_err": (pred["p95_rtt_ms"] / kern["p95_rtt_ms"] - 1) if kern["p95_rtt_ms"] else None,
                       "twin_variable": p.down_variable}
                rows.append(row)
                print(f"  {cc:5} {opt:12} twin {pred['goodput_mbps']:6.2f} Mbit/s p95 {pred['p95_rtt_ms']:7.1f} ms | kernel "
                      f"{kern['goodput_mbps']:6.2f} Mbit/s p95 {kern['p95_rtt_ms']:7.1f} ms | errors "
                      f"{100 * row['goodput_err']:+.0f} % / {100 * row['p95_err']:+.0f} %", flush=True)
    with open(os.path.join(a.out, "twin.json"), "w") as f:
        json.dump(rows, f, indent=1)
    ok_g = sum(abs(r["goodput_err"]) <= 0.15 for r in rows if r["goodput_err"] is not None)
    ok_p = sum(abs(r["p95_err"]) <= 0.25 for r in rows if r["p95_err"] is not None)
    print(f"goodput within 15 %: {ok_g} of {len(rows)}; p95 RTT within 25 %: {ok_p} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
