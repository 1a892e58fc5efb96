"""`bloatlab-probe load` through an emulated link (issue 14 §3): connect probes
run on schedule and only while the load runs, so the loaded TCP handshake time
agrees with the loaded UDP round trip and with the queue the emulator reports.
Before, one thread ran the connects back to back: through a 2 Mbit/s loaded
uplink it reported connect p50 1.09 ms against a UDP RTT p50 of 409 ms."""

import json
import os
import subprocess

import pytest

from conftest import ROOT

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                                reason="emulated links need root and /dev/net/tun")


@needs_root
def test_loaded_connects_wait_in_the_same_queue_as_the_udp_probes(tmp_path):
    env = dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"])
    raw = tmp_path / "link.json"
    r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", "--down", "20Mbit", "--up", "2Mbit",
                        "--rtt", "20ms", "--buffer", "4bdp", "--out", str(raw),
                        "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                        "sh", "-c", "sleep 0.5; bloatlab-probe load $BLOATLAB_SERVER --down 0 --up 2 -t 6 --idle 1 --json"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout[r.stdout.index("{"):])
    ld = j["load"]["loaded"]
    conn, udp = ld["connect_ms"]["p50"], ld["udp_rtt_ms"]["p50"]
    # the SYN waits in the loaded uplink's FIFO as the UDP request does (4 BDP at 2 Mbit/s, 20 ms:
    # up to 80 ms of queue); both cross the same queues once each way
    assert udp > 20 + 30, ld
    assert conn == pytest.approx(udp, rel=0.25), (conn, udp)
    assert ld["connects_unanswered"] == 0 and ld["connects_late"] == 0, ld
    # ... and the queueing the emulator measured on the uplink over the run (mean ~ what a probe meets)
    q = json.loads(raw.read_text())["links"]["up"]["qdelay_ms"]
    assert q["p95"] > 30 and udp - 20 <= q["max"] + 5, (q, udp)
    # no connect probe after the load: the loaded ones start within the loaded phase
    assert ld["connect_ms"]["n"] <= 6 * 10 + 1
