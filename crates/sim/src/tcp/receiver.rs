//! The TCP receiver: in-order delivery, SACK/D-SACK blocks, and Linux's ACK
//! policy.
//!
//! Source: Linux `net/ipv4/tcp_input.c` (v6.x): `tcp_data_queue`,
//! `tcp_data_queue_ofo`, `__tcp_ack_snd_check`, `tcp_event_data_recv`,
//! `tcp_sack_new_ofo_skb`, `tcp_dsack_set`.
//!
//! ACK policy, as Linux does it:
//! - quick-ACK mode for the first `TCP_MAX_QUICKACKS` (16) segments of a
//!   connection and again after an idle gap longer than the RTO: every
//!   segment is acked at once;
//! - otherwise an ACK every 2 full-sized segments, or when the delayed-ACK
//!   timer (`TCP_DELACK_MIN` = 40 ms, the first `ato`) expires;
//! - out-of-order data: the first 3 duplicate ACKs go out at once, later
//!   ones are compressed (`tcp_comp_sack_nr` = 44 ACKs at most, sent after
//!   min(`tcp_comp_sack_delay_ns` = 1 ms, RTT/20));
//! - a segment that fills a hole, or a duplicate segment (D-SACK, RFC 2883),
//!   is acked at once.
//!
//! Simplification: Linux adapts `ato` to the inter-arrival time; we keep it
//! at its 40 ms start value (it only matters for flows slower than one
//! segment per 40 ms). The RTT of the compressed-SACK timer is the flow's
//! base RTT (Linux uses its receive-side RTT estimate).

use crate::packet::{SackBlock, MAX_SACK_BLOCKS};
use bloatlab_core::time::{Nanos, NS_PER_MS};

/// `TCP_MAX_QUICKACKS`: segments acked at once when quick-ACK mode starts.
pub const MAX_QUICKACKS: u32 = 16;
/// `TCP_DELACK_MIN` (HZ/25): the delayed-ACK timeout, 40 ms.
pub const DELACK_MIN: Nanos = 40 * NS_PER_MS;
/// `sysctl_tcp_comp_sack_nr`: most ACKs compressed into one.
pub const COMP_SACK_NR: u32 = 44;
/// `sysctl_tcp_comp_sack_delay_ns`: 1 ms.
pub const COMP_SACK_DELAY: Nanos = NS_PER_MS;
/// `TCP_FASTRETRANS_THRESH`: duplicate ACKs always sent before compressing.
pub const FASTRETRANS_THRESH: u32 = 3;
/// Idle gap that re-enters quick-ACK mode (Linux: the RTO; 200 ms minimum).
const QUICKACK_IDLE: Nanos = 200 * NS_PER_MS;

#[derive(Debug, Clone)]
pub struct AckOut {
    pub ack: u64,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub nsack: u8,
    pub dsack: bool,
    pub ece: bool,
}

/// How the receiver echoes CE marks (RFC 3168 classic latch, or DCTCP's
/// per-segment echo, Linux `dctcp_ece_ack_update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnEcho {
    Off,
    /// ECE on every ACK from a CE mark until a segment with CWR arrives.
    Classic,
    /// ECE reflects the CE bit of the latest segment; a change of state is acked at once.
    Accurate,
}

pub struct Receiver {
    /// Next in-order segment expected.
    pub rcv_nxt: u64,
    /// Out-of-order ranges, sorted, disjoint, all above rcv_nxt.
    ofo: Vec<SackBlock>,
    /// SACK blocks in reporting order (most recently changed first).
    recent: Vec<SackBlock>,
    dsack: Option<SackBlock>,
    quick: u32,
    /// Full segments received since the last ACK.
    unacked: u32,
    dup_ack_counter: u32,
    compressed: u32,
    last_data: Option<Nanos>,
    /// When the delayed (or compressed) ACK must go out.
    pub ack_deadline: Option<Nanos>,
    comp_delay: Nanos,
    /// Segments received twice (duplicates).
    pub dup_segs: u64,
    pub ecn: EcnEcho,
    ece: bool,
}

/// What the receiver wants after a segment arrived.
#[derive(Debug, PartialEq, Eq)]
pub enum AckNeed {
    Now,
    /// A timer at this deadline (already stored in `ack_deadline`).
    Later,
}

impl Receiver {
    pub fn new(base_rtt: Nanos) -> Receiver {
        Receiver {
            rcv_nxt: 0,
            ofo: Vec::new(),
            recent: Vec::new(),
            dsack: None,
            quick: 0,
            unacked: 0,
            dup_ack_counter: 0,
            compressed: 0,
            last_data: None,
            ack_deadline: None,
            comp_delay: COMP_SACK_DELAY.min(base_rtt / 20).max(1),
            dup_segs: 0,
            ecn: EcnEcho::Off,
            ece: false,
        }
    }

    fn in_ofo(&self, seq: u64) -> bool {
        self.ofo.iter().any(|b| b.start <= seq && seq < b.end)
    }

    /// A data segment arrived carrying ECN bits: update the echo state.
    /// Returns true if the change must be acked at once (DCTCP).
    pub fn on_ecn(&mut self, ce: bool, cwr: bool) -> bool {
        match self.ecn {
            EcnEcho::Off => false,
            EcnEcho::Classic => {
                if cwr {
                    self.ece = false; // tcp_ecn_accept_cwr
                }
                if ce {
                    self.ece = true; // tcp_ecn_check_ce: demand CWR
                }
                false
            }
            EcnEcho::Accurate => {
                let changed = self.ece != ce;
                self.ece = ce;
                changed
            }
        }
    }

    /// A data segment `seq` arrived at `now`.
    pub fn on_data(&mut self, now: Nanos, seq: u64) -> AckNeed {
        // tcp_event_data_recv: quick-ACK at the start and after idle.
        match self.last_data {
            None => self.quick = MAX_QUICKACKS,
            Some(t) if now - t > QUICKACK_IDLE => self.quick = MAX_QUICKACKS,
            _ => {}
        }
        self.last_data = Some(now);

        if seq < self.rcv_nxt || self.in_ofo(seq) {
            // A duplicate: D-SACK it and ack at once (tcp_send_dupack).
            self.dup_segs += 1;
            self.dsack = Some(SackBlock { start: seq, end: seq + 1 });
            return AckNeed::Now;
        }
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            let had_ofo = !self.ofo.is_empty();
            // tcp_ofo_queue: pull in what became contiguous.
            while let Some(first) = self.ofo.first().copied() {
                if first.start > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(first.end);
                self.ofo.remove(0);
            }
            let nxt = self.rcv_nxt;
            self.recent.retain(|b| b.end > nxt);
            self.unacked += 1;
            if had_ofo {
                // RFC 5681 4.2: ack at once when a gap is filled (or shrinks).
                return AckNeed::Now;
            }
            if self.quick > 0 || self.unacked >= 2 {
                return AckNeed::Now;
            }
            if self.ack_deadline.is_none() {
                self.ack_deadline = Some(now + DELACK_MIN);
            }
            return AckNeed::Later;
        }
        // Out of order: insert and put its block first in the SACK list.
        self.insert_ofo(seq);
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            return AckNeed::Now;
        }
        self.compressed += 1;
        if self.compressed >= COMP_SACK_NR {
            return AckNeed::Now;
        }
        let d = now + self.comp_delay;
        if self.ack_deadline.map_or(true, |t| t > d) {
            self.ack_deadline = Some(d);
        }
        AckNeed::Later
    }

    fn insert_ofo(&mut self, seq: u64) {
        let pos = self.ofo.partition_point(|b| b.end < seq);
        let mut block = SackBlock { start: seq, end: seq + 1 };
        if pos < self.ofo.len() && self.ofo[pos].end == seq {
            self.ofo[pos].end = seq + 1;
            block = self.ofo[pos];
            if pos + 1 < self.ofo.len() && self.ofo[pos + 1].start == seq + 1 {
                block.end = self.ofo[pos + 1].end;
                self.ofo[pos].end = block.end;
                self.ofo.remove(pos + 1);
            }
        } else if pos < self.ofo.len() && self.ofo[pos].start == seq + 1 {
            self.ofo[pos].start = seq;
            block = self.ofo[pos];
        } else {
            self.ofo.insert(pos, block);
        }
        // tcp_sack_new_ofo_skb: the block that changed goes first; drop blocks it swallowed.
        self.recent.retain(|b| !(b.start >= block.start && b.end <= block.end));
        self.recent.insert(0, block);
        self.recent.truncate(4);
    }

    /// Build the ACK to send now, and reset the delayed-ACK state.
    pub fn make_ack(&mut self) -> AckOut {
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        let dsack = self.dsack.take();
        if let Some(d) = dsack {
            sack[0] = d;
            n = 1;
        }
        for b in &self.recent {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            sack[n] = *b;
            n += 1;
        }
        // tcp_dec_quickack_mode
        self.quick = self.quick.saturating_sub(self.unacked.max(1));
        self.unacked = 0;
        self.compressed = 0;
        if self.ofo.is_empty() {
            self.dup_ack_counter = 0;
        }
        self.ack_deadline = None;
        AckOut { ack: self.rcv_nxt, sack, nsack: n as u8, dsack: dsack.is_some(), ece: self.ece }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_ack_mode_acks_every_one_of_the_first_sixteen_segments() {
        let mut r = Receiver::new(100 * NS_PER_MS);
        for s in 0..16 {
            assert_eq!(r.on_data(s * 1000, s), AckNeed::Now, "segment {s}");
            r.make_ack();
        }
        assert_eq!(r.on_data(17_000, 16), AckNeed::Later);
        assert_eq!(r.ack_deadline, Some(17_000 + DELACK_MIN));
        assert_eq!(r.on_data(18_000, 17), AckNeed::Now);
    }

    #[test]
    fn a_hole_produces_sack_blocks_newest_first_and_filling_it_acks_at_once() {
        let mut r = Receiver::new(100 * NS_PER_MS);
        r.on_data(0, 0);
        r.make_ack();
        assert_eq!(r.on_data(1, 2), AckNeed::Now);
        assert_eq!(r.on_data(2, 3), AckNeed::Now);
        assert_eq!(r.on_data(3, 5), AckNeed::Now);
        let a = r.make_ack();
        assert_eq!(a.ack, 1);
        assert_eq!(&a.sack[..a.nsack as usize], &[SackBlock { start: 5, end: 6 }, SackBlock { start: 2, end: 4 }]);
        assert_eq!(r.on_data(4, 1), AckNeed::Now);
        let a = r.make_ack();
        assert_eq!(a.ack, 4);
        assert_eq!(&a.sack[..a.nsack as usize], &[SackBlock { start: 5, end: 6 }]);
    }

    #[test]
    fn after_three_dupacks_further_sacks_are_compressed() {
        let mut r = Receiver::new(100 * NS_PER_MS);
        r.on_data(0, 0);
        r.make_ack();
        for s in 2..5 {
            assert_eq!(r.on_data(s, s), AckNeed::Now);
            r.make_ack();
        }
        assert_eq!(r.on_data(10, 5), AckNeed::Later);
        assert_eq!(r.ack_deadline, Some(10 + COMP_SACK_DELAY));
    }

    #[test]
    fn a_duplicate_segment_is_dsacked() {
        let mut r = Receiver::new(100 * NS_PER_MS);
        r.on_data(0, 0);
        r.make_ack();
        assert_eq!(r.on_data(1, 0), AckNeed::Now);
        let a = r.make_ack();
        assert!(a.dsack);
        assert_eq!(a.sack[0], SackBlock { start: 0, end: 1 });
    }
}
