//! iperf3's client side: a test against a stock `iperf3 -s`, its interval
//! rows, its summary and its `-J`-like JSON (the wire is the parent module's).

use super::*;

/// One interval of one stream (for text lines and `-J` intervals).
#[derive(Debug, Clone)]
pub struct IntervalRow {
    pub idx: usize,
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub retransmits: Option<u64>,
    pub snd_cwnd: Option<u64>,
    pub rtt_us: Option<u64>,
}

/// What an iperf3 test gave the client.
pub struct ClientRun {
    pub result: ClientResult,
    pub intervals: Vec<Vec<IntervalRow>>,
    /// the server's results message, as received
    pub server_results: Value,
    pub cpu: (f64, f64, f64),
    /// per stream: local and remote address of the data connection
    pub connected: Vec<(SocketAddr, SocketAddr)>,
    pub timestamp_s: u64,
    /// the client's test time: TEST_RUNNING to TEST_END
    pub seconds: f64,
    /// the receiver's test time (iperf3's `receiver_time`): the server's own
    /// when it received (its TEST_END comes through the same queue as the
    /// data), ours with -R
    pub recv_seconds: f64,
}


/// The control connection of an iperf3 test whose parameters the server
/// has read: what follows is its CREATE_STREAMS. Opened by [`run_client`],
/// or by bloatlab's own client when its opening found an iperf3 server
/// (`crate::tcp::client`): that opening was a cookie and these parameters,
/// so the server's one test (`iperf3 -s -1`) is this one.
pub struct Opened {
    pub ctrl: TcpStream,
    pub cookie: [u8; COOKIE_SIZE],
}

/// iperf3's parameters (`send_parameters`) for the test `cfg` asks for.
pub fn params(cfg: &ClientCfg) -> Value {
    // iperf3 sends whole seconds; round up so the server's own timer never ends the test first
    let time_s = cfg.duration_ns.map(|d| d.div_ceil(1_000_000_000)).unwrap_or(0);
    let mut p = json!({"tcp": true, "omit": 0, "time": time_s, "num": cfg.bytes.unwrap_or(0), "blockcount": 0,
                       "parallel": cfg.streams, "len": BLKSIZE, "pacing_timer": 1000,
                       "client_version": format!("3.12 (bloatlab-probe {})", env!("CARGO_PKG_VERSION"))});
    if cfg.reverse {
        p["reverse"] = json!(true);
        // a bloatlab server then adds its sending sockets' TCP_INFO series to the results
        p[super::SERIES_PARAM] = json!(1);
    }
    if let (Some(r), true) = (cfg.rate_bps, cfg.reverse) {
        p["bandwidth"] = json!(r);
    }
    if let Some(cc) = &cfg.cc {
        p["congestion"] = json!(cc);
    }
    p
}

/// What this client refuses before it connects: a control the kernel lacks,
/// `--on/--off`.
fn check(cfg: &ClientCfg) -> Result<(), ClientError> {
    if !cfg.reverse {
        if let Some(cc) = &cfg.cc {
            let avail = sys::available_cc();
            if !avail.is_empty() && !avail.iter().any(|a| a == cc) {
                return Err(ClientError { status: 2, msg: format!("-C {cc}: congestion control \"{cc}\" is not available on this kernel; available: {}", avail.join(" ")) });
            }
        }
    }
    if cfg.onoff_ticks.is_some() {
        return Err(ClientError { status: 2, msg: "--on/--off: not part of iperf3's protocol; use bloatlab-probe server".into() });
    }
    Ok(())
}

/// Run a test against a stock `iperf3 -s`. `cfg.report_ns > 0` prints
/// iperf3-style interval lines; the intervals are always collected (`-J`).
pub fn run_client(cfg: &ClientCfg, interval_ns: u64, print: bool) -> Result<ClientRun, ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    check(cfg)?;
    let ctrl = stream::connect(cfg.addr, None, None).map_err(err1)?;
    let _ = ctrl.set_nodelay(true);
    let _ = ctrl.set_read_timeout(Some(WAKE));
    let cookie = make_cookie();
    (&ctrl).write_all(&cookie).map_err(|e| err1(format!("control: {e}")))?;
    expect_state(&ctrl, state::PARAM_EXCHANGE, "PARAM_EXCHANGE")?;
    write_json(&ctrl, &params(cfg)).map_err(|e| err1(format!("control: {e}")))?;
    run_opened(Opened { ctrl, cookie }, cfg, interval_ns, print)
}

/// Run the test of a control connection whose parameters the server has
/// read (see [`Opened`]); as [`run_client`].
pub fn run_opened(opened: Opened, cfg: &ClientCfg, interval_ns: u64, print: bool) -> Result<ClientRun, ClientError> {
    let err1 = |msg: String| ClientError { status: 1, msg };
    check(cfg)?;
    let Opened { ctrl, cookie } = opened;
    let _ = ctrl.set_nodelay(true);
    let _ = ctrl.set_read_timeout(Some(WAKE));
    expect_state(&ctrl, state::CREATE_STREAMS, "CREATE_STREAMS")?;
    let mut socks = Vec::new();
    for i in 0..cfg.streams {
        let cc = if cfg.reverse { None } else { cfg.cc.as_deref() };
        let s = stream::connect(cfg.addr, cfg.cport.map(|p| p + i as u16), cc)
            .map_err(|e| ClientError { status: if e.starts_with("-C") || e.starts_with("--cport") { 2 } else { 1 }, msg: e })?;
        (&s).write_all(&cookie).map_err(|e| err1(format!("data connection: {e}")))?;
        socks.push(s);
    }
    let connected: Vec<(SocketAddr, SocketAddr)> =
        socks.iter().map(|s| (s.local_addr().unwrap_or(cfg.addr), s.peer_addr().unwrap_or(cfg.addr))).collect();
    if print {
        for (i, (l, r)) in connected.iter().enumerate() {
            println!("[{:>3}] local {} port {} connected to {} port {}", stream_id(i), l.ip(), l.port(), r.ip(), r.port());
        }
    }
    expect_state(&ctrl, state::TEST_START, "TEST_START")?;
    expect_state(&ctrl, state::TEST_RUNNING, "TEST_RUNNING")?;
    let cpu = Cpu::start();
    let t_run = sys::mono_ns();
    let timestamp_s = (sys::real_ns() / 1_000_000_000) as u64;
    // the SYN and the cookie come before the data in tcpi_bytes_acked
    let states: Vec<Arc<StreamState>> =
        socks.into_iter().enumerate().map(|(i, s)| StreamState::new(i, s, t_run, 1 + COOKIE_SIZE as u64)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = if !cfg.reverse {
        let (v, iv) = (states.clone(), cfg.info_interval_ns);
        Some(std::thread::spawn(move || stream::run_sampler(v, iv)))
    } else {
        None
    };
    let workers: Vec<_> = states
        .iter()
        .map(|s| {
            let (s, stop, reverse, rate) = (s.clone(), stop.clone(), cfg.reverse, cfg.rate_bps);
            std::thread::spawn(move || if reverse { recv_until(&s, &stop) } else { send_until(&s, rate, &stop) })
        })
        .collect();
    // the test: intervals until -t passes, -n bytes moved, Ctrl-C, or a stream fails
    let deadline = cfg.duration_ns.map(|d| t_run.saturating_add(d));
    let moved = |s: &StreamState| if cfg.reverse { s.read.load(Ordering::Relaxed) } else { s.written.load(Ordering::Relaxed) };
    let mut intervals: Vec<Vec<IntervalRow>> = Vec::new();
    let mut last_bytes = vec![0u64; states.len()];
    let mut last_retr = vec![0u64; states.len()];
    let mut t_prev = t_run;
    let iv = if interval_ns > 0 { interval_ns } else { u64::MAX };
    let mut next_iv = t_run.saturating_add(iv);
    if print && interval_ns > 0 {
        println!("[ ID] Interval           Transfer     Bitrate         {}", if cfg.reverse { "" } else { "Retr  Cwnd" });
    }
    let mut interval = |t_now: u64, last: bool, intervals: &mut Vec<Vec<IntervalRow>>| {
        if t_now <= t_prev + 1_000_000 && last {
            return; // nothing left of the last interval
        }
        let (a, b) = ((t_prev - t_run) as f64 / 1e9, (t_now - t_run) as f64 / 1e9);
        let mut rows = Vec::new();
        for (i, s) in states.iter().enumerate() {
            let m = moved(s);
            let d = m - last_bytes[i].min(m);
            last_bytes[i] = m;
            let ti = if cfg.reverse { None } else { s.latest() };
            let retr = ti.map(|ti| {
                let r = ti.total_retrans as u64;
                let x = r - last_retr[i].min(r);
                last_retr[i] = r;
                x
            });
            rows.push(IntervalRow { idx: i, start: a, end: b, bytes: d, retransmits: retr, snd_cwnd: ti.map(|t| t.cwnd_bytes()), rtt_us: ti.map(|t| t.rtt as u64) });
        }
        if print && interval_ns > 0 {
            print_rows(&rows, cfg.reverse);
        }
        intervals.push(rows);
        t_prev = t_now;
    };
    let failed = |states: &[Arc<StreamState>]| states.iter().any(|s| s.done.load(Ordering::Relaxed));
    loop {
        let now = sys::mono_ns();
        // an interval that ended before the test did is reported even when we woke late
        if now >= next_iv && next_iv < deadline.unwrap_or(u64::MAX) {
            interval(next_iv.min(now), false, &mut intervals);
            next_iv = next_iv.saturating_add(iv);
            continue;
        }
        let total: u64 = states.iter().map(|s| moved(s)).sum();
        let over = deadline.is_some_and(|d| now >= d) || cfg.bytes.is_some_and(|n| total >= n) || sys::stopped() || failed(&states);
        if over {
            break;
        }
        let wake = next_iv.min(deadline.unwrap_or(u64::MAX)).min(now + 10_000_000);
        sys::sleep_until_mono(wake);
    }
    let t_end = sys::mono_ns();
    stop.store(!cfg.reverse, Ordering::SeqCst); // senders stop; receivers drain until the server closes
    let received: Vec<u64> = states.iter().map(|s| s.read.load(Ordering::Relaxed)).collect();
    let mut errors: Vec<Option<String>> = vec![None; states.len()];
    let mut workers = workers.into_iter().map(Some).collect::<Vec<_>>();
    if !cfg.reverse {
        for (i, w) in workers.iter_mut().enumerate() {
            errors[i] = w.take().and_then(|w| w.join().ok().flatten());
        }
    }
    let finals: Vec<Option<TcpInfo>> = states.iter().map(|s| if cfg.reverse { None } else { s.sample() }).collect();
    let written: Vec<u64> = states.iter().map(|s| s.written.load(Ordering::Relaxed)).collect();
    interval(t_end, true, &mut intervals);
    let cpu_pct = cpu.percent();
    if let Some(h) = sampler {
        for s in &states {
            s.done.store(true, Ordering::Relaxed);
        }
        let _ = h.join();
    }
    let seconds = (t_end - t_run) as f64 / 1e9;
    // TEST_END, then the results exchange
    let mut problem: Option<String> = errors.iter().flatten().next().map(|e| format!("a data connection failed: {e}"));
    if sys::stopped() {
        problem.get_or_insert("interrupted".into());
    }
    let mut server_results = Value::Null;
    let exchange = (|| -> Result<Value, String> {
        write_state(&ctrl, state::TEST_END).map_err(|e| format!("sending TEST_END: {e}"))?;
        expect_state(&ctrl, state::EXCHANGE_RESULTS, "EXCHANGE_RESULTS").map_err(|e| e.msg)?;
        let streams: Vec<Value> = states
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let (bytes, retr) = if cfg.reverse { (received[i], -1i64) } else { (written[i], finals[i].map(|t| t.total_retrans as i64).unwrap_or(0)) };
                json!({"id": stream_id(i), "bytes": bytes, "retransmits": retr, "jitter": 0, "errors": 0, "packets": 0,
                       "start_time": 0, "end_time": seconds})
            })
            .collect();
        let mine = json!({"cpu_util_total": cpu_pct.0, "cpu_util_user": cpu_pct.1, "cpu_util_system": cpu_pct.2,
                          "sender_has_retransmits": if cfg.reverse { -1 } else { 1 },
                          "congestion_used": states.first().and_then(|s| sys::get_cc(s.sock.as_raw_fd())),
                          "streams": streams});
        write_json(&ctrl, &mine).map_err(|e| format!("sending results: {e}"))?;
        let theirs = read_json(&ctrl, MAX_SERVER_RESULTS_JSON, CTRL_WAIT_NS)?;
        expect_state(&ctrl, state::DISPLAY_RESULTS, "DISPLAY_RESULTS").map_err(|e| e.msg)?;
        let _ = write_state(&ctrl, state::IPERF_DONE);
        Ok(theirs)
    })();
    match exchange {
        Ok(v) => server_results = v,
        Err(e) => {
            problem.get_or_insert(format!("iperf3 results exchange: {e}; the results are what this client measured"));
        }
    }
    stop.store(true, Ordering::SeqCst);
    for s in &states {
        let _ = s.sock.shutdown(Shutdown::Both);
    }
    for (i, w) in workers.iter_mut().enumerate() {
        if let Some(w) = w.take() {
            errors[i] = w.join().ok().flatten();
        }
    }
    let srv_streams: Vec<Value> = server_results["streams"].as_array().cloned().unwrap_or_default();
    if srv_streams.len() > states.len() {
        problem.get_or_insert(format!("the server reported {} streams for a test of {}", srv_streams.len(), states.len()));
    }
    let srv_cc = server_results["congestion_used"].as_str().map(String::from);
    // iperf3's receiver_time: end_time - start_time of the receiver's streams (checked: finite, positive, not absurd)
    let recv_seconds = if cfg.reverse {
        seconds
    } else {
        srv_streams
            .iter()
            .take(states.len())
            .filter_map(|v| Some(v["end_time"].as_f64()? - v["start_time"].as_f64()?))
            .filter(|t| t.is_finite() && *t > 0.0 && *t < seconds * 2.0 + 30.0)
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))
            .unwrap_or(seconds)
    };
    let mut flows = Vec::new();
    let mut series = FlowSeries::default();
    for (i, s) in states.iter().enumerate() {
        let srv = srv_streams.iter().take(states.len()).find(|v| v["id"].as_u64() == Some(stream_id(i)));
        let srv_bytes = srv.and_then(|v| v["bytes"].as_u64());
        let mut f = FlowRaw {
            rec: FlowOut {
                id: cfg.first_id + i,
                start_s: (t_run - cfg.t0_mono) as f64 / 1e9,
                end_s: (t_end - cfg.t0_mono) as f64 / 1e9,
                ..Default::default()
            },
            name: format!("{}{i}", if cfg.reverse { "down" } else { "up" }),
            direction: if cfg.reverse { "down" } else { "up" }.into(),
            ..Default::default()
        };
        if cfg.reverse {
            // the server sent: its TCP_INFO is not in iperf3's results; retransmits are
            f.rec.bytes_delivered = received[i];
            f.rec.bytes_acked = received[i];
            f.rec.retrans_segs = srv.and_then(|v| v["retransmits"].as_i64()).filter(|&r| r >= 0).unwrap_or(0) as u64;
            f.cc = srv_cc.clone().unwrap_or_default();
            // a bloatlab server adds its TCP_INFO (time from its TEST_RUNNING, ~ ours)
            let ext = server_results["bloatlab"]["streams"].as_array().and_then(|v| v.iter().take(states.len()).find(|x| x["id"].as_u64() == Some(stream_id(i))));
            if let Some(x) = ext {
                f.rec.bytes_acked = x["bytes_acked"].as_u64().unwrap_or(f.rec.bytes_acked);
                f.rec.segs_sent = x["segs_out"].as_u64().unwrap_or(0);
                f.rec.retrans_segs = x["total_retrans"].as_u64().unwrap_or(f.rec.retrans_segs);
                f.min_rtt_ms = x["min_rtt_us"].as_f64().unwrap_or(f64::NAN) / 1e3;
                let mut ss = series_from_json(&x["series"]);
                ss.t.iter_mut().for_each(|t| *t += f.rec.start_s);
                ss.flow.iter_mut().for_each(|id| *id = f.rec.id as u32);
                f.rtt_ms.extend(ss.srtt_ms.iter().copied());
                series.append(&ss);
            }
        } else {
            let fin = finals[i].unwrap_or_default();
            f.cc = sys::get_cc(s.sock.as_raw_fd()).unwrap_or_default();
            f.rec.bytes_acked = stream::data_acked(&fin, written[i], s.pre);
            f.rec.segs_sent = fin.segs_out as u64;
            f.rec.retrans_segs = fin.total_retrans as u64;
            f.min_rtt_ms = fin.min_rtt as f64 / 1e3;
            f.rec.bytes_delivered = srv_bytes.unwrap_or(f.rec.bytes_acked);
            f.rec.end_s = f.rec.start_s + recv_seconds; // goodput over the receiver's time, as iperf3 reports it
            for (t, ti) in s.samples.lock().unwrap().iter() {
                push_sample(&mut series, f.rec.id, (*t - cfg.t0_mono) as f64 / 1e9, ti, s.pre, written[i]);
                f.rtt_ms.push(ti.rtt as f64 / 1e3);
            }
        }
        flows.push(f);
    }
    let cc = flows.iter().map(|f| f.cc.clone()).find(|c| !c.is_empty());
    let local_ports = connected.iter().map(|c| c.0.port()).collect();
    Ok(ClientRun {
        result: ClientResult { flows, series, cc, problem, server_kernel: None, duration_s: seconds, local_ports, timing: Default::default(), missing_flows: Vec::new() },
        intervals,
        server_results,
        cpu: cpu_pct,
        connected,
        timestamp_s,
        seconds,
        recv_seconds,
    })
}

fn print_rows(rows: &[IntervalRow], reverse: bool) {
    let mut sum = 0;
    let mut sum_retr = 0;
    for r in rows {
        let dt = (r.end - r.start).max(1e-9);
        sum += r.bytes;
        if reverse {
            println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}", stream_id(r.idx), r.start, r.end, fmt_bytes(r.bytes as f64), fmt_rate(r.bytes as f64 * 8.0 / dt));
        } else {
            sum_retr += r.retransmits.unwrap_or(0);
            println!(
                "[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}  {:>12}",
                stream_id(r.idx), r.start, r.end, fmt_bytes(r.bytes as f64), fmt_rate(r.bytes as f64 * 8.0 / dt),
                r.retransmits.unwrap_or(0), fmt_bytes(r.snd_cwnd.unwrap_or(0) as f64)
            );
        }
    }
    if rows.len() > 1 {
        let r = &rows[0];
        let dt = (r.end - r.start).max(1e-9);
        println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {}", r.start, r.end, fmt_bytes(sum as f64), fmt_rate(sum as f64 * 8.0 / dt),
                 if reverse { String::new() } else { format!("{sum_retr:>4}") });
    }
}

/// iperf3's closing block: sender and receiver lines per stream, sums.
pub fn print_summary(run: &ClientRun, reverse: bool) {
    let r = &run.result;
    let secs = run.seconds.max(1e-9);
    let rsecs = run.recv_seconds.max(1e-9);
    println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    println!("[ ID] Interval           Transfer     Bitrate         Retr");
    let srv: Vec<Value> = run.server_results["streams"].as_array().cloned().unwrap_or_default();
    let (mut sent_sum, mut recv_sum, mut retr_sum) = (0u64, 0u64, 0u64);
    for (i, f) in r.flows.iter().enumerate() {
        let sv = srv.iter().find(|v| v["id"].as_u64() == Some(stream_id(i)));
        let sent = if reverse { sv.and_then(|v| v["bytes"].as_u64()).unwrap_or(0) } else { run.intervals.iter().flatten().filter(|x| x.idx == i).map(|x| x.bytes).sum() };
        let recv = f.rec.bytes_delivered;
        sent_sum += sent;
        recv_sum += recv;
        retr_sum += f.rec.retrans_segs;
        println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}             sender", stream_id(i), 0.0, secs, fmt_bytes(sent as f64), fmt_rate(sent as f64 * 8.0 / secs), f.rec.retrans_segs);
        println!("[{:>3}] {:6.2}-{:<6.2} sec  {:>12}  {:>15}                  receiver", stream_id(i), 0.0, rsecs, fmt_bytes(recv as f64), fmt_rate(recv as f64 * 8.0 / rsecs));
    }
    if r.flows.len() > 1 {
        println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}  {:>4}             sender", 0.0, secs, fmt_bytes(sent_sum as f64), fmt_rate(sent_sum as f64 * 8.0 / secs), retr_sum);
        println!("[SUM] {:6.2}-{:<6.2} sec  {:>12}  {:>15}                  receiver", 0.0, rsecs, fmt_bytes(recv_sum as f64), fmt_rate(recv_sum as f64 * 8.0 / rsecs));
    }
    if !reverse {
        for f in &r.flows {
            let mut v = f.rtt_ms.clone();
            let d = bloatlab_core::stats::Dist::of(&mut v);
            println!("[{:>3}] TCP_INFO (client, sender): cc {}  srtt p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  min_rtt {:.3} ms  retrans_rate {:.5}",
                     stream_id(f.rec.id), if f.cc.is_empty() { "?" } else { &f.cc }, d.p50, d.p95, d.p99, f.min_rtt_ms, f.retrans_rate());
        }
    } else if run.server_results["bloatlab"].is_object() {
        for f in &r.flows {
            let mut v = f.rtt_ms.clone();
            let d = bloatlab_core::stats::Dist::of(&mut v);
            println!("[{:>3}] TCP_INFO (server, sender): cc {}  srtt p50 {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  min_rtt {:.3} ms  retrans_rate {:.5}",
                     stream_id(f.rec.id), if f.cc.is_empty() { "?" } else { &f.cc }, d.p50, d.p95, d.p99, f.min_rtt_ms, f.retrans_rate());
        }
    } else {
        println!("TCP_INFO: the sender is the iperf3 server, which does not report it (congestion control used: {})",
                 run.server_results["congestion_used"].as_str().unwrap_or("?"));
    }
}

/// `-J`: iperf3's JSON layout (`start`, `intervals`, `end`) with bloatlab's
/// common result under `bloatlab` (the TCP_INFO series among it).
pub fn json_output(cfg: &ClientCfg, run: &ClientRun, host: &str, port: u16, o: &Output) -> Value {
    let r = &run.result;
    let secs = run.seconds;
    let rsecs = run.recv_seconds;
    let socket = |i: usize| stream_id(i) + 4; // a stable stand-in for iperf3's fd numbers
    let connected: Vec<Value> = run.connected.iter().enumerate().map(|(i, (l, rr))| {
        json!({"socket": socket(i), "local_host": l.ip().to_string(), "local_port": l.port(), "remote_host": rr.ip().to_string(), "remote_port": rr.port()})
    }).collect();
    let intervals: Vec<Value> = run.intervals.iter().map(|rows| {
        let streams: Vec<Value> = rows.iter().map(|x| {
            let dt = (x.end - x.start).max(1e-9);
            let mut v = json!({"socket": socket(x.idx), "start": x.start, "end": x.end, "seconds": x.end - x.start, "bytes": x.bytes,
                               "bits_per_second": x.bytes as f64 * 8.0 / dt, "omitted": false, "sender": !cfg.reverse});
            if let Some(rt) = x.retransmits { v["retransmits"] = json!(rt); }
            if let Some(c) = x.snd_cwnd { v["snd_cwnd"] = json!(c); }
            if let Some(t) = x.rtt_us { v["rtt"] = json!(t); }
            v
        }).collect();
        let bytes: u64 = rows.iter().map(|x| x.bytes).sum();
        let (a, b) = rows.first().map(|x| (x.start, x.end)).unwrap_or((0.0, 0.0));
        let mut sum = json!({"start": a, "end": b, "seconds": b - a, "bytes": bytes, "bits_per_second": bytes as f64 * 8.0 / (b - a).max(1e-9), "omitted": false, "sender": !cfg.reverse});
        if !cfg.reverse { sum["retransmits"] = json!(rows.iter().map(|x| x.retransmits.unwrap_or(0)).sum::<u64>()); }
        json!({"streams": streams, "sum": sum})
    }).collect();
    let srv: Vec<Value> = run.server_results["streams"].as_array().cloned().unwrap_or_default();
    let mut end_streams = Vec::new();
    let (mut sent_sum, mut recv_sum, mut retr_sum) = (0u64, 0u64, 0u64);
    for (i, f) in r.flows.iter().enumerate() {
        let sv = srv.iter().find(|v| v["id"].as_u64() == Some(stream_id(i)));
        let sent = if cfg.reverse { sv.and_then(|v| v["bytes"].as_u64()).unwrap_or(0) } else { run.intervals.iter().flatten().filter(|x| x.idx == i).map(|x| x.bytes).sum() };
        let recv = f.rec.bytes_delivered;
        sent_sum += sent;
        recv_sum += recv;
        retr_sum += f.rec.retrans_segs;
        let mut snd = json!({"socket": socket(i), "start": 0, "end": secs, "seconds": secs, "bytes": sent, "bits_per_second": sent as f64 * 8.0 / secs.max(1e-9),
                             "retransmits": f.rec.retrans_segs, "sender": true});
        if !cfg.reverse {
            let rtts: Vec<f64> = f.rtt_ms.iter().map(|x| x * 1e3).collect();
            let cw = r.series.flow.iter().zip(&r.series.cwnd_bytes).filter(|(id, _)| **id as usize == f.rec.id).map(|(_, c)| *c).max().unwrap_or(0);
            snd["max_snd_cwnd"] = json!(cw);
            snd["max_rtt"] = json!(rtts.iter().cloned().fold(0.0, f64::max) as u64);
            snd["min_rtt"] = json!(rtts.iter().cloned().fold(f64::INFINITY, f64::min).min(1e12) as u64);
            snd["mean_rtt"] = json!((rtts.iter().sum::<f64>() / rtts.len().max(1) as f64) as u64);
        }
        let rcv = json!({"socket": socket(i), "start": 0, "end": rsecs, "seconds": rsecs, "bytes": recv, "bits_per_second": recv as f64 * 8.0 / rsecs.max(1e-9), "sender": false});
        end_streams.push(json!({"sender": snd, "receiver": rcv}));
    }
    let remote = |k: &str| run.server_results[k].as_f64().unwrap_or(0.0);
    let (local_cc, remote_cc) = (r.cc.clone().filter(|_| !cfg.reverse), run.server_results["congestion_used"].as_str().map(String::from));
    json!({
        "start": {
            "connected": connected,
            "version": format!("bloatlab-probe {} (iperf3 3.12 protocol)", env!("CARGO_PKG_VERSION")),
            "system_info": sys::kernel_release(),
            "timestamp": {"timesecs": run.timestamp_s},
            "connecting_to": {"host": host, "port": port},
            "tcp_mss_default": Value::Null,
            "sock_bufsize": 0,
            "test_start": {"protocol": "TCP", "num_streams": cfg.streams, "blksize": BLKSIZE, "omit": 0,
                           "duration": cfg.duration_ns.map(|d| d.div_ceil(1_000_000_000)).unwrap_or(0), "bytes": cfg.bytes.unwrap_or(0),
                           "blocks": 0, "reverse": cfg.reverse as u8, "tos": 0}
        },
        "intervals": intervals,
        "end": {
            "streams": end_streams,
            "sum_sent": {"start": 0, "end": secs, "seconds": secs, "bytes": sent_sum, "bits_per_second": sent_sum as f64 * 8.0 / secs.max(1e-9), "retransmits": retr_sum, "sender": true},
            "sum_received": {"start": 0, "end": rsecs, "seconds": rsecs, "bytes": recv_sum, "bits_per_second": recv_sum as f64 * 8.0 / rsecs.max(1e-9), "sender": false},
            "cpu_utilization_percent": {"host_total": run.cpu.0, "host_user": run.cpu.1, "host_system": run.cpu.2,
                                        "remote_total": remote("cpu_util_total"), "remote_user": remote("cpu_util_user"), "remote_system": remote("cpu_util_system")},
            "sender_tcp_congestion": if cfg.reverse { remote_cc.clone() } else { local_cc.clone() },
            "receiver_tcp_congestion": if cfg.reverse { local_cc } else { remote_cc }
        },
        "error": r.problem,
        "bloatlab": o.to_json()
    })
}
