"""Live A/B of ``measure --quick`` through the emulator on chosen paths of seeded draws (root).

``sudo .venv/bin/python bench/advise/measured_ab.py collect OUT SEED:I,J,... [SEED:lossy ...]``: for each path
``I``, ``J`` of ``campaign.draw(60, SEED)`` (or, with ``lossy``, every path whose random loss, below 0.5 %, holds
four CUBIC flows below a direction's rate, below 150 ms: ``physics.cubic_loss``), ``campaign.measured_draw`` runs
``measure --quick`` (recorded) into ``OUT/SEED/NNNN/`` with the code on PYTHONPATH, and its truth into
``OUT/SEED/NNNN.json``; one line a path. Run it once for each code (a frozen ``git worktree`` on PYTHONPATH) into
its own OUT.

``.venv/bin/python bench/advise/measured_ab.py compare OLD NEW``: for each path NEW holds, the two readings side by
side (down limiter, ``R`` right / ``n`` named / ``x`` neither, down and up rate errors, the fills' controls, the up
limiter, a FIFO's or tbf's buffer within 30 %, the elapsed time) and the totals (right, named, rates within 10 %,
base RTT, buffer, ``measure --quick`` <= 20 s). BENCHMARKS.md "Two plans changed on 2026-12-04".
"""

from __future__ import annotations

import glob
import json
import os
import sys

from bloatlab.advise import campaign as C
from bloatlab.advise.path import BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE


def loss_limited(t: dict) -> bool:
    from bloatlab.advise.physics import cubic_loss
    from bloatlab.advise.plan import LOSSY
    loss = t.get("loss") or 0.0
    if loss <= 0 or loss >= LOSSY or t["base_rtt_ms"] >= 150 or t["limiter"] == "wifi" or t.get("wifi"):
        return False
    return any(loss > cubic_loss(t[d + "_mbps"], 4, t["base_rtt_ms"]) for d in ("down", "up"))


def collect(out: str, specs: list[str]) -> None:
    for spec in specs:
        seed_s, sel = spec.split(":")
        seed = int(seed_s)
        keep = loss_limited if sel == "lossy" else (lambda t, s=set(map(int, sel.split(","))): t["index"] in s)
        d = os.path.join(out, str(seed))
        os.makedirs(d, exist_ok=True)
        for t, m in C.measured_draw(60, seed, d, keep=keep):
            with open(os.path.join(d, f"{t['index']:04d}.json"), "w") as f:
                json.dump({"truth": t}, f)
            dn, up = m["down"], m["up"]
            print(f"{seed}/{t['index']}: truth {t['limiter']} loss {t.get('loss', 0) * 100:.3g}% down {t['down_mbps']:.4g} "
                  f"up {t['up_mbps']:.4g} rtt {t['base_rtt_ms']:.3g} | down {dn['limiter']} {dn['load_cc']} "
                  f"{dn['rate_mbps']:.4g} | up {up['limiter']} {up['load_cc']} {up['rate_mbps']:.4g} | "
                  f"{m.get('elapsed_s'):.1f} s", flush=True)


def _reading(p: str, t: dict) -> dict | None:
    if not os.path.exists(p):
        return None
    with open(p) as f:
        m = json.load(f)
    d, u = m["down"], m.get("up") or {}
    buf = None
    if t["limiter"] in ("fifo", "shaper") and d.get("buffer_bytes") and t.get("buffer_bytes"):
        buf = abs(d["buffer_bytes"] / t["buffer_bytes"] - 1) <= 0.3
    return {"lim": d["limiter"] + ("/" + d["aqm_qdisc"] if d.get("aqm_qdisc") else ""),
            "right": d["limiter"] == t["observable"],
            "named": C.limiter_said(t, {"limiter": d["limiter"], "limiter_alternatives": d.get("limiter_alternatives")}),
            "rate": d["rate_mbps"] / t["down_mbps"] - 1, "up_rate": (u.get("rate_mbps") or 0) / t["up_mbps"] - 1,
            "base": abs(m["base_rtt_ms"]["p50"] - t["base_rtt_ms"]) <= max(BASE_RTT_GOAL_MS, BASE_RTT_GOAL_SHARE * t["base_rtt_ms"]),
            "buf": buf, "cc": d["load_cc"] + "/" + u.get("load_cc", "-"), "up_lim": u.get("limiter"), "el": m["elapsed_s"]}


def compare(old: str, new: str) -> None:
    tot = {k: [0, 0] for k in ("right", "named", "rate", "up_rate", "base", "buf", "quick")}
    n = 0
    for pb in sorted(glob.glob(os.path.join(new, "*", "*", "measure.json"))):
        rel = os.path.relpath(os.path.dirname(pb), new)
        seed, idx = rel.split(os.sep)
        with open(os.path.join(new, seed, idx + ".json")) as f:
            t = json.load(f)["truth"]
        rows = [_reading(os.path.join(old, rel, "measure.json"), t), _reading(pb, t)]
        if rows[0] is None:
            continue
        n += 1

        def said(r):
            return (f"{r['lim']:14s} {'R' if r['right'] else 'n' if r['named'] else 'x'} rate {r['rate']:+.3f} up "
                    f"{r['up_rate']:+.3f} {r['cc']:11s} up:{r['up_lim'] or '-':8s} buf {r['buf']} {r['el']:5.1f} s")
        print(f"{seed}/{idx} {t['limiter']:8s}/{t['observable']:7s} {t['down_mbps']:7.3g} Mbit/s {t['base_rtt_ms']:5.3g} ms | "
              f"{said(rows[0])} | {said(rows[1])}")
        for k, r in enumerate(rows):
            tot["right"][k] += r["right"]
            tot["named"][k] += r["named"]
            tot["rate"][k] += abs(r["rate"]) <= 0.10
            tot["up_rate"][k] += abs(r["up_rate"]) <= 0.10
            tot["base"][k] += r["base"]
            tot["buf"][k] += bool(r["buf"])
            tot["quick"][k] += r["el"] <= 20
    print(f"{n} paths: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in tot.items()))


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("collect", "compare"):
        sys.exit(__doc__)
    collect(sys.argv[2], sys.argv[3:]) if sys.argv[1] == "collect" else compare(sys.argv[2], sys.argv[3])
