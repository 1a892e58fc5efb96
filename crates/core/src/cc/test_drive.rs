//! Hand-made ACKs for the BBR tests, v1's and v3's alike: [`Drive`] feeds a
//! control one ACK at a time with a chosen rate sample, for exact values of
//! single decisions (the tests work the numbers out from the kernel formulas
//! in comments). It keeps the socket's running totals (`delivered`,
//! `delivered_ce`, `lost`) and what each packet would have recorded when
//! sent (`tx.lost`, so `rs->lost` and `rs->tx_in_flight` are v3's), and marks
//! each lost packet with `skb_marked_lost` before the ACK's `cong_control`,
//! as the sender does. Each version's tests add their own shortcuts
//! (`to_probe_bw`, ...) in an `impl Drive<Bbr>` / `impl Drive<Bbr3>`.

use super::bbr_common::BbrVersion;
use super::{CaState, CongestionControl, ConnView, LostSkb, RateSample, Window};
use crate::time::Nanos;

/// Feeds a BBR one ACK at a time; `delivered` is the socket's running total.
pub(super) struct Drive<B> {
    pub b: B,
    pub w: Window,
    pub now: Nanos,
    /// srtt and min_rtt the ACKs see, and the RTT sample of [`Drive::ack`].
    pub rtt: Nanos,
    pub delivered: u64,
    pub delivered_ce: u64,
    pub lost: u64,
    pub ca_state: CaState,
    /// (delivered, lost) at every change of lost, oldest first: what the
    /// sender's segments would have recorded as `tx.lost` when sent.
    lost_log: Vec<(u64, u64)>,
    /// `tp->tcp_wstamp_ns` the ACKs see (0: nothing waits for a pacing slot).
    pub wstamp: Nanos,
}

/// One ACK: `acked` packets delivered, a sample of `rs_delivered` packets over
/// `interval` for a packet sent when `prior_delivered` had been delivered;
/// `inflight` after it, `losses` packets marked lost and `ce` CE-marked by it.
#[derive(Clone, Copy)]
pub(super) struct Ack {
    pub acked: u32,
    pub prior_delivered: u64,
    pub rs_delivered: i64,
    pub interval: Nanos,
    pub inflight: u32,
    pub losses: u32,
    pub ce: u32,
}

impl<B: CongestionControl + BbrVersion> Drive<B> {
    /// `b` on a connection established at t = 0 with no RTT sample yet; the
    /// ACKs will see `rtt` as srtt and min_rtt.
    pub fn start(mut b: B, rtt: Nanos) -> Drive<B> {
        let mut w = Window::default();
        b.init(&ConnView::at(0), &mut w);
        Drive { b, w, now: 0, rtt, delivered: 0, delivered_ce: 0, lost: 0, ca_state: CaState::Open, lost_log: vec![(0, 0)], wstamp: 0 }
    }

    /// Record the current (delivered, lost) if lost changed (a test that
    /// changes `lost` by hand calls this, as a loss marked between ACKs).
    pub fn log_lost(&mut self) {
        if self.lost_log.last().is_none_or(|&(_, l)| l != self.lost) {
            self.lost_log.push((self.delivered, self.lost));
        }
    }

    /// `tp->lost` when a packet sent at `prior_delivered` left (its `tx.lost`).
    fn lost_when_sent(&self, prior_delivered: u64) -> u64 {
        let i = self.lost_log.iter().rposition(|&(d, _)| d <= prior_delivered).unwrap_or(0);
        self.lost_log[i].1
    }

    /// What the control sees with `inflight` packets in flight.
    pub fn view(&self, inflight: u32) -> ConnView {
        ConnView {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            lost: self.lost,
            packets_in_flight: inflight,
            srtt: self.rtt,
            min_rtt: self.rtt,
            ca_state: self.ca_state,
            wstamp: self.wstamp,
            ..ConnView::at(self.now)
        }
    }

    /// One ACK at `at`, its RTT sample `self.rtt`, not app-limited.
    pub fn ack(&mut self, at: Nanos, a: Ack) {
        self.ack_sample(at, a, self.rtt, false);
    }

    /// One ACK at `at` whose sample has RTT `rtt` and is app-limited or not.
    pub fn ack_sample(&mut self, at: Nanos, a: Ack, rtt: Nanos, app_limited: bool) {
        self.now = at;
        self.delivered += a.acked as u64;
        self.delivered_ce += a.ce as u64;
        let lost_before = self.lost;
        self.lost += a.losses as u64;
        self.log_lost();
        // The acked packet's send state: what was in flight then has been
        // delivered or marked lost since; the lost packets were sent with it.
        let tx_lost = self.lost_when_sent(a.prior_delivered);
        let lost = (self.lost - tx_lost) as u32;
        let tx_in_flight = if a.rs_delivered >= 0 { a.rs_delivered as u32 + lost } else { 0 };
        for k in 1..=a.losses as u64 {
            let skb = LostSkb {
                tx_in_flight,
                lost: (lost_before + k - tx_lost) as u32,
                is_app_limited: false,
                has_tx_state: true,
                pcount: 1,
            };
            let c = ConnView { lost: lost_before + k, ..self.view(a.inflight) };
            let w = self.w;
            self.b.skb_marked_lost(&c, &skb, &w);
        }
        let rs = RateSample {
            prior_mstamp: 1,
            prior_delivered: a.prior_delivered,
            delivered: a.rs_delivered,
            interval: a.interval as i64,
            rtt: rtt as i64,
            losses: a.losses,
            acked_sacked: a.acked,
            prior_in_flight: a.inflight + a.acked + a.losses,
            is_app_limited: app_limited,
            delivered_ce: a.ce as i64,
            tx_in_flight,
            prior_lost: tx_lost,
            lost,
            ..RateSample::default()
        };
        let c = self.view(a.inflight);
        self.b.cong_control(&c, &rs, &mut self.w);
    }

    /// An ACK that ends a round: `d` packets over one RTT (the rest of the
    /// round was acked by ACKs skipped here).
    pub fn round(&mut self, at: Nanos, d: u64, inflight: u32) {
        let prior = self.delivered;
        let a = Ack { acked: 1, prior_delivered: prior, rs_delivered: d as i64, interval: self.rtt, inflight, losses: 0, ce: 0 };
        self.ack(at, a);
        self.delivered += d - 1;
    }

    /// An ACK inside the current round (no round start): sample 100 packets / RTT.
    pub fn mid(&mut self, at: Nanos, inflight: u32) {
        let prior = self.b.core().next_rtt_delivered.saturating_sub(1);
        self.ack(at, Ack { acked: 1, prior_delivered: prior, rs_delivered: 100, interval: self.rtt, inflight, losses: 0, ce: 0 });
    }
}
