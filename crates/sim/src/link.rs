//! A bottleneck direction: random loss, then the qdisc, then a serializer at
//! the link rate, or on a Mahimahi trace's delivery opportunities
//! (`bloatlab_core::trace`, the same loader and arithmetic as the emulator's
//! link). Queueing delay is measured from a packet's arrival at the qdisc to
//! the start of its transmission (docs/results.md).

use crate::packet::Payload;
use crate::scenario::LinkSpec;
use bloatlab_core::qdisc::chain::build_bottleneck;
use bloatlab_core::qdisc::{DropReason, Events, Packet, PacketMeta, Qdisc, Stats};
use bloatlab_core::rng::{self, Rng, RngExt};
use bloatlab_core::stats::NsSamples;
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
    /// Random loss's draws (`rng::LOSS_STREAM` + direction, as the emulator's).
    loss_rng: Rng,
    /// The qdisc's (`rng::QDISC_STREAM` + direction, as the emulator's).
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
    /// Queueing delay of every transmitted packet, ns (the summary's `qdelay_ms`).
    pub qdelay_ns: NsSamples,
    /// For the time series: sum and count of qdelay since the last sample.
    pub interval_qdelay_sum: f64,
    pub interval_qdelay_n: u64,
}

impl Link {
    /// `seed`: the scenario's; `dir`: 0 down, 1 up (the RNG streams, `bloatlab_core::rng::LOSS_STREAM`).
    pub fn new(spec: &LinkSpec, seed: u64, dir: u64) -> Result<Link, String> {
        let trace = match &spec.trace_ms {
            Some(ms) => Some((Trace::new(ms.clone()).map_err(|e| format!("trace_ms: {e}"))?, Cursor::default())),
            None => None,
        };
        Ok(Link {
            rate_bps: spec.rate_bps,
            trace,
            loss: spec.loss,
            qdisc: build_bottleneck(&spec.qdisc_config(), &spec.stages())?,
            loss_rng: rng::stream(seed, rng::LOSS_STREAM + dir),
            rng: rng::stream(seed, rng::QDISC_STREAM + dir),
            ev: Events::default(),
            busy: None,
            busy_until: 0,
            busy_since: 0,
            wakeup_at: None,
            stats: Stats::default(),
            tx_bytes: 0,
            busy_ns: 0,
            qdelay_ns: NsSamples::default(),
            interval_qdelay_sum: 0.0,
            interval_qdelay_n: 0,
        })
    }

    /// A packet arrives at the bottleneck. Dropped packets are simply gone
    /// (their loss is what the endpoints must discover).
    pub fn enqueue(&mut self, now: Nanos, meta: PacketMeta, p: Payload) {
        if self.loss > 0.0 && self.loss_rng.gen::<f64>() < self.loss {
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
                let q_ns = now - p.meta.enqueued_at;
                self.qdelay_ns.push(q_ns);
                let q = q_ns as f64 / 1e6;
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
            None => {
                // Nothing may leave now (a shaper, or autorate's CAKE, holds the backlog): what
                // is left of an opportunity that has come is lost, as when the queue is empty;
                // else the next packet would "start" in an opportunity already past.
                if let Some((tr, op)) = &mut self.trace {
                    op.idle(tr, now);
                }
                self.qdisc.next_wakeup(now).map(Start::Wakeup)
            }
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

    /// An autorate element's shaper rate over time (None without one).
    pub fn shaper_rate_log(&self) -> Option<&[(Nanos, u64)]> {
        self.qdisc.shaper_rate_log()
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

    /// A FIFO bottleneck of `buffer_pkts` packets at `rate_bps`.
    fn spec(rate_bps: u64, buffer_pkts: u64) -> LinkSpec {
        LinkSpec {
            rate_bps,
            buffer_bytes: None,
            buffer_pkts: Some(buffer_pkts),
            loss: 0.0,
            qdisc: QdiscSpec { kind: "fifo".into(), params: Default::default() },
            trace_ms: None,
            policer: None,
            shaper: None,
            device_queue_bytes: None,
            device_queue_pkts: None,
            autorate: None,
        }
    }

    fn trace_link(ms: Vec<u64>) -> Link {
        let spec = LinkSpec { trace_ms: Some(ms), ..spec(6_000_000, 100) };
        Link::new(&spec, 1, 0).unwrap()
    }

    fn data(len: u32) -> (PacketMeta, Payload) {
        let p = Payload::Data { flow: 0, seq: 0, len: len - crate::packet::TCP_HDR, ect: false, ce: false, cwr: false, psh: false, tsval: 0, tsecr: None };
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
        assert_eq!(l.qdelay_ns.ms(), [2.0, 4.0, 6.0, 8.0]);
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

    /// A FIFO link of `buffer_pkts` at `rate_bps` on the down link's RNG stream of seed 1.
    fn fifo(rate_bps: u64, buffer_pkts: u64) -> Link {
        Link::new(&spec(rate_bps, buffer_pkts), 1, 0).unwrap()
    }

    /// Offer `n` data packets of `len` wire bytes at `now`.
    fn offer(l: &mut Link, now: Nanos, n: usize, len: u32) {
        for _ in 0..n {
            let (m, p) = data(len);
            l.enqueue(now, m, p);
        }
    }

    #[test]
    fn a_packet_takes_its_length_over_the_rate_on_the_wire_and_the_queue_waits_behind_it() {
        // 1500 B at 10 Mbit/s = 1.2 ms each, back to back.
        let mut l = fifo(10_000_000, 100);
        offer(&mut l, 0, 3, 1500);
        assert_eq!(departures(&mut l, 0, 3), [1_200_000, 2_400_000, 3_600_000]);
        assert_eq!(l.qdelay_ns.ms(), [0.0, 1.2, 2.4]);
        assert_eq!((l.tx_bytes, l.busy_ns, l.stats.dequeued_pkts), (4500, 3_600_000, 3));
        // A time that is no whole ns rounds up: 94 B at 3 Mbit/s = 250 666.7 ns.
        let mut l = fifo(3_000_000, 100);
        offer(&mut l, 0, 1, 94);
        assert_eq!(departures(&mut l, 0, 1), [250_667]);
    }

    #[test]
    fn a_packet_still_on_the_wire_at_the_end_counts_pro_rata() {
        let mut l = fifo(10_000_000, 100);
        offer(&mut l, 0, 1, 1500);
        assert!(matches!(l.start_next(0), Some(Start::TxDone(1_200_000))));
        assert!(l.start_next(0).is_none(), "the wire is busy");
        // Half-way through: half its bytes (rounded down) and half its time.
        assert_eq!(l.sent_by(600_000), (750, 600_000));
        // A third of the way: 1500 - ceil(1500 x 0.8 ms / 1.2 ms) = 500 B.
        assert_eq!(l.sent_by(400_000), (500, 400_000));
        assert_eq!(l.sent_by(1_200_000), (1500, 1_200_000));
    }

    #[test]
    fn a_full_buffer_drops_at_the_tail_and_counts_it() {
        let mut l = fifo(10_000_000, 2);
        offer(&mut l, 0, 5, 1500);
        assert_eq!(l.stats.drops[DropReason::QueueFull as usize], 3);
        assert_eq!((l.stats.enqueued_pkts, l.backlog_bytes()), (5, 3000));
        assert_eq!(departures(&mut l, 0, 2), [1_200_000, 2_400_000]);
    }

    #[test]
    fn random_loss_is_drawn_from_the_links_seeded_stream_before_the_queue() {
        // 1% loss on 10 000 packets, the down link's stream of seed 1: the same
        // packets are lost on every run (an exact count, not a tolerance), and
        // the same as on the emulator's down link of seed 1 (its test
        // `random_loss_draws_what_the_simulators_link_draws`: 71, 97, 172, ...).
        let lost = |seed: u64| {
            let mut l = Link::new(&LinkSpec { loss: 0.01, ..spec(10_000_000, 100_000) }, seed, 0).unwrap();
            let mut which = Vec::new();
            for i in 0..10_000u64 {
                let before = l.stats.drops[DropReason::RandomLoss as usize];
                let (m, p) = data(1500);
                l.enqueue(i, m, p);
                if l.stats.drops[DropReason::RandomLoss as usize] > before {
                    which.push(i);
                }
            }
            // A lost packet never reaches the qdisc.
            assert_eq!(l.stats.enqueued_pkts + which.len() as u64, 10_000);
            assert_eq!(l.backlog_bytes(), l.stats.enqueued_pkts * 1500);
            which
        };
        let a = lost(1);
        assert_eq!(a.len(), 119, "binomial(10 000, 1%): 100 +- 20 (two standard deviations) expected");
        assert_eq!(a[..5], [71, 97, 172, 209, 216]);
        assert_eq!(lost(1), a, "same seed, same losses");
        assert_ne!(lost(2), a, "another seed, other losses");
        // Certain loss drops everything; none draws nothing from the stream.
        let mut l = Link::new(&LinkSpec { loss: 1.0, ..spec(10_000_000, 100) }, 1, 0).unwrap();
        offer(&mut l, 0, 100, 1500);
        assert_eq!((l.stats.drops[DropReason::RandomLoss as usize], l.stats.enqueued_pkts), (100, 0));
    }

    #[test]
    fn a_trace_link_carries_a_backlog_at_the_traces_mean_rate() {
        // One 1500-byte opportunity every ms = 12 Mbit/s: 100 full-size packets take exactly 100 ms.
        let mut l = trace_link(vec![1]);
        offer(&mut l, 0, 100, 1500);
        let t = departures(&mut l, 0, 100);
        assert_eq!(t, (1..=100).map(|ms| ms * NS_PER_MS).collect::<Vec<_>>());
        assert_eq!(l.tx_bytes, 150_000);
    }
}
