//! Undo of spurious window reductions (D-SACK and TCP timestamps), and F-RTO.
//!
//! Source: Linux v6.18 `net/ipv4/tcp_input.c`: `tcp_init_undo`,
//! `tcp_check_dsack` / `tcp_dsack_seen` and the D-SACK branch of
//! `tcp_sacktag_one` (counting retransmissions the receiver reports as
//! duplicates), `tcp_tsopt_ecr_before`, `tcp_packet_delayed` (as rewritten
//! by "tcp: fix to allow timestamp undo if no retransmits were sent",
//! e37ab7373696, v6.12, and "tcp: fix tcp_packet_delayed() for
//! tcp_is_non_sack_preventing_reopen() behavior", June 2025, v6.16),
//! `tcp_any_retrans_done`, `tcp_retrans_stamp_cleanup` ("tcp: fix
//! tcp_enter_recovery() to zero retrans_stamp when it's safe", v6.12),
//! `tcp_may_undo`, `tcp_undo_cwnd_reduction`, `tcp_try_undo_recovery`,
//! `tcp_try_undo_dsack`, `tcp_try_undo_loss`, `tcp_try_undo_partial`,
//! `tcp_process_loss` (F-RTO, RFC 5682 §3.1, the SACK-enhanced version, with
//! `sysctl_tcp_frto` = 2, its default), `tcp_xmit_recovery`'s `REXMIT_NEW`
//! and `REXMIT_NONE`, `tcp_replace_ts_recent` (RFC 7323 §5.3, for
//! `ts_recent`, with `core::kernel::tcp_paws_check`); `net/ipv4/tcp_output.c`
//! `tcp_retransmit_skb` (`undo_retrans`, and `retrans_stamp` = the send time
//! of the first retransmission, `tcp_skb_timestamp_ts`).
//!
//! Model: a reduction (Recovery or Loss) remembers where it started
//! (`undo_marker` = snd_una), the ssthresh it replaced (`prior_ssthresh`)
//! and how many of its retransmissions are still unexplained
//! (`undo_retrans`). Each D-SACK of a retransmitted segment above the marker
//! explains one: the original had arrived, the retransmission was not
//! needed. When all are explained (`undo_retrans` = 0) the reduction was
//! spurious and is undone: cwnd from the control's `undo_cwnd`, ssthresh back
//! to `prior_ssthresh`. Timestamps (RFC 7323, Linux's default
//! `tcp_timestamps` = 1) prove it one ACK earlier (Eifel, RFC 3522): an ACK
//! that echoes a TSval older than the first retransmission (`retrans_stamp`)
//! was sent for an original, so that original was only delayed
//! (`tcp_packet_delayed`); if nothing was retransmitted yet (`retrans_stamp`
//! 0, e.g. the fast retransmit still waits for its pacing slot) the hole was
//! delayed too. `tcp_may_undo` = either proof. It undoes a recovery that
//! `high_seq` ends (`tcp_try_undo_recovery`), a timeout on the ACK that
//! advances snd_una (`tcp_try_undo_loss`), and a fast recovery on a partial
//! ACK (`tcp_try_undo_partial`: undone at once if no retransmission is in
//! flight, otherwise this ACK sends new data only, no retransmissions).
//! `tcp_try_undo_dsack` needs the D-SACK proof. F-RTO: after an RTO (not
//! during another recovery) only the first lost segment is retransmitted; on
//! the first ACK that advances snd_una, new data is sent instead of more
//! retransmissions; if the next ACK then (S)ACKs a segment never
//! retransmitted and sent before the RTO, the RTO was spurious and is undone
//! at once. RACK does not advance on a cumulatively acked retransmission
//! whose ACK echoes a TSval older than that retransmission
//! (`tcp_skb_spurious_retrans` in `tcp_clean_rtx_queue`).
//!
//! States: `marker` None (nothing to undo) / Some(snd_una at the start of
//! the reduction); `retrans_stamp` None (no retransmission since the last
//! clear) / Some(ms of the first); `frto` on from an RTO until the loss
//! proves real or is undone; `rexmit_new` for the one transmission after an
//! F-RTO step 2.b ACK; `rexmit_none` for the one transmission after a
//! partial-ACK undo that waits for retransmissions in flight.
//! `retrans_stamp` is set by the first `tcp_retransmit_skb` (not by a tail
//! loss probe, which is `__tcp_retransmit_skb`) and cleared where 6.18 clears
//! it: `tcp_fastretrans_alert` in Open, and where no retransmission is
//! outstanding (`tcp_retrans_stamp_cleanup`) in `tcp_enter_recovery`,
//! `tcp_try_to_open` and `tcp_try_undo_partial`. Not on entering Loss: an
//! RTO in Open after clean ACKs keeps a stamp of an earlier episode, as Linux
//! does.
//!
//! Constants: timestamps tick in ms (`TCP_TS_HZ` = 1000, `tcp_usec_ts` off:
//! Linux's default; `core::kernel::tcp_clock_ms`), so "older" is a whole
//! millisecond older: an ACK of an original sent in the same millisecond as
//! its retransmission proves nothing. `tsoffset` is 0 (Linux adds a random
//! per-connection offset to what the wire shows and subtracts it again from
//! what it receives: no effect on any comparison).
//!
//! Not modelled: `tcp_check_sack_reordering` in `tcp_try_undo_partial`
//! (the model keeps no `tp->reordering` / `reord_seen`, so RACK's
//! reordering window does not widen after a partial undo); PAWS discard of
//! segments with an old TSval (`tcp_paws_discard`): links here are FIFO, so
//! segments arrive in the order sent and never fail the check. Reno
//! (non-SACK) paths: the model always SACKs (so `tcp_packet_delayed`'s
//! non-SACK exception never applies; the SYN_SENT one belongs to the
//! handshake, which is `handshake.rs`'s). `tcp_dsack_seen` also counts a
//! D-SACKed duplicate as delivered (`sack_delivered`) and feeds RACK's
//! reordering window (`dsack_seen`, and `rack.reo_wnd_persist` in
//! `tcp_try_undo_recovery` / `tcp_try_undo_dsack`); neither is done here.

use super::sender::Sender;
use crate::packet::{SackBlock, MSS};
use bloatlab_core::cc::CaState;
use bloatlab_core::kernel::{after, tcp_clock_ms};
use bloatlab_core::time::Nanos;

/// `sysctl_tcp_frto` = 2 (Linux's default): F-RTO on, in its SACK-enhanced
/// form (RFC 5682 §3); the value only switches it on in the kernel.
pub(super) const FRTO: bool = true;

/// `tp->undo_marker`, `tp->undo_retrans`, `tp->prior_ssthresh`, `tp->frto`,
/// `tp->dsack_dups`, `tp->retrans_stamp`, `icsk_retransmits`.
#[derive(Debug, Default)]
pub(super) struct Undo {
    /// snd_una when the reduction began (`undo_marker`; 0 in Linux is None).
    pub marker: Option<u64>,
    /// Retransmissions not yet D-SACKed (`undo_retrans`); -1: none were sent.
    pub retrans: i64,
    /// ssthresh before the reduction (`prior_ssthresh`); 0: none.
    pub prior_ssthresh: u32,
    /// F-RTO is running (`tp->frto`).
    pub frto: bool,
    /// `REXMIT_NEW`: the next transmission sends new data, not retransmissions.
    pub rexmit_new: bool,
    /// `REXMIT_NONE` after `tcp_try_undo_partial` held recovery: this ACK
    /// sends new data only.
    pub rexmit_none: bool,
    /// `tp->retrans_stamp`: TSval clock (ms) of the first retransmission
    /// since the last clear.
    pub retrans_stamp: Option<u32>,
    /// Segments D-SACKed so far (`tp->dsack_dups`).
    pub dsack_dups: u64,
    /// RTOs since snd_una last advanced (`icsk_retransmits`).
    pub rto_retransmits: u32,
}

impl Undo {
    /// `tcp_init_undo`: a reduction starts at `una`; the retransmissions in
    /// flight (`retrans_out`, plus a TLP retransmission) may still be D-SACKed.
    pub fn init(&mut self, una: u64, retrans_out: u32, tlp_retrans_in_flight: bool) {
        self.marker = Some(una);
        let n = retrans_out as i64 + tlp_retrans_in_flight as i64;
        // 0 would mean "can undo now"
        self.retrans = if n == 0 { -1 } else { n };
    }

    /// `tcp_retransmit_skb` of a segment that leaves at TSval `stamp_ms`:
    /// the first one stamps the episode, each is one more to explain.
    pub fn on_retransmit(&mut self, stamp_ms: u32) {
        if self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(stamp_ms);
        }
        if self.retrans < 0 {
            self.retrans = 0;
        }
        self.retrans += 1;
    }

    /// `tcp_packet_delayed` (v6.18) for an ACK echoing `tsecr`: it echoes a
    /// TSval older than the first retransmission, or nothing was
    /// retransmitted since the stamp was last cleared (SACK connection, past
    /// the handshake).
    pub fn packet_delayed(&self, tsecr: Option<u32>) -> bool {
        match self.retrans_stamp {
            Some(stamp) => tsopt_ecr_before(tsecr, stamp),
            None => true,
        }
    }

    /// `tcp_may_undo` for an ACK echoing `tsecr`: a reduction whose
    /// retransmissions were all D-SACKed, or whose hole was only delayed.
    pub fn may_undo(&self, tsecr: Option<u32>) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed(tsecr))
    }

    /// `tcp_try_undo_dsack`'s test: every retransmission was D-SACKed.
    pub fn all_dsacked(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// `tcp_check_dsack` + `tcp_dsack_seen` for the D-SACK block `d` on an
    /// ACK that found snd_una at `prior_una`, `total_retrans` segments
    /// retransmitted so far. Returns the segments it reports duplicated
    /// (0: dubious, ignored). The part below `prior_una` is counted here
    /// ("dumb counting"); the part above, per segment, by [`Self::dsack_one`].
    pub fn check_dsack(&mut self, d: SackBlock, prior_una: u64, total_retrans: u64) -> u64 {
        if d.start >= d.end {
            return 0;
        }
        let dup_segs = d.end - d.start;
        self.dsack_dups += dup_segs;
        if self.dsack_dups > total_retrans {
            return 0; // the duplicates were not retransmitted by this sender
        }
        if let Some(m) = self.marker {
            if self.retrans > 0 && d.end <= prior_una && d.end > m {
                self.retrans = (self.retrans - dup_segs as i64).max(0);
            }
        }
        dup_segs
    }

    /// `tcp_sacktag_one` with `dup_sack`: segment `seq`, still queued and
    /// ever retransmitted, is reported duplicated.
    pub fn dsack_one(&mut self, seq: u64) {
        if let Some(m) = self.marker {
            if self.retrans > 0 && seq + 1 > m {
                self.retrans -= 1;
            }
        }
    }
}

/// `tcp_tsopt_ecr_before`: the ACK carried a timestamp echo `tsecr`, not
/// 0 (Linux ignores a zero echo), strictly before `when` (both ms,
/// wrapping: `before()`).
pub(super) fn tsopt_ecr_before(tsecr: Option<u32>, when: u32) -> bool {
    tsecr.is_some_and(|e| e != 0 && after(when, e))
}

impl Sender {
    /// `tcp_any_retrans_done`: a retransmission is in flight, or the head
    /// segment was ever retransmitted.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || self.sb.segs.front().is_some_and(|s| s.ever_retrans)
    }

    /// `tcp_retrans_stamp_cleanup`: no retransmission outstanding, the next
    /// one starts a new stamp.
    pub(super) fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.undo.retrans_stamp = None;
        }
    }

    /// `tcp_skb_spurious_retrans`: a segment last (re)transmitted at
    /// `tx_time` was retransmitted, and this ACK echoes a TSval older than
    /// that transmission: the ACK is for an earlier copy.
    pub(super) fn skb_spurious_retrans(&self, ever_retrans: bool, tx_time: Nanos) -> bool {
        ever_retrans && tsopt_ecr_before(self.rcv_tsecr, tcp_clock_ms(tx_time))
    }

    /// The D-SACK block of this ACK, if any, counted against the
    /// retransmissions of the current reduction.
    pub(super) fn undo_check_dsack(&mut self, sack: &[SackBlock], dsack: bool, prior_una: u64) {
        let Some(&d) = sack.first().filter(|_| dsack) else { return };
        if self.undo.check_dsack(d, prior_una, self.retrans_segs) == 0 {
            return;
        }
        let start = d.start.max(self.sb.una);
        let end = d.end.min(self.sb.nxt);
        for seq in start..end {
            if self.sb.seg(seq).ever_retrans {
                self.undo.dsack_one(seq);
            }
        }
    }

    /// `tcp_undo_cwnd_reduction`: cwnd from the control's `undo_cwnd`,
    /// ssthresh back to what it was; `unmark_loss` (an RTO undone) clears
    /// every LOST mark.
    pub(super) fn undo_cwnd_reduction(&mut self, now: Nanos, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_lost();
        }
        if self.undo.prior_ssthresh != 0 {
            let v = self.view(now);
            self.w.cwnd = self.cc.undo_cwnd(&v, &self.w);
            if self.undo.prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = self.undo.prior_ssthresh;
            }
        }
        self.undo.marker = None;
        self.rack.advanced = true; // force RACK to re-examine losses
    }

    /// `tcp_try_undo_recovery` (SACK): undo if every retransmission was a
    /// duplicate or the hole was only delayed, then back to Open.
    pub(super) fn try_undo_recovery(&mut self, now: Nanos) {
        if self.undo.may_undo(self.rcv_tsecr) {
            self.undo_cwnd_reduction(now, false);
        }
        self.set_state(now, CaState::Open);
    }

    /// `tcp_try_undo_dsack`: the last retransmission was D-SACKed.
    pub(super) fn try_undo_dsack(&mut self, now: Nanos) -> bool {
        if self.undo.all_dsacked() {
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`: a partial ACK in Recovery (snd_una advanced
    /// below `high_seq`) whose hole was filled by a delayed original. With
    /// retransmissions still in flight it returns true: recovery holds, this
    /// ACK retransmits nothing (`REXMIT_NONE`). Otherwise the reduction is
    /// undone (LOST marks cleared) and the state reopens.
    pub(super) fn try_undo_partial(&mut self, now: Nanos) -> bool {
        if self.undo.marker.is_some() && self.undo.packet_delayed(self.rcv_tsecr) {
            // tcp_check_sack_reordering(sk, prior_snd_una, 1): not modelled
            if self.sb.retrans_out > 0 {
                self.undo.rexmit_none = true;
                return true;
            }
            self.retrans_stamp_cleanup();
            self.undo_cwnd_reduction(now, true);
            self.try_keep_open(now);
        }
        false
    }

    /// `tcp_try_undo_loss`: an RTO proved spurious (by F-RTO, by all its
    /// retransmissions D-SACKed, or by a timestamp echo older than the
    /// first retransmission): undo it and reopen.
    pub(super) fn try_undo_loss(&mut self, now: Nanos, frto_undo: bool) -> bool {
        if frto_undo || self.undo.may_undo(self.rcv_tsecr) {
            self.undo_cwnd_reduction(now, true);
            self.undo.rto_retransmits = 0;
            self.set_state(now, CaState::Open);
            return true;
        }
        false
    }

    /// `tcp_process_loss`: an ACK in Loss. `una_advanced`, `data_sacked`
    /// (FLAG_DATA_SACKED), `orig_sack_acked` (FLAG_ORIG_SACK_ACKED: a segment
    /// never retransmitted and sent before `high_seq` was (S)ACKed) and
    /// `dupack` (num_dupack > 0) describe the ACK.
    pub(super) fn process_loss(&mut self, now: Nanos, una_advanced: bool, data_sacked: bool, orig_sack_acked: bool, dupack: bool) {
        let recovered = self.sb.una >= self.high_seq;
        if una_advanced && self.try_undo_loss(now, false) {
            return;
        }
        if self.undo.frto {
            // Step 3.b: not all was lost, never-retransmitted data got through.
            if orig_sack_acked && self.try_undo_loss(now, true) {
                return;
            }
            if self.sb.nxt > self.high_seq {
                if data_sacked || dupack {
                    self.undo.frto = false; // step 3.a: the loss was real
                }
            } else if una_advanced && !recovered {
                self.high_seq = self.sb.nxt;
                // Step 2.b: send new data (after cwnd is updated), else
                // fall back to conventional recovery.
                // (tcp_send_head && after(tcp_wnd_end, snd_nxt))
                if self.has_new_data() && self.wnd_end() > self.sb.nxt * MSS as u64 {
                    self.undo.rexmit_new = true;
                    return;
                }
                self.undo.frto = false;
            }
        }
        if recovered {
            // step 2.a and the first part of step 3.a
            self.try_undo_recovery(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    #[test]
    fn a_reduction_with_nothing_retransmitted_yet_is_not_all_dsacked_but_counts_as_delayed() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        assert_eq!((u.marker, u.retrans), (Some(100), -1));
        assert!(!u.all_dsacked(), "-1, not 0: nothing to explain is not 'all explained'");
        // v6.18 tcp_packet_delayed: no retrans_stamp, so the hole was only delayed
        assert!(u.packet_delayed(None) && u.may_undo(None));
        u.on_retransmit(7);
        assert_eq!((u.retrans, u.retrans_stamp), (1, Some(7)));
        assert!(!u.may_undo(None), "retransmitted, no echo: no proof");
        assert!(!u.may_undo(Some(7)), "an echo of the retransmission's own millisecond proves nothing");
        assert!(u.may_undo(Some(6)), "an echo of an older TSval: the original arrived");
        assert!(!u.may_undo(Some(0)), "a zero echo is ignored");
        u.on_retransmit(9);
        assert_eq!(u.retrans_stamp, Some(7), "the first retransmission keeps the stamp");
        u.init(100, 2, true);
        assert_eq!(u.retrans, 3, "retrans_out 2 plus the TLP retransmission");
    }

    #[test]
    fn a_dsack_below_snd_una_counts_all_its_segments_above_the_marker() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        u.on_retransmit(7);
        u.on_retransmit(7);
        u.on_retransmit(7);
        // 101..103 D-SACKed, all below snd_una 110: 3 - 2 = 1 left
        assert_eq!(u.check_dsack(b(101, 103), 110, 3), 2);
        assert_eq!(u.retrans, 1);
        // a block ending at the marker is from before the reduction: not counted
        assert_eq!(u.check_dsack(b(99, 100), 110, 5), 1);
        assert_eq!(u.retrans, 1);
        // above snd_una: left to the per-segment count
        assert_eq!(u.check_dsack(b(111, 112), 110, 5), 1);
        assert_eq!(u.retrans, 1);
        u.dsack_one(111);
        assert_eq!(u.retrans, 0);
        assert!(u.all_dsacked());
        assert!(u.may_undo(None), "without a timestamp echo too");
    }

    #[test]
    fn more_duplicates_than_retransmissions_make_a_dsack_dubious() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        u.on_retransmit(7);
        // 2 segments reported duplicated, 1 retransmitted in all: ignored
        assert_eq!(u.check_dsack(b(101, 103), 110, 1), 0);
        assert_eq!(u.retrans, 1);
    }
}
