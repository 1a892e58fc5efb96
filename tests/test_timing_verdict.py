"""The emulator's timing verdict as its users read it (docs/emulator.md "Timing
quality"): a run flagged for a stall of a link thread is marked by compare,
the fidelity table and the sweeps' runs table, with its reason; no emulator
runs here (summary dicts as `bloatlab-emu` writes them)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from bloatlab.commands.compare import print_table
from bloatlab.engines.emu import timing_flagged, timing_reason
from bloatlab.study import fidelity
from bloatlab.study.store import flatten

REASON = ("1 stall of ≥ 2.5 ms (a stall this long releases a burst the queue would not have seen, the down buffer's "
          "drain time); the longest 7.7 ms at 13.88 s (the down thread)")


def _summary(goodput: float, lateness: dict | None) -> dict:
    s = {"scenario": {"name": "04"}, "seed": 1, "duration_s": 15.0, "total_goodput_mbps": goodput,
         "flows": [{"cc": "cubic", "goodput_mbps": goodput, "retransmits": 90, "segs_sent": 100000}],
         "links": {}, "probes": []}
    if lateness is not None:
        s["meta"] = {"kernel": "k", "lateness": lateness}
    return s


def _stalled() -> dict:
    stalls = {"min_ms": 1.0, "count": 16, "over_2ms": 1, "over_5ms": 1, "over_10ms": 0, "max_ms": 7.7,
              "both_directions": 0, "backlog_pkts": 122, "drops": 24, "lost": 0, "threshold_ms": 2.5,
              "threshold_from": "the down buffer's drain time", "over_threshold": 1,
              "longest": [{"direction": "down", "start_s": 13.88, "ms": 7.7, "both": False, "backlog_pkts": 45, "drops": 24}]}
    # p99 is fine: before the stall verdict this run was not flagged
    return {"n": 250000, "p50_us": 3.0, "p99_us": 28.0, "max_us": 7693.9, "over_1ms": 40, "flagged": True,
            "reasons": ["stall"], "reason": REASON, "threshold_p99_us": 1000.0, "stalls": stalls}


def test_a_stall_flagged_run_is_flagged_with_its_reason_and_an_old_p99_flag_names_its_p99():
    assert timing_flagged(_summary(88.0, _stalled()))
    assert timing_reason(_summary(88.0, _stalled())) == REASON
    old = {"p50_us": 20.0, "p99_us": 1500.0, "max_us": 9000.0, "flagged": True, "threshold_p99_us": 1000.0}
    assert timing_reason(_summary(88.0, old)) == "p99 lateness 1500.0 µs exceeds 1000.0 µs"
    quiet = dict(_stalled(), flagged=False, reasons=[], reason=None)
    assert not timing_flagged(_summary(88.0, quiet)) and timing_reason(_summary(88.0, quiet)) is None
    assert timing_reason(_summary(88.0, None)) is None


def test_compare_prints_flagged_and_the_stall_that_flagged_it(capsys):
    sim = _summary(92.7, None)
    print_table({"sim": sim, "emu": _summary(88.0, _stalled()), "rows": []})
    out = capsys.readouterr().out
    assert "FLAGGED" in out and "the longest 7.7 ms at 13.88 s (the down thread)" in out


def test_the_runs_table_carries_the_reason_and_the_longest_stall():
    row = flatten(_summary(88.0, _stalled()))
    assert (row["timing_flagged"], row["timing_reasons"], row["stall_max_ms"]) == (True, "stall", 7.7)
    row = flatten(_summary(88.0, {"p99_us": 1500.0, "flagged": True}))  # a result from before the stall verdict
    assert (row["timing_flagged"], row["timing_reasons"], row["stall_max_ms"]) == (True, "p99", None)


def test_the_fidelity_table_marks_a_stall_flagged_point_and_leaves_it_out_of_the_targets():
    def store(summaries):
        rows = [dict(flatten(s), run_id=f"p{i}", seed=1) for i, s in enumerate(summaries)]
        return SimpleNamespace(runs=pd.DataFrame(rows), swept_keys=lambda: [])

    fine = {"p50_us": 3.0, "p99_us": 28.0, "max_us": 900.0, "flagged": False, "reasons": []}
    sim = store([_summary(90.0, None), _summary(90.0, None)])
    emu = store([_summary(100.0, fine), _summary(60.0, _stalled())])  # the stalled point's goodput error is +50 %
    table = fidelity.errors(sim, emu)
    assert list(table["timing_flagged"]) == [False, True]
    assert list(table["timing_reasons"]) == ["", "stall"]
    summ = fidelity.goodput_summary(table)
    assert summ["timing_flagged"] == 1
    assert summ["median_goodput_error"] == 0.1  # the unflagged point's |90 - 100| / 100 alone


def test_a_test_judges_an_emulated_run_on_kept_timing_and_draws_again_only_for_a_flagged_failure():
    """conftest.on_kept_timing, the real-time tests' judge (tests/test_advise.py's measure_through): a check that
    fails on a flagged run draws again, on a kept run fails; a flagged pass stands with a warning; three flagged
    failures skip with the emulator's reason."""
    import pytest
    from conftest import on_kept_timing

    kept, flagged = _summary(10.0, None), _summary(10.0, _stalled())

    def runs(*raws):
        made = []

        def run(i):
            made.append(i)
            return raws[i][0], raws[i][1]
        return run, made

    def check(got):
        assert got == "right"

    run, made = runs(("wrong", flagged), ("right", kept), ("right", kept))
    assert on_kept_timing(run, check, "t") == "right" and made == [0, 1]
    run, made = runs(("wrong", kept), ("right", kept))
    with pytest.raises(AssertionError):
        on_kept_timing(run, check, "t")
    assert made == [0]
    run, made = runs(("right", flagged),)
    with pytest.warns(UserWarning, match="passed on a run the emulator flagged"):
        assert on_kept_timing(run, check, "t") == "right"
    run, made = runs(*[("wrong", flagged)] * 3)
    with pytest.raises(pytest.skip.Exception, match="flagged 3 runs' timing on this machine: 1 stall"):
        on_kept_timing(run, check, "t")
    assert made == [0, 1, 2]
