import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOATLAB = os.path.join(ROOT, ".venv", "bin", "bloatlab")


def run_cli(*args, **kw):
    """Run the real CLI as a user would; returns CompletedProcess."""
    return subprocess.run([BLOATLAB, *args], capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


@pytest.fixture
def cli():
    return run_cli


def scenario_text(**over) -> str:
    """A small valid scenario (20 Mbit/s, 40 ms, 1-BDP FIFO, one CUBIC flow)."""
    base = {
        "duration": '"10s"', "rate": '"20Mbit"', "buffer": '"1bdp"', "loss": "0", "cc": '"cubic"', "rtt": '"40ms"',
    }
    base.update({k: v for k, v in over.items()})
    return f"""
name = "t"
duration = {base['duration']}
seed = 1
[link.down]
rate = {base['rate']}
buffer = {base['buffer']}
qdisc = "fifo"
loss = {base['loss']}
[link.up]
rate = "100Mbit"
[[flow]]
cc = {base['cc']}
direction = "down"
rtt = {base['rtt']}
"""
