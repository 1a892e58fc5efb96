//! A whole emulator run: check the machine, set up the namespaces and the
//! medium (two link threads, or a WiFi medium), start the kernel's senders
//! and receivers (`crate::supervise`), wait, tear down, and hand back the
//! typed raw result (`crate::result`) of `docs/engine-interface.md`; and the
//! same for `bloatlab-emu shell`, with the user's command in the client
//! namespace.
//!
//! Follows Mahimahi's shells in what it sets up (a namespace per side, the
//! link in userspace between them) and the emulator's own design
//! (docs/emulator.md).

use crate::forward::{run_together, DirResult, Forwarder};
use crate::ns::{self, Netns};
use bloatlab_schema::pcap::Pcap;
use crate::result::{assemble, link_results, namespace_sysctls, verdict, Lateness, RawResult, TunDrops};
use crate::scenario::{EmuScenario, Resolved};
use crate::supervise::{await_generators, spawn_in, spawn_lead, start_clients, start_servers, Ending, Kids, Starts, SPAWN_NS};
use crate::sys;
use bloatlab_schema::series::Series;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

// the API of the command line (src/main.rs)
pub use crate::result::{kernel_ccs, write_raw};
pub use crate::supervise::Options;

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

/// How many real-time link threads carry the path's two directions (`--threads`).
///
/// One thread (`forward::run_together`) reads the acks a data write causes on
/// its next turn instead of waking a second thread, so an idle or lightly loaded
/// link keeps better time (probe delay error at 1 Gbit/s, idle, quiet: p50
/// 15.5-35.2 µs vs 30.0-60.5 µs with two threads over nine and six rounds on
/// two days, BENCHMARKS.md, docs/emulator.md "Threads"); but it does all
/// the TUN reads and writes, and the receiving kernel's TCP runs inside its
/// writes, so it runs out where two do not. `Auto` takes one thread while the
/// data the scenario can put on the path fits ([`ONE_THREAD_MAX_BPS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Threads {
    Auto,
    One,
    Two,
}

/// Up to this many bit/s of data in one direction one link thread keeps up
/// with the kernel's TCP on this 2-core VM ([`Threads::one`]).
/// Measured 2026-11-24 (docs/emulator.md "Threads"; 10 ms, 1 BDP, 5 s, three
/// A/B pairs, load 1.6-2.2): one download at 1 Gbit/s, one thread CUBIC
/// 938-949 / BBR 948 Mbit/s against two threads' 947-949 / 947-948, lateness
/// p99 55-85 vs 63-95 µs; at 1.5 and 2 Gbit/s one thread fell behind (1 217 vs
/// 1 316, 1 774 vs 1 881 Mbit/s, one pair each).
pub const ONE_THREAD_MAX_BPS: u64 = 1_000_000_000;

impl Threads {
    /// `BLOATLAB_EMU_THREADS` (auto, one, two; unset: auto).
    pub fn from_env() -> Result<Threads, String> {
        use clap::ValueEnum;
        match std::env::var("BLOATLAB_EMU_THREADS") {
            Err(_) => Ok(Threads::Auto),
            Ok(v) => Threads::from_str(&v, true).map_err(|_| format!("BLOATLAB_EMU_THREADS: expected auto, one or two, got {v:?}")),
        }
    }

    /// One thread for both directions? `Auto`: when data flows one way only
    /// (acks and probes the other) at no more than [`ONE_THREAD_MAX_BPS`].
    /// With data both ways the kernels' TCP on both sides runs inside the one
    /// thread's writes, and its lateness grows (CUBIC each way, 250 Mbit/s:
    /// p99 146-177 vs 94-106 µs with two threads; 500 Mbit/s: 295-366 vs
    /// 199-215), so two threads. A `shell`'s command may send either way: two.
    pub fn one(self, sc: &Resolved, shell: bool) -> bool {
        match self {
            Threads::One => true,
            Threads::Two => false,
            Threads::Auto => {
                let loaded = data_bounds_bps(sc, shell);
                loaded.len() <= 1 && loaded.iter().all(|&b| b <= ONE_THREAD_MAX_BPS)
            }
        }
    }
}

/// The most data bit/s each direction that carries a flow's data (every
/// direction in a `shell`) can move: its rate (a trace's mean rate; no
/// bottleneck: unbounded), or less if all its flows are application-limited
/// (the sum of their `rate`s).
pub fn data_bounds_bps(sc: &Resolved, shell: bool) -> Vec<u64> {
    use crate::link::Service;
    use crate::scenario::Direction;
    [(Direction::Down, "down"), (Direction::Up, "up")]
        .into_iter()
        .filter(|(d, _)| shell || sc.flows.iter().any(|f| f.direction == *d))
        .map(|(d, name)| {
            // A link the scenario cannot build is refused by Links::start, with its key.
            let link = match sc.link_config(name).map(|c| c.service) {
                Ok(Service::Rate(r)) => r,
                Ok(Service::Trace(t)) => t.mean_rate_bps(),
                Ok(Service::Unlimited) | Err(_) => u64::MAX,
            };
            let apps = sc.flows.iter().filter(|f| f.direction == d)
                .map(|f| f.app_rate_bps.unwrap_or(u64::MAX))
                .fold(0u64, u64::saturating_add);
            if shell { link } else { link.min(apps) }
        })
        .collect()
}

/// The link threads of a run.
pub struct Links {
    stop: Arc<AtomicBool>,
    /// Each thread with the directions it runs.
    handles: Vec<(Vec<String>, std::thread::JoinHandle<Result<Vec<DirResult>, String>>)>,
}

impl Links {
    /// Start both directions, on a thread each or on one (`one`, forward::run_together);
    /// the link's clock starts at `origin`, the scenario `lead` ns later.
    pub fn start(sc: &Resolved, net: &Netns, origin: u64, lead: u64, opt: &Options, one: bool) -> Result<Links, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut fws = Vec::new();
        use std::os::fd::AsRawFd;
        // The wall-clock time of the link's clock 0 (`origin`): a capture's times are the wall clock
        // (`lead` was added as well before, so they read ~0.1 s in the future).
        let wall0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
            - sys::mono_ns().saturating_sub(origin);
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
                    Some(Pcap::create(&Path::new(d).join(format!("{dir}.pcap")), wall0).map_err(|e| format!("--pcap: {e}"))?)
                }
                None => None,
            };
            fws.push((dir.to_string(), Forwarder { link: cfg, ingress, egress, origin, stop: stop.clone(), pcap, timing: opt.timing }));
        }
        let groups: Vec<Vec<(String, Forwarder)>> = if one {
            vec![fws]
        } else {
            fws.into_iter().map(|f| vec![f]).collect()
        };
        let mut handles = Vec::new();
        for g in groups {
            let (dirs, fw): (Vec<String>, Vec<Forwarder>) = g.into_iter().unzip();
            let h = std::thread::Builder::new()
                .name(if dirs.len() == 1 { format!("link-{}", dirs[0]) } else { "link".into() })
                .spawn(move || run_together(fw))
                .map_err(|e| format!("cannot start the link thread: {e}"))?;
            handles.push((dirs, h));
        }
        Ok(Links { stop, handles })
    }

    pub fn stop(self) -> Result<Vec<(String, DirResult)>, String> {
        self.stop.store(true, Ordering::SeqCst);
        let mut out = Vec::new();
        for (dirs, h) in self.handles {
            let r = h.join().map_err(|_| format!("link thread {} panicked", dirs.join("+")))??;
            out.extend(dirs.into_iter().zip(r));
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
    fn start(sc: &Resolved, net: &Netns, origin: u64, lead: u64, opt: &Options, shell: bool) -> Result<Medium, String> {
        use std::os::fd::AsRawFd;
        Ok(match sc.wifi {
            Some(_) => Medium::Wifi(crate::wifi::WifiThread::start(sc, net.tun_server.as_raw_fd(), net.tun_client.as_raw_fd(), origin, opt.timing)?),
            None => Medium::Links(Links::start(sc, net, origin, lead, opt, opt.threads.one(sc, shell))?),
        })
    }

    /// The real-time threads that move packets (a WiFi medium has one).
    fn threads(&self) -> u8 {
        match self {
            Medium::Links(l) => l.handles.len() as u8,
            Medium::Wifi(_) => 1,
        }
    }

    /// Stop; the links' results, or what the WiFi medium's thread leaves.
    fn stop(self) -> Result<(Vec<(String, DirResult)>, Option<crate::wifi::WifiOutcome>), String> {
        Ok(match self {
            Medium::Links(l) => (l.stop()?, None),
            Medium::Wifi(w) => (Vec::new(), Some(w.stop()?)),
        })
    }
}

/// Run a scenario; the raw result (its time series apart, for [`write_raw`]).
pub fn run(sc: &Resolved, opt: &Options) -> Result<(RawResult, Series), String> {
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
    let medium = Medium::start(sc, &net, link_origin, lead, opt, false)?;
    let link_threads = medium.threads();
    let mut starts = Starts::new(sc, true);
    let gens = start_clients(sc, &net, opt, &mut kids, origin, None, true, |k| {
        starts.poll(sc, opt, k, origin, sys::mono_ns());
        true
    })?;
    let ending = await_generators(sc, opt, &mut kids, &gens, &mut starts, origin);
    let (dirs, wifi) = medium.stop()?;
    kids.terminate_all(Duration::from_millis(500));
    if let Ending::Interrupted { at_ns } = ending {
        return Err(format!(
            "interrupted by {} at {:.1} s of a {:.1} s run: generators stopped, namespaces {} and {} removed",
            sys::signal_name(sys::interrupted()),
            at_ns as f64 / 1e9,
            sc.duration_ns as f64 / 1e9,
            net.client,
            net.server
        ));
    }
    let tun_drops = TunDrops {
        client_tx_dropped: net.tun_stat(false, "tx_dropped"),
        server_tx_dropped: net.tun_stat(true, "tx_dropped"),
        client_rx_dropped: net.tun_stat(false, "rx_dropped"),
        server_rx_dropped: net.tun_stat(true, "rx_dropped"),
    };
    let sysctls = namespace_sysctls(&net.client);
    let namespaces = [net.client.clone(), net.server.clone()];
    drop(net);
    let unstarted: Vec<usize> = sc.flows.iter().filter(|f| !starts.went[f.id]).map(|f| f.id).collect();
    let (mut raw, series) = assemble(sc, origin, &gens, &dirs, opt.quiet, &unstarted)?;
    if let Some(w) = wifi {
        raw.wifi = Some(w.wifi);
        raw.meta.lateness = Lateness::of(&w.late);
        verdict(sc, &mut raw.meta.lateness, &w.late, &[("wifi", &w.stalls, w.stalls_lost)]);
    }
    let meta = &mut raw.meta;
    meta.wall_s = Some(wall.elapsed().as_secs_f64());
    meta.link_threads = Some(link_threads);
    meta.sysctls = Some(sysctls);
    meta.tun_drops = Some(tun_drops);
    meta.namespaces = Some(namespaces);
    if matches!(ending, Ending::Deadline) {
        meta.warning_deadline = Some("some traffic generators did not finish in time and were stopped");
    }
    Ok((raw, series))
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
    let medium = Medium::start(sc, &net, origin, 0, opt, true)?;
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
    // (no go lines: the shell's flows open their data connections as soon as they can)
    let gens = start_clients(sc, &net, opt, &mut kids, origin, None, false, |_| true)?;
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
        let (mut raw, series) = assemble(sc, origin, &gens, &dirs, opt.quiet, &[])?;
        if let Some(w) = wifi {
            raw.meta.lateness = Lateness::of(&w.late);
            verdict(sc, &mut raw.meta.lateness, &w.late, &[("wifi", &w.stalls, w.stalls_lost)]);
            raw.wifi = Some(w.wifi);
        }
        write_raw(p, raw, series)?;
    } else if let Some(w) = wifi {
        verdict(sc, &mut Lateness::of(&w.late), &w.late, &[("wifi", &w.stalls, w.stalls_lost)]); // prints the timing warning
    } else {
        link_results(sc, &dirs); // prints the timing warning if the link was late
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path with a download at `down` bit/s over a `down` link and, if `up`, an upload at `up` bit/s.
    fn path(down: u64, up: Option<u64>, app: Option<u64>) -> Resolved {
        let link = |r: u64| format!(r#"{{"rate_bps":{r},"buffer_bytes":100000,"buffer_pkts":null,"loss":0.0,"qdisc":{{"kind":"fifo","params":{{}}}},"trace_ms":null}}"#);
        let flow = |id: usize, dir: &str| {
            let app = app.map_or("null".to_string(), |a| a.to_string());
            format!(r#"{{"id":{id},"group":{id},"name":"f{id}","cc":"cubic","direction":"{dir}","rtt_ns":10000000,"start_ns":0,"stop_ns":null,"size_bytes":null,"app_rate_bps":{app}}}"#)
        };
        let mut flows = vec![flow(0, "down")];
        if up.is_some() {
            flows.push(flow(1, "up"));
        }
        let doc = format!(
            r#"{{"name":"t","seed":1,"duration_ns":5000000000,"sample_interval_ns":10000000,"links":{{"down":{},"up":{}}},"flows":[{}],"probes":[]}}"#,
            link(down),
            up.map_or("null".to_string(), link),
            flows.join(",")
        );
        crate::scenario::from_json(&doc).unwrap()
    }

    #[test]
    fn one_thread_carries_data_one_way_up_to_a_gigabit_and_two_carry_more_or_both_ways() {
        let a = Threads::Auto;
        // data down at 1 Gbit/s, acks up over a path with no up link: one thread
        assert!(a.one(&path(1_000_000_000, None, None), false));
        assert!(!a.one(&path(1_000_000_001, None, None), false));
        // application-limited flows bound the data below the link's rate
        assert_eq!(data_bounds_bps(&path(10_000_000_000, None, Some(5_000_000)), false), vec![5_000_000]);
        assert!(a.one(&path(10_000_000_000, None, Some(5_000_000)), false));
        // data both ways, even slow: two threads
        assert!(!a.one(&path(10_000_000, Some(10_000_000), None), false));
        // a shell's command may send either way; the up direction has no bottleneck: unbounded
        assert_eq!(data_bounds_bps(&path(10_000_000, None, None), true), vec![10_000_000, u64::MAX]);
        assert!(!a.one(&path(10_000_000, None, None), true));
        // forced either way
        assert!(Threads::One.one(&path(10_000_000_000, Some(1), None), true));
        assert!(!Threads::Two.one(&path(1, None, None), false));
    }
}
