"""Sweeps and the results store: expansion, validation, the store's schema,
resume after a kill, DuckDB queries, bloatlab.load, the Dask executor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import bloatlab
from bloatlab.cli import main as cli
from bloatlab.study import spec, store, sweep
from bloatlab.engines import emu as emu_engine

EMU_REASON = emu_engine.unavailable_reason()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOATLAB = [sys.executable, "-m", "bloatlab"]

SCENARIO = """
name = "tiny"
duration = "5s"
seed = 1
[link.down]
rate = "20Mbit"
buffer = "1bdp"
[link.up]
rate = "20Mbit"
[[flow]]
cc = "cubic"
rtt = "20ms"
[[probe]]
interval = "50ms"
"""


def write_exp(tmp_path, body: str, scenario: str = SCENARIO) -> str:
    (tmp_path / "scenario.toml").write_text(scenario)
    p = tmp_path / "exp.toml"
    p.write_text(textwrap.dedent(body))
    return str(p)


def test_grid_points_repeat_and_seeds_expand_as_a_cartesian_product(tmp_path):
    sw = spec.load(write_exp(tmp_path, """
        name = "g"
        base = "scenario.toml"
        repeat = 2
        [grid]
        "link.down.loss" = ["0%", "1%", "2%"]
        "flow.0.cc" = ["cubic", "bbr"]
    """))
    pts = sw.points()
    assert len(pts) == 3 * 2 * 2
    assert {p.seed for p in pts} == {1, 2}
    assert len({p.run_id for p in pts}) == len(pts)
    # The id depends only on the point, not on its position: the same file gives the same ids.
    assert [p.run_id for p in spec.load(str(tmp_path / "exp.toml")).points()] == [p.run_id for p in pts]
    # ... and on the engine: the emulator's runs of a point are not the simulator's (a store that holds the
    # simulator's must not skip them); the simulator's ids are those stores made before kept.
    assert [p.run_id for p in sw.points("sim")] == [p.run_id for p in pts]
    assert pts[0].run_id == spec.run_id(pts[0].part, sw.parts[0].base, pts[0].params, pts[0].seed)
    emu = [p.run_id for p in sw.points("emu")]
    assert len(set(emu)) == len(pts) and not set(emu) & {p.run_id for p in pts}


def test_points_list_is_crossed_with_the_grid(tmp_path):
    sw = spec.load(write_exp(tmp_path, """
        base = "scenario.toml"
        [[points]]
        "link.down.rate" = "10Mbit"
        "link.up.rate" = "10Mbit"
        [[points]]
        "link.down.rate" = "50Mbit"
        "link.up.rate" = "50Mbit"
        [grid]
        "flow.0.rtt" = ["10ms", "40ms"]
    """))
    pts = sw.points()
    assert [(p.params["link.down.rate"], p.params["flow.0.rtt"]) for p in pts] == [
        ("10Mbit", "10ms"), ("10Mbit", "40ms"), ("50Mbit", "10ms"), ("50Mbit", "40ms")]


@pytest.mark.parametrize("body, key", [
    ('base = "scenario.toml"\n[grid]\n"link.down.los" = ["1%"]\n', "grid.link.down.los"),
    ('base = "scenario.toml"\n[grid]\n"link.down.loss" = ["lots"]\n', "grid.link.down.loss"),
    ('base = "scenario.toml"\n[grid]\n"flow.3.cc" = ["bbr"]\n', "grid.flow.3.cc"),
    ('base = "scenario.toml"\nrepeat = 0\n', "repeat"),
    ('base = "scenario.toml"\n[grid]\n"link.down.loss" = "1%"\n', "grid.link.down.loss"),
    ('base = "scenario.toml"\nrepet = 2\n', "repet"),
    ('name = "x"\n', "base"),
])
def test_a_bad_experiment_file_exits_2_naming_the_key(tmp_path, capsys, body, key):
    path = write_exp(tmp_path, body)
    assert cli(["sweep", path, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {key}") and "Traceback" not in err
    assert not (tmp_path / "out" / "runs").exists()


def test_a_sweep_stores_one_run_per_point_with_params_and_metrics(tmp_path):
    path = write_exp(tmp_path, """
        name = "loss"
        base = "scenario.toml"
        [grid]
        "link.down.loss" = ["0%", "5%"]
        "flow.0.cc" = ["cubic", "bbr"]
    """)
    out = tmp_path / "out"
    assert cli(["sweep", path, "--out", str(out), "--quiet", "--jobs", "2"]) == 0
    st = bloatlab.load(str(out))
    runs = st.runs
    assert len(runs) == 4
    for col in ("run_id", "part", "engine", "seed", "rep", "link.down.loss", "flow.0.cc", "total_goodput_mbps",
                "retransmits", "rtt_p95_ms", "down_qdelay_p95_ms", "probe_rtt_p95_ms", "jain_fairness"):
        assert col in runs, col
    assert set(runs["link.down.loss"]) == {"0%", "5%"}
    # Each stored run is the same as running the point directly (same seed, same engine).
    row = runs[(runs["flow.0.cc"] == "bbr") & (runs["link.down.loss"] == "5%")].iloc[0]
    direct = bloatlab.run(str(tmp_path / "scenario.toml"), set={"flow.0.cc": "bbr", "link.down.loss": "5%", "seed": 1})
    assert row["total_goodput_mbps"] == pytest.approx(direct.summary["total_goodput_mbps"], rel=1e-12)
    # Loss costs CUBIC goodput (5 % random loss on a 20 Mbit/s path).
    g = runs.set_index(["flow.0.cc", "link.down.loss"])["total_goodput_mbps"]
    assert g[("cubic", "5%")] < 0.5 * g[("cubic", "0%")]
    # Time series of any run, with its id, and one run as a Result.
    ts = st.series("flows")
    assert set(ts["run_id"]) == set(runs["run_id"]) and "cwnd_bytes" in ts
    assert st.result(row["run_id"]).summary["seed"] == 1
    assert os.path.exists(out / "index.parquet")


def test_query_runs_sql_over_runs_flows_and_series(tmp_path, capsys):
    path = write_exp(tmp_path, 'name = "q"\nbase = "scenario.toml"\n[grid]\n"flow.0.cc" = ["cubic", "bbr"]\n')
    out = str(tmp_path / "out")
    assert cli(["sweep", path, "--out", out, "-q"]) == 0
    capsys.readouterr()
    assert cli(["query", out, 'SELECT "flow.0.cc" AS cc, total_goodput_mbps FROM runs ORDER BY cc', "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["cc"] for r in rows] == ["bbr", "cubic"] and all(r["total_goodput_mbps"] > 5 for r in rows)
    assert cli(["query", out, "SELECT count(DISTINCT run_id) AS n, max(t) AS tmax FROM flow_series", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 2, "tmax": 5.0}]
    assert cli(["query", out, "SELECT nope FROM runs"]) == 2
    assert "error: query:" in capsys.readouterr().err


def test_an_interrupted_sweep_resumes_without_losing_or_repeating_a_point(tmp_path):
    # 16 points of a 60 s, 100 Mbit/s run (~0.3 s each) on one worker: slow enough to kill in the middle.
    scen = SCENARIO.replace('"5s"', '"60s"').replace('"20Mbit"', '"100Mbit"')
    path = write_exp(tmp_path, """
        name = "resume"
        base = "scenario.toml"
        [grid]
        "link.down.loss" = ["0%", "0.01%", "0.1%", "0.5%", "1%", "2%", "3%", "4%"]
        "flow.0.cc" = ["cubic", "bbr"]
    """, scen)
    out = tmp_path / "out"
    runs_dir = out / "runs"
    cmd = BLOATLAB + ["sweep", path, "--out", str(out), "--jobs", "1", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            done = store.done_ids(str(out)) if runs_dir.exists() else set()
            if len(done) >= 4:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker, as a crash would
        proc.wait()
    before = {rid: os.stat(os.path.join(store.run_dir(str(out), rid), "run.json")).st_mtime_ns
              for rid in store.done_ids(str(out))}
    assert 4 <= len(before) < 16
    # What a killed writer can leave behind: a half-built run directory. It is never read as a run.
    (runs_dir / ".tmp-deadbeef0000-1").mkdir()
    (runs_dir / ".tmp-deadbeef0000-1" / "summary.json").write_text("{")
    assert len(bloatlab.load(str(out)).runs) == len(before)

    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"({len(before)} of 16 points were already in the store)" in res.stdout
    assert res.stdout.startswith(f"{16 - len(before)} runs in")
    after = store.done_ids(str(out))
    expected = {p.run_id for p in spec.load(path).points()}
    assert after == expected                          # none lost
    for rid, mtime in before.items():                  # none run twice
        assert os.stat(os.path.join(store.run_dir(str(out), rid), "run.json")).st_mtime_ns == mtime
    assert not any(d.startswith(".tmp-") for d in os.listdir(runs_dir))
    assert len(bloatlab.load(str(out)).runs) == 16


def test_a_point_that_hangs_is_killed_after_the_timeout_and_reported(tmp_path, monkeypatch):
    sw = spec.from_doc({"name": "t", "scenario": bloatlab.load_scenario(SCENARIO).doc,
                        "grid": {"flow.0.cc": ["cubic", "bbr"]}})
    real = sweep._execute

    def slow(payload):
        if payload["params"]["flow.0.cc"] == "bbr":
            time.sleep(30)
        return real(payload)

    monkeypatch.setattr(sweep, "_execute", slow)
    t0 = time.time()
    rep = sweep.run(sw, str(tmp_path / "out"), progress=False, timeout=1.0)
    assert time.time() - t0 < 15
    assert rep.ran == 1 and len(rep.failed) == 1
    assert rep.failed[0][0].params == {"flow.0.cc": "bbr"} and "timeout" in rep.failed[0][1]
    assert len(bloatlab.load(str(tmp_path / "out")).runs) == 1


def test_two_sweeps_cannot_write_one_store_at_once(tmp_path):
    out = str(tmp_path / "out")
    os.makedirs(out)
    with store.Lock(out):
        with pytest.raises(bloatlab.UserError, match="another sweep is writing"):
            with store.Lock(out):
                pass


def test_the_dask_executor_runs_the_same_points_on_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    path = write_exp(tmp_path, 'name = "d"\nbase = "scenario.toml"\n[grid]\n"flow.0.cc" = ["cubic", "bbr", "reno"]\n')
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        assert cli(["sweep", path, "--out", str(tmp_path / "dask"), "--executor", "dask", "--scheduler",
                    lc.scheduler_address, "-q"]) == 0
    assert cli(["sweep", path, "--out", str(tmp_path / "local"), "-q"]) == 0
    a = bloatlab.load(str(tmp_path / "dask")).runs.set_index("run_id")["total_goodput_mbps"].sort_index()
    b = bloatlab.load(str(tmp_path / "local")).runs.set_index("run_id")["total_goodput_mbps"].sort_index()
    assert len(a) == 3 and a.to_dict() == b.to_dict()
    assert not [d for d in os.listdir(tmp_path / "dask" / "runs") if d.startswith(".")]  # no token, no staging left


def test_dask_without_a_scheduler_is_a_usage_error(tmp_path, capsys):
    path = write_exp(tmp_path, 'base = "scenario.toml"\n')
    assert cli(["sweep", path, "--executor", "dask", "--out", str(tmp_path / "o")]) == 2
    assert "--scheduler" in capsys.readouterr().err


@pytest.mark.skipif(EMU_REASON is not None, reason=f"emulator unavailable: {EMU_REASON}")
def test_an_emu_sweep_runs_its_points_one_at_a_time_on_the_kernel(tmp_path):
    scen = SCENARIO.replace('"5s"', '"3s"').replace('"20Mbit"', '"10Mbit"')
    path = write_exp(tmp_path, 'name = "e"\nbase = "scenario.toml"\n[grid]\n"flow.0.cc" = ["cubic", "bbr"]\n', scen)
    out = str(tmp_path / "out")
    assert cli(["sweep", path, "--out", out, "--engine", "emu", "-q"]) == 0
    runs = bloatlab.load(out).runs
    assert list(runs["engine"]) == ["emu", "emu"] and set(runs["flow.0.cc"]) == {"cubic", "bbr"}
    # The kernel's TCP filled most of the 10 Mbit/s bottleneck in 3 s.
    assert (runs["total_goodput_mbps"] > 5).all() and (runs["total_goodput_mbps"] < 10).all()
    # One at a time: the second run started after the first one's end (wall-clock stamps in the runs' files).
    t = sorted(os.stat(os.path.join(store.run_dir(out, r), "summary.json")).st_mtime for r in runs["run_id"])
    assert t[1] - t[0] >= 2.5


def test_an_emu_point_with_flagged_timing_runs_again_and_is_stored_marked_if_it_stays_flagged(tmp_path, monkeypatch, capsys):
    """docs/emulator.md "Timing quality": a flagged emulator run is not stored as truth. Without an emulator
    here, the engine is the simulator with the emulator's verdict written into its summary: the cubic point's
    first attempt is flagged (a stall), its second is not; the bbr point is flagged every time (p99)."""
    sw = spec.from_doc({"name": "f", "scenario": bloatlab.load_scenario(SCENARIO).doc,
                        "grid": {"flow.0.cc": ["cubic", "bbr"]}})
    real = sweep._execute
    log = tmp_path / "attempts"

    def fake_emu(payload):
        cc = payload["params"]["flow.0.cc"]
        with open(log, "a") as f:  # the workers are forked: a file counts their attempts
            f.write(cc + "\n")
        n = log.read_text().split().count(cc)
        res = real(dict(payload, engine="sim"))
        late = {"n": 5000, "p99_us": 40.0, "flagged": False, "reasons": []}
        if cc == "bbr":
            late.update(p99_us=2400.0, flagged=True, reasons=["p99"], reason="p99 lateness 2400 µs exceeds 1000 µs")
        elif n == 1:
            late.update(flagged=True, reasons=["stall"], reason="a 25.0 ms stall of link-down is longer than the base RTT (20.0 ms)")
        res.summary.setdefault("meta", {})["lateness"] = late
        return res

    monkeypatch.setattr(sweep, "_execute", fake_emu)
    out = str(tmp_path / "out")
    rep = sweep.run(sw, out, engine="emu", progress=False, retry_flagged=2)
    assert log.read_text().split().count("cubic") == 2 and log.read_text().split().count("bbr") == 3
    assert rep.ran == 2 and rep.reran == 3 and not rep.failed
    assert [(p.params["flow.0.cc"], why) for p, why in rep.flagged] == [("bbr", "p99 lateness 2400 µs exceeds 1000 µs")]
    runs = bloatlab.load(out).runs.set_index("flow.0.cc")
    assert runs.loc["cubic", "timing_flagged"] == False and runs.loc["bbr", "timing_flagged"] == True  # noqa: E712
    assert runs.loc["bbr", "timing_reasons"] == "p99"
    assert not [d for d in os.listdir(os.path.join(out, "runs")) if d.startswith(".")]  # no staging left behind
    sweep.print_report(rep)
    said = capsys.readouterr().out
    assert "3 emulator run(s) repeated because their timing was flagged" in said
    assert "stored with flagged timing (every attempt)" in said and "2400 µs" in said
    # --retry-flagged 0 stores the first attempt, marked; a negative count is a usage error.
    log.unlink()
    rep0 = sweep.run(sw, str(tmp_path / "out0"), engine="emu", progress=False, retry_flagged=0)
    assert rep0.reran == 0 and len(rep0.flagged) == 2
    path = write_exp(tmp_path, 'base = "scenario.toml"\n')
    assert cli(["sweep", path, "--retry-flagged", "-1", "--out", str(tmp_path / "o")]) == 2
    assert "--retry-flagged" in capsys.readouterr().err


def test_a_points_work_is_the_bits_its_links_can_carry_in_the_run():
    resolved = bloatlab.load_scenario(SCENARIO).resolved()
    assert spec.work(resolved) == 5.0 * (20e6 + 20e6)
    sw = spec.from_doc({"name": "w", "scenario": bloatlab.load_scenario(SCENARIO).doc,
                        "grid": {"link.down.rate": ["10Mbit", "100Mbit"], "duration": ["1s", "2s"]}})
    assert [p.work for p in spec.validate(sw)] == [30e6, 60e6, 120e6, 240e6]


def test_a_sweep_hands_out_its_heaviest_points_first_and_stores_them_in_its_own_order(tmp_path, monkeypatch):
    # Longest processing time first: with one worker the run order is the points' work, descending (ties in the
    # sweep's order); the store's order stays the sweep's.
    sw = spec.from_doc({"name": "lpt", "scenario": bloatlab.load_scenario(SCENARIO).doc,
                        "set": {"duration": "1s"}, "grid": {"link.down.rate": ["10Mbit", "100Mbit", "40Mbit", "60Mbit"]}})
    log = tmp_path / "order.txt"
    real = sweep._execute

    def logged(payload):
        with open(log, "a") as f:
            f.write(payload["params"]["link.down.rate"] + "\n")
        return real(payload)

    monkeypatch.setattr(sweep, "_execute", logged)
    rep = sweep.run(sw, str(tmp_path / "out"), progress=False, jobs=1)
    assert rep.ran == 4 and not rep.failed
    assert log.read_text().split() == ["100Mbit", "60Mbit", "40Mbit", "10Mbit"]
    assert list(bloatlab.load(str(tmp_path / "out")).runs["link.down.rate"]) == ["10Mbit", "100Mbit", "40Mbit", "60Mbit"]
