//! Client and server in two network namespaces joined by a veth pair, the
//! way the emulator runs the probe (`ip netns exec NS bloatlab-probe ...`).
//! Needs root; otherwise it prints why it is skipped. The namespaces
//! (`bloatlab-pt-a-PID`, `bloatlab-pt-b-PID`) are removed even on failure.

mod common;
use common::*;
use std::process::Command;

#[test]
fn client_and_server_work_across_namespaces_through_a_veth_pair() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the namespace test needs root (ip netns); run the tests as root to include it");
        eprintln!("SKIPPED: the namespace test needs root (ip netns)");
        return;
    }
    let n = match Netns::create("pt", "10.77.0", None) {
        Ok(n) => n,
        Err(e) => panic!("could not build the namespaces: {e}"),
    };
    let pfx = ["ip", "netns", "exec", n.a.as_str()];
    let _srv = Server::start_with(&pfx, &["server"], "10.77.0.1:0");
    let port = _srv.port.clone();
    // UDP
    let o = n.exec(&n.b, &["udp", "client", "10.77.0.1", "-p", &port, "--interval", "1ms", "-t", "0.5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert!(j["udp"]["received"].as_u64().unwrap() >= 490, "{}", j["udp"]);
    // TCP both ways, with a chosen cc
    for rev in [false, true] {
        let mut args = vec!["tcp", "client", "10.77.0.1", "-p", &port, "-n", "5MB", "-C", "bbr", "--json"];
        if rev {
            args.push("-R");
        }
        let o = n.exec(&n.b, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let j = json_of(&o);
        assert_eq!(j["flows"][0]["bytes_acked"], 5_000_000);
        assert_eq!(j["flows"][0]["cc"], "bbr");
        assert_eq!(j["flows"][0]["completed"], true);
    }
}

/// A server whose default control paces (BBR) cannot give a download an
/// unpaced CUBIC: the accepted socket starts as BBR, which marks it for
/// pacing, before -C cubic is set. The client says so (stderr), and does not
/// when the server's default does not pace or the control is BBR itself.
#[test]
fn a_download_asking_for_cubic_from_a_bbr_default_server_is_warned_that_it_is_paced() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the namespace test needs root (ip netns); run the tests as root to include it");
        return;
    }
    let n = Netns::create("pw", "10.77.3", None).unwrap_or_else(|e| panic!("could not build the namespaces: {e}"));
    let sysctl = |cc: &str| {
        let o = Command::new("ip").args(["netns", "exec", &n.a, "sysctl", "-qw", &format!("net.ipv4.tcp_congestion_control={cc}")]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let pfx = ["ip", "netns", "exec", n.a.as_str()];
    for (default, cc, warned) in [("bbr", "cubic", true), ("bbr", "bbr", false), ("reno", "cubic", false)] {
        sysctl(default);
        let srv = Server::start_with(&pfx, &["server"], "10.77.3.1:0");
        let o = n.exec(&n.b, &["tcp", "client", "10.77.3.1", "-p", &srv.port, "-n", "1MB", "-C", cc, "-R", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stderr(&o).contains("is paced"), warned, "default {default}, -C {cc}: {}", stderr(&o));
    }
}
