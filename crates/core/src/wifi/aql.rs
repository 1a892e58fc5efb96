//! AQL, mac80211's Airtime Queue Limits: how much *expected airtime* a node
//! lets go below mac80211, into the driver's and firmware's queues, per
//! station and in all.
//!
//! Sources: Linux 6.1 (LTS), `net/mac80211/tx.c` (`ieee80211_tx_dequeue`,
//! `ieee80211_txq_airtime_check`, `ieee80211_txq_schedule_airtime_check`,
//! `ieee80211_next_txq`, `ieee80211_sta_deficit`), `net/mac80211/sta_info.c`
//! (`ieee80211_sta_update_pending_airtime`), `net/mac80211/status.c`
//! (`ieee80211_report_used_skb`), `net/mac80211/airtime.c`
//! (`ieee80211_calc_expected_tx_airtime`, `ieee80211_get_rate_duration`, the
//! HT duration table `airtime_mcs_groups`), `include/net/cfg80211.h` (the
//! default limits), `include/net/mac80211.h`
//! (`ieee80211_info_set_tx_time_est`). AQL came with Linux 5.5 ("mac80211:
//! Implement Airtime-based Queue Limit (AQL)", 7a89233a "mac80211: Use
//! Airtime-based Queue Limits (AQL) on packet dequeue", 911bde0f "mac80211:
//! Turn AQL into an NL80211_EXT_FEATURE"); the aggregation-aware estimate is
//! f01cfbaf9b29 (5.10, "mac80211: improve AQL aggregation estimation for low
//! data rates") and its fix (durations in ns, a 4 µs floor). Two rules read
//! here are 6.x's, not 5.5's: the device-wide check at the start of a
//! scheduling round, and the pending airtime counted in the station's
//! deficit.
//!
//! # Why a setting of the `airtime` design, and what it models
//! mac80211 checks AQL inside its airtime scheduler: `ieee80211_next_txq`
//! passes over a station that fails the check, and `ieee80211_tx_dequeue`
//! refuses a frame to it; a driver that does not use that scheduler
//! (ath9k's own round robin of the `fq` design, the `legacy` qdisc) never
//! meets AQL. So AQL is a setting of [`super::Design::Airtime`]
//! (`[wifi.aql]`), not a fourth design. AQL is also opt-in per driver: it
//! only applies when the driver sets `NL80211_EXT_FEATURE_AQL` (911bde0f,
//! Linux 5.5-rc), which ath10k and mt76 do and **ath9k does not**
//! (Kan Yan, the author of AQL, on linux-wireless, 2020-01-03: "AQL is
//! designed for wireless chipset that uses firmware/hardware offloading ...
//! For ath9k ... AQL is probably not needed"). So the setting models an AQL
//! driver with the model's MAC: frames that pass AQL leave the station's TXQ
//! (fq_codel) for a per-station firmware queue (FIFO, no AQM), from which the
//! firmware forms aggregates as ath9k does ([`super::mac`], at most
//! [`super::mac::HW_AGGREGATES`] in the radio); the driver pulls frames from
//! mac80211 until `ieee80211_tx_dequeue` returns nothing, as mt76's
//! `mt76_txq_send_burst` does. Without the setting (the default) the
//! `airtime` design stays ath9k's, where the two hardware aggregates are the
//! whole queue below mac80211.
//!
//! # Model in a nutshell
//! Each frame handed below mac80211 carries its expected airtime `t`
//! ([`expected_airtime_us`], stored in 4-µs units as the skb's `tx_time_est`:
//! [`stored_estimate_us`]); `t` is added to the station's pending airtime and
//! to the device's total when the frame leaves the TXQ, and subtracted when
//! the driver reports the frame done (delivered or given up), clamped at 0.
//! A station may dequeue while
//!
//! ```text
//!   pending(sta) < limit_low
//!   or (total < threshold and pending(sta) < limit_high)       [ieee80211_txq_airtime_check]
//! ```
//!
//! and a scheduling round starts only while
//!
//! ```text
//!   total < (active stations - 1) * limit_low / 2 + limit_high   [ieee80211_txq_schedule_airtime_check]
//! ```
//!
//! The airtime DRR reads a station's deficit as `deficit - pending(sta)`
//! (`ieee80211_sta_deficit`): airtime on its way counts as spent. A station
//! that fails the check goes to the tail of the schedule (`list_move_tail`);
//! when a whole pass finds none that passes, nothing is sent until a
//! completion lowers the pending airtime. All counters are per access
//! category in mac80211; the model has best effort only, so "total" is the
//! device's best-effort pending airtime (`aql_total_pending_airtime` and
//! `aql_ac_pending_airtime[BE]` are then equal).
//!
//! # Constants
//! | name | value | unit | source, reason |
//! |---|---|---|---|
//! | [`DEFAULT_LIMIT_LOW_US`] | 5000 | µs | `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L` (cfg80211.h, since 5.5): what a station may always have on its way; a little more than one 4-ms aggregate, so a busy device keeps each station's next aggregate ready |
//! | [`DEFAULT_LIMIT_HIGH_US`] | 12000 | µs | `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H` (since 5.5; the first posted series had 4000/8000): what a station may have on its way while the device is below the threshold, so that one station alone can keep the radio busy |
//! | [`DEFAULT_THRESHOLD_US`] | 24000 | µs | `IEEE80211_AQL_THRESHOLD`: the device's total above which every station is held to the low limit |
//! | [`AVG_PKT_SIZE`] | 1024 | B | airtime.c: the packet size the duration table is for |
//! | [`ETHERNET_HEADER_ALLOWANCE`] | 38 | B | airtime.c `len += 38; /* Ethernet header length */` |
//! | [`HDR_80211_LLC`] | 34 | B | what `skb->len` holds beyond the IP packet at dequeue: QoS data header 26 + LLC/SNAP 8 (the FCS is the hardware's) |
//! | [`TX_TIME_EST_UNIT_US`], [`TX_TIME_EST_MAX_US`] | 4, 4095 | µs | mac80211.h: `tx_time_est` is 10 bits in 4-µs units, clamped to 2^12 − 1 before the shift |
//! | [`MIN_ESTIMATE_US`] | 4 | µs | airtime.c `max_t(u32, duration, 4)` |
//!
//! The estimate's own numbers (36 µs + 4 µs per stream of PHY overhead, the
//! aggregation shifts at 400/250/150/70 × 1024 ns) are written beside the
//! lines that use them in [`expected_airtime_us`]. Nothing here is tuned:
//! the defaults are mac80211's, and `[wifi.aql]` can set the three limits
//! as mac80211's debugfs `aql_txq_limit` and `aql_threshold` do.
//!
//! # Differences from mac80211, on purpose
//! The model's PHY is HT20 with the long guard interval; a rate given
//! directly (not as an MCS) gets the duration of a fractional bits-per-symbol
//! (as [`super::airtime`] treats it) and 64-bit arithmetic (the kernel's u32
//! product would overflow below 6.5 Mbit/s, a rate mac80211 never sees). The
//! rate the estimate uses is the station's PHY rate (the model has no rate
//! control; mac80211 uses the last reported rate).

use super::airtime::Phy;

/// `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L`, µs.
pub const DEFAULT_LIMIT_LOW_US: u64 = 5_000;
/// `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H`, µs.
pub const DEFAULT_LIMIT_HIGH_US: u64 = 12_000;
/// `IEEE80211_AQL_THRESHOLD`, µs.
pub const DEFAULT_THRESHOLD_US: u64 = 24_000;
/// The packet size of airtime.c's duration table (`AVG_PKT_SIZE`), bytes.
pub const AVG_PKT_SIZE: u64 = 1024;
/// airtime.c `ieee80211_calc_expected_tx_airtime`: `len += 38`, bytes.
pub const ETHERNET_HEADER_ALLOWANCE: u64 = 38;
/// `skb->len` of a data frame at `ieee80211_tx_dequeue` beyond its IP
/// packet: 802.11 QoS data header 26 B + LLC/SNAP 8 B (no FCS, no crypto).
pub const HDR_80211_LLC: u64 = 34;
/// `tx_time_est` unit (mac80211.h `ieee80211_info_set_tx_time_est`), µs.
pub const TX_TIME_EST_UNIT_US: u64 = 4;
/// The clamp before the 4-µs shift: 2^12 − 1 µs.
pub const TX_TIME_EST_MAX_US: u64 = 4095;
/// The smallest estimate (`max_t(u32, duration, 4)`), µs.
pub const MIN_ESTIMATE_US: u64 = 4;

/// The three limits (`[wifi.aql]`), µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AqlConfig {
    pub limit_low_us: u64,
    pub limit_high_us: u64,
    pub threshold_us: u64,
}

impl Default for AqlConfig {
    fn default() -> Self {
        AqlConfig { limit_low_us: DEFAULT_LIMIT_LOW_US, limit_high_us: DEFAULT_LIMIT_HIGH_US, threshold_us: DEFAULT_THRESHOLD_US }
    }
}

impl AqlConfig {
    /// `ieee80211_txq_airtime_check`: may a station with `pending` µs on
    /// its way dequeue while the device has `total` µs pending?
    pub fn may_dequeue(&self, pending: u64, total: u64) -> bool {
        pending < self.limit_low_us || (total < self.threshold_us && pending < self.limit_high_us)
    }

    /// `ieee80211_txq_schedule_airtime_check`: the device-wide limit with
    /// `active` stations in the schedule, µs. The model asks only with at
    /// least one (with none the kernel's unsigned `num_txq - 1` wraps).
    pub fn round_limit(&self, active: usize) -> u64 {
        (active.max(1) as u64 - 1) * self.limit_low_us / 2 + self.limit_high_us
    }

    /// May a scheduling round start (`ieee80211_txq_schedule_start`)?
    pub fn may_start_round(&self, total: u64, active: usize) -> bool {
        total < self.round_limit(active)
    }
}

/// airtime.c `MCS_DURATION` for long GI: the data symbols of one
/// [`AVG_PKT_SIZE`]-byte packet at `bits` data bits per 4-µs symbol (all
/// streams), in µs × 1024 (≈ ns): ⌈8192·1024 / bits⌉ k-symbols × 4 µs.
/// `bits` = rate × 4 µs, given as `rate_bps`.
fn mcs_duration(rate_bps: u64) -> u64 {
    // MCS_N_KSYMS(bps) = DIV_ROUND_UP(MCS_NBITS << 10, bps), bps = rate_bps × 4 / 10^6 (exact for HT rates).
    let ksyms = ((AVG_PKT_SIZE * 8) << 10).saturating_mul(1_000_000).div_ceil((rate_bps * 4).max(1));
    ksyms * 4
}

/// `GROUP_SHIFT` of an HT group of `streams`: the table keeps durations in
/// 16 bits, shifted right by what the group's MCS 0 needs beyond 16 bits.
fn group_shift(streams: u32) -> u32 {
    // MCS 0 of the group: 26 data bits per symbol per stream (6.5 Mbit/s × streams).
    let d0 = mcs_duration(6_500_000 * streams.max(1) as u64);
    let bits = 64 - d0.leading_zeros();
    bits.saturating_sub(16)
}

/// `ieee80211_get_rate_duration` for an HT20 long-GI PHY: the table's
/// duration of one 1024-B packet (µs × 1024, with the table's rounding) and
/// the PHY overhead `36 + 4 × streams` µs.
pub fn rate_duration(phy: &Phy) -> (u64, u64) {
    let shift = group_shift(phy.streams);
    let d = ((mcs_duration(phy.rate_bps) >> shift) & 0xffff) << shift;
    (d, 36 + ((phy.streams as u64) << 2))
}

/// `ieee80211_calc_expected_tx_airtime` for a best-effort frame carrying an
/// IP packet of `ip_len` bytes to a station at `phy` (HT, `ampdu` true:
/// every access category but voice aggregates), µs.
pub fn expected_airtime_us(phy: &Phy, ip_len: u32) -> u64 {
    let len = ip_len as u64 + HDR_80211_LLC + ETHERNET_HEADER_ALLOWANCE;
    let (duration, overhead) = rate_duration(phy);
    // "Assume that HT/VHT transmission on any AC except VO will use aggregation ... an average size
    // based on the tx rate": the PHY overhead is shared by 2^agg_shift frames.
    let agg_shift = if duration > 400 * 1024 {
        1 // <= VHT20 MCS2 1S
    } else if duration > 250 * 1024 {
        2 // <= VHT20 MCS3 1S or MCS1 2S
    } else if duration > 150 * 1024 {
        3 // <= VHT20 MCS5 1S or MCS2 2S
    } else if duration > 70 * 1024 {
        4 // <= VHT20 MCS5 2S
    } else {
        5 // not HE
    };
    let d = duration * len / AVG_PKT_SIZE / 1024 + (overhead >> agg_shift);
    d.max(MIN_ESTIMATE_US)
}

/// What `ieee80211_info_set_tx_time_est` keeps of an estimate (and what
/// `ieee80211_info_get_tx_time_est` gives back at completion): at most
/// 4095 µs, rounded down to 4 µs.
pub fn stored_estimate_us(est_us: u64) -> u64 {
    est_us.min(TX_TIME_EST_MAX_US) / TX_TIME_EST_UNIT_US * TX_TIME_EST_UNIT_US
}

/// The pending airtime of one node (device): per destination station and in all, µs.
#[derive(Debug, Clone)]
pub struct Pending {
    pub cfg: AqlConfig,
    pub sta: Vec<u64>,
    pub total: u64,
}

impl Pending {
    pub fn new(cfg: AqlConfig, stations: usize) -> Pending {
        Pending { cfg, sta: vec![0; stations], total: 0 }
    }

    /// `ieee80211_txq_airtime_check` for station `s`.
    pub fn may_dequeue(&self, s: usize) -> bool {
        self.cfg.may_dequeue(self.sta[s], self.total)
    }

    /// A frame with stored estimate `t` leaves station `s`'s TXQ
    /// (`ieee80211_sta_update_pending_airtime(..., tx_completed = false)`).
    pub fn add(&mut self, s: usize, t: u64) {
        self.sta[s] += t;
        self.total += t;
    }

    /// The driver reports a frame with stored estimate `t` done
    /// (`tx_completed = true`): the station's counter is clamped at 0, as
    /// the kernel's `atomic_cmpxchg` after an underflow; the device's too
    /// (the kernel warns and clamps the per-AC counter).
    pub fn complete(&mut self, s: usize, t: u64) {
        self.sta[s] = self.sta[s].saturating_sub(t);
        self.total = self.total.saturating_sub(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcs(i: usize) -> Phy {
        Phy::ht(i as u32).unwrap()
    }

    #[test]
    fn the_defaults_are_mac80211s_5_12_and_24_ms() {
        let c = AqlConfig::default();
        assert_eq!((c.limit_low_us, c.limit_high_us, c.threshold_us), (5_000, 12_000, 24_000));
    }

    #[test]
    fn a_station_below_its_low_limit_may_dequeue_even_with_the_device_over_the_threshold() {
        let c = AqlConfig::default();
        assert!(c.may_dequeue(4_999, 30_000));
        assert!(!c.may_dequeue(5_000, 30_000));
    }

    #[test]
    fn a_station_at_its_low_limit_may_dequeue_while_the_device_is_below_the_threshold() {
        let c = AqlConfig::default();
        assert!(c.may_dequeue(5_000, 23_999));
        // At the threshold (not below it) the low limit applies.
        assert!(!c.may_dequeue(5_000, 24_000));
    }

    #[test]
    fn a_station_at_or_above_its_high_limit_may_not_dequeue() {
        let c = AqlConfig::default();
        assert!(c.may_dequeue(11_999, 0));
        assert!(!c.may_dequeue(12_000, 0));
        assert!(!c.may_dequeue(12_001, 0));
    }

    #[test]
    fn a_round_starts_below_half_a_low_limit_per_other_active_station_plus_the_high_limit() {
        let c = AqlConfig::default();
        // (3 - 1) × 5000 / 2 + 12000 = 17000 µs.
        assert_eq!(c.round_limit(3), 17_000);
        assert!(c.may_start_round(16_999, 3));
        assert!(!c.may_start_round(17_000, 3));
        assert_eq!(c.round_limit(1), 12_000);
        // With 6 stations the round limit (24500) passes the 24 ms threshold.
        assert_eq!(c.round_limit(6), 24_500);
    }

    #[test]
    fn the_duration_table_keeps_16_bits_per_group() {
        // HT20 1 stream MCS 0: ⌈8388608 / 26⌉ = 322639 k-symbols × 4 = 1290556, 21 bits: shift 5, kept as
        // 40329 << 5 = 1290528.
        assert_eq!(rate_duration(&mcs(0)), (1_290_528, 40));
        // MCS 7: ⌈8388608 / 260⌉ = 32264 × 4 = 129056 (a multiple of 32: kept whole).
        assert_eq!(rate_duration(&mcs(7)), (129_056, 40));
        // MCS 15 (2 streams, group MCS 0 = 645280, 20 bits: shift 4): ⌈8388608 / 520⌉ = 16132 × 4 = 64528.
        assert_eq!(rate_duration(&mcs(15)), (64_528, 44));
    }

    #[test]
    fn a_1500_byte_packet_is_expected_to_take_96_us_at_mcs15_192_at_mcs7_and_1952_at_mcs0() {
        // len = 1500 + 34 + 38 = 1572 B.
        // MCS 15: 64528 × 1572 / 1024 / 1024 = 96 (integer steps), + 44 >> 5 = 1 → 97 µs, stored 96.
        assert_eq!(expected_airtime_us(&mcs(15), 1500), 97);
        assert_eq!(stored_estimate_us(97), 96);
        // MCS 7: 129056 × 1572 / 1024 / 1024 = 193, + 40 >> 4 = 2 → 195 µs, stored 192.
        assert_eq!(expected_airtime_us(&mcs(7), 1500), 195);
        assert_eq!(stored_estimate_us(195), 192);
        // MCS 0: 1290528 × 1572 / 1024 / 1024 = 1934, + 40 >> 1 = 20 → 1954 µs, stored 1952.
        assert_eq!(expected_airtime_us(&mcs(0), 1500), 1954);
        assert_eq!(stored_estimate_us(1954), 1952);
    }

    #[test]
    fn a_tcp_ack_is_expected_to_take_8_us_at_mcs15_and_estimates_are_clamped_to_4092_us() {
        // len = 52 + 72 = 124 B: 64528 × 124 / 1024 / 1024 = 7, + 1 = 8.
        assert_eq!(expected_airtime_us(&mcs(15), 52), 8);
        assert_eq!(stored_estimate_us(8), 8);
        assert_eq!(stored_estimate_us(3), 0);
        assert_eq!(stored_estimate_us(10_000), 4_092);
    }

    #[test]
    fn pending_airtime_goes_up_at_dequeue_and_down_at_completion_by_the_stored_estimate() {
        let mut p = Pending::new(AqlConfig::default(), 2);
        let t = stored_estimate_us(expected_airtime_us(&mcs(15), 1500));
        p.add(0, t);
        p.add(1, 1952);
        assert_eq!((p.sta[0], p.sta[1], p.total), (96, 1952, 2048));
        p.complete(0, t);
        assert_eq!((p.sta[0], p.total), (0, 1952));
        // An over-report clamps at zero instead of wrapping.
        p.complete(1, 4000);
        assert_eq!((p.sta[1], p.total), (0, 0));
    }
}
