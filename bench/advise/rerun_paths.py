"""Stored campaign paths measured, advised and judged again with today's code (issue 30): for each CAMPAIGN_DIR:INDEX
given, the true path its ``campaign.json`` record holds runs through campaign.run_path (`measure --quick` in the
emulator, `advise`, the recommended configuration's kernel runs on the true path, as long as the campaign's own),
and the new record is printed
beside the stored one: the twin's goodput against the kernel's, the policer's port, bucket and port FIFO. The new
records go to ``--out``/CAMPAIGN-INDEX/record.json; the stored campaign is only read. Needs root; ~1-3 min a path;
one at a time (the emulator is real time).

    .venv/bin/python bench/advise/rerun_paths.py CAMPAIGN_DIR:INDEX [...] [--out DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
# `measure` runs as `python -m bloatlab` inside the client namespace: this checkout's package, and its binaries
os.environ["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ.setdefault("BLOATLAB_BIN_DIR", os.path.join(ROOT, "target", "release"))


def _bad(msg: str) -> None:
    """A wrong CAMPAIGN_DIR:INDEX: said, exit status 2."""
    print(f"rerun_paths: {msg}", file=sys.stderr)
    sys.exit(2)


def _stored(spec: str) -> tuple[str, dict, bool]:
    """(a name for it, the stored record, whether its campaign ran ``--quick``) of CAMPAIGN_DIR:INDEX."""
    d, _, i = spec.rpartition(":")
    if not d or not i.isdigit():
        _bad(f"{spec!r}: expected CAMPAIGN_DIR:INDEX")
    if not os.path.exists(os.path.join(d, "campaign.json")):
        _bad(f"{spec!r}: no campaign.json in {d}")
    with open(os.path.join(d, "campaign.json")) as f:
        recs = [r for r in json.load(f) if r["index"] == int(i)]
    if not recs:
        _bad(f"{spec!r}: no path {i} in {d}/campaign.json")
    # the runs as long as the stored ones (campaign.campaign_duration): --quick's 3-5 s or 5-15 s
    with open(os.path.join(d, "campaign-meta.json")) as f:
        quick = bool(json.load(f).get("quick"))
    return f"{os.path.basename(os.path.normpath(d))}-{int(i)}", recs[0], quick


def _figures(rec: dict) -> dict:
    """The record's prediction, kernel and readings; a path whose measurement failed (``failed``) has none."""
    k, p, m = rec.get("kernel") or {}, rec.get("predicted") or {}, rec.get("measured") or {}
    g = p.get("goodput_mbps") / k["goodput_mbps"] - 1 if p.get("goodput_mbps") and k.get("goodput_mbps") else None
    return {"predicted_mbps": p.get("goodput_mbps"), "kernel_mbps": k.get("goodput_mbps"), "error": g,
            "advice": [rec["advice"]["cc"], rec["advice"]["queue"]] if rec.get("advice") else None,
            "limiter": m.get("limiter"), "failed": rec.get("failed"), "port_mbps": m.get("port_mbps"),
            "bucket_bytes": m.get("bucket_bytes"), "port_buffer_bytes": m.get("port_buffer_bytes")}


def main() -> None:
    from bloatlab.advise import campaign

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", metavar="CAMPAIGN_DIR:INDEX")
    ap.add_argument("--out", default="/tmp/rerun-paths")
    ap.add_argument("--json", action="store_true", help="one JSON object a path")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("rerun_paths: the emulator needs root")
    for spec in a.paths:
        name, old, quick = _stored(spec)
        pdir = os.path.join(a.out, name)
        new = campaign.run_path(old["truth"], pdir, quick=quick, say=lambda s: None)
        with open(os.path.join(pdir, "record.json"), "w") as f:
            json.dump(new, f, indent=1, default=str)
        was, now = _figures(old), _figures(new)
        if a.json:
            print(json.dumps({"path": name, "stored": was, "today": now}), flush=True)
            continue
        pct = lambda x: f"{x * 100:+.1f} %" if x is not None else "-"
        if now["failed"]:
            print(f"{name}: {now['failed']} (stored: {was['failed'] or 'measured'})", flush=True)
            continue
        if was["failed"]:
            print(f"{name}: stored {was['failed']}", flush=True)
        print(f"{name}: twin {now['predicted_mbps']:.4g} vs kernel {now['kernel_mbps']:.4g} Mbit/s ({pct(now['error'])}; "
              f"stored {pct(was['error'])}), {'+'.join(now['advice'] or [])} (stored {'+'.join(was['advice'] or [])}), "
              f"port {now['port_mbps']}, bucket {now['bucket_bytes']}, port FIFO {now['port_buffer_bytes']} "
              f"(stored {was['port_mbps']}, {was['bucket_bytes']}, {was['port_buffer_bytes']})", flush=True)


if __name__ == "__main__":
    main()
