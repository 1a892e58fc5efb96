//! CAKE's ACK filter: drop pure ACKs made redundant by a newer one queued
//! behind them in the same flow.
//!
//! Source: Linux `net/sched/sch_cake.c` (v6.x), `cake_ack_filter`,
//! `cake_tcph_may_drop`, `cake_tcph_sack_compare`; tc-cake(8) `ack-filter`,
//! `ack-filter-aggressive`.
//!
//! The kernel, when a packet is queued, looks back through its queue for
//! pure ACKs of the same 5-tuple whose cumulative ACK is not after the new
//! packet's and whose SACK blocks are covered by it. *Conservative* mode
//! drops the eligible ACK nearest the head only once a *second* eligible one
//! is found (so one redundant ACK always stays queued); *aggressive* mode
//! also drops a single eligible ACK when it sits right before the new one.
//!
//! What bloatlab models (PacketMeta carries `flow`, `is_pure_ack` and
//! `tcp_ack`, no header bytes):
//! - the triggering packet must itself be a pure ACK (the kernel accepts any
//!   ACK-flagged, non-SYN segment, data included);
//! - "same 5-tuple" is "same `meta.flow`";
//! - SACK blocks are not modelled, so two ACKs with the same cumulative ACK
//!   compare equal and the older is never dropped (the kernel drops an older
//!   duplicate ACK when the newer SACKs more). Only ACKs whose `tcp_ack` is
//!   strictly before the new one's (mod 2^32) are eligible;
//! - ECE/CWR flags and TCP options (timestamps) are not modelled: they never
//!   make an ACK ineligible here.

use super::Entry;
use std::collections::VecDeque;

/// `before(a, b)` of TCP sequence arithmetic.
#[inline]
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Index of the queued ACK the newly added tail makes redundant, if any.
pub(super) fn find<T>(q: &VecDeque<Entry<T>>, aggressive: bool) -> Option<usize> {
    if q.len() < 2 {
        return None;
    }
    let trig = &q[q.len() - 1].pkt.meta;
    if !trig.is_pure_ack {
        return None;
    }
    let mut elig = None;
    let mut found = 0;
    for (i, e) in q.iter().enumerate().take(q.len() - 1) {
        let m = &e.pkt.meta;
        if m.flow != trig.flow || !m.is_pure_ack || !before(m.tcp_ack, trig.tcp_ack) {
            continue;
        }
        if elig.is_none() {
            elig = Some(i);
        }
        found += 1;
        if found > 1 {
            return elig;
        }
    }
    match elig {
        Some(i) if aggressive && i == q.len() - 2 => Some(i),
        _ => None,
    }
}
