//! The TCP test server: one listener for bloatlab's own clients
//! (`super::control`), stock iperf3 clients (`crate::iperf3`) and foreign
//! responsiveness probes (`crate::probewire`), told apart by their first
//! bytes. Like iperf3's server (iperf 3.12 `iperf_server_api.c`) a test is a
//! control connection and its data connections, which arrive with the
//! test's cookie; unlike it, tests run concurrently, within [`ServerLimits`].
//!
//! Threads: the accept loop never blocks on a client; each connection is
//! classified on a thread of a bounded pool (`max_conns`) that refuses when
//! full (never panics), and a test holds one of `max_tests` slots. A test
//! ends when its control connection ends, or at the server's deadline.

use super::control::{
    auth_data, read_framed, read_line_max, send_json, Params, ServerLimits, CTRL_COOKIE_TAG, CTRL_LINE_WAIT_NS, CTRL_MAGIC, DATA_MAGIC, MAX_CTRL_LINE, OPENING_KEY,
    deflated, RESULTS_DEFLATED,
};
use super::stream::{
    data_acked, is_timeout, read_exact_timeout, run_receiver, run_sampler_growing, run_sender, spawn, Outcome, StreamState, ACK_WAIT_MAX_NS, WAKE,
};
use crate::report::{fmt_bytes, push_sample, FlowSeries, SeriesOut};
use crate::sys::{self, TcpInfo};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

type Registry = Arc<Mutex<HashMap<u64, mpsc::Sender<(usize, TcpStream, u64)>>>>;

/// A counter of things in use with a ceiling; `try_take` gives a guard or
/// None when full. `limit == 0`: unbounded.
#[derive(Clone)]
struct Slots(Arc<std::sync::atomic::AtomicUsize>, usize);

struct Slot(Arc<std::sync::atomic::AtomicUsize>);

impl Slots {
    fn new(limit: usize) -> Slots {
        Slots(Arc::new(std::sync::atomic::AtomicUsize::new(0)), limit)
    }
    fn try_take(&self) -> Option<Slot> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        if self.1 > 0 && n >= self.1 {
            self.0.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(self.0.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Per-source counters with a ceiling each (bounded table: a source's entry
/// goes when its count falls to 0). `limit == 0`: unbounded.
#[derive(Clone)]
struct PerSource(Arc<Mutex<HashMap<std::net::IpAddr, usize>>>, usize);

struct SourceSlot(Arc<Mutex<HashMap<std::net::IpAddr, usize>>>, std::net::IpAddr);

impl PerSource {
    fn new(limit: usize) -> PerSource {
        PerSource(Arc::new(Mutex::new(HashMap::new())), limit)
    }
    fn try_take(&self, ip: std::net::IpAddr) -> Option<SourceSlot> {
        let mut m = self.0.lock().unwrap();
        let n = m.entry(ip).or_insert(0);
        if self.1 > 0 && *n >= self.1 {
            return None;
        }
        *n += 1;
        Some(SourceSlot(self.0.clone(), ip))
    }
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut m = self.0.lock().unwrap();
        if let Some(n) = m.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}

/// Tests one source may run at once: a quarter of `max_tests` (at least 1),
/// so that one address (or one NAT) can never take every slot: with the
/// default 8, four sources are needed to fill the server.
fn tests_per_source(max_tests: usize) -> usize {
    if max_tests == 0 { 0 } else { (max_tests / 4).max(1) }
}

/// "one test" or "N tests": the busy refusals' count in words.
fn tests_phrase(n: usize) -> String {
    if n == 1 { "one test".into() } else { format!("{n} tests") }
}

/// Connections one source may have in classification at once: half the pool
/// (128 of 256: a test's `max_streams` data connections may arrive at once),
/// so idle connections from one address cannot take every worker.
fn conns_per_source(max_conns: usize) -> usize {
    if max_conns == 0 { 0 } else { (max_conns / 2).max(1) }
}

/// The rate-limited log of refused or hostile connections: at most
/// [`LOG_BURST`] lines, then one per [`LOG_EVERY_NS`] with the count of those
/// not printed (a flood of hostile connections wrote one line each).
struct Log {
    state: Mutex<(u64, f64, u64)>, // (last refill, tokens, suppressed)
}

const LOG_BURST: f64 = 20.0;
const LOG_EVERY_NS: u64 = 1_000_000_000;

impl Log {
    fn new() -> Log {
        Log { state: Mutex::new((sys::mono_ns(), LOG_BURST, 0)) }
    }
    fn line(&self, msg: std::fmt::Arguments) {
        let now = sys::mono_ns();
        let mut s = self.state.lock().unwrap();
        s.1 = (s.1 + now.saturating_sub(s.0) as f64 / LOG_EVERY_NS as f64).min(LOG_BURST);
        s.0 = now;
        if s.1 < 1.0 {
            s.2 += 1;
            return;
        }
        s.1 -= 1.0;
        if s.2 > 0 {
            eprintln!("tcp server: ({} similar lines not printed)", s.2);
            s.2 = 0;
        }
        eprintln!("{msg}");
    }
}

struct Ctx {
    reg: Registry,
    /// iperf3 tests waiting for their data connections
    reg3: crate::iperf3::Registry,
    finished: AtomicBool,
    one_off_taken: AtomicBool,
    conns: Slots,
    tests: Slots,
    /// connections in classification per source
    conns_by_source: PerSource,
    /// running tests per source
    tests_by_source: PerSource,
    log: Log,
    limits: ServerLimits,
    one_off: bool,
    verbose: bool,
}

/// Serve tests on `listener` until Ctrl-C; with `one_off`, return after the
/// first test.
pub fn serve(listener: TcpListener, one_off: bool, verbose: bool) -> io::Result<()> {
    serve_with(listener, one_off, verbose, ServerLimits::default())
}

pub fn serve_with(listener: TcpListener, one_off: bool, verbose: bool, limits: ServerLimits) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let ctx = Arc::new(Ctx {
        reg: Arc::new(Mutex::new(HashMap::new())),
        reg3: Arc::new(Mutex::new(HashMap::new())),
        finished: AtomicBool::new(false),
        one_off_taken: AtomicBool::new(false),
        conns: Slots::new(limits.max_conns),
        tests: Slots::new(limits.max_tests),
        conns_by_source: PerSource::new(conns_per_source(limits.max_conns)),
        tests_by_source: PerSource::new(tests_per_source(limits.max_tests)),
        log: Log::new(),
        limits,
        one_off,
        verbose,
    });
    while !sys::stopped() && !(one_off && ctx.finished.load(Ordering::SeqCst)) {
        let (conn, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) if is_timeout(&e) => {
                sys::wait_readable(listener.as_raw_fd(), WAKE.as_nanos() as u64);
                continue;
            }
            Err(e) => {
                // EMFILE and friends: wait a little instead of spinning
                eprintln!("tcp server: accept: {e}");
                std::thread::sleep(WAKE);
                continue;
            }
        };
        let accept_mono = sys::mono_ns();
        // the worker pool: a connection beyond it is closed at once
        let Some(src) = ctx.conns_by_source.try_take(peer.ip()) else {
            if verbose {
                ctx.log.line(format_args!("tcp server: {peer}: refused, {} connections from {} in service", ctx.conns_by_source.1, peer.ip()));
            }
            continue;
        };
        let Some(slot) = ctx.conns.try_take() else {
            if verbose {
                ctx.log.line(format_args!("tcp server: {peer}: refused, {} connections in service", ctx.limits.max_conns));
            }
            continue;
        };
        let c = ctx.clone();
        // classify in a thread, so a silent connection cannot stall accept()
        if let Err(e) = spawn("classify", move || {
            let _slot = (slot, src);
            classify(conn, peer, accept_mono, &c)
        }) {
            ctx.log.line(format_args!("tcp server: {peer}: refused, cannot start a thread: {e}"));
        }
    }
    Ok(())
}

fn classify(conn: TcpStream, peer: SocketAddr, accept_mono: u64, ctx: &Ctx) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(WAKE));
    let _ = conn.set_write_timeout(Some(WAKE));
    let mut magic = [0u8; 4];
    if read_exact_timeout(&conn, &mut magic, 5_000_000_000).is_err() {
        return; // a connect-only latency probe, or garbage
    }
    if &magic == DATA_MAGIC {
        let mut h = [0u8; 12];
        if read_exact_timeout(&conn, &mut h, 5_000_000_000).is_err() {
            return;
        }
        let cookie = u64::from_le_bytes(h[..8].try_into().unwrap());
        let idx = u32::from_le_bytes(h[8..].try_into().unwrap()) as usize;
        if let Some(tx) = ctx.reg.lock().unwrap().get(&cookie) {
            let _ = tx.send((idx, conn, accept_mono));
        }
    } else if &magic == CTRL_MAGIC {
        control(conn, peer, ctx, false);
    } else if &magic == crate::probewire::FOREIGN_MAGIC {
        crate::probewire::answer_foreign(&conn);
    } else if crate::iperf3::looks_like_cookie(&magic) {
        let mut cookie = [0u8; crate::iperf3::COOKIE_SIZE];
        cookie[..4].copy_from_slice(&magic);
        if read_exact_timeout(&conn, &mut cookie[4..], 5_000_000_000).is_err() || !crate::iperf3::valid_cookie(&cookie) {
            return;
        }
        if cookie.starts_with(CTRL_COOKIE_TAG) {
            control(conn, peer, ctx, true); // bloatlab's opening, in iperf3's clothes
        } else {
            classify_iperf3(conn, cookie, peer, accept_mono, ctx);
        }
    }
}

/// A bloatlab control connection: `framed`, its parameters follow a tagged
/// cookie framed as iperf3's JSON (`control::opening`); else `BLC1` and a line.
fn control(conn: TcpStream, peer: SocketAddr, ctx: &Ctx, framed: bool) {
    if ctx.one_off && ctx.one_off_taken.load(Ordering::SeqCst) {
        return; // one test only; refuse others
    }
    // the test's slot is taken in serve_test once the client has sent its parameters and
    // (with a secret) answered the challenge: a connection that idles or trickles its
    // handshake holds a classification worker for at most CTRL_LINE_WAIT_NS, never a test
    match serve_test(conn, peer, ctx, framed) {
        Ok(()) => ctx.finished.store(true, Ordering::SeqCst),
        Err(Handshake(e)) => {
            if ctx.verbose {
                ctx.log.line(format_args!("tcp server: control connection from {peer}: {e}"));
            }
        }
        Err(Test(e)) => {
            if ctx.verbose {
                ctx.log.line(format_args!("tcp server: test from {peer}: {e}"));
            }
            ctx.finished.store(true, Ordering::SeqCst);
        }
    }
}

/// A connection that starts with an iperf3 cookie (read whole): a data
/// connection of an iperf3 test waiting for its streams, or a new iperf3 test.
fn classify_iperf3(conn: TcpStream, cookie: [u8; crate::iperf3::COOKIE_SIZE], peer: SocketAddr, accept_mono: u64, ctx: &Ctx) {
    use crate::iperf3;
    if let Some(tx) = ctx.reg3.lock().unwrap().get(&cookie) {
        let _ = tx.send((conn, accept_mono));
        return;
    }
    let deny = |c: &TcpStream| {
        let _ = (&*c).write_all(&[iperf3::state::ACCESS_DENIED as u8]);
    };
    if ctx.limits.secret.is_some() {
        // iperf3's RSA authentication is not spoken: a server with a secret serves only bloatlab's clients
        eprintln!("tcp server: iperf3 test from {peer} refused: this server requires --secret (bloatlab-probe clients only)");
        deny(&conn);
        return;
    }
    if ctx.one_off && ctx.one_off_taken.swap(true, Ordering::SeqCst) {
        deny(&conn);
        return;
    }
    let Some(_by_source) = ctx.tests_by_source.try_take(peer.ip()) else {
        ctx.log.line(format_args!("tcp server: iperf3 test from {peer} refused: busy ({} at once from one address)", tests_phrase(ctx.tests_by_source.1)));
        deny(&conn);
        return;
    };
    let Some(_test) = ctx.tests.try_take() else {
        ctx.log.line(format_args!("tcp server: iperf3 test from {peer} refused: busy ({} at once)", tests_phrase(ctx.limits.max_tests)));
        deny(&conn); // iperf3's "the server is busy running a test"
        return;
    };
    match iperf3::serve_test(conn, cookie, &ctx.reg3, &ctx.limits, peer) {
        Ok(log) => eprintln!("{log}"),
        Err(e) => eprintln!("tcp server: iperf3 test from {peer}: {e}"),
    }
    ctx.finished.store(true, Ordering::SeqCst);
}

/// How a control connection ended early: in its handshake (no test was
/// admitted: it never held a test slot) or in its test.
enum Failed {
    Handshake(String),
    Test(String),
}
use Failed::{Handshake, Test};

fn serve_test(ctrl: TcpStream, peer: SocketAddr, ctx: &Ctx, framed: bool) -> Result<(), Failed> {
    let limits = &ctx.limits;
    let mut rd = BufReader::new(&ctrl);
    // the whole handshake within CTRL_LINE_WAIT_NS of its start: a trickle cannot renew it
    let hs_end = sys::mono_ns().saturating_add(CTRL_LINE_WAIT_NS);
    let left = || hs_end.saturating_sub(sys::mono_ns()).max(1);
    // `line`: what the client's secret signs; `params`: our parameters in it
    let (line, params) = if framed {
        // nothing is buffered yet: the frame is read from the socket itself
        let text = read_framed(rd.get_ref(), MAX_CTRL_LINE, hs_end).map_err(|e| Handshake(format!("reading parameters: {e}")))?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let params = v.get(OPENING_KEY).map(|p| p.to_string()).unwrap_or_default();
        (text, params)
    } else {
        let line = read_line_max(&mut rd, left(), MAX_CTRL_LINE).map_err(|e| Handshake(format!("reading parameters: {e}")))?;
        (line.clone(), line)
    };
    if let Some(secret) = &limits.secret {
        // challenge-response: HMAC-SHA256(secret, challenge || parameter line)
        let challenge = format!("{:016x}{:016x}", sys::random_u64(), sys::random_u64());
        send_json(&ctrl, &json!({"ok": false, "challenge": challenge})).map_err(|e| Handshake(format!("challenge: {e}")))?;
        let answer = read_line_max(&mut rd, left(), MAX_CTRL_LINE).map_err(|e| Handshake(format!("reading the answer: {e}")))?;
        let got: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
        let key = crate::wire::Key::new(secret);
        if !got["auth"].as_str().is_some_and(|a| key.verify_hex(auth_data(&challenge, &line).as_bytes(), a)) {
            let _ = send_json(&ctrl, &json!({"ok": false, "error": "authentication failed (--secret)"}));
            return Err(Handshake("authentication failed".into()));
        }
    }
    let (p, deadline_ns) = match limits.admit(&params) {
        Ok(x) => x,
        Err((why, limit)) => {
            let mut answer = json!({"ok": false, "error": why});
            if limit {
                answer["limit"] = json!(true);
            }
            let _ = send_json(&ctrl, &answer);
            return Err(Handshake(why));
        }
    };
    // admitted: now a slot, if one is free (and this source has not its share already)
    let busy = |why: String| {
        let _ = send_json(&ctrl, &json!({"ok": false, "busy": true, "error": why}));
        Handshake("busy".into())
    };
    let Some(_by_source) = ctx.tests_by_source.try_take(peer.ip()) else {
        return Err(busy(format!("busy: this server runs at most {} at once from one address; try again later", tests_phrase(ctx.tests_by_source.1))));
    };
    let Some(_test) = ctx.tests.try_take() else {
        return Err(busy(format!("busy: this server runs at most {} at once; try again later", tests_phrase(limits.max_tests))));
    };
    if ctx.one_off && ctx.one_off_taken.swap(true, Ordering::SeqCst) {
        return Err(busy("busy: this server runs one test only (-1) and has begun it".into()));
    }
    drop(rd);
    serve_admitted(ctrl, p, deadline_ns, ctx).map_err(Test)
}

fn serve_admitted(ctrl: TcpStream, p: Params, deadline_ns: Option<u64>, ctx: &Ctx) -> Result<(), String> {
    let (reg, verbose, limits) = (&ctx.reg, ctx.verbose, &ctx.limits);
    if p.reverse {
        if let Some(cc) = &p.cc {
            // check on a scratch socket before anything starts
            let probe = TcpListener::bind("127.0.0.1:0").ok();
            let chk = probe.as_ref().map(|l| sys::set_cc(l.as_raw_fd(), cc));
            if let Some(Err(e)) = chk {
                let _ = send_json(&ctrl, &json!({"ok": false, "error": format!("the server's {e}"), "available": sys::available_cc()}));
                return Err(e);
            }
        }
    }
    let (tx, rx) = mpsc::channel();
    reg.lock().unwrap().insert(p.cookie, tx);
    // self probes need a test that runs for a time (frames would spoil an exact byte count)
    let framed = p.self_probes && p.bytes.is_none();
    let mut ok = json!({"ok": true, "kernel": sys::kernel_release(), "boot_id": sys::boot_id(), "self_probes": framed});
    if let Some(w) = paced_by_default_warning(&p) {
        ok["warning"] = json!(w);
    }
    let _ = send_json(&ctrl, &ok);
    // Each data connection is served from the moment it arrives (an upload's is read, a download's sent to), not
    // once all have come: behind a 0.22-Mbit/s policer one upload flow's 16-byte hello was dropped again and again
    // (its bucket emptied by the other flows), and the three flows that had arrived were never read: their
    // receive windows closed once the socket buffers filled, and the client read its upload rate from stalled
    // flows (campaign seed 57 path 6, 3 of 16 upload phases). A test some of whose data connections never come is
    // still answered, for those that did, with the missing ones named (`missing`, `streams_expected`).
    //
    // A client that vanishes ends its test: the control connection is watched from here on; the server's own
    // deadline ends it too (a byte count never reached). A reverse test's client asks us to stop sending (it was
    // interrupted, or its phase ended), an upload's says its senders have ended: `halt`.
    let ctrl_gone = Arc::new(AtomicBool::new(false));
    let halt = Arc::new(AtomicBool::new(false));
    let over = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (gone, halt, over, c) = (ctrl_gone.clone(), halt.clone(), over.clone(), ctrl.try_clone().map_err(|e| e.to_string())?);
        let hard_end = deadline_ns.map(|d| sys::mono_ns().saturating_add(d).saturating_add(limits.data_wait_ns).saturating_add(ACK_WAIT_MAX_NS));
        match spawn("ctrl-watch", move || watch_control(&c, &gone, &halt, &over, hard_end)) {
            Ok(w) => w,
            Err(e) => {
                reg.lock().unwrap().remove(&p.cookie);
                return Err(refuse_busy(&ctrl, &[], e));
            }
        }
    };
    // a reverse test's sampler reads every stream that has arrived, until no more can
    let arrived: Arc<Mutex<Vec<Arc<StreamState>>>> = Arc::new(Mutex::new(Vec::new()));
    let arrivals_over = Arc::new(AtomicBool::new(false));
    let sampler = if p.reverse {
        let (v, end, iv) = (arrived.clone(), arrivals_over.clone(), p.info_interval_ns);
        match spawn("sampler", move || run_sampler_growing(&v, iv, &end)) {
            Ok(h) => Some(h),
            Err(e) => {
                reg.lock().unwrap().remove(&p.cookie);
                over.store(true, Ordering::SeqCst);
                let _ = watcher.join();
                return Err(refuse_busy(&ctrl, &[], e));
            }
        }
    } else {
        None
    };
    let mut states: Vec<Arc<StreamState>> = Vec::new();
    let mut workers = Vec::new();
    let deadline = match limits.data_wait_ns {
        0 => u64::MAX,
        w => sys::mono_ns().saturating_add(w),
    };
    let mut failed: Option<io::Error> = None;
    while states.len() < p.streams {
        let left = deadline.saturating_sub(sys::mono_ns());
        // the client's flows have ended (its stop line came, `halt`): a data connection still missing will not
        // matter, and the answer need not wait out the rest of --data-wait (the client had ended its 3-s phase
        // 4.9 s before this server's 10-s wait did: campaign seed 57 path 6, the upload's BBR phase)
        if left == 0 || halt.load(Ordering::SeqCst) || ctrl_gone.load(Ordering::SeqCst) {
            break;
        }
        match rx.recv_timeout(Duration::from_nanos(left.min(WAKE.as_nanos() as u64))) {
            Ok((idx, sock, t)) => {
                if idx >= p.streams || states.iter().any(|s| s.idx == idx) {
                    continue; // not one of this test's (a second hello for one index): closed
                }
                if p.reverse {
                    if let Some(cc) = &p.cc {
                        let _ = sys::set_cc(sock.as_raw_fd(), cc);
                    }
                    if p.pacing {
                        let _ = sys::set_internal_pacing(sock.as_raw_fd());
                    }
                }
                let s = StreamState::new(idx, sock, t, 0);
                if framed {
                    if let Err(e) = crate::probewire::Framing::attach(&s, None, p.reverse) {
                        failed = Some(e);
                        states.push(s);
                        break;
                    }
                }
                let w = {
                    let s = s.clone();
                    let (p, gone, halt) = (p.clone(), ctrl_gone.clone(), halt.clone());
                    spawn("stream", move || {
                        let stop = || gone.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed);
                        if p.reverse {
                            run_sender(&s, deadline_ns, p.bytes, p.rate_bps, p.onoff_ticks, &stop)
                        } else {
                            // an upload's client says on the control connection when its senders have ended (halt)
                            run_receiver(&s, &|| gone.load(Ordering::Relaxed), false, p.bytes, p.duration_ns, &|| false, &|| halt.load(Ordering::Relaxed))
                        }
                    })
                };
                states.push(s.clone());
                match w {
                    Ok(w) => {
                        workers.push(w);
                        arrived.lock().unwrap().push(s);
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    reg.lock().unwrap().remove(&p.cookie);
    arrivals_over.store(true, Ordering::SeqCst);
    if let Some(e) = failed {
        ctrl_gone.store(true, Ordering::SeqCst);
        for w in workers {
            let _ = w.join();
        }
        over.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        if let Some(h) = sampler {
            let _ = h.join();
        }
        return Err(refuse_busy(&ctrl, &states, e));
    }
    if states.is_empty() && !ctrl_gone.load(Ordering::SeqCst) {
        over.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        if let Some(h) = sampler {
            let _ = h.join();
        }
        let _ = send_json(&ctrl, &json!({"ok": false, "error": "not all data connections arrived: none did", "missing": (0..p.streams).collect::<Vec<_>>(), "streams_expected": p.streams}));
        return Err("no data connection arrived".into());
    }
    let outcomes: Vec<Outcome> = workers.into_iter().map(|w| w.join().unwrap_or_default()).collect();
    over.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    if ctrl_gone.load(Ordering::SeqCst) {
        if let Some(h) = sampler {
            let _ = h.join();
        }
        return Err(if states.len() < p.streams {
            "the client closed the control connection before its data connections".into()
        } else {
            "the client closed the control connection; test stopped".into()
        });
    }
    if let Some(h) = sampler {
        let _ = h.join();
    }
    if verbose {
        let total: u64 = states.iter().map(|s| s.read.load(Ordering::Relaxed) + s.written.load(Ordering::Relaxed)).sum();
        eprintln!("tcp server: test done, {} streams, {} moved", states.len(), fmt_bytes(total as f64));
    }
    let missing: Vec<usize> = (0..p.streams).filter(|i| !states.iter().any(|s| s.idx == *i)).collect();
    if verbose && !missing.is_empty() {
        eprintln!("tcp server: {} of {} data connections arrived (missing: {missing:?}); results for those that did", states.len(), p.streams);
    }
    send_results(&ctrl, &states, &outcomes, p.streams, &missing, p.deflate_results).map_err(|e| format!("sending results: {e}"))
}

/// The test's results on the control connection, one line of JSON, streamed:
/// each stream's samples are taken out, turned into columns, written and
/// dropped in turn, so the result never exists whole in memory (it did, as a
/// JSON tree: ~800 B a sample at its peak, 202 MB for one 100-stream test,
/// 1.49 GB for eight tests whose client never read). A client that does not
/// read stops the writes at the socket's 10-s timeout.
///
/// `missing`: the data connections (indices) that never arrived, of
/// `expected`; listed (`missing`, `streams_expected`) only where some did not.
/// `deflate`: the client asked for the line deflated ([`RESULTS_DEFLATED`]):
/// the same JSON through zlib and base64, streamed alike.
fn send_results(ctrl: &TcpStream, states: &[Arc<StreamState>], outcomes: &[Outcome], expected: usize, missing: &[usize], deflate: bool) -> io::Result<()> {
    // when the results began to go out (the client's `Timing::server_results`, on the same host)
    let began = sys::mono_ns();
    let _ = ctrl.set_write_timeout(Some(Duration::from_secs(10)));
    let mut w = io::BufWriter::with_capacity(1 << 16, ctrl);
    if deflate {
        w.write_all(RESULTS_DEFLATED.as_bytes())?;
        let mut z = deflated(&mut w);
        write_results(&mut z, states, outcomes, expected, missing, began)?;
        z.finish()?.finish()?;
    } else {
        write_results(&mut w, states, outcomes, expected, missing, began)?;
    }
    w.write_all(b"\n")?;
    w.flush()
}

/// [`send_results`]'s JSON document (without its newline) into `w`; `began`: when the results began to go out.
fn write_results<W: Write>(w: &mut W, states: &[Arc<StreamState>], outcomes: &[Outcome], expected: usize, missing: &[usize], began: u64) -> io::Result<()> {
    w.write_all(b"{\"streams\":[")?;
    for (i, (s, o)) in states.iter().zip(outcomes).enumerate() {
        let samples = std::mem::take(&mut *s.samples.lock().unwrap());
        let written = s.written.load(Ordering::Relaxed);
        let mut series = FlowSeries::default();
        for (t, ti) in samples.iter() {
            push_sample(&mut series, s.idx, (*t - s.start_mono) as f64 / 1e9, ti, s.pre, written);
        }
        drop(samples);
        let head = json!({
            "idx": s.idx, "start_mono": s.start_mono, "end_mono": o.end_mono,
            "bytes_read": s.read.load(Ordering::Relaxed), "bytes_written": written,
            "fct_ns": o.fct_ns, "completed": o.completed, "error": o.error,
            "info": o.final_info.map(|ti| info_json(&ti, written, s.pre)),
            "cc": sys::get_cc(s.sock.as_raw_fd()),
        });
        let head = serde_json::to_vec(&head)?; // an object: ends with '}'
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(&head[..head.len() - 1])?;
        w.write_all(b",\"series\":")?;
        serde_json::to_writer(&mut *w, &SeriesOut::of(&series))?;
        w.write_all(b"}")?;
    }
    let mut tail = json!({"boot_id": sys::boot_id(), "kernel": sys::kernel_release(), "results_mono": began});
    if !missing.is_empty() {
        tail["missing"] = json!(missing);
        tail["streams_expected"] = json!(expected);
    }
    let tail = tail.to_string();
    w.write_all(b"],")?;
    w.write_all(&tail.as_bytes()[1..]) // its members after ours
}

/// Tell the client the server ran out of threads; end its streams.
fn refuse_busy(ctrl: &TcpStream, states: &[Arc<StreamState>], e: io::Error) -> String {
    for s in states {
        let _ = s.sock.shutdown(std::net::Shutdown::Both);
    }
    let _ = send_json(ctrl, &json!({"ok": false, "error": format!("busy: the server cannot start a thread ({e}); try again later")}));
    format!("cannot start a thread: {e}")
}

/// Until `over`: set `gone` when the control connection closes (EOF or an
/// error) or the hard end passes. A client sends nothing during a test
/// except [`STOP_LINE`] when it was interrupted in a reverse test (or its
/// phase ended), and in an upload once its senders have ended: anything it
/// sends sets `halt` (a download's senders stop, then report as usual; an
/// upload's receivers end at their first silence). Bounded: one small
/// buffer, read and dropped.
fn watch_control(mut c: &TcpStream, gone: &AtomicBool, halt: &AtomicBool, over: &AtomicBool, hard_end: Option<u64>) {
    let mut buf = [0u8; 512];
    while !over.load(Ordering::SeqCst) {
        if hard_end.is_some_and(|e| sys::mono_ns() > e) {
            gone.store(true, Ordering::SeqCst);
            return;
        }
        match c.read(&mut buf) {
            Ok(0) => {
                gone.store(true, Ordering::SeqCst);
                return;
            }
            Ok(_) => halt.store(true, Ordering::SeqCst),
            Err(e) if is_timeout(&e) => {}
            Err(_) => {
                gone.store(true, Ordering::SeqCst);
                return;
            }
        }
    }
}

fn info_json(ti: &TcpInfo, written: u64, pre: u64) -> Value {
    json!({"bytes_acked": data_acked(ti, written, pre), "segs_out": ti.segs_out, "total_retrans": ti.total_retrans,
           "min_rtt_us": ti.min_rtt, "srtt_us": ti.rtt})
}

/// Controls whose `init` marks the socket for the kernel's internal pacing
/// (`bbr_init`: `SK_PACING_NEEDED`).
const PACING_CONTROLS: [&str; 3] = ["bbr", "bbr2", "bbr3"];

/// A download (-R) asks for a control that does not pace, but this server's
/// default control paces: the accepted socket was initialised with the default
/// before the test's control is set, and switching never clears the pacing
/// mark, so the connection is paced (as if the server ran sch_fq). Found
/// through the emulator, whose namespaces inherited a BBR default: kernel
/// "CUBIC" downloads were paced (docs/emulator.md).
fn paced_by_default_warning(p: &Params) -> Option<String> {
    let cc = p.cc.as_deref()?;
    if !p.reverse || p.pacing || PACING_CONTROLS.contains(&cc) {
        return None;
    }
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").ok()?;
    let default = default.trim();
    PACING_CONTROLS.contains(&default).then(|| {
        format!(
            "the server's default congestion control is {default}: its accepted sockets start with {default}, which \
             marks them for pacing before -C {cc} is set, and the mark stays, so this {cc} download is paced (as with \
             sch_fq). For an unpaced {cc}, start the server with net.ipv4.tcp_congestion_control set to a control that \
             does not pace (e.g. {cc})"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_refuse_beyond_their_limit_and_free_on_drop() {
        let s = Slots::new(2);
        let a = s.try_take().unwrap();
        let _b = s.try_take().unwrap();
        assert!(s.try_take().is_none());
        drop(a);
        assert!(s.try_take().is_some());
        let unbounded = Slots::new(0);
        let v: Vec<_> = (0..1000).map(|_| unbounded.try_take().unwrap()).collect();
        assert_eq!(v.len(), 1000);
    }

    #[test]
    fn a_busy_refusal_counts_its_tests_in_words() {
        assert_eq!(tests_phrase(1), "one test");
        assert_eq!(tests_phrase(2), "2 tests");
        assert_eq!(tests_phrase(8), "8 tests");
    }
}
