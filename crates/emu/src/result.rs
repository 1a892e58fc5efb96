//! The emulator's raw result (docs/engine-interface.md "The raw result"), typed:
//! [`RawResult`] is what `raw.json` holds, built from the traffic generators'
//! JSON (bloatlab-probe's `--json` output, one file per flow and probe) and
//! the link threads' figures, and serialized once by [`write_raw`], with the
//! time series beside it as Arrow IPC files (`bloatlab_schema::series`).
//!
//! Follows the shape every engine writes (the simulator's
//! `crates/sim/src/output.rs`, the probe's `report.rs`): `engine`, `meta`,
//! `flows`, `links`, `probes`, `trains` (when the scenario has any), optional
//! `wifi`, and `series` naming the tables. The distribution summaries are the
//! schema crate's [`DistOut`]; the flow and probe records are the generators'
//! own (bloatlab-probe's `raw.flows[0]`/`raw.probes[0]`), passed through with
//! their id set and their times moved to the run's origin; a train's is the
//! simulator's [`TrainOut`], built from its client's packets ([`train_out`]).
//!
//! Constants: [`LATENESS_FLAG_US`] = 1 ms of p99 lateness flags a run (the
//! link's delays are then off by more than a typical 1-ms scheduling slack).
//! So does a stall of a link thread as long as the scenario's shortest time
//! scale (crate::stall: a buffer's drain time, a full packet's round trip).

use crate::forward::{DirResult, LateHist};
use crate::ns;
use crate::scenario::{Direction, Flow, Resolved, Train};
use crate::supervise::Gen;
use crate::sys;
use bloatlab_core::qdisc::DropReason;
use bloatlab_schema::result::{AutorateOut, DistOut, LinkOut, TrainOut};
use bloatlab_schema::series::{FlowSeries, LinkSeries, ProbeSeries, Series};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Lateness p99 above which a run is flagged (µs).
pub const LATENESS_FLAG_US: f64 = 1000.0;

/// Kernel congestion controls available (`tcp_available_congestion_control`).
pub fn kernel_ccs() -> Vec<String> {
    ns::read_sysctl(None, "net/ipv4/tcp_available_congestion_control").split_whitespace().map(String::from).collect()
}

/// What `raw.json` holds.
#[derive(Debug, Serialize)]
pub struct RawResult {
    /// always "emu"
    pub engine: &'static str,
    pub meta: Meta,
    /// the senders' flow records (bloatlab-probe's `raw.flows[0]`), id set and re-timed
    pub flows: Vec<Value>,
    /// per direction ("down", "up") that the scenario has
    pub links: BTreeMap<String, EmuLinkOut>,
    /// the probe clients' records (bloatlab-probe's `raw.probes[0]`), id set
    pub probes: Vec<Value>,
    /// the trains' records, those whose client reported ([`train_out`])
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trains: Vec<TrainOut>,
    /// the WiFi medium's counters (docs/wifi.md), when the scenario has one
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wifi: Option<Value>,
    /// table name -> its Arrow IPC file beside raw.json (set by [`write_raw`])
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<BTreeMap<&'static str, String>>,
}

/// The run's description: the emulator, the kernel and how well it kept time.
#[derive(Debug, Serialize)]
pub struct Meta {
    /// "bloatlab-emu VERSION"
    pub emulator: String,
    pub kernel: String,
    pub available_cc: Vec<String>,
    pub lateness: Lateness,
    pub sample_interval_ns: u64,
    /// generators that gave no result, one sentence each
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// the run's wall-clock time (s); the rest below: a `run`, not a `shell`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// the real-time threads that moved the packets (`--threads`: 1 or 2; a WiFi medium 1)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_threads: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sysctls: Option<BTreeMap<String, String>>,
    /// the TUN devices' root qdisc at the run's end, client and server namespace (crate::ns::TUN_QDISC)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tun_qdisc: Option<[String; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tun_drops: Option<TunDrops>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<[String; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning_deadline: Option<&'static str>,
}

/// How late the link threads sent packets (µs beyond their due time);
/// `None` (JSON null) without packets.
#[derive(Debug, Serialize)]
pub struct Lateness {
    pub n: u64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub over_1ms: u64,
    /// the run's lateness only (not per direction): p99 above [`LATENESS_FLAG_US`],
    /// or a stall that matters (crate::stall::Scales::threshold)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flagged: Option<bool>,
    /// why it is flagged: "p99", "stall" (empty: not flagged)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<&'static str>>,
    /// the same in a sentence, when flagged
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold_p99_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_direction: Option<BTreeMap<String, Lateness>>,
    /// the link threads' stalls (crate::stall), the run's only
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalls: Option<crate::stall::Stalls>,
}

impl Lateness {
    pub fn of(h: &LateHist) -> Lateness {
        let f = |v: f64| v.is_finite().then_some(v);
        Lateness {
            n: h.n,
            p50_us: f(h.percentile_us(50.0)),
            p99_us: f(h.percentile_us(99.0)),
            max_us: (h.n > 0).then(|| h.max_ns as f64 / 1000.0),
            over_1ms: h.over_1ms,
            flagged: None,
            reasons: None,
            reason: None,
            threshold_p99_us: None,
            by_direction: None,
            stalls: None,
        }
    }
}

/// Packets the TUN devices dropped (their `tx_dropped`/`rx_dropped` counters).
#[derive(Debug, Serialize)]
pub struct TunDrops {
    pub client_tx_dropped: u64,
    pub server_tx_dropped: u64,
    pub client_rx_dropped: u64,
    pub server_rx_dropped: u64,
}

/// One direction's bottleneck statistics: those of every engine, and the
/// emulator's own (the TUN reads, GSO, coalesced writes).
#[derive(Debug, Serialize)]
pub struct EmuLinkOut {
    #[serde(flatten)]
    pub link: LinkOut,
    pub read_pkts: u64,
    pub read_frames: u64,
    pub gso_super_pkts: u64,
    pub coalesced_pkts: u64,
    pub write_errors: u64,
}

/// The columns the emulator has no figure for, left out of its tables: a
/// control's `state` (TCP_INFO does not name BBR's mode) and the link's
/// per-interval `drops` (the link threads do not sample them).
const NOT_MEASURED: [&str; 2] = ["state", "drops"];

/// Write the raw result: `out` (JSON, without the samples) and beside it one
/// Arrow IPC file per time-series table, `STEM.flows.arrow`,
/// `STEM.links.arrow`, `STEM.probes.arrow` (STEM: `out` without `.json`);
/// the JSON's `"series"` names those files (relative to `out`'s directory).
pub fn write_raw(out: &str, mut raw: RawResult, series: Series) -> Result<(), String> {
    let path = Path::new(out);
    let stem = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| format!("--out {out}: not a file name"))?;
    let stem = stem.strip_suffix(".json").unwrap_or(stem);
    let mut names = BTreeMap::new();
    let tables = series.into_arrow_without(&NOT_MEASURED).map_err(|e| format!("time series: {e}"))?;
    for (table, batch) in bloatlab_schema::series::TABLES.into_iter().zip(tables) {
        let name = format!("{stem}.{table}.arrow");
        bloatlab_schema::series::write_ipc(&path.with_file_name(&name), &batch).map_err(|e| format!("--out {out}: {e}"))?;
        names.insert(table, name);
    }
    raw.series = Some(names);
    let text = serde_json::to_string(&raw).map_err(|e| format!("--out {out}: {e}"))?;
    std::fs::write(path, text).map_err(|e| format!("--out {out}: {e}"))
}

/// The sysctls that shape the kernel's TCP, as seen inside the client
/// namespace (per namespace) and the root namespace (global ones).
pub fn namespace_sysctls(ns_name: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for k in ["tcp_congestion_control", "tcp_rmem", "tcp_wmem", "tcp_ecn", "tcp_sack", "tcp_timestamps", "tcp_no_metrics_save", "tcp_mtu_probing"] {
        m.insert(format!("net.ipv4.{k}"), ns::read_sysctl(Some(ns_name), &format!("net/ipv4/{k}")));
    }
    m.insert("net.core.default_qdisc".into(), ns::read_sysctl(None, "net/core/default_qdisc"));
    for k in ["rmem_max", "wmem_max"] {
        m.insert(format!("net.core.{k}"), ns::read_sysctl(None, &format!("net/core/{k}")));
    }
    m
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

/// Train `t`'s record from its client's JSON (`bloatlab-probe udp train
/// --json`: `{"train": {...}}`): each packet's arrival on the receiver's
/// realtime clock (`rx_first_real_ns`, then `rx_ms` after it) and its one-way
/// delay (`delay_ms` beyond `owd_least_ms`), its send time that arrival less
/// that delay; times in ns from the run's t = 0, which the realtime clock read
/// as `real_origin` (both namespaces share the host's clock, so the sender's
/// and the receiver's stamps compare). The stamps are to the µs (the JSON's
/// `rx_ms` and `delay_ms`). `sent`: what the sender sent (down: the server's
/// DONE; the train's packets where that was lost).
pub fn train_out(t: &Train, doc: &Value, real_origin: u64) -> Result<TrainOut, String> {
    let tr = doc.get("train").ok_or_else(|| format!("train {}: the client's JSON has no \"train\" object", t.id))?;
    let key = |k: &str| tr.get(k).ok_or_else(|| format!("train {}: the client's JSON has no {k}", t.id));
    let n = t.packets as usize;
    let per_packet = |k: &str| -> Result<Vec<Option<f64>>, String> {
        let a = key(k)?.as_array().filter(|a| a.len() == n).ok_or_else(|| format!("train {}: {k} is not a list of its {n} packets", t.id))?;
        Ok(a.iter().map(|v| v.as_f64()).collect())
    };
    let rx = per_packet("rx_ms")?;
    let mut sent_at = vec![0u64; n];
    let mut arrived_at: Vec<Option<u64>> = vec![None; n];
    if rx.iter().any(|x| x.is_some()) {
        let first = key("rx_first_real_ns")?.as_u64().ok_or_else(|| format!("train {}: rx_first_real_ns is not a clock reading", t.id))?;
        let least = key("owd_least_ms")?.as_f64().ok_or_else(|| format!("train {}: owd_least_ms is not a number", t.id))?;
        let delay = per_packet("delay_ms")?;
        let ns = |ms: f64| (ms * 1e6).round() as i128;
        for (i, r) in rx.iter().enumerate() {
            let Some(r) = r else { continue };
            let d = delay[i].ok_or_else(|| format!("train {}: packet {i} arrived without a delay_ms", t.id))?;
            // (an arrival before t = 0 is none of a train's: it starts at or after it, its sender a moment later)
            let at = (first as i128 - real_origin as i128 + ns(*r)).max(0);
            arrived_at[i] = Some(at as u64);
            sent_at[i] = (at - ns(d + least)).max(0) as u64;
        }
    }
    let mut out = TrainOut::of(t.id, t.wire_bytes(), &sent_at, &arrived_at);
    out.sent = tr.get("server_sent").and_then(|v| v.as_u64()).unwrap_or(t.packets as u64);
    Ok(out)
}

/// Build the raw result from the generators' JSON and the link threads: the
/// result and its time series. `origin`: the scenario's t = 0 (CLOCK_MONOTONIC
/// ns), which CLOCK_REALTIME read as `real_origin` (the trains' stamps).
/// `unstarted`: page objects that never got a connection (no result, as
/// expected).
pub(crate) fn assemble(
    sc: &Resolved,
    origin: u64,
    real_origin: u64,
    gens: &[Gen],
    dirs: &[(String, DirResult)],
    quiet: bool,
    unstarted: &[usize],
) -> Result<(RawResult, Series), String> {
    let mut flows = Vec::new();
    let mut probes = Vec::new();
    let mut trains = Vec::new();
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
            if !quiet {
                eprintln!("bloatlab-emu: {msg}");
            }
            errors.push(msg);
            continue;
        };
        if g.kind == "train" {
            match train_out(&sc.trains[g.id], &doc, real_origin) {
                Ok(t) => trains.push(t),
                Err(e) => {
                    if !quiet {
                        eprintln!("bloatlab-emu: {e}");
                    }
                    errors.push(e);
                }
            }
            continue;
        }
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
                // The probe writes every column but `state` for every sample (crates/probe/src/report.rs series_json).
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
                    fs.sack_delivered_bytes.push(int("sack_delivered_bytes", i)?);
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
    let (links, link_series, lateness) = link_results(sc, dirs);
    let meta = Meta {
        emulator: format!("bloatlab-emu {}", env!("CARGO_PKG_VERSION")),
        kernel: sys::kernel_release(),
        available_cc: kernel_ccs(),
        lateness,
        sample_interval_ns: sc.sample_interval_ns,
        errors,
        wall_s: None,
        link_threads: None,
        sysctls: None,
        tun_qdisc: None,
        tun_drops: None,
        namespaces: None,
        warning_deadline: None,
    };
    let raw = RawResult { engine: "emu", meta, flows, links, probes, trains, wifi: None, series: None };
    Ok((raw, Series { flows: fs, links: link_series, probes: ps }))
}

/// Per-direction link statistics, the link time series (no `drops`: see
/// [`NOT_MEASURED`]) and the lateness figures (flagged, and per direction).
pub fn link_results(sc: &Resolved, dirs: &[(String, DirResult)]) -> (BTreeMap<String, EmuLinkOut>, LinkSeries, Lateness) {
    let mut links = BTreeMap::new();
    let mut series = LinkSeries::default();
    let mut all = LateHist::default();
    let mut per_dir = BTreeMap::new();
    for (d, r) in dirs {
        all.merge(&r.late);
        per_dir.insert(d.clone(), Lateness::of(&r.late));
        let spec = if d == "down" { &sc.links.down } else { &sc.links.up };
        let Some(spec) = spec else { continue };
        let drops = DropReason::ALL.iter().map(|&reason| (reason.as_str(), r.stats.drops[reason as usize])).collect();
        let mut q: Vec<f64> = r.qdelay_ms.iter().map(|x| *x as f64).collect();
        links.insert(
            d.clone(),
            EmuLinkOut {
                link: LinkOut {
                    rate_bps: spec.rate_bps,
                    busy_s: r.busy_ns as f64 / 1e9,
                    tx_bytes: r.tx_bytes,
                    tx_pkts: r.tx_pkts,
                    drops,
                    marks: r.stats.marks,
                    qdelay_ms: DistOut::of(&mut q),
                    autorate: r.shaper_log.as_ref().and_then(|log| AutorateOut::of(log, sc.duration_ns)),
                },
                read_pkts: r.read_pkts,
                read_frames: r.read_frames,
                gso_super_pkts: r.super_pkts,
                coalesced_pkts: r.coalesced_pkts,
                write_errors: r.write_errors,
            },
        );
        let dir = if d == "down" { "down" } else { "up" };
        for s in &r.samples {
            series.direction.push(dir);
            series.t.push(s.t as f64 / 1e9);
            series.queue_bytes.push(s.queue_bytes);
            series.qdelay_ms.push(s.qdelay_ms);
        }
    }
    let mut late = Lateness::of(&all);
    late.by_direction = Some(per_dir);
    let eps: Vec<(&str, &[crate::stall::Episode], u64)> = dirs.iter().map(|(d, r)| (d.as_str(), r.stalls.as_slice(), r.stalls_lost)).collect();
    verdict(sc, &mut late, &all, &eps);
    (links, series, late)
}

/// The run's verdict ([`judge`]) from the write lateness `hist` and the
/// stalls of its threads (name, episodes, episodes not kept): the links'
/// directions, or the WiFi medium's one thread. A flagged run says why on
/// stderr.
pub fn verdict(sc: &Resolved, late: &mut Lateness, hist: &LateHist, threads: &[(&str, &[crate::stall::Episode], u64)]) {
    let stalls = crate::stall::summarize(threads, &scales(sc));
    judge(late, hist.percentile_us(99.0), stalls);
    if let Some(why) = &late.reason {
        eprintln!("bloatlab-emu: warning: timing quality: {why}; this run's figures are less accurate than configured");
    }
}

/// The time scales a stall of this scenario is judged by: each direction's
/// buffer (bytes, or packets of [`crate::stall::PKT_BYTES`]) and policer
/// bucket at its rate, and the flows' smallest round trip of a full-size
/// packet: its base RTT and that packet's serialization at the rate of the
/// link its data crosses. The ACK clock ticks once a packet: at 1.06 Mbit/s
/// a 1500-B packet takes 11.3 ms, so a 5-ms pause of the VM holds back
/// less than a packet and stops no round trip of a 3.7-ms path (the
/// advisor's campaign, seed 20261125 path 2: CAKE at 1.06 Mbit/s behind a
/// WiFi hop, its kernel runs flagged three times in three for stalls of
/// 4-12 ms against the base RTT alone).
pub fn scales(sc: &Resolved) -> crate::stall::Scales {
    use crate::stall::{Scales, PKT_BYTES};
    let mut drains = Vec::new();
    for (d, spec) in [("down", &sc.links.down), ("up", &sc.links.up)] {
        let Some(l) = spec else { continue };
        let buffer = l.buffer_bytes.or(l.buffer_pkts.map(|p| p * PKT_BYTES));
        if let Some(t) = buffer.and_then(|b| Scales::drain_ns(b, l.rate_bps)) {
            drains.push((format!("the {d} buffer's drain time"), t));
        }
        if let Some(t) = l.policer.as_ref().and_then(|p| Scales::drain_ns(p.burst_bytes, p.rate_bps)) {
            drains.push((format!("the {d} policer's bucket at its rate"), t));
        }
    }
    let rate = |d: Direction| match d {
        Direction::Down => sc.links.down.as_ref(),
        Direction::Up => sc.links.up.as_ref(),
    }
    .map_or(0, |l| l.rate_bps);
    let round = |f: &Flow| f.rtt_ns + Scales::drain_ns(PKT_BYTES, rate(f.direction)).unwrap_or(0);
    Scales { drains, min_rtt_ns: sc.flows.iter().map(round).min() }
}

/// The run's verdict: `flagged`, its `reasons` and `reason`, from the p99
/// lateness (µs; NaN without packets) and the stalls.
pub fn judge(late: &mut Lateness, p99_us: f64, stalls: crate::stall::Stalls) {
    let mut reasons = Vec::new();
    let mut why = Vec::new();
    if p99_us.is_finite() && p99_us > LATENESS_FLAG_US {
        reasons.push("p99");
        why.push(format!("p99 lateness {p99_us:.0} µs exceeds {LATENESS_FLAG_US:.0} µs"));
    }
    if stalls.over_threshold > 0 {
        reasons.push("stall");
        let (n, t) = (stalls.over_threshold, stalls.threshold_ms);
        let from = stalls.threshold_from.as_deref().map(|f| format!(", {f}")).unwrap_or_default();
        let worst = stalls.longest.first().map(|e| {
            let who = if e.both { "both directions: the machine paused".to_string() } else { format!("the {} thread", e.direction) };
            format!("; the longest {:.1} ms at {:.2} s ({who})", e.ms, e.start_s)
        });
        why.push(format!("{n} stall{} of ≥ {t:.1} ms ({}{from}){}", if n == 1 { "" } else { "s" }, "a stall this long releases a burst the queue would not have seen", worst.unwrap_or_default()));
    }
    late.flagged = Some(!reasons.is_empty());
    late.threshold_p99_us = Some(LATENESS_FLAG_US);
    late.reason = (!why.is_empty()).then(|| why.join("; "));
    late.reasons = Some(reasons);
    late.stalls = Some(stalls);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_judged_by_the_round_trip_of_a_full_packet_at_its_links_rate() {
        // 1.06 Mbit/s down over 3.74 ms: a 1500-B packet's 11.32 ms on the wire added; the up flow crosses no link
        let doc = r#"{"name":"t","seed":3,"duration_ns":5000000000,"sample_interval_ns":10000000,
          "links":{"down":{"rate_bps":1060000,"buffer_bytes":100000,"buffer_pkts":null,"loss":0.0,
            "qdisc":{"kind":"fifo","params":{}},"trace_ms":null},"up":null},
          "flows":[{"id":0,"group":0,"name":"a","cc":"cubic","direction":"down","rtt_ns":3740000,
            "start_ns":0,"stop_ns":null,"size_bytes":null}],"probes":[]}"#;
        let sc = crate::scenario::from_json(doc).unwrap();
        let s = scales(&sc);
        assert_eq!(s.min_rtt_ns, Some(3_740_000 + 1500 * 8 * 1_000_000_000 / 1_060_000));
        assert_eq!(s.threshold(), (15_060_754, Some("a full packet's round trip".into())));
        let up = doc.replace(r#""direction":"down""#, r#""direction":"up""#);
        assert_eq!(scales(&crate::scenario::from_json(&up).unwrap()).min_rtt_ns, Some(3_740_000));
    }

    #[test]
    fn lateness_without_packets_is_null_but_its_counts_and_carries_no_flag_until_the_run_sets_one() {
        let v = serde_json::to_value(Lateness::of(&LateHist::default())).unwrap();
        assert_eq!(v, json!({"n": 0, "p50_us": null, "p99_us": null, "max_us": null, "over_1ms": 0}));
    }

    #[test]
    fn a_shells_raw_result_has_the_runs_keys_but_those_only_a_run_measures() {
        let sc = bloatlab_schema::scenario::Scenario::from_json(
            r#"{"name": "x", "seed": 1, "duration_ns": 1000000000, "sample_interval_ns": 10000000,
                "links": {"down": {"rate_bps": 10000000, "buffer_bytes": 100000, "buffer_pkts": null, "loss": 0,
                                   "qdisc": {"kind": "fifo", "params": {}}, "trace_ms": null}, "up": null},
                "flows": [], "probes": []}"#,
        )
        .unwrap();
        let (raw, _) = assemble(&sc, 0, 0, &[], &[], true, &[]).unwrap();
        let v = serde_json::to_value(&raw).unwrap();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&v), ["engine", "flows", "links", "meta", "probes"]);
        assert_eq!(keys(&v["meta"]), ["available_cc", "emulator", "kernel", "lateness", "sample_interval_ns"]);
        assert_eq!(keys(&v["meta"]["lateness"]), ["by_direction", "flagged", "max_us", "n", "over_1ms", "p50_us", "p99_us", "reasons", "stalls", "threshold_p99_us"]);
        // no flows: the down buffer's drain time alone, 100 000 B at 10 Mbit/s
        assert_eq!((v["meta"]["lateness"]["stalls"]["threshold_ms"].as_f64(), v["meta"]["lateness"]["stalls"]["count"].as_u64()), (Some(80.0), Some(0)));
        assert_eq!(v["meta"]["lateness"]["reasons"], json!([]));
        assert_eq!(v["engine"], "emu");
    }

    fn train3(packets: u32) -> Train {
        Train { id: 3, name: "t".into(), start_ns: 500_000_000, packets, size_bytes: 1472, rate_bps: None, direction: Direction::Down, rtt_ns: 40_000_000, station: None }
    }

    #[test]
    fn a_trains_record_places_its_clients_stamps_on_the_runs_clock() {
        // the run's t = 0 read 1_000_000_000_000 on the realtime clock; the first arrival 0.526 s later, the
        // next two 6 ms apart (2 Mbit/s: 1500 B in 6 ms), the second packet lost; the least one-way delay
        // 26 ms (20 ms and the first packet's 6 on the wire), the others waited behind it
        let origin = 1_000_000_000_000u64;
        let doc = json!({"train": {"rx_ms": [0.0, null, 12.0, 6.0], "rx_first_real_ns": origin + 526_000_000,
                                    "delay_ms": [0.0, null, 11.999, 6.0], "owd_least_ms": 26.0, "server_sent": 4}});
        let t = train_out(&train3(4), &doc, origin).unwrap();
        assert_eq!((t.id, t.sent, t.received), (3, 4, 3));
        assert_eq!((t.first_s, t.last_s), (Some(0.526), Some(0.538)));
        // arrivals 526, 538 and 532 ms less delays of 26, 37.999 and 32: sent at 500, 500.001 and 500 ms
        assert_eq!(t.delay_ms.n, 3);
        assert_eq!(t.delay_ms.max, Some(37.999));
        assert!((t.delay_ms.mean.unwrap() - (26.0 + 37.999 + 32.0) / 3.0).abs() < 1e-9, "{:?}", t.delay_ms);
        // two packets' bits after the first over the 12 ms from the first arrival to the last: 2 Mbit/s
        assert!((t.dispersion_mbps.unwrap() - 2.0).abs() < 1e-12, "{:?}", t.dispersion_mbps);
        // the server's DONE lost: the train's packets are what it sent
        let mut lost_done = doc.clone();
        lost_done["train"]["server_sent"] = Value::Null;
        assert_eq!(train_out(&train3(4), &lost_done, origin).unwrap().sent, 4);
    }

    #[test]
    fn a_train_with_nothing_arrived_has_no_times_and_a_malformed_record_is_an_error_naming_the_train() {
        let doc = json!({"train": {"rx_ms": [null, null], "rx_first_real_ns": null, "server_sent": 2}});
        let t = train_out(&train3(2), &doc, 0).unwrap();
        assert_eq!((t.sent, t.received, t.first_s, t.dispersion_mbps, t.delay_ms.n), (2, 0, None, None, 0));
        let e = train_out(&train3(3), &doc, 0).unwrap_err();
        assert_eq!(e, "train 3: rx_ms is not a list of its 3 packets");
        let e = train_out(&train3(2), &json!({"test": "udp-train"}), 0).unwrap_err();
        assert_eq!(e, "train 3: the client's JSON has no \"train\" object");
        let e = train_out(&train3(1), &json!({"train": {"rx_ms": [0.0], "rx_first_real_ns": 5}}), 0).unwrap_err();
        assert_eq!(e, "train 3: the client's JSON has no owd_least_ms");
    }

    fn stalls_of(eps: &[crate::stall::Episode]) -> crate::stall::Stalls {
        let scales = crate::stall::Scales { drains: vec![("the down buffer's drain time".into(), 2_500_000)], min_rtt_ns: Some(10_000_000) };
        crate::stall::summarize(&[("down", eps, 0), ("up", &[], 0)], &scales)
    }

    #[test]
    fn a_stall_as_long_as_the_buffers_drain_time_flags_the_run_and_says_why() {
        let mut late = Lateness::of(&LateHist::default());
        let ep = crate::stall::Episode { start_ns: 13_880_000_000, dur_ns: 7_700_000, backlog_pkts: 45, drops: 24 };
        judge(&mut late, 28.0, stalls_of(&[ep]));
        assert_eq!(late.flagged, Some(true));
        assert_eq!(late.reasons, Some(vec!["stall"]));
        assert_eq!(
            late.reason.as_deref(),
            Some("1 stall of ≥ 2.5 ms (a stall this long releases a burst the queue would not have seen, the down buffer's drain time); the longest 7.7 ms at 13.88 s (the down thread)")
        );
    }

    #[test]
    fn a_stall_shorter_than_every_time_scale_does_not_flag_but_a_high_p99_still_does() {
        let mut late = Lateness::of(&LateHist::default());
        let ep = crate::stall::Episode { start_ns: 0, dur_ns: 2_499_999, backlog_pkts: 3, drops: 0 };
        judge(&mut late, 1000.0, stalls_of(&[ep]));
        assert_eq!((late.flagged, late.reasons.clone(), late.reason.clone()), (Some(false), Some(vec![]), None));
        judge(&mut late, 1001.0, stalls_of(&[ep]));
        assert_eq!((late.flagged, late.reasons.clone()), (Some(true), Some(vec!["p99"])));
        assert_eq!(late.reason.as_deref(), Some("p99 lateness 1001 µs exceeds 1000 µs"));
    }

    #[test]
    fn a_links_statistics_are_one_flat_object_the_engines_keys_beside_the_emulators() {
        let link = LinkOut { rate_bps: 1, busy_s: 0.5, tx_bytes: 2, tx_pkts: 3, drops: BTreeMap::from([("aqm", 4)]), marks: 5, qdelay_ms: DistOut::of(&mut [1.0]), autorate: None };
        let v = serde_json::to_value(EmuLinkOut { link, read_pkts: 6, read_frames: 7, gso_super_pkts: 8, coalesced_pkts: 9, write_errors: 10 }).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["busy_s", "coalesced_pkts", "drops", "gso_super_pkts", "marks", "qdelay_ms", "rate_bps", "read_frames", "read_pkts", "tx_bytes", "tx_pkts", "write_errors"]);
        assert_eq!((v["drops"]["aqm"].as_u64(), v["qdelay_ms"]["n"].as_u64(), v["write_errors"].as_u64()), (Some(4), Some(1), Some(10)));
    }
}
