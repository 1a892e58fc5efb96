//! The shared medium: EDCA/DCF contention between the access point and its
//! stations, with binary exponential backoff and collisions.
//!
//! Source: IEEE Std 802.11-2016 §10.3.4.3 (backoff procedure), §10.22.2
//! (EDCA), and the model G. Bianchi analyses in "Performance Analysis of the
//! IEEE 802.11 Distributed Coordination Function", IEEE JSAC 18(3), 2000:
//! slotted time, a backoff counter uniform in [0, CW] that counts idle slots
//! and freezes while the medium is busy, CW doubling after a failure up to
//! CWmax (the node's own: 1023 slots for a station, 63 for the AP, [`super::airtime::AP_CW_MAX`]),
//! reset to CWmin after a success. Bianchi computes what this process
//! yields for saturated stations (his fixed point is checked against this
//! code in the tests); here the process itself runs.
//!
//! # Model in a nutshell
//! After the medium turns idle at `t`, every contender waits AIFS and then
//! counts down its backoff one slot at a time on a common grid
//! `t + AIFS + k·slot`. The contender(s) whose counter reaches zero first
//! transmit at that slot; the others' counters are reduced by the slots that
//! elapsed and freeze. One transmitter: success (unless the frame itself is
//! corrupted, see [`super`]). Several in the same slot: a collision; the
//! medium is busy for the longest of their PPDUs (Bianchi's T_c, no ACK), and
//! each doubles its CW. A node that gets something to send while the medium
//! is idle draws a fresh backoff and starts counting at the next slot
//! boundary (never in the past). After its own transmission a node draws a
//! new backoff at once if it still has data (the post-backoff of §10.3.4.3).
//!
//! # States
//! `Idle { origin }` (counting on the grid from `origin` = end of busy +
//! AIFS) and `Busy { until }`; each node: `active` (has a frame), `backoff`
//! (slots left), `start_slot` (grid slot at which it began counting), `cw`.
//!
//! Timing: 5-GHz OFDM ([`Medium::new`]: slot 9 µs, AIFS 43 µs, CWmin 15), or a 2.4-GHz BSS
//! that holds an 802.11b station ([`Medium::with_timing`], from [`super::Wifi::new`]: slot 20 µs,
//! CWmin 31 for the 802.11b station, 15 for the others). The 802.11b station has no QoS and
//! waits DIFS (SIFS + 2 slots = 50 µs) where the QoS nodes wait the AIFS of best effort
//! (SIFS + 3 slots = 70 µs): the grid starts at the shortest, and a node with a longer AIFS
//! counts from its own (`aifs_extra` slots later), after every busy period (§10.3.2.3, §10.22.2).
//!
//! # The window after a retry chain the hardware gave up
//! It stays where the failures took it, until the node's next success. ath9k programs every data
//! queue's DCU with `AR_DMISC = AR_D_MISC_CW_BKOFF_EN | AR_D_MISC_FRAG_WAIT_EN | 0x2`
//! (`ath9k_hw_resettxqueue`, mac.c; QCA's own HAL writes the same, `ar9300_reset_tx_queue`), leaving
//! clear the DCU's `AR_D_MISC_CW_RESET_EN` ("End of tx series CW reset enable") and
//! `AR_D_MISC_RETRY_CNT_RESET_EN` ("End of tx series station RTS/data failure count reset policy",
//! QCA's ar9300reg.h): the end of a descriptor's rate series resets neither the window nor the
//! station's failure count. What does reset them, besides a success, is the station retry limit of
//! 802.11 (2012 §9.3.3: "when SLRC reaches dot11LongRetryLimit, or when SSRC reaches
//! dot11ShortRetryLimit"; per access category in 2020 §10.23.2.2, QSRC[AC]), which ath9k sets to 32
//! (`INIT_SSH_RETRY`, `INIT_SLG_RETRY` into `AR_DRETRY_LIMIT`). Not modelled: in `reproduce
//! make-wifi-fast`'s latency and 30-/100-station parts no node failed more than 10 times running
//! (docs/wifi.md, "Measured disagreements").
//!
//! Not modelled: hidden stations and capture (every node hears every other),
//! EIFS after a corrupted frame, TXOP bursting of several PPDUs, other access
//! categories. RTS/CTS (on Minstrel-HT's fallback rates) only lengthens a
//! transmission or shortens a collision ([`super::Wifi`]): the NAV it sets is
//! implied, as every node hears every other.

use super::airtime::{AIFS_NS, CW_MAX, CW_MIN, SLOT_NS};
use crate::rng::{Rng, RngExt};
use crate::time::Nanos;

#[derive(Debug, Clone, Copy)]
struct Node {
    active: bool,
    backoff: u32,
    cw: u32,
    /// CWmin of this node: 15 (EDCA best effort), 31 for a non-QoS 802.11b station.
    cw_min: u32,
    /// CWmax of this node: 1023 for a station (the AP's WMM parameters), 63 for the AP's own
    /// queue (hostapd's `tx_queue_data2`, [`super::airtime::AP_CW_MAX`]; [`Medium::set_cw_max`]).
    cw_max: u32,
    /// Grid slot (from the current origin) at which this node began counting.
    start_slot: u64,
    /// Slots this node's AIFS is longer than the shortest (the grid's origin): 0 on 5 GHz, where
    /// every node waits AIFS[BE]; on a BSS with an 802.11b station the QoS nodes wait one slot
    /// more (AIFSN 3) than the 802.11b station's DIFS (2 slots).
    aifs_extra: u64,
}

impl Node {
    /// The grid slot from which this node counts: its start, but not before its AIFS has passed.
    fn begin(&self) -> u64 {
        self.start_slot.max(self.aifs_extra)
    }

    /// The grid slot at which this node transmits if nothing interrupts it.
    fn fire(&self) -> u64 {
        self.begin() + self.backoff as u64
    }
}

/// The contention state of one medium shared by `n` nodes (node 0 is the AP).
#[derive(Debug)]
pub struct Medium {
    nodes: Vec<Node>,
    /// Slot grid origin: when the current idle period's countdown starts.
    origin: Nanos,
    /// The medium is busy until this time.
    busy_until: Option<Nanos>,
    /// The earliest grid slot at which an active node fires (kept up to date
    /// so that asking is O(1); rebuilt once per transmission).
    next_slot: Option<u64>,
    /// Transmission attempts and collided attempts (per node), for statistics.
    pub attempts: Vec<u64>,
    pub collisions: Vec<u64>,
    /// The slot (9 µs; 20 µs in a BSS with an 802.11b station) and AIFS after a busy medium.
    slot: Nanos,
    aifs: Nanos,
}

impl Medium {
    /// `n` EDCA nodes on the 5-GHz OFDM timing: slot 9 µs, AIFS 43 µs, CWmin 15.
    pub fn new(n: usize) -> Medium {
        Medium::with_timing(SLOT_NS, AIFS_NS, &vec![(CW_MIN, 0); n])
    }

    /// Nodes given as (CWmin, slots of AIFS beyond `aifs`), on a slot of `slot`; `aifs` is the
    /// shortest wait after the medium turns idle (the origin of the slot grid).
    pub fn with_timing(slot: Nanos, aifs: Nanos, nodes: &[(u32, u64)]) -> Medium {
        let n = nodes.len();
        Medium {
            nodes: nodes.iter().map(|&(c, x)| Node { active: false, backoff: 0, cw: c, cw_min: c, cw_max: CW_MAX, start_slot: 0, aifs_extra: x }).collect(),
            origin: aifs,
            busy_until: None,
            next_slot: None,
            attempts: vec![0; n],
            collisions: vec![0; n],
            slot,
            aifs,
        }
    }

    pub fn is_busy(&self) -> bool {
        self.busy_until.is_some()
    }

    pub fn is_active(&self, i: usize) -> bool {
        self.nodes[i].active
    }

    /// Node `i`'s window stops doubling at `cw_max` slots (default [`CW_MAX`]).
    pub fn set_cw_max(&mut self, i: usize, cw_max: u32) {
        self.nodes[i].cw_max = cw_max;
    }

    /// The current contention window of node `i` (slots).
    pub fn cw(&self, i: usize) -> u32 {
        self.nodes[i].cw
    }

    /// Node `i` has a frame to send at `now`.
    pub fn activate(&mut self, i: usize, now: Nanos, rng: &mut Rng) {
        if self.nodes[i].active {
            return;
        }
        let backoff = rng.gen_range(0..=self.nodes[i].cw);
        self.activate_with(i, now, backoff);
    }

    /// [`Medium::activate`] with a given backoff (slots).
    pub fn activate_with(&mut self, i: usize, now: Nanos, backoff: u32) {
        let start_slot = if self.busy_until.is_some() || now <= self.origin {
            0
        } else {
            (now - self.origin).div_ceil(self.slot)
        };
        let n = &mut self.nodes[i];
        n.active = true;
        n.start_slot = start_slot;
        n.backoff = backoff;
        let fire = n.fire();
        self.next_slot = Some(self.next_slot.map_or(fire, |s| s.min(fire)));
    }

    /// Node `i` has nothing left to send.
    pub fn deactivate(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        if n.active {
            n.active = false;
            if self.next_slot == Some(n.fire()) {
                self.next_slot = self.scan();
            }
        }
    }

    fn scan(&self) -> Option<u64> {
        self.nodes.iter().filter(|n| n.active).map(|n| n.fire()).min()
    }

    /// When the next transmission starts, if the medium is idle and someone contends.
    pub fn next_start(&self) -> Option<Nanos> {
        if self.busy_until.is_some() {
            return None;
        }
        debug_assert_eq!(self.next_slot, self.scan());
        Some(self.origin + self.next_slot? * self.slot)
    }

    /// Start the transmission due at `now` (= [`Medium::next_start`]): the
    /// nodes that transmit in this slot, pushed into `winners`. Others freeze.
    pub fn start(&mut self, now: Nanos, winners: &mut Vec<usize>) {
        winners.clear();
        let slot = (now - self.origin) / self.slot;
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if !n.active {
                continue;
            }
            let fire = n.fire();
            if fire == slot {
                winners.push(i);
            } else {
                debug_assert!(fire > slot);
                n.backoff -= slot.saturating_sub(n.begin()) as u32;
            }
            n.start_slot = 0;
        }
        for &i in winners.iter() {
            self.attempts[i] += 1;
            if winners.len() > 1 {
                self.collisions[i] += 1;
            }
        }
    }

    /// The medium is busy until `until` (the transmission's end).
    pub fn busy(&mut self, until: Nanos) {
        self.busy_until = Some(until);
    }

    /// The busy period ends at `now`: the winners learn their outcome
    /// (`success` resets CW, a failure doubles it) and draw a new backoff;
    /// counting resumes after AIFS.
    pub fn end(&mut self, now: Nanos, outcomes: &[(usize, bool)], rng: &mut Rng) {
        self.end_with(now, outcomes, |cw| rng.gen_range(0..=cw));
    }

    /// [`Medium::end`] with the new backoffs drawn by `draw(cw)`.
    pub fn end_with(&mut self, now: Nanos, outcomes: &[(usize, bool)], mut draw: impl FnMut(u32) -> u32) {
        self.busy_until = None;
        self.origin = now + self.aifs;
        for &(i, success) in outcomes {
            let n = &mut self.nodes[i];
            n.cw = if success { n.cw_min } else { (2 * n.cw + 1).min(n.cw_max) };
            n.backoff = draw(n.cw);
            n.start_slot = 0;
        }
        self.next_slot = self.scan();
    }

}

/// Bianchi's fixed point for `n` saturated stations with CWmin+1 = `w` and
/// `m` doublings: (τ, p) = (transmission probability per slot, conditional
/// collision probability), solved by bisection on p.
pub fn bianchi(n: usize, w: f64, m: i32) -> (f64, f64) {
    let tau = |p: f64| 2.0 * (1.0 - 2.0 * p) / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0 * p).powi(m)));
    let (mut lo, mut hi) = (0.0f64, 0.4999f64);
    for _ in 0..200 {
        let p = 0.5 * (lo + hi);
        let f = 1.0 - (1.0 - tau(p)).powi(n as i32 - 1) - p;
        if f > 0.0 {
            lo = p;
        } else {
            hi = p;
        }
    }
    let p = 0.5 * (lo + hi);
    (tau(p), p)
}
