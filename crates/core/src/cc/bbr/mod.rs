//! BBR v1 (Bottleneck Bandwidth and Round-trip propagation time).
//!
//! Source: Linux `net/ipv4/tcp_bbr.c` (v6.x, as built into this lab's kernel
//! 6.18), with `lib/win_minmax.c` ([`crate::filter::MaxFilter`]) for the bandwidth
//! filter and the rate samples of `net/ipv4/tcp_rate.c` ([`RateSample`]).
//! Paper: Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM
//! Queue 14(5), 2016. Every step below is named after the kernel function it
//! follows, and the arithmetic is the kernel's (integers, µs, fixed point), so
//! the same inputs give the same cwnd and pacing rate bit for bit. What v3
//! repeats unchanged is [`super::bbr_common`]'s: the fixed-point units and
//! the rate/BDP arithmetic, the `struct bbr` fields both hold
//! ([`BbrCore`]), and the steps both kernels write alike ([`BbrVersion`]'s
//! provided methods: pacing, `bbr_bdp`/`bbr_inflight`,
//! `bbr_packets_in_net_at_edt`, PROBE_RTT's entry and hold, restart from
//! idle, the telemetry getters), which call this file's own helpers
//! (`bbr_bw`, `bbr_tso_segs_goal`, `bbr_quantization_budget`,
//! `bbr_check_probe_rtt_done`); jiffies are [`crate::kernel`]'s.
//!
//! # The model in a nutshell
//!
//! ```text
//!   bw      = max over the last 10 rounds of (delivered / interval)    min_rtt = min over 10 s of rtt
//!   pacing  = pacing_gain * bw * 0.99                                   cwnd    = cwnd_gain * bw * min_rtt + budget
//! ```
//!
//! BBR does not treat loss as a congestion signal. It paces at a gain times the
//! best recent delivery rate and caps the data in flight at a gain times the
//! estimated bandwidth-delay product (BDP); the gains are what change between
//! states. Loss only matters in three places: packet conservation in the first
//! round of recovery, the long-term ("policer") bandwidth estimate, and ending
//! a probing phase early.
//!
//! # States
//!
//! ```text
//!              |  init
//!              v
//!   +----> STARTUP -------------+   pacing 2.89x, cwnd 2.89x BDP; leaves when
//!   |          | bw grew < 25%  |   bw grew < 25% in 3 rounds ("pipe full")
//!   |          v  for 3 rounds  |
//!   |        DRAIN -------------+   pacing 1/2.89x; leaves when inflight <= BDP
//!   |          | inflight <= BDP|
//!   |          v                |
//!   +----> PROBE_BW ------------+   pacing cycles 5/4, 3/4, 1,1,1,1,1,1 (one
//!   |       ^    | next phase   |   phase per min_rtt); cwnd 2x BDP
//!   |       +----+              |
//!   |                           | min_rtt not refreshed for 10 s
//!   +----- PROBE_RTT <----------+   cwnd 4 for max(200 ms, 1 round), then back
//!     (to STARTUP if the pipe      to PROBE_BW (or STARTUP), cwnd restored
//!      was never full)
//! ```
//!
//! # Constants (all from the kernel; units and reasons in our words)
//!
//! | name | value | unit | why |
//! |---|---|---|---|
//! | [`BW_SCALE`] | 24 | bits | bw is packets/µs << 24: 1 unit ≈ 715 bit/s at 1500 B, so a u32 covers 715 bit/s .. 3 Tbit/s |
//! | [`BBR_SCALE`] | 8 | bits | gains are fractions of [`BBR_UNIT`] = 256 |
//! | `BW_RTTS` | 10 | rounds | max-bw window: one gain cycle (8) plus 2, so a 5/4 probe is always in view |
//! | `MIN_RTT_WIN_SEC` | 10 | s | min_rtt window; PROBE_RTT runs when it expires |
//! | `PROBE_RTT_MODE_MS` | 200 | ms | time at 4 packets in PROBE_RTT: ~2% of the 10 s window, long enough for a queue to drain |
//! | `MIN_TSO_RATE` | 1 200 000 | bit/s | below this, one segment per TSO burst (smoother at low rates) |
//! | `PACING_MARGIN_PERCENT` | 1 | % | pace 1% below the estimate so a standing queue drains over time |
//! | [`HIGH_GAIN`] | 739/256 ≈ 2.887 | - | 2/ln 2 (+1 unit): the smallest gain that doubles delivery every round, like slow start |
//! | [`DRAIN_GAIN`] | 88/256 ≈ 0.344 | - | 1/high_gain: drains STARTUP's queue in about one round |
//! | [`CWND_GAIN`] | 512/256 = 2 | - | two BDPs of cwnd ride out delayed and stretched ACKs |
//! | [`PACING_GAIN_CYCLE`] | 5/4, 3/4, 1 x6 | - | probe up, drain what the probe queued, cruise |
//! | `CYCLE_RAND` | 7 | phases | PROBE_BW starts in a random phase other than 3/4, so flows do not probe in lockstep |
//! | [`CWND_MIN_TARGET`] | 4 | packets | the least that keeps an ACK-every-other-packet pipe going; PROBE_RTT's cwnd |
//! | `FULL_BW_THRESH` | 320/256 = 1.25 | - | bw growth that counts as "still growing" in STARTUP |
//! | `FULL_BW_CNT` | 3 | rounds | rounds without that growth before the pipe is full (rwin growth, fill, measure) |
//! | `LT_INTVL_MIN_RTTS` | 4 | rounds | shortest long-term sampling interval (max is 4x that) |
//! | `LT_LOSS_THRESH` | 50/256 ≈ 19.5 % | lost/delivered | an interval this lossy may be policed |
//! | `LT_BW_RATIO` | 32/256 = 1/8 | - | two intervals within 1/8 of each other have "consistent" bw ... |
//! | `LT_BW_DIFF` | 500 | bytes/s | ... or within 4 kbit/s |
//! | `LT_BW_MAX_RTTS` | 48 | rounds | how long to trust the policed rate before probing again |
//! | `EXTRA_ACKED_GAIN` | 256/256 = 1 | - | weight of ACK aggregation in the cwnd target |
//! | `EXTRA_ACKED_WIN_RTTS` | 5 | rounds | aggregation max filter: two buckets of 5 rounds |
//! | `ACK_EPOCH_ACKED_RESET_THRESH` | 2^20 | packets | restart an aggregation epoch that grew this old |
//! | `EXTRA_ACKED_MAX_US` | 100 000 | µs | aggregation allowance at most 100 ms worth of bw |
//! | `GSO_LEGACY_MAX_SIZE` | 65 536 | bytes | largest TSO/GSO burst BBR budgets for |
//! | `MAX_TCP_HEADER` | 192 | bytes | L1_CACHE_ALIGN(128 + MAX_HEADER 32) on this kernel's config (no WLAN/Hyper-V/tunnels) |
//! | `HZ` | 250 | 1/s | `CONFIG_HZ` of this lab's kernel (`crate::kernel`); min_rtt and PROBE_RTT stamps are in its jiffies, from `INITIAL_JIFFIES` |
//!
//! # Where the boundary forces a choice (read before comparing with the kernel)
//!
//! - **Random start phase.** The kernel draws `get_random_u32_below(7)` when it
//!   enters PROBE_BW. The trait passes no RNG, so each `Bbr` owns one, seeded by
//!   [`Bbr::with_seed`] (stream `RNG_STREAM` of [`crate::rng::stream`]);
//!   `Default` uses seed 0. Same seed, same phases.
//! - **`tp->delivered_mstamp`** (the time of the last ACK that delivered data) is
//!   rebuilt here: it is `now` of the last hook that saw `ConnView::delivered` grow.
//! - **PROBE_RTT's app-limited mark.** The kernel writes
//!   `tp->app_limited = delivered + inflight` on every PROBE_RTT ACK, so that
//!   packets sent until that bubble is acked give app-limited samples. A control
//!   here cannot write the socket, so BBR remembers the bubble `[from, until]`
//!   (delivered counts) and treats a sample whose packet was sent inside it
//!   (`from <= prior_delivered <= until`) as app-limited, and a `TxStart` while
//!   `delivered <= until` as app-limited. This is exact for one ACK per event.
//! - **`sk_max_pacing_rate`** is taken as unlimited (the socket default).
//! - Widths: the kernel keeps bw in a u32 and `extra_acked` in a u16; we keep
//!   u64 bw (identical below ~3 Tbit/s) and truncate `extra_acked` to u16 as
//!   the kernel does.
//! - The kernel fix "tcp_bbr: fix u32 wrap bug in round logic if bbr_init()
//!   called after 2B packets" is followed: init starts the round at `delivered`.

use super::bbr_common::{self, BbrCore, BbrVersion, EXTRA_ACKED_GAIN, EXTRA_ACKED_WIN_RTTS, GSO_LEGACY_MAX_SIZE, MAX_TCP_HEADER, MIN_RTT_WIN_SEC, PACING_MARGIN_PERCENT};
use super::{CaState, CongestionControl, ConnView, CwndEvent, RateSample, Window, INFINITE_SSTHRESH, INIT_CWND};
use crate::filter::MaxFilter;
use crate::kernel::{after, jiffies32, HZ};
use crate::rng::{self, Rng, RngExt};
use crate::time::{to_us, NS_PER_US};

#[cfg(test)]
mod tests;

/// The fixed-point units, shared with BBRv3 ([`super::bbr_common`]).
pub use super::bbr_common::{BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};

/// Pacing gain cycle length in PROBE_BW (phases).
const CYCLE_LEN: usize = 8;
/// Max-bw filter window, in rounds.
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Below this pacing rate (bit/s) BBR asks for single-segment TSO bursts.
const MIN_TSO_RATE: u64 = 1_200_000;

/// STARTUP gain (pacing and cwnd): 2/ln 2, in 1/256 (739).
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// DRAIN pacing gain: 1/(2/ln 2), in 1/256 (88).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// PROBE_BW cwnd gain, in 1/256 (512).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW pacing gains, one per phase, in 1/256.
pub const PACING_GAIN_CYCLE: [u32; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4, // probe for more bandwidth
    BBR_UNIT * 3 / 4, // drain the queue the probe may have built
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT, // cruise at the estimate
];
/// The random start phase is drawn among this many phases (all but 3/4).
const CYCLE_RAND: u32 = 7;
/// Floor of cwnd and PROBE_RTT's cwnd, packets.
pub const CWND_MIN_TARGET: u32 = 4;
/// STARTUP: bw must grow by this factor (in 1/256) per round to keep going.
const FULL_BW_THRESH: u64 = BBR_UNIT as u64 * 5 / 4;
/// STARTUP: rounds without that growth before the pipe counts as full.
const FULL_BW_CNT: u32 = 3;

/// Shortest long-term sampling interval, rounds.
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Lossy interval: lost/delivered >= this / 256.
const LT_LOSS_THRESH: u64 = 50;
/// Consistent intervals: |bw1 - bw2| <= this / 256 of bw ...
const LT_BW_RATIO: u64 = BBR_UNIT as u64 / 8;
/// ... or |bw1 - bw2| <= this many bytes/s (4 kbit/s).
const LT_BW_DIFF: u64 = 4000 / 8;
/// Rounds to use the long-term bw once a policer is suspected.
const LT_BW_MAX_RTTS: u32 = 48;

/// RNG stream id for the gain-cycle start phase.
const RNG_STREAM: u64 = 0xBB_0001;

/// `enum bbr_mode` ([`super::bbr_common`]).
pub use super::bbr_common::Mode;

/// BBR v1 state (Linux `struct bbr`): the fields v3 shares ([`BbrCore`]:
/// min_rtt, PROBE_RTT's hold, rounds, mode, gains, saved cwnd, ACK
/// aggregation, the socket fields rebuilt from [`ConnView`]) and v1's own.
#[derive(Debug, Clone)]
pub struct Bbr {
    // --- configuration ---
    seed: u64,
    rng: Rng,

    // --- struct bbr ---
    /// The fields v1 and v3 share ([`BbrCore`]).
    core: BbrCore,
    /// Max delivery rate over the last 10 rounds, packets/µs << 24.
    bw: MaxFilter,
    /// Packet-timed rounds elapsed.
    rtt_cnt: u64,
    /// In the first round of recovery: send one packet per packet acked.
    packet_conservation: bool,
    /// Long-term sampling running.
    lt_is_sampling: bool,
    /// Rounds in the current long-term interval.
    lt_rtt_cnt: u32,
    /// Using lt_bw instead of the max filter (policer suspected).
    lt_use_bw: bool,
    /// Long-term delivery rate, packets/µs << 24.
    lt_bw: u64,
    /// Long-term interval start: delivered, ms stamp, lost.
    lt_last_delivered: u64,
    lt_last_stamp: u32,
    lt_last_lost: u64,
    /// Phase in PACING_GAIN_CYCLE.
    cycle_idx: usize,
    /// bw at the last 25% growth in STARTUP.
    full_bw: u64,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::with_seed(0)
    }
}

/// `bbr_rate_bytes_per_sec`: bw (packets/µs << 24) times gain, in bytes/s,
/// less the pacing margin; same order of operations as the kernel.
pub fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32) -> u64 {
    bbr_common::rate_bytes_per_sec(mss, rate, gain, PACING_MARGIN_PERCENT)
}

impl Bbr {
    /// A BBR whose random PROBE_BW start phases come from `seed`.
    pub fn with_seed(seed: u64) -> Bbr {
        Bbr {
            seed,
            rng: rng::stream(seed, RNG_STREAM),
            core: BbrCore::default(),
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            packet_conservation: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            cycle_idx: 0,
            full_bw: 0,
        }
    }

    /// The seed given to [`Bbr::with_seed`].
    pub fn seed(&self) -> u64 {
        self.seed
    }

    // ---------- read-only accessors (telemetry, tests; the shared ones are [`BbrVersion`]'s) ----------

    /// Bandwidth estimate in bytes/s (as `ss -i` / `tcp_bbr_info` report it):
    /// the long-term bw if policing is suspected, else the max filter.
    pub fn bw(&self) -> u64 {
        ((self.bbr_bw() as u128 * self.core.sock.mss as u128 * 1_000_000) >> BW_SCALE) as u64
    }
    /// Bandwidth estimate in the kernel's unit, packets/µs << 24.
    pub fn bw_raw(&self) -> u64 {
        self.bbr_bw()
    }
    /// Whether the long-term (policed) bandwidth is in use.
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    /// Current phase of the PROBE_BW gain cycle (index into [`PACING_GAIN_CYCLE`]).
    pub fn cycle_index(&self) -> usize {
        self.cycle_idx
    }
    /// Packet-timed rounds counted so far.
    pub fn round_count(&self) -> u64 {
        self.rtt_cnt
    }

    // ---------- estimates ----------

    /// `bbr_max_bw`.
    fn max_bw(&self) -> u64 {
        self.bw.get()
    }
    /// `bbr_bw`: long-term bw when policed, else the max filter.
    fn bbr_bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }
    // ---------- pacing ----------

    /// `bbr_min_tso_segs`: 1 segment per burst below 1.2 Mbit/s, else 2.
    fn min_tso_segs_at(pacing_rate: u64) -> u32 {
        if pacing_rate < MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    // ---------- cwnd ----------

    /// `bbr_ack_aggregation_cwnd`: extra cwnd for ACK aggregation, once the pipe is full.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if EXTRA_ACKED_GAIN == 0 || !self.core.full_bw_reached {
            return 0;
        }
        self.core.ack.cwnd(self.bbr_bw())
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: deduct losses; packet conservation
    /// in the first round of recovery; restore the saved cwnd when it ends.
    /// Returns (conserving, cwnd).
    fn set_cwnd_to_recover_or_restore(&mut self, c: &ConnView, rs: &RateSample, acked: u32, w: &Window) -> (bool, u32) {
        let prev_state = self.core.prev_ca_state;
        let state = c.ca_state;
        let mut cwnd = w.cwnd;

        // An ACK for P packets releases at most 2P: first take away the losses ...
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // First round of recovery: conserve packets, and start the round now.
            self.packet_conservation = true;
            self.core.next_rtt_delivered = c.delivered;
            cwnd = c.packets_in_flight + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // Recovery is over: give back the cwnd we had before it.
            cwnd = cwnd.max(self.core.prior_cwnd);
            self.packet_conservation = false;
        }
        self.core.prev_ca_state = state;

        if self.packet_conservation {
            return (true, cwnd.max(c.packets_in_flight + acked));
        }
        (false, cwnd)
    }

    /// `bbr_set_cwnd`: ... then grow by `acked` toward the target (or snap down to it).
    fn set_cwnd(&mut self, c: &ConnView, rs: &RateSample, acked: u32, bw: u64, gain: u32, w: &mut Window) {
        let mut cwnd = w.cwnd;
        if acked != 0 {
            let (conserving, new_cwnd) = self.set_cwnd_to_recover_or_restore(c, rs, acked, w);
            cwnd = new_cwnd;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(c, w, target);
                if self.core.full_bw_reached {
                    cwnd = (cwnd + acked).min(target); // only cut cwnd once the pipe was filled
                } else if cwnd < target || c.delivered < INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.core.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(CWND_MIN_TARGET);
        }
    }

    // ---------- gain cycle ----------

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, c: &ConnView, rs: &RateSample, w: &Window) -> bool {
        let is_full_length = self.core.sock.delivered_mstamp.saturating_sub(self.core.cycle_mstamp) > self.core.min_rtt_us as u64;
        // Gain 1.0 phases just last one min_rtt.
        if self.core.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(c, w, rs.prior_in_flight);
        let bw = self.max_bw();
        // Probing (5/4) goes on until inflight reaches 5/4 BDP, unless packets are lost.
        if self.core.pacing_gain > BBR_UNIT {
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(c, w, bw, self.core.pacing_gain));
        }
        // Draining (3/4) stops early once inflight is down to one BDP.
        is_full_length || inflight <= self.inflight(c, w, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.core.cycle_mstamp = self.core.sock.delivered_mstamp;
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, c: &ConnView, rs: &RateSample, w: &Window) {
        if self.core.mode == Mode::ProbeBw && self.is_next_cycle_phase(c, rs, w) {
            self.advance_cycle_phase();
        }
    }

    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW in a random phase other than 3/4.
    fn reset_probe_bw_mode(&mut self) {
        self.core.mode = Mode::ProbeBw;
        let r: u32 = self.rng.gen_range(0..CYCLE_RAND);
        self.cycle_idx = CYCLE_LEN - 1 - r as usize;
        self.advance_cycle_phase();
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self) {
        if !self.core.full_bw_reached {
            self.core.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode();
        }
    }

    // ---------- long-term (policer) bandwidth ----------

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, c: &ConnView) {
        self.lt_last_stamp = (self.core.sock.delivered_mstamp / 1000) as u32;
        self.lt_last_delivered = c.delivered;
        self.lt_last_lost = c.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self, c: &ConnView) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(c);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals = policed.
    fn lt_bw_interval_done(&mut self, c: &ConnView, bw: u64) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT as u64 <= LT_BW_RATIO * self.lt_bw
                || rate_bytes_per_sec(self.core.sock.mss, diff, BBR_UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) >> 1; // average of the two intervals
                self.lt_use_bw = true;
                self.core.pacing_gain = BBR_UNIT; // stop probing into the policer
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(c);
    }

    /// `bbr_lt_bw_sampling`: measure delivery over lossy 4..16-round intervals.
    fn lt_bw_sampling(&mut self, c: &ConnView, rs: &RateSample) {
        if self.lt_use_bw {
            // Policed: after 48 rounds, forget lt_bw and probe again.
            if self.core.mode == Mode::ProbeBw && self.core.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(c);
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // Start at the first loss: by then a policer has spent its burst tokens.
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(c);
            self.lt_is_sampling = true;
        }
        // Running out of data would under-estimate the rate.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(c);
            return;
        }
        if self.core.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(c);
            return;
        }
        // End the interval on a loss (tokens exhausted), if it was lossy enough.
        if rs.losses == 0 {
            return;
        }
        let lost = c.lost.wrapping_sub(self.lt_last_lost);
        let delivered = c.delivered.wrapping_sub(self.lt_last_delivered);
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = ((self.core.sock.delivered_mstamp / 1000) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return; // shorter than 1 ms: wait
        }
        if t >= u32::MAX / 1000 {
            self.reset_lt_bw_sampling(c);
            return;
        }
        let t_us = t as u64 * 1000;
        let bw = delivered * BW_UNIT / t_us;
        self.lt_bw_interval_done(c, bw);
    }

    // ---------- per-ACK model update ----------

    /// `bbr_update_bw`: count rounds, feed the max filter.
    fn update_bw(&mut self, c: &ConnView, rs: &RateSample) {
        self.core.round_start = false;
        let interval_us = rs.interval / NS_PER_US as i64;
        if rs.delivered < 0 || interval_us <= 0 {
            return; // not a valid sample
        }
        if rs.prior_delivered >= self.core.next_rtt_delivered {
            self.core.next_rtt_delivered = c.delivered;
            self.rtt_cnt += 1;
            self.core.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(c, rs);

        let bw = rs.delivered as u64 * BW_UNIT / interval_us as u64;
        // App-limited samples only count if they beat the estimate.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: how much more than bw * elapsed got acked.
    fn update_ack_aggregation(&mut self, rs: &RateSample, w: &Window) {
        let bw = self.bbr_bw();
        self.core.update_ack_aggregation(rs, EXTRA_ACKED_WIN_RTTS, bw, w.cwnd);
    }

    /// `bbr_check_full_bw_reached`: 3 rounds without 25% growth = pipe full.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.core.full_bw_reached || !self.core.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.core.full_bw_cnt = 0;
            return;
        }
        self.core.full_bw_cnt += 1;
        self.core.full_bw_reached = self.core.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: STARTUP -> DRAIN -> PROBE_BW.
    fn check_drain(&mut self, c: &ConnView, w: &mut Window) {
        if self.core.mode == Mode::Startup && self.core.full_bw_reached {
            self.core.mode = Mode::Drain;
            w.ssthresh = self.inflight(c, w, self.max_bw(), BBR_UNIT);
        }
        if self.core.mode == Mode::Drain
            && self.packets_in_net_at_edt(c, w, c.packets_in_flight) <= self.inflight(c, w, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(); // queue estimated drained
        }
    }

    /// `bbr_update_min_rtt`: the 10 s min filter and PROBE_RTT.
    fn update_min_rtt(&mut self, c: &ConnView, rs: &RateSample, w: &mut Window) {
        let now_j = jiffies32(c.now);
        let win = MIN_RTT_WIN_SEC.wrapping_mul(HZ);
        let filter_expired = after(now_j, self.core.min_rtt_stamp.wrapping_add(win));
        let rtt_us: i64 = if rs.rtt < 0 { -1 } else { rs.rtt / NS_PER_US as i64 };
        // `<`, not `<=`, since Linux 5.10 (1b9e2a8c99a5, "tcp: only postpone PROBE_RTT if RTT is < current min_rtt
        // estimate"): an equal sample (retransmissions' ms-granular timestamp RTTs) no longer postpones PROBE_RTT
        if rtt_us >= 0 && (rtt_us < self.core.min_rtt_us as i64 || (filter_expired && !rs.is_ack_delayed)) {
            self.core.min_rtt_us = rtt_us.min(u32::MAX as i64) as u32;
            self.core.min_rtt_stamp = now_j;
        }

        self.core.enter_probe_rtt(filter_expired, w.cwnd);
        // ProbeRttHold: the samples ahead are app-limited; hold 4 packets for max(200 ms, one round).
        self.hold_probe_rtt(c, rs, w, CWND_MIN_TARGET);
    }

    /// `bbr_update_gains` ([`bbr_common::mode_gains`]): v1's STARTUP is
    /// 2.89 for both, PROBE_BW the cycle's phase (1 while policed) and cwnd 2.
    fn update_gains(&mut self) {
        let probe_bw_pacing = if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN_CYCLE[self.cycle_idx] };
        (self.core.pacing_gain, self.core.cwnd_gain) =
            bbr_common::mode_gains(self.core.mode, (HIGH_GAIN, HIGH_GAIN), DRAIN_GAIN, (probe_bw_pacing, CWND_GAIN));
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, c: &ConnView, rs: &RateSample, w: &mut Window) {
        self.update_bw(c, rs);
        self.update_ack_aggregation(rs, w);
        self.update_cycle_phase(c, rs, w);
        self.check_full_bw_reached(rs);
        self.check_drain(c, w);
        self.update_min_rtt(c, rs, w);
        self.update_gains();
    }
}

/// The steps v1 shares with v3 ([`BbrVersion`]), with v1's own helpers.
impl BbrVersion for Bbr {
    const STARTUP_PACING_GAIN: u32 = HIGH_GAIN;
    fn core(&self) -> &BbrCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut BbrCore {
        &mut self.core
    }
    fn model_bw(&self) -> u64 {
        self.bbr_bw()
    }
    fn no_rtt_bdp(&self) -> u32 {
        INIT_CWND
    }
    /// `bbr_quantization_budget`: room for 3 TSO bursts, even, +2 when probing.
    fn quantization_budget(&self, c: &ConnView, w: &Window, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal(c, w);
        cwnd = (cwnd + 1) & !1u32;
        if self.core.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }
    /// `bbr_bw_to_pacing_rate` (no `sk_max_pacing_rate` cap: unlimited).
    fn bw_to_pacing_rate(&self, bw: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(self.core.sock.mss, bw, gain)
    }
    /// `bbr_tso_segs_goal`: segments per TSO burst, ~1/2^pacing_shift s of data.
    fn tso_segs_goal(&self, c: &ConnView, w: &Window) -> u32 {
        let bytes = (w.pacing_rate >> c.pacing_shift.min(63)).min(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER);
        let segs = ((bytes / self.core.sock.mss as u64) as u32).max(Self::min_tso_segs_at(w.pacing_rate));
        segs.min(0x7F)
    }
    /// `bbr_check_probe_rtt_done`: 200 ms and a round at 4 packets are over.
    fn check_probe_rtt_done(&mut self, c: &ConnView, w: &mut Window) {
        let now_j = jiffies32(c.now);
        if !self.core.probe_rtt.is_over(now_j) {
            return;
        }
        self.core.min_rtt_stamp = now_j; // next PROBE_RTT in 10 s at the earliest
        w.cwnd = w.cwnd.max(self.core.prior_cwnd);
        self.reset_mode();
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_init`.
    fn init(&mut self, c: &ConnView, w: &mut Window) {
        self.core.sock.start(c);

        self.core.prior_cwnd = 0;
        w.ssthresh = INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.core.next_rtt_delivered = c.delivered;
        self.core.prev_ca_state = CaState::Open;
        self.packet_conservation = false;

        self.core.probe_rtt.clear();
        self.core.min_rtt_us = if c.min_rtt == u64::MAX { u32::MAX } else { to_us(c.min_rtt).min(u32::MAX as u64) as u32 };
        self.core.min_rtt_stamp = jiffies32(c.now);

        self.bw.reset(self.rtt_cnt, 0);

        self.core.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(c, w);

        self.core.round_start = false;
        self.core.idle_restart = false;
        self.core.full_bw_reached = false;
        self.full_bw = 0;
        self.core.full_bw_cnt = 0;
        self.core.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(c);
        self.core.mode = Mode::Startup;

        self.core.ack.reset(to_us(c.now));

        self.core.sock.clear_probe_rtt_app_limited();
    }

    /// `bbr_ssthresh`: note cwnd for the end of recovery; ssthresh unchanged.
    fn ssthresh(&mut self, c: &ConnView, w: &Window) -> u32 {
        self.core.sock.observe(c);
        self.core.save_cwnd(w.cwnd);
        w.ssthresh
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_main`.
    fn cong_control(&mut self, c: &ConnView, rs: &RateSample, w: &mut Window) {
        self.core.sock.observe(c);
        let mut rs = *rs;
        rs.is_app_limited |= self.core.sock.in_probe_rtt_bubble(rs.prior_delivered);

        self.update_model(c, &rs, w);

        let bw = self.bbr_bw();
        self.set_pacing_rate(c, bw, self.core.pacing_gain, w);
        self.set_cwnd(c, &rs, rs.acked_sacked, bw, self.core.cwnd_gain, w);
    }

    /// `bbr_set_state`: an RTO ends the round and counts as a loss for the policer detector.
    fn set_state(&mut self, c: &ConnView, new_state: CaState, _w: &mut Window) {
        self.core.sock.observe(c);
        if new_state == CaState::Loss {
            let rs = RateSample { losses: 1, delivered: 0, interval: 0, rtt: 0, ..RateSample::default() };
            self.core.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.core.round_start = true;
            self.lt_bw_sampling(c, &rs);
        }
    }

    /// `bbr_cwnd_event`: restarting from idle while app-limited.
    fn cwnd_event(&mut self, c: &ConnView, ev: CwndEvent, w: &mut Window) {
        self.core.sock.observe(c);
        if ev == CwndEvent::TxStart {
            self.restart_from_idle(c, w);
        }
    }

    /// `bbr_undo_cwnd`: a spurious loss; redo pipe-full detection and lt sampling.
    fn undo_cwnd(&mut self, c: &ConnView, w: &Window) -> u32 {
        self.core.sock.observe(c);
        self.full_bw = 0;
        self.core.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(c);
        w.cwnd
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    fn min_tso_segs(&self, w: &Window) -> u32 {
        Self::min_tso_segs_at(w.pacing_rate)
    }

    fn state_label(&self) -> &'static str {
        self.core.mode.label()
    }
}
