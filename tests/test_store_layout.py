"""The store's run directories are Hive partitions, runs/run_id=<id>/ (issue 9
§4): Parquet readers get run_id from the path without parsing file names. A
store of the earlier layout (runs/<id>/) is read as it is and moved to the
new one by the next sweep that takes its lock, without running anything again."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.dataset as ds

import bloatlab
from bloatlab.cli import main as cli
from bloatlab.study import store

SQL = "SELECT run_id, count(*) AS n, round(sum(cwnd_bytes)) AS c FROM flow_series GROUP BY run_id ORDER BY run_id"


def _query(out, capsys, sql=SQL):
    assert cli(["query", out, sql, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_runs_are_stored_as_hive_partitions_that_pyarrow_and_duckdb_read(tiny_sweep, capsys):
    names = sorted(os.listdir(os.path.join(tiny_sweep, "runs")))
    ids = sorted(bloatlab.load(tiny_sweep).runs["run_id"])
    assert names == [f"run_id={r}" for r in ids]
    # pyarrow's own Hive partitioning names the runs, with no help from bloatlab
    t = ds.dataset([os.path.join(tiny_sweep, "runs", n, "flows.parquet") for n in names], format="parquet",
                   partitioning=ds.partitioning(flavor="hive"), partition_base_dir=os.path.join(tiny_sweep, "runs"))
    got = t.to_table().group_by("run_id").aggregate([("t", "count")]).to_pylist()
    rows = _query(tiny_sweep, capsys)
    assert sorted((g["run_id"], g["t_count"]) for g in got) == [(r["run_id"], r["n"]) for r in rows]
    assert [r["run_id"] for r in rows] == ids


def test_a_store_of_the_earlier_layout_is_read_and_then_migrated_by_a_resume(tiny_sweep, tmp_path, capsys):
    want = _query(tiny_sweep, capsys)
    old = str(tmp_path / "store")
    shutil.copytree(tiny_sweep, old)
    runs = os.path.join(old, "runs")
    for n in os.listdir(runs):  # back to runs/<id>/, as stores were written before
        os.rename(os.path.join(runs, n), os.path.join(runs, n[len("run_id="):]))
    ids = sorted(r["run_id"] for r in want)
    assert sorted(os.listdir(runs)) == ids
    # read as it is: runs, series with run_id, one run's result, store check
    st = bloatlab.load(old)
    assert sorted(st.runs["run_id"]) == ids and sorted(st.series("links")["run_id"].unique()) == ids
    assert st.result(ids[0]).summary["total_goodput_mbps"] == st.runs.set_index("run_id").loc[ids[0], "total_goodput_mbps"]
    assert _query(old, capsys) == want
    assert cli(["store", "check", old]) == 0 and "2 runs whole, 0 damaged" in capsys.readouterr().out
    # half migrated (a migration interrupted between two renames) reads the same
    os.rename(os.path.join(runs, ids[0]), os.path.join(runs, f"run_id={ids[0]}"))
    assert _query(old, capsys) == want and sorted(bloatlab.load(old).runs["run_id"]) == ids
    # a resumed sweep takes the lock, migrates, and runs nothing again
    mtimes = {r: os.stat(os.path.join(store.run_dir(old, r), "run.json")).st_mtime_ns for r in ids}
    d = os.path.dirname(tiny_sweep)
    for f in ("exp.toml", "scenario.toml"):
        shutil.copy(os.path.join(d, f), tmp_path / f)
    assert cli(["sweep", str(tmp_path / "exp.toml"), "--out", old, "-q"]) == 0
    assert "0 runs in" in capsys.readouterr().out
    assert sorted(os.listdir(runs)) == [f"run_id={r}" for r in ids]
    assert {r: os.stat(os.path.join(runs, f"run_id={r}", "run.json")).st_mtime_ns for r in ids} == mtimes
    assert _query(old, capsys) == want
