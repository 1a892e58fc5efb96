"""Whole scenarios against physics and published results (simulator).

Each tolerance is justified next to its assertion. All runs are seeded, so a
failure is reproducible, never flaky.
"""

import math
import statistics

import pytest

import bloatlab

MSS = 1448
WIRE = 1500


def one_flow(cc, rate="20Mbit", rtt="40ms", buffer="1bdp", loss=0, duration="30s", seed=1, up="1Gbit"):
    return bloatlab.run(f"""
name = "physics"
duration = "{duration}"
seed = {seed}
[link.down]
rate = "{rate}"
buffer = "{buffer}"
loss = {loss}
[link.up]
rate = "{up}"
[[flow]]
cc = "{cc}"
direction = "down"
rtt = "{rtt}"
""").summary


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_a_single_flow_fills_the_link_with_a_one_bdp_buffer(cc):
    # With a buffer of one BDP, a loss-based flow's window never falls below
    # the BDP after halving (cwnd_max = 2 BDP → BDP), so the link stays busy;
    # BBR paces at the bottleneck rate. Payload share of the wire: 1448/1500.
    # 3 % slack covers slow start (< 1 s of 30 s) and the recovery episodes.
    s = one_flow(cc)
    capacity = 20 * MSS / WIRE
    assert s["links"]["down"]["utilization"] > 0.97
    assert s["flows"][0]["goodput_mbps"] > 0.97 * capacity


@pytest.mark.parametrize("p", [0.005, 0.01, 0.02])
def test_reno_under_random_loss_follows_the_mathis_formula(p):
    # Mathis et al. 1997: throughput = MSS/RTT * sqrt(3/2) / sqrt(p) for a
    # periodic-loss Reno without timeouts. Linux's Reno grows by acked
    # packets, so delayed ACKs do not add Mathis' b = 2 factor. Random (not
    # periodic) loss lowers the constant (Padhye's model: ~1.0-1.1 instead of
    # 1.22 at these rates) and timeouts bite at 2 %; we accept ±35 % around
    # the Mathis value, a band that a model without fast recovery (or with
    # the b = 2 factor) falls out of.
    s = one_flow("reno", rate="1Gbit", rtt="100ms", buffer="10MB", loss=p, duration="60s", up="1Gbit")
    mathis = MSS * 8 / 0.100 * math.sqrt(1.5) / math.sqrt(p) / 1e6
    got = s["flows"][0]["goodput_mbps"]
    assert 0.65 * mathis < got < 1.35 * mathis, (got, mathis)


def test_a_full_fifo_delays_by_buffer_over_rate():
    # CUBIC with no random loss keeps a deep FIFO full in its sawtooth; the
    # longest queueing delay is the time to drain a full buffer, buffer/rate,
    # less one packet (the one that found the buffer full was dropped).
    s = one_flow("cubic", rate="10Mbit", rtt="20ms", buffer="500KB", duration="30s")
    expected_ms = 500_000 * 8 / 10e6 * 1e3  # 400 ms
    q = s["links"]["down"]["qdelay_ms"]
    assert expected_ms * 0.99 <= q["max"] <= expected_ms
    assert q["p99"] > 0.9 * expected_ms


@pytest.mark.parametrize("loss,floor", [(0.01, 0.85), (0.02, 0.85), (0.05, 0.8)])
def test_bbr_keeps_most_of_the_link_up_to_a_few_percent_of_random_loss(loss, floor):
    # BBR (v1) ignores loss below its long-term-bandwidth heuristics; Google's
    # BBR paper (Cardwell et al., ACM Queue 2016, Fig. 8) shows ≥ 90 % of a
    # 100 Mbit/s, 100 ms link up to 5 % loss. Our goodput excludes
    # retransmissions (5 % of the wire at 5 % loss) and headers (3.5 %), hence
    # the lower floors. Judged on the median of five seeds: a STARTUP that ends low is one draw of a bimodal
    # outcome (docs/fidelity.md rule 3; the kernel's at 10 % loss on 6 of 24 seeds). Since the receiver's DRS
    # measures a read skb by skb (Linux 6.18), seed 1 at 2 % is such a draw: 78.2 Mbit/s, seeds 2-10 89.9-90.6.
    runs = [one_flow("bbr", rate="100Mbit", rtt="100ms", loss=loss, duration="30s", up="100Mbit", seed=seed)
            ["flows"][0]["goodput_mbps"] for seed in range(1, 6)]
    assert statistics.median(runs) > floor * 100 * MSS / WIRE, runs


#: BBR at 10 % random loss on 100 Mbit/s, 100 ms, a 1-BDP FIFO, 30 s (the scenario of `one_flow` below): the
#: kernel's goodput, Mbit/s, one run per seed (Linux 6.18.44 through bloatlab's emulator, `bloatlab run FILE --engine
#: emu --seed N`; docs/fidelity.md, "BBR at 10 % random loss and the receive buffer"): seeds 1-12 on 2026-11-25
#: 15:53-16:11, seeds 13-24 at 18:17-18:24 (load 2.4-3.9, none flagged; bench/emu/seeds/physics-bbr-loss10.jsonl).
#: The kernel itself is bimodal: a STARTUP that ends at a few Mbit/s climbs back only by PROBE_BW's gain cycle (its
#: seed 3: 8 Mbit/s at 1.5 s, 96 at 20 s). Since 2026-11-26 both engines draw a seed's random loss from one stream
#: (bloatlab_core::rng::LOSS_STREAM), but at 10 % loss their packet sequences part within the first rounds, after
#: which the draws fall on other packets: the model is compared with this sample as a distribution.
KERNEL_BBR_AT_10PCT = (79.4, 80.0, 47.6, 67.9, 63.4, 65.7, 60.5, 76.5, 67.5, 43.0, 15.8, 79.8,
                       30.6, 79.3, 70.4, 80.0, 49.0, 69.4, 76.4, 79.0, 64.9, 48.5, 80.9, 79.4)
#: the model's seeds drawn against them: ~0.1-0.2 s each (the tests below: ~9 s on the 2-core VM at load 6). 60, not
#: 20: the model's low mode was rare (2 of 100 seeds; 6 of 60 since its DRS measures a read skb by skb), and 20
#: seeds put 0 or 5 of 20 in it by the luck of the draws
#: (seeds 1-20 held 5 of the 7 low runs of 100 under the earlier loss stream; that test passed on them)
BBR_AT_10PCT_SEEDS = range(1, 61)
#: the floor the single-seed test asserted (> 60 Mbit/s), asked now of the distribution: how often BBR keeps more
KEEPS_MBPS = 60
#: the comparisons' significance level: a model drawn from the kernel's distribution fails Fisher's test at most
#: this often, and the kernel's own median lies below the median's bound at most half as often
ALPHA = 0.05


def fisher_exact_p(a: int, n1: int, b: int, n2: int) -> float:
    """Fisher's exact test, two-sided: the probability, the margins fixed, of a 2x2 table [[a, n1 - a], [b, n2 - b]]
    no more likely than the one observed (hypergeometric; scipy.stats.fisher_exact's p without scipy)."""
    k, n = a + b, n1 + n2

    def prob(x: int) -> float:
        return math.comb(k, x) * math.comb(n - k, n1 - x) / math.comb(n, n1)

    seen = prob(a)
    return min(1.0, sum(prob(x) for x in range(max(0, k - n2), min(k, n1) + 1) if prob(x) <= seen * (1 + 1e-9)))


def median_lower_bound(xs, alpha: float) -> float:
    """The distribution-free lower confidence bound of a median: the k-th smallest of the n values, k the largest
    with P(Binomial(n, 1/2) < k) <= alpha / 2 (the bound pair x(k), x(n+1-k) covers the median with >= 1 - alpha)."""
    xs, n = sorted(xs), len(xs)
    k, below = 0, 0.0
    while below + math.comb(n, k) / 2 ** n <= alpha / 2:
        below += math.comb(n, k) / 2 ** n
        k += 1
    if k == 0:
        raise ValueError(f"{n} values cannot bound a median at alpha {alpha}")
    return xs[k - 1]


def test_the_statistics_helpers_give_the_textbook_values():
    # Fisher's tea-tasting table (3 of 4 right each way): p = 34/70; a table as unlikely as can be: p = 2/70.
    assert fisher_exact_p(3, 4, 1, 4) == pytest.approx(34 / 70)
    assert fisher_exact_p(4, 4, 0, 4) == pytest.approx(2 / 70)
    assert fisher_exact_p(5, 20, 6, 24) == pytest.approx(1.0)
    # n = 12: P(Bin(12, 1/2) <= 2) = 79/4096 = 0.019 <= 0.025 < P(<= 3) = 299/4096: the 3rd smallest
    assert median_lower_bound(range(12, 0, -1), 0.05) == 3
    # n = 24: P(Bin(24, 1/2) <= 6) = 0.011 <= 0.025 < P(<= 7) = 0.032: the 7th smallest
    assert median_lower_bound(range(24, 0, -1), 0.05) == 7
    # n = 5: P(Bin(5, 1/2) = 0) = 1/32 > 0.025: no bound at 95 %
    with pytest.raises(ValueError):
        median_lower_bound(range(5), 0.05)


@pytest.fixture(scope="module")
def bbr_at_10pct():
    return [one_flow("bbr", rate="100Mbit", rtt="100ms", loss=0.10, duration="30s", up="100Mbit", seed=s)
            ["flows"][0]["goodput_mbps"] for s in BBR_AT_10PCT_SEEDS]


def test_bbr_at_ten_percent_loss_loses_the_link_as_often_as_the_kernel_does(bbr_at_10pct):
    # Google's BBR paper (ACM Queue 2016, Fig. 8) and the kernel keep most of a 100 Mbit/s, 100 ms link at 10 %
    # random loss most of the time, not every time: 6 of the kernel's 24 seeds keep less than 60 Mbit/s.
    # How often BBR keeps more than 60 Mbit/s: Fisher's exact test on the two samples' counts (two-sided: a model
    # that never falls below disagrees too). The model falls below on 6 of these 60 seeds (p 0.09) since its
    # receiver's DRS measures a read skb by skb, as Linux 6.18's tcp_recvmsg does (1 of 60 before, p < 0.01).
    model, kernel = bbr_at_10pct, KERNEL_BBR_AT_10PCT
    m_low = sum(g < KEEPS_MBPS for g in model)
    k_low = sum(g < KEEPS_MBPS for g in kernel)
    p = fisher_exact_p(m_low, len(model), k_low, len(kernel))
    assert p >= ALPHA, f"below {KEEPS_MBPS} Mbit/s: model {m_low} of {len(model)}, kernel {k_low} of {len(kernel)}, " \
        f"Fisher p {p:.4f} < {ALPHA} (model: {sorted(round(g, 1) for g in model)}; kernel: {sorted(kernel)})"


def test_bbr_at_ten_percent_loss_keeps_the_link_in_most_runs_as_the_kernel_does(bbr_at_10pct):
    # Where most runs end: the model's median at or above the kernel median's distribution-free lower bound (the 7th
    # smallest of 24, 60.5 Mbit/s, at 95 %). Not asserted, and written down in docs/fidelity.md: the model's upper
    # mode (78-84 Mbit/s) sits at or above the kernel's highest runs (80.9), a disagreement of its own.
    model, kernel = bbr_at_10pct, KERNEL_BBR_AT_10PCT
    floor = median_lower_bound(kernel, ALPHA)
    assert statistics.median(model) >= floor, f"model median {statistics.median(model):.1f} below the kernel " \
        f"median's lower bound {floor} (model: {sorted(round(g, 1) for g in model)}; kernel: {sorted(kernel)})"


def test_bbr_falls_off_beyond_its_twenty_percent_cliff(bbr_at_10pct):
    # The same paper and seed 001 (IMC 2019): BBR's goodput collapses beyond
    # ~20 % loss (pacing_gain 1.25 cannot outgrow the loss any more): at 30 %
    # it keeps less than a tenth of what it keeps at 10 % (the median above).
    at30 = one_flow("bbr", rate="100Mbit", rtt="100ms", loss=0.30, duration="30s", up="100Mbit")
    assert at30["flows"][0]["goodput_mbps"] < 0.1 * statistics.median(bbr_at_10pct)


def test_cubic_collapses_above_a_tenth_of_a_percent_on_long_paths():
    # Seed 003 (JANOG41) and Google's paper: on 100 ms / 100 Mbit/s, CUBIC
    # keeps the link at 0 loss, loses most of it at 0.1 % and collapses to a
    # few Mbit/s at 1 % (Mathis-like: ~1.4 Mbit/s).
    s0 = one_flow("cubic", rate="100Mbit", rtt="100ms", loss=0, duration="30s", up="100Mbit")
    s1 = one_flow("cubic", rate="100Mbit", rtt="100ms", loss=0.001, duration="30s", up="100Mbit")
    s2 = one_flow("cubic", rate="100Mbit", rtt="100ms", loss=0.01, duration="30s", up="100Mbit")
    assert s0["flows"][0]["goodput_mbps"] > 90
    assert s1["flows"][0]["goodput_mbps"] < 20
    assert s2["flows"][0]["goodput_mbps"] < 5


def test_a_finite_transfer_reports_its_completion_time():
    # 1 MB over 20 Mbit/s and 40 ms: slow start from IW10 needs ~5 RTTs
    # (10, 20, 40, 80, 160+ segments for 691 segments) plus transmission
    # time 0.42 s; anything between 0.4 s and 1 s is physical.
    s = bloatlab.run("""
name = "fct"
duration = "10s"
[link.down]
rate = "20Mbit"
[[flow]]
cc = "cubic"
rtt = "40ms"
size = "1MB"
""").summary
    f = s["flows"][0]
    assert f["completed"] and 0.4 < f["fct_s"] < 1.0
    assert f["bytes_acked"] == 1_000_000


def test_a_probe_sees_the_standing_queue_of_a_bulk_flow():
    # A UDP echo probe shares the FIFO with a CUBIC download: its RTT is the
    # base RTT plus the queueing delay, so its median lies between base and
    # base + buffer/rate (a 1-BDP buffer: up to 2x the base RTT).
    s = bloatlab.run("""
name = "probe"
duration = "20s"
[link.down]
rate = "20Mbit"
buffer = "1bdp"
[link.up]
rate = "20Mbit"
[[flow]]
cc = "cubic"
rtt = "50ms"
[[probe]]
kind = "udp"
interval = "10ms"
rtt = "50ms"
""").summary
    p = s["probes"][0]["rtt_ms"]
    assert 55 < p["p50"] <= 101
    assert s["probes"][0]["loss"] < 0.05


def test_a_trace_driven_link_runs_in_the_simulator_at_the_trace_s_capacity(tmp_path):
    """One 1500-byte opportunity per ms is 12 Mbit/s of IP packets (Mahimahi's
    format); a bulk flow gets it minus TCP/IP headers (1448/1500), within the
    3 % that slow start and the last RTT cost in 10 s, whether the
    opportunities come evenly or in bursts (4 every 4 ms)."""
    smooth = tmp_path / "smooth.trace"
    smooth.write_text("1\n")
    bursty = tmp_path / "bursty.trace"
    bursty.write_text("4\n4\n4\n4\n")

    def run(trace):
        return bloatlab.run(f"""
duration = "10s"
[link.down]
rate = "trace:{trace}"
buffer = "100KB"
[[flow]]
cc = "cubic"
rtt = "40ms"
""").summary

    s = run(smooth)
    expect = 12.0 * 1448 / 1500
    assert expect * 0.97 < s["flows"][0]["goodput_mbps"] <= expect
    b = run(bursty)
    assert expect * 0.97 < b["flows"][0]["goodput_mbps"] <= expect
