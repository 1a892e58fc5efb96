//! WiFi: one access point and its stations on a shared medium — a link kind
//! that both engines drive, like a qdisc.
//!
//! Sources: IEEE Std 802.11-2016 (timing, EDCA, aggregation: [`airtime`],
//! [`medium`]); Linux mac80211 and ath9k for the queueing designs ([`mac`]),
//! mac80211's Airtime Queue Limits as a setting of the `airtime` design
//! ([`aql`]); mac80211's Minstrel-HT of Linux 6.18 for rate control
//! ([`minstrel`]) and ns-3's NIST error rate model for MPDU errors from the
//! SNR ([`errmodel`]);
//! G. Bianchi, IEEE JSAC 2000 for the contention model; T. Høiland-Jørgensen
//! et al., "Ending the Anomaly: Achieving Low Latency and Airtime Fairness in
//! WiFi", USENIX ATC 2017 for the problem the designs solve.
//!
//! # Model in a nutshell
//! Node 0 is the AP, nodes 1..=N the stations. Downlink packets (server →
//! station) queue at the AP per destination, uplink packets (station →
//! server, TCP ACKs included) at their station. Each node has at most two
//! aggregates in the hardware, the one on the air included ([`mac::Node`],
//! ath9k's `ATH_AGGR_MIN_QDEPTH`); a node with one waiting contends
//! for the medium ([`medium::Medium`]). A transmission carries one A-MPDU to
//! (or from) one station at that station's PHY rate and takes the airtime
//! of [`airtime::txop_ns`]; several nodes in the same slot collide. Each
//! MPDU of a successful transmission is lost independently with the
//! station's `mpdu_error` probability and retried (at the head of its queue)
//! until its hardware tries reach [`RETRY_LIMIT`]; a collision retries the whole aggregate.
//! With an SNR each MPDU is also lost with [`errmodel::mpdu_error`] at the
//! MCS used, and the ACK/BlockAck at its basic rate: the receiver keeps what it
//! got, the sender resends the whole A-MPDU; a Minstrel-HT station's aggregate that gets no BlockAck is first
//! retried by the hardware along its rate chain ([`mac::ChainTx`]), its fallback
//! rates behind RTS/CTS ([`minstrel::RateChain::rts`]). Frames wait while they lie
//! past the 64-frame block-ack window ([`mac::Baw`]).
//! Sources for the last four: ath9k `xmit.c` of Linux 6.18 (`ath_tx_complete_aggr`,
//! `ath_tx_get_tid_subframe`, `ath_tx_addto_baw`/`ath_tx_update_baw`, `ath_buf_set_rate`),
//! mac80211's `minstrel_ht_set_rate` and 802.11-2016 §10.3.2.7 (RTS/CTS).
//! An 802.11b station ([`airtime::Format::Dsss`], `phy_rate = "dsss1"` ...) sends one MPDU per
//! PPDU at a fixed DSSS/CCK rate; while one is in the BSS, every node protects its OFDM/HT
//! frames with a CTS-to-self at 1 Mbit/s and the medium runs on the long slot ([`Wifi::new`]).
//! Delivered packets are handed back at the end of the transmission, in
//! sequence order per link: like mac80211's block-ack reorder buffer
//! (`ieee80211_sta_reorder_release`), the receiver holds frames that arrive
//! after a gap until the missing one is retried through or given up (the
//! 100 ms reorder timeout is not needed: every gap closes one way or the other).
//!
//! The caller (simulator or emulator) calls [`Wifi::enqueue`] for arriving
//! packets and [`Wifi::poll`] at [`Wifi::next_event`] (and after enqueues):
//! `now` and the RNG are arguments, so virtual and real time run the same code.
//!
//! # Left out (see docs/wifi.md)
//! Rate control is optional ([`minstrel`], `rate_control = "minstrel_ht"`,
//! with the SNR error model of [`errmodel`]; off: each station keeps one PHY
//! rate); the RTS threshold (off in mac80211 by default) and errors of RTS/CTS
//! frames themselves, the BlockAckReq after a frame given up, hidden stations and
//! capture, beacons and management traffic, power save, other
//! access categories than best effort, multi-user MIMO/OFDMA, A-MSDU,
//! TXOP bursts, the per-station CoDel parameters for slow stations.

pub mod airtime;
pub mod aql;
pub mod errmodel;
pub mod mac;
pub mod medium;
pub mod minstrel;
#[cfg(test)]
mod tests;

use crate::qdisc::{build, Dropped, Events, Packet, PacketMeta, QdiscConfig};
use crate::rng::{Rng, RngExt};
use crate::time::Nanos;
use airtime::{basic_rate_mcs, AP_CW_MAX, cts_to_self_ns, mpdu_bytes, protected_rts_cts_ns, protection_frame_ns, response_bytes, rts_cts_ns, rts_ns, txop_ns, Phy, AIFSN_BE, CW_MIN, DIFS_SLOTS, DSSS_CW_MIN, DSSS_SIFS_NS, LONG_SLOT_NS, RTS_BYTES};
pub use aql::AqlConfig;
pub use mac::Design;
use mac::{Aggregate, Frame, Node};
use medium::Medium;
use minstrel::{Minstrel, SampleTable};

/// Tries of an MPDU after which the driver gives it up at its next failure
/// (`ATH_MAX_SW_RETRIES`, ath9k since 3.x): 30. ath9k compares it with
/// `fi->retries`, to which every failed transmission adds its hardware tries
/// (`ath_tx_complete_aggr`: `ts_longretry + 1` plus the counts of the earlier
/// rate series), so a frame whose whole 4 × 2-try chain fails is given up after 5
/// chains (40 tries), not 31. (`fi->retries` is a 6-bit field that could wrap
/// past 63 with long chains; the model does not wrap.)
pub const RETRY_LIMIT: u32 = 30;

/// Stations one access point can hold: association IDs run 1..=2007 (IEEE
/// Std 802.11-2016 §9.4.1.8). Also what bounds a run's memory: the AP keeps
/// one TXQ per station.
pub const MAX_STATIONS: usize = 2007;

/// One station as the scenario describes it.
#[derive(Debug, Clone)]
pub struct StationConfig {
    pub name: String,
    pub phy: Phy,
    /// Probability that one MPDU is received in error (before retries).
    pub mpdu_error: f64,
    /// Airtime weight (1 = the default share).
    pub weight: f64,
    /// The link's SNR (dB, one receive chain, 20 MHz): MPDUs are lost by
    /// [`errmodel::mpdu_error`] at the rate they are sent with, besides
    /// `mpdu_error`. None: no SNR-driven errors.
    pub snr_db: Option<f64>,
    /// The HT MCS of `phy` when given as one (with Minstrel-HT: the highest it may use).
    pub mcs: Option<u32>,
    /// How the rate is chosen, in both directions.
    pub rate_control: RateControl,
}

/// A station's rate control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateControl {
    /// The configured PHY rate, always.
    Fixed,
    /// mac80211's Minstrel-HT ([`minstrel`]) over HT MCS 0 up to the configured one.
    MinstrelHt,
}

impl RateControl {
    pub const NAMES: [&'static str; 2] = ["fixed", "minstrel_ht"];
    pub fn from_name(s: &str) -> Option<RateControl> {
        match s {
            "fixed" => Some(RateControl::Fixed),
            "minstrel_ht" => Some(RateControl::MinstrelHt),
            _ => None,
        }
    }
}

/// The SNR a station may be given, dB: below −10 dB not even MCS 0 works
/// (it needs about 4 dB), above 100 dB is no radio link.
pub const SNR_DB_RANGE: (f64, f64) = (-10.0, 100.0);

#[derive(Debug, Clone)]
pub struct WifiConfig {
    pub design: Design,
    pub stations: Vec<StationConfig>,
    /// Legacy: the interface qdisc (of the AP and of every station).
    pub qdisc: QdiscConfig,
    /// Airtime: mac80211's Airtime Queue Limits (an AQL driver), or None (ath9k).
    pub aql: Option<AqlConfig>,
}

/// One station of the resolved scenario (docs/engine-interface.md), before checks.
#[derive(Debug, Clone, Default)]
pub struct StationInput {
    pub name: String,
    pub mcs: Option<u32>,
    pub phy_rate_bps: Option<u64>,
    pub mpdu_error: f64,
    pub weight: f64,
    pub snr_db: Option<f64>,
    /// "fixed" (also when empty) or "minstrel_ht".
    pub rate_control: String,
    /// An 802.11b station at this DSSS/CCK rate (1, 2, 5.5 or 11 Mbit/s) instead of `mcs` or
    /// `phy_rate_bps`, with the short PLCP preamble if `short_preamble`.
    pub dsss_rate_bps: Option<u64>,
    pub short_preamble: bool,
    /// With `dsss_rate_bps`: an HT client held at that rate, not an 802.11b station
    /// ([`airtime::Format::Dsss`]).
    pub ht_client: bool,
}

impl WifiConfig {
    /// The medium of a resolved `wifi` section; errors name the key. Both
    /// engines build their medium through this.
    pub fn resolve(mac: &str, stations: &[StationInput], qdisc: QdiscConfig, aql: Option<AqlConfig>) -> Result<WifiConfig, String> {
        let design = Design::from_name(mac).ok_or_else(|| format!("wifi.mac: unknown MAC design \"{mac}\" (known: {})", Design::NAMES.join(", ")))?;
        if let Some(a) = aql {
            if design != Design::Airtime {
                return Err(format!("wifi.aql: AQL works inside mac80211's airtime scheduler: it needs mac = \"airtime\", not \"{mac}\""));
            }
            for (key, v) in [("limit_low", a.limit_low_us), ("limit_high", a.limit_high_us), ("threshold", a.threshold_us)] {
                if v == 0 {
                    return Err(format!("wifi.aql.{key}: expected at least 1 µs, got 0"));
                }
            }
            if a.limit_high_us < a.limit_low_us {
                return Err(format!("wifi.aql.limit_high: {} µs is below limit_low ({} µs)", a.limit_high_us, a.limit_low_us));
            }
        }
        if stations.is_empty() {
            return Err("wifi.stations: at least one station is needed".into());
        }
        if stations.len() > MAX_STATIONS {
            return Err(format!("wifi.stations: at most {MAX_STATIONS} stations (802.11 association IDs 1-2007), got {}", stations.len()));
        }
        let mut out = Vec::new();
        for (i, s) in stations.iter().enumerate() {
            let phy = match (s.mcs, s.phy_rate_bps, s.dsss_rate_bps) {
                (Some(m), None, None) => Phy::ht(m).ok_or_else(|| format!("wifi.stations[{i}].mcs: expected 0..15, got {m}"))?,
                (None, Some(r), None) if r >= 1_000_000 => Phy::from_rate(r),
                (None, None, Some(r)) => Phy::dsss(r, s.short_preamble).ok_or_else(|| {
                    format!("wifi.stations[{i}].dsss_rate_bps: expected 1, 2, 5.5 or 11 Mbit/s (the short preamble not at 1), got {r} bit/s")
                })?,
                _ => return Err(format!("wifi.stations[{i}]: exactly one of mcs, phy_rate_bps (>= 1 Mbit/s) and dsss_rate_bps is needed")),
            };
            if s.short_preamble && !phy.is_dsss() {
                return Err(format!("wifi.stations[{i}].short_preamble: only an 802.11b (DSSS/CCK) station has a PLCP preamble to shorten"));
            }
            if s.ht_client && !phy.is_dsss() {
                return Err(format!("wifi.stations[{i}].ht_client: only a station at a DSSS/CCK rate can be an HT client held at it"));
            }
            let phy = if s.ht_client { phy.held_ht_client() } else { phy };
            if !(0.0..1.0).contains(&s.mpdu_error) || !(s.weight > 0.0 && s.weight.is_finite()) {
                return Err(format!("wifi.stations[{i}]: mpdu_error must be in [0, 1) and weight > 0"));
            }
            let rc_name = if s.rate_control.is_empty() { "fixed" } else { s.rate_control.as_str() };
            let rate_control = RateControl::from_name(rc_name)
                .ok_or_else(|| format!("wifi.stations[{i}].rate_control: unknown rate control \"{rc_name}\" (known: {})", RateControl::NAMES.join(", ")))?;
            if let Some(snr) = s.snr_db {
                if !(snr >= SNR_DB_RANGE.0 && snr <= SNR_DB_RANGE.1) {
                    return Err(format!("wifi.stations[{i}].snr_db: expected {} to {} dB, got {snr}", SNR_DB_RANGE.0, SNR_DB_RANGE.1));
                }
            }
            if (s.snr_db.is_some() || rate_control == RateControl::MinstrelHt) && s.mcs.is_none() {
                return Err(format!(
                    "wifi.stations[{i}].phy_rate: an SNR or Minstrel-HT needs the rate as an HT MCS (\"mcs0\"..\"mcs15\"), not a bit rate"
                ));
            }
            out.push(StationConfig { name: s.name.clone(), phy, mpdu_error: s.mpdu_error, weight: s.weight, snr_db: s.snr_db, mcs: s.mcs, rate_control });
        }
        if aql.is_some() && out.iter().any(|s| s.phy.is_dsss()) {
            return Err("wifi.aql: AQL's airtime estimate (mac80211's HT/VHT duration tables) has no 802.11b rates; drop [wifi.aql] or the DSSS station".into());
        }
        Ok(WifiConfig { design, stations: out, qdisc, aql })
    }
}

/// Per-station counters (both directions unless named).
#[derive(Debug, Clone, Default)]
pub struct StationStats {
    pub down_bytes: u64,
    pub up_bytes: u64,
    pub down_pkts: u64,
    pub up_pkts: u64,
    /// Airtime of transmissions to and from this station (RTS/CTS when used +
    /// PPDU + SIFS + ACK/BA; for a collision what it put on the air, the PPDU
    /// or the RTS), ns.
    pub airtime_ns: u64,
    /// Downlink aggregates and the frames in them (every try of an A-MPDU along its retry chain counted).
    pub down_aggregates: u64,
    pub down_frames: u64,
    pub up_aggregates: u64,
    pub up_frames: u64,
    /// MPDU retransmissions (after an error or a collision).
    pub retries: u64,
    /// Transmissions to/from this station that collided.
    pub collisions: u64,
    /// MPDUs given up after [`RETRY_LIMIT`] retries.
    pub retry_drops: u64,
    /// Queue drops (qdisc/TXQ full, CoDel), both directions.
    pub queue_drops: u64,
    /// Downlink turns: aggregates the AP's scheduler built for this station, each counted once (at
    /// its first try; each single frame of an 802.11b station's burst counts), and of those the ones
    /// that left the station with nothing queued at the AP ([`mac::Aggregate::emptied`]: under
    /// `legacy`/`fq` it left the scheduler's list).
    pub down_turns: u64,
    pub down_turns_emptied: u64,
    /// Queueing delay of downlink packets at the AP (arrival to aggregate), ms.
    pub qdelay_ms: Vec<f64>,
}

impl StationStats {
    /// The counters under their raw-result names (docs/engine-interface.md):
    /// both engines write these, so the names live in one place.
    pub fn counters(&self) -> [(&'static str, f64); 15] {
        [
            ("down_bytes", self.down_bytes as f64),
            ("up_bytes", self.up_bytes as f64),
            ("down_pkts", self.down_pkts as f64),
            ("up_pkts", self.up_pkts as f64),
            ("airtime_s", self.airtime_ns as f64 / 1e9),
            ("down_aggregates", self.down_aggregates as f64),
            ("down_frames", self.down_frames as f64),
            ("up_aggregates", self.up_aggregates as f64),
            ("up_frames", self.up_frames as f64),
            ("retries", self.retries as f64),
            ("collisions", self.collisions as f64),
            ("retry_drops", self.retry_drops as f64),
            ("queue_drops", self.queue_drops as f64),
            ("down_turns", self.down_turns as f64),
            ("down_turns_emptied", self.down_turns_emptied as f64),
        ]
    }
}

impl MediumStats {
    /// The medium's counters under their raw-result names.
    pub fn counters(&self) -> [(&'static str, f64); 4] {
        [("txops", self.txops as f64), ("collisions", self.collisions as f64), ("busy_s", self.busy_ns as f64 / 1e9), ("marks", self.marks as f64)]
    }
}

/// Medium-wide counters.
#[derive(Debug, Clone, Default)]
pub struct MediumStats {
    pub txops: u64,
    pub collisions: u64,
    pub busy_ns: u64,
    /// Packets CE-marked by the CoDel of the TXQs (or the legacy qdisc).
    pub marks: u64,
}

/// A packet that crossed the medium.
#[derive(Debug)]
pub struct Delivered<T> {
    pub data: T,
    pub meta: PacketMeta,
    pub sta: usize,
    /// true: station → AP.
    pub up: bool,
}

/// A receiver's block-ack reorder buffer for one link (one direction of one station).
struct Reorder<T> {
    next: u64,
    held: std::collections::BTreeMap<u64, Option<Delivered<T>>>,
}

impl<T> Reorder<T> {
    /// Frame `seq` arrived (`Some`) or was given up by the sender (`None`):
    /// release what is now in order.
    fn put(&mut self, seq: u64, d: Option<Delivered<T>>, out: &mut Vec<Delivered<T>>) {
        if seq < self.next {
            out.extend(d);
            return;
        }
        self.held.insert(seq, d);
        while let Some(e) = self.held.remove(&self.next) {
            out.extend(e);
            self.next += 1;
        }
    }
}

struct InFlight<T> {
    node: usize,
    agg: Aggregate<T>,
}

/// The WiFi link: medium, AP and stations.
pub struct Wifi<T> {
    pub design: Design,
    phys: Vec<Phy>,
    mpdu_error: Vec<f64>,
    /// Per station: SNR (dB), receive antennas (its spatial streams), the
    /// fixed MCS (None for a rate given directly).
    snr_db: Vec<Option<f64>>,
    antennas: Vec<u32>,
    mcs: Vec<Option<u32>>,
    /// nodes[0] = AP, nodes[1 + s] = station s.
    nodes: Vec<Node<T>>,
    medium: Medium,
    busy_until: Option<Nanos>,
    flight: Vec<InFlight<T>>,
    winners: Vec<usize>,
    /// Reorder buffers: [s] downlink to station s, [n + s] its uplink.
    reorder: Vec<Reorder<T>>,
    ev: Events<Frame<T>>,
    pub stations: Vec<StationStats>,
    pub stats: MediumStats,
    pub names: Vec<String>,
    /// An 802.11b station is in the BSS: every OFDM/HT frame goes behind ERP protection
    /// ([`airtime::cts_to_self_ns`]) and the medium runs on the long slot ([`Wifi::new`]).
    erp_protection: bool,
    /// Tests: the probability that an ACK/BlockAck is lost, instead of the error model's.
    #[cfg(test)]
    pub(crate) response_loss: Option<f64>,
}

impl<T: 'static> Wifi<T> {
    pub fn new(cfg: &WifiConfig) -> Result<Wifi<T>, String> {
        if cfg.stations.is_empty() {
            return Err("wifi.station: at least one station is needed".into());
        }
        let weights: Vec<f64> = cfg.stations.iter().map(|s| s.weight).collect();
        // The legacy design's interface qdisc: errors name the scenario key (`wifi.qdisc_params.limit`).
        let iface = |_: ()| -> Result<_, String> {
            if cfg.design == Design::Legacy { build::<Frame<T>>(&cfg.qdisc).map(Some).map_err(|e| format!("wifi.{e}")) } else { Ok(None) }
        };
        let mut nodes = vec![Node::new(cfg.design, iface(())?, &weights, cfg.aql)];
        for s in &cfg.stations {
            nodes.push(Node::new(cfg.design, iface(())?, &[s.weight], cfg.aql));
        }
        let n = cfg.stations.len();
        let table = SampleTable::boot();
        for (s, st) in cfg.stations.iter().enumerate() {
            if st.rate_control == RateControl::MinstrelHt {
                let max = st.mcs.expect("resolve checked: Minstrel-HT needs an MCS");
                nodes[0].rc[s] = Some(Minstrel::new(max, 0, table));
                nodes[1 + s].rc[0] = Some(Minstrel::new(max, 0, table));
            }
        }
        // A BSS with an 802.11b station (it has neither the ERP short slot nor OFDM) runs on
        // 2.4 GHz with the long slot for everyone and protects OFDM/HT frames: hostapd's
        // `num_sta_non_erp` and `num_sta_no_short_slot_time`, mac80211's `use_cts_prot` and
        // `use_short_slot`. The QoS nodes wait AIFS[BE] = SIFS 10 + 3 × 20 = 70 µs with CWmin 15
        // (hostapd's `wmm_ac_be_aifs`, `wmm_ac_be_cwmin`), the 802.11b station (no QoS, the DCF)
        // DIFS = SIFS + 2 × 20 = 50 µs with the DSSS PHY's CWmin 31.
        let erp_protection = cfg.stations.iter().any(|s| s.phy.non_erp());
        let mut medium = if erp_protection {
            let qos = (CW_MIN, AIFSN_BE - DIFS_SLOTS);
            let nodes: Vec<(u32, u64)> = std::iter::once(qos).chain(cfg.stations.iter().map(|s| if s.phy.non_erp() { (DSSS_CW_MIN, 0) } else { qos })).collect();
            Medium::with_timing(LONG_SLOT_NS, DSSS_SIFS_NS + DIFS_SLOTS * LONG_SLOT_NS, &nodes)
        } else {
            Medium::new(n + 1)
        };
        // The AP's own best-effort queue stops doubling at hostapd's `tx_queue_data2` CWmax (63), the
        // stations' at the 1023 the AP advertises to them (airtime::AP_CW_MAX, CW_MAX).
        medium.set_cw_max(0, AP_CW_MAX);
        Ok(Wifi {
            erp_protection,
            design: cfg.design,
            phys: cfg.stations.iter().map(|s| s.phy).collect(),
            mpdu_error: cfg.stations.iter().map(|s| s.mpdu_error).collect(),
            snr_db: cfg.stations.iter().map(|s| s.snr_db).collect(),
            antennas: cfg.stations.iter().map(|s| s.phy.streams).collect(),
            mcs: cfg.stations.iter().map(|s| s.mcs).collect(),
            nodes,
            medium,
            busy_until: None,
            flight: Vec::new(),
            winners: Vec::new(),
            reorder: (0..2 * n).map(|_| Reorder { next: 0, held: Default::default() }).collect(),
            ev: Events::default(),
            stations: vec![StationStats::default(); n],
            stats: MediumStats::default(),
            names: cfg.stations.iter().map(|s| s.name.clone()).collect(),
            #[cfg(test)]
            response_loss: None,
        })
    }

    /// Each station's PHY rate, bit/s.
    pub fn phy_rates(&self) -> impl Iterator<Item = u64> + '_ {
        self.phys.iter().map(|p| p.rate_bps)
    }

    pub fn n_stations(&self) -> usize {
        self.phys.len()
    }

    /// A packet arrives: downlink to station `sta` (`up` = false) or uplink
    /// from it. Dropped packets (queue full, ...) come back in `drops`.
    pub fn enqueue(&mut self, now: Nanos, sta: usize, up: bool, pkt: Packet<T>, rng: &mut Rng, drops: &mut Vec<Dropped<T>>) {
        let node = if up { 1 + sta } else { 0 };
        let dest = if up { 0 } else { sta as u32 };
        let pkt = Packet { meta: PacketMeta { enqueued_at: now, ..pkt.meta }, data: Frame { data: Some(pkt.data), sta: dest, retries: 0, seq: mac::NO_SEQ, air_us: 0, probe: None } };
        self.nodes[node].enqueue(pkt, now, rng, &mut self.ev);
        let calls = self.nodes[node].take_calls();
        self.refill(node, calls, now, rng);
        self.absorb(node, drops);
    }

    /// The next time [`Wifi::poll`] has something to do.
    pub fn next_event(&self) -> Option<Nanos> {
        self.busy_until.or_else(|| self.medium.next_start())
    }

    /// Advance to `now`: finish the transmission that ends, start the one due.
    pub fn poll(&mut self, now: Nanos, rng: &mut Rng, out: &mut Vec<Delivered<T>>, drops: &mut Vec<Dropped<T>>) {
        loop {
            if let Some(end) = self.busy_until {
                if end > now {
                    return;
                }
                self.complete(end, rng, out, drops);
                continue;
            }
            match self.medium.next_start() {
                Some(t) if t <= now => self.start(t),
                _ => return,
            }
        }
    }

    fn start(&mut self, t: Nanos) {
        let mut winners = std::mem::take(&mut self.winners);
        self.medium.start(t, &mut winners);
        let collision = winners.len() > 1;
        let mut end = t;
        for &node in &winners {
            let agg = self.nodes[node].hw.pop_front().expect("a contending node has an aggregate");
            self.nodes[node].in_flight += 1;
            let sta = if node == 0 { agg.sta } else { node - 1 };
            if agg.counts_as_ampdu(&self.phys[sta]) {
                self.nodes[node].in_flight_ampdu += 1;
            }
            if node == 0 && agg.chain.is_none_or(|c| c.tries.iter().all(|&t| t == 0)) {
                // A turn's first try (a retry along the chain is the same turn).
                self.stations[sta].down_turns += 1;
                self.stations[sta].down_turns_emptied += agg.emptied as u64;
            }
            let dur = self.try_ns(&agg, sta, collision);
            end = end.max(t + dur);
            self.flight.push(InFlight { node, agg });
        }
        self.winners = winners;
        self.stats.txops += 1;
        if collision {
            self.stats.collisions += 1;
        }
        self.stats.busy_ns += end - t;
        self.busy_until = Some(end);
        self.medium.busy(end);
    }

    /// How long one try of `agg` (to or from station `sta`) keeps the medium
    /// busy: the PPDU, SIFS and the ACK/BlockAck (802.11-2016 §10.3.2.10), behind
    /// RTS + SIFS + CTS + SIFS when the series being tried uses RTS/CTS
    /// ([`minstrel::RateChain::rts`]: Minstrel-HT's fallback rates). In a
    /// collision, what the others hear of it: the PPDU, or the RTS alone (the
    /// CTS never comes and the sender gives up the exchange, §10.3.2.7).
    fn try_ns(&self, agg: &Aggregate<T>, sta: usize, collision: bool) -> Nanos {
        let phy = agg.chain.map_or(self.phys[sta], |c| c.phy());
        let rts = agg.chain.is_some_and(|c| c.chain.rts(c.series));
        if self.erp_protection && !phy.is_dsss() {
            // ERP protection: RTS/CTS where Minstrel asks for it, else a CTS-to-self, both at
            // 1 Mbit/s. The CTS-to-self expects no answer, so a collided sender still sends
            // its PPDU after it.
            return match (collision, rts) {
                (true, true) => protection_frame_ns(RTS_BYTES),
                (true, false) => cts_to_self_ns() + phy.ppdu_ns(agg.psdu),
                (false, true) => protected_rts_cts_ns() + txop_ns(&phy, agg.psdu, agg.frames.len()),
                (false, false) => cts_to_self_ns() + txop_ns(&phy, agg.psdu, agg.frames.len()),
            };
        }
        match (collision, rts) {
            (true, true) => rts_ns(),
            (true, false) => phy.ppdu_ns(agg.psdu),
            (false, rts) => (if rts { rts_cts_ns() } else { 0 }) + txop_ns(&phy, agg.psdu, agg.frames.len()),
        }
    }

    /// The probability that the ACK (one MPDU) or compressed BlockAck answering `n`
    /// MPDUs sent at `phy` to or from station `sta` is lost: the error model's PER
    /// at the response's basic rate ([`Phy::response_rate`]) for its 14 or 32 bytes,
    /// on the station's SNR; 0 without an SNR (`mpdu_error` is about data MPDUs).
    fn response_per(&self, sta: usize, phy: &Phy, n: usize) -> f64 {
        #[cfg(test)]
        if let Some(p) = self.response_loss {
            return p;
        }
        self.snr_db[sta].map_or(0.0, |db| errmodel::mpdu_error(basic_rate_mcs(phy.response_rate()), db, self.antennas[sta], response_bytes(n) as u32))
    }

    fn complete(&mut self, now: Nanos, rng: &mut Rng, out: &mut Vec<Delivered<T>>, drops: &mut Vec<Dropped<T>>) {
        self.busy_until = None;
        let collision = self.flight.len() > 1;
        let mut outcomes = Vec::with_capacity(self.flight.len());
        for InFlight { node, mut agg } in std::mem::take(&mut self.flight) {
            self.nodes[node].in_flight -= 1;
            let sta = if node == 0 { agg.sta } else { node - 1 };
            if agg.counts_as_ampdu(&self.phys[sta]) {
                self.nodes[node].in_flight_ampdu -= 1;
            }
            let up = node != 0;
            let phy = agg.chain.map_or(self.phys[sta], |c| c.phy());
            let n = agg.frames.len();
            let air = self.try_ns(&agg, sta, collision);
            let response_per = self.response_per(sta, &phy, n);
            let st = &mut self.stations[sta];
            st.airtime_ns += air;
            if up {
                st.up_aggregates += 1;
                st.up_frames += n as u64;
            } else {
                st.down_aggregates += 1;
                st.down_frames += n as u64;
            }
            if collision {
                st.collisions += 1;
            }
            // ath9k charges TX airtime to, and RX airtime from, a station at the AP:
            // the PPDU only, preamble included, not the RTS/CTS before it nor the SIFS
            // and (Block)Ack after it (63fefa050477: `ath_tx_count_airtime` adds
            // `ts->duration`, the rate series' `PktDuration` = `ath_pkt_duration`, per
            // try; `ath_rx_count_airtime` adds `ath_pkt_duration` of the received frame).
            // For a CCK frame that duration is `ath9k_hw_computetxtime`'s ([`Phy::charged_ns`]).
            if !up {
                self.nodes[0].count_airtime(sta, phy.charged_ns(agg.psdu));
            }
            // Each MPDU is lost with the station's `mpdu_error` and, with an
            // SNR, independently with the error model's PER at the rate used.
            let per = self.mpdu_error[sta];
            let mcs = agg.chain.map(|c| c.chain.mcs(c.series)).or(self.mcs[sta]);
            let snr = self.snr_db[sta].zip(mcs);
            let antennas = self.antennas[sta];
            let received: Vec<bool> = agg
                .frames
                .iter()
                .map(|p| {
                    let per = match snr {
                        Some((db, m)) => 1.0 - (1.0 - per) * (1.0 - errmodel::mpdu_error(m, db, antennas, mpdu_bytes(p.meta.len))),
                        None => per,
                    };
                    !(collision || (per > 0.0 && rng.gen::<f64>() < per))
                })
                .collect();
            if up {
                // What the AP receives it charges per MPDU received whole (63fefa050477's
                // `ath_rx_count_airtime`, called for every frame `ath_rx_tasklet` delivers: an
                // A-MPDU's subframes come up one by one, errored ones dropped before it): each
                // `ath_pkt_duration` of its own length `rs_datalen`, preamble included, so an
                // uplink A-MPDU of k TCP ACKs is charged k preambles, a collided one nothing.
                let rx_air: Nanos = agg.frames.iter().zip(&received).filter(|(_, &r)| r).map(|(p, _)| phy.charged_ns(mpdu_bytes(p.meta.len) as u64)).sum();
                self.nodes[0].count_airtime(sta, rx_air);
            }
            let any_received = received.iter().any(|&r| r);
            // The receiver answers if it got any MPDU; with an SNR the ACK/BlockAck
            // itself is lost with the error model's PER at its basic rate and length.
            // Then the sender learns nothing: ath9k's hardware counts the try failed
            // (no `ATH9K_TX_BA`, every subframe unacknowledged) and resends the whole
            // A-MPDU; the receiver keeps what it got and drops the duplicates.
            let response_lost = any_received && response_per > 0.0 && rng.gen::<f64>() < response_per;
            // The receiver's side: each MPDU it got for the first time goes to its
            // reorder buffer now, whatever becomes of the BlockAck.
            let n_sta = self.phys.len();
            let ro = &mut self.reorder[if up { n_sta + sta } else { sta }];
            for (p, &rx) in agg.frames.iter_mut().zip(&received) {
                if rx {
                    if let Some(data) = p.data.data.take() {
                        if up {
                            st.up_bytes += p.meta.len as u64;
                            st.up_pkts += 1;
                        } else {
                            st.down_bytes += p.meta.len as u64;
                            st.down_pkts += 1;
                        }
                        ro.put(p.data.seq, Some(Delivered { data, meta: p.meta, sta, up }), out);
                    }
                }
            }
            // The sender's side: what the BlockAck acknowledged.
            let acked: Vec<bool> = received.iter().map(|&r| r && !response_lost).collect();
            let delivered = acked.iter().filter(|&&a| a).count();
            let dest = agg.sta;
            // Hardware tries of this transmission (ath9k: `ts_longretry + 1` plus the
            // counts of the series before the last); one without a retry chain.
            let mut tries = 1u32;
            if let Some(mut c) = agg.chain {
                if delivered == 0 && c.fail() {
                    // No BlockAck: the hardware tries again (new backoff, CW doubled),
                    // at the same rate until its count is used, then the next.
                    agg.chain = Some(c);
                    st.retries += n as u64;
                    outcomes.push((node, false));
                    self.nodes[node].hw.push_front(agg);
                    continue;
                }
                if delivered > 0 {
                    c.succeed();
                }
                tries = c.tries.iter().sum::<u32>().max(1);
                if let Some(m) = self.nodes[node].rc[dest].as_mut() {
                    m.tx_status(now, &c.chain, &c.tries, n as u32, delivered as u32);
                    if !up {
                        let mcs = m.max_tp_mcs();
                        self.phys[sta] = Phy::ht(mcs).expect("Minstrel's rates are HT MCS 0..15");
                    }
                }
            }
            let st = &mut self.stations[sta];
            let ro = &mut self.reorder[if up { n_sta + sta } else { sta }];
            let nd = &mut self.nodes[node];
            let mut failed = Vec::new();
            let mut released = 0usize;
            // AQL: the expected airtime of the frames that leave the node (tx status reported).
            let mut done_us = 0u32;
            for (mut p, acked) in agg.frames.into_iter().zip(acked) {
                if acked {
                    released += 1;
                    done_us += p.data.air_us;
                    nd.baw[dest].complete(p.data.seq);
                } else if p.data.retries >= RETRY_LIMIT {
                    // Given up (`ATH_MAX_SW_RETRIES`); the receiver skips the hole
                    // (a BAR moves its window) unless it has the frame already.
                    released += 1;
                    done_us += p.data.air_us;
                    st.retry_drops += 1;
                    nd.baw[dest].complete(p.data.seq);
                    if p.data.data.is_some() {
                        ro.put(p.data.seq, None, out);
                    }
                } else {
                    p.data.retries += tries;
                    st.retries += 1;
                    failed.push(p);
                }
            }
            // The ACK/BlockAck came back if it acknowledged anything: CW resets.
            outcomes.push((node, delivered > 0));
            nd.done(dest, done_us);
            for p in failed.into_iter().rev() {
                nd.requeue(p);
            }
            nd.release(released, now, rng, &mut self.ev);
            self.absorb(node, drops);
        }
        self.medium.end(now, &outcomes, rng);
        // Only the nodes that transmitted changed: the others' queues change on enqueue.
        for &(node, _) in &outcomes {
            let calls = self.nodes[node].take_calls();
            self.refill(node, calls, now, rng);
            self.absorb(node, drops);
        }
    }

    /// Run a node's station scheduler `calls` times ([`mac::Node::take_calls`]) and tell the
    /// medium whether the node contends.
    fn refill(&mut self, node: usize, calls: usize, now: Nanos, rng: &mut Rng) {
        let phys: &[Phy] = if node == 0 { &self.phys } else { std::slice::from_ref(&self.phys[node - 1]) };
        let stations = &mut self.stations;
        let mut qd = |s: usize, d: Nanos| {
            if node == 0 {
                stations[s].qdelay_ms.push(d as f64 / 1e6);
            }
        };
        for _ in 0..calls {
            self.nodes[node].refill(phys, now, rng, &mut self.ev, &mut qd);
        }
        if self.nodes[node].hw.is_empty() {
            self.medium.deactivate(node);
        } else if !self.medium.is_active(node) {
            self.medium.activate(node, now, rng);
        }
    }

    /// Hand queue drops back to the caller, counted per station.
    fn absorb(&mut self, node: usize, drops: &mut Vec<Dropped<T>>) {
        for d in self.ev.drops.drain(..) {
            let sta = if node == 0 { d.pkt.data.sta as usize } else { node - 1 };
            self.stations[sta].queue_drops += 1;
            // Queues drop only frames no receiver has (retried ones wait outside them).
            if let Some(data) = d.pkt.data.data {
                drops.push(Dropped { pkt: Packet { meta: d.pkt.meta, data }, reason: d.reason });
            }
        }
        self.stats.marks += self.ev.marks;
        self.ev.marks = 0;
    }

    /// Packets queued at the AP (all stations).
    pub fn ap_backlog_bytes(&self) -> u64 {
        self.nodes[0].backlog_bytes()
    }

    pub fn ap_backlog_pkts(&self) -> usize {
        self.nodes[0].backlog_pkts()
    }

    /// The AP's airtime deficit for station `s` (design `airtime`), ns.
    pub fn deficit(&self, s: usize) -> i64 {
        self.nodes[0].deficit(s)
    }

    /// AQL: the AP's pending airtime towards station `s` and in all, µs
    /// (None without AQL).
    pub fn aql_pending(&self, s: usize) -> Option<(u64, u64)> {
        self.nodes[0].aql.as_ref().map(|p| (p.sta[s], p.total))
    }

    /// Contention windows of every node (AP first), for tests.
    pub fn contention_windows(&self) -> Vec<u32> {
        (0..self.nodes.len()).map(|i| self.medium.cw(i)).collect()
    }

    /// Transmission attempts and collided attempts per node (AP first).
    pub fn attempts(&self) -> (&[u64], &[u64]) {
        (&self.medium.attempts, &self.medium.collisions)
    }
}
