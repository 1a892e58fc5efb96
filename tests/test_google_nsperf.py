"""`reproduce google-nsperf`: the matrix is run_tests.sh's, the emulator gets only the kernel's controls, and a tiny
subset run in the simulator has the shape graph_tests.sh draws and obeys physics."""

from __future__ import annotations

import copy
from collections import Counter

import pytest

from bloatlab.study import spec, sweep
from bloatlab.study.experiments import get
from bloatlab.study.experiments.google_nsperf import buf_pkts, case_points, part_key
from bloatlab.study.store import Store

NS = get("google-nsperf")


def test_the_buffer_arithmetic_is_run_tests_sh_get_buf_pkts():
    # run_tests.sh: "BDP is 1G*100ms = 8256 packets"; shallow's 2 % of it; coexist's 0.1 BDP at 50 Mbit/s, 30 ms
    assert buf_pkts(1000, 100, 1) == 8256
    assert buf_pkts(1000, 100, 0.02) == 165
    assert buf_pkts(50, 30, 0.1) == 12 and buf_pkts(50, 30, 16) == 1981


def test_the_full_matrix_has_every_case_point_and_repeat_of_run_tests_sh():
    pts = NS.sweep(False).points()
    runs = Counter(part_key(p.part)[0] for p in pts)
    # coexist 2 combos x 6 buffers; random_loss 3 ccs x 13 losses x 10 reps; shallow 3 x 5 flow counts;
    # bufferbloat 3 x 4 buffers; ecn_bulk 3 x 5 flow counts x 10 reps
    assert runs == {"coexist": 12, "random_loss": 390, "shallow": 15, "bufferbloat": 12, "ecn_bulk": 150}
    by = {(c, cc, x): (doc, rep) for c, cc, x, doc, rep in case_points(False)}
    doc, _ = by[("coexist", "cubic+bbr3", "0.1")]
    assert doc["duration"] == "180s" and [f["cc"] for f in doc["flow"]] == ["cubic", "bbr3"]
    assert [f["start"] for f in doc["flow"]] == ["0us", "2000000us"] and doc["link"]["down"]["buffer"] == "12pkt"
    doc, rep = by[("random_loss", "bbr", "0.00001")]
    assert (doc["duration"], rep, doc["link"]["down"]["loss"], doc["link"]["down"]["buffer"]) == \
        ("60s", 10, "0.00001%", "8256pkt")
    doc, _ = by[("shallow", "cubic", "100")]
    assert doc["duration"] == "300s" and len(doc["flow"]) == 100 and doc["flow"][99]["start"] == "13761000us"
    doc, _ = by[("bufferbloat", "bbr3", "100")]
    assert doc["duration"] == "120s" and doc["link"]["down"]["buffer"] == "12384pkt" and len(doc["flow"]) == 2
    doc, rep = by[("ecn_bulk", "dctcp", "40")]
    assert (doc["duration"], rep, doc["link"]["down"]["qdisc"]) == ("10s", 10, "codel")
    assert doc["link"]["down"]["qdisc_params"] == {"ce_threshold": "242us", "limit": 1000, "target": "100ms"}
    assert all(f["ecn"] for f in doc["flow"]) and doc["flow"][1]["start"] == "5000us"
    assert {cc for c, cc, *_ in case_points(False) if c == "ecn_bulk"} == {"dctcp", "bbr3", "bbr"}
    # nsperf.py's setup_routes gives the sender sch_fq as its root qdisc for every point: every flow is paced
    assert all(f["pacing"] for *_, doc, _ in case_points(False) for f in doc["flow"])
    spec.validate(NS.sweep(True))  # every quick point is a valid scenario


def test_the_emulator_gets_only_the_kernels_controls():
    emu = NS.sweep_for(False, "emu")
    ccs = {part_key(p.name)[1] for p in emu.parts}
    assert ccs == {"cubic+bbr", "cubic", "bbr"} and emu.name == "google-nsperf-emu"
    assert NS.sweep_for(True, "sim").name == "google-nsperf-quick"


def _tiny(quick_points, keep, duration):
    parts = []
    for case, cc, x, doc, _ in quick_points:
        if (case, cc, x) in keep:
            d = copy.deepcopy(doc)
            d["duration"] = duration
            parts.append(spec.Part(f"{case}:{cc}:{x}", d))
    return spec.Sweep("google-nsperf-tiny", parts)


def test_a_tiny_subset_in_the_simulator_has_nsperfs_shape_and_obeys_physics(tmp_path):
    keep = {("random_loss", "cubic", "1"), ("random_loss", "bbr", "1"), ("random_loss", "bbr3", "0.1"),
            ("coexist", "cubic+bbr3", "1"), ("ecn_bulk", "dctcp", "10"), ("shallow", "bbr", "10")}
    sw = _tiny(case_points(True), keep, "4s")
    rep = sweep.run(sw, str(tmp_path), progress=False, jobs=1)
    assert not rep.failed and rep.ran == len(keep)
    st = Store(str(tmp_path))
    tab = NS.table(st)
    assert len(tab) == len(keep) and set(tab["case"]) == {"random_loss", "coexist", "ecn_bulk", "shallow"}
    assert set(tab["engine"]) == {"sim"}
    # physics: nothing delivers more than the link carries (payload: at most 1448 of every 1500 bytes)
    assert (tab["goodput_mbps"] <= tab["rate_mbps"] * 1448 / 1500 * 1.001).all()
    assert (tab["retrans_rate"] >= 0).all() and (tab["rtt_p50_ms"] > 0).all()
    g = {(r.case, r.cc, r.x): r for r in tab.itertuples()}
    # BBR ignores random loss, CUBIC halves on it: at 1 % BBR is far ahead
    assert g[("random_loss", "bbr", 1.0)].goodput_mbps > 5 * g[("random_loss", "cubic", 1.0)].goodput_mbps
    # the median RTT is never below the base RTT (100 ms; 1 ms for ecn_bulk)
    assert g[("random_loss", "bbr", 1.0)].rtt_p50_ms >= 100 and g[("ecn_bulk", "dctcp", 10.0)].rtt_p50_ms >= 1
    # DCTCP in a 242-us marking threshold: the queue stays a fraction of the 1-ms base RTT
    assert g[("ecn_bulk", "dctcp", 10.0)].rtt_p50_ms < 2
    # coexist: the second (BBRv3) flow's goodput is part of the total
    c = g[("coexist", "cubic+bbr3", 1.0)]
    assert 0 < c.second_mbps < c.goodput_mbps
    out = NS.analyze(st)
    caps = [cap for cap, _ in out["figures"]]
    assert len(caps) == 4 and all("throughput, median RTT, retransmit rate" in cap for cap in caps)
    assert all(len(fig.axes) == 3 for _, fig in out["figures"])
    claims = {c.id: c for c in NS.claims(st)}
    assert claims["goodput-within-link-rate"].verdict == "holds"
    assert claims["random-loss-bbr-beats-cubic"].verdict == "holds"
    assert claims["bufferbloat-bbr-low-delay"].verdict == "not evaluated"


def test_nsperfs_paced_cubic_in_the_shallow_buffer_loses_what_the_paced_kernel_loses():
    # nsperf paces every flow (sch_fq on the sender). shallow, 1 CUBIC flow (1 Gbit/s, 100 ms, 165-packet FIFO),
    # measured through the emulator (--quick, 10 s, 2026-11-25): the kernel paced (SO_MAX_PACING_RATE) 5029
    # retransmissions and 658 Mbit/s, unpaced 349 and 35 Mbit/s; the model over 10 s 4995 / 570 and 360 / 60.
    # Slow start's episode is all of them: the model's counts are final by 3 s.
    import bloatlab

    doc = {(c, cc, x): d for c, cc, x, d, _ in case_points(True)}[("shallow", "cubic", "1")]
    out = {}
    for paced in (True, False):
        d = copy.deepcopy(doc)
        d["duration"] = "3s"
        d["flow"][0]["pacing"] = paced
        f = bloatlab.run(d, engine="sim").summary["flows"][0]
        out[paced] = (f["retransmits"], f["goodput_mbps"])
    assert 4500 <= out[True][0] <= 5500 and 300 <= out[False][0] <= 420, out
    assert out[True][1] > 5 * out[False][1], out


def test_the_median_rtt_is_nsperfs_the_median_of_the_periodic_srtt_samples_not_of_the_per_ack_ones(tmp_path):
    # ss_log_parser.py log_rtt: the median of every srtt sample of nsperf.py's periodic `ss` snapshots, all flows
    # pooled. The runs' rtt_p50_ms is the mean of the flows' rtt_ms medians, per ACK in the model: bufferbloat CUBIC at
    # 100 BDP (--quick, 30 s) reads 1123 ms that way (the starved second flow's ACKs come late, behind the deep
    # queue), 887 ms over the pooled srtt series, and the kernel 896 ms; over the 20 s run here 706 and 576 ms.
    keep = {("bufferbloat", "cubic", "100")}
    sw = _tiny(case_points(True), keep, "20s")
    rep = sweep.run(sw, str(tmp_path), progress=False, jobs=1)
    assert not rep.failed
    st = Store(str(tmp_path))
    tab = NS.table(st)
    series = st.series("flows")
    pooled = float(series[series["srtt_ms"] > 0]["srtt_ms"].median())
    assert tab["rtt_p50_ms"].iloc[0] == pytest.approx(pooled, rel=1e-12)
    per_ack = float(st.runs["rtt_p50_ms"].iloc[0])
    assert pooled < 0.85 * per_ack, (pooled, per_ack)
    # a store without series (or a stand-in without query) keeps the runs' own rtt_p50_ms
    assert NS.srtt_p50(object()) == {}


@pytest.mark.parametrize("engine", ["sim", "emu"])
def test_the_report_names_the_model_only_controls_and_the_flagged_points(engine):
    import pandas as pd

    class Fake:
        path = "/nonexistent/google-nsperf"
        runs = pd.DataFrame([{"run_id": "a", "part": "random_loss:bbr3:1", "engine": engine, "seed": 1,
                              "duration_s": 10.0, "total_goodput_mbps": 100.0, "rtt_p50_ms": 101.0,
                              "retrans_rate": 0.01, "down_rate_mbps": 1000.0, "timing_flagged": engine == "emu"}])
        flows = pd.DataFrame([{"run_id": "a", "name": "bbr3.0", "goodput_mbps": 100.0, "bytes_delivered": 125_000_000}])

    out = NS.analyze(Fake())
    notes = dict(out["tables"]).get("what the figures leave out")
    if engine == "sim":
        assert list(notes["what"]) == ["model-only"] and "bbr3" in notes["detail"][0] and len(out["figures"]) == 1
    else:
        assert set(notes["what"]) == {"model-only", "not plotted (emulator timing flagged)"}
        assert out["figures"] == []  # its only point was flagged: nothing is drawn from it


def test_bench_nsperf_point_writes_the_experiments_point_and_refuses_an_unknown_one():
    # bench/emu/nsperf_point.py: one --quick point as a scenario file (issue 32's bisection ran these), and its
    # ensemble's members shift every flow's start and set every flow's RTT
    import os
    import subprocess
    import sys
    import tomllib

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = os.path.join(repo, "bench", "emu", "nsperf_point.py")
    r = subprocess.run([sys.executable, script, "shallow:cubic:10"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    by = {f"{c}:{cc}:{x}": doc for c, cc, x, doc, _ in case_points(True)}
    assert tomllib.loads(r.stdout) == by["shallow:cubic:10"]
    r = subprocess.run([sys.executable, script, "shallow:cubic:7"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: point: 'shallow:cubic:7'") and "Traceback" not in r.stderr
    sys.path.insert(0, os.path.dirname(script))
    try:
        from nsperf_point import member_doc
    finally:
        sys.path.pop(0)
    m = member_doc(by["shallow:cubic:10"], 99.5, 571428)
    assert [f["start"] for f in m["flow"][:2]] == ["571428ns", "139571428ns"]
    assert {f["rtt"] for f in m["flow"]} == {"99.5ms"}
