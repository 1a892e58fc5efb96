"""Read stored campaign measurements again with today's classifier, offline.

``python bench/advise/replay.py DIR [DIR ...] [--json OUT]``: for every path of
each campaign directory (``DIR/paths/NNNN.json`` and ``DIR/paths/NNNN/measure.json``)
and each measured direction, the limiter as today's code reads it from what the
campaign stored: the loaded phase's ``evidence`` (which phase it came from is
the code of the day's choice: the raw series are not kept), then the steps
``measure.measure`` takes after the loads — the WiFi hop from the stored idle
train, the policer's trains, ``_not_a_policer``, the AQM train, COBALT's first
signal — each served the packet train the campaign stored instead of sending
one. Where today's code would send a train the campaign did not (a reading that
changed to one that asks for it), the direction is marked ``needs_train`` and
its reading is today's before that train. So is a measurement that skipped the
loss stream today's code paces (``stream_not_stored``: ``loss_stream`` among
its ``needs_train``, the reason in ``loss_stream_not_stored``).

Where the campaign kept the path's recording (``DIR/paths/NNNN/probes/``, campaigns
since ``measure --record``), the reading is exact instead: today's ``measure`` run
whole over the recorded probe runs (``measure --replay``, advise/recording.py),
each row's ``source`` then ``recording`` (else ``evidence``), and ``needs_train``
the runs today's code asked for with other derived values (``replay.substituted``).

Prints one line per direction whose reading or right-or-named score changed
and the counts (down directions: what the campaign scores; up directions
judged against the up link's own figures, ``campaign.direction_truth``); ``--json`` writes
every row. Nothing is sent on the network and nothing is written into DIR.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import glob
import json
import os
import sys

from bloatlab.advise import campaign as C
from bloatlab.advise import measure as M
from bloatlab.advise import classify as M_classify
from bloatlab.advise import plan as M_plan
from bloatlab.advise import trains as M_trains
from bloatlab.advise import wifi_hop as M_wifi_hop


class _Stored:
    """The packet trains a campaign stored for one direction, served in place of ``measure._train``."""

    def __init__(self, x: dict):
        self.x = x
        self.missing: list[str] = []
        self.served: set[str] = set()

    def train(self, host, port, secret, count=None, pace_mbps=None, up=False):
        if pace_mbps:
            t = self.x.get("paced_train")
            what = "paced_train"
        elif up or (count is not None and count < M_trains.AQM_TRAIN_PACKETS and count != M.WIFI_TRAIN_PACKETS):
            # an up train's count is the up rate's (measure.train_count), the same for the policer's train and
            # the AQM's, and so is a down train's below 6 Mbit/s: served in measure's order, the policer's first
            # where one was stored (a reading today that asks for another train than the stored run did gets the
            # next stored one: such replays are approximate)
            what = next((w for w in ("train", "isolation_train", "aqm_train")
                         if self.x.get(w) is not None and w not in self.served), "aqm_train")
            self.served.add(what)
            t = self.x.get(what)
        elif count == M_trains.AQM_TRAIN_PACKETS and self.x.get("isolation_train") is not None:
            t, what = self.x["isolation_train"], "isolation_train"
        elif count == M_trains.AQM_TRAIN_PACKETS and self.x.get("aqm_train") is not None:
            t, what = self.x["aqm_train"], "aqm_train"
        else:
            t, what = self.x.get("train"), "train"
            if t is None and count == M_trains.AQM_TRAIN_PACKETS:
                what = "aqm_train"
        if t is None:
            self.missing.append(what)
            raise M.UserError(f"not stored: {what}")
        return t


@contextlib.contextmanager
def _offline(stored: _Stored):
    saved = (M._train, M._sleep)
    M._train = stored.train
    M._sleep = lambda s: None
    try:
        yield
    finally:
        M._train, M._sleep = saved


def read_direction(report: dict, d: str, down: dict | None = None) -> dict:
    """Direction ``d`` of a stored ``measure.json`` (``report``) as today's code reads it (a new dict); ``down``:
    the down direction as today's code read it, which the up direction's reading may rest on (the WiFi hop)."""
    old = report[d]
    ev = old["evidence"]
    flows = old.get("flows", 4)
    rate = old["rate_mbps"]
    base = report["base_rtt_ms"]["p50"]
    x = {k: v for k, v in old.items() if k not in ("limiter", "limiter_note", "limiter_alternatives", "aqm_qdisc",
                                                    "aqm_note", "wifi", "port_mbps", "bucket_bytes", "port_buffer_bytes",
                                                    "port_buffer_min_bytes", "train_note", "train_evidence",
                                                    "up_trains_sent", "no_up_train")}
    if hasattr(M, "take_busy_rate"):
        # _direction's rate: its phases' (what the trains and the WiFi hop set after is set again below), then the
        # link's rate while it was busy where the phases counted time it idled and the flows read no policer
        by_cc = {k: v for k, v in (old.get("rate_by_cc") or {}).items() if k in ("cubic", "bbr", "reno")}
        froms = {k: v for k, v in (old.get("rate_from") or {}).items() if k in by_cc}
        rate = max(by_cc.values()) if by_cc else rate
        rate = M.take_busy_rate(by_cc, froms, old.get("rate_variation"), rate, M_classify._classify_ev(ev, rate, flows))
        x.update(rate_mbps=rate, rate_by_cc=by_cc, rate_from=froms)
    stored = _Stored(old)
    # whether the evidence's drops came in its window (evidence.window_dropped), for records made before the
    # evidence kept it: from the stored buffer_window where it was read on the evidence's own phase (the fill's
    # load_cc for a fill's evidence, "bbr" for a BBR phase's), else None (not told)
    if hasattr(M, "window_dropped") and "window_dropped" not in ev:
        bw = old.get("buffer_window") or {}
        own = bw.get("phase") == (old.get("load_cc") if ev.get("phase") == "fill" else "bbr")
        loss_based = ev.get("phase") == "fill" and old.get("load_cc") == M.LOAD_CC
        ev["window_dropped"] = M.window_dropped(ev, bw, loss_based) if own else None
    # _direction's reading from the evidence
    limiter = M_classify._classify_ev(ev, rate, flows)
    q95 = max(ev["flow_q95_ms"], old.get("fill_flow_q95_ms", ev["flow_q95_ms"]))
    bdp = rate * 1e6 * base / 1e3 / 8
    buf = None if limiter in ("aqm", "policer") else q95 / 1e3 * rate * 1e6 / 8
    if buf is not None and old.get("buffer_from") == "slow_start":
        # the deep step's depth (measure._deep_fill: a slow start's overflow, read live) stands: its phase's series
        # is not stored, so it cannot be read again here
        buf = old["buffer_bytes"]
    unseen = None
    if hasattr(M, "unreturned_depth_ms") and old.get("load_cc") == M.LOAD_CC and ev.get("phase") == "fill":
        unseen, x["unseen_depth_note"] = M_classify.unreturned_depth_ms(old.get("first_loss") or {}, rate, flows, base,
                                                               old.get("phase_s"))
    x["unseen_depth_ms"] = unseen
    extra = (unseen,) if hasattr(M, "unreturned_depth_ms") else ()
    und = ((M_classify.undropped_alternatives(limiter, ev, rate, flows, report.get("loss", 0.0))
            if hasattr(M_classify, "aqm_drops_hidden") else M_classify.undropped_alternatives(limiter, ev, rate, flows))
           if hasattr(M, "undropped_alternatives") else (None, None))
    x.update(limiter=limiter, limiter_note=M_classify.ambiguity(limiter, rate, flows, *extra) or und[1],
             limiter_alternatives=M_classify.alternatives(limiter, rate, flows, *extra) or und[0],
             buffer_bytes=None if buf is None else int(buf), buffer_bdp=buf / bdp if buf is not None and bdp else None)
    x.setdefault("fill_flow_q95_ms", ev["flow_q95_ms"])
    x.setdefault("fill_dropped", ev["dropped"])
    say = lambda m: None  # noqa: E731
    with _offline(stored):
        if d == "down":
            wt = old.get("wifi_train")
            b = report.get("base_rtt_ms") or {}
            wp = {"train": wt, "phy_mbps": None, "note": old.get("wifi_note"),
                  # the idle probes' spread (measure._wifi_train: other stations on a WiFi medium)
                  "idle_spread_ms": b["p50"] - b["min"] if "p50" in b and "min" in b else None}
            if wt is not None:
                wp["phy_mbps"], wp["note"] = M_wifi_hop.wifi_hop(wt)
            if hasattr(M, "_down_trains"):
                M._down_trains("offline", 0, None, x, wp, base, report.get("loss", 0.0), say)
            else:
                # the code before measure._down_trains (main at 5bc92de): its steps, in its order
                M._wifi_train(wp, x, base, say)
                if x["limiter"] == "policer":
                    M._policer_train("offline", 0, None, x, say, report.get("loss", 0.0))
                    M_trains._not_a_policer(x, base)
                M._aqm_train("offline", 0, None, x, say, report.get("loss", 0.0))
        else:
            if down is not None and hasattr(M_wifi_hop, "up_through_the_hop"):
                M_wifi_hop.up_through_the_hop(x, down)
                if hasattr(M, "_up_hop_rate"):
                    M._up_hop_rate(x, down, base)
            if (old.get("up_trains_sent") or old.get("no_up_train")) and hasattr(M, "_up_trains"):
                # the trains a measurement sent up (since up trains): read again as measure reads them
                x["direction"] = "up"
                M._up_trains("offline", 0, None, x, base, report.get("loss", 0.0), say)
            if hasattr(M, "up_left_open"):
                M.up_left_open(x)
            elif hasattr(M_trains, "untrained_aqm"):
                M_trains.untrained_aqm(x)
        if hasattr(M, "policer_keeps_the_flows_rate"):
            M.policer_keeps_the_flows_rate(x)
        M_classify._cobalt(x)
    x["needs_train"] = stored.missing
    return x


def stream_not_stored(report: dict) -> str | None:
    """Where today's code would have paced a loss stream (``plan.loss_stream_plan``) that the stored measurement
    skipped: its reason; else None. The plan is read from what was stored: the idle probes (with any the idle plan
    added), their serialization, the base RTT and the idle train's head (the download's rate it weighs the loss at),
    with ``--quick`` (the campaign's). Such a direction's reading is today's before that stream: its ``loss`` is the
    idle probes' alone, and drops that random loss explains may read as a limiter's."""
    if not hasattr(M_plan, "loss_stream_plan") or "skipped" not in (report.get("loss_stream") or {"skipped": ""}):
        return None
    li, base = report.get("loss_idle") or {}, report.get("base_rtt_ms") or {}
    if "sent" not in li or "p50" not in base:
        return None
    wt = (report.get("down") or {}).get("wifi_train") or {}
    wifi = bool(wt) and M_wifi_hop.wifi_hop(wt)[0] is not None
    pps, count, why = M_plan.loss_stream_plan(int(li["lost"]), int(li["sent"]), base.get("serialization_ms"),
                                              base["p50"], wifi, True, wt.get("leading_mbps"))
    return None if pps is None else f"{count} probes at {pps} a second ({why})"


def _rate_truth(t: dict, d: str) -> float | None:
    """The truth's rate of direction ``d`` as the campaign judges it (``campaign.errors``): None on a variable
    capacity (a window of it is read, not its mean)."""
    return None if t.get("variable") else t["down_mbps" if d == "down" else "up_mbps"]


def _within(x: float | None, truth: float | None, tol: float) -> bool | None:
    return None if truth is None or x is None else abs(x / truth - 1) <= tol


def replayed(pdir: str) -> dict | None:
    """Today's ``measure`` over the path's recording (``measure --replay``), where the campaign kept one; else None.
    A recording today's code cannot be served from raises UserError (the run it asked for)."""
    rec = os.path.join(pdir, "probes")
    if M.recording.file_of(rec) is None:
        return None
    return M.measure(None, show=False, replay=rec).report


def rows(dirs: list[str]) -> list[dict]:
    out = []
    for camp in dirs:
        for f in sorted(glob.glob(os.path.join(camp, "paths", "[0-9]*.json"))):
            rec = json.load(open(f))
            mj = os.path.join(f[:-5], "measure.json")
            if not rec.get("measured") or not os.path.exists(mj):
                continue
            report = json.load(open(mj))
            try:
                fresh = replayed(f[:-5])
            except M.UserError as e:
                out.append({"camp": os.path.basename(camp.rstrip("/")), "path": rec["index"], "dir": "down",
                            "error": str(e)})
                continue
            stream = None if fresh else stream_not_stored(report)
            read = {}
            for d in ("down", "up"):
                if not report.get(d):
                    continue
                # the truth as direction d carries it (its rate, port, buffer: campaign.direction_truth)
                t = C.direction_truth(rec["truth"], d)
                try:
                    if fresh:
                        x = read[d] = fresh[d]
                        x["needs_train"] = [f"substituted: {s}" for s in fresh["replay"]["substituted"]]
                    else:
                        x = read[d] = read_direction(copy.deepcopy(report), d, read.get("down"))
                    if stream:
                        x["needs_train"] = x["needs_train"] + ["loss_stream"]
                except (KeyError, TypeError) as e:
                    out.append({"camp": os.path.basename(camp.rstrip("/")), "path": rec["index"], "dir": d,
                                "error": f"{type(e).__name__}: {e}"})
                    continue
                old = report[d]
                before = {"limiter": old["limiter"], "limiter_alternatives": old.get("limiter_alternatives")}
                after = {"limiter": x["limiter"], "limiter_alternatives": x.get("limiter_alternatives")}
                out.append({"camp": os.path.basename(camp.rstrip("/")), "path": rec["index"], "dir": d,
                            "source": "recording" if fresh else "evidence", "truth": t["limiter"], "observable": t["observable"], "down_mbps": t["down_mbps"],
                            "base_rtt_ms": t["base_rtt_ms"], "buffer_bdp": t.get("buffer_bdp"), "loss": t.get("loss"),
                            "rate_mbps": old["rate_mbps"],
                            "before": old["limiter"], "before_qdisc": old.get("aqm_qdisc"),
                            "after": x["limiter"], "after_qdisc": x.get("aqm_qdisc"),
                            # the truth's conditions (depth, rate, port) are direction d's own (campaign.direction_truth)
                            "right_before": old["limiter"] == t["observable"],
                            "named_before": C.limiter_said(t, before),
                            "right_after": x["limiter"] == t["observable"], "named_after": C.limiter_said(t, after),
                            "alternatives": x.get("limiter_alternatives"), "note": x.get("limiter_note"),
                            "needs_train": x["needs_train"], "loss_stream_not_stored": stream,
                            "evidence": old["evidence"],
                            # the rate as today's code reads it from what was stored (the policer's paced train's
                            # tail, trains.paced_rate), against the truth's where the goal judges it (fixed capacity)
                            "rate_after": x["rate_mbps"], "rate_truth": _rate_truth(t, d),
                            "bucket_before": old.get("bucket_bytes"), "bucket_after": x.get("bucket_bytes"),
                            "bucket_truth": C.truth_bucket_bytes(t) if t["limiter"] == "policer" else None})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--all", action="store_true", help="print every direction, not only the changed ones")
    a = ap.parse_args(argv)
    rs = rows(a.dirs)
    for r in rs:
        if "error" in r:
            print(f"{r['camp']:>14} {r['path']:4d} {r['dir']:4} cannot be read: {r['error']}")
            continue
        changed = (r["before"], r["before_qdisc"], r["named_before"]) != (r["after"], r["after_qdisc"], r["named_after"])
        if changed or a.all:
            print(f"{r['camp']:>14} {r['path']:4d} {r['dir']:4} {r['truth']:8} {r['rate_mbps']:8.4g} Mbit/s "
                  f"{r['base_rtt_ms']:6.0f} ms: {r['before']}/{r['before_qdisc']} (named {r['named_before']:d}) -> "
                  f"{r['after']}/{r['after_qdisc']} (named {r['named_after']:d})"
                  + (f" needs {','.join(r['needs_train'])}" if r["needs_train"] else ""))
    down = [r for r in rs if "error" not in r and r["dir"] == "down"]
    for k in ("right_before", "named_before", "right_after", "named_after"):
        print(f"down {k}: {sum(r[k] for r in down)} of {len(down)}")
    up = [r for r in rs if "error" not in r and r["dir"] == "up"]
    for k in ("right_before", "named_before", "right_after", "named_after"):
        print(f"up {k}: {sum(r[k] for r in up)} of {len(up)}")
    judged = [r for r in down if r["rate_truth"] is not None]
    rb = [r for r in judged if _within(r["rate_mbps"], r["rate_truth"], 0.10)]
    ra = [r for r in judged if _within(r["rate_after"], r["rate_truth"], 0.10)]
    print(f"down rate within 10 % (fixed capacity): {len(rb)} of {len(judged)} as stored -> {len(ra)}; lost: "
          + (", ".join(f"{r['camp']}/{r['path']}" for r in rb if r not in ra) or "none"))
    for r in judged:
        if (r in rb) != (r in ra) or abs(r["rate_after"] / r["rate_mbps"] - 1) > 1e-9:
            print(f"  rate {r['camp']:>14} {r['path']:4d} {r['truth']:8} truth {r['rate_truth']:8.4g}: "
                  f"{r['rate_mbps']:8.4g} ({(r['rate_mbps'] / r['rate_truth'] - 1) * 100:+.1f} %) -> "
                  f"{r['rate_after']:8.4g} ({(r['rate_after'] / r['rate_truth'] - 1) * 100:+.1f} %)")
    bk = [r for r in down if r["bucket_truth"] and r["after"] == "policer" and r["before"] == "policer"
          and r["bucket_before"] and r["bucket_after"]]
    print(f"down policer bucket within 30 %: {sum(bool(_within(r['bucket_before'], r['bucket_truth'], 0.3)) for r in bk)} "
          f"of {len(bk)} as stored -> {sum(bool(_within(r['bucket_after'], r['bucket_truth'], 0.3)) for r in bk)}")
    print(f"down changed: {sum((r['before'], r['before_qdisc']) != (r['after'], r['after_qdisc']) for r in down)}; "
          f"needing a train or a loss stream not stored: {sum(bool(r['needs_train']) for r in down)}")
    for r in down:
        if r["loss_stream_not_stored"] and not r["named_after"]:
            print(f"  {r['camp']:>14} {r['path']:4d} down names no truth before the loss stream today's code sends: "
                  f"{r['loss_stream_not_stored']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rs, f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
