"""The emulator's command-line errors: no root needed (they fail before the emulator starts)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PY = sys.executable


def bloatlab(*args):
    return subprocess.run([PY, "-m", "bloatlab", *args], capture_output=True, text=True, timeout=60)


def test_shell_without_a_command_is_a_usage_error():
    r = bloatlab("shell", "--down", "10Mbit")
    assert r.returncode == 2 and "no command given" in r.stderr


def test_a_bad_rate_names_the_option():
    r = bloatlab("shell", "--down", "fast", "--", "true")
    assert r.returncode == 2 and "link.down.rate" in r.stderr and "fast" in r.stderr


def test_a_flagged_run_is_marked_in_compare(capsys):
    # compare's table and JSON mark an emulator run whose timing was flagged (docs/emulator.md, Timing quality).
    from bloatlab.commands.compare import print_table
    from bloatlab.engines.emu import timing_flagged

    summ = {"scenario": {"name": "x"}, "seed": 1, "duration_s": 1.0, "flows": [], "links": {}, "probes": []}
    late = {"p50_us": 20.0, "p99_us": 1500.0, "max_us": 9000.0, "flagged": True, "threshold_p99_us": 1000.0}
    emu = dict(summ, meta={"kernel": "k", "lateness": late})
    assert timing_flagged(emu) and not timing_flagged(dict(summ, meta={})) and not timing_flagged(summ)
    print_table({"sim": summ, "emu": emu, "rows": []})
    assert "FLAGGED" in capsys.readouterr().out
    emu["meta"]["lateness"] = dict(late, p99_us=80.0, flagged=False)
    print_table({"sim": summ, "emu": emu, "rows": []})
    assert "FLAGGED" not in capsys.readouterr().out


def _resolved_doc():
    return {"name": "x", "seed": 1, "duration_ns": 1_000_000_000, "sample_interval_ns": 10_000_000,
            "links": {"down": {"rate_bps": 10_000_000, "buffer_bytes": 100000, "buffer_pkts": None, "loss": 0,
                               "qdisc": {"kind": "fifo", "params": {}}, "trace_ms": None}, "up": None},
            "flows": [{"id": 0, "group": 0, "name": "a", "cc": "cubic", "direction": "down", "rtt_ns": 20_000_000,
                       "start_ns": 0, "stop_ns": None, "size_bytes": None}],
            "probes": []}


def test_a_malformed_resolved_scenario_is_exit_2_naming_the_key(tmp_path):
    """bloatlab-emu reads the one contract (crates/schema): unknown keys, ids that are not their
    index and more flows than its port range holds are refused before anything starts."""
    import json

    from bloatlab import _bin

    def emu(doc):
        p = tmp_path / "sc.json"
        p.write_text(json.dumps(doc))
        return subprocess.run([_bin.find("bloatlab-emu"), "run", "--scenario", str(p), "--out", str(tmp_path / "o.json")],
                              capture_output=True, text=True, timeout=60)

    doc = _resolved_doc()
    doc["links"]["down"]["jitter_ns"] = 5
    r = emu(doc)
    assert r.returncode == 2 and "unknown field `jitter_ns`" in r.stderr and "Traceback" not in r.stderr, r.stderr
    doc = _resolved_doc()
    doc["flows"][0]["id"] = 3
    r = emu(doc)
    assert r.returncode == 2 and "flows[0].id must be 0" in r.stderr, r.stderr
    doc = _resolved_doc()
    doc["flows"] = [dict(doc["flows"][0], id=i) for i in range(5001)]
    r = emu(doc)
    assert r.returncode == 2 and "flow: the emulator runs at most 5000 flows, got 5001" in r.stderr, r.stderr
    assert not (tmp_path / "o.json").exists()


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"),
                    reason="without root the emulator is refused as unavailable before it reads the scenario")
def test_a_sample_interval_finer_than_the_emulator_records_is_refused_by_key(tmp_path):
    # it used to be raised to 1 ms silently (issue 9); the check runs before any namespace exists
    f = tmp_path / "fine.toml"
    f.write_text('name = "fine"\nduration = "2s"\nsample_interval = "500us"\n[link.down]\nrate = "10Mbit"\n'
                 '[[flow]]\ncc = "cubic"\nrtt = "20ms"\n')
    r = bloatlab("run", str(f), "--engine", "emu")
    assert r.returncode == 2 and "sample_interval: the emulator samples at most every 1 ms" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
