//! Reno congestion avoidance.
//!
//! Source: RFC 5681 §3.1 and Linux `net/ipv4/tcp_cong.c` (v6.x):
//! `tcp_reno_cong_avoid`, `tcp_slow_start`, `tcp_cong_avoid_ai`,
//! `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`.
//!
//! Model in a nutshell: slow start doubles cwnd every round trip (+1 packet
//! per packet acked) until ssthresh; congestion avoidance then adds one packet
//! per window acked (Linux counts acked packets in `snd_cwnd_cnt` and adds
//! `cnt / cwnd` packets, so no fractional window is kept). On loss, ssthresh =
//! max(cwnd / 2, 2); PRR (in the TCP endpoint) brings cwnd down to it.
//!
//! States: none of its own (the endpoint's Open/Disorder/Recovery/Loss).
//!
//! Constants:
//! - multiplicative decrease 1/2 (RFC 5681 eq. 4), floor 2 packets (Linux).
//! - additive increase 1 packet per RTT (RFC 5681 eq. 3).

use super::{CongestionControl, ConnView, Window};

#[derive(Debug, Default, Clone)]
pub struct Reno;

/// Linux `tcp_slow_start`: grow cwnd by `acked` packets, but not past
/// ssthresh; returns the acked packets left over for congestion avoidance.
pub fn slow_start(w: &mut Window, acked: u32) -> u32 {
    let cwnd = (w.cwnd.saturating_add(acked)).min(w.ssthresh);
    let left = acked - (cwnd - w.cwnd).min(acked);
    w.cwnd = cwnd.min(w.cwnd_clamp);
    left
}

/// Linux `tcp_cong_avoid_ai`: +1 packet per `wnd` packets acked, accumulating
/// in `cwnd_cnt`.
pub fn cong_avoid_ai(w: &mut Window, wnd: u32, acked: u32) {
    let wnd = wnd.max(1);
    // If credits accumulated at a higher w, apply them gently now.
    if w.cwnd_cnt >= wnd {
        w.cwnd_cnt = 0;
        w.cwnd += 1;
    }
    w.cwnd_cnt += acked;
    if w.cwnd_cnt >= wnd {
        let delta = w.cwnd_cnt / wnd;
        w.cwnd_cnt -= delta * wnd;
        w.cwnd += delta;
    }
    w.cwnd = w.cwnd.min(w.cwnd_clamp);
}

/// Linux `tcp_reno_ssthresh`: half the window, at least 2 packets. DCTCP
/// (on loss), Westwood+, Vegas and NewReno use it as the kernel's do.
pub fn ssthresh(w: &Window) -> u32 {
    (w.cwnd >> 1).max(2)
}

/// Linux `tcp_reno_cong_avoid`: nothing unless cwnd limits the sender; slow
/// start up to ssthresh, then +1 packet per window acked. DCTCP, Westwood+,
/// Vegas (outside its own decisions) and NewReno grow this way.
pub fn cong_avoid(c: &ConnView, mut acked: u32, w: &mut Window) {
    if !c.is_cwnd_limited {
        return;
    }
    if w.in_slow_start() {
        acked = slow_start(w, acked);
        if acked == 0 {
            return;
        }
    }
    let cwnd = w.cwnd;
    cong_avoid_ai(w, cwnd, acked);
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 {
        ssthresh(w)
    }

    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) {
        cong_avoid(c, acked, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_adds_one_packet_per_packet_acked() {
        let mut w = Window::default();
        let mut r = Reno;
        r.cong_avoid(&ConnView::at(0), 2, &mut w);
        assert_eq!(w.cwnd, 12);
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_spills_into_avoidance() {
        let mut w = Window { cwnd: 18, ssthresh: 20, ..Window::default() };
        let left = slow_start(&mut w, 5);
        assert_eq!((w.cwnd, left), (20, 3));
    }

    #[test]
    fn congestion_avoidance_adds_one_packet_per_window() {
        let mut w = Window { cwnd: 10, ssthresh: 5, ..Window::default() };
        let mut r = Reno;
        for _ in 0..9 {
            r.cong_avoid(&ConnView::at(0), 1, &mut w);
        }
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 9));
        r.cong_avoid(&ConnView::at(0), 1, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut w = Window::default();
        let mut c = ConnView::at(0);
        c.is_cwnd_limited = false;
        Reno.cong_avoid(&c, 5, &mut w);
        assert_eq!(w.cwnd, 10);
    }

    #[test]
    fn ssthresh_halves_with_a_floor_of_two() {
        let c = ConnView::at(0);
        assert_eq!(Reno.ssthresh(&c, &Window { cwnd: 31, ..Window::default() }), 15);
        assert_eq!(Reno.ssthresh(&c, &Window { cwnd: 3, ..Window::default() }), 2);
    }
}
