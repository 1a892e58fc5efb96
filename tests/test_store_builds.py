"""A stored run knows the build that made it (study/build.py), and a resumed
sweep never silently reuses another build's runs: before, a point whose
``run_id`` was stored was skipped whatever code had run it, so after a model
change ``reproduce`` showed the old figures until someone deleted the store.
Builds here are fakes (``build.identity`` patched; forked workers inherit
the patch), so that the tests say exactly what each resume does."""

from __future__ import annotations

import json
import os
import shutil
import textwrap

import pytest

import bloatlab
from bloatlab.cli import main as cli
from bloatlab.study import build, spec, store, sweep

SCENARIO = """
name = "tiny"
duration = "1s"
seed = 1
[link.down]
rate = "10Mbit"
buffer = "1bdp"
[link.up]
rate = "10Mbit"
[[flow]]
cc = "cubic"
rtt = "20ms"
"""

EXP = """
name = "builds"
base = "scenario.toml"
[grid]
"flow.0.cc" = ["cubic", "bbr"]
"link.down.loss" = ["0%", "1%"]
"""

A = build.Build("0.1.0+aaaaaaaaaaaa", {"version": "0.1.0", "native": "a" * 64, "python": "p" * 64})
B = build.Build("0.1.0+bbbbbbbbbbbb", {"version": "0.1.0", "native": "b" * 64, "python": "p" * 64})


@pytest.fixture
def exp(tmp_path):
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    p = tmp_path / "exp.toml"
    p.write_text(textwrap.dedent(EXP))
    return str(p)


def as_build(monkeypatch, b: build.Build) -> None:
    monkeypatch.setattr(build, "identity", lambda engine="sim": b)


def run_json(out: str) -> dict[str, dict]:
    return {rid: json.load(open(os.path.join(store.run_dir(out, rid), "run.json"))) for rid in store.done_ids(out)}


def mtimes(out: str) -> dict[str, int]:
    return {rid: os.stat(os.path.join(store.run_dir(out, rid), "run.json")).st_mtime_ns for rid in store.done_ids(out)}


def test_a_build_is_the_hash_of_the_imported_native_module_the_sources_and_the_version_computed_once():
    sim = build.identity("sim")
    assert build.identity("sim") is sim  # cached: a resume hashes nothing per point
    from bloatlab import _native

    assert sim.parts["native"] == store.files.sha256_file(_native.__file__)
    assert sim.parts["version"] == bloatlab.__version__ and len(sim.parts["python"]) == 64
    assert sim.id.startswith(bloatlab.__version__ + "+") and len(sim.id) == len(bloatlab.__version__) + 13
    emu = build.identity("emu")  # the kernel is the engine there, and the binaries that drive it
    assert {k: emu.parts[k] for k in sim.parts} == sim.parts and emu.parts["kernel"] == os.uname().release
    assert {"bloatlab-emu", "bloatlab-probe"} <= set(emu.parts) and emu.id != sim.id


def test_a_same_build_resume_skips_every_point_and_records_the_build(exp, tmp_path, monkeypatch, capsys):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    rep = sweep.run(spec.load(exp), out, progress=False, jobs=2)
    assert (rep.ran, rep.already, rep.other_build) == (4, 0, 0)
    docs = run_json(out)
    assert {d["row"]["build"] for d in docs.values()} == {A.id}
    assert all(d["build"] == A.parts for d in docs.values())
    assert list(bloatlab.load(out).runs["build"]) == [A.id] * 4
    before = mtimes(out)
    capsys.readouterr()
    rep = sweep.run(spec.load(exp), out, progress=False, jobs=2)
    assert (rep.ran, rep.already, rep.other_build) == (0, 4, 0)
    assert mtimes(out) == before  # nothing ran again
    assert "build" not in capsys.readouterr().err


def test_a_resume_by_another_build_runs_its_points_again_and_replaces_the_old_runs(exp, tmp_path, monkeypatch, capsys):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, jobs=2)
    ids = store.done_ids(out)
    before, figures = mtimes(out), bloatlab.load(out).runs.set_index("run_id")["total_goodput_mbps"]
    capsys.readouterr()
    as_build(monkeypatch, B)
    rep = sweep.run(spec.load(exp), out, progress=False, jobs=2)
    assert capsys.readouterr().err.splitlines() == [
        "4 of 4 stored runs came from another build (it differs in native): running them again "
        "(--reuse-any-build keeps them)"]
    assert (rep.ran, rep.already, rep.other_build, rep.failed) == (4, 0, 4, [])
    docs = run_json(out)
    assert set(docs) == ids and all(d["row"]["build"] == B.id and d["build"] == B.parts for d in docs.values())
    assert sorted(os.listdir(os.path.join(out, "runs"))) == sorted(f"run_id={r}" for r in ids)  # nothing aside
    runs = bloatlab.load(out).runs
    assert len(runs) == 4 and set(runs["build"]) == {B.id} and store.damaged(out) == {}
    after = mtimes(out)
    assert all(after[r] != before[r] for r in ids)  # every point ran again ...
    # ... on the same model (the builds are fakes), so to the same figures
    assert runs.set_index("run_id")["total_goodput_mbps"].sort_index().equals(figures.sort_index())
    rep = sweep.run(spec.load(exp), out, progress=False)  # B again: nothing to do
    assert (rep.ran, rep.already) == (0, 4) and mtimes(out) == after


def test_reuse_any_build_keeps_the_stored_runs_and_says_so(exp, tmp_path, monkeypatch, capsys):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, jobs=2)
    before = mtimes(out)
    capsys.readouterr()
    as_build(monkeypatch, B)
    assert cli(["sweep", exp, "--out", out, "--reuse-any-build", "-q"]) == 0
    io = capsys.readouterr()
    assert io.err.splitlines() == ["4 of 4 stored runs came from another build (it differs in native): "
                                   "kept (--reuse-any-build)"]
    assert io.out.startswith("0 runs in") and mtimes(out) == before
    assert set(bloatlab.load(out).runs["build"]) == {A.id}


def test_a_store_written_before_builds_opens_reads_as_build_unknown_and_resumes_by_running_again(
        exp, tmp_path, monkeypatch, capsys):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, jobs=2)
    # what a store of the earlier schema holds: no build in run.json, no build column
    for rid, doc in run_json(out).items():
        for key in ("info", "row"):
            del doc[key]["build"]
        del doc["build"]
        doc["digest"] = store.files.doc_digest(doc)
        json.dump(doc, open(os.path.join(store.run_dir(out, rid), "run.json"), "w"))
    os.unlink(os.path.join(out, store.INDEX))
    st = bloatlab.load(out)
    assert st.runs["build"].isna().all() and list(st.runs.columns[:8]) == [
        "run_id", "experiment", "part", "order", "engine", "seed", "rep", "build"]
    assert st.query("SELECT count(*) AS n FROM runs WHERE build IS NULL")["n"][0] == 4
    capsys.readouterr()
    assert cli(["query", out, "--json"]) == 0 and all(r["build"] is None for r in json.loads(capsys.readouterr().out))
    rep = sweep.run(spec.load(exp), out, progress=False, jobs=2)
    assert capsys.readouterr().err.splitlines() == [
        "4 of 4 stored runs came from another build (4 stored before runs recorded their build): running them "
        "again (--reuse-any-build keeps them)"]
    assert rep.ran == 4 and set(bloatlab.load(out).runs["build"]) == {A.id}


def test_a_point_that_fails_when_run_again_keeps_its_stored_run(exp, tmp_path, monkeypatch, capsys):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, jobs=2)
    old = run_json(out)
    as_build(monkeypatch, B)
    real = sweep._execute

    def bbr_breaks(payload):
        if payload["params"].get("flow.0.cc") == "bbr":
            raise RuntimeError("model broken")
        return real(payload)

    monkeypatch.setattr(sweep, "_execute", bbr_breaks)
    rep = sweep.run(spec.load(exp), out, progress=False, jobs=2)
    assert (rep.ran, len(rep.failed), rep.kept_other_build) == (2, 2, 2)
    sweep.print_report(rep)
    assert "  2 of the failed points keep their stored run of another build (column build)" in \
        capsys.readouterr().out.splitlines()
    runs = bloatlab.load(out).runs.set_index("flow.0.cc")
    assert set(runs.loc["bbr", "build"]) == {A.id} and set(runs.loc["cubic", "build"]) == {B.id}
    new = run_json(out)
    assert all(new[r] == old[r] for r in new if new[r]["row"]["flow.0.cc"] == "bbr")  # untouched, byte for byte
    assert store.damaged(out) == {}
    capsys.readouterr()
    assert cli(["query", out]) == 0  # runs of two builds: the default view says which made each
    text = capsys.readouterr().out
    header, rows = text.split("─" * 10)[0], text.splitlines()
    assert "build" in header.split()
    assert [sum(b.id in ln.split() for ln in rows) for b in (A, B)] == [2, 2]


def test_limit_counts_the_points_run_again(exp, tmp_path, monkeypatch):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, limit=2, jobs=1)
    as_build(monkeypatch, B)
    rep = sweep.run(spec.load(exp), out, progress=False, limit=3, jobs=1)
    assert (rep.ran, rep.other_build) == (3, 2)
    assert sorted(bloatlab.load(out).runs["build"]) == [B.id] * 3
    rep = sweep.run(spec.load(exp), out, progress=False, jobs=1)
    assert (rep.ran, rep.already, rep.other_build) == (1, 3, 0)


def test_a_sweep_killed_between_the_two_renames_of_a_replacement_loses_nothing(exp, tmp_path, monkeypatch):
    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, jobs=2)
    runs = os.path.join(out, "runs")
    first, second = sorted(store.done_ids(out))[:2]
    # killed after the old run went aside, before the new one came: the old one comes back
    os.rename(os.path.join(runs, f"run_id={first}"), os.path.join(runs, f".old-0123456789ab-run_id={first}"))
    assert first not in store.done_ids(out) and len(bloatlab.load(out).runs) == 3
    # killed after the new one came, before the old one was removed: the old one goes
    shutil.copytree(os.path.join(runs, f"run_id={second}"), os.path.join(runs, f".old-ba9876543210-run_id={second}"))
    with store.Lock(out):
        store.clean_partial(out)
    assert sorted(os.listdir(runs)) == sorted(f"run_id={r}" for r in store.done_ids(out))
    assert len(store.done_ids(out)) == 4 and store.damaged(out) == {}
    rep = sweep.run(spec.load(exp), out, progress=False)
    assert (rep.ran, rep.already) == (0, 4)


def test_the_report_names_the_builds_of_its_runs(exp, tmp_path, monkeypatch):
    from bloatlab.study import report

    as_build(monkeypatch, A)
    out = str(tmp_path / "out")
    sweep.run(spec.load(exp), out, progress=False, limit=3, jobs=1)
    runs = bloatlab.load(out).runs.copy()
    assert report._builds(runs) == f"{A.id} (3 runs)"
    runs.loc[0, "build"] = None
    assert report._builds(runs) == f"{A.id} (2 runs), unknown (1 run)"


def test_reproduce_sweep_and_fidelity_pass_reuse_any_build_on(exp, tmp_path, monkeypatch, capsys):
    from bloatlab.errors import UserError
    from bloatlab.study import fidelity

    seen = []

    def record(*args, **kw):
        seen.append(kw.get("reuse_any_build"))
        raise UserError("recorded")

    monkeypatch.setattr(sweep, "run", record)
    monkeypatch.setattr(fidelity, "run", record)
    out = str(tmp_path / "out")
    for argv in (["reproduce", "janog-lossy-download", "--quick", "--out", out], ["sweep", exp, "--out", out],
                 ["fidelity", exp, "--out", out]):
        assert cli(argv) == 2 and cli(argv + ["--reuse-any-build"]) == 2
    assert seen == [False, True] * 3
    capsys.readouterr()
    assert cli(["fidelity", "--advise", "--reuse-any-build", "--out", out]) == 2
    assert capsys.readouterr().err.startswith("error: --reuse-any-build: for an experiment's sweeps, not with --advise")
