//! Tests for BBR v1. Two kinds:
//! - [`Drive`] (`cc/test_drive.rs`, shared with v3's tests): hand-made ACKs
//!   with chosen rate samples, for exact values of single decisions (numbers
//!   worked out from the kernel formulas in comments);
//! - [`Pipe`] (`cc/test_pipe.rs`, shared with v3's tests): a closed-loop ACK
//!   clock (fixed-rate FIFO bottleneck, fixed base RTT, one ACK per packet,
//!   tcp_rate.c bookkeeping, a Recovery episode per loss), for behaviour over
//!   many rounds (bounds, not exact values).

use super::*;
use crate::kernel::{after, jiffies32, INITIAL_JIFFIES};
use crate::time::{Nanos, NS_PER_SEC};

/// The kernel's jiffies `n` ticks after boot (`crate::kernel`'s clock starts at `INITIAL_JIFFIES`).
fn jiffy(n: u32) -> u32 {
    INITIAL_JIFFIES.wrapping_add(n)
}
use crate::cc::test_drive::{self, Ack};
use crate::cc::test_pipe::{Pipe, Policer};
use crate::cc::{CaState, CongestionControl, ConnView, CwndEvent, RateSample, Window};

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;
const RTT: Nanos = 10 * MS;
/// 100 packets per 10 ms = 0.01 packet/µs, in bw units: floor(2^24 / 100).
const BW_10K_PPS: u64 = 167_772;

// ---------------------------------------------------------------------------
// Hand-made ACKs
// ---------------------------------------------------------------------------

/// [`test_drive::Drive`] (shared with v3's tests) on BBR v1, its ACKs seeing a 10 ms srtt.
type Drive = test_drive::Drive<Bbr>;

impl Drive {
    /// A connection established at t = 0 with no RTT sample yet.
    fn new(seed: u64) -> Drive {
        Drive::start(Bbr::with_seed(seed), RTT)
    }

    /// One ACK at `at` delivering `acked` packets; the sample says `rs_delivered`
    /// packets took `interval`, for a packet sent when `prior_delivered` had been delivered.
    #[allow(clippy::too_many_arguments)]
    fn ack_full(
        &mut self,
        at: Nanos,
        acked: u32,
        prior_delivered: u64,
        rs_delivered: i64,
        interval: Nanos,
        rtt: Nanos,
        inflight: u32,
        losses: u32,
        app_limited: bool,
    ) {
        let a = Ack { acked, prior_delivered, rs_delivered, interval, inflight, losses, ce: 0 };
        self.ack_sample(at, a, rtt, app_limited);
    }

    /// Four rounds of 100 packets / 10 ms: STARTUP sees no growth for three
    /// rounds, and with 100 packets in flight DRAIN ends at once.
    fn to_probe_bw(seed: u64) -> Drive {
        let mut d = Drive::new(seed);
        for i in 1..=4 {
            d.round(i * RTT, 100, 100);
        }
        assert_eq!(d.b.mode(), Mode::ProbeBw);
        d
    }

    /// In PROBE_BW at phase `idx`, the phase having started at `now`.
    fn at_phase(&mut self, idx: usize) {
        self.b.cycle_idx = idx;
        self.b.core.cycle_mstamp = self.b.core.sock.delivered_mstamp;
        self.b.update_gains();
        let c = self.view(100);
        let bw = self.b.bbr_bw();
        self.b.set_pacing_rate(&c, bw, self.b.core.pacing_gain, &mut self.w);
    }
}

// ---------------------------------------------------------------------------
// A closed-loop pipe ([`Pipe`], shared with v3's tests)
// ---------------------------------------------------------------------------

/// What v1's pipe tests read after each ACK: the mode, the gain-cycle phase, the pacing gain.
type Snap = (Mode, usize, f64);

/// v1 with seed `seed` over a FIFO bottleneck serving one packet per `gap`,
/// `rtt` of propagation, an unlimited buffer and no random loss.
fn pipe(seed: u64, gap: Nanos, rtt: Nanos) -> Pipe<Bbr, Snap> {
    Pipe::observing(Box::new(Bbr::with_seed(seed)), gap, rtt, u64::MAX, 0.0, seed, |b: &Bbr| (b.mode(), b.cycle_idx, b.pacing_gain()))
}

// ---------------------------------------------------------------------------
// Constants and arithmetic
// ---------------------------------------------------------------------------

#[test]
fn gains_are_the_kernels_fixed_point_values() {
    assert_eq!(HIGH_GAIN, 739); // 256 * 2885 / 1000 + 1
    assert_eq!(DRAIN_GAIN, 88); // 256 * 1000 / 2885
    assert_eq!(CWND_GAIN, 512);
    assert_eq!(PACING_GAIN_CYCLE, [320, 192, 256, 256, 256, 256, 256, 256]);
}

#[test]
fn pacing_rate_is_gain_times_bw_less_one_percent_in_bytes_per_second() {
    // 167772 * 1448 * 256 >> 8 = 242933856; * 990000 >> 24 = 14335186 B/s
    // (the estimate itself is 14479986 B/s; 1% less is 14335186.)
    assert_eq!(rate_bytes_per_sec(1448, BW_10K_PPS, BBR_UNIT), 14_335_186);
    assert_eq!(rate_bytes_per_sec(1448, BW_10K_PPS, 320), 17_918_982);
    assert_eq!(rate_bytes_per_sec(1448, BW_10K_PPS, 192), 10_751_389);
    // And what BBR writes into the window while cruising in PROBE_BW.
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    assert_eq!(d.w.pacing_rate, 14_335_186);
    assert_eq!(d.b.bw(), 14_479_986);
}

#[test]
fn initial_pacing_rate_is_high_gain_times_init_cwnd_over_srtt_or_one_ms() {
    let mut b = Bbr::default();
    let mut w = Window::default();
    b.init(&ConnView::at(0), &mut w);
    // 10 packets per 1 ms: bw 10 * 2^24 / 1000 = 167772, at gain 739.
    assert_eq!(w.pacing_rate, 41_381_651);
    let mut b = Bbr::default();
    let mut w = Window::default();
    b.init(&ConnView { srtt: RTT, ..ConnView::at(0) }, &mut w);
    // 10 packets per 10 ms: bw 16777.
    assert_eq!(w.pacing_rate, 4_138_115);
    assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
    assert!(b.wants_pacing() && b.has_cong_control());
    assert_eq!(b.state_label(), "STARTUP");
}

#[test]
fn pacing_rate_is_never_lowered_before_the_pipe_is_full() {
    let mut b = Bbr::default();
    let mut w = Window::default();
    let c0 = ConnView { srtt: MS, min_rtt: MS, ..ConnView::at(0) };
    b.init(&c0, &mut w);
    assert_eq!(w.pacing_rate, 41_381_651);
    // A first sample of 10 packets in 10 ms asks for only 4138115 B/s.
    let rs = RateSample {
        prior_delivered: 0,
        delivered: 10,
        interval: RTT as i64,
        rtt: MS as i64,
        acked_sacked: 10,
        ..RateSample::default()
    };
    let c = ConnView { delivered: 10, ..ConnView { now: 11 * MS, ..c0 } };
    b.cong_control(&c, &rs, &mut w);
    assert_eq!(b.bw_raw(), 16_777);
    assert_eq!(w.pacing_rate, 41_381_651);
}

#[test]
fn tso_goal_is_one_segment_below_1_2_mbit_and_at_most_64_kb() {
    let b = Bbr::default();
    let c = ConnView::at(0);
    let goal = |rate: u64| b.tso_segs_goal(&c, &Window { pacing_rate: rate, ..Window::default() });
    assert_eq!(goal(149_999), 1); // below 150000 B/s
    assert_eq!(goal(150_000), 2);
    assert_eq!(goal(14_335_186), 9); // 14335186 >> 10 = 13999 B = 9 MSS
    assert_eq!(goal(100_000_000), 45); // capped at 65536 - 1 - 192 = 65343 B = 45 MSS
    let c8 = ConnView { pacing_shift: 8, ..c };
    assert_eq!(b.tso_segs_goal(&c8, &Window { pacing_rate: 14_335_186, ..Window::default() }), 38);
    // 55996 B
}

// ---------------------------------------------------------------------------
// STARTUP and DRAIN
// ---------------------------------------------------------------------------

#[test]
fn startup_leaves_for_drain_after_three_rounds_without_25_percent_growth() {
    let mut d = Drive::new(0);
    d.round(RTT, 100, 400); // bw 167772: full_bw = 167772
    d.round(2 * RTT, 125, 400); // bw 209715 >= 167772 * 1.25 = 209715: still growing
    assert_eq!((d.b.full_bw, d.b.core.full_bw_cnt), (209_715, 0));
    d.round(3 * RTT, 150, 400); // bw 251658 < 262143: 1
    d.round(4 * RTT, 150, 400); // 2
    assert_eq!((d.b.core.full_bw_cnt, d.b.mode()), (2, Mode::Startup));
    assert_eq!(d.b.pacing_gain(), 739.0 / 256.0);
    d.round(5 * RTT, 150, 400); // 3: pipe full
    assert!(d.b.full_bw_reached());
    assert_eq!(d.b.mode(), Mode::Drain);
    assert_eq!(d.b.pacing_gain(), 88.0 / 256.0);
    assert_eq!(d.b.cwnd_gain(), 739.0 / 256.0);
    // ssthresh = inflight(max_bw, 1): bdp ceil(251658 * 10000 / 2^24) = 150, plus
    // 3 TSO bursts at the STARTUP pacing rate of the previous ACK (62072476 B/s:
    // 41 segments) = 273, rounded up to even.
    assert_eq!(d.w.ssthresh, 274);
}

#[test]
fn drain_hands_over_to_probe_bw_once_inflight_is_at_most_one_bdp() {
    let mut d = Drive::new(0);
    for i in 1..=4 {
        d.round(i * RTT, 100, 400);
    }
    assert_eq!(d.b.mode(), Mode::Drain);
    // DRAIN paces at 88/256: 167772 -> 4927720 B/s, a TSO goal of 3 segments;
    // one BDP in flight is 100 + 3 * 3 = 109 -> 110 packets.
    assert_eq!(d.w.pacing_rate, 4_927_720);
    d.mid(4 * RTT + MS, 111);
    assert_eq!(d.b.mode(), Mode::Drain);
    d.mid(4 * RTT + 2 * MS, 110);
    assert_eq!(d.b.mode(), Mode::ProbeBw);
    assert_eq!(d.b.cwnd_gain(), 2.0);
    assert_ne!(d.b.cycle_index(), 1, "PROBE_BW never starts in the 3/4 phase");
}

// ---------------------------------------------------------------------------
// PROBE_BW gain cycle
// ---------------------------------------------------------------------------

#[test]
fn start_phase_is_random_per_seed_but_never_the_drain_phase() {
    let mut seen = [0u32; 8];
    for seed in 0..200 {
        let d = Drive::to_probe_bw(seed);
        seen[d.b.cycle_index()] += 1;
        assert_eq!(Drive::to_probe_bw(seed).b.cycle_index(), d.b.cycle_index(), "same seed, same phase");
    }
    assert_eq!(seen[1], 0);
    assert!(seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 0), "phases seen: {seen:?}");
}

#[test]
fn cruise_phases_last_just_over_one_min_rtt() {
    let mut d = Drive::to_probe_bw(3);
    d.at_phase(3);
    let start = d.now;
    d.mid(start + RTT, 100); // exactly min_rtt (10000 µs) later: not "more than"
    assert_eq!(d.b.cycle_index(), 3);
    d.mid(start + RTT + US, 100);
    assert_eq!(d.b.cycle_index(), 4);
    assert_eq!(d.b.pacing_gain(), 1.0);
}

#[test]
fn probe_phase_needs_five_quarters_bdp_in_flight_or_a_loss_and_drain_phase_ends_at_one_bdp() {
    let mut d = Drive::to_probe_bw(3);
    d.at_phase(7);
    let t0 = d.now;
    d.mid(t0 + RTT + US, 100);
    assert_eq!((d.b.cycle_index(), d.b.pacing_gain()), (0, 1.25));
    assert_eq!(d.w.pacing_rate, 17_918_982);
    // Target: bdp(5/4) 125 + 3 * tso 12 = 161 -> 162, +2 in phase 0 = 164; the
    // check counts the 12-segment burst about to leave: prior_in_flight >= 152.
    let t1 = d.now;
    d.mid(t1 + 2 * RTT, 150); // prior_in_flight = 151, well past min_rtt
    assert_eq!(d.b.cycle_index(), 0);
    d.mid(t1 + 2 * RTT + US, 151); // prior_in_flight = 152
    assert_eq!((d.b.cycle_index(), d.b.pacing_gain()), (1, 0.75));
    // A loss also ends the probe once it has lasted min_rtt.
    let mut e = Drive::to_probe_bw(3);
    e.at_phase(0);
    let t = e.now;
    let prior = e.b.core.next_rtt_delivered - 1;
    e.ack_full(t + RTT + US, 1, prior, 100, RTT, RTT, 100, 1, false);
    assert_eq!(e.b.cycle_index(), 1);
    // 3/4 drains until inflight is one BDP: 100 + 3 * tso 7 = 121 -> 122.
    assert_eq!(d.w.pacing_rate, 10_751_389);
    let t2 = d.now;
    d.mid(t2 + MS, 122); // prior_in_flight 123
    assert_eq!(d.b.cycle_index(), 1);
    d.mid(t2 + 2 * MS, 121); // prior_in_flight 122, long before min_rtt
    assert_eq!((d.b.cycle_index(), d.b.pacing_gain()), (2, 1.0));
}

#[test]
fn phase_ends_count_what_the_path_delivers_before_the_next_departure() {
    // bbr_packets_in_net_at_edt: the next skb may leave 1 000 µs after the ACK
    // (tp->tcp_wstamp_ns); by then the path delivers bw * 1 000 µs =
    // 167 772 * 1 000 >> 24 = 9 packets (9.99999, truncated).
    let mut d = Drive::to_probe_bw(3);
    d.at_phase(7);
    let t0 = d.now;
    d.mid(t0 + RTT + US, 100);
    assert_eq!((d.b.cycle_index(), d.b.pacing_gain()), (0, 1.25));
    // Probe target 164 as above: prior_in_flight + 12 (the burst at EDT) - 9
    // >= 164 needs prior_in_flight 161, not 152.
    let t1 = d.now;
    d.wstamp = t1 + 2 * RTT + 1_000 * US;
    d.mid(t1 + 2 * RTT, 159); // prior_in_flight 160: 160 + 12 - 9 = 163
    assert_eq!(d.b.cycle_index(), 0);
    d.wstamp = t1 + 2 * RTT + US + 1_000 * US;
    d.mid(t1 + 2 * RTT + US, 160); // prior_in_flight 161: 164
    assert_eq!((d.b.cycle_index(), d.b.pacing_gain()), (1, 0.75));
    // Drain target 122 (one BDP + budget): prior_in_flight - 9 <= 122 ends
    // the 3/4 phase at prior_in_flight 131, not 122.
    let t2 = d.now;
    d.wstamp = t2 + MS + 1_000 * US;
    d.mid(t2 + MS, 131); // prior_in_flight 132: 123
    assert_eq!(d.b.cycle_index(), 1);
    d.wstamp = t2 + 2 * MS + 1_000 * US;
    d.mid(t2 + 2 * MS, 130); // prior_in_flight 131: 122
    assert_eq!((d.b.cycle_index(), d.b.pacing_gain()), (2, 1.0));
    // A departure time already past counts as now (edt = max(wstamp, now)):
    // the 3/4 phase then ends at prior_in_flight 122 exactly as without a lag.
    let mut e = Drive::to_probe_bw(3);
    e.at_phase(1);
    let t3 = e.now;
    e.wstamp = t3; // long gone by the ACK below
    e.mid(t3 + MS, 122); // prior_in_flight 123
    assert_eq!(e.b.cycle_index(), 1);
    e.mid(t3 + 2 * MS, 121); // prior_in_flight 122
    assert_eq!(e.b.cycle_index(), 2);
    // More delivered before the EDT than is in flight: none left in the network.
    let mut f = Drive::to_probe_bw(3);
    f.at_phase(1);
    let t4 = f.now;
    f.wstamp = t4 + MS + 20 * MS; // 20 000 µs: 199 packets
    let c = f.view(150);
    assert_eq!(f.b.packets_in_net_at_edt(&c, &f.w, 150), 0);
    let c = ConnView { now: t4 + MS + 19 * MS, ..c }; // 1 000 µs: 150 - 9
    assert_eq!(f.b.packets_in_net_at_edt(&c, &f.w, 150), 141);
}

#[test]
fn gain_cycle_runs_five_quarters_three_quarters_then_six_cruise_phases_in_a_pipe() {
    // 10000 packets/s bottleneck (1 per 100 µs), 10 ms base RTT: BDP 100 packets.
    let mut p = pipe(7, 100 * US, RTT);
    p.run_until(2 * NS_PER_SEC);
    let steps: Vec<(Nanos, usize, f64)> = p.trace.iter().filter(|s| s.state.0 == Mode::ProbeBw).map(|s| (s.t, s.state.1, s.state.2)).collect();
    assert!(steps.len() > 10_000);
    // Phase changes: (time, new phase, its gain).
    let mut changes = Vec::new();
    for w in steps.windows(2) {
        if w[1].1 != w[0].1 {
            assert_eq!(w[1].1, (w[0].1 + 1) % 8, "phases advance one at a time");
            changes.push(w[1]);
        }
    }
    assert!(changes.len() >= 3 * 8, "only {} phase changes", changes.len());
    for &(_, idx, gain) in &changes {
        assert_eq!(gain, [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0][idx]);
    }
    let min_rtt = p.cc.min_rtt_ns();
    assert_eq!(min_rtt, 10_100 * US); // 10 ms propagation + 100 µs service
    for w in changes.windows(2) {
        let (t0, idx, _) = w[0];
        let len = w[1].0 - t0;
        match idx {
            // Probing lasts at least min_rtt; here the 1.25x inflight target takes longer.
            0 => assert!(len > min_rtt, "probe phase {len} ns"),
            // Draining stops at one BDP in flight, at the latest after min_rtt.
            1 => assert!(len <= min_rtt + MS, "drain phase {len} ns"),
            // Cruising lasts min_rtt, ended by the first ACK after it.
            _ => assert!(len > min_rtt && len <= min_rtt + 300 * US, "cruise phase {len} ns"),
        }
    }
}

// ---------------------------------------------------------------------------
// Bandwidth filter
// ---------------------------------------------------------------------------

#[test]
fn max_bw_filter_forgets_a_peak_after_ten_rounds() {
    let mut d = Drive::new(0);
    d.round(RTT, 200, 100); // round 1: bw 335544
    assert_eq!(d.b.bw_raw(), 335_544);
    for i in 2..=11 {
        d.round(i * RTT, 100, 100); // rounds 2..11: bw 167772
        assert_eq!(d.b.bw_raw(), 335_544, "round {i}: the peak is at most 10 rounds old");
    }
    d.round(12 * RTT, 100, 100); // round 12: the peak of round 1 is 11 rounds old
    assert_eq!(d.b.round_count(), 12);
    assert_eq!(d.b.bw_raw(), BW_10K_PPS);
}

#[test]
fn app_limited_samples_do_not_lower_the_max_filter_however_long_they_last() {
    let mut d = Drive::new(0);
    d.round(RTT, 100, 100);
    assert_eq!(d.b.bw_raw(), BW_10K_PPS);
    for i in 2..=30 {
        let prior = d.delivered;
        d.ack_full(i * RTT, 10, prior, 10, RTT, RTT, 10, 0, true); // 10 packets / 10 ms, app-limited
    }
    assert_eq!(d.b.bw_raw(), BW_10K_PPS);
    assert_eq!(d.b.round_count(), 30);
    assert_eq!(d.b.mode(), Mode::Startup, "app-limited rounds do not count toward a full pipe");
    // An app-limited sample that beats the estimate does count.
    let prior = d.delivered;
    d.ack_full(31 * RTT, 10, prior, 200, RTT, RTT, 10, 0, true);
    assert_eq!(d.b.bw_raw(), 335_544);
}

// ---------------------------------------------------------------------------
// cwnd
// ---------------------------------------------------------------------------

#[test]
fn target_cwnd_is_two_bdp_plus_the_quantization_budget() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 300;
    d.mid(d.now + MS, 100);
    // bdp = ceil(167772 * 10000 * 2 / 2^24) = 200; + 1 of ACK aggregation (one
    // packet per ACK always counts as 1 extra); + 3 * 9 (TSO goal at 14335186
    // B/s) = 228, already even.
    assert_eq!(d.b.core.ack.extra_acked(), 1);
    assert_eq!(d.w.cwnd, 228);
    // In the probing phase: pacing 17918982 B/s, TSO goal 12: 237 -> 238, +2 = 240.
    d.at_phase(0);
    d.w.cwnd = 300;
    d.mid(d.now + MS, 100);
    assert_eq!(d.w.cwnd, 240);
    // Below target, cwnd grows by the packets acked.
    d.at_phase(2);
    d.w.cwnd = 100;
    d.mid(d.now + MS, 100);
    assert_eq!(d.w.cwnd, 101);
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_the_saved_cwnd() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 300;
    d.mid(d.now + MS, 100);
    assert_eq!(d.w.cwnd, 228);
    // Loss detected: the endpoint asks for ssthresh, then enters Recovery.
    let c = d.view(200);
    let ss = d.b.ssthresh(&c, &d.w);
    assert_eq!(ss, d.w.ssthresh, "BBR leaves ssthresh as it is");
    assert_eq!(d.b.core.prior_cwnd, 228);
    d.ca_state = CaState::Recovery;
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack_full(d.now + MS, 1, prior, 100, RTT, RTT, 200, 3, false);
    assert_eq!(d.w.cwnd, 201, "inflight 200 + 1 acked");
    let round_end = d.delivered;
    assert_eq!(d.b.core.next_rtt_delivered, round_end, "recovery starts a round");
    d.ack_full(d.now + MS, 1, round_end - 5, 100, RTT, RTT, 199, 2, false);
    assert_eq!(d.w.cwnd, 200, "max(201 - 2 lost, 199 + 1 acked)");
    // A round later, normal growth toward the target resumes.
    d.ack_full(d.now + MS, 1, round_end, 100, RTT, RTT, 199, 0, false);
    assert_eq!(d.w.cwnd, 201);
    // Leaving recovery gives back the cwnd saved at its start.
    d.ca_state = CaState::Open;
    d.mid(d.now + MS, 150);
    assert_eq!(d.w.cwnd, 228);
}

#[test]
fn cwnd_never_goes_below_four_packets_outside_recovery() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 3;
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack_full(d.now + MS, 1, prior, 100, RTT, RTT, 2, 2, false);
    assert_eq!(d.w.cwnd, 4, "3 - 2 lost = 1, + 1 acked = 2, floor 4");
}

#[test]
fn an_rto_ends_the_round_resets_full_bw_and_starts_long_term_sampling() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 228;
    let c = d.view(100);
    d.b.ssthresh(&c, &d.w);
    d.b.set_state(&c, CaState::Loss, &mut d.w);
    assert_eq!(d.b.full_bw, 0);
    assert!(d.b.core.round_start);
    assert_eq!(d.b.core.prev_ca_state, CaState::Loss);
    assert!(d.b.lt_is_sampling);
    // The RTO cut cwnd to 1; once back to Open, BBR restores the saved cwnd.
    d.w.cwnd = 1;
    d.mid(d.now + MS, 0);
    assert_eq!(d.w.cwnd, 228);
}

#[test]
fn undo_keeps_cwnd_but_restarts_pipe_full_detection_and_long_term_sampling() {
    let mut d = Drive::new(0);
    d.round(RTT, 100, 400);
    d.round(2 * RTT, 100, 400);
    assert_eq!((d.b.full_bw, d.b.core.full_bw_cnt), (BW_10K_PPS, 1));
    d.b.lt_is_sampling = true;
    d.w.cwnd = 57;
    let c = d.view(40);
    assert_eq!(d.b.undo_cwnd(&c, &d.w), 57);
    assert_eq!((d.b.full_bw, d.b.core.full_bw_cnt, d.b.lt_is_sampling), (0, 0, false));
}

// ---------------------------------------------------------------------------
// PROBE_RTT
// ---------------------------------------------------------------------------

#[test]
fn probe_rtt_starts_when_min_rtt_is_ten_seconds_old_at_jiffy_resolution() {
    let mut d = Drive::to_probe_bw(1);
    // min_rtt 10000 µs was first measured at 8 ms = jiffy 2 after boot (HZ 250, 4 ms per jiffy); the equal samples
    // after it do not move the stamp (`<`, Linux >= 5.10).
    assert_eq!((d.b.core.min_rtt_us, d.b.core.min_rtt_stamp), (10_000, jiffy(2)));
    d.at_phase(2);
    d.w.cwnd = 228;
    let prior = d.b.core.next_rtt_delivered - 1;
    // Expired once jiffies > 2 + 2500, i.e. from 2503 * 4 ms = 10.012 s.
    d.ack_full(10_012 * MS - 1, 1, prior, 100, RTT, 11 * MS, 100, 0, false);
    assert_eq!(d.b.mode(), Mode::ProbeBw);
    assert_eq!(d.w.cwnd, 228);
    d.ack_full(10_012 * MS, 1, prior, 100, RTT, 11 * MS, 100, 0, false);
    assert_eq!(d.b.mode(), Mode::ProbeRtt);
    assert_eq!(d.w.cwnd, 4);
    assert_eq!((d.b.pacing_gain(), d.b.cwnd_gain()), (1.0, 1.0));
    assert_eq!(d.b.core.prior_cwnd, 228);
    assert_eq!(d.b.min_rtt_ns(), 11 * MS, "an expired filter takes the next sample");
}

#[test]
fn a_sample_equal_to_min_rtt_does_not_postpone_probe_rtt() {
    // Linux >= 5.10 (1b9e2a8c99a5): `rs->rtt_us < bbr->min_rtt_us`; with `<=` an equal sample (a retransmission's
    // ms-granular timestamp RTT) moved the stamp and PROBE_RTT could be put off for as long as such samples came.
    let mut d = Drive::to_probe_bw(1);
    assert_eq!((d.b.core.min_rtt_us, d.b.core.min_rtt_stamp), (10_000, jiffy(2)));
    d.at_phase(2);
    d.w.cwnd = 228;
    let prior = d.b.core.next_rtt_delivered - 1;
    // 5 s in: a sample of exactly min_rtt leaves the stamp where it was (with `<=` it moved to jiffy 1250)
    d.ack_full(5_000 * MS, 1, prior, 100, RTT, 10 * MS, 100, 0, false);
    assert_eq!((d.b.core.min_rtt_us, d.b.core.min_rtt_stamp), (10_000, jiffy(2)));
    // so the filter expires 10 s after the first sample: PROBE_RTT at 10.012 s (with `<=`: not before 15.004 s)
    d.ack_full(10_012 * MS, 1, prior, 100, RTT, 10 * MS, 100, 0, false);
    assert_eq!(d.b.mode(), Mode::ProbeRtt);
    // a smaller one still moves both
    let mut e = Drive::to_probe_bw(1);
    e.ack_full(5_000 * MS, 1, prior, 100, RTT, 10 * MS - 1_000, 100, 0, false);
    assert_eq!((e.b.core.min_rtt_us, e.b.core.min_rtt_stamp), (9_999, jiffy(1250)));
}

#[test]
fn probe_rtt_holds_four_packets_for_200_ms_and_a_round_then_restores_cwnd() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 228;
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack_full(10_044 * MS, 1, prior, 100, RTT, 11 * MS, 100, 0, false);
    assert_eq!(d.b.mode(), Mode::ProbeRtt);
    // Inflight falls to 4 at 10.100 s = jiffy 2525: done at jiffy 2525 + 50.
    d.ack_full(10_100 * MS, 1, prior, 100, RTT, 11 * MS, 4, 0, false);
    assert_eq!(d.b.core.probe_rtt.done_stamp(), jiffy(2575));
    let round_end = d.delivered;
    // 220 ms later, but no packet sent after 10.100 s has been acked: stay.
    d.ack_full(10_320 * MS, 1, round_end - 1, 100, RTT, 11 * MS, 4, 0, false);
    assert_eq!((d.b.mode(), d.w.cwnd), (Mode::ProbeRtt, 4));
    // Samples are app-limited now (the kernel marks tp->app_limited).
    assert!(d.b.core.sock.in_probe_rtt_bubble(round_end));
    // The round ends: both conditions hold, back to PROBE_BW with the old cwnd
    // 228, + 1 acked (the target is now 248: min_rtt became 11 ms).
    d.ack_full(10_330 * MS, 1, round_end, 100, RTT, 11 * MS, 4, 0, false);
    assert_eq!(d.b.mode(), Mode::ProbeBw);
    assert_eq!(d.w.cwnd, 229);
    assert_eq!(d.b.core.min_rtt_stamp, jiffy(2582), "10.330 s: the next PROBE_RTT is 10 s away");
}

#[test]
fn probe_rtt_waits_200_ms_even_when_the_round_ends_sooner() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 228;
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack_full(10_044 * MS, 1, prior, 100, RTT, 11 * MS, 100, 0, false);
    d.ack_full(10_100 * MS, 1, prior, 100, RTT, 11 * MS, 4, 0, false);
    let round_end = d.delivered;
    d.ack_full(10_112 * MS, 1, round_end, 100, RTT, 11 * MS, 4, 0, false);
    assert!(d.b.core.probe_rtt.round_done());
    // Jiffy 2575 is 10.300..10.304 s; "after" it means jiffy 2576 = 10.304 s.
    d.ack_full(10_304 * MS - 1, 1, round_end, 100, RTT, 11 * MS, 4, 0, false);
    assert_eq!(d.b.mode(), Mode::ProbeRtt);
    d.ack_full(10_304 * MS, 1, round_end, 100, RTT, 11 * MS, 4, 0, false);
    assert_eq!((d.b.mode(), d.w.cwnd), (Mode::ProbeBw, 229));
}

#[test]
fn probe_rtt_in_a_pipe_dips_to_four_packets_and_remeasures_min_rtt() {
    // Base RTT grows from 10 to 12 ms at 1 s, so min_rtt (10.1 ms) is never
    // confirmed again and expires 10 s after its last sample.
    let mut p = pipe(5, 100 * US, RTT);
    p.run_until(NS_PER_SEC);
    p.rtt = 12 * MS;
    p.run_until(NS_PER_SEC + 100 * MS); // packets sent before 1 s are all acked
    let stamp = p.cc.core.min_rtt_stamp;
    assert_eq!(p.cc.min_rtt_ns(), 10_100 * US);
    p.run_until(12 * NS_PER_SEC);
    let tr = &p.trace;
    let enter = tr.iter().position(|s| s.state.0 == Mode::ProbeRtt).expect("PROBE_RTT entered");
    let exit = enter + tr[enter..].iter().position(|s| s.state.0 != Mode::ProbeRtt).expect("PROBE_RTT left");
    let (t_in, t_out) = (tr[enter].t, tr[exit].t);
    // Entry on the first ACK past jiffy stamp + 2500.
    assert_eq!(jiffies32(t_in), stamp.wrapping_add(2501), "entered at {t_in}");
    assert!(!after(jiffies32(tr[enter - 1].t), stamp.wrapping_add(2500)));
    // cwnd 4 throughout; at least 200 ms (+ jiffy rounding) and at most a couple of RTTs more.
    assert!(tr[enter..exit].iter().all(|s| s.cwnd <= 4));
    let len = t_out - t_in;
    assert!((200 * MS..=200 * MS + 4 * MS + 3 * 12_100 * US).contains(&len), "PROBE_RTT lasted {len} ns");
    // Back to PROBE_BW with the cwnd it had before (+ 1 acked: the target grew
    // with min_rtt), and the new min_rtt.
    assert_eq!(tr[exit].state.0, Mode::ProbeBw);
    assert_eq!(tr[exit].cwnd, tr[enter - 1].cwnd + 1);
    assert_eq!(p.cc.min_rtt_ns(), 12_100 * US);
}

// ---------------------------------------------------------------------------
// Idle restart
// ---------------------------------------------------------------------------

#[test]
fn restart_from_idle_paces_at_the_estimate_in_probe_bw() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(0);
    assert_eq!(d.w.pacing_rate, 17_918_982);
    let c = ConnView { app_limited: 1, ..d.view(0) };
    let not_limited = d.view(0);
    d.b.cwnd_event(&not_limited, CwndEvent::TxStart, &mut d.w);
    assert_eq!(d.w.pacing_rate, 17_918_982, "not app-limited: nothing happens");
    d.b.cwnd_event(&c, CwndEvent::TxStart, &mut d.w);
    assert_eq!(d.w.pacing_rate, 14_335_186);
    assert!(d.b.core.idle_restart);
    d.mid(d.now + MS, 1);
    assert!(!d.b.core.idle_restart, "the first ACK of new data ends the restart");
}

// ---------------------------------------------------------------------------
// Long-term bandwidth (policer detection)
// ---------------------------------------------------------------------------

#[test]
fn two_consistent_lossy_intervals_switch_to_their_average_bw() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    let c = d.view(100);
    d.b.lt_bw_interval_done(&c, 40_000);
    assert!(!d.b.lt_use_bw(), "a first interval only records its bw");
    d.b.lt_bw_interval_done(&c, 44_000); // |diff| 4000 <= 40000 / 8
    assert!(d.b.lt_use_bw());
    assert_eq!(d.b.bw_raw(), 42_000);
    assert_eq!(d.b.pacing_gain(), 1.0);
    // Inconsistent intervals (more than 1/8 and 4 kbit/s apart) do not.
    let mut e = Drive::to_probe_bw(1);
    e.b.lt_bw_interval_done(&c, 40_000);
    e.b.lt_bw_interval_done(&c, 46_000);
    assert!(!e.b.lt_use_bw());
    assert_eq!(e.b.lt_bw, 46_000);
}

#[test]
fn a_token_bucket_policer_engages_long_term_bw_at_the_policed_rate() {
    // 10000 packets/s link, 10 ms RTT, policed to 2500 packets/s (one token per
    // 400 µs, bucket of 100 packets). The burst lets STARTUP measure far more
    // than 2500 packets/s; the max filter keeps that for 10 rounds while 3/4
    // of what BBR sends is dropped, which is what the detector looks for.
    let mut p = pipe(9, 100 * US, RTT);
    p.policer = Some(Policer { gap: 400 * US, depth: 100, credit: 100 * 400 * US, last: 0 });
    while !p.cc.lt_use_bw() {
        assert!(p.now < NS_PER_SEC, "no policer detected in 1 s");
        p.run_until(p.now + MS);
    }
    // Measured (seed 9, the shared pipe, which enters Recovery on a loss as the
    // kernel does): detected at 143 ms with lt_bw 42171 (+0.5%), after 701
    // lost and 411 delivered; 63 more of the packets sent before are lost by
    // 153 ms; then 0 of 747 in 300 ms. (v1's own pipe, without Recovery:
    // detected at 132 ms, lt_bw 42743, 33 of 749 lost in the 300 ms from then.)
    // 2500 packets/s = 2^24 / 400 = 41943 in bw units; allow 5%.
    let lt = p.cc.lt_bw;
    assert!((39_846..=44_040).contains(&lt), "lt_bw {lt} vs policed 41943");
    // While policed (48 rounds of ~10 ms), BBR paces at 1.0 x lt_bw and losses
    // nearly stop, for what is sent from now on: the packets sent before are
    // counted out first (each is acked or marked lost, in order).
    let sent0 = p.sent;
    while p.delivered + p.lost < sent0 {
        p.run_until(p.now + MS);
    }
    let (lost0, delivered0, first) = (p.lost, p.delivered, p.trace.len());
    p.run_until(p.now + 300 * MS);
    assert!(p.cc.lt_use_bw());
    assert!(p.trace[first..].iter().filter(|s| s.state.0 == Mode::ProbeBw).all(|s| s.state.2 == 1.0));
    let (lost, delivered) = (p.lost - lost0, p.delivered - delivered0);
    assert!(lost * 20 < delivered, "lost {lost} of {delivered} while using lt_bw");
}

#[test]
fn long_term_bw_is_dropped_after_48_rounds_to_probe_again() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    let c = d.view(100);
    d.b.lt_bw_interval_done(&c, 40_000);
    d.b.lt_bw_interval_done(&c, 40_000);
    assert!(d.b.lt_use_bw());
    for i in 1..=47 {
        d.round(d.now + RTT, 100, 100);
        assert!(d.b.lt_use_bw(), "round {i}");
    }
    d.round(d.now + RTT, 100, 100);
    assert!(!d.b.lt_use_bw());
    assert_eq!(d.b.mode(), Mode::ProbeBw);
}

// ---------------------------------------------------------------------------
// ACK aggregation
// ---------------------------------------------------------------------------

#[test]
fn an_ack_burst_beyond_the_expected_rate_raises_the_cwnd_target() {
    let mut d = Drive::to_probe_bw(1);
    d.at_phase(2);
    d.w.cwnd = 228;
    // The last ACK (1 packet at 40 ms) opened an epoch. 1 ms later 9 packets
    // were expected (167772 * 1000 >> 24) but only 1 came, so an ACK for 40
    // packets opens a new epoch with 40 extra.
    let t = d.now;
    let prior = d.b.core.next_rtt_delivered - 1;
    d.ack_full(t + MS, 40, prior, 100, RTT, RTT, 100, 0, false);
    assert_eq!(d.b.core.ack.extra_acked(), 40);
    // Target 200 + 40 + 27 = 267 -> 268; cwnd 228 + 40 acked fits.
    assert_eq!(d.w.cwnd, 268);
    // 1 ms on, 20 more: 60 acked in the epoch where 9 were expected: 51 extra.
    d.ack_full(t + 2 * MS, 20, prior, 100, RTT, RTT, 100, 0, false);
    assert_eq!(d.b.core.ack.extra_acked(), 51);
    // Target 200 + 51 + 27 = 278 caps 268 + 20.
    assert_eq!(d.w.cwnd, 278);
}
