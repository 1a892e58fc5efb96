//! The resolved scenario (docs/engine-interface.md): SI base units, `count`
//! expanded, validated by the Python layer. Deserialised with serde; a
//! malformed document is an error string, never a panic.

use bloatlab_core::qdisc::chain::Stages;
use bloatlab_core::qdisc::{Limit, QdiscConfig};
use bloatlab_core::time::Nanos;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
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
    /// A WiFi medium between the AP (server side) and its stations (docs/wifi.md).
    #[serde(default)]
    pub wifi: Option<WifiSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WifiSpec {
    /// `legacy`, `fq` or `airtime`.
    pub mac: String,
    /// Legacy: the interface qdisc of the AP and of each station, and its buffer.
    pub qdisc: QdiscSpec,
    pub buffer_bytes: Option<u64>,
    pub buffer_pkts: Option<u64>,
    pub stations: Vec<StationSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationSpec {
    pub name: String,
    /// HT20 long-GI MCS index 0-15, or
    #[serde(default)]
    pub mcs: Option<u32>,
    /// a PHY rate given directly (streams implied, see the core's `Phy::from_rate`).
    #[serde(default)]
    pub phy_rate_bps: Option<u64>,
    #[serde(default)]
    pub mpdu_error: f64,
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
pub struct Links {
    pub down: Option<LinkSpec>,
    pub up: Option<LinkSpec>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct QdiscSpec {
    pub kind: String,
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LinkSpec {
    pub rate_bps: u64,
    pub buffer_bytes: Option<u64>,
    pub buffer_pkts: Option<u64>,
    #[serde(default)]
    pub loss: f64,
    pub qdisc: QdiscSpec,
    #[serde(default)]
    pub trace_ms: Option<Vec<f64>>,
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
}

#[derive(Debug, Clone, Copy, Deserialize)]
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
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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

#[derive(Debug, Clone, Deserialize)]
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
    /// RFC 3168 ECN on this connection; None: as the control wants (DCTCP: on).
    #[serde(default)]
    pub ecn: Option<bool>,
    /// The WiFi station this flow's client sits on (index into `wifi.stations`).
    #[serde(default)]
    pub station: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
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
}

impl Scenario {
    pub fn from_json(s: &str) -> Result<Scenario, String> {
        let sc: Scenario = serde_json::from_str(s).map_err(|e| format!("resolved scenario: {e}"))?;
        sc.check()?;
        Ok(sc)
    }

    /// Invariants the Python layer guarantees; checked again so that a hand-written
    /// resolved file cannot make the engine panic.
    fn check(&self) -> Result<(), String> {
        if self.duration_ns == 0 || self.sample_interval_ns == 0 {
            return Err("duration_ns and sample_interval_ns must be > 0".into());
        }
        if self.flows.is_empty() {
            return Err("flows: at least one flow is needed".into());
        }
        for (d, l) in [("down", &self.links.down), ("up", &self.links.up)] {
            if let Some(l) = l {
                if l.rate_bps == 0 {
                    return Err(format!("links.{d}.rate_bps must be > 0"));
                }
                if !(0.0..=1.0).contains(&l.loss) {
                    return Err(format!("links.{d}.loss must be in [0, 1]"));
                }
                if l.buffer_bytes.is_none() && l.buffer_pkts.is_none() {
                    return Err(format!("links.{d}: buffer_bytes or buffer_pkts is needed"));
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
            if bloatlab_core::cc::by_name(&f.cc).is_none() {
                return Err(format!("flows[{i}].cc: unknown congestion control \"{}\"", f.cc));
            }
        }
        for (i, p) in self.probes.iter().enumerate() {
            if p.id != i || p.interval_ns == 0 || p.rtt_ns == 0 {
                return Err(format!("probes[{i}]: id must be {i}, interval_ns and rtt_ns > 0"));
            }
        }
        let n_sta = self.wifi.as_ref().map_or(0, |w| w.stations.len());
        let stations = self.flows.iter().map(|f| ("flows", f.id, f.station)).chain(self.probes.iter().map(|p| ("probes", p.id, p.station)));
        for (what, i, s) in stations {
            if s.is_some_and(|s| s >= n_sta) {
                return Err(format!("{what}[{i}].station: no such wifi station (there are {n_sta})"));
            }
        }
        if let Some(w) = &self.wifi {
            crate::wifi::config(w)?;
        }
        Ok(())
    }
}
