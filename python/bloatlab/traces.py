"""Variable-rate capacity traces (Mahimahi format) from documented, seeded models.

A Mahimahi trace (docs/scenario.md, ``rate = "trace:FILE"``) lists, one per line,
the millisecond at which a 1500-byte delivery opportunity comes. The models here
give a capacity in bit/s for every millisecond; :func:`to_mahimahi` turns it into
opportunities (one each time the capacity accumulated since the last one reaches
1500 bytes, so the mean rate is kept to within one packet).

Two models, for the autorate study (docs/autorate.md). Their numbers are stated
assumptions chosen to look like what the cited measurements describe, not fitted
to any data set:

``lte`` — a Markov-modulated rate (Winstein et al., "Stochastic Forecasts Achieve
High Throughput and Low Delay over Cellular Networks", NSDI 2013, Fig. 1: LTE
capacity swings by a factor of several within seconds). A birth-death chain over
five levels, 2, 5, 10, 20 and 35 Mbit/s, starting at 10; each visit lasts an
exponential time of mean 2 s (at least 100 ms); it then moves one level up or down
with probability 0.8 (equally likely, reflected at the ends) or two levels with
probability 0.2. On top, fast fading: every 100 ms the level is multiplied by
exp(N(0, 0.25²)) (about ±25 %).

``starlink`` — 15-s reconfiguration epochs (Starlink's global scheduler
reallocates satellites every 15 s, at 12, 27, 42 and 57 s past the minute: Tanveer
et al., "Making Sense of Constellations", CoNEXT 2023; Mohan et al., "A
Multifaceted Look at Starlink Performance", WWW 2024). Each epoch draws its
capacity log-uniformly in [15, 90] Mbit/s (measured residential downlinks span
~50-250 Mbit/s; scaled down ~1/3 so that the emulator keeps up on a small
machine), with the same 100-ms fading at σ = 0.15, and the first 100 ms of each
epoch at 20 % of it (the handover, where measurements see latency spikes and
loss). The first epoch boundary is at 12 s, as past a whole minute.

``fitted`` — the twin of a variable-rate path given as numbers (p10, median,
p90 and a time scale, issue 31; a measured one follows the process fitted to
its windows, ``bloatlab.advise.capacity``): the log of the capacity follows an
Ornstein-Uhlenbeck process (a Markov-modulated rate with continuous levels,
stepped every 100 ms) whose stationary law is the log-normal through the
measured median and p10-p90 span (sigma = ln(p90/p10) / (2 x 1.2816), the
normal's 90th percentile) and whose correlation time is the measured time
scale (:data:`FITTED_DEFAULT_TIMESCALE_S` where none was read). A fit of three
figures and a time scale, not a replay: the measured windows are a few
seconds, a run of the twin lasts longer.

Run as ``python -m bloatlab.traces lte --seed 1 --duration 120s -o lte.trace``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys

from . import units

#: Bytes one opportunity carries (Mahimahi's PACKET_SIZE).
OPPORTUNITY_BYTES = 1500

LTE_LEVELS_MBPS = (2.0, 5.0, 10.0, 20.0, 35.0)
LTE_START_LEVEL = 2
LTE_MEAN_DWELL_S = 2.0
LTE_MIN_DWELL_S = 0.1
LTE_JUMP2_P = 0.2
FADE_PERIOD_MS = 100
LTE_FADE_SIGMA = 0.25

STARLINK_EPOCH_S = 15.0
STARLINK_FIRST_EPOCH_S = 12.0
STARLINK_RANGE_MBPS = (15.0, 90.0)
STARLINK_FADE_SIGMA = 0.15
STARLINK_HANDOVER_MS = 100
STARLINK_HANDOVER_SHARE = 0.2


def lte_rates(duration_ms: int, seed: int) -> list[float]:
    """Capacity (bit/s) for each millisecond of the ``lte`` model."""
    rng = random.Random(f"lte-{seed}")
    out: list[float] = []
    level = LTE_START_LEVEL
    n = len(LTE_LEVELS_MBPS)
    while len(out) < duration_ms:
        dwell_ms = int(1000 * max(LTE_MIN_DWELL_S, rng.expovariate(1 / LTE_MEAN_DWELL_S)))
        out.extend([LTE_LEVELS_MBPS[level] * 1e6] * dwell_ms)
        step = 2 if rng.random() < LTE_JUMP2_P else 1
        up = rng.random() < 0.5
        nxt = level + step if up else level - step
        if nxt < 0 or nxt >= n:  # reflect at the ends
            nxt = level - step if up else level + step
        level = min(max(nxt, 0), n - 1)
    return _fade(out[:duration_ms], rng, LTE_FADE_SIGMA)


def starlink_rates(duration_ms: int, seed: int) -> list[float]:
    """Capacity (bit/s) for each millisecond of the ``starlink`` model."""
    rng = random.Random(f"starlink-{seed}")
    lo, hi = (math.log(x) for x in STARLINK_RANGE_MBPS)
    out: list[float] = []
    boundary = int(STARLINK_FIRST_EPOCH_S * 1000)
    first = True
    while len(out) < duration_ms:
        rate = math.exp(rng.uniform(lo, hi)) * 1e6
        length = boundary if first else int(STARLINK_EPOCH_S * 1000)
        epoch = [rate] * length
        if not first:
            for i in range(min(STARLINK_HANDOVER_MS, length)):
                epoch[i] = rate * STARLINK_HANDOVER_SHARE
        out.extend(epoch)
        first = False
    return _fade(out[:duration_ms], rng, STARLINK_FADE_SIGMA)


#: the normal distribution's 90th percentile: p90 / median = exp(1.2816 sigma) for a log-normal
Z90 = 1.2815515655446004
#: the fitted model's correlation time where the measurement read none (s): the LTE model's mean dwell
FITTED_DEFAULT_TIMESCALE_S = LTE_MEAN_DWELL_S


def log_sd(p10: float, p90: float) -> float:
    """The log-normal's sigma through its p10 and p90 (any one unit): ln(p90 / p10) / (2 :data:`Z90`)."""
    return math.log(p90 / p10) / (2 * Z90)


def fitted_rates(p10_bps: float, p50_bps: float, p90_bps: float, timescale_s: float | None, duration_ms: int,
                 seed: int = 1) -> list[float]:
    """Capacity (bit/s) for each millisecond of the ``fitted`` model (module docstring)."""
    if not 0 < p10_bps <= p50_bps <= p90_bps:
        raise ValueError(f"fitted trace: expected 0 < p10 <= median <= p90, got {p10_bps:g}, {p50_bps:g}, {p90_bps:g}")
    rng = random.Random(f"fitted-{seed}")
    sigma = log_sd(p10_bps, p90_bps)
    tau = timescale_s if timescale_s and timescale_s > 0 else FITTED_DEFAULT_TIMESCALE_S
    a = math.exp(-FADE_PERIOD_MS / 1000 / tau)
    x = rng.gauss(0.0, sigma)
    out: list[float] = []
    while len(out) < duration_ms:
        out.extend([p50_bps * math.exp(x)] * FADE_PERIOD_MS)
        x = a * x + math.sqrt(1 - a * a) * sigma * rng.gauss(0.0, 1.0)
    return out[:duration_ms]


def _fade(rates: list[float], rng: random.Random, sigma: float) -> list[float]:
    """Multiply each 100-ms block by exp(N(0, sigma²))."""
    out = list(rates)
    for start in range(0, len(out), FADE_PERIOD_MS):
        f = math.exp(rng.gauss(0.0, sigma))
        for i in range(start, min(start + FADE_PERIOD_MS, len(out))):
            out[i] *= f
    return out


def to_mahimahi(rates_bps: list[float]) -> list[int]:
    """Delivery opportunities (ms, one 1500-byte packet each) for a capacity per millisecond."""
    ms: list[int] = []
    credit = 0.0
    for i, r in enumerate(rates_bps):
        credit += r / 8000.0
        while credit >= OPPORTUNITY_BYTES:
            credit -= OPPORTUNITY_BYTES
            ms.append(i + 1)
    if not ms or ms[-1] < len(rates_bps):
        ms.append(len(rates_bps))  # the last line is the period: the trace's full length
    return ms


def capacity_percentiles(ms: list[int], window_ms: int = 1000) -> dict[str, float]:
    """The trace's capacity over windows of ``window_ms``: mean, p10, median, p90 (Mbit/s)."""
    period = ms[-1]
    counts = [0] * max(1, period // window_ms)
    for t in ms:
        i = (t - 1) // window_ms
        if i < len(counts):
            counts[i] += 1
    rates = sorted(c * OPPORTUNITY_BYTES * 8 / (window_ms / 1000) / 1e6 for c in counts)

    def q(p: float) -> float:
        return rates[min(len(rates) - 1, int(p * len(rates)))]

    return {"mean_mbps": len(ms) * OPPORTUNITY_BYTES * 8 / (period / 1000) / 1e6,
            "p10_mbps": q(0.10), "median_mbps": q(0.50), "p90_mbps": q(0.90)}


MODELS = {"lte": lte_rates, "starlink": starlink_rates}


def read_mahimahi(path: str) -> list[int]:
    """A trace file's opportunities (ms, one 1500-byte packet each; the last line the period)."""
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def mahimahi_text(ms: list[int]) -> str:
    """A trace's file text: one opportunity's millisecond a line."""
    return "".join(f"{t}\n" for t in ms)


def write_mahimahi(path: str, rates_bps: list[float]) -> list[int]:
    """Write the trace of a capacity per millisecond to ``path`` (atomically); its opportunities."""
    from .result import atomic_write_text

    ms = to_mahimahi(rates_bps)
    atomic_write_text(path, mahimahi_text(ms))
    return ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bloatlab.traces", description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", default="120s", help='trace length, e.g. "120s"')
    ap.add_argument("-o", "--output", help="file to write (default: stdout)")
    a = ap.parse_args(argv)
    duration_ms = units.parse_duration(a.duration) // 1_000_000
    if duration_ms <= 0:
        ap.error(f'--duration: expected a positive duration, got "{a.duration}"')
    ms = to_mahimahi(MODELS[a.model](duration_ms, a.seed))
    text = mahimahi_text(ms)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
        print(capacity_percentiles(ms), file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
