//! TCP Westwood+.
//!
//! Source: Linux `net/ipv4/tcp_westwood.c` (v6.x; logic unchanged since the
//! `first_ack`/`reset_rtt_min` fixes of v2.6.2x), after Mascolo, Casetti,
//! Gerla et al., "TCP Westwood: Bandwidth Estimation for Enhanced Transport
//! over Wireless Links", ACM MobiCom 2001, and Grieco & Mascolo, "Performance
//! evaluation and comparison of Westwood+, New Reno, and Vegas TCP congestion
//! control", ACM CCR 34(2), 2004 (the "+": one sample per RTT, not per ACK).
//! Times are jiffies as in the kernel (`tcp_jiffies32`, HZ = 250: the one clock of `crate::kernel`).
//!
//! # The model in a nutshell
//!
//! ```text
//!   per RTT window (at least 50 ms):  sample = bytes acked in the window / window length
//!   bw_ns_est = 7/8 bw_ns_est + 1/8 sample       bw_est = 7/8 bw_est + 1/8 bw_ns_est
//!   on loss:  ssthresh = max(bw_est * rtt_min / mss, 2)    (the BDP the path delivered)
//! ```
//!
//! Growth is Reno's (`tcp_reno_cong_avoid`). Westwood+ only changes what a
//! loss does: instead of halving blindly it sets ssthresh (and, when the
//! recovery ends, cwnd) to the bandwidth-delay product it measured, so a
//! random (non-congestion) loss on an empty pipe costs little.
//!
//! Where the window is set (kernel hooks):
//! - fast recovery: `ssthresh` is still `tcp_reno_ssthresh` (half) while PRR
//!   runs; at `CA_EVENT_COMPLETE_CWR` cwnd = ssthresh = bw_est·rtt_min/mss.
//! - RTO (`CA_EVENT_LOSS`): ssthresh = bw_est·rtt_min/mss, and rtt_min is
//!   re-learnt from the next sample.
//!
//! Bytes acked are counted from `snd_una` moves; a duplicate ACK counts one
//! MSS (`accounted`) which is taken back from the next cumulative ACK
//! (`westwood_acked_count`), so SACKed data counts when it is sent, not
//! twice.
//!
//! # States
//!
//! None of its own; the estimator runs on every ACK.
//!
//! # Constants
//!
//! | name | value | unit | why |
//! |---|---|---|---|
//! | [`RTT_MIN_JIFFIES`] | HZ/20 = 12 | jiffies (48 ms at HZ 250, "50 ms") | shortest sampling window: shorter ones are too noisy (LANs) |
//! | [`INIT_RTT_JIFFIES`] | 20·HZ = 5000 | jiffies (20 s) | rtt before any sample: deliberately huge so the first real one replaces it |
//! | filter gain | 7/8, applied twice | - | a 2nd-order low-pass: the paper's anti-aliasing of ACK-compression noise |
//! | ssthresh floor | 2 | packets | kernel `max_t(u32, ..., 2)` |
//!
//! The hooks: the kernel's `in_ack_event` and `pkts_acked` are both served by
//! [`CongestionControl::pkts_acked`] (the endpoint calls it on every ACK),
//! in the order of Linux ≥ 6.14 (`tcp_in_ack_event` after
//! `tcp_clean_rtt_queue`): RTT first, then the bandwidth window. Every ACK is
//! handled as the kernel's slow path (`CA_ACK_SLOWPATH`), which equals the
//! fast path when no duplicate ACK is pending. `bw_est·rtt_min` is computed in
//! 64 bits (the kernel's u32 would wrap above 4 GB of BDP).

use super::reno;
use super::{AckSample, CongestionControl, ConnView, CwndEvent, Window};
use crate::kernel::{jiffies32, usecs_to_jiffies, HZ};

/// `TCP_WESTWOOD_RTT_MIN` = HZ/20, jiffies.
pub const RTT_MIN_JIFFIES: u32 = HZ / 20;
/// `TCP_WESTWOOD_INIT_RTT` = 20·HZ, jiffies.
pub const INIT_RTT_JIFFIES: u32 = 20 * HZ;

/// Linux `struct westwood`.
#[derive(Debug, Clone)]
pub struct Westwood {
    /// First (less smoothed) bandwidth estimate, bytes/jiffy.
    bw_ns_est: u32,
    /// Bandwidth estimate, bytes/jiffy.
    bw_est: u32,
    /// Start of the current sampling window, jiffies.
    rtt_win_sx: u32,
    /// Bytes acked in the current window.
    bk: u32,
    /// `snd_una` at the previous ACK, bytes.
    snd_una: u64,
    /// Bytes credited by the last ACK.
    cumul_ack: u32,
    /// Bytes credited for duplicate ACKs, to take back from the next cumulative ACK.
    accounted: u32,
    /// Last RTT sample, jiffies.
    rtt: u32,
    /// Min RTT, jiffies.
    rtt_min: u32,
    first_ack: bool,
    reset_rtt_min: bool,
    /// mss at the last hook, bytes.
    mss: u32,
}

impl Default for Westwood {
    fn default() -> Self {
        Westwood {
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: 0,
            bk: 0,
            snd_una: 0,
            cumul_ack: 0,
            accounted: 0,
            rtt: INIT_RTT_JIFFIES,
            rtt_min: INIT_RTT_JIFFIES,
            first_ack: true,
            reset_rtt_min: true,
            mss: 1448,
        }
    }
}

/// `westwood_do_filter`: (7a + b) / 8.
pub fn do_filter(a: u32, b: u32) -> u32 {
    (7u32.wrapping_mul(a).wrapping_add(b)) >> 3
}

impl Westwood {
    /// Bandwidth estimate, bytes per jiffy (the kernel's unit).
    pub fn bw_est_raw(&self) -> u32 {
        self.bw_est
    }
    /// First-stage estimate, bytes per jiffy.
    pub fn bw_ns_est_raw(&self) -> u32 {
        self.bw_ns_est
    }
    /// Bandwidth estimate in bytes/s.
    pub fn bw_est(&self) -> u64 {
        self.bw_est as u64 * HZ as u64
    }
    /// Min RTT, jiffies.
    pub fn rtt_min_jiffies(&self) -> u32 {
        self.rtt_min
    }
    /// `tcp_westwood_bw_rttmin`: the measured BDP in packets, at least 2.
    pub fn bw_rttmin(&self) -> u32 {
        let bdp = self.bw_est as u64 * self.rtt_min as u64 / self.mss.max(1) as u64;
        bdp.clamp(2, u32::MAX as u64) as u32
    }

    /// `westwood_filter`: the first sample fills both stages.
    fn filter(&mut self, delta: u32) {
        let sample = self.bk / delta;
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = do_filter(self.bw_ns_est, sample);
            self.bw_est = do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// `westwood_update_window`: close the window after max(rtt, 50 ms).
    fn update_window(&mut self, c: &ConnView) {
        let now = jiffies32(c.now);
        let delta = now.wrapping_sub(self.rtt_win_sx) as i32;
        if self.first_ack {
            self.snd_una = c.snd_una;
            self.first_ack = false;
        }
        if self.rtt != 0 && delta > 0 && delta as u32 > self.rtt.max(RTT_MIN_JIFFIES) {
            self.filter(delta as u32);
            self.bk = 0;
            self.rtt_win_sx = now;
        }
    }

    /// `westwood_acked_count`: bytes this ACK stands for.
    fn acked_count(&mut self, c: &ConnView) -> u32 {
        let mss = c.mss;
        self.cumul_ack = c.snd_una.wrapping_sub(self.snd_una) as u32;
        if self.cumul_ack == 0 {
            // Duplicate ACK: credit one MSS now, take it back later.
            self.accounted += mss;
            self.cumul_ack = mss;
        }
        if self.cumul_ack > mss {
            // Partial or delayed ACK.
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = c.snd_una;
        self.cumul_ack
    }

    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// `tcp_westwood_init`.
    fn init(&mut self, c: &ConnView, _w: &mut Window) {
        *self = Westwood::default();
        self.rtt_win_sx = jiffies32(c.now);
        self.snd_una = c.snd_una;
        self.mss = c.mss.max(1);
    }

    /// `tcp_reno_ssthresh` (the bandwidth-based value comes at COMPLETE_CWR / LOSS).
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 {
        reno::ssthresh(w)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) {
        reno::cong_avoid(c, acked, w)
    }

    /// `tcp_westwood_pkts_acked` then `tcp_westwood_ack` (slow path).
    fn pkts_acked(&mut self, c: &ConnView, s: &AckSample, _w: &mut Window) {
        self.mss = c.mss.max(1);
        if s.rtt > 0 {
            self.rtt = usecs_to_jiffies(s.rtt as u64 / 1000);
        }
        self.update_window(c);
        let acked = self.acked_count(c);
        self.bk = self.bk.wrapping_add(acked);
        self.update_rtt_min();
    }

    /// `tcp_westwood_event`.
    fn cwnd_event(&mut self, c: &ConnView, ev: CwndEvent, w: &mut Window) {
        self.mss = c.mss.max(1);
        match ev {
            CwndEvent::CompleteCwr => {
                let b = self.bw_rttmin();
                w.cwnd = b;
                w.ssthresh = b;
            }
            CwndEvent::Loss => {
                w.ssthresh = self.bw_rttmin();
                self.reset_rtt_min = true; // re-learn from the next ACK
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::NS_PER_JIFFY as JIFFY;
    use crate::time::NS_PER_MS;

    const MSS: u64 = 1448;

    /// Westwood+ established at t = 0, snd_una 0.
    fn westwood() -> (Westwood, Window) {
        let mut ww = Westwood::default();
        let mut w = Window::default();
        ww.init(&ConnView::at(0), &mut w);
        (ww, w)
    }

    /// An ACK at jiffy `j` moving snd_una to `una` bytes, RTT sample `rtt_ms`.
    fn ack(ww: &mut Westwood, w: &mut Window, j: u64, una: u64, rtt_ms: u64) {
        let c = ConnView { snd_una: una, ..ConnView::at(j * JIFFY) };
        let rtt = if rtt_ms == 0 { -1 } else { (rtt_ms * NS_PER_MS) as i64 };
        ww.pkts_acked(&c, &AckSample { pkts_acked: 2, rtt, in_flight: 20 }, w);
    }

    #[test]
    fn constants_are_the_kernels_at_hz_250() {
        assert_eq!(RTT_MIN_JIFFIES, 12); // 48 ms, the kernel's "50 ms" at HZ 250
        assert_eq!(INIT_RTT_JIFFIES, 5000);
        let ww = Westwood::default();
        assert_eq!((ww.rtt, ww.rtt_min), (5000, 5000));
    }

    #[test]
    fn the_filter_is_seeded_by_the_first_sample_then_smooths_twice_by_seven_eighths() {
        let (mut ww, _) = westwood();
        ww.bk = 1_000_000;
        ww.filter(100);
        assert_eq!((ww.bw_ns_est_raw(), ww.bw_est_raw()), (10_000, 10_000));
        ww.bk = 2_000_000;
        ww.filter(100); // sample 20000: ns = (70000 + 20000) / 8, est = (70000 + 11250) / 8
        assert_eq!((ww.bw_ns_est_raw(), ww.bw_est_raw()), (11_250, 10_156));
        assert_eq!(do_filter(7, 0), 6);
    }

    #[test]
    fn bandwidth_is_sampled_once_per_window_of_at_least_twelve_jiffies() {
        // Two packets (2896 B) acked every jiffy, RTT 40 ms = 10 jiffies: the
        // window is max(10, 12) jiffies and closes on the first ACK after it.
        let (mut ww, mut w) = westwood();
        for j in 1..=12 {
            ack(&mut ww, &mut w, j, j * 2 * MSS, 40);
        }
        assert_eq!(ww.bw_est_raw(), 0, "no window closed yet");
        assert_eq!(ww.rtt_min_jiffies(), 10);
        // Jiffy 13 closes the window: the first ACK counted as a duplicate
        // (1 MSS, taken back from the second), so bk = 2 * 1448 + 10 * 2896 =
        // 31856 over 13 jiffies = 2450 B/jiffy.
        ack(&mut ww, &mut w, 13, 13 * 2 * MSS, 40);
        assert_eq!((ww.bw_ns_est_raw(), ww.bw_est_raw()), (2450, 2450));
        for j in 14..=25 {
            ack(&mut ww, &mut w, j, j * 2 * MSS, 40);
        }
        assert_eq!(ww.bw_est_raw(), 2450);
        // Jiffy 26: 13 ACKs of 2896 B over 13 jiffies = 2896; ns = (7 * 2450 + 2896) / 8
        // = 2505, est = (7 * 2450 + 2505) / 8 = 2456.
        ack(&mut ww, &mut w, 26, 26 * 2 * MSS, 40);
        assert_eq!((ww.bw_ns_est_raw(), ww.bw_est_raw()), (2505, 2456));
        assert_eq!(ww.bw_est(), 614_000);
    }

    #[test]
    fn an_rto_sets_ssthresh_to_bw_est_times_rtt_min_in_packets() {
        let (mut ww, mut w) = westwood();
        for j in 1..=26 {
            ack(&mut ww, &mut w, j, j * 2 * MSS, 40);
        }
        w.cwnd = 40;
        let c = ConnView::at(27 * JIFFY);
        let reno_half = ww.ssthresh(&c, &w);
        assert_eq!(reno_half, 20);
        w.ssthresh = reno_half;
        ww.cwnd_event(&c, CwndEvent::Loss, &mut w);
        // 2456 B/jiffy * 10 jiffies / 1448 = 16.96 -> 16 packets.
        assert_eq!(w.ssthresh, 16);
        // rtt_min is re-learnt from the next sample, even if larger.
        ack(&mut ww, &mut w, 28, 28 * 2 * MSS, 60);
        assert_eq!(ww.rtt_min_jiffies(), 15);
    }

    #[test]
    fn the_end_of_fast_recovery_sets_cwnd_and_ssthresh_to_the_measured_bdp() {
        let (mut ww, mut w) = westwood();
        for j in 1..=26 {
            ack(&mut ww, &mut w, j, j * 2 * MSS, 40);
        }
        w.cwnd = 20;
        w.ssthresh = 20;
        ww.cwnd_event(&ConnView::at(27 * JIFFY), CwndEvent::CompleteCwr, &mut w);
        assert_eq!((w.cwnd, w.ssthresh), (16, 16));
    }

    #[test]
    fn ssthresh_from_an_empty_estimate_is_two_packets() {
        let (mut ww, mut w) = westwood();
        ww.cwnd_event(&ConnView::at(0), CwndEvent::Loss, &mut w);
        assert_eq!(w.ssthresh, 2);
    }

    #[test]
    fn duplicate_acks_count_one_mss_each_and_are_taken_back_from_the_next_cumulative_ack() {
        let (mut ww, mut w) = westwood();
        ack(&mut ww, &mut w, 1, 2 * MSS, 40); // first ACK: counted as a duplicate
        assert_eq!((ww.bk, ww.accounted), (1448, 1448));
        ack(&mut ww, &mut w, 2, 2 * MSS, 0); // duplicate
        ack(&mut ww, &mut w, 3, 2 * MSS, 0); // duplicate
        assert_eq!((ww.bk, ww.accounted), (3 * 1448, 3 * 1448));
        // A cumulative ACK of 5 packets: 7240 - 4344 accounted = 2896 counted.
        ack(&mut ww, &mut w, 4, 7 * MSS, 40);
        assert_eq!((ww.bk, ww.accounted), (5 * 1448, 0));
    }

    #[test]
    fn growth_is_renos() {
        let (mut ww, mut w) = westwood();
        ww.cong_avoid(&ConnView::at(0), 3, &mut w);
        assert_eq!(w.cwnd, 13);
        let mut w = Window { cwnd: 10, ssthresh: 5, cwnd_cnt: 9, ..Window::default() };
        ww.cong_avoid(&ConnView::at(0), 1, &mut w);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
    }
}
