"""``bloatlab measure``: a real path, measured against ``bloatlab-probe server``.

Phases (each a run of the probe binary, its JSON read back):

The load runs CUBIC flows (both ends choose it): a loss-based control fills
the bottleneck's buffer, so the added delay measures the buffer.

1. idle: UDP echo probes every 10 ms — base RTT (min, p50) and random loss;
2. down: ``--flows`` parallel TCP flows server -> client with probes running
   (``bloatlab-probe load --up 0``) — the bottleneck rate (total goodput, like
   a speed test), loaded RTT p50/p95 from the probes after the ramp-up, the
   flows' retransmissions and smoothed RTTs;
3. up: the same the other way.

From those (docs/advise.md): added delay = loaded p95 − idle p50; the grade on
DSLReports' scale; the buffer = added delay × rate (what a FIFO must hold to
delay that much); the limiter — ``policer`` when the flows retransmit
heavily (≥ :data:`POLICER_RETRANS`) while neither probes nor flows see the
queue grow (< :data:`QUEUE_MS`), ``aqm`` when the flows' own RTT grows but
the probes' does not (flow isolation, fq_codel/CAKE) or the growth stays near
an AQM target (< :data:`AQM_MS` with drops), ``fifo`` otherwise.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field

import numpy as np

from .._bin import find as find_bin
from ..errors import UserError
from .path import Path, grade

POLICER_RETRANS = 0.01  # a policer drops what exceeds its bucket: retransmissions well above a FIFO's
QUEUE_MS = 3.0          # below this much added delay, no standing queue
AQM_MS = 30.0           # CoDel/PIE hold their queues near 5-20 ms; a FIFO in a fast path rarely that low under 4 flows
DEFAULT_PORT = 5301
LOAD_CC = "cubic"
#: one-way idle loss from which the rate is measured with BBR flows instead
LOSSY = 0.005
#: TCP goodput -> the bottleneck's wire rate: a full segment carries 1448 B of
#: payload in 1500 B on the wire (IPv4 20 + TCP 20 + timestamps 12).
WIRE_PER_PAYLOAD = 1500 / 1448


def _split_host(host: str) -> tuple[str, int]:
    if host.count(":") == 1:
        h, p = host.split(":")
        if not p.isdigit() or not 0 < int(p) < 65536:
            raise UserError(f"HOST[:PORT]: bad port in {host!r}")
        return h, int(p)
    return host, DEFAULT_PORT


def _probe(args: list[str], timeout: float, who: str = "measure") -> dict:
    exe = find_bin("bloatlab-probe")
    try:
        p = subprocess.run([exe, *args, "--json"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UserError(f"{who}: bloatlab-probe {args[0]} did not finish within {timeout:.0f} s") from None
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"{who}: {msg}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise UserError(f"{who}: bloatlab-probe {args[0]} printed no JSON (a server of another version?)") from None


@dataclass
class Measurement:
    path: Path
    report: dict = field(default_factory=dict)

    def show(self) -> None:
        r = self.report
        print(f"base RTT {r['base_rtt_ms']['p50']:.2f} ms (min {r['base_rtt_ms']['min']:.2f}), idle loss {r['loss'] * 100:.2g} % "
              f"each way ({r['loss_round_trip'] * 100:.2g} % of round trips)")
        for d in ("down", "up"):
            x = r.get(d)
            if not x:
                continue
            print(f"{d:>4}: {x['rate_mbps']:.4g} Mbit/s, loaded RTT p50 {x['loaded_rtt_ms']['p50']:.1f} / p95 {x['loaded_rtt_ms']['p95']:.1f} ms, "
                  f"+{x['added_delay_ms']:.1f} ms (grade {x['grade']}), buffer ~{x['buffer_bytes'] / 1e3:.0f} KB "
                  f"({x['buffer_bdp']:.2g} BDP), limiter: {x['limiter']}, retransmitted {x['retrans_rate'] * 100:.2g} %")


def _direction(host: str, port: int, d: str, flows: int, secs: float, base_p50: float, secret: str | None, cc: str = "cubic") -> dict:
    args = ["load", host, "-p", str(port), "--down", str(flows if d == "down" else 0), "--up", str(flows if d == "up" else 0),
            "-t", f"{secs:g}", "--idle", "1", "--probe-interval", "10ms",
            # a loss-based control fills whatever buffer there is: that is what reveals it
            # (BBR would hold the queue near one BDP and hide a deep buffer)
            "-C", cc]
    if secret:
        args += ["--secret", secret]
    j = _probe(args, timeout=secs + 40)
    rate = j["load"]["goodput_mbps"][d] * WIRE_PER_PAYLOAD
    # the probes of the loaded phase after its ramp-up, from the series (exact p95)
    s = j["raw"]["series"]["probes"]
    t, rtt = np.asarray(s.get("t", []), float), np.asarray(s.get("rtt_ms", []), float)
    sel = rtt[(t >= j["load"]["loaded"]["from_s"]) & np.isfinite(rtt)]
    if sel.size < 5:
        raise UserError(f"measure: too few probe replies under load toward {host} ({sel.size}); is UDP blocked?")
    p50, p95 = float(np.percentile(sel, 50)), float(np.percentile(sel, 95))
    fl = [f for f in j["flows"] if f["direction"] == d]
    segs = sum(f.get("retransmits", 0) / f["retrans_rate"] for f in fl if f.get("retrans_rate"))
    retrans = sum(f.get("retransmits", 0) for f in fl) / segs if segs else 0.0
    flow_rtt = float(np.median([f["rtt_ms"]["p50"] for f in fl if f.get("rtt_ms")])) if fl else float("nan")
    added = max(p95 - base_p50, 0.0)
    flow_added = max(flow_rtt - base_p50, 0.0) if np.isfinite(flow_rtt) else added
    if retrans >= POLICER_RETRANS and added < QUEUE_MS and flow_added < QUEUE_MS:
        limiter = "policer"
    elif flow_added >= QUEUE_MS and added < min(QUEUE_MS, flow_added / 3):
        limiter = "aqm"  # the flows queue, the sparse probe does not: flow isolation
    elif QUEUE_MS <= flow_added < AQM_MS and retrans > 0.001 and added < AQM_MS:
        limiter = "aqm"
    else:
        limiter = "fifo"
    q_ms = max(added, flow_added) if limiter == "fifo" else added
    buf = q_ms / 1e3 * rate * 1e6 / 8
    bdp = rate * 1e6 * base_p50 / 1e3 / 8
    return {"rate_mbps": rate, "load_cc": cc, "loaded_rtt_ms": {"p50": p50, "p95": p95}, "added_delay_ms": added, "grade": grade(added),
            "buffer_bytes": int(buf), "buffer_bdp": buf / bdp if bdp else None, "limiter": limiter,
            "retrans_rate": retrans, "flow_rtt_p50_ms": flow_rtt, "flows": len(fl)}


def measure(host: str, quick: bool = False, flows: int = 4, up: bool = True, secret: str | None = None, show: bool = True) -> Measurement:
    h, port = _split_host(host)
    if not 1 <= flows <= 64:
        raise UserError(f"--flows: expected 1..64, got {flows}")
    t0 = time.monotonic()
    say = (lambda m: print(m, flush=True)) if show else (lambda m: None)
    say(f"measuring {h}:{port}: idle RTT and loss ...")
    idle_args = ["udp", "client", h, "-p", str(port), "--count", "300" if quick else "500", "--interval", "10ms", "--timeout", "1s", "--give-up", "3s"]
    if secret:
        idle_args += ["--secret", secret]
    idle = _probe(idle_args, timeout=20)
    pr = idle["probes"][0]
    if not pr.get("rtt_ms") or pr.get("loss", 1.0) >= 1.0:
        raise UserError(f"measure: no UDP echo from {h}:{port} (is `bloatlab-probe server` running there?)")
    series = idle["raw"]["series"]["probes"]["rtt_ms"] if "raw" in idle else []
    rmin = float(np.nanmin(series)) if len(series) else pr["rtt_ms"]["p50"]
    base = {"min": rmin, "p50": pr["rtt_ms"]["p50"]}
    secs = 5 if quick else 10
    # the probes' loss is a round trip's: each direction's, if alike, is 1 - sqrt(1 - rt)
    rt_loss = pr["loss"]
    one_way = 1 - (1 - rt_loss) ** 0.5
    report = {"host": h, "port": port, "base_rtt_ms": base, "loss": one_way, "loss_round_trip": rt_loss}
    # on a lossy path CUBIC cannot fill the link (Mathis), so the rate phase uses BBR,
    # which does not read random loss as congestion; the buffer then reads low (BBR
    # holds about one BDP in flight) and is reported as such
    cc = "bbr" if one_way >= LOSSY else LOAD_CC
    say(f"  base RTT {base['p50']:.2f} ms; loading the path down ({flows} flows, {secs} s) ...")
    report["down"] = _direction(h, port, "down", flows, secs, base["p50"], secret, cc)
    if up:
        say(f"  down {report['down']['rate_mbps']:.4g} Mbit/s; loading the path up ...")
        report["up"] = _direction(h, port, "up", flows, secs, base["p50"], secret, cc)
    report["elapsed_s"] = time.monotonic() - t0
    d = report["down"]
    path = Path(base_rtt_ms=max(base["p50"], 0.01), down_mbps=d["rate_mbps"], up_mbps=report["up"]["rate_mbps"] if up else None,
                buffer_bytes=max(d["buffer_bytes"], 1500), loss=min(one_way, 0.49), limiter=d["limiter"],
                up_buffer_bytes=max(report["up"]["buffer_bytes"], 1500) if up else None)
    report["twin"] = path.as_dict()
    return Measurement(path, report)
