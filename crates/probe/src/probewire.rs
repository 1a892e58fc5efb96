//! The responsiveness probes over bloatlab's own protocol (not HTTP): foreign
//! probes on new connections and self probes on the loaded connections.
//!
//! Source: draft-ietf-ippm-responsiveness-08 §4.2 (the probes) and, for the
//! sending end's buffer, the -09 working copy's advice to hold at most 5 ms of
//! the connection's rate unsent (TCP_NOTSENT_LOWAT). The draft's probes are
//! HTTP/2 GETs of a 1-byte object; ours are a 16-byte message answered by the
//! server with the same 16 bytes.
//!
//! Foreign probe: a new TCP connection; its handshake is `tcp_f`. The client
//! then sends [`FOREIGN_MAGIC`] and a 16-byte message in one write and reads
//! the 16 bytes back: `http_f`. A server that predates this closes the
//! connection instead (the probe keeps `tcp_f` only).
//!
//! Self probe: the test's parameters ask for `self_probes`; a server that
//! speaks it says so in its answer (`"self_probes": true`), and then every
//! data connection of the test carries, in its bulk direction, *frames*
//! instead of raw bytes:
//!
//! ```text
//! frame  = kind (1 B: 'D' data, 'P' probe) | 0 0 0 | len (u32 LE) | len bytes
//! probe  = seq (u64 LE) | client's send time (u64 LE, CLOCK_MONOTONIC ns)   (16 B)
//! ```
//!
//! and in its light direction (against the bulk) bare 16-byte probe messages.
//! The client issues a probe on a loaded connection chosen at random:
//! - download (the server sends the bulk): the client writes the message on
//!   the light direction; the server reads it and queues it; its sender puts
//!   it in the bulk stream as a probe frame at the next frame boundary, behind
//!   what it already wrote; the client's reader finds it among the data.
//! - upload (the client sends the bulk): the client queues the message into
//!   its own bulk stream (next frame boundary); the server's reader finds it
//!   and writes it back at once on the light direction.
//!
//! Either way the answer waits where an HTTP/2 response on a loaded
//! connection waits: behind the unsent data of its own connection and in the
//! bottleneck queue. `http_l` is from the issue (the message handed to the
//! connection) to the answer read by the client.
//!
//! Unsent data and frame size: TCP_NOTSENT_LOWAT alone does not bound what
//! waits in the send buffer (with GSO the kernel appends to its last,
//! up-to-64 KB buffer before it checks the mark: 43-62 KB were unsent per
//! connection through a 2 Mbit/s link, 400 ms of self probe delay). So the
//! sending end looks itself: it starts a data frame only while fewer than
//! `L` bytes are unsent (TCP_INFO `notsent_bytes`), sizes the frame to what
//! is missing to `L`, and otherwise waits for POLLOUT (the mark is set to
//! `L` too). `L` = [`FRAME_TIME_NS`] (5 ms, the draft-09 working copy's
//! figure) of the connection's rate (bytes acked over the last 100 ms), at least [`LOWAT_MIN`] (two
//! segments, so that Nagle still sends full ones) and before the connection
//! has a rate [`LOWAT_START`]. A probe message therefore waits behind at most
//! `L` unsent bytes: 5 ms at a connection's rate, or two segments on a slow
//! one (23 ms at 1 Mbit/s). The 8-byte header costs 8 / frame of the goodput
//! (≤ 0.6 % at the smallest frame, 0.006 % at 128 KiB).

use crate::sys;
use crate::tcp::stream::{self, Framer, StreamState};
use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use portable_atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// First bytes of a foreign probe's request.
pub const FOREIGN_MAGIC: &[u8; 4] = b"BLF1";
/// A probe message: sequence number and send time.
pub const MSG: usize = 16;
const HDR: usize = 8;
const KIND_DATA: u8 = b'D';
const KIND_PROBE: u8 = b'P';
/// At most this much of the connection's rate waits unsent.
pub const FRAME_TIME_NS: u64 = 5_000_000;
/// Two full segments: with less unsent, Nagle would hold a partial one.
pub const LOWAT_MIN: usize = 2 * 1448;
/// The largest data frame: the senders' write size ([`stream::BUF`]).
pub const FRAME_MAX: usize = stream::BUF;
/// Before the connection has a measured rate: HTTP/2's default largest frame.
pub const LOWAT_START: usize = 16 * 1024;
/// How often the mark follows the connection's rate, measured over this
/// period: long enough to hold several ACKs at a few Mbit/s (TCP_INFO's
/// delivery_rate is one ACK's sample and overshoots under ACK compression).
const RATE_REFRESH_NS: u64 = 100_000_000;
/// Bounds of a sender's wait for room below the mark (see `frame_size`).
const POLL_MIN_NS: u64 = 1_000_000;
const POLL_MAX_NS: u64 = 10_000_000;
/// How long a reader keeps reading after its stream ended.
const READER_GRACE_NS: u64 = 2_000_000_000;

fn msg(seq: u64, t: u64) -> [u8; MSG] {
    let mut m = [0u8; MSG];
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m[8..].copy_from_slice(&t.to_le_bytes());
    m
}

fn header(kind: u8, len: usize) -> [u8; HDR] {
    let mut h = [kind, 0, 0, 0, 0, 0, 0, 0];
    h[4..].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

// ---------------------------------------------------------------- foreign

/// The server's side of a foreign probe (after [`FOREIGN_MAGIC`]): the 16
/// bytes back, then close.
pub fn answer_foreign(conn: &TcpStream) {
    let mut m = [0u8; MSG];
    if stream::read_exact_timeout(conn, &mut m, 5_000_000_000).is_ok() {
        let _ = (&*conn).write_all(&m);
    }
}

/// A foreign probe: (handshake ns, request/response ns if the server
/// answered). Err: the connect failed.
pub fn foreign_probe(addr: SocketAddr, give_up_ns: u64) -> Result<(u64, Option<u64>), String> {
    let a = sys::mono_ns();
    let s = stream::connect(addr, None, None)?;
    let b = sys::mono_ns();
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(stream::WAKE));
    let mut req = Vec::with_capacity(4 + MSG);
    req.extend_from_slice(FOREIGN_MAGIC);
    req.extend_from_slice(&msg(0, b));
    if (&s).write_all(&req).is_err() {
        return Ok((b - a, None));
    }
    let mut back = [0u8; MSG];
    let ok = stream::read_exact_timeout(&s, &mut back, give_up_ns).is_ok() && back[8..] == b.to_le_bytes();
    Ok((b - a, ok.then(|| sys::mono_ns() - b)))
}

// ---------------------------------------------------------------- self

/// The client's side of the self probes of a test: the loaded connections,
/// the probes in flight, the answers.
#[derive(Default)]
pub struct Board {
    streams: Mutex<Vec<(Arc<StreamState>, Arc<Framing>)>>,
    pending: Mutex<HashMap<u64, u64>>,
    /// (issue time, CLOCK_MONOTONIC ns; round trip ns; the bulk flows downward)
    pub answers: Mutex<Vec<(u64, u64, bool)>>,
    seq: AtomicU64,
    /// issued on a connection that could not take it (closed)
    pub failed: AtomicU64,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Board({} connections, {} answers)", self.connections(), self.answers.lock().unwrap().len())
    }
}

impl Board {
    pub fn new() -> Arc<Board> {
        Arc::new(Board::default())
    }

    fn register(&self, s: Arc<StreamState>, f: Arc<Framing>) {
        self.streams.lock().unwrap().push((s, f));
    }

    /// Loaded connections registered so far.
    pub fn connections(&self) -> usize {
        self.streams.lock().unwrap().len()
    }

    /// Issue one self probe on a live loaded connection chosen at random
    /// (draft §4.2: "uniformly and randomly"); false when none is live.
    pub fn issue(&self) -> bool {
        let live: Vec<(Arc<StreamState>, Arc<Framing>)> =
            self.streams.lock().unwrap().iter().filter(|(s, _)| !s.done.load(Ordering::Relaxed)).cloned().collect();
        if live.is_empty() {
            return false;
        }
        let (s, f) = &live[(sys::random_u64() % live.len() as u64) as usize];
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let now = sys::mono_ns();
        self.pending.lock().unwrap().insert(seq, now);
        let m = msg(seq, now);
        if f.bulk_sender {
            f.out.lock().unwrap().push_back(m);
        } else if (&s.sock).write_all(&m).is_err() {
            self.pending.lock().unwrap().remove(&seq);
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    fn answered(&self, m: &[u8; MSG], down: bool) {
        let seq = u64::from_le_bytes(m[..8].try_into().unwrap());
        let now = sys::mono_ns();
        if let Some(t) = self.pending.lock().unwrap().remove(&seq) {
            self.answers.lock().unwrap().push((t, now - t, down));
        }
    }

    /// No more probes: the downloads' light direction ends (the server's
    /// readers see EOF and stop).
    pub fn finish(&self) {
        for (s, f) in self.streams.lock().unwrap().iter() {
            if !f.bulk_sender {
                let _ = s.sock.shutdown(std::net::Shutdown::Write);
            }
        }
    }

    /// The first framing error of any connection.
    pub fn error(&self) -> Option<String> {
        self.streams.lock().unwrap().iter().find_map(|(_, f)| f.error.lock().unwrap().clone())
    }

    /// Probes issued and never answered.
    pub fn unanswered(&self) -> usize {
        self.pending.lock().unwrap().len()
    }

    /// When the unanswered probes were issued (CLOCK_MONOTONIC ns), ascending.
    pub fn unanswered_at(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.pending.lock().unwrap().values().copied().collect();
        v.sort_unstable();
        v
    }
}

struct Writer {
    buf: Vec<u8>,
    pos: usize,
    /// the mark `L` (bytes)
    lowat: usize,
    /// the kernel took the mark (else frames go unchecked, as a plain sender's writes)
    marked: bool,
    rate_at: u64,
    /// bytes_acked at `rate_at - RATE_REFRESH_NS`
    acked_at: u64,
    /// the connection's rate, bytes/s (0: not measured yet)
    rate: u64,
}

#[derive(Default)]
struct Reader {
    hdr: [u8; HDR],
    hdr_got: usize,
    kind: u8,
    left: usize,
    msg: [u8; MSG],
    msg_got: usize,
    broken: bool,
}

/// One end of one framed loaded connection.
pub struct Framing {
    /// the client's board (None on the server)
    board: Option<Arc<Board>>,
    /// this end sends the bulk (writes frames)
    pub bulk_sender: bool,
    /// the bulk flows server → client
    down: bool,
    /// messages waiting for the next frame boundary
    out: Mutex<VecDeque<[u8; MSG]>>,
    wr: Mutex<Writer>,
    rd: Mutex<Reader>,
    /// what went wrong in the stream's framing, if anything
    pub error: Mutex<Option<String>>,
}

impl Framing {
    fn new(board: Option<Arc<Board>>, bulk_sender: bool, down: bool) -> Arc<Framing> {
        Arc::new(Framing {
            board,
            bulk_sender,
            down,
            out: Mutex::new(VecDeque::new()),
            wr: Mutex::new(Writer { buf: Vec::new(), pos: 0, lowat: LOWAT_START, marked: false, rate_at: 0, acked_at: 0, rate: 0 }),
            rd: Mutex::new(Reader::default()),
            error: Mutex::new(None),
        })
    }

    /// Frame `s` (before its worker starts): the server's end (`board`
    /// None) or the client's; `down`: the bulk flows server → client. The
    /// bulk-sending end reads the light direction on a thread of its own.
    pub fn attach(s: &Arc<StreamState>, board: Option<Arc<Board>>, down: bool) -> io::Result<()> {
        let bulk_sender = board.is_some() != down;
        let f = Framing::new(board.clone(), bulk_sender, down);
        let _ = s.framing.set(f.clone());
        if let Some(b) = &board {
            b.register(s.clone(), f.clone());
        }
        if bulk_sender {
            let (s, f) = (s.clone(), f.clone());
            stream::spawn("probe-reader", move || f.read_light(&s))?;
        }
        Ok(())
    }

    /// The size of the next data frame: what is missing to `L` unsent
    /// bytes; None (after waiting for POLLOUT) while `L` or more are unsent.
    fn frame_size(&self, s: &StreamState, wr: &mut Writer) -> Option<usize> {
        let fd = s.sock.as_raw_fd();
        let now = sys::mono_ns();
        let ti = sys::tcp_info(fd).ok();
        if now >= wr.rate_at {
            // the rate: bytes acked over the last period (the first period keeps LOWAT_START)
            let acked = ti.map(|t| t.bytes_acked).unwrap_or(0);
            let bytes = acked.saturating_sub(wr.acked_at);
            let l = if wr.rate_at > 0 && bytes > 0 {
                let per_s = bytes as u128 * 1_000_000_000 / (now - wr.rate_at + RATE_REFRESH_NS) as u128;
                wr.rate = per_s as u64;
                ((per_s * FRAME_TIME_NS as u128 / 1_000_000_000) as usize).clamp(LOWAT_MIN, 64 << 20)
            } else {
                wr.lowat
            };
            wr.rate_at = now + RATE_REFRESH_NS;
            wr.acked_at = acked;
            // the kernel's mark (POLLOUT) follows when it moved by more than an eighth
            if !wr.marked || wr.lowat.abs_diff(l) > wr.lowat / 8 {
                wr.marked = sys::set_notsent_lowat(fd, l as i32);
                wr.lowat = l;
            }
        }
        let unsent = ti.map(|t| t.notsent_bytes as usize).unwrap_or(0);
        if wr.marked && unsent >= wr.lowat {
            // POLLOUT comes when half the mark is left; the wait is bounded anyway by the
            // time half the mark takes at the connection's rate, so that a missed wake-up
            // cannot hold a probe message for a whole WAKE (100 ms).
            let half_ns = (wr.lowat as u64 / 2).saturating_mul(1_000_000_000).checked_div(wr.rate).unwrap_or(POLL_MAX_NS);
            sys::wait_writable(fd, half_ns.clamp(POLL_MIN_NS, POLL_MAX_NS));
            return None;
        }
        Some(if wr.marked { wr.lowat - unsent } else { wr.lowat }.clamp(1, FRAME_MAX))
    }

}

impl Framer for Framing {
    /// [`stream::write_some`] of a framed stream: at most `chunk` bytes of the
    /// current frame; at a frame boundary a waiting probe message goes first,
    /// and a data frame only while fewer than `L` bytes are unsent.
    fn write(&self, s: &StreamState, chunk: usize, w: &mut u64) -> io::Result<()> {
        let mut wr = self.wr.lock().unwrap();
        if wr.pos >= wr.buf.len() {
            let next = self.out.lock().unwrap().pop_front();
            let wr = &mut *wr;
            match next {
                Some(m) => {
                    wr.buf.clear();
                    wr.buf.extend_from_slice(&header(KIND_PROBE, MSG));
                    wr.buf.extend_from_slice(&m);
                }
                None => {
                    let Some(f) = self.frame_size(s, wr) else {
                        return Ok(()); // the caller's loop looks at its clock and comes back
                    };
                    wr.buf.clear();
                    wr.buf.extend_from_slice(&header(KIND_DATA, f));
                    wr.buf.resize(HDR + f, 0x5a);
                }
            }
            wr.pos = 0;
        }
        let end = (wr.pos + chunk.max(1)).min(wr.buf.len());
        match (&s.sock).write(&wr.buf[wr.pos..end]) {
            Ok(k) => {
                wr.pos += k;
                *w += k as u64;
                s.written.store(*w, Ordering::Relaxed);
                Ok(())
            }
            Err(e) if stream::is_timeout(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// What [`stream::run_receiver`] read from a framed stream: the probe
    /// frames among the data are answered (server) or recorded (client).
    fn feed(&self, s: &StreamState, mut data: &[u8]) {
        let mut rd = self.rd.lock().unwrap();
        while !data.is_empty() && !rd.broken {
            if rd.hdr_got < HDR {
                let n = (HDR - rd.hdr_got).min(data.len());
                let at = rd.hdr_got;
                rd.hdr[at..at + n].copy_from_slice(&data[..n]);
                rd.hdr_got += n;
                data = &data[n..];
                if rd.hdr_got < HDR {
                    break;
                }
                let (kind, len) = (rd.hdr[0], u32::from_le_bytes(rd.hdr[4..].try_into().unwrap()) as usize);
                if rd.hdr[1..4] != [0, 0, 0] || !(kind == KIND_DATA || kind == KIND_PROBE && len == MSG) {
                    rd.broken = true;
                    *self.error.lock().unwrap() = Some(format!("self probes: a frame header that is not one: {:02x?}", rd.hdr));
                    break;
                }
                (rd.kind, rd.left, rd.msg_got) = (kind, len, 0);
            }
            let n = rd.left.min(data.len());
            if rd.kind == KIND_PROBE {
                let at = rd.msg_got;
                rd.msg[at..at + n].copy_from_slice(&data[..n]);
                rd.msg_got += n;
            }
            rd.left -= n;
            data = &data[n..];
            if rd.left == 0 {
                rd.hdr_got = 0;
                if rd.kind == KIND_PROBE {
                    let m = rd.msg;
                    self.on_message(s, &m);
                }
            }
        }
    }

}

impl Framing {
    /// A probe message arrived (in the bulk stream, or on the light direction).
    fn on_message(&self, s: &StreamState, m: &[u8; MSG]) {
        match (&self.board, self.bulk_sender) {
            (Some(b), _) => b.answered(m, self.down),
            // the server's reader of an upload: answer at once, against the bulk
            (None, false) => {
                let _ = (&s.sock).write_all(m);
            }
            // the server's sender of a download: into the bulk stream
            (None, true) => self.out.lock().unwrap().push_back(*m),
        }
    }

    /// The bulk sender's reader of the light direction: 16-byte messages
    /// until EOF, an error, or [`READER_GRACE_NS`] after the stream ended.
    fn read_light(&self, s: &StreamState) {
        let mut m = [0u8; MSG];
        let mut got = 0;
        let mut ended_at = None;
        loop {
            if s.done.load(Ordering::Relaxed) {
                let t = *ended_at.get_or_insert(sys::mono_ns());
                if sys::mono_ns() > t + READER_GRACE_NS {
                    return;
                }
            }
            match (&s.sock).read(&mut m[got..]) {
                Ok(0) => return,
                Ok(k) => {
                    got += k;
                    if got == MSG {
                        got = 0;
                        self.on_message(s, &m);
                    }
                }
                Err(e) if stream::is_timeout(&e) => {
                    if sys::stopped() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn a_probe_frame_split_anywhere_among_data_frames_is_found_once() {
        let (c, _s) = pair();
        let st = StreamState::new(0, c, 0, 0);
        let board = Board::new();
        let f = Framing::new(Some(board.clone()), false, true);
        board.pending.lock().unwrap().insert(7, sys::mono_ns());
        let mut stream = Vec::new();
        stream.extend_from_slice(&header(KIND_DATA, 3000));
        stream.resize(stream.len() + 3000, 0x5a);
        stream.extend_from_slice(&header(KIND_PROBE, MSG));
        stream.extend_from_slice(&msg(7, 1));
        stream.extend_from_slice(&header(KIND_DATA, 0));
        stream.extend_from_slice(&header(KIND_DATA, 5));
        stream.extend_from_slice(&[0x5a; 5]);
        // fed in pieces of 1, 2, 3, ... bytes: every split of header and message occurs
        let (mut at, mut k) = (0, 1);
        while at < stream.len() {
            let end = (at + k).min(stream.len());
            f.feed(&st, &stream[at..end]);
            at = end;
            k = k % 29 + 1;
        }
        assert!(f.error.lock().unwrap().is_none());
        assert_eq!(board.answers.lock().unwrap().len(), 1);
        assert_eq!(board.unanswered(), 0);
        // a stray byte where a header belongs breaks the stream, reported
        f.feed(&st, &[b'X', 1, 2, 3, 0, 0, 0, 0]);
        assert!(f.error.lock().unwrap().as_deref().unwrap().contains("frame header"));
    }

    #[test]
    fn a_queued_message_goes_out_at_the_next_frame_boundary() {
        let (c, mut srv) = pair();
        let st = StreamState::new(0, c, 0, 0);
        let f = Framing::new(None, true, true);
        let mut w = 0u64;
        // first frame: header + LOWAT_START of data, written in chunks of 1000
        f.write(&st, 1000, &mut w).unwrap();
        f.out.lock().unwrap().push_back(msg(3, 4));
        while w < (HDR + LOWAT_START) as u64 {
            f.write(&st, 1000, &mut w).unwrap();
        }
        assert_eq!(w, (HDR + LOWAT_START) as u64, "the message waited for the frame's end");
        f.write(&st, 1000, &mut w).unwrap();
        assert_eq!(w, (HDR + LOWAT_START + HDR + MSG) as u64);
        let mut got = vec![0u8; w as usize];
        srv.read_exact(&mut got).unwrap();
        assert_eq!(&got[HDR + LOWAT_START..][..HDR], &header(KIND_PROBE, MSG));
        assert_eq!(&got[HDR + LOWAT_START + HDR..], &msg(3, 4));
    }
}
