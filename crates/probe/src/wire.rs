//! The UDP echo packet: format, parser and builders.
//!
//! Source: bloatlab's own format (documented in `docs/probe.md`); the ideas
//! come from irtt (server timestamps in the reply, optional HMAC) and from
//! RFC 5357 TWAMP-light (a reflector that returns what it got, same size).
//!
//! Layout (all integers little endian):
//!
//! ```text
//!  0..2   magic 0xB1 0x0A
//!  2      version (high nibble, = 1) | kind (low nibble: 1 request, 2 reply;
//!         3 train request, 4 train answer, 5 train data: see `train.rs`;
//!         6 up-train request, 7 up-train answer: see `train_up.rs`)
//!  3      flags: bit 0 TS   = bytes 16..32 are room for the server's
//!                             receive and send timestamps (u64 ns each)
//!                bit 1 AUTH = the last 16 bytes are HMAC-SHA256(secret,
//!                             everything before them), truncated to 16 bytes
//!                other bits must be zero
//!  4..8   session id (u32, chosen at random by the client for one run)
//!  8..16  sequence number (u64)
//!  16..   [server rx ns, server tx ns if TS] payload [tag if AUTH]
//! ```
//!
//! The server answers a request with a reply of exactly the request's length:
//! it rewrites the kind, fills the timestamp room and re-signs; the payload is
//! echoed untouched, so the client can check every byte. The one exception
//! is a packet train (`train.rs`), sent only to a client that has echoed the
//! server's cookie (so it receives at its address) and within a budget per
//! source: a spoofed request gets no more bytes back than it sent.
//!
//! Constants: [`HEADER_LEN`] = 16 B is the smallest packet the CLI allows
//! (`--size 16`); [`MAX_PACKET`] = 1472 B is the largest UDP payload that fits
//! a 1500 B Ethernet MTU over IPv4 (1500 - 20 IP - 8 UDP).
//!
//! [`parse`] never panics on any input (fuzzed in `fuzz/` and by a unit test
//! with 100k random inputs).

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const MAGIC: [u8; 2] = [0xB1, 0x0A];
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 16;
/// Room for two u64 server timestamps (receive, send).
pub const TS_LEN: usize = 16;
/// Truncated HMAC-SHA256 tag: 128 bits, as RFC 2104 §5 allows (≥ half the hash).
pub const TAG_LEN: usize = 16;
pub const MAX_PACKET: usize = 1472;

pub const FLAG_TS: u8 = 1;
pub const FLAG_AUTH: u8 = 2;
const KNOWN_FLAGS: u8 = FLAG_TS | FLAG_AUTH;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request = 1,
    Reply = 2,
    /// A client asks for a packet train ([`crate::train`]).
    TrainRequest = 3,
    /// The server's answer to a train request: a cookie, a refusal, or the train's end.
    TrainAnswer = 4,
    /// One packet of a train (from the server; from the client in an up train).
    TrainData = 5,
    /// A client's request about an up train ([`crate::train_up`]): start, report, done.
    UpRequest = 6,
    /// The server's answer to an up-train request: a cookie, a refusal, READY, or a report.
    UpAnswer = 7,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    TooShort,
    TooLong,
    BadMagic,
    BadVersion,
    BadKind,
    UnknownFlags,
    /// The flags promise timestamp room or a tag that the length cannot hold.
    NoRoom,
    /// We hold a secret and the packet carries no tag.
    AuthMissing,
    /// The tag does not verify.
    AuthFailed,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

/// A shared secret, ready to sign and verify.
#[derive(Clone)]
pub struct Key(Hmac<Sha256>);

impl Key {
    pub fn new(secret: &[u8]) -> Key {
        Key(Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length"))
    }
    fn tag(&self, data: &[u8]) -> [u8; TAG_LEN] {
        let mut m = self.0.clone();
        m.update(data);
        let full = m.finalize().into_bytes();
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(&full[..TAG_LEN]);
        t
    }
    /// The full HMAC-SHA256 of `data`, hex: the TCP control channel's
    /// challenge answer.
    pub fn sign_hex(&self, data: &[u8]) -> String {
        let mut m = self.0.clone();
        m.update(data);
        m.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }
    /// Constant-time check of a [`Key::sign_hex`] answer.
    pub fn verify_hex(&self, data: &[u8], hex: &str) -> bool {
        let want = self.sign_hex(data);
        want.len() == hex.len() && want.bytes().zip(hex.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
    fn verify(&self, data: &[u8], tag: &[u8]) -> bool {
        let want = self.tag(data);
        // constant-time comparison
        want.iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0 && tag.len() == TAG_LEN
    }
}

/// A validated view of a packet. After [`parse`] no accessor can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub kind: Kind,
    pub flags: u8,
    pub session: u32,
    pub seq: u64,
    /// (server receive ns, server send ns) when the TS flag is set.
    pub server_ts: Option<(u64, u64)>,
    /// The bytes after the header and timestamp room, before the tag.
    pub payload: &'a [u8],
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

/// The smallest packet that can carry `flags`.
pub fn min_len(flags: u8) -> usize {
    HEADER_LEN + if flags & FLAG_TS != 0 { TS_LEN } else { 0 } + if flags & FLAG_AUTH != 0 { TAG_LEN } else { 0 }
}

/// Validate `buf`. With `key`, unauthenticated or badly signed packets are
/// rejected; without one, a tag is accepted unverified (and excluded from the
/// payload).
pub fn parse<'a>(buf: &'a [u8], key: Option<&Key>) -> Result<Packet<'a>, WireError> {
    if buf.len() < HEADER_LEN {
        return Err(WireError::TooShort);
    }
    if buf.len() > MAX_PACKET {
        return Err(WireError::TooLong);
    }
    if buf[0..2] != MAGIC {
        return Err(WireError::BadMagic);
    }
    if buf[2] >> 4 != VERSION {
        return Err(WireError::BadVersion);
    }
    let kind = match buf[2] & 0x0f {
        1 => Kind::Request,
        2 => Kind::Reply,
        3 => Kind::TrainRequest,
        4 => Kind::TrainAnswer,
        5 => Kind::TrainData,
        6 => Kind::UpRequest,
        7 => Kind::UpAnswer,
        _ => return Err(WireError::BadKind),
    };
    let flags = buf[3];
    if flags & !KNOWN_FLAGS != 0 {
        return Err(WireError::UnknownFlags);
    }
    if buf.len() < min_len(flags) {
        return Err(WireError::NoRoom);
    }
    let mut end = buf.len();
    if flags & FLAG_AUTH != 0 {
        end -= TAG_LEN;
        if let Some(k) = key {
            if !k.verify(&buf[..end], &buf[end..]) {
                return Err(WireError::AuthFailed);
            }
        }
    } else if key.is_some() {
        return Err(WireError::AuthMissing);
    }
    let mut start = HEADER_LEN;
    let server_ts = if flags & FLAG_TS != 0 {
        start += TS_LEN;
        Some((u64_at(buf, 16), u64_at(buf, 24)))
    } else {
        None
    };
    Ok(Packet { kind, flags, session: u32_at(buf, 4), seq: u64_at(buf, 8), server_ts, payload: &buf[start..end] })
}

/// The payload pattern of packet (`session`, `seq`): a xorshift64* stream, so
/// the client can check an echo without storing what it sent.
pub fn fill_pattern(out: &mut [u8], session: u32, seq: u64) {
    let mut x = ((session as u64) << 32 ^ seq).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in out.chunks_mut(8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// True when `payload` is exactly the pattern of (`session`, `seq`).
pub fn check_pattern(payload: &[u8], session: u32, seq: u64, scratch: &mut Vec<u8>) -> bool {
    scratch.resize(payload.len(), 0);
    fill_pattern(scratch, session, seq);
    scratch[..] == *payload
}

/// Write a request of `size` bytes into `buf[..size]`. `size` must be at least
/// `min_len(flags)` (checked by the CLI).
pub fn build_request(buf: &mut [u8], size: usize, flags: u8, session: u32, seq: u64, key: Option<&Key>) {
    let b = &mut buf[..size];
    b[0..2].copy_from_slice(&MAGIC);
    b[2] = VERSION << 4 | Kind::Request as u8;
    b[3] = flags;
    b[4..8].copy_from_slice(&session.to_le_bytes());
    b[8..16].copy_from_slice(&seq.to_le_bytes());
    let mut start = HEADER_LEN;
    if flags & FLAG_TS != 0 {
        b[16..32].fill(0);
        start += TS_LEN;
    }
    let end = if flags & FLAG_AUTH != 0 { size - TAG_LEN } else { size };
    fill_pattern(&mut b[start..end], session, seq);
    if flags & FLAG_AUTH != 0 {
        let t = key.expect("AUTH flag needs a key").tag(&b[..end]);
        b[end..].copy_from_slice(&t);
    }
}

/// Sign `buf` in place when its flags carry AUTH: the last [`TAG_LEN`] bytes
/// become the tag of everything before them (the train's packets).
pub fn sign(buf: &mut [u8], key: Option<&Key>) {
    if buf[3] & FLAG_AUTH != 0 {
        let end = buf.len() - TAG_LEN;
        if let Some(k) = key {
            let t = k.tag(&buf[..end]);
            buf[end..].copy_from_slice(&t);
        }
    }
}

/// Turn the validated request in `buf` into its reply, in place and of the
/// same length: kind := reply, timestamps filled (if room), tag recomputed.
/// `tx_ns` is called as late as possible, just before signing.
pub fn make_reply(buf: &mut [u8], rx_ns: u64, tx_ns: impl FnOnce() -> u64, key: Option<&Key>) {
    let flags = buf[3];
    buf[2] = VERSION << 4 | Kind::Reply as u8;
    if flags & FLAG_TS != 0 {
        buf[16..24].copy_from_slice(&rx_ns.to_le_bytes());
        buf[24..32].copy_from_slice(&tx_ns().to_le_bytes());
    }
    if flags & FLAG_AUTH != 0 {
        let end = buf.len() - TAG_LEN;
        if let Some(k) = key {
            let t = k.tag(&buf[..end]);
            buf[end..].copy_from_slice(&t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::rng::{stream, RngExt};

    #[test]
    fn a_built_request_parses_back_with_its_fields() {
        let mut b = [0u8; 64];
        build_request(&mut b, 64, FLAG_TS, 7, 42, None);
        let p = parse(&b[..64], None).unwrap();
        assert_eq!((p.kind, p.session, p.seq, p.server_ts), (Kind::Request, 7, 42, Some((0, 0))));
        assert_eq!(p.payload.len(), 64 - 32);
        let mut s = Vec::new();
        assert!(check_pattern(p.payload, 7, 42, &mut s));
        assert!(!check_pattern(p.payload, 7, 43, &mut s));
    }

    #[test]
    fn a_reply_has_the_request_length_and_carries_the_server_timestamps() {
        let k = Key::new(b"secret");
        let mut b = [0u8; 80];
        build_request(&mut b, 80, FLAG_TS | FLAG_AUTH, 1, 2, Some(&k));
        assert!(parse(&b, Some(&k)).is_ok());
        make_reply(&mut b, 1000, || 1500, Some(&k));
        let p = parse(&b, Some(&k)).unwrap();
        assert_eq!(p.kind, Kind::Reply);
        assert_eq!(p.server_ts, Some((1000, 1500)));
        assert_eq!(p.payload.len(), 80 - 16 - 16 - 16);
    }

    #[test]
    fn a_wrong_secret_or_a_missing_tag_is_rejected() {
        let mut b = [0u8; 48];
        build_request(&mut b, 48, FLAG_AUTH, 1, 2, Some(&Key::new(b"a")));
        assert_eq!(parse(&b, Some(&Key::new(b"b"))), Err(WireError::AuthFailed));
        build_request(&mut b, 48, 0, 1, 2, None);
        assert_eq!(parse(&b, Some(&Key::new(b"a"))), Err(WireError::AuthMissing));
    }

    #[test]
    fn flipping_one_payload_bit_breaks_the_tag() {
        let k = Key::new(b"k");
        let mut b = [0u8; 48];
        build_request(&mut b, 48, FLAG_AUTH, 1, 2, Some(&k));
        b[20] ^= 1;
        assert_eq!(parse(&b, Some(&k)), Err(WireError::AuthFailed));
    }

    #[test]
    fn short_long_and_malformed_headers_name_their_fault() {
        let mut b = [0u8; 32];
        build_request(&mut b, 32, FLAG_TS, 1, 1, None);
        assert_eq!(parse(&b[..15], None), Err(WireError::TooShort));
        assert_eq!(parse(&[0u8; MAX_PACKET + 1], None), Err(WireError::TooLong));
        assert_eq!(parse(&b[..20], None), Err(WireError::NoRoom));
        let mut c = b;
        c[0] = 0;
        assert_eq!(parse(&c, None), Err(WireError::BadMagic));
        let mut c = b;
        c[2] = 0x21;
        assert_eq!(parse(&c, None), Err(WireError::BadVersion));
        for k in [0x10, 0x18, 0x1f] {
            let mut c = b;
            c[2] = k;
            assert_eq!(parse(&c, None), Err(WireError::BadKind));
        }
        let mut c = b;
        c[3] = 0x80;
        assert_eq!(parse(&c, None), Err(WireError::UnknownFlags));
    }

    /// The fuzz target's property, run on 100k random inputs in every test run:
    /// parse never panics, and whatever it accepts satisfies the length
    /// invariants the server relies on (payload inside the packet).
    #[test]
    fn the_parser_survives_100k_random_inputs() {
        let mut r = stream(4, 0);
        let key = Key::new(b"fuzz");
        let mut buf = vec![0u8; MAX_PACKET + 8];
        let mut accepted = 0;
        for i in 0..100_000u32 {
            let len = r.gen_range(0..buf.len());
            r.fill(&mut buf[..len]);
            // Half the inputs get a valid magic/version so the parser goes deep.
            if i % 2 == 0 && len >= 4 {
                buf[0..2].copy_from_slice(&MAGIC);
                buf[2] = VERSION << 4 | r.gen_range(0..4u8);
                buf[3] &= if i % 4 == 0 { KNOWN_FLAGS } else { 0xff };
            }
            for k in [None, Some(&key)] {
                if let Ok(p) = parse(&buf[..len], k) {
                    accepted += 1;
                    assert!(p.payload.len() + HEADER_LEN <= len);
                }
            }
        }
        // Random bodies with a forced header are accepted only without a key.
        assert!(accepted > 1000, "the deep paths were exercised ({accepted} accepted)");
    }
}
