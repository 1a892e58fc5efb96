//! Congestion controls.
//!
//! The boundary follows Linux's `struct tcp_congestion_ops`
//! (`include/net/tcp.h`, v6.x) because the algorithms we model were written
//! against it, and a line-by-line comparison with the kernel is what keeps them
//! honest. It differs in one way: a control never reaches into the socket.
//! It reads a [`ConnView`] (a snapshot of the socket fields Linux controls read)
//! and writes only a [`Window`] (cwnd, ssthresh, the AI counter and the pacing
//! rate: the fields Linux controls write).
//!
//! Hooks and when the TCP endpoint calls them (as `net/ipv4/tcp_input.c` does):
//! - [`CongestionControl::init`]: once, when the connection is established.
//! - [`CongestionControl::pkts_acked`]: on every ACK that (s)acks data, with the RTT sample.
//! - [`CongestionControl::cong_control`]: on every ACK if [`CongestionControl::has_cong_control`]
//!   (BBR); it then owns cwnd and pacing completely.
//! - otherwise, on every ACK: PRR in recovery, else [`CongestionControl::cong_avoid`]
//!   if the window may grow (`tcp_may_raise_cwnd`) and the flow is cwnd-limited.
//! - [`CongestionControl::ssthresh`]: when loss recovery or an RTO starts.
//! - [`CongestionControl::set_state`]: on every change of [`CaState`].
//! - [`CongestionControl::cwnd_event`]: on the events of [`CwndEvent`].
//! - [`CongestionControl::undo_cwnd`]: when a reduction proves spurious.
//!
//! Units: windows are in packets (MSS-sized segments) as in Linux; times are
//! [`Nanos`]; rates are bytes per second (Linux `sk_pacing_rate`). Controls
//! that follow Linux arithmetic in µs convert with [`crate::time::to_us`].
//!
//! One algorithm per file: `reno.rs`, `cubic.rs`, `bbr.rs`. Add a control by
//! adding a file, implementing the trait and adding it to [`CcKind`].

use crate::time::Nanos;

pub mod bbr;
pub mod bbr3;
pub mod bbr_common;
pub mod cubic;
pub mod dctcp;
pub mod newreno;
pub mod reno;
pub mod vegas;
pub mod westwood;
#[cfg(test)]
mod test_drive;
#[cfg(test)]
mod test_pipe;

/// Linux `enum tcp_ca_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    /// Nothing bad has been observed.
    Open,
    /// SACKs or duplicate ACKs seen, no loss marked yet.
    Disorder,
    /// cwnd reduced because of ECN (or local congestion).
    Cwr,
    /// Fast recovery after loss detection (RACK / dupthresh).
    Recovery,
    /// Retransmission timeout fired: everything outstanding presumed lost.
    Loss,
}

/// Linux `enum tcp_ca_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CwndEvent {
    /// First transmission when no packet was in flight (restart after idle).
    TxStart,
    /// cwnd was restarted after idle (RFC 2861 slow-start restart).
    CwndRestart,
    /// End of a CWR or Recovery episode.
    CompleteCwr,
    /// An RTO fired.
    Loss,
    /// ECN: ACK without ECE.
    EcnNoCe,
    /// ECN: ACK with ECE.
    EcnIsCe,
}

/// Linux `struct ack_sample`: given to [`CongestionControl::pkts_acked`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AckSample {
    /// Packets newly cumulatively acked or sacked by this ACK.
    pub pkts_acked: u32,
    /// RTT sample of this ACK in ns, or -1 if none (only retransmitted data acked).
    pub rtt: i64,
    /// Packets in flight before this ACK.
    pub in_flight: u32,
}

/// Linux `struct rate_sample` (`net/ipv4/tcp_rate.c`): a delivery-rate sample
/// per draft-cheng-iccrg-delivery-rate-estimation.
#[derive(Debug, Clone, Copy)]
pub struct RateSample {
    /// Time the packet that produced this sample was sent... the `first_tx_mstamp`
    /// of the sending flight (Linux `prior_mstamp`).
    pub prior_mstamp: Nanos,
    /// `tp->delivered` when that packet was sent.
    pub prior_delivered: u64,
    /// Packets delivered over `interval`, or -1 if no valid sample.
    pub delivered: i64,
    /// Sampling interval in ns: max(send interval, ack interval); -1 if invalid.
    pub interval: i64,
    /// RTT of the most recently sent packet acked by this ACK, ns; -1 if none.
    pub rtt: i64,
    /// Packets newly marked lost by this ACK.
    pub losses: u32,
    /// Packets newly (s)acked by this ACK.
    pub acked_sacked: u32,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// The sample was taken while the sender was application-limited.
    pub is_app_limited: bool,
    /// The sample is from a retransmitted packet.
    pub is_retrans: bool,
    /// The receiver (probably) delayed this ACK.
    pub is_ack_delayed: bool,
    /// Packets delivered with CE marks over the interval (DCTCP, BBRv3).
    pub delivered_ce: i64,
    /// Packets in flight when the packet that produced this sample was
    /// sent, itself included (BBRv3 tree's `rs->tx_in_flight`, from the
    /// skb's `tx.in_flight` that `tcp_set_tx_in_flight` records); 0: none.
    pub tx_in_flight: u32,
    /// `tp->lost` when that packet was sent (`rs->prior_lost`, the skb's `tx.lost`).
    pub prior_lost: u64,
    /// Packets marked lost since that packet was sent (`rs->lost` =
    /// `tp->lost - rs->prior_lost`); 0 when the sample is invalid.
    pub lost: u32,
}

/// What the BBRv3 tree's `skb_marked_lost` hook reads from a segment just
/// marked lost (`TCP_SKB_CB(skb)->tx` and `tp->lost` at that moment).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostSkb {
    /// Packets in flight when the segment was sent, itself included (`tx.in_flight`).
    pub tx_in_flight: u32,
    /// Packets marked lost since it was sent, itself included (`tp->lost - tx.lost`).
    pub lost: u32,
    /// It was sent while application-limited (`tx.is_app_limited`).
    pub is_app_limited: bool,
    /// It carries rate-sampling state (`tx.delivered_mstamp != 0`).
    pub has_tx_state: bool,
    /// Packets it holds (`tcp_skb_pcount`).
    pub pcount: u32,
}

impl Default for RateSample {
    fn default() -> Self {
        RateSample {
            prior_mstamp: 0,
            prior_delivered: 0,
            delivered: -1,
            interval: -1,
            rtt: -1,
            losses: 0,
            acked_sacked: 0,
            prior_in_flight: 0,
            is_app_limited: false,
            is_retrans: false,
            is_ack_delayed: false,
            delivered_ce: 0,
            tx_in_flight: 0,
            prior_lost: 0,
            lost: 0,
        }
    }
}

/// The socket fields a Linux congestion control reads, as of the event.
#[derive(Debug, Clone, Copy)]
pub struct ConnView {
    /// Current time (Linux `tp->tcp_mstamp` / `tcp_jiffies32`), ns.
    pub now: Nanos,
    /// Sender MSS in bytes (`tp->mss_cache`).
    pub mss: u32,
    /// `tcp_packets_in_flight(tp)`: packets_out - (sacked_out + lost_out) + retrans_out.
    pub packets_in_flight: u32,
    /// Total packets delivered (cumulatively or selectively acked), `tp->delivered`.
    pub delivered: u64,
    /// Total packets delivered with CE marks, `tp->delivered_ce`.
    pub delivered_ce: u64,
    /// Total packets marked lost, `tp->lost`.
    pub lost: u64,
    /// `tp->app_limited`: delivered count at which app-limitation ends, 0 if not limited.
    pub app_limited: u64,
    /// Smoothed RTT in ns (0 before the first sample).
    pub srtt: Nanos,
    /// Windowed min RTT kept by the TCP endpoint (`tcp_min_rtt`), ns; u64::MAX if none.
    pub min_rtt: Nanos,
    /// Current congestion-avoidance state.
    pub ca_state: CaState,
    /// `tcp_is_cwnd_limited()`: the last flight was limited by cwnd, not by the application.
    pub is_cwnd_limited: bool,
    /// Oldest unacknowledged sequence number, bytes.
    pub snd_una: u64,
    /// Next sequence number to send, bytes.
    pub snd_nxt: u64,
    /// cwnd before the last reduction (`tp->prior_cwnd`), for undo.
    pub prior_cwnd: u32,
    /// `sk_pacing_shift`: TSQ/TSO sizing to ~1/2^shift s of data (10 in Linux).
    pub pacing_shift: u32,
    /// Time of the last data transmission (`tp->lsndtime`), ns. For
    /// [`CwndEvent::TxStart`] it is the transmission *before* the one that
    /// raised the event (Linux fires the event before updating it); CUBIC
    /// shifts its epoch by `now - lsndtime` after idle.
    pub lsndtime: Nanos,
    /// The socket is paced (`sk_pacing_status != SK_PACING_NONE`): by its
    /// control (BBR), by `sch_fq` on the host or by `SO_MAX_PACING_RATE`.
    pub paced: bool,
    /// `tp->tcp_wstamp_ns`: the earliest departure time (EDT) of the next
    /// skb, ns — the last skb's departure plus its length at the pacing
    /// rate. At or before `now` when nothing waits for a pacing slot (0 on a
    /// new socket). BBR's `bbr_packets_in_net_at_edt` reads it.
    pub wstamp: Nanos,
}

impl ConnView {
    /// A quiet connection at time `now` (for tests and initialisation).
    pub fn at(now: Nanos) -> ConnView {
        ConnView {
            now,
            mss: 1448,
            packets_in_flight: 0,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            app_limited: 0,
            srtt: 0,
            min_rtt: u64::MAX,
            ca_state: CaState::Open,
            is_cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
            prior_cwnd: 0,
            pacing_shift: 10,
            lsndtime: now,
            paced: false,
            wstamp: 0,
        }
    }
}

/// What a control writes: Linux `tp->snd_cwnd`, `snd_ssthresh`,
/// `snd_cwnd_cnt`, `snd_cwnd_clamp` and `sk->sk_pacing_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Slow-start threshold, packets (`TCP_INFINITE_SSTHRESH` = 0x7fffffff initially).
    pub ssthresh: u32,
    /// Additive-increase counter (`snd_cwnd_cnt`), packets acked since the last +1.
    pub cwnd_cnt: u32,
    /// Upper bound on cwnd (`snd_cwnd_clamp`).
    pub cwnd_clamp: u32,
    /// Pacing rate in bytes/s; 0 = not paced. Only honoured if the control
    /// [`CongestionControl::wants_pacing`] (Linux: `SK_PACING_NEEDED`).
    pub pacing_rate: u64,
}

/// Linux `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// Linux `TCP_INIT_CWND` (RFC 6928 IW10), packets.
pub const INIT_CWND: u32 = 10;

impl Default for Window {
    fn default() -> Self {
        Window { cwnd: INIT_CWND, ssthresh: INFINITE_SSTHRESH, cwnd_cnt: 0, cwnd_clamp: u32::MAX / 2, pacing_rate: 0 }
    }
}

impl Window {
    /// `tcp_in_slow_start()`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_current_ssthresh()` (`include/net/tcp.h`): during a cwnd
    /// reduction (CWR or Recovery, `tcp_in_cwnd_reduction`) ssthresh as it
    /// is, otherwise at least 3/4 of cwnd. Vegas and the endpoint's restart
    /// after idle (`tcp_cwnd_restart`) use it.
    pub fn current_ssthresh(&self, ca_state: CaState) -> u32 {
        if matches!(ca_state, CaState::Cwr | CaState::Recovery) {
            self.ssthresh
        } else {
            self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2))
        }
    }
}

/// `sysctl_tcp_min_tso_segs` default: the smallest TSO/GSO burst, segments.
pub const MIN_TSO_SEGS: u32 = 2;
/// `GSO_LEGACY_MAX_SIZE` (= `sk_gso_max_size` without BIG TCP), bytes.
pub const GSO_MAX_SIZE: u64 = 65536;
/// `sysctl_tcp_tso_rtt_log` default: min_rtt in units of 2^9 µs (512 µs).
pub const TSO_RTT_LOG: u32 = 9;

/// `tcp_tso_autosize` (`net/ipv4/tcp_output.c`, v6.x): how many segments
/// one TSO/GSO burst carries — about 1/2^`pacing_shift` s of data at the
/// pacing rate (1 ms at shift 10), plus, on short paths, 64 KB >> (min_rtt /
/// 512 µs), at most 64 KB, at least `min_tso`. `pacing_rate` in bytes/s,
/// `min_rtt_us` u64::MAX when unknown.
pub fn tso_autosize(pacing_rate: u64, pacing_shift: u32, min_rtt_us: u64, mss: u32, min_tso: u32) -> u32 {
    let mut bytes = pacing_rate >> pacing_shift.min(63);
    let r = min_rtt_us >> TSO_RTT_LOG;
    if r < 32 {
        bytes += GSO_MAX_SIZE >> r;
    }
    let bytes = bytes.min(GSO_MAX_SIZE);
    ((bytes / mss.max(1) as u64) as u32).max(min_tso)
}

/// Linux `struct tcp_congestion_ops`, minus the socket. See the module docs
/// for when each hook runs.
pub trait CongestionControl: Send {
    /// The name as in `net.ipv4.tcp_congestion_control` / `TCP_CONGESTION`.
    fn name(&self) -> &'static str;

    /// Connection established (`init`).
    fn init(&mut self, _c: &ConnView, _w: &mut Window) {}

    /// New slow-start threshold on loss (`ssthresh`), packets.
    fn ssthresh(&mut self, c: &ConnView, w: &Window) -> u32;

    /// Window growth on an ACK outside recovery (`cong_avoid`); `acked` packets.
    fn cong_avoid(&mut self, _c: &ConnView, _acked: u32, _w: &mut Window) {}

    /// Whether this control replaces cong_avoid/PRR with [`Self::cong_control`].
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Full control of cwnd and pacing on every ACK (`cong_control`, BBR).
    fn cong_control(&mut self, _c: &ConnView, _rs: &RateSample, _w: &mut Window) {}

    /// One segment was just marked lost, `tp->lost` already counting it
    /// (the BBRv3 tree's `skb_marked_lost`, called from `tcp_mark_skb_lost`
    /// through `tcp_notify_skb_loss_event`, before this ACK's `cong_control`).
    fn skb_marked_lost(&mut self, _c: &ConnView, _skb: &LostSkb, _w: &Window) {}

    /// The CA state is about to change to `new_state` (`set_state`).
    fn set_state(&mut self, _c: &ConnView, _new_state: CaState, _w: &mut Window) {}

    /// A [`CwndEvent`] happened (`cwnd_event`).
    fn cwnd_event(&mut self, _c: &ConnView, _ev: CwndEvent, _w: &mut Window) {}

    /// Per-ACK hook with the RTT sample (`pkts_acked`).
    fn pkts_acked(&mut self, _c: &ConnView, _s: &AckSample, _w: &mut Window) {}

    /// cwnd to restore when a reduction was spurious (`undo_cwnd`);
    /// Linux default `tcp_reno_undo_cwnd`: max(cwnd, prior_cwnd).
    fn undo_cwnd(&mut self, c: &ConnView, w: &Window) -> u32 {
        w.cwnd.max(c.prior_cwnd)
    }

    /// Whether the sender must pace at [`Window::pacing_rate`] (Linux
    /// `SK_PACING_NEEDED`, set by BBR's init). Loss-based controls leave
    /// pacing to an `fq` qdisc, as Linux does. A constant of the control: the
    /// simulator's sender asks once, when it is made.
    fn wants_pacing(&self) -> bool {
        false
    }

    /// `min_tso_segs` (Linux `tcp_congestion_ops.min_tso_segs`, else
    /// `sysctl_tcp_min_tso_segs`): the smallest TSO/GSO burst.
    fn min_tso_segs(&self, _w: &Window) -> u32 {
        MIN_TSO_SEGS
    }

    /// Short state label for time series and debugging (BBR: "STARTUP", ...).
    fn state_label(&self) -> &'static str {
        ""
    }

    /// Whether the endpoint should negotiate ECN and send data as ECT(0)
    /// (Linux `TCP_CONG_NEEDS_ECN`, or `tcp_ecn` for controls that use it
    /// when present, as BBRv3 does).
    fn wants_ecn(&self) -> bool {
        false
    }

    /// Whether the receiver should echo CE per packet (DCTCP's
    /// `dctcp_ece_ack_update`: an immediate ACK whenever the CE state of
    /// arriving data flips) instead of RFC 3168's ECE latch until CWR.
    fn wants_accurate_ce_echo(&self) -> bool {
        false
    }
}

/// One control as `bloatlab ccs` lists it: its Linux name, the source the
/// model follows, whether mainline Linux ships it (the emulator's kernel flows
/// can run only those this machine's kernel offers), and what it does.
#[derive(Debug, Clone, Copy)]
pub struct CcInfo {
    pub name: &'static str,
    pub source: &'static str,
    pub mainline: bool,
    pub doc: &'static str,
}

/// Every congestion control the simulator knows: the registry. Its names are
/// Linux's (`net.ipv4.tcp_congestion_control`, the scenario's `cc`), its order
/// is the order `bloatlab ccs` lists them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumString, strum::IntoStaticStr, strum::Display, strum::EnumIter)]
#[strum(serialize_all = "lowercase")]
pub enum CcKind {
    Reno,
    Cubic,
    Bbr,
    NewReno,
    Vegas,
    Westwood,
    Dctcp,
    Bbr3,
}

impl CcKind {
    /// Every control, in listing order.
    pub fn all() -> impl Iterator<Item = CcKind> {
        <CcKind as strum::IntoEnumIterator>::iter()
    }

    /// The Linux name (`"cubic"`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// How `bloatlab ccs` describes it.
    pub fn info(self) -> CcInfo {
        let (source, mainline, doc) = match self {
            CcKind::Reno => ("RFC 5681, Linux net/ipv4/tcp_cong.c", true,
                "loss-based AIMD: +1 segment per RTT, halve on loss (Linux's built-in fallback)"),
            CcKind::Cubic => ("Linux net/ipv4/tcp_cubic.c (v6.18), RFC 9438", true,
                "loss-based, window grows as a cubic of the time since the last loss, x0.7 on loss; HyStart; Linux's default"),
            CcKind::Bbr => ("Linux net/ipv4/tcp_bbr.c (v6.x)", true,
                "BBRv1: model-based, paces at the max-filtered delivery rate, cwnd 2 BDP; ignores random loss; long-term sampling behind policers"),
            CcKind::NewReno => ("RFC 6582", false,
                "Reno with NewReno's partial-ACK fast recovery (no SACK), as ns-3 and the RFCs model TCP"),
            CcKind::Vegas => ("Linux net/ipv4/tcp_vegas.c", true,
                "delay-based: keeps alpha..beta (2..4) segments queued at the bottleneck; yields to loss-based flows"),
            CcKind::Westwood => ("Linux net/ipv4/tcp_westwood.c", true,
                "Westwood+: on loss, sets ssthresh from the estimated bandwidth x min RTT instead of halving"),
            CcKind::Dctcp => ("Linux net/ipv4/tcp_dctcp.c, RFC 8257", true,
                "ECN-based: reduces cwnd in proportion to the fraction of CE-marked bytes (needs ecn = true and a marking qdisc)"),
            CcKind::Bbr3 => ("github.com/google/bbr branch v3, draft-ietf-ccwg-bbr", false,
                "BBRv3: BBR with loss and ECN bounds (inflight_hi/lo), fairer to CUBIC; not in mainline Linux"),
        };
        CcInfo { name: self.name(), source, mainline, doc }
    }

    /// A new instance. `seed` feeds the controls that draw random numbers
    /// (BBR's initial gain-cycle phase), so that a run is a function of its
    /// seed; without one they use their fixed default seed.
    pub fn build(self, seed: Option<u64>) -> Box<dyn CongestionControl> {
        match self {
            CcKind::Reno => Box::new(reno::Reno::default()),
            CcKind::Cubic => Box::new(cubic::Cubic::default()),
            CcKind::Bbr => match seed {
                Some(s) => Box::new(bbr::Bbr::with_seed(s)),
                None => Box::new(bbr::Bbr::default()),
            },
            CcKind::NewReno => Box::new(newreno::NewReno),
            CcKind::Vegas => Box::new(vegas::Vegas::default()),
            CcKind::Westwood => Box::new(westwood::Westwood::default()),
            CcKind::Dctcp => Box::new(dctcp::Dctcp::default()),
            CcKind::Bbr3 => match seed {
                Some(s) => Box::new(bbr3::Bbr3::with_seed(s)),
                None => Box::new(bbr3::Bbr3::default()),
            },
        }
    }
}

/// The control catalogue, in the order `bloatlab ccs` lists it.
pub fn catalog() -> Vec<CcInfo> {
    CcKind::all().map(CcKind::info).collect()
}

/// The controls the simulator knows, in listing order.
pub fn names() -> Vec<&'static str> {
    CcKind::all().map(CcKind::name).collect()
}

/// A control by its Linux name, or None.
pub fn by_name(name: &str) -> Option<Box<dyn CongestionControl>> {
    name.parse::<CcKind>().ok().map(|k| k.build(None))
}

/// Like [`by_name`], for controls that draw random numbers (BBR's initial
/// gain-cycle phase): seeded so that a run is a function of its seed.
pub fn by_name_seeded(name: &str, seed: u64) -> Option<Box<dyn CongestionControl>> {
    name.parse::<CcKind>().ok().map(|k| k.build(Some(seed)))
}

#[cfg(test)]
mod catalog_tests {
    use super::*;

    #[test]
    fn every_catalogued_control_is_built_by_name_and_nothing_else_is() {
        let catalog = catalog();
        for c in &catalog {
            assert!(by_name(c.name).is_some(), "{} is catalogued but by_name does not build it", c.name);
            assert!(!c.doc.is_empty() && !c.source.is_empty(), "{}", c.name);
        }
        let mut n = names();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), catalog.len(), "a name twice in the catalogue");
        for unknown in ["htcp", "BBR", ""] {
            assert!(by_name(unknown).is_none());
        }
    }

    #[test]
    fn the_registry_lists_linux_names_in_catalogue_order_and_each_control_answers_to_its_name() {
        assert_eq!(names(), ["reno", "cubic", "bbr", "newreno", "vegas", "westwood", "dctcp", "bbr3"]);
        for k in CcKind::all() {
            assert_eq!(k.name().parse::<CcKind>(), Ok(k));
            assert_eq!(k.build(None).name(), k.name());
            assert_eq!(k.build(Some(7)).name(), k.name());
            assert_eq!(k.info().name, k.name());
        }
        let mainline: Vec<&str> = catalog().iter().filter(|c| c.mainline).map(|c| c.name).collect();
        assert_eq!(mainline, ["reno", "cubic", "bbr", "vegas", "westwood", "dctcp"]);
    }

    #[test]
    fn tso_autosize_is_one_ms_of_data_plus_a_short_path_allowance() {
        // 12.5 MB/s >> 10 = 12 207 B: 8 segments on a 40 ms path (40 000 µs >> 9 = 78: no allowance)
        assert_eq!(tso_autosize(12_500_000, 10, 40_000, 1448, 2), 8);
        // 1 ms path: + 64 KB >> 1 = 32 768 B -> 44 975 B = 31 segments
        assert_eq!(tso_autosize(12_500_000, 10, 1_000, 1448, 2), 31);
        // 100 µs path: + 64 KB, capped at 64 KB = 45 segments
        assert_eq!(tso_autosize(12_500_000, 10, 100, 1448, 2), 45);
        // slow: the minimum
        assert_eq!(tso_autosize(100_000, 10, u64::MAX, 1448, 2), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_ssthresh_keeps_ssthresh_in_a_reduction_and_is_at_least_three_quarters_of_cwnd_otherwise() {
        let w = Window { cwnd: 80, ssthresh: 50, ..Window::default() };
        assert_eq!(w.current_ssthresh(CaState::Cwr), 50);
        assert_eq!(w.current_ssthresh(CaState::Recovery), 50);
        // 80 >> 1 + 80 >> 2 = 60; Loss is not a cwnd reduction in tcp_in_cwnd_reduction
        assert_eq!(w.current_ssthresh(CaState::Open), 60);
        assert_eq!(w.current_ssthresh(CaState::Loss), 60);
        let w = Window { cwnd: 80, ssthresh: 70, ..Window::default() };
        assert_eq!(w.current_ssthresh(CaState::Disorder), 70);
    }
}
