//! Windowed min/max filter.
//!
//! Source: Linux `lib/win_minmax.c` (Kathleen Nichols' algorithm, v6.x), used
//! by BBR for the max-bandwidth filter (window in round trips) and by TCP for
//! `tcp_min_rtt` (window in time, `sysctl_tcp_min_rtt_wlen` = 300 s).
//!
//! Model: keep the best, 2nd best and 3rd best samples with their times, each
//! from a different sub-window of a third of the window, so that when the best
//! expires a good replacement is already there. O(1) per sample, 3 slots.
//!
//! The "time" is any monotonic u64: ns, µs or a round-trip count.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    fn reset(&mut self, t: u64, v: u64) -> u64 {
        let s = Sample { t, v };
        self.s = [s; 3];
        v
    }

    /// `minmax_subwin_update`: a sample `val` that is not a new best.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // The best expired: promote 2nd and 3rd, and if those expired too, start over.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a 2nd choice: take one.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a 3rd choice: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }

    fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    fn running_min(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if val.v <= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

/// Windowed maximum (`minmax_running_max`). Starts at 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct MaxFilter {
    m: MinMax,
}

impl MaxFilter {
    /// Feed sample `v` taken at `t`; returns the max over the last `win`.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        self.m.running_max(win, t, v)
    }
    /// Current maximum (`minmax_get`).
    pub fn get(&self) -> u64 {
        self.m.s[0].v
    }
    /// Forget everything and start at `v` (`minmax_reset`).
    pub fn reset(&mut self, t: u64, v: u64) {
        self.m.reset(t, v);
    }
}

/// Windowed minimum (`minmax_running_min`). Starts at u64::MAX after reset.
#[derive(Debug, Clone, Copy)]
pub struct MinFilter {
    m: MinMax,
}

impl Default for MinFilter {
    fn default() -> Self {
        let mut m = MinMax::default();
        m.reset(0, u64::MAX);
        MinFilter { m }
    }
}

impl MinFilter {
    /// Feed sample `v` taken at `t`; returns the min over the last `win`.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        self.m.running_min(win, t, v)
    }
    pub fn get(&self) -> u64 {
        self.m.s[0].v
    }
    pub fn reset(&mut self, t: u64, v: u64) {
        self.m.reset(t, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_holds_the_best_sample_within_the_window() {
        let mut f = MaxFilter::default();
        assert_eq!(f.update(10, 0, 100), 100);
        assert_eq!(f.update(10, 1, 50), 100);
        assert_eq!(f.update(10, 5, 70), 100);
        assert_eq!(f.update(10, 10, 60), 100);
    }

    #[test]
    fn max_expires_and_falls_back_to_the_runner_up() {
        let mut f = MaxFilter::default();
        f.update(10, 0, 100);
        f.update(10, 3, 80); // 2nd choice after a quarter window
        f.update(10, 6, 60); // 3rd choice after half a window
        // At t=11 the 100 (t=0) has expired: the 80 from t=3 takes over.
        assert_eq!(f.update(10, 11, 10), 80);
        // At t=14 the 80 (t=3) has expired too: the 60 from t=6.
        assert_eq!(f.update(10, 14, 10), 60);
    }

    #[test]
    fn a_new_best_resets_all_three_slots() {
        let mut f = MaxFilter::default();
        f.update(10, 0, 10);
        f.update(10, 1, 20);
        assert_eq!(f.get(), 20);
        assert_eq!(f.update(10, 12, 5), 5); // 20 at t=1 expired, everything expired
    }

    #[test]
    fn min_tracks_the_smallest_sample() {
        let mut f = MinFilter::default();
        assert_eq!(f.update(300, 0, 50), 50);
        assert_eq!(f.update(300, 10, 40), 40);
        assert_eq!(f.update(300, 20, 45), 40);
        assert_eq!(f.update(300, 400, 45), 45);
    }
}
