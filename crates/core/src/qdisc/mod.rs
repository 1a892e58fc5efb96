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
//! One qdisc per file: `fifo.rs`, ... Add one by writing the file
//! (implementing [`Qdisc`], with its `DOC` and its parameter table `PARAMS`,
//! see [`params`]) and adding it to [`QdiscKind`].

use crate::rng::Rng;
use crate::time::Nanos;

pub mod chain;
pub mod fifo;
pub mod params;

pub use params::{ParamKind, ParamSpec, Params};

// Schedulers and shapers (sched): CAKE, sch_fq, TBF, policer.
pub mod cake;
pub mod fq;
pub mod policer;
pub mod tbf;

// AQMs (aqm): CoDel, fq_codel, RED, PIE, FQ-PIE and their shared helpers (the flow-queueing round robin is `drr`).
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

    /// A shaper whose rate a controller steers (autorate): (time, rate bit/s)
    /// at the start and at every change. None for everything else.
    fn shaper_rate_log(&self) -> Option<&[(Nanos, u64)]> {
        None
    }
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
/// has validated names and parameters and converted units; [`build`] checks
/// them again against the qdisc's table).
#[derive(Debug, Clone, Default)]
pub struct QdiscConfig {
    /// `"fifo"`, ... (a [`QdiscKind`] name).
    pub kind: String,
    /// The direction's `buffer`.
    pub limit: Limit,
    /// The link rate in bit/s (shapers and CAKE need it).
    pub rate_bps: u64,
    /// Named parameters in base units: ns for times, bytes for sizes, 0/1 for
    /// booleans; read only through [`Params`], which checks them against the table.
    pub params: Vec<(String, f64)>,
}

/// Every qdisc the scenario language knows: the registry. Its names
/// (`"fifo"`, `"fq_codel"`, ...) are the scenario's `qdisc` values, its order
/// is the order `bloatlab qdiscs` lists them in, and each kind has one
/// parameter table ([`QdiscKind::params`]) that the Python scenario layer,
/// the listing and the qdisc's own constructor all read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumString, strum::IntoStaticStr, strum::Display, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum QdiscKind {
    Fifo,
    Codel,
    Policer,
    Tbf,
    Fq,
    Cake,
    FqCodel,
    Pie,
    FqPie,
    Red,
}

impl QdiscKind {
    /// Every kind, in listing order.
    pub fn all() -> impl Iterator<Item = QdiscKind> {
        <QdiscKind as strum::IntoEnumIterator>::iter()
    }

    /// The kind a scenario name stands for, or an error naming the key
    /// (`qdisc`, as in `link.down.qdisc`) and listing the known ones.
    pub fn from_name(name: &str) -> Result<QdiscKind, String> {
        name.parse().map_err(|_| format!("qdisc: unknown qdisc \"{name}\" (known: {})", names().join(", ")))
    }

    /// The scenario name (`"fq_codel"`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// One line on what it is and which Linux code it follows.
    pub fn doc(self) -> &'static str {
        match self {
            QdiscKind::Fifo => fifo::DOC,
            QdiscKind::Codel => codel::DOC,
            QdiscKind::Policer => policer::DOC,
            QdiscKind::Tbf => tbf::DOC,
            QdiscKind::Fq => fq::DOC,
            QdiscKind::Cake => cake::DOC,
            QdiscKind::FqCodel => fq_codel::DOC,
            QdiscKind::Pie => pie::DOC,
            QdiscKind::FqPie => fq_pie::DOC,
            QdiscKind::Red => red::DOC,
        }
    }

    /// Its parameter table (scenario key, unit, Linux default, range, meaning).
    pub fn params(self) -> &'static [ParamSpec] {
        match self {
            QdiscKind::Fifo => fifo::PARAMS,
            QdiscKind::Codel => codel::PARAMS,
            QdiscKind::Policer => policer::PARAMS,
            QdiscKind::Tbf => tbf::PARAMS,
            QdiscKind::Fq => fq::PARAMS,
            QdiscKind::Cake => cake::PARAMS,
            QdiscKind::FqCodel => fq_codel::PARAMS,
            QdiscKind::Pie => pie::PARAMS,
            QdiscKind::FqPie => fq_pie::PARAMS,
            QdiscKind::Red => red::PARAMS,
        }
    }

    /// Build this qdisc from a config, its parameters read through [`Self::params`].
    pub fn build<T: 'static>(self, cfg: &QdiscConfig) -> Result<Box<dyn Qdisc<T>>, String> {
        let p = Params::new(cfg, self.params())?;
        Ok(match self {
            QdiscKind::Fifo => Box::new(fifo::Fifo::new(cfg.limit)),
            QdiscKind::Codel => Box::new(codel::Codel::from_params(&p)),
            QdiscKind::Policer => policer::build(cfg, &p)?,
            QdiscKind::Tbf => tbf::build(cfg, &p)?,
            QdiscKind::Fq => Box::new(fq::Fq::new(fq::FqParams::from_params(&p))),
            QdiscKind::Cake => Box::new(cake::Cake::new(cake::CakeConfig::from_params(cfg, &p))),
            QdiscKind::FqCodel => Box::new(fq_codel::FqCodel::from_params(&p)),
            QdiscKind::Pie => Box::new(pie::Pie::new(pie::PieParams::from_params(&p))),
            QdiscKind::FqPie => Box::new(fq_pie::FqPie::from_params(&p)),
            QdiscKind::Red => Box::new(red::Red::from_params(cfg, &p)?),
        })
    }
}

/// Names of the qdiscs [`build`] knows, in listing order.
pub fn names() -> Vec<&'static str> {
    QdiscKind::all().map(QdiscKind::name).collect()
}

/// The parameters of qdisc `name`, or None if unknown.
pub fn params(name: &str) -> Option<&'static [ParamSpec]> {
    name.parse::<QdiscKind>().ok().map(QdiscKind::params)
}

/// Build the qdisc a config names.
pub fn build<T: 'static>(cfg: &QdiscConfig) -> Result<Box<dyn Qdisc<T>>, String> {
    QdiscKind::from_name(&cfg.kind)?.build(cfg)
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
        self.marks += std::mem::take(&mut ev.marks);
        if ev.drops.is_empty() {
            return; // most packets: nothing to drain
        }
        for d in ev.drops.drain(..) {
            self.drops[d.reason as usize] += 1;
            f(d);
        }
    }
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// A config of `kind` on a 10 Mbit/s link with a 100-packet buffer.
    fn cfg(kind: QdiscKind, params: &[(&str, f64)]) -> QdiscConfig {
        QdiscConfig {
            kind: kind.name().into(),
            limit: Limit { bytes: None, pkts: Some(100) },
            rate_bps: 10_000_000,
            params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn every_kind_builds_from_its_defaults_and_calls_itself_by_its_registry_name() {
        for kind in QdiscKind::all() {
            let q = build::<u32>(&cfg(kind, &[])).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(q.name(), kind.name());
            assert_eq!(QdiscKind::from_name(kind.name()), Ok(kind));
            assert_eq!(params(kind.name()).map(<[ParamSpec]>::len), Some(kind.params().len()));
        }
        assert_eq!(names(), ["fifo", "codel", "policer", "tbf", "fq", "cake", "fq_codel", "pie", "fq_pie", "red"]);
    }

    #[test]
    fn every_table_default_is_inside_its_own_range_and_every_name_is_there_once() {
        for kind in QdiscKind::all() {
            let t = kind.params();
            for (i, s) in t.iter().enumerate() {
                assert!(s.min <= s.max, "{kind}.{}", s.name);
                assert_eq!(s.check(s.default), Ok(s.default), "{kind}.{}", s.name);
                assert!(!s.doc.is_empty(), "{kind}.{}", s.name);
                assert!(t[..i].iter().all(|o| o.name != s.name), "{kind}.{} twice", s.name);
            }
        }
    }

    #[test]
    fn an_unknown_qdisc_is_refused_with_the_known_ones_listed() {
        let c = QdiscConfig { kind: "sfq".into(), ..Default::default() };
        let e = build::<u32>(&c).err().unwrap();
        assert_eq!(e, "qdisc: unknown qdisc \"sfq\" (known: fifo, codel, policer, tbf, fq, cake, fq_codel, pie, fq_pie, red)");
        assert!(QdiscKind::from_name("FQ_CODEL").is_err() && QdiscKind::from_name("").is_err());
    }

    #[test]
    fn the_schedulers_and_shapers_refuse_an_unknown_key_as_the_aqms_do() {
        // They used to read what they knew and ignore the rest.
        for kind in [QdiscKind::Fifo, QdiscKind::Cake, QdiscKind::Fq, QdiscKind::Tbf, QdiscKind::Policer] {
            let e = build::<u32>(&cfg(kind, &[("foo", 1.0)])).err().unwrap();
            let known: Vec<&str> = kind.params().iter().map(|s| s.name).collect();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            assert_eq!(e, format!("qdisc_params.foo: unknown parameter of {kind} (known: {known})"));
        }
    }

    #[test]
    fn values_outside_the_table_are_refused_naming_the_key() {
        for (kind, k, v, msg) in [
            (QdiscKind::Fq, "quantum", 2e6, "expected a whole number of bytes in [1, 1048576], got 2000000"),
            (QdiscKind::Fq, "horizon_drop", 2.0, "expected true or false, got 2"),
            (QdiscKind::Fq, "initial_quantum", -1.0, "expected a whole number of bytes in [0, 4294967295], got -1"),
            (QdiscKind::Cake, "overhead", 300.0, "expected a whole number in [-64, 256], got 300"),
            (QdiscKind::Cake, "mpu", 70_000.0, "expected a whole number of bytes in [0, 65535], got 70000"),
            (QdiscKind::Cake, "rtt", 5e12, "expected a duration in [0us, 4294967295us], got 5000000000000ns"),
            (QdiscKind::Tbf, "burst", 1.5, "expected a whole number of bytes in [0, 4294967295], got 1.5"),
            (QdiscKind::Policer, "rate", -8.0, "expected a whole number of bit/s in [0, 18446744073709552000], got -8"),
        ] {
            let e = build::<u32>(&cfg(kind, &[(k, v)])).err().unwrap();
            assert_eq!(e, format!("qdisc_params.{k}: {msg}"), "{kind}");
        }
        // What the table accepts but the shaper cannot run is refused by the builder, key named.
        let e = build::<u32>(&cfg(QdiscKind::Tbf, &[("peakrate", 5e6)])).err().unwrap();
        assert!(e.starts_with("qdisc_params.peakrate: must be above rate"), "{e}");
        let e = build::<u32>(&QdiscConfig { rate_bps: 0, ..cfg(QdiscKind::Policer, &[]) }).err().unwrap();
        assert_eq!(e, "qdisc_params.rate: the policer needs a rate (the link has none)");
    }

    #[test]
    fn a_parameter_left_out_takes_the_default_written_once_in_the_table() {
        // The configs the builders make from an empty scenario are those of the table.
        let fq = fq::FqParams::default();
        assert_eq!((fq.limit, fq.flow_limit, fq.quantum, fq.initial_quantum), (10_000, 100, 3028, 15_140));
        assert_eq!((fq.refill_delay, fq.low_rate_threshold, fq.horizon, fq.horizon_drop), (40_000_000, 68_750, 10_000_000_000, true));
        assert_eq!((fq.maxrate_bytes_ps, fq.ce_threshold), (None, 4_294_967_295_000));
        let c = cake::CakeConfig::from_params(&cfg(QdiscKind::Cake, &[]), &Params::defaults(cake::PARAMS));
        assert_eq!((c.rate_bytes_ps, c.flow_mode, c.rtt, c.target, c.overhead, c.memlimit), (1_250_000, 7, 100_000_000, 5_000_000, 0, 0));
        assert_eq!(cake::CakeConfig::default().rate_bytes_ps, 0, "no link rate: unlimited");
        let c = cake::CakeConfig::from_params(&cfg(QdiscKind::Cake, &[]), &Params::new(&cfg(QdiscKind::Cake, &[("unlimited", 1.0), ("rtt", 0.0)]), cake::PARAMS).unwrap());
        assert_eq!((c.rate_bytes_ps, c.rtt), (0, 1000), "unlimited wins; rtt 0 is the kernel's 1 us");
    }
}
