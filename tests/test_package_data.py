"""The gallery ships inside the package (issue 35, "Scenarios by name"): an installed bloatlab lists its ready
scenarios and runs one by name from any directory, without a repository checkout. One copy of each file: the
repository's scenarios/gallery is a link to python/bloatlab/gallery."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from bloatlab.commands import scenarios

from conftest import ROOT

PKG = os.path.join(ROOT, "python", "bloatlab")


def test_the_gallery_is_package_data_and_the_repository_path_links_to_it():
    assert os.path.realpath(scenarios.GALLERY) == os.path.realpath(os.path.join(PKG, "gallery"))
    files = sorted(glob.glob(os.path.join(scenarios.GALLERY, "*.toml")))
    assert len(files) >= 12 and os.path.basename(files[0]).endswith(".toml")
    # the repository path is the same files, not a copy
    link = os.path.join(ROOT, "scenarios", "gallery")
    assert os.path.islink(link) and os.path.realpath(link) == os.path.realpath(scenarios.GALLERY)
    # maturin ships every file under python-source's package, so the gallery goes into the wheel
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        mat = tomllib.load(f)["tool"]["maturin"]
    assert mat["python-source"] == "python" and not any("toml" in str(x) for x in mat.get("exclude", []))
    # names resolve to the package's files
    assert os.path.realpath(scenarios.by_name("rrul")) == os.path.realpath(os.path.join(scenarios.GALLERY, "rrul.toml"))
    assert scenarios.by_name("no-such-scenario") is None
    # the Python API takes the name as the CLI does
    import bloatlab

    assert bloatlab.run("rrul", duration="1s").summary["flows"]


def _installed(tmp_path):
    """The package alone, as a wheel installs it: python/bloatlab copied to a site directory away from the
    repository (no scenarios/ beside it)."""
    site = tmp_path / "site"
    shutil.copytree(PKG, site / "bloatlab", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(site), COLUMNS="100")
    work = tmp_path / "elsewhere"
    work.mkdir()
    return site, env, work


def test_an_installed_package_lists_its_gallery_and_runs_a_scenario_by_name(tmp_path):
    site, env, work = _installed(tmp_path)
    r = subprocess.run([sys.executable, "-m", "bloatlab", "scenarios", "--json"], capture_output=True, text=True,
                       env=env, cwd=work, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert {x["name"] for x in rows} >= {"rrul", "home-line-bloat", "bbr-x4"}
    assert all(x["file"].startswith(str(site)) and x["path"].startswith("gallery" + os.sep) for x in rows)
    r = subprocess.run([sys.executable, "-m", "bloatlab", "run", "rrul", "--set", "duration=1s", "--json"],
                       capture_output=True, text=True, env=env, cwd=work, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["scenario"]["name"] == "rrul"
    # an experiment file's base may be a ready scenario's name too
    (work / "exp.toml").write_text('base = "home-line-bloat"\nset = {duration = "1s"}\n[grid]\n'
                                   '"link.down.qdisc" = ["fifo", "cake"]\n')
    r = subprocess.run([sys.executable, "-m", "bloatlab", "sweep", "exp.toml", "--out", "out", "-q"],
                       capture_output=True, text=True, env=env, cwd=work, timeout=180)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(not os.environ.get("BLOATLAB_WHEEL_DIR"),
                    reason="set BLOATLAB_WHEEL_DIR to a directory of built wheels (maturin build -o DIR) to check one")
def test_a_built_wheel_carries_the_gallery():
    wheels = sorted(glob.glob(os.path.join(os.environ["BLOATLAB_WHEEL_DIR"], "bloatlab-*.whl")), key=os.path.getmtime)
    assert wheels, os.environ["BLOATLAB_WHEEL_DIR"]
    names = set(zipfile.ZipFile(wheels[-1]).namelist())
    gallery = {f"bloatlab/gallery/{os.path.basename(p)}" for p in glob.glob(os.path.join(PKG, "gallery", "*.toml"))}
    assert gallery and gallery <= names, sorted(gallery - names)
