//! Tests for BBRv3. As for v1 (`bbr/tests.rs`):
//! - [`Drive`] (`cc/test_drive.rs`, shared with v1's tests): hand-made ACKs,
//!   for exact values of single decisions (numbers worked out from the kernel
//!   formulas in comments);
//! - [`Pipe`] (`cc/test_pipe.rs`, shared with v1's tests): a closed-loop ACK
//!   clock over a FIFO bottleneck with a finite buffer and seeded random loss
//!   (one ACK per packet, tcp_rate.c bookkeeping, RACK-like loss detection, a
//!   Recovery episode per loss round), for behaviour over many rounds, and
//!   for comparing with v1.

use super::*;
use crate::kernel::INITIAL_JIFFIES;
use crate::time::{Nanos, NS_PER_SEC};

/// The kernel's jiffies `n` ticks after boot (`crate::kernel`'s clock starts at `INITIAL_JIFFIES`).
fn jiffy(n: u32) -> u32 {
    INITIAL_JIFFIES.wrapping_add(n)
}
use crate::cc::bbr::Bbr;
use crate::cc::test_drive::{self, Ack};
use crate::cc::test_pipe::Pipe;
use crate::cc::{CaState, CongestionControl, LostSkb};

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;
const RTT: Nanos = 10 * MS;

// ---------------------------------------------------------------------------
// Hand-made ACKs
// ---------------------------------------------------------------------------

/// [`test_drive::Drive`] (shared with v1's tests) on BBRv3.
type Drive = test_drive::Drive<Bbr3>;

impl Drive {
    /// A connection established at t = 0 with no RTT sample yet; the ACKs see `rtt`.
    fn new(seed: u64, rtt: Nanos) -> Drive {
        Drive::start(Bbr3::with_seed(seed), rtt)
    }

    /// Four rounds of 100 packets per RTT: STARTUP sees no growth for three
    /// rounds. DRAIN does not end on that ACK (it still paces at 2.77, so a
    /// TSO burst counts on top of the 100 in flight); the next ACK, at the
    /// drain gain with 101 in flight (= the BDP), enters PROBE_BW DOWN; with
    /// prior_in_flight 102 > BDP it does not cruise yet.
    fn to_probe_bw(seed: u64, rtt: Nanos) -> Drive {
        let mut d = Drive::new(seed, rtt);
        for i in 1..=4 {
            d.round(i * rtt, 100, 100);
        }
        assert_eq!(d.b.mode(), Mode::Drain);
        d.mid(4 * rtt + 100 * US, 101);
        assert_eq!((d.b.mode(), d.b.phase()), (Mode::ProbeBw, Phase::Down));
        d
    }
}

// ---------------------------------------------------------------------------
// Constants and arithmetic
// ---------------------------------------------------------------------------

#[test]
fn gains_and_thresholds_are_the_v3_kernels_fixed_point_values() {
    assert_eq!(STARTUP_PACING_GAIN, 710); // 256 * 277 / 100 + 1 = 2.77
    assert_eq!(STARTUP_CWND_GAIN, 512);
    assert_eq!(DRAIN_GAIN, 88);
    assert_eq!(PACING_GAIN, [320, 232, 256, 256]);
    assert_eq!(BBR_UNIT - BETA, 180); // cut to 0.703
    assert_eq!((LOSS_THRESH, ECN_THRESH, ECN_FACTOR, ECN_ALPHA_GAIN), (5, 128, 85, 16));
    assert_eq!((INFLIGHT_HEADROOM, PROBE_RTT_CWND_GAIN), (38, 128));
}

#[test]
fn state_labels_name_the_probe_bw_phases() {
    let mut d = Drive::to_probe_bw(1, RTT);
    assert_eq!(d.b.state_label(), "PROBE_BW_DOWN");
    d.b.cycle_idx = Phase::Refill;
    assert_eq!(d.b.state_label(), "PROBE_BW_REFILL");
    let b = Bbr3::default();
    assert_eq!(b.state_label(), "STARTUP");
    assert!(b.wants_pacing() && b.has_cong_control() && b.wants_ecn());
    assert!(!Bbr3::default().with_ecn(false).wants_ecn());
    assert!(!b.wants_accurate_ce_echo());
}

#[test]
fn startup_paces_at_2_77_with_a_cwnd_gain_of_2() {
    let mut d = Drive::new(0, RTT);
    d.round(RTT, 100, 100);
    assert_eq!((d.b.pacing_gain(), d.b.cwnd_gain()), (710.0 / 256.0, 2.0));
    // 167773 * 1448 * 710 >> 8 = 673765882; * 990000 >> 24 = 39757980 B/s.
    assert_eq!(d.w.pacing_rate, 39_757_980);
}

// ---------------------------------------------------------------------------
// STARTUP exit on loss
// ---------------------------------------------------------------------------

/// Drive through STARTUP with bw doubling every round (no plateau exit), then
/// enter Recovery and mark `events` single-packet losses in one round; the
/// next round ends with an ACK for 100 packets sent after the first loss.
fn startup_with_losses(events: u32) -> Drive {
    let mut d = Drive::new(0, RTT);
    let mut bw = 10;
    for i in 1..=4 {
        bw *= 2;
        d.round(i * RTT, bw, 100);
    }
    assert_eq!(d.b.mode(), Mode::Startup);
    d.ca_state = CaState::Recovery;
    let t = 4 * RTT;
    let first_loss_delivered = d.delivered + 1;
    for k in 0..events {
        let prior = d.b.loss_round_delivered.min(d.delivered) - 1;
        d.ack(t + (k as u64 + 1) * MS, Ack { acked: 1, prior_delivered: prior, rs_delivered: 160, interval: RTT, inflight: 200, losses: 1, ce: 0 });
    }
    d.delivered += 99;
    // The packet acked now was sent right after the first loss was marked.
    d.ack(t + RTT, Ack { acked: 1, prior_delivered: first_loss_delivered, rs_delivered: 100, interval: RTT, inflight: 200, losses: 0, ce: 0 });
    d
}

#[test]
fn startup_ends_after_a_recovery_round_with_six_loss_events_and_over_2_percent_loss() {
    let d = startup_with_losses(6);
    // lost since that packet was sent: 6 - 1 = 5; tx_in_flight = 100 + 5;
    // threshold 105 * 5 >> 8 = 2 < 5: too high. inflight_hi = max(BDP, this
    // round's max delivered 160): max_bw = ceil(160 * 2^24 / 10000) = 268436,
    // BDP = ceil(268436 * 10000 / 2^24) = 161.
    assert!(d.b.full_bw_reached());
    assert_eq!(d.b.mode(), Mode::Drain);
    assert_eq!(d.b.inflight_hi(), 161);
    let e = startup_with_losses(5);
    assert!(!e.b.full_bw_reached(), "five loss events are not enough");
    assert_eq!(e.b.mode(), Mode::Startup);
}

#[test]
fn startup_ignores_loss_outside_recovery_and_below_2_percent() {
    // Same six events, but a round where 1 of 100 in flight was lost.
    let mut d = Drive::new(0, RTT);
    let mut bw = 10;
    for i in 1..=4 {
        bw *= 2;
        d.round(i * RTT, bw, 100);
    }
    d.ca_state = CaState::Recovery;
    for k in 0..6 {
        let prior = d.b.core.next_rtt_delivered - 1;
        d.ack(4 * RTT + k * MS, Ack { acked: 1, prior_delivered: prior, rs_delivered: 160, interval: RTT, inflight: 200, losses: 0, ce: 0 });
    }
    d.b.loss_events_in_round = 6;
    d.lost += 1; // one loss marked, before the next packet was sent
    d.log_lost();
    let sent_at = d.delivered;
    d.delivered += 299;
    d.ack(4 * RTT + RTT, Ack { acked: 1, prior_delivered: sent_at, rs_delivered: 300, interval: RTT, inflight: 200, losses: 1, ce: 0 });
    // lost since sent = 1, tx_in_flight = 301, threshold 301 * 5 >> 8 = 5.
    assert!(!d.b.full_bw_reached());
}

// ---------------------------------------------------------------------------
// inflight_hi from a lossy probe
// ---------------------------------------------------------------------------

/// REFILL then UP, as `bbr_update_cycle_phase` does at REFILL's round end.
fn to_probe_up(d: &mut Drive) {
    let c = d.view(100);
    d.b.start_bw_probe_refill(&c, 0);
    d.b.bw_probe_samples = true;
    let w = d.w;
    d.b.start_bw_probe_up(&c, &Ctx::default(), &w);
    d.b.update_gains();
    assert_eq!(d.b.state_label(), "PROBE_BW_UP");
}

#[test]
fn a_probe_with_over_2_percent_loss_sets_inflight_hi_where_the_loss_rate_crossed_it() {
    let mut d = Drive::to_probe_bw(1, RTT);
    to_probe_up(&mut d);
    assert_eq!(d.b.inflight_hi(), UNSET);
    // 4 of the 200 packets in flight when the acked packet left were lost
    // (2 %): tx_in_flight = 196 delivered + 4 lost (over 2 RTTs: no new max bw).
    let prior = d.delivered;
    d.delivered += 195;
    d.ack(d.now + RTT, Ack { acked: 1, prior_delivered: prior, rs_delivered: 196, interval: 2 * RTT, inflight: 150, losses: 4, ce: 0 });
    // inflight_prev 199, lost_prev 3, budget ceil(199 * 5 / 256) = 4: the
    // threshold was crossed 1 packet later ((4 - 3) << 8) / 251 = 1: 200.
    assert_eq!(d.b.inflight_hi(), 200);
    assert_eq!(d.b.phase(), Phase::Down, "the probe stops");
    assert!(d.b.prev_probe_too_high);
    assert_eq!(d.b.inflight_hi_from_lost_skb(10, 160, 1), 159, "earlier losses crossed it: no prefix");
}

#[test]
fn loss_below_2_percent_while_probing_leaves_inflight_hi_alone() {
    let mut d = Drive::to_probe_bw(1, RTT);
    to_probe_up(&mut d);
    let prior = d.delivered;
    d.delivered += 196;
    d.ack(d.now + RTT, Ack { acked: 1, prior_delivered: prior, rs_delivered: 197, interval: 2 * RTT, inflight: 150, losses: 3, ce: 0 });
    // 3 of 200: threshold 200 * 5 >> 8 = 3, not exceeded.
    assert_eq!(d.b.inflight_hi(), UNSET);
    assert_eq!(d.b.phase(), Phase::Up);
}

// ---------------------------------------------------------------------------
// PROBE_BW phases
// ---------------------------------------------------------------------------

#[test]
fn down_cruises_once_inflight_is_below_the_bdp_then_refill_lasts_one_round_before_up() {
    let mut d = Drive::to_probe_bw(1, RTT);
    assert_eq!(d.b.pacing_gain(), 232.0 / 256.0);
    // BDP 101 (ceil of 167773 * 10000 / 2^24) with a budget of 3 TSO bursts
    // of 12 segments: 101. prior_in_flight = inflight + 1.
    d.mid(d.now + MS, 101);
    assert_eq!(d.b.phase(), Phase::Down);
    d.mid(d.now + MS, 100);
    assert_eq!(d.b.phase(), Phase::Cruise);
    assert_eq!(d.b.pacing_gain(), 1.0);
    // Force the probe time: the 2-3 s wall clock has passed.
    let wait = d.b.probe_wait_us() as u64;
    assert!((2_000_000..3_000_000).contains(&wait), "probe wait {wait} us");
    d.b.rounds_since_probe = 0;
    d.mid(d.b.core.cycle_mstamp * US + wait * US, 100);
    assert_eq!(d.b.phase(), Phase::Cruise, "exactly probe_wait later: not yet");
    d.mid(d.b.core.cycle_mstamp * US + wait * US + US, 100);
    assert_eq!(d.b.phase(), Phase::Refill);
    assert_eq!((d.b.bw_lo_raw(), d.b.inflight_lo()), (UNSET, UNSET), "refill resets the lower bounds");
    // REFILL ends at the next round start.
    let t = d.now;
    d.mid(t + MS, 100);
    assert_eq!(d.b.phase(), Phase::Refill);
    d.round(t + RTT, 100, 100);
    assert_eq!(d.b.phase(), Phase::Up);
    assert_eq!((d.b.pacing_gain(), d.b.cwnd_gain()), (1.25, 2.25));
    assert!(d.b.bw_probe_samples);
}

#[test]
fn down_cruises_once_what_is_in_the_network_at_the_next_departure_is_below_the_bdp() {
    // bbr_packets_in_net_at_edt: the next skb may leave 1 000 µs after the
    // ACK (tp->tcp_wstamp_ns); by then the path delivers bw * 1 000 µs =
    // 167 773 * 1 000 >> 24 = 10 packets, so DOWN ends at prior_in_flight
    // 101 + 10 = 111 instead of 101.
    let mut d = Drive::to_probe_bw(1, RTT);
    let t = d.now;
    d.wstamp = t + MS + 1_000 * US;
    d.mid(t + MS, 111); // prior_in_flight 112: 102 in the network
    assert_eq!(d.b.phase(), Phase::Down);
    d.wstamp = t + 2 * MS + 1_000 * US;
    d.mid(t + 2 * MS, 110); // prior_in_flight 111: 101
    assert_eq!((d.b.phase(), d.b.pacing_gain()), (Phase::Cruise, 1.0));
    // A departure time in the past counts as now: 101 needs prior_in_flight 101.
    let mut e = Drive::to_probe_bw(1, RTT);
    let t = e.now;
    e.wstamp = t;
    e.mid(t + MS, 101);
    assert_eq!(e.b.phase(), Phase::Down);
    e.mid(t + 2 * MS, 100);
    assert_eq!(e.b.phase(), Phase::Cruise);
}

#[test]
fn phases_cycle_down_cruise_refill_up_and_probes_come_every_63_rounds_on_a_small_bdp() {
    // 10000 packets/s, 10 ms: BDP ~100 packets, so min(63, BDP) = 63 rounds
    // (+0..1) bound the wait, well before 2-3 s.
    let mut p = Pipe::new(Box::new(Bbr3::with_seed(3)), 100 * US, RTT, 1000, 0.0, 1);
    p.run_until(6 * NS_PER_SEC);
    let probe_bw: Vec<(Nanos, &str)> =
        p.labels().iter().copied().filter(|(_, l)| l.starts_with("PROBE_BW")).collect();
    let next = |l: &str| match l {
        "PROBE_BW_DOWN" => "PROBE_BW_CRUISE",
        "PROBE_BW_CRUISE" => "PROBE_BW_REFILL",
        "PROBE_BW_REFILL" => "PROBE_BW_UP",
        "PROBE_BW_UP" => "PROBE_BW_DOWN",
        _ => unreachable!(),
    };
    let mut seen = std::collections::HashMap::new();
    for w in probe_bw.windows(2) {
        let ((_, a), (t1, b)) = (w[0], w[1]);
        // A phase may be cut short only by PROBE_RTT, which resumes in CRUISE.
        assert!(b == next(a) || b == "PROBE_BW_CRUISE", "{a} -> {b} at {t1}");
        *seen.entry((a, b)).or_insert(0) += 1;
    }
    for a in ["PROBE_BW_DOWN", "PROBE_BW_CRUISE", "PROBE_BW_REFILL", "PROBE_BW_UP"] {
        assert!(seen.get(&(a, next(a))).copied().unwrap_or(0) >= 5, "{a} -> {}: {seen:?}", next(a));
    }
    let waits = probe_waits(&p.labels());
    assert!(waits.len() >= 5, "waits {waits:?}");
    // Measured (seed 3): 655 ms after DOWN (63-64 rounds of ~10.2 ms), 626 ms
    // after a PROBE_RTT (62 rounds); 2-3 s of wall clock never comes first.
    for w in waits {
        assert!((600 * MS..=700 * MS).contains(&w), "probe after {w} ns");
    }
}

/// For each REFILL, the time since the probe clock started: the last DOWN,
/// or the end of the last PROBE_RTT (which restarts the clock in DOWN and
/// goes on to CRUISE within the same ACK).
fn probe_waits(labels: &[(Nanos, &'static str)]) -> Vec<Nanos> {
    let mut clock = None;
    let mut waits = Vec::new();
    for w in labels.windows(2) {
        let ((_, a), (t1, b)) = (w[0], w[1]);
        if b == "PROBE_BW_DOWN" || a == "PROBE_RTT" {
            clock = Some(t1);
        }
        if b == "PROBE_BW_REFILL" {
            waits.push(t1 - clock.expect("a clock start before each REFILL"));
        }
    }
    waits
}

#[test]
fn on_a_large_bdp_probes_come_every_2_to_3_seconds_of_wall_clock() {
    // 10000 packets/s, 100 ms: BDP 1000 packets; 63 rounds would be 6.3 s.
    let mut p = Pipe::new(Box::new(Bbr3::with_seed(4)), 100 * US, 100 * MS, 2000, 0.0, 1);
    p.run_until(20 * NS_PER_SEC);
    let waits = probe_waits(&p.labels());
    // Measured (seed 4): 2.70, 2.99, ... s.
    assert!(waits.len() >= 4, "waits {waits:?} in {:?}", p.labels());
    for w in waits {
        // Drawn in [2, 3) s; seen on the first ACK after it (one packet every 100 us).
        assert!((2 * NS_PER_SEC..=3 * NS_PER_SEC + MS).contains(&w), "probe after {w} ns");
    }
}

// ---------------------------------------------------------------------------
// Lower bounds: loss and ECN
// ---------------------------------------------------------------------------

#[test]
fn a_round_with_loss_while_cruising_cuts_bw_lo_and_inflight_lo_to_70_percent() {
    let mut d = Drive::to_probe_bw(1, RTT);
    d.mid(d.now + MS, 100);
    assert_eq!(d.b.phase(), Phase::Cruise);
    // A round that delivered 50 packets per RTT: bw_latest = ceil(50 * 2^24 / 10000) = 83887.
    d.round(d.now + RTT, 50, 90);
    assert_eq!((d.b.bw_latest, d.b.inflight_latest), (83_887, 50));
    // A loss (it marks the loss round), then ACKs whose samples say 50 per RTT.
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack(d.now + MS, Ack { acked: 1, prior_delivered: prior, rs_delivered: 50, interval: RTT, inflight: 90, losses: 1, ce: 0 });
    assert!(d.b.loss_in_round);
    let round_end = d.delivered;
    d.ack(d.now + MS, Ack { acked: 1, prior_delivered: round_end - 1, rs_delivered: 50, interval: RTT, inflight: 90, losses: 0, ce: 0 });
    assert_eq!(d.b.bw_lo_raw(), UNSET, "the bounds adapt once per round");
    d.w.cwnd = 200;
    d.ack(d.now + MS, Ack { acked: 1, prior_delivered: round_end, rs_delivered: 50, interval: RTT, inflight: 90, losses: 0, ce: 0 });
    // bw_lo = max(bw_latest 83887 (50 per 10 ms, rounded up), 167773 * 180 >> 8 = 117965).
    assert_eq!(d.b.bw_lo_raw(), 117_965);
    assert_eq!(d.b.bw_raw(), 117_965);
    // inflight_lo = max(inflight_latest 50, cwnd 200 * 180 >> 8 = 140); cwnd follows.
    assert_eq!(d.b.inflight_lo(), 140);
    assert!(d.w.cwnd <= 140);
}

#[test]
fn the_lower_bounds_do_not_cut_below_what_the_last_round_delivered() {
    let mut d = Drive::to_probe_bw(1, RTT);
    d.mid(d.now + MS, 100);
    d.b.bw_lo = 100_000;
    d.b.inflight_lo = 100;
    d.b.bw_latest = 90_000;
    d.b.inflight_latest = 95;
    d.b.loss_in_round = true;
    d.b.adapt_lower_bounds(&d.w.clone());
    assert_eq!((d.b.bw_lo_raw(), d.b.inflight_lo()), (90_000, 95)); // not 70 312, 70
}

#[test]
fn ce_marks_on_a_short_path_cut_inflight_lo_by_alpha_over_three() {
    // min_rtt 4 ms <= 5 ms: ECN-eligible once marks are seen.
    let rtt = 4 * MS;
    let mut d = Drive::to_probe_bw(1, rtt);
    d.mid(d.now + MS, 100);
    assert_eq!(d.b.phase(), Phase::Cruise);
    d.w.cwnd = 200;
    assert!(!d.b.ecn_eligible());
    // ECE makes the endpoint enter CWR (tcp_try_to_open -> tcp_enter_cwr).
    d.ca_state = CaState::Cwr;
    // A round in which 40 of 100 delivered packets were CE-marked.
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack(d.now + MS, Ack { acked: 1, prior_delivered: prior, rs_delivered: 100, interval: rtt, inflight: 100, losses: 0, ce: 1 });
    d.delivered += 98;
    d.delivered_ce += 39;
    let round_end = d.delivered + 1;
    d.w.cwnd = 200;
    d.ack(d.now + rtt, Ack { acked: 1, prior_delivered: round_end, rs_delivered: 100, interval: rtt, inflight: 100, losses: 0, ce: 0 });
    // Round start: eligible now; alpha = (240 * 256 >> 8) + (16 * ce_ratio >> 8)
    // with ce_ratio = 40 * 256 / (all delivered so far: 501) = 20: 240 + 1 = 241.
    // This ACK is ECE (delivered_ce grew): a CE round, cut at the loss-round end:
    // inflight_lo = cwnd 200 * (256 - (241 * 85 >> 8 = 80)) >> 8 = 137.
    assert!(d.b.ecn_eligible());
    assert_eq!(d.b.ecn_alpha_raw(), 241);
    assert_eq!(d.b.inflight_lo(), 137);
    assert!(d.w.cwnd <= 137);
    // Next round: one CE mark among 100.
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack(d.now + MS, Ack { acked: 1, prior_delivered: prior, rs_delivered: 100, interval: rtt, inflight: 100, losses: 0, ce: 1 });
    assert!(d.b.ecn_in_round);
    let round_end = d.delivered;
    d.delivered += 98;
    d.ack(d.now + rtt, Ack { acked: 1, prior_delivered: round_end, rs_delivered: 100, interval: rtt, inflight: 100, losses: 0, ce: 0 });
    // ce_ratio = 1 * 256 / 100 = 2: alpha = (240 * 241 >> 8) + (16 * 2 >> 8) = 225.
    // inflight_lo = 137 * (256 - (225 * 85 >> 8 = 74)) >> 8 = 97.
    assert_eq!(d.b.ecn_alpha_raw(), 225);
    assert_eq!(d.b.inflight_lo(), 97);
    assert!(d.w.cwnd <= 97);
    assert_eq!(d.b.bw_lo_raw(), UNSET, "ECN cuts inflight_lo only");
    assert_eq!(d.b.phase(), Phase::Cruise);
    // CWR over, no loss in this cycle: reprobe at once (bbr_check_time_to_probe_bw).
    d.ca_state = CaState::Open;
    d.mid(d.now + MS, 100);
    assert_eq!(d.b.phase(), Phase::Refill);
    assert_eq!(d.b.inflight_lo(), UNSET);
}

#[test]
fn ce_marks_on_a_long_path_are_ignored() {
    let mut d = Drive::to_probe_bw(1, RTT); // 10 ms > 5 ms
    d.mid(d.now + MS, 100);
    d.w.cwnd = 200;
    for _ in 0..3 {
        let prior = d.b.core.next_rtt_delivered - 1;
        d.ack(d.now + MS, Ack { acked: 1, prior_delivered: prior, rs_delivered: 100, interval: RTT, inflight: 100, losses: 0, ce: 1 });
        let round_end = d.delivered;
        d.delivered += 98;
        d.ack(d.now + RTT, Ack { acked: 1, prior_delivered: round_end, rs_delivered: 100, interval: RTT, inflight: 100, losses: 0, ce: 0 });
    }
    assert!(!d.b.ecn_eligible());
    assert_eq!(d.b.inflight_lo(), UNSET);
}

#[test]
fn startup_ends_after_two_rounds_with_half_the_packets_ce_marked() {
    let rtt = 4 * MS;
    let mut d = Drive::new(0, rtt);
    d.round(rtt, 10, 100);
    d.round(2 * rtt, 20, 100);
    // Rounds whose every delivered packet was marked; the first mark makes
    // the flow eligible (min_rtt 4 ms), and the round counts at once.
    let marked_round = |d: &mut Drive, i: u64, bw: u64| {
        d.delivered_ce += d.delivered + 1 - d.b.alpha_last_delivered; // all since the last round
        d.round(i * rtt, bw, 100);
    };
    marked_round(&mut d, 3, 40);
    assert_eq!(d.b.startup_ecn_rounds, 1);
    assert_eq!(d.b.mode(), Mode::Startup);
    // An unmarked round resets the count (ratio 0 < 1/2).
    d.round(4 * rtt, 80, 100);
    assert_eq!(d.b.startup_ecn_rounds, 0);
    marked_round(&mut d, 5, 160);
    marked_round(&mut d, 6, 320);
    assert!(d.b.full_bw_reached());
    assert_eq!(d.b.mode(), Mode::ProbeBw, "100 in flight <= BDP: DRAIN ends on the same ACK");
    // The exit set inflight_hi = max(BDP 161 of the previous round's max bw,
    // inflight_latest 160); the same ACK then raised it to its own
    // tx_in_flight 320, a flight that was not "too high" (rs.delivered_ce 0).
    assert_eq!(d.b.inflight_hi(), 320);
}

// ---------------------------------------------------------------------------
// PROBE_RTT
// ---------------------------------------------------------------------------

#[test]
fn probe_rtt_comes_5_seconds_after_the_last_lower_rtt_and_holds_half_the_bdp() {
    let mut d = Drive::to_probe_bw(1, RTT);
    d.mid(d.now + MS, 100);
    d.w.cwnd = 220;
    // probe_rtt_min (10 ms) was taken at 10 ms = jiffy 2 after boot; expired once jiffies > 2 + 1250.
    assert_eq!(d.b.probe_rtt_min_stamp, jiffy(2));
    let prior = d.b.core.next_rtt_delivered - 1;
    let a = Ack { acked: 1, prior_delivered: prior, rs_delivered: 100, interval: RTT, inflight: 100, losses: 0, ce: 0 };
    d.ack(1253 * 4 * MS - 1, a);
    assert_eq!(d.b.mode(), Mode::ProbeBw);
    let before = d.w.cwnd;
    d.ack(1253 * 4 * MS, a);
    assert_eq!(d.b.mode(), Mode::ProbeRtt);
    // cwnd = max(4, ceil(167773 * 10000 * 128 / 256 / 2^24)) = 51.
    assert_eq!(d.w.cwnd, 51);
    assert_eq!(d.b.core.prior_cwnd, before);
    assert_eq!(d.b.state_label(), "PROBE_RTT");
    // Inflight at 51: 200 ms (50 jiffies) and a round later it resumes, cruising, with the old cwnd.
    d.ack(5020 * MS, Ack { inflight: 51, ..a });
    assert_eq!(d.b.core.probe_rtt.done_stamp(), jiffy(1255 + 50));
    let round_end = d.delivered;
    d.ack(5100 * MS, Ack { prior_delivered: round_end, inflight: 51, ..a });
    assert_eq!(d.b.mode(), Mode::ProbeRtt, "a round, but not 200 ms yet");
    d.ack(5224 * MS, Ack { prior_delivered: round_end, inflight: 51, ..a });
    assert_eq!((d.b.mode(), d.b.phase()), (Mode::ProbeBw, Phase::Cruise));
    assert!(d.w.cwnd >= before * 85 / 100, "cwnd {} restored (capped by the headroom)", d.w.cwnd);
}

#[test]
fn probe_rtt_in_a_pipe_comes_every_5_seconds_at_half_the_bdp() {
    let mut p = Pipe::new(Box::new(Bbr3::with_seed(5)), 100 * US, RTT, 1000, 0.0, 1);
    p.run_until(16 * NS_PER_SEC);
    let entries: Vec<Nanos> = p.labels().iter().filter(|(_, l)| *l == "PROBE_RTT").map(|&(t, _)| t).collect();
    assert!(entries.len() >= 2, "PROBE_RTT at {entries:?}");
    for w in entries.windows(2) {
        let gap = w[1] - w[0];
        assert!((5 * NS_PER_SEC..=5 * NS_PER_SEC + 600 * MS).contains(&gap), "PROBE_RTT every {gap} ns");
    }
    // BDP = 10000 packets/s * 10.1 ms = 101: PROBE_RTT's cwnd is about 51, never 4.
    let in_rtt: Vec<u32> = p
        .trace
        .iter()
        .filter(|s| entries.iter().any(|&e| s.t >= e + 50 * MS && s.t < e + 200 * MS))
        .map(|s| s.cwnd)
        .collect();
    assert!(!in_rtt.is_empty());
    assert!(in_rtt.iter().all(|&c| (45..=55).contains(&c)), "cwnd in PROBE_RTT {in_rtt:?}");
}

// ---------------------------------------------------------------------------
// Against v1 in a pipe
// ---------------------------------------------------------------------------

/// (utilisation, retransmission rate) of a control over 20 s, measured after 2 s.
fn run(cc: Box<dyn CongestionControl>, buf: u64, loss: f64, seed: u64) -> (f64, f64) {
    let gap = 100 * US; // 10000 packets/s
    let mut p = Pipe::new(cc, gap, RTT, buf, loss, seed);
    p.run_until(2 * NS_PER_SEC);
    let (d0, s0, l0) = (p.delivered, p.sent, p.lost);
    p.run_until(20 * NS_PER_SEC);
    let util = (p.delivered - d0) as f64 / (18 * NS_PER_SEC / gap) as f64;
    let retrans = (p.lost - l0) as f64 / (p.sent - s0) as f64;
    (util, retrans)
}

#[test]
fn bbr3_keeps_80_percent_of_the_pipe_at_half_a_percent_random_loss_but_not_at_1_percent() {
    // 10000 packets/s, 10 ms, 200 packets of buffer. Measured (seeds 1-3):
    // loss 0.5 %: utilisation 0.839 / 0.868 / 0.843; loss 1 %: 0.745 / 0.772 / 0.606
    // (v1: 0.99 at both). At 1 % two losses in a ~100-packet probe flight
    // already exceed the 2 % threshold (inflight_hi is cut), and every lossy
    // cruising round trims bw_lo to the rate just delivered, which pacing
    // 1 % below the estimate keeps just under it; only the next probe resets it.
    for seed in [1, 2, 3] {
        let (util, retrans) = run(Box::new(Bbr3::with_seed(seed)), 200, 0.005, seed);
        assert!(util >= 0.80, "seed {seed}: utilisation {util:.3} at 0.5 %");
        assert!(retrans < 0.0060, "seed {seed}: retransmissions {retrans:.4}");
        let (util, _) = run(Box::new(Bbr3::with_seed(seed)), 200, 0.01, seed);
        assert!((0.55..0.80).contains(&util), "seed {seed}: utilisation {util:.3} at 1 %");
    }
}

#[test]
fn in_a_shallow_buffer_bbr1_retransmits_more_than_bbr3() {
    // Buffer 10 packets = 0.1 BDP, no random loss.
    for seed in [1, 2] {
        let (u1, r1) = run(Box::new(Bbr::with_seed(seed)), 10, 0.0, seed);
        let (u3, r3) = run(Box::new(Bbr3::with_seed(seed)), 10, 0.0, seed);
        // Measured: v1 retransmits 3.3 % (util 0.994), v3 0.09 % (util 0.946).
        assert!(r1 > 10.0 * r3, "seed {seed}: v1 {r1:.4} vs v3 {r3:.4}");
        assert!(u1 > 0.98, "seed {seed}: v1 utilisation {u1:.3}");
        assert!(u3 >= 0.80, "seed {seed}: v3 utilisation {u3:.3}");
    }
}

/// Not a test: prints utilisation and retransmissions of v1 and v3 over a grid
/// (`cargo test -p bloatlab-core --lib bbr3::tests::measure -- --ignored --nocapture`).
#[test]
#[ignore]
fn measure() {
    for &(buf, loss) in &[(200u64, 0.0), (200, 0.001), (200, 0.005), (200, 0.01), (200, 0.02), (10, 0.0), (10, 0.01)] {
        for seed in [1, 2, 3] {
            let (u1, r1) = run(Box::new(Bbr::with_seed(seed)), buf, loss, seed);
            let (u3, r3) = run(Box::new(Bbr3::with_seed(seed)), buf, loss, seed);
            println!("buf {buf:>3} loss {loss:.3} seed {seed}: v1 util {u1:.3} retrans {r1:.4} | v3 util {u3:.3} retrans {r3:.4}");
        }
    }
}

// ---------------------------------------------------------------------------
// skb_marked_lost: each lost segment with its own send state
// ---------------------------------------------------------------------------

#[test]
fn a_segment_lost_while_probing_sets_inflight_hi_from_its_own_flight() {
    let mut d = Drive::to_probe_bw(1, RTT);
    to_probe_up(&mut d);
    let c = d.view(150);
    let w = d.w;
    // Sent with 120 in flight; 3 lost since (itself included): 3 > 120 * 5 >> 8 = 2.
    // inflight_prev 119, lost_prev 2, budget ceil(119 * 5 / 256) = 3: the 2 %
    // line was crossed ((3 - 2) << 8) / (256 - 5) = 1 packet later: 120. The
    // floor, target_inflight 101 * (256 - 76) >> 8 = 71, is lower.
    d.b.skb_marked_lost(&c, &LostSkb { tx_in_flight: 120, lost: 3, is_app_limited: false, has_tx_state: true, pcount: 1 }, &w);
    assert_eq!(d.b.inflight_hi(), 120);
    assert_eq!(d.b.phase(), Phase::Down, "the probe stops");
    assert!(!d.b.loss_in_round, "noted, then cleared by the start of DOWN (bbr_reset_congestion_signals)");
}

#[test]
fn a_lost_segment_below_2_percent_or_without_send_state_only_notes_the_loss() {
    let mut d = Drive::to_probe_bw(1, RTT);
    to_probe_up(&mut d);
    let c = d.view(150);
    let w = d.w;
    // 2 of 120: not above 120 * 5 >> 8 = 2.
    d.b.skb_marked_lost(&c, &LostSkb { tx_in_flight: 120, lost: 2, is_app_limited: false, has_tx_state: true, pcount: 1 }, &w);
    assert!(d.b.loss_in_round);
    // Far above 2 %, but the segment carries no send state (tx.delivered_mstamp 0).
    d.b.skb_marked_lost(&c, &LostSkb { tx_in_flight: 120, lost: 50, is_app_limited: false, has_tx_state: false, pcount: 1 }, &w);
    assert_eq!((d.b.inflight_hi(), d.b.phase()), (UNSET, Phase::Up));
}
