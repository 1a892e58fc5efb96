//! PIE, the Proportional Integral controller Enhanced.
//!
//! Sources: RFC 8033 (Pan et al., 2017) and Linux v6.x `net/sched/sch_pie.c`
//! with `include/net/pie.h` (the algorithm, shared with `sch_fq_pie.c`).
//! Linux first: the arithmetic below is the kernel's fixed point.
//!
//! # Model in a nutshell
//! Every `tupdate` (15 ms) a PI controller updates a drop probability from
//! the queueing delay `qdelay`:
//! `p += alpha * (qdelay - target) + beta * (qdelay - qdelay_old)`.
//! On enqueue a packet is dropped (or CE-marked) with probability `p`.
//! `qdelay` is the sojourn of the last dequeued packet (Linux default,
//! `dq_rate_estimator` 0), or backlog / drain rate by Little's law
//! (`dq_rate_estimator` 1, RFC 8033's original, measuring the drain rate
//! over 16 KB (`QUEUE_THRESHOLD`) dequeue cycles).
//!
//! # States and rules
//! - *Burst allowance*: `burst_time` starts at 150 ms and shrinks by the
//!   time between dequeues; no early drop while it is positive. It is
//!   re-armed (all variables reset, `pie_vars_init`) when at an update both
//!   `qdelay` and `qdelay_old` are below target/2 and `p` is 0.
//! - No early drop when `qdelay < target/2` and `p < 20%`, nor when the
//!   backlog is below 2 MTU (like RED's min_th).
//! - *Auto-scaling* (RFC 8033 §5.2): alpha and beta are halved when
//!   `p < 10%`, then divided by 4 for each further decade below 1%, 0.1%,
//!   ... down to 0.0001% (so they are 1/2048 of the nominal below 1e-6).
//! - Above 10%, one update raises `p` by at most 2%; a `qdelay` above
//!   250 ms adds 2% more. `p` decays by 1/64 per update when `qdelay`
//!   and `qdelay_old` are both 0.
//! - *De-randomisation* (RFC 8033 §5.1, in Linux since v5.7 as `accu_prob`):
//!   `p` accumulates per packet; no drop while the sum is below 0.85, a
//!   certain drop once it reaches 8.5, a random one in between; the sum
//!   resets on every drop. (It *is* in Linux; we follow it.)
//! - ECN: an ECT packet chosen for dropping is CE-marked instead while
//!   `p <= 10%`; above that it is dropped. The queue tail-drops beyond `limit`.
//!
//! # Arithmetic (kept bit-exact with the kernel)
//! - Times are psched ticks of 64 ns (`PSCHED_SHIFT` 6): target 15 ms =
//!   234375 ticks, 250 ms = 3906250, burst 150 ms = 2343750.
//! - Probabilities are u64 with `MAX_PROB = 2^56 - 1` as 1.0.
//! - alpha and beta are given in 1/16 units (alpha 2 = 1/8, beta 20 = 1.25)
//!   and scaled by `MAX_PROB / PSCHED_TICKS_PER_SEC`, so that
//!   `alpha * delay_in_ticks` is a probability: alpha = 1/8 per second of
//!   delay error, beta = 1.25 per second of delay change.
//!
//! # The timer, done lazily
//! The kernel runs `pie_calculate_probability` from a timer: first HZ/2
//! (500 ms) after `pie_init`, then every `tupdate`. Our [`Qdisc`] trait has
//! no timer, so every enqueue and dequeue first runs the updates whose time
//! has come (`<= now`), in order, each with the current backlog. Between two
//! packet events the backlog and `qdelay` cannot change, so this gives the
//! very values the kernel's timer would, at the resolution of packet events
//! (the only difference: an update due at exactly the instant of an event
//! runs before it). The qdisc is taken to be created at time 0 (the run's
//! origin), so updates fall at 500 ms + k·tupdate — or, with the `running`
//! parameter, created long before it with its queue empty (what a path's PIE
//! that has run for days is when a measurement or a user's flow comes), so
//! they fall at k·tupdate from the first: without it a run's first 500 ms
//! carry no probability at all, and a slow start meets only the packet limit
//! (4 CUBIC flows at 11.3 Mbit/s queued 56-59 ms at the peak with it created
//! at their start, 42 ms with it running a second before: docs/advise.md).
//! Once an update leaves the
//! variables unchanged (idle queue) the remaining ones are skipped, since
//! they would change nothing either. [`Qdisc::next_wakeup`] stays None: PIE
//! is work-conserving.
//!
//! # Constants (Linux `pie_params_init`, `pie_vars_init`)
//! - target 15 ms, tupdate 15 ms (the kernel rounds it to jiffies: 16 ms at
//!   HZ=250, as on this machine's kernel; we keep the RFC's 15 ms),
//!   limit 1000 packets, alpha 2 (1/8), beta 20 (1 + 1/4), ecn off,
//!   bytemode off, dq_rate_estimator off.
//! - `mtu` 1514 B (`psched_mtu` of Ethernet; our lengths are IP bytes).
//! - `QUEUE_THRESHOLD` 16384 B, `PIE_SCALE` 8 (rate estimator fixed point).

use super::params::{MAX_TC_TIME_NS, U32_MAX};
use super::flow_hash::inet_ecn_set_ce;
use super::{DropReason, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::{Rng, RngExt};
use crate::time::Nanos;
use std::collections::VecDeque;

/// Scenario doc of `pie`.
pub const DOC: &str = "PIE AQM on one FIFO (Linux sch_pie, RFC 8033); its own packet `limit`, the direction's `buffer` is not used";

/// `qdisc_params` of `pie`, with Linux's defaults (`pie_params_init`, sch_pie's
/// `limit` 1000) and the ranges `pie_change` accepts (alpha, beta 0..32).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::count("limit", 1000.0, 1.0, U32_MAX, "packets the queue holds; tail drop beyond (tc `limit`)"),
    ParamSpec::time("target", 15e6, 1000.0, MAX_TC_TIME_NS, "target queueing delay (tc `target`)"),
    ParamSpec::time("tupdate", 15e6, 1000.0, MAX_TC_TIME_NS, "period of the drop-probability update (tc `tupdate`)"),
    ParamSpec::count("alpha", 2.0, 0.0, 32.0, "integral gain in 1/16 units, 0..32 (tc `alpha`; 2 = 1/8)"),
    ParamSpec::count("beta", 20.0, 0.0, 32.0, "proportional gain in 1/16 units, 0..32 (tc `beta`; 20 = 1.25)"),
    ParamSpec::flag("ecn", false, "CE-mark ECT packets instead of dropping while the probability is at most 10% (tc `ecn`)"),
    ParamSpec::flag("bytemode", false, "scale the drop probability by packet size / MTU (tc `bytemode`)"),
    ParamSpec::flag("dq_rate_estimator", false, "queue delay from backlog / measured drain rate instead of packet timestamps (tc `dq_rate_estimator`)"),
    ParamSpec::flag("running", false, RUNNING_DOC),
];

/// `running`: the qdisc ran before the run's origin (its timer's phase, module doc "The timer, done lazily").
pub const RUNNING_DOC: &str = "the qdisc ran before the run began (an ISP's PIE up for days): its probability update comes every tupdate from the start, not first HZ/2 after it was created, as tc's new qdisc's does";

/// psched ticks are 64 ns (`PSCHED_SHIFT`).
pub const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`.
pub const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// Probability 1.0 (`MAX_PROB = U64_MAX >> BITS_PER_BYTE`).
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// No dequeue timestamp yet (`DTIME_INVALID`).
pub const DTIME_INVALID: u64 = u64::MAX;
/// Backlog (bytes) needed to start a drain-rate measurement (`QUEUE_THRESHOLD`).
pub const QUEUE_THRESHOLD: u64 = 16384;
/// No drain-rate measurement under way (`DQCOUNT_INVALID` = -1 in a u64).
pub const DQCOUNT_INVALID: u64 = u64::MAX;
/// Fixed-point shift of the drain rate (`PIE_SCALE`).
pub const PIE_SCALE: u32 = 8;
/// Burst allowance (150 ms) in ticks.
pub const BURST_TICKS: u64 = 150_000_000 >> PSCHED_SHIFT;
/// Delay above which the probability rises by 2% more per update (250 ms).
pub const HIGH_DELAY_TICKS: u64 = 250_000_000 >> PSCHED_SHIFT;
/// Delay from qdisc creation to the first update (`HZ / 2`).
pub const FIRST_UPDATE_NS: Nanos = 500_000_000;

/// psched ticks of a time in ns (`PSCHED_NS2TICKS`).
#[inline]
pub fn ticks(ns: Nanos) -> u64 {
    ns >> PSCHED_SHIFT
}

/// Linux `struct pie_params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieParams {
    /// Target queueing delay in psched ticks.
    pub target: u64,
    /// Period of the probability update, in ns.
    pub tupdate: Nanos,
    /// Packets the queue holds at most.
    pub limit: u32,
    /// Integral gain, 1/16 units.
    pub alpha: u32,
    /// Proportional gain, 1/16 units.
    pub beta: u32,
    /// CE-mark ECT packets instead of dropping (up to the ECN probability cap).
    pub ecn: bool,
    /// Scale the probability by packet size / mtu.
    pub bytemode: bool,
    /// Delay by Little's law from a measured drain rate instead of timestamps.
    pub dq_rate_estimator: bool,
    /// `psched_mtu()`: bytes of one full packet.
    pub mtu: u32,
    /// The qdisc ran before the origin: the first update at `tupdate`, not [`FIRST_UPDATE_NS`] ([`RUNNING_DOC`]).
    pub running: bool,
}

impl Default for PieParams {
    /// `pie_params_init`: the defaults of [`PARAMS`].
    fn default() -> Self {
        PieParams::from_params(&Params::defaults(PARAMS))
    }
}

impl PieParams {
    /// From a qdisc's PIE parameters (pie's and fq_pie's tables both have
    /// them); `mtu` is Ethernet's `psched_mtu`, 1514 B.
    pub fn from_params(p: &Params) -> Self {
        PieParams {
            target: ticks(p.u64("target")),
            tupdate: p.u64("tupdate"),
            limit: p.u32("limit"),
            alpha: p.u32("alpha"),
            beta: p.u32("beta"),
            ecn: p.flag("ecn"),
            bytemode: p.flag("bytemode"),
            dq_rate_estimator: p.flag("dq_rate_estimator"),
            mtu: 1514,
            running: p.flag("running"),
        }
    }

    /// The update timer of a qdisc with these parameters created at the origin: its first update
    /// [`FIRST_UPDATE_NS`] (`HZ / 2`) after it, or `tupdate` where it was `running` before.
    pub fn timer(&self) -> LazyTimer {
        LazyTimer { next: if self.running { self.tupdate.max(1) } else { FIRST_UPDATE_NS } }
    }
}

/// Linux `struct pie_vars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieVars {
    /// Current queueing delay (ticks).
    pub qdelay: u64,
    /// Queueing delay at the previous update (ticks).
    pub qdelay_old: u64,
    /// Remaining burst allowance (ticks).
    pub burst_time: u64,
    /// Time of the last dequeue, or of the start of a rate measurement (ticks).
    pub dq_tstamp: u64,
    /// Drop probability, `MAX_PROB` = 1.
    pub prob: u64,
    /// Probability accumulated since the last drop (de-randomisation).
    pub accu_prob: u64,
    /// Bytes dequeued in the current rate measurement, or `DQCOUNT_INVALID`.
    pub dq_count: u64,
    /// Average drain rate, bytes per tick << `PIE_SCALE`.
    pub avg_dq_rate: u32,
    /// Backlog at the last update (bytes).
    pub backlog_old: u32,
}

impl Default for PieVars {
    /// `pie_vars_init` on zeroed memory.
    fn default() -> Self {
        let mut v = PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            dq_count: 0,
            avg_dq_rate: 0,
            backlog_old: 0,
        };
        vars_init(&mut v);
        v
    }
}

/// Linux `struct pie_stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PieStats {
    /// Packets accepted.
    pub packets_in: u64,
    /// Packets dropped (early drops and tail drops).
    pub dropped: u64,
    /// Packets tail-dropped at the limit.
    pub overlimit: u64,
    /// Packets CE-marked instead of dropped.
    pub ecn_mark: u64,
    /// Largest queue length seen at enqueue (packets).
    pub maxq: u32,
}

/// `pie_vars_init`: re-arm the burst allowance and the rate measurement
/// (`qdelay`, `qdelay_old`, `prob`, `backlog_old` are kept).
pub fn vars_init(v: &mut PieVars) {
    v.burst_time = BURST_TICKS;
    v.dq_tstamp = DTIME_INVALID;
    v.accu_prob = 0;
    v.dq_count = DQCOUNT_INVALID;
    v.avg_dq_rate = 0;
}

/// The arrival decision both PIE qdiscs make once the packet is within their
/// limits (`pie_qdisc_enqueue`, `fq_pie_qdisc_enqueue`): [`drop_early`]; an
/// ECT packet is CE-marked instead of dropped while the drop probability is
/// at most `mark_below` (PIE: `MAX_PROB / 10`; FQ-PIE: its `ecn_prob` %).
/// Counts what it did in `stats` and `ev`; gives the packet back to be
/// queued, or `None` when it was dropped (`accu_prob` restarts then).
pub fn admit<T>(
    p: &PieParams,
    v: &mut PieVars,
    stats: &mut PieStats,
    backlog: u32,
    mark_below: u64,
    mut pkt: Packet<T>,
    rng: &mut Rng,
    ev: &mut Events<T>,
) -> Option<Packet<T>> {
    let accept = if !drop_early(p, v, backlog, pkt.meta.len, rng) {
        true
    } else if p.ecn && v.prob <= mark_below && inet_ecn_set_ce(&mut pkt.meta) {
        // ECT and a low probability: mark instead of dropping.
        stats.ecn_mark += 1;
        ev.marks += 1;
        true
    } else {
        false
    };
    if !accept {
        stats.dropped += 1;
        v.accu_prob = 0;
        ev.drop(pkt, DropReason::Aqm);
        return None;
    }
    stats.packets_in += 1;
    Some(pkt)
}

/// `pie_drop_early`: should the arriving packet of `packet_size` bytes be
/// dropped (or marked), the queue holding `backlog` bytes?
pub fn drop_early(p: &PieParams, v: &mut PieVars, backlog: u32, packet_size: u32, rng: &mut Rng) -> bool {
    // Burst allowance left: no early drop.
    if v.burst_time > 0 {
        return false;
    }
    // Delay below half the target and a low probability: no early drop.
    if v.qdelay < p.target / 2 && v.prob < MAX_PROB / 5 {
        return false;
    }
    // Fewer than 2 full packets queued: no early drop.
    if (backlog as u64) < 2 * p.mtu as u64 {
        return false;
    }
    let local_prob = if p.bytemode && packet_size <= p.mtu {
        packet_size as u64 * (v.prob / p.mtu as u64)
    } else {
        v.prob
    };
    if local_prob == 0 {
        v.accu_prob = 0;
    } else {
        v.accu_prob = v.accu_prob.wrapping_add(local_prob);
    }
    if v.accu_prob < (MAX_PROB / 100) * 85 {
        return false;
    }
    if v.accu_prob >= (MAX_PROB / 2) * 17 {
        return true;
    }
    let rnd: u64 = rng.gen();
    if (rnd >> 8) < local_prob {
        v.accu_prob = 0;
        return true;
    }
    false
}

/// `pie_process_dequeue`: update the delay (timestamp mode) or the drain
/// rate (estimator mode) and the burst allowance for a packet of `len` bytes
/// enqueued at `enqueued_at` and dequeued at `now`, leaving `backlog` bytes.
pub fn process_dequeue(p: &PieParams, v: &mut PieVars, enqueued_at: Nanos, len: u32, backlog: u32, now: Nanos) {
    let now_t = ticks(now);
    let dtime: u32;
    if !p.dq_rate_estimator {
        v.qdelay = now_t.wrapping_sub(ticks(enqueued_at));
        let mut d = 0u32;
        if v.dq_tstamp != DTIME_INVALID {
            d = now_t.wrapping_sub(v.dq_tstamp) as u32;
        }
        v.dq_tstamp = now_t;
        if backlog == 0 {
            v.qdelay = 0;
        }
        if d == 0 {
            return;
        }
        dtime = d;
    } else {
        // Enough backlog and no measurement under way: start one.
        if backlog as u64 >= QUEUE_THRESHOLD && v.dq_count == DQCOUNT_INVALID {
            v.dq_tstamp = now_t;
            v.dq_count = 0;
        }
        if v.dq_count == DQCOUNT_INVALID {
            return;
        }
        v.dq_count = v.dq_count.wrapping_add(len as u64);
        if v.dq_count < QUEUE_THRESHOLD {
            return;
        }
        let count = (v.dq_count as u32).wrapping_shl(PIE_SCALE);
        let d = now_t.wrapping_sub(v.dq_tstamp) as u32;
        if d == 0 {
            return;
        }
        let count = count / d;
        v.avg_dq_rate = if v.avg_dq_rate == 0 { count } else { (v.avg_dq_rate - (v.avg_dq_rate >> 3)) + (count >> 3) };
        // Below the threshold: keep the last rate; else measure again.
        if (backlog as u64) < QUEUE_THRESHOLD {
            v.dq_count = DQCOUNT_INVALID;
        } else {
            v.dq_count = 0;
            v.dq_tstamp = now_t;
        }
        dtime = d;
    }
    // Burst allowance reduction.
    v.burst_time = v.burst_time.saturating_sub(dtime as u64);
}

/// `pie_calculate_probability`: one periodic update with `backlog` bytes queued.
pub fn calculate_probability(p: &PieParams, v: &mut PieVars, backlog: u32) {
    let qdelay: u64;
    let qdelay_old: u64;
    if p.dq_rate_estimator {
        qdelay_old = v.qdelay;
        v.qdelay_old = v.qdelay;
        qdelay = if v.avg_dq_rate > 0 { (backlog.wrapping_shl(PIE_SCALE) / v.avg_dq_rate) as u64 } else { 0 };
    } else {
        qdelay = v.qdelay;
        qdelay_old = v.qdelay_old;
    }
    // Zero delay with a backlog: too small to judge, no decay this round.
    let mut update_prob = !(qdelay == 0 && backlog != 0);

    // alpha/beta in 1/16 units, scaled to probability per tick of delay.
    let mut alpha = (p.alpha as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
    let mut beta = (p.beta as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
    // Auto-scaling by the magnitude of prob (RFC 8033 §5.2).
    if v.prob < MAX_PROB / 10 {
        alpha >>= 1;
        beta >>= 1;
        let mut power: u64 = 100;
        while v.prob < MAX_PROB / power && power <= 1_000_000 {
            alpha >>= 2;
            beta >>= 2;
            power *= 10;
        }
    }
    // Signed arithmetic in wrapping u64, as the kernel's s64/u64 mix does.
    let mut delta: i64 = alpha.wrapping_mul(qdelay.wrapping_sub(p.target)) as i64;
    delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);
    let oldprob = v.prob;
    // Steps of at most 2% above 10%.
    if delta > (MAX_PROB / 50) as i64 && v.prob >= MAX_PROB / 10 {
        delta = ((MAX_PROB / 100) * 2) as i64;
    }
    // Non-linear boost for very high delay.
    if qdelay > HIGH_DELAY_TICKS {
        delta = delta.wrapping_add((MAX_PROB / 50) as i64);
    }
    v.prob = v.prob.wrapping_add(delta as u64);
    if delta > 0 {
        if v.prob < oldprob {
            // overflow: saturate, and skip the decay below
            v.prob = MAX_PROB;
            update_prob = false;
        }
    } else if v.prob > oldprob {
        // underflow
        v.prob = 0;
    }
    // Two updates in a row with no delay: decay to 98.4%.
    if qdelay == 0 && qdelay_old == 0 && update_prob {
        v.prob -= v.prob / 64;
    }
    v.qdelay = qdelay;
    v.backlog_old = backlog;
    // Delay low twice and prob 0: restart (burst allowance re-armed).
    if v.qdelay < p.target / 2
        && v.qdelay_old < p.target / 2
        && v.prob == 0
        && (!p.dq_rate_estimator || v.avg_dq_rate > 0)
    {
        vars_init(v);
    }
    if !p.dq_rate_estimator {
        v.qdelay_old = qdelay;
    }
}

/// The kernel's `adapt_timer`, run lazily (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LazyTimer {
    /// When the next update is due (ns).
    pub next: Nanos,
}

impl Default for LazyTimer {
    fn default() -> Self {
        LazyTimer { next: FIRST_UPDATE_NS }
    }
}

impl LazyTimer {
    /// Run `update` for every period due at or before `now`; `update`
    /// returns whether it changed anything (if not, the rest are skipped).
    pub fn run(&mut self, now: Nanos, period: Nanos, mut update: impl FnMut() -> bool) {
        let period = period.max(1);
        while self.next <= now {
            let changed = update();
            self.next += period;
            if !changed && self.next <= now {
                self.next += ((now - self.next) / period + 1) * period;
            }
        }
    }
}

/// `sch_pie`: one FIFO under PIE.
#[derive(Debug)]
pub struct Pie<T> {
    pub params: PieParams,
    pub vars: PieVars,
    pub stats: PieStats,
    timer: LazyTimer,
    q: VecDeque<Packet<T>>,
    backlog: u32,
}

impl<T> Pie<T> {
    pub fn new(params: PieParams) -> Self {
        Pie { params, vars: PieVars::default(), stats: PieStats::default(), timer: params.timer(), q: VecDeque::new(), backlog: 0 }
    }

    /// From the scenario's `qdisc_params` (see [`PARAMS`]).
    pub fn from_config(cfg: &QdiscConfig) -> Result<Self, String> {
        Ok(Self::new(PieParams::from_params(&Params::new(cfg, PARAMS)?)))
    }

    fn run_timer(&mut self, now: Nanos) {
        let (p, v, backlog) = (&self.params, &mut self.vars, self.backlog);
        self.timer.run(now, p.tupdate, || {
            let before = *v;
            calculate_probability(p, v, backlog);
            *v != before
        });
    }
}

impl<T> Qdisc<T> for Pie<T> {
    fn name(&self) -> &'static str {
        "pie"
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        self.run_timer(now);
        if self.q.len() as u64 >= self.params.limit as u64 {
            self.stats.overlimit += 1;
            self.stats.dropped += 1;
            self.vars.accu_prob = 0;
            ev.drop(pkt, DropReason::QueueFull);
            return;
        }
        let Some(pkt) = admit(&self.params, &mut self.vars, &mut self.stats, self.backlog, MAX_PROB / 10, pkt, rng, ev) else {
            return;
        };
        self.stats.maxq = self.stats.maxq.max(self.q.len() as u32);
        self.backlog += pkt.meta.len;
        self.q.push_back(pkt);
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, _ev: &mut Events<T>) -> Option<Packet<T>> {
        self.run_timer(now);
        let p = self.q.pop_front()?;
        self.backlog -= p.meta.len;
        process_dequeue(&self.params, &mut self.vars, p.meta.enqueued_at, p.meta.len, self.backlog, now);
        Some(p)
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog as u64
    }

    fn backlog_pkts(&self) -> usize {
        self.q.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{Ecn, PacketMeta};

    fn pkt(len: u32, at: Nanos, ecn: Ecn) -> Packet<u64> {
        Packet { meta: PacketMeta { len, enqueued_at: at, ecn, ..Default::default() }, data: 0 }
    }

    fn vars(prob: u64, qdelay_ms: u64, qdelay_old_ms: u64) -> PieVars {
        PieVars { prob, qdelay: ticks(qdelay_ms * 1_000_000), qdelay_old: ticks(qdelay_old_ms * 1_000_000), ..Default::default() }
    }

    #[test]
    fn defaults_are_the_kernels_fixed_point_values() {
        let p = PieParams::default();
        assert_eq!(p.target, 234_375);
        assert_eq!(BURST_TICKS, 2_343_750);
        assert_eq!(MAX_PROB, 72_057_594_037_927_935);
        assert_eq!(PSCHED_TICKS_PER_SEC, 15_625_000);
    }

    // Expected values hand-computed with the kernel's integer formulas
    // (alpha = (2 * (MAX_PROB / 15625000)) >> 4 = 576460752, beta = 5764607522).

    #[test]
    fn from_zero_probability_alpha_and_beta_are_scaled_down_1024_times() {
        // prob 0 < 1e-6: >> 1 then >> 2 five times: alpha 281474, beta 2814749.
        // qdelay 20 ms (312500 ticks), qdelay_old 0:
        // 281474 * (312500 - 234375) + 2814749 * 312500 = 901599218750.
        let mut v = vars(0, 20, 0);
        calculate_probability(&PieParams::default(), &mut v, 30_000);
        assert_eq!(v.prob, 901_599_218_750);
        assert_eq!(v.qdelay_old, 312_500);
    }

    #[test]
    fn at_half_a_percent_the_gains_are_scaled_by_one_eighth() {
        // prob = MAX_PROB/200: >> 1, then one >> 2 (below 1%, not below 0.1%).
        // delta = (576460752 >> 3) * 78125 + 0 = 5629499531250.
        let mut v = vars(MAX_PROB / 200, 20, 20);
        calculate_probability(&PieParams::default(), &mut v, 30_000);
        assert_eq!(v.prob, MAX_PROB / 200 + 5_629_499_531_250);
        assert_eq!(v.prob, 365_917_469_720_889);
    }

    #[test]
    fn above_ten_percent_the_gains_are_nominal() {
        // prob 20%, qdelay 20 ms, old 10 ms:
        // 576460752 * 78125 + 5764607522 * 156250 = 945755921562500.
        let mut v = vars(MAX_PROB / 5, 20, 10);
        calculate_probability(&PieParams::default(), &mut v, 30_000);
        assert_eq!(v.prob, 15_357_274_729_148_087);
    }

    #[test]
    fn above_ten_percent_a_step_is_capped_at_two_percent_plus_two_for_delay_over_250ms() {
        let mut v = vars(MAX_PROB / 5, 300, 0);
        calculate_probability(&PieParams::default(), &mut v, 30_000);
        assert_eq!(v.prob, MAX_PROB / 5 + 2 * ((MAX_PROB / 100) * 2));
        assert_eq!(v.prob, 17_293_822_569_102_703);
    }

    #[test]
    fn an_empty_queue_with_no_delay_decays_the_probability_by_one_64th() {
        // delta = -576460752 * 234375; then prob -= prob / 64.
        let mut v = vars(MAX_PROB / 5, 0, 0);
        calculate_probability(&PieParams::default(), &mut v, 0);
        assert_eq!(v.prob, 14_053_341_899_791_281);
    }

    #[test]
    fn low_delay_twice_with_zero_probability_rearms_the_burst_allowance() {
        let mut v = vars(0, 1, 1);
        v.burst_time = 0;
        calculate_probability(&PieParams::default(), &mut v, 3000);
        assert_eq!(v.prob, 0);
        assert_eq!(v.burst_time, BURST_TICKS);
    }

    #[test]
    fn early_drop_is_off_during_burst_at_low_delay_or_below_two_mtus() {
        let p = PieParams::default();
        let mut rng = crate::rng::stream(1, 0);
        let mut v = vars(MAX_PROB, 30, 30); // certain drop once allowed
        assert!(!drop_early(&p, &mut v, 100_000, 1500, &mut rng), "burst allowance left");
        v.burst_time = 0;
        assert!(!drop_early(&p, &mut v, 3027, 1500, &mut rng), "backlog below 2 * 1514");
        let mut low = vars(MAX_PROB / 5 - 1, 7, 7); // 7 ms < 7.5 ms and prob < 20%
        low.burst_time = 0;
        assert!(!drop_early(&p, &mut low, 100_000, 1500, &mut rng));
        assert_eq!(low.accu_prob, 0);
        // 100% probability accumulates past 8.5 in 9 packets, but below
        // 0.85 never: the first packet is already above, so it is drawn
        // (and rnd >> 8 < MAX_PROB always).
        assert!(drop_early(&p, &mut v, 100_000, 1500, &mut rng));
    }

    #[test]
    fn derandomisation_never_drops_before_the_accumulated_probability_reaches_085() {
        let p = PieParams::default();
        let mut rng = crate::rng::stream(1, 0);
        let mut v = vars(MAX_PROB / 5, 30, 30); // 20%
        v.burst_time = 0;
        // 0.2, 0.4, 0.6, 0.8: no drop whatever the RNG says.
        for _ in 0..4 {
            assert!(!drop_early(&p, &mut v, 100_000, 1500, &mut rng));
        }
        assert_eq!(v.accu_prob, 4 * (MAX_PROB / 5));
        // From then on random drops, and certainly one by 8.5 accumulated.
        let mut n = 0;
        while !drop_early(&p, &mut v, 100_000, 1500, &mut rng) {
            n += 1;
            assert!(n < 40);
        }
        assert_eq!(v.accu_prob, 0);
    }

    /// Offer 2 packets per ms and drain 1 per ms from `start_ms` for
    /// `dur_ms`, after an idle-ish warm-up of 1 packet per ms. Returns the
    /// times (ms) of AQM drops and of marks.
    fn overload(q: &mut Pie<u64>, start_ms: u64, dur_ms: u64, ecn: Ecn) -> (Vec<u64>, Vec<u64>) {
        let mut rng = crate::rng::stream(3, 0);
        let mut ev = Events::default();
        let ms = 1_000_000;
        let (mut drops, mut marks) = (Vec::new(), Vec::new());
        for t in 0..start_ms + dur_ms {
            let now = t * ms;
            let n = if t < start_ms { 1 } else { 2 };
            for _ in 0..n {
                let m = ev.marks;
                q.enqueue(pkt(1500, now, ecn), now, &mut rng, &mut ev);
                if ev.marks > m {
                    marks.push(t);
                }
            }
            q.dequeue(now + ms / 2, &mut rng, &mut ev);
            for d in ev.drops.drain(..) {
                assert_eq!(d.reason, DropReason::Aqm);
                drops.push(t);
            }
        }
        (drops, marks)
    }

    #[test]
    fn no_early_drop_during_the_first_150_ms_of_congestion() {
        let mut q = Pie::new(PieParams { limit: 100_000, ..Default::default() });
        let (drops, _) = overload(&mut q, 1000, 3000, Ecn::NotEct);
        assert!(!drops.is_empty());
        // Congestion starts at 1000 ms; the allowance is 150 ms of dequeues.
        assert!(drops[0] >= 1150, "first drop at {} ms", drops[0]);
        // The queue grows by one packet per ms, so delay crosses target/2
        // (7.5 ms) after ~8 ms; the allowance then still holds ~140 ms.
        assert!(drops[0] < 1400, "first drop at {} ms", drops[0]);
    }

    #[test]
    fn the_first_update_is_500_ms_after_creation_then_every_tupdate() {
        let mut q: Pie<u64> = Pie::new(PieParams { limit: 100_000, ..Default::default() });
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for _ in 0..100 {
            q.enqueue(pkt(1500, 0, Ecn::NotEct), 0, &mut rng, &mut ev);
        }
        q.dequeue(400_000_000, &mut rng, &mut ev); // qdelay 400 ms
        q.dequeue(499_999_999, &mut rng, &mut ev);
        assert_eq!(q.vars.prob, 0);
        q.dequeue(500_000_000, &mut rng, &mut ev);
        let after_one = q.vars.prob;
        assert!(after_one > 0);
        assert_eq!(q.timer.next, 515_000_000);
        q.dequeue(530_000_000, &mut rng, &mut ev); // two more updates: 515, 530
        assert_eq!(q.timer.next, 545_000_000);
        assert!(q.vars.prob > after_one);
    }

    #[test]
    fn a_running_pie_updates_every_tupdate_from_the_start() {
        // the same queue as above on a qdisc that ran before the origin: its first update at tupdate (15 ms)
        let mut q: Pie<u64> = Pie::new(PieParams { limit: 100_000, running: true, ..Default::default() });
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for _ in 0..100 {
            q.enqueue(pkt(1500, 0, Ecn::NotEct), 0, &mut rng, &mut ev);
        }
        assert_eq!(q.timer.next, 15_000_000);
        q.dequeue(14_999_999, &mut rng, &mut ev);
        assert_eq!(q.vars.prob, 0);
        q.dequeue(15_000_000, &mut rng, &mut ev); // qdelay 15 ms at the target: the first update runs
        assert_eq!(q.timer.next, 30_000_000);
        q.dequeue(400_000_000, &mut rng, &mut ev); // qdelay 400 ms: updates at 30, 45, ... 390 ms
        assert!(q.vars.prob > 0 && q.timer.next == 405_000_000);
        // the scenario's table names it; fq_pie's too (its queues share the parameters)
        let cfg = |kind: &str| QdiscConfig { kind: kind.into(), params: vec![("running".into(), 1.0)], ..Default::default() };
        assert!(Pie::<u64>::from_config(&cfg("pie")).unwrap().params.running);
        assert_eq!(Pie::<u64>::from_config(&cfg("pie")).unwrap().timer.next, 15_000_000);
        assert!(!Pie::<u64>::from_config(&QdiscConfig { kind: "pie".into(), ..Default::default() }).unwrap().params.running);
        assert!(crate::qdisc::fq_pie::FqPie::<u64>::from_config(&cfg("fq_pie")).unwrap().params.running);
    }

    #[test]
    fn catching_up_the_updates_lazily_equals_running_them_one_by_one() {
        let p = PieParams::default();
        let mut a = vars(MAX_PROB / 50, 40, 30);
        let mut b = a;
        let mut t = LazyTimer::default();
        t.run(500_000_000 + 10 * 15_000_000, p.tupdate, || {
            let before = a;
            calculate_probability(&p, &mut a, 60_000);
            a != before
        });
        for _ in 0..11 {
            calculate_probability(&p, &mut b, 60_000);
        }
        assert_eq!(a, b);
        assert_eq!(t.next, 500_000_000 + 11 * 15_000_000);
    }

    #[test]
    fn with_ecn_ect_packets_are_marked_while_the_probability_is_at_most_10_percent() {
        let mut q = Pie::new(PieParams { limit: 100_000, ecn: true, ..Default::default() });
        let (drops, marks) = overload(&mut q, 1000, 1500, Ecn::Ect0);
        assert!(!marks.is_empty());
        // Marking does not relieve the queue: prob climbs past 10%, then ECT
        // packets are dropped too.
        assert!(q.vars.prob > MAX_PROB / 10);
        assert!(!drops.is_empty());
        assert!(drops[0] > marks[0]);
        assert_eq!(q.stats.ecn_mark, marks.len() as u64);
    }

    #[test]
    fn the_packet_limit_tail_drops_and_counts_overlimit() {
        let mut q: Pie<u64> = Pie::new(PieParams { limit: 2, ..Default::default() });
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for _ in 0..3 {
            q.enqueue(pkt(1500, 0, Ecn::NotEct), 0, &mut rng, &mut ev);
        }
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].reason, DropReason::QueueFull);
        assert_eq!((q.stats.overlimit, q.stats.dropped, q.stats.packets_in), (1, 1, 2));
    }

    #[test]
    fn the_rate_estimator_measures_the_drain_rate_over_16kb() {
        // Drain 1500 B every 120 us (100 Mbit/s). The first dequeue (backlog
        // >= 16384 B) starts the cycle; the 11th brings dq_count to 16500 >= 16384
        // after 1200 us = 18750 ticks: rate = (16500 << 8) / 18750 = 225.
        let p = PieParams { dq_rate_estimator: true, ..Default::default() };
        let mut v = PieVars::default();
        let mut backlog: u32 = 100 * 1500;
        let start = 1_000_000_000;
        process_dequeue(&p, &mut v, 0, 1500, backlog, start); // starts the cycle at `start`
        assert_eq!(v.dq_count, 1500);
        for k in 1..=10u64 {
            backlog -= 1500;
            process_dequeue(&p, &mut v, 0, 1500, backlog, start + k * 120_000);
        }
        assert_eq!(v.avg_dq_rate, 225);
        assert_eq!(v.dq_count, 0);
        // Little's law delay at the next update: (backlog << 8) / rate.
        calculate_probability(&p, &mut v, 30_000);
        assert_eq!(v.qdelay, (30_000u64 << 8) / 225);
    }

    #[test]
    fn config_errors_name_the_offending_key() {
        let cfg = |k: &str, v: f64| QdiscConfig { kind: "pie".into(), params: vec![(k.into(), v)], ..Default::default() };
        assert!(Pie::<u64>::from_config(&cfg("alpha", 33.0)).unwrap_err().starts_with("qdisc_params.alpha:"));
        assert!(Pie::<u64>::from_config(&cfg("tupdate", 0.0)).unwrap_err().starts_with("qdisc_params.tupdate:"));
        let q = Pie::<u64>::from_config(&cfg("ecn", 1.0)).unwrap();
        assert_eq!(q.params, PieParams { ecn: true, ..Default::default() });
    }
}
