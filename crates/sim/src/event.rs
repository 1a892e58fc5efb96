//! The event queue: a binary heap ordered by (time, insertion order), so that
//! events at the same instant run in the order they were scheduled and a run
//! is deterministic.

use bloatlab_core::time::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The bottleneck of a direction finished transmitting a packet.
    LinkTxDone(u8),
    /// A non-work-conserving qdisc asked to be polled again.
    LinkWakeup(u8),
    /// A packet in propagation reaches its endpoint (index into the in-flight slab).
    Arrive(u32),
    /// A flow's sender timer (retransmission/TLP/RACK/pacing).
    SenderTimer(u32),
    /// A flow's receiver timer (delayed ACK).
    ReceiverTimer(u32),
    /// The handshake timer of a flow (SYN, SYN-ACK or request retransmission).
    HandshakeTimer(u32),
    FlowStart(u32),
    /// An application-limited flow's application writes.
    AppWrite(u32),
    FlowStop(u32),
    ProbeSend(u32),
    Sample,
    /// The WiFi medium has a transmission to start or finish.
    WifiPoll,
}

#[derive(Debug, PartialEq, Eq)]
struct Entry {
    t: Nanos,
    seq: u64,
    ev: Event,
}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest first.
        o.t.cmp(&self.t).then(o.seq.cmp(&self.seq))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[derive(Default)]
pub struct Queue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    pub processed: u64,
}

impl Queue {
    pub fn push(&mut self, t: Nanos, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry { t, seq: self.seq, ev });
    }
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        let e = self.heap.pop()?;
        self.processed += 1;
        Some((e.t, e.ev))
    }
}
