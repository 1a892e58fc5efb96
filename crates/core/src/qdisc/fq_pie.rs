//! FQ-PIE: flow queueing with a PIE per queue.
//!
//! Source: Linux v6.x `net/sched/sch_fq_pie.c` (Tahiliani, Patil et al.,
//! 2020), with PIE from `include/net/pie.h` / `sch_pie.c` (our
//! [`super::pie`], reused per flow). The flow queueing is fq_codel's (RFC
//! 8290, see [`super::fq_codel`]); the AQM in each queue is PIE.
//!
//! # Model in a nutshell
//! Packets hash on their flow into `flows` (1024) queues, served by DRR with
//! `quantum` bytes per turn over a new-flows list (served first) and an
//! old-flows list, exactly as fq_codel (the same round robin,
//! [`super::drr`]: same list moves, same "an emptied new queue goes to the
//! end of old_flows if that is non-empty" rule).
//! Each queue has its own PIE variables (`prob`, `qdelay`, burst allowance)
//! and PIE decides *at enqueue* from that queue's backlog and delay; there
//! is no head drop and no fattest-flow drop. One timer updates the
//! probability of every queue each `tupdate` (the kernel does 2048 queues
//! per timer run; with at most 65536 queues... we do all at once, which is
//! the kernel's behaviour for the default 1024). As in [`super::pie`], the
//! timer runs lazily at packet events, first at 500 ms, then every tupdate.
//!
//! # Rules specific to fq_pie
//! - Tail drop ([`DropReason::QueueFull`]) when the qdisc holds `limit`
//!   packets (10240).
//! - `memory_limit` (32 MiB of truesize) is only *counted* (`overmemory`),
//!   never enforced: that is what the kernel does (the packet is still
//!   offered to PIE and queued).
//! - ECN (off by default) marks instead of dropping while the queue's
//!   probability is at most `ecn_prob` percent (10).
//! - PIE's "fewer than 2 MTU" rule uses the queue's backlog, not the qdisc's.
//!
//! # Constants (Linux `fq_pie_init`)
//! flows 1024, limit 10240 packets, quantum 1514 B (`psched_mtu`),
//! memory_limit 32 MiB, ecn_prob 10 %, PIE defaults (target 15 ms,
//! tupdate 15 ms, alpha 2/16, beta 20/16).

use super::params::{MAX_TC_TIME_NS, U32_MAX};
use super::drr::FlowLists;
use super::flow_hash::{truesize, BucketHasher};
use super::pie::{admit, calculate_probability, process_dequeue, LazyTimer, PieParams, PieStats, PieVars, MAX_PROB};
use super::{DropReason, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Scenario doc of `fq_pie`.
pub const DOC: &str = "FQ-PIE: DRR over hashed flow queues, PIE per queue (Linux sch_fq_pie); its own packet `limit`, the direction's `buffer` is not used";

/// `qdisc_params` of `fq_pie`, with Linux's defaults (`fq_pie_init`) and the
/// ranges `fq_pie_change` accepts (`flows` 1..65536, `ecn_prob` 0..100).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::count("limit", 10240.0, 1.0, U32_MAX, "packets the qdisc holds; tail drop beyond (tc `limit`)"),
    ParamSpec::count("flows", 1024.0, 1.0, 65536.0, "number of flow queues (hash buckets), 1..65536 (tc `flows`)"),
    ParamSpec::time("target", 15e6, 1000.0, MAX_TC_TIME_NS, "PIE target queueing delay per queue (tc `target`)"),
    ParamSpec::time("tupdate", 15e6, 1000.0, MAX_TC_TIME_NS, "period of the probability update (tc `tupdate`)"),
    ParamSpec::count("alpha", 2.0, 0.0, 32.0, "PIE integral gain in 1/16 units, 0..32 (tc `alpha`)"),
    ParamSpec::count("beta", 20.0, 0.0, 32.0, "PIE proportional gain in 1/16 units, 0..32 (tc `beta`)"),
    ParamSpec::size("quantum", 1514.0, 1.0, (1 << 20) as f64, "bytes a queue may send per DRR turn (tc `quantum`)"),
    ParamSpec::size("memory_limit", 33554432.0, 1.0, U32_MAX, "truesize bytes counted as over-memory beyond this; not enforced, as in Linux (tc `memory_limit`)"),
    ParamSpec::count("ecn_prob", 10.0, 0.0, 100.0, "percent probability up to which ECT packets are marked rather than dropped (tc `ecn_prob`)"),
    ParamSpec::flag("ecn", false, "CE-mark ECT packets instead of dropping (tc `ecn`)"),
    ParamSpec::flag("bytemode", false, "scale the drop probability by packet size / MTU (tc `bytemode`)"),
    ParamSpec::flag("dq_rate_estimator", false, "queue delay from backlog / drain rate instead of timestamps (tc `dq_rate_estimator`)"),
    ParamSpec::flag("running", false, super::pie::RUNNING_DOC),
];

/// `struct fq_pie_flow`.
#[derive(Debug)]
struct Flow<T> {
    vars: PieVars,
    /// Bytes queued in this flow.
    backlog: u32,
    q: VecDeque<Packet<T>>,
}

/// Linux `struct fq_pie_sched_data`.
#[derive(Debug)]
pub struct FqPie<T> {
    /// PIE parameters shared by all queues (`limit` is the qdisc's).
    pub params: PieParams,
    pub stats: PieStats,
    /// Truesize bytes beyond which `overmemory` counts.
    pub memory_limit: u32,
    /// Percent probability up to which ECT packets are marked.
    pub ecn_prob: u32,
    /// Packets that arrived while over the memory limit.
    pub overmemory: u64,
    /// Times a queue joined new_flows.
    pub new_flow_count: u64,
    flows: Vec<Flow<T>>,
    /// The DRR over the queues (quantum, deficits, new/old lists).
    lists: FlowLists,
    qlen: u32,
    backlog: u32,
    memory_usage: u32,
    timer: LazyTimer,
    hasher: BucketHasher,
}

impl<T> FqPie<T> {
    /// Linux defaults (`fq_pie_init`): those of [`PARAMS`].
    pub fn new() -> Self {
        Self::from_params(&Params::defaults(PARAMS))
    }

    pub fn with(flows: u32, quantum: u32, memory_limit: u32, ecn_prob: u32, params: PieParams) -> Self {
        assert!((1..=65536).contains(&flows), "flows must be in 1..=65536");
        FqPie {
            params,
            stats: PieStats::default(),
            memory_limit,
            ecn_prob,
            overmemory: 0,
            new_flow_count: 0,
            flows: (0..flows)
                .map(|_| Flow { vars: PieVars::default(), backlog: 0, q: VecDeque::new() })
                .collect(),
            lists: FlowLists::new(flows, quantum),
            qlen: 0,
            backlog: 0,
            memory_usage: 0,
            timer: params.timer(),
            hasher: BucketHasher::new(flows),
        }
    }

    /// From the scenario's `qdisc_params` (see [`PARAMS`]).
    pub fn from_config(cfg: &QdiscConfig) -> Result<Self, String> {
        Ok(Self::from_params(&Params::new(cfg, PARAMS)?))
    }

    /// From parameters read through [`PARAMS`].
    pub fn from_params(p: &Params) -> Self {
        Self::with(p.u32("flows"), p.u32("quantum"), p.u32("memory_limit"), p.u32("ecn_prob"), PieParams::from_params(p))
    }

    /// Fix the hash seed (instead of drawing it from the RNG at the first packet).
    pub fn with_hash_seed(mut self, seed: u32) -> Self {
        self.hasher = BucketHasher::with_seed(self.flows.len() as u32, seed);
        self
    }

    /// The queue `flow` hashes to, once the seed is known.
    pub fn bucket_of(&self, flow: u64) -> Option<u32> {
        self.hasher.peek(flow)
    }

    /// DRR quantum in bytes.
    pub fn quantum(&self) -> u32 {
        self.lists.quantum
    }

    /// The PIE state of queue `idx`.
    pub fn flow_vars(&self, idx: u32) -> &PieVars {
        &self.flows[idx as usize].vars
    }

    /// `fq_pie_timer`: update every queue's probability for each due tupdate.
    fn run_timer(&mut self, now: Nanos) {
        let (p, flows) = (&self.params, &mut self.flows);
        self.timer.run(now, p.tupdate, || {
            let mut changed = false;
            for f in flows.iter_mut() {
                let before = f.vars;
                calculate_probability(p, &mut f.vars, f.backlog);
                changed |= f.vars != before;
            }
            changed
        });
    }
}

impl<T> Default for FqPie<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Qdisc<T> for FqPie<T> {
    fn name(&self) -> &'static str {
        "fq_pie"
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        self.run_timer(now);
        let idx = self.hasher.bucket(pkt.meta.flow, rng) as usize;
        let len = pkt.meta.len;
        let ts = truesize(len);
        let memory_limited = self.memory_usage as u64 > self.memory_limit as u64 + ts as u64;
        let flow = &mut self.flows[idx];
        if self.qlen >= self.params.limit {
            self.stats.overlimit += 1;
            self.stats.dropped += 1;
            flow.vars.accu_prob = 0;
            ev.drop(pkt, DropReason::QueueFull);
            return;
        } else if memory_limited {
            self.overmemory += 1;
        }
        let mark_below = (MAX_PROB / 100) * self.ecn_prob as u64;
        let Some(pkt) = admit(&self.params, &mut flow.vars, &mut self.stats, flow.backlog, mark_below, pkt, rng, ev) else {
            return;
        };
        self.memory_usage += ts;
        self.backlog += len;
        self.qlen += 1;
        flow.q.push_back(pkt);
        if self.lists.activate(idx) {
            self.new_flow_count += 1;
            flow.backlog = 0;
        }
        flow.backlog += len;
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, _ev: &mut Events<T>) -> Option<Packet<T>> {
        self.run_timer(now);
        let (flows, params) = (&mut self.flows, &self.params);
        let (backlog, qlen, memory_usage) = (&mut self.backlog, &mut self.qlen, &mut self.memory_usage);
        self.lists.dequeue(|idx| {
            let flow = &mut flows[idx];
            let p = flow.q.pop_front()?;
            let len = p.meta.len;
            *backlog -= len;
            *qlen -= 1;
            flow.backlog -= len;
            *memory_usage -= truesize(len);
            process_dequeue(params, &mut flow.vars, p.meta.enqueued_at, len, flow.backlog, now);
            Some((p, len))
        })
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog as u64
    }

    fn backlog_pkts(&self) -> usize {
        self.qlen as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{Ecn, PacketMeta};

    fn pkt(flow: u64, len: u32, at: Nanos) -> Packet<u64> {
        Packet { meta: PacketMeta { flow, len, enqueued_at: at, ecn: Ecn::NotEct, ..Default::default() }, data: flow }
    }

    fn fq(limit: u32) -> FqPie<u64> {
        let q = FqPie::with(1024, 1514, 32 << 20, 10, PieParams { limit, ..Default::default() }).with_hash_seed(12345);
        assert_ne!(q.bucket_of(1), q.bucket_of(2), "test flows collide");
        q
    }

    #[test]
    fn an_overloading_flow_is_dropped_while_a_light_flow_keeps_zero_delay_and_zero_loss() {
        // The link drains one 1500-byte packet per ms. Flow 1 offers 2 per ms
        // for 4 s; flow 2 one 200-byte packet every 20 ms (from 10 ms).
        let mut rng = crate::rng::stream(5, 0);
        let mut ev = Events::default();
        let mut q = fq(100_000);
        let ms = 1_000_000;
        let (mut light_delay_max, mut light_sent, mut light_got) = (0, 0, 0);
        let mut bulk_drops = 0;
        for t in 0..4000u64 {
            let now = t * ms;
            q.enqueue(pkt(1, 1500, now), now, &mut rng, &mut ev);
            q.enqueue(pkt(1, 1500, now), now, &mut rng, &mut ev);
            if t % 20 == 10 {
                q.enqueue(pkt(2, 200, now), now, &mut rng, &mut ev);
                light_sent += 1;
            }
            let out = now + ms / 2;
            while let Some(p) = q.dequeue(out, &mut rng, &mut ev) {
                if p.meta.flow == 2 {
                    light_got += 1;
                    light_delay_max = light_delay_max.max(out - p.meta.enqueued_at);
                } else {
                    break;
                }
            }
            for d in ev.drops.drain(..) {
                assert_eq!(d.pkt.data, 1, "the light flow lost a packet");
                assert_eq!(d.reason, DropReason::Aqm);
                bulk_drops += 1;
            }
        }
        assert_eq!(light_got, light_sent);
        assert_eq!(light_delay_max, ms / 2);
        assert!(bulk_drops > 100, "{bulk_drops}");
        assert!(q.flow_vars(q.bucket_of(1).unwrap()).prob > 0);
        assert_eq!(q.flow_vars(q.bucket_of(2).unwrap()).prob, 0);
    }

    #[test]
    fn a_new_flow_is_served_before_a_backlogged_one() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10240);
        for _ in 0..5 {
            q.enqueue(pkt(1, 1500, 0), 0, &mut rng, &mut ev);
        }
        for _ in 0..3 {
            assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 1);
        }
        q.enqueue(pkt(2, 100, 0), 0, &mut rng, &mut ev);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 2);
        assert_eq!(q.new_flow_count, 2);
    }

    #[test]
    fn the_limit_tail_drops_and_the_memory_limit_only_counts() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = FqPie::with(1024, 1514, 2304, 10, PieParams { limit: 5, ..Default::default() });
        for _ in 0..6 {
            q.enqueue(pkt(1, 1500, 0), 0, &mut rng, &mut ev);
        }
        // The 6th finds 5 queued: tail drop.
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].reason, DropReason::QueueFull);
        assert_eq!(q.backlog_pkts(), 5);
        assert_eq!(q.stats.overlimit, 1);
        // Memory before the 4th and 5th (6912, 9216 B) exceeds 2304 + 2304:
        // counted, yet both were queued.
        assert_eq!(q.overmemory, 2);
    }

    #[test]
    fn config_defaults_are_linuxs() {
        let q = FqPie::<u64>::from_config(&QdiscConfig { kind: "fq_pie".into(), ..Default::default() }).unwrap();
        assert_eq!((q.params.limit, q.flows.len(), q.quantum(), q.memory_limit, q.ecn_prob, q.params.ecn), (10240, 1024, 1514, 1 << 25, 10, false));
        let bad = QdiscConfig { kind: "fq_pie".into(), params: vec![("ecn_prob".into(), 101.0)], ..Default::default() };
        assert!(FqPie::<u64>::from_config(&bad).unwrap_err().starts_with("qdisc_params.ecn_prob:"));
    }
}
