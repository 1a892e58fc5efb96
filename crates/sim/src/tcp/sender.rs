//! The TCP sender: Linux's loss recovery and transmission around a
//! pluggable congestion control.
//!
//! Sources (Linux v6.x unless noted): `tcp_output.c` (`tcp_write_xmit`,
//! `tcp_xmit_retransmit_queue`, `tcp_send_loss_probe`,
//! `tcp_schedule_loss_probe`, `tcp_update_skb_after_send` for EDT pacing,
//! `tcp_cwnd_validate`), `tcp_input.c` (`tcp_ack`, `tcp_sacktag_write_queue`,
//! `tcp_clean_rtt_queue`, `tcp_fastretrans_alert`, `tcp_enter_recovery`,
//! `tcp_cwnd_reduction` = PRR of RFC 6937, `tcp_end_cwnd_reduction`,
//! `tcp_process_tlp_ack`, `tcp_enter_loss`), `tcp_recovery.c` (RACK-TLP,
//! RFC 8985), `tcp_rate.c` (delivery-rate sampling,
//! draft-cheng-iccrg-delivery-rate-estimation), `tcp_timer.c`
//! (`tcp_retransmit_timer`).
//!
//! Model: segments of one MSS are numbered 0, 1, 2, ...; the scoreboard keeps
//! one entry per outstanding segment with Linux's flags (SACKED, LOST,
//! SACKED_RETRANS, EVER_RETRANS) and its delivery-rate snapshot. Losses are
//! found by RACK (a segment sent before one that was delivered, and older
//! than RTT + reordering window), by a tail loss probe, or by the RTO.
//!
//! States: Open → Disorder (SACKs, no loss) → Recovery (PRR down to
//! ssthresh; or the control's own `cong_control`) → Open once `high_seq` is
//! acked; any state → Loss on RTO (cwnd 1, everything outstanding lost); CWR
//! after a tail-loss probe repaired a loss.
//!
//! The handshake before `start` is `handshake.rs`'s; its RTT sample seeds
//! the estimator and the min-RTT filter as `tcp_synack_rtt_meas` /
//! `tcp_ack_update_rtt` do.
//!
//! A paced sender (BBR) sends TSO/GSO bursts sized by `tcp_tso_autosize`
//! back to back and paces between them (EDT, `tcp_update_skb_after_send`
//! per burst); unpaced controls send what cwnd allows at once anyway.
//!
//! Simplifications (documented in docs/simulator.md): no undo of spurious
//! reductions (no reordering in the model, so they come only from RTOs),
//! no F-RTO, no receive-window limit.
//!
//! Slow-start restart after idle (RFC 2861, `tcp_slow_start_after_idle`
//! = 1, Linux's default): when the application writes into an empty pipe
//! more than one RTO after the last new data left, cwnd is halved once per
//! RTO idle, down to min(IW, cwnd), and ssthresh keeps 3/4 of the old cwnd
//! (`tcp_cwnd_restart`); controls with their own `cong_control` (BBR) are
//! exempt, as in `tcp_slow_start_after_idle_check`.

use super::rtt::{RttEstimator, RTO_MAX, TIMEOUT_INIT, TIMEOUT_MIN};
use crate::packet::{SackBlock, MSS, TCP_HDR};
use bloatlab_core::cc::{AckSample, CaState, CongestionControl, ConnView, CwndEvent, RateSample, Window, INIT_CWND};
use bloatlab_core::filter::MinFilter;
use bloatlab_core::time::{Nanos, NS_PER_SEC, NS_PER_US};
use std::collections::{BTreeSet, VecDeque};

/// `sysctl_tcp_min_rtt_wlen`: window of the min-RTT filter, 300 s (in µs).
const MIN_RTT_WLEN_US: u64 = 300_000_000;
/// `sysctl_tcp_reordering`: initial reordering degree (dupthresh), packets.
const REORDERING: u32 = 3;
/// `TCP_RTO_MIN` used by TLP when one segment is outstanding.
const RTO_MIN: Nanos = 200_000_000;
/// `sk_pacing_shift` default: a TSO burst carries ~1/2^10 s (1 ms) of data.
const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_pacing_ss_ratio`: in slow start (cwnd < ssthresh / 2) the
/// pacing rate is 200 % of cwnd/srtt, so that pacing never holds growth back.
const PACING_SS_RATIO: u64 = 200;
/// `sysctl_tcp_pacing_ca_ratio`: 120 % of cwnd/srtt in congestion avoidance.
const PACING_CA_RATIO: u64 = 120;
/// Segments sent before Linux starts pacing (`tp->data_segs_out >= 10`).
const UNPACED_SEGS: u64 = 10;
/// An application-limited source (`rate` on a flow) writes every 10 ms what
/// its rate allows: the probe's `-b` writes on the same clock, so both
/// engines offer the same bytes at the same instants. 10 ms is a video
/// frame-ish granularity, coarse enough that the write syscalls cost
/// nothing and fine enough that a 1 Mbit/s source is not one burst per RTT.
pub const APP_TICK: Nanos = bloatlab_schema::scenario::APP_TICK_NS;

pub use bloatlab_schema::scenario::app_ticks;

#[derive(Debug, Clone, Copy, Default)]
struct Seg {
    len: u32,
    /// Last (re)transmission time (`skb->skb_mstamp_ns`).
    tx_time: Nanos,
    /// tcp_rate per-skb state.
    first_tx: Nanos,
    delivered_mstamp: Nanos,
    delivered: u64,
    app_limited: bool,
    sacked: bool,
    lost: bool,
    /// TCPCB_SACKED_RETRANS: a retransmission is in flight.
    retrans: bool,
    /// TCPCB_EVER_RETRANS.
    ever_retrans: bool,
    /// Transmission count; stale tsorted entries carry an older value.
    gen: u32,
    /// `tp->delivered_ce` when sent.
    delivered_ce: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    Rto,
    Tlp,
    Reo,
}

/// One segment to put on the wire.
#[derive(Debug, Clone, Copy)]
pub struct Tx {
    pub seq: u64,
    pub len: u32,
    pub retrans: bool,
    /// ECN-capable transport (ECT(0)).
    pub ect: bool,
    /// Congestion Window Reduced flag (RFC 3168 §6.1.2).
    pub cwr: bool,
}

pub struct Sender {
    cc: Box<dyn CongestionControl>,
    pub w: Window,
    /// Total segments of a finite flow (None: unlimited).
    total_segs: Option<u64>,
    last_len: u32,
    /// Stop sending new data (the flow's `stop` time passed).
    pub stopped: bool,
    /// An application-limited source: its rate (bit/s) and first write.
    app: Option<(u64, Nanos)>,
    /// An on/off application: writes during `on` ticks of every `on + off`
    /// ([`APP_TICK`]s each), silent in between.
    app_onoff: Option<(u64, u64)>,
    /// Slow-start restarts after idle (`tcp_cwnd_restart` calls).
    pub restarts: u64,
    /// Segments the application has written so far (full segments only: a
    /// partial one waits for the next write, as Nagle holds it while data
    /// are in flight).
    app_segs: u64,

    pub una: u64,
    pub nxt: u64,
    segs: VecDeque<Seg>,
    /// (tx_time, seq, gen) in transmission order: RACK's `tsorted_sent_queue`.
    tsorted: VecDeque<(Nanos, u64, u32)>,
    /// Segments marked lost and not retransmitted yet.
    lost_q: BTreeSet<u64>,
    packets_out: u32,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,

    // tcp_rate.c
    pub delivered: u64,
    delivered_mstamp: Nanos,
    first_tx_mstamp: Nanos,
    app_limited: u64,
    pub lost_total: u64,
    rate_delivered: u64,
    rate_interval: Nanos,

    pub rtt: RttEstimator,
    backoff: u32,
    min_rtt: MinFilter,

    pub ca_state: CaState,
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    undo_marker: bool,

    rack_mstamp: Nanos,
    rack_end_seq: u64,
    rack_rtt_us: u64,
    rack_advanced: bool,

    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,

    /// The retransmission timer (Linux `icsk_pending` + `icsk_timeout`).
    pub timer: Option<(Nanos, TimerKind)>,
    /// EDT pacing: earliest departure of the next burst.
    wstamp: Nanos,
    /// Segments left in the TSO/GSO burst being sent, and its payload bytes.
    burst_left: u32,
    burst_bytes: u64,
    /// TSO/GSO bursts (Linux default); false: one segment per burst.
    pub tso: bool,
    /// Paced although the control does not ask for it: `sch_fq` on the
    /// sending host (it paces every socket at `sk_pacing_rate`), or
    /// `SO_MAX_PACING_RATE` set (the kernel's internal pacing).
    pub pacing: bool,
    data_segs_out: u64,

    is_cwnd_limited: bool,
    /// Time of the last new-data transmission (`tp->lsndtime`).
    lsndtime: Nanos,
    max_packets_out: u32,
    cwnd_usage_seq: u64,

    /// RFC 3168 ECN negotiated: data are ECT(0), ECE triggers CWR.
    pub ecn: bool,
    delivered_ce: u64,
    /// `TCP_ECN_QUEUE_CWR`: set CWR on the next new segment.
    queue_cwr: bool,

    // statistics
    pub segs_sent: u64,
    pub retrans_segs: u64,
    pub bytes_acked: u64,
    pub rtt_samples_ms: Vec<f64>,
    pub done_at: Option<Nanos>,
}

impl Sender {
    pub fn new(cc: Box<dyn CongestionControl>, size_bytes: Option<u64>) -> Sender {
        let (total_segs, last_len) = match size_bytes {
            Some(b) => {
                let n = b.div_ceil(MSS as u64).max(1);
                (Some(n), (b - (n - 1) * MSS as u64) as u32)
            }
            None => (None, MSS),
        };
        Sender {
            cc,
            w: Window::default(),
            total_segs,
            last_len,
            stopped: false,
            app: None,
            app_onoff: None,
            restarts: 0,
            app_segs: 0,
            una: 0,
            nxt: 0,
            segs: VecDeque::new(),
            tsorted: VecDeque::new(),
            lost_q: BTreeSet::new(),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            delivered_mstamp: 0,
            first_tx_mstamp: 0,
            app_limited: 0,
            lost_total: 0,
            rate_delivered: 0,
            rate_interval: 0,
            rtt: RttEstimator::default(),
            backoff: 0,
            min_rtt: MinFilter::default(),
            ca_state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            undo_marker: false,
            rack_mstamp: 0,
            rack_end_seq: 0,
            rack_rtt_us: 0,
            rack_advanced: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            timer: None,
            wstamp: 0,
            burst_left: 0,
            burst_bytes: 0,
            tso: true,
            pacing: false,
            data_segs_out: 0,
            is_cwnd_limited: false,
            lsndtime: 0,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            ecn: false,
            delivered_ce: 0,
            queue_cwr: false,
            segs_sent: 0,
            retrans_segs: 0,
            bytes_acked: 0,
            rtt_samples_ms: Vec::new(),
            done_at: None,
        }
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u32 {
        self.packets_out - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    fn seg(&mut self, seq: u64) -> &mut Seg {
        let i = (seq - self.una) as usize;
        &mut self.segs[i]
    }

    fn min_rtt_ns(&self) -> Nanos {
        let m = self.min_rtt.get();
        if m == u64::MAX {
            u64::MAX
        } else {
            m * NS_PER_US
        }
    }

    pub fn view(&self, now: Nanos) -> ConnView {
        ConnView {
            now,
            mss: MSS,
            packets_in_flight: self.in_flight(),
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            lost: self.lost_total,
            app_limited: self.app_limited,
            srtt: self.rtt.srtt(),
            min_rtt: self.min_rtt_ns(),
            ca_state: self.ca_state,
            is_cwnd_limited: self.cwnd_limited(),
            snd_una: self.una * MSS as u64,
            snd_nxt: self.nxt * MSS as u64,
            prior_cwnd: self.prior_cwnd,
            pacing_shift: PACING_SHIFT,
            lsndtime: self.lsndtime,
            paced: self.paced(),
        }
    }

    /// `tcp_is_cwnd_limited`.
    fn cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.w.in_slow_start() {
            return self.w.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// `tcpi_pacing_rate` in bit/s: the kernel computes it for every socket
    /// (BBR its own, the others [`Self::update_pacing_rate`]) whether or not
    /// anything paces by it.
    pub fn pacing_rate_bps(&self) -> u64 {
        self.w.pacing_rate * 8
    }

    /// Whether segments leave at the pacing rate (EDT, `tcp_needs_internal_pacing`
    /// or sch_fq): the control asks for it (BBR), or the flow says so.
    fn paced(&self) -> bool {
        self.cc.wants_pacing() || self.pacing
    }

    /// Linux `tcp_update_pacing_rate` (tcp_input.c) for controls without their
    /// own `cong_control`: `mss * max(cwnd, packets_out) / srtt`, times
    /// `tcp_pacing_ss_ratio` (200 %) while cwnd < ssthresh / 2, else
    /// `tcp_pacing_ca_ratio` (120 %). Bytes/s, in the kernel's integer steps
    /// (srtt in µs << 3); nothing before the first RTT sample.
    fn update_pacing_rate(&mut self) {
        if self.rtt.srtt_us == 0 {
            return;
        }
        let ratio = if (self.w.cwnd as u64) < (self.w.ssthresh as u64) / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
        let rate = MSS as u64 * ((1_000_000 / 100) << 3) * ratio * self.w.cwnd.max(self.packets_out) as u64;
        self.w.pacing_rate = rate / self.rtt.srtt_us as u64;
    }

    /// Linux `tcpi_delivery_rate`: the latest non-app-limited-dominated rate sample, bit/s.
    pub fn delivery_rate_bps(&self) -> u64 {
        if self.rate_interval == 0 {
            return 0;
        }
        (self.rate_delivered as u128 * MSS as u128 * 8 * NS_PER_SEC as u128 / self.rate_interval as u128) as u64
    }

    pub fn state_label(&self) -> &'static str {
        self.cc.state_label()
    }

    fn has_new_data(&self) -> bool {
        !self.stopped && self.total_segs.map_or(true, |n| self.nxt < n) && (self.app.is_none() || self.nxt < self.app_segs)
    }

    /// Make this an application-limited sender offering at most `rate_bps`
    /// (before `start`).
    pub fn set_app_rate(&mut self, rate_bps: u64) {
        self.app = Some((rate_bps, 0));
    }

    /// Make the application alternate: `on` ns writing, `off` ns silent
    /// (whole [`APP_TICK`]s each; needs a rate).
    pub fn set_app_onoff(&mut self, on: Nanos, off: Nanos) {
        self.app_onoff = Some(((on / APP_TICK).max(1), off / APP_TICK));
    }

    /// The application writes (at `start` and every [`APP_TICK`] after):
    /// the bytes its rate allows up to now. Returns the next write's time,
    /// None once everything of a finite flow is written.
    pub fn app_write(&mut self, now: Nanos) -> Option<Nanos> {
        let (rate, t0) = self.app?;
        let ticks = (now - t0) / APP_TICK + 1;
        let writing = app_ticks(ticks, self.app_onoff);
        let bytes = (rate as u128 * APP_TICK as u128 * writing as u128 / (8 * NS_PER_SEC as u128)) as u64;
        let segs = bytes / MSS as u64;
        if segs > self.app_segs {
            self.restart_after_idle(now);
        }
        self.app_segs = segs;
        if let Some(n) = self.total_segs {
            let size = (n - 1) * MSS as u64 + self.last_len as u64;
            if bytes >= size {
                self.app_segs = n;
                return None;
            }
        }
        Some(t0 + ticks * APP_TICK)
    }

    /// `tcp_slow_start_after_idle_check` + `tcp_cwnd_restart`, when the
    /// application writes new data.
    fn restart_after_idle(&mut self, now: Nanos) {
        if self.packets_out > 0 || self.cc.has_cong_control() || self.data_segs_out == 0 {
            return;
        }
        let rto = self.rtt.rto;
        let mut delta = now.saturating_sub(self.lsndtime) as i64;
        if delta <= rto as i64 {
            return;
        }
        let v = self.view(now);
        self.cc.cwnd_event(&v, CwndEvent::CwndRestart, &mut self.w);
        // tcp_current_ssthresh: 3/4 of cwnd unless in CWR/Recovery
        let cwnd = self.w.cwnd;
        if self.ca_state < CaState::Cwr {
            self.w.ssthresh = self.w.ssthresh.max((cwnd >> 1) + (cwnd >> 2));
        }
        let restart = INIT_CWND.min(cwnd);
        let mut c = cwnd;
        loop {
            delta -= rto as i64;
            if delta <= 0 || c <= restart {
                break;
            }
            c >>= 1;
        }
        self.w.cwnd = c.max(restart);
        self.restarts += 1;
    }

    /// Whether this sender is application-limited by a rate.
    pub fn app_rate(&self) -> Option<u64> {
        self.app.map(|a| a.0)
    }

    pub fn finished(&self) -> bool {
        self.total_segs.is_some_and(|n| self.una >= n)
    }

    fn set_state(&mut self, now: Nanos, s: CaState) {
        if s != self.ca_state {
            let v = self.view(now);
            self.cc.set_state(&v, s, &mut self.w);
            self.ca_state = s;
        }
    }

    /// Connection established at `now` (`tcp_init_transfer`): `hs` carries
    /// the handshake's first RTT sample and whether cwnd starts at 1
    /// (None: a sender without a handshake, as in unit tests).
    pub fn start(&mut self, now: Nanos, hs: Option<super::handshake::Start>, out: &mut Vec<Tx>) {
        if let Some(h) = hs {
            if h.cwnd_one {
                self.w.cwnd = 1;
            }
            let us = (h.rtt / NS_PER_US).clamp(1, u32::MAX as u64);
            self.rtt.sample(us as u32, 0, 0);
            self.min_rtt.update(MIN_RTT_WLEN_US, now / NS_PER_US, us);
        }
        self.lsndtime = now;
        if let Some((rate, _)) = self.app {
            self.app = Some((rate, now));
            self.app_write(now);
        }
        let v = self.view(now);
        self.cc.init(&v, &mut self.w);
        if !self.cc.has_cong_control() {
            self.update_pacing_rate(); // tcp_rcv_state_process / tcp_finish_connect: the handshake's RTT
        }
        self.wstamp = now;
        self.transmit(now, out);
    }

    // ------------------------------------------------------------ sending

    /// `tcp_rate_skb_sent` + scoreboard bookkeeping for a (re)transmission.
    fn on_sent(&mut self, now: Nanos, seq: u64, retrans: bool) -> Tx {
        if self.packets_out == 0 || (retrans && self.in_flight() == 0) {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        let (first_tx, delivered_mstamp, delivered, app_limited) =
            (self.first_tx_mstamp, self.delivered_mstamp, self.delivered, self.app_limited != 0);
        let delivered_ce = self.delivered_ce;
        let s = self.seg(seq);
        s.delivered_ce = delivered_ce;
        s.tx_time = now;
        s.first_tx = first_tx;
        s.delivered_mstamp = delivered_mstamp;
        s.delivered = delivered;
        s.app_limited = app_limited;
        s.gen += 1;
        let (len, gen) = (s.len, s.gen);
        self.tsorted.push_back((now, seq, gen));
        self.segs_sent += 1;
        self.data_segs_out += 1;
        if self.paced() {
            self.burst_bytes += len as u64;
        }
        let cwr = self.ecn && !retrans && std::mem::take(&mut self.queue_cwr);
        Tx { seq, len, retrans, ect: self.ecn && !retrans, cwr }
    }

    /// Segments per TSO/GSO burst now (`tcp_tso_segs`).
    pub fn tso_segs(&self) -> u32 {
        let min_tso = self.cc.min_tso_segs(&self.w);
        bloatlab_core::cc::tso_autosize(self.w.pacing_rate, PACING_SHIFT, self.min_rtt.get(), MSS, min_tso)
    }

    /// `tcp_update_skb_after_send`: EDT pacing of the burst just sent (one
    /// TSO skb of `burst_bytes`): the next one may leave its length at the
    /// pacing rate later, minus up to half of it as credit for time the
    /// sender was idle.
    fn end_burst(&mut self, now: Nanos) {
        let bytes = std::mem::take(&mut self.burst_bytes);
        self.burst_left = 0;
        if bytes == 0 {
            return;
        }
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        let rate = self.w.pacing_rate;
        if rate > 0 && self.data_segs_out >= UNPACED_SEGS {
            let skb_len = bytes + (TCP_HDR - 20) as u64; // payload + one TCP header, as skb->len then
            let mut len_ns = skb_len * NS_PER_SEC / rate;
            let credit = self.wstamp - prior;
            len_ns -= (len_ns / 2).min(credit);
            self.wstamp += len_ns;
        }
    }

    /// `tcp_write_xmit` + `tcp_xmit_retransmit_queue`: send what cwnd,
    /// pacing and the application allow. Lost segments go first. A paced
    /// sender sends TSO/GSO bursts of [`Self::tso_segs`] back to back and
    /// paces between bursts.
    pub fn transmit(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        let mut sent_new = false;
        let mut cwnd_full = false;
        let paced = self.paced();
        loop {
            if paced && self.burst_left == 0 {
                if self.wstamp > now {
                    break;
                }
                self.burst_left = if self.tso { self.tso_segs() } else { 1 };
            }
            if self.in_flight() >= self.w.cwnd {
                cwnd_full = true;
                break;
            }
            if let Some(&seq) = self.lost_q.iter().next() {
                self.lost_q.remove(&seq);
                {
                    let s = self.seg(seq);
                    s.retrans = true;
                    s.ever_retrans = true;
                }
                self.retrans_out += 1;
                self.retrans_segs += 1;
                if self.ca_state >= CaState::Cwr {
                    self.prr_out += 1;
                }
                let tx = self.on_sent(now, seq, true);
                out.push(tx);
                self.burst_step(now);
                continue;
            }
            if self.has_new_data() {
                if self.in_flight() == 0 {
                    let v = self.view(now);
                    self.cc.cwnd_event(&v, CwndEvent::TxStart, &mut self.w);
                }
                let seq = self.nxt;
                let len = if self.total_segs == Some(seq + 1) { self.last_len } else { MSS };
                self.segs.push_back(Seg { len, ..Seg::default() });
                self.nxt += 1;
                self.packets_out += 1;
                if self.ca_state >= CaState::Cwr {
                    self.prr_out += 1;
                }
                let tx = self.on_sent(now, seq, false);
                self.lsndtime = now;
                out.push(tx);
                sent_new = true;
                self.burst_step(now);
                continue;
            }
            break;
        }
        // the skb is cut where cwnd or the data end: a shorter burst
        if paced {
            self.end_burst(now);
        }
        // tcp_cwnd_validate
        if self.una >= self.cwnd_usage_seq || cwnd_full || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out) {
            self.is_cwnd_limited = cwnd_full;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.nxt;
        }
        if !self.has_new_data() && !cwnd_full && self.app_limited == 0 && self.packets_out > 0 {
            // tcp_rate_check_app_limited: nothing left to send and cwnd not full.
            self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
        }
        if sent_new && !self.schedule_loss_probe(now, false) && self.timer.is_none() {
            self.arm_rto(now);
        }
        if !out.is_empty() && self.timer.is_none() && self.packets_out > 0 {
            self.arm_rto(now);
        }
    }

    fn burst_step(&mut self, now: Nanos) {
        if self.paced() {
            self.burst_left = self.burst_left.saturating_sub(1);
            if self.burst_left == 0 {
                self.end_burst(now);
            }
        }
    }

    /// When the sender must be woken for pacing, if it is pacing-limited.
    pub fn pacing_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if self.paced()
            && self.wstamp > now
            && self.in_flight() < self.w.cwnd
            && (!self.lost_q.is_empty() || self.has_new_data())
        {
            Some(self.wstamp)
        } else {
            None
        }
    }

    // ------------------------------------------------------------ timers

    fn rto_backed_off(&self) -> Nanos {
        (self.rtt.rto << self.backoff.min(20)).min(RTO_MAX)
    }

    fn arm_rto(&mut self, now: Nanos) {
        self.timer = Some((now + self.rto_backed_off(), TimerKind::Rto));
    }

    /// `tcp_rearm_rto`.
    fn rearm_rto(&mut self, now: Nanos) {
        if self.packets_out == 0 {
            self.timer = None;
            return;
        }
        let mut rto = self.rto_backed_off();
        if matches!(self.timer, Some((_, TimerKind::Tlp | TimerKind::Reo))) {
            rto = self.rto_delta(now).max(1);
        }
        self.timer = Some((now + rto, TimerKind::Rto));
    }

    /// `tcp_rto_delta_us`: time left until the head segment's RTO.
    fn rto_delta(&self, now: Nanos) -> Nanos {
        match self.segs.front() {
            Some(s) => (s.tx_time + self.rto_backed_off()).saturating_sub(now),
            None => self.rto_backed_off(),
        }
    }

    /// `tcp_schedule_loss_probe`.
    fn schedule_loss_probe(&mut self, now: Nanos, advancing_rto: bool) -> bool {
        if self.packets_out == 0 || !matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout = if self.rtt.srtt_us > 0 {
            let t = (self.rtt.srtt_us >> 2) as Nanos * NS_PER_US; // 2 * srtt
            t + if self.packets_out == 1 { RTO_MIN } else { TIMEOUT_MIN }
        } else {
            TIMEOUT_INIT
        };
        let delta = if advancing_rto { self.rto_backed_off() } else { self.rto_delta(now) };
        if delta > 0 {
            timeout = timeout.min(delta);
        }
        self.timer = Some((now + timeout, TimerKind::Tlp));
        true
    }

    /// The retransmission timer fired (whichever kind is pending).
    pub fn on_timer(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        let Some((t, kind)) = self.timer else { return };
        if t > now {
            return;
        }
        self.timer = None;
        match kind {
            TimerKind::Rto => self.on_rto(now, out),
            TimerKind::Tlp => self.send_loss_probe(now, out),
            TimerKind::Reo => self.on_reo_timeout(now, out),
        }
    }

    /// `tcp_retransmit_timer` → `tcp_enter_loss`.
    fn on_rto(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        if self.packets_out == 0 {
            return;
        }
        let new_recovery = self.ca_state <= CaState::Disorder || self.high_seq <= self.una;
        // tcp_timeout_mark_lost: everything not sacked is lost.
        for i in 0..self.segs.len() {
            let seq = self.una + i as u64;
            let s = self.segs[i];
            if s.sacked {
                continue;
            }
            if s.retrans {
                self.segs[i].retrans = false;
                self.retrans_out -= 1;
            }
            if !s.lost {
                self.segs[i].lost = true;
                self.lost_out += 1;
                self.lost_total += 1;
            }
            self.lost_q.insert(seq);
        }
        self.retrans_out = 0;
        if new_recovery || self.ca_state == CaState::Loss {
            self.prior_cwnd = self.w.cwnd;
            let v = self.view(now);
            self.w.ssthresh = self.cc.ssthresh(&v, &self.w);
            self.cc.cwnd_event(&v, CwndEvent::Loss, &mut self.w);
            self.undo_marker = true;
        }
        self.w.cwnd = self.in_flight() + 1;
        self.w.cwnd_cnt = 0;
        self.set_state(now, CaState::Loss);
        self.high_seq = self.nxt;
        self.tlp_high_seq = None;
        self.backoff += 1;
        self.transmit(now, out);
        self.timer = Some((now + self.rto_backed_off(), TimerKind::Rto));
    }

    /// `tcp_send_loss_probe`.
    fn send_loss_probe(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        if self.tlp_high_seq.is_none() && self.packets_out > 0 {
            self.tlp_retrans = false;
            let mut probed = false;
            if self.has_new_data() {
                // Force out one new segment regardless of cwnd.
                let seq = self.nxt;
                let len = if self.total_segs == Some(seq + 1) { self.last_len } else { MSS };
                self.segs.push_back(Seg { len, ..Seg::default() });
                self.nxt += 1;
                self.packets_out += 1;
                let tx = self.on_sent(now, seq, false);
                out.push(tx);
                self.end_burst(now);
                probed = true;
            } else if let Some(last) = self.nxt.checked_sub(1) {
                if last >= self.una && !self.seg(last).sacked {
                    self.seg(last).ever_retrans = true;
                    self.retrans_segs += 1;
                    let tx = self.on_sent(now, last, true);
                    out.push(tx);
                    self.end_burst(now);
                    self.tlp_retrans = true;
                    probed = true;
                }
            }
            if probed {
                self.tlp_high_seq = Some(self.nxt);
                self.timer = None;
            }
        }
        self.rearm_rto(now);
    }

    /// `tcp_rack_reo_timeout`.
    fn on_reo_timeout(&mut self, now: Nanos, out: &mut Vec<Tx>) {
        let prior_inflight = self.in_flight();
        let timeout = self.rack_detect_loss(now);
        if prior_inflight != self.in_flight() {
            if self.ca_state != CaState::Recovery {
                self.enter_recovery(now);
                if !self.cc.has_cong_control() {
                    self.prr(1, 0, false);
                }
            }
            self.transmit(now, out);
        }
        if let Some(t) = timeout {
            self.timer = Some((now + t + TIMEOUT_MIN, TimerKind::Reo));
        } else if !matches!(self.timer, Some((_, TimerKind::Rto))) {
            self.rearm_rto(now);
        }
    }

    // ------------------------------------------------------------ RACK

    /// `tcp_rack_advance`.
    fn rack_advance(&mut self, now: Nanos, ever_retrans: bool, seq: u64, tx_time: Nanos) {
        let rtt_us = (now - tx_time) / NS_PER_US;
        let min_rtt_us = self.min_rtt.get();
        if ever_retrans && rtt_us < min_rtt_us {
            return; // ambiguous: the original may have been acked
        }
        self.rack_advanced = true;
        self.rack_rtt_us = rtt_us;
        if tx_time > self.rack_mstamp || (tx_time == self.rack_mstamp && seq + 1 > self.rack_end_seq) {
            self.rack_mstamp = tx_time;
            self.rack_end_seq = seq + 1;
        }
    }

    /// `tcp_rack_reo_wnd`, ns.
    fn rack_reo_wnd(&self) -> Nanos {
        if self.ca_state >= CaState::Recovery || self.sacked_out >= REORDERING {
            return 0;
        }
        let m = self.min_rtt_ns();
        if m == u64::MAX {
            return 0;
        }
        (m / 4).min(self.rtt.srtt())
    }

    /// `tcp_rack_detect_loss`: mark lost every segment sent before the most
    /// recently delivered one and older than RTT + reo_wnd. Returns the
    /// longest remaining wait, if any segment must wait.
    fn rack_detect_loss(&mut self, now: Nanos) -> Option<Nanos> {
        let reo_wnd = self.rack_reo_wnd();
        let mut timeout: Option<Nanos> = None;
        let mut i = 0;
        while i < self.tsorted.len() {
            let (tx, seq, gen) = self.tsorted[i];
            // Drop stale entries (acked, sacked, retransmitted since, or lost and waiting).
            let stale = seq < self.una || {
                let s = self.segs[(seq - self.una) as usize];
                s.gen != gen || s.sacked || (s.lost && !s.retrans)
            };
            if stale {
                if i == 0 {
                    self.tsorted.pop_front();
                } else {
                    self.tsorted.remove(i);
                }
                continue;
            }
            let sent_after = self.rack_mstamp > tx || (self.rack_mstamp == tx && self.rack_end_seq > seq + 1);
            if !sent_after {
                break;
            }
            let waited = now - tx;
            let limit = self.rack_rtt_us * NS_PER_US + reo_wnd;
            if waited >= limit {
                self.mark_lost(seq);
                if i == 0 {
                    self.tsorted.pop_front();
                } else {
                    self.tsorted.remove(i);
                }
            } else {
                let rem = limit - waited;
                timeout = Some(timeout.map_or(rem, |t: Nanos| t.max(rem)));
                i += 1;
            }
        }
        timeout
    }

    /// `tcp_mark_skb_lost`.
    fn mark_lost(&mut self, seq: u64) {
        let s = *self.seg(seq);
        if s.sacked {
            return;
        }
        if s.lost {
            if s.retrans {
                self.seg(seq).retrans = false;
                self.retrans_out -= 1;
                self.lost_total += 1;
                self.lost_q.insert(seq);
            }
        } else {
            self.seg(seq).lost = true;
            self.lost_out += 1;
            self.lost_total += 1;
            if s.retrans {
                self.seg(seq).retrans = false;
                self.retrans_out -= 1;
            }
            self.lost_q.insert(seq);
        }
    }

    /// `tcp_rack_mark_lost`.
    fn rack_mark_lost(&mut self, now: Nanos) {
        if !self.rack_advanced {
            return;
        }
        self.rack_advanced = false;
        if let Some(t) = self.rack_detect_loss(now) {
            self.timer = Some((now + t + TIMEOUT_MIN, TimerKind::Reo));
        }
    }

    // ------------------------------------------------------------ recovery

    /// `tcp_enter_recovery` (via `tcp_init_cwnd_reduction`).
    fn enter_recovery(&mut self, now: Nanos) {
        self.undo_marker = true;
        self.init_cwnd_reduction(now);
        self.set_state(now, CaState::Recovery);
    }

    fn init_cwnd_reduction(&mut self, now: Nanos) {
        self.high_seq = self.nxt;
        self.tlp_high_seq = None;
        self.w.cwnd_cnt = 0;
        self.prior_cwnd = self.w.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        let v = self.view(now);
        self.w.ssthresh = self.cc.ssthresh(&v, &self.w);
    }

    /// `tcp_end_cwnd_reduction`.
    fn end_cwnd_reduction(&mut self, now: Nanos) {
        if self.w.ssthresh < bloatlab_core::cc::INFINITE_SSTHRESH && (self.ca_state == CaState::Cwr || self.undo_marker) {
            self.w.cwnd = self.w.ssthresh;
        }
        let v = self.view(now);
        self.cc.cwnd_event(&v, CwndEvent::CompleteCwr, &mut self.w);
    }

    /// `tcp_cwnd_reduction`: Proportional Rate Reduction (RFC 6937) with
    /// Linux's slow-start reduction bound.
    fn prr(&mut self, newly_acked_sacked: u32, newly_lost: u32, una_advanced: bool) {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly_acked_sacked;
        let in_flight = self.in_flight() as i64;
        let delta = self.w.ssthresh as i64 - in_flight;
        let mut sndcnt: i64;
        if delta < 0 {
            let dividend = self.w.ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            sndcnt = (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64;
        } else {
            sndcnt = (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.w.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// `tcp_try_keep_open`.
    fn try_keep_open(&mut self, now: Nanos) {
        let state = if self.sacked_out + self.lost_out > 0 || self.retrans_out > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.ca_state != state {
            self.set_state(now, state);
            self.high_seq = self.nxt;
        }
    }

    // ------------------------------------------------------------ ACK

    /// `tcp_rate_skb_delivered`.
    fn rate_skb_delivered(&mut self, rs: &mut RateSample, s: &Seg, seq: u64, last_end_seq: &mut u64) {
        if s.delivered_mstamp == 0 {
            return;
        }
        let after = s.tx_time > self.first_tx_mstamp || (s.tx_time == self.first_tx_mstamp && seq + 1 > *last_end_seq);
        if rs.prior_delivered == 0 || after {
            rs.prior_delivered = s.delivered;
            rs.delivered_ce = s.delivered_ce as i64;
            rs.prior_mstamp = s.delivered_mstamp;
            rs.is_app_limited = s.app_limited;
            rs.is_retrans = s.ever_retrans;
            *last_end_seq = seq + 1;
            self.first_tx_mstamp = s.tx_time;
            rs.interval = (s.tx_time - s.first_tx) as i64;
        }
    }

    /// An ACK arrived: `tcp_ack`.
    pub fn on_ack(&mut self, now: Nanos, ack: u64, sack: &[SackBlock], dsack: bool, ece: bool, out: &mut Vec<Tx>) {
        let ece = ece && self.ecn;
        if ack < self.una || ack > self.nxt {
            return; // old or impossible ACK
        }
        let prior_una = self.una;
        let prior_in_flight = self.in_flight();
        let prior_delivered = self.delivered;
        let prior_lost = self.lost_total;
        let mut rs = RateSample { prior_in_flight, ..RateSample::default() };
        let mut last_end_seq = 0u64;
        let mut sacked_new = false;
        let mut first_sackt: Option<Nanos> = None;
        let mut last_sackt: Option<Nanos> = None;

        // 1. SACK blocks (tcp_sacktag_write_queue); a D-SACK block is reported, not sacked.
        let blocks = if dsack && !sack.is_empty() { &sack[1..] } else { sack };
        for b in blocks {
            let start = b.start.max(ack).max(self.una);
            let end = b.end.min(self.nxt);
            let mut seq = start;
            while seq < end {
                let s = *self.seg(seq);
                if !s.sacked {
                    {
                        let m = self.seg(seq);
                        m.sacked = true;
                    }
                    self.sacked_out += 1;
                    if s.lost {
                        self.seg(seq).lost = false;
                        self.lost_out -= 1;
                        self.lost_q.remove(&seq);
                    }
                    if s.retrans {
                        self.seg(seq).retrans = false;
                        self.retrans_out -= 1;
                    }
                    self.delivered += 1;
                    sacked_new = true;
                    if !s.ever_retrans {
                        first_sackt = Some(first_sackt.map_or(s.tx_time, |t: Nanos| t.min(s.tx_time)));
                        last_sackt = Some(last_sackt.map_or(s.tx_time, |t: Nanos| t.max(s.tx_time)));
                    }
                    self.rate_skb_delivered(&mut rs, &s, seq, &mut last_end_seq);
                    self.seg(seq).delivered_mstamp = 0;
                    self.rack_advance(now, s.ever_retrans, seq, s.tx_time);
                }
                seq += 1;
            }
        }

        // 2. Cumulative ACK (tcp_clean_rtt_queue).
        let mut first_ackt: Option<Nanos> = None;
        let mut last_ackt: Option<Nanos> = None;
        let mut retrans_acked = false;
        let mut pkts_acked = 0u32;
        while self.una < ack {
            let seq = self.una;
            let s = self.segs.pop_front().expect("scoreboard covers snd_una..snd_nxt");
            self.una += 1;
            self.packets_out -= 1;
            pkts_acked += 1;
            self.bytes_acked += s.len as u64;
            if s.sacked {
                self.sacked_out -= 1;
            } else {
                self.delivered += 1;
                if s.ever_retrans {
                    retrans_acked = true;
                } else {
                    first_ackt.get_or_insert(s.tx_time);
                    last_ackt = Some(s.tx_time);
                }
                self.rate_skb_delivered(&mut rs, &s, seq, &mut last_end_seq);
                self.rack_advance(now, s.ever_retrans, seq, s.tx_time);
            }
            if s.lost {
                self.lost_out -= 1;
                self.lost_q.remove(&seq);
            }
            if s.retrans {
                self.retrans_out -= 1;
            }
        }
        while let Some(&(_, seq, _)) = self.tsorted.front() {
            if seq < self.una {
                self.tsorted.pop_front();
            } else {
                break;
            }
        }
        let una_advanced = self.una > prior_una;

        // RTT (tcp_ack_update_rtt): Karn's rule, a sample only from never-retransmitted data.
        let mut seq_rtt: Option<Nanos> = None;
        let mut ca_rtt: Option<Nanos> = None;
        if let (Some(f), Some(l)) = (first_ackt, last_ackt) {
            if !retrans_acked {
                seq_rtt = Some(now - f);
                ca_rtt = Some(now - l);
            }
        }
        let mut sack_rtt = None;
        if let (Some(f), Some(l)) = (first_sackt, last_sackt) {
            sack_rtt = Some(now - f);
            ca_rtt = Some(now - l);
        }
        let seq_rtt = seq_rtt.or(sack_rtt);
        rs.rtt = ca_rtt.map_or(-1, |r| r as i64);
        if let Some(r) = seq_rtt {
            if let Some(c) = ca_rtt {
                let c_us = (c / NS_PER_US).max(1);
                self.min_rtt.update(MIN_RTT_WLEN_US, now / NS_PER_US, c_us);
                self.rtt_samples_ms.push(c as f64 / 1e6);
            }
            self.rtt.sample((r / NS_PER_US).min(u32::MAX as u64) as u32, self.una * MSS as u64, self.nxt * MSS as u64);
            self.backoff = 0;
        }
        let v = self.view(now);
        self.cc.pkts_acked(&v, &AckSample { pkts_acked, rtt: rs.rtt, in_flight: prior_in_flight }, &mut self.w);

        let mut set_xmit_timer = una_advanced;

        // TLP outcome (tcp_process_tlp_ack).
        if let Some(h) = self.tlp_high_seq {
            if ack >= h {
                if !self.tlp_retrans || dsack {
                    self.tlp_high_seq = None;
                } else if ack > h {
                    self.init_cwnd_reduction(now);
                    self.set_state(now, CaState::Cwr);
                    self.end_cwnd_reduction(now);
                    self.try_keep_open(now);
                    self.tlp_high_seq = None;
                } else if !una_advanced && !sacked_new {
                    self.tlp_high_seq = None;
                }
            }
        }

        // 3. Loss detection and the state machine (tcp_fastretrans_alert),
        //    when the ACK is "dubious".
        // ECN (tcp_count_delivered, tcp_ca_event): count CE-echoed deliveries, tell the control.
        if self.ecn {
            if ece {
                self.delivered_ce += self.delivered - prior_delivered;
            }
            let v = self.view(now);
            let ev = if ece { CwndEvent::EcnIsCe } else { CwndEvent::EcnNoCe };
            self.cc.cwnd_event(&v, ev, &mut self.w);
        }
        let dubious = !una_advanced || sacked_new || dsack || ece || self.ca_state != CaState::Open;
        if dubious {
            if self.ca_state != CaState::Open && self.una >= self.high_seq {
                match self.ca_state {
                    CaState::Cwr => {
                        if self.una != self.high_seq {
                            self.end_cwnd_reduction(now);
                            self.set_state(now, CaState::Open);
                        }
                    }
                    CaState::Recovery => {
                        self.set_state(now, CaState::Open);
                        self.end_cwnd_reduction(now);
                    }
                    _ => {}
                }
            }
            match self.ca_state {
                CaState::Recovery => {
                    self.rack_mark_lost(now);
                    if matches!(self.timer, Some((_, TimerKind::Reo))) {
                        set_xmit_timer = false;
                    }
                }
                CaState::Loss => {
                    if self.una >= self.high_seq {
                        self.set_state(now, CaState::Open);
                    }
                    if self.ca_state != CaState::Loss {
                        self.rack_mark_lost(now);
                        if self.lost_out > 0 && self.ca_state <= CaState::Disorder {
                            self.enter_recovery(now);
                        }
                    } else {
                        self.rack_mark_lost(now);
                    }
                }
                _ => {
                    self.rack_mark_lost(now);
                    if matches!(self.timer, Some((_, TimerKind::Reo))) {
                        set_xmit_timer = false;
                    }
                    if self.lost_out > 0 {
                        self.enter_recovery(now);
                        if ece {
                            self.queue_cwr = true;
                        }
                    } else {
                        // tcp_try_to_open: an ECE starts a CWR episode (tcp_enter_cwr).
                        if ece && self.ca_state < CaState::Cwr {
                            self.undo_marker = false;
                            self.init_cwnd_reduction(now);
                            self.set_state(now, CaState::Cwr);
                            self.queue_cwr = true;
                        }
                        if self.ca_state != CaState::Cwr {
                            self.try_keep_open(now);
                        }
                    }
                }
            }
        }

        // 4. Delivery-rate sample (tcp_rate_gen).
        let delivered = (self.delivered - prior_delivered) as u32;
        let newly_lost = (self.lost_total - prior_lost) as u32;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if delivered > 0 {
            self.delivered_mstamp = now;
        }
        rs.acked_sacked = delivered;
        rs.delivered_ce = self.delivered_ce as i64 - rs.delivered_ce;
        rs.losses = newly_lost;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval = -1;
        } else {
            rs.delivered = (self.delivered - rs.prior_delivered) as i64;
            let snd = rs.interval;
            let ack_iv = (now - rs.prior_mstamp) as i64;
            rs.interval = snd.max(ack_iv);
            let min_rtt = self.min_rtt_ns();
            if min_rtt != u64::MAX && rs.interval < min_rtt as i64 {
                rs.interval = -1;
            } else if rs.interval > 0
                && (!rs.is_app_limited
                    || rs.delivered as u128 * self.rate_interval as u128 >= self.rate_delivered as u128 * rs.interval as u128)
            {
                self.rate_delivered = rs.delivered as u64;
                self.rate_interval = rs.interval as u64;
            }
        }

        // 5. Congestion control (tcp_cong_control).
        let v = self.view(now);
        if self.cc.has_cong_control() {
            self.cc.cong_control(&v, &rs, &mut self.w);
        } else if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.prr(delivered, newly_lost, una_advanced);
        } else if una_advanced {
            self.cc.cong_avoid(&v, delivered, &mut self.w);
        }
        self.w.cwnd = self.w.cwnd.max(1);
        if !self.cc.has_cong_control() {
            self.update_pacing_rate();
        }

        // 6. Timers and transmission.
        if set_xmit_timer && !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
        if self.packets_out == 0 && !matches!(self.timer, Some((_, TimerKind::Reo))) {
            self.timer = None;
        }
        self.transmit(now, out);
        if self.finished() && self.done_at.is_none() {
            self.done_at = Some(now);
            self.timer = None;
        }
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
