"""google-nsperf: Google's BBR test matrix (nsperf) for BBR, BBRv3, CUBIC and DCTCP.

Source: google/bbr, ``gtests/net/tcp/bbr/nsperf/run_tests.sh`` (the cases)
and ``graph_tests.sh`` (what is drawn), v3 branch (issue 32; not one of the
seed documents). The script runs every case with netem in namespaces; its
buffer is ``bw * rtt / (1514 * 8) * bdp_of_buf`` packets (netem's ``limit``),
the flows start ``interval`` seconds apart. The cases, as it defines them:

=============  =======================  ==========================================  ======  =====
case           path                     swept                                       dur     reps
=============  =======================  ==========================================  ======  =====
coexist        50 Mbit/s, 30 ms, FIFO   buffer 0.1 1 2 4 8 16 BDP; 1 CUBIC + 1 X,   180 s   1
                                        X started 2 s later
random_loss    1 Gbit/s, 100 ms, 1 BDP  loss 0.00001 ... 20 %, 1 flow               60 s    10
shallow        1 Gbit/s, 100 ms, 2 %    1 10 30 60 100 flows, 0.139 s apart         300 s   1
               BDP FIFO
bufferbloat    50 Mbit/s, 30 ms, FIFO   buffer 1 10 50 100 BDP, 2 flows 2 s apart   120 s   1
ecn_bulk       1 Gbit/s, 1 ms, CoDel    1 4 10 40 100 flows 5 ms apart, ECN on      10 s    10
               ce_threshold 242 us,
               limit 1000, target 100 ms
=============  =======================  ==========================================  ======  =====

The hosts, as nsperf.py sets them up (google/bbr ``gtests/net/tcp/bbr/nsperf/nsperf.py``, read at commit
c8c38cf; run_tests.sh calls it once per point, so all of this holds for every case and point):

- the sender paces every flow: ``setup_routes`` gives the server's only device ``fq`` as its root qdisc,
  unconditionally (``h=srv`` ... ``ip netns exec $h $tc qdisc add dev $h.r root fq``). sch_fq paces each socket at
  its ``sk_pacing_rate``, CUBIC's and DCTCP's included (and marks it ``SK_PACING_FQ``, so CUBIC's HyStart takes
  the paced threshold, tcp_cubic.c ``hystart_update``). Here: ``pacing = true`` on every flow (the model's pacing
  at the kernel's rate; the emulator sets ``SO_MAX_PACING_RATE``, the kernel's internal pacing, which paces at
  the same ``sk_pacing_rate``: this kernel has no sch_fq). BBR paces anyway.
- the bottleneck is netem on the client router, data direction (``setup_netem``: ``qdisc add dev crt.r root netem
  limit ILIMIT delay IDELAY loss random ILOSS% rate IRATEMbit``, IDELAY = rtt/2, ILIMIT = the one-way BDP in
  1500-B packets + buf); the ACK direction ``crt.l root netem ... delay rtt/2 ... rate 1000Mbit``. With a
  ``qdisc`` (ecn_bulk only) netem keeps the delay and loss (limit 2e9, no rate) and the rate and queue move to the
  receiver's ingress (``setup_htb_and_qdisc``: ``cli.l`` ingress redirected to ``cli.ifb0``, ``htb rate
  IRATEMbit`` with the case's qdisc as its leaf).
- TSO/GSO/GRO off on the forwarding devices (``ethtool -K srt.r``, ``mid.l``, ``mid.r``, ``crt.l``), not on the
  sender's ``srv.r``: the sender's TSO bursts reach netem as separate packets.
- per case only the ``cmd`` differs: ``sysctl net.ipv4.tcp_ecn=1`` in the sender and receiver namespaces for
  ecn_bulk (``run_test``), empty otherwise. run_tests.sh raises ``rmem_max``/``wmem_max`` and the
  ``tcp_rmem``/``tcp_wmem`` maxima to 250 MB for all (bloatlab's namespaces: 128 MiB, beyond every case's need).

Controls: the script's ``bbr2`` (the BBRv2 alpha, later v3) is ``bbr3`` here;
its ``bbr2_min_2`` / ``bbr2_min_4`` variants of ecn_bulk (the module
parameter ``cwnd_min_cap``) are one ``bbr3`` line (bloatlab's BBRv3 has no
such knob). coexist pairs CUBIC with ``bbr`` and ``bbr3``; random_loss,
shallow and bufferbloat run ``cubic``, ``bbr``, ``bbr3``; ecn_bulk ``dctcp``,
``bbr3``, ``bbr``. On ``--engine emu`` only the controls this kernel offers
run (reno, cubic, bbr): BBRv3 and DCTCP are model-only, and the report says
so. ``--quick``: fewer points, 5-30 s runs, one repeat — random_loss three
(:data:`QUICK_LOSS_REPEATS`: one BBR run at 10 % loss, 1 Gbit/s, 100 ms, 10 s
is a draw from a wide distribution — the kernel's 3.4-474 Mbit/s over 9 runs,
docs/fidelity.md — so such a point is judged against the kernel's range over
its repeats, ``bench/emu/nsperf_quick.py``).

Each point is a part named ``CASE:CC:X`` (X the swept value): the flows of
shallow and ecn_bulk start one by one, so each flow count has its own flow
list. The graphs are graph_tests.sh's (throughput, median RTT, retransmit
rate against the swept value; medians over repeats), one line per control and
engine: a store of the other engine beside this one (``DIR`` and
``DIR-emu``) is drawn too.
"""

from __future__ import annotations

import os

import pandas as pd

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, missing

#: netem's packet on the wire in run_tests.sh's buffer arithmetic (B)
WIRE_PKT = 1514
CASES = ("coexist", "random_loss", "shallow", "bufferbloat", "ecn_bulk")
#: the swept value's name and unit per case (graph_tests.sh's x axes)
X_LABEL = {"coexist": "buffer (x BDP)", "random_loss": "random loss (%)", "shallow": "number of flows",
           "bufferbloat": "buffer (x BDP)", "ecn_bulk": "number of flows"}
LOSSES = ["0.00001", "0.0001", "0.001", "0.01", "0.1", "0.2", "0.5", "1", "2", "3", "10", "15", "20"]
#: random_loss's repeats under ``--quick`` (run_tests.sh: 10): the fewest that give a range (a least and a most
#: beside the median) for a chaotic point to land in, issue 32's reading of the kernel's band
QUICK_LOSS_REPEATS = 3
QUICK_LOSSES = ["0.001", "0.1", "1", "3", "10", "20"]
#: what the kernel under --engine emu can run (the rest is model-only)
KERNEL_CCS = ("reno", "cubic", "bbr")


def buf_pkts(bw_mbit: float, rtt_ms: float, bdp_of_buf: float) -> int:
    """run_tests.sh's get_buf_pkts: int(bw * rtt / (1514 * 8) * bdp_of_buf)."""
    return int(bw_mbit * 1e6 * rtt_ms / 1e3 / (WIRE_PKT * 8) * bdp_of_buf)


def _flows(ccs: list[str], interval_s: float, **extra) -> list[dict]:
    """The flows started ``interval_s`` apart, each paced: nsperf's sender has sch_fq as its root qdisc."""
    return [dict({"name": f"{cc}.{i}", "cc": cc, "start": f"{round(i * interval_s * 1e6)}us", "pacing": True},
                 **extra) for i, cc in enumerate(ccs)]


def case_points(quick: bool) -> list[tuple[str, str, str, dict, int]]:
    """(case, cc, x, scenario, repeats) for every point of the matrix."""
    pts = []
    dur = (lambda full, short: f"{short if quick else full}s")
    for x in (["0.1", "1", "8"] if quick else ["0.1", "1", "2", "4", "8", "16"]):
        for cc in ("bbr", "bbr3"):
            doc = dumbbell(f"nsperf-coexist-{cc}-{x}bdp", "50Mbit", "30ms", f"{buf_pkts(50, 30, float(x))}pkt",
                           _flows(["cubic", cc], 2.0), dur(180, 20))
            pts.append(("coexist", f"cubic+{cc}", x, doc, 1))
    for x in (QUICK_LOSSES if quick else LOSSES):
        for cc in ("cubic", "bbr", "bbr3"):
            doc = dumbbell(f"nsperf-random-loss-{cc}-{x}pct", "1Gbit", "100ms", f"{buf_pkts(1000, 100, 1)}pkt",
                           _flows([cc], 0.0), dur(60, 10), loss=f"{x}%")
            pts.append(("random_loss", cc, x, doc, QUICK_LOSS_REPEATS if quick else 10))
    for n in ([1, 10, 30] if quick else [1, 10, 30, 60, 100]):
        for cc in ("cubic", "bbr", "bbr3"):
            doc = dumbbell(f"nsperf-shallow-{cc}-{n}", "1Gbit", "100ms", f"{buf_pkts(1000, 100, 0.02)}pkt",
                           _flows([cc] * n, 0.139), dur(300, 10), sample="100ms")
            pts.append(("shallow", cc, str(n), doc, 1))
    for x in (["1", "10", "100"] if quick else ["1", "10", "50", "100"]):
        for cc in ("cubic", "bbr", "bbr3"):
            doc = dumbbell(f"nsperf-bufferbloat-{cc}-{x}bdp", "50Mbit", "30ms", f"{buf_pkts(50, 30, float(x))}pkt",
                           _flows([cc, cc], 2.0), dur(120, 30))
            pts.append(("bufferbloat", cc, x, doc, 1))
    for n in ([1, 10, 100] if quick else [1, 4, 10, 40, 100]):
        for cc in ("dctcp", "bbr3", "bbr"):
            # 'codel ce_threshold 242us limit 1000 target 100ms'; every namespace runs tcp_ecn=1
            doc = dumbbell(f"nsperf-ecn-bulk-{cc}-{n}", "1Gbit", "1ms", "1000pkt", _flows([cc] * n, 0.005, ecn=True),
                           dur(10, 5), qdisc="codel", sample="10ms")
            doc["link"]["down"]["qdisc_params"] = {"ce_threshold": "242us", "limit": 1000, "target": "100ms"}
            pts.append(("ecn_bulk", cc, str(n), doc, 1 if quick else 10))
    return pts


def part_key(part: str) -> tuple[str, str, str]:
    case, cc, x = part.split(":")
    return case, cc, x


def model_only(cc: str) -> bool:
    return any(c not in KERNEL_CCS for c in cc.split("+"))


class GoogleNsperf(Experiment):
    name = "google-nsperf"
    title = "Google's BBR test matrix (nsperf): coexist, random_loss, shallow, bufferbloat, ecn_bulk"
    generic_plots = False
    source = ("google/bbr, gtests/net/tcp/bbr/nsperf/run_tests.sh and graph_tests.sh (v3 branch); "
              "issue 32 (not one of the seed documents)")
    published = """
run_tests.sh states what each case is to show (it publishes graphs, not numbers):
  coexist      "show acceptable coexistence w/ cubic" (1 CUBIC + 1 BBR, 50 Mbit/s, 30 ms, buffer 0.1-16 BDP)
  random_loss  "show high throughput with random loss up to design parameter" (1 Gbit/s, 100 ms, 0.00001-20 %;
               BBRv3's design parameter: loss_thresh 2 %)
  shallow      "show reasonably low loss rates in shallow buffers" (1 Gbit/s, 100 ms, 2 % BDP, 1-100 flows)
  bufferbloat  "show low delay in deep buffers, even without ECN signal" (2 flows, 50 Mbit/s, 30 ms, 1-100 BDP)
  ecn_bulk     "show ECN support can keep queues very low" (1 Gbit/s, 1 ms, CoDel ce_threshold 242 us, 1-100 flows)
"""

    def timeout(self, quick: bool) -> float:
        return 60.0 if quick else 900.0

    def sweep(self, quick: bool) -> Sweep:
        return self.sweep_for(quick, "sim")

    def sweep_for(self, quick: bool, engine: str) -> Sweep:
        parts = [Part(f"{case}:{cc}:{x}", doc, repeat=rep) for case, cc, x, doc, rep in case_points(quick)
                 if engine != "emu" or not model_only(cc)]
        name = self.name + ("-quick" if quick else "") + ("-emu" if engine == "emu" else "")
        return Sweep(name, parts, description="run_tests.sh's five cases; parts CASE:CC:X (X: the swept value)"
                     + ("; the kernel's controls only (BBRv3 and DCTCP are model-only)" if engine == "emu" else ""))

    # -- the table graph_tests.sh draws from ---------------------------------------------------------------------

    @staticmethod
    def table(store) -> pd.DataFrame:
        """One row per run: case, cc, x, engine, goodput (total and the second flow's), median RTT (nsperf's:
        :meth:`srtt_p50`), retransmit rate, timing_flagged."""
        runs = store.runs
        if runs.empty:
            return pd.DataFrame(columns=["case", "cc", "x", "engine", "goodput_mbps", "rtt_p50_ms", "retrans_rate"])
        rows = []
        fl = store.flows
        delivered = fl.groupby("run_id")["bytes_delivered"].sum() if not fl.empty else pd.Series(dtype=float)
        srtt_p50 = GoogleNsperf.srtt_p50(store)
        for _, r in runs.iterrows():
            try:
                case, cc, x = part_key(str(r["part"]))
            except ValueError:
                continue
            second = None
            if case == "coexist" and not fl.empty:
                f = fl[(fl["run_id"] == r["run_id"]) & (fl["name"].astype(str).str.startswith(cc.split("+")[1] + "."))]
                second = float(f["goodput_mbps"].sum()) if len(f) else None
            # the flows start one by one: each flow's goodput is over its own active time, the link's throughput is
            # every byte delivered over the whole run
            tput = (float(delivered[r["run_id"]]) * 8 / float(r["duration_s"]) / 1e6
                    if r["run_id"] in delivered.index and r.get("duration_s") else None)
            rows.append({"case": case, "cc": cc, "x": float(x), "engine": r.get("engine", "sim"), "seed": r["seed"],
                         "goodput_mbps": tput, "second_mbps": second,
                         "rtt_p50_ms": srtt_p50.get(r["run_id"], r.get("rtt_p50_ms")),
                         "retrans_rate": r.get("retrans_rate"),
                         "rate_mbps": r.get("down_rate_mbps"),
                         "timing_flagged": bool(r.get("timing_flagged")) if pd.notna(r.get("timing_flagged")) else False})
        return pd.DataFrame(rows)

    @staticmethod
    def srtt_p50(store) -> dict:
        """nsperf's median RTT per run: the median of every flow's smoothed-RTT samples taken periodically, pooled
        (ss_log_parser.py ``log_rtt`` over nsperf.py's ``ss -tinmo`` snapshots, one each ``SS_INTERVAL_SECONDS`` =
        0.1 s). Here the flows' time series (``srtt_ms``: tcpi_rtt on the kernel, the model's srtt, one sample each
        ``sample_interval``), the same statistic on both engines. Not the runs' ``rtt_p50_ms`` (the mean over flows of
        each flow's ``rtt_ms`` p50; the model's ``rtt_ms`` is per ACK, so a second its flow sends fast counts more):
        bufferbloat CUBIC at 100 BDP (--quick, 30 s), the second flow gets 9 of 48 Mbit/s and most of its ACKs late,
        behind the deep queue: its per-ACK median 1516 ms (its srtt series' 923), the first flow's 731 (849); the
        mean of the two 1123 ms, the pooled srtt samples 887 ms, the kernel 896 ms. {} without series (the runs'
        ``rtt_p50_ms`` is used then)."""
        if not hasattr(store, "query"):
            return {}
        from ...errors import UserError

        try:
            df = store.query("SELECT run_id, median(srtt_ms) AS p50 FROM flow_series WHERE srtt_ms > 0 GROUP BY run_id")
        except UserError:  # no series stored
            return {}
        return {str(k): float(v) for k, v in zip(df["run_id"], df["p50"]) if pd.notna(v)}

    @staticmethod
    def medians(tab: pd.DataFrame) -> pd.DataFrame:
        """Medians over repeats (graph_tests.sh's median.py), emulator points with flagged timing left out."""
        ok = tab[~tab["timing_flagged"]] if "timing_flagged" in tab else tab
        cols = ["goodput_mbps", "second_mbps", "rtt_p50_ms", "retrans_rate"]
        return ok.groupby(["case", "cc", "engine", "x"])[cols].median().reset_index()

    def _tables(self, store) -> pd.DataFrame:
        """This store's runs and those of the other engine's store beside it (DIR and DIR-emu)."""
        from ..store import Store, is_store

        tabs = [self.table(store)]
        path = os.path.normpath(store.path)
        other = path[:-4] if path.endswith("-emu") else path + "-emu"
        if is_store(other):
            tabs.append(self.table(Store(other)))
        return pd.concat([t for t in tabs if not t.empty] or tabs, ignore_index=True)

    # -- claims --------------------------------------------------------------------------------------------------

    def claims(self, store) -> list:
        tab = self.table(store)
        med = self.medians(tab) if not tab.empty else tab

        def at(case, cc, metric):
            if med.empty:
                return {}
            s = med[(med["case"] == case) & (med["cc"] == cc)]
            return {float(x): v for x, v in zip(s["x"], s[metric]) if pd.notna(v)}

        cl = []
        c = Claim("goodput-within-link-rate", "physics: no point delivers more than its bottleneck carries",
                  "every run: every byte the flows delivered x 8 / the run's duration <= the link rate")
        if tab.empty:
            cl.append(c.skip(missing("any point")))
        else:
            over = tab[tab["goodput_mbps"] > tab["rate_mbps"]]
            hi = (tab["goodput_mbps"] / tab["rate_mbps"]).max()
            cl.append(c.judge(over.empty, f"highest throughput / link rate {hi:.3f} over {len(tab)} runs"
                              + (f"; above: {', '.join(sorted(set(over['case'])))}" if len(over) else ""), worst=hi))

        c = Claim("random-loss-bbr-beats-cubic", "random_loss: BBR keeps its throughput under random loss where CUBIC "
                  "collapses (run_tests.sh: \"high throughput with random loss\")",
                  "median goodput over repeats: BBR > CUBIC at every loss rate >= 1 %")
        b, cu = at("random_loss", "bbr", "goodput_mbps"), at("random_loss", "cubic", "goodput_mbps")
        xs = sorted(x for x in b if x >= 1 and x in cu)
        cl.append(c.skip(missing("random_loss BBR and CUBIC at >= 1 % loss")) if not xs else
                  c.judge(all(b[x] > cu[x] for x in xs),
                          "; ".join(f"{x:g} %: BBR {b[x]:.0f}, CUBIC {cu[x]:.1f} Mbit/s" for x in xs)))

        c = Claim("random-loss-bbr3-up-to-design", "random_loss: BBRv3 keeps a high throughput up to its design "
                  "parameter (run_tests.sh; loss_thresh = 2 %)",
                  "median goodput of BBRv3 >= 50 % of the link rate at every loss rate below the 2 % design "
                  "parameter, and above CUBIC's at 0.1-1 %")
        v3 = at("random_loss", "bbr3", "goodput_mbps")
        xs = sorted(x for x in v3 if x < 2)
        mid = sorted(x for x in v3 if 0.1 <= x <= 1 and x in cu)
        cl.append(c.skip(missing("random_loss BBRv3 below 2 % loss")) if not xs else
                  c.judge(all(v3[x] >= 500 for x in xs) and all(v3[x] > cu[x] for x in mid),
                          "; ".join(f"{x:g} %: BBRv3 {v3[x]:.0f}" + (f" (CUBIC {cu[x]:.0f})" if x in cu else "")
                                    for x in sorted(v3)) + " Mbit/s"))

        c = Claim("shallow-bbr3-lower-loss-than-bbr", "shallow: reasonably low loss rates in shallow buffers "
                  "(run_tests.sh), where BBRv1 is known to retransmit heavily",
                  "retransmit rate of BBRv3 below half of BBRv1's at every flow count >= 10")
        r3, r1 = at("shallow", "bbr3", "retrans_rate"), at("shallow", "bbr", "retrans_rate")
        xs = sorted(x for x in r3 if x >= 10 and x in r1)
        cl.append(c.skip(missing("shallow BBR and BBRv3 with >= 10 flows")) if not xs else
                  c.judge(all(r3[x] < r1[x] / 2 for x in xs),
                          "; ".join(f"{x:g} flows: BBRv3 {r3[x]:.2%}, BBR {r1[x]:.2%}" for x in xs)))

        c = Claim("bufferbloat-bbr-low-delay", "bufferbloat: low delay in deep buffers, even without ECN signal "
                  "(run_tests.sh)",
                  "median RTT of BBR and BBRv3 <= 3x the 30-ms base RTT at every buffer >= 10 BDP, and below "
                  "half of CUBIC's at 50 and 100 BDP")
        d1, d3, dc = (at("bufferbloat", cc, "rtt_p50_ms") for cc in ("bbr", "bbr3", "cubic"))
        xs = sorted(x for x in d1 if x >= 10 and x in d3)
        deep = [x for x in xs if x >= 50 and x in dc]
        cl.append(c.skip(missing("bufferbloat at >= 10 BDP")) if not xs else
                  c.judge(all(max(d1[x], d3[x]) <= 90 for x in xs) and all(max(d1[x], d3[x]) < dc[x] / 2 for x in deep),
                          "; ".join(f"{x:g} BDP: BBR {d1[x]:.0f}, BBRv3 {d3[x]:.0f}"
                                    + (f", CUBIC {dc[x]:.0f}" if x in dc else "") + " ms" for x in xs)))

        c = Claim("ecn-bulk-low-queue", "ecn_bulk: ECN support can keep queues very low (run_tests.sh)",
                  "median RTT of DCTCP and BBRv3 <= 2 ms (1-ms base RTT, 242-us marking threshold) with up to 10 "
                  "flows, and not above BBRv1's (which ignores ECN) at any flow count")
        e1, e3, ed = (at("ecn_bulk", cc, "rtt_p50_ms") for cc in ("bbr", "bbr3", "dctcp"))
        xs = sorted(x for x in ed if x in e3)
        cmp = [x for x in xs if x in e1]
        cl.append(c.skip(missing("ecn_bulk DCTCP and BBRv3")) if not xs else
                  c.judge(all(max(ed[x], e3[x]) <= 2.0 for x in xs if x <= 10)
                          and all(max(ed[x], e3[x]) <= e1[x] * 1.05 for x in cmp),
                          "; ".join(f"{x:g} flows: DCTCP {ed[x]:.2f}, BBRv3 {e3[x]:.2f}"
                                    + (f", BBR {e1[x]:.2f}" if x in e1 else "") + " ms" for x in xs)))

        c = Claim("coexist-bbr3-acceptable", "coexist: acceptable coexistence with CUBIC (run_tests.sh)",
                  "BBRv3's goodput between 20 % and 80 % of the total beside one CUBIC flow at every buffer >= 1 BDP")
        s3 = at("coexist", "cubic+bbr3", "second_mbps")
        tot = at("coexist", "cubic+bbr3", "goodput_mbps")
        xs = sorted(x for x in s3 if x >= 1 and tot.get(x))
        sh = {x: s3[x] / tot[x] for x in xs}
        cl.append(c.skip(missing("coexist CUBIC + BBRv3 at >= 1 BDP")) if not xs else
                  c.judge(all(0.2 <= v <= 0.8 for v in sh.values()),
                          "; ".join(f"{x:g} BDP: {v:.0%}" for x, v in sh.items())))
        return cl

    # -- figures -------------------------------------------------------------------------------------------------

    def analyze(self, store) -> dict:
        from matplotlib.ticker import FuncFormatter

        from .. import plots

        tab = self._tables(store)
        if tab.empty:
            return {"figures": [], "tables": []}
        med = self.medians(tab)
        figs = []
        colors = {"cubic": "#d7191c", "bbr": "#74add1", "bbr3": "#2c7bb6", "dctcp": "#1a9641",
                  "cubic+bbr": "#74add1", "cubic+bbr3": "#2c7bb6"}
        for case in CASES:
            m = med[med["case"] == case]
            if m.empty:
                continue
            fig, axes = plots._figure(1, 3, figsize=(13, 3.8))
            panels = [("second_mbps" if case == "coexist" else "goodput_mbps",
                       "BBR flow's goodput (Mbit/s)" if case == "coexist" else "throughput (Mbit/s)"),
                      ("rtt_p50_ms", "median RTT (ms)"), ("retrans_rate", "retransmit rate (%)")]
            for ax, (metric, label) in zip(axes, panels):
                for (cc, eng), g in m.groupby(["cc", "engine"]):
                    g = g.sort_values("x")
                    ys = g[metric] * (100 if metric == "retrans_rate" else 1)
                    ax.plot(g["x"], ys, "o-" if eng == "sim" else "s--", color=colors.get(cc, "k"), lw=1.5, ms=4,
                            label=f"{cc} ({eng})")
                ax.set_xlabel(X_LABEL[case])
                ax.set_ylabel(label)
                ax.set_xscale("log")
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.grid(True, alpha=0.3)
                ax.set_ylim(bottom=0)
            plots.legend_outside(axes[-1])
            fig.suptitle(f"nsperf {case} (medians over repeats; sim: solid, emu: dashed)")
            figs.append((f"{case}: throughput, median RTT, retransmit rate against {X_LABEL[case]}", fig))
        out = med.copy()
        out["retrans_rate"] = out["retrans_rate"] * 100
        out = out.rename(columns={"retrans_rate": "retrans_%", "second_mbps": "bbr_flow_mbps"})
        tables = [("medians over repeats per case, control, engine and swept value", out)]
        notes = []
        ccs = sorted({cc for cc in tab["cc"] if model_only(cc)})
        if ccs:
            notes.append({"what": "model-only", "detail": f"{', '.join(ccs)}: the kernel here has no such control "
                          "(--engine emu runs reno, cubic, bbr); their lines are the simulator's alone"})
        flagged = tab[tab["timing_flagged"]]
        for _, r in flagged.iterrows():
            notes.append({"what": "not plotted (emulator timing flagged)",
                          "detail": f"{r['case']} {r['cc']} x={r['x']:g} seed {r['seed']}"})
        if notes:
            tables.append(("what the figures leave out", pd.DataFrame(notes)))
        return {"figures": figs, "tables": tables}


EXPERIMENT = GoogleNsperf()
