"""The run verb: --json output carries the contract keys; --out writes a
result that loads back; the Python API returns DataFrames."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import bloatlab
from bloatlab.result import Result

from conftest import scenario_text

SUMMARY_KEYS = {"version", "engine", "scenario", "seed", "duration_s", "flows", "links", "probes",
                "total_goodput_mbps", "jain_fairness"}
FLOW_KEYS = {"id", "name", "cc", "direction", "rtt_base_ms", "goodput_mbps", "bytes_acked", "retransmits",
             "retrans_rate", "rtt_ms", "fct_s", "completed"}
LINK_KEYS = {"rate_mbps", "utilization", "drops", "qdelay_ms"}
PROBE_KEYS = {"id", "kind", "rtt_ms", "loss"}


def test_run_json_prints_the_contract_summary(tmp_path, cli):
    p = tmp_path / "s.toml"
    p.write_text(scenario_text() + '[[probe]]\nkind = "udp"\ninterval = "10ms"\n')
    r = cli("run", str(p), "--json", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert SUMMARY_KEYS <= set(s)
    assert FLOW_KEYS <= set(s["flows"][0])
    assert {"mean", "p50", "p95", "p99"} <= set(s["flows"][0]["rtt_ms"])
    assert LINK_KEYS <= set(s["links"]["down"])
    assert {"mean", "p50", "p95", "p99", "max"} <= set(s["links"]["down"]["qdelay_ms"])
    assert PROBE_KEYS <= set(s["probes"][0])
    assert s["engine"] == "sim"
    for f in ("summary.json", "flows.parquet", "links.parquet", "probes.parquet"):
        assert os.path.exists(tmp_path / "out" / f)
    back = Result.load(str(tmp_path / "out"))
    assert back.summary["flows"][0]["bytes_acked"] == s["flows"][0]["bytes_acked"]
    assert {"t", "cwnd_bytes", "inflight_bytes", "srtt_ms", "pacing_rate_bps", "delivery_rate_bps",
            "delivered_bytes", "retransmits"} <= set(back.flows.columns)
    assert {"t", "queue_bytes", "qdelay_ms", "direction"} <= set(back.links.columns)
    assert {"t", "rtt_ms", "probe"} <= set(back.probes.columns)


def test_api_returns_dataframes_sampled_every_10ms():
    r = bloatlab.run(scenario_text(duration='"2s"'))
    df = r.flows
    # one row per 10 ms from the first sample after the handshake (SYN, SYN-ACK, request: 1.5 RTT) to the end
    first = df["t"].min()
    assert first <= 1.5 * 0.040 + 0.010 + 1e-9
    assert len(df) >= round((2.0 - first) / 0.010)
    assert abs(df["t"].diff().dropna().median() - 0.010) < 1e-9
    # delivered bytes never decrease, and end near what the summary reports
    assert (df["delivered_bytes"].diff().dropna() >= 0).all()


def test_human_output_names_the_flows_and_links(tmp_path, cli):
    p = tmp_path / "s.toml"
    p.write_text(scenario_text(duration='"2s"'))
    r = cli("run", str(p))
    assert r.returncode == 0
    assert "cubic" in r.stdout and "link down" in r.stdout and "total goodput" in r.stdout


def test_compare_shows_no_percentage_between_two_figures_it_shows_alike(capsys):
    """`compare` printed -76.3% between 0.00 and 0.00 (issue 35): a difference the table cannot show is "—"."""
    from bloatlab.commands.compare import print_table

    res = {"sim": {"scenario": {"name": "x"}, "seed": 1, "duration_s": 1.0}, "emu": {"meta": {"kernel": "k"}},
           "rows": [{"group": "flow", "name": "f0", "what": "retransmitted", "unit": "%", "sim": 0.0012, "emu": 0.0044,
                     "rel": (0.0012 - 0.0044) / 0.0044},
                    {"group": "flow", "name": "f0", "what": "goodput", "unit": "Mbit/s", "sim": 18.0, "emu": 20.0,
                     "rel": -0.1}]}
    print_table(res)
    out = capsys.readouterr().out
    assert "-72" not in out and "—" in out and "-10.0%" in out, out


def test_tables_fit_80_columns_and_never_break_a_name_or_a_path(tmp_path):
    """Issue 35: `bloatlab run rrul` in 80 columns split flow names across lines and `scenarios | cat` broke
    paths mid-name; headers carried no units. A table that cannot fit whole leaves columns out, with a note."""
    import subprocess
    import sys

    env = dict(os.environ, COLUMNS="80")
    r = subprocess.run([sys.executable, "-m", "bloatlab", "run", "rrul", "--set", "duration=2s"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    names = [f"cubic-down-0.{i}" for i in range(4)] + [f"cubic-up-1.{i}" for i in range(4)]
    assert all(any(line.startswith(n + " ") for line in lines) for n in names), r.stdout
    assert "Mbit/s" in r.stdout and "ms" in lines[2] + lines[3], r.stdout
    env["COLUMNS"] = "50"
    r = subprocess.run([sys.executable, "-m", "bloatlab", "run", "rrul", "--set", "duration=2s"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert "left out at 50 columns" in r.stdout and all(len(x) <= 50 for x in r.stdout.splitlines() if not x.startswith(("link", "   ", "probe", "total"))), r.stdout
    r = subprocess.run([sys.executable, "-m", "bloatlab", "scenarios"], capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="80"), timeout=60)
    for line in r.stdout.splitlines()[2:]:
        first = line.split("  ")[0].strip()
        assert not first or " " not in first, line  # a name or a path whole in its column


def test_long_work_says_what_it_does_on_a_terminal_and_in_a_log():
    """Issue 35: a 60-s `run --engine emu` or `compare` printed nothing. In a log: a start and an end line; on
    a terminal: one line redrawn as it goes, erased at the end."""
    import io
    import time

    from bloatlab.progress import Long

    log = io.StringIO()
    with Long("running x", 60, file=log):
        pass
    lines = log.getvalue().splitlines()
    assert lines[0] == "bloatlab: running x (expected ~60 s) ..." and lines[1].startswith("bloatlab: running x: done in")

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    with Long("running y", 5, file=tty):
        time.sleep(1.2)
    out = tty.getvalue()
    assert "\rrunning y: 1 s of ~5 s" in out and out.endswith("\r\033[K"), repr(out)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_long_simulation_stops_at_once_on_sigterm_or_ctrl_c(tmp_path, sig):
    """The simulator runs on a thread of its own while the CLI's thread looks for signals: a long run
    stops within a fraction of a second, not at its end (it held a Ctrl-C for the whole run)."""
    f = tmp_path / "long.toml"
    # ~10 minutes of simulation work at 1 Gbit/s: far longer than the test waits
    f.write_text('duration = "3600s"\n[link.down]\nrate = "1Gbit"\n[[flow]]\nrtt = "20ms"\n')
    p = subprocess.Popen([sys.executable, "-m", "bloatlab", "run", str(f), "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # start-up and into the run
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 5.0, err
    assert p.returncode == 128 + sig, err
    assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err, err
