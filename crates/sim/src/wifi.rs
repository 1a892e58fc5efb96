//! The WiFi link in the simulator: the core's [`Wifi`] medium (AP + stations)
//! driven in virtual time. A flow or probe with a `station` crosses the
//! medium instead of the wired links: downlink packets queue at the AP,
//! uplink packets (ACKs included) at their station; after the medium they
//! propagate their one-way delay like after a wired bottleneck.

use crate::output::DistOut;
use crate::packet::Payload;
use crate::scenario::WifiSpec;
use bloatlab_core::qdisc::{Dropped, Limit, Packet, PacketMeta, QdiscConfig};
use bloatlab_core::rng::Rng;
use bloatlab_core::time::Nanos;
use bloatlab_core::wifi::{Delivered, StationInput, Wifi, WifiConfig};
use serde::Serialize;

/// The core configuration a resolved `[wifi]` describes.
pub fn config(w: &WifiSpec) -> Result<WifiConfig, String> {
    let stations: Vec<StationInput> = w
        .stations
        .iter()
        .map(|s| StationInput { name: s.name.clone(), mcs: s.mcs, phy_rate_bps: s.phy_rate_bps, mpdu_error: s.mpdu_error, weight: s.weight })
        .collect();
    let qdisc = QdiscConfig {
        kind: w.qdisc.kind.clone(),
        limit: Limit { bytes: w.buffer_bytes, pkts: w.buffer_pkts },
        rate_bps: 0,
        params: w.qdisc.params.iter().map(|(k, v)| (k.clone(), *v)).collect(),
    };
    WifiConfig::resolve(&w.mac, &stations, qdisc)
}

/// The medium, its RNG stream and the pending poll event.
pub struct WifiLink {
    pub w: Wifi<Payload>,
    rng: Rng,
    /// A WifiPoll event is pending for this time.
    pub scheduled: Option<Nanos>,
    pub out: Vec<Delivered<Payload>>,
    drops: Vec<Dropped<Payload>>,
}

impl WifiLink {
    pub fn new(spec: &WifiSpec, rng: Rng) -> Result<WifiLink, String> {
        Ok(WifiLink { w: Wifi::new(&config(spec)?)?, rng, scheduled: None, out: Vec::new(), drops: Vec::new() })
    }

    /// A packet enters the medium: towards station `sta` (`up` = false) or from it.
    pub fn enqueue(&mut self, now: Nanos, sta: usize, up: bool, meta: PacketMeta, p: Payload) {
        self.w.enqueue(now, sta, up, Packet { meta, data: p }, &mut self.rng, &mut self.drops);
        // Dropped packets are simply gone; the station statistics count them.
        self.drops.clear();
    }

    /// Run the medium up to `now`; delivered packets are left in `out`.
    pub fn poll(&mut self, now: Nanos) {
        self.w.poll(now, &mut self.rng, &mut self.out, &mut self.drops);
        self.drops.clear();
    }

    /// If the medium needs a poll earlier than the one pending, its time.
    pub fn reschedule(&mut self) -> Option<Nanos> {
        let t = self.w.next_event()?;
        if self.scheduled.is_none_or(|s| t < s) {
            self.scheduled = Some(t);
            return Some(t);
        }
        None
    }

    pub fn output(&mut self) -> WifiOut {
        let stations = self
            .w
            .stations
            .iter_mut()
            .zip(&self.w.names)
            .map(|(s, name)| StationOut {
                name: name.clone(),
                phy_rate_bps: 0,
                down_bytes: s.down_bytes,
                up_bytes: s.up_bytes,
                down_pkts: s.down_pkts,
                up_pkts: s.up_pkts,
                airtime_s: s.airtime_ns as f64 / 1e9,
                down_aggregates: s.down_aggregates,
                down_frames: s.down_frames,
                up_aggregates: s.up_aggregates,
                up_frames: s.up_frames,
                retries: s.retries,
                collisions: s.collisions,
                retry_drops: s.retry_drops,
                queue_drops: s.queue_drops,
                qdelay_ms: DistOut::of(&mut s.qdelay_ms),
            })
            .collect::<Vec<StationOut>>();
        let mut stations = stations;
        for (s, r) in stations.iter_mut().zip(self.w.phy_rates()) {
            s.phy_rate_bps = r;
        }
        let m = &self.w.stats;
        WifiOut {
            mac: self.w.design.name(),
            txops: m.txops,
            collisions: m.collisions,
            busy_s: m.busy_ns as f64 / 1e9,
            marks: m.marks,
            stations,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct StationOut {
    pub name: String,
    pub phy_rate_bps: u64,
    pub down_bytes: u64,
    pub up_bytes: u64,
    pub down_pkts: u64,
    pub up_pkts: u64,
    pub airtime_s: f64,
    pub down_aggregates: u64,
    pub down_frames: u64,
    pub up_aggregates: u64,
    pub up_frames: u64,
    pub retries: u64,
    pub collisions: u64,
    pub retry_drops: u64,
    pub queue_drops: u64,
    pub qdelay_ms: DistOut,
}

#[derive(Debug, Serialize)]
pub struct WifiOut {
    pub mac: &'static str,
    pub txops: u64,
    pub collisions: u64,
    pub busy_s: f64,
    pub marks: u64,
    pub stations: Vec<StationOut>,
}
