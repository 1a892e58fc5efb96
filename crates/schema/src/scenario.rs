//! The resolved scenario (docs/engine-interface.md): SI base units, `count`
//! expanded, validated by the Python layer and again here ([`Scenario::check`]),
//! so that a hand-written resolved file gets an error naming the key, never a
//! panic. Both engines read this one definition.

use bloatlab_core::qdisc::chain::Stages;
use bloatlab_core::qdisc::{Limit, QdiscConfig};
use bloatlab_core::time::Nanos;
use bloatlab_core::wifi::{AqlConfig, StationInput, WifiConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The application's write clock (ns): a `rate` source writes every 10 ms
/// on both engines (the simulator's `APP_TICK`, the probe's `APP_TICK_NS`).
pub const APP_TICK_NS: Nanos = 10_000_000;

/// The writing ticks among the first `ticks` of an application that is on
/// for `on` ticks of every `on + off` (all of them without on/off): both
/// engines' applications write by this clock.
pub fn app_ticks(ticks: u64, onoff: Option<(u64, u64)>) -> u64 {
    match onoff {
        Some((on, off)) if on + off > 0 => {
            let period = on + off;
            ticks / period * on + (ticks % period).min(on)
        }
        _ => ticks,
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub duration_ns: Nanos,
    pub sample_interval_ns: Nanos,
    pub links: Links,
    pub flows: Vec<Flow>,
    #[serde(default)]
    pub probes: Vec<Probe>,
    /// One-way UDP packet trains (docs/scenario.md `[[train]]`).
    #[serde(default)]
    pub trains: Vec<Train>,
    /// Web pages: each fetches its objects (the flows that name it) over a
    /// few parallel connections (docs/scenario.md `[[page]]`).
    #[serde(default)]
    pub pages: Vec<Page>,
    /// A WiFi medium between the AP (server side) and its stations (docs/wifi.md).
    #[serde(default)]
    pub wifi: Option<WifiSpec>,
    /// Shell mode (emulator): the RTT of traffic that is no flow's or probe's.
    #[serde(default)]
    pub default_rtt_ns: Option<Nanos>,
    /// Shell mode with WiFi (emulator): the station of everything that is no flow's or probe's.
    #[serde(default)]
    pub shell_station: Option<usize>,
    /// The simulator's receiving-host timing noise, ns (docs/scenario.md `rx_jitter`): each data segment reaches
    /// its receiver's TCP after a draw uniform in [0, this], but never before the flow's segment ahead of it. 0:
    /// none. At most [`MAX_RX_JITTER_NS`]. The emulator ignores it (the kernel's receive path has its own).
    #[serde(default)]
    #[schemars(range(max = 10_000_000))]
    pub rx_jitter_ns: Nanos,
}

/// `rx_jitter`'s bound: a receiving host's processing noise is tens to hundreds of µs (NAPI, softirq, interrupt
/// coalescing); 10 ms is already a stalled host, and more would hold a flow's segments behind whole RTTs.
pub const MAX_RX_JITTER_NS: Nanos = 10_000_000;

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WifiSpec {
    /// `legacy`, `fq` or `airtime`.
    pub mac: String,
    /// Legacy: the interface qdisc of the AP and of each station, and its buffer.
    pub qdisc: QdiscSpec,
    pub buffer_bytes: Option<u64>,
    pub buffer_pkts: Option<u64>,
    pub stations: Vec<StationSpec>,
    /// `airtime` only: mac80211's Airtime Queue Limits (an AQL driver; docs/wifi.md), absent for ath9k.
    #[serde(default)]
    pub aql: Option<AqlSpec>,
}

/// AQL's limits, µs (mac80211's `aql_txq_limit` low/high and `aql_threshold`).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AqlSpec {
    pub limit_low_us: u64,
    pub limit_high_us: u64,
    pub threshold_us: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StationSpec {
    pub name: String,
    /// HT20 long-GI MCS index 0-15, or
    #[serde(default)]
    pub mcs: Option<u32>,
    /// a PHY rate given directly (streams implied, see the core's `Phy::from_rate`), or
    #[serde(default)]
    pub phy_rate_bps: Option<u64>,
    /// an 802.11b station's DSSS/CCK rate (1, 2, 5.5 or 11 Mbit/s),
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsss_rate_bps: Option<u64>,
    /// with the short PLCP preamble (96 µs instead of 192).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short_preamble: bool,
    /// an HT client held at the DSSS/CCK rate, not an 802.11b station.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ht_client: bool,
    #[serde(default)]
    pub mpdu_error: f64,
    #[serde(default = "one")]
    pub weight: f64,
    /// The link's SNR, dB (absent: no SNR-driven errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr_db: Option<f64>,
    /// "fixed" or "minstrel_ht" (absent: fixed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rate_control: String,
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

impl WifiSpec {
    /// The core configuration a resolved `[wifi]` describes.
    pub fn config(&self) -> Result<WifiConfig, String> {
        let stations: Vec<StationInput> = self
            .stations
            .iter()
            .map(|s| StationInput {
                name: s.name.clone(),
                mcs: s.mcs,
                phy_rate_bps: s.phy_rate_bps,
                dsss_rate_bps: s.dsss_rate_bps,
                short_preamble: s.short_preamble,
                ht_client: s.ht_client,
                mpdu_error: s.mpdu_error,
                weight: s.weight,
                snr_db: s.snr_db,
                rate_control: s.rate_control.clone(),
            })
            .collect();
        let qdisc = QdiscConfig {
            kind: self.qdisc.kind.clone(),
            limit: Limit { bytes: self.buffer_bytes, pkts: self.buffer_pkts },
            rate_bps: 0,
            params: self.qdisc.params.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        };
        let aql = self.aql.as_ref().map(|a| AqlConfig { limit_low_us: a.limit_low_us, limit_high_us: a.limit_high_us, threshold_us: a.threshold_us });
        WifiConfig::resolve(&self.mac, &stations, qdisc, aql)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Links {
    pub down: Option<LinkSpec>,
    pub up: Option<LinkSpec>,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QdiscSpec {
    pub kind: String,
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub rate_bps: u64,
    pub buffer_bytes: Option<u64>,
    pub buffer_pkts: Option<u64>,
    #[serde(default)]
    pub loss: f64,
    pub qdisc: QdiscSpec,
    /// A Mahimahi trace: the delivery opportunities of one MTU each, in whole ms
    /// (`rate_bps` is then its mean capacity).
    #[serde(default)]
    pub trace_ms: Option<Vec<u64>>,
    /// Token-bucket policer in front of the qdisc.
    #[serde(default)]
    pub policer: Option<Bucket>,
    /// Token-bucket shaper after the qdisc.
    #[serde(default)]
    pub shaper: Option<Bucket>,
    /// Device (driver) queue below the qdisc.
    #[serde(default)]
    pub device_queue_bytes: Option<u64>,
    #[serde(default)]
    pub device_queue_pkts: Option<u64>,
    /// cake-autorate: CAKE at a controller's rate in front of this direction's
    /// qdisc and buffer, which then stand for the bottleneck's own buffer
    /// (`bloatlab_core::autorate`).
    #[serde(default)]
    pub autorate: Option<Autorate>,
}

/// The autorate element in base units; what is not here takes cake-autorate's
/// `defaults.sh` value (`bloatlab_core::autorate::controller`).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Autorate {
    pub min_bps: u64,
    pub base_bps: u64,
    pub max_bps: u64,
    /// One OWD sample every this often (all reflectors together).
    pub ping_interval_ns: u64,
    /// `owd_delta_delay_thr_ms`: an OWD this far above its baseline is a delayed sample.
    pub delay_threshold_ns: u64,
    /// `connection_active_thr_kbps`: an achieved rate below this is an idle direction.
    #[serde(default = "active_threshold_default")]
    pub active_threshold_bps: u64,
    /// Starlink satellite switch compensation (absent: off, as in `defaults.sh`).
    #[serde(default)]
    pub sss: Option<Sss>,
}

fn active_threshold_default() -> u64 {
    bloatlab_core::autorate::CONNECTION_ACTIVE_THR_KBPS as u64 * 1000
}

/// Starlink satellite switch compensation (cake-autorate 66dba8e,
/// `bloatlab_core::autorate::controller`): windows around the switch times,
/// seconds past the minute of run time.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sss {
    /// `sss_times_s`: switch times past the minute, each at most 60 s.
    pub times_ns: Vec<u64>,
    /// `sss_compensation_pre_duration_ms`: the window opens this long before a switch.
    pub pre_ns: u64,
    /// `sss_compensation_post_duration_ms`: and closes this long after it.
    pub post_ns: u64,
    /// The direction's rule: upload (`ul*sss`, the rate to min) or download (`dl*sss`, to at most base).
    /// The resolver sets it from the link direction; the check refuses a mismatch.
    pub upload: bool,
}

impl Autorate {
    /// The controller's parameters (kbit/s and µs, as the script keeps them).
    pub fn params(&self) -> bloatlab_core::autorate::Params {
        let k = |bps: u64| (bps / 1000) as i64;
        // ns to µs rounded, as the script's `printf %.0f "${s}e6"` rounds its decimal seconds to whole µs.
        let us = |ns: u64| (ns.saturating_add(500) / 1000) as i64;
        bloatlab_core::autorate::Params {
            ping_interval_ns: self.ping_interval_ns,
            owd_delta_delay_thr_us: (self.delay_threshold_ns / 1000) as i64,
            connection_active_thr_kbps: k(self.active_threshold_bps),
            sss: self.sss.as_ref().map(|s| bloatlab_core::autorate::Sss {
                times_us: s.times_ns.iter().map(|&t| us(t)).collect(),
                pre_us: us(s.pre_ns),
                post_us: us(s.post_ns),
                upload: s.upload,
            }),
            ..bloatlab_core::autorate::Params::defaults(k(self.min_bps), k(self.base_bps), k(self.max_bps))
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub rate_bps: u64,
    pub burst_bytes: u64,
}

impl LinkSpec {
    pub fn qdisc_config(&self) -> QdiscConfig {
        QdiscConfig {
            kind: self.qdisc.kind.clone(),
            limit: Limit { bytes: self.buffer_bytes, pkts: self.buffer_pkts },
            rate_bps: self.rate_bps,
            params: self.qdisc.params.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        }
    }

    pub fn stages(&self) -> Stages {
        Stages::new(
            self.policer.map(|b| (b.rate_bps, b.burst_bytes)),
            self.shaper.map(|b| (b.rate_bps, b.burst_bytes)),
            self.device_queue_bytes,
            self.device_queue_pkts,
        )
        .with_autorate(self.autorate.as_ref().map(|a| bloatlab_core::autorate::AutorateSpec { params: a.params() }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Down,
    Up,
}

impl Direction {
    pub fn index(self) -> usize {
        match self {
            Direction::Down => 0,
            Direction::Up => 1,
        }
    }
    pub fn reverse(self) -> Direction {
        match self {
            Direction::Down => Direction::Up,
            Direction::Up => Direction::Down,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    pub id: usize,
    #[serde(default)]
    pub group: usize,
    #[serde(default)]
    pub name: String,
    pub cc: String,
    pub direction: Direction,
    pub rtt_ns: Nanos,
    #[serde(default)]
    pub start_ns: Nanos,
    pub stop_ns: Option<Nanos>,
    pub size_bytes: Option<u64>,
    /// An application-limited source: the application offers at most this
    /// many bit/s (written every 10 ms); None: as fast as TCP takes it.
    #[serde(default)]
    pub app_rate_bps: Option<u64>,
    /// An on/off application (with `app_rate_bps`): writes for `on_ns`, then
    /// is silent for `off_ns`, repeating; whole 10 ms write ticks.
    #[serde(default)]
    pub on_ns: Option<Nanos>,
    #[serde(default)]
    pub off_ns: Option<Nanos>,
    /// RFC 3168 ECN on this connection; None: as the control wants (DCTCP: on).
    #[serde(default)]
    pub ecn: Option<bool>,
    /// TSO/GSO bursts as Linux sends them (the default); false: one segment
    /// at a time (simulator only: the emulator runs the kernel as it is).
    #[serde(default = "yes")]
    pub tso: bool,
    /// Paced at the kernel's pacing rate whatever the control (as `sch_fq` on
    /// the sending host or `SO_MAX_PACING_RATE` make Linux do); BBR paces anyway.
    #[serde(default)]
    pub pacing: bool,
    /// The WiFi station this flow's client sits on (index into `wifi.stations`).
    #[serde(default)]
    pub station: Option<usize>,
    /// An object of this web page (index into `pages`): a download of
    /// `size_bytes` on a connection of its own, which starts at `start_ns` if
    /// it is among the page's first `connections` objects, else as soon as an
    /// earlier object of the page has arrived at the client.
    #[serde(default)]
    pub page: Option<usize>,
    /// DiffServ code point (0-63) of the connection's packets, both ways, as
    /// a marking router or `IP_TOS` would set it: CAKE's tins look at it.
    #[serde(default)]
    pub dscp: u8,
}

/// A web page: its objects are the flows that name it, fetched in id order,
/// at most `connections` at a time, each on a new connection (handshake,
/// request, response) as a browser or wget opens them.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    pub id: usize,
    #[serde(default)]
    pub name: String,
    /// Objects in flight at once (browsers: 6 per host; wget: 1).
    pub connections: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub id: usize,
    #[serde(default)]
    pub name: String,
    pub kind: String,
    pub interval_ns: Nanos,
    pub rtt_ns: Nanos,
    pub size_bytes: u32,
    /// The direction whose queue the echo *reply* crosses.
    pub direction: Direction,
    /// The WiFi station the probe's client sits on.
    #[serde(default)]
    pub station: Option<usize>,
    /// DiffServ code point (0-63) of the probe's requests and replies
    /// (e.g. 46, EF, for a VoIP-like probe in CAKE's voice tin).
    #[serde(default)]
    pub dscp: u8,
}

/// The most packets one train carries: `bloatlab-probe server`'s bound on a train it sends or records (its
/// `train::MAX_COUNT`), which the emulator's trains go through.
pub const TRAIN_MAX_PACKETS: u32 = 4096;
/// A train packet's UDP payload, bytes: at least the probe's train header and MAC (its `train::MIN_SIZE`), at
/// most what fits a 1500-byte packet over IPv4 (1472).
pub const TRAIN_SIZE_BYTES: (u32, u32) = (64, 1472);
/// The longest a paced train may take to send, ns: `bloatlab-probe server` paces a train at most this long (its
/// `train::MAX_PACED_NS`: a server facing the network does not hold a sender thread longer for one client).
pub const TRAIN_MAX_PACED_NS: Nanos = 1_000_000_000;

/// A one-way packet train: `packets` UDP datagrams of `size_bytes` from the
/// server (down) or the client (up), back to back or paced at `rate_bps`,
/// from `start_ns`; the receiver counts them and stamps their arrival.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Train {
    pub id: usize,
    #[serde(default)]
    pub name: String,
    pub start_ns: Nanos,
    pub packets: u32,
    /// UDP payload of each packet.
    pub size_bytes: u32,
    /// The sender's pace, bit/s of IP packets (payload + 28 B); None: back to back.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// The direction whose queue the train crosses.
    pub direction: Direction,
    /// Base RTT of its path (half each way).
    pub rtt_ns: Nanos,
    /// The WiFi station its client sits on.
    #[serde(default)]
    pub station: Option<usize>,
}

impl Train {
    /// IP bytes of one packet (UDP and IPv4 headers, 28 B, on the payload).
    pub fn wire_bytes(&self) -> u64 {
        (self.size_bytes as usize + crate::wire::IPV4_HDR + crate::wire::UDP_HDR) as u64
    }

    /// When the sender hands packet `i` to the network, ns after `start_ns`: back to back all at once, paced every
    /// `wire_bytes * 8 / rate_bps` seconds.
    pub fn send_offset_ns(&self, i: u32) -> Nanos {
        self.rate_bps.map_or(0, |r| (i as u128 * self.wire_bytes() as u128 * 8 * 1_000_000_000 / r as u128) as Nanos)
    }
}

impl Scenario {
    pub fn from_json(s: &str) -> Result<Scenario, String> {
        let sc: Scenario = serde_json::from_str(s).map_err(|e| format!("resolved scenario: {e}"))?;
        sc.check()?;
        Ok(sc)
    }

    /// Invariants the Python layer guarantees, checked again for every engine so
    /// that a hand-written resolved file cannot make an engine panic; each error
    /// names its key. What only one engine needs (the simulator's congestion
    /// controls, the emulator's port range) that engine checks itself.
    pub fn check(&self) -> Result<(), String> {
        if self.duration_ns == 0 || self.sample_interval_ns == 0 {
            return Err("duration_ns and sample_interval_ns must be > 0".into());
        }
        if self.rx_jitter_ns > MAX_RX_JITTER_NS {
            return Err(format!("rx_jitter_ns: at most {MAX_RX_JITTER_NS} (10 ms), got {}", self.rx_jitter_ns));
        }
        for (d, l) in [("down", &self.links.down), ("up", &self.links.up)] {
            if let Some(l) = l {
                if l.rate_bps == 0 {
                    return Err(format!("links.{d}.rate_bps must be > 0"));
                }
                if !(0.0..=1.0).contains(&l.loss) {
                    return Err(format!("links.{d}.loss: must be in [0, 1], got {}", l.loss));
                }
                if l.buffer_bytes.is_none() && l.buffer_pkts.is_none() {
                    return Err(format!("links.{d}: buffer_bytes or buffer_pkts is needed"));
                }
                if let Some(t) = &l.trace_ms {
                    bloatlab_core::trace::Trace::check(t).map_err(|e| format!("links.{d}.trace_ms: {e}"))?;
                }
                if let Some(a) = &l.autorate {
                    a.params().check().map_err(|e| format!("links.{d}.autorate.{e}"))?;
                    if let Some(s) = &a.sss {
                        if s.upload != (d == "up") {
                            return Err(format!("links.{d}.autorate.sss.upload: must be {} on the {d} link", d == "up"));
                        }
                    }
                }
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.id != i {
                return Err(format!("flows[{i}].id must be {i}"));
            }
            if f.rtt_ns == 0 {
                return Err(format!("flows[{i}].rtt_ns must be > 0"));
            }
            if f.dscp > 63 {
                return Err(format!("flows[{i}].dscp: a DiffServ code point is 0-63, got {}", f.dscp));
            }
            if f.app_rate_bps == Some(0) {
                return Err(format!("flows[{i}].app_rate_bps must be > 0"));
            }
            match (f.on_ns, f.off_ns) {
                (None, None) => {}
                (Some(on), Some(off)) => {
                    if f.app_rate_bps.is_none() {
                        return Err(format!("flows[{i}]: on_ns/off_ns need app_rate_bps"));
                    }
                    if on == 0 || on % APP_TICK_NS != 0 || off % APP_TICK_NS != 0 {
                        return Err(format!("flows[{i}]: on_ns and off_ns must be whole 10 ms write ticks, on_ns > 0"));
                    }
                }
                _ => return Err(format!("flows[{i}]: on_ns and off_ns go together")),
            }
        }
        for (i, p) in self.probes.iter().enumerate() {
            if p.id != i || p.interval_ns == 0 || p.rtt_ns == 0 {
                return Err(format!("probes[{i}]: id must be {i}, interval_ns and rtt_ns > 0"));
            }
            if p.dscp > 63 {
                return Err(format!("probes[{i}].dscp: a DiffServ code point is 0-63, got {}", p.dscp));
            }
        }
        for (i, t) in self.trains.iter().enumerate() {
            if t.id != i || t.rtt_ns == 0 {
                return Err(format!("trains[{i}]: id must be {i} and rtt_ns > 0"));
            }
            if !(1..=TRAIN_MAX_PACKETS).contains(&t.packets) {
                return Err(format!("trains[{i}].packets: 1..{TRAIN_MAX_PACKETS}, got {}", t.packets));
            }
            if !(TRAIN_SIZE_BYTES.0..=TRAIN_SIZE_BYTES.1).contains(&t.size_bytes) {
                return Err(format!("trains[{i}].size_bytes: {}..{}, got {}", TRAIN_SIZE_BYTES.0, TRAIN_SIZE_BYTES.1, t.size_bytes));
            }
            if t.rate_bps == Some(0) {
                return Err(format!("trains[{i}].rate_bps must be > 0"));
            }
            if t.send_offset_ns(t.packets - 1) > TRAIN_MAX_PACED_NS {
                return Err(format!("trains[{i}]: a paced train takes at most 1 s to send"));
            }
            if t.start_ns >= self.duration_ns {
                return Err(format!("trains[{i}].start_ns: before duration_ns"));
            }
        }
        for (i, pg) in self.pages.iter().enumerate() {
            if pg.id != i || pg.connections == 0 {
                return Err(format!("pages[{i}]: id must be {i} and connections > 0"));
            }
            let objects: Vec<&Flow> = self.flows.iter().filter(|f| f.page == Some(i)).collect();
            let Some(first) = objects.first() else {
                return Err(format!("pages[{i}]: no flow is an object of this page"));
            };
            for f in &objects {
                if f.size_bytes.is_none() || f.direction != Direction::Down || f.stop_ns.is_some() || f.app_rate_bps.is_some() {
                    return Err(format!("flows[{}]: an object of pages[{i}] is a download of a size, with no stop or rate", f.id));
                }
                if f.start_ns != first.start_ns {
                    return Err(format!("flows[{}].start_ns: the objects of pages[{i}] start with the page ({} ns)", f.id, first.start_ns));
                }
            }
        }
        if let Some(f) = self.flows.iter().find(|f| f.page.is_some_and(|p| p >= self.pages.len())) {
            return Err(format!("flows[{}].page: no such page (there are {})", f.id, self.pages.len()));
        }
        let n_sta = self.wifi.as_ref().map_or(0, |w| w.stations.len());
        let stations = self.flows.iter().map(|f| ("flows", f.id, f.station)).chain(self.probes.iter().map(|p| ("probes", p.id, p.station)))
            .chain(self.trains.iter().map(|t| ("trains", t.id, t.station)));
        for (what, i, s) in stations {
            if s.is_some_and(|s| s >= n_sta) {
                return Err(format!("{what}[{i}].station: no such wifi station (there are {n_sta})"));
            }
        }
        if self.shell_station.is_some_and(|s| s >= n_sta) {
            return Err(format!("shell_station: no such wifi station (there are {n_sta})"));
        }
        if let Some(w) = &self.wifi {
            w.config()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"name":"t","seed":3,"duration_ns":5000000000,"sample_interval_ns":10000000,
      "links":{"down":{"rate_bps":10000000,"buffer_bytes":100000,"buffer_pkts":null,"loss":0.0,
        "qdisc":{"kind":"fifo","params":{}},"trace_ms":null},"up":null},
      "flows":[{"id":0,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":40000000,
        "start_ns":0,"stop_ns":null,"size_bytes":null,"ecn":null}],
      "probes":[{"id":0,"name":"p","kind":"udp","interval_ns":10000000,"rtt_ns":40000000,"size_bytes":64,"direction":"up"}]}"#;

    #[test]
    fn a_well_formed_document_reads_with_integer_rates_and_typed_directions() {
        let sc = Scenario::from_json(DOC).unwrap();
        assert_eq!(sc.links.down.as_ref().unwrap().rate_bps, 10_000_000);
        assert_eq!(sc.flows[0].direction, Direction::Down);
        assert_eq!(sc.probes[0].direction, Direction::Up);
        assert_eq!(sc.flows[0].ecn, None);
    }

    #[test]
    fn an_unknown_key_anywhere_is_refused_by_name() {
        for (from, to, key) in [
            ("\"ecn\":null", "\"ecn\":null,\"colour\":1", "colour"),
            ("\"trace_ms\":null", "\"trace_ms\":null,\"jitter\":1", "jitter"),
            ("\"size_bytes\":64", "\"size_bytes\":64,\"ttl\":3", "ttl"),
        ] {
            let e = Scenario::from_json(&DOC.replace(from, to)).unwrap_err();
            assert!(e.contains(&format!("unknown field `{key}`")), "{e}");
        }
    }

    #[test]
    fn a_fractional_rate_is_refused_since_rates_are_whole_bits_per_second() {
        let e = Scenario::from_json(&DOC.replace("\"rate_bps\":10000000", "\"rate_bps\":1e7")).unwrap_err();
        assert!(e.starts_with("resolved scenario:"), "{e}");
    }

    #[test]
    fn ids_must_be_their_index() {
        let e = Scenario::from_json(&DOC.replace("\"id\":0,\"group\"", "\"id\":7,\"group\"")).unwrap_err();
        assert_eq!(e, "flows[0].id must be 0");
        let e = Scenario::from_json(&DOC.replace("\"id\":0,\"name\":\"p\"", "\"id\":1,\"name\":\"p\"")).unwrap_err();
        assert!(e.starts_with("probes[0]: id must be 0"), "{e}");
    }

    #[test]
    fn a_trace_must_not_go_back_in_time() {
        let e = Scenario::from_json(&DOC.replace("\"trace_ms\":null", "\"trace_ms\":[1,3,2]")).unwrap_err();
        assert!(e.starts_with("links.down.trace_ms:"), "{e}");
        assert!(Scenario::from_json(&DOC.replace("\"trace_ms\":null", "\"trace_ms\":[0,0,2]")).is_ok());
    }

    #[test]
    fn an_autorate_element_is_checked_as_cake_autorate_checks_its_config_naming_the_key() {
        let with = |a: &str| DOC.replace("\"trace_ms\":null", &format!("\"trace_ms\":null,\"autorate\":{a}"));
        let ok = r#"{"min_bps":5000000,"base_bps":20000000,"max_bps":80000000,"ping_interval_ns":50000000,"delay_threshold_ns":30000000}"#;
        let sc = Scenario::from_json(&with(ok)).unwrap();
        let p = sc.links.down.as_ref().unwrap().autorate.as_ref().unwrap().params();
        assert_eq!((p.min_kbps, p.base_kbps, p.max_kbps, p.owd_delta_delay_thr_us), (5000, 20000, 80000, 30_000));
        let e = Scenario::from_json(&with(&ok.replace("\"min_bps\":5000000", "\"min_bps\":90000000"))).unwrap_err();
        assert_eq!(e, "links.down.autorate.min (90000 kbit/s) must not exceed max (80000 kbit/s)");
        let e = Scenario::from_json(&with(&ok.replace("\"ping_interval_ns\":50000000", "\"ping_interval_ns\":0"))).unwrap_err();
        assert_eq!(e, "links.down.autorate.ping_interval: must be > 0");
        // Satellite switch compensation: the download rule on the down link, bounds named.
        let sss = |s: &str| ok.replace("\"delay_threshold_ns\":30000000", &format!("\"delay_threshold_ns\":30000000,\"sss\":{s}"));
        let fine = r#"{"times_ns":[12000000000],"pre_ns":300000000,"post_ns":200000000,"upload":false}"#;
        let sc = Scenario::from_json(&with(&sss(fine))).unwrap();
        assert_eq!(sc.links.down.as_ref().unwrap().autorate.as_ref().unwrap().params().sss.unwrap().times_us, vec![12_000_000]);
        let e = Scenario::from_json(&with(&sss(&fine.replace("false", "true")))).unwrap_err();
        assert_eq!(e, "links.down.autorate.sss.upload: must be false on the down link");
        let e = Scenario::from_json(&with(&sss(&fine.replace("12000000000", "61000000000")))).unwrap_err();
        assert_eq!(e, "links.down.autorate.sss.times.0: must lie within 0-60 s past the minute, got 61000000 µs");
    }

    #[test]
    fn a_page_needs_sized_downloads_that_start_together() {
        let page = DOC.replace("\"ecn\":null}]", "\"ecn\":null,\"page\":0}],\"pages\":[{\"id\":0,\"name\":\"w\",\"connections\":2}]");
        let e = Scenario::from_json(&page).unwrap_err();
        assert_eq!(e, "flows[0]: an object of pages[0] is a download of a size, with no stop or rate");
        assert!(Scenario::from_json(&page.replace("\"size_bytes\":null", "\"size_bytes\":30000")).is_ok());
        let e = Scenario::from_json(&page.replace("\"page\":0", "\"page\":1")).unwrap_err();
        assert!(e.starts_with("pages[0]: no flow is an object"), "{e}");
        let e = Scenario::from_json(&page.replace("\"connections\":2", "\"connections\":0")).unwrap_err();
        assert_eq!(e, "pages[0]: id must be 0 and connections > 0");
    }

    #[test]
    fn a_station_that_does_not_exist_is_named() {
        let e = Scenario::from_json(&DOC.replace("\"ecn\":null", "\"ecn\":null,\"station\":2")).unwrap_err();
        assert_eq!(e, "flows[0].station: no such wifi station (there are 0)");
    }
}
