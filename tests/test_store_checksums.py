"""Every stored run carries checksums of its files (issue 16 §3), verified on
read: a flipped bit in a stored run is an error naming the file, never a
changed result (before: 205 of 300 single-bit flips of a run's Parquet file
changed query results silently)."""

from __future__ import annotations

import json
import os
import random
import shutil

import pytest

import bloatlab
from bloatlab.cli import main as cli
from bloatlab.errors import UserError

# integer aggregates only: DuckDB sums floats in parallel, in no fixed order
SQL = "SELECT count(*) AS n, sum(cwnd_bytes) AS c, sum(round(srtt_ms * 1000)::BIGINT) AS s FROM flow_series"


@pytest.fixture(scope="module")
def store(tiny_sweep):
    return tiny_sweep


def _run_dir(out):
    from bloatlab.study.store import done_ids, run_dir

    rid = sorted(done_ids(out))[0]
    return rid, run_dir(out, rid)


def test_run_json_records_a_checksum_of_every_file_and_of_itself(store):
    rid, d = _run_dir(store)
    doc = json.load(open(os.path.join(d, "run.json")))
    assert set(doc["files"]) == {"summary.json", "flows.parquet", "links.parquet", "probes.parquet"}
    assert all(len(h) == 64 for h in doc["files"].values()) and len(doc["digest"]) == 64


def test_single_bit_flips_in_a_stored_parquet_file_never_change_a_result_silently(store, tmp_path):
    out = str(tmp_path / "s")
    shutil.copytree(store, out)
    want = bloatlab.load(out).query(SQL)
    rid, d = _run_dir(out)
    p = os.path.join(d, "flows.parquet")
    orig = open(p, "rb").read()
    rng = random.Random(16)
    for _ in range(40):
        b = bytearray(orig)
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
        open(p, "wb").write(b)
        with pytest.raises(UserError, match=f"{rid}/flows.parquet: damaged"):
            bloatlab.load(out).query(SQL)
        with pytest.raises(UserError, match="flows.parquet: damaged"):
            bloatlab.load(out).series("flows")
    open(p, "wb").write(orig)
    assert bloatlab.load(out).query(SQL).equals(want)


def test_an_edited_run_json_value_is_detected_and_rerun_on_resume(store, tmp_path, capsys):
    out = str(tmp_path / "s")
    shutil.copytree(store, out)
    rid, d = _run_dir(out)
    rj = os.path.join(d, "run.json")
    text = open(rj).read()
    doc = json.loads(text)
    g = doc["row"]["total_goodput_mbps"]
    doc["row"]["total_goodput_mbps"] = g * 2  # valid JSON, a different number
    open(rj, "w").write(json.dumps(doc, indent=1))
    assert cli(["query", out]) == 2
    err = capsys.readouterr().err
    assert f"{rid}/run.json: damaged" in err and "Traceback" not in err
    assert cli(["store", "check", out]) == 1
    assert rid in capsys.readouterr().out
    for f in ("exp.toml", "scenario.toml"):
        shutil.copy(os.path.join(os.path.dirname(store), f), tmp_path / f)
    assert cli(["sweep", str(tmp_path / "exp.toml"), "--out", out, "-q"]) == 0
    assert f"damaged run {rid}" in capsys.readouterr().err
    runs = bloatlab.load(out).runs
    assert runs.loc[runs["run_id"] == rid, "total_goodput_mbps"].item() == pytest.approx(g)
