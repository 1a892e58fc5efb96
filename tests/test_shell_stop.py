"""`bloatlab shell --scenario FILE -- COMMAND` whose COMMAND ends before the scenario (issue 34 §5): the
scenario's flows are stopped then and reported with the figures they had, not as failures ("flow 0: no
result from bloatlab-probe"). Root and /dev/net/tun needed; skipped elsewhere with the reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")


def test_a_command_that_ends_early_stops_the_flows_with_their_figures(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text('name = "shell-stop"\nduration = "20s"\n[link.down]\nrate = "20Mbit"\n[[flow]]\ncc = "cubic"\nrtt = "20ms"\n')
    raw = tmp_path / "raw.json"
    r = subprocess.run([sys.executable, "-m", "bloatlab", "shell", "--scenario", str(sc), "--out", str(raw), "--",
                        "sleep", "2"], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "no result" not in r.stderr and "its flows were stopped then" in r.stderr, r.stderr
    doc = json.loads(raw.read_text())
    assert not (doc.get("meta") or {}).get("errors"), doc.get("meta")
    # ~2 s of a 20-Mbit/s link: some megabytes, not the 50 MB of the whole scenario
    acked = doc["flows"][0]["bytes_acked"]
    assert 1e6 < acked < 10e6, acked
