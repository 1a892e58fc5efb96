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

/// A download through a bloated queue, ended by SIGTERM as the emulator ends a
/// flow at its scheduled time: the client asks the server to stop, and both
/// must report at once. Before, the server waited for the acks of its whole
/// autotuned send buffer (megabytes behind a 2 Mbit/s, 4 MB tbf queue: tens of
/// seconds) and the client drained up to 10 s for a FIN queued behind them;
/// the emulator's 8-s report grace ran out ("no result from bloatlab-probe").
#[test]
fn a_download_stopped_behind_a_bloated_queue_reports_at_once_with_the_servers_half() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the namespace test needs root (ip netns); run the tests as root to include it");
        return;
    }
    let n = Netns::create("pb", "10.77.5", None).unwrap_or_else(|e| panic!("could not build the namespaces: {e}"));
    // the server's side sends into a 2 Mbit/s tbf holding up to 4 MB (16 s of queue)
    let o = Command::new("ip")
        .args(["netns", "exec", &n.a, "tc", "qdisc", "add", "dev", &n.dev_a, "root", "tbf", "rate", "2mbit", "burst", "16kb", "limit", "4mb"])
        .output()
        .unwrap();
    assert!(o.status.success(), "tc: {}", String::from_utf8_lossy(&o.stderr));
    let pfx = ["ip", "netns", "exec", n.a.as_str()];
    let srv = Server::start_with(&pfx, &["server"], "10.77.5.1:0");
    let child = Command::new("ip")
        .args(["netns", "exec", &n.b, bin(), "tcp", "client", "10.77.5.1", "-p", &srv.port, "-R", "-t", "30", "-C", "cubic", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(8));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = std::time::Instant::now();
    // the RST travels behind what is already in the 2 Mbit/s queue, and so does the server's
    // result line: at most ~8 s of queue can build up in 8 s (the RST ends it sooner); 8 s is the emulator's grace
    let o = wait_output(child, std::time::Duration::from_secs(30));
    let took = t.elapsed().as_secs_f64();
    let j = json_of(&o);
    let f = &j["flows"][0];
    println!("reported {took:.2} s after SIGTERM; bytes_acked {}", f["bytes_acked"]);
    assert!(took < 8.0, "the client took {took:.1} s to report after SIGTERM; {}", stderr(&o));
    assert_eq!(f["cc"], "cubic", "the server's half is missing: {}", stderr(&o));
    // what was acked is what went through 2 Mbit/s in ~8 s (at most 2 MB), not the send buffer
    let acked = f["bytes_acked"].as_u64().unwrap();
    assert!(acked > 400_000 && acked < 2_200_000, "bytes_acked {acked}");
    assert!(!stderr(&o).contains("no results"), "{}", stderr(&o));
}
