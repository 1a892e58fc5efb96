//! IPv4 header parsing for the link: what the qdisc may look at
//! ([`PacketMeta`]), the ports that tell flows apart (per-flow base RTT), and
//! the CE mark an AQM asks for.
//!
//! Source: RFC 791 (IPv4 header), RFC 9293 (TCP header), RFC 768 (UDP),
//! RFC 3168 (ECN field = the two low bits of the TOS byte), RFC 1624
//! (incremental checksum update). Only IPv4: the emulator's namespaces have
//! IPv6 disabled. Anything unparsable is still forwarded, as flow 0 with the
//! link's default delay.

use bloatlab_core::qdisc::{Ecn, PacketMeta};

/// Byte offsets in the IPv4 and TCP/UDP headers.
mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const PROTO: usize = 9;
    pub const CSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    /// Relative to the transport header.
    pub const SPORT: usize = 0;
    pub const DPORT: usize = 2;
    pub const TCP_DOFF: usize = 12;
    pub const TCP_FLAGS: usize = 13;
}

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// What the link learns from a packet's headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Headers {
    pub proto: u8,
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    /// IP total length (bytes on the wire).
    pub len: u32,
    pub tos: u8,
    pub pure_ack: bool,
}

/// Parse an IPv4 packet. None for anything else (IPv6, truncated).
pub fn parse(b: &[u8]) -> Option<Headers> {
    if b.len() < 20 || b[field::VER_IHL] >> 4 != 4 {
        return None;
    }
    let ihl = ((b[field::VER_IHL] & 0x0f) as usize) * 4;
    if ihl < 20 || b.len() < ihl {
        return None;
    }
    let total = u16::from_be_bytes([b[field::TOTAL_LEN], b[field::TOTAL_LEN + 1]]) as usize;
    let mut h = Headers {
        proto: b[field::PROTO],
        src: u32::from_be_bytes(b[field::SRC..field::SRC + 4].try_into().ok()?),
        dst: u32::from_be_bytes(b[field::DST..field::DST + 4].try_into().ok()?),
        len: total.max(b.len()) as u32,
        tos: b[field::TOS],
        ..Default::default()
    };
    let t = &b[ihl..];
    if (h.proto == PROTO_TCP && t.len() >= 20) || (h.proto == PROTO_UDP && t.len() >= 8) {
        h.sport = u16::from_be_bytes([t[field::SPORT], t[field::SPORT + 1]]);
        h.dport = u16::from_be_bytes([t[field::DPORT], t[field::DPORT + 1]]);
    }
    if h.proto == PROTO_TCP && t.len() >= 20 {
        let doff = ((t[field::TCP_DOFF] >> 4) as usize) * 4;
        let flags = t[field::TCP_FLAGS];
        const FIN: u8 = 0x01;
        const SYN: u8 = 0x02;
        const RST: u8 = 0x04;
        const ACK: u8 = 0x10;
        let payload = total.saturating_sub(ihl + doff);
        h.pure_ack = payload == 0 && flags & ACK != 0 && flags & (FIN | SYN | RST) == 0;
    }
    Some(h)
}

impl Headers {
    /// The qdisc's view: the 5-tuple hashed into a flow key, hosts, length, ECN, DSCP.
    pub fn meta(&self) -> PacketMeta {
        // splitmix64 over the 5-tuple: a well-spread 64-bit key (fq_codel hashes it again with its seed).
        let mut z = ((self.src as u64) << 32 | self.dst as u64)
            ^ ((self.sport as u64) << 24 | (self.dport as u64) << 8 | self.proto as u64).rotate_left(17);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        PacketMeta {
            flow: z,
            src_host: self.src,
            dst_host: self.dst,
            len: self.len,
            ecn: match self.tos & 0x03 {
                0 => Ecn::NotEct,
                1 => Ecn::Ect1,
                2 => Ecn::Ect0,
                _ => Ecn::Ce,
            },
            dscp: self.tos >> 2,
            is_pure_ack: self.pure_ack,
            ..Default::default()
        }
    }
}

/// Set the ECN field of an IPv4 packet to CE (0b11), updating the header
/// checksum incrementally (RFC 1624: HC' = ~(~HC + ~m + m')).
pub fn set_ce(b: &mut [u8]) {
    if b.len() < 20 || b[field::TOS] & 0x03 == 0x03 {
        return;
    }
    let old = u16::from_be_bytes([b[field::VER_IHL], b[field::TOS]]);
    b[field::TOS] |= 0x03;
    let new = u16::from_be_bytes([b[field::VER_IHL], b[field::TOS]]);
    let hc = u16::from_be_bytes([b[field::CSUM], b[field::CSUM + 1]]);
    let mut sum = (!hc as u32) + (!old as u32) + new as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let csum = !(sum as u16);
    b[field::CSUM..field::CSUM + 2].copy_from_slice(&csum.to_be_bytes());
}

/// The IPv4 header checksum (RFC 791), for tests and for building packets:
/// the one the simulator's captures use too.
pub use bloatlab_schema::wire::ipv4_header_checksum as ipv4_checksum;

/// A generator's control connection: a flow's server port on one side and an
/// ephemeral client port on the other (a flow's data connection binds
/// FLOW_CPORT + i instead). It carries the test's parameters before and its
/// results after the data; it is not part of the scenario, so the link spares
/// it the scenario's random loss. Measured before: at 20 % loss the results
/// exchange sometimes took longer than the report grace (8 s) and a flow was
/// reported without result (fidelity scenario 18, twice in a row on a quiet machine).
pub fn is_control(h: &Headers) -> bool {
    use bloatlab_schema::wire::{EPHEMERAL_MIN, FLOW_CPORT, FLOW_PORT};
    let server = |p: u16| (FLOW_PORT..FLOW_CPORT).contains(&p);
    h.proto == 6 && ((server(h.sport) && h.dport >= EPHEMERAL_MIN) || (server(h.dport) && h.sport >= EPHEMERAL_MIN))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A TCP/IPv4 packet with `payload` bytes of data and the given flags.
    pub fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8, payload: usize, tos: u8) -> Vec<u8> {
        let total = 20 + 20 + payload;
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[1] = tos;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[8] = 64;
        b[9] = PROTO_TCP;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        let c = ipv4_checksum(&b[..20]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b[20..22].copy_from_slice(&sport.to_be_bytes());
        b[22..24].copy_from_slice(&dport.to_be_bytes());
        b[32] = 5 << 4;
        b[33] = flags;
        b
    }

    #[test]
    fn a_full_size_segment_parses_to_its_ports_and_length() {
        let p = tcp([10, 0, 0, 2], [10, 0, 0, 1], 30000, 20001, 0x10, 1460, 0);
        let h = parse(&p).unwrap();
        assert_eq!((h.proto, h.sport, h.dport, h.len), (PROTO_TCP, 30000, 20001, 1500));
        assert!(!h.pure_ack);
    }

    #[test]
    fn an_ack_without_payload_is_a_pure_ack_but_a_syn_is_not() {
        assert!(parse(&tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x10, 0, 0)).unwrap().pure_ack);
        assert!(!parse(&tcp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0x12, 0, 0)).unwrap().pure_ack);
    }

    #[test]
    fn an_ipv6_packet_is_not_parsed() {
        let mut b = vec![0u8; 60];
        b[0] = 0x60;
        assert_eq!(parse(&b), None);
    }

    #[test]
    fn setting_ce_keeps_the_header_checksum_valid() {
        let mut p = tcp([10, 0, 0, 2], [10, 0, 0, 1], 1, 2, 0x10, 100, 0x02);
        assert_eq!(parse(&p).unwrap().meta().ecn, Ecn::Ect0);
        set_ce(&mut p);
        assert_eq!(p[1] & 3, 3);
        assert_eq!(u16::from_be_bytes([p[10], p[11]]), ipv4_checksum(&p[..20]));
        assert_eq!(parse(&p).unwrap().meta().ecn, Ecn::Ce);
    }

    #[test]
    fn the_two_directions_of_a_connection_get_different_flow_keys() {
        let a = parse(&tcp([10, 0, 0, 2], [10, 0, 0, 1], 1000, 2000, 0x10, 0, 0)).unwrap().meta().flow;
        let b = parse(&tcp([10, 0, 0, 1], [10, 0, 0, 2], 2000, 1000, 0x10, 0, 0)).unwrap().meta().flow;
        assert_ne!(a, b);
    }
}
