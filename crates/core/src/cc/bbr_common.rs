//! What BBR v1 and BBRv3 share: the fixed-point units and the arithmetic
//! that turns a bandwidth estimate into a pacing rate and a BDP.
//!
//! Source: Linux v6.x `net/ipv4/tcp_bbr.c` (v1: `BW_SCALE`, `BBR_SCALE`,
//! `bbr_rate_bytes_per_sec`, `bbr_bdp`, `bbr_init_pacing_rate_from_rtt`)
//! and the BBRv3 tree's `tcp_bbr.c` (google/bbr, `v3`), which keeps these
//! lines unchanged. Each version's own file ([`super::bbr`],
//! [`super::bbr3`]) keeps what differs: the state machines, the TSO goal,
//! the quantization budget, the ACK-aggregation window, and how a result is
//! clamped into its field.
//!
//! Model: bandwidth is packets per µs in fixed point `<< BW_SCALE` (24
//! bits, so a 1-packet-per-second flow is still 16 units); gains are in
//! 1/256 (`BBR_UNIT` = 1.0). A pacing rate is bw · mss · gain, less a 1 %
//! margin, in bytes/s; a BDP is bw · min_rtt · gain, rounded up, in packets.
//!
//! Constants, with units and reasons:
//! - [`BW_SCALE`] = 24: bw fixed point (packets/µs << 24).
//! - [`BBR_SCALE`] = 8: gain fixed point (1/256).
//! - [`PACING_MARGIN_PERCENT`] = 1 %: pace slightly below the estimate so a
//!   standing queue drains over time.
//! - [`GSO_LEGACY_MAX_SIZE`] = 65 536 bytes, [`MAX_TCP_HEADER`] = 192 bytes
//!   (L1_CACHE_ALIGN(128 + MAX_HEADER 32) on this lab's kernel config): the
//!   largest TSO burst both versions budget for.
//! - [`MIN_RTT_WIN_SEC`] = 10 s: the min_rtt filter window (v1; v3's
//!   min_rtt is still 10 s, its PROBE_RTT interval 5 s).
//! - [`PROBE_RTT_MODE_MS`] = 200 ms: the least time in PROBE_RTT (~2 % of
//!   the 10 s window).

use crate::time::{to_us, Nanos};

/// Bandwidth fixed point: bw is in packets per µs, shifted left by this.
pub const BW_SCALE: u32 = 24;
/// 1.0 packet/µs in bw units.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain fixed point: gains are in 1/256.
pub const BBR_SCALE: u32 = 8;
/// A gain of 1.0.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// Pace this many percent below the bandwidth estimate.
pub const PACING_MARGIN_PERCENT: u64 = 1;
/// Largest GSO burst BBR sizes for, bytes (`GSO_LEGACY_MAX_SIZE`).
pub const GSO_LEGACY_MAX_SIZE: u64 = 65536;
/// `MAX_TCP_HEADER` of this lab's kernel config, bytes.
pub const MAX_TCP_HEADER: u64 = 192;
/// min_rtt filter window, seconds.
pub const MIN_RTT_WIN_SEC: u32 = 10;
/// Least time at the minimum cwnd in PROBE_RTT, ms.
pub const PROBE_RTT_MODE_MS: u32 = 200;

/// `bbr_rate_bytes_per_sec`: `rate` (packets/µs << 24) · `mss` · `gain`
/// (1/256), less `margin` percent, in bytes/s; the kernel's order of
/// operations, in 128 bits so nothing wraps.
pub fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32, margin: u64) -> u64 {
    let mut r = rate as u128 * mss as u128 * gain as u128;
    r >>= BBR_SCALE;
    r *= (1_000_000 / 100 * (100 - margin)) as u128;
    (r >> BW_SCALE).min(u64::MAX as u128) as u64
}

/// `bbr_bdp` once min_rtt is known: ceil(bw · min_rtt_us · gain), packets,
/// before the caller clamps it into a u32 (rounded up, as the kernel does
/// to avoid a shrinking loop).
pub fn bdp(bw: u64, min_rtt_us: u32, gain: u32) -> u128 {
    let w = bw as u128 * min_rtt_us as u128;
    ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)
}

/// `bbr_init_pacing_rate_from_rtt`'s bandwidth: cwnd over srtt (1 ms
/// before any RTT sample, `srtt` = 0), packets/µs << 24.
pub fn init_bw(cwnd: u32, srtt: Nanos) -> u64 {
    let rtt_us = if srtt != 0 { to_us(srtt).max(1) } else { 1000 };
    cwnd as u64 * BW_UNIT / rtt_us
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_packets_a_second_at_gain_one_is_14_3_mb_per_second_less_the_margin() {
        // 10 000 pkt/s = 0.01 pkt/µs = 167 772 units; 1448 B: 14.48 MB/s, 1 % less, fixed-point rounding
        let bw = BW_UNIT / 100;
        assert_eq!(rate_bytes_per_sec(1448, bw, BBR_UNIT, 1), 14_335_186);
        assert_eq!(rate_bytes_per_sec(1448, bw, BBR_UNIT, 0), 14_479_986);
        assert_eq!(rate_bytes_per_sec(1448, u64::MAX, u32::MAX, 1), u64::MAX, "saturates, never wraps");
    }

    #[test]
    fn the_bdp_is_rounded_up() {
        // 0.01 pkt/µs for 10 ms = 100 packets; times 2 = 200; one unit more bw rounds up to 101
        assert_eq!(bdp(BW_UNIT / 100, 10_000, BBR_UNIT), 100);
        assert_eq!(bdp(BW_UNIT / 100, 10_000, 2 * BBR_UNIT), 200);
        assert_eq!(bdp(BW_UNIT / 100 + 1, 10_000, BBR_UNIT), 101);
    }

    #[test]
    fn the_initial_rate_is_cwnd_per_srtt_or_per_ms_before_a_sample() {
        assert_eq!(init_bw(10, 10_000_000), 10 * BW_UNIT / 10_000);
        assert_eq!(init_bw(10, 0), 10 * BW_UNIT / 1000);
        assert_eq!(init_bw(10, 1), 10 * BW_UNIT, "under 1 µs counts as 1 µs");
    }
}
