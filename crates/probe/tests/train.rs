//! Packet trains (`udp train`) against a server on 127.0.0.1: the train
//! arrives with its figures, and the server's bounds (it faces the network)
//! refuse what they must: no train without the cookie handshake, nothing
//! larger than the request before it, the count and size caps, one train in
//! flight per session, a budget per source address.

mod common;
use bloatlab_probe::train::{self, Answer, Status};
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
    assert_eq!(t["sent"], 200);
    assert_eq!(t["server_sent"], 200, "{t}");
    assert_eq!(t["wire_bytes"], 1028);
    let (received, drops) = (t["received"].as_u64().unwrap(), t["local_drops"].as_u64().unwrap_or(0));
    assert!(received + drops >= 200, "{t}");
    assert!(t["leading_mbps"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["send_ms"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(t["send_from"], "server");
    for k in ["first_loss", "lost", "lost_seq", "head_bytes", "tail_mbps", "bucket_bytes", "sender_limited", "notes", "timestamps"] {
        assert!(t.get(k).is_some(), "no {k} in {t}");
    }
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
