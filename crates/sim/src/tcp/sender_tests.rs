//! One event into the sender, exact values.

use super::*;
use crate::packet::SackBlock;
use crate::tcp::rtt::TIMEOUT_MIN_US;
use bloatlab_core::kernel::{nsecs_span_to_jiffies, timer_fire};
use bloatlab_core::cc::reno::Reno;
use bloatlab_core::cc::INFINITE_SSTHRESH;
use bloatlab_core::time::NS_PER_MS;

fn reno_sender() -> Sender {
    Sender::new(Box::new(Reno), None)
}

/// Start a Reno sender and ack its first `n` segments one by one, each 100 ms after sending.
fn warmed(n: u64) -> (Sender, Nanos) {
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    let mut now = 0;
    for i in 0..n {
        now = s.sb.segs[0].tx_time + 100 * NS_PER_MS;
        out.clear();
        s.on_ack(now, i + 1, &[], false, false, &mut out);
    }
    (s, now)
}

#[test]
fn the_initial_window_is_ten_segments() {
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    assert_eq!(out.len(), 10);
    assert_eq!(s.in_flight(), 10);
    assert_eq!(s.timer.map(|t| t.1), Some(TimerKind::Tlp));
}

#[test]
fn slow_start_sends_two_segments_per_segment_acked() {
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    out.clear();
    s.on_ack(100 * NS_PER_MS, 1, &[], false, false, &mut out);
    assert_eq!(s.w.cwnd, 11);
    assert_eq!(out.len(), 2);
    assert_eq!(s.rtt.srtt(), 100 * NS_PER_MS);
}

#[test]
fn rack_waits_a_quarter_min_rtt_before_marking_a_hole_lost_with_few_sacks() {
    // Segment 20 is lost; 21 is sacked. With sacked_out (1) below the
    // reordering degree (3) and no recovery, RACK's window is min_rtt/4 =
    // 25 ms: the hole is not lost yet, a REO timer is armed for the rest.
    let (mut s, now) = warmed(20);
    let (t20, t21) = (s.sb.segs[0].tx_time, s.sb.segs[1].tx_time);
    let at = now + NS_PER_MS;
    let mut out = Vec::new();
    s.on_ack(at, 20, &[SackBlock { start: 21, end: 22 }], false, false, &mut out);
    assert_eq!(s.sb.lost_out, 0);
    let (deadline, kind) = s.timer.unwrap();
    assert_eq!(kind, TimerKind::Reo);
    // remaining = rack_rtt + reo_wnd - (at - tx(20)) with rack_rtt = at - tx(21)
    //           = 25 ms - (tx(21) - tx(20)); the timer adds TCP_TIMEOUT_MIN_US (2 ms)
    //           before rounding up to jiffies, and the wheel (level 0) fires it one jiffy
    //           past its expiry.
    let when = nsecs_span_to_jiffies(25 * NS_PER_MS - (t21 - t20) + TIMEOUT_MIN_US * 1000);
    assert_eq!(deadline, timer_fire(at, when));
    // 201 ms (jiffy 50), the two sent in one burst: 27 ms -> 7 jiffies, expiry 57, tick 58
    assert_eq!((at, t21 - t20, when, deadline), (201 * NS_PER_MS, 0, 7, 232 * NS_PER_MS));
    // When it fires, the hole is lost and fast recovery retransmits it.
    out.clear();
    s.on_timer(deadline, &mut out);
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!(out.first().map(|t| (t.seq, t.retrans)), Some((20, true)));
}

#[test]
fn three_sacks_make_the_reordering_window_zero_and_start_recovery() {
    let (mut s, _) = warmed(20);
    let t23 = s.sb.segs[3].tx_time;
    let mut out = Vec::new();
    s.on_ack(t23 + 100 * NS_PER_MS, 20, &[SackBlock { start: 21, end: 24 }], false, false, &mut out);
    assert_eq!(s.sb.lost_out, 1);
    assert_eq!(s.ca_state, CaState::Recovery);
    // Reno: ssthresh = cwnd / 2.
    assert_eq!(s.w.ssthresh, s.prr.prior_cwnd / 2);
    assert_eq!(out[0].seq, 20);
    assert!(out[0].retrans);
}

#[test]
fn prr_sends_in_proportion_to_delivery_while_in_flight_exceeds_ssthresh() {
    // RFC 6937: sndcnt = ceil(prr_delivered * ssthresh / prior_cwnd) - prr_out.
    let mut s = reno_sender();
    s.prr.prior_cwnd = 40;
    s.w.ssthresh = 20;
    s.sb.packets_out = 40;
    s.prr.delivered = 0;
    s.prr.out = 1; // the fast retransmit
    s.cwnd_reduction(3, 0, false); // in flight 40 > ssthresh: proportional part
    // ceil(3 * 20 / 40) - 1 = 2 - 1 = 1 → cwnd = in_flight + 1
    assert_eq!(s.w.cwnd, 41);
    assert_eq!(s.prr.delivered, 3);
}

#[test]
fn prr_slow_start_reduction_bound_when_in_flight_is_below_ssthresh() {
    // delta = ssthresh - in_flight > 0: sndcnt = min(delta, max(prr_delivered - prr_out, acked) + 1).
    let mut s = reno_sender();
    s.prr.prior_cwnd = 40;
    s.w.ssthresh = 20;
    s.sb.packets_out = 15;
    s.prr.delivered = 10;
    s.prr.out = 8;
    s.cwnd_reduction(4, 0, true);
    // prr_delivered 14, max(14 - 8, 4) + 1 = 7, min(20 - 15, 7) = 5
    assert_eq!(s.w.cwnd, 20);
}

#[test]
fn the_rto_doubles_on_each_timeout_and_resets_with_a_new_rtt_sample() {
    let (mut s, now) = warmed(1);
    assert_eq!(s.rtt.rto, 300 * NS_PER_MS); // srtt 100 ms + rttvar 200 ms
    let mut out = Vec::new();
    // Force an RTO: everything outstanding is lost, cwnd = 1, backoff 1.
    s.timer = Some((now + s.rtt.rto, TimerKind::Rto));
    s.on_timer(now + s.rtt.rto, &mut out);
    assert_eq!(s.ca_state, CaState::Loss);
    assert_eq!(s.w.cwnd, 1);
    assert_eq!(out.len(), 1);
    // 600 ms = 150 jiffies from jiffy 100 (400 ms): the timer wheel's level 1 rounds the
    // expiry 250 up to bucket 256: 1.024 s
    let t1 = now + s.rtt.rto;
    assert_eq!(t1, 400 * NS_PER_MS);
    assert_eq!(s.timer, Some((1_024 * NS_PER_MS, TimerKind::Rto)));
    out.clear();
    s.on_timer(1_024 * NS_PER_MS, &mut out);
    // 1.2 s = 300 jiffies from 256: expiry 556, bucket 560: 2.24 s
    assert_eq!(s.timer, Some((2_240 * NS_PER_MS, TimerKind::Rto)));
    // tcp_enter_loss reduces ssthresh once per window: the first RTO halved
    // cwnd 11 to 5; the second (in Loss, icsk_retransmits 1) leaves it.
    assert_eq!(s.w.ssthresh, 5);
}

#[test]
fn a_tail_loss_probe_fires_two_srtt_after_the_last_send() {
    let (s, now) = warmed(1);
    // srtt 100 ms; more than one packet out: PTO = usecs_to_jiffies(2*srtt +
    // TCP_TIMEOUT_MIN_US) = 51 jiffies, capped by the time left to the head segment's RTO
    // (sent at 0, RTO 300 ms: 200 ms, 50 jiffies); armed in jiffy 25, expiry 75, fired by
    // the wheel (level 0) at tick 76: 304 ms.
    let (deadline, kind) = s.timer.unwrap();
    assert_eq!(kind, TimerKind::Tlp);
    assert_eq!(now, 100 * NS_PER_MS);
    assert_eq!(deadline, 304 * NS_PER_MS);
}

#[test]
fn a_rate_limited_application_writes_every_ten_ms_and_tcp_sends_no_more() {
    // 3 segments per 10 ms: 3 × 1448 B × 8 × 100 /s = 3.4752 Mbit/s
    let mut s = reno_sender();
    s.set_app_rate(3_475_200);
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    assert_eq!(out.len(), 3, "cwnd is 10 but the application gave 3 segments");
    assert_eq!(s.app_write(0), Some(10 * NS_PER_MS));
    out.clear();
    assert_eq!(s.app_write(10 * NS_PER_MS), Some(20 * NS_PER_MS));
    s.transmit(10 * NS_PER_MS, &mut out);
    assert_eq!(out.iter().map(|t| t.seq).collect::<Vec<_>>(), [3, 4, 5]);
    // a write late by 5 ms finds what the clock allows, no more
    out.clear();
    assert_eq!(s.app_write(25 * NS_PER_MS), Some(30 * NS_PER_MS));
    s.transmit(25 * NS_PER_MS, &mut out);
    assert_eq!(out.len(), 3);
}

#[test]
fn a_finite_rate_limited_flow_stops_writing_when_everything_is_written() {
    // 10 000 B at 8 Mbit/s: 10 000 B per 10 ms, so all of it at the first write
    let mut s = Sender::new(Box::new(Reno), Some(10_000));
    s.set_app_rate(8_000_000);
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    assert_eq!(s.app_write(0), None);
    assert_eq!(out.len(), 7, "6 full segments and the 1312-byte tail");
    assert_eq!(out[6].len, 10_000 - 6 * 1448);
}

#[test]
fn the_handshake_sample_seeds_the_rto_and_a_cwnd_of_one() {
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, Some(crate::tcp::handshake::Start { rtt: 200 * NS_PER_MS, cwnd_one: true }), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(s.rtt.srtt(), 200 * NS_PER_MS);
    // RTO = srtt + max(4·mdev, 200 ms) = 200 + 400 ms
    assert_eq!(s.rtt.rto, 600 * NS_PER_MS);
}

/// A BBR sender past its first 10 segments at `rate` bytes/s.
fn paced_bbr(rate: u64) -> Sender {
    let cc = bloatlab_core::cc::by_name_seeded("bbr", 1).unwrap();
    let mut s = Sender::new(cc, None);
    let mut out = Vec::new();
    s.start(0, Some(crate::tcp::handshake::Start { rtt: 40 * NS_PER_MS, cwnd_one: false }), &mut out);
    s.w.cwnd = 1000;
    s.w.pacing_rate = rate;
    s.data_segs_out = 100;
    s.pacer.wstamp = 0;
    s
}

#[test]
fn a_paced_sender_sends_tso_bursts_of_one_ms_of_data_and_paces_between_them() {
    // 100 Mbit/s = 12.5 MB/s: 12 207 B per ms (>> 10) = 8 segments of 1448 B (min_rtt 40 ms adds nothing)
    let mut s = paced_bbr(12_500_000);
    assert_eq!(s.tso_segs(), 8);
    let mut out = Vec::new();
    s.transmit(0, &mut out);
    assert_eq!(out.len(), 8, "one burst, back to back");
    // the next burst may leave 8 × 1448 B (its payload) at 12.5 MB/s later, minus up to half as idle credit (none here)
    assert_eq!(s.pacing_wakeup(0), Some(8 * 1448 * NS_PER_SEC / 12_500_000));
    out.clear();
    s.transmit(s.pacer.wstamp - 1, &mut out);
    assert!(out.is_empty());
    s.transmit(s.pacer.wstamp, &mut out);
    assert_eq!(out.len(), 8);
}

#[test]
fn slow_pacing_sends_the_controls_minimum_burst_and_tso_off_sends_one() {
    // 20 Mbit/s: 2 441 B per ms = 1 segment, BBR's minimum is 2 above 1.2 Mbit/s
    let mut s = paced_bbr(2_500_000);
    assert_eq!(s.tso_segs(), 2);
    // below 1.2 Mbit/s BBR asks for 1
    s.w.pacing_rate = 100_000;
    assert_eq!(s.tso_segs(), 1);
    let mut s = paced_bbr(12_500_000);
    s.tso = false;
    let mut out = Vec::new();
    s.transmit(0, &mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn an_on_off_application_writes_only_in_its_on_ticks() {
    // 3 segments per 10 ms, on for 20 ms (2 ticks), off for 30 ms (3 ticks)
    let mut s = reno_sender();
    s.set_app_rate(3_475_200);
    s.set_app_onoff(20 * NS_PER_MS, 30 * NS_PER_MS);
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    let written = |s: &mut Sender, ms: u64| {
        s.app_write(ms * NS_PER_MS);
        s.app_segs
    };
    assert_eq!([0, 10, 20, 30, 40, 50, 60, 70].map(|t| written(&mut s, t)), [3, 6, 6, 6, 6, 9, 12, 12]);
    assert_eq!(app_ticks(10, None), 10);
    assert_eq!(app_ticks(10, Some((2, 3))), 4);
}

/// A Reno sender whose application wrote 3 segments at 0 (acked at 100 ms)
/// and writes again `idle_ms` after its first write; cwnd 80, ssthresh 50.
fn idle_then_write(cc: &str, idle_ms: u64) -> Sender {
    let mut s = Sender::new(bloatlab_core::cc::by_name_seeded(cc, 1).unwrap(), None);
    s.set_app_rate(3_475_200);
    s.set_app_onoff(10 * NS_PER_MS, (idle_ms - 10) * NS_PER_MS);
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    for i in 0..3 {
        s.on_ack(100 * NS_PER_MS, i + 1, &[], false, false, &mut out);
    }
    assert_eq!(s.sb.packets_out, 0);
    assert_eq!(s.rtt.rto, 300 * NS_PER_MS, "srtt 100 ms + 200 ms");
    s.w.cwnd = 80;
    s.w.ssthresh = 50;
    s.app_write(idle_ms * NS_PER_MS);
    s
}

#[test]
fn writing_after_more_than_an_rto_of_silence_restarts_slow_start() {
    // tcp_cwnd_restart: 450 ms since the last send is 1.5 RTO: cwnd halves once (80 -> 40),
    // ssthresh keeps 3/4 of the old cwnd (tcp_current_ssthresh: max(50, 40 + 20))
    let s = idle_then_write("reno", 450);
    assert_eq!((s.w.cwnd, s.w.ssthresh, s.restarts), (40, 60, 1));
    // 1010 ms = 3.4 RTO: halved three times, but never below the initial window (80 -> 10)
    let s = idle_then_write("reno", 1010);
    assert_eq!((s.w.cwnd, s.restarts), (10, 1));
    // 250 ms is less than an RTO: nothing happens
    let s = idle_then_write("reno", 250);
    assert_eq!((s.w.cwnd, s.w.ssthresh, s.restarts), (80, 50, 0));
    // BBR has its own cong_control: exempt (tcp_slow_start_after_idle_check)
    let s = idle_then_write("bbr", 1010);
    assert_eq!(s.restarts, 0);
}

#[test]
fn an_unpaced_control_reports_linuxs_pacing_rate_200_percent_in_slow_start() {
    // tcp_update_pacing_rate after the first ACK: cwnd 11, srtt 100 ms (800 000 in µs << 3),
    // ssthresh infinite: 1448 * (10 000 << 3) * 200 * 11 / 800 000 = 318 560 B/s (2 x 11 x 1448 B / 0.1 s).
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    out.clear();
    s.on_ack(100 * NS_PER_MS, 1, &[], false, false, &mut out);
    assert_eq!(s.w.pacing_rate, 318_560);
    assert_eq!(s.pacing_rate_bps(), 318_560 * 8);
    assert_eq!(out.len(), 2, "Reno is not paced: both segments leave at once");
}

#[test]
fn congestion_avoidance_paces_at_120_percent_and_a_pacing_flow_waits_its_turn() {
    // cwnd 20 >= ssthresh/2 = 10: 1448 * 80 000 * 120 * max(cwnd, packets_out) / srtt.
    let mut s = reno_sender();
    s.pacing = true;
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    assert_eq!(out.len(), 10, "no pacing before the first RTT sample and the first 10 segments");
    s.w.ssthresh = 20;
    s.w.cwnd = 20;
    out.clear();
    s.on_ack(100 * NS_PER_MS, 1, &[], false, false, &mut out);
    let cwnd = s.w.cwnd.max(s.sb.packets_out) as u64;
    assert_eq!(s.w.pacing_rate, 1448 * 80_000 * 120 * cwnd / 800_000);
    // Paced: one TSO burst now (tcp_tso_autosize at this rate is its 2-segment minimum), the rest later.
    assert_eq!(out.len(), 2);
    assert!(s.pacing_wakeup(100 * NS_PER_MS).is_some_and(|t| t > 100 * NS_PER_MS));
}

#[test]
fn the_initial_window_starts_a_flight_so_its_first_ack_gives_a_rate_sample() {
    // tcp_rate_skb_sent with packets_out = 0: first_tx_mstamp = delivered_mstamp = the send time.
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(NS_PER_MS, None, &mut out);
    assert_eq!(out.len(), 10);
    assert_eq!((s.sb.segs[0].first_tx, s.sb.segs[0].delivered_mstamp), (NS_PER_MS, NS_PER_MS));
    assert_eq!((s.sb.segs[9].first_tx, s.sb.segs[9].delivered_mstamp), (NS_PER_MS, NS_PER_MS));
    out.clear();
    s.on_ack(101 * NS_PER_MS, 2, &[], false, false, &mut out);
    // 2 segments over the 100 ms since the flight started
    assert_eq!((s.rate.rate_delivered, s.rate.rate_interval), (2, 100 * NS_PER_MS));
}

#[test]
fn a_segment_sent_into_an_empty_pipe_starts_a_new_flight_and_a_retransmission_does_not() {
    // everything acked at 100 ms; the application writes again at 1010 ms: the flight starts then,
    // not at the last ACK (the idle second is no part of the next rate sample's interval)
    let mut s = idle_then_write("reno", 1010);
    let t = 1010 * NS_PER_MS;
    let mut out = Vec::new();
    s.transmit(t, &mut out);
    let first = out.first().map(|x| x.seq).expect("a new segment");
    assert_eq!((s.sb.seg(first).first_tx, s.sb.seg(first).delivered_mstamp), (t, t));
    // a retransmission of it keeps the flight's start (packets_out counts it)
    let rtx = s.on_sent(t + 300 * NS_PER_MS, first, true);
    assert!(rtx.retrans);
    assert_eq!((s.sb.seg(first).first_tx, s.sb.seg(first).delivered_mstamp), (t, t));
}

#[test]
fn each_segment_records_the_flight_it_joined_and_the_losses_so_far() {
    // tcp_set_tx_in_flight: the initial window's i-th segment leaves with i in flight.
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    let flights: Vec<(u32, u64)> = s.sb.segs.iter().map(|g| (g.tx_in_flight, g.tx_lost)).collect();
    assert_eq!(flights, (1..=10).map(|i| (i, 0)).collect::<Vec<_>>());
    // 30 in flight (20..49): the write queue's first skb (45 segments) took the segment its last chunk lacked
    // from the next skb (tcp_grow_skb), whose rest ends at 90; 21-23 SACKed and 20 marked lost leave 26 in
    // flight; the retransmission of 20 joins them as the 27th, with tp->lost = 1.
    let (mut s, _) = warmed(20);
    assert_eq!((s.in_flight(), s.sb.nxt, s.skb_end), (30, 50, 90));
    let t23 = s.sb.segs[3].tx_time;
    s.on_ack(t23 + 100 * NS_PER_MS, 20, &[SackBlock { start: 21, end: 24 }], false, false, &mut out);
    assert_eq!(s.lost_total(), 1);
    assert!(s.sb.segs[0].retrans);
    assert_eq!((s.sb.segs[0].tx_in_flight, s.sb.segs[0].tx_lost), (27, 1));
}

/// `warmed(1)` (11 in flight, 1..=11, cwnd 11), then its RTO fires; returns the RTO's time.
fn after_rto() -> (Sender, Nanos) {
    let (mut s, now) = warmed(1);
    let t = now + s.rtt.rto;
    s.timer = Some((t, TimerKind::Rto));
    s.on_timer(t, &mut Vec::new());
    (s, t)
}

#[test]
fn frto_undoes_an_rto_once_never_retransmitted_data_is_acked() {
    // The RTO marks all 11 lost, ssthresh 5, and F-RTO retransmits only segment 1.
    let (mut s, t) = after_rto();
    let mut out = Vec::new();
    assert_eq!((s.ca_state, s.w.cwnd, s.w.ssthresh, s.sb.lost_out), (CaState::Loss, 1, 5, 11));
    assert!(s.undo.frto);
    assert_eq!((s.undo.marker, s.undo.retrans, s.undo.prior_ssthresh), (Some(1), 1, INFINITE_SSTHRESH));
    // The originals were only late: the ACK of 1 and 2 acks segment 2, never
    // retransmitted and sent before the RTO (FLAG_ORIG_SACK_ACKED): undo.
    s.on_ack(t + 10 * NS_PER_MS, 3, &[], false, false, &mut out);
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!((s.sb.lost_out, s.undo.marker), (0, None));
    // ssthresh back to infinity; cwnd = Reno's undo max(cwnd 1, prior_cwnd 11),
    // then slow start adds the 2 segments acked: 13.
    assert_eq!((s.w.ssthresh, s.w.cwnd), (INFINITE_SSTHRESH, 13));
    assert_eq!(s.retrans_segs, 1, "only the F-RTO probe was retransmitted");
}

#[test]
fn frto_sends_new_data_after_the_first_ack_and_a_sack_of_it_proves_the_loss_real() {
    let (mut s, t) = after_rto();
    let mut out = Vec::new();
    // Step 2.b: the ACK covers only the retransmitted segment 1: new data
    // (12, 13: cwnd 2 after slow start) goes out instead of retransmissions.
    s.on_ack(t + 100 * NS_PER_MS, 2, &[], false, false, &mut out);
    assert_eq!(s.ca_state, CaState::Loss);
    assert_eq!(s.high_seq, 12);
    assert!(out.iter().all(|x| !x.retrans), "{out:?}");
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![12, 13]);
    // Step 3.a: a SACK of new data without 2 acked: the loss was real,
    // F-RTO ends and the lost segments are retransmitted.
    out.clear();
    s.on_ack(t + 200 * NS_PER_MS, 2, &[SackBlock { start: 12, end: 13 }], false, false, &mut out);
    assert!(!s.undo.frto);
    assert_eq!(s.ca_state, CaState::Loss);
    assert!(out.first().is_some_and(|x| x.retrans && x.seq == 2), "{out:?}");
}

#[test]
fn a_dsack_of_the_only_fast_retransmission_undoes_the_recovery() {
    // 30 in flight (20..49), cwnd 30; 21-23 SACKed: 20 lost and retransmitted.
    let (mut s, _) = warmed(20);
    let t23 = s.sb.segs[3].tx_time;
    let mut out = Vec::new();
    s.on_ack(t23 + 100 * NS_PER_MS, 20, &[SackBlock { start: 21, end: 24 }], false, false, &mut out);
    assert_eq!((s.ca_state, s.w.ssthresh, s.undo.retrans), (CaState::Recovery, 15, 1));
    // The original 20 arrives after all: the ACK to 24 D-SACKs the retransmission.
    out.clear();
    s.on_ack(t23 + 110 * NS_PER_MS, 24, &[SackBlock { start: 20, end: 21 }], true, false, &mut out);
    assert_eq!((s.undo.retrans, s.undo.marker), (0, None));
    assert_eq!(s.ca_state, CaState::Open);
    // ssthresh back to infinity, cwnd to Reno's max(cwnd, prior_cwnd 30),
    // and slow start again for the one segment newly delivered (21-23 were
    // counted when SACKed): 31. (Linux 6.x also counts the D-SACKed
    // duplicate as delivered, `tcp_dsack_seen`'s sack_delivered: 32; the
    // simulator does not, see undo.rs.)
    assert_eq!((s.w.ssthresh, s.w.cwnd), (INFINITE_SSTHRESH, 31));
}

/// A paced BBR sender at 20 Mbit/s (2-segment bursts) with segments 0-19
/// sent in ten bursts, then an ACK of 0-3 that SACKs 5-7 and 10-19: segment
/// 4 lost alone (its burst-mate 5 arrived), 8 and 9 lost together.
fn paced_with_holes() -> (Sender, Nanos, Vec<Tx>) {
    let mut s = paced_bbr(2_500_000);
    let mut out = Vec::new();
    while s.sb.nxt < 20 {
        let t = s.pacer.wstamp;
        s.transmit(t, &mut out);
    }
    assert_eq!((s.sb.segs[8].tx_time, s.sb.segs[4].tx_time == s.sb.segs[5].tx_time), (s.sb.segs[9].tx_time, true));
    let at = 50 * NS_PER_MS;
    out.clear();
    let sacks = [SackBlock { start: 5, end: 8 }, SackBlock { start: 10, end: 20 }];
    s.on_ack(at, 4, &sacks, false, false, &mut out);
    (s, at, out)
}

#[test]
fn a_lost_segment_whose_burst_mate_was_sacked_is_retransmitted_alone_then_paced() {
    // Linux: SACK tagging split the skb, so 4 is a 1-segment skb; each skb
    // waits for its own pacing slot (tcp_pacing_check in tcp_xmit_retransmit_queue).
    let (mut s, at, out) = paced_with_holes();
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!(s.sb.lost_out, 3);
    assert_eq!(out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(4, true)]);
    // its successor leaves 1448 B (its payload) at 2.5 MB/s later, minus up to half as credit
    let next = s.pacing_wakeup(at).expect("paced");
    assert!(next > at && next <= at + 1448 * NS_PER_SEC / 2_500_000);
    let mut out = Vec::new();
    s.transmit(next - 1, &mut out);
    assert!(out.is_empty());
    // 8 and 9 left in one burst and are both lost: one skb, one burst
    s.transmit(next, &mut out);
    assert_eq!(out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(8, true), (9, true)]);
}

#[test]
fn psh_marks_the_last_segment_of_every_multi_segment_skb_and_no_single_one() {
    // __tcp_transmit_skb: tcp_skb_pcount(skb) > 1 → PSH, which GSO puts on the last segment
    let psh = |out: &[Tx]| out.iter().filter(|t| t.psh).map(|t| t.seq).collect::<Vec<_>>();
    // 100 Mbit/s paced: bursts of 8, PSH on the 8th
    let mut s = paced_bbr(12_500_000);
    let mut out = Vec::new();
    s.transmit(0, &mut out);
    assert_eq!((out.len(), psh(&out)), (8, vec![out[7].seq]));
    // BBR below 1.2 Mbit/s: one-segment skbs, no PSH (a bulk sender's writes never end)
    let mut s = paced_bbr(100_000);
    let mut out = Vec::new();
    s.transmit(0, &mut out);
    assert_eq!((out.len(), psh(&out)), (1, vec![]));
    // a retransmitted skb of two segments carries it on its second, one of one segment not at all
    let (mut s, _, out) = paced_with_holes();
    assert_eq!(psh(&out), Vec::<u64>::new(), "4, alone");
    let mut out = Vec::new();
    s.transmit(s.pacing_wakeup(0).unwrap(), &mut out);
    assert_eq!(psh(&out), vec![9], "8 and 9, one skb");
}

#[test]
fn a_sized_transfer_pushes_its_last_segment_even_alone() {
    // tcp_push marks the write queue's tail at the end of what the application wrote
    let mut s = Sender::new(Box::new(Reno), Some(3 * MSS as u64));
    s.tso = false;
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    assert_eq!(out.iter().map(|t| (t.seq, t.psh)).collect::<Vec<_>>(), vec![(0, false), (1, false), (2, true)]);
}

#[test]
fn new_data_never_shares_a_burst_with_a_retransmission() {
    let (mut s, _, _) = paced_with_holes();
    let mut out = Vec::new();
    let t = s.pacing_wakeup(0).unwrap();
    s.transmit(t, &mut out);
    assert_eq!(out.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![8, 9]);
    out.clear();
    let t = s.pacing_wakeup(t).unwrap();
    s.transmit(t, &mut out);
    // then new data from snd_nxt (20), in a burst of its own
    assert_eq!(out.iter().map(|t| (t.seq, t.retrans)).collect::<Vec<_>>(), vec![(20, false), (21, false)]);
}

#[test]
fn the_sender_stops_at_the_edge_of_the_receivers_window_and_goes_on_when_it_opens() {
    let mut s = reno_sender();
    s.snd_wnd = 5 * MSS as u64;
    let mut out = Vec::new();
    // the handshake's RTT (100 ms, as the ACKs below): TSO deferral expects no ACK before then
    s.start(0, Some(crate::tcp::handshake::Start { rtt: 100 * NS_PER_MS, cwnd_one: false }), &mut out);
    assert_eq!(out.len(), 5, "cwnd 10, but only 5 segments fit in the window");
    // segments 0 and 1 acked, same window: snd_una + 5 segments = up to segment 6
    out.clear();
    s.on_window(2, 5 * MSS, 7, None);
    s.on_ack(100 * NS_PER_MS, 2, &[], false, false, &mut out);
    // limited by the window, not by cwnd: slow start grows cwnd only while
    // cwnd < 2 x the most in flight (tcp_is_cwnd_limited), 10 < 2 x 5 is false
    assert_eq!(s.w.cwnd, 10);
    // segment 5 ends the skb it began in and takes 6 from the next 2-segment skb (half the window; tcp_grow_skb);
    // 7 does not fit in the window
    assert_eq!(out.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![5, 6]);
    assert_eq!(s.ts_recent, Some(7));
    // a duplicate ACK offering less is ignored, one offering more is taken
    s.on_window(2, 3 * MSS, 8, None);
    assert_eq!(s.snd_wnd, 5 * MSS as u64);
    out.clear();
    s.on_window(2, 12 * MSS, 9, None);
    s.on_ack(101 * NS_PER_MS, 2, &[], false, false, &mut out);
    assert_eq!(s.snd_wnd, 12 * MSS as u64);
    // 7 (the rest of 5's skb) takes what its chunk lacks from the next 6-segment skb (half the window,
    // tcp_grow_skb); 11, in the rest of that skb, waits: one segment of cwnd left, less than a chunk, the
    // oldest segment's ACK due now (tcp_tso_should_defer)
    assert_eq!(out.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![7, 8, 9, 10], "now cwnd limits");
}

#[test]
fn a_tail_loss_probe_retransmits_when_the_window_has_no_room_for_new_data() {
    let mut s = reno_sender();
    s.snd_wnd = 10 * MSS as u64;
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    assert_eq!(out.len(), 10);
    let (t, kind) = s.timer.unwrap();
    assert_eq!(kind, TimerKind::Tlp);
    out.clear();
    s.on_timer(t, &mut out);
    assert_eq!(out.len(), 1);
    assert!(out[0].retrans && out[0].seq == 9, "the last segment again, not segment 10");
}

#[test]
fn the_end_of_a_cwnd_reduction_sets_cwnd_to_ssthresh_but_leaves_bbrs_alone() {
    // Linux tcp_end_cwnd_reduction: CWR (or a recovery with undo_marker set)
    // ends with cwnd = ssthresh, unless the control has its own cong_control.
    let (mut reno, now) = warmed(10);
    reno.w.cwnd = 50;
    reno.w.ssthresh = 20;
    reno.ca_state = CaState::Cwr;
    reno.end_cwnd_reduction(now);
    assert_eq!(reno.w.cwnd, 20);
    // BBR after DRAIN: ssthresh = one BDP + budget (here 20), cwnd 50
    let mut bbr = paced_bbr(2_500_000);
    bbr.w.cwnd = 50;
    bbr.w.ssthresh = 20;
    bbr.ca_state = CaState::Cwr;
    bbr.end_cwnd_reduction(now);
    assert_eq!(bbr.w.cwnd, 50);
    bbr.ca_state = CaState::Recovery;
    bbr.undo.marker = Some(0);
    bbr.end_cwnd_reduction(now);
    assert_eq!(bbr.w.cwnd, 50);
}

/// The TSval (ms) a segment sent at `t` carries (`tcp_skb_timestamp_ts`).
fn ts(t: Nanos) -> u32 {
    bloatlab_core::kernel::tcp_clock_ms(t)
}

/// `warmed(20)` (30 in flight, 20..49, cwnd 30), then an ACK that SACKs
/// 21-23: 20 is lost and fast-retransmitted. Returns the original 20's send
/// time and the retransmission's.
fn fast_retransmitted_20() -> (Sender, Nanos, Nanos) {
    let (mut s, _) = warmed(20);
    let (t20, t23) = (s.sb.segs[0].tx_time, s.sb.segs[3].tx_time);
    let at = t23 + 100 * NS_PER_MS;
    let mut out = Vec::new();
    s.on_window(20, u32::MAX, 1, Some(ts(t23)));
    s.on_ack(at, 20, &[SackBlock { start: 21, end: 24 }], false, false, &mut out);
    assert_eq!((s.ca_state, s.w.ssthresh, s.sb.retrans_out), (CaState::Recovery, 15, 1));
    assert_eq!(out.first().map(|x| (x.seq, x.retrans)), Some((20, true)));
    (s, t20, at)
}

#[test]
fn the_first_retransmission_stamps_the_episode_in_ms() {
    let (s, _, at) = fast_retransmitted_20();
    assert_eq!(s.undo.retrans_stamp, Some(ts(at)));
}

#[test]
fn a_partial_ack_echoing_the_original_undoes_the_recovery_at_once() {
    // The original 20 was only delayed (150 ms, past min_rtt): the ACK to 24
    // echoes its TSval, older than the retransmission's (retrans_stamp).
    // tcp_try_undo_partial: nothing retransmitted is in flight any more, so
    // the reduction is undone, LOST marks cleared, Open again.
    let (mut s, t20, at) = fast_retransmitted_20();
    let rack_before = s.rack.mstamp;
    let mut out = Vec::new();
    s.on_window(24, u32::MAX, 2, Some(ts(t20)));
    s.on_ack(at + 150 * NS_PER_MS, 24, &[], false, false, &mut out);
    assert_eq!((s.ca_state, s.undo.marker, s.sb.lost_out), (CaState::Open, None, 0));
    // ssthresh back to infinity (prior_ssthresh); cwnd Reno's undo
    // max(cwnd, prior_cwnd 30), then slow start for 20, newly delivered: 31
    assert_eq!((s.w.ssthresh, s.w.cwnd), (INFINITE_SSTHRESH, 31));
    // tcp_retrans_stamp_cleanup: the head (24) was never retransmitted
    assert_eq!(s.undo.retrans_stamp, None);
    // tcp_skb_spurious_retrans: RACK did not take the retransmission's send
    // time (which would have made 24..49 look lost), it kept 23's
    assert_eq!(s.rack.mstamp, rack_before);
    assert!(out.iter().all(|x| !x.retrans), "{out:?}");
}

#[test]
fn a_partial_ack_echoing_the_retransmission_itself_keeps_the_recovery() {
    // The same ACK, but it echoes the retransmission's own TSval: the hole
    // was filled by the retransmission, no undo.
    let (mut s, _, at) = fast_retransmitted_20();
    let mut out = Vec::new();
    s.on_window(24, u32::MAX, 2, Some(ts(at)));
    s.on_ack(at + 100 * NS_PER_MS, 24, &[], false, false, &mut out);
    assert_eq!((s.ca_state, s.w.ssthresh), (CaState::Recovery, 15));
    assert!(s.undo.marker.is_some());
    assert_eq!(s.undo.retrans_stamp, Some(ts(at)));
}

#[test]
fn a_partial_ack_with_a_retransmission_still_in_flight_holds_recovery_and_retransmits_nothing() {
    // 20 and 24 lost (21-23 and 25-27 SACKed): both marked, PRR lets 20 go.
    let (mut s, _) = warmed(20);
    let (t20, t24, t27) = (s.sb.segs[0].tx_time, s.sb.segs[4].tx_time, s.sb.segs[7].tx_time);
    let at = t27 + 100 * NS_PER_MS;
    let mut out = Vec::new();
    let sacks = [SackBlock { start: 21, end: 24 }, SackBlock { start: 25, end: 28 }];
    s.on_window(20, u32::MAX, 1, Some(ts(t27)));
    s.on_ack(at, 20, &sacks, false, false, &mut out);
    assert_eq!((s.ca_state, s.sb.lost_out), (CaState::Recovery, 2));
    let rtx: Vec<u64> = out.iter().filter(|x| x.retrans).map(|x| x.seq).collect();
    assert_eq!(rtx, vec![20, 24]);
    // The original 20 arrives: ACK to 24 echoing its TSval. 24's
    // retransmission is still out: recovery holds (no undo yet), and this
    // ACK sends no retransmission (REXMIT_NONE).
    let (cwnd, ssthresh) = (s.w.cwnd, s.w.ssthresh);
    out.clear();
    s.on_window(24, u32::MAX, 2, Some(ts(t20)));
    s.on_ack(at + 10 * NS_PER_MS, 24, &[SackBlock { start: 25, end: 28 }], false, false, &mut out);
    assert_eq!((s.ca_state, s.w.ssthresh, s.sb.retrans_out), (CaState::Recovery, ssthresh, 1));
    assert!(s.undo.marker.is_some());
    assert!(out.iter().all(|x| !x.retrans), "{out:?}");
    assert!(s.w.cwnd <= cwnd, "no undo: cwnd {} was {cwnd}", s.w.cwnd);
    // Then the original 24 arrives too: nothing retransmitted is in flight
    // any more, and the echo (24's original TSval) predates the stamp: undo.
    out.clear();
    s.on_window(28, u32::MAX, 3, Some(ts(t24)));
    s.on_ack(at + 20 * NS_PER_MS, 28, &[], false, false, &mut out);
    assert_eq!((s.ca_state, s.w.ssthresh, s.undo.marker), (CaState::Open, INFINITE_SSTHRESH, None));
}

#[test]
fn rexmit_none_sends_new_data_only_and_only_once() {
    // tcp_xmit_recovery with REXMIT_NONE: tcp_data_snd_check sends new data,
    // the lost segment waits for the next ACK's REXMIT_LOST.
    let (mut s, now) = warmed(20);
    assert!(s.sb.mark_lost(25));
    s.w.cwnd = 40;
    s.undo.rexmit_none = true;
    let mut out = Vec::new();
    s.xmit_recovery(now, &mut out);
    assert!(!out.is_empty() && out.iter().all(|x| !x.retrans), "{out:?}");
    assert!(!s.undo.rexmit_none);
    out.clear();
    s.w.cwnd += 1;
    s.xmit_recovery(now, &mut out);
    assert_eq!(out.first().map(|x| (x.seq, x.retrans)), Some((25, true)));
}

#[test]
fn an_rto_whose_first_ack_echoes_the_original_is_undone_by_the_timestamp() {
    // Eifel (RFC 3522) in tcp_try_undo_loss: the ACK of segment 1 echoes the
    // TSval of the original 1, older than the RTO's retransmission of it.
    let (mut s, t) = after_rto();
    assert_eq!(s.undo.retrans_stamp, Some(ts(t)));
    let t1 = 0; // segment 1 left at 0 with the initial window
    let mut out = Vec::new();
    s.on_window(2, u32::MAX, 3, Some(ts(t1) + 1));
    s.on_ack(t + 10 * NS_PER_MS, 2, &[], false, false, &mut out);
    assert_eq!((s.ca_state, s.sb.lost_out, s.undo.marker), (CaState::Open, 0, None));
    // Reno's undo max(cwnd 1, prior_cwnd 11), slow start for the 1 acked: 12
    assert_eq!((s.w.ssthresh, s.w.cwnd), (INFINITE_SSTHRESH, 12));
    assert_eq!(s.retrans_segs, 1);
}

#[test]
fn an_ack_of_a_retransmitted_segment_takes_its_rtt_from_the_timestamp_echo_in_whole_ms() {
    // Karn's rule forbids a sample from the ACK of the RTO's retransmission
    // (sent at 400 ms); its echo gives one (RFC 7323 RTTM): the ACK at
    // 560.4 ms echoes TSval 400: 160 ms, not 160.4.
    let (mut s, t) = after_rto();
    assert_eq!((t, s.backoff, s.rtt.srtt()), (400 * NS_PER_MS, 1, 100 * NS_PER_MS));
    let mut out = Vec::new();
    s.on_window(2, u32::MAX, 3, Some(ts(t)));
    s.on_ack(t + 160_400_000, 2, &[], false, false, &mut out);
    // srtt = 100 + (160 - 100) / 8 = 107.5 ms; the backoff ends with the sample
    assert_eq!((s.rtt.srtt(), s.backoff), (107_500 * NS_PER_US, 0));
    assert_eq!(s.rtt_samples_ns.last_ms(), Some(160.0));
    assert_eq!(s.ca_state, CaState::Loss, "the echo is the retransmission's: no undo");
    // the same ACK without a timestamp option: no sample, the backoff stays
    let (mut s, t) = after_rto();
    s.on_window(2, u32::MAX, 3, None);
    s.on_ack(t + 160_400_000, 2, &[], false, false, &mut out);
    assert_eq!((s.rtt.srtt(), s.backoff), (100 * NS_PER_MS, 1));
}

#[test]
fn the_sender_keeps_the_newest_tsval_and_the_ack_echo() {
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, None, &mut out);
    s.on_window(0, 10 * MSS, 50, Some(40));
    assert_eq!((s.ts_recent, s.rcv_tsecr), (Some(50), Some(40)));
    // an older TSval (reordered ACK) fails tcp_paws_check: ts_recent stays
    s.on_window(0, 10 * MSS, 49, Some(41));
    assert_eq!((s.ts_recent, s.rcv_tsecr), (Some(50), Some(41)));
    // the 32-bit clock wraps: u32::MAX is older than 3
    let mut s = reno_sender();
    s.start(0, None, &mut out);
    s.on_window(0, 10 * MSS, u32::MAX, None);
    s.on_window(0, 10 * MSS, 3, None);
    assert_eq!(s.ts_recent, Some(3));
}

/// `tcp_tso_should_defer` (Linux 6.18), one decision at a time: a Reno sender in
/// congestion avoidance, cwnd 30, srtt 8 ms, segments 0-27 in flight (two of
/// room), the oldest sent at 0, chunks of 4 segments, bulk data (45-segment skbs).
#[test]
fn tso_deferral_waits_for_a_fuller_chunk_only_while_an_ack_is_due_within_a_millisecond() {
    use crate::tcp::output::Defer;
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, Some(crate::tcp::handshake::Start { rtt: 8 * NS_PER_MS, cwnd_one: false }), &mut out);
    s.w.cwnd = 30;
    s.w.ssthresh = 20;
    while s.sb.nxt < 28 {
        s.sb.push_new(MSS);
    }
    for g in s.sb.segs.iter_mut() {
        g.tx_time = 0;
    }
    let (segs, tail) = s.send_head_skb();
    assert_eq!((segs, tail), (17, false), "the rest of the write queue's first skb (0-44)");
    let t = 7_500_000; // 7.5 ms: the oldest segment's ACK is due in 0.5 ms (< min(srtt/2, 1 ms))
    s.pacer.wstamp = t - 500_000; // the last write 0.5 ms ago
    // two of room: less than a chunk (4), than the skb's rest, than a third of cwnd (10)
    assert_eq!(s.tso_should_defer(t, segs, tail, 4), Defer::Cwnd);
    // a chunk's room: send
    assert_eq!(s.tso_should_defer(t, segs, tail, 2), Defer::No);
    // the ACK due in 1.5 ms, later than 1 ms: send now
    assert_eq!(s.tso_should_defer(t - 1_000_000, segs, tail, 4), Defer::No);
    // the last write over 1 ms ago: send now
    s.pacer.wstamp = t - 1_000_001;
    assert_eq!(s.tso_should_defer(t, segs, tail, 4), Defer::No);
    s.pacer.wstamp = t;
    // the rest of a split skb that fits: send
    assert_eq!(s.tso_should_defer(t, 2, false, 4), Defer::No);
    // in recovery: send
    s.ca_state = bloatlab_core::cc::CaState::Recovery;
    assert_eq!(s.tso_should_defer(t, segs, tail, 4), Defer::No);
    s.ca_state = bloatlab_core::cc::CaState::Open;
    // the receiver's window limits (one segment of it left): wait for it
    s.snd_wnd = 29 * MSS as u64;
    assert_eq!(s.tso_should_defer(t, segs, tail, 4), Defer::Other);
}

#[test]
fn sack_blocks_repeated_by_later_acks_tag_only_what_they_newly_cover() {
    // Segment 20 is the hole; the receiver's block grows on both sides from
    // ACK to ACK (22-23, then 21-24 and a second block 26), as Linux's
    // recv_sack_cache sees it: only 21, 24 and 26 are new the second time.
    let (mut s, now) = warmed(20);
    assert!(s.sb.nxt >= 27);
    let mut out = Vec::new();
    let d0 = s.rate.delivered;
    s.on_ack(now + NS_PER_MS, 20, &[SackBlock { start: 22, end: 24 }], false, false, &mut out);
    assert_eq!((s.rate.delivered - d0, s.sb.sacked_out), (2, 2));
    assert_eq!(s.sb.sack_cache, [(22, 24), (0, 0), (0, 0)]);
    let sacks = [SackBlock { start: 26, end: 27 }, SackBlock { start: 21, end: 25 }];
    s.on_ack(now + 2 * NS_PER_MS, 20, &sacks, false, false, &mut out);
    assert_eq!((s.rate.delivered - d0, s.sb.sacked_out), (5, 5));
    assert!((21..25).chain(26..27).all(|q| s.sb.seg(q).sacked) && !s.sb.seg(25).sacked);
    assert_eq!(s.sb.sack_cache, [(26, 27), (21, 25), (0, 0)]);
}

#[test]
fn the_fast_retransmit_of_the_head_rearms_the_rto_in_place_of_a_pending_loss_probe() {
    // tcp_xmit_retransmit_queue (Linux 6.x): retransmitting the head of the
    // retransmission queue resets the timer to the RTO (`rearm_timer`)
    // unless RACK's REO timer is pending. The loss probe scheduled by the
    // last send (2 srtt + TCP_TIMEOUT_MIN_US) must not survive into Recovery,
    // where Linux never sends one: the head's retransmission lost again is
    // found by the RTO, not by a probe 2 srtt later.
    let (mut s, _) = warmed(20);
    assert_eq!(s.timer.map(|t| t.1), Some(TimerKind::Tlp));
    let t23 = s.sb.segs[3].tx_time;
    let at = t23 + 100 * NS_PER_MS;
    let mut out = Vec::new();
    s.on_ack(at, 20, &[SackBlock { start: 21, end: 24 }], false, false, &mut out);
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!((out[0].seq, out[0].retrans), (20, true));
    assert_eq!(s.rtt.rto, 300 * NS_PER_MS, "srtt 100 ms + rttvar 200 ms");
    // 75 jiffies from jiffy 50 (200 ms): level 1, expiry 125 -> bucket 128, 512 ms
    assert_eq!(at, 200 * NS_PER_MS);
    assert_eq!(s.timer, Some((512 * NS_PER_MS, TimerKind::Rto)));
}

/// `tcp_grow_skb` (Linux 6.10+, 8ee602c63520, in `tcp_write_xmit` before the
/// deferral test): the rest of the write queue's first skb (40..45, bulk data,
/// 45-segment skbs) is shorter than a quota of 8 and takes the 3 it lacks from
/// the next skb (45..90), which keeps its end; a quota the head skb already
/// holds changes nothing; once the head is used up, the next skb is the rest
/// 48..90, not a fresh 45.
#[test]
fn a_short_head_skb_takes_the_segments_its_quota_lacks_from_the_next_skb() {
    let mut s = reno_sender();
    let mut out = Vec::new();
    s.start(0, Some(crate::tcp::handshake::Start { rtt: 8 * NS_PER_MS, cwnd_one: false }), &mut out);
    while s.sb.nxt < 40 {
        s.sb.push_new(MSS);
    }
    assert_eq!(s.send_head_skb(), (5, false));
    assert_eq!(s.grow_skb(8), (8, false));
    assert_eq!((s.skb_end, s.next_skb_end), (48, 90));
    assert_eq!(s.grow_skb(4), (8, false));
    while s.sb.nxt < 48 {
        s.sb.push_new(MSS);
    }
    assert_eq!(s.send_head_skb(), (42, false));
    assert_eq!((s.skb_end, s.next_skb_end), (90, 0));
}
