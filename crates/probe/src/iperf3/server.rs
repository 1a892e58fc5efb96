//! iperf3's server side: a stock `iperf3 -c` served on bloatlab's port, its
//! parameters admitted against [`ServerLimits`] (the wire is the parent
//! module's).

use super::*;

/// Tests waiting for their data connections, by cookie.
pub type Registry = Arc<Mutex<HashMap<[u8; COOKIE_SIZE], mpsc::Sender<(TcpStream, u64)>>>>;

/// What an iperf3 client asked for, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub streams: usize,
    pub reverse: bool,
    /// `-t` (0 with `-n`)
    pub time_s: u64,
    /// `-n` (0: none)
    pub bytes: u64,
    /// `-b` (bit/s; 0: none), what a reverse test's sender offers
    pub bandwidth: u64,
    pub cc: Option<String>,
    pub get_server_output: bool,
    /// the client asked for the sender's TCP_INFO series in a reverse test's
    /// results (a bloatlab client's `"bloatlab"` parameter, [`SERIES_PARAM`]):
    /// a stock iperf3 client is sent only iperf3's results, which it reads
    /// whole — tens of KB more through a slow path it may read in part
    /// ("Size of data read does not correspond to offered length")
    pub series: bool,
}

/// The parameters an iperf3 client sent, checked against `limits`; a
/// refusal is (iperf3 error number, bloatlab's reason naming the flag).
/// Pure, never panics (tested with hostile values).
pub fn admit(v: &Value, limits: &ServerLimits) -> Result<Asked, (i32, String)> {
    let o = v.as_object().ok_or((ierr::IERECVPARAMS, "parameters: not a JSON object".to_string()))?;
    if o.contains_key("udp") || o.contains_key("sctp") || !o.contains_key("tcp") {
        return Err((ierr::IEUNIMP, "-u/--sctp: this server takes iperf3's TCP tests only".into()));
    }
    if o.contains_key("bidirectional") {
        return Err((ierr::IEUNIMP, "--bidir: not served (run one test each way)".into()));
    }
    // cJSON's valueint: a number; anything else (string, negative, fractional, huge) is refused
    let uint = |k: &str, max: u64| -> Result<u64, (i32, String)> {
        match o.get(k) {
            None => Ok(0),
            Some(x) => x.as_u64().filter(|&n| n <= max).ok_or((ierr::IERECVPARAMS, format!("{k}: expected an integer in 0..={max}, got {x}"))),
        }
    };
    let omit = uint("omit", 86_400)?;
    if omit > 0 {
        return Err((ierr::IEUNIMP, "-O/--omit: not served; leave it out".into()));
    }
    if uint("blockcount", u64::MAX)? > 0 {
        return Err((ierr::IEUNIMP, "-k/--blockcount: not served; use -n".into()));
    }
    let streams = uint("parallel", 1 << 20)?.max(1) as usize;
    if streams > limits.max_streams {
        return Err((ierr::IENUMSTREAMS, format!("-P: {streams} streams, more than this server allows ({})", limits.max_streams)));
    }
    let time_s = uint("time", 86_400)?;
    let bytes = uint("num", u64::MAX)?;
    if time_s == 0 && bytes == 0 {
        return Err((ierr::IEDURATION, "-t: a test needs a length (-t) or a byte count (-n)".into()));
    }
    let lim = limits.max_duration_ns;
    if lim > 0 && time_s.saturating_mul(1_000_000_000) > lim {
        return Err((ierr::IEDURATION, format!("-t: {time_s} s is longer than this server allows ({} s)", lim / 1_000_000_000)));
    }
    let len = uint("len", 1 << 30)?;
    if len > 16 * 1024 * 1024 {
        return Err((ierr::IEBLOCKSIZE, format!("-l: {len} bytes, longer than 16 MiB")));
    }
    let bandwidth = uint("bandwidth", u64::MAX)?;
    let cc = match o.get("congestion") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => Some(s.clone()),
        Some(x) => return Err((ierr::IESETCONGESTION, format!("-C: not a congestion control name: {}", sys::echo_name(&x.to_string())))),
    };
    let reverse = o.get("reverse").is_some();
    // the same limits as bloatlab's own clients (TCP_INFO samples kept, rate)
    let p = Params {
        cookie: 0,
        streams,
        reverse,
        duration_ns: if time_s > 0 { Some(time_s * 1_000_000_000) } else { None },
        bytes: if bytes > 0 { Some(bytes) } else { None },
        rate_bps: if bandwidth > 0 { Some(bandwidth) } else { None },
        onoff_ticks: None,
        cc: cc.clone(),
        info_interval_ns: info_interval(limits),
        pacing: false,
        self_probes: false,
        deflate_results: false,
    };
    if let Some(why) = limits.refuse(&p) {
        let e = if why.starts_with("-P") { ierr::IENUMSTREAMS } else { ierr::IEDURATION };
        return Err((e, why));
    }
    Ok(Asked {
        streams,
        reverse,
        time_s,
        bytes,
        bandwidth,
        cc,
        get_server_output: o.contains_key("get_server_output"),
        series: o.contains_key(super::SERIES_PARAM),
    })
}

/// The server samples its sending sockets' TCP_INFO every 10 ms (or the
/// server's shortest allowed interval, if longer).
fn info_interval(limits: &ServerLimits) -> u64 {
    limits.min_info_interval_ns.max(10_000_000)
}

fn send_error(c: &TcpStream, i: i32, errno: i32) {
    let mut b = vec![state::SERVER_ERROR as u8];
    b.extend_from_slice(&i.to_be_bytes());
    b.extend_from_slice(&errno.to_be_bytes());
    let _ = (&*c).write_all(&b);
}

/// Serve one iperf3 test on `ctrl`, whose cookie has been read. Returns a
/// line for the server's log.
pub fn serve_test(ctrl: TcpStream, cookie: [u8; COOKIE_SIZE], reg: &Registry, limits: &ServerLimits, peer: SocketAddr) -> Result<String, String> {
    let _ = ctrl.set_nodelay(true);
    write_state(&ctrl, state::PARAM_EXCHANGE).map_err(|e| format!("PARAM_EXCHANGE: {e}"))?;
    let v = read_json(&ctrl, MAX_PARAMS_JSON, 10_000_000_000).map_err(|e| {
        send_error(&ctrl, ierr::IERECVPARAMS, 0);
        format!("parameters: {e}")
    })?;
    let a = admit(&v, limits).map_err(|(i, why)| {
        send_error(&ctrl, i, 0);
        format!("refused: {why}")
    })?;
    if let Some(cc) = &a.cc {
        let scratch = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        if let Err(e) = sys::set_cc(scratch.as_raw_fd(), cc) {
            send_error(&ctrl, ierr::IESETCONGESTION, libc::ENOENT);
            return Err(format!("refused: -C {cc}: {e}"));
        }
    }
    let (tx, rx) = mpsc::channel();
    reg.lock().unwrap().insert(cookie, tx);
    let unregister = || {
        reg.lock().unwrap().remove(&cookie);
    };
    if let Err(e) = write_state(&ctrl, state::CREATE_STREAMS) {
        unregister();
        return Err(format!("CREATE_STREAMS: {e}"));
    }
    let wait_end = match limits.data_wait_ns {
        0 => u64::MAX,
        w => sys::mono_ns().saturating_add(w),
    };
    let mut socks = Vec::new();
    while socks.len() < a.streams {
        let left = wait_end.saturating_sub(sys::mono_ns());
        if left == 0 || sys::stopped() {
            break;
        }
        match rx.recv_timeout(Duration::from_nanos(left.min(WAKE.as_nanos() as u64))) {
            Ok((s, _)) => socks.push(s),
            Err(mpsc::RecvTimeoutError::Timeout) if crate::tcp::control::control_closed(&ctrl) => break,
            Err(_) => {}
        }
    }
    unregister();
    if socks.len() < a.streams {
        send_error(&ctrl, ierr::IESTREAMACCEPT, libc::ETIMEDOUT);
        return Err(format!("{} of {} data connections arrived", socks.len(), a.streams));
    }
    for s in &socks {
        if let Some(cc) = &a.cc {
            let _ = sys::set_cc(s.as_raw_fd(), cc);
        }
    }
    write_state(&ctrl, state::TEST_START).and_then(|_| write_state(&ctrl, state::TEST_RUNNING)).map_err(|e| format!("TEST_START: {e}"))?;
    let cpu = Cpu::start();
    let t_run = sys::mono_ns();
    let states: Vec<Arc<StreamState>> = socks.into_iter().enumerate().map(|(i, s)| StreamState::new(i, s, t_run, 0)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = if a.reverse {
        let (v, iv) = (states.clone(), info_interval(limits));
        Some(stream::spawn("sampler", move || stream::run_sampler(v, iv)).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let mut workers = Vec::new();
    for s in &states {
        let (s, stop2, a2) = (s.clone(), stop.clone(), a.clone());
        let w = stream::spawn("stream", move || {
            if a2.reverse {
                send_until(&s, (a2.bandwidth > 0).then_some(a2.bandwidth), &stop2)
            } else {
                recv_until(&s, &stop2)
            }
        });
        match w {
            Ok(w) => workers.push(w),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                send_error(&ctrl, ierr::IESTREAMACCEPT, libc::EAGAIN);
                return Err(format!("cannot start a thread: {e}"));
            }
        }
    }
    // wait for TEST_END; the server's own end: the test's length (or its
    // limit) and a 10 s grace, as iperf3's server timer gives
    let lim = match (a.time_s, limits.max_duration_ns) {
        (0, 0) => u64::MAX,
        (0, l) => l,
        (t, _) => t * 1_000_000_000,
    };
    let hard_end = t_run.saturating_add(lim).saturating_add(10_000_000_000);
    let mut end_state = None;
    while end_state.is_none() {
        if sys::mono_ns() > hard_end || sys::stopped() {
            let _ = write_state(&ctrl, state::SERVER_TERMINATE);
            end_state = Some(state::SERVER_TERMINATE);
            break;
        }
        if a.reverse && a.bytes > 0 && states.iter().map(|s| s.written.load(Ordering::Relaxed)).sum::<u64>() >= a.bytes {
            stop.store(true, Ordering::SeqCst); // -n sent; the client ends the test when it has them
        }
        let mut b = [0u8; 1];
        match (&ctrl).read(&mut b) {
            Ok(0) => end_state = Some(state::CLIENT_TERMINATE),
            Ok(_) => match b[0] as i8 {
                state::TEST_END | state::CLIENT_TERMINATE | state::IPERF_DONE => end_state = Some(b[0] as i8),
                _ => {} // TEST_START and the like: nothing to do
            },
            Err(e) if stream::is_timeout(&e) => {}
            Err(_) => end_state = Some(state::CLIENT_TERMINATE),
        }
    }
    let t_end = sys::mono_ns();
    let moved: Vec<u64> = states.iter().map(|s| if a.reverse { s.written.load(Ordering::Relaxed) } else { s.read.load(Ordering::Relaxed) }).collect();
    stop.store(true, Ordering::SeqCst);
    let finals: Vec<Option<TcpInfo>> = states.iter().map(|s| if a.reverse { s.sample() } else { None }).collect();
    for s in &states {
        let _ = s.sock.shutdown(Shutdown::Both);
    }
    let errors: Vec<Option<String>> = workers.into_iter().map(|w| w.join().ok().flatten()).collect();
    if let Some(h) = sampler {
        let _ = h.join();
    }
    let cpu_pct = cpu.percent();
    let seconds = (t_end - t_run) as f64 / 1e9;
    let summary = server_summary(&a, &states, &moved, &finals, seconds, peer);
    if end_state != Some(state::TEST_END) {
        return Err(format!("the test ended without TEST_END ({}); {summary}", if end_state == Some(state::SERVER_TERMINATE) { "server's time limit" } else { "the client went away" }));
    }
    write_state(&ctrl, state::EXCHANGE_RESULTS).map_err(|e| format!("EXCHANGE_RESULTS: {e}"))?;
    let theirs = read_json(&ctrl, MAX_RESULTS_JSON, 10_000_000_000).map_err(|e| format!("the client's results: {e}"))?;
    let client_retr: Vec<i64> = theirs["streams"].as_array().map(|v| v.iter().take(states.len()).map(|x| x["retransmits"].as_i64().unwrap_or(-1)).collect()).unwrap_or_default();
    let streams: Vec<Value> = states
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let retr = if a.reverse { finals[i].map(|t| t.total_retrans as i64).unwrap_or(0) } else { -1 };
            json!({"id": stream_id(i), "bytes": moved[i], "retransmits": retr, "jitter": 0, "errors": 0, "packets": 0,
                   "start_time": 0, "end_time": seconds})
        })
        .collect();
    let mut mine = json!({"cpu_util_total": cpu_pct.0, "cpu_util_user": cpu_pct.1, "cpu_util_system": cpu_pct.2,
                          "sender_has_retransmits": if a.reverse { 1 } else { -1 }, "streams": streams});
    if let Some(cc) = states.first().and_then(|s| sys::get_cc(s.sock.as_raw_fd())) {
        mine["congestion_used"] = json!(cc);
    }
    if a.get_server_output {
        mine["server_output_text"] = json!(format!("{summary}\n"));
    }
    if a.reverse && a.series {
        // the sender's TCP_INFO, for a bloatlab client that asked (Asked::series)
        let ext: Vec<Value> = states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut series = FlowSeries::default();
                let w = s.written.load(Ordering::Relaxed);
                for (t, ti) in s.samples.lock().unwrap().iter() {
                    push_sample(&mut series, i, (*t - t_run) as f64 / 1e9, ti, 0, w);
                }
                let fin = finals[i].unwrap_or_default();
                json!({"id": stream_id(i), "series": series_json(&series), "bytes_acked": stream::data_acked(&fin, w, 0),
                       "segs_out": fin.segs_out, "total_retrans": fin.total_retrans, "min_rtt_us": fin.min_rtt})
            })
            .collect();
        mine["bloatlab"] = json!({"streams": ext, "kernel": sys::kernel_release()});
    }
    write_json(&ctrl, &mine).map_err(|e| format!("sending results: {e}"))?;
    write_state(&ctrl, state::DISPLAY_RESULTS).map_err(|e| format!("DISPLAY_RESULTS: {e}"))?;
    let _ = read_state(&ctrl, 5_000_000_000); // IPERF_DONE
    let err = errors.iter().flatten().next().map(|e| format!(" (a data connection: {e})")).unwrap_or_default();
    let retr = if a.reverse { String::new() } else { format!(", client's retransmits {:?}", client_retr) };
    Ok(format!("{summary}{retr}{err}"))
}

/// The server's log of one iperf3 test: bytes and rate per stream, and the
/// TCP_INFO figures when the server sent.
fn server_summary(a: &Asked, states: &[Arc<StreamState>], moved: &[u64], finals: &[Option<TcpInfo>], seconds: f64, peer: SocketAddr) -> String {
    let mut out = format!(
        "iperf3 test from {peer}: {} stream(s), {}, {:.2} s",
        states.len(),
        if a.reverse { "reverse (this server sent)" } else { "this server received" },
        seconds
    );
    let total: u64 = moved.iter().sum();
    for (i, s) in states.iter().enumerate() {
        out += &format!("\n[{:>3}] {}  {}", stream_id(i), fmt_bytes(moved[i] as f64), fmt_rate(moved[i] as f64 * 8.0 / seconds.max(1e-9)));
        if let Some(ti) = finals[i] {
            let mut v: Vec<f64> = s.samples.lock().unwrap().iter().map(|(_, t)| t.rtt as f64 / 1e3).collect();
            let d = bloatlab_core::stats::Dist::of(&mut v);
            out += &format!(
                "  TCP_INFO: cc {}  retrans {}  cwnd {}  srtt p50 {:.3} ms p99 {:.3} ms  min_rtt {:.3} ms",
                sys::get_cc(s.sock.as_raw_fd()).unwrap_or_else(|| "?".into()),
                ti.total_retrans,
                fmt_bytes(ti.cwnd_bytes() as f64),
                d.p50,
                d.p99,
                ti.min_rtt as f64 / 1e3
            );
        }
    }
    if states.len() > 1 {
        out += &format!("\n[SUM] {}  {}", fmt_bytes(total as f64), fmt_rate(total as f64 * 8.0 / seconds.max(1e-9)));
    }
    out
}
