//! The raw result (docs/engine-interface.md), serialised with serde.

pub use bloatlab_schema::result::DistOut;
pub use bloatlab_schema::series::{FlowSeries, LinkSeries, ProbeSeries, Series};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct FlowOut {
    pub id: usize,
    pub cc: String,
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
    pub lost_segs: u64,
}

/// A link's statistics: the contract's type, shared with the emulator.
pub use bloatlab_schema::result::LinkOut;

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
    pub series: Series,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wifi: Option<crate::wifi::WifiOut>,
}
