//! Packet trains, server → client: a policer's port rate and bucket (and
//! client → server, `--up`: [`crate::train_up`], the same model and analysis).
//!
//! Sources: packet-train dispersion (Jacobson 1988's packet pairs; Dovrolis,
//! Ramanathan and Moore, "Packet-dispersion techniques and a capacity-
//! estimation methodology", IEEE/ACM ToN 12(6), 2004) and the policer's
//! signature in Flach et al., "An Internet-wide analysis of traffic
//! policing", SIGCOMM 2016: drops without a queue, the burst that passes at
//! the port's rate, then the committed rate.
//!
//! Model in a nutshell: a token-bucket policer (rate C, bucket B bytes) in
//! front of a port of rate P > C, as an ISP polices a plan at the edge of a
//! faster network (and as the emulator's `policer` sits before its qdisc).
//! A train of N packets of W bytes (IP packets: the UDP payload S + 28 B over
//! IPv4, + 48 B over IPv6) sent back to back reaches the policer at the
//! sender's rate U; the bucket empties at U − C, so the first
//! h ≈ B·U/((U − C)·W) packets pass, then only what C refills passes. The
//! port spaces what passed W/P apart. With h packets before the first loss
//! and m after it:
//!
//! ```text
//!   leading rate = (h − 1)·W / (arrival span of the h)                     → P
//!   tail rate    = m·W / (time after the head's last packet), the smaller of
//!                  the arrivals' and the server's send times'               → C
//!   bucket       = (h + ½)·W − h·W·C / U, U the head's send rate            → B (± ½ packet)
//!   bucket_min   = (h + ½)·W − h·W·C / P: the bucket if the policer sat behind the port
//! ```
//!
//! The half packet: the policer passed h packets and dropped the next, so
//! B plus what C refilled meanwhile lies in [h·W, (h + 1)·W): the middle of
//! that packet-wide interval is the estimate, and a twin with it passes the
//! same h packets from a full bucket (h·W·(1 − C/U) alone sat at the
//! interval's low edge: a 4.5-KB bucket read 4.4 KB, which passes one
//! packet fewer, and the twin's CUBIC got 0.73 Mbit/s where the true path's
//! got 0.97, in the simulator).
//!
//! The tail's rate: a policer that sees the train at the sender's spacing
//! (before the port) admits m·W over the send time after the head, and the
//! tail then queues behind the head at the port and arrives at P; one that
//! sees it at P (behind the port) spaces the tail itself, W/C apart. Each
//! reading over-states C in the other case, so the smaller is taken. A train
//! sent at 10 Gbit/s lasts ~1 ms at the policer: its tail is a few packets
//! (a 20-Mbit/s policer admits 2.5 KB a millisecond), so C is coarse and the
//! measured rate (`measure`'s TCP load) is the one to use; the head (P) and
//! its bytes (B) are what the train is for.
//!
//! Batches: a link that sends frames in aggregates (802.11n/ac A-MPDUs: up
//! to 32 packets in one transmission of up to 4 ms, handed to the receiver
//! together at its end) delivers the train in batches — packets a few µs
//! apart, then a gap of a whole transmission — where a wired port spaces
//! every packet W/P apart. [`batches`] cuts the arrivals where a gap exceeds
//! half the train's mean gap (the middle between the two mechanisms' inner
//! gaps, 0 and the mean) and reports the batches' sizes and the periods from
//! one batch's first arrival to the next one's: `measure` reads a WiFi hop
//! from them (python/bloatlab/advise/measure.py, `wifi_hop`).
//!
//! What it cannot tell, and says: a head of fewer than two packets has no
//! spacing (no P); a train without loss has no tail (the bucket is larger
//! than the train); a head the server handed to its kernel no faster than it
//! arrived (its own send timestamps, [`SENDER_MARGIN`]) was paced by the
//! sender's CPU, not the path: P is then at least the leading rate. The
//! server's own NIC is not seen by its send timestamps (the socket buffer
//! takes the whole train at once): a leading rate equal to the server's
//! line rate is that line's. One train cannot tell a policer whose burst
//! queues at the port from a FIFO of B bytes: `measure` classifies, the
//! train measures.
//!
//! Protocol: [`crate::wire`]'s header with kinds 3-5, every packet signed
//! when the server holds a `--secret` (the up direction: kinds 6-7 and the
//! same data packets from the client, [`crate::train_up`]).
//!
//! ```text
//! request (3), REQ_LEN B + tag:  16 count u32 | 20 size u16 | 22 0 0 | 24 cookie [16]
//!                                | 40 pace bit/s u64 (0: back to back) | 48.. zero
//! answer  (4), the request's length:
//!                                16 status u8 | 17 0 0 0 | 20 value u32 | 24 cookie [16]
//!                                | 40 send span ns u64 | 48 send errors u32
//!                                | 52 pace bit/s u64 (DONE: the pace it sent at, 0: back to back) | 60.. zero
//! data    (5), size B:           seq = index | 16 server send ns u64 | 24 count u32 | 28.. zero | tag
//! ```
//!
//! 1. The client asks (cookie zero); the server answers `COOKIE` with
//!    HMAC(its random key, address, port, session, 10-s epoch): an answer
//!    no longer than the request, so a spoofed request reflects nothing.
//! 2. The client asks again with the cookie; the server checks it (this or
//!    the previous epoch), its bounds and the source's budget, then sends
//!    the train from a thread of its own (a tight loop of `send_to`, or
//!    paced: see below) and a `DONE` answer (twice, [`DONE_AGAIN_NS`] apart):
//!    packets sent, the span from the first to the last send, send errors,
//!    the pace it applied.
//!
//! Paced trains (`--rate R`, the request's pace): the server sends a packet
//! every W·8/R (W its IP bytes), so a port of rate P ≥ R never queues the
//! train and its first loss is the policer's, not the port's FIFO's (a
//! back-to-back train at 6-10 Gbit/s overflows a 106-KB FIFO on a 68-Mbit/s
//! port after 71 packets, long before a 271-KB bucket runs dry: campaign
//! seed 8 path 14). The server waits for each packet's due time (sleep,
//! then a spin for the last [`PACE_SPIN_NS`]); a packet it sent more than a
//! gap late restarts the schedule from it rather than catching up, so at
//! most one packet leaves early (two back to back at worst, which any FIFO
//! of two packets holds). A paced train occupies a thread of the server for
//! its duration: at most [`MAX_PACED_NS`] (refused beyond, [`Status::TooLong`]).
//! A server older than paced trains ignores the pace (the bytes were
//! zero) and sends back to back: its DONE then echoes no pace, and the
//! client says so instead of reading the train as paced.
//!
//! Server bounds (it faces the network; a refusal is an answer naming it):
//! count ≤ [`MAX_COUNT`], size in [`MIN_SIZE`]..=[`MAX_SIZE`], a paced train
//! no longer than [`MAX_PACED_NS`], one train in
//! flight per session (address, port, session id) and [`MAX_IN_FLIGHT`] in
//! all, [`BUDGET_BYTES`] of trains per [`BUDGET_WINDOW_NS`] per source
//! address (a token bucket: a client that waits gets its budget back), and
//! only to a client that echoed its cookie. An up train meets the same
//! bounds (its own [`MAX_IN_FLIGHT`] slots, the same budget per address:
//! [`crate::train_up`]).

use crate::sys;
use crate::wire::{self, Key, Kind, FLAG_AUTH, HEADER_LEN, TAG_LEN};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

/// Most packets in one train: 4096 × 1500 B = 6.1 MB, within one budget. The scenario language's bound on a
/// `[[train]]` (`bloatlab_schema::scenario::TRAIN_MAX_PACKETS`), whose emulator runs go through this server.
pub const MAX_COUNT: u32 = bloatlab_schema::scenario::TRAIN_MAX_PACKETS;
/// Largest packet: a full 1500-B IPv4 packet ([`wire::MAX_PACKET`]).
pub const MAX_SIZE: usize = wire::MAX_PACKET;
/// Smallest packet: room for the header, the send time, the count and a tag (the scenario language's least
/// `[[train]]` size, `bloatlab_schema::scenario::TRAIN_SIZE_BYTES`).
pub const MIN_SIZE: usize = bloatlab_schema::scenario::TRAIN_SIZE_BYTES.0 as usize;
// a scenario's largest train packet is the largest this server sends
const _: () = assert!(bloatlab_schema::scenario::TRAIN_SIZE_BYTES.1 as usize == MAX_SIZE);
/// The client's defaults: 1000 full packets (1.5 MB) outlast a 10-ms bucket
/// up to 1.2 Gbit/s (at 100 Mbit/s the train lasts 120 ms; a 20-Mbit/s
/// policer's tail then holds ~200 packets).
pub const DEFAULT_COUNT: u32 = 1000;
pub const DEFAULT_SIZE: usize = 1472;
/// Per source address: this many bytes of trains (IP packets) ...
pub const BUDGET_BYTES: u64 = 8_000_000;
/// ... per this long (6.4 Mbit/s on average, about one largest train per 10 s).
pub const BUDGET_WINDOW_NS: u64 = 10_000_000_000;
/// Trains being sent at once, all clients together (a thread each).
pub const MAX_IN_FLIGHT: usize = 4;
/// Source addresses whose budget is tracked; when full, those whose budget
/// has refilled are forgotten (only sources that echoed a cookie get here).
pub const MAX_SOURCES: usize = 10_000;
/// A cookie holds for this epoch and the next one.
pub const COOKIE_EPOCH_NS: u64 = 10_000_000_000;
/// The server sends its DONE again this long after the first (which follows
/// the train into a policer's empty bucket); 50 ms refill a 92-B answer's
/// tokens at any rate above 15 kbit/s. The client waits longer than this
/// for packets after the last one (250 ms).
pub const DONE_AGAIN_NS: u64 = 50_000_000;
/// A request's length before its tag.
pub const REQ_LEN: usize = 64;
/// The longest a paced train may take at the server (ns): one second holds a
/// train thread (of [`MAX_IN_FLIGHT`]) no longer than a handshake's timeout,
/// and at a port's rate it outlasts a bucket of 100 ms of a policer at up
/// to 90 % of the port (the bucket drains at P − C: 0.1·C / (P − C) ≤ 1 s). The scenario language's bound on a
/// paced `[[train]]` (`bloatlab_schema::scenario::TRAIN_MAX_PACED_NS`).
pub const MAX_PACED_NS: u64 = bloatlab_schema::scenario::TRAIN_MAX_PACED_NS;
/// A paced sender sleeps until this long before a packet's due time and
/// spins the rest: a sleep wakes up to ~50-60 µs late on a VM even with a
/// 1-ns timer slack.
pub const PACE_SPIN_NS: u64 = 100_000;
/// The client gives a train this long from its first request (a train of at
/// most 4096 packets: a minute is a dead path's).
pub const TRAIN_CAP_NS: u64 = 60_000_000_000;
pub(crate) const COOKIE_LEN: usize = 16;
/// The head was sender-limited when the server handed it to its kernel at
/// less than this multiple of the rate it arrived at (send timestamps jitter
/// by a scheduling slice; a margin of 20 % keeps that from reading as a path).
pub const SENDER_MARGIN: f64 = 1.2;

/// An answer's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// echo this cookie to get the train
    Cookie = 0,
    /// the train was sent: value = packets sent
    Done = 1,
    /// refused: count beyond value
    TooMany = 2,
    /// refused: size beyond value
    TooBig = 3,
    /// refused: a train of this session is in flight (value 0), or value trains are
    Busy = 4,
    /// refused: the source's budget; value = ms until it allows the train
    Budget = 5,
    /// refused: count 0 or size below value
    TooSmall = 6,
    /// refused: a paced train longer than [`MAX_PACED_NS`]; value = the most packets at that pace
    TooLong = 7,
    /// up: the server holds a slot for the train: send it; value = its count ([`crate::train_up`])
    Ready = 8,
    /// up: an answer to a report request, with the arrivals' records
    Records = 9,
    /// up: the server holds no up train of this session (never started, done, or expired)
    Gone = 10,
}

impl Status {
    pub(crate) fn from_u8(v: u8) -> Option<Status> {
        use Status::*;
        [Cookie, Done, TooMany, TooBig, Busy, Budget, TooSmall, TooLong, Ready, Records, Gone].into_iter().find(|s| *s as u8 == v)
    }
}

/// Which way a train goes: who sends it, who timestamps its arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// server → client (`udp train`)
    #[default]
    Down,
    /// client → server (`udp train --up`, [`crate::train_up`])
    Up,
}

impl Direction {
    /// `"down"` or `"up"` (the JSON's `direction`)
    pub fn name(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }
    /// The end that sends the train: `"server"` or `"client"`.
    pub fn sender(self) -> &'static str {
        match self {
            Direction::Down => "server",
            Direction::Up => "client",
        }
    }
}

/// A refusal of a down train in words, for the client's error.
pub fn refusal_text(s: Status, value: u32, count: u32, size: usize) -> String {
    refusal_words(Direction::Down, s, value, count, size)
}

/// A refusal in words, for the client's error: the server's part in `dir`'s
/// train (it sends a down train, it receives an up one).
pub fn refusal_words(dir: Direction, s: Status, value: u32, count: u32, size: usize) -> String {
    let verb = match dir {
        Direction::Down => "sends",
        Direction::Up => "receives",
    };
    match s {
        Status::TooMany => format!("--count {count}: the server {verb} at most {value} packets in a train"),
        Status::TooBig => format!("--size {size}: the server {verb} packets of at most {value} B"),
        Status::TooSmall => format!("--count {count} --size {size}: a train needs at least 1 packet of at least {value} B"),
        Status::TooLong => format!(
            "--count {count} --rate: a paced train may last at most {} s at the server; at that rate it {verb} at most {value} packets of {size} B",
            MAX_PACED_NS as f64 / 1e9
        ),
        Status::Busy if value == 0 && dir == Direction::Down => "the server is still sending this session's train".into(),
        Status::Busy if value == 0 => "the server is still receiving another up train of this session".into(),
        Status::Busy => format!("the server is busy: {value} trains in flight (try again shortly)"),
        Status::Budget => format!(
            "the server's budget for this address is spent ({} MB of trains per {} s): try again in {:.1} s",
            BUDGET_BYTES / 1_000_000,
            BUDGET_WINDOW_NS / 1_000_000_000,
            value as f64 / 1e3
        ),
        // (the up client says why it may have gone: crate::train_up's bounds)
        Status::Gone => "the server holds no up train of this session any more".into(),
        Status::Cookie | Status::Done | Status::Ready | Status::Records => format!("{s:?}"),
    }
}

pub(crate) fn flags_of(key: Option<&Key>) -> u8 {
    if key.is_some() {
        FLAG_AUTH
    } else {
        0
    }
}

pub(crate) fn msg_len(flags: u8) -> usize {
    REQ_LEN + if flags & FLAG_AUTH != 0 { TAG_LEN } else { 0 }
}

pub(crate) fn put_header(b: &mut [u8], kind: Kind, flags: u8, session: u32, seq: u64) {
    b[0..2].copy_from_slice(&wire::MAGIC);
    b[2] = wire::VERSION << 4 | kind as u8;
    b[3] = flags;
    b[4..8].copy_from_slice(&session.to_le_bytes());
    b[8..16].copy_from_slice(&seq.to_le_bytes());
}

/// A train request (the client's), signed with `key`: back to back.
pub fn build_request(session: u32, count: u32, size: u16, cookie: &[u8; COOKIE_LEN], key: Option<&Key>) -> Vec<u8> {
    build_paced_request(session, count, size, 0, cookie, key)
}

/// A train request paced at `pace_bps` (bit/s of IP packets; 0: back to back).
pub fn build_paced_request(session: u32, count: u32, size: u16, pace_bps: u64, cookie: &[u8; COOKIE_LEN], key: Option<&Key>) -> Vec<u8> {
    let flags = flags_of(key);
    let mut b = vec![0u8; msg_len(flags)];
    put_header(&mut b, Kind::TrainRequest, flags, session, 0);
    b[16..20].copy_from_slice(&count.to_le_bytes());
    b[20..22].copy_from_slice(&size.to_le_bytes());
    b[24..40].copy_from_slice(cookie);
    b[40..48].copy_from_slice(&pace_bps.to_le_bytes());
    wire::sign(&mut b, key);
    b
}

/// A validated train request's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub count: u32,
    pub size: u16,
    pub cookie: [u8; COOKIE_LEN],
    /// bit/s of IP packets; 0: back to back
    pub pace_bps: u64,
}

/// The fields of a train request `pkt` (already passed by [`wire::parse`]);
/// None when its length is not a request's.
pub fn parse_request(pkt: &[u8]) -> Option<Request> {
    if pkt.len() < HEADER_LEN || pkt.len() != msg_len(pkt[3]) {
        return None;
    }
    let mut cookie = [0u8; COOKIE_LEN];
    cookie.copy_from_slice(&pkt[24..40]);
    Some(Request {
        count: u32::from_le_bytes(pkt[16..20].try_into().unwrap()),
        size: u16::from_le_bytes(pkt[20..22].try_into().unwrap()),
        cookie,
        pace_bps: u64::from_le_bytes(pkt[40..48].try_into().unwrap()),
    })
}

/// A train answer's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub status: Status,
    pub value: u32,
    pub cookie: [u8; COOKIE_LEN],
    pub span_ns: u64,
    pub errors: u32,
    /// DONE: the pace the server sent at (bit/s of IP packets; 0: back to back, or a server older than paced trains)
    pub pace_bps: u64,
}

/// A train answer (the server's), signed with `key`.
pub fn build_answer(session: u32, a: &Answer, key: Option<&Key>) -> Vec<u8> {
    let flags = flags_of(key);
    let mut b = vec![0u8; msg_len(flags)];
    put_header(&mut b, Kind::TrainAnswer, flags, session, 0);
    b[16] = a.status as u8;
    b[20..24].copy_from_slice(&a.value.to_le_bytes());
    b[24..40].copy_from_slice(&a.cookie);
    b[40..48].copy_from_slice(&a.span_ns.to_le_bytes());
    b[48..52].copy_from_slice(&a.errors.to_le_bytes());
    b[52..60].copy_from_slice(&a.pace_bps.to_le_bytes());
    wire::sign(&mut b, key);
    b
}

/// The fields of a train answer `pkt` (already passed by [`wire::parse`]).
pub fn parse_answer(pkt: &[u8]) -> Option<Answer> {
    if pkt.len() < HEADER_LEN || pkt.len() != msg_len(pkt[3]) {
        return None;
    }
    let mut cookie = [0u8; COOKIE_LEN];
    cookie.copy_from_slice(&pkt[24..40]);
    Some(Answer {
        status: Status::from_u8(pkt[16])?,
        value: u32::from_le_bytes(pkt[20..24].try_into().unwrap()),
        cookie,
        span_ns: u64::from_le_bytes(pkt[40..48].try_into().unwrap()),
        errors: u32::from_le_bytes(pkt[48..52].try_into().unwrap()),
        pace_bps: u64::from_le_bytes(pkt[52..60].try_into().unwrap()),
    })
}

/// IP and UDP headers in front of a datagram to `a`.
pub fn ip_overhead(a: &SocketAddr) -> usize {
    match a {
        SocketAddr::V4(_) => 28,
        SocketAddr::V6(v) if v.ip().to_ipv4_mapped().is_some() => 28,
        SocketAddr::V6(_) => 48,
    }
}

// ---------------------------------------------------------------- server

/// What a train request led to (the server's statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// not a request's length: ignored
    Malformed,
    Cookie,
    Refused(Status),
    /// a down train is being sent; an up train's slot is ready
    Started,
    /// up: a report request answered with records
    Reported,
    /// up: the client's done freed its slot
    Freed,
    /// up: a report or done for a slot the server does not hold (a report is answered [`Status::Gone`])
    NoSlot,
}

/// One source's budget: a token bucket of [`BUDGET_BYTES`].
#[derive(Debug, Clone, Copy)]
struct Budget {
    bytes: f64,
    at_ns: u64,
}

impl Budget {
    fn refill(&mut self, now: u64) {
        let per_ns = BUDGET_BYTES as f64 / BUDGET_WINDOW_NS as f64;
        self.bytes = (self.bytes + now.saturating_sub(self.at_ns) as f64 * per_ns).min(BUDGET_BYTES as f64);
        self.at_ns = now;
    }
}

/// The server's side of the down trains: its cookie key, the source
/// addresses' budgets, the trains being sent (the up trains share the cookie
/// and the budgets: `crate::train_up::Trains`).
pub struct TrainServer {
    cookie_key: Key,
    budgets: HashMap<IpAddr, Budget>,
    in_flight: Arc<Mutex<HashSet<(SocketAddr, u32)>>>,
}

impl Default for TrainServer {
    fn default() -> Self {
        Self::new()
    }
}

impl TrainServer {
    pub fn new() -> TrainServer {
        let k: Vec<u8> = (0..4).flat_map(|_| sys::random_u64().to_le_bytes()).collect();
        TrainServer { cookie_key: Key::new(&k), budgets: HashMap::new(), in_flight: Arc::default() }
    }

    pub(crate) fn cookie(&self, from: SocketAddr, session: u32, epoch: u64) -> [u8; COOKIE_LEN] {
        let mut d = Vec::with_capacity(40);
        match from.ip() {
            IpAddr::V4(a) => d.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => d.extend_from_slice(&a.octets()),
        }
        d.extend_from_slice(&from.port().to_le_bytes());
        d.extend_from_slice(&session.to_le_bytes());
        d.extend_from_slice(&epoch.to_le_bytes());
        let hex = self.cookie_key.sign_hex(&d);
        let mut c = [0u8; COOKIE_LEN];
        for (i, b) in c.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0);
        }
        c
    }

    /// The cookie `echoed` checked against this epoch's and the previous
    /// one's for (`from`, `session`): Err(the fresh cookie) when it is neither.
    pub(crate) fn check_cookie(&self, from: SocketAddr, session: u32, echoed: &[u8; COOKIE_LEN], now: u64) -> Result<(), [u8; COOKIE_LEN]> {
        let epoch = now / COOKIE_EPOCH_NS;
        let fresh = self.cookie(from, session, epoch);
        let ok = wire_eq(echoed, &fresh) || epoch > 0 && wire_eq(echoed, &self.cookie(from, session, epoch - 1));
        if ok {
            Ok(())
        } else {
            Err(fresh)
        }
    }

    /// Take `bytes` of trains from the budget of `from`'s address: Err(the
    /// refusal and its value) when spent, or when the table of sources is
    /// full of sources still drawing on theirs.
    pub(crate) fn charge(&mut self, from: SocketAddr, bytes: f64, now: u64) -> Result<(), (Status, u32)> {
        if self.budgets.len() >= MAX_SOURCES && !self.budgets.contains_key(&from.ip()) {
            self.budgets.retain(|_, b| {
                b.refill(now);
                b.bytes < BUDGET_BYTES as f64
            });
            if self.budgets.len() >= MAX_SOURCES {
                return Err((Status::Busy, MAX_IN_FLIGHT as u32));
            }
        }
        let b = self.budgets.entry(from.ip()).or_insert(Budget { bytes: BUDGET_BYTES as f64, at_ns: now });
        b.refill(now);
        if b.bytes < bytes {
            let wait_ms = (bytes - b.bytes) / (BUDGET_BYTES as f64 / BUDGET_WINDOW_NS as f64) / 1e6;
            return Err((Status::Budget, wait_ms.ceil() as u32));
        }
        b.bytes -= bytes;
        Ok(())
    }

    /// Trains being sent now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().len()
    }

    /// Answer the train request `pkt` (validated by [`wire::parse`] with the
    /// server's key) from `from`: a cookie, a refusal, or a train (then sent
    /// from a thread of its own). `now` is CLOCK_MONOTONIC ns.
    pub fn handle(&mut self, sock: &UdpSocket, from: SocketAddr, session: u32, pkt: &[u8], key: Option<&Key>, now: u64) -> Handled {
        let Some(req) = parse_request(pkt) else { return Handled::Malformed };
        let answer = |a: Answer| {
            let _ = sock.send_to(&build_answer(session, &a, key), from);
        };
        let refuse = |status: Status, value: u32| {
            answer(Answer { status, value, cookie: [0; COOKIE_LEN], span_ns: 0, errors: 0, pace_bps: 0 });
            Handled::Refused(status)
        };
        let gap_ns = match check_bounds(&req, &from) {
            Ok(g) => g,
            Err((status, value)) => return refuse(status, value),
        };
        if let Err(fresh) = self.check_cookie(from, session, &req.cookie, now) {
            // no bigger than the request: a spoofed source gets back what it sent
            answer(Answer { status: Status::Cookie, value: 0, cookie: fresh, span_ns: 0, errors: 0, pace_bps: 0 });
            return Handled::Cookie;
        }
        {
            let f = self.in_flight.lock().unwrap();
            if f.contains(&(from, session)) {
                return refuse(Status::Busy, 0);
            }
            if f.len() >= MAX_IN_FLIGHT {
                return refuse(Status::Busy, MAX_IN_FLIGHT as u32);
            }
        }
        let bytes = req.count as f64 * (req.size as usize + ip_overhead(&from)) as f64;
        if let Err((status, value)) = self.charge(from, bytes, now) {
            return refuse(status, value);
        }
        let Ok(s) = sock.try_clone() else { return refuse(Status::Busy, MAX_IN_FLIGHT as u32) };
        self.in_flight.lock().unwrap().insert((from, session));
        let (flight, key2) = (self.in_flight.clone(), key.cloned());
        let started = std::thread::Builder::new().name("train".into()).spawn(move || {
            let (sent, span_ns, errors) = send_train(&s, from, session, req.count, req.size as usize, gap_ns, key2.as_ref());
            let pace_bps = if gap_ns > 0 { req.pace_bps } else { 0 };
            let done = Answer { status: Status::Done, value: sent, cookie: [0; COOKIE_LEN], span_ns, errors, pace_bps };
            // DONE twice: the first follows the train into an empty bucket and may be dropped
            let msg = build_answer(session, &done, key2.as_ref());
            let _ = s.send_to(&msg, from);
            std::thread::sleep(std::time::Duration::from_nanos(DONE_AGAIN_NS));
            let _ = s.send_to(&msg, from);
            flight.lock().unwrap().remove(&(from, session));
        });
        if started.is_err() {
            self.in_flight.lock().unwrap().remove(&(from, session));
            return refuse(Status::Busy, MAX_IN_FLIGHT as u32);
        }
        Handled::Started
    }
}

/// The bounds a train request from `from` must keep, whichever way the
/// train goes: Ok(the pace's gap, ns; 0 back to back), or Err(the refusal
/// and its value).
pub(crate) fn check_bounds(req: &Request, from: &SocketAddr) -> Result<u64, (Status, u32)> {
    if req.count == 0 || (req.size as usize) < MIN_SIZE {
        return Err((Status::TooSmall, MIN_SIZE as u32));
    }
    if req.count > MAX_COUNT {
        return Err((Status::TooMany, MAX_COUNT));
    }
    if req.size as usize > MAX_SIZE {
        return Err((Status::TooBig, MAX_SIZE as u32));
    }
    let wire_bytes = (req.size as usize + ip_overhead(from)) as u64;
    let gap_ns = pace_gap_ns(wire_bytes, req.pace_bps);
    if gap_ns > 0 && paced_span_ns(req.count, gap_ns) > MAX_PACED_NS {
        return Err((Status::TooLong, (MAX_PACED_NS / gap_ns + 1).min(MAX_COUNT as u64) as u32));
    }
    Ok(gap_ns)
}

/// Constant-time equality of two cookies.
fn wire_eq(a: &[u8; COOKIE_LEN], b: &[u8; COOKIE_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The spacing (ns) of a train of `wire_bytes`-B packets paced at
/// `pace_bps` (0: back to back, and so is a pace under 1 ns a packet).
pub fn pace_gap_ns(wire_bytes: u64, pace_bps: u64) -> u64 {
    if pace_bps == 0 {
        return 0;
    }
    (wire_bytes as u128 * 8 * 1_000_000_000 / pace_bps as u128).min(u64::MAX as u128) as u64
}

/// How long a train of `count` packets `gap_ns` apart takes to send (first to last).
pub fn paced_span_ns(count: u32, gap_ns: u64) -> u64 {
    (count.saturating_sub(1) as u64).saturating_mul(gap_ns)
}

/// Wait until CLOCK_MONOTONIC reaches `due`: a sleep to [`PACE_SPIN_NS`]
/// before it, then a spin.
fn wait_until(due: u64) {
    let now = sys::mono_ns();
    if due > now + PACE_SPIN_NS {
        sys::sleep_until_mono(due - PACE_SPIN_NS);
    }
    while sys::mono_ns() < due {
        std::hint::spin_loop();
    }
}

/// The next packet's due time (CLOCK_MONOTONIC ns) after one due at `due`
/// was sent at `sent`: a gap after `due`, or a gap after `sent` where it
/// left more than a gap late (no catching up: at most one packet early).
pub fn next_due(due: u64, sent: u64, gap_ns: u64) -> u64 {
    if sent > due + gap_ns {
        sent + gap_ns
    } else {
        due + gap_ns
    }
}

/// Send the train: `count` packets of `size` B, back to back (`gap_ns` 0)
/// or paced `gap_ns` apart ([`next_due`]), each stamped with CLOCK_REALTIME
/// just before its `send_to`. Returns (packets the kernel took, ns from the
/// first send to the last, send errors).
pub fn send_train(sock: &UdpSocket, to: SocketAddr, session: u32, count: u32, size: usize, gap_ns: u64, key: Option<&Key>) -> (u32, u64, u32) {
    send_train_with(sock, to, session, count, size, gap_ns, key, &mut |_, _| {})
}

/// [`send_train`], telling `sent(seq, stamp)` each packet the kernel took
/// with its send stamp (the up train's client keeps them: its arrivals'
/// `tx_ns`).
#[allow(clippy::too_many_arguments)]
pub fn send_train_with(
    sock: &UdpSocket,
    to: SocketAddr,
    session: u32,
    count: u32,
    size: usize,
    gap_ns: u64,
    key: Option<&Key>,
    on_sent: &mut dyn FnMut(u32, u64),
) -> (u32, u64, u32) {
    let flags = flags_of(key);
    let mut b = vec![0u8; size];
    let (mut sent, mut errors, mut first, mut last) = (0u32, 0u32, None, 0u64);
    if gap_ns > 0 {
        sys::tight_timer_slack();
    }
    let mut due = 0u64;
    for seq in 0..count {
        put_header(&mut b, Kind::TrainData, flags, session, seq as u64);
        b[24..28].copy_from_slice(&count.to_le_bytes());
        if gap_ns > 0 {
            if seq > 0 {
                wait_until(due);
            }
            let now = sys::mono_ns();
            due = if seq == 0 { now + gap_ns } else { next_due(due, now, gap_ns) };
        }
        let t = sys::real_ns();
        b[16..24].copy_from_slice(&t.to_le_bytes());
        wire::sign(&mut b, key);
        match sock.send_to(&b, to) {
            Ok(_) => {
                sent += 1;
                first.get_or_insert(t);
                last = t;
                on_sent(seq, t);
            }
            Err(_) => errors += 1,
        }
    }
    (sent, first.map(|f| last - f).unwrap_or(0), errors)
}

// ---------------------------------------------------------------- analysis

/// One packet of the train as the receiver (the client; the server of an
/// up train) received it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    pub seq: u32,
    /// receive time (kernel or user, the receiver's CLOCK_REALTIME ns)
    pub rx_ns: u64,
    /// the sender's send time (its CLOCK_REALTIME ns; only differences are used)
    pub tx_ns: u64,
}

/// What a train tells; see the module's model for the formulas.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analysis {
    pub sent: u32,
    pub received: u32,
    /// sequence numbers that never arrived, ascending
    pub lost: Vec<u32>,
    /// the first of them (= the packets before it, all of which arrived)
    pub first_loss: Option<u32>,
    pub head_packets: u32,
    /// IP bytes of the head (before the first loss): the bucket plus what the rate added meanwhile
    pub head_bytes: u64,
    pub head_span_ns: u64,
    /// the head's dispersion rate, Mbit/s of IP packets: the port's rate
    pub leading_mbps: Option<f64>,
    /// how fast the server handed the head to its kernel (None: all at one instant)
    pub head_send_mbps: Option<f64>,
    /// the server's sending, not the path, set the leading rate
    pub sender_limited: bool,
    pub tail_packets: u32,
    /// from the head's last arrival to the tail's last
    pub tail_span_ns: u64,
    /// the tail's bytes over its arrival span, and over its send span (from the head's last send)
    pub tail_arrival_mbps: Option<f64>,
    pub tail_send_mbps: Option<f64>,
    /// the rate after the first loss, the smaller of the two: the policed rate
    pub tail_mbps: Option<f64>,
    /// the bucket: (head + ½ packet) − head × tail / the head's send rate; without a tail, head + ½ packet
    pub bucket_bytes: Option<f64>,
    /// (head + ½ packet) − head × tail / leading: the bucket if the policer sat behind the port
    pub bucket_min_bytes: Option<f64>,
    /// what the figures cannot tell, in words
    pub notes: Vec<String>,
    /// the arrivals in batches ([`batches`])
    pub batches: Batches,
}

/// The train's arrivals cut into batches (see the module's model).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batches {
    pub count: u32,
    /// packets per batch, the median and the largest
    pub packets_p50: f64,
    pub packets_max: u32,
    /// every batch's packets, in arrival order
    pub sizes: Vec<u32>,
    /// from each batch's first arrival to the next batch's first (ns): one fewer than `sizes`
    pub periods_ns: Vec<u64>,
    /// the median of `periods_ns` (None with fewer than two batches)
    pub period_ns_p50: Option<f64>,
}

/// Cut ``arrivals`` (any order) into batches: a new batch starts where the
/// gap from the previous arrival exceeds half the mean gap over the whole
/// train (its span over its arrivals less one). Fewer than three arrivals:
/// one batch.
pub fn batches(arrivals: &[Arrival]) -> Batches {
    let mut rx: Vec<u64> = arrivals.iter().map(|x| x.rx_ns).collect();
    rx.sort_unstable();
    let mut b = Batches::default();
    if rx.is_empty() {
        return b;
    }
    let span = rx[rx.len() - 1] - rx[0];
    let cut = if rx.len() >= 3 { span as f64 / (rx.len() - 1) as f64 / 2.0 } else { f64::INFINITY };
    let mut starts = vec![rx[0]];
    let mut n = 1u32;
    for w in rx.windows(2) {
        if (w[1] - w[0]) as f64 > cut {
            b.sizes.push(n);
            starts.push(w[1]);
            n = 1;
        } else {
            n += 1;
        }
    }
    b.sizes.push(n);
    b.periods_ns = starts.windows(2).map(|w| w[1] - w[0]).collect();
    b.count = b.sizes.len() as u32;
    b.packets_max = *b.sizes.iter().max().unwrap();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        bloatlab_core::stats::percentile_sorted(&v, 50.0)
    };
    b.packets_p50 = median(b.sizes.iter().map(|&x| x as f64).collect());
    b.period_ns_p50 = (!b.periods_ns.is_empty()).then(|| median(b.periods_ns.iter().map(|&x| x as f64).collect()));
    b
}

/// A rate with about four significant digits.
pub fn sig(x: f64) -> String {
    match x.abs() {
        v if v >= 1000.0 => format!("{x:.0}"),
        v if v >= 100.0 => format!("{x:.1}"),
        v if v >= 10.0 => format!("{x:.2}"),
        _ => format!("{x:.3}"),
    }
}

fn mbps(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 * 8e3 / ns as f64)
}

/// Analyse a train of `count` packets of `wire_bytes` IP bytes each from
/// its `arrivals` (any order, one per sequence number), sent back to back.
pub fn analyse(count: u32, wire_bytes: u64, arrivals: &[Arrival]) -> Analysis {
    analyse_with(Direction::Down, count, wire_bytes, arrivals, None)
}

/// [`analyse`] a train the server paced at `pace_mbps`: its head reached the
/// policer as it was sent, whichever side of the port the policer sits (a
/// port no slower than the pace never queues it), so the bucket is read
/// with U = the head's send rate (the pace where the head had no span), and
/// a head sent no faster than it arrived is the pace, not a note.
pub fn analyse_paced(count: u32, wire_bytes: u64, arrivals: &[Arrival], pace_mbps: f64) -> Analysis {
    analyse_with(Direction::Down, count, wire_bytes, arrivals, Some(pace_mbps))
}

/// [`analyse`] (`pace_mbps` None) or [`analyse_paced`] a train that went
/// `dir`: the figures are the same either way (the arrivals' stamps are the
/// receiver's clock, the send stamps the sender's: only differences of each
/// are used); only the notes name the sender.
pub fn analyse_with(dir: Direction, count: u32, wire_bytes: u64, arrivals: &[Arrival], pace_mbps: Option<f64>) -> Analysis {
    let mut a = Analysis { sent: count, received: arrivals.len() as u32, batches: batches(arrivals), ..Default::default() };
    let mut got = vec![false; count as usize];
    for x in arrivals {
        if let Some(g) = got.get_mut(x.seq as usize) {
            *g = true;
        }
    }
    a.lost = (0..count).filter(|&s| !got[s as usize]).collect();
    a.first_loss = a.lost.first().copied();
    let cut = a.first_loss.unwrap_or(count);
    let head: Vec<&Arrival> = arrivals.iter().filter(|x| x.seq < cut).collect();
    let tail: Vec<&Arrival> = arrivals.iter().filter(|x| x.seq > cut && x.seq < count).collect();
    a.head_packets = head.len() as u32;
    a.head_bytes = head.len() as u64 * wire_bytes;
    let span = |v: &[&Arrival], f: fn(&Arrival) -> u64| match (v.iter().map(|x| f(x)).min(), v.iter().map(|x| f(x)).max()) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0,
    };
    if head.len() >= 2 {
        // the first packet's own bytes arrived before the span starts
        let bytes = (head.len() as u64 - 1) * wire_bytes;
        a.head_span_ns = span(&head, |x| x.rx_ns);
        a.leading_mbps = mbps(bytes, a.head_span_ns);
        a.head_send_mbps = mbps(bytes, span(&head, |x| x.tx_ns));
        if let Some(l) = a.leading_mbps {
            if pace_mbps.is_none() && a.head_send_mbps.is_some_and(|s| s < SENDER_MARGIN * l) {
                a.sender_limited = true;
                a.notes.push(format!(
                    "the {} sent the head at {} Mbit/s, no faster than it arrived: the sender, not the path, set the leading rate (the port is at least {} Mbit/s)",
                    dir.sender(),
                    sig(a.head_send_mbps.unwrap()),
                    sig(l)
                ));
            }
        } else {
            a.notes.push("the head arrived all at one instant: no spacing to read a rate from".into());
        }
    } else {
        a.notes.push(format!("{} packet(s) before the first loss: no spacing, no port rate", head.len()));
    }
    a.tail_packets = tail.len() as u32;
    if !tail.is_empty() {
        // from the head's last packet (the bucket ran out after it); without a head, from the tail's first
        let rate_after = |f: fn(&Arrival) -> u64| -> (u64, Option<f64>) {
            let last = tail.iter().map(|x| f(x)).max().unwrap();
            let (from, bytes) = match head.iter().map(|x| f(x)).max() {
                Some(h) => (h, tail.len() as u64 * wire_bytes),
                None => (tail.iter().map(|x| f(x)).min().unwrap(), (tail.len() as u64 - 1) * wire_bytes),
            };
            let span = last.saturating_sub(from);
            (span, mbps(bytes, span))
        };
        let (span, arr) = rate_after(|x| x.rx_ns);
        a.tail_span_ns = span;
        a.tail_arrival_mbps = arr;
        a.tail_send_mbps = rate_after(|x| x.tx_ns).1;
        a.tail_mbps = match (a.tail_arrival_mbps, a.tail_send_mbps) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        if a.tail_packets < 10 {
            a.notes.push(format!(
                "{} packets after the first loss: the tail's rate is coarse (a train sent this fast is short at the policer); the measured rate is the better one",
                a.tail_packets
            ));
        }
    }
    match (a.first_loss, a.leading_mbps) {
        (None, _) => a.notes.push(format!(
            "no loss: the train's {} B passed whole (a bucket that large, or no policer)",
            count as u64 * wire_bytes
        )),
        (Some(_), Some(l)) if !a.sender_limited => {
            let h = a.head_bytes as f64;
            // the middle of the packet-wide interval the bucket (plus the refill) lies in
            let mid = h + wire_bytes as f64 / 2.0;
            // the rate the head reached the policer at: as sent (None: all at one instant); back to back, at
            // least the port's (a policer behind the port sees it at P); paced, as sent (the port did not queue it)
            let u = match pace_mbps {
                Some(p) => a.head_send_mbps.unwrap_or(p),
                None => a.head_send_mbps.unwrap_or(f64::INFINITY).max(l),
            };
            match a.tail_mbps {
                Some(c) if c < l.min(u) => {
                    a.bucket_bytes = Some(mid - h * c / u);
                    a.bucket_min_bytes = Some(mid - h * c / l);
                }
                Some(c) => a.notes.push(format!(
                    "the tail ({} Mbit/s) was no slower than the head ({}): not a policer's rate change; the bucket is not read",
                    sig(c),
                    sig(l.min(u))
                )),
                None => {
                    a.bucket_bytes = Some(mid);
                    a.notes.push("nothing arrived after the first loss: no tail rate; the bucket is read without the refill (at most the head's bytes and one packet)".into());
                }
            }
        }
        _ => {}
    }
    a
}

impl Analysis {
    pub fn to_json(&self) -> Value {
        json!({"sent": self.sent, "received": self.received, "lost": self.lost.len(), "lost_seq": self.lost,
               "first_loss": self.first_loss, "head_packets": self.head_packets, "head_bytes": self.head_bytes,
               "head_span_ms": self.head_span_ns as f64 / 1e6, "leading_mbps": self.leading_mbps,
               "head_send_mbps": self.head_send_mbps, "sender_limited": self.sender_limited,
               "tail_packets": self.tail_packets, "tail_span_ms": self.tail_span_ns as f64 / 1e6, "tail_mbps": self.tail_mbps,
               "tail_arrival_mbps": self.tail_arrival_mbps, "tail_send_mbps": self.tail_send_mbps,
               "bucket_bytes": self.bucket_bytes, "bucket_min_bytes": self.bucket_min_bytes, "notes": self.notes,
               "batches": {"count": self.batches.count, "packets_p50": self.batches.packets_p50,
                           "packets_max": self.batches.packets_max, "sizes": self.batches.sizes,
                           "periods_ms": self.batches.periods_ns.iter().map(|&p| p as f64 / 1e6).collect::<Vec<_>>(),
                           "period_ms_p50": self.batches.period_ns_p50.map(|p| p / 1e6)}})
    }
}

// ---------------------------------------------------------------- client

#[derive(Debug, Clone)]
pub struct TrainCfg {
    pub addr: SocketAddr,
    pub count: u32,
    pub size: usize,
    pub secret: Option<Vec<u8>>,
    /// how long an answer or the train's first packet may take (then ask again, twice)
    pub timeout_ns: u64,
    /// the pace asked for, bit/s of IP packets (0: back to back)
    pub pace_bps: u64,
    /// `--wait-go`: the handshake first (down: the cookie; up: READY), then a line on standard input
    /// ([`sys::wait_go_line`]) before the train is asked for (down) or sent (up): the emulator starts a
    /// train at its scenario time this way, without the handshake's round trips in its lead
    pub wait_go: bool,
}

/// What the receiver received (the client's own arrivals; for an up train,
/// the server's records of them, [`crate::train_up::run_up_train`]).
#[derive(Debug, Clone, Default)]
pub struct TrainRun {
    pub direction: Direction,
    /// in arrival order, one per sequence number
    pub arrivals: Vec<Arrival>,
    /// the receiver stamped every arrival with the kernel's receive time
    pub kernel_ts: bool,
    /// the sender's figures (the server's DONE; an up train's client's own send
    /// loop): packets it sent, its send span, its send errors
    pub done: Option<(u32, u64, u32)>,
    /// the pace the sender said it sent at (bit/s; 0: back to back)
    pub done_pace_bps: Option<u64>,
    /// datagrams the receiver's socket dropped (receive buffer full): not the
    /// path's losses (an up train: the server socket's, all its clients')
    pub local_drops: Option<u32>,
    /// request → cookie, ns
    pub handshake_rtt_ns: u64,
    pub duplicates: u64,
    pub foreign: u64,
    /// IP bytes of one packet
    pub wire_bytes: u64,
    /// how long the receiver had heard nothing of the train when the train
    /// ended (its last packet's arrival to the end; an up train: the server's
    /// quiet at the last poll), ns: a token bucket before the receiver has
    /// refilled at least that long. None: nothing arrived
    pub quiet_ns: Option<u64>,
}

/// Ask `cfg.addr` for a train and receive it. Err: no server, or a refusal (in words).
pub fn run_train(cfg: &TrainCfg) -> Result<TrainRun, String> {
    let bind: SocketAddr = if cfg.addr.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
    let sock = UdpSocket::bind(bind).map_err(|e| format!("udp bind: {e}"))?;
    sock.connect(cfg.addr).map_err(|e| format!("udp connect {}: {e}", cfg.addr))?;
    let fd = sock.as_raw_fd();
    let kernel_ts = sys::enable_rx_timestamps(fd);
    // room for the whole train (a datagram's kernel size is ~1.5-2x its bytes)
    let room = (cfg.count as usize * (cfg.size + 1024)).clamp(1 << 20, 64 << 20) as i32;
    sys::set_buffers(fd, room);
    sys::force_rcvbuf(fd, room);
    let ovfl = sys::enable_rxq_ovfl(fd);
    let key = cfg.secret.as_deref().map(Key::new);
    let session = sys::random_u64() as u32;
    let mut run = TrainRun { kernel_ts, wire_bytes: (cfg.size + ip_overhead(&cfg.addr)) as u64, local_drops: ovfl.then_some(0), ..Default::default() };
    let mut buf = vec![0u8; 65536];
    let mut seen = vec![false; cfg.count as usize];
    let mut drops0: Option<u32> = None;
    let mut cookie = [0u8; COOKIE_LEN];
    let mut have_cookie = false;
    let mut tries = 0;
    let mut asked_at = 0u64;
    let mut last_rx_mono = 0u64;
    let mut done_at: Option<u64> = None;
    let mut went = !cfg.wait_go;
    let started = sys::mono_ns();
    loop {
        if sys::stopped() {
            return Err("interrupted".into());
        }
        let mut now = sys::mono_ns();
        if now - started > TRAIN_CAP_NS {
            break; // a train of at most 4096 packets: a minute is a dead path's
        }
        let quiet = run.arrivals.is_empty() && done_at.is_none();
        if quiet && (tries == 0 || now - asked_at > cfg.timeout_ns) {
            if tries == 3 {
                return Err(if have_cookie {
                    format!("no train from {} (the server answered the handshake; the train was lost on the way, or the server predates trains)", cfg.addr)
                } else {
                    format!("no answer from {} (is `bloatlab-probe server` running there, of a version with trains, and the --secret the same?)", cfg.addr)
                });
            }
            if have_cookie && !went {
                // the cookie is good for this 10-s epoch and the next: the go comes well within it
                sys::wait_go_line()?;
                went = true;
                now = sys::mono_ns();
            }
            let _ = sock.send(&build_paced_request(session, cfg.count, cfg.size as u16, cfg.pace_bps, &cookie, key.as_ref()));
            asked_at = now;
            tries += 1;
        }
        // the end: the server's DONE and a moment for reordered packets, or silence after the train
        let idle_ns = (2 * run.handshake_rtt_ns).max(250_000_000);
        if let Some(d) = done_at {
            if run.arrivals.len() as u32 >= cfg.count || now > d + 20_000_000 {
                break;
            }
        } else if !run.arrivals.is_empty() && now - last_rx_mono > idle_ns {
            break;
        }
        if !sys::wait_readable(fd, 10_000_000) {
            continue;
        }
        while let Ok(r) = sys::recv_ts(fd, &mut buf, libc::MSG_DONTWAIT) {
            let user_rx = sys::real_ns();
            let rx = if kernel_ts { r.kernel_ns.unwrap_or(user_rx) } else { user_rx };
            if let Some(d) = r.drops {
                let d0 = *drops0.get_or_insert(d);
                run.local_drops = Some(d.wrapping_sub(d0));
            }
            let p = match wire::parse(&buf[..r.len], key.as_ref()) {
                Ok(p) if p.session == session => p,
                _ => {
                    run.foreign += 1;
                    continue;
                }
            };
            match p.kind {
                Kind::TrainData if r.len == cfg.size && p.seq < cfg.count as u64 && r.len >= 28 => {
                    if seen[p.seq as usize] {
                        run.duplicates += 1;
                        continue;
                    }
                    seen[p.seq as usize] = true;
                    let tx = u64::from_le_bytes(buf[16..24].try_into().unwrap());
                    run.arrivals.push(Arrival { seq: p.seq as u32, rx_ns: rx, tx_ns: tx });
                    last_rx_mono = sys::mono_ns();
                }
                Kind::TrainAnswer => match parse_answer(&buf[..r.len]) {
                    Some(a) if a.status == Status::Cookie => {
                        if !have_cookie {
                            run.handshake_rtt_ns = sys::mono_ns() - asked_at;
                        }
                        // a new cookie (first, or the epoch turned): ask with it at once
                        if !have_cookie || a.cookie != cookie {
                            cookie = a.cookie;
                            have_cookie = true;
                            tries = 0;
                        }
                    }
                    Some(a) if a.status == Status::Done => {
                        run.done = Some((a.value, a.span_ns, a.errors));
                        run.done_pace_bps = Some(a.pace_bps);
                        done_at = Some(sys::mono_ns());
                    }
                    // a refusal of a repeated request while our train is coming: ignore it
                    Some(a) if a.status == Status::Busy && a.value == 0 && (!run.arrivals.is_empty() || tries > 1) => {}
                    Some(a) => return Err(format!("the server refused the train: {}", refusal_text(a.status, a.value, cfg.count, cfg.size))),
                    None => run.foreign += 1,
                },
                _ => run.foreign += 1,
            }
        }
    }
    if !run.arrivals.is_empty() {
        run.quiet_ns = Some(sys::mono_ns().saturating_sub(last_rx_mono));
    }
    if cfg.pace_bps > 0 && !sent_paced(&run, cfg.pace_bps) {
        return Err(format!(
            "the server sent the train back to back, not at --rate {} Mbit/s: it predates paced trains (compare `bloatlab-probe --version` on both ends)",
            sig(cfg.pace_bps as f64 / 1e6)
        ));
    }
    Ok(run)
}

/// Whether a train asked at `pace_bps` was paced: the server's DONE echoes
/// the pace (a server older than paced trains leaves it 0); where both DONEs
/// were lost, the received packets' send times went no faster than twice
/// the pace (a paced server sends at most one packet early, [`next_due`]; an
/// old one sends back to back, at its CPU's and NIC's speed).
pub fn sent_paced(run: &TrainRun, pace_bps: u64) -> bool {
    if let Some(p) = run.done_pace_bps {
        return p == pace_bps;
    }
    let tx: Vec<u64> = run.arrivals.iter().map(|x| x.tx_ns).collect();
    let (Some(lo), Some(hi)) = (tx.iter().min(), tx.iter().max()) else { return true };
    let seqs = run.arrivals.iter().map(|x| x.seq).max().unwrap_or(0) - run.arrivals.iter().map(|x| x.seq).min().unwrap_or(0);
    if seqs < 2 {
        return true; // too few to tell
    }
    // the send span of the packets between the first and the last received, sent at the pace: (seqs) gaps
    let paced_ns = pace_gap_ns(run.wire_bytes, pace_bps) as f64 * seqs as f64;
    (hi - lo) as f64 >= paced_ns / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policer behind the port (it sees the train at P): a head of `h`
    /// packets at `p` Mbit/s, then losses, then a tail spaced at `c`; the
    /// server sent a packet every `tx_gap` ns.
    fn policed(count: u32, w: u64, h: u32, p: f64, c: f64, tx_gap: u64) -> Vec<Arrival> {
        let gap_p = (w as f64 * 8e3 / p) as u64; // ns per packet at P
        let gap_c = (w as f64 * 8e3 / c) as u64;
        let mut v = Vec::new();
        let t0 = 1_000_000_000u64;
        for s in 0..h {
            v.push(Arrival { seq: s, rx_ns: t0 + s as u64 * gap_p, tx_ns: 5_000 + s as u64 * tx_gap });
        }
        // after the head, every (gap_c / gap_p)-th packet passes, gap_c apart
        let every = (gap_c / gap_p) as u32;
        let last_head = t0 + (h as u64 - 1) * gap_p;
        let mut k = 1;
        let mut s = h - 1 + every;
        while s < count {
            v.push(Arrival { seq: s, rx_ns: last_head + k * gap_c, tx_ns: 5_000 + s as u64 * tx_gap });
            k += 1;
            s += every;
        }
        v
    }

    #[test]
    fn a_head_at_the_port_rate_a_loss_and_a_tail_at_the_cir_give_p_c_and_the_bucket() {
        // 1500-B packets: 120 us apart at 100 Mbit/s, 600 us at 20; 21 through the bucket;
        // sent at 1 Gbit/s (12 us apart)
        let w = 1500;
        let v = policed(1000, w, 21, 100.0, 20.0, 12_000);
        let a = analyse(1000, w, &v);
        assert_eq!(a.first_loss, Some(21));
        assert_eq!(a.head_packets, 21);
        assert_eq!(a.head_bytes, 21 * 1500);
        assert_eq!(a.head_span_ns, 20 * 120_000);
        assert_eq!(a.leading_mbps, Some(100.0), "20 packets' bytes over 20 gaps at 100 Mbit/s");
        assert_eq!(a.head_send_mbps, Some(1000.0));
        assert_eq!(a.tail_packets, 195, "seqs 25, 30, ..., 995");
        assert_eq!(a.tail_arrival_mbps, Some(20.0));
        assert_eq!(a.tail_send_mbps, Some(200.0), "195 packets sent over 975 x 12 us");
        assert_eq!(a.tail_mbps, Some(20.0), "the smaller");
        assert_eq!(a.received, 21 + 195);
        assert_eq!(a.lost.len() as u32, 1000 - a.received);
        // the head's bytes and half a packet, less what 20 Mbit/s refilled while the head passed at U or P
        assert!((a.bucket_bytes.unwrap() - (32_250.0 - 31_500.0 * 20.0 / 1000.0)).abs() < 1e-6, "{:?}", a.bucket_bytes);
        assert!((a.bucket_min_bytes.unwrap() - (32_250.0 - 31_500.0 * 0.2)).abs() < 1e-6, "{:?}", a.bucket_min_bytes);
        assert!(!a.sender_limited, "sent 12 us apart, arrived 120 us apart");
        assert!(a.notes.is_empty(), "{:?}", a.notes);
    }

    #[test]
    fn a_policer_before_the_port_passes_its_bucket_at_p_and_a_short_tail_read_from_the_send_times() {
        // the emulator's policer: the train reaches it at 12 Gbit/s (1 us apart); 16 packets of the
        // 25-KB bucket pass, then what 20 Mbit/s refills (2 packets over the 1.2 ms the train lasts);
        // all of it queues at the 100-Mbit/s port and arrives 120 us apart
        let w = 1500;
        let mut v: Vec<Arrival> = (0..16).map(|s| Arrival { seq: s, rx_ns: s as u64 * 120_000, tx_ns: s as u64 * 1_000 }).collect();
        v.push(Arrival { seq: 400, rx_ns: 16 * 120_000, tx_ns: 615_000 });
        v.push(Arrival { seq: 999, rx_ns: 17 * 120_000, tx_ns: 1_215_000 });
        let a = analyse(1000, w, &v);
        assert_eq!((a.first_loss, a.head_bytes, a.tail_packets), (Some(16), 24_000, 2));
        assert_eq!(a.leading_mbps, Some(100.0));
        assert_eq!(a.tail_arrival_mbps, Some(100.0), "the tail queued behind the head");
        assert_eq!(a.tail_send_mbps, Some(20.0), "3000 B over the 1.2 ms after the head's last send");
        assert_eq!(a.tail_mbps, Some(20.0));
        assert_eq!(a.head_send_mbps, Some(12_000.0));
        assert!((a.bucket_bytes.unwrap() - (24_750.0 - 24_000.0 * 20.0 / 12_000.0)).abs() < 1e-6, "{:?}", a.bucket_bytes);
        assert!(a.notes.iter().any(|n| n.contains("coarse")), "{:?}", a.notes);
    }

    #[test]
    fn a_wired_port_spaces_every_packet_and_an_aggregating_link_delivers_batches() {
        // a 100-Mbit/s port: 120 us between packets, every gap the mean: 100 batches of one
        let v: Vec<Arrival> = (0..100).map(|s| Arrival { seq: s, rx_ns: s as u64 * 120_000, tx_ns: 0 }).collect();
        let b = batches(&v);
        assert_eq!((b.count, b.packets_p50, b.packets_max), (100, 1.0, 1));
        assert_eq!(b.period_ns_p50, Some(120_000.0));
        // A-MPDUs of 32, 32, 32 and 4 packets, each handed over 2 us apart at the end of a 3-ms
        // transmission: the mean gap is 9 ms / 99 = 91 us, the cut 45 us
        let mut v = Vec::new();
        for (k, n) in [32u32, 32, 32, 4].iter().enumerate() {
            for i in 0..*n {
                let seq = 32 * k as u32 + i;
                v.push(Arrival { seq, rx_ns: k as u64 * 3_000_000 + i as u64 * 2_000, tx_ns: 0 });
            }
        }
        v.reverse(); // any order
        let b = batches(&v);
        assert_eq!(b.sizes, vec![32, 32, 32, 4]);
        assert_eq!(b.periods_ns, vec![3_000_000; 3]);
        assert_eq!((b.packets_p50, b.packets_max, b.period_ns_p50), (32.0, 32, Some(3_000_000.0)));
        // two arrivals or none: one batch (or none), no period
        assert_eq!(batches(&v[..2]).sizes, vec![2]);
        assert_eq!(batches(&v[..2]).period_ns_p50, None);
        assert_eq!(batches(&[]).count, 0);
    }

    #[test]
    fn a_head_sent_no_faster_than_it_arrived_is_the_senders() {
        let w = 1500;
        let mut v = policed(100, w, 10, 100.0, 20.0, 1_000);
        for x in v.iter_mut() {
            x.tx_ns = x.rx_ns; // the server's loop took as long as the path
        }
        let a = analyse(100, w, &v);
        assert!(a.sender_limited);
        assert_eq!(a.bucket_bytes, None);
        assert!(a.notes[0].contains("the sender, not the path"), "{:?}", a.notes);
        assert!(a.notes[0].starts_with("the server sent the head at "), "{:?}", a.notes);
        // an up train: the same figures, the client named as the sender
        let u = analyse_with(Direction::Up, 100, w, &v, None);
        assert_eq!((u.leading_mbps, u.head_send_mbps, u.sender_limited), (a.leading_mbps, a.head_send_mbps, true));
        assert_eq!(u.notes[0], a.notes[0].replacen("the server", "the client", 1));
    }

    #[test]
    fn without_loss_or_with_a_one_packet_head_the_train_says_what_it_cannot_tell() {
        let w = 1000;
        let v: Vec<Arrival> = (0..50).map(|s| Arrival { seq: s, rx_ns: s as u64 * 80_000, tx_ns: 0 }).collect();
        let a = analyse(50, w, &v);
        assert_eq!((a.first_loss, a.leading_mbps, a.tail_mbps, a.bucket_bytes), (None, Some(100.0), None, None));
        assert!(a.notes.iter().any(|n| n.contains("no loss")), "{:?}", a.notes);
        // the first packet lost: no head; the tail's rate excludes its first packet
        let a = analyse(51, w, &v.iter().map(|x| Arrival { seq: x.seq + 1, ..*x }).collect::<Vec<_>>());
        assert_eq!((a.first_loss, a.head_packets, a.leading_mbps), (Some(0), 0, None));
        assert_eq!(a.tail_mbps, Some(100.0));
        assert!(a.notes[0].contains("no port rate"), "{:?}", a.notes);
    }

    #[test]
    fn at_most_max_in_flight_trains_go_at_once_and_a_session_has_one() {
        let srv = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap(); // never read: the trains are dropped there
        let to = sink.local_addr().unwrap();
        let mut t = TrainServer::new();
        let now = sys::mono_ns();
        let ask = |t: &mut TrainServer, session: u32| {
            let cookie = t.cookie(to, session, now / COOKIE_EPOCH_NS);
            t.handle(&srv, to, session, &build_request(session, 100, 64, &cookie, None), None, now)
        };
        // each train stays in flight until its second DONE, DONE_AGAIN_NS after it
        let got: Vec<Handled> = (0..MAX_IN_FLIGHT as u32 + 1).map(|s| ask(&mut t, s)).collect();
        assert_eq!(&got[..MAX_IN_FLIGHT], &[Handled::Started; MAX_IN_FLIGHT]);
        assert_eq!(got[MAX_IN_FLIGHT], Handled::Refused(Status::Busy));
        assert_eq!(ask(&mut t, 0), Handled::Refused(Status::Busy), "its own train is in flight");
        // a wrong cookie gets a cookie, never a train; garbage is not a request
        assert_eq!(t.handle(&srv, to, 99, &build_request(99, 100, 64, &[3; COOKIE_LEN], None), None, now), Handled::Cookie);
        assert_eq!(parse_request(&[0u8; 3]), None);
        assert_eq!(parse_answer(&[0u8; 3]), None);
        let deadline = sys::mono_ns() + 5_000_000_000;
        while t.in_flight() > 0 && sys::mono_ns() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(t.in_flight(), 0, "every train leaves the table");
    }

    #[test]
    fn answers_and_requests_parse_back_and_never_exceed_the_request() {
        let k = Key::new(b"s");
        let r = build_request(9, 1000, 1472, &[7; COOKIE_LEN], Some(&k));
        let p = wire::parse(&r, Some(&k)).unwrap();
        assert_eq!((p.kind, p.session), (Kind::TrainRequest, 9));
        assert_eq!(parse_request(&r), Some(Request { count: 1000, size: 1472, cookie: [7; COOKIE_LEN], pace_bps: 0 }));
        let r = build_paced_request(9, 1000, 1472, 64_250_000, &[7; COOKIE_LEN], Some(&k));
        assert_eq!(r.len(), REQ_LEN + TAG_LEN, "the pace rides in the request's reserved bytes");
        assert_eq!(parse_request(&r), Some(Request { count: 1000, size: 1472, cookie: [7; COOKIE_LEN], pace_bps: 64_250_000 }));
        let a = Answer { status: Status::Budget, value: 1234, cookie: [1; COOKIE_LEN], span_ns: 5, errors: 2, pace_bps: 64_000_000 };
        let b = build_answer(9, &a, Some(&k));
        assert_eq!(b.len(), r.len(), "an answer is never longer than the request");
        assert_eq!(wire::parse(&b, Some(&k)).unwrap().kind, Kind::TrainAnswer);
        assert_eq!(parse_answer(&b), Some(a));
        assert!(wire::parse(&b, Some(&Key::new(b"other"))).is_err());
    }

    #[test]
    fn a_pace_spaces_packets_by_their_bytes_and_never_catches_up_in_a_burst() {
        // 1500 B at 60 Mbit/s: 200 us; at 12 Gbit/s 1 us; no pace: back to back
        assert_eq!(pace_gap_ns(1500, 60_000_000), 200_000);
        assert_eq!(pace_gap_ns(1500, 12_000_000_000), 1_000);
        assert_eq!(pace_gap_ns(1500, 0), 0);
        assert_eq!(paced_span_ns(1000, 200_000), 199_800_000, "999 gaps");
        assert_eq!(paced_span_ns(0, 200_000), 0);
        // on time or up to a gap late: the schedule holds (the next one leaves up to a gap early)
        assert_eq!(next_due(1_000, 1_000, 200), 1_200);
        assert_eq!(next_due(1_000, 1_150, 200), 1_200);
        assert_eq!(next_due(1_000, 1_200, 200), 1_200);
        // more than a gap late: restart from the late packet, no burst to catch up
        assert_eq!(next_due(1_000, 1_201, 200), 1_401);
        assert_eq!(next_due(1_000, 5_000, 200), 5_200);
    }

    #[test]
    fn a_paced_train_is_sent_at_its_pace_on_loopback() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        crate::sys::set_buffers(rx.as_raw_fd(), 8 << 20);
        crate::sys::force_rcvbuf(rx.as_raw_fd(), 8 << 20);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // 100 packets of 1000 B (1028 on the wire) at 82.24 Mbit/s: 100 us apart, 9.9 ms in all
        let gap = pace_gap_ns(1028, 82_240_000);
        assert_eq!(gap, 100_000);
        let (sent, span, errors) = send_train(&tx, rx.local_addr().unwrap(), 1, 100, 1000, gap, None);
        assert_eq!((sent, errors), (100, 0));
        // at least 99 gaps less the one packet that may leave early (a loaded machine adds lateness only:
        // 37.7 ms with the test suite beside it at a load of 11 on 2 cores)
        assert!(span >= 98 * gap, "{span} ns");
        assert!(span < 1_000_000_000, "{span} ns");
    }

    /// A policer (rate `c` Mbit/s, bucket `b` B, full) in front of a port that
    /// never queues: a train of `count` packets of `w` B sent `gap` ns apart; the
    /// arrivals (the port's delay left out: it is the same for all).
    fn paced_through_policer(count: u32, w: u64, gap: u64, c: f64, b: f64) -> Vec<Arrival> {
        let mut tokens = b;
        let mut v = Vec::new();
        for s in 0..count {
            if s > 0 {
                tokens = (tokens + c * 1e6 / 8.0 * gap as f64 / 1e9).min(b);
            }
            if tokens >= w as f64 {
                tokens -= w as f64;
                v.push(Arrival { seq: s, rx_ns: 1_000_000 + s as u64 * gap, tx_ns: s as u64 * gap });
            }
        }
        v
    }

    #[test]
    fn a_paced_train_reads_the_bucket_with_its_pace_as_the_send_rate() {
        // seed 8 path 14's policer (39 Mbit/s, 271 KB) paced at 64 Mbit/s (187.5 us per 1500 B): each packet
        // takes 1500 B and the gap refills 914.06, so packet s finds 271000 - 585.94 s B: below a packet's
        // from s = 460 (269500 / 585.94 = 459.9) — 460 pass before the first loss, then 39/64 of the rest
        let (w, gap, c, b) = (1500u64, 187_500u64, 39.0, 271_000.0);
        let v = paced_through_policer(1000, w, gap, c, b);
        let a = analyse_paced(1000, w, &v, 64.0);
        assert_eq!(a.first_loss, Some(460));
        assert!(!a.sender_limited, "a paced head is the pace, not a sender's limit");
        assert_eq!(a.head_send_mbps, Some(64.0));
        assert_eq!(a.leading_mbps, Some(64.0));
        // the tail passes at the policer's rate, within a packet over its 537 x 187.5 us
        let tail = a.tail_mbps.unwrap();
        assert!((tail - 39.0).abs() < 0.5, "{tail}");
        // (460 + 1/2) x 1500 - 460 x 1500 x tail / 64: within a packet of 271 KB
        let want = 460.5 * 1500.0 - 460.0 * 1500.0 * tail / 64.0;
        assert!((a.bucket_bytes.unwrap() - want).abs() < 1e-6, "{:?}", a.bucket_bytes);
        assert!((a.bucket_bytes.unwrap() - b).abs() < 1500.0, "{:?}", a.bucket_bytes);
        // the same arrivals read as an unpaced train: the head "sent no faster than it arrived" - no bucket
        let u = analyse(1000, w, &v);
        assert!(u.sender_limited);
        assert_eq!(u.bucket_bytes, None);
    }

    #[test]
    fn a_server_that_ignored_the_pace_is_told_by_its_done_or_its_send_times() {
        let w = 1500;
        let paced: Vec<Arrival> = (0..50).map(|s| Arrival { seq: s, rx_ns: s as u64 * 200_000, tx_ns: s as u64 * 200_000 }).collect();
        let burst: Vec<Arrival> = (0..50).map(|s| Arrival { seq: s, rx_ns: s as u64 * 200_000, tx_ns: s as u64 * 1_000 }).collect();
        let run = |arrivals: &[Arrival], done_pace_bps| TrainRun { arrivals: arrivals.to_vec(), wire_bytes: w, done_pace_bps, ..Default::default() };
        // the DONE echoes the pace, or 0 from an old server
        assert!(sent_paced(&run(&burst, Some(60_000_000)), 60_000_000));
        assert!(!sent_paced(&run(&paced, Some(0)), 60_000_000));
        // both DONEs lost: 49 gaps of 200 us at 60 Mbit/s are 9.8 ms; sent in 49 us, an old server's
        assert!(sent_paced(&run(&paced, None), 60_000_000));
        assert!(!sent_paced(&run(&burst, None), 60_000_000));
    }
}
