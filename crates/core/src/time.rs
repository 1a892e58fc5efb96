//! Time is an integer number of nanoseconds since an arbitrary origin
//! (the start of a simulation, or the emulator's start instant).

/// Nanoseconds. Virtual in the simulator, monotonic-clock based in the emulator.
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_SEC: Nanos = 1_000_000_000;

/// Microseconds from nanoseconds (Linux keeps most TCP times in µs).
#[inline]
pub fn to_us(t: Nanos) -> u64 {
    t / NS_PER_US
}

/// Serialization time of `bytes` at `rate_bps` bit/s, rounded up to a whole nanosecond.
#[inline]
pub fn tx_time(bytes: u64, rate_bps: u64) -> Nanos {
    debug_assert!(rate_bps > 0);
    if bytes < 1 << 30 && rate_bps < 1 << 40 {
        // a packet at any real rate: the same integer in 64 bits (< 2^63 + 2^40), without a
        // 128-bit division (once per packet on every link)
        return (bytes * 8 * NS_PER_SEC + rate_bps - 1) / rate_bps;
    }
    ((bytes as u128 * 8 * NS_PER_SEC as u128 + rate_bps as u128 - 1) / rate_bps as u128) as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_1500_byte_packet_takes_120_us_at_100_mbit() {
        assert_eq!(tx_time(1500, 100_000_000), 120_000);
    }
    #[test]
    fn serialization_time_rounds_up() {
        assert_eq!(tx_time(1, 3), 2_666_666_667);
    }
}
