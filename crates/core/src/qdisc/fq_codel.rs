//! fq_codel: flow queueing with a CoDel per queue.
//!
//! Sources: RFC 8290 (Hoeiland-Joergensen et al., 2018) and Linux v6.x
//! `net/sched/sch_fq_codel.c` (Eric Dumazet), with CoDel from
//! `include/net/codel_impl.h` (our [`super::codel`], reused per flow).
//!
//! # Model in a nutshell
//! Packets are hashed on their flow into one of `flows` (1024) queues;
//! each queue is a FIFO with its own CoDel state (`codel_vars`), all queues
//! sharing the CoDel parameters and statistics. A deficit round robin (DRR)
//! with `quantum` bytes per turn serves two lists of queues ([`super::drr`],
//! shared with FQ-PIE):
//! - *new flows*: a queue that becomes active (was in no list) joins the
//!   tail of `new_flows` with a full quantum. New flows are served first, so
//!   a sparse flow (DNS, ACKs, a VoIP packet) jumps ahead of bulk flows.
//! - *old flows*: a queue whose deficit is spent moves to the tail of
//!   `old_flows` with one more quantum.
//! - A queue that empties while at the head of `new_flows` goes to the tail
//!   of `old_flows` if that list is non-empty (so a flow cannot stay "new"
//!   forever by sending one packet per turn; RFC 8290 §4.2), else it leaves
//!   the lists. An empty queue at the head of `old_flows` leaves the lists.
//!   A queue still linked in `old_flows` that gets a packet stays there: it
//!   does not become new again until it has left the lists.
//!
//! # Overload
//! When the qdisc holds more than `limit` packets or its packets' memory
//! (`truesize`, see [`super::flow_hash::truesize`]) exceeds `memory_limit`,
//! `fq_codel_drop` finds the flow with the largest byte backlog (a linear
//! scan; the first of equals wins) and drops packets *from its head* until
//! half of its backlog is gone or `drop_batch_size` (64) packets are
//! dropped (at least one). The victim's CoDel `count` grows by the number
//! dropped, "to increase its signal strength". These are
//! [`DropReason::Overlimit`] drops; CoDel's are [`DropReason::Aqm`].
//!
//! # Hashing
//! The kernel's `reciprocal_scale(skb_get_hash(skb), flows)`, with our own
//! seeded hash of `meta.flow` ([`super::flow_hash`]): the seed is drawn from
//! the link's RNG at the first packet, like the kernel's per-boot `hashrnd`.
//! Two flows may share a queue (probability about 1/1024 per pair with the
//! defaults), exactly as in Linux; a scenario seed fixes which ones.
//!
//! # Constants (Linux `fq_codel_init`)
//! - `limit` 10240 packets, `flows` 1024, `memory_limit` 32 MiB,
//!   `drop_batch_size` 64.
//! - `quantum` 1514 B = `psched_mtu()` of Ethernet (at least 256). Our
//!   lengths are IP bytes (1500 for a full segment): a 1500-byte flow gets
//!   one packet per turn and, once every ~107 turns, two.
//! - CoDel: target 5 ms, interval 100 ms, `ecn` **on**, `mtu` 1514 B, and
//!   the `backlog` CoDel compares with `mtu` is the *whole qdisc's* (the
//!   kernel passes `&sch->qstats.backlog`), not the flow's.
//!
//! mac80211's TXQs run the same fq/CoDel code (`include/net/fq_impl.h`) with
//! one difference CoDel sees: `fq_tin_dequeue_func` (`net/mac80211/tx.c`)
//! passes `&flow->backlog`, the *flow's* bytes left after the head was
//! taken, and mac80211 never sets `cparams.mtu` (0). So a flow whose only
//! packet is being dequeued (a ping, a lone ACK) is never dropped there,
//! whatever else its TXQ holds. [`CodelBacklog::Flow`] selects that rule
//! ([`crate::wifi::mac::mac80211_txq`]); sch_fq_codel's is the default.
//!
//! Not modelled: external classifiers (`tc filter`) and `skb->priority`
//! classification; the tree-backlog bookkeeping for parent qdiscs.

use super::codel::{codel_dequeue, CodelParams, CodelQueue, CodelStats, CodelVars};
use super::params::{MAX_TC_TIME_NS, U32_MAX};
use super::drr::FlowLists;
use super::flow_hash::{truesize, BucketHasher};
use super::{DropReason, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Scenario doc of `fq_codel`.
pub const DOC: &str = "fq_codel: DRR over hashed flow queues, CoDel per queue (Linux sch_fq_codel, RFC 8290); its own packet `limit`, the direction's `buffer` is not used";

/// `qdisc_params` of `fq_codel`, with Linux's defaults (`fq_codel_init`) and
/// the ranges `fq_codel_change` accepts (`flows` 1..65536, `quantum` >= 256).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::count("limit", 10240.0, 1.0, U32_MAX, "packets the qdisc holds; beyond, the fattest flow loses half its backlog from the head (tc `limit`)"),
    ParamSpec::count("flows", 1024.0, 1.0, 65536.0, "number of flow queues (hash buckets), 1..65536 (tc `flows`)"),
    ParamSpec::time("target", 5e6, 1000.0, MAX_TC_TIME_NS, "CoDel target sojourn time (tc `target`)"),
    ParamSpec::time("interval", 100e6, 1000.0, MAX_TC_TIME_NS, "CoDel interval (tc `interval`)"),
    ParamSpec::size("quantum", 1514.0, 256.0, (1 << 20) as f64, "bytes a queue may send per DRR turn, at least 256 (tc `quantum`)"),
    ParamSpec::flag("ecn", true, "CE-mark ECT packets instead of dropping them (tc `ecn`/`noecn`)"),
    ParamSpec::time("ce_threshold", 0.0, 0.0, MAX_TC_TIME_NS, "CE-mark ECT packets whose sojourn exceeds this; 0 = off (tc `ce_threshold`)"),
    ParamSpec::size("memory_limit", 33554432.0, 1.0, (1u64 << 31) as f64, "bytes of packet memory (skb truesize) the qdisc may hold (tc `memory_limit`)"),
    ParamSpec::count("drop_batch", 64.0, 1.0, U32_MAX, "most packets dropped from the fattest flow per overload event (tc `drop_batch`)"),
];

/// One flow queue (`struct fq_codel_flow`).
#[derive(Debug)]
struct Flow<T> {
    q: VecDeque<Packet<T>>,
    cvars: CodelVars,
}

/// Counters the flow view updates when CoDel dequeues (`dequeue_func`).
#[derive(Debug, Default)]
struct Totals {
    /// Packets queued (`sch->q.qlen`).
    qlen: u32,
    /// Bytes queued (`sch->qstats.backlog`).
    backlog: u32,
    /// truesize of the packets queued (`memory_usage`).
    memory_usage: u32,
}

/// Which byte backlog CoDel compares with its `mtu` ("no drop while the
/// backlog is at most one MTU", `codel_should_drop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodelBacklog {
    /// The whole qdisc's (sch_fq_codel: `&sch->qstats.backlog`).
    Qdisc,
    /// The dequeued packet's flow's (mac80211 `fq_tin_dequeue_func`: `&flow->backlog`).
    Flow,
}

/// One flow's queue as CoDel sees it.
struct FlowView<'a, T> {
    q: &'a mut VecDeque<Packet<T>>,
    flow_backlog: &'a mut u32,
    totals: &'a mut Totals,
    which: CodelBacklog,
}

impl<T> CodelQueue<T> for FlowView<'_, T> {
    fn dequeue_head(&mut self) -> Option<Packet<T>> {
        let p = self.q.pop_front()?;
        *self.flow_backlog -= p.meta.len;
        self.totals.memory_usage -= truesize(p.meta.len);
        self.totals.qlen -= 1;
        self.totals.backlog -= p.meta.len;
        Some(p)
    }
    fn backlog(&self) -> u32 {
        match self.which {
            CodelBacklog::Qdisc => self.totals.backlog,
            CodelBacklog::Flow => *self.flow_backlog,
        }
    }
}

/// Linux `struct fq_codel_sched_data`.
#[derive(Debug)]
pub struct FqCodel<T> {
    /// CoDel parameters shared by all queues.
    pub cparams: CodelParams,
    /// CoDel statistics shared by all queues.
    pub cstats: CodelStats,
    /// The backlog CoDel compares with `cparams.mtu` (sch_fq_codel: the qdisc's).
    pub codel_backlog: CodelBacklog,
    /// Packets the qdisc holds at most (`sch->limit`).
    pub limit: u32,
    /// Bytes of truesize the qdisc may hold.
    pub memory_limit: u32,
    /// Most packets one `fq_codel_drop` removes.
    pub drop_batch_size: u32,
    /// Packets dropped by `fq_codel_drop` (`drop_overlimit`).
    pub drop_overlimit: u64,
    /// Of those, dropped while over the memory limit (`drop_overmemory`).
    pub drop_overmemory: u64,
    /// Times a queue joined `new_flows` (`new_flow_count`).
    pub new_flow_count: u64,
    flows: Vec<Flow<T>>,
    /// Per-queue byte backlog (`q->backlogs`, scanned by `fq_codel_drop`).
    backlogs: Vec<u32>,
    /// The DRR over the queues (quantum, deficits, new/old lists).
    lists: FlowLists,
    totals: Totals,
    hasher: BucketHasher,
}

impl<T> FqCodel<T> {
    /// Linux defaults (`fq_codel_init`): those of [`PARAMS`].
    pub fn new() -> Self {
        Self::from_params(&Params::defaults(PARAMS))
    }

    /// Explicit settings, clamped as `fq_codel_change` does.
    pub fn with(flows: u32, limit: u32, quantum: u32, memory_limit: u32, drop_batch_size: u32, cparams: CodelParams) -> Self {
        assert!((1..=65536).contains(&flows), "flows must be in 1..=65536");
        FqCodel {
            cparams,
            cstats: CodelStats::default(),
            codel_backlog: CodelBacklog::Qdisc,
            limit,
            memory_limit: memory_limit.min(1 << 31),
            drop_batch_size: drop_batch_size.max(1),
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
            flows: (0..flows).map(|_| Flow { q: VecDeque::new(), cvars: CodelVars::default() }).collect(),
            backlogs: vec![0; flows as usize],
            lists: FlowLists::new(flows, quantum.max(256)),
            totals: Totals::default(),
            hasher: BucketHasher::new(flows),
        }
    }

    /// From the scenario's `qdisc_params` (see [`PARAMS`]).
    pub fn from_config(cfg: &QdiscConfig) -> Result<Self, String> {
        Ok(Self::from_params(&Params::new(cfg, PARAMS)?))
    }

    /// From parameters read through [`PARAMS`].
    pub fn from_params(p: &Params) -> Self {
        let cparams = CodelParams::from_params(p);
        Self::with(p.u32("flows"), p.u32("limit"), p.u32("quantum"), p.u32("memory_limit"), p.u32("drop_batch"), cparams)
    }

    /// CoDel compares the backlog `which` with its `mtu` (mac80211: [`CodelBacklog::Flow`]).
    pub fn with_codel_backlog(mut self, which: CodelBacklog) -> Self {
        self.codel_backlog = which;
        self
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

    /// Queues in the new-flows list (`new_flows_len` of `tc -s`).
    pub fn new_flows_len(&self) -> usize {
        self.lists.new_len()
    }

    /// Queues in the old-flows list (`old_flows_len`).
    pub fn old_flows_len(&self) -> usize {
        self.lists.old_len()
    }

    /// DRR quantum in bytes.
    pub fn quantum(&self) -> u32 {
        self.lists.quantum
    }

    /// Memory (truesize bytes) held (`memory_usage`).
    pub fn memory_usage(&self) -> u32 {
        self.totals.memory_usage
    }

    /// The CoDel state of queue `idx`.
    pub fn flow_vars(&self, idx: u32) -> &CodelVars {
        &self.flows[idx as usize].cvars
    }

    /// `fq_codel_drop`: drop up to `max_packets` from the head of the
    /// fattest queue, stopping once half its backlog is gone. Returns the
    /// queue index and the number dropped.
    fn drop_from_fattest(&mut self, max_packets: u32, ev: &mut Events<T>) -> (usize, u32) {
        let mut maxbacklog = 0;
        let mut idx = 0;
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > maxbacklog {
                maxbacklog = b;
                idx = i;
            }
        }
        // Our goal is to drop half of this fat flow's backlog.
        let threshold = maxbacklog >> 1;
        let flow = &mut self.flows[idx];
        let (mut len, mut mem, mut i) = (0u32, 0u32, 0u32);
        loop {
            let Some(p) = flow.q.pop_front() else { break };
            len += p.meta.len;
            mem += truesize(p.meta.len);
            ev.drop(p, DropReason::Overlimit);
            i += 1;
            if !(i < max_packets && len < threshold) {
                break;
            }
        }
        // Tell CoDel to increase its signal strength too.
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        self.backlogs[idx] -= len;
        self.totals.memory_usage -= mem;
        self.totals.backlog -= len;
        self.totals.qlen -= i;
        (idx, i)
    }
}

impl<T> Default for FqCodel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Qdisc<T> for FqCodel<T> {
    fn name(&self) -> &'static str {
        "fq_codel"
    }

    fn enqueue(&mut self, pkt: Packet<T>, _now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        let idx = self.hasher.bucket(pkt.meta.flow, rng) as usize;
        let len = pkt.meta.len;
        let flow = &mut self.flows[idx];
        flow.q.push_back(pkt);
        self.backlogs[idx] += len;
        self.totals.backlog += len;
        if self.lists.activate(idx) {
            self.new_flow_count += 1;
        }
        self.totals.memory_usage += truesize(len);
        let memory_limited = self.totals.memory_usage > self.memory_limit;
        self.totals.qlen += 1;
        if self.totals.qlen <= self.limit && !memory_limited {
            return;
        }
        // Over a limit: instead of one packet, drop half of the fattest
        // flow's backlog (at most drop_batch_size packets) to amortise the scan.
        let (_, n) = self.drop_from_fattest(self.drop_batch_size, ev);
        self.drop_overlimit += n as u64;
        if memory_limited {
            self.drop_overmemory += n as u64;
        }
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        let (flows, backlogs, totals) = (&mut self.flows, &mut self.backlogs, &mut self.totals);
        let (cparams, cstats, which) = (&self.cparams, &mut self.cstats, self.codel_backlog);
        self.lists.dequeue(|idx| {
            let flow = &mut flows[idx];
            let mut view = FlowView { q: &mut flow.q, flow_backlog: &mut backlogs[idx], totals: &mut *totals, which };
            let p = codel_dequeue(&mut view, cparams, &mut flow.cvars, cstats, now, ev)?;
            let len = p.meta.len;
            Some((p, len))
        })
    }

    fn backlog_bytes(&self) -> u64 {
        self.totals.backlog as u64
    }

    fn backlog_pkts(&self) -> usize {
        self.totals.qlen as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{Ecn, PacketMeta};

    fn pkt(flow: u64, len: u32, at: Nanos, id: u64) -> Packet<u64> {
        Packet { meta: PacketMeta { flow, len, enqueued_at: at, ecn: Ecn::NotEct, ..Default::default() }, data: id }
    }

    /// An fq_codel whose flows 1 and 2 (and 3) land in distinct queues.
    fn fq(limit: u32, drop_batch: u32) -> FqCodel<u64> {
        let q = FqCodel::with(1024, limit, 1514, 32 << 20, drop_batch, CodelParams { ecn: true, ..Default::default() })
            .with_hash_seed(12345);
        let b: Vec<u32> = (1..=3).map(|f| q.bucket_of(f).unwrap()).collect();
        assert!(b[0] != b[1] && b[1] != b[2] && b[0] != b[2], "test flows collide: {b:?}");
        q
    }

    #[test]
    fn a_new_sparse_flow_is_served_before_a_backlogged_old_flow() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10240, 64);
        for i in 0..10 {
            q.enqueue(pkt(1, 1500, 0, 100 + i), 0, &mut rng, &mut ev);
        }
        // Flow 1 is new with a 1514-byte quantum: two packets, then its deficit
        // is spent and the third dequeue moves it to old_flows.
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 100);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 101);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 102);
        assert_eq!((q.new_flows_len(), q.old_flows_len()), (0, 1));
        q.enqueue(pkt(2, 100, 0, 200), 0, &mut rng, &mut ev);
        assert_eq!((q.new_flows_len(), q.old_flows_len()), (1, 1));
        // The sparse flow's packet jumps the 7 queued bulk packets.
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 200);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 103);
        assert_eq!(q.new_flow_count, 2);
        assert!(ev.drops.is_empty());
    }

    #[test]
    fn an_emptied_new_flow_goes_to_the_end_of_old_flows_and_stays_old() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10240, 64);
        for i in 0..3 {
            q.enqueue(pkt(1, 1500, 0, 100 + i), 0, &mut rng, &mut ev);
        }
        for _ in 0..3 {
            q.dequeue(0, &mut rng, &mut ev); // flow 1 ends in old_flows
        }
        q.enqueue(pkt(2, 100, 0, 200), 0, &mut rng, &mut ev);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 200);
        // Flow 2 is now empty at the head of new_flows; old_flows is not empty,
        // so the next dequeue moves it to old_flows' tail instead of unlinking it.
        assert!(q.dequeue(0, &mut rng, &mut ev).is_none());
        // Both flows emptied: flow 1 (head of old) left the lists, and so did
        // flow 2 when it reached the head of old_flows empty.
        assert_eq!((q.new_flows_len(), q.old_flows_len()), (0, 0));

        // Again with flow 1 backlogged in 500-byte packets, so that it keeps
        // a positive deficit at the head of old_flows.
        for i in 0..10 {
            q.enqueue(pkt(1, 500, 0, 300 + i), 0, &mut rng, &mut ev);
        }
        for i in 0..5 {
            // 4 packets spend 2000 > 1514; the 5th turn moves it to old (deficit 1028).
            assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 300 + i);
        }
        q.enqueue(pkt(2, 100, 0, 400), 0, &mut rng, &mut ev);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 400);
        // Flow 2 empties at the head of new_flows: it moves behind flow 1 in
        // old_flows, still linked, and flow 1 sends.
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 305);
        assert_eq!((q.new_flows_len(), q.old_flows_len()), (0, 2));
        let count = q.new_flow_count;
        q.enqueue(pkt(2, 100, 0, 401), 0, &mut rng, &mut ev);
        // Still linked in old_flows: it does not become a new flow again,
        // and waits for flow 1's turn to end.
        assert_eq!(q.new_flow_count, count);
        assert_eq!((q.new_flows_len(), q.old_flows_len()), (0, 2));
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 306);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 401);
    }

    #[test]
    fn drr_shares_bytes_equally_between_flows_of_different_packet_sizes() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10240, 64);
        for i in 0..400 {
            q.enqueue(pkt(1, 1500, 0, i), 0, &mut rng, &mut ev);
        }
        for i in 0..1200 {
            q.enqueue(pkt(2, 500, 0, 10_000 + i), 0, &mut rng, &mut ev);
        }
        let (mut a, mut b) = (0u64, 0u64);
        for _ in 0..600 {
            // sojourn 0: CoDel never acts
            let p = q.dequeue(0, &mut rng, &mut ev).unwrap();
            if p.meta.flow == 1 { a += 1500 } else { b += 500 }
        }
        assert!(ev.drops.is_empty());
        // Both served the same bytes to within one quantum plus one packet,
        // while flow 2 sent three times as many packets.
        assert!(a.abs_diff(b) <= 1514 + 1500, "a {a} b {b}");
        assert!(a > 100_000 && b > 100_000);
    }

    /// A ping (flow 2) queued beside a bulk flow (flow 1) and dequeued 50 ms, then 70 ms, after it
    /// arrived (CoDel target 20 ms, interval 100 ms, as mac80211's TXQs). The first dequeue starts
    /// CoDel's interval on flow 2 if the backlog it compares is above `mtu`; the second, after that
    /// interval, then drops the ping. sch_fq_codel compares the qdisc's 4500 bytes with 1514: the
    /// second ping is dropped and the bulk flow sends instead. mac80211 compares the ping flow's own
    /// backlog (0 once its one packet is taken) with its `mtu` of 0: no ping is ever dropped.
    #[test]
    fn mac80211s_codel_never_drops_a_flows_last_packet_where_sch_fq_codel_does() {
        const MS: Nanos = 1_000_000;
        for (which, mtu, second, dropped) in
            [(CodelBacklog::Qdisc, super::super::codel::DEFAULT_MTU, 100, vec![201]), (CodelBacklog::Flow, 0, 201, vec![])]
        {
            let mut rng = crate::rng::stream(1, 0);
            let mut ev = Events::default();
            let cp = CodelParams::from_ns(20 * MS, 100 * MS, None, mtu, false);
            let mut q = FqCodel::with(1024, 10240, 1514, 32 << 20, 64, cp).with_hash_seed(12345).with_codel_backlog(which);
            q.enqueue(pkt(2, 100, 0, 200), 0, &mut rng, &mut ev);
            for i in 0..3 {
                q.enqueue(pkt(1, 1500, 0, 100 + i), 0, &mut rng, &mut ev);
            }
            assert_ne!(q.bucket_of(1), q.bucket_of(2));
            // 50 ms: the ping (new_flows = [2, 1]) leaves, 50 ms > target.
            assert_eq!(q.dequeue(50 * MS, &mut rng, &mut ev).unwrap().data, 200);
            // The next ping arrives while flow 2 is still at the head of new_flows with quantum left.
            q.enqueue(pkt(2, 100, 100 * MS, 201), 100 * MS, &mut rng, &mut ev);
            // 170 ms: 70 ms of sojourn, 20 ms past the interval sch_fq_codel's rule started at 50 ms.
            assert_eq!(q.dequeue(170 * MS, &mut rng, &mut ev).unwrap().data, second, "{which:?}");
            assert_eq!(ev.drops.iter().map(|d| d.pkt.data).collect::<Vec<_>>(), dropped, "{which:?}");
            assert_eq!(q.cstats.drop_count, dropped.len() as u64);
        }
    }

    #[test]
    fn over_the_limit_the_fattest_flow_loses_half_its_backlog_from_the_head() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10, 64);
        for i in 0..8 {
            q.enqueue(pkt(1, 1500, 0, i), 0, &mut rng, &mut ev);
        }
        for i in 0..2 {
            q.enqueue(pkt(2, 1500, 0, 100 + i), 0, &mut rng, &mut ev);
        }
        assert!(ev.drops.is_empty());
        // The 11th packet (flow 2) overflows: flow 1 (12000 B) is the fattest;
        // drop from its head until >= 6000 B are gone: 4 packets.
        q.enqueue(pkt(2, 1500, 0, 102), 0, &mut rng, &mut ev);
        let ids: Vec<u64> = ev.drops.iter().map(|d| d.pkt.data).collect();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        assert!(ev.drops.iter().all(|d| d.reason == DropReason::Overlimit));
        assert_eq!(q.backlog_pkts(), 7);
        assert_eq!(q.backlog_bytes(), 7 * 1500);
        assert_eq!(q.drop_overlimit, 4);
        assert_eq!(q.flow_vars(q.bucket_of(1).unwrap()).count, 4);
        assert_eq!(q.memory_usage(), 7 * 2304);
    }

    #[test]
    fn drop_batch_caps_the_packets_dropped_per_overflow() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10, 2);
        for i in 0..11 {
            q.enqueue(pkt(1, 1500, 0, i), 0, &mut rng, &mut ev);
        }
        // Half of 16500 B would be 6 packets; the batch allows 2.
        let ids: Vec<u64> = ev.drops.iter().map(|d| d.pkt.data).collect();
        assert_eq!(ids, vec![0, 1]);
        assert_eq!(q.backlog_pkts(), 9);
    }

    #[test]
    fn the_memory_limit_triggers_the_fattest_flow_drop_too() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = FqCodel::with(1024, 10240, 1514, 3 * 2304, 64, CodelParams::default()).with_hash_seed(12345);
        for i in 0..4 {
            q.enqueue(pkt(1, 1500, 0, i), 0, &mut rng, &mut ev);
        }
        // 4 * 2304 > 6912: half of 6000 B = 2 packets dropped.
        assert_eq!(ev.drops.len(), 2);
        assert_eq!(q.drop_overmemory, 2);
    }

    #[test]
    fn flows_hashed_to_one_queue_share_it_in_fifo_order() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = FqCodel::with(1, 10240, 1514, 32 << 20, 64, CodelParams::default());
        q.enqueue(pkt(1, 1500, 0, 1), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1, 1500, 0, 2), 0, &mut rng, &mut ev);
        q.enqueue(pkt(2, 100, 0, 3), 0, &mut rng, &mut ev);
        let order: Vec<u64> = (0..3).map(|_| q.dequeue(0, &mut rng, &mut ev).unwrap().data).collect();
        assert_eq!(order, vec![1, 2, 3]);
    }

    #[test]
    fn codel_acts_per_flow_so_a_standing_bulk_queue_does_not_hurt_a_sparse_flow() {
        // Flow 1 keeps 200 packets queued (sojourn 200 ms at one packet per ms),
        // flow 2 sends one packet every 10 ms. Run 2 s.
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = fq(10240, 64);
        let ms = 1_000_000;
        for i in 0..200 {
            q.enqueue(pkt(1, 1500, 0, i), 0, &mut rng, &mut ev);
        }
        let mut sparse_delay_max = 0;
        let mut bulk_marks_or_drops = 0u64;
        for t in 1..=2000u64 {
            let now = t * ms;
            q.enqueue(pkt(1, 1500, now, 1000 + t), now, &mut rng, &mut ev);
            if t % 10 == 0 {
                q.enqueue(pkt(2, 100, now, 2), now, &mut rng, &mut ev);
            }
            while let Some(p) = q.dequeue(now, &mut rng, &mut ev) {
                if p.meta.flow == 2 {
                    sparse_delay_max = sparse_delay_max.max(now - p.meta.enqueued_at);
                } else {
                    break;
                }
            }
            bulk_marks_or_drops += ev.drops.drain(..).filter(|d| d.pkt.meta.flow == 1).count() as u64;
        }
        assert_eq!(sparse_delay_max, 0);
        assert!(bulk_marks_or_drops > 10, "{bulk_marks_or_drops}");
    }

    #[test]
    fn config_errors_name_the_offending_key() {
        let cfg = |k: &str, v: f64| QdiscConfig { kind: "fq_codel".into(), params: vec![(k.into(), v)], ..Default::default() };
        assert!(FqCodel::<u64>::from_config(&cfg("flows", 0.0)).unwrap_err().starts_with("qdisc_params.flows:"));
        assert!(FqCodel::<u64>::from_config(&cfg("quantum", 100.0)).unwrap_err().starts_with("qdisc_params.quantum:"));
        let q = FqCodel::<u64>::from_config(&QdiscConfig { kind: "fq_codel".into(), ..Default::default() }).unwrap();
        assert_eq!((q.limit, q.quantum(), q.memory_limit, q.drop_batch_size, q.cparams.ecn), (10240, 1514, 1 << 25, 64, true));
    }
}
