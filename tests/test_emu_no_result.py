"""A kernel traffic generator that gives no result (the emulator's
"no result from bloatlab-probe", seen when the machine is overloaded) must not
become a flow with 0 goodput in a result: the run is repeated once, and a
second failure is an error (issue 13). Seen on 2026-11-23 in
`reproduce imc2019 --engine emu` at load average ~5: a BBR flow read 0 and
CUBIC's share of 100 % failed a claim that holds."""

from __future__ import annotations

import json

import pytest

from bloatlab.engines import emu
from bloatlab.errors import EngineFailed

GOOD = {"meta": {"errors": []}, "flows": [{"id": 0}]}
BAD = {"meta": {"errors": ["flow 0: no result from bloatlab-probe: (no output)"]}, "flows": [{"id": 0}]}


def fake_emulator(monkeypatch, outcomes):
    calls = []

    def run_binary(argv):
        raw = outcomes[len(calls)]
        calls.append(argv)
        with open(argv[argv.index("--out") + 1], "w") as f:
            json.dump(raw, f)
        return 0

    monkeypatch.setattr(emu, "check", lambda: None)
    monkeypatch.setattr(emu._bin, "find", lambda name: "/bin/" + name)
    monkeypatch.setattr(emu, "_run_binary", run_binary)
    return calls


def test_a_missing_result_is_run_again_once(monkeypatch, capsys):
    calls = fake_emulator(monkeypatch, [BAD, GOOD])
    assert emu.run({"name": "x"}) == GOOD
    assert len(calls) == 2
    assert "running the scenario once more" in capsys.readouterr().err


def test_a_second_missing_result_is_an_error_not_a_zero(monkeypatch):
    calls = fake_emulator(monkeypatch, [BAD, BAD])
    with pytest.raises(EngineFailed) as e:
        emu.run({"name": "x"})
    assert len(calls) == 2 and "flow 0: no result" in str(e.value) and "too busy" in str(e.value)


def test_unstarted_page_objects_and_clean_runs_are_not_missing_results():
    assert emu.missing_results(GOOD) == []
    assert emu.missing_results({"meta": {}}) == []
    assert emu.missing_results(BAD) == ["flow 0: no result from bloatlab-probe: (no output)"]


def test_the_emulators_account_of_an_interrupt_reaches_the_user_when_it_stopped_first(capsys):
    # The emulator got the Ctrl-C and exited 130 before we did (our SIGINT ignored, as in a
    # background job, or not delivered yet): its "error: interrupted ..." line is what says what
    # it stopped and removed, and it was only collected, never printed.
    script = 'echo "error: interrupted by SIGINT at 1.0 s of a 20.0 s run: namespaces a and b removed" >&2; exit 130'
    with pytest.raises(KeyboardInterrupt):
        emu._run_binary(["/bin/sh", "-c", script])
    assert "interrupted by SIGINT at 1.0 s of a 20.0 s run: namespaces a and b removed" in capsys.readouterr().err
