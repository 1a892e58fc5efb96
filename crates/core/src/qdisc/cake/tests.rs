use super::*;
use crate::qdisc::{build, PacketMeta};
use crate::time::NS_PER_SEC;

fn meta(flow: u64, src: u32, dst: u32, len: u32) -> PacketMeta {
    PacketMeta { flow, src_host: src, dst_host: dst, len, ..Default::default() }
}

fn pkt(m: PacketMeta, id: u32) -> Packet<u32> {
    Packet { meta: m, data: id }
}

/// 10 Mbit/s = 1.25e6 B/s: 800 ns per byte.
fn shaped(tin_mode: TinMode, flow_mode: u8) -> CakeConfig {
    CakeConfig { rate_bytes_ps: 1_250_000, tin_mode, flow_mode, ..Default::default() }
}

#[test]
fn the_shaper_spaces_departures_by_length_plus_overhead_at_the_rate() {
    let mut q = Cake::new(CakeConfig { overhead: 18, ..shaped(TinMode::Besteffort, 7) });
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    let t0 = NS_PER_SEC;
    for i in 0..5 {
        q.enqueue(pkt(meta(1, 1, 2, 1500), i), t0, &mut rng, &mut ev);
    }
    let mut now = t0;
    let mut out = Vec::new();
    while q.backlog_pkts() > 0 {
        match q.dequeue(now, &mut rng, &mut ev) {
            Some(p) => out.push((p.data, now - t0)),
            None => now = q.next_wakeup(now).unwrap(),
        }
    }
    // (1500 + 18) B x 800 ns/B = 1.2144 ms apart, exactly.
    let want: Vec<_> = (0..5u32).map(|i| (i, i as u64 * 1_214_400)).collect();
    assert_eq!(out, want);
    assert!(ev.drops.is_empty());
    assert_eq!(q.next_wakeup(now), None);
}

#[test]
fn cobalt_marks_the_second_over_target_packet_of_a_fresh_queue() {
    // 8 ECT packets at once through 10 Mbit/s: the k-th waits k x 1.2 ms.
    // Sojourn first exceeds target (5 ms) and 4 MTU times (4.85 ms) at
    // packet 5 (6.0 ms): dropping starts, and with rec_inv_sqrt still 0 the
    // next packet (6) is signalled; the next signal is 70.7 ms later.
    let mut q = Cake::new(shaped(TinMode::Besteffort, 7));
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    for i in 0..8 {
        let m = PacketMeta { ecn: Ecn::Ect0, ..meta(1, 1, 2, 1500) };
        q.enqueue(pkt(m, i), 0, &mut rng, &mut ev);
    }
    let mut now = 0;
    let mut ce = Vec::new();
    while q.backlog_pkts() > 0 {
        match q.dequeue(now, &mut rng, &mut ev) {
            Some(p) => {
                if p.meta.ecn == Ecn::Ce {
                    ce.push(p.data)
                }
            }
            None => now = q.next_wakeup(now).unwrap(),
        }
    }
    assert_eq!(ce, vec![6]);
    assert_eq!(ev.marks, 1);
    assert!(ev.drops.is_empty());
}

#[test]
fn cobalt_drops_not_ect_packets_under_a_standing_queue() {
    // Same burst, not ECT: packet 6 is dropped, the others delivered.
    let mut q = Cake::new(shaped(TinMode::Besteffort, 7));
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    for i in 0..8 {
        q.enqueue(pkt(meta(1, 1, 2, 1500), i), 0, &mut rng, &mut ev);
    }
    let mut now = 0;
    let mut out = Vec::new();
    while q.backlog_pkts() > 0 {
        match q.dequeue(now, &mut rng, &mut ev) {
            Some(p) => out.push(p.data),
            None => now = q.next_wakeup(now).unwrap(),
        }
    }
    assert_eq!(out, vec![0, 1, 2, 3, 4, 5, 7]);
    let dropped: Vec<_> = ev.drops.iter().map(|d| (d.pkt.data, d.reason)).collect();
    assert_eq!(dropped, vec![(6, DropReason::Aqm)]);
}

#[test]
fn over_the_memory_limit_the_fattest_queue_loses_its_head_and_blue_rises() {
    // memlimit = 10 full packets of truesize 2304 B.
    let mut q = Cake::new(CakeConfig { memlimit: 10 * 2304, ..shaped(TinMode::Besteffort, 7) });
    assert_eq!(q.memory_limit(), 23_040);
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    let t0 = NS_PER_SEC;
    // Flow 2 (thin) gets 2 packets, flow 1 (fat) 10: the 11th and 12th
    // overflow and each drops the head of flow 1.
    q.enqueue(pkt(meta(2, 1, 3, 1500), 200), t0, &mut rng, &mut ev);
    q.enqueue(pkt(meta(2, 1, 3, 1500), 201), t0, &mut rng, &mut ev);
    for i in 0..10 {
        q.enqueue(pkt(meta(1, 1, 2, 1500), 100 + i), t0, &mut rng, &mut ev);
    }
    let dropped: Vec<_> = ev.drops.iter().map(|d| (d.pkt.data, d.reason)).collect();
    assert_eq!(dropped, vec![(100, DropReason::Overlimit), (101, DropReason::Overlimit)]);
    assert_eq!(q.backlog_pkts(), 10);
    // BLUE of flow 1's queue: +1/256 once (the second overflow came within `target`).
    let idx = q.classify(0, &meta(1, 1, 2, 1500));
    assert_eq!(q.tins[0].flows[idx].cvars.p_drop, 1 << 24);
    assert_eq!(q.tins[0].unresponsive_flow_count, 1);
    let idx2 = q.classify(0, &meta(2, 1, 3, 1500));
    assert_eq!(q.tins[0].flows[idx2].cvars.p_drop, 0);
}

/// Keep every flow of `flows` (flow, src, dst, dscp) backlogged with ECT
/// packets through a shaped CAKE for `secs` seconds; bytes delivered per flow
/// index after the first half second.
fn saturate(c: CakeConfig, flows: &[(u64, u32, u32, u8)], secs: u64) -> Vec<u64> {
    let mut q = Cake::new(c);
    let mut rng = crate::rng::stream(7, 0);
    let mut ev = Events::default();
    let mk = |i: usize, id: u32| {
        let (f, s, d, dscp) = flows[i];
        pkt(PacketMeta { ecn: Ecn::Ect0, dscp, ..meta(f, s, d, 1500) }, id * 100 + i as u32)
    };
    for i in 0..flows.len() {
        for k in 0..10 {
            q.enqueue(mk(i, k), 0, &mut rng, &mut ev);
        }
    }
    let mut got = vec![0u64; flows.len()];
    let mut now = 0;
    let mut serial = 10;
    while now < secs * NS_PER_SEC {
        match q.dequeue(now, &mut rng, &mut ev) {
            Some(p) => {
                let i = (p.data % 100) as usize;
                if now >= NS_PER_SEC / 2 {
                    got[i] += p.meta.len as u64;
                }
                q.enqueue(mk(i, serial), now, &mut rng, &mut ev);
                serial += 1;
            }
            None => now = q.next_wakeup(now).unwrap(),
        }
    }
    assert!(ev.drops.is_empty(), "ECT traffic within the memory limit is never dropped");
    got
}

#[test]
fn triple_isolate_gives_a_host_with_8_flows_and_a_host_with_1_flow_half_each() {
    // Host 1 runs 8 flows to 8 servers, host 2 one flow to a ninth.
    let mut flows: Vec<(u64, u32, u32, u8)> = (0..8).map(|i| (10 + i, 1, 101 + i as u32, 0)).collect();
    flows.push((50, 2, 109, 0));
    let got = saturate(shaped(TinMode::Besteffort, 7), &flows, 3);
    let host1: u64 = got[..8].iter().sum();
    let share = host1 as f64 / (host1 + got[8]) as f64;
    eprintln!("triple-isolate: host 1 share {share:.4}");
    assert!((share - 0.5).abs() < 0.01, "host 1 share {share}");
    // Per-flow fairness instead (flow_mode "flows"): host 1 gets 8/9.
    let got = saturate(shaped(TinMode::Besteffort, 4), &flows, 3);
    let host1: u64 = got[..8].iter().sum();
    let share = host1 as f64 / (host1 + got[8]) as f64;
    eprintln!("flows: host 1 share {share:.4}");
    assert!((share - 8.0 / 9.0).abs() < 0.01, "host 1 share {share}");
}

#[test]
fn a_diffserv4_voice_packet_goes_ahead_of_bulk_within_its_quarter_share() {
    let mut q = Cake::new(shaped(TinMode::Diffserv4, 7));
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    for i in 0..20 {
        q.enqueue(pkt(meta(1, 1, 2, 1500), i), 0, &mut rng, &mut ev);
    }
    // EF (DSCP 46) -> voice tin, enqueued last, leaves first.
    q.enqueue(pkt(PacketMeta { dscp: 46, ..meta(2, 1, 2, 200) }, 99), 0, &mut rng, &mut ev);
    assert_eq!(q.dequeue(0, &mut rng, &mut ev).map(|p| p.data), Some(99));
    // Both saturating: voice is held to its threshold, a quarter of the rate.
    let got = saturate(shaped(TinMode::Diffserv4, 7), &[(1, 1, 2, 0), (2, 1, 2, 46)], 3);
    let voice = got[1] as f64 / (got[0] + got[1]) as f64;
    eprintln!("diffserv4: voice share {voice:.4}");
    assert!((voice - 0.25).abs() < 0.01, "voice share {voice}");
}

#[test]
fn the_ack_filter_drops_an_older_pure_ack_made_redundant() {
    let ack = |n: u32| PacketMeta { is_pure_ack: true, tcp_ack: n, ..meta(5, 1, 2, 52) };
    // Conservative: a queued ACK goes once two newer ones are queued behind it.
    let mut q = Cake::new(CakeConfig { ack_filter: 1, ..shaped(TinMode::Besteffort, 7) });
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    for (i, n) in [1000u32, 2000, 3000, 4000].into_iter().enumerate() {
        q.enqueue(pkt(ack(n), i as u32), 0, &mut rng, &mut ev);
    }
    let dropped: Vec<_> = ev.drops.iter().map(|d| (d.pkt.data, d.reason)).collect();
    assert_eq!(dropped, vec![(0, DropReason::AckFilter), (1, DropReason::AckFilter)]);
    assert_eq!((q.backlog_pkts(), q.backlog_bytes()), (2, 104));
    // A duplicate ACK (same number) and a data packet are never dropped.
    let mut q = Cake::new(CakeConfig { ack_filter: 2, ..shaped(TinMode::Besteffort, 7) });
    let mut ev = Events::default();
    q.enqueue(pkt(ack(1000), 0), 0, &mut rng, &mut ev);
    q.enqueue(pkt(ack(1000), 1), 0, &mut rng, &mut ev);
    q.enqueue(pkt(meta(5, 1, 2, 1500), 2), 0, &mut rng, &mut ev);
    assert!(ev.drops.is_empty());
    // Aggressive: a single older ACK right before the new one goes at once.
    q.enqueue(pkt(ack(900), 3), 0, &mut rng, &mut ev);
    assert!(ev.drops.is_empty(), "an older number never makes a newer one redundant");
    let mut q = Cake::new(CakeConfig { ack_filter: 2, ..shaped(TinMode::Besteffort, 7) });
    q.enqueue(pkt(ack(1000), 0), 0, &mut rng, &mut ev);
    q.enqueue(pkt(ack(2000), 1), 0, &mut rng, &mut ev);
    let dropped: Vec<_> = ev.drops.iter().map(|d| d.pkt.data).collect();
    assert_eq!(dropped, vec![0]);
    assert_eq!(q.backlog_pkts(), 1);
}

#[test]
fn unlimited_cake_is_work_conserving() {
    let mut q: Cake<u32> = Cake::new(CakeConfig::default());
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    for i in 0..3 {
        q.enqueue(pkt(meta(1, 1, 2, 1500), i), 0, &mut rng, &mut ev);
    }
    assert_eq!(q.next_wakeup(0), None);
    let out: Vec<_> = std::iter::from_fn(|| q.dequeue(0, &mut rng, &mut ev)).map(|p| p.data).collect();
    assert_eq!(out, vec![0, 1, 2]);
}

#[test]
fn bad_parameters_are_refused_with_the_key_named() {
    let cfg = QdiscConfig {
        kind: "cake".into(),
        rate_bps: 10_000_000,
        params: vec![("overhead".into(), 300.0)],
        ..Default::default()
    };
    let e = build::<u32>(&cfg).err().unwrap();
    assert!(e.starts_with("qdisc_params.overhead:"), "{e}");
    let cfg = QdiscConfig { params: vec![("diffserv".into(), 9.0)], ..cfg };
    let e = build::<u32>(&cfg).err().unwrap();
    assert!(e.starts_with("qdisc_params.diffserv:"), "{e}");
}

#[test]
fn a_thousand_flows_through_colliding_sets_keep_flowing() {
    // 1024 flows into 1024 queues: some sets fill up and flows collide.
    let mut q = Cake::new(CakeConfig::default());
    let mut rng = crate::rng::stream(1, 0);
    let mut ev = Events::default();
    let m = |i: u64| meta(i % 1024 + 1, (i % 2) as u32 + 1, (i % 1024) as u32 + 100, 1500);
    let mut i = 0;
    for _ in 0..2048 {
        q.enqueue(pkt(m(i), i as u32), 0, &mut rng, &mut ev);
        i += 1;
    }
    let mut now = 0;
    for _ in 0..20_000 {
        q.enqueue(pkt(m(i), i as u32), now, &mut rng, &mut ev);
        i += 1;
        now += 12_000;
        assert!(q.dequeue(now, &mut rng, &mut ev).is_some());
    }
    assert_eq!(q.backlog_pkts() + ev.drops.len(), 2048);
}
