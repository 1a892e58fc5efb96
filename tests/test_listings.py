"""`bloatlab scenarios`, `qdiscs`, `ccs` (issue 15 §2): what exists, listed from
the one table that validation and both engines use; docs/queues.md kept current."""

import json
import os
import subprocess
import sys

from conftest import ROOT, run_cli


def test_qdiscs_lists_the_core_table_with_linux_defaults():
    r = run_cli("qdiscs", "--json")
    assert r.returncode == 0, r.stderr
    qs = {q["name"]: q for q in json.loads(r.stdout)}
    assert {"fifo", "codel", "fq_codel", "cake", "pie", "fq", "red", "tbf", "policer"} <= set(qs)
    p = {x["name"]: x for x in qs["fq_codel"]["params"]}
    # net/sched/sch_fq_codel.c: limit 10*1024, flows 1024, target 5 ms, interval 100 ms, quantum = MTU + 14
    assert (p["limit"]["default_text"], p["flows"]["default_text"], p["target"]["default_text"],
            p["interval"]["default_text"], p["quantum"]["default_text"]) == ("10240", "1024", '"5ms"', '"100ms"', '"1514B"')
    one = run_cli("qdiscs", "cake")
    assert one.returncode == 0 and "diffserv" in one.stdout and "fq_codel" not in one.stdout


def test_every_listed_default_is_accepted_back_as_a_parameter():
    # what the listing prints is what a scenario may write
    from bloatlab.commands.qdiscs import table
    from bloatlab.scenario import load

    for q in table():
        params = {}
        for p in q["params"]:
            if p["default_text"] in ("off", "unset"):
                continue
            v = p["default_text"]
            params[p["name"]] = json.loads(v) if v.startswith('"') or v in ("true", "false") else float(v) if "." in v else int(v)
        doc = {"duration": "1s", "link": {"down": {"rate": "10Mbit", "qdisc": q["name"], "qdisc_params": params}},
               "flow": [{"cc": "cubic", "rtt": "20ms"}]}
        load(doc).resolved()  # raises naming the key if a printed default does not read back


def test_every_parameter_carries_the_range_the_engines_accept():
    from bloatlab._native import qdiscs

    for q in qdiscs():
        for p in q["params"]:
            assert p["min"] <= p["default"] <= p["max"], (q["name"], p["name"])
    cake = {p["name"]: p for p in {q["name"]: q for q in qdiscs()}["cake"]["params"]}
    assert (cake["overhead"]["min"], cake["overhead"]["max"]) == (-64, 256)
    assert (cake["diffserv"]["min"], cake["diffserv"]["max"]) == (0, 4)  # the index of one of 5 tin modes


def test_docs_queues_md_is_the_current_listing():
    r = run_cli("qdiscs", "--markdown")
    assert r.returncode == 0, r.stderr
    with open(os.path.join(ROOT, "docs", "queues.md")) as f:
        doc = f.read()
    assert r.stdout.strip() in doc, "docs/queues.md is stale: regenerate its table with `bloatlab qdiscs --markdown`"


def test_ccs_lists_the_catalogue_and_this_kernel():
    r = run_cli("ccs", "--json")
    assert r.returncode == 0, r.stderr
    rows = {c["name"]: c for c in json.loads(r.stdout)}
    from bloatlab._native import cc_names

    assert list(rows) == cc_names()
    assert rows["bbr3"]["mainline"] is False and rows["cubic"]["mainline"] is True
    with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
        here = f.read().split()
    for name in here:
        if name in rows:
            assert rows[name]["this_kernel"] is True, name


def test_scenarios_lists_every_file_with_one_line(tmp_path):
    r = run_cli("scenarios", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    # the gallery in the package (python/bloatlab/gallery) and the repository's other scenarios, each file once
    # (scenarios/gallery is a link to the package's gallery, not walked)
    on_disk = sorted([os.path.relpath(os.path.join(d, f), os.path.join(ROOT, "python", "bloatlab"))
                      for d, _, fs in os.walk(os.path.join(ROOT, "python", "bloatlab", "gallery")) for f in fs
                      if f.endswith(".toml")] +
                     [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(os.path.join(ROOT, "scenarios"))
                      for f in fs if f.endswith(".toml")])
    assert sorted(x["path"] for x in rows) == on_disk
    assert len({os.path.realpath(x["file"]) for x in rows}) == len(rows)
    assert all(x["about"] and "\n" not in x["about"] and x["about"] != "(no description)" for x in rows), rows
    (tmp_path / "a.toml").write_text('description = "mine"\nduration = "1s"\n')
    (tmp_path / "b.toml").write_text("# first sentence. second\n# more\nname = 'b'\n")
    (tmp_path / "c.toml").write_text("not = [toml\n")
    r = run_cli("scenarios", "--dir", str(tmp_path), "--json")
    got = {os.path.basename(x["path"]): x["about"] for x in json.loads(r.stdout)}
    assert got["a.toml"] == "mine" and got["b.toml"] == "first sentence." and got["c.toml"].startswith("(not a valid scenario")


def test_listing_bad_input_is_a_clear_error(tmp_path):
    for args, key in ((["qdiscs", "nope"], "unknown qdisc"), (["scenarios", "--dir", str(tmp_path / "none")], "--dir")):
        r = run_cli(*args)
        assert r.returncode == 2 and key in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_ready_scenario_runs_by_name_from_any_directory(tmp_path):
    """`bloatlab run rrul` as `flent rrul` (issue 35): the name `scenarios` prints is what `run` takes."""
    r = subprocess.run([sys.executable, "-m", "bloatlab", "run", "rrul", "--set", "duration=2s", "--json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["scenario"]["name"] == "rrul"
    r = run_cli("scenarios")
    assert "rrul" in r.stdout.split()
    r = subprocess.run([sys.executable, "-m", "bloatlab", "run", "no-such-scenario"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "bloatlab scenarios lists them" in r.stderr, r.stderr



def test_a_scenarios_line_does_not_end_at_an_abbreviation_and_a_fifo_is_not_read(tmp_path):
    from bloatlab.commands.scenarios import summary

    f = tmp_path / "a.toml"
    f.write_text('# Four flows (Hock et al. 2017): e.g. 10 ms more. The rest.\nname = "a"\n')
    assert summary(str(f)) == "Four flows (Hock et al. 2017): e.g. 10 ms more."
    os.mkfifo(tmp_path / "b.toml")  # reading it would wait for a writer forever
    assert summary(str(tmp_path / "b.toml")).startswith("(not read:")
