//! bloatlab-sim: a discrete-event simulator of a dumbbell path over the
//! no-I/O core.
//!
//! Topology: per direction (down = server → client, up = client → server) an
//! optional bottleneck ([`link::Link`]: random loss, the qdisc, a serializer
//! at the link rate). Every flow has its own base RTT, spent half on the way
//! out and half on the way back, after the bottleneck (like access links in
//! ns-3's dumbbell). A direction without a bottleneck only delays.
//!
//! Input: the resolved scenario (docs/engine-interface.md); output: the raw
//! result (same document). Deterministic for a seed: one event queue ordered
//! by (time, insertion), and independent RNG streams per link.
//!
//! With a `[wifi]` medium ([`wifi`]), flows and probes that name a station
//! cross it (AP ↔ station) instead of the wired links.

pub mod air;
pub mod capture;
pub mod event;
pub mod link;
pub mod output;
pub mod packet;
pub mod scenario;
pub mod tcp;
pub mod wifi;
pub mod world;

/// Check a resolved scenario given as JSON: everything the simulator builds
/// before it runs that a scenario can get wrong (qdiscs, stages, the WiFi
/// medium, controls), without running it. Errors name the scenario key.
pub fn check_json(resolved: &str) -> Result<(), String> {
    let sc = scenario::from_json(resolved)?;
    world::World::check(&sc)
}

/// Run a resolved scenario given as JSON; the raw result, time series included.
pub fn run(resolved: &str) -> Result<output::Raw, String> {
    run_capturing(resolved, None)
}

/// [`run`], and with `pcap` = Some(DIR) a capture of every packet into
/// DIR/down.pcap and DIR/up.pcap (the directory must exist; [`capture`]).
pub fn run_capturing(resolved: &str, pcap: Option<&std::path::Path>) -> Result<output::Raw, String> {
    run_cancellable(resolved, pcap, None, true)
}

/// [`run_capturing`] that stops with Err([`world::CANCELLED`]) soon after
/// `cancel` is set (the native module sets it on Ctrl-C or SIGTERM);
/// `flow_series` false: the flows' samples are not stored
/// ([`world::World::without_flow_series`]).
pub fn run_cancellable(
    resolved: &str,
    pcap: Option<&std::path::Path>,
    cancel: Option<&std::sync::atomic::AtomicBool>,
    flow_series: bool,
) -> Result<output::Raw, String> {
    let sc = scenario::from_json(resolved)?;
    let mut w = world::World::new(&sc)?;
    if !flow_series {
        w.without_flow_series();
    }
    if let Some(dir) = pcap {
        w.capture_into(dir)?;
    }
    w.run_cancellable(cancel)
}

/// Run a resolved scenario given as JSON and return the raw result as JSON.
pub fn run_json(resolved: &str) -> Result<String, String> {
    serde_json::to_string(&run(resolved)?).map_err(|e| e.to_string())
}
