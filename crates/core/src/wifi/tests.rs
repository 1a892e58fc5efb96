//! Layer 1: the airtime arithmetic and the schedulers on hand-built frame
//! sequences (exact values); the contention process against Bianchi's
//! analysis and a single station's saturation throughput against the
//! closed-form airtime (seeded, tolerances stated).

use super::airtime::*;
use super::mac::{Aggregate, Design, Frame, Node, HW_AGGREGATES, LEGACY_DRIVER_FRAMES};
use super::medium::{bianchi, Medium};
use super::*;
use crate::qdisc::{Events, Limit, Packet, PacketMeta, QdiscConfig};
use crate::rng::stream;

fn mcs(i: usize) -> Phy {
    Phy::ht(i as u32).unwrap()
}

#[test]
fn a_1500_byte_frame_at_mcs0_takes_1936_us_and_its_ack_44_us() {
    let phy = mcs(0);
    // PSDU 1538 B: 22 + 12304 bits over 26 bits/symbol = 475 symbols = 1900 µs, + 36 µs preamble.
    let (psdu, n) = psdu_bytes([1500]);
    assert_eq!((psdu, n), (1538, 1));
    assert_eq!(phy.ppdu_ns(psdu), 1_936_000);
    // The ACK goes at 6 Mbit/s (the highest basic rate not above 6.5): 20 + 6 symbols.
    assert_eq!(phy.response_rate(), 6_000_000);
    assert_eq!(response_ns(&phy, 1), 44_000);
    assert_eq!(txop_ns(&phy, psdu, 1), 1_936_000 + 16_000 + 44_000);
}

#[test]
fn ten_frames_at_mcs15_take_992_us_and_a_32_us_block_ack() {
    let phy = mcs(15);
    assert_eq!((phy.rate_bps, phy.streams), (130_000_000, 2));
    let (psdu, n) = psdu_bytes([1500; 10]);
    // Each subframe: 4 B delimiter + 1538 B MPDU, padded to 4 B before the next one (ath9k's `al`: no
    // padding after the last): 10 × 1542 + 9 × 2 = 15438 B.
    assert_eq!((psdu, n), (15_438, 10));
    // 123526 bits / 520 = 238 symbols = 952 µs, + 40 µs HT-mixed preamble with two LTFs.
    assert_eq!(phy.ppdu_ns(psdu), 992_000);
    // BlockAck (32 B) at 24 Mbit/s: 20 µs + 3 symbols.
    assert_eq!(response_ns(&phy, 10), 32_000);
    assert_eq!(txop_ns(&phy, psdu, 10), 1_040_000);
}

#[test]
fn timing_constants_are_the_5ghz_ofdm_ones() {
    assert_eq!((SLOT_NS, SIFS_NS, DIFS_NS, AIFS_NS), (9_000, 16_000, 34_000, 43_000));
    assert_eq!((CW_MIN, CW_MAX), (15, 1023));
    assert_eq!(Phy::from_rate(144_400_000).streams, 3);
    assert_eq!(Phy::from_rate(13_000_000).streams, 1);
    assert!(Phy::from_mcs("mcs16").is_none() && Phy::from_mcs("fast").is_none());
}

fn frame(sta: u32, len: u32, id: u64, now: Nanos) -> Packet<Frame<u64>> {
    Packet { meta: PacketMeta { flow: id % 7 + 1, len, enqueued_at: now, ..Default::default() }, data: Frame { data: Some(id), sta, retries: 0, seq: super::mac::NO_SEQ, air_us: 0, probe: None } }
}

fn node(design: Design, n: usize) -> Node<u64> {
    let iface = if design == Design::Legacy {
        Some(crate::qdisc::build::<Frame<u64>>(&QdiscConfig { kind: "fifo".into(), limit: Limit { bytes: None, pkts: Some(1000) }, ..Default::default() }).unwrap())
    } else {
        None
    };
    Node::new(design, iface, &vec![1.0; n], None)
}

fn stations(aggs: &[Aggregate<u64>]) -> Vec<(usize, usize)> {
    aggs.iter().map(|a| (a.sta, a.frames.len())).collect()
}

/// Fill, take the first aggregate out (as the medium would: delivered, its block-ack window moves on), repeat.
fn schedule(nd: &mut Node<u64>, phys: &[Phy], rounds: usize, charge: bool) -> Vec<(usize, usize)> {
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    let mut out = Vec::new();
    for _ in 0..rounds {
        nd.refill(phys, 0, &mut rng, &mut ev, &mut |_, _| {});
        let Some(a) = nd.hw.pop_front() else { break };
        for p in &a.frames {
            nd.baw[a.sta].complete(p.data.seq);
        }
        if charge {
            nd.charge(a.sta, phys[a.sta].ppdu_ns(a.psdu));
        }
        out.push(a);
    }
    stations(&out)
}

#[test]
fn ath9k_sizes_a_4_ms_aggregate_by_whole_symbols_at_the_rate() {
    // ath_max_framelen(4096, mcs): (4096 µs − preamble) / 4 µs symbols × N_DBPS − 22 bits, in bytes.
    // MCS0: (4096 − 36) / 4 = 1015 symbols × 26 bits − 22 = 26368 bits = 3296 B.
    assert_eq!(mcs(0).max_framelen(MAX_AGGR_US), 3296);
    // MCS7: 1015 × 260 − 22 = 263878 bits = 32984 B.
    assert_eq!(mcs(7).max_framelen(MAX_AGGR_US), 32984);
    // MCS8 (two streams, 40 µs preamble): 1014 × 52 − 22 = 52706 bits = 6588 B.
    assert_eq!(mcs(8).max_framelen(MAX_AGGR_US), 6588);
    // MCS15: 1014 × 520 − 22 = 527258 bits = 65907 B, capped at 65532 B.
    assert_eq!(mcs(15).max_framelen(MAX_AGGR_US), 65532);
    assert_eq!(mcs(15).aggr_limit(), 65532);
    // A rate given directly: 144.4 Mbit/s has N_DBPS = 577.6, so 1014 symbols hold 585686 bits: capped.
    assert_eq!(Phy::from_rate(144_400_000).max_framelen(MAX_AGGR_US), 65532);
    // 10 Mbit/s (one stream): 1015 × 40 − 22 = 40578 bits = 5072 B.
    assert_eq!(Phy::from_rate(10_000_000).max_framelen(MAX_AGGR_US), 5072);
    // The 32-subframe limit is half the block-ack window.
    assert_eq!(MAX_AMPDU_FRAMES, 32);
}

#[test]
fn aggregates_stop_at_32_subframes_or_the_4_ms_frame_length() {
    // 1500-B packets: framelen 1538, al_delta = 1542, padding 2 B before the next subframe,
    // so n subframes count 1544 n − 2 bytes.
    // MCS0: 3296 B hold 2 (3086 B; a third would need 4630). MCS15: 32 subframes (49406 B).
    // MCS7: 32984 B hold 21 (32422 B; the old 4.000-ms-PPDU rule gave 20).
    let phys = [mcs(0), mcs(15), mcs(7)];
    let mut nd = node(Design::Fq, 3);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..100 {
        for s in 0..3 {
            nd.enqueue(frame(s, 1500, 1000 * s as u64 + i, 0), 0, &mut rng, &mut ev);
        }
    }
    // The order is ath9k's before the airtime scheduler, with the scheduler called at each
    // completion: the station refused for a full hardware queue goes to the tail, behind the one
    // that just sent (station 2 first, then 1, then 0: 0, 1 | 0, 2 | 1, 0).
    assert_eq!(schedule(&mut nd, &phys, 6, false), vec![(0, 2), (1, 32), (0, 2), (2, 21), (1, 32), (0, 2)]);
    // Every aggregate's PPDU stays within 4096 µs.
    assert!(mcs(7).ppdu_ns(21 * 1544) <= MAX_PPDU_NS && mcs(0).ppdu_ns(2 * 1544) <= MAX_PPDU_NS);
}

#[test]
fn fq_takes_turns_per_aggregate_and_airtime_by_deficit() {
    let phys = [mcs(15), mcs(0)];
    let fill = |design| {
        let mut nd = node(design, 2);
        let mut rng = stream(1, 1);
        let mut ev = Events::default();
        for i in 0..400 {
            nd.enqueue(frame((i % 2) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
        }
        for i in 400..1800 {
            nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
        }
        nd
    };
    // fq: one aggregate per turn, whatever its airtime (32 frames ≈ 3.13 ms vs 2 frames ≈ 3.92 ms);
    // whose turn it is, is ath9k's list before the airtime scheduler (Linux ≤ 4.10): a station
    // refused for a full hardware queue goes to the tail. With the scheduler called only at
    // completions and two stations, the one refused is always the one the next call reaches
    // second: station 0 is refused at the end of every call and station 1 sends each time
    // (arrivals, which call the scheduler too, break that parity in a real run).
    assert_eq!(schedule(&mut fill(Design::Fq), &phys, 6, false), vec![(0, 32), (1, 2), (1, 2), (1, 2), (1, 2), (1, 2)]);
    // airtime: both start at deficit 0 and get 300 µs; station 0 keeps the head while its
    // deficit is positive. Aggregates are charged their PPDU when taken (ath9k's
    // `ath_pkt_duration`, no SIFS or BlockAck): fast 32 frames = 3084 µs, slow 2 frames =
    // 3840 µs. The hardware queue holds two aggregates built before the first is charged,
    // so station 0 gets two in a row at the start
    // (deficit 300 - 2 x 3084 = -5868 µs after crediting, station 1 at 300 - 3840 = -3540):
    // station 1 climbs back above zero first (13 quanta), is served, then both alternate
    // by who reaches a positive deficit first.
    let mut nd = fill(Design::Airtime);
    let got = schedule(&mut nd, &phys, 6, true);
    assert_eq!(got, vec![(0, 32), (0, 32), (1, 2), (1, 2), (1, 2), (0, 32)]);
    // While both are backlogged (1600 and 200 packets: the TXQ's 4 MiB of truesize
    // holds 1820 full-size packets) the charged airtimes stay within two PPDUs plus a
    // quantum of each other (the hardware queue holds two aggregates built before either
    // is charged), although station 0 moves 16 times the bytes per aggregate: of 70
    // aggregates, 70 × 3840 / (3084 + 3840) = 38.8 → 39 are station 0's, 39 × 32 = 1248 frames.
    let mut nd = fill(Design::Airtime);
    let got = schedule(&mut nd, &phys, 70, true);
    assert_eq!(got.iter().filter(|g| g.0 == 0).map(|g| g.1).sum::<usize>(), 1248);
    let air = |s: usize| got.iter().filter(|g| g.0 == s).map(|g| phys[s].ppdu_ns(g.1 as u64 * 1544 - 2) as i64).sum::<i64>();
    assert!((air(0) - air(1)).abs() <= 2 * 3_840_000 + 300_000, "airtime {} vs {}", air(0), air(1));
    assert_eq!((phys[0].ppdu_ns(32 * 1544 - 2), phys[1].ppdu_ns(2 * 1544 - 2)), (3_084_000, 3_840_000));
    // Deficits after: each station is charged its TXOPs and credited 300 µs per pass.
    let fast = txop_ns(&phys[0], 32 * 1544, 32) as i64;
    let slow = txop_ns(&phys[1], 2 * 1544, 2) as i64;
    // Fast: 49408 B = 761 symbols + 40 µs preamble + SIFS + BlockAck at 24 Mbit/s (32 µs).
    // Slow: 3088 B = 951 symbols + 36 µs preamble + SIFS + BlockAck at 6 Mbit/s (68 µs).
    assert_eq!((fast, slow), (3_132_000, 3_924_000));
}

#[test]
fn legacy_driver_holds_123_frames_and_the_qdisc_blocks_the_others() {
    let phys = [mcs(0), mcs(15)];
    let mut nd = node(Design::Legacy, 2);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..200 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    for i in 0..10 {
        nd.enqueue(frame(1, 1500, 1000 + i, 0), 0, &mut rng, &mut ev);
    }
    assert_eq!(nd.driver_frames, LEGACY_DRIVER_FRAMES);
    // The fast station's packets wait behind the slow one's in the qdisc: only station 0 is served.
    assert_eq!(schedule(&mut nd, &phys, 3, false), vec![(0, 2), (0, 2), (0, 2)]);
    // Completing 6 frames frees 6 driver slots: the qdisc hands over 6 more of station 0's packets.
    nd.release(6, 0, &mut rng, &mut ev);
    assert_eq!(nd.driver_frames, LEGACY_DRIVER_FRAMES);
    assert_eq!(nd.backlog_pkts(), 210 - 6);
}

#[test]
fn retried_frames_go_first_and_in_order() {
    let phys = [mcs(15)];
    let mut nd = node(Design::Fq, 1);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..5 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let a = nd.hw.pop_front().unwrap();
    assert_eq!(a.frames.iter().map(|p| p.data.data.unwrap()).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    for mut p in a.frames.into_iter().filter(|p| p.data.data.unwrap() % 2 == 1).rev() {
        p.data.retries += 1;
        nd.requeue(p);
    }
    nd.enqueue(frame(0, 1500, 9, 0), 0, &mut rng, &mut ev);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let b = nd.hw.pop_front().unwrap();
    assert_eq!(b.frames.iter().map(|p| p.data.data.unwrap()).collect::<Vec<_>>(), vec![1, 3, 9]);
    assert_eq!(b.frames[0].data.retries, 1);
}

#[test]
fn backoff_freezes_while_another_node_transmits() {
    let mut m = Medium::new(3);
    let origin = AIFS_NS;
    m.activate_with(0, 0, 3);
    m.activate_with(1, 0, 5);
    assert_eq!(m.next_start(), Some(origin + 3 * SLOT_NS));
    let mut w = Vec::new();
    m.start(origin + 3 * SLOT_NS, &mut w);
    assert_eq!(w, vec![0]);
    m.busy(200_000);
    // Node 2 arrives during the busy period: it counts from the next idle grid.
    m.activate_with(2, 100_000, 2);
    m.end_with(200_000, &[(0, true)], |_| 7);
    // Node 1 has 5 - 3 = 2 slots left, like node 2: they collide.
    assert_eq!(m.next_start(), Some(200_000 + AIFS_NS + 2 * SLOT_NS));
    m.start(200_000 + AIFS_NS + 2 * SLOT_NS, &mut w);
    assert_eq!(w, vec![1, 2]);
    m.busy(300_000);
    m.end_with(300_000, &[(1, false), (2, false)], |cw| cw);
    assert_eq!((m.cw(0), m.cw(1), m.cw(2)), (CW_MIN, 31, 31));
    // Node 0 (backoff 7, 2 slots consumed before the collision) fires first, 5 slots in.
    assert_eq!(m.next_start(), Some(300_000 + AIFS_NS + 5 * SLOT_NS));
}

#[test]
fn a_node_arriving_mid_countdown_starts_on_the_next_slot_boundary() {
    let mut m = Medium::new(2);
    m.activate_with(0, 0, 10);
    m.activate_with(1, AIFS_NS + 2 * SLOT_NS + 1, 0);
    assert_eq!(m.next_start(), Some(AIFS_NS + 3 * SLOT_NS));
}

fn saturated(n: usize, design: Design, seed: u64, until: Nanos) -> Wifi<u64> {
    let cfg = WifiConfig {
        design,
        stations: (0..n).map(|i| StationConfig { name: format!("s{i}"), phy: mcs(7), mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: super::RateControl::Fixed }).collect(),
        qdisc: QdiscConfig { kind: "fifo".into(), limit: Limit { bytes: None, pkts: Some(1000) }, ..Default::default() },
        aql: None,
    };
    let mut w = Wifi::new(&cfg).unwrap();
    let mut rng = stream(seed, 9);
    let mut out = Vec::new();
    let mut drops = Vec::new();
    let mut id = 0u64;
    let mut now = 0;
    while now < until {
        // Keep every station's uplink backlogged (Bianchi's saturation assumption).
        for s in 0..n {
            while w.nodes[1 + s].backlog_pkts() < 200 {
                w.enqueue(now, s, true, Packet { meta: PacketMeta { flow: s as u64 + 1, len: 1500, ..Default::default() }, data: id }, &mut rng, &mut drops);
                id += 1;
            }
        }
        now = w.next_event().unwrap();
        w.poll(now, &mut rng, &mut out, &mut drops);
    }
    w
}

#[test]
fn collision_probability_of_saturated_stations_matches_bianchi() {
    // Bianchi (2000) reports his model within ~1-2 % of simulation; with 5-20k
    // attempts per case the sampling error of p is below 1 percentage point.
    // Tolerance: 15 % relative.
    for n in [5usize, 10, 20] {
        let w = saturated(n, Design::Fq, 3, 4_000_000_000);
        let (att, col) = w.attempts();
        let p = col.iter().sum::<u64>() as f64 / att.iter().sum::<u64>() as f64;
        let (_, pb) = bianchi(n, (CW_MIN + 1) as f64, 6);
        assert!((p / pb - 1.0).abs() < 0.15, "n={n}: simulated p={p:.4}, Bianchi p={pb:.4}");
    }
}

#[test]
fn one_saturated_station_gets_the_closed_form_throughput() {
    // 4096 µs at MCS7 (65 Mbit/s) hold 21 subframes of 1544 B (ath9k's byte count: 1544 k − 2 ≤ 32984).
    let w = saturated(1, Design::Fq, 5, 2_000_000_000);
    let phy = mcs(7);
    let k = (1..=64).take_while(|k| *k as u64 * 1544 - 2 <= phy.aggr_limit() as u64).last().unwrap();
    assert_eq!(k, 21);
    // Per TXOP: AIFS + mean backoff 7.5 slots + the TXOP itself.
    let per = AIFS_NS as f64 + 7.5 * SLOT_NS as f64 + txop_ns(&phy, k as u64 * 1544, k) as f64;
    let expect = k as f64 * 1500.0 * 8.0 / per * 1e9;
    let got = w.stations[0].up_bytes as f64 * 8.0 / 2.0;
    // 2 s ≈ 470 TXOPs: the mean backoff's standard error is 4.6 slots/√470 ≈ 0.2 slot ≈ 0.05 % of a TXOP.
    assert!((got / expect - 1.0).abs() < 0.01, "got {got:.0} bit/s, closed form {expect:.0}");
}

#[test]
fn the_reorder_buffer_releases_in_sequence_and_skips_given_up_frames() {
    let mut r = Reorder { next: 0, held: Default::default() };
    let d = |seq: u64| Some(Delivered { data: seq, meta: PacketMeta::default(), sta: 0, up: false });
    let mut out = Vec::new();
    r.put(1, d(1), &mut out);
    r.put(2, d(2), &mut out);
    assert!(out.is_empty(), "1 and 2 wait for 0");
    r.put(0, d(0), &mut out);
    assert_eq!(out.iter().map(|x| x.data).collect::<Vec<_>>(), vec![0, 1, 2]);
    out.clear();
    r.put(4, d(4), &mut out);
    r.put(3, None, &mut out); // 3 given up after the retry limit: 4 goes
    assert_eq!(out.iter().map(|x| x.data).collect::<Vec<_>>(), vec![4]);
    assert_eq!(r.next, 5);
}

#[test]
fn a_node_leaving_the_contention_hands_the_next_slot_to_the_one_after_it() {
    let mut m = Medium::new(3);
    m.activate_with(0, 0, 2);
    m.activate_with(1, 0, 7);
    m.activate_with(2, 0, 4);
    assert_eq!(m.next_start(), Some(AIFS_NS + 2 * SLOT_NS));
    m.deactivate(0);
    assert_eq!(m.next_start(), Some(AIFS_NS + 4 * SLOT_NS));
    m.deactivate(1); // not the earliest: nothing changes
    assert_eq!(m.next_start(), Some(AIFS_NS + 4 * SLOT_NS));
    m.deactivate(2);
    assert_eq!(m.next_start(), None);
}

#[test]
fn a_bss_holds_at_most_2007_stations() {
    let st = |n: usize| vec![StationInput { name: "s".into(), mcs: Some(15), weight: 1.0, ..Default::default() }; n];
    let q = QdiscConfig::default();
    assert!(WifiConfig::resolve("airtime", &st(MAX_STATIONS), q.clone(), None).is_ok());
    let e = WifiConfig::resolve("airtime", &st(10_000), q, None).unwrap_err();
    assert_eq!(e, "wifi.stations: at most 2007 stations (802.11 association IDs 1-2007), got 10000");
}

#[test]
fn a_response_goes_at_the_basic_rate_below_the_mcs_modulations_ofdm_rate() {
    // Non-HT reference rates (802.11-2016 §10.7, "Non-HT basic rate calculation"): BPSK 1/2 -> 6, QPSK 1/2 -> 12, QPSK 3/4 -> 18,
    // 16-QAM 1/2 -> 24 Mbit/s and up; the response takes the highest of 6/12/24 not above it.
    let got: Vec<u64> = (0..16).map(|i| mcs(i).response_rate() / 1_000_000).collect();
    assert_eq!(got, vec![6, 12, 12, 24, 24, 24, 24, 24, 6, 12, 12, 24, 24, 24, 24, 24]);
    // A BlockAck after an MCS 8 aggregate: 20 µs + ⌈(22 + 256) / 24⌉ = 12 symbols = 68 µs (at 12 Mbit/s it was 44 µs).
    assert_eq!(response_ns(&mcs(8), 2), 68_000);
}

#[test]
fn the_anchor_setups_fq_round_adds_up_as_docs_wifi_md_accounts_it() {
    // docs/wifi.md "Accounting for the gap": one round of fq with two MCS 15 and one MCS 0
    // station downloading 1500-B packets, their TCP ACKs (52 B) going up.
    let (fast, slow) = (mcs(15), mcs(0));
    let ack_ip = 52;
    let slow_data = txop_ns(&slow, 2 * 1544, 2);
    let (p, n) = psdu_bytes([ack_ip]);
    let slow_ack = txop_ns(&slow, p, n);
    let fast_data = txop_ns(&fast, 32 * 1544, 32);
    let (p8, n8) = psdu_bytes([ack_ip; 8]);
    let fast_acks = txop_ns(&fast, p8, n8);
    // The ACK A-MPDU: each 90-B MPDU takes 4 + 90 B, then 2 B of padding and 42 extra delimiters
    // (168 B, ath9k's 256-B minimum subframe): 8 × 94 + 7 × 170 = 1942 B = 30 symbols + 40 µs, + SIFS + BA.
    assert_eq!((extra_delimiters(90), subframe_padding(90)), (42, 170));
    assert_eq!((p8, n8), (1942, 8));
    assert_eq!((slow_data, slow_ack, fast_data, fast_acks), (3_924_000, 212_000, 3_132_000, 208_000));
    // 8 TXOPs, each after AIFS and a mean backoff of 7.5 slots: 110.5 µs.
    let contention = 8 * (AIFS_NS * 2 + 15 * SLOT_NS) / 2;
    assert_eq!(contention, 884_000);
    let round = slow_data + slow_ack + 2 * (fast_data + 2 * fast_acks) + contention;
    assert_eq!(round, 12_116_000);
    // A fast station moves 32 × 1448 B per round: 30.6 Mbit/s; the slow one 2 × 1448 B: 1.91 Mbit/s.
    let rate = |pkts: u64| pkts * 1448 * 8 * 1_000_000_000 / round;
    assert_eq!((rate(32) / 100_000, rate(2) / 10_000), (305, 191));
}

#[test]
fn short_mpdus_are_padded_to_256_bytes_with_delimiters_as_ath9k_does() {
    // ATH_AGGR_GET_NDELIM: ⌈(256 − framelen) / 4⌉ extra delimiters below 256 B, none from 256 B up.
    assert_eq!(extra_delimiters(90), 42);
    assert_eq!(extra_delimiters(255), 1);
    assert_eq!(extra_delimiters(256), 0);
    assert_eq!(extra_delimiters(1538), 0);
    // A TCP ACK alone is one MPDU (no delimiters); two make a 94 + 170 + 94 = 358-B A-MPDU.
    assert_eq!(psdu_bytes([52]), (90, 1));
    assert_eq!(psdu_bytes([52, 52]), (358, 2));
    // Short frames also count against the 4096-µs limit with their padding: at MCS 0 (3296 B)
    // an aggregate of 52-B packets holds 13: 13 × 94 + 12 × 170 = 3262 B; a 14th would make it 3526 B.
    let phys = [mcs(0)];
    let mut nd = node(Design::Fq, 1);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..40 {
        nd.enqueue(frame(0, 52, i, 0), 0, &mut rng, &mut ev);
    }
    assert_eq!(schedule(&mut nd, &phys, 1, false), vec![(0, 13)]);
}

#[test]
fn the_aggregate_on_the_air_counts_against_the_hardware_queue_depth() {
    // ath9k's axq_ampdu_depth is decremented at TX completion: with one aggregate on the air,
    // one more waits in the hardware queue, not two (ATH_AGGR_MIN_QDEPTH = 2 in all).
    let mut w = saturated(1, Design::Fq, 3, 0);
    let mut rng = stream(3, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let mut now = 0;
    let mut seen_on_air = 0;
    for id in 0..20_000u64 {
        while w.nodes[1].backlog_pkts() < 200 {
            w.enqueue(now, 0, true, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: id }, &mut rng, &mut drops);
        }
        let nd = &w.nodes[1];
        assert!(nd.hw.len() + nd.in_flight <= HW_AGGREGATES, "hw {} + on air {}", nd.hw.len(), nd.in_flight);
        if nd.in_flight == 1 {
            assert_eq!(nd.hw.len(), 1);
            seen_on_air += 1;
        }
        now = w.next_event().unwrap();
        w.poll(now, &mut rng, &mut out, &mut drops);
        if now > 200_000_000 {
            break;
        }
    }
    assert!(seen_on_air > 10);
}

fn aql_node(n: usize) -> Node<u64> {
    Node::new(Design::Airtime, None, &vec![1.0; n], Some(AqlConfig::default()))
}

#[test]
fn with_aql_a_lone_station_gets_frames_below_mac80211_up_to_its_high_limit() {
    // MCS 15: 96 µs expected per 1500-B packet (aql.rs). The device (0 pending) is below the 24-ms
    // threshold, so the station may dequeue until it has 12000 µs on its way: 125 frames. The firmware
    // puts two 32-frame aggregates in the radio; 61 frames wait in its queue, 375 in the TXQ.
    let mut nd = aql_node(1);
    let (mut rng, mut ev) = (stream(1, 1), Events::default());
    for id in 0..500 {
        nd.enqueue(frame(0, 1500, id, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&[mcs(15)], 0, &mut rng, &mut ev, &mut |_, _| {});
    let p = nd.aql.as_ref().unwrap();
    assert_eq!((p.sta[0], p.total), (12_000, 12_000));
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 32), (0, 32)]);
    assert!(nd.hw.iter().flat_map(|a| a.frames.iter()).all(|f| f.data.air_us == 96));
    assert_eq!(nd.backlog_pkts(), 500);
    // The first aggregate goes on the air and is acknowledged: its 32 × 96 µs come off, and the next
    // round tops the station up to 12000 µs again (32 more frames from the TXQ).
    let a = nd.hw.pop_front().unwrap();
    nd.done(0, a.frames.iter().map(|f| f.data.air_us).sum());
    for f in &a.frames {
        nd.baw[0].complete(f.data.seq);
    }
    assert_eq!(nd.aql.as_ref().unwrap().sta[0], 12_000 - 32 * 96);
    nd.refill(&[mcs(15)], 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(nd.aql.as_ref().unwrap().sta[0], 12_000);
    assert_eq!(nd.hw.len(), 2);
}

#[test]
fn with_aql_stations_past_the_device_threshold_stop_at_their_low_limit() {
    // Six saturated MCS 15 stations. The round may start (0 < (6 - 1) × 5000 / 2 + 12000 = 24500 µs).
    // The first two take 12000 µs each (the device is below 24000 µs until then); the device is then
    // at the threshold, so the others stop at their low limit: 53 frames = 5088 µs (52 × 96 = 4992 is
    // still below 5000). Then no station passes and the round ends.
    let mut nd = aql_node(6);
    let (mut rng, mut ev) = (stream(1, 1), Events::default());
    for id in 0..1200 {
        nd.enqueue(frame((id % 6) as u32, 1500, id, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&[mcs(15); 6], 0, &mut rng, &mut ev, &mut |_, _| {});
    let p = nd.aql.as_ref().unwrap();
    assert_eq!(p.sta, vec![12_000, 12_000, 5_088, 5_088, 5_088, 5_088]);
    assert_eq!(p.total, 24_000 + 4 * 5_088);
    // A new round does not start: 44352 µs pending is past 24500.
    nd.refill(&[mcs(15); 6], 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(nd.aql.as_ref().unwrap().total, 44_352);
}

#[test]
fn with_aql_the_scheduler_counts_pending_airtime_as_spent() {
    // Two saturated MCS 15 stations; a round may start ((2 - 1) × 2500 + 12000 = 14500 µs > 0).
    // ieee80211_next_txq reads deficit - pending: both start at 0, get a quantum (300 µs) and station 0
    // takes 12000 µs; station 1 (deficit 300 µs, nothing pending) takes 12000 µs too (the device is at
    // 12000 < 24000). Then station 0's 300 µs - 12000 µs < 0 earns a quantum (600) although AQL holds
    // it, station 1's earns one (600), and station 0, first again, one more (900) before the pass that
    // finds nobody AQL lets through ends the round.
    let mut nd = aql_node(2);
    let (mut rng, mut ev) = (stream(1, 1), Events::default());
    for id in 0..600 {
        nd.enqueue(frame((id % 2) as u32, 1500, id, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&[mcs(15); 2], 0, &mut rng, &mut ev, &mut |_, _| {});
    let p = nd.aql.as_ref().unwrap();
    assert_eq!((p.sta[0], p.sta[1]), (12_000, 12_000));
    assert_eq!((nd.deficit(0), nd.deficit(1)), (900_000, 600_000));
    // Station 0's frames are all acknowledged but 1000 µs: 900 µs of deficit - 1000 µs pending < 0, so it
    // needs one more quantum (1200 - 1000 > 0) before it is served again: without AQL's reading it would
    // have been served at 900. (Station 1, first in the list and held by AQL, earns 900 and 1200 meanwhile.)
    nd.done(0, 11_000);
    nd.refill(&[mcs(15); 2], 0, &mut rng, &mut ev, &mut |_, _| {});
    // It then goes from 1000 µs until the device reaches the threshold: 115 frames (13000 + 115 × 96 =
    // 24040 µs in all), 12040 µs for station 0.
    assert_eq!(nd.aql.as_ref().unwrap().sta[0], 12_040);
    // 1200 when served, then one more quantum each in the pass that ends the round.
    assert_eq!((nd.deficit(0), nd.deficit(1)), (1_500_000, 1_500_000));
}

#[test]
fn the_airtime_scheduler_charges_a_station_its_ppdus_not_the_sifs_and_ack_after_them() {
    // ath9k (63fefa050477) charges `ath_pkt_duration` of what it sends to or receives from a station:
    // preamble + symbols, no SIFS, no ACK/BlockAck. One MCS 0 station, fixed rate, airtime design; it
    // starts with one quantum, 300 µs (`ath_tx_node_init`).
    let cfg = WifiConfig {
        design: Design::Airtime,
        stations: vec![StationConfig { name: "m0".into(), phy: mcs(0), mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: super::RateControl::Fixed }],
        qdisc: QdiscConfig::default(),
        aql: None,
    };
    let run_n = |cfg: &WifiConfig, up: bool, len: u32, n: u64| {
        let mut w: Wifi<u64> = Wifi::new(cfg).unwrap();
        let (mut rng, mut out, mut drops) = (stream(1, 9), Vec::new(), Vec::new());
        for i in 0..n {
            w.enqueue(0, 0, up, Packet { meta: PacketMeta { flow: 1, len, ..Default::default() }, data: i }, &mut rng, &mut drops);
        }
        while let Some(t) = w.next_event() {
            w.poll(t, &mut rng, &mut out, &mut drops);
        }
        assert_eq!(out.len() as u64, n);
        (w.deficit(0), w.stations[0].up_aggregates + w.stations[0].down_aggregates)
    };
    let run = |up: bool, len: u32| run_n(&cfg, up, len, 1).0;
    // A 52-byte packet up (a TCP ACK): MPDU 90 B, 22 + 720 bits = 29 symbols of 26 bits: 116 + 36 µs.
    assert_eq!(mcs(0).ppdu_ns(90), 152_000);
    assert_eq!(run(true, 52), 300_000 - 152_000);
    // Five of them up: the station sends the first two alone (its hardware queue takes two
    // transmissions) and the other three in one A-MPDU. What the AP receives it charges per MPDU
    // (`ath_rx_count_airtime`, `rs_datalen` each): 5 x 152 µs = 760 µs, where the PPDUs would be
    // 2 x 152 + 808 = 1112 µs (the A-MPDU: 3 subframes of 94 B, two of them followed by 2 B of
    // padding and 42 extra delimiters, 622 B).
    let (psdu, k) = psdu_bytes([52; 3]);
    assert_eq!((psdu, k, mcs(0).ppdu_ns(psdu)), (622, 3, 808_000));
    assert_eq!(run_n(&cfg, true, 52, 5), (300_000 - 760_000, 3));
    // At MCS 15 the preambles weigh more than the padding: 5 x (40 + 8) = 240 µs against
    // 2 x 48 + 80 = 176 µs.
    let fast = WifiConfig { stations: vec![StationConfig { phy: mcs(15), ..cfg.stations[0].clone() }], ..cfg.clone() };
    assert_eq!((mcs(15).ppdu_ns(90), mcs(15).ppdu_ns(psdu)), (48_000, 80_000));
    assert_eq!(run_n(&fast, true, 52, 5), (300_000 - 240_000, 3));
    // (-212 µs with the SIFS and the ACK.)
    // A 1500-byte packet down: the station is served on its first quantum and charged its 1936-µs
    // PPDU: -1636 µs; spent, it rejoins the old list (`ath_tx_count_airtime`) and the completion's
    // scheduler call credits it a quantum a visit until positive: -1636 + 6 x 300 = 164 µs. With the
    // SIFS and the ACK (16 + 44 µs) it would be -1696 + 6 x 300 = 104 µs.
    assert_eq!(run(false, 1500), 164_000);
}

#[test]
fn with_aql_pending_airtime_returns_to_zero_when_everything_is_delivered_or_given_up() {
    let cfg = WifiConfig {
        design: Design::Airtime,
        stations: [0usize, 7, 15].iter().map(|&m| StationConfig { name: format!("m{m}"), phy: mcs(m), mpdu_error: 0.1, weight: 1.0, snr_db: None, mcs: None, rate_control: super::RateControl::Fixed }).collect(),
        qdisc: QdiscConfig::default(),
        aql: Some(AqlConfig::default()),
    };
    let mut w: Wifi<u64> = Wifi::new(&cfg).unwrap();
    let mut rng = stream(5, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let mut max_total = 0;
    for id in 0..3000u64 {
        let len = if id % 3 == 0 { 52 } else { 1500 };
        w.enqueue(0, (id % 3) as usize, id % 5 == 0, Packet { meta: PacketMeta { flow: id % 4 + 1, len, ..Default::default() }, data: id }, &mut rng, &mut drops);
    }
    while let Some(t) = w.next_event() {
        w.poll(t, &mut rng, &mut out, &mut drops);
        max_total = max_total.max(w.aql_pending(0).unwrap().1);
    }
    assert_eq!(out.len() + drops.len() + w.stations.iter().map(|s| s.retry_drops as usize).sum::<usize>(), 3000);
    for s in 0..3 {
        assert_eq!(w.aql_pending(s), Some((0, 0)));
    }
    // Three active stations: a round starts below (3 - 1) × 2500 + 12000 = 17000 µs; one burst can pass it.
    assert!(max_total >= 12_000 && max_total < 17_000 + 12_000, "{max_total}");
}

#[test]
fn aql_is_a_setting_of_the_airtime_design_with_positive_limits() {
    let st = vec![StationInput { name: "a".into(), mcs: Some(7), weight: 1.0, ..Default::default() }];
    let q = QdiscConfig::default();
    let e = WifiConfig::resolve("fq", &st, q.clone(), Some(AqlConfig::default())).unwrap_err();
    assert_eq!(e, "wifi.aql: AQL works inside mac80211's airtime scheduler: it needs mac = \"airtime\", not \"fq\"");
    let e = WifiConfig::resolve("airtime", &st, q.clone(), Some(AqlConfig { limit_low_us: 0, ..Default::default() })).unwrap_err();
    assert_eq!(e, "wifi.aql.limit_low: expected at least 1 µs, got 0");
    let e = WifiConfig::resolve("airtime", &st, q.clone(), Some(AqlConfig { limit_high_us: 4_000, ..Default::default() })).unwrap_err();
    assert_eq!(e, "wifi.aql.limit_high: 4000 µs is below limit_low (5000 µs)");
    assert_eq!(WifiConfig::resolve("airtime", &st, q, Some(AqlConfig::default())).unwrap().aql, Some(AqlConfig::default()));
}

/// One station, its downlink saturated with 1500-B packets for `until` ns:
/// `rate_control` and `snr_db` as given, `mcs` its (highest) MCS.
fn downlink(mcs_max: u32, rc: RateControl, snr_db: Option<f64>, seed: u64, until: Nanos) -> Wifi<u64> {
    let cfg = WifiConfig {
        design: Design::Fq,
        stations: vec![StationConfig {
            name: "s".into(),
            phy: mcs(mcs_max as usize),
            mpdu_error: 0.0,
            weight: 1.0,
            snr_db,
            mcs: Some(mcs_max),
            rate_control: rc,
        }],
        qdisc: QdiscConfig { kind: "fifo".into(), limit: Limit { bytes: None, pkts: Some(1000) }, ..Default::default() },
        aql: None,
    };
    let mut w = Wifi::new(&cfg).unwrap();
    let mut rng = stream(seed, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let (mut id, mut now) = (0u64, 0);
    while now < until {
        while w.nodes[0].backlog_pkts() < 200 {
            w.enqueue(now, 0, false, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: id }, &mut rng, &mut drops);
            id += 1;
        }
        now = w.next_event().unwrap();
        w.poll(now, &mut rng, &mut out, &mut drops);
    }
    w
}

#[test]
fn minstrel_at_high_snr_settles_on_mcs15_below_the_fixed_mcs15_throughput() {
    // 35 dB: every MCS below 1 % PER (MCS 15 needs ~24 dB for 10 %).
    let t = 3_000_000_000;
    let m = downlink(15, RateControl::MinstrelHt, Some(35.0), 1, t);
    let rc = m.nodes[0].rc[0].as_ref().unwrap();
    assert_eq!(rc.max_tp_mcs(), 15);
    assert_eq!(m.phy_rates().next(), Some(130_000_000));
    let fixed = downlink(15, RateControl::Fixed, None, 1, t);
    let (got, best) = (m.stations[0].down_bytes as f64, fixed.stations[0].down_bytes as f64);
    // Physics: never above the clean fixed MCS 15; the ramp from MCS 0 (a few
    // hundred ms), the probes (one A-MPDU per 20 ms at another rate) and the
    // aggregates sized for the chain's slowest rate (MCS 7 as max_prob: 4 ms at
    // 65 Mbit/s = 21 subframes instead of 32) cost the rest.
    assert!(got < best, "minstrel {got} B vs fixed {best} B");
    assert!(got > 0.5 * best, "minstrel {got} B vs fixed {best} B");
}

#[test]
fn minstrel_at_low_snr_picks_a_lower_mcs_that_still_gets_through() {
    // 12 dB on two antennas: one stream sees 15 dB (MCS 3 at ~0 % PER, MCS 4 needs 16.7 dB),
    // two streams 12 dB (MCS 10, QPSK ¾, needs 9.9 dB; MCS 11 needs 13.6 dB).
    let t = 3_000_000_000;
    let m = downlink(15, RateControl::MinstrelHt, Some(12.0), 2, t);
    let best = m.nodes[0].rc[0].as_ref().unwrap().max_tp_mcs();
    assert_eq!(best, 10, "max_tp MCS {best}");
    // Within physics: below the clean fixed MCS 10, and well above nothing.
    let fixed = downlink(10, RateControl::Fixed, None, 2, t);
    let (got, cap) = (m.stations[0].down_bytes as f64, fixed.stations[0].down_bytes as f64);
    assert!(got < cap && got > 0.5 * cap, "minstrel {got} B vs fixed clean MCS 10 {cap} B");
    // A fixed MCS 15 at 12 dB loses nearly every MPDU and delivers far less.
    let stuck = downlink(15, RateControl::Fixed, Some(12.0), 2, 1_000_000_000);
    assert!((stuck.stations[0].down_bytes as f64) < 0.05 * got / 3.0, "fixed MCS 15 at 12 dB: {} B", stuck.stations[0].down_bytes);
}

#[test]
fn an_absurd_snr_or_minstrel_on_a_bit_rate_is_an_error_naming_the_key() {
    let st = |snr: Option<f64>, mcs: Option<u32>, rc: &str| {
        vec![StationInput {
            name: "a".into(),
            mcs,
            phy_rate_bps: if mcs.is_none() { Some(144_400_000) } else { None },
            weight: 1.0,
            snr_db: snr,
            rate_control: rc.into(),
            ..Default::default()
        }]
    };
    let q = QdiscConfig::default();
    let e = WifiConfig::resolve("fq", &st(Some(150.0), Some(7), ""), q.clone(), None).err().unwrap();
    assert!(e.starts_with("wifi.stations[0].snr_db"), "{e}");
    let e = WifiConfig::resolve("fq", &st(Some(f64::NAN), Some(7), ""), q.clone(), None).err().unwrap();
    assert!(e.starts_with("wifi.stations[0].snr_db"), "{e}");
    let e = WifiConfig::resolve("fq", &st(None, None, "minstrel_ht"), q.clone(), None).err().unwrap();
    assert!(e.starts_with("wifi.stations[0].phy_rate"), "{e}");
    let e = WifiConfig::resolve("fq", &st(None, Some(7), "arf"), q.clone(), None).err().unwrap();
    assert!(e.starts_with("wifi.stations[0].rate_control"), "{e}");
    assert!(WifiConfig::resolve("fq", &st(Some(-10.0), Some(7), "minstrel_ht"), q, None).is_ok());
}

#[test]
fn rts_and_cts_cost_128_us_at_6_mbits_in_front_of_a_fallback_try() {
    // RTS 20 B at 6 Mbit/s: 20 µs + ⌈(22 + 160) / 24⌉ = 8 symbols = 52 µs; CTS 14 B: 20 + 6 × 4 = 44 µs.
    assert_eq!(rts_ns(), 52_000);
    assert_eq!(rts_cts_ns(), 52_000 + 16_000 + 44_000 + 16_000);
    // Responses: BPSK ½ at 6, QPSK ½ at 12, 16-QAM ½ at 24 Mbit/s; an ACK is 14 B, a BlockAck 32 B.
    assert_eq!(BASIC_RATES.map(basic_rate_mcs), [0, 1, 3]);
    assert_eq!((response_bytes(1), response_bytes(2)), (14, 32));
    use super::mac::ChainTx;
    use super::minstrel::{mcs_rate, RateChain, Series, MAX_RATES};
    let w = downlink(15, RateControl::MinstrelHt, None, 1, 0);
    let chain = RateChain {
        series: [
            Series { rate: mcs_rate(15), count: 2 },
            Series { rate: mcs_rate(13), count: 2 },
            Series { rate: mcs_rate(12), count: 2 },
            Series { rate: mcs_rate(7), count: 2 },
        ],
        probe: false,
    };
    let frames: Vec<_> = (0..10).map(|i| frame(0, 1500, i, 0)).collect();
    let psdu = psdu_bytes([1500; 10]).0;
    let agg = |series| Aggregate { sta: 0, frames: Vec::new(), psdu, chain: Some(ChainTx { chain, series, tries: [0; MAX_RATES] }), emptied: false };
    let mut first = agg(0);
    first.frames = frames;
    // The first rate goes without RTS (minstrel_ht_set_rate: RTS/CTS only for offset > 0):
    // 10 frames at MCS 15, 992 µs + SIFS + BlockAck 32 µs.
    assert_eq!(w.try_ns(&first, 0, false), 1_040_000);
    // The second series, MCS 13 (104 Mbit/s, N_DBPS 416): ⌈123526 / 416⌉ = 297 symbols = 1188 + 40 µs,
    // + SIFS + BlockAck at 24 Mbit/s, behind RTS/CTS.
    let mut second = agg(1);
    second.frames = first.frames.drain(..).collect();
    assert_eq!(w.try_ns(&second, 0, false), 128_000 + 1_228_000 + 16_000 + 32_000);
    // Collided, an RTS costs the medium its own 52 µs, a PPDU without RTS its length.
    assert_eq!(w.try_ns(&second, 0, true), 52_000);
    second.chain.as_mut().unwrap().series = 0;
    assert_eq!(w.try_ns(&second, 0, true), 992_000);
}

#[test]
fn the_block_ack_window_holds_back_a_frame_64_past_the_oldest_unacknowledged() {
    let mut b = super::mac::Baw::default();
    assert!(b.within(0) && b.within(63) && !b.within(64));
    b.complete(2);
    b.complete(1);
    assert_eq!(b.start, 0, "0 is still out");
    b.complete(0);
    assert_eq!(b.start, 3);
    assert!(b.within(66) && !b.within(67));

    let phys = [mcs(15)];
    let mut nd = node(Design::Fq, 1);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..100 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    let seqs = |a: &Aggregate<u64>| a.frames.iter().map(|p| p.data.seq).collect::<Vec<_>>();
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let (a, b) = (nd.hw.pop_front().unwrap(), nd.hw.pop_front().unwrap());
    assert_eq!((seqs(&a), seqs(&b)), ((0..32).collect(), (32..64).collect()));
    // Everything is acknowledged but seq 0, which goes back for a retry.
    let mut a = a.frames.into_iter();
    let first = a.next().unwrap();
    for p in a.chain(b.frames) {
        nd.baw[0].complete(p.data.seq);
    }
    nd.requeue(first);
    // The retry goes alone: the next new frame is numbered 64, past the window [0, 64).
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let c = nd.hw.pop_front().unwrap();
    assert_eq!(seqs(&c), vec![0]);
    // Until 0 completes the station cannot send at all.
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert!(nd.hw.is_empty());
    nd.baw[0].complete(0);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(seqs(&nd.hw.pop_front().unwrap()), (64..96).collect::<Vec<_>>());
}

/// One station (fixed MCS 15 or Minstrel up to `mcs_max`), `n` 1500-B packets sent down, at most 100 queued
/// at a time, run until the medium is idle; what the receiver got, in order, and what the TXQ's CoDel dropped.
fn send_down(mcs_max: u32, rc: RateControl, snr_db: Option<f64>, response_loss: Option<f64>, n: u64) -> (Wifi<u64>, Vec<u64>, Vec<u64>) {
    let mut w = downlink(mcs_max, rc, snr_db, 1, 0);
    w.response_loss = response_loss;
    let mut rng = stream(1, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let (mut id, mut now) = (0u64, 0);
    loop {
        while id < n && w.nodes[0].backlog_pkts() < 100 {
            w.enqueue(now, 0, false, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: id }, &mut rng, &mut drops);
            id += 1;
        }
        let Some(t) = w.next_event() else { break };
        now = t;
        w.poll(now, &mut rng, &mut out, &mut drops);
    }
    let dropped = drops.into_iter().map(|d| d.pkt.data).collect();
    (w, out.into_iter().map(|d| d.data).collect(), dropped)
}

#[test]
fn a_frame_is_given_up_after_30_hardware_tries_not_30_retry_chains() {
    // MCS 0 only, at −10 dB: every MPDU is lost. Minstrel's chain has four series of 2 tries (prob < 20 %),
    // 8 hardware tries per software attempt. ath9k adds them to `fi->retries` and gives the frame up at
    // the first failure with 30 or more: 0 → 8 → 16 → 24 → 32, after 5 chains, 40 tries (not 31 × 8).
    let (w, got, _) = send_down(0, RateControl::MinstrelHt, Some(-10.0), None, 1);
    assert!(got.is_empty());
    assert_eq!(w.stations[0].retry_drops, 1);
    assert_eq!(w.attempts().0[0], 40);
}

#[test]
fn the_contention_window_stays_doubled_after_the_hardware_gives_up_a_retry_chain() {
    // MCS 0 only, at −10 dB: every try fails. Minstrel's chain is four series of 2 tries: 8 tries, each
    // doubling the AP's CW from 15 up to its CWmax of 63 (hostapd's `tx_queue_data2`). ath9k leaves the
    // DCU's "end of tx series CW reset" (`AR_D_MISC_CW_RESET_EN`) clear, so the frame's next chain starts
    // from 63, not from CWmin.
    let mut w = downlink(0, RateControl::MinstrelHt, Some(-10.0), 1, 0);
    let mut rng = stream(1, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    w.enqueue(0, 0, false, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: 0 }, &mut rng, &mut drops);
    let mut cws = Vec::new();
    // The window after each try of the first chain (a try ends when the medium is no longer busy).
    while cws.len() < 8 {
        let was_busy = w.busy_until.is_some();
        let t = w.next_event().expect("the frame is retried");
        w.poll(t, &mut rng, &mut out, &mut drops);
        if was_busy && w.busy_until.is_none() {
            cws.push(w.contention_windows()[0]);
        }
    }
    assert_eq!(cws, vec![31, 63, 63, 63, 63, 63, 63, 63]);
    assert_eq!(w.attempts().0[0], 8);
    // The chain was given up and the frame is back for another: the AP still contends.
    assert!(w.medium.is_active(0));
    assert_eq!(w.stations[0].retry_drops, 0);
}

#[test]
fn every_mpdu_reaches_the_receiver_once_when_block_acks_are_lost() {
    // Every ACK lost: the receiver has the frame after the first try; the sender, never told, tries 30
    // more times (a fixed rate: one hardware try per attempt) and gives it up; the duplicates are dropped.
    let (w, got, _) = send_down(15, RateControl::Fixed, None, Some(1.0), 1);
    assert_eq!(got, vec![0]);
    assert_eq!((w.stations[0].down_pkts, w.stations[0].retry_drops), (1, 1));
    assert_eq!(w.attempts().0[0], 31);
    // A third of the BlockAcks lost: whole A-MPDUs are resent, yet the receiver delivers each packet once,
    // in order, and the sender's window keeps moving.
    // (CoDel in the TXQ drops a few while Minstrel ramps up from MCS 0; those never reach the air.)
    let (w, got, dropped) = send_down(15, RateControl::MinstrelHt, None, Some(1.0 / 3.0), 3000);
    assert!(dropped.len() < 100, "{} dropped", dropped.len());
    assert_eq!(got, (0..3000).filter(|i| !dropped.contains(i)).collect::<Vec<_>>());
    assert_eq!(w.stations[0].down_pkts, got.len() as u64);
    assert!(w.attempts().0[0] > 3000 / 32 * 3 / 2, "{} transmissions", w.attempts().0[0]);
}

/// ath9k's `ath_lookup_rate` gives a Minstrel-HT probe an aggregate limit of 0, and `ath_tx_form_aggr`, having
/// pulled the next frame from the TXQ, puts it on the TID's retry queue (`stop: __skb_queue_tail(&tid->retry_q,
/// ...)`), so it waits for the station's next turn: behind a probe a frame waits a whole round of the round robin
/// (docs/wifi.md, "Measured disagreements": 100 stations under `fq`).
#[test]
fn a_frame_pulled_behind_a_minstrel_probe_waits_for_the_stations_next_turn() {
    use super::minstrel::{Minstrel, SampleTable};
    let phys = [mcs(15), mcs(15)];
    let mut nd = node(Design::Fq, 2);
    // Station 0 on Minstrel-HT up to MCS 15, associated at t = 0: its first aggregate is a probe.
    nd.rc[0] = Some(Minstrel::new(15, 0, SampleTable::boot()));
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..5 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    for i in 10..13 {
        nd.enqueue(frame(1, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    let mut dequeued = Vec::new();
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| dequeued.push(s));
    let ids = |a: &Aggregate<u64>| a.frames.iter().map(|p| p.data.data.unwrap()).collect::<Vec<_>>();
    // Station 0's turn: the probe alone; frame 1 left the TXQ but went back to the retry queue. The
    // probe takes no A-MPDU slot (`bf_is_ampdu_not_probing`), so the round goes on: station 1's
    // three frames, then station 0's next turn with frame 1 first, aggregated with the next. Just
    // after association Minstrel's chain still ends at MCS 0, so ath9k sizes that aggregate for
    // 4 ms at MCS 0: 3296 B, two 1500-B frames; frame 3 goes back to the retry queue.
    assert_eq!(nd.hw.len(), 3);
    let (first, second, third) = (&nd.hw[0], &nd.hw[1], &nd.hw[2]);
    assert!(first.chain.unwrap().chain.probe);
    assert_eq!((first.sta, ids(first)), (0, vec![0]));
    assert_eq!((second.sta, ids(second)), (1, vec![10, 11, 12]));
    let chain = third.chain.unwrap().chain;
    assert!(!chain.probe);
    assert_eq!((chain.aggr_limit(), mcs(0).aggr_limit()), (3296, 3296));
    assert_eq!((third.sta, ids(third)), (0, vec![1, 2]));
    assert_eq!(dequeued, vec![0, 0, 1, 1, 1, 0, 0]);
}

#[test]
fn a_minstrel_probe_takes_no_a_mpdu_slot_in_the_hardware_queue() {
    // ath9k counts in `axq_ampdu_depth` (against ATH_AGGR_MIN_QDEPTH = 2) only
    // `bf_is_ampdu_not_probing` aggregates: with a probe queued the hardware still takes two
    // A-MPDUs, and the probe counts neither queued nor on the air.
    use super::minstrel::{Minstrel, SampleTable};
    let phys = [mcs(15), mcs(15), mcs(15)];
    let mut nd = node(Design::Fq, 3);
    nd.rc[0] = Some(Minstrel::new(15, 0, SampleTable::boot()));
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for s in 0..3u32 {
        for i in 0..40 {
            nd.enqueue(frame(s, 1500, 100 * s as u64 + i, 0), 0, &mut rng, &mut ev);
        }
    }
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let turns: Vec<(usize, usize, bool)> = nd.hw.iter().map(|a| (a.sta, a.frames.len(), a.chain.is_some_and(|c| c.chain.probe))).collect();
    // Station 0's probe, then two A-MPDUs: station 1's 32 frames (fixed MCS 15: 32 subframes) and
    // station 2's; station 0's next turn waits for a slot.
    assert_eq!(turns, vec![(0, 1, true), (1, 32, false), (2, 32, false)]);
    // The probe goes on the air: it takes no slot there either, and nothing more fits.
    nd.hw.pop_front().unwrap();
    nd.in_flight += 1;
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(nd.hw.iter().map(|a| a.sta).collect::<Vec<_>>(), vec![1, 2]);
}

#[test]
fn a_frame_becomes_a_minstrel_probe_as_it_leaves_the_txq_and_ends_the_aggregate_it_would_join() {
    // mac80211 (≥ 5.14) runs `minstrel_ht_get_rate` on each frame as `ieee80211_tx_dequeue` hands it
    // to ath9k; a frame waiting in ath9k's retry queue was rate-controlled when it left the TXQ. So
    // when a station's turn comes after `sample_time` has passed, the retried frame leads an ordinary
    // aggregate and the first frame pulled from the TXQ is the probe: `ath_tx_form_aggr` stops before
    // it and it leads the next aggregate alone.
    use super::minstrel::{mcs_rate, Minstrel, SampleTable};
    let phys = [mcs(15)];
    let mut nd = node(Design::Fq, 1);
    nd.rc[0] = Some(Minstrel::new(15, 0, SampleTable::boot()));
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..5 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    let ids = |a: &Aggregate<u64>| a.frames.iter().map(|p| p.data.data.unwrap()).collect::<Vec<_>>();
    let mut turn = |nd: &mut Node<u64>, now| nd.build(0, &phys[0], now, &mut rng, &mut ev, &mut |_, _| {});
    // t = 0: frame 0 is the first probe (INC: MCS 8), alone; frame 1 waits in the retry queue.
    let a = turn(&mut nd, 0);
    assert_eq!((ids(&a), a.chain.unwrap().chain.series[0].rate), (vec![0], mcs_rate(8)));
    // t = 30 ms, past the next sample time: frame 1 leads, not a probe; frame 2, pulled from the
    // TXQ now, is the next probe (a JUMP rate) and goes back to the retry queue.
    let b = turn(&mut nd, 30_000_000);
    assert_eq!((ids(&b), b.probe()), (vec![1], false));
    // t = 31 ms: frame 2 alone at its sample rate; frame 3 (no probe within 20 ms) waits.
    let c = turn(&mut nd, 31_000_000);
    assert_eq!((ids(&c), c.probe()), (vec![2], true));
    assert_ne!(c.chain.unwrap().chain.series[0].rate, mcs_rate(8));
    let d = turn(&mut nd, 32_000_000);
    assert_eq!((ids(&d), d.probe()), (vec![3, 4], false));
}

// ------------------------------------------------------------ 802.11b (DSSS/CCK) stations

fn dsss(rate_bps: u64, short: bool) -> Phy {
    Phy::dsss(rate_bps, short).unwrap()
}

#[test]
fn a_1500_byte_frame_at_1_mbits_dsss_takes_12496_us_and_its_ack_304_us() {
    let phy = dsss(1_000_000, false);
    let (psdu, n) = psdu_bytes([1500]);
    assert_eq!((psdu, n), (1538, 1));
    // Long PLCP preamble + header 192 µs, then 1538 × 8 = 12304 bits at 1 µs each.
    assert_eq!(phy.ppdu_ns(psdu), 192_000 + 12_304_000);
    // SIFS 10 µs; the ACK (14 B) at 1 Mbit/s, long preamble: 192 + 112 µs.
    assert_eq!((phy.sifs_ns(), phy.response_rate(), response_ns(&phy, 1)), (10_000, 1_000_000, 304_000));
    assert_eq!(txop_ns(&phy, psdu, 1), 12_496_000 + 10_000 + 304_000);
    // ath9k's `ath9k_hw_computetxtime` for the airtime scheduler: CCK SIFS + preamble + bits.
    assert_eq!(phy.charged_ns(psdu), 12_506_000);
    // No aggregation: the byte limit of an aggregate is 0, i.e. one MPDU.
    assert_eq!(phy.aggr_limit(), 0);
}

#[test]
fn cck_at_11_mbits_with_the_short_preamble_rounds_the_payload_up_to_whole_microseconds() {
    let phy = dsss(11_000_000, true);
    // 96 µs short PLCP + ⌈12304 / 11⌉ = 1119 µs (TXTIME, §16.3.4).
    assert_eq!(phy.ppdu_ns(1538), 1_215_000);
    // ACK at 11 Mbit/s (a basic rate of hostapd's g mode), short preamble: 96 + ⌈112 / 11⌉ µs.
    assert_eq!((phy.response_rate(), response_ns(&phy, 1)), (11_000_000, 107_000));
    // ath9k rounds its payload time down: 10 + 96 + ⌊12304 / 11⌋ = 1224 µs.
    assert_eq!(phy.charged_ns(1538), 1_224_000);
    assert_eq!(dsss(5_500_000, false).ppdu_ns(1538), 192_000 + 2_238_000);
    assert_eq!(dsss(2_000_000, false).response_rate(), 2_000_000);
    // 1 Mbit/s has no short preamble; 6 Mbit/s is no DSSS rate.
    assert!(Phy::dsss(1_000_000, true).is_none() && Phy::dsss(6_000_000, false).is_none());
}

#[test]
fn erp_protection_costs_314_us_before_an_ht_ppdu_and_676_us_with_rts() {
    // CTS-to-self (14 B) at 1 Mbit/s long preamble: 192 + 112 µs, then SIFS 10 µs.
    assert_eq!(cts_to_self_ns(), 314_000);
    // RTS (20 B) 352 µs + SIFS + CTS 304 µs + SIFS.
    assert_eq!(protected_rts_cts_ns(), 676_000);
    assert_eq!((LONG_SLOT_NS, DSSS_SIFS_NS, DSSS_CW_MIN), (20_000, 10_000, 31));
}

#[test]
fn a_dsss_station_gets_bursts_of_two_single_frames_while_the_hardware_queue_holds_fewer_than_8() {
    // ath9k's `ath_txq_schedule`/`ath_tx_sched_aggr`: an HT station's A-MPDU while fewer than 2
    // A-MPDUs are queued, an 802.11b station's burst of 2 frames while fewer than 8 entries are;
    // the first station that may not send ends the round.
    let mut nd = node(Design::Fq, 2);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..150 {
        nd.enqueue(frame((i % 2) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    // MCS 0: two-frame A-MPDUs, well inside the block-ack window.
    nd.refill(&[mcs(0), dsss(1_000_000, false)], 0, &mut rng, &mut ev, &mut |_, _| {});
    // The HT station's third A-MPDU finds two queued: the round ends, the 802.11b station waits.
    let got: Vec<(usize, usize)> = nd.hw.iter().map(|a| (a.sta, a.frames.len())).collect();
    assert_eq!(got, vec![(0, 2), (1, 1), (1, 1), (0, 2), (1, 1), (1, 1)]);
    let phys = [mcs(15), dsss(1_000_000, false)];
    // Once the HT station has nothing left, the 802.11b station fills the queue up to 8 entries.
    let mut nd = node(Design::Fq, 2);
    for i in 0..100 {
        nd.enqueue(frame((i % 2) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let got: Vec<(usize, usize)> = nd.hw.iter().map(|a| (a.sta, a.frames.len())).collect();
    assert_eq!(got, vec![(0, 32), (1, 1), (1, 1), (0, 18), (1, 1), (1, 1), (1, 1), (1, 1)]);
}

#[test]
fn a_lone_saturated_1_mbits_station_gets_the_closed_form_throughput_on_the_long_slot() {
    let cfg = WifiConfig {
        design: Design::Fq,
        stations: vec![StationConfig { name: "b".into(), phy: dsss(1_000_000, false), mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: RateControl::Fixed }],
        qdisc: QdiscConfig::default(),
        aql: None,
    };
    let mut w = Wifi::new(&cfg).unwrap();
    let mut rng = stream(7, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let (mut id, mut now) = (0u64, 0);
    let until = 4_000_000_000;
    while now < until {
        while w.nodes[1].backlog_pkts() < 50 {
            w.enqueue(now, 0, true, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: id }, &mut rng, &mut drops);
            id += 1;
        }
        now = w.next_event().unwrap();
        w.poll(now, &mut rng, &mut out, &mut drops);
    }
    // Per frame: DIFS 10 + 2 × 20 µs (no QoS), the mean backoff of CWmin 31 (15.5 slots of
    // 20 µs), the exchange 12810 µs.
    let per = 50_000.0 + 15.5 * 20_000.0 + 12_810_000.0;
    let expect = 1500.0 * 8.0 / per * 1e9;
    let got = w.stations[0].up_bytes as f64 * 8.0 / 4.0;
    // 4 s ≈ 300 frames: the mean backoff's standard error 9.2 slots/√300 ≈ 0.5 slot ≈ 0.1 % of a frame.
    assert!((got / expect - 1.0).abs() < 0.01, "got {got:.0} bit/s, closed form {expect:.0}");
    assert_eq!(w.stations[0].up_aggregates, w.stations[0].up_frames);
}

#[test]
fn an_ht_stations_frames_go_behind_a_cts_to_self_once_a_dsss_station_is_in_the_bss() {
    // One exchange each way on an idle medium, seeded: the HT station's TXOP grows by 314 µs.
    let busy = |with_b: bool| {
        let mut stations = vec![StationConfig { name: "n".into(), phy: mcs(7), mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: RateControl::Fixed }];
        if with_b {
            stations.push(StationConfig { name: "b".into(), phy: dsss(11_000_000, false), mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: RateControl::Fixed });
        }
        let mut w = Wifi::new(&WifiConfig { design: Design::Fq, stations, qdisc: QdiscConfig::default(), aql: None }).unwrap();
        let mut rng = stream(3, 9);
        let (mut out, mut drops) = (Vec::new(), Vec::new());
        w.enqueue(0, 0, false, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: 1u64 }, &mut rng, &mut drops);
        while let Some(t) = w.next_event() {
            w.poll(t, &mut rng, &mut out, &mut drops);
        }
        assert_eq!(out.len(), 1);
        w.stats.busy_ns
    };
    assert_eq!(busy(false), txop_ns(&mcs(7), 1538, 1));
    assert_eq!(busy(true), 314_000 + txop_ns(&mcs(7), 1538, 1));
}

#[test]
fn a_dsss_rate_or_preamble_that_802_11b_lacks_is_an_error_naming_the_key() {
    let st = |r: u64, short: bool| vec![StationInput { name: "b".into(), dsss_rate_bps: Some(r), short_preamble: short, weight: 1.0, ..Default::default() }];
    let q = QdiscConfig::default();
    assert!(WifiConfig::resolve("fq", &st(1_000_000, false), q.clone(), None).is_ok());
    let e = WifiConfig::resolve("fq", &st(6_000_000, false), q.clone(), None).unwrap_err();
    assert!(e.starts_with("wifi.stations[0].dsss_rate_bps:"), "{e}");
    let e = WifiConfig::resolve("fq", &st(1_000_000, true), q.clone(), None).unwrap_err();
    assert!(e.starts_with("wifi.stations[0].dsss_rate_bps:"), "{e}");
    let ht_short = vec![StationInput { name: "n".into(), mcs: Some(7), short_preamble: true, weight: 1.0, ..Default::default() }];
    let e = WifiConfig::resolve("fq", &ht_short, q.clone(), None).unwrap_err();
    assert!(e.starts_with("wifi.stations[0].short_preamble:"), "{e}");
    let aql = AqlConfig { limit_low_us: 5000, limit_high_us: 12000, threshold_us: 24000 };
    let e = WifiConfig::resolve("airtime", &st(11_000_000, false), q, Some(aql)).unwrap_err();
    assert!(e.starts_with("wifi.aql:"), "{e}");
}

#[test]
fn a_node_with_a_longer_aifs_counts_from_its_own_aifs_after_every_busy_period() {
    // An 802.11b BSS: the 802.11b station (node 1) waits DIFS, 2 slots of 20 µs after SIFS; the
    // AP (node 0) waits AIFS[BE], one slot more. The grid starts at DIFS (50 µs after busy).
    let mut m = Medium::with_timing(20_000, 50_000, &[(15, 1), (31, 0)]);
    m.busy(1_000_000);
    m.activate_with(0, 500_000, 2);
    m.activate_with(1, 500_000, 3);
    m.end_with(1_000_000, &[], |_| unreachable!());
    // AP: 1 extra slot + 2 = grid slot 3; the 802.11b station: 0 + 3 = slot 3 too: they collide.
    assert_eq!(m.next_start(), Some(1_050_000 + 3 * 20_000));
    let mut w = Vec::new();
    m.start(1_110_000, &mut w);
    assert_eq!(w, vec![0, 1]);
    // The AP's longer AIFS is worth one slot of backoff: its 0 meets the station's 1 at slot 1.
    let mut m = Medium::with_timing(20_000, 50_000, &[(15, 1), (31, 0)]);
    m.activate_with(0, 0, 0);
    m.activate_with(1, 0, 1);
    assert_eq!(m.next_start(), Some(50_000 + 20_000));
    m.start(70_000, &mut w);
    assert_eq!(w, vec![0, 1]);
    // After a busy period the AP's frozen backoff resumes only after its own AIFS again.
    let mut m = Medium::with_timing(20_000, 50_000, &[(15, 1), (31, 0)]);
    m.activate_with(0, 0, 5);
    m.activate_with(1, 0, 2);
    m.start(50_000 + 2 * 20_000, &mut w);
    assert_eq!(w, vec![1]);
    // The AP counted slot 1 only (slot 0 was its AIFS): 4 left, from grid slot 1 of the next idle period.
    m.busy(2_000_000);
    m.end_with(2_000_000, &[(1, true)], |_| 10);
    assert_eq!(m.next_start(), Some(2_050_000 + 5 * 20_000));
}

#[test]
fn an_ht_client_held_at_1_mbits_sends_one_dsss_frame_per_turn_without_protection_or_long_slot() {
    let held = dsss(1_000_000, false).held_ht_client();
    assert!(held.is_dsss() && !held.non_erp() && !held.non_aggr());
    // Its frames are DSSS frames all the same.
    assert_eq!(txop_ns(&held, 1538, 1), 12_810_000);
    // ath9k: its block-ack session's frames, an aggregate limit of 0 at a legacy rate: one frame a
    // turn, counted as an A-MPDU (the round ends when two are queued).
    let mut nd = node(Design::Fq, 2);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..20 {
        nd.enqueue(frame((i % 2) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&[mcs(0), held], 0, &mut rng, &mut ev, &mut |_, _| {});
    let got: Vec<(usize, usize)> = nd.hw.iter().map(|a| (a.sta, a.frames.len())).collect();
    assert_eq!(got, vec![(0, 2), (1, 1)]);
    // The BSS stays unprotected: an HT station's exchange alone on the medium, no CTS-to-self.
    let st = |name: &str, phy: Phy| StationConfig { name: name.into(), phy, mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: RateControl::Fixed };
    let mut w = Wifi::new(&WifiConfig { design: Design::Fq, stations: vec![st("n", mcs(7)), st("h", held)], qdisc: QdiscConfig::default(), aql: None }).unwrap();
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    w.enqueue(0, 0, false, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: 1u64 }, &mut rng, &mut drops);
    while let Some(t) = w.next_event() {
        w.poll(t, &mut rng, &mut out, &mut drops);
    }
    assert_eq!(w.stats.busy_ns, txop_ns(&mcs(7), 1538, 1));
    // And only a DSSS station can be one.
    let e = WifiConfig::resolve("fq", &[StationInput { name: "n".into(), mcs: Some(7), ht_client: true, weight: 1.0, ..Default::default() }], QdiscConfig::default(), None).unwrap_err();
    assert!(e.starts_with("wifi.stations[0].ht_client:"), "{e}");
}

#[test]
fn before_the_airtime_scheduler_a_station_refused_for_a_full_hardware_queue_loses_its_turn() {
    // ath9k before 63fefa050477 (Linux ≤ 4.10; the `-` lines of that commit, LEDE's
    // 344-ath9k-Introduce-airtime-fairness-scheduling-between-.patch): `ath_txq_schedule` takes
    // the head TID off the list (`list_del_init`), `ath_tx_sched_aggr` refuses it while two
    // A-MPDUs are queued (`*stop = true`) and, as it still has frames, `ath_tx_queue_tid` puts it
    // back at the tail. Every arrival (`ath9k_wake_tx_queue`) and completion calls the scheduler,
    // so a full hardware queue rotates the list one station per call.
    let phys = [mcs(15), mcs(15), mcs(15)];
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    let mut order = |design: Design| {
        let mut nd = node(design, 3);
        for i in 0..300 {
            nd.enqueue(frame((i % 3) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
        }
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // stations 0 and 1; 2 refused
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // an arrival: 0 refused
        nd.hw.pop_front(); // station 0's A-MPDU completes
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
        nd.hw.iter().map(|a| a.sta).collect::<Vec<usize>>()
    };
    // Stations 2 and 0 were refused in turn and went to the tail: station 1 is next.
    assert_eq!(order(Design::Fq), vec![1, 1]);
    assert_eq!(order(Design::Legacy), vec![1, 1]);
}

#[test]
fn an_a_mpdu_may_join_a_hardware_queue_of_8_single_frames_while_fewer_than_2_a_mpdus_are_in_it() {
    // `ath_tx_sched_aggr` judges each kind by its own count: an A-MPDU by `axq_ampdu_depth` (< 2),
    // an unaggregated burst by `axq_depth` (< 8); eight 802.11b frames do not stop an A-MPDU.
    let phys = [mcs(15), dsss(1_000_000, false)];
    let mut nd = node(Design::Fq, 2);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..20 {
        nd.enqueue(frame(1, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(nd.hw.len(), 8);
    for i in 20..60 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    // Station 0 joined the list behind station 1 (ath9k ≤ 4.10: at the tail); the first call
    // refuses station 1 (eight entries) and ends, the next reaches station 0.
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(nd.hw.len(), 8);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let got: Vec<(usize, usize)> = nd.hw.iter().map(|a| (a.sta, a.frames.len())).collect();
    assert_eq!(got, [vec![(1, 1); 8], vec![(0, 32)]].concat());
}

#[test]
fn before_the_airtime_scheduler_a_station_that_becomes_active_waits_at_the_tail_of_the_list() {
    // ath9k ≤ 4.10 has one list per access category: `ath_tx_queue_tid` (from
    // `ath9k_wake_tx_queue` in 4.10, `ath_tx_start` before) adds a TID that is not on it with
    // `list_add_tail`; nothing serves a newly active station first (63fefa050477's `acq_new`
    // came with the airtime scheduler).
    let phys = [mcs(15), mcs(15), mcs(15)];
    let first_two = |design: Design| {
        let mut nd = node(design, 3);
        let mut rng = stream(1, 1);
        let mut ev = Events::default();
        for i in 0..80 {
            nd.enqueue(frame((i % 2) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
        }
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // 32 to station 0, 32 to station 1
        nd.hw.clear(); // both complete
        nd.enqueue(frame(2, 1500, 80, 0), 0, &mut rng, &mut ev); // a ping's reply for station 2
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
        stations(nd.hw.make_contiguous())
    };
    // (The first call ended refusing station 0, which went behind station 1.)
    assert_eq!(first_two(Design::Fq), vec![(1, 8), (0, 8)]);
    assert_eq!(first_two(Design::Legacy), vec![(1, 8), (0, 8)]);
}

#[test]
fn before_the_airtime_scheduler_a_station_emptied_by_its_turn_leaves_the_list_and_returns_at_the_tail() {
    // `ath_txq_schedule` takes the head TID off the list and `ath_tx_queue_tid` puts it back only
    // if `ath_tid_has_buffered`: station 1, emptied by its one-frame turn, is off the list; its
    // next frame puts it at the tail, behind station 2 (refused and rotated meanwhile).
    let phys = [mcs(15), mcs(15), mcs(15)];
    let mut nd = node(Design::Fq, 3);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    nd.enqueue(frame(0, 1500, 0, 0), 0, &mut rng, &mut ev);
    nd.enqueue(frame(1, 1500, 200, 0), 0, &mut rng, &mut ev); // one frame
    for i in 1..40 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
        nd.enqueue(frame(2, 1500, 100 + i, 0), 0, &mut rng, &mut ev);
    }
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // 0 and 1 sent, 2 refused: list [0, 2]
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 32), (1, 1)]);
    nd.enqueue(frame(1, 1500, 201, 0), 0, &mut rng, &mut ev); // [0, 2, 1]; the call refuses 0: [2, 1, 0]
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    nd.hw.pop_front(); // station 0's A-MPDU completes
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(1, 1), (2, 32)]);
}

#[test]
fn on_mac80211s_txqs_a_refused_station_s_next_frame_leaves_fq_codel_for_its_retry_queue() {
    // 4.10's `ath_tx_sched_aggr` takes the station's next frame (`ath_tx_get_tid_subframe`: the
    // retry queue's head, else `ieee80211_tx_dequeue`) before it checks the hardware queue, and on
    // refusal puts it at the tail of `tid->retry_q`; the legacy driver peeked (`skb_peek`).
    let phys = [mcs(15), mcs(15), mcs(15)];
    let dequeued = |design: Design| {
        let mut nd = node(design, 3);
        let mut rng = stream(1, 1);
        let mut ev = Events::default();
        for i in 0..120 {
            nd.enqueue(frame((i % 3) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
        }
        let mut n = [0usize; 3];
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| n[s] += 1);
        let first = n;
        nd.hw.clear(); // both A-MPDUs complete: stations 0 and 1 again, station 2 refused again
        nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| n[s] += 1);
        (first, n, stations(nd.hw.make_contiguous()))
    };
    // Stations 0 and 1 take 33 frames each from their TXQs (32 sent, the 33rd back to the retry
    // queue: the aggregate is full), then their last 7; the refused station 2 gives up 1 frame to
    // its retry queue the first time, and the second refusal takes that frame again (the retry
    // queue's head), not a second one from fq_codel.
    assert_eq!(dequeued(Design::Fq), ([33, 33, 1], [40, 40, 1], vec![(0, 8), (1, 8)]));
    assert_eq!(dequeued(Design::Legacy), ([33, 33, 0], [40, 40, 0], vec![(0, 8), (1, 8)]));
}

#[test]
fn the_legacy_driver_runs_its_scheduler_once_per_frame_it_takes_from_the_qdisc_and_per_completion() {
    // ath9k ≤ 4.9: `ath_tx_start` queues each frame the qdisc hands over on its TID and calls
    // `ath_txq_schedule`; `ath_tx_process_buffer` calls it at each completion. A packet that stays
    // in the qdisc (123 frames in the driver, mac80211's queue stopped) calls nothing. On mac80211's
    // TXQs every packet calls it once (`ath9k_wake_tx_queue`).
    let mut nd = node(Design::Legacy, 2);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    nd.enqueue(frame(0, 1500, 0, 0), 0, &mut rng, &mut ev);
    assert_eq!(nd.take_calls(), 1);
    for i in 1..200 {
        nd.enqueue(frame((i % 2) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    assert_eq!(nd.take_calls(), LEGACY_DRIVER_FRAMES - 1); // frames 1..=122 reached the driver
    nd.enqueue(frame(1, 1500, 200, 0), 0, &mut rng, &mut ev);
    assert_eq!(nd.take_calls(), 0); // the driver is full: the packet waits in the qdisc
    nd.release(6, 0, &mut rng, &mut ev); // a completion frees 6 frames: the qdisc hands over 6
    assert_eq!(nd.take_calls(), 1 + 6);
    let mut fq = node(Design::Fq, 2);
    fq.enqueue(frame(0, 1500, 0, 0), 0, &mut rng, &mut ev);
    assert_eq!(fq.take_calls(), 1);
}

#[test]
fn the_airtime_scheduler_credits_and_rotates_the_spent_head_stations_even_on_a_full_hardware_queue() {
    // 63fefa050477's `ath_txq_schedule` (read in the 4.11-4.16 `xmit.c`) runs from `begin:` at
    // every call: a head station whose deficit is <= 0 gets ATH_AIRTIME_QUANTUM and moves to the
    // tail of `acq_old` (`goto begin`), and only `ath_tx_sched_aggr`, reached with the first
    // station whose deficit is positive, finds the hardware queue full (two A-MPDUs): its next
    // frame goes to its retry queue and the call ends (`goto out`), the station left at the head.
    let phys = [mcs(15), mcs(15), mcs(15)];
    let mut nd = node(Design::Airtime, 3);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..300 {
        nd.enqueue(frame((i % 3) as u32, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    let mut n = [0usize; 3];
    // All three new: each credited 300 µs and moved to the old list; station 0 sends twice (its
    // 65th frame waits in its retry queue: the second aggregate was full); that frame is past its
    // 64-frame block-ack window, so the call ends at station 0, which keeps the head.
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| n[s] += 1);
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 32), (0, 32)]);
    assert_eq!(n, [65, 0, 0]);
    // Their airtime is charged (as at completion; the queue stays full in this test).
    nd.charge(0, 1_000_000);
    nd.charge(1, 1_000_000);
    // An arrival's call on the full queue: 0 and 1 (<= 0) credited and rotated, 2 refused.
    nd.enqueue(frame(2, 1500, 300, 0), 0, &mut rng, &mut ev);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| n[s] += 1);
    assert_eq!([nd.deficit(0), nd.deficit(1), nd.deficit(2)], [-400_000, -400_000, 300_000]);
    assert_eq!(n, [65, 0, 1]);
    // The next call finds station 2 at the head again: its retry queue's head frame is taken and
    // put back, nothing more leaves fq_codel, no one is credited.
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| n[s] += 1);
    assert_eq!([nd.deficit(0), nd.deficit(1), nd.deficit(2)], [-400_000, -400_000, 300_000]);
    assert_eq!(n, [65, 0, 1]);
    // When a transmission completes, station 2 sends, its refused frame first.
    nd.hw.pop_front();
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |s, _| n[s] += 1);
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 32), (2, 32)]);
    assert_eq!(n, [65, 0, 33]);
}

#[test]
fn the_airtime_scheduler_puts_a_returning_station_with_a_spent_deficit_on_the_old_list_uncredited() {
    // 63fefa050477's `__ath_tx_queue_tid`: a TID that joins goes to `acq_new` only while its
    // station's deficit is positive, else to the tail of `acq_old`; it is credited only when it
    // reaches the head (`ath_txq_schedule`), not on its way in.
    let phys = [mcs(15), mcs(15)];
    let mut nd = node(Design::Airtime, 2);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    nd.enqueue(frame(0, 1500, 0, 0), 0, &mut rng, &mut ev); // one frame
    for i in 1..100 {
        nd.enqueue(frame(1, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    // Both new, both credited 300 µs; station 0 sends its frame and, empty, leaves; station 1 fills
    // the hardware queue.
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 1), (1, 32)]);
    nd.charge(0, 1_000_000); // its frame's airtime (as at completion): 300 - 1000 µs
    nd.enqueue(frame(0, 1500, 100, 0), 0, &mut rng, &mut ev); // back, with a spent deficit
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // full queue: station 1 refused
    assert_eq!(nd.deficit(0), -700_000);
    // Both transmissions leave the hardware (their block-ack windows not moved in this test):
    // station 1 (at the head, 300 µs, not yet charged) sends its frames 32-63; its next frame, 64, is
    // past its window, so the call ends at it (63fefa050477: `ath_tx_get_tid_subframe` returns
    // NULL, `goto out`), station 1 still at the head; station 0 waits, uncredited.
    nd.hw.clear();
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(1, 32)]);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(1, 32)]);
    assert_eq!((nd.deficit(0), nd.deficit(1)), (-700_000, 300_000));
}

#[test]
fn a_retry_frame_past_the_block_ack_window_goes_behind_the_ones_inside_it() {
    // ath9k's `ath_tx_get_tid_subframe`: a retry-queue frame past the window goes to the tail and the
    // next one is tried. A refusal puts the head frame back at the tail, so the queue can hold frame
    // 70 (past the window of 0-63) ahead of frame 5: frame 5 goes, alone (70 still past the window).
    let phys = [mcs(15)];
    let mut nd = node(Design::Airtime, 1);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for seq in [5u64, 70] {
        let mut p = frame(0, 1500, seq, 0);
        p.data.seq = seq;
        nd.requeue(p); // to the head: [70, 5]
    }
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    let sent: Vec<Vec<u64>> = nd.hw.iter().map(|a| a.frames.iter().map(|p| p.data.seq).collect()).collect();
    assert_eq!(sent, vec![vec![5]]);
    assert_eq!(nd.backlog_pkts(), 2); // frame 70 waits (in the retry queue) with frame 5 (in the hardware)
}

#[test]
fn the_ap_counts_each_downlink_turn_once_and_the_turns_that_left_its_station_with_nothing_queued() {
    // One `fq` station at a fixed MCS 0 (A-MPDUs of at most 2 × 1500 B: 3296 B in 4 ms), five packets arriving
    // at t = 0. Packet 1 is built at once into an aggregate of its own (the hardware is idle), emptying the TXQ;
    // so is packet 2 (one A-MPDU in the hardware). Packets 3-5 find two A-MPDUs there: each arrival's call is
    // refused, packet 3 waits in the retry queue. The first completion builds [3, 4] (5 stays), the second [5],
    // emptying the station again: 4 turns, 3 of them emptying. No retries on a clean channel: one try each.
    let stations = vec![StationConfig { name: "s".into(), phy: mcs(0), mpdu_error: 0.0, weight: 1.0, snr_db: None, mcs: None, rate_control: RateControl::Fixed }];
    let mut w = Wifi::new(&WifiConfig { design: Design::Fq, stations, qdisc: QdiscConfig::default(), aql: None }).unwrap();
    let mut rng = stream(3, 9);
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    for id in 1..=5u64 {
        w.enqueue(0, 0, false, Packet { meta: PacketMeta { flow: 1, len: 1500, ..Default::default() }, data: id }, &mut rng, &mut drops);
    }
    while let Some(t) = w.next_event() {
        w.poll(t, &mut rng, &mut out, &mut drops);
    }
    assert_eq!(out.iter().map(|d| d.data).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    let st = &w.stations[0];
    assert_eq!((st.down_aggregates, st.down_frames), (4, 5));
    assert_eq!((st.down_turns, st.down_turns_emptied), (4, 3));
}

#[test]
fn the_airtime_scheduler_starts_each_station_with_one_quantum_so_its_first_frames_go_first() {
    // 63fefa050477's `ath_tx_node_init` sets `an->airtime_deficit[acno] = ATH_AIRTIME_QUANTUM` for every
    // new station (mac80211's later scheduler alike: `sta_info_alloc` sets `deficit = airtime_weight`),
    // so a station's first frames find a positive deficit and join `acq_new`, served before the old
    // list (`__ath_tx_queue_tid`). Starting at 0, the station joined the tail of the old list and
    // was credited only on reaching its head: a station ahead of it with a deficit that one quantum
    // brings above 0 went first.
    let phys = [mcs(7), mcs(7)];
    let mut nd = node(Design::Airtime, 2);
    assert_eq!((nd.deficit(0), nd.deficit(1)), (300_000, 300_000));
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    for i in 0..100 {
        nd.enqueue(frame(0, 1500, i, 0), 0, &mut rng, &mut ev);
    }
    // Station 0 fills the hardware queue with two A-MPDUs of 21 (MCS 7's 4 ms), then is charged
    // 400 µs for them (as at completion): deficit 300 - 400 = -100 µs.
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 21), (0, 21)]);
    nd.charge(0, 400_000);
    nd.enqueue(frame(1, 1500, 100, 0), 0, &mut rng, &mut ev); // station 1's first frame: acq_new
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // full: station 0 credited to 200 µs, station 1 refused at the head
    nd.hw.pop_front(); // an A-MPDU leaves: station 1 sends first
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 21), (1, 1)]);
    assert_eq!((nd.deficit(0), nd.deficit(1)), (200_000, 300_000));
}

#[test]
fn the_airtime_scheduler_puts_a_station_spent_at_tx_completion_back_on_the_old_list_to_earn_its_quantum_while_idle() {
    // 63fefa050477's `ath_tx_count_airtime` subtracts a transmission's airtime at TX completion and,
    // the deficit now <= 0, calls `__ath_tx_queue_tid`: the TID joins `acq_old` even with nothing
    // queued. `ath_tx_process_buffer` then runs `ath_txq_schedule`, which credits it a quantum each
    // time it is the head with a deficit <= 0 (`goto begin`) and drops it, empty, once positive.
    // Charged without the re-queue, a station that its turn emptied stayed off the list at
    // -700 µs until its next frame (a ping's reply) came, and only then began to earn it back.
    let phys = [mcs(15)];
    let mut nd = node(Design::Airtime, 1);
    let mut rng = stream(1, 1);
    let mut ev = Events::default();
    nd.enqueue(frame(0, 1500, 0, 0), 0, &mut rng, &mut ev);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // sent; the station, empty, leaves the list
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 1)]);
    nd.hw.clear();
    nd.count_airtime(0, 1_000_000); // TX completion: 300 - 1000 µs
    assert_eq!(nd.deficit(0), -700_000);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {}); // the completion's call: -700 -> -400 -> -100 -> 200, then dropped
    assert_eq!(nd.deficit(0), 200_000);
    assert!(nd.hw.is_empty());
    // Its next frame finds a positive deficit (`acq_new`) and goes at once.
    nd.enqueue(frame(0, 1500, 1, 0), 0, &mut rng, &mut ev);
    nd.refill(&phys, 0, &mut rng, &mut ev, &mut |_, _| {});
    assert_eq!(stations(nd.hw.make_contiguous()), vec![(0, 1)]);
}

#[test]
fn the_aps_own_window_stops_at_hostapds_cwmax_63_a_stations_at_the_advertised_1023() {
    // hostapd gives the AP's best-effort queue CWmax 4 × (15 + 1) − 1 = 63 (`txq_be`, tx_queue_data2) and
    // advertises 1023 (wmm_ac_be_cwmax 10) to the stations; both start at 15. Seven failures in a row.
    let mut w = downlink(0, RateControl::Fixed, None, 1, 0);
    let mut seen = Vec::new();
    for k in 0..7u64 {
        w.medium.end_with(k * 1_000_000, &[(0, false), (1, false)], |_| 0);
        seen.push(w.contention_windows());
    }
    let ap: Vec<u32> = seen.iter().map(|c| c[0]).collect();
    let sta: Vec<u32> = seen.iter().map(|c| c[1]).collect();
    assert_eq!(ap, vec![31, 63, 63, 63, 63, 63, 63]);
    assert_eq!(sta, vec![31, 63, 127, 255, 511, 1023, 1023]);
    // A success resets both to CWmin.
    w.medium.end_with(8_000_000, &[(0, true), (1, true)], |_| 0);
    assert_eq!(w.contention_windows(), vec![15, 15]);
}
