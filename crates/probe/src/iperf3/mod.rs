//! iperf3's control protocol, both ends: `tcp client --iperf3` (and the
//! iperf3-style `-c HOST`) runs a test against a stock `iperf3 -s`, and
//! `server`/`tcp server` serve a stock `iperf3 -c` on the same port as
//! bloatlab's own clients.
//!
//! Source: iperf 3.12 (esnet/iperf, tag 3.12): `src/iperf_api.h` (state
//! codes, error numbers), `src/iperf.h` (`COOKIE_SIZE`), `src/iperf_api.c`
//! (`send_parameters`/`get_parameters`, `send_results`/`get_results`,
//! `JSON_write`/`JSON_read`, `iperf_add_stream`), `src/iperf_client_api.c`
//! and `src/iperf_server_api.c` (the state machine), `src/iperf_tcp.c`
//! (`iperf_tcp_accept`: a data connection is its cookie).
//!
//! The exchange, TCP only (what the server sends on the left):
//!
//! ```text
//!  client                                   server
//!  connect control; cookie (37 B: 36 of [a-z2-7] + NUL)  ->
//!                                        <- PARAM_EXCHANGE (9)
//!  u32 BE length + JSON parameters       ->
//!                                        <- CREATE_STREAMS (10) | SERVER_ERROR (-2) + i32 i_errno + i32 errno
//!  -P data connections, each: cookie     ->
//!                                        <- TEST_START (1), TEST_RUNNING (2)
//!  data for -t s (or -n bytes; -R: the server sends)
//!  TEST_END (4)                          ->   (the server closes the data connections)
//!                                        <- EXCHANGE_RESULTS (13)
//!  u32 + JSON results (client's)         ->
//!                                        <- u32 + JSON results (server's)
//!                                        <- DISPLAY_RESULTS (14)
//!  IPERF_DONE (16)                       ->
//! ```
//!
//! State bytes are signed chars. Stream ids are iperf3's: 1, 3, 4, 5, ...
//! (`iperf_add_stream` starts the second stream at 3 and keeps it so for
//! compatibility); both ends number streams in connection order. Bytes are
//! counted while the test runs (TEST_RUNNING until TEST_END), as iperf3's
//! `iperf_tcp_recv` counts them.
//!
//! Bounds (the server faces the network): parameter JSON at most
//! [`MAX_PARAMS_JSON`] bytes, results JSON at most [`MAX_RESULTS_JSON`], at
//! most as many result streams as the test has, every number range-checked
//! before use; the test obeys [`ServerLimits`] (streams, length, concurrent
//! tests), and a refusal is SERVER_ERROR with the nearest iperf3 error
//! number (the iperf3 client prints its text) and bloatlab's own reason on
//! the server's standard error.
//!
//! Here: the wire (cookies, state bytes, length-framed JSON, error
//! numbers) and what both ends share (a stream's send and receive loops,
//! the CPU figures); [`client`]: a test against a stock `iperf3 -s` and its
//! report; [`server`]: serving a stock `iperf3 -c`.

mod client;
pub mod cookie;
mod server;

pub use client::*;
pub use cookie::*;
pub use server::*;

use crate::report::{fmt_bytes, fmt_rate, push_sample, series_from_json, series_json, FlowRaw, FlowSeries, Output};
use bloatlab_schema::result::FlowOut;
use crate::sys::{self, TcpInfo};
use crate::tcp::control::{ClientCfg, ClientError, ClientResult, Params, ServerLimits};
use crate::tcp::stream::{self, StreamState, BUF, WAKE};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// iperf3's default port (`PORT` in iperf_api.h).
pub const DEFAULT_PORT: u16 = 5201;
/// The longest parameter JSON the server reads: iperf3 3.12 sends ~300 B
/// (an RSA auth token adds ~700 B); 64 KiB is generous and bounded.
pub const MAX_PARAMS_JSON: u32 = 64 * 1024;
/// The longest results JSON the server reads: ~170 B per stream, at most
/// 128 streams by default.
pub const MAX_RESULTS_JSON: u32 = 1024 * 1024;
/// The longest results JSON the client reads: a bloatlab server adds the
/// sender's TCP_INFO series (~100 B a sample, at most 200 000 samples a
/// test by default); the client chose that server.
pub const MAX_SERVER_RESULTS_JSON: u32 = 64 * 1024 * 1024;
/// The parameter a bloatlab client adds to iperf3's (a stock iperf3 server
/// ignores unknown keys): send the sender's TCP_INFO series with a reverse
/// test's results ([`server::Asked::series`]).
pub const SERIES_PARAM: &str = "bloatlab";
/// iperf3's block size default for TCP (`DEFAULT_TCP_BLKSIZE`, 128 KiB),
/// reported in `-J`; the writes are [`BUF`], the same size.
pub const BLKSIZE: u64 = 128 * 1024;
/// How long either end waits for the next control message outside the test.
const CTRL_WAIT_NS: u64 = 15_000_000_000;

/// Control states (iperf_api.h).
pub mod state {
    pub const TEST_START: i8 = 1;
    pub const TEST_RUNNING: i8 = 2;
    pub const TEST_END: i8 = 4;
    pub const PARAM_EXCHANGE: i8 = 9;
    pub const CREATE_STREAMS: i8 = 10;
    pub const SERVER_TERMINATE: i8 = 11;
    pub const CLIENT_TERMINATE: i8 = 12;
    pub const EXCHANGE_RESULTS: i8 = 13;
    pub const DISPLAY_RESULTS: i8 = 14;
    pub const IPERF_DONE: i8 = 16;
    pub const ACCESS_DENIED: i8 = -1;
    pub const SERVER_ERROR: i8 = -2;
}

/// iperf3 error numbers (`i_errno`, iperf_api.h) the server sends.
pub mod ierr {
    pub const IEDURATION: i32 = 5;
    pub const IENUMSTREAMS: i32 = 6;
    pub const IEBLOCKSIZE: i32 = 7;
    pub const IEUNIMP: i32 = 13;
    pub const IERECVPARAMS: i32 = 114;
    pub const IESETCONGESTION: i32 = 134;
    pub const IEAUTHTEST: i32 = 142;
    pub const IESTREAMACCEPT: i32 = 204;
}

/// iperf3's id of the stream at `idx` (0-based): 1, 3, 4, 5, ...
pub fn stream_id(idx: usize) -> u64 {
    if idx == 0 {
        1
    } else {
        idx as u64 + 2
    }
}


fn write_state(mut c: &TcpStream, s: i8) -> io::Result<()> {
    c.write_all(&[s as u8])
}

fn read_exact(c: &TcpStream, buf: &mut [u8], give_up_ns: u64) -> io::Result<()> {
    stream::read_exact_timeout(c, buf, give_up_ns)
}

fn read_state(c: &TcpStream, give_up_ns: u64) -> io::Result<i8> {
    let mut b = [0u8; 1];
    read_exact(c, &mut b, give_up_ns)?;
    Ok(b[0] as i8)
}

/// `JSON_write`: a u32 big-endian length, then the JSON text (no NUL).
pub fn write_json(mut c: &TcpStream, v: &Value) -> io::Result<()> {
    let s = v.to_string();
    let mut out = Vec::with_capacity(4 + s.len());
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
    c.write_all(&out)
}

/// `JSON_read`, bounded: a length above `max` is refused before anything
/// is allocated.
pub fn read_json(c: &TcpStream, max: u32, give_up_ns: u64) -> Result<Value, String> {
    let mut n = [0u8; 4];
    read_exact(c, &mut n, give_up_ns).map_err(|e| format!("reading a JSON length: {e}"))?;
    let n = u32::from_be_bytes(n);
    if n > max {
        return Err(format!("a JSON message of {n} bytes, longer than the {max} this end reads"));
    }
    let mut buf = vec![0u8; n as usize];
    read_exact(c, &mut buf, give_up_ns).map_err(|e| format!("reading {n} bytes of JSON: {e}"))?;
    serde_json::from_slice(&buf).map_err(|e| format!("bad JSON: {e}"))
}

/// An iperf3 error number as text (the client's view of a SERVER_ERROR).
fn ierr_text(i: i32) -> String {
    match i {
        ierr::IEDURATION => "test duration too long".into(),
        ierr::IENUMSTREAMS => "number of parallel streams too large".into(),
        ierr::IEBLOCKSIZE => "block size too large".into(),
        ierr::IEUNIMP => "an option you are trying to set is not implemented yet".into(),
        ierr::IESETCONGESTION => "unable to set TCP_CONGESTION: supplied congestion control algorithm not supported on this host".into(),
        ierr::IEAUTHTEST => "test authorization failed".into(),
        _ => format!("iperf3 error {i}"),
    }
}


/// Read the next state; ACCESS_DENIED, SERVER_ERROR and a closed connection
/// become errors with iperf3's meaning.
fn expect_state(c: &TcpStream, want: i8, what: &str) -> Result<(), ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    let s = read_state(c, CTRL_WAIT_NS).map_err(|e| err1(format!("iperf3 server: waiting for {what}: {e}")))?;
    match s {
        x if x == want => Ok(()),
        // iperf3 -s: busy with another test; bloatlab-probe server: busy, or it has a --secret (bloatlab's own protocol only)
        state::ACCESS_DENIED => Err(err1("iperf3 server: access denied: the server is busy running a test (try again later), or, a bloatlab-probe server, it requires --secret (use tcp client --secret without --iperf3)".into())),
        state::SERVER_ERROR => {
            let mut b = [0u8; 8];
            let (i, errno) = match read_exact(c, &mut b, 2_000_000_000) {
                Ok(()) => (i32::from_be_bytes(b[..4].try_into().unwrap()), i32::from_be_bytes(b[4..].try_into().unwrap())),
                Err(_) => (0, 0),
            };
            let os = if errno != 0 { format!(": {}", io::Error::from_raw_os_error(errno)) } else { String::new() };
            // a refused parameter is the user's argument: exit 2, like our own server's refusals
            let status = if [ierr::IEDURATION, ierr::IENUMSTREAMS, ierr::IESETCONGESTION, ierr::IEUNIMP].contains(&i) { 2 } else { 1 };
            Err(ClientError { status, msg: format!("iperf3 server refused the test: {}{os}", ierr_text(i)) })
        }
        state::SERVER_TERMINATE => Err(err1("iperf3 server: the server has terminated".into())),
        x => Err(err1(format!("iperf3 server: expected {what} ({want}), got state {x}"))),
    }
}

/// CPU time of this process (user, system), seconds.
fn cpu_times() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// iperf3's `cpu_util`: percent of the wall time spent on CPU since `from`.
struct Cpu {
    wall0: u64,
    u0: f64,
    s0: f64,
}
impl Cpu {
    fn start() -> Cpu {
        let (u0, s0) = cpu_times();
        Cpu { wall0: sys::mono_ns(), u0, s0 }
    }
    fn percent(&self) -> (f64, f64, f64) {
        let (u, s) = cpu_times();
        let wall = ((sys::mono_ns() - self.wall0) as f64 / 1e9).max(1e-9);
        let (pu, ps) = ((u - self.u0) / wall * 100.0, (s - self.s0) / wall * 100.0);
        (pu + ps, pu, ps)
    }
}

/// Send as fast as the socket takes (at most `rate_bps`) until `stop`.
fn send_until(s: &StreamState, rate_bps: Option<u64>, stop: &AtomicBool) -> Option<String> {
    let buf = vec![0x5au8; BUF];
    let t0 = sys::mono_ns();
    let mut w = 0u64;
    while !stop.load(Ordering::Relaxed) && !sys::stopped() {
        let mut chunk = BUF;
        if let Some(r) = rate_bps {
            match stream::app_gate(r, None, t0, w, None) {
                Some(room) => chunk = chunk.min(room),
                None => continue,
            }
        }
        if let Err(e) = stream::write_some(s, &buf, chunk, &mut w) {
            s.done.store(true, Ordering::Relaxed);
            return Some(e.to_string());
        }
    }
    s.done.store(true, Ordering::Relaxed);
    None
}

/// Read until EOF or `stop` (the reads after TEST_END are drained, not counted).
fn recv_until(s: &StreamState, stop: &AtomicBool) -> Option<String> {
    let out = stream::run_receiver(s, &|| stop.load(Ordering::Relaxed), false, None, None, &|| false, &|| false);
    out.error.filter(|e| e != "interrupted")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_skip_two_as_iperf3_does() {
        assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), [1, 3, 4, 5]);
    }

    #[test]
    fn a_cookie_is_36_cookie_characters_and_a_nul() {
        let c = make_cookie();
        assert!(valid_cookie(&c));
        let mut bad = c;
        bad[3] = b'A';
        assert!(!valid_cookie(&bad));
        assert!(!looks_like_cookie(b"BLC1"));
        assert!(!looks_like_cookie(b"BLD1"));
    }

    fn ok_params() -> Value {
        json!({"tcp": true, "omit": 0, "time": 10, "num": 0, "blockcount": 0, "parallel": 4, "reverse": true, "len": 131072,
               "pacing_timer": 1000, "congestion": "bbr", "client_version": "3.12"})
    }

    #[test]
    fn iperf3_s_parameters_are_admitted() {
        let a = admit(&ok_params(), &ServerLimits::default()).unwrap();
        assert_eq!(a, Asked { streams: 4, reverse: true, time_s: 10, bytes: 0, bandwidth: 0, cc: Some("bbr".into()), get_server_output: false, series: false });
    }

    #[test]
    fn only_a_client_that_asks_for_the_series_is_sent_them() {
        // a stock iperf3 client's parameters: iperf3's results alone (its reverse test's JSON stays iperf3's size)
        assert!(!admit(&ok_params(), &ServerLimits::default()).unwrap().series);
        let mut p = ok_params();
        p[SERIES_PARAM] = json!(1);
        assert!(admit(&p, &ServerLimits::default()).unwrap().series);
    }

    #[test]
    fn hostile_parameters_are_refused_with_iperf3_error_numbers() {
        let l = ServerLimits::default();
        let with = |k: &str, v: Value| {
            let mut p = ok_params();
            p[k] = v;
            admit(&p, &l).map(|_| ()).map_err(|e| e.0)
        };
        assert_eq!(with("parallel", json!(129)), Err(ierr::IENUMSTREAMS));
        assert_eq!(with("parallel", json!(-1)), Err(ierr::IERECVPARAMS));
        assert_eq!(with("parallel", json!("4")), Err(ierr::IERECVPARAMS));
        assert_eq!(with("time", json!(1e308)), Err(ierr::IERECVPARAMS));
        assert_eq!(with("time", json!(601)), Err(ierr::IEDURATION));
        assert_eq!(with("time", json!(0)), Err(ierr::IEDURATION));
        assert_eq!(with("congestion", json!("../../etc")), Err(ierr::IESETCONGESTION));
        assert_eq!(with("congestion", json!({"a": 1})), Err(ierr::IESETCONGESTION));
        assert_eq!(with("udp", json!(true)), Err(ierr::IEUNIMP));
        assert_eq!(with("bidirectional", json!(true)), Err(ierr::IEUNIMP));
        assert_eq!(with("len", json!(1u64 << 40)), Err(ierr::IERECVPARAMS));
        assert!(admit(&json!([1, 2]), &l).is_err());
        assert!(admit(&json!(null), &l).is_err());
    }

    #[test]
    fn random_parameter_objects_never_panic_and_stay_within_the_limits() {
        let l = ServerLimits::default();
        let vals = [json!(null), json!(-1), json!(0), json!(1), json!(129), json!(1e308), json!(u64::MAX), json!("x"), json!([]), json!({}), json!(true), json!(0.5)];
        let keys = ["tcp", "udp", "time", "num", "parallel", "reverse", "len", "bandwidth", "congestion", "omit", "blockcount"];
        let mut seed = 0x1234_5678u64;
        for _ in 0..20_000 {
            let mut o = serde_json::Map::new();
            for k in keys {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                if seed % 3 != 0 {
                    o.insert(k.into(), vals[(seed >> 8) as usize % vals.len()].clone());
                }
            }
            if let Ok(a) = admit(&Value::Object(o), &l) {
                assert!(a.streams >= 1 && a.streams <= l.max_streams);
                assert!(a.time_s * 1_000_000_000 <= l.max_duration_ns);
            }
        }
    }

    #[test]
    fn a_json_length_beyond_the_bound_is_refused_before_reading() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(&u32::MAX.to_be_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(200));
        });
        let (s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(WAKE)).unwrap();
        let e = read_json(&s, MAX_PARAMS_JSON, 2_000_000_000).unwrap_err();
        assert!(e.contains("longer than"), "{e}");
        t.join().unwrap();
    }
}
