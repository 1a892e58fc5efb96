//! CUBIC congestion control with HyStart slow-start exit.
//!
//! Source: Linux `net/ipv4/tcp_cubic.c`, "CUBIC v2.3", mainline as of v6.18,
//! i.e. including "tcp_cubic: fix incorrect HyStart round start detection"
//! (M. Arghavani, January 2025, also backported to stable), after which
//! `hystart_update` tracks rounds before it tests `hystart_low_window`.
//! With `tcp_slow_start` / `tcp_cong_avoid_ai` from
//! `net/ipv4/tcp_cong.c` (reused from [`super::reno`]). Specification: RFC 9438
//! (CUBIC for Fast and Long-Distance Networks, 2023). HyStart: Ha & Rhee,
//! "Taming the Elephants: New TCP Slow Start", Computer Networks 2011.
//! Where Linux and the RFC differ, this file follows Linux (see "Linux vs.
//! RFC 9438" below); the integer arithmetic is the kernel's, including its
//! u32 wrap-arounds, so that cwnd traces match the kernel ACK for ACK.
//!
//! # Model in a nutshell
//!
//! After a congestion event at window `W_max`, cwnd follows a cubic curve of
//! the time `t` since the start of the epoch (the first ACK after the event):
//!
//! ```text
//!   W(t) = C (t - K)^3 + W_max,      K = cbrt(W_max (1 - beta) / C)
//! ```
//!
//! so cwnd grows fast right after the reduction, flattens near `W_max`
//! (concave region, t < K), then probes beyond it ever faster (convex region,
//! t > K). Linux does not use a fractional window: every time the cubic
//! function is evaluated it sets `cnt` = the number of packets to be acked
//! per +1 packet of cwnd, `cnt = cwnd / (W(t + delay_min) - cwnd)`, and the
//! Reno additive-increase machinery (`tcp_cong_avoid_ai`) applies it. Linux
//! keeps `K` and `t` in units of 1/1024 s (`BICTCP_HZ`) and evaluates
//! `W(t) - W_max = cube_rtt_scale * |t-K|^3 >> 40` with `cube_rtt_scale =
//! bic_scale * 10 = 410`, i.e. C = 410/1024 = 0.4004 packets/s^3, and
//! `K = cbrt(cube_factor * (W_max - cwnd))`, `cube_factor = 2^40 / 410`.
//!
//! A Reno estimate `tcp_cwnd` (RFC 9438 `W_est`) grows by one packet per
//! `cwnd * beta_scale / 8` packets acked (alpha = 3(1-beta)/(1+beta) = 0.53
//! packets per RTT); if it exceeds cwnd, cnt is lowered so that CUBIC is at
//! least as fast as Reno (the "Reno-friendly region").
//!
//! On loss: `ssthresh = max(cwnd * 717/1024, 2)`; `W_max = cwnd`, or, when the
//! window did not reach the previous `W_max` (fast convergence),
//! `W_max = cwnd (1 + beta) / 2`, releasing bandwidth to newer flows.
//!
//! # States
//!
//! ```text
//!            HyStart (ACK train or delay)     loss: ssthresh = 0.7 cwnd,
//!   SLOW_START ---------------------------> epoch ends      |
//!      |  ssthresh = cwnd                       v           v
//!      |  (loss also ends it)           +-> CONCAVE (t < K) -> CONVEX (t >= K)
//!      |                                |        \            /
//!      |                                |    RENO_FRIENDLY (tcp_cwnd > cwnd
//!      |                                |     lowers cnt below the cubic one)
//!      +--------------------------------+
//!   RTO (CA_Loss): everything reset, back to SLOW_START with HyStart armed.
//! ```
//!
//! - SLOW_START: `cwnd < ssthresh`; +1 packet per packet acked. HyStart runs
//!   in `pkts_acked` while cwnd >= 16 and exits slow start (ssthresh = cwnd)
//!   when, within one round (ACKs up to the `snd_nxt` of the round's start),
//!   ACKs keep arriving back to back for longer than delay_min/2 (ACK train),
//!   or when the minimum RTT of the round's first 8+ samples exceeds
//!   `delay_min + clamp(delay_min/8, 4 ms, 16 ms)` (delay increase).
//! - CONCAVE / CONVEX: the cubic curve (below / above `W_max`).
//! - RENO_FRIENDLY: the Reno estimate outruns the curve and sets cnt.
//!   The label ([`CongestionControl::state_label`]) is the region of the last
//!   cnt computation.
//!
//! # Constants (Linux defaults; module parameters are in [`Params`])
//!
//! - `beta` = 717/1024 = 0.7002: multiplicative decrease (RFC 9438 §4.6:
//!   0.7); unit 1/1024.
//! - `BICTCP_BETA_SCALE` = 1024: fixed-point scale of beta.
//! - `bic_scale` = 41 (/1024): C = 41/1024 * 10 = 0.4004 packets/s^3 once the
//!   historical "RTT = 100 ms" factor of 10 is folded in (RFC 9438 §5.1: 0.4).
//! - `BICTCP_HZ` = 10: times in the cubic function are in 2^-10 s units.
//! - `cube_rtt_scale` = bic_scale * 10 = 410: C scaled by 1024.
//! - `cube_factor` = 2^(10 + 3*10) / 410 = 2 681 735 677: 1/C in the units
//!   of K^3, so K = cbrt(cube_factor * (W_max - cwnd)) in 2^-10 s.
//! - `beta_scale` = 8 (1024 + 717) / 3 / (1024 - 717) = 15 (integer
//!   division): tcp_cwnd grows by 1 per cwnd*15/8 packets acked, i.e. 8/15 =
//!   0.533 packets per RTT, Linux's rendering of RFC 9438 alpha = 0.529.
//! - [`HZ`] = 250 (`crate::kernel`): this machine's CONFIG_HZ; the cubic epoch runs in jiffies
//!   (4 ms), so `t` has 4 ms granularity and cnt is recomputed at most once
//!   per jiffy.
//! - `HZ / 32` = 7 jiffies (28 ms): with an unchanged cwnd, cnt is reused for
//!   up to 28 ms.
//! - cnt >= 2: cwnd grows at most 1 packet per 2 acked (1.5x per RTT,
//!   RFC 9438 §4.2 limit).
//! - cnt <= 20 while `last_max_cwnd == 0` (no loss yet, e.g. after HyStart):
//!   at least 5% growth per RTT while the bandwidth is unknown.
//! - cnt = 100 * cwnd when the curve is at or below cwnd: "very small increment".
//! - `hystart` = 1, `hystart_detect` = ACK train | delay = 3.
//! - `hystart_low_window` = 16 packets: no HyStart exit below 16 packets.
//! - `hystart_ack_delta_us` = 2000 µs: ACKs closer than this form a train.
//! - `HYSTART_MIN_SAMPLES` = 8: RTT samples per round before the delay test.
//! - `HYSTART_DELAY_MIN` / `MAX` = 4000 / 16000 µs: bounds of the delay
//!   threshold delay_min/8.
//! - ACK-train cushion ([`hystart_ack_delay`]): min(1 ms, 4 * gso_max_size /
//!   pacing_rate) for TSO/GRO aggregation; 0 if the pacing rate is unknown.
//! - [`GSO_MAX_SIZE`] = 65 536 B: `sk_gso_max_size` of an IPv4 socket on a
//!   device without BIG TCP (`GSO_LEGACY_MAX_SIZE`).
//! - 1 s (HZ jiffies): RTT samples in the first second of an epoch are
//!   ignored for delay_min ("right after fast recovery").
//! - `initial_ssthresh` = 0 (none) and `tcp_friendliness` / `fast_convergence` = 1.
//!
//! # Time
//!
//! Linux runs the cubic epoch on `tcp_jiffies32` and HyStart on
//! `bictcp_clock_us()` (the low 32 bits of `tcp_mstamp`, µs). Here
//! `jiffies = INITIAL_JIFFIES + now / 4 ms` ([`jiffies32`], the one jiffies
//! clock of `crate::kernel`; Linux boots with jiffies 5 minutes before the
//! u32 wrap, so wrap-around is exercised as in the kernel) and `clock_us = now / 1000` truncated to u32 ([`clock_us`]).
//! RTT samples arrive in ns and are truncated to µs; Linux subtracts two
//! truncated µs stamps, so a sample may differ from the kernel's by 1 µs.
//!
//! # Linux vs. RFC 9438 (this file follows Linux)
//!
//! - The curve is evaluated at `t + delay_min` (RFC: `t + RTT`), and the
//!   Reno estimate uses alpha = 8/15 at all times (RFC: alpha_cubic until
//!   W_max, then 1).
//! - ssthresh is `cwnd * beta`, not `flight_size * beta`.
//! - Slow start exit is HyStart (2011), not HyStart++ (RFC 9406).
//! - After an idle period the epoch is shifted by the idle time (RFC 9438
//!   §5.8 allows either this or a new epoch).

use super::{reno, AckSample, CaState, CongestionControl, ConnView, CwndEvent, Window};
use crate::kernel::{after as seq_after, jiffies32, usecs_to_jiffies, HZ};
use crate::time::{Nanos, NS_PER_US};
/// `sk_gso_max_size` (bytes) for [`hystart_ack_delay`]: `GSO_LEGACY_MAX_SIZE`.
pub const GSO_MAX_SIZE: u32 = 65_536;

/// Linux `BICTCP_BETA_SCALE`: fixed-point scale of `beta`.
const BETA_SCALE: u32 = 1024;
/// Linux `BICTCP_HZ`: the cubic function's time unit is 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// Linux `HYSTART_ACK_TRAIN`: detection bit for the ACK-train method.
pub const HYSTART_ACK_TRAIN: u32 = 0x1;
/// Linux `HYSTART_DELAY`: detection bit for the delay-increase method.
pub const HYSTART_DELAY: u32 = 0x2;
/// Linux `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// Linux `HYSTART_DELAY_MIN`, µs: lower bound of the delay-increase threshold.
const HYSTART_DELAY_MIN: u32 = 4_000;
/// Linux `HYSTART_DELAY_MAX`, µs: upper bound of the delay-increase threshold.
const HYSTART_DELAY_MAX: u32 = 16_000;
/// Linux `USEC_PER_MSEC`: cap of the ACK-train cushion, µs.
const USEC_PER_MSEC: u64 = 1_000;

/// `bictcp_clock_us()`: the low 32 bits of the µs clock at `now` (ns).
pub fn clock_us(now: Nanos) -> u32 {
    (now / NS_PER_US) as u32
}


/// Cube-root estimates, `v[x] = cbrt(x << 18) - 1` for x in 0..64, hand-tuned
/// by Willy Tarreau for Linux's `cubic_root` (the table is data, not code:
/// the same values are needed to reproduce the kernel's K).
const CBRT_TABLE: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, //
    123, 129, 134, 138, 143, 147, 151, 156, //
    157, 161, 164, 168, 170, 173, 176, 179, //
    181, 185, 187, 190, 192, 194, 197, 199, //
    200, 202, 204, 206, 209, 211, 213, 215, //
    217, 219, 221, 222, 224, 225, 227, 229, //
    231, 232, 234, 236, 237, 239, 240, 242, //
    244, 245, 246, 248, 250, 251, 252, 254, //
];

/// Integer cube root as Linux `cubic_root` computes it: a first guess from
/// the top 6 significant bits of `a` (table lookup), then one Newton step
/// `x' = (2x + a / (x (x-1))) / 3` with /3 done as `* 341 >> 10`.
/// Error against the exact cube root (measured, see the tests): below 1 for
/// every a < 2^20 (the result is the floor or the ceiling), and at most
/// 0.152% for every argument CUBIC uses, a = cube_factor * d with
/// d = W_max - cwnd in 1..=200 000 (worst at d = 196 801). The kernel's
/// comment gives the average error as 0.195%.
pub fn cubic_root(a: u64) -> u32 {
    let bits = 64 - a.leading_zeros(); // fls64
    if bits < 7 {
        // a < 64: the table holds the answer directly.
        return (CBRT_TABLE[a as usize] as u32 + 35) >> 6;
    }
    // b ~= bits / 3 - 1: a >> 3b keeps the 4..6 leading bits of a.
    let b = ((bits * 84) >> 8) - 1;
    let top = (a >> (b * 3)) as usize;
    let guess = ((CBRT_TABLE[top] as u32 + 10) << b) >> 6;
    // One Newton-Raphson step; x (x-1) rather than x^2 compensates the
    // truncations (kernel choice), guess >= 4 so the divisor is never 0.
    let div = a / (guess as u64 * (guess as u64 - 1));
    let x = (2 * guess).wrapping_add(div as u32);
    x.wrapping_mul(341) >> 10
}

/// Linux `hystart_ack_delay`: the ACK-train cushion for TSO/GRO aggregation,
/// µs: min(1 ms, 4 * GSO_MAX_SIZE / pacing rate); 0 if the rate is unknown.
pub fn hystart_ack_delay(pacing_rate: u64) -> u32 {
    if pacing_rate == 0 {
        return 0;
    }
    USEC_PER_MSEC.min(GSO_MAX_SIZE as u64 * 4 * 1_000_000 / pacing_rate) as u32
}

/// CUBIC's tunables: Linux's module parameters (`/sys/module/tcp_cubic/parameters`),
/// plus the two socket facts HyStart reads that [`ConnView`] does not carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Lower `W_max` when a loss comes before the previous `W_max` was reached.
    pub fast_convergence: bool,
    /// Multiplicative decrease, /1024 (717 = 0.7).
    pub beta: u32,
    /// Initial ssthresh in packets, used only without HyStart; 0 = none.
    pub initial_ssthresh: u32,
    /// C scaled by 1024 and divided by 10 (41 => C = 0.4).
    pub bic_scale: u32,
    /// Keep the Reno estimate and grow at least as fast as it.
    pub tcp_friendliness: bool,
    /// Use HyStart to leave slow start.
    pub hystart: bool,
    /// HyStart methods: [`HYSTART_ACK_TRAIN`] | [`HYSTART_DELAY`].
    pub hystart_detect: u32,
    /// No HyStart exit below this cwnd, packets.
    pub hystart_low_window: u32,
    /// Maximum ACK spacing inside an ACK train, µs.
    pub hystart_ack_delta_us: u32,
    /// Treat the socket as paced even if [`ConnView::paced`] says not (tests);
    /// a paced socket's ACK train must last delay_min rather than delay_min/2.
    pub paced: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            fast_convergence: true,
            beta: 717,
            initial_ssthresh: 0,
            bic_scale: 41,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            paced: false,
        }
    }
}

impl Params {
    /// Check the values the kernel's arithmetic cannot take; the error names the parameter.
    pub fn validate(&self) -> Result<(), String> {
        if self.beta == 0 || self.beta >= BETA_SCALE {
            return Err(format!("beta: expected 1..=1023 (units of 1/1024), got {}", self.beta));
        }
        if self.bic_scale == 0 || self.bic_scale > 100_000 {
            return Err(format!("bic_scale: expected 1..=100000 (units of 1/1024), got {}", self.bic_scale));
        }
        if self.hystart_detect > (HYSTART_ACK_TRAIN | HYSTART_DELAY) {
            return Err(format!("hystart_detect: expected 0..=3 (1 ACK train, 2 delay), got {}", self.hystart_detect));
        }
        Ok(())
    }
}

/// CUBIC state: Linux `struct bictcp` plus the scale factors Linux computes
/// at module load.
#[derive(Debug, Clone)]
pub struct Cubic {
    p: Params,
    /// 8 (1024 + beta) / 3 / (1024 - beta): tcp_cwnd +1 per cwnd*beta_scale/8 acked.
    beta_scale: u32,
    /// bic_scale * 10: C * 1024.
    cube_rtt_scale: u32,
    /// 2^40 / (bic_scale * 10): 1/C in units of (2^-10 s)^3.
    cube_factor: u64,

    /// Packets to ack per +1 packet of cwnd.
    cnt: u32,
    /// W_max: cwnd before the last reduction (lowered by fast convergence), packets.
    last_max_cwnd: u32,
    /// cwnd at the last cnt computation.
    last_cwnd: u32,
    /// Jiffies of the last cnt computation.
    last_time: u32,
    /// W_max of the current epoch's curve (or cwnd if above the old W_max), packets.
    bic_origin_point: u32,
    /// K, 2^-10 s from the epoch start to the origin point.
    bic_k: u32,
    /// Minimum RTT seen, µs; 0 = none.
    delay_min: u32,
    /// Jiffies at the start of the epoch; 0 = no epoch.
    epoch_start: u32,
    /// Packets acked not yet credited to tcp_cwnd.
    ack_cnt: u32,
    /// Reno estimate (RFC 9438 W_est), packets.
    tcp_cwnd: u32,

    /// RTT samples taken in the current HyStart round.
    sample_cnt: u8,
    /// HyStart has fired (until the next CA_Loss).
    found: bool,
    /// µs clock at the start of the HyStart round.
    round_start: u32,
    /// snd_nxt (mod 2^32) at the round start: the round ends when snd_una passes it.
    end_seq: u32,
    /// µs clock of the last ACK of the current ACK train.
    last_ack: u32,
    /// Minimum RTT of the current round, µs.
    curr_rtt: u32,

    /// Region of the last cwnd decision, for time series.
    label: &'static str,
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic::from_valid(Params::default())
    }
}

impl Cubic {
    /// CUBIC with the given parameters, or an error naming the bad one.
    pub fn new(p: Params) -> Result<Cubic, String> {
        p.validate()?;
        Ok(Cubic::from_valid(p))
    }

    fn from_valid(p: Params) -> Cubic {
        // cubictcp_register: precomputed once, as at module load.
        let beta_scale = 8 * (BETA_SCALE + p.beta) / 3 / (BETA_SCALE - p.beta);
        let cube_rtt_scale = p.bic_scale * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / (p.bic_scale as u64 * 10);
        Cubic {
            p,
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: 0,
            label: "SLOW_START",
        }
    }

    /// The parameters in use.
    pub fn params(&self) -> &Params {
        &self.p
    }
    /// Packets to ack per +1 packet of cwnd, as last computed.
    pub fn cnt(&self) -> u32 {
        self.cnt
    }
    /// W_max, packets.
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }
    /// K of the current epoch, in 2^-10 s.
    pub fn k(&self) -> u32 {
        self.bic_k
    }
    /// Minimum RTT, µs (0 = none yet).
    pub fn delay_min_us(&self) -> u32 {
        self.delay_min
    }
    /// Whether HyStart has ended slow start.
    pub fn hystart_found(&self) -> bool {
        self.found
    }

    /// `bictcp_reset`: forget the curve, delay_min and HyStart's verdict.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// `bictcp_hystart_reset`: start a HyStart round at `now`, ending when
    /// everything sent so far (`snd_nxt`) is acked.
    fn hystart_reset(&mut self, c: &ConnView) {
        let now = clock_us(c.now);
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = c.snd_nxt as u32;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `bictcp_update`: recompute `cnt` for window `cwnd` after `acked`
    /// packets at jiffies `now`.
    fn update(&mut self, now: u32, cwnd: u32, acked: u32) {
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        // Same cwnd and less than HZ/32 since the last computation: keep cnt.
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }

        // At most one cubic evaluation per jiffy (a reduction clears epoch_start).
        if !(self.epoch_start != 0 && now == self.last_time) {
            self.cubic_cnt(now, cwnd, acked);
        }

        if self.p.tcp_friendliness {
            self.reno_friendly(cwnd);
        }

        // At most +1 packet per 2 acked: 1.5x per RTT.
        self.cnt = self.cnt.max(2);
    }

    /// The cubic part of `bictcp_update`: cnt from W(t + delay_min).
    fn cubic_cnt(&mut self, now: u32, cwnd: u32, acked: u32) {
        self.last_cwnd = cwnd;
        self.last_time = now;

        if self.epoch_start == 0 {
            self.epoch_start = now;
            self.ack_cnt = acked;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                // Above the old W_max (or none): start probing at cwnd.
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                // K = cbrt((W_max - cwnd) / C), in 2^-10 s.
                self.bic_k = cubic_root(self.cube_factor.wrapping_mul((self.last_max_cwnd - cwnd) as u64));
                self.bic_origin_point = self.last_max_cwnd;
            }
        }

        // t = time since epoch start + delay_min, converted jiffies -> 2^-10 s.
        // (s32 elapsed sign-extended to u64 as in the kernel.)
        let elapsed = now.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
        let t = elapsed.wrapping_add(usecs_to_jiffies(self.delay_min as u64) as u64).wrapping_shl(BICTCP_HZ) / HZ as u64;
        let k = self.bic_k as u64;
        let below = t < k;
        let offs = if below { k - t } else { t - k };

        // |W(t) - W_max| = C |t - K|^3, with C = cube_rtt_scale / 2^10, t in 2^-10 s.
        let delta = ((self.cube_rtt_scale as u64).wrapping_mul(offs).wrapping_mul(offs).wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ)) as u32;
        let target =
            if below { self.bic_origin_point.wrapping_sub(delta) } else { self.bic_origin_point.wrapping_add(delta) };

        self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { cwnd.wrapping_mul(100) };
        self.label = if below { "CONCAVE" } else { "CONVEX" };

        // Bandwidth still unknown (no loss yet): at least 5% growth per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
    }

    /// The TCP-friendliness part of `bictcp_update`: advance the Reno
    /// estimate and let it set cnt if it is ahead of cwnd.
    fn reno_friendly(&mut self, cwnd: u32) {
        let per_packet = cwnd.wrapping_mul(self.beta_scale) >> 3;
        // Kernel: `while (ack_cnt > per_packet) { ack_cnt -= per_packet; tcp_cwnd++; }`;
        // the same count by division (per_packet is 0 only for cwnd >= 2^28,
        // where the kernel would spin forever).
        if per_packet > 0 && self.ack_cnt > per_packet {
            let n = (self.ack_cnt - 1) / per_packet;
            self.ack_cnt -= n * per_packet;
            self.tcp_cwnd = self.tcp_cwnd.wrapping_add(n);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
                self.label = "RENO_FRIENDLY";
            }
        }
    }

    /// `hystart_update`: one RTT sample `delay` (µs) in slow start.
    fn hystart_update(&mut self, c: &ConnView, delay: u32, w: &mut Window) {
        if seq_after(c.snd_una as u32, self.end_seq) {
            self.hystart_reset(c);
        }

        if w.cwnd < self.p.hystart_low_window {
            return;
        }

        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = clock_us(c.now);
            // ACKs still arriving back to back: the train goes on.
            if (now.wrapping_sub(self.last_ack) as i32) <= self.p.hystart_ack_delta_us as i32 {
                self.last_ack = now;
                let mut threshold = self.delay_min.wrapping_add(hystart_ack_delay(w.pacing_rate));
                // Unpaced: the train of a full pipe lasts delay_min/2 at least.
                if !(self.p.paced || c.paced) {
                    threshold >>= 1;
                }
                if (now.wrapping_sub(self.round_start) as i32) > threshold as i32 {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }

        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            self.curr_rtt = self.curr_rtt.min(delay);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh = (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
                if self.curr_rtt > self.delay_min.wrapping_add(thresh) {
                    self.found = true;
                    w.ssthresh = w.cwnd;
                }
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `cubictcp_init`.
    fn init(&mut self, c: &ConnView, w: &mut Window) {
        self.reset();
        self.label = "SLOW_START";
        if self.p.hystart {
            self.hystart_reset(c);
        } else if self.p.initial_ssthresh != 0 {
            w.ssthresh = self.p.initial_ssthresh;
        }
    }

    /// `cubictcp_recalc_ssthresh`: end the epoch, set W_max, return cwnd * beta.
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 {
        self.epoch_start = 0;
        if w.cwnd < self.last_max_cwnd && self.p.fast_convergence {
            self.last_max_cwnd = w.cwnd.wrapping_mul(BETA_SCALE + self.p.beta) / (2 * BETA_SCALE);
        } else {
            self.last_max_cwnd = w.cwnd;
        }
        (w.cwnd.wrapping_mul(self.p.beta) / BETA_SCALE).max(2)
    }

    /// `cubictcp_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnView, mut acked: u32, w: &mut Window) {
        if !c.is_cwnd_limited {
            return;
        }
        if w.in_slow_start() {
            self.label = "SLOW_START";
            acked = reno::slow_start(w, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(jiffies32(c.now), w.cwnd, acked);
        reno::cong_avoid_ai(w, self.cnt, acked);
    }

    /// `cubictcp_state`: an RTO (CA_Loss) forgets everything and re-arms HyStart.
    fn set_state(&mut self, c: &ConnView, new_state: CaState, _w: &mut Window) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart_reset(c);
        }
    }

    /// `cubictcp_cwnd_event`: after idle, shift the epoch by the idle time so
    /// that the curve resumes where it stopped.
    fn cwnd_event(&mut self, c: &ConnView, ev: CwndEvent, _w: &mut Window) {
        if ev != CwndEvent::TxStart {
            return;
        }
        let now = jiffies32(c.now);
        let idle = now.wrapping_sub(jiffies32(c.lsndtime)) as i32;
        if self.epoch_start != 0 && idle > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(idle as u32);
            if seq_after(self.epoch_start, now) {
                self.epoch_start = now;
            }
        }
    }

    /// `cubictcp_acked`: delay_min and HyStart on every RTT sample.
    fn pkts_acked(&mut self, c: &ConnView, s: &AckSample, w: &mut Window) {
        if s.rtt < 0 {
            return;
        }
        // Discard samples in the first second of an epoch (right after recovery).
        if self.epoch_start != 0 && (jiffies32(c.now).wrapping_sub(self.epoch_start) as i32) < HZ as i32 {
            return;
        }
        // Linux: s32 rtt_us, then u32 delay.
        let delay = match (s.rtt / NS_PER_US as i64) as i32 as u32 {
            0 => 1,
            d => d,
        };
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && w.in_slow_start() && self.p.hystart {
            self.hystart_update(c, delay, w);
        }
    }

    fn state_label(&self) -> &'static str {
        self.label
    }
}

#[cfg(test)]
mod tests {
    use super::super::INFINITE_SSTHRESH;
    use super::*;
    use crate::kernel::NS_PER_JIFFY;
    use crate::time::{NS_PER_MS, NS_PER_SEC};

    /// A time well away from 0 (jiffies and µs clocks are arbitrary).
    const T0: Nanos = 10 * NS_PER_SEC;

    fn at(t: Nanos) -> ConnView {
        ConnView::at(t)
    }

    fn jiffy(j: u64) -> Nanos {
        T0 + j * NS_PER_JIFFY
    }

    fn rtt_sample(rtt: Nanos) -> AckSample {
        AckSample { pkts_acked: 1, rtt: rtt as i64, in_flight: 10 }
    }

    /// CUBIC right after its first loss at cwnd 100 with delay_min 40 ms:
    /// W_max = 100, cwnd = ssthresh = 70, no epoch yet.
    fn after_loss_at_100() -> (Cubic, Window) {
        let mut cc = Cubic::default();
        let mut w = Window::default();
        cc.init(&at(0), &mut w);
        cc.pkts_acked(&at(0), &rtt_sample(40 * NS_PER_MS), &mut w);
        w.cwnd = 100;
        let ssthresh = cc.ssthresh(&at(T0), &w);
        w.cwnd = ssthresh;
        w.ssthresh = ssthresh;
        (cc, w)
    }

    /// cnt after one ACK at jiffy `j` (from T0) with the window forced to `cwnd`.
    fn cnt_at(cc: &mut Cubic, w: &mut Window, j: u64, cwnd: u32) -> u32 {
        w.cwnd = cwnd;
        w.cwnd_cnt = 0;
        cc.cong_avoid(&at(jiffy(j)), 1, w);
        cc.cnt()
    }

    #[test]
    fn scale_factors_are_the_kernels_module_load_values() {
        let cc = Cubic::default();
        assert_eq!((cc.beta_scale, cc.cube_rtt_scale, cc.cube_factor), (15, 410, 2_681_735_677));
    }

    #[test]
    fn the_hystart_clock_is_the_low_32_bits_of_microseconds() {
        assert_eq!(clock_us(1_234_567_891), 1_234_567);
    }

    #[test]
    fn k_for_w_max_100_after_a_loss_to_70_is_4316_units_of_1_1024_s() {
        // cbrt(2681735677 * 30) = 4316.97; the kernel's root gives 4316 (4.215 s).
        let (mut cc, mut w) = after_loss_at_100();
        assert_eq!(w.cwnd, 70);
        cc.cong_avoid(&at(jiffy(0)), 1, &mut w);
        assert_eq!((cc.k(), cc.bic_origin_point), (4316, 100));
    }

    #[test]
    fn cube_root_of_small_numbers_is_the_floor_or_the_ceiling_of_the_exact_root() {
        // Exhaustive over 0..2^20: |x - cbrt(a)| < 1.
        let mut worst = 0.0f64;
        for a in 0u64..(1 << 20) {
            let err = (cubic_root(a) as f64 - (a as f64).cbrt()).abs();
            worst = worst.max(err);
        }
        assert!(worst < 1.0, "worst absolute error {worst}");
    }

    #[test]
    fn cube_root_of_every_k_argument_is_within_0_16_percent() {
        // All arguments CUBIC passes are cube_factor * (W_max - cwnd); measured
        // worst relative error over W_max - cwnd in 1..=200_000: 0.152%.
        let cf = Cubic::default().cube_factor;
        let mut worst = 0.0f64;
        for d in 1u64..=200_000 {
            let a = cf * d;
            let exact = (a as f64).cbrt();
            worst = worst.max((cubic_root(a) as f64 - exact).abs() / exact);
        }
        assert!(worst < 0.0016, "worst relative error {worst}");
        // Spot values: exact cube roots 4316.97, 2524.58, 1389.33, 6448.70.
        assert_eq!(
            [cubic_root(cf * 30), cubic_root(cf * 6), cubic_root(cf), cubic_root(cf * 100)],
            [4316, 2523, 1388, 6451]
        );
    }

    #[test]
    fn cube_root_handles_the_extremes_of_u64() {
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(1), 1);
        assert_eq!(cubic_root(63), 4);
        let top = cubic_root(u64::MAX); // exact 2642245.95
        assert!((2_638_000..2_646_000).contains(&top), "{top}");
    }

    #[test]
    fn cnt_follows_the_cubic_curve_after_a_loss_at_w_max_100() {
        // t = elapsed + delay_min (10 jiffies) in 2^-10 s; W = 100 -/+ 410 |t - 4316|^3 >> 40.
        let (mut cc, mut w) = after_loss_at_100();
        // Epoch start: t = 40, W = 100 - 29 = 71, cnt = 70 / (71 - 70).
        assert_eq!(cnt_at(&mut cc, &mut w, 0, 70), 70);
        assert_eq!(cc.state_label(), "CONCAVE");
        // 1 s: t = 1064, W = 100 - 12 = 88, cnt = 80 / 8.
        assert_eq!(cnt_at(&mut cc, &mut w, 250, 80), 10);
        // 2 s: t = 2088, W = 96, cnt = 90 / 6.
        assert_eq!(cnt_at(&mut cc, &mut w, 500, 90), 15);
        // 4.176 s: t = 4317 ~ K, W = 100, cnt = 95 / 5.
        assert_eq!(cnt_at(&mut cc, &mut w, 1044, 95), 19);
        assert_eq!(cc.state_label(), "CONVEX");
        // 5 s: t = 5160, W = 100 + 0, cnt = 98 / 2.
        assert_eq!(cnt_at(&mut cc, &mut w, 1250, 98), 49);
        // 6 s: t = 6184, W = 102, cnt = 100 / 2.
        assert_eq!(cnt_at(&mut cc, &mut w, 1500, 100), 50);
        // 10 s: t = 10280, W = 179: cnt = 120 / 59 = 2 (also the floor).
        assert_eq!(cnt_at(&mut cc, &mut w, 2500, 120), 2);
    }

    #[test]
    fn a_curve_at_or_below_cwnd_gives_a_very_small_increment() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        // One jiffy later t = 45, W = 100 - 29 = 71: not above cwnd 71, cnt = 100 * 71.
        assert_eq!(cnt_at(&mut cc, &mut w, 1, 71), 7100);
    }

    #[test]
    fn cnt_never_goes_below_two() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        // 20 s: W(t) is far above cwnd, cwnd / (W - cwnd) = 0.
        assert_eq!(cnt_at(&mut cc, &mut w, 5000, 100), 2);
    }

    #[test]
    fn without_a_previous_loss_growth_is_at_least_five_percent_per_rtt() {
        let mut cc = Cubic::default();
        let mut w = Window { cwnd: 50, ssthresh: 50, ..Window::default() };
        cc.init(&at(0), &mut w);
        cc.pkts_acked(&at(0), &rtt_sample(40 * NS_PER_MS), &mut w);
        // K = 0, origin = 50, t = 40: W = 50, cubic cnt = 5000, capped at 20.
        assert_eq!(cnt_at(&mut cc, &mut w, 0, 50), 20);
    }

    #[test]
    fn cong_avoid_adds_one_packet_per_cnt_packets_acked() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        assert_eq!(cnt_at(&mut cc, &mut w, 250, 80), 10);
        // cnt_at acked 1; 9 more ACKs inside the same jiffy reach cnt = 10.
        for _ in 0..8 {
            cc.cong_avoid(&at(jiffy(250)), 1, &mut w);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (80, 9));
        cc.cong_avoid(&at(jiffy(250)), 1, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (81, 0));
    }

    #[test]
    fn slow_start_leftover_acks_feed_the_cubic_increase() {
        let mut cc = Cubic::default();
        let mut w = Window { cwnd: 18, ssthresh: 20, ..Window::default() };
        cc.init(&at(0), &mut w);
        cc.cong_avoid(&at(T0), 5, &mut w);
        // 2 packets of slow start to 20, 3 left for cong_avoid_ai with cnt 20 (no loss yet).
        assert_eq!((w.cwnd, w.cwnd_cnt, cc.cnt()), (20, 3, 20));
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let (mut cc, mut w) = after_loss_at_100();
        let mut c = at(jiffy(0));
        c.is_cwnd_limited = false;
        cc.cong_avoid(&c, 50, &mut w);
        assert_eq!((w.cwnd, cc.epoch_start), (70, 0));
    }

    #[test]
    fn cnt_is_kept_for_up_to_hz_over_32_jiffies_while_cwnd_is_unchanged() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        cnt_at(&mut cc, &mut w, 250, 80);
        let j = jiffies32(jiffy(250));
        cnt_at(&mut cc, &mut w, 257, 80);
        assert_eq!(cc.last_time, j);
        cnt_at(&mut cc, &mut w, 258, 80);
        assert_eq!(cc.last_time, j + 8);
    }

    #[test]
    fn the_curve_is_evaluated_at_most_once_per_jiffy() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        // Another cwnd in the same jiffy: only the Reno part runs, cnt stays.
        assert_eq!(cnt_at(&mut cc, &mut w, 0, 60), 70);
        assert_eq!(cc.last_cwnd, 70);
    }

    #[test]
    fn the_reno_estimate_takes_over_at_small_cwnd_and_rtt() {
        // W_max 20, cwnd 14, delay_min 1 ms: K = 2523 (2.46 s); 32 ms into the
        // epoch the curve asks for 15 (cnt 14). 61 packets acked advance the
        // Reno estimate by 2 (one per 14*15/8 = 26 acked): 16 > 14, so
        // cnt = 14 / 2 = 7.
        let mut cc = Cubic::default();
        let mut w = Window::default();
        cc.init(&at(0), &mut w);
        cc.pkts_acked(&at(0), &rtt_sample(NS_PER_MS), &mut w);
        w.cwnd = 20;
        w.ssthresh = cc.ssthresh(&at(T0), &w);
        assert_eq!(w.ssthresh, 14);
        w.cwnd = 14;
        assert_eq!(cnt_at(&mut cc, &mut w, 0, 14), 14);
        w.cwnd_cnt = 0;
        cc.cong_avoid(&at(jiffy(8)), 60, &mut w);
        assert_eq!((cc.cnt(), cc.tcp_cwnd, cc.ack_cnt), (7, 16, 9));
        assert_eq!(cc.state_label(), "RENO_FRIENDLY");
        // Same with tcp_friendliness off: the cubic cnt stays.
        let mut cc = Cubic::new(Params { tcp_friendliness: false, ..Params::default() }).unwrap();
        let mut w = Window::default();
        cc.init(&at(0), &mut w);
        cc.pkts_acked(&at(0), &rtt_sample(NS_PER_MS), &mut w);
        w.cwnd = 20;
        w.ssthresh = cc.ssthresh(&at(T0), &w);
        cnt_at(&mut cc, &mut w, 0, 14);
        w.cwnd_cnt = 0;
        cc.cong_avoid(&at(jiffy(8)), 60, &mut w);
        assert_eq!(cc.cnt(), 14);
    }

    #[test]
    fn the_reno_estimate_gains_one_packet_per_cwnd_times_15_over_8_acked_and_keeps_the_rest() {
        // cwnd 14: one packet per 14 * 15 >> 3 = 26 acked. 52 acked is one
        // packet (the kernel's loop stops when ack_cnt is not *above* 26).
        let (mut cc, mut w) = after_loss_at_100();
        w.ssthresh = 14;
        cnt_at(&mut cc, &mut w, 0, 14);
        assert_eq!((cc.tcp_cwnd, cc.ack_cnt), (14, 1));
        w.cwnd_cnt = 0;
        cc.cong_avoid(&at(jiffy(8)), 51, &mut w);
        assert_eq!((cc.tcp_cwnd, cc.ack_cnt), (15, 26));
    }

    #[test]
    fn ssthresh_is_cwnd_times_717_over_1024_rounded_down_with_a_floor_of_two() {
        let mut cc = Cubic::default();
        let got: Vec<u32> = [2, 3, 10, 100, 1000, 1449]
            .iter()
            .map(|&cwnd| cc.ssthresh(&at(T0), &Window { cwnd, ..Window::default() }))
            .collect();
        assert_eq!(got, vec![2, 2, 7, 70, 700, 1014]);
    }

    #[test]
    fn a_loss_ends_the_epoch() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        assert_ne!(cc.epoch_start, 0);
        cc.ssthresh(&at(jiffy(10)), &w);
        assert_eq!(cc.epoch_start, 0);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_a_loss_comes_below_the_previous_one() {
        let (mut cc, _) = after_loss_at_100();
        assert_eq!(cc.last_max_cwnd(), 100);
        // Second loss at 90 < 100: W_max = 90 * 1741 / 2048 = 76, ssthresh = 63.
        let s = cc.ssthresh(&at(T0), &Window { cwnd: 90, ..Window::default() });
        assert_eq!((cc.last_max_cwnd(), s), (76, 63));
        // A loss above W_max sets W_max to cwnd.
        cc.ssthresh(&at(T0), &Window { cwnd: 120, ..Window::default() });
        assert_eq!(cc.last_max_cwnd(), 120);
    }

    #[test]
    fn without_fast_convergence_w_max_is_the_cwnd_at_loss() {
        let mut cc = Cubic::new(Params { fast_convergence: false, ..Params::default() }).unwrap();
        cc.ssthresh(&at(T0), &Window { cwnd: 100, ..Window::default() });
        cc.ssthresh(&at(T0), &Window { cwnd: 90, ..Window::default() });
        assert_eq!(cc.last_max_cwnd(), 90);
    }

    #[test]
    fn an_rto_resets_cubic_and_rearms_hystart() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        cc.found = true;
        let mut c = at(jiffy(100));
        c.snd_nxt = 77_000;
        cc.set_state(&c, CaState::Recovery, &mut w);
        assert_eq!(cc.last_max_cwnd(), 100);
        cc.set_state(&c, CaState::Loss, &mut w);
        assert_eq!((cc.last_max_cwnd(), cc.epoch_start, cc.delay_min_us(), cc.hystart_found()), (0, 0, 0, false));
        assert_eq!(
            (cc.end_seq, cc.round_start, cc.sample_cnt, cc.curr_rtt),
            (77_000, clock_us(jiffy(100)), 0, u32::MAX)
        );
    }

    #[test]
    fn rtt_samples_in_the_first_second_of_an_epoch_are_ignored() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        cc.pkts_acked(&at(jiffy(249)), &rtt_sample(30 * NS_PER_MS), &mut w);
        assert_eq!(cc.delay_min_us(), 40_000);
        cc.pkts_acked(&at(jiffy(250)), &rtt_sample(30 * NS_PER_MS), &mut w);
        assert_eq!(cc.delay_min_us(), 30_000);
        // Samples without RTT (-1) are ignored; a 0 µs sample counts as 1 µs.
        cc.pkts_acked(&at(jiffy(260)), &AckSample { rtt: -1, ..rtt_sample(0) }, &mut w);
        assert_eq!(cc.delay_min_us(), 30_000);
        cc.pkts_acked(&at(jiffy(260)), &rtt_sample(999), &mut w);
        assert_eq!(cc.delay_min_us(), 1);
    }

    #[test]
    fn the_epoch_shifts_by_the_idle_time_on_restart() {
        let (mut cc, mut w) = after_loss_at_100();
        cnt_at(&mut cc, &mut w, 0, 70);
        let start = jiffies32(jiffy(0));
        // Last send 2 s into the epoch, restart at 3 s: shift by 250 jiffies.
        let mut c = at(jiffy(750));
        c.lsndtime = jiffy(500);
        cc.cwnd_event(&c, CwndEvent::TxStart, &mut w);
        assert_eq!(cc.epoch_start, start + 250);
        // Other events leave the epoch alone.
        cc.cwnd_event(&c, CwndEvent::CwndRestart, &mut w);
        assert_eq!(cc.epoch_start, start + 250);
        // The shifted start never passes now.
        c.lsndtime = T0 - 10 * NS_PER_SEC;
        cc.cwnd_event(&c, CwndEvent::TxStart, &mut w);
        assert_eq!(cc.epoch_start, jiffies32(jiffy(750)));
    }

    #[test]
    fn no_epoch_no_shift_on_restart() {
        let (mut cc, mut w) = after_loss_at_100();
        let mut c = at(jiffy(750));
        c.lsndtime = jiffy(500);
        cc.cwnd_event(&c, CwndEvent::TxStart, &mut w);
        assert_eq!(cc.epoch_start, 0);
    }

    /// A slow-starting connection at T0 with cwnd `cwnd`, round ending at seq 100 000,
    /// and delay_min 10 ms from a first sample at T0.
    fn slow_start(cwnd: u32, p: Params) -> (Cubic, Window) {
        let mut cc = Cubic::new(p).unwrap();
        let mut w = Window { cwnd, ..Window::default() };
        let mut c = at(T0);
        c.snd_nxt = 100_000;
        cc.init(&c, &mut w);
        cc.pkts_acked(&c, &rtt_sample(10 * NS_PER_MS), &mut w);
        assert_eq!(cc.delay_min_us(), 10_000);
        (cc, w)
    }

    /// Feed `n` RTT samples of `rtt` 3 ms apart (no ACK train) in a new round starting at `t`.
    fn new_round_of_samples(cc: &mut Cubic, w: &mut Window, t: Nanos, rtt: Nanos, n: usize) {
        for i in 0..n {
            let mut c = at(t + i as u64 * 3 * NS_PER_MS);
            c.snd_una = 100_001;
            c.snd_nxt = 200_000;
            cc.pkts_acked(&c, &rtt_sample(rtt), w);
        }
    }

    #[test]
    fn hystart_delay_exit_after_eight_samples_above_delay_min_plus_4_ms() {
        // Threshold: 10 000 + clamp(10 000 / 8, 4000, 16000) = 14 000 µs.
        let (mut cc, mut w) = slow_start(16, Params::default());
        new_round_of_samples(&mut cc, &mut w, T0 + 50 * NS_PER_MS, 14_001 * NS_PER_US, 8);
        assert_eq!((w.ssthresh, cc.sample_cnt, cc.curr_rtt), (INFINITE_SSTHRESH, 8, 14_001));
        new_round_of_samples(&mut cc, &mut w, T0 + 80 * NS_PER_MS, 14_001 * NS_PER_US, 1);
        assert_eq!((w.ssthresh, cc.hystart_found()), (16, true));
        assert_eq!(cc.end_seq, 200_000);
    }

    #[test]
    fn hystart_delay_exit_needs_the_round_minimum_strictly_above_the_threshold() {
        let (mut cc, mut w) = slow_start(16, Params::default());
        new_round_of_samples(&mut cc, &mut w, T0 + 50 * NS_PER_MS, 14_000 * NS_PER_US, 20);
        assert_eq!((w.ssthresh, cc.hystart_found()), (INFINITE_SSTHRESH, false));
    }

    #[test]
    fn hystart_delay_threshold_is_capped_at_16_ms() {
        // delay_min 200 ms: 200 000 / 8 = 25 000 -> 16 000; 216 001 µs exits, 216 000 does not.
        let ssthresh_after_round_of = |rtt_us: u64| {
            let mut cc = Cubic::default();
            let mut w = Window { cwnd: 16, ..Window::default() };
            let mut c = at(T0);
            c.snd_nxt = 100_000;
            cc.init(&c, &mut w);
            cc.pkts_acked(&c, &rtt_sample(200 * NS_PER_MS), &mut w);
            new_round_of_samples(&mut cc, &mut w, T0 + 300 * NS_PER_MS, rtt_us * NS_PER_US, 9);
            w.ssthresh
        };
        assert_eq!(ssthresh_after_round_of(216_000), INFINITE_SSTHRESH);
        assert_eq!(ssthresh_after_round_of(216_001), 16);
    }

    #[test]
    fn no_hystart_exit_below_the_low_window_of_16_packets_but_rounds_are_tracked() {
        let (mut cc, mut w) = slow_start(15, Params::default());
        new_round_of_samples(&mut cc, &mut w, T0 + 50 * NS_PER_MS, 30_000 * NS_PER_US, 20);
        assert_eq!((w.ssthresh, cc.hystart_found(), cc.end_seq), (INFINITE_SSTHRESH, false, 200_000));
    }

    /// ACKs 1 ms apart from T0 (the round start), RTT 10 ms; returns ssthresh after each.
    fn ack_train(cc: &mut Cubic, w: &mut Window, offsets_us: &[u64]) -> Vec<u32> {
        offsets_us
            .iter()
            .map(|&us| {
                let mut c = at(T0 + us * NS_PER_US);
                c.snd_nxt = 100_000;
                cc.pkts_acked(&c, &rtt_sample(10 * NS_PER_MS), w);
                w.ssthresh
            })
            .collect()
    }

    #[test]
    fn hystart_ack_train_exit_once_the_train_outlasts_half_of_delay_min() {
        let (mut cc, mut w) = slow_start(20, Params::default());
        let inf = INFINITE_SSTHRESH;
        let got = ack_train(&mut cc, &mut w, &[1000, 2000, 3000, 4000, 5000, 6000]);
        assert_eq!(got, vec![inf, inf, inf, inf, inf, 20]);
        assert!(cc.hystart_found());
    }

    #[test]
    fn a_gap_over_2_ms_breaks_the_ack_train() {
        let (mut cc, mut w) = slow_start(20, Params::default());
        let inf = INFINITE_SSTHRESH;
        // 4 ms -> 6.5 ms is a 2.5 ms gap: later ACKs no longer extend the train.
        let got = ack_train(&mut cc, &mut w, &[1000, 2000, 3000, 4000, 6500, 7000, 8000]);
        assert_eq!(got, vec![inf; 7]);
    }

    #[test]
    fn a_known_pacing_rate_adds_the_aggregation_cushion_to_the_ack_train_threshold() {
        assert_eq!(
            (hystart_ack_delay(0), hystart_ack_delay(12_500_000), hystart_ack_delay(1_000_000_000)),
            (0, 1000, 262)
        );
        let inf = INFINITE_SSTHRESH;
        // Unknown rate: threshold 10 000 / 2 = 5000 µs, 5.4 ms exits.
        let (mut cc, mut w) = slow_start(20, Params::default());
        assert_eq!(
            ack_train(&mut cc, &mut w, &[1000, 2000, 3000, 4000, 5000, 5400]),
            vec![inf, inf, inf, inf, inf, 20]
        );
        // 100 Mbit/s: (10 000 + 1000) / 2 = 5500 µs, 5.4 ms does not exit, 5.6 ms does.
        let (mut cc, mut w) = slow_start(20, Params::default());
        w.pacing_rate = 12_500_000;
        let got = ack_train(&mut cc, &mut w, &[1000, 2000, 3000, 4000, 5000, 5400, 5600]);
        assert_eq!(got, vec![inf, inf, inf, inf, inf, inf, 20]);
    }

    #[test]
    fn a_paced_socket_needs_an_ack_train_of_a_full_delay_min() {
        let (mut cc, mut w) = slow_start(20, Params { paced: true, ..Params::default() });
        let offs: Vec<u64> = (1..=11).map(|i| i * 1000).collect();
        let got = ack_train(&mut cc, &mut w, &offs);
        assert_eq!(got.iter().position(|&s| s == 20), Some(10)); // at 11 ms > 10 000 µs
    }

    #[test]
    fn hystart_does_nothing_after_slow_start_or_when_disabled() {
        let (mut cc, mut w) = slow_start(20, Params { hystart: false, ..Params::default() });
        new_round_of_samples(&mut cc, &mut w, T0 + 50 * NS_PER_MS, 30_000 * NS_PER_US, 20);
        assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
        let (mut cc, mut w) = slow_start(20, Params::default());
        w.ssthresh = 20;
        new_round_of_samples(&mut cc, &mut w, T0 + 50 * NS_PER_MS, 30_000 * NS_PER_US, 20);
        assert_eq!((w.ssthresh, cc.hystart_found()), (20, false));
    }

    #[test]
    fn initial_ssthresh_applies_only_without_hystart() {
        let mut w = Window::default();
        Cubic::new(Params { initial_ssthresh: 50, ..Params::default() }).unwrap().init(&at(0), &mut w);
        assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
        Cubic::new(Params { initial_ssthresh: 50, hystart: false, ..Params::default() }).unwrap().init(&at(0), &mut w);
        assert_eq!(w.ssthresh, 50);
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        let e = Cubic::new(Params { beta: 1024, ..Params::default() }).unwrap_err();
        assert!(e.starts_with("beta:"), "{e}");
        let e = Cubic::new(Params { bic_scale: 0, ..Params::default() }).unwrap_err();
        assert!(e.starts_with("bic_scale:"), "{e}");
        let e = Cubic::new(Params { hystart_detect: 4, ..Params::default() }).unwrap_err();
        assert!(e.starts_with("hystart_detect:"), "{e}");
    }

    #[test]
    fn hystart_rounds_follow_32_bit_sequence_wrap() {
        assert!(seq_after(5, u32::MAX - 5));
        assert!(!seq_after(u32::MAX - 5, 5));
        assert!(!seq_after(7, 7));
    }
}
