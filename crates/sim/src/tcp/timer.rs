//! The retransmission timer: RTO and tail loss probe.
//!
//! Source: Linux v6.x `net/ipv4/tcp_timer.c` (`tcp_retransmit_timer`,
//! `inet_csk_rto_backoff`), `net/ipv4/tcp_input.c` (`tcp_rearm_rto`,
//! `tcp_rto_delta_us`, `tcp_enter_loss`, `tcp_timeout_mark_lost`),
//! `net/ipv4/tcp_output.c` (`tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe`); RFC 6298 (RTO), RFC 8985 §7 (TLP).
//!
//! Model: one timer per connection, as Linux's `icsk_pending` holds one of
//! RTO, TLP (`ICSK_TIME_LOSS_PROBE`) or REO (`ICSK_TIME_REO_TIMEOUT`, RACK's,
//! see `rack.rs`). A TLP fires about two smoothed RTTs after the last send
//! while the connection is Open or CWR, and sends one segment (new data if
//! any, else the last segment again) so that a tail loss is found by an ACK
//! rather than by an RTO. An RTO marks everything not SACKed lost, sets cwnd
//! to one more than what is in flight (1 in practice) and doubles the timeout;
//! it starts F-RTO and sets up the undo of its reduction (`undo.rs`).
//!
//! The timer is Linux's `icsk_retransmit_timer`, a `timer_list` timer:
//! armed `when` whole jiffies ahead (`tcp_reset_xmit_timer` →
//! `inet_csk_reset_xmit_timer` → `sk_reset_timer`, `jiffies + when`), it
//! fires on the timer wheel's tick of its bucket (`bloatlab_core::kernel::
//! timer_fire`: one jiffy after the expiry below 63 jiffies, 1-8 jiffies
//! after it to 503). The RTO is in jiffies already (`rtt.rs`); TLP's timeout
//! and the RTO's remainder are rounded up from µs (`usecs_to_jiffies`), and
//! the RTO rearmed after an ACK and the TLP wait also for a paced sender's
//! next departure (`tcp_pacing_delay`, whole jiffies rounded down).
//!
//! Constants: `TCP_RTO_MIN` 200 ms added to the probe timeout when one
//! segment is outstanding (room for a delayed ACK), else `TCP_TIMEOUT_MIN_US`
//! (2 ms, Linux ≥ 6.6: both in µs before the rounding to jiffies);
//! `TCP_TIMEOUT_INIT` 1 s before any RTT sample; the timer is capped at
//! `TCP_RTO_MAX` 120 s (`rtt.rs`).

use super::rtt::{RTO_MAX, RTO_MIN_US, TIMEOUT_INIT, TIMEOUT_MIN_US};
use super::sender::{Sender, Tx};
use super::undo::FRTO;
use bloatlab_core::cc::{CaState, CwndEvent};
use bloatlab_core::kernel::{nsecs_span_to_jiffies, timer_fire, usecs_to_jiffies, NS_PER_JIFFY};
use bloatlab_core::time::{Nanos, NS_PER_US};

/// Which timer is pending (Linux `icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    Rto,
    Tlp,
    Reo,
}

/// `inet_csk_rto_backoff`: `rto << backoff`, capped at `TCP_RTO_MAX`.
pub(super) fn rto_backoff(rto: Nanos, backoff: u32) -> Nanos {
    (rto << backoff.min(20)).min(RTO_MAX)
}

/// `tcp_schedule_loss_probe`'s timeout, jiffies: 2 srtt plus room for a
/// delayed ACK, in µs rounded up (`srtt_us` is Linux's srtt << 3, 0 before
/// any sample), capped by `rto_left` (the time left to the RTO, rounded up;
/// 0: no cap).
pub(super) fn probe_timeout(srtt_us: u32, packets_out: u32, rto_left: Nanos) -> u64 {
    let mut timeout = if srtt_us > 0 {
        let us = (srtt_us >> 2) as u64 + if packets_out == 1 { RTO_MIN_US as u64 } else { TIMEOUT_MIN_US };
        usecs_to_jiffies(us) as u64
    } else {
        TIMEOUT_INIT / NS_PER_JIFFY
    };
    if rto_left > 0 {
        timeout = timeout.min(nsecs_span_to_jiffies(rto_left));
    }
    timeout
}

impl Sender {
    pub(super) fn rto_backed_off(&self) -> Nanos {
        rto_backoff(self.rtt.rto, self.backoff)
    }

    /// `tcp_reset_xmit_timer`: the retransmit timer as `kind`, `when`
    /// jiffies ahead (at most `TCP_RTO_MAX`), plus the pacing delay if
    /// `pace_delay`; it fires on the timer wheel.
    pub(super) fn reset_xmit_timer(&mut self, now: Nanos, kind: TimerKind, when: u64, pace_delay: bool) {
        let mut when = when;
        if pace_delay && self.paced() {
            // tcp_pacing_delay: nsecs_to_jiffies(tcp_wstamp_ns - tcp_clock_cache), rounded down
            when += self.pacer.wstamp.saturating_sub(now) / NS_PER_JIFFY;
        }
        let when = when.min(RTO_MAX / NS_PER_JIFFY);
        self.timer = Some((timer_fire(now, when), kind));
    }

    /// The RTO (`icsk_rto` with its backoff), armed from `now`.
    pub(super) fn arm_rto(&mut self, now: Nanos) {
        self.reset_xmit_timer(now, TimerKind::Rto, self.rto_backed_off() / NS_PER_JIFFY, false);
    }

    /// `tcp_rearm_rto`: after a TLP or REO timer, the RTO keeps the head
    /// segment's deadline.
    pub(super) fn rearm_rto(&mut self, now: Nanos) {
        if self.sb.packets_out == 0 {
            self.timer = None;
            return;
        }
        let mut rto = self.rto_backed_off() / NS_PER_JIFFY;
        if matches!(self.timer, Some((_, TimerKind::Tlp | TimerKind::Reo))) {
            rto = nsecs_span_to_jiffies(self.rto_delta(now).max(NS_PER_US));
        }
        self.reset_xmit_timer(now, TimerKind::Rto, rto, true);
    }

    /// `tcp_rto_delta_us`: time left until the head segment's RTO.
    fn rto_delta(&self, now: Nanos) -> Nanos {
        match self.sb.segs.front() {
            Some(s) => (s.tx_time + self.rto_backed_off()).saturating_sub(now),
            None => self.rto_backed_off(),
        }
    }

    /// `tcp_schedule_loss_probe`; `advancing_rto`: called from an ACK that
    /// will rearm the RTO anyway.
    pub(super) fn schedule_loss_probe(&mut self, now: Nanos, advancing_rto: bool) -> bool {
        if self.sb.packets_out == 0 || !matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let rto_left = if advancing_rto { self.rto_backed_off() } else { self.rto_delta(now) };
        let timeout = probe_timeout(self.rtt.srtt_us, self.sb.packets_out, rto_left);
        self.reset_xmit_timer(now, TimerKind::Tlp, timeout, true);
        true
    }

    /// `tcp_set_xmit_timer` at the end of an ACK that advanced snd_una, and
    /// no timer while nothing is in flight but a REO timer's.
    pub(super) fn set_xmit_timer(&mut self, now: Nanos, set: bool) {
        if set && !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
        if self.sb.packets_out == 0 && !matches!(self.timer, Some((_, TimerKind::Reo))) {
            self.timer = None;
        }
    }

    /// The retransmission timer fired (whichever kind is pending).
    pub fn on_timer(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        let Some((t, kind)) = self.timer else { return };
        if t > now {
            return;
        }
        // tcp_write_timer_handler: the RTO clears `icsk_pending`; a TLP or REO timer's stays
        // pending while its handler runs, so that `tcp_rearm_rto` there keeps the head's
        // deadline (the RTO's remainder, not a full RTO from now).
        match kind {
            TimerKind::Rto => {
                self.timer = None;
                self.retransmit_timer(now, out)
            }
            TimerKind::Tlp => self.send_loss_probe(now, out),
            TimerKind::Reo => self.rack_reo_timeout(now, out),
        }
    }

    /// `tcp_retransmit_timer` → `tcp_enter_loss`.
    fn retransmit_timer(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        if self.sb.packets_out == 0 {
            return;
        }
        // tcp_enter_loss: reduce ssthresh unless this window did already
        let new_recovery = self.ca_state < CaState::Recovery;
        let reduce = self.ca_state <= CaState::Disorder
            || self.high_seq <= self.sb.una
            || (self.ca_state == CaState::Loss && self.undo.rto_retransmits == 0);
        let mut newly = std::mem::take(&mut self.newly_lost);
        let rack_rtt = self.rack.rtt_us * NS_PER_US;
        self.sb.timeout_mark_lost(|tx| tx + rack_rtt > now, &mut newly);
        self.notify_lost(now, &newly);
        newly.clear();
        self.newly_lost = newly;
        if reduce {
            self.undo.prior_ssthresh = self.w.current_ssthresh(self.ca_state);
            self.prr.prior_cwnd = self.w.cwnd;
            let v = self.view(now);
            self.w.ssthresh = self.cc.ssthresh(&v, &self.w);
            self.cc.cwnd_event(&v, CwndEvent::Loss, &mut self.w);
            let tlp_retrans_in_flight = self.tlp_high_seq.is_some() && self.tlp_retrans;
            self.undo.init(self.sb.una, self.sb.retrans_out, tlp_retrans_in_flight);
        }
        self.w.cwnd = self.in_flight() + 1;
        self.w.cwnd_cnt = 0;
        self.set_state(now, CaState::Loss);
        self.high_seq = self.sb.nxt;
        self.tlp_high_seq = None;
        // F-RTO step 1 (sysctl_tcp_frto 2): retransmit snd_una unless another
        // recovery was under way, save repeated timeouts of the same snd_una.
        self.undo.frto = FRTO && (new_recovery || self.undo.rto_retransmits > 0);
        self.undo.rexmit_new = false;
        self.backoff += 1;
        self.transmit(now, out);
        self.undo.rto_retransmits += 1;
        self.arm_rto(now); // out_reset_timer: no pacing delay
    }

    /// `tcp_send_loss_probe`: one new segment regardless of cwnd (if the
    /// receiver's window has room for it), or the last one again.
    fn send_loss_probe(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        if self.tlp_high_seq.is_none() && self.sb.packets_out > 0 {
            self.tlp_retrans = false;
            let mut probed = false;
            if self.has_new_data() && self.wnd_allows_new() {
                let seq = self.sb.push_new(self.next_len());
                let tx = self.on_sent(now, seq, false);
                out.push(tx);
                self.end_burst(now);
                probed = true;
            } else if let Some(last) = self.sb.nxt.checked_sub(1) {
                if last >= self.sb.una && !self.sb.seg(last).sacked {
                    self.sb.seg(last).ever_retrans = true;
                    self.retrans_segs += 1;
                    let tx = self.on_sent(now, last, true);
                    out.push(tx);
                    self.end_burst(now);
                    self.tlp_retrans = true;
                    probed = true;
                }
            }
            if probed {
                self.tlp_high_seq = Some(self.sb.nxt);
                self.timer = None;
            }
        }
        self.rearm_rto(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::time::{NS_PER_MS, NS_PER_SEC};

    #[test]
    fn the_rto_doubles_per_backoff_up_to_two_minutes() {
        let rto = 300 * NS_PER_MS;
        assert_eq!(rto_backoff(rto, 0), rto);
        assert_eq!(rto_backoff(rto, 3), 2400 * NS_PER_MS);
        assert_eq!(rto_backoff(rto, 9), 120 * NS_PER_SEC, "300 ms << 9 = 153.6 s, capped");
        assert_eq!(rto_backoff(rto, 64), 120 * NS_PER_SEC, "no overflow past 20 doublings");
    }

    #[test]
    fn the_probe_waits_two_srtt_plus_a_delayed_ack_allowance_capped_by_the_rto() {
        let srtt_us = 50_000 << 3; // 50 ms
        // usecs_to_jiffies(100 ms + TCP_TIMEOUT_MIN_US 2 ms) = 26 jiffies (104 ms)
        assert_eq!(probe_timeout(srtt_us, 5, 0), 26);
        // 21.1 ms srtt: 42.2 + 2 ms = 44.2 ms -> 12 jiffies (48 ms); before Linux 6.6 11 + 2 = 13
        assert_eq!(probe_timeout(21_100 << 3, 5, 0), 12);
        assert_eq!(probe_timeout(srtt_us, 1, 0), 75, "one segment out: + TCP_RTO_MIN, 300 ms");
        assert_eq!(probe_timeout(srtt_us, 5, 60 * NS_PER_MS), 15, "the RTO's 60 ms left");
        assert_eq!(probe_timeout(srtt_us, 5, 60 * NS_PER_MS + 1), 16, "60.001 ms: rounded up");
        assert_eq!(probe_timeout(0, 5, 0), 250, "no RTT sample yet: TCP_TIMEOUT_INIT");
    }
}
