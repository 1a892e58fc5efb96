//! A closed-loop ACK clock for the BBR tests, v1's and v3's alike (and for
//! setting them, or any other control, side by side): one sender over a FIFO
//! bottleneck serving one packet per `gap`, with `buf` packets of buffer
//! (`u64::MAX`: unlimited), `rtt` of propagation, seeded random loss before
//! the queue and an optional token-bucket policer in front of it. One ACK per
//! packet with `tcp_rate.c`'s bookkeeping (delivered, the send and ACK
//! intervals, `tx.in_flight` and `tx.lost` per packet), RACK-like loss
//! detection (a packet is lost when a later one is acked, no reordering), and
//! a Recovery episode per loss: entered on the ACK that detects a loss
//! (`ssthresh`, then `set_state`), left once a packet sent after entry is
//! acked cleanly. The sender sends new data instead of retransmitting (the
//! same load on the link). For behaviour over many rounds (bounds, not exact
//! values).

use super::{CaState, CongestionControl, ConnView, CwndEvent, LostSkb, RateSample, Window};
use crate::rng::{Rng, RngExt};
use crate::time::{to_us, Nanos, NS_PER_SEC};
use std::collections::VecDeque;

/// The bytes a packet carries (the pacing gap is this over the pacing rate).
const MSS: u64 = 1448;

#[derive(Debug, Clone, Copy)]
struct Pkt {
    seq: u64,
    sent: Nanos,
    ack_at: Nanos,
    dropped: bool,
    delivered: u64,
    delivered_mstamp: Nanos,
    first_tx: Nanos,
    /// `tx.in_flight`, `tx.lost`.
    tx_in_flight: u32,
    tx_lost: u64,
}

/// Token bucket policer in front of the bottleneck: one token per `gap` ns,
/// at most `depth` tokens, `credit` ns of tokens at the start.
pub(super) struct Policer {
    pub gap: Nanos,
    pub depth: u64,
    pub credit: Nanos,
    pub last: Nanos,
}

impl Policer {
    /// Does a packet arriving at `t` find a token (and take it)?
    fn conforms(&mut self, t: Nanos) -> bool {
        self.credit = (self.credit + (t - self.last)).min(self.depth * self.gap);
        self.last = t;
        if self.credit >= self.gap {
            self.credit -= self.gap;
            return true;
        }
        false
    }
}

/// What the pipe records after each ACK: the time, the cwnd, the control's
/// state label, and what the test's `snap` reads from the control.
#[derive(Debug, Clone, Copy)]
pub(super) struct Step<S> {
    pub t: Nanos,
    pub cwnd: u32,
    pub label: &'static str,
    pub state: S,
}

/// One sender over one bottleneck (see the module docs).
pub(super) struct Pipe<C: CongestionControl + ?Sized, S = ()> {
    pub cc: Box<C>,
    pub w: Window,
    pub now: Nanos,
    pub gap: Nanos,
    /// Base (propagation) RTT; a test may change it between runs.
    pub rtt: Nanos,
    buf: u64,
    loss: f64,
    rng: Rng,
    pub policer: Option<Policer>,
    link_free: Nanos,
    flight: VecDeque<Pkt>,
    seq: u64,
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    delivered_mstamp: Nanos,
    first_tx_mstamp: Nanos,
    next_send: Nanos,
    min_rtt: Nanos,
    srtt: Nanos,
    ca_state: CaState,
    high_seq: u64,
    snap: fn(&C) -> S,
    /// One [`Step`] per ACK.
    pub trace: Vec<Step<S>>,
}

impl<C: CongestionControl + ?Sized> Pipe<C> {
    /// A pipe that records the time, cwnd and state label of each ACK.
    pub fn new(cc: Box<C>, gap: Nanos, rtt: Nanos, buf: u64, loss: f64, seed: u64) -> Pipe<C> {
        Pipe::observing(cc, gap, rtt, buf, loss, seed, |_| ())
    }
}

impl<C: CongestionControl + ?Sized, S> Pipe<C, S> {
    /// A pipe that also records `snap(cc)` after each ACK.
    pub fn observing(mut cc: Box<C>, gap: Nanos, rtt: Nanos, buf: u64, loss: f64, seed: u64, snap: fn(&C) -> S) -> Pipe<C, S> {
        let mut w = Window::default();
        cc.init(&ConnView::at(0), &mut w);
        Pipe {
            cc,
            w,
            now: 0,
            gap,
            rtt,
            buf,
            loss,
            rng: crate::rng::stream(seed, 77),
            policer: None,
            link_free: 0,
            flight: VecDeque::new(),
            seq: 0,
            sent: 0,
            delivered: 0,
            lost: 0,
            delivered_mstamp: 0,
            first_tx_mstamp: 0,
            next_send: 0,
            min_rtt: u64::MAX,
            srtt: 0,
            ca_state: CaState::Open,
            high_seq: 0,
            snap,
            trace: Vec::new(),
        }
    }

    /// (time, label) at every change of the state label.
    pub fn labels(&self) -> Vec<(Nanos, &'static str)> {
        let mut out: Vec<(Nanos, &'static str)> = Vec::new();
        for s in &self.trace {
            if out.last().is_none_or(|&(_, l)| l != s.label) {
                out.push((s.t, s.label));
            }
        }
        out
    }

    fn view(&self) -> ConnView {
        ConnView {
            delivered: self.delivered,
            lost: self.lost,
            packets_in_flight: self.flight.len() as u32,
            srtt: self.srtt,
            min_rtt: self.min_rtt,
            ca_state: self.ca_state,
            snd_una: self.flight.front().map_or(self.seq, |p| p.seq) * MSS,
            snd_nxt: self.seq * MSS,
            ..ConnView::at(self.now)
        }
    }

    fn send(&mut self) {
        if self.flight.is_empty() {
            self.first_tx_mstamp = self.now;
            self.delivered_mstamp = self.now;
            let c = self.view();
            self.cc.cwnd_event(&c, CwndEvent::TxStart, &mut self.w);
        }
        let t = self.now;
        let backlog = if self.link_free > t { (self.link_free - t).div_ceil(self.gap) } else { 0 };
        let random_loss = self.loss > 0.0 && self.rng.gen_bool(self.loss);
        let policed = !random_loss && self.policer.as_mut().is_some_and(|p| !p.conforms(t));
        let dropped = random_loss || policed || backlog > self.buf;
        let mut ack_at = 0;
        if !dropped {
            let departs = t.max(self.link_free) + self.gap;
            self.link_free = departs;
            ack_at = departs + self.rtt;
        }
        self.flight.push_back(Pkt {
            seq: self.seq,
            sent: t,
            ack_at,
            dropped,
            delivered: self.delivered,
            delivered_mstamp: self.delivered_mstamp,
            first_tx: self.first_tx_mstamp,
            tx_in_flight: self.flight.len() as u32 + 1,
            tx_lost: self.lost,
        });
        self.seq += 1;
        self.sent += 1;
        let rate = if self.cc.wants_pacing() { self.w.pacing_rate.max(1) } else { u64::MAX };
        self.next_send = t + (MSS * NS_PER_SEC).div_ceil(rate);
    }

    fn ack(&mut self) {
        let prior_in_flight = self.view().packets_in_flight;
        // Everything sent before the acked packet and still missing is lost (RACK, no reordering).
        let mut losses = 0;
        while let Some(l) = self.flight.front().copied().filter(|p| p.dropped) {
            self.flight.pop_front();
            losses += 1;
            self.lost += 1;
            let skb = LostSkb {
                tx_in_flight: l.tx_in_flight,
                lost: (self.lost - l.tx_lost) as u32,
                is_app_limited: false,
                has_tx_state: true,
                pcount: 1,
            };
            let c = self.view();
            self.cc.skb_marked_lost(&c, &skb, &self.w);
        }
        let p = self.flight.pop_front().expect("an ack needs a packet");
        self.delivered += 1;
        self.delivered_mstamp = self.now;
        self.first_tx_mstamp = p.sent;
        let rtt = self.now - p.sent;
        self.min_rtt = self.min_rtt.min(rtt);
        self.srtt = if self.srtt == 0 { rtt } else { self.srtt - self.srtt / 8 + rtt / 8 };
        // Recovery: entered on a loss, left once a packet sent after entry is acked cleanly.
        if losses > 0 && self.ca_state == CaState::Open {
            let c = self.view();
            self.w.ssthresh = self.cc.ssthresh(&c, &self.w);
            self.cc.set_state(&c, CaState::Recovery, &mut self.w);
            self.ca_state = CaState::Recovery;
            self.high_seq = self.seq;
        } else if losses == 0 && self.ca_state == CaState::Recovery && p.seq >= self.high_seq {
            let c = self.view();
            self.cc.set_state(&c, CaState::Open, &mut self.w);
            self.ca_state = CaState::Open;
            if !self.cc.has_cong_control() {
                self.w.cwnd = self.w.ssthresh;
            }
        }
        let snd = p.sent - p.first_tx;
        let ack = self.now - p.delivered_mstamp;
        let mut interval = snd.max(ack) as i64;
        if to_us(interval as u64) < to_us(self.min_rtt) {
            interval = -1; // tcp_rate_gen: shorter than min_rtt is not a valid sample
        }
        let rs = RateSample {
            prior_mstamp: p.first_tx.max(1),
            prior_delivered: p.delivered,
            delivered: (self.delivered - p.delivered) as i64,
            interval,
            rtt: rtt as i64,
            losses: losses as u32,
            acked_sacked: 1,
            prior_in_flight,
            tx_in_flight: p.tx_in_flight,
            prior_lost: p.tx_lost,
            lost: (self.lost - p.tx_lost) as u32,
            ..RateSample::default()
        };
        let c = self.view();
        if self.cc.has_cong_control() {
            self.cc.cong_control(&c, &rs, &mut self.w);
        } else if self.ca_state == CaState::Open {
            self.cc.cong_avoid(&c, 1, &mut self.w);
        }
        self.w.cwnd = self.w.cwnd.max(1);
        let state = (self.snap)(&self.cc);
        self.trace.push(Step { t: self.now, cwnd: self.w.cwnd, label: self.cc.state_label(), state });
    }

    /// Send and ACK until `end` (ns).
    pub fn run_until(&mut self, end: Nanos) {
        loop {
            let next_ack = self.flight.iter().find(|p| !p.dropped).map(|p| p.ack_at);
            let in_flight = self.flight.len() as u32;
            let next_send = if in_flight < self.w.cwnd { Some(self.next_send.max(self.now)) } else { None };
            let (t, is_ack) = match (next_ack, next_send) {
                (Some(a), Some(s)) if a <= s => (a, true),
                (_, Some(s)) => (s, false),
                (Some(a), None) => (a, true),
                (None, None) => panic!("stuck: nothing in flight and cwnd {} full", self.w.cwnd),
            };
            if t > end {
                self.now = end;
                return;
            }
            self.now = t;
            if is_ack {
                self.ack();
            } else {
                self.send();
            }
        }
    }
}
