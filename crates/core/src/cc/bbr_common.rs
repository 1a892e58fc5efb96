//! What BBR v1 and BBRv3 share: the fixed-point units, the arithmetic that
//! turns a bandwidth estimate into a pacing rate and a BDP, the ACK-aggregation
//! estimator ([`AckAggregation`]), PROBE_RTT's hold ([`ProbeRttHold`]), the
//! socket fields a control behind this crate's boundary must rebuild from
//! [`ConnView`] ([`SocketMirror`]), the `struct bbr` fields both versions
//! hold ([`BbrCore`]), and the steps both kernels write line for line alike,
//! around each version's own helpers ([`BbrVersion`]: the pacing rate,
//! `bbr_bdp`/`bbr_inflight`, `bbr_packets_in_net_at_edt`, PROBE_RTT's entry
//! and hold, restart from idle, the telemetry getters).
//!
//! Source: Linux v6.x `net/ipv4/tcp_bbr.c` (v1: `BW_SCALE`, `BBR_SCALE`,
//! `bbr_rate_bytes_per_sec`, `bbr_bdp`, `bbr_init_pacing_rate_from_rtt`)
//! and the BBRv3 tree's `tcp_bbr.c` (google/bbr, `v3`), which keeps these
//! lines unchanged (`bbr_update_ack_aggregation`, `bbr_ack_aggregation_cwnd`
//! and `bbr_extra_acked` too, but for the window's length in STARTUP and
//! whether STARTUP adds the allowance: the caller passes both; and the
//! PROBE_RTT branch of `bbr_update_min_rtt` with `bbr_check_probe_rtt_done`'s
//! test, but for the flight the hold waits for; `enum bbr_mode` ([`Mode`])
//! and `bbr_save_cwnd` ([`saved_cwnd`]) unchanged; `bbr_update_gains`
//! ([`mode_gains`]) but for the gains themselves). Each version's
//! own file ([`super::bbr`], [`super::bbr3`]) keeps what differs: the state
//! machines, the TSO goal, the quantization budget, and how a result is
//! clamped into its field.
//!
//! Model: bandwidth is packets per µs in fixed point `<< BW_SCALE` (24
//! bits, so a 1-packet-per-second flow is still 16 units); gains are in
//! 1/256 (`BBR_UNIT` = 1.0). A pacing rate is bw · mss · gain, less a 1 %
//! margin, in bytes/s; a BDP is bw · min_rtt · gain, rounded up, in packets.
//!
//! Constants, with units and reasons:
//! - [`BW_SCALE`] = 24: bw fixed point (packets/µs << 24).
//! - [`BBR_SCALE`] = 8: gain fixed point (1/256).
//! - [`PACING_MARGIN_PERCENT`] = 1 %: pace slightly below the estimate so a
//!   standing queue drains over time.
//! - [`GSO_LEGACY_MAX_SIZE`] = 65 536 bytes, [`MAX_TCP_HEADER`] = 192 bytes
//!   (L1_CACHE_ALIGN(128 + MAX_HEADER 32) on this lab's kernel config): the
//!   largest TSO burst both versions budget for.
//! - [`MIN_RTT_WIN_SEC`] = 10 s: the min_rtt filter window (v1; v3's
//!   min_rtt is still 10 s, its PROBE_RTT interval 5 s).
//! - [`PROBE_RTT_MODE_MS`] = 200 ms: the least time in PROBE_RTT (~2 % of
//!   the 10 s window).
//! - [`EXTRA_ACKED_GAIN`] = 256/256 = 1: weight of ACK aggregation in the
//!   cwnd target.
//! - [`EXTRA_ACKED_WIN_RTTS`] = 5 rounds: the aggregation max filter keeps two
//!   buckets of this many rounds (5-10 rounds of memory).
//! - [`ACK_EPOCH_ACKED_RESET_THRESH`] = 2^20 packets: an aggregation epoch
//!   that acked this much is restarted (the kernel's 20-bit field).
//! - [`EXTRA_ACKED_MAX_US`] = 100 000 µs: the allowance is at most 100 ms
//!   worth of the bandwidth estimate.

use super::{CaState, ConnView, RateSample, Window};
use crate::kernel::{after, jiffies32, msecs_to_jiffies};
use crate::time::{to_us, Nanos, NS_PER_US};

/// Bandwidth fixed point: bw is in packets per µs, shifted left by this.
pub const BW_SCALE: u32 = 24;
/// 1.0 packet/µs in bw units.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain fixed point: gains are in 1/256.
pub const BBR_SCALE: u32 = 8;
/// A gain of 1.0.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// Pace this many percent below the bandwidth estimate.
pub const PACING_MARGIN_PERCENT: u64 = 1;
/// Largest GSO burst BBR sizes for, bytes (`GSO_LEGACY_MAX_SIZE`).
pub const GSO_LEGACY_MAX_SIZE: u64 = 65536;
/// `MAX_TCP_HEADER` of this lab's kernel config, bytes.
pub const MAX_TCP_HEADER: u64 = 192;
/// min_rtt filter window, seconds.
pub const MIN_RTT_WIN_SEC: u32 = 10;
/// Least time at the minimum cwnd in PROBE_RTT, ms.
pub const PROBE_RTT_MODE_MS: u32 = 200;

/// Weight of ACK aggregation in the cwnd target, 1/256.
pub const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// Rounds per bucket of the aggregation max filter (two buckets).
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// An aggregation epoch that acked this many packets is restarted.
pub const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// The aggregation allowance is at most this much of the bw estimate, µs.
pub const EXTRA_ACKED_MAX_US: u64 = 100 * 1000;

/// `enum bbr_mode`, the same four modes in v1 and v3 (v3 names PROBE_BW's
/// phases beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up quickly to fill the pipe.
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// Cycle the pacing gain around the estimated bandwidth.
    ProbeBw,
    /// Cut inflight to re-measure min_rtt (v1: 4 packets; v3: max(4, BDP/2)).
    ProbeRtt,
}

impl Mode {
    /// The kernel's name for the mode.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeBw => "PROBE_BW",
            Mode::ProbeRtt => "PROBE_RTT",
        }
    }
}

/// `bbr_save_cwnd` (v1 and v3 alike): the `prior_cwnd` to keep when `cwnd`
/// is about to be cut: `cwnd` itself, unless recovery or PROBE_RTT already
/// cut it (then the larger of the two; the CA state is the one seen on the
/// previous ACK, `prev_ca_state`).
pub fn saved_cwnd(prior_cwnd: u32, cwnd: u32, prev_ca_state: CaState, mode: Mode) -> u32 {
    if prev_ca_state < CaState::Recovery && mode != Mode::ProbeRtt {
        cwnd
    } else {
        prior_cwnd.max(cwnd)
    }
}

/// `bbr_update_gains`: the (pacing, cwnd) gains of `mode`, 1/256. The
/// same rule in v1 and v3: STARTUP's pair; DRAIN paces at `drain_pacing`
/// and keeps STARTUP's cwnd gain; PROBE_BW the phase's pair; PROBE_RTT 1
/// and 1. What differs is the gains, which the caller passes: STARTUP (v1
/// 2.89 and 2.89; v3 2.77 and 2) and PROBE_BW (v1: the 8-phase cycle, or 1
/// while the long-term bw is in use, cwnd 2; v3: its phase's pacing gain,
/// cwnd 2, or 2.25 in UP).
pub fn mode_gains(mode: Mode, startup: (u32, u32), drain_pacing: u32, probe_bw: (u32, u32)) -> (u32, u32) {
    match mode {
        Mode::Startup => startup,
        Mode::Drain => (drain_pacing, startup.1), // keep cwnd while draining
        Mode::ProbeBw => probe_bw,
        Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
    }
}

/// `bbr_rate_bytes_per_sec`: `rate` (packets/µs << 24) · `mss` · `gain`
/// (1/256), less `margin` percent, in bytes/s; the kernel's order of
/// operations, in 128 bits so nothing wraps.
pub fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32, margin: u64) -> u64 {
    let mut r = rate as u128 * mss as u128 * gain as u128;
    r >>= BBR_SCALE;
    r *= (1_000_000 / 100 * (100 - margin)) as u128;
    (r >> BW_SCALE).min(u64::MAX as u128) as u64
}

/// `bbr_bdp` once min_rtt is known: ceil(bw · min_rtt_us · gain), packets,
/// before the caller clamps it into a u32 (rounded up, as the kernel does
/// to avoid a shrinking loop).
pub fn bdp(bw: u64, min_rtt_us: u32, gain: u32) -> u128 {
    let w = bw as u128 * min_rtt_us as u128;
    ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)
}

/// `bbr_init_pacing_rate_from_rtt`'s bandwidth: cwnd over srtt (1 ms
/// before any RTT sample, `srtt` = 0), packets/µs << 24.
pub fn init_bw(cwnd: u32, srtt: Nanos) -> u64 {
    let rtt_us = if srtt != 0 { to_us(srtt).max(1) } else { 1000 };
    cwnd as u64 * BW_UNIT / rtt_us
}

/// The ACK-aggregation estimator (`struct bbr`'s `ack_epoch_mstamp`,
/// `ack_epoch_acked`, `extra_acked[2]`, `extra_acked_win_rtts`,
/// `extra_acked_win_idx`): how many packets were acked beyond what the
/// bandwidth estimate explains since the current epoch began, max-filtered
/// over two buckets of rounds. Widths as the kernel's: the epoch count
/// saturates at 20 bits, the window counter at 5 bits, and an excess is
/// stored in a u16 (truncated, as C's assignment to the u16 field does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckAggregation {
    /// Start of the current epoch, µs (`tp->delivered_mstamp` then).
    epoch_mstamp: u64,
    /// Packets (S)ACKed in the current epoch.
    epoch_acked: u32,
    /// Largest excess per bucket, packets.
    extra_acked: [u16; 2],
    /// Rounds in the current bucket.
    win_rtts: u32,
    /// The current bucket.
    win_idx: usize,
}

impl AckAggregation {
    /// `bbr_init`'s lines: everything cleared, the epoch starting at `now_us`.
    pub fn reset(&mut self, now_us: u64) {
        *self = AckAggregation { epoch_mstamp: now_us, ..AckAggregation::default() };
    }
    /// A new epoch from `now_us` (restart after idle: `bbr_cwnd_event`).
    pub fn restart_epoch(&mut self, now_us: u64) {
        self.epoch_mstamp = now_us;
        self.epoch_acked = 0;
    }
    /// `bbr_extra_acked`: the largest excess over the last 5-10 rounds, packets.
    pub fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1]) as u32
    }
    /// `bbr_update_ack_aggregation` for one ACK: `acked_sacked` packets
    /// delivered at `delivered_mstamp` (µs), `bw` the estimate (packets/µs
    /// << 24); a round start moves to the other bucket after `win_rtts`
    /// rounds (v1: always [`EXTRA_ACKED_WIN_RTTS`]; v3: 1 until the pipe is
    /// full). The excess is capped at `cwnd`. The caller checks the rate
    /// sample is valid (acked something, delivered ≥ 0, interval > 0).
    pub fn update(&mut self, round_start: bool, win_rtts: u32, bw: u64, delivered_mstamp: u64, acked_sacked: u32, cwnd: u32) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1F);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        // What the estimate would have delivered over the epoch.
        let epoch_us = delivered_mstamp.saturating_sub(self.epoch_mstamp) as u32;
        let mut expected_acked = (bw as u128 * epoch_us as u128 / BW_UNIT as u128) as u32;
        // New epoch if ACKs came slower than expected, or the epoch is very old.
        if self.epoch_acked <= expected_acked || self.epoch_acked + acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.epoch_acked = 0;
            self.epoch_mstamp = delivered_mstamp;
            expected_acked = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked_sacked).min(0xFFFFF);
        let extra = (self.epoch_acked - expected_acked).min(cwnd);
        if extra > self.extra_acked[self.win_idx] as u32 {
            self.extra_acked[self.win_idx] = extra as u16; // a u16 field in the kernel
        }
    }
    /// `bbr_ack_aggregation_cwnd`: the cwnd allowance for aggregation,
    /// packets: the largest recent excess, at most [`EXTRA_ACKED_MAX_US`] of
    /// `bw`.
    pub fn cwnd(&self, bw: u64) -> u32 {
        let max_aggr_cwnd = bw as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128;
        let aggr_cwnd = (EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE;
        (aggr_cwnd as u128).min(max_aggr_cwnd) as u32
    }
}

/// PROBE_RTT's hold (`struct bbr`'s `probe_rtt_done_stamp` and
/// `probe_rtt_round_done`): once the flight is down to the PROBE_RTT cwnd,
/// hold it for max([`PROBE_RTT_MODE_MS`], one round). The lines are the
/// PROBE_RTT branch of `bbr_update_min_rtt` and the test that opens
/// `bbr_check_probe_rtt_done`, the same in v1 and v3 but for the flight the
/// hold waits for (v1: `bbr_cwnd_min_target`, 4 packets; v3:
/// `bbr_probe_rtt_cwnd()`, max(4, BDP/2)). What the end of the hold does
/// differs and stays with each version's `check_probe_rtt_done` (v1 restarts
/// the 10 s min_rtt window and `bbr_reset_mode`; v3 restarts the 5 s
/// probe_rtt_min window and `bbr_exit_probe_rtt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeRttHold {
    /// When the hold may end, jiffies; 0 = the flight is not yet down.
    done_stamp: u32,
    /// A round has passed since the flight came down.
    round_done: bool,
}

/// What a PROBE_RTT ACK did to the hold ([`ProbeRttHold::on_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeRttStep {
    /// Still waiting for the flight to come down, or for the round to end.
    Holding,
    /// The flight came down: the hold starts, and so does a round (the caller
    /// sets `next_rtt_delivered = tp->delivered`).
    Started,
    /// A round has passed at the PROBE_RTT cwnd: the caller checks whether
    /// the hold is over (`bbr_check_probe_rtt_done`).
    RoundDone,
}

impl ProbeRttHold {
    /// `bbr_init`, and entering PROBE_RTT (`probe_rtt_done_stamp = 0`; the
    /// round flag is cleared when the hold starts).
    pub fn reset(&mut self) {
        self.done_stamp = 0;
    }
    /// `bbr_init`'s lines: both fields cleared.
    pub fn clear(&mut self) {
        *self = ProbeRttHold::default();
    }
    /// When the hold may end, jiffies; 0 before the flight came down.
    pub fn done_stamp(&self) -> u32 {
        self.done_stamp
    }
    /// A round has passed at the PROBE_RTT cwnd.
    pub fn round_done(&self) -> bool {
        self.round_done
    }
    /// The PROBE_RTT branch of `bbr_update_min_rtt`, for one ACK at jiffies
    /// `now_j`: mark the samples ahead app-limited (`tp->app_limited =
    /// delivered + inflight`, in `sock`); start the hold once in flight ≤
    /// `hold_inflight` (the version's PROBE_RTT cwnd); count the round.
    pub fn on_ack(&mut self, sock: &mut SocketMirror, c: &ConnView, now_j: u32, hold_inflight: u32, round_start: bool) -> ProbeRttStep {
        sock.mark_probe_rtt_app_limited(c);
        if self.done_stamp == 0 && c.packets_in_flight <= hold_inflight {
            // Maintain min packets in flight for max(200 ms, 1 round).
            self.done_stamp = now_j.wrapping_add(msecs_to_jiffies(PROBE_RTT_MODE_MS));
            self.round_done = false;
            return ProbeRttStep::Started;
        }
        if self.done_stamp != 0 {
            if round_start {
                self.round_done = true;
            }
            if self.round_done {
                return ProbeRttStep::RoundDone;
            }
        }
        ProbeRttStep::Holding
    }
    /// `bbr_check_probe_rtt_done`'s test: the hold started and its time is
    /// over at jiffies `now_j`.
    pub fn is_over(&self, now_j: u32) -> bool {
        self.done_stamp != 0 && after(now_j, self.done_stamp)
    }
}

/// Socket fields a control behind this crate's boundary rebuilds from
/// [`ConnView`] (the kernel reads or writes them in `tcp_sock` directly):
/// `tp->delivered_mstamp` (the time of the last hook that saw `delivered`
/// grow), `tp->mss_cache`, and PROBE_RTT's app-limited mark
/// (`tp->app_limited = delivered + inflight`, which a control here cannot
/// write: kept as the bubble `[from, until]` of delivered counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketMirror {
    /// `tp->delivered_mstamp`, µs.
    pub delivered_mstamp: u64,
    /// `delivered` when `delivered_mstamp` last moved.
    seen_delivered: u64,
    /// `tp->mss_cache` at the last hook, bytes.
    pub mss: u32,
    /// PROBE_RTT's app-limited bubble: delivered counts `[from, until]`; `until` 0 = none.
    probe_rtt_al_from: u64,
    probe_rtt_al_until: u64,
}

impl Default for SocketMirror {
    fn default() -> Self {
        SocketMirror { delivered_mstamp: 0, seen_delivered: 0, mss: 1448, probe_rtt_al_from: 0, probe_rtt_al_until: 0 }
    }
}

impl SocketMirror {
    /// `bbr_init`'s view of the socket: delivered so far, now, the mss.
    pub fn start(&mut self, c: &ConnView) {
        self.seen_delivered = c.delivered;
        self.delivered_mstamp = to_us(c.now);
        self.mss = c.mss.max(1);
    }
    /// Rebuild `delivered_mstamp` and `mss` at a hook.
    pub fn observe(&mut self, c: &ConnView) {
        if c.delivered != self.seen_delivered {
            self.seen_delivered = c.delivered;
            self.delivered_mstamp = to_us(c.now);
        }
        self.mss = c.mss.max(1);
    }
    /// On a PROBE_RTT ACK: `tp->app_limited = delivered + inflight` (or 1).
    pub fn mark_probe_rtt_app_limited(&mut self, c: &ConnView) {
        let mark = (c.delivered + c.packets_in_flight as u64).max(1);
        if self.probe_rtt_al_until == 0 || c.delivered > self.probe_rtt_al_until {
            self.probe_rtt_al_from = c.delivered;
        }
        self.probe_rtt_al_until = mark;
    }
    /// Forget the PROBE_RTT mark (`bbr_init`).
    pub fn clear_probe_rtt_app_limited(&mut self) {
        self.probe_rtt_al_from = 0;
        self.probe_rtt_al_until = 0;
    }
    /// Was a packet sent at `prior_delivered` inside PROBE_RTT's app-limited bubble?
    pub fn in_probe_rtt_bubble(&self, prior_delivered: u64) -> bool {
        self.probe_rtt_al_until != 0 && prior_delivered >= self.probe_rtt_al_from && prior_delivered <= self.probe_rtt_al_until
    }
    /// `tp->app_limited != 0`, including the PROBE_RTT mark.
    pub fn app_limited(&self, c: &ConnView) -> bool {
        c.app_limited != 0 || (self.probe_rtt_al_until != 0 && c.delivered <= self.probe_rtt_al_until)
    }
}

/// The `struct bbr` fields v1 and v3 both hold, with the same meaning and
/// width (v3's struct starts with v1's; what it adds, and the fields whose
/// type differs between the two, `bw`/`bw_hi`, `full_bw` and `cycle_idx`,
/// stay in each version's own struct), plus the socket fields a control
/// here rebuilds ([`SocketMirror`]). Each version holds one as `core` and
/// implements [`BbrVersion`] for the steps both kernels write alike.
#[derive(Debug, Clone)]
pub struct BbrCore {
    /// Min RTT in the 10 s window, µs; `u32::MAX` (`~0U`) before any sample.
    pub min_rtt_us: u32,
    /// When `min_rtt_us` was taken, jiffies.
    pub min_rtt_stamp: u32,
    /// PROBE_RTT's hold: when it may end, a round passed ([`ProbeRttHold`]).
    pub probe_rtt: ProbeRttHold,
    /// `delivered` at which the next round starts.
    pub next_rtt_delivered: u64,
    /// Start of the current PROBE_BW phase, µs.
    pub cycle_mstamp: u64,
    /// The state machine's mode.
    pub mode: Mode,
    /// CA state seen on the previous ACK.
    pub prev_ca_state: CaState,
    /// This ACK starts a new round.
    pub round_start: bool,
    /// Restarting from idle (until data is acked).
    pub idle_restart: bool,
    /// Current gains, 1/256 (0 before the first ACK, as in the kernel).
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
    /// STARTUP found the pipe full.
    pub full_bw_reached: bool,
    /// Rounds without 25 % bw growth.
    pub full_bw_cnt: u32,
    /// `bbr_init_pacing_rate_from_rtt` used a real srtt.
    pub has_seen_rtt: bool,
    /// cwnd before recovery or PROBE_RTT cut it, packets.
    pub prior_cwnd: u32,
    /// ACK aggregation: epoch, excess per bucket ([`AckAggregation`]).
    pub ack: AckAggregation,
    /// `tp->delivered_mstamp`, `mss_cache`, PROBE_RTT's app-limited mark.
    pub sock: SocketMirror,
}

impl Default for BbrCore {
    fn default() -> Self {
        BbrCore {
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt: ProbeRttHold::default(),
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            idle_restart: false,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            ack: AckAggregation::default(),
            sock: SocketMirror::default(),
        }
    }
}

impl BbrCore {
    /// `bbr_save_cwnd` ([`saved_cwnd`]): keep `cwnd` as the last good one.
    pub fn save_cwnd(&mut self, cwnd: u32) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, cwnd, self.prev_ca_state, self.mode);
    }
    /// `bbr_update_min_rtt`'s entry to PROBE_RTT: once the window that asks
    /// for it has `expired` (v1: min_rtt's 10 s; v3: probe_rtt_min's 5 s), not
    /// while restarting from idle: note the cwnd to restore, restart the hold.
    /// True if PROBE_RTT was entered (v3 then also marks its ACK phase and
    /// starts a round).
    pub fn enter_probe_rtt(&mut self, expired: bool, cwnd: u32) -> bool {
        if PROBE_RTT_MODE_MS > 0 && expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt; // dip to drain the queue
            self.save_cwnd(cwnd);
            self.probe_rtt.reset();
            return true;
        }
        false
    }
    /// `bbr_update_ack_aggregation`'s test that the rate sample is valid, then
    /// [`AckAggregation::update`] with this ACK's round start; `win_rtts` and
    /// `bw` are the version's.
    pub fn update_ack_aggregation(&mut self, rs: &RateSample, win_rtts: u32, bw: u64, cwnd: u32) {
        if EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval / NS_PER_US as i64 <= 0 {
            return;
        }
        self.ack.update(self.round_start, win_rtts, bw, self.sock.delivered_mstamp, rs.acked_sacked, cwnd);
    }
}

/// A BBR version as the steps v1 and v3 write alike see it: its [`BbrCore`],
/// and the few helpers each version writes its own way (the required items:
/// STARTUP's pacing gain, `bbr_bw`, the pacing rate's arithmetic,
/// `bbr_tso_segs_goal`, `bbr_bdp`'s value before an RTT sample,
/// `bbr_quantization_budget`, `bbr_check_probe_rtt_done`). The provided
/// methods are those steps, line for line the same in Linux 6.18's
/// `tcp_bbr.c` and the v3 tree's: the telemetry getters,
/// `bbr_init_pacing_rate_from_rtt`, `bbr_set_pacing_rate`, `bbr_bdp`,
/// `bbr_inflight`, `bbr_packets_in_net_at_edt`, the PROBE_RTT hold of
/// `bbr_update_min_rtt`, and `bbr_cwnd_event`'s `CA_EVENT_TX_START` branch.
pub trait BbrVersion {
    /// STARTUP's pacing gain, 1/256: the gain of `bbr_init_pacing_rate_from_rtt`
    /// (v1 `bbr_high_gain` 739, v3 `startup_pacing_gain` 710).
    const STARTUP_PACING_GAIN: u32;
    /// The shared `struct bbr` fields.
    fn core(&self) -> &BbrCore;
    fn core_mut(&mut self) -> &mut BbrCore;
    /// `bbr_bw`: the bandwidth estimate, packets/µs << 24 (v1: the long-term
    /// bw while policed, else the max filter; v3: min(max_bw, bw_lo)).
    fn model_bw(&self) -> u64;
    /// `bbr_bw_to_pacing_rate`: `bw` at `gain`, bytes/s (v1's
    /// `bbr_rate_bytes_per_sec`; v3's floors at 1 and takes the margin as an
    /// argument; no `sk_max_pacing_rate` cap in either: unlimited).
    fn bw_to_pacing_rate(&self, bw: u64, gain: u32) -> u64;
    /// `bbr_tso_segs_goal`, segments (v3 adds a min_rtt-based allowance).
    fn tso_segs_goal(&self, c: &ConnView, w: &Window) -> u32;
    /// What `bbr_bdp` returns before any RTT sample, packets (v1
    /// `TCP_INIT_CWND`, 10; v3 `bbr->init_cwnd`, the cwnd at `bbr_init`).
    fn no_rtt_bdp(&self) -> u32;
    /// `bbr_quantization_budget`: a target cwnd with room for the TSO bursts
    /// (v1 adds 3 bursts and rounds up to even; v3 takes the max with 3
    /// bursts and the 4-packet floor; both +2 in the probing phase).
    fn quantization_budget(&self, c: &ConnView, w: &Window, cwnd: u32) -> u32;
    /// `bbr_check_probe_rtt_done` (v1: back to the 10 s window and
    /// `bbr_reset_mode`; v3: the 5 s window and `bbr_exit_probe_rtt`).
    fn check_probe_rtt_done(&mut self, c: &ConnView, w: &mut Window);

    // ---------- telemetry (tests, `ss -i`-like readers) ----------

    /// Current state.
    fn mode(&self) -> Mode {
        self.core().mode
    }
    /// min_rtt estimate in ns (µs resolution, like the kernel); u64::MAX if none.
    fn min_rtt_ns(&self) -> u64 {
        match self.core().min_rtt_us {
            u32::MAX => u64::MAX,
            us => us as u64 * NS_PER_US,
        }
    }
    /// Current pacing gain (1.0 = pace at the estimate); 0 before the first ACK.
    fn pacing_gain(&self) -> f64 {
        self.core().pacing_gain as f64 / BBR_UNIT as f64
    }
    /// Current cwnd gain (a multiple of the BDP); 0 before the first ACK.
    fn cwnd_gain(&self) -> f64 {
        self.core().cwnd_gain as f64 / BBR_UNIT as f64
    }
    /// Whether STARTUP has found the pipe full.
    fn full_bw_reached(&self) -> bool {
        self.core().full_bw_reached
    }

    // ---------- the steps both kernels write alike ----------

    /// `bbr_init_pacing_rate_from_rtt`: STARTUP's gain times cwnd over srtt
    /// (over 1 ms before any RTT sample).
    fn init_pacing_rate_from_rtt(&mut self, c: &ConnView, w: &mut Window) {
        if c.srtt != 0 {
            self.core_mut().has_seen_rtt = true;
        }
        let bw = init_bw(w.cwnd, c.srtt);
        w.pacing_rate = self.bw_to_pacing_rate(bw, Self::STARTUP_PACING_GAIN);
    }

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    fn set_pacing_rate(&mut self, c: &ConnView, bw: u64, gain: u32, w: &mut Window) {
        let rate = self.bw_to_pacing_rate(bw, gain);
        if !self.core().has_seen_rtt && c.srtt != 0 {
            self.init_pacing_rate_from_rtt(c, w);
        }
        if self.core().full_bw_reached || rate > w.pacing_rate {
            w.pacing_rate = rate;
        }
    }

    /// `bbr_bdp`: ceil(bw · min_rtt · gain), packets ([`bdp`]), kept in the
    /// kernel's u32; [`BbrVersion::no_rtt_bdp`] before any RTT sample.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        match self.core().min_rtt_us {
            u32::MAX => self.no_rtt_bdp(),
            min_rtt_us => bdp(bw, min_rtt_us, gain) as u32,
        }
    }

    /// `bbr_inflight`: the BDP at `gain` with the quantization budget, packets.
    fn inflight(&self, c: &ConnView, w: &Window, bw: u64, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(c, w, bdp)
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when
    /// the next skb leaves at its earliest departure time (EDT,
    /// `tp->tcp_wstamp_ns`): in flight now (plus, when raising inflight, the
    /// TSO burst about to leave), less what the path delivers at `bbr_bw`
    /// until then. The product is taken in 128 bits (v1's bw is a u64 here;
    /// the kernel's u32 · u64 wraps only past 2^32 µs of EDT wait) and cut to
    /// the kernel's u32.
    fn packets_in_net_at_edt(&self, c: &ConnView, w: &Window, inflight_now: u32) -> u32 {
        let edt = c.wstamp.max(c.now);
        let interval_us = (edt - c.now) / NS_PER_US;
        let interval_delivered = ((self.model_bw() as u128 * interval_us as u128) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.core().pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(c, w); // include the EDT skb
        }
        if interval_delivered >= inflight_at_edt {
            return 0;
        }
        inflight_at_edt - interval_delivered
    }

    /// The rest of `bbr_update_min_rtt`: in PROBE_RTT, hold the flight at
    /// `hold_inflight` (v1 4 packets, v3 `bbr_probe_rtt_cwnd()`) for max(200
    /// ms, one round) ([`ProbeRttHold`]), then check whether it is over;
    /// an ACK of new data ends a restart from idle.
    fn hold_probe_rtt(&mut self, c: &ConnView, rs: &RateSample, w: &mut Window, hold_inflight: u32) {
        let core = self.core_mut();
        if core.mode == Mode::ProbeRtt {
            let now_j = jiffies32(c.now);
            match core.probe_rtt.on_ack(&mut core.sock, c, now_j, hold_inflight, core.round_start) {
                ProbeRttStep::Started => core.next_rtt_delivered = c.delivered,
                ProbeRttStep::RoundDone => self.check_probe_rtt_done(c, w),
                ProbeRttStep::Holding => {}
            }
        }
        if rs.delivered > 0 {
            self.core_mut().idle_restart = false;
        }
    }

    /// `bbr_cwnd_event`'s `CA_EVENT_TX_START`: restarting from idle while
    /// app-limited, a new aggregation epoch; no need to go faster than the
    /// estimate in PROBE_BW, and PROBE_RTT may be over.
    fn restart_from_idle(&mut self, c: &ConnView, w: &mut Window) {
        let core = self.core_mut();
        if !core.sock.app_limited(c) {
            return;
        }
        core.idle_restart = true;
        core.ack.restart_epoch(to_us(c.now));
        let mode = core.mode;
        match mode {
            Mode::ProbeBw => {
                let bw = self.model_bw();
                self.set_pacing_rate(c, bw, BBR_UNIT, w);
            }
            Mode::ProbeRtt => self.check_probe_rtt_done(c, w),
            Mode::Startup | Mode::Drain => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_burst_beyond_the_estimate_is_the_excess_and_a_slow_ack_starts_a_new_epoch() {
        // bw 0.01 pkt/µs; the epoch starts at 0 µs
        let bw = BW_UNIT / 100;
        let mut a = AckAggregation::default();
        a.reset(0);
        // 1 000 µs later 30 packets are acked at once: 10 expected -> but the
        // first ACK of an epoch (0 acked <= 10 expected) restarts it there
        a.update(false, EXTRA_ACKED_WIN_RTTS, bw, 1_000, 30, 1000);
        assert_eq!(a.extra_acked(), 30, "a new epoch at 1 000 µs: all 30 are excess");
        // 500 µs later 20 more: expected 4 (BW_UNIT / 100 = 167 772 truncates
        // 0.01 pkt/µs, and 500 µs of it is 4.99 packets, rounded down), acked 50
        a.update(false, EXTRA_ACKED_WIN_RTTS, bw, 1_500, 20, 1000);
        assert_eq!(a.extra_acked(), 46);
        // capped by cwnd
        a.update(false, EXTRA_ACKED_WIN_RTTS, bw, 1_500, 20, 40);
        assert_eq!(a.extra_acked(), 46, "the max filter keeps 46; the new sample was capped at 40");
        // 10 000 µs later: 100 expected > 70 acked -> a new epoch, excess = this ACK's 3
        a.update(false, EXTRA_ACKED_WIN_RTTS, bw, 11_500, 3, 1000);
        assert_eq!(a.epoch_acked, 3);
        assert_eq!(a.epoch_mstamp, 11_500);
    }

    #[test]
    fn the_max_filter_forgets_a_bucket_after_its_rounds_and_the_allowance_is_capped_at_100_ms_of_bw() {
        let bw = BW_UNIT / 100; // 100 ms of it = 999 packets (fixed point rounds down)
        let mut a = AckAggregation::default();
        a.reset(0);
        a.update(false, 2, bw, 1_000, 300, 10_000);
        assert_eq!(a.cwnd(bw), 300);
        assert_eq!(a.cwnd(BW_UNIT / 1000), 99, "at 0.001 pkt/µs 100 ms is 99.99 packets, rounded down");
        // each later round: one packet 1 s on, slower than the estimate: a new epoch, excess 1
        a.update(true, 2, bw, 1_001_000, 1, 10_000); // round 1: same bucket
        assert_eq!(a.extra_acked(), 300);
        a.update(true, 2, bw, 2_001_000, 1, 10_000); // round 2: the other bucket, cleared
        assert_eq!(a.extra_acked(), 300, "the older bucket still holds it");
        a.update(true, 2, bw, 3_001_000, 1, 10_000);
        a.update(true, 2, bw, 4_001_000, 1, 10_000); // round 4: back to the first bucket, cleared
        assert_eq!(a.extra_acked(), 1, "300 is forgotten after 2 x 2 rounds");
    }

    #[test]
    fn an_excess_is_stored_in_sixteen_bits_as_the_kernel_stores_it() {
        let mut a = AckAggregation::default();
        a.reset(0);
        a.update(false, EXTRA_ACKED_WIN_RTTS, 0, 1, 65_536 + 7, u32::MAX);
        assert_eq!(a.extra_acked(), 7);
    }

    #[test]
    fn the_probe_rtt_hold_starts_when_the_flight_is_down_and_is_over_after_200_ms_and_a_round() {
        let mut h = ProbeRttHold::default();
        let mut m = SocketMirror::default();
        let c = |inflight: u32| ConnView { delivered: 100, packets_in_flight: inflight, ..ConnView::at(0) };
        // 5 in flight, hold at 4: still draining, but the samples ahead are app-limited
        assert_eq!(h.on_ack(&mut m, &c(5), 1000, 4, true), ProbeRttStep::Holding);
        assert!(m.in_probe_rtt_bubble(105) && !m.in_probe_rtt_bubble(106));
        assert_eq!(h.done_stamp(), 0);
        // 4 in flight: the hold starts, 200 ms = 50 jiffies at HZ 250
        assert_eq!(h.on_ack(&mut m, &c(4), 1000, 4, true), ProbeRttStep::Started);
        assert_eq!(h.done_stamp(), 1050);
        assert!(!h.round_done());
        assert_eq!(h.on_ack(&mut m, &c(4), 1010, 4, false), ProbeRttStep::Holding, "no round yet");
        assert_eq!(h.on_ack(&mut m, &c(9), 1020, 4, true), ProbeRttStep::RoundDone, "a round: check the time");
        assert!(!h.is_over(1050), "after(), not at");
        assert!(h.is_over(1051));
        assert_eq!(h.on_ack(&mut m, &c(9), 1030, 4, false), ProbeRttStep::RoundDone, "the round stays done");
        h.reset();
        assert!(!h.is_over(2000));
        assert!(h.round_done(), "entering PROBE_RTT clears only the stamp, as the kernel");
        h.clear();
        assert_eq!(h, ProbeRttHold::default());
    }

    #[test]
    fn the_saved_cwnd_is_the_last_good_one() {
        assert_eq!(saved_cwnd(50, 20, CaState::Open, Mode::ProbeBw), 20, "open: the cwnd now");
        assert_eq!(saved_cwnd(50, 20, CaState::Recovery, Mode::ProbeBw), 50, "recovery cut it: keep the larger");
        assert_eq!(saved_cwnd(50, 20, CaState::Open, Mode::ProbeRtt), 50, "PROBE_RTT cut it");
        assert_eq!(saved_cwnd(10, 20, CaState::Loss, Mode::Startup), 20);
    }

    #[test]
    fn probe_rtt_is_entered_once_its_window_expired_but_not_while_restarting_from_idle() {
        let mut core = BbrCore { mode: Mode::ProbeBw, prior_cwnd: 7, ..BbrCore::default() };
        assert!(!core.enter_probe_rtt(false, 100), "the window has not expired");
        core.idle_restart = true;
        assert!(!core.enter_probe_rtt(true, 100), "restarting from idle: the flight is low anyway");
        assert_eq!((core.mode, core.prior_cwnd), (Mode::ProbeBw, 7));
        core.idle_restart = false;
        assert!(core.enter_probe_rtt(true, 100));
        assert_eq!((core.mode, core.prior_cwnd), (Mode::ProbeRtt, 100), "the cwnd to restore is saved");
        assert_eq!(core.probe_rtt, ProbeRttHold::default());
        // Already in PROBE_RTT (its cwnd cut to 4): not entered again, the saved cwnd kept.
        assert!(!core.enter_probe_rtt(true, 4));
        assert_eq!(core.prior_cwnd, 100);
    }

    #[test]
    fn drain_keeps_the_startup_cwnd_gain_and_probe_rtt_is_one_and_one() {
        let (st, pbw) = ((710, 512), (320, 576));
        assert_eq!(mode_gains(Mode::Startup, st, 88, pbw), (710, 512));
        assert_eq!(mode_gains(Mode::Drain, st, 88, pbw), (88, 512));
        assert_eq!(mode_gains(Mode::ProbeBw, st, 88, pbw), (320, 576));
        assert_eq!(mode_gains(Mode::ProbeRtt, st, 88, pbw), (BBR_UNIT, BBR_UNIT));
    }

    #[test]
    fn the_probe_rtt_bubble_spans_what_was_in_flight_when_it_was_marked() {
        let mut m = SocketMirror::default();
        let c = ConnView { delivered: 100, packets_in_flight: 20, ..ConnView::at(0) };
        m.mark_probe_rtt_app_limited(&c);
        assert!(m.in_probe_rtt_bubble(100) && m.in_probe_rtt_bubble(120));
        assert!(!m.in_probe_rtt_bubble(99) && !m.in_probe_rtt_bubble(121));
        assert!(m.app_limited(&ConnView { delivered: 120, ..ConnView::at(0) }));
        assert!(!m.app_limited(&ConnView { delivered: 121, ..ConnView::at(0) }));
        // a later mark while inside keeps the start
        m.mark_probe_rtt_app_limited(&ConnView { delivered: 110, packets_in_flight: 20, ..ConnView::at(0) });
        assert!(m.in_probe_rtt_bubble(100) && m.in_probe_rtt_bubble(130));
        m.clear_probe_rtt_app_limited();
        assert!(!m.in_probe_rtt_bubble(110));
    }

    #[test]
    fn ten_thousand_packets_a_second_at_gain_one_is_14_3_mb_per_second_less_the_margin() {
        // 10 000 pkt/s = 0.01 pkt/µs = 167 772 units; 1448 B: 14.48 MB/s, 1 % less, fixed-point rounding
        let bw = BW_UNIT / 100;
        assert_eq!(rate_bytes_per_sec(1448, bw, BBR_UNIT, 1), 14_335_186);
        assert_eq!(rate_bytes_per_sec(1448, bw, BBR_UNIT, 0), 14_479_986);
        assert_eq!(rate_bytes_per_sec(1448, u64::MAX, u32::MAX, 1), u64::MAX, "saturates, never wraps");
    }

    #[test]
    fn the_bdp_is_rounded_up() {
        // 0.01 pkt/µs for 10 ms = 100 packets; times 2 = 200; one unit more bw rounds up to 101
        assert_eq!(bdp(BW_UNIT / 100, 10_000, BBR_UNIT), 100);
        assert_eq!(bdp(BW_UNIT / 100, 10_000, 2 * BBR_UNIT), 200);
        assert_eq!(bdp(BW_UNIT / 100 + 1, 10_000, BBR_UNIT), 101);
    }

    #[test]
    fn the_initial_rate_is_cwnd_per_srtt_or_per_ms_before_a_sample() {
        assert_eq!(init_bw(10, 10_000_000), 10 * BW_UNIT / 10_000);
        assert_eq!(init_bw(10, 0), 10 * BW_UNIT / 1000);
        assert_eq!(init_bw(10, 1), 10 * BW_UNIT, "under 1 µs counts as 1 µs");
    }
}
