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

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut Queue) -> Vec<(Nanos, Event)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn events_come_out_earliest_first_whatever_the_order_they_went_in() {
        let mut q = Queue::default();
        q.push(30, Event::Sample);
        q.push(10, Event::FlowStart(0));
        q.push(u64::MAX, Event::FlowStop(0));
        q.push(0, Event::ProbeSend(2));
        q.push(20, Event::LinkTxDone(1));
        assert_eq!(
            drain(&mut q),
            [(0, Event::ProbeSend(2)), (10, Event::FlowStart(0)), (20, Event::LinkTxDone(1)), (30, Event::Sample), (u64::MAX, Event::FlowStop(0))]
        );
    }

    #[test]
    fn events_at_the_same_instant_run_in_the_order_they_were_scheduled() {
        // A binary heap alone is not stable: 1000 ties must still come out FIFO.
        let mut q = Queue::default();
        for i in 0..1000u32 {
            q.push(5, Event::Arrive(i));
            q.push(4, Event::SenderTimer(i));
        }
        let out = drain(&mut q);
        let timers: Vec<u32> = out[..1000].iter().map(|&(t, e)| if let (4, Event::SenderTimer(i)) = (t, e) { i } else { panic!("{t} {e:?}") }).collect();
        let arrivals: Vec<u32> = out[1000..].iter().map(|&(t, e)| if let (5, Event::Arrive(i)) = (t, e) { i } else { panic!("{t} {e:?}") }).collect();
        assert_eq!(timers, (0..1000).collect::<Vec<_>>());
        assert_eq!(arrivals, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn an_event_scheduled_for_now_while_running_goes_after_those_already_due_now() {
        // What the world does when a handler emits a packet at `now`: it must
        // not overtake events that were already queued for the same instant.
        let mut q = Queue::default();
        q.push(7, Event::LinkWakeup(0));
        q.push(7, Event::WifiPoll);
        let (t, e) = q.pop().unwrap();
        assert_eq!((t, e), (7, Event::LinkWakeup(0)));
        q.push(t, Event::LinkTxDone(0));
        q.push(t + 1, Event::Sample);
        assert_eq!(drain(&mut q), [(7, Event::WifiPoll), (7, Event::LinkTxDone(0)), (8, Event::Sample)]);
    }

    #[test]
    fn processed_counts_the_events_popped_and_an_empty_queue_pops_nothing() {
        let mut q = Queue::default();
        assert_eq!(q.pop(), None);
        assert_eq!(q.processed, 0);
        q.push(1, Event::Sample);
        q.push(1, Event::Sample);
        q.pop();
        assert_eq!(q.processed, 1);
        q.pop();
        assert_eq!((q.pop(), q.processed), (None, 2));
    }
}
