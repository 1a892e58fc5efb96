//! The three MAC queueing designs of a Linux access point, and the station
//! scheduler that picks whose aggregate goes to the hardware next.
//!
//! Sources (Linux):
//! - `legacy` (before 4.9): the interface qdisc (`pfifo_fast`, 1000 packets,
//!   or whatever is configured) above ath9k's own per-station (per-TID)
//!   software queues, which take frames from the qdisc until
//!   `ATH_MAX_QDEPTH` = 512/4 − 5 = 123 frames are pending in the driver
//!   (`drivers/net/wireless/ath/ath9k/ath9k.h`, `ath_tx_start`); the driver
//!   serves stations round robin, one aggregate per turn (`ath_txq_schedule`).
//! - `fq` (4.9, commit 50f08edf9809 "ath9k: Switch to using mac80211
//!   intermediate software queues"): no qdisc; mac80211's per-station TXQs
//!   are fq_codel (`include/net/fq_impl.h`, `net/mac80211/tx.c`
//!   `ieee80211_txq_setup_flows`: quantum 300 B, limit 8192 packets, memory
//!   4 MiB without VHT, CoDel target 20 ms, interval 100 ms, ECN on), the
//!   aggregate is built at dequeue time and the hardware holds at most
//!   `ATH_AGGR_MIN_QDEPTH` = 2 aggregates (Minstrel-HT probes not counted,
//!   `bf_is_ampdu_not_probing`); stations still take turns per aggregate.
//!   (50f08edf9809 reached mainline in 4.10: the stable bot's list of commits missing from
//!   v4.9.217 names it; the design is still called "4.9" after seed 000.)
//!
//! Whose turn it is in `legacy` and `fq` (ath9k before 63fefa050477: the `-` lines of that
//! commit, read in LEDE's copy `344-ath9k-Introduce-airtime-fairness-scheduling-between-.patch`,
//! and `xmit.c` of 3.x-4.8): `ath_txq_schedule` runs at every frame handed to the driver
//! (`ath_tx_start` ≤ 4.9, `ath9k_wake_tx_queue` 4.10) and every TX completion
//! (`ath_tx_process_buffer`); it takes the station at the head of the list off it
//! (`list_del_init`), lets `ath_tx_sched_aggr` send one aggregate (or burst) and puts the
//! station back at the tail if it has frames left (`ath_tx_queue_tid`); a station refused
//! because its kind of entry is at its limit in the hardware queue (`*stop = true`) goes back
//! to the tail as well — it loses its turn — and the call ends. Every call while the hardware
//! queue is full thus moves the list on by one station. 63fefa050477 (`airtime`) leaves the
//! refused station at the head (`goto out`). There is one list (per access category): a station
//! that becomes active joins it at the tail (`ath_tx_queue_tid`: `list_add_tail`), and one that
//! its turn emptied leaves it at once (re-queued only if `ath_tid_has_buffered`); nothing serves
//! a newly active station first before 63fefa050477's `acq_new`. On mac80211's TXQs (4.10) the
//! refusal comes after `ath_tx_sched_aggr` took the station's next frame, which waits at the
//! tail of the TID's retry queue (`__skb_queue_tail(&tid->retry_q, ...)`), outside fq_codel
//! ([`Node::refused`]; checked in LEDE's copy of 50f08edf9809,
//! `337-ath9k-Switch-to-using-mac80211-intermediate-software.patch`, lede-project/source fe7fdd3bb4).
//! - `airtime` (4.11, commit 63fefa050477 "ath9k: Introduce airtime fairness
//!   scheduling between stations"): `fq` plus a deficit round robin across
//!   stations in airtime: each station has a deficit (µs); a station at the
//!   head of the list whose deficit is ≤ 0 gets `ATH_AIRTIME_QUANTUM` = 300 µs
//!   (× its weight here, as mac80211's later `airtime_weight`) and goes to the
//!   tail of the old list; the airtime of every transmission *to* and
//!   reception *from* a station is subtracted from its deficit: for a transmission
//!   the PPDU's duration per try (`ath_tx_count_airtime`, `ath_pkt_duration`), for a
//!   reception each MPDU received whole on its own, preamble included
//!   (`ath_rx_count_airtime` per frame of `ath_rx_tasklet`), never the SIFS and
//!   ACK/BlockAck after it; either count leaves a station whose deficit is ≤ 0 on the
//!   old list, idle or not (`__ath_tx_queue_tid`), where it earns its quanta back
//!   ([`Node::count_airtime`]). Newly backlogged stations with a positive deficit are
//!   served before old ones (`acq_new`), as in fq_codel, others join the old list's
//!   tail (`__ath_tx_queue_tid`); a new station that empties moves to the old list once
//!   (so it cannot stay new forever), an old one that empties leaves. The loop
//!   (`ath_txq_schedule`, read in a 4.11-4.16 `xmit.c`) runs whole at every call, a full
//!   hardware queue included: spent heads are credited and rotated (`goto begin`) until
//!   a station with a positive deficit and frames is reached, which a full queue refuses,
//!   or one past its block-ack window, which ends the call; either keeps the head.
//!
//! In every design an 802.11b station (no aggregation) takes its turn as ath9k gives it one:
//! a burst of up to 2 single frames (`ath_tx_form_burst`), while fewer than 8 entries are in
//! the hardware queue (`ATH_NON_AGGR_MIN_QDEPTH` against `axq_depth`), where an HT station's
//! A-MPDU waits while 2 A-MPDUs are (`ATH_AGGR_MIN_QDEPTH` against `axq_ampdu_depth`);
//! `xmit.c` `ath_tx_sched_aggr` and `ath_txq_schedule` (4.9-4.11 and later alike).
//!
//! The fq_codel of `fq`/`airtime` is the core's [`FqCodel`] (one CoDel per
//! flow, [`crate::qdisc::codel`]), not a copy, with mac80211's rule for the
//! backlog CoDel compares with its `mtu`: the flow's own (`fq_tin_dequeue_func`
//! passes `&flow->backlog`) against an `mtu` mac80211 never sets (0), so a
//! flow's last queued packet (a ping, a lone ACK) is never dropped, where
//! sch_fq_codel compares the whole qdisc's with 1514 B. Differences from mac80211,
//! on purpose: each station's TXQ has its own 1024 hash buckets, its own
//! packet limit (8192) and memory limit (4 MiB) — in mac80211 the 4096
//! buckets and both limits are shared by all TXQs; the per-station CoDel
//! parameters of `sta_update_codel_params` (50 ms/300 ms for stations below
//! 6 Mbit/s × stations, removed again in 2023) are not modelled.
//!
//! `airtime` with AQL ([`super::aql`], `[wifi.aql]`): a driver that opts in
//! to mac80211's Airtime Queue Limits. The station scheduler above decides
//! whose frames leave the TXQs; they leave while AQL lets them (the driver
//! pulls until `ieee80211_tx_dequeue` refuses, as mt76 does), into a
//! per-station firmware queue, and the firmware builds aggregates from those
//! queues, stations in turn per aggregate (an assumption: the firmware's own
//! order is not public), at most [`HW_AGGREGATES`] in the radio.

use super::airtime::{mpdu_bytes, psdu_bytes, subframe_padding, Phy, AMPDU_DELIMITER, BLOCK_ACK_WINDOW, MAX_AMPDU_FRAMES};
use super::aql::{expected_airtime_us, stored_estimate_us, AqlConfig, Pending};
use super::minstrel::{Minstrel, RateChain, Series, MAX_RATES};
use crate::qdisc::codel::CodelParams;
use crate::qdisc::fifo::Fifo;
use crate::qdisc::fq_codel::{CodelBacklog, FqCodel};
use crate::qdisc::{Events, Limit, Packet, Qdisc};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::{BTreeSet, VecDeque};

/// The queueing design of the access point (and of the stations' own uplink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    Legacy,
    Fq,
    Airtime,
}

impl Design {
    pub const NAMES: [&'static str; 3] = ["legacy", "fq", "airtime"];
    pub fn from_name(s: &str) -> Option<Design> {
        match s {
            "legacy" => Some(Design::Legacy),
            "fq" => Some(Design::Fq),
            "airtime" => Some(Design::Airtime),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        Design::NAMES[self as usize]
    }
}

/// Frames the legacy driver holds before it stops taking from the qdisc
/// (`ATH_MAX_QDEPTH` = `ATH_TXBUF` 512 / 4 − `ATH_TXBUF_RESERVE` 5).
pub const LEGACY_DRIVER_FRAMES: usize = 123;
/// Aggregates queued in the hardware at most, the one on the air included
/// (`ATH_AGGR_MIN_QDEPTH`, against `axq_ampdu_depth`, which
/// `ath_tx_txqaddbuf` increments and `ath_tx_process_buffer` decrements at
/// completion).
pub const HW_AGGREGATES: usize = 2;
/// Entries (A-MPDUs and single frames) in the hardware queue below which ath9k still
/// hands it frames of a station without aggregation, an 802.11b one (`ATH_NON_AGGR_MIN_QDEPTH`
/// against `axq_depth` in `ath_tx_sched_aggr`): 8.
pub const NON_AGGR_DEPTH: usize = 8;
/// Frames of a station without aggregation that ath9k sends per turn, each its own PPDU
/// (`ath_tx_form_burst`: `if (nframes >= 2) break`): 2.
pub const NON_AGGR_BURST: usize = 2;
/// Airtime deficit added per round (`ATH_AIRTIME_QUANTUM`): 300 µs.
pub const AIRTIME_QUANTUM_NS: i64 = 300_000;
/// mac80211 TXQ fq_codel: DRR quantum (bytes, `fq_init`).
pub const TXQ_QUANTUM: u32 = 300;
/// mac80211 TXQ packet limit (`fq_init`: 8192) and memory limit without VHT (4 MiB).
pub const TXQ_LIMIT: u32 = 8192;
pub const TXQ_MEMORY: u32 = 4 << 20;
/// Hash buckets per station TXQ (mac80211 shares 4096 among all TXQs).
pub const TXQ_FLOWS: u32 = 1024;
/// mac80211 CoDel: target 20 ms, interval 100 ms, ECN (`ieee80211_txq_setup_flows`).
pub const TXQ_TARGET_NS: u64 = 20_000_000;
pub const TXQ_INTERVAL_NS: u64 = 100_000_000;
/// mac80211 CoDel `mtu`: 0 bytes. `codel_params_init` does not set it and
/// neither `ieee80211_txq_setup_flows` nor `sta_info_alloc` does (zeroed
/// allocations), so "no drop while the backlog is at most one MTU" becomes
/// "no drop while the flow holds nothing but the packet being dequeued".
pub const TXQ_CODEL_MTU: u32 = 0;

/// A frame inside the MAC: the caller's payload, its destination (station
/// index; ignored on a station's uplink) and how often it was retried.
#[derive(Debug, Clone)]
pub struct Frame<T> {
    /// The payload; None once the receiver has it but the sender does not know
    /// (the BlockAck that acknowledged it was lost): the sender still retries
    /// the MPDU, the receiver discards the duplicate.
    pub data: Option<T>,
    pub sta: u32,
    /// Tries charged against [`super::RETRY_LIMIT`]: as ath9k's `fi->retries`,
    /// every hardware try of a failed transmission (`ath_tx_complete_aggr`
    /// adds `ts_longretry + 1` and the counts of the series before the last).
    pub retries: u32,
    /// 802.11 sequence number, assigned when the frame first goes into an
    /// aggregate (ath9k `ath_tx_setup_buffer`); [`NO_SEQ`] before.
    pub seq: u64,
    /// AQL: the expected airtime this frame added to its station's pending
    /// airtime when it left the TXQ (the skb's `tx_time_est`), µs; 0 without AQL.
    pub air_us: u32,
    /// Minstrel-HT made this frame a probe ([`Minstrel::sample`]: its sample rate, tried
    /// once) when rate control saw it: as it left the mac80211 TXQ (`fq`, `airtime`), or
    /// as it entered the driver (`legacy`). The flag stays with the frame (the skb's
    /// `IEEE80211_TX_CTL_RATE_CTRL_PROBE`) through the retry queue and retries.
    pub probe: Option<Series>,
}

/// The sequence number of a frame not yet put into an aggregate.
pub const NO_SEQ: u64 = u64::MAX;

/// One aggregate handed to the hardware.
#[derive(Debug)]
pub struct Aggregate<T> {
    /// Station index (the destination for the AP, the sender for a station).
    pub sta: usize,
    pub frames: Vec<Packet<Frame<T>>>,
    pub psdu: u64,
    /// Minstrel-HT: the retry chain it is sent with and the tries so far
    /// (None: the station's fixed PHY rate).
    pub chain: Option<ChainTx>,
    /// Its station had nothing left at this node once it was built (TXQ or driver queue, retry
    /// queue, with AQL the firmware queue): under 4.10's list (`legacy`, `fq`) the turn took the
    /// station off the list ([`Node::turn_done`]).
    pub emptied: bool,
}

impl<T> Aggregate<T> {
    /// A Minstrel-HT probe: one MPDU at a sample rate (`IEEE80211_TX_CTL_RATE_CTRL_PROBE`).
    pub fn probe(&self) -> bool {
        self.chain.is_some_and(|c| c.chain.probe)
    }

    /// Whether ath9k counts it in `axq_ampdu_depth` (against [`HW_AGGREGATES`]): an HT
    /// station's A-MPDU that is not a probe. `ath_tx_txqaddbuf` increments the depth and
    /// `ath_tx_process_buffer` decrements it only for `bf_is_ampdu_not_probing(bf)`
    /// (`bf_isampdu(bf) && !(info->flags & IEEE80211_TX_CTL_RATE_CTRL_PROBE)`, unchanged
    /// from Linux 3.x through 6.18): a probe, sent unaggregated, takes no A-MPDU slot, so
    /// the scheduler goes on to the next station at once.
    pub fn counts_as_ampdu(&self, phy: &Phy) -> bool {
        !phy.non_aggr() && !self.probe()
    }
}

/// An A-MPDU's progress along its retry chain (the hardware's multi-rate retry).
#[derive(Debug, Clone, Copy)]
pub struct ChainTx {
    pub chain: RateChain,
    /// The series being tried.
    pub series: usize,
    /// Tries made at each series.
    pub tries: [u32; MAX_RATES],
}

impl ChainTx {
    /// The PHY of the current try.
    pub fn phy(&self) -> Phy {
        self.chain.phy(self.series)
    }

    /// One try failed (no BlockAck): count it and move along the chain;
    /// false when the chain is used up (the hardware gives up).
    pub fn fail(&mut self) -> bool {
        self.tries[self.series] += 1;
        while self.series < MAX_RATES && self.tries[self.series] >= self.chain.series[self.series].count {
            self.series += 1;
        }
        self.series < MAX_RATES
    }

    /// The try succeeded (a BlockAck came back).
    pub fn succeed(&mut self) {
        self.tries[self.series] += 1;
    }
}

/// The transmitter's block-ack window of one destination (ath9k's per-TID
/// `seq_start`, `tx_buf` bitmap, `baw_head`/`baw_tail`): sequence numbers from
/// `start` on may be in flight, up to `start + `[`BLOCK_ACK_WINDOW`]` − 1`
/// (`BAW_WITHIN`). A frame whose sequence number is past the window waits
/// (`ath_tx_get_tid_subframe`: "do not step over block-ack window"); the window
/// moves when its oldest frame completes, acknowledged or given up
/// (`ath_tx_update_baw`).
#[derive(Debug, Clone, Default)]
pub struct Baw {
    /// The oldest sequence number not yet completed (`seq_start`).
    pub start: u64,
    /// Completed sequence numbers above `start` (the cleared `tx_buf` bits past `baw_head`).
    done: BTreeSet<u64>,
}

impl Baw {
    /// `BAW_WITHIN(seq_start, baw_size, seqno)`.
    pub fn within(&self, seq: u64) -> bool {
        seq >= self.start && seq < self.start + BLOCK_ACK_WINDOW as u64
    }

    /// `ath_tx_update_baw`: frame `seq` completed (acknowledged or given up);
    /// the window's start moves past every completed frame at its head.
    pub fn complete(&mut self, seq: u64) {
        if seq < self.start {
            return;
        }
        self.done.insert(seq);
        while self.done.remove(&self.start) {
            self.start += 1;
        }
    }
}

/// One destination queue of a node: a mac80211 TXQ (fq_codel) or the
/// legacy driver's per-station FIFO, plus the frames waiting for a retry or
/// that did not fit into the last aggregate (ath9k's `tid->retry_q`).
struct Txq<T> {
    q: Box<dyn Qdisc<Frame<T>>>,
    retry: VecDeque<Packet<Frame<T>>>,
    /// AQL: frames that left the TXQ for the firmware, not yet in an aggregate.
    fw: VecDeque<Packet<Frame<T>>>,
    /// Airtime deficit, ns (design `airtime`).
    deficit: i64,
    linked: bool,
    /// AQL: in the firmware's round robin.
    fw_linked: bool,
    /// AQL: the scheduling round that last served this station (mac80211 `schedule_round`).
    round: u64,
}

impl<T> Txq<T> {
    fn has_data(&self) -> bool {
        !self.retry.is_empty() || self.q.backlog_pkts() > 0
    }

    /// ath9k's `ath_tx_get_tid_subframe` on the retry queue: a frame past the block-ack window
    /// goes to the tail (`__skb_queue_tail`) and the next one is tried ("If there are other skbs
    /// in the retry q, they are probably within the BAW, so loop immediately"), until one inside
    /// it is at the head or each has been tried once. Frames leave the retry queue's order when a
    /// refusal puts the head frame back at the tail ([`Node::refused`]), so a frame inside the
    /// window can sit behind one past it.
    fn retry_window_first(&mut self, baw: &Baw) {
        for _ in 0..self.retry.len() {
            match self.retry.front() {
                Some(p) if p.data.seq != NO_SEQ && !baw.within(p.data.seq) => {
                    let p = self.retry.pop_front().expect("a front");
                    self.retry.push_back(p);
                }
                _ => break,
            }
        }
    }

    /// The next frame may go into an aggregate: it lies inside the block-ack
    /// window (a frame not yet numbered gets `next_seq`). `fw`: AQL's firmware
    /// queue is the source of new frames instead of the TXQ.
    fn sendable(&self, baw: &Baw, next_seq: u64, fw: bool) -> bool {
        match self.retry.front() {
            Some(p) if p.data.seq != NO_SEQ => baw.within(p.data.seq),
            Some(_) => baw.within(next_seq),
            None => (if fw { !self.fw.is_empty() } else { self.q.backlog_pkts() > 0 }) && baw.within(next_seq),
        }
    }
}

/// The MAC of one node (the AP: one TXQ per station; a station: one TXQ
/// towards the AP): its queues, the station scheduler and the hardware queue.
pub struct Node<T> {
    design: Design,
    /// Legacy only: the interface qdisc above the driver.
    iface: Option<Box<dyn Qdisc<Frame<T>>>>,
    /// Legacy only: frames the driver holds (until their transmission completes).
    pub driver_frames: usize,
    txqs: Vec<Txq<T>>,
    new_list: VecDeque<usize>,
    old_list: VecDeque<usize>,
    /// Aggregates built and waiting for the medium (the first is next).
    pub hw: VecDeque<Aggregate<T>>,
    /// Aggregates on the air (taken from `hw`, not yet completed): they still
    /// count against [`HW_AGGREGATES`], as ath9k's `axq_ampdu_depth` is only
    /// decremented at TX completion (`ath_tx_process_buffer`).
    pub in_flight: usize,
    /// Of those, the A-MPDUs of an HT station that are not Minstrel-HT probes
    /// ([`Aggregate::counts_as_ampdu`]): `axq_ampdu_depth` counts only these, `axq_depth`
    /// all ([`NON_AGGR_DEPTH`]).
    pub in_flight_ampdu: usize,
    quantum: Vec<i64>,
    /// Next sequence number per destination.
    next_seq: Vec<u64>,
    /// Block-ack window per destination.
    pub baw: Vec<Baw>,
    /// AQL (design `airtime` with `[wifi.aql]`): the pending airtime of this device.
    pub aql: Option<Pending>,
    /// AQL: stations with frames in the firmware, in the order it serves them.
    fw_rr: VecDeque<usize>,
    /// AQL: scheduling rounds started.
    round: u64,
    /// Minstrel-HT per destination (None: a fixed rate).
    pub rc: Vec<Option<Minstrel>>,
    /// Legacy only: calls of the station scheduler (`ath_txq_schedule`) owed since the last
    /// [`Node::take_calls`]: one per frame the driver took from the qdisc (`ath_tx_start`) and
    /// one per transmission completed (`ath_tx_process_buffer`).
    sched_calls: usize,
}

impl<T: 'static> Node<T> {
    /// A node with `dests` destination queues; `iface` is the legacy qdisc,
    /// `weights` the airtime weights of the destinations, `aql` AQL's limits
    /// (design `airtime` only).
    ///
    /// Under the airtime scheduler every station starts with one quantum: 63fefa050477's
    /// `ath_tx_node_init` sets `an->airtime_deficit[acno] = ATH_AIRTIME_QUANTUM`, and mac80211's
    /// later scheduler (with AQL) `sta->airtime[ac].deficit = sta->airtime_weight` in
    /// `sta_info_alloc`; so a station's first frames join the new list ([`Node::link_to`]).
    pub fn new(design: Design, iface: Option<Box<dyn Qdisc<Frame<T>>>>, weights: &[f64], aql: Option<AqlConfig>) -> Node<T> {
        let quantum: Vec<i64> = weights.iter().map(|w| (AIRTIME_QUANTUM_NS as f64 * w).round().max(1.0) as i64).collect();
        let txqs = quantum
            .iter()
            .map(|&q| Txq {
                q: match design {
                    Design::Legacy => Box::new(Fifo::new(Limit { bytes: None, pkts: None })) as Box<dyn Qdisc<Frame<T>>>,
                    _ => Box::new(mac80211_txq()),
                },
                retry: VecDeque::new(),
                fw: VecDeque::new(),
                deficit: if design == Design::Airtime { q } else { 0 },
                linked: false,
                fw_linked: false,
                round: 0,
            })
            .collect();
        Node {
            design,
            iface: if design == Design::Legacy { iface } else { None },
            driver_frames: 0,
            txqs,
            new_list: VecDeque::new(),
            old_list: VecDeque::new(),
            hw: VecDeque::new(),
            in_flight: 0,
            in_flight_ampdu: 0,
            quantum,
            next_seq: vec![0; weights.len()],
            baw: vec![Baw::default(); weights.len()],
            aql: aql.filter(|_| design == Design::Airtime).map(|c| Pending::new(c, weights.len())),
            fw_rr: VecDeque::new(),
            round: 0,
            rc: vec![None; weights.len()],
            sched_calls: 0,
        }
    }

    /// A packet for destination `pkt.data.sta` arrives (its `enqueued_at` set).
    pub fn enqueue(&mut self, pkt: Packet<Frame<T>>, now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>) {
        if let Some(iface) = self.iface.as_mut() {
            iface.enqueue(pkt, now, rng, ev);
            self.pull_iface(now, rng, ev);
        } else {
            let s = pkt.data.sta as usize;
            self.txqs[s].q.enqueue(pkt, now, rng, ev);
            self.link(s);
        }
    }

    /// Legacy: the driver takes frames from the qdisc while it has room.
    fn pull_iface(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>) {
        let Some(iface) = self.iface.as_mut() else { return };
        while self.driver_frames < LEGACY_DRIVER_FRAMES {
            let Some(mut p) = iface.dequeue(now, rng, ev) else { break };
            let s = p.data.sta as usize;
            // Before mac80211's TXQs, rate control ran in the transmit path, before the driver
            // (`ath_tx_start`) took the frame.
            if let Some(m) = self.rc.get_mut(s).and_then(|m| m.as_mut()) {
                p.data.probe = m.sample(now);
            }
            self.driver_frames += 1;
            self.sched_calls += 1;
            self.txqs[s].q.enqueue(p, now, rng, ev);
            Self::link_to(self.design, self.aql.is_none(), &mut self.txqs[s], s, &mut self.new_list, &mut self.old_list);
        }
    }

    fn link(&mut self, s: usize) {
        Self::link_to(self.design, self.aql.is_none(), &mut self.txqs[s], s, &mut self.new_list, &mut self.old_list);
    }

    /// Station `s` has frames again and joins the scheduler's list if it is not on it. With the
    /// airtime scheduler it joins the new stations, served first ([`Node::next_station`]), if its
    /// deficit is positive, else the tail of the old ones (63fefa050477's `__ath_tx_queue_tid`:
    /// `acq_new` only while `airtime_deficit > 0`), so a station that empties and refills is not
    /// credited a quantum on every return. (With AQL, the `new_list` stands for mac80211's
    /// scheduler and keeps the rule it had.)
    /// Before it (Linux ≤ 4.10: `legacy`, `fq`) ath9k has one list per access category and
    /// `ath_tx_queue_tid` puts a TID that was not on it at the tail (`list_add_tail(&tid->list,
    /// list)`; `ath9k_wake_tx_queue` in 4.10, `ath_tx_start` before): a station that just became
    /// active — a ping's reply — waits behind every backlogged one.
    fn link_to(design: Design, ath9k: bool, txq: &mut Txq<T>, s: usize, new_list: &mut VecDeque<usize>, old_list: &mut VecDeque<usize>) {
        if !txq.linked {
            txq.linked = true;
            if design == Design::Airtime && (txq.deficit > 0 || !ath9k) {
                new_list.push_back(s);
            } else {
                old_list.push_back(s);
            }
        }
    }

    /// Frames of a finished transmission that leave the node (delivered or
    /// given up): the legacy driver has room again.
    pub fn release(&mut self, n: usize, now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>) {
        if self.iface.is_some() {
            self.driver_frames -= n;
            self.sched_calls += 1; // the completion's own call (`ath_tx_process_buffer`)
            self.pull_iface(now, rng, ev);
        }
    }

    /// How many times the station scheduler ([`Node::refill`]) runs now, after an arrival or a
    /// completion. On mac80211's TXQs (`fq`, `airtime`) once: `ath9k_wake_tx_queue` per packet
    /// enqueued, `ath_tx_process_buffer` per completion. The legacy driver (≤ 4.9) is called once per
    /// frame it takes from the qdisc (`ath_tx_start` queues the frame on its TID, then calls
    /// `ath_txq_schedule`) and once per completion: a packet that stays in the qdisc (the driver
    /// holds [`LEGACY_DRIVER_FRAMES`]) calls nothing, and a completion that lets the qdisc hand over
    /// k frames calls it 1 + k times — each call, while the hardware queue is full, moves the list
    /// on by one station ([`Node::refused`]).
    pub fn take_calls(&mut self) -> usize {
        if self.iface.is_some() {
            std::mem::take(&mut self.sched_calls)
        } else {
            1
        }
    }

    /// A frame to retry: back to the head of its queue (call in reverse
    /// order for several, so that they keep their order).
    pub fn requeue(&mut self, pkt: Packet<Frame<T>>) {
        let s = pkt.data.sta as usize;
        self.txqs[s].retry.push_front(pkt);
        if self.aql.is_some() {
            // Retries are the firmware's: the frame stays counted in the pending airtime.
            self.fw_link(s);
        } else {
            self.link(s);
        }
    }

    /// A frame for destination `s` left the node (delivered or given up):
    /// AQL takes its expected airtime off the pending airtime
    /// (`ieee80211_report_used_skb`).
    pub fn done(&mut self, s: usize, air_us: u32) {
        if let Some(p) = self.aql.as_mut() {
            if air_us > 0 {
                p.complete(s, air_us as u64);
            }
        }
    }

    fn fw_link(&mut self, s: usize) {
        if !self.txqs[s].fw_linked {
            self.txqs[s].fw_linked = true;
            self.fw_rr.push_back(s);
        }
    }

    /// Subtract `airtime` (transmitted to or received from station `s`) from its deficit.
    pub fn charge(&mut self, s: usize, airtime: Nanos) {
        if self.design == Design::Airtime {
            self.txqs[s].deficit -= airtime as i64;
        }
    }

    /// Airtime sent to or received from station `s`, as ath9k counts it at TX completion
    /// (`ath_tx_count_airtime`) and at reception (`ath_rx_count_airtime`): charged ([`Node::charge`]),
    /// and a station left with a deficit <= 0 that is on no list joins the old one, frames or not
    /// (both call `__ath_tx_queue_tid` when `airtime_deficit <= 0`, and its `acq_new` needs a positive
    /// deficit; read in the 4.11-4.16 `xmit.c` and `recv.c` of 63fefa050477's shape). There it earns
    /// its quantum back each time it reaches the head (`ath_txq_schedule`, which
    /// `ath_tx_process_buffer` calls right after the charge), idle or not, and the scheduler drops it
    /// when it reaches the head empty with a positive deficit. ath9k's scheduler only (not with AQL).
    pub fn count_airtime(&mut self, s: usize, airtime: Nanos) {
        self.charge(s, airtime);
        if self.design == Design::Airtime && self.aql.is_none() && self.txqs[s].deficit <= 0 && !self.txqs[s].linked {
            self.txqs[s].linked = true;
            self.old_list.push_back(s);
        }
    }

    pub fn deficit(&self, s: usize) -> i64 {
        self.txqs[s].deficit
    }

    /// An empty station at the head of its list leaves it: a new one moves
    /// to the old list once (so it cannot stay new forever, as in fq_codel)
    /// unless the old list is empty, an old one is unlinked.
    fn leave_empty(&mut self, s: usize, from_new: bool) {
        self.pop(from_new);
        if from_new && !self.old_list.is_empty() {
            self.old_list.push_back(s);
        } else {
            self.txqs[s].linked = false;
        }
    }

    /// The station whose turn it is (`ath_txq_schedule`), or None if idle.
    /// A station whose next frame lies past its block-ack window cannot send. In 4.10's loop
    /// (`legacy`, `fq`) `ath_tx_sched_aggr` returns without a frame and without `*stop`, the TID
    /// goes back to the tail (`ath_tx_queue_tid`) and the loop goes on: here it goes to the tail
    /// of the old list without being charged; None when every station with data is so blocked
    /// (the windows move when their transmissions complete). Under `airtime` (63fefa050477) the
    /// call ends at it instead, the station left at the head.
    fn next_station(&mut self) -> Option<usize> {
        let mut blocked = 0usize;
        loop {
            let from_new = !self.new_list.is_empty();
            let s = *self.new_list.front().or(self.old_list.front())?;
            if self.design == Design::Airtime && self.txqs[s].deficit <= 0 {
                self.txqs[s].deficit += self.quantum[s];
                self.pop(from_new);
                self.old_list.push_back(s);
                continue;
            }
            if !self.txqs[s].has_data() {
                self.leave_empty(s, from_new);
                continue;
            }
            self.txqs[s].retry_window_first(&self.baw[s]);
            if !self.txqs[s].sendable(&self.baw[s], self.next_seq[s], false) {
                if self.design == Design::Airtime && (self.in_flight > 0 || !self.hw.is_empty()) {
                    // 63fefa050477: `ath_tx_get_tid_subframe` finds the frame past the window and
                    // returns NULL, `ath_tx_sched_aggr` false, and `ath_txq_schedule` ends
                    // (`goto out`) with the station still at the head: nobody else is served
                    // until its window moves (its own frames in the hardware complete). Only
                    // with nothing in the hardware (no completion to come) does the model move
                    // on, as 4.10 does, rather than stall.
                    return None;
                }
                self.pop(from_new);
                self.old_list.push_back(s);
                blocked += 1;
                if blocked >= self.new_list.len() + self.old_list.len() {
                    return None;
                }
                continue;
            }
            return Some(s);
        }
    }

    fn pop(&mut self, from_new: bool) {
        if from_new {
            self.new_list.pop_front();
        } else {
            self.old_list.pop_front();
        }
    }

    /// Fill the hardware queue up to [`HW_AGGREGATES`]; `phys[s]` is the PHY
    /// used towards destination `s`. Dequeued packets' queueing delays go to `qdelay`.
    pub fn refill(&mut self, phys: &[Phy], now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) {
        if self.aql.is_some() {
            self.aql_round(phys, now, rng, ev);
            self.fw_refill(phys, now, rng, ev, qdelay);
            return;
        }
        if phys.iter().any(|p| p.non_aggr()) {
            return self.refill_mixed(phys, now, rng, ev, qdelay);
        }
        loop {
            // Every design runs the whole loop on a full hardware queue too: 63fefa050477's
            // `ath_txq_schedule` credits and rotates the stations at the head whose deficit is
            // <= 0 (`goto begin`), drops empty ones, and learns only from `ath_tx_sched_aggr`,
            // on the first station with a positive deficit and frames, that it may not send.
            let Some(s) = self.next_station() else { break };
            if self.ampdu_depth(phys) >= HW_AGGREGATES {
                self.refused(s, now, rng, ev, qdelay);
                break;
            }
            let agg = self.build(s, &phys[s], now, rng, ev, qdelay);
            if agg.frames.is_empty() {
                // Everything the TXQ held was dropped by CoDel on the way out.
                continue;
            }
            self.turn_done(s);
            self.hw.push_back(agg);
        }
    }

    /// [`Node::refill`] when some destination is an 802.11b station, as `ath_txq_schedule` and
    /// `ath_tx_sched_aggr` fill one hardware queue with both kinds: the station whose turn it
    /// is sends an A-MPDU while fewer than [`HW_AGGREGATES`] A-MPDUs are queued or on the air
    /// (`axq_ampdu_depth`), an 802.11b one a burst of up to [`NON_AGGR_BURST`] single frames
    /// (`ath_tx_form_burst`) while fewer than [`NON_AGGR_DEPTH`] entries of either kind are
    /// (`axq_depth`), each kind judged by its own count; the first station that may not send
    /// ends the call ([`Node::refused`]).
    fn refill_mixed(&mut self, phys: &[Phy], now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) {
        loop {
            let depth = self.hw.len() + self.in_flight;
            let ampdu_depth = self.ampdu_depth(phys);
            let Some(s) = self.next_station() else { break };
            let dsss = phys[s].non_aggr();
            if (dsss && depth >= NON_AGGR_DEPTH) || (!dsss && ampdu_depth >= HW_AGGREGATES) {
                self.refused(s, now, rng, ev, qdelay);
                break;
            }
            let mut sent = 0;
            for _ in 0..if dsss { NON_AGGR_BURST } else { 1 } {
                if sent > 0 && !self.txqs[s].sendable(&self.baw[s], self.next_seq[s], false) {
                    break;
                }
                let agg = self.build(s, &phys[s], now, rng, ev, qdelay);
                if agg.frames.is_empty() {
                    break;
                }
                self.hw.push_back(agg);
                sent += 1;
            }
            if sent == 0 {
                // Everything the TXQ held was dropped by CoDel on the way out.
                continue;
            }
            self.turn_done(s);
        }
    }

    /// Station `s`, at the head of its list, may not send: its kind of entry is at its limit in
    /// the hardware queue (`ath_tx_sched_aggr` sets `*stop`). Before the airtime scheduler
    /// (Linux ≤ 4.10: `legacy`, `fq`) `ath_txq_schedule` had already taken it off the list
    /// (`list_del`) and puts it back at the tail (`ath_tx_queue_tid`, as it still has frames):
    /// it loses its turn. With the airtime scheduler (63fefa050477) it stays at the head
    /// (`goto out`).
    ///
    /// On mac80211's TXQs (`fq`, `airtime`; ath9k from 50f08edf9809, Linux 4.10) the refusal comes
    /// after `ath_tx_sched_aggr` has taken the station's next frame (`ath_tx_get_tid_subframe`:
    /// the TID's retry queue first, else `ieee80211_tx_dequeue`, which runs fq_codel and numbers
    /// the frame, `ath_tx_setup_buffer`), and it puts that frame at the tail of the retry queue
    /// (`__skb_queue_tail(&tid->retry_q, bf->bf_mpdu)`): it waits there, outside fq_codel, and
    /// leads the station's next aggregate. The legacy driver (≤ 4.9) only peeked at its own
    /// queue (`skb_peek`), so nothing moves.
    fn refused(&mut self, s: usize, now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) {
        if self.design != Design::Legacy {
            self.pull_into_retry(s, now, rng, ev, qdelay);
        }
        if self.design != Design::Airtime {
            self.turn_done(s);
        }
    }

    /// The frame `ath_tx_get_tid_subframe` takes for station `s` ([`next_frame`]) goes to the tail
    /// of its retry queue ([`Node::refused`]).
    fn pull_into_retry(&mut self, s: usize, now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) {
        let sample = self.aql.is_none() && self.design != Design::Legacy;
        let rc = self.rc.get_mut(s).and_then(|m| m.as_mut());
        let txq = &mut self.txqs[s];
        if let Some(p) = next_frame(txq, rc, &mut self.next_seq[s], self.aql.is_some(), sample, s, now, rng, ev, qdelay) {
            txq.retry.push_back(p);
        }
    }

    /// ath9k's `axq_ampdu_depth`: the A-MPDUs queued in the hardware or on the air that
    /// [`Aggregate::counts_as_ampdu`] (probes and 802.11b frames do not).
    pub fn ampdu_depth(&self, phys: &[Phy]) -> usize {
        self.hw.iter().filter(|a| a.counts_as_ampdu(&phys[a.sta])).count() + self.in_flight_ampdu
    }

    /// Station `s` (at the head of its list) has had its turn: without the airtime scheduler,
    /// round robin per aggregate (or burst) — `ath_txq_schedule` took it off the list and
    /// `ath_tx_queue_tid` puts it back at the tail only if it still has frames
    /// (`ath_tid_has_buffered`): one emptied by its turn leaves the list at once, and its next
    /// frame brings it back at the tail ([`Node::link_to`]). With the airtime scheduler the deficit
    /// decides ([`Node::next_station`]).
    fn turn_done(&mut self, s: usize) {
        if self.design != Design::Airtime {
            if self.new_list.front() == Some(&s) {
                self.new_list.pop_front();
            } else {
                self.old_list.pop_front();
            }
            if self.txqs[s].has_data() {
                self.old_list.push_back(s);
            } else {
                self.txqs[s].linked = false;
            }
        }
    }

    /// AQL: one scheduling round of mac80211 (`ieee80211_txq_schedule_start`,
    /// `ieee80211_next_txq` until it returns nothing): each station it
    /// returns gives the driver frames until `ieee80211_tx_dequeue` refuses
    /// (AQL) or its TXQ is empty; each frame adds its expected airtime to the
    /// pending airtime.
    fn aql_round(&mut self, phys: &[Phy], now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>) {
        let active = self.new_list.len() + self.old_list.len();
        let Some(p) = self.aql.as_ref() else { return };
        if active == 0 || !p.cfg.may_start_round(p.total, active) {
            return;
        }
        self.round += 1;
        while let Some(s) = self.next_station_aql() {
            if self.txqs[s].round == self.round {
                // Served this round already (`txqi->schedule_round == local->schedule_round[ac]`).
                break;
            }
            self.txqs[s].round = self.round;
            let pending = self.aql.as_mut().expect("AQL is on");
            let txq = &mut self.txqs[s];
            let mut rc = self.rc.get_mut(s).and_then(|m| m.as_mut());
            let mut n = 0;
            while pending.may_dequeue(s) {
                let Some(mut p) = txq.q.dequeue(now, rng, ev) else { break };
                if let Some(m) = rc.as_deref_mut() {
                    p.data.probe = m.sample(now);
                }
                let t = stored_estimate_us(expected_airtime_us(&phys[s], p.meta.len));
                p.data.air_us = t as u32;
                pending.add(s, t);
                txq.fw.push_back(p);
                n += 1;
            }
            if n > 0 {
                self.fw_link(s);
            }
        }
    }

    /// AQL: `ieee80211_next_txq` with AQL — the airtime DRR reading each
    /// station's deficit as deficit − pending airtime (`ieee80211_sta_deficit`),
    /// a station that fails [`Pending::may_dequeue`] moved to the tail; None
    /// when the TXQs are empty or a whole pass finds no station AQL lets through.
    fn next_station_aql(&mut self) -> Option<usize> {
        let mut blocked = 0usize;
        loop {
            let from_new = !self.new_list.is_empty();
            let s = *self.new_list.front().or(self.old_list.front())?;
            if self.txqs[s].q.backlog_pkts() == 0 {
                self.leave_empty(s, from_new);
                continue;
            }
            let p = self.aql.as_ref().expect("AQL is on");
            let may = p.may_dequeue(s);
            let deficit = self.txqs[s].deficit - 1_000 * p.sta[s] as i64;
            if deficit <= 0 || !may {
                if deficit <= 0 {
                    self.txqs[s].deficit += self.quantum[s];
                }
                self.pop(from_new);
                self.old_list.push_back(s);
                if may {
                    blocked = 0;
                } else {
                    blocked += 1;
                    if blocked >= self.new_list.len() + self.old_list.len() {
                        return None;
                    }
                }
                continue;
            }
            return Some(s);
        }
    }

    /// AQL: the firmware fills the radio's queue from its per-station queues,
    /// stations in turn per aggregate.
    fn fw_refill(&mut self, phys: &[Phy], now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) {
        let mut blocked = 0usize;
        while self.hw.len() + self.in_flight < HW_AGGREGATES {
            let Some(&s) = self.fw_rr.front() else { break };
            if self.txqs[s].retry.is_empty() && self.txqs[s].fw.is_empty() {
                self.fw_rr.pop_front();
                self.txqs[s].fw_linked = false;
                continue;
            }
            if !self.txqs[s].sendable(&self.baw[s], self.next_seq[s], true) {
                // Past its block-ack window: the next station's turn.
                self.fw_rr.pop_front();
                self.fw_rr.push_back(s);
                blocked += 1;
                if blocked >= self.fw_rr.len() {
                    break;
                }
                continue;
            }
            let agg = self.build(s, &phys[s], now, rng, ev, qdelay);
            self.fw_rr.pop_front();
            self.fw_rr.push_back(s);
            self.hw.push_back(agg);
        }
    }

    /// Build one aggregate for station `s` (`ath_tx_form_aggr`): frames from
    /// the retry queue first, then the TXQ (with AQL: the firmware queue). As ath9k counts: each subframe
    /// adds its delimiter and MPDU (`al_delta` = 4 + framelen) plus the
    /// padding and extra delimiters of the one before it (`bpad`,
    /// [`subframe_padding`]); the aggregate stops before the
    /// frame that would take it past the byte limit of [`Phy::aggr_limit`]
    /// (4096 µs at the rate, at most 65532 B) or when it holds
    /// [`MAX_AMPDU_FRAMES`] = 32 subframes (half the block-ack window), and
    /// before a frame whose sequence number lies past the block-ack window
    /// ([`Baw`]; ath9k numbers it, `ath_tx_setup_buffer`, then keeps it in the
    /// retry queue, `ath_tx_get_tid_subframe`), or before a frame that is a Minstrel-HT
    /// probe ([`Frame::probe`]), which waits in the retry queue to lead the station's next
    /// aggregate alone.
    pub fn build(&mut self, s: usize, phy: &Phy, now: Nanos, rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) -> Aggregate<T> {
        let aql = self.aql.is_some();
        // Minstrel-HT decides per frame as it leaves the TXQ (with AQL, as it leaves for the
        // firmware; `legacy`, as it enters the driver): see [`Frame::probe`].
        let sample_here = !aql && self.design != Design::Legacy;
        let mut rc = self.rc.get_mut(s).and_then(|m| m.as_mut());
        let txq = &mut self.txqs[s];
        let next_seq = &mut self.next_seq[s];
        let baw = &self.baw[s];
        txq.retry_window_first(baw);
        let mut chain: Option<RateChain> = None;
        let mut limit = 0u64;
        let mut frames: Vec<Packet<Frame<T>>> = Vec::new();
        let (mut al, mut bpad) = (0u64, 0u64);
        loop {
            let Some(p) = next_frame(txq, rc.as_deref_mut(), next_seq, aql, sample_here, s, now, rng, ev, qdelay) else { break };
            if !baw.within(p.data.seq) {
                txq.retry.push_front(p);
                break;
            }
            let al_delta = (AMPDU_DELIMITER + mpdu_bytes(p.meta.len)) as u64;
            if frames.is_empty() {
                // ath9k `ath_set_rates`/`ath_lookup_rate` on the first frame: a probe goes alone,
                // any other A-MPDU is sized for the slowest rate of the chain.
                chain = rc.as_deref().map(|m| m.chain(p.data.probe));
                limit = chain.map_or(phy.aggr_limit(), |c| c.aggr_limit()) as u64;
            } else if limit < al + bpad + al_delta || frames.len() >= MAX_AMPDU_FRAMES || p.data.probe.is_some() {
                // `ath_tx_form_aggr`: past the length limit or the half window, or a probe
                // ("IEEE80211_TX_CTL_RATE_CTRL_PROBE ... goto stop"): back to the retry queue.
                txq.retry.push_front(p);
                break;
            }
            al += bpad + al_delta;
            bpad = subframe_padding(mpdu_bytes(p.meta.len)) as u64;
            frames.push(p);
        }
        let (psdu, _) = psdu_bytes(frames.iter().map(|p| p.meta.len));
        let emptied = txq.retry.is_empty() && txq.fw.is_empty() && txq.q.backlog_pkts() == 0;
        Aggregate { sta: s, frames, psdu, chain: chain.map(|chain| ChainTx { chain, series: 0, tries: [0; MAX_RATES] }), emptied }
    }

    /// Packets queued in this node (qdisc, driver/TXQs, retries, hardware).
    pub fn backlog_pkts(&self) -> usize {
        self.iface.as_ref().map_or(0, |q| q.backlog_pkts())
            + self.txqs.iter().map(|t| t.q.backlog_pkts() + t.retry.len() + t.fw.len()).sum::<usize>()
            + self.hw.iter().map(|a| a.frames.len()).sum::<usize>()
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.iface.as_ref().map_or(0, |q| q.backlog_bytes())
            + self
                .txqs
                .iter()
                .map(|t| t.q.backlog_bytes() + t.retry.iter().chain(t.fw.iter()).map(|p| p.meta.len as u64).sum::<u64>())
                .sum::<u64>()
            + self.hw.iter().flat_map(|a| a.frames.iter()).map(|p| p.meta.len as u64).sum::<u64>()
    }
}

/// A mac80211 TXQ: the core's fq_codel with mac80211's parameters.
/// Station `s`'s next frame as `ath_tx_get_tid_subframe` takes it: the head of its retry queue,
/// else its TXQ's next frame (with AQL, the firmware queue's), that one's queueing delay reported
/// to `qdelay` and, where `sample`, Minstrel-HT's per-frame decision made ([`Frame::probe`]); a
/// frame without a sequence number gets the station's next. None where the station has none.
#[allow(clippy::too_many_arguments)]
fn next_frame<T>(txq: &mut Txq<T>, rc: Option<&mut Minstrel>, next_seq: &mut u64, aql: bool, sample: bool, s: usize, now: Nanos,
                 rng: &mut Rng, ev: &mut Events<Frame<T>>, qdelay: &mut dyn FnMut(usize, Nanos)) -> Option<Packet<Frame<T>>> {
    let mut p = match txq.retry.pop_front() {
        Some(p) => p,
        None => {
            let mut p = if aql { txq.fw.pop_front() } else { txq.q.dequeue(now, rng, ev) }?;
            qdelay(s, now - p.meta.enqueued_at);
            if sample {
                if let Some(m) = rc {
                    p.data.probe = m.sample(now);
                }
            }
            p
        }
    };
    if p.data.seq == NO_SEQ {
        p.data.seq = *next_seq;
        *next_seq += 1;
    }
    Some(p)
}

pub fn mac80211_txq<T>() -> FqCodel<T> {
    let cparams = CodelParams::from_ns(TXQ_TARGET_NS, TXQ_INTERVAL_NS, None, TXQ_CODEL_MTU, true);
    FqCodel::with(TXQ_FLOWS, TXQ_LIMIT, TXQ_QUANTUM, TXQ_MEMORY, 64, cparams).with_codel_backlog(CodelBacklog::Flow)
}

#[cfg(test)]
mod chain_tests {
    use super::super::minstrel::{mcs_rate, Series};
    use super::*;

    #[test]
    fn the_retry_chain_tries_each_rate_its_count_then_falls_back_then_gives_up() {
        let chain = RateChain {
            series: [
                Series { rate: mcs_rate(15), count: 2 },
                Series { rate: mcs_rate(13), count: 1 },
                Series { rate: mcs_rate(12), count: 1 },
                Series { rate: mcs_rate(7), count: 1 },
            ],
            probe: false,
        };
        let mut c = ChainTx { chain, series: 0, tries: [0; MAX_RATES] };
        assert_eq!(c.phy().rate_bps, 130_000_000);
        assert!(c.fail());
        assert_eq!((c.series, c.tries), (0, [1, 0, 0, 0]));
        assert!(c.fail());
        assert_eq!((c.series, c.phy().rate_bps), (1, 104_000_000));
        assert!(c.fail());
        assert!(c.fail());
        assert_eq!((c.series, c.phy().rate_bps, c.phy().streams), (3, 65_000_000, 1));
        let mut ok = c;
        ok.succeed();
        assert_eq!(ok.tries, [2, 1, 1, 1]);
        assert!(!c.fail(), "the chain is used up after 5 tries");
        assert_eq!(c.tries, [2, 1, 1, 1]);
        // ath9k sizes the aggregate for the slowest rate: MCS 7's 4 ms, 32984 B.
        assert_eq!(chain.aggr_limit(), 32_984);
        // A probe is not aggregated: the aggregate stops after its first frame.
        assert_eq!(RateChain { probe: true, ..chain }.aggr_limit(), 0);
    }
}
