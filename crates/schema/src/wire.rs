//! Where the engines' packets come from and go to, and the IPv4, TCP and UDP
//! headers the simulator writes into its captures ([`crate::pcap`]).
//!
//! The address and port plan is the emulator's (its namespaces and the
//! probe's sockets, crates/emu/src/ns.rs and supervise.rs), and the
//! simulator's captures use it too, so that one analysis reads both
//! engines' files port by port:
//!
//! ```text
//!   client 10.77.0.1                                server 10.77.0.2
//!   flow i:  FLOW_CPORT + i (25000 + i)   <-TCP->  FLOW_PORT + i (20000 + i)
//!   probe j: an ephemeral port (emu),     <-UDP->  PROBE_PORT + j (30000 + j)
//!            PROBE_CPORT + j (sim)                 (the echo server: on the client side for an "up" probe)
//! ```
//!
//! (The emulator's slot N uses 10.77.N.x; slot 0 unless runs overlap.)
//!
//! Header layouts: RFC 791 (IPv4), RFC 9293 (TCP), RFC 768 (UDP), RFC 1071
//! (the Internet checksum), RFC 3168 (ECN bits and flags), RFC 7323
//! (timestamps, window scale), RFC 2018 (SACK). TCP options are laid out as
//! Linux's `tcp_options_write` (net/ipv4/tcp_output.c) lays them out:
//! MSS; SACK-permitted and timestamps together (`4,2,8,10`) or timestamps
//! alone behind two NOPs; NOP + window scale; NOP NOP + SACK blocks.

/// The emulator's client and server addresses (slot 0).
pub const CLIENT_ADDR: [u8; 4] = [10, 77, 0, 1];
pub const SERVER_ADDR: [u8; 4] = [10, 77, 0, 2];
/// Server ports: flow i listens on FLOW_PORT + i, probe j's echo server on
/// PROBE_PORT + j; the sender of flow i binds FLOW_CPORT + i.
pub const FLOW_PORT: u16 = 20000;
pub const FLOW_CPORT: u16 = 25000;
pub const PROBE_PORT: u16 = 30000;
/// Train k's receiver (down: the emulator's `udp server` the train's client asks; up: the one recording it) on
/// TRAIN_PORT + k; the probes' echo servers stay below it.
pub const TRAIN_PORT: u16 = 35000;
/// The emulator's namespaces keep ephemeral ports above this; the
/// simulator's probe j sends from PROBE_CPORT + j (the emulator's from a
/// port the kernel picks in that range).
pub const EPHEMERAL_MIN: u16 = 40000;
pub const PROBE_CPORT: u16 = EPHEMERAL_MIN;
/// The simulator's train k sends from (down: to) TRAIN_CPORT + k in its capture.
pub const TRAIN_CPORT: u16 = EPHEMERAL_MIN + (TRAIN_PORT - PROBE_PORT);

/// IP protocol numbers.
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
/// Linux's default TTL (`sysctl_ip_default_ttl`).
pub const TTL: u8 = 64;
/// Bytes of an IPv4 header without options, and of a UDP header.
pub const IPV4_HDR: usize = 20;
pub const UDP_HDR: usize = 8;

/// TCP flags (the low byte of the flags field; `AE`, RFC 9768 / AccECN, is bit 8).
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// ECN codepoints of the IP header's low two bits (RFC 3168).
pub const NOT_ECT: u8 = 0;
pub const ECT1: u8 = 1;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// The IPv4 header's fields a capture needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub proto: u8,
    /// DiffServ code point (6 bits) and ECN codepoint (2 bits).
    pub dscp: u8,
    pub ecn: u8,
    pub id: u16,
    /// The whole packet's length (the total-length field), bytes.
    pub total_len: u16,
}

/// The TCP header's fields and options. Sequence numbers are the wire's
/// (32-bit, wrapping); `window` is the field (the scaled window >> scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tcp<'a> {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// MSS option (SYNs).
    pub mss: Option<u16>,
    /// SACK-permitted option (SYNs).
    pub sack_permitted: bool,
    /// Window-scale option's shift count (SYNs).
    pub wscale: Option<u8>,
    /// Timestamps option: (TSval, TSecr).
    pub ts: Option<(u32, u32)>,
    /// SACK blocks (left edge, right edge), at most 3 beside timestamps.
    pub sack: &'a [(u32, u32)],
}

/// RFC 1071: the 16-bit ones'-complement sum of `b` (odd length padded
/// with a zero byte) added to `sum`, not yet folded.
#[inline]
fn sum16(mut sum: u32, b: &[u8]) -> u32 {
    let mut c = b.chunks_exact(2);
    for w in &mut c {
        sum += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [x] = c.remainder() {
        sum += (*x as u32) << 8;
    }
    sum
}

/// Fold a ones'-complement sum to 16 bits, not complemented (what Linux
/// stores in a `CHECKSUM_PARTIAL` header for the pseudo-header).
#[inline]
pub fn fold_sum(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Fold a ones'-complement sum to 16 bits and complement it.
fn fold(sum: u32) -> u16 {
    !fold_sum(sum)
}

/// The IPv4 pseudo-header's ones'-complement sum (RFC 9293 §3.1) for a
/// transport segment of `len` bytes from `src` to `dst` (4 bytes each), not
/// yet folded.
#[inline]
pub fn pseudo_header_sum(src: &[u8], dst: &[u8], proto: u8, len: usize) -> u32 {
    sum16(sum16(0, src), dst) + proto as u32 + len as u32
}

/// The Internet checksum of `b` (a header with its checksum field zeroed
/// gives the value to put there; a whole header with it gives 0).
pub fn checksum(b: &[u8]) -> u16 {
    fold(sum16(0, b))
}

/// The checksum an IPv4 header `h` (its options included) should carry:
/// the Internet checksum with the checksum field (bytes 10-11) taken as 0.
pub fn ipv4_header_checksum(h: &[u8]) -> u16 {
    fold(sum16(sum16(0, &h[..10]), &h[12..]))
}

impl Ipv4 {
    /// Append the 20-byte header (no options, DF set, TTL 64, checksum filled in).
    pub fn write(&self, out: &mut Vec<u8>) {
        let at = out.len();
        let l = self.total_len.to_be_bytes();
        let id = self.id.to_be_bytes();
        out.extend_from_slice(&[
            0x45,
            (self.dscp << 2) | (self.ecn & 3),
            l[0],
            l[1],
            id[0],
            id[1],
            0x40, // DF, fragment offset 0
            0,
            TTL,
            self.proto,
            0,
            0,
        ]);
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
        let c = ipv4_header_checksum(&out[at..at + IPV4_HDR]).to_be_bytes();
        out[at + 10..at + 12].copy_from_slice(&c);
    }

    /// The transport checksum's pseudo-header sum for a segment of `len` bytes.
    fn pseudo_sum(&self, len: usize) -> u32 {
        pseudo_header_sum(&self.src, &self.dst, self.proto, len)
    }
}

impl Tcp<'_> {
    /// Bytes of the header, options included.
    pub fn len(&self) -> usize {
        let mut n = 20;
        if self.mss.is_some() {
            n += 4;
        }
        if self.ts.is_some() || self.sack_permitted {
            n += if self.ts.is_some() { 12 } else { 4 };
        }
        if self.wscale.is_some() {
            n += 4;
        }
        if !self.sack.is_empty() {
            n += 4 + 8 * self.sack.len();
        }
        n
    }

    /// Append the header after `ip` (already appended to `out` or not: only
    /// its addresses and lengths are read). The checksum is the one of a
    /// segment whose payload (`ip.total_len` − headers bytes, not written)
    /// is all zeros: the simulator models no payload bytes.
    pub fn write(&self, ip: &Ipv4, out: &mut Vec<u8>) {
        let at = out.len();
        let hlen = self.len();
        out.extend_from_slice(&self.sport.to_be_bytes());
        out.extend_from_slice(&self.dport.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        out.extend_from_slice(&[((hlen / 4) as u8) << 4, self.flags]);
        out.extend_from_slice(&self.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        if let Some(m) = self.mss {
            out.extend_from_slice(&[2, 4]);
            out.extend_from_slice(&m.to_be_bytes());
        }
        match (self.ts, self.sack_permitted) {
            (Some((val, ecr)), sp) => {
                out.extend_from_slice(if sp { &[4, 2, 8, 10] } else { &[1, 1, 8, 10] });
                out.extend_from_slice(&val.to_be_bytes());
                out.extend_from_slice(&ecr.to_be_bytes());
            }
            (None, true) => out.extend_from_slice(&[1, 1, 4, 2]),
            (None, false) => {}
        }
        if let Some(s) = self.wscale {
            out.extend_from_slice(&[1, 3, 3, s]);
        }
        if !self.sack.is_empty() {
            out.extend_from_slice(&[1, 1, 5, (2 + 8 * self.sack.len()) as u8]);
            for (l, r) in self.sack {
                out.extend_from_slice(&l.to_be_bytes());
                out.extend_from_slice(&r.to_be_bytes());
            }
        }
        let seg_len = (ip.total_len as usize).saturating_sub(IPV4_HDR);
        let c = fold(sum16(ip.pseudo_sum(seg_len), &out[at..at + hlen])).to_be_bytes();
        out[at + 16..at + 18].copy_from_slice(&c);
    }
}

/// Append a UDP header for a datagram of `ip.total_len` bytes whose payload
/// (not written) is all zeros, with its checksum.
pub fn write_udp(ip: &Ipv4, sport: u16, dport: u16, out: &mut Vec<u8>) {
    let at = out.len();
    let len = (ip.total_len as usize).saturating_sub(IPV4_HDR) as u16;
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    let c = match fold(sum16(ip.pseudo_sum(len as usize), &out[at..at + UDP_HDR])) {
        0 => 0xffff, // RFC 768: a computed 0 is sent as all ones
        c => c,
    };
    out[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be16(b: &[u8], i: usize) -> u16 {
        u16::from_be_bytes([b[i], b[i + 1]])
    }
    fn be32(b: &[u8], i: usize) -> u32 {
        u32::from_be_bytes(b[i..i + 4].try_into().unwrap())
    }

    /// RFC 1071 §3's example: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2, its complement 220d.
    #[test]
    fn the_checksum_is_rfc_1071s_worked_example() {
        assert_eq!(checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0x220d);
        // an odd byte counts as the high byte of a last word
        assert_eq!(checksum(&[0x01]), !0x0100);
    }

    fn ip(proto: u8, total_len: u16) -> Ipv4 {
        Ipv4 { src: SERVER_ADDR, dst: CLIENT_ADDR, proto, dscp: 10, ecn: ECT0, id: 0x1234, total_len }
    }

    #[test]
    fn an_ipv4_header_has_its_fields_at_their_offsets_and_a_checksum_that_verifies() {
        let mut b = Vec::new();
        ip(TCP, 1500).write(&mut b);
        assert_eq!(b.len(), 20);
        assert_eq!(b[0], 0x45);
        assert_eq!(b[1], (10 << 2) | 2, "DSCP AF11 and ECT(0)");
        assert_eq!((be16(&b, 2), be16(&b, 4), be16(&b, 6)), (1500, 0x1234, 0x4000));
        assert_eq!((b[8], b[9]), (64, 6));
        assert_eq!((&b[12..16], &b[16..20]), (&[10, 77, 0, 2][..], &[10, 77, 0, 1][..]));
        // the exact checksum: words 452a 05dc 1234 4000 4006 0a4d 0002 0a4d 0001 sum to f1dd, complemented 0e22
        assert_eq!(be16(&b, 10), 0x0e22);
        assert_eq!(checksum(&b), 0, "a header with its checksum sums to 0");
        assert_eq!(ipv4_header_checksum(&b), 0x0e22, "the field itself is left out");
        let mut ce = Vec::new();
        Ipv4 { ecn: CE, dscp: 0, ..ip(TCP, 52) }.write(&mut ce);
        assert_eq!(ce[1], 3);
    }

    #[test]
    fn a_syn_carries_mss_sack_permitted_timestamps_and_window_scale_as_linux_lays_them_out() {
        let t = Tcp {
            sport: 25000,
            dport: 20000,
            seq: 0xdead_beef,
            ack: 0,
            flags: SYN | ECE | CWR,
            window: 65160,
            mss: Some(1460),
            sack_permitted: true,
            wscale: Some(12),
            ts: Some((1000, 0)),
            sack: &[],
        };
        assert_eq!(t.len(), 40);
        let ipv4 = Ipv4 { src: CLIENT_ADDR, dst: SERVER_ADDR, ..ip(TCP, 60) };
        let mut b = Vec::new();
        t.write(&ipv4, &mut b);
        assert_eq!(b.len(), 40);
        assert_eq!((be16(&b, 0), be16(&b, 2), be32(&b, 4), be32(&b, 8)), (25000, 20000, 0xdead_beef, 0));
        assert_eq!((b[12], b[13], be16(&b, 14)), (10 << 4, 0xc2, 65160));
        assert_eq!(be16(&b, 18), 0, "urgent pointer");
        assert_eq!(&b[20..24], &[2, 4, 0x05, 0xb4]);
        assert_eq!(&b[24..28], &[4, 2, 8, 10]);
        assert_eq!((be32(&b, 28), be32(&b, 32)), (1000, 0));
        assert_eq!(&b[36..40], &[1, 3, 3, 12]);
        // the checksum over the pseudo-header and the segment verifies
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&CLIENT_ADDR);
        pseudo.extend_from_slice(&SERVER_ADDR);
        pseudo.extend_from_slice(&[0, 6, 0, 40]);
        pseudo.extend_from_slice(&b);
        assert_eq!(checksum(&pseudo), 0);
    }

    #[test]
    fn an_ack_carries_timestamps_then_sack_blocks_behind_two_nops_each() {
        let blocks = [(1000, 2448), (5000, 6448)];
        let t = Tcp { sport: 25000, dport: 20000, seq: 17, ack: 1001, flags: ACK | ECE, window: 16, ts: Some((7, 9)), sack: &blocks, ..Default::default() };
        assert_eq!(t.len(), 20 + 12 + 20);
        let mut b = Vec::new();
        t.write(&ip(TCP, 72), &mut b);
        assert_eq!((b[12], b[13], be16(&b, 14)), (13 << 4, 0x50, 16));
        assert_eq!(&b[20..24], &[1, 1, 8, 10]);
        assert_eq!((be32(&b, 24), be32(&b, 28)), (7, 9));
        assert_eq!(&b[32..36], &[1, 1, 5, 18]);
        assert_eq!((be32(&b, 36), be32(&b, 40), be32(&b, 44), be32(&b, 48)), (1000, 2448, 5000, 6448));
    }

    #[test]
    fn a_data_segments_checksum_covers_its_zero_payload_through_the_length() {
        // 1448 zero bytes add nothing to the sum but their count in the pseudo-header
        let t = Tcp { seq: 1, ack: 1, flags: ACK, window: 16, ts: Some((1, 2)), ..Default::default() };
        let ipv4 = ip(TCP, 1500);
        let mut b = Vec::new();
        t.write(&ipv4, &mut b);
        let mut whole = Vec::new();
        whole.extend_from_slice(&ipv4.src);
        whole.extend_from_slice(&ipv4.dst);
        whole.extend_from_slice(&[0, 6]);
        whole.extend_from_slice(&1480u16.to_be_bytes());
        whole.extend_from_slice(&b);
        whole.resize(whole.len() + 1448, 0);
        assert_eq!(checksum(&whole), 0);
    }

    #[test]
    fn a_udp_header_has_its_ports_length_and_a_checksum_that_verifies() {
        let ipv4 = ip(UDP, 92);
        let mut b = Vec::new();
        write_udp(&ipv4, 40000, 30000, &mut b);
        assert_eq!((be16(&b, 0), be16(&b, 2), be16(&b, 4)), (40000, 30000, 72));
        let mut whole = Vec::new();
        whole.extend_from_slice(&ipv4.src);
        whole.extend_from_slice(&ipv4.dst);
        whole.extend_from_slice(&[0, 17, 0, 72]);
        whole.extend_from_slice(&b);
        assert_eq!(checksum(&whole), 0);
        assert_ne!(be16(&b, 6), 0);
    }
}
