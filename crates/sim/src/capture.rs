//! Packet captures (`--pcap DIR`): `DIR/down.pcap` and `DIR/up.pcap`, the
//! emulator's files for the same scenario, written by the same writer
//! (`bloatlab_schema::pcap`) with headers built from the model's state.
//!
//! Where: every packet as it enters its direction's path (the world's
//! `emit`), before random loss, the policer and the qdisc, so dropped packets
//! are in the file: the point where the emulator captures what it reads from
//! its TUN device. A direction without a bottleneck, and a WiFi medium, are
//! entered at the same point.
//!
//! What each record holds (headers only; the original length is the
//! packet's wire length):
//! - IPv4: total length, DSCP of the flow or probe, ECN (ECT(0) on data of
//!   an ECN flow, CE if already marked), DF, TTL 64, an id counting up per
//!   connection end, a valid checksum; the emulator's addresses
//!   (`bloatlab_schema::wire`: client 10.77.0.1, server 10.77.0.2);
//! - TCP: flow i's ports (client 25000 + i, server 20000 + i); sequence
//!   numbers from an ISN per connection end (drawn from the scenario seed)
//!   plus the model's segment index × MSS (a sized flow's last segment
//!   shorter), the client's 16-byte request before a download's data;
//!   flags SYN, SYN-ACK (ECE|CWR and ECE with ECN), ACK, PSH on the request
//!   and on data as the model sets it (`tcp/output.rs`, `Tx::psh`), ECE and
//!   CWR as the model sets them; the window field the model
//!   advertises (`rcvwin.rs`, scale 12; the data sender, which receives no
//!   data, keeps the window it offered first; the SYN offers 64 240 and the
//!   SYN-ACK 65 160 bytes, as Linux quantizes them); options: MSS 1460,
//!   SACK-permitted and window scale on SYNs, timestamps (TSval and TSecr
//!   from the model's TCP clock, `core::kernel::tcp_clock_ms`) on every
//!   segment, the ACK's SACK/D-SACK blocks in bytes; a checksum valid for a
//!   zero payload;
//! - UDP: probe j's datagrams between its echo server's port 30000 + j and
//!   the sender's 40000 + j (the emulator's sender takes an ephemeral port).
//!
//! Not in the model, so not in the file: FIN and RST (a connection never
//! closes), the first
//! data's echo of the handshake (TSecr 0 until the sender has seen an ACK),
//! the probe's payload (the emulator's files do not keep it either).
//!
//! Writes are buffered (1 MiB per file); the first write error stops the
//! capture and fails the run when it ends.

use crate::packet::{Payload, MSS, TCP_HDR, UDP_HDR};
use crate::scenario::{Direction, Flow, Probe};
use crate::tcp::handshake::{Ctl, REQUEST_BYTES};
use crate::tcp::rcvwin::RcvWindow;
use bloatlab_core::kernel::tcp_clock_ms;
use bloatlab_core::rng::{self, RngExt};
use bloatlab_core::time::Nanos;
use bloatlab_schema::pcap::Pcap;
use bloatlab_schema::wire::{self, Ipv4, Tcp};
use std::path::Path;

/// The MSS a SYN announces: Linux's advmss on a 1500-byte MTU (1448 with
/// the timestamp option's 12 bytes subtracted per segment).
const SYN_MSS: u16 = 1460;
/// RNG stream of the ISNs (mixed with the scenario seed, flow id and end).
const ISN_STREAM: u64 = 0x4953_4e00_0000; // "ISN"

/// Client (0) and server (1) end of a connection.
const CLIENT: usize = 0;
const SERVER: usize = 1;

/// What a connection's headers need beyond the packet.
struct Conn {
    cport: u16,
    sport: u16,
    upload: bool,
    size: Option<u64>,
    ecn: bool,
    isn: [u32; 2],
    ip_id: [u16; 2],
    /// The window of the SYN and of the SYN-ACK (unscaled), bytes.
    syn_window: [u16; 2],
    /// The window field after the handshake of an end that has received nothing.
    idle_window: u16,
    wscale: u8,
}

impl Conn {
    /// The data sender's ISN + 1: where the data's byte sequence starts.
    fn data_base(&self) -> u32 {
        self.isn[if self.upload { CLIENT } else { SERVER }].wrapping_add(1)
    }

    /// Bytes up to segment `seg` of the data (a sized flow's stop at its size).
    fn data_bytes(&self, seg: u64) -> u32 {
        let b = seg * MSS as u64;
        self.size.map_or(b, |s| b.min(s)) as u32
    }

    /// The receiver's own sequence number (after the request of a download).
    fn receiver_seq(&self) -> u32 {
        if self.upload {
            self.isn[SERVER].wrapping_add(1)
        } else {
            self.isn[CLIENT].wrapping_add(1 + REQUEST_BYTES)
        }
    }
}

/// Probe j's ends: the echo server's port and the sender's.
struct ProbeEnds {
    echo_port: u16,
    send_port: u16,
    ip_id: [u16; 2],
}

pub struct Capture {
    files: [Pcap; 2],
    conns: Vec<Conn>,
    probes: Vec<ProbeEnds>,
    buf: Vec<u8>,
    error: Option<String>,
}

impl Capture {
    /// Open `dir/down.pcap` and `dir/up.pcap` for the flows (with their
    /// receivers' windows as they start) and probes of a scenario.
    pub fn create(dir: &Path, seed: u64, flows: &[(&Flow, &RcvWindow, bool)], probes: &[Probe]) -> Result<Capture, String> {
        let open = |name: &str| Pcap::create(&dir.join(name), 0).map_err(|e| format!("--pcap: {e}"));
        let files = [open("down.pcap")?, open("up.pcap")?];
        let conns = flows
            .iter()
            .map(|&(f, win, ecn)| {
                let mut r = rng::stream(seed, ISN_STREAM + f.id as u64);
                let isn = [r.gen::<u32>(), r.gen::<u32>()];
                let ip_id = [r.gen::<u16>(), r.gen::<u16>()];
                let mut fresh = win.clone();
                let (w, _) = fresh.select(0, 1);
                Conn {
                    cport: wire::FLOW_CPORT.wrapping_add(f.id as u16),
                    sport: wire::FLOW_PORT.wrapping_add(f.id as u16),
                    upload: f.direction == Direction::Up,
                    size: f.size_bytes,
                    ecn,
                    isn,
                    ip_id,
                    syn_window: [SYN_MSS as u32, MSS].map(|m| RcvWindow::select_initial_window(m).min(u16::MAX as u32) as u16),
                    idle_window: (w >> win.wscale) as u16,
                    wscale: win.wscale as u8,
                }
            })
            .collect();
        let probes = probes
            .iter()
            .map(|p| ProbeEnds {
                echo_port: wire::PROBE_PORT.wrapping_add(p.id as u16),
                send_port: wire::PROBE_CPORT.wrapping_add(p.id as u16),
                ip_id: [0, 0],
            })
            .collect();
        Ok(Capture { files, conns, probes, buf: Vec::with_capacity(128), error: None })
    }

    /// Record packet `p` of `len` wire bytes entering direction `dir` at
    /// `now`. `dscp`: its flow's or probe's.
    pub fn record(&mut self, now: Nanos, dir: Direction, p: &Payload, len: u32, dscp: u8) {
        if self.error.is_some() {
            return;
        }
        // the packet travels up from the client, down from the server
        let up = dir == Direction::Up;
        let (src, dst) = if up { (wire::CLIENT_ADDR, wire::SERVER_ADDR) } else { (wire::SERVER_ADDR, wire::CLIENT_ADDR) };
        let end = if up { CLIENT } else { SERVER };
        let mut ip = Ipv4 { src, dst, proto: wire::TCP, dscp, ecn: wire::NOT_ECT, id: 0, total_len: len.min(u16::MAX as u32) as u16 };
        let mut sack = [(0u32, 0u32); crate::packet::MAX_SACK_BLOCKS];
        self.buf.clear();
        match *p {
            Payload::ProbeReq { probe, .. } | Payload::ProbeReply { probe, .. } => {
                let pe = &mut self.probes[probe as usize];
                let is_req = matches!(p, Payload::ProbeReq { .. });
                let (sport, dport) = if is_req { (pe.send_port, pe.echo_port) } else { (pe.echo_port, pe.send_port) };
                ip.proto = wire::UDP;
                ip.id = next_id(&mut pe.ip_id[end]);
                ip.write(&mut self.buf);
                wire::write_udp(&ip, sport, dport, &mut self.buf);
                debug_assert_eq!(self.buf.len(), UDP_HDR as usize);
            }
            Payload::Train { train, .. } => {
                // the server's receiver port and the client's (down: to the client; up: from it)
                let (cport, sport) = (wire::TRAIN_CPORT.wrapping_add(train as u16), wire::TRAIN_PORT.wrapping_add(train as u16));
                ip.proto = wire::UDP;
                ip.write(&mut self.buf);
                wire::write_udp(&ip, if up { cport } else { sport }, if up { sport } else { cport }, &mut self.buf);
                debug_assert_eq!(self.buf.len(), UDP_HDR as usize);
            }
            Payload::Data { flow, seq, len: payload, ect, ce, cwr, psh, tsval, tsecr } => {
                let c = &mut self.conns[flow as usize];
                ip.ecn = match (ect, ce) {
                    (_, true) => wire::CE,
                    (true, false) => wire::ECT0,
                    (false, false) => wire::NOT_ECT,
                };
                ip.id = next_id(&mut c.ip_id[end]);
                let flags = wire::ACK | if cwr { wire::CWR } else { 0 } | if psh { wire::PSH } else { 0 };
                let t = Tcp {
                    sport: if up { c.cport } else { c.sport },
                    dport: if up { c.sport } else { c.cport },
                    seq: c.data_base().wrapping_add(c.data_bytes(seq)),
                    ack: c.receiver_seq(),
                    flags,
                    window: c.idle_window,
                    ts: Some((tsval, tsecr.unwrap_or(0))),
                    ..Default::default()
                };
                ip.write(&mut self.buf);
                t.write(&ip, &mut self.buf);
                debug_assert_eq!(self.buf.len() as u32 + payload, len);
            }
            Payload::Ack { flow, ack, sack: blocks, nsack, ece, wnd, tsval, tsecr, .. } => {
                let c = &mut self.conns[flow as usize];
                let base = c.data_base();
                for (o, b) in sack.iter_mut().zip(&blocks[..nsack as usize]) {
                    *o = (base.wrapping_add(c.data_bytes(b.start)), base.wrapping_add(c.data_bytes(b.end)));
                }
                ip.id = next_id(&mut c.ip_id[end]);
                let t = Tcp {
                    sport: if up { c.cport } else { c.sport },
                    dport: if up { c.sport } else { c.cport },
                    seq: c.receiver_seq(),
                    ack: base.wrapping_add(c.data_bytes(ack)),
                    flags: wire::ACK | if ece { wire::ECE } else { 0 },
                    window: (wnd >> c.wscale).min(u16::MAX as u32) as u16,
                    ts: Some((tsval, tsecr.unwrap_or(0))),
                    sack: &sack[..nsack as usize],
                    ..Default::default()
                };
                ip.write(&mut self.buf);
                t.write(&ip, &mut self.buf);
                debug_assert_eq!(self.buf.len() as u32, len);
            }
            Payload::Ctl { flow, seg } => {
                let c = &mut self.conns[flow as usize];
                let (cl, sv) = (c.isn[CLIENT], c.isn[SERVER]);
                let ts = Some((tcp_clock_ms(seg.ts), tcp_clock_ms(seg.echo)));
                let base = Tcp {
                    sport: if up { c.cport } else { c.sport },
                    dport: if up { c.sport } else { c.cport },
                    window: c.idle_window,
                    ts,
                    ..Default::default()
                };
                let syn = Tcp { mss: Some(SYN_MSS), sack_permitted: true, wscale: Some(c.wscale), window: c.syn_window[end], ..base };
                let t = match seg.kind {
                    Ctl::Syn => Tcp { seq: cl, flags: wire::SYN | if c.ecn { wire::ECE | wire::CWR } else { 0 }, ..syn },
                    Ctl::SynAck => Tcp {
                        seq: sv,
                        ack: cl.wrapping_add(1),
                        flags: wire::SYN | wire::ACK | if c.ecn { wire::ECE } else { 0 },
                        ..syn
                    },
                    Ctl::Ack => Tcp { seq: cl.wrapping_add(1), ack: sv.wrapping_add(1), flags: wire::ACK, ..base },
                    Ctl::Request => Tcp { seq: cl.wrapping_add(1), ack: sv.wrapping_add(1), flags: wire::PSH | wire::ACK, ..base },
                    Ctl::ReqAck => {
                        Tcp { seq: sv.wrapping_add(1), ack: cl.wrapping_add(1 + REQUEST_BYTES), flags: wire::ACK, ..base }
                    }
                };
                ip.id = if seg.kind == Ctl::SynAck { 0 } else { next_id(&mut c.ip_id[end]) };
                ip.write(&mut self.buf);
                t.write(&ip, &mut self.buf);
                debug_assert!(self.buf.len() as u32 == len || (seg.kind == Ctl::Request && self.buf.len() as u32 == TCP_HDR));
            }
        }
        if let Err(e) = self.files[dir.index()].headers(now, &self.buf, len) {
            self.error = Some(format!("--pcap: {e}"));
        }
    }

    /// Flush both files; the first error of the run, if any.
    pub fn close(mut self) -> Result<(), String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for f in &mut self.files {
            f.flush().map_err(|e| format!("--pcap: {e}"))?;
        }
        Ok(())
    }
}

/// The IP id an end puts on its next packet (Linux counts up per socket).
fn next_id(id: &mut u16) -> u16 {
    let v = *id;
    *id = id.wrapping_add(1);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::SackBlock;
    use crate::tcp::receiver::Receiver;

    fn be16(b: &[u8], i: usize) -> u16 {
        u16::from_be_bytes([b[i], b[i + 1]])
    }
    fn be32(b: &[u8], i: usize) -> u32 {
        u32::from_be_bytes(b[i..i + 4].try_into().unwrap())
    }

    /// The records of a capture file: (time ns, captured bytes, original length).
    fn records(path: &Path) -> Vec<(u64, Vec<u8>, u32)> {
        let b = std::fs::read(path).unwrap();
        let (mut i, mut out) = (24, Vec::new());
        while i < b.len() {
            let le = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap());
            let (t, cap, orig) = (le(i) as u64 * 1_000_000_000 + le(i + 4) as u64, le(i + 8) as usize, le(i + 12));
            out.push((t, b[i + 16..i + 16 + cap].to_vec(), orig));
            i += 16 + cap;
        }
        out
    }

    #[test]
    fn a_sized_downloads_segments_and_acks_carry_byte_sequence_numbers_its_sack_blocks_and_window() {
        let dir = std::env::temp_dir().join(format!("bloatlab-sim-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 3000 bytes: segments 0 and 1 carry 1448 B, segment 2 the last 104 B
        let flow: Flow = serde_json::from_str(
            r#"{"id":1,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":40000000,
                "start_ns":0,"stop_ns":null,"size_bytes":3000,"dscp":46}"#,
        )
        .unwrap();
        let rcv = Receiver::new(flow.rtt_ns);
        let mut c = Capture::create(&dir, 7, &[(&flow, &rcv.win, true)], &[]).unwrap();
        let isn = c.conns[0].isn;
        let data = Payload::Data { flow: 0, seq: 2, len: 104, ect: true, ce: false, cwr: true, psh: false, tsval: 500, tsecr: Some(480) };
        c.record(2_000_000, Direction::Down, &data, 104 + TCP_HDR, 46);
        let mut sack = [SackBlock::default(); crate::packet::MAX_SACK_BLOCKS];
        sack[0] = SackBlock { start: 2, end: 3 };
        let ack = Payload::Ack { flow: 0, ack: 1, sack, nsack: 1, dsack: false, ece: true, wnd: 3 << 12, tsval: 520, tsecr: Some(500) };
        c.record(3_000_000, Direction::Up, &ack, TCP_HDR + 12, 46);
        c.close().unwrap();
        let down = records(&dir.join("down.pcap"));
        let up = records(&dir.join("up.pcap"));
        std::fs::remove_dir_all(&dir).unwrap();

        let (t, d, orig) = &down[0];
        assert_eq!((*t, d.len(), *orig), (2_000_000, 52, 156));
        assert_eq!(d[1], (46 << 2) | 2, "EF and ECT(0)");
        assert_eq!((be16(d, 2), d[8], d[9]), (156, 64, 6));
        assert_eq!((&d[12..16], &d[16..20]), (&[10, 77, 0, 2][..], &[10, 77, 0, 1][..]));
        assert_eq!((be16(d, 20), be16(d, 22)), (20001, 25001));
        assert_eq!(be32(d, 24), isn[SERVER].wrapping_add(1 + 2896));
        assert_eq!(be32(d, 28), isn[CLIENT].wrapping_add(1 + 16), "after the client's request");
        assert_eq!((d[32] >> 4, d[33]), (8, 0x90), "CWR|ACK");
        assert_eq!(&d[40..44], &[1, 1, 8, 10]);
        assert_eq!((be32(d, 44), be32(d, 48)), (500, 480));

        let (t, a, orig) = &up[0];
        assert_eq!((*t, a.len(), *orig), (3_000_000, 64, 64));
        assert_eq!(a[1], 46 << 2, "an ACK is not ECT");
        assert_eq!((be16(a, 20), be16(a, 22)), (25001, 20001));
        assert_eq!(be32(a, 24), isn[CLIENT].wrapping_add(17));
        assert_eq!(be32(a, 28), isn[SERVER].wrapping_add(1 + 1448));
        assert_eq!((a[32] >> 4, a[33], be16(a, 34)), (11, 0x50, 3), "ECE|ACK, window 3 << 12");
        assert_eq!((be32(a, 44), be32(a, 48)), (520, 500), "TSval, and TSecr = ts_recent");
        assert_eq!(&a[52..56], &[1, 1, 5, 10]);
        // the block ends at the size, not at 3 x 1448
        assert_eq!((be32(a, 56), be32(a, 60)), (isn[SERVER].wrapping_add(1 + 2896), isn[SERVER].wrapping_add(1 + 3000)));
    }
}
