"""A FIFO's buffer on fresh paths, as ``measure --quick`` reads it through the emulator (issue 30 §1's "FIFO
buffer within 30 % on >= 90 %"; docs/advise.md, "The buffer: a figure or a bound"): for each path of the campaign's
seeded draw (:func:`bloatlab.advise.campaign.draw`) whose truth is a FIFO or a tbf shaper, ``measure --quick`` from
the true path's client namespace, as the campaign runs it (``campaign._measure``), then

- the figure the twin holds against the truth (the goal's ``buffer``: within 30 %), and right or honestly bounded
  (``buffer_or_bound``: :func:`campaign.buffer_said`);
- the same two **without the deep step**, from the same run: where the fill never overflowed the FIFO the step reads
  it again (the fill's own slow start, or Reno flows until their first loss) and keeps the fill's lower bound in
  ``deep_fill.fill_bound_bytes`` — that bound, or a packet train's depth at or above it, is what the reading was
  before the step (:func:`judge`);
- measure's time, and the step's share of it.

Real time, root (namespaces); about 25 s a path, resumable (a path whose ``measure.json`` is in ``--out`` is read
back, not measured again)::

    sudo .venv/bin/python bench/advise/deep_buffer.py --seed 58 --paths 60 --out DIR [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from bloatlab.advise import campaign as C  # noqa: E402

#: the truths whose buffer the goal judges (campaign.errors' ``buffer``: a tbf's limit is a FIFO at its rate)
LIMITERS = ("fifo", "shaper")


def judge(t: dict, d: dict) -> dict:
    """One path's buffer figures, after and before the deep step (``d``: measure's down direction). Before: the
    fill's lower bound, or the first packet train's depth at or above it where a train read one (the rule of
    ``trains._fifo_depth_from_trains`` for a lower bound, which took it before the step)."""
    from bloatlab.advise.trains import fifo_overflow_depth

    deep = d.get("deep_fill") or {}
    after = {k: d.get(k) for k in ("buffer_bytes", "buffer_bound", "buffer_bytes_min", "buffer_bytes_max")}
    before = dict(after)
    if deep.get("fill_bound_bytes") is not None:
        low = deep["fill_bound_bytes"]
        before = {"buffer_bytes": low, "buffer_bound": "lower", "buffer_bytes_min": low, "buffer_bytes_max": None}
        q = next((q for q in (fifo_overflow_depth(d.get(k), d["rate_mbps"]) for k in ("train", "aqm_train", "wifi_train"))
                  if q is not None), None)
        if q is not None and q >= low:
            before = {"buffer_bytes": int(q), "buffer_bound": None, "buffer_bytes_min": None, "buffer_bytes_max": None}
    out = {}
    for name, m in (("before", before), ("after", after)):
        err = C._rel(m["buffer_bytes"], t["buffer_bytes"]) if m["buffer_bytes"] is not None else None
        out[name] = {"bytes": m["buffer_bytes"], "bound": m["buffer_bound"], "err": err,
                     "ok": err is not None and abs(err) <= 0.30, "said": C.buffer_said(t, m)}
    out["deep"] = {k: deep.get(k) for k in ("phase", "overflowed", "queue_ms", "ran_s", "why", "failed")} if deep else None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--paths", type=int, default=60, help="the draw's size (the FIFO and tbf paths among them run)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rows = []
    for t, m in C.measured_draw(a.paths, a.seed, a.out, lambda t: t["limiter"] in LIMITERS):
        d = m["down"]
        r = {"seed": a.seed, "index": t["index"], "limiter": t["limiter"], "read": d["limiter"],
             "down_mbps": t["down_mbps"], "base_rtt_ms": t["base_rtt_ms"], "loss": t["loss"],
             "variable": t.get("variable"), "truth_bytes": t["buffer_bytes"], "elapsed_s": m["elapsed_s"],
             "deep_s": sum(v for k, v in m["phases_s"].items() if k.endswith("_deep")), **judge(t, d)}
        rows.append(r)
        b, x = r["before"], r["after"]
        fmt = lambda v: "—" if v is None else f"{v * 100:+.1f} %"  # noqa: E731
        print(f"{a.seed}/{t['index']:3d} {t['limiter']:6s} {t['down_mbps']:8.2f} Mbit/s {t['base_rtt_ms']:6.1f} ms "
              f"{t['buffer_bytes'] / 1e3:9.1f} KB, loss {t['loss'] * 100:.2g} %: read {d['limiter']}; before "
              f"{fmt(b['err'])} ({b['bound'] or 'depth'}), after {fmt(x['err'])} ({x['bound'] or 'depth'}); "
              f"{m['elapsed_s']:.1f} s, deep {r['deep_s']:.1f} s", flush=True)
    judged = [r for r in rows if r["after"]["err"] is not None]
    for name in ("before", "after"):
        ok = sum(r[name]["ok"] for r in judged)
        said = sum(bool(r[name]["said"]) for r in judged)
        print(f"{name}: within 30 % {ok} of {len(judged)}; right or a holding bound {said} of {len(judged)}")
    if rows:
        ran = [r for r in rows if r["deep_s"] > 0]
        print(f"measure --quick: median {statistics.median(r['elapsed_s'] for r in rows):.1f} s; the deep step ran "
              f"on {len(ran)} of {len(rows)} paths, {sum(r['deep_s'] for r in ran):.1f} s in all")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
