"""The emulator's command-line errors: no root needed (they fail before the emulator starts)."""

from __future__ import annotations

import subprocess
import sys

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
