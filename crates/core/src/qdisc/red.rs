//! RED, Random Early Detection.
//!
//! Sources: S. Floyd and V. Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", IEEE/ACM ToN 1993; Linux v6.x `include/net/red.h`
//! and `net/sched/sch_red.c` (the "divisionless" RED of the paper's Fig. 17);
//! iproute2 `tc/q_red.c` and `tc/tc_red.c` for the defaults and for the
//! derived constants (Wlog, Scell_log, the idle-damping table) that tc
//! computes and the kernel only receives. Adaptive RED: Floyd, Gummadi,
//! Shenker 2001, as in `red_adaptative_algo`. Gentle RED: Floyd 2000 — *not*
//! in Linux, an option here (off by default).
//!
//! # Model in a nutshell
//! At each arrival, an EWMA of the queue length in bytes,
//! `avg = (1 - W) avg + W backlog` with `W = 2^-Wlog`, is compared with two
//! thresholds: below `min` the packet passes; at or above `max` it is
//! dropped (or CE-marked with `ecn` and not `harddrop`); in between it is
//! dropped with `p_b = max_P (avg - min) / (max - min)`, spaced by Floyd's
//! count method: with `count` packets since the last drop, the drop comes
//! when `p_b * count >= R` for `R` uniform in `[0, 1)` drawn after each
//! drop, so inter-drop gaps are near-uniform in `[1, 1/p_b]` instead of
//! geometric. Beyond the average, the queue is a byte FIFO of `limit` bytes.
//!
//! # States
//! - *idle*: from the dequeue that found the queue empty (and from creation)
//!   until the next arrival, which then decays `avg` for the idle time
//!   instead of folding in the backlog: `avg >>= Stab[idle_us >> Scell_log]`
//!   or, where the table says 0, the linear `avg -= avg * idle_us >> Scell_log`
//!   (at most halving).
//! - *count*: -1 below `min` or after a forced drop, reset to 0 at each
//!   probabilistic drop, incremented by arrivals in between.
//!
//! # Arithmetic (kept bit-exact with the kernel)
//! `qavg` is in bytes << Wlog; `max_P` is Q0.32; `R = random_u32 / (max_P /
//! (max - min))` (the kernel's `reciprocal_divide` is an exact division);
//! the test is `((qavg - qth_min) >> Wlog) * count >= R`.
//!
//! # Defaults and constants (tc-red: `limit` and `avpkt` are mandatory there)
//! - `limit`: the direction's `buffer` in bytes (a buffer given in packets
//!   counts 1500 bytes each), as tc-red requires one.
//! - `max` = limit / 4, `min` = max / 3 (so limit / 12): tc's defaults after
//!   Floyd's REDparameters.txt. `avpkt` 1000 B, `burst` = (2 min + max) /
//!   (3 avpkt) packets, `probability` (max_P) 0.02, `bandwidth` = the link
//!   rate (tc: 10 Mbit when not given; used only for the idle table).
//! - `Wlog` is tc's `tc_red_eval_ewma`: the smallest W such that a burst of
//!   `burst` packets fits, `burst + 1 - min/avpkt <= (1 - (1-W)^burst) / W`.
//! - `Scell_log` and `Stab` are tc's `tc_red_eval_idle_damping`. tc
//!   computes the table in psched ticks (64 ns; 15.625 per µs), while the
//!   kernel indexes it with µs of idle time: the idle decay is therefore 15.6
//!   times slower than the formula intends. We reproduce the pair as Linux
//!   runs it.
//! - Adaptive: every 500 ms (HZ/2), `max_P += min(0.01, max_P/4)` if avg >
//!   min + 0.6 (max - min) and max_P <= 0.5, `max_P *= 0.9` if avg < min +
//!   0.4 (max - min) and max_P >= 0.01; lazily run at packet events, as
//!   PIE's timer (see [`super::pie`]).
//! - `nodrop` (Linux v5.10+): with `ecn`, a non-ECT packet chosen for a drop
//!   is queued instead.
//!
//! Not modelled: the child qdisc (always bfifo here), offload, qevents.

use super::params::U32_MAX;
use super::flow_hash::inet_ecn_set_ce;
use super::pie::LazyTimer;
use super::{DropReason, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::{Rng, RngExt};
use crate::time::Nanos;
use std::collections::VecDeque;

/// Scenario doc of `red`.
pub const DOC: &str = "RED AQM over a byte FIFO (Linux sch_red, Floyd & Jacobson 1993); `limit` defaults to the direction's `buffer`, thresholds to tc-red's limit/12 and limit/4";

/// `qdisc_params` of `red`, with tc-red's defaults (0 = derived, see the doc).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::size("limit", 0.0, 0.0, U32_MAX, "hard byte limit of the queue; 0 = the direction's `buffer` (tc `limit`)"),
    ParamSpec::size("min", 0.0, 0.0, U32_MAX, "average queue (bytes) where early drops start; 0 = max/3 (tc `min`)"),
    ParamSpec::size("max", 0.0, 0.0, U32_MAX, "average queue (bytes) where the probability reaches max_P and drops become certain; 0 = limit/4, or 3 min (tc `max`)"),
    ParamSpec::size("avpkt", 1000.0, 1.0, (1 << 20) as f64, "average packet size, for the EWMA weight and the idle decay (tc `avpkt`)"),
    ParamSpec::count("burst", 0.0, 0.0, U32_MAX, "packets of burst the average should absorb, sets the EWMA weight; 0 = (2 min + max) / (3 avpkt) (tc `burst`)"),
    ParamSpec::ratio("probability", 0.02, "max_P, the drop probability at avg = max (tc `probability`)"),
    ParamSpec::rate("bandwidth", 0.0, 0.0, (u64::MAX / 2) as f64, "rate for the idle-time decay table; 0 = the link rate (tc `bandwidth`)"),
    ParamSpec::flag("ecn", false, "CE-mark ECT packets instead of dropping (tc `ecn`)"),
    ParamSpec::flag("harddrop", false, "drop, never mark, above max (tc `harddrop`)"),
    ParamSpec::flag("nodrop", false, "with ecn, queue non-ECT packets instead of dropping them (tc `nodrop`)"),
    ParamSpec::flag("adaptive", false, "Adaptive RED: tune max_P every 500 ms to keep avg mid-way (tc `adaptive`)"),
    ParamSpec::flag("gentle", false, "Gentle RED (not in Linux): between max and 2 max the probability rises linearly from max_P to 1 instead of jumping to 1"),
];

/// Idle table size (`RED_STAB_SIZE`).
pub const RED_STAB_SIZE: usize = 256;
/// 1% in Q0.32 (`RED_ONE_PERCENT`, rounded to closest).
pub const RED_ONE_PERCENT: u32 = (((1u64 << 32) + 50) / 100) as u32;
/// Adaptive RED bounds of max_P: 1% and 50%.
pub const MAX_P_MIN: u32 = RED_ONE_PERCENT;
pub const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;
/// Adaptive RED period (HZ/2).
pub const ADAPT_PERIOD_NS: Nanos = 500_000_000;
/// psched ticks per µs as tc computes them from `/proc/net/psched` (1000/64).
pub const TC_TICKS_PER_US: f64 = 15.625;

/// Linux `struct red_parms` (thresholds already scaled by Wlog).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedParams {
    /// min threshold, bytes << Wlog.
    pub qth_min: u64,
    /// max threshold, bytes << Wlog.
    pub qth_max: u64,
    /// Largest idle time (µs) the table covers: 255 << Scell_log.
    pub scell_max: u64,
    /// Drop probability at max, Q0.32.
    pub max_p: u32,
    /// max_P / (max - min): the divisor of the random number.
    pub max_p_delta: u32,
    /// max - min, bytes.
    pub qth_delta: u32,
    /// Adaptive RED's target band, bytes.
    pub target_min: u32,
    pub target_max: u32,
    /// Idle-table cell width: 2^Scell_log µs.
    pub scell_log: u8,
    /// EWMA weight W = 2^-Wlog.
    pub wlog: u8,
    /// Idle table: shifts of qavg per idle-time cell.
    pub stab: [u8; RED_STAB_SIZE],
}

impl RedParams {
    /// `red_set_parms` with thresholds in bytes and max_P in Q0.32.
    pub fn new(qth_min: u32, qth_max: u32, wlog: u8, scell_log: u8, stab: [u8; RED_STAB_SIZE], max_p: u32) -> Self {
        let mut delta = qth_max as i64 - qth_min as i64;
        if delta <= 0 {
            delta = 1;
        }
        let delta = delta as u32;
        let max_p_delta = (max_p / delta).max(1);
        let d5 = delta / 5;
        RedParams {
            qth_min: (qth_min as u64) << wlog,
            qth_max: (qth_max as u64) << wlog,
            scell_max: 255u64 << scell_log,
            max_p,
            max_p_delta,
            qth_delta: delta,
            target_min: qth_min + 2 * d5,
            target_max: qth_min + 3 * d5,
            scell_log,
            wlog,
            stab,
        }
    }
}

/// Linux `struct red_vars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedVars {
    /// Packets since the last random number (-1: none drawn).
    pub qcount: i32,
    /// Cached random number, uniform in [0, 2^32 / max_p_delta).
    pub qr: u32,
    /// Average queue, bytes << Wlog.
    pub qavg: u64,
    /// Start of the current idle period, or None when busy.
    pub qidlestart: Option<Nanos>,
}

/// Linux `struct red_stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedStats {
    /// Early (probabilistic) drops.
    pub prob_drop: u64,
    /// Early marks.
    pub prob_mark: u64,
    /// Drops with avg above max.
    pub forced_drop: u64,
    /// Marks with avg above max.
    pub forced_mark: u64,
    /// Drops at the byte limit.
    pub pdrop: u64,
}

/// What `red_action` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedAction {
    DontMark,
    ProbMark,
    HardMark,
}

/// iproute2 `tc_red_eval_ewma`: Wlog for `burst` packets of `avpkt` bytes
/// above `qmin`, or None if impossible (burst too small or too large).
pub fn eval_ewma(qmin: u32, burst: u32, avpkt: u32) -> Option<u8> {
    let a = burst as f64 + 1.0 - qmin as f64 / avpkt as f64;
    if a < 1.0 {
        return None;
    }
    let mut w = 0.5f64;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

/// iproute2 `tc_red_eval_idle_damping`: (Scell_log, Stab) for `avpkt` bytes
/// at `rate_bps`, in tc's psched ticks (see the module doc).
pub fn eval_idle_damping(wlog: u8, avpkt: u32, rate_bps: u64) -> Option<(u8, [u8; RED_STAB_SIZE])> {
    let bytes_per_s = (rate_bps / 8).max(1) as f64;
    let xmit_time = (1e6 * (avpkt as f64 / bytes_per_s) * TC_TICKS_PER_US).ceil();
    let lw = -(1.0 - 1.0 / (1u64 << wlog) as f64).ln() / xmit_time;
    let maxtime = 31.0 / lw;
    let clog = (0..32u8).find(|&c| maxtime / ((1u64 << c) as f64) < 512.0)?;
    let mut s = [0u8; RED_STAB_SIZE];
    for (i, v) in s.iter_mut().enumerate().take(255).skip(1) {
        *v = (((i as u64) << clog) as f64 * lw).min(31.0) as u8;
    }
    s[255] = 31;
    Some((clog, s))
}

/// `red_calc_qavg_from_idle_time`: the average decayed for the idle time.
pub fn qavg_from_idle_time(p: &RedParams, v: &RedVars, now: Nanos) -> u64 {
    let start = v.qidlestart.unwrap_or(now);
    let us_idle = (now.saturating_sub(start) / 1000).min(p.scell_max);
    let shift = p.stab[((us_idle >> p.scell_log) as usize) & (RED_STAB_SIZE - 1)];
    if shift != 0 {
        v.qavg >> shift
    } else {
        // (1-W)^m ~ 1 - mW for the first part of the exponential.
        let d = v.qavg.wrapping_mul(us_idle) >> p.scell_log;
        if d < v.qavg >> 1 {
            v.qavg - d
        } else {
            v.qavg >> 1
        }
    }
}

/// `red_calc_qavg`: the new average for an arrival finding `backlog` bytes.
pub fn calc_qavg(p: &RedParams, v: &RedVars, backlog: u32, now: Nanos) -> u64 {
    if v.qidlestart.is_none() {
        // qavg = qavg (1 - W) + backlog W, with qavg scaled by 2^Wlog
        v.qavg.wrapping_add(backlog as u64).wrapping_sub(v.qavg >> p.wlog)
    } else {
        qavg_from_idle_time(p, v, now)
    }
}

/// `red_action` (plus gentle RED when asked): what to do with an arrival
/// at average `qavg`.
pub fn action(p: &RedParams, v: &mut RedVars, qavg: u64, gentle: bool, rng: &mut Rng) -> RedAction {
    if qavg < p.qth_min {
        v.qcount = -1;
        return RedAction::DontMark;
    }
    if qavg >= p.qth_max {
        if gentle && qavg < 2 * p.qth_max {
            return gentle_action(p, v, qavg, rng);
        }
        v.qcount = -1;
        return RedAction::HardMark;
    }
    v.qcount += 1;
    if v.qcount != 0 {
        // max_P (qavg - min)/(max - min) >= R / count, in integers
        if ((qavg - p.qth_min) >> p.wlog) * (v.qcount as u64) >= v.qr as u64 {
            v.qcount = 0;
            v.qr = red_random(p, rng);
            return RedAction::ProbMark;
        }
    } else {
        v.qr = red_random(p, rng);
    }
    RedAction::DontMark
}

/// Gentle RED between max and 2 max: p_b from max_P to 1, count-spaced.
fn gentle_action(p: &RedParams, v: &mut RedVars, qavg: u64, rng: &mut Rng) -> RedAction {
    let max_p = p.max_p as f64 / 4294967296.0;
    let pb = max_p + (1.0 - max_p) * (qavg - p.qth_max) as f64 / p.qth_max as f64;
    v.qcount += 1;
    let c = v.qcount.max(0) as f64;
    let pa = if c * pb >= 1.0 { 1.0 } else { pb / (1.0 - c * pb) };
    if rng.gen::<f64>() < pa {
        v.qcount = 0;
        return RedAction::ProbMark;
    }
    RedAction::DontMark
}

/// `red_random`: uniform in [0, 2^32 / (max_P / delta)).
fn red_random(p: &RedParams, rng: &mut Rng) -> u32 {
    rng.gen::<u32>() / p.max_p_delta
}

/// `red_adaptative_algo`, at time `at`.
pub fn adaptative_algo(p: &mut RedParams, v: &RedVars, at: Nanos) {
    let mut qavg = v.qavg;
    if v.qidlestart.is_some() {
        qavg = qavg_from_idle_time(p, v, at);
    }
    qavg >>= p.wlog;
    if qavg > p.target_max as u64 && p.max_p <= MAX_P_MAX {
        p.max_p += (p.max_p / 4).min(MAX_P_MIN); // max_P + alpha
    } else if qavg < p.target_min as u64 && p.max_p >= MAX_P_MIN {
        p.max_p = (p.max_p / 10) * 9; // max_P * beta
    }
    let d = (p.max_p + p.qth_delta / 2) / p.qth_delta; // DIV_ROUND_CLOSEST
    p.max_p_delta = d.max(1);
}

/// `sch_red` with a bfifo child.
#[derive(Debug)]
pub struct Red<T> {
    pub params: RedParams,
    pub vars: RedVars,
    pub stats: RedStats,
    /// Hard byte limit of the child FIFO.
    pub limit: u32,
    pub ecn: bool,
    pub harddrop: bool,
    pub nodrop: bool,
    pub adaptive: bool,
    pub gentle: bool,
    adapt_timer: LazyTimer,
    q: VecDeque<Packet<T>>,
    backlog: u32,
}

impl<T> Red<T> {
    /// A RED with explicit parameters; idle since creation at time 0.
    pub fn new(params: RedParams, limit: u32) -> Self {
        Red {
            params,
            vars: RedVars { qcount: -1, qr: 0, qavg: 0, qidlestart: Some(0) },
            stats: RedStats::default(),
            limit,
            ecn: false,
            harddrop: false,
            nodrop: false,
            adaptive: false,
            gentle: false,
            adapt_timer: LazyTimer { next: ADAPT_PERIOD_NS },
            q: VecDeque::new(),
            backlog: 0,
        }
    }

    /// From the scenario's `qdisc_params` and buffer, with tc-red's derivations.
    pub fn from_config(cfg: &QdiscConfig) -> Result<Self, String> {
        Self::from_params(cfg, &Params::new(cfg, PARAMS)?)
    }

    /// From parameters read through [`PARAMS`], the direction's buffer and rate.
    pub fn from_params(cfg: &QdiscConfig, p: &Params) -> Result<Self, String> {
        let mut limit = p.u64("limit");
        if limit == 0 {
            limit = match (cfg.limit.bytes, cfg.limit.pkts) {
                (Some(b), _) => b,
                (None, Some(n)) => n * 1500,
                (None, None) => return Err("qdisc_params.limit: red needs a byte limit (or the direction's `buffer`)".into()),
            };
        }
        let limit = u32::try_from(limit).map_err(|_| format!("qdisc_params.limit: at most {} bytes, got {limit}", u32::MAX))?;
        let avpkt = p.u32("avpkt");
        let mut qmax = p.u32("max");
        let mut qmin = p.u32("min");
        if qmax == 0 {
            qmax = if qmin > 0 { qmin.saturating_mul(3) } else { limit / 4 };
        }
        if qmin == 0 {
            qmin = qmax / 3;
        }
        if qmax < qmin {
            return Err(format!("qdisc_params.max: must be at least min ({qmin} bytes), got {qmax}"));
        }
        let mut burst = p.u32("burst");
        if burst == 0 {
            burst = ((2 * qmin as u64 + qmax as u64) / (3 * avpkt as u64)) as u32;
        }
        let wlog = eval_ewma(qmin, burst, avpkt).ok_or_else(|| {
            format!("qdisc_params.burst: {burst} packets cannot be absorbed above min {qmin} B with avpkt {avpkt} B (try burst {})", 1 + qmin / avpkt)
        })?;
        let mut rate = p.u64("bandwidth");
        if rate == 0 {
            rate = if cfg.rate_bps > 0 { cfg.rate_bps } else { 10_000_000 };
        }
        let (scell_log, stab) =
            eval_idle_damping(wlog, avpkt, rate).ok_or_else(|| "qdisc_params.bandwidth: no idle table for this rate".to_string())?;
        let max_p = (p.get("probability") * 4294967296.0).min(u32::MAX as f64) as u32;
        let mut red = Red::new(RedParams::new(qmin, qmax, wlog, scell_log, stab, max_p), limit);
        red.ecn = p.flag("ecn");
        red.harddrop = p.flag("harddrop");
        red.nodrop = p.flag("nodrop");
        red.adaptive = p.flag("adaptive");
        red.gentle = p.flag("gentle");
        Ok(red)
    }

    fn run_adapt_timer(&mut self, now: Nanos) {
        if !self.adaptive {
            return;
        }
        let (p, v) = (&mut self.params, &self.vars);
        let mut at = self.adapt_timer.next;
        self.adapt_timer.run(now, ADAPT_PERIOD_NS, || {
            let before = p.max_p;
            adaptative_algo(p, v, at);
            at += ADAPT_PERIOD_NS;
            p.max_p != before
        });
    }
}

impl<T> Qdisc<T> for Red<T> {
    fn name(&self) -> &'static str {
        "red"
    }

    fn enqueue(&mut self, mut pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        self.run_adapt_timer(now);
        self.vars.qavg = calc_qavg(&self.params, &self.vars, self.backlog, now);
        self.vars.qidlestart = None;
        let qavg = self.vars.qavg;
        let congestion_drop = match action(&self.params, &mut self.vars, qavg, self.gentle, rng) {
            RedAction::DontMark => false,
            RedAction::ProbMark => {
                if !self.ecn {
                    self.stats.prob_drop += 1;
                    true
                } else if inet_ecn_set_ce(&mut pkt.meta) {
                    self.stats.prob_mark += 1;
                    ev.marks += 1;
                    false
                } else if !self.nodrop {
                    self.stats.prob_drop += 1;
                    true
                } else {
                    false
                }
            }
            RedAction::HardMark => {
                if self.harddrop || !self.ecn {
                    self.stats.forced_drop += 1;
                    true
                } else if inet_ecn_set_ce(&mut pkt.meta) {
                    self.stats.forced_mark += 1;
                    ev.marks += 1;
                    false
                } else if !self.nodrop {
                    self.stats.forced_drop += 1;
                    true
                } else {
                    false
                }
            }
        };
        if congestion_drop {
            ev.drop(pkt, DropReason::Aqm);
            return;
        }
        // bfifo child
        if self.backlog as u64 + pkt.meta.len as u64 > self.limit as u64 {
            self.stats.pdrop += 1;
            ev.drop(pkt, DropReason::QueueFull);
            return;
        }
        self.backlog += pkt.meta.len;
        self.q.push_back(pkt);
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, _ev: &mut Events<T>) -> Option<Packet<T>> {
        self.run_adapt_timer(now);
        match self.q.pop_front() {
            Some(p) => {
                self.backlog -= p.meta.len;
                Some(p)
            }
            None => {
                if self.vars.qidlestart.is_none() {
                    self.vars.qidlestart = Some(now);
                }
                None
            }
        }
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
    use crate::qdisc::{Ecn, Limit, PacketMeta};

    fn pkt(len: u32, ecn: Ecn) -> Packet<u64> {
        Packet { meta: PacketMeta { len, ecn, ..Default::default() }, data: 0 }
    }

    /// min 10000 B, max 30000 B, Wlog 3, 10 Mbit idle table, max_P 0.02.
    fn params() -> RedParams {
        let (clog, stab) = eval_idle_damping(3, 1000, 10_000_000).unwrap();
        RedParams::new(10_000, 30_000, 3, clog, stab, (0.02 * 4294967296.0) as u32)
    }

    #[test]
    fn tc_derives_wlog_3_for_a_16_packet_burst_over_a_10kb_min() {
        // a = 16 + 1 - 10 = 7; (1 - (7/8)^16) / (1/8) = 7.055 >= 7 first at W = 1/8.
        assert_eq!(eval_ewma(10_000, 16, 1000), Some(3));
        assert_eq!(eval_ewma(10_000, 5, 1000), None);
        // limit 1.25 MB: max 312500, min 104166, burst 173 -> Wlog 7.
        assert_eq!(eval_ewma(104_166, 173, 1000), Some(7));
    }

    #[test]
    fn the_idle_table_at_10_mbit_has_cells_of_8192_us() {
        // xmit 800 us = 12500 ticks; lW = ln(8/7)/12500; 31/lW = 2.9e6 < 512 << 13.
        let (clog, s) = eval_idle_damping(3, 1000, 10_000_000).unwrap();
        assert_eq!(clog, 13);
        assert_eq!((s[11], s[12], s[24], s[100], s[254], s[255]), (0, 1, 2, 8, 22, 31));
    }

    #[test]
    fn the_average_is_an_ewma_of_the_backlog_with_weight_one_eighth() {
        // Arrivals find 0, 1500, 3000, 4500, 6000, 7500 B (no dequeue).
        // qavg' = qavg + backlog - qavg >> 3: 0, 1500, 4313, 8274, 13240, 19085,
        // i.e. 0, 187, 539, 1034, 1655, 2385 bytes.
        let mut q: Red<u64> = Red::new(params(), 1_000_000);
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut got = Vec::new();
        for _ in 0..6 {
            q.enqueue(pkt(1500, Ecn::NotEct), 0, &mut rng, &mut ev);
            got.push(q.vars.qavg);
        }
        assert_eq!(got, vec![0, 1500, 4313, 8274, 13240, 19085]);
        assert!(ev.drops.is_empty());
    }

    #[test]
    fn the_next_drop_comes_when_p_b_times_count_reaches_r() {
        // avg 20000 B (midway): (qavg - min) >> Wlog = 10000 per counted packet.
        // With R = 55000 the 6th counted arrival drops (6 * 10000 >= 55000).
        let p = params();
        let mut rng = crate::rng::stream(1, 0);
        let mut v = RedVars { qcount: 0, qr: 55_000, qavg: 20_000 << 3, qidlestart: None };
        let acts: Vec<RedAction> = (0..6).map(|_| action(&p, &mut v, 20_000 << 3, false, &mut rng)).collect();
        assert_eq!(acts[..5], [RedAction::DontMark; 5]);
        assert_eq!(acts[5], RedAction::ProbMark);
        assert_eq!(v.qcount, 0);
        // R is redrawn in [0, 2^32 / (max_P / 20000)): max_P / delta = 85899345 / 20000 = 4294.
        assert_eq!(p.max_p_delta, 4294);
        assert!(v.qr < (u32::MAX / 4294) + 1);
    }

    #[test]
    fn at_a_steady_average_midway_the_drop_rate_matches_count_spacing_of_p_b_one_percent() {
        // p_b = 0.02 * (20000 - 10000) / 20000 = 0.01. Count spacing makes the
        // gap uniform on [1, 1/p_b]: mean (1 + 100) / 2, a rate of 1/50.5.
        let p = params();
        let mut rng = crate::rng::stream(9, 0);
        let mut v = RedVars { qcount: -1, qr: 0, qavg: 0, qidlestart: None };
        let n = 200_000;
        let drops = (0..n).filter(|_| action(&p, &mut v, 20_000 << 3, false, &mut rng) == RedAction::ProbMark).count();
        let rate = drops as f64 / n as f64;
        assert!((rate - 1.0 / 50.5).abs() < 0.0006, "rate {rate}");
    }

    #[test]
    fn below_min_nothing_and_at_max_everything_is_dropped() {
        let p = params();
        let mut rng = crate::rng::stream(1, 0);
        let mut v = RedVars { qcount: 5, qr: 0, qavg: 0, qidlestart: None };
        assert_eq!(action(&p, &mut v, (10_000 << 3) - 1, false, &mut rng), RedAction::DontMark);
        assert_eq!(v.qcount, -1);
        assert_eq!(action(&p, &mut v, 30_000 << 3, false, &mut rng), RedAction::HardMark);
        assert_eq!(v.qcount, -1);
    }

    #[test]
    fn gentle_mode_drops_above_max_with_a_probability_rising_to_one_at_twice_max() {
        let p = params();
        let mut rng = crate::rng::stream(2, 0);
        let mut v = RedVars { qcount: -1, qr: 0, qavg: 0, qidlestart: None };
        // At 1.5 max: p_b = 0.02 + 0.98 * 0.5 = 0.51: neither never nor always.
        let n = 10_000;
        let d = (0..n).filter(|_| action(&p, &mut v, 45_000 << 3, true, &mut rng) != RedAction::DontMark).count();
        assert!(d > n / 3 && d < n, "{d}");
        assert_eq!(action(&p, &mut v, 60_000 << 3, true, &mut rng), RedAction::HardMark);
    }

    #[test]
    fn ecn_marks_ect_packets_but_harddrop_drops_them_above_max() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q: Red<u64> = Red::new(params(), 1_000_000);
        q.ecn = true;
        q.vars = RedVars { qcount: -1, qr: 0, qavg: 40_000 << 3, qidlestart: None };
        q.backlog = 40_000; // the average stays above max
        q.enqueue(pkt(1500, Ecn::Ect0), 0, &mut rng, &mut ev);
        assert_eq!((ev.marks, ev.drops.len(), q.stats.forced_mark), (1, 0, 1));
        q.enqueue(pkt(1500, Ecn::NotEct), 0, &mut rng, &mut ev);
        assert_eq!(ev.drops.len(), 1);
        q.harddrop = true;
        q.enqueue(pkt(1500, Ecn::Ect0), 0, &mut rng, &mut ev);
        assert_eq!((ev.marks, ev.drops.len(), q.stats.forced_drop), (1, 2, 2));
        assert!(ev.drops.iter().all(|d| d.reason == DropReason::Aqm));
        q.harddrop = false;
        q.nodrop = true;
        q.enqueue(pkt(1500, Ecn::NotEct), 0, &mut rng, &mut ev);
        assert_eq!(ev.drops.len(), 2, "nodrop queues the non-ECT packet");
    }

    #[test]
    fn idle_time_decays_the_average_by_the_tables_shift() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q: Red<u64> = Red::new(params(), 1_000_000);
        q.vars = RedVars { qcount: -1, qr: 0, qavg: 16_000 << 3, qidlestart: None };
        assert!(q.dequeue(1_000_000_000, &mut rng, &mut ev).is_none()); // idle from 1 s
        // 200 ms idle: cell 200000 >> 13 = 24, Stab[24] = 2: qavg >> 2.
        q.enqueue(pkt(1500, Ecn::NotEct), 1_200_000_000, &mut rng, &mut ev);
        assert_eq!(q.vars.qavg, (16_000 << 3) >> 2);
        // A short idle (1 ms, cell 0) decays linearly: qavg - qavg * 1000 >> 13.
        q.vars.qavg = 16_000 << 3;
        q.dequeue(1_300_000_000, &mut rng, &mut ev);
        assert!(q.dequeue(1_300_000_000, &mut rng, &mut ev).is_none());
        q.enqueue(pkt(1500, Ecn::NotEct), 1_301_000_000, &mut rng, &mut ev);
        assert_eq!(q.vars.qavg, 128_000 - ((128_000 * 1000) >> 13));
    }

    #[test]
    fn adaptive_red_raises_max_p_every_500_ms_while_the_average_is_high() {
        let mut p = params();
        let v = RedVars { qcount: -1, qr: 0, qavg: 25_000 << 3, qidlestart: None };
        // target band [10000 + 2*4000, 10000 + 3*4000] = [18000, 22000]; 25000 above.
        assert_eq!((p.target_min, p.target_max), (18_000, 22_000));
        let before = p.max_p;
        adaptative_algo(&mut p, &v, 0);
        assert_eq!(p.max_p, before + (before / 4).min(MAX_P_MIN));
        assert_eq!(MAX_P_MIN, 42_949_673);
    }

    #[test]
    fn defaults_follow_tc_red_from_the_direction_buffer() {
        let cfg = QdiscConfig { kind: "red".into(), limit: Limit { bytes: Some(120_000), pkts: None }, rate_bps: 10_000_000, params: vec![] };
        let q = Red::<u64>::from_config(&cfg).unwrap();
        assert_eq!((q.limit, q.params.qth_min >> q.params.wlog, q.params.qth_max >> q.params.wlog), (120_000, 10_000, 30_000));
        assert_eq!((q.params.wlog, q.params.scell_log, q.params.max_p), (3, 13, 85_899_345));
        let bad = QdiscConfig { params: vec![("min".into(), 50_000.0), ("max".into(), 40_000.0)], ..cfg.clone() };
        assert!(Red::<u64>::from_config(&bad).unwrap_err().starts_with("qdisc_params.max:"));
        let nolimit = QdiscConfig { kind: "red".into(), ..Default::default() };
        assert!(Red::<u64>::from_config(&nolimit).unwrap_err().starts_with("qdisc_params.limit:"));
    }

    #[test]
    fn the_byte_limit_tail_drops_as_pdrop() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q: Red<u64> = Red::new(params(), 3000);
        for _ in 0..3 {
            q.enqueue(pkt(1500, Ecn::NotEct), 0, &mut rng, &mut ev);
        }
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].reason, DropReason::QueueFull);
        assert_eq!(q.stats.pdrop, 1);
    }
}
