//! RACK: time-based loss detection.
//!
//! Source: Linux v6.x `net/ipv4/tcp_recovery.c` (`tcp_rack_advance`,
//! `tcp_rack_reo_wnd`, `tcp_rack_detect_loss`, `tcp_rack_mark_lost`,
//! `tcp_rack_reo_timeout`), RFC 8985 (RACK-TLP).
//!
//! Model: RACK remembers the most recently *sent* segment that was
//! delivered (`mstamp`, `end_seq`) and its RTT. A segment sent before it and
//! outstanding for longer than that RTT plus a reordering window is lost;
//! one that has not waited that long yet arms the REO timer for the rest.
//!
//! Constants: the reordering window is min_rtt / 4 (RFC 8985 §6.2,
//! `tcp_rack_reo_wnd`'s `min_rtt >> 2` with `rack.reo_wnd_steps` = 1), at
//! most srtt, and 0 in recovery or once `tcp_reordering` (3) segments are
//! SACKed, since then the hole is almost surely a loss. The REO timer is
//! armed `usecs_to_jiffies(remaining + TCP_TIMEOUT_MIN_US)` jiffies ahead
//! (2 ms, Linux ≥ 6.6), at most the RTO (`inet_csk_reset_xmit_timer`'s
//! `max_when` = `icsk_rto`), and fires on the timer wheel (`timer.rs`).

use super::rtt::TIMEOUT_MIN_US;
use super::scoreboard::Scoreboard;
use super::sender::{Sender, TimerKind, Tx};
use bloatlab_core::cc::CaState;
use bloatlab_core::kernel::{nsecs_span_to_jiffies, NS_PER_JIFFY};
use bloatlab_core::time::{Nanos, NS_PER_US};

/// `sysctl_tcp_reordering`: initial reordering degree (dupthresh), packets.
pub(super) const REORDERING: u32 = 3;

/// `tp->rack`.
#[derive(Debug, Default)]
pub(super) struct Rack {
    /// Send time and end (seq + 1) of the most recently sent delivered segment.
    pub mstamp: Nanos,
    pub end_seq: u64,
    /// Its RTT, µs.
    pub rtt_us: u64,
    /// Advanced since the last loss detection.
    pub advanced: bool,
}

impl Rack {
    /// `tcp_rack_advance`: segment `seq`, sent at `tx_time`, was delivered at
    /// `now`. A retransmitted segment acked faster than `min_rtt_us` may be
    /// the original's ACK: ignored.
    pub fn advance(&mut self, now: Nanos, min_rtt_us: u64, ever_retrans: bool, seq: u64, tx_time: Nanos) {
        let rtt_us = (now - tx_time) / NS_PER_US;
        if ever_retrans && rtt_us < min_rtt_us {
            return; // ambiguous: the original may have been acked
        }
        self.advanced = true;
        self.rtt_us = rtt_us;
        if tx_time > self.mstamp || (tx_time == self.mstamp && seq + 1 > self.end_seq) {
            self.mstamp = tx_time;
            self.end_seq = seq + 1;
        }
    }

    /// `tcp_rack_reo_wnd`, ns; `min_rtt` and `srtt` in ns (`u64::MAX`: no min_rtt yet).
    pub fn reo_wnd(ca_state: CaState, sacked_out: u32, min_rtt: Nanos, srtt: Nanos) -> Nanos {
        if ca_state >= CaState::Recovery || sacked_out >= REORDERING || min_rtt == u64::MAX {
            return 0;
        }
        (min_rtt / 4).min(srtt)
    }

    /// `tcp_rack_detect_loss`: mark lost every segment sent before the most
    /// recently delivered one and older than RTT + `reo_wnd`. Returns the
    /// longest remaining wait, if any segment must wait, and how many
    /// segments `tp->lost` counts (their sequence numbers appended to `newly`).
    pub fn detect_loss(
        &self,
        sb: &mut Scoreboard,
        now: Nanos,
        reo_wnd: Nanos,
        newly: &mut Vec<u64>,
    ) -> (Option<Nanos>, u64) {
        let mut timeout: Option<Nanos> = None;
        let mut lost = 0;
        let mut i = 0;
        while i < sb.tsorted.len() {
            let (tx, seq, gen) = sb.tsorted[i];
            // Drop stale entries (acked, sacked, retransmitted since, or lost and waiting).
            let stale = seq < sb.una || {
                let s = sb.segs[(seq - sb.una) as usize];
                s.gen != gen || s.sacked || (s.lost && !s.retrans)
            };
            if stale {
                sb.tsorted.remove(i);
                continue;
            }
            let sent_after = self.mstamp > tx || (self.mstamp == tx && self.end_seq > seq + 1);
            if !sent_after {
                break;
            }
            let waited = now - tx;
            let limit = self.rtt_us * NS_PER_US + reo_wnd;
            if waited >= limit {
                if sb.mark_lost(seq) {
                    lost += 1;
                    newly.push(seq);
                }
                sb.tsorted.remove(i);
            } else {
                let rem = limit - waited;
                timeout = Some(timeout.map_or(rem, |t: Nanos| t.max(rem)));
                i += 1;
            }
        }
        (timeout, lost)
    }
}

impl Sender {
    /// [`Rack::detect_loss`] with this connection's window; counts the losses.
    pub(super) fn rack_detect_loss(&mut self, now: Nanos) -> Option<Nanos> {
        let reo_wnd = Rack::reo_wnd(self.ca_state, self.sb.sacked_out, self.min_rtt_ns(), self.rtt.srtt());
        let mut newly = std::mem::take(&mut self.newly_lost);
        let (timeout, _) = self.rack.detect_loss(&mut self.sb, now, reo_wnd, &mut newly);
        self.notify_lost(now, &newly);
        newly.clear();
        self.newly_lost = newly;
        timeout
    }

    /// `tcp_rack_mark_lost`: detect losses if RACK advanced, arm the REO
    /// timer for segments that must wait.
    pub(super) fn rack_mark_lost(&mut self, now: Nanos) {
        if !self.rack.advanced {
            return;
        }
        self.rack.advanced = false;
        if let Some(t) = self.rack_detect_loss(now) {
            self.arm_reo(now, t);
        }
    }

    /// The REO timer for the `remaining` wait of the oldest segment not yet
    /// lost (see the module's notes).
    fn arm_reo(&mut self, now: Nanos, remaining: Nanos) {
        let when = nsecs_span_to_jiffies(remaining + TIMEOUT_MIN_US * NS_PER_US);
        let max_when = self.rto_backed_off() / NS_PER_JIFFY; // icsk_rto (doubled by each RTO)
        self.reset_xmit_timer(now, TimerKind::Reo, when.min(max_when), false);
    }

    /// `tcp_rack_reo_timeout`: the REO timer fired.
    pub(super) fn rack_reo_timeout(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        let prior_inflight = self.in_flight();
        self.rack_detect_loss(now); // the wait left, if any, is not used: see below
        if prior_inflight != self.in_flight() {
            if self.ca_state != CaState::Recovery {
                self.enter_recovery(now, false);
                if !self.cc.has_cong_control() {
                    self.cwnd_reduction(1, 0, false);
                }
            }
            self.transmit(now, out);
        }
        // Linux rearms no REO timer here (the next ACK's tcp_rack_mark_lost does): the RTO,
        // at the head's remaining time while the REO timer is still the pending one.
        if !matches!(self.timer, Some((_, TimerKind::Rto))) {
            self.rearm_rto(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::time::NS_PER_MS;

    #[test]
    fn rack_follows_the_latest_sent_delivered_segment_and_ignores_an_ambiguous_retransmission() {
        let mut r = Rack::default();
        r.advance(50 * NS_PER_MS, 40_000, false, 3, 3 * NS_PER_MS);
        assert_eq!((r.mstamp, r.end_seq, r.rtt_us, r.advanced), (3 * NS_PER_MS, 4, 47_000, true));
        r.advance(51 * NS_PER_MS, 40_000, false, 1, NS_PER_MS);
        assert_eq!((r.mstamp, r.end_seq, r.rtt_us), (3 * NS_PER_MS, 4, 50_000), "older segment: only the RTT");
        // a retransmission sent at 30 ms acked 20 ms later, less than min_rtt 40 ms: ignored
        r.advance(50 * NS_PER_MS, 40_000, true, 7, 30 * NS_PER_MS);
        assert_eq!((r.mstamp, r.end_seq, r.rtt_us), (3 * NS_PER_MS, 4, 50_000));
    }

    #[test]
    fn the_reordering_window_is_a_quarter_min_rtt_at_most_srtt_and_zero_in_recovery_or_after_three_sacks() {
        let ms = NS_PER_MS;
        assert_eq!(Rack::reo_wnd(CaState::Open, 0, 40 * ms, 100 * ms), 10 * ms);
        assert_eq!(Rack::reo_wnd(CaState::Disorder, 2, 40 * ms, 8 * ms), 8 * ms);
        assert_eq!(Rack::reo_wnd(CaState::Disorder, 3, 40 * ms, 100 * ms), 0);
        assert_eq!(Rack::reo_wnd(CaState::Recovery, 0, 40 * ms, 100 * ms), 0);
        assert_eq!(Rack::reo_wnd(CaState::Open, 0, u64::MAX, 100 * ms), 0);
    }

    #[test]
    fn segments_sent_before_the_delivered_one_are_lost_after_rtt_plus_window_and_the_rest_wait() {
        // 0..5 sent at 0..4 ms; 4 is SACKed at 44 ms (RACK RTT 40 ms). With a 2 ms
        // window at 44 ms: 0, 1 and 2 have waited 44, 43, 42 ms >= 42 ms: lost; 3 waits 1 ms more.
        let mut sb = Scoreboard::sent(5);
        sb.sack_one(4);
        let mut r = Rack::default();
        r.advance(44 * NS_PER_MS, 0, false, 4, 4 * NS_PER_MS);
        let (timeout, lost) = r.detect_loss(&mut sb, 44 * NS_PER_MS, 2 * NS_PER_MS, &mut Vec::new());
        assert_eq!((timeout, lost), (Some(NS_PER_MS), 3));
        assert_eq!(sb.lost_q.iter().copied().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(sb.tsorted.iter().map(|e| e.1).collect::<Vec<_>>(), [3], "lost and sacked entries leave the queue");
        // 1 ms later 3 is lost too
        assert_eq!(r.detect_loss(&mut sb, 45 * NS_PER_MS, 2 * NS_PER_MS, &mut Vec::new()), (None, 1));
        assert_eq!(sb.lost_out, 4);
    }
}
