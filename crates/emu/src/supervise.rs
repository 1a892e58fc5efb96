//! The processes of an emulator run: the traffic generators (bloatlab-probe)
//! started inside the namespaces at their times, the web pages' objects told
//! when to go, every generator ended at its flow's end, and all of them
//! killed on every exit path ([`Kids`]). What they write is read by
//! `crate::result`; the links are `crate::run`'s.
//!
//! Who runs where: every connection is opened by the client, as a user's
//! are. A flow's client is `bloatlab-probe tcp client` with `TCP_CONGESTION`
//! set (`-C`) in the client namespace (`-R` for a "down" flow: the server
//! then sends); its server is `tcp server --one-off` in the server namespace,
//! with no public-server limits. A probe's echo server (`udp server`) sits
//! where its reply starts: the server namespace for "down" (the reply crosses
//! the down queue), the client namespace for "up"; its client on the other
//! side. A train's `udp server` sits in the server namespace on
//! TRAIN_PORT + k whichever way the train goes; its client (`udp train
//! --wait-go`, `--up` for an "up" train) in the client namespace does the
//! handshake ahead and asks for (down) or sends (up) the train on its go
//! line ([`Starts`]). Each client's JSON (`--json`, TCP_INFO every sample
//! interval) and standard error go to files in the run's work directory.
//!
//! Constants, with their reasons below: [`SPAWN_NS`], [`REPORT_GRACE_NS`],
//! [`PAGE_SPAWN_NS`], [`TRAIN_TIMEOUT`].

use crate::forward::Timing;
use crate::ns::{self, Netns};
use crate::scenario::{Direction, Resolved, Train, FLOW_CPORT, FLOW_PORT, PROBE_PORT, TRAIN_PORT};
use crate::sys;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Options {
    pub probe_bin: String,
    pub pcap_dir: Option<String>,
    pub timing: Timing,
    /// How many link threads carry the two directions (`crate::forward::Threads`).
    pub threads: crate::forward::Threads,
    /// Hold /dev/cpu_dma_latency at 0 during the run.
    pub dma_latency: bool,
    pub quiet: bool,
    /// What starts each generator in its namespace ([`spawn_in`]): this
    /// executable, `/proc/self/exe` (valid even if the file is replaced meanwhile).
    pub launcher: PathBuf,
    /// Where the traffic generators' JSON and stderr go (a fresh temp dir).
    pub workdir: PathBuf,
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

/// Spawn `argv` inside network namespace `ns_path` (`/run/netns/NAME`), dying
/// with us: `launcher` (this executable, `/proc/self/exe`) is started with
/// `posix_spawn` as `bloatlab-emu enter NS_PATH OUR_PID -- ARGV...`, joins the
/// namespace, sets its death signal and execs `argv` (`sys::enter_and_exec`).
///
/// Why not fork: `std`'s `Command` forks when it has a `pre_exec` step (the
/// `setns` and `prctl` were one), and a fork of the emulator stops its link
/// threads. The fork copies the page tables with the address space locked
/// (a link thread's page fault waits), and write-protects every page it has
/// written until the child execs: each first write is a copy-on-write fault
/// with a TLB shoot-down across the CPUs. Traced 2026-11-26 with `perf`
/// (nsperf shallow CUBIC 10 flows, 1 Gbit/s, 100 ms: the last client's spawn
/// at 1.00 s, nine flows running, 2 CPUs under load 4-5): fork to exec took
/// 4.7 ms, the link thread sat in `do_wp_page` / `flush_tlb_mm_range`, and the
/// stall detector saw 1.2-2.3 ms stalls at 1.001-1.002 s in 2 runs of 3.
/// Interleaved A/B, 8 pairs at load 6-8: 4 runs flagged before, 1 after
/// (docs/emulator.md "Timing quality", *Starting the generators*).
/// `posix_spawn` (glibc: `clone(CLONE_VM | CLONE_VFORK)`) shares the address
/// space until the exec: nothing is copied or write-protected (test:
/// `tests/spawn.rs`). The extra exec of the launcher (~1 ms: 50 starts of
/// `bloatlab-emu --version` took 60 ms more than 50 of `/bin/true`) runs at
/// normal priority, which never preempts a link thread, within [`SPAWN_NS`].
pub fn spawn_in(launcher: &Path, ns_path: &str, argv: &[String], stdout: Stdio, stderr: Stdio, stdin: Stdio) -> Result<Child, String> {
    let prog = argv.first().ok_or("no command to start")?;
    // A program given by path must exist: said here, not later by the launcher on stderr.
    if prog.contains('/') && !Path::new(prog).is_file() {
        return Err(format!("cannot start {prog}: no such file"));
    }
    let mut cmd = Command::new(launcher);
    cmd.arg("enter").arg(ns_path).arg(std::process::id().to_string()).arg("--").args(argv);
    cmd.stdout(stdout).stderr(stderr).stdin(stdin);
    // No pre_exec: std spawns with posix_spawn (a vfork), not fork.
    cmd.spawn().map_err(|e| format!("cannot start {prog} (through {}): {e}", launcher.display()))
}

fn dur_arg(ns: u64) -> String {
    if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1000)
    }
}

/// A sender (flow), probe client or train client with the files it writes to.
pub(crate) struct Gen {
    pub kind: &'static str,
    pub id: usize,
    pub out: PathBuf,
    pub err: PathBuf,
    pub child_idx: usize,
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
pub(crate) fn start_servers(sc: &Resolved, net: &Netns, opt: &Options, kids: &mut Kids) -> Result<(), String> {
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
        let c = spawn_in(&opt.launcher, &net.ns_path(true), &argv, Stdio::null(), Stdio::from(mkfile(&err)?), Stdio::null())?;
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
        let c = spawn_in(&opt.launcher, &net.ns_path(echo_server_side), &argv, Stdio::null(), Stdio::from(mkfile(&err)?), Stdio::null())?;
        kids.list.push((format!("udp server (probe {})", p.id), c));
        let idx = kids.list.len() - 1;
        wait_listening(ns_name, port, true, kids, idx, &err)?;
    }
    for t in &sc.trains {
        // The server end of the path either way: it sends a down train and records an up one's arrivals.
        let (ns_name, ip) = (&net.server, &net.server_ip);
        let port = TRAIN_PORT + t.id as u16;
        let err = opt.workdir.join(format!("train-{}-server.err", t.id));
        // A private server of one train: its bounds (train::MAX_COUNT, sizes, 1 s of pacing) are the scenario
        // language's, its budget (8 MB per 10 s per address) holds the largest train; no session or rate limit.
        let argv = vec![opt.probe_bin.clone(), "udp".into(), "server".into(), "--bind".into(), format!("{ip}:{port}"), "--max-duration".into(), "0".into(),
            "--max-pps".into(), "0".into()];
        let c = spawn_in(&opt.launcher, &net.ns_path(true), &argv, Stdio::null(), Stdio::from(mkfile(&err)?), Stdio::null())?;
        kids.list.push((format!("udp server (train {})", t.id), c));
        let idx = kids.list.len() - 1;
        wait_listening(ns_name, port, true, kids, idx, &err)?;
    }
    Ok(())
}

fn mkfile(p: &Path) -> Result<File, String> {
    File::create(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// When the run should end its senders (ns after origin), and their argv.
fn flow_argv(sc: &Resolved, f: &crate::scenario::Flow, net: &Netns, opt: &Options, run_for: Option<u64>, go_lines: bool) -> Vec<String> {
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
    if go_lines || f.page.is_some() {
        // its control connection now, its data connection when Starts says go
        a.push("--wait-go".into());
    }
    if f.page.is_some() {
        a.push("--done-file".into());
        a.push(Starts::done_path(opt, f.id).display().to_string());
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

/// How long a train's client waits for an answer (the cookie, READY, the
/// train's first packet) before it asks again: as long as a probe's reply may
/// take. A request asked again after the server has sent its train (behind a
/// queue longer than this) would get a second train; one lost to the
/// scenario's random loss delays its train by this much.
pub const TRAIN_TIMEOUT: &str = "5s";

/// Train `t`'s client (`probe_bin`): `udp train` to its server at `server_ip`, handshake first, the train on
/// the go line.
pub(crate) fn train_argv(t: &Train, server_ip: &str, probe_bin: &str) -> Vec<String> {
    let mut a = vec![
        probe_bin.to_string(),
        "udp".into(),
        "train".into(),
        server_ip.to_string(),
        "-p".into(),
        (TRAIN_PORT + t.id as u16).to_string(),
        "--count".into(),
        t.packets.to_string(),
        "--size".into(),
        t.size_bytes.to_string(),
    ];
    if let Some(r) = t.rate_bps {
        // the probe's pace is the scenario's: bit/s of IP packets (the payload and 28 B)
        a.push("--rate".into());
        a.push(format!("{r}bit"));
    }
    if t.direction == Direction::Up {
        a.push("--up".into());
    }
    a.extend(["--timeout".into(), TRAIN_TIMEOUT.into(), "--wait-go".into(), "--json".into()]);
    a
}

/// Start the scenario's senders and probe clients at their start times
/// (relative to `origin`), calling `tick` while waiting. Returns their files.
pub(crate) fn start_clients(
    sc: &Resolved,
    net: &Netns,
    opt: &Options,
    kids: &mut Kids,
    origin: u64,
    run_for: Option<u64>,
    go_lines: bool,
    mut tick: impl FnMut(&mut Kids) -> bool,
) -> Result<Vec<Gen>, String> {
    let mut gens = Vec::new();
    // Spawn times (absolute, monotonic ns): a sender starts early by its connection set-up
    // (bloatlab-probe's control connection: about 2 RTTs) plus process start-up, so that its data
    // connection opens at about the flow's start time.
    // A train's client is spawned early by its handshake and the go's own lead (`train_spawn_lead`).
    let mut todo: Vec<(u64, &'static str, usize)> = sc
        .flows
        .iter()
        .map(|f| ((origin + f.start_ns).saturating_sub(spawn_lead(f)), "flow", f.id))
        .chain(sc.probes.iter().map(|p| (origin.saturating_sub(SPAWN_NS), "probe", p.id)))
        .chain(sc.trains.iter().map(|t| ((origin + t.start_ns).saturating_sub(train_spawn_lead(t)), "train", t.id)))
        .collect();
    todo.sort();
    for (at, kind, id) in todo {
        loop {
            let now = sys::mono_ns();
            if now >= at {
                break;
            }
            if sys::interrupted() != 0 || !tick(kids) {
                return Ok(gens);
            }
            // at most 1 ms: `tick` tells the flows that start meanwhile to go
            std::thread::sleep(Duration::from_nanos((at - now).min(1_000_000)));
        }
        let out = opt.workdir.join(format!("{kind}-{id}.json"));
        let err = opt.workdir.join(format!("{kind}-{id}.err"));
        let (argv, server_side) = match kind {
            "flow" => (flow_argv(sc, &sc.flows[id], net, opt, run_for, go_lines), false),
            "probe" => {
                let p = &sc.probes[id];
                (probe_argv(sc, p, net, opt, run_for), p.direction == Direction::Up)
            }
            _ => (train_argv(&sc.trains[id], &net.server_ip, &opt.probe_bin), false),
        };
        let piped = match kind {
            "flow" => go_lines || sc.flows[id].page.is_some(),
            "probe" => false,
            _ => true,
        };
        let stdin = if piped { Stdio::piped() } else { Stdio::null() };
        let c = spawn_in(&opt.launcher, &net.ns_path(server_side), &argv, Stdio::from(mkfile(&out)?), Stdio::from(mkfile(&err)?), stdin)?;
        kids.list.push((format!("{kind} {id}"), c));
        gens.push(Gen { kind, id, out, err, child_idx: kids.list.len() - 1 });
    }
    Ok(gens)
}

/// When each flow's client opens its data connection: every client is
/// spawned ahead of its start (`spawn_lead`), opens its control connection and
/// waits (`--wait-go`) for its go line on standard input.
///
/// - A flow of its own gets its go line at its start time. Before, a client
///   opened its data connection on its own once its control connection was up,
///   which the spawn lead could only estimate: every kernel flow started about
///   16 ms early (2026-11-23, `tests/test_emu_start.py`), or late under load.
/// - A web page's objects (docs/scenario.md `[[page]]`): the first
///   `connections` objects go at the page's start, each later one as soon as
///   an earlier object's client has read its last byte (`--done-file`, polled
///   every millisecond).
/// - A train (docs/scenario.md `[[train]]`): its client has done its
///   handshake and waits; its go line comes [`train_go_lead`] before the
///   train's start, so that the train's first packet leaves its sender at
///   about its start (down: the go's request still crosses the up path).
pub(crate) struct Starts {
    /// Per page: its objects (flow ids) in order, and how many were told to go.
    objects: Vec<(Vec<usize>, usize)>,
    /// (page, flow id) of the objects told to go and not yet done.
    running: Vec<(usize, usize)>,
    /// The flows outside pages not yet told to go.
    singles: Vec<usize>,
    /// Per flow id: told to go.
    pub went: Vec<bool>,
    /// The trains (ids) not yet told to go.
    trains: Vec<usize>,
}

impl Starts {
    /// `go_lines`: the flows outside pages wait for theirs too (`start_clients`' flag).
    pub(crate) fn new(sc: &Resolved, go_lines: bool) -> Starts {
        let mut objects: Vec<(Vec<usize>, usize)> = sc.pages.iter().map(|_| (Vec::new(), 0)).collect();
        let mut singles = Vec::new();
        for f in &sc.flows {
            match f.page {
                Some(p) => objects[p].0.push(f.id),
                None if go_lines => singles.push(f.id),
                None => {}
            }
        }
        Starts { objects, running: Vec::new(), singles, went: vec![false; sc.flows.len()], trains: sc.trains.iter().map(|t| t.id).collect() }
    }

    fn done_path(opt: &Options, id: usize) -> PathBuf {
        opt.workdir.join(format!("flow-{id}.done"))
    }

    pub(crate) fn active(&self) -> bool {
        self.objects.iter().any(|(o, n)| *n < o.len()) || !self.running.is_empty() || !self.singles.is_empty() || !self.trains.is_empty()
    }

    /// Write flow `id`'s go line; false if its client has no standard input (not
    /// spawned yet, or closed at the end).
    fn tell(&mut self, kids: &mut Kids, id: usize) -> bool {
        // After the scenario's end (`close`) the flows not yet told have no standard input:
        // they stay unstarted (no result, as expected), not "went" without a go line (which
        // read as a generator without a result and failed whole runs of `bufferbloat`).
        if !Starts::go(kids, &format!("flow {id}")) {
            return false;
        }
        self.went[id] = true;
        true
    }

    /// Write the go line of the generator `name` ("flow 3", "train 0"); false if it has no standard input.
    fn go(kids: &mut Kids, name: &str) -> bool {
        let Some((_, child)) = kids.list.iter_mut().find(|(n, _)| n == name) else { return false };
        let Some(stdin) = child.stdin.as_mut() else { return false };
        use std::io::Write;
        let _ = stdin.write_all(b"go\n");
        let _ = stdin.flush();
        true
    }

    /// Tell whatever may start now to go (`mono`: now; `origin`: the scenario's t = 0).
    pub(crate) fn poll(&mut self, sc: &Resolved, opt: &Options, kids: &mut Kids, origin: u64, mono: u64) {
        let due: Vec<usize> =
            self.trains.iter().copied().filter(|&id| mono >= (origin + sc.trains[id].start_ns).saturating_sub(train_go_lead(&sc.trains[id]))).collect();
        for id in due {
            if Starts::go(kids, &format!("train {id}")) {
                self.trains.retain(|&x| x != id);
            }
        }
        let due: Vec<usize> = self.singles.iter().copied().filter(|&id| mono >= origin + sc.flows[id].start_ns).collect();
        for id in due {
            if self.tell(kids, id) {
                self.singles.retain(|&x| x != id);
            }
        }
        self.running.retain(|&(_, id)| !Starts::done_path(opt, id).exists());
        for p in 0..self.objects.len() {
            let Some(&first) = self.objects[p].0.first() else { continue };
            if mono < origin + sc.flows[first].start_ns {
                continue;
            }
            let conns = sc.pages[p].connections as usize;
            while self.objects[p].1 < self.objects[p].0.len() && self.running.iter().filter(|r| r.0 == p).count() < conns {
                let id = self.objects[p].0[self.objects[p].1];
                if !self.tell(kids, id) {
                    break;
                }
                self.running.push((p, id));
                self.objects[p].1 += 1;
            }
        }
    }

    /// At the end: flows never told to go are told so (their standard input
    /// closes and they exit without a result, as expected); so are trains
    /// never told (a client spawned too late for its go: no result, an error).
    pub(crate) fn close(&self, sc: &Resolved, kids: &mut Kids) {
        let names = sc.flows.iter().filter(|f| !self.went[f.id]).map(|f| format!("flow {}", f.id)).chain(self.trains.iter().map(|k| format!("train {k}")));
        for name in names {
            if let Some((_, child)) = kids.list.iter_mut().find(|(n, _)| *n == name) {
                drop(child.stdin.take());
            }
        }
    }
}

/// Time for a process to start and bind (ns): measured ~5-10 ms here.
pub const SPAWN_NS: u64 = 20_000_000;
/// How long a traffic generator may take to report after its SIGTERM at the
/// scenario's end (beyond 4 RTTs), before it is killed without a result. A TCP
/// sender waits up to 2 s for its server's line (bloatlab-probe's tcp/client.rs: the
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
/// machine, and 2 of 12 passed 8 s in two runs of three. Most of that was the
/// link threads spinning at SCHED_FIFO after the measured time (`Link::next_event`
/// kept a sample time in the past), which left the generators 50 ms of every
/// second; fixed the same day: a 15-s run of 12 downloads behind a 2 MB FIFO
/// took 21.4 s, now 16.5 s at load 11-13.
pub const REPORT_GRACE_NS: u64 = 15_000_000_000;

/// Room for a late spawn or a slow control connection (ns): a client that is
/// ready early waits for its go line, one that is late starts late.
pub const GO_ROOM_NS: u64 = 30_000_000;

/// How long before a flow's start its sender is spawned: 2 RTTs of control
/// connection set-up before the data connection's SYN, plus process start-up,
/// plus [`GO_ROOM_NS`].
fn setup_lead(rtt_ns: u64) -> u64 {
    2 * rtt_ns + SPAWN_NS + GO_ROOM_NS
}

/// How long before its start a flow's client is spawned. A page's objects
/// open their data connection on the go line, not on their own, so they are
/// spawned earlier, with room for the whole page's processes (measured: with
/// `setup_lead` alone the first objects opened 34 ms late at 50 ms RTT).
pub(crate) fn spawn_lead(f: &crate::scenario::Flow) -> u64 {
    match f.page {
        Some(_) => 2 * setup_lead(f.rtt_ns) + PAGE_SPAWN_NS,
        None => setup_lead(f.rtt_ns),
    }
}

/// How long before its start a train's client is told to go: down, the half
/// RTT its request takes to the server (which then sends at once); up, none
/// (the client sends the train itself).
pub(crate) fn train_go_lead(t: &Train) -> u64 {
    match t.direction {
        Direction::Down => t.rtt_ns / 2,
        Direction::Up => 0,
    }
}

/// How long before its start a train's client is spawned: its handshake
/// (down: request and cookie, one RTT; up: and the start with the cookie and
/// READY, two) within [`setup_lead`]'s two RTTs, process start-up and room,
/// and its go's own lead.
pub(crate) fn train_spawn_lead(t: &Train) -> u64 {
    setup_lead(t.rtt_ns) + train_go_lead(t)
}

/// Extra time to spawn the clients of every object of the pages (ns).
pub const PAGE_SPAWN_NS: u64 = 200_000_000;

/// How the wait for a run's generators ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ending {
    /// every generator exited
    AllReported,
    /// the deadline passed: the rest got SIGTERM (and 500 ms to report)
    Deadline,
    /// a stop signal, `at_ns` after the scenario's t = 0
    Interrupted { at_ns: u64 },
}

/// Wait for the senders and probes, bounded: the scenario's end plus a grace
/// of 4 RTTs + [`REPORT_GRACE_NS`]. Meanwhile the pages' objects are told to
/// go, and each flow's client gets SIGTERM at its flow's end.
pub(crate) fn await_generators(sc: &Resolved, opt: &Options, kids: &mut Kids, gens: &[Gen], starts: &mut Starts, origin: u64) -> Ending {
    let max_rtt = sc.flows.iter().map(|f| f.rtt_ns).chain(sc.probes.iter().map(|p| p.rtt_ns)).chain(sc.trains.iter().map(|t| t.rtt_ns)).max().unwrap_or(0);
    let deadline = sc.duration_ns + 4 * max_rtt + REPORT_GRACE_NS;
    let mut ended: Vec<usize> = Vec::new();
    let ending = loop {
        let now = sys::mono_ns().saturating_sub(origin);
        if sys::interrupted() != 0 {
            break Ending::Interrupted { at_ns: now };
        }
        starts.poll(sc, opt, kids, origin, sys::mono_ns());
        if now >= sc.duration_ns {
            starts.close(sc, kids);
        }
        let all_done = gens.iter().all(|g| kids.list[g.child_idx].1.try_wait().ok().flatten().is_some());
        if all_done && gens.len() == sc.flows.len() + sc.probes.len() + sc.trains.len() {
            break Ending::AllReported;
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
            break Ending::Deadline;
        }
        std::thread::sleep(Duration::from_millis(if starts.active() { 1 } else { 10 }));
    };
    if ending == Ending::Deadline {
        for g in gens {
            let c = &mut kids.list[g.child_idx].1;
            if c.try_wait().ok().flatten().is_none() {
                sys::kill(c.id(), libc::SIGTERM);
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    ending
}

#[cfg(test)]
mod tests {
    use super::*;

    fn train(direction: Direction, rate_bps: Option<u64>) -> Train {
        Train { id: 3, name: "t".into(), start_ns: 500_000_000, packets: 200, size_bytes: 1000, rate_bps, direction, rtt_ns: 40_000_000, station: None }
    }

    #[test]
    fn a_trains_client_asks_its_own_server_for_the_scenarios_train_and_waits_for_its_go() {
        let a = train_argv(&train(Direction::Down, None), "10.77.0.2", "/p");
        assert_eq!(a.join(" "), "/p udp train 10.77.0.2 -p 35003 --count 200 --size 1000 --timeout 5s --wait-go --json");
        // paced at the scenario's rate (bit/s of IP packets, the probe's unit too); up: the client sends
        let a = train_argv(&train(Direction::Up, Some(1_450_000)), "10.77.0.2", "/p");
        assert_eq!(a.join(" "), "/p udp train 10.77.0.2 -p 35003 --count 200 --size 1000 --rate 1450000bit --up --timeout 5s --wait-go --json");
    }

    #[test]
    fn a_down_trains_go_leads_its_start_by_the_requests_half_rtt_and_its_spawn_by_the_handshake_too() {
        let (down, up) = (train(Direction::Down, None), train(Direction::Up, None));
        assert_eq!((train_go_lead(&down), train_go_lead(&up)), (20_000_000, 0));
        // 2 RTTs of handshake, process start-up (20 ms) and room (30 ms), and the go's own lead
        assert_eq!(train_spawn_lead(&up), 80_000_000 + SPAWN_NS + GO_ROOM_NS);
        assert_eq!(train_spawn_lead(&down), 80_000_000 + SPAWN_NS + GO_ROOM_NS + 20_000_000);
    }
}
