"""bufferbloat: latency under load and a web page, FIFO vs fq_codel vs CAKE (seed 000).

Source: seed 000 (Habr article on bufferbloat and the Make-WiFi-Fast patches
for Linux 4.9, 2016, in Russian): ``flent -l 300 --streams=12 tcp_ndown``
loads the line until round trips take about a second, and a page
(slashdot.org, 62 files, 1.8 MB) that loads in 8 s on an idle line takes
232.8 s; after the fixes (fq_codel in mac80211, airtime fairness) latency
under load falls "from peaks of 1–2 seconds to 40 ms".

Setup here (the seed gives no link rate or buffer): 10 Mbit/s each way,
40 ms base RTT, a 1000-packet buffer (Linux's default txqueuelen, 1.2 s at
10 Mbit/s), 12 CUBIC downloads (tcp_ndown) for the whole run (300 s, flent's
``-l 300``), a UDP latency probe every 100 ms, and the seed's page from 10 s:
62 objects, 1.8 MB, fetched one after the other on new connections as
``wget -p`` does (``[[page]]``, connections = 1); the bottleneck's qdisc is
FIFO, fq_codel or CAKE (defaults). The part ``idle`` loads the same page
with no load.
"""

from __future__ import annotations

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, mean_at, missing

QDISCS = ["fifo", "fq_codel", "cake"]
BASE_RTT_MS = 40.0
DOWNLOAD_START_S = 10.0


class Bufferbloat(Experiment):
    name = "bufferbloat"
    title = "tcp_ndown with latency probes and a web page under load: FIFO vs fq_codel vs CAKE"
    source = "seed 000 (Habr, 2016: bufferbloat, Make-WiFi-Fast in Linux 4.9; flent tcp_ndown, 12 streams)"
    published = """
Seed 000:
  - flent tcp_ndown with 12 streams loads the line so that connections see about 1 s of delay
    (peaks of 1-2 s before the fixes).
  - Under that load a page (62 files, 1.8 MB) took 232.8 s; with no load it loads in 8 s (29x).
  - After the fixes (fq_codel-managed queues, minimal driver buffering) latency under load is about 40 ms.
"""

    def sweep(self, quick: bool) -> Sweep:
        dur = f"{self.duration(quick):g}s"
        probe = [{"name": "ping", "kind": "udp", "interval": "100ms"}]
        page = [{"name": "slashdot", "objects": 62, "size": "1.8MB", "connections": 1, "rtt": "40ms",
                 "start": f"{DOWNLOAD_START_S:g}s"}]
        load = dumbbell("bufferbloat-load", "10Mbit", "40ms", "1000pkt",
                        [{"name": "tcp_ndown", "cc": "cubic", "count": 12}], dur, probes=probe)
        idle = dumbbell("bufferbloat-idle", "10Mbit", "40ms", "1000pkt", [], dur, probes=probe)
        load["page"], idle["page"] = page, [dict(page[0])]
        del idle["flow"]
        rep = 1 if quick else 3
        parts = [Part("load", load, grid={"link.down.qdisc": QDISCS}, repeat=rep),
                 Part("idle", idle, grid={"link.down.qdisc": ["fifo"] if quick else QDISCS}, repeat=rep)]
        return Sweep(self.name + ("-quick" if quick else ""), parts,
                     description="12 CUBIC downloads + UDP probes + a 62-object, 1.8 MB page (one connection at a "
                                 "time, as wget -p) from 10 s; 10 Mbit/s, 40 ms, 1000-packet buffer.")

    def timeout(self, quick: bool) -> float:
        # A 300 s run of this scenario takes a few seconds in the simulator; a
        # point that runs ten times that has hung. The emulator runs in real
        # time: `reproduce --engine emu` gives every point its duration and a grace.
        return 60.0 if quick else 120.0

    @staticmethod
    def duration(quick: bool) -> float:
        # flent -l 300 in the seed; the quick version stops at 120 s, by when the page under a
        # bloated FIFO is still loading (its time is then a lower bound)
        return 120.0 if quick else 300.0

    @staticmethod
    def download_time(runs, qdisc):
        """Median page-load time and whether it is only a lower bound (a run
        where the page had not loaded by the end counts as end - start,
        i.e. "at least that long")."""
        import statistics

        sel = runs[runs["link.down.qdisc"] == qdisc]
        if sel.empty or "plt_s" not in sel:
            return None, False
        times, lower = [], False
        for f, d in zip(sel["plt_s"], sel["duration_s"]):
            if f is not None and f == f:
                times.append(float(f))
            else:
                times.append(float(d) - DOWNLOAD_START_S)
                lower = True
        return statistics.median(times), lower

    def claims(self, store) -> list:
        runs, cl = store.runs, []
        load = runs[runs["part"] == "load"]
        idle = runs[runs["part"] == "idle"]
        q = "link.down.qdisc"
        c = Claim("fifo-latency-about-1s", "under tcp_ndown load, round trips take about 1 s (peaks 1-2 s) (seed 000)",
                  "FIFO: p95 of the probe RTT between 500 ms and 2.5 s")
        v = mean_at(load, "probe_rtt_p95_ms", **{q: "fifo"}) if len(load) else None
        if v is None:
            cl.append(c.skip(missing("the loaded FIFO run")))
        else:
            cl.append(c.judge(500 <= v <= 2500, f"FIFO probe RTT p95 {v:.0f} ms", p95=v))
        for qd in ("fq_codel", "cake"):
            c = Claim(f"{qd}-latency-tens-of-ms",
                      "with fq_codel-managed queues, latency under load is about 40 ms (seed 000)",
                      f"{qd}: probe RTT p95 <= base RTT ({BASE_RTT_MS:.0f} ms) + 40 ms")
            v = mean_at(load, "probe_rtt_p95_ms", **{q: qd}) if len(load) else None
            cl.append(c.skip(missing(f"the loaded {qd} run")) if v is None else
                      c.judge(v <= BASE_RTT_MS + 40, f"{qd} probe RTT p95 {v:.0f} ms", p95=v))
        c = Claim("download-slower-under-load",
                  "a page that loads in 8 s idle takes 232.8 s under load, 29x (seed 000)",
                  "FIFO: the 62-object, 1.8 MB page under load takes >= 10x its idle time (the seed's line rate and "
                  "buffer are unknown, so we ask for a large factor and print ours beside 29x)")
        (fl, fl_low), (fi, fi_low) = self.download_time(load, "fifo"), self.download_time(idle, "fifo")
        if fl is None or fi is None:
            cl.append(c.skip(missing("the page with FIFO, loaded and idle")))
        elif fi_low:
            cl.append(c.skip("the idle page did not load within the run"))
        else:
            ge = ">= " if fl_low else ""
            cl.append(c.judge(fl >= 10 * fi, f"FIFO: {ge}{fl:.2f} s under load{' (not loaded by the end)' if fl_low else ''}"
                                            f" vs {fi:.2f} s idle ({ge}{fl / fi:.1f}x)", loaded=fl, idle=fi))
        f = {qd: self.download_time(load, qd) for qd in QDISCS}
        for qd in ("fq_codel", "cake"):
            c = Claim(f"{qd}-download-faster", "fixing the queues makes the loaded line usable again (seed 000)",
                      f"the page under load loads faster with {qd} than with FIFO")
            (v, lo), (vf, lof) = f[qd], f["fifo"]
            if v is None or vf is None:
                c.skip(missing(f"the page under load with {qd if v is None else 'fifo'}"))
            elif lo:
                c.judge(False, f"{qd}: not finished by the end (>= {v:.2f} s); FIFO {'>= ' if lof else ''}{vf:.2f} s")
            else:
                c.judge(v < vf, f"{qd} {v:.2f} s, FIFO {'>= ' if lof else ''}{vf:.2f} s", **{qd: v, "fifo": vf})
            cl.append(c)
        return cl

    def analyze(self, store) -> dict:
        from .. import plots

        runs = store.runs
        load = runs[runs["part"] == "load"]
        figs, tabs = [], []
        results, labels = [], []
        for qd in QDISCS:
            sel = load[load["link.down.qdisc"] == qd]
            if len(sel):
                rid = sel["run_id"].iloc[0]
                r = store.result(rid)
                figs.append((f"{qd}: time series under tcp_ndown load (12 streams + the page from 10 s)",
                             plots.timeseries(r, panels=("goodput", "rtt", "qdelay"))))
                results.append(r)
                labels.append(qd)
        if results:
            figs.append(("CDFs of RTT and queueing delay under load, per qdisc", plots.cdf(results, labels)))
        cols = ["part", "link.down.qdisc", "probe_rtt_p50_ms", "probe_rtt_p95_ms", "probe_rtt_p99_ms", "plt_s",
                "total_goodput_mbps", "down_drops"]
        tabs.append(("latency and the page-load time per qdisc (mean over seeds)",
                     runs[[c for c in cols if c in runs]].groupby(["part", "link.down.qdisc"], sort=False).mean()
                     .reset_index()))
        return {"figures": figs, "tables": tabs}


EXPERIMENT = Bufferbloat()
