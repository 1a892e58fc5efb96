//! CoDel, the Controlled-Delay AQM.
//!
//! Sources: RFC 8289 (Nichols, Jacobson, McGregor, Iyengar, 2018) and Linux
//! v6.x `include/net/codel.h`, `include/net/codel_impl.h` (the algorithm,
//! shared by `sch_codel.c` and `sch_fq_codel.c`) and `net/sched/sch_codel.c`
//! (the single-queue qdisc). Linux first: where RFC 8289's pseudo-code and
//! the kernel differ, this file does what the kernel does.
//!
//! # Model in a nutshell
//! CoDel looks at the *sojourn time* of each packet as it leaves the queue.
//! A standing queue shows up as a minimum sojourn that stays above `target`
//! (5 ms) for a whole `interval` (100 ms, about a worst-case RTT). Then CoDel
//! drops (or CE-marks) one packet and schedules the next drop at
//! `interval / sqrt(count)` later: the drop rate grows like sqrt(count),
//! which is what makes a Reno-like flow's window shrink linearly in time.
//! As soon as one packet leaves with a sojourn below target (or the queue
//! holds at most one MTU), CoDel stops dropping.
//!
//! # States
//! - *not dropping*, `first_above_time == 0`: sojourn below target.
//! - *not dropping*, `first_above_time != 0`: above target since less than
//!   an interval; the first drop happens at the first dequeue after
//!   `first_above_time` (strictly after, as `codel_time_after`).
//! - *dropping*: a drop (or mark) at every `drop_next`; each increments
//!   `count` and moves `drop_next` by `interval / sqrt(count)`.
//!   When re-entering *dropping* less than 16 intervals after the last drop
//!   and `count - lastcount > 1`, `count` restarts at `count - lastcount`
//!   rather than 1 (the hysteresis of `codel_impl.h`; RFC 8289 uses 8
//!   intervals, Linux 16).
//!
//! # Arithmetic (kept bit-exact with the kernel)
//! - Time is `codel_time_t`: a u32 count of 1024 ns units (`ns >> 10`),
//!   compared with wrapping (RFC 1982) arithmetic. `MS2TIME(5) = 4882`,
//!   `MS2TIME(100) = 97656`.
//! - `1/sqrt(count)` is `rec_inv_sqrt`, a Q0.16 number updated by one Newton
//!   step per increment of `count` ([`newton_step`]), and the control law is
//!   `t + reciprocal_scale(interval, rec_inv_sqrt << 16)` ([`control_law`]).
//!   One Newton step from 1.0 at count 2 gives 0.5, not 0.707: that is the
//!   kernel's behaviour and the reason the second gap is 48829 units
//!   (50 ms), not 70.7 ms.
//!
//! # Constants
//! - target 5 ms, interval 100 ms: RFC 8289 §4.2/4.3 and `codel_params_init`.
//! - `mtu` 1514 B: `psched_mtu()` of an Ethernet device (MTU + 14 B header);
//!   no drop while the backlog is at most one MTU (`codel_should_drop`).
//!   Our packet lengths are IP bytes (1500 for a full segment), the kernel's
//!   `qdisc_pkt_len` includes the 14-byte Ethernet header: keeping 1514
//!   keeps the kernel's number, at the cost of that 14-byte offset.
//! - `ce_threshold` disabled = `INT_MAX` (`CODEL_DISABLED_THRESHOLD`).
//! - sch_codel `limit` 1000 packets (`codel_init`), tail drop beyond.
//! - `ecn` off in sch_codel, on in fq_codel.
//!
//! Not modelled: `ce_threshold_selector/mask` (DiffServ-selective CE
//! marking); the kernel's `drop_count/drop_len` reset for parent qdiscs
//! (ours are cumulative statistics).
//!
//! # Generic over the queue
//! [`codel_dequeue`] is written once, over the [`CodelQueue`] trait (Linux's
//! `dequeue_func` callback plus the `backlog` pointer); [`Codel`] runs it on
//! a FIFO and `fq_codel` on each flow's queue.

use super::flow_hash::{inet_ecn_set_ce, reciprocal_scale};
use super::params::{MAX_TC_TIME_NS, U32_MAX};
use super::{DropReason, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Linux `codel_time_t`: 1024 ns units, wrapping u32 (range 2199 s).
pub type CodelTime = u32;
/// ns → codel time shift (`CODEL_SHIFT`).
pub const CODEL_SHIFT: u32 = 10;
/// Bits of `rec_inv_sqrt` (`REC_INV_SQRT_BITS` = 8 * sizeof(u16)).
pub const REC_INV_SQRT_BITS: u32 = 16;
/// Shift from `rec_inv_sqrt` to a Q0.32 number (`REC_INV_SQRT_SHIFT`).
pub const REC_INV_SQRT_SHIFT: u32 = 32 - REC_INV_SQRT_BITS;
/// `ce_threshold` value meaning "no CE threshold" (`CODEL_DISABLED_THRESHOLD`).
pub const CODEL_DISABLED_THRESHOLD: CodelTime = i32::MAX as u32;
/// `psched_mtu()` of an Ethernet device: 1500 + 14 bytes.
pub const DEFAULT_MTU: u32 = 1514;
/// Scenario doc of `codel` (the [`super::QdiscKind`] registry).
pub const DOC: &str = "CoDel AQM on one FIFO (Linux sch_codel, RFC 8289); its own packet `limit`, the direction's `buffer` is not used";

/// `qdisc_params` of `codel`, with Linux's defaults (`codel_params_init`,
/// sch_codel's `limit` 1000) and the ranges tc accepts (times are a u32 of µs).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::count("limit", 1000.0, 1.0, U32_MAX, "packets the queue holds; tail drop beyond (tc `limit`)"),
    ParamSpec::time("target", 5e6, 1000.0, MAX_TC_TIME_NS, "acceptable standing sojourn time (tc `target`)"),
    ParamSpec::time("interval", 100e6, 1000.0, MAX_TC_TIME_NS, "window over which the sojourn must stay above target before dropping, ~ a worst-case RTT (tc `interval`)"),
    ParamSpec::flag("ecn", false, "CE-mark ECT packets instead of dropping them (tc `ecn`)"),
    ParamSpec::time("ce_threshold", 0.0, 0.0, MAX_TC_TIME_NS, "CE-mark every ECT packet whose sojourn exceeds this; 0 = off (tc `ce_threshold`)"),
];

/// Codel time of `ns` nanoseconds (`codel_get_time`).
#[inline]
pub fn codel_time(ns: Nanos) -> CodelTime {
    (ns >> CODEL_SHIFT) as u32
}

/// `codel_time_after(a, b)`: a is after b, in wrapping arithmetic.
#[inline]
fn after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
#[inline]
fn after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}
#[inline]
fn before(a: CodelTime, b: CodelTime) -> bool {
    after(b, a)
}

/// Linux `struct codel_params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing sojourn time (codel time units; 5 ms = 4882).
    pub target: CodelTime,
    /// Sojourn above which every ECT packet is CE-marked regardless of the
    /// control law (codel time units), or [`CODEL_DISABLED_THRESHOLD`].
    pub ce_threshold: CodelTime,
    /// Width of the moving window, about a worst-case RTT (100 ms = 97656).
    pub interval: CodelTime,
    /// Backlog (bytes) at or below which CoDel never drops: one MTU.
    pub mtu: u32,
    /// CE-mark ECT packets instead of dropping them.
    pub ecn: bool,
}

impl Default for CodelParams {
    /// `codel_params_init` plus sch_codel's `mtu = psched_mtu(dev)`: the
    /// defaults of [`PARAMS`].
    fn default() -> Self {
        CodelParams::from_params(&Params::defaults(PARAMS))
    }
}

impl CodelParams {
    /// Parameters from nanoseconds (as tc's µs are converted: `ns >> 10`).
    pub fn from_ns(target_ns: u64, interval_ns: u64, ce_threshold_ns: Option<u64>, mtu: u32, ecn: bool) -> Self {
        CodelParams {
            target: codel_time(target_ns),
            interval: codel_time(interval_ns),
            ce_threshold: ce_threshold_ns.map(codel_time).unwrap_or(CODEL_DISABLED_THRESHOLD),
            mtu,
            ecn,
        }
    }

    /// From a qdisc's `target`, `interval`, `ce_threshold` (0 = off) and `ecn`
    /// (codel's and fq_codel's tables both have them).
    pub fn from_params(p: &Params) -> Self {
        let ce = p.u64("ce_threshold");
        CodelParams::from_ns(p.u64("target"), p.u64("interval"), (ce > 0).then_some(ce), DEFAULT_MTU, p.flag("ecn"))
    }
}

/// Linux `struct codel_vars`: the per-queue state of the control law.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Drops (and marks) since entering the dropping state (with hysteresis).
    pub count: u32,
    /// `count` at the last entry into the dropping state.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16 (0xFFFF ≈ 1.0).
    pub rec_inv_sqrt: u16,
    /// When the sojourn went (or will have been) above target for an
    /// interval; 0 while below target.
    pub first_above_time: CodelTime,
    /// Time of the next drop in the dropping state (or of the last one).
    pub drop_next: CodelTime,
    /// Sojourn time of the last dequeued packet.
    pub ldelay: CodelTime,
}

/// Linux `struct codel_stats`, shared by all the queues of one qdisc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen at dequeue (bytes).
    pub maxpacket: u32,
    /// Packets dropped by the control law (cumulative here; the kernel
    /// resets it after telling parent qdiscs).
    pub drop_count: u64,
    /// Bytes dropped by the control law (cumulative).
    pub drop_len: u64,
    /// Packets CE-marked by the control law instead of dropped.
    pub ecn_mark: u64,
    /// Packets CE-marked because their sojourn exceeded `ce_threshold`.
    pub ce_mark: u64,
}

/// One Newton-Raphson step of 1/sqrt(count) (`codel_Newton_step`):
/// `new = old/2 * (3 - count * old^2)`, in Q0.32 arithmetic.
pub fn newton_step(vars: &mut CodelVars) {
    let invsqrt = (vars.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val: u64 = (3u64 << 32).wrapping_sub(vars.count as u64 * invsqrt2 as u64);
    val >>= 2; // avoid overflow in the following multiply
    val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
    vars.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

/// `codel_control_law`: `t + interval / sqrt(count)` with the reciprocal.
#[inline]
pub fn control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    t.wrapping_add(reciprocal_scale(interval, (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT))
}

/// The queue CoDel controls: Linux's `dequeue_func` callback and the
/// `backlog` counter it maintains.
pub trait CodelQueue<T> {
    /// Remove and return the head packet, updating the backlog counters.
    fn dequeue_head(&mut self) -> Option<Packet<T>>;
    /// The bytes compared with `mtu` (sch_codel: its backlog; fq_codel: the
    /// whole qdisc's backlog), as left by the last `dequeue_head`.
    fn backlog(&self) -> u32;
}

/// `codel_should_drop`: update `ldelay`, `maxpacket` and `first_above_time`
/// for the packet just dequeued and say whether it is OK to drop it.
fn should_drop<T>(
    pkt: Option<&Packet<T>>,
    backlog: u32,
    vars: &mut CodelVars,
    params: &CodelParams,
    stats: &mut CodelStats,
    now: CodelTime,
) -> bool {
    let Some(pkt) = pkt else {
        vars.first_above_time = 0;
        return false;
    };
    vars.ldelay = now.wrapping_sub(codel_time(pkt.meta.enqueued_at));
    stats.maxpacket = stats.maxpacket.max(pkt.meta.len);
    if before(vars.ldelay, params.target) || backlog <= params.mtu {
        // went below: stay below for at least interval
        vars.first_above_time = 0;
        return false;
    }
    if vars.first_above_time == 0 {
        // just went above from below: OK to drop if we stay above for an interval
        vars.first_above_time = now.wrapping_add(params.interval);
        false
    } else {
        after(now, vars.first_above_time)
    }
}

fn drop_pkt<T>(pkt: Packet<T>, stats: &mut CodelStats, ev: &mut Events<T>) {
    stats.drop_len += pkt.meta.len as u64;
    stats.drop_count += 1;
    ev.drop(pkt, DropReason::Aqm);
}

/// `codel_dequeue`: the packet CoDel lets out of `q` at `now_ns`, dropping
/// (into `ev`, [`DropReason::Aqm`]) or CE-marking (counted in `ev.marks`)
/// as the control law says.
pub fn codel_dequeue<T, Q: CodelQueue<T>>(
    q: &mut Q,
    params: &CodelParams,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
    now_ns: Nanos,
    ev: &mut Events<T>,
) -> Option<Packet<T>> {
    let Some(first) = q.dequeue_head() else {
        vars.dropping = false;
        return None;
    };
    let now = codel_time(now_ns);
    let drop = should_drop(Some(&first), q.backlog(), vars, params, stats, now);
    let mut skb = Some(first);
    'end: {
        if vars.dropping {
            if !drop {
                // sojourn below target: leave the dropping state
                vars.dropping = false;
            } else if after_eq(now, vars.drop_next) {
                // Time for the next drop; a large backlog may make several due now.
                while vars.dropping && after_eq(now, vars.drop_next) {
                    vars.count = vars.count.wrapping_add(1);
                    newton_step(vars);
                    let mut p = skb.take().expect("dropping implies a packet in hand");
                    if params.ecn && inet_ecn_set_ce(&mut p.meta) {
                        stats.ecn_mark += 1;
                        ev.marks += 1;
                        vars.drop_next = control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                        skb = Some(p);
                        break 'end;
                    }
                    drop_pkt(p, stats, ev);
                    skb = q.dequeue_head();
                    if !should_drop(skb.as_ref(), q.backlog(), vars, params, stats, now) {
                        vars.dropping = false;
                    } else {
                        vars.drop_next = control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            let mut p = skb.take().expect("drop implies a packet in hand");
            if params.ecn && inet_ecn_set_ce(&mut p.meta) {
                stats.ecn_mark += 1;
                ev.marks += 1;
                skb = Some(p);
            } else {
                drop_pkt(p, stats, ev);
                skb = q.dequeue_head();
                // The kernel re-evaluates (updating ldelay and first_above_time)
                // but enters the dropping state whatever the answer.
                should_drop(skb.as_ref(), q.backlog(), vars, params, stats, now);
            }
            vars.dropping = true;
            // If we were dropping recently, resume near the last drop rate.
            let delta = vars.count.wrapping_sub(vars.lastcount);
            if delta > 1 && before(now.wrapping_sub(vars.drop_next), params.interval.wrapping_mul(16)) {
                vars.count = delta;
                newton_step(vars);
            } else {
                vars.count = 1;
                vars.rec_inv_sqrt = (u32::MAX >> REC_INV_SQRT_SHIFT) as u16;
            }
            vars.lastcount = vars.count;
            vars.drop_next = control_law(now, params.interval, vars.rec_inv_sqrt);
        }
    }
    if let Some(p) = skb.as_mut() {
        if after(vars.ldelay, params.ce_threshold) && inet_ecn_set_ce(&mut p.meta) {
            stats.ce_mark += 1;
            ev.marks += 1;
        }
    }
    skb
}

/// A FIFO with a byte backlog: sch_codel's queue.
#[derive(Debug)]
struct CodelFifo<T> {
    q: VecDeque<Packet<T>>,
    backlog: u32,
}

impl<T> CodelQueue<T> for CodelFifo<T> {
    fn dequeue_head(&mut self) -> Option<Packet<T>> {
        let p = self.q.pop_front()?;
        self.backlog -= p.meta.len;
        Some(p)
    }
    fn backlog(&self) -> u32 {
        self.backlog
    }
}

/// `sch_codel`: one FIFO under CoDel, tail drop at `limit` packets.
#[derive(Debug)]
pub struct Codel<T> {
    pub params: CodelParams,
    pub vars: CodelVars,
    pub stats: CodelStats,
    /// Packets the queue holds at most (`sch->limit`).
    pub limit: u32,
    fifo: CodelFifo<T>,
}

impl<T> Codel<T> {
    pub fn new(params: CodelParams, limit: u32) -> Self {
        Codel {
            params,
            vars: CodelVars::default(),
            stats: CodelStats::default(),
            limit,
            fifo: CodelFifo { q: VecDeque::new(), backlog: 0 },
        }
    }
}

impl<T> Codel<T> {
    /// From the scenario's `qdisc_params` (see [`PARAMS`]).
    pub fn from_config(cfg: &QdiscConfig) -> Result<Self, String> {
        Ok(Self::from_params(&Params::new(cfg, PARAMS)?))
    }

    /// From parameters read through [`PARAMS`].
    pub fn from_params(p: &Params) -> Self {
        Codel::new(CodelParams::from_params(p), p.u32("limit"))
    }
}

impl<T> Qdisc<T> for Codel<T> {
    fn name(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, pkt: Packet<T>, _now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) {
        if (self.fifo.q.len() as u64) < self.limit as u64 {
            self.fifo.backlog += pkt.meta.len;
            self.fifo.q.push_back(pkt);
        } else {
            ev.drop(pkt, DropReason::QueueFull);
        }
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        codel_dequeue(&mut self.fifo, &self.params, &mut self.vars, &mut self.stats, now, ev)
    }

    fn backlog_bytes(&self) -> u64 {
        self.fifo.backlog as u64
    }

    fn backlog_pkts(&self) -> usize {
        self.fifo.q.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{Ecn, PacketMeta};

    /// One codel time unit in ns: stepping by it makes every codel time observable.
    const TICK: Nanos = 1 << CODEL_SHIFT;

    fn pkt(len: u32, at: Nanos, ecn: Ecn, id: u64) -> Packet<u64> {
        Packet { meta: PacketMeta { len, enqueued_at: at, ecn, ..Default::default() }, data: id }
    }

    /// Prefill `n` packets at t=0, then at every tick k enqueue one packet and
    /// dequeue one, until tick `until`. Returns (drop ticks, mark ticks).
    fn standing_queue(q: &mut Codel<u64>, n: u64, until: u64, ecn: Ecn) -> (Vec<u64>, Vec<u64>) {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for i in 0..n {
            q.enqueue(pkt(1500, 0, ecn, i), 0, &mut rng, &mut ev);
        }
        let (mut drops, mut marks) = (Vec::new(), Vec::new());
        for k in 1..=until {
            let now = k * TICK;
            q.enqueue(pkt(1500, now, ecn, n + k), now, &mut rng, &mut ev);
            let before_marks = ev.marks;
            assert!(q.dequeue(now, &mut rng, &mut ev).is_some());
            for _ in ev.drops.drain(..) {
                drops.push(k);
            }
            if ev.marks > before_marks {
                marks.push(k);
            }
        }
        (drops, marks)
    }

    #[test]
    fn defaults_are_the_kernel_ms2time_values() {
        let p = CodelParams::default();
        assert_eq!(p.target, 4882);
        assert_eq!(p.interval, 97656);
    }

    #[test]
    fn newton_steps_give_the_kernels_reciprocal_square_roots_for_count_2_to_6() {
        // Hand-computed with the kernel's integer formula (Q0.32 inside, Q0.16 kept).
        let mut v = CodelVars { count: 1, rec_inv_sqrt: 0xFFFF, ..Default::default() };
        let mut got = Vec::new();
        for n in 2..=6 {
            v.count = n;
            newton_step(&mut v);
            got.push(v.rec_inv_sqrt);
        }
        assert_eq!(got, vec![32769, 36864, 31968, 28935, 26481]);
    }

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count_in_fixed_point() {
        // 97656 * 0xFFFF0000 >> 32 = 97654; then the gaps for rec_inv_sqrt of counts 2..5.
        assert_eq!(control_law(1000, 97656, 0xFFFF), 1000 + 97654);
        assert_eq!(control_law(0, 97656, 32769), 48829);
        assert_eq!(control_law(0, 97656, 36864), 54931);
        assert_eq!(control_law(0, 97656, 31968), 47635);
        assert_eq!(control_law(0, 97656, 28935), 43116);
    }

    #[test]
    fn a_standing_queue_is_dropped_at_the_kernels_control_law_times() {
        // Prefilled packets (enqueued at 0) leave at tick k with sojourn k:
        // above target from k = 4882, so first_above_time = 4882 + 97656 =
        // 102538 and the first drop is at the first tick after it, 102539.
        // Then gaps of interval/sqrt(n) for n = 1..5: 97654, 48829, 54931,
        // 47635, 43116 units.
        let mut q = Codel::new(CodelParams::default(), 100_000);
        let (drops, marks) = standing_queue(&mut q, 8000, 360_000, Ecn::NotEct);
        assert_eq!(drops, vec![102539, 200193, 249022, 303953, 351588]);
        assert!(marks.is_empty());
        assert_eq!(q.vars.count, 5);
        assert!(q.vars.dropping);
        assert_eq!(q.stats.drop_count, 5);
        assert_eq!(q.stats.maxpacket, 1500);
    }

    #[test]
    fn nothing_is_dropped_below_target_nor_in_the_first_interval_above_it() {
        // A queue of 4000 packets: sojourn settles at 4000 units < target 4882.
        let mut q = Codel::new(CodelParams::default(), 100_000);
        let (drops, _) = standing_queue(&mut q, 4000, 300_000, Ecn::NotEct);
        assert!(drops.is_empty());
        assert_eq!(q.vars.first_above_time, 0);
        // Above target from tick 4882 on, but only an interval later may it drop.
        let mut q = Codel::new(CodelParams::default(), 100_000);
        let (drops, _) = standing_queue(&mut q, 8000, 102_538, Ecn::NotEct);
        assert!(drops.is_empty());
        assert_eq!(q.vars.first_above_time, 102_538);
    }

    #[test]
    fn a_backlog_of_one_mtu_is_never_dropped_however_old() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = Codel::new(CodelParams::default(), 1000);
        // One packet alone, dequeued after 1 s: backlog after removal is 0 <= mtu.
        for i in 0..50u64 {
            q.enqueue(pkt(1500, i * 1_000_000_000, Ecn::NotEct, i), i * 1_000_000_000, &mut rng, &mut ev);
            assert!(q.dequeue(i * 1_000_000_000 + 999_000_000, &mut rng, &mut ev).is_some());
        }
        assert!(ev.drops.is_empty());
    }

    #[test]
    fn with_ecn_ect_packets_are_marked_at_the_drop_times_and_none_dropped() {
        let p = CodelParams { ecn: true, ..Default::default() };
        let mut q = Codel::new(p, 100_000);
        let (drops, marks) = standing_queue(&mut q, 8000, 360_000, Ecn::Ect0);
        assert!(drops.is_empty());
        // Marking does not shrink the queue, so sojourn stays 8000 units
        // and the marks follow the same control-law schedule.
        assert_eq!(marks, vec![102539, 200193, 249022, 303953, 351588]);
        assert_eq!(q.stats.ecn_mark, 5);
    }

    #[test]
    fn with_ecn_not_ect_packets_are_still_dropped() {
        let p = CodelParams { ecn: true, ..Default::default() };
        let mut q = Codel::new(p, 100_000);
        let (drops, marks) = standing_queue(&mut q, 8000, 200_193, Ecn::NotEct);
        assert_eq!(drops, vec![102539, 200193]);
        assert!(marks.is_empty());
    }

    #[test]
    fn re_entering_soon_after_dropping_resumes_at_count_minus_lastcount() {
        let mut v = CodelVars { count: 7, lastcount: 2, drop_next: 1000, rec_inv_sqrt: 20000, ..Default::default() };
        // Emulate the entry branch: delta = 5 > 1 and now - drop_next < 16 intervals.
        let p = CodelParams::default();
        let mut q = CodelFifo { q: VecDeque::new(), backlog: 0 };
        for i in 0..10u64 {
            q.q.push_back(pkt(1500, 0, Ecn::NotEct, i));
            q.backlog += 1500;
        }
        v.first_above_time = 1; // above target long ago: OK to drop now
        let mut s = CodelStats::default();
        let mut ev = Events::default();
        let now_units: u32 = 50_000;
        let out = codel_dequeue(&mut q, &p, &mut v, &mut s, (now_units as u64) << CODEL_SHIFT, &mut ev);
        assert!(out.is_some());
        assert_eq!(ev.drops.len(), 1);
        assert!(v.dropping);
        assert_eq!(v.count, 5);
        assert_eq!(v.lastcount, 5);
        // Without hysteresis (last drop > 16 intervals ago) count restarts at 1.
        let mut v2 = CodelVars { count: 7, lastcount: 2, drop_next: 1000, first_above_time: 1, ..Default::default() };
        let far = 1000 + 16 * p.interval + 1;
        codel_dequeue(&mut q, &p, &mut v2, &mut s, (far as u64) << CODEL_SHIFT, &mut ev);
        assert_eq!(v2.count, 1);
        assert_eq!(v2.rec_inv_sqrt, 0xFFFF);
        assert_eq!(v2.drop_next, far + 97654);
    }

    #[test]
    fn ce_threshold_marks_every_ect_packet_whose_sojourn_exceeds_it() {
        let p = CodelParams::from_ns(5_000_000, 100_000_000, Some(1_000_000), DEFAULT_MTU, false);
        let mut q: Codel<u64> = Codel::new(p, 1000);
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        q.enqueue(pkt(1500, 0, Ecn::Ect1, 1), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1500, 0, Ecn::NotEct, 2), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1500, 0, Ecn::Ect0, 3), 0, &mut rng, &mut ev);
        // 0.5 ms: below the 1 ms threshold (976 units).
        assert_eq!(q.dequeue(500_000, &mut rng, &mut ev).unwrap().meta.ecn, Ecn::Ect1);
        assert_eq!(q.dequeue(2_000_000, &mut rng, &mut ev).unwrap().meta.ecn, Ecn::NotEct);
        assert_eq!(q.dequeue(2_000_000, &mut rng, &mut ev).unwrap().meta.ecn, Ecn::Ce);
        assert_eq!(ev.marks, 1);
        assert_eq!(q.stats.ce_mark, 1);
    }

    #[test]
    fn the_packet_limit_tail_drops() {
        let mut q: Codel<u64> = Codel::new(CodelParams::default(), 2);
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for i in 0..3 {
            q.enqueue(pkt(100, 0, Ecn::NotEct, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].reason, DropReason::QueueFull);
        assert_eq!(ev.drops[0].pkt.data, 2);
        assert_eq!(q.backlog_bytes(), 200);
    }

    #[test]
    fn config_errors_name_the_offending_key() {
        let cfg = |k: &str, v: f64| QdiscConfig { kind: "codel".into(), params: vec![(k.into(), v)], ..Default::default() };
        let e = Codel::<u64>::from_config(&cfg("targte", 1e6)).unwrap_err();
        assert!(e.starts_with("qdisc_params.targte: unknown parameter of codel"), "{e}");
        let e = Codel::<u64>::from_config(&cfg("ecn", 2.0)).unwrap_err();
        assert!(e.starts_with("qdisc_params.ecn:"), "{e}");
        let e = Codel::<u64>::from_config(&cfg("limit", 0.0)).unwrap_err();
        assert!(e.starts_with("qdisc_params.limit:"), "{e}");
        let q = Codel::<u64>::from_config(&cfg("interval", 50e6)).unwrap();
        assert_eq!((q.params.interval, q.params.target, q.limit, q.params.ecn), (48828, 4882, 1000, false));
    }
}
