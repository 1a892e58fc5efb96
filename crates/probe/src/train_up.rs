//! Packet trains up, client → server (`udp train --up`): the uplink's port
//! rate, its policer's rate and bucket, its queue's drain.
//!
//! The measurement of [`crate::train`], the other way. The client sends the
//! train (back to back, or paced at `--rate`: [`train::send_train_with`],
//! the down train's sender and pacing) and keeps each packet's send stamp;
//! the server stamps each packet's arrival (the kernel's receive time, as
//! [`crate::udp::serve`] reads every datagram: CLOCK_REALTIME ns) and keeps
//! a record of it; the client then fetches the records and runs the down
//! train's analysis on them ([`train::analyse_with`]: the arrival stamps are
//! the server's clock, the send stamps the client's, and only differences
//! of each are used, so the clocks need not agree). The model, its formulas
//! and what one train cannot tell are the down train's (`train.rs`); here
//! the client's NIC is the first port the train meets, so a leading rate
//! equal to the client's own line rate (its Wi-Fi's, its Ethernet's) is
//! that line's.
//!
//! Protocol ([`crate::wire`]'s header; every packet signed when the server
//! holds a `--secret`; integers little endian):
//!
//! ```text
//! request (6), its op at 22:
//!   start  (op 0), REQ_LEN B + tag:  16 count u32 | 20 size u16 | 22 op 0 | 23 0 | 24 cookie [16]
//!                                    | 40 pace bit/s u64 (0: back to back) | 48.. zero
//!   report (op 1), L B tag included, REPORT_HEAD_LEN (+ tag) ≤ L ≤ MAX_PACKET:
//!                                    16 first record u32 | 20 0 0 | 22 op 1 | 23.. zero (padding)
//!   done   (op 2), REQ_LEN B + tag:  16 0 0 0 0 0 0 | 22 op 2 | 23.. zero
//! answer (7), the request's length, its op at 17:
//!   to a start:   16 status u8 (COOKIE, READY, a refusal) | 17 op 0 | 18 0 0 | 20 value u32
//!                 | 24 cookie [16] | 40.. zero
//!   to a report:  16 status u8 (REPORT, GONE) | 17 op 1 | 18 records here u16 | 20 first record u32
//!                 | 24 received u32 | 28 duplicates u32 | 32 ns since the last arrival u64
//!                 | 40 largest gap between arrivals ns u64 | 48 socket drops since the slot began u32
//!                 (u32::MAX: not counted) | 52 stamps u8 (1: kernel) | 53 0 0 0
//!                 | 56 records, RECORD_LEN B each: seq u16 | rx ns u64 | .. zero | tag
//! data (5), size B, from the client: a down train's packet (seq = index
//!   | 16 client send ns u64 | 24 count u32 | 28.. zero | tag)
//! ```
//!
//! 1. The client asks to start (cookie zero); the server answers `COOKIE`
//!    (the down train's cookie: HMAC of its key over the address, port,
//!    session and a 10-s epoch), no longer than the request. Echoed, the
//!    server checks the down train's bounds and the source's budget and
//!    answers `READY` (value = count), holding a slot for the train keyed by
//!    (client address and port, session). A start repeated with the same
//!    count, size and pace before a packet arrived gets `READY` again (the
//!    first was lost; nothing is charged twice); any other start of that
//!    session while its slot lives is `BUSY` 0.
//! 2. The client sends the train. The server records a data packet only for
//!    a slot of its (address, session), with seq < count and the slot's
//!    size, once per seq (a later copy counts as a duplicate), and before
//!    the per-client packet-rate limit (`--max-pps`: a train is a burst);
//!    anything else is ignored. It never answers a data packet.
//! 3. The client polls with report requests too short to carry a record
//!    (first 0) every [`UP_POLL_NS`] (at least the handshake's round trip)
//!    until the server holds `count` records or the slot has been quiet (no
//!    arrival) for max(4 × the largest gap between arrivals, 2 × the
//!    handshake's round trip, [`UP_QUIET_MIN_NS`]): a queue on the path
//!    delivers the train's tail late, and the polls wait behind it. A poll
//!    unanswered after 4 handshake round trips (50 ms to `--timeout`) is
//!    asked again: behind a policer the first poll meets the bucket the
//!    train emptied.
//! 4. It fetches the records in arrival order, up to [`UP_FETCH_WINDOW`]
//!    requests in flight (halved at each request asked again, one more at
//!    each answer), each padded to the train's packet size (at least
//!    [`UP_FETCH_MIN_LEN`]) so that its answer carries (L − 56 − tag) / 10
//!    records: 141 in 1472 B unsigned, 4096 records in 30 answers. A request
//!    unanswered after 4 round trips (50 ms to `--timeout`) is asked again,
//!    up to [`UP_FETCH_TRIES`] times.
//! 5. It sends `done`; the server frees the slot. The server frees a slot on
//!    its own too: quiet (no packet, no request) for [`UP_IDLE_NS`], or
//!    [`UP_LIFETIME_NS`] after it began.
//!
//! An answer is never longer than its request: a report carries as many
//! records as fit in the request's length, so the server returns no more
//! bytes than it was sent, and the client pads its requests to get more.
//!
//! Server bounds (the down train's, [`crate::train`]): count ≤ [`MAX_COUNT`],
//! size in [`train::MIN_SIZE`]..=[`train::MAX_SIZE`], a paced train no longer
//! than [`MAX_PACED_NS`], one up train per session and [`MAX_IN_FLIGHT`]
//! being received at once (apart from the down trains being sent), the
//! source address's budget charged count × the packets' IP bytes (the same
//! token bucket as its down trains: the server sends nothing, but its
//! receive buffer and the path carry the train), only after the cookie.
//! A slot holds at most count records (16 B each in memory) and count flags:
//! 70 KB at most, 280 KB for [`MAX_IN_FLIGHT`] slots.
//!
//! The server's socket: [`UP_RCVBUF`] of receive buffer where it may raise
//! it (`SO_RCVBUFFORCE` needs CAP_NET_ADMIN; otherwise `net.core.rmem_max`
//! caps it); its `SO_RXQ_OVFL` counter says what the socket dropped while
//! the train arrived (all its clients' datagrams: a busy server's drops are
//! not all this train's), and the client notes such losses as not the
//! path's.
//!
//! A server older than up trains ignores kinds 6-7 (`BadKind`); the client,
//! which sends an echo request beside each start, then tells "the server
//! predates up trains" from "no answer".

use crate::sys;
use crate::train::{
    self, check_bounds, flags_of, ip_overhead, msg_len, put_header, refusal_words, Arrival, Direction, Handled, Request, Status, TrainCfg, TrainRun,
    TrainServer, COOKIE_LEN, MAX_COUNT, MAX_IN_FLIGHT, MAX_PACED_NS, TRAIN_CAP_NS,
};
use crate::wire::{self, Key, Kind, FLAG_AUTH, HEADER_LEN, TAG_LEN};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// A report's fields before its records.
pub const REPORT_HEAD_LEN: usize = 56;
/// One record: seq u16 (a train has at most [`MAX_COUNT`] = 4096 packets) and the rx stamp u64.
pub const RECORD_LEN: usize = 10;
/// A fetch request's least length: a 576-B IPv4 datagram, which every host
/// accepts (RFC 791), for a train of small packets (47 records signed, 49 not).
pub const UP_FETCH_MIN_LEN: usize = 548;
/// Fetch requests in flight at once: 8 × 1.5 KB, which a policer's bucket
/// refills over the quiet wait before the fetch ([`UP_QUIET_MIN_NS`]) at any
/// rate above 0.4 Mbit/s.
pub const UP_FETCH_WINDOW: usize = 8;
/// A fetch request is asked again this many times before the client gives up.
pub const UP_FETCH_TRIES: u32 = 3;
/// The polls' period after the train (at least the handshake's round trip):
/// a dozen polls of 72 B in the least quiet wait.
pub const UP_POLL_NS: u64 = 20_000_000;
/// The least quiet (no arrival at the server) that ends the train: the down
/// client's wait for packets after the last one.
pub const UP_QUIET_MIN_NS: u64 = 250_000_000;
/// A poll or a fetch request unanswered after 4 round trips is asked again,
/// no sooner than this and no later than `--timeout` ([`ask_again_ns`]).
pub const UP_ASK_AGAIN_MIN_NS: u64 = 50_000_000;
/// The server frees a slot quiet (no packet, no request) this long: the
/// client polls every [`UP_POLL_NS`] and asks again within its `--timeout`
/// (1 s by default), so 10 s of silence is a client gone.
pub const UP_IDLE_NS: u64 = 10_000_000_000;
/// ... and any slot this long after it began: the longest paced train and
/// the client's own cap ([`TRAIN_CAP_NS`]): no slot outlives its client.
pub const UP_LIFETIME_NS: u64 = MAX_PACED_NS + TRAIN_CAP_NS;
/// The server socket's receive buffer (the kernel doubles it for its
/// bookkeeping): room for [`MAX_COUNT`] full packets at up to 2.5 KB of
/// kernel memory each (a datagram's skb costs ~1.5-2× its 1500 B; the
/// client's `run_train` sizes its buffer so), 10.2 MB asked, 20.4 MB the
/// limit. Memory is only taken while datagrams wait in the queue.
pub const UP_RCVBUF: i32 = (MAX_COUNT as usize * (train::MAX_SIZE + 1024)) as i32;
/// A report's drop counter when the server cannot count its socket's drops.
pub const DROPS_NOT_COUNTED: u32 = u32::MAX;

const OP_START: u8 = 0;
const OP_REPORT: u8 = 1;
const OP_DONE: u8 = 2;

// ---------------------------------------------------------------- wire

/// The least report request (and answer) with `flags`: a poll, no record.
pub fn report_min_len(flags: u8) -> usize {
    REPORT_HEAD_LEN + if flags & FLAG_AUTH != 0 { TAG_LEN } else { 0 }
}

/// How many records an answer of `len` B (tag included) with `flags` carries.
pub fn records_fit(len: usize, flags: u8) -> usize {
    len.saturating_sub(report_min_len(flags)) / RECORD_LEN
}

/// A client's up-train request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpRequest {
    /// start a train (the down train's request fields)
    Start(Request),
    /// the records from index `first` on, as many as fit in this request's length
    Report { first: u32 },
    /// the client has what it needs: free the slot
    Done,
}

/// A start request, signed with `key`.
pub fn build_start(session: u32, count: u32, size: u16, pace_bps: u64, cookie: &[u8; COOKIE_LEN], key: Option<&Key>) -> Vec<u8> {
    let flags = flags_of(key);
    let mut b = vec![0u8; msg_len(flags)];
    put_header(&mut b, Kind::UpRequest, flags, session, 0);
    b[16..20].copy_from_slice(&count.to_le_bytes());
    b[20..22].copy_from_slice(&size.to_le_bytes());
    b[22] = OP_START;
    b[24..40].copy_from_slice(cookie);
    b[40..48].copy_from_slice(&pace_bps.to_le_bytes());
    wire::sign(&mut b, key);
    b
}

/// A report request of `len` B (tag included; at least [`report_min_len`],
/// at most [`wire::MAX_PACKET`]) for the records from `first` on.
pub fn build_report_request(session: u32, first: u32, len: usize, key: Option<&Key>) -> Vec<u8> {
    let flags = flags_of(key);
    let mut b = vec![0u8; len.clamp(report_min_len(flags), wire::MAX_PACKET)];
    put_header(&mut b, Kind::UpRequest, flags, session, 0);
    b[16..20].copy_from_slice(&first.to_le_bytes());
    b[22] = OP_REPORT;
    wire::sign(&mut b, key);
    b
}

/// A done, signed with `key`.
pub fn build_done(session: u32, key: Option<&Key>) -> Vec<u8> {
    let flags = flags_of(key);
    let mut b = vec![0u8; msg_len(flags)];
    put_header(&mut b, Kind::UpRequest, flags, session, 0);
    b[22] = OP_DONE;
    wire::sign(&mut b, key);
    b
}

/// The fields of an up-train request `pkt` (already passed by
/// [`wire::parse`]); None when its op is unknown or its length not its op's.
pub fn parse_up_request(pkt: &[u8]) -> Option<UpRequest> {
    if pkt.len() < HEADER_LEN + 8 {
        return None;
    }
    let flags = pkt[3];
    let u32_at = |i: usize| u32::from_le_bytes(pkt[i..i + 4].try_into().unwrap());
    match pkt[22] {
        OP_START if pkt.len() == msg_len(flags) => {
            let mut cookie = [0u8; COOKIE_LEN];
            cookie.copy_from_slice(&pkt[24..40]);
            Some(UpRequest::Start(Request {
                count: u32_at(16),
                size: u16::from_le_bytes(pkt[20..22].try_into().unwrap()),
                cookie,
                pace_bps: u64::from_le_bytes(pkt[40..48].try_into().unwrap()),
            }))
        }
        OP_REPORT if (report_min_len(flags)..=wire::MAX_PACKET).contains(&pkt.len()) => Some(UpRequest::Report { first: u32_at(16) }),
        OP_DONE if pkt.len() == msg_len(flags) => Some(UpRequest::Done),
        _ => None,
    }
}

/// What the server knows of an up train's arrivals: a report.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// the index of `records[0]` among the arrivals (in arrival order)
    pub first: u32,
    /// records the server holds (one per sequence number that arrived)
    pub received: u32,
    /// copies of a sequence number that had already arrived
    pub duplicates: u32,
    /// since the last arrival (since the slot began, before any), the server's CLOCK_MONOTONIC
    pub quiet_ns: u64,
    /// the largest gap between two successive arrivals' stamps
    pub max_gap_ns: u64,
    /// datagrams the server's socket dropped since the slot began (None: it cannot count them)
    pub drops: Option<u32>,
    /// every arrival stamped with the kernel's receive time
    pub kernel_stamps: bool,
    /// (seq, the server's receive stamp ns), from `first` on
    pub records: Vec<(u32, u64)>,
}

/// An up-train answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpAnswer {
    /// to a start: COOKIE (echo `cookie`), READY (value = count) or a refusal
    Start { status: Status, value: u32, cookie: [u8; COOKIE_LEN] },
    /// to a report request: REPORT (the report) or GONE (no slot: the report is empty)
    Report { status: Status, report: Report },
}

fn answer_header(len: usize, key: Option<&Key>, session: u32, status: Status, op: u8) -> Vec<u8> {
    let flags = flags_of(key);
    let mut b = vec![0u8; len];
    put_header(&mut b, Kind::UpAnswer, flags, session, 0);
    b[16] = status as u8;
    b[17] = op;
    b
}

/// The answer to a start (the request's length: [`train::REQ_LEN`] + tag).
pub fn build_start_answer(session: u32, status: Status, value: u32, cookie: &[u8; COOKIE_LEN], key: Option<&Key>) -> Vec<u8> {
    let mut b = answer_header(msg_len(flags_of(key)), key, session, status, OP_START);
    b[20..24].copy_from_slice(&value.to_le_bytes());
    b[24..40].copy_from_slice(cookie);
    wire::sign(&mut b, key);
    b
}

/// The answer to a report request of `len` B: exactly `len` B, with as many
/// of `r.records` as fit ([`records_fit`]).
pub fn build_report(session: u32, len: usize, status: Status, r: &Report, key: Option<&Key>) -> Vec<u8> {
    let flags = flags_of(key);
    let len = len.clamp(report_min_len(flags), wire::MAX_PACKET);
    let n = r.records.len().min(records_fit(len, flags));
    let mut b = answer_header(len, key, session, status, OP_REPORT);
    b[18..20].copy_from_slice(&(n as u16).to_le_bytes());
    b[20..24].copy_from_slice(&r.first.to_le_bytes());
    b[24..28].copy_from_slice(&r.received.to_le_bytes());
    b[28..32].copy_from_slice(&r.duplicates.to_le_bytes());
    b[32..40].copy_from_slice(&r.quiet_ns.to_le_bytes());
    b[40..48].copy_from_slice(&r.max_gap_ns.to_le_bytes());
    b[48..52].copy_from_slice(&r.drops.unwrap_or(DROPS_NOT_COUNTED).to_le_bytes());
    b[52] = r.kernel_stamps as u8;
    for (i, &(seq, rx)) in r.records[..n].iter().enumerate() {
        let at = REPORT_HEAD_LEN + i * RECORD_LEN;
        b[at..at + 2].copy_from_slice(&(seq as u16).to_le_bytes());
        b[at + 2..at + 10].copy_from_slice(&rx.to_le_bytes());
    }
    wire::sign(&mut b, key);
    b
}

/// The fields of an up-train answer `pkt` (already passed by [`wire::parse`]).
pub fn parse_up_answer(pkt: &[u8]) -> Option<UpAnswer> {
    if pkt.len() < HEADER_LEN + 8 {
        return None;
    }
    let flags = pkt[3];
    let status = Status::from_u8(pkt[16])?;
    let u32_at = |i: usize| u32::from_le_bytes(pkt[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(pkt[i..i + 8].try_into().unwrap());
    match pkt[17] {
        OP_START if pkt.len() == msg_len(flags) => {
            let mut cookie = [0u8; COOKIE_LEN];
            cookie.copy_from_slice(&pkt[24..40]);
            Some(UpAnswer::Start { status, value: u32_at(20), cookie })
        }
        OP_REPORT if (report_min_len(flags)..=wire::MAX_PACKET).contains(&pkt.len()) => {
            let n = u16::from_le_bytes(pkt[18..20].try_into().unwrap()) as usize;
            if n > records_fit(pkt.len(), flags) {
                return None;
            }
            let drops = u32_at(48);
            let records = (0..n)
                .map(|i| {
                    let at = REPORT_HEAD_LEN + i * RECORD_LEN;
                    (u16::from_le_bytes(pkt[at..at + 2].try_into().unwrap()) as u32, u64_at(at + 2))
                })
                .collect();
            let report = Report {
                first: u32_at(20),
                received: u32_at(24),
                duplicates: u32_at(28),
                quiet_ns: u64_at(32),
                max_gap_ns: u64_at(40),
                drops: (drops != DROPS_NOT_COUNTED).then_some(drops),
                kernel_stamps: pkt[52] == 1,
                records,
            };
            Some(UpAnswer::Report { status, report })
        }
        _ => None,
    }
}

// ---------------------------------------------------------------- server

/// An up train the server is receiving: its parameters and its arrivals.
#[derive(Debug, Clone)]
pub(crate) struct UpSlot {
    count: u32,
    size: u16,
    pace_bps: u64,
    /// CLOCK_MONOTONIC ns: when the slot began, its last packet or request, its last arrival
    began_ns: u64,
    touched_ns: u64,
    last_arrival_ns: Option<u64>,
    /// the last arrival's receive stamp (the records' clock)
    last_rx_ns: Option<u64>,
    max_gap_ns: u64,
    seen: Vec<bool>,
    /// (seq, receive stamp) in arrival order: at most `count`
    records: Vec<(u16, u64)>,
    duplicates: u32,
    user_stamps: u32,
    /// the socket's drop counter when the slot began (None: not counted)
    drops_at_start: Option<u32>,
}

/// What a data packet did to the up trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpData {
    Recorded,
    /// a copy of a sequence number already recorded (counted in its slot)
    Duplicate,
    /// no slot of its (address, session), seq beyond the count, or not the slot's size
    Ignored,
}

/// The server's trains both ways: the down trains' server ([`TrainServer`]: its cookie key, the source addresses'
/// budgets, the trains being sent), whose cookie and budget the up trains share, and the up trains being received.
pub struct Trains {
    down: TrainServer,
    up: HashMap<(SocketAddr, u32), UpSlot>,
}

impl Default for Trains {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for Trains {
    type Target = TrainServer;
    fn deref(&self) -> &TrainServer {
        &self.down
    }
}

impl std::ops::DerefMut for Trains {
    fn deref_mut(&mut self) -> &mut TrainServer {
        &mut self.down
    }
}

impl Trains {
    pub fn new() -> Trains {
        Trains { down: TrainServer::new(), up: HashMap::new() }
    }

    /// Up trains being received now.
    pub fn up_in_flight(&self) -> usize {
        self.up.len()
    }

    /// Free the slots quiet for [`UP_IDLE_NS`] or older than [`UP_LIFETIME_NS`] (`now`: CLOCK_MONOTONIC ns).
    pub fn expire_up(&mut self, now: u64) {
        self.up.retain(|_, s| now.saturating_sub(s.touched_ns) < UP_IDLE_NS && now.saturating_sub(s.began_ns) < UP_LIFETIME_NS);
    }

    /// Record the data packet (`seq`, `len` B) from `from`'s `session`,
    /// received at `rx_ns` (`kernel`: the kernel's stamp), `now` CLOCK_MONOTONIC.
    #[allow(clippy::too_many_arguments)]
    pub fn up_data(&mut self, from: SocketAddr, session: u32, seq: u64, len: usize, rx_ns: u64, kernel: bool, now: u64) -> UpData {
        let Some(s) = self.up.get_mut(&(from, session)) else { return UpData::Ignored };
        if seq >= s.count as u64 || len != s.size as usize {
            return UpData::Ignored;
        }
        s.touched_ns = now;
        if s.seen[seq as usize] {
            s.duplicates = s.duplicates.saturating_add(1);
            return UpData::Duplicate;
        }
        s.seen[seq as usize] = true;
        if let Some(prev) = s.last_rx_ns {
            s.max_gap_ns = s.max_gap_ns.max(rx_ns.saturating_sub(prev));
        }
        s.last_rx_ns = Some(rx_ns);
        s.last_arrival_ns = Some(now);
        s.records.push((seq as u16, rx_ns));
        if !kernel {
            s.user_stamps += 1;
        }
        UpData::Recorded
    }

    /// Answer the up-train request `pkt` (validated by [`wire::parse`]) from
    /// `from`: what it led to and the answer to send back (None: no answer),
    /// never longer than `pkt`. `now` is CLOCK_MONOTONIC ns, `drops` the
    /// socket's drop counter now (None: not counted).
    pub fn respond_up(&mut self, from: SocketAddr, session: u32, pkt: &[u8], key: Option<&Key>, now: u64, drops: Option<u32>) -> (Handled, Option<Vec<u8>>) {
        self.expire_up(now);
        let Some(req) = parse_up_request(pkt) else { return (Handled::Malformed, None) };
        let start_answer = |status: Status, value: u32, cookie: &[u8; COOKIE_LEN]| Some(build_start_answer(session, status, value, cookie, key));
        match req {
            UpRequest::Start(r) => {
                let refuse = |status: Status, value: u32| (Handled::Refused(status), start_answer(status, value, &[0; COOKIE_LEN]));
                if let Err((status, value)) = check_bounds(&r, &from) {
                    return refuse(status, value);
                }
                if let Err(fresh) = self.check_cookie(from, session, &r.cookie, now) {
                    return (Handled::Cookie, start_answer(Status::Cookie, 0, &fresh));
                }
                if let Some(s) = self.up.get_mut(&(from, session)) {
                    // the same start again before a packet came: its READY was lost
                    if (s.count, s.size, s.pace_bps) == (r.count, r.size, r.pace_bps) && s.records.is_empty() && s.duplicates == 0 {
                        s.touched_ns = now;
                        return (Handled::Started, start_answer(Status::Ready, r.count, &[0; COOKIE_LEN]));
                    }
                    return refuse(Status::Busy, 0);
                }
                // one slot per source address: a new train of the address (its cookie echoed) takes the place of
                // its older one. A slot lives as long as its client keeps it busy, up to UP_LIFETIME_NS, so one host
                // could otherwise hold all MAX_IN_FLIGHT slots with tiny trains and deny up trains to everyone for
                // a minute at a time; now that takes MAX_IN_FLIGHT hosts, each one that echoed its cookie (a real
                // address). Replacing rather than refusing: a client whose `done` was lost starts its next train at
                // once (measure sends the paced train right after the first), and a host can end only its own
                // trains (two measuring hosts behind one NAT address cut each other's: the one cut gets GONE)
                self.up.retain(|(a, _), _| a.ip() != from.ip());
                if self.up.len() >= MAX_IN_FLIGHT {
                    return refuse(Status::Busy, MAX_IN_FLIGHT as u32);
                }
                let bytes = r.count as f64 * (r.size as usize + ip_overhead(&from)) as f64;
                if let Err((status, value)) = self.charge(from, bytes, now) {
                    return refuse(status, value);
                }
                let slot = UpSlot {
                    count: r.count,
                    size: r.size,
                    pace_bps: r.pace_bps,
                    began_ns: now,
                    touched_ns: now,
                    last_arrival_ns: None,
                    last_rx_ns: None,
                    max_gap_ns: 0,
                    seen: vec![false; r.count as usize],
                    records: Vec::new(),
                    duplicates: 0,
                    user_stamps: 0,
                    drops_at_start: drops,
                };
                self.up.insert((from, session), slot);
                (Handled::Started, start_answer(Status::Ready, r.count, &[0; COOKIE_LEN]))
            }
            UpRequest::Report { first } => {
                let Some(s) = self.up.get_mut(&(from, session)) else {
                    return (Handled::NoSlot, Some(build_report(session, pkt.len(), Status::Gone, &Report::default(), key)));
                };
                s.touched_ns = now;
                let n = records_fit(pkt.len(), flags_of(key));
                let from_i = (first as usize).min(s.records.len());
                let report = Report {
                    first,
                    received: s.records.len() as u32,
                    duplicates: s.duplicates,
                    quiet_ns: now.saturating_sub(s.last_arrival_ns.unwrap_or(s.began_ns)),
                    max_gap_ns: s.max_gap_ns,
                    drops: s.drops_at_start.zip(drops).map(|(a, b)| b.wrapping_sub(a).min(DROPS_NOT_COUNTED - 1)),
                    kernel_stamps: s.user_stamps == 0,
                    records: s.records[from_i..(from_i + n).min(s.records.len())].iter().map(|&(q, rx)| (q as u32, rx)).collect(),
                };
                (Handled::Reported, Some(build_report(session, pkt.len(), Status::Records, &report, key)))
            }
            UpRequest::Done => match self.up.remove(&(from, session)) {
                Some(_) => (Handled::Freed, None),
                None => (Handled::NoSlot, None),
            },
        }
    }

    /// [`Trains::respond_up`], the answer sent to `from` on `sock`.
    #[allow(clippy::too_many_arguments)]
    pub fn handle_up(&mut self, sock: &UdpSocket, from: SocketAddr, session: u32, pkt: &[u8], key: Option<&Key>, now: u64, drops: Option<u32>) -> Handled {
        let (h, answer) = self.respond_up(from, session, pkt, key, now, drops);
        if let Some(a) = answer {
            debug_assert!(a.len() <= pkt.len());
            let _ = sock.send_to(&a, from);
        }
        h
    }
}

// ---------------------------------------------------------------- client

/// The server's GONE in words, with why a slot ends.
fn gone_words() -> String {
    format!(
        "{} (it frees one quiet for {} s or {} s after it began, and one whose address started a newer up train)",
        refusal_words(Direction::Up, Status::Gone, 0, 0, 0),
        UP_IDLE_NS / 1_000_000_000,
        UP_LIFETIME_NS / 1_000_000_000
    )
}

/// What one receive from the server brought.
enum Got {
    Answer(UpAnswer),
    /// an echo reply: the server is there (and older than up trains, if it answers nothing else)
    Alive,
}

/// The client's socket and session, and what it counts.
struct Client {
    sock: UdpSocket,
    key: Option<Key>,
    session: u32,
    buf: Vec<u8>,
    foreign: u64,
}

impl Client {
    fn send(&self, b: &[u8]) {
        let _ = self.sock.send(b);
    }
    /// Everything that came within `wait_ns` (at least one wait for readability).
    fn recv(&mut self, wait_ns: u64) -> Vec<(Got, u64)> {
        let mut out = Vec::new();
        if !sys::wait_readable(self.sock.as_raw_fd(), wait_ns) {
            return out;
        }
        while let Ok(r) = sys::recv_ts(self.sock.as_raw_fd(), &mut self.buf, libc::MSG_DONTWAIT) {
            let at = sys::mono_ns();
            let pkt = &self.buf[..r.len];
            match wire::parse(pkt, self.key.as_ref()) {
                Ok(p) if p.session == self.session && p.kind == Kind::UpAnswer => match parse_up_answer(pkt) {
                    Some(a) => out.push((Got::Answer(a), at)),
                    None => self.foreign += 1,
                },
                Ok(p) if p.session == self.session && p.kind == Kind::Reply => out.push((Got::Alive, at)),
                _ => self.foreign += 1,
            }
        }
        out
    }
}

/// Check the time cap and Ctrl-C.
fn check_time(started: u64, addr: SocketAddr) -> Result<u64, String> {
    if sys::stopped() {
        return Err("interrupted".into());
    }
    let now = sys::mono_ns();
    if now - started > TRAIN_CAP_NS {
        return Err(format!("the up train to {addr} took more than {} s: given up", TRAIN_CAP_NS / 1_000_000_000));
    }
    Ok(now)
}

/// Send `cfg.addr` a train up and fetch the server's records of its
/// arrivals. Err: no server, an older one, a refusal (in words), or a path
/// that lost the train or the reports.
pub fn run_up_train(cfg: &TrainCfg) -> Result<TrainRun, String> {
    let bind: SocketAddr = if cfg.addr.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
    let sock = UdpSocket::bind(bind).map_err(|e| format!("udp bind: {e}"))?;
    sock.connect(cfg.addr).map_err(|e| format!("udp connect {}: {e}", cfg.addr))?;
    // the whole train in the send buffer (where the kernel lets it: net.core.wmem_max)
    sys::set_buffers(sock.as_raw_fd(), (cfg.count as usize * (cfg.size + 1024)).clamp(1 << 20, 64 << 20) as i32);
    let key = cfg.secret.as_deref().map(Key::new);
    let flags = flags_of(key.as_ref());
    let mut c = Client { sock, key, session: sys::random_u64() as u32, buf: vec![0u8; 65536], foreign: 0 };
    let started = sys::mono_ns();
    let handshake_rtt_ns = handshake(&mut c, cfg, started)?;
    if cfg.wait_go {
        // the slot is held (READY) until UP_IDLE_NS of quiet: the go comes well within it
        sys::wait_go_line()?;
    }
    // the train, each packet's send stamp kept
    let gap_ns = train::pace_gap_ns((cfg.size + ip_overhead(&cfg.addr)) as u64, cfg.pace_bps);
    let mut tx: Vec<Option<u64>> = vec![None; cfg.count as usize];
    // a packet this host's own qdisc drops is an error of its send, not a loss of the path: counted only with
    // IP_RECVERR on (sys::set_recverr), for the train's sends alone
    let fd = c.sock.as_raw_fd();
    let recverr = sys::set_recverr(fd, cfg.addr.is_ipv6(), true);
    let (sent, span_ns, errors) =
        train::send_train_with(&c.sock, cfg.addr, c.session, cfg.count, cfg.size, gap_ns, c.key.as_ref(), &mut |seq, t| tx[seq as usize] = Some(t));
    if recverr {
        sys::set_recverr(fd, cfg.addr.is_ipv6(), false);
    }
    if sent == 0 {
        return Err(format!("the train could not be sent to {}: {errors} send errors", cfg.addr));
    }
    let (last, rtt_ns) = poll_until_quiet(&mut c, cfg, started, handshake_rtt_ns)?;
    if last.received == 0 {
        return Err(format!(
            "none of the train's {sent} packets reached {} (it answered the handshake and the reports: the train was lost on the way)",
            cfg.addr
        ));
    }
    let quiet_ns = last.quiet_ns;
    let (records, last) = fetch(&mut c, cfg, started, flags, last, ask_again_ns(rtt_ns, cfg.timeout_ns))?;
    // the slot's end, three times: a lost done would keep the address's one slot until it idles
    let done = build_done(c.session, c.key.as_ref());
    for _ in 0..3 {
        c.send(&done);
    }
    let fetched = records.len();
    let arrivals: Vec<Arrival> = records
        .into_iter()
        .filter_map(|(seq, rx_ns)| match tx.get(seq as usize) {
            Some(Some(t)) => Some(Arrival { seq, rx_ns, tx_ns: *t }),
            _ => None,
        })
        .collect();
    // a record of a packet this client never sent (none can be): foreign
    let foreign = c.foreign + (fetched - arrivals.len()) as u64;
    Ok(TrainRun {
        direction: Direction::Up,
        arrivals,
        kernel_ts: last.kernel_stamps,
        done: Some((sent, span_ns, errors)),
        done_pace_bps: Some(if gap_ns > 0 { cfg.pace_bps } else { 0 }),
        local_drops: last.drops,
        handshake_rtt_ns,
        duplicates: last.duplicates as u64,
        foreign,
        wire_bytes: (cfg.size + ip_overhead(&cfg.addr)) as u64,
        quiet_ns: Some(quiet_ns),
    })
}

/// Start → COOKIE → start with the cookie → READY: the handshake's round
/// trip (the first COOKIE's), or the reason there is no train.
fn handshake(c: &mut Client, cfg: &TrainCfg, started: u64) -> Result<u64, String> {
    let mut cookie = [0u8; COOKIE_LEN];
    let (mut have_cookie, mut alive) = (false, false);
    let (mut tries, mut asked_at, mut rtt) = (0, 0u64, 0u64);
    // an echo request beside each start: any version of the server answers it
    let eflags = flags_of(c.key.as_ref());
    let mut echo = vec![0u8; wire::min_len(eflags) + 16];
    let n = echo.len();
    wire::build_request(&mut echo, n, eflags, c.session, 0, c.key.as_ref());
    loop {
        let now = check_time(started, cfg.addr)?;
        if tries == 0 || now - asked_at > cfg.timeout_ns {
            if tries == 3 {
                return Err(if have_cookie {
                    format!("{} answered the handshake but not the request that echoed its cookie (lost 3 times)", cfg.addr)
                } else if alive {
                    format!(
                        "{} answers echo requests but not up trains: the server predates up trains (compare `bloatlab-probe --version` on both ends)",
                        cfg.addr
                    )
                } else {
                    format!("no answer from {} (is `bloatlab-probe server` running there, of a version with up trains, and the --secret the same?)", cfg.addr)
                });
            }
            c.send(&build_start(c.session, cfg.count, cfg.size as u16, cfg.pace_bps, &cookie, c.key.as_ref()));
            if !have_cookie {
                c.send(&echo);
            }
            asked_at = now;
            tries += 1;
        }
        for (got, at) in c.recv(10_000_000) {
            match got {
                Got::Alive => alive = true,
                Got::Answer(UpAnswer::Start { status: Status::Cookie, cookie: k, .. }) => {
                    if !have_cookie {
                        rtt = at - asked_at;
                    }
                    // a new cookie (first, or the epoch turned): ask with it at once
                    if !have_cookie || k != cookie {
                        cookie = k;
                        have_cookie = true;
                        tries = 0;
                    }
                }
                Got::Answer(UpAnswer::Start { status: Status::Ready, .. }) => return Ok(rtt.max(1)),
                Got::Answer(UpAnswer::Start { status, value, .. }) => {
                    return Err(format!("the server refused the up train: {}", refusal_words(Direction::Up, status, value, cfg.count, cfg.size)))
                }
                Got::Answer(UpAnswer::Report { .. }) => c.foreign += 1,
            }
        }
    }
}

/// How long a request goes unanswered before it is asked again: 4 round
/// trips of `rtt_ns`, at least [`UP_ASK_AGAIN_MIN_NS`], at most the client's
/// `--timeout`.
pub fn ask_again_ns(rtt_ns: u64, timeout_ns: u64) -> u64 {
    rtt_ns.saturating_mul(4).clamp(UP_ASK_AGAIN_MIN_NS, timeout_ns.max(UP_ASK_AGAIN_MIN_NS))
}

/// Poll the server's report until it holds the whole train or its slot has
/// been quiet long enough: the last report and the last poll's round trip.
/// A poll unanswered after [`ask_again_ns`] of the handshake's round trip is
/// asked again: the first poll follows the train, and behind a policer the
/// train has just emptied the bucket, so the path drops it; waiting out the
/// whole `--timeout` there cost each up train 1 s (a measurement behind a
/// 3-Mbit/s up tbf, `measure --quick`: four up trains, each ~1 s beyond its
/// sending — 1.03 s for a train sent in 11 ms — 4 s of its 24.6).
fn poll_until_quiet(c: &mut Client, cfg: &TrainCfg, started: u64, handshake_rtt_ns: u64) -> Result<(Report, u64), String> {
    let poll = build_report_request(c.session, 0, 0, c.key.as_ref());
    let period = UP_POLL_NS.max(handshake_rtt_ns);
    let again_ns = ask_again_ns(handshake_rtt_ns, cfg.timeout_ns);
    let (mut asked_at, mut next_at, mut answered_at) = (None::<u64>, 0u64, sys::mono_ns());
    let mut rtt = handshake_rtt_ns;
    loop {
        let now = check_time(started, cfg.addr)?;
        let due = match asked_at {
            None => now >= next_at,
            Some(t) => now - t > again_ns,
        };
        if due {
            if now - answered_at > UP_IDLE_NS {
                return Err(format!(
                    "{} answered the handshake but no report for {} s after the train (the path lost them, or the server stopped)",
                    cfg.addr,
                    UP_IDLE_NS / 1_000_000_000
                ));
            }
            c.send(&poll);
            asked_at = Some(now);
        }
        for (got, at) in c.recv(5_000_000) {
            match got {
                Got::Answer(UpAnswer::Report { status: Status::Records, report }) if report.records.is_empty() => {
                    if let Some(t) = asked_at.take() {
                        rtt = at - t;
                    }
                    answered_at = at;
                    next_at = at + period;
                    let quiet_enough = report.max_gap_ns.saturating_mul(4).max(2 * handshake_rtt_ns).max(UP_QUIET_MIN_NS);
                    if report.received >= cfg.count || report.quiet_ns >= quiet_enough {
                        return Ok((report, rtt.max(1)));
                    }
                }
                Got::Answer(UpAnswer::Report { status: Status::Gone, .. }) => {
                    return Err(format!("{}: {}", cfg.addr, gone_words()))
                }
                // a late echo reply or a second READY (a start asked again): ours, nothing to do
                Got::Alive | Got::Answer(UpAnswer::Start { .. }) => {}
                Got::Answer(UpAnswer::Report { .. }) => c.foreign += 1,
            }
        }
    }
}

/// Fetch every record the server holds (`last.received` of them, or more if
/// more came meanwhile): requests padded to the train's packet size, up to
/// [`UP_FETCH_WINDOW`] in flight (halved when one is asked again), each asked
/// again after `ask_again_ns` up to [`UP_FETCH_TRIES`] times. The records in
/// arrival order and the last report.
fn fetch(c: &mut Client, cfg: &TrainCfg, started: u64, flags: u8, mut last: Report, ask_again_ns: u64) -> Result<(Vec<(u32, u64)>, Report), String> {
    let len = cfg.size.clamp(UP_FETCH_MIN_LEN, wire::MAX_PACKET);
    let per = records_fit(len, flags) as u32;
    // one record per sequence number: never more than the count (whatever a server says)
    let mut total = last.received.min(cfg.count);
    let mut got: Vec<Vec<(u32, u64)>> = Vec::new();
    // per chunk: (when last asked, times asked)
    let mut asked: Vec<(u64, u32)> = Vec::new();
    // requests in flight: halved at each one asked again (the path dropped one: a policer's bucket the train
    // emptied, a full queue), one more at each answer, up to UP_FETCH_WINDOW
    let mut window = UP_FETCH_WINDOW;
    loop {
        let chunks = total.div_ceil(per) as usize;
        got.resize(chunks, Vec::new());
        asked.resize(chunks, (0, 0));
        let want = |i: usize| per.min(total - i as u32 * per) as usize;
        if (0..chunks).all(|i| got[i].len() == want(i)) {
            return Ok((got.concat(), last));
        }
        let now = check_time(started, cfg.addr)?;
        let mut in_flight = (0..chunks).filter(|&i| got[i].len() != want(i) && asked[i].1 > 0 && now - asked[i].0 <= ask_again_ns).count();
        for i in 0..chunks {
            if in_flight >= window {
                break;
            }
            let (at, times) = asked[i];
            if got[i].len() == want(i) || times > 0 && now - at <= ask_again_ns {
                continue;
            }
            if times > UP_FETCH_TRIES {
                return Err(format!(
                    "{} did not send back its records of the train (records {}.. unanswered {} times; {} of {} received)",
                    cfg.addr,
                    i as u32 * per,
                    times,
                    got.iter().map(|g| g.len()).sum::<usize>(),
                    total
                ));
            }
            if times > 0 {
                window = (window / 2).max(1);
            }
            c.send(&build_report_request(c.session, i as u32 * per, len, c.key.as_ref()));
            asked[i] = (now, times + 1);
            in_flight += 1;
        }
        for (g, _) in c.recv(5_000_000) {
            match g {
                Got::Answer(UpAnswer::Report { status: Status::Records, report }) => {
                    let f = report.first;
                    // a chunk's answer carries what the server held from its first record, up to a chunk
                    let full = (report.records.len() as u32) == per.min(report.received.saturating_sub(f));
                    if f % per != 0 || !full || report.records.is_empty() {
                        continue; // a late poll's answer, or not one of ours
                    }
                    if report.received.min(cfg.count) > total {
                        total = report.received.min(cfg.count); // packets that came after the polls: fetched too
                        let chunks = total.div_ceil(per) as usize;
                        got.resize(chunks, Vec::new());
                        asked.resize(chunks, (0, 0));
                    }
                    if let Some(slot) = got.get_mut((f / per) as usize) {
                        *slot = report.records.clone();
                        window = (window + 1).min(UP_FETCH_WINDOW);
                    }
                    if report.received >= last.received {
                        last = Report { records: Vec::new(), ..report };
                    }
                }
                Got::Answer(UpAnswer::Report { status: Status::Gone, .. }) => {
                    return Err(format!("{}: {}", cfg.addr, gone_words()))
                }
                // a late echo reply or a second READY (a start asked again): ours, nothing to do
                Got::Alive | Got::Answer(UpAnswer::Start { .. }) => {}
                Got::Answer(UpAnswer::Report { .. }) => c.foreign += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::{BUDGET_BYTES, COOKIE_EPOCH_NS, MIN_SIZE, REQ_LEN};

    const T0: u64 = 1_000_000_000_000;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    /// A server with a READY slot for (`from`, `session`): `count` packets of `size` B.
    fn ready(t: &mut Trains, from: SocketAddr, session: u32, count: u32, size: u16, now: u64) -> Handled {
        let cookie = t.cookie(from, session, now / COOKIE_EPOCH_NS);
        t.respond_up(from, session, &build_start(session, count, size, 0, &cookie, None), None, now, Some(0)).0
    }

    fn report(t: &mut Trains, from: SocketAddr, session: u32, first: u32, len: usize, now: u64, drops: Option<u32>) -> (Status, Report) {
        let (_, a) = t.respond_up(from, session, &build_report_request(session, first, len, None), None, now, drops);
        match parse_up_answer(&a.unwrap()) {
            Some(UpAnswer::Report { status, report }) => (status, report),
            x => panic!("{x:?}"),
        }
    }

    #[test]
    fn requests_and_answers_parse_back_signed_or_not() {
        let k = Key::new(b"s");
        for key in [None, Some(&k)] {
            let s = build_start(9, 1000, 1472, 64_000_000, &[7; COOKIE_LEN], key);
            assert_eq!(s.len(), REQ_LEN + if key.is_some() { TAG_LEN } else { 0 });
            assert_eq!(wire::parse(&s, key).unwrap().kind, Kind::UpRequest);
            let want = Request { count: 1000, size: 1472, cookie: [7; COOKIE_LEN], pace_bps: 64_000_000 };
            assert_eq!(parse_up_request(&s), Some(UpRequest::Start(want)));
            let r = build_report_request(9, 280, 1472, key);
            assert_eq!((r.len(), parse_up_request(&r)), (1472, Some(UpRequest::Report { first: 280 })));
            assert_eq!(parse_up_request(&build_done(9, key)), Some(UpRequest::Done));
            let a = build_start_answer(9, Status::Budget, 1234, &[3; COOKIE_LEN], key);
            assert_eq!(a.len(), s.len(), "an answer to a start is as long as the start");
            assert_eq!(wire::parse(&a, key).unwrap().kind, Kind::UpAnswer);
            assert_eq!(parse_up_answer(&a), Some(UpAnswer::Start { status: Status::Budget, value: 1234, cookie: [3; COOKIE_LEN] }));
            let rep = Report {
                first: 280,
                received: 4000,
                duplicates: 2,
                quiet_ns: 300_000_000,
                max_gap_ns: 120_000,
                drops: Some(17),
                kernel_stamps: true,
                records: (280..400).map(|s| (s, 1_700_000_000_000_000_000 + s as u64 * 120_000)).collect(),
            };
            let b = build_report(9, r.len(), Status::Records, &rep, key);
            assert_eq!(b.len(), r.len());
            wire::parse(&b, key).unwrap();
            let fit = records_fit(1472, flags_of(key));
            assert_eq!(fit, if key.is_some() { 140 } else { 141 });
            // 120 records fit whole; the drops' sentinel reads None
            assert_eq!(parse_up_answer(&b), Some(UpAnswer::Report { status: Status::Records, report: rep.clone() }));
            let b = build_report(9, r.len(), Status::Records, &Report { drops: None, ..rep.clone() }, key);
            assert!(matches!(parse_up_answer(&b), Some(UpAnswer::Report { report: Report { drops: None, .. }, .. })));
        }
        // a signed answer does not verify with another key; garbage and unknown ops are nothing
        let b = build_start_answer(9, Status::Ready, 5, &[0; COOKIE_LEN], Some(&Key::new(b"a")));
        assert!(wire::parse(&b, Some(&Key::new(b"b"))).is_err());
        assert_eq!(parse_up_request(&[0u8; 3]), None);
        assert_eq!(parse_up_answer(&[0u8; 3]), None);
        let mut d = build_done(9, None);
        d[22] = 3;
        assert_eq!(parse_up_request(&d), None);
        let mut s = build_start(9, 10, 100, 0, &[0; COOKIE_LEN], None);
        s.push(0);
        assert_eq!(parse_up_request(&s), None, "a start of the wrong length");
        // a report claiming more records than its length holds
        let mut b = build_report(9, 100, Status::Records, &Report::default(), None);
        b[18] = 5;
        assert_eq!(parse_up_answer(&b), None);
    }

    #[test]
    fn an_answer_is_never_longer_than_the_request_that_asked_whatever_its_length() {
        let k = Key::new(b"s");
        for key in [None, Some(&k)] {
            let mut t = Trains::new();
            let from = addr(4000);
            assert_eq!(ready(&mut t, from, 1, 4096, 64, T0), Handled::Started);
            for seq in 0..4096 {
                t.up_data(from, 1, seq, 64, T0 + seq * 1_000, true, T0 + seq);
            }
            let flags = flags_of(key);
            for len in report_min_len(flags)..=wire::MAX_PACKET {
                let req = build_report_request(1, 7, len, key);
                assert_eq!(req.len(), len);
                let (h, a) = t.respond_up(from, 1, &req, key, T0 + 5_000_000, None);
                let a = a.unwrap();
                assert_eq!((h, a.len()), (Handled::Reported, len), "a request of {len} B");
                let Some(UpAnswer::Report { report, .. }) = parse_up_answer(&a) else { panic!("{len}") };
                assert_eq!(report.records.len(), records_fit(len, flags), "{len} B");
                assert!(report.records.iter().enumerate().all(|(i, r)| r.0 == 7 + i as u32), "from the 8th arrival on");
            }
            // a request shorter than the least report is no report: nothing comes back
            let mut short = build_report_request(1, 0, 0, key);
            short.truncate(report_min_len(flags) - 1);
            assert_eq!(t.respond_up(from, 1, &short, key, T0, None), (Handled::Malformed, None));
        }
    }

    #[test]
    fn the_bounds_refuse_with_the_down_trains_statuses_and_a_session_holds_one_slot() {
        let mut t = Trains::new();
        let from = addr(4000);
        let now = T0;
        let cookie = t.cookie(from, 5, now / COOKIE_EPOCH_NS);
        let start = |t: &mut Trains, count: u32, size: u16, pace: u64| {
            let (h, a) = t.respond_up(from, 5, &build_start(5, count, size, pace, &cookie, None), None, now, None);
            match parse_up_answer(&a.unwrap()) {
                Some(UpAnswer::Start { status, value, .. }) => (h, status, value),
                x => panic!("{x:?}"),
            }
        };
        assert_eq!(start(&mut t, 4097, 1472, 0), (Handled::Refused(Status::TooMany), Status::TooMany, MAX_COUNT));
        assert_eq!(start(&mut t, 10, 1473, 0), (Handled::Refused(Status::TooBig), Status::TooBig, 1472));
        assert_eq!(start(&mut t, 0, 1472, 0), (Handled::Refused(Status::TooSmall), Status::TooSmall, MIN_SIZE as u32));
        assert_eq!(start(&mut t, 10, 63, 0), (Handled::Refused(Status::TooSmall), Status::TooSmall, MIN_SIZE as u32));
        // 4096 full packets at 10 Mbit/s: 1.2 ms apart, a second holds 834
        assert_eq!(start(&mut t, 4096, 1472, 10_000_000), (Handled::Refused(Status::TooLong), Status::TooLong, 834));
        // no cookie: a cookie, no slot
        let (h, a) = t.respond_up(from, 5, &build_start(5, 10, 100, 0, &[0; COOKIE_LEN], None), None, now, None);
        assert_eq!(h, Handled::Cookie);
        assert!(matches!(parse_up_answer(&a.unwrap()), Some(UpAnswer::Start { status: Status::Cookie, .. })));
        assert_eq!(t.up_in_flight(), 0);
        // with it: READY; the same start again (its READY lost): READY, not charged twice
        assert_eq!(start(&mut t, 100, 1472, 0), (Handled::Started, Status::Ready, 100));
        assert_eq!(start(&mut t, 100, 1472, 0), (Handled::Started, Status::Ready, 100));
        assert_eq!(t.up_in_flight(), 1);
        // another train of the session while its slot lives: BUSY 0
        assert_eq!(start(&mut t, 200, 1472, 0), (Handled::Refused(Status::Busy), Status::Busy, 0));
        // once a packet came, not even the same start again
        assert_eq!(t.up_data(from, 5, 0, 1472, 1, true, now), UpData::Recorded);
        assert_eq!(start(&mut t, 100, 1472, 0), (Handled::Refused(Status::Busy), Status::Busy, 0));
        assert!(refusal_words(Direction::Up, Status::Busy, 0, 100, 1472).contains("receiving"));
        // one slot per source address: another session of the same host (another port too) takes its place
        assert_eq!(ready(&mut t, addr(5000), 77, 10, 100, now), Handled::Started);
        assert_eq!(t.up_in_flight(), 1);
        assert_eq!(report(&mut t, from, 5, 0, 300, now, None).0, Status::Gone, "the older train of the address ended");
        assert_eq!(ready(&mut t, from, 5, 100, 1472, now), Handled::Started);
        assert_eq!((t.up_in_flight(), report(&mut t, addr(5000), 77, 0, 300, now, None).0), (1, Status::Gone));
        // MAX_IN_FLIGHT slots in all (other addresses); then BUSY with the count
        let host = |i: u8, port: u16| SocketAddr::from(([192, 0, 2, 10 + i], port));
        for s in 1..MAX_IN_FLIGHT as u8 {
            assert_eq!(ready(&mut t, host(s, 5000), 77, 10, 100, now), Handled::Started);
        }
        assert_eq!(t.up_in_flight(), MAX_IN_FLIGHT);
        assert_eq!(ready(&mut t, host(100, 6000), 77, 10, 100, now), Handled::Refused(Status::Busy));
        // a host whose slot holds one of them starts another train (its done lost): it takes its own place, still 4
        assert_eq!(ready(&mut t, from, 6, 10, 100, now), Handled::Started);
        assert_eq!(t.up_in_flight(), MAX_IN_FLIGHT);
        // done frees one: the next fits
        assert_eq!(t.respond_up(from, 6, &build_done(6, None), None, now, None), (Handled::Freed, None));
        assert_eq!(t.respond_up(from, 6, &build_done(6, None), None, now, None), (Handled::NoSlot, None));
        assert_eq!(ready(&mut t, host(100, 6000), 77, 10, 100, now), Handled::Started);
    }

    #[test]
    fn the_budget_per_address_is_the_down_trains_and_refills() {
        let mut t = Trains::new();
        // 4096 x 1500 B = 6.1 MB of the 8 MB: a second such train from the address waits 5.36 s (the
        // 4.29 MB it lacks at 0.8 MB/s)
        assert_eq!(ready(&mut t, addr(1), 1, 4096, 1472, T0), Handled::Started);
        // (a second train of the address would end this one: one slot per address; the budget is charged either way)
        let cookie = t.cookie(addr(2), 2, T0 / COOKIE_EPOCH_NS);
        let (h, a) = t.respond_up(addr(2), 2, &build_start(2, 4096, 1472, 0, &cookie, None), None, T0, None);
        assert_eq!(h, Handled::Refused(Status::Budget));
        let Some(UpAnswer::Start { value: wait_ms, .. }) = parse_up_answer(&a.unwrap()) else { panic!() };
        assert_eq!(BUDGET_BYTES, 8_000_000);
        assert_eq!(wait_ms, 5360, "{wait_ms} ms");
        // a down train from the same address draws on the same budget
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let down = train::build_request(3, 4096, 1472, &t.cookie(addr(3), 3, T0 / COOKIE_EPOCH_NS), None);
        assert_eq!(t.handle(&sock, addr(3), 3, &down, None, T0), Handled::Refused(Status::Budget));
        // after the wait it fits
        assert_eq!(ready(&mut t, addr(2), 2, 4096, 1472, T0 + (wait_ms as u64 + 1) * 1_000_000), Handled::Started);
    }

    #[test]
    fn data_of_no_slot_the_wrong_size_or_beyond_the_count_is_ignored_and_a_copy_counted_once() {
        let mut t = Trains::new();
        let from = addr(4000);
        // no slot at all
        assert_eq!(t.up_data(from, 1, 0, 1000, 5, true, T0), UpData::Ignored);
        assert_eq!(ready(&mut t, from, 1, 10, 1000, T0), Handled::Started);
        assert_eq!(t.up_data(from, 2, 0, 1000, 5, true, T0), UpData::Ignored, "another session");
        assert_eq!(t.up_data(addr(4001), 1, 0, 1000, 5, true, T0), UpData::Ignored, "another port");
        assert_eq!(t.up_data(from, 1, 0, 999, 5, true, T0), UpData::Ignored, "not the slot's size");
        assert_eq!(t.up_data(from, 1, 10, 1000, 5, true, T0), UpData::Ignored, "seq = count");
        assert_eq!(t.up_data(from, 1, u64::MAX, 1000, 5, true, T0), UpData::Ignored);
        let (_, r) = report(&mut t, from, 1, 0, 1472, T0 + 1, None);
        assert_eq!((r.received, r.duplicates, r.records.len()), (0, 0, 0), "nothing recorded");
        // 3 then 1 then 3 again then 2, 120 us apart, then 1 again
        for (i, seq) in [3u64, 1, 3, 2, 1].into_iter().enumerate() {
            t.up_data(from, 1, seq, 1000, 7_000_000 + i as u64 * 120_000, i != 3, T0 + 1_000 * i as u64);
        }
        let (status, r) = report(&mut t, from, 1, 0, 1472, T0 + 5_000_000, Some(0));
        assert_eq!(status, Status::Records);
        assert_eq!(r.records, vec![(3, 7_000_000), (1, 7_120_000), (2, 7_360_000)], "the first arrival of each, in arrival order");
        assert_eq!((r.received, r.duplicates), (3, 2));
        assert_eq!(r.max_gap_ns, 240_000, "between the 2nd and the 3rd recorded");
        assert_eq!(r.quiet_ns, 5_000_000 - 3_000, "since the last recorded arrival");
        assert!(!r.kernel_stamps, "one arrival had a user-space stamp");
        assert_eq!(r.drops, Some(0), "the counter did not move since the slot began");
        // a report from the 3rd record on, and beyond the records
        assert_eq!(report(&mut t, from, 1, 2, 1472, T0, None).1.records, vec![(2, 7_360_000)]);
        assert_eq!(report(&mut t, from, 1, 99, 1472, T0, None).1.records, vec![]);
    }

    #[test]
    fn a_report_counts_the_sockets_drops_since_the_slot_began() {
        let mut t = Trains::new();
        let from = addr(1);
        let cookie = t.cookie(from, 1, T0 / COOKIE_EPOCH_NS);
        t.respond_up(from, 1, &build_start(1, 10, 100, 0, &cookie, None), None, T0, Some(40));
        assert_eq!(report(&mut t, from, 1, 0, 100, T0, Some(52)).1.drops, Some(12));
        assert_eq!(report(&mut t, from, 1, 0, 100, T0, None).1.drops, None);
        // the quiet before any arrival counts from the slot's start
        assert_eq!(report(&mut t, from, 1, 0, 100, T0 + 300, None).1.quiet_ns, 300);
    }

    #[test]
    fn a_slot_quiet_for_ten_seconds_or_older_than_its_lifetime_is_freed() {
        let mut t = Trains::new();
        let from = addr(1);
        assert_eq!(ready(&mut t, from, 1, 10, 100, T0), Handled::Started);
        t.expire_up(T0 + UP_IDLE_NS - 1);
        assert_eq!(t.up_in_flight(), 1);
        t.expire_up(T0 + UP_IDLE_NS);
        assert_eq!(t.up_in_flight(), 0, "quiet for UP_IDLE_NS");
        // a report for it now: GONE, in the request's length
        let (status, r) = report(&mut t, from, 1, 0, 300, T0 + UP_IDLE_NS, None);
        assert_eq!((status, r.received), (Status::Gone, 0));
        // a slot kept busy by its client still ends at its lifetime
        assert_eq!(ready(&mut t, from, 2, 10, 100, T0), Handled::Started);
        let mut now = T0;
        while now < T0 + UP_LIFETIME_NS - UP_IDLE_NS / 2 {
            now += UP_IDLE_NS / 2;
            report(&mut t, from, 2, 0, 100, now, None);
            assert_eq!(t.up_in_flight(), 1, "at {} s", (now - T0) / 1_000_000_000);
        }
        t.expire_up(T0 + UP_LIFETIME_NS);
        assert_eq!(t.up_in_flight(), 0, "older than UP_LIFETIME_NS");
        // a freed slot's packets are ignored
        assert_eq!(t.up_data(from, 2, 0, 100, 1, true, T0 + UP_LIFETIME_NS), UpData::Ignored);
    }

    #[test]
    fn the_servers_receive_buffer_holds_the_largest_train() {
        // kernel memory per packet the doubled buffer allows: the largest train's full packets at ~2x their bytes
        let per_packet = 2 * UP_RCVBUF as usize / MAX_COUNT as usize;
        assert!(per_packet >= 2 * (train::MAX_SIZE + 28), "{per_packet} B a packet");
        const { assert!(UP_RCVBUF <= 64 << 20, "within the 64 MB the clients cap their own buffers at") };
    }
}
