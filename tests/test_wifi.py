"""WiFi (docs/wifi.md): the [wifi] keys and their errors (exit 2 naming the
key), and whole seeded scenarios against physics and the direction of the
published Make-WiFi-Fast results. Tolerances are justified next to each
assertion; the magnitudes against the ath9k anchor are checked by
`bloatlab reproduce make-wifi-fast --check`, not here."""

import pytest

import bloatlab
from bloatlab.errors import ScenarioError
from bloatlab.scenario import load

ANOMALY = """
name = "anomaly"
duration = "{duration}"
[wifi]
mac = "{mac}"
[[wifi.station]]
name = "fast"
phy_rate = "mcs15"
count = 2
[[wifi.station]]
name = "slow"
phy_rate = "mcs0"
[[flow]]
cc = "cubic"
station = "fast"
count = 2
rtt = "20ms"
[[flow]]
cc = "cubic"
station = "slow"
rtt = "20ms"
[[probe]]
station = "slow"
interval = "20ms"
"""


def anomaly(mac: str, duration: str = "15s") -> dict:
    return bloatlab.run(ANOMALY.format(mac=mac, duration=duration)).summary


BAD = [
    ("unknown wifi key", ["wifi.colour=red"], "--set wifi.colour"),
    ("unknown mac", ["wifi.mac=turbo"], "wifi.mac"),
    ("bad phy rate", ["wifi.station.0.phy_rate=fast"], "wifi.station.0.phy_rate"),
    ("mcs out of range", ["wifi.station.1.phy_rate=mcs16"], "wifi.station.1.phy_rate"),
    ("phy rate below 1 Mbit", ["wifi.station.0.phy_rate=500Kbit"], "wifi.station.0.phy_rate"),
    ("count zero", ["wifi.station.0.count=0"], "wifi.station.0.count"),
    ("error rate of 1", ["wifi.station.0.mpdu_error=100%"], "wifi.station.0.mpdu_error"),
    ("negative weight", ["wifi.station.0.weight=-1"], "wifi.station.0.weight"),
    ("unknown station key", ["wifi.station.0.rssi=-40"], "--set wifi.station.0.rssi"),
    ("missing station", ["wifi.station.5.weight=2"], "--set wifi.station.5"),
    ("flow on an unknown station", ["flow.0.station=medium"], "flow.0.station"),
    ("probe on an unknown station", ["probe.0.station=nobody"], "probe.0.station"),
    ("bad legacy buffer", ["wifi.buffer=1bdp"], "wifi.buffer"),
    ("unknown legacy qdisc", ["wifi.qdisc=magic"], "wifi.qdisc"),
    # 1000 + 1000 + 1 stations fit the 2007 association IDs of one BSS; 1000 more do not.
    ("more stations than a BSS holds", ["wifi.station.0.count=1000", "wifi.station.1.count=1008"], "wifi.station.1.count"),
    ("aql without the airtime scheduler", ["wifi.mac=fq", "wifi.aql={}"], "wifi.aql"),
    ("zero aql limit", ["wifi.aql.limit_low=0ms"], "wifi.aql.limit_low"),
    ("negative aql limit", ["wifi.aql.limit_high=-12ms"], "wifi.aql.limit_high"),
    ("aql high limit below the low one", ["wifi.aql.limit_high=4ms"], "wifi.aql.limit_high"),
    ("aql threshold below a microsecond", ["wifi.aql.threshold=500ns"], "wifi.aql.threshold"),
    ("unknown aql key", ["wifi.aql.limit=5ms"], "wifi.aql.limit"),
    ("absurd snr", ["wifi.station.0.snr_db=150"], "wifi.station.0.snr_db"),
    ("snr below -10 dB", ["wifi.station.0.snr_db=-20"], "wifi.station.0.snr_db"),
    ("snr as text", ["wifi.station.0.snr_db=loud"], "wifi.station.0.snr_db"),
    ("unknown rate control", ["wifi.station.0.rate_control=arf"], "wifi.station.0.rate_control"),
    ("minstrel on a bit rate", ["wifi.station.0.phy_rate=144.4Mbit", "wifi.station.0.rate_control=minstrel_ht"],
     "wifi.station.0.phy_rate"),
    ("snr on a bit rate", ["wifi.station.0.phy_rate=144.4Mbit", "wifi.station.0.snr_db=20"], "wifi.station.0.phy_rate"),
    ("an 802.11b rate 802.11b lacks", ["wifi.station.1.phy_rate=dsss11"], "wifi.station.1.phy_rate"),
    ("the short preamble at 1 Mbit/s", ["wifi.station.1.phy_rate=dsss1", "wifi.station.1.preamble=short"], "wifi.station.1.preamble"),
    ("a preamble on an HT station", ["wifi.station.1.preamble=long"], "wifi.station.1.preamble"),
    ("an unknown preamble", ["wifi.station.1.phy_rate=cck11", "wifi.station.1.preamble=medium"], "wifi.station.1.preamble"),
    ("minstrel on an 802.11b station", ["wifi.station.1.phy_rate=cck11", "wifi.station.1.rate_control=minstrel_ht"],
     "wifi.station.1.phy_rate"),
    ("aql with an 802.11b station", ["wifi.station.1.phy_rate=dsss1", "wifi.aql={}"], "wifi.aql"),
    ("ht_client on an HT rate", ["wifi.station.1.ht_client=true"], "wifi.station.1.ht_client"),
    ("ht_client not a boolean", ["wifi.station.1.phy_rate=dsss1", "wifi.station.1.ht_client=maybe"], "wifi.station.1.ht_client"),
]


@pytest.mark.parametrize("what,sets,key", BAD, ids=[b[0] for b in BAD])
def test_bad_wifi_keys_name_the_key(what, sets, key):
    with pytest.raises(ScenarioError) as e:
        load(ANOMALY.format(mac="airtime", duration="1s"), sets)
    assert str(e.value).startswith(key), str(e.value)


def test_a_flow_needs_a_station_when_there_are_several():
    doc = ANOMALY.format(mac="fq", duration="1s").replace('station = "slow"\nrtt', 'rtt')
    with pytest.raises(ScenarioError, match=r"^flow.1.station: missing"):
        load(doc)


def test_a_wired_link_beside_wifi_is_the_aps_line_and_its_keys_are_checked_as_a_links():
    # the AP's line in series with the medium (docs/wifi.md "The AP's line"); a bad key names its path as anywhere
    sc = load(ANOMALY.format(mac="fq", duration="1s") + '[link.down]\nrate = "10Mbit"\n')
    r = sc.resolved()
    assert r["links"]["down"]["rate_bps"] == 10_000_000 and r["wifi"] is not None
    with pytest.raises(ScenarioError, match=r"^link\.down\.rate:"):
        load(ANOMALY.format(mac="fq", duration="1s") + '[link.down]\nrate = "fast"\n')


def test_a_station_without_wifi_is_refused():
    with pytest.raises(ScenarioError, match=r"^flow.0.station:"):
        load('duration = "1s"\n[link.down]\nrate = "10Mbit"\n[[flow]]\nrtt = "10ms"\nstation = "x"\n')


def test_the_cli_exits_2_naming_the_station_key(cli, tmp_path):
    p = tmp_path / "w.toml"
    p.write_text(ANOMALY.format(mac="fq", duration="1s"))
    r = cli("run", str(p), "--set", "wifi.station.1.phy_rate=slowish")
    assert r.returncode == 2
    assert r.stderr.startswith("error: wifi.station.1.phy_rate:"), r.stderr
    assert "Traceback" not in r.stderr


def test_count_spreads_flows_over_a_station_group():
    r = load(ANOMALY.format(mac="fq", duration="1s")).resolved()
    assert [s["name"] for s in r["wifi"]["stations"]] == ["fast.0", "fast.1", "slow"]
    assert [f["station"] for f in r["flows"]] == [0, 1, 2]
    assert r["probes"][0]["station"] == 2
    assert r["wifi"]["stations"][0]["mcs"] == 15


def test_one_station_alone_is_limited_by_its_phy_and_the_mac_overhead():
    # One CUBIC download on a 130 Mbit/s station: the MAC delivers 32-frame
    # aggregates at best (ath9k's limit, 3.1 ms), ~114 Mbit/s of IP (the core test computes the
    # closed form); TCP ACKs take some airtime back and CUBIC is not always
    # backlogged, so goodput lands between 85 and 120 Mbit/s.
    s = bloatlab.run("""
duration = "10s"
[wifi]
mac = "fq"
[[wifi.station]]
phy_rate = "mcs15"
[[flow]]
rtt = "10ms"
""").summary
    g = s["stations"][0]["goodput_mbps"]
    assert 85 < g < 120, g
    assert s["stations"][0]["airtime_share"] == pytest.approx(1.0)


def test_the_anomaly_legacy_shares_throughput_airtime_shares_airtime():
    # Seed 000 / ath9k commit 63fefa050477: per-frame turns (legacy) give the
    # slow station most of the airtime and everyone similar throughput; the
    # airtime scheduler equalises airtime (Jain over airtime near 1), the fast
    # stations gain, the slow one loses and the total rises.
    # legacy's figures swing with where its shared FIFO's losses fall (docs/wifi.md, "The kernel through the
    # same medium"): with ath9k's one list and its scheduler called per frame taken from the qdisc (wifi12) seeds
    # 1-4 give the slow station 52, 62, 70, 62 % of the airtime and legacy -> airtime x1.28, 1.62, 1.93, 1.58 in
    # total (measured 2026-11-26; without the per-frame calls seed 1 read 48 % and x1.20), so the total is judged
    # over seeds 1-3 together.
    tot_leg = tot_air = 0.0
    for seed in (1, 2, 3):
        leg = bloatlab.run(ANOMALY.format(mac="legacy", duration="15s"), seed=seed).summary
        air = bloatlab.run(ANOMALY.format(mac="airtime", duration="15s"), seed=seed).summary
        slow_leg, slow_air = leg["stations"][2], air["stations"][2]
        # the anomaly: the 6.5 Mbit/s station holds the medium — far more than the third it gets under airtime
        # fairness (the fast ones ~0.25 each)
        assert slow_leg["airtime_share"] > 0.45
        assert air["jain_station_airtime"] > 0.97  # three equal shares within a few %
        # the fast stations gain together (legacy's FIFO losses may favour one of them: seed 1 gives them 27.1 and
        # 13.7 Mbit/s under legacy, 27.0 and 26.7 under airtime, measured 2026-11-26)
        fast = lambda r: r["stations"][0]["goodput_mbps"] + r["stations"][1]["goodput_mbps"]  # noqa: E731
        assert fast(air) > fast(leg)
        assert slow_air["goodput_mbps"] < slow_leg["goodput_mbps"]
        tot_leg += leg["total_goodput_mbps"]
        tot_air += air["total_goodput_mbps"]
    assert tot_air > 1.2 * tot_leg


def test_latency_under_load_falls_by_an_order_of_magnitude_without_the_deep_driver_queue():
    # Legacy: a 1000-packet FIFO above 123 driver frames per interface; the
    # slow station's ping waits behind them (hundreds of ms). fq/airtime:
    # per-station fq_codel (target 20 ms) and two aggregates in the hardware.
    leg, fq = anomaly("legacy"), anomaly("fq")
    p_leg = leg["probes"][0]["rtt_ms"]["p50"]
    p_fq = fq["probes"][0]["rtt_ms"]["p50"]
    assert p_leg > 5 * p_fq, (p_leg, p_fq)
    assert p_fq < 100


def test_mpdu_errors_are_retried_and_cost_airtime():
    base = ANOMALY.format(mac="airtime", duration="5s")
    # ~10 % of the ~9,500 packets delivered are retried (~1,050 retries), while the retries after collisions
    # (whole aggregates) fall: retried frames make the aggregates smaller (22 instead of 30 frames). One 5-s
    # seed moves the clean run's retries by several hundred (collisions: seeds 1-6 gave 2646-3778 retries,
    # measured 2026-11-25), so the difference is summed over seeds 1-3: 835 + 1631 + 1279 with sch_fq_codel's
    # CoDel rule in the TXQs, 368 + 2134 + 280 with mac80211's (the flow's backlog, mtu 0), 1057 + 893 + 1074
    # once the airtime scheduler charges PPDUs only (ath9k); asked: > 3 x 500.
    diff, goodput = 0, [0.0, 0.0]
    for seed in (1, 2, 3):
        clean = bloatlab.run(base, seed=seed).summary
        lossy = bloatlab.run(base, set={"wifi.station.0.mpdu_error": "10%", "seed": seed}).summary
        st_clean, st_lossy = clean["stations"][0], lossy["stations"][0]
        diff += st_lossy["retries"] - st_clean["retries"]
        # Retries are invisible to TCP (no retry drops at 10 %: 30 attempts), so
        # the flow sees no extra loss, only less capacity: at most ~10 % less goodput (+ noise).
        assert st_lossy["retry_drops"] == 0
        goodput[0] += st_clean["goodput_mbps"]
        goodput[1] += st_lossy["goodput_mbps"]
    assert diff > 3 * 500, diff
    # less over the seeds, not on each: one 5-s seed's collisions move the station's goodput by more than the errors
    # do (the AP's CWmax 63, 2026-11-28: clean 21.33 / 25.47 / 23.95, lossy 21.44 / 19.53 / 21.37 Mbit/s; seeds 4-6
    # 22.80 / 24.32 / 23.81 against 21.62 / 19.80 / 17.59)
    assert goodput[1] < goodput[0], goodput


def test_minstrel_at_a_low_snr_picks_a_slower_rate_than_at_a_high_one():
    # docs/wifi.md, "Rate control": the fast stations on Minstrel-HT over MCS 0-15. At 35 dB every MCS gets
    # through and the AP's best rate ends among the two-stream 64-QAM ones, MCS 13-15 (104-130 Mbit/s: Minstrel
    # samples and its EWMA moves with the collisions; seeds 1-6 since TSO deferral: MCS 14 once, MCS 15 five
    # times); at 12 dB MCS 11 and up fail (16-QAM needs 13.6 dB) and Minstrel settles lower (MCS 4, 39 Mbit/s, on
    # seeds 1-6), with less goodput but still a working link.
    base = ANOMALY.format(mac="airtime", duration="5s")
    sets = {"wifi.station.0.rate_control": "minstrel_ht"}
    high = bloatlab.run(base, set={**sets, "wifi.station.0.snr_db": 35}).summary["stations"][0]
    low = bloatlab.run(base, set={**sets, "wifi.station.0.snr_db": 12}).summary["stations"][0]
    assert high["phy_rate_mbps"] >= 104.0, high["phy_rate_mbps"]
    assert low["phy_rate_mbps"] <= 52.0, low["phy_rate_mbps"]
    assert 0 < low["goodput_mbps"] < high["goodput_mbps"]


def test_a_seed_fixes_the_run():
    a = anomaly("airtime", "3s")
    b = anomaly("airtime", "3s")
    assert a["stations"] == b["stations"]


def test_aql_keeps_expected_airtime_below_mac80211_and_adds_its_queue_to_the_latency():
    # [wifi.aql] (docs/wifi.md "AQL"): an AQL driver's firmware queue holds up to ~12-20 ms of expected airtime
    # below fq_codel, where ath9k's two aggregates hold at most ~8 ms; the slow station's ping (p50, 15 s)
    # waits longer. Measured 2026-11-25: 46 -> 59 ms (seeds 1-4: +12 to +13 ms); asked: at least 5 ms later,
    # and still tens of ms (not legacy's hundreds).
    base, aql = anomaly("airtime"), bloatlab.run(ANOMALY.format(mac="airtime", duration="15s"), set={"wifi.aql": {}}).summary
    assert "aql" not in base["wifi"]
    assert aql["wifi"]["aql"] == {"limit_low_us": 5000, "limit_high_us": 12000, "threshold_us": 24000}
    p0, p1 = base["probes"][0]["rtt_ms"]["p50"], aql["probes"][0]["rtt_ms"]["p50"]
    assert p0 + 5 < p1 < 150, (p0, p1)


def test_an_802_11b_station_resolves_to_its_dsss_rate_and_slows_everyone_with_protection():
    # A 1 Mbit/s DSSS station (docs/wifi.md, "802.11b stations"): one 1500-B frame takes 12.8 ms
    # with its ACK, and the HT stations' frames go behind a 314-µs CTS-to-self on 20-µs slots.
    r = load(ANOMALY.format(mac="fq", duration="1s"), ["wifi.station.1.phy_rate=cck5.5",
                                                        "wifi.station.1.preamble=short"]).resolved()
    slow = r["wifi"]["stations"][2]
    assert (slow.get("mcs"), slow.get("phy_rate_bps"), slow["dsss_rate_bps"], slow["short_preamble"]) == (None, None, 5_500_000, True)
    ht = bloatlab.run(ANOMALY.format(mac="fq", duration="10s"), overrides=["wifi.station.1.phy_rate=1Mbit"]).summary
    b = bloatlab.run(ANOMALY.format(mac="fq", duration="10s"), overrides=["wifi.station.1.phy_rate=dsss1"]).summary
    tot = lambda s: sum(x["goodput_mbps"] for x in s["stations"])  # noqa: E731
    # The same 1 Mbit/s as an HT-style rate aggregates and needs no protection: the DSSS station
    # costs the BSS more than a quarter of its total (measured 2026-11-27, 10 s: 10.17 vs 19.85 Mbit/s;
    # the kernel's CUBIC over the same MAC through the emulator, seeds 1 and 2: 12.19 vs 22.05, 10.20
    # vs 21.60).
    assert tot(b) < 0.75 * tot(ht), (tot(b), tot(ht))
    slow = b["stations"][2]
    assert slow["phy_rate_mbps"] == pytest.approx(1.0)
    # Single frames: one MPDU per transmission, both ways.
    assert slow["aggregate_frames_down"] == pytest.approx(1.0)


LINE_BEHIND_WIFI = """
name = "wifi-behind-a-line"
duration = "10s"
[link.down]
rate = "{down}"
buffer = "{buffer}"
[link.up]
rate = "5Mbit"
[wifi]
mac = "fq"
[[wifi.station]]
name = "laptop"
phy_rate = "{phy}"
[[flow]]
cc = "cubic"
direction = "{direction}"
rtt = "30ms"
"""


def test_the_aps_line_in_series_with_the_medium_holds_the_queue_where_it_is_the_slower():
    """A home: the AP's line ([link], DSL or cable) in series with the WiFi
    medium ([wifi]), down the line first and then the AP, up the medium and
    then the line (docs/wifi.md "The AP's line"). The slower of the two
    holds the queue and sets the rate."""
    wire = 1448 / 1500  # a full segment's payload on the wire
    # the line (20 Mbit/s, a 4-BDP FIFO) slower than an MCS 15 station: the line's FIFO fills (CUBIC's sawtooth
    # in 4 BDP: its queue never empties, 120 ms full), the AP's queue stays empty (130 Mbit/s PHY drains 20)
    s = bloatlab.run(load(LINE_BEHIND_WIFI.format(down="20Mbit", buffer="4bdp", phy="mcs15", direction="down"))).summary
    assert 0.9 * 20 * wire < s["flows"][0]["goodput_mbps"] <= 20 * wire
    assert 40 < s["links"]["down"]["qdelay_ms"]["p50"] <= 120.1
    assert s["stations"][0]["goodput_mbps"] == pytest.approx(s["flows"][0]["goodput_mbps"])
    assert s["stations"][0]["qdelay_ms"]["p95"] < 1.0
    # an MCS 2 station (19.5 Mbit/s PHY) behind a 100 Mbit/s line: the AP's queue now (fq_codel per station holds
    # it near CoDel's 20 ms WiFi target), the line's empty but for the bursts it passes at 100 Mbit/s
    s = bloatlab.run(load(LINE_BEHIND_WIFI.format(down="100Mbit", buffer="1bdp", phy="mcs2", direction="down"))).summary
    assert s["flows"][0]["goodput_mbps"] < 19.5 * wire
    assert s["links"]["down"]["qdelay_ms"]["p50"] < 2.0 and s["stations"][0]["qdelay_ms"]["p50"] > 5.0
    # up: the medium and then the 5 Mbit/s line, whose FIFO (default 1 BDP) holds the upload's queue
    s = bloatlab.run(load(LINE_BEHIND_WIFI.format(down="20Mbit", buffer="1bdp", phy="mcs15", direction="up"))).summary
    assert 0.9 * 5 * wire < s["flows"][0]["goodput_mbps"] <= 5 * wire
    assert s["links"]["up"]["qdelay_ms"]["p95"] > 10.0
