//! Latency statistics, the log-spaced histogram, and the common result
//! schema (`docs/results.md` summary keys + a `raw` object shaped like
//! `docs/engine-interface.md` "Raw result").
//!
//! Percentiles are numpy-linear (`bloatlab_core::stats`), like every engine.
//! The histogram has [`BUCKETS_PER_DECADE`] = 10 log-spaced buckets per decade
//! (bucket k covers [10^(k/10), 10^((k+1)/10)) µs, ≈ 26 % wide), fine enough
//! to see a bimodal RTT and coarse enough to print on one screen.

use bloatlab_core::stats::{jain, percentile_sorted, Dist};
use bloatlab_schema::result::{DistOut, FlowOut};
use serde_json::{json, Value};

pub const BUCKETS_PER_DECADE: f64 = 10.0;

/// Summary of a latency sample (values in µs).
#[derive(Debug, Clone, Default)]
pub struct Latency {
    pub n: usize,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    /// (low µs, high µs, count) of every non-empty bucket, ascending.
    pub hist: Vec<(f64, f64, u64)>,
}

impl Latency {
    /// Summarise `us` (sorted in place).
    pub fn of(us: &mut [f64]) -> Latency {
        if us.is_empty() {
            let nan = f64::NAN;
            return Latency { n: 0, min: nan, mean: nan, max: nan, stddev: nan, p50: nan, p90: nan, p95: nan, p99: nan, p999: nan, hist: vec![] };
        }
        us.sort_unstable_by(|a, b| a.total_cmp(b));
        let n = us.len();
        let mean = us.iter().sum::<f64>() / n as f64;
        let var = us.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        let mut hist: Vec<(f64, f64, u64)> = Vec::new();
        for &x in us.iter() {
            let k = (x.max(1e-3).log10() * BUCKETS_PER_DECADE).floor();
            let lo = 10f64.powf(k / BUCKETS_PER_DECADE);
            match hist.last_mut() {
                Some(b) if (b.0 - lo).abs() < 1e-9 * lo => b.2 += 1,
                _ => hist.push((lo, 10f64.powf((k + 1.0) / BUCKETS_PER_DECADE), 1)),
            }
        }
        Latency {
            n,
            min: us[0],
            mean,
            max: us[n - 1],
            stddev: var.sqrt(),
            p50: percentile_sorted(us, 50.0),
            p90: percentile_sorted(us, 90.0),
            p95: percentile_sorted(us, 95.0),
            p99: percentile_sorted(us, 99.0),
            p999: percentile_sorted(us, 99.9),
            hist,
        }
    }

    /// JSON in µs with the histogram.
    pub fn to_json_us(&self) -> Value {
        json!({
            "n": self.n, "min": self.min, "mean": self.mean, "max": self.max, "stddev": self.stddev,
            "p50": self.p50, "p90": self.p90, "p95": self.p95, "p99": self.p99, "p99_9": self.p999,
            "histogram": {"unit": "us", "buckets_per_decade": BUCKETS_PER_DECADE,
                          "buckets": self.hist.iter().map(|(lo, hi, c)| json!([lo, hi, c])).collect::<Vec<_>>()},
        })
    }

    /// The raw-result distribution shape (`Dist`: n, mean, p50, p95, p99, max) in ms.
    pub fn dist_ms(&self) -> Value {
        json!({"n": self.n, "mean": self.mean / 1e3, "p50": self.p50 / 1e3, "p95": self.p95 / 1e3,
               "p99": self.p99 / 1e3, "max": self.max / 1e3})
    }

    /// Text histogram with bars on a log scale of the counts (a bucket of 1
    /// still shows, next to one of a million): bar = 50 × log10(1 + count) /
    /// log10(1 + largest count).
    pub fn hist_text_log(&self) -> String {
        let top = (self.hist.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64 + 1.0).log10();
        let mut s = String::new();
        for (lo, hi, c) in &self.hist {
            let bar = ((*c as f64 + 1.0).log10() / top * 50.0).ceil() as usize;
            s += &format!("  {:>10} - {:<10} {:>9} {}\n", fmt_us(*lo), fmt_us(*hi), c, "#".repeat(bar));
        }
        s
    }

    /// Text histogram, one line per non-empty bucket, bars scaled to 50 chars.
    pub fn hist_text(&self) -> String {
        let top = self.hist.iter().map(|b| b.2).max().unwrap_or(1).max(1);
        let mut s = String::new();
        for (lo, hi, c) in &self.hist {
            let bar = ((*c as f64 / top as f64) * 50.0).ceil() as usize;
            s += &format!("  {:>10} - {:<10} {:>9} {}\n", fmt_us(*lo), fmt_us(*hi), c, "#".repeat(bar));
        }
        s
    }
}

/// A duration in µs printed with a fitting unit.
pub fn fmt_us(us: f64) -> String {
    if !us.is_finite() {
        "-".into()
    } else if us < 1000.0 {
        format!("{us:.1}us")
    } else if us < 1e6 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{:.3}s", us / 1e6)
    }
}

/// iperf3-style byte and bit-rate formatting.
pub fn fmt_bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GBytes", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MBytes", b / 1e6)
    } else {
        format!("{:.1} KBytes", b / 1e3)
    }
}
pub fn fmt_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbits/sec", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbits/sec", bps / 1e6)
    } else {
        format!("{:.1} Kbits/sec", bps / 1e3)
    }
}

/// One flow as the raw result describes it: the schema's flow record
/// ([`FlowOut`], what the simulator writes too) while the flow is read, with
/// what the probe keeps beside it (its name, control and direction, the srtt
/// samples the record's `rtt_ms` summarises, the kernel's min_rtt).
#[derive(Debug, Clone, Default)]
pub struct FlowRaw {
    /// the record; its `rtt_ms` is filled from [`FlowRaw::rtt_ms`] by [`FlowRaw::raw`]
    pub rec: FlowOut,
    pub name: String,
    pub cc: String,
    /// "up" = client → server data, "down" = server → client.
    pub direction: String,
    /// srtt samples, ms
    pub rtt_ms: Vec<f64>,
    /// tcpi_min_rtt at the end, ms
    pub min_rtt_ms: f64,
}

impl FlowRaw {
    pub fn goodput_mbps(&self) -> f64 {
        let dt = self.rec.end_s - self.rec.start_s;
        if dt > 0.0 {
            self.rec.bytes_delivered as f64 * 8.0 / dt / 1e6
        } else {
            0.0
        }
    }
    pub fn retrans_rate(&self) -> f64 {
        if self.rec.segs_sent > 0 {
            self.rec.retrans_segs as f64 / self.rec.segs_sent as f64
        } else {
            0.0
        }
    }
    /// The raw result's flow record (the schema's [`FlowOut`], as the
    /// simulator writes it), without the simulator's `cc` and `lost_segs`.
    pub fn raw(&self) -> FlowOut {
        let mut r = self.rtt_ms.clone();
        FlowOut { rtt_ms: DistOut::of(&mut r), cc: None, lost_segs: None, ..self.rec.clone() }
    }
    pub fn raw_json(&self) -> Value {
        serde_json::to_value(self.raw()).expect("FlowOut serializes")
    }
    pub fn summary_json(&self) -> Value {
        let mut r = self.rtt_ms.clone();
        let d = Dist::of(&mut r);
        json!({"id": self.rec.id, "name": self.name, "cc": self.cc, "direction": self.direction,
               "rtt_base_ms": self.min_rtt_ms, "goodput_mbps": self.goodput_mbps(),
               "bytes_acked": self.rec.bytes_acked, "bytes_delivered": self.rec.bytes_delivered,
               "retransmits": self.rec.retrans_segs, "retrans_rate": self.retrans_rate(),
               "rtt_ms": {"mean": d.mean, "p50": d.p50, "p95": d.p95, "p99": d.p99},
               "fct_s": self.rec.fct_s, "completed": self.rec.completed})
    }
}

/// The flow series (`raw.series.flows`) is the schema crate's table; the
/// probe fills every column but `state` (TCP_INFO does not name a control's
/// mode) and writes it as JSON columns.
pub use bloatlab_schema::series::FlowSeries;

/// One TCP_INFO sample into `s`; `pre` = what bytes_acked counts before the
/// data (`StreamState::pre`), `cap` = bytes the application wrote (removes
/// the FIN's sequence number). `flow`: a stream index (at most `-P` 4096 plus
/// the load test's first id), well inside the table's u32.
pub fn push_sample(s: &mut FlowSeries, flow: usize, t: f64, ti: &crate::sys::TcpInfo, pre: u64, cap: u64) {
    s.flow.push(flow as u32);
    s.t.push(t);
    s.cwnd_bytes.push(ti.cwnd_bytes());
    s.inflight_bytes.push(ti.inflight_bytes());
    s.srtt_ms.push(ti.rtt as f64 / 1e3);
    s.pacing_rate_bps.push(ti.pacing_rate.saturating_mul(8));
    s.delivery_rate_bps.push(ti.delivery_rate.saturating_mul(8));
    s.delivered_bytes.push(crate::tcp::stream::data_acked(ti, cap, pre));
    s.sack_delivered_bytes.push(crate::tcp::stream::data_delivered(ti, cap, pre));
    s.retransmits.push(ti.total_retrans as u64);
}

/// The columns the probe measures (no `state`), borrowed for serialization:
/// written straight to a socket or a file without a JSON tree in between
/// (a tree costs ~40 B per number: 100 streams' samples made a 202-MB peak).
#[derive(serde::Serialize)]
pub struct SeriesOut<'a> {
    flow: &'a [u32],
    t: &'a [f64],
    cwnd_bytes: &'a [u64],
    inflight_bytes: &'a [u64],
    srtt_ms: &'a [f64],
    pacing_rate_bps: &'a [u64],
    delivery_rate_bps: &'a [u64],
    delivered_bytes: &'a [u64],
    sack_delivered_bytes: &'a [u64],
    retransmits: &'a [u64],
}

impl<'a> SeriesOut<'a> {
    pub fn of(s: &'a FlowSeries) -> SeriesOut<'a> {
        SeriesOut {
            flow: &s.flow,
            t: &s.t,
            cwnd_bytes: &s.cwnd_bytes,
            inflight_bytes: &s.inflight_bytes,
            srtt_ms: &s.srtt_ms,
            pacing_rate_bps: &s.pacing_rate_bps,
            delivery_rate_bps: &s.delivery_rate_bps,
            delivered_bytes: &s.delivered_bytes,
            sack_delivered_bytes: &s.sack_delivered_bytes,
            retransmits: &s.retransmits,
        }
    }
}

/// The columns the probe measures, as JSON (no `state`).
pub fn series_json(s: &FlowSeries) -> Value {
    serde_json::to_value(SeriesOut::of(s)).unwrap_or(Value::Null)
}

/// [`series_json`] read back (a missing or malformed column: empty).
pub fn series_from_json(v: &Value) -> FlowSeries {
    fn col<T: serde::de::DeserializeOwned>(v: &Value, k: &str) -> Vec<T> {
        serde_json::from_value(v.get(k).cloned().unwrap_or(Value::Array(vec![]))).unwrap_or_default()
    }
    FlowSeries {
        flow: col(v, "flow"),
        t: col(v, "t"),
        cwnd_bytes: col(v, "cwnd_bytes"),
        inflight_bytes: col(v, "inflight_bytes"),
        srtt_ms: col(v, "srtt_ms"),
        pacing_rate_bps: col(v, "pacing_rate_bps"),
        delivery_rate_bps: col(v, "delivery_rate_bps"),
        delivered_bytes: col(v, "delivered_bytes"),
        sack_delivered_bytes: col(v, "sack_delivered_bytes"),
        retransmits: col(v, "retransmits"),
        state: Default::default(),
    }
}

/// One UDP probe as the raw result describes it.
#[derive(Debug, Clone, Default)]
pub struct ProbeRaw {
    pub id: usize,
    pub kind: String,
    pub sent: u64,
    pub received: u64,
    pub rtt: Latency,
    /// series: send time (s since t0) and RTT (ms) of each answered probe
    pub t: Vec<f64>,
    pub rtt_ms: Vec<f64>,
}

impl ProbeRaw {
    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            1.0 - self.received.min(self.sent) as f64 / self.sent as f64
        }
    }
}

/// Everything one probe process measured, turned into the common schema.
pub struct Output {
    pub test: &'static str,
    pub scenario: Value,
    pub t0_mono_ns: u64,
    pub duration_s: f64,
    pub cc: Option<String>,
    pub flows: Vec<FlowRaw>,
    pub series: FlowSeries,
    pub probes: Vec<ProbeRaw>,
    /// extra keys beside the common ones (histogram, ipdv, responsiveness, ...)
    pub extra: serde_json::Map<String, Value>,
    pub meta_extra: serde_json::Map<String, Value>,
}

impl Output {
    pub fn new(test: &'static str, scenario: Value, t0_mono_ns: u64) -> Output {
        Output {
            test,
            scenario,
            t0_mono_ns,
            duration_s: 0.0,
            cc: None,
            flows: vec![],
            series: FlowSeries::default(),
            probes: vec![],
            extra: Default::default(),
            meta_extra: Default::default(),
        }
    }

    pub fn to_json(&self) -> Value {
        let goodputs: Vec<f64> = self.flows.iter().map(|f| f.goodput_mbps()).collect();
        let mut meta = json!({"t0_monotonic_ns": self.t0_mono_ns, "kernel": crate::sys::kernel_release(),
                              "boot_id": crate::sys::boot_id(), "cc": self.cc, "test": self.test});
        for (k, v) in &self.meta_extra {
            meta[k] = v.clone();
        }
        let (mut pp, mut pt, mut pr) = (vec![], vec![], vec![]);
        for p in &self.probes {
            for (t, r) in p.t.iter().zip(&p.rtt_ms) {
                pp.push(p.id);
                pt.push(*t);
                pr.push(*r);
            }
        }
        let raw = json!({
            "engine": "probe",
            "meta": meta,
            "flows": self.flows.iter().map(|f| f.raw_json()).collect::<Vec<_>>(),
            "links": {},
            "probes": self.probes.iter().map(|p| json!({"id": p.id, "sent": p.sent, "received": p.received,
                                                         "rtt_ms": p.rtt.dist_ms()})).collect::<Vec<_>>(),
            "series": {
                "flows": series_json(&self.series),
                "links": {"direction": [], "t": [], "queue_bytes": [], "qdelay_ms": []},
                "probes": {"probe": pp, "t": pt, "rtt_ms": pr},
            },
        });
        let mut out = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "engine": "probe",
            "scenario": self.scenario,
            "seed": null,
            "duration_s": self.duration_s,
            "flows": self.flows.iter().map(|f| f.summary_json()).collect::<Vec<_>>(),
            "links": {},
            "probes": self.probes.iter().map(|p| json!({"id": p.id, "kind": p.kind,
                "rtt_ms": {"mean": p.rtt.mean / 1e3, "p50": p.rtt.p50 / 1e3, "p95": p.rtt.p95 / 1e3,
                           "p99": p.rtt.p99 / 1e3, "max": p.rtt.max / 1e3},
                "loss": p.loss()})).collect::<Vec<_>>(),
            "total_goodput_mbps": goodputs.iter().sum::<f64>(),
            "jain_fairness": if goodputs.is_empty() { Value::Null } else { json!(jain(&goodputs)) },
            "raw": raw,
        });
        for (k, v) in &self.extra {
            out[k] = v.clone();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_summary_uses_numpy_linear_percentiles_and_population_stddev() {
        let mut v = vec![10.0, 20.0, 30.0, 40.0];
        let l = Latency::of(&mut v);
        assert_eq!((l.min, l.max, l.mean, l.p50), (10.0, 40.0, 25.0, 25.0));
        assert!((l.p90 - 37.0).abs() < 1e-9);
        assert!((l.stddev - 125f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn histogram_buckets_are_ten_per_decade_and_count_every_sample() {
        let mut v = vec![10.0, 11.0, 12.0, 100.0];
        let l = Latency::of(&mut v);
        // 10 and 11 fall in [10, 12.59); 12 too; 100 in [100, 125.9)
        assert_eq!(l.hist.len(), 2);
        assert_eq!(l.hist[0].2, 3);
        assert!((l.hist[0].0 - 10.0).abs() < 1e-9 && (l.hist[0].1 - 10f64.powf(1.1)).abs() < 1e-9);
        assert_eq!(l.hist[1].2, 1);
    }

    #[test]
    fn goodput_is_delivered_bits_over_active_time() {
        let rec = FlowOut { bytes_delivered: 1_250_000, start_s: 1.0, end_s: 2.0, segs_sent: 100, retrans_segs: 2, ..Default::default() };
        let f = FlowRaw { rec, ..Default::default() };
        assert_eq!(f.goodput_mbps(), 10.0);
        assert_eq!(f.retrans_rate(), 0.02);
    }

    #[test]
    fn the_raw_record_is_the_flows_record_with_its_srtt_samples_summarised() {
        let rec = FlowOut { id: 3, bytes_acked: 900, bytes_delivered: 800, completed: true, fct_s: Some(1.5), ..Default::default() };
        let f = FlowRaw { rec, cc: "cubic".into(), rtt_ms: vec![30.0, 10.0, 20.0], ..Default::default() };
        let r = f.raw();
        assert_eq!((r.id, r.bytes_acked, r.bytes_delivered, r.completed, r.fct_s), (3, 900, 800, true, Some(1.5)));
        assert_eq!((r.rtt_ms.n, r.rtt_ms.p50, r.rtt_ms.max), (3, Some(20.0), Some(30.0)));
        // the simulator's own figures stay out of the probe's record
        assert_eq!((r.cc, r.lost_segs), (None, None));
        assert!(f.raw_json().get("cc").is_none());
    }
}
