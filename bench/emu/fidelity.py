"""Fidelity suite: every scenario of scenarios/fidelity/ on the simulator and
on the emulator (the real kernel, the reference), and the table of
docs/fidelity.md.

    sudo .venv/bin/python bench/emu/fidelity.py              # all, writes docs/fidelity.md + bench/emu/fidelity.json
    sudo .venv/bin/python bench/emu/fidelity.py 01 05        # only scenarios whose name starts with these
    sudo .venv/bin/python bench/emu/fidelity.py --repeats 3  # three seeds per scenario: medians and ranges
    sudo .venv/bin/python bench/emu/fidelity.py --seeds 2,3 17 18   # add seeds 2 and 3 to the stored runs of 17, 18
    .venv/bin/python bench/emu/fidelity.py --table-only      # re-render the table from bench/emu/fidelity.json
    .venv/bin/python bench/emu/fidelity.py --sim-only        # after a model change: the simulator's side again
    sudo BLOATLAB_EMU_COALESCE=0 .venv/bin/python bench/emu/fidelity.py --store /tmp/fidelity-nocoalesce.json --print
                                                   # a variant of the emulator into its own store, the table printed
    .venv/bin/python bench/emu/fidelity.py --table-only --store bench/emu/fidelity-coalesce.json --against bench/emu/fidelity.json
                                                   # the two variants side by side

The table judges each scenario against the targets of issue 10 §3 (the
constants below): the median goodput error over all flows, each flow's
share, queueing delay p50/p95, retransmissions; identical connections are
compared as a set.
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

JSON_OUT = os.path.join(HERE, "fidelity.json")
MD_OUT = os.path.join(REPO, "docs", "fidelity.md")


def rel(a, b):
    if a is None or b is None or b == 0:
        return None
    return (a - b) / abs(b)


def pct(x):
    return "-" if x is None else f"{100 * x:+.0f}%"


def run_all(prefixes: list[str], seeds: list[int]) -> list[dict]:
    """Every scenario once per seed on both engines (the seed drives random
    loss and start jitter on both engines; the kernel adds its own timing). A
    run that fails is kept as an error beside the others."""
    from bloatlab.commands.compare import compare

    files = sorted(glob.glob(os.path.join(REPO, "scenarios", "fidelity", "*.toml")))
    if prefixes:
        files = [f for f in files if any(os.path.basename(f).startswith(p) for p in prefixes)]
    out = []
    for f in files:
        t = time.time()
        name = os.path.splitext(os.path.basename(f))[0]
        runs, errors = [], []
        for seed in seeds:
            print(f"== {name} seed {seed}", file=sys.stderr, flush=True)
            try:
                r = compare(f, overrides=[f"seed={seed}"])
                runs.append({"seed": seed, "sim": r["sim"], "emu": r["emu"]})
            except Exception as e:  # keep going: one failing run must not hide the others
                print(f"   failed: {e}", file=sys.stderr)
                errors.append({"seed": seed, "error": str(e)})
        entry = {"name": name, "file": os.path.relpath(f, REPO), "runs": runs, "wall_s": time.time() - t}
        if errors:
            entry["failed_runs"] = errors
        if not runs:
            entry["error"] = errors[-1]["error"]
        out.append(entry)
    return out


def rerun_sim(results: list[dict]) -> list[dict]:
    """The simulator's side of stored results run again (the same files and
    seeds; seconds): after a model change the kernel's column stays as
    measured, since it changes only with the emulator or the kernel."""
    import bloatlab

    out = []
    for r in results:
        if "error" in r:
            out.append(r)
            continue
        runs = []
        for x in runs_of(r):
            s = bloatlab.run(os.path.join(REPO, r["file"]), engine="sim", overrides=[f"seed={x['seed']}"]).summary
            runs.append({**x, "sim": s})
        out.append({**{k: v for k, v in r.items() if k not in ("sim", "emu")}, "runs": runs})
    return out


def runs_of(r: dict) -> list[dict]:
    """The runs of a stored result (older files hold one run as sim/emu)."""
    if "runs" in r:
        return r["runs"]
    return [{"seed": r["sim"].get("seed", 1), "sim": r["sim"], "emu": r["emu"]}]


def _pctl(xs, q):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo = int(k)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (k - lo)


def median_summary(summaries: list[dict]) -> dict:
    """One summary whose figures are the medians over runs of one engine.
    Identical connections are ranked by goodput within each run first (which
    of two identical flows wins is timing), so rank k is compared with rank k.
    Each flow keeps the min and max of its goodput over the runs
    (``goodput_range``); the emulator's lateness is the worst run's."""
    base = summaries[0]
    med = lambda xs: _pctl(xs, 0.5)
    ranked = []
    for s in summaries:
        groups: dict[tuple, list] = {}
        for f in s["flows"]:
            groups.setdefault(_group(f), []).append(f)
        order = []
        for g in sorted(groups, key=lambda g: min(f["id"] for f in groups[g])):
            order += sorted(groups[g], key=lambda f: -f["goodput_mbps"])
        ranked.append(order)
    flows = []
    for i, f0 in enumerate(ranked[0]):
        col = [r[i] for r in ranked if i < len(r)]
        f = dict(f0)
        gp = [x["goodput_mbps"] for x in col]
        f["goodput_mbps"] = med(gp)
        f["goodput_range"] = (min(gp), max(gp))
        f["retransmits"] = med([x["retransmits"] for x in col])
        if any(x.get("fct_s") is not None for x in col):
            f["fct_s"] = med([x.get("fct_s") for x in col])
        flows.append(f)
    links = {}
    for d, l0 in base["links"].items():
        l = dict(l0)
        l["qdelay_ms"] = {k: med([(s["links"].get(d) or {}).get("qdelay_ms", {}).get(k) for s in summaries])
                          for k in ("mean", "p50", "p95")}
        links[d] = l
    probes = []
    for i, p0 in enumerate(base["probes"]):
        p = dict(p0)
        p["rtt_ms"] = {"p50": med([s["probes"][i]["rtt_ms"].get("p50") for s in summaries if i < len(s["probes"])])}
        probes.append(p)
    meta = dict(base.get("meta") or {})
    lates = [(s.get("meta") or {}).get("lateness") or {} for s in summaries]
    if any(lates):
        p99 = [x.get("p99_us") for x in lates if x.get("p99_us") is not None]
        meta["lateness"] = {"p99_us": max(p99) if p99 else None, "flagged": any(x.get("flagged") for x in lates)}
    return {**base, "flows": flows, "links": links, "probes": probes, "meta": meta, "runs": len(summaries)}


def combined(r: dict) -> dict:
    """A stored result as one sim/emu pair of median summaries."""
    runs = runs_of(r)
    return {**r, "sim": median_summary([x["sim"] for x in runs]), "emu": median_summary([x["emu"] for x in runs])}


# Targets of issue 10 §3, against the kernel through the emulator.
MEDIAN_GOODPUT_TOL = 0.05   # median |relative goodput error| over every flow of every scenario
SHARE_TOL = 0.05            # every flow's share of its direction's goodput
QDELAY_PCT_TOL = 0.20       # queueing delay p50 and p95 ...
QDELAY_PCT_FLOOR_MS = 1.0   # ... or within 1 ms (below that a relative error means nothing)
RETX_RATIO = 1.5            # retransmissions within 1.5x ...
RETX_MIN = 50               # ... where there are at least 50 (on either engine)


def _group(f: dict) -> tuple:
    """Identical connections (a [[flow]] with count > 1: "name.0", "name.1")
    are compared as a set: which of two identical flows wins a race is timing,
    not the model."""
    name = f["name"]
    base, _, k = name.rpartition(".")
    return (base if k.isdigit() and base else name, f["cc"], f["direction"], f["rtt_base_ms"])


def pair_flows(s: dict, e: dict) -> list[tuple[dict, dict]]:
    """Flows of the two engines, paired: by group, largest goodput with largest."""
    groups: dict[tuple, tuple[list, list]] = {}
    for f in s["flows"]:
        groups.setdefault(_group(f), ([], []))[0].append(f)
    for f in e["flows"]:
        groups.setdefault(_group(f), ([], []))[1].append(f)
    out = []
    for a, b in groups.values():
        key = lambda f: -f["goodput_mbps"]
        out += list(zip(sorted(a, key=key), sorted(b, key=key)))
    order = {f["id"]: i for i, f in enumerate(s["flows"])}
    return sorted(out, key=lambda p: order[p[0]["id"]])


def _close_ms(a, b) -> bool:
    if a is None or b is None:
        return True
    return abs(a - b) <= QDELAY_PCT_FLOOR_MS or abs(a - b) <= QDELAY_PCT_TOL * abs(b)


def judge(r: dict) -> dict:
    """Per-scenario numbers and the targets it misses."""
    s, e = r["sim"], r["emu"]
    tot = {eng: {d: sum(f["goodput_mbps"] for f in x["flows"] if f["direction"] == d) for d in ("down", "up")}
           for eng, x in (("sim", s), ("emu", e))}
    flows = []
    for fs, fe in pair_flows(s, e):
        d = fs["direction"]
        share = lambda f, eng: f["goodput_mbps"] / tot[eng][d] if tot[eng][d] > 0 else None
        ss, se = share(fs, "sim"), share(fe, "emu")
        flows.append({"name": fs["name"], "cc": fs["cc"], "sim": fs["goodput_mbps"], "emu": fe["goodput_mbps"],
                      "rel": rel(fs["goodput_mbps"], fe["goodput_mbps"]),
                      "share_diff": None if ss is None or se is None else ss - se,
                      "retx_sim": fs["retransmits"], "retx_emu": fe["retransmits"],
                      "range_sim": fs.get("goodput_range"), "range_emu": fe.get("goodput_range"),
                      "fct_sim": fs.get("fct_s"), "fct_emu": fe.get("fct_s"), "sized": fs.get("fct_s") is not None or fe.get("fct_s") is not None})
    links = {}
    for d, ls in s["links"].items():
        le = (e["links"].get(d) or {}).get("qdelay_ms") or {}
        q = ls["qdelay_ms"]
        links[d] = {k: (q.get(k), le.get(k)) for k in ("mean", "p50", "p95")}
    probes = []
    for ps, pe in zip(s["probes"], e["probes"]):
        probes.append({"sim": ps["rtt_ms"].get("p50"), "emu": pe["rtt_ms"].get("p50")})
    misses = []
    sized_only = all(f["sized"] for f in flows)
    if not sized_only and len(flows) > 1 and any(f["share_diff"] is not None and abs(f["share_diff"]) > SHARE_TOL for f in flows):
        misses.append("share")
    for d, l in links.items():
        for k in ("p50", "p95"):
            a, b = l[k]
            # a queue that is empty on both engines (< 1 ms) is agreement, whatever the ratio
            if not _close_ms(a, b):
                misses.append(f"qdelay {k} {d}")
    rs, re_ = sum(f["retx_sim"] for f in flows), sum(f["retx_emu"] for f in flows)
    if max(rs, re_) >= RETX_MIN and max(rs, re_) > RETX_RATIO * max(min(rs, re_), 1):
        misses.append("retx")
    late = e["meta"].get("lateness") or {}
    return {"flows": flows, "links": links, "probes": probes, "retx": (rs, re_),
            "misses": misses, "lateness_p99_us": late.get("p99_us"), "late_flagged": late.get("flagged", False)}


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if n == 0 else (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)


def render(results: list[dict]) -> str:
    results = [r if "error" in r else combined(r) for r in results]
    judged = [(r, judge(r)) for r in results if "error" not in r]
    n_runs = sorted({r["emu"]["runs"] for r, _ in judged})
    # goodput of bulk flows; a sized transfer is judged by its completion time (shown), not its rate
    errs = [abs(f["rel"]) for _, j in judged for f in j["flows"] if f["rel"] is not None and not f["sized"]]
    med = _median(errs)
    ok = [r["name"] for r, j in judged if not j["misses"]]
    lines = [
        "# Fidelity: the simulator against the kernel",
        "",
        "Each scenario of `scenarios/fidelity/` runs on `--engine sim` and on `--engine emu` (Linux "
        f"{_kernel(results)} TCP through bloatlab's emulated link: the reference). `rel` = (sim − emu) / emu. "
        "Identical connections (a `[[flow]]` with `count`) are compared as a set, largest with largest.",
        "",
        "Targets (issue 10 §3): median goodput error ≤ "
        f"{100 * MEDIAN_GOODPUT_TOL:.0f} %; every flow's share of its direction within {SHARE_TOL}; queueing "
        f"delay p50 and p95 within {100 * QDELAY_PCT_TOL:.0f} % or {QDELAY_PCT_FLOOR_MS:g} ms; retransmissions within "
        f"{RETX_RATIO}× where there are at least {RETX_MIN}. A sized transfer is compared by its completion time "
        "(`fct`), not its rate. `misses` names the targets a scenario misses; `emu timing` marks a run whose "
        "emulator lateness was flagged (its figures are not to be trusted).",
        "",
        (f"Each scenario ran {'/'.join(map(str, n_runs))} times per engine (one seed per run): every figure is the median "
         "over the runs, identical flows ranked within each run first; `[lo–hi]` is the range of a flow's goodput "
         "over the kernel's runs (and the simulator's where it differs by seed)."
         if n_runs and max(n_runs) > 1 else "Each scenario ran once per engine (seed 1)."),
        "",
        f"**This run: median goodput error {100 * med:.1f} % over {len(errs)} flows** (target ≤ "
        f"{100 * MEDIAN_GOODPUT_TOL:.0f} %); **{len(ok)} of {len(judged)} scenarios meet every other target**."
        if med is not None else "",
        "",
        "Regenerate: `sudo .venv/bin/python bench/emu/fidelity.py` (one seed each, about 10 minutes; `--repeats 3` "
        "three seeds; `--seeds 2,3 NAME...` adds seeds to the stored runs of those scenarios; `--sim-only` runs the "
        "simulator's side again on the stored seeds in seconds, after a model change; `--table-only` re-renders from "
        "`bench/emu/fidelity.json`, the raw summaries).",
        "",
        "| scenario | goodput sim / emu Mbit/s (rel) | share sim − emu | qdelay p50 sim / emu ms | qdelay p95 sim / emu ms "
        "| retx sim / emu | fct sim / emu s | probe p50 sim / emu ms | emu late p99 µs | misses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    num = lambda x, f="{:.1f}": "-" if x is None else f.format(x)
    for r in results:
        if "error" in r:
            lines.append(f"| {r['name']} | failed: {r['error']} | | | | | | | | |")
            continue
        j = judge(r)
        fl = "<br>".join(f"{f['cc']} {f['sim']:.2f} / {f['emu']:.2f} ({pct(f['rel'])}){_ranges(f)}" for f in j["flows"])
        sh = "<br>".join("-" if f["share_diff"] is None or len(j["flows"]) < 2 else f"{f['share_diff']:+.3f}" for f in j["flows"])
        q50 = "<br>".join(f"{d}: {num(l['p50'][0])} / {num(l['p50'][1])}" for d, l in j["links"].items())
        q95 = "<br>".join(f"{d}: {num(l['p95'][0])} / {num(l['p95'][1])}" for d, l in j["links"].items())
        rx = f"{j['retx'][0]:.0f} / {j['retx'][1]:.0f}"
        fct = "<br>".join(f"{num(f['fct_sim'], '{:.2f}')} / {num(f['fct_emu'], '{:.2f}')}" for f in j["flows"] if f["sized"]) or "-"
        pr = "<br>".join(f"{p['sim']:.1f} / {p['emu']:.1f}" for p in j["probes"] if p["sim"] is not None and p["emu"] is not None) or "-"
        miss = list(j["misses"]) + (["emu timing"] if j["late_flagged"] else [])
        lines.append(f"| {r['name']} | {fl} | {sh} | {q50} | {q95} | {rx} | {fct} | {pr} | "
                     f"{j['lateness_p99_us']} | {', '.join(miss) or 'ok'} |")
    return "\n".join(lines) + "\n"


def render_against(results: list[dict], other: list[dict], label: str, other_label: str) -> str:
    """Two emulator variants side by side (e.g. with and without coalesced
    writes): for every scenario in both stores, on the seeds both ran, the
    kernel's figures and each variant's agreement with the simulator."""
    theirs = {r["name"]: r for r in other if "error" not in r}
    rows, errs, ok = [], ([], []), [0, 0]
    for r in results:
        o = theirs.get(r["name"])
        if "error" in r or o is None:
            continue
        seeds = {x["seed"] for x in runs_of(r)} & {x["seed"] for x in runs_of(o)}
        if not seeds:
            continue
        pick = lambda res: combined({**res, "runs": [x for x in runs_of(res) if x["seed"] in seeds]})
        ja, jb = judge(pick(r)), judge(pick(o))
        for i, j in enumerate((ja, jb)):
            errs[i].extend(abs(f["rel"]) for f in j["flows"] if f["rel"] is not None and not f["sized"])
            ok[i] += not j["misses"]
        gp = lambda j: " + ".join(f"{f['emu']:.2f}" for f in j["flows"])
        er = lambda j: _median([abs(f["rel"]) for f in j["flows"] if f["rel"] is not None]) or 0.0
        q = lambda j, k: "/".join(f"{l[k][1]:.1f}" for l in j["links"].values() if l[k][1] is not None) or "-"
        rows.append(f"| {r['name']} | {len(seeds)} | {gp(ja)} | {gp(jb)} | {100 * er(ja):.0f} % | {100 * er(jb):.0f} % "
                    f"| {ja['retx'][1]:.0f} / {jb['retx'][1]:.0f} | {q(ja, 'p50')} / {q(jb, 'p50')} "
                    f"| {q(ja, 'p95')} / {q(jb, 'p95')} | {ja['lateness_p99_us']} / {jb['lateness_p99_us']} "
                    f"| {', '.join(ja['misses']) or 'ok'} / {', '.join(jb['misses']) or 'ok'} |")
    med = [_median(v) for v in errs]
    fmt = lambda x: "-" if x is None else f"{100 * x:.1f} %"
    head = [
        f"Kernel through the emulator, `{label}` against `{other_label}`, on the seeds both stores ran; the simulator's "
        "side is each store's own. Median goodput error against the simulator over every bulk flow: "
        f"**{fmt(med[0])}** ({label}) vs **{fmt(med[1])}** ({other_label}); scenarios meeting every "
        f"other target: **{ok[0]}** vs **{ok[1]}** of {len(rows)}.",
        "",
        f"| scenario | seeds | kernel goodput {label} | kernel goodput {other_label} | median goodput error {label} "
        f"| … {other_label} | kernel retx {label} / {other_label} | qdelay p50 ms | qdelay p95 ms | emu late p99 µs "
        "| misses |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def _ranges(f: dict) -> str:
    """`` [sim lo–hi; emu lo–hi]`` when the runs differ (repeats > 1)."""
    out = []
    for eng in ("sim", "emu"):
        r = f.get(f"range_{eng}")
        if r and r[1] - r[0] > 0.005:
            out.append(f"{eng} {r[0]:.2f}–{r[1]:.2f}")
    return f" [{'; '.join(out)}]" if out else ""


def _kernel(results):
    for r in results:
        if "emu" in r:
            return r["emu"]["meta"].get("kernel", "?")
    return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="scenario name prefixes")
    ap.add_argument("--repeats", type=int, default=1, metavar="N",
                    help="runs per scenario and engine (seeds 1..N); the table shows medians and the kernel's range")
    ap.add_argument("--seeds", metavar="LIST",
                    help="comma-separated seeds to run (instead of 1..N); their runs are added to the stored "
                         "ones of the same scenarios, replacing the same seeds")
    ap.add_argument("--sim-only", action="store_true",
                    help="re-run only the simulator's side of fidelity.json (same seeds), keep the kernel's as measured")
    ap.add_argument("--table-only", action="store_true", help="re-render docs/fidelity.md's table from fidelity.json")
    ap.add_argument("--print", action="store_true", help="print the table instead of writing docs/fidelity.md")
    ap.add_argument("--store", metavar="FILE", default=JSON_OUT,
                    help="the results file read and written (default bench/emu/fidelity.json); another file keeps "
                         "a variant's runs (e.g. BLOATLAB_EMU_COALESCE=0) apart from the table's")
    ap.add_argument("--against", metavar="FILE",
                    help="print the store and FILE (another variant's store) side by side instead of the table")
    a = ap.parse_args()
    store = a.store
    if a.table_only or a.sim_only:
        with open(store) as f:
            results = json.load(f)
        if a.sim_only:
            results = rerun_sim(results)
            with open(store, "w") as f:
                json.dump(results, f, indent=1, default=str)
    else:
        try:
            seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else list(range(1, a.repeats + 1))
        except ValueError:
            ap.error(f"--seeds: expected comma-separated integers, got {a.seeds!r}")
        results = run_all(a.only, seeds)
        if (a.only or a.seeds) and os.path.exists(store):  # merge a partial re-run into the stored results
            with open(store) as f:
                old = {r["name"]: r for r in json.load(f)}
            for r in results:
                prev = old.get(r["name"])
                if a.seeds and prev is not None and "error" not in prev and r.get("runs"):
                    by_seed = {x["seed"]: x for x in runs_of(prev)}
                    by_seed.update({x["seed"]: x for x in r["runs"]})
                    r = {**r, "runs": [by_seed[k] for k in sorted(by_seed)]}
                old[r["name"]] = r
            results = [old[k] for k in sorted(old)]
        with open(store, "w") as f:
            json.dump(results, f, indent=1, default=str)
    if a.against:
        with open(a.against) as f:
            print(render_against(results, json.load(f), os.path.basename(store), os.path.basename(a.against)))
        return 0
    table = render(results)
    if a.print or os.path.abspath(store) != JSON_OUT:  # docs/fidelity.md is the default store's table only
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
