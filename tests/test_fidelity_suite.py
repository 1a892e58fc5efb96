"""bench/emu/fidelity.py --sim-only --members N (issue 32): the fidelity suite's model side as an ensemble, judged
against the stored kernel runs; one member is the suite's single run, byte for byte. And the script's table in
docs/fidelity.md (issue 34 §3): the block between its markers is what it renders from the stored runs, and the two
headlines quote that table's figure."""

import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "bench", "emu", "fidelity.py")


def _suite(tmp_path, members, name="09-cubic-x2-50M-50ms"):
    with open(os.path.join(REPO, "bench", "emu", "fidelity.json")) as f:
        stored = [r for r in json.load(f) if r["name"] == name]
    stored[0]["runs"] = stored[0]["runs"][:1]  # seed 1 only: a second
    store = tmp_path / f"m{members}.json"
    store.write_text(json.dumps(stored))
    r = subprocess.run([sys.executable, SCRIPT, "--sim-only", "--members", str(members), "--store", str(store), "--print"],
                       capture_output=True, text=True, timeout=120)
    return r, (json.loads(store.read_text()) if r.returncode == 0 else None)


def test_members_spread_starts_over_a_jiffy_and_rtts_by_one_percent_the_first_as_written():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import fidelity
    finally:
        sys.path.pop(0)
    ms = fidelity.members(5)
    assert ms[0] == (1.0, 0) and fidelity.members(1) == [(1.0, 0)]
    assert sorted(sh for _, sh in ms) == [0, 800000, 1600000, 2400000, 3200000]
    assert min(k for k, _ in ms) == 0.99 and max(k for k, _ in ms) == 1.01
    path = os.path.join(REPO, "scenarios", "fidelity", "30-video-5M-beside-cubic.toml")
    assert fidelity.member_overrides(path, 1.0, 0) == []
    o = fidelity.member_overrides(path, 1.01, 800000)
    assert "flow.1.start=1000800000ns" in o and "flow.0.rtt=40400000ns" in o


def test_one_member_is_the_single_run_and_seven_keep_their_range(tmp_path):
    r1, one = _suite(tmp_path, 1)
    assert r1.returncode == 0, r1.stderr
    assert "members" not in one[0]["runs"][0]["sim"] and "ensemble" not in r1.stdout
    r7, seven = _suite(tmp_path, 7)
    assert r7.returncode == 0, r7.stderr
    sim = seven[0]["runs"][0]["sim"]
    assert sim["members"] == 7 and sim["runs"] == 7
    # two identical CUBIC flows at 50 ms: the race's outcome moves with the start's phase (docs/fidelity.md, 09)
    lo, hi = sim["flows"][0]["goodput_range"]
    assert lo < sim["flows"][0]["goodput_mbps"] <= hi or lo <= sim["flows"][0]["goodput_mbps"] < hi
    assert "an ensemble of 7 members" in r7.stdout and f"[sim {lo:.2f}–{hi:.2f}" in r7.stdout
    # the first member is the scenario as written: its flows are paired with the kernel's (same base RTT)
    assert [f["rtt_base_ms"] for f in sim["flows"]] == [f["rtt_base_ms"] for f in one[0]["runs"][0]["sim"]["flows"]]


def test_members_must_be_odd_and_only_with_sim_only(tmp_path):
    r, _ = _suite(tmp_path, 4)
    assert r.returncode == 2 and "--members: an odd count" in r.stderr
    r = subprocess.run([sys.executable, SCRIPT, "--members", "3", "--print", "--store", str(tmp_path / "x.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "only with --sim-only" in r.stderr


def _generated_and_quoted():
    """(the block between docs/fidelity.md's markers, what the script renders from bench/emu/fidelity.json, the
    stored run's figure and scenario count as the script words them, the two hand-written pages' text)."""
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import fidelity
    finally:
        sys.path.pop(0)
    with open(fidelity.MD_OUT, encoding="utf-8") as f:
        page = f.read()
    assert page.count(fidelity.START) == 1 and page.count(fidelity.END) == 1, "the script's markers, once each"
    assert page.index(fidelity.START) < page.index(fidelity.END)
    block = page.split(fidelity.START, 1)[1].split(fidelity.END, 1)[0]
    with open(fidelity.JSON_OUT) as f:
        rendered = fidelity.render(json.load(f))
    m = re.search(r"\*\*This run: median goodput error ([\d.]+) % over (\d+) flows\*\*.*?\*\*(\d+) of (\d+) scenarios",
                  rendered)
    assert m, "the script's figure line"
    with open(os.path.join(REPO, "BENCHMARKS.md"), encoding="utf-8") as f:
        bench = f.read()
    return block, rendered, m.groups(), page.split(fidelity.START, 1)[0], bench


def test_the_pages_table_is_what_the_script_renders_from_the_stored_runs():
    # bench/emu/fidelity.py writes "\n" + render(...) + "\n" between START and END: a store written without its
    # table, or a hand edit inside the markers, fails here (`--table-only` rewrites the block)
    block, rendered, _, _, _ = _generated_and_quoted()
    assert block == "\n" + rendered + "\n"


def test_the_headlines_quote_the_stored_runs_figure():
    # docs/fidelity.md's headline and BENCHMARKS.md quote the table's median goodput error and scenario count; a
    # --sim-only or kernel re-run that moves them must move the quotes with them
    _, _, (err, flows, ok, judged), head, bench = _generated_and_quoted()
    quoted = f"**median goodput error {err} %** over {flows} flows"
    assert quoted in head, f"docs/fidelity.md's headline should read {quoted!r}"
    assert f"**{ok} of {judged} scenarios**" in head
    assert f"**{err} %** over {flows} flows; {ok} of {judged} scenarios" in bench, (
        f"BENCHMARKS.md's standing row should read '**{err} %** over {flows} flows; {ok} of {judged} scenarios'")
