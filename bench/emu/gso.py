"""The emulator at high rates (issue 13 §1), side by side in one run (needs root):

- ``emu``: the emulator as it runs by default, GSO super-packets read from the
  TUN devices and cut into wire segments (crates/emu/src/gso.rs);
- ``emu-coalesce``: the same, and due segments of one flow written back as
  one GSO write (``BLOATLAB_EMU_COALESCE=1``, the default since 2026-11-23; ``emu`` runs with it off);
- ``emu-nogso``: the same emulator with ``BLOATLAB_EMU_OFFLOAD=0``: every
  packet segmented and checksummed by the kernel and read one by one (the
  emulator before GSO);
- ``plain``: the same emulator with the link out of the way (100 Gbit/s, no
  queue to speak of, 0.1 ms): the ceiling of the method on this machine;
- ``tbf``: no emulator: the kernel's own shaper (tbf, 1 BDP at 10 ms) on a veth
  pair between two namespaces, without added delay (tc here has no netem).

One kernel TCP download (the server sends), 10 ms RTT on the emulated links, a
1 BDP FIFO, for each control and rate. ``loaded`` runs the same with a
CPU-bound process beside it (a second job on the 2 cores). Fill = goodput /
(rate x 1448/1500).

    sudo .venv/bin/python bench/emu/gso.py [--quick] [--seconds 8]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import bloatlab  # noqa: E402
from bloatlab.engines import emu as emu_engine  # noqa: E402

PAYLOAD = 1448 / 1500
PROBE = os.path.join(REPO, ".venv", "bin", "bloatlab-probe")


def _with_raw(doc: dict, env: dict[str, str]) -> tuple[dict, dict]:
    """Run on the emulator; the summary and the engine's raw result (its link counters)."""
    seen: dict = {}
    orig = emu_engine.run

    def keep(resolved, **o):
        seen["raw"] = orig(resolved, **o)
        return seen["raw"]

    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    emu_engine.run = keep
    try:
        s = bloatlab.run(doc, engine="emu").summary
    finally:
        emu_engine.run = orig
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return s, seen.get("raw") or {}


def emu_run(kind: str, rate_mbit: float, cc: str, secs: int) -> dict:
    plain = kind == "plain"
    link = {"rate": "100Gbit" if plain else f"{rate_mbit:g}Mbit", "buffer": "1bdp"}
    doc = {"name": f"{kind}-{cc}-{rate_mbit:g}M", "duration": f"{secs}s", "link": {"down": link, "up": link},
           "flow": [{"cc": cc, "rtt": "0.1ms" if plain else "10ms", "direction": "down"}]}
    env = {"BLOATLAB_EMU_OFFLOAD": "0" if kind == "emu-nogso" else "1",
           "BLOATLAB_EMU_COALESCE": "1" if kind == "emu-coalesce" else "0"}
    s, raw = _with_raw(doc, env)
    g = s["flows"][0]["goodput_mbps"]
    # what the model says the same control gets on the same link: how much of a missing fill is the
    # control's own (an unpaced CUBIC's losses in a 1 BDP FIFO), not the emulator's
    sim = bloatlab.run(doc, engine="sim").summary["flows"][0]["goodput_mbps"]
    late = s["meta"]["lateness"]
    down = ((raw.get("links") or {}).get("down") or {})
    return {"kind": kind, "cc": cc, "rate": rate_mbit, "goodput": g, "fill": g / (rate_mbit * PAYLOAD), "sim": sim,
            "late_p50": late["p50_us"], "late_p99": late["p99_us"], "flagged": late.get("flagged", False),
            "pps": down.get("read_pkts", 0) / secs, "reads": down.get("read_frames", 0) / secs,
            "super": down.get("gso_super_pkts", 0), "coalesced": down.get("coalesced_pkts", 0)}


def _sh(*a: str) -> None:
    subprocess.run(list(a), check=True, capture_output=True)


def tbf_run(rate_mbit: float, cc: str, secs: int) -> dict:
    """The kernel's tbf on a veth pair: the probe's server in A sends to its client in B."""
    pid = os.getpid()
    a, b = f"blgso-a-{pid}", f"blgso-b-{pid}"
    va, vb = f"blga{pid % 100000}", f"blgb{pid % 100000}"
    try:
        _sh("ip", "netns", "add", a)
        _sh("ip", "netns", "add", b)
        _sh("ip", "link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
        _sh("ip", "-n", a, "addr", "add", "10.78.0.1/24", "dev", va)
        _sh("ip", "-n", b, "addr", "add", "10.78.0.2/24", "dev", vb)
        for ns, dev in ((a, va), (b, vb)):
            _sh("ip", "-n", ns, "link", "set", dev, "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        bdp = int(rate_mbit * 1e6 / 8 * 0.010)
        burst = max(int(rate_mbit * 1e6 / 8 / 250), 64 * 1024)  # one jiffy at HZ=250, at least 64 KB
        _sh("ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", va, "root", "tbf", "rate", f"{rate_mbit:g}mbit",
            "burst", str(burst), "limit", str(bdp + burst))
        srv = subprocess.Popen(["ip", "netns", "exec", a, PROBE, "server", "--bind", "10.78.0.1:5301"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            o = subprocess.run(["ip", "netns", "exec", b, PROBE, "tcp", "client", "10.78.0.1", "-p", "5301", "-R",
                                "-t", str(secs), "-C", cc, "--json"], capture_output=True, text=True, timeout=secs + 60)
            f = json.loads(o.stdout)["flows"][0]
        finally:
            srv.kill()
            srv.wait()
        g = f["goodput_mbps"]
        return {"kind": "tbf", "cc": cc, "rate": rate_mbit, "goodput": g, "fill": g / (rate_mbit * PAYLOAD),
                "sim": float("nan"),
                "late_p50": float("nan"), "late_p99": float("nan"), "flagged": False, "pps": float("nan"),
                "reads": float("nan"), "super": 0}
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Spinner:
    """A CPU-bound job beside the run (the 'second job' of the issue)."""

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *a):
        self.p.kill()
        self.p.wait()


def _median_run(runs: list[dict]) -> dict:
    """The run with the median goodput (the lower middle of an even count), with the range over all."""
    g = sorted(runs, key=lambda r: r["goodput"])
    mid = g[(len(g) - 1) // 2]
    return dict(mid, lo=g[0]["goodput"], hi=g[-1]["goodput"], n=len(g))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 and 10 Gbit/s with CUBIC only, shorter runs")
    ap.add_argument("--seconds", type=int, default=None)
    ap.add_argument("--out", default=os.path.join(HERE, "GSO.md"))
    ap.add_argument("--repeats", type=int, default=1, metavar="N",
                    help="runs per cell; the table gives the median run and the goodput range")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error("--repeats: expected at least 1")
    secs = a.seconds or (5 if a.quick else 8)
    ccs = ["cubic"] if a.quick else ["cubic", "bbr"]
    rates = [1000, 10000] if a.quick else [1000, 3000, 10000]
    rows = []
    load1 = os.getloadavg()[0]
    for cc in ccs:
        for rate in rates:
            for kind in ("emu", "emu-coalesce", "emu-nogso", "plain", "tbf"):
                if kind == "plain" and rate != rates[0]:
                    continue  # the ceiling does not depend on the configured rate
                print(f"{kind} {cc} {rate} Mbit/s ...", file=sys.stderr, flush=True)
                runs = [tbf_run(rate, cc, secs) if kind == "tbf" else emu_run(kind, rate, cc, secs)
                        for _ in range(a.repeats)]
                rows.append(dict(_median_run(runs), loaded=False))
        for kind in ("emu", "emu-coalesce", "emu-nogso"):
            print(f"{kind} {cc} 1000 Mbit/s beside a CPU-bound job ...", file=sys.stderr, flush=True)
            runs = []
            for _ in range(a.repeats):
                with Spinner():
                    runs.append(emu_run(kind, 1000, cc, secs))
            rows.append(dict(_median_run(runs), loaded=True))
    lines = [
        "# The emulator at high rates: GSO super-packets (issue 13 §1)",
        "",
        f"Machine: {os.cpu_count()} cores, Linux {platform.release()}; {datetime.date.today()}; load average "
        f"{load1:.1f} at the start. Command: `sudo .venv/bin/python bench/emu/gso.py{' --quick' if a.quick else ''}` "
        f"({secs} s per run, {a.repeats} run(s) per cell: the median run's figures, the goodput's range beside "
        "it). One kernel TCP download, 10 ms RTT, 1 BDP FIFO; `plain` = the same emulator at "
        "100 Gbit/s / 0.1 ms (its goodput is the method's ceiling, its fill is against the row's rate); `tbf` = the "
        "kernel's shaper on a veth pair, no added delay.",
        "",
        "| control | rate Mbit/s | kind | beside a CPU job | goodput Mbit/s | fill | simulator's goodput | "
        "wire pkts/s read | reads/s | lateness p50 / p99 µs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        late = "–" if r["kind"] == "tbf" else f"{r['late_p50']:.0f} / {r['late_p99']:.0f}{' flagged' if r['flagged'] else ''}"
        pps = "–" if r["kind"] == "tbf" else f"{r['pps']:,.0f}"
        reads = "–" if r["kind"] == "tbf" else f"{r['reads']:,.0f}"
        sim = "–" if math.isnan(r["sim"]) else f"{r['sim']:.0f}"
        rng = f" ({r['lo']:.0f}–{r['hi']:.0f})" if r["n"] > 1 else ""
        lines.append(f"| {r['cc']} | {r['rate']:g} | {r['kind']} | {'yes' if r['loaded'] else 'no'} | "
                     f"{r['goodput']:.0f}{rng} | {100 * r['fill']:.1f} % | {sim} | {pps} | {reads} | {late} |")
    text = "\n".join(lines) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
