//! CAKE: Common Applications Kept Enhanced.
//!
//! Source: Linux `net/sched/sch_cake.c` (v6.x), tc-cake(8), and
//! Høiland-Jørgensen, Täht, Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways" (IEEE LANMAN 2018).
//!
//! Model in a nutshell, from the wire back:
//! - **Shaper** (deficit mode, as sch_fq): every dequeued packet pushes
//!   `time_next_packet` forward by its (overhead-adjusted) length times
//!   ns-per-byte; nothing leaves before that time, so no burst parameter is
//!   needed. A failsafe clock at 1.5x the rate caps the damage in ingress
//!   mode. Non-work-conserving: [`Qdisc::next_wakeup`] says when to retry.
//! - **Tins** ([`tins`]): DiffServ classes with a threshold rate each; the
//!   highest tin still under its threshold goes first, otherwise the tin
//!   whose schedule comes first (shaped mode), or tin DRR (unlimited mode).
//! - **Flow queues**: 1024 queues per tin, 8-way set-associative hashing
//!   (a flow keeps its queue while it has one; collisions only when all 8
//!   ways of a set are busy). DRR++: new (sparse) flows are served before
//!   old (bulk) ones; a flow that uses up its deficit becomes bulk.
//! - **Host fairness** (`triple-isolate`, the default, and the dual modes):
//!   a flow's quantum is divided by the number of bulk flows of its source
//!   host and/or its destination host (the larger), so hosts share first
//!   and flows within a host share what their host gets.
//! - **COBALT** ([`cobalt`]): CoDel + BLUE per queue.
//! - **Memory limit**: when the queued `truesize` exceeds it, packets are
//!   dropped from the head of the fattest queue (a max-heap over all tins'
//!   queue backlogs), and that queue's BLUE is told ([`DropReason::Overlimit`]).
//! - **ACK filter** ([`ack_filter`]), optional.
//!
//! Flow states (`set`): none; sparse (new rotation, has a fresh deficit);
//! sparse-wait (empty, counted sparse, actually in the bulk rotation); bulk;
//! decaying (empty, but COBALT state not at rest yet: kept in rotation so
//! its `count` and BLUE `p_drop` can decay).
//!
//! Constants: `CAKE_QUEUES` 1024, `CAKE_SET_WAYS` 8, `CAKE_MAX_TINS` 8;
//! psched_mtu = 1514 B (Ethernet, sets the tins' MTU time and the
//! 10240-packet cap of the memory limit, `sch->limit` x MTU); target 5 ms and
//! interval (`rtt`) 100 ms (tc-cake defaults), auto-raised at low rates to
//! 1.5 MTU times; BLUE p_inc 1/256 and p_dec 1/4096 (Q0.32: 1<<24, 1<<20);
//! memory limit `max(4 MiB, 4 x rate x rtt)` unless `memlimit` is given;
//! `overflow_timeout` 65535 dequeues before the fattest-flow heap is rebuilt.
//!
//! Differences from the kernel:
//! - flow and host hashes come from `meta.flow`, `meta.src_host`,
//!   `meta.dst_host` through a fixed 64-bit mixer (the kernel hashes the
//!   5-tuple / addresses with jhash); no NAT lookup, no fwmark or
//!   `skb->priority` tin override, no `wash`, no `autorate-ingress`, no GSO
//!   splitting (packets are already MTU-sized);
//! - `meta.len` is the IP packet: `overhead` and `mpu` are added to it, as
//!   the kernel does in its non-`raw` modes; with no `overhead` the shaper
//!   charges the IP length (the kernel's `raw` mode would add the 14-byte
//!   MAC header a real Ethernet device has and our link does not);
//! - `truesize` (what the memory limit counts) is modelled like fq_codel's:
//!   `(len + 64 + 320)` rounded up to a power of two, plus 256 (2304 B for a
//!   1500-byte packet);
//! - the enqueue-time deficit of a new flow is not dithered (as the kernel);
//!   the dequeue-time refill is, with the caller's seeded RNG.

pub mod ack_filter;
pub mod cobalt;
pub mod tins;

use self::cobalt::{CobaltVars, Verdict};
use self::tins::{TinCfg, TinMode};
use super::params::{MAX_TC_TIME_NS, U32_MAX, U64_MAX};
use super::{DropReason, Ecn, Events, Packet, ParamSpec, Params, Qdisc, QdiscConfig};
use crate::rng::{Rng, RngExt};
use crate::time::Nanos;
use std::collections::VecDeque;

const CAKE_QUEUES: usize = 1024;
const CAKE_SET_WAYS: usize = 8;
const CAKE_MAX_TINS: usize = 8;
const PSCHED_MTU: u32 = 1514;
/// `sch->limit` of cake_init: packets, times the MTU, caps the memory limit.
const SCH_LIMIT: u64 = 10240;
const NIL: u16 = u16::MAX;

/// `CAKE_FLOW_*` bits.
const FLOW_SRC_IP: u8 = 1;
const FLOW_DST_IP: u8 = 2;
const FLOW_HOSTS: u8 = 3;
const FLOW_FLOWS: u8 = 4;
const FLOW_DUAL_SRC: u8 = 5;
const FLOW_DUAL_DST: u8 = 6;

pub const FLOW_MODE_NAMES: &[&str] =
    &["flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate"];
pub const ATM_NAMES: &[&str] = &["noatm", "atm", "ptm"];
pub const ACK_FILTER_NAMES: &[&str] = &["no-ack-filter", "ack-filter", "ack-filter-aggressive"];

/// A queued packet with CAKE's per-packet state (`struct cobalt_skb_cb`).
pub(super) struct Entry<T> {
    pub(super) pkt: Packet<T>,
    enqueue_time: Nanos,
    adjusted_len: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Set {
    None,
    Sparse,
    SparseWait,
    Bulk,
    Decaying,
}

const NEW: usize = 0;
const OLD: usize = 1;
const DECAYING: usize = 2;

struct Flow<T> {
    q: VecDeque<Entry<T>>,
    deficit: i32,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
    /// Intrusive flowchain: which list (NEW/OLD/DECAYING or usize::MAX), links.
    list: usize,
    prev: u16,
    next: u16,
}

#[derive(Debug, Clone, Copy, Default)]
struct Host {
    srchost_tag: u32,
    dsthost_tag: u32,
    srchost_bulk_flow_count: u16,
    dsthost_bulk_flow_count: u16,
}

#[derive(Debug, Clone, Copy)]
struct ListHead {
    first: u16,
    last: u16,
}

struct Tin<T> {
    cfg: TinCfg,
    flows: Vec<Flow<T>>,
    backlogs: Vec<u32>,
    tags: Vec<u32>,
    overflow_idx: Vec<u16>,
    hosts: Vec<Host>,
    lists: [ListHead; 3],
    bulk_flow_count: u16,
    sparse_flow_count: u16,
    decaying_flow_count: u16,
    unresponsive_flow_count: u16,
    time_next_packet: Nanos,
    tin_deficit: i32,
    tin_backlog: u64,
    ack_drops: u64,
    way_collisions: u64,
}

impl<T> Tin<T> {
    fn new(cfg: TinCfg) -> Self {
        Tin {
            cfg,
            flows: (0..CAKE_QUEUES)
                .map(|_| Flow {
                    q: VecDeque::new(),
                    deficit: 0,
                    cvars: CobaltVars::default(),
                    srchost: 0,
                    dsthost: 0,
                    set: Set::None,
                    list: usize::MAX,
                    prev: NIL,
                    next: NIL,
                })
                .collect(),
            backlogs: vec![0; CAKE_QUEUES],
            tags: vec![0; CAKE_QUEUES],
            overflow_idx: vec![0; CAKE_QUEUES],
            hosts: vec![Host::default(); CAKE_QUEUES],
            lists: [ListHead { first: NIL, last: NIL }; 3],
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            time_next_packet: 0,
            tin_deficit: 0,
            tin_backlog: 0,
            ack_drops: 0,
            way_collisions: 0,
        }
    }

    fn unlink(&mut self, f: usize) {
        let l = self.flows[f].list;
        if l == usize::MAX {
            return;
        }
        let (p, n) = (self.flows[f].prev, self.flows[f].next);
        if p == NIL {
            self.lists[l].first = n;
        } else {
            self.flows[p as usize].next = n;
        }
        if n == NIL {
            self.lists[l].last = p;
        } else {
            self.flows[n as usize].prev = p;
        }
        let fl = &mut self.flows[f];
        fl.list = usize::MAX;
        fl.prev = NIL;
        fl.next = NIL;
    }

    /// `list_move_tail` (or `list_add_tail` when in no list).
    fn move_tail(&mut self, f: usize, l: usize) {
        self.unlink(f);
        let last = self.lists[l].last;
        {
            let fl = &mut self.flows[f];
            fl.list = l;
            fl.prev = last;
            fl.next = NIL;
        }
        if last == NIL {
            self.lists[l].first = f as u16;
        } else {
            self.flows[last as usize].next = f as u16;
        }
        self.lists[l].last = f as u16;
    }

    fn first(&self, l: usize) -> Option<usize> {
        let f = self.lists[l].first;
        (f != NIL).then_some(f as usize)
    }

    /// `cake_hash` after the hashes are computed: set-associative lookup of
    /// the queue for `flow_hash`, and the host slots for dual/triple modes.
    fn lookup(&mut self, flow_mode: u8, flow_hash: u32, srchost_hash: u32, dsthost_hash: u32) -> usize {
        let mut reduced = flow_hash as usize % CAKE_QUEUES;
        if self.tags[reduced] == flow_hash && self.flows[reduced].set != Set::None {
            return reduced;
        }
        let inner = reduced % CAKE_SET_WAYS;
        let outer = reduced - inner;
        let (dsrc, ddst) = (dsrc(flow_mode), ddst(flow_mode));
        let mut alloc = (false, false);
        let mut k = inner;
        let mut found = false;
        for _ in 0..CAKE_SET_WAYS {
            if self.tags[outer + k] == flow_hash {
                if self.flows[outer + k].set == Set::None {
                    alloc = (dsrc, ddst);
                }
                found = true;
                break;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        if !found {
            for _ in 0..CAKE_SET_WAYS {
                if self.flows[outer + k].set == Set::None {
                    alloc = (dsrc, ddst);
                    found = true;
                    break;
                }
                k = (k + 1) % CAKE_SET_WAYS;
            }
        }
        if !found {
            // No empty way: accept the collision, retag the hosts.
            self.way_collisions += 1;
            alloc = (dsrc, ddst);
            if self.flows[outer + k].set == Set::Bulk {
                let (s, d) = (self.flows[reduced].srchost as usize, self.flows[reduced].dsthost as usize);
                if dsrc {
                    self.hosts[s].srchost_bulk_flow_count -= 1;
                }
                if ddst {
                    self.hosts[d].dsthost_bulk_flow_count -= 1;
                }
            }
        }
        reduced = outer + k;
        self.tags[reduced] = flow_hash;
        let bulk = self.flows[reduced].set == Set::Bulk;
        if alloc.0 {
            let idx = self.host_slot(srchost_hash, true);
            if bulk {
                self.hosts[idx].srchost_bulk_flow_count += 1;
            }
            self.flows[reduced].srchost = idx as u16;
        }
        if alloc.1 {
            let idx = self.host_slot(dsthost_hash, false);
            if bulk {
                self.hosts[idx].dsthost_bulk_flow_count += 1;
            }
            self.flows[reduced].dsthost = idx as u16;
        }
        reduced
    }

    /// Set-associative host slot: the way tagged `hash`, or the first way
    /// without bulk flows (retagged), or, all busy, the last way probed.
    fn host_slot(&mut self, hash: u32, src: bool) -> usize {
        let idx = hash as usize % CAKE_QUEUES;
        let inner = idx % CAKE_SET_WAYS;
        let outer = idx - inner;
        let mut k = inner;
        for _ in 0..CAKE_SET_WAYS {
            let h = &self.hosts[outer + k];
            if (if src { h.srchost_tag } else { h.dsthost_tag }) == hash {
                return outer + k;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        for _ in 0..CAKE_SET_WAYS {
            let h = &self.hosts[outer + k];
            if (if src { h.srchost_bulk_flow_count } else { h.dsthost_bulk_flow_count }) == 0 {
                break;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        let h = &mut self.hosts[outer + k];
        if src {
            h.srchost_tag = hash;
        } else {
            h.dsthost_tag = hash;
        }
        outer + k
    }

    /// Bulk-count changes of a flow's hosts, in the modes that track them.
    fn host_bulk(&mut self, f: usize, flow_mode: u8, delta: i32) {
        let (s, d) = (self.flows[f].srchost as usize, self.flows[f].dsthost as usize);
        if dsrc(flow_mode) {
            let c = &mut self.hosts[s].srchost_bulk_flow_count;
            *c = (*c as i32 + delta) as u16;
        }
        if ddst(flow_mode) {
            let c = &mut self.hosts[d].dsthost_bulk_flow_count;
            *c = (*c as i32 + delta) as u16;
        }
    }

    fn host_load(&self, f: usize, flow_mode: u8) -> usize {
        let mut load = 1u16;
        if dsrc(flow_mode) {
            load = load.max(self.hosts[self.flows[f].srchost as usize].srchost_bulk_flow_count);
        }
        if ddst(flow_mode) {
            load = load.max(self.hosts[self.flows[f].dsthost as usize].dsthost_bulk_flow_count);
        }
        load as usize
    }
}

#[inline]
fn dsrc(m: u8) -> bool {
    m & FLOW_DUAL_SRC == FLOW_DUAL_SRC
}
#[inline]
fn ddst(m: u8) -> bool {
    m & FLOW_DUAL_DST == FLOW_DUAL_DST
}

/// A fixed 64 → 32-bit mixer (splitmix64's finaliser) standing in for the
/// kernel's jhash of the flow keys.
#[inline]
fn mix32(mut z: u64) -> u32 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 32) as u32
}

/// fq_codel's truesize model ([`super::flow_hash::truesize`]), in u64 as
/// CAKE's `buffer_used` counts it.
#[inline]
fn truesize(len: u32) -> u64 {
    super::flow_hash::truesize(len) as u64
}

/// CAKE's configuration, in tc-cake terms.
#[derive(Debug, Clone, Copy)]
pub struct CakeConfig {
    /// Shaped rate in bytes/s; 0 = unlimited.
    pub rate_bytes_ps: u64,
    pub tin_mode: TinMode,
    /// `CAKE_FLOW_*` value (index into [`FLOW_MODE_NAMES`]).
    pub flow_mode: u8,
    /// `rtt` (COBALT interval), ns.
    pub rtt: Nanos,
    /// `target`, ns.
    pub target: Nanos,
    /// Bytes added to each packet's length for the shaper.
    pub overhead: i32,
    pub mpu: u32,
    /// 0 none, 1 ATM cells, 2 PTM (index into [`ATM_NAMES`]).
    pub atm: u8,
    /// `memlimit` in bytes; 0 = automatic.
    pub memlimit: u64,
    /// 0 off, 1 conservative, 2 aggressive.
    pub ack_filter: u8,
    pub ingress: bool,
}

impl Default for CakeConfig {
    /// `cake_init` without a rate (unlimited): the defaults of [`PARAMS`].
    fn default() -> Self {
        CakeConfig::from_params(&QdiscConfig::default(), &Params::defaults(PARAMS))
    }
}

impl CakeConfig {
    /// From parameters read through [`PARAMS`] and the link's rate (`cfg.rate_bps`).
    pub fn from_params(cfg: &QdiscConfig, p: &Params) -> Self {
        let rate_bps = match (p.flag("unlimited"), p.u64("bandwidth")) {
            (true, _) => 0,
            (false, 0) => cfg.rate_bps,
            (false, r) => r,
        };
        CakeConfig {
            rate_bytes_ps: rate_bps / 8,
            tin_mode: TinMode::from_index(p.index("diffserv")).expect("the table bounds the index"),
            flow_mode: p.index("flow_mode") as u8,
            // The kernel keeps both in µs with a floor of 1.
            rtt: p.u64("rtt").max(1000),
            target: p.u64("target").max(1000),
            overhead: p.i32("overhead"),
            mpu: p.u32("mpu"),
            atm: p.index("atm") as u8,
            memlimit: p.u64("memlimit"),
            ack_filter: p.index("ack_filter") as u8,
            ingress: p.flag("ingress"),
        }
    }
}

/// sch_cake.
pub struct Cake<T> {
    c: CakeConfig,
    tins: Vec<Tin<T>>,
    quantum_div: Vec<u16>,
    /// Max-heap of (tin, queue) by backlog, over all CAKE_MAX_TINS tins.
    heap: Vec<(u8, u16)>,
    overflow_timeout: u16,
    rate_ns: u64,
    rate_shft: u32,
    time_next_packet: Nanos,
    failsafe_next_packet: Nanos,
    buffer_used: u64,
    buffer_limit: u64,
    cur_tin: usize,
    qlen: usize,
    backlog: u64,
}

impl<T> Cake<T> {
    pub fn new(c: CakeConfig) -> Self {
        let tcfg = tins::configure(c.tin_mode, c.rate_bytes_ps, PSCHED_MTU, c.target, c.rtt);
        let mut quantum_div = vec![0u16; CAKE_QUEUES + 1];
        quantum_div[0] = !0;
        for (i, q) in quantum_div.iter_mut().enumerate().skip(1) {
            *q = (65535 / i) as u16;
        }
        let mut tins: Vec<Tin<T>> = tcfg.into_iter().map(Tin::new).collect();
        let mut heap = vec![(0u8, 0u16); CAKE_MAX_TINS * CAKE_QUEUES];
        for i in 0..CAKE_MAX_TINS {
            for j in 0..CAKE_QUEUES {
                let k = j * CAKE_MAX_TINS + i;
                heap[k] = (i as u8, j as u16);
                if let Some(t) = tins.get_mut(i) {
                    t.overflow_idx[j] = k as u16;
                }
            }
        }
        let (rate_ns, rate_shft) = (tins[0].cfg.rate_ns, tins[0].cfg.rate_shft);
        // cake_reconfigure's memory limit; `rtt` in µs as the kernel keeps it.
        let mut limit = if c.memlimit > 0 {
            c.memlimit
        } else if c.rate_bytes_ps > 0 {
            (c.rate_bytes_ps * (c.rtt / 1000) / 250_000).max(4 << 20)
        } else {
            u32::MAX as u64
        };
        limit = limit.min((SCH_LIMIT * PSCHED_MTU as u64).max(c.memlimit));
        Cake {
            c,
            tins,
            quantum_div,
            heap,
            overflow_timeout: 0,
            rate_ns,
            rate_shft,
            time_next_packet: 0,
            failsafe_next_packet: 0,
            buffer_used: 0,
            buffer_limit: limit,
            cur_tin: 0,
            qlen: 0,
            backlog: 0,
        }
    }

    /// `tc qdisc change ... cake bandwidth RATE` (`cake_change` then
    /// `cake_reconfigure`): the tins' shaper arithmetic and COBALT parameters
    /// follow the new rate, and so does the memory limit unless `memlimit` was
    /// given; queued packets, flows and the shaper clocks are kept. This is
    /// what cake-autorate calls on every rate change (`set_shaper_rates`).
    pub fn set_bandwidth(&mut self, rate_bps: u64) {
        self.c.rate_bytes_ps = rate_bps / 8;
        let tcfg = tins::configure(self.c.tin_mode, self.c.rate_bytes_ps, PSCHED_MTU, self.c.target, self.c.rtt);
        for (t, cfg) in self.tins.iter_mut().zip(tcfg) {
            t.cfg = cfg;
        }
        (self.rate_ns, self.rate_shft) = (self.tins[0].cfg.rate_ns, self.tins[0].cfg.rate_shft);
        if self.c.memlimit == 0 {
            let limit = if self.c.rate_bytes_ps > 0 {
                (self.c.rate_bytes_ps * (self.c.rtt / 1000) / 250_000).max(4 << 20)
            } else {
                u32::MAX as u64
            };
            self.buffer_limit = limit.min(SCH_LIMIT * PSCHED_MTU as u64);
        }
    }

    /// Bytes the memory limit allows (`buffer_limit`).
    pub fn memory_limit(&self) -> u64 {
        self.buffer_limit
    }

    /// `cake_calc_overhead` on the IP length.
    fn adjusted_len(&self, len: u32) -> u32 {
        let mut l = (len as i64 + self.c.overhead as i64).max(0) as u32;
        l = l.max(self.c.mpu);
        match self.c.atm {
            1 => l.div_ceil(48) * 53,
            2 => l + l.div_ceil(64),
            _ => l,
        }
    }

    /// `cake_hash` with our hash sources.
    fn classify(&mut self, tin: usize, m: &super::PacketMeta) -> usize {
        let mode = self.c.flow_mode;
        if mode == 0 {
            return 0;
        }
        let mut flow_hash = if mode & FLOW_FLOWS != 0 { mix32(m.flow) } else { 0 };
        let (src, dst) = if mode & FLOW_HOSTS != 0 {
            (mix32(m.src_host as u64 | 1 << 40), mix32(m.dst_host as u64 | 2 << 40))
        } else {
            (0, 0)
        };
        if mode & FLOW_FLOWS == 0 {
            if mode & FLOW_SRC_IP != 0 {
                flow_hash ^= src;
            }
            if mode & FLOW_DST_IP != 0 {
                flow_hash ^= dst;
            }
        }
        self.tins[tin].lookup(mode, flow_hash, src, dst)
    }

    fn heap_backlog(&self, i: usize) -> u32 {
        let (t, b) = self.heap[i];
        self.tins.get(t as usize).map_or(0, |tin| tin.backlogs[b as usize])
    }

    fn heap_swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        for k in [i, j] {
            let (t, b) = self.heap[k];
            if let Some(tin) = self.tins.get_mut(t as usize) {
                tin.overflow_idx[b as usize] = k as u16;
            }
        }
    }

    fn heapify(&mut self, mut i: usize) {
        let a = CAKE_MAX_TINS * CAKE_QUEUES;
        let mut m = i;
        let mut mb = self.heap_backlog(i);
        while m < a {
            let l = 2 * m + 1;
            let r = l + 1;
            if l < a {
                let lb = self.heap_backlog(l);
                if lb > mb {
                    m = l;
                    mb = lb;
                }
            }
            if r < a {
                let rb = self.heap_backlog(r);
                if rb > mb {
                    m = r;
                    mb = rb;
                }
            }
            if m != i {
                self.heap_swap(i, m);
                i = m;
            } else {
                break;
            }
        }
    }

    fn heapify_up(&mut self, mut i: usize) {
        while i > 0 && i < CAKE_MAX_TINS * CAKE_QUEUES {
            let p = (i - 1) >> 1;
            if self.heap_backlog(i) > self.heap_backlog(p) {
                self.heap_swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    /// `cake_advance_shaper`: charge `len` to the tin's and the global clock.
    fn advance_shaper(&mut self, tin: usize, len: u32, now: Nanos, drop: bool) {
        if self.rate_ns == 0 {
            return;
        }
        let b = &mut self.tins[tin];
        let tin_dur = (len as u64 * b.cfg.rate_ns) >> b.cfg.rate_shft;
        let global_dur = (len as u64 * self.rate_ns) >> self.rate_shft;
        let failsafe_dur = global_dur + (global_dur >> 1);
        if b.time_next_packet < now {
            b.time_next_packet += tin_dur;
        } else if b.time_next_packet < now + tin_dur {
            b.time_next_packet = now + tin_dur;
        }
        self.time_next_packet += global_dur;
        if !drop {
            self.failsafe_next_packet += failsafe_dur;
        }
    }

    /// `cake_drop`: shed the head of the fattest queue.
    fn drop_fattest(&mut self, now: Nanos, ev: &mut Events<T>) {
        if self.overflow_timeout == 0 {
            for i in (0..=CAKE_MAX_TINS * CAKE_QUEUES / 2).rev() {
                self.heapify(i);
            }
        }
        self.overflow_timeout = 65535;
        let (t, idx) = (self.heap[0].0 as usize, self.heap[0].1 as usize);
        let Some(e) = self.tins.get_mut(t).and_then(|b| b.flows[idx].q.pop_front()) else {
            // The heap has gone wrong: rebuild it next time.
            self.overflow_timeout = 0;
            return;
        };
        let b = &mut self.tins[t];
        let cp = b.cfg.cparams;
        if b.flows[idx].cvars.queue_full(&cp, now) {
            b.unresponsive_flow_count += 1;
        }
        let len = e.pkt.meta.len;
        self.buffer_used -= truesize(len);
        b.backlogs[idx] -= len;
        b.tin_backlog -= len as u64;
        self.backlog -= len as u64;
        self.qlen -= 1;
        if self.c.ingress {
            self.advance_shaper(t, e.adjusted_len, now, true);
        }
        ev.drop(e.pkt, DropReason::Overlimit);
        self.heapify(0);
    }

    /// `cake_dequeue_one` from (cur_tin, f).
    fn dequeue_one(&mut self, f: usize) -> Option<Entry<T>> {
        let b = &mut self.tins[self.cur_tin];
        let e = b.flows[f].q.pop_front()?;
        let len = e.pkt.meta.len;
        b.backlogs[f] -= len;
        b.tin_backlog -= len as u64;
        self.backlog -= len as u64;
        self.buffer_used -= truesize(len);
        self.qlen -= 1;
        if self.overflow_timeout != 0 {
            let i = self.tins[self.cur_tin].overflow_idx[f] as usize;
            self.heapify(i);
        }
        Some(e)
    }

    /// Pick the tin to serve; false if there is nothing to serve.
    fn choose_tin(&mut self, now: Nanos) -> bool {
        let n = self.tins.len();
        if self.rate_ns == 0 {
            let (mut wrapped, mut empty) = (false, true);
            loop {
                let b = &mut self.tins[self.cur_tin];
                let active = b.sparse_flow_count + b.bulk_flow_count > 0;
                if b.tin_deficit >= 0 && active {
                    return true;
                }
                if b.tin_deficit <= 0 {
                    b.tin_deficit += b.cfg.tin_quantum as i32;
                }
                if active {
                    empty = false;
                }
                self.cur_tin += 1;
                if self.cur_tin >= n {
                    self.cur_tin = 0;
                    if wrapped {
                        if empty {
                            return false;
                        }
                    } else {
                        wrapped = true;
                    }
                }
            }
        }
        let (mut best_time, mut best_tin) = (i64::MAX, 0);
        for (i, b) in self.tins.iter().enumerate() {
            if b.sparse_flow_count + b.bulk_flow_count > 0 {
                let t = b.time_next_packet.wrapping_sub(now) as i64;
                if t <= 0 || t <= best_time {
                    best_time = t;
                    best_tin = i;
                }
            }
        }
        self.cur_tin = best_tin;
        let b = &self.tins[best_tin];
        b.sparse_flow_count + b.bulk_flow_count > 0
    }
}

impl<T> Qdisc<T> for Cake<T> {
    fn name(&self) -> &'static str {
        "cake"
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, _rng: &mut Rng, ev: &mut Events<T>) {
        let t = self.c.tin_mode.tin_of(pkt.meta.dscp).min(self.tins.len() - 1);
        let idx = self.classify(t, &pkt.meta);
        let mut len = pkt.meta.len;

        // Ensure the shaper state is not stale.
        if self.tins[t].tin_backlog == 0 {
            if self.tins[t].time_next_packet < now {
                self.tins[t].time_next_packet = now;
            }
            if self.qlen == 0 && self.time_next_packet < now {
                self.failsafe_next_packet = now;
                self.time_next_packet = now;
            }
        }

        let adjusted_len = self.adjusted_len(len);
        let ts = truesize(len);
        let ack_mode = self.c.ack_filter;
        let b = &mut self.tins[t];
        b.flows[idx].q.push_back(Entry { pkt, enqueue_time: now, adjusted_len });
        let ack = if ack_mode != 0 {
            ack_filter::find(&b.flows[idx].q, ack_mode == 2).and_then(|i| b.flows[idx].q.remove(i))
        } else {
            None
        };
        match ack {
            Some(a) => {
                b.ack_drops += 1;
                len -= a.pkt.meta.len;
                self.buffer_used += ts;
                self.buffer_used -= truesize(a.pkt.meta.len);
                if self.c.ingress {
                    self.advance_shaper(t, a.adjusted_len, now, true);
                }
                ev.drop(a.pkt, DropReason::AckFilter);
            }
            None => {
                self.qlen += 1;
                self.buffer_used += ts;
            }
        }
        let b = &mut self.tins[t];
        // `len` may be "negative" when the dropped ACK was longer: wrap like the kernel's u32s.
        b.backlogs[idx] = b.backlogs[idx].wrapping_add(len);
        b.tin_backlog = (b.tin_backlog as i64 + len as i32 as i64) as u64;
        self.backlog = (self.backlog as i64 + len as i32 as i64) as u64;
        if self.overflow_timeout != 0 {
            let i = self.tins[t].overflow_idx[idx] as usize;
            self.heapify_up(i);
        }

        // Flowchain.
        let mode = self.c.flow_mode;
        let b = &mut self.tins[t];
        match b.flows[idx].set {
            Set::None | Set::Decaying => {
                if b.flows[idx].set == Set::Decaying {
                    b.decaying_flow_count -= 1;
                }
                b.move_tail(idx, NEW);
                b.flows[idx].set = Set::Sparse;
                b.sparse_flow_count += 1;
                let load = b.host_load(idx, mode);
                b.flows[idx].deficit = ((b.cfg.flow_quantum as u32 * self.quantum_div[load] as u32) >> 16) as i32;
            }
            Set::SparseWait => {
                // Empty, counted sparse, actually in the bulk rotation.
                b.flows[idx].set = Set::Bulk;
                b.sparse_flow_count -= 1;
                b.bulk_flow_count += 1;
                b.host_bulk(idx, mode, 1);
            }
            _ => {}
        }

        while self.buffer_used > self.buffer_limit {
            self.drop_fattest(now, ev);
        }
    }

    fn dequeue(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        let mode = self.c.flow_mode;
        // Not reset by `goto begin` in the kernel: only the first flow of a
        // dequeue call may come from the decaying list.
        let mut first_flow = true;
        'begin: loop {
            if self.qlen == 0 {
                return None;
            }
            // Global hard shaper.
            if self.time_next_packet > now && self.failsafe_next_packet > now {
                return None;
            }
            if !self.choose_tin(now) {
                return None;
            }
            let t = self.cur_tin;
            'retry: loop {
                let b = &mut self.tins[t];
                let f = if first_flow && b.first(DECAYING).is_some() {
                    b.first(DECAYING)
                } else {
                    b.first(NEW).or_else(|| b.first(OLD)).or_else(|| b.first(DECAYING))
                };
                let Some(f) = f else { continue 'begin };
                first_flow = false;

                // Flow isolation (DRR++) with host fairness.
                if b.flows[f].deficit <= 0 {
                    if b.flows[f].set == Set::Sparse {
                        if !b.flows[f].q.is_empty() {
                            b.sparse_flow_count -= 1;
                            b.bulk_flow_count += 1;
                            b.host_bulk(f, mode, 1);
                            b.flows[f].set = Set::Bulk;
                        } else {
                            // In the bulk rotation for deficit accounting,
                            // still counted as sparse.
                            b.flows[f].set = Set::SparseWait;
                        }
                    }
                    let load = b.host_load(f, mode);
                    let dither = rng.gen::<u32>() >> 16;
                    b.flows[f].deficit +=
                        ((b.cfg.flow_quantum as u32 * self.quantum_div[load] as u32 + dither) >> 16) as i32;
                    b.move_tail(f, OLD);
                    continue 'retry;
                }

                // Retrieve a packet via the AQM.
                let e = loop {
                    let Some(mut e) = self.dequeue_one(f) else {
                        // This queue was actually empty.
                        let b = &mut self.tins[t];
                        let cp = b.cfg.cparams;
                        if b.flows[f].cvars.queue_empty(&cp, now) {
                            b.unresponsive_flow_count = b.unresponsive_flow_count.saturating_sub(1);
                        }
                        let cv = b.flows[f].cvars;
                        if cv.p_drop != 0 || cv.count != 0 || now < cv.drop_next {
                            // Keep it in rotation until its state has decayed.
                            b.move_tail(f, DECAYING);
                            match b.flows[f].set {
                                Set::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.host_bulk(f, mode, -1);
                                    b.decaying_flow_count += 1;
                                }
                                Set::Sparse | Set::SparseWait => {
                                    b.sparse_flow_count -= 1;
                                    b.decaying_flow_count += 1;
                                }
                                _ => {}
                            }
                            b.flows[f].set = Set::Decaying;
                        } else {
                            b.unlink(f);
                            match b.flows[f].set {
                                Set::Sparse | Set::SparseWait => b.sparse_flow_count -= 1,
                                Set::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.host_bulk(f, mode, -1);
                                }
                                _ => b.decaying_flow_count -= 1,
                            }
                            b.flows[f].set = Set::None;
                        }
                        continue 'begin;
                    };
                    let b = &mut self.tins[t];
                    let cp = b.cfg.cparams;
                    let bulk = if self.c.ingress { b.bulk_flow_count as u32 } else { 0 };
                    let sojourn = now.saturating_sub(e.enqueue_time);
                    let ect = e.pkt.meta.ecn != Ecn::NotEct;
                    let verdict = b.flows[f].cvars.should_drop(&cp, now, sojourn, ect, bulk, &mut || rng.gen::<u32>());
                    if verdict == Verdict::Marked && e.pkt.meta.ecn != Ecn::Ce {
                        e.pkt.meta.ecn = Ecn::Ce;
                        ev.marks += 1;
                    }
                    // The last packet of a queue may be marked, not dropped.
                    if matches!(verdict, Verdict::Pass | Verdict::Marked) || b.flows[f].q.is_empty() {
                        break e;
                    }
                    if self.c.ingress {
                        let l = e.adjusted_len;
                        self.advance_shaper(t, l, now, true);
                        let b = &mut self.tins[t];
                        b.flows[f].deficit -= l as i32;
                        b.tin_deficit -= l as i32;
                    }
                    ev.drop(e.pkt, DropReason::Aqm);
                    if self.c.ingress {
                        continue 'retry;
                    }
                };
                let len = e.adjusted_len;
                self.advance_shaper(t, len, now, false);
                let b = &mut self.tins[t];
                b.flows[f].deficit -= len as i32;
                b.tin_deficit -= len as i32;
                if self.overflow_timeout != 0 {
                    self.overflow_timeout -= 1;
                }
                return Some(e.pkt);
            }
        }
    }

    fn next_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if self.qlen == 0 || self.rate_ns == 0 {
            return None;
        }
        if self.time_next_packet > now && self.failsafe_next_packet > now {
            return Some(self.time_next_packet.min(self.failsafe_next_packet));
        }
        Some(now)
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog
    }

    fn backlog_pkts(&self) -> usize {
        self.qlen
    }
}

/// Scenario doc of `cake` (the [`super::QdiscKind`] registry).
pub const DOC: &str = "CAKE (Linux sch_cake): deficit shaper, DiffServ tins, 8-way set-associative DRR++ flow queueing with \
          host isolation, COBALT AQM; sized by its own memory limit, not by the direction's `buffer`";

/// `qdisc_params` of `cake`, with Linux's defaults (`cake_init`) and the ranges
/// it keeps them in (`rtt`, `target` a u32 of µs; `overhead` -64..256 as
/// tc-cake(8) accepts; `mpu` a u16, `memlimit` a u32 in `struct cake_sched_data`).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec::rate("bandwidth", 0.0, 0.0, U64_MAX,
        "tc-cake `bandwidth`: shaped rate in bit/s; 0 = the link's rate (tc's default is unlimited)"),
    ParamSpec::flag("unlimited", false,
        "tc-cake `unlimited`: no shaping at all (bandwidth ignored)"),
    ParamSpec::choice("diffserv", tins::TIN_MODE_NAMES, 0,
        "tc-cake tin mode: diffserv3 (default: bulk CS1 1/16, voice 1/4), diffserv4 (bulk, video 1/2, voice 1/4), diffserv8, besteffort, precedence; tins chosen by `dscp`"),
    ParamSpec::choice("flow_mode", FLOW_MODE_NAMES, 7,
        "tc-cake isolation: flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost, triple-isolate (default: fairness among source and destination hosts, then flows)"),
    ParamSpec::time("rtt", 100_000_000.0, 0.0, MAX_TC_TIME_NS,
        "tc-cake `rtt`: COBALT interval, Linux default 100 ms"),
    ParamSpec::time("target", 5_000_000.0, 0.0, MAX_TC_TIME_NS,
        "tc-cake `target`: acceptable standing delay, Linux default 5 ms (raised to 1.5 MTU times at low rates)"),
    ParamSpec::count("overhead", 0.0, -64.0, 256.0,
        "tc-cake `overhead`: bytes added to each IP packet's length for shaping, -64..256, default 0"),
    ParamSpec::size("mpu", 0.0, 0.0, u16::MAX as f64,
        "tc-cake `mpu`: minimum charged packet size in bytes (after overhead), default 0"),
    ParamSpec::choice("atm", ATM_NAMES, 0,
        "tc-cake link-layer framing: noatm (default), atm (48-byte cells in 53), ptm (64b/65b)"),
    ParamSpec::size("memlimit", 0.0, 0.0, U32_MAX,
        "tc-cake `memlimit`: bytes of packet memory (truesize); 0 = auto, max(4 MiB, 4 x rate x rtt) capped at 10240 x 1514 B"),
    ParamSpec::choice("ack_filter", ACK_FILTER_NAMES, 0,
        "tc-cake ACK filter: no-ack-filter (default), ack-filter (drop a queued pure ACK made redundant by two newer ones), ack-filter-aggressive (by one)"),
    ParamSpec::flag("ingress", false,
        "tc-cake `ingress`: count dropped packets against the shaper and scale COBALT's target with bulk flows, as for a download-side CAKE"),
];

#[cfg(test)]
mod tests;
