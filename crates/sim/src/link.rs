//! A bottleneck direction: random loss, then the qdisc, then a serializer at
//! the link rate. Queueing delay is measured from a packet's arrival at the
//! qdisc to the start of its transmission (docs/results.md).

use crate::packet::Payload;
use crate::scenario::LinkSpec;
use bloatlab_core::qdisc::chain::build_bottleneck;
use bloatlab_core::qdisc::{DropReason, Events, Packet, PacketMeta, Qdisc, Stats};
use bloatlab_core::rng::{Rng, RngExt};
use bloatlab_core::time::{tx_time, Nanos};

pub type SimPacket = Packet<Payload>;

pub struct Link {
    pub rate_bps: u64,
    loss: f64,
    qdisc: Box<dyn Qdisc<Payload>>,
    rng: Rng,
    ev: Events<Payload>,
    /// The packet on the wire and when its transmission ends.
    pub busy: Option<SimPacket>,
    /// When the packet in `busy` leaves the wire.
    pub busy_until: Nanos,
    /// A LinkWakeup is pending for this time.
    pub wakeup_at: Option<Nanos>,
    pub stats: Stats,
    pub tx_bytes: u64,
    pub busy_ns: Nanos,
    /// Queueing delay of every transmitted packet, ms.
    pub qdelay_ms: Vec<f64>,
    /// For the time series: sum and count of qdelay since the last sample.
    pub interval_qdelay_sum: f64,
    pub interval_qdelay_n: u64,
}

impl Link {
    pub fn new(spec: &LinkSpec, rng: Rng) -> Result<Link, String> {
        Ok(Link {
            rate_bps: spec.rate_bps,
            loss: spec.loss,
            qdisc: build_bottleneck(&spec.qdisc_config(), &spec.stages())?,
            rng,
            ev: Events::default(),
            busy: None,
            busy_until: 0,
            wakeup_at: None,
            stats: Stats::default(),
            tx_bytes: 0,
            busy_ns: 0,
            qdelay_ms: Vec::new(),
            interval_qdelay_sum: 0.0,
            interval_qdelay_n: 0,
        })
    }

    /// A packet arrives at the bottleneck. Dropped packets are simply gone
    /// (their loss is what the endpoints must discover).
    pub fn enqueue(&mut self, now: Nanos, meta: PacketMeta, p: Payload) {
        if self.loss > 0.0 && self.rng.gen::<f64>() < self.loss {
            self.stats.drops[DropReason::RandomLoss as usize] += 1;
            return;
        }
        let meta = PacketMeta { enqueued_at: now, ..meta };
        self.stats.enqueued_pkts += 1;
        self.qdisc.enqueue(Packet { meta, data: p }, now, &mut self.rng, &mut self.ev);
        self.stats.absorb(&mut self.ev, |_| {});
    }

    /// If the wire is free, start sending the next packet. Returns the time
    /// its transmission ends, or the time to poll again for a shaper.
    pub fn start_next(&mut self, now: Nanos) -> Option<Start> {
        if self.busy.is_some() {
            return None;
        }
        let p = self.qdisc.dequeue(now, &mut self.rng, &mut self.ev);
        self.stats.absorb(&mut self.ev, |_| {});
        match p {
            Some(p) => {
                let q = (now - p.meta.enqueued_at) as f64 / 1e6;
                self.qdelay_ms.push(q);
                self.interval_qdelay_sum += q;
                self.interval_qdelay_n += 1;
                let dt = tx_time(p.meta.len as u64, self.rate_bps);
                self.stats.dequeued_pkts += 1;
                self.stats.dequeued_bytes += p.meta.len as u64;
                self.tx_bytes += p.meta.len as u64;
                self.busy_ns += dt;
                self.busy = Some(p);
                self.busy_until = now + dt;
                Some(Start::TxDone(now + dt))
            }
            None => self.qdisc.next_wakeup(now).map(Start::Wakeup),
        }
    }

    /// Bytes sent and busy time within a run that ends at `end`: a packet
    /// still on the wire then counts only for the part of its transmission
    /// that fit in the run (its bytes pro rata, rounded down), so the
    /// utilization never exceeds 1 (it did: 1.08 at `duration = "5ms"`,
    /// 12 000 at `rate = "1bit"`).
    pub fn sent_by(&self, end: Nanos) -> (u64, Nanos) {
        match &self.busy {
            Some(p) if self.busy_until > end => {
                let dt = tx_time(p.meta.len as u64, self.rate_bps).max(1);
                let late = (self.busy_until - end).min(dt);
                let cut = (p.meta.len as u128 * late as u128).div_ceil(dt as u128) as u64;
                (self.tx_bytes - cut, self.busy_ns - late)
            }
            _ => (self.tx_bytes, self.busy_ns),
        }
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.qdisc.backlog_bytes()
    }
}

pub enum Start {
    TxDone(Nanos),
    Wakeup(Nanos),
}
