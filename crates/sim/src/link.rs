//! A bottleneck direction: random loss, then the qdisc, then a serializer at
//! the link rate, or on a Mahimahi trace's delivery opportunities
//! (`bloatlab_core::trace`, the same loader and arithmetic as the emulator's
//! link). Queueing delay is measured from a packet's arrival at the qdisc to
//! the start of its transmission (docs/results.md).

use crate::packet::Payload;
use crate::scenario::LinkSpec;
use bloatlab_core::qdisc::chain::build_bottleneck;
use bloatlab_core::qdisc::{DropReason, Events, Packet, PacketMeta, Qdisc, Stats};
use bloatlab_core::rng::{Rng, RngExt};
use bloatlab_core::time::{tx_time, Nanos};
use bloatlab_core::trace::{Cursor, Trace};

pub type SimPacket = Packet<Payload>;

pub struct Link {
    /// The constant rate, or a trace's mean capacity (for the result's utilization).
    pub rate_bps: u64,
    /// Trace-driven: the delivery opportunities and where the link stands in them.
    trace: Option<(Trace, Cursor)>,
    loss: f64,
    qdisc: Box<dyn Qdisc<Payload>>,
    rng: Rng,
    ev: Events<Payload>,
    /// The packet on the wire and when its transmission ends.
    pub busy: Option<SimPacket>,
    /// When the packet in `busy` leaves the wire.
    pub busy_until: Nanos,
    /// When the packet in `busy` started.
    busy_since: Nanos,
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
        let trace = match &spec.trace_ms {
            Some(ms) => Some((Trace::new(ms.clone()).map_err(|e| format!("trace_ms: {e}"))?, Cursor::default())),
            None => None,
        };
        Ok(Link {
            rate_bps: spec.rate_bps,
            trace,
            loss: spec.loss,
            qdisc: build_bottleneck(&spec.qdisc_config(), &spec.stages())?,
            rng,
            ev: Events::default(),
            busy: None,
            busy_until: 0,
            busy_since: 0,
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
        if let Some((tr, op)) = &mut self.trace {
            if self.qdisc.backlog_pkts() == 0 {
                op.idle(tr, now);
            } else {
                let t = op.start_time(tr, now);
                if t > now {
                    return Some(Start::Wakeup(t));
                }
            }
        }
        let p = self.qdisc.dequeue(now, &mut self.rng, &mut self.ev);
        self.stats.absorb(&mut self.ev, |_| {});
        match p {
            Some(p) => {
                let q = (now - p.meta.enqueued_at) as f64 / 1e6;
                self.qdelay_ms.push(q);
                self.interval_qdelay_sum += q;
                self.interval_qdelay_n += 1;
                let dt = match &mut self.trace {
                    Some((tr, op)) => op.send(tr, now, p.meta.len) - now,
                    None => tx_time(p.meta.len as u64, self.rate_bps),
                };
                self.stats.dequeued_pkts += 1;
                self.stats.dequeued_bytes += p.meta.len as u64;
                self.tx_bytes += p.meta.len as u64;
                self.busy_ns += dt;
                self.busy = Some(p);
                self.busy_until = now + dt;
                self.busy_since = now;
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
                let dt = (self.busy_until - self.busy_since).max(1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::QdiscSpec;
    use bloatlab_core::time::NS_PER_MS;

    fn trace_link(ms: Vec<u64>) -> Link {
        let spec = LinkSpec {
            rate_bps: 6_000_000,
            buffer_bytes: None,
            buffer_pkts: Some(100),
            loss: 0.0,
            qdisc: QdiscSpec { kind: "fifo".into(), params: Default::default() },
            trace_ms: Some(ms),
            policer: None,
            shaper: None,
            device_queue_bytes: None,
            device_queue_pkts: None,
        };
        Link::new(&spec, bloatlab_core::rng::stream(1, 0)).unwrap()
    }

    fn data(len: u32) -> (PacketMeta, Payload) {
        let p = Payload::Data { flow: 0, seq: 0, len: len - crate::packet::TCP_HDR, ect: false, ce: false, cwr: false };
        (PacketMeta { len, ..Default::default() }, p)
    }

    /// Serve the link as the event loop does: returns when each packet left.
    fn departures(l: &mut Link, mut now: Nanos, n: usize) -> Vec<Nanos> {
        let mut out = Vec::new();
        while out.len() < n {
            match l.start_next(now).expect("a packet is queued") {
                Start::Wakeup(t) => now = t,
                Start::TxDone(t) => {
                    now = t;
                    l.busy.take().unwrap();
                    out.push(t);
                }
            }
        }
        out
    }

    #[test]
    fn a_trace_link_sends_full_size_packets_only_at_delivery_opportunities() {
        // Opportunities at 2 and 4 ms, repeating every 4 ms: 6, 8, 10 ms ...
        let mut l = trace_link(vec![2, 4]);
        for _ in 0..4 {
            let (m, p) = data(1500);
            l.enqueue(0, m, p);
        }
        assert_eq!(departures(&mut l, 0, 4), [2, 4, 6, 8].map(|ms| ms * NS_PER_MS));
        // Queueing delay is measured to the start of transmission: the opportunity's time.
        assert_eq!(l.qdelay_ms, [2.0, 4.0, 6.0, 8.0]);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_an_idle_link_loses_the_rest() {
        let mut l = trace_link(vec![1, 2, 3, 4]);
        for _ in 0..3 {
            let (m, p) = data(500);
            l.enqueue(0, m, p);
        }
        // 3 x 500 bytes fill the first opportunity (1 ms) exactly.
        assert_eq!(departures(&mut l, 0, 3), [1, 1, 1].map(|ms| ms * NS_PER_MS));
        let (m, p) = data(500);
        l.enqueue(NS_PER_MS, m, p);
        assert_eq!(departures(&mut l, NS_PER_MS, 1), [2 * NS_PER_MS]);
        // The queue ran empty at 2 ms with 1000 bytes of that opportunity unused: they are lost.
        assert!(l.start_next(2 * NS_PER_MS).is_none());
        let (m, p) = data(500);
        l.enqueue(2 * NS_PER_MS + 1, m, p);
        assert_eq!(departures(&mut l, 2 * NS_PER_MS + 1, 1), [3 * NS_PER_MS]);
    }
}
