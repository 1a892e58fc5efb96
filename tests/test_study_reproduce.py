"""Every built-in experiment runs in --quick form with --check: each claim gets
a verdict, evaluated claims carry what was measured, the ones that cannot be
evaluated say why. (Whether a claim holds is the simulator's business and is
reported, not asserted: a test must not encode today's verdicts.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from bloatlab.study.experiments import get, names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_experiment_cites_its_source_and_published_numbers():
    assert set(names()) == {"bbr-vs-cubic-loss", "imc2019", "bufferbloat", "janog-policer-shaper",
                            "janog-lossy-download", "multi-bbr", "make-wifi-fast", "google-nsperf"}
    for n in names():
        e = get(n)
        assert e.name == n and e.title and "seed" in (e.source + e.published).lower()
        assert re.search(r"\d", e.published), n       # the published numbers themselves
        full, quick = e.sweep(False), e.sweep(True)
        assert len(quick.points()) <= len(full.points())


def test_the_full_imc2019_grid_has_640_runs_of_60_s():
    sw = get("imc2019").sweep(False)
    grid = next(p for p in sw.parts if p.name == "grid")
    pts = [p for p in sw.points() if p.part == "grid"]
    assert len(pts) == 640 and grid.base["duration"] == "60s"
    assert {p.params["link.down.buffer"] for p in pts} >= {"100KB", "10MB"}


@pytest.mark.parametrize("name", names())
def test_reproduce_quick_check_gives_every_claim_a_verdict(name, tmp_path):
    out = tmp_path / name
    t0 = time.time()
    res = subprocess.run([sys.executable, "-m", "bloatlab", "reproduce", name, "--quick", "--check", "--report", "--out",
                          str(out), "-q"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    wall = time.time() - t0
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert wall < 120, f"{name} --quick took {wall:.0f} s"
    doc = json.load(open(out / "check.json"))
    claims = doc["claims"]
    assert doc["experiment"] == name and claims
    for c in claims:
        assert c["verdict"] in ("holds", "fails", "not evaluated")
        if c["verdict"] == "not evaluated":
            assert c["reason"]
        else:
            assert c["measured"] and re.search(r"\d", c["measured"])
        assert f"] {c['id']}" in res.stdout
    assert re.search(r"\d+ hold, \d+ fail, \d+ not evaluated", res.stdout)
    assert all(not p["error"].startswith("Traceback") for p in doc["meta"]["failed_points"])
    # The report holds the source, every claim and the experiment's own figures.
    html = open(out / "report.html", encoding="utf-8").read()
    assert get(name).source.split(",")[0] in html
    assert all(c["id"] in html for c in claims) and html.count("<img ") >= 2


def test_unknown_experiment_is_an_error_listing_the_known_ones(capsys):
    from bloatlab.cli import main

    assert main(["reproduce", "imc2020", "--quick"]) == 2
    err = capsys.readouterr().err
    assert 'unknown experiment "imc2020"' in err and "imc2019" in err


@pytest.mark.parametrize("name", sorted(["bbr-vs-cubic-loss", "imc2019", "bufferbloat", "janog-policer-shaper",
                                         "janog-lossy-download", "multi-bbr", "make-wifi-fast", "google-nsperf"]))
def test_a_store_whose_every_point_failed_leaves_every_claim_not_evaluated(tmp_path, name):
    # an emulator run killed at every point (it used to end in "internal error: KeyError: 'part'")
    from bloatlab.study import store

    sw = get(name).sweep(True)
    store.init(str(tmp_path), sw.to_json())
    claims = get(name).claims(store.Store(str(tmp_path)))
    assert claims and all(c.verdict == "not evaluated" and c.reason for c in claims)


def test_the_emulator_gets_every_point_its_whole_duration():
    # the experiments' timeouts catch a hung simulator; on the emulator a point runs in real time
    from bloatlab.commands.reproduce import EMU_GRACE_S

    assert get("bufferbloat").sweep(True).longest_duration_s() == 120.0
    assert get("janog-lossy-download").sweep(True).longest_duration_s() == 600.0
    assert EMU_GRACE_S >= 30
