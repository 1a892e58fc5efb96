//! The resolved scenario is the shared contract of `bloatlab-schema`; this file
//! adds only what the simulator itself requires of it.

pub use bloatlab_schema::scenario::*;

/// Read a resolved scenario for the simulator: the contract's checks, then the
/// simulator's own (at least one flow, a congestion control it implements).
pub fn from_json(s: &str) -> Result<Scenario, String> {
    let sc = Scenario::from_json(s)?;
    if sc.flows.is_empty() {
        return Err("flows: at least one flow is needed".into());
    }
    for (i, f) in sc.flows.iter().enumerate() {
        if bloatlab_core::cc::by_name(&f.cc).is_none() {
            return Err(format!("flows[{i}].cc: unknown congestion control \"{}\"", f.cc));
        }
    }
    Ok(sc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolved scenario as Python hands it over: one CUBIC download over a
    /// 10 Mbit/s down link (`QDISC` is replaced by each test).
    const DOC: &str = r#"{"name":"t","seed":3,"duration_ns":2000000000,"sample_interval_ns":10000000,
      "links":{"down":{"rate_bps":10000000,"buffer_bytes":100000,"buffer_pkts":null,"loss":0.0,
        "qdisc":QDISC,"trace_ms":null},"up":null},
      "flows":[{"id":0,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":40000000,
        "start_ns":0,"stop_ns":null,"size_bytes":null,"ecn":null}],
      "probes":[]}"#;

    fn doc(qdisc: &str) -> String {
        DOC.replace("QDISC", qdisc)
    }

    const FIFO: &str = r#"{"kind":"fifo","params":{}}"#;

    #[test]
    fn a_well_formed_scenario_reads_with_every_value_where_it_was_put() {
        let sc = from_json(&doc(FIFO)).unwrap();
        let l = sc.links.down.as_ref().unwrap();
        assert_eq!((l.rate_bps, l.buffer_bytes, l.qdisc.kind.as_str()), (10_000_000, Some(100_000), "fifo"));
        assert!(sc.links.up.is_none());
        let f = &sc.flows[0];
        assert_eq!((f.cc.as_str(), f.direction, f.rtt_ns, f.tso, f.pacing, f.dscp), ("cubic", Direction::Down, 40_000_000, true, false, 0));
        assert_eq!((sc.seed, sc.duration_ns, sc.sample_interval_ns), (3, 2_000_000_000, 10_000_000));
    }

    #[test]
    fn what_only_the_simulator_needs_is_refused_by_name() {
        let e = from_json(&doc(FIFO).replace(r#""cc":"cubic""#, r#""cc":"htcp""#)).unwrap_err();
        assert_eq!(e, r#"flows[0].cc: unknown congestion control "htcp""#);
        // case matters, as in Linux's net.ipv4.tcp_congestion_control
        assert!(from_json(&doc(FIFO).replace(r#""cc":"cubic""#, r#""cc":"CUBIC""#)).is_err());
        let no_flows = doc(FIFO);
        let no_flows = format!("{}\"flows\":[],\"probes\":[]}}", &no_flows[..no_flows.find("\"flows\"").unwrap()]);
        assert_eq!(from_json(&no_flows).unwrap_err(), "flows: at least one flow is needed");
    }

    #[test]
    fn a_bad_id_or_a_missing_key_is_named() {
        assert_eq!(from_json(&doc(FIFO).replace(r#""id":0"#, r#""id":1"#)).unwrap_err(), "flows[0].id must be 0");
        let e = from_json(&doc(FIFO).replace(r#""rtt_ns":40000000,"#, "")).unwrap_err();
        assert!(e.starts_with("resolved scenario: missing field `rtt_ns`"), "{e}");
        let e = from_json(&doc(FIFO).replace(r#""seed":3,"#, "")).unwrap_err();
        assert!(e.starts_with("resolved scenario: missing field `seed`"), "{e}");
        let e = from_json(&doc(FIFO).replace(r#""loss":0.0"#, r#""loss":0.0,"jitter_ns":5"#)).unwrap_err();
        assert!(e.starts_with("resolved scenario: unknown field `jitter_ns`"), "{e}");
        assert_eq!(from_json(&doc(FIFO).replace(r#""rtt_ns":40000000"#, r#""rtt_ns":0"#)).unwrap_err(), "flows[0].rtt_ns must be > 0");
        assert_eq!(from_json(&doc(FIFO).replace(r#""rate_bps":10000000"#, r#""rate_bps":0"#)).unwrap_err(), "links.down.rate_bps must be > 0");
    }

    #[test]
    fn a_qdisc_the_core_would_refuse_is_named_with_its_link_before_the_run() {
        for (qdisc, msg) in [
            (r#"{"kind":"sfq","params":{}}"#, r#"link.down.qdisc: unknown qdisc "sfq" (known: fifo, codel, policer, tbf, fq, cake, fq_codel, pie, fq_pie, red)"#),
            (r#"{"kind":"fifo","params":{"limit":5}}"#, "link.down.qdisc_params.limit: unknown parameter of fifo (known: none)"),
            (r#"{"kind":"tbf","params":{"foo":1}}"#, "link.down.qdisc_params.foo: unknown parameter of tbf (known: rate, burst, limit, peakrate, mtu)"),
            (r#"{"kind":"fq_codel","params":{"flows":0}}"#, "link.down.qdisc_params.flows: expected a whole number in [1, 65536], got 0"),
            (r#"{"kind":"cake","params":{"diffserv":5}}"#, "link.down.qdisc_params.diffserv: expected one of diffserv3, diffserv4, diffserv8, besteffort, precedence, got index 5"),
        ] {
            assert_eq!(crate::check_json(&doc(qdisc)).unwrap_err(), msg);
        }
        assert_eq!(crate::check_json(&doc(r#"{"kind":"cake","params":{"diffserv":4,"rtt":20000000}}"#)), Ok(()));
        // The WiFi medium's interface qdisc is named under wifi.
        let wifi = doc(FIFO).replace(
            r#""probes":[]"#,
            r#""probes":[],"wifi":{"mac":"legacy","qdisc":{"kind":"codel","params":{"limit":0}},"buffer_bytes":null,"buffer_pkts":1000,
               "stations":[{"name":"s","mcs":7}]}"#,
        );
        assert_eq!(crate::check_json(&wifi).unwrap_err(), "wifi.qdisc_params.limit: expected a whole number in [1, 4294967295], got 0");
    }
}
