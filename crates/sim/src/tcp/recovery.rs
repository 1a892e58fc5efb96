//! Loss recovery: the congestion-avoidance state machine and PRR.
//!
//! Source: Linux v6.x `net/ipv4/tcp_input.c`: `tcp_fastretrans_alert`
//! (with `tcp_ack_is_dubious`, `tcp_try_undo_recovery`'s exit to Open,
//! `tcp_try_to_open`, `tcp_try_keep_open`), `tcp_enter_recovery`,
//! `tcp_init_cwnd_reduction`, `tcp_cwnd_reduction` (Proportional Rate
//! Reduction, RFC 6937, with Linux's slow-start reduction bound),
//! `tcp_end_cwnd_reduction`, `tcp_enter_cwr` (an ECN echo, RFC 3168),
//! `tcp_process_tlp_ack` (RFC 8985 §7.4); `tcp_set_ca_state`.
//!
//! States: Open → Disorder (SACKs, no loss) → Recovery (PRR down to
//! ssthresh, or the control's own `cong_control`) → Open once `high_seq` is
//! acked; Open/Disorder → CWR on an ECN echo or after a tail-loss probe
//! repaired a loss → Open once `high_seq` is acked; any state → Loss on an
//! RTO (`timer.rs`), left once `high_seq` is acked.
//!
//! Undo of spurious reductions and F-RTO (`tcp_process_loss`) are
//! `undo.rs`'s; this file calls them where `tcp_fastretrans_alert` does.

use super::scoreboard::AckState;
use super::sender::{Sender, TimerKind};
use bloatlab_core::cc::{CaState, CwndEvent, Window, INFINITE_SSTHRESH};
use bloatlab_core::time::Nanos;

/// PRR's state (`tp->prior_cwnd`, `tp->prr_delivered`, `tp->prr_out`).
#[derive(Debug, Default)]
pub(super) struct Prr {
    /// cwnd when the reduction started.
    pub prior_cwnd: u32,
    /// Packets delivered, and sent, since the reduction started.
    pub delivered: u32,
    pub out: u32,
}

impl Prr {
    /// `tcp_cwnd_reduction`: the new cwnd after an ACK that newly delivered
    /// `newly_acked_sacked` and newly marked `newly_lost` packets, with
    /// `in_flight` packets in flight.
    ///
    /// In flight above ssthresh, send in proportion to delivery:
    /// sndcnt = ceil(prr_delivered × ssthresh / prior_cwnd) − prr_out.
    /// At or below it, grow back like slow start but never past ssthresh:
    /// sndcnt = min(ssthresh − in_flight, max(prr_delivered − prr_out, newly acked) (+1 on a clean ACK)).
    /// At least one packet leaves when the reduction starts (the fast retransmit).
    pub fn cwnd_reduction(
        &mut self,
        w: &mut Window,
        in_flight: u32,
        newly_acked_sacked: u32,
        newly_lost: u32,
        una_advanced: bool,
    ) {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.delivered += newly_acked_sacked;
        let in_flight = in_flight as i64;
        let delta = w.ssthresh as i64 - in_flight;
        let mut sndcnt: i64;
        if delta < 0 {
            let dividend = w.ssthresh as u64 * self.delivered as u64 + self.prior_cwnd as u64 - 1;
            sndcnt = (dividend / self.prior_cwnd as u64) as i64 - self.out as i64;
        } else {
            sndcnt = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        w.cwnd = (in_flight + sndcnt).max(1) as u32;
    }
}

impl Sender {
    /// `tcp_set_ca_state`: tell the control, then switch.
    pub(super) fn set_state(&mut self, now: Nanos, s: CaState) {
        if s != self.ca_state {
            let v = self.view(now);
            self.cc.set_state(&v, s, &mut self.w);
            self.ca_state = s;
        }
    }

    /// `tcp_enter_recovery` (via `tcp_init_cwnd_reduction`); `ece`: the
    /// ACK echoed CE (then there is no ssthresh to restore on undo).
    pub(super) fn enter_recovery(&mut self, now: Nanos, ece: bool) {
        // start the clock with our fast retransmit, for undo
        self.retrans_stamp_cleanup();
        self.undo.prior_ssthresh = 0;
        let tlp_retrans_in_flight = self.tlp_high_seq.is_some() && self.tlp_retrans;
        self.undo.init(self.sb.una, self.sb.retrans_out, tlp_retrans_in_flight);
        if !ece && !matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.undo.prior_ssthresh = self.w.current_ssthresh(self.ca_state);
        }
        self.init_cwnd_reduction(now);
        self.set_state(now, CaState::Recovery);
    }

    /// `tcp_init_cwnd_reduction`: the episode lasts until `high_seq`, ssthresh from the control.
    pub(super) fn init_cwnd_reduction(&mut self, now: Nanos) {
        self.high_seq = self.sb.nxt;
        self.tlp_high_seq = None;
        self.w.cwnd_cnt = 0;
        self.prr = Prr { prior_cwnd: self.w.cwnd, delivered: 0, out: 0 };
        let v = self.view(now);
        self.w.ssthresh = self.cc.ssthresh(&v, &self.w);
    }

    /// `tcp_end_cwnd_reduction`: cwnd to ssthresh at the end of CWR or of a
    /// recovery that was not undone. Not for a control with its own
    /// `cong_control` (BBR): Linux returns before touching cwnd or sending
    /// `CA_EVENT_COMPLETE_CWR`, the control sets cwnd on every ACK itself
    /// (BBR restores its saved cwnd when recovery ends). Otherwise a
    /// recovery that ends and starts again on one ACK, or a tail-loss probe
    /// that repaired a loss (CWR), would leave BBR's cwnd at the ssthresh
    /// its DRAIN set (one BDP), where Linux keeps it.
    pub(super) fn end_cwnd_reduction(&mut self, now: Nanos) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.w.ssthresh < INFINITE_SSTHRESH && (self.ca_state == CaState::Cwr || self.undo.marker.is_some()) {
            self.w.cwnd = self.w.ssthresh;
        }
        let v = self.view(now);
        self.cc.cwnd_event(&v, CwndEvent::CompleteCwr, &mut self.w);
    }

    /// [`Prr::cwnd_reduction`] on this connection.
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, una_advanced: bool) {
        let in_flight = self.in_flight();
        self.prr.cwnd_reduction(&mut self.w, in_flight, newly_acked_sacked, newly_lost, una_advanced);
    }

    /// `tcp_enter_cwr`: an ECN echo starts a reduction without loss.
    fn enter_cwr(&mut self, now: Nanos) {
        self.undo.prior_ssthresh = 0;
        if self.ca_state < CaState::Cwr {
            self.undo.marker = None;
            self.init_cwnd_reduction(now);
            self.set_state(now, CaState::Cwr);
            self.queue_cwr = true;
        }
    }

    /// `tcp_try_to_open`: `retrans_stamp` cleared if nothing is
    /// retransmitted; an ECE starts a CWR episode (`tcp_enter_cwr`);
    /// otherwise Open or Disorder.
    pub(super) fn try_to_open(&mut self, now: Nanos, ece: bool) {
        self.retrans_stamp_cleanup();
        if ece {
            self.enter_cwr(now);
        }
        if self.ca_state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    /// `tcp_try_keep_open`.
    pub(super) fn try_keep_open(&mut self, now: Nanos) {
        let state = if self.sb.sacked_out + self.sb.lost_out > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.ca_state != state {
            self.set_state(now, state);
            self.high_seq = self.sb.nxt;
        }
    }

    /// `tcp_process_tlp_ack`: did the tail-loss probe repair a loss? If the
    /// ACK covers past the probe, the original was lost: a CWR episode
    /// (completed at once) as Linux's `tcp_init_cwnd_reduction` +
    /// `tcp_end_cwnd_reduction`. A D-SACK of the probe or a plain duplicate
    /// ACK ends the episode without one.
    pub(super) fn process_tlp_ack(&mut self, now: Nanos, ack: u64, dsack: bool, a: &AckState) {
        let Some(h) = self.tlp_high_seq else { return };
        if ack < h {
            return;
        }
        let una_advanced = self.sb.una > a.prior_una;
        if !self.tlp_retrans || dsack {
            self.tlp_high_seq = None;
        } else if ack > h {
            self.init_cwnd_reduction(now);
            self.set_state(now, CaState::Cwr);
            self.end_cwnd_reduction(now);
            self.try_keep_open(now);
            self.tlp_high_seq = None;
        } else if !una_advanced && !a.sacked_new {
            self.tlp_high_seq = None;
        }
    }

    /// `tcp_ack_is_dubious`: anything but a clean cumulative ACK in Open.
    pub(super) fn ack_is_dubious(&self, a: &AckState, dsack: bool, ece: bool) -> bool {
        let una_advanced = self.sb.una > a.prior_una;
        !una_advanced || a.sacked_new || dsack || ece || self.ca_state != CaState::Open
    }

    /// `tcp_fastretrans_alert`: leave an episode that `high_seq` ended, run
    /// RACK, and enter recovery if it found a loss (or CWR on an ECN echo).
    pub(super) fn fastretrans_alert(&mut self, now: Nanos, ece: bool, a: &mut AckState) {
        if self.ca_state == CaState::Open {
            self.undo.retrans_stamp = None;
        } else if self.sb.una >= self.high_seq {
            match self.ca_state {
                CaState::Cwr => {
                    if self.sb.una != self.high_seq {
                        self.end_cwnd_reduction(now);
                        self.set_state(now, CaState::Open);
                    }
                }
                CaState::Recovery => {
                    self.try_undo_recovery(now);
                    self.end_cwnd_reduction(now);
                }
                _ => {}
            }
        }
        match self.ca_state {
            CaState::Recovery => {
                if self.sb.una > a.prior_una && self.try_undo_partial(now) {
                    return;
                }
                if self.try_undo_dsack(now) {
                    self.try_keep_open(now);
                }
                self.rack_mark_lost(now);
                if matches!(self.timer, Some((_, TimerKind::Reo))) {
                    a.set_xmit_timer = false;
                }
                if self.ca_state != CaState::Recovery && self.sb.lost_out > 0 {
                    // the undo was wrong: loss is evident, a new recovery
                    self.enter_recovery(now, ece);
                }
            }
            CaState::Loss => {
                let una_advanced = self.sb.una > a.prior_una;
                self.process_loss(now, una_advanced, a.sacked_new, a.orig_sack_acked, a.dupack);
                if self.ca_state != CaState::Loss {
                    self.rack_mark_lost(now);
                    if self.sb.lost_out > 0 && self.ca_state <= CaState::Disorder {
                        self.enter_recovery(now, ece);
                    }
                } else {
                    self.rack_mark_lost(now);
                }
            }
            _ => {
                if self.ca_state <= CaState::Disorder {
                    self.try_undo_dsack(now);
                }
                self.rack_mark_lost(now);
                if matches!(self.timer, Some((_, TimerKind::Reo))) {
                    a.set_xmit_timer = false;
                }
                if self.sb.lost_out > 0 {
                    self.enter_recovery(now, ece);
                    if ece {
                        self.queue_cwr = true;
                    }
                } else {
                    self.try_to_open(now, ece);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(cwnd: u32, ssthresh: u32) -> Window {
        Window { cwnd, ssthresh, ..Window::default() }
    }

    #[test]
    fn prr_above_ssthresh_sends_ceil_of_the_delivered_share() {
        // ssthresh 20 of prior_cwnd 40: half of what is delivered, rounded up
        let mut p = Prr { prior_cwnd: 40, delivered: 0, out: 1 };
        let mut w = window(40, 20);
        p.cwnd_reduction(&mut w, 39, 3, 0, false);
        assert_eq!((p.delivered, w.cwnd), (3, 39 + 1)); // ceil(3 * 20 / 40) - 1 = 1
        p.out = 2;
        p.cwnd_reduction(&mut w, 38, 1, 0, false);
        assert_eq!(w.cwnd, 38); // ceil(4 * 20 / 40) - 2 = 0
    }

    #[test]
    fn prr_forces_the_fast_retransmit_when_nothing_was_sent_yet() {
        // ssthresh 0: the proportional share ceil(1 * 0 / 40) - 0 is 0, yet one packet leaves
        let mut p = Prr { prior_cwnd: 40, delivered: 0, out: 0 };
        let mut w = window(40, 0);
        p.cwnd_reduction(&mut w, 40, 1, 1, false);
        assert_eq!(w.cwnd, 41);
    }

    #[test]
    fn prr_below_ssthresh_grows_like_slow_start_up_to_ssthresh() {
        let mut p = Prr { prior_cwnd: 40, delivered: 10, out: 10 };
        let mut w = window(12, 20);
        // max(12 - 10, 2) + 1 (una advanced, nothing lost) = 3, below delta 20 - 12 = 8
        p.cwnd_reduction(&mut w, 12, 2, 0, true);
        assert_eq!(w.cwnd, 15);
        // a loss on the ACK takes the +1 away
        let mut p = Prr { prior_cwnd: 40, delivered: 10, out: 10 };
        p.cwnd_reduction(&mut w, 12, 2, 1, true);
        assert_eq!(w.cwnd, 14);
    }

    #[test]
    fn an_ack_that_delivers_nothing_leaves_cwnd_alone() {
        let mut p = Prr { prior_cwnd: 40, delivered: 5, out: 5 };
        let mut w = window(33, 20);
        p.cwnd_reduction(&mut w, 30, 0, 0, true);
        assert_eq!((w.cwnd, p.delivered), (33, 5));
    }
}
