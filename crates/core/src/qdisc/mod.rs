//! Queues (Linux qdiscs) and AQMs.
//!
//! A qdisc holds packets between their arrival at a bottleneck and the start
//! of their transmission. The link that owns it (the simulator's `Link`, the
//! emulator's real-time loop) calls [`Qdisc::enqueue`] when a packet arrives
//! and [`Qdisc::dequeue`] whenever the wire is free; both get `now` and the
//! link's seeded RNG, so the same code runs in virtual and in real time.
//!
//! The payload type `T` is opaque: the simulator carries a segment
//! descriptor, the emulator carries the packet's bytes.
//!
//! Statistics are not re-implemented per qdisc: every drop comes back to the
//! caller as a [`Dropped`] with a [`DropReason`] in an [`Events`] sink, and the
//! caller (one place, [`Stats`]) counts them.
//!
//! One qdisc per file: `fifo.rs`, ... Add one by writing the file,
//! implementing [`Qdisc`] and naming it in [`build`].

use crate::rng::Rng;
use crate::time::Nanos;

pub mod chain;
pub mod fifo;

// Schedulers and shapers (sched): CAKE, sch_fq, TBF, policer.
pub mod cake;
pub mod fq;
pub mod policer;
pub mod tbf;

// AQMs (aqm): CoDel, fq_codel, RED, PIE, FQ-PIE and their shared helpers (the flow-queueing round robin is `drr`).
mod aqm_params;
pub mod codel;
pub mod drr;
pub mod flow_hash;
pub mod fq_codel;
pub mod fq_pie;
pub mod pie;
pub mod red;

/// The two ECN bits of the IP header (RFC 3168).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

/// What a qdisc may look at. Construct with `..Default::default()` so that
/// fields added later do not break callers.
#[derive(Debug, Clone, Copy, Default)]
pub struct PacketMeta {
    /// Flow key (stands in for the 5-tuple hash of Linux's `skb_get_hash`).
    pub flow: u64,
    /// Source and destination host ids (CAKE's host isolation).
    pub src_host: u32,
    pub dst_host: u32,
    /// Bytes on the wire: the IP packet (1500 for a full-size TCP segment).
    pub len: u32,
    pub ecn: Ecn,
    /// DiffServ code point (CAKE tins).
    pub dscp: u8,
    /// A pure TCP ACK (no payload): CAKE's ACK filter.
    pub is_pure_ack: bool,
    /// Cumulative ACK number of a TCP segment (CAKE's ACK filter keeps the
    /// newest of a flow's queued pure ACKs by it); 0 when not TCP.
    pub tcp_ack: u32,
    /// Earliest departure time requested by the sender (EDT, `skb->tstamp`);
    /// 0 = as soon as possible. sch_fq honours it.
    pub tstamp: Nanos,
    /// Set by the caller when the packet is offered to the qdisc: queueing
    /// delay = dequeue time - `enqueued_at`.
    pub enqueued_at: Nanos,
}

#[derive(Debug, Clone)]
pub struct Packet<T> {
    pub meta: PacketMeta,
    pub data: T,
}

/// Why a packet was dropped. An enum, never a string: statistics and the
/// result schema index by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Buffer full at enqueue (tail drop).
    QueueFull,
    /// Dropped by an AQM's control law (CoDel, PIE, RED, COBALT).
    Aqm,
    /// Dropped to make room for another flow (fq_codel's fattest-flow head drop), or a per-flow limit.
    Overlimit,
    /// Exceeded a policer's token bucket.
    Policer,
    /// The link's configured random loss.
    RandomLoss,
    /// A queued pure ACK made redundant by a newer one (CAKE's ACK filter):
    /// not a congestion signal.
    AckFilter,
}

impl DropReason {
    pub const ALL: [DropReason; 6] = [
        DropReason::QueueFull,
        DropReason::Aqm,
        DropReason::Overlimit,
        DropReason::Policer,
        DropReason::RandomLoss,
        DropReason::AckFilter,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::Aqm => "aqm",
            DropReason::Overlimit => "overlimit",
            DropReason::Policer => "policer",
            DropReason::RandomLoss => "random_loss",
            DropReason::AckFilter => "ack_filter",
        }
    }
}

#[derive(Debug)]
pub struct Dropped<T> {
    pub pkt: Packet<T>,
    pub reason: DropReason,
}

/// Where a qdisc reports what it did besides queueing: drops (of the offered
/// packet or of others) and ECN marks.
#[derive(Debug)]
pub struct Events<T> {
    pub drops: Vec<Dropped<T>>,
    /// Packets CE-marked since the caller last drained this sink.
    pub marks: u64,
}

impl<T> Default for Events<T> {
    fn default() -> Self {
        Events { drops: Vec::new(), marks: 0 }
    }
}

impl<T> Events<T> {
    pub fn drop(&mut self, pkt: Packet<T>, reason: DropReason) {
        self.drops.push(Dropped { pkt, reason });
    }
}

/// Linux `struct Qdisc_ops` reduced to what a bottleneck needs.
pub trait Qdisc<T> {
    /// Short name as in the scenario (`"fifo"`, `"fq_codel"`).
    fn name(&self) -> &'static str;

    /// Offer `pkt` (its `meta.enqueued_at` already set to `now`). A qdisc that
    /// refuses it, or drops others to make room, reports them in `ev`.
    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>);

    /// The packet to transmit now, if any may leave now. AQM drops on the way
    /// out go into `ev`.
    fn dequeue(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>>;

    /// For qdiscs that are not work-conserving (shapers, sch_fq pacing): when
    /// non-empty but [`Qdisc::dequeue`] returned None, the earliest time worth
    /// trying again. None: work-conserving (dequeue whenever the wire is free).
    fn next_wakeup(&self, _now: Nanos) -> Option<Nanos> {
        None
    }

    /// Bytes queued (Linux `qlen` in bytes: `sch->qstats.backlog`).
    fn backlog_bytes(&self) -> u64;

    /// Packets queued (`sch->q.qlen`).
    fn backlog_pkts(&self) -> usize;
}

/// The size limit of a queue: bytes (bfifo), packets (pfifo) or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limit {
    pub bytes: Option<u64>,
    pub pkts: Option<u64>,
}

impl Limit {
    /// Would `backlog` plus a packet of `len` bytes exceed the limit?
    #[inline]
    pub fn exceeded(&self, backlog_bytes: u64, backlog_pkts: usize, len: u32) -> bool {
        self.bytes.is_some_and(|b| backlog_bytes + len as u64 > b) || self.pkts.is_some_and(|p| backlog_pkts as u64 + 1 > p)
    }
}

/// A qdisc as the scenario describes it, in SI base units (the Python layer
/// has validated names and parameters and converted units).
#[derive(Debug, Clone, Default)]
pub struct QdiscConfig {
    /// `"fifo"`, ...
    pub kind: String,
    /// The direction's `buffer`.
    pub limit: Limit,
    /// The link rate in bit/s (shapers and CAKE need it).
    pub rate_bps: u64,
    /// Named parameters in base units: ns for times, bytes for sizes, 0/1 for booleans.
    pub params: Vec<(String, f64)>,
}

impl QdiscConfig {
    /// A parameter by name, or `default`.
    pub fn param(&self, name: &str, default: f64) -> f64 {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| *v).unwrap_or(default)
    }
}

/// The unit of a qdisc parameter, which tells the scenario layer how to
/// parse and validate it (`"5ms"` → ns, `"1514B"` → bytes, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A duration, stored in ns.
    Time,
    /// A size, stored in bytes.
    Size,
    /// A whole number (packets, flows, ...).
    Count,
    /// true/false, stored as 1/0.
    Bool,
    /// A fraction in [0, 1] (probabilities, weights).
    Ratio,
    /// A bit rate, stored in bit/s.
    Rate,
    /// A choice among named options, stored as the option's index in `choices`.
    Choice(&'static [&'static str]),
}

/// One documented parameter of a qdisc: its scenario key
/// (`[link.down.qdisc_params] name = ...`), unit, Linux default and meaning.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    /// Default in base units (ns, bytes, bit/s, 0/1, index).
    pub default: f64,
    pub doc: &'static str,
}

/// A known qdisc: scenario name, its parameters, and how to build it.
pub struct QdiscInfo {
    pub name: &'static str,
    pub doc: &'static str,
    pub params: &'static [ParamSpec],
}

/// Every qdisc the scenario language knows, with its parameters. The Python
/// scenario layer validates `qdisc` and `qdisc_params` against this table.
pub const QDISCS: &[QdiscInfo] = &[QdiscInfo {
    name: "fifo",
    doc: "tail-drop FIFO (Linux pfifo/bfifo); its size is the direction's `buffer`",
    params: &[],
},
QdiscInfo { name: "codel", doc: codel::DOC, params: codel::PARAMS },
policer::INFO,
tbf::INFO,
fq::INFO,
cake::INFO,
QdiscInfo { name: "fq_codel", doc: fq_codel::DOC, params: fq_codel::PARAMS },
QdiscInfo { name: "pie", doc: pie::DOC, params: pie::PARAMS },
QdiscInfo { name: "fq_pie", doc: fq_pie::DOC, params: fq_pie::PARAMS },
QdiscInfo { name: "red", doc: red::DOC, params: red::PARAMS },
];

/// Names of the qdiscs [`build`] knows.
pub fn names() -> Vec<&'static str> {
    QDISCS.iter().map(|q| q.name).collect()
}

/// The parameters of qdisc `name`, or None if unknown.
pub fn params(name: &str) -> Option<&'static [ParamSpec]> {
    QDISCS.iter().find(|q| q.name == name).map(|q| q.params)
}

/// Build the qdisc a config names.
pub fn build<T: 'static>(cfg: &QdiscConfig) -> Result<Box<dyn Qdisc<T>>, String> {
    match cfg.kind.as_str() {
        "fifo" => Ok(Box::new(fifo::Fifo::new(cfg.limit))),
        "policer" => policer::build(cfg),
        "tbf" => tbf::build(cfg),
        "fq" => fq::build(cfg),
        "cake" => cake::build(cfg),
        "codel" => Ok(Box::new(codel::Codel::from_config(cfg)?)),
        "fq_codel" => Ok(Box::new(fq_codel::FqCodel::from_config(cfg)?)),
        "pie" => Ok(Box::new(pie::Pie::from_config(cfg)?)),
        "fq_pie" => Ok(Box::new(fq_pie::FqPie::from_config(cfg)?)),
        "red" => Ok(Box::new(red::Red::from_config(cfg)?)),
        other => Err(format!("unknown qdisc \"{other}\" (known: {})", names().join(", "))),
    }
}

/// Per-queue counters, kept by the caller from [`Events`] (never by each qdisc).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub enqueued_pkts: u64,
    pub dequeued_pkts: u64,
    pub dequeued_bytes: u64,
    pub drops: [u64; DropReason::ALL.len()],
    pub marks: u64,
}

impl Stats {
    /// Count and drain a sink's events, handing each dropped packet to `f`.
    pub fn absorb<T>(&mut self, ev: &mut Events<T>, mut f: impl FnMut(Dropped<T>)) {
        self.marks += ev.marks;
        ev.marks = 0;
        for d in ev.drops.drain(..) {
            self.drops[d.reason as usize] += 1;
            f(d);
        }
    }
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}
