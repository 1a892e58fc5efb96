//! `bloatlab-emu`: the emulator's command line (Python's `bloatlab run
//! --engine emu`, `bloatlab shell` and `bloatlab emu cleanup` call it).
//!
//! ```text
//! bloatlab-emu run --scenario RESOLVED.json --out RAW.json [--probe PATH] [--pcap DIR] [--no-rt] [--margin-us N] [--spin-pct N] [--batch-us N] [--threads auto|one|two] [--quiet]
//! bloatlab-emu shell --scenario RESOLVED.json [--server CMD] [--out RAW.json] [--pcap DIR] -- COMMAND [ARGS...]
//! bloatlab-emu cleanup [--all]
//! bloatlab-emu check [--scenario RESOLVED.json]
//! bloatlab-emu enter NS_PATH PID -- COMMAND [ARGS...]   (internal: how a run starts its generators)
//! ```
//! Arguments are parsed by clap (as in the probe). Errors are `error: ...` on
//! stderr, exit status 2; an interrupted run exits 130 after tearing
//! everything down.

use bloatlab_emu::forward::Timing;
use bloatlab_emu::run::{self, Options};
use bloatlab_emu::scenario::Resolved;
use bloatlab_emu::{ns, sys};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// The emulator's command line (clap, as the probe's).
#[derive(Parser)]
#[command(name = "bloatlab-emu", version, about = "bloatlab's userspace link emulator (run by `bloatlab run --engine emu`, `bloatlab shell`, `bloatlab emu cleanup`)")]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

/// What a run or a shell share: the scenario and the emulator's settings.
#[derive(Args)]
struct LinkArgs {
    /// The resolved scenario (JSON, docs/engine-interface.md).
    #[arg(long, value_name = "FILE")]
    scenario: String,
    /// bloatlab-probe (default: $BLOATLAB_PROBE, next to this binary, then PATH).
    #[arg(long, value_name = "PATH")]
    probe: Option<String>,
    /// Write a pcap per direction into DIR.
    #[arg(long, value_name = "DIR")]
    pcap: Option<String>,
    /// No SCHED_FIFO and no /dev/cpu_dma_latency.
    #[arg(long)]
    no_rt: bool,
    /// Early-wake margin of the real-time loop (µs).
    #[arg(long, value_name = "N", default_value_t = 50)]
    margin_us: u64,
    /// Share of its time (%) a link thread may spin before the margin's end;
    /// over it, departures due close together are written in one wake-up (100 = spin always).
    #[arg(long, value_name = "N", default_value_t = bloatlab_emu::forward::SPIN_PCT, value_parser = clap::value_parser!(u64).range(0..=100))]
    spin_pct: u64,
    /// Over the spin budget, wake up at most once per this window (µs).
    #[arg(long, value_name = "N", default_value_t = bloatlab_emu::forward::BATCH_NS / 1000)]
    batch_us: u64,
    /// Link threads: `one` runs both directions in one loop, `two` a thread each, `auto` one
    /// while the scenario's data fits one thread (docs/emulator.md "Threads"; also
    /// `BLOATLAB_EMU_THREADS`, the A/B switch for bench/emu).
    #[arg(long, value_enum, value_name = "N")]
    threads: Option<bloatlab_emu::forward::Threads>,
    /// Say less on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(Subcommand)]
enum Verb {
    /// Run a scenario; write the raw result.
    Run {
        #[command(flatten)]
        link: LinkArgs,
        /// Where to write the raw result (JSON).
        #[arg(long, value_name = "FILE")]
        out: String,
    },
    /// Run COMMAND in the client namespace behind the emulated link.
    Shell {
        #[command(flatten)]
        link: LinkArgs,
        /// A server command to run in the server namespace.
        #[arg(long, value_name = "CMD")]
        server: Option<String>,
        /// Also write the raw result of the background flows here.
        #[arg(long, value_name = "FILE")]
        out: Option<String>,
        /// The command and its arguments (after --).
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove what killed runs left behind (namespaces, processes, temporary directories).
    Cleanup {
        /// Also the namespaces of emulators still running (they will fail).
        #[arg(long)]
        all: bool,
    },
    /// Check that this machine can run the emulator (and the scenario's congestion controls).
    Check {
        #[arg(long, value_name = "FILE")]
        scenario: Option<String>,
    },
    /// (internal) Wait for emulator PID to exit, however it exits, then remove what it left
    /// (started by `run` and `shell` in a session of their own: a kill -9 of the process group
    /// does not reach it).
    #[command(hide = true)]
    Reap { pid: u32, cli: u32 },
    /// (internal) Join network namespace NS (a path), die with emulator PID, become COMMAND
    /// (how `run` and `shell` start their generators: crate::supervise::spawn_in).
    #[command(hide = true)]
    Enter {
        ns: String,
        pid: u32,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn load(p: &str) -> Result<Resolved, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("--scenario {p}: {e}"))?;
    bloatlab_emu::scenario::from_json(&text)
}

fn find_probe(explicit: Option<&str>) -> Result<String, String> {
    if let Some(p) = explicit {
        return Ok(p.to_string());
    }
    if let Ok(p) = std::env::var("BLOATLAB_PROBE") {
        return Ok(p);
    }
    if let Ok(me) = std::env::current_exe() {
        let p = me.with_file_name("bloatlab-probe");
        if p.is_file() {
            return Ok(p.to_string_lossy().into_owned());
        }
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = PathBuf::from(dir).join("bloatlab-probe");
        if p.is_file() {
            return Ok(p.to_string_lossy().into_owned());
        }
    }
    Err("bloatlab-probe not found (build it: `make setup`, or pass --probe PATH)".into())
}

fn options(a: &LinkArgs) -> Result<Options, String> {
    let rt = !a.no_rt;
    let workdir = ns::workdir(std::process::id());
    std::fs::create_dir_all(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    Ok(Options {
        probe_bin: find_probe(a.probe.as_deref())?,
        pcap_dir: a.pcap.clone(),
        timing: Timing { margin_ns: a.margin_us * 1000, fifo_prio: if rt { 10 } else { 0 }, spin_pct: a.spin_pct,
            batch_ns: a.batch_us.saturating_mul(1000) },
        threads: match a.threads {
            Some(t) => t,
            None => bloatlab_emu::forward::Threads::from_env()?,
        },
        dma_latency: rt,
        quiet: a.quiet,
        launcher: PathBuf::from("/proc/self/exe"),
        workdir,
    })
}

/// After a stop signal (Ctrl-C, SIGTERM, or the CLI that started us died):
/// the CLI may have been killed before it could remove its own temporary
/// directory; remove those of dead processes now.
fn after_stop() {
    if sys::interrupted() != 0 {
        ns::remove_stale_temp_dirs();
    }
}

fn real_main(cli: Cli) -> Result<i32, String> {
    match cli.verb {
        Verb::Run { link, out } => {
            let sc = load(&link.scenario)?;
            run::preflight(Some(&sc))?;
            sys::install_stop_handlers();
            sys::stop_with_parent();
            ns::spawn_reaper();
            let opt = options(&link)?;
            let res = run::run(&sc, &opt);
            if std::env::var_os("BLOATLAB_EMU_KEEP").is_none() {
                let _ = std::fs::remove_dir_all(&opt.workdir);
            } else {
                // Renamed out of the stale-directory pattern (ns::remove_stale_temp_dirs), so that it stays.
                let kept = opt.workdir.with_file_name(format!("bloatlab-emu-{}-kept", std::process::id()));
                let shown = if std::fs::rename(&opt.workdir, &kept).is_ok() { kept } else { opt.workdir.clone() };
                eprintln!("bloatlab-emu: generators' output kept in {}", shown.display());
            }
            after_stop();
            let (raw, series) = res?;
            run::write_raw(&out, raw, series)?;
            Ok(0)
        }
        Verb::Shell { link, server, out, command } => {
            let sc = load(&link.scenario)?;
            run::preflight(Some(&sc))?;
            sys::install_stop_handlers();
            sys::stop_with_parent();
            ns::spawn_reaper();
            let opt = options(&link)?;
            let res = run::shell(&sc, &opt, server.as_deref(), &command, out.as_deref());
            let _ = std::fs::remove_dir_all(&opt.workdir);
            after_stop();
            res
        }
        Verb::Cleanup { all } => {
            run::preflight(None)?;
            let removed = ns::cleanup(all)?;
            let running = ns::running();
            if removed.is_empty() {
                println!("nothing to clean up");
            } else {
                println!("removed: {}", removed.join(" "));
            }
            if !running.is_empty() {
                println!("left alone (a running emulator holds them; --all removes them too): {}", running.join(" "));
            }
            Ok(0)
        }
        Verb::Enter { ns, pid, command } => {
            // Only on failure: 127 as a shell's "command not found", and the reason on stderr.
            eprintln!("bloatlab-emu enter: {}", sys::enter_and_exec(&ns, pid, &command));
            Ok(127)
        }
        Verb::Reap { pid, cli } => {
            ns::reap(pid, cli);
            Ok(0)
        }
        Verb::Check { scenario } => {
            let sc = match scenario {
                Some(p) => Some(load(&p)?),
                None => None,
            };
            run::preflight(sc.as_ref())?;
            println!("ok: kernel {}, congestion controls: {}", sys::kernel_release(), run::kernel_ccs().join(" "));
            Ok(0)
        }
    }
}

fn main() {
    // clap prints usage errors itself as `error: ...` with exit status 2 (and --help/--version with 0).
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let code = if e.starts_with("interrupted") { 130 } else { 2 };
            eprintln!("error: {e}");
            std::process::exit(code);
        }
    }
}
