"""Where ``measure --quick``'s seconds go on the campaign's own paths, run by run of the probe (issue 30 §1;
BENCHMARKS.md, "Where measure's time goes").

    # measure paths INDEX,... of campaign.draw(200, SEED) through the emulator (root), one at a time, each
    # bloatlab-probe run's JSON kept under OUT/INDEX-LIMITER/probe/ (with its start and end, monotonic)
    PYTHONPATH=python BLOATLAB_BIN_DIR=target/release python bench/advise/measure_split.py run SEED OUT INDEX,...
    # per path: the seconds of idle probes, trains, quiet gaps, connection setup, the loaded phases, the senders'
    # ack grace, the results' transfer, the probe's start and exit, and Python between the runs
    python bench/advise/measure_split.py split OUT
    # each timed loaded phase read as measure reads it (evidence._window) with all its samples and with the
    # samples cut at the phase's end: what `load --halt-at-end` would have left (the samples before the end are
    # the same either way), against the truth
    python bench/advise/measure_split.py cut OUT

``run`` keeps the probe's JSON through a ``sitecustomize`` module that wraps ``measure._probe`` in the measuring
process (which the emulator's shell starts), so measure itself is unchanged.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import sys
import tempfile

HOOK = '''import os
if os.environ.get("MEASURE_SPLIT_DIR"):
    import json, time
    from bloatlab.advise import measure as _m
    _orig, _n = _m._probe, [0]
    def _probe(args, timeout, who="measure", partial=False):
        t0, j = time.monotonic(), None
        try:
            j = _orig(args, timeout, who, partial)
            return j
        finally:
            _n[0] += 1
            with open(os.path.join(os.environ["MEASURE_SPLIT_DIR"], f"{_n[0]:02d}-{args[0]}-{args[1]}.json"), "w") as f:
                json.dump({"args": args, "t0": t0, "t1": time.monotonic(), "json": j}, f)
    _m._probe = _probe
'''


def run(seed: int, out: str, only: list[int]) -> None:
    from bloatlab.advise import campaign as c

    hook = tempfile.mkdtemp(prefix="measure_split_")
    with open(os.path.join(hook, "sitecustomize.py"), "w") as f:
        f.write(HOOK)
    os.environ["PYTHONPATH"] = hook + os.pathsep + os.environ.get("PYTHONPATH", "")
    for t in c.draw(200, seed):
        if t["index"] not in only:
            continue
        pdir = os.path.join(out, f"{t['index']}-{t['limiter']}")
        if os.path.exists(os.path.join(pdir, "m.json")):
            continue
        os.makedirs(os.path.join(pdir, "probe"), exist_ok=True)
        os.environ["MEASURE_SPLIT_DIR"] = os.path.join(pdir, "probe")
        before = open("/proc/loadavg").read().split()[0]
        try:
            m = c._measure(t, pdir)
        except Exception as e:  # one path's failure is a row, not the end of the run
            print(t["index"], "failed", e, flush=True)
            continue
        with open(os.path.join(pdir, "m.json"), "w") as f:
            json.dump({"truth": t, "measured": m, "load": [before, open("/proc/loadavg").read().split()[0]]}, f)
        print(t["index"], t["limiter"], f"{m['elapsed_s']:.1f} s", flush=True)


def _paths(out: str):
    for pdir in sorted(glob.glob(os.path.join(out, "*", "")), key=lambda p: int(os.path.basename(p[:-1]).split("-")[0])):
        if os.path.exists(pdir + "m.json"):
            yield pdir, json.load(open(pdir + "m.json")), [json.load(open(f)) for f in sorted(glob.glob(pdir + "probe/*.json"))]


def split(out: str) -> None:
    for pdir, M, runs in _paths(out):
        t, m = M["truth"], M["measured"]
        acc = dict(idle_probes=0.0, trains=0.0, quiet=0.0, setup=0.0, loaded=0.0, grace=0.0, results=0.0, exit=0.0, python=0.0)
        end = None
        for d in runs:
            a, j = d["args"], d["json"] or {}
            took = d["t1"] - d["t0"]
            if end is not None:
                acc["python"] += max(d["t0"] - end, 0.0)
                if d["t0"] < end:  # beside the run before it (the rest of the idle probes beside the loss stream)
                    took = max(d["t1"] - end, 0.0)
            end = max(end or 0.0, d["t1"])
            if a[0] != "load":
                acc["trains" if a[1] == "train" else "idle_probes"] += took
                continue
            ph = j["load"]["phases"][0]
            tm = ph["timing_s"]
            cl = list(tm["clients"].values())[0]
            quiet = float(a[a.index("--idle") + 1].removesuffix("ms")) / 1e3
            acc["quiet"] += quiet
            acc["setup"] += ph["from_s"] - quiet
            acc["loaded"] += ph["to_s"] - ph["from_s"]
            acc["grace"] += max(cl["streams_done_s"] - ph["to_s"], 0.0)
            acc["results"] += cl["results_read_s"] - max(cl["streams_done_s"], ph["to_s"])
            acc["exit"] += took - cl["results_read_s"]
        print(f"{t['index']:>3} {t['limiter']:8s} {t['down_mbps']:7.3g}/{t['up_mbps']:<6.3g} {t['base_rtt_ms']:5.1f} ms "
              f"{m['elapsed_s']:5.1f} s = " + " ".join(f"{k} {v:.2f}" for k, v in acc.items()) + f"  (load {M['load'][0]})")


def _cut(j: dict, at: float) -> dict:
    """``j`` with its flows' samples after ``at`` (s) left out and their retransmissions counted to there."""
    import numpy as np

    j = copy.deepcopy(j)
    fs = j["raw"]["series"]["flows"]
    keep = np.asarray(fs["t"], float) <= at
    for k in fs:
        fs[k] = [x for x, kept in zip(fs[k], keep) if kept]
    fid, rt, dl = (np.asarray(fs[k], float) for k in ("flow", "retransmits", "delivered_bytes"))
    for f in j["flows"]:
        sel = fid == f["id"]
        if not sel.any():
            continue
        segs = f["retransmits"] / f["retrans_rate"] if f.get("retrans_rate") else None
        f["retransmits"] = float(rt[sel][-1])
        if segs and f.get("bytes_delivered"):
            f["retrans_rate"] = f["retransmits"] / max(segs * dl[sel][-1] / f["bytes_delivered"], 1.0)
    return j


def cut(out: str) -> None:
    from bloatlab.advise.evidence import _evidence, _window

    for pdir, M, runs in _paths(out):
        t, m = M["truth"], M["measured"]
        base = m["base_rtt_ms"]["p50"]
        for d in runs:
            a, j = d["args"], d["json"]
            if a[0] != "load" or not j:
                continue
            ph = j["load"]["phases"][0]
            if "--until-stable" in a and ph.get("saturated_at_s") is not None:
                continue  # ended by its saturation: its flows stopped with it, no grace
            grace = max(j["raw"]["series"]["flows"]["t"]) - ph["to_s"]
            if grace < 0.5:
                continue
            d_ = ph["name"]
            w, jc = _window(j, d_), _cut(j, ph["to_s"])
            wc = _window(jc, d_)
            ev, evc = _evidence(j, w, d_, base, m["loss"]), _evidence(jc, wc, d_, base, m["loss"])
            print(f"{t['index']:>3} {d_:4s} {a[a.index('-C') + 1]:5s} -t {a[a.index('-t') + 1]} grace {grace:.2f} s: rate "
                  f"{w['rate_mbps']:.4g} ({w['rate_from']}) -> {wc['rate_mbps']:.4g} ({wc['rate_from']}), truth "
                  f"{t['down_mbps' if d_ == 'down' else 'up_mbps']:.4g}; flows' queue p95 {ev['flow_q95_ms']:.1f} -> "
                  f"{evc['flow_q95_ms']:.1f} ms")


if __name__ == "__main__":
    verb = sys.argv[1] if len(sys.argv) > 1 else ""
    if verb == "run" and len(sys.argv) == 5:
        run(int(sys.argv[2]), sys.argv[3], [int(x) for x in sys.argv[4].split(",")])
    elif verb in ("split", "cut") and len(sys.argv) == 3:
        (split if verb == "split" else cut)(sys.argv[2])
    else:
        sys.exit(__doc__)
