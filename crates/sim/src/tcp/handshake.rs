//! The connection handshake and the application's request: what a user
//! waits for before the first data segment leaves.
//!
//! Sources (Linux v6.x): `tcp_output.c` `tcp_connect` (the SYN);
//! `tcp_timer.c` `tcp_retransmit_timer` for SYN_SENT and `tcp_write_timeout`
//! (SYN retransmissions after `TCP_TIMEOUT_INIT`, linear for the first
//! `tcp_syn_linear_timeouts` timeouts, then doubling (Linux ≥ 6.5, ccce324dabfe
//! "tcp: make the first N SYN RTO backoffs linear"); `tcp_syn_retries` more
//! than those);
//! `tcp_minisocks.c` `tcp_check_req` (a repeated SYN is answered with the
//! SYN-ACK again) and `tcp_create_openreq_child` (the server's
//! `total_retrans` = SYN-ACK retransmissions, `undo_marker` set only when the
//! SYN-ACK timer fired); `inet_connection_sock.c` `reqsk_timer_handler`
//! (SYN-ACK retransmissions after `TCP_TIMEOUT_INIT << num_timeout`,
//! `tcp_synack_retries`); `tcp_input.c` `tcp_rcv_synsent_state_process` (the
//! client ACKs the SYN-ACK at once), `tcp_clean_rtt_queue` /
//! `tcp_ack_update_rtt` (the client's first RTT sample: exact when the SYN
//! was sent once, else from the timestamp echo at 1 ms granularity),
//! `tcp_synack_rtt_meas` (the server's first sample, likewise),
//! `tcp_event_data_recv` / `__tcp_ack_snd_check` (the request, the server's
//! first data, enters quick-ACK mode and is acked at once),
//! `tcp_init_transfer` (initial cwnd 1 after more than one SYN or SYN-ACK
//! retransmission, RFC 6298 §5.7 / RFC 5681) and `tcp_metrics.c`
//! `tcp_init_metrics` (ssthresh back to infinity after the handshake).
//!
//! Model in a nutshell: the client (the host on the `client` side of the
//! bottleneck) sends a SYN; the server answers with a SYN-ACK; the client
//! ACKs it at once and then either sends data (an upload: its sender starts)
//! or its request (a download: the server acks the request at once, its
//! first data segment in quick-ACK mode, and its sender starts; the pure ACK
//! leaves first, as the kernel's does before its application has answered).
//! Every one of these packets crosses the links and their queues and can be
//! lost like data; lost SYNs cost whole initial RTOs (1, 1, 1, 1, 1, 2,
//! 4 ... s), lost SYN-ACKs the server's (1, 2, 4 ... s), a lost request costs the client's RTO, which the
//! handshake's RTT sample has already set (RTT + max(2·RTT, 200 ms)).
//! Timestamps are on (the Linux default), so every SYN-ACK and ACK echoes the
//! sender's clock and an RTT sample exists even after retransmissions.
//!
//! States: client SYN_SENT → ESTABLISHED (request outstanding → acked);
//! server LISTEN → SYN_RECV → ESTABLISHED (→ request received: data flows).
//! A client that has sent `1 + SYN_RETRIES + SYN_LINEAR_TIMEOUTS` SYNs (the
//! last at 67 s) gives up one backed-off RTO later (after 131 s); a server whose SYN-ACK timer fired `SYNACK_RETRIES`
//! times forgets the connection; both leave the flow without data.
//!
//! Not modelled: TCP Fast Open, SYN cookies, the listen backlog, the request
//! giving up after `tcp_retries2`.

use super::rtt::RttEstimator;
use bloatlab_core::kernel::{nsecs_span_to_jiffies, timer_fire};
use bloatlab_core::time::{Nanos, NS_PER_MS, NS_PER_US};

/// When a timer armed at `now` for `span` (whole jiffies: `TCP_TIMEOUT_INIT`
/// shifted, or the RTO) fires: the SYN's (`icsk_retransmit_timer`), the
/// request's (the same) and the SYN-ACK's (`rsk_timer`, `mod_timer` in
/// `reqsk_queue_hash_req` / `reqsk_timer_handler`) are `timer_list` timers
/// on the timer wheel (`bloatlab_core::kernel::timer_fire`).
fn on_wheel(now: Nanos, span: Nanos) -> Nanos {
    timer_fire(now, nsecs_span_to_jiffies(span))
}

/// `TCP_TIMEOUT_INIT`: the initial RTO of SYNs and SYN-ACKs, 1 s (RFC 6298 §2.1).
pub const TIMEOUT_INIT: Nanos = super::rtt::TIMEOUT_INIT;
/// `sysctl_tcp_syn_retries` default: SYN retransmissions before connect() fails
/// (`tcp_write_timeout` adds `SYN_LINEAR_TIMEOUTS` in SYN_SENT).
pub const SYN_RETRIES: u32 = 6;
/// `sysctl_tcp_syn_linear_timeouts` default (`tcp_sk_init`): SYN timeouts
/// that keep the initial RTO before it doubles (macOS's and iOS's schedule,
/// the commit's reason).
pub const SYN_LINEAR_TIMEOUTS: u32 = 4;
/// `sysctl_tcp_synack_retries` default: SYN-ACK timer expiries before the server drops the request.
pub const SYNACK_RETRIES: u32 = 5;
/// Wire bytes of a SYN or SYN-ACK: IPv4 20 + TCP 20 + options 20 (MSS 4,
/// SACK-permitted 2, timestamps 10, window scale 3, one NOP).
pub const SYN_WIRE: u32 = 60;
/// Bytes of the client's request before a download: the probe's data hello
/// (4-byte magic + 8-byte cookie + 4-byte stream index, crates/probe/src/tcp.rs),
/// so that both engines send the same request.
pub const REQUEST_BYTES: u32 = 16;

/// A control segment of the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctl {
    /// client → server
    Syn,
    /// server → client
    SynAck,
    /// client → server: the ACK of the SYN-ACK (pure ACK).
    Ack,
    /// client → server: the application's request (a data segment).
    Request,
    /// server → client: the immediate ACK of the request (and of a repeated one).
    ReqAck,
}

impl Ctl {
    pub fn from_client(self) -> bool {
        matches!(self, Ctl::Syn | Ctl::Ack | Ctl::Request)
    }
}

/// One control segment to put on the wire: its kind, its TSval (send time)
/// and its TSecr (the peer's TSval it echoes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtlSeg {
    pub kind: Ctl,
    pub ts: Nanos,
    pub echo: Nanos,
}

/// The data sender may start: its first RTT sample and how many times its
/// side of the handshake was retransmitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    pub rtt: Nanos,
    /// Linux `tcp_init_transfer`: initial cwnd 1 instead of 10.
    pub cwnd_one: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Handshake {
    /// Data go from client to server (an upload).
    upload: bool,
    /// When the first SYN left: completion times count from here.
    pub first_syn: Option<Nanos>,
    syns: u32,
    client_est: bool,
    client_rtt: RttEstimator,
    requests: u32,
    request_acked: bool,
    /// TSval of the latest SYN the server saw (its SYN-ACKs echo it).
    syn_ts: Nanos,
    synacks: u32,
    synack_first: Nanos,
    synack_last: Nanos,
    synack_timeouts: u32,
    server_est: bool,
    server_rtt: Nanos,
    server_cwnd_one: bool,
    requested: bool,
    /// The client's timer (SYN, then request retransmission).
    pub client_timer: Option<Nanos>,
    /// The server's SYN-ACK timer.
    pub server_timer: Option<Nanos>,
    /// The connection could not be established.
    pub failed: bool,
}

/// A sample from a timestamp echo: Linux's TS clock ticks in ms.
fn ts_sample(now: Nanos, echo: Nanos) -> Nanos {
    ((now / NS_PER_MS).saturating_sub(echo / NS_PER_MS) * NS_PER_MS).max(NS_PER_US)
}

impl Handshake {
    pub fn new(upload: bool) -> Handshake {
        Handshake { upload, ..Default::default() }
    }

    /// The earliest pending timer of either side.
    pub fn timer(&self) -> Option<Nanos> {
        match (self.client_timer, self.server_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The client calls connect().
    pub fn connect(&mut self, now: Nanos, out: &mut Vec<CtlSeg>) {
        self.first_syn = Some(now);
        self.syns = 1;
        out.push(CtlSeg { kind: Ctl::Syn, ts: now, echo: 0 });
        self.client_timer = Some(on_wheel(now, TIMEOUT_INIT));
    }

    /// A control segment arrives at its destination.
    pub fn on_ctl(&mut self, now: Nanos, seg: CtlSeg, out: &mut Vec<CtlSeg>) -> Option<Start> {
        match seg.kind {
            Ctl::Syn => {
                if self.server_est || self.failed {
                    return None;
                }
                // first SYN: a request sock; a repeated one: the SYN-ACK again, timer refreshed
                self.syn_ts = seg.ts;
                if self.synacks == 0 {
                    self.synack_first = now;
                }
                self.synacks += 1;
                self.synack_last = now;
                out.push(CtlSeg { kind: Ctl::SynAck, ts: now, echo: seg.ts });
                self.server_timer = Some(on_wheel(now, TIMEOUT_INIT << self.synack_timeouts));
                None
            }
            Ctl::SynAck => {
                if self.client_est {
                    // an old segment: a duplicate ACK
                    out.push(CtlSeg { kind: Ctl::Ack, ts: now, echo: seg.ts });
                    return None;
                }
                if self.failed {
                    return None;
                }
                self.client_est = true;
                self.client_timer = None;
                let first = self.first_syn.unwrap_or(now);
                let rtt = if self.syns == 1 { (now - first).max(NS_PER_US) } else { ts_sample(now, seg.echo) };
                self.client_rtt.sample((rtt / NS_PER_US) as u32, 0, 0);
                out.push(CtlSeg { kind: Ctl::Ack, ts: now, echo: seg.ts });
                if self.upload {
                    return Some(Start { rtt, cwnd_one: self.syns > 2 });
                }
                self.requests = 1;
                out.push(CtlSeg { kind: Ctl::Request, ts: now, echo: seg.ts });
                self.client_timer = Some(on_wheel(now, self.client_rtt.rto));
                None
            }
            Ctl::Ack | Ctl::Request => {
                self.server_established(now, seg.echo);
                if seg.kind == Ctl::Ack || !self.server_est {
                    return None;
                }
                // The request is the server's first data: `tcp_event_data_recv` puts it in
                // quick-ACK mode (`icsk_ack.ato` still 0), so `__tcp_ack_snd_check` acks it at
                // once, from softirq, before the application has read it and written its
                // answer: a pure ACK leaves ahead of the first data (the kernel's capture,
                // 0.5 ms ahead). A repeated request is acked at once too (`tcp_send_dupack`).
                out.push(CtlSeg { kind: Ctl::ReqAck, ts: now, echo: seg.ts });
                if self.requested {
                    return None;
                }
                self.requested = true;
                Some(Start { rtt: self.server_rtt, cwnd_one: self.server_cwnd_one })
            }
            Ctl::ReqAck => {
                self.server_data_arrived();
                None
            }
        }
    }

    /// `tcp_check_req` → child socket: the first ACK (or segment carrying
    /// one) completes the server's side.
    fn server_established(&mut self, now: Nanos, echo: Nanos) {
        if self.server_est || self.synacks == 0 || self.failed {
            return;
        }
        self.server_est = true;
        self.server_timer = None;
        let retrans = self.synacks - 1;
        self.server_rtt = if retrans == 0 { (now - self.synack_first).max(NS_PER_US) } else { ts_sample(now, echo) };
        self.server_cwnd_one = retrans > 1 && self.synack_timeouts > 0;
    }

    /// An upload's data reached the server: it carries the ACK.
    pub fn client_data_arrived(&mut self, now: Nanos) {
        // the segment echoes the latest SYN-ACK the client saw
        self.server_established(now, self.synack_last);
    }

    /// A download's data (or an ACK of the request) reached the client: the
    /// request is acknowledged.
    pub fn server_data_arrived(&mut self) {
        if self.client_est && !self.request_acked {
            self.request_acked = true;
            self.client_timer = None;
        }
    }

    /// A timer of either side is due at `now`.
    pub fn on_timer(&mut self, now: Nanos, out: &mut Vec<CtlSeg>) {
        if self.client_timer.is_some_and(|t| t <= now) {
            self.client_timer = None;
            if !self.client_est {
                // timeout number `syns` (tcp_write_timeout: icsk_retransmits = syns - 1)
                if self.syns > SYN_RETRIES + SYN_LINEAR_TIMEOUTS {
                    self.failed = true; // connect() fails: ETIMEDOUT
                    self.server_timer = None;
                } else {
                    out.push(CtlSeg { kind: Ctl::Syn, ts: now, echo: 0 });
                    // tcp_retransmit_timer: icsk_rto doubles once total_rto exceeds the linear count
                    let rto = TIMEOUT_INIT << self.syns.saturating_sub(SYN_LINEAR_TIMEOUTS);
                    self.client_timer = Some(on_wheel(now, rto));
                    self.syns += 1;
                }
            } else if !self.upload && !self.request_acked {
                out.push(CtlSeg { kind: Ctl::Request, ts: now, echo: 0 });
                let rto = (self.client_rtt.rto << self.requests.min(20)).min(super::rtt::RTO_MAX);
                self.requests += 1;
                self.client_timer = Some(on_wheel(now, rto));
            }
        }
        if self.server_timer.is_some_and(|t| t <= now) {
            self.server_timer = None;
            if self.server_est || self.failed {
                return;
            }
            if self.synack_timeouts >= SYNACK_RETRIES {
                // reqsk_timer_handler: the request sock is dropped
                self.failed = !self.client_est;
                return;
            }
            self.synack_timeouts += 1;
            self.synacks += 1;
            self.synack_last = now;
            out.push(CtlSeg { kind: Ctl::SynAck, ts: now, echo: self.syn_ts });
            self.server_timer = Some(on_wheel(now, TIMEOUT_INIT << self.synack_timeouts));
        }
    }

    /// The client's SYN transmissions so far.
    pub fn syns(&self) -> u32 {
        self.syns
    }

    /// The server's SYN-ACK transmissions so far.
    pub fn synacks(&self) -> u32 {
        self.synacks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Nanos = 200 * NS_PER_MS;

    /// Deliver `seg` after half an RTT.
    fn deliver(h: &mut Handshake, t: Nanos, seg: CtlSeg, out: &mut Vec<CtlSeg>) -> Option<Start> {
        h.on_ctl(t + RTT / 2, seg, out)
    }

    #[test]
    fn a_clean_download_starts_the_server_one_and_a_half_rtts_after_the_syn() {
        let mut h = Handshake::new(false);
        let mut out = Vec::new();
        h.connect(0, &mut out);
        let syn = out.pop().unwrap();
        assert!(deliver(&mut h, 0, syn, &mut out).is_none());
        let synack = out.pop().unwrap();
        assert_eq!((synack.kind, synack.echo), (Ctl::SynAck, 0));
        assert!(deliver(&mut h, RTT / 2, synack, &mut out).is_none());
        assert_eq!(out.iter().map(|s| s.kind).collect::<Vec<_>>(), [Ctl::Ack, Ctl::Request]);
        // the client's request RTO: RTT + max(2 RTT, 200 ms) = 600 ms = 150 jiffies from jiffy
        // 50: level 1 of the timer wheel, expiry 200 -> bucket 208: 832 ms
        assert_eq!(h.client_timer, Some(832 * NS_PER_MS));
        let req = out.pop().unwrap();
        let ack = out.pop().unwrap();
        assert!(deliver(&mut h, RTT, ack, &mut out).is_none());
        let s = deliver(&mut h, RTT, req, &mut out).unwrap();
        assert_eq!(s, Start { rtt: RTT, cwnd_one: false });
        assert_eq!(h.server_timer, None);
        // the request in quick-ACK mode: a pure ACK echoing it leaves ahead of the data (the
        // kernel's capture, fidelity/nsperf random_loss 10 %: 0.48 ms ahead, one more draw of
        // the link's random loss before the first data segment)
        assert_eq!(out, [CtlSeg { kind: Ctl::ReqAck, ts: RTT + RTT / 2, echo: req.ts }]);
        deliver(&mut h, RTT + RTT / 2, out.pop().unwrap(), &mut out);
        assert_eq!(h.timer(), None); // the request is acknowledged
    }

    #[test]
    fn lost_syns_back_off_linearly_four_times_then_doubling_and_give_up_after_131_s() {
        let mut h = Handshake::new(true);
        let mut out = Vec::new();
        h.connect(0, &mut out);
        out.clear();
        let mut sent = vec![0];
        let mut last = 0;
        while let Some(t) = h.timer() {
            h.on_timer(t, &mut out);
            last = t;
            if out.pop().is_some() {
                sent.push(t / NS_PER_MS);
            }
        }
        // tcp_syn_linear_timeouts = 4 (Linux >= 6.5): SYN RTOs 1, 1, 1, 1, 1, 2, 4, 8, 16, 32 s,
        // tcp_syn_retries + 4 = 10 retransmissions (ip-sysctl.rst: the last at 67 s, connect()
        // fails at 131 s), each late on the timer wheel: 1 s is 250 jiffies, level 1 (buckets of
        // 8 jiffies): 256, 512, 768, 1024, 1280; 2 s (500 jiffies) from 1280: 1784; 4 s, level 2
        // (64), from 1784: 2808 (INITIAL_JIFFIES is 8 mod 64) ...
        assert_eq!(sent, [0, 1_024, 2_048, 3_072, 4_096, 5_120, 7_136, 11_232, 19_424, 35_552, 68_576]);
        // connect() fails at the eleventh timeout: 64 s (16 000 jiffies, level 3, buckets of 512)
        assert_eq!(last, 134_112 * NS_PER_MS);
        assert!(h.failed);
    }

    #[test]
    fn two_lost_syns_leave_an_upload_with_cwnd_one_and_a_timestamp_rtt() {
        let mut h = Handshake::new(true);
        let mut out = Vec::new();
        h.connect(0, &mut out);
        h.on_timer(h.timer().unwrap(), &mut out); // second SYN (1.024 s: the wheel), lost
        h.on_timer(h.timer().unwrap(), &mut out); // third SYN gets through
        let syn = out.pop().unwrap();
        assert_eq!(syn.ts, 2_048 * NS_PER_MS); // 1.024 s + 250 jiffies (linear) to bucket 512
        deliver(&mut h, syn.ts, syn, &mut out);
        let synack = out.pop().unwrap();
        let s = deliver(&mut h, synack.ts, synack, &mut out).unwrap();
        assert_eq!(s, Start { rtt: RTT, cwnd_one: true });
        // one lost SYN only: cwnd stays 10 (tcp_init_transfer wants total_retrans > 1)
        let mut h = Handshake::new(true);
        h.connect(0, &mut out);
        h.on_timer(h.timer().unwrap(), &mut out);
        let syn = out.pop().unwrap();
        deliver(&mut h, syn.ts, syn, &mut out);
        let synack = out.pop().unwrap();
        assert!(!deliver(&mut h, synack.ts, synack, &mut out).unwrap().cwnd_one);
    }

    #[test]
    fn a_lost_synack_is_sent_again_after_one_second_and_a_repeated_syn_gets_it_at_once() {
        let mut h = Handshake::new(false);
        let mut out = Vec::new();
        h.connect(0, &mut out);
        let syn = out.pop().unwrap();
        deliver(&mut h, 0, syn, &mut out);
        out.clear(); // the SYN-ACK is lost
        // 1 s on the timer wheel: 250 jiffies from jiffy 25 -> bucket 280 (1.12 s), from 0 ->
        // bucket 256 (1.024 s: the kernel's second SYN through the emulator, 1.028 s)
        assert_eq!(h.server_timer, Some(1_120 * NS_PER_MS));
        assert_eq!(h.client_timer, Some(1_024 * NS_PER_MS));
        // the client's second SYN reaches the server (its own timer not run here): SYN-ACK at once
        h.on_timer(1_024 * NS_PER_MS, &mut out);
        let syn2 = out.pop().unwrap();
        deliver(&mut h, syn2.ts, syn2, &mut out);
        let synack = out.pop().unwrap();
        let t2 = 1_024 * NS_PER_MS;
        assert_eq!((synack.kind, synack.ts, synack.echo), (Ctl::SynAck, t2 + RTT / 2, t2));
        assert_eq!(h.synacks(), 2);
        // the server's own timer has not fired: a lost SYN-ACK retransmitted on a SYN does not set undo_marker
        deliver(&mut h, synack.ts, synack, &mut out);
        let req = out.pop().unwrap();
        let s = deliver(&mut h, req.ts, req, &mut out).unwrap();
        assert!(!s.cwnd_one);
        assert_eq!(s.rtt, RTT);
    }

    #[test]
    fn a_lost_request_is_sent_again_on_the_clients_rto_and_a_repeat_is_acked() {
        let mut h = Handshake::new(false);
        let mut out = Vec::new();
        h.connect(0, &mut out);
        let syn = out.pop().unwrap();
        deliver(&mut h, 0, syn, &mut out);
        let synack = out.pop().unwrap();
        deliver(&mut h, synack.ts, synack, &mut out);
        out.clear(); // ACK and request both lost
        let t = h.timer().unwrap();
        // the client's RTO (600 ms on the wheel: 832 ms) comes before the server's SYN-ACK timer
        assert_eq!(t, 832 * NS_PER_MS);
        h.on_timer(t, &mut out);
        let req = out.pop().unwrap();
        assert_eq!(req.kind, Ctl::Request);
        // backed off: 1.2 s = 300 jiffies from jiffy 208, expiry 508 -> bucket 512: 2.048 s
        assert_eq!(h.client_timer, Some(2_048 * NS_PER_MS));
        assert!(deliver(&mut h, t, req, &mut out).is_some());
        // the same request again: an immediate ACK, no second start
        assert!(deliver(&mut h, t, req, &mut out).is_none());
        assert_eq!(out.pop().unwrap().kind, Ctl::ReqAck);
        h.server_data_arrived();
        assert_eq!(h.timer(), None);
    }
}
