//! Cost of one enqueue + dequeue for each qdisc under a steady multi-flow
//! load: 64 flows round-robin, 1500-byte packets, a packet every 120 µs
//! (100 Mbit/s) of virtual time, the backlog held at 100 packets (12 ms of
//! sojourn: the AQMs are active). Run: `cargo bench -p bloatlab-core --bench qdisc_cost`.
//! Wall-clock ns per pair, best of 3 runs of 1M pairs each.

use bloatlab_core::qdisc::{build, Events, Limit, Packet, PacketMeta, QdiscConfig};
use bloatlab_core::rng;
use std::hint::black_box;
use std::time::Instant;

fn run(kind: &str, pairs: u64) -> (f64, u64) {
    let cfg = QdiscConfig {
        kind: kind.into(),
        limit: Limit { bytes: Some(1_000_000), pkts: None },
        rate_bps: 100_000_000,
        params: vec![],
    };
    let mut q = build::<u64>(&cfg).expect("build");
    let mut r = rng::stream(1, 0);
    let mut ev = Events::default();
    let mut now = 0u64;
    let mut id = 0u64;
    let mut drops = 0u64;
    let mut offer = |q: &mut Box<dyn bloatlab_core::qdisc::Qdisc<u64>>, now: u64, r: &mut rng::Rng, ev: &mut Events<u64>| {
        id += 1;
        let meta = PacketMeta { flow: id % 64, len: 1500, enqueued_at: now, ..Default::default() };
        q.enqueue(Packet { meta, data: id }, now, r, ev);
    };
    let t0 = Instant::now();
    for _ in 0..pairs {
        while q.backlog_pkts() < 100 {
            offer(&mut q, now, &mut r, &mut ev);
        }
        offer(&mut q, now, &mut r, &mut ev);
        black_box(q.dequeue(now, &mut r, &mut ev));
        drops += ev.drops.len() as u64;
        ev.drops.clear();
        now += 120_000;
    }
    (t0.elapsed().as_nanos() as f64 / pairs as f64, drops)
}

fn main() {
    let pairs = 1_000_000;
    println!("{:<10} {:>12} {:>10}", "qdisc", "ns/pair", "drops");
    for kind in ["fifo", "codel", "fq_codel", "red", "pie", "fq_pie"] {
        let mut best = f64::MAX;
        let mut drops = 0;
        for _ in 0..3 {
            let (ns, d) = run(kind, pairs);
            best = best.min(ns);
            drops = d;
        }
        println!("{kind:<10} {best:>12.1} {drops:>10}");
    }
}
