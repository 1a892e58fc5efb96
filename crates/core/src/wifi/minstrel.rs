//! Minstrel-HT, mac80211's rate control, as Linux 6.x runs it for an HT20
//! long-GI station on an ath9k access point.
//!
//! Source: Linux 6.18 `net/mac80211/rc80211_minstrel_ht.c` and
//! `rc80211_minstrel_ht.h` (the 2021 redesign of the sampling by Felix
//! Fietkau, "mac80211: minstrel_ht: significantly redesign the rate probing
//! strategy", in mainline since 5.12, unchanged in substance through 6.18);
//! `net/mac80211/rate.c` `rate_control_fill_sta_table` (how a probe's rate
//! and the rate table make one retry chain); ath9k `init.c`
//! (`hw->max_rates = 4`, `hw->max_rate_tries = 10`). Read with the `search`
//! tool (torvalds/linux holds 3.x-4.x versions of the file; the 6.18 text is
//! the linux-6.18.y stable tree).
//!
//! # Model in a nutshell
//! Each transmitter keeps, per destination and per rate (MCS 0-7 in group 0,
//! MCS 8-15 in group 1), the MPDUs attempted and acknowledged in the current
//! 50 ms window. Every [`UPDATE_INTERVAL_NS`] (checked at a TX status) the
//! window's success ratio goes through a 2nd-order low-pass filter into
//! `prob_avg` (scaled by 2¹², [`MINSTREL_SCALE`]); each rate's expected
//! throughput is
//! ```text
//!   tp = prob' / (overhead / avg_ampdu_len + duration(rate))   prob' = min(prob, 90 %), 0 if prob < 10 %
//! ```
//! with `duration` the airtime of a 1200-byte MPDU inside a 16-MPDU A-MPDU
//! and `avg_ampdu_len` an EWMA (75 % old weight, `EWMA_LEVEL` 96/128) of the
//! A-MPDU lengths seen. The four best rates by `tp` ([`MAX_THR_RATES`]) and
//! the most robust one (`max_prob_rate`, preferring single-stream) make the
//! rate table: `[tp[0], tp[1], tp[2], prob]`, each with a try count that keeps
//! the segment within 6 ms ([`Minstrel::calc_retransmit`]). At most one frame
//! per [`SAMPLE_INTERVAL_NS`] is a *probe*: its first rate is a sample rate
//! tried once (ath9k sends a probe unaggregated, `ath_lookup_rate`; mac80211
//! ≥ 5.14 asks per frame as the frame leaves the TXQ, [`Minstrel::sample`], and
//! ath9k takes the A-MPDU's rates from its first frame, [`Minstrel::chain`]),
//! chosen in turn from three small lists (`INC`: the next faster
//! rate of each group; `JUMP`: random faster rates; `SLOW`: rates between the
//! fastest and the slowest of the table that are not yet > 95 %).
//!
//! The hardware sends an A-MPDU at the first rate of its chain; without a
//! BlockAck it retries (after a new backoff) up to the rate's count, then
//! falls back to the next rate. The TX status reports the tries per rate:
//! every try adds the A-MPDU's length to that rate's attempts, the final rate
//! gets the acknowledged MPDUs as successes.
//!
//! # Rate indices
//! As mac80211: `group << 4 | idx` (`MI_RATE`), group 0 = one stream,
//! 1 = two streams (HT20, long GI: `GROUP_IDX(streams, 0, 0)` = streams − 1).
//! Index 0 (MCS 0) doubles as "no rate" in the sample lists, as in the kernel:
//! MCS 0 is never sampled.
//!
//! # Left out
//! Short GI, HT40 and VHT groups (the model's PHY is HT20 long GI); CCK/OFDM
//! legacy groups (an HT station on 5 GHz never uses them); RTS/CTS on the
//! fallback rates (`minstrel_ht_set_rate` asks for it at offsets > 0: the try
//! counts are the RTS/CTS ones, the RTS/CTS airtime itself is not modelled);
//! A-MSDU sizing; the debugfs fixed rate.

// `minstrel_calc_retransmit`'s contention window bounds (`cw_min` 15, `cw_max` 1023) are best effort's
// aCWmin/aCWmax, the medium's own
use super::airtime::{Phy, CW_MAX, CW_MIN};
use crate::rng::{Rng, RngExt};
use crate::time::Nanos;

/// Fixed-point scale of probabilities: 2¹² = 100 % (`MINSTREL_SCALE`).
pub const MINSTREL_SCALE: u32 = 12;
/// EWMA weight of the old value, /128 (`EWMA_LEVEL`/`EWMA_DIV`): 75 %. Used
/// for the average A-MPDU length.
pub const EWMA_LEVEL: u32 = 96;
pub const EWMA_DIV: u32 = 128;
/// The success-probability filter (`minstrel_filter_avg_add`): a 2nd-order
/// Butterworth-like low pass of period 16 update intervals, coefficients
/// scaled by 2¹²: a1 = exp(−π√2/16), c2 = 2·a1·cos(√2·2π/16) = 0x1499,
/// c3 = −a1² = −0x92e, c1 = 1 − c2 − c3.
pub const AVG_COEFF2: i32 = 0x1499;
pub const AVG_COEFF3: i32 = -0x92e;
pub const AVG_COEFF1: i32 = (1 << MINSTREL_SCALE) - AVG_COEFF2 - AVG_COEFF3;
/// Best-throughput rates kept (`MAX_THR_RATES`).
pub const MAX_THR_RATES: usize = 4;
/// Rates per group slot (`MCS_GROUP_RATES`: 10, for VHT; HT uses 8).
pub const MCS_GROUP_RATES: usize = 10;
/// Columns of the random sample table (`SAMPLE_COLUMNS`).
pub const SAMPLE_COLUMNS: usize = 10;
/// Rates per sample list (`MINSTREL_SAMPLE_RATES`).
pub const SAMPLE_RATES: usize = 5;
/// At most one probe per 20 ms (`MINSTREL_SAMPLE_INTERVAL` = HZ/50).
pub const SAMPLE_INTERVAL_NS: Nanos = 20_000_000;
/// Statistics update interval (`mp->update_interval` = HZ/20): 50 ms.
pub const UPDATE_INTERVAL_NS: Nanos = 50_000_000;
/// Size of the MPDU and A-MPDU the rate durations assume (`AVG_PKT_SIZE`
/// 1200 B, `AVG_AMPDU_SIZE` 16).
pub const AVG_PKT_SIZE: u32 = 1200;
pub const AVG_AMPDU_SIZE: u32 = 16;
/// "maximum time that the hw is allowed to stay in one MRR segment": 6000 µs.
pub const SEGMENT_SIZE_US: u32 = 6000;
/// ath9k `hw->max_rate_tries` = 10 (`max_retry`) and `hw->max_rates` = 4.
pub const MAX_RETRY: u32 = 10;
pub const MAX_RATES: usize = 4;
/// Per-A-MPDU overhead at 5 GHz (`minstrel_ht_update_caps`): a 0-byte and a
/// 10-byte frame at 6 Mbit/s by `ieee80211_frame_duration` (SIFS 16 +
/// preamble 16 + SIGNAL 4 + symbols: 48 µs and 60 µs) = 108 µs; with RTS/CTS
/// two more 60 µs frames = 228 µs.
pub const OVERHEAD_US: u32 = 48 + 60;
pub const OVERHEAD_RTSCTS_US: u32 = OVERHEAD_US + 2 * 60;
/// Data bits per OFDM symbol of one HT20 stream, MCS 0-7 (Table 19-27).
pub const HT20_BPS: [u32; 8] = [26, 52, 78, 104, 156, 208, 234, 260];
/// Groups modelled: HT20 long GI with one and two streams.
pub const GROUPS: usize = 2;

/// The sample types in the order `minstrel_sample_seq` visits them.
const SAMPLE_INC: usize = 0;
const SAMPLE_JUMP: usize = 1;
const SAMPLE_SLOW: usize = 2;
const SAMPLE_SEQ: [usize; 6] = [SAMPLE_INC, SAMPLE_JUMP, SAMPLE_INC, SAMPLE_JUMP, SAMPLE_INC, SAMPLE_SLOW];

/// `MINSTREL_FRAC(val, div)`.
pub const fn frac(val: u32, div: u32) -> u32 {
    ((val as u64) << MINSTREL_SCALE).wrapping_div(div as u64) as u32
}

/// `MINSTREL_TRUNC(val)`.
pub const fn trunc(val: u32) -> u32 {
    val >> MINSTREL_SCALE
}

/// `minstrel_ewma(old, new, weight)`: old + (128 − weight)·(new − old)/128 (C integer division).
pub fn ewma(old: u32, new: u32, weight: u32) -> u32 {
    let diff = new as i64 - old as i64;
    let incr = (EWMA_DIV - weight) as i64 * diff / EWMA_DIV as i64;
    (old as i64 + incr) as u32
}

/// `minstrel_filter_avg_add(prev_1, prev_2, in)`: one step of the
/// success-probability filter; returns the new average.
pub fn filter_avg_add(prev_1: &mut u16, prev_2: &mut u16, input: i32) -> u16 {
    let mut out_1 = *prev_1 as i32;
    let out_2 = *prev_2 as i32;
    let input = if input == 0 { 1 } else { input };
    let val;
    if out_1 == 0 {
        out_1 = input;
        val = input;
    } else {
        let mut v = AVG_COEFF1 * input + AVG_COEFF2 * out_1 + AVG_COEFF3 * out_2;
        v >>= MINSTREL_SCALE;
        if v > 1 << MINSTREL_SCALE {
            v = 1 << MINSTREL_SCALE;
        }
        if v < 0 {
            v = 1;
        }
        val = v;
    }
    *prev_2 = out_1 as u16;
    *prev_1 = val as u16;
    val as u16
}

/// `MI_RATE(group, idx)`.
pub const fn mi_rate(group: usize, idx: usize) -> u16 {
    ((group << 4) | idx) as u16
}
pub const fn rate_group(r: u16) -> usize {
    (r >> 4) as usize
}
pub const fn rate_idx(r: u16) -> usize {
    (r & 0xf) as usize
}

/// The HT MCS (0-15) of a rate index.
pub fn rate_mcs(r: u16) -> u32 {
    (rate_group(r) * 8 + rate_idx(r)) as u32
}

/// The rate index of HT MCS `mcs`.
pub fn mcs_rate(mcs: u32) -> u16 {
    mi_rate(mcs as usize / 8, mcs as usize % 8)
}

/// `MCS_DURATION(streams, 0, bps)`: ns of one 1200-B MPDU of a 16-MPDU A-MPDU.
const fn mcs_duration(streams: u32, bps: u32) -> u32 {
    let nbits = AVG_PKT_SIZE * AVG_AMPDU_SIZE * 8;
    let nsyms = nbits.div_ceil(streams * bps);
    nsyms * 4000 / AVG_AMPDU_SIZE
}

/// `GROUP_SHIFT`: the table keeps durations >> shift in 16 bits.
const fn group_shift(streams: u32) -> u32 {
    let d = mcs_duration(streams, HT20_BPS[0]);
    let s = 16i32 - d.leading_zeros() as i32;
    if s > 0 {
        s as u32
    } else {
        0
    }
}

/// `minstrel_get_duration(index)`, ns (with the table's rounding).
pub fn duration(r: u16) -> u32 {
    let streams = rate_group(r) as u32 + 1;
    let idx = rate_idx(r);
    if idx >= 8 {
        return u32::MAX;
    }
    let s = group_shift(streams);
    (mcs_duration(streams, HT20_BPS[idx]) >> s) << s
}

/// Per-rate statistics (`struct minstrel_rate_stats`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RateStats {
    pub attempts: u32,
    pub last_attempts: u32,
    pub success: u32,
    pub last_success: u32,
    pub att_hist: u64,
    pub succ_hist: u64,
    /// Filtered success probability, /2¹².
    pub prob_avg: u16,
    pub prob_avg_1: u16,
    pub retry_count: u32,
    pub retry_count_rtscts: u32,
    pub retry_updated: bool,
}

#[derive(Debug, Clone, Default)]
struct GroupData {
    index: usize,
    column: usize,
    max_group_tp_rate: [u16; MAX_THR_RATES],
    max_group_prob_rate: u16,
    rates: [RateStats; MCS_GROUP_RATES],
}

/// The random sample table (`sample_table`, filled once at module init by
/// `init_sample_table`): each column a permutation of 0..10.
#[derive(Debug, Clone, Copy)]
pub struct SampleTable(pub [[u8; MCS_GROUP_RATES]; SAMPLE_COLUMNS]);

impl SampleTable {
    /// `init_sample_table` with random bytes from `rng`.
    pub fn new(rng: &mut Rng) -> SampleTable {
        let mut t = [[0xffu8; MCS_GROUP_RATES]; SAMPLE_COLUMNS];
        for col in t.iter_mut() {
            for i in 0..MCS_GROUP_RATES {
                let rnd: u8 = rng.gen();
                let mut new_idx = (i + rnd as usize) % MCS_GROUP_RATES;
                while col[new_idx] != 0xff {
                    new_idx = (new_idx + 1) % MCS_GROUP_RATES;
                }
                col[new_idx] = i as u8;
            }
        }
        SampleTable(t)
    }

    /// The table one boot of the model uses (fixed, so a run is a function of its seed).
    pub fn boot() -> SampleTable {
        SampleTable::new(&mut crate::rng::stream(0x6d69_6e73_7472_656c, 0))
    }
}

/// One entry of a retry chain: a rate index and its tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Series {
    pub rate: u16,
    pub count: u32,
}

/// The rates one A-MPDU is sent with (`info->control.rates` after
/// `rate_control_fill_sta_table`), and whether it is a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateChain {
    pub series: [Series; MAX_RATES],
    pub probe: bool,
}

impl RateChain {
    pub fn mcs(&self, i: usize) -> u32 {
        rate_mcs(self.series[i].rate)
    }

    pub fn phy(&self, i: usize) -> Phy {
        Phy::ht(self.mcs(i)).expect("a chain holds HT MCS 0..15")
    }

    /// Series `i` goes out behind RTS/CTS: `minstrel_ht_set_rate` sets
    /// `IEEE80211_TX_RC_USE_RTS_CTS` on every entry but the first ("for fallback
    /// rates, to increase chances of getting through"; also on multi-stream rates of
    /// a station in dynamic SMPS, which no station here is), and ath9k's
    /// `ath_buf_set_rate` turns the flag into `ATH9K_RATESERIES_RTS_CTS` for that
    /// series. A probe's first entry is the sample rate, without the flag
    /// (`minstrel_ht_get_rate`); its entries 1-3 come from the rate table, with it.
    pub fn rts(&self, i: usize) -> bool {
        i > 0
    }

    /// ath9k `ath_lookup_rate`: "the lowest frame length among the rate
    /// series that will have a 4ms transmit duration"; 0 for a probe ("if
    /// rate selected is a probe rate then avoid aggregation of this packet"):
    /// a probe goes out as a single MPDU.
    pub fn aggr_limit(&self) -> u32 {
        if self.probe {
            return 0;
        }
        (0..MAX_RATES).filter(|&i| self.series[i].count > 0).map(|i| self.phy(i).aggr_limit()).min().unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct SampleCategory {
    sample_group: usize,
    sample_rates: [u16; SAMPLE_RATES],
}

/// The Minstrel-HT state of one transmitter towards one receiver
/// (`struct minstrel_ht_sta`).
#[derive(Debug, Clone)]
pub struct Minstrel {
    supported: [u16; GROUPS],
    groups: [GroupData; GROUPS],
    ampdu_len: u32,
    ampdu_packets: u32,
    /// EWMA of the A-MPDU length, /2¹².
    pub avg_ampdu_len: u32,
    pub max_tp_rate: [u16; MAX_THR_RATES],
    pub max_prob_rate: u16,
    last_stats_update: Nanos,
    pub total_packets: u64,
    pub sample_packets: u64,
    sample_seq: usize,
    sample_time: Nanos,
    sample: [SampleCategory; 3],
    /// The rate table (`ieee80211_sta_rates`): [tp[0], tp[1], tp[2], prob].
    pub table: [Series; MAX_RATES],
    sample_table: SampleTable,
}

impl Minstrel {
    /// A station supporting HT MCS 0..=`max_mcs` (MCS 8-15 need two streams),
    /// associated at `now` (`minstrel_ht_update_caps`: the first statistics
    /// update and rate table).
    pub fn new(max_mcs: u32, now: Nanos, sample_table: SampleTable) -> Minstrel {
        let mut supported = [0u16; GROUPS];
        supported[0] = ((1u32 << (max_mcs.min(7) + 1)) - 1) as u16;
        if max_mcs >= 8 {
            supported[1] = ((1u32 << (max_mcs.min(15) - 8 + 1)) - 1) as u16;
        }
        let mut m = Minstrel {
            supported,
            groups: Default::default(),
            ampdu_len: 0,
            ampdu_packets: 0,
            avg_ampdu_len: frac(1, 1),
            max_tp_rate: [0; MAX_THR_RATES],
            max_prob_rate: 0,
            last_stats_update: now,
            total_packets: 0,
            sample_packets: 0,
            sample_seq: 0,
            sample_time: now,
            sample: Default::default(),
            table: [Series { rate: 0, count: 0 }; MAX_RATES],
            sample_table,
        };
        m.update_stats(now);
        m.update_rates();
        m
    }

    pub fn stats(&self, r: u16) -> &RateStats {
        &self.groups[rate_group(r)].rates[rate_idx(r)]
    }

    pub fn stats_mut(&mut self, r: u16) -> &mut RateStats {
        &mut self.groups[rate_group(r)].rates[rate_idx(r)]
    }

    fn prob(&self, r: u16) -> u32 {
        self.stats(r).prob_avg as u32
    }

    fn streams(group: usize) -> usize {
        group + 1
    }

    /// `minstrel_ht_avg_ampdu_len`.
    pub fn avg_ampdu_len(&self) -> u32 {
        if self.avg_ampdu_len != 0 {
            return trunc(self.avg_ampdu_len).max(1);
        }
        let d = duration(self.max_tp_rate[0]);
        if d > 400_000 {
            2
        } else if d > 250_000 {
            4
        } else if d > 150_000 {
            8
        } else {
            16
        }
    }

    /// `minstrel_ht_get_tp_avg`: expected throughput of rate `r` at success
    /// probability `prob` (/2¹²), in the kernel's unit (packets per 10 ms × 2⁰).
    pub fn tp_avg(&self, r: u16, prob: u32) -> u32 {
        if prob < frac(10, 100) {
            return 0;
        }
        let ampdu_len = self.avg_ampdu_len();
        let nsecs = 1000 * OVERHEAD_US / ampdu_len + duration(r);
        let prob = prob.min(frac(90, 100));
        // (prob * 1000000) wraps in 32 bits in C, then divides as unsigned: exact below 2^32.
        trunc(100 * ((prob as u64 * 1_000_000) / nsecs as u64) as u32)
    }

    /// `minstrel_ht_sort_best_tp_rates`: insert `index` into the sorted list.
    fn sort_best_tp_rates(&self, index: u16, tp_list: &mut [u16; MAX_THR_RATES]) {
        let cur_prob = self.prob(index);
        let cur_tp = self.tp_avg(index, cur_prob);
        let mut j = MAX_THR_RATES;
        while j > 0 {
            let tmp_prob = self.prob(tp_list[j - 1]);
            let tmp_tp = self.tp_avg(tp_list[j - 1], tmp_prob);
            if cur_tp < tmp_tp || (cur_tp == tmp_tp && cur_prob <= tmp_prob) {
                break;
            }
            j -= 1;
        }
        if j < MAX_THR_RATES - 1 {
            tp_list.copy_within(j..MAX_THR_RATES - 1, j + 1);
        }
        if j < MAX_THR_RATES {
            tp_list[j] = index;
        }
    }

    /// `minstrel_ht_set_best_prob_rate`.
    fn set_best_prob_rate(&mut self, dest: &mut u16, index: u16) {
        let g = rate_group(index);
        let mrs_prob = self.prob(index);
        let tmp_prob = self.prob(*dest);
        let tmp_tp = self.tp_avg(*dest, tmp_prob);
        let max_tp_prob = self.prob(self.max_tp_rate[0]);
        // skip rates faster than max tp rate with lower prob
        if duration(self.max_tp_rate[0]) > duration(index) && mrs_prob < max_tp_prob {
            return;
        }
        let max_gpr = self.groups[g].max_group_prob_rate;
        let max_gpr_prob = self.prob(max_gpr);
        if mrs_prob > frac(75, 100) {
            let cur_tp = self.tp_avg(index, mrs_prob);
            if cur_tp > tmp_tp {
                *dest = index;
            }
            let max_gpr_tp = self.tp_avg(max_gpr, max_gpr_prob);
            if cur_tp > max_gpr_tp {
                self.groups[g].max_group_prob_rate = index;
            }
        } else {
            if mrs_prob > tmp_prob {
                *dest = index;
            }
            if mrs_prob > max_gpr_prob {
                self.groups[g].max_group_prob_rate = index;
            }
        }
    }

    /// `minstrel_ht_prob_rate_reduce_streams`.
    fn prob_rate_reduce_streams(&mut self) {
        let tmp_max_streams = Self::streams(rate_group(self.max_tp_rate[0]));
        let mut tmp_tp = 0;
        for g in 0..GROUPS {
            if self.supported[g] == 0 {
                continue;
            }
            let r = self.groups[g].max_group_prob_rate;
            let tp = self.tp_avg(r, self.prob(r));
            if tmp_tp < tp && Self::streams(g) < tmp_max_streams {
                self.max_prob_rate = r;
                tmp_tp = tp;
            }
        }
    }

    /// `minstrel_ht_calc_rate_stats`: close the window of one rate.
    fn calc_rate_stats(mrs: &mut RateStats) {
        if mrs.attempts > 0 {
            let cur_prob = frac(mrs.success, mrs.attempts);
            filter_avg_add(&mut mrs.prob_avg, &mut mrs.prob_avg_1, cur_prob as i32);
            mrs.att_hist += mrs.attempts as u64;
            mrs.succ_hist += mrs.success as u64;
        }
        mrs.last_success = mrs.success;
        mrs.last_attempts = mrs.attempts;
        mrs.success = 0;
        mrs.attempts = 0;
    }

    /// `minstrel_ht_update_stats`: close the window, re-rank the rates,
    /// refill the sample lists.
    pub fn update_stats(&mut self, now: Nanos) {
        if self.ampdu_packets > 0 {
            self.avg_ampdu_len = ewma(self.avg_ampdu_len, frac(self.ampdu_len, self.ampdu_packets), EWMA_LEVEL);
            self.ampdu_len = 0;
            self.ampdu_packets = 0;
        }
        // An HT station on 5 GHz: no CCK/OFDM groups; the lists start at MCS 0.
        let mut tmp_mcs_tp_rate = [mi_rate(0, 0); MAX_THR_RATES];
        let mut tmp_max_prob_rate = mi_rate(0, 0);
        for g in 0..GROUPS {
            if self.supported[g] == 0 {
                continue;
            }
            let mut tmp_group_tp_rate = [mi_rate(g, 0); MAX_THR_RATES];
            let mut last_prob = 0u16;
            for i in (0..MCS_GROUP_RATES).rev() {
                if self.supported[g] & (1 << i) == 0 {
                    continue;
                }
                let index = mi_rate(g, i);
                let mrs = &mut self.groups[g].rates[i];
                mrs.retry_updated = false;
                Self::calc_rate_stats(mrs);
                if mrs.att_hist > 0 {
                    last_prob = last_prob.max(mrs.prob_avg);
                } else {
                    mrs.prob_avg = last_prob.max(mrs.prob_avg);
                }
                let cur_prob = mrs.prob_avg as u32;
                if self.tp_avg(index, cur_prob) == 0 {
                    continue;
                }
                self.sort_best_tp_rates(index, &mut tmp_mcs_tp_rate);
                self.sort_best_tp_rates(index, &mut tmp_group_tp_rate);
            }
            self.groups[g].max_group_tp_rate = tmp_group_tp_rate;
        }
        // minstrel_ht_assign_best_tp_rates: the legacy list is MCS 0 here, which
        // the MCS list already ranks, so it never wins.
        self.max_tp_rate = tmp_mcs_tp_rate;
        for g in 0..GROUPS {
            if self.supported[g] == 0 {
                continue;
            }
            self.groups[g].max_group_prob_rate = mi_rate(g, 0);
            for i in 0..MCS_GROUP_RATES {
                if self.supported[g] & (1 << i) == 0 {
                    continue;
                }
                self.set_best_prob_rate(&mut tmp_max_prob_rate, mi_rate(g, i));
            }
        }
        self.max_prob_rate = tmp_max_prob_rate;
        self.prob_rate_reduce_streams();
        self.refill_sample_rates();
        self.last_stats_update = now;
        self.sample_time = now;
    }

    fn find_sample_rate(&self, ty: usize, idx: u16) -> bool {
        for &cur in &self.sample[ty].sample_rates {
            if cur == idx {
                return true;
            }
            if cur == 0 {
                break;
            }
        }
        false
    }

    /// `minstrel_ht_move_sample_rates`: keep the rates still valid for their list, packed.
    fn move_sample_rates(&mut self, ty: usize, fast_rate_dur: u32, slow_rate_dur: u32) -> usize {
        let rates = &mut self.sample[ty].sample_rates;
        let mut j = 0;
        for i in 0..SAMPLE_RATES {
            let cur = rates[i];
            if cur == 0 {
                continue;
            }
            let d = duration(cur);
            let valid = match ty {
                SAMPLE_SLOW => d > fast_rate_dur && d < slow_rate_dur,
                _ => d < fast_rate_dur,
            };
            if !valid {
                rates[i] = 0;
                continue;
            }
            if i == j {
                // As in 6.18: an entry already in place does not advance j, so
                // the next valid entry is moved over it.
                continue;
            }
            rates[j] = cur;
            j += 1;
            rates[i] = 0;
        }
        j
    }

    /// `minstrel_ht_group_min_rate_offset`: the first supported rate of the
    /// group faster than `max_duration`, or None.
    fn group_min_rate_offset(&self, g: usize, max_duration: u32) -> Option<usize> {
        let mut supported = self.supported[g];
        let mut i = 0;
        while i < MCS_GROUP_RATES && supported != 0 {
            if supported & 1 != 0 && duration(mi_rate(g, i)) < max_duration {
                return Some(i);
            }
            i += 1;
            supported >>= 1;
        }
        None
    }

    /// `minstrel_ht_next_inc_rate`.
    fn next_inc_rate(&mut self, fast_rate_dur: u32) -> u16 {
        let mut group = self.sample[SAMPLE_INC].sample_group;
        let mut index = 0;
        for _ in 0..GROUPS {
            group = (group + 1) % GROUPS;
            let Some(off) = self.group_min_rate_offset(group, fast_rate_dur) else { continue };
            let r = mi_rate(group, off & 0xf);
            if !self.find_sample_rate(SAMPLE_INC, r) {
                index = r;
                break;
            }
        }
        self.sample[SAMPLE_INC].sample_group = group;
        index
    }

    /// `minstrel_ht_next_group_sample_rate`.
    fn next_group_sample_rate(&mut self, g: usize, supported: u16, offset: usize) -> Option<u16> {
        let mg = &mut self.groups[g];
        for _ in 0..MCS_GROUP_RATES {
            let idx = self.sample_table.0[mg.column][mg.index] as usize;
            mg.index += 1;
            if mg.index >= MCS_GROUP_RATES {
                mg.index = 0;
                mg.column += 1;
                if mg.column >= SAMPLE_COLUMNS {
                    mg.column = 0;
                }
            }
            if idx < offset || supported & (1 << idx) == 0 {
                continue;
            }
            return Some(mi_rate(g, idx));
        }
        None
    }

    /// `minstrel_ht_next_jump_rate`.
    fn next_jump_rate(&mut self, fast_rate_dur: u32, slow_rate_dur: u32, slow_rate_ofs: &mut usize) -> u16 {
        let mut max_duration = if *slow_rate_ofs >= SAMPLE_RATES { fast_rate_dur } else { slow_rate_dur };
        let mut group = self.sample[SAMPLE_JUMP].sample_group;
        let mut found = 0;
        for _ in 0..GROUPS {
            group = (group + 1) % GROUPS;
            let supported = self.supported[group];
            if supported == 0 {
                continue;
            }
            let Some(offset) = self.group_min_rate_offset(group, max_duration) else { continue };
            let Some(index) = self.next_group_sample_rate(group, supported, offset) else { continue };
            let d = duration(index);
            let ty = if d < fast_rate_dur { SAMPLE_JUMP } else { SAMPLE_SLOW };
            if self.find_sample_rate(ty, index) {
                continue;
            }
            if ty == SAMPLE_JUMP {
                found = index;
                break;
            }
            if *slow_rate_ofs >= SAMPLE_RATES || d >= slow_rate_dur {
                continue;
            }
            // skip slow rates with high success probability
            if self.prob(index) > frac(95, 100) {
                continue;
            }
            self.sample[SAMPLE_SLOW].sample_rates[*slow_rate_ofs] = index;
            *slow_rate_ofs += 1;
            if *slow_rate_ofs >= SAMPLE_RATES {
                max_duration = fast_rate_dur;
            }
        }
        self.sample[SAMPLE_JUMP].sample_group = group;
        found
    }

    /// `minstrel_ht_refill_sample_rates`.
    fn refill_sample_rates(&mut self) {
        let prob_dur = duration(self.max_prob_rate);
        let tp_dur = duration(self.max_tp_rate[0]);
        let tp2_dur = duration(self.max_tp_rate[1]);
        let fast_rate_dur = tp_dur.min(tp2_dur).min(prob_dur);
        let slow_rate_dur = tp_dur.max(tp2_dur).max(prob_dur);
        let mut i = self.move_sample_rates(SAMPLE_INC, fast_rate_dur, slow_rate_dur);
        while i < SAMPLE_RATES {
            let r = self.next_inc_rate(tp_dur);
            self.sample[SAMPLE_INC].sample_rates[i] = r;
            if r == 0 {
                break;
            }
            i += 1;
        }
        let mut i = self.move_sample_rates(SAMPLE_JUMP, fast_rate_dur, slow_rate_dur);
        let mut j = self.move_sample_rates(SAMPLE_SLOW, fast_rate_dur, slow_rate_dur);
        while i < SAMPLE_RATES {
            let r = self.next_jump_rate(fast_rate_dur, slow_rate_dur, &mut j);
            self.sample[SAMPLE_JUMP].sample_rates[i] = r;
            if r == 0 {
                break;
            }
            i += 1;
        }
    }

    /// The sample lists (INC, JUMP, SLOW), for tests.
    pub fn sample_rates(&self) -> [[u16; SAMPLE_RATES]; 3] {
        [self.sample[0].sample_rates, self.sample[1].sample_rates, self.sample[2].sample_rates]
    }

    /// `minstrel_calc_retransmit`: how many tries of rate `r` fit in the 6 ms segment.
    pub fn calc_retransmit(&mut self, r: u16) {
        let ampdu_len = self.avg_ampdu_len();
        let mrs = self.stats_mut(r);
        if (mrs.prob_avg as u32) < frac(1, 10) {
            mrs.retry_count = 1;
            mrs.retry_count_rtscts = 1;
            return;
        }
        mrs.retry_count = 2;
        mrs.retry_count_rtscts = 2;
        mrs.retry_updated = true;
        let t_slot = 9u32;
        let tx_time_data = duration(r) * ampdu_len / 1000;
        let mut cw = CW_MIN;
        let mut ctime = (t_slot * cw) >> 1;
        cw = ((cw << 1) | 1).min(CW_MAX);
        ctime += (t_slot * cw) >> 1;
        cw = ((cw << 1) | 1).min(CW_MAX);
        let mut tx_time = ctime + 2 * (OVERHEAD_US + tx_time_data);
        let mut tx_time_rtscts = ctime + 2 * (OVERHEAD_RTSCTS_US + tx_time_data);
        loop {
            ctime = (t_slot * cw) >> 1;
            cw = ((cw << 1) | 1).min(CW_MAX);
            tx_time += ctime + OVERHEAD_US + tx_time_data;
            tx_time_rtscts += ctime + OVERHEAD_RTSCTS_US + tx_time_data;
            if tx_time_rtscts < SEGMENT_SIZE_US {
                mrs.retry_count_rtscts += 1;
            }
            if tx_time >= SEGMENT_SIZE_US {
                break;
            }
            mrs.retry_count += 1;
            if mrs.retry_count >= MAX_RETRY {
                break;
            }
        }
    }

    /// `minstrel_ht_set_rate`: one entry of the rate table.
    fn set_rate(&mut self, offset: usize, r: u16) -> Series {
        if !self.stats(r).retry_updated {
            self.calc_retransmit(r);
        }
        let mrs = self.stats(r);
        let (count, count_rts) =
            if (mrs.prob_avg as u32) < frac(20, 100) || mrs.retry_count == 0 { (2, 2) } else { (mrs.retry_count, mrs.retry_count_rtscts) };
        // Fallback rates use RTS/CTS, with its try count.
        Series { rate: r, count: if offset > 0 { count_rts } else { count } }
    }

    /// `minstrel_ht_update_rates`: [tp[0], tp[1], tp[2], prob].
    pub fn update_rates(&mut self) {
        let mut t = [Series { rate: 0, count: 0 }; MAX_RATES];
        t[0] = self.set_rate(0, self.max_tp_rate[0]);
        for (i, slot) in t.iter_mut().enumerate().take(MAX_RATES - 1).skip(1) {
            *slot = self.set_rate(i, self.max_tp_rate[i]);
        }
        t[MAX_RATES - 1] = self.set_rate(MAX_RATES - 1, self.max_prob_rate);
        self.table = t;
    }

    /// `minstrel_ht_get_rate` for one frame: the sample rate, tried once, when the
    /// frame is to be a probe (`IEEE80211_TX_CTL_RATE_CTRL_PROBE`), else None. At most
    /// one per [`SAMPLE_INTERVAL_NS`]: once `sample_time` has passed, the next frame
    /// sets it 20 ms ahead and takes the next sample type's first rate, if its list
    /// holds one. mac80211 calls it for every frame as the frame leaves the station's
    /// TXQ (`ieee80211_tx_dequeue` → `ieee80211_xmit_fast_finish` /
    /// `invoke_tx_handlers_late` → `ieee80211_tx_h_rate_ctrl`, Linux ≥ 5.14: Ryder Lee,
    /// "mac80211: call ieee80211_tx_h_rate_ctrl() when dequeue", 2021; before, as the
    /// frame entered the TXQ).
    pub fn sample(&mut self, now: Nanos) -> Option<Series> {
        if self.sample_time > now {
            return None;
        }
        self.sample_time = now + SAMPLE_INTERVAL_NS;
        let ty = SAMPLE_SEQ[self.sample_seq];
        self.sample_seq = (self.sample_seq + 1) % SAMPLE_SEQ.len();
        let slot = self.sample[ty].sample_rates.iter_mut().find(|r| **r != 0)?;
        Some(Series { rate: std::mem::take(slot), count: 1 })
    }

    /// `rate_control_fill_sta_table` (ath9k `ath_set_rates` when it forms the A-MPDU): the
    /// rates of an A-MPDU whose first frame is `probe` (its sample rate, from
    /// [`Minstrel::sample`]) or not: a probe is tried once at the sample rate, then falls
    /// back to the table's entries 1-3; otherwise the table as it is now.
    pub fn chain(&self, probe: Option<Series>) -> RateChain {
        let mut series = self.table;
        if let Some(p) = probe {
            series[0] = p;
        }
        RateChain { series, probe: probe.is_some() }
    }

    /// [`Minstrel::sample`] then [`Minstrel::chain`]: the rates of an A-MPDU led by a
    /// frame that leaves the TXQ now.
    pub fn get_rates(&mut self, now: Nanos) -> RateChain {
        let probe = self.sample(now);
        self.chain(probe)
    }

    /// `minstrel_downgrade_rate`: sudden death of spatial multiplexing.
    fn downgrade_rate(&mut self, which: usize, primary: bool) {
        let orig = rate_group(self.max_tp_rate[which]);
        let mut g = orig;
        while g > 0 {
            g -= 1;
            if self.supported[g] == 0 || Self::streams(g) > Self::streams(orig) {
                continue;
            }
            self.max_tp_rate[which] = self.groups[g].max_group_tp_rate[if primary { 0 } else { 1 }];
            break;
        }
    }

    /// `minstrel_ht_tx_status`: an A-MPDU of `ampdu_len` MPDUs was sent with
    /// `chain`, `tries[i]` times at its i-th rate; `ampdu_ack_len` MPDUs were
    /// acknowledged at the last rate tried.
    pub fn tx_status(&mut self, now: Nanos, chain: &RateChain, tries: &[u32; MAX_RATES], ampdu_len: u32, ampdu_ack_len: u32) {
        self.total_packets += ampdu_len as u64;
        if chain.probe {
            self.sample_packets += ampdu_len as u64;
        }
        self.ampdu_packets += 1;
        self.ampdu_len += ampdu_len;
        let last = (0..MAX_RATES).rev().find(|&i| tries[i] > 0);
        if let Some(last) = last {
            for (i, &n) in tries.iter().enumerate().take(last + 1) {
                let r = self.stats_mut(chain.series[i].rate);
                if i == last {
                    r.success += ampdu_ack_len;
                }
                r.attempts += n * ampdu_len;
            }
        }
        let mut update = false;
        for (which, primary) in [(0, true), (1, false)] {
            let r = self.stats(self.max_tp_rate[which]);
            if r.attempts > 30 && r.success < r.attempts / 4 {
                self.downgrade_rate(which, primary);
                update = true;
            }
        }
        if now > self.last_stats_update + UPDATE_INTERVAL_NS {
            update = true;
            self.update_stats(now);
        }
        if update {
            self.update_rates();
        }
    }

    /// The MCS of the best-throughput rate.
    pub fn max_tp_mcs(&self) -> u32 {
        rate_mcs(self.max_tp_rate[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn station(max_mcs: u32) -> Minstrel {
        Minstrel::new(max_mcs, 0, SampleTable::boot())
    }

    /// Put `success` of `attempts` into the window of HT MCS `mcs`.
    fn feed(m: &mut Minstrel, mcs: u32, attempts: u32, success: u32) {
        let r = m.stats_mut(mcs_rate(mcs));
        r.attempts = attempts;
        r.success = success;
    }

    #[test]
    fn the_a_mpdu_length_average_keeps_75_percent_of_the_old_value() {
        // EWMA_LEVEL 96/128: 1 MPDU on average, then a window of 20 → 0.75·1 + 0.25·20 = 5.75.
        assert_eq!(ewma(frac(1, 1), frac(20, 1), EWMA_LEVEL), 23552);
        assert_eq!(23552.0 / 4096.0, 5.75);
        let mut m = station(15);
        m.tx_status(1, &RateChain { series: m.table, probe: false }, &[1, 0, 0, 0], 20, 20);
        m.update_stats(2);
        assert_eq!(m.avg_ampdu_len, 23552);
        assert_eq!(m.avg_ampdu_len(), 5);
    }

    #[test]
    fn the_success_probability_goes_through_mac80211s_low_pass_filter() {
        // c1 = 1173, c2 = 5273, c3 = −2350 (/4096); the first sample is taken as is.
        assert_eq!((AVG_COEFF1, AVG_COEFF2, AVG_COEFF3), (1173, 5273, -2350));
        let (mut p1, mut p2) = (0u16, 0u16);
        let got: Vec<u16> = [2048, 4096, 4096, 4096, 0].iter().map(|&x| filter_avg_add(&mut p1, &mut p2, x)).collect();
        assert_eq!(got, vec![2048, 2634, 3388, 4023, 3235]);
        // Through update_stats: a window of 50 % then one of 100 %.
        let mut m = station(7);
        feed(&mut m, 7, 10, 5);
        m.update_stats(100_000_000);
        assert_eq!(m.stats(mcs_rate(7)).prob_avg, 2048);
        feed(&mut m, 7, 10, 10);
        m.update_stats(200_000_000);
        assert_eq!(m.stats(mcs_rate(7)).prob_avg, 2634);
    }

    #[test]
    fn rate_durations_are_the_kernels_rounded_table() {
        // MCS_DURATION: ⌈153600 bits / (streams·N_DBPS)⌉ × 4 µs / 16, kept >> shift (5 for one stream, 4 for two).
        assert_eq!(duration(mcs_rate(0)), 1_476_992);
        assert_eq!(duration(mcs_rate(7)), 147_744);
        assert_eq!(duration(mcs_rate(8)), 738_496);
        assert_eq!(duration(mcs_rate(14)), 82_240);
        assert_eq!(duration(mcs_rate(15)), 74_000);
    }

    #[test]
    fn throughput_counts_90_percent_at_most_and_nothing_below_10() {
        let m = station(15);
        assert_eq!(m.avg_ampdu_len(), 1);
        // 100 · ⌊3686·10⁶ / (108000 + 147744)⌋ >> 12 = 351.
        assert_eq!(m.tp_avg(mcs_rate(7), 4096), 351);
        assert_eq!(m.tp_avg(mcs_rate(7), frac(90, 100)), 351);
        assert_eq!(m.tp_avg(mcs_rate(15), frac(60, 100)), 329);
        assert_eq!(m.tp_avg(mcs_rate(15), frac(10, 100) - 1), 0);
    }

    #[test]
    fn the_best_throughput_rates_and_the_single_stream_max_prob_rate_are_chosen() {
        let mut m = station(15);
        feed(&mut m, 15, 100, 60); // tp 329
        feed(&mut m, 14, 100, 95); // tp 473
        feed(&mut m, 13, 100, 100); // tp 448; MCS 8-12 untried inherit 100 % (MCS 12: tp 389)
        feed(&mut m, 7, 100, 100); // tp 351; MCS 0-6 inherit 100 %
        m.update_stats(100_000_000);
        let mcs: Vec<u32> = m.max_tp_rate.iter().map(|&r| rate_mcs(r)).collect();
        assert_eq!(mcs, vec![14, 13, 12, 7]);
        // The most robust rate with > 75 % and the best throughput is MCS 14,
        // but max_prob must use fewer streams than max_tp: MCS 7.
        assert_eq!(rate_mcs(m.max_prob_rate), 7);
        m.update_rates();
        let table: Vec<(u32, u32)> = m.table.iter().map(|s| (rate_mcs(s.rate), s.count)).collect();
        // Tries fitting the 6 ms segment: MCS 14 six; the fallbacks their RTS/CTS count, five.
        assert_eq!(table, vec![(14, 6), (13, 5), (12, 5), (7, 5)]);
    }

    #[test]
    fn a_rate_below_10_percent_is_tried_twice_and_counts_for_no_throughput() {
        let mut m = station(7);
        m.calc_retransmit(mcs_rate(5));
        assert_eq!(m.stats(mcs_rate(5)).retry_count, 1);
        // Fresh station: no statistics, every rate at tp 0 → MCS 0 everywhere, two tries each.
        let t: Vec<(u32, u32)> = m.table.iter().map(|s| (rate_mcs(s.rate), s.count)).collect();
        assert_eq!(t, vec![(0, 2), (0, 2), (0, 2), (0, 2)]);
    }

    #[test]
    fn one_probe_per_20_ms_first_the_next_faster_rate_of_each_group() {
        let mut m = station(15);
        // INC holds the next faster rate of each group: MCS 8 (group 1), MCS 1 (group 0).
        assert_eq!(&m.sample_rates()[0][..3], &[mcs_rate(8), mcs_rate(1), 0]);
        let c = m.get_rates(0);
        assert!(c.probe);
        assert_eq!(c.series[0], Series { rate: mcs_rate(8), count: 1 });
        assert_eq!(&c.series[1..], &m.table[1..]);
        assert!(!m.get_rates(10_000_000).probe);
        assert!(!m.get_rates(19_999_999).probe);
        let jump = m.get_rates(20_000_000);
        assert!(jump.probe, "the second probe is a JUMP rate");
        assert!(duration(jump.series[0].rate) < duration(mcs_rate(0)));
        let c = m.get_rates(40_000_000);
        assert_eq!(c.series[0].rate, mcs_rate(1));
    }

    #[test]
    fn the_tx_status_charges_every_try_and_credits_the_last_rate() {
        let mut m = station(15);
        let chain = RateChain {
            series: [
                Series { rate: mcs_rate(15), count: 2 },
                Series { rate: mcs_rate(13), count: 1 },
                Series { rate: mcs_rate(12), count: 1 },
                Series { rate: mcs_rate(7), count: 1 },
            ],
            probe: false,
        };
        m.tx_status(1, &chain, &[2, 1, 0, 0], 10, 7);
        assert_eq!((m.stats(mcs_rate(15)).attempts, m.stats(mcs_rate(15)).success), (20, 0));
        assert_eq!((m.stats(mcs_rate(13)).attempts, m.stats(mcs_rate(13)).success), (10, 7));
        assert_eq!(m.stats(mcs_rate(12)).attempts, 0);
    }

    #[test]
    fn statistics_are_recomputed_after_50_ms_at_a_tx_status() {
        let mut m = station(7);
        let chain = RateChain { series: [Series { rate: mcs_rate(7), count: 2 }; MAX_RATES], probe: false };
        m.tx_status(UPDATE_INTERVAL_NS, &chain, &[1, 0, 0, 0], 10, 10);
        assert_eq!(m.stats(mcs_rate(7)).prob_avg, 0, "not yet: 50 ms have not passed");
        m.tx_status(UPDATE_INTERVAL_NS + 1, &chain, &[1, 0, 0, 0], 10, 10);
        assert_eq!(m.stats(mcs_rate(7)).prob_avg, 4096);
        assert_eq!(m.max_tp_mcs(), 7);
        assert_eq!(m.table[0], Series { rate: mcs_rate(7), count: 5 });
    }

    #[test]
    fn the_sample_table_columns_are_permutations() {
        let t = SampleTable::boot();
        for col in t.0 {
            let mut c = col.to_vec();
            c.sort();
            assert_eq!(c, (0..10).collect::<Vec<u8>>());
        }
    }
}
