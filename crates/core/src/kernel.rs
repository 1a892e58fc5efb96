//! The kernel's shared arithmetic: one tick rate, one jiffies clock, and
//! wrap-safe comparisons of 32-bit stamps.
//!
//! Source: Linux v6.x `include/linux/jiffies.h` (`INITIAL_JIFFIES`,
//! `time_after`, `msecs_to_jiffies`, `usecs_to_jiffies`), `include/net/tcp.h`
//! (`tcp_jiffies32`, `before()` / `after()`), `kernel/time/time.c`.
//!
//! Model: the kernel counts time in jiffies, `HZ` per second, from
//! `INITIAL_JIFFIES` at boot; TCP keeps the low 32 bits (`tcp_jiffies32`).
//! Every control that stamps in jiffies (CUBIC's epoch, BBR's min_rtt and
//! PROBE_RTT, Westwood's sampling window) reads the same clock here, with
//! `now` = 0 at the start of the run standing for boot. Stamps are compared
//! only through [`after`], never with `<`, so the wrap five minutes in is
//! harmless, as in the kernel.
//!
//! Constants:
//! - [`HZ`] = 250: `CONFIG_HZ` of the reference kernel (Debian 12, v6.x), so
//!   one jiffy is 4 ms; the emulator's kernel is the one this must match.
//! - [`INITIAL_JIFFIES`] = (u32)(-300·HZ): Linux boots five minutes before
//!   the 32-bit wrap so that wrap bugs show early; so do we.

use crate::time::{Nanos, NS_PER_SEC};

/// Linux `CONFIG_HZ` of the reference kernel: jiffies per second.
pub const HZ: u32 = 250;
/// Length of one jiffy, ns (4 ms at HZ = 250).
pub const NS_PER_JIFFY: Nanos = NS_PER_SEC / HZ as u64;
/// Linux `INITIAL_JIFFIES`: (u32)(-300 * HZ), so that jiffies wrap 5 minutes after boot.
pub const INITIAL_JIFFIES: u32 = (-(300 * HZ as i64)) as u32;

/// `tcp_jiffies32` at `now` (ns since boot): `INITIAL_JIFFIES + now / (1 s / HZ)`, mod 2^32.
pub fn jiffies32(now: Nanos) -> u32 {
    INITIAL_JIFFIES.wrapping_add((now / NS_PER_JIFFY) as u32)
}

/// The TCP timestamp clock at `now` (ns since boot): `tcp_clock_ms`, ms
/// (`TCP_TS_HZ` = 1000), mod 2^32: the TSval a segment carries.
pub fn tcp_clock_ms(now: Nanos) -> u32 {
    (now / crate::time::NS_PER_MS) as u32
}

/// `tcp_rtt_tsopt_us` (v6.18): the RTT, µs, that a timestamp echo `tsecr`
/// (ms) received at `now` measures, in whole milliseconds; an echo of this
/// very millisecond counts `min_delta` ms (the sender's estimator passes 1,
/// the receiver's autotuning 0: no sample). None for an echo from the
/// future or older than `INT_MAX / 1000` ms.
pub fn tcp_rtt_tsopt_us(now: Nanos, tsecr: u32, min_delta: u32) -> Option<u32> {
    let mut delta = tcp_clock_ms(now).wrapping_sub(tsecr);
    if delta >= i32::MAX as u32 / 1000 {
        return None;
    }
    if delta == 0 {
        delta = min_delta;
    }
    Some(delta * 1000)
}

/// `msecs_to_jiffies`: rounds up (HZ divides 1000).
pub fn msecs_to_jiffies(ms: u32) -> u32 {
    (ms as u64 * HZ as u64).div_ceil(1000) as u32
}

/// `usecs_to_jiffies`: rounds up, saturating at `u32::MAX`.
pub fn usecs_to_jiffies(us: u64) -> u32 {
    (us * HZ as u64).div_ceil(1_000_000).min(u32::MAX as u64) as u32
}

/// `after(a, b)` / `time_after(a, b)` on 32-bit stamps: `a` is later than
/// `b` in wrapping arithmetic (`(s32)(b - a) < 0`).
pub fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `tcp_paws_check(rx_opt, 0)`: a TSval `tsval` may replace `ts_recent`
/// unless it is older (RFC 7323 §5.3); none yet, or 0 (an OS that sends 0
/// in its SYN), always gives way. (The 24-day expiry of an idle
/// `ts_recent`, `TCP_PAWS_WRAP`, is left out: no run lasts that long.)
pub fn tcp_paws_check(ts_recent: Option<u32>, tsval: u32) -> bool {
    match ts_recent {
        None | Some(0) => true,
        Some(r) => r.wrapping_sub(tsval) as i32 <= 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_rtt_counts_whole_milliseconds_and_a_same_millisecond_echo_as_min_delta() {
        // sent at 20.9 ms (TSval 20), echo back at 41.2 ms: 21 ms, though 20.3 ms passed
        assert_eq!(tcp_rtt_tsopt_us(41_200_000, 20, 1), Some(21_000));
        assert_eq!(tcp_rtt_tsopt_us(20_999_999, 20, 1), Some(1_000));
        assert_eq!(tcp_rtt_tsopt_us(20_999_999, 20, 0), Some(0));
        assert_eq!(tcp_rtt_tsopt_us(20_000_000, 21, 1), None, "an echo from the future");
    }

    #[test]
    fn jiffies_start_five_minutes_before_the_u32_wrap_and_tick_every_4_ms() {
        assert_eq!(NS_PER_JIFFY, 4_000_000);
        assert_eq!(jiffies32(0), 4_294_892_296);
        assert_eq!(jiffies32(NS_PER_JIFFY - 1), 4_294_892_296);
        assert_eq!(jiffies32(NS_PER_JIFFY), 4_294_892_297);
        assert_eq!(jiffies32(300 * NS_PER_SEC), 0);
    }

    #[test]
    fn conversions_to_jiffies_round_up_like_the_kernel() {
        assert_eq!((msecs_to_jiffies(0), msecs_to_jiffies(1), msecs_to_jiffies(200), msecs_to_jiffies(201)), (0, 1, 50, 51));
        assert_eq!((usecs_to_jiffies(0), usecs_to_jiffies(1), usecs_to_jiffies(4000), usecs_to_jiffies(4001)), (0, 1, 1, 2));
        assert_eq!(usecs_to_jiffies(u64::MAX / HZ as u64), u32::MAX);
    }

    #[test]
    fn after_holds_across_the_wrap() {
        assert!(after(jiffies32(301 * NS_PER_SEC), jiffies32(299 * NS_PER_SEC)));
        assert!(!after(jiffies32(299 * NS_PER_SEC), jiffies32(301 * NS_PER_SEC)));
        assert!(!after(7, 7));
        assert!(after(0x8000_0000, 0), "half the range away counts as later, as in the kernel");
    }
}
