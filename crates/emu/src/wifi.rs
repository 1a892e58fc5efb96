//! WiFi in the emulator: the core's medium ([`bloatlab_core::wifi::Wifi`],
//! docs/wifi.md) between the two TUN devices, in real time, so that the
//! kernel's TCP runs over the same AP and stations as the simulator's.
//!
//! Stations are client endpoints told apart by their flows', probes' and
//! trains' ports (flow i: server port FLOW_PORT + i and client port
//! FLOW_CPORT + i, probe j: PROBE_PORT + j, train k: TRAIN_PORT + k; the
//! resolved scenario names each one's station):
//! all of them live in the client namespace, and a packet joins the medium at
//! the AP (read from the server TUN: downlink) or at its station (read from
//! the client TUN: uplink). One thread runs the shared medium for both
//! directions (one medium, one clock); after the medium a packet waits its
//! flow's one-way delay, as after a wired bottleneck, then goes out the other
//! TUN. Packets of no flow or probe belong to the shell's station
//! (`shell_station`, `bloatlab shell --station`); without one they only get
//! the default delay. The MAC design and its settings (`[wifi.aql]`) reach the
//! core through the resolved scenario's `WifiSpec::config`, as in the simulator.
//!
//! A scenario's `[link]` directions are the AP's line, in series with the
//! medium and run by this thread too, as the simulator orders them
//! (crates/sim/src/wifi.rs): down, a packet read from the server TUN crosses
//! the line's bottleneck (crate::link, without its propagation) and then the
//! AP; up, the medium and then the line, whose delay line holds the flow's
//! one-way delay.

use crate::forward::{DirResult, LateHist, SpinBudget, Timing, MAX_FRAME};
use crate::link::Link;
use crate::stall::{Episode, StallWatch};
use crate::gso::Segmenter;
use crate::packet;
use crate::scenario::{EmuScenario, Resolved, FLOW_CPORT, FLOW_PORT, PROBE_PORT, TRAIN_PORT};
use crate::sys;
use bloatlab_core::qdisc::{Dropped, Ecn, Packet};
use bloatlab_core::rng;
use bloatlab_core::time::Nanos;
use bloatlab_core::wifi::{Delivered, Wifi};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const READ_BATCH: usize = 64;
const NO_STATION: u16 = u16::MAX;


/// The station of each port (see the module doc), [`NO_STATION`] elsewhere.
fn stations_by_port(sc: &Resolved) -> Vec<u16> {
    let mut by = vec![NO_STATION; 65536];
    for f in &sc.flows {
        if let Some(s) = f.station {
            by[FLOW_PORT as usize + f.id as usize] = s as u16;
            by[FLOW_CPORT as usize + f.id as usize] = s as u16;
        }
    }
    for p in &sc.probes {
        if let Some(s) = p.station {
            by[PROBE_PORT as usize + p.id as usize] = s as u16;
        }
    }
    for t in &sc.trains {
        if let Some(s) = t.station {
            by[TRAIN_PORT as usize + t.id] = s as u16;
        }
    }
    by
}

/// The station a packet belongs to: its flow's, probe's or train's, else the shell's.
fn station(by_port: &[u16], shell: Option<usize>, h: &packet::Headers) -> Option<usize> {
    [h.dport, h.sport].iter().map(|&p| by_port[p as usize]).find(|&s| s != NO_STATION).map(|s| s as usize).or(shell)
}

/// The running medium thread.
pub struct WifiThread {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Result<WifiOutcome, String>>,
}

impl WifiThread {
    /// Start the medium between `tun_server` (the AP's wired side) and `tun_client` (the stations); the
    /// clock starts at `origin`, the scenario `lead` ns later (the AP's line measures from there).
    pub fn start(sc: &Resolved, tun_server: RawFd, tun_client: RawFd, origin: u64, lead: u64, timing: Timing) -> Result<WifiThread, String> {
        let w = sc.wifi.as_ref().ok_or("wifi: missing")?;
        let cfg = w.config()?;
        let line_cfgs = line_configs(sc, lead)?;
        let (delay_by_port, default_delay) = sc.delays();
        let by_port = stations_by_port(sc);
        let seed = sc.seed;
        let shell_station = sc.shell_station;
        let duration_ns = sc.duration_ns;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wifi".into())
            .spawn(move || {
                let wifi = Wifi::new(&cfg)?;
                let mut lines = [None, None];
                for (l, c) in lines.iter_mut().zip(line_cfgs) {
                    *l = c.map(Link::new).transpose()?;
                }
                let watch = StallWatch::new(sys::mono_ns().saturating_sub(origin));
                let mut m = Medium { wifi, rng: rng::stream(seed, 3), by_port, shell_station, delay_by_port, default_delay, line: BinaryHeap::new(), seq: 0,
                    fds: [tun_server, tun_client], origin, timing, late: LateHist::default(), write_errors: 0, watch, lines, lead };
                m.run(&st);
                let dirs = m.line_results();
                // Only the scenario's stalls (its t = 0 is the medium's origin).
                let stalls = std::mem::take(&mut m.watch.episodes).into_iter().filter(|e| e.start_ns < duration_ns).collect();
                Ok(WifiOutcome { wifi: m.output(), late: m.late, stalls, stalls_lost: m.watch.lost, dirs })
            })
            .map_err(|e| format!("cannot start the wifi thread: {e}"))?;
        Ok(WifiThread { stop, handle })
    }

    /// Stop; the raw result's `wifi` object, the write lateness and the medium thread's stalls.
    pub fn stop(self) -> Result<WifiOutcome, String> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().map_err(|_| "the wifi thread panicked".to_string())?
    }
}

/// What the medium's thread leaves: the raw result's `wifi` object, its
/// write lateness, and its stalls within the scenario (crate::stall).
pub struct WifiOutcome {
    pub wifi: Value,
    pub late: LateHist,
    pub stalls: Vec<Episode>,
    pub stalls_lost: u64,
    /// The AP's line, each direction the scenario gives (`[link]`), as a link thread reports it.
    pub dirs: Vec<(String, DirResult)>,
}

/// The AP's line (`[link]`) of each direction the scenario gives, measured from `lead` as the link threads
/// are (run::Links::start); the down line without its propagation, which the flows get after the medium.
/// Each is built once here, so that a bad one is an error before the thread starts (the thread builds its own:
/// a qdisc stays on the thread that runs it).
fn line_configs(sc: &Resolved, lead: u64) -> Result<[Option<crate::link::LinkConfig>; 2], String> {
    let mut out = [None, None];
    for (i, dir) in ["down", "up"].into_iter().enumerate() {
        if (if i == 0 { &sc.links.down } else { &sc.links.up }).is_none() {
            continue;
        }
        let mut cfg = sc.link_config(dir)?;
        cfg.measure_from = lead;
        cfg.measure_until = lead.saturating_add(cfg.measure_until);
        if i == 0 {
            cfg.delay_by_port = vec![0; cfg.delay_by_port.len()];
            cfg.default_delay = 0;
        }
        Link::new(cfg.clone()).map_err(|e| format!("links.{dir}.qdisc: {e}"))?;
        out[i] = Some(cfg);
    }
    Ok(out)
}

struct Medium {
    wifi: Wifi<Vec<u8>>,
    rng: rng::Rng,
    by_port: Vec<u16>,
    shell_station: Option<usize>,
    delay_by_port: Vec<u64>,
    default_delay: Nanos,
    /// Delivered packets in propagation: (due, seq, to the server side?, bytes).
    line: BinaryHeap<Reverse<(Nanos, u64, bool, Vec<u8>)>>,
    seq: u64,
    /// [server TUN, client TUN].
    fds: [RawFd; 2],
    origin: u64,
    timing: Timing,
    late: LateHist,
    write_errors: u64,
    watch: StallWatch,
    /// The AP's line: [down, up] (`[link]`), in series with the medium.
    lines: [Option<Link>; 2],
    /// The scenario's t = 0 on this thread's clock.
    lead: u64,
}

impl Medium {
    fn clock(&self) -> Nanos {
        sys::mono_ns().saturating_sub(self.origin)
    }

    fn delay_of(&self, h: Option<&packet::Headers>) -> Nanos {
        if let Some(h) = h {
            for p in [h.dport, h.sport] {
                let d = self.delay_by_port[p as usize];
                if d != u64::MAX {
                    return d;
                }
            }
        }
        self.default_delay
    }

    fn station_of(&self, h: &packet::Headers) -> Option<usize> {
        station(&self.by_port, self.shell_station, h)
    }

    fn delay_line(&mut self, at: Nanos, to_server: bool, b: Vec<u8>) {
        self.seq += 1;
        self.line.push(Reverse((at, self.seq, to_server, b)));
    }

    fn run(&mut self, stop: &AtomicBool) {
        sys::set_timer_slack(1);
        if self.timing.fifo_prio > 0 {
            sys::set_fifo(self.timing.fifo_prio);
        }
        let mut out: Vec<Delivered<Vec<u8>>> = Vec::new();
        let mut drops: Vec<Dropped<Vec<u8>>> = Vec::new();
        let mut frame = vec![0u8; MAX_FRAME];
        let mut seg = Segmenter::default();
        let mut spin = SpinBudget::new(self.timing.spin_pct);
        let mut passed: Vec<Vec<u8>> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let now = self.clock();
            spin.woke = now;
            self.watch.seen(now);
            // Arrivals: from the server TUN (downlink, at the AP) and the client TUN (uplink).
            let (mut read, mut drained) = (0u64, true);
            for (i, up) in [(0usize, false), (1, true)] {
                let mut empty = false;
                for _ in 0..READ_BATCH {
                    match sys::read_pkt(self.fds[i], &mut frame) {
                        Ok(n) if n > 0 => seg.each(&frame[..n], |p| {
                            read += 1;
                            let b = p.to_vec();
                            if let Some(l) = self.lines[0].as_mut().filter(|_| !up) {
                                // down through the AP's line first (handed to the AP below)
                                l.arrive(now, b);
                                return;
                            }
                            let h = packet::parse(&b);
                            match h.as_ref().and_then(|h| self.station_of(h).map(|s| (s, h.meta()))) {
                                Some((s, meta)) => self.wifi.enqueue(now, s, up, Packet { meta, data: b }, &mut self.rng, &mut drops),
                                None => {
                                    let at = now + self.delay_of(h.as_ref());
                                    self.delay_line(at, up, b);
                                }
                            }
                        }),
                        _ => {
                            empty = true;
                            break;
                        }
                    }
                }
                drained &= empty;
            }
            // What a stall left waiting, and what the queues dropped of it.
            self.watch.read(read, drops.len() as u64, drained);
            drops.clear();
            // What the AP's line passed down by now goes to the AP (or, of no station, on its way).
            let now = self.clock();
            if let Some(l) = self.lines[0].as_mut() {
                l.service(now);
                while let Some((_, b)) = l.pop_due(now) {
                    passed.push(b);
                }
            }
            for b in passed.drain(..) {
                let h = packet::parse(&b);
                match h.as_ref().and_then(|h| self.station_of(h).map(|s| (s, h.meta()))) {
                    Some((s, meta)) => self.wifi.enqueue(now, s, false, Packet { meta, data: b }, &mut self.rng, &mut drops),
                    None => {
                        let at = now + self.delay_of(h.as_ref());
                        self.delay_line(at, false, b);
                    }
                }
            }
            drops.clear();
            self.wifi.poll(self.clock(), &mut self.rng, &mut out, &mut drops);
            drops.clear();
            let now = self.clock();
            for mut d in out.drain(..) {
                if d.meta.ecn == Ecn::Ce {
                    packet::set_ce(&mut d.data);
                }
                if let Some(l) = self.lines[1].as_mut().filter(|_| d.up) {
                    // up through the AP's line, whose delay line holds the flow's one-way delay
                    l.arrive(now, d.data);
                    continue;
                }
                let at = now + self.delay_of(packet::parse(&d.data).as_ref());
                self.delay_line(at, d.up, d.data);
            }
            if let Some(l) = self.lines[1].as_mut() {
                l.service(now);
                let mut t = now;
                while let Some((at, b)) = l.pop_due(t) {
                    if !sys::write_pkt(self.fds[0], &b) {
                        self.write_errors += 1;
                    }
                    t = sys::mono_ns().saturating_sub(self.origin);
                    self.watch.seen(t);
                    self.late.record(t.saturating_sub(at));
                }
            }
            // Due packets out of the other side.
            let mut t = self.clock();
            while self.line.peek().is_some_and(|Reverse(e)| e.0 <= t) {
                let Reverse((at, _, to_server, b)) = self.line.pop().unwrap();
                if !sys::write_pkt(self.fds[if to_server { 0 } else { 1 }], &b) {
                    self.write_errors += 1;
                }
                t = self.clock();
                self.watch.seen(t);
                self.late.record(t.saturating_sub(at));
            }
            let lines = self.lines.iter().flatten().map(Link::next_event);
            let next = [self.wifi.next_event(), self.line.peek().map(|Reverse(e)| e.0)].into_iter().flatten().chain(lines).min();
            let slept_until = crate::forward::wait_until(&self.fds, self.origin, &self.timing, next.unwrap_or(u64::MAX), &mut spin);
            self.watch.sleeping_until(slept_until);
        }
    }

    /// The AP's line as the link threads report a direction (crate::forward's `finish`): its queue, drops and
    /// samples; the writes' lateness and the stalls are the medium thread's (its own `WifiOutcome` fields).
    fn line_results(&mut self) -> Vec<(String, DirResult)> {
        let now = self.clock();
        let mut out = Vec::new();
        for (i, dir) in ["down", "up"].into_iter().enumerate() {
            let Some(l) = self.lines[i].as_mut() else { continue };
            l.service(now);
            out.push((dir.to_string(), DirResult::of_link(l, self.lead)));
        }
        out
    }

    /// The raw result's `wifi` object (docs/engine-interface.md), as the simulator's.
    fn output(&mut self) -> Value {
        let rates: Vec<u64> = self.wifi.phy_rates().collect();
        let names = self.wifi.names.clone();
        let stations: Vec<Value> = self
            .wifi
            .stations
            .iter_mut()
            .enumerate()
            .map(|(i, s)| {
                let mut o: serde_json::Map<String, Value> = s.counters().iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
                o.insert("name".into(), json!(names[i]));
                o.insert("phy_rate_bps".into(), json!(rates[i]));
                o.insert("qdelay_ms".into(), bloatlab_schema::result::DistOut::json_of(&mut s.qdelay_ms));
                Value::Object(o)
            })
            .collect();
        let mut o: serde_json::Map<String, Value> = self.wifi.stats.counters().iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        o.insert("mac".into(), json!(self.wifi.design.name()));
        o.insert("write_errors".into(), json!(self.write_errors));
        o.insert("stations".into(), json!(stations));
        Value::Object(o)
    }
}
