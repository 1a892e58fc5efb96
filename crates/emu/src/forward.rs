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
//! Spinning has a budget ([`Timing::spin_pct`], [`SpinBudget`]): a thread may
//! spin for that share of its time. Over it, the loop sleeps once to the next
//! event, or to the end of a batch window ([`Timing::batch_ns`]) after its last
//! wake-up if that is later, and writes everything due then. Why (2026-11-23,
//! 1 Gbit/s kernel CUBIC, 2-core VM, perf): departures 12 µs apart are always
//! within the 50 µs margin, so the link threads spun without end (ppoll(0) was
//! 79 % of link-down's samples, link-down 95 % and link-up 62-77 % of a CPU);
//! the receiving generator waited runnable 65-80 % of its time, and a SCHED_FIFO
//! thread using over 95 % of a CPU is RT-throttled (sched_rt_runtime_us): perf
//! sched showed link-down runnable but off its CPU for 36 ms while that CPU sat
//! idle, and a 30-50 ms stall turns into one burst of arrivals and a FIFO
//! overflow. Sleeping per departure instead is no cheaper here: one hrtimer
//! sleep in `ppoll` costs 13-20 µs of CPU and wakes 14-20 µs late on this VM
//! (measured with a C loop, SCHED_FIFO, timer slack 1 ns), so link-down still
//! used 86-94 % of a CPU with a margin of 0. Budget and window keep the spin
//! where it buys precision (isolated packets, as an idle link's probes) and
//! batch the dense stretches, where a few µs of lateness are a small share of
//! a packet's time on the wire anyway.
//!
//! Lateness of a packet = actual write time − scheduled due time. It is what
//! the receiver sees beyond the configured delay; p50/p99/max go to the
//! result and a p99 above 1 ms flags the run. Stalls of the thread (no clock
//! observation for ≥ 1 ms beyond a requested sleep) are recorded with the
//! backlog they left (crate::stall); the thread never sleeps longer than
//! [`HEARTBEAT_NS`], so an idle direction's stalls are seen too.

use crate::gso::{self, Segmenter};
use crate::link::{Link, LinkConfig, Sample};
use crate::scenario::Resolved;
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
    /// Share of its time (%) a loop thread may spin; 100 = no limit.
    pub spin_pct: u64,
    /// Over the spin budget, a wake-up comes at most this often (ns): the
    /// departures due within the window after the last wake-up wait for its end.
    pub batch_ns: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing { margin_ns: 50_000, fifo_prio: 0, spin_pct: SPIN_PCT, batch_ns: BATCH_NS }
    }
}

/// How many real-time link threads carry the path's two directions (`--threads`).
///
/// One thread (`forward::run_together`) reads the acks a data write causes on
/// its next turn instead of waking a second thread, so an idle or lightly loaded
/// link keeps better time (probe delay error at 1 Gbit/s, idle, quiet: p50
/// 15.5-35.2 µs vs 30.0-60.5 µs with two threads over nine and six rounds on
/// two days, BENCHMARKS.md, docs/emulator.md "Threads"); but it does all
/// the TUN reads and writes, and the receiving kernel's TCP runs inside its
/// writes, so it runs out where two do not. `Auto` takes one thread while the
/// data the scenario can put on the path fits ([`ONE_THREAD_MAX_BPS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Threads {
    Auto,
    One,
    Two,
}

/// Up to this many bit/s of data in one direction one link thread keeps up
/// with the kernel's TCP on this 2-core VM ([`Threads::one`]).
/// Measured 2026-11-24 (docs/emulator.md "Threads"; 10 ms, 1 BDP, 5 s, three
/// A/B pairs, load 1.6-2.2): one download at 1 Gbit/s, one thread CUBIC
/// 938-949 / BBR 948 Mbit/s against two threads' 947-949 / 947-948, lateness
/// p99 55-85 vs 63-95 µs; at 1.5 and 2 Gbit/s one thread fell behind (1 217 vs
/// 1 316, 1 774 vs 1 881 Mbit/s, one pair each).
pub const ONE_THREAD_MAX_BPS: u64 = 1_000_000_000;

impl Threads {
    /// `BLOATLAB_EMU_THREADS` (auto, one, two; unset: auto).
    pub fn from_env() -> Result<Threads, String> {
        use clap::ValueEnum;
        match std::env::var("BLOATLAB_EMU_THREADS") {
            Err(_) => Ok(Threads::Auto),
            Ok(v) => Threads::from_str(&v, true).map_err(|_| format!("BLOATLAB_EMU_THREADS: expected auto, one or two, got {v:?}")),
        }
    }

    /// One thread for both directions? `Auto`: when data flows one way only
    /// (acks and probes the other) at no more than [`ONE_THREAD_MAX_BPS`].
    /// With data both ways the kernels' TCP on both sides runs inside the one
    /// thread's writes, and its lateness grows (CUBIC each way, 250 Mbit/s:
    /// p99 146-177 vs 94-106 µs with two threads; 500 Mbit/s: 295-366 vs
    /// 199-215), so two threads. A `shell`'s command may send either way: two.
    pub fn one(self, sc: &Resolved, shell: bool) -> bool {
        match self {
            Threads::One => true,
            Threads::Two => false,
            Threads::Auto => {
                let loaded = data_bounds_bps(sc, shell);
                loaded.len() <= 1 && loaded.iter().all(|&b| b <= ONE_THREAD_MAX_BPS)
            }
        }
    }
}

/// The most data bit/s each direction that carries a flow's data (every
/// direction in a `shell`) can move: its rate (a trace's mean rate; no
/// bottleneck: unbounded), or less if all its flows are application-limited
/// (the sum of their `rate`s).
pub fn data_bounds_bps(sc: &Resolved, shell: bool) -> Vec<u64> {
    use crate::link::Service;
    use crate::scenario::{Direction, EmuScenario};
    [(Direction::Down, "down"), (Direction::Up, "up")]
        .into_iter()
        .filter(|(d, _)| shell || sc.flows.iter().any(|f| f.direction == *d))
        .map(|(d, name)| {
            // A link the scenario cannot build is refused by Links::start, with its key.
            let link = match sc.link_config(name).map(|c| c.service) {
                Ok(Service::Rate(r)) => r,
                Ok(Service::Trace(t)) => t.mean_rate_bps(),
                Ok(Service::Unlimited) | Err(_) => u64::MAX,
            };
            let apps = sc.flows.iter().filter(|f| f.direction == d)
                .map(|f| f.app_rate_bps.unwrap_or(u64::MAX))
                .fold(0u64, u64::saturating_add);
            if shell { link } else { link.min(apps) }
        })
        .collect()
}

/// Default spin budget: 10 % of a thread's time. An idle link with a probe a
/// millisecond stays within it (each link thread used 6.6-6.8 % of a CPU in
/// all, with and without the budget; lateness p50 / p99 4 / 14-16 µs as
/// before, 1 Gbit/s, 2026-11-23); a busy one runs out.
pub const SPIN_PCT: u64 = 10;
/// Default batch window: 30 µs, from A/B runs at 1 Gbit/s (kernel CUBIC, 8 s,
/// load 1.1-4.6): a window of 0 left link-down at 86 % of a CPU (a wake-up per
/// one or two departures), 30 µs at 54 %, 100 µs at 40 %; goodput 885, 910-955 and
/// 944 Mbit/s; lateness p50 11, 18-20 and 46 µs.
pub const BATCH_NS: u64 = 30_000;
/// The most spin credit saved up (ns): after a quiet spell, 1 ms of exact timing.
const SPIN_CREDIT_CAP_NS: u64 = 1_000_000;

/// The spin budget of a loop thread: credit accrues at `pct` % of the time
/// that passes, up to [`SPIN_CREDIT_CAP_NS`], and a spin spends it.
#[derive(Debug, Clone)]
pub struct SpinBudget {
    credit_ns: u64,
    last: Nanos,
    pct: u64,
    /// When the loop last woke up (start of the current batch window).
    pub woke: Nanos,
}

impl SpinBudget {
    pub fn new(pct: u64) -> SpinBudget {
        SpinBudget { credit_ns: SPIN_CREDIT_CAP_NS, last: 0, pct, woke: 0 }
    }

    pub fn refill(&mut self, now: Nanos) {
        let dt = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        self.credit_ns = self.credit_ns.saturating_add(dt.saturating_mul(self.pct) / 100).min(SPIN_CREDIT_CAP_NS);
    }

    /// May the thread spin `ns` now?
    pub fn affords(&self, ns: u64) -> bool {
        self.pct >= 100 || self.credit_ns >= ns
    }

    pub fn spent(&mut self, ns: u64) {
        self.credit_ns = self.credit_ns.saturating_sub(ns);
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
    /// An autorate element's shaper rate changes (times from the scenario's t = 0).
    pub shaper_log: Option<Vec<(Nanos, u64)>>,
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
        let mut r = run_together(vec![self])?;
        Ok(r.pop().expect("one direction"))
    }
}

/// Run several directions (both of a path) in one loop on the calling thread,
/// until the first one's `stop` is set; their results in order. The first
/// one's origin, stop flag and timing hold for all.
///
/// Why one thread can do both (`--threads one`): a write into a TUN runs the
/// receiving kernel's TCP inside the write call, so the acks a data write
/// causes (and the data an ack write releases) are waiting on the other
/// direction's TUN when the call returns; one loop reads them on its next
/// turn, where a second thread would have been woken for each (a wake-up and a
/// context switch; a timed sleep and wake-up costs 13-20 µs of CPU on this VM)
/// and stamped them only then.
/// Measured 2026-11-23 (kernel CUBIC, 8 s, load 3-6 from other jobs): at
/// 1 Gbit/s one thread used 69 % of a CPU where two used 57 % + 54 %, with
/// lateness p50 12 vs 18 µs and the same goodput (951-953 vs 954-955 Mbit/s);
/// beside a CPU-bound job 886 / 931 vs 910 / 952 Mbit/s; at 10 Gbit/s the one
/// thread ran out (95 % of a CPU, lateness p99 77 ms, 8.4 vs 8.9 Gbit/s). On an
/// idle 1 Gbit/s link the probes' delay error fell to p50 14.5-17.5 µs from
/// 40-48 (docs/emulator.md). [`Threads::Auto`] takes it where the data
/// flows one way at up to 1 Gbit/s ([`ONE_THREAD_MAX_BPS`]).
pub fn run_together(fws: Vec<Forwarder>) -> Result<Vec<DirResult>, String> {
    let first = fws.first().ok_or("no direction to run")?;
    let (origin, stop, timing) = (first.origin, first.stop.clone(), first.timing);
    let mut dirs = Vec::with_capacity(fws.len());
    for f in fws {
        let measure = (f.link.measure_from, f.link.measure_until);
        let watch = StallWatch::new(sys::mono_ns().saturating_sub(origin));
        dirs.push(Dir::new(Link::new(f.link)?, f.ingress, f.egress, f.pcap, watch, measure));
    }
    let fds: Vec<RawFd> = dirs.iter().map(|d| d.ingress).collect();
    sys::set_timer_slack(1);
    if timing.fifo_prio > 0 {
        sys::set_fifo(timing.fifo_prio);
    }
    let mut frame = vec![0u8; MAX_FRAME];
    let coalesce = crate::ns::coalesce();
    let mut spin = SpinBudget::new(timing.spin_pct);
    let clock = || sys::mono_ns().saturating_sub(origin);
    while !stop.load(Ordering::Relaxed) {
        let now = clock();
        spin.woke = now;
        for d in dirs.iter_mut() {
            d.watch.seen(now);
        }
        for d in dirs.iter_mut() {
            d.link.service(now);
            d.read(now, &mut frame);
        }
        for d in dirs.iter_mut() {
            d.write_due(coalesce, &clock);
        }
        let next = dirs.iter().map(|d| d.link.next_event()).min().unwrap_or(Nanos::MAX);
        let slept_until = wait_until(&fds, origin, &timing, next, &mut spin);
        for d in dirs.iter_mut() {
            d.watch.sleeping_until(slept_until);
        }
    }
    let now = clock();
    Ok(dirs.into_iter().map(|d| d.finish(now)).collect())
}

/// One direction's state in the loop: its link, descriptors and counters.
struct Dir {
    link: Link,
    ingress: RawFd,
    egress: RawFd,
    pcap: Option<Pcap>,
    seg: Segmenter,
    late: LateHist,
    write_errors: u64,
    read_pkts: u64,
    read_frames: u64,
    coalesced: u64,
    due: Vec<(Nanos, Vec<u8>)>,
    sup: Vec<u8>,
    watch: StallWatch,
    /// the scenario's span on the link's clock (`LinkConfig::measure_from`, `measure_until`)
    measure: (Nanos, Nanos),
}

/// The queue's drops so far, random loss aside (a stall's burst cannot cause those).
fn queue_drops(link: &Link) -> u64 {
    link.stats.drops.iter().sum::<u64>() - link.stats.drops[DropReason::RandomLoss as usize]
}

impl Dir {
    fn new(link: Link, ingress: RawFd, egress: RawFd, pcap: Option<Pcap>, watch: StallWatch, measure: (Nanos, Nanos)) -> Dir {
        Dir { link, ingress, egress, pcap, seg: Segmenter::default(), late: LateHist::default(), write_errors: 0, read_pkts: 0,
            read_frames: 0, coalesced: 0, due: Vec::new(), sup: Vec::new(), watch, measure }
    }

    /// Read up to [`READ_BATCH`] frames, cut them into wire packets, and hand those to the link at `now`.
    /// The stall detector learns how much a stall left waiting (crate::stall).
    fn read(&mut self, now: Nanos, frame: &mut [u8]) {
        let (pkts0, drops0) = (self.read_pkts, queue_drops(&self.link));
        let mut drained = false;
        for _ in 0..READ_BATCH {
            match sys::read_pkt(self.ingress, frame) {
                Ok(n) if n > 0 => {
                    self.read_frames += 1;
                    let (link, pcap, read_pkts) = (&mut self.link, &mut self.pcap, &mut self.read_pkts);
                    self.seg.each(&frame[..n], |p| {
                        *read_pkts += 1;
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
        self.watch.read(self.read_pkts - pkts0, queue_drops(&self.link) - drops0, drained);
    }

    /// Write what is due by now (coalesced into GSO writes where a run allows), recording lateness.
    fn write_due(&mut self, coalesce: bool, clock: &impl Fn() -> Nanos) {
        let mut t = clock();
        if coalesce {
            while self.due.len() < READ_BATCH {
                match self.link.pop_due(t) {
                    Some(d) => self.due.push(d),
                    None => break,
                }
            }
            let refs: Vec<&[u8]> = self.due.iter().map(|(_, b)| b.as_slice()).collect();
            let mut i = 0;
            while i < refs.len() {
                let n = gso::run_length(&refs[i..]);
                let ok = if n >= 2 {
                    let h = gso::coalesce(&refs[i..i + n], &mut self.sup);
                    self.coalesced += n as u64;
                    sys::write_frame(self.egress, &h.bytes(), &self.sup)
                } else {
                    sys::write_pkt(self.egress, refs[i])
                };
                if !ok {
                    self.write_errors += n as u64;
                }
                t = clock();
                self.watch.seen(t);
                for (at, _) in &self.due[i..i + n] {
                    self.late.record(t.saturating_sub(*at));
                }
                i += n;
            }
            drop(refs);
            for (_, b) in self.due.drain(..) {
                self.link.recycle(b);
            }
        } else {
            while let Some((at, b)) = self.link.pop_due(t) {
                if !sys::write_pkt(self.egress, &b) {
                    self.write_errors += 1;
                }
                t = clock();
                self.watch.seen(t);
                self.late.record(t.saturating_sub(at));
                self.link.recycle(b);
            }
        }
    }

    fn finish(mut self, now: Nanos) -> DirResult {
        if let Some(p) = self.pcap.as_mut() {
            let _ = p.flush();
        }
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
            late: self.late,
            write_errors: self.write_errors,
            read_pkts: self.read_pkts,
            read_frames: self.read_frames,
            super_pkts: self.seg.super_pkts,
            coalesced_pkts: self.coalesced,
            stalls,
            stalls_lost: self.watch.lost,
            ..DirResult::of_link(l, from)
        }
    }
}

impl DirResult {
    /// A link's own figures — its queue's statistics, queueing delays and samples (taken), and an autorate
    /// element's shaper log with times from `from`, the scenario's t = 0 on the link's clock — with the
    /// thread's (lateness, reads, writes, stalls) empty, for the thread that ran it to fill in.
    pub fn of_link(l: &mut Link, from: Nanos) -> DirResult {
        DirResult {
            stats: l.stats.clone(),
            tx_bytes: l.tx_bytes,
            tx_pkts: l.tx_pkts,
            busy_ns: l.busy_ns,
            qdelay_ms: std::mem::take(&mut l.qdelay_ms),
            samples: std::mem::take(&mut l.samples),
            late: LateHist::default(),
            write_errors: 0,
            read_pkts: 0,
            read_frames: 0,
            super_pkts: 0,
            coalesced_pkts: 0,
            stalls: Vec::new(),
            stalls_lost: 0,
            shaper_log: l.shaper_rate_log().map(|log| log.iter().map(|&(t, r)| (t.saturating_sub(from), r)).collect()),
        }
    }
}

/// Sleep until `at` (run time, ns) or until a packet arrives on one of `fds`:
/// to `at` less the margin, then spin, while the spin budget lasts; else in
/// one sleep, to `at` or to the end of the batch window, whichever is later.
/// Returns the deadline of the sleep it asked for (the time until which the
/// thread was allowed to be away, for crate::stall), or 0 if it did not sleep.
pub(crate) fn wait_until(fds: &[RawFd], origin: u64, timing: &Timing, at: Nanos, spin: &mut SpinBudget) -> Nanos {
    let clock = || sys::mono_ns().saturating_sub(origin);
    let now = clock();
    spin.refill(now);
    if at <= now {
        return 0;
    }
    // Never sleep long: a stall of an idle thread is seen (crate::stall), and the stop flag is checked.
    let left = (at - now).min(HEARTBEAT_NS);
    if !spin.affords(timing.margin_ns) {
        let until = at.max(spin.woke.saturating_add(timing.batch_ns)).min(now + HEARTBEAT_NS);
        sys::wait_readable_any(fds, until - now);
        return until;
    }
    let mut slept_until = 0;
    if left > timing.margin_ns {
        slept_until = now + left - timing.margin_ns;
        if sys::wait_readable_any(fds, left - timing.margin_ns) {
            return slept_until;
        }
        if clock() + timing.margin_ns < at {
            return slept_until; // woke early (the heartbeat): the caller comes back
        }
    }
    // Spin the rest, still watching for arrivals.
    let start = clock();
    loop {
        let now = clock();
        if now >= at || sys::wait_readable_any(fds, 0) {
            spin.spent(now.saturating_sub(start));
            return slept_until;
        }
        std::hint::spin_loop();
    }
}

/// The samples of a direction as run-relative seconds.
pub fn sample_rows(s: &[Sample]) -> impl Iterator<Item = (f64, u64, f64)> + '_ {
    s.iter().map(|s| (s.t as f64 / 1e9, s.queue_bytes, s.qdelay_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A non-blocking SOCK_SEQPACKET pair: one message per write, as a TUN gives one frame per read.
    fn seqpacket() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
        use std::os::fd::FromRawFd;
        let mut fd = [0; 2];
        // SAFETY: a valid array of two ints.
        let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK, 0, fd.as_mut_ptr()) };
        assert_eq!(r, 0);
        // SAFETY: two fresh descriptors, owned here.
        unsafe { (std::os::fd::OwnedFd::from_raw_fd(fd[0]), std::os::fd::OwnedFd::from_raw_fd(fd[1])) }
    }

    #[test]
    fn one_loop_runs_both_directions_each_with_its_own_link_and_counters() {
        use crate::link::{tests::cfg, Service};
        use crate::packet::tests::tcp;
        use std::os::fd::AsRawFd;
        // per direction: (the sender's end, the loop's ingress), (the loop's egress, the receiver's end)
        let (d_in, u_in, d_out, u_out) = (seqpacket(), seqpacket(), seqpacket(), seqpacket());
        let stop = Arc::new(AtomicBool::new(false));
        let origin = sys::mono_ns();
        let timing = Timing::default();
        let fw = |ingress: RawFd, egress: RawFd| Forwarder {
            link: cfg(Service::Rate(12_000_000), 100, 0.0),
            ingress,
            egress,
            origin,
            stop: stop.clone(),
            pcap: None,
            timing,
        };
        let fws = vec![fw(d_in.1.as_raw_fd(), d_out.0.as_raw_fd()), fw(u_in.1.as_raw_fd(), u_out.0.as_raw_fd())];
        let h = std::thread::spawn(move || run_together(fws));
        // 3 data segments down (port 20000: 10 ms one way), 2 acks up; each behind a virtio-net header
        let down: Vec<Vec<u8>> = (0..3).map(|i| tcp([10, 77, 0, 2], [10, 77, 0, 1], 20000, 30000, 0x10, 1000 + i, 0)).collect();
        let up: Vec<Vec<u8>> = (0..2).map(|i| tcp([10, 77, 0, 1], [10, 77, 0, 2], 30000, 20000, 0x10, i, 0)).collect();
        let send = |fd: RawFd, p: &[u8]| assert!(sys::write_frame(fd, &[0; gso::HDR_LEN], p));
        for p in &down {
            send(d_in.0.as_raw_fd(), p);
        }
        for p in &up {
            send(u_in.0.as_raw_fd(), p);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        stop.store(true, Ordering::SeqCst);
        let r = h.join().unwrap().unwrap();
        let received = |fd: RawFd| {
            let mut buf = vec![0u8; MAX_FRAME];
            std::iter::from_fn(|| match sys::read_pkt(fd, &mut buf) {
                Ok(n) if n > 0 => Some(buf[gso::HDR_LEN..n].to_vec()),
                _ => None,
            })
            .collect::<Vec<_>>()
        };
        assert_eq!(received(d_out.1.as_raw_fd()), down);
        assert_eq!(received(u_out.1.as_raw_fd()), up);
        assert_eq!(r.len(), 2);
        for (res, n) in r.iter().zip([3u64, 2]) {
            assert_eq!((res.read_pkts, res.read_frames, res.tx_pkts, res.late.n, res.write_errors), (n, n, n, n, 0));
        }
        // 1040-1042 B at 12 Mbit/s, back to back: the down link was busy ~2.1 ms, the up link ~0.05 ms
        assert!(r[0].busy_ns > 2_000_000 && r[1].busy_ns < 200_000, "{} {}", r[0].busy_ns, r[1].busy_ns);
    }

    #[test]
    fn the_spin_budget_refills_at_its_share_of_the_time_and_keeps_at_most_a_millisecond() {
        let mut b = SpinBudget::new(10);
        assert!(b.affords(SPIN_CREDIT_CAP_NS) && !b.affords(SPIN_CREDIT_CAP_NS + 1));
        b.spent(SPIN_CREDIT_CAP_NS);
        assert!(!b.affords(1));
        b.refill(500_000); // 10 % of 500 µs
        assert!(b.affords(50_000) && !b.affords(50_001));
        b.refill(100_000_000);
        assert!(b.affords(SPIN_CREDIT_CAP_NS) && !b.affords(SPIN_CREDIT_CAP_NS + 1));
        // a clock read before the last refill gives nothing back
        b.spent(SPIN_CREDIT_CAP_NS);
        b.refill(90_000_000);
        assert!(!b.affords(1));
        // 100 % = no budget
        let mut all = SpinBudget::new(100);
        all.spent(u64::MAX);
        assert!(all.affords(u64::MAX));
    }

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

#[cfg(test)]
mod thread_tests {
    use super::*;

    /// A path with a download at `down` bit/s over a `down` link and, if `up`, an upload at `up` bit/s.
    fn path(down: u64, up: Option<u64>, app: Option<u64>) -> Resolved {
        let link = |r: u64| format!(r#"{{"rate_bps":{r},"buffer_bytes":100000,"buffer_pkts":null,"loss":0.0,"qdisc":{{"kind":"fifo","params":{{}}}},"trace_ms":null}}"#);
        let flow = |id: usize, dir: &str| {
            let app = app.map_or("null".to_string(), |a| a.to_string());
            format!(r#"{{"id":{id},"group":{id},"name":"f{id}","cc":"cubic","direction":"{dir}","rtt_ns":10000000,"start_ns":0,"stop_ns":null,"size_bytes":null,"app_rate_bps":{app}}}"#)
        };
        let mut flows = vec![flow(0, "down")];
        if up.is_some() {
            flows.push(flow(1, "up"));
        }
        let doc = format!(
            r#"{{"name":"t","seed":1,"duration_ns":5000000000,"sample_interval_ns":10000000,"links":{{"down":{},"up":{}}},"flows":[{}],"probes":[]}}"#,
            link(down),
            up.map_or("null".to_string(), link),
            flows.join(",")
        );
        crate::scenario::from_json(&doc).unwrap()
    }

    #[test]
    fn one_thread_carries_data_one_way_up_to_a_gigabit_and_two_carry_more_or_both_ways() {
        let a = Threads::Auto;
        // data down at 1 Gbit/s, acks up over a path with no up link: one thread
        assert!(a.one(&path(1_000_000_000, None, None), false));
        assert!(!a.one(&path(1_000_000_001, None, None), false));
        // application-limited flows bound the data below the link's rate
        assert_eq!(data_bounds_bps(&path(10_000_000_000, None, Some(5_000_000)), false), vec![5_000_000]);
        assert!(a.one(&path(10_000_000_000, None, Some(5_000_000)), false));
        // data both ways, even slow: two threads
        assert!(!a.one(&path(10_000_000, Some(10_000_000), None), false));
        // a shell's command may send either way; the up direction has no bottleneck: unbounded
        assert_eq!(data_bounds_bps(&path(10_000_000, None, None), true), vec![10_000_000, u64::MAX]);
        assert!(!a.one(&path(10_000_000, None, None), true));
        // forced either way
        assert!(Threads::One.one(&path(10_000_000_000, Some(1), None), true));
        assert!(!Threads::Two.one(&path(1, None, None), false));
    }
}
