//! Mahimahi packet-delivery traces.
//!
//! Source: Mahimahi `mm-link` (src/packet/link_queue.cc, trace format in its
//! man page): a text file with one integer per line, the time in milliseconds
//! (from the start) of a *delivery opportunity*: one MTU-sized packet (1500
//! bytes) may leave then. The trace repeats with a period of its last value.
//! Mahimahi lets a smaller packet leave on a partly used opportunity and a
//! packet span opportunities; bytes of an opportunity that find the queue
//! empty are lost (a trace models capacity, not credit).
//!
//! Written once for both engines: [`Trace`] is the loader, [`Cursor`] the
//! arithmetic of using up opportunities. The simulator's link and the
//! emulator's link both serve their queue through them.
//!
//! Cursor states: `left == 0` (no opportunity in use: the next packet waits
//! for the first opportunity at or after the wire is free) and `left > 0`
//! (opportunity `k` is partly used; the next packet may use the rest, at or
//! after that opportunity's time, as long as the queue never ran empty).

use crate::time::{Nanos, NS_PER_MS};

/// Bytes one opportunity can carry (Mahimahi's PACKET_SIZE).
pub const OPPORTUNITY_BYTES: u32 = 1500;

#[derive(Debug, Clone)]
pub struct Trace {
    ms: Vec<u64>,
    period_ms: u64,
}

impl Trace {
    /// From the opportunities' times (ms, non-decreasing, last one > 0).
    pub fn new(ms: Vec<u64>) -> Result<Trace, String> {
        Trace::check(&ms)?;
        let period_ms = *ms.last().unwrap();
        Ok(Trace { ms, period_ms })
    }

    /// What a list of opportunity times must satisfy (the resolved scenario's check uses it).
    pub fn check(ms: &[u64]) -> Result<(), String> {
        match ms.last() {
            None => Err("trace is empty".into()),
            Some(_) if ms.windows(2).any(|w| w[1] < w[0]) => Err("trace times must not decrease".into()),
            Some(0) => Err("trace's last time must be > 0 ms (it is the repeat period)".into()),
            Some(_) => Ok(()),
        }
    }

    /// Parse the Mahimahi text format (blank lines ignored).
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut ms = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.is_empty() {
                continue;
            }
            ms.push(l.parse::<u64>().map_err(|_| format!("line {}: expected milliseconds, got \"{l}\"", i + 1))?);
        }
        Trace::new(ms)
    }

    /// Time of opportunity number `k` (0, 1, 2, ... over the repetitions), ns.
    pub fn time(&self, k: u64) -> Nanos {
        let n = self.ms.len() as u64;
        ((k / n) * self.period_ms + self.ms[(k % n) as usize]) * NS_PER_MS
    }

    /// The first opportunity at or after `t`, searching from `k`.
    pub fn first_at_or_after(&self, mut k: u64, t: Nanos) -> u64 {
        // Skip whole periods first.
        let n = self.ms.len() as u64;
        let per = self.period_ms * NS_PER_MS;
        if self.time(k) + per < t {
            let skip = (t - self.time(k)) / per;
            k += skip.saturating_sub(1) * n;
        }
        while self.time(k) < t {
            k += 1;
        }
        k
    }

    /// The repeat period (the last line), ns.
    pub fn period_ns(&self) -> Nanos {
        self.period_ms * NS_PER_MS
    }

    /// Average capacity in bit/s.
    pub fn mean_rate_bps(&self) -> u64 {
        (self.ms.len() as u64 * OPPORTUNITY_BYTES as u64 * 8 * 1000) / self.period_ms
    }
}

/// Where a link stands in its trace: the next opportunity and the bytes left in it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor {
    /// Index of the current (or next) opportunity over the repetitions.
    pub k: u64,
    /// Bytes left in opportunity `k` (0: none in use).
    pub left: u32,
}

impl Cursor {
    /// When the head of the queue may start if the wire is free from `t`.
    pub fn start_time(&self, tr: &Trace, t: Nanos) -> Nanos {
        if self.left == 0 {
            tr.time(tr.first_at_or_after(self.k, t))
        } else {
            t
        }
    }

    /// A packet of `len` bytes starts at `t` (as [`Cursor::start_time`] allows):
    /// it uses what is left of the current opportunity, then whole ones.
    /// Returns the time it has left the link: the time of its last opportunity
    /// (never before `t`: a partly used opportunity whose time has passed while
    /// nothing was ready to go is lost first, as [`Cursor::idle`] does).
    pub fn send(&mut self, tr: &Trace, t: Nanos, len: u32) -> Nanos {
        if self.left > 0 && tr.time(self.k) < t {
            self.left = 0;
            self.k += 1;
        }
        if self.left == 0 {
            self.k = tr.first_at_or_after(self.k, t);
            self.left = OPPORTUNITY_BYTES;
        }
        let mut need = len;
        loop {
            let used = need.min(self.left);
            need -= used;
            self.left -= used;
            if need == 0 {
                break;
            }
            self.k += 1;
            self.left = OPPORTUNITY_BYTES;
        }
        let end = tr.time(self.k);
        if self.left == 0 {
            self.k += 1;
        }
        end
    }

    /// The queue is empty at `now`: what is left of an opportunity that has
    /// already come is lost.
    pub fn idle(&mut self, tr: &Trace, now: Nanos) {
        if self.left > 0 && tr.time(self.k) <= now {
            self.left = 0;
            self.k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_packet_spans_opportunities_and_the_next_one_uses_the_rest() {
        let tr = Trace::parse("1\n2\n3\n").unwrap();
        let mut c = Cursor::default();
        // 2000 bytes at t = 0: opportunity 0 (1 ms) and 500 bytes of opportunity 1 (2 ms).
        assert_eq!(c.start_time(&tr, 0), NS_PER_MS);
        assert_eq!(c.send(&tr, NS_PER_MS, 2000), 2 * NS_PER_MS);
        assert_eq!((c.k, c.left), (1, 1000));
        // 1000 more bytes fit in the rest of opportunity 1.
        assert_eq!(c.start_time(&tr, 2 * NS_PER_MS), 2 * NS_PER_MS);
        assert_eq!(c.send(&tr, 2 * NS_PER_MS, 1000), 2 * NS_PER_MS);
        assert_eq!((c.k, c.left), (2, 0));
    }
    #[test]
    fn the_rest_of_an_opportunity_is_lost_when_the_queue_runs_empty() {
        let tr = Trace::parse("1\n2\n3\n").unwrap();
        let mut c = Cursor::default();
        c.send(&tr, NS_PER_MS, 100);
        c.idle(&tr, NS_PER_MS);
        assert_eq!((c.k, c.left), (1, 0));
        assert_eq!(c.start_time(&tr, NS_PER_MS + 1), 2 * NS_PER_MS);
    }
    #[test]
    fn opportunities_repeat_with_the_period_of_the_last_line() {
        let t = Trace::parse("1\n1\n5\n").unwrap();
        assert_eq!(t.time(0), NS_PER_MS);
        assert_eq!(t.time(2), 5 * NS_PER_MS);
        assert_eq!(t.time(3), 6 * NS_PER_MS);
        assert_eq!(t.time(5), 10 * NS_PER_MS);
    }
    #[test]
    fn the_first_opportunity_after_a_time_skips_whole_periods() {
        let t = Trace::parse("2\n4\n").unwrap();
        let k = t.first_at_or_after(0, 1001 * NS_PER_MS);
        assert_eq!(t.time(k), 1002 * NS_PER_MS);
        assert!(t.time(k - 1) < 1001 * NS_PER_MS);
    }
    #[test]
    fn one_opportunity_per_ms_is_12_mbit() {
        assert_eq!(Trace::parse("1\n").unwrap().mean_rate_bps(), 12_000_000);
    }
    #[test]
    fn a_line_that_is_not_a_number_is_an_error_naming_the_line() {
        assert_eq!(Trace::parse("1\nx\n").unwrap_err(), "line 2: expected milliseconds, got \"x\"");
    }
}
