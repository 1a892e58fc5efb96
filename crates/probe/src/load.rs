//! Latency under load: flent's rrul / tcp_ndown and the IETF responsiveness
//! test (draft-ietf-ippm-responsiveness-08), with bloatlab's own generators
//! and over bloatlab's own protocol (`probewire`), not HTTP.
//!
//! Phases: (1) idle: UDP echo probes and foreign probes only; (2) loaded:
//! `--down N` flows server → client and `--up N` flows client → server for
//! `-t` seconds, the probes running throughout. With `--sequential` the
//! loaded phase runs three times, as the draft's §4.1.2 asks a tool to offer:
//! download only, upload only, then both at once. Probes sent during the
//! first [`RAMP_FRACTION`] of a loaded phase (flows still in slow start) are
//! kept in the series but left out of the loaded latency statistics.
//!
//! Probes, each on its own schedule and only while its phase runs:
//! - UDP echo every `--probe-interval` (10 ms): RTT and, with the server's
//!   timestamps, the one-way delays;
//! - foreign probes every [`CONNECT_INTERVAL_NS`] (100 ms): a new TCP
//!   connection (`tcp_f`, the `connect_ms` figures) and a 16-byte request on
//!   it (`http_f`);
//! - self probes every 100 ms, half an interval after the foreign ones
//!   (the draft interleaves the two kinds): a 16-byte request on one of the
//!   loaded connections chosen at random (`http_l`, `probewire`).
//!
//! Probe traffic is far below the draft's 5 % of capacity (PTC): a foreign
//! probe is ~7 packets (~500 B), a self probe 2 messages of 16-24 B plus
//! headers; 10 of each per second is ~60 kbit/s, 3 % of a 2 Mbit/s link.
//!
//! Per-direction latency increase needs no clock synchronisation: with the
//! server's timestamps, (server rx - client tx) = one-way delay up + offset
//! and (client rx - server tx) = one-way delay down - offset, so the change
//! between idle and loaded is the change of each one-way delay (clock drift
//! over a test is neglected: 50 ppm × 10 s = 0.5 ms is the worst case of a
//! free-running crystal; NTP-disciplined clocks do far better).
//!
//! Responsiveness and its confidence are the draft's (`rpm.rs`): RPM over the
//! probes of the last 4 one-second intervals of a loaded phase; confidence
//! low / medium / high from its stability test. The bufferbloat grade is
//! DSLReports' of the added latency (loaded mean minus idle mean, after the
//! ramp): per phase of the round trip, per direction of the one-way delays.

use crate::live::{self, Live};
use crate::probewire::{self, Board};
use crate::report::{fmt_rate, FlowRaw, FlowSeries, Latency, Output};
use crate::rpm::{self, Samples};
use crate::sys;
use crate::tcp;
use crate::udp;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;

/// Share of the loaded phase treated as ramp-up.
pub const RAMP_FRACTION: f64 = 0.2;
/// Foreign (and self) probe period: 10 per second, as flent's default ping rate.
pub const CONNECT_INTERVAL_NS: u64 = 100_000_000;

#[derive(Debug, Clone)]
pub struct LoadCfg {
    pub addr: SocketAddr,
    pub down: usize,
    pub up: usize,
    pub cc: Option<String>,
    pub duration_ns: u64,
    pub idle_ns: u64,
    pub probe_interval_ns: u64,
    /// the flows' TCP_INFO sample period
    pub sample_interval_ns: u64,
    pub secret: Option<Vec<u8>>,
    pub t0_mono: u64,
    pub verbose: bool,
    /// self probes on the loaded connections (framed data connections)
    pub self_probes: bool,
    /// foreign probes: a connection and a request to the server 10 times a second (`--no-foreign-probes`: none)
    pub foreign_probes: bool,
    /// download only, upload only, then both (one loaded phase each)
    pub sequential: bool,
    /// the flows stop at each phase's end (`--halt-at-end`, tcp::ClientCfg::halt_at_end)
    pub halt_at_end: bool,
    /// where a loaded phase's end is decided while it runs (crate::live): `--until-stable FLOOR`
    /// (`--floor-packets`, `--queue-only`) once saturated, not before its floors nor after `duration_ns`; or
    /// (`--until-loss`, `Until::at_loss`) a round trip after a flow first met a loss; the flows then stop with
    /// it, as with `halt_at_end`
    pub until: Option<live::Until>,
    /// `--halt-rtts N` (`--halt-packets M`): a phase that reaches its `-t` ends there, its flows stopped as with
    /// `halt_at_end`, where its second half spanned N loaded round trips and carried M full segments
    /// (crate::live::Halt); else they wait for their acks
    pub halt: Option<live::Halt>,
}

/// Most foreign probes in flight at once: at 10 per second that covers
/// probes of up to 6.4 s (a deep queue on a long path); beyond, a due
/// probe is counted as late instead of being issued.
pub const CONNECT_MAX_INFLIGHT: usize = 64;
/// How long after its phase the foreign probes still in flight may finish
/// (then they count as unanswered).
pub const CONNECT_GRACE_NS: u64 = 2_000_000_000;

/// Foreign probes of one phase.
#[derive(Debug, Default, Clone)]
pub struct Connects {
    /// (start, s since t0; handshake ms; request/response ms if answered) of each connected probe
    pub done: Vec<(f64, f64, Option<f64>)>,
    /// due while [`CONNECT_MAX_INFLIGHT`] were pending: not issued, not moved
    pub late: u64,
    /// issued but not connected by the phase's end + [`CONNECT_GRACE_NS`]
    pub unanswered: u64,
}

/// Foreign probes every [`CONNECT_INTERVAL_NS`] from now until `until`,
/// each issued on schedule on its own thread (the draft's foreign probes run
/// in parallel with the load): a slow handshake delays no later probe, and no
/// probe starts after the phase (before, one blocking thread ran them back to
/// back: at 200 ms RTT under load 80 connects due in 8 s ran on for 12 s
/// more, measured as "loaded" while the load had stopped).
fn connect_probes(addr: SocketAddr, t0: u64, until: u64, live: Option<Arc<Live>>) -> Connects {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    let (tx, rx) = mpsc::channel();
    let inflight = Arc::new(AtomicUsize::new(0));
    let mut out = Connects::default();
    let mut issued = 0u64;
    let mut next = sys::mono_ns();
    // the phase's end, where it is decided while the phase runs (`--until-stable`)
    let until_now = || live.as_ref().map_or(until, |l| until.min(l.end()));
    let grace_end = until + CONNECT_GRACE_NS;
    while next < until_now() && !sys::stopped() {
        sys::sleep_until_mono(next);
        next += CONNECT_INTERVAL_NS;
        if inflight.load(Ordering::SeqCst) >= CONNECT_MAX_INFLIGHT {
            out.late += 1;
            continue;
        }
        inflight.fetch_add(1, Ordering::SeqCst);
        issued += 1;
        let (tx, mine) = (tx.clone(), inflight.clone());
        let spawned = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
            let a = sys::mono_ns();
            if let Ok((hs, req)) = probewire::foreign_probe(addr, grace_end.saturating_sub(a)) {
                let _ = tx.send(((a - t0) as f64 / 1e9, hs as f64 / 1e6, req.map(|r| r as f64 / 1e6)));
            }
            mine.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            inflight.fetch_sub(1, Ordering::SeqCst);
            issued -= 1;
            out.late += 1;
        }
    }
    drop(tx);
    while inflight.load(Ordering::SeqCst) > 0 && sys::mono_ns() < grace_end.min(until_now() + CONNECT_GRACE_NS) && !sys::stopped() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    out.done = rx.try_iter().collect();
    out.done.sort_by(|x, y| x.0.total_cmp(&y.0));
    out.unanswered = issued - out.done.len() as u64;
    out
}

/// Self probes every [`CONNECT_INTERVAL_NS`], starting half a period after
/// `start`, until `until`; then the board is finished. Returns (issued,
/// late): a probe whose time passed by more than a period while this thread
/// did not run (a busy machine) is counted as late and not sent, and none is
/// sent after `until` (before, a stalled scheduler sent 8 at once after the
/// load had ended, left unanswered).
fn self_probes(board: Arc<Board>, start: u64, until: u64, live: Option<Arc<Live>>) -> (u64, u64) {
    let mut next = start + CONNECT_INTERVAL_NS / 2;
    let (mut issued, mut late) = (0, 0);
    let until_now = || live.as_ref().map_or(until, |l| until.min(l.end()));
    while next < until_now() && !sys::stopped() {
        let until = until_now();
        sys::sleep_until_mono(next);
        let now = sys::mono_ns();
        let due = next;
        next += CONNECT_INTERVAL_NS;
        if now >= until {
            late += 1 + until.saturating_sub(next).div_ceil(CONNECT_INTERVAL_NS);
            break;
        }
        if now > due + CONNECT_INTERVAL_NS {
            late += 1;
            continue;
        }
        if board.issue() {
            issued += 1;
        }
    }
    board.finish();
    (issued, late)
}

/// The draft's 95 % trimmed mean (kept for callers of the older name).
pub fn trimmed_mean_95(xs: &[f64]) -> f64 {
    rpm::tm(xs)
}

/// The grade of an RPM with what it means for a user.
pub fn grade(rpm: f64) -> (&'static str, &'static str) {
    let g = rpm::rpm_class(rpm);
    let text = match g {
        "unknown" => "no latency samples",
        "excellent" => "latency hardly grows under load; calls and games stay smooth",
        "good" => "under load a round trip stays below 60 ms",
        "fair" => "under load round trips reach 60-200 ms: calls and games suffer while something downloads",
        _ => "under load round trips exceed 200 ms: this path is bufferbloated",
    };
    (g, text)
}

fn median_i64(v: &[i64]) -> f64 {
    let mut f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    Latency::of(&mut f).p50
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

pub struct LoadResult {
    pub output: Output,
    pub text: String,
    pub problem: Option<String>,
}

/// One loaded phase as measured.
struct Phase {
    name: &'static str,
    down: usize,
    up: usize,
    /// CLOCK_MONOTONIC at the start and the planned end
    start: u64,
    end: u64,
    udp: udp::ClientResult,
    conn: Connects,
    board: Option<Arc<Board>>,
    self_issued: u64,
    self_late: u64,
    flows: Vec<FlowRaw>,
    series: FlowSeries,
    goodput: (f64, f64),
    problem: Option<String>,
    /// flows (ids) whose data connection never reached the server (tcp::ClientResult::missing_flows)
    missing_flows: Vec<usize>,
    cc: Option<String>,
    /// `--until-stable`: when the load was saturated (s since the phase began; crate::live)
    saturated_at_s: Option<f64>,
    /// `--until-loss`: when a flow first met a loss (s since the phase began)
    lost_at_s: Option<f64>,
    /// `--until-stable`, `--until-loss`: the intervals watched
    intervals: usize,
    /// `--halt-rtts`: the loaded round trip (ms) judged at the ceiling and whether the flows stopped there
    halt: Option<(f64, bool)>,
    /// when the phase's steps ended, s since t0 (`timing_s` in its JSON): where its wall time goes
    timing: Value,
}

fn udp_cfg(cfg: &LoadCfg, dur: u64) -> udp::ClientCfg {
    udp::ClientCfg {
        addr: cfg.addr,
        count: None,
        duration_ns: Some(dur),
        interval_ns: cfg.probe_interval_ns,
        size: 64,
        busy_poll: false,
        secret: cfg.secret.clone(),
        timeout_ns: 2_000_000_000,
        give_up_ns: 5_000_000_000,
        report_ns: 0,
        t0_mono: cfg.t0_mono,
        stop_at_mono: None,
        live: None,
    }
}

/// How long a phase's client asks again a server that refused its test as
/// busy (ns). The phases follow one another with no pause: the last phase's
/// tests hold their slots until the server's threads have sent their results
/// and returned, a few ms after the client read them on an idle machine, and
/// the "both" phase's two tests are the most a server runs from one address.
/// 2 s: twenty of the server's wake periods, a bound on a loaded machine's
/// teardown, and short beside a phase (seconds to tens).
const BUSY_WAIT_NS: u64 = 2_000_000_000;

fn run_phase(cfg: &LoadCfg, name: &'static str, down: usize, up: usize, first_id: usize, base_ms: f64) -> Result<Phase, tcp::ClientError> {
    let t0 = cfg.t0_mono;
    let start = sys::mono_ns();
    // `--until-loss`: -t bounds when the loss may come (the watcher ends a phase that met none there); the phase
    // itself runs the round trip after a loss seen just before -t, whose queue a slow start cannot have made longer
    // than the time it ran: the flows and probes may run to twice -t and the base round trip (crate::live). Ended
    // by -t instead, with the queue full and the flows losing, the server's results were lost (a 4.35-s FIFO at
    // 2.47 Mbit/s and 549 ms: a loss at 14.9 s of a 15-s phase)
    let at_loss = cfg.until.is_some_and(|u| u.at_loss);
    let run_ns = if at_loss { 2 * cfg.duration_ns + (base_ms.max(0.0) * 1e6) as u64 } else { cfg.duration_ns };
    let ceiling = start + cfg.duration_ns;
    let end = start + run_ns;
    let live = (cfg.until.is_some() || cfg.halt.is_some()).then(Live::new);
    let board = cfg.self_probes.then(Board::new);
    let mk = |reverse: bool, n: usize, first_id: usize| tcp::ClientCfg {
        addr: cfg.addr,
        cc: cfg.cc.clone(),
        pacing: false,
        streams: n,
        reverse,
        duration_ns: Some(run_ns),
        bytes: None,
        rate_bps: None,
        onoff_ticks: None,
        cport: None,
        info_interval_ns: cfg.sample_interval_ns,
        report_ns: 0,
        t0_mono: t0,
        first_id,
        secret: cfg.secret.clone(),
        wait_go: false,
        done_file: None,
        self_probes: board.clone(),
        halt_at_end: cfg.halt_at_end,
        live: live.clone(),
        busy_wait_ns: BUSY_WAIT_NS,
    };
    let dn = (down > 0).then(|| {
        let c = mk(true, down, first_id);
        std::thread::spawn(move || tcp::run_client(&c))
    });
    let upl = (up > 0).then(|| {
        let c = mk(false, up, first_id + down);
        std::thread::spawn(move || tcp::run_client(&c))
    });
    let addr = cfg.addr;
    let lv = live.clone();
    let ch = cfg.foreign_probes.then(|| std::thread::spawn(move || connect_probes(addr, t0, end, lv)));
    let lv = live.clone();
    let sh = board.clone().map(|b| std::thread::spawn(move || self_probes(b, start, end, lv)));
    // the watcher: ends the phase once saturated, not before the floor (crate::live)
    let (until, halt) = (cfg.until, cfg.halt);
    let wh = live.clone().map(|l| std::thread::spawn(move || live::watch(&l, start, ceiling, until, base_ms, halt)));
    let udp = udp::run_client(&udp::ClientCfg { live: live.clone(), ..udp_cfg(cfg, run_ns) }).map_err(|msg| tcp::ClientError { status: 1, msg })?;
    let s_of = |m: u64| if m == 0 { Value::Null } else { json!((m.saturating_sub(t0)) as f64 / 1e9) };
    let udp_done = sys::mono_ns();
    let conn = ch.and_then(|h| h.join().ok()).unwrap_or_default();
    let foreign_done = sys::mono_ns();
    let (self_issued, self_late) = sh.map(|h| h.join().unwrap_or((0, 0))).unwrap_or((0, 0));
    let watched = wh.and_then(|h| h.join().ok()).unwrap_or_default();
    // the phase ended where its watcher decided, else at its planned end
    let end = live.as_ref().map_or(end, |l| end.min(l.end()));
    let mut ph = Phase {
        name, down, up, start, end, udp, conn, board, self_issued, self_late,
        flows: Vec::new(), series: FlowSeries::default(), goodput: (0.0, 0.0), problem: None, missing_flows: Vec::new(), cc: None,
        saturated_at_s: watched.saturated_at_s, lost_at_s: watched.lost_at_s, intervals: watched.intervals.len(), halt: watched.halt,
        timing: Value::Null,
    };
    let mut clients = serde_json::Map::new();
    for (h, is_down) in [(dn, true), (upl, false)] {
        if let Some(h) = h {
            match h.join() {
                Ok(Ok(r)) => {
                    let t = &r.timing;
                    clients.insert(
                        if is_down { "down" } else { "up" }.into(),
                        json!({"streams_done_s": s_of(t.streams_done), "server_results_s": s_of(t.server_results),
                               "results_read_s": s_of(t.results_read), "results_bytes": t.results_bytes}),
                    );
                    let g: f64 = r.flows.iter().map(|f| f.goodput_mbps()).sum();
                    if is_down { ph.goodput.0 = g } else { ph.goodput.1 = g }
                    ph.flows.extend(r.flows);
                    ph.missing_flows.extend(&r.missing_flows);
                    ph.series.append(&r.series);
                    if let Some(p) = r.problem {
                        ph.problem.get_or_insert(p);
                    }
                    ph.cc = ph.cc.or(r.cc);
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => ph.problem = Some("a load thread panicked".into()),
            }
        }
    }
    ph.timing = json!({"udp_done_s": s_of(udp_done), "foreign_done_s": s_of(foreign_done), "joined_s": s_of(sys::mono_ns()),
                       "clients": clients});
    Ok(ph)
}

/// Bytes the flows delivered in each [`rpm::ID_NS`] interval from `from_s`
/// (s since t0), from their TCP_INFO series (the last sample at or before
/// each boundary).
fn bytes_by_interval(series: &FlowSeries, from_s: f64, n: usize) -> Vec<u64> {
    let id_s = rpm::ID_NS as f64 / 1e9;
    let mut flows: Vec<u32> = series.flow.clone();
    flows.sort_unstable();
    flows.dedup();
    let mut out = vec![0u64; n];
    for f in flows {
        let at = |b: f64| -> u64 {
            (0..series.t.len()).filter(|&i| series.flow[i] == f && series.t[i] <= b).map(|i| series.delivered_bytes[i]).max().unwrap_or(0)
        };
        for (k, o) in out.iter_mut().enumerate() {
            *o += at(from_s + (k + 1) as f64 * id_s).saturating_sub(at(from_s + k as f64 * id_s));
        }
    }
    out
}

fn lat_json(l: &Latency) -> Value {
    json!({"n": l.n, "p50": l.p50, "p90": l.p90, "p99": l.p99, "mean": l.mean, "max": l.max})
}

fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

/// What a phase's figures are, against the idle ones.
struct Judged {
    json: Value,
    text: String,
    rpm: rpm::Verdict,
    added_rtt: f64,
    added_up: f64,
    added_down: f64,
    ll: Latency,
    lcl: Latency,
    load_rtt_p: (f64, f64, f64),
    up_p50: f64,
    down_p50: f64,
}

struct Idle {
    udp: udp::ClientResult,
    rtt_ms: Vec<f64>,
    li: Latency,
}

fn judge(cfg: &LoadCfg, idle: &Idle, ph: &Phase) -> Judged {
    let t0 = cfg.t0_mono;
    let start_s = (ph.start - t0) as f64 / 1e9;
    let dur_s = (ph.end - ph.start) as f64 / 1e9;
    let ramp_end_s = start_s + RAMP_FRACTION * dur_s;
    let u = &ph.udp;
    let loaded_idx: Vec<usize> = (0..u.t_s.len()).filter(|&i| u.t_s[i] >= ramp_end_s).collect();
    let load_rtt: Vec<f64> = loaded_idx.iter().map(|&i| u.rtt_us[i] / 1e3).collect();
    let load_c: Vec<f64> = ph.conn.done.iter().filter(|x| x.0 >= ramp_end_s).map(|x| x.1).collect();
    let load_req: Vec<f64> = ph.conn.done.iter().filter(|x| x.0 >= ramp_end_s).filter_map(|x| x.2).collect();
    // the draft's samples, on the phase's own clock
    let mut s = Samples {
        tcp_f: ph.conn.done.iter().map(|x| (x.0 - start_s, x.1)).collect(),
        http_f: ph.conn.done.iter().filter_map(|x| x.2.map(|r| (x.0 - start_s, r))).collect(),
        http_l: Vec::new(),
    };
    let answers = ph.board.as_ref().map(|b| b.answers.lock().unwrap().clone()).unwrap_or_default();
    let self_source = if !answers.is_empty() {
        s.http_l = answers.iter().map(|&(t, rtt, _)| ((t - ph.start) as f64 / 1e9, rtt as f64 / 1e6)).collect();
        "bloatlab frames on the loaded connections"
    } else if !ph.series.t.is_empty() {
        // the draft's stand-in where requests cannot be multiplexed: the stack's smoothed RTT
        s.http_l = (0..ph.series.t.len()).map(|i| (ph.series.t[i] - start_s, ph.series.srtt_ms[i])).collect();
        "tcp_info srtt of the loaded connections (the server did not frame them)"
    } else {
        "none"
    };
    let self_loaded: Vec<f64> = s.http_l.iter().filter(|x| x.0 + start_s >= ramp_end_s).map(|x| x.1).collect();
    let n_int = ((dur_s / (rpm::ID_NS as f64 / 1e9)) + 1e-9).floor() as usize;
    let v = rpm::evaluate(&s, &bytes_by_interval(&ph.series, start_s, n_int), dur_s);
    let ll = Latency::of(&mut load_rtt.clone());
    let lcl = Latency::of(&mut load_c.clone());
    let lreq = Latency::of(&mut load_req.clone());
    let lself = Latency::of(&mut self_loaded.clone());
    let has_ts = !idle.udp.owd_up_ns.is_empty() && u.owd_up_ns.len() == u.rtt_us.len();
    let owd = |v: &Vec<i64>| -> Vec<i64> { loaded_idx.iter().filter_map(|&i| v.get(i).copied()).collect() };
    let owd_mean = |v: &[i64]| mean(&v.iter().map(|&x| x as f64 / 1e6).collect::<Vec<_>>());
    let (up_p50, down_p50, added_up, added_down) = if has_ts {
        let (lu, ld) = (owd(&u.owd_up_ns), owd(&u.owd_down_ns));
        (
            (median_i64(&lu) - median_i64(&idle.udp.owd_up_ns)) / 1e6,
            (median_i64(&ld) - median_i64(&idle.udp.owd_down_ns)) / 1e6,
            owd_mean(&lu) - owd_mean(&idle.udp.owd_up_ns),
            owd_mean(&ld) - owd_mean(&idle.udp.owd_down_ns),
        )
    } else {
        (f64::NAN, f64::NAN, f64::NAN, f64::NAN)
    };
    let added_rtt = mean(&load_rtt) - mean(&idle.rtt_ms);
    let r = &v.last;
    let unanswered = ph.board.as_ref().map(|b| b.unanswered()).unwrap_or(0);
    let framing_error = ph.board.as_ref().and_then(|b| b.error());
    let json = json!({
        "name": ph.name, "down": ph.down, "up": ph.up, "from_s": start_s, "to_s": (ph.end - t0) as f64 / 1e9, "ramp_until_s": ramp_end_s,
        "saturated_at_s": ph.saturated_at_s, "lost_at_s": ph.lost_at_s, "watched_intervals": ph.intervals,
        "halt": ph.halt.map(|(rtt, stopped)| json!({"loaded_rtt_ms": rtt, "stopped": stopped})),
        "udp_rtt_ms": lat_json(&ll), "connect_ms": lat_json(&lcl), "foreign_request_ms": lat_json(&lreq), "self_probe_ms": lat_json(&lself),
        "self_probe_source": self_source,
        "self_probes": {"issued": ph.self_issued, "answered": answers.len(), "unanswered": unanswered, "late": ph.self_late,
                        "unanswered_at_s": ph.board.as_ref().map(|b| b.unanswered_at()).unwrap_or_default().iter().map(|&t| (t - t0) as f64 / 1e9).collect::<Vec<_>>()},
        "foreign_probes": {"connected": ph.conn.done.len(), "answered": ph.conn.done.iter().filter(|x| x.2.is_some()).count(),
                           "late": ph.conn.late, "unanswered": ph.conn.unanswered},
        "rpm": num(r.rpm), "foreign_rpm": num(r.foreign), "loaded_rpm": num(r.loaded), "rpm_time_weighted": num(r.time_weighted),
        "tm_ms": {"tcp_f": num(r.tm_tcp_f), "http_f": num(r.tm_http_f), "http_l": num(r.tm_http_l)},
        "class": rpm::rpm_class(r.rpm), "confidence": v.confidence, "intervals": v.intervals,
        "moving_rpm": v.moving_rpm.iter().map(|&x| num(x)).collect::<Vec<_>>(),
        "moving_goodput_mbps": v.moving_goodput_bps.iter().map(|&x| num(x / 1e6)).collect::<Vec<_>>(),
        "goodput_stable_at_s": v.goodput_stable_at_s, "rpm_stable_at_s": v.rpm_stable_at_s,
        "added_rtt_ms": num(added_rtt), "grade": rpm::bloat_grade(added_rtt),
        "added_one_way_ms": {"up": num(added_up), "down": num(added_down)},
        "grade_one_way": {"up": rpm::bloat_grade(added_up), "down": rpm::bloat_grade(added_down)},
        "goodput_mbps": {"down": ph.goodput.0, "up": ph.goodput.1},
        "problem": framing_error,
        "timing_s": ph.timing.clone(),
    });
    let ms = |x: f64| if x.is_finite() { format!("{x:.1} ms") } else { "-".into() };
    let sms = |x: f64| if x.is_finite() { format!("{x:+.1} ms") } else { "-".into() };
    let text = format!(
        "{:<5} ({} down, {} up): {:.0} RPM ({} confidence; foreign {:.0}, loaded {:.0}), {}\n\
         \x20      udp rtt p50 {}  connect p50 {}  request p50 {}  self probe p50 {}\n\
         \x20      added latency {} (grade {}); one-way up {} ({}) down {} ({}); goodput down {} up {}\n",
        ph.name, ph.down, ph.up, r.rpm, v.confidence, r.foreign, r.loaded, rpm::rpm_class(r.rpm),
        ms(ll.p50), ms(lcl.p50), ms(lreq.p50), ms(lself.p50),
        sms(added_rtt), rpm::bloat_grade(added_rtt), sms(added_up), rpm::bloat_grade(added_up), sms(added_down), rpm::bloat_grade(added_down),
        fmt_rate(ph.goodput.0 * 1e6), fmt_rate(ph.goodput.1 * 1e6),
    );
    Judged {
        json, text, added_rtt, added_up, added_down, load_rtt_p: (ll.p50, ll.p90, ll.p99), ll, lcl, up_p50, down_p50, rpm: v,
    }
}

pub fn run(cfg: &LoadCfg) -> Result<LoadResult, tcp::ClientError> {
    let t0 = cfg.t0_mono;
    // idle
    let idle_end = sys::mono_ns() + cfg.idle_ns;
    let addr = cfg.addr;
    let ch = cfg.foreign_probes.then(|| std::thread::spawn(move || connect_probes(addr, t0, idle_end, None)));
    let idle_udp = udp::run_client(&udp_cfg(cfg, cfg.idle_ns)).map_err(|msg| tcp::ClientError { status: 1, msg })?;
    let idle_conn = ch.and_then(|h| h.join().ok()).unwrap_or_default();
    if idle_udp.received == 0 {
        // either nobody answers there, or the path holds (or drops) every probe for longer than the client's
        // timeout: a deep queue another host keeps full looks the same from here
        let wait = udp_cfg(cfg, cfg.idle_ns).timeout_ns as f64 / 1e9;
        return Err(tcp::ClientError {
            status: 1,
            msg: format!(
                "{}: no UDP echo: none of the idle phase's {} probes came back within {wait} s (is `bloatlab-probe server` \
                 running there? if it is, the path held or dropped every probe: a queue that others' traffic keeps full)",
                cfg.addr, idle_udp.sent
            ),
        });
    }
    let idle_rtt: Vec<f64> = idle_udp.rtt_us.iter().map(|x| x / 1e3).collect();
    let li = Latency::of(&mut idle_rtt.clone());
    // the idle minimum: the base a standing queue is read against (`--until-stable`, crate::live)
    let base_ms = idle_rtt.iter().copied().fold(f64::INFINITY, f64::min);
    let idle = Idle { udp: idle_udp, rtt_ms: idle_rtt, li };
    // loaded phases
    let plan: Vec<(&'static str, usize, usize)> = if cfg.sequential {
        [("down", cfg.down, 0), ("up", 0, cfg.up), ("both", cfg.down, cfg.up)].into_iter().filter(|p| p.1 + p.2 > 0).collect()
    } else {
        let name = match (cfg.down > 0, cfg.up > 0) {
            (true, true) => "both",
            (true, false) => "down",
            _ => "up",
        };
        vec![(name, cfg.down, cfg.up)]
    };
    let mut phases = Vec::new();
    let mut first_id = 0;
    for (name, d, u) in plan {
        if sys::stopped() {
            break;
        }
        phases.push(run_phase(cfg, name, d, u, first_id, base_ms)?);
        first_id += d + u;
    }
    let judged: Vec<Judged> = phases.iter().map(|p| judge(cfg, &idle, p)).collect();
    let (last_ph, last) = (phases.last().unwrap(), judged.last().unwrap());
    // idle responsiveness: the foreign probes (no loaded connection to probe)
    let idle_c: Vec<f64> = idle_conn.done.iter().map(|x| x.1).collect();
    let idle_req: Vec<f64> = idle_conn.done.iter().filter_map(|x| x.2).collect();
    let rpm_idle = rpm::rpm(&idle_c, &idle_req, &[]).rpm;
    let rpm_loaded = last.rpm.last.rpm;
    let (g, gtext) = grade(rpm_loaded);
    let lci = Latency::of(&mut idle_c.clone());
    // bufferbloat per direction: a phase that loads one direction only grades the round trip;
    // a run with both at once grades each one-way delay
    let by_name = |n: &str| phases.iter().position(|p| p.name == n).map(|i| &judged[i]);
    let down_added = by_name("down").map(|j| j.added_rtt).unwrap_or(if last_ph.down > 0 { last.added_down } else { f64::NAN });
    let up_added = by_name("up").map(|j| j.added_rtt).unwrap_or(if last_ph.up > 0 { last.added_up } else { f64::NAN });
    let present: Vec<f64> = [down_added, up_added].into_iter().filter(|x| x.is_finite()).collect();
    let overall = mean(&present);
    // the series: idle then every phase
    let mut out = Output::new("load", Value::Null, t0);
    let mut probe = idle.udp.probe_raw(0);
    for p in &phases {
        let r = p.udp.probe_raw(0);
        probe.sent += r.sent;
        probe.received += r.received;
        probe.t.extend(&r.t);
        probe.rtt_ms.extend(&r.rtt_ms);
    }
    let mut all: Vec<f64> = probe.rtt_ms.iter().map(|x| x * 1e3).collect();
    probe.rtt = Latency::of(&mut all);
    out.duration_s = (sys::mono_ns() - t0) as f64 / 1e9;
    out.cc = phases.iter().find_map(|p| p.cc.clone());
    let mut problem = None;
    for p in &phases {
        out.flows.extend(p.flows.iter().cloned());
        out.series.append(&p.series);
        if let Some(x) = &p.problem {
            problem.get_or_insert(x.clone());
        }
    }
    out.probes = vec![probe];
    let ramp_end_s = last.json["ramp_until_s"].as_f64().unwrap_or(f64::NAN);
    let r = &last.rpm.last;
    out.extra.insert(
        "load".into(),
        json!({
            "idle": {"udp_rtt_ms": lat_json(&idle.li), "connect_ms": lat_json(&lci), "rpm": num(rpm_idle),
                     "foreign_request_ms": lat_json(&Latency::of(&mut idle_req.clone()))},
            "loaded": {"udp_rtt_ms": lat_json(&last.ll), "connect_ms": lat_json(&last.lcl), "rpm": num(rpm_loaded),
                        "from_s": ramp_end_s, "udp_loss": last_ph.udp.probe_raw(0).loss(),
                        "connects_late": last_ph.conn.late, "connects_unanswered": last_ph.conn.unanswered,
                        "self_probe_ms": last.json["self_probe_ms"].clone(), "foreign_request_ms": last.json["foreign_request_ms"].clone()},
            "latency_increase_ms": {"rtt_p50": last.load_rtt_p.0 - idle.li.p50, "rtt_p90": last.load_rtt_p.1 - idle.li.p90,
                                     "rtt_p99": last.load_rtt_p.2 - idle.li.p99, "up_p50": last.up_p50, "down_p50": last.down_p50,
                                     "rtt_mean": num(last.added_rtt), "up_mean": num(last.added_up), "down_mean": num(last.added_down)},
            "goodput_mbps": {"down": last_ph.goodput.0, "up": last_ph.goodput.1},
            "responsiveness": {"rpm": num(rpm_loaded), "idle_rpm": num(rpm_idle), "grade": g, "text": gtext,
                                "confidence": last.rpm.confidence, "confidence_method": "draft-ietf-ippm-responsiveness-08 §4.3.1 (stability of the moving RPM and goodput)",
                                "foreign_rpm": num(r.foreign), "loaded_rpm": num(r.loaded), "rpm_time_weighted": num(r.time_weighted),
                                "self_probe_source": last.json["self_probe_source"].clone(),
                                "method": "draft-ietf-ippm-responsiveness-08 (TCP-only case) over bloatlab's own protocol: (60000/((TM(tcp_f)+TM(http_f))/2) + 60000/TM(http_l))/2, TM = 95 % trimmed mean, over the probes of the last 4 one-second intervals of the loaded phase"},
            "bufferbloat": {"down": rpm::bloat_grade(down_added), "up": rpm::bloat_grade(up_added), "overall": rpm::bloat_grade(overall),
                             "down_added_ms": num(down_added), "up_added_ms": num(up_added), "overall_added_ms": num(overall),
                             "method": "DSLReports (faq/17930): added latency = loaded mean - idle mean after the ramp; A+ < 5 ms, A < 30, B < 60, C < 200, D < 400, else F; per direction the round trip of a one-direction phase, else the one-way delay"},
            "phases": judged.iter().map(|j| j.json.clone()).collect::<Vec<_>>(),
        }),
    );
    out.extra.insert("problem".into(), json!(problem));
    // the flows whose data connection never reached the server: their figures are the client's alone (none read)
    out.extra.insert("missing_flows".into(), json!(phases.iter().flat_map(|p| p.missing_flows.iter().copied()).collect::<Vec<_>>()));
    let ms = |x: f64| if x.is_finite() { format!("{x:.2} ms") } else { "-".into() };
    let mut text = format!(
        "idle:  udp rtt p50 {} p90 {} p99 {}   tcp connect p50 {}   {:.0} RPM (foreign probes)\n",
        ms(idle.li.p50), ms(idle.li.p90), ms(idle.li.p99), ms(lci.p50), rpm_idle
    );
    for j in &judged {
        text.push_str(&j.text);
    }
    text.push_str(&format!(
        "bufferbloat (DSLReports grade of the added latency): down {} up {} overall {}\n\
         responsiveness: {:.0} RPM under load ({} confidence; {:.0} idle): {} - {}\n",
        rpm::bloat_grade(down_added), rpm::bloat_grade(up_added), rpm::bloat_grade(overall),
        rpm_loaded, last.rpm.confidence, rpm_idle, g, gtext
    ));
    if cfg.verbose {
        for p in &phases {
            eprintln!("load {}: {} udp probes, {} foreign, {} self issued", p.name, p.udp.received, p.conn.done.len(), p.self_issued);
        }
    }
    Ok(LoadResult { output: out, text, problem })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_bytes_come_from_each_flows_delivered_counter() {
        // two flows sampled every 0.5 s from t = 10 s, 1000 and 500 B per sample
        let mut s = FlowSeries::default();
        for k in 0..=6 {
            for (f, b) in [(0u32, 1000u64), (1, 500)] {
                s.flow.push(f);
                s.t.push(10.0 + 0.5 * k as f64);
                s.delivered_bytes.push(b * k as u64);
            }
        }
        assert_eq!(bytes_by_interval(&s, 10.0, 3), vec![3000, 3000, 3000]);
        assert_eq!(bytes_by_interval(&s, 9.0, 2), vec![0, 3000]);
    }

    #[test]
    fn self_probes_that_could_not_go_on_time_are_counted_late_never_sent_after_the_phase() {
        // a phase that ended half a second ago (the thread did not run): its 5 probes,
        // due at 50, 150, 250, 350 and 450 ms, are all late and none is issued
        let now = sys::mono_ns();
        let board = Board::new();
        assert_eq!(self_probes(board.clone(), now - 1_000_000_000, now - 500_000_000, None), (0, 5));
        // a phase that began 975 ms ago and runs 0.25 s more: the 9 probes due 925..125 ms
        // ago are more than a period overdue, late; the one due 25 ms ago and the two to
        // come go on time (no connection takes them: not issued)
        let (issued, late) = self_probes(board, now - 975_000_000, now + 250_000_000, None);
        assert_eq!((issued, late), (0, 9));
    }

    #[test]
    fn the_grade_text_follows_the_drafts_classes() {
        assert_eq!(grade(3000.0).0, "good");
        assert_eq!(grade(250.0).0, "poor");
        assert_eq!(grade(6000.0).0, "excellent");
        assert_eq!(trimmed_mean_95(&[1.0, 2.0, 3.0]), 2.0);
    }
}
