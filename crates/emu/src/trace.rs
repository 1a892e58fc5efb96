//! Mahimahi packet-delivery traces.
//!
//! Source: Mahimahi `mm-link` (src/packet/link_queue.cc, trace format in its
//! man page): a text file with one integer per line, the time in milliseconds
//! (from the start) of a *delivery opportunity*: one MTU-sized packet (1500
//! bytes) may leave then. The trace repeats with a period of its last value.
//! Mahimahi lets a smaller packet leave on a partly used opportunity and a
//! packet span opportunities; bytes of an opportunity that find the queue
//! empty are lost (a trace models capacity, not credit).

use bloatlab_core::time::{Nanos, NS_PER_MS};

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
        if ms.is_empty() {
            return Err("trace is empty".into());
        }
        if ms.windows(2).any(|w| w[1] < w[0]) {
            return Err("trace times must not decrease".into());
        }
        let period_ms = *ms.last().unwrap();
        if period_ms == 0 {
            return Err("trace's last time must be > 0 ms (it is the repeat period)".into());
        }
        Ok(Trace { ms, period_ms })
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

    /// Average capacity in bit/s.
    pub fn mean_rate_bps(&self) -> u64 {
        (self.ms.len() as u64 * OPPORTUNITY_BYTES as u64 * 8 * 1000) / self.period_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
