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
//!
//! The timer wheel (`kernel/time/timer.c`, v6.18: `calc_wheel_index`,
//! `calc_index`, `__mod_timer`, `__run_timers`). A `timer_list` timer is
//! armed by `mod_timer(timer, jiffies + when)`, `when` in whole jiffies (the
//! callers round their µs up: `usecs_to_jiffies`). Which of TCP's timers are
//! `timer_list` timers in v6.18: the retransmit timer (`icsk_retransmit_timer`:
//! RTO, TLP, RACK's REO, zero-window probe), the delayed-ACK timer
//! (`icsk_delack_timer`), a request socket's SYN-ACK timer (`rsk_timer`) and
//! keepalive; the pacing timer (`tcp_pacing_timer`) and the compressed-SACK
//! timer (`compressed_ack_timer`) are hrtimers and fire on time. The wheel
//! puts a timer whose expiry is `delta` = `expires - base->clk` jiffies away
//! on level n, the first with `delta < LVL_START(n + 1)` = 63 · 8^n (level 0:
//! 0-62 jiffies, 1: 63-503, 2: 504-4031 ...), in the bucket of its expiry
//! rounded *up past* a multiple of the level's granularity 8^n:
//! `bucket_expiry = ((expires >> 3n) + 1) << 3n` ("a timer must not fire
//! early ... armed at the edge of a tick"), so level 0 fires one jiffy after
//! the expiry, level 1 1-8 jiffies after it, level 2 1-64. The timer softirq
//! runs a bucket at the tick that brings `jiffies` to its `bucket_expiry`.
//! [`timer_fire`] gives that tick's time. The model's jiffies tick at
//! multiples of 4 ms from `now` = 0 and `jiffies` is the 64-bit counter from
//! `INITIAL_JIFFIES` (0 mod 8, 8 mod 64, as the kernel's `jiffies_64`); the
//! kernel's phase is its uptime's, any: the events that arm the timers fall
//! at any point of the model's ticks and buckets all the same. `base->clk`
//! is taken as `jiffies` (`forward_timer_base` at every arm; while the
//! softirq runs timers it is one ahead, which moves a level boundary by one
//! jiffy: left out).

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

/// `LVL_CLK_SHIFT`: each level of the wheel is 8 (2^3) times coarser.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_SIZE` - 1 = 63: `LVL_START(1)`, the first delta (jiffies) past level 0.
const LVL_START1: u64 = 63;
/// `LVL_DEPTH` for HZ > 100: levels of the wheel.
const LVL_DEPTH: u32 = 9;

/// `calc_wheel_index`'s `bucket_expiry`: the jiffy at which a timer that
/// expires at `expires` (64-bit jiffies), armed while the base's clock
/// reads `clk`, is run: its level's bucket past the expiry. (Deltas past
/// the last level, over 6 days, are cut to it; no run lasts that long.)
pub fn wheel_bucket_expiry(expires: u64, clk: u64) -> u64 {
    let delta = expires.saturating_sub(clk);
    let mut lvl = 0;
    while lvl + 1 < LVL_DEPTH && delta >= LVL_START1 << (LVL_CLK_SHIFT * lvl) {
        lvl += 1;
    }
    let shift = LVL_CLK_SHIFT * lvl;
    ((expires >> shift) + 1) << shift
}

/// `jiffies_64` at `now` (ns since boot): `INITIAL_JIFFIES` + ticks, no wrap.
pub fn jiffies64(now: Nanos) -> u64 {
    INITIAL_JIFFIES as u64 + now / NS_PER_JIFFY
}

/// When a `timer_list` timer armed at `now` by `mod_timer(timer, jiffies +
/// when)` (`when` in jiffies) runs: the tick at which `jiffies` reaches its
/// bucket on the wheel (see the module's notes), never before `now`'s
/// jiffy + `when` + 1.
pub fn timer_fire(now: Nanos, when: u64) -> Nanos {
    let j = jiffies64(now);
    let bucket = wheel_bucket_expiry(j + when, j);
    (bucket - INITIAL_JIFFIES as u64) * NS_PER_JIFFY
}

/// `usecs_to_jiffies` of a span in ns (whole µs first, as the kernel's
/// callers hold µs), for timers armed from a span measured in ns.
pub fn nsecs_span_to_jiffies(ns: Nanos) -> u64 {
    usecs_to_jiffies(ns.div_ceil(crate::time::NS_PER_US)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    #[test]
    fn a_timer_runs_at_its_wheel_buckets_tick_one_granule_past_its_expiry() {
        // kernel/time/timer.c calc_index: expires = (expires >> LVL_SHIFT(lvl)) + 1;
        // bucket_expiry = expires << LVL_SHIFT(lvl). Level 0 (delta 0-62): one jiffy late.
        assert_eq!(wheel_bucket_expiry(1010, 1000), 1011);
        assert_eq!(wheel_bucket_expiry(1062, 1000), 1063, "delta 62: still level 0");
        // level 1 (delta 63-503), granularity 8: 1063 -> (132 + 1) * 8 = 1064; 1064 -> 1072
        assert_eq!(wheel_bucket_expiry(1063, 1000), 1064);
        assert_eq!(wheel_bucket_expiry(1064, 1000), 1072, "an expiry on a multiple of 8 moves one bucket out");
        assert_eq!(wheel_bucket_expiry(1503, 1000), 1504, "delta 503: level 1");
        // level 2 (delta 504-4031), granularity 64: 1504 -> (23 + 1) * 64 = 1536
        assert_eq!(wheel_bucket_expiry(1504, 1000), 1536);
        // level 3 (4032-32255), granularity 512
        assert_eq!(wheel_bucket_expiry(5032, 1000), 5120);
    }

    #[test]
    fn a_timer_armed_at_now_fires_on_the_tick_of_its_bucket() {
        // jiffies64(0) = INITIAL_JIFFIES = 4 294 892 296: 0 mod 8, 8 mod 64; 1 ms into it:
        assert_eq!((jiffies64(0) % 8, jiffies64(0) % 64), (0, 8));
        let t = NS_PER_MS;
        // the delayed-ACK timer's TCP_DELACK_MIN, 10 jiffies: tick 11, 44 ms
        assert_eq!(timer_fire(t, 10), 44 * NS_PER_MS);
        // a TLP of 51 jiffies (204 ms): tick 52
        assert_eq!(timer_fire(t, 51), 208 * NS_PER_MS);
        // an RTO of 100 jiffies (400 ms): level 1, expiry 100 -> bucket 104: 416 ms
        assert_eq!(timer_fire(t, 100), 416 * NS_PER_MS);
        // TCP_TIMEOUT_INIT, 250 jiffies: expiry 250 -> bucket 256, 1.024 s (the kernel's
        // second SYN through the emulator left 1.028 s after the first: its own phase)
        assert_eq!(timer_fire(t, 250), 1_024 * NS_PER_MS);
        // level 2: 1000 jiffies expire at 1008 mod 64 = 48 past a bucket: 16 jiffies later
        assert_eq!(timer_fire(t, 1000), (1000 + 16) * NS_PER_JIFFY);
        // armed in jiffy 1 (5 ms): 100 jiffies -> expiry 101 -> bucket 104, 416 ms again
        assert_eq!(timer_fire(5 * NS_PER_MS, 100), 416 * NS_PER_MS);
        // a 0-jiffy timer runs at the next tick
        assert_eq!(timer_fire(5 * NS_PER_MS, 0), 8 * NS_PER_MS);
    }

    #[test]
    fn a_span_in_ns_rounds_up_to_whole_us_then_to_jiffies() {
        assert_eq!(nsecs_span_to_jiffies(4_000_000), 1);
        assert_eq!(nsecs_span_to_jiffies(4_000_001), 2, "4000.001 us -> 4001 us -> 2 jiffies");
        assert_eq!(nsecs_span_to_jiffies(0), 0);
    }

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
