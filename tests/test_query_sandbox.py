"""`bloatlab query` reaches nothing but its store (issue 36 §1).

The statement filter (one SELECT or EXPLAIN) let `EXPLAIN ANALYZE COPY ... TO`
through, and a SELECT could read any file (`read_text('/etc/shadow')`) or load
an extension. The connection itself must refuse: every attempt below, as an
EXPLAIN ANALYZE and inside a CTE, exits 2 naming `query:`, writes nothing and
returns nothing of the outside file; the store's own tables still answer."""

from __future__ import annotations

import hashlib
import os

import pytest

from bloatlab.cli import main as cli

SECRET = "bloatlab-sandbox-secret-4f1c"


@pytest.fixture()
def outside(tmp_path):
    """A file outside the store whose content must never come back."""
    f = tmp_path / "secret.txt"
    f.write_text(SECRET + "\n")
    return f


def _digests(store: str) -> dict[str, str]:
    out = {}
    for dirpath, _, names in os.walk(store):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as fh:
                out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _attacks(tmp_path, outside, store):
    target = tmp_path / "written.txt"
    parquet = next(os.path.join(d, n) for d, _, ns in os.walk(store) for n in ns if n == "flows.parquet")
    reads = [f"SELECT * FROM read_text('{outside}')", f"SELECT * FROM read_csv('{outside}')",
             f"SELECT * FROM read_blob('{outside}')", f"SELECT * FROM glob('{outside.parent}/*')",
             f"SELECT * FROM read_parquet('{parquet}')"]
    writes = [f"COPY (SELECT 'x' AS x) TO '{target}' (HEADER false)",
              f"COPY (SELECT 1 AS flow) TO '{parquet}' (FORMAT parquet)",
              f"ATTACH '{tmp_path / 'x.db'}' AS x", "INSTALL httpfs", "LOAD httpfs"]
    cases = []
    for q in reads:
        cases += [q, "EXPLAIN ANALYZE " + q, f"WITH a AS ({q}) SELECT * FROM a"]
    for q in writes:
        cases += [q, "EXPLAIN ANALYZE " + q]
    return cases, target


def test_no_statement_reads_or_writes_outside_the_store(tiny_sweep, tmp_path, outside, capsys):
    before = _digests(tiny_sweep)
    cases, target = _attacks(tmp_path, outside, tiny_sweep)
    for sql in cases:
        capsys.readouterr()
        assert cli(["query", tiny_sweep, sql, "--csv"]) == 2, sql
        cap = capsys.readouterr()
        assert cap.err.startswith("error: query:") and "Traceback" not in cap.err, (sql, cap.err)
        assert SECRET not in cap.out + cap.err, sql
        assert len(cap.err) < 400, sql
    assert not target.exists() and not (tmp_path / "x.db").exists()
    assert _digests(tiny_sweep) == before, "a store file changed"


def test_the_configuration_cannot_be_unlocked_from_sql(tiny_sweep, outside, capsys):
    for sql in ("SET enable_external_access = true", "RESET enable_external_access",
                "SELECT current_setting('enable_external_access') AS v"):
        capsys.readouterr()
        rc = cli(["query", tiny_sweep, sql, "--csv"])
        out = capsys.readouterr().out
        if rc == 0:  # reading the setting is allowed: it must say false
            assert [w.lower() for w in out.split()] == ["v", "false"], out
        else:
            assert rc == 2


def test_the_store_still_answers_through_views_and_ctes(tiny_sweep, capsys):
    capsys.readouterr()
    sql = ("WITH s AS (SELECT run_id, count(*) AS n FROM flow_series GROUP BY run_id) "
           "SELECT count(*) AS runs, min(n) > 0 AS some FROM s JOIN runs USING (run_id)")
    assert cli(["query", tiny_sweep, sql, "--csv"]) == 0
    assert capsys.readouterr().out.split() == ["runs,some", "2,True"]
    for view in ("link_series", "probe_series"):
        assert cli(["query", tiny_sweep, f"SELECT count(DISTINCT run_id) AS n FROM {view}", "--csv"]) == 0
        assert capsys.readouterr().out.split() == ["n", "2"], view


def test_query_without_sql_shows_the_swept_keys_and_headline_figures_readably(tiny_sweep, capsys, monkeypatch):
    """53 columns squeezed to one character each (issue 35): the default is the runs with what was swept and
    what came out, headers with units, within 80 columns; --all gives every column."""
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    assert cli(["query", tiny_sweep]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "goodput" in out and "Mbit/s" in out and "--all" in out, out
    import bloatlab

    for k in bloatlab.load(tiny_sweep).swept_keys():
        assert k in out, (k, out)
    assert cli(["query", tiny_sweep, "--all", "--csv"]) == 0
    assert len(capsys.readouterr().out.splitlines()[0].split(",")) > 30
