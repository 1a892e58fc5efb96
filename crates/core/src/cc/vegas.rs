//! TCP Vegas.
//!
//! Source: Linux `net/ipv4/tcp_vegas.c` (v6.x; unchanged in substance since
//! 2.6.x), after Brakmo & Peterson, "TCP Vegas: End to End Congestion
//! Avoidance on a Global Internet", IEEE JSAC 13(8), 1995. The arithmetic is
//! the kernel's: integer µs, `diff` truncated, one decision per RTT.
//!
//! # The model in a nutshell
//!
//! ```text
//!   baseRTT = min RTT ever seen (propagation delay)      rtt = min RTT seen in the last RTT
//!   expected = cwnd / baseRTT                            actual = cwnd / rtt
//!   diff = (expected - actual) * baseRTT = cwnd * (rtt - baseRTT) / baseRTT   [packets queued]
//! ```
//!
//! `diff` estimates how many of this flow's packets sit in the bottleneck
//! queue. Once per RTT (when the ACK passes the `snd_nxt` recorded at the
//! start of the RTT), Vegas keeps that between `alpha` and `beta` packets:
//! `diff < alpha` → cwnd + 1, `diff > beta` → cwnd − 1, otherwise hold. In slow
//! start it doubles like Reno but leaves as soon as `diff > gamma`, setting
//! cwnd to the "actual" window `cwnd * baseRTT / rtt + 1`. Losses are handled
//! like Reno (`tcp_reno_ssthresh`, the endpoint's recovery).
//!
//! Linux departs from the paper (its header lists these): the RTT used is the
//! *minimum* sample of the last RTT (filters delayed ACKs); slow start grows
//! every RTT, not every other; the "actual" rate is the ACK rate; after idle,
//! an RTO or recovery, Vegas waits for a full RTT of fresh samples.
//!
//! # States
//!
//! ```text
//!   doing_vegas_now = 1  (CA state Open, after init / TX_START / CWND_RESTART)
//!       once per RTT: cntRTT <= 2 ? Reno step : Vegas decision
//!   doing_vegas_now = 0  (any other CA state): Reno's cong_avoid
//! ```
//!
//! # Constants (module parameters of `tcp_vegas.c`)
//!
//! | name | value | unit | why |
//! |---|---|---|---|
//! | [`ALPHA`] | 2 | packets | fewer than this queued: the path has room, grow |
//! | [`BETA`] | 4 | packets | more than this queued: we are building a queue, shrink |
//! | [`GAMMA`] | 1 | packets | leave slow start once more than this is queued |
//! | min samples | 3 | RTT samples per RTT | with ≤ 2 samples per RTT they are likely all delayed ACKs: fall back to Reno |
//! | `+1` on vrtt | 1 | µs | `rtt_us + 1`: never a zero RTT or baseRTT |
//! | cwnd floor | 2 | packets | after a Vegas decision (kernel) |
//!
//! `baseRTT` is never aged (the kernel's "forever for now"): a route change to
//! a longer path makes Vegas see a standing queue and shrink.

use super::reno::{self, slow_start};
use super::{CaState, CongestionControl, ConnView, CwndEvent, AckSample, Window};

/// Lower bound on packets queued in the network.
pub const ALPHA: u32 = 2;
/// Upper bound on packets queued in the network.
pub const BETA: u32 = 4;
/// Slow-start exit threshold on packets queued.
pub const GAMMA: u32 = 1;
/// "No sample yet" for baseRTT/minRTT (kernel 0x7fffffff), µs.
const NO_RTT: u32 = 0x7fff_ffff;

/// Linux `struct vegas`.
#[derive(Debug, Clone)]
pub struct Vegas {
    /// `snd_nxt` (bytes) at the start of the current RTT.
    beg_snd_nxt: u64,
    /// Vegas decisions enabled (CA state Open).
    doing_vegas_now: bool,
    /// RTT samples in the current RTT.
    cnt_rtt: u32,
    /// Min RTT (+1) in the current RTT, µs.
    min_rtt: u32,
    /// Min RTT (+1) ever, µs.
    base_rtt: u32,
    /// `diff` of the last Vegas decision, packets (telemetry; None before the first).
    last_diff: Option<u32>,
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas { beg_snd_nxt: 0, doing_vegas_now: true, cnt_rtt: 0, min_rtt: NO_RTT, base_rtt: NO_RTT, last_diff: None }
    }
}

/// `diff = cwnd * (rtt - base) / base` (kernel u32 arithmetic), packets.
pub fn diff(cwnd: u32, rtt_us: u32, base_rtt_us: u32) -> u32 {
    cwnd.wrapping_mul(rtt_us.wrapping_sub(base_rtt_us)) / base_rtt_us.max(1)
}

impl Vegas {
    /// `vegas_enable`: start a fresh RTT of samples at `snd_nxt`.
    fn enable(&mut self, c: &ConnView) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = c.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = NO_RTT;
    }

    /// Propagation delay estimate (min RTT + 1 µs ever), µs; None before a sample.
    pub fn base_rtt_us(&self) -> Option<u32> {
        (self.base_rtt != NO_RTT).then_some(self.base_rtt)
    }
    /// RTT samples taken in the current RTT.
    pub fn samples_this_rtt(&self) -> u32 {
        self.cnt_rtt
    }
    /// `diff` (packets queued) of the last Vegas decision.
    pub fn last_diff(&self) -> Option<u32> {
        self.last_diff
    }
    /// Whether Vegas decisions are enabled (CA state Open).
    pub fn enabled(&self) -> bool {
        self.doing_vegas_now
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// `tcp_vegas_init`.
    fn init(&mut self, c: &ConnView, _w: &mut Window) {
        self.base_rtt = NO_RTT;
        self.enable(c);
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 {
        reno::ssthresh(w)
    }

    /// `tcp_vegas_pkts_acked`: min-filter the RTT per RTT and forever.
    fn pkts_acked(&mut self, _c: &ConnView, s: &AckSample, _w: &mut Window) {
        if s.rtt < 0 {
            return;
        }
        let vrtt = ((s.rtt as u64 / 1000).min(u32::MAX as u64 - 1) as u32) + 1;
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt += 1;
    }

    /// `tcp_vegas_state`.
    fn set_state(&mut self, c: &ConnView, new_state: CaState, _w: &mut Window) {
        if new_state == CaState::Open {
            self.enable(c);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// `tcp_vegas_cwnd_event`: restart after idle = a fresh Vegas (baseRTT too).
    fn cwnd_event(&mut self, c: &ConnView, ev: CwndEvent, w: &mut Window) {
        if matches!(ev, CwndEvent::CwndRestart | CwndEvent::TxStart) {
            self.init(c, w);
        }
    }

    /// `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) {
        if !self.doing_vegas_now {
            reno::cong_avoid(c, acked, w);
            return;
        }
        if c.snd_una > self.beg_snd_nxt {
            // Once per RTT: the ACK passed the data sent at the start of the RTT.
            self.beg_snd_nxt = c.snd_nxt;
            if self.cnt_rtt <= 2 {
                // Too few samples: likely all from delayed ACKs. Behave like Reno.
                reno::cong_avoid(c, acked, w);
            } else {
                let rtt = self.min_rtt;
                let target_cwnd = (w.cwnd as u64 * self.base_rtt as u64 / rtt as u64) as u32;
                let d = diff(w.cwnd, rtt, self.base_rtt);
                self.last_diff = Some(d);
                if d > GAMMA && w.in_slow_start() {
                    // Queue building in slow start: go to the actual rate (+1 for truncation).
                    w.cwnd = w.cwnd.min(target_cwnd + 1);
                    w.ssthresh = w.ssthresh.min(w.cwnd);
                } else if w.in_slow_start() {
                    slow_start(w, acked);
                } else if d > BETA {
                    w.cwnd -= 1;
                    w.ssthresh = w.ssthresh.min(w.cwnd);
                } else if d < ALPHA {
                    w.cwnd += 1;
                }
                // else: between alpha and beta, hold.
                if w.cwnd < 2 {
                    w.cwnd = 2;
                } else if w.cwnd > w.cwnd_clamp {
                    w.cwnd = w.cwnd_clamp;
                }
                w.ssthresh = w.current_ssthresh(c.ca_state);
            }
            self.cnt_rtt = 0;
            self.min_rtt = NO_RTT;
        } else if w.in_slow_start() {
            slow_start(w, acked);
        }
    }

    fn state_label(&self) -> &'static str {
        if self.doing_vegas_now {
            "VEGAS"
        } else {
            "RENO"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;

    const MSS: u64 = 1448;

    /// A Vegas connection at `cwnd`, whose current RTT started at byte 0.
    fn vegas(cwnd: u32, ssthresh: u32) -> (Vegas, Window) {
        let mut v = Vegas::default();
        let mut w = Window { cwnd, ssthresh, ..Window::default() };
        v.init(&ConnView { snd_nxt: 0, ..ConnView::at(0) }, &mut w);
        (v, w)
    }

    /// ACKs with RTT samples `rtt_us` (the kernel adds 1), then the ACK
    /// that ends the RTT (snd_una passes the RTT's start; snd_nxt is 100 packets on).
    fn one_rtt(v: &mut Vegas, w: &mut Window, rtt_us: &[u64]) {
        samples(v, w, rtt_us);
        let una = v.beg_snd_nxt + MSS;
        let end = ConnView { snd_una: una, snd_nxt: una + 100 * MSS, ..ConnView::at(0) };
        v.cong_avoid(&end, 1, w);
    }

    fn samples(v: &mut Vegas, w: &mut Window, rtt_us: &[u64]) {
        let c = ConnView::at(0);
        for &r in rtt_us {
            v.pkts_acked(&c, &AckSample { pkts_acked: 1, rtt: (r * 1000) as i64, in_flight: w.cwnd }, w);
        }
    }

    #[test]
    fn diff_is_cwnd_times_queueing_delay_over_base_rtt_truncated() {
        assert_eq!(diff(20, 10_000, 10_000), 0);
        assert_eq!(diff(20, 11_000, 10_000), 2); // 20 * 1000 / 10000
        assert_eq!(diff(20, 12_999, 10_000), 5); // 59980 / 10000 = 5.998
        assert_eq!(diff(100, 10_101, 10_000), 1);
    }

    #[test]
    fn avoidance_adds_one_packet_when_fewer_than_alpha_are_queued() {
        let (mut v, mut w) = vegas(20, 10);
        one_rtt(&mut v, &mut w, &[9_999, 10_000, 10_000]); // base 10000
        assert_eq!(v.last_diff(), Some(0));
        assert_eq!(w.cwnd, 21);
        one_rtt(&mut v, &mut w, &[10_999, 10_999, 11_500]); // rtt 11000: diff 21000/10000 = 2
        assert_eq!(v.last_diff(), Some(2));
        assert_eq!(w.cwnd, 21, "diff 2 = alpha: hold");
    }

    #[test]
    fn avoidance_holds_between_alpha_and_beta_and_removes_one_above_beta() {
        let (mut v, mut w) = vegas(20, 10);
        one_rtt(&mut v, &mut w, &[9_999, 9_999, 9_999]);
        assert_eq!(w.cwnd, 21);
        // rtt 12000: diff = 21 * 2000 / 10000 = 4 = beta: hold.
        one_rtt(&mut v, &mut w, &[11_999, 12_500, 13_000]);
        assert_eq!((v.last_diff(), w.cwnd), (Some(4), 21));
        // rtt 12500: diff = 21 * 2500 / 10000 = 5 > beta: -1. ssthresh was
        // raised to 3/4 of 21 = 15 by the first decision; min(15, 20) = 15.
        one_rtt(&mut v, &mut w, &[12_499, 12_499, 12_499]);
        assert_eq!((v.last_diff(), w.cwnd, w.ssthresh), (Some(5), 20, 15));
    }

    #[test]
    fn slow_start_exits_at_the_actual_rate_once_more_than_gamma_is_queued() {
        let (mut v, mut w) = vegas(10, INFINITE_SSTHRESH);
        // diff = 10 * 1000 / 10000 = 1 = gamma: keep slow-starting (+1 for the ACK).
        one_rtt(&mut v, &mut w, &[9_999, 10_999, 10_999]);
        // The RTT's min is 10000 (base): diff 0; slow start +1.
        assert_eq!((v.last_diff(), w.cwnd), (Some(0), 11));
        one_rtt(&mut v, &mut w, &[10_999, 10_999, 10_999]); // 11 * 1000 / 10000 = 1
        assert_eq!((v.last_diff(), w.cwnd, w.ssthresh), (Some(1), 12, INFINITE_SSTHRESH));
        // rtt 15000: diff = 12 * 5000 / 10000 = 6 > gamma. target = 12 * 10000 /
        // 15000 = 8, cwnd = 9, and ssthresh = 9: slow start is over.
        one_rtt(&mut v, &mut w, &[14_999, 14_999, 14_999]);
        assert_eq!((v.last_diff(), w.cwnd, w.ssthresh), (Some(6), 9, 9));
        assert!(!w.in_slow_start());
    }

    #[test]
    fn fewer_than_three_rtt_samples_in_an_rtt_fall_back_to_reno() {
        let (mut v, mut w) = vegas(20, 10);
        w.cwnd_cnt = 19;
        // Two samples that would say "queue of 20": Vegas would cut; Reno's AI adds 1.
        one_rtt(&mut v, &mut w, &[9_999, 19_999]);
        assert_eq!((v.last_diff(), w.cwnd, w.cwnd_cnt), (None, 21, 0));
        one_rtt(&mut v, &mut w, &[19_999, 19_999]);
        assert_eq!((v.last_diff(), w.cwnd, w.cwnd_cnt), (None, 21, 1));
        assert_eq!(v.base_rtt_us(), Some(10_000));
    }

    #[test]
    fn acks_inside_an_rtt_only_slow_start() {
        let (mut v, mut w) = vegas(20, 10);
        let c = ConnView::at(0); // snd_una 0 = beg_snd_nxt: not past it
        v.cong_avoid(&c, 5, &mut w);
        assert_eq!(w.cwnd, 20);
        let (mut v, mut w) = vegas(10, 100);
        v.cong_avoid(&c, 5, &mut w);
        assert_eq!(w.cwnd, 15);
    }

    #[test]
    fn outside_open_vegas_is_reno_and_reopening_waits_a_fresh_rtt() {
        let (mut v, mut w) = vegas(20, 10);
        let c = ConnView::at(0);
        v.set_state(&c, CaState::Recovery, &mut w);
        assert!(!v.enabled());
        assert_eq!(v.state_label(), "RENO");
        v.set_state(&ConnView { snd_nxt: 500 * MSS, ..c }, CaState::Open, &mut w);
        assert!(v.enabled());
        // The RTT now ends only once snd_una passes 500 packets.
        samples(&mut v, &mut w, &[9_999, 9_999, 9_999]);
        v.cong_avoid(&ConnView { snd_una: 500 * MSS, ..c }, 1, &mut w);
        assert_eq!((v.last_diff(), v.samples_this_rtt()), (None, 3));
        v.cong_avoid(&ConnView { snd_una: 500 * MSS + 1, ..c }, 1, &mut w);
        assert_eq!((v.last_diff(), v.samples_this_rtt()), (Some(0), 0));
    }

    #[test]
    fn restart_after_idle_forgets_base_rtt() {
        let (mut v, mut w) = vegas(20, 10);
        one_rtt(&mut v, &mut w, &[9_999, 9_999, 9_999]);
        assert_eq!(v.base_rtt_us(), Some(10_000));
        v.cwnd_event(&ConnView::at(0), CwndEvent::TxStart, &mut w);
        assert_eq!(v.base_rtt_us(), None);
        assert_eq!(v.samples_this_rtt(), 0);
    }

    #[test]
    fn loss_is_renos_half() {
        let (mut v, w) = vegas(31, 10);
        assert_eq!(v.ssthresh(&ConnView::at(0), &w), 15);
    }
}
