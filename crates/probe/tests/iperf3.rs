//! Interoperability with a stock iperf3 (Debian's iperf3 3.12; scripts/setup.sh
//! installs it): our client against `iperf3 -s`, `iperf3 -c` against our
//! server, both directions, several streams, each congestion control; on
//! loopback without privileges, and (root) through a rate-limited veth pair
//! between two namespaces, where the goodput must be within 5 % of
//! iperf3-to-iperf3 on the same path. Without iperf3 (or root, for the
//! namespace test) each test prints SKIPPED with the reason.

mod common;
use common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn have_iperf3() -> bool {
    let ok = Command::new("iperf3").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        println!("SKIPPED: iperf3 is not installed (apt-get install iperf3; scripts/setup.sh does it as root)");
        eprintln!("SKIPPED: iperf3 is not installed");
    }
    ok
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A listening TCP port in /proc/net/tcp{,6} of the namespace (`prefix`: `ip netns exec NS`).
fn wait_listening(prefix: &[&str], port: u16) {
    let t = Instant::now();
    let needle = format!(":{:04X} ", port);
    while t.elapsed() < Duration::from_secs(5) {
        let mut c = if prefix.is_empty() { Command::new("cat") } else { Command::new(prefix[0]) };
        if !prefix.is_empty() {
            c.args(&prefix[1..]).arg("cat");
        }
        let o = c.args(["/proc/net/tcp", "/proc/net/tcp6"]).output().unwrap();
        let s = String::from_utf8_lossy(&o.stdout);
        if s.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && format!("{} ", f[1]).ends_with(&needle) && f[3] == "0A"
        }) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on port {port}");
}

/// `iperf3 -s -1 -J` (one test, its JSON on stdout).
fn iperf3_server(prefix: &[&str], port: u16) -> Child {
    let mut c = if prefix.is_empty() { Command::new("iperf3") } else { Command::new(prefix[0]) };
    if !prefix.is_empty() {
        c.args(&prefix[1..]).arg("iperf3");
    }
    let child = c.args(["-s", "-1", "-J", "-p", &port.to_string()]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_listening(prefix, port);
    child
}

fn iperf3_client(prefix: &[&str], args: &[&str]) -> Value {
    let mut c = if prefix.is_empty() { Command::new("iperf3") } else { Command::new(prefix[0]) };
    if !prefix.is_empty() {
        c.args(&prefix[1..]).arg("iperf3");
    }
    let o = c.args(args).arg("-J").output().unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("iperf3 {args:?}: not JSON ({e}): {}", stdout(&o)))
}

/// Our binary, its output read as it comes (a -J document is larger than a pipe), killed after 60 s.
fn ours(prefix: &[&str], args: &[&str]) -> std::process::Output {
    let mut c = Command::new("timeout");
    c.args(["-s", "KILL", "60"]).args(prefix).arg(bin()).args(args);
    c.output().unwrap()
}

/// A server's stdout read to its end (it exits after one test); killed after 30 s.
fn finish(child: Child) -> std::process::Output {
    // a one-off server that outlives its test is killed at 30 s, not a failure here
    collect(child, Duration::from_secs(30)).unwrap_or_else(|o| o)
}

#[test]
fn our_client_runs_tests_against_a_stock_iperf3_server_both_ways() {
    if !have_iperf3() {
        return;
    }
    for (reverse, streams, cc) in [(false, "3", "reno"), (true, "2", "bbr"), (false, "1", "cubic")] {
        let port = free_port();
        let srv = iperf3_server(&[], port);
        let p = port.to_string();
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1", "-P", streams, "-C", cc, "-J"];
        if reverse {
            args.push("-R");
        }
        let o = ours(&[], &args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let j = json_of(&o);
        let s = finish(srv);
        let theirs: Value = serde_json::from_slice(&s.stdout).unwrap_or_else(|e| panic!("iperf3 -s -J: {e}: {}", stdout(&s)));
        assert!(theirs.get("error").is_none(), "iperf3 server: {}", theirs["error"]);
        let n: usize = streams.parse().unwrap();
        assert_eq!(j["end"]["streams"].as_array().unwrap().len(), n);
        assert_eq!(theirs["end"]["streams"].as_array().unwrap().len(), n, "the iperf3 server saw {n} streams");
        // the bytes the far end counted are the same number at both ends
        let key = if reverse { "sum_sent" } else { "sum_received" };
        let (ours_n, theirs_n) = (j["end"][key]["bytes"].as_u64().unwrap(), theirs["end"][key]["bytes"].as_u64().unwrap());
        assert!(ours_n > 10_000_000, "{ours_n} bytes in 1 s on loopback");
        assert_eq!(ours_n, theirs_n, "{key} bytes: ours {ours_n}, the iperf3 server's {theirs_n}");
        if reverse {
            let rx = j["end"]["sum_received"]["bytes"].as_u64().unwrap();
            assert!(rx > 0 && rx <= ours_n, "received {rx} of {ours_n} sent");
        }
        // the sender used the asked congestion control
        let sender_cc = if reverse { &theirs["end"]["sender_tcp_congestion"] } else { &j["end"]["sender_tcp_congestion"] };
        assert_eq!(sender_cc.as_str(), Some(cc), "{args:?}");
        // TCP_INFO series on the side that has them: ours when we send
        let series_len = j["bloatlab"]["raw"]["series"]["flows"]["t"].as_array().map_or(0, |v| v.len());
        if reverse {
            assert_eq!(series_len, 0, "a stock iperf3 server reports no TCP_INFO");
        } else {
            assert!(series_len >= 10 * n, "{series_len} TCP_INFO samples (every 10 ms) for {n} streams in 1 s");
        }
        assert_eq!(j["intervals"].as_array().unwrap().len(), 1, "-i 1 over 1 s: one interval");
    }
}

#[test]
fn our_client_finds_an_iperf3_server_by_itself() {
    if !have_iperf3() {
        return;
    }
    let port = free_port();
    let mut c = Command::new("iperf3").args(["-s", "-p", &port.to_string()]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_listening(&[], port);
    let o = ours(&[], &["tcp", "client", "127.0.0.1", "-p", &port.to_string(), "-t", "0.5"]);
    let _ = c.kill();
    let _ = c.wait();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("speaks iperf3's protocol"), "{}", stderr(&o));
    assert!(stdout(&o).contains("receiver"), "{}", stdout(&o));
}

#[test]
fn finding_a_one_shot_iperf3_server_does_not_use_up_its_test() {
    // `iperf3 -s -1` serves one test, and any connection is one (even a
    // connect-and-close): the client's opening must be that test, in both directions
    if !have_iperf3() {
        return;
    }
    for reverse in [false, true] {
        let port = free_port();
        let srv = iperf3_server(&[], port);
        let p = port.to_string();
        let mut args = vec!["tcp", "client", "127.0.0.1", "-p", &p, "-t", "1", "-P", "2"];
        if reverse {
            args.push("-R");
        }
        let o = ours(&[], &args);
        let s = finish(srv);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("speaks iperf3's protocol"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("refused"), "{}", stderr(&o));
        let theirs: Value = serde_json::from_slice(&s.stdout).unwrap_or_else(|e| panic!("iperf3 -s -J: {e}: {}", stdout(&s)));
        assert!(theirs.get("error").is_none(), "iperf3 server: {}", theirs["error"]);
        assert_eq!(theirs["end"]["streams"].as_array().unwrap().len(), 2, "the iperf3 server's one test was ours");
        assert_eq!(theirs["start"]["test_start"]["reverse"].as_i64(), Some(reverse as i64));
        // the bytes the iperf3 server moved itself: received, or sent with -R
        let key = if reverse { "sum_sent" } else { "sum_received" };
        let n = theirs["end"][key]["bytes"].as_u64().unwrap();
        assert!(n > 10_000_000, "{key}: {n} bytes in 1 s on loopback");
    }
}

#[test]
fn our_own_server_still_runs_our_protocol_behind_the_iperf3_shaped_opening() {
    // the same opening to a bloatlab-probe server: bloatlab's test (the server's
    // TCP_INFO series of a download arrives), with and without a secret
    for secret in [None, Some("s3cret")] {
        let mut srv_args = vec!["tcp", "server"];
        if let Some(k) = secret {
            srv_args.extend(["--secret", k]);
        }
        let s = Server::start(&srv_args);
        let mut args = vec!["tcp", "client", "127.0.0.1", "-p", &s.port, "-t", "0.5", "-R", "--json"];
        if let Some(k) = secret {
            args.extend(["--secret", k]);
        }
        let o = ours(&[], &args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("iperf3"), "{}", stderr(&o));
        let j = json_of(&o);
        assert!(j["raw"]["series"]["flows"]["t"].as_array().map_or(0, |v| v.len()) > 10, "the server's TCP_INFO series");
    }
}

#[test]
fn a_stock_iperf3_client_runs_tests_against_our_server_both_ways() {
    if !have_iperf3() {
        return;
    }
    let mut srv = Server::start(&["server", "--max-streams", "8"]);
    let p = srv.port.clone();
    for (reverse, streams, cc) in [(false, "2", "cubic"), (true, "3", "bbr"), (true, "1", "reno")] {
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1", "-P", streams, "-C", cc];
        if reverse {
            args.push("-R");
        }
        let j = iperf3_client(&[], &args);
        assert!(j.get("error").is_none(), "iperf3 {args:?}: {}", j["error"]);
        let n: usize = streams.parse().unwrap();
        assert_eq!(j["end"]["streams"].as_array().unwrap().len(), n);
        let rx = j["end"]["sum_received"]["bytes"].as_u64().unwrap();
        let tx = j["end"]["sum_sent"]["bytes"].as_u64().unwrap();
        // iperf3's client stops counting its writes at TEST_END, we count reads until it arrives: a block per stream
        assert!(rx > 10_000_000 && rx <= tx + 131_072 * n as u64, "sent {tx} received {rx}");
        let key = if reverse { "sender_tcp_congestion" } else { "receiver_tcp_congestion" };
        if reverse {
            assert_eq!(j["end"][key].as_str(), Some(cc), "our server sent with -C {cc}");
        }
    }
    // the TCP_INFO of our sending server reaches a stock client with --get-server-output
    let j = iperf3_client(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-R", "--get-server-output"]);
    let text = j["server_output_text"].as_str().unwrap_or_default();
    assert!(text.contains("TCP_INFO: cc") && text.contains("srtt p50"), "{j}");
    // refusals carry iperf3's error numbers, and the server stays up
    let j = iperf3_client(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-P", "9"]);
    assert!(j["error"].as_str().unwrap_or_default().contains("parallel streams"), "{}", j["error"]);
    let j = iperf3_client(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-C", "vegas"]);
    assert!(j["error"].as_str().unwrap_or_default().to_lowercase().contains("congestion"), "{}", j["error"]);
    let j = iperf3_client(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-u"]);
    assert!(j["error"].as_str().unwrap_or_default().contains("not implemented"), "{}", j["error"]);
    let j = iperf3_client(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "1"]);
    assert!(j.get("error").is_none(), "after the refusals: {}", j["error"]);
    // our own client still gets bloatlab's protocol on the same port
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &p, "-t", "0.5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(json_of(&o)["flows"][0]["goodput_mbps"].as_f64().unwrap() > 10.0);
    srv.kill();
}

#[test]
fn iperf3_style_flags_work_as_iperf3_users_type_them() {
    // -s / -c HOST with -p, -t, -i, -P, -R, -J (no iperf3 needed: our own server)
    let port = free_port();
    let p = port.to_string();
    let mut s = Command::new(bin()).args(["-s", "-p", &p]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_listening(&[], port);
    let o = ours(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-i", "0.5", "-P", "2", "-R", "-J"]);
    let j = json_of(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(j["intervals"].as_array().unwrap().len(), 2, "-i 0.5 over 1 s");
    assert_eq!(j["start"]["test_start"]["reverse"], 1);
    assert_eq!(j["start"]["test_start"]["num_streams"], 2);
    // the server's TCP_INFO series came back with the results
    assert!(j["bloatlab"]["raw"]["series"]["flows"]["t"].as_array().unwrap().len() >= 100);
    let o = ours(&[], &["-c", "127.0.0.1", "-p", &p, "-t", "0.5", "-w", "1M"]);
    assert_eq!(o.status.code(), Some(2), "an iperf3 flag we lack is refused by name");
    assert!(stderr(&o).contains("-w"), "{}", stderr(&o));
    let _ = s.kill();
    let _ = s.wait();
}

// ------------------------------------------------ through a shaped veth pair (root)

fn rx_bps(j: &Value) -> f64 {
    j["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or_else(|| panic!("no sum_received: {j}"))
}

fn best(v: &[f64]) -> f64 {
    v.iter().cloned().fold(0.0, f64::max)
}

/// The shaped-path test's bounds, one place for its assertions and for its
/// early stop: iperf3 to iperf3 on the 10 Mbit/s path between 7 and 10.5
/// Mbit/s, and each of our ends within 5 % of it.
fn path_ok(iperf3_bps: f64) -> bool {
    iperf3_bps > 7e6 && iperf3_bps < 10.5e6
}

fn within(ours_bps: f64, iperf3_bps: f64) -> bool {
    (ours_bps / iperf3_bps - 1.0).abs() <= 0.05
}

fn agree(iperf3_bps: f64, client_bps: f64, server_bps: f64) -> bool {
    path_ok(iperf3_bps) && within(client_bps, iperf3_bps) && within(server_bps, iperf3_bps)
}

/// Each case runs up to `BLOATLAB_IPERF3_ROUNDS` (3) rounds of iperf3->iperf3,
/// bloatlab client->iperf3 and iperf3->bloatlab server, interleaved, and
/// compares the best receiver goodput of each: the machine is shared, and a
/// loaded machine only ever lowers a run's goodput (iperf3 to iperf3 gave
/// 5.90, 9.56 and 7.66 Mbit/s in three runs at load average 8 on 2 cores),
/// so the best of a few runs is the path's figure for each tool. The tbf
/// bucket holds 64 KB (52 ms at 10 Mbit/s): with a bucket of a few packets
/// (32 kbit) a shaper timer that fires late on a loaded machine loses tokens,
/// and BBR -R -P 4 gave 6.1 to 9.5 Mbit/s for iperf3 and for us alike.
/// A case stops after the round in which its bests first pass the
/// assertions below (the rounds only ever raise a best: on an idle machine
/// the first round is the path's figure, and the two further rounds, 2/3 of
/// the test's 96 s, ran to confirm what it had already shown); a case whose
/// bests do not pass runs every round and asserts on all of them, as before.
#[test]
fn through_a_shaped_path_both_ends_are_within_5_percent_of_iperf3_to_iperf3() {
    if !have_iperf3() {
        return;
    }
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the shaped-path comparison needs root (ip netns, tc); run the tests as root to include it");
        eprintln!("SKIPPED: the shaped-path comparison needs root");
        return;
    }
    let n = Netns::create("i3", "10.78.0", Some("10mbit")).unwrap_or_else(|e| panic!("could not build the namespaces: {e}"));
    let (na, nb) = (["ip", "netns", "exec", n.a.as_str()], ["ip", "netns", "exec", n.b.as_str()]);
    let secs = std::env::var("BLOATLAB_IPERF3_S").unwrap_or_else(|_| "3".into());
    let rounds: usize = std::env::var("BLOATLAB_IPERF3_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let mut report = Vec::new();
    for (reverse, streams, cc) in [(false, "1", "cubic"), (true, "4", "bbr"), (false, "4", "reno")] {
        let mut extra = vec!["-t", &secs, "-P", streams, "-C", cc];
        if reverse {
            extra.push("-R");
        }
        let (mut b, mut c, mut s) = (vec![], vec![], vec![]);
        for _ in 0..rounds {
            // iperf3 to iperf3
            let srv = iperf3_server(&na, 5201);
            let mut a = vec!["-c", "10.78.0.1", "-p", "5201"];
            a.extend(&extra);
            let base = iperf3_client(&nb, &a);
            let _ = finish(srv);
            assert!(base.get("error").is_none(), "iperf3 to iperf3: {}", base["error"]);
            b.push(rx_bps(&base));
            // our client to iperf3
            let srv = iperf3_server(&na, 5201);
            let o = ours(&nb, &[&a[..], &["-J"]].concat());
            let _ = finish(srv);
            assert!(o.status.success(), "{}", stderr(&o));
            c.push(rx_bps(&json_of(&o)));
            // iperf3 to our server
            let srv = Server::start_with(&na, &["server"], "10.78.0.1:5202");
            let mut a2 = vec!["-c", "10.78.0.1", "-p", "5202"];
            a2.extend(&extra);
            let ours_s = iperf3_client(&nb, &a2);
            drop(srv);
            assert!(ours_s.get("error").is_none(), "iperf3 to our server: {}", ours_s["error"]);
            s.push(rx_bps(&ours_s));
            if agree(best(&b), best(&c), best(&s)) {
                break;
            }
        }
        let mb = |v: &[f64]| v.iter().map(|x| format!("{:.2}", x / 1e6)).collect::<Vec<_>>().join("/");
        let line = format!(
            "{} -P {streams} -C {cc}: iperf3->iperf3 {} Mbit/s, bloatlab client->iperf3 {}, iperf3->bloatlab server {}",
            if reverse { "-R" } else { "  " }, mb(&b), mb(&c), mb(&s)
        );
        let (bm, cm, sm) = (best(&b), best(&c), best(&s));
        report.push(format!("{line}; best {:.2} / {:.2} ({:+.2} %) / {:.2} ({:+.2} %)", bm / 1e6, cm / 1e6, (cm / bm - 1.0) * 100.0, sm / 1e6, (sm / bm - 1.0) * 100.0));
        println!("{}", report.last().unwrap());
        assert!(path_ok(bm), "the 10 Mbit/s path gave iperf3 {:.2} Mbit/s", bm / 1e6);
        for (who, x) in [("our client", cm), ("our server", sm)] {
            assert!(within(x, bm), "{who}: {:.3} Mbit/s against iperf3's {:.3}\n{}", x / 1e6, bm / 1e6, report.join("\n"));
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// What a hostile peer speaking iperf3's protocol gets from our server: a
/// bounded read, iperf3's error numbers, and a server that keeps serving.
#[test]
fn our_server_bounds_what_an_iperf3_peer_sends() {
    use std::io::{Read, Write};
    let srv = Server::start(&["server"]);
    let addr = format!("127.0.0.1:{}", srv.port);
    let cookie = b"abcdefghijklmnopqrstuvwxyz2345672345\0";
    let hello = |c: &mut std::net::TcpStream| {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(cookie).unwrap();
        let mut st = [0u8; 1];
        c.read_exact(&mut st).unwrap();
        assert_eq!(st[0] as i8, 9, "PARAM_EXCHANGE");
    };
    // a 4 GiB parameter message: refused before anything is allocated
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    hello(&mut c);
    c.write_all(&u32::MAX.to_be_bytes()).unwrap();
    let mut reply = Vec::new();
    let _ = c.read_to_end(&mut reply);
    assert_eq!(reply.first().map(|b| *b as i8), Some(-2), "SERVER_ERROR: {reply:?}");
    // a million streams: SERVER_ERROR with IENUMSTREAMS (6)
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    hello(&mut c);
    let p = br#"{"tcp":true,"time":10,"parallel":1000000}"#;
    c.write_all(&(p.len() as u32).to_be_bytes()).unwrap();
    c.write_all(p).unwrap();
    let mut reply = [0u8; 9];
    c.read_exact(&mut reply).unwrap();
    assert_eq!(reply[0] as i8, -2);
    assert_eq!(i32::from_be_bytes(reply[1..5].try_into().unwrap()), 6, "IENUMSTREAMS");
    // a data connection with a cookie nobody waits for, and a cookie cut short: closed, nothing else
    for bytes in [&cookie[..], &cookie[..20]] {
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(7))).unwrap();
        c.write_all(bytes).unwrap();
        if bytes.len() < 37 {
            let mut v = Vec::new();
            let _ = c.read_to_end(&mut v);
            assert!(v.is_empty(), "{v:?}");
        }
    }
    // still serving
    let o = run(&["-c", "127.0.0.1", "-p", &srv.port, "-t", "0.5", "-J"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(json_of(&o)["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
}
