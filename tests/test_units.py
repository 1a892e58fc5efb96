"""One unit grammar (issue 15 §1, issue 9 §1): the scenario layer, ``--set``
and the Rust command lines parse unit strings with the same function
(``crates/core/src/units.rs``, called through the native module), so what one
accepts the other does, with the same value and the same message."""

from __future__ import annotations

import subprocess

import pytest

from bloatlab.scenario import load
from bloatlab import _bin, units
from bloatlab.errors import ScenarioError

BASE = """
name = "u"
duration = "2s"
[link.down]
rate = "20Mbit"
buffer = "{buffer}"
[[flow]]
cc = "cubic"
rtt = "{rtt}"
"""


@pytest.mark.parametrize(
    "kind,text,value",
    [
        ("rate", "100Mbit", 100_000_000), ("rate", "100 Mbit/s", 100_000_000), ("rate", "64kbit/s", 64_000), ("rate", "100MBps", 800_000_000), ("rate", "12.5 MB/s", 100_000_000),
        ("duration", "10 ms", 10_000_000), ("duration", "2.5ns", 2), ("duration", "1e3ms", 10**9),
        ("size", "1500", 1500), ("size", "1.5 KiB", 1536), ("ratio", "1%", 0.01), ("ratio", "0.25", 0.25),
    ],
)
def test_values(kind, text, value):
    assert getattr(units, f"parse_{kind}")(text) == value


def test_buffers_in_bdp_and_packets_any_case_and_bare_bytes():
    assert units.parse_buffer("1 BDP") == ("bdp", 1.0)
    assert units.parse_buffer("0.5bdp") == ("bdp", 0.5)
    assert units.parse_buffer("100 Pkt") == ("pkts", 100.0)
    assert units.parse_buffer("1500") == ("bytes", 1500.0)
    assert units.parse_buffer(64000) == ("bytes", 64000.0)


@pytest.mark.parametrize(
    "kind,text,needle",
    [
        ("rate", "fast", 'expected a rate like "100Mbit", got "fast"'),
        ("rate", "10 parsecs", "units: bit, Kbit, Mbit, Gbit"),
        ("duration", "10 MS", "units: ns, us, ms, s, min"),
        ("duration", "-1ms", "non-negative"),
        ("size", "1e30GB", "too large"),
        ("buffer", "1.5pkt", "whole number of packets"),
        ("buffer", "0 BDP", "positive buffer"),
        ("ratio", "101%", "in [0, 1]"),
    ],
)
def test_errors_carry_the_grammar_message(kind, text, needle):
    with pytest.raises(ValueError) as e:
        getattr(units, f"parse_{kind}")(text)
    assert needle in str(e.value)


def test_a_scenario_reads_spaces_and_BDP_as_the_compact_forms():
    a = load(BASE.format(buffer="1 BDP", rtt="40 ms")).resolved()
    b = load(BASE.format(buffer="1bdp", rtt="40ms")).resolved()
    assert a == b
    c = load(BASE.format(buffer="1bdp", rtt="40ms"), ["link.down.buffer=1 BDP"]).resolved()
    assert c == b
    with pytest.raises(ScenarioError) as e:
        load(BASE.format(buffer="1 parsec", rtt="40ms"))
    assert "link.down.buffer" in str(e.value)


def test_the_probe_command_line_reads_the_same_grammar():
    """The probe's flags go through the same Rust parser: spaces before the unit are read there too."""
    probe = _bin.find("bloatlab-probe")
    ok = subprocess.run([probe, "udp", "client", "127.0.0.1:1", "--count", "1",
                         "--timeout", "200 ms"], capture_output=True, text=True, timeout=20)
    bad = subprocess.run([probe, "udp", "client", "127.0.0.1:1", "--count", "1",
                          "--timeout", "200 MS"], capture_output=True, text=True, timeout=20)
    assert "units: ns, us, ms, s, min" in bad.stderr and bad.returncode == 2, bad.stderr
    assert "expected" not in ok.stderr, ok.stderr


def test_a_byte_rate_means_bytes_and_an_ambiguous_one_is_refused_naming_both_readings(tmp_path, capsys):
    """Issue 35: `--set link.down.rate=100MBps` ran at 100 Mbit/s. One parser (Rust, crates/core/src/units.rs)
    for the scenario language and the probe: MBps is bytes (x8); Mbps is refused, as tc and a speed test read
    it 8x apart."""
    import bloatlab
    from bloatlab.cli import main as cli

    sc = tmp_path / "s.toml"
    sc.write_text('name = "u"\nduration = "1s"\n[link.down]\nrate = "10Mbit"\n[[flow]]\ncc = "cubic"\nrtt = "20ms"\n')
    s = bloatlab.load_scenario(str(sc), ["link.down.rate=12.5MBps"])
    assert s.resolved()["links"]["down"]["rate_bps"] == 100_000_000
    assert cli(["run", str(sc), "--set", "link.down.rate=100Mbps"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: link.down.rate:") and "megabytes" in err and "megabits" in err, err
    assert '"100Mbit"' in err and '"100MBps"' in err, err
