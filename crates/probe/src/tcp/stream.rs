//! One TCP data connection of a throughput test: its state, shared by its
//! worker and the sampler; the sending loop (as fast as the socket takes, or
//! at an application's rate); the receiving loop; the `TCP_INFO` sampler;
//! `connect()` with a congestion control set before the SYN. Both control
//! protocols (bloatlab's, `super::server`/`super::client`, and iperf3's,
//! `crate::iperf3`) run their streams here, and the self probes of
//! `crate::probewire` frame them through [`Framer`].
//!
//! Follows iperf3 3.12's data connections (`iperf_tcp.c`): 128 KiB writes,
//! and the sender's end of a test. The byte counts follow `TCP_INFO` as Linux
//! fills it (`tcp_get_info`, include/uapi/linux/tcp.h).
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
//! - [`TIMED_ACK_GRACE_NS`] = 2 s: a timed test's sender (`-t`, or the server's
//!   longest test) waits at most this long after its duration for the acks of
//!   what it wrote, then reports what was acked and resets the connection, as
//!   when its receiver asked it to stop. What was written but not acked by then
//!   is the rest of an autotuned send buffer (megabytes) draining through a
//!   bloated queue: tens of seconds that belong to no test of N seconds (iperf3
//!   does not wait for them either). 2 s: a few RTTs of any path without a
//!   bloated queue, so such a test loses nothing. The client then reports
//!   within N + 2 s plus the queue's own delay, which the reset and the
//!   server's result line wait behind.
//! - [`DRAIN_MAX_NS`] = 10 s: an interrupted receiver reads what was already
//!   sent at most this long.
//! - [`CONNECT_TIMEOUT_NS`] = 10 s: [`connect`] gives up after this long
//!   (SYN retransmissions at 1, 3 and 7 s: four SYNs lost in a row), also when
//!   a signal interrupted it and it finished asynchronously.

use crate::sys::{self, TcpInfo};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use portable_atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const BUF: usize = 128 * 1024;
pub const WAKE: Duration = Duration::from_millis(100);
pub const ACK_WAIT_POLL_NS: u64 = 200_000;
pub const ACK_WAIT_MAX_NS: u64 = 30_000_000_000;
pub const TIMED_ACK_GRACE_NS: u64 = 2_000_000_000;
/// `-b`: a rate-limited sender writes what its rate allows every 10 ms, on
/// the same clock as the simulator's application source
/// (crates/sim/src/tcp/sender.rs `APP_TICK`).
pub use bloatlab_schema::scenario::APP_TICK_NS;
/// How long an interrupted reverse-test client keeps reading the data the
/// server had already sent (its queue draining through a bottleneck) before
/// it gives up on them.
pub const DRAIN_MAX_NS: u64 = 10_000_000_000;
/// How long [`connect`] waits for the handshake.
pub const CONNECT_TIMEOUT_NS: u64 = 10_000_000_000;

/// A stream whose bulk direction carries frames instead of raw bytes (the
/// self probes, `crate::probewire::Framing`): the sending loop hands it its
/// writes and the receiving loop what it read. A trait, so that this layer
/// does not depend on the probes built on it.
pub trait Framer: Send + Sync {
    /// [`write_some`] of a framed stream: at most `chunk` bytes of data.
    fn write(&self, s: &StreamState, chunk: usize, w: &mut u64) -> io::Result<()>;
    /// What [`run_receiver`] read from a framed stream.
    fn feed(&self, s: &StreamState, data: &[u8]);
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
    pub framing: std::sync::OnceLock<Arc<dyn Framer>>,
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

/// Data bytes delivered in any order, SACKed included: `tcpi_delivered`
/// (segments, each once, the handshake's and the FIN's too) x the MSS, with
/// what came before the data removed and capped as [`data_acked`]. A bulk
/// sender's segments are full MSS, so over a window its difference is what
/// the path delivered to the byte but for a partial segment at each end.
pub fn data_delivered(ti: &TcpInfo, written: u64, pre: u64) -> u64 {
    (ti.delivered as u64 * ti.snd_mss as u64).saturating_sub(pre).min(written)
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
    // The series' first sample, before any data: the sampler thread may first run after a short
    // transfer has ended (2 MB over loopback takes about a millisecond), which left a series of
    // one sample, the final one (tests/tcp.rs failed so on a quiet machine, 2026-11-23).
    s.sample();
    let mut w = 0u64;
    let mut halted = false;
    // the test's time is up (not its byte count, not a stop): the acks get a grace only
    let mut timed_end = false;
    let app_t0 = sys::mono_ns();
    loop {
        if sys::stopped() || stop() {
            break;
        }
        if let Some(d) = deadline {
            if sys::mono_ns() >= d {
                timed_end = true;
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
        // A test whose time is up waits [`TIMED_ACK_GRACE_NS`] for its acks, then ends the same way.
        let t_give_up = sys::mono_ns() + if timed_end { TIMED_ACK_GRACE_NS } else { ACK_WAIT_MAX_NS };
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
                halted = timed_end && now > t_give_up;
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
///
/// `duration_ns`: the test's length; a reset after it (from this stream's
/// start) is how a timed sender ends when its acks did not come within
/// [`TIMED_ACK_GRACE_NS`] (see [`run_sender`]): the end, not an error. The
/// two ends start their clocks a handshake apart (the client before its
/// connect, the server at accept), far less than the grace that the reset
/// comes after the sender's deadline.
///
/// `sender_done`: the sender has said, on the control connection, that it
/// has stopped (a download: the server's results began to arrive, which it
/// sends once its senders ended; an upload: the client's [`STOP_LINE`] after
/// its senders ended). Nothing more will come then: a read that finds
/// nothing for [`WAKE`] after it is the end. The reset that ends a timed
/// sender is sent once and never retransmitted: behind a policer that drops
/// it (its bucket emptied by the load just before), the receiver waited for
/// it until its peer gave up on the results, 15 s (campaign seed 35 path 20,
/// the upload's BBR phase: 20.4 s for 3.25 planned, "the server sent no
/// results"), or forever.
///
/// [`STOP_LINE`]: super::control::STOP_LINE
pub fn run_receiver(
    s: &StreamState,
    stop: &dyn Fn() -> bool,
    drain: bool,
    expect: Option<u64>,
    duration_ns: Option<u64>,
    ended: &dyn Fn() -> bool,
    sender_done: &dyn Fn() -> bool,
) -> Outcome {
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
            Err(e) if is_timeout(&e) => {
                if sender_done() && sys::mono_ns().saturating_sub(last) >= WAKE.as_nanos() as u64 {
                    break;
                }
            }
            // we asked the sender to stop (a signal, or `ended`: the end of a phase decided while it ran,
            // crate::live), or the test's time is up: it ends the connection with a reset once it has
            // stopped (run_sender), and what reached us before it is all there is
            Err(e)
                if e.raw_os_error() == Some(libc::ECONNRESET)
                    && (stopped_at.is_some() || ended() || duration_ns.is_some_and(|d| sys::mono_ns() >= s.start_mono.saturating_add(d))) =>
            {
                break
            }
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
    run_sampler_growing(&Mutex::new(streams), interval_ns, &AtomicBool::new(true))
}

/// [`run_sampler`] over streams that arrive while it runs (a server's, each
/// served from its arrival): until `closed` (no more will come) and every
/// stream in `streams` is done.
pub fn run_sampler_growing(streams: &Mutex<Vec<Arc<StreamState>>>, interval_ns: u64, closed: &AtomicBool) {
    let mut next = sys::mono_ns();
    loop {
        // read before the streams: a stream pushed before `closed` is set is then seen below
        let last_round = closed.load(Ordering::SeqCst);
        let v: Vec<Arc<StreamState>> = streams.lock().unwrap().clone();
        let mut live = 0;
        for s in &v {
            if !s.done.load(Ordering::Relaxed) {
                live += 1;
                s.sample();
            }
        }
        if (last_round && live == 0) || sys::stopped() {
            return;
        }
        // the next sample one interval after this one's due time, or now where the samples fell behind
        next = (next + interval_ns).max(sys::mono_ns());
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
        let tv = libc::timeval { tv_sec: (CONNECT_TIMEOUT_NS / 1_000_000_000) as _, tv_usec: 0 };
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &tv as *const _ as *const libc::c_void, std::mem::size_of::<libc::timeval>() as u32);
        let give_up = sys::mono_ns() + CONNECT_TIMEOUT_NS;
        let (sa, len) = sockaddr_of(&addr);
        if libc::connect(fd, &sa as *const _ as *const libc::sockaddr, len) != 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // connect(2): EINTR, "the system call was interrupted by a signal that was
                // caught", and the connection "will be established asynchronously"; calling
                // connect() again is not portable (EALREADY): wait until the socket is writable
                // and read SO_ERROR, as after EINPROGRESS on a non-blocking socket. Signals that
                // interrupt: our SIGINT/SIGTERM (installed without SA_RESTART), and any stop
                // signal followed by SIGCONT, since SO_SNDTIMEO is set (signal(7)).
                Some(libc::EINTR) => finish_connect(&stream, give_up).map_err(|e| format!("connect to {addr}: {e}"))?,
                // a blocking connect() whose SO_SNDTIMEO passed returns EINPROGRESS (inet_stream_connect)
                Some(libc::EINPROGRESS) => return Err(format!("connect to {addr}: no answer within {} s", CONNECT_TIMEOUT_NS / 1_000_000_000)),
                _ => return Err(format!("connect to {addr}: {e}")),
            }
        }
        Ok(stream)
    }
}

/// The rest of a `connect()` that a signal interrupted: wait (again after
/// each further signal) until the socket is writable, which it becomes when
/// the handshake succeeds or fails, then SO_ERROR says which. Gives up at
/// `give_up` (CLOCK_MONOTONIC ns), as the blocking call would have.
fn finish_connect(s: &TcpStream, give_up: u64) -> io::Result<()> {
    loop {
        let now = sys::mono_ns();
        if now >= give_up {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {} s", CONNECT_TIMEOUT_NS / 1_000_000_000)));
        }
        // false: the time passed, or another signal interrupted ppoll (EINTR): look again
        if sys::wait_writable(s.as_raw_fd(), give_up - now) {
            break;
        }
    }
    match s.take_error()? {
        Some(e) => Err(e),
        None => Ok(()),
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

/// Spawn a named thread; an error (no threads left) instead of a panic.
pub(crate) fn spawn<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
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
    fn a_receiver_whose_sender_said_it_ended_stops_at_its_first_silence_without_the_reset() {
        // a sender that wrote 5000 B and then went silent without a FIN or a reset (its reset lost):
        // told that the sender ended, the receiver reads all 5000 B and ends, not an error
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (sock, _) = l.accept().unwrap();
        peer.write_all(&[7u8; 5000]).unwrap();
        let s = StreamState::new(0, sock, sys::mono_ns(), 0);
        let out = run_receiver(&s, &|| false, false, None, Some(1), &|| false, &|| true);
        assert_eq!((s.read.load(Ordering::Relaxed), out.error), (5000, None));
        // not told: it is still waiting after 3 silent read timeouts (stopped from outside)
        let silent = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (acc, _) = l.accept().unwrap();
        let s = StreamState::new(1, acc, sys::mono_ns(), 0);
        let t = sys::mono_ns();
        let stop_at = t + 3 * WAKE.as_nanos() as u64;
        let out = run_receiver(&s, &|| sys::mono_ns() >= stop_at, false, None, Some(1), &|| false, &|| false);
        assert_eq!(out.error.as_deref(), Some("interrupted"));
        assert!(sys::mono_ns() >= stop_at);
        drop((silent, peer));
    }

    #[test]
    fn an_on_off_sender_writes_only_in_its_on_ticks() {
        // on 20 ms, off 30 ms: ticks 0, 1 write; 2, 3, 4 do not; 5 writes again
        let on_off = Some((2, 3));
        let at = |ms: u64| app_allowance(5_000_000, on_off, 0, ms * 1_000_000);
        assert_eq!([0, 10, 20, 40, 49, 50].map(at), [6_250, 12_500, 12_500, 12_500, 12_500, 18_750]);
    }
}
