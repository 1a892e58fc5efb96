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

/// A timed test behind a bloated queue ends within a bounded grace of its
/// length: the sender waits TIMED_ACK_GRACE_NS (2 s) after `-t` for its acks,
/// then reports what was acked and resets the connection, as when its receiver
/// asks it to stop. Before, it waited up to 30 s for the acks of its whole
/// autotuned send buffer: through a 500 kbit/s tbf holding up to 4 MB, an 8-s
/// download's client read its last byte at 18.2 s and reported at 20.1 s (now
/// 12.4 and 13.4). Both directions: `-R` (the server sends) and an upload.
#[test]
fn a_timed_test_behind_a_bloated_queue_reports_within_its_grace_after_its_length() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the namespace test needs root (ip netns); run the tests as root to include it");
        return;
    }
    let n = Netns::create("pg", "10.77.6", None).unwrap_or_else(|e| panic!("could not build the namespaces: {e}"));
    // each direction sends into a 500 kbit/s tbf holding up to 4 MB (64 s of queue)
    let rate_bytes_s = 62_500.0;
    for (ns, dev) in [(&n.a, &n.dev_a), (&n.b, &n.dev_b)] {
        let o = Command::new("ip")
            .args(["netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", "500kbit", "burst", "16kb", "limit", "4mb"])
            .output()
            .unwrap();
        assert!(o.status.success(), "tc: {}", String::from_utf8_lossy(&o.stderr));
    }
    let pfx = ["ip", "netns", "exec", n.a.as_str()];
    let srv = Server::start_with(&pfx, &["server"], "10.77.6.1:0");
    let secs = 8.0;
    let grace = 2.0;
    for reverse in [true, false] {
        let mut args = vec!["tcp", "client", "10.77.6.1", "-p", &srv.port, "-t", "8", "-C", "cubic", "--json"];
        if reverse {
            args.push("-R");
        }
        let t = std::time::Instant::now();
        let child = Command::new("ip")
            .args(["netns", "exec", &n.b, bin()])
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_output(child, std::time::Duration::from_secs(60));
        let took = t.elapsed().as_secs_f64();
        assert!(o.status.success(), "reverse {reverse}: {}", stderr(&o));
        let j = json_of(&o);
        let (f, raw) = (&j["flows"][0], &j["raw"]["flows"][0]);
        // the queue's delay at the end, as the sender's smoothed RTT saw it (its largest
        // sample): what was sent before the reset reaches the receiver that much later
        let queue_s = raw["rtt_ms"]["max"].as_f64().unwrap() / 1e3;
        let end_s = raw["end_s"].as_f64().unwrap();
        println!("reverse {reverse}: last byte at {end_s:.2} s, reported {took:.2} s after the start of a {secs} s test; srtt max {queue_s:.2} s; bytes_acked {}", f["bytes_acked"]);
        assert_eq!(f["cc"], "cubic", "the sender's half is missing: {}", stderr(&o));
        assert!(j["problem"].is_null(), "reverse {reverse}: {}", j["problem"]);
        // The flow ends (a download: the client's last byte read; an upload: the client's
        // reset) within the test, the grace and the queue ahead of the reset, plus 1 s for a
        // loaded 2-core machine (a timeslice or two, a ~60-ms VM pause) and the set-up (two
        // handshakes, ~1 ms here). Before: 18.2 s.
        let bound = secs + grace + queue_s + 1.0;
        assert!(end_s < bound, "reverse {reverse}: the flow ended at {end_s:.1} s, beyond {bound:.1} s; {}", stderr(&o));
        // the report follows once the server's result line (its TCP_INFO series: tens of kB,
        // a second or two at 500 kbit/s) has come through the same queue
        assert!(took < bound + 4.0, "reverse {reverse}: reported {took:.1} s after the start; {}", stderr(&o));
        // acked: what went through 500 kbit/s from the sender's first second (slow start at
        // a base RTT of ~0.1 ms fills the link within it) until its reset
        let acked = f["bytes_acked"].as_f64().unwrap();
        assert!(acked > rate_bytes_s * (secs - 1.0) && acked < rate_bytes_s * (secs + grace + 0.5), "bytes_acked {acked}");
    }
}
