//! The scoreboard, SACK tagging and the cumulative ACK.
//!
//! Source: Linux v6.x `net/ipv4/tcp_input.c`: `tcp_sacktag_write_queue` /
//! `tcp_sacktag_one` (a SACKed segment is no longer LOST nor in flight as a
//! retransmission, and counts as delivered), `tcp_clean_rtt_queue` (free what
//! the cumulative ACK covers, collect the RTT samples of Karn's rule; RACK
//! skips a retransmission acked with an older echo, `tcp_skb_spurious_retrans`),
//! `tcp_ack_update_rtt` (the RTT estimator and the min-RTT filter; v6.18:
//! with no Karn sample, an ACK that advanced snd_una times its timestamp
//! echo, `tcp_rtt_tsopt_us(tp, 1)`, whole ms, an echo of this ms as 1 ms),
//! `tcp_mark_skb_lost`, `tcp_timeout_mark_lost`; the counters of
//! `struct tcp_sock` and `tcp_packets_in_flight` (`include/net/tcp.h`).
//!
//! Model: segments of one MSS are numbered 0, 1, 2, ...; one [`Seg`] per
//! outstanding segment (snd_una..snd_nxt) carries Linux's `TCPCB_*` flags
//! (SACKED_ACKED, LOST, SACKED_RETRANS, EVER_RETRANS) and its delivery-rate
//! snapshot (`tcp_rate.c`). `tsorted` is RACK's `tsorted_sent_queue`, in
//! transmission order; `lost_q` holds what is marked lost and not yet
//! retransmitted (what `tcp_xmit_retransmit_queue` walks).
//!
//! SACK tagging skips what the previous ACK's blocks covered, as Linux's
//! `tp->recv_sack_cache` does ("skip ranges already processed" in
//! `tcp_sacktag_write_queue`): the receiver repeats its blocks on every ACK,
//! one segment longer each, so walking every block whole costs O(window) per
//! ACK in a loss episode (at 1 Gbit/s and 200 ms, thousands of segments per
//! ACK). The skip changes nothing: a segment stays SACKed until the
//! cumulative ACK frees it (no reneging here, `snd_una`/`snd_nxt` only grow),
//! so every segment of a cached range is already SACKed and would be passed
//! over by `sack_one` anyway.
//!
//! Invariants: `packets_out = nxt - una = segs.len()`; `sacked_out`,
//! `lost_out` and `retrans_out` count the flags set in `segs`, a segment is
//! never both SACKed and LOST, and `lost_q` is exactly the LOST segments
//! without SACKED_RETRANS.

use super::sender::Sender;
use crate::packet::{SackBlock, MAX_SACK_BLOCKS, MSS};
use bloatlab_core::cc::{AckSample, LostSkb, RateSample};
use bloatlab_core::kernel::tcp_rtt_tsopt_us;
use bloatlab_core::time::{Nanos, NS_PER_US};
use std::collections::{BTreeSet, VecDeque};

/// `sysctl_tcp_min_rtt_wlen`: window of the min-RTT filter, 300 s (in µs).
pub(super) const MIN_RTT_WLEN_US: u64 = 300_000_000;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Seg {
    pub len: u32,
    /// Last (re)transmission time (`skb->skb_mstamp_ns`).
    pub tx_time: Nanos,
    /// tcp_rate per-skb state (`TCP_SKB_CB(skb)->tx`).
    pub first_tx: Nanos,
    pub delivered_mstamp: Nanos,
    pub delivered: u64,
    pub app_limited: bool,
    /// `tp->delivered_ce` when sent.
    pub delivered_ce: u64,
    /// BBRv3 tree's `tx.in_flight`: packets in flight once it was sent, itself included.
    pub tx_in_flight: u32,
    /// BBRv3 tree's `tx.lost`: `tp->lost` when sent.
    pub tx_lost: u64,
    /// TCPCB_SACKED_ACKED.
    pub sacked: bool,
    /// TCPCB_LOST.
    pub lost: bool,
    /// TCPCB_SACKED_RETRANS: a retransmission is in flight.
    pub retrans: bool,
    /// TCPCB_EVER_RETRANS.
    pub ever_retrans: bool,
    /// Transmission count; stale tsorted entries carry an older value.
    pub gen: u32,
}

/// The send queue from snd_una to snd_nxt and its counters.
#[derive(Debug, Default)]
pub(super) struct Scoreboard {
    /// snd_una and snd_nxt, in segments.
    pub una: u64,
    pub nxt: u64,
    pub segs: VecDeque<Seg>,
    /// (tx_time, seq, gen) in transmission order: RACK's `tsorted_sent_queue`.
    pub tsorted: VecDeque<(Nanos, u64, u32)>,
    /// Segments marked lost and not retransmitted yet.
    pub lost_q: BTreeSet<u64>,
    /// `tp->recv_sack_cache`: the previous ACK's SACK blocks as tagged
    /// (clamped to snd_una..snd_nxt of then; empty ranges are (0, 0)).
    /// Every segment in them is SACKed or already freed.
    pub sack_cache: [(u64, u64); MAX_SACK_BLOCKS],
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
}

impl Scoreboard {
    /// `tcp_packets_in_flight`: packets_out - left_out + retrans_out.
    pub fn in_flight(&self) -> u32 {
        self.packets_out - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    pub fn seg(&mut self, seq: u64) -> &mut Seg {
        let i = (seq - self.una) as usize;
        &mut self.segs[i]
    }

    /// Queue one new segment of `len` bytes at snd_nxt (it is sent at once).
    pub fn push_new(&mut self, len: u32) -> u64 {
        let seq = self.nxt;
        self.segs.push_back(Seg { len, ..Seg::default() });
        self.nxt += 1;
        self.packets_out += 1;
        seq
    }

    /// The head of `lost_q` leaves as a retransmission
    /// (`tcp_xmit_retransmit_queue`: SACKED_RETRANS | EVER_RETRANS).
    pub fn retransmit_next_lost(&mut self) -> Option<u64> {
        let seq = self.lost_q.pop_first()?;
        let s = self.seg(seq);
        s.retrans = true;
        s.ever_retrans = true;
        self.retrans_out += 1;
        Some(seq)
    }

    /// `tcp_sacktag_one` for one segment: returns it as it was if it is
    /// newly SACKed, None if it was SACKed already.
    pub fn sack_one(&mut self, seq: u64) -> Option<Seg> {
        let s = *self.seg(seq);
        if s.sacked {
            return None;
        }
        self.seg(seq).sacked = true;
        self.sacked_out += 1;
        if s.lost {
            self.seg(seq).lost = false;
            self.lost_out -= 1;
            self.lost_q.remove(&seq);
        }
        if s.retrans {
            self.seg(seq).retrans = false;
            self.retrans_out -= 1;
        }
        Some(s)
    }

    /// `tcp_clean_rtt_queue` for the head segment, which the cumulative ACK
    /// covers: it leaves the queue and every counter.
    pub fn ack_head(&mut self) -> Seg {
        let seq = self.una;
        let s = self.segs.pop_front().expect("scoreboard covers snd_una..snd_nxt");
        self.una += 1;
        self.packets_out -= 1;
        if s.sacked {
            self.sacked_out -= 1;
        }
        if s.lost {
            self.lost_out -= 1;
            self.lost_q.remove(&seq);
        }
        if s.retrans {
            self.retrans_out -= 1;
        }
        s
    }

    /// A board of `n` segments sent (tests): segment i at i ms, once, in
    /// RACK's queue.
    #[cfg(test)]
    pub fn sent(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for i in 0..n {
            let seq = sb.push_new(MSS);
            let s = sb.seg(seq);
            s.tx_time = i * 1_000_000;
            s.gen = 1;
            sb.tsorted.push_back((i * 1_000_000, seq, 1));
        }
        sb
    }

    /// Drop the RACK queue's entries below snd_una.
    pub fn prune_tsorted(&mut self) {
        while let Some(&(_, seq, _)) = self.tsorted.front() {
            if seq < self.una {
                self.tsorted.pop_front();
            } else {
                break;
            }
        }
    }

    /// `tcp_mark_skb_lost`: returns whether `tp->lost` counts it (a new loss,
    /// or a retransmission lost again).
    pub fn mark_lost(&mut self, seq: u64) -> bool {
        let s = *self.seg(seq);
        if s.sacked {
            return false;
        }
        if s.lost {
            if s.retrans {
                self.seg(seq).retrans = false;
                self.retrans_out -= 1;
                self.lost_q.insert(seq);
                return true;
            }
            false
        } else {
            self.seg(seq).lost = true;
            self.lost_out += 1;
            if s.retrans {
                self.seg(seq).retrans = false;
                self.retrans_out -= 1;
            }
            self.lost_q.insert(seq);
            true
        }
    }

    /// `tcp_undo_cwnd_reduction`'s `unmark_loss`: no segment is LOST any more
    /// (retransmissions in flight stay SACKED_RETRANS, as in Linux).
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.lost = false;
        }
        self.lost_out = 0;
        self.lost_q.clear();
    }

    /// `tcp_timeout_mark_lost`: on an RTO every segment not SACKed is lost,
    /// except those but the head that `recent(tx_time)` says were sent within
    /// the last RACK RTT. Returns how many segments are newly lost; `newly`
    /// gets every loss event (those, and retransmissions lost again).
    pub fn timeout_mark_lost(&mut self, recent: impl Fn(Nanos) -> bool, newly: &mut Vec<u64>) -> u64 {
        let mut count = 0;
        for i in 0..self.segs.len() {
            let seq = self.una + i as u64;
            let s = self.segs[i];
            if s.sacked {
                continue;
            }
            // "Don't mark recently sent ones lost yet": every one but the head sent
            // within the last RACK RTT (tcp_rack_skb_timeout(tp, skb, 0) > 0).
            if i > 0 && recent(s.tx_time) {
                continue;
            }
            if s.lost {
                if s.retrans {
                    // tcp_mark_skb_lost: a retransmission lost again is a loss event
                    // (tp->lost, skb_marked_lost), not a second lost_out
                    self.segs[i].retrans = false;
                    newly.push(seq);
                }
            } else {
                self.segs[i].lost = true;
                self.segs[i].retrans = false;
                self.lost_out += 1;
                count += 1;
                newly.push(seq);
            }
            self.lost_q.insert(seq);
        }
        self.retrans_out = self.segs.iter().filter(|s| s.retrans).count() as u32;
        count
    }
}

/// The SACK walk at `seq` against the cache of tagged ranges: `Err(end)`
/// when a cached range covers `seq` (go on at its end), else `Ok(stop)`, the
/// start of the next cached range above `seq` (`u64::MAX` if none): the
/// segments `seq..stop` need tagging.
fn next_uncached(cache: &[(u64, u64)], seq: u64) -> Result<u64, u64> {
    let mut stop = u64::MAX;
    for &(s, e) in cache {
        if s <= seq && seq < e {
            return Err(e);
        }
        if s > seq && s < stop {
            stop = s;
        }
    }
    Ok(stop)
}

/// What one ACK did, gathered as `tcp_ack()` goes (Linux: the `flag` bits
/// and `struct tcp_sacktag_state`).
#[derive(Debug)]
pub(super) struct AckState {
    pub prior_una: u64,
    pub prior_in_flight: u32,
    pub prior_delivered: u64,
    pub prior_lost: u64,
    /// The rate sample `tcp_rate_skb_delivered` fills, and its `last_end_seq`.
    pub rs: RateSample,
    pub last_end_seq: u64,
    /// FLAG_DATA_SACKED: a segment was newly SACKed.
    pub sacked_new: bool,
    /// Send times of the first and last never-retransmitted segments SACKed
    /// and cumulatively acked (`first_sackt`, `last_sackt`, `first_ackt`,
    /// `last_ackt`).
    pub first_sackt: Option<Nanos>,
    pub last_sackt: Option<Nanos>,
    pub first_ackt: Option<Nanos>,
    pub last_ackt: Option<Nanos>,
    /// FLAG_ORIG_SACK_ACKED: a never-retransmitted segment below `high_seq` was (S)ACKed.
    pub orig_sack_acked: bool,
    /// `num_dupack` > 0: snd_una did not advance and the ACK is no D-SACK.
    pub dupack: bool,
    /// FLAG_RETRANS_DATA_ACKED: Karn's rule forbids an RTT sample from the cumulative ACK.
    pub retrans_acked: bool,
    pub pkts_acked: u32,
    /// FLAG_SET_XMIT_TIMER.
    pub set_xmit_timer: bool,
}

impl AckState {
    pub fn new(prior_una: u64, prior_in_flight: u32, prior_delivered: u64, prior_lost: u64) -> AckState {
        AckState {
            prior_una,
            prior_in_flight,
            prior_delivered,
            prior_lost,
            rs: RateSample { prior_in_flight, ..RateSample::default() },
            last_end_seq: 0,
            sacked_new: false,
            first_sackt: None,
            last_sackt: None,
            first_ackt: None,
            last_ackt: None,
            orig_sack_acked: false,
            dupack: false,
            retrans_acked: false,
            pkts_acked: 0,
            set_xmit_timer: false,
        }
    }
}

impl Sender {
    /// `tcp_notify_skb_loss_event` for each segment a loss-marking pass
    /// newly counted (in marking order): `tp->lost` counts it, then the
    /// control hears of it (`skb_marked_lost`) with the segment's send state.
    pub(super) fn notify_lost(&mut self, now: Nanos, newly: &[u64]) {
        for &seq in newly {
            self.rate.lost += 1;
            let s = *self.sb.seg(seq);
            let skb = LostSkb {
                tx_in_flight: s.tx_in_flight,
                lost: (self.rate.lost - s.tx_lost).min(u32::MAX as u64) as u32,
                is_app_limited: s.app_limited,
                has_tx_state: s.delivered_mstamp != 0,
                pcount: 1,
            };
            let v = self.view(now);
            self.cc.skb_marked_lost(&v, &skb, &self.w);
        }
    }

    /// `tcp_sacktag_write_queue`: tag what the SACK blocks newly cover; a
    /// D-SACK block (the first, RFC 2883) is reported, not tagged.
    pub(super) fn sacktag_write_queue(&mut self, now: Nanos, ack: u64, sack: &[SackBlock], dsack: bool, a: &mut AckState) {
        let blocks = if dsack && !sack.is_empty() { &sack[1..] } else { sack };
        let cache = self.sb.sack_cache;
        let mut tagged = [(0, 0); MAX_SACK_BLOCKS];
        for (i, b) in blocks.iter().enumerate() {
            let start = b.start.max(ack).max(self.sb.una);
            let end = b.end.min(self.sb.nxt);
            if start < end && i < tagged.len() {
                tagged[i] = (start, end);
            }
            let mut seq = start;
            while seq < end {
                match next_uncached(&cache, seq) {
                    Err(past) => seq = past,
                    Ok(stop) => {
                        let stop = stop.min(end);
                        for s in seq..stop {
                            self.sacktag_one(now, s, a);
                        }
                        seq = stop;
                    }
                }
            }
        }
        self.sb.sack_cache = tagged;
    }

    /// `tcp_sacktag_one`'s caller for one segment of a block: nothing if it
    /// was SACKed already; else it is delivered, with its rate and RACK state.
    fn sacktag_one(&mut self, now: Nanos, seq: u64, a: &mut AckState) {
        let Some(s) = self.sb.sack_one(seq) else { return };
        self.rate.delivered += 1;
        a.sacked_new = true;
        if !s.ever_retrans {
            a.orig_sack_acked |= seq < self.high_seq;
            a.first_sackt = Some(a.first_sackt.map_or(s.tx_time, |t| t.min(s.tx_time)));
            a.last_sackt = Some(a.last_sackt.map_or(s.tx_time, |t| t.max(s.tx_time)));
        }
        self.rate.skb_delivered(&mut a.rs, &mut a.last_end_seq, &s, seq);
        // tcp_rate_skb_delivered: a SACKed skb gives no second sample when cumulatively acked
        self.sb.seg(seq).delivered_mstamp = 0;
        self.rack.advance(now, self.min_rtt.get(), s.ever_retrans, seq, s.tx_time);
    }

    /// `tcp_clean_rtt_queue`: free what the cumulative ACK up to `ack` covers.
    pub(super) fn clean_rtt_queue(&mut self, now: Nanos, ack: u64, a: &mut AckState) {
        while self.sb.una < ack {
            let seq = self.sb.una;
            let s = self.sb.ack_head();
            a.pkts_acked += 1;
            self.bytes_acked += s.len as u64;
            if !s.sacked {
                self.rate.delivered += 1;
                if s.ever_retrans {
                    a.retrans_acked = true;
                } else {
                    a.orig_sack_acked |= seq < self.high_seq;
                    a.first_ackt.get_or_insert(s.tx_time);
                    a.last_ackt = Some(s.tx_time);
                }
                self.rate.skb_delivered(&mut a.rs, &mut a.last_end_seq, &s, seq);
                if !self.skb_spurious_retrans(s.ever_retrans, s.tx_time) {
                    self.rack.advance(now, self.min_rtt.get(), s.ever_retrans, seq, s.tx_time);
                }
            }
        }
        self.sb.prune_tsorted();
        a.set_xmit_timer = self.sb.una > a.prior_una;
    }

    /// `tcp_ack_update_rtt` (Karn's rule: a sample only from never
    /// retransmitted data; SACKed data give one too, RFC 6675; failing both,
    /// an ACK that advanced snd_una times its timestamp echo, RFC 7323 §4
    /// RTTM), then the control's `pkts_acked` with the sample.
    pub(super) fn ack_update_rtt(&mut self, now: Nanos, a: &mut AckState) {
        let mut seq_rtt: Option<Nanos> = None;
        let mut ca_rtt: Option<Nanos> = None;
        if let (Some(f), Some(l)) = (a.first_ackt, a.last_ackt) {
            if !a.retrans_acked {
                seq_rtt = Some(now - f);
                ca_rtt = Some(now - l);
            }
        }
        let mut sack_rtt = None;
        if let (Some(f), Some(l)) = (a.first_sackt, a.last_sackt) {
            sack_rtt = Some(now - f);
            ca_rtt = Some(now - l);
        }
        let mut seq_rtt = seq_rtt.or(sack_rtt);
        if seq_rtt.is_none() && a.pkts_acked > 0 {
            if let Some(us) = self.rcv_tsecr.filter(|&e| e != 0).and_then(|e| tcp_rtt_tsopt_us(now, e, 1)) {
                seq_rtt = Some(us as u64 * NS_PER_US);
                ca_rtt = seq_rtt;
            }
        }
        a.rs.rtt = ca_rtt.map_or(-1, |r| r as i64);
        if let Some(r) = seq_rtt {
            if let Some(c) = ca_rtt {
                let c_us = (c / NS_PER_US).max(1);
                self.min_rtt.update(MIN_RTT_WLEN_US, now / NS_PER_US, c_us);
                self.rtt_samples_ns.push(c);
            }
            self.rtt.sample((r / NS_PER_US).min(u32::MAX as u64) as u32, self.sb.una * MSS as u64, self.sb.nxt * MSS as u64);
            self.backoff = 0;
        }
        let v = self.view(now);
        let sample = AckSample { pkts_acked: a.pkts_acked, rtt: a.rs.rtt, in_flight: a.prior_in_flight };
        self.cc.pkts_acked(&v, &sample, &mut self.w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        Scoreboard::sent(n)
    }

    #[test]
    fn a_sack_of_a_lost_retransmitted_segment_clears_both_flags_and_it_leaves_flight() {
        let mut sb = board(5);
        assert!(sb.mark_lost(2));
        assert_eq!(sb.retransmit_next_lost(), Some(2));
        assert_eq!((sb.lost_out, sb.retrans_out, sb.in_flight()), (1, 1, 5));
        let before = sb.sack_one(2).expect("newly sacked");
        assert!(before.lost && before.retrans && before.ever_retrans);
        assert_eq!((sb.sacked_out, sb.lost_out, sb.retrans_out, sb.in_flight()), (1, 0, 0, 4));
        assert!(sb.lost_q.is_empty());
        assert!(sb.sack_one(2).is_none(), "a second SACK of it is nothing new");
    }

    #[test]
    fn a_lost_retransmission_counts_as_a_second_loss_but_a_lost_segment_not_resent_does_not() {
        let mut sb = board(3);
        assert!(sb.mark_lost(1));
        assert!(!sb.mark_lost(1), "still waiting in lost_q");
        assert_eq!(sb.retransmit_next_lost(), Some(1));
        assert!(sb.mark_lost(1), "the retransmission was lost too");
        assert_eq!((sb.lost_out, sb.retrans_out), (1, 0));
        assert_eq!(sb.lost_q.iter().copied().collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn an_rto_marks_everything_but_sacked_segments_lost() {
        let mut sb = board(6);
        sb.sack_one(3);
        sb.mark_lost(1);
        sb.retransmit_next_lost();
        let mut newly = Vec::new();
        assert_eq!(sb.timeout_mark_lost(|_| false, &mut newly), 4, "0, 2, 4, 5 are new; 1 was lost already");
        assert_eq!(newly, [0, 1, 2, 4, 5], "1's retransmission was lost too: a loss event");
        assert_eq!((sb.lost_out, sb.retrans_out, sb.sacked_out, sb.in_flight()), (5, 0, 1, 0));
        assert_eq!(sb.lost_q.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 4, 5]);
    }

    #[test]
    fn an_rto_spares_segments_sent_within_the_last_rack_rtt_but_never_the_head() {
        // 0-5 sent at 0, 10, ..., 50; the RTO at 60 with a RACK RTT of 25: 4 and 5 (sent 20 and
        // 10 ago) are spared, 0-3 are lost.
        let mut sb = board(6);
        for i in 0..6u64 {
            sb.seg(i).tx_time = i * 10;
        }
        let now = 60;
        let mut newly = Vec::new();
        assert_eq!(sb.timeout_mark_lost(|t| t + 25 > now, &mut newly), 4);
        assert_eq!(newly, [0, 1, 2, 3]);
        assert_eq!((sb.lost_out, sb.in_flight()), (4, 2));
        // the head is marked even when it was sent just now
        let mut sb = board(2);
        sb.seg(0).tx_time = 59;
        sb.seg(1).tx_time = 59;
        assert_eq!(sb.timeout_mark_lost(|t| t + 25 > now, &mut Vec::new()), 1);
    }

    #[test]
    fn the_sack_walk_jumps_over_cached_ranges_and_stops_at_the_next_one() {
        let cache = [(10, 20), (30, 35), (0, 0)];
        assert_eq!(next_uncached(&cache, 10), Err(20));
        assert_eq!(next_uncached(&cache, 19), Err(20));
        assert_eq!(next_uncached(&cache, 20), Ok(30), "20..30 needs tagging");
        assert_eq!(next_uncached(&cache, 5), Ok(10));
        assert_eq!(next_uncached(&cache, 0), Ok(10), "an empty (0, 0) entry covers nothing");
        assert_eq!(next_uncached(&cache, 35), Ok(u64::MAX));
    }

    #[test]
    fn the_cumulative_ack_frees_the_head_from_every_counter() {
        let mut sb = board(4);
        sb.sack_one(1);
        sb.mark_lost(0);
        let s = sb.ack_head();
        assert!(s.lost);
        let s = sb.ack_head();
        assert!(s.sacked);
        assert_eq!((sb.una, sb.packets_out, sb.sacked_out, sb.lost_out, sb.in_flight()), (2, 2, 0, 0, 2));
        assert!(sb.lost_q.is_empty());
    }
}
