"""The user's shaped AQM (advise's ``fq_codel``/``cake`` candidates, ``path.user_shaped``) on stored campaign paths:
the model on the twin ``measure`` wrote against the model on the true path, and optionally the kernel there.

For every stored path (``DIR/paths/NNNN.json`` with ``NNNN/twin.toml``) whose recommendation is a shaped queue (not a
variable capacity, not a WiFi hop), runs the recommended control and queue once on the twin (``recommend._scenario``)
and once on the true path (``campaign.truth_doc``) in the simulator, seed 1, and prints both goodputs and their
ratio, with what the campaign stored (its prediction and the kernel's run, made with the code of its day). The count
at the end: how many twins land within 15 % of their true path's model — the share of the twin's goodput error that
is the measurement's and the twin's, not the model's.

With ``--kernel PATH ...`` (root: the emulator) it instead runs, for each named path, both shaped queues
(fq_codel and CAKE at 95 % of the twin's rate) three times through the emulator with the kernel's CUBIC
(``campaign._kernel``), beside the model's ensemble on the true path and one run on the twin, one JSON line each.

    PYTHONPATH=python .venv/bin/python bench/advise/shaped_twin.py DIR [DIR ...]
    PYTHONPATH=python .venv/bin/python bench/advise/shaped_twin.py DIR --kernel 0049 0021
"""

from __future__ import annotations

import argparse
import glob
import json
import os
from concurrent.futures import ProcessPoolExecutor


def _recommended(f: str):
    r = json.load(open(f))
    a = r.get("advice") or {}
    t = r["truth"]
    if (not a or a.get("queue") in (None, "as-is", "autorate") or not a.get("shaper_mbps") or t.get("variable")
            or t["limiter"] == "wifi" or not os.path.exists(f[:-5] + "/twin.toml")):
        return None
    return r, a


def one(f: str):
    import bloatlab
    from bloatlab.advise import campaign as C
    from bloatlab.advise import recommend as R
    from bloatlab.advise.path import Path

    got = _recommended(f)
    if got is None:
        return None
    r, a = got
    p = Path.from_twin(f[:-5] + "/twin.toml")
    dur = r.get("duration_s")
    c = R.Candidate(a["cc"], a["queue"], a["shaper_mbps"], a.get("paced", False))
    twin = C._figures(bloatlab.run(R._scenario(p, c, False, 1, dur), engine="sim").summary)["goodput_mbps"]
    doc = C.truth_doc(r["truth"], dur, a["cc"], a["queue"], a["shaper_mbps"], paced=a.get("paced", False))
    truth = C._figures(bloatlab.run(doc, engine="sim").summary)["goodput_mbps"]
    return f, a["queue"], twin, truth, (r.get("predicted") or {}).get("goodput_mbps"), (r.get("kernel") or {}).get("goodput_mbps")


def kernel(d: str, ids: list[str]) -> None:
    import bloatlab
    from bloatlab.advise import campaign as C
    from bloatlab.advise import recommend as R
    from bloatlab.advise.path import SHAPE_FRACTION, Path

    for pid in ids:
        r = json.load(open(os.path.join(d, "paths", f"{pid}.json")))
        t = r["truth"]
        p = Path.from_twin(os.path.join(d, "paths", pid, "twin.toml"))
        dur = r["duration_s"]
        sh = round(p.down_mbps * SHAPE_FRACTION, 6)
        for q in ("fq_codel", "cake"):
            k = C._kernel(t, dur, "cubic", q, sh, repeats=3)
            m = C._model(t, dur, "cubic", q, sh)
            tw = C._figures(bloatlab.run(R._scenario(p, R.Candidate("cubic", q, sh), False, 1, dur), engine="sim").summary)
            print(json.dumps({"path": pid, "queue": q, "shaper_mbps": sh, "duration_s": dur,
                              "kernel": {x: k[x] for x in ("goodput_mbps", "p95_rtt_ms", "timing_flagged", "tries")},
                              "kernel_runs": [x["goodput_mbps"] for x in k.get("runs", [])],
                              "model_truth": {x: m[x] for x in ("goodput_mbps", "p95_rtt_ms")}, "twin_one": tw}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="campaign directories")
    ap.add_argument("--kernel", nargs="+", metavar="PATH", help="path numbers (NNNN) of the first DIR: kernel runs")
    args = ap.parse_args()
    if args.kernel:
        kernel(args.dirs[0], args.kernel)
        return 0
    files = sorted(sum((glob.glob(os.path.join(d, "paths", "[0-9]*.json")) for d in args.dirs), []))
    with ProcessPoolExecutor(2) as ex:
        rows = [x for x in ex.map(one, files) if x]
    ok = 0
    for f, q, tw, tr, pr, k in rows:
        e = tw / tr - 1
        ok += abs(e) <= 0.15
        print(f"{f.split(os.sep)[-3]} {f[-9:-5]} {q:8s} twin {tw:8.3f} truth {tr:8.3f} ({e:+6.1%})  [stored: predicted {pr}, kernel {k}]")
    print(f"{ok} of {len(rows)} shaped recommendations: the model on the twin within 15 % of the model on the true path")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
