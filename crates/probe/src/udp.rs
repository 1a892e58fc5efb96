//! UDP request/response latency: the echo server and the client.
//!
//! Model: the client sends numbered requests ([`crate::wire`]) either one at
//! a time (ping-pong, `--interval 0`, like `sockperf ping-pong`) or on a fixed
//! schedule (`--interval 10ms`, like `irtt`); the server returns each request
//! as a reply of the same size carrying its receive and send timestamps.
//!
//! RTT = kernel receive time of the reply (SO_TIMESTAMPNS, CLOCK_REALTIME)
//! minus the user-space send time of the request (same clock, read just
//! before `send`). Without kernel timestamps the user-space receive time is
//! used. Both are recorded; `timestamps` in the result says which one the
//! headline numbers use.
//!
//! Counters follow RFC 4737 / RFC 5481 vocabulary: a reply whose sequence
//! number is lower than the highest already received is *reordered*; a second
//! reply to one request is a *duplicate*; *IPDV* is |RTT(n) - RTT(n-1)| for
//! consecutive answered requests; *loss* counts requests never answered by
//! the end of the drain wait.
//!
//! Constants:
//! - [`SPIN_BELOW_NS`] = 30 µs: waits shorter than this spin instead of
//!   sleeping; a sleep+wakeup on this machine costs ≈ 10-50 µs, so sleeping
//!   would make a 100 k packet/s schedule late.
//! - [`WAKE_NS`] = 100 ms: blocking calls wake at least this often to notice
//!   Ctrl-C.
//! - drain wait after the last request: 3 × the largest RTT seen, clamped to
//!   [50 ms, `--timeout`]; a reply later than that counts as lost.

use crate::report::{fmt_us, Latency, ProbeRaw};
use crate::sys;
use crate::{train, train_up};
use crate::wire::{self, Key, FLAG_AUTH, FLAG_TS};
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

pub const SPIN_BELOW_NS: u64 = 30_000;
pub const WAKE_NS: u64 = 100_000_000;

// ---------------------------------------------------------------- server

#[derive(Debug, Clone)]
pub struct ServerCfg {
    pub secret: Option<Vec<u8>>,
    /// per-client (source IP) packet rate limit, packets/s; 0 = none
    pub max_pps: u64,
    /// per-client session duration limit, ns; 0 = none. A client idle for
    /// [`CLIENT_IDLE_NS`] starts a new session.
    pub max_duration_ns: u64,
    pub verbose: bool,
    /// spin on the socket (non-blocking reads) instead of sleeping in recvmsg
    pub busy_poll: bool,
}

/// A client silent this long is forgotten (its limits start afresh).
pub const CLIENT_IDLE_NS: u64 = 10_000_000_000;
/// At most this many clients are tracked (bounded memory under spoofed
/// floods). The table has two generations of `MAX_CLIENTS / 2`: when the
/// current one fills, it becomes the previous one and the oldest is dropped;
/// a client seen again is moved to the current one. So a flood of one-packet
/// sources only ages out other one-packet sources quickly, an active client
/// keeps its state, and a new client is never refused for want of room
/// (before, 10,300 spoofed sources locked new clients out for 10 s).
pub const MAX_CLIENTS: usize = 10_000;

/// A client as its limits see it: its address and port and the session id
/// it chose (32 random bits in every request). Keyed so, a packet spoofed
/// from a victim's address cannot spend the victim's rate or end its session:
/// an off-path sender does not know the victim's port and session id (as a
/// cookie it would have to echo), and the victim's next session is a new key
/// with fresh limits. (Keyed by address alone, 50 spoofed packets a second
/// locked a victim out, and one every 10 s held its 10-minute session limit.)
type ClientKey = (SocketAddr, u32);

/// The two-generation client table (see [`MAX_CLIENTS`]).
#[derive(Default)]
struct Clients {
    cur: HashMap<ClientKey, ClientState>,
    prev: HashMap<ClientKey, ClientState>,
}

impl Clients {
    fn get(&mut self, ip: ClientKey, fresh: impl FnOnce() -> ClientState) -> &mut ClientState {
        if !self.cur.contains_key(&ip) {
            let c = self.prev.remove(&ip).unwrap_or_else(fresh);
            if self.cur.len() >= MAX_CLIENTS / 2 {
                self.prev = std::mem::take(&mut self.cur);
            }
            self.cur.insert(ip, c);
        }
        self.cur.get_mut(&ip).expect("just inserted")
    }
    #[cfg(test)]
    fn len(&self) -> usize {
        self.cur.len() + self.prev.len()
    }
}

#[derive(Debug, Default, Clone)]
pub struct ServerStats {
    pub replied: u64,
    pub ignored: u64,
    pub ignored_by: HashMap<String, u64>,
    pub rate_limited: u64,
    pub duration_limited: u64,
    /// packet trains sent, cookies handed out, train requests refused ([`crate::train`])
    pub trains: u64,
    pub train_cookies: u64,
    pub trains_refused: u64,
    /// up trains begun (slots given), their packets recorded, reports answered ([`crate::train_up`])
    pub up_trains: u64,
    pub up_packets: u64,
    pub up_reports: u64,
}

struct ClientState {
    first_ns: u64,
    last_ns: u64,
    tokens: f64,
}

/// Serve echo requests on `sock` until Ctrl-C/SIGTERM ([`sys::STOP`]) or
/// `stop` returns true. Never sends more bytes than it received, but for
/// packet trains to a client that echoed its cookie ([`crate::train`]);
/// receives the up trains of clients that did ([`crate::train_up`]).
pub fn serve(sock: &UdpSocket, cfg: &ServerCfg, stop: &dyn Fn() -> bool) -> io::Result<ServerStats> {
    let fd = sock.as_raw_fd();
    let kernel_ts = sys::enable_rx_timestamps(fd);
    sys::set_buffers(fd, 4 << 20);
    // room for the largest up train where the kernel lets us past net.core.rmem_max (CAP_NET_ADMIN), and the
    // socket's drop counter: an up train's report says what the socket dropped while it arrived
    sys::force_rcvbuf(fd, train_up::UP_RCVBUF);
    let counts_drops = sys::enable_rxq_ovfl(fd);
    let mut drops = 0u32;
    sock.set_read_timeout(Some(Duration::from_nanos(WAKE_NS)))?;
    let key = cfg.secret.as_deref().map(Key::new);
    let mut clients = Clients::default();
    let mut trains = train_up::Trains::new();
    let mut st = ServerStats::default();
    let mut buf = vec![0u8; 65536];
    let rflags = if cfg.busy_poll {
        sys::set_busy_poll(fd, 50);
        libc::MSG_DONTWAIT
    } else {
        0
    };
    while !sys::stopped() && !stop() {
        let r = match sys::recv_ts(fd, &mut buf, rflags) {
            Ok(r) => r,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {
                if trains.up_in_flight() > 0 {
                    trains.expire_up(sys::mono_ns());
                }
                std::hint::spin_loop();
                continue;
            }
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => continue,
            Err(e) => return Err(e),
        };
        let rx_ns = if kernel_ts { r.kernel_ns.unwrap_or_else(sys::real_ns) } else { sys::real_ns() };
        // the socket's count of datagrams dropped so far (the kernel attaches it once there is one)
        if let Some(d) = r.drops {
            drops = d;
        }
        let Some(from) = r.from else { continue };
        let len = r.len;
        let (session, kind) = match wire::parse(&buf[..len], key.as_ref()) {
            // an up train's packet: recorded before the per-client limits (a train is a burst), only for its slot
            Ok(p) if p.kind == wire::Kind::TrainData => {
                let kernel = kernel_ts && r.kernel_ns.is_some();
                match trains.up_data(from, p.session, p.seq, len, rx_ns, kernel, sys::mono_ns()) {
                    train_up::UpData::Recorded => st.up_packets += 1,
                    train_up::UpData::Duplicate => {}
                    train_up::UpData::Ignored => {
                        st.ignored += 1;
                        *st.ignored_by.entry("TrainDataNoSlot".into()).or_default() += 1;
                    }
                }
                continue;
            }
            Ok(p) if matches!(p.kind, wire::Kind::Request | wire::Kind::TrainRequest | wire::Kind::UpRequest) => (p.session, p.kind),
            Ok(_) => {
                st.ignored += 1;
                *st.ignored_by.entry("NotARequest".into()).or_default() += 1;
                continue;
            }
            Err(e) => {
                st.ignored += 1;
                *st.ignored_by.entry(e.to_string()).or_default() += 1;
                continue;
            }
        };
        // per-client limits
        let now = sys::mono_ns();
        if cfg.max_pps > 0 || cfg.max_duration_ns > 0 {
            let c = clients.get((from, session), || ClientState { first_ns: now, last_ns: now, tokens: cfg.max_pps as f64 });
            if now - c.last_ns >= CLIENT_IDLE_NS {
                *c = ClientState { first_ns: now, last_ns: now, tokens: cfg.max_pps as f64 };
            }
            if cfg.max_pps > 0 {
                // token bucket: max_pps per second, burst of one second's worth
                c.tokens = (c.tokens + (now - c.last_ns) as f64 * 1e-9 * cfg.max_pps as f64).min(cfg.max_pps as f64);
            }
            c.last_ns = now;
            if cfg.max_duration_ns > 0 && now - c.first_ns > cfg.max_duration_ns {
                st.duration_limited += 1;
                continue;
            }
            if cfg.max_pps > 0 {
                if c.tokens < 1.0 {
                    st.rate_limited += 1;
                    continue;
                }
                c.tokens -= 1.0;
            }
        }
        if kind == wire::Kind::TrainRequest || kind == wire::Kind::UpRequest {
            let up = kind == wire::Kind::UpRequest;
            let h = if up {
                trains.handle_up(sock, from, session, &buf[..len], key.as_ref(), now, counts_drops.then_some(drops))
            } else {
                trains.handle(sock, from, session, &buf[..len], key.as_ref(), now)
            };
            match h {
                train::Handled::Started if up => st.up_trains += 1,
                train::Handled::Started => st.trains += 1,
                train::Handled::Cookie => st.train_cookies += 1,
                train::Handled::Refused(_) => st.trains_refused += 1,
                train::Handled::Reported => st.up_reports += 1,
                train::Handled::Freed | train::Handled::NoSlot => {}
                train::Handled::Malformed => {
                    st.ignored += 1;
                    *st.ignored_by.entry(if up { "BadUpRequest" } else { "BadTrainRequest" }.into()).or_default() += 1;
                }
            }
            continue;
        }
        let reply = &mut buf[..len];
        wire::make_reply(reply, rx_ns, sys::real_ns, key.as_ref());
        debug_assert_eq!(reply.len(), len);
        match sock.send_to(reply, from) {
            Ok(_) => st.replied += 1,
            Err(e) if cfg.verbose => eprintln!("udp server: send to {from}: {e}"),
            Err(_) => {}
        }
    }
    Ok(st)
}

// ---------------------------------------------------------------- client

#[derive(Debug, Clone)]
pub struct ClientCfg {
    pub addr: SocketAddr,
    /// stop after this many requests (None: use duration_ns)
    pub count: Option<u64>,
    pub duration_ns: Option<u64>,
    /// 0 = ping-pong (next request when the reply arrives or times out)
    pub interval_ns: u64,
    pub size: usize,
    pub busy_poll: bool,
    pub secret: Option<Vec<u8>>,
    /// how long a reply may take before the request is given up (ping-pong
    /// moves on; later replies still count)
    pub timeout_ns: u64,
    /// stop when nothing came back for this long (server gone)
    pub give_up_ns: u64,
    /// interval report period, 0 = none
    pub report_ns: u64,
    /// CLOCK_MONOTONIC at the run's t = 0
    pub t0_mono: u64,
    /// external stop (e.g. the load test's phase end)
    pub stop_at_mono: Option<u64>,
    /// a phase whose end is decided while it runs (`load --until-stable`):
    /// each round trip goes there as it is answered, and sending stops at its end
    pub live: Option<std::sync::Arc<crate::live::Live>>,
}

/// Verbatim echoes of our own requests, with no real reply, after which the
/// client stops: the far end is a plain UDP echo server (`udp client` then
/// measures it with `--echo`, issue 14 §1).
pub const ECHO_DETECT: u64 = 3;

#[derive(Debug, Clone, Default)]
pub struct ClientResult {
    pub sent: u64,
    pub received: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub mismatched: u64,
    /// packets that were not a reply of this session (stale, garbage)
    pub foreign: u64,
    /// of those, our own requests sent back verbatim: a plain UDP echo server
    /// (`recvfrom` then `sendto`), not `bloatlab-probe server`
    pub echoed: u64,
    /// RTT of every answered request (µs), in arrival order, less the
    /// server's processing where it stamped it (irtt's RTT)
    pub rtt_us: Vec<f64>,
    /// the same measured with user-space receive times (µs), less the same
    pub user_rtt_us: Vec<f64>,
    /// send time of each answered request, s since t0
    pub t_s: Vec<f64>,
    /// server processing time (µs), from the server's timestamps
    pub server_us: Vec<f64>,
    /// server rx - client tx and client rx - server tx (ns, includes the
    /// unknown clock offset; its changes are one-way delay changes)
    pub owd_up_ns: Vec<i64>,
    pub owd_down_ns: Vec<i64>,
    pub ipdv_us: Vec<f64>,
    pub kernel_ts: bool,
    pub server_ts: bool,
    pub stop_reason: Option<String>,
    pub elapsed_s: f64,
    /// how late requests left compared with their schedule (µs)
    pub send_late_us: Vec<f64>,
    /// the unanswered requests in runs of consecutive sequence numbers:
    /// `(run length, how many such runs)`, shortest first ([`loss_runs`]).
    /// Independent losses (a path's random loss) come mostly alone; a pause
    /// or an overflowing queue takes several in a row
    pub loss_runs: Vec<(u64, u64)>,
}

/// The runs of consecutive unanswered requests among the first `sent`
/// (`answered[seq]` false: lost), as `(length, count)` pairs by length.
pub fn loss_runs(answered: impl IntoIterator<Item = bool>) -> Vec<(u64, u64)> {
    let mut by_len = std::collections::BTreeMap::new();
    let mut run = 0u64;
    for ok in answered.into_iter().chain(std::iter::once(true)) {
        if ok {
            if run > 0 {
                *by_len.entry(run).or_insert(0u64) += 1;
            }
            run = 0;
        } else {
            run += 1;
        }
    }
    by_len.into_iter().collect()
}

/// The round trip `raw_ns` less the server's processing (its receive-to-send
/// time, from its own stamps `(rx, tx)` in the reply), as irtt's RTT
/// (recorder.go, `RoundTripData.RTT`): the time a request spent in the
/// server's socket queue and waiting for its thread is the server host's, not
/// the path's. Under a load the server's echo thread shares its CPU with the
/// flows' senders: on this 2-core VM at load 8 its processing was 41 µs at p50
/// and 580 µs at p95 of a 639-µs loopback p95. Where the processing exceeds the
/// round trip (both stamps are the server's clock: one went wrong) nothing is
/// taken off, as irtt's comment has it. Without stamps (an old server) the
/// round trip is as measured.
pub fn rtt_less_server(raw_ns: u64, server_ts: Option<(u64, u64)>) -> u64 {
    let server_ns = server_ts.map(|(srx, stx)| stx.saturating_sub(srx)).unwrap_or(0);
    if server_ns <= raw_ns {
        raw_ns - server_ns
    } else {
        raw_ns
    }
}

/// Validate the client configuration (sizes that cannot hold the chosen
/// options are rejected naming `--size`).
pub fn flags_for(size: usize, secret: bool) -> Result<u8, String> {
    let mut flags = if secret { FLAG_AUTH } else { 0 };
    if size < wire::min_len(flags) {
        return Err(format!("--size {size}: an authenticated request needs at least {} bytes", wire::min_len(flags)));
    }
    if size >= wire::min_len(flags | FLAG_TS) {
        flags |= FLAG_TS;
    }
    Ok(flags)
}

pub fn run_client(cfg: &ClientCfg) -> Result<ClientResult, String> {
    let bind: SocketAddr = if cfg.addr.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
    let sock = UdpSocket::bind(bind).map_err(|e| format!("udp bind: {e}"))?;
    sock.connect(cfg.addr).map_err(|e| format!("udp connect {}: {e}", cfg.addr))?;
    let fd = sock.as_raw_fd();
    let kernel_ts = sys::enable_rx_timestamps(fd);
    sys::set_buffers(fd, 4 << 20);
    if cfg.busy_poll {
        sys::set_busy_poll(fd, 50);
    }
    sock.set_read_timeout(Some(Duration::from_nanos(WAKE_NS.min(cfg.timeout_ns.max(1))))).ok();
    let key = cfg.secret.as_deref().map(Key::new);
    let flags = flags_for(cfg.size, key.is_some())?;
    let session = sys::random_u64() as u32;
    let mut c = Client {
        cfg,
        sock: &sock,
        key,
        flags,
        session,
        tx_real: Vec::with_capacity(cfg.count.unwrap_or(1 << 16).min(1 << 24) as usize),
        rtt_by_seq: Vec::new(),
        res: ClientResult { kernel_ts, server_ts: flags & FLAG_TS != 0, ..Default::default() },
        max_seq: None,
        last_reply_mono: sys::mono_ns(),
        scratch: Vec::new(),
        buf: vec![0u8; 65536],
        report_next: 0,
        report_from: (0, 0, 0),
        max_rtt_ns: 0,
        t0_real: (sys::real_ns() as i128 - sys::mono_ns() as i128 + cfg.t0_mono as i128) as u64,
    };
    c.run();
    Ok(c.res)
}

struct Client<'a> {
    cfg: &'a ClientCfg,
    sock: &'a UdpSocket,
    key: Option<Key>,
    flags: u8,
    session: u32,
    tx_real: Vec<u64>,
    rtt_by_seq: Vec<f32>,
    res: ClientResult,
    max_seq: Option<u64>,
    last_reply_mono: u64,
    scratch: Vec<u8>,
    buf: Vec<u8>,
    report_next: u64,
    /// (sent, received, rtt index) at the last report
    report_from: (u64, u64, usize),
    max_rtt_ns: u64,
    /// CLOCK_REALTIME at t0 (requests are stamped with the realtime clock;
    /// the series axis is monotonic; both advance together during a run)
    t0_real: u64,
}

impl Client<'_> {
    fn sending_done(&self, now: u64, start: u64) -> bool {
        if let Some(n) = self.cfg.count {
            if self.res.sent >= n {
                return true;
            }
        }
        if let Some(d) = self.cfg.duration_ns {
            if now - start >= d {
                return true;
            }
        }
        if let Some(s) = self.cfg.stop_at_mono {
            if now >= s {
                return true;
            }
        }
        self.cfg.live.as_ref().is_some_and(|l| now >= l.end())
    }

    fn send(&mut self) {
        let seq = self.res.sent;
        let mut b = [0u8; wire::MAX_PACKET];
        wire::build_request(&mut b, self.cfg.size, self.flags, self.session, seq, self.key.as_ref());
        let tx = sys::real_ns();
        self.tx_real.push(tx);
        self.rtt_by_seq.push(f32::NAN);
        self.res.sent += 1;
        // a refused send (ICMP unreachable from an earlier packet) is a lost request
        let _ = self.sock.send(&b[..self.cfg.size]);
    }

    /// Receive one datagram (non-blocking when `dontwait`); returns whether
    /// one was processed.
    fn recv_one(&mut self, dontwait: bool) -> bool {
        let fd = self.sock.as_raw_fd();
        let flags = if dontwait { libc::MSG_DONTWAIT } else { 0 };
        let r = match sys::recv_ts(fd, &mut self.buf, flags) {
            Ok(r) => r,
            Err(_) => return false,
        };
        let user_rx = sys::real_ns();
        let rx = if self.res.kernel_ts { r.kernel_ns.unwrap_or(user_rx) } else { user_rx };
        let p = match wire::parse(&self.buf[..r.len], self.key.as_ref()) {
            Ok(p) if p.kind == wire::Kind::Reply && p.session == self.session && p.seq < self.res.sent => p,
            Ok(p) => {
                if p.kind == wire::Kind::Request && p.session == self.session && r.len == self.cfg.size {
                    self.res.echoed += 1;
                }
                self.res.foreign += 1;
                return true;
            }
            _ => {
                self.res.foreign += 1;
                return true;
            }
        };
        let seq = p.seq as usize;
        if !wire::check_pattern(p.payload, self.session, p.seq, &mut self.scratch) || r.len != self.cfg.size {
            self.res.mismatched += 1;
            return true;
        }
        if !self.rtt_by_seq[seq].is_nan() {
            self.res.duplicates += 1;
            return true;
        }
        let tx = self.tx_real[seq];
        let raw_ns = rx.saturating_sub(tx);
        let rtt_ns = rtt_less_server(raw_ns, p.server_ts);
        self.max_rtt_ns = self.max_rtt_ns.max(rtt_ns);
        let rtt_us = rtt_ns as f64 / 1e3;
        self.rtt_by_seq[seq] = rtt_us as f32;
        self.res.received += 1;
        self.res.rtt_us.push(rtt_us);
        if let Some(l) = &self.cfg.live {
            l.push_rtt(rtt_us / 1e3);
        }
        self.res.user_rtt_us.push(user_rx.saturating_sub(tx).saturating_sub(raw_ns - rtt_ns) as f64 / 1e3);
        // t of the request: its send time on the monotonic axis
        let t_s = (tx as i128 - self.t0_real as i128) as f64 / 1e9;
        self.res.t_s.push(t_s);
        if let Some((srx, stx)) = p.server_ts {
            self.res.server_us.push(stx.saturating_sub(srx) as f64 / 1e3);
            self.res.owd_up_ns.push(srx as i64 - tx as i64);
            self.res.owd_down_ns.push(rx as i64 - stx as i64);
        }
        if seq > 0 && !self.rtt_by_seq[seq - 1].is_nan() {
            self.res.ipdv_us.push((rtt_us - self.rtt_by_seq[seq - 1] as f64).abs());
        }
        if seq + 1 < self.rtt_by_seq.len() && !self.rtt_by_seq[seq + 1].is_nan() {
            self.res.ipdv_us.push((rtt_us - self.rtt_by_seq[seq + 1] as f64).abs());
        }
        match self.max_seq {
            Some(m) if p.seq < m => self.res.reordered += 1,
            _ => self.max_seq = Some(p.seq),
        }
        self.last_reply_mono = sys::mono_ns();
        true
    }

    fn maybe_report(&mut self, now: u64) {
        if self.cfg.report_ns == 0 || now < self.report_next {
            return;
        }
        let (s0, r0, i0) = self.report_from;
        let t1 = (now - self.cfg.t0_mono) as f64 / 1e9;
        let t0 = t1 - self.cfg.report_ns as f64 / 1e9;
        if self.report_next > 0 {
            let mut v = self.res.rtt_us[i0..].to_vec();
            let l = Latency::of(&mut v);
            println!(
                "[UDP] {:6.2}-{:<6.2} sec  sent {:>7}  recv {:>7}  rtt p50 {:>9}  p99 {:>9}  max {:>9}",
                t0.max(0.0), t1, self.res.sent - s0, self.res.received - r0, fmt_us(l.p50), fmt_us(l.p99), fmt_us(l.max)
            );
        }
        self.report_from = (self.res.sent, self.res.received, self.res.rtt_us.len());
        self.report_next = if self.report_next == 0 { now + self.cfg.report_ns } else { self.report_next + self.cfg.report_ns };
    }

    fn run(&mut self) {
        let start = sys::mono_ns();
        self.last_reply_mono = start;
        self.maybe_report(start);
        let mut next_send = start;
        let pingpong = self.cfg.interval_ns == 0;
        loop {
            if sys::stopped() {
                self.res.stop_reason = Some("interrupted".into());
                break;
            }
            let now = sys::mono_ns();
            self.maybe_report(now);
            if self.sending_done(now, start) {
                break;
            }
            if self.res.received == 0 && self.res.echoed >= ECHO_DETECT {
                self.res.stop_reason = Some(format!("{} echoes our requests verbatim: a plain UDP echo server (use --echo)", self.cfg.addr));
                break;
            }
            if self.res.sent > 0 && now - self.last_reply_mono > self.cfg.give_up_ns {
                let t = (self.last_reply_mono - self.cfg.t0_mono) as f64 / 1e9;
                self.res.stop_reason = Some(if self.res.received == 0 {
                    format!("no reply from {} (is the server running?)", self.cfg.addr)
                } else {
                    format!("server stopped answering at t={t:.2}s")
                });
                break;
            }
            if pingpong {
                let seq = self.res.sent;
                self.send();
                let deadline = sys::mono_ns() + self.cfg.timeout_ns;
                // wait for this request's reply (or its timeout)
                while self.rtt_by_seq[seq as usize].is_nan() && !sys::stopped() {
                    let n = sys::mono_ns();
                    if n >= deadline {
                        break;
                    }
                    if self.cfg.busy_poll {
                        self.recv_one(true);
                    } else {
                        self.recv_one(false);
                    }
                }
            } else if now >= next_send {
                self.res.send_late_us.push((now - next_send) as f64 / 1e3);
                self.send();
                next_send += self.cfg.interval_ns;
            } else {
                let wait = next_send - now;
                if self.cfg.busy_poll || wait < SPIN_BELOW_NS {
                    self.recv_one(true);
                } else if sys::wait_readable(self.sock.as_raw_fd(), (wait - SPIN_BELOW_NS / 2).min(WAKE_NS)) {
                    while self.recv_one(true) {}
                }
            }
        }
        if !sys::stopped() && self.res.received < self.res.sent && self.res.stop_reason.is_none() {
            self.drain();
        }
        if sys::stopped() {
            self.forget_in_flight();
        }
        let sent = (self.res.sent as usize).min(self.rtt_by_seq.len());
        self.res.loss_runs = loss_runs(self.rtt_by_seq[..sent].iter().map(|r| !r.is_nan()));
        self.res.elapsed_s = (sys::mono_ns() - start) as f64 / 1e9;
    }

    /// Replies still in flight after the last request: those of requests sent
    /// less than a grace ago (3 of the largest round trip seen, 50 ms to
    /// `--timeout`). A request unanswered for longer is lost, not late: before,
    /// one lost anywhere in the run held the drain for the whole grace after
    /// the last send, ~1 s of most loaded phases of `load` on a path that
    /// drops (an AQM, a policer, a random loss: 0.65-1.16 s between the
    /// results and the exit, campaign seed 52). Where no reply came back yet
    /// there is no round trip to scale the grace by: a request is then waited
    /// for as long as `--timeout` says. The 50-ms floor ended `load`'s idle
    /// phase 50 ms after its last probe, and `measure` then said no probe came
    /// back within the 2-s timeout, on paths whose replies took 0.3-0.9 s
    /// behind other stations' downloads (campaign seed 154 path 10: the loss
    /// stream's round trips 541 ms at the median just before; seed 143 paths
    /// 44 and 51: a phase that ended 0.29 s after it began).
    fn drain(&mut self) {
        let grace = if self.max_rtt_ns == 0 {
            self.cfg.timeout_ns.max(50_000_000)
        } else {
            (3 * self.max_rtt_ns).clamp(50_000_000, self.cfg.timeout_ns.max(50_000_000))
        };
        while let Some(due) = self.latest_unanswered_tx().map(|tx| tx + grace) {
            let n = sys::real_ns();
            if n >= due || sys::stopped() {
                break;
            }
            if sys::wait_readable(self.sock.as_raw_fd(), (due - n).min(WAKE_NS)) {
                while self.recv_one(true) {}
            }
        }
    }

    /// When the latest request still unanswered was sent (the real clock, as
    /// `tx_real`), if any.
    fn latest_unanswered_tx(&self) -> Option<u64> {
        (0..self.rtt_by_seq.len()).rev().find(|&s| self.rtt_by_seq[s].is_nan()).and_then(|s| self.tx_real.get(s).copied())
    }

    /// Interrupted (Ctrl-C): the unanswered requests sent less than
    /// `--timeout` ago were in flight, not lost (a reply could still come):
    /// they leave the count of requests sent, as if never sent. Before, one
    /// such request of a 35-request run on a lossless 100-ms path read as
    /// "lost 1 (2.857 %)".
    fn forget_in_flight(&mut self) {
        let now = sys::real_ns();
        let mut in_flight = 0;
        for seq in (0..self.res.sent as usize).rev() {
            let Some(&tx) = self.tx_real.get(seq) else { continue };
            if now.saturating_sub(tx) >= self.cfg.timeout_ns {
                break; // requests go out in order: the earlier ones are due
            }
            if self.rtt_by_seq.get(seq).is_none_or(|r| r.is_nan()) {
                in_flight += 1;
            }
        }
        self.res.sent -= in_flight;
    }
}

/// The server's clock minus the client's, estimated from the exchange with
/// the smallest round trip net of the server's time, by NTP's on-wire
/// calculation (RFC 5905 §8): with t1 client send, t2 server receive, t3
/// server send, t4 client receive, offset θ = ((t2 − t1) + (t3 − t4)) / 2 and
/// its error is at most δ / 2, δ = (t4 − t1) − (t3 − t2) (exact when that
/// exchange was symmetric). One-way delays are then t2 − t1 − θ (up) and
/// t4 − t3 + θ (down); they sum to the RTT net of the server's time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offset {
    pub offset_ns: f64,
    /// |error| ≤ this (δ/2 of the chosen exchange)
    pub bound_ns: f64,
}

impl Offset {
    /// None without server timestamps.
    pub fn estimate(owd_up_ns: &[i64], owd_down_ns: &[i64]) -> Option<Offset> {
        // t2 − t1 = up, t4 − t3 = down: δ = up + down, θ = (up − down) / 2
        owd_up_ns
            .iter()
            .zip(owd_down_ns)
            .map(|(&u, &d)| (u as f64 + d as f64, (u as f64 - d as f64) / 2.0))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(delta, theta)| Offset { offset_ns: theta, bound_ns: delta.max(0.0) / 2.0 })
    }
    /// The clocks agree within the estimate's error: synchronised as far as we can tell.
    pub fn synchronised(&self) -> bool {
        self.offset_ns.abs() <= self.bound_ns
    }
    /// One-way delays (µs) up and down, corrected by this offset.
    pub fn one_way_us(&self, owd_up_ns: &[i64], owd_down_ns: &[i64]) -> (Vec<f64>, Vec<f64>) {
        (
            owd_up_ns.iter().map(|&u| (u as f64 - self.offset_ns) / 1e3).collect(),
            owd_down_ns.iter().map(|&d| (d as f64 + self.offset_ns) / 1e3).collect(),
        )
    }
    /// How the one-way figures were made, for the reader.
    pub fn label(&self) -> String {
        if self.synchronised() {
            format!(
                "clocks agree within the estimate's error (offset {:+.1} us, bound +/- {:.1} us): one-way delays from the timestamps, corrected by that offset",
                self.offset_ns / 1e3,
                self.bound_ns / 1e3
            )
        } else {
            format!(
                "clocks NOT synchronised: server clock {:+.1} us from ours, estimated (NTP on-wire, min-RTT exchange, +/- {:.1} us); one-way delays are corrected by that estimate and assume the fastest exchange was symmetric",
                self.offset_ns / 1e3,
                self.bound_ns / 1e3
            )
        }
    }
}

impl ClientResult {
    pub fn probe_raw(&self, id: usize) -> ProbeRaw {
        let mut v = self.rtt_us.clone();
        ProbeRaw {
            id,
            kind: "udp".into(),
            sent: self.sent,
            received: self.received,
            rtt: Latency::of(&mut v),
            t: self.t_s.clone(),
            rtt_ms: self.rtt_us.iter().map(|x| x / 1e3).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client config toward a socket that never answers (the drain tests' peer).
    fn silent_cfg(addr: SocketAddr, timeout_ns: u64) -> ClientCfg {
        ClientCfg {
            addr,
            count: None,
            duration_ns: Some(1),
            interval_ns: 10_000_000,
            size: 64,
            busy_poll: false,
            secret: None,
            timeout_ns,
            give_up_ns: 5_000_000_000,
            report_ns: 0,
            t0_mono: sys::mono_ns(),
            stop_at_mono: None,
            live: None,
        }
    }

    /// A client that sent requests at `tx_real` (CLOCK_REALTIME), their round
    /// trips `rtt_by_seq` (NaN: unanswered), the largest seen `max_rtt_ns`.
    fn client_after<'a>(cfg: &'a ClientCfg, sock: &'a UdpSocket, now: u64, tx_real: Vec<u64>, rtt_by_seq: Vec<f32>,
                        max_rtt_ns: u64) -> Client<'a> {
        let received = rtt_by_seq.iter().filter(|r| !r.is_nan()).count() as u64;
        Client {
            cfg, sock, key: None, flags: 0, session: 1,
            res: ClientResult { sent: tx_real.len() as u64, received, ..Default::default() },
            tx_real, rtt_by_seq,
            max_seq: None, last_reply_mono: sys::mono_ns(), scratch: Vec::new(), buf: vec![0u8; 65536],
            report_next: 0, report_from: (0, 0, 0),
            max_rtt_ns,
            t0_real: now,
        }
    }

    /// A client whose last requests were answered and whose one lost request
    /// went out long ago ends its drain at once; a request still within the
    /// grace keeps it (a silent peer: nothing comes back).
    #[test]
    fn the_drain_waits_for_requests_in_flight_not_for_one_lost_long_ago() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(silent.local_addr().unwrap()).unwrap();
        let cfg = silent_cfg(silent.local_addr().unwrap(), 2_000_000_000);
        let now = sys::real_ns();
        // the first request (5 s ago) lost, the two since answered; a 300-ms round trip seen: a grace of 900 ms,
        // which the old drain waited out after the last send
        let mut c = client_after(&cfg, &sock, now, vec![now - 5_000_000_000, now - 20_000_000, now - 10_000_000],
                                 vec![f32::NAN, 300_000.0, 300_000.0], 300_000_000);
        assert_eq!(c.latest_unanswered_tx(), Some(now - 5_000_000_000));
        let t = std::time::Instant::now();
        c.drain();
        assert!(t.elapsed() < Duration::from_millis(450), "{:?}", t.elapsed());
        // the last request unanswered, sent 10 ms ago: waited for until its grace is over (~890 ms)
        c.rtt_by_seq[2] = f32::NAN;
        let t = std::time::Instant::now();
        c.drain();
        assert!(t.elapsed() > Duration::from_millis(800), "{:?}", t.elapsed());
    }

    /// No reply seen yet: no round trip to scale the grace by, so the last
    /// request (sent 10 ms ago) is waited for until `--timeout` (here 600 ms),
    /// not the 50-ms floor; one sent longer ago than the timeout is lost.
    #[test]
    fn the_drain_without_a_reply_waits_for_the_timeout_not_the_floor() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(silent.local_addr().unwrap()).unwrap();
        let cfg = silent_cfg(silent.local_addr().unwrap(), 600_000_000);
        let now = sys::real_ns();
        let mut c = client_after(&cfg, &sock, now, vec![now - 20_000_000, now - 10_000_000], vec![f32::NAN, f32::NAN], 0);
        let t = std::time::Instant::now();
        c.drain();
        assert!(t.elapsed() > Duration::from_millis(550), "{:?}", t.elapsed());
        assert!(t.elapsed() < Duration::from_millis(1_500), "{:?}", t.elapsed());
        // both requests now older than the timeout: lost, nothing to wait for
        let t = std::time::Instant::now();
        c.drain();
        assert!(t.elapsed() < Duration::from_millis(100), "{:?}", t.elapsed());
    }

    #[test]
    fn the_round_trip_leaves_out_the_servers_processing_as_irtts() {
        // 1.5 ms measured, the server held the request 0.4 ms between its stamps: 1.1 ms of path
        assert_eq!(rtt_less_server(1_500_000, Some((10_000_000, 10_400_000))), 1_100_000);
        // no stamps (an old server, or a reply without room): as measured
        assert_eq!(rtt_less_server(1_500_000, None), 1_500_000);
        // stamps that claim more than the round trip: nothing taken off
        assert_eq!(rtt_less_server(1_500_000, Some((0, 2_000_000))), 1_500_000);
        // a send stamp before the receive stamp (a clock step): no processing
        assert_eq!(rtt_less_server(1_500_000, Some((5, 3))), 1_500_000);
    }

    fn fresh() -> ClientState {
        ClientState { first_ns: 0, last_ns: 0, tokens: 0.0 }
    }

    /// (up = t2 - t1, down = t4 - t3) for a server clock `theta` ahead, one-way delays `d_up`, `d_down`.
    fn exchange(theta: i64, d_up: i64, d_down: i64) -> (i64, i64) {
        (d_up + theta, d_down - theta)
    }

    #[test]
    fn the_clock_offset_is_exact_from_a_symmetric_fastest_exchange() {
        let theta = 1_234_567; // the server's clock 1.23 ms ahead
        let (mut up, mut down) = (vec![], vec![]);
        for (u, d) in [(9_000, 30_000), (5_000, 5_000), (40_000, 7_000)] {
            let (a, b) = exchange(theta, u, d);
            up.push(a);
            down.push(b);
        }
        let o = Offset::estimate(&up, &down).unwrap();
        assert_eq!(o.offset_ns, theta as f64, "from the 5 us + 5 us exchange");
        assert_eq!(o.bound_ns, 5_000.0);
        assert!(!o.synchronised(), "1.23 ms apart is beyond the 5 us bound");
        let (u, d) = o.one_way_us(&up, &down);
        assert_eq!((u[0], d[0], u[2], d[2]), (9.0, 30.0, 40.0, 7.0), "each direction recovered");
        assert!(o.label().starts_with("clocks NOT synchronised"));
    }

    #[test]
    fn loss_runs_count_consecutive_unanswered_requests_by_length() {
        let ok = |s: &str| s.chars().map(|c| c == '.').collect::<Vec<_>>();
        assert_eq!(loss_runs(ok("..x...xx.x..xxxx")), vec![(1, 2), (2, 1), (4, 1)]);
        assert_eq!(loss_runs(ok("x")), vec![(1, 1)]);
        assert_eq!(loss_runs(ok("....")), vec![]);
        assert_eq!(loss_runs(ok("")), vec![]);
    }

    #[test]
    fn an_asymmetric_fastest_exchange_errs_within_the_bound_and_the_sums_are_exact() {
        let (up, down) = exchange(-50_000, 2_000, 8_000);
        let o = Offset::estimate(&[up], &[down]).unwrap();
        assert!((o.offset_ns - -50_000.0).abs() <= o.bound_ns, "{o:?}");
        let (u, d) = o.one_way_us(&[up], &[down]);
        assert_eq!(u[0] + d[0], 10.0, "up + down = the RTT net of the server's time");
        assert!(Offset::estimate(&[], &[]).is_none());
        let same = Offset::estimate(&[3_000], &[3_000]).unwrap();
        assert!(same.synchronised() && same.label().starts_with("clocks agree"));
    }

    #[test]
    fn a_flood_of_one_packet_sources_never_locks_a_client_out_and_memory_stays_bounded() {
        use std::net::IpAddr;
        let mut t = Clients::default();
        let key = |ip: IpAddr| (SocketAddr::new(ip, 4000), 7u32);
        let real = key("192.0.2.1".parse().unwrap());
        t.get(real, fresh).tokens = 7.0;
        for i in 0..3 * MAX_CLIENTS as u32 {
            let spoofed = key(IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i)));
            t.get(spoofed, fresh);
            assert!(t.len() <= MAX_CLIENTS, "table grew to {}", t.len());
            if i % 1000 == 0 {
                // the real client keeps talking: its state survives the flood
                assert_eq!(t.get(real, fresh).tokens, 7.0, "after {i} spoofed sources");
            }
        }
        // a brand-new client gets a slot at once
        let newcomer = key("198.51.100.9".parse().unwrap());
        t.get(newcomer, fresh).tokens = 1.0;
        assert_eq!(t.get(newcomer, fresh).tokens, 1.0);
    }
}
