"""Hostile and broken scenarios (issue: survive hostile input): every value
an engine cannot hold, every run that would blow memory up, every range only
the Rust core checks comes back as exit 2 naming the full key path, with a
message of bounded length — never a traceback, a panic or an allocation
abort. A seeded fuzz run checks the same over a few hundred mutations."""

import contextlib
import io
import json
import random
import time

import pytest

from bloatlab import cli

BASE = """
name = "h"
duration = "{duration}"
sample_interval = "{si}"
[link.down]
rate = "{rate}"
buffer = "{buffer}"
qdisc = "{qdisc}"
loss = {loss}
{extra}
[[flow]]
cc = "cubic"
rtt = "{rtt}"
count = {count}
{flowextra}
[[probe]]
interval = "{pint}"
"""
DEFAULTS = dict(duration="1s", si="10ms", rate="10Mbit", buffer="100pkt", qdisc="fifo", loss='"0%"', extra="",
                rtt="20ms", count=1, flowextra="", pint="10ms")


def run_inproc(argv):
    """The CLI in this process (fast enough for hundreds of cases): exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path, name="s.toml", **kw):
    d = dict(DEFAULTS)
    d.update(kw)
    p = tmp_path / name
    p.write_text(BASE.format(**d))
    return str(p)


# Each: the scenario change, the key the error must name. Found on the old main
# as: silent 100 % loss; 8 GB in 3 s; 400 MB/s; 350 MB/s; a hang; 3.75 GB;
# "internal error" exit 1 without the key; the key without "link.down.".
CASES = {
    "loss bare 1": (dict(loss='"1"'), "link.down.loss"),
    "loss number 1": (dict(loss="1"), "link.down.loss"),
    "loss 2.5": (dict(loss="2.5"), "link.down.loss"),
    "sample_interval 1ns": (dict(si="1ns"), "sample_interval"),
    "probe interval 1ns": (dict(pint="1ns"), "probe.0.interval"),
    "duration 1e6s": (dict(duration="1e6s"), "sample_interval"),
    "duration past u64": (dict(duration="18446744073s"), "duration"),
    "duration 1e11s": (dict(duration="1e11s"), "duration"),
    "count 100000": (dict(count=100000), "flow.0.count"),
    "size 1e30B": (dict(flowextra='size = "1e30B"'), "flow.0.size"),
    "rtt 1e30s": (dict(rtt="1e30s"), "flow.0.rtt"),
    "buffer 1e30pkt": (dict(buffer="1e30pkt"), "link.down.buffer"),
    "buffer 1e30bdp": (dict(buffer="1e30bdp"), "link.down.buffer"),
    "pie alpha 65536": (dict(qdisc="pie", extra="qdisc_params = { alpha = 65536 }"), "link.down.qdisc_params.alpha"),
    "shaper 1bit": (dict(extra='shaper = { rate = "1bit" }'), "link.down.shaper.rate"),
    "fq_codel flows 0": (dict(qdisc="fq_codel", extra="qdisc_params = { flows = 0 }"), "link.down.qdisc_params.flows"),
    # the schedulers and shapers read their parameters through the same validated table as the AQMs
    "cake overhead 300": (dict(qdisc="cake", extra="qdisc_params = { overhead = 300 }"), "link.down.qdisc_params.overhead"),
    "fq quantum 2MB": (dict(qdisc="fq", extra='qdisc_params = { quantum = "2MB" }'), "link.down.qdisc_params.quantum"),
    "tbf burst 5GB": (dict(qdisc="tbf", extra='qdisc_params = { burst = "5GB" }'), "link.down.qdisc_params.burst"),
    "10 MB bad value": (dict(rate="x" * 10_000_000), "link.down.rate"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_values_exit_2_naming_the_full_key(tmp_path, case):
    change, key = CASES[case]
    t = time.monotonic()
    code, _, err = run_inproc(["run", write(tmp_path, **change), "--json"])
    assert code == 2, err
    assert err.startswith(f"error: {key}:"), err
    assert len(err) < 700, f"message of {len(err)} characters"
    assert time.monotonic() - t < 10


def test_limits_can_be_raised_knowingly(tmp_path):
    p = write(tmp_path, si="1ms", duration="2s")
    code, _, err = run_inproc(["run", p, "--json", "--set", "limits.max_series_rows=1000"])
    assert code == 2 and "limits.max_series_rows" in err, err
    code, out, err = run_inproc(["run", p, "--json", "--set", "limits.max_series_rows=100000"])
    assert code == 0, err
    code, _, err = run_inproc(["run", p, "--set", "limits.max_rows=1"])
    assert code == 2 and err.startswith("error: limits.max_rows:"), err


def test_toml_nested_500_deep_is_an_error_not_a_recursion_crash(tmp_path):
    p = tmp_path / "deep.toml"
    p.write_text("x = " + "[" * 500 + "]" * 500 + "\n")
    code, _, err = run_inproc(["run", str(p)])
    assert code == 2, err
    assert "nested too deeply" in err or "x:" in err or "unknown key" in err, err


@pytest.mark.parametrize("change", [dict(duration="5ms"), dict(rate="1bit"), dict(rate="1Kbit", duration="50ms")])
def test_utilization_counts_only_what_was_sent_within_the_run(tmp_path, change):
    code, out, err = run_inproc(["run", write(tmp_path, **change), "--json"])
    assert code == 0, err
    for link in json.loads(out)["links"].values():
        if link:
            assert 0.0 <= link["utilization"] <= 1.0, link


# ---------------------------------------------------------------- fuzz

WEIRD = ["", "1", "0", "-1", "1e30", "1e30s", "1e30B", "NaN", "inf", "-5ms", "10 ms", "1 BDP", "0bdp", "1e-30s",
         "x" * 3000, "100Gbit", "1bit", "1ns", "99%", "101%", "mcs99", "trace:/nonexistent", 0, 1, -1, 2**64, 1e300,
         float("nan"), True, [], {}, [1, 2], {"a": 1}, {"rate": "1bit"}, "fifo", "cake", "bbr", "up"]
MUTABLE = {  # where a value can go: the base document's keys
    (): ["duration", "sample_interval", "seed", "name", "bogus"],
    ("link", "down"): ["rate", "buffer", "qdisc", "loss", "policer", "shaper", "device_queue", "qdisc_params", "bogus"],
    ("flow", 0): ["cc", "rtt", "count", "size", "start", "stop", "direction", "ecn", "bogus"],
    ("probe", 0): ["interval", "rtt", "size", "direction", "kind"],
}


def mutate(rng):
    doc = {"name": "f", "duration": "200ms", "seed": 1,
           # a fuzzed run stays small: the limits bound whatever the mutations ask for
           "limits": {"max_packets": 2_000_000, "max_series_rows": 100_000, "max_probe_packets": 50_000, "max_flows": 50},
           "link": {"down": {"rate": "20Mbit", "buffer": "1bdp", "qdisc": "fifo"}},
           "flow": [{"cc": "cubic", "rtt": "20ms"}], "probe": [{"interval": "10ms"}]}
    for _ in range(rng.randint(1, 3)):
        where = rng.choice(list(MUTABLE))
        key = rng.choice(MUTABLE[where])
        target = doc
        for w in where:
            target = target[w]
        if rng.random() < 0.15:
            target.pop(key, None)
        elif key == "qdisc_params":
            target["qdisc"] = rng.choice(["fq_codel", "cake", "pie", "red", "tbf", "fq", "codel"])
            target[key] = {rng.choice(["limit", "flows", "target", "interval", "alpha", "quantum", "rate", "bogus"]): rng.choice(WEIRD)}
        else:
            target[key] = rng.choice(WEIRD)
    return doc


def toml_of(doc) -> str:
    """Serialize the mutated document (values TOML cannot write become strings)."""
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v) if v == v and abs(v) != float("inf") else ("nan" if v != v else "inf")
        if isinstance(v, int):
            return str(v) if -(2**63) <= v < 2**63 else f'"{v}"'
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        raise TypeError(v)

    lines = [f"{k} = {val(v)}" for k, v in doc.items() if not isinstance(v, (dict, list)) or k in ()]
    for k in ("limits",):
        lines.append(f"[{k}]")
        lines += [f"{a} = {val(b)}" for a, b in doc[k].items()]
    for d, t in doc["link"].items():
        lines.append(f"[link.{d}]")
        lines += [f"{a} = {val(b)}" for a, b in t.items()]
    for arr in ("flow", "probe"):
        for t in doc.get(arr, []):
            lines.append(f"[[{arr}]]")
            lines += [f"{a} = {val(b)}" for a, b in t.items()]
    return "\n".join(lines) + "\n"


def test_fuzzed_scenarios_exit_0_or_2_with_no_traceback_or_panic(tmp_path):
    rng = random.Random(20261122)
    budget_s, t0, n, codes = 90.0, time.monotonic(), 0, {0: 0, 2: 0}
    while n < 300 and time.monotonic() - t0 < budget_s:
        p = tmp_path / f"f{n}.toml"
        p.write_text(toml_of(mutate(rng)))
        code, _, err = run_inproc(["run", str(p), "--json"])
        assert code in (0, 2), f"case {n} ({p.read_text()!r}): exit {code}: {err}"
        assert "Traceback" not in err and "internal error" not in err and "panicked" not in err, f"case {n}: {err}"
        assert len(err) < 1000, f"case {n}: a message of {len(err)} characters"
        codes[code] += 1
        n += 1
    assert n >= 100, f"only {n} cases in {budget_s} s"
    assert codes[2] > 0 and codes[0] > 0, codes  # the mutations reach both sides of validation


# ---------------------------------------------------------------- wrong paths (issue: silent traps)


def test_wrong_out_paths_are_errors_naming_the_argument(tmp_path):
    sc = write(tmp_path, duration="1s")
    f = tmp_path / "a-file"
    f.write_text("keep me")
    code, _, err = run_inproc(["run", sc, "--out", str(f)])
    assert code == 2 and err.startswith(f"error: --out {f}:"), err
    assert f.read_text() == "keep me"  # nothing already written is lost
    store = tmp_path / "store"
    store.mkdir()
    (store / "study.json").write_text("{}")
    code, _, err = run_inproc(["run", sc, "--out", str(store)])
    assert code == 2 and "results store" in err, err
    assert not (store / "summary.json").exists()
    code, _, err = run_inproc(["run", sc, "--out", str(tmp_path / "no" / "such" / "dir")])
    assert code == 2 and "does not exist" in err, err
    run_dir = tmp_path / "r"
    assert run_inproc(["run", sc, "--out", str(run_dir)])[0] == 0
    code, _, err = run_inproc(["report", str(run_dir), "--out", str(tmp_path / "nonexist" / "x.html")])
    assert code == 2 and "does not exist" in err, err
    assert not (tmp_path / "nonexist").exists()
