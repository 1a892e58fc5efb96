//! The flow-queueing round robin of fq_codel and FQ-PIE: a deficit round
//! robin over two lists of queues, new flows first.
//!
//! Source: RFC 8290 §4.2-4.3 and Linux v6.x `net/sched/sch_fq_codel.c`
//! (`fq_codel_enqueue`'s list insertion, `fq_codel_dequeue`), whose
//! scheduling `net/sched/sch_fq_pie.c` repeats line for line
//! (`fq_pie_qdisc_enqueue`, `fq_pie_qdisc_dequeue`). Written once here, the
//! way `include/net/codel_impl.h` holds CoDel once; each qdisc keeps its
//! queues and its AQM, and tells this round robin only which queue became
//! active and what a queue gave up when asked.
//!
//! # Model
//! - A queue that becomes active while in no list joins the tail of
//!   `new_flows` with a full `quantum` of deficit (bytes). New flows are
//!   served first, so a sparse flow (DNS, ACKs, a VoIP packet) jumps ahead
//!   of bulk flows.
//! - The queue at the head whose deficit is spent (≤ 0) gets one more
//!   quantum and moves to the tail of `old_flows`.
//! - Otherwise it is asked for a packet; the packet's length comes off its
//!   deficit.
//! - A queue that has nothing (the AQM may have dropped what it had) leaves
//!   its list; if it was new and `old_flows` is non-empty it goes to the
//!   tail of `old_flows` instead (so a flow cannot stay "new" forever by
//!   sending one packet per turn), else it is unlinked. A queue still in
//!   `old_flows` that gets a packet stays there: it is not new again until
//!   it has left the lists.
//!
//! # Constants
//! None of its own: `quantum` is the qdisc's (1514 B = `psched_mtu()` of
//! Ethernet by default in both).

use std::collections::VecDeque;

/// The two lists and the per-queue DRR state (`flowchain` membership and
/// `deficit` of `struct fq_codel_flow` / `struct fq_pie_flow`).
#[derive(Debug, Clone)]
pub struct FlowLists {
    /// Bytes a queue may send per turn.
    pub quantum: u32,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Remaining byte credit of each queue's turn.
    deficit: Vec<i32>,
    /// Queue is in `new_flows` or `old_flows`.
    linked: Vec<bool>,
}

impl FlowLists {
    /// `queues` queues, none linked.
    pub fn new(queues: u32, quantum: u32) -> FlowLists {
        FlowLists {
            quantum,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            deficit: vec![0; queues as usize],
            linked: vec![false; queues as usize],
        }
    }

    /// Queue `idx` got a packet: if it is in no list it joins `new_flows`
    /// with a full quantum. Returns whether it did (the qdisc counts
    /// `new_flow_count`).
    pub fn activate(&mut self, idx: usize) -> bool {
        if self.linked[idx] {
            return false;
        }
        self.linked[idx] = true;
        self.deficit[idx] = self.quantum as i32;
        self.new_flows.push_back(idx as u32);
        true
    }

    /// The next packet by DRR: `take(idx)` asks queue `idx` for a packet and
    /// its length in bytes (None: the queue has nothing to give).
    pub fn dequeue<P>(&mut self, mut take: impl FnMut(usize) -> Option<(P, u32)>) -> Option<P> {
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            if self.deficit[idx] <= 0 {
                self.deficit[idx] += self.quantum as i32;
                self.pop_head(from_new);
                self.old_flows.push_back(idx as u32);
                continue;
            }
            match take(idx) {
                Some((p, len)) => {
                    self.deficit[idx] -= len as i32;
                    return Some(p);
                }
                None => {
                    self.pop_head(from_new);
                    // Force a pass through old_flows to prevent starvation.
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                    } else {
                        self.linked[idx] = false;
                    }
                }
            }
        }
    }

    fn pop_head(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// Queues in the new-flows list (`new_flows_len` of `tc -s`).
    pub fn new_len(&self) -> usize {
        self.new_flows.len()
    }

    /// Queues in the old-flows list (`old_flows_len`).
    pub fn old_len(&self) -> usize {
        self.old_flows.len()
    }

    /// Queue `idx`'s remaining deficit, bytes.
    pub fn deficit(&self, idx: usize) -> i32 {
        self.deficit[idx]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queues of packet lengths; `take` pops the head.
    fn take(qs: &mut [VecDeque<u32>]) -> impl FnMut(usize) -> Option<((usize, u32), u32)> + '_ {
        move |i| qs[i].pop_front().map(|len| ((i, len), len))
    }

    #[test]
    fn a_new_queue_is_served_before_old_ones_and_moves_to_old_when_its_quantum_is_spent() {
        let mut l = FlowLists::new(4, 1514);
        let mut qs = vec![VecDeque::from([1500, 1500, 1500]), VecDeque::new(), VecDeque::new(), VecDeque::new()];
        assert!(l.activate(0));
        assert!(!l.activate(0), "already linked");
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 1500)));
        assert_eq!(l.deficit(0), 14);
        // queue 2 becomes active: new, so it goes first
        qs[2].push_back(100);
        assert!(l.activate(2));
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 1500)), "queue 0 still has 14 B of credit");
        assert_eq!((l.new_len(), l.old_len(), l.deficit(0)), (2, 0, -1486));
        // queue 0 is spent: +1514 and to old_flows; queue 2 (new) is next
        assert_eq!(l.dequeue(take(&mut qs)), Some((2, 100)));
        assert_eq!((l.new_len(), l.old_len(), l.deficit(0)), (1, 1, 28));
    }

    #[test]
    fn an_emptied_new_queue_goes_to_old_flows_if_it_is_not_empty_else_leaves_the_lists() {
        let mut l = FlowLists::new(2, 1514);
        let mut qs = vec![VecDeque::from([1500]), VecDeque::from([1500, 1500])];
        l.activate(0);
        l.activate(1);
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 1500)));
        assert_eq!(l.dequeue(take(&mut qs)), Some((1, 1500)), "queue 0 empty, old_flows empty: unlinked");
        assert_eq!((l.new_len(), l.old_len()), (1, 0));
        assert!(l.activate(0), "unlinked, so new again");
        // queue 1 has credit 14: serves again, then spent -> old; queue 0 (new) next
        assert_eq!(l.dequeue(take(&mut qs)), Some((1, 1500)));
        assert_eq!(l.dequeue(take(&mut qs)), None, "both empty");
        // 1 moved to old (spent), 0 was empty and new with old non-empty: to old; then both leave
        assert_eq!((l.new_len(), l.old_len()), (0, 0));
        assert!(l.activate(1));
    }

    #[test]
    fn a_queue_that_refills_while_in_old_flows_is_not_new_again() {
        let mut l = FlowLists::new(2, 300);
        let mut qs = vec![VecDeque::from([200, 200]), VecDeque::new()];
        l.activate(0);
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 200)));
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 200)));
        // deficit -100: next turn moves it to old_flows with 200; there it finds nothing and leaves
        assert_eq!(l.dequeue(take(&mut qs)), None);
        assert_eq!((l.new_len(), l.old_len()), (0, 0));
        qs[0].extend([200, 200, 200]);
        l.activate(0);
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 200)));
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 200)));
        // spent (-100): to old_flows with +300 = 200
        assert_eq!(l.dequeue(take(&mut qs)), Some((0, 200)));
        assert_eq!((l.new_len(), l.old_len()), (0, 1));
        qs[0].push_back(200);
        assert!(!l.activate(0), "linked in old_flows: stays there");
        assert_eq!((l.new_len(), l.old_len()), (0, 1));
    }
}
