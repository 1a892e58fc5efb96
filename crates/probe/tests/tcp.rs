//! TCP client and server on loopback: forward, reverse, finite transfers,
//! JSON shape, congestion control errors, a server that dies, Ctrl-C, and
//! the latency-under-load test.

mod common;
use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

fn check_flow_shape(j: &serde_json::Value) {
    let f = &j["flows"][0];
    for k in ["id", "name", "cc", "direction", "rtt_base_ms", "goodput_mbps", "bytes_acked", "retransmits", "retrans_rate", "rtt_ms", "fct_s", "completed"] {
        assert!(f.get(k).is_some(), "summary flow lacks {k}");
    }
    let r = &j["raw"]["flows"][0];
    for k in ["id", "bytes_acked", "bytes_delivered", "segs_sent", "retrans_segs", "start_s", "end_s", "fct_s", "completed", "rtt_ms"] {
        assert!(r.get(k).is_some(), "raw flow lacks {k}");
    }
    let s = &j["raw"]["series"]["flows"];
    let n = s["t"].as_array().unwrap().len();
    assert!(n >= 2, "a TCP_INFO series was sampled");
    for k in ["flow", "cwnd_bytes", "inflight_bytes", "srtt_ms", "pacing_rate_bps", "delivery_rate_bps", "delivered_bytes", "sack_delivered_bytes", "retransmits"] {
        assert_eq!(s[k].as_array().unwrap_or_else(|| panic!("column {k}")).len(), n, "column {k}");
    }
    assert!(s["cwnd_bytes"][0].as_u64().unwrap() > 0);
    assert!(j["raw"]["meta"]["t0_monotonic_ns"].as_u64().unwrap() > 0);
    assert!(j["raw"]["meta"]["cc"].as_str().is_some(), "the sender's cc is recorded");
}

#[test]
fn a_finite_upload_reports_every_byte_acked_and_delivered_and_its_completion_time() {
    let s = Server::start(&["tcp", "server"]);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "-n", "2MB", "-C", "cubic", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    check_flow_shape(&j);
    let f = &j["flows"][0];
    assert_eq!(f["cc"], "cubic");
    assert_eq!(f["direction"], "up");
    assert_eq!(f["bytes_acked"], 2_000_000);
    assert_eq!(j["raw"]["flows"][0]["bytes_delivered"], 2_000_000);
    assert_eq!(f["completed"], true);
    let fct = f["fct_s"].as_f64().unwrap();
    let r = &j["raw"]["flows"][0];
    assert!((fct - (r["end_s"].as_f64().unwrap() - r["start_s"].as_f64().unwrap())).abs() < 1e-9);
    assert!(fct > 0.0 && fct < 2.0, "fct {fct}");
    // the last delivered_bytes sample is the whole transfer
    let d = j["raw"]["series"]["flows"]["delivered_bytes"].as_array().unwrap();
    assert_eq!(d.last().unwrap(), 2_000_000);
    // and so is the last of the segments delivered in any order (tcpi_delivered x the MSS), never behind the
    // cumulative ACK at a sample
    let sd = j["raw"]["series"]["flows"]["sack_delivered_bytes"].as_array().unwrap();
    assert_eq!(sd.last().unwrap(), 2_000_000);
    assert!(sd.iter().zip(d).all(|(a, b)| a.as_u64() >= b.as_u64()));
}

#[test]
fn in_reverse_the_server_sends_and_its_tcp_info_comes_back_over_the_control_channel() {
    let s = Server::start(&["tcp", "server"]);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "-R", "-n", "2MB", "-C", "reno", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    check_flow_shape(&j);
    let f = &j["flows"][0];
    assert_eq!(f["cc"], "reno");
    assert_eq!(f["direction"], "down");
    assert_eq!(f["bytes_acked"], 2_000_000);
    assert_eq!(j["raw"]["flows"][0]["bytes_delivered"], 2_000_000);
    assert_eq!(f["completed"], true);
    assert_eq!(j["raw"]["meta"]["sender"], "server");
}

#[test]
fn a_timed_test_with_parallel_streams_reports_each_and_their_fairness() {
    let s = Server::start(&["tcp", "server"]);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "-t", "0.5", "-P", "2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["flows"].as_array().unwrap().len(), 2);
    for f in j["flows"].as_array().unwrap() {
        assert!(f["goodput_mbps"].as_f64().unwrap() > 1.0);
        assert_eq!(f["completed"], false);
        assert_eq!(f["fct_s"], serde_json::Value::Null);
    }
    let tot: f64 = j["flows"].as_array().unwrap().iter().map(|f| f["goodput_mbps"].as_f64().unwrap()).sum();
    assert!((j["total_goodput_mbps"].as_f64().unwrap() - tot).abs() < 1e-6);
    let jf = j["jain_fairness"].as_f64().unwrap();
    assert!(jf > 0.5 && jf <= 1.0);
    let flows: Vec<u64> = j["raw"]["series"]["flows"]["flow"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    assert!(flows.contains(&0) && flows.contains(&1));
}

#[test]
fn plain_output_looks_like_iperf3() {
    let s = Server::start(&["tcp", "server"]);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "-t", "0.6", "-i", "0.2"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("[ ID] Interval           Transfer     Bitrate"), "{out}");
    assert!(out.matches(" sec ").count() >= 4, "interval lines and a summary:\n{out}");
    assert!(out.contains("sender") && out.contains("receiver"), "{out}");
}

#[test]
fn a_congestion_control_the_kernel_lacks_is_an_error_listing_the_available_ones() {
    let s = Server::start(&["tcp", "server"]);
    for extra in [&[][..], &["-R"][..]] {
        let mut args = vec!["tcp", "client", "127.0.0.1", "-p", &s.port, "-C", "nosuchcc", "-t", "0.2"];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let e = stderr(&o);
        assert!(e.contains("-C nosuchcc") && e.contains("available:") && e.contains("cubic"), "{e}");
    }
}

#[test]
fn cport_binds_the_local_port_and_a_taken_one_is_named() {
    let s = Server::start(&["tcp", "server"]);
    let taken = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let p = taken.local_addr().unwrap().port().to_string();
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "--cport", &p, "-n", "10KB", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(&format!("--cport {p}")), "{}", stderr(&o));
    drop(taken);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "--cport", &p, "-n", "10KB", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_of(&o)["raw"]["meta"]["local_ports"][0].as_u64().unwrap().to_string(), p);
}

#[test]
fn a_server_killed_mid_test_is_reported_and_the_client_keeps_its_measurements() {
    let mut s = Server::start(&["tcp", "server"]);
    let child = Command::new(bin())
        .args(["tcp", "client", "127.0.0.1", "-p", &s.port, "-t", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    s.kill();
    let o = wait_output(child, Duration::from_secs(20));
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("server went away") || err.contains("server sent no results"), "{err}");
    assert!(out.contains("sender (client)"), "summary printed:\n{out}");
    assert!(out.contains("0.00-1.00") || out.contains("GBytes") || out.contains("MBytes"), "{out}");
}

#[test]
fn ctrl_c_on_the_tcp_client_prints_the_summary_so_far() {
    let s = Server::start(&["tcp", "server"]);
    let child = Command::new(bin())
        .args(["tcp", "client", "127.0.0.1", "-p", &s.port, "-t", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = wait_output(child, Duration::from_secs(5));
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("sender (client)"), "{out}");
}

#[test]
fn sigterm_while_waiting_for_the_go_line_ends_the_client_at_once() {
    // The emulator starts every flow's client ahead with --wait-go and holds its standard input
    // open until the flow's start. Before, SIGTERM in that wait was retried away by std's read and
    // the client waited for its standard input to close.
    let s = Server::start(&["tcp", "server"]);
    let child = Command::new(bin())
        .args(["tcp", "client", "127.0.0.1", "-p", &s.port, "-t", "5", "--wait-go", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let t = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = wait_output(child, Duration::from_secs(5));
    assert!(t.elapsed() < Duration::from_secs(1), "took {:?}", t.elapsed());
    assert!(!o.status.success());
    assert!(stderr(&o).contains("stopped before the go line"), "{}", stderr(&o));
}

#[test]
fn the_load_test_reports_idle_and_loaded_latency_goodput_and_responsiveness() {
    let s = Server::start(&["server"]);
    let o = run(&["load", "127.0.0.1", "-p", &s.port, "--down", "1", "--up", "1", "-t", "1", "--idle", "0.5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    let l = &j["load"];
    assert!(l["idle"]["udp_rtt_ms"]["n"].as_u64().unwrap() >= 40, "{l}");
    assert!(l["loaded"]["udp_rtt_ms"]["n"].as_u64().unwrap() >= 60, "{l}");
    assert!(l["responsiveness"]["rpm"].as_f64().unwrap() > 0.0);
    assert!(l["responsiveness"]["grade"].as_str().is_some());
    assert!(l["goodput_mbps"]["down"].as_f64().unwrap() > 1.0 && l["goodput_mbps"]["up"].as_f64().unwrap() > 1.0);
    let dirs: Vec<&str> = j["flows"].as_array().unwrap().iter().map(|f| f["direction"].as_str().unwrap()).collect();
    assert_eq!(dirs, ["down", "up"]);
    assert!(l["latency_increase_ms"]["up_p50"].as_f64().is_some(), "one-way increases from server timestamps");
}

#[test]
fn a_one_off_server_exits_after_its_first_test() {
    let mut s = Server::start(&["tcp", "server", "--one-off"]);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "-n", "1MB", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = std::time::Instant::now();
    while s.child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < Duration::from_secs(3), "the one-off server is still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}
