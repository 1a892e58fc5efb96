//! Output: what leaves, when, and at which pace.
//!
//! Source: Linux v6.x `net/ipv4/tcp_output.c` (`tcp_write_xmit`,
//! `tcp_xmit_retransmit_queue`, `tcp_tso_autosize` / `tcp_tso_segs`,
//! `tcp_update_skb_after_send` for EDT pacing, `tcp_cwnd_validate`,
//! `tcp_cwnd_restart`, `tcp_event_data_sent`); `net/ipv4/tcp_input.c`
//! (`tcp_update_pacing_rate`, `tcp_slow_start_after_idle_check`);
//! `tcp_rate_skb_sent` is `rate.rs`'s.
//!
//! Model: lost segments go first, then new data, while what is in flight is
//! below cwnd and the new segment fits in the receiver's window
//! (`tcp_snd_wnd_test`; retransmissions lie below snd_nxt, inside it). A paced sender (the control asks for it, as BBR does, or
//! `sch_fq` / `SO_MAX_PACING_RATE` on the host) sends TSO/GSO bursts sized
//! by `tcp_tso_autosize` back to back and waits between bursts (EDT: the
//! next burst may leave `len / pacing_rate` after this one, less up to half
//! of that as credit for time the sender was idle); unpaced controls send
//! what cwnd allows at once anyway. A burst is one skb: contiguous new data,
//! or one retransmitted skb (the lost segments that left in one burst and are
//! still unsacked), never both, as each skb is paced on its own.
//!
//! TSO deferral (`tcp_tso_should_defer`, "a kind of TSO Nagle test", John
//! Heffner's; Linux 6.18 with commit 295ce1eb36ae "tcp: fix
//! tcp_tso_should_defer() vs large RTT"): before a chunk of new data leaves,
//! the sender may wait for more ACKs to send a fuller one. It sends now in
//! recovery, when its last write is over 1 ms old, when cwnd and the
//! receiver's window allow a full chunk ([`Sender::tso_segs`]) or the rest of
//! a split skb, or a third of the window (`tcp_tso_win_divisor` 3), or when
//! the ACK of the oldest segment in flight is expected later than min(srtt/2,
//! 1 ms); else it defers (cwnd- or rwnd-limited, or application-limited
//! unless the skb ends the data, FIN). So an unpaced sender that each ACK
//! frees two segments for sends [`Sender::tso_segs`] at a time: through a
//! 5-packet FIFO at 96 Mbit/s / 7.7 ms the kernel's Reno bursts were 2-5
//! segments (2 on 43 %, 3-5 on 49 % of them, pcap) and it got 33 Mbit/s where a
//! model sending 2 per ACK got 70. The write queue's skbs are `size_goal`
//! long (`tcp_xmit_size_goal`: 64 KiB of GSO, at most half the receiver's
//! window). A chunk is one skb, but a head skb shorter than `cwnd_quota`
//! (min(cwnd/2, cwnd - in flight, [`Sender::tso_segs`]), `tcp_cwnd_test`)
//! first takes the payload it lacks from the next skb (`tcp_grow_skb`, Linux
//! 6.10, 8ee602c63520 "tcp: try to send bigger TSO packets"), so the rest of a
//! split skb no longer leaves as a short chunk of its own.
//!
//! Slow-start restart after idle (RFC 2861, `tcp_slow_start_after_idle` = 1,
//! Linux's default): when the application writes into an empty pipe more
//! than one RTO after the last new data left, cwnd is halved once per RTO
//! idle, down to min(IW, cwnd), and ssthresh keeps 3/4 of the old cwnd
//! (`tcp_cwnd_restart`); controls with their own `cong_control` (BBR) are
//! exempt, as in `tcp_slow_start_after_idle_check`.
//!
//! Constants below, with units and reasons.

use super::sender::Sender;
use super::timer::TimerKind;
use crate::packet::MSS;
use bloatlab_core::cc::{CaState, CwndEvent, INIT_CWND};
use bloatlab_core::kernel::NS_PER_JIFFY;
use bloatlab_core::time::{Nanos, NS_PER_SEC};

/// `sk_pacing_shift` default: a TSO burst carries ~1/2^10 s (1 ms) of data.
pub(super) const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_pacing_ss_ratio`: in slow start (cwnd < ssthresh / 2) the
/// pacing rate is 200 % of cwnd/srtt, so that pacing never holds growth back.
const PACING_SS_RATIO: u64 = 200;
/// `sysctl_tcp_pacing_ca_ratio`: 120 % of cwnd/srtt in congestion avoidance.
const PACING_CA_RATIO: u64 = 120;
/// Segments sent before Linux starts pacing (`tp->data_segs_out >= 10`).
const UNPACED_SEGS: u64 = 10;
/// `sysctl_tcp_tso_win_divisor` default: a third of the window available is
/// enough to send without deferring.
const TSO_WIN_DIVISOR: u64 = 3;
/// `sk_gso_max_size` of a device without its own limit (`GSO_LEGACY_MAX_SIZE`,
/// the veth and TUN devices here), bytes: the write queue's skbs are this
/// long at most (`tcp_xmit_size_goal`).
const GSO_MAX_SIZE: u64 = 65_536;
/// The next ACK is "too late" to wait for beyond this, ns (`NSEC_PER_MSEC` in
/// `tcp_tso_should_defer`'s threshold, min(srtt / 2, 1 ms)), and a last write
/// older than this ends deferral ("avoid bursty behavior").
const DEFER_MAX_NS: Nanos = 1_000_000;

/// What [`Sender::tso_should_defer`] decided for the chunk at snd_nxt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Defer {
    /// Send now.
    No,
    /// Wait for more of cwnd (`is_cwnd_limited`).
    Cwnd,
    /// Wait for the receiver's window (`is_rwnd_limited`) or for the application.
    Other,
}

/// One segment to put on the wire.
#[derive(Debug, Clone, Copy)]
pub struct Tx {
    pub seq: u64,
    pub len: u32,
    pub retrans: bool,
    /// ECN-capable transport (ECT(0)).
    pub ect: bool,
    /// Congestion Window Reduced flag (RFC 3168 §6.1.2).
    pub cwr: bool,
    /// PSH: the last segment of a multi-segment skb (`__tcp_transmit_skb` forces it on every GSO
    /// packet), or of the data the application has written (`tcp_push` → `tcp_mark_push`); see
    /// `Sender::write_xmit`.
    pub psh: bool,
}

/// Put `tx` on the wire list; `continues`: it is the next segment of the skb the last one
/// belongs to, which then is not that skb's last (PSH moves to `tx`, [`Sender::write_xmit`]).
fn push_segment(out: &mut Vec<Tx>, mut tx: Tx, continues: bool) {
    if continues {
        if let Some(prev) = out.last_mut() {
            prev.psh = false;
            tx.psh = true;
        }
    }
    out.push(tx);
}

/// EDT pacing state: the burst being sent and when the next may leave.
#[derive(Debug, Default)]
pub(super) struct Pacer {
    /// Earliest departure of the next burst (`tp->tcp_wstamp_ns`).
    pub wstamp: Nanos,
    /// Segments left in the TSO/GSO burst being sent, and its payload bytes.
    pub burst_left: u32,
    pub burst_bytes: u64,
}

impl Pacer {
    /// `tcp_update_skb_after_send` for the burst just sent (one TSO skb of
    /// `burst_bytes`) at `rate` bytes/s; `pacing_on`: past the first
    /// [`UNPACED_SEGS`] segments. The length paced is the skb's in the write
    /// queue (`__tcp_transmit_skb` passes the original, `oskb`, whose len is
    /// the payload: the TCP header is pushed on the clone that leaves), so a
    /// socket's payload leaves at exactly its pacing rate. Linux 4.13-4.19
    /// paced the clone, header included (`tcp_internal_pacing`); 6.x does not,
    /// and the kernel here sends at 1.0000-1.0002 x `tcpi_pacing_rate` in
    /// payload (BBR's cruise phases, fidelity 03, pcap against `ss -tin`).
    pub fn end_burst(&mut self, now: Nanos, rate: u64, pacing_on: bool) {
        let bytes = std::mem::take(&mut self.burst_bytes);
        self.burst_left = 0;
        if bytes == 0 {
            return;
        }
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        if rate > 0 && pacing_on {
            let mut len_ns = bytes * NS_PER_SEC / rate; // oskb->len: the payload
            let credit = self.wstamp - prior;
            len_ns -= (len_ns / 2).min(credit);
            self.wstamp += len_ns;
        }
    }
}

/// What the burst being sent (one skb) holds, for [`Sender::write_xmit`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Skb {
    /// New data from snd_nxt.
    New,
    /// A retransmitted skb: it goes on only with segment `next` if that one
    /// was last sent at `sent_at` (the same burst) and is lost as well.
    Retrans { next: u64, sent_at: Nanos },
}

/// `tcp_update_pacing_rate` for controls without their own `cong_control`:
/// `mss * max(cwnd, packets_out) / srtt`, times `tcp_pacing_ss_ratio` (200 %)
/// while cwnd < ssthresh / 2, else `tcp_pacing_ca_ratio` (120 %). Bytes/s, in
/// the kernel's integer steps (`srtt_us` is srtt in µs << 3, not 0).
pub(super) fn pacing_rate(cwnd: u32, ssthresh: u32, packets_out: u32, srtt_us: u32) -> u64 {
    let ratio = if (cwnd as u64) < (ssthresh as u64) / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
    let rate = MSS as u64 * ((1_000_000 / 100) << 3) * ratio * cwnd.max(packets_out) as u64;
    rate / srtt_us as u64
}

/// `tcp_cwnd_restart`'s cwnd after `idle` ns without sending: halved once
/// per RTO past the first, never below min(IW, cwnd).
pub(super) fn restart_cwnd(cwnd: u32, idle: Nanos, rto: Nanos) -> u32 {
    let restart = INIT_CWND.min(cwnd);
    let mut delta = idle as i64;
    let mut c = cwnd;
    loop {
        delta -= rto as i64;
        if delta <= 0 || c <= restart {
            break;
        }
        c >>= 1;
    }
    c.max(restart)
}

impl Sender {
    /// Whether segments leave at the pacing rate (EDT, `tcp_needs_internal_pacing`
    /// or sch_fq): the control asks for it (BBR), or the flow says so.
    pub(super) fn paced(&self) -> bool {
        self.cc_paces || self.pacing
    }

    /// [`pacing_rate`] into the window; nothing before the first RTT sample.
    pub(super) fn update_pacing_rate(&mut self) {
        if self.rtt.srtt_us == 0 {
            return;
        }
        self.w.pacing_rate = pacing_rate(self.w.cwnd, self.w.ssthresh, self.sb.packets_out, self.rtt.srtt_us);
    }

    /// `tcp_slow_start_after_idle_check` + `tcp_cwnd_restart`, when the
    /// application writes new data.
    pub(super) fn restart_after_idle(&mut self, now: Nanos) {
        if self.sb.packets_out > 0 || self.cc.has_cong_control() || self.data_segs_out == 0 {
            return;
        }
        let rto = self.rtt.rto;
        let idle = now.saturating_sub(self.lsndtime);
        if idle as i64 <= rto as i64 {
            return;
        }
        let v = self.view(now);
        self.cc.cwnd_event(&v, CwndEvent::CwndRestart, &mut self.w);
        let cwnd = self.w.cwnd;
        self.w.ssthresh = self.w.current_ssthresh(self.ca_state);
        self.w.cwnd = restart_cwnd(cwnd, idle, rto);
        self.restarts += 1;
    }

    /// Length of the segment at snd_nxt: a finite flow's last may be short.
    pub(super) fn next_len(&self) -> u32 {
        if self.total_segs == Some(self.sb.nxt + 1) {
            self.last_len
        } else {
            MSS
        }
    }

    /// Bookkeeping for a (re)transmission of `seq` at `now`
    /// (`tcp_event_data_sent`, `tcp_rate_skb_sent`, RACK's tsorted queue).
    pub(super) fn on_sent(&mut self, now: Nanos, seq: u64, retrans: bool) -> Tx {
        // tcp_rate_skb_sent runs before tcp_event_new_data_sent counts the skb in packets_out:
        // a new segment that is alone in packets_out starts a flight; a retransmission never
        // does (it is still counted in packets_out, lost or not).
        let pipe_empty = !retrans && self.sb.packets_out == 1;
        // tcp_set_tx_in_flight: in flight before this transmission, plus it.
        // A new segment (push_new) and a lost one retransmitted
        // (retransmit_next_lost) are counted in flight already; a TLP
        // retransmission of a segment still in flight is counted a second time.
        let counted = !retrans || self.sb.seg(seq).retrans;
        let in_flight = self.in_flight() + !counted as u32;
        let s = self.sb.seg(seq);
        self.rate.skb_sent(now, pipe_empty, in_flight, s);
        s.tx_time = now;
        s.gen += 1;
        let (len, gen) = (s.len, s.gen);
        self.sb.tsorted.push_back((now, seq, gen));
        self.segs_sent += 1;
        self.data_segs_out += 1;
        if self.paced() {
            self.pacer.burst_bytes += len as u64;
        } else {
            // tcp_update_skb_after_send: tcp_wstamp_ns = max(tcp_wstamp_ns, now) for every skb
            self.pacer.wstamp = self.pacer.wstamp.max(now);
        }
        let cwr = self.ecn && !retrans && std::mem::take(&mut self.queue_cwr);
        // PSH at the end of what the application has written (tcp_push marks the write queue's tail
        // at each write's end; a bulk sender's writes never end)
        let written = self.written_segs();
        let psh = written != u64::MAX && seq + 1 == written;
        Tx { seq, len, retrans, ect: self.ecn && !retrans, cwr, psh }
    }

    /// Segments per TSO/GSO burst now (`tcp_tso_segs`).
    pub fn tso_segs(&self) -> u32 {
        let min_tso = self.cc.min_tso_segs(&self.w);
        bloatlab_core::cc::tso_autosize(self.w.pacing_rate, PACING_SHIFT, self.min_rtt.get(), MSS, min_tso)
    }

    /// `tcp_xmit_size_goal`'s skb length in segments: 64 KiB of GSO, at most
    /// half the receiver's window (`tcp_bound_to_half_wnd`), at least one.
    fn size_goal(&self) -> u64 {
        (GSO_MAX_SIZE.min(self.snd_wnd / 2) / MSS as u64).max(1)
    }

    /// Segments of the send head skb from snd_nxt, and whether it is the write
    /// queue's tail (the data the application has written ends in it). A new
    /// skb starts at snd_nxt when the last one is used up.
    pub(super) fn send_head_skb(&mut self) -> (u64, bool) {
        let nxt = self.sb.nxt;
        if self.skb_end <= nxt {
            // the rest a grow left of the next skb, or a fresh skb
            let rest = std::mem::take(&mut self.next_skb_end);
            self.skb_end = if rest > nxt { rest } else { nxt + self.size_goal() };
        }
        let avail = self.written_segs();
        ((self.skb_end.min(avail)).saturating_sub(nxt), avail <= self.skb_end)
    }

    /// Segments the application has put in the write queue (u64::MAX: bulk).
    fn written_segs(&self) -> u64 {
        match (self.total_segs, self.app.is_some()) {
            (Some(n), false) => n,
            (Some(n), true) => n.min(self.app_segs),
            (None, true) => self.app_segs,
            (None, false) => u64::MAX,
        }
    }

    /// `tcp_grow_skb` (Linux 6.10+, in `tcp_write_xmit` before the deferral
    /// test): the head skb, shorter than `quota` segments and not the write
    /// queue's last, takes up to the missing segments from the next skb
    /// (only that one; a next skb used up is freed). Returns the head skb as
    /// [`Self::send_head_skb`] does.
    pub(super) fn grow_skb(&mut self, quota: u64) -> (u64, bool) {
        let (segs, tail) = self.send_head_skb();
        if tail || segs >= quota {
            return (segs, tail);
        }
        let avail = self.written_segs();
        // the next skb: the rest of one a grow took from, or a fresh one (the tail: what is written of it)
        let (next_end, full) = if self.next_skb_end > self.skb_end {
            (self.next_skb_end, true)
        } else {
            let end = self.skb_end + self.size_goal();
            (end.min(avail), end <= avail)
        };
        let end = (self.sb.nxt + quota).min(next_end);
        // a full next skb keeps its end; a used-up one is freed; the tail's end moves with the writes
        self.next_skb_end = if end < next_end && full { next_end } else { 0 };
        self.skb_end = end;
        (end - self.sb.nxt, avail <= end)
    }

    /// `tcp_tso_should_defer` for a chunk of new data from the send head skb of
    /// `skb_segs` segments (`tail`: the write queue's last), `max_segs` =
    /// [`Self::tso_segs`]. The caller has checked cwnd > in flight.
    pub(super) fn tso_should_defer(&self, now: Nanos, skb_segs: u64, tail: bool, max_segs: u32) -> Defer {
        if self.ca_state >= CaState::Recovery {
            return Defer::No;
        }
        // only if the last write was recent (1 ms)
        if now as i64 - self.pacer.wstamp as i64 - DEFER_MAX_NS as i64 > 0 {
            return Defer::No;
        }
        let mss = MSS as u64;
        let skb_len = skb_segs * mss;
        let send_win = self.wnd_end().saturating_sub(self.sb.nxt * mss);
        let cong_win = (self.w.cwnd.saturating_sub(self.in_flight())) as u64 * mss;
        let limit = send_win.min(cong_win);
        if limit >= max_segs as u64 * mss {
            return Defer::No; // a full-sized chunk
        }
        if !tail && limit >= skb_len {
            return Defer::No; // the rest of a split skb, all sendable
        }
        let chunk = self.snd_wnd.min(self.w.cwnd as u64 * mss) / TSO_WIN_DIVISOR;
        if limit >= chunk {
            return Defer::No;
        }
        let Some(head) = self.sb.segs.front() else {
            return Defer::No; // no head in the retransmit queue
        };
        // when the head's ACK is expected: a whole srtt after it left
        let srtt_ns = 125 * self.rtt.srtt_us as i64; // (NSEC_PER_USEC >> 3) * srtt_us
        let expected_ack = head.tx_time as i64 + srtt_ns;
        let threshold = (srtt_ns >> 1).min(DEFER_MAX_NS as i64);
        if expected_ack - now as i64 - threshold > 0 {
            return Defer::No; // the next ACK would come too late
        }
        if cong_win < send_win {
            if cong_win <= skb_len {
                return Defer::Cwnd;
            }
        } else if send_win <= skb_len {
            return Defer::Other;
        }
        // application-limited: a skb that will get no more data (FIN) goes now
        if tail && self.total_segs.is_some() && self.app.is_none() {
            return Defer::No;
        }
        Defer::Other
    }

    /// [`Pacer::end_burst`] at this connection's pacing rate.
    pub(super) fn end_burst(&mut self, now: Nanos) {
        self.pacer.end_burst(now, self.w.pacing_rate, self.data_segs_out >= UNPACED_SEGS);
    }

    /// `tcp_xmit_recovery` after an ACK: F-RTO's `REXMIT_NEW` sends new
    /// data only; if none went out, F-RTO ends and lost segments go as usual.
    /// `REXMIT_NONE` (a partial ACK that `tcp_try_undo_partial` held):
    /// only new data (`tcp_data_snd_check`).
    pub(super) fn xmit_recovery(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        if self.undo.rexmit_none {
            self.transmit(now, out);
            self.undo.rexmit_none = false;
            return;
        }
        if self.undo.rexmit_new {
            self.transmit(now, out);
            self.undo.rexmit_new = false;
            if self.sb.nxt > self.high_seq {
                return;
            }
            self.undo.frto = false;
        }
        self.transmit(now, out);
    }

    /// `tcp_write_xmit` + `tcp_xmit_retransmit_queue`: send what cwnd,
    /// pacing and the application allow. Lost segments go first. A paced
    /// sender sends TSO/GSO bursts of [`Self::tso_segs`] back to back and
    /// paces between bursts.
    pub fn transmit(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        let paced = self.paced();
        let (sent_new, cwnd_full, head_retransmitted) = self.write_xmit(now, paced, out);
        if head_retransmitted && !matches!(self.timer, Some((_, TimerKind::Reo))) {
            // tcp_xmit_retransmit_queue: the head's retransmission rearms
            // the RTO (`rearm_timer`), replacing a pending loss probe.
            self.reset_xmit_timer(now, TimerKind::Rto, self.rto_backed_off() / NS_PER_JIFFY, true);
        }
        // the skb is cut where cwnd or the data end: a shorter burst
        if paced {
            self.end_burst(now);
        }
        self.cwnd_validate(cwnd_full);
        if !self.has_new_data() && !cwnd_full && self.sb.packets_out > 0 {
            // nothing left to send and cwnd not full
            let in_flight = self.in_flight();
            self.rate.check_app_limited(in_flight);
        }
        if sent_new && !self.schedule_loss_probe(now, false) && self.timer.is_none() {
            self.arm_rto(now);
        }
        if !out.is_empty() && self.timer.is_none() && self.sb.packets_out > 0 {
            self.arm_rto(now);
        }
    }

    /// The sending loop; returns (new data sent, stopped by cwnd, the head
    /// segment (snd_una's) was retransmitted).
    ///
    /// PSH (Linux 4.10+, 051ba67447de "tcp: force a PSH flag on TSO packets",
    /// `__tcp_transmit_skb`: `if (tcp_skb_pcount(skb) > 1) tcb->tcp_flags |= TCPHDR_PSH`): every
    /// skb of more than one segment leaves with PSH, which GSO puts on its last segment; a
    /// one-segment skb carries it only where [`Self::on_sent`] marks a write's end. The
    /// receiver acks such a segment as soon as its reader has taken everything
    /// ([`super::receiver::Receiver::on_push`]). Each segment of an skb is marked as the
    /// skb's last when it is pushed, and the one before it unmarked.
    ///
    /// A burst is one skb: new data up to [`Self::tso_segs`] segments, or one
    /// lost skb retransmitted (`tcp_retransmit_skb`), i.e. the lost segments
    /// that left together in one burst (same send time, consecutive) and are
    /// still unsacked: a segment whose neighbours were SACKed was split off
    /// (`tcp_fragment` in SACK tagging) and goes alone. Each skb is paced on
    /// its own (`tcp_pacing_check` before every skb in `tcp_xmit_retransmit_queue`
    /// and `tcp_write_xmit`), so a retransmission never shares a burst with
    /// another skb or with new data.
    fn write_xmit(&mut self, now: Nanos, paced: bool, out: &mut Vec<Tx>) -> (bool, bool, bool) {
        let mut sent_new = false;
        let mut head = false;
        // the skb being sent: None (none yet), new data, or a retransmission
        // that only the segment `next` sent at `sent_at` may continue
        let mut skb: Option<Skb> = None;
        // segments left in the unpaced chunk being sent (a paced one is the pacer's burst)
        let mut chunk_left: u32 = 0;
        loop {
            if paced && self.pacer.burst_left == 0 {
                if self.pacer.wstamp > now {
                    return (sent_new, false, head);
                }
                self.pacer.burst_left = if self.tso { self.tso_segs() } else { 1 };
                skb = None;
            }
            if self.in_flight() >= self.w.cwnd {
                return (sent_new, true, head);
            }
            // `is_empty` first: the set's length lives in the sender, its first node on the heap, and a
            // set emptied after a loss episode keeps that node (an empty root leaf), a cold cache line to
            // read at every skb when a thousand flows take turns (the same answer, None, either way)
            let lost = if self.undo.rexmit_new || self.undo.rexmit_none || self.sb.lost_q.is_empty() {
                None
            } else {
                self.sb.lost_q.first().copied()
            };
            if let Some(seq) = lost {
                let sent_at = self.sb.seg(seq).tx_time;
                if paced && skb.is_some() && skb != Some(Skb::Retrans { next: seq, sent_at }) {
                    self.end_burst(now); // another skb: it waits for its own pacing slot
                    continue;
                }
                let continues = skb == Some(Skb::Retrans { next: seq, sent_at });
                self.sb.retransmit_next_lost();
                head |= seq == self.sb.una;
                self.retrans_segs += 1;
                self.undo.on_retransmit(bloatlab_core::kernel::tcp_clock_ms(now));
                if self.ca_state >= CaState::Cwr {
                    self.prr.out += 1;
                }
                let tx = self.on_sent(now, seq, true);
                push_segment(out, tx, continues);
                chunk_left = 0;
                skb = Some(Skb::Retrans { next: seq + 1, sent_at });
                self.burst_step(now);
                continue;
            }
            if !self.has_new_data() {
                return (sent_new, false, head);
            }
            if paced && matches!(skb, Some(Skb::Retrans { .. })) {
                self.end_burst(now);
                continue;
            }
            if !self.wnd_allows_new() {
                return (sent_new, false, head); // receive-window limited, not cwnd-limited
            }
            // a chunk of new data starts: one skb of the write queue, at most max_segs
            let starts = if paced { skb.is_none() } else { chunk_left == 0 };
            if starts {
                let max_segs = if self.tso { self.tso_segs() } else { 1 };
                // tcp_cwnd_test's quota: at most half of cwnd, at most max_segs (tcp_write_xmit)
                let quota = (self.w.cwnd / 2).max(1).min(self.w.cwnd - self.in_flight()).min(max_segs);
                let (skb_segs, tail) = self.grow_skb(quota as u64);
                if self.tso && skb_segs > 1 {
                    match self.tso_should_defer(now, skb_segs, tail, max_segs) {
                        Defer::No => {}
                        Defer::Cwnd => return (sent_new, true, head),
                        Defer::Other => return (sent_new, false, head),
                    }
                }
                let n = (max_segs as u64).min(skb_segs).max(1) as u32;
                chunk_left = n;
                if paced {
                    self.pacer.burst_left = self.pacer.burst_left.min(n);
                }
            }
            chunk_left = chunk_left.saturating_sub(1);
            if self.in_flight() == 0 {
                let v = self.view(now);
                self.cc.cwnd_event(&v, CwndEvent::TxStart, &mut self.w);
            }
            let seq = self.sb.push_new(self.next_len());
            if self.ca_state >= CaState::Cwr {
                self.prr.out += 1;
            }
            let tx = self.on_sent(now, seq, false);
            self.lsndtime = now;
            push_segment(out, tx, !starts);
            sent_new = true;
            skb = Some(Skb::New);
            self.burst_step(now);
        }
    }

    /// `tcp_cwnd_validate`: remember whether cwnd limited this round.
    fn cwnd_validate(&mut self, cwnd_full: bool) {
        if self.sb.una >= self.cwnd_usage_seq
            || cwnd_full
            || (!self.is_cwnd_limited && self.sb.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = cwnd_full;
            self.max_packets_out = self.sb.packets_out;
            self.cwnd_usage_seq = self.sb.nxt;
        }
    }

    /// `tcp_is_cwnd_limited`.
    pub(super) fn cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.w.in_slow_start() {
            return self.w.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    fn burst_step(&mut self, now: Nanos) {
        if self.paced() {
            self.pacer.burst_left = self.pacer.burst_left.saturating_sub(1);
            if self.pacer.burst_left == 0 {
                self.end_burst(now);
            }
        }
    }

    /// When the sender must be woken for pacing, if it is pacing-limited.
    pub fn pacing_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if self.paced()
            && self.pacer.wstamp > now
            && self.in_flight() < self.w.cwnd
            && (!self.sb.lost_q.is_empty() || (self.has_new_data() && self.wnd_allows_new()))
        {
            Some(self.pacer.wstamp)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::time::NS_PER_MS;

    #[test]
    fn the_next_burst_leaves_its_payload_at_the_pacing_rate_later() {
        // 8 segments of payload (the write queue's skb, no header) at 12.5 MB/s: 11 584 B / 12.5 MB/s = 926 720 ns
        let mut p = Pacer { wstamp: NS_PER_MS, burst_left: 3, burst_bytes: 8 * 1448 };
        p.end_burst(NS_PER_MS, 12_500_000, true);
        assert_eq!((p.wstamp, p.burst_left, p.burst_bytes), (NS_PER_MS + 926_720, 0, 0));
    }

    #[test]
    fn idle_time_earns_up_to_half_a_burst_of_credit() {
        // idle 100 µs since the planned departure: the gap shrinks by 100 µs
        let mut p = Pacer { wstamp: NS_PER_MS, burst_left: 0, burst_bytes: 8 * 1448 };
        p.end_burst(NS_PER_MS + 100_000, 12_500_000, true);
        assert_eq!(p.wstamp, NS_PER_MS + 100_000 + 926_720 - 100_000);
        // idle 10 ms: at most half of it
        let mut p = Pacer { wstamp: NS_PER_MS, burst_left: 0, burst_bytes: 8 * 1448 };
        p.end_burst(11 * NS_PER_MS, 12_500_000, true);
        assert_eq!(p.wstamp, 11 * NS_PER_MS + 926_720 / 2);
    }

    #[test]
    fn nothing_is_paced_before_the_first_ten_segments_or_without_a_rate() {
        let mut p = Pacer { wstamp: 0, burst_left: 0, burst_bytes: 1448 };
        p.end_burst(5, 12_500_000, false);
        assert_eq!(p.wstamp, 5);
        let mut p = Pacer { wstamp: 0, burst_left: 0, burst_bytes: 1448 };
        p.end_burst(5, 0, true);
        assert_eq!(p.wstamp, 5);
    }

    #[test]
    fn linux_paces_unpaced_controls_at_200_percent_in_slow_start_and_120_after() {
        // srtt 100 ms (800 000 in µs << 3); 10 segments of 1448 B per 100 ms = 144 800 B/s
        assert_eq!(pacing_rate(10, u32::MAX, 0, 800_000), 2 * 144_800);
        assert_eq!(pacing_rate(10, 20, 0, 800_000), 144_800 * 6 / 5);
        assert_eq!(pacing_rate(10, 20, 15, 800_000), 217_200 * 6 / 5, "packets_out above cwnd counts");
    }

    #[test]
    fn after_idle_cwnd_halves_per_rto_but_not_below_the_initial_window() {
        let rto = 300 * NS_PER_MS;
        assert_eq!(restart_cwnd(80, 450 * NS_PER_MS, rto), 40);
        assert_eq!(restart_cwnd(80, 700 * NS_PER_MS, rto), 20);
        assert_eq!(restart_cwnd(80, 1010 * NS_PER_MS, rto), 10);
        assert_eq!(restart_cwnd(6, 5000 * NS_PER_MS, rto), 6, "below IW: kept");
    }
}
