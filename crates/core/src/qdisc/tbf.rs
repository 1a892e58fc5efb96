//! TBF: the token-bucket shaper.
//!
//! Source: Linux `net/sched/sch_tbf.c` (v6.x) and the rate tables of
//! `net/sched/sch_generic.c` (`psched_ratecfg_precompute`) and
//! `include/net/sch_generic.h` (`psched_l2t_ns`); tc-tbf(8).
//!
//! Model in a nutshell: the bucket holds *time*, not bytes. `tokens` is how
//! many ns of transmission at `rate` the bucket has saved up, capped at
//! `buffer` = the transmission time of `burst` bytes. A packet of `len` bytes
//! costs `psched_l2t_ns(rate, len)` ns of tokens. At dequeue the head packet
//! leaves if `min(now - t_c, buffer) + tokens`, capped at `buffer`, minus its
//! cost is >= 0; then `t_c = now` and the remainder is kept. Otherwise the
//! qdisc waits `-toks` ns (the kernel's watchdog: `now + max(-toks, -ptoks)`).
//! An optional second bucket (`peakrate`, depth `mtu`) limits the rate at
//! which the burst itself drains. Packets wait in a byte-limited FIFO (the
//! kernel's default child, a bfifo of `limit` bytes). A packet larger than
//! the bucket (`max_size` = `burst`, or the peak bucket's size) can never
//! leave and is dropped at enqueue like `tbf_enqueue` does (no GSO here).
//!
//! States: none beyond the two buckets (`tokens`, `ptokens`, `t_c`).
//!
//! Constants: rates are converted to bytes/s (`rate_bps / 8`, tc does the
//! same) and then to the kernel's reciprocal `mult`/`shift` pair, so that
//! `l2t` rounds exactly like the kernel (down, to the ns). The bucket starts
//! full at time 0 (the kernel: full at `tbf_init`).
//!
//! [`Shaper`] is the bucket alone, for a link that puts a shaper *after* any
//! qdisc (scenario key `shaper = { rate, burst }`): ask [`Shaper::can_send`],
//! and [`Shaper::wait_until`] when it says no; commit with [`Shaper::on_send`].

use super::params::{U32_MAX, U64_MAX};
use super::{DropReason, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::time::{Nanos, NS_PER_SEC};
use std::collections::VecDeque;

/// Linux `struct psched_ratecfg`: a rate as a reciprocal (`mult`, `shift`) so
/// that the time to send `len` bytes is `(len * mult) >> shift` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateCfg {
    pub rate_bytes_ps: u64,
    mult: u32,
    shift: u8,
    /// Bytes added to every packet before conversion (tc `overhead`).
    pub overhead: i32,
    /// Minimum packet size charged (tc `mpu`).
    pub mpu: u32,
}

impl RateCfg {
    /// `psched_ratecfg_precompute` for `rate_bps` bit/s.
    pub fn new(rate_bps: u64) -> Self {
        let rate = rate_bps / 8;
        let (mut mult, mut shift) = (1u32, 0u8);
        if rate > 0 {
            let mut factor: u64 = NS_PER_SEC;
            loop {
                // The kernel stores the quotient in a u32: keep its truncation.
                mult = (factor / rate) as u32;
                if mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
                    break;
                }
                factor <<= 1;
                shift += 1;
            }
        }
        RateCfg { rate_bytes_ps: rate, mult, shift, overhead: 0, mpu: 0 }
    }

    /// `psched_l2t_ns`: ns to send `len` bytes (Ethernet link layer).
    #[inline]
    pub fn l2t_ns(&self, len: u32) -> u64 {
        let mut len = (len as i64 + self.overhead as i64).max(0) as u64;
        if len < self.mpu as u64 {
            len = self.mpu as u64;
        }
        ((len as u128 * self.mult as u128) >> self.shift) as u64
    }

    /// `psched_ns_t2l`: bytes that `ns` of tokens pay for.
    pub fn ns_t2l(&self, ns: u64) -> u64 {
        let len = (ns as u128 * self.rate_bytes_ps as u128) / NS_PER_SEC as u128;
        let mut len = len as i64 - self.overhead as i64;
        if len < 0 {
            len = 0;
        }
        len as u64
    }
}

/// The token bucket(s) of TBF, usable alone by a link.
#[derive(Debug, Clone)]
pub struct Shaper {
    rate: RateCfg,
    peak: Option<RateCfg>,
    /// Bucket depth in ns of `rate` (`q->buffer`).
    buffer: i64,
    /// Peak bucket depth in ns of `peak` (`q->mtu`).
    mtu: i64,
    tokens: i64,
    ptokens: i64,
    /// Time of the last departure (`q->t_c`).
    t_c: Nanos,
    /// Largest packet that can ever pass (`q->max_size`), bytes.
    max_size: u64,
}

impl Shaper {
    /// A bucket of `burst` bytes filled at `rate_bps`, optionally followed by
    /// a peak-rate bucket of `mtu` bytes at `peak_bps` (tc `peakrate`, `mtu`).
    pub fn new(rate_bps: u64, burst: u64, peak: Option<(u64, u64)>) -> Result<Self, String> {
        if rate_bps < 8 {
            return Err(format!("rate: expected at least 8 bit/s, got {rate_bps}"));
        }
        if burst == 0 || burst > u32::MAX as u64 {
            return Err(format!("burst: expected 1 B to 4 GB, got {burst} B"));
        }
        let rate = RateCfg::new(rate_bps);
        // tbf_change with TCA_TBF_BURST: max_size = burst, buffer = l2t(burst).
        let buffer = rate.l2t_ns(burst as u32) as i64;
        let mut max_size = burst;
        let (peak, mtu) = match peak {
            None => (None, 0),
            Some((peak_bps, mtu_bytes)) => {
                let p = RateCfg::new(peak_bps);
                if p.rate_bytes_ps <= rate.rate_bytes_ps {
                    return Err(format!(
                        "peakrate: must be above rate ({peak_bps} bit/s <= {rate_bps} bit/s), as sch_tbf requires"
                    ));
                }
                if mtu_bytes == 0 || mtu_bytes > u32::MAX as u64 {
                    return Err("mtu: required (bytes, > 0) when peakrate is set".to_string());
                }
                max_size = max_size.min(mtu_bytes);
                (Some(p), p.l2t_ns(mtu_bytes as u32) as i64)
            }
        };
        Ok(Shaper { rate, peak, buffer, mtu, tokens: buffer, ptokens: mtu, t_c: 0, max_size })
    }

    /// Largest packet the bucket can ever pass, in bytes.
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    /// The bucket levels a departure of `len` bytes at `now` would leave
    /// (negative: short by that many ns).
    #[inline]
    fn tokens_after(&self, now: Nanos, len: u32) -> (i64, i64) {
        let elapsed = now.saturating_sub(self.t_c).min(i64::MAX as u64) as i64;
        let mut toks = elapsed.min(self.buffer);
        let mut ptoks = 0;
        if let Some(p) = &self.peak {
            ptoks = (toks + self.ptokens).min(self.mtu);
            ptoks -= p.l2t_ns(len) as i64;
        }
        toks = (toks + self.tokens).min(self.buffer);
        toks -= self.rate.l2t_ns(len) as i64;
        (toks, ptoks)
    }

    /// May a packet of `len` bytes leave at `now`?
    #[inline]
    pub fn can_send(&self, now: Nanos, len: u32) -> bool {
        let (t, p) = self.tokens_after(now, len);
        (t | p) >= 0
    }

    /// Earliest time a packet of `len` bytes may leave (`now` if it may now):
    /// the kernel's watchdog time `now + max(-toks, -ptoks)`.
    pub fn wait_until(&self, now: Nanos, len: u32) -> Nanos {
        let (t, p) = self.tokens_after(now, len);
        if (t | p) >= 0 {
            return now;
        }
        now + (-t).max(-p).max(0) as u64
    }

    /// Take the tokens of a departure of `len` bytes at `now`. Returns false
    /// (and changes nothing) if the bucket does not allow it.
    pub fn on_send(&mut self, now: Nanos, len: u32) -> bool {
        let (t, p) = self.tokens_after(now, len);
        if (t | p) < 0 {
            return false;
        }
        self.t_c = now;
        self.tokens = t;
        self.ptokens = p;
        true
    }
}

/// sch_tbf: a [`Shaper`] in front of a byte-limited FIFO.
#[derive(Debug)]
pub struct Tbf<T> {
    shaper: Shaper,
    /// bfifo limit in bytes (tc `limit`).
    limit: u64,
    q: VecDeque<Packet<T>>,
    bytes: u64,
}

impl<T> Tbf<T> {
    pub fn new(shaper: Shaper, limit_bytes: u64) -> Self {
        Tbf { shaper, limit: limit_bytes, q: VecDeque::new(), bytes: 0 }
    }
}

/// Default bucket when the scenario gives none: one rate/HZ of bytes (the
/// tc-tbf(8) minimum, HZ = 250 here) and never less than one 1514-byte frame.
pub fn default_burst(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 250).max(1514)
}

impl<T> Qdisc<T> for Tbf<T> {
    fn name(&self) -> &'static str {
        "tbf"
    }

    fn enqueue(&mut self, pkt: Packet<T>, _now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) {
        let len = pkt.meta.len as u64;
        if len > self.shaper.max_size {
            // Can never gather enough tokens: tbf_enqueue drops it.
            ev.drop(pkt, DropReason::Overlimit);
            return;
        }
        if self.bytes + len > self.limit {
            ev.drop(pkt, DropReason::QueueFull);
            return;
        }
        self.bytes += len;
        self.q.push_back(pkt);
    }

    fn dequeue(&mut self, now: Nanos, _rng: &mut Rng, _ev: &mut Events<T>) -> Option<Packet<T>> {
        let len = self.q.front()?.meta.len;
        if !self.shaper.on_send(now, len) {
            return None;
        }
        let p = self.q.pop_front()?;
        self.bytes -= len as u64;
        Some(p)
    }

    fn next_wakeup(&self, now: Nanos) -> Option<Nanos> {
        let head = self.q.front()?;
        Some(self.shaper.wait_until(now, head.meta.len))
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }

    fn backlog_pkts(&self) -> usize {
        self.q.len()
    }
}

/// Scenario doc of `tbf` (the [`super::QdiscKind`] registry).
pub const DOC: &str = "token-bucket shaper (Linux sch_tbf): packets wait in a byte FIFO and leave at `rate` after a `burst`";

/// `qdisc_params` of `tbf`. tc-tbf(8) has no defaults for rate, burst and
/// limit (each is required); here 0 derives each from the link (see the docs).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::rate("rate", 0.0, 0.0, U64_MAX,
        "tc `rate`: the shaped rate in bit/s; 0 = the link's rate"),
    ParamSpec::size("burst", 0.0, 0.0, U32_MAX,
        "tc `burst`: bucket depth in bytes; 0 = max(1514 B, rate/HZ with HZ=250), tc-tbf(8)'s minimum"),
    ParamSpec::size("limit", 0.0, 0.0, U64_MAX,
        "tc `limit`: bytes that may wait for tokens (the child bfifo); 0 = the direction's `buffer` (packets count 1500 B each)"),
    ParamSpec::rate("peakrate", 0.0, 0.0, U64_MAX,
        "tc `peakrate`: optional second bucket limiting how fast the burst drains, bit/s; 0 = none; must exceed `rate`"),
    ParamSpec::size("mtu", 0.0, 0.0, U32_MAX,
        "tc `mtu`/`minburst`: depth of the peakrate bucket in bytes; required with `peakrate` (1514 is typical)"),
];

/// Bytes a scenario `buffer` stands for when a qdisc needs a byte limit.
pub(crate) fn limit_bytes(cfg: &QdiscConfig) -> u64 {
    match (cfg.limit.bytes, cfg.limit.pkts) {
        (Some(b), Some(p)) => b.min(p.saturating_mul(1500)),
        (Some(b), None) => b,
        (None, Some(p)) => p.saturating_mul(1500),
        (None, None) => u64::MAX,
    }
}

/// The `rate` (0 = the link's) in bit/s and `burst` (0 = [`default_burst`])
/// in bytes of `who`'s token bucket (tbf, the policer).
pub(crate) fn bucket_params(cfg: &QdiscConfig, p: &Params, who: &str) -> Result<(u64, u64), String> {
    let rate = match p.u64("rate") {
        0 => cfg.rate_bps,
        r => r,
    };
    if rate == 0 {
        return Err(format!("qdisc_params.rate: {who} needs a rate (the link has none)"));
    }
    let burst = match p.u64("burst") {
        0 => default_burst(rate),
        b => b,
    };
    Ok((rate, burst))
}

/// Build "tbf" from a scenario config, its parameters read through [`PARAMS`].
pub fn build<T: 'static>(cfg: &QdiscConfig, p: &Params) -> Result<Box<dyn Qdisc<T>>, String> {
    let (rate, burst) = bucket_params(cfg, p, "tbf")?;
    let limit = match p.u64("limit") {
        0 => limit_bytes(cfg),
        l => l,
    };
    let peak = match p.u64("peakrate") {
        0 => None,
        peak_bps => Some((peak_bps, p.u64("mtu"))),
    };
    let shaper = Shaper::new(rate, burst, peak).map_err(|e| format!("qdisc_params.{e}"))?;
    Ok(Box::new(Tbf::new(shaper, limit)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::PacketMeta;

    fn pkt(len: u32, id: u32) -> Packet<u32> {
        Packet { meta: PacketMeta { len, ..Default::default() }, data: id }
    }

    /// Drive the qdisc like a link with an infinitely fast wire: dequeue
    /// whenever allowed, sleep until `next_wakeup` otherwise.
    fn departures(q: &mut Tbf<u32>, start: Nanos) -> Vec<(u32, Nanos)> {
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let mut now = start;
        let mut out = Vec::new();
        while q.backlog_pkts() > 0 {
            match q.dequeue(now, &mut rng, &mut ev) {
                Some(p) => out.push((p.data, now)),
                None => now = q.next_wakeup(now).unwrap(),
            }
        }
        out
    }

    #[test]
    fn the_rate_table_matches_the_kernel_reciprocal() {
        // 10 Mbit/s = 1.25e6 B/s: 800 ns per byte exactly.
        let r = RateCfg::new(10_000_000);
        assert_eq!(r.rate_bytes_ps, 1_250_000);
        assert_eq!(r.l2t_ns(1500), 1_200_000);
        assert_eq!(r.l2t_ns(1), 800);
        // 3 Mbit/s = 375000 B/s: 2666.67 ns per byte, rounded down like the kernel.
        let r = RateCfg::new(3_000_000);
        assert_eq!(r.l2t_ns(1500), 3_999_999);
        assert_eq!(r.ns_t2l(4_000_000), 1500);
    }

    #[test]
    fn a_burst_of_burst_bytes_passes_at_once_then_packets_leave_at_exactly_rate() {
        // 10 Mbit/s, burst 15000 B = 10 packets of 1500 B.
        let mut q = Tbf::new(Shaper::new(10_000_000, 15_000, None).unwrap(), 1_000_000);
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let t0 = 1_000_000_000; // the bucket has long been full
        for i in 0..14 {
            q.enqueue(pkt(1500, i), t0, &mut rng, &mut ev);
        }
        let d = departures(&mut q, t0);
        assert_eq!(d.len(), 14);
        for (i, &(id, t)) in d.iter().enumerate().take(10) {
            assert_eq!((id, t), (i as u32, t0), "packet {i} is in the burst");
        }
        // Then one 1500-byte packet per 1.2 ms.
        for (k, &(id, t)) in d.iter().enumerate().skip(10) {
            assert_eq!(id, k as u32);
            assert_eq!(t, t0 + (k as u64 - 9) * 1_200_000);
        }
        assert!(ev.drops.is_empty());
    }

    #[test]
    fn a_peakrate_spreads_the_burst_at_the_peak_rate() {
        // rate 10 Mbit/s, burst 15000 B, peak 100 Mbit/s with a one-packet peak bucket.
        let s = Shaper::new(10_000_000, 15_000, Some((100_000_000, 1500))).unwrap();
        let mut q = Tbf::new(s, 1_000_000);
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        let t0 = 1_000_000_000;
        for i in 0..3 {
            q.enqueue(pkt(1500, i), t0, &mut rng, &mut ev);
        }
        let d = departures(&mut q, t0);
        // 1500 B at 100 Mbit/s = 120 us apart.
        assert_eq!(d, vec![(0, t0), (1, t0 + 120_000), (2, t0 + 240_000)]);
    }

    #[test]
    fn the_byte_limit_and_the_bucket_size_refuse_packets() {
        let mut q = Tbf::new(Shaper::new(10_000_000, 2000, None).unwrap(), 3000);
        let mut rng = crate::rng::stream(1, 0);
        let mut ev = Events::default();
        q.enqueue(pkt(2001, 0), 0, &mut rng, &mut ev); // larger than the bucket
        q.enqueue(pkt(1500, 1), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1500, 2), 0, &mut rng, &mut ev);
        q.enqueue(pkt(1, 3), 0, &mut rng, &mut ev); // over the 3000-byte limit
        let got: Vec<_> = ev.drops.iter().map(|d| (d.pkt.data, d.reason)).collect();
        assert_eq!(got, vec![(0, DropReason::Overlimit), (3, DropReason::QueueFull)]);
        assert_eq!(q.backlog_bytes(), 3000);
    }

    #[test]
    fn peakrate_not_above_rate_is_refused_with_the_key_named() {
        let e = Shaper::new(10_000_000, 15_000, Some((10_000_000, 1500))).unwrap_err();
        assert!(e.starts_with("peakrate:"), "{e}");
        let e = Shaper::new(10_000_000, 15_000, Some((20_000_000, 0))).unwrap_err();
        assert!(e.starts_with("mtu:"), "{e}");
    }
}
