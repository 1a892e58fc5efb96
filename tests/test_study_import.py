"""Importing flent and iperf3 measurements into the store's schema."""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import subprocess

import pytest

import bloatlab
from bloatlab.cli import main as cli


def flent_doc():
    """A tcp_ndown-shaped flent file (format version 4, as flent/resultset.py writes it):
    two downloads at a constant 4 and 6 Mbit/s for 10 s in 0.2 s steps, and a ping
    with every tenth sample missing."""
    xs = [round(0.2 * i, 1) for i in range(1, 51)]
    ping = [None if i % 10 == 9 else 20.0 + (i % 5) for i in range(50)]
    return {
        "version": 4,
        "metadata": {"NAME": "tcp_ndown", "TITLE": "cable modem", "TIME": "2016-10-22T13:40:00.000000Z",
                     "T0": "2016-10-22T13:40:00.000000Z", "LENGTH": 10, "TOTAL_LENGTH": 10, "STEP_SIZE": 0.2,
                     "HOST": "server", "KERNEL_RELEASE": "4.9.0",
                     "SERIES_META": {"TCP download::1": {"CONG_CONTROL": "cubic", "UNITS": "Mbits/s"},
                                     "TCP download::2": {"CONG_CONTROL": "bbr", "UNITS": "Mbits/s"}}},
        "x_values": xs,
        "results": {"TCP download::1": [4.0] * 50, "TCP download::2": [6.0] * 50,
                    "TCP download sum": [10.0] * 50, "TCP download avg": [5.0] * 50,
                    "Ping (ms) ICMP": ping},
        "raw_values": {},
    }


def test_a_flent_file_becomes_a_run_with_flows_probes_and_series(tmp_path, capsys):
    f = tmp_path / "tcp_ndown-2016.flent.gz"
    with gzip.open(f, "wt") as fp:
        json.dump(flent_doc(), fp)
    out = str(tmp_path / "store")
    assert cli(["query", out, "--new", "--import", str(f)]) == 0
    st = bloatlab.load(out)
    row = st.runs.iloc[0]
    assert row["engine"] == "flent" and row["source"] == "tcp_ndown-2016.flent.gz"
    assert row["n_flows"] == 2
    # 4 + 6 Mbit/s; each flow's first sample covers (0, 0.2]: 10 s of data over 10 s.
    assert row["total_goodput_mbps"] == pytest.approx(10.0)
    assert row["goodput_bbr_mbps"] == pytest.approx(6.0) and row["share_cubic"] == pytest.approx(0.4)
    assert row["probe_loss"] == pytest.approx(5 / 50)
    assert row["probe_rtt_p50_ms"] == pytest.approx(22.0)
    fl = st.flows.set_index("name")
    assert fl.loc["TCP download::1", "cc"] == "cubic" and fl.loc["TCP download::2", "direction"] == "down"
    ser = st.series("flows")
    assert len(ser) == 100 and ser.groupby("flow")["delivered_bytes"].max().tolist() == pytest.approx([5e6, 7.5e6])
    assert len(st.series("probes")) == 50
    capsys.readouterr()
    assert cli(["query", out, "SELECT engine, round(total_goodput_mbps, 3) AS g FROM runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"engine": "flent", "g": 10.0}]


def test_importing_the_same_file_twice_keeps_one_run(tmp_path):
    f = tmp_path / "a.flent"
    f.write_text(json.dumps(flent_doc()))
    out = str(tmp_path / "s")
    assert cli(["query", out, "--new", "--import", str(f)]) == 0
    assert cli(["query", out, "--new", "--import", str(f)]) == 0
    assert len(bloatlab.load(out).runs) == 1


@pytest.mark.parametrize("content, msg", [
    ("not json", "not JSON"),
    ('{"a": 1}', "neither a flent data file nor iperf3"),
    ('{"start": {}, "intervals": [], "end": {}, "error": "unable to connect"}', "iperf3 reported an error"),
])
def test_a_file_that_is_not_a_measurement_is_an_error_naming_it(tmp_path, capsys, content, msg):
    f = tmp_path / "x.json"
    f.write_text(content)
    assert cli(["query", str(tmp_path / "s"), "--new", "--import", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --import") and msg in err and "Traceback" not in err


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (apt-get install iperf3)")
def test_a_real_iperf3_json_run_on_loopback_imports_with_its_numbers(tmp_path):
    port = str(_free_port())
    srv = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            res = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "2", "-i", "0.5", "-b", "40M",
                                  "-C", "cubic", "-J"], capture_output=True, text=True, timeout=30)
            # iperf3 3.12 -J exits 0 even when it could not connect (the server not up yet): the JSON says "error"
            if res.returncode == 0 and '"error"' not in res.stdout:
                break
            import time

            time.sleep(0.1)
        assert res.returncode == 0 and '"error"' not in res.stdout, res.stdout[-500:]
    finally:
        srv.kill()
        srv.wait()
    f = tmp_path / "cubic.json"
    f.write_text(res.stdout)
    doc = json.loads(res.stdout)
    out = str(tmp_path / "s")
    assert cli(["query", out, "--new", "--import", str(f)]) == 0
    row = bloatlab.load(out).runs.iloc[0]
    rcv = doc["end"]["streams"][0]["receiver"]
    assert row["engine"] == "iperf3" and row["goodput_cubic_mbps"] == pytest.approx(
        rcv["bytes"] * 8 / rcv["seconds"] / 1e6)
    assert 30 < row["total_goodput_mbps"] < 45          # -b 40M
    assert row["retransmits"] == doc["end"]["streams"][0]["sender"]["retransmits"]
    ser = bloatlab.load(out).series("flows")
    assert len(ser) == len(doc["intervals"]) and ser["cwnd_bytes"].iloc[0] == doc["intervals"][0]["streams"][0]["snd_cwnd"]


def test_import_and_sql_in_any_order(tmp_path, capsys):
    """`query DIR --import FILE 'SELECT ...'` was "unrecognized arguments" while other orders worked (issue 35)."""
    f = tmp_path / "rrul.flent.gz"
    with gzip.open(f, "wt") as g:
        json.dump(flent_doc(), g)
    out = str(tmp_path / "s")
    capsys.readouterr()
    assert cli(["query", out, "--new", "--import", str(f), "SELECT count(*) AS n FROM runs", "--csv"]) == 0
    assert capsys.readouterr().out.split() == ["n", "1"]
    assert cli(["query", out, "SELECT count(*) AS n FROM runs", "--import", str(f), "--csv"]) == 0
    assert capsys.readouterr().out.split() == ["n", "1"]


def test_an_imported_run_beside_a_sweep_adds_no_nan_category_and_no_part_labels(tiny_sweep, tmp_path):
    """Issue 35: an iperf3/flent run imported into a sweep's store drew a `nan` category in param plots and
    prefixed every scatter label with `part=main,`."""
    from bloatlab.study import plots

    out = tmp_path / "store"
    shutil.copytree(tiny_sweep, out)
    f = tmp_path / "rrul.flent.gz"
    with gzip.open(f, "wt") as g:
        json.dump(flent_doc(), g)
    assert cli(["query", str(out), "--import", str(f)]) == 0
    st = bloatlab.load(str(out))
    assert "part" not in plots.varying_keys(st)
    key = st.swept_keys()[0]
    fig = plots.param(st, key)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert "nan" not in ticks and "left out" in fig.axes[0].get_title(), (ticks, fig.axes[0].get_title())
