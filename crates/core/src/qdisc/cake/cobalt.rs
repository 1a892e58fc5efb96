//! COBALT: CAKE's per-queue AQM, CoDel and BLUE side by side.
//!
//! Source: Linux `net/sched/sch_cake.c` (v6.x): `cobalt_newton_step`,
//! `cobalt_invsqrt`, `cobalt_control`, `cobalt_queue_full`,
//! `cobalt_queue_empty`, `cobalt_should_drop`; Høiland-Jørgensen, Täht,
//! Morton, "Piece of CAKE" (IEEE LANMAN 2018), section IV.
//!
//! Model in a nutshell:
//! - CoDel part: when a dequeued packet's sojourn exceeds `target` (and 4
//!   MTU-times), the queue enters `dropping`; the first signal is due at
//!   `drop_next` and the next ones `interval/sqrt(count)` apart, `count`
//!   growing by one per signal. Signals are CE marks on ECT packets, drops
//!   otherwise. Unlike reference CoDel, when the sojourn falls below target
//!   `count` is not reset but *decays*: it drops by one each time `drop_next`
//!   passes without a signal (also while the queue is empty), so a queue that
//!   becomes congested again soon resumes near its old rate.
//! - BLUE part: a drop probability `p_drop` (Q0.32) grows by `p_inc` = 1/256
//!   whenever the queue overflows (memory limit) and shrinks by `p_dec` =
//!   1/4096 whenever it is found empty, each at most once per `target`. Every
//!   dequeued packet not already signalled is dropped with probability
//!   `p_drop` (never marked: unresponsive flows ignore marks).
//!
//! State (`CobaltVars`): `count`, `rec_inv_sqrt` (1/sqrt(count), Q0.32),
//! `drop_next` (doubling as an activity timeout when `count` is 0),
//! `blue_timer`, `p_drop`, `dropping`, `ecn_marked`.
//!
//! A kernel detail kept on purpose: `rec_inv_sqrt` starts at 0 (the vars are
//! zeroed), so the very first dropping episode of a queue schedules its
//! first signal at once (`drop_next = now`) and signals the *second*
//! over-target packet; after `count` has been through the cache once,
//! `rec_inv_sqrt(0) = ~0` and the first signal comes one `interval` later.

use crate::time::Nanos;

/// 1/sqrt(count) in Q0.32 for count 0..16, the kernel's `inv_sqrt_cache`
/// (four Newton steps from ~0; entries 0 and 1 are ~0 = "1.0").
const INV_SQRT_CACHE: [u32; 16] = [
    !0, !0, 3037000500, 2479700525, 2147483647, 1920767767, 1753413056, 1623345051, 1518500250, 1431655765,
    1358187914, 1294981364, 1239850263, 1191209601, 1147878294, 1108955788,
];

/// `struct cobalt_params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CobaltParams {
    /// CoDel interval and signalling-rate scale, ns.
    pub interval: u64,
    /// Acceptable standing sojourn, and BLUE's update period, ns.
    pub target: u64,
    /// Serialisation time of one MTU at the tin's rate, ns.
    pub mtu_time: u64,
    /// BLUE increment, Q0.32 (1 << 24 = 1/256).
    pub p_inc: u32,
    /// BLUE decrement, Q0.32 (1 << 20 = 1/4096).
    pub p_dec: u32,
}

/// `struct cobalt_vars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CobaltVars {
    pub count: u32,
    pub rec_inv_sqrt: u32,
    pub drop_next: Nanos,
    pub blue_timer: Nanos,
    pub p_drop: u32,
    pub dropping: bool,
    pub ecn_marked: bool,
}

/// What [`CobaltVars::should_drop`] decided for a dequeued packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// CE-marked by CoDel (the packet was ECT): deliver it.
    Marked,
    /// CoDel signal on a non-ECT packet.
    CodelDrop,
    /// BLUE's random drop.
    BlueDrop,
}

/// Signed `a - b` of two ns times, as `ktime_sub` gives.
#[inline]
fn sub(a: Nanos, b: Nanos) -> i64 {
    a.wrapping_sub(b) as i64
}

impl CobaltVars {
    /// `cobalt_newton_step`: one Newton iteration of 1/sqrt(count) in Q0.32.
    fn newton_step(&mut self) {
        let invsqrt = self.rec_inv_sqrt as u64;
        let invsqrt2 = (invsqrt * invsqrt) >> 32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2);
        val >>= 2; // avoid overflow in the following multiply
        val = (val.wrapping_mul(invsqrt)) >> (32 - 2 + 1);
        self.rec_inv_sqrt = val as u32;
    }

    fn invsqrt(&mut self) {
        if (self.count as usize) < INV_SQRT_CACHE.len() {
            self.rec_inv_sqrt = INV_SQRT_CACHE[self.count as usize];
        } else {
            self.newton_step();
        }
    }

    /// `cobalt_control`: t + interval / sqrt(count) via `reciprocal_scale`.
    #[inline]
    fn control(t: Nanos, interval: u64, rec_inv_sqrt: u32) -> Nanos {
        t.wrapping_add((interval.wrapping_mul(rec_inv_sqrt as u64)) >> 32)
    }

    /// `cobalt_queue_full`: a packet of this queue was dropped for overflow.
    /// Returns true if BLUE went from quiescent to active.
    pub fn queue_full(&mut self, p: &CobaltParams, now: Nanos) -> bool {
        let mut up = false;
        if sub(now, self.blue_timer) > p.target as i64 {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.wrapping_add(p.p_inc);
            if self.p_drop < p.p_inc {
                self.p_drop = !0;
            }
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: the queue was serviced but found empty.
    /// Returns true if BLUE went from active to quiescent.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: Nanos) -> bool {
        let mut down = false;
        if self.p_drop != 0 && sub(now, self.blue_timer) > p.target as i64 {
            if self.p_drop < p.p_dec {
                self.p_drop = 0;
            } else {
                self.p_drop -= p.p_dec;
            }
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && sub(now, self.drop_next) >= 0 {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// `cobalt_should_drop` for a packet that spent `sojourn` ns queued.
    /// `ect` says whether it can carry a CE mark; `bulk_flows` is the tin's
    /// bulk flow count in ingress mode, 0 otherwise; `rand` a uniform u32
    /// drawn only when BLUE is active (the kernel's `get_random_u32`).
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: Nanos,
        sojourn: u64,
        ect: bool,
        bulk_flows: u32,
        rand: &mut impl FnMut() -> u32,
    ) -> Verdict {
        let mut verdict = Verdict::Pass;
        let mut schedule = sub(now, self.drop_next);
        let over_target = sojourn > p.target
            && sojourn > p.mtu_time * bulk_flows as u64 * 2
            && sojourn > p.mtu_time * 4;
        let mut next_due = self.count != 0 && schedule >= 0;
        self.ecn_marked = false;

        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = Self::control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }

        if next_due && self.dropping {
            // Use ECN mark if possible, otherwise drop.
            self.ecn_marked = ect;
            verdict = if ect { Verdict::Marked } else { Verdict::CodelDrop };
            self.count = self.count.wrapping_add(1);
            if self.count == 0 {
                self.count -= 1;
            }
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = sub(now, self.drop_next);
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = sub(now, self.drop_next);
                next_due = self.count != 0 && schedule >= 0;
            }
        }

        // Simple BLUE: no ECN, deliberately.
        let not_dropped = matches!(verdict, Verdict::Pass | Verdict::Marked);
        if self.p_drop != 0 && not_dropped && rand() < self.p_drop {
            verdict = Verdict::BlueDrop;
        }
        let not_dropped = matches!(verdict, Verdict::Pass | Verdict::Marked);

        // drop_next doubles as an activity timeout.
        if self.count == 0 {
            self.drop_next = now.wrapping_add(p.interval);
        } else if schedule > 0 && not_dropped {
            self.drop_next = now;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    fn params() -> CobaltParams {
        CobaltParams { interval: 100 * NS_PER_MS, target: 5 * NS_PER_MS, mtu_time: 0, p_inc: 1 << 24, p_dec: 1 << 20 }
    }

    #[test]
    fn past_the_cache_one_newton_step_gives_the_kernels_value() {
        // count 16 from cache[15] = 1/sqrt(15): the kernel's arithmetic gives
        // 1071990595 / 2^32 = 0.24959 (1/sqrt(16) = 0.25; one step is close enough).
        let mut v = CobaltVars { count: 16, rec_inv_sqrt: INV_SQRT_CACHE[15], ..Default::default() };
        v.invsqrt();
        assert_eq!(v.rec_inv_sqrt, 1071990595);
    }

    #[test]
    fn a_standing_queue_is_signalled_at_the_cobalt_control_law_times() {
        let p = params();
        let mut v = CobaltVars::default();
        let mut never = || -> u32 { panic!("BLUE is idle: no random number may be drawn") };
        // Packets leave every 1 ms having waited 10 ms (> target), from t = 1 s.
        let mut signals = Vec::new();
        for k in 0..400u64 {
            let now = 1_000 * NS_PER_MS + k * NS_PER_MS;
            if v.should_drop(&p, now, 10 * NS_PER_MS, false, 0, &mut never) == Verdict::CodelDrop {
                signals.push((now - 1_000 * NS_PER_MS) / NS_PER_MS);
            }
        }
        // First episode of a fresh queue: rec_inv_sqrt = 0, so the second
        // over-target packet (t = 1 ms) is dropped; then drop_next advances by
        // interval/sqrt(count) from the *previous drop_next* (t = 0):
        // 0 + 100/sqrt2 = 70.7 -> 71, +100/sqrt3 = 128.4 -> 129, +50 = 178.4 -> 179,
        // +44.7 = 223.1 -> 224, +40.8 = 263.9 -> 264, +37.8 = 301.7 -> 302, +35.4 = 337.1 -> 338, +33.3 = 370.4 -> 371.
        assert_eq!(signals, vec![1, 71, 129, 179, 224, 264, 302, 338, 371]);
        assert_eq!(v.count, 10);
    }

    #[test]
    fn ect_packets_are_marked_instead_of_dropped() {
        let p = params();
        let mut v = CobaltVars::default();
        let mut never = || -> u32 { unreachable!() };
        assert_eq!(v.should_drop(&p, NS_PER_MS, 10 * NS_PER_MS, true, 0, &mut never), Verdict::Pass);
        assert_eq!(v.should_drop(&p, 2 * NS_PER_MS, 10 * NS_PER_MS, true, 0, &mut never), Verdict::Marked);
        assert!(v.ecn_marked);
    }

    #[test]
    fn below_target_the_count_decays_one_step_per_control_interval() {
        let p = params();
        let mut v = CobaltVars::default();
        let mut never = || -> u32 { unreachable!() };
        for k in 0..200u64 {
            v.should_drop(&p, k * NS_PER_MS, 10 * NS_PER_MS, false, 0, &mut never);
        }
        let (count, drop_next) = (v.count, v.drop_next);
        assert_eq!(count, 5);
        // Sojourn falls to 1 ms: no signal, and each passed drop_next takes
        // one off count (here at once, since drop_next is in the past).
        let now = drop_next + 1;
        assert_eq!(v.should_drop(&p, now, NS_PER_MS, false, 0, &mut never), Verdict::Pass);
        assert!(!v.dropping);
        assert_eq!(v.count, 4);
    }

    #[test]
    fn blue_rises_by_1_256_per_overflow_per_target_and_decays_by_1_4096_when_empty() {
        let p = params();
        let mut v = CobaltVars::default();
        let t0 = 10 * NS_PER_MS;
        assert!(v.queue_full(&p, t0));
        assert_eq!(v.p_drop, 1 << 24);
        // A second overflow within `target` does not raise it again.
        assert!(!v.queue_full(&p, t0 + 5 * NS_PER_MS));
        assert_eq!(v.p_drop, 1 << 24);
        assert!(!v.queue_full(&p, t0 + 5 * NS_PER_MS + 1));
        assert_eq!(v.p_drop, 2 << 24);
        // Empty: -1/4096 per target.
        v.queue_empty(&p, t0 + 20 * NS_PER_MS);
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
        // BLUE then drops a dequeued packet when the random draw is below p_drop.
        let mut v2 = CobaltVars { p_drop: 1 << 24, ..Default::default() };
        let mut low = || -> u32 { (1 << 24) - 1 };
        assert_eq!(v2.should_drop(&p, t0, 0, true, 0, &mut low), Verdict::BlueDrop);
        let mut high = || -> u32 { 1 << 24 };
        assert_eq!(v2.should_drop(&p, t0, 0, true, 0, &mut high), Verdict::Pass);
    }
}
