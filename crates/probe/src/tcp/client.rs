//! bloatlab's TCP test client: asks a `bloatlab-probe` server for a test
//! (`super::control`), runs its streams (`super::stream`), prints
//! iperf3-style interval lines and summary, and joins the server's half of
//! the measurements (the sender's `TCP_INFO` in a reverse test) to its own.
//! The opening (`super::control`: a tagged iperf3 cookie and iperf3's
//! parameters with ours inside) is also a valid iperf3 test: a server that
//! answers PARAM_EXCHANGE is a stock iperf3 server, and
//! [`run_client_or_iperf3`] hands the connection over so that the test runs
//! in iperf3's protocol (`crate::iperf3::run_opened`) without a second
//! connection (`iperf3 -s -1` serves one).
//!
//! Follows iperf3's client (iperf 3.12 `iperf_client_api.c`): control
//! connection first, then `-P` data connections, intervals every `-i`, the
//! closing sender/receiver block.

use super::control::{
    auth_data, opening, read_line_max, read_line_progress, results_text, send_json, tagged_cookie, ClientCfg, ClientError, ClientResult, Params, CTRL_LINE_WAIT_NS,
    DATA_MAGIC, IPERF3_SERVER, MAX_CTRL_LINE, OPENING_KEY, STOP_LINE,
};
use super::stream::{connect, data_acked, is_timeout, run_receiver, run_sampler, run_sender, Outcome, StreamState, WAKE};
use crate::report::{fmt_bytes, fmt_rate, push_sample, series_from_json, FlowRaw, FlowSeries, Output};
use bloatlab_schema::result::FlowOut;
use crate::sys;
use serde_json::{json, Value};
use std::io::{self, BufReader, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The most a client reads of its server's results (B): a server keeps at most 200 000 samples a test by
/// default, ~48 MB as JSON (docs/probe.md); raised limits need room, a trickling server none beyond this.
const RESULTS_MAX: u64 = 512 << 20;

/// The server's first byte is iperf3's PARAM_EXCHANGE (9): it took our
/// opening for an iperf3 test (a bloatlab-probe server's answer is a JSON
/// line, `{`). Peeks, and consumes that byte when it is iperf3's; waits at
/// most 10 s.
fn answered_like_iperf3(c: &TcpStream) -> bool {
    let end = sys::mono_ns() + 10_000_000_000;
    let mut b = [0u8; 1];
    while sys::mono_ns() < end && !sys::stopped() {
        match c.peek(&mut b) {
            Ok(1) => {
                let iperf3 = b[0] as i8 == crate::iperf3::state::PARAM_EXCHANGE;
                if iperf3 {
                    let _ = std::io::Read::read(&mut &*c, &mut b);
                }
                return iperf3;
            }
            Ok(_) => return false,
            Err(e) if is_timeout(&e) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Who answered: a bloatlab-probe server, whose test has run, or a stock
/// iperf3 server, whose test (the same one, in its protocol) is to run.
pub enum Answer {
    Bloatlab(Box<ClientResult>),
    Iperf3(crate::iperf3::Opened),
}

/// Data connections opened at once (each handshake on a thread of its own): a bound on the threads a client
/// with many streams starts together; beyond it the next batch opens when this one is up.
pub const CONNECT_TOGETHER: usize = 64;

/// A bloatlab test; a stock iperf3 server is an error ([`IPERF3_SERVER`]):
/// for callers that cannot run iperf3's protocol.
pub fn run_client(cfg: &ClientCfg) -> Result<ClientResult, ClientError> {
    match run_client_or_iperf3(cfg)? {
        Answer::Bloatlab(r) => Ok(*r),
        Answer::Iperf3(_) => Err(ClientError { status: IPERF3_SERVER, msg: format!("{} is an iperf3 server", cfg.addr) }),
    }
}

/// A bloatlab test, or, if a stock iperf3 server answered, its control
/// connection, ready for `crate::iperf3::run_opened`. A server that refuses
/// the test as busy is asked again for [`ClientCfg::busy_wait_ns`].
pub fn run_client_or_iperf3(cfg: &ClientCfg) -> Result<Answer, ClientError> {
    let give_up = sys::mono_ns().saturating_add(cfg.busy_wait_ns);
    loop {
        match run_once(cfg) {
            Err(e) if e.status == REFUSED_BUSY => {
                if sys::stopped() || sys::mono_ns().saturating_add(WAKE.as_nanos() as u64) > give_up {
                    return Err(ClientError { status: 1, msg: e.msg });
                }
                std::thread::sleep(WAKE);
            }
            other => return other,
        }
    }
}

/// [`ClientError::status`] of [`run_once`] when the server refused the test
/// for want of a slot (its answer's `busy`), which nothing had begun: never
/// returned by [`run_client_or_iperf3`].
const REFUSED_BUSY: i32 = -10;

fn run_once(cfg: &ClientCfg) -> Result<Answer, ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    if !cfg.reverse {
        if let Some(cc) = &cfg.cc {
            let avail = sys::available_cc();
            if !avail.is_empty() && !avail.iter().any(|a| a == cc) {
                return Err(ClientError {
                    status: 2,
                    msg: format!("-C {cc}: congestion control \"{cc}\" is not available on this kernel; available: {}", avail.join(" ")),
                });
            }
        }
    }
    let ctrl = connect(cfg.addr, None, None).map_err(err1)?;
    let _ = ctrl.set_read_timeout(Some(WAKE));
    let cookie = sys::random_u64();
    let p = Params {
        cookie,
        streams: cfg.streams,
        reverse: cfg.reverse,
        duration_ns: cfg.duration_ns,
        bytes: cfg.bytes,
        rate_bps: cfg.rate_bps,
        onoff_ticks: cfg.onoff_ticks,
        cc: cfg.cc.clone(),
        info_interval_ns: cfg.info_interval_ns,
        pacing: cfg.pacing,
        self_probes: cfg.self_probes.is_some() && cfg.bytes.is_none(),
        deflate_results: true,
    };
    // iperf3's parameters for the same test, ours inside: the text the secret signs
    let mut both = crate::iperf3::params(cfg);
    both[OPENING_KEY] = serde_json::to_value(&p).unwrap();
    let line = both.to_string();
    let cookie3 = tagged_cookie();
    // The cookie and the parameters in one write: two writes would let Nagle hold the
    // parameters until the cookie is acked, a third round trip before the data connection
    // (the emulator's spawn lead counts two: supervise.rs `setup_lead`; measured on
    // fidelity 25: every flow started about RTT - 17 ms late).
    (&ctrl).write_all(&opening(&cookie3, &line)).map_err(|e| err1(format!("control: {e}")))?;
    if answered_like_iperf3(&ctrl) {
        return Ok(Answer::Iperf3(crate::iperf3::Opened { ctrl, cookie: cookie3 }));
    }
    let mut rd = BufReader::new(&ctrl);
    let answer = |rd: &mut BufReader<&TcpStream>| -> Result<Value, ClientError> {
        match read_line_max(rd, CTRL_LINE_WAIT_NS, MAX_CTRL_LINE) {
            Ok(l) => serde_json::from_str(&l)
                .map_err(|_| err1(format!("{}: an answer that is not a bloatlab-probe tcp server's", cfg.addr))),
            // a server whose workers are all busy closes a new connection at once, unanswered
            Err(e) if matches!(e.kind(), io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset) => Err(err1(format!(
                "{}: the server closed the connection without answering: busy (every worker in use), or not a bloatlab-probe tcp server; try again later",
                cfg.addr
            ))),
            Err(_) => Err(err1(format!("{}: no answer from a bloatlab-probe tcp server", cfg.addr))),
        }
    };
    let mut hello = answer(&mut rd)?;
    if let Some(ch) = hello["challenge"].as_str() {
        let Some(secret) = &cfg.secret else {
            return Err(ClientError { status: 2, msg: format!("{}: the server requires a shared secret (--secret)", cfg.addr) });
        };
        let tag = crate::wire::Key::new(secret).sign_hex(auth_data(ch, &line).as_bytes());
        send_json(&ctrl, &json!({"auth": tag})).map_err(|e| err1(format!("control: {e}")))?;
        hello = answer(&mut rd)?;
    }
    if let Some(w) = hello["warning"].as_str() {
        eprintln!("bloatlab-probe: warning from the server: {w}");
    }
    if hello["ok"] != json!(true) {
        let msg = hello["error"].as_str().unwrap_or("refused").to_string();
        let status = if hello.get("available").is_some() || hello.get("limit").is_some() || msg.starts_with("authentication") {
            2
        } else if hello["busy"] == json!(true) {
            REFUSED_BUSY
        } else {
            1
        };
        // only the server's refusal of the control names -C (a limit's message names its own flag: -t, -P, ...)
        let msg = match &cfg.cc {
            Some(cc) if hello.get("available").is_some() => format!("-C {cc}: {msg}"),
            _ => msg,
        };
        return Err(ClientError { status, msg });
    }
    if cfg.wait_go {
        sys::wait_go_line().map_err(err1)?;
    }
    // The data connections open together, each handshake on its own thread (at most CONNECT_TOGETHER at a
    // time). Opened one after another (as iperf3 does), each took a round trip, so the last of `-P 4` began
    // three round trips after the first: 0.33 s at 110 ms, 1.5 s at 500 ms of every loaded phase of `measure`,
    // whose flows then did not share one start.
    let cc = if cfg.reverse { None } else { cfg.cc.as_deref() };
    let ids: Vec<usize> = (0..cfg.streams).collect();
    let opened: Vec<(u64, Result<TcpStream, String>)> = std::thread::scope(|sc| {
        let mut out = Vec::with_capacity(cfg.streams);
        for chunk in ids.chunks(CONNECT_TOGETHER) {
            let hs: Vec<_> = chunk
                .iter()
                .map(|&i| sc.spawn(move || (sys::mono_ns(), connect(cfg.addr, cfg.cport.map(|p| p + i as u16), cc))))
                .collect();
            out.extend(hs.into_iter().map(|h| h.join().unwrap_or_else(|_| (0, Err("a connecting thread panicked".into())))));
        }
        out
    });
    let mut states = Vec::new();
    for (i, (start, opened)) in opened.into_iter().enumerate() {
        let mut s = opened.map_err(|e| ClientError {
            status: if e.starts_with("-C") || e.starts_with("--cport") { 2 } else { 1 },
            msg: e,
        })?;
        if cfg.pacing && !cfg.reverse {
            sys::set_internal_pacing(s.as_raw_fd()).map_err(|e| err1(format!("--pacing: SO_MAX_PACING_RATE: {e}")))?;
        }
        let mut h = Vec::with_capacity(16);
        h.extend_from_slice(DATA_MAGIC);
        h.extend_from_slice(&cookie.to_le_bytes());
        h.extend_from_slice(&(i as u32).to_le_bytes());
        // A bulk upload's header leaves with its first data (MSG_MORE). Written alone,
        // its 16 bytes took one of the initial window's 10 segments: a 100 KB
        // upload at 200 ms needed a fourth round for its last 88 bytes (fct 1.00 s
        // on the kernel; 0.80 s with the header inside the first segment, as the
        // model's application writes its data). A download's header is its request
        // and goes at once; a paced (rate, on/off) upload's first write may be far
        // off, and the server waits only 5 s for the header.
        let bulk_up = !cfg.reverse && cfg.rate_bps.is_none() && cfg.onoff_ticks.is_none();
        let sent = if bulk_up { sys::send_more(s.as_raw_fd(), &h) } else { s.write_all(&h) };
        sent.map_err(|e| err1(format!("data connection: {e}")))?;
        // the SYN's sequence number and the hello come before the data in tcpi_bytes_acked
        states.push(StreamState::new(i, s, start, 1 + h.len() as u64));
    }
    if let (Some(board), Some(true)) = (&cfg.self_probes, hello["self_probes"].as_bool()) {
        for s in &states {
            crate::probewire::Framing::attach(s, Some(board.clone()), cfg.reverse).map_err(|e| err1(format!("self probes: {e}")))?;
        }
    }
    let sampler = if !cfg.reverse {
        let v = states.clone();
        let iv = cfg.info_interval_ns;
        Some(std::thread::spawn(move || run_sampler(v, iv)))
    } else {
        None
    };
    // the end of a timed test where its senders halt there (`halt_at_end`): the streams' start + the duration
    let halt_at = cfg.halt_at_end.then(|| cfg.duration_ns.map(|d| states.iter().map(|s| s.start_mono).max().unwrap_or(0) + d)).flatten();
    // or the end of a phase decided while it runs (`load --until-stable`)
    if let Some(l) = &cfg.live {
        l.register(cfg.reverse, &states);
    }
    let live = cfg.live.clone();
    let past_end = move || halt_at.is_some_and(|e| sys::mono_ns() >= e) || live.as_ref().is_some_and(|l| l.past_end());
    // reverse: on Ctrl-C/SIGTERM (or at the end, `halt_at_end`) ask the server to stop sending, then read what it
    // had sent and its results
    let stopper = if cfg.reverse {
        let (v, c) = (states.clone(), ctrl.try_clone().map_err(|e| err1(format!("control: {e}")))?);
        let past_end = past_end.clone();
        Some(std::thread::spawn(move || {
            while !v.iter().all(|s| s.done.load(Ordering::Relaxed)) {
                if sys::stopped() || past_end() {
                    let _ = (&c).write_all(STOP_LINE);
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }))
    } else {
        None
    };
    // a download: the server's results begin to arrive once its senders have ended (set by `results_watch`)
    let results_began = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let results_watch = if cfg.reverse {
        let (v, fd, began) = (states.clone(), ctrl.as_raw_fd(), results_began.clone());
        Some(std::thread::spawn(move || {
            while !v.iter().all(|s| s.done.load(Ordering::Relaxed)) && !sys::stopped() {
                if sys::wait_readable(fd, WAKE.as_nanos() as u64) {
                    began.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }))
    } else {
        None
    };
    let workers: Vec<_> = states
        .iter()
        .map(|s| {
            let s = s.clone();
            let cfg = cfg.clone();
            let past_end = past_end.clone();
            let began = results_began.clone();
            std::thread::spawn(move || {
                if cfg.reverse {
                    run_receiver(&s, &|| false, true, cfg.bytes, cfg.duration_ns, &past_end, &|| began.load(Ordering::Relaxed))
                } else {
                    run_sender(&s, cfg.duration_ns, cfg.bytes, cfg.rate_bps, cfg.onoff_ticks, &past_end)
                }
            })
        })
        .collect();
    if cfg.report_ns > 0 {
        report_intervals(cfg, &states);
    }
    let outcomes: Vec<Outcome> = workers.into_iter().map(|w| w.join().unwrap_or_default()).collect();
    let mut timing = super::control::Timing { streams_done: sys::mono_ns(), ..Default::default() };
    if !cfg.reverse {
        // an upload: our senders have ended, so the server's receivers need not wait for their resets
        // (stream::run_receiver, `sender_done`); an older server ignores the line in an upload
        let _ = (&ctrl).write_all(STOP_LINE);
    }
    if let Some(p) = &cfg.done_file {
        std::fs::write(p, b"done\n").map_err(|e| err1(format!("--done-file {}: {e}", p.display())))?;
    }
    if let Some(h) = sampler {
        let _ = h.join();
    }
    if let Some(h) = stopper {
        let _ = h.join();
    }
    // the server's half
    // 15 s of silence, 5 min in all, at most RESULTS_MAX bytes: the results cross the path just measured,
    // which may be slow (control.rs, read_line_progress)
    let (silence, cap) = if sys::stopped() { (2_000_000_000, 2_000_000_000) } else { (15_000_000_000, 300_000_000_000) };
    let line = read_line_progress(&mut rd, silence, cap, RESULTS_MAX).ok();
    timing.results_read = sys::mono_ns();
    // joined only now: the watch waits up to WAKE for the results to begin, and joined before reading them it
    // added that wait to every download (a page's objects: ~50 ms each, tests/test_pages.py); by now the results
    // have come (it saw them at once) or the read gave up
    if let Some(h) = results_watch {
        let _ = h.join();
    }
    timing.results_bytes = line.as_ref().map_or(0, |l| l.len() as u64);
    let server: Option<Value> = line.and_then(|l| results_text(l, RESULTS_MAX)).and_then(|l| serde_json::from_str(&l).ok());
    let same_host = server.as_ref().map(|v| v["boot_id"].as_str() == Some(sys::boot_id().as_str())).unwrap_or(false);
    if same_host {
        timing.server_results = server.as_ref().and_then(|v| v["results_mono"].as_u64()).unwrap_or(0);
    }
    let mut flows = Vec::new();
    let mut series = FlowSeries::default();
    let mut problem = None;
    let mut cc_seen = None;
    // the data connections the server says never reached it (a hello dropped again and again behind a policer
    // whose bucket the other flows kept empty): it served those that did, and its results are theirs. An older
    // server refused the whole test instead (`error`, no streams)
    let missing: Vec<usize> = server
        .as_ref()
        .and_then(|v| v["missing"].as_array().map(|a| a.iter().filter_map(|x| x.as_u64().map(|i| i as usize)).collect()))
        .unwrap_or_default();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|i| format!("{}{i} (flow {})", if cfg.reverse { "down" } else { "up" }, cfg.first_id + i)).collect();
        problem = Some(format!(
            "{} of {} data connections reached the server; never: {}: the results are those of the flows that ran",
            states.len().saturating_sub(missing.len()), states.len(), names.join(", ")
        ));
    } else if let Some(e) = server.as_ref().and_then(|v| if v["ok"] == json!(false) { v["error"].as_str() } else { None }) {
        problem = Some(format!("the server refused the test's results: {e}"));
    }
    for (s, o) in states.iter().zip(&outcomes) {
        let srv = server.as_ref().and_then(|v| v["streams"].as_array()?.iter().find(|x| x["idx"] == json!(s.idx)).cloned());
        let start_s = (s.start_mono - cfg.t0_mono) as f64 / 1e9;
        let mut f = FlowRaw {
            rec: FlowOut { id: cfg.first_id + s.idx, start_s, ..Default::default() },
            name: format!("{}{}", if cfg.reverse { "down" } else { "up" }, s.idx),
            direction: if cfg.reverse { "down" } else { "up" }.into(),
            ..Default::default()
        };
        if let Some(e) = &o.error {
            problem.get_or_insert(format!("stream {}: {e}", s.idx));
        }
        if !cfg.reverse {
            // we sent: TCP_INFO is ours
            let w = s.written.load(Ordering::Relaxed);
            let fin = o.final_info.unwrap_or_default();
            f.cc = sys::get_cc(s.sock.as_raw_fd()).unwrap_or_default();
            f.rec.bytes_acked = data_acked(&fin, w, s.pre);
            f.rec.segs_sent = fin.segs_out as u64;
            f.rec.retrans_segs = fin.total_retrans as u64;
            f.min_rtt_ms = fin.min_rtt as f64 / 1e3;
            f.rec.end_s = (o.end_mono - cfg.t0_mono) as f64 / 1e9;
            f.rec.fct_s = o.fct_ns.map(|n| n as f64 / 1e9);
            f.rec.completed = o.completed;
            let samples = s.samples.lock().unwrap();
            for (t, ti) in samples.iter() {
                push_sample(&mut series, f.rec.id, (*t - cfg.t0_mono) as f64 / 1e9, ti, s.pre, w);
                f.rtt_ms.push(ti.rtt as f64 / 1e3);
            }
            f.rec.bytes_delivered = match &srv {
                Some(v) => v["bytes_read"].as_u64().unwrap_or(0),
                None if missing.contains(&s.idx) => 0, // the server never read this connection
                None => f.rec.bytes_acked, // the receiver's kernel acked them; its reads are unknown
            };
        } else {
            f.rec.bytes_delivered = s.read.load(Ordering::Relaxed);
            f.rec.end_s = (o.end_mono - cfg.t0_mono) as f64 / 1e9;
            if cfg.bytes.is_some_and(|n| n > 0 && f.rec.bytes_delivered >= n) {
                f.rec.client_done_s = Some(f.rec.end_s);
            }
            if let Some(v) = &srv {
                let info = &v["info"];
                f.cc = v["cc"].as_str().unwrap_or_default().to_string();
                f.rec.bytes_acked = info["bytes_acked"].as_u64().unwrap_or(0);
                f.rec.segs_sent = info["segs_out"].as_u64().unwrap_or(0);
                f.rec.retrans_segs = info["total_retrans"].as_u64().unwrap_or(0);
                f.min_rtt_ms = info["min_rtt_us"].as_f64().unwrap_or(f64::NAN) / 1e3;
                f.rec.completed = v["completed"].as_bool().unwrap_or(false);
                if let Some(e) = v["error"].as_str() {
                    problem.get_or_insert(format!("stream {} (server side): {e}", s.idx));
                }
                // align the server's clock: exact on the same host, else from our connect time
                let srv_start = v["start_mono"].as_u64().unwrap_or(0);
                let shift = if same_host { (srv_start as f64 - cfg.t0_mono as f64) / 1e9 } else { start_s };
                let ss = series_from_json(&v["series"]);
                for i in 0..ss.t.len() {
                    f.rtt_ms.push(ss.srtt_ms[i]);
                }
                let mut ss = ss;
                for t in ss.t.iter_mut() {
                    *t += shift;
                }
                ss.flow.iter_mut().for_each(|x| *x = f.rec.id as u32);
                series.append(&ss);
                if f.rec.completed {
                    // the sender's last-ack time on our axis
                    let srv_end = (v["end_mono"].as_u64().unwrap_or(0) as f64 - srv_start as f64) / 1e9 + shift;
                    f.rec.end_s = srv_end.max(f.rec.end_s);
                    f.rec.fct_s = Some(f.rec.end_s - f.rec.start_s);
                }
            } else {
                f.rec.bytes_acked = f.rec.bytes_delivered;
            }
        }
        if !f.cc.is_empty() {
            cc_seen = Some(f.cc.clone());
        }
        flows.push(f);
    }
    if server.is_none() {
        problem = Some(match problem {
            Some(p) => format!("the server went away ({p}); the results are what this client measured"),
            None if sys::stopped() => "interrupted; the results are what this client measured".into(),
            None => "the server sent no results (was it killed?); the results are what this client measured".into(),
        });
    } else if sys::stopped() {
        problem.get_or_insert("interrupted".into());
    }
    let duration_s = flows.iter().map(|f| f.rec.end_s).fold(0.0, f64::max);
    Ok(Answer::Bloatlab(Box::new(ClientResult {
        flows,
        series,
        cc: cc_seen,
        problem,
        server_kernel: server.as_ref().and_then(|v| v["kernel"].as_str().map(String::from)),
        duration_s,
        local_ports: states.iter().map(|s| s.sock.local_addr().map(|a| a.port()).unwrap_or(0)).collect(),
        missing_flows: missing.iter().map(|i| cfg.first_id + i).collect(),
        timing,
    })))
}

/// iperf3-style interval lines while the workers run.
fn report_intervals(cfg: &ClientCfg, states: &[Arc<StreamState>]) {
    println!("[ ID] Interval           Transfer     Bitrate         {}", if cfg.reverse { "" } else { "Retr  Cwnd" });
    let n = states.len();
    let mut last_bytes = vec![0u64; n];
    let mut last_retr = vec![0u64; n];
    let mut t_prev = sys::mono_ns();
    let t_start = cfg.t0_mono;
    let mut next = t_prev + cfg.report_ns;
    loop {
        let all_done = states.iter().all(|s| s.done.load(Ordering::Relaxed));
        if all_done || sys::stopped() {
            break;
        }
        while sys::mono_ns() < next {
            if states.iter().all(|s| s.done.load(Ordering::Relaxed)) || sys::stopped() {
                return;
            }
            sys::sleep_until_mono((sys::mono_ns() + 20_000_000).min(next));
        }
        let now = sys::mono_ns();
        let dt = (now - t_prev) as f64 / 1e9;
        let (a, b) = ((t_prev - t_start) as f64 / 1e9, (now - t_start) as f64 / 1e9);
        let mut sum = 0u64;
        let mut sum_retr = 0u64;
        for (i, s) in states.iter().enumerate() {
            let bytes = if cfg.reverse { s.read.load(Ordering::Relaxed) } else { s.written.load(Ordering::Relaxed) };
            let d = bytes - last_bytes[i];
            last_bytes[i] = bytes;
            sum += d;
            if cfg.reverse {
                println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}", s.idx + cfg.first_id, a, b, fmt_bytes(d as f64), fmt_rate(d as f64 * 8.0 / dt));
            } else {
                let ti = s.latest().unwrap_or_default();
                let r = ti.total_retrans as u64 - last_retr[i].min(ti.total_retrans as u64);
                last_retr[i] = ti.total_retrans as u64;
                sum_retr += r;
                println!(
                    "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}  {:>12}",
                    s.idx + cfg.first_id, a, b, fmt_bytes(d as f64), fmt_rate(d as f64 * 8.0 / dt), r, fmt_bytes(ti.cwnd_bytes() as f64)
                );
            }
        }
        if n > 1 {
            println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {}", a, b, fmt_bytes(sum as f64), fmt_rate(sum as f64 * 8.0 / dt),
                     if cfg.reverse { String::new() } else { format!("{sum_retr:>4}") });
        }
        t_prev = now;
        next += cfg.report_ns;
    }
}

/// Plain-text summary (iperf3's closing block plus TCP_INFO figures).
pub fn print_summary(r: &ClientResult, reverse: bool) {
    println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    println!("[ ID] Interval           Transfer     Bitrate         Retr");
    for f in &r.flows {
        println!(
            "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}  sender ({})",
            f.rec.id, f.rec.start_s, f.rec.end_s, fmt_bytes(f.rec.bytes_acked as f64),
            fmt_rate(f.rec.bytes_acked as f64 * 8.0 / (f.rec.end_s - f.rec.start_s).max(1e-9)), f.rec.retrans_segs,
            if reverse { "server" } else { "client" }
        );
        println!(
            "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}        receiver ({})",
            f.rec.id, f.rec.start_s, f.rec.end_s, fmt_bytes(f.rec.bytes_delivered as f64), fmt_rate(f.goodput_mbps() * 1e6),
            if reverse { "client" } else { "server" }
        );
    }
    for f in &r.flows {
        let mut v = f.rtt_ms.clone();
        let d = bloatlab_core::stats::Dist::of(&mut v);
        print!(
            "[{:>3}] cc {}  srtt p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  min_rtt {:.3} ms  retrans_rate {:.5}",
            f.rec.id, if f.cc.is_empty() { "?" } else { &f.cc }, d.p50, d.p95, d.p99, f.min_rtt_ms, f.retrans_rate()
        );
        match f.rec.fct_s {
            Some(t) => println!("  fct {t:.4} s"),
            None => println!(),
        }
    }
    if r.flows.len() > 1 {
        let tot: f64 = r.flows.iter().map(|f| f.goodput_mbps()).sum();
        let g: Vec<f64> = r.flows.iter().map(|f| f.goodput_mbps()).collect();
        println!("[SUM] goodput {}  jain fairness {:.3}", fmt_rate(tot * 1e6), bloatlab_core::stats::jain(&g));
    }
}

/// The common result for a TCP test.
pub fn output(cfg: &ClientCfg, r: &ClientResult, scenario: Value) -> Output {
    let mut o = Output::new("tcp", scenario, cfg.t0_mono);
    o.duration_s = r.duration_s;
    o.cc = r.cc.clone();
    o.flows = r.flows.clone();
    o.series = r.series.clone();
    o.meta_extra.insert("server_kernel".into(), json!(r.server_kernel));
    o.meta_extra.insert("local_ports".into(), json!(r.local_ports));
    o.meta_extra.insert("sender".into(), json!(if cfg.reverse { "server" } else { "client" }));
    o.extra.insert("problem".into(), json!(r.problem));
    o.extra.insert("missing_flows".into(), json!(r.missing_flows));
    o
}
