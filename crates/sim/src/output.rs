//! The raw result (docs/engine-interface.md), serialised with serde.

pub use bloatlab_schema::result::DistOut;
pub use bloatlab_schema::series::{FlowSeries, LinkSeries, ProbeSeries, Series};
use serde::Serialize;
use std::collections::BTreeMap;

/// A flow's record: the contract's type, shared with the probe.
pub use bloatlab_schema::result::FlowOut;

/// A link's statistics: the contract's type, shared with the emulator.
pub use bloatlab_schema::result::LinkOut;

/// A packet train's record: the contract's type, shared with the emulator.
pub use bloatlab_schema::result::TrainOut;

#[derive(Debug, Serialize)]
pub struct ProbeOut {
    pub id: usize,
    pub sent: u64,
    pub received: u64,
    pub rtt_ms: DistOut,
}

#[derive(Debug, Serialize)]
pub struct Meta {
    pub engine_version: &'static str,
    pub events: u64,
    pub packets: u64,
    pub wall_s: f64,
    pub sim_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Raw {
    pub engine: &'static str,
    pub meta: Meta,
    pub flows: Vec<FlowOut>,
    pub links: BTreeMap<&'static str, LinkOut>,
    pub probes: Vec<ProbeOut>,
    pub trains: Vec<TrainOut>,
    pub series: Series,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wifi: Option<crate::wifi::WifiOut>,
}
