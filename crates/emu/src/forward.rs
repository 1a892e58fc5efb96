//! The real-time loop of one direction: read packets from the ingress TUN
//! (a GSO super-packet cut into its wire segments, crate::gso), feed them to
//! the [`Link`] model with the monotonic clock, write the due
//! ones to the egress TUN, and measure how late each write is.
//!
//! Waiting: `ppoll` on the ingress descriptor until the next event minus an
//! early-wake margin ([`Timing::margin_ns`]), then a short spin to the exact
//! time (an hrtimer wake-up on this VM is 10-30 µs late; the spin absorbs
//! it). Timer slack is set to 1 ns; optionally the thread is SCHED_FIFO and
//! `/dev/cpu_dma_latency` is held at 0 (done by the caller).
//!
//! Lateness of a packet = actual write time − scheduled due time. It is what
//! the receiver sees beyond the configured delay; p50/p99/max go to the
//! result and a p99 above 1 ms flags the run. Stalls of the thread (no clock
//! observation for ≥ 1 ms beyond a requested sleep) are recorded with the
//! backlog they left (crate::stall); the thread never sleeps longer than
//! [`HEARTBEAT_NS`], so an idle direction's stalls are seen too.

use crate::gso::{self, Segmenter};
use crate::link::{Link, LinkConfig, Sample};
use crate::stall::{Episode, StallWatch, HEARTBEAT_NS};
use bloatlab_core::qdisc::DropReason;
use bloatlab_core::qdisc::Stats;
use bloatlab_schema::pcap::Pcap;
use crate::sys;
use bloatlab_core::time::Nanos;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Packets read per loop turn before the link is serviced again.
const READ_BATCH: usize = 64;
/// Largest frame a TUN hands us: its virtio-net header and a 64 KiB GSO
/// super-packet (an IP packet's length field caps it at 65 535 bytes).
pub const MAX_FRAME: usize = gso::HDR_LEN + 65536;

#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Wake up this much before an event, then spin (ns).
    pub margin_ns: u64,
    /// SCHED_FIFO priority for the loop thread (0 = normal scheduling).
    pub fifo_prio: i32,
}

impl Default for Timing {
    fn default() -> Self {
        Timing { margin_ns: 50_000, fifo_prio: 0 }
    }
}

/// A histogram of lateness in whole microseconds (exact up to 1 s, then capped
/// there; the maximum is kept exactly).
#[derive(Debug, Clone)]
pub struct LateHist {
    counts: Vec<u64>,
    pub n: u64,
    pub max_ns: u64,
    pub over_1ms: u64,
}

const HIST_US: usize = 1_000_000;

impl Default for LateHist {
    fn default() -> Self {
        LateHist { counts: vec![0; HIST_US + 1], n: 0, max_ns: 0, over_1ms: 0 }
    }
}

impl LateHist {
    #[inline]
    pub fn record(&mut self, late_ns: u64) {
        let us = ((late_ns / 1000) as usize).min(HIST_US);
        self.counts[us] += 1;
        self.n += 1;
        self.max_ns = self.max_ns.max(late_ns);
        if late_ns > 1_000_000 {
            self.over_1ms += 1;
        }
    }

    pub fn merge(&mut self, o: &LateHist) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.n += o.n;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.over_1ms += o.over_1ms;
    }

    /// Percentile `q` (0-100) in µs (the bin's lower edge: resolution 1 µs).
    pub fn percentile_us(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let rank = ((q / 100.0) * (self.n - 1) as f64).round() as u64;
        let mut seen = 0;
        for (us, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                return us as f64;
            }
        }
        HIST_US as f64
    }
}

/// What a direction reports when it stops.
pub struct DirResult {
    pub stats: Stats,
    pub tx_bytes: u64,
    pub tx_pkts: u64,
    pub busy_ns: u64,
    pub qdelay_ms: Vec<f32>,
    pub samples: Vec<Sample>,
    pub late: LateHist,
    pub write_errors: u64,
    /// Wire packets read (GSO super-packets counted by their segments).
    pub read_pkts: u64,
    /// Reads from the TUN, and how many of them were GSO super-packets.
    pub read_frames: u64,
    pub super_pkts: u64,
    /// Wire packets written as part of a coalesced GSO write.
    pub coalesced_pkts: u64,
    /// The thread's stalls within the scenario (times from its t = 0), and
    /// how many were not kept (crate::stall::MAX_EPISODES).
    pub stalls: Vec<Episode>,
    pub stalls_lost: u64,
}

pub struct Forwarder {
    pub link: LinkConfig,
    pub ingress: RawFd,
    pub egress: RawFd,
    /// Monotonic-clock time of the run's t = 0.
    pub origin: u64,
    pub stop: Arc<AtomicBool>,
    pub pcap: Option<Pcap>,
    pub timing: Timing,
}

impl Forwarder {
    /// Run until `stop` is set. The link is built here: a qdisc stays on its thread.
    pub fn run(self) -> Result<DirResult, String> {
        let link = Link::new(self.link.clone())?;
        let watch = StallWatch::new(sys::mono_ns().saturating_sub(self.origin));
        let measure = (self.link.measure_from, self.link.measure_until);
        let mut state = Running { link, ingress: self.ingress, egress: self.egress, origin: self.origin,
            stop: self.stop, pcap: self.pcap, timing: self.timing, watch, measure };
        Ok(state.run())
    }
}

struct Running {
    link: Link,
    ingress: RawFd,
    egress: RawFd,
    origin: u64,
    stop: Arc<AtomicBool>,
    pcap: Option<Pcap>,
    timing: Timing,
    watch: StallWatch,
    /// the scenario's span on the link's clock (`LinkConfig::measure_from`, `measure_until`)
    measure: (Nanos, Nanos),
}

/// The queue's drops so far, random loss aside (a stall's burst cannot cause those).
fn queue_drops(link: &Link) -> u64 {
    link.stats.drops.iter().sum::<u64>() - link.stats.drops[DropReason::RandomLoss as usize]
}

impl Running {
    fn run(&mut self) -> DirResult {
        sys::set_timer_slack(1);
        if self.timing.fifo_prio > 0 {
            sys::set_fifo(self.timing.fifo_prio);
        }
        let mut late = LateHist::default();
        let mut write_errors = 0u64;
        let mut read_pkts = 0u64;
        let mut read_frames = 0u64;
        let mut frame = vec![0u8; MAX_FRAME];
        let mut seg = Segmenter::default();
        let coalesce = crate::ns::coalesce();
        let mut due: Vec<(Nanos, Vec<u8>)> = Vec::new();
        let mut sup: Vec<u8> = Vec::new();
        let mut coalesced = 0u64;
        let origin = self.origin;
        let clock = || sys::mono_ns().saturating_sub(origin);
        while !self.stop.load(Ordering::Relaxed) {
            let now = clock();
            self.watch.seen(now);
            self.link.service(now);
            let (pkts0, drops0) = (read_pkts, queue_drops(&self.link));
            let mut drained = false;
            for _ in 0..READ_BATCH {
                match sys::read_pkt(self.ingress, &mut frame) {
                    Ok(n) if n > 0 => {
                        read_frames += 1;
                        let (link, pcap) = (&mut self.link, &mut self.pcap);
                        seg.each(&frame[..n], |p| {
                            read_pkts += 1;
                            if let Some(pc) = pcap.as_mut() {
                                let _ = pc.packet(now, p);
                            }
                            let mut b = link.buffer(p.len());
                            b.extend_from_slice(p);
                            link.arrive(now, b);
                        });
                    }
                    _ => {
                        drained = true;
                        break;
                    }
                }
            }
            self.watch.read(read_pkts - pkts0, queue_drops(&self.link) - drops0, drained);
            let mut t = clock();
            self.watch.seen(t);
            if coalesce {
                while due.len() < READ_BATCH {
                    match self.link.pop_due(t) {
                        Some(d) => due.push(d),
                        None => break,
                    }
                }
                let refs: Vec<&[u8]> = due.iter().map(|(_, b)| b.as_slice()).collect();
                let mut i = 0;
                while i < refs.len() {
                    let n = gso::run_length(&refs[i..]);
                    let ok = if n >= 2 {
                        let h = gso::coalesce(&refs[i..i + n], &mut sup);
                        coalesced += n as u64;
                        sys::write_frame(self.egress, &h.bytes(), &sup)
                    } else {
                        sys::write_pkt(self.egress, refs[i])
                    };
                    if !ok {
                        write_errors += n as u64;
                    }
                    t = clock();
                    self.watch.seen(t);
                    for (at, _) in &due[i..i + n] {
                        late.record(t.saturating_sub(*at));
                    }
                    i += n;
                }
                drop(refs);
                for (_, b) in due.drain(..) {
                    self.link.recycle(b);
                }
            } else {
                while let Some((at, b)) = self.link.pop_due(t) {
                    if !sys::write_pkt(self.egress, &b) {
                        write_errors += 1;
                    }
                    t = clock();
                    self.watch.seen(t);
                    late.record(t.saturating_sub(at));
                    self.link.recycle(b);
                }
            }
            self.wait_until(self.link.next_event());
        }
        if let Some(p) = self.pcap.as_mut() {
            let _ = p.flush();
        }
        let now = clock();
        self.link.service(now);
        let l = &mut self.link;
        // Only the scenario's stalls, timed from its t = 0 (the link's clock starts `measure_from` earlier).
        let (from, until) = self.measure;
        let stalls = std::mem::take(&mut self.watch.episodes)
            .into_iter()
            .filter(|e| e.end_ns() > from && e.start_ns < until)
            .map(|e| Episode { start_ns: e.start_ns.saturating_sub(from), ..e })
            .collect();
        DirResult {
            stats: l.stats.clone(),
            tx_bytes: l.tx_bytes,
            tx_pkts: l.tx_pkts,
            busy_ns: l.busy_ns,
            qdelay_ms: std::mem::take(&mut l.qdelay_ms),
            samples: std::mem::take(&mut l.samples),
            late,
            write_errors,
            read_pkts,
            read_frames,
            super_pkts: seg.super_pkts,
            coalesced_pkts: coalesced,
            stalls,
            stalls_lost: self.watch.lost,
        }
    }

    /// Sleep until `at` (run time, ns) or until a packet arrives.
    fn wait_until(&mut self, at: Nanos) {
        let origin = self.origin;
        let now = sys::mono_ns().saturating_sub(origin);
        self.watch.seen(now);
        if at <= now {
            return;
        }
        // Never sleep long: a stall of an idle thread is seen (crate::stall), and the stop flag is checked.
        let left = (at - now).min(HEARTBEAT_NS);
        if left > self.timing.margin_ns {
            self.watch.sleeping_until(now + left - self.timing.margin_ns);
            if sys::wait_readable(self.ingress, left - self.timing.margin_ns) {
                return;
            }
            let now = sys::mono_ns().saturating_sub(origin);
            self.watch.seen(now);
            if now + self.timing.margin_ns < at {
                return; // woke early (the heartbeat): the caller comes back
            }
        }
        // Spin the rest, still watching for arrivals.
        loop {
            let now = sys::mono_ns().saturating_sub(origin);
            self.watch.seen(now);
            if now >= at || sys::wait_readable(self.ingress, 0) {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

/// The samples of a direction as run-relative seconds.
pub fn sample_rows(s: &[Sample]) -> impl Iterator<Item = (f64, u64, f64)> + '_ {
    s.iter().map(|s| (s.t as f64 / 1e9, s.queue_bytes, s.qdelay_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn lateness_percentiles_come_from_microsecond_bins() {
        let mut h = LateHist::default();
        for us in 1..=100u64 {
            h.record(us * 1000 + 500);
        }
        assert_eq!(h.percentile_us(50.0), 51.0);
        assert_eq!(h.percentile_us(99.0), 99.0);
        assert_eq!(h.max_ns, 100_500);
        assert_eq!(h.over_1ms, 0);
        h.record(2_000_000);
        assert_eq!(h.over_1ms, 1);
    }
}
