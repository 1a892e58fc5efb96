//! DCTCP (Data Center TCP).
//!
//! Source: Linux `net/ipv4/tcp_dctcp.c` and `tcp_dctcp.h` (v6.x), after
//! Alizadeh et al., "Data Center TCP (DCTCP)", ACM SIGCOMM 2010, and RFC 8257
//! (DCTCP, informational, 2017). Fixed-point arithmetic as in the kernel
//! (alpha in 1/1024).
//!
//! # The model in a nutshell
//!
//! ```text
//!   per observation window (one RTT of data: until snd_una passes the snd_nxt of its start)
//!     F     = delivered_ce / delivered                  (fraction of packets CE-marked)
//!     alpha = (1 - g) * alpha + g * F,   g = 1/16
//!   on ECE (the endpoint enters CWR, at most once per window):
//!     ssthresh = cwnd * (1 - alpha / 2)                 (PRR then brings cwnd down to it)
//!   on loss: ssthresh = cwnd / 2                        (Reno)
//! ```
//!
//! A switch marks CE above a shallow threshold K *instantaneously*; DCTCP
//! reacts in proportion to the extent of marking rather than to its
//! presence: 100 % marks halve cwnd like Reno, 10 % trim it by 5 %. Growth is
//! Reno's.
//!
//! ECN plumbing (who does what):
//! - sender: data is ECT(0) ([`CongestionControl::wants_ecn`]); `delivered_ce`
//!   counts packets (s)acked by ACKs carrying ECE (`tcp_count_delivered`); an
//!   ACK with ECE makes the endpoint enter CWR and call [`CongestionControl::ssthresh`],
//!   at most once per window of data.
//! - receiver: echoes CE *per packet* ([`CongestionControl::wants_accurate_ce_echo`]):
//!   ECE on every ACK whose data was CE, and an immediate ACK whenever the CE
//!   state of arriving data flips, preceded by the pending delayed ACK with
//!   the old state, so delayed ACKs never blur the marks. That is
//!   `dctcp_ece_ack_update`, provided as [`CeEcho`] for the receiver.
//!
//! # States
//!
//! `ce_state` (0: last data packet not CE, 1: CE), the receiver-side echo
//! state machine of [`CeEcho`]. No sender states beyond the endpoint's.
//!
//! # Constants
//!
//! | name | value | unit | why |
//! |---|---|---|---|
//! | [`MAX_ALPHA`] | 1024 | 1/1024 | alpha's fixed point: 1024 = every packet marked |
//! | [`DEFAULT_SHIFT_G`] (`dctcp_shift_g`) | 4 | g = 1/2^4 | the paper's g = 1/16: alpha averages ~16 windows; must satisfy g < 1.386/√(2(C·RTT+K)) |
//! | [`DEFAULT_ALPHA_ON_INIT`] (`dctcp_alpha_on_init`) | 1024 | 1/1024 | start as if fully marked: a flow that starts into a congested queue backs off at once (RFC 8257 §4.2 allows 0 or 1) |
//! | cut shift | 11 | - | cwnd·alpha >> 11 = cwnd·alpha/2 in units of 1/1024 |
//! | ssthresh floor | 2 | packets | kernel `max(..., 2U)` |
//!
//! Kernel details kept: the EWMA decrement is `min_not_zero(alpha, alpha >> g)`,
//! so alpha decays to exactly 0 instead of sticking at 15; the update is
//! `in_ack_event`, served here by [`CongestionControl::pkts_acked`] which the
//! endpoint calls on every ACK after the scoreboard update (Linux ≥ 6.14
//! order, so `delivered_ce` already counts this ACK). Not modelled: the
//! kernel falls back to `dctcp-reno` when the handshake did not negotiate ECN;
//! here the endpoint decides ECN from [`CongestionControl::wants_ecn`].

use super::reno;
use super::{AckSample, CaState, CongestionControl, ConnView, CwndEvent, Window};

/// alpha's fixed-point unit (`DCTCP_MAX_ALPHA`): 1024 = all packets marked.
pub const MAX_ALPHA: u32 = 1024;
/// `dctcp_shift_g`: g = 1/2^4.
pub const DEFAULT_SHIFT_G: u32 = 4;
/// `dctcp_alpha_on_init`.
pub const DEFAULT_ALPHA_ON_INIT: u32 = MAX_ALPHA;

/// `dctcp_ece_ack_update`: the receiver's per-packet CE echo.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CeEcho {
    /// CE state of the last data packet (kernel `ce_state`).
    pub ce_state: bool,
    /// `rcv_nxt` after the last data packet, bytes or segments (caller's unit).
    pub prior_rcv_nxt: u64,
}

/// What the receiver must do after a data packet (see [`CeEcho::on_data`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CeEchoAction {
    /// Send the delayed ACK now, acknowledging up to this `rcv_nxt`, with ECE = the *old* state.
    pub flush_delayed_ack: Option<(u64, bool)>,
    /// Acknowledge this packet immediately (the CE state flipped).
    pub ack_now: bool,
    /// ECE flag for ACKs from now on (until the state flips again).
    pub ece: bool,
}

impl CeEcho {
    /// A data packet arrived with CE (`is_ce`) or not; `rcv_nxt` includes it;
    /// `delayed_ack_pending` says a delayed ACK is scheduled (`ICSK_ACK_TIMER`).
    pub fn on_data(&mut self, is_ce: bool, rcv_nxt: u64, delayed_ack_pending: bool) -> CeEchoAction {
        let mut act = CeEchoAction { flush_delayed_ack: None, ack_now: false, ece: is_ce };
        if self.ce_state != is_ce {
            // State changed: the pending delayed ACK goes out first with the old state ...
            if delayed_ack_pending {
                act.flush_delayed_ack = Some((self.prior_rcv_nxt, self.ce_state));
            }
            // ... and this packet is acknowledged at once with the new one.
            act.ack_now = true;
        }
        self.prior_rcv_nxt = rcv_nxt;
        self.ce_state = is_ce;
        act
    }
}

/// Linux `struct dctcp`.
#[derive(Debug, Clone)]
pub struct Dctcp {
    shift_g: u32,
    alpha_on_init: u32,
    /// `tp->delivered` at the start of the observation window.
    old_delivered: u64,
    /// `tp->delivered_ce` at the start of the observation window.
    old_delivered_ce: u64,
    /// Fraction of marked packets, EWMA, in 1/1024.
    alpha: u32,
    /// The window ends when snd_una reaches this (bytes).
    next_seq: u64,
    /// Echo state machine driven by `CA_EVENT_ECN_IS_CE/NO_CE`.
    echo: CeEcho,
    /// cwnd before the last reduction, for undo.
    loss_cwnd: u32,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp::with_params(DEFAULT_SHIFT_G, DEFAULT_ALPHA_ON_INIT)
    }
}

impl Dctcp {
    /// DCTCP with the module parameters `dctcp_shift_g` (0..=10) and
    /// `dctcp_alpha_on_init` (capped at 1024), as `/sys/module/tcp_dctcp/parameters` sets them.
    pub fn with_params(shift_g: u32, alpha_on_init: u32) -> Dctcp {
        assert!(shift_g <= 10, "dctcp_shift_g must be in 0..=10, got {shift_g}");
        Dctcp {
            shift_g,
            alpha_on_init,
            old_delivered: 0,
            old_delivered_ce: 0,
            alpha: alpha_on_init.min(MAX_ALPHA),
            next_seq: 0,
            echo: CeEcho::default(),
            loss_cwnd: 0,
        }
    }

    /// alpha in 1/1024 (as `ss -i` shows `dctcp:(ce_state,alpha,ab_ecn,ab_tot)`).
    pub fn alpha_raw(&self) -> u32 {
        self.alpha
    }
    /// alpha as a fraction (0..1).
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_ALPHA as f64
    }
    /// CE state of the echo machine.
    pub fn ce_state(&self) -> bool {
        self.echo.ce_state
    }

    /// `dctcp_reset`: start an observation window at snd_nxt.
    fn reset(&mut self, c: &ConnView) {
        self.next_seq = c.snd_nxt;
        self.old_delivered = c.delivered;
        self.old_delivered_ce = c.delivered_ce;
    }

    /// `dctcp_update_alpha`: once per window, alpha = (1 - g) alpha + g F.
    fn update_alpha(&mut self, c: &ConnView) {
        if c.snd_una < self.next_seq {
            return;
        }
        let mut delivered_ce = c.delivered_ce.wrapping_sub(self.old_delivered_ce) as u32;
        let mut alpha = self.alpha;
        // min_not_zero(alpha, alpha >> g): decay to 0, not to 2^g - 1.
        let dec = alpha >> self.shift_g;
        alpha -= if dec == 0 { alpha } else { dec.min(alpha) };
        if delivered_ce != 0 {
            let delivered = c.delivered.wrapping_sub(self.old_delivered) as u32;
            delivered_ce <<= 10 - self.shift_g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(c);
    }

    /// `dctcp_react_to_loss`: Reno's half.
    fn react_to_loss(&mut self, w: &mut Window) {
        self.loss_cwnd = w.cwnd;
        w.ssthresh = reno::ssthresh(w);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// `dctcp_init`.
    fn init(&mut self, c: &ConnView, _w: &mut Window) {
        self.alpha = self.alpha_on_init.min(MAX_ALPHA);
        self.loss_cwnd = 0;
        self.echo = CeEcho::default();
        self.reset(c);
    }

    /// `dctcp_ssthresh`: cwnd * (1 - alpha/2), at least 2 (the ECE/CWR reduction).
    fn ssthresh(&mut self, _c: &ConnView, w: &Window) -> u32 {
        self.loss_cwnd = w.cwnd;
        let cut = ((w.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (w.cwnd - cut).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, c: &ConnView, acked: u32, w: &mut Window) {
        reno::cong_avoid(c, acked, w)
    }

    /// `dctcp_update_alpha` (the kernel's `in_ack_event`).
    fn pkts_acked(&mut self, c: &ConnView, _s: &AckSample, _w: &mut Window) {
        self.update_alpha(c);
    }

    /// `dctcp_state`: entering fast recovery on loss is Reno's half.
    fn set_state(&mut self, c: &ConnView, new_state: CaState, w: &mut Window) {
        if new_state == CaState::Recovery && c.ca_state != CaState::Recovery {
            self.react_to_loss(w);
        }
    }

    /// `dctcp_cwnd_event`.
    fn cwnd_event(&mut self, c: &ConnView, ev: CwndEvent, w: &mut Window) {
        match ev {
            CwndEvent::EcnIsCe | CwndEvent::EcnNoCe => {
                // Linux tracks rcv_nxt here; the sender's view has no rcv_nxt, so snd_una stands in.
                self.echo.on_data(ev == CwndEvent::EcnIsCe, c.snd_una, false);
            }
            CwndEvent::Loss => self.react_to_loss(w),
            _ => {}
        }
    }

    /// `dctcp_cwnd_undo`.
    fn undo_cwnd(&mut self, _c: &ConnView, w: &Window) -> u32 {
        w.cwnd.max(self.loss_cwnd)
    }

    fn wants_ecn(&self) -> bool {
        true
    }

    fn wants_accurate_ce_echo(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    /// A DCTCP sender whose first observation window ends at byte 100 * MSS.
    struct Drive {
        d: Dctcp,
        w: Window,
        delivered: u64,
        delivered_ce: u64,
        una: u64,
    }

    impl Drive {
        fn new() -> Drive {
            let mut d = Dctcp::default();
            let mut w = Window { cwnd: 100, ssthresh: 50, ..Window::default() };
            d.init(&ConnView { snd_nxt: 100 * MSS, ..ConnView::at(0) }, &mut w);
            Drive { d, w, delivered: 0, delivered_ce: 0, una: 0 }
        }
        fn view(&self) -> ConnView {
            ConnView {
                delivered: self.delivered,
                delivered_ce: self.delivered_ce,
                snd_una: self.una,
                snd_nxt: self.una + 100 * MSS,
                ..ConnView::at(0)
            }
        }
        /// A window of 100 packets, `marked` of them CE, acked one by one.
        fn window(&mut self, marked: u64) {
            for i in 0..100 {
                self.delivered += 1;
                if i < marked {
                    self.delivered_ce += 1;
                }
                self.una += MSS;
                let c = self.view();
                self.d.pkts_acked(&c, &AckSample { pkts_acked: 1, rtt: 1, in_flight: 100 }, &mut self.w);
            }
        }
        fn cwr_ssthresh(&mut self) -> u32 {
            let c = self.view();
            self.d.ssthresh(&c, &self.w)
        }
    }

    #[test]
    fn alpha_starts_at_one_and_the_first_cut_halves_cwnd() {
        let mut t = Drive::new();
        assert_eq!(t.d.alpha_raw(), 1024);
        assert_eq!(t.cwr_ssthresh(), 50); // 100 - (100 * 1024 >> 11)
    }

    #[test]
    fn alpha_after_windows_with_0_50_and_100_percent_marks() {
        let mut t = Drive::new();
        t.window(0); // 1024 - 1024/16 = 960
        assert_eq!(t.d.alpha_raw(), 960);
        assert_eq!(t.cwr_ssthresh(), 54); // 100 - 96000/2048 (46.9 -> 46)
        t.window(50); // 960 - 60 + (50 << 6) / 100 = 900 + 32
        assert_eq!(t.d.alpha_raw(), 932);
        assert_eq!(t.cwr_ssthresh(), 55); // 100 - 93200/2048 (45.5 -> 45)
        t.window(100); // 932 - 58 + 64
        assert_eq!(t.d.alpha_raw(), 938);
        assert_eq!(t.cwr_ssthresh(), 55); // 100 - 45
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        let mut t = Drive::new();
        for _ in 0..200 {
            t.window(50);
        }
        // Fixed point of a - a/16 + 32 with integer shifts: 512..=527.
        assert_eq!(t.d.alpha_raw(), 527);
        assert_eq!(t.cwr_ssthresh(), 75); // 100 - 52700/2048 (25.7 -> 25): a 25 % cut
        for _ in 0..200 {
            t.window(0);
        }
        assert_eq!(t.d.alpha_raw(), 0, "min_not_zero lets alpha decay to exactly 0");
        assert_eq!(t.cwr_ssthresh(), 100);
    }

    #[test]
    fn alpha_is_updated_only_when_the_observation_window_ends() {
        let mut t = Drive::new();
        t.delivered = 99;
        t.delivered_ce = 99;
        t.una = 100 * MSS - 1;
        let c = t.view();
        t.d.pkts_acked(&c, &AckSample::default(), &mut t.w);
        assert_eq!(t.d.alpha_raw(), 1024);
        t.delivered = 100;
        t.una = 100 * MSS;
        let c = t.view();
        t.d.pkts_acked(&c, &AckSample::default(), &mut t.w);
        // 1024 - 64 + (99 << 6) / 100 = 960 + 63
        assert_eq!(t.d.alpha_raw(), 1023);
    }

    #[test]
    fn g_of_one_half_weighs_the_last_window_as_much_as_the_history() {
        let mut d = Dctcp::with_params(1, 0);
        let mut w = Window::default();
        d.init(&ConnView::at(0), &mut w);
        let c = ConnView { delivered: 10, delivered_ce: 10, snd_una: 1, ..ConnView::at(0) };
        d.pkts_acked(&c, &AckSample::default(), &mut w);
        assert_eq!(d.alpha_raw(), 512); // (10 << 9) / 10
    }

    #[test]
    fn loss_is_renos_half_whatever_alpha_says_and_undo_restores_cwnd() {
        let mut t = Drive::new();
        for _ in 0..100 {
            t.window(0);
        }
        assert_eq!(t.d.alpha_raw(), 0);
        // The endpoint asks ssthresh (DCTCP: no cut at alpha 0), then enters Recovery.
        let c = t.view();
        let s = t.d.ssthresh(&c, &t.w);
        assert_eq!(s, 100);
        t.w.ssthresh = s;
        t.d.set_state(&c, CaState::Recovery, &mut t.w);
        assert_eq!(t.w.ssthresh, 50);
        // An RTO, too.
        t.w.ssthresh = 100;
        t.d.cwnd_event(&c, CwndEvent::Loss, &mut t.w);
        assert_eq!(t.w.ssthresh, 50);
        let shrunk = Window { cwnd: 50, ..t.w };
        assert_eq!(t.d.undo_cwnd(&c, &shrunk), 100);
    }

    #[test]
    fn the_receiver_acks_at_once_when_ce_flips_flushing_the_delayed_ack_with_the_old_state() {
        let mut e = CeEcho::default();
        // Unmarked data, a delayed ACK pending: nothing special.
        let a = e.on_data(false, 1, true);
        assert_eq!(a, CeEchoAction { flush_delayed_ack: None, ack_now: false, ece: false });
        // CE arrives while the ACK for packet 1 is delayed: ACK 1 without ECE, then ACK 2 with ECE now.
        let a = e.on_data(true, 2, true);
        assert_eq!(a, CeEchoAction { flush_delayed_ack: Some((1, false)), ack_now: true, ece: true });
        // More CE: normal (delayed) ACKs, with ECE.
        let a = e.on_data(true, 3, false);
        assert_eq!(a, CeEchoAction { flush_delayed_ack: None, ack_now: false, ece: true });
        // Back to unmarked with an ACK for 3 pending: flush it with ECE, ACK 4 without.
        let a = e.on_data(false, 4, true);
        assert_eq!(a, CeEchoAction { flush_delayed_ack: Some((3, true)), ack_now: true, ece: false });
    }

    #[test]
    fn dctcp_asks_for_ecn_and_per_packet_echo() {
        let d = Dctcp::default();
        assert!(d.wants_ecn() && d.wants_accurate_ce_echo());
        assert!(!crate::cc::reno::Reno.wants_ecn());
    }
}
