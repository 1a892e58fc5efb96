//! NewReno.
//!
//! Source: RFC 6582 (NewReno modification to TCP's fast recovery, 2012) for
//! the recovery episode, RFC 5681 §3.1 for the window arithmetic, and Linux
//! `net/ipv4/tcp_cong.c` (v6.x: `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`,
//! `tcp_reno_undo_cwnd`) for how a SACK endpoint actually runs it.
//!
//! # Linux has no `newreno` module
//!
//! NewReno is not a congestion control in Linux's sense: RFC 6582 changes
//! *loss recovery* (what a partial ACK means), not the window arithmetic.
//! Linux's `reno` is Reno's AI/MD ([`super::reno`]) on top of an endpoint whose
//! recovery is already "new": it stays in Recovery until `snd_una` passes
//! `high_seq` (RFC 6582's `recover`) and retransmits on partial ACKs. So this
//! control is Reno's window arithmetic under the name `newreno`, and the
//! NewReno behaviour comes from the simulator's endpoint
//! (`crates/sim/src/tcp/sender.rs`), as in Linux.
//!
//! Model in a nutshell: slow start +1 packet per packet acked up to ssthresh;
//! congestion avoidance +1 packet per window acked; on loss ssthresh =
//! max(cwnd / 2, 2) (RFC 5681 eq. 4 uses FlightSize / 2; Linux uses cwnd).
//!
//! # What differs from RFC 6582 in a SACK endpoint (Linux and ours)
//!
//! - **Loss detection**: RFC 6582 retransmits one segment per partial ACK
//!   (one hole per RTT). Linux marks holes lost from SACK information
//!   (RFC 6675 / RACK, RFC 8985) and can repair several holes per RTT; the
//!   partial-ACK rule only remains for peers without SACK (`tcp_add_reno_sack`).
//! - **cwnd during recovery**: RFC 6582 inflates cwnd by 1 MSS per duplicate
//!   ACK and deflates it by the amount acked on a partial ACK (§3.2 step 5).
//!   Linux instead runs Proportional Rate Reduction (RFC 6937,
//!   `tcp_cwnd_reduction`), which sends ssthresh/prior_cwnd packets per packet
//!   delivered, so cwnd is never inflated above ssthresh.
//! - **Exit**: RFC 6582 §3.2 step 6 sets cwnd = min(ssthresh, FlightSize + MSS)
//!   or ssthresh on the full ACK; Linux (`tcp_end_cwnd_reduction`) sets cwnd =
//!   ssthresh (PRR has already brought it close).
//! - **ssthresh**: RFC 6582 halves FlightSize, Linux halves cwnd (equal when
//!   the flow is cwnd-limited).
//! - **Spurious recovery** is undone (`undo_cwnd` = max(cwnd, prior_cwnd),
//!   Eifel/DSACK, RFC 3522/4015); RFC 6582 has no undo.
//!
//! States: none of its own (the endpoint's Open/Disorder/Recovery/Loss).
//!
//! Constants:
//! - multiplicative decrease 1/2 (RFC 5681 eq. 4), floor 2 packets (Linux `tcp_reno_ssthresh`).
//! - additive increase 1 packet per RTT (RFC 5681 eq. 3, counted per window acked).

use super::reno;
use super::{CongestionControl, ConnView, Window};

/// NewReno: Reno's window arithmetic; the recovery is the endpoint's.
#[derive(Debug, Default, Clone)]
pub struct NewReno;

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    /// `tcp_reno_ssthresh`: half the window, at least 2 packets.
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 {
        reno::ssthresh(w)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) {
        reno::cong_avoid(c, acked, w)
    }
}

#[cfg(test)]
mod tests {
    use super::super::reno::Reno;
    use super::*;
    use crate::rng::{self, RngExt};

    #[test]
    fn slow_start_grows_by_the_packets_acked_and_stops_at_ssthresh() {
        let mut w = Window { cwnd: 10, ssthresh: 14, ..Window::default() };
        NewReno.cong_avoid(&ConnView::at(0), 3, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (13, 0));
        // 13 -> 14 by slow start, the 4 left over go to the AI counter.
        NewReno.cong_avoid(&ConnView::at(0), 5, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (14, 4));
    }

    #[test]
    fn avoidance_adds_one_packet_after_a_full_window_is_acked() {
        let mut w = Window { cwnd: 20, ssthresh: 10, ..Window::default() };
        NewReno.cong_avoid(&ConnView::at(0), 19, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (20, 19));
        NewReno.cong_avoid(&ConnView::at(0), 1, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (21, 0));
    }

    #[test]
    fn loss_halves_cwnd_with_a_floor_of_two_and_undo_restores_the_prior_cwnd() {
        let c = ConnView { prior_cwnd: 40, ..ConnView::at(0) };
        assert_eq!(NewReno.ssthresh(&c, &Window { cwnd: 41, ..Window::default() }), 20);
        assert_eq!(NewReno.ssthresh(&c, &Window { cwnd: 2, ..Window::default() }), 2);
        assert_eq!(NewReno.undo_cwnd(&c, &Window { cwnd: 20, ..Window::default() }), 40);
    }

    #[test]
    fn a_flow_that_is_not_cwnd_limited_does_not_grow() {
        let mut w = Window { cwnd: 20, ssthresh: 10, ..Window::default() };
        let c = ConnView { is_cwnd_limited: false, ..ConnView::at(0) };
        NewReno.cong_avoid(&c, 50, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (20, 0));
    }

    #[test]
    fn the_window_arithmetic_is_renos_on_any_sequence_of_acks_and_losses() {
        let mut r = rng::stream(42, 1);
        let (mut a, mut b) = (Window::default(), Window::default());
        let c = ConnView::at(0);
        for _ in 0..10_000 {
            if r.gen_range(0..100) == 0 {
                let s = NewReno.ssthresh(&c, &a);
                assert_eq!(s, Reno.ssthresh(&c, &b));
                a.ssthresh = s;
                a.cwnd = s;
                b.ssthresh = s;
                b.cwnd = s;
            } else {
                let acked = r.gen_range(1..4);
                NewReno.cong_avoid(&c, acked, &mut a);
                Reno.cong_avoid(&c, acked, &mut b);
            }
            assert_eq!(a, b);
        }
        assert!(a.cwnd > 2, "the sequence exercised growth: cwnd {}", a.cwnd);
    }
}
