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
        ("rate", "100Mbit", 100_000_000), ("rate", "100 Mbit/s", 100_000_000), ("rate", "64kbps", 64_000),
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
