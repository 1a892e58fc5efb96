//! What travels through the simulated network. Sequence numbers count
//! segments (packet indices), not bytes: every segment but a finite flow's
//! last carries one MSS.

/// Bytes of IPv4 + TCP headers with the timestamp option, as Linux sends them
/// (20 + 20 + 12): a 1448-byte MSS segment is a 1500-byte packet.
pub const TCP_HDR: u32 = 52;
/// IPv4 + UDP headers.
pub const UDP_HDR: u32 = (bloatlab_schema::wire::IPV4_HDR + bloatlab_schema::wire::UDP_HDR) as u32;
/// Linux's default MSS on a 1500-byte MTU path with timestamps.
pub const MSS: u32 = 1448;
/// SACK blocks that fit beside the timestamp option (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SackBlock {
    /// First segment of the block.
    pub start: u64,
    /// One past the last segment.
    pub end: u64,
}

#[derive(Debug, Clone, Copy)]
pub enum Payload {
    /// A TCP data segment of `flow` (sender → receiver); `tsval`: its
    /// timestamp (ms, the sender's TCP clock); `tsecr`: the TSval (ms) it
    /// echoes, None before the sender has seen an ACK; `psh`: the PSH flag
    /// (`tcp/output.rs`, `Tx::psh`).
    Data { flow: u32, seq: u64, len: u32, ect: bool, ce: bool, cwr: bool, psh: bool, tsval: u32, tsecr: Option<u32> },
    /// A TCP ACK of `flow` (receiver → sender): cumulative `ack` (next
    /// expected segment) and SACK blocks, the first one a D-SACK if `dsack`;
    /// `wnd` the advertised window (bytes), `tsval` its timestamp (ms),
    /// `tsecr` the TSval (ms) it echoes (the receiver's `ts_recent`; None
    /// before any data arrived).
    Ack { flow: u32, ack: u64, sack: [SackBlock; MAX_SACK_BLOCKS], nsack: u8, dsack: bool, ece: bool, wnd: u32, tsval: u32, tsecr: Option<u32> },
    /// A UDP echo request of probe `probe` (client → echo server).
    /// A segment of the handshake or the request (tcp/handshake.rs).
    Ctl { flow: u32, seg: crate::tcp::handshake::CtlSeg },
    ProbeReq { probe: u32, seq: u32, sent: u64, size: u32 },
    /// Its reply.
    ProbeReply { probe: u32, seq: u32, sent: u64 },
    /// Packet `seq` of train `train` (sender → receiver, one way; its send time is the train's record).
    Train { train: u32, seq: u32 },
}

impl Payload {
    /// Bytes on the wire (IP packet).
    pub fn wire_len(&self) -> u32 {
        match self {
            Payload::Data { len, .. } => len + TCP_HDR,
            Payload::Ack { nsack, .. } => {
                // SACK option: kind + length (2 B) + 8 B per block, padded to 4 B.
                let opt = if *nsack > 0 { (2 + 8 * *nsack as u32 + 3) & !3 } else { 0 };
                TCP_HDR + opt
            }
            Payload::Ctl { seg, .. } => {
                use crate::tcp::handshake::{Ctl, REQUEST_BYTES, SYN_WIRE};
                match seg.kind {
                    Ctl::Syn | Ctl::SynAck => SYN_WIRE,
                    Ctl::Ack | Ctl::ReqAck => TCP_HDR,
                    Ctl::Request => TCP_HDR + REQUEST_BYTES,
                }
            }
            Payload::ProbeReq { size, .. } => size + UDP_HDR,
            Payload::ProbeReply { .. } => unreachable!("use the request size"),
            Payload::Train { .. } => unreachable!("use the train's size"),
        }
    }
}
