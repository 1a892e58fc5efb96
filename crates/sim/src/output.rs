//! The raw result (docs/engine-interface.md), serialised with serde.

pub use bloatlab_schema::result::DistOut;
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

#[derive(Debug, Serialize)]
pub struct LinkOut {
    pub rate_bps: u64,
    pub busy_s: f64,
    pub tx_bytes: u64,
    pub tx_pkts: u64,
    pub drops: BTreeMap<&'static str, u64>,
    pub marks: u64,
    pub qdelay_ms: DistOut,
}

#[derive(Debug, Serialize)]
pub struct ProbeOut {
    pub id: usize,
    pub sent: u64,
    pub received: u64,
    pub rtt_ms: DistOut,
}

#[derive(Debug, Default, Serialize)]
pub struct FlowSeries {
    pub flow: Vec<u32>,
    pub t: Vec<f64>,
    pub cwnd_bytes: Vec<u64>,
    pub inflight_bytes: Vec<u64>,
    pub srtt_ms: Vec<f64>,
    pub pacing_rate_bps: Vec<u64>,
    pub delivery_rate_bps: Vec<u64>,
    pub delivered_bytes: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub state: Vec<&'static str>,
}

#[derive(Debug, Default, Serialize)]
pub struct LinkSeries {
    pub direction: Vec<&'static str>,
    pub t: Vec<f64>,
    pub queue_bytes: Vec<u64>,
    pub qdelay_ms: Vec<f64>,
    pub drops: Vec<u64>,
}

#[derive(Debug, Default, Serialize)]
pub struct ProbeSeries {
    pub probe: Vec<u32>,
    pub t: Vec<f64>,
    pub rtt_ms: Vec<Option<f64>>,
}

#[derive(Debug, Default, Serialize)]
pub struct Series {
    pub flows: FlowSeries,
    pub links: LinkSeries,
    pub probes: ProbeSeries,
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
