//! One document in, one resolved scenario or one error (key path and words) out.

use super::*;
use crate::scenario::Direction;
use serde_json::json;

fn no_traces(_: &str) -> Result<Vec<u8>, String> {
    Err("no file here".into())
}

fn ctx() -> Context<'static> {
    Context { name: "t", read_trace: &no_traces, mem_available: None }
}

fn doc() -> Value {
    json!({"duration": "10s", "link": {"down": {"rate": "20Mbit"}}, "flow": [{"cc": "cubic", "rtt": "40ms", "count": 2}],
           "probe": [{"interval": "100ms"}]})
}

fn error(d: Value) -> LanguageError {
    resolve_document(&d, &ctx()).expect_err("the document is refused")
}

#[test]
fn a_document_resolves_to_base_units_with_counts_expanded_and_bdp_buffers_in_bytes() {
    let (sc, jitter) = resolve_document(&doc(), &ctx()).unwrap();
    assert_eq!(jitter, None);
    assert_eq!((sc.name.as_str(), sc.duration_ns, sc.seed, sc.sample_interval_ns), ("t", 10_000_000_000, 1, 10_000_000));
    assert_eq!(sc.flows.len(), 2);
    assert_eq!(sc.flows[1].name, "cubic-down-0.1");
    let down = sc.links.down.as_ref().unwrap();
    // 20 Mbit/s x 40 ms / 8 = 100 000 bytes
    assert_eq!((down.rate_bps, down.buffer_bytes, down.buffer_pkts), (20_000_000, Some(100_000), None));
    assert_eq!(sc.probes[0].rtt_ns, 40_000_000);
    assert_eq!(sc.probes[0].name, "udp-0");
}

#[test]
fn an_unknown_key_is_named_with_its_path_and_the_keys_known_there() {
    let mut d = doc();
    d["flow"][0]["colour"] = json!("red");
    let e = error(d);
    assert_eq!(e.key, "flow.0.colour");
    assert!(e.message.starts_with("unknown key (known here: cc, count, direction, dscp, ecn,"), "{}", e.message);
    let mut d = doc();
    d["limits"] = json!({"max_flow": 3});
    assert_eq!(error(d).message, "unknown limit (known: max_flows, max_packets, max_probe_packets, max_series_rows)");
}

#[test]
fn a_missing_key_says_what_to_write() {
    let mut d = doc();
    d["flow"][0].as_object_mut().unwrap().remove("rtt");
    assert_eq!(error(d), LanguageError { key: "flow.0.rtt".into(), message: "missing (the flow's base RTT, e.g. rtt = \"50ms\")".into() });
    let mut d = doc();
    d.as_object_mut().unwrap().remove("duration");
    assert_eq!(error(d).key, "duration");
}

#[test]
fn a_bad_value_is_named_in_the_values_words() {
    let mut d = doc();
    d["flow"][0]["cc"] = json!("cubc");
    let e = error(d);
    assert_eq!(e.key, "flow.0.cc");
    assert!(e.message.starts_with("unknown value \"cubc\" (expected one of:"), "{}", e.message);
    let mut d = doc();
    d["flow"][0]["count"] = json!(2.5);
    assert_eq!(error(d), LanguageError { key: "flow.0.count".into(), message: "expected a whole number, got 2.5".into() });
    let mut d = doc();
    d["link"]["down"]["policer"] = json!("2Mbit");
    assert_eq!(error(d).message, "expected a table like { rate = \"2Mbit\", burst = \"10KB\" }, got '2Mbit'");
    let mut d = doc();
    d["flow"] = json!(3);
    assert_eq!(error(d), LanguageError { key: "flow".into(), message: "expected [[flow]] tables".into() });
}

#[test]
fn qdisc_parameters_are_the_named_qdiscs() {
    let mut d = doc();
    d["link"]["down"]["qdisc"] = json!("codel");
    d["link"]["down"]["qdisc_params"] = json!({"target": "5ms", "quantum": 300});
    let e = error(d.clone());
    assert_eq!(e.key, "link.down.qdisc_params.quantum");
    assert!(e.message.starts_with("unknown parameter of codel (known:"), "{}", e.message);
    d["link"]["down"]["qdisc_params"] = json!({"target": "5ms"});
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    assert_eq!(sc.links.down.unwrap().qdisc.params.get("target"), Some(&5e6));
}

#[test]
fn rules_across_values_name_the_key_that_breaks_them() {
    let mut d = doc();
    d["flow"][0]["start"] = json!("2s");
    d["flow"][0]["stop"] = json!("1s");
    assert_eq!(error(d), LanguageError { key: "flow.0.stop".into(), message: "must be after start (2s), got \"1s\"".into() });
    let mut d = doc();
    d["flow"][0]["count"] = json!(20_000);
    let e = error(d);
    assert_eq!(e.key, "flow.0.count");
    assert!(e.message.starts_with("20,000 flows in all, more than limits.max_flows (10,000)"), "{}", e.message);
    let mut d = doc();
    d.as_object_mut().unwrap().remove("link");
    assert_eq!(error(d).key, "link");
}

#[test]
fn a_trace_is_read_through_the_callers_reader() {
    let read = |f: &str| if f == "t.down" { Ok(b"1\n2\n4\n".to_vec()) } else { Err(format!("{f}: no such file")) };
    let c = Context { name: "t", read_trace: &read, mem_available: None };
    let mut d = doc();
    d["link"]["down"]["rate"] = json!("trace:t.down");
    let (sc, _) = resolve_document(&d, &c).unwrap();
    let down = sc.links.down.unwrap();
    // 3 packets of 1500 B every 4 ms = 9 Mbit/s
    assert_eq!((down.rate_bps, down.trace_ms), (9_000_000, Some(vec![1, 2, 4])));
    d["link"]["down"]["rate"] = json!("trace:nope");
    let e = resolve_document(&d, &c).unwrap_err();
    assert_eq!((e.key.as_str(), e.message.as_str()), ("link.down.rate", "nope: no such file"));
}

#[test]
fn the_json_schema_names_every_table_and_each_qdiscs_parameters() {
    let s = json_schema();
    assert_eq!(s["title"], "bloatlab scenario");
    assert!(s["$defs"]["Flow"]["properties"]["rtt"].is_object());
    assert!(s["$defs"]["QdiscParams_fq_codel"]["properties"]["quantum"].is_object());
    assert_eq!(s["$defs"]["Link"]["additionalProperties"], false);
}

#[test]
fn autorate_resolves_to_base_units_with_base_defaulting_to_min() {
    let mut d = doc();
    d["link"]["down"]["autorate"] = json!({"min": "5Mbit", "max": "80Mbit"});
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    let a = sc.links.down.unwrap().autorate.unwrap();
    assert_eq!((a.min_bps, a.base_bps, a.max_bps), (5_000_000, 5_000_000, 80_000_000));
    assert_eq!((a.ping_interval_ns, a.delay_threshold_ns, a.active_threshold_bps), (50_000_000, 30_000_000, 2_000_000));
    assert_eq!(a.params().connection_active_thr_kbps, 2000);
}

#[test]
fn a_link_slower_than_2_mbit_lowers_the_connection_active_threshold_and_a_fixed_rate_below_it_resolves() {
    let mut d = doc();
    d["link"]["down"]["autorate"] = json!({"min": "1.337Mbit", "max": "1.337Mbit", "active_threshold": "1.337Mbit"});
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    let a = sc.links.down.unwrap().autorate.unwrap();
    assert_eq!((a.min_bps, a.base_bps, a.max_bps, a.active_threshold_bps), (1_337_000, 1_337_000, 1_337_000, 1_337_000));
    let p = a.params();
    assert_eq!((p.min_kbps, p.max_kbps, p.connection_active_thr_kbps), (1337, 1337, 1337));
    assert!(p.check().is_ok());
}

#[test]
fn bad_autorate_settings_are_refused_as_cake_autorate_refuses_them_naming_the_key() {
    for (a, key, message) in [
        (json!({"min": "30Mbit", "max": "10Mbit"}), "link.down.autorate.min", "30Mbit is above max (10Mbit): the bounds cross"),
        (json!({"min": "5Mbit", "base": "90Mbit", "max": "60Mbit"}), "link.down.autorate.base", "90Mbit must lie between min (5Mbit) and max (60Mbit)"),
        (json!({"min": "1Mbit", "max": "60Mbit"}), "link.down.autorate.min",
         "1Mbit is below cake-autorate's connection-active threshold (active_threshold, default 2Mbit), which the script refuses"),
        (json!({"min": "1Mbit", "max": "60Mbit", "active_threshold": "1.5Mbit"}), "link.down.autorate.min",
         "1Mbit is below cake-autorate's connection-active threshold (active_threshold 1.5Mbit), which the script refuses"),
        (json!({"min": "1Mbit", "max": "60Mbit", "active_threshold": "0Mbit"}), "link.down.autorate.active_threshold",
         "expected a positive rate, got \"0Mbit\""),
        (json!({"min": "0Mbit", "max": "60Mbit"}), "link.down.autorate.min", "expected a positive rate, got \"0Mbit\""),
        (json!({"min": "5Mbit", "max": "60Mbit", "ping_interval": "0ms"}), "link.down.autorate.ping_interval", "expected a positive duration, got \"0ms\""),
        (json!({"max": "60Mbit"}), "link.down.autorate.min", "missing (the lowest shaper rate, e.g. min = \"5Mbit\")"),
    ] {
        let mut d = doc();
        d["link"]["down"]["autorate"] = a;
        let e = error(d);
        assert_eq!((e.key.as_str(), e.message.as_str()), (key, message));
    }
}

#[test]
fn sss_is_off_without_its_table_and_an_empty_table_takes_defaults_sh_with_the_direction_s_rule() {
    let mut d = doc();
    d["link"]["down"]["autorate"] = json!({"min": "5Mbit", "max": "80Mbit"});
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    assert!(sc.links.down.unwrap().autorate.unwrap().sss.is_none());
    d["link"]["down"]["autorate"]["sss"] = json!({});
    d["link"]["up"] = json!({"rate": "10Mbit", "autorate": {"min": "2Mbit", "max": "10Mbit", "sss": {"times": ["0.5s", "30s"], "pre": "0ms", "post": "1.2345678ms"}}});
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    let down = sc.links.down.as_ref().unwrap().autorate.as_ref().unwrap().sss.clone().unwrap();
    assert_eq!(down.times_ns, vec![12_000_000_000, 27_000_000_000, 42_000_000_000, 57_000_000_000]);
    assert_eq!((down.pre_ns, down.post_ns, down.upload), (300_000_000, 200_000_000, false));
    let up = sc.links.up.as_ref().unwrap().autorate.as_ref().unwrap();
    let p = up.params().sss.unwrap();
    // The controller's units: µs, rounded as the script's printf %.0f rounds (1234567.8 ns -> 1235 µs).
    assert_eq!((p.times_us, p.pre_us, p.post_us, p.upload), (vec![500_000, 30_000_000], 0, 1235, true));
}

#[test]
fn bad_sss_settings_are_refused_naming_the_key() {
    for (s, key, message) in [
        (json!({"pre": "-300ms"}), "link.down.autorate.sss.pre", "expected a non-negative duration, got \"-300ms\""),
        (json!({"post": "-1s"}), "link.down.autorate.sss.post", "expected a non-negative duration, got \"-1s\""),
        (json!({"times": ["12s", "61s"]}), "link.down.autorate.sss.times.1", "61s is outside the minute: a switch time is 0-60 s past it"),
        (json!({"times": ["-3s"]}), "link.down.autorate.sss.times.0", "expected a non-negative duration, got \"-3s\""),
        (json!({"window": "1s"}), "link.down.autorate.sss.window", "unknown key (known here: post, pre, times)"),
        (json!(true), "link.down.autorate.sss", "expected a table like { times = [\"12s\", \"27s\", \"42s\", \"57s\"], pre = \"300ms\", post = \"200ms\" } (sss = {}: defaults.sh's), got True"),
    ] {
        let mut d = doc();
        d["link"]["down"]["autorate"] = json!({"min": "5Mbit", "max": "80Mbit", "sss": s});
        let e = error(d);
        assert_eq!((e.key.as_str(), e.message.as_str()), (key, message));
    }
}

#[test]
fn a_trace_of_zeros_and_a_trace_shorter_than_an_autorate_run_are_refused_naming_the_rate() {
    let read = |f: &str| if f == "zeros" { Ok(b"0\n0\n".to_vec()) } else { Ok(b"1\n2\n4\n".to_vec()) };
    let c = Context { name: "t", read_trace: &read, mem_available: None };
    let mut d = doc();
    d["link"]["down"]["rate"] = json!("trace:zeros");
    let e = resolve_document(&d, &c).unwrap_err();
    assert_eq!(e.key, "link.down.rate");
    assert!(e.message.starts_with("trace zeros: every time is 0 ms"), "{}", e.message);
    // A 4-ms trace repeats under a 10-s run (Mahimahi's way) unless autorate is measured against it.
    d["link"]["down"]["rate"] = json!("trace:short");
    assert!(resolve_document(&d, &c).is_ok());
    d["link"]["down"]["autorate"] = json!({"min": "2Mbit", "max": "20Mbit"});
    let e = resolve_document(&d, &c).unwrap_err();
    assert_eq!(e.key, "link.down.rate");
    assert!(e.message.starts_with("the trace lasts 4 ms, shorter than the run (10000 ms)"), "{}", e.message);
}

fn wifi_doc() -> Value {
    json!({"duration": "10s", "wifi": {"mac": "airtime", "station": [{"name": "a", "phy_rate": "mcs15"}]},
           "flow": [{"rtt": "10ms", "station": "a"}]})
}

#[test]
fn an_empty_aql_table_takes_mac80211s_limits_in_microseconds() {
    let mut d = wifi_doc();
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    assert!(sc.wifi.as_ref().unwrap().aql.is_none());
    d["wifi"]["aql"] = json!({});
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    let a = sc.wifi.unwrap().aql.unwrap();
    assert_eq!((a.limit_low_us, a.limit_high_us, a.threshold_us), (5_000, 12_000, 24_000));
    d["wifi"]["aql"] = json!({"limit_low": "2.5ms", "limit_high": "8ms", "threshold": "1s"});
    let a = resolve_document(&d, &ctx()).unwrap().0.wifi.unwrap().aql.unwrap();
    assert_eq!((a.limit_low_us, a.limit_high_us, a.threshold_us), (2_500, 8_000, 1_000_000));
}

#[test]
fn bad_aql_settings_are_refused_naming_the_key() {
    for (aql, mac, key, message) in [
        (json!({}), "fq", "wifi.aql", "AQL works inside mac80211's airtime scheduler: it needs mac = \"airtime\", not \"fq\""),
        (json!({"limit_low": "0ms"}), "airtime", "wifi.aql.limit_low", "expected a positive duration, got \"0ms\""),
        (json!({"threshold": "1500ns"}), "airtime", "wifi.aql.threshold", "expected whole microseconds (mac80211 counts airtime in µs), got \"1500ns\""),
        (json!({"limit_high": "90min"}), "airtime", "wifi.aql.limit_high", "expected at most 4294.967295s (mac80211 keeps its limits in 32 bits of µs), got \"90min\""),
        (json!({"limit_high": "4ms"}), "airtime", "wifi.aql.limit_high", "4ms is below limit_low (5ms)"),
        (json!(true), "airtime", "wifi.aql", "expected a table like { limit_low = \"5ms\" } (aql = {}: mac80211's defaults), got True"),
        (json!({"low": "1ms"}), "airtime", "wifi.aql.low", "unknown key (known here: limit_high, limit_low, threshold)"),
    ] {
        let mut d = wifi_doc();
        d["wifi"]["mac"] = json!(mac);
        d["wifi"]["aql"] = aql;
        let e = error(d);
        assert_eq!((e.key.as_str(), e.message.as_str()), (key, message));
    }
    let mut d = wifi_doc();
    d["wifi"]["aql"] = json!({"limit_low": "-5ms"});
    let e = error(d);
    assert_eq!(e.key, "wifi.aql.limit_low");
}

#[test]
fn a_train_resolves_to_base_units_with_the_flows_rtt_and_back_to_back_by_default() {
    let mut d = doc();
    d["train"] = json!([{"packets": 200, "start": "1.5s"}, {"name": "paced", "packets": 10, "size": "500B", "rate": "1Mbit", "direction": "up", "rtt": "10ms"}]);
    let (sc, _) = resolve_document(&d, &ctx()).unwrap();
    let (a, b) = (&sc.trains[0], &sc.trains[1]);
    assert_eq!((a.name.as_str(), a.packets, a.size_bytes, a.rate_bps, a.start_ns, a.rtt_ns), ("train-0", 200, 1472, None, 1_500_000_000, 40_000_000));
    assert_eq!(a.direction, Direction::Down);
    assert_eq!(a.send_offset_ns(199), 0);
    assert_eq!((b.name.as_str(), b.size_bytes, b.rate_bps, b.direction, b.rtt_ns), ("paced", 500, Some(1_000_000), Direction::Up, 10_000_000));
    // 528 IP bytes at 1 Mbit/s: one every 4.224 ms
    assert_eq!((b.wire_bytes(), b.send_offset_ns(1), b.send_offset_ns(9)), (528, 4_224_000, 38_016_000));
}

#[test]
fn a_bad_train_is_refused_naming_its_key() {
    let with = |t: Value| {
        let mut d = doc();
        d["train"] = json!([t]);
        error(d)
    };
    assert_eq!(with(json!({"start": "1s"})), LanguageError { key: "train.0.packets".into(), message: "missing (how many packets the train sends, e.g. packets = 200)".into() });
    assert_eq!(with(json!({"packets": 5000})).key, "train.0.packets");
    assert_eq!(with(json!({"packets": 10, "size": "40B"})).message, "expected a UDP payload of 64..1472 bytes, got 40");
    let e = with(json!({"packets": 10, "start": "10s"}));
    assert_eq!((e.key.as_str(), e.message.as_str()), ("train.0.start", "expected a start within the run (before 10s), got 10s"));
    // 1000 packets of 1500 B at 1 Mbit/s take 12 s to send: beyond the probe server's 1 s of pacing
    let e = with(json!({"packets": 1000, "rate": "1Mbit"}));
    assert_eq!(e.key, "train.0.rate");
    assert!(e.message.starts_with("1000 packets of 1500 B at this rate take 11.988 s to send; a paced train sends for at most 1 s"), "{}", e.message);
    assert_eq!(with(json!({"packets": 10, "station": "sta0"})).message, "names a station, but the scenario has no [wifi] medium");
}
