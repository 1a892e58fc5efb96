//! The resolved scenario of `docs/engine-interface.md` (the shared contract,
//! `bloatlab-schema`) and what only the emulator makes of it: the port and
//! delay mapping, the port range's limits, the link models.

use crate::link::{LinkConfig, Service};
use bloatlab_core::trace::Trace;
use bloatlab_core::qdisc::chain::Stages;
use bloatlab_core::qdisc::QdiscConfig;
use bloatlab_core::time::Nanos;

/// The resolved scenario of the shared contract (`bloatlab-schema`).
pub type Resolved = Scenario;
pub use bloatlab_schema::scenario::{Direction, Flow, Probe, Scenario, Train};

/// Server ports: flow i listens on FLOW_PORT + i, probe j on PROBE_PORT + j,
/// train k's `udp server` on TRAIN_PORT + k; the sender of flow i binds
/// FLOW_CPORT + i; namespaces keep ephemeral ports from EPHEMERAL_MIN (40000)
/// on. The plan is shared with the simulator's captures
/// (`bloatlab_schema::wire`), so both engines' pcaps line up port by port.
pub use bloatlab_schema::wire::{EPHEMERAL_MIN, FLOW_CPORT, FLOW_PORT, PROBE_PORT, TRAIN_PORT};
/// Flow i's ports FLOW_PORT + i and FLOW_CPORT + i stay below the next range.
pub const MAX_FLOWS: usize = (FLOW_CPORT - FLOW_PORT) as usize;
/// Page objects in one run: each is a bloatlab-probe client and server, all
/// spawned before their page starts (a few MB and threads each); seed 000's
/// page has 62.
pub const MAX_PAGE_OBJECTS: usize = 200;

/// A generator's control connection ([`crate::packet::is_control`], beside the headers it reads).
pub use crate::packet::is_control;

/// Probe j's port PROBE_PORT + j stays below the trains' (35000).
pub const MAX_PROBES: usize = (TRAIN_PORT - PROBE_PORT) as usize;
/// Train k's port TRAIN_PORT + k stays below the namespaces' ephemeral ports (40000).
pub const MAX_TRAINS: usize = (EPHEMERAL_MIN - TRAIN_PORT) as usize;

/// The finest time-series resolution the emulator records: its link threads
/// sample on a real-time timer whose lateness is tens of µs (p50) and up to
/// milliseconds under load, and each sample wakes every generator; a finer
/// interval was silently raised to this before (issue 9), now it is refused.
pub const MIN_SAMPLE_INTERVAL_NS: u64 = 1_000_000;

/// Read a resolved scenario for the emulator: the contract's checks, then the
/// port range (ids are indexes, checked by the contract, so ports never wrap).
pub fn from_json(text: &str) -> Result<Resolved, String> {
    let r = Scenario::from_json(text)?;
    if r.flows.len() > MAX_FLOWS {
        return Err(format!("flow: the emulator runs at most {MAX_FLOWS} flows, got {}", r.flows.len()));
    }
    if let Some(f) = r.flows.iter().find(|f| !f.tso) {
        return Err(format!(
            "flow.{}.tso: the emulator runs the kernel's TCP as it is, with its TSO/GSO; tso = false is for the simulator",
            f.group
        ));
    }
    let objects = r.flows.iter().filter(|f| f.page.is_some()).count();
    if objects > MAX_PAGE_OBJECTS {
        return Err(format!(
            "page: the emulator runs one process pair per page object, at most {MAX_PAGE_OBJECTS} in all; got {objects} \
             (the simulator has no such limit)"
        ));
    }
    if r.probes.len() > MAX_PROBES {
        return Err(format!("probe: the emulator runs at most {MAX_PROBES} probes, got {}", r.probes.len()));
    }
    if r.trains.len() > MAX_TRAINS {
        return Err(format!("train: the emulator runs at most {MAX_TRAINS} trains, got {}", r.trains.len()));
    }
    if r.sample_interval_ns < MIN_SAMPLE_INTERVAL_NS {
        return Err(format!(
            "sample_interval: the emulator samples at most every {} ms (its link threads and the senders' TCP_INFO \
             sampling wake on timers), got {} ms; the simulator takes finer intervals",
            MIN_SAMPLE_INTERVAL_NS / 1_000_000,
            r.sample_interval_ns as f64 / 1e6
        ));
    }
    Ok(r)
}

/// What the emulator makes of a resolved scenario.
pub trait EmuScenario {
    fn delays(&self) -> (Vec<u64>, Nanos);
    fn dscps(&self) -> Vec<u8>;
    fn link_config(&self, dir: &str) -> Result<LinkConfig, String>;
}

impl EmuScenario for Resolved {
    /// One-way delay by server port, and the default for other traffic.
    fn delays(&self) -> (Vec<u64>, Nanos) {
        let mut by_port = vec![u64::MAX; 65536];
        for f in &self.flows {
            by_port[(FLOW_PORT as usize) + f.id as usize] = f.rtt_ns / 2;
            by_port[(FLOW_CPORT as usize) + f.id as usize] = f.rtt_ns / 2;
        }
        for p in &self.probes {
            by_port[(PROBE_PORT as usize) + p.id as usize] = p.rtt_ns / 2;
        }
        for t in &self.trains {
            by_port[(TRAIN_PORT as usize) + t.id] = t.rtt_ns / 2;
        }
        let default_rtt = self
            .default_rtt_ns
            .or_else(|| self.flows.iter().map(|f| f.rtt_ns).min())
            .or_else(|| self.probes.iter().map(|p| p.rtt_ns).min())
            .or_else(|| self.trains.iter().map(|t| t.rtt_ns).min())
            .unwrap_or(0);
        (by_port, default_rtt / 2)
    }

    /// DiffServ code point by server and client port (`u8::MAX`: not ours). A train has none in the
    /// scenario language: its packets keep the probe's (0, best effort), as the simulator sends them.
    fn dscps(&self) -> Vec<u8> {
        let mut by_port = vec![u8::MAX; 65536];
        for f in &self.flows {
            by_port[(FLOW_PORT as usize) + f.id] = f.dscp;
            by_port[(FLOW_CPORT as usize) + f.id] = f.dscp;
        }
        for p in &self.probes {
            by_port[(PROBE_PORT as usize) + p.id] = p.dscp;
        }
        by_port
    }

    /// The link model of direction `dir` ("down" = 0, "up" = 1).
    fn link_config(&self, dir: &str) -> Result<LinkConfig, String> {
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
                        if s.rate_bps == 0 {
                            return Err(format!("links.{dir}.rate_bps: expected a positive rate, got {}", s.rate_bps));
                        }
                        Service::Rate(s.rate_bps)
                    }
                };
                if !(0.0..=1.0).contains(&s.loss) {
                    return Err(format!("links.{dir}.loss: expected a probability in [0, 1], got {}", s.loss));
                }
                (service, s.qdisc_config(), s.loss, s.stages())
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
            dscp_by_port: self.dscps(),
            default_delay,
            sample_interval: self.sample_interval_ns,
            measure_until: self.duration_ns,
            measure_from: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const DOC: &str = r#"{"name":"t","seed":3,"duration_ns":5000000000,"sample_interval_ns":10000000,
      "links":{"down":{"rate_bps":10000000,"buffer_bytes":100000,"buffer_pkts":null,"loss":0.01,
        "qdisc":{"kind":"fifo","params":{}},"trace_ms":null},"up":null},
      "flows":[{"id":0,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":40000000,
        "start_ns":0,"stop_ns":null,"size_bytes":null},
        {"id":1,"group":1,"name":"b","cc":"bbr","direction":"down","rtt_ns":100000000,
        "start_ns":0,"stop_ns":null,"size_bytes":null}],
      "probes":[{"id":0,"name":"p","kind":"udp","interval_ns":10000000,"rtt_ns":40000000,"size_bytes":64,"direction":"down"}]}"#;

    #[test]
    fn each_flow_and_probe_port_gets_half_its_rtt_and_other_traffic_the_smallest() {
        let r = from_json(DOC).unwrap();
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
        let r = from_json(DOC).unwrap();
        assert!(matches!(r.link_config("up").unwrap().service, Service::Unlimited));
        assert!(matches!(r.link_config("down").unwrap().service, Service::Rate(10_000_000)));
    }

    #[test]
    fn a_sample_interval_finer_than_the_emulator_records_is_refused_not_raised() {
        let fine = DOC.replace("\"sample_interval_ns\":10000000", "\"sample_interval_ns\":500000");
        let e = from_json(&fine).unwrap_err();
        assert!(e.starts_with("sample_interval: the emulator samples at most every 1 ms"), "{e}");
        assert!(e.contains("got 0.5 ms"), "{e}");
        let ok = DOC.replace("\"sample_interval_ns\":10000000", "\"sample_interval_ns\":1000000");
        assert_eq!(from_json(&ok).unwrap().link_config("down").unwrap().sample_interval, 1_000_000);
    }

    #[test]
    fn a_loss_above_one_is_an_error_naming_the_key() {
        let bad = DOC.replace("\"loss\":0.01", "\"loss\":1.5");
        let e = from_json(&bad).unwrap_err();
        assert!(e.starts_with("links.down.loss:"), "{e}");
    }

    #[test]
    fn more_flows_or_probes_than_the_port_ranges_hold_are_refused_by_key() {
        let flow = r#"{"id":0,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":40000000,"start_ns":0,"stop_ns":null,"size_bytes":null}"#;
        let probe = r#"{"id":0,"name":"p","kind":"udp","interval_ns":10000000,"rtt_ns":40000000,"size_bytes":64,"direction":"down"}"#;
        let many = |item: &str, n: usize| (0..n).map(|i| item.replacen("\"id\":0", &format!("\"id\":{i}"), 1)).collect::<Vec<_>>().join(",");
        let a = DOC.find("\"flows\":[").unwrap();
        let doc = |nf: usize, np: usize| format!("{}\"flows\":[{}],\"probes\":[{}]}}", &DOC[..a], many(flow, nf), many(probe, np));
        assert_eq!(from_json(&doc(MAX_FLOWS, 1)).unwrap().flows.len(), MAX_FLOWS);
        let e = from_json(&doc(MAX_FLOWS + 1, 1)).unwrap_err();
        assert_eq!(e, "flow: the emulator runs at most 5000 flows, got 5001");
        let e = from_json(&doc(1, MAX_PROBES + 1)).unwrap_err();
        assert_eq!(e, "probe: the emulator runs at most 5000 probes, got 5001");
    }

    /// DOC with `n` trains (ids 0..n) of `rtt_ms`.
    fn with_trains(n: usize, rtt_ms: u64) -> String {
        let train = |i: usize| {
            format!(r#"{{"id":{i},"name":"t{i}","start_ns":0,"packets":10,"size_bytes":1472,"direction":"down","rtt_ns":{}}}"#, rtt_ms * 1_000_000)
        };
        let trains = (0..n).map(train).collect::<Vec<_>>().join(",");
        format!("{},\"trains\":[{trains}]}}", DOC.trim_end().strip_suffix('}').unwrap())
    }

    #[test]
    fn a_trains_port_gets_half_its_rtt_and_more_trains_than_its_port_range_holds_are_refused_by_key() {
        let r = from_json(&with_trains(2, 30)).unwrap();
        let (d, _) = r.delays();
        assert_eq!((d[35000], d[35001], d[35002]), (15_000_000, 15_000_000, u64::MAX));
        // a train's packets keep their own DSCP (0), as the simulator's
        assert_eq!(r.dscps()[35000], u8::MAX);
        assert_eq!(from_json(&with_trains(MAX_TRAINS, 30)).unwrap().trains.len(), 5000);
        let e = from_json(&with_trains(MAX_TRAINS + 1, 30)).unwrap_err();
        assert_eq!(e, "train: the emulator runs at most 5000 trains, got 5001");
    }

    #[test]
    fn more_page_objects_than_processes_allow_are_refused_by_key() {
        let obj = r#"{"id":0,"group":0,"name":"p/0","cc":"cubic","direction":"down","rtt_ns":40000000,"start_ns":0,"stop_ns":null,"size_bytes":1000,"page":0}"#;
        let many = |n: usize| (0..n).map(|i| obj.replacen("\"id\":0", &format!("\"id\":{i}"), 1)).collect::<Vec<_>>().join(",");
        let a = DOC.find("\"flows\":[").unwrap();
        let doc = |n: usize| format!("{}\"flows\":[{}],\"probes\":[],\"pages\":[{{\"id\":0,\"name\":\"p\",\"connections\":6}}]}}", &DOC[..a], many(n));
        assert_eq!(from_json(&doc(MAX_PAGE_OBJECTS)).unwrap().flows.len(), MAX_PAGE_OBJECTS);
        let e = from_json(&doc(MAX_PAGE_OBJECTS + 1)).unwrap_err();
        assert!(e.starts_with("page: the emulator runs one process pair per page object, at most 200"), "{e}");
    }
}
