"""The emulator: the real kernel's TCP through bloatlab's userspace link.

These tests need root and /dev/net/tun; elsewhere they are skipped with the
reason. CI runs as root, so they run there. Each keeps to a few seconds.
Every test leaves no namespace behind (checked by the `no_leftovers` fixture,
which also removes any it finds).
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")

PY = sys.executable
SCEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios", "fidelity")


def ours() -> list[str]:
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith("bloatlab-emu"))
    except FileNotFoundError:
        return []


def stale() -> list[str]:
    """Our namespaces whose slot lock nobody holds (a running emulator's are not stale)."""
    import fcntl
    import re

    out = []
    for n in ours():
        m = re.fullmatch(r"bloatlab-emu(\d+)-[cs]", n)
        if not m:
            continue
        try:
            with open(f"/run/bloatlab/emu-slot-{m.group(1)}.lock", "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                out.append(n)
        except BlockingIOError:
            pass
    return out


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    left = stale()
    if left:
        subprocess.run([PY, "-m", "bloatlab", "emu", "cleanup"], capture_output=True)
    assert not left, f"namespaces left behind: {left}"


def bloatlab(*args, timeout=120, **kw):
    return subprocess.run([PY, "-m", "bloatlab", *args], capture_output=True, text=True, timeout=timeout, **kw)


SHORT = """
name = "emu-test"
duration = "5s"
[link.down]
rate = "20Mbit"
buffer = "1bdp"
[[flow]]
cc = "cubic"
rtt = "40ms"
[[probe]]
interval = "10ms"
"""


def test_an_emulated_run_gives_the_summary_keys_of_the_simulator_and_the_kernels_metadata():
    import bloatlab

    r = bloatlab.run(SHORT, engine="emu")
    s = r.summary
    sim = bloatlab.run(SHORT, engine="sim").summary
    assert set(s) == set(sim)
    assert set(s["flows"][0]) == set(sim["flows"][0])
    assert set(s["links"]["down"]) == set(sim["links"]["down"])
    f = s["flows"][0]
    # A 20 Mbit/s link carries at most 20 * 1448/1500 = 19.3 Mbit/s of TCP payload.
    assert 15 < f["goodput_mbps"] < 19.4
    assert f["rtt_ms"]["p50"] >= 40
    meta = s["meta"]
    assert meta["kernel"] == os.uname().release
    assert "cubic" in meta["available_cc"]
    assert meta["sysctls"]["net.ipv4.tcp_rmem"].split()[-1] == "134217728"
    for k in ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_wmem", "net.core.default_qdisc"):
        assert meta["sysctls"][k]
    # Data one way at 20 Mbit/s: both directions on one link thread (docs/emulator.md "Threads"),
    # unless the A/B switch says otherwise.
    assert meta["link_threads"] == {"one": 1, "two": 2}.get(os.environ.get("BLOATLAB_EMU_THREADS", "auto"), 1)
    late = meta["lateness"]
    assert late["n"] > 1000 and late["p99_us"] is not None and "flagged" in late
    # The stall verdict (docs/emulator.md "Timing quality"): 20 Mbit/s, 1 BDP of 40 ms drains in 40 ms, the
    # base RTT is 40 ms; the flag is the p99's or a stall's, and says which.
    st = late["stalls"]
    assert st["threshold_ms"] == 40.0 and st["count"] >= st["over_2ms"] >= st["over_5ms"] >= st["over_10ms"]
    assert late["flagged"] == bool(late["reasons"]) and ("stall" in late["reasons"]) == (st["over_threshold"] > 0)
    assert len(st["longest"]) == min(st["count"], 10) and all(e["ms"] >= st["min_ms"] for e in st["longest"])
    # TCP_INFO every 10 ms, the queue every 10 ms, a probe every 10 ms.
    assert len(r.flows) > 300 and {"cwnd_bytes", "srtt_ms", "pacing_rate_bps", "delivery_rate_bps"} <= set(r.flows.columns)
    assert len(r.links) >= 490 and r.links["queue_bytes"].max() > 0
    assert len(r.probes) > 400


# Agreement between the engines on short runs (docs/fidelity.md states these tolerances):
# goodput within 10 %, mean queueing delay within 25 % (or 2 ms), probe RTT p50 within 15 %.
AGREE = [("01-cubic-20M-40ms.toml", ["duration=8s"]), ("03-bbr-20M-40ms.toml", ["duration=8s"])]


# The kernel is one random draw per run: on this machine BBR's mean queue read 5.2-6.6 ms in 18 runs of
# 03-bbr (the model 5.02), and once 11.5 ms in CI (stop 44). So the kernel gets KERNEL_DRAWS runs: a run whose
# timing the emulator flagged is not truth (docs/emulator.md "Timing quality"; sweeps re-run it the same way),
# and the model must agree with one unflagged run. A model that is wrong disagrees with every draw; the message
# lists each draw with its timing verdict.
KERNEL_DRAWS = 2


# A flagged run is no draw: it is run again, at most this many runs in all (as campaign.KERNEL_TRIES re-runs a
# flagged judgement). A fresh clone's make test (2026-11-28 02:00) met a minute of VM pauses here: both runs of
# 01-cubic flagged (p99 lateness 9.8 and 1.1 ms, 176 and 68 stalls), the same test passing on the idle machine after
KERNEL_RUNS_MAX = 4


def _agreement(s: dict, e: dict) -> list[str]:
    """What of the kernel's run e the model's run s misses (empty: they agree)."""
    miss = []
    gs, ge = s["total_goodput_mbps"], e["total_goodput_mbps"]
    if abs(gs - ge) > 0.10 * ge:
        miss.append(f"goodput {gs:.2f} vs {ge:.2f} Mbit/s")
    qs, qe = s["links"]["down"]["qdelay_ms"]["mean"], e["links"]["down"]["qdelay_ms"]["mean"]
    if abs(qs - qe) > max(0.25 * qe, 2.0):
        miss.append(f"mean queueing delay {qs:.2f} vs {qe:.2f} ms")
    ps, pe = s["probes"][0]["rtt_ms"]["p50"], e["probes"][0]["rtt_ms"]["p50"]
    if abs(ps - pe) > 0.15 * pe:
        miss.append(f"probe RTT p50 {ps:.2f} vs {pe:.2f} ms")
    return miss


def test_agreement_names_what_is_missed():
    s = {"total_goodput_mbps": 18.8, "links": {"down": {"qdelay_ms": {"mean": 5.0}}}, "probes": [{"rtt_ms": {"p50": 43.0}}]}
    assert _agreement(s, s) == []
    e = {"total_goodput_mbps": 18.8, "links": {"down": {"qdelay_ms": {"mean": 11.5}}}, "probes": [{"rtt_ms": {"p50": 43.0}}]}
    assert _agreement(s, e) == ["mean queueing delay 5.00 vs 11.50 ms"]
    e["links"]["down"]["qdelay_ms"]["mean"] = 7.0   # within max(25 %, 2 ms) of 7.0
    assert _agreement(s, e) == []


# BBR's cruise pacing is its bandwidth filter's maximum x 0.99 (Linux tcp_bbr.c, bbr_pacing_margin_percent = 1), so
# on a true link it stays below the link's payload capacity. A link thread that woke late (emu's lateness) releases
# what was due at once; the receiver's ACKs leave compressed, a delivery-rate sample reads the link faster than it is,
# and the 10-round max filter keeps it: once the reading is more than the 1 % margin over the link, BBR cruises faster
# than the link and its queue climbs toward its cwnd (2 BDP). Measured on 03-bbr, 8 s, 2026-11-30 (lateness p99
# 1.3-1.6 ms, 235-350 stalls): each run's largest second-by-second median pacing at 1.013-1.026x the capacity and a
# mean queue of 12.6-17.0 ms; the model 0.987x and 5.02 ms. Such a run is the emulator's path, not the scenario's, whatever its p99
# (CI of stop 75: a mean queue of 21.8 ms at p99 430 µs and 48 stalls, 8.8 ms at 130 µs; their pacing not kept).
PACING_WINDOW_S = 1.0   # a median over ~2.5 ProbeBW cycles (8 phases of one RTT, 40 ms here) is the cruise phase's rate
SETTLED_S = 1.0         # after Startup and Drain (~12 rounds of 40 ms here)


def bbr_overread(result) -> str | None:
    """Why a kernel run's BBR read the link faster than it is (None: it did not, or no BBR flow): a window whose
    median pacing rate exceeds the link's payload capacity (rate x MSS / MTU)."""
    from bloatlab.advise.physics import MSS
    from bloatlab.scenario import MTU

    s = result.summary
    bbr = {f["id"] for f in s["flows"] if f["cc"] == "bbr" and f["direction"] == "down"}
    if not bbr:
        return None
    cap = s["links"]["down"]["rate_mbps"] * 1e6 * MSS / MTU
    f = result.flows
    f = f[f["flow"].isin(bbr) & (f["t"] >= SETTLED_S)]
    med = f.groupby([f["flow"], f["t"] // PACING_WINDOW_S])["pacing_rate_bps"].median()
    if med.empty or med.max() <= cap:
        return None
    (fid, w), top = med.idxmax(), med.max()
    return (f"BBR read the link faster than it is (flow {fid}'s median pacing {top / 1e6:.2f} Mbit/s in second "
            f"{int(w)}, {top / cap:.3f}x the link's {cap / 1e6:.2f} Mbit/s of payload)")


def test_bbr_overread_is_told_from_pacing_above_the_links_payload():
    import pandas as pd

    s = {"flows": [{"id": 0, "cc": "bbr", "direction": "down"}], "links": {"down": {"rate_mbps": 20.0}}}
    cap = 20e6 * 1448 / 1500
    t = [1.0 + 0.01 * i for i in range(200)]

    def run(pace):
        return type("R", (), {"summary": s, "flows": pd.DataFrame({"flow": 0, "t": t, "pacing_rate_bps": pace})})

    cycle = [1.25, 0.75, 1, 1, 1, 1, 1, 1]   # ProbeBW's gains: probing above the link, cruising below it
    assert bbr_overread(run([0.99 * cap * cycle[i % 8] for i in range(200)])) is None
    assert "1.010x" in bbr_overread(run([0.99 * cap] * 100 + [1.01 * cap] * 100))
    assert bbr_overread(run([1.1 * cap] * 200)) is not None
    s["flows"][0]["cc"] = "cubic"
    assert bbr_overread(run([1.1 * cap] * 200)) is None


@pytest.mark.parametrize("scenario,sets", AGREE, ids=[a[0] for a in AGREE])
def test_the_simulator_agrees_with_the_kernel_on_a_short_scenario(scenario, sets):
    """The model agrees with one of the kernel's unflagged runs (KERNEL_DRAWS above). A run the emulator flagged
    (its timer woke late), or whose BBR read the link faster than it is (`bbr_overread`), is no draw and is run
    again, at most KERNEL_RUNS_MAX runs in all. Where fewer than KERNEL_DRAWS unflagged runs came in that many, a
    flagged run the model agrees with anyway stands, with a warning in pytest's summary (lateness moves the kernel's
    figures one way, more delay and an idle link, so a model wrong that same way could meet it: the unflagged runs
    are what the test rests on); where none agreed either, the machine was too late to judge (a fresh clone's make
    test, 2026-11-30: four runs of 03-bbr at p99 lateness 1136-1709 us), which the skip says with each run's
    figures."""
    import bloatlab

    sc = bloatlab.load_scenario(os.path.join(SCEN, scenario), sets)
    s = bloatlab.run(sc, engine="sim").summary
    draws, unflagged, late_agreed = [], 0, None
    for _ in range(KERNEL_RUNS_MAX):
        run = bloatlab.run(sc, engine="emu")
        e = run.summary
        flag = emu_engine.timing_reason(e) or bbr_overread(run)
        miss = _agreement(s, e)
        late = e["meta"]["lateness"]
        fig = f"lateness p99 {late.get('p99_us')} µs, stalls {late['stalls']['count']}"
        if not miss and not flag:
            return
        if not miss:
            late_agreed = late_agreed or f"timing flagged ({flag}; {fig})"
        draws.append(f"{miss or 'agrees'}{' (timing flagged: ' + flag + ')' if flag else ''} ({fig})")
        unflagged += not flag
        if unflagged == KERNEL_DRAWS:
            break
    if unflagged < KERNEL_DRAWS and late_agreed:
        warnings.warn(f"{scenario}: the model agrees only with a kernel run the emulator flagged, {late_agreed}; "
                      f"{unflagged} unflagged run(s) of {len(draws)}: " + "; ".join(draws))
        return
    if not unflagged:
        pytest.skip(f"every one of {len(draws)} kernel runs was timing-flagged and none agreed, so the machine was too "
                    f"late to judge the model: " + "; ".join(draws))
    pytest.fail(f"the model agrees with none of the {unflagged} unflagged kernel runs ({len(draws)} in all): "
                + "; ".join(draws))


def _resolved(cc="cubic", duration_ns=2_000_000_000):
    return {"name": "x", "seed": 1, "duration_ns": duration_ns, "sample_interval_ns": 10_000_000,
            "links": {"down": {"rate_bps": 10_000_000, "buffer_bytes": 100000, "buffer_pkts": None, "loss": 0,
                               "qdisc": {"kind": "fifo", "params": {}}, "trace_ms": None}, "up": None},
            "flows": [{"id": 0, "group": 0, "name": "a", "cc": cc, "direction": "down", "rtt_ns": 20_000_000,
                       "start_ns": 0, "stop_ns": None, "size_bytes": None}],
            "probes": []}


def test_a_congestion_control_the_kernel_lacks_is_an_error_listing_those_it_has(tmp_path):
    from bloatlab import _bin

    p = tmp_path / "sc.json"
    p.write_text(json.dumps(_resolved(cc="nosuchcc")))
    r = subprocess.run([_bin.find("bloatlab-emu"), "run", "--scenario", str(p), "--out", str(tmp_path / "o.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert 'flow.0.cc: this kernel has no congestion control "nosuchcc"' in r.stderr
    assert "cubic" in r.stderr and "Traceback" not in r.stderr


def test_sigterm_tears_the_run_down():
    from bloatlab import _bin
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        sc = os.path.join(d, "sc.json")
        with open(sc, "w") as f:
            json.dump(_resolved(duration_ns=60_000_000_000), f)
        emu = subprocess.Popen([_bin.find("bloatlab-emu"), "run", "--scenario", sc, "--out", os.path.join(d, "o.json"),
                                "--probe", _bin.find("bloatlab-probe")], stderr=subprocess.PIPE, text=True)
        before = set(ours())
        deadline = time.time() + 10
        while time.time() < deadline and len(set(ours()) - before) < 2:
            time.sleep(0.05)
        mine = set(ours()) - before
        assert len(mine) == 2, "the run never created its namespaces"
        time.sleep(1.0)
        emu.send_signal(signal.SIGTERM)
        rc = emu.wait(timeout=20)
        assert rc == 130, emu.stderr.read()
    assert stale() == [] and not (set(ours()) & mine)


def test_after_a_sigkill_the_next_cleanup_removes_the_stale_namespaces():
    import tempfile

    from bloatlab import _bin
    from test_emu_kill import descendants, own_namespaces

    with tempfile.TemporaryDirectory() as d:
        sc = os.path.join(d, "sc.json")
        with open(sc, "w") as f:
            json.dump(_resolved(), f)
        sh = subprocess.Popen([_bin.find("bloatlab-emu"), "shell", "--scenario", sc, "--probe", _bin.find("bloatlab-probe"),
                               "--", "sleep", "30"], stderr=subprocess.DEVNULL)
        # this shell's two namespaces, told by the namespaces its processes run in (a name alone may be another
        # emulator's: a campaign beside the tests creates its own while this one starts; tests/test_emu_kill.py)
        before = set(ours())
        deadline = time.time() + 10
        mine = []
        while time.time() < deadline and len(mine) < 2:
            time.sleep(0.05)
            mine = sorted(own_namespaces(set(ours()) - before, [sh.pid] + descendants(sh.pid)))
        assert len(mine) == 2, (mine, sorted(set(ours()) - before))
        # The emulator's reaper (a process of its own session) removes them after any kill of the emulator
        # (tests/test_emu_kill.py); here it is killed first, as everything is after a reboot or a kill of
        # every process, so that what is left is cleanup's to remove.
        for task in glob.glob(f"/proc/{sh.pid}/task/*/children"):
            for c in open(task).read().split():
                try:
                    if open(f"/proc/{c}/cmdline", "rb").read().split(b"\0")[1:2] == [b"reap"]:
                        os.kill(int(c), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError):
                    pass
        sh.kill()
        sh.wait()
        time.sleep(0.2)
        assert set(mine) <= set(stale())  # a SIGKILL of everything leaves them behind...
    r = bloatlab("emu", "cleanup")
    assert r.returncode == 0, r.stderr
    assert "removed" in r.stdout and mine[0] in r.stdout
    assert not (set(ours()) & set(mine))  # ...and cleanup removes them


def test_two_shells_run_side_by_side_in_their_own_namespaces():
    a = subprocess.Popen([PY, "-m", "bloatlab", "shell", "--", "sh", "-c", "echo $BLOATLAB_SERVER; sleep 3"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(1.0)
    b = bloatlab("shell", "--", "sh", "-c", "echo $BLOATLAB_SERVER")
    out_a, _ = a.communicate(timeout=30)
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert out_a.strip() != b.stdout.strip()
    assert out_a.startswith("10.77.") and b.stdout.startswith("10.77.")


def test_a_shell_command_sees_the_configured_rtt_and_the_pcap_files_open(tmp_path):
    # A UDP echo server on the server side, the probe's latency client in the shell; bloatlab-probe found on a PATH
    # without the venv's directory (the shell puts bloatlab's programs first: engines/emu.py, tools_on_path)
    cmd = ("bloatlab-probe udp client $BLOATLAB_SERVER -p 5301 --interval 20ms --count 50 -i 0 --json")
    r = bloatlab("shell", "--down", "10Mbit", "--up", "10Mbit", "--rtt", "60ms", "--pcap", str(tmp_path),
                 "--server", "bloatlab-probe udp server --bind 0.0.0.0:5301", "--", "sh", "-c", cmd,
                 env={**os.environ, "PATH": os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                                                            if d and os.path.realpath(d) != os.path.realpath(os.path.dirname(PY)))})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rtt = doc["raw"]["probes"][0]["rtt_ms"]
    # 60 ms plus two serializations of a 92-byte packet at 10 Mbit/s (74 µs each) and the kernels' and the
    # emulator's own time: the median of 50 probes was 60.64 ms in one clean-clone CI run (2026-11-22), so 1 ms.
    assert 60.0 <= rtt["p50"] < 61.0, rtt
    for d in ("down", "up"):
        b = (tmp_path / f"{d}.pcap").read_bytes()
        # headers only (crates/schema/src/pcap.rs): 28 bytes of IPv4 + UDP per 92-byte probe packet
        assert b[:4] == bytes.fromhex("4d3cb2a1") and len(b) >= 24 + 50 * (16 + 28)


def test_a_clients_data_connections_open_together_not_a_round_trip_apart():
    """`-P 4` opens its four data connections at once (each handshake on its own thread): one after another, each
    took a round trip, so at 200 ms the last began 600 ms after the first (measure's loaded phases were that much
    longer and their flows did not share a start). Together they start within a few ms of each other (scheduling,
    not round trips: the tolerance is a tenth of one)."""
    cmd = "bloatlab-probe tcp client $BLOATLAB_SERVER -p 5301 -R -P 4 -t 1 -i 0 --json"
    r = bloatlab("shell", "--down", "20Mbit", "--up", "20Mbit", "--rtt", "200ms",
                 "--server", "bloatlab-probe tcp server --bind 0.0.0.0:5301", "--", "sh", "-c", cmd,
                 env={**os.environ, "PATH": os.path.dirname(PY) + ":" + os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    starts = [f["start_s"] for f in json.loads(r.stdout)["raw"]["flows"]]
    assert len(starts) == 4 and max(starts) - min(starts) < 0.020, starts


def test_a_mahimahi_trace_of_one_opportunity_per_ms_carries_12_mbit(tmp_path):
    tr = tmp_path / "12mbit.trace"
    tr.write_text("1\n")
    cmd = "bloatlab-probe tcp client $BLOATLAB_SERVER -p 5301 -R -t 3 -i 0 --json"
    r = bloatlab("shell", "--down", f"trace:{tr}", "--rtt", "20ms", "--buffer", "200KB",
                 "--server", "bloatlab-probe tcp server --bind 0.0.0.0:5301", "--", "sh", "-c", cmd,
                 env={**os.environ, "PATH": os.path.dirname(PY) + ":" + os.environ["PATH"]})
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)["raw"]["flows"][0]
    mbps = f["bytes_delivered"] * 8 / (f["end_s"] - f["start_s"]) / 1e6
    # 1500 bytes per ms = 12 Mbit/s on the wire, 11.6 Mbit/s of payload; slow start costs a little.
    assert 10.0 < mbps < 11.7, mbps


def _set_default_qdisc(kind: str) -> bool:
    try:
        with open("/proc/sys/net/core/default_qdisc", "w") as f:
            f.write(kind)
        return True
    except OSError:  # ENOENT: this kernel has no such qdisc (and no module to load it)
        return False


def test_the_tun_devices_keep_pfifo_fast_whatever_the_hosts_default_qdisc(tmp_path):
    # net.core.default_qdisc is global (the root namespace's): a host with fq as its default would give the
    # emulator's TUN devices sch_fq, which paces every kernel flow. The emulator pins pfifo_fast (crates/emu/src/ns.rs
    # TUN_QDISC). fq where the kernel has it; this machine's kernel has no sch_fq (no modules), so another
    # qdisc that can be a default and is not pfifo_fast: pfifo. The root setting is changed for about two seconds
    # (a device created meanwhile on this host takes it) and restored whatever happens.
    from bloatlab import _bin

    path = "/proc/sys/net/core/default_qdisc"
    before = open(path).read().strip()
    probe_ns = f"bloatlab-qdisc-test-{os.getpid()}"
    try:
        other = next((k for k in ("fq", "pfifo", "bfifo") if k != before and _set_default_qdisc(k)), None)
        assert other, f"the kernel accepts none of fq, pfifo, bfifo as net.core.default_qdisc (it has {before})"
        assert open(path).read().strip() == other
        # The premise: an unpinned device created now takes the new default.
        subprocess.run(["ip", "netns", "add", probe_ns], check=True)
        subprocess.run(["ip", "-n", probe_ns, "tuntap", "add", "dev", "t0", "mode", "tun"], check=True)
        subprocess.run(["ip", "-n", probe_ns, "link", "set", "t0", "up"], check=True)
        show = subprocess.run(["tc", "-n", probe_ns, "qdisc", "show", "dev", "t0", "root"], capture_output=True,
                              text=True, check=True).stdout
        assert show.split()[:2] == ["qdisc", other], show
        sc = tmp_path / "sc.json"
        sc.write_text(json.dumps(_resolved(duration_ns=1_000_000_000)))
        r = subprocess.run([_bin.find("bloatlab-emu"), "run", "--scenario", str(sc), "--out", str(tmp_path / "o.json"),
                            "--probe", _bin.find("bloatlab-probe")], capture_output=True, text=True, timeout=30)
    finally:
        _set_default_qdisc(before)
        subprocess.run(["ip", "netns", "del", probe_ns], capture_output=True)
    assert open(path).read().strip() == before
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path / "o.json").read_text())["meta"]
    assert meta["tun_qdisc"] == ["pfifo_fast", "pfifo_fast"]
    # the run saw the changed default (meta.sysctls records it) and its devices kept pfifo_fast all the same
    assert meta["sysctls"]["net.core.default_qdisc"] == other
