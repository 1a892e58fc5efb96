"""GSO super-packets through the emulator's TUN devices (issue 13 §1,
crates/emu/src/gso.rs): the kernel hands over up to 64 KiB per read, the link
still sees (and the capture still shows) wire segments, and the switch that
turns it off gives one read per packet again. Coalesced writes (opt-in) move a
sized transfer intact.

Root and /dev/net/tun needed; elsewhere skipped with the reason. ~15 s.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess

import pytest

from bloatlab import _bin
from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")


def _run(tmp_path, env: dict[str, str], size_bytes=None, pcap=False, rate_bps=200_000_000) -> dict:
    sc = {"name": "gso", "seed": 1, "duration_ns": 2_000_000_000, "sample_interval_ns": 10_000_000,
          "links": {"down": {"rate_bps": rate_bps, "buffer_bytes": 500_000, "buffer_pkts": None, "loss": 0,
                             "qdisc": {"kind": "fifo", "params": {}}, "trace_ms": None}, "up": None},
          "flows": [{"id": 0, "group": 0, "name": "a", "cc": "cubic", "direction": "down", "rtt_ns": 10_000_000,
                     "start_ns": 0, "stop_ns": None, "size_bytes": size_bytes}],
          "probes": []}
    p, out = tmp_path / "sc.json", tmp_path / "raw.json"
    p.write_text(json.dumps(sc))
    argv = [_bin.find("bloatlab-emu"), "run", "--scenario", str(p), "--out", str(out),
            "--probe", _bin.find("bloatlab-probe")]
    if pcap:
        argv += ["--pcap", str(tmp_path)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def _pcap_lengths(path) -> list[int]:
    """The original lengths of the packets in a classic pcap file."""
    b = path.read_bytes()
    assert b[:4] == bytes.fromhex("4d3cb2a1") or b[:4] == bytes.fromhex("d4c3b2a1")
    i, out = 24, []
    while i + 16 <= len(b):
        _, _, incl, orig = struct.unpack_from("<IIII", b, i)
        out.append(orig)
        i += 16 + incl
    return out


def test_the_kernel_hands_over_super_packets_and_the_link_sees_wire_segments(tmp_path):
    raw = _run(tmp_path, {"BLOATLAB_EMU_OFFLOAD": "1"}, pcap=True)
    down = raw["links"]["down"]
    # A CUBIC download at 200 Mbit/s: most data arrive as super-packets of many segments.
    assert down["gso_super_pkts"] > 100, down
    assert down["read_pkts"] > 3 * down["read_frames"], down
    # What the link queued, serialized and captured are wire packets: none above the 1500-byte MTU.
    lens = _pcap_lengths(tmp_path / "down.pcap")
    assert len(lens) == down["read_pkts"]
    assert max(lens) <= 1500 and sum(n >= 1400 for n in lens) > 0.5 * len(lens)
    assert raw["flows"][0]["bytes_acked"] > 20e6  # ~ 200 Mbit/s x 2 s minus slow start


def test_without_offload_every_packet_is_its_own_read(tmp_path):
    down = _run(tmp_path, {"BLOATLAB_EMU_OFFLOAD": "0"})["links"]["down"]
    assert down["gso_super_pkts"] == 0
    assert down["read_pkts"] == down["read_frames"]


@pytest.mark.parametrize("switch", [None, "0"])
def test_coalesced_writes_by_default_deliver_a_sized_transfer_whole(tmp_path, monkeypatch, switch):
    # A link too fast to space the segments (100 Gbit/s): a super-packet's segments come due together
    # after the 10 ms delay, so most of them are written back as GSO writes (the default), or none
    # with BLOATLAB_EMU_COALESCE=0.
    env = {"BLOATLAB_EMU_OFFLOAD": "1"}
    if switch is not None:
        env["BLOATLAB_EMU_COALESCE"] = switch
    monkeypatch.delenv("BLOATLAB_EMU_COALESCE", raising=False)
    raw = _run(tmp_path, env, size_bytes=20_000_000, rate_bps=100_000_000_000)
    f, down = raw["flows"][0], raw["links"]["down"]
    assert f["completed"] and f["bytes_acked"] == 20_000_000, f
    if switch is None:
        assert down["coalesced_pkts"] > 0.5 * down["read_pkts"], down
    else:
        assert down["coalesced_pkts"] == 0, down
    assert down["write_errors"] == 0
