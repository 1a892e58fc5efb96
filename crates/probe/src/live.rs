//! A loaded phase that ends when what it is for has been seen (`load
//! --until-stable FLOOR`), not after a fixed time: the load saturates the
//! path, and the phase's figures are read over its second half (bloatlab's
//! `measure`, python/bloatlab/advise/measure.py), so the phase may end once
//! the path has been saturated over the whole of a second half.
//!
//! Sources:
//! - draft-ietf-ippm-responsiveness-08 §4.3 (saturation, "Final Algorithm"):
//!   the load is saturated when the moving average of the aggregate goodput
//!   and the responsiveness over the last [`MAD`] intervals are each stable,
//!   the standard deviation of their last MAD moving values within [`SDT`]
//!   (5 %) of the current one ([`rpm::stable`]). Here the responsiveness is
//!   the UDP echo probes' round trip (a 95 % trimmed mean, [`rpm::tm`]), and
//!   both must hold at the same interval (the draft judges responsiveness
//!   once goodput has been stable: here no earlier).
//! - Linux `net/ipv4/tcp_bbr.c` (`bbr_check_full_bw_reached`) sizes its
//!   test in round trips (3 without 25 % growth), not seconds: an interval
//!   here is a round trip at least ([`interval_ns`]), where the draft's is a
//!   fixed second (sized for Internet paths of tens of ms; at 600 ms a
//!   second is less than two rounds, at 5 ms it is 200).
//!
//! The draft's goodput test alone would call a loss-based control saturated
//! on a plateau of slow growth (CUBIC after an early HyStart exit on a long
//! path adds about a segment a round: 2 % a round at 600 ms and 5 Mbit/s,
//! within 5 % over four intervals), which BBR's test does not meet because
//! BBR's STARTUP grows 2.89x a round until the pipe is full. So the pipe must
//! also have been found: a queue stands (the probes' moving round trip above
//! the idle minimum by more than [`QUEUE_NOISE_MS`]) or the flows met a loss
//! (a loss-based control's end of the pipe; a receiver sees it as data out of
//! order, `tcpi_rcv_ooopack`, a sender as `tcpi_total_retrans`). Where
//! neither happens (an isolating queue that drops nothing, a window-limited
//! sender) the phase runs to its ceiling, as before. With `--queue-only` a
//! loss does not count: on a path with random loss a loss-based load meets
//! losses below the pipe's rate and can sit on a plateau under it, so only a
//! standing queue shows the pipe found there.
//!
//! The end: the first interval at which the rule holds ends at `t_sat` (since
//! the phase began); the phase then ends at max(FLOOR, 2 t_sat, t_N), at most
//! its `-t` (the ceiling), so that its second half lies wholly after `t_sat`.
//! FLOOR and N are the caller's (what its figures need in the second half):
//! `t_N` is the end of the first interval by which the flows had delivered N
//! full segments (`--floor-packets`; 0 where none is asked). A floor in
//! packets follows the rate the phase runs at, which a floor in seconds must
//! know in advance (bloatlab's `measure` read it from the idle path, and ran
//! to the ceiling where it had not: an upload's port is seldom read there).
//!
//! `--until-loss` (a phase of its own, [`Until::at_loss`]) ends the phase a
//! round trip after a flow first met a loss instead (a sender's
//! retransmission, a receiver's data out of order: reordering counts too),
//! or at `-t` where none came by then: a loss-based control without HyStart
//! (Reno) doubles its window every round trip until the bottleneck's buffer
//! overflows, so its first loss comes with the queue at the buffer's depth,
//! which its smoothed RTT then holds (bloatlab's `measure` reads a buffer
//! deeper than its CUBIC fill reached so). The round trip after the loss is
//! the senders' time to see it where a receiver saw it first (fast
//! retransmit's duplicate ACKs coming back), and the samples of the full
//! queue's round trip that their smoothed RTT needs.
//!
//! `--halt-rtts N` (a phase's end at its ceiling, [`halts`]): a phase that
//! ends at its `-t` (not ended earlier by the rules above) lets its senders
//! wait up to 2 s for the acks of what they wrote (`tcp::stream`'s
//! `TIMED_ACK_GRACE_NS`), and the link stays loaded meanwhile: the
//! figures read over the phase's second half get up to 1 s more of it. Where
//! that half already spans N loaded round trips (bloatlab's `measure` reads
//! the rate from the acked bytes over at least 20, its `ACKED_EDGE`), the
//! grace adds nothing the figures need: the flows stop at `-t` instead, as
//! with `--halt-at-end` (the grace took 2.1-2.4 s of each such phase at 1-180
//! Mbit/s, 3.5 s of a `measure --quick` on average over a campaign's 41
//! paths). The loaded round trip is the largest of the probes' 95th
//! percentile over the second half so far, each sending flow's smoothed RTT's
//! 95th percentile over it (its TCP_INFO samples), and each receiving flow's
//! own estimate (`tcpi_rcv_rtt`; the sender's is the server's): the flows sit
//! in their own queues behind a flow-isolating qdisc, which the probes do not
//! see. With `--halt-packets M` the half must also have carried M full
//! segments (the watcher's intervals that began in it): a reading over a few
//! dozen packets at a fraction of a Mbit/s is edged by the flows' timeouts
//! more than by their round trips (`measure` passes the 200 its fill's early
//! end asks of a second half). The rule is judged an interval before `-t` at
//! most (the watcher's last), so that the flows stop on time; the half is
//! counted from the flows' first samples, two loaded round trips after their
//! start, and must hold one of the watcher's intervals. Measured (the
//! campaign's 41 paths again, docs/advise.md "Where measure's time goes"):
//! 0.4 s a path saved, not 3.5: the rest of the grace is on slow links and
//! long loaded round trips, where it is read-window time by these criteria.
//!
//! Constants:
//! - [`MAD`] = 4, [`SDT`] = 5 %: the draft's (§4.1), in `rpm`.
//! - [`MIN_INTERVAL_NS`] = 100 ms: ten UDP probes at `load`'s 10 ms, the
//!   fewest a 95 % trimmed mean drops one of.
//! - [`INTERVAL_PACKETS`] = 20 full segments: the goodput of an interval is
//!   counted in whole packets, and one of 20 is 5 % = SDT (at 1 Mbit/s 100 ms
//!   carry 8: one packet more or less would read 12 %).
//! - [`QUEUE_NOISE_MS`] = 3 ms: the measurement's noise (measure.NOISE_MS:
//!   the VM's ~5-ms pauses reach a p95 now and then; a trimmed mean less).

use bloatlab_core::stats::Dist;
use crate::rpm::{self, MAD};
use crate::sys;
use crate::tcp::stream::StreamState;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The shortest interval (ns): ten probes at 10 ms.
pub const MIN_INTERVAL_NS: u64 = 100_000_000;
/// An interval carries this many full segments at the last goodput.
pub const INTERVAL_PACKETS: f64 = 20.0;
/// A full segment on the wire (B): 1448 B of payload + 52 B of headers.
pub const WIRE_SEGMENT: f64 = 1500.0;

/// A full segment's payload (B): what `--floor-packets` counts, as the
/// flows' delivered bytes are payload.
pub const SEGMENT_PAYLOAD: u64 = 1448;
/// A standing queue is a moving round trip this far above the idle minimum (ms).
pub const QUEUE_NOISE_MS: f64 = 3.0;

/// When a phase may end (`load --until-stable FLOOR`, `--floor-packets`,
/// `--queue-only`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Until {
    /// not before this (ns since the phase began)
    pub floor_ns: u64,
    /// nor before the flows delivered this much (B of payload)
    pub floor_bytes: u64,
    /// a loss shows the pipe found, as a standing queue does (false with
    /// `--queue-only`: a path's random loss is no sign of its end)
    pub loss_ends: bool,
    /// `--until-loss`: the phase ends a round trip after a flow first met a
    /// loss (the interval after the one that saw it, [`interval_ns`]), not at
    /// saturation; the floors do not apply
    pub at_loss: bool,
}

/// `--halt-rtts N` (`--halt-packets M`): a phase that runs to its ceiling stops its flows there where its second
/// half spanned `rtts` loaded round trips ([`halts`]) and carried `packets` full segments (module doc).
#[derive(Debug, Clone, Copy, Default)]
pub struct Halt {
    pub rtts: f64,
    pub packets: u64,
}

/// What a phase's threads share while it runs: its end (decided while it
/// runs), the probes' round trips and the loaded streams.
pub struct Live {
    end_ns: AtomicU64,
    rtts: Mutex<Vec<(u64, f64)>>,
    streams: Mutex<Vec<(bool, Arc<StreamState>)>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").field("end_ns", &self.end()).finish()
    }
}

impl Default for Live {
    fn default() -> Self {
        Live { end_ns: AtomicU64::new(u64::MAX), rtts: Mutex::new(Vec::new()), streams: Mutex::new(Vec::new()) }
    }
}

impl Live {
    pub fn new() -> Arc<Live> {
        Arc::new(Live::default())
    }
    /// CLOCK_MONOTONIC at which the phase ends (u64::MAX: not decided).
    pub fn end(&self) -> u64 {
        self.end_ns.load(Ordering::Relaxed)
    }
    pub fn past_end(&self) -> bool {
        sys::mono_ns() >= self.end()
    }
    fn set_end(&self, ns: u64) {
        self.end_ns.fetch_min(ns, Ordering::SeqCst);
    }
    /// A probe's round trip (ms), answered now.
    pub fn push_rtt(&self, rtt_ms: f64) {
        self.rtts.lock().unwrap().push((sys::mono_ns(), rtt_ms));
    }
    /// The loaded streams of a client (`reverse`: it receives).
    pub fn register(&self, reverse: bool, streams: &[Arc<StreamState>]) {
        self.streams.lock().unwrap().extend(streams.iter().map(|s| (reverse, s.clone())));
    }
    /// (bytes delivered so far, whether any flow met a loss): a receiver's
    /// bytes read and data out of order; a sender's bytes acked and retransmissions.
    fn delivered(&self) -> (u64, bool) {
        let (mut bytes, mut lost) = (0u64, false);
        for (reverse, s) in self.streams.lock().unwrap().iter() {
            let ti = sys::tcp_info(s.sock.as_raw_fd()).ok();
            if *reverse {
                bytes += s.read.load(Ordering::Relaxed);
                lost |= ti.is_some_and(|t| t.rcv_ooopack > 0);
            } else if let Some(t) = ti {
                bytes += t.bytes_acked.saturating_sub(s.pre);
                lost |= t.total_retrans > 0;
            }
        }
        (bytes, lost)
    }
    fn rtts_between(&self, a: u64, b: u64) -> Vec<f64> {
        self.rtts.lock().unwrap().iter().filter(|x| x.0 >= a && x.0 < b).map(|x| x.1).collect()
    }
    /// The loaded round trip (ms) since `from` (CLOCK_MONOTONIC; module doc, `--halt-rtts`): the largest of the
    /// probes' 95th percentile, each sending flow's smoothed RTT's 95th percentile (its TCP_INFO samples) and
    /// each receiving flow's `tcpi_rcv_rtt`; 0 where none is known.
    fn loaded_rtt_ms(&self, from: u64) -> f64 {
        let mut worst = p95(self.rtts_between(from, u64::MAX));
        for (reverse, s) in self.streams.lock().unwrap().iter() {
            let ms = if *reverse {
                sys::tcp_info(s.sock.as_raw_fd()).map_or(0.0, |t| t.rcv_rtt as f64 / 1e3)
            } else {
                p95(s.samples.lock().unwrap().iter().filter(|x| x.0 >= from && x.1.rtt > 0).map(|x| x.1.rtt as f64 / 1e3).collect())
            };
            worst = worst.max(ms);
        }
        worst
    }
    /// The latest start (CLOCK_MONOTONIC) of the loaded flows: from then on all of them ran.
    fn all_ran_from(&self) -> Option<u64> {
        self.streams.lock().unwrap().iter().map(|(_, s)| s.start_mono).max()
    }
}

/// The 95th percentile of `v` as every engine and `measure` read it (`stats::Dist`, numpy's linear); 0 for none.
fn p95(mut v: Vec<f64>) -> f64 {
    let d = Dist::of(&mut v);
    if d.n == 0 { 0.0 } else { d.p95 }
}

/// `--halt-rtts N`: the flows of a phase that all began at `from_ns` (before their connections) and run to its
/// ceiling `end_ns` stop there where the phase's second half spans at least `n` loaded round trips of `rtt_ms`
/// (module doc); not where no round trip is known (nothing to judge by: the grace as without the option). The
/// half is read from the flows' first samples, which come a handshake's and a request's round trips after their
/// start (bloatlab's `measure`: the first sample to the last): two round trips of the loaded one, taken off before
/// halving.
pub fn halts(from_ns: u64, end_ns: u64, rtt_ms: f64, n: f64) -> bool {
    let first = from_ns as f64 + 2.0 * rtt_ms * 1e6;
    rtt_ms > 0.0 && (end_ns as f64 - first) / 2.0 >= n * rtt_ms * 1e6
}

/// One interval of a running phase.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    /// its end, s since the phase began
    pub end_s: f64,
    /// its length, s
    pub len_s: f64,
    /// bytes delivered in it
    pub bytes: u64,
    /// the probes' round trips answered in it (ms)
    pub rtt_ms: Vec<f64>,
    /// a flow met a loss by its end
    pub lost: bool,
}

/// The moving goodput (bit/s) and round trip (ms, 95 % trimmed mean) over
/// the intervals `i-MAD+1..=i` (draft-08 §4.3's moving averages).
pub fn moving(iv: &[Interval], i: usize) -> (f64, f64) {
    let w = &iv[i + 1 - MAD..=i];
    let secs: f64 = w.iter().map(|x| x.len_s).sum();
    let bytes: u64 = w.iter().map(|x| x.bytes).sum();
    let rtts: Vec<f64> = w.iter().flat_map(|x| x.rtt_ms.iter().copied()).collect();
    (bytes as f64 * 8.0 / secs, rpm::tm(&rtts))
}

/// Saturated at the last of `iv` (module doc): the last [`MAD`] moving
/// goodputs and round trips each stable ([`rpm::stable`]), and the pipe found
/// (a loss, or the moving round trip above `base_ms` + [`QUEUE_NOISE_MS`]).
/// A loss shows the pipe found only if `loss_ends` (else a standing queue
/// alone does: `--queue-only`).
pub fn saturated(iv: &[Interval], base_ms: f64, loss_ends: bool) -> bool {
    if iv.len() < 2 * MAD - 1 {
        return false;
    }
    let n = iv.len();
    let (g, r): (Vec<f64>, Vec<f64>) = (n - MAD..n).map(|i| moving(iv, i)).unzip();
    let found = (loss_ends && iv[n - 1].lost) || r[MAD - 1] - base_ms > QUEUE_NOISE_MS;
    // a load that has delivered nothing yet (its connections still opening) is not stable at zero
    found && g.iter().all(|&x| x > 0.0) && rpm::stable(&g) && rpm::stable(&r)
}

/// The phase's length (ns) once saturated `sat_ns` after it began: its second
/// half wholly after, at least `floor_ns`, at most `ceiling_ns`.
pub fn phase_len_ns(sat_ns: u64, floor_ns: u64, ceiling_ns: u64) -> u64 {
    (2 * sat_ns).max(floor_ns).min(ceiling_ns)
}

/// Where the phase stands after an interval ending `at_ns` after it began,
/// its flows having delivered `bytes` so far: the first interval saturated
/// (`sat`) and the first by whose end `floor_bytes` were delivered
/// (`reached`) are kept; once both are known, the phase's length
/// ([`phase_len_ns`] with the floor raised to `reached`).
pub fn phase_end(sat: &mut Option<u64>, reached: &mut Option<u64>, at_ns: u64, saturated_now: bool, bytes: u64,
                 floor_bytes: u64, floor_ns: u64, ceiling_ns: u64) -> Option<u64> {
    if sat.is_none() && saturated_now {
        *sat = Some(at_ns);
    }
    if reached.is_none() && bytes >= floor_bytes {
        *reached = Some(at_ns);
    }
    Some(phase_len_ns((*sat)?, floor_ns.max((*reached)?), ceiling_ns))
}

/// The next interval's length (ns): a round trip (the last interval's median
/// probe, else `base_ms`), [`INTERVAL_PACKETS`] at the last goodput, and
/// [`MIN_INTERVAL_NS`], whichever is longest.
pub fn interval_ns(last: Option<&Interval>, base_ms: f64) -> u64 {
    let mut rtt = base_ms;
    let mut packets_ns = 0.0;
    if let Some(x) = last {
        if !x.rtt_ms.is_empty() {
            let mut v = x.rtt_ms.clone();
            v.sort_by(|a, b| a.total_cmp(b));
            rtt = v[v.len() / 2];
        }
        if x.bytes > 0 {
            packets_ns = INTERVAL_PACKETS * WIRE_SEGMENT / (x.bytes as f64 / x.len_s) * 1e9;
        }
    }
    (rtt * 1e6).max(packets_ns).max(MIN_INTERVAL_NS as f64) as u64
}

/// Where a phase `--until-loss` ends, its last interval (`iv`'s) ending
/// `at_ns` after it began: a round trip later once a flow met a loss by
/// then, else not yet (None). The round trip is [`interval_ns`] of the last
/// interval whose probes were answered (a full FIFO drops probes too, so
/// the interval that saw the loss may have none), else of the base.
pub fn loss_end(iv: &[Interval], at_ns: u64, base_ms: f64) -> Option<u64> {
    if !iv.last()?.lost {
        return None;
    }
    let answered = iv.iter().rev().find(|x| !x.rtt_ms.is_empty());
    Some(at_ns + interval_ns(answered, base_ms))
}

/// What the watcher saw of a phase: its intervals, when the load was
/// saturated and when a flow first met a loss (`--until-loss`), each in s
/// since the phase began.
#[derive(Debug, Default)]
pub struct Watched {
    pub intervals: Vec<Interval>,
    pub saturated_at_s: Option<f64>,
    pub lost_at_s: Option<f64>,
    /// `--halt-rtts`: the loaded round trip (ms) the rule judged the second half by at the ceiling, and whether
    /// the flows stopped there (None: not judged — the option not given, or the phase ended before its ceiling)
    pub halt: Option<(f64, bool)>,
}

/// The watcher of a phase from `start` to `end` (CLOCK_MONOTONIC): closes an
/// interval after another, and ends the phase ([`Live::end`]) at
/// [`phase_end`] once [`saturated`] and `until.floor_bytes` delivered, or
/// (`until.at_loss`) at [`loss_end`]; without `until` it only watches. Where
/// none of these ended it before `end`, there with `halt_rtts` N where
/// [`halts`] (`--halt-rtts`).
pub fn watch(live: &Live, start: u64, end: u64, until: Option<Until>, base_ms: f64, halt: Option<Halt>) -> Watched {
    let mut iv: Vec<Interval> = Vec::new();
    let mut a = start;
    let mut prev = 0u64;
    let (mut sat, mut reached) = (None, None);
    let mut lost_at = None;
    let mut judged = None;
    while !sys::stopped() {
        let b = a + interval_ns(iv.last(), base_ms);
        if b >= end || b >= live.end() {
            if until.is_some_and(|u| u.at_loss) && lost_at.is_none() {
                // no loss by the ceiling: the phase ends there (its flows may run past it only after a loss)
                live.set_end(end);
            }
            if let (Some(h), Some(from), true) = (halt, live.all_ran_from(), live.end() == u64::MAX) {
                // the last interval before the ceiling: the flows stop at it where their second half spans the round
                // trips and carried the packets (those of the intervals that began in it: one at least)
                let mid = from + end.saturating_sub(from) / 2;
                let mid_s = mid.saturating_sub(start) as f64 / 1e9;
                let half: Vec<&Interval> = iv.iter().filter(|x| x.end_s - x.len_s >= mid_s - 1e-9).collect();
                let carried: u64 = half.iter().map(|x| x.bytes).sum();
                let rtt = live.loaded_rtt_ms(mid);
                let stop = !half.is_empty() && carried >= h.packets * SEGMENT_PAYLOAD && halts(from, end, rtt, h.rtts);
                if stop {
                    live.set_end(end);
                }
                judged = Some((rtt, stop));
            }
            break;
        }
        sys::sleep_until_mono(b);
        if sys::stopped() {
            break;
        }
        let (bytes, lost) = live.delivered();
        iv.push(Interval {
            end_s: (b - start) as f64 / 1e9,
            len_s: (b - a) as f64 / 1e9,
            bytes: bytes.saturating_sub(prev),
            rtt_ms: live.rtts_between(a, b),
            lost,
        });
        prev = bytes;
        a = b;
        let Some(until) = until else { continue };
        if until.at_loss {
            if let Some(len) = loss_end(&iv, b - start, base_ms) {
                lost_at = Some(b - start);
                live.set_end(start + len);
                break;
            }
            continue;
        }
        let now_saturated = sat.is_none() && saturated(&iv, base_ms, until.loss_ends);
        if let Some(len) = phase_end(&mut sat, &mut reached, b - start, now_saturated, bytes, until.floor_bytes, until.floor_ns, end - start) {
            live.set_end(start + len);
            break;
        }
    }
    let s = |ns: Option<u64>| ns.map(|x| x as f64 / 1e9);
    Watched { intervals: iv, saturated_at_s: s(sat), lost_at_s: s(lost_at), halt: judged }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` intervals of 100 ms, each delivering `bytes(i)` with probes at `rtt(i)` ms.
    fn series(n: usize, bytes: impl Fn(usize) -> u64, rtt: impl Fn(usize) -> f64, lost_from: usize) -> Vec<Interval> {
        (0..n)
            .map(|i| Interval {
                end_s: 0.1 * (i + 1) as f64,
                len_s: 0.1,
                bytes: bytes(i),
                rtt_ms: vec![rtt(i); 10],
                lost: i >= lost_from,
            })
            .collect()
    }

    #[test]
    fn a_floor_in_packets_holds_the_end_until_the_flows_delivered_them() {
        const MS: u64 = 1_000_000;
        let (floor, ceiling) = (2000 * MS, 5000 * MS);
        // saturated at 300 ms, 400 packets (579 200 B) delivered by 1.5 s (a 3-Mbit/s upload): the end is 2 s, the
        // floor in time; by 2.6 s: the end is 2.6 s, the packets' floor
        for (reached_at, want) in [(1500, 2000), (2600, 2600), (6000, 5000)] {
            let (mut sat, mut reached) = (None, None);
            let mut end = None;
            for at in (100..5000).step_by(100) {
                let bytes = if at >= reached_at { 579_200 } else { 1000 };
                end = phase_end(&mut sat, &mut reached, at * MS, at == 300, bytes, 400 * SEGMENT_PAYLOAD, floor, ceiling);
                if end.is_some() {
                    break;
                }
            }
            assert_eq!(sat, Some(300 * MS));
            // past the ceiling the watcher stops by itself (the phase's own end): no end is set before it
            assert_eq!(end, (want < 5000).then_some(want * MS), "reached at {reached_at} ms");
        }
        // no floor in packets: saturated is enough (the end as before: twice the saturation, at least the floor)
        let (mut sat, mut reached) = (None, None);
        assert_eq!(phase_end(&mut sat, &mut reached, 1500 * MS, true, 0, 0, floor, ceiling), Some(3000 * MS));
        // the packets delivered first, saturation later: the saturation's end
        let (mut sat, mut reached) = (None, None);
        assert_eq!(phase_end(&mut sat, &mut reached, 200 * MS, false, 10_000_000, 579_200, floor, ceiling), None);
        assert_eq!(reached, Some(200 * MS));
        assert_eq!(phase_end(&mut sat, &mut reached, 1200 * MS, true, 10_000_000, 579_200, floor, ceiling), Some(2400 * MS));
    }

    #[test]
    fn a_steady_load_over_a_standing_queue_is_saturated_once_four_moving_averages_agree() {
        // 20 Mbit/s (250 kB per 100 ms), 40 ms of queue over a 20-ms base: saturated at the
        // seventh interval (the first with four moving averages of four), not before
        let iv = series(7, |_| 250_000, |_| 60.0, usize::MAX);
        assert!(!saturated(&iv[..6], 20.0, true));
        assert!(saturated(&iv, 20.0, true));
    }

    #[test]
    fn a_ramp_is_not_saturated_until_the_moving_goodput_stops_growing() {
        // slow start doubling each interval to 250 kB (the fifth), then flat: the last four
        // moving goodputs at interval 9 still hold the ramp's last step (sd 5.4 % of the last),
        // at interval 10 (the eleventh) they do not
        let ramp = |i: usize| (15_625u64 << i.min(4)).min(250_000);
        let iv = series(12, ramp, |_| 60.0, usize::MAX);
        let first = (1..=iv.len()).find(|&n| saturated(&iv[..n], 20.0, true));
        assert_eq!(first, Some(11));
    }

    #[test]
    fn a_plateau_without_queue_or_loss_is_not_saturated_but_with_a_loss_it_is() {
        // CUBIC's slow growth after an early HyStart exit: flat within 5 %, no queue
        let iv = series(10, |i| 100_000 + 200 * i as u64, |_| 20.5, usize::MAX);
        assert!(!saturated(&iv, 20.0, true));
        // the same plateau after a loss (a policer's, an AQM's): the pipe's end was met
        let iv = series(10, |i| 100_000 + 200 * i as u64, |_| 20.5, 2);
        assert!(saturated(&iv, 20.0, true));
        // nothing delivered yet (connections opening) with a loss: not stable at zero
        let iv = series(10, |_| 0, |_| 20.5, 0);
        assert!(!saturated(&iv, 20.0, true));
        // --queue-only (a path with random loss): the plateau after a loss is not the pipe's end; over a
        // standing queue it is
        let iv = series(10, |i| 100_000 + 200 * i as u64, |_| 20.5, 2);
        assert!(!saturated(&iv, 20.0, false));
        let iv = series(10, |i| 100_000 + 200 * i as u64, |_| 30.0, 2);
        assert!(saturated(&iv, 20.0, false));
    }

    #[test]
    fn a_queue_that_still_grows_is_not_saturated() {
        // the round trip grows 10 % an interval (a deep buffer filling): never stable
        let iv = series(12, |_| 250_000, |i| 30.0 * 1.1f64.powi(i as i32), 0);
        assert!(!saturated(&iv, 20.0, true));
    }

    #[test]
    fn until_loss_ends_the_phase_a_round_trip_after_the_interval_that_saw_a_loss() {
        const MS: u64 = 1_000_000;
        // Reno's slow start into a 600-ms queue over a 45-ms base: no loss yet, no end
        let mut iv = series(3, |_| 6_000_000, |_| 45.0, usize::MAX);
        assert_eq!(loss_end(&iv, 1500 * MS, 45.0), None);
        assert_eq!(loss_end(&[], 0, 45.0), None);
        // the interval that saw the loss had its probes at 651 ms: the end is that round trip later
        iv.push(Interval { end_s: 2.3, len_s: 0.6, bytes: 6_000_000, rtt_ms: vec![640.0, 651.0, 652.0], lost: true });
        assert_eq!(loss_end(&iv, 2300 * MS, 45.0), Some(2951 * MS));
        // no probe answered in it (a full FIFO drops them too): the last answered interval's round trip
        iv.push(Interval { end_s: 2.4, len_s: 0.1, bytes: 0, rtt_ms: vec![], lost: true });
        assert_eq!(loss_end(&iv, 2400 * MS, 45.0), Some(3051 * MS));
        // none answered at all: the base round trip, at least 100 ms
        let none = [Interval { end_s: 0.1, len_s: 0.1, bytes: 0, rtt_ms: vec![], lost: true }];
        assert_eq!(loss_end(&none, 100 * MS, 45.0), Some(200 * MS));
    }

    #[test]
    fn halt_rtts_stops_the_flows_at_the_ceiling_only_where_the_second_half_spans_n_round_trips() {
        const MS: u64 = 1_000_000;
        // a 5-s phase whose flows all began at 0.1 s, their first samples two round trips later: the second half
        // spans 20 round trips of r where (4.9 s - 2 r) / 2 = 20 r, r = 4.9 s / 42 = 116.7 ms
        assert!(halts(100 * MS, 5000 * MS, 45.8, 20.0)); // 163 Mbit/s at 45 ms (campaign seed 69 path 9): stop
        assert!(halts(100 * MS, 5000 * MS, 4900.0 / 42.01, 20.0)); // just over 20
        assert!(!halts(100 * MS, 5000 * MS, 4900.0 / 41.99, 20.0)); // a deeper queue: the grace lengthens the window
        assert!(!halts(100 * MS, 5000 * MS, 0.0, 20.0)); // no round trip known: the grace, as without the option
        assert!(!halts(5200 * MS, 5000 * MS, 10.0, 20.0)); // flows started after the ceiling: nothing spanned
        // the 95th percentile as stats::Dist reads it (numpy's linear): 1..=20 gives 19 + 0.05
        assert!((p95((1..=20).map(f64::from).collect()) - 19.05).abs() < 1e-12);
        assert_eq!(p95(vec![7.0]), 7.0);
        assert_eq!(p95(vec![]), 0.0);
    }

    #[test]
    fn the_phase_ends_at_twice_the_saturation_between_floor_and_ceiling() {
        let s = 1_000_000_000;
        assert_eq!(phase_len_ns(s * 7 / 10, 2 * s, 5 * s), 2 * s);
        assert_eq!(phase_len_ns(s * 3 / 2, 2 * s, 5 * s), 3 * s);
        assert_eq!(phase_len_ns(4 * s, 2 * s, 5 * s), 5 * s);
    }

    #[test]
    fn an_interval_is_a_round_trip_twenty_packets_or_100_ms_whichever_is_longest() {
        assert_eq!(interval_ns(None, 20.0), 100_000_000);
        assert_eq!(interval_ns(None, 300.0), 300_000_000);
        // 1 Mbit/s: 125 kB/s, 20 packets of 1500 B = 240 ms
        let x = Interval { end_s: 1.0, len_s: 1.0, bytes: 125_000, rtt_ms: vec![50.0, 90.0, 70.0], lost: false };
        assert_eq!(interval_ns(Some(&x), 20.0), 240_000_000);
        // 100 Mbit/s behind a 400-ms queue: the median probe's round trip
        let y = Interval { end_s: 1.0, len_s: 1.0, bytes: 12_500_000, rtt_ms: vec![380.0, 400.0, 420.0], lost: false };
        assert_eq!(interval_ns(Some(&y), 20.0), 400_000_000);
    }
}
