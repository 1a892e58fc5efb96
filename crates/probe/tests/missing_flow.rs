//! A test some of whose data connections never arrive (issue 30): behind a
//! slow policer one upload flow's 16-byte hello was dropped again and again
//! while the other flows kept the bucket empty. The server serves the
//! connections that did arrive from the moment each does (reads an upload's,
//! sends a download's), and answers with their results and the missing ones
//! named, instead of leaving them unread and refusing the test. Raw clients
//! on 127.0.0.1 that open N-1 of N data connections, each bounded in time.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A test's control connection opened by hand; the server's `ok` line read.
fn raw_test(addr: &str, cookie: u64, streams: usize, reverse: bool, duration_s: u64) -> (TcpStream, BufReader<TcpStream>) {
    let mut ctrl = TcpStream::connect(addr).unwrap();
    ctrl.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let p = serde_json::json!({"cookie": cookie, "streams": streams, "reverse": reverse, "duration_ns": duration_s * 1_000_000_000u64,
                               "bytes": null, "cc": null, "info_interval_ns": 100_000_000u64});
    ctrl.write_all(format!("BLC1{p}\n").as_bytes()).unwrap();
    let mut rd = BufReader::new(ctrl.try_clone().unwrap());
    let mut line = String::new();
    rd.read_line(&mut line).unwrap();
    assert!(line.contains("\"ok\":true"), "{line}");
    (ctrl, rd)
}

/// Data connection `idx` of the test `cookie`, its hello sent.
fn data_conn(addr: &str, cookie: u64, idx: u32) -> TcpStream {
    let mut data = TcpStream::connect(addr).unwrap();
    let mut h = b"BLD1".to_vec();
    h.extend_from_slice(&cookie.to_le_bytes());
    h.extend_from_slice(&idx.to_le_bytes());
    data.write_all(&h).unwrap();
    data
}

fn results(rd: &mut BufReader<TcpStream>) -> serde_json::Value {
    let mut line = String::new();
    rd.read_line(&mut line).unwrap();
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("results are not JSON ({e}): {line}"))
}

#[test]
fn an_upload_missing_one_of_three_connections_is_read_from_the_start_and_answered_for_two() {
    let s = Server::start(&["server"]);
    let cookie = 0x5eed_0030_0000_0001u64;
    let (mut ctrl, mut rd) = raw_test(&s.addr, cookie, 3, false, 5);
    // connections 0 and 2 arrive, 1 never does. 64 MB each is far beyond what two unread sockets' buffers hold
    // (tcp_rmem + tcp_wmem: at most ~10 MB): a server that waits for connection 1 before it reads stalls them
    const EACH: usize = 64 << 20;
    let senders: Vec<_> = [0u32, 2]
        .into_iter()
        .map(|i| {
            let mut d = data_conn(&s.addr, cookie, i);
            std::thread::spawn(move || {
                d.set_write_timeout(Some(Duration::from_secs(8))).unwrap();
                let buf = vec![0x5au8; 1 << 16];
                let mut sent = 0;
                while sent < EACH {
                    match d.write(&buf) {
                        Ok(k) => sent += k,
                        Err(_) => break, // a write that waited 8 s: the server is not reading
                    }
                }
                let _ = d.shutdown(std::net::Shutdown::Write);
                sent
            })
        })
        .collect();
    let sent: Vec<usize> = senders.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(sent, vec![EACH, EACH], "the server did not read the connections that had arrived");
    // our senders have ended (as the client says it)
    ctrl.write_all(b"stop\n").unwrap();
    let t = Instant::now();
    let r = results(&mut rd);
    assert!(t.elapsed() < Duration::from_secs(15), "results after {:?}", t.elapsed());
    let streams = r["streams"].as_array().unwrap_or_else(|| panic!("no streams in {r}"));
    let mut got: Vec<(u64, u64)> = streams.iter().map(|x| (x["idx"].as_u64().unwrap(), x["bytes_read"].as_u64().unwrap())).collect();
    got.sort();
    assert_eq!(got, vec![(0, EACH as u64), (2, EACH as u64)], "{r}");
    assert_eq!(r["missing"], serde_json::json!([1]), "{r}");
    assert_eq!(r["streams_expected"], 3, "{r}");
}

#[test]
fn a_download_missing_one_of_two_connections_is_sent_at_once_and_answered_for_one() {
    let s = Server::start(&["server"]);
    let cookie = 0x5eed_0030_0000_0002u64;
    let (mut ctrl, mut rd) = raw_test(&s.addr, cookie, 2, true, 1);
    let mut d = data_conn(&s.addr, cookie, 0);
    d.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // the server sends on connection 0 before connection 1 (never) arrives, for the test's 1 s, then ends it
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0u64;
    loop {
        match d.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => got += k as u64,
            Err(e) => {
                assert!(got > 0, "nothing sent on the connection that arrived: {e}");
                break; // a reset at the sender's end
            }
        }
    }
    assert!(got > 0, "nothing sent on the connection that arrived");
    ctrl.write_all(b"stop\n").unwrap();
    let r = results(&mut rd);
    let streams = r["streams"].as_array().unwrap_or_else(|| panic!("no streams in {r}"));
    assert_eq!(streams.len(), 1, "{r}");
    assert_eq!(streams[0]["idx"], 0, "{r}");
    assert!(streams[0]["bytes_written"].as_u64().unwrap() >= got, "{r}");
    assert_eq!(r["missing"], serde_json::json!([1]), "{r}");
    assert_eq!(r["streams_expected"], 2, "{r}");
}

#[test]
fn a_test_whose_connections_all_arrive_names_none_missing() {
    let s = Server::start(&["server"]);
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &s.port, "-n", "1MB", "-P", "2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["missing_flows"], serde_json::json!([]), "{j}");
    assert!(j["problem"].is_null(), "{j}");
}

/// A stand-in server on 127.0.0.1 that takes any opening, answers `ok`, reads every data connection to its end, and
/// once the client's stop line comes answers `results` (the line of a server of another version). Bounded: 20 s.
fn fake_server(streams: usize, results: String) -> (String, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let h = std::thread::spawn(move || {
        let (mut ctrl, _) = l.accept().unwrap();
        ctrl.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut buf = [0u8; 4096];
        let _ = ctrl.read(&mut buf); // the opening (a tagged cookie and the parameters: one write)
        ctrl.write_all(b"{\"ok\":true,\"self_probes\":false}\n").unwrap();
        let readers: Vec<_> = (0..streams)
            .map(|_| {
                let (mut d, _) = l.accept().unwrap();
                std::thread::spawn(move || {
                    d.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                    let mut b = vec![0u8; 1 << 16];
                    while matches!(d.read(&mut b), Ok(n) if n > 0) {}
                })
            })
            .collect();
        let t = Instant::now();
        let mut said = Vec::new();
        while !said.ends_with(b"stop\n") && t.elapsed() < Duration::from_secs(20) {
            if let Ok(n) = ctrl.read(&mut buf) {
                said.extend_from_slice(&buf[..n]);
            }
        }
        ctrl.write_all(results.as_bytes()).unwrap();
        ctrl.write_all(b"\n").unwrap();
        for r in readers {
            let _ = r.join();
        }
    });
    (port, h)
}

#[test]
fn the_client_names_the_flow_a_server_says_never_arrived_and_counts_nothing_delivered_on_it() {
    let results = serde_json::json!({"streams": [{"idx": 0, "bytes_read": 100000, "start_mono": 0, "end_mono": 0}],
                                     "missing": [1], "streams_expected": 2, "kernel": "x", "boot_id": "x"});
    let (port, h) = fake_server(2, results.to_string());
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &port, "-n", "100KB", "-P", "2", "--json"]);
    h.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["missing_flows"], serde_json::json!([1]), "{j}");
    let p = j["problem"].as_str().unwrap_or_default();
    assert!(p.starts_with("1 of 2 data connections reached the server; never: up1 (flow 1)"), "{p}");
    let got: Vec<u64> = j["flows"].as_array().unwrap().iter().map(|f| f["bytes_delivered"].as_u64().unwrap()).collect();
    assert_eq!(got, vec![100000, 0], "{j}");
}

#[test]
fn an_older_servers_refusal_of_a_test_short_of_a_connection_is_the_clients_problem() {
    let (port, h) = fake_server(1, r#"{"ok":false,"error":"not all data connections arrived"}"#.into());
    let o = run(&["tcp", "client", "127.0.0.1", "-p", &port, "-n", "100KB", "--json"]);
    h.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["problem"], "the server refused the test's results: not all data connections arrived", "{j}");
}
