//! BBR v3.
//!
//! Source: Google's BBRv3 `net/ipv4/tcp_bbr.c` (github.com/google/bbr, branch
//! `v3`, `BBR_VERSION 3`, as read at commit 001a430b), and
//! draft-ietf-ccwg-bbr (BBR Congestion Control, which specifies v3). Where the
//! two differ we follow the Linux code and say so. The arithmetic is the
//! kernel's (u32 fixed point, bw in packets/µs << 24, gains in 1/256, min_rtt
//! and PROBE_RTT stamps in jiffies at HZ = 250). v1 is [`super::bbr`]; every
//! step below is named after the v3 kernel function it follows. What v3
//! repeats from v1 unchanged is [`super::bbr_common`]'s: fixed-point units,
//! rate and BDP arithmetic, the `struct bbr` fields v1 and v3 both hold
//! ([`BbrCore`]), and the steps written alike in both trees
//! ([`BbrVersion`]'s provided methods: pacing, `bbr_bdp`/`bbr_inflight`,
//! `bbr_packets_in_net_at_edt`, PROBE_RTT's entry and hold, restart from
//! idle, the telemetry getters); v3's own helpers they call differ from v1's
//! where v3 changed them (`bbr_bw`, `bbr_rate_bytes_per_sec` floored at 1,
//! `bbr_tso_segs_goal`, `bbr_quantization_budget`, `bbr_check_probe_rtt_done`,
//! `bbr_bdp`'s init_cwnd before an RTT sample). Jiffies are
//! [`crate::kernel`]'s.
//!
//! # The model in a nutshell
//!
//! ```text
//!   max_bw = max(bw_hi[0], bw_hi[1])        (max delivery rate over the last 1-2 PROBE_BW cycles)
//!   bw     = min(max_bw, bw_lo)             pacing = pacing_gain * bw * 0.99
//!   BDP    = bw * min_rtt                   cwnd   = min(cwnd_gain * BDP + extra_acked, inflight_hi [- 15 %], inflight_lo)
//! ```
//!
//! v1 paces at a gain over the best recent delivery rate and ignores loss.
//! v3 adds *bounds* learnt from loss and ECN:
//! - `inflight_hi` (long-term upper bound): set when a bandwidth probe sees
//!   more than 2 % loss or 50 % CE marks, to the flight that caused it; raised
//!   again only by probing (PROBE_UP grows it 1, 2, 4, ... packets per round).
//!   Outside probing, cwnd stays 15 % below it (headroom for other flows).
//! - `bw_lo`, `inflight_lo` (short-term lower bounds): in a round with loss
//!   (or ECN) while *not* probing, cut by beta = 0.3 (to 70 %), but not below
//!   what the last round actually delivered; reset before each probe.
//! - ECN: `ecn_alpha` is a DCTCP-like EWMA (g = 1/16) of the CE fraction per
//!   round; a round with CE cuts `inflight_lo` by `alpha/3`.
//!
//! # States
//!
//! ```text
//!              |  init
//!              v
//!   +----> STARTUP  pacing 2.77x, cwnd 2x BDP; leaves when bw grew < 25 % in 3 rounds,
//!   |          |    or a Recovery round had >= 6 loss events and > 2 % loss,
//!   |          |    or 2 rounds had >= 50 % CE marks (inflight_hi = that flight)
//!   |          v
//!   |        DRAIN  pacing 0.344x until inflight <= BDP
//!   |          v
//!   +----> PROBE_BW:  DOWN (0.91x: drain to min(BDP, inflight_hi - 15 %))
//!   |          |        v
//!   |          |      CRUISE (1.0x; loss/ECN cut bw_lo/inflight_lo) until the probe time:
//!   |          |        |  2-3 s wall clock since DOWN, or min(63, BDP) (+0..1) rounds (Reno coexistence)
//!   |          |        v
//!   |          |      REFILL (1.0x, lower bounds reset, one round)
//!   |          |        v
//!   |          |      UP (1.25x, cwnd 2.25x BDP; inflight_hi grows) until too much loss/ECN,
//!   |          |        |  inflight_hi reached after a too-high probe, or bw plateaus
//!   |          |        +--> DOWN
//!   |          | probe_rtt_min not refreshed for 5 s
//!   +----- PROBE_RTT  cwnd = max(4, BDP/2) for max(200 ms, 1 round); then PROBE_BW
//!                      (DOWN -> CRUISE at once) or STARTUP if the pipe was never full
//! ```
//!
//! # Constants (the kernel's; units and reasons in our words)
//!
//! | name | value | unit | why |
//! |---|---|---|---|
//! | [`STARTUP_PACING_GAIN`] | 256·277/100+1 = 710 ≈ 2.77 | 1/256 | 4 ln 2: the smallest pacing gain that doubles delivery each round like slow start (v1 used 2.89 for pacing *and* cwnd) |
//! | [`STARTUP_CWND_GAIN`] | 512 = 2 | 1/256 | enough to keep 2.77x pacing going; less queue than v1's 2.89 |
//! | [`DRAIN_GAIN`] | 256·1000/2885 = 88 ≈ 0.344 | 1/256 | drains STARTUP's queue in about a round. draft-ietf-ccwg-bbr-01 says 0.35, later revisions 0.5 (any value ≤ 1/StartupCwndGain works); we follow the code |
//! | [`CWND_GAIN`] | 512 = 2 | 1/256 | PROBE_BW cwnd: tolerate delayed and stretched ACKs |
//! | [`PACING_GAIN`] | UP 320 (1.25), DOWN 232 (0.906), CRUISE 256, REFILL 256 | 1/256 | probe up, drain what the probe queued, cruise. The draft says DOWN 0.90; the code 91/100 |
//! | `BW_PROBE_CWND_GAIN` | 1 | 1/4 | in PROBE_UP cwnd_gain is 2 + 0.25 so inflight can reach 1.25 BDP |
//! | [`CWND_MIN_TARGET`] | 4 | packets | two ACK-every-other-packet pairs in flight |
//! | `FULL_BW_THRESH` | 320 = 1.25 | 1/256 | growth that counts as "still growing" (STARTUP and PROBE_UP) |
//! | `FULL_BW_CNT` | 3 | rounds | rounds without that growth = pipe full |
//! | `MIN_RTT_WIN_SEC` | 10 | s | min_rtt window |
//! | [`PROBE_RTT_WIN_MS`] | 5000 | ms | PROBE_RTT at least every 5 s (v1: 10 s) |
//! | `PROBE_RTT_MODE_MS` | 200 | ms | time at the PROBE_RTT cwnd: with BDP/2, costs ~0.5·0.2/5 = 2 % of throughput |
//! | [`PROBE_RTT_CWND_GAIN`] | 128 = 0.5 | 1/256 | PROBE_RTT keeps half a BDP (v1: 4 packets), enough to drain queues without idling the link |
//! | `TSO_RTT_SHIFT` | 9 | log2 µs | TSO burst allowance 64 KB halves per 512 µs of min_rtt |
//! | `PACING_MARGIN_PERCENT` | 1 | % | pace 1 % below the estimate so queues drain over time |
//! | `EXTRA_ACKED_GAIN` / `_WIN_RTTS` / `_MAX_US` | 1 / 5 rounds / 100 ms | - | ACK aggregation allowance, as v1 (1 round in STARTUP) |
//! | `ACK_EPOCH_ACKED_RESET_THRESH` | 2^20 | packets | restart an old aggregation epoch |
//! | [`ECN_MAX_RTT_US`] | 5000 | µs | ECN logic only on paths with min_rtt ≤ 5 ms: shallow-threshold (DC-like) marking |
//! | [`BETA`] | 256·30/100 = 76 (cut to 180/256 ≈ 0.70) | 1/256 | multiplicative cut of bw_lo/inflight_lo per lossy round |
//! | [`ECN_ALPHA_GAIN`] | 16 = 1/16 | 1/256 | ecn_alpha EWMA gain, as DCTCP's g |
//! | `ECN_ALPHA_INIT` | 256 = 1.0 | 1/256 | a flow starting into a marking bottleneck backs off at once |
//! | [`ECN_FACTOR`] | 85 ≈ 1/3 | 1/256 | inflight_lo cut per CE round: alpha/3 |
//! | [`ECN_THRESH`] | 128 = 1/2 | 1/256 | CE fraction that makes a probe "too high" |
//! | `ECN_REPROBE_GAIN` | 128 = 1/2 | 1/256 | after ECN-only cycles, reprobe adding inflight_hi/2 in the first round |
//! | [`LOSS_THRESH`] | 256·2/100 = 5 ≈ 1.95 % | 1/256 | loss rate that makes a probe "too high" |
//! | `FULL_LOSS_CNT` | 6 | loss events | STARTUP exits on loss only after this many loss marks in a Recovery round (noise filter) |
//! | `FULL_ECN_CNT` | 2 | rounds | STARTUP exits after this many rounds with ≥ 50 % CE |
//! | [`INFLIGHT_HEADROOM`] | 256·15/100 = 38 ≈ 15 % | 1/256 | cruise this far below inflight_hi, leaving room for others |
//! | `BW_PROBE_MAX_ROUNDS` | 63 | rounds | Reno coexistence: probe at least every min(63, BDP) rounds (a 25 Mbit/s, 30 ms Reno flow's sawtooth) |
//! | `BW_PROBE_RAND_ROUNDS` | 2 | rounds | random 0..1 extra rounds |
//! | `BW_PROBE_BASE_US` | 2 000 000 | µs | probe at most every 2 s of wall clock ... |
//! | `BW_PROBE_RAND_US` | 1 000 000 | µs | ... plus 0..1 s at random: 2-3 s |
//! | `HZ` | 250 | 1/s | jiffies of this lab's kernel (`crate::kernel`), from `INITIAL_JIFFIES` |
//!
//! # Where the boundary forces a choice (read before comparing with the kernel)
//!
//! - **Per-packet send state.** v3 reads `rs->tx_in_flight` (packets in flight
//!   when the acked packet was sent) and `rs->lost` (packets marked lost since
//!   it was sent), which the endpoint records in each skb at send time
//!   (`tcp_set_tx_in_flight`, `tx.lost`); [`RateSample`] carries both as the
//!   v3 tree's `tcp_rate.c` fills them.
//! - **`skb_marked_lost`** is [`CongestionControl::skb_marked_lost`], called
//!   by the endpoint for each segment it marks lost, with that segment's own
//!   send state ([`super::LostSkb`]), before the ACK's `cong_control`.
//! - **`rs->is_ece`**: an ACK counts as ECE if `ConnView::delivered_ce` grew
//!   since the previous ACK or the endpoint raised [`CwndEvent::EcnIsCe`].
//! - **ECN eligibility.** The kernel needs ECN negotiated *and* the route
//!   flag `ecn_low` (a shallow-threshold ECN path). Here the first CE mark
//!   stands for `ecn_low` (the scenario marks only if ECN is on); the
//!   5 ms min_rtt bound is kept. [`Bbr3::with_ecn`]`(false)` turns ECN off.
//! - **Not modelled**: the ACK fast path (a CPU optimisation; every ACK takes
//!   the full path), PLB (flow-label rehash), `CA_EVENT_TLP_RECOVERY` (no such
//!   event here), `fast_ack_mode`, `sk_max_pacing_rate`.
//! - **Random draws** (`bbr_pick_probe_wait`) come from an RNG seeded by
//!   [`Bbr3::with_seed`]; `Default` is seed 0.
//! - PROBE_RTT's `tp->app_limited` mark is kept as an app-limited bubble of
//!   delivered counts, as in [`super::bbr`].

use super::bbr_common::{self, BbrCore, BbrVersion, EXTRA_ACKED_WIN_RTTS, GSO_LEGACY_MAX_SIZE, MAX_TCP_HEADER, MIN_RTT_WIN_SEC, PACING_MARGIN_PERCENT};
use super::{CaState, CongestionControl, ConnView, CwndEvent, LostSkb, RateSample, Window, INFINITE_SSTHRESH};
use crate::kernel::{after, jiffies32, msecs_to_jiffies, HZ};
use crate::rng::{self, Rng, RngExt};
use crate::time::{to_us, NS_PER_US};

mod bounds;
mod probe_bw;
#[cfg(test)]
mod tests;

/// The fixed-point units, shared with v1 ([`super::bbr_common`]).
pub use super::bbr_common::{BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};

/// "Unset" for bw_lo, inflight_lo, inflight_hi, min_rtt (kernel `~0U`).
pub const UNSET: u32 = u32::MAX;

/// Window of probe_rtt_min_us, ms: the PROBE_RTT interval.
pub const PROBE_RTT_WIN_MS: u32 = 5000;
/// PROBE_RTT cwnd as a fraction of the BDP, 1/256.
pub const PROBE_RTT_CWND_GAIN: u32 = BBR_UNIT / 2;
const TSO_RTT_SHIFT: u32 = 9;

/// STARTUP pacing gain 4 ln 2 (710/256).
pub const STARTUP_PACING_GAIN: u32 = BBR_UNIT * 277 / 100 + 1;
/// STARTUP (and DRAIN) cwnd gain (2.0).
pub const STARTUP_CWND_GAIN: u32 = BBR_UNIT * 2;
/// DRAIN pacing gain (88/256).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// PROBE_BW cwnd gain (2.0).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW pacing gains by [`Phase`] index: UP, DOWN, CRUISE, REFILL.
pub const PACING_GAIN: [u32; 4] = [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT];
/// Extra cwnd gain in PROBE_UP, in BBR_UNIT/4.
const BW_PROBE_CWND_GAIN: u32 = 1;
/// Floor of cwnd, packets.
pub const CWND_MIN_TARGET: u32 = 4;
const FULL_BW_THRESH: u64 = BBR_UNIT as u64 * 5 / 4;
const FULL_BW_CNT: u32 = 3;

/// ECN logic only below this min_rtt, µs.
pub const ECN_MAX_RTT_US: u32 = 5000;
/// Loss cut of bw_lo/inflight_lo, 1/256 (the kernel's `bbr_beta`: cut by 30 %).
pub const BETA: u32 = BBR_UNIT * 30 / 100;
/// ecn_alpha EWMA gain, 1/256.
pub const ECN_ALPHA_GAIN: u32 = BBR_UNIT / 16;
const ECN_ALPHA_INIT: u32 = BBR_UNIT;
/// inflight_lo cut per CE round = ecn_alpha · this, 1/256.
pub const ECN_FACTOR: u32 = BBR_UNIT / 3;
/// CE fraction that makes a probe too high, 1/256.
pub const ECN_THRESH: u32 = BBR_UNIT / 2;
const ECN_REPROBE_GAIN: u32 = BBR_UNIT / 2;
/// Loss fraction that makes a probe too high, 1/256.
pub const LOSS_THRESH: u32 = BBR_UNIT * 2 / 100;
const FULL_LOSS_CNT: u32 = 6;
const FULL_ECN_CNT: u32 = 2;
/// Headroom kept below inflight_hi, 1/256.
pub const INFLIGHT_HEADROOM: u32 = BBR_UNIT * 15 / 100;
const BW_PROBE_MAX_ROUNDS: u32 = 63;
const BW_PROBE_RAND_ROUNDS: u32 = 2;
const BW_PROBE_BASE_US: u32 = 2_000_000;
const BW_PROBE_RAND_US: u32 = 1_000_000;

/// Largest GSO burst BBR sizes for, bytes.
/// `sysctl_tcp_min_tso_segs` default.
const MIN_TSO_SEGS: u32 = 2;
/// RNG stream id for the probe-wait draws.
const RNG_STREAM: u64 = 0xBB_0003;

/// `enum bbr_mode` ([`super::bbr_common`]).
pub use super::bbr_common::Mode;

/// `enum bbr_pacing_gain_phase`: the PROBE_BW phases (index into [`PACING_GAIN`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Push inflight up to probe for bw and volume.
    Up = 0,
    /// Drain the queue the probe built.
    Down = 1,
    /// Use the pipe with headroom.
    Cruise = 2,
    /// Refill the pipe to 100 % before probing.
    Refill = 3,
}

/// `enum bbr_ack_phase`: what the ACKs now arriving say about probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// Per-ACK values (`struct bbr_context` plus the v3 rate-sample fields it reads).
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    /// Delivery-rate sample, packets/µs << 24 (`ctx->sample_bw`).
    sample_bw: u32,
    /// `rs->tx_in_flight`, packets.
    tx_in_flight: u32,
    /// `rs->lost`: packets marked lost since the acked packet was sent.
    lost: u32,
    /// `rs->is_ece`.
    is_ece: bool,
}

/// BBRv3 state (`struct bbr` of the v3 tree) plus the socket fields it rebuilds.
#[derive(Debug, Clone)]
pub struct Bbr3 {
    seed: u64,
    rng: Rng,
    ecn_enabled: bool,

    // --- v1 fields ---
    /// The fields v1 and v3 share ([`BbrCore`]).
    core: BbrCore,
    probe_rtt_min_us: u32,
    probe_rtt_min_stamp: u32,
    ce_state: bool,
    bw_probe_up_rounds: u32,
    init_cwnd: u32,
    cycle_idx: Phase,
    full_bw: u32,

    // --- v3 fields ---
    full_bw_now: bool,
    startup_ecn_rounds: u32,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_round_delivered: u64,
    undo_bw_lo: u32,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u32,
    bw_lo: u32,
    bw_hi: [u32; 2],
    inflight_latest: u32,
    inflight_lo: u32,
    inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    probe_wait_us: u32,
    ecn_eligible: bool,
    ecn_alpha: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    ack_phase: AckPhase,
    loss_events_in_round: u32,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,

    // --- socket fields rebuilt from ConnView (see module docs; the rest are [`BbrCore::sock`]) ---
    seen_delivered_ce: u64,
    ece_event: bool,
    /// CE marks have been seen: stands for the route's `ecn_low`.
    ce_seen: bool,
}

impl Default for Bbr3 {
    fn default() -> Self {
        Bbr3::with_seed(0)
    }
}

/// v3 `bbr_rate_bytes_per_sec`: rate (packets/µs << 24) · mss · gain, less
/// `margin` percent, in bytes/s, at least 1.
pub fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32, margin: u64) -> u64 {
    bbr_common::rate_bytes_per_sec(mss, rate, gain, margin).max(1)
}

impl Bbr3 {
    /// A BBRv3 whose random probe waits come from `seed`.
    pub fn with_seed(seed: u64) -> Bbr3 {
        Bbr3 {
            seed,
            rng: rng::stream(seed, RNG_STREAM),
            ecn_enabled: true,
            core: BbrCore::default(),
            probe_rtt_min_us: UNSET,
            probe_rtt_min_stamp: 0,
            ce_state: false,
            bw_probe_up_rounds: 0,
            init_cwnd: 10,
            cycle_idx: Phase::Up,
            full_bw: 0,
            full_bw_now: false,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: UNSET,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: UNSET,
            inflight_hi: UNSET,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha: ECN_ALPHA_INIT,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            seen_delivered_ce: 0,
            ece_event: false,
            ce_seen: false,
        }
    }

    /// Use ECN (default) or not: without it CE marks are ignored and
    /// [`CongestionControl::wants_ecn`] is false.
    pub fn with_ecn(mut self, on: bool) -> Bbr3 {
        self.ecn_enabled = on;
        self
    }

    // ---------- accessors (telemetry, tests; the shared ones are [`BbrVersion`]'s) ----------

    /// The seed of [`Bbr3::with_seed`].
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// PROBE_BW phase (meaningful in [`Mode::ProbeBw`]).
    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }
    /// `bbr_bw` in the kernel's unit (packets/µs << 24): min(max_bw, bw_lo).
    pub fn bw_raw(&self) -> u32 {
        self.bbr_bw()
    }
    /// max(bw_hi), packets/µs << 24.
    pub fn bw_hi_raw(&self) -> u32 {
        self.max_bw()
    }
    /// bw_lo, packets/µs << 24; [`UNSET`] if not in use.
    pub fn bw_lo_raw(&self) -> u32 {
        self.bw_lo
    }
    /// Bandwidth estimate in bytes/s (as `tcp_bbr_info`).
    pub fn bw(&self) -> u64 {
        rate_bytes_per_sec(self.core.sock.mss, self.bbr_bw() as u64, BBR_UNIT, 0)
    }
    /// inflight_lo, packets; [`UNSET`] if not in use.
    pub fn inflight_lo(&self) -> u32 {
        self.inflight_lo
    }
    /// inflight_hi, packets; [`UNSET`] until loss/ECN set it.
    pub fn inflight_hi(&self) -> u32 {
        self.inflight_hi
    }
    /// ecn_alpha in 1/256.
    pub fn ecn_alpha_raw(&self) -> u32 {
        self.ecn_alpha
    }
    pub fn ecn_eligible(&self) -> bool {
        self.ecn_eligible
    }
    /// Max extra acked over the aggregation window, packets.
    pub fn extra_acked(&self) -> u32 {
        self.core.ack.extra_acked()
    }
    /// Wall-clock wait before the next probe, µs (drawn in DOWN).
    pub fn probe_wait_us(&self) -> u32 {
        self.probe_wait_us
    }

    /// `bbr_can_use_ecn`: ECN on, and marks seen (stands for `ecn_low`).
    fn can_use_ecn(&self) -> bool {
        self.ecn_enabled && self.ce_seen
    }

    // ---------- estimates ----------

    /// `bbr_max_bw`.
    fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }
    /// `bbr_bw`.
    fn bbr_bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }
    // ---------- cwnd ----------

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        self.core.ack.cwnd(self.bbr_bw() as u64)
    }

    /// `bbr_probe_rtt_cwnd`: max(4, BDP/2).
    fn probe_rtt_cwnd(&self) -> u32 {
        CWND_MIN_TARGET.max(self.bdp(self.bbr_bw() as u64, PROBE_RTT_CWND_GAIN))
    }

    /// `bbr_set_cwnd` (v3: no packet conservation; the bounds do that job).
    fn set_cwnd(&mut self, c: &ConnView, acked: u32, bw: u32, gain: u32, w: &mut Window) {
        let mut cwnd = w.cwnd;
        if acked != 0 {
            let mut target = self.bdp(bw as u64, gain);
            target += self.ack_aggregation_cwnd();
            target = self.quantization_budget(c, w, target);
            if self.core.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.core.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    // ---------- per-ACK model ----------

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, c: &ConnView, rs: &RateSample) {
        self.core.round_start = false;
        if rs.interval / NS_PER_US as i64 > 0 && rs.prior_delivered >= self.core.next_rtt_delivered {
            self.core.next_rtt_delivered = c.delivered;
            self.core.round_start = true;
        }
    }

    /// `bbr_calculate_bw_sample`: rounded up.
    fn calculate_bw_sample(&self, rs: &RateSample) -> u32 {
        let interval_us = rs.interval / NS_PER_US as i64;
        if interval_us <= 0 || rs.delivered < 0 {
            return 0;
        }
        (rs.delivered as u64 * BW_UNIT).div_ceil(interval_us as u64).min(u32::MAX as u64) as u32
    }

    /// `bbr_update_ack_aggregation` (window of 1 round before the pipe is full).
    fn update_ack_aggregation(&mut self, rs: &RateSample, w: &Window) {
        // v3: one-round buckets until the pipe is full (v1: always 5 rounds)
        let win_rtts = if self.core.full_bw_reached { EXTRA_ACKED_WIN_RTTS } else { 1 };
        let bw = self.bbr_bw() as u64;
        self.core.update_ack_aggregation(rs, win_rtts, bw, w.cwnd);
    }

    /// `bbr_reset_full_bw`.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.core.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_check_full_bw_reached` (v3: on the sample, and also in PROBE_UP).
    fn check_full_bw_reached(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let bw_thresh = (self.full_bw as u64 * FULL_BW_THRESH) >> BBR_SCALE;
        if ctx.sample_bw as u64 >= bw_thresh {
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
            return;
        }
        if !self.core.round_start {
            return;
        }
        self.core.full_bw_cnt += 1;
        self.full_bw_now = self.core.full_bw_cnt >= FULL_BW_CNT;
        self.core.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, c: &ConnView, w: &mut Window) {
        if self.core.mode == Mode::Startup && self.core.full_bw_reached {
            self.core.mode = Mode::Drain;
            w.ssthresh = self.inflight(c, w, self.max_bw() as u64, BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.core.mode == Mode::Drain
            && self.packets_in_net_at_edt(c, w, c.packets_in_flight) <= self.inflight(c, w, self.max_bw() as u64, BBR_UNIT)
        {
            self.core.mode = Mode::ProbeBw;
            self.start_bw_probe_down(c);
        }
    }

    /// `bbr_exit_probe_rtt`.
    fn exit_probe_rtt(&mut self, c: &ConnView) {
        self.reset_lower_bounds();
        if self.core.full_bw_reached {
            self.core.mode = Mode::ProbeBw;
            self.start_bw_probe_down(c);
            self.start_bw_probe_cruise();
        } else {
            self.core.mode = Mode::Startup;
        }
    }

    /// `bbr_update_min_rtt`: 5 s probe_rtt_min filter, 10 s min_rtt, PROBE_RTT.
    fn update_min_rtt(&mut self, c: &ConnView, rs: &RateSample, w: &mut Window) {
        let now_j = jiffies32(c.now);
        let rtt_us: i64 = if rs.rtt < 0 { -1 } else { rs.rtt / NS_PER_US as i64 };
        let expire = self.probe_rtt_min_stamp.wrapping_add(msecs_to_jiffies(PROBE_RTT_WIN_MS));
        let probe_rtt_expired = after(now_j, expire);
        if rtt_us >= 0 && (rtt_us < self.probe_rtt_min_us as i64 || (probe_rtt_expired && !rs.is_ack_delayed)) {
            self.probe_rtt_min_us = rtt_us.min(u32::MAX as i64) as u32;
            self.probe_rtt_min_stamp = now_j;
        }
        let expire = self.core.min_rtt_stamp.wrapping_add(MIN_RTT_WIN_SEC.wrapping_mul(HZ));
        let min_rtt_expired = after(now_j, expire);
        if self.probe_rtt_min_us <= self.core.min_rtt_us || min_rtt_expired {
            self.core.min_rtt_us = self.probe_rtt_min_us;
            self.core.min_rtt_stamp = self.probe_rtt_min_stamp;
        }

        if self.core.enter_probe_rtt(probe_rtt_expired, w.cwnd) {
            self.ack_phase = AckPhase::ProbeStopping;
            self.core.next_rtt_delivered = c.delivered;
        }
        // ProbeRttHold: the samples ahead are app-limited; hold max(4, BDP/2) for max(200 ms, one round).
        let hold_inflight = self.probe_rtt_cwnd();
        self.hold_probe_rtt(c, rs, w, hold_inflight);
    }

    /// `bbr_update_gains` ([`bbr_common::mode_gains`]): v3's STARTUP paces
    /// at 2.77 with cwnd 2; PROBE_BW the phase's pacing gain, cwnd 2 (2.25 in UP).
    fn update_gains(&mut self) {
        let mut probe_bw_cwnd = CWND_GAIN;
        if self.cycle_idx == Phase::Up {
            probe_bw_cwnd += BBR_UNIT * BW_PROBE_CWND_GAIN / 4;
        }
        let probe_bw = (PACING_GAIN[self.cycle_idx as usize], probe_bw_cwnd);
        (self.core.pacing_gain, self.core.cwnd_gain) =
            bbr_common::mode_gains(self.core.mode, (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN), DRAIN_GAIN, probe_bw);
    }

    /// `bbr_update_ecn_alpha`: once per round; returns the CE ratio (1/256) or None.
    fn update_ecn_alpha(&mut self, c: &ConnView, w: &Window) -> Option<u32> {
        if !self.ecn_eligible && self.can_use_ecn() && self.core.min_rtt_us <= ECN_MAX_RTT_US {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return None;
        }
        let delivered = c.delivered.wrapping_sub(self.alpha_last_delivered);
        let delivered_ce = c.delivered_ce.wrapping_sub(self.alpha_last_delivered_ce);
        if delivered == 0 {
            return None;
        }
        let ce_ratio = ((delivered_ce << BBR_SCALE) / delivered) as u32;
        let mut alpha = ((BBR_UNIT - ECN_ALPHA_GAIN) * self.ecn_alpha) >> BBR_SCALE;
        alpha += (ECN_ALPHA_GAIN * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT);
        self.alpha_last_delivered = c.delivered;
        self.alpha_last_delivered_ce = c.delivered_ce;
        self.check_ecn_too_high_in_startup(c, w, ce_ratio);
        Some(ce_ratio)
    }

    /// `bbr_check_ecn_too_high_in_startup`.
    fn check_ecn_too_high_in_startup(&mut self, c: &ConnView, w: &Window, ce_ratio: u32) {
        if self.core.full_bw_reached || !self.ecn_eligible {
            return;
        }
        if ce_ratio >= ECN_THRESH {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= FULL_ECN_CNT {
            self.handle_queue_too_high_in_startup(c, w);
        }
    }

    /// `bbr_handle_queue_too_high_in_startup`: pipe full; inflight_hi = the BDP or last round's flight.
    fn handle_queue_too_high_in_startup(&mut self, c: &ConnView, w: &Window) {
        self.core.full_bw_reached = true;
        let bdp = self.inflight(c, w, self.max_bw() as u64, BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    /// `bbr_check_loss_too_high_in_startup`.
    fn check_loss_too_high_in_startup(&mut self, c: &ConnView, rs: &RateSample, ctx: &Ctx, w: &Window) {
        if self.core.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start
            && c.ca_state == CaState::Recovery
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && self.is_inflight_too_high(ctx.lost, ctx.tx_in_flight, rs)
        {
            self.handle_queue_too_high_in_startup(c, w);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, c: &ConnView, rs: &RateSample, ctx: &Ctx, w: &mut Window) {
        self.update_congestion_signals(rs, ctx, w);
        self.update_ack_aggregation(rs, w);
        self.check_loss_too_high_in_startup(c, rs, ctx, w);
        self.check_full_bw_reached(rs, ctx);
        self.check_drain(c, w);
        self.update_cycle_phase(c, rs, ctx, w);
        self.update_min_rtt(c, rs, w);
    }

    /// `bbr_note_loss`.
    fn note_loss(&mut self, c: &ConnView) {
        if !self.loss_in_round {
            self.loss_round_delivered = c.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

}

/// The steps v3 shares with v1 ([`BbrVersion`]), with v3's own helpers.
impl BbrVersion for Bbr3 {
    const STARTUP_PACING_GAIN: u32 = STARTUP_PACING_GAIN;
    fn core(&self) -> &BbrCore {
        &self.core
    }
    fn core_mut(&mut self) -> &mut BbrCore {
        &mut self.core
    }
    fn model_bw(&self) -> u64 {
        self.bbr_bw() as u64
    }
    fn no_rtt_bdp(&self) -> u32 {
        self.init_cwnd
    }
    /// `bbr_quantization_budget` (v3: max with 3 TSO bursts and the floor; +2 in UP).
    fn quantization_budget(&self, c: &ConnView, w: &Window, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.max(3 * self.tso_segs_goal(c, w));
        cwnd = cwnd.max(CWND_MIN_TARGET);
        if self.core.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd += 2;
        }
        cwnd
    }
    /// `bbr_bw_to_pacing_rate`: v3's `bbr_rate_bytes_per_sec` (at least 1
    /// B/s) of a u32 bw, as the kernel's parameter (a wider bw, only
    /// `bbr_init_pacing_rate_from_rtt`'s cwnd/srtt, is clamped into it).
    fn bw_to_pacing_rate(&self, bw: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(self.core.sock.mss, bw.min(u32::MAX as u64), gain, PACING_MARGIN_PERCENT)
    }
    /// `bbr_tso_segs_goal` (v3: a bw- and min_rtt-based allowance, at least
    /// `sysctl_tcp_min_tso_segs`; v1: bw only, and 1 below 1.2 Mbit/s).
    fn tso_segs_goal(&self, c: &ConnView, w: &Window) -> u32 {
        let mut bytes = w.pacing_rate >> c.pacing_shift.min(63);
        let r = self.core.min_rtt_us >> TSO_RTT_SHIFT;
        if r < 32 {
            bytes += GSO_LEGACY_MAX_SIZE >> r;
        }
        let bytes = bytes.min(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER);
        ((bytes / self.core.sock.mss as u64) as u32).max(MIN_TSO_SEGS)
    }
    /// `bbr_check_probe_rtt_done` (v3: the 5 s probe_rtt_min window restarts, then `bbr_exit_probe_rtt`).
    fn check_probe_rtt_done(&mut self, c: &ConnView, w: &mut Window) {
        let now_j = jiffies32(c.now);
        if !self.core.probe_rtt.is_over(now_j) {
            return;
        }
        self.probe_rtt_min_stamp = now_j; // next PROBE_RTT in 5 s
        w.cwnd = w.cwnd.max(self.core.prior_cwnd);
        self.exit_probe_rtt(c);
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    /// `bbr_init`.
    fn init(&mut self, c: &ConnView, w: &mut Window) {
        let (seed, ecn) = (self.seed, self.ecn_enabled);
        *self = Bbr3::with_seed(seed).with_ecn(ecn);
        self.core.sock.start(c);
        self.seen_delivered_ce = c.delivered_ce;

        self.init_cwnd = w.cwnd.min(0x7F);
        self.core.prior_cwnd = c.prior_cwnd;
        w.ssthresh = INFINITE_SSTHRESH;
        self.core.next_rtt_delivered = c.delivered;
        let min_rtt = if c.min_rtt == u64::MAX { UNSET } else { to_us(c.min_rtt).min(UNSET as u64) as u32 };
        let now_j = jiffies32(c.now);
        self.probe_rtt_min_us = min_rtt;
        self.probe_rtt_min_stamp = now_j;
        self.core.min_rtt_us = min_rtt;
        self.core.min_rtt_stamp = now_j;
        self.init_pacing_rate_from_rtt(c, w);
        self.core.ack.reset(to_us(c.now));
        // Start sampling ECN mark rate after the first full flight is acked.
        self.loss_round_delivered = c.delivered + 1;
    }

    /// `bbr_ssthresh`: save cwnd and the loss-adapted bounds for undo.
    fn ssthresh(&mut self, c: &ConnView, w: &Window) -> u32 {
        self.core.sock.observe(c);
        self.core.save_cwnd(w.cwnd);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        w.ssthresh
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_skb_marked_lost`: while probing, a lost segment whose flight lost
    /// over 2 % sets inflight_hi where the loss rate crossed 2 %.
    fn skb_marked_lost(&mut self, c: &ConnView, skb: &LostSkb, w: &Window) {
        self.core.sock.observe(c);
        self.note_loss(c);
        if !self.bw_probe_samples || !skb.has_tx_state {
            return; // not sent while probing; or SACKed, reneged, marked lost
        }
        let rs = RateSample {
            tx_in_flight: skb.tx_in_flight,
            lost: skb.lost,
            is_app_limited: skb.is_app_limited,
            delivered: 0,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(rs.lost, rs.tx_in_flight, &rs) {
            let tx = self.inflight_hi_from_lost_skb(rs.lost, rs.tx_in_flight, skb.pcount);
            self.handle_inflight_too_high(c, w, rs.is_app_limited, tx);
        }
    }

    /// `bbr_main`.
    fn cong_control(&mut self, c: &ConnView, rs: &RateSample, w: &mut Window) {
        self.core.sock.observe(c);
        let mut rs = *rs;
        rs.is_app_limited |= self.core.sock.in_probe_rtt_bubble(rs.prior_delivered);
        if c.delivered_ce > self.seen_delivered_ce {
            self.ce_seen = true;
        }
        let is_ece = c.delivered_ce > self.seen_delivered_ce || self.ece_event;
        self.seen_delivered_ce = c.delivered_ce;
        self.ece_event = false;
        let mut ctx = Ctx { sample_bw: 0, tx_in_flight: rs.tx_in_flight, lost: rs.lost, is_ece };

        self.update_round_start(c, &rs);
        if self.core.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(c, w);
        }
        self.ecn_in_round |= self.ecn_eligible && ctx.is_ece;
        ctx.sample_bw = self.calculate_bw_sample(&rs);
        self.update_latest_delivery_signals(c, &rs, &ctx);

        self.update_model(c, &rs, &ctx, w);

        self.update_gains();
        let bw = self.bbr_bw();
        self.set_pacing_rate(c, bw as u64, self.core.pacing_gain, w);
        self.set_cwnd(c, rs.acked_sacked, bw, self.core.cwnd_gain, w);
        self.bound_cwnd_for_inflight_model(w);

        self.advance_latest_delivery_signals(&rs, &ctx);
        self.core.prev_ca_state = c.ca_state;
        self.loss_in_cycle |= ctx.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_set_state`.
    fn set_state(&mut self, c: &ConnView, new_state: CaState, w: &mut Window) {
        self.core.sock.observe(c);
        if new_state == CaState::Loss {
            self.core.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                self.inflight_lo = w.cwnd.max(self.core.prior_cwnd);
            }
        } else if self.core.prev_ca_state == CaState::Loss {
            w.cwnd = w.cwnd.max(self.core.prior_cwnd); // bbr_exit_loss_recovery
        }
    }

    /// `bbr_cwnd_event`.
    fn cwnd_event(&mut self, c: &ConnView, ev: CwndEvent, w: &mut Window) {
        self.core.sock.observe(c);
        match ev {
            CwndEvent::TxStart => self.restart_from_idle(c, w),
            CwndEvent::EcnIsCe | CwndEvent::EcnNoCe if self.ecn_enabled => {
                let ce = ev == CwndEvent::EcnIsCe;
                self.ce_state = ce;
                if ce {
                    self.ece_event = true;
                    self.ce_seen = true;
                }
            }
            _ => {}
        }
    }

    /// `bbr_undo_cwnd`: a spurious loss; restore the bounds saved in ssthresh.
    fn undo_cwnd(&mut self, c: &ConnView, _w: &Window) -> u32 {
        self.core.sock.observe(c);
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.core.prior_cwnd
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    fn wants_ecn(&self) -> bool {
        self.ecn_enabled
    }

    /// `bbr_get_phase` names.
    fn state_label(&self) -> &'static str {
        match self.core.mode {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeRtt => "PROBE_RTT",
            Mode::ProbeBw => match self.cycle_idx {
                Phase::Up => "PROBE_BW_UP",
                Phase::Down => "PROBE_BW_DOWN",
                Phase::Cruise => "PROBE_BW_CRUISE",
                Phase::Refill => "PROBE_BW_REFILL",
            },
        }
    }
}
