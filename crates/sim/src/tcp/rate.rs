//! Delivery-rate sampling.
//!
//! Source: Linux v6.x `net/ipv4/tcp_rate.c` (`tcp_rate_skb_sent`,
//! `tcp_rate_skb_delivered`, `tcp_rate_gen`, `tcp_rate_check_app_limited`),
//! draft-cheng-iccrg-delivery-rate-estimation; the per-segment `tx.in_flight`
//! and `tx.lost` with `rs->tx_in_flight`, `rs->prior_lost` and `rs->lost`
//! from the BBRv3 tree (github.com/google/bbr branch v3, Linux 6.13.7:
//! `tcp_set_tx_in_flight`), which BBRv3 reads to learn the flight at which
//! losses began.
//!
//! Model: every segment, when sent, remembers how much had been delivered
//! (`delivered`) and when (`delivered_mstamp`), and when the flight it
//! belongs to started (`first_tx`). An ACK takes the most recently sent
//! segment it delivers; the rate sample is the packets delivered since that
//! segment left over max(send interval, ACK interval). The max keeps ACK
//! compression from inflating the rate, and an interval below min_rtt is
//! invalid (it cannot be a whole round trip).
//!
//! Application-limited: when the sender has nothing to send and cwnd is not
//! full, `app_limited` marks the delivered count at which the pipe will be
//! full again; samples taken before it are flagged, and one such sample
//! replaces the reported rate (`tcpi_delivery_rate`) only if it is higher.

use super::scoreboard::Seg;
use crate::packet::MSS;
use bloatlab_core::cc::RateSample;
use bloatlab_core::time::{Nanos, NS_PER_SEC};

/// The fields of `struct tcp_sock` that `tcp_rate.c` keeps.
#[derive(Debug, Default)]
pub(super) struct DeliveryRate {
    /// `tp->delivered`: packets delivered (SACKed or cumulatively acked).
    pub delivered: u64,
    /// `tp->delivered_ce`: of which the receiver echoed CE.
    pub delivered_ce: u64,
    /// `tp->lost`: packets marked lost, retransmissions lost again included.
    pub lost: u64,
    /// `tp->delivered_mstamp`: when `delivered` last grew.
    pub delivered_mstamp: Nanos,
    /// `tp->first_tx_mstamp`: send time of the flight being sampled.
    pub first_tx_mstamp: Nanos,
    /// `tp->app_limited`: `delivered` at which the app-limited period ends; 0: not limited.
    pub app_limited: u64,
    /// `tp->rate_delivered` / `tp->rate_interval`: the sample `tcpi_delivery_rate` reports.
    pub rate_delivered: u64,
    pub rate_interval: Nanos,
}

impl DeliveryRate {
    /// `tcp_rate_skb_sent`: snapshot the delivery state into the segment
    /// sent at `now`; `pipe_empty` (nothing in flight) starts a new flight.
    /// `in_flight` is `tcp_packets_in_flight` before this transmission plus
    /// the segment (`tcp_set_tx_in_flight`).
    pub fn skb_sent(&mut self, now: Nanos, pipe_empty: bool, in_flight: u32, s: &mut Seg) {
        if pipe_empty {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        s.first_tx = self.first_tx_mstamp;
        s.delivered_mstamp = self.delivered_mstamp;
        s.delivered = self.delivered;
        s.app_limited = self.app_limited != 0;
        s.delivered_ce = self.delivered_ce;
        s.tx_lost = self.lost;
        s.tx_in_flight = in_flight;
    }

    /// `tcp_rate_skb_delivered`: segment `seq` (`s` as it was) is delivered by
    /// this ACK; the sample follows the most recently sent such segment.
    pub fn skb_delivered(&mut self, rs: &mut RateSample, last_end_seq: &mut u64, s: &Seg, seq: u64) {
        if s.delivered_mstamp == 0 {
            return;
        }
        let after = s.tx_time > self.first_tx_mstamp || (s.tx_time == self.first_tx_mstamp && seq + 1 > *last_end_seq);
        if rs.prior_delivered == 0 || after {
            rs.prior_delivered = s.delivered;
            rs.delivered_ce = s.delivered_ce as i64;
            rs.prior_mstamp = s.delivered_mstamp;
            rs.is_app_limited = s.app_limited;
            rs.is_retrans = s.ever_retrans;
            rs.tx_in_flight = s.tx_in_flight;
            rs.prior_lost = s.tx_lost;
            *last_end_seq = seq + 1;
            self.first_tx_mstamp = s.tx_time;
            rs.interval = (s.tx_time - s.first_tx) as i64;
        }
    }

    /// `tcp_rate_gen`: finish the ACK's sample; `delivered` and `lost` are
    /// what this ACK newly delivered and marked lost, `min_rtt` in ns
    /// (`u64::MAX`: no sample yet).
    pub fn gen(&mut self, now: Nanos, delivered: u32, lost: u32, rs: &mut RateSample, min_rtt: Nanos) {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if delivered > 0 {
            self.delivered_mstamp = now;
        }
        rs.acked_sacked = delivered;
        rs.delivered_ce = self.delivered_ce as i64 - rs.delivered_ce;
        rs.losses = lost;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval = -1;
            return;
        }
        rs.delivered = (self.delivered - rs.prior_delivered) as i64;
        rs.lost = (self.lost - rs.prior_lost).min(u32::MAX as u64) as u32;
        let snd = rs.interval;
        let ack_iv = (now - rs.prior_mstamp) as i64;
        rs.interval = snd.max(ack_iv);
        if min_rtt != u64::MAX && rs.interval < min_rtt as i64 {
            rs.interval = -1;
        } else if rs.interval > 0
            && (!rs.is_app_limited
                || rs.delivered as u128 * self.rate_interval as u128 >= self.rate_delivered as u128 * rs.interval as u128)
        {
            self.rate_delivered = rs.delivered as u64;
            self.rate_interval = rs.interval as u64;
        }
    }

    /// `tcp_rate_check_app_limited`, called when the sender found nothing to
    /// send with cwnd not full: the pipe is app-limited until what is in
    /// flight now is delivered.
    pub fn check_app_limited(&mut self, in_flight: u32) {
        if self.app_limited == 0 {
            self.app_limited = (self.delivered + in_flight as u64).max(1);
        }
    }

    /// Linux `tcpi_delivery_rate`: the reported sample, bit/s.
    pub fn delivery_rate_bps(&self) -> u64 {
        if self.rate_interval == 0 {
            return 0;
        }
        (self.rate_delivered as u128 * MSS as u128 * 8 * NS_PER_SEC as u128 / self.rate_interval as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::time::NS_PER_MS;

    /// A segment sent at `tx` ms in a flight that started at `first` ms,
    /// when `delivered` packets had been delivered by `at` ms.
    fn seg(tx: u64, first: u64, delivered: u64, at: u64) -> Seg {
        Seg {
            len: MSS,
            tx_time: tx * NS_PER_MS,
            first_tx: first * NS_PER_MS,
            delivered,
            delivered_mstamp: at * NS_PER_MS,
            ..Seg::default()
        }
    }

    #[test]
    fn a_sent_segment_remembers_the_delivery_state_and_an_empty_pipe_starts_a_flight() {
        let mut r =
            DeliveryRate { delivered: 7, delivered_ce: 2, first_tx_mstamp: 5, delivered_mstamp: 6, ..Default::default() };
        let mut s = Seg::default();
        r.skb_sent(100, false, 3, &mut s);
        assert_eq!((s.first_tx, s.delivered_mstamp, s.delivered, s.delivered_ce, s.app_limited), (5, 6, 7, 2, false));
        r.app_limited = 9;
        r.skb_sent(200, true, 1, &mut s);
        assert_eq!((s.first_tx, s.delivered_mstamp, s.app_limited), (200, 200, true));
    }

    #[test]
    fn a_sent_segment_remembers_the_flight_and_the_losses_so_far_and_the_sample_reports_them() {
        // tcp_set_tx_in_flight: 11 in flight before it, itself the 12th; tp->lost = 3 then
        let mut r = DeliveryRate { delivered: 7, lost: 3, delivered_mstamp: 6 * NS_PER_MS, ..Default::default() };
        let mut s = Seg::default();
        r.skb_sent(10 * NS_PER_MS, false, 12, &mut s);
        s.tx_time = 10 * NS_PER_MS;
        assert_eq!((s.tx_in_flight, s.tx_lost), (12, 3));
        // by its ACK 9 more were delivered and 2 more marked lost:
        // rs->tx_in_flight = 12, rs->prior_lost = 3, rs->lost = 5 - 3 = 2
        r.delivered = 16;
        r.lost = 5;
        let mut rs = RateSample::default();
        r.skb_delivered(&mut rs, &mut 0, &s, 20);
        r.gen(40 * NS_PER_MS, 1, 2, &mut rs, u64::MAX);
        assert_eq!((rs.tx_in_flight, rs.prior_lost, rs.lost, rs.losses, rs.delivered), (12, 3, 2, 2, 9));
        // no segment with timing state delivered: no sample, rs->lost stays 0
        let mut none = RateSample::default();
        r.gen(41 * NS_PER_MS, 0, 1, &mut none, u64::MAX);
        assert_eq!((none.tx_in_flight, none.lost, none.losses, none.delivered), (0, 0, 1, -1));
    }

    #[test]
    fn the_sample_follows_the_most_recently_sent_segment_the_ack_delivers() {
        let mut r = DeliveryRate::default();
        let mut rs = RateSample::default();
        let mut last_end_seq = 0;
        r.skb_delivered(&mut rs, &mut last_end_seq, &seg(30, 10, 4, 25), 8);
        r.skb_delivered(&mut rs, &mut last_end_seq, &seg(20, 10, 2, 15), 5);
        assert_eq!((rs.prior_delivered, rs.prior_mstamp, rs.interval), (4, 25 * NS_PER_MS, 20 * NS_PER_MS as i64));
        assert_eq!((last_end_seq, r.first_tx_mstamp), (9, 30 * NS_PER_MS));
        // a segment already counted when SACKed (delivered_mstamp cleared) gives nothing
        let mut done = seg(40, 10, 6, 35);
        done.delivered_mstamp = 0;
        r.skb_delivered(&mut rs, &mut last_end_seq, &done, 10);
        assert_eq!(rs.prior_delivered, 4);
    }

    #[test]
    fn the_interval_is_the_longer_of_send_and_ack_intervals_and_below_min_rtt_it_is_invalid() {
        // 10 packets: sent over 20 ms, acked over 50 ms since the snapshot at 30 ms: 10 / 50 ms
        let mut r = DeliveryRate { delivered: 14, ..Default::default() };
        let mut rs = RateSample::default();
        let mut last_end_seq = 0;
        r.skb_delivered(&mut rs, &mut last_end_seq, &seg(40, 20, 4, 30), 3);
        r.gen(80 * NS_PER_MS, 2, 1, &mut rs, 40 * NS_PER_MS);
        assert_eq!((rs.delivered, rs.interval, rs.acked_sacked, rs.losses), (10, 50 * NS_PER_MS as i64, 2, 1));
        assert_eq!((r.rate_delivered, r.rate_interval, r.delivered_mstamp), (10, 50 * NS_PER_MS, 80 * NS_PER_MS));
        assert_eq!(r.delivery_rate_bps(), 10 * 1448 * 8 * 20); // 10 segments per 50 ms
        // the same with min_rtt 60 ms: shorter than a round trip, no sample
        let mut rs2 = RateSample::default();
        r.skb_delivered(&mut rs2, &mut last_end_seq, &seg(41, 20, 4, 30), 3);
        r.gen(80 * NS_PER_MS, 2, 0, &mut rs2, 60 * NS_PER_MS);
        assert_eq!((rs2.delivered, rs2.interval), (10, -1));
        assert_eq!(r.rate_interval, 50 * NS_PER_MS, "the reported rate is unchanged");
    }

    #[test]
    fn an_app_limited_sample_replaces_the_reported_rate_only_if_it_is_higher() {
        let mut r = DeliveryRate { delivered: 14, rate_delivered: 10, rate_interval: 50 * NS_PER_MS, ..Default::default() };
        let mut lower = seg(40, 20, 9, 30); // 5 packets in 50 ms
        lower.app_limited = true;
        let mut rs = RateSample::default();
        r.skb_delivered(&mut rs, &mut 0, &lower, 3);
        r.gen(80 * NS_PER_MS, 1, 0, &mut rs, u64::MAX);
        assert!(rs.is_app_limited);
        assert_eq!((rs.delivered, r.rate_delivered), (5, 10));
        let mut higher = seg(40, 20, 0, 30); // 14 packets in 50 ms
        higher.app_limited = true;
        let mut rs = RateSample::default();
        r.skb_delivered(&mut rs, &mut 0, &higher, 3);
        r.gen(80 * NS_PER_MS, 1, 0, &mut rs, u64::MAX);
        assert_eq!((r.rate_delivered, r.rate_interval), (14, 50 * NS_PER_MS));
    }

    #[test]
    fn an_app_limited_period_ends_once_what_was_in_flight_is_delivered() {
        let mut r = DeliveryRate { delivered: 100, ..Default::default() };
        r.check_app_limited(20);
        assert_eq!(r.app_limited, 120);
        r.check_app_limited(5);
        assert_eq!(r.app_limited, 120, "a period already running keeps its end");
        r.delivered = 120;
        r.gen(NS_PER_MS, 0, 0, &mut RateSample::default(), u64::MAX);
        assert_eq!(r.app_limited, 120);
        r.delivered = 121;
        r.gen(NS_PER_MS, 1, 0, &mut RateSample::default(), u64::MAX);
        assert_eq!(r.app_limited, 0);
    }
}
