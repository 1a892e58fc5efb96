//! Policer: a router's committed-information-rate (CIR) token bucket.
//!
//! Source: Linux `net/sched/act_police.c` (v6.x, `tcf_police_act`), the
//! action behind `tc ... police rate R burst B conform-exceed pipe/drop`;
//! the rate arithmetic is sch_tbf's (`psched_l2t_ns`, see [`super::tbf`]).
//!
//! Model in a nutshell: the same bucket as TBF, holding ns of transmission at
//! `rate`, depth `burst` bytes' worth. A packet arriving at `now` conforms if
//! `min(now - t_c, burst_ns) + tokens`, capped at `burst_ns`, minus its cost
//! `l2t(len)` is >= 0: it passes *at once* and the bucket keeps the
//! remainder. Otherwise it exceeds and is dropped ([`DropReason::Policer`]);
//! an exceeding packet leaves the bucket untouched (the kernel only updates
//! `t_c`/`toks` on conform). Nothing is ever delayed: unlike a shaper, a
//! policer turns bursts into losses, not into queueing.
//!
//! States: `tokens` (ns), `t_c` (last conforming arrival). The bucket starts
//! full at time 0 (the kernel: full when the action is created).
//!
//! As a qdisc ("policer"), conforming packets go into a FIFO limited by the
//! direction's `buffer`, from which the link takes them at once whenever its
//! wire is free; with `rate` at or below the link rate that FIFO holds at
//! most the burst. [`TokenBucket`] is the bucket alone, for a link that
//! polices in front of any other qdisc.

use super::tbf::RateCfg;
use super::params::{U32_MAX, U64_MAX};
use super::{DropReason, Events, Limit, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::time::Nanos;
use super::fifo::Fifo;

/// The policing bucket (`struct tcf_police` + `tcf_police_params`).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: RateCfg,
    /// Depth in ns of `rate` (`tcfp_burst`).
    burst_ns: i64,
    tokens: i64,
    t_c: Nanos,
}

impl TokenBucket {
    /// A bucket of `burst` bytes refilled at `rate_bps` bit/s, full at time 0.
    pub fn new(rate_bps: u64, burst: u64) -> Result<Self, String> {
        if rate_bps < 8 {
            return Err(format!("rate: expected at least 8 bit/s, got {rate_bps}"));
        }
        if burst == 0 || burst > u32::MAX as u64 {
            return Err(format!("burst: expected 1 B to 4 GB, got {burst} B"));
        }
        let rate = RateCfg::new(rate_bps);
        let burst_ns = rate.l2t_ns(burst as u32) as i64;
        Ok(TokenBucket { rate, burst_ns, tokens: burst_ns, t_c: 0 })
    }

    /// Does a packet of `len` bytes arriving at `now` conform? If so its
    /// tokens are taken; if not, nothing changes and the caller drops it.
    #[inline]
    pub fn admit(&mut self, now: Nanos, len: u32) -> bool {
        let elapsed = now.saturating_sub(self.t_c).min(i64::MAX as u64) as i64;
        let mut toks = elapsed.min(self.burst_ns);
        toks = (toks + self.tokens).min(self.burst_ns);
        toks -= self.rate.l2t_ns(len) as i64;
        if toks < 0 {
            return false;
        }
        self.t_c = now;
        self.tokens = toks;
        true
    }
}

/// The policer as a stand-alone qdisc: the bucket in front of a tail-drop
/// FIFO limited by the direction's `buffer`.
#[derive(Debug)]
pub struct Policer<T> {
    bucket: TokenBucket,
    fifo: Fifo<T>,
}

impl<T> Policer<T> {
    pub fn new(bucket: TokenBucket, limit: Limit) -> Self {
        Policer { bucket, fifo: Fifo::new(limit) }
    }
}

impl<T> Qdisc<T> for Policer<T> {
    fn name(&self) -> &'static str {
        "policer"
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        if !self.bucket.admit(now, pkt.meta.len) {
            ev.drop(pkt, DropReason::Policer);
            return;
        }
        self.fifo.enqueue(pkt, now, rng, ev);
    }

    fn dequeue(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        self.fifo.dequeue(now, rng, ev)
    }

    fn backlog_bytes(&self) -> u64 {
        self.fifo.backlog_bytes()
    }

    fn backlog_pkts(&self) -> usize {
        self.fifo.backlog_pkts()
    }
}

/// Scenario doc of `policer` (the [`super::QdiscKind`] registry).
pub const DOC: &str = "token-bucket policer (Linux act_police, `tc ... police`): packets within `rate`+`burst` pass at once, the excess is dropped";

/// `qdisc_params` of `policer`. tc-police(8) requires rate and burst; here 0
/// derives each from the link (see the docs).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::rate("rate", 0.0, 0.0, U64_MAX,
        "tc police `rate`: committed rate in bit/s; 0 = the link's rate"),
    ParamSpec::size("burst", 0.0, 0.0, U32_MAX,
        "tc police `burst`: bucket depth in bytes; 0 = max(1514 B, rate/HZ with HZ=250)"),
];

/// Build "policer" from a scenario config, its parameters read through [`PARAMS`].
pub fn build<T: 'static>(cfg: &QdiscConfig, p: &Params) -> Result<Box<dyn Qdisc<T>>, String> {
    let (rate, burst) = super::tbf::bucket_params(cfg, p, "the policer")?;
    let bucket = TokenBucket::new(rate, burst).map_err(|e| format!("qdisc_params.{e}"))?;
    Ok(Box::new(Policer::new(bucket, cfg.limit)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::PacketMeta;

    fn pkt(len: u32, id: u32) -> Packet<u32> {
        Packet { meta: PacketMeta { len, ..Default::default() }, data: id }
    }

    #[test]
    fn conforming_traffic_passes_with_zero_added_delay() {
        // 10 Mbit/s, 1500-byte packets every 1.2 ms: exactly the rate.
        let mut q = Policer::new(TokenBucket::new(10_000_000, 3000).unwrap(), Limit::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        for i in 0..100u32 {
            let t = i as u64 * 1_200_000;
            q.enqueue(pkt(1500, i), t, &mut rng, &mut ev);
            let p = q.dequeue(t, &mut rng, &mut ev).expect("passes at its arrival time");
            assert_eq!(p.data, i);
            assert_eq!(q.next_wakeup(t), None);
        }
        assert!(ev.drops.is_empty());
    }

    #[test]
    fn the_excess_of_a_burst_is_dropped_and_the_rest_keeps_its_order() {
        // burst 4500 B = 3 packets; 5 arrive at once: 0,1,2 pass, 3,4 are dropped.
        let mut q = Policer::new(TokenBucket::new(10_000_000, 4500).unwrap(), Limit::default());
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let t0 = 5_000_000_000;
        for i in 0..5 {
            q.enqueue(pkt(1500, i), t0, &mut rng, &mut ev);
        }
        let dropped: Vec<_> = ev.drops.iter().map(|d| (d.pkt.data, d.reason)).collect();
        assert_eq!(dropped, vec![(3, DropReason::Policer), (4, DropReason::Policer)]);
        let out: Vec<_> = std::iter::from_fn(|| q.dequeue(t0, &mut rng, &mut ev)).map(|p| p.data).collect();
        assert_eq!(out, vec![0, 1, 2]);
        // 1.2 ms later exactly one packet's worth of tokens is back.
        let mut b = TokenBucket::new(10_000_000, 4500).unwrap();
        for _ in 0..3 {
            assert!(b.admit(t0, 1500));
        }
        assert!(!b.admit(t0 + 1_199_999, 1500));
        assert!(b.admit(t0 + 1_200_000, 1500));
        assert!(!b.admit(t0 + 1_200_000, 1));
    }

    #[test]
    fn long_run_throughput_equals_the_rate() {
        // Offer 2.4x the rate (1500 B every 0.5 ms at 10 Mbit/s) from 0 to 10 s.
        let mut b = TokenBucket::new(10_000_000, 15_000).unwrap();
        let mut passed = 0u64;
        for i in 0..=20_000u64 {
            if b.admit(i * 500_000, 1500) {
                passed += 1500;
            }
        }
        // Whole packets of (initial bucket 15 kB + rate x 10 s = 12.5 MB):
        // floor(12_515_000 / 1500) = 8343 packets; no token is ever lost.
        assert_eq!(passed, 8343 * 1500);
    }
}
