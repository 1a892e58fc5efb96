//! Per-packet cost of sched's qdiscs (CAKE, sch_fq, TBF, policer) and FIFO
//! for reference: ns per enqueue+dequeue pair, in release mode.
//!
//! Workload: `flows` flows of 1500-byte packets (CAKE: 2 source hosts, one
//! destination per flow), kept at a standing backlog of 2 packets per flow;
//! virtual time advances by one 1500-byte serialisation time at 1 Gbit/s per
//! packet and shapers are set to that rate, so every dequeue finds a packet
//! due (the cost measured is the qdisc's, not waiting). The clock is read
//! only around the whole loop.
//!
//! Run: `cargo bench -p bloatlab-core --bench sched_cost`

use bloatlab_core::qdisc::{build, Events, Limit, Packet, PacketMeta, Qdisc, QdiscConfig};
use bloatlab_core::rng::stream;
use bloatlab_core::wifi::airtime::Phy;
use bloatlab_core::wifi::mac::{Design, Frame, Node, NO_SEQ};
use std::hint::black_box;
use std::time::Instant;

const RATE: u64 = 1_000_000_000;
const GAP: u64 = 12_000; // 1500 B at 1 Gbit/s, ns

fn cfg(kind: &str, params: &[(&str, f64)]) -> QdiscConfig {
    QdiscConfig {
        kind: kind.into(),
        limit: Limit { bytes: Some(100_000_000), pkts: None },
        rate_bps: RATE,
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

fn meta(i: u64, flows: u64) -> PacketMeta {
    let f = i % flows;
    PacketMeta { flow: f + 1, src_host: (f % 2) as u32 + 1, dst_host: f as u32 + 100, len: 1500, ..Default::default() }
}

fn run(name: &str, mut q: Box<dyn Qdisc<u64>>, flows: u64, n: u64) -> f64 {
    let mut rng = stream(1, 0);
    let mut ev = Events::default();
    let mut now = 1_000_000_000u64;
    let mut i = 0u64;
    for _ in 0..2 * flows {
        q.enqueue(Packet { meta: meta(i, flows), data: i }, now, &mut rng, &mut ev);
        i += 1;
    }
    let t = Instant::now();
    let mut got = 0u64;
    for _ in 0..n {
        q.enqueue(Packet { meta: PacketMeta { enqueued_at: now, ..meta(i, flows) }, data: i }, now, &mut rng, &mut ev);
        i += 1;
        now += GAP;
        loop {
            match q.dequeue(now, &mut rng, &mut ev) {
                Some(p) => {
                    got += black_box(p.data) & 1;
                    break;
                }
                None => match q.next_wakeup(now) {
                    Some(w) if w > now => now = w,
                    _ => break,
                },
            }
        }
        ev.drops.clear();
        ev.marks = 0;
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("{name:<28} flows={flows:<5} {ns:>8.1} ns per enqueue+dequeue  (backlog {} pkts, {got})", q.backlog_pkts());
    ns
}

/// The WiFi AP's MAC (docs/wifi.md): per-packet cost of enqueue into the
/// station TXQs (or the legacy qdisc + driver) plus building aggregates and
/// the station scheduler, with `stations` stations at MCS 15 each holding a
/// standing backlog of 2 aggregates; every aggregate is taken out and
/// charged as the medium would. The medium itself (contention) is not in it:
/// that is the simulator benchmark's per-TXOP cost (bench/wifi_bench.py).
fn run_wifi(design: Design, stations: usize, n: u64) -> f64 {
    let iface = (design == Design::Legacy).then(|| build::<Frame<u64>>(&cfg("fifo", &[])).unwrap());
    let mut node: Node<u64> = Node::new(design, iface, &vec![1.0; stations], None);
    let phys = vec![Phy::from_mcs("mcs15").unwrap(); stations];
    let mut rng = stream(1, 0);
    let mut ev = Events::default();
    let mut now = 1_000_000_000u64;
    let mut i = 0u64;
    let pkt = |i: u64, now| Packet {
        meta: PacketMeta { flow: i % (4 * stations as u64) + 1, len: 1500, enqueued_at: now, ..Default::default() },
        data: Frame { data: Some(i), sta: (i % stations as u64) as u32, retries: 0, seq: NO_SEQ, air_us: 0, probe: None },
    };
    for _ in 0..(82 * stations) {
        node.enqueue(pkt(i, now), now, &mut rng, &mut ev);
        i += 1;
    }
    let t = Instant::now();
    let mut sent = 0u64;
    while sent < n {
        node.refill(&phys, now, &mut rng, &mut ev, &mut |_, _| {});
        let Some(a) = node.hw.pop_front() else { break };
        let k = a.frames.len() as u64;
        node.charge(a.sta, 4_000_000);
        node.release(a.frames.len(), now, &mut rng, &mut ev);
        sent += k;
        black_box(&a);
        for _ in 0..k {
            node.enqueue(pkt(i, now), now, &mut rng, &mut ev);
            i += 1;
        }
        now += k * GAP;
        ev.drops.clear();
        ev.marks = 0;
    }
    let ns = t.elapsed().as_nanos() as f64 / sent as f64;
    println!("{:<28} stations={stations:<4} {ns:>8.1} ns per packet (enqueue + aggregate + schedule)", format!("wifi {}", design.name()));
    ns
}

fn main() {
    let n: u64 = std::env::var("SCHED_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    for stations in [1usize, 30, 100] {
        for d in [Design::Legacy, Design::Fq, Design::Airtime] {
            run_wifi(d, stations, n);
        }
    }
    for flows in [1u64, 16, 1024] {
        run("fifo", build(&cfg("fifo", &[])).unwrap(), flows, n);
        run("policer", build(&cfg("policer", &[("burst", 1e6)])).unwrap(), flows, n);
        run("tbf", build(&cfg("tbf", &[("burst", 1e6)])).unwrap(), flows, n);
        run("fq", build(&cfg("fq", &[])).unwrap(), flows, n);
        run("cake (unlimited)", build(&cfg("cake", &[("unlimited", 1.0)])).unwrap(), flows, n);
        run("cake (shaped, diffserv3)", build(&cfg("cake", &[])).unwrap(), flows, n);
    }
}
