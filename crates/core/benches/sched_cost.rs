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

fn main() {
    let n: u64 = std::env::var("SCHED_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    for flows in [1u64, 16, 1024] {
        run("fifo", build(&cfg("fifo", &[])).unwrap(), flows, n);
        run("policer", build(&cfg("policer", &[("burst", 1e6)])).unwrap(), flows, n);
        run("tbf", build(&cfg("tbf", &[("burst", 1e6)])).unwrap(), flows, n);
        run("fq", build(&cfg("fq", &[])).unwrap(), flows, n);
        run("cake (unlimited)", build(&cfg("cake", &[("unlimited", 1.0)])).unwrap(), flows, n);
        run("cake (shaped, diffserv3)", build(&cfg("cake", &[])).unwrap(), flows, n);
    }
}
