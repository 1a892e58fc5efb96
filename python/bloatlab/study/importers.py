"""Import measurements made with other tools into a results store, in the
same schema as simulated and emulated runs (docs/results.md), so that
``bloatlab query``/``plot``/``report`` compare them directly.

- **iperf3 ``-J``** (JSON; iperf 3.x): one flow per stream. Goodput is the
  receiver's byte count over the test time; retransmissions, cwnd and RTT
  come from the sender's TCP_INFO samples per interval (``retransmits``,
  ``snd_cwnd``, ``rtt`` in µs). ``segs_sent`` is not reported by iperf3 and
  is estimated as sender bytes / ``tcp_mss_default`` (marked in ``meta``).
- **flent** (``.flent.gz`` / ``.flent``; file format versions 1–4, see
  flent/resultset.py): one flow per ``TCP download::N`` / ``TCP upload::N``
  series (Mbit/s samples), one probe per ``Ping (ms) ...`` series (ms; a
  missing sample counts as lost), with the flows' congestion control from
  ``SERIES_META`` when flent recorded it and per-flow ``::tcp_cwnd`` /
  ``::tcp_rtt`` / ``::tcp_pacing_rate`` series when present.

Neither tool knows the bottleneck, so imported runs have no ``links``;
their base RTT is the smallest RTT seen (iperf3's ``min_rtt``, flent's
smallest ping).

Both go through the one summary builder (``bloatlab.summary.build``) via a
resolved scenario and a raw result, exactly as an engine's output does.
"""

from __future__ import annotations

import hashlib
import json
import math
import os

from .. import files
from ..errors import UserError
from . import store as _store


def _dist(values) -> dict:
    import numpy as np

    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], dtype=float)
    if v.size == 0:
        return {"n": 0}
    return {"n": int(v.size), "mean": float(v.mean()), "p50": float(np.percentile(v, 50)),
            "p95": float(np.percentile(v, 95)), "p99": float(np.percentile(v, 99)), "max": float(v.max())}


def _resolved(name, duration_s, sample_s, flows, probes):
    return {"name": name, "seed": 0, "duration_ns": int(round(duration_s * 1e9)),
            "sample_interval_ns": int(round(sample_s * 1e9)), "links": {"down": None, "up": None},
            "flows": flows, "probes": probes}


# ---------------------------------------------------------------- iperf3


def from_iperf3(doc: dict, name: str):
    """(resolved, raw, scenario_doc, engine) of an iperf3 -J document."""
    try:
        start, intervals, end = doc["start"], doc["intervals"], doc["end"]
    except (KeyError, TypeError):
        raise UserError(f"{name}: not iperf3 -J output (no start/intervals/end)") from None
    if doc.get("error"):
        raise UserError(f"{name}: iperf3 reported an error: {doc['error']}")
    ts = start.get("test_start", {})
    if ts.get("protocol", "TCP") != "TCP":
        raise UserError(f"{name}: only TCP iperf3 tests can be imported (this one is {ts.get('protocol')})")
    reverse = bool(ts.get("reverse"))
    cc = end.get("sender_tcp_congestion") or "unknown"
    mss = start.get("tcp_mss_default") or 1448
    streams = end.get("streams", [])
    if not streams:
        raise UserError(f"{name}: iperf3 output has no streams")
    sock_ids = [s["sender"]["socket"] for s in streams]
    duration = float(end.get("sum_received", end.get("sum_sent", {})).get("seconds") or ts.get("duration") or 0)
    step = float(intervals[0]["sum"]["seconds"]) if intervals else 1.0
    ser = {k: [] for k in ("flow", "t", "cwnd_bytes", "inflight_bytes", "srtt_ms", "pacing_rate_bps",
                           "delivery_rate_bps", "delivered_bytes", "sack_delivered_bytes", "retransmits")}
    rtts = {s: [] for s in sock_ids}
    cum = {s: [0, 0] for s in sock_ids}
    for iv in intervals:
        for st in iv.get("streams", []):
            sid = st["socket"]
            if sid not in cum:
                continue
            i = sock_ids.index(sid)
            cum[sid][0] += st.get("bytes", 0)
            cum[sid][1] += st.get("retransmits", 0) or 0
            rtt = st.get("rtt")
            if rtt is not None:
                rtts[sid].append(rtt / 1e3)
            ser["flow"].append(i)
            ser["t"].append(float(st["end"]))
            ser["cwnd_bytes"].append(float(st["snd_cwnd"]) if "snd_cwnd" in st else math.nan)
            ser["inflight_bytes"].append(math.nan)
            ser["srtt_ms"].append(rtt / 1e3 if rtt is not None else math.nan)
            ser["pacing_rate_bps"].append(math.nan)
            ser["delivery_rate_bps"].append(float(st.get("bits_per_second", math.nan)))
            ser["delivered_bytes"].append(float(cum[sid][0]))
            ser["sack_delivered_bytes"].append(math.nan)  # iperf3 reports no SACK-inclusive count
            ser["retransmits"].append(float(cum[sid][1]))
    flows, rflows = [], []
    for i, s in enumerate(streams):
        snd, rcv = s["sender"], s.get("receiver", s["sender"])
        min_rtt = snd.get("min_rtt")
        flows.append({"id": i, "group": 0, "name": f"stream-{snd['socket']}", "cc": cc,
                      "direction": "down" if reverse else "up",
                      "rtt_ns": int(min_rtt * 1e3) if min_rtt else 0, "start_ns": 0, "stop_ns": None,
                      "size_bytes": None})
        rflows.append({"id": i, "bytes_acked": int(rcv.get("bytes", 0)), "bytes_delivered": int(rcv.get("bytes", 0)),
                       "segs_sent": int(round(snd.get("bytes", 0) / mss)), "retrans_segs": int(snd.get("retransmits", 0) or 0),
                       "start_s": 0.0, "end_s": float(rcv.get("seconds") or duration), "fct_s": None, "completed": False,
                       "rtt_ms": _dist(rtts[snd["socket"]])})
    meta = {"tool": f"iperf3 {start.get('version', '')}".strip(), "system_info": start.get("system_info"),
            "connecting_to": start.get("connecting_to"), "timestamp": start.get("timestamp", {}).get("time"),
            "receiver_tcp_congestion": end.get("receiver_tcp_congestion"),
            "segs_sent_estimated_from_mss": mss}
    resolved = _resolved(name, duration, step, flows, [])
    raw = {"engine": "iperf3", "meta": meta, "flows": rflows, "links": {}, "probes": [],
           "series": {"flows": ser, "links": {"direction": [], "t": [], "queue_bytes": [], "qdelay_ms": []},
                      "probes": {"probe": [], "t": [], "rtt_ms": []}}}
    scen = {"name": name, "imported_from": "iperf3", "test_start": ts}
    return resolved, raw, scen, "iperf3"


# ---------------------------------------------------------------- flent


def _flow_series_name(n: str):
    """("down"|"up", index) for a per-flow flent series name, else None."""
    base, _, rest = n.partition("::")
    b = base.lower()
    if not b.startswith("tcp ") or any(w in b for w in ("sum", "avg", "total", "fairness")):
        return None
    direction = "down" if "download" in b else "up" if "upload" in b else None
    if direction is None or "::" in rest:
        return None
    return direction


def from_flent(doc: dict, name: str):
    try:
        meta, xs, results = doc["metadata"], doc["x_values"], doc["results"]
    except (KeyError, TypeError):
        raise UserError(f"{name}: not a flent data file (no metadata/x_values/results)") from None
    if int(doc.get("version", 1)) > 4:
        raise UserError(f"{name}: flent file format version {doc.get('version')} is newer than this importer knows (4)")
    smeta = meta.get("SERIES_META") or {}
    xs = [float(x) for x in xs]
    step = float(meta.get("STEP_SIZE") or (xs[1] - xs[0] if len(xs) > 1 else 0.2))
    duration = float(meta.get("TOTAL_LENGTH") or meta.get("LENGTH") or (max(xs) if xs else 0))
    flow_names = [n for n in results if _flow_series_name(n)]
    ping_names = [n for n in results if n.lower().startswith("ping") and "avg" not in n.lower()]
    if not flow_names and not ping_names:
        raise UserError(f"{name}: the flent file has no TCP flow or ping series to import")
    min_ping = min((v for n in ping_names for v in results[n] if v is not None), default=0.0)
    ser = {k: [] for k in ("flow", "t", "cwnd_bytes", "inflight_bytes", "srtt_ms", "pacing_rate_bps",
                           "delivery_rate_bps", "delivered_bytes", "sack_delivered_bytes", "retransmits")}
    flows, rflows = [], []
    for i, n in enumerate(flow_names):
        vals = results[n]
        extra = {k: results.get(f"{n}::{k}") for k in ("tcp_cwnd", "tcp_rtt", "tcp_pacing_rate", "tcp_delivery_rate")}
        cum, last_t, first, lastv = 0.0, None, None, None
        rtt_samples = []
        for j, (t, v) in enumerate(zip(xs, vals)):
            if v is None:
                continue
            dt = step if last_t is None else t - last_t
            cum += v * 1e6 / 8 * dt
            last_t = t
            first = t if first is None else first
            lastv = t
            ser["flow"].append(i)
            ser["t"].append(t)
            cw = extra["tcp_cwnd"][j] if extra["tcp_cwnd"] else None
            rt = extra["tcp_rtt"][j] if extra["tcp_rtt"] else None
            pr = extra["tcp_pacing_rate"][j] if extra["tcp_pacing_rate"] else None
            ser["cwnd_bytes"].append(float(cw) * 1448 if cw is not None else math.nan)  # flent's tcp_cwnd is in packets
            ser["inflight_bytes"].append(math.nan)
            ser["srtt_ms"].append(float(rt) if rt is not None else math.nan)
            if rt is not None:
                rtt_samples.append(float(rt))
            ser["pacing_rate_bps"].append(float(pr) * 1e6 if pr is not None else math.nan)
            ser["delivery_rate_bps"].append(v * 1e6)
            ser["delivered_bytes"].append(cum)
            ser["sack_delivered_bytes"].append(math.nan)  # flent records no SACK-inclusive count
            ser["retransmits"].append(math.nan)
        m = smeta.get(n, {}) if isinstance(smeta.get(n), dict) else {}
        cc = m.get("CONG_CONTROL") or meta.get("CONG_CONTROL") or "unknown"
        flows.append({"id": i, "group": 0, "name": n, "cc": str(cc), "direction": _flow_series_name(n),
                      "rtt_ns": int(min_ping * 1e6), "start_ns": 0, "stop_ns": None, "size_bytes": None})
        start_s = (first - step) if first is not None else 0.0
        rflows.append({"id": i, "bytes_acked": int(cum), "bytes_delivered": int(cum), "segs_sent": 0, "retrans_segs": 0,
                       "start_s": max(0.0, start_s), "end_s": lastv if lastv is not None else 0.0,
                       "fct_s": None, "completed": False, "rtt_ms": _dist(rtt_samples)})
    probes, rprobes = [], []
    pser = {"probe": [], "t": [], "rtt_ms": []}
    for i, n in enumerate(ping_names):
        vals = results[n]
        for t, v in zip(xs, vals):
            pser["probe"].append(i)
            pser["t"].append(t)
            pser["rtt_ms"].append(float(v) if v is not None else math.nan)
        got = [v for v in vals if v is not None]
        probes.append({"id": i, "name": n, "kind": "udp" if "udp" in n.lower() else "icmp",
                       "interval_ns": int(step * 1e9), "rtt_ns": int(min_ping * 1e6), "size_bytes": 64, "direction": "down"})
        rprobes.append({"id": i, "sent": len(vals), "received": len(got), "rtt_ms": _dist(got)})
    resolved = _resolved(name, duration, step, flows, probes)
    keep = {k: meta.get(k) for k in ("NAME", "TITLE", "TIME", "LENGTH", "STEP_SIZE", "HOST", "HOSTS", "LOCAL_HOST",
                                     "FLENT_VERSION", "KERNEL_RELEASE", "SYSCTLS", "EGRESS_INFO", "IP_VERSION")
            if meta.get(k) is not None}
    raw = {"engine": "flent", "meta": dict(keep, tool="flent", file_format=doc.get("version", 1)), "flows": rflows,
           "links": {}, "probes": rprobes,
           "series": {"flows": ser, "links": {"direction": [], "t": [], "queue_bytes": [], "qdelay_ms": []},
                      "probes": pser}}
    scen = {"name": name, "imported_from": "flent", "test": meta.get("NAME"), "title": meta.get("TITLE")}
    return resolved, raw, scen, "flent"


# ---------------------------------------------------------------- entry point


def read(path: str, data: bytes | None = None):
    """(resolved, raw, scenario_doc, engine) of a flent or iperf3 file (its
    bytes as read by :func:`read_file`, or read here)."""
    if data is None:
        data = read_file(path)
    if data[:2] == b"\x1f\x8b":
        data = files.inflate(data, files.IMPORT_INFLATED, "--import", path)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"--import {path}: not JSON ({e})") from None
    name = os.path.basename(path)
    for suffix in (".gz", ".flent", ".json"):
        name = name[: -len(suffix)] if name.endswith(suffix) else name
    try:
        if isinstance(doc, dict) and "x_values" in doc and "results" in doc:
            return from_flent(doc, name)
        if isinstance(doc, dict) and "intervals" in doc and "end" in doc:
            return from_iperf3(doc, name)
    except UserError as e:
        raise UserError(f"--import {path}: {str(e).removeprefix(name + ': ')}") from None
    raise UserError(f"--import {path}: neither a flent data file nor iperf3 -J output")


def read_file(path: str) -> bytes:
    """A file to import, bounded (:mod:`bloatlab.files`: a regular file of at most
    :data:`~bloatlab.files.IMPORT_LIMIT`)."""
    return files.read_bytes(path, files.IMPORT_LIMIT, "--import")


def import_file(path: str, out_dir: str, label: str | None = None) -> str:
    """Import one file into the store ``out_dir`` (created if needed); returns its run id."""
    from .. import summary as _summary

    data = read_file(path)
    resolved, raw, scen, engine = read(path, data)
    summ = _summary.build(raw, resolved, scen, engine)
    rid = "import-" + hashlib.sha1(data).hexdigest()[:12]
    os.makedirs(out_dir, exist_ok=True)
    with _store.Lock(out_dir):
        _store.migrate(out_dir)
        study = _store.read_study(out_dir)
        if study is None:
            os.makedirs(os.path.join(out_dir, _store.RUNS), exist_ok=True)
            study = {"name": label or "imported", "parts": []}
        if study.get("run_ids") is not None and rid not in study["run_ids"]:
            study["run_ids"].append(rid)
        _store.write_study(out_dir, study)
        info = {"run_id": rid, "experiment": label or study.get("name"), "part": f"import/{engine}", "order": 0,
                "engine": engine, "seed": 0, "rep": 0, "source": os.path.basename(path)}
        _store.write_run(out_dir, rid, info, summ, raw["series"])
        _store.Store(out_dir).write_index()
    return rid
