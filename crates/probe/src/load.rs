//! Latency under load: flent's rrul / tcp_ndown and the IETF responsiveness
//! test (draft-ietf-ippm-responsiveness-08), with bloatlab's own generators.
//!
//! Phases: (1) idle: UDP echo probes and TCP-connect probes only;
//! (2) loaded: `--down N` flows server → client and `--up N` flows
//! client → server for `-t` seconds, the same probes running throughout.
//! Probes sent during the first [`RAMP_FRACTION`] of the loaded phase (flows
//! still in slow start) are kept in the series but left out of the loaded
//! statistics.
//!
//! Per-direction latency increase needs no clock synchronisation: with the
//! server's timestamps, (server rx - client tx) = one-way delay up + offset
//! and (client rx - server tx) = one-way delay down - offset, so the change
//! of their medians between idle and loaded is the change of each one-way
//! delay (clock drift over a test is neglected: 50 ppm × 10 s = 0.5 ms is the
//! worst case of a free-running crystal; NTP-disciplined clocks do far better).
//!
//! Responsiveness, after the draft's §4.3: RPM = 60000 / (½·TM(foreign) +
//! ½·TM(self)) with TM the 95 % trimmed mean (top 5 % dropped) in ms. Our
//! foreign probe is a fresh TCP connect (the draft also counts TLS and HTTP
//! round trips, which we do not have); our self probe is the UDP echo (the
//! draft uses HTTP/2 requests on the loaded connections). Grades are
//! bloatlab's own bands, stated in `docs/probe.md`:
//! ≥ 6000 RPM (≤ 10 ms) excellent, ≥ 1000 (≤ 60 ms) good, ≥ 300 (≤ 200 ms)
//! fair, below that poor.

use crate::report::{fmt_rate, Latency, Output};
use crate::sys;
use crate::tcp;
use crate::udp;
use serde_json::{json, Value};
use std::net::SocketAddr;

/// Share of the loaded phase treated as ramp-up.
pub const RAMP_FRACTION: f64 = 0.2;
/// TCP-connect probe period: 10 per second, as flent's default ping rate.
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
    pub secret: Option<Vec<u8>>,
    pub t0_mono: u64,
    pub verbose: bool,
}

/// Most connect probes in flight at once: at 10 per second that covers
/// connects of up to 6.4 s (a deep queue on a long path); beyond, a due
/// probe is counted as late instead of being issued.
pub const CONNECT_MAX_INFLIGHT: usize = 64;
/// How long after its phase the connects still in flight may finish (then
/// they count as unanswered).
pub const CONNECT_GRACE_NS: u64 = 2_000_000_000;

/// TCP-connect probes of one phase.
#[derive(Debug, Default, Clone)]
pub struct Connects {
    /// (start, s since t0; handshake time, ms) of each answered connect
    pub done: Vec<(f64, f64)>,
    /// due while [`CONNECT_MAX_INFLIGHT`] were pending: not issued, not moved
    pub late: u64,
    /// issued but not answered by the phase's end + [`CONNECT_GRACE_NS`]
    pub unanswered: u64,
}

/// TCP-connect probes every [`CONNECT_INTERVAL_NS`] from now until `until`,
/// each issued on schedule on its own thread (draft-ietf-ippm-responsiveness's
/// foreign probes run in parallel with the load): a slow handshake delays no
/// later probe, and no probe starts after the phase (before, one blocking
/// thread ran them back to back: at 200 ms RTT under load 80 connects due in
/// 8 s ran on for 12 s more, measured as "loaded" while the load had stopped).
fn connect_probes(addr: SocketAddr, t0: u64, until: u64) -> Connects {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    let (tx, rx) = mpsc::channel();
    let inflight = Arc::new(AtomicUsize::new(0));
    let mut out = Connects::default();
    let mut issued = 0u64;
    let mut next = sys::mono_ns();
    while next < until && !sys::stopped() {
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
            if let Ok(s) = tcp::connect(addr, None, None) {
                let b = sys::mono_ns();
                let _ = tx.send(((a - t0) as f64 / 1e9, (b - a) as f64 / 1e6));
                drop(s);
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
    let grace_end = sys::mono_ns().max(until) + CONNECT_GRACE_NS;
    while inflight.load(Ordering::SeqCst) > 0 && sys::mono_ns() < grace_end && !sys::stopped() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    out.done = rx.try_iter().collect();
    out.done.sort_by(|x, y| x.0.total_cmp(&y.0));
    out.unanswered = issued - out.done.len() as u64;
    out
}

/// 95 % trimmed mean: the mean after dropping the top 5 %.
pub fn trimmed_mean_95(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let keep = ((v.len() as f64) * 0.95).ceil().max(1.0) as usize;
    v[..keep].iter().sum::<f64>() / keep as f64
}

pub fn rpm(connect_ms: &[f64], rtt_ms: &[f64]) -> f64 {
    let (f, s) = (trimmed_mean_95(connect_ms), trimmed_mean_95(rtt_ms));
    let d = match (f.is_finite(), s.is_finite()) {
        (true, true) => 0.5 * f + 0.5 * s,
        (true, false) => f,
        (false, true) => s,
        _ => return f64::NAN,
    };
    60_000.0 / d
}

pub fn grade(rpm: f64) -> (&'static str, &'static str) {
    if !rpm.is_finite() {
        ("unknown", "no latency samples")
    } else if rpm >= 6000.0 {
        ("excellent", "latency hardly grows under load; calls and games stay smooth")
    } else if rpm >= 1000.0 {
        ("good", "under load a round trip stays below 60 ms")
    } else if rpm >= 300.0 {
        ("fair", "under load round trips reach 60-200 ms: calls and games suffer while something downloads")
    } else {
        ("poor", "under load round trips exceed 200 ms: this path is bufferbloated")
    }
}

fn median_i64(v: &[i64]) -> f64 {
    let mut f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    let l = Latency::of(&mut f);
    l.p50
}

pub struct LoadResult {
    pub output: Output,
    pub text: String,
    pub problem: Option<String>,
}

pub fn run(cfg: &LoadCfg) -> Result<LoadResult, tcp::ClientError> {
    let t0 = cfg.t0_mono;
    let udp_cfg = |dur: u64| udp::ClientCfg {
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
        t0_mono: t0,
        stop_at_mono: None,
    };
    // phase 1: idle
    let idle_end = sys::mono_ns() + cfg.idle_ns;
    let addr = cfg.addr;
    let ch = std::thread::spawn(move || connect_probes(addr, t0, idle_end));
    let idle_udp = udp::run_client(&udp_cfg(cfg.idle_ns)).map_err(|msg| tcp::ClientError { status: 1, msg })?;
    let idle_conn = ch.join().unwrap_or_default();
    if idle_udp.received == 0 {
        return Err(tcp::ClientError { status: 1, msg: format!("{}: no UDP echo (is `bloatlab-probe server` running there?)", cfg.addr) });
    }
    // phase 2: loaded
    let load_start = sys::mono_ns();
    let load_end = load_start + cfg.duration_ns;
    let ramp_end_s = (load_start - t0) as f64 / 1e9 + RAMP_FRACTION * cfg.duration_ns as f64 / 1e9;
    let mk = |reverse: bool, n: usize, first_id: usize| tcp::ClientCfg {
        addr: cfg.addr,
        cc: cfg.cc.clone(),
        pacing: false,
        streams: n,
        reverse,
        duration_ns: Some(cfg.duration_ns),
        bytes: None,
        rate_bps: None,
        onoff_ticks: None,
        cport: None,
        info_interval_ns: 10_000_000,
        report_ns: 0,
        t0_mono: t0,
        first_id,
        secret: cfg.secret.clone(),
        wait_go: false,
        done_file: None,
    };
    let down = (cfg.down > 0).then(|| {
        let c = mk(true, cfg.down, 0);
        std::thread::spawn(move || tcp::run_client(&c))
    });
    let up = (cfg.up > 0).then(|| {
        let c = mk(false, cfg.up, cfg.down);
        std::thread::spawn(move || tcp::run_client(&c))
    });
    let ch = std::thread::spawn(move || connect_probes(addr, t0, load_end));
    let load_udp = udp::run_client(&udp_cfg(cfg.duration_ns)).map_err(|msg| tcp::ClientError { status: 1, msg })?;
    let load_conn = ch.join().unwrap_or_default();
    let mut flows = Vec::new();
    let mut series = crate::report::FlowSeries::default();
    let mut problem = None;
    let mut goodput = (0.0, 0.0);
    let mut cc_seen = None;
    for (h, is_down) in [(down, true), (up, false)] {
        if let Some(h) = h {
            match h.join() {
                Ok(Ok(r)) => {
                    let g: f64 = r.flows.iter().map(|f| f.goodput_mbps()).sum();
                    if is_down { goodput.0 = g } else { goodput.1 = g }
                    flows.extend(r.flows);
                    series.append(&r.series);
                    if let Some(p) = r.problem {
                        problem.get_or_insert(p);
                    }
                    cc_seen = cc_seen.or(r.cc);
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => problem = Some("a load thread panicked".into()),
            }
        }
    }
    // statistics
    let loaded_idx: Vec<usize> = (0..load_udp.t_s.len()).filter(|&i| load_udp.t_s[i] >= ramp_end_s).collect();
    let mut idle_rtt: Vec<f64> = idle_udp.rtt_us.iter().map(|x| x / 1e3).collect();
    let mut load_rtt: Vec<f64> = loaded_idx.iter().map(|&i| load_udp.rtt_us[i] / 1e3).collect();
    let idle_c: Vec<f64> = idle_conn.done.iter().map(|x| x.1).collect();
    let load_c: Vec<f64> = load_conn.done.iter().filter(|x| x.0 >= ramp_end_s).map(|x| x.1).collect();
    let rpm_loaded = rpm(&load_c, &load_rtt);
    let rpm_idle = rpm(&idle_c, &idle_rtt);
    let (g, gtext) = grade(rpm_loaded);
    let li = Latency::of(&mut idle_rtt);
    let ll = Latency::of(&mut load_rtt);
    let lci = Latency::of(&mut idle_c.clone());
    let lcl = Latency::of(&mut load_c.clone());
    let owd = |v: &Vec<i64>, idx: Option<&[usize]>| -> Vec<i64> {
        match idx {
            Some(ix) => ix.iter().filter_map(|&i| v.get(i).copied()).collect(),
            None => v.clone(),
        }
    };
    let has_ts = !idle_udp.owd_up_ns.is_empty() && load_udp.owd_up_ns.len() == load_udp.rtt_us.len();
    let (up_inc, down_inc) = if has_ts {
        (
            (median_i64(&owd(&load_udp.owd_up_ns, Some(&loaded_idx))) - median_i64(&idle_udp.owd_up_ns)) / 1e6,
            (median_i64(&owd(&load_udp.owd_down_ns, Some(&loaded_idx))) - median_i64(&idle_udp.owd_down_ns)) / 1e6,
        )
    } else {
        (f64::NAN, f64::NAN)
    };
    // the probe series: the whole run (idle then loaded)
    let mut probe = load_udp.probe_raw(0);
    let idle_probe = idle_udp.probe_raw(0);
    probe.sent += idle_probe.sent;
    probe.received += idle_probe.received;
    probe.t = idle_probe.t.iter().chain(&probe.t).copied().collect();
    probe.rtt_ms = idle_probe.rtt_ms.iter().chain(&probe.rtt_ms).copied().collect();
    let mut all: Vec<f64> = probe.rtt_ms.iter().map(|x| x * 1e3).collect();
    probe.rtt = Latency::of(&mut all);
    let mut out = Output::new("load", Value::Null, t0);
    out.duration_s = (sys::mono_ns() - t0) as f64 / 1e9;
    out.cc = cc_seen.clone();
    out.flows = flows;
    out.series = series;
    out.probes = vec![probe];
    let lat = |l: &Latency| json!({"n": l.n, "p50": l.p50 / 1e0, "p90": l.p90, "p99": l.p99, "mean": l.mean, "max": l.max});
    out.extra.insert(
        "load".into(),
        json!({
            "idle": {"udp_rtt_ms": lat(&li), "connect_ms": lat(&lci), "rpm": rpm_idle},
            "loaded": {"udp_rtt_ms": lat(&ll), "connect_ms": lat(&lcl), "rpm": rpm_loaded,
                        "from_s": ramp_end_s, "udp_loss": load_udp.probe_raw(0).loss(),
                        "connects_late": load_conn.late, "connects_unanswered": load_conn.unanswered},
            "latency_increase_ms": {"rtt_p50": ll.p50 - li.p50, "rtt_p90": ll.p90 - li.p90, "rtt_p99": ll.p99 - li.p99,
                                     "up_p50": up_inc, "down_p50": down_inc},
            "goodput_mbps": {"down": goodput.0, "up": goodput.1},
            "responsiveness": {"rpm": rpm_loaded, "idle_rpm": rpm_idle, "grade": g, "text": gtext,
                                "method": "60000 / (0.5*TM95(tcp connect ms) + 0.5*TM95(udp echo rtt ms)), loaded phase after ramp"},
        }),
    );
    out.extra.insert("problem".into(), json!(problem));
    let ms = |x: f64| if x.is_finite() { format!("{x:.2} ms") } else { "-".into() };
    let sms = |x: f64| if x.is_finite() { format!("{x:+.2} ms") } else { "-".into() };
    let text = format!(
        "idle:    udp rtt p50 {} p90 {} p99 {}   tcp connect p50 {}\n\
         loaded:  udp rtt p50 {} p90 {} p99 {}   tcp connect p50 {}   ({} down, {} up, cc {})\n\
         latency increase under load: rtt {} (p50) {} (p90); upstream {} downstream {} (one-way, p50)\n\
         goodput: down {} up {}\n\
         responsiveness: {:.0} RPM under load ({:.0} idle): {} - {}\n",
        ms(li.p50), ms(li.p90), ms(li.p99), ms(lci.p50),
        ms(ll.p50), ms(ll.p90), ms(ll.p99), ms(lcl.p50), cfg.down, cfg.up, cc_seen.as_deref().unwrap_or("default"),
        sms(ll.p50 - li.p50), sms(ll.p90 - li.p90), sms(up_inc), sms(down_inc),
        fmt_rate(goodput.0 * 1e6), fmt_rate(goodput.1 * 1e6),
        rpm_loaded, rpm_idle, g, gtext
    );
    if cfg.verbose {
        eprintln!("load: {} idle probes, {} loaded probes", idle_udp.received, load_udp.received);
    }
    Ok(LoadResult { output: out, text, problem })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_mean_drops_the_top_five_percent() {
        let mut v: Vec<f64> = (1..=19).map(|x| x as f64).collect();
        v.push(1000.0);
        // 20 samples: keep 19 (ceil(0.95*20) = 19), mean of 1..19 = 10
        assert_eq!(trimmed_mean_95(&v), 10.0);
    }

    #[test]
    fn rpm_of_a_steady_20ms_round_trip_is_3000_and_graded_good() {
        let r = rpm(&[20.0; 10], &[20.0; 10]);
        assert_eq!(r, 3000.0);
        assert_eq!(grade(r).0, "good");
        assert_eq!(grade(250.0).0, "poor");
        assert_eq!(grade(6000.0).0, "excellent");
    }
}
