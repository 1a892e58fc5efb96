//! Undo of spurious window reductions, and F-RTO.
//!
//! Source: Linux v6.x `net/ipv4/tcp_input.c`: `tcp_init_undo`,
//! `tcp_check_dsack` / `tcp_dsack_seen` and the D-SACK branch of
//! `tcp_sacktag_one` (counting retransmissions the receiver reports as
//! duplicates), `tcp_may_undo`, `tcp_undo_cwnd_reduction`,
//! `tcp_try_undo_recovery`, `tcp_try_undo_dsack`, `tcp_try_undo_loss`,
//! `tcp_process_loss` (F-RTO, RFC 5682 §3.1, the SACK-enhanced version, with
//! `sysctl_tcp_frto` = 2, its default) and `tcp_xmit_recovery`'s
//! `REXMIT_NEW`; `tcp_retransmit_skb`'s `undo_retrans` count.
//!
//! Model: a reduction (Recovery or Loss) remembers where it started
//! (`undo_marker` = snd_una), the ssthresh it replaced (`prior_ssthresh`)
//! and how many of its retransmissions are still unexplained
//! (`undo_retrans`). Each D-SACK of a retransmitted segment above the marker
//! explains one: the original had arrived, the retransmission was not
//! needed. When all are explained (`undo_retrans` = 0) the reduction was
//! spurious and is undone: cwnd from the control's `undo_cwnd`, ssthresh back
//! to `prior_ssthresh`. F-RTO: after an RTO (not during another recovery)
//! only the first lost segment is retransmitted; on the first ACK that
//! advances snd_una, new data is sent instead of more retransmissions; if
//! the next ACK then (S)ACKs a segment never retransmitted and sent before
//! the RTO, the RTO was spurious and is undone at once.
//!
//! States: `marker` None (nothing to undo) / Some(snd_una at the start of
//! the reduction); `frto` on from an RTO until the loss proves real or is
//! undone; `rexmit_new` for the one transmission after an F-RTO step 2.b ACK.
//!
//! Not modelled: TCP timestamps, so `tcp_packet_delayed` (an ACK echoing a
//! timestamp older than the first retransmission) is always false and
//! `tcp_try_undo_partial` (which needs it) never undoes; Linux with
//! timestamps (the default) detects some spurious retransmissions one ACK
//! earlier than D-SACK does. Reno (non-SACK) paths: the model always SACKs.
//! `tcp_dsack_seen` also counts a D-SACKed duplicate as delivered
//! (`sack_delivered`) and feeds RACK's reordering window (`dsack_seen`);
//! neither is done here.

use super::sender::Sender;
use crate::packet::{SackBlock, MSS};
use bloatlab_core::cc::CaState;
use bloatlab_core::time::Nanos;

/// `sysctl_tcp_frto` = 2 (Linux's default): F-RTO on, in its SACK-enhanced
/// form (RFC 5682 §3); the value only switches it on in the kernel.
pub(super) const FRTO: bool = true;

/// `tp->undo_marker`, `tp->undo_retrans`, `tp->prior_ssthresh`, `tp->frto`,
/// `tp->dsack_dups`, `icsk_retransmits`.
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

    /// `tcp_retransmit_skb`: one more retransmission to explain.
    pub fn on_retransmit(&mut self) {
        if self.retrans < 0 {
            self.retrans = 0;
        }
        self.retrans += 1;
    }

    /// `tcp_may_undo` without timestamps: a reduction whose retransmissions
    /// were all D-SACKed.
    pub fn may_undo(&self) -> bool {
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

impl Sender {
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
    /// duplicate, then back to Open.
    pub(super) fn try_undo_recovery(&mut self, now: Nanos) {
        if self.undo.may_undo() {
            self.undo_cwnd_reduction(now, false);
        }
        self.set_state(now, CaState::Open);
    }

    /// `tcp_try_undo_dsack`: the last retransmission was D-SACKed.
    pub(super) fn try_undo_dsack(&mut self, now: Nanos) -> bool {
        if self.undo.may_undo() {
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss`: an RTO proved spurious (by F-RTO, or all its
    /// retransmissions D-SACKed): undo it and reopen.
    pub(super) fn try_undo_loss(&mut self, now: Nanos, frto_undo: bool) -> bool {
        if frto_undo || self.undo.may_undo() {
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
    fn a_reduction_with_nothing_retransmitted_yet_cannot_be_undone_until_something_is() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        assert_eq!((u.marker, u.retrans), (Some(100), -1));
        assert!(!u.may_undo(), "-1, not 0: nothing to explain is not 'all explained'");
        u.on_retransmit();
        assert_eq!(u.retrans, 1);
        u.init(100, 2, true);
        assert_eq!(u.retrans, 3, "retrans_out 2 plus the TLP retransmission");
    }

    #[test]
    fn a_dsack_below_snd_una_counts_all_its_segments_above_the_marker() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        u.on_retransmit();
        u.on_retransmit();
        u.on_retransmit();
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
        assert!(u.may_undo());
    }

    #[test]
    fn more_duplicates_than_retransmissions_make_a_dsack_dubious() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        u.on_retransmit();
        // 2 segments reported duplicated, 1 retransmitted in all: ignored
        assert_eq!(u.check_dsack(b(101, 103), 110, 1), 0);
        assert_eq!(u.retrans, 1);
    }
}
