"""The one re-draw a real-time test gets (tests/conftest.py, REALTIME_RERUNS): only a test whose skip condition
names the emulator, only for a failed assertion, and listed in the summary."""

import os

import pytest

pytest_plugins = ["pytester"]

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = '''
import os, pytest
emu = pytest.mark.skipif(False, reason="emulator unavailable: none")

def _draw(name):
    f = os.path.join(os.environ["DRAWS"], name)
    n = int(open(f).read()) + 1 if os.path.exists(f) else 1
    open(f, "w").write(str(n))
    return n

@emu
def test_kernel_outlier_once():
    assert _draw("outlier") > 1, "the first draw lands outside the band"

@emu
def test_kernel_wrong_twice():
    _draw("wrong")
    assert False, "the model disagrees on every draw"

@emu
def test_emulator_crash():
    _draw("crash")
    raise RuntimeError("a crash is not a draw")

def test_simulator_wrong():
    _draw("sim")
    assert False, "deterministic: never re-drawn"
'''


def test_a_real_time_test_gets_one_more_draw_for_a_failed_assertion_only(pytester, tmp_path, monkeypatch):
    pytester.makeconftest(open(os.path.join(HERE, "conftest.py")).read())
    pytester.makepyfile(test_cases=CASES)
    monkeypatch.setenv("DRAWS", str(tmp_path))
    r = pytester.runpytest_subprocess("-rR", "-p", "no:cacheprovider")
    outcomes = r.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed"), outcomes.get("rerun")) == (1, 3, 2), r.outlines
    draws = {n: int((tmp_path / n).read_text()) for n in ("outlier", "wrong", "crash", "sim")}
    assert draws == {"outlier": 2, "wrong": 2, "crash": 1, "sim": 1}
    assert any("RERUN" in line and "test_kernel_outlier_once" in line for line in r.outlines)
