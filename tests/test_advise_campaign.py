"""The advisor's campaign (issue 30 §1), in its 5-path form: random true
paths, each emulated, measured, advised and checked on the kernel. The full
campaign (its goals over hundreds of paths) is in `make bench`
(BENCHMARKS.md); here the pipeline runs whole on a seed no threshold was
derived from, and what must hold on every path is held:

- the measured base RTT within 5 % or 1 ms of the truth (the issue's goal is
  98 % of paths; the idle phase's 300 probes see the emulator's delay and the
  VM's scheduling, nothing else);
- no goodput above the physics: the kernel's below the true rate's payload
  share (1448 of 1500 B) and the twin's below the measured rate's;
- the advice's sentences say what their numbers show (§2): no negative
  percentage, a "cut" is a fall;
- the records, campaign.json and the report are complete, and a second run
  resumes (measures nothing again)."""

import json
import os
import re

import pytest

from bloatlab.advise import campaign
from bloatlab.advise.path import HT20_MCS_MBPS
from bloatlab.errors import UserError
from conftest import run_cli

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                                reason="the campaign emulates its paths: root and /dev/net/tun")
PAYLOAD = 1448 / 1500


def test_the_draw_is_seeded_and_stays_in_the_documented_ranges():
    a, b = campaign.draw(200, 3), campaign.draw(200, 3)
    assert a == b and campaign.draw(5, 4) != a[:5]
    assert {p["limiter"] for p in a} == set(campaign.TRUE_LIMITERS)
    for p in a:
        assert 1 <= p["port_mbps"] <= 1000 and 2 <= p["base_rtt_ms"] <= 600
        assert p["up_mbps"] >= campaign.MIN_UP_MBPS * 0.999999 and p["up_port_mbps"] <= max(p["port_mbps"], campaign.MIN_UP_MBPS / 0.1)
        assert p["down_mbps"] * 1e6 * p["base_rtt_ms"] / 8e3 <= campaign.MAX_BDP_BYTES
        assert p["loss"] == 0 or 0.0005 <= p["loss"] <= 0.03
        if p["limiter"] in ("policer", "shaper"):
            assert 0.10 <= p["cir_fraction"] <= 0.95 and 1 <= p["bucket_ms"] <= 100
            assert p["down_mbps"] == pytest.approx(p["port_mbps"] * p["cir_fraction"])
        if p.get("variable"):
            # a FIFO path whose capacity follows a model's trace (its median the port rate); its rate the trace's mean
            assert p["limiter"] == "fifo" and p["variable"] in campaign.VARIABLE_MODELS and p["port_mbps"] <= 200
            down = campaign.truth_doc(p, 5, "cubic", "autorate", autorate={"min_mbps": 2, "base_mbps": 3, "max_mbps": 5})["link"]["down"]
            assert down["rate"].startswith("trace:") and down["autorate"] == {"min": "2Mbit", "base": "3Mbit", "max": "5Mbit"}
            assert campaign.truth_doc(p, 5)["link"]["down"]["rate"] == down["rate"]
            # the recommended CAKE at a fixed rate: min = base = max, below 2 Mbit/s with cake-autorate's
            # connection-active threshold at that rate (it was raised to 2 Mbit/s: seed 84 paths 38 and 51 judged
            # the kernel at 2 for a CAKE advised at 1.48 and 1.34)
            for r, extra in ((1.337, {"active_threshold": "1.337Mbit"}), (4.5, {})):
                fixed = campaign.truth_doc(p, 5, "cubic", "cake", r)["link"]["down"]["autorate"]
                assert fixed == {"min": f"{r:g}Mbit", "base": f"{r:g}Mbit", "max": f"{r:g}Mbit"} | extra
        if p["limiter"] in ("fifo", "shaper", "pie") and not p.get("variable"):
            # cake-autorate advised where the capacity read variable but is fixed (a WiFi hop in front, seed 90 path
            # 30): its CAKE in front of the true bottleneck, which stays (the kernel ran the path as it was)
            as_is = campaign.truth_doc(p, 5)["link"]["down"]
            down = campaign.truth_doc(p, 5, "cubic", "autorate", autorate={"min_mbps": 2, "base_mbps": 3, "max_mbps": 5})["link"]["down"]
            assert down == as_is | {"autorate": {"min": "2Mbit", "base": "3Mbit", "max": "5Mbit"}}
        if p["limiter"] == "wifi":
            # the station's PHY rate at its MCS; its rate what the model's MAC delivers (~3/4 of it); no random loss
            assert p["wifi_mac"] in ("legacy", "fq", "airtime") and 0 <= p["mcs"] <= 15 and p["loss"] == 0
            o = p.get("wifi_others")
            # alone, ~3/4 of the PHY; beside other busy stations (1 or 2, each a download at its MCS) less
            assert p["port_mbps"] == HT20_MCS_MBPS[p["mcs"]] and (0.6 if not o else 0.02) < p["down_mbps"] / p["port_mbps"] < 0.9
            # up, what the MAC delivers to four uploads: a lone station's within the spread one medium gives both
            # ways (wifi_hop.up_through_the_hop); beside busy stations its uplink contends as a node of its own
            assert p["up_mbps"] != p["down_mbps"] and (0.97 < p["up_mbps"] / p["down_mbps"] < 1.04 if not o else
                                                       p["up_mbps"] == campaign._wifi_rate(p, "up"))
            doc = campaign.truth_doc(p, 5, "bbr", "airtime", neighbour=True)
            assert "link" not in doc and doc["wifi"]["mac"] == "airtime" and doc["flow"][0]["station"] == "you"
            # the bulk flow and its neighbour first (what the figures read), the other stations' downloads last
            assert [f["name"] for f in doc["flow"]] == ["bulk", "neighbour"] + (["others"] if o else [])
            if o:
                assert o["count"] in (1, 2) and 0 <= o["mcs"] <= 15
                assert doc["wifi"]["station"][1] == {"name": "others", "phy_rate": f"mcs{o['mcs']}", "count": o["count"]}
            # a wired shaper advised for a hop read as wired cannot go before the access point: the AP as it is, marked
            doc = campaign.truth_doc(p, 5, "bbr", "cake", p["down_mbps"] * 0.95)
            assert doc["wifi"]["mac"] == p["wifi_mac"] and doc["description"].startswith("approximated")
    assert 0.15 <= sum(p["loss"] > 0 for p in a) / len(a) <= 0.35  # a quarter of the paths
    wifi = [p for p in a if p["limiter"] == "wifi"]
    assert 0.25 <= sum(bool(p.get("wifi_others")) for p in wifi) / len(wifi) <= 0.75  # half the WiFi hops shared
    fifo = [p for p in a if p["limiter"] == "fifo" and p["port_mbps"] <= 200]
    assert 0.25 <= sum(bool(p["variable"]) for p in fifo) / len(fifo) <= 0.75  # half the FIFO paths up to 200 Mbit/s
    # a WiFi hop in front of a quarter of the wired paths whose line an MCS can outrun twice (docs/wifi.md "The
    # AP's line"): its station's PHY at least twice the line's down rate, so the line holds the queue
    can = [p for p in a if p["limiter"] != "wifi" and 2 * p["down_mbps"] <= HT20_MCS_MBPS[15]]
    front = [p for p in a if p.get("wifi_front")]
    assert all(p in can for p in front) and 0.1 <= len(front) / len(can) <= 0.4
    for p in front:
        wf = p["wifi_front"]
        assert wf["mac"] in ("legacy", "fq", "airtime") and HT20_MCS_MBPS[wf["mcs"]] >= campaign.WIFI_FRONT_PHY_OVER * p["down_mbps"]
        doc = campaign.truth_doc(p, 5, "bbr", "cake", p["down_mbps"] * 0.95)
        # the line as without the hop (the user's shaper on it), the AP in front with its one station
        assert doc["wifi"]["station"] == [{"name": "you", "phy_rate": f"mcs{wf['mcs']}"}]
        assert doc["link"]["down"]["qdisc"] == "cake" or (p["variable"] and "autorate" in doc["link"]["down"])


def test_the_true_path_with_the_users_shaper_keeps_a_policer_only_when_the_shaper_exceeds_it():
    t = next(p for p in campaign.draw(100, 5) if p["limiter"] == "policer")
    below = campaign.truth_doc(t, 5, "cubic", "cake", t["down_mbps"] * 0.9)
    above = campaign.truth_doc(t, 5, "cubic", "cake", t["down_mbps"] * 1.1)
    assert "policer" not in below["link"]["down"] and below["link"]["down"]["qdisc"] == "cake"
    assert "policer" in above["link"]["down"] and "approximated" in above["description"]
    assert "policer" in campaign.truth_doc(t, 5)["link"]["down"]


def test_advise_campaign_refuses_an_experiment_and_bad_counts(tmp_path):
    r = run_cli("fidelity", "--advise", "--paths", "0", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--paths" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("fidelity", "exp.toml", "--advise", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--advise" in r.stderr


@needs_root
def test_a_five_path_campaign_through_the_emulator(tmp_path):
    out = str(tmp_path / "camp")
    # one kernel run judges each prediction here (the campaign's three: a unit test below; each run is real time)
    r = run_cli("fidelity", "--advise", "--paths", "5", "--seed", "20261125", "--quick", "--judge-repeats", "1",
                "--out", out, "--json", timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    recs = doc["paths"]
    assert len(recs) == 5 and not [x for x in recs if "failed" in x], [x.get("failed") for x in recs]
    with open(os.path.join(out, "campaign.json")) as f:
        assert [x["index"] for x in json.load(f)] == list(range(5))
    assert os.path.getsize(os.path.join(out, "report.html")) > 10_000
    for x in recs:
        t, m = x["truth"], x["measured"]
        for part in ("truth", "measured"):
            assert {"limiter", "down_mbps", "base_rtt_ms"} <= set(x[part])
        for part in ("predicted", "kernel"):
            assert {"goodput_mbps", "p95_rtt_ms"} <= set(x[part])
        assert abs(m["base_rtt_ms"] - t["base_rtt_ms"]) <= max(1.0, 0.05 * t["base_rtt_ms"]), (t, m)
        assert x["kernel"]["goodput_mbps"] <= t["down_mbps"] * PAYLOAD * 1.02, x
        assert x["predicted"]["goodput_mbps"] <= m["down_mbps"] * PAYLOAD * 1.02, x
        for s in x["advice"]["reasons"]:
            assert not re.search(r"-\d[\d.]* ?%", s), s
            for a, b in re.findall(r"cuts the p95 RTT under load from (\d+(?:\.\d+)?) ms to (\d+(?:\.\d+)?) ms", s):
                assert float(b) < float(a), s
    assert doc["summary"]["paths"] == 5 and doc["summary"]["code"] == {campaign.code_version(): 5}
    # a second run resumes: nothing is measured again, the same records come back
    r2 = run_cli("fidelity", "--advise", "--paths", "5", "--seed", "20261125", "--quick", "--judge-repeats", "1",
                 "--out", out, "--json", timeout=120)
    assert r2.returncode == 0 and json.loads(r2.stdout)["paths"] == recs
    r3 = run_cli("fidelity", "--advise", "--paths", "5", "--seed", "7", "--out", out, timeout=60)
    assert r3.returncode == 2 and "seed" in r3.stderr


def test_rank_scores_the_kernels_runs_as_advise_scores_them(monkeypatch):
    """--rank's arithmetic on made-up kernel runs: every candidate this kernel
    has runs alone and beside CUBIC; the recommendation's regret is the best
    kernel score minus its own, by advise's own scoring."""
    import bloatlab

    figures = {  # (cc, queue) -> goodput alone, probe p95, neighbour's goodput beside it
        ("cubic", "as-is"): (18.0, 200.0, 9.0), ("bbr", "as-is"): (19.0, 60.0, 3.0),
        ("cubic", "cake"): (17.0, 41.0, 8.5), ("bbr", "cake"): (17.5, 41.0, 8.0)}

    class R:
        def __init__(self, s):
            self.summary = s

    def fake_run(doc, engine):
        assert engine == "emu"
        cc = doc["flow"][0]["cc"]
        down = doc["link"]["down"]
        shaped = "shaper" in down or "bandwidth" in down.get("qdisc_params", {})  # fq_codel's bucket, CAKE's own
        queue = down["qdisc"] if shaped else "as-is"
        g, p95, nb = figures[(cc, queue)]
        flows = [{"goodput_mbps": g, "retrans_rate": 0.0}]
        if len(doc["flow"]) == 2:
            flows = [{"goodput_mbps": g - nb, "retrans_rate": 0.0}, {"goodput_mbps": nb, "retrans_rate": 0.0}]
        return R({"flows": flows, "probes": [{"rtt_ms": {"p95": p95}}], "links": {"down": {"qdelay_ms": None}}})

    t = next(p for p in campaign.draw(50, 9) if p["limiter"] == "fifo")  # (a WiFi path's draw runs the model)
    monkeypatch.setattr(bloatlab, "run", fake_run)
    t["base_rtt_ms"] = 40.0
    alts = [{"cc": cc, "queue": q, "shaper_mbps": None if q == "as-is" else 19.0, "paced": False} for cc, q in figures]
    alts.append({"cc": "bbr3", "queue": "as-is", "shaper_mbps": None, "paced": False})  # not this kernel's: left out
    adv = {"alternatives": alts, "recommendation": {"cc": "cubic", "qdisc": "cake", "shaper_mbps": 19.0}}
    out = campaign.rank(t, 5.0, adv)
    assert len(out["candidates"]) == 4
    by = {(c["cc"], c["queue"]): c["score"] for c in out["candidates"]}
    assert out["recommended_score"] == by[("cubic", "cake")]
    assert out["best_score"] == max(by.values()) and out["regret"] == pytest.approx(out["best_score"] - by[("cubic", "cake")])
    # balanced goal: CUBIC behind CAKE (41 ms, a fair share) beats BBR as-is (60 ms, the neighbour starved)
    assert out["best"] == "cubic + cake" and out["regret"] == 0
    assert out["repeats"] == 1

    # with repeats each figure is the median of the kernel's runs (seeds 1..N): a third run whose CUBIC neighbour
    # got a quarter of the link (seed 26 path 6's kind of draw) no longer decides the ranking
    seeds = []

    def noisy_run(doc, engine):
        seeds.append(doc["seed"])
        r = fake_run(doc, engine)
        if doc["seed"] == 3 and len(doc["flow"]) == 2:
            g = sum(f["goodput_mbps"] for f in r.summary["flows"])
            r.summary["flows"] = [{"goodput_mbps": 0.75 * g, "retrans_rate": 0.0}, {"goodput_mbps": 0.25 * g, "retrans_rate": 0.0}]
        return r

    monkeypatch.setattr(bloatlab, "run", noisy_run)
    adv_bbr = adv | {"recommendation": {"cc": "bbr", "qdisc": "cake", "shaper_mbps": 19.0}}
    out3 = campaign.rank(t, 5.0, adv_bbr, repeats=3)
    assert sorted(set(seeds)) == [1, 2, 3] and out3["repeats"] == 3
    assert [c["score"] for c in out3["candidates"]] == [c["score"] for c in out["candidates"]]
    bbr = next(c for c in out3["candidates"] if (c["cc"], c["queue"]) == ("bbr", "cake"))
    assert bbr["ensemble"]["runs"] == 3 and bbr["ensemble"]["neighbour_share"] == [0.25, pytest.approx(8.0 / 17.5)]
    assert bbr["neighbour_share"] == pytest.approx(8.0 / 17.5)
    # an unpaced CUBIC candidate is its CUBIC neighbour's twin: it leaves ½ whatever a run's split (recommend's
    # Candidate.share_left), so the same draw moves none of its scores; the run's own split is kept beside it
    cubic = next(c for c in out3["candidates"] if (c["cc"], c["queue"]) == ("cubic", "cake"))
    assert cubic["neighbour_share"] == 0.5 and cubic["neighbour_share_run"] == pytest.approx(8.5 / 17.0)
    assert cubic["ensemble"]["score"][0] == cubic["ensemble"]["score"][1]
    # the kernel's spread on this path is the recommended candidate's: its third run's fairness 0.5 instead of
    # 8 / 17.5 / ½ (x 0.15, the balanced goal's weight); the candidates within it of the best ran three times,
    # the others once
    assert out3["spread"] == pytest.approx(0.15 * (8.0 / 17.5 / 0.5 - 0.5))
    runs = {(c["cc"], c["queue"]): c["ensemble"]["runs"] for c in out3["candidates"]}
    by3 = {(c["cc"], c["queue"]): c["score"] for c in out3["candidates"]}
    assert runs == {k: 3 if by3[k] >= out3["best_score"] - out3["spread"] or k == ("bbr", "cake") else 1 for k in runs}
    assert len(seeds) == sum(2 * n for n in runs.values()) < 4 * 3 * 2


def _ranked(monkeypatch, goodput: dict, repeats: int) -> dict:
    """campaign.rank on made-up kernel runs: ``goodput[(cc, queue)][seed - 1]`` the candidate's goodput alone in the
    run of that seed (its neighbour always gets half the link, the probe 50 ms at a 40-ms base RTT: only the goodput
    tells the candidates apart); the runs' seeds in ``seeds``. CUBIC behind CAKE is the recommendation."""
    import bloatlab

    class R:
        def __init__(self, s):
            self.summary = s

    seeds = []

    def fake_run(doc, engine):
        cc = doc["flow"][0]["cc"]
        down = doc["link"]["down"]
        shaped = "shaper" in down or "bandwidth" in down.get("qdisc_params", {})  # fq_codel's bucket, CAKE's own
        queue = down["qdisc"] if shaped else "as-is"
        seeds.append(((cc, queue), doc["seed"]))
        g = goodput[(cc, queue)][doc["seed"] - 1]
        flows = [{"goodput_mbps": g, "retrans_rate": 0.0}]
        if len(doc["flow"]) == 2:
            flows = [{"goodput_mbps": g / 2, "retrans_rate": 0.0}, {"goodput_mbps": g / 2, "retrans_rate": 0.0}]
        return R({"flows": flows, "probes": [{"rtt_ms": {"p95": 50.0}}], "links": {"down": {"qdelay_ms": None}}})

    t = next(p for p in campaign.draw(50, 9) if p["limiter"] == "fifo")
    t["base_rtt_ms"] = 40.0
    alts = [{"cc": cc, "queue": q, "shaper_mbps": None if q == "as-is" else 19.0, "paced": False} for cc, q in goodput]
    adv = {"alternatives": alts, "recommendation": {"cc": "cubic", "qdisc": "cake", "shaper_mbps": 19.0}}
    with monkeypatch.context() as m:
        m.setattr(bloatlab, "run", fake_run)
        out = campaign.rank(t, 5.0, adv, repeats=repeats)
    out["seeds"] = seeds
    return out


def test_one_lucky_kernel_run_does_not_decide_the_ranking(monkeypatch):
    """BBR as-is's first run is its luckiest (20 Mbit/s; then 16 and 17), CUBIC behind CAKE runs 18, 18.5, 17.5.
    One run each judges the luck: BBR best by 0.45 x (1 - 18/20) = 0.045, a miss. With three runs for the
    candidates the verdict turns on, each figure their median: CUBIC behind CAKE 18 against BBR's 17, no regret.
    Reno as-is (10 Mbit/s every run) is beyond the kernel's spread of the best and runs once."""
    goodput = {("cubic", "cake"): [18.0, 18.5, 17.5], ("bbr", "as-is"): [20.0, 16.0, 17.0],
               ("reno", "as-is"): [10.0, 10.0, 10.0]}
    one = _ranked(monkeypatch, goodput, 1)
    assert one["best"] == "bbr + as-is" and one["regret"] == pytest.approx(0.45 * (1 - 18 / 20))
    three = _ranked(monkeypatch, goodput, 3)
    assert three["best"] == "cubic + cake" and three["regret"] == 0.0
    assert three["one_run"] == {"best": one["best"], "regret": one["regret"]}
    runs = {(c["cc"], c["queue"]): c["ensemble"]["runs"] for c in three["candidates"]}
    assert runs == {("cubic", "cake"): 3, ("bbr", "as-is"): 3, ("reno", "as-is"): 1}
    # BBR's runs scored against the best median goodput (18): 20/18, 16/18, 17/18 of the goodput's weight
    bbr = next(c for c in three["candidates"] if c["cc"] == "bbr")
    assert bbr["ensemble"]["score"] == [pytest.approx(three["best_score"] - 0.45 * 2 / 18),
                                        pytest.approx(three["best_score"] + 0.45 * 2 / 18)]
    assert three["spread"] == pytest.approx(0.45 * 4 / 18)


def test_a_candidate_within_the_kernels_spread_of_the_best_runs_again(monkeypatch):
    """Reno behind CAKE's one run (17.5) is below the best's median (CUBIC behind CAKE, 18) by less than the
    spread the re-run candidates showed (BBR: 16-20 Mbit/s), so more runs could make it the best: it runs three
    times too, and its later runs (19, 19) make it the best by 0.45 x 1/19 = 0.024 — a miss the one-run judge
    had not seen either. A candidate beyond the spread (Reno as-is) runs once."""
    goodput = {("cubic", "cake"): [18.0, 18.5, 17.5], ("bbr", "as-is"): [20.0, 16.0, 17.0],
               ("reno", "cake"): [17.5, 19.0, 19.0], ("reno", "as-is"): [10.0, 10.0, 10.0]}
    one = _ranked(monkeypatch, goodput, 1)
    assert one["best"] == "bbr + as-is"
    three = _ranked(monkeypatch, goodput, 3)
    runs = {(c["cc"], c["queue"]): c["ensemble"]["runs"] for c in three["candidates"]}
    assert runs == {("cubic", "cake"): 3, ("bbr", "as-is"): 3, ("reno", "cake"): 3, ("reno", "as-is"): 1}
    assert three["best"] == "reno + cake" and three["regret"] == pytest.approx(0.45 * (1 - 18 / 19))
    assert sorted(s for k, s in three["seeds"] if k == ("reno", "as-is")) == [1, 1]


def test_the_recommended_candidate_is_the_one_advise_named(monkeypatch):
    """On a variable path CAKE runs at two rates (the capacity's p10 and its median): the verdict judges the rate
    advise recommended, not the first CAKE of the list."""
    from bloatlab.advise.recommend import Candidate

    cands = [Candidate("cubic", "cake", 20.34), Candidate("cubic", "cake", 21.264), Candidate("cubic", "as-is", None)]
    adv = {"recommendation": {"cc": "cubic", "qdisc": "cake", "shaper_mbps": 21.264, "sysctl": {}}}
    assert campaign._recommended(cands, adv) is cands[1]
    adv = {"recommendation": {"cc": "cubic", "qdisc": "pfifo_fast", "shaper_mbps": None, "sysctl": {}}}
    assert campaign._recommended(cands, adv) is cands[2]
    # today's unpaced CUBIC beside the paced one the host with fq gets: the paced one is recommended
    cands = [Candidate("cubic", "as-is", None, False), Candidate("cubic", "as-is", None, True)]
    adv = {"recommendation": {"cc": "cubic", "qdisc": "fq", "shaper_mbps": None, "sysctl": {"net.core.default_qdisc": "fq"}}}
    assert campaign._recommended(cands, adv) is cands[1]


def test_rank_repeats_is_bounded_and_needs_rank(tmp_path):
    r = run_cli("fidelity", "--advise", "--paths", "2", "--rank-repeats", "10", "--rank", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--rank-repeats: expected 1..9, got 10" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("fidelity", "--advise", "--paths", "2", "--rank-repeats", "3", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "without --rank" in r.stderr
    r = run_cli("fidelity", "--advise", "--paths", "2", "--rank-paths", "1", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--rank-paths: ranks nothing without --rank" in r.stderr
    r = run_cli("fidelity", "--advise", "--paths", "2", "--rank", "--rank-paths", "3", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--rank-paths: expected 1..2 (--paths), got 3" in r.stderr and "Traceback" not in r.stderr


def test_judge_repeats_is_bounded(tmp_path):
    r = run_cli("fidelity", "--advise", "--paths", "2", "--judge-repeats", "0", "--out", str(tmp_path / "c"))
    assert r.returncode == 2 and "--judge-repeats: expected 1..9, got 0" in r.stderr and "Traceback" not in r.stderr


def test_the_prediction_is_judged_against_the_median_of_the_kernels_runs(monkeypatch):
    """The kernel's one run is one draw (seed 33 path 11: 22.99 Mbit/s in the campaign, 25.27, 26.78, 24.85 when run
    again): with repeats each figure is the median over seeds 1..N of the runs the emulator's timing held, every run
    kept; the first run alone is still scored beside it (pred_goodput_one_run)."""
    import bloatlab
    from bloatlab.engines import emu

    goodput = {1: 22.99, 2: 25.27, 3: 26.78}
    p95 = {1: 82.9, 2: 82.8, 3: 83.0}
    seeds = []

    class R:
        def __init__(self, s):
            self.summary = s

    def fake_run(doc, engine):
        assert engine == "emu"
        seeds.append(doc["seed"])
        return R({"flows": [{"goodput_mbps": goodput[doc["seed"]], "retrans_rate": 0.001}],
                  "probes": [{"rtt_ms": {"p95": p95[doc["seed"]]}}]})

    t = next(p for p in campaign.draw(50, 9) if p["limiter"] == "fifo")  # (a WiFi path's draw runs the model)
    monkeypatch.setattr(bloatlab, "run", fake_run)
    k = campaign._kernel(t, 5.0, "cubic", "fq_codel", 37.0, repeats=3)
    assert seeds == [1, 2, 3]
    assert k["goodput_mbps"] == 25.27 and k["p95_rtt_ms"] == 82.9 and not k["timing_flagged"]
    assert [r["goodput_mbps"] for r in k["runs"]] == [22.99, 25.27, 26.78]
    monkeypatch.undo()  # errors() reads the truth through the model
    rec = {"truth": t, "measured": {"limiter": "fifo", "down_mbps": t["down_mbps"], "base_rtt_ms": t["base_rtt_ms"],
                                    "buffer_bytes": None, "loss": 0.0},
           "predicted": {"goodput_mbps": 26.81, "p95_rtt_ms": 82.6}, "predicted_today": {"goodput_mbps": 1.0, "p95_rtt_ms": 1.0},
           "kernel": k, "kernel_today": {"goodput_mbps": 1.0, "p95_rtt_ms": 1.0}}
    e = campaign.errors(rec)
    assert e["pred_goodput"] == pytest.approx(26.81 / 25.27 - 1)  # within 15 %: +6.1 %
    assert e["pred_goodput_one_run"] == pytest.approx(26.81 / 22.99 - 1)  # one draw: +16.6 %, a miss
    # a run the emulator's timing did not hold through its tries is left out of the median
    monkeypatch.setattr(bloatlab, "run", fake_run)
    monkeypatch.setattr(emu, "timing_flagged", lambda s: s["flows"][0]["goodput_mbps"] == 26.78)
    seeds.clear()
    k = campaign._kernel(t, 5.0, "cubic", "fq_codel", 37.0, repeats=3)
    assert k["goodput_mbps"] == pytest.approx((22.99 + 25.27) / 2) and not k["timing_flagged"]
    assert len(seeds) == 2 + campaign.KERNEL_TRIES  # seed 3 tried KERNEL_TRIES times
    # one run (the default before JUDGE_REPEATS): its own figures, no runs kept
    monkeypatch.setattr(emu, "timing_flagged", lambda s: False)
    k1 = campaign._kernel(t, 5.0, "cubic", "fq_codel", 37.0)
    assert k1["goodput_mbps"] == 22.99 and "runs" not in k1


def test_a_record_carries_the_commit_that_last_changed_the_code_it_ran():
    """The goals are judged over paths of one code version: each record names the last commit that changed this
    checkout's python/ or crates/ (12 hex digits, ``+dirty`` where those files differ from it): a commit of
    figures or prose alone (BENCHMARKS.md) is the same code, so a campaign resumed across one stays one version."""
    import subprocess

    here = os.path.dirname(campaign.__file__)
    top = subprocess.run(["git", "-C", here, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    v = campaign.code_version()
    if top.returncode != 0:
        from bloatlab import __version__

        assert v == __version__
        return
    root = top.stdout.strip()
    last = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h", "--abbrev=12", "--", "python", "crates"],
                          capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{12}(\+dirty)?", v) and v.startswith(last), v
    # a commit that changed only the benchmarks' figures is not the code's
    docs_only = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h", "--abbrev=12", "--", "BENCHMARKS.md"],
                               capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", root, "show", "--name-only", "--format=", docs_only],
                             capture_output=True, text=True).stdout.split()
    if changed == ["BENCHMARKS.md"]:
        assert not v.startswith(docs_only)


#: seed 7's path 10 (the campaign record's ``truth``, 2026-11-25): PIE at 45.4 Mbit/s, 310 ms, 0.058 % random loss
SEED7_PATH10 = {"index": 10, "limiter": "pie", "port_mbps": 45.39201510821714, "up_port_mbps": 3.898106350351102,
                "down_mbps": 45.39201510821714, "up_mbps": 3.898106350351102, "base_rtt_ms": 309.7035037480877,
                "buffer_bdp": 2.023966629702281, "buffer_bytes": 3556632, "cir_fraction": None, "bucket_ms": None,
                "loss": 0.0005843077091174972, "observable": "aqm", "variable": None, "redraws_before_all": 0}


def test_the_model_on_the_true_path_is_the_median_of_members_over_seeds_and_start_phases(monkeypatch):
    """Each member its own seed (1..7) and the flow's start at members_of's phase within one jiffy, at the true RTT;
    each figure the members' median, the goodput's and p95's least and most kept; the kernel's run inside that
    range (15 % either side) is what errors() calls model_goodput_in_range."""
    import bloatlab

    from bloatlab.advise.recommend import members_of

    seen = []
    goodputs = {1: 1.3, 2: 9.9, 3: 2.5, 4: 3.6, 5: 10.1, 6: 7.6, 7: 11.0}

    class R:
        def __init__(self, s):
            self.summary = s

    def fake_run(doc, engine):
        assert engine == "sim"
        seen.append((doc["seed"], doc["flow"][0].get("start"), doc["flow"][0]["rtt"]))
        return R({"flows": [{"goodput_mbps": goodputs[doc["seed"]], "retrans_rate": doc["seed"] / 1000}],
                  "probes": [{"rtt_ms": {"p95": 300.0 + doc["seed"]}}]})

    monkeypatch.setattr(bloatlab, "run", fake_run)
    m = campaign._model(SEED7_PATH10, 15, "cubic", "fq_codel", 41.917325)
    starts = [f"{s}ns" if s else None for _, s in members_of(SEED7_PATH10["base_rtt_ms"], 7)]
    assert sorted(seen) == sorted(zip(range(1, 8), starts, ["309.704ms"] * 7))
    assert len(set(starts)) == 7  # seven phases, the middle member's 0 (no start key)
    assert m["goodput_mbps"] == 7.6 and m["p95_rtt_ms"] == 304.0 and m["retrans_rate"] == 0.004
    assert m["ensemble"] == {"members": 7, "goodput_mbps": [1.3, 11.0], "p95_rtt_ms": [301.0, 307.0]}
    rec = {"truth": SEED7_PATH10, "measured": {"limiter": "aqm", "down_mbps": 44.1, "base_rtt_ms": 309.75, "buffer_bytes": None,
                                               "loss": 0.0},
           "predicted": {"goodput_mbps": 19.9, "p95_rtt_ms": 310.3}, "predicted_today": {"goodput_mbps": 28.5},
           "kernel": {"goodput_mbps": 8.37, "p95_rtt_ms": 310.1}, "kernel_today": {"goodput_mbps": 9.85}, "model_truth": m}
    e = campaign.errors(rec)
    assert e["model_goodput"] == pytest.approx((7.6 - 8.37) / 8.37) and e["model_goodput_in_range"] is True
    rec["kernel"]["goodput_mbps"] = 12.7  # above 1.15 x 11.0
    assert campaign.errors(rec)["model_goodput_in_range"] is False
    # a fast path's members fit advise's packet budget (60 M packets): 1000 Mbit/s for 120 s gets 5 (7 would move 70 M)
    seen.clear()
    fast = dict(SEED7_PATH10, down_mbps=1000.0, port_mbps=1000.0)
    assert campaign._model(fast, 120, "cubic", "as-is", None)["ensemble"]["members"] == 5 and len(seen) == 5


def test_the_models_members_on_a_lossy_long_path_draw_different_losses_and_hold_the_kernels_run():
    """Seed 7's path 10, the recommended CUBIC behind fq_codel shaped at 41.9 Mbit/s, 15 s: where the random loss
    (0.058 %) first strikes a 310-ms slow start decides the run. The model over 40 seeds: 3.11-14.8 Mbit/s, median
    10.0; the kernel's 32 runs 3.2-14.8, median 10.3 (docs/fidelity.md); its campaign run gave 8.37, which one seed's
    run (1.31 on the loss stream of 2026-11-25) called an engine miss of -84 %. The members' own seeds spread them
    (seeds 1-7: 8.45-13.27 on the shared loss stream) where one seed's members, moved only in RTT and start phase,
    stay within 16 % (8.45-9.77)."""
    m = campaign._model(SEED7_PATH10, 15, "cubic", "fq_codel", 41.917325)
    lo, hi = m["ensemble"]["goodput_mbps"]
    assert m["ensemble"]["members"] == 7 and lo < 0.75 * hi  # the loss draws differ between members
    assert 0.85 * lo <= 8.37 <= 1.15 * hi
    # no member beyond the shaper's payload rate
    assert hi <= 41.917325 * 1448 / 1500


def test_a_policers_bucket_port_and_port_fifo_are_judged_against_the_truth_the_campaign_built():
    """Seed 25, path 0 (2026-11-26): a 0.80-Mbit/s policer, bucket 95.9 ms (9607 B as the true path's scenario
    has it), on a 3.04-Mbit/s port with a 3000-B FIFO; measure read 10 046 B, 3.033 Mbit/s and 5211 B."""
    t = {"limiter": "policer", "observable": "policer", "down_mbps": 0.8016147974152437, "port_mbps": 3.0350349718735665,
         "bucket_ms": 95.87919031308917, "buffer_bytes": 3000, "base_rtt_ms": 6.88, "loss": 0.0}
    assert int(campaign.truth_bucket_bytes(t)) == 9607
    m = {"limiter": "policer", "down_mbps": 0.649, "base_rtt_ms": 7.02, "buffer_bytes": None, "loss": 0.0,
         "bucket_bytes": 10046, "port_mbps": 3.0334793742993766, "port_buffer_bytes": 5211}
    k = {"goodput_mbps": 0.52, "p95_rtt_ms": 10.1}
    rec = {"truth": t, "measured": m, "predicted": dict(k), "kernel": k, "predicted_today": k, "kernel_today": k}
    e = campaign.errors(rec)
    assert e["policer_bucket"] == pytest.approx(10046 / (0.8016147974152437e6 / 8 * 0.09587919031308917) - 1)
    assert e["policer_port"] == pytest.approx(-0.0005, abs=1e-4) and e["policer_port_buffer"] == pytest.approx(5211 / 3000 - 1)
    s = campaign.summary([dict(rec, errors=e)])
    assert (s["policer_bucket"]["met"], s["policer_port"]["met"], s["policer_port_buffer"]["met"]) == (1, 1, 0)
    # a tiny bucket is at least 3000 B in the true path (two packets); a FIFO reading judges none of these
    assert campaign.truth_bucket_bytes(dict(t, bucket_ms=1.0)) == 3000
    assert "policer_bucket" not in campaign.errors(dict(rec, measured=dict(m, limiter="fifo")))


def test_a_tbfs_bucket_is_judged_where_the_tbf_was_read_as_one():
    """Seed 108 path 5 (2026-12-01): a tbf at 1.213 Mbit/s, its bucket 7.76 ms (3000 B, the true path's least), on a
    2.17-Mbit/s port, a 3000-B queue; measure read a FIFO behind a 2866-B bucket (5226 before the queue was taken
    out of the paced head's bytes)."""
    t = {"limiter": "shaper", "observable": "fifo", "down_mbps": 1.2127992093444997, "port_mbps": 2.1672753855788596,
         "bucket_ms": 7.756008826727489, "buffer_bytes": 3000, "base_rtt_ms": 69.8, "loss": 0.0}
    m = {"limiter": "fifo", "down_mbps": 1.2128, "base_rtt_ms": 69.86, "buffer_bytes": 3715, "loss": 0.0,
         "bucket_bytes": 2866, "port_mbps": 2.1689}
    k = {"goodput_mbps": 0.85, "p95_rtt_ms": 83.3}
    rec = {"truth": t, "measured": m, "predicted": dict(k), "kernel": k, "predicted_today": k, "kernel_today": k}
    e = campaign.errors(rec)
    assert e["tbf_bucket"] == pytest.approx(2866 / 3000 - 1) and "policer_bucket" not in e
    assert campaign.summary([dict(rec, errors=e)])["tbf_bucket"]["met"] == 1
    # +75 %, the reading before, misses; a FIFO read without a bucket, or a policer reading, is no tbf's to judge
    assert campaign.summary([dict(rec, errors=campaign.errors(dict(rec, measured=dict(m, bucket_bytes=5226))))])["tbf_bucket"]["met"] == 0
    assert "tbf_bucket" not in campaign.errors(dict(rec, measured=dict(m, bucket_bytes=None)))
    assert "tbf_bucket" not in campaign.errors(dict(rec, measured=dict(m, limiter="policer")))


def test_a_flagged_kernel_run_is_run_again_and_a_judgement_flagged_through_its_tries_counts_in_no_goal():
    """The emulator's timing verdict decides whether a kernel run is the true path's: a flagged run is run again,
    at most KERNEL_TRIES times; the first unflagged counts, else the last, marked, and the prediction and ranking
    goals leave it out."""
    flag = {"meta": {"lateness": {"flagged": True}}}
    good = {"meta": {"lateness": {"flagged": False}}}
    seq = iter([[flag], [good], [flag]])
    ss, tries = campaign._unflagged(lambda: next(seq))
    assert (ss, tries) == ([good], 2)
    calls = []
    ss, tries = campaign._unflagged(lambda: calls.append(1) or [good, flag])
    assert tries == campaign.KERNEL_TRIES == 3 and len(calls) == 3 and ss == [good, flag]
    rec = {"truth": {"limiter": "fifo", "observable": "fifo", "down_mbps": 10.0, "base_rtt_ms": 20.0, "loss": 0.0,
                     "buffer_bytes": 25_000},
           "measured": {"limiter": "fifo", "down_mbps": 10.0, "base_rtt_ms": 20.0, "buffer_bytes": 25_000, "loss": 0.0},
           "predicted": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "predicted_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "kernel": {"goodput_mbps": 5.0, "p95_rtt_ms": 40.0, "timing_flagged": True, "tries": 3},
           "kernel_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "rank": {"regret": 0.1, "candidates": [{"cc": "cubic", "queue": "as-is", "ensemble": {"flagged": 1, "tries": 3}}]}}
    e = campaign.errors(rec)
    assert e["pred_goodput"] is None and e["pred_p95_rtt"] is None and "rank_regret" not in e
    s = campaign.summary([dict(rec, errors=e)])
    assert s["pred_goodput"]["of"] == 0
    # a record from before the tries were kept is judged by its one run, as it was
    old = dict(rec, kernel={k: v for k, v in rec["kernel"].items() if k != "tries"},
               rank={"regret": 0.1, "candidates": [{"cc": "cubic", "queue": "as-is", "ensemble": {"flagged": 1}}]})
    e = campaign.errors(old)
    assert e["pred_goodput"] == pytest.approx(0.8) and e["rank_regret"] == 0.1
    rec["kernel"]["timing_flagged"] = False
    assert campaign.errors(rec)["pred_goodput"] == pytest.approx(0.8)
    # today's figure in its members' range, 15 % either side, where the record kept its ensemble (seed 104 path 7:
    # 16.0 on four members, 64.4-64.6 on three; the kernel's today 64.5)
    assert "today_goodput_in_range" not in campaign.errors(rec)
    rec["predicted_today"]["ensemble"] = {"members": 7, "goodput_mbps": [16.0, 64.6]}
    rec["kernel_today"]["goodput_mbps"] = 64.5
    assert campaign.errors(rec)["today_goodput_in_range"] is True
    rec["predicted_today"]["ensemble"]["goodput_mbps"] = [16.0, 16.2]
    assert campaign.errors(rec)["today_goodput_in_range"] is False


def test_the_time_goals_are_judged_per_path_in_seconds():
    """Issue 30 §1: `measure --quick` within 20 s and a full `advise` within 60 s on each path."""
    from bloatlab.advise import campaign_report

    rec = {"truth": {"limiter": "fifo", "observable": "fifo", "down_mbps": 10.0, "base_rtt_ms": 20.0, "loss": 0.0,
                     "buffer_bytes": 25_000},
           "measured": {"limiter": "fifo", "down_mbps": 10.0, "base_rtt_ms": 20.0, "buffer_bytes": 25_000, "loss": 0.0,
                        "elapsed_s": 23.5},
           "advise_s": 12.0, "predicted": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "predicted_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "kernel": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0}, "kernel_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0}}
    e = campaign.errors(rec)
    assert (e["measure_s"], e["advise_s"]) == (23.5, 12.0)
    s = campaign.summary([dict(rec, errors=e)])
    assert (s["measure_s"]["met"], s["measure_s"]["of"], s["advise_s"]["met"]) == (0, 1, 1)
    assert campaign_report.tolerance_text("measure_s", 20.0) == "20 s"
    assert campaign_report.tolerance_text("rate", 0.10) == "10 %"


def test_the_report_says_how_long_the_judged_runs_were_and_that_measure_ran_quick():
    """The campaign always measures with `measure --quick`; its own `--quick` shortens the predicted and kernel runs
    (campaign_duration), which the report's head says in seconds, not as a bare "quick: False"."""
    from bloatlab.advise import campaign_report

    assert campaign.campaign_duration(20.0, False) == 5.0 and campaign.campaign_duration(600.0, False) == 15.0
    assert campaign.campaign_duration(600.0, True) == 5.0
    assert campaign_report._runs({"quick": False, "run_rtts": 100, "run_bounds_s": [5.0, 15.0]}) == \
        "100 base RTTs within 5-15 s"
    assert campaign_report._runs({"quick": True, "run_rtts": 100, "run_bounds_s": [3.0, 5.0]}) == \
        "100 base RTTs within 3-5 s (--quick)"
    assert campaign_report._runs({"quick": False}) == "the full lengths"  # a campaign stored before the bounds were


def test_the_report_says_what_the_distribution_did_not_draw_as_the_campaign_module_says_it(tmp_path):
    """What the distribution does not draw yet is written once, in the campaign module's docstring: the meta carries
    it and the report's caption says it (it used to say, in a copy of its own, that WiFi hops shared with other
    stations were not drawn, while seed 129 drew eight of them)."""
    from bloatlab.advise import campaign_report

    said = campaign.not_drawn()
    assert said.startswith("Not yet drawn: ") and "\n" not in said and said.endswith("the report says so.")
    # the draw does put other busy stations on WiFi hops (the docstring's fourth stream)
    assert any(p.get("wifi_others") for p in campaign.draw(60, 129))
    records = [{"index": 0, "failed": "x", "truth": campaign.draw(1, 1)[0]}]
    meta = {"paths": 1, "seed": 1, "quick": False, "distribution": "d", "goal": "balanced", "today": "cubic", "not_drawn": said}
    html = open(campaign_report.write(records, campaign.summary([]), meta, str(tmp_path / "r.html"))).read()
    assert said in html.replace("\n", " ") and "WiFi hops shared with other stations" not in html


def test_the_report_lists_the_rankings_it_got_wrong_and_the_p95_misses(tmp_path):
    """A ranked path whose pick lost more than the goal's 0.02 to the kernel's best is listed with what was advised,
    the kernel's best and the regret (ranked seed 130 path 28: CUBIC + CAKE shaped at 45.1 Mbit/s, 0.0202 below CUBIC
    as it is); a path whose p95 the twin missed by more than 25 % is among the paths it got wrong, with both p95s."""
    from bloatlab.advise import campaign_report

    rec = {"index": 28, "truth": {"limiter": "fifo", "observable": "fifo", "port_mbps": 10.0, "down_mbps": 10.0,
                                  "base_rtt_ms": 20.0, "loss": 0.0, "buffer_bytes": 25_000, "buffer_bdp": 1.0},
           "measured": {"limiter": "fifo", "down_mbps": 10.0, "base_rtt_ms": 20.0, "buffer_bytes": 25_000, "loss": 0.0,
                        "elapsed_s": 15.0},
           "advice": {"cc": "cubic", "queue": "cake", "shaper_mbps": 45.09783},
           "advise_s": 5.0, "predicted": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "predicted_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "kernel": {"goodput_mbps": 9.0, "p95_rtt_ms": 70.0}, "kernel_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
           "rank": {"best": "cubic + as-is", "regret": 0.020202841922337567, "candidates": []}}
    rec["errors"] = campaign.errors(rec)
    meta = {"paths": 1, "seed": 130, "quick": False, "distribution": "d", "goal": "balanced", "today": "cubic"}
    html = open(campaign_report.write([rec], campaign.summary([rec]), meta, str(tmp_path / "r.html"))).read()
    assert "Rankings it got wrong (the pick more than 0.02 below" in html
    assert "cubic + cake at 45.1 Mbit/s" in html and "0.020" in html and "cubic + as-is" in html
    assert "p95 RTT beyond 25 %" in html and "40 / 70" in html


def test_the_report_reads_the_time_goal_by_base_rtt_and_where_measures_time_went(tmp_path):
    """Issue 30's time goal on the report: measure --quick's seconds by base RTT band and, from measure's phases_s
    (the record's own, or a campaign's stored measure.json where the record predates them), the mean seconds a path
    in each group of phases, within and beyond the goal."""
    import json as _json

    from bloatlab.advise import campaign_report

    g = campaign_report.phase_groups({"idle": 1.0, "serialization": 1.0, "wifi_train": 0.5, "loss_stream": 2.0,
                                      "down_fill": 3.0, "up_fill": 4.0, "down_bbr": 3.5, "policer_train": 0.25,
                                      "up_aqm_train": 0.5, "early_trains": 1.0, "up_deep": 2.0, "down_other": 0.25})
    assert g == {"idle and large probes": 2.0, "WiFi train": 0.5, "loss stream": 2.0, "fills": 7.0, "deep steps": 2.0,
                 "BBR rate phases": 3.5, "packet trains": 1.75, "other": 0.25}

    def rec(i, rtt, secs, phases):
        r = {"index": i, "truth": {"limiter": "fifo", "observable": "fifo", "port_mbps": 10.0, "down_mbps": 10.0,
                                   "base_rtt_ms": rtt, "loss": 0.0, "buffer_bytes": 25_000, "buffer_bdp": 1.0},
             "measured": {"limiter": "fifo", "down_mbps": 10.0, "base_rtt_ms": rtt, "buffer_bytes": 25_000, "loss": 0.0,
                          "elapsed_s": secs},
             "advice": {"cc": "cubic", "queue": "as-is"}, "advise_s": 5.0 + i,
             "predicted": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0}, "predicted_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0},
             "kernel": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0}, "kernel_today": {"goodput_mbps": 9.0, "p95_rtt_ms": 40.0}}
        if phases is not None:
            r["measured"]["phases_s"] = phases
        r["errors"] = campaign.errors(r)
        return r

    recs = [rec(0, 10.0, 12.0, {"idle": 1.0, "down_fill": 5.0, "up_fill": 6.0}),
            rec(1, 15.0, 24.0, {"idle": 1.0, "down_fill": 5.0, "up_fill": 6.0, "up_bbr": 12.0}),
            rec(2, 300.0, 60.0, None)]
    os.makedirs(tmp_path / "paths" / "0002")
    (tmp_path / "paths" / "0002" / "measure.json").write_text(_json.dumps({"phases_s": {"idle": 2.0, "down_fill": 20.0,
                                                                                       "up_fill": 20.0, "down_bbr": 18.0}}))
    bands, where = campaign_report.time_tables(recs, str(tmp_path), 20.0)
    assert bands.to_dict("records") == [
        {"base RTT": "0-20 ms", "paths": 2, "within 20 s": 1, "median s": "18.0", "longest s": "24.0", "a BBR rate phase ran": 1},
        {"base RTT": "150 ms or more", "paths": 1, "within 20 s": 0, "median s": "60.0", "longest s": "60.0", "a BBR rate phase ran": 1}]
    rows = {r["phases"]: r for r in where.to_dict("records")}
    assert rows["fills"] == {"phases": "fills", "all (3)": "20.67", "within 20 s (1)": "11.00", "beyond 20 s (2)": "25.50"}
    assert rows["BBR rate phases"]["beyond 20 s (2)"] == "15.00" and rows["BBR rate phases"]["within 20 s (1)"] == "0.00"
    meta = {"paths": 3, "seed": 1, "quick": False, "distribution": "d", "goal": "balanced", "today": "cubic"}
    html = open(campaign_report.write(recs, campaign.summary(recs), meta, str(tmp_path / "report.html"))).read()
    assert "measure --quick within 20 s by base RTT" in html and "time went: mean seconds a path" in html
    assert "advise within 60 s on 3 of 3 paths, the longest 7.0 s" in html


def test_a_campaign_of_another_distribution_is_not_resumed(tmp_path, monkeypatch):
    """The same seed draws other paths once the draw changes (a WiFi hop in front, 2026-11-27): resuming an older
    campaign would mix two distributions, so it is refused with the reason (exit 2 at the CLI)."""
    from bloatlab.engines import emu

    monkeypatch.setattr(emu, "check", lambda: None)
    out = tmp_path / "c"
    (out / "paths").mkdir(parents=True)
    (out / "campaign-meta.json").write_text(json.dumps({"paths": 5, "seed": 1, "quick": False, "distribution": "older"}))
    with pytest.raises(UserError, match="another distribution"):
        campaign.run(5, 1, str(out), progress=False)
    assert json.loads((out / "campaign-meta.json").read_text())["distribution"] == "older"  # left as it was


def test_a_variable_truth_is_judged_over_the_stretches_of_its_capacity(monkeypatch):
    """One run-long stretch of a capacity whose levels dwell seconds is one draw of it (campaign.STRETCHES): the
    recommended configuration runs once more on each later stretch — the truth's trace begun 24, 48, 72 and 96 s
    on, wrapped around — and the twin is held beside the first stretch's judge to the median over all five."""
    import numpy as np

    import bloatlab
    from bloatlab.engines import emu

    assert campaign.stretches() == [0.0, 24.0, 48.0, 72.0, 96.0]
    t = next(p for p in campaign.draw(60, 90) if p.get("variable") == "lte")

    def per_second(trace):
        with open(trace) as f:
            ms = np.array([int(x) for x in f.read().split()])
        return np.bincount((ms - 1) // 1000, minlength=120)[:120]

    base = per_second(campaign._variable_trace(t)[0])
    later = campaign._variable_trace(dict(t, stretch_s=24.0))[0]
    assert later.endswith("-at24000.trace")
    # the same capacity begun 24 s on: each second's 1500-B opportunities those of 24 s later (the whole packets a
    # rotation's credit carries over: one at most)
    assert np.abs(per_second(later) - np.roll(base, -24)).max() <= 1
    goodput = {24.0: 4.0, 48.0: 1.0, 72.0: 6.0, 96.0: 2.5}
    traces = []

    class R:
        def __init__(self, s):
            self.summary = s

    def fake_run(doc, engine):
        assert engine == "emu" and doc["seed"] == 1
        rate = doc["link"]["down"]["rate"]
        at = next(a for a in goodput if rate.endswith(f"-at{int(a * 1000)}.trace"))
        traces.append(at)
        return R({"flows": [{"goodput_mbps": goodput[at], "retrans_rate": 0.0}],
                  "probes": [{"rtt_ms": {"p95": 10.0 * goodput[at]}}]})

    monkeypatch.setattr(bloatlab, "run", fake_run)
    monkeypatch.setattr(emu, "timing_flagged", lambda s: False)
    advice = {"cc": "cubic", "queue": "as-is", "shaper_mbps": None}
    runs = campaign.stretch_runs(t, 5.0, advice)
    assert traces == [24.0, 48.0, 72.0, 96.0] and [r["stretch_s"] for r in runs] == traces
    monkeypatch.undo()
    rec = {"truth": t, "measured": {"limiter": "fifo", "down_mbps": 3.0, "base_rtt_ms": t["base_rtt_ms"],
                                    "buffer_bytes": None, "loss": 0.0},
           "predicted": {"goodput_mbps": 3.3, "p95_rtt_ms": 30.0}, "predicted_today": {"goodput_mbps": 3.3, "p95_rtt_ms": 30.0},
           "kernel": {"goodput_mbps": 2.0, "p95_rtt_ms": 20.0}, "kernel_today": {"goodput_mbps": 2.0, "p95_rtt_ms": 20.0},
           "kernel_stretches": runs}
    e = campaign.errors(rec)
    assert e["pred_goodput"] == pytest.approx(3.3 / 2.0 - 1)  # the first stretch alone: +65 %
    assert e["pred_goodput_stretches"] == pytest.approx(3.3 / 2.5 - 1)  # median of 2, 4, 1, 6, 2.5: +32 %
    assert e["pred_p95_rtt_stretches"] == pytest.approx(30.0 / 25.0 - 1)
    # a stretch whose run stayed flagged through its tries is left out of the median
    runs[3]["timing_flagged"] = True
    assert campaign.errors(rec)["pred_goodput_stretches"] == pytest.approx(3.3 / 3.0 - 1)  # median of 2, 4, 1, 6
    # a fixed truth has no stretches
    fixed = dict(rec, truth=dict(t, variable=None))
    del fixed["kernel_stretches"]
    assert "pred_goodput_stretches" not in campaign.errors(fixed)


def test_todays_configuration_is_judged_on_as_many_kernel_runs_as_the_recommended_one(monkeypatch):
    """Today's CUBIC as is on the true path: the median of the judge's repeats (one run was one draw: seed 102 path
    44's 59.8 Mbit/s, where three more gave 8.59-8.62), and the recommended one's own runs where the advice is
    today's configuration (no second set of the same runs)."""
    calls = []
    monkeypatch.setattr(campaign, "_kernel", lambda t, dur, cc, q, shaper, **kw: calls.append((cc, q, shaper, kw)) or {"runs": kw})
    kernel = {"goodput_mbps": 9.0}
    same = {"cc": campaign.TODAY_CC, "queue": "as-is", "shaper_mbps": None, "autorate": None}
    assert campaign.judge_today({}, 5.0, same, kernel, 3) is kernel and calls == []
    for other in (dict(same, cc="bbr"), dict(same, queue="cake", shaper_mbps=19.0), dict(same, autorate={"min_mbps": 1})):
        calls.clear()
        assert campaign.judge_today({}, 5.0, other, kernel, 3) == {"runs": {"repeats": 3}}
        assert calls == [(campaign.TODAY_CC, "as-is", None, {"repeats": 3})]


def test_a_stretch_of_a_fast_variable_truth_keeps_within_the_bound_on_a_trace_file(monkeypatch, tmp_path):
    """campaign._variable_trace: seed 185 path 46 (LTE-like, 187.6 Mbit/s at the median): its trace from 0 s fits
    the loader's 16 MiB, begun 96 s in (a later stretch) it wrote 16.80 MB and the path failed; the written head
    fits wherever the stretch begins (the trace loops), and a file over the bound left in the cache is rewritten."""
    import tempfile

    from bloatlab import files, traces

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    t = {"index": 46, "limiter": "fifo", "port_mbps": 187.59046759447608, "variable": "lte", "trace_seed": 185046}
    later = dict(t, stretch_s=96.0)
    path, cap = campaign._variable_trace(later)
    assert os.path.getsize(path) <= files.TRACE_LIMIT
    assert traces.read_mahimahi(path) and cap["median_mbps"] == pytest.approx(187.6, rel=0.05)
    with open(path, "a") as f:  # what the earlier code left: over the bound
        f.write("1\n" * (files.TRACE_LIMIT // 2))
    assert campaign._variable_trace(later)[0] == path and os.path.getsize(path) <= files.TRACE_LIMIT
