"""The simulator's time series cross into Python as Arrow (issue 9 §2): the
engine's tables through the Arrow PyCapsule interface, pandas only on use,
the same columns and dtypes as before, Parquet written straight from Arrow,
and a sweep worker that writes its own run files."""

from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pytest

import bloatlab
from bloatlab import _native
from bloatlab.result import Result
from bloatlab.study import spec, sweep

SCENARIO = """
name = "arrow"
duration = "3s"
seed = 1
[link.down]
rate = "20Mbit"
buffer = "1bdp"
loss = "10%"
[link.up]
rate = "20Mbit"
[[flow]]
cc = "cubic"
rtt = "20ms"
count = 2
[[probe]]
interval = "20ms"
"""


@pytest.fixture(scope="module")
def res():
    return bloatlab.run(SCENARIO)


def test_the_engine_hands_over_arrow_tables_not_lists(res):
    for name in ("flows", "links", "probes"):
        t = res._series[name]
        assert isinstance(t, _native.ArrowTable)
        assert len(t) == pa.table(t).num_rows > 0
    assert res._series["flows"].column_names[:2] == ["flow", "t"]


def test_two_reads_of_a_table_share_the_engines_buffers(res):
    a = pa.table(res._series["flows"]).column("cwnd_bytes").chunks[0].buffers()[1]
    b = pa.table(res._series["flows"]).column("cwnd_bytes").chunks[0].buffers()[1]
    assert a.address == b.address and a.size >= 8 * len(res._series["flows"])


def test_the_frames_have_the_columns_and_dtypes_the_json_path_gave(res):
    f = res.flows
    assert list(f.columns) == ["flow", "t", "cwnd_bytes", "inflight_bytes", "srtt_ms", "pacing_rate_bps",
                               "delivery_rate_bps", "delivered_bytes", "sack_delivered_bytes", "retransmits", "state"]
    assert {str(f[c].dtype) for c in ("flow", "cwnd_bytes", "delivered_bytes", "retransmits")} == {"int64"}
    assert str(f["t"].dtype) == "float64" and str(f["srtt_ms"].dtype) == "float64"
    assert f["state"].map(type).eq(str).all()
    assert sorted(f["flow"].unique()) == [0, 1]
    assert list(res.links.columns) == ["direction", "t", "queue_bytes", "qdelay_ms", "drops"]
    assert set(res.links["direction"]) == {"down", "up"}
    p = res.probes
    assert str(p["rtt_ms"].dtype) == "float64"
    lost = p["rtt_ms"].isna().sum()
    assert 0 < lost < len(p)  # 10 % loss each way loses some probes, not all
    assert pa.table(res._series["probes"]).column("rtt_ms").null_count == lost


def test_saved_parquet_reads_back_equal_to_the_frames(res, tmp_path):
    res.save(str(tmp_path / "run"))
    back = Result.load(str(tmp_path / "run"))
    for name in ("flows", "links", "probes"):
        pd.testing.assert_frame_equal(back._frame(name), res._frame(name))


def test_a_changed_frame_is_what_gets_saved(tmp_path):
    r = bloatlab.run(SCENARIO)
    r.flows["cwnd_bytes"] = 0
    r.save(str(tmp_path / "run"))
    assert (Result.load(str(tmp_path / "run")).flows["cwnd_bytes"] == 0).all()


def test_a_result_pickles_with_its_tables(res):
    import pickle

    back = pickle.loads(pickle.dumps(res))
    assert back.summary == res.summary
    pd.testing.assert_frame_equal(back.flows, res.flows)


def test_a_result_built_from_lists_still_works(tmp_path):
    r = Result({"engine": "x"}, {"flows": {"flow": [0, 0], "t": [0.0, 0.1]}})
    assert list(r.flows["t"]) == [0.0, 0.1]
    assert r.table("flows").column("flow").to_pylist() == [0, 0]
    assert r.table("links").num_rows == 0
    with pytest.raises(KeyError, match="unknown time series"):
        r.table("nope")


def test_sweep_workers_write_their_own_runs_and_the_store_keeps_no_staging_directory(tmp_path):
    sw = spec.from_doc({"name": "a", "scenario": bloatlab.load_scenario(SCENARIO).doc,
                        "grid": {"link.down.rate": ["20Mbit", "10Mbit"]}})
    out = tmp_path / "out"
    real = sweep._execute

    def fail_slow_link(payload):
        if payload["params"]["link.down.rate"] == "10Mbit":
            raise RuntimeError("this point fails")
        return real(payload)

    sweep._execute = fail_slow_link
    try:
        rep = sweep.run(sw, str(out), progress=False, jobs=2)
    finally:
        sweep._execute = real
    assert rep.ran == 1 and len(rep.failed) == 1 and "this point fails" in rep.failed[0][1]
    assert not [d for d in os.listdir(out / "runs") if d.startswith(".")]
    st = bloatlab.load(str(out))
    rid = st.runs["run_id"].iloc[0]
    direct = bloatlab.run(SCENARIO, set={"seed": int(st.runs["seed"].iloc[0])})
    pd.testing.assert_frame_equal(st.result(rid).flows, direct.flows)
    assert st.query("SELECT count(*) AS n FROM flow_series")["n"][0] == len(direct.flows)


def test_a_dask_worker_stages_its_files_only_where_it_sees_the_store(tmp_path):
    # the sweep leaves a token file in the store: a worker that sees it shares the file system and writes
    # its own Parquet, returning only the summary; the same path elsewhere (no token) returns the tables
    payload = {"base": bloatlab.load_scenario(SCENARIO).doc, "params": {}, "seed": 1, "engine": "sim"}
    stage = str(tmp_path / "runs" / ".tmp-x")
    token = tmp_path / "runs" / ".dask-t"
    os.makedirs(tmp_path / "runs")
    status, (summary, series) = sweep._execute_safe(payload, stage, str(token))
    assert status == "ok" and set(series) == {"flows", "links", "probes"} and not os.path.exists(stage)
    token.write_text("")
    status, (summary2, series2) = sweep._execute_safe(payload, stage, str(token))
    assert status == "ok" and series2 == stage and summary2["total_goodput_mbps"] == summary["total_goodput_mbps"]
    assert sorted(os.listdir(stage)) == ["checksums.json", "flows.parquet", "links.parquet", "probes.parquet", "summary.json"]


def test_the_run_verb_without_out_skips_the_flow_series_and_prints_the_same_summary(res):
    # issue 34 §5: nothing reads the flows' samples of `run --json` without --out; the engine still
    # samples (meta.events) and the summary is the same; the Python API and --out keep them
    lean = bloatlab._run(SCENARIO, "sim", (), None, {}, flow_series=False)
    assert lean.table("flows").num_rows == 0
    assert res.table("flows").num_rows > 0
    assert lean.table("links").to_pylist() == res.table("links").to_pylist()
    assert {k: v for k, v in lean.summary["meta"].items() if k != "wall_s"} == \
        {k: v for k, v in res.summary["meta"].items() if k != "wall_s"}
    assert dict(lean.summary, meta=None) == dict(res.summary, meta=None)


def test_expectations_keep_the_flow_series_the_verb_judges_on():
    sc = SCENARIO + '\n[[expect]]\ncheck = "tput"\nmin = 0\n'
    judged = bloatlab._run(sc, "sim", (), None, {}, flow_series=False)
    assert judged.table("flows").num_rows > 0


def test_the_sack_inclusive_count_is_the_senders_whole_segments_and_never_goes_back(res):
    """``sack_delivered_bytes`` is the sender's ``tp->delivered`` x the MSS (the counter its rate samples read,
    tests of ``crates/sim/src/tcp/rate.rs``): whole segments, never decreasing, and at 10 % loss it moves
    otherwise than the receiver's in-order count (``delivered_bytes``), which a hole holds while SACKed segments
    above it are counted."""
    f = res.flows
    assert (f["sack_delivered_bytes"] % 1448 == 0).all()
    for _, g in f.groupby("flow"):
        s = g["sack_delivered_bytes"].to_numpy()
        assert (s[1:] >= s[:-1]).all() and s[-1] > 0
        assert (s != g["delivered_bytes"].to_numpy()).any()
