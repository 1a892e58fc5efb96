//! The resolved scenario of `docs/engine-interface.md`, as the emulator reads
//! it (Python has validated it; errors here name the key anyway).

use crate::link::{LinkConfig, Service};
use crate::trace::Trace;
use bloatlab_core::qdisc::chain::Stages;
use bloatlab_core::qdisc::{Limit, QdiscConfig};
use bloatlab_core::time::Nanos;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
pub struct Resolved {
    #[serde(default)]
    pub name: String,
    #[serde(default = "one")]
    pub seed: u64,
    pub duration_ns: u64,
    #[serde(default = "ten_ms")]
    pub sample_interval_ns: u64,
    pub links: Links,
    #[serde(default)]
    pub flows: Vec<Flow>,
    #[serde(default)]
    pub probes: Vec<Probe>,
    /// Shell mode: the one-way delay of traffic that is no flow's (half this RTT).
    #[serde(default)]
    pub default_rtt_ns: Option<u64>,
    /// A WiFi medium instead of the links (docs/wifi.md); read by [`crate::wifi::config`].
    #[serde(default)]
    pub wifi: Option<serde_json::Value>,
    /// Shell mode with WiFi: the station whose traffic is everything that is no flow's or probe's.
    #[serde(default)]
    pub shell_station: Option<usize>,
}
fn one() -> u64 {
    1
}
fn ten_ms() -> u64 {
    10_000_000
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
    pub rate_bps: f64,
    pub buffer_bytes: Option<u64>,
    pub buffer_pkts: Option<u64>,
    #[serde(default)]
    pub loss: f64,
    pub qdisc: QdiscSpec,
    #[serde(default)]
    pub trace_ms: Option<Vec<u64>>,
    /// Policer in front of the qdisc, shaper after it, device queue below it
    /// (the same stages as the simulator: `bloatlab_core::qdisc::chain`).
    #[serde(default)]
    pub policer: Option<Bucket>,
    #[serde(default)]
    pub shaper: Option<Bucket>,
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

#[derive(Debug, Clone, Deserialize)]
pub struct Flow {
    pub id: u32,
    #[serde(default)]
    pub name: String,
    pub cc: String,
    pub direction: String,
    pub rtt_ns: u64,
    #[serde(default)]
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub size_bytes: Option<u64>,
    /// The WiFi station of the flow's client.
    #[serde(default)]
    pub station: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Probe {
    pub id: u32,
    pub interval_ns: u64,
    pub rtt_ns: u64,
    #[serde(default = "size64")]
    pub size_bytes: u64,
    pub direction: String,
    /// The WiFi station of the probe's client.
    #[serde(default)]
    pub station: Option<usize>,
}
fn size64() -> u64 {
    64
}

/// Server ports: flow i listens on FLOW_PORT + i, probe j on PROBE_PORT + j;
/// the sender of flow i binds FLOW_CPORT + i. Namespaces keep ephemeral ports above 40000.
pub const FLOW_PORT: u16 = 20000;
pub const FLOW_CPORT: u16 = 25000;
pub const PROBE_PORT: u16 = 30000;
pub const MAX_FLOWS: usize = 5000;

impl Resolved {
    pub fn from_json(text: &str) -> Result<Resolved, String> {
        let r: Resolved = serde_json::from_str(text).map_err(|e| format!("resolved scenario: {e}"))?;
        if r.flows.len() > MAX_FLOWS {
            return Err(format!("flow: the emulator runs at most {MAX_FLOWS} flows, got {}", r.flows.len()));
        }
        for f in &r.flows {
            if f.direction != "down" && f.direction != "up" {
                return Err(format!("flow.{}.direction: expected down or up, got \"{}\"", f.id, f.direction));
            }
        }
        Ok(r)
    }

    /// One-way delay by server port, and the default for other traffic.
    pub fn delays(&self) -> (Vec<u64>, Nanos) {
        let mut by_port = vec![u64::MAX; 65536];
        for f in &self.flows {
            by_port[(FLOW_PORT as usize) + f.id as usize] = f.rtt_ns / 2;
            by_port[(FLOW_CPORT as usize) + f.id as usize] = f.rtt_ns / 2;
        }
        for p in &self.probes {
            by_port[(PROBE_PORT as usize) + p.id as usize] = p.rtt_ns / 2;
        }
        let default_rtt = self
            .default_rtt_ns
            .or_else(|| self.flows.iter().map(|f| f.rtt_ns).min())
            .or_else(|| self.probes.iter().map(|p| p.rtt_ns).min())
            .unwrap_or(0);
        (by_port, default_rtt / 2)
    }

    /// The link model of direction `dir` ("down" = 0, "up" = 1).
    pub fn link_config(&self, dir: &str) -> Result<LinkConfig, String> {
        let (delay_by_port, default_delay) = self.delays();
        let (spec, idx) = match dir {
            "down" => (&self.links.down, 0),
            _ => (&self.links.up, 1),
        };
        let (service, qdisc, loss, stages) = match spec {
            None => (Service::Unlimited, QdiscConfig::default(), 0.0, Stages::default()),
            Some(s) => {
                let service = match &s.trace_ms {
                    Some(ms) => Service::Trace(Trace::new(ms.clone()).map_err(|e| format!("links.{dir}.trace_ms: {e}"))?),
                    None => {
                        if !(s.rate_bps >= 1.0) {
                            return Err(format!("links.{dir}.rate_bps: expected a positive rate, got {}", s.rate_bps));
                        }
                        Service::Rate(s.rate_bps as u64)
                    }
                };
                if !(0.0..=1.0).contains(&s.loss) {
                    return Err(format!("links.{dir}.loss: expected a probability in [0, 1], got {}", s.loss));
                }
                let q = QdiscConfig {
                    kind: s.qdisc.kind.clone(),
                    limit: Limit { bytes: s.buffer_bytes, pkts: s.buffer_pkts },
                    rate_bps: s.rate_bps as u64,
                    params: s.qdisc.params.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                };
                let stages = Stages::new(
                    s.policer.map(|b| (b.rate_bps, b.burst_bytes)),
                    s.shaper.map(|b| (b.rate_bps, b.burst_bytes)),
                    s.device_queue_bytes,
                    s.device_queue_pkts,
                );
                (service, q, s.loss, stages)
            }
        };
        Ok(LinkConfig {
            service,
            qdisc,
            stages,
            loss,
            seed: self.seed,
            dir_index: idx,
            delay_by_port,
            default_delay,
            sample_interval: self.sample_interval_ns.max(1_000_000),
            measure_until: self.duration_ns,
            measure_from: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const DOC: &str = r#"{"name":"t","seed":3,"duration_ns":5000000000,"sample_interval_ns":10000000,
      "links":{"down":{"rate_bps":1e7,"buffer_bytes":100000,"buffer_pkts":null,"loss":0.01,
        "qdisc":{"kind":"fifo","params":{}},"trace_ms":null},"up":null},
      "flows":[{"id":0,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":40000000,
        "start_ns":0,"stop_ns":null,"size_bytes":null},
        {"id":1,"group":1,"name":"b","cc":"bbr","direction":"down","rtt_ns":100000000,
        "start_ns":0,"stop_ns":null,"size_bytes":null}],
      "probes":[{"id":0,"name":"p","kind":"udp","interval_ns":10000000,"rtt_ns":40000000,"size_bytes":64,"direction":"down"}]}"#;

    #[test]
    fn each_flow_and_probe_port_gets_half_its_rtt_and_other_traffic_the_smallest() {
        let r = Resolved::from_json(DOC).unwrap();
        let (d, def) = r.delays();
        assert_eq!(d[20000], 20_000_000);
        assert_eq!(d[20001], 50_000_000);
        assert_eq!(d[25001], 50_000_000);
        assert_eq!(d[30000], 20_000_000);
        assert_eq!(d[20002], u64::MAX);
        assert_eq!(def, 20_000_000);
    }

    #[test]
    fn a_direction_without_a_link_has_no_bottleneck() {
        let r = Resolved::from_json(DOC).unwrap();
        assert!(matches!(r.link_config("up").unwrap().service, Service::Unlimited));
        assert!(matches!(r.link_config("down").unwrap().service, Service::Rate(10_000_000)));
    }

    #[test]
    fn a_loss_above_one_is_an_error_naming_the_key() {
        let bad = DOC.replace("\"loss\":0.01", "\"loss\":1.5");
        let e = Resolved::from_json(&bad).unwrap().link_config("down").unwrap_err();
        assert!(e.starts_with("links.down.loss:"), "{e}");
    }
}
