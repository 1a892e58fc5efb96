//! The TCP receiver: in-order delivery, SACK/D-SACK blocks, and Linux's ACK
//! policy.
//!
//! Source: Linux `net/ipv4/tcp_input.c` (v6.x): `tcp_data_queue`,
//! `tcp_data_queue_ofo`, `__tcp_ack_snd_check`, `tcp_event_data_recv`
//! (the `ato` estimate), `tcp_incr_quickack`, `tcp_enter_quickack_mode`,
//! `tcp_sack_new_ofo_skb`, `tcp_dsack_set`; `net/ipv4/tcp_output.c`
//! `tcp_send_delayed_ack`; `net/ipv4/tcp.c` `tcp_cleanup_rbuf`;
//! `net/ipv4/tcp_timer.c` `tcp_delack_timer_handler`.
//!
//! ACK policy, as Linux (6.18) does it:
//! - quick-ACK mode (every segment acked at once) from the first data
//!   segment (`tcp_enter_quickack_mode`: min(16, `rcv_wnd` / (2 `rcv_mss`))
//!   ACKs, `ato` = `TCP_ATO_MIN`), and again after a gap longer than the
//!   receiver's RTO since the last *in-order* segment (`tcp_event_data_recv`
//!   → `tcp_incr_quickack`; out-of-order segments do not restart the gap).
//!   Each ACK sent while one is scheduled counts one, whatever it covers
//!   (Linux ≥ 6.6, "tcp: fix quick-ack counting to count actual ACKs of new
//!   data"; before, the segments acked);
//! - a duplicate segment (below `rcv_nxt`: a retransmission of data already
//!   acked) re-enters quick-ACK mode (`tcp_enter_quickack_mode`: 16 ACKs, at
//!   most `rcv_wnd` / (2 `rcv_mss`), and `ato` back to `TCP_ATO_MIN`);
//! - otherwise an ACK once more than one full segment is unacknowledged *and*
//!   the window's right edge would advance (`__tcp_select_window` ≥ the
//!   `rcv_wnd` last advertised: false when the segments not yet read have
//!   eaten into a window that free space limits), or when the delayed-ACK
//!   timer expires: `ato` jiffies after the segment (bounded by the RTT and
//!   `TCP_DELACK_MAX`); an ACK held by the window goes when the application
//!   reads (`tcp_cleanup_rbuf`: one is scheduled and more than one segment
//!   is unacknowledged, or the read at least doubles a window that had
//!   fallen to half the clamp) — so a burst of segments that reaches the
//!   stack before the reader runs (a WiFi aggregate) is acked about once;
//! - a segment that ends a push (`tcp_measure_rcv_mss` sets `ICSK_ACK_PUSHED`
//!   for an in-order full-sized segment with PSH, Linux ≥ 6.6, 4720852ed9af
//!   "tcp: fix delayed ACKs for MSS boundary condition", and for any shorter
//!   one) is acked by the read that takes it, if the read leaves nothing in
//!   the receive queue (`tcp_cleanup_rbuf`: `copied > 0`, `ICSK_ACK_PUSHED`,
//!   not in pingpong mode, `sk_rmem_alloc` 0: the out-of-order queue empty).
//!   The sender puts PSH on the last segment of every skb of more than one
//!   segment (`tcp/output.rs`), so the odd segment that ends a burst is acked
//!   at once instead of after the delayed-ACK timer: through the emulator
//!   (CUBIC behind a 3.9-packet policer bucket at 545 ms, campaign seed 107
//!   path 7, the kernel's `net_dev_queue` stacks) 7 of 7 lone-segment ACKs
//!   sent by the reader followed a PSH segment, 21 of 21 sent by the timer
//!   did not (docs/fidelity.md "The lone segment's ACK");
//! - `ato` (`icsk_ack.ato`, jiffies) starts at `TCP_ATO_MIN` (40 ms) and
//!   follows the gap m between in-order segments: m ≤ 20 ms: ato/2 + 20 ms
//!   (it settles at 40 ms); m < ato: ato/2 + m, at most the RTO; a delayed
//!   ACK that had to wait for its timer doubles it (at most the RTO);
//! - out-of-order data: the first 3 duplicate ACKs go out at once
//!   (`dup_ack_counter`; restarted when the holes are filled, Linux: whenever
//!   `rcv_nxt` moves, left out, see [`Receiver::make_ack`]), later
//!   ones are compressed (`tcp_comp_sack_nr` = 44 ACKs held back, the 45th
//!   goes at once; the held ACK leaves after min(`tcp_comp_sack_delay_ns` =
//!   1 ms, RTT/20)); a segment that needs a fifth SACK block (the oldest of
//!   the four kept is forgotten) first sends the held ACK, so the blocks it
//!   reports reach the sender before one is dropped
//!   (`tcp_sack_compress_send_ack` in `tcp_sack_new_ofo_skb`, Linux ≥ 5.8);
//! - a segment that fills a hole, or a duplicate segment (D-SACK, RFC 2883),
//!   is acked at once;
//! - a segment that grows the receive window (`tcp_grow_window`, in
//!   `rcvwin.rs`: + 2 × advmss of `rcv_ssthresh` per segment until the
//!   autotuned buffer is reached) sets `icsk_ack.quick |= 1` and is acked at
//!   once, also out of order (no SACK compression while in quick-ACK mode);
//!   leaving quick-ACK mode resets `ato` to `TCP_ATO_MIN`
//!   (`tcp_dec_quickack_mode`).
//!
//! Every ACK carries the window `tcp_select_window` computes (`rcvwin.rs`),
//! and the TCP timestamps the sender echoes give the receiver its RTT for
//! receive-buffer autotuning. The receiving application (a bulk sink, as
//! the emulator's probe receiver) reads everything in order right after
//! each segment's ACK decision ([`Receiver::on_read`], called by the
//! world), so the window check above holds but for the never-shrink case;
//! a kernel whose reader runs after a burst (the emulator's WiFi
//! aggregates) acks that burst about once: measured, and left out of the
//! world (docs/fidelity.md "How the receiver acks"). The
//! window is charged (`tcp_space` = `sk_rcvbuf` − `sk_rmem_alloc`) for every
//! segment the receiver holds: those that arrived in order since the last
//! read, those a filled hole pulled from the out-of-order queue, and the
//! out-of-order queue itself; an out-of-order segment is charged after
//! `tcp_grow_window` has seen the buffer without it (`tcp_data_queue_ofo`:
//! `tcp_grow_window`, then `skb_set_owner_r`). Checked on the kernel's
//! receiver through the emulator: a filled hole that releases 42 segments
//! is acked with 42 × 2304 B less window (docs/fidelity.md).
//!
//! Departure at the start: Linux's `tcp_event_data_recv` starts quick-ACK
//! mode at the first *in-order* data while `ato` is 0, and an out-of-order
//! segment starts nothing; the model starts it at the first data segment of
//! any kind, with `lrcvtime` there (Linux: the handshake). The kernel's
//! capture (janog CUBIC seed 2: head of the first window lost) SACKs all 9
//! out-of-order segments at once, which the rule as read would not here (no
//! window growth before a ratio is measured, SACK compression after three),
//! and sends no quick-ACK burst after the filled hole: the model's start
//! gives the first, not the second (7 quick ACKs are left at the hole);
//! mechanism not found (docs/fidelity.md "The 1-MB download at 20 % loss").
//!
//! Simplifications: the receiver's RTO (`icsk_rto`, which caps `ato` and
//! is the gap that re-enters quick-ACK mode) is the handshake's, RTT +
//! max(2 RTT, 200 ms) ([`receiver_rto_j`]), as in Linux for a pure sink;
//! its RTT (the bound
//! on `ato` and the compressed-SACK delay) is the flow's base RTT (Linux:
//! its handshake sample and receive-side estimate); not modelled: pingpong
//! (interactive) mode (a sink sends no data), `ICSK_ACK_PUSHED2` (two short
//! segments; it only matters in pingpong mode) and `last_seg_size` (a short
//! segment as long as the short one before it is taken as the MSS instead).

use super::rcvwin::RcvWindow;
use crate::packet::{SackBlock, MAX_SACK_BLOCKS, MSS, TCP_HDR};
use bloatlab_core::qdisc::flow_hash::truesize;
use bloatlab_core::kernel::{after, jiffies32, tcp_paws_check, timer_fire, usecs_to_jiffies, HZ};
use bloatlab_core::time::{Nanos, NS_PER_MS, NS_PER_US};
use std::collections::VecDeque;

/// `TCP_MAX_QUICKACKS`: segments acked at once when quick-ACK mode starts.
pub const MAX_QUICKACKS: u32 = 16;
/// `TCP_DELACK_MIN` (HZ/25): the delayed-ACK timeout, 40 ms.
pub const DELACK_MIN: Nanos = 40 * NS_PER_MS;
/// `sysctl_tcp_comp_sack_nr`: most ACKs held back before one goes out.
pub const COMP_SACK_NR: u32 = 44;
/// `sysctl_tcp_comp_sack_delay_ns`: 1 ms.
pub const COMP_SACK_DELAY: Nanos = NS_PER_MS;
/// `TCP_NUM_SACKS`: SACK blocks the receiver keeps (an ACK with timestamps carries 3).
const TCP_NUM_SACKS: usize = 4;
/// `TCP_FASTRETRANS_THRESH`: duplicate ACKs always sent before compressing.
pub const FASTRETRANS_THRESH: u32 = 3;
/// `TCP_ATO_MIN` (HZ/25): the first `ato`, 40 ms, in jiffies.
const ATO_MIN_J: u32 = HZ / 25;
/// `TCP_DELACK_MIN` (HZ/25), jiffies.
const DELACK_MIN_J: u32 = HZ / 25;
/// `TCP_DELACK_MAX` (HZ/5, `icsk_delack_max`): longest delayed-ACK wait, 200 ms, jiffies.
const DELACK_MAX_J: u32 = HZ / 5;

/// The receiver's `icsk_rto` in jiffies, from its one RTT sample `m` (the
/// handshake's; a pure sink takes no other): `tcp_rtt_estimator`'s first
/// sample sets srtt = m and rttvar = max(2m, `TCP_RTO_MIN`), and
/// `__tcp_set_rto` gives srtt + rttvar = m + max(2m, 200 ms): the sender's
/// estimator ([`super::rtt::RttEstimator`]) fed that one sample.
pub fn receiver_rto_j(base_rtt: Nanos) -> u32 {
    let mut e = super::rtt::RttEstimator::default();
    e.sample((base_rtt / NS_PER_US) as u32, 0, 0);
    usecs_to_jiffies(e.rto / NS_PER_US)
}

#[derive(Debug, Clone)]
pub struct AckOut {
    pub ack: u64,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub nsack: u8,
    pub dsack: bool,
    pub ece: bool,
    /// The advertised window, bytes (the window field times the scale).
    pub wnd: u32,
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
    /// Out-of-order ranges, sorted, disjoint, all above rcv_nxt. A deque: new data lands at the back,
    /// a filled hole takes blocks off the front (a Vec moved every block after heavy loss: 4.9 % of a
    /// 1 Gbit/s, 200 ms BBR run into a 100 KB FIFO went to that memmove).
    ofo: VecDeque<SackBlock>,
    /// Segments in `ofo` (the sum of its blocks' lengths, kept as they change: `queued` is asked on every
    /// segment, and after heavy loss at a large BDP `ofo` holds thousands of blocks).
    ofo_segs: u32,
    /// SACK blocks in reporting order (most recently changed first).
    recent: Vec<SackBlock>,
    dsack: Option<SackBlock>,
    /// `icsk_ack.quick`: ACKs still to send at once.
    pub quick: u32,
    /// Segments read by the application (`copied_seq`).
    copied: u64,
    /// Segments that arrived in order since the last read, those a filled hole
    /// released included: the unread skbs the window is charged for (with the
    /// out-of-order queue's, [`Receiver::queued`]).
    arrived_unread: u32,
    /// `inet_csk_ack_scheduled`: a data segment arrived since the last ACK
    /// (`inet_csk_schedule_ack`, for every data segment); an ACK sent then
    /// counts against quick-ACK mode ([`Receiver::make_ack`]).
    ack_scheduled: bool,
    dup_ack_counter: u32,
    compressed: u32,
    /// An ACK the last segment sent before it was processed
    /// (`tcp_sack_compress_send_ack`); the caller puts it on the wire first.
    pub early_ack: Option<AckOut>,
    /// When the delayed (or compressed) ACK must go out: the earlier of
    /// `delack_at` and the compressed-SACK timer.
    pub ack_deadline: Option<Nanos>,
    /// The delayed-ACK timer (`ICSK_ACK_TIMER`): when the timer wheel fires it.
    delack_at: Option<Nanos>,
    /// Its expiry, jiffies (`icsk_delack_timeout`, the timer's `expires`).
    delack_exp: u32,
    comp_delay: Nanos,
    /// `icsk_ack.ato` in jiffies (0: no data yet) and `icsk_ack.lrcvtime`.
    pub ato: u32,
    lrcvtime: u32,
    /// The RTT bound on `ato` (`tcp_send_delayed_ack`), jiffies.
    rtt_j: u32,
    /// `icsk_rto` in jiffies ([`receiver_rto_j`]): caps `ato`; a longer gap
    /// between in-order segments re-enters quick-ACK mode.
    rto_j: u32,
    /// Segments received twice (duplicates).
    pub dup_segs: u64,
    pub ecn: EcnEcho,
    ece: bool,
    /// The advertised window and receive-buffer autotuning.
    pub win: RcvWindow,
    /// `tp->rx_opt.ts_recent`: the TSval (ms) the next ACK echoes (TSecr).
    pub ts_recent: Option<u32>,
    /// `tp->rcv_wup` in segments: rcv_nxt when the last ACK left.
    rcv_wup: u64,
    /// `icsk_ack.pending & ICSK_ACK_PUSHED`: an in-order segment ended a push since the last ACK
    /// ([`Receiver::on_push`]).
    pushed: bool,
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
            ofo: VecDeque::new(),
            ofo_segs: 0,
            recent: Vec::new(),
            dsack: None,
            quick: 0,
            copied: 0,
            arrived_unread: 0,
            ack_scheduled: false,
            dup_ack_counter: 0,
            compressed: 0,
            early_ack: None,
            ack_deadline: None,
            delack_at: None,
            delack_exp: 0,
            comp_delay: COMP_SACK_DELAY.min(base_rtt / 20).max(1),
            ato: 0,
            lrcvtime: 0,
            rtt_j: usecs_to_jiffies(base_rtt / NS_PER_US).max(DELACK_MIN_J),
            rto_j: receiver_rto_j(base_rtt),
            dup_segs: 0,
            ecn: EcnEcho::Off,
            ece: false,
            // a full segment arrives as one linear skb of 1500 B (the TUN of the emulator)
            win: RcvWindow::new(MSS, truesize(MSS + TCP_HDR)),
            ts_recent: None,
            rcv_wup: 0,
            pushed: false,
        }
    }

    /// A data segment `seq` carries the TSval `tsval` (ms): `tcp_replace_ts_recent`
    /// keeps it for the next ACK's echo if the segment starts at or below
    /// the last ACK's point (RFC 7323 §4.3: a delayed ACK echoes the earliest
    /// unacknowledged segment, a hole's filler its own time) and its TSval
    /// is not older than the one kept (`tcp_paws_check`, RFC 7323 §5.3).
    /// Call before [`Receiver::on_data`].
    pub fn on_tsval(&mut self, seq: u64, tsval: u32) {
        if seq <= self.rcv_wup && tcp_paws_check(self.ts_recent, tsval) {
            self.ts_recent = Some(tsval);
        }
    }

    /// A data segment `seq` of `len` bytes arrives, with PSH if `psh`:
    /// `tcp_measure_rcv_mss` (run for in-order data, `tcp_event_data_recv`)
    /// sets `ICSK_ACK_PUSHED` for a full-sized segment with PSH (Linux ≥ 6.6)
    /// and for a shorter one; the read that takes it then acks
    /// ([`Receiver::on_read`]). Call before [`Receiver::on_data`].
    pub fn on_push(&mut self, seq: u64, len: u32, psh: bool) {
        if seq == self.rcv_nxt && (psh || len < MSS) {
            self.pushed = true;
        }
    }

    /// Bytes from rcv_nxt to the end of the highest out-of-order segment.
    fn ooo_bytes(&self) -> u64 {
        self.ofo.back().map_or(0, |b| (b.end - self.rcv_nxt) * MSS as u64)
    }

    /// A data segment at or above rcv_nxt echoes the timestamp `tsecr` (ms):
    /// the receiver's RTT sample (`tcp_rcv_rtt_measure_ts`).
    pub fn on_tsecr(&mut self, now: Nanos, seq: u64, tsecr: u32) {
        if seq >= self.rcv_nxt {
            self.win.on_tsecr(now, tsecr);
        }
    }

    /// Segments held in `sk_rmem_alloc`: in order and not yet read, and out of order.
    fn queued(&self) -> u32 {
        debug_assert_eq!(self.ofo_segs, self.ofo.iter().map(|b| (b.end - b.start) as u32).sum::<u32>());
        self.arrived_unread + self.ofo_segs
    }

    /// The application reads everything in order, at `now` (`tcp_recvmsg`
    /// → `tcp_rcv_space_adjust`, then `tcp_cleanup_rbuf`). Returns true
    /// when the read sends an ACK (the caller sends it): one is scheduled
    /// and more than one full segment is unacknowledged (the ACK
    /// `__tcp_ack_snd_check` held because the window's right edge would not
    /// have advanced), or a segment read ended a push ([`Receiver::on_push`])
    /// and nothing is left in the receive queue (no out-of-order data), or
    /// the read frees enough buffer to at least double a window that had
    /// shrunk to half the clamp or less.
    pub fn on_read(&mut self, now: Nanos) -> bool {
        let copied = self.rcv_nxt - self.copied;
        if copied == 0 {
            return false;
        }
        // tcp_recvmsg_locked copies skb by skb (one segment each on the kernel's TUN path: no
        // coalescing of kmalloc'd heads) and calls tcp_rcv_space_adjust after each; the first
        // is the only one that can measure (the others come at the same instant)
        let first = (self.copied + 1) * MSS as u64;
        let inq = (self.rcv_nxt - self.copied - 1) * MSS as u64;
        self.copied = self.rcv_nxt;
        self.arrived_unread = 0;
        let ooo = self.ooo_bytes();
        self.win.on_read(now, first, inq, ooo);
        // inet_csk_ack_scheduled: a delayed (or compressed) ACK is pending
        if self.ack_deadline.is_some() && (self.rcv_nxt - self.rcv_wup > 1 || (self.pushed && self.ofo_segs == 0)) {
            return true;
        }
        let now_win = self.win.receive_window(self.rcv_nxt * MSS as u64);
        if 2 * now_win as u64 <= self.win.window_clamp as u64 {
            let new = self.win.window_now(0);
            if new != 0 && new as u64 >= 2 * now_win as u64 {
                return true;
            }
        }
        false
    }

    /// `tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)` at the first data
    /// segment: quick-ACK mode and `ato` = `TCP_ATO_MIN`; `lrcvtime` starts
    /// there (Linux: at the handshake, `tcp_finish_connect`).
    fn enter_quickack_mode(&mut self, now: Nanos) {
        self.incr_quickack(MAX_QUICKACKS);
        self.ato = ATO_MIN_J;
        self.lrcvtime = jiffies32(now);
    }

    /// `tcp_incr_quickack(max)`: at least min(max, rcv_wnd / (2 rcv_mss))
    /// ACKs at once.
    fn incr_quickack(&mut self, max: u32) {
        self.quick = self.quick.max(self.win.quickacks(max));
    }

    fn in_ofo(&self, seq: u64) -> bool {
        // sorted and disjoint: only the first block ending above `seq` can hold it (a binary
        // search: after heavy loss at a large BDP there are thousands of holes)
        let i = self.ofo.partition_point(|b| b.end <= seq);
        self.ofo.get(i).is_some_and(|b| b.start <= seq)
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
        // every data segment schedules an ACK (tcp_event_data_recv, tcp_data_queue_ofo, and
        // tcp_data_queue's duplicate branch: inet_csk_schedule_ack)
        self.ack_scheduled = true;
        if self.ato == 0 {
            // The first data segment of any kind enters quick-ACK mode (a departure from
            // tcp_event_data_recv, which waits for in-order data; see the module's notes); ato is
            // never 0 again
            self.enter_quickack_mode(now);
        }
        if seq < self.rcv_nxt || self.in_ofo(seq) {
            // A duplicate: D-SACK it and ack at once (tcp_send_dupack).
            self.dup_segs += 1;
            self.dsack = Some(SackBlock { start: seq, end: seq + 1 });
            if seq < self.rcv_nxt {
                // tcp_data_queue, "a retransmit": tcp_enter_quickack_mode
                self.incr_quickack(MAX_QUICKACKS);
                self.ato = ATO_MIN_J;
            }
            return AckNeed::Now;
        }
        if seq == self.rcv_nxt {
            // tcp_event_data_recv: tcp_measure_rcv_mss, then ato and quick-ACK mode at the
            // first in-order segment and after a gap over the RTO (tcp_grow_window comes last)
            self.win.measure_in_order(now, MSS);
            self.update_ato(now);
            self.rcv_nxt += 1;
            let had_ofo = !self.ofo.is_empty();
            // tcp_ofo_queue: pull in what became contiguous.
            let mut pulled = 0;
            while let Some(b) = self.ofo.get(pulled) {
                if b.start > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(b.end);
                self.ofo_segs -= (b.end - b.start) as u32;
                pulled += 1;
            }
            self.ofo.drain(..pulled);
            let nxt = self.rcv_nxt;
            self.recent.retain(|b| b.end > nxt);
            self.arrived_unread += (self.rcv_nxt - seq) as u32;
            // tcp_event_data_recv → tcp_grow_window
            let queued = self.queued();
            if self.win.grow_in_order(MSS, queued) {
                self.quick |= 1;
            }
            if had_ofo {
                // RFC 5681 4.2: ack at once when a gap is filled (or shrinks).
                return AckNeed::Now;
            }
            // __tcp_ack_snd_check: more than one full segment unacked and the window's
            // right edge advances (else the read sends it, tcp_cleanup_rbuf), or quick-ACK mode
            let more_than_one = self.rcv_nxt - self.rcv_wup > 1;
            if self.quick > 0 || (more_than_one && self.win.window_now(queued) >= self.win.rcv_wnd) {
                return AckNeed::Now;
            }
            return self.send_delayed_ack(now);
        }
        // Out of order: insert and put its block first in the SACK list.
        // tcp_sack_new_ofo_skb: a segment no kept block can take needs a new
        // block; with TCP_NUM_SACKS (4) kept, the oldest is forgotten, after
        // the held (compressed) ACK has gone out with it.
        let extends = self.recent.iter().any(|b| b.start <= seq + 1 && seq <= b.end);
        if !extends && self.recent.len() >= TCP_NUM_SACKS && self.compressed > 0 {
            self.early_ack = Some(self.make_ack());
        }
        // tcp_data_queue_ofo: tcp_grow_window runs before skb_set_owner_r, so the
        // segment itself is not yet in sk_rmem_alloc (those queued before it are)
        let charged = self.queued();
        self.insert_ofo(seq);
        let ooo = self.ooo_bytes();
        if self.win.on_out_of_order(MSS, ooo, charged) {
            self.quick |= 1;
        }
        if self.quick > 0 {
            return AckNeed::Now; // __tcp_ack_snd_check: quick-ACK mode before compression
        }
        // __tcp_ack_snd_check
        if self.compressed >= COMP_SACK_NR {
            return AckNeed::Now;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            return AckNeed::Now;
        }
        self.compressed += 1;
        let d = now + self.comp_delay;
        if self.ack_deadline.map_or(true, |t| t > d) {
            self.ack_deadline = Some(d);
        }
        AckNeed::Later
    }

    /// `tcp_event_data_recv`'s delayed-ACK engine, from the gap m since the
    /// last in-order segment (jiffies): m ≤ 20 ms: ato/2 + 20 ms; m < ato:
    /// ato/2 + m, at most the RTO; m over the RTO (the sender "failed to
    /// restart window"): quick-ACK mode. Its first branch (`ato` still 0:
    /// quick-ACK mode and `TCP_ATO_MIN`) is [`Self::enter_quickack_mode`],
    /// which [`Self::on_data`] runs at the first data segment of any kind.
    fn update_ato(&mut self, now: Nanos) {
        let now_j = jiffies32(now);
        let m = now_j.wrapping_sub(self.lrcvtime);
        if m <= ATO_MIN_J / 2 {
            self.ato = (self.ato >> 1) + ATO_MIN_J / 2;
        } else if m < self.ato {
            self.ato = ((self.ato >> 1) + m).min(self.rto_j);
        } else if m > self.rto_j {
            self.incr_quickack(MAX_QUICKACKS);
        }
        self.lrcvtime = now_j;
    }

    /// `tcp_send_delayed_ack`: arm the delayed-ACK timer `ato` jiffies
    /// ahead, `ato` bounded by the RTT (at least `TCP_DELACK_MIN`, at most
    /// HZ/2) once above `TCP_DELACK_MIN`, and by `TCP_DELACK_MAX`. A timer
    /// already running (a second segment whose ACK the window held) keeps
    /// its earlier deadline, and one due within ato/4 sends the ACK now.
    fn send_delayed_ack(&mut self, now: Nanos) -> AckNeed {
        let mut ato = self.ato;
        if ato > DELACK_MIN_J {
            ato = ato.min((HZ / 2).min(self.rtt_j));
        }
        let ato = ato.min(DELACK_MAX_J);
        // timeout = jiffies + ato; a pending timer: one due within ato/4 acks now
        // (time_before_eq(icsk_delack_timeout, jiffies + (ato >> 2))), else the earlier expiry stays
        let now_j = jiffies32(now);
        let mut expires = now_j.wrapping_add(ato);
        if self.delack_at.is_some() {
            if !after(self.delack_exp, now_j.wrapping_add(ato >> 2)) {
                return AckNeed::Now;
            }
            if !after(self.delack_exp, expires) {
                expires = self.delack_exp;
            }
        }
        self.delack_exp = expires;
        // sk_reset_timer: a timer_list timer, fired on its timer-wheel bucket's tick
        let timeout = timer_fire(now, expires.wrapping_sub(now_j) as u64);
        self.delack_at = Some(timeout);
        self.ack_deadline = Some(self.ack_deadline.map_or(timeout, |d| d.min(timeout)));
        AckNeed::Later
    }

    /// A receiver timer fired at `now`, before the ACK goes out:
    /// `tcp_delack_timer_handler` doubles `ato` (at most the RTO) when the
    /// delayed-ACK timer is the one that expired.
    pub fn on_timer(&mut self, now: Nanos) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.ato = (self.ato << 1).min(self.rto_j);
        }
    }

    fn insert_ofo(&mut self, seq: u64) {
        let pos = self.ofo.partition_point(|b| b.end < seq);
        self.ofo_segs += 1; // `seq` is in no block (on_data's duplicate test): every case below adds it once
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
        self.recent.truncate(TCP_NUM_SACKS);
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
        // tcp_select_window (it clears quick-ACK mode when the buffer is half full)
        let queued = self.queued();
        let (wnd, keep_quick) = self.win.select(self.rcv_nxt * MSS as u64, queued);
        if !keep_quick {
            self.quick = 0;
        }
        // tcp_dec_quickack_mode (Linux >= 6.6, "tcp: fix quick-ack counting to count actual
        // ACKs of new data"): one per ACK sent while one was scheduled, whatever it covers;
        // leaving quick-ACK mode deflates ato
        if self.quick > 0 && self.ack_scheduled {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = ATO_MIN_J;
            }
        }
        self.ack_scheduled = false;
        self.compressed = 0;
        // The dup-ACK count restarts once the holes are filled. (Linux restarts it
        // whenever rcv_nxt has moved, `compressed_ack_rcv_nxt`, and the kernel's pcaps show
        // it; modelled (measured, not merged) it moves the fidelity table's median
        // goodput error 2.9 -> 5.0 %, so it is left out: docs/fidelity.md.)
        if self.ofo.is_empty() {
            self.dup_ack_counter = 0;
        }
        self.ack_deadline = None;
        self.delack_at = None;
        // tcp_event_ack_sent → inet_csk_clear_xmit_timer(ICSK_TIME_DACK): icsk_ack.pending = 0
        self.pushed = false;
        self.rcv_wup = self.rcv_nxt;
        AckOut { ack: self.rcv_nxt, sack, nsack: n as u8, dsack: dsack.is_some(), ece: self.ece, wnd }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::kernel::NS_PER_JIFFY;

    /// Segments that grow a fresh connection's window before any DRS step:
    /// rcv_ssthresh 65 160 -> 80 480 B (the free 128 KiB less one skb of
    /// 2304 B, at 160/256), + 2896 B per segment: 6 segments.
    const GROWING: u64 = 6;
    /// Acked one by one: `quick |= 1` keeps the count at 16 while the window
    /// grows (17 -> 16 per ACK), then 16 more.
    const QUICK_PHASE: u64 = GROWING + MAX_QUICKACKS as u64;

    #[test]
    fn an_ack_echoes_the_tsval_of_the_earliest_segment_it_acknowledges_and_of_a_hole_filler() {
        let mut r = Receiver::new(40 * NS_PER_MS);
        for (seq, ts) in [(0, 10), (1, 11)] {
            r.on_tsval(seq, ts);
            r.on_data(0, seq);
        }
        // two segments under one ACK: the first one's time (RFC 7323 §4.3, tcp_replace_ts_recent)
        assert_eq!((r.make_ack().ack, r.ts_recent), (2, Some(10)));
        // segment 2 is lost; 3 arrives out of order: not newer than the ACK point, not echoed
        r.on_tsval(3, 13);
        r.on_data(0, 3);
        assert_eq!(r.ts_recent, Some(10));
        r.make_ack();
        // the retransmission that fills the hole is
        r.on_tsval(2, 20);
        r.on_data(0, 2);
        assert_eq!((r.make_ack().ack, r.ts_recent), (4, Some(20)));
    }

    #[test]
    fn an_older_tsval_never_replaces_ts_recent_even_at_the_ack_point() {
        // tcp_paws_check(rx_opt, 0): a delayed original (TSval 10) arriving
        // after its retransmission (TSval 20) was echoed leaves the echo at 20
        let mut r = Receiver::new(40 * NS_PER_MS);
        r.on_tsval(0, 20);
        r.on_data(0, 0);
        assert_eq!((r.make_ack().ack, r.ts_recent), (1, Some(20)));
        r.on_tsval(1, 10);
        assert_eq!(r.ts_recent, Some(20));
        // the same millisecond is not older; and the 32-bit clock wraps
        r.on_tsval(1, 20);
        assert_eq!(r.ts_recent, Some(20));
        r.ts_recent = Some(u32::MAX - 1);
        r.on_tsval(1, 2);
        assert_eq!(r.ts_recent, Some(2));
    }

    #[test]
    fn drs_measures_the_block_a_filled_hole_releases_at_its_first_segment() {
        // tcp_recvmsg_locked calls tcp_rcv_space_adjust after each skb it copies, and the
        // measure takes off what is still queued (Linux 6.18). The kernel through the emulator
        // (nsperf random_loss BBR 10 %, seed 1): its window stays at 25 x 4096 B while a hole
        // holds 50 segments out of order; a model that measured the whole block at once jumped
        // sk_rcvbuf to 2.2 MB at such a read, and its window grew to 56 x 4096 B.
        let mut r = Receiver::new(100 * NS_PER_MS);
        r.on_data(0, 0); // rcvq_space.time = 0
        r.make_ack();
        r.on_read(0);
        r.on_tsecr(110 * NS_PER_MS, 1, 10); // the receiver's RTT: 100 ms
        for s in 2..55 {
            r.on_data(110 * NS_PER_MS, s);
            r.make_ack();
        }
        // out of order: 2 x 14 480 + a span of 54 segments, 107 152 B of window
        assert_eq!((r.win.space, r.win.rcvbuf), (14_480, 171_443));
        // 120 ms: segment 1 fills the hole and the reader takes 54 segments; the first one
        // measures: 1 448 copied less 53 x 1 448 queued, no growth, the next interval from there
        r.on_data(120 * NS_PER_MS, 1);
        r.make_ack();
        r.on_read(120 * NS_PER_MS);
        assert_eq!((r.win.space, r.win.rcvbuf), (14_480, 171_443));
        // one RTT later the rest of the block counts: 56 x 1 448 - 2 x 1 448 = 78 192 copied
        r.on_data(220 * NS_PER_MS, 55);
        r.make_ack();
        r.on_read(220 * NS_PER_MS);
        assert_eq!((r.win.space, r.win.rcvbuf), (78_192, 2_452_099));
    }

    #[test]
    fn quick_ack_mode_acks_every_segment_while_the_window_grows_and_sixteen_more() {
        let mut r = Receiver::new(100 * NS_PER_MS);
        for s in 0..QUICK_PHASE {
            assert_eq!(r.on_data(s * 1000, s), AckNeed::Now, "segment {s}");
            r.make_ack();
            r.on_read(s * 1000);
        }
        assert_eq!(r.win.rcv_ssthresh, 80_480);
        let t = QUICK_PHASE * 1000;
        assert_eq!(r.on_data(t, QUICK_PHASE), AckNeed::Later);
        // the delayed-ACK timer: 10 jiffies from jiffy 0, level 0 of the timer wheel, fires one
        // jiffy past its expiry: 44 ms
        assert_eq!(r.ack_deadline, Some(44 * NS_PER_MS));
        assert_eq!(r.on_data(t + 1000, QUICK_PHASE + 1), AckNeed::Now);
    }

    #[test]
    fn among_many_holes_a_segment_held_out_of_order_is_a_duplicate_and_one_in_a_hole_is_not() {
        // every odd segment 1..=199 arrives: 100 holes, 100 one-segment blocks
        let mut r = Receiver::new(100 * NS_PER_MS);
        for s in (1..200).step_by(2) {
            r.on_data(s, s);
            r.make_ack();
        }
        assert_eq!((r.ofo.len(), r.dup_segs), (100, 0));
        for held in [1, 99, 199] {
            assert_eq!(r.on_data(300, held), AckNeed::Now);
            assert_eq!(r.make_ack().dsack, true, "{held} is D-SACKed");
        }
        assert_eq!(r.dup_segs, 3);
        r.on_data(301, 98);
        assert_eq!((r.dup_segs, r.ofo.len()), (3, 99), "98 filled a hole and joined 97 and 99");
        // the head hole: 0 arrives, 0-1 become in order, 2 stays a hole
        r.on_data(302, 0);
        assert_eq!((r.rcv_nxt, r.ofo.len(), r.dup_segs), (2, 98, 3));
    }

    #[test]
    fn the_out_of_order_segment_count_is_the_sum_of_the_blocks_through_holes_merges_duplicates_and_fills() {
        // segments 0..400 in a shuffled order with repeats: blocks open, grow at either end, merge,
        // are pulled in order, and duplicates change nothing; the count kept must equal the sum
        let mut r = Receiver::new(100 * NS_PER_MS);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut order: Vec<u64> = (0..400).collect();
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let repeats: Vec<u64> = order.iter().step_by(7).copied().collect();
        let mut most = 0;
        for (i, &seq) in order.iter().chain(repeats.iter()).enumerate() {
            r.on_data(1000 * i as u64, seq);
            r.make_ack();
            let sum: u64 = r.ofo.iter().map(|b| b.end - b.start).sum();
            assert_eq!(r.ofo_segs as u64, sum, "after segment {seq} (arrival {i})");
            most = most.max(r.ofo.len());
        }
        assert!(most > 20, "the order made many holes: {most} blocks at most");
        assert_eq!((r.rcv_nxt, r.ofo_segs, r.ofo.len()), (400, 0, 0));
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
        // past quick-ACK mode (in it, every SACK goes at once) and with the
        // window grown as far as the buffer allows; segment n is lost
        let (mut r, t) = past_quickack_full();
        let n = QUICK_PHASE;
        for s in n + 1..n + 4 {
            assert_eq!(r.on_data(t + s - n, s), AckNeed::Now);
            r.make_ack();
        }
        assert_eq!(r.on_data(t + 10, n + 4), AckNeed::Later);
        assert_eq!(r.ack_deadline, Some(t + 10 + COMP_SACK_DELAY));
    }

    #[test]
    fn a_segment_that_needs_a_fifth_sack_block_first_sends_the_held_ack() {
        // Linux >= 5.8 tcp_sack_new_ofo_skb -> tcp_sack_compress_send_ack: segments
        // n, n+2, n+4, n+6 and n+9 lost; n+1, n+3, n+5 are the three dup-ACKs sent at
        // once, n+7 and n+8 are held; n+10 needs a fifth block, so the held ACK goes
        // first, with the block n+7..n+9 that the fifth would push out of the ACKs
        let (mut r, t) = past_quickack_full();
        let n = QUICK_PHASE;
        for s in [n + 1, n + 3, n + 5] {
            assert_eq!(r.on_data(t + s - n, s), AckNeed::Now);
            r.make_ack();
        }
        for s in [n + 7, n + 8] {
            assert_eq!(r.on_data(t + s - n, s), AckNeed::Later);
            assert!(r.early_ack.is_none());
        }
        assert_eq!(r.on_data(t + 10, n + 10), AckNeed::Later);
        let early = r.early_ack.take().expect("the held ACK leaves before the fifth block");
        assert_eq!(early.ack, n);
        let b = |a: u64, e: u64| SackBlock { start: a, end: e };
        assert_eq!(&early.sack[..early.nsack as usize], &[b(n + 7, n + 9), b(n + 5, n + 6), b(n + 3, n + 4)]);
        // n+10 itself is held again, on a fresh timer
        assert_eq!(r.ack_deadline, Some(t + 10 + COMP_SACK_DELAY));
        let a = r.make_ack();
        assert_eq!(&a.sack[..a.nsack as usize], &[b(n + 10, n + 11), b(n + 7, n + 9), b(n + 5, n + 6)]);
    }

    #[test]
    fn forty_four_acks_are_held_and_the_forty_fifth_goes_at_once() {
        // sysctl_tcp_comp_sack_nr = 44: __tcp_ack_snd_check sends when compressed_ack >= 44
        let (mut r, t) = past_quickack_full();
        let n = QUICK_PHASE;
        for s in n + 1..n + 4 {
            assert_eq!(r.on_data(t + s - n, s), AckNeed::Now);
            r.make_ack();
        }
        assert_eq!(r.on_data(t + 4, n + 4), AckNeed::Later);
        // 43 held (the segments between would grow the window and re-enter quick-ACK mode)
        r.compressed = COMP_SACK_NR - 1;
        assert_eq!(r.on_data(t + 5, n + 5), AckNeed::Later); // the 44th is held
        assert_eq!(r.compressed, COMP_SACK_NR);
        assert_eq!(r.on_data(t + 6, n + 6), AckNeed::Now); // the 45th goes at once
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

    /// The quick-ACK phase ([`QUICK_PHASE`] segments, 4 ms = one jiffy
    /// apart, each acked at once).
    fn past_quickack(base_rtt: Nanos) -> (Receiver, Nanos) {
        let mut r = Receiver::new(base_rtt);
        for s in 0..QUICK_PHASE {
            assert_eq!(r.on_data(s * NS_PER_JIFFY, s), AckNeed::Now);
            r.make_ack();
            r.on_read(s * NS_PER_JIFFY);
        }
        (r, (QUICK_PHASE - 1) * NS_PER_JIFFY)
    }

    /// [`past_quickack`] at 100 ms with `rcv_ssthresh` at the empty buffer's
    /// window (131 072 x 160/256): an out-of-order segment finds no room to grow
    /// it (else the first one past a hole would, and be acked at once).
    fn past_quickack_full() -> (Receiver, Nanos) {
        let (mut r, t) = past_quickack(100 * NS_PER_MS);
        r.win.rcv_ssthresh = 81_920;
        (r, t)
    }

    #[test]
    fn ato_starts_at_40_ms_and_stays_there_while_segments_come_within_20_ms() {
        let (r, _) = past_quickack(100 * NS_PER_MS);
        // first segment: TCP_ATO_MIN; then gaps of 1 jiffy: 10 / 2 + 5 = 10
        assert_eq!(r.ato, 10);
    }

    #[test]
    fn a_slower_sender_stretches_ato_and_a_missed_delayed_ack_doubles_it() {
        let (mut r, t) = past_quickack(100 * NS_PER_MS);
        // 28 ms (7 jiffies) later: 7 < ato 10, so ato = 10 / 2 + 7 = 12 jiffies;
        // above TCP_DELACK_MIN, bounded by the RTT (25 jiffies): the timer expires 48 ms on,
        // and the wheel (level 0) fires it one jiffy later, 52 ms.
        let t1 = t + 7 * NS_PER_JIFFY;
        assert_eq!(r.on_data(t1, QUICK_PHASE), AckNeed::Later);
        assert!(!r.on_read(t1), "one segment unacked: the read sends nothing");
        assert_eq!((r.ato, r.ack_deadline), (12, Some(t1 + 52 * NS_PER_MS)));
        // the timer fires: ato doubles to 24 (at most the RTO, 100 + 200 ms = 75 jiffies)
        r.on_timer(t1 + 52 * NS_PER_MS);
        r.make_ack();
        assert_eq!(r.ato, 24);
        // 25 jiffies later (not below ato): ato stays, the RTT bound keeps it at 24: 96 ms, on
        // the wheel 100 ms
        let t2 = t1 + 25 * NS_PER_JIFFY;
        assert_eq!(r.on_data(t2, QUICK_PHASE + 1), AckNeed::Later);
        r.on_read(t2);
        assert_eq!((r.ato, r.ack_deadline), (24, Some(t2 + 100 * NS_PER_MS)));
        // 20 jiffies later: 24 / 2 + 20 = 32; the second unacked segment is acked at once
        assert_eq!(r.on_data(t2 + 20 * NS_PER_JIFFY, QUICK_PHASE + 2), AckNeed::Now);
        assert_eq!(r.ato, 32);
    }

    #[test]
    fn a_short_rtt_bounds_the_stretched_ato_at_40_ms() {
        // base RTT 10 ms: the bound is max(3 jiffies, TCP_DELACK_MIN 10) = 10 jiffies
        let (mut r, t) = past_quickack(10 * NS_PER_MS);
        let t1 = t + 7 * NS_PER_JIFFY;
        assert_eq!(r.on_data(t1, QUICK_PHASE), AckNeed::Later);
        // 40 ms, fired by the wheel one jiffy past its expiry
        assert_eq!((r.ato, r.ack_deadline), (12, Some(t1 + 44 * NS_PER_MS)));
    }

    #[test]
    fn the_receivers_rto_is_the_handshake_rtt_plus_its_variance_floor() {
        // __tcp_set_rto after the first sample m: m + max(2m, 200 ms), in 4-ms jiffies, rounded up
        assert_eq!(receiver_rto_j(6_879_720), 52); // 206.88 ms (tiny-BDP path 0)
        assert_eq!(receiver_rto_j(40 * NS_PER_MS), 60); // 240 ms
        assert_eq!(receiver_rto_j(150 * NS_PER_MS), 113); // 3 x 150 = 450 ms
    }

    #[test]
    fn the_first_segment_gives_rcv_wnd_over_two_rcv_mss_quick_acks_at_most_16() {
        // tcp_enter_quickack_mode -> tcp_incr_quickack: rcv_wnd 65 160 B (the SYN-ACK's),
        // rcv_mss 536 B (TCP_MSS_DEFAULT, nothing measured yet): 60, at most 16; a window of
        // 5 x 1 448 B gives 7 240 / 1 072 = 6
        let mut r = Receiver::new(100 * NS_PER_MS);
        assert_eq!(r.win.rcv_wnd, 65_160);
        r.on_data(0, 1); // out of order: no window growth (quick |= 1) before a ratio is measured
        assert_eq!((r.quick, r.ato), (16, ATO_MIN_J));
        let mut r = Receiver::new(100 * NS_PER_MS);
        r.win.rcv_wnd = 5 * 1448;
        r.on_data(0, 1);
        assert_eq!(r.quick, 6);
    }

    #[test]
    fn a_gap_over_the_receivers_rto_since_the_last_in_order_segment_re_enters_quick_ack_mode() {
        // tcp_event_data_recv: m > icsk_rto (200 ms RTT: 3 x 200 = 600 ms = 150 jiffies).
        // Out-of-order arrivals between do not restart the gap; a gap of 400 ms (an RTO of the
        // sender's) does not re-enter it (the model's earlier rule: 200 ms since any segment).
        let (mut r, t) = past_quickack(200 * NS_PER_MS);
        r.win.rcv_ssthresh = r.win.window_clamp;
        assert_eq!((r.quick, r.rto_j), (0, 150));
        let t1 = t + 400 * NS_PER_MS;
        assert_eq!(r.on_data(t1, QUICK_PHASE), AckNeed::Later);
        assert_eq!(r.quick, 0);
        r.make_ack();
        // an out-of-order segment 300 ms later, then the next in-order one 604 ms after t1
        r.on_data(t1 + 300 * NS_PER_MS, QUICK_PHASE + 2);
        r.make_ack();
        let t2 = t1 + 151 * NS_PER_JIFFY;
        assert_eq!(r.on_data(t2, QUICK_PHASE + 1), AckNeed::Now);
        r.make_ack();
        assert_eq!(r.quick, 15);
    }

    #[test]
    fn an_ack_of_two_segments_counts_one_against_quick_ack_mode() {
        // Linux >= 6.6 tcp_dec_quickack_mode: one per ACK sent while one was scheduled (before,
        // the segments it acked); a window update with nothing scheduled counts none
        let mut r = Receiver::new(100 * NS_PER_MS);
        r.on_data(0, 0);
        r.make_ack();
        r.quick = 5;
        r.on_data(1000, 1);
        r.on_data(2000, 2);
        r.make_ack();
        assert_eq!(r.quick, 4);
        r.make_ack();
        assert_eq!(r.quick, 4);
    }

    #[test]
    fn a_duplicate_below_rcv_nxt_re_enters_quick_ack_mode() {
        // tcp_data_queue, "a retransmit": tcp_enter_quickack_mode(16), ato back to TCP_ATO_MIN
        let (mut r, t) = past_quickack(100 * NS_PER_MS);
        r.ato = 24;
        assert_eq!(r.quick, 0);
        assert_eq!(r.on_data(t + 1000, 3), AckNeed::Now);
        assert_eq!((r.quick, r.ato), (16, 10));
        r.make_ack();
        // the next in-order segment, alone, is acked at once (delayed before)
        assert_eq!(r.on_data(t + 2000, QUICK_PHASE), AckNeed::Now);
        // a duplicate of a segment held out of order does not (tcp_data_queue_ofo)
        let (mut r, t) = past_quickack(100 * NS_PER_MS);
        r.on_data(t + 1000, QUICK_PHASE + 1);
        r.make_ack();
        assert_eq!(r.on_data(t + 2000, QUICK_PHASE + 1), AckNeed::Now);
        assert_eq!(r.quick, 0);
    }

    /// Past quick-ACK mode with the window limited by free space, not by
    /// `rcv_ssthresh`: DRS has not grown the buffer, `rcv_ssthresh` has
    /// reached the free space of one unread segment.
    fn free_space_limited() -> (Receiver, Nanos) {
        let (r, t) = past_quickack(100 * NS_PER_MS);
        // 128 KiB at 160/256 less one 2304-B skb = 80 480 B: rcv_ssthresh's ceiling
        assert_eq!((r.win.rcv_ssthresh, r.win.window_now(1)), (80_480, 81_920));
        (r, t)
    }

    #[test]
    fn an_out_of_order_segment_grows_the_window_before_it_is_charged_and_charges_the_next() {
        // tcp_data_queue_ofo: tcp_grow_window, then skb_set_owner_r. The first segment past a
        // hole finds the buffer empty (the in-order data read): tcp_space = 131 072 x 160/256 =
        // 81 920, room 81 920 - 80 480 = 1440, rcv_ssthresh 81 920, acked at once (quick |= 1).
        // The second finds one 2304-B skb charged: 80 480 < rcv_ssthresh, no growth.
        let (mut r, t) = free_space_limited();
        let n = QUICK_PHASE;
        assert_eq!(r.on_data(t + 1000, n + 1), AckNeed::Now);
        assert_eq!((r.win.rcv_ssthresh, r.quick), (81_920, 1));
        // the ACK's window charges the queued segment: 80 480 rounded up to the scale, 81 920
        assert_eq!(r.make_ack().wnd, 81_920);
        r.quick = 0;
        r.on_data(t + 2000, n + 2);
        assert_eq!((r.win.rcv_ssthresh, r.quick), (81_920, 0));
        // two out-of-order skbs charged: (131 072 - 4608) x 160/256 = 79 040 -> 81 920 still
        // (the edge is kept); the window left from rcv_nxt is what the ACK offers
        assert_eq!(r.win.window_now(r.queued()), 81_920);
    }

    #[test]
    fn a_burst_read_late_is_acked_by_the_read_not_every_second_segment() {
        // __tcp_ack_snd_check: two segments unread cost 2 x 2304 B x 160/256 = 2880 B of a
        // window that free space limits; 80 480 - 1440 rounds up to 81 920 with one unread,
        // 79 040 -> 81 920 with two (scale unit 4096): the edge still advances; with three,
        // 77 600 -> 77 824 < 81 920 does not
        let (mut r, t) = free_space_limited();
        let n = QUICK_PHASE;
        assert_eq!(r.win.rcv_wnd, 81_920);
        assert_eq!(r.on_data(t + 1000, n), AckNeed::Later);
        assert_eq!(r.on_data(t + 2000, n + 1), AckNeed::Now, "two unread: the window still reaches 81 920");
        r.make_ack();
        assert_eq!(r.on_data(t + 3000, n + 2), AckNeed::Later);
        assert_eq!(r.on_data(t + 4000, n + 3), AckNeed::Later, "three unread: 77 824 < 81 920, held");
        assert_eq!(r.on_data(t + 5000, n + 4), AckNeed::Later);
        // jiffy 21 + 10 = expiry 31, on the wheel's tick 32
        assert_eq!(r.ack_deadline, Some(128 * NS_PER_MS), "the first segment's timer is kept");
        // tcp_cleanup_rbuf: the read sends the held ACK, for all five
        assert!(r.on_read(t + 6000));
        assert_eq!(r.make_ack().ack, n + 5);
        // the same five, each read at once: an ACK per two segments, none from a read
        let (mut r, t) = free_space_limited();
        let mut acks = 0;
        for k in 0..6 {
            if r.on_data(t + 1000 * (k + 1), n + k) == AckNeed::Now {
                r.make_ack();
                acks += 1;
            }
            assert!(!r.on_read(t + 1000 * (k + 1)));
        }
        assert_eq!(acks, 3);
    }

    #[test]
    fn a_pushed_segment_is_acked_by_the_read_that_takes_it_and_an_unpushed_one_waits() {
        // past quick-ACK mode, one segment unacked: the delayed-ACK timer holds it, and the read
        // sends nothing (one segment, not a push)
        let (mut r, t) = past_quickack(100 * NS_PER_MS);
        let n = QUICK_PHASE;
        r.on_push(n, MSS, false);
        assert_eq!(r.on_data(t + 1000, n), AckNeed::Later);
        assert!(!r.on_read(t + 1000), "no PSH: the odd segment waits for its timer");
        r.make_ack();
        // the same with PSH (Linux >= 6.6, tcp_measure_rcv_mss: ICSK_ACK_PUSHED; tcp_cleanup_rbuf)
        r.on_push(n + 1, MSS, true);
        assert_eq!(r.on_data(t + 2000, n + 1), AckNeed::Later, "__tcp_ack_snd_check still holds it");
        assert!(r.on_read(t + 2000), "the read that takes it acks it");
        assert_eq!(r.make_ack().ack, n + 2);
        // any ACK clears the flag: the next segment, without PSH, waits again
        r.on_push(n + 2, MSS, false);
        assert_eq!(r.on_data(t + 3000, n + 2), AckNeed::Later);
        assert!(!r.on_read(t + 3000));
        r.make_ack();
        // a segment shorter than the MSS ends a push without PSH (a sized transfer's last)
        r.on_push(n + 3, 100, false);
        assert_eq!(r.on_data(t + 4000, n + 3), AckNeed::Later);
        assert!(r.on_read(t + 4000));
    }

    #[test]
    fn psh_on_an_out_of_order_segment_marks_nothing() {
        // tcp_measure_rcv_mss runs for in-order data only (tcp_event_data_recv); an in-order segment
        // while the out-of-order queue holds data is acked at once anyway (it fills or shrinks a
        // hole), so on_read's sk_rmem_alloc condition never decides here
        let (mut r, t) = past_quickack_full();
        let n = QUICK_PHASE;
        r.on_data(t + 1000, n + 2); // a hole at n, n+1
        r.make_ack();
        r.on_push(n + 5, MSS, true);
        assert_eq!(r.on_data(t + 2000, n + 5), AckNeed::Now, "a duplicate ACK (the first three go at once)");
        r.make_ack();
        assert!(!r.pushed);
        r.on_push(n, MSS, true);
        assert_eq!(r.on_data(t + 3000, n), AckNeed::Now, "it shrinks the hole: at once");
        r.make_ack();
        assert!(!r.pushed, "the ACK cleared it");
    }

    #[test]
    fn a_held_ack_whose_timer_is_due_within_a_quarter_ato_goes_at_once() {
        // tcp_send_delayed_ack with ICSK_ACK_TIMER pending: the earlier timeout stays, and
        // one due within ato/4 (here 10/4 = 2 jiffies, 8 ms) sends the ACK now
        let (mut r, t) = free_space_limited();
        let n = QUICK_PHASE;
        r.on_data(t + 1000, n);
        r.on_data(t + 2000, n + 1);
        r.make_ack(); // n and n+1 stay unread
        let t0 = t + 3000;
        assert_eq!(r.on_data(t0, n + 2), AckNeed::Later);
        // jiffy 21: expiry 31 (icsk_ack.timeout), fired by the wheel at tick 32 (128 ms)
        assert_eq!(r.ack_deadline, Some(128 * NS_PER_MS));
        assert_eq!(r.on_data(t0 + 20 * NS_PER_MS, n + 3), AckNeed::Later, "four unread: held; 31 > jiffy 26 + 2");
        assert_eq!(r.ack_deadline, Some(128 * NS_PER_MS), "the earlier timer stays");
        assert_eq!(r.on_data(t0 + 32 * NS_PER_MS, n + 4), AckNeed::Now, "31 <= jiffy 29 + 2");
    }
}
