//! The TCP sender: Linux's loss recovery and transmission around a
//! pluggable congestion control.
//!
//! Source: Linux v6.x `net/ipv4/tcp_input.c` (`tcp_ack`, the per-ACK
//! pipeline below) and the files each step follows, one module each:
//!
//! | module | Linux | what |
//! |---|---|---|
//! | `scoreboard.rs` | `tcp_input.c` | the send queue and its counters, SACK tagging, the cumulative ACK, RTT samples |
//! | `rack.rs` | `tcp_recovery.c` | RACK loss detection and the REO timer (RFC 8985) |
//! | `rate.rs` | `tcp_rate.c` | delivery-rate sampling |
//! | `recovery.rs` | `tcp_input.c` | the CA state machine, PRR (RFC 6937), CWR, TLP outcome |
//! | `timer.rs` | `tcp_timer.c`, `tcp_output.c` | RTO and tail loss probe |
//! | `output.rs` | `tcp_output.c` | sending, TSO bursts, EDT pacing, restart after idle |
//! | `rtt.rs` | `tcp_input.c` | the RTT estimator and RTO (RFC 6298) |
//!
//! Model: segments of one MSS are numbered 0, 1, 2, ...; losses are found by
//! RACK (a segment sent before one that was delivered, and older than RTT +
//! reordering window), by a tail loss probe, or by the RTO. This file holds
//! the connection (`struct tcp_sock`), the application writing into it, the
//! start of the transfer and `tcp_ack()`.
//!
//! States: Open → Disorder (SACKs, no loss) → Recovery (PRR down to
//! ssthresh; or the control's own `cong_control`) → Open once `high_seq` is
//! acked; any state → Loss on RTO (cwnd 1, everything outstanding lost); CWR
//! after a tail-loss probe repaired a loss or on an ECN echo
//! (`recovery.rs`).
//!
//! The handshake before `start` is `handshake.rs`'s; its RTT sample seeds
//! the estimator and the min-RTT filter as `tcp_synack_rtt_meas` /
//! `tcp_ack_update_rtt` do.
//!
//! The receiver's window bounds new data (`tcp_snd_wnd_test`: no segment
//! ends beyond `tcp_wnd_end` = snd_una + snd_wnd); every ACK carries it
//! (`tcp_ack_update_window`). TCP timestamps (RFC 7323, on by default in
//! Linux): data carry TSval (ms) and echo the latest ACK's TSval
//! (`ts_recent`, `tcp_replace_ts_recent`); each ACK's echo (`rcv_tsecr`)
//! drives the timestamp undo (`undo.rs`) and the RTT sample of an ACK that
//! acks only retransmitted data (`scoreboard.rs`).
//!
//! Simplifications (documented in docs/simulator.md): no zero-window probing
//! (the receiver's application reads at once, so the window never closes).

use super::output::{Pacer, PACING_SHIFT};
use super::rack::Rack;
use super::rate::DeliveryRate;
use super::recovery::Prr;
use super::undo::Undo;
use super::rtt::RttEstimator;
use super::scoreboard::{AckState, Scoreboard, MIN_RTT_WLEN_US};
pub use super::output::Tx;
pub use super::timer::TimerKind;
use crate::packet::{SackBlock, MSS};
use bloatlab_core::cc::{CaState, CongestionControl, ConnView, CwndEvent, Window};
use bloatlab_core::filter::MinFilter;
use bloatlab_core::stats::NsSamples;
use bloatlab_core::time::{Nanos, NS_PER_SEC, NS_PER_US};

/// An application-limited source (`rate` on a flow) writes every 10 ms what
/// its rate allows: the probe's `-b` writes on the same clock, so both
/// engines offer the same bytes at the same instants. 10 ms is a video
/// frame-ish granularity, coarse enough that the write syscalls cost
/// nothing and fine enough that a 1 Mbit/s source is not one burst per RTT.
pub const APP_TICK: Nanos = bloatlab_schema::scenario::APP_TICK_NS;

pub use bloatlab_schema::scenario::app_ticks;

pub struct Sender {
    pub(super) cc: Box<dyn CongestionControl>,
    /// The control asks to be paced (`SK_PACING_NEEDED`), asked once: a
    /// control's constant, read at every segment sent ([`Self::paced`]).
    pub(super) cc_paces: bool,
    pub w: Window,
    /// Total segments of a finite flow (None: unlimited).
    pub(super) total_segs: Option<u64>,
    pub(super) last_len: u32,
    /// Stop sending new data (the flow's `stop` time passed).
    pub stopped: bool,
    /// An application-limited source: its rate (bit/s) and first write.
    pub(super) app: Option<(u64, Nanos)>,
    /// An on/off application: writes during `on` ticks of every `on + off`
    /// ([`APP_TICK`]s each), silent in between.
    app_onoff: Option<(u64, u64)>,
    /// Slow-start restarts after idle (`tcp_cwnd_restart` calls).
    pub restarts: u64,
    /// Segments the application has written so far (full segments only: a
    /// partial one waits for the next write, as Nagle holds it while data
    /// are in flight).
    pub(super) app_segs: u64,

    /// The send queue snd_una..snd_nxt (`scoreboard.rs`).
    pub(super) sb: Scoreboard,
    /// `tcp_rate.c`'s state, with `tp->delivered` and `tp->lost`.
    pub(super) rate: DeliveryRate,

    pub rtt: RttEstimator,
    /// `icsk_backoff`: RTO doublings since the last RTT sample.
    pub(super) backoff: u32,
    /// `tp->rtt_min`, µs.
    pub(super) min_rtt: MinFilter,

    pub ca_state: CaState,
    /// snd_nxt when the current recovery/CWR/loss episode started.
    pub(super) high_seq: u64,
    pub(super) prr: Prr,
    /// Undo of spurious reductions and F-RTO (`undo.rs`).
    pub(super) undo: Undo,

    pub(super) rack: Rack,
    /// Scratch list of the segments one loss-marking pass marked lost.
    pub(super) newly_lost: Vec<u64>,

    /// snd_nxt after a tail loss probe, until its outcome is known.
    pub(super) tlp_high_seq: Option<u64>,
    /// The probe was a retransmission.
    pub(super) tlp_retrans: bool,

    /// The retransmission timer (Linux `icsk_pending` + `icsk_timeout`).
    pub timer: Option<(Nanos, TimerKind)>,
    /// EDT pacing (`output.rs`).
    pub(super) pacer: Pacer,
    /// TSO/GSO bursts (Linux default); false: one segment per burst.
    pub tso: bool,
    /// Paced although the control does not ask for it: `sch_fq` on the
    /// sending host (it paces every socket at `sk_pacing_rate`), or
    /// `SO_MAX_PACING_RATE` set (the kernel's internal pacing).
    pub pacing: bool,
    pub(super) data_segs_out: u64,

    pub(super) is_cwnd_limited: bool,
    /// Time of the last new-data transmission (`tp->lsndtime`).
    pub(super) lsndtime: Nanos,
    pub(super) max_packets_out: u32,
    pub(super) cwnd_usage_seq: u64,
    /// The end (segment, exclusive) of the write queue's skb at snd_nxt
    /// (`output.rs`, `send_head_skb`).
    pub(super) skb_end: u64,
    /// The end of the skb after it when [`Self::skb_end`]'s skb took the head
    /// of it (`tcp_grow_skb`) and left the rest (0: none; that skb then
    /// starts at `skb_end`, `size_goal` long).
    pub(super) next_skb_end: u64,

    /// `tp->snd_wnd`, bytes: the receiver's window (u64::MAX: no limit, as
    /// for a sender without a receiver in unit tests).
    pub snd_wnd: u64,
    /// `tp->rx_opt.ts_recent`: the TSval (ms) of the latest ACK, echoed in data.
    pub ts_recent: Option<u32>,
    /// `tp->rx_opt.rcv_tsecr` of the ACK being processed (None: it carried no
    /// timestamp option, `saw_tstamp` = 0).
    pub(super) rcv_tsecr: Option<u32>,

    /// RFC 3168 ECN negotiated: data are ECT(0), ECE triggers CWR.
    pub ecn: bool,
    /// `TCP_ECN_QUEUE_CWR`: set CWR on the next new segment.
    pub(super) queue_cwr: bool,

    // statistics
    pub segs_sent: u64,
    pub retrans_segs: u64,
    pub bytes_acked: u64,
    pub rtt_samples_ns: NsSamples,
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
            cc_paces: cc.wants_pacing(),
            cc,
            w: Window::default(),
            total_segs,
            last_len,
            stopped: false,
            app: None,
            app_onoff: None,
            restarts: 0,
            app_segs: 0,
            sb: Scoreboard::default(),
            rate: DeliveryRate::default(),
            rtt: RttEstimator::default(),
            backoff: 0,
            min_rtt: MinFilter::default(),
            ca_state: CaState::Open,
            high_seq: 0,
            prr: Prr::default(),
            undo: Undo::default(),
            rack: Rack::default(),
            newly_lost: Vec::new(),
            tlp_high_seq: None,
            tlp_retrans: false,
            timer: None,
            pacer: Pacer::default(),
            tso: true,
            pacing: false,
            data_segs_out: 0,
            is_cwnd_limited: false,
            lsndtime: 0,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            skb_end: 0,
            next_skb_end: 0,
            snd_wnd: u64::MAX,
            ts_recent: None,
            rcv_tsecr: None,
            ecn: false,
            queue_cwr: false,
            segs_sent: 0,
            retrans_segs: 0,
            bytes_acked: 0,
            rtt_samples_ns: NsSamples::default(),
            done_at: None,
        }
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight()
    }

    /// Packets marked lost so far (`tp->lost`).
    pub fn lost_total(&self) -> u64 {
        self.rate.lost
    }

    /// The min-RTT filter's value in ns (`u64::MAX`: no sample yet).
    pub(super) fn min_rtt_ns(&self) -> Nanos {
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
            delivered: self.rate.delivered,
            delivered_ce: self.rate.delivered_ce,
            lost: self.rate.lost,
            app_limited: self.rate.app_limited,
            srtt: self.rtt.srtt(),
            min_rtt: self.min_rtt_ns(),
            ca_state: self.ca_state,
            is_cwnd_limited: self.cwnd_limited(),
            snd_una: self.sb.una * MSS as u64,
            snd_nxt: self.sb.nxt * MSS as u64,
            prior_cwnd: self.prr.prior_cwnd,
            pacing_shift: PACING_SHIFT,
            lsndtime: self.lsndtime,
            paced: self.paced(),
            wstamp: self.pacer.wstamp,
        }
    }

    /// `tcpi_pacing_rate` in bit/s: the kernel computes it for every socket
    /// (BBR its own, the others [`Self::update_pacing_rate`]) whether or not
    /// anything paces by it.
    pub fn pacing_rate_bps(&self) -> u64 {
        self.w.pacing_rate * 8
    }

    /// Linux `tcpi_delivery_rate`: the latest non-app-limited-dominated rate sample, bit/s.
    pub fn delivery_rate_bps(&self) -> u64 {
        self.rate.delivery_rate_bps()
    }

    /// Linux `tcpi_delivered` (`tp->delivered`): segments delivered, SACKed
    /// or cumulatively acked, each once.
    pub fn delivered_segs(&self) -> u64 {
        self.rate.delivered
    }

    pub fn state_label(&self) -> &'static str {
        self.cc.state_label()
    }

    pub(super) fn has_new_data(&self) -> bool {
        let nxt = self.sb.nxt;
        !self.stopped && self.total_segs.map_or(true, |n| nxt < n) && (self.app.is_none() || nxt < self.app_segs)
    }

    /// `tcp_wnd_end`: the first byte beyond the receiver's window.
    pub(super) fn wnd_end(&self) -> u64 {
        (self.sb.una * MSS as u64).saturating_add(self.snd_wnd)
    }

    /// `tcp_snd_wnd_test` for the segment at snd_nxt: it fits in the window.
    pub(super) fn wnd_allows_new(&self) -> bool {
        self.sb.nxt * MSS as u64 + self.next_len() as u64 <= self.wnd_end()
    }

    /// An ACK for `ack` arrived carrying the window `wnd` (bytes), the
    /// receiver's TSval `tsval` (ms) and its echo `tsecr` (ms), before
    /// [`Self::on_ack`]: `tcp_parse_options` (`rx_opt.saw_tstamp`,
    /// `rcv_tsecr`, read by this ACK's undo and RTT steps),
    /// `tcp_replace_ts_recent` and `tcp_ack_update_window` (the window is
    /// taken from an ACK that advances snd_una, or that offers more; pure
    /// ACKs all carry the receiver's same sequence number).
    pub fn on_window(&mut self, ack: u64, wnd: u32, tsval: u32, tsecr: Option<u32>) {
        self.rcv_tsecr = tsecr;
        if ack < self.sb.una || ack > self.sb.nxt {
            return;
        }
        // tcp_replace_ts_recent: the ACK's sequence number (the receiver's
        // snd_nxt) is never after rcv_wup here, so only tcp_paws_check(0) decides
        if bloatlab_core::kernel::tcp_paws_check(self.ts_recent, tsval) {
            self.ts_recent = Some(tsval);
        }
        if ack > self.sb.una || wnd as u64 > self.snd_wnd {
            self.snd_wnd = wnd as u64;
        }
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

    /// Whether this sender is application-limited by a rate.
    pub fn app_rate(&self) -> Option<u64> {
        self.app.map(|a| a.0)
    }

    pub fn finished(&self) -> bool {
        self.total_segs.is_some_and(|n| self.sb.una >= n)
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
        self.pacer.wstamp = now;
        self.transmit(now, out);
    }

    /// An ACK arrived: `tcp_ack()`, step by step. `sack` holds the SACK
    /// blocks (the first a D-SACK if `dsack`), `ece` the ECN echo.
    pub fn on_ack(&mut self, now: Nanos, ack: u64, sack: &[SackBlock], dsack: bool, ece: bool, out: &mut Vec<Tx>) {
        let ece = ece && self.ecn;
        if ack < self.sb.una || ack > self.sb.nxt {
            return; // old or impossible ACK
        }
        let mut a = AckState::new(self.sb.una, self.in_flight(), self.rate.delivered, self.rate.lost);
        self.undo_check_dsack(sack, dsack, a.prior_una);
        self.sacktag_write_queue(now, ack, sack, dsack, &mut a);
        self.clean_rtt_queue(now, ack, &mut a);
        if self.sb.una > a.prior_una {
            self.undo.rto_retransmits = 0;
        }
        a.dupack = self.sb.una == a.prior_una && !dsack;
        self.ack_update_rtt(now, &mut a);
        self.process_tlp_ack(now, ack, dsack, &a);
        self.ecn_echo(now, ece, &a);
        if self.ack_is_dubious(&a, dsack, ece) {
            self.fastretrans_alert(now, ece, &mut a);
        }
        let delivered = (self.rate.delivered - a.prior_delivered) as u32;
        let lost = (self.rate.lost - a.prior_lost) as u32;
        let min_rtt = self.min_rtt_ns();
        self.rate.gen(now, delivered, lost, &mut a.rs, min_rtt);
        self.cong_control(now, &a, delivered, lost);
        self.set_xmit_timer(now, a.set_xmit_timer);
        self.xmit_recovery(now, out);
        if self.finished() && self.done_at.is_none() {
            self.done_at = Some(now);
            self.timer = None;
        }
    }

    /// `tcp_count_delivered` + `tcp_ca_event` (`tcp_in_ack_event`): count
    /// CE-echoed deliveries, tell the control whether this ACK echoed CE.
    fn ecn_echo(&mut self, now: Nanos, ece: bool, a: &AckState) {
        if !self.ecn {
            return;
        }
        if ece {
            self.rate.delivered_ce += self.rate.delivered - a.prior_delivered;
        }
        let v = self.view(now);
        let ev = if ece { CwndEvent::EcnIsCe } else { CwndEvent::EcnNoCe };
        self.cc.cwnd_event(&v, ev, &mut self.w);
    }

    /// `tcp_cong_control`: the control's own `cong_control` (BBR), or PRR in
    /// CWR/Recovery, or `cong_avoid` on an ACK that advanced snd_una; then
    /// `tcp_update_pacing_rate` for controls that do not set their own.
    fn cong_control(&mut self, now: Nanos, a: &AckState, delivered: u32, lost: u32) {
        let una_advanced = self.sb.una > a.prior_una;
        let v = self.view(now);
        if self.cc.has_cong_control() {
            self.cc.cong_control(&v, &a.rs, &mut self.w);
        } else if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.cwnd_reduction(delivered, lost, una_advanced);
        } else if una_advanced {
            self.cc.cong_avoid(&v, delivered, &mut self.w);
        }
        self.w.cwnd = self.w.cwnd.max(1);
        if !self.cc.has_cong_control() {
            self.update_pacing_rate();
        }
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
