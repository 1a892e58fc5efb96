//! The TUN devices' virtio-net header, and GSO super-packets cut into the
//! segments a wire would carry.
//!
//! Sources: `include/uapi/linux/virtio_net.h` (struct virtio_net_hdr, 10
//! bytes, host byte order on a TUN unless TUNSETVNETLE/BE), `drivers/net/tun.c`
//! (`tun_put_user`/`tun_get_user`: each read/write starts with that header once
//! IFF_VNET_HDR is set), `net/ipv4/tcp_offload.c` `tcp_gso_segment` and
//! `net/ipv4/af_inet.c` `inet_gso_segment` (Linux 6.18), which this file
//! follows for what changes from one segment to the next.
//!
//! The model in a nutshell: with `TUNSETOFFLOAD(TUN_F_CSUM | TUN_F_TSO4 |
//! TUN_F_TSO_ECN)` the kernel hands the emulator a TCP send of up to 64 KiB in
//! one read instead of segmenting it in software first (`validate_xmit_skb`
//! → `skb_gso_segment`) and handing over ~45 packets in ~45 reads. The
//! emulator cuts it into the very segments the kernel would have made, so
//! every per-packet decision on the link (random loss, policer, qdisc
//! enqueue/drop/mark, serialization, delay) stays per wire segment.
//!
//! What changes per segment (tcp_gso_segment, inet_gso_segment):
//! - IPv4 total length; IP id = first id + index (unless the kernel asked
//!   for a fixed id, `SKB_GSO_TCP_FIXEDID`, which the virtio header cannot
//!   express: Linux increments it for TCP over a TUN); the header checksum.
//! - TCP sequence number = first + index × gso_size; FIN and PSH only on the
//!   last segment; CWR only on the first.
//! - The TCP checksum: the super-packet comes with `NEEDS_CSUM` (its checksum
//!   field holds the pseudo-header sum, `__tcp_v4_send_check`); each segment
//!   gets the pseudo-header sum of its own length and stays `NEEDS_CSUM`.
//!
//! Checksums on the way out ([`out_hdr`]): a TCP/UDP packet whose checksum field
//! holds its pseudo-header sum is written `NEEDS_CSUM` (the receiving stack
//! takes `CHECKSUM_PARTIAL` as verified, `skb_csum_unnecessary`); any other
//! packet goes as it came, with flags 0, and is verified by the receiver as
//! before. The emulator never changes a payload, so nothing is lost by not
//! verifying what the sending kernel never summed. A capture (`--pcap`) shows
//! such packets with "incorrect" TCP checksums, as any capture on a host with
//! checksum offload does.
//!
//! On the way out, [`coalesce`] can do what GRO does in a receiving NIC driver
//! (`tcp_gro_receive`, net/ipv4/tcp_offload.c): consecutive due segments of
//! one TCP flow, contiguous in sequence, with identical headers otherwise,
//! full-sized but for the last, flags ACK (PSH on the last), go to the
//! receiving kernel as one GSO write. Only segments already due are merged,
//! so no segment leaves earlier than the link says; the receiver then sees
//! one skb where it would have seen several in a row, and acks it as a GRO
//! receiver does. On by default, off with `BLOATLAB_EMU_COALESCE=0` (ns.rs
//! says why).
//!
//! Constants: [`HDR_LEN`] = 10 bytes (no `num_buffers`: TUNSETVNETHDRSZ left at
//! its default); flags and GSO types as in virtio_net.h.

use crate::packet::{PROTO_TCP, PROTO_UDP};

/// sizeof(struct virtio_net_hdr).
pub const HDR_LEN: usize = 10;
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
/// OR-ed into the GSO type when the super-packet carries CWR (TUN_F_TSO_ECN).
pub const GSO_ECN: u8 = 0x80;
/// Offset of the checksum inside the TCP and UDP headers.
const TCP_CSUM: usize = 16;
const UDP_CSUM: usize = 6;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const CWR: u8 = 0x80;

/// struct virtio_net_hdr, host byte order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b: &[u8; HDR_LEN] = b.get(..HDR_LEN)?.try_into().ok()?;
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Some(VnetHdr { flags: b[0], gso_type: b[1], hdr_len: u(2), gso_size: u(4), csum_start: u(6), csum_offset: u(8) })
    }
    pub fn bytes(&self) -> [u8; HDR_LEN] {
        let mut o = [0u8; HDR_LEN];
        o[0] = self.flags;
        o[1] = self.gso_type;
        o[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        o[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        o[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        o[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        o
    }
}

/// The ones'-complement sum of the IPv4 pseudo-header (RFC 9293 §3.1), folded
/// to 16 bits, not complemented: what Linux stores in a `CHECKSUM_PARTIAL`
/// TCP/UDP header (`~csum_tcpudp_magic(saddr, daddr, len, proto, 0)`).
pub fn pseudo_sum(ip: &[u8], proto: u8, l4_len: usize) -> u16 {
    use bloatlab_schema::wire::{fold_sum, pseudo_header_sum};
    fold_sum(pseudo_header_sum(&ip[12..16], &ip[16..20], proto, l4_len))
}

fn ihl_of(p: &[u8]) -> Option<usize> {
    let ihl = ((*p.first()? & 0x0f) as usize) * 4;
    (p.len() >= 20 && p[0] >> 4 == 4 && ihl >= 20 && p.len() >= ihl).then_some(ihl)
}

fn set_ip_len_and_checksum(seg: &mut [u8], ihl: usize) {
    let total = seg.len() as u16;
    seg[2..4].copy_from_slice(&total.to_be_bytes());
    let c = crate::packet::ipv4_checksum(&seg[..ihl]);
    seg[10..12].copy_from_slice(&c.to_be_bytes());
}

/// Cuts super-packets into wire segments (keeps one scratch buffer).
#[derive(Default)]
pub struct Segmenter {
    seg: Vec<u8>,
    /// Super-packets cut, and the segments they gave (for the run's record).
    pub super_pkts: u64,
    pub segments: u64,
}

impl Segmenter {
    /// `frame` = virtio-net header + IP packet, as read from a TUN with
    /// IFF_VNET_HDR. Calls `out` with each wire packet: the packet itself
    /// unless it is a TCPv4 GSO super-packet, which gives its segments in order.
    /// A malformed frame (shorter than its header, an unknown GSO type, a
    /// gso_size of 0) is handed on whole, as the kernel sent it.
    pub fn each(&mut self, frame: &[u8], mut out: impl FnMut(&[u8])) {
        let Some(h) = VnetHdr::parse(frame) else { return };
        let p = &frame[HDR_LEN..];
        let gso = h.gso_type & !GSO_ECN;
        let mss = h.gso_size as usize;
        let (Some(ihl), true, true) = (ihl_of(p), gso == GSO_TCPV4, mss > 0) else {
            out(p);
            return;
        };
        if p[9] != PROTO_TCP || p.len() < ihl + 20 {
            out(p);
            return;
        }
        let thl = ((p[ihl + 12] >> 4) as usize) * 4;
        let hlen = ihl + thl;
        if thl < 20 || p.len() < hlen {
            out(p);
            return;
        }
        let payload = &p[hlen..];
        if payload.len() <= mss {
            out(p);
            return;
        }
        let id0 = u16::from_be_bytes([p[4], p[5]]);
        let seq0 = u32::from_be_bytes(p[ihl + 4..ihl + 8].try_into().unwrap());
        let flags0 = p[ihl + 13];
        let partial = h.flags & F_NEEDS_CSUM != 0;
        let n = payload.len().div_ceil(mss);
        self.super_pkts += 1;
        self.segments += n as u64;
        for (i, chunk) in payload.chunks(mss).enumerate() {
            let seg = &mut self.seg;
            seg.clear();
            seg.extend_from_slice(&p[..hlen]);
            seg.extend_from_slice(chunk);
            seg[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
            set_ip_len_and_checksum(seg, ihl);
            let t = ihl;
            seg[t + 4..t + 8].copy_from_slice(&seq0.wrapping_add((i * mss) as u32).to_be_bytes());
            let mut fl = flags0;
            if i + 1 < n {
                fl &= !(FIN | PSH);
            }
            if i > 0 {
                fl &= !CWR;
            }
            seg[t + 13] = fl;
            if partial {
                let ps = pseudo_sum(seg, PROTO_TCP, thl + chunk.len());
                seg[t + TCP_CSUM..t + TCP_CSUM + 2].copy_from_slice(&ps.to_be_bytes());
            }
            out(seg);
        }
    }
}

/// The virtio-net header to write `p` with (see the module doc): `NEEDS_CSUM`
/// for a TCP/UDP packet whose checksum field holds its pseudo-header sum,
/// nothing for any other.
pub fn out_hdr(p: &[u8]) -> VnetHdr {
    let Some(ihl) = ihl_of(p) else { return VnetHdr::default() };
    let (proto, off) = match p[9] {
        PROTO_TCP => (PROTO_TCP, TCP_CSUM),
        PROTO_UDP => (PROTO_UDP, UDP_CSUM),
        _ => return VnetHdr::default(),
    };
    // a fragment's transport header is not where it seems
    let frag = u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0;
    if frag || p.len() < ihl + off + 2 {
        return VnetHdr::default();
    }
    let field = u16::from_be_bytes([p[ihl + off], p[ihl + off + 1]]);
    if field != pseudo_sum(p, proto, p.len() - ihl) {
        return VnetHdr::default();
    }
    VnetHdr { flags: F_NEEDS_CSUM, csum_start: ihl as u16, csum_offset: off as u16, ..Default::default() }
}

/// The largest IP packet (its 16-bit total length).
const MAX_IP: usize = 65535;

/// Header bytes two segments of one GSO run must share: everything but the
/// IP total length, id and checksum, and the TCP sequence number, flags and
/// checksum (tcp_gro_receive compares the rest, options included).
fn same_headers(a: &[u8], b: &[u8], hlen: usize, ihl: usize) -> bool {
    let skip = |i: usize| (2..6).contains(&i) || (10..12).contains(&i) || (ihl + 4..ihl + 8).contains(&i)
        || i == ihl + 13 || (ihl + 16..ihl + 18).contains(&i);
    a.len() >= hlen && b.len() >= hlen && (0..hlen).all(|i| skip(i) || a[i] == b[i])
}

/// TCP header facts of a packet that may join a GSO run: (ihl, header length, seq, payload, flags).
fn tcp_facts(p: &[u8]) -> Option<(usize, usize, u32, usize, u8)> {
    let ihl = ihl_of(p)?;
    if p[9] != PROTO_TCP || p.len() < ihl + 20 || u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0 {
        return None;
    }
    let hlen = ihl + ((p[ihl + 12] >> 4) as usize) * 4;
    let total = u16::from_be_bytes([p[2], p[3]]) as usize;
    if hlen < ihl + 20 || p.len() < hlen || total != p.len() {
        return None;
    }
    let seq = u32::from_be_bytes(p[ihl + 4..ihl + 8].try_into().unwrap());
    Some((ihl, hlen, seq, p.len() - hlen, p[ihl + 13]))
}

const ACK: u8 = 0x10;

/// How many packets from the start of `pkts` form one GSO run (1 = write it alone).
pub fn run_length(pkts: &[&[u8]]) -> usize {
    let Some(&first) = pkts.first() else { return 0 };
    let Some((ihl, hlen, mut seq, mss, fl)) = tcp_facts(first) else { return 1 };
    if mss == 0 || fl & !PSH != ACK {
        return 1;
    }
    let mut n = 1;
    let mut size = first.len();
    let mut last_len = mss;
    let mut last_flags = fl;
    for &p in &pkts[1..] {
        // the previous one must be full-sized and without PSH to be followed
        if last_len != mss || last_flags != ACK {
            break;
        }
        let Some((ihl2, hlen2, seq2, len2, fl2)) = tcp_facts(p) else { break };
        if ihl2 != ihl || hlen2 != hlen || seq2 != seq.wrapping_add(mss as u32) || len2 == 0 || len2 > mss
            || fl2 & !PSH != ACK || size + len2 > MAX_IP || !same_headers(first, p, hlen, ihl)
        {
            break;
        }
        seq = seq2;
        size += len2;
        last_len = len2;
        last_flags = fl2;
        n += 1;
    }
    n
}

/// One GSO super-packet from a run found by [`run_length`] (n >= 2): the first
/// segment's headers, all payloads, PSH if the last had it; written with the
/// returned virtio-net header (TCPV4, gso_size = the first's payload, partial
/// checksum), as tun_get_user expects it.
pub fn coalesce(run: &[&[u8]], out: &mut Vec<u8>) -> VnetHdr {
    let first = run[0];
    let (ihl, hlen, _, mss, _) = tcp_facts(first).expect("a run from run_length");
    out.clear();
    out.extend_from_slice(&first[..hlen]);
    for p in run {
        out.extend_from_slice(&p[hlen..]);
    }
    set_ip_len_and_checksum(out, ihl);
    out[ihl + 13] = ACK | (run[run.len() - 1][ihl + 13] & PSH);
    let ps = pseudo_sum(out, PROTO_TCP, out.len() - ihl);
    out[ihl + TCP_CSUM..ihl + TCP_CSUM + 2].copy_from_slice(&ps.to_be_bytes());
    VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_TCPV4, hdr_len: hlen as u16, gso_size: mss as u16, csum_start: ihl as u16,
        csum_offset: TCP_CSUM as u16 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{ipv4_checksum, parse, tests::tcp};

    /// A TCP super-packet as the kernel hands it over: 3 000 payload bytes,
    /// gso_size 1 448, PSH|FIN|ACK|CWR, IP id 7, seq 1 000, partial checksum.
    fn super_packet() -> Vec<u8> {
        let mut p = tcp([10, 0, 0, 1], [10, 0, 0, 2], 5201, 40001, FIN | PSH | 0x10 | CWR, 3000, 0x02);
        p[4..6].copy_from_slice(&7u16.to_be_bytes());
        p[24..28].copy_from_slice(&1000u32.to_be_bytes());
        let c = ipv4_checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        let ps = pseudo_sum(&p, PROTO_TCP, p.len() - 20);
        p[36..38].copy_from_slice(&ps.to_be_bytes());
        for (i, b) in p[40..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let h = VnetHdr { flags: F_NEEDS_CSUM, gso_type: GSO_TCPV4 | GSO_ECN, hdr_len: 40, gso_size: 1448, csum_start: 20, csum_offset: 16 };
        let mut f = h.bytes().to_vec();
        f.extend_from_slice(&p);
        f
    }

    #[test]
    fn a_super_packet_is_cut_into_the_segments_the_kernel_would_send() {
        let f = super_packet();
        let mut segs: Vec<Vec<u8>> = Vec::new();
        let mut s = Segmenter::default();
        s.each(&f, |seg| segs.push(seg.to_vec()));
        assert_eq!((s.super_pkts, s.segments), (1, 3));
        // 1448 + 1448 + 104 payload bytes
        let lens: Vec<usize> = segs.iter().map(|x| x.len()).collect();
        assert_eq!(lens, vec![1488, 1488, 144]);
        for (i, x) in segs.iter().enumerate() {
            assert_eq!(u16::from_be_bytes([x[2], x[3]]) as usize, x.len());
            assert_eq!(u16::from_be_bytes([x[4], x[5]]), 7 + i as u16, "IP id");
            assert_eq!(u16::from_be_bytes([x[10], x[11]]), ipv4_checksum(&x[..20]), "IP checksum");
            assert_eq!(u32::from_be_bytes(x[24..28].try_into().unwrap()), 1000 + 1448 * i as u32, "seq");
            assert_eq!(u16::from_be_bytes([x[36], x[37]]), pseudo_sum(x, PROTO_TCP, x.len() - 20), "partial csum");
            assert_eq!(out_hdr(x), VnetHdr { flags: F_NEEDS_CSUM, csum_start: 20, csum_offset: 16, ..Default::default() });
            // the payload continues where the previous segment stopped
            assert_eq!(x[40], ((1448 * i) % 251) as u8);
            assert_eq!(parse(x).unwrap().len as usize, x.len());
        }
        assert_eq!(segs[0][33], 0x10 | CWR, "first: CWR kept, no FIN/PSH");
        assert_eq!(segs[1][33], 0x10, "middle: ACK only");
        assert_eq!(segs[2][33], FIN | PSH | 0x10, "last: FIN and PSH, no CWR");
    }

    #[test]
    fn a_plain_packet_and_a_short_super_packet_go_whole() {
        let p = tcp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0x10, 100, 0);
        let mut f = VnetHdr::default().bytes().to_vec();
        f.extend_from_slice(&p);
        let mut got = Vec::new();
        let mut s = Segmenter::default();
        s.each(&f, |x| got.push(x.to_vec()));
        assert_eq!(got, vec![p.clone()]);
        // GSO-tagged but no longer than one segment: as it is
        let mut f = VnetHdr { gso_type: GSO_TCPV4, gso_size: 1448, ..Default::default() }.bytes().to_vec();
        f.extend_from_slice(&p);
        got.clear();
        s.each(&f, |x| got.push(x.to_vec()));
        assert_eq!(got, vec![p]);
        assert_eq!(s.super_pkts, 0);
    }

    #[test]
    fn malformed_frames_are_handed_on_whole_or_dropped_never_a_panic() {
        let mut s = Segmenter::default();
        let mut n = 0;
        s.each(&[1, 2, 3], |_| n += 1); // shorter than the header: nothing
        assert_eq!(n, 0);
        for gso_size in [0u16, 1, 7] {
            for cut in [HDR_LEN, HDR_LEN + 5, HDR_LEN + 30, HDR_LEN + 45] {
                let mut f = super_packet();
                f[4..6].copy_from_slice(&gso_size.to_ne_bytes());
                f.truncate(cut);
                s.each(&f, |x| assert!(x.len() <= 3040));
            }
        }
        let mut f = super_packet();
        f[HDR_LEN + 20 + 12] = 0xf0; // a 60-byte TCP header ...
        f.truncate(HDR_LEN + 70); // ... longer than the packet
        let mut whole = 0;
        s.each(&f, |x| whole += x.len());
        assert_eq!(whole, f.len() - HDR_LEN);
    }

    #[test]
    fn due_segments_of_one_flow_coalesce_back_into_the_super_packet_they_came_from() {
        let f = super_packet();
        let mut segs: Vec<Vec<u8>> = Vec::new();
        Segmenter::default().each(&f, |seg| segs.push(seg.to_vec()));
        // the first has CWR and the last FIN: each goes alone (both flush GRO) ...
        assert_eq!(run_length(&[&segs[1], &segs[2]]), 1);
        // ... without the FIN, the last two merge
        segs[2][33] = PSH | 0x10;
        let refs: Vec<&[u8]> = segs.iter().map(|v| v.as_slice()).collect();
        assert_eq!(run_length(&refs), 1);
        assert_eq!(run_length(&refs[1..]), 2);
        let mut out = Vec::new();
        let h = coalesce(&refs[1..], &mut out);
        assert_eq!((h.gso_type, h.gso_size, h.hdr_len, h.flags), (GSO_TCPV4, 1448, 40, F_NEEDS_CSUM));
        assert_eq!(out.len(), 40 + 1448 + 104);
        assert_eq!(out[33], PSH | 0x10, "the last one's PSH is kept");
        // cutting it again gives the very segments back
        let mut again: Vec<Vec<u8>> = Vec::new();
        let mut fr = h.bytes().to_vec();
        fr.extend_from_slice(&out);
        Segmenter::default().each(&fr, |seg| again.push(seg.to_vec()));
        assert_eq!(again.len(), 2);
        assert_eq!(again, segs[1..].to_vec());
    }

    #[test]
    fn a_gap_another_flow_a_short_segment_or_other_options_end_a_run() {
        let seg = |seq: u32, len: usize, sport: u16, ts: u8| {
            let mut p = tcp([10, 0, 0, 1], [10, 0, 0, 2], sport, 40001, 0x10, len, 0);
            p[24..28].copy_from_slice(&seq.to_be_bytes());
            p[38] = ts; // urgent pointer stands in for an option byte that differs
            p
        };
        let a = seg(0, 1448, 5201, 0);
        let run = |v: &[Vec<u8>]| run_length(&v.iter().map(|x| x.as_slice()).collect::<Vec<_>>());
        assert_eq!(run(&[a.clone(), seg(1448, 1448, 5201, 0), seg(2896, 500, 5201, 0)]), 3);
        assert_eq!(run(&[a.clone(), seg(2896, 1448, 5201, 0)]), 1, "a gap in sequence");
        assert_eq!(run(&[a.clone(), seg(1448, 1448, 5202, 0)]), 1, "another flow");
        assert_eq!(run(&[a.clone(), seg(1448, 1448, 5201, 9)]), 1, "other header bytes");
        assert_eq!(run(&[seg(0, 500, 5201, 0), seg(500, 500, 5201, 0)]), 2, "equal short segments");
        assert_eq!(run(&[seg(0, 500, 5201, 0), seg(500, 400, 5201, 0), seg(900, 400, 5201, 0)]), 2, "only the last may be short");
        assert_eq!(run(&[tcp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0x10, 0, 0), a.clone()]), 1, "a pure ack");
        // at most 65 535 bytes
        let many: Vec<Vec<u8>> = (0..60).map(|i| seg(1448 * i, 1448, 5201, 0)).collect();
        assert_eq!(run(&many), (65535 - 40) / 1448);
    }

    #[test]
    fn a_fully_checksummed_packet_goes_out_without_flags() {
        let mut p = tcp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0x10, 100, 0);
        p[36..38].copy_from_slice(&0x1234u16.to_be_bytes());
        assert_eq!(out_hdr(&p), VnetHdr::default());
        let udp = {
            let mut u = p[..28].to_vec();
            u[9] = PROTO_UDP;
            let ps = pseudo_sum(&u, PROTO_UDP, 8);
            u[26..28].copy_from_slice(&ps.to_be_bytes());
            u
        };
        assert_eq!(out_hdr(&udp).csum_offset, 6);
        assert_eq!(out_hdr(&[0x45]), VnetHdr::default());
    }
}
