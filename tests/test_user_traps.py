"""Silent traps of issue 15 §1 around the results store and plots: each is a
clear error (exit 2, the argument named) or a correct result.

One small sweep (2 points, 3 simulated seconds) is shared by the tests."""

from __future__ import annotations

import os
import textwrap

import pytest

from bloatlab.cli import main as cli

@pytest.fixture(scope="module")
def sweep_dir(tiny_sweep):
    return tiny_sweep


def test_query_refuses_statements_that_write_and_leaves_no_file(sweep_dir, tmp_path, capsys):
    target = tmp_path / "leak.csv"
    for sql in (f"COPY (SELECT * FROM runs) TO '{target}'", f"ATTACH '{tmp_path / 'x.db'}' AS x",
                "CREATE TABLE t AS SELECT 1", "SET enable_external_access = true; SELECT 1",
                "SELECT 1; SELECT 2"):
        capsys.readouterr()
        assert cli(["query", sweep_dir, sql]) == 2, sql
        err = capsys.readouterr().err
        assert err.startswith("error: query:") and "read-only" in err and "Traceback" not in err, err
    assert not target.exists() and not (tmp_path / "x.db").exists()
    # A plain SELECT (also with WITH) still works.
    assert cli(["query", sweep_dir, "WITH r AS (SELECT * FROM runs) SELECT count(*) AS n FROM r", "--csv"]) == 0
    assert capsys.readouterr().out.split() == ["n", "2"]


def test_import_into_a_mistyped_directory_is_an_error_not_a_new_store(sweep_dir, tmp_path, capsys):
    f = tmp_path / "x.json"
    f.write_text("{}")
    typo = tmp_path / "ouy"
    assert cli(["query", str(typo), "--import", str(f)]) == 2
    err = capsys.readouterr().err
    assert "DIR:" in err and "does not exist" in err and "--new" in err and "Traceback" not in err
    assert not typo.exists()


@pytest.mark.parametrize("kind", ["timeseries", "cdf", "scatter", "param", "fairness"])
def test_plot_where_applies_to_every_kind_and_says_so_in_the_title(sweep_dir, tmp_path, kind):
    out = str(tmp_path / f"{kind}.png")
    from bloatlab import load
    from bloatlab.study import plots

    fig = plots.plot(load(sweep_dir), kind, where={"flow.0.cc": "bbr"}, x="flow.0.cc")
    sup = fig._suptitle.get_text() if fig._suptitle is not None else ""
    titles = [sup] if sup else [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles and all("only flow.0.cc=bbr" in t for t in titles), titles
    if kind == "cdf":
        # One run left: one line per panel, labelled with the kept point.
        labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
        assert labels and all("cubic" not in lb for lb in labels), labels
    fig.savefig(out)
    # Through the CLI: a timeseries of a 2-run store needs --run, unless --where leaves one run.
    if kind == "timeseries":
        assert cli(["plot", sweep_dir, "--kind", kind, "--where", "flow.0.cc=bbr", "--out", out]) == 0


@pytest.mark.parametrize("kind", ["timeseries", "cdf", "scatter", "param", "fairness"])
def test_plot_where_that_matches_nothing_fails_naming_it(sweep_dir, tmp_path, capsys, kind):
    out = tmp_path / "x.png"
    assert cli(["plot", sweep_dir, "--kind", kind, "--where", "flow.0.cc=vegas", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--where" in err and "no run matches" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("args,needle", [
    (["--kind", "scatter", "--hue", "foo"], '--hue: no column "foo"'),
    (["--kind", "param", "--out", "/nonexist/dir/x.png"], "--out: directory /nonexist/dir does not exist"),
    (["--kind", "param", "--where", "nokey=1"], '--where: no column "nokey"'),
    (["--kind", "fairness", "--run", "nope"], '--run: no run "nope"'),
])
def test_plot_with_wrong_names_and_paths_exits_2(sweep_dir, capsys, args, needle):
    assert cli(["plot", sweep_dir] + args) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and "internal error" not in err, err
    assert not os.path.exists("/nonexist")


def test_plot_where_on_a_single_run_is_an_error(sweep_dir, capsys):
    run = os.path.join(sweep_dir, "runs", sorted(os.listdir(os.path.join(sweep_dir, "runs")))[0])
    assert cli(["plot", run, "--kind", "cdf", "--where", "flow.0.cc=bbr"]) == 2
    assert "--where" in capsys.readouterr().err


def test_a_second_sweep_with_another_grid_asks_for_append_and_then_keeps_every_run(sweep_dir, tmp_path, capsys):
    import shutil

    import bloatlab

    out = str(tmp_path / "store")
    shutil.copytree(sweep_dir, out)
    d = os.path.dirname(sweep_dir)
    (tmp_path / "scenario.toml").write_text(open(os.path.join(d, "scenario.toml")).read())
    (tmp_path / "exp2.toml").write_text(textwrap.dedent("""
        name = "tiny"
        base = "scenario.toml"
        [grid]
        "flow.0.cc" = ["reno"]
    """))
    before = set(bloatlab.load(out).runs["run_id"])
    assert len(before) == 2
    assert cli(["sweep", str(tmp_path / "exp2.toml"), "--out", out, "-q"]) == 2
    err = capsys.readouterr().err
    assert "holds 2 runs of another grid" in err and "--append" in err and "Traceback" not in err
    assert set(bloatlab.load(out).runs["run_id"]) == before
    assert cli(["sweep", str(tmp_path / "exp2.toml"), "--out", out, "-q", "--append"]) == 0
    runs = bloatlab.load(out).runs
    assert len(runs) == 3 and before < set(runs["run_id"])
    assert sorted(runs["flow.0.cc"]) == ["bbr", "cubic", "reno"] and set(runs["experiment"]) == {"tiny"}
    # Another experiment's name is refused the same way.
    (tmp_path / "exp3.toml").write_text((tmp_path / "exp2.toml").read_text().replace('"tiny"', '"other"'))
    assert cli(["sweep", str(tmp_path / "exp3.toml"), "--out", out, "-q"]) == 2
    assert '"tiny"' in capsys.readouterr().err
    # Re-running the same sweep resumes (nothing to do, no error).
    assert cli(["sweep", str(tmp_path / "exp2.toml"), "--out", out, "-q", "--append"]) == 0
    assert len(bloatlab.load(out).runs) == 3


def test_damaged_runs_are_named_by_file_listed_by_store_check_and_rerun_on_resume(sweep_dir, tmp_path, capsys):
    import json
    import shutil

    import bloatlab

    out = str(tmp_path / "store")
    shutil.copytree(sweep_dir, out)
    from bloatlab.study.store import run_dir, run_dirs

    ids = sorted(run_dirs(out))
    assert cli(["store", "check", out]) == 0
    assert "2 runs whole, 0 damaged" in capsys.readouterr().out
    # Truncate one run.json and one Parquet file; make a directory without run.json.
    rj = os.path.join(run_dir(out, ids[0]), "run.json")
    with open(rj, "r+") as f:
        f.truncate(os.path.getsize(rj) // 2)
    pqf = os.path.join(run_dir(out, ids[1]), "flows.parquet")
    with open(pqf, "r+b") as f:
        f.truncate(os.path.getsize(pqf) - 10)
    os.makedirs(os.path.join(out, "runs", "halfdone"))
    assert cli(["store", "check", out, "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert set(rep["damaged"]) == {ids[0], ids[1], "halfdone"} and rep["ok"] == 0
    assert "run.json: damaged JSON" in rep["damaged"][ids[0]] and "flows.parquet: damaged" in rep["damaged"][ids[1]]
    # Reading the store names the damaged file, exit 2, no traceback.
    assert cli(["query", out]) == 2
    err = capsys.readouterr().err
    assert f"{ids[0]}/run.json: damaged JSON" in err and "Traceback" not in err
    # Resuming the sweep removes and recomputes them.
    d = os.path.dirname(sweep_dir)
    (tmp_path / "scenario.toml").write_text(open(os.path.join(d, "scenario.toml")).read())
    shutil.copy(os.path.join(d, "exp.toml"), tmp_path / "exp.toml")
    assert cli(["sweep", str(tmp_path / "exp.toml"), "--out", out, "-q"]) == 0
    err = capsys.readouterr().err
    assert f"damaged run {ids[0]}" in err and f"damaged run {ids[1]}" in err
    assert cli(["store", "check", out]) == 0
    assert sorted(bloatlab.load(out).runs["run_id"]) == ids
    assert cli(["store", "check", str(tmp_path / "nope")]) == 2


def _walk_cases(sweep_dir, tmp):
    run = os.path.join(sweep_dir, "runs", sorted(d for d in os.listdir(os.path.join(sweep_dir, "runs"))
                                                  if not d.startswith("."))[0])
    exp = os.path.join(os.path.dirname(sweep_dir), "exp.toml")
    scen = os.path.join(os.path.dirname(sweep_dir), "scenario.toml")
    afile = str(tmp / "afile")
    open(afile, "w").write("x")
    full = str(tmp / "full")
    os.makedirs(full, exist_ok=True)
    open(os.path.join(full, "keep.txt"), "w").write("x")
    return [
        ["run", "/nonexist.toml"], ["run", afile], ["run", scen, "--out", afile], ["run", scen, "--set", "nope.x=1"],
        ["compare", "/nonexist.toml"], ["sweep", "/nonexist.toml"], ["sweep", exp, "--out", afile],
        ["sweep", exp, "--out", full], ["sweep", exp, "--out", run],
        ["query", "/nonexist"], ["query", afile], ["query", sweep_dir, "SELECT nope FROM runs"],
        ["plot", "/nonexist", "--kind", "cdf"], ["plot", sweep_dir, "--kind", "nope"],
        ["plot", sweep_dir, "--kind", "param", "--x", "nope"], ["plot", sweep_dir, "--kind", "heatmap", "--x", "a"],
        ["plot", run, "--kind", "scatter"], ["plot", sweep_dir, "--kind", "cdf", "--out", afile + ".txt"],
        ["report", "/nonexist"], ["report", sweep_dir, "--out", "/nonexist/x.html"],
        ["reproduce", "nope"], ["reproduce", "bufferbloat", "--quick", "-q", "--out", afile],
        ["store", "check", "/nonexist"], ["store", "nope"], ["nope"],
    ]


def test_every_verb_with_wrong_paths_and_names_exits_2_with_a_message(sweep_dir, tmp_path, capsys):
    for args in _walk_cases(sweep_dir, tmp_path):
        capsys.readouterr()
        try:
            rc = cli(args)
        except SystemExit as e:  # argparse's own errors
            rc = e.code
        err = capsys.readouterr().err
        assert rc == 2, (args, rc, err)
        assert "error" in err and "internal error" not in err and "Traceback" not in err, (args, err)
    assert os.listdir(tmp_path / "full") == ["keep.txt"] and open(tmp_path / "afile").read() == "x"
    assert not os.path.exists("/nonexist")


def test_plots_draw_no_srtt_before_the_first_ack_no_pacing_zeros_and_name_the_probe(sweep_dir):
    import numpy as np

    from bloatlab import load
    from bloatlab.study import plots

    st = load(sweep_dir)
    for rid in st.runs["run_id"]:
        r = st.result(rid)
        # TCP_INFO reports srtt 0 before a connection's first RTT sample; the simulator's flows have one
        # from the handshake before their first sample, so plant the kernel's zero ...
        assert (r.flows["srtt_ms"] > 0).all()
        r.flows.loc[r.flows.index[0], "srtt_ms"] = 0.0
        fig = plots.cdf(r)
        srtt = [ln for ln in fig.axes[0].get_lines() if "srtt" in ln.get_label()]
        assert len(srtt) == 1 and np.nanmin(srtt[0].get_xdata()) > 0  # ... which no plot draws
        fig = plots.timeseries(r)
        labels = {ax.get_ylabel().split("\n")[0] for ax in fig.axes}
        pacing = (r.flows["pacing_rate_bps"].fillna(0) > 0).any()
        assert ("pacing rate" in labels) == bool(pacing), (labels, pacing)
        for ax in fig.axes:
            ys = np.concatenate([np.asarray(ln.get_ydata(), dtype=float) for ln in ax.get_lines()])
            assert np.nanmax(ys) > 0, ax.get_ylabel()
            if ax.get_ylabel() == "RTT (ms)":
                assert np.nanmin(ys) > 0
                assert "probe 0" in [t.get_text() for t in ax.get_legend().get_texts()]
