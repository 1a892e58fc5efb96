//! Packet trains (`udp train`, and `--up`) against a server on 127.0.0.1: the
//! train arrives with its figures, and the server's bounds (it faces the
//! network) refuse what they must: no train without the cookie handshake,
//! nothing larger than the request before it, the count and size caps, one
//! train in flight per session, a budget per source address.

mod common;
use bloatlab_probe::train::{self, Answer, Status};
use bloatlab_probe::train_up::{self, UpAnswer};
use bloatlab_probe::wire::{self, Key, Kind};
use common::*;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

#[test]
fn a_train_arrives_whole_on_loopback_with_its_figures() {
    let s = Server::start(&["server"]);
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "200", "--size", "1000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["test"], "udp-train");
    let t = &j["train"];
    assert_eq!(t["direction"], "down");
    assert_eq!(t["sent"], 200);
    assert_eq!(t["server_sent"], 200, "{t}");
    assert_eq!(t["wire_bytes"], 1028);
    let (received, drops) = (t["received"].as_u64().unwrap(), t["local_drops"].as_u64().unwrap_or(0));
    assert!(received + drops >= 200, "{t}");
    assert!(t["leading_mbps"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["send_ms"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(t["send_from"], "server");
    // the client's quiet after its last arrival when the train ended: the server's DONE and a moment, or silence
    assert!(t["quiet_ms"].as_f64().is_some_and(|q| q >= 0.0), "{t}");
    for k in ["first_loss", "lost", "lost_seq", "head_bytes", "tail_mbps", "bucket_bytes", "sender_limited", "notes", "timestamps"] {
        assert!(t.get(k).is_some(), "no {k} in {t}");
    }
    // each packet's one-way delay beyond the least (null: lost): one per packet sent, the least of them 0
    let d: Vec<Option<f64>> = t["delay_ms"].as_array().expect("delay_ms").iter().map(|v| v.as_f64()).collect();
    assert_eq!(d.len(), 200);
    let got: Vec<f64> = d.iter().flatten().copied().collect();
    assert_eq!(got.len() as u64, received.min(200), "{t}");
    assert!(got.iter().all(|&v| v >= 0.0) && got.iter().any(|&v| v == 0.0), "{t}");
    // the human text
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "50"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("leading rate") && out.contains("received 50 of 50"), "{out}");
}

#[test]
fn with_a_secret_only_a_client_that_knows_it_gets_a_train() {
    let s = Server::start(&["server", "--secret", "k1"]);
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "20", "--secret", "k1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_of(&o)["train"]["server_sent"], 20);
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "20", "--timeout", "200ms"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no answer"), "{}", stderr(&o));
}

#[test]
fn the_client_refuses_a_train_beyond_the_servers_caps_naming_the_flag() {
    let o = run(&["udp", "train", "127.0.0.1", "--count", "4097"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--count"), "{}", stderr(&o));
    let o = run(&["udp", "train", "127.0.0.1", "--size", "1473"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--size"), "{}", stderr(&o));
}

/// A raw client: its socket and session.
struct Raw {
    u: UdpSocket,
    session: u32,
}

impl Raw {
    fn new(port: &str, session: u32) -> Raw {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.connect(format!("127.0.0.1:{port}")).unwrap();
        u.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        use std::os::fd::AsRawFd;
        bloatlab_probe::sys::set_buffers(u.as_raw_fd(), 8 << 20);
        bloatlab_probe::sys::force_rcvbuf(u.as_raw_fd(), 8 << 20);
        Raw { u, session }
    }
    fn ask(&self, count: u32, size: u16, cookie: &[u8; 16]) -> usize {
        let r = train::build_request(self.session, count, size, cookie, None);
        self.u.send(&r).unwrap();
        r.len()
    }
    /// Everything that comes back within `ms` of silence: (answers with their lengths, data packets).
    fn collect(&self, ms: u64) -> (Vec<(Answer, usize)>, usize) {
        self.u.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
        let (mut answers, mut data) = (Vec::new(), 0);
        let mut b = [0u8; 2048];
        let t = Instant::now();
        while let Ok(n) = self.u.recv(&mut b) {
            let p = wire::parse(&b[..n], None).unwrap();
            assert_eq!(p.session, self.session);
            match p.kind {
                Kind::TrainAnswer => answers.push((train::parse_answer(&b[..n]).unwrap(), n)),
                Kind::TrainData => data += 1,
                k => panic!("unexpected {k:?}"),
            }
            assert!(t.elapsed() < Duration::from_secs(10));
        }
        (answers, data)
    }
    fn cookie(&self) -> [u8; 16] {
        self.ask(10, 100, &[0; 16]);
        let (a, data) = self.collect(300);
        assert_eq!((a.len(), data), (1, 0), "{a:?}");
        assert_eq!(a[0].0.status, Status::Cookie);
        a[0].0.cookie
    }
}

#[test]
fn without_the_cookie_a_request_gets_one_answer_no_longer_than_itself_and_no_train() {
    let s = Server::start(&["server"]);
    let c = Raw::new(&s.port, 7);
    // a spoofer's request (no cookie, or a guessed one) from the victim's address
    for guess in [[0u8; 16], [0x5a; 16]] {
        let len = c.ask(4096, 1472, &guess);
        let (a, data) = c.collect(300);
        assert_eq!(data, 0, "a train went to an address that never echoed the cookie");
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].0.status, Status::Cookie);
        assert!(a[0].1 <= len, "the answer ({} B) is longer than the request ({len} B)", a[0].1);
    }
    // a cookie is bound to its address, port and session: another session's is no good
    let cookie = c.cookie();
    let other = Raw::new(&s.port, 7);
    other.ask(10, 100, &cookie);
    let (a, data) = other.collect(300);
    assert_eq!((a.len(), data, a[0].0.status), (1, 0, Status::Cookie), "{a:?}");
    let again = Raw { u: c.u.try_clone().unwrap(), session: 8 };
    again.ask(10, 100, &cookie);
    let (a, data) = again.collect(300);
    assert_eq!((a.len(), data, a[0].0.status), (1, 0, Status::Cookie), "{a:?}");
    // echoed from its own address and session, it gets the train and DONE
    c.ask(10, 100, &cookie);
    let (a, data) = c.collect(300);
    assert_eq!(data, 10);
    // DONE, twice (the first may follow the train into a policer's empty bucket)
    assert_eq!(a.iter().map(|x| (x.0.status, x.0.value)).collect::<Vec<_>>(), vec![(Status::Done, 10); 2]);
}

#[test]
fn counts_and_sizes_beyond_the_caps_are_refused_with_an_answer_naming_the_cap() {
    let s = Server::start(&["server"]);
    let c = Raw::new(&s.port, 11);
    let cookie = c.cookie();
    for (count, size, status, value) in [
        (4097, 1472, Status::TooMany, 4096),
        (u32::MAX, 1472, Status::TooMany, 4096),
        (10, 1473, Status::TooBig, 1472),
        (10, 65535, Status::TooBig, 1472),
        (0, 1472, Status::TooSmall, 64),
        (10, 20, Status::TooSmall, 64),
    ] {
        let len = c.ask(count, size, &cookie);
        let (a, data) = c.collect(200);
        assert_eq!(data, 0, "{count} x {size}");
        assert_eq!(a.len(), 1, "{count} x {size}: {a:?}");
        assert_eq!((a[0].0.status, a[0].0.value), (status, value), "{count} x {size}");
        assert!(a[0].1 <= len);
        let text = train::refusal_text(status, value, count, size as usize);
        assert!(text.contains("--count") || text.contains("--size"), "{text}");
    }
    // a request of the wrong length is ignored
    let mut r = train::build_request(11, 10, 100, &cookie, None);
    r.push(0);
    c.u.send(&r).unwrap();
    assert_eq!(c.collect(200), (vec![], 0));
}

#[test]
fn one_train_in_flight_per_session_and_a_budget_per_source_address() {
    let s = Server::start(&["server"]);
    let c = Raw::new(&s.port, 21);
    let cookie = c.cookie();
    // the same request twice at once: the second finds the first in flight
    c.ask(4096, 1472, &cookie);
    c.ask(4096, 1472, &cookie);
    let (a, data) = c.collect(300);
    let st: Vec<(Status, u32)> = a.iter().map(|x| (x.0.status, x.0.value)).collect();
    assert!(st.contains(&(Status::Busy, 0)), "{st:?}");
    // (the DONE may drown with the data in this socket's receive buffer)
    assert!(st.iter().all(|x| *x == (Status::Busy, 0) || *x == (Status::Done, 4096)), "{st:?}");
    assert!(data <= 4096, "one train only ({data} packets)");
    // 4096 x 1500 B = 6.1 MB spent of 8 MB per 10 s: a second one, from another session
    // and port of the same address, waits for the budget
    let d = Raw::new(&s.port, 22);
    let cookie = d.cookie();
    d.ask(4096, 1472, &cookie);
    let (a, data) = d.collect(300);
    assert_eq!(data, 0);
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].0.status, Status::Budget);
    let wait_ms = a[0].0.value;
    assert!((3000..=8000).contains(&wait_ms), "{wait_ms} ms");
    // a small train still fits
    d.ask(100, 1472, &cookie);
    let (a, data) = d.collect(300);
    assert_eq!((data, a.last().map(|x| x.0.status)), (100, Some(Status::Done)));
}

#[test]
fn a_server_holding_a_secret_ignores_unsigned_train_requests() {
    let s = Server::start(&["server", "--secret", "x"]);
    let c = Raw::new(&s.port, 31);
    c.ask(10, 100, &[0; 16]);
    assert_eq!(c.collect(300), (vec![], 0));
    // signed with the secret: the handshake answers, signed
    let k = Key::new(b"x");
    c.u.send(&train::build_request(31, 10, 100, &[0; 16], Some(&k))).unwrap();
    let mut b = [0u8; 256];
    let n = c.u.recv(&mut b).unwrap();
    let p = wire::parse(&b[..n], Some(&k)).unwrap();
    assert_eq!(p.kind, Kind::TrainAnswer);
}

#[test]
fn a_paced_train_leaves_at_its_pace_and_says_so() {
    let s = Server::start(&["server"]);
    // 100 packets of 972 B (1000 B IPv4 packets) at 80 Mbit/s: 100 us apart, 9.9 ms from first to last
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "100", "--size", "972", "--rate", "80Mbit", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = &json_of(&o)["train"];
    assert_eq!(t["pace_mbps"], 80.0);
    assert_eq!(t["server_sent"], 100, "{t}");
    assert_eq!(t["send_from"], "server");
    let send_ms = t["send_ms"].as_f64().unwrap();
    assert!(send_ms >= 9.8, "sent in {send_ms} ms: not paced");
    assert_eq!(t["sender_limited"], false, "a paced head is the pace: {t}");
    // each packet's send time after the first's: 100 us apart, at most one packet early
    let tx: Vec<f64> = t["tx_ms"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!((tx.len(), tx[0]), (100, 0.0));
    assert!(tx[99] >= 9.8 && tx.windows(3).all(|w| w[2] - w[0] >= 0.095), "{tx:?}");
    // the human text names the pace
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "20", "--rate", "50Mbit"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("paced at 50.00 Mbit/s"), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn a_paced_train_longer_than_a_second_is_refused_by_the_client_and_by_the_server() {
    // 4096 full packets at 10 Mbit/s: 1.2 ms apart, 4.9 s; a second holds 834
    let o = run(&["udp", "train", "127.0.0.1", "--count", "4096", "--rate", "10Mbit"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--rate") && e.contains("--count") && e.contains("at most 834 packets"), "{e}");
    // a request past the client's check: the server answers TooLong with the most packets at that pace
    let s = Server::start(&["server"]);
    let c = Raw::new(&s.port, 41);
    let cookie = c.cookie();
    for (count, pace, value) in [(4096u32, 10_000_000u64, 834u32), (85, 1_000_000, 84), (2, 1, 1)] {
        let r = train::build_paced_request(41, count, 1472, pace, &cookie, None);
        c.u.send(&r).unwrap();
        let (a, data) = c.collect(200);
        assert_eq!(data, 0, "{count} at {pace}");
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!((a[0].0.status, a[0].0.value), (Status::TooLong, value), "{count} at {pace}");
        assert!(a[0].1 <= r.len());
        assert!(train::refusal_text(Status::TooLong, value, count, 1472).contains(&format!("at most {value} packets")));
    }
    // 84 full packets at 1 Mbit/s take 83 x 12 ms = 996 ms: sent, and the DONE echoes the pace
    let r = train::build_paced_request(41, 84, 1472, 1_000_000, &cookie, None);
    c.u.send(&r).unwrap();
    let (a, data) = c.collect(400);
    assert_eq!(data, 84);
    let done: Vec<&Answer> = a.iter().map(|x| &x.0).filter(|x| x.status == Status::Done).collect();
    assert!(!done.is_empty(), "{a:?}");
    assert!(done.iter().all(|d| d.pace_bps == 1_000_000 && d.span_ns >= 83 * 12_000_000 - 12_000_000), "{done:?}");
}

#[test]
fn a_server_that_predates_paced_trains_is_told_not_read_as_paced() {
    // an old server: answers the handshake, then sends back to back and a DONE without a pace (its bytes 0)
    let srv = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = srv.local_addr().unwrap().port().to_string();
    let h = std::thread::spawn(move || {
        let mut b = [0u8; 256];
        srv.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for _ in 0..2 {
            let Ok((n, from)) = srv.recv_from(&mut b) else { return };
            let p = wire::parse(&b[..n], None).unwrap();
            let req = train::parse_request(&b[..n]).unwrap();
            if req.cookie == [0; 16] {
                let a = Answer { status: Status::Cookie, value: 0, cookie: [9; 16], span_ns: 0, errors: 0, pace_bps: 0 };
                srv.send_to(&train::build_answer(p.session, &a, None), from).unwrap();
                continue;
            }
            let (sent, span_ns, errors) = train::send_train(&srv, from, p.session, req.count, req.size as usize, 0, None);
            let a = Answer { status: Status::Done, value: sent, cookie: [0; 16], span_ns, errors, pace_bps: 0 };
            srv.send_to(&train::build_answer(p.session, &a, None), from).unwrap();
        }
    });
    let o = run(&["udp", "train", "127.0.0.1", "-p", &port, "--count", "30", "--rate", "20Mbit"]);
    h.join().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("predates paced trains"), "{}", stderr(&o));
}

// ---------------------------------------------------------------- up trains

/// Every key of a down train's `train` object: an up train's has them all.
const TRAIN_KEYS: [&str; 39] = [
    "sent", "received", "lost", "lost_seq", "first_loss", "head_packets", "head_bytes", "head_span_ms", "leading_mbps",
    "head_send_mbps", "sender_limited", "tail_packets", "tail_span_ms", "tail_mbps", "tail_arrival_mbps", "tail_send_mbps",
    "bucket_bytes", "bucket_min_bytes", "notes", "batches", "size", "wire_bytes", "server_sent", "server_send_errors", "send_ms",
    "send_from", "send_mbps", "pace_mbps", "local_drops", "duplicates", "foreign", "handshake_rtt_ms", "quiet_ms", "timestamps",
    "rates", "direction", "delay_ms", "owd_least_ms", "rx_ms",
];

/// CLOCK_REALTIME ns, the clock of the train's stamps.
fn real_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

#[test]
fn with_wait_go_a_train_goes_only_after_its_go_line_and_its_arrivals_are_on_the_receivers_clock() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let s = Server::start(&["server"]);
    for up in [false, true] {
        let mut args = vec!["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "50", "--size", "500", "--wait-go", "--json"];
        if up {
            args.push("--up");
        }
        let mut c = Command::new(bin()).args(&args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // the handshake takes a loopback round trip; the train waits for the line however long it comes
        std::thread::sleep(Duration::from_millis(300));
        assert!(c.try_wait().unwrap().is_none(), "the client did not wait for its go line (up: {up})");
        let go_at = real_ns();
        c.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        let o = wait_output(c, Duration::from_secs(10));
        assert!(o.status.success(), "{}", stderr(&o));
        let t = &json_of(&o)["train"];
        assert_eq!(t["received"], 50, "{t}");
        let first = t["rx_first_real_ns"].as_u64().expect("the first arrival's clock");
        assert!(first > go_at && first < go_at + 1_000_000_000, "the first arrival {first} after the go at {go_at} (up: {up})");
        // each packet's arrival after the first's: the least 0, in the order sent on loopback
        let rx: Vec<f64> = t["rx_ms"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!((rx.len(), rx.iter().copied().fold(f64::MAX, f64::min)), (50, 0.0));
        // one host, one clock: the least one-way delay is loopback's, a positive fraction of a millisecond
        let least = t["owd_least_ms"].as_f64().unwrap();
        assert!(least > 0.0 && least < 50.0, "{least} ms (up: {up})");
        assert_eq!(t.as_object().unwrap().keys().filter(|k| TRAIN_KEYS.contains(&k.as_str())).count(), TRAIN_KEYS.len());
    }
    // standard input ends before the line: no train, an error naming the flag
    let o = Command::new(bin())
        .args(["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "5", "--wait-go", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--wait-go: standard input ended before the go line"), "{}", stderr(&o));
}

#[test]
fn an_up_train_arrives_whole_on_loopback_with_the_down_trains_keys() {
    let s = Server::start(&["server"]);
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--up", "--count", "300", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert_eq!(j["test"], "udp-train");
    let t = &j["train"];
    for k in TRAIN_KEYS {
        assert!(t.get(k).is_some(), "no {k} in {t}");
    }
    assert_eq!((t["direction"].as_str(), t["send_from"].as_str()), (Some("up"), Some("client")));
    assert_eq!((t["sent"].as_u64(), t["server_sent"].as_u64(), t["server_send_errors"].as_u64()), (Some(300), Some(300), Some(0)));
    assert_eq!(t["wire_bytes"], 1500);
    // the server's socket counts its drops on Linux: what it dropped is all that is missing
    let drops = t["local_drops"].as_u64().expect("the server counts its socket's drops");
    assert_eq!(t["received"].as_u64().unwrap() + drops, 300, "{t}");
    if drops == 0 {
        assert_eq!((t["lost"].as_u64(), t["first_loss"].as_u64(), t["head_packets"].as_u64()), (Some(0), None, Some(300)), "{t}");
        assert_eq!(t["lost_seq"], serde_json::json!([]));
    }
    assert_eq!((t["duplicates"].as_u64(), t["foreign"].as_u64()), (Some(0), Some(0)));
    assert!(t["leading_mbps"].as_f64().unwrap() > 0.0 && t["send_ms"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(t["timestamps"], "kernel rx (SO_TIMESTAMPNS)", "the server's stamps");
    assert!(t["handshake_rtt_ms"].as_f64().unwrap() > 0.0);
    assert!(t.get("tx_ms").is_none(), "back to back: no send times");
    // the same keys as a down train's object
    let d = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--count", "20", "--json"]);
    assert!(d.status.success(), "{}", stderr(&d));
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(t), keys(&json_of(&d)["train"]));
    // the human text
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--up", "--count", "50"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with(&format!("UDP train to 127.0.0.1:{} (up): 50 packets of 1472 B (1500 B on the wire), back to back\n", s.port)), "{out}");
    assert!(out.contains("received 50 of 50") && out.contains("leading rate") && out.contains("the client sent it in"), "{out}");
}

#[test]
fn a_paced_up_train_leaves_and_arrives_at_its_pace() {
    let s = Server::start(&["server"]);
    // 200 full packets at 50 Mbit/s: 240 us apart, 47.8 ms from first to last
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--up", "--count", "200", "--rate", "50Mbit", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = &json_of(&o)["train"];
    assert_eq!((t["pace_mbps"].as_f64(), t["server_sent"].as_u64()), (Some(50.0), Some(200)), "{t}");
    assert_eq!(t["sender_limited"], false, "a paced head is the pace: {t}");
    let (head_send, leading) = (t["head_send_mbps"].as_f64().unwrap(), t["leading_mbps"].as_f64().unwrap());
    // never faster than the pace (one packet may leave early); a loaded machine only adds lateness (the suite
    // beside a build: 6.7 Mbit/s, the sleeps waking on 4-ms ticks), as the down train's pace test allows
    assert!(head_send > 0.0 && head_send <= 1.2 * 50.0, "the head left at {head_send} Mbit/s: {t}");
    assert!((leading - head_send).abs() <= 0.2 * head_send, "it arrived at {leading} Mbit/s, sent at {head_send}");
    let tx = t["tx_ms"].as_array().unwrap();
    assert_eq!((tx.len(), tx[0].as_f64()), (200, Some(0.0)));
    // a paced up train longer than the server's second is refused before anything is sent
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--up", "--count", "4096", "--rate", "10Mbit"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("at most 834 packets"), "{}", stderr(&o));
}

#[test]
fn an_up_train_with_a_secret_goes_only_with_it() {
    let s = Server::start(&["server", "--secret", "k1"]);
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--up", "--count", "20", "--secret", "k1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = &json_of(&o)["train"];
    assert_eq!(t["server_sent"], 20);
    assert_eq!(t["received"].as_u64().unwrap() + t["local_drops"].as_u64().unwrap(), 20, "{t}");
    let o = run(&["udp", "train", "127.0.0.1", "-p", &s.port, "--up", "--count", "20", "--timeout", "200ms"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no answer"), "{}", stderr(&o));
}

#[test]
fn a_server_that_predates_up_trains_is_told_apart_from_no_server() {
    // an old server: it echoes requests and knows no kind 6 (BadKind: ignored)
    let srv = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = srv.local_addr().unwrap().port().to_string();
    srv.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let h = std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((n, from)) = srv.recv_from(&mut b) else { continue };
            if let Ok(p) = wire::parse(&b[..n], None) {
                if p.kind == Kind::Request {
                    wire::make_reply(&mut b[..n], 1, || 2, None);
                    srv.send_to(&b[..n], from).unwrap();
                }
            }
        }
    });
    let o = run(&["udp", "train", "127.0.0.1", "-p", &port, "--up", "--count", "10", "--timeout", "200ms"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("predates up trains (compare `bloatlab-probe --version` on both ends)"), "{}", stderr(&o));
    // nothing there at all
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    let o = run(&["udp", "train", "127.0.0.1", "-p", &port, "--up", "--count", "10", "--timeout", "200ms"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no answer from"), "{}", stderr(&o));
}

/// The up protocol by hand against the server: every answer as long as its
/// request at most, nothing for data without a slot, the records read back.
#[test]
fn up_answers_are_never_longer_than_their_requests_and_only_a_slots_packets_are_recorded() {
    let s = Server::start(&["server"]);
    let c = Raw::new(&s.port, 51);
    let answer = |req: &[u8]| -> Option<(UpAnswer, usize)> {
        c.u.send(req).unwrap();
        let mut b = [0u8; 2048];
        let n = c.u.recv(&mut b).ok()?;
        let p = wire::parse(&b[..n], None).unwrap();
        assert_eq!((p.kind, p.session), (Kind::UpAnswer, 51));
        assert!(n <= req.len(), "an answer of {n} B to a request of {} B", req.len());
        Some((train_up::parse_up_answer(&b[..n]).unwrap(), n))
    };
    // data before any slot: ignored, no answer
    let data = |seq: u64, size: usize| {
        let mut b = vec![0u8; size];
        b[0..2].copy_from_slice(&wire::MAGIC);
        b[2] = wire::VERSION << 4 | Kind::TrainData as u8;
        b[4..8].copy_from_slice(&51u32.to_le_bytes());
        b[8..16].copy_from_slice(&seq.to_le_bytes());
        b[24..28].copy_from_slice(&10u32.to_le_bytes());
        c.u.send(&b).unwrap();
    };
    data(0, 1000);
    assert_eq!(c.collect(200), (vec![], 0));
    // a report without a slot: GONE, as long as the request
    let (a, n) = answer(&train_up::build_report_request(51, 0, 700, None)).unwrap();
    assert!(matches!(a, UpAnswer::Report { status: Status::Gone, .. }), "{a:?}");
    assert_eq!(n, 700);
    // start: a cookie first (no longer than the start), then READY
    let start = |cookie: &[u8; 16]| train_up::build_start(51, 10, 1000, 0, cookie, None);
    let (a, _) = answer(&start(&[0; 16])).unwrap();
    let UpAnswer::Start { status: Status::Cookie, cookie, .. } = a else { panic!("{a:?}") };
    let (a, _) = answer(&start(&cookie)).unwrap();
    assert_eq!(a, UpAnswer::Start { status: Status::Ready, value: 10, cookie: [0; 16] });
    // ten packets, a wrong-sized one, one beyond the count, a copy: none answered
    // (the last packet the server records is seq 9: the clock starts before it is sent, since the three after it
    // are not recorded and the client may be descheduled while it sends them)
    let mut last_recorded_sent = std::time::Instant::now();
    for seq in 0..10 {
        if seq == 9 {
            last_recorded_sent = std::time::Instant::now();
        }
        data(seq, 1000);
    }
    data(3, 999);
    data(10, 1000);
    data(4, 1000);
    std::thread::sleep(Duration::from_millis(50));
    // a poll (no room for a record), then the records in one padded request
    let (a, n) = answer(&train_up::build_report_request(51, 0, 0, None)).unwrap();
    let UpAnswer::Report { status: Status::Records, report } = a else { panic!("{a:?}") };
    assert_eq!((n, report.received, report.duplicates, report.records.len()), (train_up::report_min_len(0), 10, 1, 0));
    // the quiet since the last packet the server recorded: no longer than since it was sent (the server may have
    // taken it late on a loaded machine, so no lower bound but that it passed)
    assert!(report.quiet_ns > 0 && report.quiet_ns <= last_recorded_sent.elapsed().as_nanos() as u64 && report.kernel_stamps, "{report:?}");
    let (a, n) = answer(&train_up::build_report_request(51, 0, 1472, None)).unwrap();
    let UpAnswer::Report { report, .. } = a else { panic!("{a:?}") };
    assert_eq!(n, 1472);
    assert_eq!(report.records.iter().map(|r| r.0).collect::<Vec<_>>(), (0..10).collect::<Vec<u32>>());
    assert!(report.records.windows(2).all(|w| w[1].1 >= w[0].1), "arrival order, the server's stamps");
    // done frees the slot: the next report is GONE
    c.u.send(&train_up::build_done(51, None)).unwrap();
    let (a, _) = answer(&train_up::build_report_request(51, 0, 100, None)).unwrap();
    assert!(matches!(a, UpAnswer::Report { status: Status::Gone, .. }), "{a:?}");
}

/// A relay between a client and the server that drops the up train's
/// packets `lost` and the first answer to each fetch request (one that
/// carries records), and forwards everything else both ways.
fn lossy_relay(server_port: &str, lost: std::ops::Range<u64>, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> (String, Vec<std::thread::JoinHandle<()>>) {
    relay(server_port, lost, false, stop)
}

/// [`lossy_relay`]; with `first_poll_lost` it drops the client's first
/// request after the train's data too — its first poll, which behind a
/// policer meets the bucket the train has just emptied.
fn relay(server_port: &str, lost: std::ops::Range<u64>, first_poll_lost: bool, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> (String, Vec<std::thread::JoinHandle<()>>) {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex};
    let near = UdpSocket::bind("127.0.0.1:0").unwrap();
    let far = UdpSocket::bind("127.0.0.1:0").unwrap();
    far.connect(format!("127.0.0.1:{server_port}")).unwrap();
    for s in [&near, &far] {
        bloatlab_probe::sys::set_buffers(s.as_raw_fd(), 8 << 20);
        bloatlab_probe::sys::force_rcvbuf(s.as_raw_fd(), 8 << 20);
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    }
    let port = near.local_addr().unwrap().port().to_string();
    let client: Arc<Mutex<Option<std::net::SocketAddr>>> = Arc::default();
    let (near2, far2, client2, stop2) = (near.try_clone().unwrap(), far.try_clone().unwrap(), client.clone(), stop.clone());
    let up = std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        let (mut data_seen, mut poll_lost) = (false, !first_poll_lost);
        while !stop2.load(Ordering::Relaxed) {
            let Ok((n, from)) = near2.recv_from(&mut b) else { continue };
            *client2.lock().unwrap() = Some(from);
            let p = wire::parse(&b[..n], None).unwrap();
            if p.kind == Kind::TrainData && lost.contains(&p.seq) {
                continue;
            }
            data_seen |= p.kind == Kind::TrainData;
            if data_seen && !poll_lost && p.kind == Kind::UpRequest {
                poll_lost = true;
                continue;
            }
            far2.send(&b[..n]).unwrap();
        }
    });
    let down = std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        let mut answered = std::collections::HashSet::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok(n) = far.recv(&mut b) else { continue };
            if let Some(UpAnswer::Report { report, .. }) = train_up::parse_up_answer(&b[..n]) {
                if !report.records.is_empty() && answered.insert(report.first) {
                    continue; // this request's first answer: lost on the way
                }
            }
            let to = client.lock().unwrap().unwrap();
            near.send_to(&b[..n], to).unwrap();
        }
    });
    (port, vec![up, down])
}

#[test]
fn an_up_train_through_a_lossy_path_reads_its_losses_and_asks_again_for_lost_records() {
    let s = Server::start(&["server"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // packets 100-104 lost; 400 packets of 1000 B paced at 20 Mbit/s (411 us apart: the relay keeps up)
    let (port, relay) = lossy_relay(&s.port, 100..105, stop.clone());
    let o = run(&["udp", "train", "127.0.0.1", "-p", &port, "--up", "--count", "400", "--size", "1000", "--rate", "20Mbit", "--json"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in relay {
        h.join().unwrap();
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let t = &json_of(&o)["train"];
    // 395 records in 5 answers of 94 (1000-B requests), each fetched on its second request
    assert_eq!(t["local_drops"], 0, "{t}");
    assert_eq!((t["received"].as_u64(), t["lost"].as_u64(), t["first_loss"].as_u64()), (Some(395), Some(5), Some(100)), "{t}");
    assert_eq!(t["lost_seq"], serde_json::json!([100, 101, 102, 103, 104]));
    // short of its count, it ended on the server's quiet: at least UP_QUIET_MIN_NS
    let quiet = t["quiet_ms"].as_f64().expect("quiet_ms");
    assert!(quiet >= train_up::UP_QUIET_MIN_NS as f64 / 1e6, "{t}");
    assert_eq!((t["head_packets"].as_u64(), t["tail_packets"].as_u64()), (Some(100), Some(295)));
    assert_eq!(t["server_sent"], 400);
    let tx = t["tx_ms"].as_array().unwrap();
    assert!(tx[100..105].iter().all(|v| v.is_null()) && tx[105].is_number(), "the lost packets' send times are null");
}

#[test]
fn an_up_trains_first_poll_lost_is_asked_again_within_round_trips_not_the_timeout() {
    let s = Server::start(&["server"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // nothing of the train lost; the first poll after it is (a policer's bucket the train emptied)
    let (port, relay) = relay(&s.port, 0..0, true, stop.clone());
    let t0 = Instant::now();
    let o = run(&["udp", "train", "127.0.0.1", "-p", &port, "--up", "--count", "100", "--size", "1000", "--timeout", "5s", "--json"]);
    let took = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in relay {
        h.join().unwrap();
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let t = &json_of(&o)["train"];
    assert_eq!((t["received"].as_u64(), t["lost"].as_u64()), (Some(100), Some(0)), "{t}");
    // asked again after 4 round trips of the loopback's handshake (at least 50 ms), not the 5-s timeout: the
    // train ends after the slot's quiet (at least 250 ms); the bound leaves seconds for a loaded machine and is
    // still below the timeout the old client waited out
    assert!(took < Duration::from_secs(4), "the up train took {took:?}: the lost poll waited out --timeout");
}
