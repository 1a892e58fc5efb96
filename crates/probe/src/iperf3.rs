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

use crate::report::{fmt_bytes, fmt_rate, push_sample, series_from_json, series_json, FlowRaw, FlowSeries, Output};
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
/// `COOKIE_SIZE` (iperf.h): 36 characters and a NUL.
pub const COOKIE_SIZE: usize = 37;
/// The characters of a cookie (`make_cookie` in iperf_util.c).
pub const COOKIE_CHARS: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
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

pub fn make_cookie() -> [u8; COOKIE_SIZE] {
    let mut c = [0u8; COOKIE_SIZE];
    for ch in c.iter_mut().take(COOKIE_SIZE - 1) {
        *ch = COOKIE_CHARS[(sys::random_u64() % 32) as usize];
    }
    c
}

/// The first bytes of a connection could be an iperf3 cookie.
pub fn looks_like_cookie(b: &[u8]) -> bool {
    b.iter().all(|c| COOKIE_CHARS.contains(c))
}

/// A whole cookie: 36 cookie characters and a NUL.
pub fn valid_cookie(c: &[u8; COOKIE_SIZE]) -> bool {
    looks_like_cookie(&c[..COOKIE_SIZE - 1]) && c[COOKIE_SIZE - 1] == 0
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

/// One interval of one stream (for text lines and `-J` intervals).
#[derive(Debug, Clone)]
pub struct IntervalRow {
    pub idx: usize,
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub retransmits: Option<u64>,
    pub snd_cwnd: Option<u64>,
    pub rtt_us: Option<u64>,
}

/// What an iperf3 test gave the client.
pub struct ClientRun {
    pub result: ClientResult,
    pub intervals: Vec<Vec<IntervalRow>>,
    /// the server's results message, as received
    pub server_results: Value,
    pub cpu: (f64, f64, f64),
    /// per stream: local and remote address of the data connection
    pub connected: Vec<(SocketAddr, SocketAddr)>,
    pub timestamp_s: u64,
    /// the client's test time: TEST_RUNNING to TEST_END
    pub seconds: f64,
    /// the receiver's test time (iperf3's `receiver_time`): the server's own
    /// when it received (its TEST_END comes through the same queue as the
    /// data), ours with -R
    pub recv_seconds: f64,
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
    let out = stream::run_receiver(s, &|| stop.load(Ordering::Relaxed), false, None, None);
    out.error.filter(|e| e != "interrupted")
}

/// The control connection of an iperf3 test whose parameters the server
/// has read: what follows is its CREATE_STREAMS. Opened by [`run_client`],
/// or by bloatlab's own client when its opening found an iperf3 server
/// (`crate::tcp::client`): that opening was a cookie and these parameters,
/// so the server's one test (`iperf3 -s -1`) is this one.
pub struct Opened {
    pub ctrl: TcpStream,
    pub cookie: [u8; COOKIE_SIZE],
}

/// iperf3's parameters (`send_parameters`) for the test `cfg` asks for.
pub fn params(cfg: &ClientCfg) -> Value {
    // iperf3 sends whole seconds; round up so the server's own timer never ends the test first
    let time_s = cfg.duration_ns.map(|d| d.div_ceil(1_000_000_000)).unwrap_or(0);
    let mut p = json!({"tcp": true, "omit": 0, "time": time_s, "num": cfg.bytes.unwrap_or(0), "blockcount": 0,
                       "parallel": cfg.streams, "len": BLKSIZE, "pacing_timer": 1000,
                       "client_version": format!("3.12 (bloatlab-probe {})", env!("CARGO_PKG_VERSION"))});
    if cfg.reverse {
        p["reverse"] = json!(true);
    }
    if let (Some(r), true) = (cfg.rate_bps, cfg.reverse) {
        p["bandwidth"] = json!(r);
    }
    if let Some(cc) = &cfg.cc {
        p["congestion"] = json!(cc);
    }
    p
}

/// What this client refuses before it connects: a control the kernel lacks,
/// `--on/--off`.
fn check(cfg: &ClientCfg) -> Result<(), ClientError> {
    if !cfg.reverse {
        if let Some(cc) = &cfg.cc {
            let avail = sys::available_cc();
            if !avail.is_empty() && !avail.iter().any(|a| a == cc) {
                return Err(ClientError { status: 2, msg: format!("-C {cc}: congestion control \"{cc}\" is not available on this kernel; available: {}", avail.join(" ")) });
            }
        }
    }
    if cfg.onoff_ticks.is_some() {
        return Err(ClientError { status: 2, msg: "--on/--off: not part of iperf3's protocol; use bloatlab-probe server".into() });
    }
    Ok(())
}

/// Run a test against a stock `iperf3 -s`. `cfg.report_ns > 0` prints
/// iperf3-style interval lines; the intervals are always collected (`-J`).
pub fn run_client(cfg: &ClientCfg, interval_ns: u64, print: bool) -> Result<ClientRun, ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    check(cfg)?;
    let ctrl = stream::connect(cfg.addr, None, None).map_err(err1)?;
    let _ = ctrl.set_nodelay(true);
    let _ = ctrl.set_read_timeout(Some(WAKE));
    let cookie = make_cookie();
    (&ctrl).write_all(&cookie).map_err(|e| err1(format!("control: {e}")))?;
    expect_state(&ctrl, state::PARAM_EXCHANGE, "PARAM_EXCHANGE")?;
    write_json(&ctrl, &params(cfg)).map_err(|e| err1(format!("control: {e}")))?;
    run_opened(Opened { ctrl, cookie }, cfg, interval_ns, print)
}

/// Run the test of a control connection whose parameters the server has
/// read (see [`Opened`]); as [`run_client`].
pub fn run_opened(opened: Opened, cfg: &ClientCfg, interval_ns: u64, print: bool) -> Result<ClientRun, ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    check(cfg)?;
    let Opened { ctrl, cookie } = opened;
    let _ = ctrl.set_nodelay(true);
    let _ = ctrl.set_read_timeout(Some(WAKE));
    expect_state(&ctrl, state::CREATE_STREAMS, "CREATE_STREAMS")?;
    let mut socks = Vec::new();
    for i in 0..cfg.streams {
        let cc = if cfg.reverse { None } else { cfg.cc.as_deref() };
        let s = stream::connect(cfg.addr, cfg.cport.map(|p| p + i as u16), cc)
            .map_err(|e| ClientError { status: if e.starts_with("-C") || e.starts_with("--cport") { 2 } else { 1 }, msg: e })?;
        (&s).write_all(&cookie).map_err(|e| err1(format!("data connection: {e}")))?;
        socks.push(s);
    }
    let connected: Vec<(SocketAddr, SocketAddr)> =
        socks.iter().map(|s| (s.local_addr().unwrap_or(cfg.addr), s.peer_addr().unwrap_or(cfg.addr))).collect();
    if print {
        for (i, (l, r)) in connected.iter().enumerate() {
            println!("[{:>3}] local {} port {} connected to {} port {}", stream_id(i), l.ip(), l.port(), r.ip(), r.port());
        }
    }
    expect_state(&ctrl, state::TEST_START, "TEST_START")?;
    expect_state(&ctrl, state::TEST_RUNNING, "TEST_RUNNING")?;
    let cpu = Cpu::start();
    let t_run = sys::mono_ns();
    let timestamp_s = (sys::real_ns() / 1_000_000_000) as u64;
    // the SYN and the cookie come before the data in tcpi_bytes_acked
    let states: Vec<Arc<StreamState>> =
        socks.into_iter().enumerate().map(|(i, s)| StreamState::new(i, s, t_run, 1 + COOKIE_SIZE as u64)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = if !cfg.reverse {
        let (v, iv) = (states.clone(), cfg.info_interval_ns);
        Some(std::thread::spawn(move || stream::run_sampler(v, iv)))
    } else {
        None
    };
    let workers: Vec<_> = states
        .iter()
        .map(|s| {
            let (s, stop, reverse, rate) = (s.clone(), stop.clone(), cfg.reverse, cfg.rate_bps);
            std::thread::spawn(move || if reverse { recv_until(&s, &stop) } else { send_until(&s, rate, &stop) })
        })
        .collect();
    // the test: intervals until -t passes, -n bytes moved, Ctrl-C, or a stream fails
    let deadline = cfg.duration_ns.map(|d| t_run.saturating_add(d));
    let moved = |s: &StreamState| if cfg.reverse { s.read.load(Ordering::Relaxed) } else { s.written.load(Ordering::Relaxed) };
    let mut intervals: Vec<Vec<IntervalRow>> = Vec::new();
    let mut last_bytes = vec![0u64; states.len()];
    let mut last_retr = vec![0u64; states.len()];
    let mut t_prev = t_run;
    let iv = if interval_ns > 0 { interval_ns } else { u64::MAX };
    let mut next_iv = t_run.saturating_add(iv);
    if print && interval_ns > 0 {
        println!("[ ID] Interval           Transfer     Bitrate         {}", if cfg.reverse { "" } else { "Retr  Cwnd" });
    }
    let mut interval = |t_now: u64, last: bool, intervals: &mut Vec<Vec<IntervalRow>>| {
        if t_now <= t_prev + 1_000_000 && last {
            return; // nothing left of the last interval
        }
        let (a, b) = ((t_prev - t_run) as f64 / 1e9, (t_now - t_run) as f64 / 1e9);
        let mut rows = Vec::new();
        for (i, s) in states.iter().enumerate() {
            let m = moved(s);
            let d = m - last_bytes[i].min(m);
            last_bytes[i] = m;
            let ti = if cfg.reverse { None } else { s.latest() };
            let retr = ti.map(|ti| {
                let r = ti.total_retrans as u64;
                let x = r - last_retr[i].min(r);
                last_retr[i] = r;
                x
            });
            rows.push(IntervalRow { idx: i, start: a, end: b, bytes: d, retransmits: retr, snd_cwnd: ti.map(|t| t.cwnd_bytes()), rtt_us: ti.map(|t| t.rtt as u64) });
        }
        if print && interval_ns > 0 {
            print_rows(&rows, cfg.reverse);
        }
        intervals.push(rows);
        t_prev = t_now;
    };
    let failed = |states: &[Arc<StreamState>]| states.iter().any(|s| s.done.load(Ordering::Relaxed));
    loop {
        let now = sys::mono_ns();
        // an interval that ended before the test did is reported even when we woke late
        if now >= next_iv && next_iv < deadline.unwrap_or(u64::MAX) {
            interval(next_iv.min(now), false, &mut intervals);
            next_iv = next_iv.saturating_add(iv);
            continue;
        }
        let total: u64 = states.iter().map(|s| moved(s)).sum();
        let over = deadline.is_some_and(|d| now >= d) || cfg.bytes.is_some_and(|n| total >= n) || sys::stopped() || failed(&states);
        if over {
            break;
        }
        let wake = next_iv.min(deadline.unwrap_or(u64::MAX)).min(now + 10_000_000);
        sys::sleep_until_mono(wake);
    }
    let t_end = sys::mono_ns();
    stop.store(!cfg.reverse, Ordering::SeqCst); // senders stop; receivers drain until the server closes
    let received: Vec<u64> = states.iter().map(|s| s.read.load(Ordering::Relaxed)).collect();
    let mut errors: Vec<Option<String>> = vec![None; states.len()];
    let mut workers = workers.into_iter().map(Some).collect::<Vec<_>>();
    if !cfg.reverse {
        for (i, w) in workers.iter_mut().enumerate() {
            errors[i] = w.take().and_then(|w| w.join().ok().flatten());
        }
    }
    let finals: Vec<Option<TcpInfo>> = states.iter().map(|s| if cfg.reverse { None } else { s.sample() }).collect();
    let written: Vec<u64> = states.iter().map(|s| s.written.load(Ordering::Relaxed)).collect();
    interval(t_end, true, &mut intervals);
    let cpu_pct = cpu.percent();
    if let Some(h) = sampler {
        for s in &states {
            s.done.store(true, Ordering::Relaxed);
        }
        let _ = h.join();
    }
    let seconds = (t_end - t_run) as f64 / 1e9;
    // TEST_END, then the results exchange
    let mut problem: Option<String> = errors.iter().flatten().next().map(|e| format!("a data connection failed: {e}"));
    if sys::stopped() {
        problem.get_or_insert("interrupted".into());
    }
    let mut server_results = Value::Null;
    let exchange = (|| -> Result<Value, String> {
        write_state(&ctrl, state::TEST_END).map_err(|e| format!("sending TEST_END: {e}"))?;
        expect_state(&ctrl, state::EXCHANGE_RESULTS, "EXCHANGE_RESULTS").map_err(|e| e.msg)?;
        let streams: Vec<Value> = states
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let (bytes, retr) = if cfg.reverse { (received[i], -1i64) } else { (written[i], finals[i].map(|t| t.total_retrans as i64).unwrap_or(0)) };
                json!({"id": stream_id(i), "bytes": bytes, "retransmits": retr, "jitter": 0, "errors": 0, "packets": 0,
                       "start_time": 0, "end_time": seconds})
            })
            .collect();
        let mine = json!({"cpu_util_total": cpu_pct.0, "cpu_util_user": cpu_pct.1, "cpu_util_system": cpu_pct.2,
                          "sender_has_retransmits": if cfg.reverse { -1 } else { 1 },
                          "congestion_used": states.first().and_then(|s| sys::get_cc(s.sock.as_raw_fd())),
                          "streams": streams});
        write_json(&ctrl, &mine).map_err(|e| format!("sending results: {e}"))?;
        let theirs = read_json(&ctrl, MAX_SERVER_RESULTS_JSON, CTRL_WAIT_NS)?;
        expect_state(&ctrl, state::DISPLAY_RESULTS, "DISPLAY_RESULTS").map_err(|e| e.msg)?;
        let _ = write_state(&ctrl, state::IPERF_DONE);
        Ok(theirs)
    })();
    match exchange {
        Ok(v) => server_results = v,
        Err(e) => {
            problem.get_or_insert(format!("iperf3 results exchange: {e}; the results are what this client measured"));
        }
    }
    stop.store(true, Ordering::SeqCst);
    for s in &states {
        let _ = s.sock.shutdown(Shutdown::Both);
    }
    for (i, w) in workers.iter_mut().enumerate() {
        if let Some(w) = w.take() {
            errors[i] = w.join().ok().flatten();
        }
    }
    let srv_streams: Vec<Value> = server_results["streams"].as_array().cloned().unwrap_or_default();
    if srv_streams.len() > states.len() {
        problem.get_or_insert(format!("the server reported {} streams for a test of {}", srv_streams.len(), states.len()));
    }
    let srv_cc = server_results["congestion_used"].as_str().map(String::from);
    // iperf3's receiver_time: end_time - start_time of the receiver's streams (checked: finite, positive, not absurd)
    let recv_seconds = if cfg.reverse {
        seconds
    } else {
        srv_streams
            .iter()
            .take(states.len())
            .filter_map(|v| Some(v["end_time"].as_f64()? - v["start_time"].as_f64()?))
            .filter(|t| t.is_finite() && *t > 0.0 && *t < seconds * 2.0 + 30.0)
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))
            .unwrap_or(seconds)
    };
    let mut flows = Vec::new();
    let mut series = FlowSeries::default();
    for (i, s) in states.iter().enumerate() {
        let srv = srv_streams.iter().take(states.len()).find(|v| v["id"].as_u64() == Some(stream_id(i)));
        let srv_bytes = srv.and_then(|v| v["bytes"].as_u64());
        let mut f = FlowRaw {
            id: cfg.first_id + i,
            name: format!("{}{i}", if cfg.reverse { "down" } else { "up" }),
            direction: if cfg.reverse { "down" } else { "up" }.into(),
            start_s: (t_run - cfg.t0_mono) as f64 / 1e9,
            end_s: (t_end - cfg.t0_mono) as f64 / 1e9,
            ..Default::default()
        };
        if cfg.reverse {
            // the server sent: its TCP_INFO is not in iperf3's results; retransmits are
            f.bytes_delivered = received[i];
            f.bytes_acked = received[i];
            f.retrans_segs = srv.and_then(|v| v["retransmits"].as_i64()).filter(|&r| r >= 0).unwrap_or(0) as u64;
            f.cc = srv_cc.clone().unwrap_or_default();
            // a bloatlab server adds its TCP_INFO (time from its TEST_RUNNING, ~ ours)
            let ext = server_results["bloatlab"]["streams"].as_array().and_then(|v| v.iter().take(states.len()).find(|x| x["id"].as_u64() == Some(stream_id(i))));
            if let Some(x) = ext {
                f.bytes_acked = x["bytes_acked"].as_u64().unwrap_or(f.bytes_acked);
                f.segs_sent = x["segs_out"].as_u64().unwrap_or(0);
                f.retrans_segs = x["total_retrans"].as_u64().unwrap_or(f.retrans_segs);
                f.min_rtt_ms = x["min_rtt_us"].as_f64().unwrap_or(f64::NAN) / 1e3;
                let mut ss = series_from_json(&x["series"]);
                ss.t.iter_mut().for_each(|t| *t += f.start_s);
                ss.flow.iter_mut().for_each(|id| *id = f.id as u32);
                f.rtt_ms.extend(ss.srtt_ms.iter().copied());
                series.append(&ss);
            }
        } else {
            let fin = finals[i].unwrap_or_default();
            f.cc = sys::get_cc(s.sock.as_raw_fd()).unwrap_or_default();
            f.bytes_acked = stream::data_acked(&fin, written[i], s.pre);
            f.segs_sent = fin.segs_out as u64;
            f.retrans_segs = fin.total_retrans as u64;
            f.min_rtt_ms = fin.min_rtt as f64 / 1e3;
            f.bytes_delivered = srv_bytes.unwrap_or(f.bytes_acked);
            f.end_s = f.start_s + recv_seconds; // goodput over the receiver's time, as iperf3 reports it
            for (t, ti) in s.samples.lock().unwrap().iter() {
                push_sample(&mut series, f.id, (*t - cfg.t0_mono) as f64 / 1e9, ti, s.pre, written[i]);
                f.rtt_ms.push(ti.rtt as f64 / 1e3);
            }
        }
        flows.push(f);
    }
    let cc = flows.iter().map(|f| f.cc.clone()).find(|c| !c.is_empty());
    let local_ports = connected.iter().map(|c| c.0.port()).collect();
    Ok(ClientRun {
        result: ClientResult { flows, series, cc, problem, server_kernel: None, duration_s: seconds, local_ports },
        intervals,
        server_results,
        cpu: cpu_pct,
        connected,
        timestamp_s,
        seconds,
        recv_seconds,
    })
}

fn print_rows(rows: &[IntervalRow], reverse: bool) {
    let mut sum = 0;
    let mut sum_retr = 0;
    for r in rows {
        let dt = (r.end - r.start).max(1e-9);
        sum += r.bytes;
        if reverse {
            println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}", stream_id(r.idx), r.start, r.end, fmt_bytes(r.bytes as f64), fmt_rate(r.bytes as f64 * 8.0 / dt));
        } else {
            sum_retr += r.retransmits.unwrap_or(0);
            println!(
                "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}  {:>12}",
                stream_id(r.idx), r.start, r.end, fmt_bytes(r.bytes as f64), fmt_rate(r.bytes as f64 * 8.0 / dt),
                r.retransmits.unwrap_or(0), fmt_bytes(r.snd_cwnd.unwrap_or(0) as f64)
            );
        }
    }
    if rows.len() > 1 {
        let r = &rows[0];
        let dt = (r.end - r.start).max(1e-9);
        println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {}", r.start, r.end, fmt_bytes(sum as f64), fmt_rate(sum as f64 * 8.0 / dt),
                 if reverse { String::new() } else { format!("{sum_retr:>4}") });
    }
}

/// iperf3's closing block: sender and receiver lines per stream, sums.
pub fn print_summary(run: &ClientRun, reverse: bool) {
    let r = &run.result;
    let secs = run.seconds.max(1e-9);
    let rsecs = run.recv_seconds.max(1e-9);
    println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    println!("[ ID] Interval           Transfer     Bitrate         Retr");
    let srv: Vec<Value> = run.server_results["streams"].as_array().cloned().unwrap_or_default();
    let (mut sent_sum, mut recv_sum, mut retr_sum) = (0u64, 0u64, 0u64);
    for (i, f) in r.flows.iter().enumerate() {
        let sv = srv.iter().find(|v| v["id"].as_u64() == Some(stream_id(i)));
        let sent = if reverse { sv.and_then(|v| v["bytes"].as_u64()).unwrap_or(0) } else { run.intervals.iter().flatten().filter(|x| x.idx == i).map(|x| x.bytes).sum() };
        let recv = f.bytes_delivered;
        sent_sum += sent;
        recv_sum += recv;
        retr_sum += f.retrans_segs;
        println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}             sender", stream_id(i), 0.0, secs, fmt_bytes(sent as f64), fmt_rate(sent as f64 * 8.0 / secs), f.retrans_segs);
        println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}                  receiver", stream_id(i), 0.0, rsecs, fmt_bytes(recv as f64), fmt_rate(recv as f64 * 8.0 / rsecs));
    }
    if r.flows.len() > 1 {
        println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}             sender", 0.0, secs, fmt_bytes(sent_sum as f64), fmt_rate(sent_sum as f64 * 8.0 / secs), retr_sum);
        println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}                  receiver", 0.0, rsecs, fmt_bytes(recv_sum as f64), fmt_rate(recv_sum as f64 * 8.0 / rsecs));
    }
    if !reverse {
        for f in &r.flows {
            let mut v = f.rtt_ms.clone();
            let d = bloatlab_core::stats::Dist::of(&mut v);
            println!("[{:>3}] TCP_INFO (client, sender): cc {}  srtt p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  min_rtt {:.3} ms  retrans_rate {:.5}",
                     stream_id(f.id), if f.cc.is_empty() { "?" } else { &f.cc }, d.p50, d.p95, d.p99, f.min_rtt_ms, f.retrans_rate());
        }
    } else if run.server_results["bloatlab"].is_object() {
        for f in &r.flows {
            let mut v = f.rtt_ms.clone();
            let d = bloatlab_core::stats::Dist::of(&mut v);
            println!("[{:>3}] TCP_INFO (server, sender): cc {}  srtt p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  min_rtt {:.3} ms  retrans_rate {:.5}",
                     stream_id(f.id), if f.cc.is_empty() { "?" } else { &f.cc }, d.p50, d.p95, d.p99, f.min_rtt_ms, f.retrans_rate());
        }
    } else {
        println!("TCP_INFO: the sender is the iperf3 server, which does not report it (congestion control used: {})",
                 run.server_results["congestion_used"].as_str().unwrap_or("?"));
    }
}

/// `-J`: iperf3's JSON layout (`start`, `intervals`, `end`) with bloatlab's
/// common result under `bloatlab` (the TCP_INFO series among it).
pub fn json_output(cfg: &ClientCfg, run: &ClientRun, host: &str, port: u16, o: &Output) -> Value {
    let r = &run.result;
    let secs = run.seconds;
    let rsecs = run.recv_seconds;
    let socket = |i: usize| stream_id(i) + 4; // a stable stand-in for iperf3's fd numbers
    let connected: Vec<Value> = run.connected.iter().enumerate().map(|(i, (l, rr))| {
        json!({"socket": socket(i), "local_host": l.ip().to_string(), "local_port": l.port(), "remote_host": rr.ip().to_string(), "remote_port": rr.port()})
    }).collect();
    let intervals: Vec<Value> = run.intervals.iter().map(|rows| {
        let streams: Vec<Value> = rows.iter().map(|x| {
            let dt = (x.end - x.start).max(1e-9);
            let mut v = json!({"socket": socket(x.idx), "start": x.start, "end": x.end, "seconds": x.end - x.start, "bytes": x.bytes,
                               "bits_per_second": x.bytes as f64 * 8.0 / dt, "omitted": false, "sender": !cfg.reverse});
            if let Some(rt) = x.retransmits { v["retransmits"] = json!(rt); }
            if let Some(c) = x.snd_cwnd { v["snd_cwnd"] = json!(c); }
            if let Some(t) = x.rtt_us { v["rtt"] = json!(t); }
            v
        }).collect();
        let bytes: u64 = rows.iter().map(|x| x.bytes).sum();
        let (a, b) = rows.first().map(|x| (x.start, x.end)).unwrap_or((0.0, 0.0));
        let mut sum = json!({"start": a, "end": b, "seconds": b - a, "bytes": bytes, "bits_per_second": bytes as f64 * 8.0 / (b - a).max(1e-9), "omitted": false, "sender": !cfg.reverse});
        if !cfg.reverse { sum["retransmits"] = json!(rows.iter().map(|x| x.retransmits.unwrap_or(0)).sum::<u64>()); }
        json!({"streams": streams, "sum": sum})
    }).collect();
    let srv: Vec<Value> = run.server_results["streams"].as_array().cloned().unwrap_or_default();
    let mut end_streams = Vec::new();
    let (mut sent_sum, mut recv_sum, mut retr_sum) = (0u64, 0u64, 0u64);
    for (i, f) in r.flows.iter().enumerate() {
        let sv = srv.iter().find(|v| v["id"].as_u64() == Some(stream_id(i)));
        let sent = if cfg.reverse { sv.and_then(|v| v["bytes"].as_u64()).unwrap_or(0) } else { run.intervals.iter().flatten().filter(|x| x.idx == i).map(|x| x.bytes).sum() };
        let recv = f.bytes_delivered;
        sent_sum += sent;
        recv_sum += recv;
        retr_sum += f.retrans_segs;
        let mut snd = json!({"socket": socket(i), "start": 0, "end": secs, "seconds": secs, "bytes": sent, "bits_per_second": sent as f64 * 8.0 / secs.max(1e-9),
                             "retransmits": f.retrans_segs, "sender": true});
        if !cfg.reverse {
            let rtts: Vec<f64> = f.rtt_ms.iter().map(|x| x * 1e3).collect();
            let cw = r.series.flow.iter().zip(&r.series.cwnd_bytes).filter(|(id, _)| **id as usize == f.id).map(|(_, c)| *c).max().unwrap_or(0);
            snd["max_snd_cwnd"] = json!(cw);
            snd["max_rtt"] = json!(rtts.iter().cloned().fold(0.0, f64::max) as u64);
            snd["min_rtt"] = json!(rtts.iter().cloned().fold(f64::INFINITY, f64::min).min(1e12) as u64);
            snd["mean_rtt"] = json!((rtts.iter().sum::<f64>() / rtts.len().max(1) as f64) as u64);
        }
        let rcv = json!({"socket": socket(i), "start": 0, "end": rsecs, "seconds": rsecs, "bytes": recv, "bits_per_second": recv as f64 * 8.0 / rsecs.max(1e-9), "sender": false});
        end_streams.push(json!({"sender": snd, "receiver": rcv}));
    }
    let remote = |k: &str| run.server_results[k].as_f64().unwrap_or(0.0);
    let (local_cc, remote_cc) = (r.cc.clone().filter(|_| !cfg.reverse), run.server_results["congestion_used"].as_str().map(String::from));
    json!({
        "start": {
            "connected": connected,
            "version": format!("bloatlab-probe {} (iperf3 3.12 protocol)", env!("CARGO_PKG_VERSION")),
            "system_info": sys::kernel_release(),
            "timestamp": {"timesecs": run.timestamp_s},
            "connecting_to": {"host": host, "port": port},
            "tcp_mss_default": Value::Null,
            "sock_bufsize": 0,
            "test_start": {"protocol": "TCP", "num_streams": cfg.streams, "blksize": BLKSIZE, "omit": 0,
                           "duration": cfg.duration_ns.map(|d| d.div_ceil(1_000_000_000)).unwrap_or(0), "bytes": cfg.bytes.unwrap_or(0),
                           "blocks": 0, "reverse": cfg.reverse as u8, "tos": 0}
        },
        "intervals": intervals,
        "end": {
            "streams": end_streams,
            "sum_sent": {"start": 0, "end": secs, "seconds": secs, "bytes": sent_sum, "bits_per_second": sent_sum as f64 * 8.0 / secs.max(1e-9), "retransmits": retr_sum, "sender": true},
            "sum_received": {"start": 0, "end": rsecs, "seconds": rsecs, "bytes": recv_sum, "bits_per_second": recv_sum as f64 * 8.0 / rsecs.max(1e-9), "sender": false},
            "cpu_utilization_percent": {"host_total": run.cpu.0, "host_user": run.cpu.1, "host_system": run.cpu.2,
                                        "remote_total": remote("cpu_util_total"), "remote_user": remote("cpu_util_user"), "remote_system": remote("cpu_util_system")},
            "sender_tcp_congestion": if cfg.reverse { remote_cc.clone() } else { local_cc.clone() },
            "receiver_tcp_congestion": if cfg.reverse { local_cc } else { remote_cc }
        },
        "error": r.problem,
        "bloatlab": o.to_json()
    })
}

// ---------------------------------------------------------------- server

/// Tests waiting for their data connections, by cookie.
pub type Registry = Arc<Mutex<HashMap<[u8; COOKIE_SIZE], mpsc::Sender<(TcpStream, u64)>>>>;

/// What an iperf3 client asked for, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub streams: usize,
    pub reverse: bool,
    /// `-t` (0 with `-n`)
    pub time_s: u64,
    /// `-n` (0: none)
    pub bytes: u64,
    /// `-b` (bit/s; 0: none), what a reverse test's sender offers
    pub bandwidth: u64,
    pub cc: Option<String>,
    pub get_server_output: bool,
}

/// The parameters an iperf3 client sent, checked against `limits`; a
/// refusal is (iperf3 error number, bloatlab's reason naming the flag).
/// Pure, never panics (tested with hostile values).
pub fn admit(v: &Value, limits: &ServerLimits) -> Result<Asked, (i32, String)> {
    let o = v.as_object().ok_or((ierr::IERECVPARAMS, "parameters: not a JSON object".to_string()))?;
    if o.contains_key("udp") || o.contains_key("sctp") || !o.contains_key("tcp") {
        return Err((ierr::IEUNIMP, "-u/--sctp: this server takes iperf3's TCP tests only".into()));
    }
    if o.contains_key("bidirectional") {
        return Err((ierr::IEUNIMP, "--bidir: not served (run one test each way)".into()));
    }
    // cJSON's valueint: a number; anything else (string, negative, fractional, huge) is refused
    let uint = |k: &str, max: u64| -> Result<u64, (i32, String)> {
        match o.get(k) {
            None => Ok(0),
            Some(x) => x.as_u64().filter(|&n| n <= max).ok_or((ierr::IERECVPARAMS, format!("{k}: expected an integer in 0..={max}, got {x}"))),
        }
    };
    let omit = uint("omit", 86_400)?;
    if omit > 0 {
        return Err((ierr::IEUNIMP, "-O/--omit: not served; leave it out".into()));
    }
    if uint("blockcount", u64::MAX)? > 0 {
        return Err((ierr::IEUNIMP, "-k/--blockcount: not served; use -n".into()));
    }
    let streams = uint("parallel", 1 << 20)?.max(1) as usize;
    if streams > limits.max_streams {
        return Err((ierr::IENUMSTREAMS, format!("-P: {streams} streams, more than this server allows ({})", limits.max_streams)));
    }
    let time_s = uint("time", 86_400)?;
    let bytes = uint("num", u64::MAX)?;
    if time_s == 0 && bytes == 0 {
        return Err((ierr::IEDURATION, "-t: a test needs a length (-t) or a byte count (-n)".into()));
    }
    let lim = limits.max_duration_ns;
    if lim > 0 && time_s.saturating_mul(1_000_000_000) > lim {
        return Err((ierr::IEDURATION, format!("-t: {time_s} s is longer than this server allows ({} s)", lim / 1_000_000_000)));
    }
    let len = uint("len", 1 << 30)?;
    if len > 16 * 1024 * 1024 {
        return Err((ierr::IEBLOCKSIZE, format!("-l: {len} bytes, longer than 16 MiB")));
    }
    let bandwidth = uint("bandwidth", u64::MAX)?;
    let cc = match o.get("congestion") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => Some(s.clone()),
        Some(x) => return Err((ierr::IESETCONGESTION, format!("-C: not a congestion control name: {}", sys::echo_name(&x.to_string())))),
    };
    let reverse = o.get("reverse").is_some();
    // the same limits as bloatlab's own clients (TCP_INFO samples kept, rate)
    let p = Params {
        cookie: 0,
        streams,
        reverse,
        duration_ns: if time_s > 0 { Some(time_s * 1_000_000_000) } else { None },
        bytes: if bytes > 0 { Some(bytes) } else { None },
        rate_bps: if bandwidth > 0 { Some(bandwidth) } else { None },
        onoff_ticks: None,
        cc: cc.clone(),
        info_interval_ns: info_interval(limits),
        pacing: false,
        self_probes: false,
    };
    if let Some(why) = limits.refuse(&p) {
        let e = if why.starts_with("-P") { ierr::IENUMSTREAMS } else { ierr::IEDURATION };
        return Err((e, why));
    }
    Ok(Asked { streams, reverse, time_s, bytes, bandwidth, cc, get_server_output: o.contains_key("get_server_output") })
}

/// The server samples its sending sockets' TCP_INFO every 10 ms (or the
/// server's shortest allowed interval, if longer).
fn info_interval(limits: &ServerLimits) -> u64 {
    limits.min_info_interval_ns.max(10_000_000)
}

fn send_error(c: &TcpStream, i: i32, errno: i32) {
    let mut b = vec![state::SERVER_ERROR as u8];
    b.extend_from_slice(&i.to_be_bytes());
    b.extend_from_slice(&errno.to_be_bytes());
    let _ = (&*c).write_all(&b);
}

/// Serve one iperf3 test on `ctrl`, whose cookie has been read. Returns a
/// line for the server's log.
pub fn serve_test(ctrl: TcpStream, cookie: [u8; COOKIE_SIZE], reg: &Registry, limits: &ServerLimits, peer: SocketAddr) -> Result<String, String> {
    let _ = ctrl.set_nodelay(true);
    write_state(&ctrl, state::PARAM_EXCHANGE).map_err(|e| format!("PARAM_EXCHANGE: {e}"))?;
    let v = read_json(&ctrl, MAX_PARAMS_JSON, 10_000_000_000).map_err(|e| {
        send_error(&ctrl, ierr::IERECVPARAMS, 0);
        format!("parameters: {e}")
    })?;
    let a = admit(&v, limits).map_err(|(i, why)| {
        send_error(&ctrl, i, 0);
        format!("refused: {why}")
    })?;
    if let Some(cc) = &a.cc {
        let scratch = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        if let Err(e) = sys::set_cc(scratch.as_raw_fd(), cc) {
            send_error(&ctrl, ierr::IESETCONGESTION, libc::ENOENT);
            return Err(format!("refused: -C {cc}: {e}"));
        }
    }
    let (tx, rx) = mpsc::channel();
    reg.lock().unwrap().insert(cookie, tx);
    let unregister = || {
        reg.lock().unwrap().remove(&cookie);
    };
    if let Err(e) = write_state(&ctrl, state::CREATE_STREAMS) {
        unregister();
        return Err(format!("CREATE_STREAMS: {e}"));
    }
    let wait_end = match limits.data_wait_ns {
        0 => u64::MAX,
        w => sys::mono_ns().saturating_add(w),
    };
    let mut socks = Vec::new();
    while socks.len() < a.streams {
        let left = wait_end.saturating_sub(sys::mono_ns());
        if left == 0 || sys::stopped() {
            break;
        }
        match rx.recv_timeout(Duration::from_nanos(left.min(WAKE.as_nanos() as u64))) {
            Ok((s, _)) => socks.push(s),
            Err(mpsc::RecvTimeoutError::Timeout) if crate::tcp::control::control_closed(&ctrl) => break,
            Err(_) => {}
        }
    }
    unregister();
    if socks.len() < a.streams {
        send_error(&ctrl, ierr::IESTREAMACCEPT, libc::ETIMEDOUT);
        return Err(format!("{} of {} data connections arrived", socks.len(), a.streams));
    }
    for s in &socks {
        if let Some(cc) = &a.cc {
            let _ = sys::set_cc(s.as_raw_fd(), cc);
        }
    }
    write_state(&ctrl, state::TEST_START).and_then(|_| write_state(&ctrl, state::TEST_RUNNING)).map_err(|e| format!("TEST_START: {e}"))?;
    let cpu = Cpu::start();
    let t_run = sys::mono_ns();
    let states: Vec<Arc<StreamState>> = socks.into_iter().enumerate().map(|(i, s)| StreamState::new(i, s, t_run, 0)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = if a.reverse {
        let (v, iv) = (states.clone(), info_interval(limits));
        Some(stream::spawn("sampler", move || stream::run_sampler(v, iv)).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let mut workers = Vec::new();
    for s in &states {
        let (s, stop2, a2) = (s.clone(), stop.clone(), a.clone());
        let w = stream::spawn("stream", move || {
            if a2.reverse {
                send_until(&s, (a2.bandwidth > 0).then_some(a2.bandwidth), &stop2)
            } else {
                recv_until(&s, &stop2)
            }
        });
        match w {
            Ok(w) => workers.push(w),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                send_error(&ctrl, ierr::IESTREAMACCEPT, libc::EAGAIN);
                return Err(format!("cannot start a thread: {e}"));
            }
        }
    }
    // wait for TEST_END; the server's own end: the test's length (or its
    // limit) and a 10 s grace, as iperf3's server timer gives
    let lim = match (a.time_s, limits.max_duration_ns) {
        (0, 0) => u64::MAX,
        (0, l) => l,
        (t, _) => t * 1_000_000_000,
    };
    let hard_end = t_run.saturating_add(lim).saturating_add(10_000_000_000);
    let mut end_state = None;
    while end_state.is_none() {
        if sys::mono_ns() > hard_end || sys::stopped() {
            let _ = write_state(&ctrl, state::SERVER_TERMINATE);
            end_state = Some(state::SERVER_TERMINATE);
            break;
        }
        if a.reverse && a.bytes > 0 && states.iter().map(|s| s.written.load(Ordering::Relaxed)).sum::<u64>() >= a.bytes {
            stop.store(true, Ordering::SeqCst); // -n sent; the client ends the test when it has them
        }
        let mut b = [0u8; 1];
        match (&ctrl).read(&mut b) {
            Ok(0) => end_state = Some(state::CLIENT_TERMINATE),
            Ok(_) => match b[0] as i8 {
                state::TEST_END | state::CLIENT_TERMINATE | state::IPERF_DONE => end_state = Some(b[0] as i8),
                _ => {} // TEST_START and the like: nothing to do
            },
            Err(e) if stream::is_timeout(&e) => {}
            Err(_) => end_state = Some(state::CLIENT_TERMINATE),
        }
    }
    let t_end = sys::mono_ns();
    let moved: Vec<u64> = states.iter().map(|s| if a.reverse { s.written.load(Ordering::Relaxed) } else { s.read.load(Ordering::Relaxed) }).collect();
    stop.store(true, Ordering::SeqCst);
    let finals: Vec<Option<TcpInfo>> = states.iter().map(|s| if a.reverse { s.sample() } else { None }).collect();
    for s in &states {
        let _ = s.sock.shutdown(Shutdown::Both);
    }
    let errors: Vec<Option<String>> = workers.into_iter().map(|w| w.join().ok().flatten()).collect();
    if let Some(h) = sampler {
        let _ = h.join();
    }
    let cpu_pct = cpu.percent();
    let seconds = (t_end - t_run) as f64 / 1e9;
    let summary = server_summary(&a, &states, &moved, &finals, seconds, peer);
    if end_state != Some(state::TEST_END) {
        return Err(format!("the test ended without TEST_END ({}); {summary}", if end_state == Some(state::SERVER_TERMINATE) { "server's time limit" } else { "the client went away" }));
    }
    write_state(&ctrl, state::EXCHANGE_RESULTS).map_err(|e| format!("EXCHANGE_RESULTS: {e}"))?;
    let theirs = read_json(&ctrl, MAX_RESULTS_JSON, 10_000_000_000).map_err(|e| format!("the client's results: {e}"))?;
    let client_retr: Vec<i64> = theirs["streams"].as_array().map(|v| v.iter().take(states.len()).map(|x| x["retransmits"].as_i64().unwrap_or(-1)).collect()).unwrap_or_default();
    let streams: Vec<Value> = states
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let retr = if a.reverse { finals[i].map(|t| t.total_retrans as i64).unwrap_or(0) } else { -1 };
            json!({"id": stream_id(i), "bytes": moved[i], "retransmits": retr, "jitter": 0, "errors": 0, "packets": 0,
                   "start_time": 0, "end_time": seconds})
        })
        .collect();
    let mut mine = json!({"cpu_util_total": cpu_pct.0, "cpu_util_user": cpu_pct.1, "cpu_util_system": cpu_pct.2,
                          "sender_has_retransmits": if a.reverse { 1 } else { -1 }, "streams": streams});
    if let Some(cc) = states.first().and_then(|s| sys::get_cc(s.sock.as_raw_fd())) {
        mine["congestion_used"] = json!(cc);
    }
    if a.get_server_output {
        mine["server_output_text"] = json!(format!("{summary}\n"));
    }
    if a.reverse {
        // the sender's TCP_INFO, for a bloatlab client (a stock iperf3 client ignores unknown keys)
        let ext: Vec<Value> = states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut series = FlowSeries::default();
                let w = s.written.load(Ordering::Relaxed);
                for (t, ti) in s.samples.lock().unwrap().iter() {
                    push_sample(&mut series, i, (*t - t_run) as f64 / 1e9, ti, 0, w);
                }
                let fin = finals[i].unwrap_or_default();
                json!({"id": stream_id(i), "series": series_json(&series), "bytes_acked": stream::data_acked(&fin, w, 0),
                       "segs_out": fin.segs_out, "total_retrans": fin.total_retrans, "min_rtt_us": fin.min_rtt})
            })
            .collect();
        mine["bloatlab"] = json!({"streams": ext, "kernel": sys::kernel_release()});
    }
    write_json(&ctrl, &mine).map_err(|e| format!("sending results: {e}"))?;
    write_state(&ctrl, state::DISPLAY_RESULTS).map_err(|e| format!("DISPLAY_RESULTS: {e}"))?;
    let _ = read_state(&ctrl, 5_000_000_000); // IPERF_DONE
    let err = errors.iter().flatten().next().map(|e| format!(" (a data connection: {e})")).unwrap_or_default();
    let retr = if a.reverse { String::new() } else { format!(", client's retransmits {:?}", client_retr) };
    Ok(format!("{summary}{retr}{err}"))
}

/// The server's log of one iperf3 test: bytes and rate per stream, and the
/// TCP_INFO figures when the server sent.
fn server_summary(a: &Asked, states: &[Arc<StreamState>], moved: &[u64], finals: &[Option<TcpInfo>], seconds: f64, peer: SocketAddr) -> String {
    let mut out = format!(
        "iperf3 test from {peer}: {} stream(s), {}, {:.2} s",
        states.len(),
        if a.reverse { "reverse (this server sent)" } else { "this server received" },
        seconds
    );
    let total: u64 = moved.iter().sum();
    for (i, s) in states.iter().enumerate() {
        out += &format!("\n[{:>3}] {}  {}", stream_id(i), fmt_bytes(moved[i] as f64), fmt_rate(moved[i] as f64 * 8.0 / seconds.max(1e-9)));
        if let Some(ti) = finals[i] {
            let mut v: Vec<f64> = s.samples.lock().unwrap().iter().map(|(_, t)| t.rtt as f64 / 1e3).collect();
            let d = bloatlab_core::stats::Dist::of(&mut v);
            out += &format!(
                "  TCP_INFO: cc {}  retrans {}  cwnd {}  srtt p50 {:.3} ms p99 {:.3} ms  min_rtt {:.3} ms",
                sys::get_cc(s.sock.as_raw_fd()).unwrap_or_else(|| "?".into()),
                ti.total_retrans,
                fmt_bytes(ti.cwnd_bytes() as f64),
                d.p50,
                d.p99,
                ti.min_rtt as f64 / 1e3
            );
        }
    }
    if states.len() > 1 {
        out += &format!("\n[SUM] {}  {}", fmt_bytes(total as f64), fmt_rate(total as f64 * 8.0 / seconds.max(1e-9)));
    }
    out
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
        assert_eq!(a, Asked { streams: 4, reverse: true, time_s: 10, bytes: 0, bandwidth: 0, cc: Some("bbr".into()), get_server_output: false });
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
