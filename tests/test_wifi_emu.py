"""WiFi in the emulator (docs/wifi.md): the kernel's TCP over the core's
medium in real time, against the simulator on the same scenario. Needs root
and /dev/net/tun (skipped with the reason elsewhere; CI runs as root)."""

from __future__ import annotations

import os

import pytest

import bloatlab
from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# scenarios/wifi-anomaly.toml (2 x MCS 15 + 1 x MCS 0, CUBIC, a ping from the slow
# station every 100 ms) at 10 ms base RTT.
SCENARIO = os.path.join(ROOT, "scenarios", "wifi-anomaly.toml")
SETS = ["flow.0.rtt=10ms", "flow.1.rtt=10ms"]


def run(mac: str, engine: str = "sim", duration: str = "8s") -> dict:
    return bloatlab.run(SCENARIO, engine=engine, overrides=SETS + [f"wifi.mac={mac}", f"duration={duration}"]).summary


def ours() -> list[str]:
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith("bloatlab-emu"))
    except FileNotFoundError:
        return []


def test_the_kernels_tcp_over_the_airtime_medium_matches_the_simulator():
    # Same medium code, the kernel's CUBIC instead of the model's: the airtime
    # scheduler fixes the shares, so per-station goodput should agree closely.
    # Measured at writing: sim 29.7/29.4/1.69, emu 30.1/28.9/1.68 Mbit/s (10 s).
    # Tolerance 25 % per station and 15 % on the total: 8 s runs of CUBIC's
    # sawtooth, real-time scheduling on a shared 2-core machine.
    before = ours()
    sim = run("airtime")
    emu = run("airtime", engine="emu")
    assert ours() == before, "the emulator left namespaces behind"
    assert emu["engine"] == "emu" and [s["name"] for s in emu["stations"]] == ["fast.0", "fast.1", "slow"]
    assert emu["jain_station_airtime"] > 0.95
    for s_sim, s_emu in zip(sim["stations"], emu["stations"]):
        assert s_emu["goodput_mbps"] == pytest.approx(s_sim["goodput_mbps"], rel=0.25), (s_sim["name"], s_emu, s_sim)
    assert emu["total_goodput_mbps"] == pytest.approx(sim["total_goodput_mbps"], rel=0.15)
    assert emu["probes"][0]["rtt_ms"]["p50"] is not None
    # The medium's thread is judged as the links' are (docs/emulator.md "Timing quality"): its lateness, its
    # stalls against the scenario's shortest time scale (no links here: the 10 ms base RTT, no serialization), a verdict.
    late = emu["meta"]["lateness"]
    assert late["n"] > 1000 and late["flagged"] == bool(late["reasons"]) and isinstance(late["flagged"], bool)
    st = late["stalls"]
    assert st["threshold_ms"] == 10.0 and st["threshold_from"] == "a full packet's round trip"
    assert ("stall" in late["reasons"]) == (st["over_threshold"] > 0)
    assert all(e["direction"] == "wifi" for e in st["longest"])


def test_aql_reaches_the_emulators_medium_as_the_simulators():
    # [wifi.aql] goes through the resolved scenario to the same core code as in the simulator
    # (docs/wifi.md "AQL"): the summary carries its limits, and the kernel's TCP over the AQL medium
    # agrees with the model's as without AQL. Measured 2026-11-25 (8 s): slow station's ping p50 with
    # AQL sim 46.0 ms, emu 45.3 and 40.2 ms (without AQL both ~37 ms); asked: within 30 %, and the
    # total goodput within 15 % as in the test above.
    sets = SETS + ["wifi.mac=airtime", "duration=8s", "wifi.aql={}"]
    sim = bloatlab.run(SCENARIO, overrides=sets).summary
    emu = bloatlab.run(SCENARIO, engine="emu", overrides=sets).summary
    assert emu["wifi"]["aql"] == {"limit_low_us": 5000, "limit_high_us": 12000, "threshold_us": 24000}
    assert all(s["goodput_mbps"] > 0.5 for s in emu["stations"])
    assert emu["total_goodput_mbps"] == pytest.approx(sim["total_goodput_mbps"], rel=0.15)
    assert emu["probes"][0]["rtt_ms"]["p50"] == pytest.approx(sim["probes"][0]["rtt_ms"]["p50"], rel=0.3)


def test_legacy_in_the_kernel_shows_the_deep_queue():
    # A 1000-packet FIFO + 123 driver frames: the slow station's ping waits
    # hundreds of ms (sim: ~400 ms p50) also with the kernel's TCP.
    emu = run("legacy", engine="emu")
    assert emu["probes"][0]["rtt_ms"]["p50"] > 150
    assert emu["stations"][2]["airtime_share"] > 0.4


def test_a_shell_command_sits_on_a_station_behind_the_loaded_medium(tmp_path):
    # The scenario's three downloads load the medium (legacy: deep queues) while the
    # command pings from the slow station: its echo requests and replies cross the
    # medium as the slow station's, so they wait behind its 1000-packet FIFO and the
    # 123 driver frames: far above the 10 ms base RTT (sim, same scenario: ~400 ms p50).
    import json
    import subprocess
    import sys

    py = sys.executable
    cmd = "sleep 3; bloatlab-probe udp client $BLOATLAB_SERVER -p 5311 --interval 50ms --count 40 -i 0 --json"
    env = {**os.environ, "PATH": os.path.dirname(py) + ":" + os.environ["PATH"]}
    sets = [a for kv in SETS + ["wifi.mac=legacy"] for a in ("--set", kv)]
    r = subprocess.run([py, "-m", "bloatlab", "shell", "--scenario", SCENARIO, *sets, "--station", "slow",
                        "--server", "bloatlab-probe udp server --bind 0.0.0.0:5311", "--", "sh", "-c", cmd],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    rtt = json.loads(r.stdout)["raw"]["probes"][0]["rtt_ms"]
    assert rtt["p50"] > 100, rtt


def test_the_shell_needs_a_station_when_there_are_several(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "bloatlab", "shell", "--scenario", SCENARIO, "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: --station:"), r.stderr


def test_the_aps_line_in_series_with_the_medium_as_in_the_simulator():
    """The AP's line ([link]) in series with the medium runs on the medium's
    thread (crates/emu/src/wifi.rs): down the line's FIFO and then the AP,
    up the medium and then the line. The kernel's CUBIC through a 20-Mbit/s
    line with a 4-BDP FIFO to an MCS 15 station: measured at writing sim
    18.87 / emu 18.77 Mbit/s, the line's queueing delay mean 80.7 / 80.9 ms.
    Tolerances: goodput 10 %, the mean queueing delay 20 % (a 6-s run of
    CUBIC's sawtooth, a few cycles of it, in real time on a shared machine)."""
    doc = {"name": "wifi-behind-a-line", "duration": "6s",
           "link": {"down": {"rate": "20Mbit", "buffer": "4bdp"}, "up": {"rate": "5Mbit"}},
           "wifi": {"mac": "fq", "station": [{"name": "laptop", "phy_rate": "mcs15"}]},
           "flow": [{"cc": "cubic", "rtt": "30ms"}]}
    before = ours()
    sim = bloatlab.run(doc).summary
    emu = bloatlab.run(doc, engine="emu").summary
    assert ours() == before, "the emulator left namespaces behind"
    assert emu["engine"] == "emu" and set(emu["links"]) == {"down", "up"} and emu["stations"][0]["name"] == "laptop"
    assert emu["flows"][0]["goodput_mbps"] == pytest.approx(sim["flows"][0]["goodput_mbps"], rel=0.10)
    assert emu["links"]["down"]["qdelay_ms"]["mean"] == pytest.approx(sim["links"]["down"]["qdelay_ms"]["mean"], rel=0.20)
    assert emu["links"]["down"]["drops"] > 0 and emu["stations"][0]["qdelay_ms"]["p95"] < 2.0
