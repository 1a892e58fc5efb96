"""The gallery (issue 15 §2): every ready scenario runs, and says in one line
what it answers; the README's example sweep (exp.toml) is valid and runs."""

import glob
import os

import pytest

import bloatlab
from bloatlab.commands.scenarios import summary
from bloatlab.cli import main as cli

from conftest import ROOT

GALLERY = sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True))


def test_the_gallery_answers_the_common_questions():
    names = {os.path.basename(p)[:-5] for p in GALLERY}
    assert {"home-line-bloat", "home-line-cake-shaped", "rrul", "bbr-vs-cubic-shallow", "bbr-vs-cubic-deep", "policer-mix",
            "lossy-download", "bbr-x4", "rtt-unfairness", "dctcp-ecn", "cake-diffserv", "fq-pacing"} <= names


@pytest.mark.parametrize("path", GALLERY, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_ready_scenario_runs_and_says_what_it_is_for(path):
    assert summary(path) not in ("(no description)",) and not summary(path).startswith("(not a valid")
    s = bloatlab.run(path, duration="2s").summary  # short: this checks that it runs, not its figures
    assert s["flows"] and all(f["goodput_mbps"] >= 0 for f in s["flows"])


def test_the_readme_example_sweep_runs(tmp_path):
    out = str(tmp_path / "exp")
    assert cli(["sweep", os.path.join(ROOT, "exp.toml"), "--out", out, "-q", "--limit", "2"]) == 0
    runs = bloatlab.load(out).runs
    assert len(runs) == 2 and set(runs["link.down.qdisc"]) <= {"fifo", "fq_codel", "cake"}
