//! `bloatlab-emu`: the emulator's command line (Python's `bloatlab run
//! --engine emu`, `bloatlab shell` and `bloatlab emu cleanup` call it).
//!
//! ```text
//! bloatlab-emu run --scenario RESOLVED.json --out RAW.json [--probe PATH] [--pcap DIR] [--no-rt] [--margin-us N] [--quiet]
//! bloatlab-emu shell --scenario RESOLVED.json [--server CMD] [--out RAW.json] [--pcap DIR] -- COMMAND [ARGS...]
//! bloatlab-emu cleanup [--all]
//! bloatlab-emu check [--scenario RESOLVED.json]
//! ```
//! Errors are one line on stderr, `error: ...`, exit status 2; an
//! interrupted run exits 130 after tearing everything down.

use bloatlab_emu::forward::Timing;
use bloatlab_emu::run::{self, Options};
use bloatlab_emu::scenario::Resolved;
use bloatlab_emu::{ns, sys};
use std::path::PathBuf;

const USAGE: &str = "usage: bloatlab-emu run --scenario FILE --out FILE [--probe PATH] [--pcap DIR] [--no-rt] [--margin-us N] [--quiet]
       bloatlab-emu shell --scenario FILE [--server CMD] [--out FILE] [--pcap DIR] -- COMMAND [ARGS...]
       bloatlab-emu cleanup [--all]
       bloatlab-emu check [--scenario FILE]";

struct Args {
    opts: Vec<(String, Option<String>)>,
    rest: Vec<String>,
}

impl Args {
    fn parse(argv: &[String], flags: &[&str], valued: &[&str]) -> Result<Args, String> {
        let mut opts = Vec::new();
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            if a == "--" {
                return Ok(Args { opts, rest: argv[i + 1..].to_vec() });
            }
            if flags.contains(&a.as_str()) {
                opts.push((a.clone(), None));
            } else if valued.contains(&a.as_str()) {
                let v = argv.get(i + 1).ok_or_else(|| format!("{a}: needs a value"))?;
                opts.push((a.clone(), Some(v.clone())));
                i += 1;
            } else {
                return Err(format!("unknown argument \"{a}\"\n{USAGE}"));
            }
            i += 1;
        }
        Ok(Args { opts, rest: Vec::new() })
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.opts.iter().rev().find(|(n, _)| n == k).and_then(|(_, v)| v.as_deref())
    }
    fn has(&self, k: &str) -> bool {
        self.opts.iter().any(|(n, _)| n == k)
    }
}

fn load(path: Option<&str>) -> Result<Resolved, String> {
    let p = path.ok_or("--scenario: missing (the resolved scenario JSON)")?;
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

fn options(a: &Args) -> Result<Options, String> {
    let margin_us: u64 = match a.get("--margin-us") {
        Some(v) => v.parse().map_err(|_| format!("--margin-us: expected microseconds, got \"{v}\""))?,
        None => 50,
    };
    let rt = !a.has("--no-rt");
    let workdir = ns::workdir(std::process::id());
    std::fs::create_dir_all(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    Ok(Options {
        probe_bin: find_probe(a.get("--probe"))?,
        pcap_dir: a.get("--pcap").map(String::from),
        timing: Timing { margin_ns: margin_us * 1000, fifo_prio: if rt { 10 } else { 0 } },
        dma_latency: rt,
        quiet: a.has("--quiet"),
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

fn real_main() -> Result<i32, String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(verb) = argv.first() else {
        return Err(USAGE.into());
    };
    let rest = &argv[1..];
    match verb.as_str() {
        "run" => {
            let a = Args::parse(rest, &["--no-rt", "--quiet"], &["--scenario", "--out", "--probe", "--pcap", "--margin-us"])?;
            let sc = load(a.get("--scenario"))?;
            let out = a.get("--out").ok_or("--out: missing (where to write the raw result)")?;
            run::preflight(Some(&sc))?;
            sys::install_stop_handlers();
            sys::stop_with_parent();
            let opt = options(&a)?;
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
            let raw = res?;
            std::fs::write(out, serde_json::to_string(&raw).unwrap()).map_err(|e| format!("--out {out}: {e}"))?;
            Ok(0)
        }
        "shell" => {
            let a = Args::parse(rest, &["--no-rt", "--quiet"], &["--scenario", "--out", "--probe", "--pcap", "--margin-us", "--server"])?;
            if a.rest.is_empty() {
                return Err("shell: no command given (bloatlab-emu shell --scenario FILE -- COMMAND)".into());
            }
            let sc = load(a.get("--scenario"))?;
            run::preflight(Some(&sc))?;
            sys::install_stop_handlers();
            sys::stop_with_parent();
            let opt = options(&a)?;
            let res = run::shell(&sc, &opt, a.get("--server"), &a.rest, a.get("--out"));
            let _ = std::fs::remove_dir_all(&opt.workdir);
            after_stop();
            res
        }
        "cleanup" => {
            let a = Args::parse(rest, &["--all"], &[])?;
            run::preflight(None)?;
            let removed = ns::cleanup(a.has("--all"))?;
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
        "check" => {
            let a = Args::parse(rest, &[], &["--scenario"])?;
            let sc = match a.get("--scenario") {
                Some(p) => Some(load(Some(p))?),
                None => None,
            };
            run::preflight(sc.as_ref())?;
            println!("ok: kernel {}, congestion controls: {}", sys::kernel_release(), run::kernel_ccs().join(" "));
            Ok(0)
        }
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(0)
        }
        other => Err(format!("unknown command \"{other}\"\n{USAGE}")),
    }
}

fn main() {
    match real_main() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let code = if e.starts_with("interrupted") { 130 } else { 2 };
            eprintln!("error: {e}");
            std::process::exit(code);
        }
    }
}
