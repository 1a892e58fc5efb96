//! Where the time goes (issue 14 §2): the server's timestamps give its
//! processing time and one-way delays with the clock offset estimated; the
//! server takes --rt/--pin/--busy-poll like the client; --compare-sched runs
//! the test under each host scheduling policy.

mod common;
use common::*;

#[test]
fn one_way_delays_come_with_the_estimated_clock_offset_and_its_label() {
    let srv = Server::start(&["udp", "server", "--busy-poll", "--pin", "0"]);
    let o = run(&["udp", "client", "127.0.0.1", "-p", &srv.port, "--count", "2000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let u = &json_of(&o)["udp"];
    // one host, one clock: the estimate must agree with zero within its bound
    let (off, bound) = (u["clock_offset_us"].as_f64().unwrap(), u["clock_offset_bound_us"].as_f64().unwrap());
    assert!(off.abs() <= bound, "offset {off} us, bound {bound} us");
    assert_eq!(u["clocks_synchronised"], true);
    assert!(u["one_way_label"].as_str().unwrap().starts_with("clocks agree"));
    let (up, down, srv_p50, rtt_p50) = (
        u["one_way_up_us"]["p50"].as_f64().unwrap(),
        u["one_way_down_us"]["p50"].as_f64().unwrap(),
        u["server_processing_us"]["p50"].as_f64().unwrap(),
        u["rtt_us"]["p50"].as_f64().unwrap(),
    );
    assert!(up > 0.0 && down > 0.0 && srv_p50 > 0.0, "up {up} down {down} server {srv_p50}");
    // the round trip leaves out the server's processing (irtt's RTT): the two one-way delays are its parts; medians
    // do not add exactly, but the parts cannot exceed the whole by much
    assert!(up + down < rtt_p50 * 1.5 + 5.0, "up {up} + down {down} vs rtt {rtt_p50} (server {srv_p50} left out)");
}

#[test]
fn the_server_refuses_a_cpu_it_does_not_have_naming_pin() {
    let o = run(&["udp", "server", "--bind", "127.0.0.1:0", "--pin", "100000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--pin 100000"), "{}", stderr(&o));
    let o = run(&["server", "--bind", "127.0.0.1:0", "--rt", "fifo:100"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn compare_sched_measures_each_policy_or_says_why_not() {
    let srv = Server::start(&["udp", "server"]);
    let o = run(&["udp", "client", "127.0.0.1", "-p", &srv.port, "--count", "3000", "--compare-sched", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    let pols = j["policies"].as_array().unwrap();
    let names: Vec<&str> = pols.iter().map(|p| p["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["default (SCHED_OTHER, nice 0)", "nice -20", "SCHED_RR 99", "SCHED_FIFO 99 + cpu_dma_latency 0"]);
    let root = unsafe { libc::geteuid() } == 0;
    for p in pols {
        if let Some(why) = p["skipped"].as_str() {
            assert!(!root || why.contains("cpu_dma_latency"), "as root only a missing /dev/cpu_dma_latency may skip: {why}");
            continue;
        }
        assert_eq!(p["received"], 3000, "{p}");
        assert!(!p["rtt_us"]["histogram"]["buckets"].as_array().unwrap().is_empty());
    }
    assert!(pols[0].get("skipped").is_none(), "the default policy always runs");
    // the text form prints one histogram per policy
    let o = run(&["udp", "client", "127.0.0.1", "-p", &srv.port, "--count", "500", "--compare-sched"]);
    let out = stdout(&o);
    assert_eq!(out.matches("\n== ").count(), 4, "{out}");
    assert!(out.contains("log10(1 + count)"));
}
