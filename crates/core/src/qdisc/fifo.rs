//! Tail-drop FIFO.
//!
//! Source: Linux `net/sched/sch_fifo.c` (v6.x): `pfifo` limits packets,
//! `bfifo` limits bytes (of `qdisc_pkt_len`, the IP packet here). A packet
//! that would exceed the limit is dropped on arrival (`qdisc_drop`); nothing
//! else ever drops. No states, no constants: the limit is the whole model.
//! With both limits set, either one refuses.

use super::{DropReason, Events, Limit, Packet, ParamSpec, Qdisc};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Scenario doc of `fifo` (the [`super::QdiscKind`] registry).
pub const DOC: &str = "tail-drop FIFO (Linux pfifo/bfifo); its size is the direction's `buffer`";

/// `qdisc_params` of `fifo`: none, its limit is the direction's `buffer`.
pub const PARAMS: &[ParamSpec] = &[];

#[derive(Debug)]
pub struct Fifo<T> {
    limit: Limit,
    q: VecDeque<Packet<T>>,
    bytes: u64,
}

impl<T> Fifo<T> {
    pub fn new(limit: Limit) -> Self {
        Fifo { limit, q: VecDeque::new(), bytes: 0 }
    }
}

impl<T> Qdisc<T> for Fifo<T> {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn enqueue(&mut self, pkt: Packet<T>, _now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) {
        if self.limit.exceeded(self.bytes, self.q.len(), pkt.meta.len) {
            ev.drop(pkt, DropReason::QueueFull);
            return;
        }
        self.bytes += pkt.meta.len as u64;
        self.q.push_back(pkt);
    }

    fn dequeue(&mut self, _now: Nanos, _rng: &mut Rng, _ev: &mut Events<T>) -> Option<Packet<T>> {
        let p = self.q.pop_front()?;
        self.bytes -= p.meta.len as u64;
        Some(p)
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_pkts(&self) -> usize {
        self.q.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::PacketMeta;

    fn pkt(len: u32, id: u32) -> Packet<u32> {
        Packet { meta: PacketMeta { len, ..Default::default() }, data: id }
    }

    #[test]
    fn byte_limit_tail_drops_the_packet_that_does_not_fit() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = Fifo::new(Limit { bytes: Some(3000), pkts: None });
        q.enqueue(pkt(1500, 1), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1500, 2), 0, &mut rng, &mut ev);
        q.enqueue(pkt(100, 3), 0, &mut rng, &mut ev);
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].pkt.data, 3);
        assert_eq!(ev.drops[0].reason, DropReason::QueueFull);
        assert_eq!(q.backlog_bytes(), 3000);
        assert_eq!(q.dequeue(0, &mut rng, &mut ev).unwrap().data, 1);
        assert_eq!(q.backlog_pkts(), 1);
    }

    #[test]
    fn packet_limit_counts_packets_not_bytes() {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut q = Fifo::new(Limit { bytes: None, pkts: Some(2) });
        for i in 0..3 {
            q.enqueue(pkt(64, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(q.backlog_pkts(), 2);
        assert_eq!(ev.drops.len(), 1);
    }
}
