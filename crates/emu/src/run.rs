//! A whole emulator run: check the machine, set up the namespaces and the
//! link, start the kernel's senders and receivers (bloatlab-probe), wait,
//! tear down, and assemble the raw result of `docs/engine-interface.md`.
//!
//! Who runs where: a flow's *sender* is `bloatlab-probe tcp client` with
//! `TCP_CONGESTION` set (`-C`), in the server namespace for a "down" flow and
//! in the client namespace for an "up" flow; its receiver is `tcp server` on
//! the other side. Its JSON (TCP_INFO every sample interval) is the flow's.
//! A probe's echo server sits where its reply starts: the server namespace
//! for "down" (the reply crosses the down queue), the client namespace for
//! "up".

use crate::forward::{DirResult, Forwarder, LateHist, Timing};
use crate::ns::{self, Netns};
use crate::pcap::Pcap;
use crate::scenario::{Direction, EmuScenario, Resolved, FLOW_CPORT, FLOW_PORT, PROBE_PORT};
use crate::sys;
use bloatlab_core::qdisc::DropReason;
use bloatlab_schema::result::DistOut;
use bloatlab_schema::series::{FlowSeries, LinkSeries, ProbeSeries, Series};
use serde_json::{json, Map, Value};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Lateness p99 above which a run is flagged (µs).
pub const LATENESS_FLAG_US: f64 = 1000.0;

#[derive(Debug, Clone)]
pub struct Options {
    pub probe_bin: String,
    pub pcap_dir: Option<String>,
    pub timing: Timing,
    /// Hold /dev/cpu_dma_latency at 0 during the run.
    pub dma_latency: bool,
    pub quiet: bool,
    /// Where the traffic generators' JSON and stderr go (a fresh temp dir).
    pub workdir: PathBuf,
}

/// Kernel congestion controls available (`tcp_available_congestion_control`).
pub fn kernel_ccs() -> Vec<String> {
    ns::read_sysctl(None, "net/ipv4/tcp_available_congestion_control").split_whitespace().map(String::from).collect()
}

/// Everything the emulator needs from the machine, or one clear sentence.
pub fn preflight(sc: Option<&Resolved>) -> Result<(), String> {
    if !sys::is_root() {
        return Err("the emulator needs root (network namespaces, TUN devices): run it with sudo".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err("the emulator needs /dev/net/tun, which this machine lacks (in a container: --device /dev/net/tun)".into());
    }
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun") {
        return Err(format!("the emulator cannot open /dev/net/tun: {e}"));
    }
    if Command::new("ip").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return Err("the emulator needs the `ip` command (Debian: apt install iproute2)".into());
    }
    if let Some(sc) = sc {
        let have = kernel_ccs();
        for f in &sc.flows {
            if !have.iter().any(|c| c == &f.cc) {
                return Err(format!(
                    "flow.{}.cc: this kernel has no congestion control \"{}\" (it has: {})",
                    f.id,
                    f.cc,
                    have.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// Children that are killed when dropped (on every exit path).
#[derive(Default)]
pub struct Kids {
    pub list: Vec<(String, Child)>,
}

impl Kids {
    pub fn terminate_all(&mut self, grace: Duration) {
        for (_, c) in self.list.iter_mut() {
            if c.try_wait().ok().flatten().is_none() {
                sys::kill(c.id(), libc::SIGTERM);
            }
        }
        let until = std::time::Instant::now() + grace;
        while std::time::Instant::now() < until && self.list.iter_mut().any(|(_, c)| c.try_wait().ok().flatten().is_none()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for (_, c) in self.list.iter_mut() {
            if c.try_wait().ok().flatten().is_none() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        self.terminate_all(Duration::from_millis(300));
    }
}

/// Spawn `argv` inside a namespace (by descriptor), dying with us.
pub fn spawn_in(ns_fd: i32, argv: &[String], stdout: Stdio, stderr: Stdio, stdin: Stdio) -> Result<Child, String> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdout(stdout).stderr(stderr).stdin(stdin);
    // SAFETY: child_enter only calls setns and prctl (async-signal-safe).
    unsafe {
        cmd.pre_exec(move || sys::child_enter(ns_fd));
    }
    cmd.spawn().map_err(|e| format!("cannot start {}: {e}", argv[0]))
}

fn dur_arg(ns: u64) -> String {
    if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1000)
    }
}

/// The link threads of a run.
pub struct Links {
    stop: Arc<AtomicBool>,
    handles: Vec<(String, std::thread::JoinHandle<Result<DirResult, String>>)>,
}

impl Links {
    /// Start both directions; the link's clock starts at `origin`, the scenario `lead` ns later.
    pub fn start(sc: &Resolved, net: &Netns, origin: u64, lead: u64, opt: &Options) -> Result<Links, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        use std::os::fd::AsRawFd;
        let wall0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
            - sys::mono_ns().saturating_sub(origin)
            + lead;
        for dir in ["down", "up"] {
            let mut cfg = sc.link_config(dir)?;
            cfg.measure_from = lead;
            cfg.measure_until = lead.saturating_add(cfg.measure_until);
            crate::link::Link::new(cfg.clone()).map_err(|e| format!("links.{dir}.qdisc: {e}"))?;
            let (ingress, egress) = if dir == "down" {
                (net.tun_server.as_raw_fd(), net.tun_client.as_raw_fd())
            } else {
                (net.tun_client.as_raw_fd(), net.tun_server.as_raw_fd())
            };
            let pcap = match &opt.pcap_dir {
                Some(d) => {
                    std::fs::create_dir_all(d).map_err(|e| format!("--pcap {d}: {e}"))?;
                    Some(Pcap::create(&format!("{d}/{dir}.pcap"), wall0).map_err(|e| format!("--pcap: {e}"))?)
                }
                None => None,
            };
            let fw = Forwarder { link: cfg, ingress, egress, origin, stop: stop.clone(), pcap, timing: opt.timing };
            let h = std::thread::Builder::new()
                .name(format!("link-{dir}"))
                .spawn(move || fw.run())
                .map_err(|e| format!("cannot start the link thread: {e}"))?;
            handles.push((dir.to_string(), h));
        }
        Ok(Links { stop, handles })
    }

    pub fn stop(self) -> Result<Vec<(String, DirResult)>, String> {
        self.stop.store(true, Ordering::SeqCst);
        let mut out = Vec::new();
        for (d, h) in self.handles {
            let r = h.join().map_err(|_| format!("link thread {d} panicked"))??;
            out.push((d, r));
        }
        Ok(out)
    }
}

/// What moves the packets: the two links, or a WiFi medium (docs/wifi.md).
enum Medium {
    Links(Links),
    Wifi(crate::wifi::WifiThread),
}

impl Medium {
    fn start(sc: &Resolved, net: &Netns, origin: u64, lead: u64, opt: &Options) -> Result<Medium, String> {
        use std::os::fd::AsRawFd;
        Ok(match sc.wifi {
            Some(_) => Medium::Wifi(crate::wifi::WifiThread::start(sc, net.tun_server.as_raw_fd(), net.tun_client.as_raw_fd(), origin, opt.timing)?),
            None => Medium::Links(Links::start(sc, net, origin, lead, opt)?),
        })
    }

    /// Stop; the links' results, or the medium's `wifi` object and lateness.
    fn stop(self) -> Result<(Vec<(String, DirResult)>, Option<(Value, LateHist)>), String> {
        Ok(match self {
            Medium::Links(l) => (l.stop()?, None),
            Medium::Wifi(w) => (Vec::new(), Some(w.stop()?)),
        })
    }
}

/// A sender (flow) or probe client with the files it writes to.
struct Gen {
    kind: &'static str,
    id: usize,
    out: PathBuf,
    err: PathBuf,
    child_idx: usize,
}

fn wait_listening(ns_name: &str, port: u16, udp: bool, kids: &mut Kids, idx: usize, err: &Path) -> Result<(), String> {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < until {
        if ns::listening(ns_name, port, udp) {
            return Ok(());
        }
        if let Ok(Some(st)) = kids.list[idx].1.try_wait() {
            let msg = std::fs::read_to_string(err).unwrap_or_default();
            return Err(format!("bloatlab-probe {} exited ({st}) before listening: {}", kids.list[idx].0, msg.trim()));
        }
        if sys::interrupted() != 0 {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err(format!("bloatlab-probe {} did not start listening on port {port} within 5 s", kids.list[idx].0))
}

/// Start the receivers and echo servers; return when all listen.
fn start_servers(sc: &Resolved, net: &Netns, opt: &Options, kids: &mut Kids) -> Result<(), String> {
    for f in &sc.flows {
        // Every connection is opened by the client, as a user's are: the server sits in the server
        // namespace and, for a "down" flow, sends after the client's request (`tcp client -R`).
        let (ns_name, ip) = (&net.server, &net.server_ip);
        let port = FLOW_PORT + f.id as u16;
        let err = opt.workdir.join(format!("flow-{}-server.err", f.id));
        let argv = vec![opt.probe_bin.clone(), "tcp".into(), "server".into(), "--bind".into(), format!("{ip}:{port}"), "--one-off".into(),
            // a private server in our namespace: no public-server limits (a page's object may
            // wait long for its data connection: --data-wait 0)
            "--max-duration".into(), "0".into(), "--min-info-interval".into(), "0".into(), "--max-samples".into(), "0".into(),
            "--max-tests".into(), "0".into(), "--max-conns".into(), "0".into(), "--max-streams".into(), "4096".into(),
            "--data-wait".into(), "0".into()];
        let c = spawn_in(net.ns_fd(true), &argv, Stdio::null(), Stdio::from(mkfile(&err)?), Stdio::null())?;
        kids.list.push((format!("tcp server (flow {})", f.id), c));
        let idx = kids.list.len() - 1;
        wait_listening(ns_name, port, false, kids, idx, &err)?;
    }
    for p in &sc.probes {
        // The echo server is where the reply starts: the server side for "down".
        let echo_server_side = p.direction == Direction::Down;
        let (ns_name, ip) = if echo_server_side { (&net.server, &net.server_ip) } else { (&net.client, &net.client_ip) };
        let port = PROBE_PORT + p.id as u16;
        let err = opt.workdir.join(format!("probe-{}-server.err", p.id));
        let argv = vec![opt.probe_bin.clone(), "udp".into(), "server".into(), "--bind".into(), format!("{ip}:{port}"), "--max-duration".into(), "0".into()];
        let c = spawn_in(net.ns_fd(echo_server_side), &argv, Stdio::null(), Stdio::from(mkfile(&err)?), Stdio::null())?;
        kids.list.push((format!("udp server (probe {})", p.id), c));
        let idx = kids.list.len() - 1;
        wait_listening(ns_name, port, true, kids, idx, &err)?;
    }
    Ok(())
}

fn mkfile(p: &Path) -> Result<File, String> {
    File::create(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// When the run should end its senders (ns after origin), and their argv.
fn flow_argv(sc: &Resolved, f: &crate::scenario::Flow, net: &Netns, opt: &Options, run_for: Option<u64>) -> Vec<String> {
    let dst = &net.server_ip;
    let mut a = vec![
        opt.probe_bin.clone(),
        "tcp".into(),
        "client".into(),
        dst.clone(),
        "-p".into(),
        (FLOW_PORT + f.id as u16).to_string(),
        "-C".into(),
        f.cc.clone(),
        "--cport".into(),
        (FLOW_CPORT + f.id as u16).to_string(),
        "--info-interval".into(),
        dur_arg(sc.sample_interval_ns),
        "-i".into(),
        "0".into(),
        "--json".into(),
    ];
    if f.direction == Direction::Down {
        // the client connects and asks; the server sends (its 16-byte data hello is the request)
        a.push("-R".into());
    }
    if f.pacing {
        a.push("--pacing".into());
    }
    if let Some(r) = f.app_rate_bps {
        a.push("-b".into());
        a.push(format!("{r}bit"));
    }
    if let (Some(on), Some(off)) = (f.on_ns, f.off_ns) {
        a.extend(["--on".into(), dur_arg(on), "--off".into(), dur_arg(off)]);
    }
    if f.page.is_some() {
        // a page's object: its control connection now, its data connection when Pages says go
        a.push("--wait-go".into());
        a.push("--done-file".into());
        a.push(Pages::done_path(opt, f.id).display().to_string());
    }
    let end = run_for.unwrap_or_else(|| f.stop_ns.unwrap_or(sc.duration_ns).min(sc.duration_ns));
    match f.size_bytes {
        Some(n) => {
            a.push("-n".into());
            a.push(n.to_string());
        }
        None => {
            // The emulator ends the flow at `end` (SIGTERM); -t is only a safety net.
            a.push("-t".into());
            a.push(dur_arg(end.saturating_sub(f.start_ns) + 30_000_000_000));
        }
    }
    a
}

fn probe_argv(sc: &Resolved, p: &crate::scenario::Probe, net: &Netns, opt: &Options, run_for: Option<u64>) -> Vec<String> {
    let dst = if p.direction == Direction::Down { &net.server_ip } else { &net.client_ip };
    vec![
        opt.probe_bin.clone(),
        "udp".into(),
        "client".into(),
        dst.clone(),
        "-p".into(),
        (PROBE_PORT + p.id as u16).to_string(),
        "--interval".into(),
        dur_arg(p.interval_ns),
        "-t".into(),
        dur_arg(run_for.unwrap_or(sc.duration_ns)),
        "--size".into(),
        p.size_bytes.to_string(),
        // A reply is lost only if it has not come back within 5 s (bloated queues are slow, not lossy).
        "--timeout".into(),
        "5s".into(),
        "--give-up".into(),
        "10s".into(),
        "-i".into(),
        "0".into(),
        "--json".into(),
    ]
}

/// Start the scenario's senders and probe clients at their start times
/// (relative to `origin`), calling `tick` while waiting. Returns their files.
fn start_clients(
    sc: &Resolved,
    net: &Netns,
    opt: &Options,
    kids: &mut Kids,
    origin: u64,
    run_for: Option<u64>,
    mut tick: impl FnMut(&mut Kids) -> bool,
) -> Result<Vec<Gen>, String> {
    let mut gens = Vec::new();
    // Spawn times (absolute, monotonic ns): a sender starts early by its connection set-up
    // (bloatlab-probe's control connection: about 2 RTTs) plus process start-up, so that its data
    // connection opens at about the flow's start time.
    let mut todo: Vec<(u64, bool, usize)> = sc
        .flows
        .iter()
        .map(|f| ((origin + f.start_ns).saturating_sub(spawn_lead(f)), true, f.id))
        .chain(sc.probes.iter().map(|p| (origin.saturating_sub(SPAWN_NS), false, p.id)))
        .collect();
    todo.sort();
    for (at, is_flow, id) in todo {
        loop {
            let now = sys::mono_ns();
            if now >= at {
                break;
            }
            if sys::interrupted() != 0 || !tick(kids) {
                return Ok(gens);
            }
            std::thread::sleep(Duration::from_nanos((at - now).min(5_000_000)));
        }
        let kind = if is_flow { "flow" } else { "probe" };
        let out = opt.workdir.join(format!("{kind}-{id}.json"));
        let err = opt.workdir.join(format!("{kind}-{id}.err"));
        let (argv, server_side) = if is_flow {
            let f = sc.flows.iter().find(|f| f.id == id).unwrap();
            (flow_argv(sc, f, net, opt, run_for), false)
        } else {
            let p = sc.probes.iter().find(|p| p.id == id).unwrap();
            (probe_argv(sc, p, net, opt, run_for), p.direction == Direction::Up)
        };
        let stdin = if is_flow && sc.flows[id].page.is_some() { Stdio::piped() } else { Stdio::null() };
        let c = spawn_in(net.ns_fd(server_side), &argv, Stdio::from(mkfile(&out)?), Stdio::from(mkfile(&err)?), stdin)?;
        kids.list.push((format!("{kind} {id}"), c));
        gens.push(Gen { kind, id, out, err, child_idx: kids.list.len() - 1 });
    }
    Ok(gens)
}

/// The web pages of a run (docs/scenario.md `[[page]]`): every object's
/// client is spawned before the page starts and waits (`--wait-go`) with its
/// control connection open; the first `connections` objects get their go
/// line at the page's start, each later one as soon as an earlier object's
/// client has read its last byte (`--done-file`, polled every millisecond).
struct Pages {
    /// Per page: its objects (flow ids) in order, and how many were told to go.
    objects: Vec<(Vec<usize>, usize)>,
    /// (page, flow id) of the objects told to go and not yet done.
    running: Vec<(usize, usize)>,
    /// Per flow id: told to go.
    went: Vec<bool>,
}

impl Pages {
    fn new(sc: &Resolved) -> Pages {
        let mut objects: Vec<(Vec<usize>, usize)> = sc.pages.iter().map(|_| (Vec::new(), 0)).collect();
        for f in &sc.flows {
            if let Some(p) = f.page {
                objects[p].0.push(f.id);
            }
        }
        Pages { objects, running: Vec::new(), went: vec![false; sc.flows.len()] }
    }

    fn done_path(opt: &Options, id: usize) -> PathBuf {
        opt.workdir.join(format!("flow-{id}.done"))
    }

    fn active(&self) -> bool {
        self.objects.iter().any(|(o, n)| *n < o.len()) || !self.running.is_empty()
    }

    /// Tell whatever may start now to go (`mono`: now; `origin`: the scenario's t = 0).
    fn poll(&mut self, sc: &Resolved, opt: &Options, kids: &mut Kids, origin: u64, mono: u64) {
        self.running.retain(|&(_, id)| !Pages::done_path(opt, id).exists());
        for (p, (objs, told)) in self.objects.iter_mut().enumerate() {
            let Some(&first) = objs.first() else { continue };
            if mono < origin + sc.flows[first].start_ns {
                continue;
            }
            let conns = sc.pages[p].connections as usize;
            while *told < objs.len() && self.running.iter().filter(|r| r.0 == p).count() < conns {
                let id = objs[*told];
                let name = format!("flow {id}");
                let Some((_, child)) = kids.list.iter_mut().find(|(n, _)| *n == name) else { break };
                // After the scenario's end (`close`) the objects not yet told have no standard input:
                // they stay unstarted (no result, as expected), not "went" without a go line (which
                // read as a generator without a result and failed whole runs of `bufferbloat`).
                let Some(stdin) = child.stdin.as_mut() else { break };
                {
                    use std::io::Write;
                    let _ = stdin.write_all(b"go\n");
                    let _ = stdin.flush();
                }
                self.went[id] = true;
                self.running.push((p, id));
                *told += 1;
            }
        }
    }

    /// At the end: objects that never started are told so (their standard
    /// input closes and they exit without a result, as expected).
    fn close(&self, sc: &Resolved, kids: &mut Kids) {
        for f in sc.flows.iter().filter(|f| f.page.is_some() && !self.went[f.id]) {
            let name = format!("flow {}", f.id);
            if let Some((_, child)) = kids.list.iter_mut().find(|(n, _)| *n == name) {
                drop(child.stdin.take());
            }
        }
    }
}

/// Time for a process to start and bind (ns): measured ~5-10 ms here.
const SPAWN_NS: u64 = 20_000_000;
/// How long a traffic generator may take to report after its SIGTERM at the
/// scenario's end (beyond 4 RTTs), before it is killed without a result. A TCP
/// sender waits up to 2 s for its server's line (bloatlab-probe's tcp.rs: the
/// server answers only after the data still queued in the socket drains through
/// the bottleneck), and under load the generators, which run at normal priority
/// beside the emulator's SCHED_FIFO threads, can be starved for a second or
/// more: with 3 s, 1 run in 10 of an 8-s policed scenario with two CPU-bound
/// jobs beside it lost its flow's result ("no result from bloatlab-probe: (no
/// output)", issue 13's known defect; the sender was still reading its
/// server's line when killed). A run that ends normally does not wait for it.
/// 15 s since 2026-11-23: in `reproduce bufferbloat --quick --engine emu` (12
/// CUBIC downloads behind a 1.2-s FIFO, a 62-object page, 120 s, 2 cores) the
/// twelve downloads' clients wrote their results 4-6 s after the end on a quiet
/// machine (file times; the drain behind the FIFO is ~1.2 s of it, the rest not
/// yet explained), and 2 of 12 passed 8 s in two runs of three.
const REPORT_GRACE_NS: u64 = 15_000_000_000;

/// How long before a flow's start its sender is spawned: 2 RTTs of control
/// connection set-up before the data connection's SYN, plus process start-up.
fn setup_lead(rtt_ns: u64) -> u64 {
    2 * rtt_ns + SPAWN_NS
}

/// How long before its start a flow's client is spawned. A page's objects
/// open their data connection on the go line, not on their own, so they are
/// spawned earlier, with room for the whole page's processes (measured: with
/// `setup_lead` alone the first objects opened 34 ms late at 50 ms RTT).
fn spawn_lead(f: &crate::scenario::Flow) -> u64 {
    match f.page {
        Some(_) => 2 * setup_lead(f.rtt_ns) + PAGE_SPAWN_NS,
        None => setup_lead(f.rtt_ns),
    }
}

/// Extra time to spawn the clients of every object of the pages (ns).
const PAGE_SPAWN_NS: u64 = 200_000_000;

/// Run a scenario; the raw result (its time series apart, for [`write_raw`]).
pub fn run(sc: &Resolved, opt: &Options) -> Result<(Value, Series), String> {
    let wall = std::time::Instant::now();
    preflight(Some(sc))?;
    let removed = ns::cleanup(false)?;
    if !removed.is_empty() && !opt.quiet {
        eprintln!("bloatlab-emu: removed what a killed run left behind: {}", removed.join(", "));
    }
    let slot = ns::acquire_slot()?;
    let net = Netns::create(slot)?;
    let _dma = if opt.dma_latency { sys::hold_cpu_dma_latency() } else { None };
    let mut kids = Kids::default();
    start_servers(sc, &net, opt, &mut kids)?;
    // The link starts `lead` before the scenario's t = 0 so that early senders can connect.
    let lead = sc.flows.iter().map(spawn_lead).max().unwrap_or(SPAWN_NS).max(SPAWN_NS) + 10_000_000;
    let link_origin = sys::mono_ns();
    let origin = link_origin + lead;
    let medium = Medium::start(sc, &net, link_origin, lead, opt)?;
    let mut pages = Pages::new(sc);
    let gens = start_clients(sc, &net, opt, &mut kids, origin, None, |k| {
        pages.poll(sc, opt, k, origin, sys::mono_ns());
        true
    })?;
    // Wait for the senders and probes, bounded: the scenario's end plus a grace of 4 RTTs + REPORT_GRACE_NS.
    let max_rtt = sc.flows.iter().map(|f| f.rtt_ns).chain(sc.probes.iter().map(|p| p.rtt_ns)).max().unwrap_or(0);
    let deadline = sc.duration_ns + 4 * max_rtt + REPORT_GRACE_NS;
    let mut stopped_early = false;
    let mut interrupted = false;
    let mut ended: Vec<usize> = Vec::new();
    let mut stopped_at = 0;
    loop {
        let now = sys::mono_ns().saturating_sub(origin);
        if sys::interrupted() != 0 {
            interrupted = true;
            stopped_at = now;
            break;
        }
        pages.poll(sc, opt, &mut kids, origin, sys::mono_ns());
        if now >= sc.duration_ns {
            pages.close(sc, &mut kids);
        }
        let all_done = gens.iter().all(|g| kids.list[g.child_idx].1.try_wait().ok().flatten().is_some());
        if all_done && gens.len() == sc.flows.len() + sc.probes.len() {
            break;
        }
        // A flow ends at its stop time (or the scenario's end): its sender gets SIGTERM then and
        // reports what was acked so far. A sized flow gets until the end plus a grace to complete.
        for f in &sc.flows {
            let end = f.stop_ns.unwrap_or(sc.duration_ns).min(sc.duration_ns);
            let end = if f.size_bytes.is_some() { end + 4 * f.rtt_ns + 2_000_000_000 } else { end };
            if now >= end && !ended.contains(&f.id) {
                if let Some(g) = gens.iter().find(|g| g.kind == "flow" && g.id == f.id) {
                    let c = &mut kids.list[g.child_idx].1;
                    if c.try_wait().ok().flatten().is_none() {
                        sys::kill(c.id(), libc::SIGTERM);
                    }
                    ended.push(f.id);
                }
            }
        }
        if now > deadline {
            stopped_early = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(if pages.active() { 1 } else { 10 }));
    }
    if stopped_early {
        for g in &gens {
            let c = &mut kids.list[g.child_idx].1;
            if c.try_wait().ok().flatten().is_none() {
                sys::kill(c.id(), libc::SIGTERM);
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (dirs, wifi) = medium.stop()?;
    kids.terminate_all(Duration::from_millis(500));
    if interrupted {
        return Err(format!(
            "interrupted by {} at {:.1} s of a {:.1} s run: generators stopped, namespaces {} and {} removed",
            sys::signal_name(sys::interrupted()),
            stopped_at as f64 / 1e9,
            sc.duration_ns as f64 / 1e9,
            net.client,
            net.server
        ));
    }
    let tun_drops = json!({
        "client_tx_dropped": net.tun_stat(false, "tx_dropped"),
        "server_tx_dropped": net.tun_stat(true, "tx_dropped"),
        "client_rx_dropped": net.tun_stat(false, "rx_dropped"),
        "server_rx_dropped": net.tun_stat(true, "rx_dropped"),
    });
    let sysctls = namespace_sysctls(&net.client);
    let namespaces = json!([net.client.clone(), net.server.clone()]);
    drop(net);
    let unstarted: Vec<usize> = sc.flows.iter().filter(|f| f.page.is_some() && !pages.went[f.id]).map(|f| f.id).collect();
    let (mut raw, series) = assemble(sc, origin, &gens, &dirs, opt, &unstarted)?;
    if let Some((w, late)) = wifi {
        raw["wifi"] = w;
        raw["meta"]["lateness"] = late_json(&late);
    }
    let meta = raw["meta"].as_object_mut().unwrap();
    meta.insert("wall_s".into(), json!(wall.elapsed().as_secs_f64()));
    meta.insert("sysctls".into(), sysctls);
    meta.insert("tun_drops".into(), tun_drops);
    meta.insert("namespaces".into(), namespaces);
    if stopped_early {
        meta.insert("warning_deadline".into(), json!("some traffic generators did not finish in time and were stopped"));
    }
    Ok((raw, series))
}

/// The columns the emulator has no figure for, left out of its tables: a
/// control's `state` (TCP_INFO does not name BBR's mode) and the link's
/// per-interval `drops` (the link threads do not sample them).
const NOT_MEASURED: [&str; 2] = ["state", "drops"];

/// Write the raw result: `out` (JSON, without the samples) and beside it one
/// Arrow IPC file per time-series table, `STEM.flows.arrow`,
/// `STEM.links.arrow`, `STEM.probes.arrow` (STEM: `out` without `.json`);
/// the JSON's `"series"` names those files (relative to `out`'s directory).
pub fn write_raw(out: &str, mut raw: Value, series: Series) -> Result<(), String> {
    let path = Path::new(out);
    let stem = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| format!("--out {out}: not a file name"))?;
    let stem = stem.strip_suffix(".json").unwrap_or(stem);
    let mut names = Map::new();
    let tables = series.into_arrow_without(&NOT_MEASURED).map_err(|e| format!("time series: {e}"))?;
    for (table, batch) in bloatlab_schema::series::TABLES.into_iter().zip(tables) {
        let name = format!("{stem}.{table}.arrow");
        bloatlab_schema::series::write_ipc(&path.with_file_name(&name), &batch).map_err(|e| format!("--out {out}: {e}"))?;
        names.insert(table.into(), json!(name));
    }
    raw["series"] = Value::Object(names);
    std::fs::write(path, serde_json::to_string(&raw).unwrap()).map_err(|e| format!("--out {out}: {e}"))
}

/// The sysctls that shape the kernel's TCP, as seen inside the client
/// namespace (per namespace) and the root namespace (global ones).
pub fn namespace_sysctls(ns_name: &str) -> Value {
    let mut m = Map::new();
    for k in ["tcp_congestion_control", "tcp_rmem", "tcp_wmem", "tcp_ecn", "tcp_sack", "tcp_timestamps", "tcp_no_metrics_save", "tcp_mtu_probing"] {
        m.insert(format!("net.ipv4.{k}"), json!(ns::read_sysctl(Some(ns_name), &format!("net/ipv4/{k}"))));
    }
    m.insert("net.core.default_qdisc".into(), json!(ns::read_sysctl(None, "net/core/default_qdisc")));
    for k in ["rmem_max", "wmem_max"] {
        m.insert(format!("net.core.{k}"), json!(ns::read_sysctl(None, &format!("net/core/{k}"))));
    }
    Value::Object(m)
}

fn read_json(p: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(p).ok()?;
    serde_json::from_str(text.trim()).ok().or_else(|| {
        // Tolerate progress lines before the final object: take the last line that parses.
        text.lines().rev().find_map(|l| serde_json::from_str(l.trim()).ok())
    })
}

fn shift(v: &mut Value, key: &str, by: f64) {
    if let Some(x) = v.get(key).and_then(|x| x.as_f64()) {
        v[key] = json!(x + by);
    }
}

/// Build the raw result from the generators' JSON and the link threads: the
/// JSON part and the time series. `unstarted`: page objects that never got a
/// connection (no result, as expected).
fn assemble(sc: &Resolved, origin: u64, gens: &[Gen], dirs: &[(String, DirResult)], opt: &Options, unstarted: &[usize]) -> Result<(Value, Series), String> {
    let mut flows = Vec::new();
    let mut probes = Vec::new();
    let mut errors = Vec::new();
    let mut fs = FlowSeries::default();
    let mut ps = ProbeSeries::default();
    for g in gens {
        if g.kind == "flow" && unstarted.contains(&g.id) {
            continue;
        }
        let doc = read_json(&g.out);
        let Some(doc) = doc else {
            let err = std::fs::read_to_string(&g.err).unwrap_or_default();
            let msg = format!("{} {}: no result from bloatlab-probe: {}", g.kind, g.id, err.trim().lines().last().unwrap_or("(no output)"));
            if !opt.quiet {
                eprintln!("bloatlab-emu: {msg}");
            }
            errors.push(json!(msg));
            continue;
        };
        let t0 = doc
            .pointer("/raw/meta/t0_monotonic_ns")
            .or_else(|| doc.pointer("/meta/t0_monotonic_ns"))
            .and_then(|v| v.as_f64())
            .unwrap_or(origin as f64);
        let off = (t0 - origin as f64) / 1e9;
        let raw = doc.get("raw").cloned().unwrap_or(Value::Null);
        if g.kind == "flow" {
            let mut f = raw.pointer("/flows/0").cloned().unwrap_or_else(|| json!({}));
            f["id"] = json!(g.id);
            shift(&mut f, "start_s", off);
            shift(&mut f, "end_s", off);
            shift(&mut f, "client_done_s", off);
            let spec = sc.flows.iter().find(|x| x.id == g.id);
            // A time-limited flow is ended by us at its scheduled end; its generator notices the
            // signal a little later, so its totals are taken from the TCP_INFO sample at the end.
            let cut = spec.filter(|x| x.size_bytes.is_none()).map(|x| x.stop_ns.unwrap_or(sc.duration_ns).min(sc.duration_ns) as f64 / 1e9);
            let series = raw.pointer("/series/flows").and_then(|v| v.as_object());
            if let (Some(end_s), Some(s)) = (cut, series) {
                let col = |k: &str| s.get(k).and_then(|v| v.as_array()).cloned().unwrap_or_default();
                let (t, dl, rt) = (col("t"), col("delivered_bytes"), col("retransmits"));
                let last = (0..t.len()).filter(|&i| t[i].as_f64().unwrap_or(f64::MAX) + off <= end_s).last();
                if let Some(i) = last {
                    let d_end = dl.get(i).and_then(|v| v.as_u64()).unwrap_or(0);
                    let r_end = rt.get(i).and_then(|v| v.as_u64()).unwrap_or(0);
                    let d_fin = f["bytes_acked"].as_u64().unwrap_or(d_end);
                    let r_fin = f["retrans_segs"].as_u64().unwrap_or(r_end);
                    let s_fin = f["segs_sent"].as_u64().unwrap_or(0);
                    let later = d_fin.saturating_sub(d_end) / 1448 + r_fin.saturating_sub(r_end);
                    f["bytes_acked"] = json!(d_end.min(d_fin));
                    f["bytes_delivered"] = json!(d_end.min(d_fin));
                    f["retrans_segs"] = json!(r_end.min(r_fin));
                    f["segs_sent"] = json!(s_fin.saturating_sub(later));
                }
                if f["end_s"].as_f64().is_some_and(|e| e > end_s) {
                    f["end_s"] = json!(end_s);
                }
            }
            flows.push(f);
            if let Some(s) = raw.pointer("/series/flows").and_then(|v| v.as_object()) {
                let tt = s.get("t").and_then(|t| t.as_array()).cloned().unwrap_or_default();
                // Samples after the flow's end (its buffers draining) are not part of the run.
                let until = cut.unwrap_or(f64::MAX) + 1e-9;
                let n = tt.iter().take_while(|x| x.as_f64().unwrap_or(0.0) + off <= until).count();
                // The probe writes every column for every sample (crates/probe/src/report.rs FlowSeries).
                let v = |c: &str, i: usize| s.get(c).and_then(|a| a.get(i)).ok_or_else(|| format!("flow {}: the generator's series has no {c}[{i}]", g.id));
                let int = |c: &str, i: usize| v(c, i).and_then(|x| x.as_u64().ok_or_else(|| format!("flow {}: {c}[{i}] is not a count: {x}", g.id)));
                let float = |c: &str, i: usize| v(c, i).and_then(|x| x.as_f64().ok_or_else(|| format!("flow {}: {c}[{i}] is not a number: {x}", g.id)));
                for i in 0..n {
                    fs.flow.push(g.id as u32); // ids are checked below the schema's limit where they enter
                    fs.t.push(float("t", i)? + off);
                    fs.cwnd_bytes.push(int("cwnd_bytes", i)?);
                    fs.inflight_bytes.push(int("inflight_bytes", i)?);
                    fs.srtt_ms.push(float("srtt_ms", i)?);
                    fs.pacing_rate_bps.push(int("pacing_rate_bps", i)?);
                    fs.delivery_rate_bps.push(int("delivery_rate_bps", i)?);
                    fs.delivered_bytes.push(int("delivered_bytes", i)?);
                    fs.retransmits.push(int("retransmits", i)?);
                }
            }
        } else {
            let mut p = raw.pointer("/probes/0").cloned().unwrap_or_else(|| json!({}));
            p["id"] = json!(g.id);
            probes.push(p);
            if let Some(s) = raw.pointer("/series/probes").and_then(|v| v.as_object()) {
                let n = s.get("t").and_then(|t| t.as_array()).map_or(0, |a| a.len());
                for i in 0..n {
                    ps.probe.push(g.id as u32);
                    ps.t.push(s["t"][i].as_f64().unwrap_or(0.0) + off);
                    // null (or absent): lost
                    ps.rtt_ms.push(s.get("rtt_ms").and_then(|a| a.get(i)).and_then(|r| r.as_f64()));
                }
            }
        }
    }
    let (links, link_series, late) = link_results(sc, dirs);
    let mut meta = base_meta();
    meta.insert("lateness".into(), late);
    meta.insert("sample_interval_ns".into(), json!(sc.sample_interval_ns));
    if !errors.is_empty() {
        meta.insert("errors".into(), json!(errors));
    }
    let raw = json!({
        "engine": "emu",
        "meta": Value::Object(meta),
        "flows": flows,
        "links": links,
        "probes": probes,
    });
    Ok((raw, Series { flows: fs, links: link_series, probes: ps }))
}

pub fn base_meta() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("emulator".into(), json!(format!("bloatlab-emu {}", env!("CARGO_PKG_VERSION"))));
    m.insert("kernel".into(), json!(sys::kernel_release()));
    m.insert("available_cc".into(), json!(kernel_ccs()));
    m
}

/// Per-direction link statistics, the link time series (no `drops`: see
/// [`NOT_MEASURED`]) and the lateness figures.
pub fn link_results(sc: &Resolved, dirs: &[(String, DirResult)]) -> (Value, LinkSeries, Value) {
    let mut links = Map::new();
    let mut series = LinkSeries::default();
    let mut all = LateHist::default();
    let mut per_dir = Map::new();
    for (d, r) in dirs {
        all.merge(&r.late);
        per_dir.insert(d.clone(), late_json(&r.late));
        let spec = if d == "down" { &sc.links.down } else { &sc.links.up };
        let Some(spec) = spec else { continue };
        let mut drops = Map::new();
        for reason in DropReason::ALL {
            drops.insert(reason.as_str().into(), json!(r.stats.drops[reason as usize]));
        }
        let mut q: Vec<f64> = r.qdelay_ms.iter().map(|x| *x as f64).collect();
        links.insert(
            d.clone(),
            json!({
                "rate_bps": spec.rate_bps,
                "busy_s": r.busy_ns as f64 / 1e9,
                "tx_bytes": r.tx_bytes,
                "tx_pkts": r.tx_pkts,
                "drops": drops,
                "marks": r.stats.marks,
                "qdelay_ms": DistOut::json_of(&mut q),
                "read_pkts": r.read_pkts,
                "read_frames": r.read_frames,
                "gso_super_pkts": r.super_pkts,
                "coalesced_pkts": r.coalesced_pkts,
                "write_errors": r.write_errors,
            }),
        );
        let dir = if d == "down" { "down" } else { "up" };
        for s in &r.samples {
            series.direction.push(dir);
            series.t.push(s.t as f64 / 1e9);
            series.queue_bytes.push(s.queue_bytes);
            series.qdelay_ms.push(s.qdelay_ms);
        }
    }
    let mut late = late_json(&all);
    let p99 = all.percentile_us(99.0);
    let flagged = p99.is_finite() && p99 > LATENESS_FLAG_US;
    late["flagged"] = json!(flagged);
    late["threshold_p99_us"] = json!(LATENESS_FLAG_US);
    late["by_direction"] = Value::Object(per_dir);
    if flagged {
        eprintln!(
            "bloatlab-emu: warning: timing quality: p99 lateness {p99:.0} µs exceeds {LATENESS_FLAG_US:.0} µs; delays in this run are less accurate than configured (machine busy?)"
        );
    }
    (Value::Object(links), series, late)
}

fn late_json(h: &LateHist) -> Value {
    let f = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
    json!({
        "n": h.n,
        "p50_us": f(h.percentile_us(50.0)),
        "p99_us": f(h.percentile_us(99.0)),
        "max_us": if h.n > 0 { json!(h.max_ns as f64 / 1000.0) } else { Value::Null },
        "over_1ms": h.over_1ms,
    })
}

/// `bloatlab-emu shell`: the link, optional background flows from the
/// scenario, an optional server command in the server namespace, and the
/// user's command in the client namespace. Returns the command's exit status.
pub fn shell(sc: &Resolved, opt: &Options, server_cmd: Option<&str>, cmd: &[String], raw_out: Option<&str>) -> Result<i32, String> {
    if !sc.pages.is_empty() {
        return Err("page: the shell runs your command beside the scenario's flows, not its [[page]]s; load pages with `bloatlab run --engine emu`".into());
    }
    preflight(Some(sc))?;
    let removed = ns::cleanup(false)?;
    if !removed.is_empty() {
        eprintln!("bloatlab shell: removed what a killed run left behind: {}", removed.join(", "));
    }
    let slot = ns::acquire_slot()?;
    let net = Netns::create(slot)?;
    let _dma = if opt.dma_latency { sys::hold_cpu_dma_latency() } else { None };
    let mut kids = Kids::default();
    start_servers(sc, &net, opt, &mut kids)?;
    let origin = sys::mono_ns();
    let medium = Medium::start(sc, &net, origin, 0, opt)?;
    eprintln!(
        "bloatlab shell: you are in namespace {} ({}); the server namespace {} is at {}  (ip netns exec {} COMMAND runs a server there)",
        net.client, net.client_ip, net.server, net.server_ip, net.server
    );
    if let Some(s) = server_cmd {
        let argv = vec!["/bin/sh".to_string(), "-c".into(), s.to_string()];
        let c = spawn_in(net.ns_fd(true), &argv, Stdio::null(), Stdio::inherit(), Stdio::null())?;
        kids.list.push(("server command".into(), c));
        std::thread::sleep(Duration::from_millis(300));
    }
    // The background flows (if any) run for the scenario's duration or until the command ends.
    let gens = start_clients(sc, &net, opt, &mut kids, origin, None, |_| true)?;
    let mut command = Command::new(&cmd[0]);
    command
        .args(&cmd[1..])
        .env("BLOATLAB_SERVER", &net.server_ip)
        .env("BLOATLAB_CLIENT", &net.client_ip)
        .env("BLOATLAB_SERVER_NS", &net.server)
        .env("BLOATLAB_CLIENT_NS", &net.client);
    let fd = net.ns_fd(false);
    // SAFETY: as in spawn_in.
    unsafe {
        command.pre_exec(move || sys::child_enter(fd));
    }
    let mut child = command.spawn().map_err(|e| format!("cannot run {}: {e}", cmd[0]))?;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st.code().unwrap_or(128 + 9);
        }
        if sys::interrupted() != 0 {
            sys::kill(child.id(), libc::SIGTERM);
            std::thread::sleep(Duration::from_millis(200));
            let _ = child.kill();
            let _ = child.wait();
            break 130;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    for g in &gens {
        let c = &mut kids.list[g.child_idx].1;
        if c.try_wait().ok().flatten().is_none() {
            sys::kill(c.id(), libc::SIGTERM);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let (dirs, wifi) = medium.stop()?;
    kids.terminate_all(Duration::from_millis(500));
    drop(net);
    if let Some(p) = raw_out {
        let (mut raw, series) = assemble(sc, origin, &gens, &dirs, opt, &[])?;
        if let Some((w, _)) = wifi {
            raw["wifi"] = w;
        }
        write_raw(p, raw, series)?;
    } else {
        link_results(sc, &dirs); // prints the timing warning if the link was late
    }
    Ok(status)
}
