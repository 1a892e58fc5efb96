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
use crate::supervise::{await_generators, spawn_in, spawn_lead, start_clients, start_servers, train_spawn_lead, Ending, Kids, Starts, SPAWN_NS};
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

/// What moves the packets: the two links, or a WiFi medium (docs/wifi.md) with the AP's line if the scenario
/// gives one.
enum Medium {
    Links(Links),
    Wifi(crate::wifi::WifiThread),
}

impl Medium {
    fn start(sc: &Resolved, net: &Netns, origin: u64, lead: u64, opt: &Options, shell: bool) -> Result<Medium, String> {
        use std::os::fd::AsRawFd;
        Ok(match sc.wifi {
            Some(_) => Medium::Wifi(crate::wifi::WifiThread::start(sc, net.tun_server.as_raw_fd(), net.tun_client.as_raw_fd(), origin, lead, opt.timing)?),
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

    /// Stop; the links' results, or what the WiFi medium's thread leaves (with the AP's line, `[link]`, in
    /// series with it: that line's directions as the links').
    fn stop(self) -> Result<(Vec<(String, DirResult)>, Option<crate::wifi::WifiOutcome>), String> {
        Ok(match self {
            Medium::Links(l) => (l.stop()?, None),
            Medium::Wifi(w) => {
                let mut w = w.stop()?;
                (std::mem::take(&mut w.dirs), Some(w))
            }
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
    let lead = sc.flows.iter().map(spawn_lead).chain(sc.trains.iter().map(train_spawn_lead)).max().unwrap_or(SPAWN_NS).max(SPAWN_NS) + 10_000_000;
    let link_origin = sys::mono_ns();
    let origin = link_origin + lead;
    // the trains' stamps are the realtime clock's (the probe's); the run's t = 0 on that clock
    let real_origin = sys::real_at_mono(origin);
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
    let tun_qdisc = [&net.client, &net.server].map(|n| crate::ns::root_qdisc(n, crate::ns::TUN_NAME).unwrap_or_else(|e| e));
    let namespaces = [net.client.clone(), net.server.clone()];
    drop(net);
    let unstarted: Vec<usize> = sc.flows.iter().filter(|f| !starts.went[f.id]).map(|f| f.id).collect();
    let (mut raw, series) = assemble(sc, origin, real_origin, &gens, &dirs, opt.quiet, &unstarted)?;
    if let Some(w) = wifi {
        raw.wifi = Some(w.wifi);
        raw.meta.lateness = Lateness::of(&w.late);
        verdict(sc, &mut raw.meta.lateness, &w.late, &[("wifi", &w.stalls, w.stalls_lost)]);
    }
    let meta = &mut raw.meta;
    meta.wall_s = Some(wall.elapsed().as_secs_f64());
    meta.link_threads = Some(link_threads);
    meta.sysctls = Some(sysctls);
    meta.tun_qdisc = Some(tun_qdisc);
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
    if !sc.trains.is_empty() {
        return Err("train: the shell runs your command beside the scenario's flows, not its [[train]]s; send trains with `bloatlab run --engine emu`".into());
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
        let c = spawn_in(&opt.launcher, &net.ns_path(true), &argv, Stdio::null(), Stdio::inherit(), Stdio::null())?;
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
    // The user's command still forks (once, at the shell's start; crate::supervise::spawn_in says
    // what a fork costs the link threads), so that a command that cannot start is an error here.
    // SAFETY: child_enter only calls setns and prctl (async-signal-safe).
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
    // The command ended (or was interrupted): the scenario's flows stop now and report what they moved so
    // far. Each generator gets its SIGTERM and, as at a run's end, 4 RTTs + REPORT_GRACE_NS to write its
    // result (a fixed 300 ms lost them: "flow 0: no result from bloatlab-probe", issue 34 §5).
    let ended_at = sys::mono_ns().saturating_sub(origin);
    for g in &gens {
        let c = &mut kids.list[g.child_idx].1;
        if c.try_wait().ok().flatten().is_none() {
            sys::kill(c.id(), libc::SIGTERM);
        }
    }
    let max_rtt = sc.flows.iter().map(|f| f.rtt_ns).chain(sc.probes.iter().map(|p| p.rtt_ns)).max().unwrap_or(0);
    let until = sys::mono_ns() + 4 * max_rtt + crate::supervise::REPORT_GRACE_NS;
    while sys::mono_ns() < until && sys::interrupted() == 0 {
        if gens.iter().all(|g| kids.list[g.child_idx].1.try_wait().ok().flatten().is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !gens.is_empty() && ended_at < sc.duration_ns && !opt.quiet {
        eprintln!(
            "bloatlab shell: the command ended at {:.1} s of the scenario's {:.1} s: its flows were stopped then (their figures cover 0-{:.1} s)",
            ended_at as f64 / 1e9,
            sc.duration_ns as f64 / 1e9,
            ended_at as f64 / 1e9
        );
    }
    let (dirs, wifi) = medium.stop()?;
    kids.terminate_all(Duration::from_millis(500));
    drop(net);
    if let Some(p) = raw_out {
        let (mut raw, series) = assemble(sc, origin, sys::real_at_mono(origin), &gens, &dirs, opt.quiet, &[])?;
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

