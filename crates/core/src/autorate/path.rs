//! CAKE at a controller's rate in front of a variable-rate bottleneck's own
//! buffer: the path cake-autorate runs on.
//!
//! Source: cake-autorate's README ("CAKE ... in front of a variable-rate
//! connection": the router's CAKE on `wan` egress and on `ifb-wan` for
//! ingress, the modem or base station holding the bottleneck's buffer) and
//! `cake-autorate.sh` (commit 94238be) for what it reads: the interface's
//! byte counters every `monitor_achieved_rates_interval_ms` and ping
//! responses from reflectors.
//!
//! Model in a nutshell (one link direction):
//!
//! ```text
//!   arrivals -> CAKE (bandwidth = controller's rate) -> modem queue (the link's
//!               |  bytes out: achieved rate            qdisc and buffer)  -> wire (rate or trace)
//!               |                                        |  ping OWD sample
//!               +----------------- Controller <----------+
//! ```
//!
//! - CAKE is a full [`Cake`] (default parameters, shaping at the controller's
//!   rate; [`Cake::set_bandwidth`] as `tc qdisc change ... bandwidth`).
//!   CAKE releases packets at its own times, not when the wire asks: the path
//!   runs CAKE's departures, the ping samples and the rate readings as
//!   events in time order up to every `now` it is called with ([`ShapedPath`]
//!   keeps its own clock), so a wire slower than CAKE lets the modem queue
//!   fill as a real modem's buffer does.
//! - The modem queue is the direction's own qdisc and buffer (a FIFO for a
//!   bloated modem); the link serves it at its rate or on its trace.
//! - The achieved rate is the bytes CAKE released in the last monitor
//!   interval (the script reads `rx_bytes`/`tx_bytes` of the shaped
//!   interface, i.e. what left CAKE).
//! - The OWD sample every ping interval is what a ping through this path
//!   would measure above the propagation delay: a ping is a sparse flow in
//!   CAKE (served at once, so nothing there) and waits in the modem's FIFO
//!   behind its backlog. We take the sojourn of the last packet that left the
//!   modem queue in its current busy period — the delay a ping measures when
//!   its answer arrives — or, if longer, the age of that busy period's wait
//!   since the last departure (a trace outage: a ping would still be stuck),
//!   and 0 when the modem queue is empty. The propagation delay is constant
//!   and cancels in the delta to the baseline, so it is left out.
//!
//! Choices and what they leave out: the real download CAKE sits on ingress,
//! *after* the bottleneck; we put it in front, as for upload. With the shaper
//! below capacity the standing queue sits in CAKE in either order, above
//! capacity it sits in the bottleneck's buffer in either order; the burstiness
//! of ingress shaping is not modelled. CAKE's sparse-flow wait (at most one
//! packet at the shaper rate, which the script adds to its thresholds) is not
//! in the sample.
//!
//! With `min = base = max` the controller never moves: that is CAKE at a fixed
//! rate on the same path (the comparison a user makes).

use super::controller::{Controller, Params};
use crate::qdisc::cake::{Cake, CakeConfig, PARAMS as CAKE_PARAMS};
use crate::qdisc::{Events, Packet, Params as QParams, Qdisc, QdiscConfig};
use crate::rng::Rng;
use crate::time::Nanos;

/// The autorate element of a link direction, in base units.
#[derive(Debug, Clone, PartialEq)]
pub struct AutorateSpec {
    pub params: Params,
}

/// A packet in the modem queue: its payload and when it reached the link.
#[derive(Debug, Clone)]
pub struct Arrival<T> {
    pub data: T,
    pub arrived: Nanos,
}

pub struct ShapedPath<T> {
    cake: Cake<T>,
    modem: Box<dyn Qdisc<Arrival<T>>>,
    mev: Events<Arrival<T>>,
    ctl: Controller,
    started: bool,
    /// Events are processed up to here.
    clock: Nanos,
    next_ping: Nanos,
    next_monitor: Nanos,
    /// Bytes CAKE released since the last monitor reading.
    bytes_out: u64,
    /// The modem queue's current busy period: since when, the last departure, its sojourn.
    busy_since: Nanos,
    last_departure: Nanos,
    last_sojourn: Nanos,
    /// CAKE said it was ready but released nothing: wait for the next call.
    cake_stuck: bool,
    /// (time, shaper rate bit/s) at the start and at every change.
    log: Vec<(Nanos, u64)>,
}

impl<T: 'static> ShapedPath<T> {
    /// `modem_cfg` is the direction's own qdisc and buffer.
    pub fn new(spec: &AutorateSpec, modem_cfg: &QdiscConfig) -> Result<ShapedPath<T>, String> {
        let ctl = Controller::new(spec.params.clone(), 0)?;
        let cake_cfg = QdiscConfig { rate_bps: ctl.rate_bps(), ..QdiscConfig::default() };
        let cake = Cake::new(CakeConfig::from_params(&cake_cfg, &QParams::defaults(CAKE_PARAMS)));
        let modem = crate::qdisc::build::<Arrival<T>>(modem_cfg)?;
        Ok(ShapedPath {
            cake,
            modem,
            mev: Events::default(),
            ctl,
            started: false,
            clock: 0,
            next_ping: 0,
            next_monitor: 0,
            bytes_out: 0,
            busy_since: 0,
            last_departure: 0,
            last_sojourn: 0,
            cake_stuck: false,
            log: Vec::new(),
        })
    }
}

impl<T> ShapedPath<T> {
    pub fn controller(&self) -> &Controller {
        &self.ctl
    }

    /// The OWD a ping sent at `t` would report, µs above propagation.
    fn ping_sample_us(&self, t: Nanos) -> i64 {
        if self.modem.backlog_pkts() == 0 {
            return 0;
        }
        let waiting = t.saturating_sub(self.last_departure.max(self.busy_since));
        (self.last_sojourn.max(waiting) / 1000) as i64
    }

    fn absorb_modem_drops(&mut self, ev: &mut Events<T>) {
        for d in self.mev.drops.drain(..) {
            let Packet { meta, data } = d.pkt;
            ev.drop(Packet { meta: crate::qdisc::PacketMeta { enqueued_at: data.arrived, ..meta }, data: data.data }, d.reason);
        }
        ev.marks += std::mem::take(&mut self.mev.marks);
    }

    /// Run CAKE's departures, the ping samples and the rate readings in time order up to `now`.
    fn advance(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        if !self.started {
            self.started = true;
            self.clock = now;
            self.ctl = Controller::new(self.ctl.p.clone(), now).expect("checked at construction");
            let origin = self.ctl.p.clock_origin_ns;
            self.next_ping = first_tick_after(now, origin, self.ctl.p.ping_interval_ns);
            self.next_monitor = first_tick_after(now, origin, self.ctl.p.monitor_interval_ns);
            self.log.push((now, self.ctl.rate_bps()));
        }
        self.cake_stuck = false;
        loop {
            let t_tick = self.next_ping.min(self.next_monitor);
            let t_cake = if self.cake.backlog_pkts() > 0 && !self.cake_stuck {
                self.cake.next_wakeup(self.clock).unwrap_or(self.clock).max(self.clock)
            } else {
                Nanos::MAX
            };
            let t = t_tick.min(t_cake);
            if t > now {
                break;
            }
            self.clock = t;
            if t_cake <= t_tick {
                self.release_from_cake(t, rng, ev);
            } else if self.next_monitor <= self.next_ping {
                // SARS: achieved kbit/s = 8000 * bytes / interval µs.
                let us = (self.ctl.p.monitor_interval_ns / 1000).max(1) as i64;
                self.ctl.on_achieved_rate(8000 * self.bytes_out as i64 / us);
                self.bytes_out = 0;
                self.next_monitor += self.ctl.p.monitor_interval_ns;
            } else {
                let before = self.ctl.rate_kbps();
                let after = self.ctl.on_owd_sample(t, self.ping_sample_us(t));
                if after != before {
                    self.cake.set_bandwidth(self.ctl.rate_bps());
                    self.log.push((t, self.ctl.rate_bps()));
                }
                self.next_ping += self.ctl.p.ping_interval_ns;
            }
        }
        self.clock = self.clock.max(now);
    }

    fn release_from_cake(&mut self, t: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        match self.cake.dequeue(t, rng, ev) {
            Some(p) => {
                self.bytes_out += p.meta.len as u64;
                if self.modem.backlog_pkts() == 0 {
                    self.busy_since = t;
                    self.last_sojourn = 0;
                }
                let meta = crate::qdisc::PacketMeta { enqueued_at: t, ..p.meta };
                let arrived = p.meta.enqueued_at;
                self.modem.enqueue(Packet { meta, data: Arrival { data: p.data, arrived } }, t, rng, &mut self.mev);
                self.absorb_modem_drops(ev);
            }
            None => {
                if self.cake.backlog_pkts() > 0 && self.cake.next_wakeup(t).is_none_or(|w| w <= t) {
                    self.cake_stuck = true;
                }
            }
        }
    }
}

/// The first time after `now` on the grid `origin + k * interval` (k of either sign): the ping and
/// monitor ticks count from the scenario's t = 0 (`Params::clock_origin_ns` on the link's clock), so
/// both engines sample the same instants of the trace, whenever their first packet comes (the
/// simulator's at 20 ms, the emulator's in its set-up lead). Until issue 31 goal 3 they counted from
/// the first packet: the emulator's grid sat 0.07 s (readings) and 0.02 s (pings) off the simulator's.
fn first_tick_after(now: Nanos, origin: Nanos, interval: Nanos) -> Nanos {
    let interval = interval.max(1);
    if now < origin {
        origin - ((origin - now - 1) / interval) * interval
    } else {
        origin + ((now - origin) / interval + 1) * interval
    }
}

impl<T> Qdisc<T> for ShapedPath<T> {
    fn name(&self) -> &'static str {
        "autorate"
    }

    fn enqueue(&mut self, pkt: Packet<T>, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) {
        self.advance(now, rng, ev);
        self.cake.enqueue(pkt, now, rng, ev);
        // A packet CAKE may release at once.
        self.advance(now, rng, ev);
    }

    fn dequeue(&mut self, now: Nanos, rng: &mut Rng, ev: &mut Events<T>) -> Option<Packet<T>> {
        self.advance(now, rng, ev);
        let p = self.modem.dequeue(now, rng, &mut self.mev);
        self.absorb_modem_drops(ev);
        let Packet { meta, data } = p?;
        self.last_sojourn = now.saturating_sub(meta.enqueued_at);
        self.last_departure = now;
        Some(Packet { meta: crate::qdisc::PacketMeta { enqueued_at: data.arrived, ..meta }, data: data.data })
    }

    fn next_wakeup(&self, now: Nanos) -> Option<Nanos> {
        if self.modem.backlog_pkts() > 0 {
            return self.modem.next_wakeup(now);
        }
        match self.cake.next_wakeup(now.max(self.clock)) {
            Some(w) if w > now => Some(w),
            Some(_) => Some(now + 1),
            None => None,
        }
    }

    fn backlog_bytes(&self) -> u64 {
        self.cake.backlog_bytes() + self.modem.backlog_bytes()
    }

    fn backlog_pkts(&self) -> usize {
        self.cake.backlog_pkts() + self.modem.backlog_pkts()
    }

    fn shaper_rate_log(&self) -> Option<&[(Nanos, u64)]> {
        Some(&self.log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::{Limit, PacketMeta};

    const MS: Nanos = 1_000_000;

    fn path(rate_kbps: i64) -> ShapedPath<u32> {
        let spec = AutorateSpec { params: Params::defaults(rate_kbps, rate_kbps, rate_kbps) };
        let modem = QdiscConfig { kind: "fifo".into(), limit: Limit { bytes: None, pkts: Some(100) }, ..QdiscConfig::default() };
        ShapedPath::new(&spec, &modem).unwrap()
    }

    fn pkt(id: u32, now: Nanos) -> Packet<u32> {
        Packet { meta: PacketMeta { len: 1500, flow: 1, enqueued_at: now, ..Default::default() }, data: id }
    }

    #[test]
    fn cake_releases_at_its_rate_into_the_modem_queue_while_the_wire_waits() {
        // CAKE at 12 Mbit/s: one 1500-B packet a millisecond. Ten packets at t = 0, the wire first asks at
        // 5.5 ms: CAKE has released those of 0, 1, ..., 5 ms into the modem queue; the wire gets the first.
        let mut p = path(12_000);
        let (mut rng, mut ev) = (crate::rng::stream(1, 1), Events::default());
        for i in 0..10 {
            p.enqueue(pkt(i, 0), 0, &mut rng, &mut ev);
        }
        let first = p.dequeue(5 * MS + MS / 2, &mut rng, &mut ev).unwrap();
        assert_eq!(first.data, 0);
        // The link's queueing delay counts from the arrival at CAKE, not at the modem queue.
        assert_eq!(first.meta.enqueued_at, 0);
        assert_eq!((p.modem.backlog_pkts(), p.cake.backlog_pkts()), (5, 4));
        assert!(ev.drops.is_empty());
    }

    #[test]
    fn the_ping_and_rate_ticks_count_from_the_scenarios_t0_not_from_the_first_packet() {
        // Simulator: first packet at 20 ms; pings every 50 ms and readings every 200 ms of scenario time.
        let mut p = path(12_000);
        let (mut rng, mut ev) = (crate::rng::stream(1, 1), Events::default());
        p.enqueue(pkt(0, 20 * MS), 20 * MS, &mut rng, &mut ev);
        assert_eq!((p.next_ping, p.next_monitor), (50 * MS, 200 * MS));
        // Emulator: the link's clock starts 140 ms before the scenario's t = 0, its first packet at 10 ms of
        // it (scenario -130 ms): the same grid, 140 ms later on the link's clock (scenario -100 ms and 0 ms).
        let spec = AutorateSpec { params: Params { clock_origin_ns: 140 * MS, ..Params::defaults(12_000, 12_000, 12_000) } };
        let modem = QdiscConfig { kind: "fifo".into(), limit: Limit { bytes: None, pkts: Some(100) }, ..QdiscConfig::default() };
        let mut p: ShapedPath<u32> = ShapedPath::new(&spec, &modem).unwrap();
        p.enqueue(pkt(0, 10 * MS), 10 * MS, &mut rng, &mut ev);
        assert_eq!((p.next_ping, p.next_monitor), (40 * MS, 140 * MS));
        // On a tick itself the next one is a whole interval later.
        assert_eq!(first_tick_after(200 * MS, 0, 200 * MS), 400 * MS);
        assert_eq!(first_tick_after(340 * MS, 140 * MS, 200 * MS), 540 * MS);
        assert_eq!(first_tick_after(0, 140 * MS, 50 * MS), 40 * MS);
    }

    #[test]
    fn a_pinned_controller_keeps_cake_at_its_one_rate() {
        let mut p = path(12_000);
        let (mut rng, mut ev) = (crate::rng::stream(1, 1), Events::default());
        p.enqueue(pkt(0, 0), 0, &mut rng, &mut ev);
        // Ten seconds of samples and readings with a standing modem queue: min = base = max, no change.
        for i in 1..=100 {
            p.enqueue(pkt(i, i as Nanos * 100 * MS), i as Nanos * 100 * MS, &mut rng, &mut ev);
        }
        assert_eq!(p.shaper_rate_log().unwrap(), &[(0, 12_000_000)]);
    }
}
