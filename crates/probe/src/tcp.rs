//! TCP throughput: server, client, and the control protocol between them.
//!
//! Model (after iperf3): the client opens a *control* connection, sends the
//! test parameters as one JSON line, then opens `-P` *data* connections. The
//! sender (client, or server with `-R`) writes as fast as the socket takes
//! for `-t` seconds or exactly `-n` bytes, then shuts its write side down and
//! waits until every byte is acked. Meanwhile a sampler thread reads
//! `TCP_INFO` of each sending socket every `--info-interval`. When all
//! streams are done the server sends its own measurements back over the
//! control connection, so the client's result always describes the sending
//! socket and the receiving application.
//!
//! Wire: every connection starts with a 4-byte magic. `BLC1` + JSON line =
//! control; `BLD1` + cookie (u64 LE) + stream index (u32 LE) = data. Anything
//! else (e.g. a latency probe that only connects) is closed silently.
//!
//! Definitions (docs/results.md):
//! - bytes_acked: data bytes the receiver acknowledged = tcpi_bytes_acked
//!   minus what it counts before the data — the SYN on the connecting side
//!   (an accepted socket starts with its SYN-ACK already acked:
//!   `tcp_create_openreq_child` sets snd_una = ISN + 1) and the client's
//!   16-byte data hello — capped at the bytes written (the FIN's 1).
//! - goodput: bytes the receiving application read × 8 / (end_s - start_s),
//!   start = the client's connect(), end = the sender saw its last byte acked.
//!   A receiver that stops early (Ctrl-C/SIGTERM on a reverse test's client, as the
//!   emulator ends a flow) asks the sender to stop; the sender then waits for no
//!   more acks, reports what was acked and resets the connection, so that neither
//!   side waits for a send buffer draining through a bloated queue.
//! - fct_s (finite `-n` transfers): end_s - start_s.
//!
//! Constants:
//! - [`BUF`] = 128 KiB per write/read: large enough that the syscall rate is
//!   not the bottleneck at tens of Gbit/s on loopback.
//! - [`WAKE`] = 100 ms socket timeouts so Ctrl-C is noticed.
//! - [`ACK_WAIT_POLL_NS`] = 200 µs polling of TCP_INFO while waiting for the
//!   last ack: the resolution of the completion time.
//! - [`ACK_WAIT_MAX_NS`] = 30 s: give up waiting for a peer that stopped acking.
//! - [`MAX_CTRL_LINE`] = 64 KiB: the longest control line either side reads
//!   (a parameter line is ~200 B; the server's result line is read by the
//!   client without this bound, since the client chose the server).
//!
//! A server on the internet ([`ServerLimits`], docs/probe.md "Server limits"):
//! every request is bounded — test length, streams, TCP_INFO sampling
//! interval and the samples a test may keep, concurrent tests, connections
//! being classified — and a request beyond a limit gets a refusal that names
//! it. Threads are spawned through a bounded pool that refuses when full
//! (never panics). A test ends when its control connection ends. With a
//! secret, the server sends a random challenge and answers only a client
//! that returns HMAC-SHA256(secret, challenge ‖ parameter line).

use crate::report::{fmt_bytes, fmt_rate, FlowRaw, FlowSeries, Output};
use crate::sys::{self, TcpInfo};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use portable_atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

pub const BUF: usize = 128 * 1024;
pub const WAKE: Duration = Duration::from_millis(100);
pub const ACK_WAIT_POLL_NS: u64 = 200_000;
pub const ACK_WAIT_MAX_NS: u64 = 30_000_000_000;
pub const MAX_CTRL_LINE: u64 = 64 * 1024;
/// `-b`: a rate-limited sender writes what its rate allows every 10 ms, on
/// the same clock as the simulator's application source
/// (crates/sim/src/tcp/sender.rs `APP_TICK`).
pub use bloatlab_schema::scenario::APP_TICK_NS;
/// What an interrupted reverse-test client sends on the control connection:
/// the server stops sending and reports (older servers ignore it).
pub const STOP_LINE: &[u8] = b"stop\n";
/// How long an interrupted reverse-test client keeps reading the data the
/// server had already sent (its queue draining through a bottleneck) before
/// it gives up on them.
pub const DRAIN_MAX_NS: u64 = 10_000_000_000;
const CTRL_MAGIC: &[u8; 4] = b"BLC1";
const DATA_MAGIC: &[u8; 4] = b"BLD1";

/// Test parameters sent by the client.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Params {
    pub cookie: u64,
    pub streams: usize,
    pub reverse: bool,
    pub duration_ns: Option<u64>,
    pub bytes: Option<u64>,
    /// `-b`: the sender's application offers at most this many bit/s
    /// (written every [`APP_TICK_NS`]); None: as fast as the socket takes.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// `--on/--off` (with `-b`): the application writes for `on` write ticks,
    /// then is silent for `off`, repeating.
    #[serde(default)]
    pub onoff_ticks: Option<(u64, u64)>,
    pub cc: Option<String>,
    pub info_interval_ns: u64,
    /// `--pacing`: the sender paces at the kernel's pacing rate whatever its control
    #[serde(default)]
    pub pacing: bool,
    /// frame the data connections for self probes (`probewire`); a server
    /// that does answers `"self_probes": true`
    #[serde(default)]
    pub self_probes: bool,
}

/// One data connection, shared by its worker and the sampler.
pub struct StreamState {
    pub idx: usize,
    pub sock: TcpStream,
    /// CLOCK_MONOTONIC when the flow began (client: before connect; server: accept)
    pub start_mono: u64,
    /// sequence bytes tcpi_bytes_acked counts before the data: the client's
    /// SYN and 16-byte data hello (17); 0 on the server's accepted socket
    pub pre: u64,
    pub written: AtomicU64,
    pub read: AtomicU64,
    pub done: AtomicBool,
    pub samples: Mutex<Vec<(u64, TcpInfo)>>,
    /// set when the stream is framed for self probes (`probewire`)
    pub framing: std::sync::OnceLock<Arc<crate::probewire::Framing>>,
}

impl StreamState {
    pub(crate) fn new(idx: usize, sock: TcpStream, start_mono: u64, pre: u64) -> Arc<StreamState> {
        let _ = sock.set_read_timeout(Some(WAKE));
        let _ = sock.set_write_timeout(Some(WAKE));
        let _ = sock.set_nodelay(false);
        Arc::new(StreamState {
            idx,
            sock,
            start_mono,
            pre,
            written: AtomicU64::new(0),
            read: AtomicU64::new(0),
            done: AtomicBool::new(false),
            samples: Mutex::new(Vec::new()),
            framing: std::sync::OnceLock::new(),
        })
    }
    pub(crate) fn sample(&self) -> Option<TcpInfo> {
        let ti = sys::tcp_info(self.sock.as_raw_fd()).ok()?;
        self.samples.lock().unwrap().push((sys::mono_ns(), ti));
        Some(ti)
    }
    pub(crate) fn latest(&self) -> Option<TcpInfo> {
        self.samples.lock().unwrap().last().map(|s| s.1)
    }
}

/// What a stream's worker reports when it ends.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub end_mono: u64,
    pub fct_ns: Option<u64>,
    pub completed: bool,
    pub error: Option<String>,
    pub final_info: Option<TcpInfo>,
}

/// Data bytes acked (see the module doc): what came before the data
/// removed, capped at what was written (the FIN's 1).
pub fn data_acked(ti: &TcpInfo, written: u64, pre: u64) -> u64 {
    ti.bytes_acked.saturating_sub(pre).min(written)
}

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

/// Bytes a `rate_bps` application has written by `now` when it began at
/// `t0`: one write at t0 and one every [`APP_TICK_NS`] after (only in its
/// on ticks, for an on/off application).
pub fn app_allowance(rate_bps: u64, onoff: Option<(u64, u64)>, t0: u64, now: u64) -> u64 {
    let ticks = bloatlab_schema::scenario::app_ticks(now.saturating_sub(t0) / APP_TICK_NS + 1, onoff);
    (rate_bps as u128 * APP_TICK_NS as u128 * ticks as u128 / 8_000_000_000) as u64
}

/// A rate-limited application that has written `w` bytes since `app_t0`:
/// how many more it may write now, or None after sleeping until its next
/// write tick (at most [`WAKE`], never past `deadline`).
pub(crate) fn app_gate(rate_bps: u64, onoff: Option<(u64, u64)>, app_t0: u64, w: u64, deadline: Option<u64>) -> Option<usize> {
    let now = sys::mono_ns();
    let allowed = app_allowance(rate_bps, onoff, app_t0, now);
    if w < allowed {
        return Some((allowed - w).min(usize::MAX as u64) as usize);
    }
    // the application's next write
    let next = app_t0 + ((now - app_t0) / APP_TICK_NS + 1) * APP_TICK_NS;
    let wake = deadline.map_or(next, |d| d.min(next));
    sys::sleep_until_mono(wake.min(now + WAKE.as_nanos() as u64));
    None
}

/// One write of a sending loop: at most `chunk` bytes of `buf`; `w` counts
/// what the socket took (also published in `s.written`). A send timeout is
/// not an error: the caller's loop looks at its clock and comes back.
pub fn write_some(s: &StreamState, buf: &[u8], chunk: usize, w: &mut u64) -> io::Result<()> {
    if let Some(f) = s.framing.get() {
        return f.write(s, chunk, w);
    }
    match (&s.sock).write(&buf[..chunk]) {
        Ok(k) => {
            *w += k as u64;
            s.written.store(*w, Ordering::Relaxed);
            Ok(())
        }
        Err(e) if is_timeout(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Send for the duration or the byte count (at most `rate_bps` when
/// given), then wait for the last ack.
pub fn run_sender(
    s: &StreamState,
    duration_ns: Option<u64>,
    bytes: Option<u64>,
    rate_bps: Option<u64>,
    onoff: Option<(u64, u64)>,
    stop: &dyn Fn() -> bool,
) -> Outcome {
    let buf = vec![0x5au8; BUF];
    let deadline = duration_ns.map(|d| s.start_mono.saturating_add(d));
    let mut out = Outcome::default();
    let mut w = 0u64;
    let mut halted = false;
    let app_t0 = sys::mono_ns();
    loop {
        if sys::stopped() || stop() {
            break;
        }
        if let Some(d) = deadline {
            if sys::mono_ns() >= d {
                break;
            }
        }
        let mut chunk = match bytes {
            Some(n) if w >= n => break,
            Some(n) => ((n - w) as usize).min(BUF),
            None => BUF,
        };
        if let Some(r) = rate_bps {
            match app_gate(r, onoff, app_t0, w, deadline) {
                Some(room) => chunk = chunk.min(room),
                None => continue,
            }
        }
        if let Err(e) = write_some(s, &buf, chunk, &mut w) {
            out.error = Some(peer_error(&e));
            break;
        }
    }
    if out.error.is_none() {
        // The last partial segment goes at once, as the FIN used to push it: TCP_NODELAY
        // pushes what Nagle holds back (tcp_push_pending_frames); without it a short
        // transfer's tail waits a whole RTT for the ACK of the 16-byte hello.
        let _ = s.sock.set_nodelay(true);
        // The FIN goes after the data are acked, as an application that keeps its
        // connection (HTTP keep-alive, iperf3's data sockets) sends none with them: a FIN
        // on the last data segment puts the receiver in pingpong mode (tcp_fin), which
        // delays its ACK of that segment by up to 40 ms and the completion time with it.
        //
        // A receiver that asked us to stop (`stop()`: its STOP_LINE, or its control connection
        // gone) waits for nothing more: behind a bloated queue the acks of a whole autotuned
        // send buffer (megabytes) take tens of seconds, which outlasted the emulator's report
        // grace ("no result from bloatlab-probe"); the data it did not want are discarded below.
        let t_give_up = sys::mono_ns() + ACK_WAIT_MAX_NS;
        loop {
            if stop() {
                halted = true;
                break;
            }
            let now = sys::mono_ns();
            match sys::tcp_info(s.sock.as_raw_fd()) {
                Ok(ti) if data_acked(&ti, w, s.pre) >= w => break,
                Ok(ti) if ti.state as i32 == 7 /* TCP_CLOSE */ => {
                    out.error = Some("the peer closed the connection before acking everything".into());
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    out.error = Some(e.to_string());
                    break;
                }
            }
            if now > t_give_up || sys::stopped() {
                break;
            }
            sys::sleep_until_mono(now + ACK_WAIT_POLL_NS);
        }
    }
    out.end_mono = sys::mono_ns();
    if halted {
        // Abort: what is still in the send buffer was written after the receiver stopped
        // wanting it; a FIN would queue behind it and keep the receiver draining for as long.
        // The last sample is taken first: it holds what was acked when the receiver stopped.
        out.final_info = s.sample();
        let _ = sys::abort_connection(s.sock.as_raw_fd());
    } else {
        let _ = s.sock.shutdown(Shutdown::Write);
        out.final_info = s.sample();
    }
    if let Some(ti) = &out.final_info {
        if let Some(n) = bytes {
            out.completed = w == n && data_acked(ti, w, s.pre) >= n && out.error.is_none();
            if out.completed {
                out.fct_ns = Some(out.end_mono - s.start_mono);
            }
        }
    }
    s.done.store(true, Ordering::Relaxed);
    out
}

fn peer_error(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPIPE) | Some(libc::ECONNRESET) => "connection reset by the peer (was it killed?)".into(),
        _ => e.to_string(),
    }
}

/// Read until EOF, or until `expect` bytes when the transfer has a size (the
/// sender's FIN comes only after its data are acked); `end_mono` is the time
/// of the last byte read.
///
/// `drain`: on Ctrl-C/SIGTERM keep reading until the sender's FIN (at most
/// [`DRAIN_MAX_NS`]), since the sender was asked to stop and will close.
pub fn run_receiver(s: &StreamState, stop: &dyn Fn() -> bool, drain: bool, expect: Option<u64>) -> Outcome {
    let mut buf = vec![0u8; BUF];
    let mut out = Outcome::default();
    let mut r = 0u64;
    let mut last = sys::mono_ns();
    let mut stopped_at: Option<u64> = None;
    loop {
        if sys::stopped() && stopped_at.is_none() {
            stopped_at = Some(sys::mono_ns());
        }
        let drained = stopped_at.is_some_and(|t| !drain || sys::mono_ns() > t + DRAIN_MAX_NS);
        if drained || stop() {
            out.error = Some("interrupted".into());
            break;
        }
        match (&s.sock).read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                r += k as u64;
                last = sys::mono_ns();
                if let Some(f) = s.framing.get() {
                    f.feed(s, &buf[..k]);
                }
                s.read.store(r, Ordering::Relaxed);
                if expect.is_some_and(|n| r >= n) {
                    break;
                }
            }
            Err(e) if is_timeout(&e) => {}
            // we asked the sender to stop: it ends the connection with a reset once it has
            // stopped (run_sender), and what reached us before the reset is all there is
            Err(e) if stopped_at.is_some() && e.raw_os_error() == Some(libc::ECONNRESET) => break,
            Err(e) => {
                out.error = Some(peer_error(&e));
                break;
            }
        }
    }
    out.end_mono = last;
    s.done.store(true, Ordering::Relaxed);
    out
}

/// Sample TCP_INFO of every stream every `interval_ns` until all are done.
pub fn run_sampler(streams: Vec<Arc<StreamState>>, interval_ns: u64) {
    let mut next = sys::mono_ns();
    loop {
        let mut live = 0;
        for s in &streams {
            if !s.done.load(Ordering::Relaxed) {
                live += 1;
                s.sample();
            }
        }
        if live == 0 || sys::stopped() {
            return;
        }
        next += interval_ns;
        let now = sys::mono_ns();
        if next < now {
            next = now;
        }
        sys::sleep_until_mono(next);
    }
}

/// Open a TCP connection, optionally from a fixed local port and with a
/// congestion control set before the SYN.
pub fn connect(addr: SocketAddr, local_port: Option<u16>, cc: Option<&str>) -> Result<TcpStream, String> {
    unsafe {
        let dom = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
        let fd = libc::socket(dom, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(format!("socket: {}", io::Error::last_os_error()));
        }
        let stream = TcpStream::from_raw_fd(fd); // closes fd on every error path below
        let one: i32 = 1;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one as *const i32 as *const libc::c_void, 4);
        if let Some(cc) = cc {
            sys::set_cc(fd, cc).map_err(|e| format!("-C {cc}: {e}"))?;
        }
        if let Some(p) = local_port {
            let local: SocketAddr = if addr.is_ipv4() { ([0, 0, 0, 0], p).into() } else { (std::net::Ipv6Addr::UNSPECIFIED, p).into() };
            let (sa, len) = sockaddr_of(&local);
            if libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len) != 0 {
                return Err(format!("--cport {p}: bind: {}", io::Error::last_os_error()));
            }
        }
        let tv = libc::timeval { tv_sec: 10, tv_usec: 0 };
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &tv as *const _ as *const libc::c_void, std::mem::size_of::<libc::timeval>() as u32);
        let (sa, len) = sockaddr_of(&addr);
        if libc::connect(fd, &sa as *const _ as *const libc::sockaddr, len) != 0 {
            return Err(format!("connect to {addr}: {}", io::Error::last_os_error()));
        }
        Ok(stream)
    }
}

fn sockaddr_of(a: &SocketAddr) -> (libc::sockaddr_storage, u32) {
    unsafe {
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        match a {
            SocketAddr::V4(v) => {
                let s = &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in);
                s.sin_family = libc::AF_INET as u16;
                s.sin_port = v.port().to_be();
                s.sin_addr.s_addr = u32::from(*v.ip()).to_be();
                (ss, std::mem::size_of::<libc::sockaddr_in>() as u32)
            }
            SocketAddr::V6(v) => {
                let s = &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6);
                s.sin6_family = libc::AF_INET6 as u16;
                s.sin6_port = v.port().to_be();
                s.sin6_addr.s6_addr = v.ip().octets();
                s.sin6_scope_id = v.scope_id();
                (ss, std::mem::size_of::<libc::sockaddr_in6>() as u32)
            }
        }
    }
}

fn read_line(r: &mut BufReader<&TcpStream>, give_up_ns: u64) -> io::Result<String> {
    read_line_max(r, give_up_ns, u64::MAX)
}

/// Read one `\n`-terminated line of at most `max` bytes (an error beyond:
/// a peer cannot grow our memory by never sending a newline).
fn read_line_max(r: &mut BufReader<&TcpStream>, give_up_ns: u64, max: u64) -> io::Result<String> {
    let end = sys::mono_ns().saturating_add(give_up_ns);
    let mut line = String::new();
    loop {
        let room = max.saturating_sub(line.len() as u64);
        if room == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("line longer than {max} bytes")));
        }
        match r.by_ref().take(room).read_line(&mut line) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed")),
            Ok(_) if line.ends_with('\n') => return Ok(line),
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {
                if sys::mono_ns() > end {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
                }
            }
            Err(e) => return Err(e),
        }
    }
}

// ---------------------------------------------------------------- server

type Registry = Arc<Mutex<HashMap<u64, mpsc::Sender<(usize, TcpStream, u64)>>>>;

/// What the server grants a client. Defaults (docs/probe.md) suit a public
/// server on a small VPS or a router; `0` lifts a limit (the emulator's
/// private one-off servers do that).
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// longest test (ns); a test without `-t` (a byte count) ends here too
    pub max_duration_ns: u64,
    /// data connections per test (`-P`)
    pub max_streams: usize,
    /// shortest TCP_INFO sampling interval (ns)
    pub min_info_interval_ns: u64,
    /// TCP_INFO samples a test may keep (streams × duration / interval):
    /// bounds the server's memory per test (~240 B a sample)
    pub max_samples: u64,
    /// tests running at once
    pub max_tests: usize,
    /// connections being read/classified at once (the worker pool): a
    /// connection beyond it is closed at once
    pub max_conns: usize,
    /// shared secret: only clients that answer the challenge get a test
    pub secret: Option<Vec<u8>>,
    /// how long a test's data connections may take to arrive after its
    /// control connection (ns); 0: as long as the control connection stays
    /// (the emulator's page objects wait for a free connection)
    pub data_wait_ns: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_duration_ns: 600_000_000_000,
            max_streams: 128,
            min_info_interval_ns: 10_000_000,
            max_samples: 200_000,
            max_tests: 8,
            max_conns: 256,
            secret: None,
            data_wait_ns: 10_000_000_000,
        }
    }
}

impl ServerLimits {
    /// The emulator's private servers: nothing bounded but the streams.
    pub fn none() -> Self {
        ServerLimits { max_duration_ns: 0, min_info_interval_ns: 0, max_samples: 0, max_tests: 0, max_conns: 0, ..Default::default() }
    }

    /// Why `p` is refused, or None. The message names the client's flag.
    pub fn refuse(&self, p: &Params) -> Option<String> {
        if p.streams == 0 || p.streams > self.max_streams {
            return Some(format!("-P: streams must be in 1..{} (this server's limit)", self.max_streams));
        }
        let lim = self.max_duration_ns;
        if lim > 0 {
            match p.duration_ns {
                Some(d) if d > lim => {
                    return Some(format!("-t: {} s is longer than this server allows ({} s)", d / 1_000_000_000, lim / 1_000_000_000))
                }
                _ => {}
            }
        }
        if p.duration_ns == Some(0) {
            return Some("-t: the test length must be positive".into());
        }
        if p.onoff_ticks.is_some() && p.rate_bps.is_none() {
            return Some("--on/--off: need -b (the rate of the on periods)".into());
        }
        if p.onoff_ticks.is_some_and(|(on, _)| on == 0) {
            return Some("--on: must be at least one 10 ms write".into());
        }
        if p.rate_bps == Some(0) {
            return Some("-b: the rate must be positive".into());
        }
        if p.info_interval_ns < self.min_info_interval_ns.max(1) {
            return Some(format!(
                "--info-interval: {} ns is shorter than this server allows ({} ms)",
                p.info_interval_ns,
                self.min_info_interval_ns as f64 / 1e6
            ));
        }
        if self.max_samples > 0 && p.reverse {
            let dur = p.duration_ns.unwrap_or(lim).max(1);
            let samples = (p.streams as u128) * (dur as u128) / (p.info_interval_ns as u128);
            if samples > self.max_samples as u128 {
                return Some(format!(
                    "--info-interval: {} streams sampled every {} ms for {} s is {samples} TCP_INFO samples, more than this server keeps per test ({}); sample less often",
                    p.streams,
                    p.info_interval_ns as f64 / 1e6,
                    dur as f64 / 1e9,
                    self.max_samples
                ));
            }
        }
        None
    }

    /// A client's parameter line, as the server takes it: the parameters and
    /// the test's enforced length, or why not (and whether a limit refused
    /// it). Pure, so that it is fuzzed (`fuzz/fuzz_targets/control.rs`) and
    /// tested with random lines: never panics, whatever the line.
    pub fn admit(&self, line: &str) -> Result<(Params, Option<u64>), (String, bool)> {
        let p: Params = serde_json::from_str(line).map_err(|e| (format!("bad parameters: {e}"), false))?;
        if let Some(why) = self.refuse(&p) {
            return Err((why, true));
        }
        let d = self.deadline_ns(&p);
        Ok((p, d))
    }

    /// The test's length as the server enforces it (None: unbounded).
    fn deadline_ns(&self, p: &Params) -> Option<u64> {
        match (p.duration_ns, self.max_duration_ns) {
            (Some(d), 0) => Some(d),
            (None, 0) => None,
            (Some(d), lim) => Some(d.min(lim)),
            (None, lim) => Some(lim),
        }
    }
}

/// A counter of things in use with a ceiling; `try_take` gives a guard or
/// None when full. `limit == 0`: unbounded.
#[derive(Clone)]
struct Slots(Arc<std::sync::atomic::AtomicUsize>, usize);

struct Slot(Arc<std::sync::atomic::AtomicUsize>);

impl Slots {
    fn new(limit: usize) -> Slots {
        Slots(Arc::new(std::sync::atomic::AtomicUsize::new(0)), limit)
    }
    fn try_take(&self) -> Option<Slot> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        if self.1 > 0 && n >= self.1 {
            self.0.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(self.0.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the challenge answer signs: the challenge, then the parameter line
/// exactly as sent (its newline included).
fn auth_data(challenge: &str, line: &str) -> String {
    format!("{challenge}{line}")
}

/// Spawn a named thread; an error (no threads left) instead of a panic.
pub(crate) fn spawn<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

struct Ctx {
    reg: Registry,
    /// iperf3 tests waiting for their data connections
    reg3: crate::iperf3::Registry,
    finished: AtomicBool,
    one_off_taken: AtomicBool,
    conns: Slots,
    tests: Slots,
    limits: ServerLimits,
    one_off: bool,
    verbose: bool,
}

/// Serve tests on `listener` until Ctrl-C; with `one_off`, return after the
/// first test.
pub fn serve(listener: TcpListener, one_off: bool, verbose: bool) -> io::Result<()> {
    serve_with(listener, one_off, verbose, ServerLimits::default())
}

pub fn serve_with(listener: TcpListener, one_off: bool, verbose: bool, limits: ServerLimits) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let ctx = Arc::new(Ctx {
        reg: Arc::new(Mutex::new(HashMap::new())),
        reg3: Arc::new(Mutex::new(HashMap::new())),
        finished: AtomicBool::new(false),
        one_off_taken: AtomicBool::new(false),
        conns: Slots::new(limits.max_conns),
        tests: Slots::new(limits.max_tests),
        limits,
        one_off,
        verbose,
    });
    while !sys::stopped() && !(one_off && ctx.finished.load(Ordering::SeqCst)) {
        let (conn, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if is_timeout(&e) => {
                sys::wait_readable(listener.as_raw_fd(), WAKE.as_nanos() as u64);
                continue;
            }
            Err(e) => {
                // EMFILE and friends: wait a little instead of spinning
                eprintln!("tcp server: accept: {e}");
                std::thread::sleep(WAKE);
                continue;
            }
        };
        let accept_mono = sys::mono_ns();
        // the worker pool: a connection beyond it is closed at once
        let Some(slot) = ctx.conns.try_take() else {
            if verbose {
                eprintln!("tcp server: {peer}: refused, {} connections in service", ctx.limits.max_conns);
            }
            continue;
        };
        let c = ctx.clone();
        // classify in a thread, so a silent connection cannot stall accept()
        if let Err(e) = spawn("classify", move || {
            let _slot = slot;
            classify(conn, peer, accept_mono, &c)
        }) {
            eprintln!("tcp server: {peer}: refused, cannot start a thread: {e}");
        }
    }
    Ok(())
}

fn classify(conn: TcpStream, peer: SocketAddr, accept_mono: u64, ctx: &Ctx) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(WAKE));
    let _ = conn.set_write_timeout(Some(WAKE));
    let mut magic = [0u8; 4];
    if read_exact_timeout(&conn, &mut magic, 5_000_000_000).is_err() {
        return; // a connect-only latency probe, or garbage
    }
    if &magic == DATA_MAGIC {
        let mut h = [0u8; 12];
        if read_exact_timeout(&conn, &mut h, 5_000_000_000).is_err() {
            return;
        }
        let cookie = u64::from_le_bytes(h[..8].try_into().unwrap());
        let idx = u32::from_le_bytes(h[8..].try_into().unwrap()) as usize;
        if let Some(tx) = ctx.reg.lock().unwrap().get(&cookie) {
            let _ = tx.send((idx, conn, accept_mono));
        }
    } else if &magic == CTRL_MAGIC {
        if ctx.one_off && ctx.one_off_taken.swap(true, Ordering::SeqCst) {
            return; // one test only; refuse others
        }
        let Some(_test) = ctx.tests.try_take() else {
            let _ = send_json(&conn, &json!({"ok": false, "error": format!("busy: this server runs at most {} tests at once; try again later", ctx.limits.max_tests)}));
            return;
        };
        if let Err(e) = serve_test(conn, ctx) {
            if ctx.verbose {
                eprintln!("tcp server: test from {peer}: {e}");
            }
        }
        ctx.finished.store(true, Ordering::SeqCst);
    } else if &magic == crate::probewire::FOREIGN_MAGIC {
        crate::probewire::answer_foreign(&conn);
    } else if crate::iperf3::looks_like_cookie(&magic) {
        classify_iperf3(conn, magic, peer, accept_mono, ctx);
    }
}

/// A connection that starts like an iperf3 cookie: a data connection of an
/// iperf3 test waiting for its streams, or a new iperf3 test.
fn classify_iperf3(conn: TcpStream, magic: [u8; 4], peer: SocketAddr, accept_mono: u64, ctx: &Ctx) {
    use crate::iperf3::{self, COOKIE_SIZE};
    let mut cookie = [0u8; COOKIE_SIZE];
    cookie[..4].copy_from_slice(&magic);
    if read_exact_timeout(&conn, &mut cookie[4..], 5_000_000_000).is_err() || !iperf3::valid_cookie(&cookie) {
        return;
    }
    if let Some(tx) = ctx.reg3.lock().unwrap().get(&cookie) {
        let _ = tx.send((conn, accept_mono));
        return;
    }
    let deny = |c: &TcpStream| {
        let _ = (&*c).write_all(&[iperf3::state::ACCESS_DENIED as u8]);
    };
    if ctx.limits.secret.is_some() {
        // iperf3's RSA authentication is not spoken: a server with a secret serves only bloatlab's clients
        eprintln!("tcp server: iperf3 test from {peer} refused: this server requires --secret (bloatlab-probe clients only)");
        deny(&conn);
        return;
    }
    if ctx.one_off && ctx.one_off_taken.swap(true, Ordering::SeqCst) {
        deny(&conn);
        return;
    }
    let Some(_test) = ctx.tests.try_take() else {
        eprintln!("tcp server: iperf3 test from {peer} refused: busy ({} tests at once)", ctx.limits.max_tests);
        deny(&conn); // iperf3's "the server is busy running a test"
        return;
    };
    match iperf3::serve_test(conn, cookie, &ctx.reg3, &ctx.limits, peer) {
        Ok(log) => eprintln!("{log}"),
        Err(e) => eprintln!("tcp server: iperf3 test from {peer}: {e}"),
    }
    ctx.finished.store(true, Ordering::SeqCst);
}

pub(crate) fn read_exact_timeout(mut c: &TcpStream, buf: &mut [u8], give_up_ns: u64) -> io::Result<()> {
    let end = sys::mono_ns() + give_up_ns;
    let mut got = 0;
    while got < buf.len() {
        match c.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => got += k,
            Err(e) if is_timeout(&e) => {
                if sys::mono_ns() > end || sys::stopped() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn send_json(mut c: &TcpStream, v: &Value) -> io::Result<()> {
    let mut s = v.to_string();
    s.push('\n');
    let _ = c.set_write_timeout(Some(Duration::from_secs(10)));
    c.write_all(s.as_bytes())
}

fn serve_test(ctrl: TcpStream, ctx: &Ctx) -> Result<(), String> {
    let (reg, verbose, limits) = (&ctx.reg, ctx.verbose, &ctx.limits);
    let mut rd = BufReader::new(&ctrl);
    let line = read_line_max(&mut rd, 10_000_000_000, MAX_CTRL_LINE).map_err(|e| format!("reading parameters: {e}"))?;
    if let Some(secret) = &limits.secret {
        // challenge-response: HMAC-SHA256(secret, challenge || parameter line)
        let challenge = format!("{:016x}{:016x}", sys::random_u64(), sys::random_u64());
        send_json(&ctrl, &json!({"ok": false, "challenge": challenge})).map_err(|e| format!("challenge: {e}"))?;
        let answer = read_line_max(&mut rd, 10_000_000_000, MAX_CTRL_LINE).map_err(|e| format!("reading the answer: {e}"))?;
        let got: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
        let key = crate::wire::Key::new(secret);
        if !got["auth"].as_str().is_some_and(|a| key.verify_hex(auth_data(&challenge, &line).as_bytes(), a)) {
            let _ = send_json(&ctrl, &json!({"ok": false, "error": "authentication failed (--secret)"}));
            return Err("authentication failed".into());
        }
    }
    let (p, deadline_ns) = match limits.admit(&line) {
        Ok(x) => x,
        Err((why, limit)) => {
            let mut answer = json!({"ok": false, "error": why});
            if limit {
                answer["limit"] = json!(true);
            }
            let _ = send_json(&ctrl, &answer);
            return Err(why);
        }
    };
    if p.reverse {
        if let Some(cc) = &p.cc {
            // check on a scratch socket before anything starts
            let probe = TcpListener::bind("127.0.0.1:0").ok();
            let chk = probe.as_ref().map(|l| sys::set_cc(l.as_raw_fd(), cc));
            if let Some(Err(e)) = chk {
                let _ = send_json(&ctrl, &json!({"ok": false, "error": format!("the server's {e}"), "available": sys::available_cc()}));
                return Err(e);
            }
        }
    }
    let (tx, rx) = mpsc::channel();
    reg.lock().unwrap().insert(p.cookie, tx);
    // self probes need a test that runs for a time (frames would spoil an exact byte count)
    let framed = p.self_probes && p.bytes.is_none();
    let mut ok = json!({"ok": true, "kernel": sys::kernel_release(), "boot_id": sys::boot_id(), "self_probes": framed});
    if let Some(w) = paced_by_default_warning(&p) {
        ok["warning"] = json!(w);
    }
    let _ = send_json(&ctrl, &ok);
    let mut states = Vec::new();
    let deadline = match limits.data_wait_ns {
        0 => u64::MAX,
        w => sys::mono_ns().saturating_add(w),
    };
    while states.len() < p.streams {
        let left = deadline.saturating_sub(sys::mono_ns());
        if left == 0 {
            break;
        }
        match rx.recv_timeout(Duration::from_nanos(left.min(WAKE.as_nanos() as u64))) {
            Ok((idx, sock, t)) => {
                if p.reverse {
                    if let Some(cc) = &p.cc {
                        let _ = sys::set_cc(sock.as_raw_fd(), cc);
                    }
                    if p.pacing {
                        let _ = sys::set_internal_pacing(sock.as_raw_fd());
                    }
                }
                states.push(StreamState::new(idx, sock, t, 0));
            }
            Err(mpsc::RecvTimeoutError::Timeout) if control_closed(&ctrl) => {
                reg.lock().unwrap().remove(&p.cookie);
                return Err("the client closed the control connection before its data connections".into());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    reg.lock().unwrap().remove(&p.cookie);
    if states.len() < p.streams {
        let _ = send_json(&ctrl, &json!({"ok": false, "error": "not all data connections arrived"}));
        return Err("missing data connections".into());
    }
    if framed {
        for s in &states {
            crate::probewire::Framing::attach(s, None, p.reverse).map_err(|e| refuse_busy(&ctrl, &states, e))?;
        }
    }
    let sampler = if p.reverse {
        let v = states.clone();
        let iv = p.info_interval_ns;
        Some(spawn("sampler", move || run_sampler(v, iv)).map_err(|e| refuse_busy(&ctrl, &states, e))?)
    } else {
        None
    };
    // a client that vanishes ends its test: watch the control connection;
    // the server's own deadline ends it too (a byte count never reached)
    let ctrl_gone = Arc::new(AtomicBool::new(false));
    // a reverse test's client asks us to stop sending (it was interrupted): the test still ends with results
    let halt = Arc::new(AtomicBool::new(false));
    let over = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (gone, halt, over, c) = (ctrl_gone.clone(), halt.clone(), over.clone(), ctrl.try_clone().map_err(|e| e.to_string())?);
        let hard_end = deadline_ns.map(|d| sys::mono_ns().saturating_add(d).saturating_add(ACK_WAIT_MAX_NS));
        spawn("ctrl-watch", move || watch_control(&c, &gone, &halt, &over, hard_end)).map_err(|e| refuse_busy(&ctrl, &states, e))?
    };
    let mut workers = Vec::new();
    for s in &states {
        let s = s.clone();
        let (p, gone, halt) = (p.clone(), ctrl_gone.clone(), halt.clone());
        let w = spawn("stream", move || {
            let stop = || gone.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed);
            if p.reverse {
                run_sender(&s, deadline_ns, p.bytes, p.rate_bps, p.onoff_ticks, &stop)
            } else {
                run_receiver(&s, &|| gone.load(Ordering::Relaxed), false, p.bytes)
            }
        });
        match w {
            Ok(w) => workers.push(w),
            Err(e) => {
                ctrl_gone.store(true, Ordering::SeqCst);
                for w in workers {
                    let _ = w.join();
                }
                over.store(true, Ordering::SeqCst);
                let _ = watcher.join();
                return Err(refuse_busy(&ctrl, &states, e));
            }
        }
    }
    let outcomes: Vec<Outcome> = workers.into_iter().map(|w| w.join().unwrap_or_default()).collect();
    over.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    if ctrl_gone.load(Ordering::SeqCst) {
        return Err("the client closed the control connection; test stopped".into());
    }
    if let Some(h) = sampler {
        let _ = h.join();
    }
    let mut streams = Vec::new();
    for (s, o) in states.iter().zip(&outcomes) {
        let samples = s.samples.lock().unwrap();
        let mut series = FlowSeries::default();
        for (t, ti) in samples.iter() {
            series.push(s.idx, (*t - s.start_mono) as f64 / 1e9, ti, s.pre, s.written.load(Ordering::Relaxed));
        }
        streams.push(json!({
            "idx": s.idx, "start_mono": s.start_mono, "end_mono": o.end_mono,
            "bytes_read": s.read.load(Ordering::Relaxed), "bytes_written": s.written.load(Ordering::Relaxed),
            "fct_ns": o.fct_ns, "completed": o.completed, "error": o.error,
            "info": o.final_info.map(|ti| info_json(&ti, s.written.load(Ordering::Relaxed), s.pre)),
            "cc": sys::get_cc(s.sock.as_raw_fd()),
            "series": series.to_json(),
        }));
    }
    if verbose {
        let total: u64 = states.iter().map(|s| s.read.load(Ordering::Relaxed) + s.written.load(Ordering::Relaxed)).sum();
        eprintln!("tcp server: test done, {} streams, {} moved", states.len(), fmt_bytes(total as f64));
    }
    send_json(&ctrl, &json!({"streams": streams, "boot_id": sys::boot_id(), "kernel": sys::kernel_release()}))
        .map_err(|e| format!("sending results: {e}"))
}

/// The peer closed the control connection (EOF waiting), without blocking.
pub(crate) fn control_closed(c: &TcpStream) -> bool {
    if c.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = matches!(c.peek(&mut [0u8; 1]), Ok(0)) || matches!(c.take_error(), Ok(Some(_)));
    let _ = c.set_nonblocking(false);
    closed
}

/// Tell the client the server ran out of threads; end its streams.
fn refuse_busy(ctrl: &TcpStream, states: &[Arc<StreamState>], e: io::Error) -> String {
    for s in states {
        let _ = s.sock.shutdown(std::net::Shutdown::Both);
    }
    let _ = send_json(ctrl, &json!({"ok": false, "error": format!("busy: the server cannot start a thread ({e}); try again later")}));
    format!("cannot start a thread: {e}")
}

/// Until `over`: set `gone` when the control connection closes (EOF or an
/// error) or the hard end passes. A client sends nothing during a test
/// except [`STOP_LINE`] when it was interrupted in a reverse test: anything
/// it sends sets `halt` (stop sending, then report as usual). Bounded: one
/// small buffer, read and dropped.
fn watch_control(mut c: &TcpStream, gone: &AtomicBool, halt: &AtomicBool, over: &AtomicBool, hard_end: Option<u64>) {
    let mut buf = [0u8; 512];
    while !over.load(Ordering::SeqCst) {
        if hard_end.is_some_and(|e| sys::mono_ns() > e) {
            gone.store(true, Ordering::SeqCst);
            return;
        }
        match c.read(&mut buf) {
            Ok(0) => {
                gone.store(true, Ordering::SeqCst);
                return;
            }
            Ok(_) => halt.store(true, Ordering::SeqCst),
            Err(e) if is_timeout(&e) => {}
            Err(_) => {
                gone.store(true, Ordering::SeqCst);
                return;
            }
        }
    }
}

fn info_json(ti: &TcpInfo, written: u64, pre: u64) -> Value {
    json!({"bytes_acked": data_acked(ti, written, pre), "segs_out": ti.segs_out, "total_retrans": ti.total_retrans,
           "min_rtt_us": ti.min_rtt, "srtt_us": ti.rtt})
}

/// Controls whose `init` marks the socket for the kernel's internal pacing
/// (`bbr_init`: `SK_PACING_NEEDED`).
const PACING_CONTROLS: [&str; 3] = ["bbr", "bbr2", "bbr3"];

/// A download (-R) asks for a control that does not pace, but this server's
/// default control paces: the accepted socket was initialised with the default
/// before the test's control is set, and switching never clears the pacing
/// mark, so the connection is paced (as if the server ran sch_fq). Found
/// through the emulator, whose namespaces inherited a BBR default: kernel
/// "CUBIC" downloads were paced (docs/emulator.md).
fn paced_by_default_warning(p: &Params) -> Option<String> {
    let cc = p.cc.as_deref()?;
    if !p.reverse || p.pacing || PACING_CONTROLS.contains(&cc) {
        return None;
    }
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").ok()?;
    let default = default.trim();
    PACING_CONTROLS.contains(&default).then(|| {
        format!(
            "the server's default congestion control is {default}: its accepted sockets start with {default}, which \
             marks them for pacing before -C {cc} is set, and the mark stays, so this {cc} download is paced (as with \
             sch_fq). For an unpaced {cc}, start the server with net.ipv4.tcp_congestion_control set to a control that \
             does not pace (e.g. {cc})"
        )
    })
}

// ---------------------------------------------------------------- client

#[derive(Debug, Clone)]
pub struct ClientCfg {
    pub addr: SocketAddr,
    pub cc: Option<String>,
    /// `--pacing`: the sender (this client, or the server with -R) paces at the
    /// kernel's pacing rate whatever its control (`SO_MAX_PACING_RATE`)
    pub pacing: bool,
    pub streams: usize,
    pub reverse: bool,
    pub duration_ns: Option<u64>,
    pub bytes: Option<u64>,
    /// `-b`: the sender offers at most this many bit/s
    pub rate_bps: Option<u64>,
    /// `--on/--off` in write ticks
    pub onoff_ticks: Option<(u64, u64)>,
    pub cport: Option<u16>,
    pub info_interval_ns: u64,
    /// interval report period, 0 = none (and no printing at all)
    pub report_ns: u64,
    pub t0_mono: u64,
    /// flow ids start here (the load test runs two clients)
    pub first_id: usize,
    /// answers a server's challenge (`--secret`)
    pub secret: Option<Vec<u8>>,
    /// open the data connections only after a line on standard input (the
    /// control connection is set up first): the emulator starts a page's
    /// objects when a connection of the page is free
    pub wait_go: bool,
    /// created when every data connection has ended (a download: its last
    /// byte read), before the server's results are awaited
    pub done_file: Option<std::path::PathBuf>,
    /// frame the data connections for self probes, issued through this board
    /// (used when the server agrees)
    pub self_probes: Option<Arc<crate::probewire::Board>>,
}

/// Everything the client learned, ready for [`Output`].
pub struct ClientResult {
    pub flows: Vec<FlowRaw>,
    pub series: FlowSeries,
    pub cc: Option<String>,
    /// why the test ended early, if it did (server killed, Ctrl-C)
    pub problem: Option<String>,
    pub server_kernel: Option<String>,
    pub duration_s: f64,
    /// the client's local port of each data connection
    pub local_ports: Vec<u16>,
}

/// [`ClientError::status`] of a client that found a stock iperf3 server
/// (it answered PARAM_EXCHANGE to our parameter line): the CLI runs the test
/// again in iperf3's protocol. Never an exit status.
pub const IPERF3_SERVER: i32 = -9;

/// The server's first byte is iperf3's PARAM_EXCHANGE (9): it took our
/// parameter line for a cookie. Peeks; waits at most 10 s.
fn answered_like_iperf3(c: &TcpStream) -> bool {
    let end = sys::mono_ns() + 10_000_000_000;
    let mut b = [0u8; 1];
    while sys::mono_ns() < end && !sys::stopped() {
        match c.peek(&mut b) {
            Ok(1) => return b[0] as i8 == crate::iperf3::state::PARAM_EXCHANGE,
            Ok(_) => return false,
            Err(e) if is_timeout(&e) => {}
            Err(_) => return false,
        }
    }
    false
}

/// A client error with the exit status it deserves (2: bad argument).
#[derive(Debug)]
pub struct ClientError {
    pub status: i32,
    pub msg: String,
}

pub fn run_client(cfg: &ClientCfg) -> Result<ClientResult, ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    if !cfg.reverse {
        if let Some(cc) = &cfg.cc {
            let avail = sys::available_cc();
            if !avail.is_empty() && !avail.iter().any(|a| a == cc) {
                return Err(ClientError {
                    status: 2,
                    msg: format!("-C {cc}: congestion control \"{cc}\" is not available on this kernel; available: {}", avail.join(" ")),
                });
            }
        }
    }
    let ctrl = connect(cfg.addr, None, None).map_err(err1)?;
    let _ = ctrl.set_read_timeout(Some(WAKE));
    let cookie = sys::random_u64();
    let p = Params {
        cookie,
        streams: cfg.streams,
        reverse: cfg.reverse,
        duration_ns: cfg.duration_ns,
        bytes: cfg.bytes,
        rate_bps: cfg.rate_bps,
        onoff_ticks: cfg.onoff_ticks,
        cc: cfg.cc.clone(),
        info_interval_ns: cfg.info_interval_ns,
        pacing: cfg.pacing,
        self_probes: cfg.self_probes.is_some() && cfg.bytes.is_none(),
    };
    let mut c = &ctrl;
    c.write_all(CTRL_MAGIC).map_err(|e| err1(format!("control: {e}")))?;
    let mut line = serde_json::to_value(&p).unwrap().to_string();
    line.push('\n');
    c.write_all(line.as_bytes()).map_err(|e| err1(format!("control: {e}")))?;
    if answered_like_iperf3(&ctrl) {
        return Err(ClientError { status: IPERF3_SERVER, msg: format!("{} is an iperf3 server", cfg.addr) });
    }
    let mut rd = BufReader::new(&ctrl);
    let answer = |rd: &mut BufReader<&TcpStream>| -> Result<Value, ClientError> {
        read_line_max(rd, 10_000_000_000, MAX_CTRL_LINE)
            .ok()
            .and_then(|l| serde_json::from_str(&l).ok())
            .ok_or_else(|| err1(format!("{}: no answer from a bloatlab-probe tcp server", cfg.addr)))
    };
    let mut hello = answer(&mut rd)?;
    if let Some(ch) = hello["challenge"].as_str() {
        let Some(secret) = &cfg.secret else {
            return Err(ClientError { status: 2, msg: format!("{}: the server requires a shared secret (--secret)", cfg.addr) });
        };
        let tag = crate::wire::Key::new(secret).sign_hex(auth_data(ch, &line).as_bytes());
        send_json(&ctrl, &json!({"auth": tag})).map_err(|e| err1(format!("control: {e}")))?;
        hello = answer(&mut rd)?;
    }
    if let Some(w) = hello["warning"].as_str() {
        eprintln!("bloatlab-probe: warning from the server: {w}");
    }
    if hello["ok"] != json!(true) {
        let msg = hello["error"].as_str().unwrap_or("refused").to_string();
        let status = if hello.get("available").is_some() || hello.get("limit").is_some() || msg.starts_with("authentication") { 2 } else { 1 };
        let msg = if status == 2 { format!("-C {}: {msg}", cfg.cc.as_deref().unwrap_or("")) } else { msg };
        return Err(ClientError { status, msg });
    }
    if cfg.wait_go {
        let mut go = String::new();
        match io::stdin().read_line(&mut go) {
            Ok(n) if n > 0 => {}
            _ => return Err(err1("--wait-go: standard input ended before the go line".into())),
        }
    }
    let mut states = Vec::new();
    for i in 0..cfg.streams {
        let start = sys::mono_ns();
        let cc = if cfg.reverse { None } else { cfg.cc.as_deref() };
        let mut s = connect(cfg.addr, cfg.cport.map(|p| p + i as u16), cc).map_err(|e| ClientError {
            status: if e.starts_with("-C") || e.starts_with("--cport") { 2 } else { 1 },
            msg: e,
        })?;
        if cfg.pacing && !cfg.reverse {
            sys::set_internal_pacing(s.as_raw_fd()).map_err(|e| err1(format!("--pacing: SO_MAX_PACING_RATE: {e}")))?;
        }
        let mut h = Vec::with_capacity(16);
        h.extend_from_slice(DATA_MAGIC);
        h.extend_from_slice(&cookie.to_le_bytes());
        h.extend_from_slice(&(i as u32).to_le_bytes());
        s.write_all(&h).map_err(|e| err1(format!("data connection: {e}")))?;
        // the SYN's sequence number and the hello come before the data in tcpi_bytes_acked
        states.push(StreamState::new(i, s, start, 1 + h.len() as u64));
    }
    if let (Some(board), Some(true)) = (&cfg.self_probes, hello["self_probes"].as_bool()) {
        for s in &states {
            crate::probewire::Framing::attach(s, Some(board.clone()), cfg.reverse).map_err(|e| err1(format!("self probes: {e}")))?;
        }
    }
    let sampler = if !cfg.reverse {
        let v = states.clone();
        let iv = cfg.info_interval_ns;
        Some(std::thread::spawn(move || run_sampler(v, iv)))
    } else {
        None
    };
    // reverse: on Ctrl-C/SIGTERM ask the server to stop sending, then read what it had sent and its results
    let stopper = if cfg.reverse {
        let (v, c) = (states.clone(), ctrl.try_clone().map_err(|e| err1(format!("control: {e}")))?);
        Some(std::thread::spawn(move || {
            while !v.iter().all(|s| s.done.load(Ordering::Relaxed)) {
                if sys::stopped() {
                    let _ = (&c).write_all(STOP_LINE);
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }))
    } else {
        None
    };
    let workers: Vec<_> = states
        .iter()
        .map(|s| {
            let s = s.clone();
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                if cfg.reverse {
                    run_receiver(&s, &|| false, true, cfg.bytes)
                } else {
                    run_sender(&s, cfg.duration_ns, cfg.bytes, cfg.rate_bps, cfg.onoff_ticks, &|| false)
                }
            })
        })
        .collect();
    if cfg.report_ns > 0 {
        report_intervals(cfg, &states);
    }
    let outcomes: Vec<Outcome> = workers.into_iter().map(|w| w.join().unwrap_or_default()).collect();
    if let Some(p) = &cfg.done_file {
        std::fs::write(p, b"done\n").map_err(|e| err1(format!("--done-file {}: {e}", p.display())))?;
    }
    if let Some(h) = sampler {
        let _ = h.join();
    }
    if let Some(h) = stopper {
        let _ = h.join();
    }
    // the server's half
    let give_up = if sys::stopped() { 2_000_000_000 } else { 15_000_000_000 };
    let server: Option<Value> = read_line(&mut rd, give_up).ok().and_then(|l| serde_json::from_str(&l).ok());
    let same_host = server.as_ref().map(|v| v["boot_id"].as_str() == Some(sys::boot_id().as_str())).unwrap_or(false);
    let mut flows = Vec::new();
    let mut series = FlowSeries::default();
    let mut problem = None;
    let mut cc_seen = None;
    for (s, o) in states.iter().zip(&outcomes) {
        let srv = server.as_ref().and_then(|v| v["streams"].as_array()?.iter().find(|x| x["idx"] == json!(s.idx)).cloned());
        let start_s = (s.start_mono - cfg.t0_mono) as f64 / 1e9;
        let mut f = FlowRaw {
            id: cfg.first_id + s.idx,
            name: format!("{}{}", if cfg.reverse { "down" } else { "up" }, s.idx),
            direction: if cfg.reverse { "down" } else { "up" }.into(),
            start_s,
            ..Default::default()
        };
        if let Some(e) = &o.error {
            problem.get_or_insert(format!("stream {}: {e}", s.idx));
        }
        if !cfg.reverse {
            // we sent: TCP_INFO is ours
            let w = s.written.load(Ordering::Relaxed);
            let fin = o.final_info.unwrap_or_default();
            f.cc = sys::get_cc(s.sock.as_raw_fd()).unwrap_or_default();
            f.bytes_acked = data_acked(&fin, w, s.pre);
            f.segs_sent = fin.segs_out as u64;
            f.retrans_segs = fin.total_retrans as u64;
            f.min_rtt_ms = fin.min_rtt as f64 / 1e3;
            f.end_s = (o.end_mono - cfg.t0_mono) as f64 / 1e9;
            f.fct_s = o.fct_ns.map(|n| n as f64 / 1e9);
            f.completed = o.completed;
            let samples = s.samples.lock().unwrap();
            for (t, ti) in samples.iter() {
                series.push(f.id, (*t - cfg.t0_mono) as f64 / 1e9, ti, s.pre, w);
                f.rtt_ms.push(ti.rtt as f64 / 1e3);
            }
            f.bytes_delivered = match &srv {
                Some(v) => v["bytes_read"].as_u64().unwrap_or(0),
                None => f.bytes_acked, // the receiver's kernel acked them; its reads are unknown
            };
        } else {
            f.bytes_delivered = s.read.load(Ordering::Relaxed);
            f.end_s = (o.end_mono - cfg.t0_mono) as f64 / 1e9;
            if cfg.bytes.is_some_and(|n| n > 0 && f.bytes_delivered >= n) {
                f.client_done_s = Some(f.end_s);
            }
            if let Some(v) = &srv {
                let info = &v["info"];
                f.cc = v["cc"].as_str().unwrap_or_default().to_string();
                f.bytes_acked = info["bytes_acked"].as_u64().unwrap_or(0);
                f.segs_sent = info["segs_out"].as_u64().unwrap_or(0);
                f.retrans_segs = info["total_retrans"].as_u64().unwrap_or(0);
                f.min_rtt_ms = info["min_rtt_us"].as_f64().unwrap_or(f64::NAN) / 1e3;
                f.completed = v["completed"].as_bool().unwrap_or(false);
                if let Some(e) = v["error"].as_str() {
                    problem.get_or_insert(format!("stream {} (server side): {e}", s.idx));
                }
                // align the server's clock: exact on the same host, else from our connect time
                let srv_start = v["start_mono"].as_u64().unwrap_or(0);
                let shift = if same_host { (srv_start as f64 - cfg.t0_mono as f64) / 1e9 } else { start_s };
                let ss = FlowSeries::from_json(&v["series"]);
                for i in 0..ss.t.len() {
                    f.rtt_ms.push(ss.srtt_ms[i]);
                }
                let mut ss = ss;
                for t in ss.t.iter_mut() {
                    *t += shift;
                }
                ss.flow.iter_mut().for_each(|x| *x = f.id);
                series.append(&ss);
                if f.completed {
                    // the sender's last-ack time on our axis
                    let srv_end = (v["end_mono"].as_u64().unwrap_or(0) as f64 - srv_start as f64) / 1e9 + shift;
                    f.end_s = srv_end.max(f.end_s);
                    f.fct_s = Some(f.end_s - f.start_s);
                }
            } else {
                f.bytes_acked = f.bytes_delivered;
            }
        }
        if !f.cc.is_empty() {
            cc_seen = Some(f.cc.clone());
        }
        flows.push(f);
    }
    if server.is_none() {
        problem = Some(match problem {
            Some(p) => format!("the server went away ({p}); the results are what this client measured"),
            None if sys::stopped() => "interrupted; the results are what this client measured".into(),
            None => "the server sent no results (was it killed?); the results are what this client measured".into(),
        });
    } else if sys::stopped() {
        problem.get_or_insert("interrupted".into());
    }
    let duration_s = flows.iter().map(|f| f.end_s).fold(0.0, f64::max);
    Ok(ClientResult {
        flows,
        series,
        cc: cc_seen,
        problem,
        server_kernel: server.as_ref().and_then(|v| v["kernel"].as_str().map(String::from)),
        duration_s,
        local_ports: states.iter().map(|s| s.sock.local_addr().map(|a| a.port()).unwrap_or(0)).collect(),
    })
}

/// iperf3-style interval lines while the workers run.
fn report_intervals(cfg: &ClientCfg, states: &[Arc<StreamState>]) {
    println!("[ ID] Interval           Transfer     Bitrate         {}", if cfg.reverse { "" } else { "Retr  Cwnd" });
    let n = states.len();
    let mut last_bytes = vec![0u64; n];
    let mut last_retr = vec![0u64; n];
    let mut t_prev = sys::mono_ns();
    let t_start = cfg.t0_mono;
    let mut next = t_prev + cfg.report_ns;
    loop {
        let all_done = states.iter().all(|s| s.done.load(Ordering::Relaxed));
        if all_done || sys::stopped() {
            break;
        }
        while sys::mono_ns() < next {
            if states.iter().all(|s| s.done.load(Ordering::Relaxed)) || sys::stopped() {
                return;
            }
            sys::sleep_until_mono((sys::mono_ns() + 20_000_000).min(next));
        }
        let now = sys::mono_ns();
        let dt = (now - t_prev) as f64 / 1e9;
        let (a, b) = ((t_prev - t_start) as f64 / 1e9, (now - t_start) as f64 / 1e9);
        let mut sum = 0u64;
        let mut sum_retr = 0u64;
        for (i, s) in states.iter().enumerate() {
            let bytes = if cfg.reverse { s.read.load(Ordering::Relaxed) } else { s.written.load(Ordering::Relaxed) };
            let d = bytes - last_bytes[i];
            last_bytes[i] = bytes;
            sum += d;
            if cfg.reverse {
                println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}", s.idx + cfg.first_id, a, b, fmt_bytes(d as f64), fmt_rate(d as f64 * 8.0 / dt));
            } else {
                let ti = s.latest().unwrap_or_default();
                let r = ti.total_retrans as u64 - last_retr[i].min(ti.total_retrans as u64);
                last_retr[i] = ti.total_retrans as u64;
                sum_retr += r;
                println!(
                    "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}  {:>12}",
                    s.idx + cfg.first_id, a, b, fmt_bytes(d as f64), fmt_rate(d as f64 * 8.0 / dt), r, fmt_bytes(ti.cwnd_bytes() as f64)
                );
            }
        }
        if n > 1 {
            println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {}", a, b, fmt_bytes(sum as f64), fmt_rate(sum as f64 * 8.0 / dt),
                     if cfg.reverse { String::new() } else { format!("{sum_retr:>4}") });
        }
        t_prev = now;
        next += cfg.report_ns;
    }
}

/// Plain-text summary (iperf3's closing block plus TCP_INFO figures).
pub fn print_summary(r: &ClientResult, reverse: bool) {
    println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    println!("[ ID] Interval           Transfer     Bitrate         Retr");
    for f in &r.flows {
        println!(
            "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}  sender ({})",
            f.id, f.start_s, f.end_s, fmt_bytes(f.bytes_acked as f64),
            fmt_rate(f.bytes_acked as f64 * 8.0 / (f.end_s - f.start_s).max(1e-9)), f.retrans_segs,
            if reverse { "server" } else { "client" }
        );
        println!(
            "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}        receiver ({})",
            f.id, f.start_s, f.end_s, fmt_bytes(f.bytes_delivered as f64), fmt_rate(f.goodput_mbps() * 1e6),
            if reverse { "client" } else { "server" }
        );
    }
    for f in &r.flows {
        let mut v = f.rtt_ms.clone();
        let d = bloatlab_core::stats::Dist::of(&mut v);
        print!(
            "[{:>3}] cc {}  srtt p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  min_rtt {:.3} ms  retrans_rate {:.5}",
            f.id, if f.cc.is_empty() { "?" } else { &f.cc }, d.p50, d.p95, d.p99, f.min_rtt_ms, f.retrans_rate()
        );
        match f.fct_s {
            Some(t) => println!("  fct {t:.4} s"),
            None => println!(),
        }
    }
    if r.flows.len() > 1 {
        let tot: f64 = r.flows.iter().map(|f| f.goodput_mbps()).sum();
        let g: Vec<f64> = r.flows.iter().map(|f| f.goodput_mbps()).collect();
        println!("[SUM] goodput {}  jain fairness {:.3}", fmt_rate(tot * 1e6), bloatlab_core::stats::jain(&g));
    }
}

/// The common result for a TCP test.
pub fn output(cfg: &ClientCfg, r: &ClientResult, scenario: Value) -> Output {
    let mut o = Output::new("tcp", scenario, cfg.t0_mono);
    o.duration_s = r.duration_s;
    o.cc = r.cc.clone();
    o.flows = r.flows.clone();
    o.series = r.series.clone();
    o.meta_extra.insert("server_kernel".into(), json!(r.server_kernel));
    o.meta_extra.insert("local_ports".into(), json!(r.local_ports));
    o.meta_extra.insert("sender".into(), json!(if cfg.reverse { "server" } else { "client" }));
    o.extra.insert("problem".into(), json!(r.problem));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limited_sender_may_write_one_tick_of_bytes_per_10_ms() {
        // 5 Mbit/s: 6 250 B per 10 ms, the first write at once
        assert_eq!(app_allowance(5_000_000, None, 1_000, 1_000), 6_250);
        assert_eq!(app_allowance(5_000_000, None, 1_000, 1_000 + APP_TICK_NS - 1), 6_250);
        assert_eq!(app_allowance(5_000_000, None, 1_000, 1_000 + APP_TICK_NS), 12_500);
        assert_eq!(app_allowance(5_000_000, None, 0, 1_000_000_000 - 1), 625_000, "one second: 5 Mbit");
    }

    #[test]
    fn an_on_off_sender_writes_only_in_its_on_ticks() {
        // on 20 ms, off 30 ms: ticks 0, 1 write; 2, 3, 4 do not; 5 writes again
        let on_off = Some((2, 3));
        let at = |ms: u64| app_allowance(5_000_000, on_off, 0, ms * 1_000_000);
        assert_eq!([0, 10, 20, 40, 49, 50].map(at), [6_250, 12_500, 12_500, 12_500, 12_500, 18_750]);
    }

    #[test]
    fn on_off_needs_a_rate() {
        let mut p = params(1, true, Some(1_000_000_000), 10_000_000);
        p.onoff_ticks = Some((1, 1));
        assert!(ServerLimits::default().refuse(&p).unwrap().starts_with("--on/--off"));
    }

    #[test]
    fn a_zero_rate_is_refused_by_name() {
        let mut p = params(1, true, Some(1_000_000_000), 10_000_000);
        p.rate_bps = Some(0);
        assert!(ServerLimits::default().refuse(&p).unwrap().starts_with("-b"));
    }

    fn params(streams: usize, reverse: bool, duration_ns: Option<u64>, info_interval_ns: u64) -> Params {
        Params { cookie: 1, streams, reverse, duration_ns, bytes: None, rate_bps: None, onoff_ticks: None, cc: None, info_interval_ns, pacing: false, self_probes: false }
    }

    #[test]
    fn the_default_limits_refuse_each_excess_naming_the_clients_flag() {
        let l = ServerLimits::default();
        assert!(l.refuse(&params(4, true, Some(10_000_000_000), 10_000_000)).is_none());
        assert!(l.refuse(&params(0, false, Some(1), 10_000_000)).unwrap().starts_with("-P"));
        assert!(l.refuse(&params(129, false, Some(1), 10_000_000)).unwrap().starts_with("-P"));
        // 2^64-1 ns used to wrap to an immediate end; now it is too long
        assert!(l.refuse(&params(1, false, Some(u64::MAX), 10_000_000)).unwrap().starts_with("-t"));
        assert!(l.refuse(&params(1, false, Some(10_000_000_000), 0)).unwrap().starts_with("--info-interval"));
        assert!(l.refuse(&params(1, false, Some(10_000_000_000), 1_000_000)).unwrap().starts_with("--info-interval"));
        // 128 streams x 600 s / 10 ms = 7.68 M samples > 200 k kept per test
        assert!(l.refuse(&params(128, true, Some(600_000_000_000), 10_000_000)).unwrap().contains("samples"));
        // the server's deadline applies to byte-count tests too
        assert_eq!(l.deadline_ns(&params(1, true, None, 10_000_000)), Some(600_000_000_000));
        assert_eq!(ServerLimits::none().deadline_ns(&params(1, true, None, 1)), None);
        assert!(ServerLimits::none().refuse(&params(128, true, Some(u64::MAX), 1)).is_none());
    }

    #[test]
    fn slots_refuse_beyond_their_limit_and_free_on_drop() {
        let s = Slots::new(2);
        let a = s.try_take().unwrap();
        let _b = s.try_take().unwrap();
        assert!(s.try_take().is_none());
        drop(a);
        assert!(s.try_take().is_some());
        let unbounded = Slots::new(0);
        let v: Vec<_> = (0..1000).map(|_| unbounded.try_take().unwrap()).collect();
        assert_eq!(v.len(), 1000);
    }
}
