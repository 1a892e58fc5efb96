"""One summary builder for every engine (docs/results.md).

Engines return a *raw result* (docs/engine-interface.md); this module turns it
into the contract summary, so sim, emu and probe results can never disagree on
what a key means.
"""

from __future__ import annotations

import math
from typing import Any

from ._version import __version__

SUMMARY_VERSION = 1


def _dist(d: dict | None, keys=("mean", "p50", "p95", "p99", "max")) -> dict:
    d = d or {}
    out = {}
    for k in keys:
        v = d.get(k)
        out[k] = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
    return out


def _sent(r: dict) -> tuple[int, int, float | None]:
    """A probe's or a train's raw record (``r``): packets sent, received, and the share lost (None: none sent)."""
    sent, recv = int(r.get("sent", 0) or 0), int(r.get("received", 0) or 0)
    return sent, recv, (1 - recv / sent) if sent else None


def jain(xs: list[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n Σx²); 1 = equal shares."""
    if not xs:
        return None
    s2 = sum(x * x for x in xs)
    if s2 == 0:
        return 1.0
    return sum(xs) ** 2 / (len(xs) * s2)


def build(raw: dict, resolved: dict, scenario_doc: dict, engine: str) -> dict[str, Any]:
    duration_s = resolved["duration_ns"] / 1e9
    flows = []
    by_id = {f["id"]: f for f in raw.get("flows", [])}
    for f in resolved["flows"]:
        r = by_id.get(f["id"], {})
        start, end = r.get("start_s"), r.get("end_s")
        active = (end - start) if start is not None and end is not None else 0.0
        delivered = r.get("bytes_delivered", r.get("bytes_acked", 0)) or 0
        sent = r.get("segs_sent", 0) or 0
        retrans = r.get("retrans_segs", 0) or 0
        flows.append({
            "id": f["id"],
            "name": f["name"],
            "cc": f["cc"],
            "direction": f["direction"],
            "rtt_base_ms": f["rtt_ns"] / 1e6,
            "goodput_mbps": delivered * 8 / active / 1e6 if active > 0 else 0.0,
            "bytes_acked": int(r.get("bytes_acked", 0) or 0),
            "bytes_delivered": int(delivered),
            "retransmits": int(retrans),
            "segs_sent": int(sent),
            "retrans_rate": retrans / sent if sent else 0.0,
            "rtt_ms": _dist(r.get("rtt_ms"), ("mean", "p50", "p95", "p99")),
            "fct_s": r.get("fct_s"),
            "completed": bool(r.get("completed", False)),
            "client_done_s": r.get("client_done_s"),
            "page": resolved["pages"][f["page"]]["name"] if f.get("page") is not None else None,
            "start_s": start,
            "end_s": end,
        })
    links = {}
    for d, spec in resolved["links"].items():
        if spec is None:
            continue
        r = raw.get("links", {}).get(d, {})
        drops = r.get("drops", {}) or {}
        links[d] = {
            "rate_mbps": spec["rate_bps"] / 1e6,
            "qdisc": spec["qdisc"]["kind"],
            "buffer_bytes": spec["buffer_bytes"],
            "buffer_pkts": spec["buffer_pkts"],
            # engines count only what was sent within the run; the cap absorbs
            # the rounding of a partly sent packet to whole bytes
            "utilization": min(r.get("tx_bytes", 0) * 8 / (spec["rate_bps"] * duration_s), 1.0) if duration_s else 0.0,
            "drops": int(sum(drops.values())),
            "drops_by_reason": {k: int(v) for k, v in drops.items()},
            "marks": int(r.get("marks", 0) or 0),
            "tx_pkts": int(r.get("tx_pkts", 0) or 0),
            "qdelay_ms": _dist(r.get("qdelay_ms")),
            "stages": stages(spec),
        }
        if r.get("autorate"):
            links[d]["autorate"] = _autorate(r["autorate"], spec)
    probes = []
    rp = {p["id"]: p for p in raw.get("probes", [])}
    for p in resolved["probes"]:
        r = rp.get(p["id"], {})
        sent, recv, loss = _sent(r)
        probes.append({
            "id": p["id"],
            "name": p["name"],
            "kind": p["kind"],
            "rtt_base_ms": p["rtt_ns"] / 1e6,
            "rtt_ms": _dist(r.get("rtt_ms")),
            "loss": loss,
            "sent": sent,
        })
    trains = []
    rt = {t["id"]: t for t in raw.get("trains", [])}
    for t in resolved.get("trains", []):
        r = rt.get(t["id"], {})
        sent, recv, loss = _sent(r)
        trains.append({
            "id": t["id"],
            "name": t["name"],
            "direction": t["direction"],
            "packets": t["packets"],
            "size_bytes": t["size_bytes"],
            "rate_mbps": t["rate_bps"] / 1e6 if t.get("rate_bps") else None,
            "start_s": t["start_ns"] / 1e9,
            "sent": sent,
            "received": recv,
            "loss": loss,
            "delay_ms": _dist(r.get("delay_ms")),
            "first_s": r.get("first_s"),
            "last_s": r.get("last_s"),
            "dispersion_mbps": r.get("dispersion_mbps"),
        })
    # a page's objects are short transfers, reported as the page's load time:
    # their goodput is neither a share of the link nor part of a fair split
    bulk = [f for f in flows if f["page"] is None]
    goodputs = [f["goodput_mbps"] for f in bulk]
    # fairness within a direction: download and upload flows cross different
    # bottlenecks, so an index over both would mix two unrelated shares
    by_dir = {d: jain([f["goodput_mbps"] for f in bulk if f["direction"] == d]) for d in ("down", "up")}
    stations = _stations(raw.get("wifi"), resolved, flows, duration_s)
    out = {
        "version": __version__,
        "schema": SUMMARY_VERSION,
        "engine": engine,
        "scenario": scenario_doc,
        "seed": resolved["seed"],
        "duration_s": duration_s,
        "flows": flows,
        "links": links,
        "probes": probes,
        "total_goodput_mbps": sum(goodputs),
        "jain_fairness": by_dir["down"] if any(f["direction"] == "down" for f in bulk) else by_dir["up"],
        "jain_fairness_by_direction": by_dir,
        "meta": raw.get("meta", {}),
    }
    if resolved.get("pages"):
        out["pages"] = pages(resolved, flows)
    if trains:
        out["trains"] = trains
    if stations is not None:
        out.update(stations)
    return out


def pages(resolved: dict, flows: list[dict]) -> list[dict]:
    """``pages[]``: per ``[[page]]`` its objects, how many arrived, and the
    page-load time — from the first object's connect() until the last object
    was at the client (null unless every object arrived within the run)."""
    out = []
    for pg in resolved["pages"]:
        objs = [(f, rf) for f, rf in zip(flows, resolved["flows"]) if rf.get("page") == pg["id"]]
        done = [f["client_done_s"] for f, _ in objs if f["client_done_s"] is not None]
        # from the first object's connect(): the scheduled start on the simulator; on the emulator
        # the kernel's, which may come a few ms after it (process wake-ups)
        opened = [f["start_s"] for f, _ in objs if f["start_s"] is not None]
        start = min(opened) if opened else 0.0
        complete = bool(objs) and len(done) == len(objs)
        out.append({
            "name": pg["name"],
            "objects": len(objs),
            "objects_done": len(done),
            "bytes": sum(rf["size_bytes"] for _, rf in objs),
            "connections": pg["connections"],
            "completed": complete,
            "plt_s": max(done) - start if complete else None,
        })
    return out


def _size(b: int) -> str:
    return f"{b / 1e6:.3g} MB" if b >= 1e6 else f"{b / 1e3:.3g} KB" if b >= 1e3 else f"{b} B"


def _autorate(a: dict, spec: dict) -> dict:
    """An autorate controller's shaper rate over the run (Mbit/s; docs/autorate.md):
    its time-weighted p10/median/p90, the lowest it set, how often it changed
    and every change as [t_s, rate_mbps]."""
    return {
        "rate_p10_mbps": a["rate_p10_bps"] / 1e6,
        "rate_median_mbps": a["rate_p50_bps"] / 1e6,
        "rate_p90_mbps": a["rate_p90_bps"] / 1e6,
        "rate_min_mbps": a["rate_min_bps"] / 1e6,
        "changes": int(a["changes"]),
        "log": [[t, r / 1e6] for t, r in a["log"]],
    }


def stages(spec: dict) -> list[str]:
    """The stages a packet crosses on a direction, in order (docs/scenario.md):
    random loss, policer, qdisc with its buffer, shaper, device queue, the wire."""
    out = []
    if spec.get("loss"):
        out.append(f"loss {spec['loss'] * 100:.3g}%")
    if spec.get("policer"):
        b = spec["policer"]
        out.append(f"policer {b['rate_bps'] / 1e6:g} Mbit/s (burst {_size(b['burst_bytes'])})")
    if spec.get("autorate"):
        a = spec["autorate"]
        out.append(f"cake autorate {a['min_bps'] / 1e6:g}-{a['max_bps'] / 1e6:g} Mbit/s (base {a['base_bps'] / 1e6:g})")
    q = spec["qdisc"]["kind"]
    if spec.get("buffer_bytes") is not None:
        q += f" {_size(spec['buffer_bytes'])}"
    elif spec.get("buffer_pkts") is not None:
        q += f" {spec['buffer_pkts']} pkt"
    out.append(q)
    if spec.get("shaper"):
        b = spec["shaper"]
        out.append(f"shaper {b['rate_bps'] / 1e6:g} Mbit/s (burst {_size(b['burst_bytes'])})")
    if spec.get("device_queue_pkts") is not None:
        out.append(f"device queue {spec['device_queue_pkts']} pkt")
    elif spec.get("device_queue_bytes") is not None:
        out.append(f"device queue {_size(spec['device_queue_bytes'])}")
    out.append(f"wire {spec['rate_bps'] / 1e6:g} Mbit/s" + (" (trace)" if spec.get("trace_ms") else ""))
    return out


def _stations(w: dict | None, resolved: dict, flows: list[dict], duration_s: float) -> dict | None:
    """The ``stations`` list of a WiFi run (docs/results.md): per station its
    flows' goodput, its airtime share, aggregate sizes, retries and queueing
    delay at the AP; Jain's index over station goodput and over airtime."""
    spec = resolved.get("wifi")
    if not spec:
        return None
    w = w or {}
    raw_st = w.get("stations") or [{} for _ in spec["stations"]]
    total_air = sum(r.get("airtime_s", 0.0) for r in raw_st)
    out = []
    for i, (st, r) in enumerate(zip(spec["stations"], raw_st)):
        mine = [f for f, rf in zip(flows, resolved["flows"]) if rf.get("station") == i]
        down_aggs = r.get("down_aggregates", 0) or 0
        up_aggs = r.get("up_aggregates", 0) or 0
        out.append({
            "name": st["name"],
            "phy_rate_mbps": (r.get("phy_rate_bps") or st.get("phy_rate_bps") or 0) / 1e6,
            "flows": [f["id"] for f in mine],
            "goodput_mbps": sum(f["goodput_mbps"] for f in mine),
            "throughput_mbps": ((r.get("down_bytes", 0) or 0) + (r.get("up_bytes", 0) or 0)) * 8 / duration_s / 1e6 if duration_s else 0.0,
            "airtime_s": r.get("airtime_s", 0.0),
            "airtime_share": r.get("airtime_s", 0.0) / total_air if total_air > 0 else 0.0,
            "aggregate_frames_down": (r.get("down_frames", 0) or 0) / down_aggs if down_aggs else None,
            "aggregate_frames_up": (r.get("up_frames", 0) or 0) / up_aggs if up_aggs else None,
            "retries": int(r.get("retries", 0) or 0),
            "collisions": int(r.get("collisions", 0) or 0),
            "retry_drops": int(r.get("retry_drops", 0) or 0),
            "queue_drops": int(r.get("queue_drops", 0) or 0),
            "qdelay_ms": _dist(r.get("qdelay_ms")),
        })
    wifi = {"mac": spec["mac"], "txops": int(w.get("txops", 0) or 0), "collisions": int(w.get("collisions", 0) or 0),
            "busy_fraction": (w.get("busy_s", 0.0) or 0.0) / duration_s if duration_s else 0.0,
            "marks": int(w.get("marks", 0) or 0)}
    if spec.get("aql"):  # only with AQL, so that the other runs' summaries stay as they were
        wifi["aql"] = dict(spec["aql"])
    return {
        "wifi": wifi,
        "stations": out,
        "jain_station_goodput": jain([s["goodput_mbps"] for s in out]),
        "jain_station_airtime": jain([s["airtime_share"] for s in out]),
    }
