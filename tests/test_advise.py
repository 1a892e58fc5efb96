"""`bloatlab advise` / `measure` / `host` (docs/advise.md).

Layer 2: the recommendation on paths whose answer is physics, and equal to
the best of the full candidate sweep; layer 3: `measure` against emulated
paths of known truth (root only; the issue's accuracy targets)."""

import json
import os
import shutil
import subprocess

import pytest

from bloatlab.advise import recommend
from bloatlab.advise.path import Path, grade

from conftest import ROOT, run_cli

ALL = ["reno", "cubic", "bbr", "bbr3"]


def test_grades_follow_the_dslreports_scale():
    assert [grade(x) for x in (0, 4.9, 5, 29, 59, 199, 399, 400)] == ["A+", "A+", "A", "A", "B", "C", "D", "F"]


def test_random_loss_on_a_long_path_recommends_the_bbr_family():
    # 1 % random loss at 100 ms: Mathis bounds CUBIC/Reno near 1.4 Mbit/s; BBR keeps most of the link
    out = recommend.advise(Path(base_rtt_ms=100, down_mbps=100, loss=0.01), "throughput", current="cubic", available=ALL)
    rec = out["recommendation"]
    assert rec["cc"] in ("bbr", "bbr3"), out["alternatives"][:3]
    assert out["expected"]["goodput_mbps"] > 10 * out["current"]["goodput_mbps"]
    assert any("random loss" in r for r in out["reasons"])


def test_a_bloated_fifo_with_a_latency_goal_recommends_an_aqm_shaped_below_the_rate():
    p = Path(base_rtt_ms=20, down_mbps=20, buffer_bytes=int(10 * 20e6 * 0.020 / 8))  # 10 BDP
    out = recommend.advise(p, "latency", current="cubic", available=ALL)
    assert out["recommendation"]["qdisc"] in ("fq_codel", "cake")
    assert out["recommendation"]["shaper_mbps"] == pytest.approx(19.0)
    assert out["current"]["p95_rtt_ms"] > 150  # the 10-BDP FIFO fills: ~200 ms of queue
    assert out["expected"]["p95_rtt_ms"] < 30


def test_the_fair_goal_on_a_shallow_clean_path_does_not_pick_bbr_v1():
    # seed 001: BBRv1 starves CUBIC in shallow buffers
    p = Path(base_rtt_ms=40, down_mbps=50, buffer_bytes=int(0.3 * 50e6 * 0.040 / 8))
    out = recommend.advise(p, "fair", current="cubic", available=ALL, queues=("as-is",))
    assert out["recommendation"]["cc"] != "bbr", out["alternatives"][:4]


def test_the_recommendation_is_the_best_score_of_the_full_sweep_and_json_has_the_contract_keys():
    p = Path(base_rtt_ms=50, down_mbps=30, buffer_bytes=int(0.5 * 30e6 * 0.05 / 8), loss=0.002)
    out = recommend.advise(p, "balanced", current="cubic", available=ALL)
    best = max(out["alternatives"], key=lambda a: a["score"])
    assert (best["cc"], best["queue"]) == (out["expected"]["cc"], out["expected"]["queue"])
    assert set(out) >= {"path", "recommendation", "expected", "current", "alternatives", "reasons"}
    assert set(out["recommendation"]) >= {"cc", "qdisc", "shaper_mbps", "sysctl"}
    for k in ("goodput_mbps", "p95_rtt_ms", "retrans_rate"):
        assert isinstance(out["expected"][k], float) and isinstance(out["current"][k], float)
    assert len(out["alternatives"]) == 12


def test_advise_cli_json_and_bad_input(tmp_path):
    r = run_cli("advise", "--rtt", "40ms", "--rate", "20Mbit", "--buffer", "2bdp", "--json", "--any-kernel")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["recommendation"]["cc"] in ALL
    for bad, key in ((["--rtt", "40ms"], "--rate"), (["--rtt", "fast", "--rate", "1Mbit"], "--rtt"),
                     (["--rtt", "40ms", "--rate", "1Mbit", "--loss", "60%"], "--loss"),
                     (["--path", str(tmp_path / "none.toml")], "none.toml")):
        r = run_cli("advise", *bad)
        assert r.returncode == 2 and key in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_twin_file_round_trips_through_advise(tmp_path):
    from bloatlab.advise.path import to_toml

    p = Path(base_rtt_ms=30, down_mbps=40, up_mbps=10, buffer_bytes=300_000, loss=0.001, limiter="policer")
    f = tmp_path / "twin.toml"
    f.write_text(to_toml(p.twin()))
    q = Path.from_twin(str(f))
    assert (q.base_rtt_ms, q.down_mbps, q.up_mbps, q.loss, q.limiter) == (30, 40, 10, 0.001, "policer")
    r = run_cli("run", str(f), "--json")
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- measure (emulated paths, root)

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="measure tests need root and /dev/net/tun (emulated paths)")


def measure_through(shell_args, extra=()):
    env = dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin") + ":" + os.environ["PATH"])
    r = subprocess.run([os.path.join(ROOT, ".venv", "bin", "bloatlab"), "shell", *shell_args,
                        "--server", "bloatlab-probe server --bind 0.0.0.0:5301", "--",
                        "sh", "-c", "sleep 0.5; bloatlab measure $BLOATLAB_SERVER --quick --json " + " ".join(extra)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout[r.stdout.index("{"):])


@needs_root
def test_measure_a_bloated_fifo_path_within_the_targets():
    m = measure_through(["--down", "20Mbit", "--up", "10Mbit", "--rtt", "40ms", "--buffer", "2bdp"])
    assert abs(m["base_rtt_ms"]["p50"] - 40) <= 2 + 0.05 * 40
    assert m["down"]["rate_mbps"] == pytest.approx(20, rel=0.10)
    assert m["up"]["rate_mbps"] == pytest.approx(10, rel=0.10)
    assert m["down"]["buffer_bdp"] == pytest.approx(2.0, abs=max(0.3 * 2.0, 0.2))
    assert m["down"]["limiter"] == "fifo" and m["up"]["limiter"] == "fifo"
    assert m["down"]["grade"] in ("B", "C")  # 2 BDP at 40 ms: ~80 ms added


@needs_root
def test_measure_sees_an_aqm_and_a_clean_grade():
    m = measure_through(["--down", "20Mbit", "--rtt", "40ms", "--qdisc", "fq_codel"], ["--no-up"])
    assert m["down"]["limiter"] == "aqm"
    assert m["down"]["grade"] in ("A+", "A")
    assert m["down"]["rate_mbps"] == pytest.approx(20, rel=0.10)


def test_measure_refuses_a_host_without_a_server():
    r = run_cli("measure", "127.0.0.1:1", "--quick", timeout=60)
    assert r.returncode == 2 and "bloatlab-probe server" in r.stderr, r.stderr
