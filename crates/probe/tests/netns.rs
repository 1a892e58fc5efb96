//! Client and server in two network namespaces joined by a veth pair, the
//! way the emulator runs the probe (`ip netns exec NS bloatlab-probe ...`).
//! Needs root; otherwise it prints why it is skipped. The namespaces
//! (`bloatlab-pt-a-PID`, `bloatlab-pt-b-PID`) are removed even on failure.

mod common;
use common::*;

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
