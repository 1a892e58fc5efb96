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
