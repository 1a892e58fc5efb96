//! The raw result's shared pieces (docs/engine-interface.md). Written once so
//! that every engine and the probe emit the same shape.

use bloatlab_core::stats::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A distribution as the raw result carries it: count, mean and percentiles
/// (computed by `bloatlab_core::stats::Dist`, linear interpolation). A value
/// is `None` (JSON `null`) when there are no samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
        let d = Dist::of(xs);
        DistOut { n: d.n, mean: finite(d.mean), p50: finite(d.p50), p95: finite(d.p95), p99: finite(d.p99), max: finite(d.max) }
    }

    /// The summary of `xs` as the JSON value a raw result carries.
    pub fn json_of(xs: &mut [f64]) -> serde_json::Value {
        serde_json::to_value(DistOut::of(xs)).expect("DistOut serializes")
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_samples_is_null_everywhere_but_the_count() {
        let d = DistOut::of(&mut []);
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"n":0,"mean":null,"p50":null,"p95":null,"p99":null,"max":null}"#);
        assert_eq!(DistOut::json_of(&mut []), serde_json::to_value(&d).unwrap());
        assert_eq!(DistOut::json_of(&mut [f64::NAN])["mean"], serde_json::Value::Null);
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        let d = DistOut::of(&mut [3.0, 1.0, 2.0]);
        assert_eq!((d.n, d.p50, d.max), (3, Some(2.0), Some(3.0)));
        assert_eq!(serde_json::from_str::<DistOut>(&serde_json::to_string(&d).unwrap()).unwrap(), d);
    }
}
