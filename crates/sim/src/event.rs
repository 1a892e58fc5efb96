//! The event queue, ordered by (time, insertion order), so that events at the
//! same instant run in the order they were scheduled and a run is
//! deterministic.
//!
//! Most events of a run are packets in propagation (`Arrive`), scheduled
//! `now + delay` with one of a few constant delays (a flow's half RTT each
//! way): for one delay those times never decrease, so they need no heap. They
//! go to a FIFO lane per delay ([`Queue::push_after`]), a link's end of
//! transmission to its own lane ([`Queue::push_in_stream`]); everything else to a
//! binary heap; [`Queue::pop`] takes the earliest of the heap's top and the
//! lanes' heads. The order is the same (time, insertion order) as with the heap
//! alone, so results do not change. On the ns-3 comparison scenario (one CUBIC
//! flow, 100 Mbit/s, 100 ms, 60 s: 1.24 M events) the heap's pop was 36 % of
//! the engine's samples under `perf`; with the delay lanes `examples/engine_only`
//! takes 0.077 s of CPU instead of 0.115 s, with the links' lanes too 4.5 % less
//! again (medians of 11, 2026-11-23, a shared machine).

use bloatlab_core::time::Nanos;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// FIFO lanes at most (one per distinct delay or stream); more use the heap.
/// `pop` looks at every lane's head, so a few lanes are cheap and many are not.
const MAX_LANES: usize = 8;
/// A lane's key: a delay in ns, or this bit and a stream's number.
const STREAM: u64 = 1 << 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The bottleneck of a direction finished transmitting a packet.
    LinkTxDone(u8),
    /// A non-work-conserving qdisc asked to be polled again.
    LinkWakeup(u8),
    /// The oldest packet of a delay line reaches its endpoint (`air.rs`).
    Arrive(u32),
    /// The oldest data segment of this flow that the receiving host's timing noise held reaches its TCP
    /// (`rx_jitter`: world.rs).
    RxDeliver(u32),
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
    /// A train's sender hands its next packets to the network.
    TrainSend(u32),
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
        // BinaryHeap is a max-heap: reverse for earliest first. (time, seq) as one 128-bit number: a
        // comparison without a branch on equal times
        o.key128().cmp(&self.key128())
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Entry {
    fn key128(&self) -> u128 {
        (self.t as u128) << 64 | self.seq as u128
    }
}

/// A lane's head when it is empty: above every entry's key (an entry's
/// `seq` is never `u64::MAX`).
const EMPTY: u128 = u128::MAX;

pub struct Queue {
    heap: BinaryHeap<Entry>,
    /// The lanes in use: lane `i` has key `keys[i]` (a delay, or STREAM |
    /// stream), its events in (time, insertion) order in `lanes[i]`, the key
    /// of its first in `heads[i]` ([`EMPTY`] if none: [`Queue::pop`] compares
    /// one small array, not each lane's front) and the time of its last in
    /// `tails[i]`.
    n: usize,
    keys: [u64; MAX_LANES],
    heads: [u128; MAX_LANES],
    tails: [Nanos; MAX_LANES],
    lanes: [VecDeque<Entry>; MAX_LANES],
    seq: u64,
    pub processed: u64,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            n: 0,
            keys: [0; MAX_LANES],
            heads: [EMPTY; MAX_LANES],
            tails: [0; MAX_LANES],
            lanes: Default::default(),
            seq: 0,
            processed: 0,
        }
    }
}

impl Queue {
    pub fn push(&mut self, t: Nanos, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry { t, seq: self.seq, ev });
    }

    /// Schedule `ev` at `now + delay`, where `now` is the time of the event
    /// being handled (it never decreases): the lane of `delay` keeps such
    /// events in order without a heap. Same order as [`Queue::push`].
    pub fn push_after(&mut self, now: Nanos, delay: Nanos, ev: Event) {
        self.push_in_lane(delay & !STREAM, now + delay, ev);
    }

    /// Schedule `ev` at `t` in stream `stream`, whose events the caller
    /// schedules in nondecreasing time (a link's transmissions, one after the
    /// other): its lane keeps them in order without a heap. Same order as [`Queue::push`].
    pub fn push_in_stream(&mut self, stream: u8, t: Nanos, ev: Event) {
        self.push_in_lane(STREAM | stream as u64, t, ev);
    }

    fn push_in_lane(&mut self, key: u64, t: Nanos, ev: Event) {
        let i = match self.keys[..self.n].iter().position(|&k| k == key) {
            Some(i) => i,
            None if self.n < MAX_LANES => {
                self.keys[self.n] = key;
                self.n += 1;
                self.n - 1
            }
            None => return self.push(t, ev),
        };
        if self.heads[i] != EMPTY && self.tails[i] > t {
            return self.push(t, ev); // out of order (`now` went back outside a run): the heap keeps the order
        }
        self.seq += 1;
        let e = Entry { t, seq: self.seq, ev };
        if self.heads[i] == EMPTY {
            self.heads[i] = e.key128();
        }
        self.tails[i] = t;
        self.lanes[i].push_back(e);
    }

    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        // the earliest of the heap's top and the lanes' heads
        let mut best = self.heap.peek().map_or(EMPTY, Entry::key128);
        let mut from = MAX_LANES;
        for (i, &h) in self.heads[..self.n].iter().enumerate() {
            if h < best {
                best = h;
                from = i;
            }
        }
        let e = if from < MAX_LANES {
            let q = &mut self.lanes[from];
            let e = q.pop_front()?;
            self.heads[from] = q.front().map_or(EMPTY, Entry::key128);
            e
        } else {
            self.heap.pop()?
        };
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

    /// A reference queue: the earliest (time, insertion order) by a linear search.
    #[derive(Default)]
    struct Reference {
        items: Vec<(Nanos, u64, Event)>,
        seq: u64,
    }

    impl Reference {
        fn push(&mut self, t: Nanos, ev: Event) {
            self.seq += 1;
            self.items.push((t, self.seq, ev));
        }
        fn pop(&mut self) -> Option<(Nanos, Event)> {
            let i = (0..self.items.len()).min_by_key(|&i| (self.items[i].0, self.items[i].1))?;
            let (t, _, ev) = self.items.remove(i);
            Some((t, ev))
        }
    }

    fn xorshift(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    #[test]
    fn events_in_delay_lanes_come_out_in_the_same_order_as_from_the_heap_alone() {
        // A run's pattern: pop an event, then schedule a few, some `now + delay`
        // with one of more delays than there are lanes (ties included), some in two
        // streams, some at any later time; the order must be (time, insertion order)
        // as a plain heap gives.
        for seed in 1..=20u64 {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let (mut q, mut r) = (Queue::default(), Reference::default());
            q.push(0, Event::Sample);
            r.push(0, Event::Sample);
            let mut n = 0u32;
            while let Some((t, ev)) = q.pop() {
                assert_eq!(Some((t, ev)), r.pop(), "seed {seed}, event {n}");
                if n >= 3000 {
                    continue; // drain
                }
                for _ in 0..xorshift(&mut rng) % 3 + 1 {
                    n += 1;
                    let x = xorshift(&mut rng);
                    if x % 4 == 0 {
                        let at = t + x / 4 % 50;
                        q.push(at, Event::SenderTimer(n));
                        r.push(at, Event::SenderTimer(n));
                    } else if x % 4 == 1 {
                        // a stream's times mostly grow, but not always: then the heap takes them
                        let at = t + x / 4 % 30;
                        q.push_in_stream((x / 128 % 2) as u8, at, Event::LinkTxDone(n as u8));
                        r.push(at, Event::LinkTxDone(n as u8));
                    } else {
                        let delay = (x / 3 % (MAX_LANES as u64 + 3)) * 10;
                        q.push_after(t, delay, Event::Arrive(n));
                        r.push(t + delay, Event::Arrive(n));
                    }
                }
            }
            assert_eq!(r.pop(), None);
            assert_eq!(q.processed, r.seq);
        }
    }

    #[test]
    fn an_event_pushed_after_an_earlier_now_still_comes_out_in_time_order() {
        // Outside a run `now` may go back; the lane must not be put out of order.
        let mut q = Queue::default();
        q.push_after(100, 10, Event::Arrive(0));
        q.push_after(50, 10, Event::Arrive(1));
        q.push_after(100, 10, Event::Arrive(2));
        assert_eq!(drain(&mut q), [(60, Event::Arrive(1)), (110, Event::Arrive(0)), (110, Event::Arrive(2))]);
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
