//! RTT estimation and the retransmission timeout.
//!
//! Source: RFC 6298 and Linux `tcp_rtt_estimator` / `tcp_set_rto`
//! (`net/ipv4/tcp_input.c`, v6.x). Linux keeps srtt scaled by 8 and mdev by 4
//! in µs, and its rttvar never falls below `TCP_RTO_MIN` (200 ms) within a
//! round trip, so RTO ≈ srtt + max(4·mdev, 200 ms). Linux keeps the RTO
//! (`icsk_rto`) in jiffies: `__tcp_set_rto` is `usecs_to_jiffies(srtt + rttvar)`,
//! rounded up to the next 4 ms at HZ = 250, and so is the model's.
//!
//! Constants: `TCP_RTO_MIN` 200 ms (Linux minimum RTO), `TCP_TIMEOUT_INIT`
//! 1 s (RFC 6298 initial RTO), `TCP_RTO_MAX` 120 s (backoff cap);
//! `TCP_TIMEOUT_MIN_US` 2 ms, the floor the TLP and REO timers add before
//! their rounding to jiffies (Linux ≥ 6.6, 1c2709cfff1d "tcp: fix excessive
//! TLP and RACK timeouts from HZ rounding"; before, 2 jiffies after it: 8 ms
//! at HZ = 250).

use bloatlab_core::kernel::{usecs_to_jiffies, NS_PER_JIFFY};
use bloatlab_core::time::{Nanos, NS_PER_SEC, NS_PER_US};

pub const RTO_MIN_US: u32 = 200_000;
pub const TIMEOUT_INIT: Nanos = NS_PER_SEC;
pub const RTO_MAX: Nanos = 120 * NS_PER_SEC;
/// `TCP_TIMEOUT_MIN_US`: 2 ms (µs), see the module's notes.
pub const TIMEOUT_MIN_US: u64 = 2_000;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    /// Smoothed RTT << 3, µs (0: no sample yet).
    pub srtt_us: u32,
    /// Mean deviation << 2, µs.
    pub mdev_us: u32,
    pub mdev_max_us: u32,
    pub rttvar_us: u32,
    /// snd_nxt when the current RTT round started (bytes).
    pub rtt_seq: u64,
    /// Current RTO (before backoff).
    pub rto: Nanos,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator { srtt_us: 0, mdev_us: 0, mdev_max_us: 0, rttvar_us: 0, rtt_seq: 0, rto: TIMEOUT_INIT }
    }
}

impl RttEstimator {
    /// Feed one RTT sample `mrtt_us`; `snd_una`/`snd_nxt` in bytes.
    pub fn sample(&mut self, mrtt_us: u32, snd_una: u64, snd_nxt: u64) {
        let mut m = mrtt_us.max(1) as i64;
        let mut srtt = self.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3; // error in the estimate
            srtt += m; // srtt = 7/8 srtt + 1/8 sample
            if m < 0 {
                m = -m;
                m -= (self.mdev_us >> 2) as i64;
                if m > 0 {
                    m >>= 3; // a falling RTT moves mdev by 1/32, not 1/4
                }
            } else {
                m -= (self.mdev_us >> 2) as i64;
            }
            self.mdev_us = (self.mdev_us as i64 + m).max(0) as u32; // mdev = 3/4 mdev + 1/4 |err|
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = RTO_MIN_US;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m << 1) as u32;
            self.rttvar_us = self.mdev_us.max(RTO_MIN_US);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us = srtt.max(1) as u32;
        // tcp_set_rto (__tcp_set_rto: usecs_to_jiffies, rounded up) + tcp_bound_rto
        let rto_us = (self.srtt_us >> 3) as u64 + self.rttvar_us as u64;
        self.rto = (usecs_to_jiffies(rto_us) as Nanos * NS_PER_JIFFY).min(RTO_MAX);
    }

    pub fn srtt(&self) -> Nanos {
        (self.srtt_us >> 3) as Nanos * NS_PER_US
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::time::NS_PER_MS;

    #[test]
    fn the_first_sample_sets_srtt_and_an_rto_of_rtt_plus_200ms() {
        let mut r = RttEstimator::default();
        r.sample(100_000, 0, 10);
        assert_eq!(r.srtt(), 100 * NS_PER_MS);
        assert_eq!(r.rttvar_us, 200_000);
        assert_eq!(r.rto, 300 * NS_PER_MS);
    }

    #[test]
    fn the_rto_is_kept_in_whole_jiffies_rounded_up() {
        // __tcp_set_rto: usecs_to_jiffies(20.3 ms + 200 ms) = 56 jiffies = 224 ms
        let mut r = RttEstimator::default();
        r.sample(20_300, 0, 10);
        assert_eq!(r.rttvar_us, 200_000);
        assert_eq!(r.rto, 224 * NS_PER_MS);
    }

    #[test]
    fn srtt_moves_an_eighth_of_the_error() {
        let mut r = RttEstimator::default();
        r.sample(100_000, 0, 10);
        r.sample(180_000, 0, 10);
        assert_eq!(r.srtt_us >> 3, 110_000);
    }
}
