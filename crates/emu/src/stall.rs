//! Stalls of a link thread: intervals in which it did not run although it
//! should have (nothing read, nothing written), and the backlog it found when
//! it ran again. docs/emulator.md "Timing quality".
//!
//! Model: the thread observes the monotonic clock at least once per loop turn
//! and never sleeps longer than [`HEARTBEAT_NS`] (`forward.rs`). Between two
//! observations `a` and `b` it was allowed to be away until `max(a, d)`, `d`
//! the deadline of a sleep it asked for in between; `b − max(a, d)` beyond
//! [`STALL_MIN_NS`] is a stall episode. A sleep that a packet's arrival ends
//! early still counts up to its deadline, so an episode is seen at most one
//! heartbeat short of its length, and never longer than it was.
//!
//! What a stall does (measured on scenarios/fidelity/04, docs/fidelity.md):
//! the kernel's senders go on while the thread is away (their ACK clock runs
//! through the other direction's thread), so a stall of `T` at link rate `R`
//! leaves up to `R·T` bytes in the TUN device; the thread reads them at one
//! instant and the queue takes them as one burst, where a real link would
//! have been draining it all along. Each episode records that backlog
//! (`backlog_pkts`) and the queue's drops while it was read (`drops`).
//!
//! The verdict ([`Scales::threshold`]): a stall matters when it is at least
//! as long as the shortest of the scenario's own time scales:
//! - a bottleneck's drain time `B/R` (its buffer, or a policer's bucket, at
//!   its rate): a stall that long releases `R·T ≥ B`, a burst that overflows
//!   even an empty buffer, where the real link drops nothing. A stall of
//!   the ACK direction does it too: the held ACKs arrive together and an
//!   unpaced sender answers them with one burst (04: a 5.4 ms stall of the
//!   ACK thread, no data backlog, 154 retransmissions against 44 stall-free);
//! - the smallest round trip of a flow's full-size packet (its base RTT and
//!   its serialization at its link's rate: `result::scales`): the flows' ACK
//!   clock stops for a whole round.
//! Never below [`THRESHOLD_FLOOR_NS`]: shorter stalls are seen up to one
//! heartbeat short, and their delay error is the p99 lateness's to judge.
//!
//! Constants: [`STALL_MIN_NS`] = 1 ms (a wake-up on this VM is 10-30 µs late,
//! under load up to a few hundred µs: 1 ms is beyond the scheduler's noise);
//! [`HEARTBEAT_NS`] = 1 ms (an idle thread wakes 1 000 times a second: a
//! 10-s run of an idle link took 0.58-0.63 s of CPU against 0.22-0.24 s with
//! the former 50-ms cap, three runs each at load 3.7-4.1, i.e. ~4 % of one
//! core for the two threads; a busy link wakes more often anyway);
//! [`MAX_EPISODES`] bounds the memory of a pathological run.

use bloatlab_core::time::Nanos;
use serde::Serialize;

/// Shortest gap recorded as a stall (ns).
pub const STALL_MIN_NS: Nanos = 1_000_000;
/// Longest sleep of a link thread (ns): an idle thread's stall is seen too.
pub const HEARTBEAT_NS: Nanos = 1_000_000;
/// Episodes kept per thread; more are counted in [`StallWatch::lost`].
pub const MAX_EPISODES: usize = 10_000;
/// The verdict's threshold is never below this (ns): [`STALL_MIN_NS`] plus
/// the detector's error (one [`HEARTBEAT_NS`]).
pub const THRESHOLD_FLOOR_NS: Nanos = STALL_MIN_NS + HEARTBEAT_NS;
/// Bytes of a packet when a buffer is given in packets (the scenarios' 1500-byte MTU).
pub const PKT_BYTES: u64 = 1500;

/// The scenario's time scales a stall is measured against.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scales {
    /// (what, drain time in ns): each bottleneck's buffer and each policer's bucket at its rate
    pub drains: Vec<(String, Nanos)>,
    /// the flows' smallest round trip of a full-size packet (ns): base RTT and serialization (`result::scales`)
    pub min_rtt_ns: Option<Nanos>,
}

impl Scales {
    /// The drain time of `bytes` at `rate_bps` (ns); None without a rate.
    pub fn drain_ns(bytes: u64, rate_bps: u64) -> Option<Nanos> {
        (rate_bps > 0).then(|| (bytes as u128 * 8 * 1_000_000_000 / rate_bps as u128) as Nanos)
    }

    /// The shortest stall that matters (ns) and the time scale that set it
    /// (`None`: the scenario has none, only the floor applies).
    pub fn threshold(&self) -> (Nanos, Option<String>) {
        let rtt = self.min_rtt_ns.map(|r| ("a full packet's round trip".to_string(), r));
        let shortest = self.drains.iter().cloned().chain(rtt).min_by_key(|(_, t)| *t);
        match shortest {
            Some((what, t)) if t > THRESHOLD_FLOOR_NS => (t, Some(what)),
            Some((what, _)) => (THRESHOLD_FLOOR_NS, Some(format!("the floor ({what} is shorter)"))),
            None => (THRESHOLD_FLOOR_NS, None),
        }
    }
}

/// One stall of one thread (link-clock times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Episode {
    pub start_ns: Nanos,
    pub dur_ns: Nanos,
    /// wire packets waiting in the TUN device when the thread ran again
    pub backlog_pkts: u64,
    /// the queue's drops (not random loss) while that backlog was read
    pub drops: u64,
}

impl Episode {
    pub fn end_ns(&self) -> Nanos {
        self.start_ns + self.dur_ns
    }
}

/// The detector a link thread feeds with its clock observations.
#[derive(Debug, Default)]
pub struct StallWatch {
    last: Nanos,
    until: Nanos,
    /// the last episode's backlog is still being read
    open: bool,
    pub episodes: Vec<Episode>,
    /// episodes beyond [`MAX_EPISODES`]
    pub lost: u64,
}

impl StallWatch {
    pub fn new(now: Nanos) -> StallWatch {
        StallWatch { last: now, ..StallWatch::default() }
    }

    /// The thread sees the clock at `now`; true if a stall ended here.
    #[inline]
    pub fn seen(&mut self, now: Nanos) -> bool {
        let from = self.last.max(self.until);
        self.last = now;
        self.until = 0;
        if now < from || now - from < STALL_MIN_NS {
            return false;
        }
        if self.episodes.len() < MAX_EPISODES {
            self.episodes.push(Episode { start_ns: from, dur_ns: now - from, backlog_pkts: 0, drops: 0 });
            self.open = true;
        } else {
            self.lost += 1;
        }
        true
    }

    /// The thread asks to sleep until `deadline` (it may wake earlier).
    #[inline]
    pub fn sleeping_until(&mut self, deadline: Nanos) {
        self.until = deadline;
    }

    /// Packets read (and the queue's drops meanwhile) in one read batch;
    /// `drained`: the batch ended because the device was empty.
    #[inline]
    pub fn read(&mut self, pkts: u64, drops: u64, drained: bool) {
        if !self.open {
            return;
        }
        if let Some(e) = self.episodes.last_mut() {
            e.backlog_pkts += pkts;
            e.drops += drops;
        }
        self.open = !drained;
    }
}

/// Longest episodes listed in the result.
pub const LONGEST_LISTED: usize = 10;

/// One listed episode of the result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StallOut {
    pub direction: String,
    /// from the scenario's t = 0 (s)
    pub start_s: f64,
    pub ms: f64,
    /// the other direction's thread stalled at the same time: the machine paused, not one thread
    pub both: bool,
    pub backlog_pkts: u64,
    pub drops: u64,
}

/// The run's stalls (`meta.lateness.stalls`): counts over every episode of
/// every thread, and the longest [`LONGEST_LISTED`].
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stalls {
    /// episodes are recorded from this length (ms)
    pub min_ms: f64,
    pub count: u64,
    pub over_2ms: u64,
    pub over_5ms: u64,
    pub over_10ms: u64,
    pub max_ms: Option<f64>,
    /// episodes that overlap one of the other thread's
    pub both_directions: u64,
    /// wire packets found waiting after the episodes, and the queue's drops while they were read
    pub backlog_pkts: u64,
    pub drops: u64,
    /// episodes not kept (beyond [`MAX_EPISODES`] per thread)
    pub lost: u64,
    /// the verdict: a stall this long matters (ms; [`Scales::threshold`]), what set it, and how many reached it
    pub threshold_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_from: Option<String>,
    pub over_threshold: u64,
    pub longest: Vec<StallOut>,
}

/// Summarize the threads' episodes, (direction, episodes, lost), and judge them against `scales`.
pub fn summarize(dirs: &[(&str, &[Episode], u64)], scales: &Scales) -> Stalls {
    let (threshold, from) = scales.threshold();
    let ms = |ns: Nanos| ns as f64 / 1e6;
    let mut all: Vec<StallOut> = Vec::new();
    for (i, (d, eps, _)) in dirs.iter().enumerate() {
        for e in eps.iter() {
            let both = dirs.iter().enumerate().filter(|(j, _)| *j != i).any(|(_, (_, o, _))| {
                o.iter().any(|x| x.start_ns < e.end_ns() && e.start_ns < x.end_ns())
            });
            all.push(StallOut { direction: d.to_string(), start_s: e.start_ns as f64 / 1e9, ms: ms(e.dur_ns), both,
                backlog_pkts: e.backlog_pkts, drops: e.drops });
        }
    }
    let over = |t: f64| all.iter().filter(|e| e.ms >= t).count() as u64;
    let mut s = Stalls {
        min_ms: ms(STALL_MIN_NS),
        count: all.len() as u64,
        over_2ms: over(2.0),
        over_5ms: over(5.0),
        over_10ms: over(10.0),
        max_ms: all.iter().map(|e| e.ms).reduce(f64::max),
        both_directions: all.iter().filter(|e| e.both).count() as u64,
        backlog_pkts: all.iter().map(|e| e.backlog_pkts).sum(),
        drops: all.iter().map(|e| e.drops).sum(),
        lost: dirs.iter().map(|d| d.2).sum(),
        threshold_ms: ms(threshold),
        threshold_from: from,
        over_threshold: dirs.iter().flat_map(|d| d.1.iter()).filter(|e| e.dur_ns >= threshold).count() as u64,
        longest: Vec::new(),
    };
    all.sort_by(|a, b| b.ms.total_cmp(&a.ms).then(a.start_s.total_cmp(&b.start_s)));
    all.truncate(LONGEST_LISTED);
    s.longest = all;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: Nanos = 1_000_000;
    const US: Nanos = 1_000;

    #[test]
    fn a_busy_thread_that_sees_the_clock_every_few_microseconds_has_no_stall() {
        let mut w = StallWatch::new(0);
        for i in 1..10_000 {
            assert!(!w.seen(i * 30 * US));
        }
        assert!(w.episodes.is_empty());
    }

    #[test]
    fn a_gap_between_two_observations_without_a_sleep_is_a_stall_of_its_length() {
        let mut w = StallWatch::new(0);
        w.seen(100 * US);
        assert!(w.seen(100 * US + 8 * MS));
        assert_eq!(w.episodes, [Episode { start_ns: 100 * US, dur_ns: 8 * MS, backlog_pkts: 0, drops: 0 }]);
    }

    #[test]
    fn a_sleep_that_ends_on_time_or_a_little_late_is_no_stall_but_one_that_ends_far_past_its_deadline_is() {
        let mut w = StallWatch::new(0);
        w.sleeping_until(1 * MS);
        assert!(!w.seen(1 * MS + 30 * US)); // the hrtimer's usual 30 µs
        w.sleeping_until(2 * MS);
        assert!(!w.seen(1 * MS + 500 * US)); // woken early by an arrival
        w.sleeping_until(2 * MS + 500 * US);
        assert!(w.seen(7 * MS + 500 * US)); // 5 ms past the deadline: a VM pause
        assert_eq!(w.episodes, [Episode { start_ns: 2 * MS + 500 * US, dur_ns: 5 * MS, backlog_pkts: 0, drops: 0 }]);
    }

    #[test]
    fn a_stall_just_under_the_minimum_is_not_recorded_and_one_at_it_is() {
        let mut w = StallWatch::new(0);
        assert!(!w.seen(STALL_MIN_NS - 1));
        assert!(w.seen(2 * STALL_MIN_NS - 1));
        assert_eq!(w.episodes.len(), 1);
        assert_eq!(w.episodes[0].dur_ns, STALL_MIN_NS);
    }

    #[test]
    fn the_backlog_read_after_a_stall_is_charged_to_it_until_the_device_is_empty_and_no_further() {
        let mut w = StallWatch::new(0);
        w.read(5, 0, true); // no stall yet: nothing charged
        w.seen(10 * MS);
        w.read(64, 0, false);
        w.read(33, 12, true);
        w.read(7, 1, true); // after the device ran empty: normal traffic
        assert_eq!((w.episodes[0].backlog_pkts, w.episodes[0].drops), (97, 12));
    }

    fn scales_04() -> Scales {
        // scenarios/fidelity/04: 100 Mbit/s, 0.25 BDP of 10 ms = 31 250 B, base RTT 10 ms
        Scales { drains: vec![("the down buffer's drain time".into(), Scales::drain_ns(31_250, 100_000_000).unwrap())], min_rtt_ns: Some(10 * MS) }
    }

    #[test]
    fn a_buffers_drain_time_is_its_bytes_at_the_link_rate() {
        assert_eq!(Scales::drain_ns(31_250, 100_000_000), Some(2_500_000));
        assert_eq!(Scales::drain_ns(100_000, 20_000_000), Some(40_000_000)); // 03: 1 BDP at 20 Mbit/s
        assert_eq!(Scales::drain_ns(20 * PKT_BYTES, 1_000_000_000), Some(240_000));
        assert_eq!(Scales::drain_ns(1, 0), None);
    }

    #[test]
    fn the_threshold_is_the_shortest_time_scale_and_never_below_the_floor() {
        assert_eq!(scales_04().threshold(), (2_500_000, Some("the down buffer's drain time".into())));
        let deep = Scales { drains: vec![("the down buffer's drain time".into(), 200 * MS)], min_rtt_ns: Some(40 * MS) };
        assert_eq!(deep.threshold(), (40 * MS, Some("a full packet's round trip".into())));
        let fast = Scales { drains: vec![("the down buffer's drain time".into(), 240 * US)], min_rtt_ns: Some(10 * MS) };
        assert_eq!(fast.threshold(), (THRESHOLD_FLOOR_NS, Some("the floor (the down buffer's drain time is shorter)".into())));
        assert_eq!(Scales::default().threshold(), (2 * MS, None));
    }

    #[test]
    fn the_summary_counts_every_thread_lists_the_longest_first_and_tells_a_machine_pause_from_one_thread() {
        let e = |start_ns, dur_ns, backlog_pkts, drops| Episode { start_ns, dur_ns, backlog_pkts, drops };
        let down = [e(1_000 * MS, 8 * MS, 45, 24), e(2_000 * MS, 1_500 * US, 9, 0), e(3_000 * MS, 5 * MS, 0, 0)];
        let up = [e(3_002 * MS, 2 * MS, 20, 0), e(4_000 * MS, 12 * MS, 30, 0)];
        let s = summarize(&[("down", &down, 0), ("up", &up, 2)], &scales_04());
        assert_eq!((s.count, s.over_2ms, s.over_5ms, s.over_10ms, s.max_ms), (5, 4, 3, 1, Some(12.0)));
        assert_eq!((s.both_directions, s.backlog_pkts, s.drops, s.lost), (2, 104, 24, 2));
        assert_eq!((s.threshold_ms, s.over_threshold), (2.5, 3));
        let order: Vec<(&str, f64, bool)> = s.longest.iter().map(|x| (x.direction.as_str(), x.ms, x.both)).collect();
        assert_eq!(order, [("up", 12.0, false), ("down", 8.0, false), ("down", 5.0, true), ("up", 2.0, true), ("down", 1.5, false)]);
        assert_eq!(s.longest[1], StallOut { direction: "down".into(), start_s: 1.0, ms: 8.0, both: false, backlog_pkts: 45, drops: 24 });
    }

    #[test]
    fn a_run_without_stalls_has_zero_counts_and_no_maximum() {
        let s = summarize(&[("down", &[], 0), ("up", &[], 0)], &scales_04());
        assert_eq!((s.count, s.over_threshold, s.max_ms, s.longest.len()), (0, 0, None, 0));
    }

    #[test]
    fn episodes_beyond_the_bound_are_counted_not_kept() {
        let mut w = StallWatch::new(0);
        let mut t = 0;
        for _ in 0..MAX_EPISODES + 3 {
            t += 2 * MS;
            w.seen(t);
        }
        assert_eq!((w.episodes.len(), w.lost), (MAX_EPISODES, 3));
    }
}
