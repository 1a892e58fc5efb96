//! Airtime arithmetic of an 802.11n (HT, 20 MHz, 5 GHz) transmission
//! opportunity: how long a frame, an A-MPDU, its acknowledgement and the
//! contention before it occupy the medium.
//!
//! Sources: IEEE Std 802.11-2016 — §17.4.4 (OFDM PHY timing: slot 9 µs,
//! SIFS 16 µs, 4 µs symbols, 20 µs legacy preamble), §19.4.3 (HT-mixed
//! format PPDU: L-STF 8 + L-LTF 8 + L-SIG 4 + HT-SIG 8 + HT-STF 4 + 4 µs per
//! HT-LTF), §19.5 (MCS tables, HT20 long GI), §9.3.1.9 (BlockAck, 32 bytes
//! compressed), §10.7.6.5 (a response frame goes at the highest basic rate not
//! above the rate of the frame it answers), §10.22.2 (EDCA: AIFS = SIFS +
//! AIFSN × slot; best effort AIFSN 3, CWmin 15, CWmax 1023, Table 9-137),
//! §9.3.1.2-3 and §10.3.2.7 (RTS 20 B, CTS 14 B, the RTS/CTS exchange);
//! Linux `drivers/net/wireless/ath/ath9k` (A-MPDU delimiter 4 B; `xmit.c`
//! as of 4.9-4.14: `ath_tx_form_aggr` stops an aggregate at half the 64-frame
//! block-ack window, `h_baw = tid->baw_size / 2` = 32 subframes, and at the
//! byte limit of `ath_lookup_rate`, the frame length that takes 4096 µs at the
//! rate (`ath_update_max_aggr_framelen`, `ath_max_framelen`, capped at
//! 65532 B) and at most `ATH_AMPDU_LIMIT_MAX` 65535 B).
//! 802.11b stations (`Format::Dsss`): IEEE Std 802.11-2016 clause 15 (DSSS, 1 and 2 Mbit/s:
//! long PLCP preamble 144 µs + header 48 µs, Table 15-4: slot 20 µs, SIFS 10 µs, aCWmin 31) and
//! clause 16 (HR/DSSS, CCK 5.5 and 11 Mbit/s; §16.2.2.3 the short preamble 72 + 24 µs, not at
//! 1 Mbit/s; §16.3.4 TXTIME = preamble + header + ⌈8·LENGTH/rate⌉ µs); §10.26.3 and §18.4
//! (ERP protection and the short slot of an ERP BSS); hostapd `hostapd_prepare_rates`
//! (`basic_rates_g` = 1, 2, 5.5, 11 Mbit/s), `ieee802_11_erp_info` (`num_sta_non_erp`) and the
//! short slot off while `num_sta_no_short_slot_time` > 0; mac80211 `rate_fixup_ratelist`
//! (`USE_CTS_PROTECT` on HT rates while `use_cts_prot`, the RTS/CTS rate index 0 before an MCS);
//! ath9k `hw.c` `ath9k_hw_computetxtime` (a CCK frame's `PktDuration`).
//!
//! # Model in a nutshell
//! One data PPDU = preamble + `⌈(16 + 8·bytes + 6) / N_DBPS⌉` symbols of
//! 4 µs, where N_DBPS = rate × 4 µs (data bits per symbol: 16 SERVICE bits and
//! 6 tail bits are added, §19.3.11). An A-MPDU carries each MPDU (the IP
//! packet + 38 B of MAC overhead) behind a 4 B delimiter, padded to 4 B. A
//! single frame is answered by an ACK (14 B), an aggregate by a compressed
//! BlockAck (32 B), both at the legacy basic rate (6, 12 or 24 Mbit/s) after
//! SIFS. The airtime charged to a station for one transmission is
//! PPDU + SIFS + ACK/BA; contention before it (AIFS + backoff) is shared
//! medium time charged to nobody ([`super::medium`]).
//!
//! An 802.11b station's PPDU is its PLCP (192 µs long, 96 µs short) + 8·bytes/rate µs,
//! rounded up; it carries one MPDU, answered after a 10-µs SIFS by an ACK at the highest
//! basic rate not above its own, with the same preamble (a 1500-B packet at 1 Mbit/s: 12496
//! + 10 + 304 µs). While such a station is in the BSS every OFDM/HT frame goes behind a
//! CTS-to-self at 1 Mbit/s (314 µs with the SIFS after it) and the slot is 20 µs. An HT frame
//! on 2.4 GHz is followed by SIFS 10 µs after a 6-µs signal extension: the model's 16 µs.
//!
//! # Constants
//! Every constant below carries its unit and source. Rates given directly
//! (not as an MCS) are taken as long-GI HT20 rates: N_DBPS = rate × 4 µs
//! (fractional bits allowed; a short-GI rate such as 144.4 Mbit/s is thus off
//! by at most one symbol per PPDU), with one HT-LTF per 65 Mbit/s (the HT20
//! single-stream maximum) for the spatial streams it implies.

use crate::time::Nanos;

/// OFDM slot time, 5 GHz (802.11-2016 Table 17-21): 9 µs.
pub const SLOT_NS: Nanos = 9_000;
/// Short interframe space, OFDM (Table 17-21): 16 µs.
pub const SIFS_NS: Nanos = 16_000;
/// DIFS of the DCF = SIFS + 2 slots (§10.3.2.3.5): 34 µs. For reference; data of QoS
/// stations uses the best-effort AIFS below, a non-QoS 802.11b station DIFS (on its BSS's timing).
pub const DIFS_SLOTS: u64 = 2;
pub const DIFS_NS: Nanos = SIFS_NS + DIFS_SLOTS * SLOT_NS;
/// Best-effort AIFSN (Table 9-137, also hostapd's `wmm_ac_be_aifs`): 3 slots.
pub const AIFSN_BE: u64 = 3;
/// AIFS[BE] = SIFS + AIFSN × slot = 43 µs.
pub const AIFS_NS: Nanos = SIFS_NS + AIFSN_BE * SLOT_NS;
/// Contention window bounds for best effort (aCWmin 15, aCWmax 1023 slots): a station's, from the
/// WMM parameter element its AP advertises (hostapd's `wmm_ac_be_cwmin` 4, `wmm_ac_be_cwmax` 10, as
/// exponents: 2^4 − 1, 2^10 − 1).
pub const CW_MIN: u32 = 15;
pub const CW_MAX: u32 = 1023;
/// The AP's own best-effort CWmax: 63 slots. hostapd sets the AP's transmit queues apart from the
/// WMM parameters it advertises: `hostapd_config_defaults` (src/ap/ap_config.c) gives `txq_be` =
/// {aifs 3, cwmin 15, cwmax 4 × (15 + 1) − 1 = 63} (`tx_queue_data2_*` in hostapd.conf), and
/// `hostapd_tx_queue_params` hands every queue to the driver at setup (nl80211
/// `NL80211_ATTR_WIPHY_TXQ_PARAMS` → mac80211 `ieee80211_set_txq_params` → `drv_conf_tx` → ath9k
/// `ath9k_conf_tx` → `ath_txq_update`, `tqi_cwmax`). Its CWmin and AIFS are the stations' (above).
pub const AP_CW_MAX: u32 = 63;
/// OFDM symbol duration with the long guard interval: 4 µs.
pub const SYMBOL_NS: Nanos = 4_000;
/// Legacy (non-HT) preamble + SIGNAL: 16 + 4 = 20 µs (§17.3.2.4).
pub const LEGACY_PREAMBLE_NS: Nanos = 20_000;
/// HT-mixed preamble before the HT-LTFs: L-STF 8 + L-LTF 8 + L-SIG 4 +
/// HT-SIG 8 + HT-STF 4 = 32 µs; plus 4 µs per HT-LTF (§19.3.9.4).
pub const HT_PREAMBLE_NS: Nanos = 32_000;
pub const HT_LTF_NS: Nanos = 4_000;
/// SERVICE (16) + tail (6) bits added to every PSDU (§17.3.5.2, §19.3.11).
pub const SERVICE_TAIL_BITS: u64 = 16 + 6;
/// MAC overhead of one data MPDU around an IP packet: QoS data header 26 B +
/// LLC/SNAP 8 B + FCS 4 B = 38 B (no encryption: an open network).
pub const MPDU_OVERHEAD: u32 = 26 + 8 + 4;
/// A-MPDU subframe delimiter (ath9k `ATH_AGGR_DELIM_SZ`): 4 B.
pub const AMPDU_DELIMITER: u32 = 4;
/// ACK frame: 14 B; compressed BlockAck: 32 B (§9.3.1.4, §9.3.1.9).
pub const ACK_BYTES: u64 = 14;
pub const BLOCK_ACK_BYTES: u64 = 32;
/// Mandatory basic rates of the 5 GHz OFDM PHY (bit/s) a response may use.
pub const BASIC_RATES: [u64; 3] = [6_000_000, 12_000_000, 24_000_000];
/// The block-ack window of an HT aggregation session (64 MPDUs, §10.24.7;
/// ath9k `tid->baw_size` = `WME_MAX_BA`).
pub const BLOCK_ACK_WINDOW: usize = 64;
/// Largest A-MPDU ath9k builds, in subframes: half the block-ack window
/// (`ath_tx_form_aggr`: `h_baw = tid->baw_size / 2`, stop when
/// `nframes >= h_baw`), so that a retried aggregate still fits the window.
pub const MAX_AMPDU_FRAMES: usize = BLOCK_ACK_WINDOW / 2;
/// Largest HT A-MPDU in bytes (ath9k `ATH_AMPDU_LIMIT_MAX` = 64 KiB − 1; a
/// station announcing the HT maximum A-MPDU length exponent 3 allows the same).
pub const MAX_AMPDU_BYTES: u32 = 65_535;
/// The duration ath9k sizes aggregates for: "4ms is the default (and
/// maximum) duration", 4096 µs (`ath_update_max_aggr_framelen`, `txop` 0 or
/// above 4096 taken as 4096).
pub const MAX_AGGR_US: u64 = 4096;
/// `ath_max_framelen` caps the byte length of a 4 ms aggregate at 65532 B.
pub const MAX_AGGR_FRAMELEN: u32 = 65_532;
/// Longest aggregate PPDU: at most [`MAX_AGGR_US`] (ath9k's byte limit is
/// computed so that the PPDU fits; kept for checks).
pub const MAX_PPDU_NS: Nanos = MAX_AGGR_US * 1_000;
/// HT20 long-GI MCS 0–15 rates (bit/s, Table 19-27/19-30); MCS 8–15 are
/// MCS 0–7 on two spatial streams.
pub const HT20_MCS: [u64; 16] = [
    6_500_000, 13_000_000, 19_500_000, 26_000_000, 39_000_000, 52_000_000, 58_500_000, 65_000_000,
    13_000_000, 26_000_000, 39_000_000, 52_000_000, 78_000_000, 104_000_000, 117_000_000, 130_000_000,
];
/// Bit rate of one HT20 long-GI spatial stream at MCS 7 (bit/s).
pub const HT20_STREAM_MAX: u64 = 65_000_000;

/// A station's PHY: its data rate, spatial streams and format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phy {
    pub rate_bps: u64,
    pub streams: u32,
    /// The PPDU format: HT-mixed (OFDM), or 802.11b DSSS/CCK with its PLCP preamble.
    pub format: Format,
}

/// The PPDU format of a station's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// HT-mixed OFDM (clause 19), aggregated (A-MPDU + BlockAck).
    Ht,
    /// DSSS (clause 15: 1, 2 Mbit/s) or HR/DSSS CCK (clause 16: 5.5, 11 Mbit/s): one MPDU
    /// per PPDU, acknowledged alone; `short` is the short PLCP preamble (§16.2.2.3).
    /// `ht_client`: not an 802.11b station but an HT (so ERP, QoS) client held at this rate,
    /// e.g. by a rate mask: the BSS needs no protection and keeps the short slot, and ath9k
    /// treats its frames as its block-ack session's, one per turn ([`Phy::non_aggr`]).
    Dsss { short: bool, ht_client: bool },
}

impl Phy {
    /// A rate given directly: streams implied by 65 Mbit/s per stream (1–4).
    pub fn from_rate(rate_bps: u64) -> Phy {
        let streams = rate_bps.div_ceil(HT20_STREAM_MAX).clamp(1, 4) as u32;
        Phy { rate_bps, streams, format: Format::Ht }
    }

    /// `"mcs0"` .. `"mcs15"` (HT20, long GI).
    pub fn from_mcs(name: &str) -> Option<Phy> {
        Phy::ht(name.strip_prefix("mcs")?.parse().ok()?)
    }

    /// HT MCS `mcs` (0..15; HT20, long GI): 8 MCS a spatial stream.
    pub fn ht(mcs: u32) -> Option<Phy> {
        let rate_bps = *HT20_MCS.get(mcs as usize)?;
        Some(Phy { rate_bps, streams: mcs / 8 + 1, format: Format::Ht })
    }

    /// An 802.11b station at one of [`DSSS_RATES`] (bit/s), long or short PLCP preamble. None
    /// for another rate, or the short preamble at 1 Mbit/s (which has none, §16.2.2.3).
    pub fn dsss(rate_bps: u64, short: bool) -> Option<Phy> {
        if !DSSS_RATES.contains(&rate_bps) || (short && rate_bps == DSSS_RATES[0]) {
            return None;
        }
        Some(Phy { rate_bps, streams: 1, format: Format::Dsss { short, ht_client: false } })
    }

    /// This DSSS/CCK PHY used by an HT client held at the rate ([`Format::Dsss`]'s `ht_client`).
    pub fn held_ht_client(self) -> Phy {
        match self.format {
            Format::Dsss { short, .. } => Phy { format: Format::Dsss { short, ht_client: true }, ..self },
            Format::Ht => self,
        }
    }

    /// DSSS/CCK frames: one MPDU per PPDU, 10-µs SIFS, a DSSS ACK.
    pub fn is_dsss(&self) -> bool {
        matches!(self.format, Format::Dsss { .. })
    }

    /// A non-ERP (802.11b) station: the BSS protects OFDM/HT frames and uses the long slot, and
    /// the station contends without QoS (DIFS, CWmin 31).
    pub fn non_erp(&self) -> bool {
        matches!(self.format, Format::Dsss { ht_client: false, .. })
    }

    /// ath9k schedules this station's frames without aggregation (no `IEEE80211_TX_CTL_AMPDU`:
    /// bursts of two, counted in `axq_depth` only): an 802.11b station. An HT client held at a
    /// DSSS rate has its block-ack session; `ath_lookup_rate` gives a legacy rate an aggregate
    /// limit of 0, so it sends one frame per turn, counted as an A-MPDU.
    pub fn non_aggr(&self) -> bool {
        self.non_erp()
    }

    /// SIFS after this PHY's frames: 16 µs (OFDM/HT; on 2.4 GHz 10 µs + the 6-µs signal
    /// extension of ERP-OFDM and HT frames, §18.3.2.4/§19.3.2, the same), 10 µs after DSSS.
    pub fn sifs_ns(&self) -> Nanos {
        if self.is_dsss() {
            DSSS_SIFS_NS
        } else {
            SIFS_NS
        }
    }

    /// Preamble of a PPDU at this PHY: HT-mixed, or the DSSS PLCP preamble and header.
    pub fn preamble_ns(&self) -> Nanos {
        match self.format {
            Format::Ht => HT_PREAMBLE_NS + HT_LTF_NS * self.streams as u64,
            Format::Dsss { short: false, .. } => DSSS_LONG_PLCP_NS,
            Format::Dsss { short: true, .. } => DSSS_SHORT_PLCP_NS,
        }
    }

    /// Duration of a PPDU carrying `psdu_bytes`: HT, or DSSS/CCK's TXTIME (§16.3.4):
    /// preamble + header + ⌈8 · LENGTH / rate⌉ µs.
    pub fn ppdu_ns(&self, psdu_bytes: u64) -> Nanos {
        match self.format {
            Format::Ht => self.preamble_ns() + symbols_ns(psdu_bytes, self.rate_bps),
            Format::Dsss { .. } => self.preamble_ns() + dsss_payload_us(psdu_bytes, self.rate_bps, true) * 1_000,
        }
    }

    /// What ath9k puts in a rate series' `PktDuration` for one frame at this PHY, which the
    /// airtime scheduler of 63fefa050477 charges per try (`ts->duration`): for HT
    /// `ath_pkt_duration` (the PPDU); for CCK `ath9k_hw_computetxtime` (`hw.c`):
    /// `CCK_SIFS_TIME` 10 + `CCK_PREAMBLE_BITS` 144 + `CCK_PLCP_BITS` 48 (halved with the short
    /// preamble) + `numBits * 1000 / kbps` µs, the division rounded down.
    pub fn charged_ns(&self, psdu_bytes: u64) -> Nanos {
        match self.format {
            Format::Ht => self.ppdu_ns(psdu_bytes),
            Format::Dsss { .. } => DSSS_SIFS_NS + self.preamble_ns() + dsss_payload_us(psdu_bytes, self.rate_bps, false) * 1_000,
        }
    }

    /// ath9k's `ath_max_framelen(usec, mcs)`: the bytes of PSDU that fit in
    /// `usec` µs at this PHY — the preamble off, whole 4 µs symbols of
    /// N_DBPS bits, less the 22 SERVICE and tail bits, capped at
    /// [`MAX_AGGR_FRAMELEN`]. For a rate given directly N_DBPS may be
    /// fractional: the bits are rounded down.
    pub fn max_framelen(&self, usec: u64) -> u32 {
        let usec = usec.saturating_sub(self.preamble_ns() / 1_000);
        let symbols = usec / (SYMBOL_NS / 1_000);
        // N_DBPS = rate × 4 µs, exactly in integers: rate_bps × 4 / 10^6.
        let bits = (symbols as u128 * self.rate_bps as u128 * 4 / 1_000_000) as u64;
        let bytes = bits.saturating_sub(SERVICE_TAIL_BITS) / 8;
        bytes.min(MAX_AGGR_FRAMELEN as u64) as u32
    }

    /// The byte limit of an aggregate at this PHY (`ath_lookup_rate` with a
    /// one-rate series): the 4 ms frame length, at most 65535 B.
    pub fn aggr_limit(&self) -> u32 {
        if self.is_dsss() {
            // No HT, no block-ack session: one MPDU per PPDU.
            return 0;
        }
        self.max_framelen(MAX_AGGR_US).min(MAX_AMPDU_BYTES)
    }

    /// The basic rate a response (ACK/BlockAck) to this PHY's frames uses:
    /// the highest basic rate not above the eliciting frame's *non-HT
    /// reference rate*, which for an HT MCS is the OFDM rate of the same
    /// modulation and coding (802.11-2016 §10.7, "Non-HT basic rate
    /// calculation", and its table of non-HT reference rates): one
    /// stream's share of the MCS rate rounded down to an OFDM rate. MCS 8
    /// (BPSK 1/2 on two streams, 13 Mbit/s) is answered at 6 Mbit/s, not 12;
    /// MCS 9 at 12, not 24.
    /// A DSSS/CCK frame is answered at the highest rate of the BSS basic rate set not above
    /// its own ([`DSSS_BASIC_RATES`]): 1 Mbit/s at 1, 2 at 2, 5.5 at 5.5, 11 at 11.
    pub fn response_rate(&self) -> u64 {
        if self.is_dsss() {
            return DSSS_BASIC_RATES.iter().copied().filter(|&r| r <= self.rate_bps).max().unwrap_or(DSSS_BASIC_RATES[0]);
        }
        let per_stream = self.rate_bps / self.streams.max(1) as u64;
        BASIC_RATES.iter().copied().filter(|&r| r <= per_stream).max().unwrap_or(BASIC_RATES[0])
    }
}

/// The data symbols of a PSDU of `bytes` at `rate_bps` (long GI), in ns.
pub fn symbols_ns(bytes: u64, rate_bps: u64) -> Nanos {
    let bits = SERVICE_TAIL_BITS + 8 * bytes;
    // N_DBPS = rate × 4 µs; integer for every OFDM/HT rate, fractional for others.
    let ndbps = rate_bps as f64 * SYMBOL_NS as f64 / 1e9;
    let n = (bits as f64 / ndbps - 1e-9).ceil().max(1.0) as u64;
    n * SYMBOL_NS
}

/// A legacy-format control frame of `bytes` at basic rate `rate_bps`.
pub fn legacy_frame_ns(bytes: u64, rate_bps: u64) -> Nanos {
    LEGACY_PREAMBLE_NS + symbols_ns(bytes, rate_bps)
}

/// The MPDU of one IP packet of `ip_len` (ath9k `fi->framelen`: 802.11
/// header, LLC/SNAP, payload, FCS).
pub fn mpdu_bytes(ip_len: u32) -> u32 {
    ip_len + MPDU_OVERHEAD
}

/// ath9k pads a subframe shorter than this with extra delimiters
/// (`ATH_AGGR_MINPLEN`, `ath9k.h`): 256 B.
pub const AGGR_MIN_PLEN: u32 = 256;

/// Extra delimiters after an MPDU of `framelen` bytes (`ATH_AGGR_GET_NDELIM`:
/// none from 256 B up, else ⌈(256 − framelen) / 4⌉). A 52-byte TCP ACK
/// (90-byte MPDU) is followed by 42 of them, 168 B. MPDU density and the
/// encryption delimiters do not apply here (an open network; densities of
/// 8 µs or less need fewer bytes than a 1538-B MPDU has).
pub fn extra_delimiters(framelen: u32) -> u32 {
    if framelen >= AGGR_MIN_PLEN {
        0
    } else {
        (AGGR_MIN_PLEN - framelen).div_ceil(AMPDU_DELIMITER)
    }
}

/// What ath9k counts after a subframe before the next one (`bpad` in
/// `ath_tx_form_aggr`): padding of delimiter + MPDU to 4 B, and the extra
/// delimiters of a short MPDU.
pub fn subframe_padding(framelen: u32) -> u32 {
    let al_delta = AMPDU_DELIMITER + framelen;
    (4 - al_delta % 4) % 4 + AMPDU_DELIMITER * extra_delimiters(framelen)
}

/// PSDU length of a transmission carrying these IP packets, as ath9k counts
/// it (`ath_tx_form_aggr`'s `al`): a single MPDU alone (no delimiter), or for
/// an A-MPDU each subframe's delimiter and MPDU plus the padding and extra
/// delimiters between subframes (none after the last).
pub fn psdu_bytes(ip_lens: impl IntoIterator<Item = u32>) -> (u64, usize) {
    let mut n = 0usize;
    let (mut al, mut bpad, mut single) = (0u64, 0u64, 0u64);
    for l in ip_lens {
        n += 1;
        let framelen = mpdu_bytes(l);
        al += bpad + (AMPDU_DELIMITER + framelen) as u64;
        bpad = subframe_padding(framelen) as u64;
        single = framelen as u64;
    }
    if n == 1 {
        (single, 1)
    } else {
        (al, n)
    }
}

/// The acknowledgement of `frames` MPDUs: ACK for one, compressed BlockAck for more; after a
/// DSSS frame an ACK in DSSS with the same preamble.
pub fn response_ns(phy: &Phy, frames: usize) -> Nanos {
    match phy.format {
        Format::Ht => legacy_frame_ns(response_bytes(frames), phy.response_rate()),
        Format::Dsss { .. } => phy.preamble_ns() + dsss_payload_us(ACK_BYTES, phy.response_rate(), true) * 1_000,
    }
}

/// Airtime of one successful transmission: PPDU + SIFS + ACK/BlockAck.
pub fn txop_ns(phy: &Phy, psdu: u64, frames: usize) -> Nanos {
    phy.ppdu_ns(psdu) + phy.sifs_ns() + response_ns(phy, frames)
}

/// The 802.11b rates, bit/s: DSSS 1 and 2 Mbit/s (DBPSK, DQPSK; clause 15), HR/DSSS CCK 5.5
/// and 11 Mbit/s (clause 16).
pub const DSSS_RATES: [u64; 4] = [1_000_000, 2_000_000, 5_500_000, 11_000_000];
/// The basic rate set of a 2.4-GHz b/g/n BSS as hostapd sets it by default (`hw_mode=g`,
/// `hostapd_prepare_rates`: `basic_rates_g` = 1, 2, 5.5, 11 Mbit/s): the rates a DSSS frame's
/// ACK may use, and the 1-Mbit/s CTS/RTS of ERP protection (below).
pub const DSSS_BASIC_RATES: [u64; 4] = DSSS_RATES;
/// Long PLCP preamble (SYNC 128 + SFD 16 bits) and PLCP header (48 bits), all at 1 Mbit/s:
/// 144 + 48 = 192 µs (§15.3.3, §16.2.2.2).
pub const DSSS_LONG_PLCP_NS: Nanos = 192_000;
/// Short PLCP preamble (56 + 16 bits at 1 Mbit/s) and header (48 bits at 2 Mbit/s):
/// 72 + 24 = 96 µs (§16.2.2.3); not at 1 Mbit/s.
pub const DSSS_SHORT_PLCP_NS: Nanos = 96_000;
/// SIFS of the DSSS and HR/DSSS PHYs: 10 µs (Table 15-4, Table 16-4).
pub const DSSS_SIFS_NS: Nanos = 10_000;
/// Slot of a 2.4-GHz BSS that holds a station without the short slot time (every 802.11b
/// station; §18.4.4: the ERP short slot of 9 µs only while all stations can use it): 20 µs
/// (Table 15-4). hostapd turns the short slot off (`num_sta_no_short_slot_time`) and
/// mac80211 passes it to ath9k (`use_short_slot`, `ath9k_bss_info_changed`).
pub const LONG_SLOT_NS: Nanos = 20_000;
/// aCWmin of the DSSS PHY: 31 slots (Table 15-4); a non-QoS 802.11b station contends with the
/// DCF's CW from 31 to 1023.
pub const DSSS_CW_MIN: u32 = 31;
/// The rate ERP protection (CTS-to-self, or RTS/CTS) goes at before an OFDM/HT frame while a
/// non-ERP station is in the BSS: mac80211 sets `use_cts_prot` (from hostapd's ERP element,
/// `ERP_INFO_USE_PROTECTION` while `num_sta_non_erp` > 0), `rate_fixup_ratelist` flags every
/// HT rate `IEEE80211_TX_RC_USE_CTS_PROTECT`, and ath9k sends a CTS-to-self
/// (`ATH9K_TXDESC_CTSENA`) at `ieee80211_get_rts_cts_rate()`, left at index 0 before an MCS:
/// the 2.4-GHz band's first rate, 1 Mbit/s DSSS, long preamble.
pub const PROTECTION_RATE: u64 = 1_000_000;

/// The µs of a DSSS/CCK payload of `bytes` at `rate_bps`: 8·bytes/rate, rounded up (TXTIME,
/// §16.3.4) or down (ath9k's `numBits * 1000 / kbps`).
pub fn dsss_payload_us(bytes: u64, rate_bps: u64, up: bool) -> u64 {
    let num = 8 * bytes * 1_000_000;
    if up {
        num.div_ceil(rate_bps)
    } else {
        num / rate_bps
    }
}

/// A control frame of `bytes` in DSSS at 1 Mbit/s with the long preamble (ERP protection).
pub fn protection_frame_ns(bytes: u64) -> Nanos {
    DSSS_LONG_PLCP_NS + dsss_payload_us(bytes, PROTECTION_RATE, true) * 1_000
}

/// ERP protection in front of an OFDM/HT PPDU (802.11-2016 §10.26.3, §10.3.2.11): a CTS-to-self
/// (14 B) at 1 Mbit/s and SIFS: 304 + 10 = 314 µs.
pub fn cts_to_self_ns() -> Nanos {
    protection_frame_ns(CTS_BYTES) + DSSS_SIFS_NS
}

/// RTS/CTS in an ERP-protected BSS (a fallback rate of Minstrel-HT: mac80211 sets
/// `USE_RTS_CTS` there instead of `USE_CTS_PROTECT`): RTS 352 µs + SIFS + CTS 304 µs + SIFS =
/// 676 µs at 1 Mbit/s; a collided RTS alone is 352 µs.
pub fn protected_rts_cts_ns() -> Nanos {
    protection_frame_ns(RTS_BYTES) + DSSS_SIFS_NS + protection_frame_ns(CTS_BYTES) + DSSS_SIFS_NS
}

/// RTS frame: 20 B (802.11-2016 §9.3.1.2); CTS: 14 B (§9.3.1.3).
pub const RTS_BYTES: u64 = 20;
pub const CTS_BYTES: u64 = 14;
/// The rate RTS and CTS go at before an HT frame: 6 Mbit/s. ath9k sends the RTS at
/// `fi->rtscts_rate` = `ieee80211_get_rts_cts_rate()` = the band's
/// `bitrates[info->control.rts_cts_rate_idx]`; mac80211 sets that index only when the
/// first rate is not an MCS (`rate_fixup_ratelist` in `net/mac80211/rate.c`), so before an
/// MCS it stays 0: the 5 GHz band's first rate, 6 Mbit/s. The CTS answers at the highest
/// basic rate not above the RTS's (§10.7.6.5): 6 Mbit/s too.
pub const RTS_CTS_RATE: u64 = 6_000_000;

/// The RTS alone on the air (52 µs at 6 Mbit/s): what a collided RTS costs the medium.
pub fn rts_ns() -> Nanos {
    legacy_frame_ns(RTS_BYTES, RTS_CTS_RATE)
}

/// The protection in front of a data PPDU sent with RTS/CTS (802.11-2016 §10.3.2.7):
/// RTS + SIFS + CTS + SIFS = 52 + 16 + 44 + 16 = 128 µs.
pub fn rts_cts_ns() -> Nanos {
    rts_ns() + SIFS_NS + legacy_frame_ns(CTS_BYTES, RTS_CTS_RATE) + SIFS_NS
}

/// The HT MCS whose modulation and coding a basic (non-HT OFDM) rate uses, for the error
/// model of a response frame: 6 Mbit/s is BPSK ½ (MCS 0), 12 is QPSK ½ (MCS 1), 24 is
/// 16-QAM ½ (MCS 3) (802.11-2016 Table 17-4 against Table 19-27).
pub fn basic_rate_mcs(rate_bps: u64) -> u32 {
    match rate_bps {
        r if r >= 24_000_000 => 3,
        r if r >= 12_000_000 => 1,
        _ => 0,
    }
}

/// The bytes of the response to `frames` MPDUs: ACK (one) or compressed BlockAck.
pub fn response_bytes(frames: usize) -> u64 {
    if frames > 1 {
        BLOCK_ACK_BYTES
    } else {
        ACK_BYTES
    }
}
