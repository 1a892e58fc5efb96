//! A bottleneck as routers build it: policer → qdisc → shaper → device queue.
//!
//! Source: the Linux data path (`tc ... police` as an ingress action in front
//! of the qdisc, `sch_tbf` as a shaping stage, and the driver's TX ring that
//! BQL, `lib/dynamic_queue_limits.c`, keeps small) and the scenario keys
//! `policer`, `shaper`, `device_queue` (docs/scenario.md).
//!
//! Model in a nutshell: a packet first meets the policer's token bucket
//! ([`TokenBucket`]; non-conforming → dropped, reason `Policer`, never
//! delayed), then the configured qdisc. Packets leave the qdisc only when the
//! shaper's bucket ([`Shaper`]) allows their length, into the device queue
//! (a plain FIFO of `device_queue` packets or bytes), from which the wire
//! takes them. Whatever waits in the device queue is invisible to the AQM
//! above it — which is why BQL keeps it to a few packets (seed 000).
//!
//! States: a one-packet `staged` slot (the qdisc's head, dequeued but held
//! back by the shaper, as `sch_tbf` does with `qdisc_peek_dequeued`) and the
//! device queue. Constants: none; every size comes from the scenario.

use super::policer::TokenBucket;
use super::tbf::Shaper;
use super::{DropReason, Events, Limit, Packet, Qdisc};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;

/// The optional stages around a qdisc, in base units.
#[derive(Debug, Clone, Default)]
pub struct Stages {
    /// Policer (rate bit/s, burst bytes).
    pub policer: Option<(u64, u64)>,
    /// Shaper (rate bit/s, burst bytes).
    pub shaper: Option<(u64, u64)>,
    /// Device queue limit (packets and/or bytes).
    pub device_queue: Option<Limit>,
    /// CAKE steered by cake-autorate's controller in front of the qdisc, which
    /// then stands for the bottleneck's own buffer (`crate::autorate::path`).
    pub autorate: Option<crate::autorate::AutorateSpec>,
}

impl Stages {
    /// The stages as the resolved scenario gives them: buckets as (rate bit/s,
    /// burst bytes); a device queue if either of its limits is set.
    pub fn new(policer: Option<(u64, u64)>, shaper: Option<(u64, u64)>, dq_bytes: Option<u64>, dq_pkts: Option<u64>) -> Stages {
        let device_queue = (dq_bytes.is_some() || dq_pkts.is_some()).then_some(Limit { bytes: dq_bytes, pkts: dq_pkts });
        Stages { policer, shaper, device_queue, autorate: None }
    }

    /// With an autorate element (see [`Stages::autorate`]).
    pub fn with_autorate(self, autorate: Option<crate::autorate::AutorateSpec>) -> Stages {
        Stages { autorate, ..self }
    }

    /// No stage around the qdisc (autorate builds its own path, not a chain stage).
    pub fn is_empty(&self) -> bool {
        self.policer.is_none() && self.shaper.is_none() && self.device_queue.is_none()
    }
}

pub struct Chain<T> {
    policer: Option<TokenBucket>,
    inner: Box<dyn Qdisc<T>>,
    shaper: Option<Shaper>,
    staged: Option<Packet<T>>,
    devq: VecDeque<Packet<T>>,
    devq_limit: Option<Limit>,
    devq_bytes: u64,
}

impl<T> Chain<T> {
    pub fn new(inner: Box<dyn Qdisc<T>>, st: &Stages) -> Result<Chain<T>, String> {
        let policer = st.policer.map(|(r, b)| TokenBucket::new(r, b).map_err(|e| format!("policer.{e}"))).transpose()?;
        let shaper = st.shaper.map(|(r, b)| Shaper::new(r, b, None).map_err(|e| format!("shaper.{e}"))).transpose()?;
        if let Some(l) = st.device_queue {
            if l.bytes == Some(0) || l.pkts == Some(0) || (l.bytes.is_none() && l.pkts.is_none()) {
                return Err("device_queue: expected at least one packet or byte".into());
            }
        }
        Ok(Chain { policer, inner, shaper, staged: None, devq: VecDeque::new(), devq_limit: st.device_queue, devq_bytes: 0 })
    }

    fn devq_has_room(&self, len: u32) -> bool {
        match self.devq_limit {
            None => self.devq.is_empty(),
            // A device queue always takes one packet when empty (a ring slot).
            Some(l) => self.devq.is_empty() || !l.exceeded(self.devq_bytes, self.devq.len(), len),
        }
    }

    /// The next packet allowed past the shaper at `now`, if any.
    fn pull(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        if self.staged.is_none() {
            self.staged = self.inner.dequeue(now, rng, ev);
        }
        let len = self.staged.as_ref()?.meta.len;
        if let Some(s) = self.shaper.as_mut() {
            if len as u64 > s.max_size() {
                // tbf: a packet larger than the bucket can never pass; drop it.
                let p = self.staged.take().unwrap();
                ev.drop(p, DropReason::Overlimit);
                return None;
            }
            if !s.on_send(now, len) {
                return None;
            }
        }
        self.staged.take()
    }
}

impl<T> Qdisc<T> for Chain<T> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        if let Some(b) = self.policer.as_mut() {
            if !b.admit(now, pkt.meta.len) {
                ev.drop(pkt, DropReason::Policer);
                return;
            }
        }
        self.inner.enqueue(pkt, now, rng, ev);
    }

    fn dequeue(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        if self.devq_limit.is_none() {
            return self.pull(now, rng, ev);
        }
        // Refill the device queue (BQL-like: as far as its limit), then hand the wire its head.
        loop {
            let next_len = match &self.staged {
                Some(p) => p.meta.len,
                None => 0,
            };
            if !self.devq_has_room(next_len.max(1)) {
                break;
            }
            match self.pull(now, rng, ev) {
                Some(p) => {
                    self.devq_bytes += p.meta.len as u64;
                    self.devq.push_back(p);
                }
                None => break,
            }
        }
        let p = self.devq.pop_front()?;
        self.devq_bytes -= p.meta.len as u64;
        Some(p)
    }

    fn next_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if !self.devq.is_empty() {
            return None;
        }
        if let (Some(p), Some(s)) = (&self.staged, &self.shaper) {
            return Some(s.wait_until(now, p.meta.len).max(now + 1));
        }
        self.inner.next_wakeup(now)
    }

    fn backlog_bytes(&self) -> u64 {
        self.inner.backlog_bytes() + self.devq_bytes + self.staged.as_ref().map_or(0, |p| p.meta.len as u64)
    }

    fn backlog_pkts(&self) -> usize {
        self.inner.backlog_pkts() + self.devq.len() + self.staged.is_some() as usize
    }

    fn shaper_rate_log(&self) -> Option<&[(Nanos, u64)]> {
        self.inner.shaper_rate_log()
    }
}

/// Build a qdisc with its optional stages (no wrapper when there are none).
pub fn build_bottleneck<T: 'static>(cfg: &super::QdiscConfig, st: &Stages) -> Result<Box<dyn Qdisc<T>>, String> {
    let inner: Box<dyn Qdisc<T>> = match &st.autorate {
        Some(a) => Box::new(crate::autorate::ShapedPath::new(a, cfg).map_err(|e| format!("autorate.{e}"))?),
        None => super::build(cfg)?,
    };
    if st.is_empty() {
        return Ok(inner);
    }
    Ok(Box::new(Chain::new(inner, st)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fifo::Fifo;
    use crate::qdisc::PacketMeta;

    fn pkt(len: u32, id: u32) -> Packet<u32> {
        Packet { meta: PacketMeta { len, ..Default::default() }, data: id }
    }

    fn fifo(n: u64) -> Box<dyn Qdisc<u32>> {
        Box::new(Fifo::new(Limit { bytes: None, pkts: Some(n) }))
    }

    #[test]
    fn a_policer_drops_what_exceeds_its_bucket_and_delays_nothing() {
        // 1 Mbit/s, burst 3000 B: two 1500 B packets pass at t=0, the third is dropped;
        // 12 ms later (one packet's worth of tokens) one more passes.
        let st = Stages { policer: Some((1_000_000, 3000)), ..Default::default() };
        let mut c = Chain::new(fifo(100), &st).unwrap();
        let (mut rng, mut ev) = (crate::rng::stream(1, 1), Events::default());
        for i in 0..3 {
            c.enqueue(pkt(1500, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(ev.drops[0].reason, DropReason::Policer);
        assert_eq!(c.dequeue(0, &mut rng, &mut ev).map(|p| p.data), Some(0));
        assert_eq!(c.dequeue(0, &mut rng, &mut ev).map(|p| p.data), Some(1));
        c.enqueue(pkt(1500, 3), 12_000_000, &mut rng, &mut ev);
        assert_eq!(ev.drops.len(), 1);
        assert_eq!(c.next_wakeup(12_000_000), None);
    }

    #[test]
    fn a_shaper_spaces_departures_at_its_rate_after_the_burst() {
        // 1 Mbit/s with a 1500 B bucket: the first packet leaves at once, the
        // next one 12 ms later (1500 B * 8 / 1 Mbit/s).
        let st = Stages { shaper: Some((1_000_000, 1500)), ..Default::default() };
        let mut c = Chain::new(fifo(100), &st).unwrap();
        let (mut rng, mut ev) = (crate::rng::stream(1, 1), Events::default());
        for i in 0..3 {
            c.enqueue(pkt(1500, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(c.dequeue(0, &mut rng, &mut ev).map(|p| p.data), Some(0));
        assert!(c.dequeue(0, &mut rng, &mut ev).is_none());
        assert_eq!(c.next_wakeup(0), Some(12_000_000));
        assert_eq!(c.dequeue(12_000_000, &mut rng, &mut ev).map(|p| p.data), Some(1));
        assert_eq!(c.backlog_pkts(), 1);
    }

    #[test]
    fn a_device_queue_takes_packets_from_the_qdisc_up_to_its_limit() {
        let st = Stages { device_queue: Some(Limit { bytes: None, pkts: Some(2) }), ..Default::default() };
        let mut c = Chain::new(fifo(100), &st).unwrap();
        let (mut rng, mut ev) = (crate::rng::stream(1, 1), Events::default());
        for i in 0..5 {
            c.enqueue(pkt(1500, i), 0, &mut rng, &mut ev);
        }
        assert_eq!(c.dequeue(0, &mut rng, &mut ev).map(|p| p.data), Some(0));
        // packet 1 moved into the device queue with 0; the qdisc holds 2, 3, 4.
        assert_eq!(c.backlog_pkts(), 4);
        assert_eq!(c.devq.len(), 1);
        assert_eq!(c.inner.backlog_pkts(), 3);
    }
}
