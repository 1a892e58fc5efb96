//! The raw result's shared pieces (docs/engine-interface.md). Written once so
//! that every engine and the probe emit the same shape.

use bloatlab_core::stats::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A distribution as the raw result carries it: count, mean and percentiles
/// (computed by `bloatlab_core::stats::Dist`, linear interpolation). A value
/// is `None` (JSON `null`) when there are no samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistOut {
    pub n: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl DistOut {
    /// The summary of `xs` (sorted in place).
    pub fn of(xs: &mut [f64]) -> DistOut {
        DistOut::from_dist(Dist::of(xs))
    }

    /// A [`Dist`] as the raw result carries it (non-finite values as `None`).
    pub fn from_dist(d: Dist) -> DistOut {
        DistOut { n: d.n, mean: finite(d.mean), p50: finite(d.p50), p95: finite(d.p95), p99: finite(d.p99), max: finite(d.max) }
    }

    /// The summary of `xs` as the JSON value a raw result carries.
    pub fn json_of(xs: &mut [f64]) -> serde_json::Value {
        serde_json::to_value(DistOut::of(xs)).expect("DistOut serializes")
    }
}

/// One packet train as the raw result carries it (`trains[]`, docs/results.md), written by the simulator from its
/// receiver's arrivals and by the emulator from `bloatlab-probe udp train`'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainOut {
    pub id: usize,
    /// packets the sender sent
    pub sent: u64,
    /// packets the receiver got
    pub received: u64,
    /// each received packet's one-way delay, its send to its arrival (ms)
    pub delay_ms: DistOut,
    /// the first and the last arrival, s from the run's start (None: nothing arrived)
    pub first_s: Option<f64>,
    pub last_s: Option<f64>,
    /// the receiver's rate over the train: the bits of every packet after the first over the first to the last
    /// arrival (Mbit/s of IP packets; None under two arrivals or a span of zero): the dispersion rate of a packet
    /// train (Dovrolis et al., "Packet-dispersion techniques and a capacity-estimation methodology", 2004)
    pub dispersion_mbps: Option<f64>,
}

impl TrainOut {
    /// The record of train `id` of `wire_bytes` a packet from its packets' send times and arrival times (ns from
    /// the run's start; None: lost).
    pub fn of(id: usize, wire_bytes: u64, sent_at: &[u64], arrived_at: &[Option<u64>]) -> TrainOut {
        let mut delays: Vec<f64> =
            sent_at.iter().zip(arrived_at).filter_map(|(&s, a)| a.map(|a| a.saturating_sub(s) as f64 / 1e6)).collect();
        let first = arrived_at.iter().flatten().min().copied();
        let last = arrived_at.iter().flatten().max().copied();
        let received = delays.len() as u64;
        let dispersion_mbps = match (first, last) {
            (Some(f), Some(l)) if received > 1 && l > f => Some((received - 1) as f64 * wire_bytes as f64 * 8e3 / (l - f) as f64),
            _ => None,
        };
        TrainOut {
            id,
            sent: sent_at.len() as u64,
            received,
            delay_ms: DistOut::of(&mut delays),
            first_s: first.map(|t| t as f64 / 1e9),
            last_s: last.map(|t| t as f64 / 1e9),
            dispersion_mbps,
        }
    }
}

/// One flow as the raw result carries it (`flows[]`), written by the
/// simulator (from its sender) and by the probe (from a kernel socket's
/// `TCP_INFO`). Two figures are the simulator's alone and left out (`None`)
/// where an engine does not report them: the probe's raw record has never
/// carried `cc` or `lost_segs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowOut {
    pub id: usize,
    /// the flow's congestion control (the simulator's record)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    pub bytes_acked: u64,
    pub bytes_delivered: u64,
    pub segs_sent: u64,
    pub retrans_segs: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub fct_s: Option<f64>,
    pub completed: bool,
    /// When the client had the whole response (s from the run's start;
    /// downloads of a size): what a user waiting for a page object sees.
    pub client_done_s: Option<f64>,
    pub rtt_ms: DistOut,
    /// segments the sender marked lost (the simulator's record)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_segs: Option<u64>,
}

/// One direction's bottleneck statistics (`links.down`, `links.up`), what
/// every engine with a link measures; an engine adds its own figures beside
/// them (`#[serde(flatten)]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkOut {
    pub rate_bps: u64,
    /// time the link spent sending (s)
    pub busy_s: f64,
    pub tx_bytes: u64,
    pub tx_pkts: u64,
    /// per drop reason (`bloatlab_core::qdisc::DropReason::as_str`), every reason listed
    pub drops: BTreeMap<&'static str, u64>,
    /// ECN CE marks
    pub marks: u64,
    /// the queueing delay of the packets sent
    pub qdelay_ms: DistOut,
    /// an autorate element's shaper rate (absent without one)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autorate: Option<AutorateOut>,
}

/// The shaper rate an autorate controller set over a run: its time-weighted
/// distribution over `[0, end)` and every change (`t_s`, `rate_bps`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AutorateOut {
    pub rate_p10_bps: u64,
    pub rate_p50_bps: u64,
    pub rate_p90_bps: u64,
    pub rate_min_bps: u64,
    pub changes: usize,
    pub log: Vec<(f64, u64)>,
}

impl AutorateOut {
    /// From the controller's log (time ns, rate bit/s; the first entry its start), up to `end` ns.
    pub fn of(log: &[(u64, u64)], end: u64) -> Option<AutorateOut> {
        let first = log.first()?;
        // Time-weighted: each rate holds from its time to the next change (or `end`).
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for (i, &(t, r)) in log.iter().enumerate() {
            let until = log.get(i + 1).map_or(end, |n| n.0).min(end);
            if until > t {
                spans.push((r, until - t));
            }
        }
        if spans.is_empty() {
            spans.push((first.1, 1));
        }
        spans.sort();
        let total: u64 = spans.iter().map(|s| s.1).sum();
        let at = |q: f64| {
            let want = (q * total as f64).ceil().max(1.0) as u64;
            let mut acc = 0;
            for &(r, w) in &spans {
                acc += w;
                if acc >= want {
                    return r;
                }
            }
            spans.last().unwrap().0
        };
        Some(AutorateOut {
            rate_p10_bps: at(0.10),
            rate_p50_bps: at(0.50),
            rate_p90_bps: at(0.90),
            rate_min_bps: log.iter().filter(|x| x.0 < end).map(|x| x.1).min().unwrap_or(first.1),
            changes: log.len() - 1,
            log: log.iter().filter(|x| x.0 <= end).map(|&(t, r)| (t as f64 / 1e9, r)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_record_keeps_the_contract_order_and_leaves_out_what_an_engine_does_not_report() {
        let f = FlowOut {
            id: 3,
            cc: Some("bbr".into()),
            bytes_acked: 10,
            bytes_delivered: 9,
            segs_sent: 2,
            retrans_segs: 1,
            start_s: 0.5,
            end_s: 2.0,
            fct_s: None,
            completed: false,
            client_done_s: None,
            rtt_ms: DistOut::of(&mut [4.0]),
            lost_segs: Some(1),
        };
        let sim = serde_json::to_string(&f).unwrap();
        assert!(sim.starts_with(r#"{"id":3,"cc":"bbr","bytes_acked":10,"bytes_delivered":9,"segs_sent":2,"retrans_segs":1,"start_s":0.5,"end_s":2.0,"fct_s":null,"completed":false,"client_done_s":null,"rtt_ms":{"n":1,"#), "{sim}");
        assert!(sim.ends_with(r#""lost_segs":1}"#), "{sim}");
        let probe = serde_json::to_value(FlowOut { cc: None, lost_segs: None, ..f }).unwrap();
        assert!(probe.get("cc").is_none() && probe.get("lost_segs").is_none(), "{probe}");
        assert_eq!(probe.as_object().unwrap().len(), 11);
    }

    #[test]
    fn no_samples_is_null_everywhere_but_the_count() {
        let d = DistOut::of(&mut []);
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"n":0,"mean":null,"p50":null,"p95":null,"p99":null,"max":null}"#);
        assert_eq!(DistOut::json_of(&mut []), serde_json::to_value(&d).unwrap());
        assert_eq!(DistOut::json_of(&mut [f64::NAN])["mean"], serde_json::Value::Null);
    }

    #[test]
    fn the_shaper_rate_median_is_weighted_by_time_held() {
        // 10 Mbit/s for 1 s, 20 Mbit/s for 3 s: the median is 20, p10 10.
        let a = AutorateOut::of(&[(0, 10_000_000), (1_000_000_000, 20_000_000)], 4_000_000_000).unwrap();
        assert_eq!((a.rate_p10_bps, a.rate_p50_bps, a.rate_p90_bps, a.rate_min_bps, a.changes), (10_000_000, 20_000_000, 20_000_000, 10_000_000, 1));
        assert_eq!(a.log, vec![(0.0, 10_000_000), (1.0, 20_000_000)]);
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        let d = DistOut::of(&mut [3.0, 1.0, 2.0]);
        assert_eq!((d.n, d.p50, d.max), (3, Some(2.0), Some(3.0)));
        assert_eq!(serde_json::from_str::<DistOut>(&serde_json::to_string(&d).unwrap()).unwrap(), d);
    }
}
