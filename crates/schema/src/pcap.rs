//! The capture files both engines write (`--pcap DIR`: `DIR/down.pcap`,
//! `DIR/up.pcap`): the classic libpcap format, nanosecond variant, link type
//! 101 (LINKTYPE_RAW: each record starts with its IPv4 header), which
//! tcpdump, Wireshark, dpkt and scapy open as they are. Written once, here:
//! the emulator records the packets it reads from its TUN devices, the
//! simulator the headers it builds from its model ([`crate::wire`]).
//!
//! Format: https://www.tcpdump.org/manpages/pcap-savefile.5.html — a 24-byte
//! file header (magic 0xa1b23c4d = ns timestamps, version 2.4, snaplen, link
//! type), then per packet a 16-byte record header (seconds, nanoseconds,
//! captured length, original length) and the captured bytes.
//!
//! Headers only: a record keeps a packet's IPv4 header and its TCP or UDP
//! header (options included) and cuts the payload; its original length is
//! the whole packet's, so rates and sizes read right. Measured on a 15 s
//! 20 Mbit/s BBR download through the emulator (fidelity scenario 03): the
//! whole packets took 38.9 MB (down), headers 1.8 MB; what an analysis of
//! timing, sequence numbers, windows, flags and options reads is all there.
//! Anything else is cut at [`SNAPLEN`] bytes.
//!
//! Timestamps are `base_ns + t_ns`: the simulator's base is 0 (the scenario's
//! t = 0 reads as 1970-01-01 00:00:00), the emulator's the wall clock.

use std::fs::File;
use std::io::{self, BufWriter, Write};

/// `a1b23c4d`: the nanosecond-resolution variant of the classic format.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_RAW: raw IPv4/IPv6, no link-layer header.
pub const LINKTYPE_RAW: u32 = 101;
/// The most bytes kept of any packet (the file header's snaplen): the
/// largest IPv4 header (60 B) and TCP header (60 B) fit.
pub const SNAPLEN: u32 = 128;
/// Bytes of the file header and of each record's header.
pub const FILE_HDR: usize = 24;
pub const REC_HDR: usize = 16;
/// The writer's buffer: writes reach the file 1 MiB at a time.
const BUF: usize = 1 << 20;

/// How many leading bytes of `pkt` a record keeps: an IPv4 packet's IP and
/// TCP or UDP headers; otherwise (IPv6, fragments, other protocols, a
/// truncated header) at most [`SNAPLEN`] bytes.
pub fn headers_len(pkt: &[u8]) -> usize {
    let cut = pkt.len().min(SNAPLEN as usize);
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return cut;
    }
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    let frag_offset = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff;
    if ihl < 20 || frag_offset != 0 {
        return cut;
    }
    let l4 = match pkt[9] {
        6 if pkt.len() >= ihl + 13 => (pkt[ihl + 12] >> 4) as usize * 4,
        17 => 8,
        _ => return cut,
    };
    (ihl + l4).min(cut)
}

/// A capture file being written. `W` is the file (buffered) in the engines,
/// a `Vec<u8>` in tests.
pub struct Pcap<W: Write = BufWriter<File>> {
    w: W,
    /// Added to every record's time (ns since the Unix epoch).
    base_ns: u64,
}

impl Pcap {
    /// Create `path` (truncated if it exists) with its file header; an error
    /// names the path.
    pub fn create(path: &std::path::Path, base_ns: u64) -> io::Result<Pcap> {
        let f = File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Pcap::new(BufWriter::with_capacity(BUF, f), base_ns)
    }
}

impl<W: Write> Pcap<W> {
    /// Start a capture on `w`: the file header.
    pub fn new(mut w: W, base_ns: u64) -> io::Result<Pcap<W>> {
        let mut h = [0u8; FILE_HDR];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes()); // version 2.4
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs: 0
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
        w.write_all(&h)?;
        Ok(Pcap { w, base_ns })
    }

    /// Record a whole packet `pkt` seen at `t_ns`: its headers are kept ([`headers_len`]).
    pub fn packet(&mut self, t_ns: u64, pkt: &[u8]) -> io::Result<()> {
        self.headers(t_ns, &pkt[..headers_len(pkt)], pkt.len() as u32)
    }

    /// Record a packet of `orig_len` bytes of which `hdr` (at most
    /// [`SNAPLEN`] bytes) is captured, seen at `t_ns`.
    pub fn headers(&mut self, t_ns: u64, hdr: &[u8], orig_len: u32) -> io::Result<()> {
        let t = self.base_ns + t_ns;
        let cap = &hdr[..hdr.len().min(SNAPLEN as usize)];
        let mut r = [0u8; REC_HDR];
        r[0..4].copy_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
        r[8..12].copy_from_slice(&(cap.len() as u32).to_le_bytes());
        r[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.w.write_all(&r)?;
        self.w.write_all(cap)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// The underlying writer (flushed by the caller if buffered).
    pub fn into_inner(self) -> W {
        self.w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
    }

    #[test]
    fn a_file_with_one_packet_has_the_24_byte_header_and_one_16_byte_record() {
        let mut w = Pcap::new(Vec::new(), 0).unwrap();
        // a UDP packet: 20 B IPv4 + 8 B UDP + 12 B payload, kept as its 28 bytes of headers
        let mut pkt = [0u8; 40];
        pkt[0] = 0x45;
        pkt[9] = 17;
        w.packet(1_500_000_123, &pkt).unwrap();
        let b = w.into_inner();
        assert_eq!(b.len(), 24 + 16 + 28);
        assert_eq!(u32_at(&b, 0), 0xa1b2_3c4d);
        assert_eq!(u32_at(&b, 16), 128);
        assert_eq!(u32_at(&b, 20), 101);
        assert_eq!(u32_at(&b, 24), 1);
        assert_eq!(u32_at(&b, 28), 500_000_123);
        assert_eq!((u32_at(&b, 32), u32_at(&b, 36)), (28, 40));
    }

    #[test]
    fn a_record_keeps_the_ip_and_tcp_headers_with_options_and_cuts_the_payload() {
        // IPv4 with 4 bytes of options (IHL 6), TCP with 12 bytes of options (data offset 8), 1448 B payload
        let mut pkt = vec![0u8; 24 + 32 + 1448];
        pkt[0] = 0x46;
        pkt[9] = 6;
        pkt[24 + 12] = 8 << 4;
        assert_eq!(headers_len(&pkt), 56);
        // a later fragment has no TCP header: cut at the snaplen
        pkt[7] = 1;
        assert_eq!(headers_len(&pkt), 128);
        // IPv6 and short packets likewise
        assert_eq!(headers_len(&[0x60; 300]), 128);
        assert_eq!(headers_len(&[0x45; 10]), 10);
        // a TCP header cut short by the packet itself: never more than the packet
        let mut short = vec![0u8; 30];
        short[0] = 0x45;
        short[9] = 6;
        assert_eq!(headers_len(&short), 30);
    }

    #[test]
    fn record_times_are_the_base_plus_the_packet_time_in_seconds_and_nanoseconds() {
        let mut w = Pcap::new(Vec::new(), 1_700_000_000_999_999_999).unwrap();
        w.headers(2, &[0x45; 20], 1500).unwrap();
        let b = w.into_inner();
        assert_eq!((u32_at(&b, 24), u32_at(&b, 28)), (1_700_000_001, 1));
        assert_eq!((u32_at(&b, 32), u32_at(&b, 36)), (20, 1500));
    }
}
