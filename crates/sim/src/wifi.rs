//! The WiFi link in the simulator: the core's [`Wifi`] medium (AP + stations)
//! driven in virtual time. A flow or probe with a `station` crosses the
//! medium: downlink packets queue at the AP, uplink packets (ACKs included)
//! at their station. A scenario's `[link]` directions are the AP's line, in
//! series with the medium: down, the line's bottleneck first and then the AP;
//! up, the medium first and then the line (`World::emit`,
//! `World::on_tx_done`, `World::on_wifi_poll`). After the last of them a
//! packet propagates its one-way delay, as after a wired bottleneck alone.

use bloatlab_schema::result::DistOut;
use crate::packet::Payload;
use crate::scenario::WifiSpec;
use bloatlab_core::qdisc::{Dropped, Packet, PacketMeta};
use bloatlab_core::rng::Rng;
use bloatlab_core::time::Nanos;
use bloatlab_core::wifi::{Delivered, Wifi};
use serde::Serialize;
use std::collections::BTreeMap;

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
        Ok(WifiLink { w: Wifi::new(&spec.config()?)?, rng, scheduled: None, out: Vec::new(), drops: Vec::new() })
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
        let rates: Vec<u64> = self.w.phy_rates().collect();
        let names = self.w.names.clone();
        let stations = self
            .w
            .stations
            .iter_mut()
            .enumerate()
            .map(|(i, s)| StationOut {
                name: names[i].clone(),
                phy_rate_bps: rates[i],
                counters: s.counters().into_iter().collect(),
                qdelay_ms: DistOut::of(&mut s.qdelay_ms),
            })
            .collect();
        WifiOut { mac: self.w.design.name(), counters: self.w.stats.counters().into_iter().collect(), stations }
    }
}

/// The raw result's `wifi` object (docs/engine-interface.md).
#[derive(Debug, Serialize)]
pub struct StationOut {
    pub name: String,
    pub phy_rate_bps: u64,
    #[serde(flatten)]
    pub counters: BTreeMap<&'static str, f64>,
    pub qdelay_ms: DistOut,
}

#[derive(Debug, Serialize)]
pub struct WifiOut {
    pub mac: &'static str,
    #[serde(flatten)]
    pub counters: BTreeMap<&'static str, f64>,
    pub stations: Vec<StationOut>,
}
