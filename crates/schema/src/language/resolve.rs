//! A validated document ([`super::tables::Document`]) to the resolved
//! scenario both engines read ([`crate::scenario::Scenario`],
//! docs/engine-interface.md): SI base units, `count` expanded, buffers in
//! BDPs turned into bytes, Mahimahi traces read, and what needs more than
//! one value checked (a flow's stop after its start, the run's limits).

use super::check::{BufferAmount, LinkRate, Phy};
use super::tables::{self, Autorate, Bucket, Document, Link, Sss, LIMITS};
use super::value::py_repr;
use super::LanguageError;
use crate::scenario::{self as rs, Direction, Scenario};
use bloatlab_core::time::Nanos;
use bloatlab_core::units::{MAX_INT, PACKET_BYTES as MTU};
use serde_json::Value;
use std::collections::BTreeMap;

/// What resolving needs from outside the document.
pub struct Context<'a> {
    /// The scenario's name when the document gives none (the file's).
    pub name: &'a str,
    /// Reads a trace file (named as written, relative to the scenario's
    /// directory), with the caller's bounds; Err is the message.
    pub read_trace: &'a dyn Fn(&str) -> Result<Vec<u8>, String>,
    /// Bytes of memory the machine has available (None: not known).
    pub mem_available: Option<u64>,
}

/// Bytes a time-series row costs the whole `bloatlab run --out` process at its
/// peak: 191 MB for the 985 000 flow rows of the 1000-flow run (BENCHMARKS.md,
/// "Time series from the engine to Python"), rounded up. A run whose series
/// would need more than the memory available is refused even when [limits]
/// was raised: an allocation the system cannot give ends a process by abort or
/// by the OOM killer, never by a message.
pub const SERIES_ROW_BYTES: u64 = 200;

fn err(key: impl Into<String>, message: impl Into<String>) -> LanguageError {
    LanguageError { key: key.into(), message: message.into() }
}

/// A raw value as Python's `str` writes it into a message.
fn shown(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => py_repr(other),
        None => String::new(),
    }
}

fn raw<'a>(doc: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut v = doc;
    for p in path {
        v = match v {
            Value::Object(m) => m.get(*p)?,
            Value::Array(a) => a.get(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Python's `{:,}`.
fn commas(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Python's `{:.3g}`.
fn g3(x: f64) -> String {
    super::check::significant(x, 3)
}

/// The resolved scenario, and the `start_jitter` to apply to its flows
/// (drawn by the caller from the seed: `bloatlab.scenario._jitter_starts`).
pub fn resolve(m: &Document, doc: &Value, ctx: &Context) -> Result<(Scenario, Option<Nanos>), LanguageError> {
    let duration = m.duration.value;
    let seed = m.seed.0;
    let name = m.name.as_ref().map_or_else(|| ctx.name.to_string(), |t| t.value.clone());
    if m.flow.is_empty() && m.page.is_empty() {
        return Err(err("flow", "no flow: add at least one [[flow]] table (or a [[page]])"));
    }
    let mut flows = resolve_flows(m, doc)?;
    let jitter = m.start_jitter.as_ref().map(|j| j.value);
    if let Some(j) = jitter {
        if j >= duration {
            return Err(err("start_jitter", "expected a duration from 0 up to the run's length"));
        }
    }
    let rx_jitter = m.rx_jitter.as_ref().map_or(0, |j| j.value);
    if rx_jitter > rs::MAX_RX_JITTER_NS {
        let got = m.rx_jitter.as_ref().map(|j| shown(Some(&j.raw))).unwrap_or_default();
        return Err(err("rx_jitter", format!("expected the receiving host's timing noise, from 0 up to \"10ms\", got {got}")));
    }
    let pages = resolve_pages(m, doc, &mut flows)?;
    let mut probes = resolve_probes(m, &flows);
    let mut trains = resolve_trains(m, &flows, duration)?;
    let links_given = m.link.as_ref().is_some_and(|l| l.down.is_some() || l.up.is_some());
    let wifi = resolve_wifi(m, &mut flows, &mut probes, &mut trains)?;
    if !links_given && wifi.is_none() {
        return Err(err("link", "no bottleneck: add [link.down] (and/or [link.up]) with a rate, or a [wifi] medium"));
    }
    let mut links = rs::Links { down: None, up: None };
    for d in tables::DIRECTIONS {
        let ld = m.link.as_ref().and_then(|l| if d == "down" { l.down.as_ref() } else { l.up.as_ref() });
        if let Some(ld) = ld {
            let l = resolve_link(d, ld, &flows, doc, ctx)?;
            if let (Some(_), Some(ms)) = (&l.autorate, &l.trace_ms) {
                let last = *ms.last().expect("a trace has a line");
                if last * 1_000_000 < duration {
                    return Err(err(
                        format!("link.{d}.rate"),
                        format!(
                            "the trace lasts {last} ms, shorter than the run ({} ms): autorate is measured against the trace's \
                             capacity, give a trace at least as long",
                            duration / 1_000_000
                        ),
                    ));
                }
            }
            if d == "down" {
                links.down = Some(l);
            } else {
                links.up = Some(l);
            }
        }
    }
    let sc = Scenario {
        name,
        seed,
        duration_ns: duration,
        sample_interval_ns: m.sample_interval.value,
        links,
        flows,
        probes,
        trains,
        pages,
        wifi,
        default_rtt_ns: None,
        shell_station: None,
        rx_jitter_ns: rx_jitter,
    };
    check_limits(m, doc, &sc, ctx)?;
    Ok((sc, jitter))
}

fn direction(d: &str) -> Direction {
    if d == "up" {
        Direction::Up
    } else {
        Direction::Down
    }
}

fn resolve_flows(m: &Document, doc: &Value) -> Result<Vec<rs::Flow>, LanguageError> {
    let mut flows = Vec::new();
    for (gi, f) in m.flow.iter().enumerate() {
        let p = format!("flow.{gi}");
        let g = gi.to_string();
        if let Some(stop) = &f.stop {
            if stop.value <= f.start.value {
                let start = raw(doc, &["flow", &g, "start"]).map_or("0s".to_string(), |v| shown(Some(v)));
                return Err(err(format!("{p}.stop"), format!("must be after start ({start}), got \"{}\"", shown(Some(&stop.raw)))));
            }
        }
        if f.start.value >= m.duration.value {
            return Err(err(format!("{p}.start"), format!("must be before the end of the run (duration {})", shown(Some(&m.duration.raw)))));
        }
        if f.on.is_some() || f.off.is_some() {
            for (k, given) in [("on", f.on.is_some()), ("off", f.off.is_some()), ("rate", f.rate.is_some())] {
                if !given {
                    return Err(err(format!("{p}.{k}"), "missing: an on/off source needs rate, on and off (e.g. rate = \"20Mbit\", on = \"1s\", off = \"4s\")"));
                }
            }
        }
        let label = f.name.as_ref().map_or_else(|| format!("{}-{}-{gi}", f.cc.value, f.direction.value), |t| t.value.clone());
        let count = f.count.0;
        for k in 0..count {
            flows.push(rs::Flow {
                id: flows.len(),
                group: gi,
                name: if count == 1 { label.clone() } else { format!("{label}.{k}") },
                cc: f.cc.value.clone(),
                direction: direction(&f.direction.value),
                rtt_ns: f.rtt.value,
                start_ns: f.start.value,
                stop_ns: f.stop.as_ref().map(|s| s.value),
                size_bytes: f.size.as_ref().map(|s| s.value),
                app_rate_bps: f.rate.as_ref().map(|r| r.value),
                on_ns: f.on.as_ref().map(|x| x.value),
                off_ns: f.off.as_ref().map(|x| x.value),
                ecn: f.ecn.as_ref().map(|b| b.value),
                tso: f.tso.value,
                pacing: f.pacing.value,
                station: None,
                page: None,
                dscp: f.dscp.value,
            });
        }
    }
    Ok(flows)
}

/// `[[page]]`: each object becomes a download of its size (a flow naming its
/// page, appended to the flows), which the engines open at most
/// `connections` at a time.
fn resolve_pages(m: &Document, doc: &Value, flows: &mut Vec<rs::Flow>) -> Result<Vec<rs::Page>, LanguageError> {
    let mut pages = Vec::new();
    let groups = m.flow.len();
    for (i, pg) in m.page.iter().enumerate() {
        let p = format!("page.{i}");
        let name = pg.name.as_ref().map_or_else(|| format!("page-{i}"), |t| t.value.clone());
        let sizes: Vec<u64> = match (&pg.sizes, &pg.objects, &pg.size) {
            (Some(s), _, _) => s.iter().map(|x| x.value).collect(),
            (None, Some(n), Some(total)) => {
                let (n, total) = (n.0, total.value);
                if total < n {
                    let given = raw(doc, &["page", &i.to_string(), "size"]).map_or(String::new(), py_repr);
                    return Err(err(format!("{p}.size"), format!("expected at least one byte per object ({n}), got {given}")));
                }
                // the page's weight split evenly, the remainder on the first objects
                (0..n).map(|k| total / n + u64::from(k < total % n)).collect()
            }
            _ => unreachable!("checked with the tables"),
        };
        if pg.start.value >= m.duration.value {
            return Err(err(format!("{p}.start"), "must be before the end of the run"));
        }
        for (k, size) in sizes.into_iter().enumerate() {
            flows.push(rs::Flow {
                id: flows.len(),
                group: groups + i,
                name: format!("{name}/{k}"),
                cc: pg.cc.value.clone(),
                direction: Direction::Down,
                rtt_ns: pg.rtt.value,
                start_ns: pg.start.value,
                stop_ns: None,
                size_bytes: Some(size),
                app_rate_bps: None,
                on_ns: None,
                off_ns: None,
                ecn: None,
                tso: true,
                pacing: false,
                station: None,
                page: Some(i),
                dscp: pg.dscp.value,
            });
        }
        pages.push(rs::Page { id: i, name, connections: pg.connections.0 as u32 });
    }
    Ok(pages)
}

fn resolve_probes(m: &Document, flows: &[rs::Flow]) -> Vec<rs::Probe> {
    let min_rtt = flows.iter().map(|f| f.rtt_ns).min().unwrap_or(0);
    m.probe
        .iter()
        .enumerate()
        .map(|(i, pr)| rs::Probe {
            id: i,
            name: pr.name.as_ref().map_or_else(|| format!("{}-{i}", pr.kind.value), |t| t.value.clone()),
            kind: pr.kind.value.clone(),
            interval_ns: pr.interval.value,
            rtt_ns: pr.rtt.as_ref().map_or(min_rtt, |r| r.value),
            size_bytes: pr.size.value as u32,
            direction: direction(&pr.direction.value),
            station: None,
            dscp: pr.dscp.value,
        })
        .collect()
}

/// `[[train]]` -> the resolved trains: the base RTT defaults to the smallest flow's, as a probe's; a train starts
/// within the run, and a paced one takes at most [`rs::TRAIN_MAX_PACED_NS`] to send (the probe server's bound, which
/// the emulator's trains go through).
fn resolve_trains(m: &Document, flows: &[rs::Flow], duration: Nanos) -> Result<Vec<rs::Train>, LanguageError> {
    // (a document has a flow by now: `resolve` refuses one without)
    let min_rtt = flows.iter().map(|f| f.rtt_ns).min().unwrap_or(0);
    let mut out = Vec::with_capacity(m.train.len());
    for (i, t) in m.train.iter().enumerate() {
        let rtt_ns = t.rtt.as_ref().map_or(min_rtt, |r| r.value);
        if t.start.value >= duration {
            return Err(err(format!("train.{i}.start"), format!("expected a start within the run (before {}), got {}", shown(Some(&m.duration.raw)), shown(Some(&t.start.raw)))));
        }
        let train = rs::Train {
            id: i,
            name: t.name.as_ref().map_or_else(|| format!("train-{i}"), |n| n.value.clone()),
            start_ns: t.start.value,
            packets: t.packets.0 as u32,
            size_bytes: t.size.value as u32,
            rate_bps: t.rate.as_ref().map(|r| r.value),
            direction: direction(&t.direction.value),
            rtt_ns,
            station: None,
        };
        let span = train.send_offset_ns(train.packets - 1);
        if span > rs::TRAIN_MAX_PACED_NS {
            return Err(err(
                format!("train.{i}.rate"),
                format!(
                    "{} packets of {} B at this rate take {:.3} s to send; a paced train sends for at most 1 s (bloatlab-probe server's bound): fewer packets or a faster rate",
                    train.packets, train.wire_bytes(), span as f64 / 1e9
                ),
            ));
        }
        out.push(train);
    }
    Ok(out)
}

fn resolve_link(d: &str, ld: &Link, flows: &[rs::Flow], doc: &Value, ctx: &Context) -> Result<rs::LinkSpec, LanguageError> {
    let p = format!("link.{d}");
    let (rate, trace_ms) = match &ld.rate.value {
        LinkRate::Rate(r) => (*r, None),
        LinkRate::Trace(file) => {
            let ms = load_trace(&format!("{p}.rate"), file, ctx)?;
            let last = *ms.last().expect("a trace has a line");
            let rate = ((ms.len() as f64 * MTU as f64 * 8.0 * 1000.0 / last as f64) as u64).max(1); // mean capacity
            (rate, Some(ms))
        }
    };
    let (mut buffer_bytes, mut buffer_pkts) = (None, None);
    match ld.buffer.value {
        BufferAmount::Bytes(b) => buffer_bytes = Some(b),
        BufferAmount::Pkts(n) => buffer_pkts = Some(n),
        BufferAmount::Bdp(x) => {
            let dir = direction(d);
            let crossing: Vec<Nanos> = flows.iter().filter(|f| f.direction == dir).map(|f| f.rtt_ns).collect();
            let min_rtt = crossing.into_iter().min().or_else(|| flows.iter().map(|f| f.rtt_ns).min()).unwrap_or(0);
            let bdp = rate as f64 * min_rtt as f64 / 8e9;
            let bytes = (x * bdp).round_ties_even().max(MTU as f64);
            if bytes > MAX_INT as f64 {
                return Err(err(format!("{p}.buffer"), format!("\"{}\" of this path's BDP is too large a buffer", shown(Some(&ld.buffer.raw)))));
            }
            buffer_bytes = Some(bytes as u64);
        }
    }
    let _ = doc;
    let (mut device_queue_bytes, mut device_queue_pkts) = (None, None);
    if let Some(q) = &ld.device_queue {
        match q.value {
            BufferAmount::Pkts(n) => device_queue_pkts = Some(n),
            BufferAmount::Bytes(b) => device_queue_bytes = Some(b),
            BufferAmount::Bdp(_) => unreachable!("refused by the table"),
        }
    }
    Ok(rs::LinkSpec {
        rate_bps: rate,
        buffer_bytes,
        buffer_pkts,
        loss: ld.loss.value,
        qdisc: rs::QdiscSpec { kind: ld.qdisc.value.clone(), params: super::qdisc_params(&p, &ld.qdisc.value, ld.qdisc_params.as_ref())? },
        trace_ms,
        policer: ld.policer.as_ref().map(bucket),
        shaper: ld.shaper.as_ref().map(bucket),
        device_queue_bytes,
        device_queue_pkts,
        autorate: ld.autorate.as_ref().map(|a| autorate(&format!("{p}.autorate"), a)).transpose()?,
    })
}

/// cake-autorate's ``connection_active_thr_kbps`` (defaults.sh): it refuses a minimum rate below it.
const AUTORATE_ACTIVE_BPS: u64 = bloatlab_core::autorate::CONNECTION_ACTIVE_THR_KBPS as u64 * 1000;

fn mbit(bps: u64) -> String {
    format!("{}Mbit", bps as f64 / 1e6)
}

/// `autorate = { min, base, max, ping_interval, delay_threshold, active_threshold }`
/// with cake-autorate's own start-up checks: positive rates, min <= base <=
/// max, min at least its connection-active threshold (2 Mbit/s unless set).
fn autorate(p: &str, a: &Autorate) -> Result<rs::Autorate, LanguageError> {
    let (min, max) = (a.min.value, a.max.value);
    let base = a.base.as_ref().map_or(min, |b| b.value);
    let active = a.active_threshold.as_ref().map_or(AUTORATE_ACTIVE_BPS, |r| r.value);
    for (k, v, raw) in [
        ("min", min, Some(&a.min.raw)),
        ("max", max, Some(&a.max.raw)),
        ("base", base, a.base.as_ref().map(|b| &b.raw)),
        ("active_threshold", active, a.active_threshold.as_ref().map(|r| &r.raw)),
    ] {
        if v == 0 {
            return Err(err(format!("{p}.{k}"), format!("expected a positive rate, got \"{}\"", shown(raw))));
        }
    }
    if min > max {
        return Err(err(format!("{p}.min"), format!("{} is above max ({}): the bounds cross", mbit(min), mbit(max))));
    }
    if base < min || base > max {
        return Err(err(format!("{p}.base"), format!("{} must lie between min ({}) and max ({})", mbit(base), mbit(min), mbit(max))));
    }
    if min < active {
        let set = if a.active_threshold.is_some() { "active_threshold" } else { "active_threshold, default" };
        return Err(err(
            format!("{p}.min"),
            format!("{} is below cake-autorate's connection-active threshold ({set} {}), which the script refuses", mbit(min), mbit(active)),
        ));
    }
    let sss = a.sss.as_ref().map(|s| sss(&format!("{p}.sss"), s, p.starts_with("link.up"))).transpose()?;
    Ok(rs::Autorate {
        min_bps: min,
        base_bps: base,
        max_bps: max,
        ping_interval_ns: a.ping_interval.value,
        delay_threshold_ns: a.delay_threshold.value,
        active_threshold_bps: active,
        sss,
    })
}

/// `sss = { times, pre, post }`: each time within the minute (0-60 s past it,
/// where the script's `t_start_us % 60000000` lies); `pre`/`post` are
/// non-negative durations (the table's type refuses a negative one). The
/// direction decides the rule (`dl*sss` to at most base, `ul*sss` to min).
fn sss(p: &str, s: &Sss, upload: bool) -> Result<rs::Sss, LanguageError> {
    const MINUTE_NS: u64 = 60_000_000_000;
    for (i, t) in s.times.iter().enumerate() {
        if t.value > MINUTE_NS {
            return Err(err(format!("{p}.times.{i}"), format!("{} is outside the minute: a switch time is 0-60 s past it", shown(Some(&t.raw)))));
        }
    }
    Ok(rs::Sss { times_ns: s.times.iter().map(|t| t.value).collect(), pre_ns: s.pre.value, post_ns: s.post.value, upload })
}

/// `{ rate = "2Mbit", burst = "10KB" }`; `burst` defaults to 10 ms at
/// `rate`, at least two full packets.
fn bucket(b: &Bucket) -> rs::Bucket {
    let rate = b.rate.value;
    let burst = b.burst.as_ref().map_or_else(|| ((rate as f64 * 0.010 / 8.0) as u64).max(2 * MTU), |x| x.value);
    rs::Bucket { rate_bps: rate, burst_bytes: burst }
}

/// A Mahimahi trace: one 1500-byte delivery opportunity per line, in ms;
/// the last time is the period after which it repeats.
fn load_trace(path: &str, file: &str, ctx: &Context) -> Result<Vec<u64>, LanguageError> {
    let bytes = (ctx.read_trace)(file).map_err(|m| err(path, m))?;
    let text = String::from_utf8_lossy(&bytes);
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || !words.iter().all(|w| w.chars().all(|c| c.is_ascii_digit())) {
        return Err(err(path, format!("trace {file}: expected one whole number of milliseconds per line")));
    }
    let ms: Vec<u64> = words.iter().map(|w| w.parse::<u64>().unwrap_or(u64::MAX)).collect();
    if ms.iter().all(|&t| t == 0) {
        return Err(err(
            path,
            format!("trace {file}: every time is 0 ms: a trace needs delivery opportunities after 0 ms (it repeats with the period of its last time)"),
        ));
    }
    if *ms.last().expect("not empty") == 0 || ms.windows(2).any(|w| w[1] < w[0]) {
        return Err(err(path, format!("trace {file}: times must not decrease and must end after 0 ms")));
    }
    Ok(ms)
}

/// `[wifi]` and `[[wifi.station]]` -> the resolved medium; sets each flow's
/// and probe's station (`count` copies of a flow naming a station group are
/// spread over its stations round robin).
fn resolve_wifi(m: &Document, flows: &mut [rs::Flow], probes: &mut [rs::Probe], trains: &mut [rs::Train]) -> Result<Option<rs::WifiSpec>, LanguageError> {
    let Some(w) = &m.wifi else {
        for (what, i) in [
            ("flow", m.flow.iter().position(|f| f.station.is_some())),
            ("probe", m.probe.iter().position(|p| p.station.is_some())),
            ("page", m.page.iter().position(|p| p.station.is_some())),
            ("train", m.train.iter().position(|t| t.station.is_some())),
        ] {
            if let Some(i) = i {
                return Err(err(format!("{what}.{i}.station"), "names a station, but the scenario has no [wifi] medium"));
            }
        }
        return Ok(None);
    };
    let mut stations: Vec<rs::StationSpec> = Vec::new();
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (gi, sd) in w.station.iter().enumerate() {
        let name = sd.name.as_ref().map_or_else(|| format!("sta{gi}"), |t| t.value.clone());
        if groups.iter().any(|(n, _)| *n == name) {
            return Err(err(format!("wifi.station.{gi}.name"), format!("station name \"{name}\" is used twice")));
        }
        let total = stations.len() + sd.count.0 as usize;
        if total > bloatlab_core::wifi::MAX_STATIONS {
            let max = bloatlab_core::wifi::MAX_STATIONS;
            return Err(err(
                format!("wifi.station.{gi}.count"),
                format!("the [[wifi.station]] tables add up to {total} stations; a BSS has at most {max} (802.11 association IDs 1-2007)"),
            ));
        }
        let mut members = Vec::new();
        for k in 0..sd.count.0 {
            members.push(stations.len());
            let (mcs, phy_rate_bps, dsss_rate_bps) = match sd.phy_rate.value {
                Phy::Mcs(i) => (Some(i), None, None),
                Phy::Rate(r) => (None, Some(r), None),
                Phy::Dsss(r) => (None, None, Some(r)),
            };
            let short_preamble = sd.preamble.as_ref().is_some_and(|p| p.value == "short");
            if sd.preamble.is_some() && dsss_rate_bps.is_none() {
                return Err(err(format!("wifi.station.{gi}.preamble"), "only an 802.11b station (phy_rate \"dsss1\", \"dsss2\", \"cck5.5\", \"cck11\") has a PLCP preamble to choose"));
            }
            let ht_client = sd.ht_client.as_ref().is_some_and(|b| b.value);
            if sd.ht_client.is_some() && dsss_rate_bps.is_none() {
                return Err(err(format!("wifi.station.{gi}.ht_client"), "only a station at an 802.11b rate (phy_rate \"dsss1\", \"dsss2\", \"cck5.5\", \"cck11\") can be an HT client held at it"));
            }
            if dsss_rate_bps.is_some_and(|r| bloatlab_core::wifi::airtime::Phy::dsss(r, short_preamble).is_none()) {
                return Err(err(format!("wifi.station.{gi}.preamble"), "1 Mbit/s DSSS has no short preamble (IEEE 802.11-2016 §16.2.2.3); use \"long\" or a faster rate"));
            }
            let minstrel = sd.rate_control.value == "minstrel_ht";
            if mcs.is_none() && (minstrel || sd.snr_db.is_some()) {
                let why = if minstrel { "rate_control = \"minstrel_ht\"" } else { "snr_db" };
                return Err(err(format!("wifi.station.{gi}.phy_rate"), format!("{why} needs phy_rate as an HT MCS (\"mcs0\"..\"mcs15\"; with Minstrel-HT the highest it may use), not a bit rate")));
            }
            stations.push(rs::StationSpec {
                name: if sd.count.0 == 1 { name.clone() } else { format!("{name}.{k}") },
                mcs,
                phy_rate_bps,
                dsss_rate_bps,
                short_preamble,
                ht_client,
                mpdu_error: sd.mpdu_error.value,
                weight: sd.weight.value,
                snr_db: sd.snr_db.as_ref().map(|v| v.value),
                rate_control: if minstrel { sd.rate_control.value.clone() } else { String::new() },
            });
        }
        groups.push((name, members));
    }
    let known = groups.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
    // a station's own name, then a group's (a group's name wins)
    let mut by_name: BTreeMap<String, Vec<usize>> = stations.iter().enumerate().map(|(i, s)| (s.name.clone(), vec![i])).collect();
    for (n, members) in &groups {
        by_name.insert(n.clone(), members.clone());
    }
    let pick = |path: String, station: Option<&str>, k: usize| -> Result<usize, LanguageError> {
        let Some(s) = station else {
            if stations.len() == 1 {
                return Ok(0);
            }
            return Err(err(path, format!("missing: with several wifi stations every flow, probe and train names one (known: {known})")));
        };
        let Some(members) = by_name.get(s) else {
            return Err(err(path, format!("unknown station \"{s}\" (known: {known})")));
        };
        Ok(members[k % members.len()])
    };
    let mut copies: BTreeMap<usize, usize> = BTreeMap::new();
    for f in flows.iter_mut() {
        if let Some(pi) = f.page {
            // all objects of a page are loaded on one station
            let st = m.page[pi].station.as_ref().map(|t| t.value.as_str());
            f.station = Some(pick(format!("page.{pi}.station"), st, 0)?);
            continue;
        }
        let k = copies.entry(f.group).or_insert(0);
        let st = m.flow[f.group].station.as_ref().map(|t| t.value.as_str());
        f.station = Some(pick(format!("flow.{}.station", f.group), st, *k)?);
        *k += 1;
    }
    for (i, pr) in probes.iter_mut().enumerate() {
        let st = m.probe[i].station.as_ref().map(|t| t.value.as_str());
        pr.station = Some(pick(format!("probe.{i}.station"), st, 0)?);
    }
    for (i, t) in trains.iter_mut().enumerate() {
        let st = m.train[i].station.as_ref().map(|t| t.value.as_str());
        t.station = Some(pick(format!("train.{i}.station"), st, 0)?);
    }
    let aql = match &w.aql {
        None => None,
        Some(a) => {
            if w.mac.value != "airtime" {
                return Err(err(
                    "wifi.aql",
                    format!("AQL works inside mac80211's airtime scheduler: it needs mac = \"airtime\", not \"{}\"", w.mac.value),
                ));
            }
            if a.limit_high.value < a.limit_low.value {
                return Err(err(
                    "wifi.aql.limit_high",
                    format!("{} is below limit_low ({})", shown(Some(&a.limit_high.raw)), shown(Some(&a.limit_low.raw))),
                ));
            }
            Some(rs::AqlSpec { limit_low_us: a.limit_low.value, limit_high_us: a.limit_high.value, threshold_us: a.threshold.value })
        }
    };
    let (buffer_bytes, buffer_pkts) = match w.buffer.value {
        BufferAmount::Bytes(b) => (Some(b), None),
        BufferAmount::Pkts(n) => (None, Some(n)),
        BufferAmount::Bdp(_) => unreachable!("refused by the table"),
    };
    Ok(Some(rs::WifiSpec {
        mac: w.mac.value.clone(),
        qdisc: rs::QdiscSpec { kind: w.qdisc.value.clone(), params: super::qdisc_params("wifi", &w.qdisc.value, w.qdisc_params.as_ref())? },
        buffer_bytes,
        buffer_pkts,
        stations,
        aql,
    }))
}

/// Refuse up front what a run would exceed (`[limits]`, docs/scenario.md).
fn check_limits(m: &Document, doc: &Value, sc: &Scenario, ctx: &Context) -> Result<(), LanguageError> {
    let lim = &m.limits;
    let (max_flows, max_rows, max_probe, max_packets) = (lim.max_flows.0, lim.max_series_rows.0, lim.max_probe_packets.0, lim.max_packets.0);
    let _ = LIMITS;
    let dur = sc.duration_ns;
    let n = sc.flows.len() as u64;
    if n > max_flows && m.flow.is_empty() {
        return Err(err("page", format!("{} page objects, more than limits.max_flows ({}); raise it knowingly with [limits]", commas(n), commas(max_flows))));
    }
    if n > max_flows {
        let mut big = 0;
        for (i, f) in m.flow.iter().enumerate() {
            if f.count.0 > m.flow[big].count.0 {
                big = i;
            }
        }
        return Err(err(format!("flow.{big}.count"), format!("{} flows in all, more than limits.max_flows ({}); raise it knowingly with [limits]", commas(n), commas(max_flows))));
    }
    let samples = dur / sc.sample_interval_ns;
    let rows = samples.saturating_mul(n + 2);
    if rows > max_rows {
        return Err(err(
            "sample_interval",
            format!(
                "{} samples x {} series = {} time-series rows, more than limits.max_series_rows ({}, ~{:.0} GB); sample less often, shorten the run, or raise the limit knowingly with [limits]",
                commas(samples), n + 2, commas(rows), commas(max_rows), (max_rows as f64 * 400.0 / 1e9).round_ties_even()
            ),
        ));
    }
    let mut total: u64 = 0;
    for pr in &sc.probes {
        total += dur / pr.interval_ns;
        if total > max_probe {
            return Err(err(
                format!("probe.{}.interval", pr.id),
                format!("the probes would send {}+ packets, more than limits.max_probe_packets ({}); probe less often or raise the limit knowingly with [limits]", commas(total), commas(max_probe)),
            ));
        }
    }
    for t in &sc.trains {
        total += t.packets as u64;
        if total > max_probe {
            return Err(err(
                format!("train.{}.packets", t.id),
                format!("the probes and trains would send {}+ packets, more than limits.max_probe_packets ({}); send fewer or raise the limit knowingly with [limits]", commas(total), commas(max_probe)),
            ));
        }
    }
    if let Some(avail) = ctx.mem_available {
        let need = (rows + total).saturating_mul(SERIES_ROW_BYTES);
        if need > avail {
            let key = if rows >= total { "sample_interval".to_string() } else { format!("probe.{}.interval", sc.probes[0].id) };
            return Err(err(
                key,
                format!(
                    "{} time-series rows (samples and probes) need ~{} GB, more than the {} GB this machine has available; sample less often or shorten the run",
                    commas(rows + total), g3(need as f64 / 1e9), g3(avail as f64 / 1e9)
                ),
            ));
        }
    }
    let mut rate: f64 = [&sc.links.down, &sc.links.up].iter().filter_map(|l| l.as_ref()).map(|l| l.rate_bps as f64).sum();
    if let Some(w) = &sc.wifi {
        rate += w.stations.iter().map(|s| s.phy_rate_bps.or(s.dsss_rate_bps).unwrap_or(600_000_000) as f64).sum::<f64>();
    }
    let pkts = rate * (dur as f64 / 1e9) / (8.0 * MTU as f64);
    if pkts > max_packets as f64 {
        return Err(err(
            "duration",
            format!(
                "{} at these rates carries up to {} packets, more than limits.max_packets ({}); shorten the run or raise the limit knowingly with [limits]",
                shown(raw(doc, &["duration"])), g3(pkts), g3(max_packets as f64)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_python_formats_them() {
        assert_eq!(commas(1234567), "1,234,567");
        assert_eq!(commas(12), "12");
        assert_eq!(g3(2e9), "2e+09");
        assert_eq!(g3(1.5e9), "1.5e+09");
        assert_eq!(g3(123.456), "123");
        assert_eq!(g3(0.25), "0.25");
        assert_eq!(g3(24.6), "24.6");
    }
}
