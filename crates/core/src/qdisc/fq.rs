//! sch_fq: per-flow fair queueing with Earliest-Departure-Time pacing.
//!
//! Source: Linux `net/sched/sch_fq.c` (v6.12, Eric Dumazet), tc-fq(8).
//!
//! Model in a nutshell: every flow (`meta.flow`, standing for the kernel's
//! socket) has its own FIFO, ordered by departure time. A packet's departure
//! time is its EDT stamp (`meta.tstamp`, set by the sender's pacing) or its
//! arrival time when unstamped. Flows take turns in a deficit round robin:
//! a flow with credit sends its head packet and pays its length; a flow out
//! of credit gets `quantum` more and goes to the back of the `old` list. New
//! (or long idle) flows enter the `new` list, served first, with
//! `initial_quantum` of credit. A flow whose head packet is not due yet
//! (EDT in the future, or the `maxrate` gap since its previous packet not
//! elapsed) is *throttled*: taken off the round robin and parked in a tree
//! ordered by its `time_next_packet` until then. That is what makes sch_fq
//! non-work-conserving: [`Qdisc::next_wakeup`] is the earliest parked time.
//!
//! States of a flow: detached (empty, not in any list, `age` remembers when
//! it emptied), listed (`new` or `old` list), throttled (in the delayed tree).
//!
//! The fast path (v6.7+): a packet that is due now, arriving while no flow
//! is eligible to send and fewer than 8 packets wait in the internal FIFO,
//! bypasses the flows entirely (no credit, no flow limit); dequeue serves
//! that FIFO first. Disabled whenever `maxrate` is set, like the kernel.
//!
//! Constants (Linux defaults, `fq_init`), psched_mtu = 1514 B (Ethernet):
//! - `limit` 10000 packets, `flow_limit` 100 packets;
//! - `quantum` 2 * 1514 = 3028 B, `initial_quantum` 10 * 1514 = 15140 B;
//! - `flow_refill_delay` 40 ms: a flow idle that long gets at least a quantum;
//! - `low_rate_threshold` 550 kbit/s: below it unstamped packets of a paced
//!   flow are sent one per round (only with `maxrate` that low);
//! - `horizon` 10 s with `horizon_drop` on: a packet stamped more than 10 s
//!   in the future is dropped ([`DropReason::Overlimit`], the kernel's
//!   `QDISC_DROP_HORIZON_LIMIT`); with `horizon_drop` off its stamp is capped;
//! - `ce_threshold` 4294 s (off): ECT packets leaving later than this after
//!   their due time are CE-marked;
//! - each packet's pacing gap at `maxrate` is capped at 1 s.
//!
//! Differences from the kernel, all outside what a bottleneck sees:
//! - one priority band: PacketMeta has no `skb->priority`, and every packet
//!   maps to band 1 as priority 0 does, so the band WRR never acts; `limit`
//!   is that band's limit;
//! - no socket pacing rate (`sk_pacing_rate`): senders pace by EDT stamps;
//! - flows are never garbage-collected (the kernel frees flows detached for
//!   more than 3 s that lie on a lookup path; a returning flow would then get
//!   `initial_quantum` again instead of `max(credit, quantum)`);
//! - time is ns everywhere (the kernel keeps `age` and the refill delay in
//!   jiffies, 4 ms at HZ=250); no timer slack (the kernel's watchdog may fire
//!   up to 10 us late).
//! Drops: the band limit is [`DropReason::QueueFull`]; `flow_limit` and the
//! horizon are [`DropReason::Overlimit`].

use super::params::{MAX_TC_TIME_NS, U32_MAX, U64_MAX};
use super::{DropReason, Ecn, Events, Packet, ParamSpec, Params, Qdisc};
use crate::rng::Rng;
use crate::time::{Nanos, NS_PER_MS, NS_PER_SEC};
use std::collections::{BTreeMap, VecDeque};

/// psched_mtu of an Ethernet device with a 1500-byte MTU.
const PSCHED_MTU: u32 = 1514;
/// The fast path's internal FIFO stops taking packets at this length.
const FASTPATH_MAX: usize = 8;

/// sch_fq's tunables (tc-fq(8) names).
#[derive(Debug, Clone, Copy)]
pub struct FqParams {
    /// `limit`: packets in the (single) band.
    pub limit: u32,
    /// `flow_limit`: packets per flow.
    pub flow_limit: u32,
    /// `quantum`: credit per round, bytes.
    pub quantum: u32,
    /// `initial_quantum`: credit of a new flow, bytes.
    pub initial_quantum: u32,
    /// `maxrate`: per-flow pacing rate in bytes/s; None = unlimited.
    pub maxrate_bytes_ps: Option<u64>,
    /// `refill_delay`, ns.
    pub refill_delay: Nanos,
    /// `low_rate_threshold`, bytes/s.
    pub low_rate_threshold: u64,
    /// `horizon`, ns.
    pub horizon: Nanos,
    /// `horizon_drop`.
    pub horizon_drop: bool,
    /// `ce_threshold`, ns.
    pub ce_threshold: Nanos,
}

impl Default for FqParams {
    /// `fq_init`: the defaults of [`PARAMS`].
    fn default() -> Self {
        FqParams::from_params(&Params::defaults(PARAMS))
    }
}

impl FqParams {
    /// From parameters read through [`PARAMS`] (rates there are bit/s, here bytes/s).
    pub fn from_params(p: &Params) -> Self {
        let maxrate = p.u64("maxrate") / 8;
        FqParams {
            limit: p.u32("limit"),
            flow_limit: p.u32("flow_limit"),
            quantum: p.u32("quantum"),
            initial_quantum: p.u32("initial_quantum"),
            maxrate_bytes_ps: (maxrate > 0).then_some(maxrate),
            refill_delay: p.u64("refill_delay"),
            low_rate_threshold: p.u64("low_rate_threshold") / 8,
            horizon: p.u64("horizon"),
            horizon_drop: p.flag("horizon_drop"),
            ce_threshold: p.u64("ce_threshold"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlowState {
    /// Empty and in no list; emptied at `age`.
    Detached { age: Nanos },
    Listed,
    Throttled,
}

struct Entry<T> {
    pkt: Packet<T>,
    time_to_send: Nanos,
}

struct Flow<T> {
    /// Packets in non-decreasing `time_to_send` order (the kernel's linear list).
    head: VecDeque<Entry<T>>,
    /// Packets that arrived with an earlier `time_to_send` than the list's
    /// tail (the kernel's `t_root`), keyed by (time, arrival number).
    t_root: BTreeMap<(Nanos, u64), Entry<T>>,
    qlen: u32,
    credit: i64,
    time_next_packet: Nanos,
    state: FlowState,
}

impl<T> Flow<T> {
    fn new(credit: i64, now: Nanos) -> Self {
        Flow {
            head: VecDeque::new(),
            t_root: BTreeMap::new(),
            qlen: 0,
            credit,
            time_next_packet: 0,
            state: FlowState::Detached { age: now },
        }
    }

    /// `flow_queue_add`.
    fn add(&mut self, e: Entry<T>, seq: u64) {
        match self.head.back() {
            Some(tail) if e.time_to_send < tail.time_to_send => {
                self.t_root.insert((e.time_to_send, seq), e);
            }
            _ => self.head.push_back(e),
        }
    }

    /// `fq_peek`: the earlier of the list head and the tree's first.
    fn peek_time(&self) -> Option<Nanos> {
        let h = self.head.front().map(|e| e.time_to_send);
        let r = self.t_root.keys().next().map(|k| k.0);
        match (h, r) {
            (Some(h), Some(r)) => Some(if r < h { r } else { h }),
            (a, b) => a.or(b),
        }
    }

    fn take(&mut self) -> Option<Entry<T>> {
        let h = self.head.front().map(|e| e.time_to_send);
        let r = self.t_root.keys().next().copied();
        match (h, r) {
            (Some(h), Some(r)) if r.0 < h => self.t_root.remove(&r),
            (Some(_), _) => self.head.pop_front(),
            (None, Some(r)) => self.t_root.remove(&r),
            (None, None) => None,
        }
    }
}

/// sch_fq.
pub struct Fq<T> {
    p: FqParams,
    /// Flow key -> index into `flows` (the kernel's rb-trees of sockets).
    index: BTreeMap<u64, usize>,
    flows: Vec<Flow<T>>,
    /// The fast path's FIFO (`q->internal`).
    internal: Flow<T>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    /// Throttled flows by (time_next_packet, insertion number).
    delayed: BTreeMap<(Nanos, u64), usize>,
    time_next_delayed_flow: Nanos,
    /// Packets counted against `limit` (the band's count; fast path excluded).
    band_pkts: u32,
    /// Flows with no packet (`q->inactive_flows`).
    inactive_flows: usize,
    qlen: usize,
    bytes: u64,
    seq: u64,
}

impl<T> Fq<T> {
    pub fn new(p: FqParams) -> Self {
        Fq {
            p,
            index: BTreeMap::new(),
            flows: Vec::new(),
            internal: Flow::new(0, 0),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            delayed: BTreeMap::new(),
            time_next_delayed_flow: u64::MAX,
            band_pkts: 0,
            inactive_flows: 0,
            qlen: 0,
            bytes: 0,
            seq: 0,
        }
    }

    fn throttled_flows(&self) -> usize {
        self.delayed.len()
    }

    /// `fq_fastpath_check`.
    fn fastpath_ok(&self, time_to_send: Nanos, now: Nanos) -> bool {
        if time_to_send > now || self.p.maxrate_bytes_ps.is_some() {
            return false;
        }
        if self.qlen != 0 {
            if self.flows.len() != self.inactive_flows + self.throttled_flows() {
                return false;
            }
            if self.internal.qlen as usize >= FASTPATH_MAX {
                return false;
            }
            if self.time_next_delayed_flow <= now {
                return false;
            }
        }
        true
    }

    fn set_throttled(&mut self, f: usize) {
        let t = self.flows[f].time_next_packet;
        self.seq += 1;
        self.delayed.insert((t, self.seq), f);
        self.flows[f].state = FlowState::Throttled;
        if self.time_next_delayed_flow > t {
            self.time_next_delayed_flow = t;
        }
    }

    /// `fq_check_throttled`: move flows whose time has come back to `old`.
    fn check_throttled(&mut self, now: Nanos) {
        if self.time_next_delayed_flow > now {
            return;
        }
        self.time_next_delayed_flow = u64::MAX;
        while let Some((&(t, s), &f)) = self.delayed.iter().next() {
            if t > now {
                self.time_next_delayed_flow = t;
                break;
            }
            self.delayed.remove(&(t, s));
            self.flows[f].state = FlowState::Listed;
            self.old_flows.push_back(f);
        }
    }
}

fn set_ce(pkt: &mut Packet<impl Sized>) -> bool {
    match pkt.meta.ecn {
        Ecn::Ect0 | Ecn::Ect1 => {
            pkt.meta.ecn = Ecn::Ce;
            true
        }
        _ => false,
    }
}

impl<T> Qdisc<T> for Fq<T> {
    fn name(&self) -> &'static str {
        "fq"
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) {
        if self.band_pkts >= self.p.limit {
            ev.drop(pkt, DropReason::QueueFull);
            return;
        }
        let time_to_send = if pkt.meta.tstamp == 0 {
            now
        } else if pkt.meta.tstamp > now.saturating_add(self.p.horizon) {
            if self.p.horizon_drop {
                ev.drop(pkt, DropReason::Overlimit);
                return;
            }
            now + self.p.horizon
        } else {
            pkt.meta.tstamp
        };
        let len = pkt.meta.len as u64;
        self.seq += 1;
        let seq = self.seq;
        if self.fastpath_ok(time_to_send, now) {
            self.internal.qlen += 1;
            self.internal.add(Entry { pkt, time_to_send }, seq);
        } else {
            let f = match self.index.get(&pkt.meta.flow) {
                Some(&f) => f,
                None => {
                    self.flows.push(Flow::new(self.p.initial_quantum as i64, now));
                    let f = self.flows.len() - 1;
                    self.index.insert(pkt.meta.flow, f);
                    self.inactive_flows += 1;
                    f
                }
            };
            let (quantum, refill) = (self.p.quantum as i64, self.p.refill_delay);
            let flow = &mut self.flows[f];
            if flow.qlen >= self.p.flow_limit {
                ev.drop(pkt, DropReason::Overlimit);
                return;
            }
            if let FlowState::Detached { age } = flow.state {
                flow.state = FlowState::Listed;
                self.new_flows.push_back(f);
                if now > age + refill {
                    flow.credit = flow.credit.max(quantum);
                }
            }
            self.band_pkts += 1;
            if flow.qlen == 0 {
                self.inactive_flows -= 1;
            }
            flow.qlen += 1;
            flow.add(Entry { pkt, time_to_send }, seq);
        }
        self.qlen += 1;
        self.bytes += len;
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        if self.qlen == 0 {
            return None;
        }
        if let Some(e) = self.internal.take() {
            self.internal.qlen -= 1;
            self.qlen -= 1;
            self.bytes -= e.pkt.meta.len as u64;
            return Some(e.pkt);
        }
        self.check_throttled(now);
        loop {
            let from_new = !self.new_flows.is_empty();
            let f = match if from_new { self.new_flows.front() } else { self.old_flows.front() } {
                Some(&f) => f,
                None => return None,
            };
            let pop = |s: &mut Self| {
                if from_new {
                    s.new_flows.pop_front();
                } else {
                    s.old_flows.pop_front();
                }
            };
            if self.flows[f].credit <= 0 {
                self.flows[f].credit += self.p.quantum as i64;
                pop(self);
                self.old_flows.push_back(f);
                continue;
            }
            let Some(tts) = self.flows[f].peek_time() else {
                pop(self);
                if from_new {
                    // Force a pass through old_flows to prevent starvation.
                    self.old_flows.push_back(f);
                } else {
                    self.flows[f].state = FlowState::Detached { age: now };
                }
                continue;
            };
            let time_next_packet = tts.max(self.flows[f].time_next_packet);
            if now < time_next_packet {
                pop(self);
                self.flows[f].time_next_packet = time_next_packet;
                self.set_throttled(f);
                continue;
            }
            let mut e = self.flows[f].take().expect("peeked");
            self.qlen -= 1;
            self.bytes -= e.pkt.meta.len as u64;
            self.band_pkts -= 1;
            if now - time_next_packet > self.p.ce_threshold && set_ce(&mut e.pkt) {
                ev.marks += 1;
            }
            let flow = &mut self.flows[f];
            flow.qlen -= 1;
            if flow.qlen == 0 {
                self.inactive_flows += 1;
            }
            let mut plen = e.pkt.meta.len as u64;
            flow.credit -= plen as i64;
            // Pacing (rate_enable is always on): EDT stamps are honoured by
            // time_to_send above; maxrate adds a gap after each packet.
            let rate = self.p.maxrate_bytes_ps;
            if e.pkt.meta.tstamp == 0 {
                if rate.is_some_and(|r| r <= self.p.low_rate_threshold) {
                    flow.credit = 0;
                } else {
                    plen = plen.max(self.p.quantum as u64);
                    if flow.credit > 0 {
                        return Some(e.pkt);
                    }
                }
            }
            if let Some(rate) = rate {
                let mut gap = if rate > 0 { plen * NS_PER_SEC / rate } else { plen * NS_PER_SEC };
                gap = gap.min(NS_PER_SEC);
                if flow.time_next_packet != 0 {
                    // Account for timer drift: now may be late.
                    gap -= (gap / 2).min(now - flow.time_next_packet);
                }
                flow.time_next_packet = now + gap;
            }
            return Some(e.pkt);
        }
    }

    fn next_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if self.qlen == 0 {
            return None;
        }
        let eligible = self.internal.qlen > 0 || self.flows.len() > self.inactive_flows + self.throttled_flows();
        if eligible {
            return Some(now);
        }
        Some(self.time_next_delayed_flow.max(now))
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_pkts(&self) -> usize {
        self.qlen
    }
}

/// Scenario doc of `fq` (the [`super::QdiscKind`] registry).
pub const DOC: &str = "per-flow fair queueing with EDT pacing (Linux sch_fq): flows take turns by quantum, \
          packets leave no earlier than their sender's departure stamp; ignores the direction's `buffer`";

/// `qdisc_params` of `fq`, with Linux's defaults (`fq_init`, psched_mtu 1514 B)
/// and the ranges `fq_change` accepts (`quantum` at most 2^20 B; times a u32 of µs).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::count("limit", 10_000.0, 1.0, U32_MAX,
        "tc-fq `limit`: packets queued in total (fast path excluded), Linux default 10000"),
    ParamSpec::count("flow_limit", 100.0, 1.0, U32_MAX,
        "tc-fq `flow_limit`: packets queued per flow, Linux default 100"),
    ParamSpec::size("quantum", (2 * PSCHED_MTU) as f64, 1.0, (1 << 20) as f64,
        "tc-fq `quantum`: bytes of credit a flow gets per round, Linux default 2 x 1514 B"),
    ParamSpec::size("initial_quantum", (10 * PSCHED_MTU) as f64, 0.0, U32_MAX,
        "tc-fq `initial_quantum`: credit of a new flow, bytes, Linux default 10 x 1514 B"),
    ParamSpec::rate("maxrate", 0.0, 0.0, U64_MAX,
        "tc-fq `maxrate`: per-flow pacing cap in bit/s; 0 = unlimited (Linux default)"),
    ParamSpec::time("refill_delay", (40 * NS_PER_MS) as f64, 0.0, MAX_TC_TIME_NS,
        "tc-fq `refill_delay`: a flow idle this long gets at least one quantum back, Linux default 40 ms"),
    ParamSpec::rate("low_rate_threshold", 550_000.0, 0.0, U64_MAX,
        "tc-fq `low_rate_threshold`: at or below this maxrate unstamped packets go one per round, bit/s, Linux default 550 kbit/s"),
    ParamSpec::time("horizon", (10 * NS_PER_SEC) as f64, 0.0, MAX_TC_TIME_NS,
        "tc-fq `horizon`: packets stamped further in the future are dropped (or capped), Linux default 10 s"),
    ParamSpec::flag("horizon_drop", true,
        "tc-fq `horizon_drop`/`horizon_cap`: true drops beyond the horizon (Linux default), false caps the stamp"),
    ParamSpec::time("ce_threshold", MAX_TC_TIME_NS, 0.0, MAX_TC_TIME_NS,
        "tc-fq `ce_threshold`: CE-mark ECT packets leaving this late after their due time; Linux default 4294 s (off)"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::PacketMeta;

    fn pkt(flow: u64, len: u32, tstamp: Nanos, id: u32) -> Packet<u32> {
        Packet { meta: PacketMeta { flow, len, tstamp, ..Default::default() }, data: id }
    }

    /// Dequeue everything, sleeping until `next_wakeup` whenever told to wait.
    fn drain(q: &mut Fq<u32>, mut now: Nanos) -> Vec<(u32, Nanos)> {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut out = Vec::new();
        while q.backlog_pkts() > 0 {
            match q.dequeue(now, &mut rng, &mut ev) {
                Some(p) => out.push((p.data, now)),
                None => {
                    let t = q.next_wakeup(now).unwrap();
                    assert!(t > now, "told to wait but not until later");
                    now = t;
                }
            }
        }
        out
    }

    #[test]
    fn a_flows_packets_leave_at_their_edt_tstamps() {
        let mut q = Fq::new(FqParams::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        // A sender pacing at 1500 B per 1 ms stamps 5 packets at 1..5 ms.
        for i in 0..5u32 {
            q.enqueue(pkt(7, 1500, (i as u64 + 1) * NS_PER_MS, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).map(|p| p.data), None);
        assert_eq!(q.next_wakeup(0), Some(NS_PER_MS));
        let d = drain(&mut q, 0);
        let want: Vec<_> = (0..5u32).map(|i| (i, (i as u64 + 1) * NS_PER_MS)).collect();
        assert_eq!(d, want);
    }

    #[test]
    fn an_out_of_order_stamp_is_sent_in_time_order() {
        let mut q = Fq::new(FqParams::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        q.enqueue(pkt(1, 100, 3 * NS_PER_MS, 0), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1, 100, 2 * NS_PER_MS, 1), 0, &mut rng, &mut ev);
        assert_eq!(drain(&mut q, 0), vec![(1, 2 * NS_PER_MS), (0, 3 * NS_PER_MS)]);
    }

    #[test]
    fn flow_limit_drops_the_101st_packet_of_a_flow() {
        let mut q = Fq::new(FqParams::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        // Stamped 1 s ahead so that none takes the fast path.
        for i in 0..101u32 {
            q.enqueue(pkt(3, 1500, NS_PER_SEC, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].pkt.data, 100);
        assert_eq!(ev.drops[0].reason, DropReason::Overlimit);
        assert_eq!(q.backlog_pkts(), 100);
        // Another flow is not affected.
        q.enqueue(pkt(4, 1500, NS_PER_SEC, 999), 0, &mut rng, &mut ev);
        assert_eq!(q.backlog_pkts(), 101);
    }

    #[test]
    fn a_packet_beyond_the_horizon_is_dropped_or_capped() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = Fq::new(FqParams::default());
        q.enqueue(pkt(1, 100, 10 * NS_PER_SEC + 1, 0), 0, &mut rng, &mut ev);
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].reason, DropReason::Overlimit);
        let mut q = Fq::new(FqParams { horizon_drop: false, ..Default::default() });
        q.enqueue(pkt(1, 100, 20 * NS_PER_SEC, 1), 0, &mut rng, &mut ev);
        assert_eq!(drain(&mut q, 0), vec![(1, 10 * NS_PER_SEC)]);
    }

    #[test]
    fn backlogged_flows_share_by_quantum_in_round_robin() {
        let mut q = Fq::new(FqParams::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        // The first 8 due packets of an empty qdisc take the fast path:
        // flow 9's eight 100-byte packets.
        for i in 0..8u32 {
            q.enqueue(pkt(9, 100, 0, 900 + i), 0, &mut rng, &mut ev);
        }
        // Flows 1 and 2, 40 packets of 1514 B each, all due now.
        for i in 0..40u32 {
            q.enqueue(pkt(1, 1514, 0, 100 + i), 0, &mut rng, &mut ev);
            q.enqueue(pkt(2, 1514, 0, 200 + i), 0, &mut rng, &mut ev);
        }
        let order: Vec<u32> = drain(&mut q, 0).into_iter().map(|(id, _)| id).collect();
        // Fast path first, in order.
        assert_eq!(&order[..8], &(900..908).collect::<Vec<_>>()[..]);
        // New flows start with initial_quantum = 15140 B = 10 packets each,
        // flow 1 first; then quantum = 3028 B = 2 packets per turn.
        let mut want: Vec<u32> = (100..110).chain(200..210).collect();
        for r in 0..15 {
            want.extend([110 + 2 * r, 111 + 2 * r, 210 + 2 * r, 211 + 2 * r]);
        }
        assert_eq!(&order[8..], &want[..]);
    }

    #[test]
    fn maxrate_spaces_a_flows_packets_and_next_wakeup_says_when() {
        // maxrate 12 Mbit/s = 1.5e6 B/s: 1500 B every 1 ms.
        let mut q = Fq::new(FqParams { maxrate_bytes_ps: Some(1_500_000), ..Default::default() });
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for i in 0..4u32 {
            q.enqueue(pkt(5, 1500, 1, i), 0, &mut rng, &mut ev);
        }
        let d = drain(&mut q, 1);
        assert_eq!(d, vec![(0, 1), (1, 1 + NS_PER_MS), (2, 1 + 2 * NS_PER_MS), (3, 1 + 3 * NS_PER_MS)]);
    }

    #[test]
    fn a_throttled_flow_does_not_hold_back_another() {
        let mut q = Fq::new(FqParams::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        q.enqueue(pkt(1, 1500, 5 * NS_PER_MS, 0), 0, &mut rng, &mut ev);
        q.enqueue(pkt(2, 1500, 0, 1), 0, &mut rng, &mut ev);
        assert_eq!(drain(&mut q, 0), vec![(1, 0), (0, 5 * NS_PER_MS)]);
    }
}
