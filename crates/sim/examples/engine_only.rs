//! The simulator alone, without Python: run one resolved scenario (JSON file,
//! docs/engine-interface.md) and print the engine's own figures as one JSON
//! line: `{"wall_s", "events", "packets", "flow_samples", "peak_rss_mb"}`.
//! The result (time series included) stays in memory until the figures are
//! taken, as it does when the native module hands it to Python, so the peak
//! RSS is what the engine itself needs. Used by bench/series_cost.py:
//!
//!     cargo run --release -p bloatlab-sim --example engine_only -- resolved.json

use std::process::ExitCode;

/// The process's peak resident set (VmHWM in /proc/self/status), in MB.
fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: engine_only RESOLVED.json");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let sc = match bloatlab_sim::scenario::from_json(&text) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let world = match bloatlab_sim::world::World::new(&sc) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let raw = world.run();
    let rss = peak_rss_mb().map_or("null".to_string(), |x| format!("{x:.1}"));
    println!(
        r#"{{"wall_s": {}, "events": {}, "packets": {}, "flow_samples": {}, "peak_rss_mb": {rss}}}"#,
        raw.meta.wall_s,
        raw.meta.events,
        raw.meta.packets,
        raw.series.flows.t.len()
    );
    ExitCode::SUCCESS
}
