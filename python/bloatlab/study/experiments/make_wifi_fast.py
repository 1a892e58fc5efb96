"""make-wifi-fast: the WiFi performance anomaly, its fix, and latency under load (seed 000).

Sources:
- Linux commit 63fefa050477 "ath9k: Introduce airtime fairness scheduling
  between stations" (T. Høiland-Jørgensen, 2016): "two stations operate at the
  highest HT20 rate, and one station at the lowest, and the scheduler is
  employed at the access point": fast 19.17 / 25.09 and 19.83 / 25.21 Mbit/s,
  slow 2.58 / 1.77, total 41.58 / 52.07 (before / after).
- Seed 000 (Habr 2016, on the Make-WiFi-Fast patches of Linux 4.9) and
  T. Høiland-Jørgensen et al., "Ending the Anomaly", USENIX ATC 2017: latency
  under load from peaks of 1-2 s to about 40 ms, 2-12 ms of buffering in the
  driver; 100 stations: before, only 5 got going with > 15 s delays, after
  all of them at 150-300 ms.

Setup here (docs/wifi.md for the model):
- The radios as the testbed ran them (2026-11-25): every station on
  Minstrel-HT (``rate_control = "minstrel_ht"``), mac80211's rate control,
  which ath9k uses, capped at the station's ``phy_rate``; a clean channel,
  ``snr_db`` = 40 for every station. The commit says only that the stations
  "operate at" the highest and the lowest HT20 rate (checked against its
  text, docs/wifi.md); the testbed section of "Ending the Anomaly" could not
  be verified (only its abstract is reachable), so nothing here rests on it.
  So: fast stations Minstrel over MCS 0-15 on a clean channel; the slow one
  Minstrel with MCS 0 as its only rate (as a mac80211 station limited to one rate runs: Minstrel
  over that set, with ath9k's hardware retry chain). No SNR is published; the
  NIST error model loses no MPDU at any MCS above about 27 dB, and 30, 40, 60 dB
  and no error model give the same figures digit for digit (25 dB within 1 %
  on the anchor figures), so 40 dB stands for a clean channel without being
  a tuned value. ``RATE_CONTROL = None`` gives the fixed rates used before.
- ``anomaly``: the commit's three stations. "Highest HT20 rate" = MCS 15
  (130 Mbit/s long GI, two streams: ath9k cards are 2x2 or 3x3; the 3-stream
  MCS 23 would only make the contrast larger), "lowest" = MCS 0 (6.5 Mbit/s
  with the long GI; the short GI's 7.2 Mbit/s is left out by the model).
  One CUBIC download per station from a server 10 ms away (a LAN testbed).
  ``mac`` = legacy, fq, airtime. The commit's "before" is ath9k already on
  mac80211's intermediate queues (commit 50f08edf9809, Linux 4.9), i.e. our
  ``fq``; its "after" is ``airtime``. ``legacy`` (pre-4.9) shows the anomaly
  the seed describes.
- ``latency``: the same three downloads plus a fourth station (Minstrel up to
  MCS 15) that only pings (UDP echo every 20 ms), per design.
- ``many``: 30 stations (and 100 in the full run): 40 % up to MCS 15, 30 % up
  to MCS 7, 20 % up to MCS 3, 10 % at MCS 0 (Minstrel, 40 dB, as above); each downloads 2 MB at t = 0 (CUBIC,
  10 ms; 60 MB or 200 MB in all, which keeps the medium loaded for most of
  the run); pings every 100 ms from the first station of each group; per
  design legacy, fq and airtime. Counted: stations whose transfer completed, the
  p95 of the pings (the loaded period; a median would mostly see the idle
  medium after the transfers). The seed's "after the patch" is Linux 4.9's
  design, per-station round robin over mac80211's TXQs (``fq``): the post is
  about the 4.9 release and lists what changed ("QDisc removed, a queue per
  station served round robin"), and the airtime scheduler (ath9k commit
  63fefa050477) was applied to ath-next on 2016-12-15, after 4.9 was out
  (2016-12-11), so the 100-station claims judge ``fq`` against ``legacy``
  (until 2026-11-26 they judged ``airtime``; docs/wifi.md). ``airtime`` is
  still run and reported.
"""

from __future__ import annotations

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import missing

MACS = ["legacy", "fq", "airtime"]
# Every station runs Minstrel-HT, as the testbed's did (ath9k's rate control is mac80211's Minstrel-HT), capped at
# its ``phy_rate``; ``None`` gives the fixed rates the claims used until 2026-11-25 (bench/wifi_minstrel.py).
RATE_CONTROL = "minstrel_ht"
# A clean channel (module docstring): 40 dB on every station. The NIST model loses no MPDU at any HT20 MCS from
# about 27 dB up, so any value there gives the same figures (measured 25 / 30 / 40 / 60 dB, docs/wifi.md).
SNR_DB = 40.0
ANCHOR = {"fast": (19.17 + 19.83) / 2, "fast_after": (25.09 + 25.21) / 2, "slow": 2.58, "slow_after": 1.77,
          "total": 41.58, "total_after": 52.07}
RTT = "10ms"


def radio(station: dict, rate_control: str | None, snr_db: float | None) -> dict:
    """``station`` with the rate control and the SNR of the experiment (none of either: a fixed ``phy_rate``)."""
    if rate_control:
        station["rate_control"] = rate_control
    if snr_db is not None:
        station["snr_db"] = snr_db
    return station


def anomaly_doc(duration: str, pinger: bool = False, rate_control: str | None = RATE_CONTROL,
                snr_db: float | None = SNR_DB) -> dict:
    st = [{"name": "fast", "phy_rate": "mcs15", "count": 2}, {"name": "slow", "phy_rate": "mcs0"}]
    doc = {"name": "wifi-anomaly" + ("-ping" if pinger else ""), "duration": duration, "seed": 1,
           "wifi": {"mac": "airtime", "station": st},
           "flow": [{"name": "fast", "cc": "cubic", "station": "fast", "count": 2, "rtt": RTT},
                    {"name": "slow", "cc": "cubic", "station": "slow", "rtt": RTT}]}
    if pinger:
        st.append({"name": "pinger", "phy_rate": "mcs15"})
        doc["probe"] = [{"name": "ping", "station": "pinger", "interval": "20ms", "rtt": RTT}]
    for s in st:
        radio(s, rate_control, snr_db)
    return doc


GROUPS = [("a", "mcs15", 0.4), ("b", "mcs7", 0.3), ("c", "mcs3", 0.2), ("d", "mcs0", 0.1)]


def many_doc(n: int, duration: str, rate_control: str | None = RATE_CONTROL, snr_db: float | None = SNR_DB) -> dict:
    """``n`` >= 10 stations in the four groups of GROUPS."""
    if n < 10:
        raise ValueError("many_doc: at least 10 stations (one per group at the smallest share)")
    counts = [max(1, round(n * f)) for _, _, f in GROUPS]
    counts[0] += n - sum(counts)
    st = [radio({"name": g, "phy_rate": r, "count": c}, rate_control, snr_db)
          for (g, r, _), c in zip(GROUPS, counts)]
    flows = [{"name": g, "cc": "cubic", "station": g, "count": c, "rtt": RTT, "size": "2MB"}
             for (g, _, _), c in zip(GROUPS, counts)]
    probes = [{"name": f"ping-{g}", "station": g, "interval": "100ms", "rtt": RTT} for g, _, _ in GROUPS]
    return {"name": f"wifi-{n}-stations", "duration": duration, "seed": 1,
            "wifi": {"mac": "airtime", "station": st}, "flow": flows, "probe": probes}


def change(before: float, after: float) -> float:
    return after / before - 1


class MakeWifiFast(Experiment):
    name = "make-wifi-fast"
    title = "WiFi: the performance anomaly, airtime fairness and latency under load (legacy vs fq vs airtime)"
    source = ("Linux commit 63fefa050477 (ath9k airtime fairness, Høiland-Jørgensen 2016); seed 000 (Habr 2016, "
              "Make-WiFi-Fast in Linux 4.9); Høiland-Jørgensen et al., \"Ending the Anomaly\", USENIX ATC 2017")
    published = """
ath9k commit 63fefa050477, two stations at the highest HT20 rate and one at the lowest (before / after airtime fairness):
  fast station 1 19.17 / 25.09 Mbit/s, fast station 2 19.83 / 25.21, slow station 2.58 / 1.77, total 41.58 / 52.07 (+25 %).
Seed 000: latency under load fell from peaks of 1-2 s to about 40 ms; 2-12 ms of buffering in the driver.
Seed 000, 100 stations: before, only 5 stations got going, with > 15 s delays; after, all did, at 150-300 ms.
"""

    def sweep(self, quick: bool) -> Sweep:
        dur = "20s" if quick else "60s"
        rep = 1 if quick else 3
        ns = [30] if quick else [30, 100]
        parts = [Part("anomaly", anomaly_doc(dur), grid={"wifi.mac": MACS}, repeat=rep),
                 Part("latency", anomaly_doc(dur, pinger=True), grid={"wifi.mac": MACS}, repeat=rep)]
        for n in ns:
            parts.append(Part(f"many-{n}", many_doc(n, "30s" if quick else "60s"), grid={"wifi.mac": MACS},
                              repeat=1))
        return Sweep(self.name + ("-quick" if quick else ""), parts,
                     description="Minstrel-HT on a clean channel (40 dB): 2 stations up to MCS 15 + 1 at MCS 0 "
                                 "(CUBIC downloads, 10 ms); a pinging station; "
                                 f"{' and '.join(map(str, ns))} stations with 2 MB downloads (legacy, fq, airtime).")

    def timeout(self, quick: bool) -> float:
        return 120.0 if quick else 900.0

    # ------------------------------------------------------------ data

    @staticmethod
    def stations(store, part: str, mac: str) -> list[dict] | None:
        """Per-station summaries of a part at a design, averaged over seeds."""
        runs = store.runs
        sel = runs[(runs["part"] == part) & (runs["wifi.mac"] == mac)] if len(runs) else runs
        if sel.empty:
            return None
        per = [store.result(rid).summary for rid in sel["run_id"]]
        out = []
        for i, st in enumerate(per[0]["stations"]):
            row = {"name": st["name"]}
            for k in ("goodput_mbps", "airtime_share", "aggregate_frames_down", "retries"):
                vals = [s["stations"][i][k] for s in per if s["stations"][i][k] is not None]
                row[k] = sum(vals) / len(vals) if vals else None
            out.append(row)
        return out

    @staticmethod
    def summaries(store, part: str, mac: str) -> list[dict]:
        runs = store.runs
        sel = runs[(runs["part"] == part) & (runs["wifi.mac"] == mac)] if len(runs) else runs
        return [store.result(rid).summary for rid in sel["run_id"]]

    # ------------------------------------------------------------ claims

    def claims(self, store) -> list:
        cl = []
        st = {m: self.stations(store, "anomaly", m) for m in MACS}

        def tot(m):
            return sum(s["goodput_mbps"] for s in st[m])

        def fast(m):
            return (st[m][0]["goodput_mbps"] + st[m][1]["goodput_mbps"]) / 2

        def slow(m):
            return st[m][2]["goodput_mbps"]

        # The anchor's change, before (fq) -> after (airtime).
        for what, get, a0, a1 in (("fast", fast, ANCHOR["fast"], ANCHOR["fast_after"]),
                                  ("slow", slow, ANCHOR["slow"], ANCHOR["slow_after"]),
                                  ("total", tot, ANCHOR["total"], ANCHOR["total_after"])):
            ca = change(a0, a1)
            c = Claim(f"anchor-{what}-change",
                      f"ath9k airtime fairness (63fefa050477): {what} {a0:.2f} -> {a1:.2f} Mbit/s ({ca:+.0%})",
                      f"fq -> airtime: the {what} goodput changes in the same direction, by between half and twice "
                      f"the anchor's relative change (a different testbed: real radios and their channel, which the "
                      f"model's Minstrel-HT on a clean AWGN channel only approximates)")
            if st["fq"] is None or st["airtime"] is None:
                cl.append(c.skip(missing("anomaly/fq and anomaly/airtime")))
                continue
            b, a = get("fq"), get("airtime")
            cm = change(b, a)
            ok = (cm > 0) == (ca > 0) and 0.5 * abs(ca) <= abs(cm) <= 2 * abs(ca)
            cl.append(c.judge(ok, f"{b:.2f} -> {a:.2f} Mbit/s ({cm:+.0%}; anchor {ca:+.0%})", before=b, after=a,
                              change=cm, anchor_change=ca))
        c = Claim("anomaly-legacy", "before Make-WiFi-Fast the slow station drags everyone down: stations take turns "
                                    "per frame, so the slowest holds the medium (seed 000; Ending the Anomaly)",
                  "legacy: the MCS 0 station holds more than half of the airtime, and legacy -> airtime raises the "
                  "total goodput by at least the anchor's +25 %")
        if st["legacy"] is None or st["airtime"] is None:
            cl.append(c.skip(missing("anomaly/legacy and anomaly/airtime")))
        else:
            sh, t0, t1 = st["legacy"][2]["airtime_share"], tot("legacy"), tot("airtime")
            cl.append(c.judge(sh > 0.5 and t1 >= 1.25 * t0, f"slow station airtime {sh:.0%}; total {t0:.1f} -> "
                                                              f"{t1:.1f} Mbit/s ({change(t0, t1):+.0%})",
                              slow_airtime=sh, total_legacy=t0, total_airtime=t1))
        c = Claim("airtime-shares-equal", "the airtime scheduler gives the stations equal airtime (63fefa050477; "
                                          "Ending the Anomaly)",
                  "airtime: Jain's index over the three stations' airtime shares >= 0.95")
        runs = store.runs
        sel = runs[(runs["part"] == "anomaly") & (runs["wifi.mac"] == "airtime")] if len(runs) else runs
        if sel.empty:
            cl.append(c.skip(missing("anomaly/airtime")))
        else:
            j = [store.result(r).summary["jain_station_airtime"] for r in sel["run_id"]]
            v = sum(j) / len(j)
            shares = ", ".join(f"{s['airtime_share']:.0%}" for s in st["airtime"])
            cl.append(c.judge(v >= 0.95, f"Jain over airtime {v:.3f} (shares {shares})", jain=v))

        # Latency under load.
        p95 = {}
        for m in MACS:
            ss = self.summaries(store, "latency", m)
            vals = [s["probes"][0]["rtt_ms"]["p95"] for s in ss if s["probes"][0]["rtt_ms"]["p95"] is not None]
            p95[m] = sum(vals) / len(vals) if vals else None
        c = Claim("latency-order-of-magnitude", "latency under load: from peaks of 1-2 s to about 40 ms (seed 000)",
                  "a fourth station's ping while three stations download: p95 under legacy >= 10x that under fq "
                  "and under airtime")
        if None in p95.values():
            cl.append(c.skip(missing("latency/legacy, fq and airtime")))
        else:
            cl.append(c.judge(p95["legacy"] >= 10 * max(p95["fq"], p95["airtime"]),
                              f"ping p95 legacy {p95['legacy']:.0f} ms, fq {p95['fq']:.0f} ms, airtime "
                              f"{p95['airtime']:.0f} ms", **p95))
        c = Claim("latency-tens-of-ms", "with the new designs latency under load is about 40 ms (seed 000)",
                  "fq and airtime: ping p95 <= base RTT (10 ms) + 40 ms")
        if p95.get("fq") is None or p95.get("airtime") is None:
            cl.append(c.skip(missing("latency/fq and airtime")))
        else:
            cl.append(c.judge(max(p95["fq"], p95["airtime"]) <= 50, f"fq {p95['fq']:.0f} ms, airtime "
                                                                      f"{p95['airtime']:.0f} ms", fq=p95["fq"],
                              airtime=p95["airtime"]))

        # Many stations.
        for part in sorted({p for p in (runs["part"] if len(runs) else []) if str(p).startswith("many-")}):
            n = int(part.split("-")[1])
            res = {}
            for m in MACS:
                ss = self.summaries(store, part, m)
                if ss:
                    s = ss[0]
                    done = sum(1 for f in s["flows"] if f["completed"])
                    going = sum(1 for f in s["flows"] if (f.get("bytes_delivered") or 0) > 0)
                    pr = [p["rtt_ms"]["p95"] for p in s["probes"] if p["rtt_ms"]["p95"] is not None]
                    res[m] = (done, len(s["flows"]), max(pr) if pr else None, going)
            # The seed says every station "got going" (its download under way), not that each finished: the
            # stations' 2 MB each need more airtime than the run has (100 x 2 MB: 80 s of airtime measured in a
            # 150-s run, where the 60-s run offers ~55 s; docs/wifi.md), so completion is no test of it.
            # "After the patch" is Linux 4.9's per-station round robin (fq), not the airtime scheduler that
            # came after it (module docstring; docs/wifi.md, "Measured disagreements").
            c = Claim(f"{part}-all-complete", f"{n} stations: after the fixes (Linux 4.9: per-station round robin) "
                                              "all stations got going (seed 000: 100 stations, all started, at "
                                              "150-300 ms)",
                      "fq: every station's download delivers data within the run, and the worst group's ping "
                      "p95 is <= 300 ms")
            if "fq" not in res or res["fq"][2] is None:
                cl.append(c.skip(missing(f"{part}/fq")))
            else:
                d, k, p, g = res["fq"]
                extra = ""
                if res.get("airtime") and res["airtime"][2] is not None:
                    da, _, pa, ga = res["airtime"]
                    extra = f"; airtime: {ga}/{k} got going ({da} completed), worst p95 {pa:.0f} ms"
                cl.append(c.judge(g == k and p <= 300, f"{g}/{k} downloads got going ({d} completed); worst group "
                                                       f"ping p95 {p:.0f} ms{extra}", going=g, completed=d,
                                  stations=k, ping_p95=p))
            c = Claim(f"{part}-legacy-worse", f"{n} stations: before, only 5 of 100 stations got going, with > 15 s "
                                              "delays (seed 000)",
                      "legacy: fewer downloads complete than under fq, or the worst group's ping p95 is >= 5x "
                      "fq's (the seed's > 15 s come from TCP handshakes timing out; the simulator's handshakes "
                      "time out too, but a 2 MB download is judged by completion here)")
            if "legacy" not in res or "fq" not in res or None in (res["legacy"][2], res["fq"][2]):
                cl.append(c.skip(missing(f"{part}/legacy and fq")))
            else:
                (dl, k, pl, _), (df, _, pf, _) = res["legacy"], res["fq"]
                cl.append(c.judge(dl < df or pl >= 5 * pf, f"completed legacy {dl}/{k}, fq {df}/{k}; worst "
                                                           f"ping p95 legacy {pl:.0f} ms, fq {pf:.0f} ms",
                                  legacy_done=dl, fq_done=df, legacy_ping=pl, fq_ping=pf))
        return cl

    # ------------------------------------------------------------ report

    def analyze(self, store) -> dict:
        import numpy as np

        from .. import plots

        plt = plots._plt()
        figs, tabs = [], []
        st = {m: self.stations(store, "anomaly", m) for m in MACS}
        if all(st.values()):
            fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
            names = [s["name"] for s in st["airtime"]]
            x = np.arange(len(names))
            w = 0.27
            for i, m in enumerate(MACS):
                a1.bar(x + (i - 1) * w, [s["goodput_mbps"] for s in st[m]], w, label=m)
                a2.bar(x + (i - 1) * w, [100 * s["airtime_share"] for s in st[m]], w, label=m)
            anchor = [ANCHOR["fast_after"], ANCHOR["fast_after"], ANCHOR["slow_after"]]
            a1.scatter(x + w, anchor, marker="_", s=300, color="k", zorder=3, label="ath9k anchor (after)")
            a1.scatter(x, [19.17, 19.83, 2.58], marker="_", s=300, color="grey", zorder=3,
                       label="ath9k anchor (before)")
            for a, lab in ((a1, "goodput (Mbit/s)"), (a2, "airtime share (%)")):
                a.set_xticks(x, names)
                a.set_ylabel(lab)
                a.grid(True, axis="y", alpha=0.3)
                a.legend(fontsize=7)
            fig.suptitle("anomaly: two stations on Minstrel-HT up to MCS 15, one at MCS 0 (40 dB), one CUBIC "
                         "download each", fontsize=10)
            fig.tight_layout()
            figs.append(("per-station goodput and airtime share per MAC design, with the ath9k anchor", fig))
            import pandas as pd

            rows = []
            for m in MACS:
                for s in st[m]:
                    rows.append(dict(mac=m, **s))
            tabs.append(("anomaly: per station (mean over seeds)", pd.DataFrame(rows)))
        runs = store.runs
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        drawn = False
        for m in MACS:
            sel = runs[(runs["part"] == "latency") & (runs["wifi.mac"] == m)] if len(runs) else runs
            if len(sel):
                pr = store.result(sel["run_id"].iloc[0]).probes
                v = np.sort(pr["rtt_ms"].dropna().to_numpy(dtype=float))
                if len(v):
                    ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=m)
                    drawn = True
        if drawn:
            ax.set_xscale("log")
            ax.axvline(50, color="grey", ls=":", lw=1)
            ax.set_xlabel("ping RTT (ms, log scale; base 10 ms; dotted line: 50 ms)")
            ax.set_ylabel("CDF")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            figs.append(("latency under load: a fourth station's ping while three stations download, per design", fig))
        for part in sorted({p for p in (runs["part"] if len(runs) else []) if str(p).startswith("many-")}):
            import pandas as pd

            rows = []
            fig, ax = plt.subplots(figsize=(6, 3.5))
            for m in MACS:
                ss = self.summaries(store, part, m)
                if not ss:
                    continue
                s = ss[0]
                fct = sorted(f["fct_s"] for f in s["flows"] if f["completed"])
                if fct:
                    ax.step(fct, np.arange(1, len(fct) + 1), where="post", label=m)
                rows.append({"mac": m, "completed": sum(f["completed"] for f in s["flows"]), "stations": len(s["flows"]),
                             "total_goodput_mbps": s["total_goodput_mbps"],
                             **{f"{p['name']}_p95_ms": p["rtt_ms"]["p95"] for p in s["probes"]}})
            ax.set_xlabel("download completion time (s)")
            ax.set_ylabel("stations done")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
            fig.tight_layout()
            figs.append((f"{part}: 2 MB downloads completed over time", fig))
            tabs.append((f"{part}: completions and ping p95 per group", pd.DataFrame(rows)))
        return {"figures": figs, "tables": tabs}


EXPERIMENT = MakeWifiFast()
