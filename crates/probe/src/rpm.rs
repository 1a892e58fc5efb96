//! Responsiveness (RPM) and the bufferbloat grade: the arithmetic only, no I/O.
//!
//! Source: draft-ietf-ippm-responsiveness-08 (20 October 2025), §4.1 "Test
//! Parameters", §4.2.1.2 "For the TCP-Only Case", §4.3 "Final Algorithm" and
//! §4.3.1 "Confidence of Test-Results"; its grades from §1.2 (RPM classes).
//! The bufferbloat grade is DSLReports' (www.dslreports.com/faq/17930).
//!
//! Model: the client measures three kinds of probe times, in ms:
//! - `tcp_f`: the TCP handshake of a new connection (a *foreign* probe);
//! - `http_f`: a small request/response on that new connection (the draft's
//!   HTTP GET of a 1-byte object; ours is bloatlab's 16-byte probe message);
//! - `http_l`: a small request/response multiplexed on a *loaded* connection
//!   (a *self* probe; ours travels in bloatlab's framed load stream, see
//!   `selfprobe.rs`). Without self probes the draft lets the TCP stack's
//!   smoothed RTT of the loaded connections stand in for it.
//!
//! Then, over the probes of the last [`MAD`] intervals of [`ID_NS`] each:
//!
//! ```text
//! TM(x)                  = mean of x after dropping those above its 95th percentile
//! Foreign_Responsiveness = 60000 / ((TM(tcp_f) + TM(http_f)) / 2)
//! Loaded_Responsiveness  = 60000 / TM(http_l)
//! Responsiveness (RPM)   = (Foreign_Responsiveness + Loaded_Responsiveness) / 2
//! ```
//!
//! Drafts up to -04 (and goresponsiveness, the Go reference client) averaged
//! the *times* instead: RPM = 60000 / (½·foreign ms + ½·self ms). Both are
//! reported ([`Rpm::time_weighted`]); they differ when foreign and self
//! probe times differ (a harmonic against an arithmetic mean).
//!
//! The trimmed mean (TMP = 95 %) keeps the ⌈0.95·n⌉ smallest values: the
//! nearest-rank 95th percentile and all below it (goresponsiveness keeps
//! ⌊0.95·n⌋, dropping one value more whenever 0.95·n is not whole).
//!
//! Stability (§4.3): at each interval i, the moving average of goodput (bytes
//! of intervals i-MAD+1..i over MAD·ID) and the responsiveness over the probes
//! of those intervals; a series is stable at i when the population standard
//! deviation of its last MAD moving values is within SDT of the value at i.
//! Responsiveness is only judged once goodput has been stable. Confidence
//! (§4.3.1): `low` when fewer than MAD intervals ran, `medium` when at least
//! MAD ran but stability was not reached, `high` when it was. The test here
//! runs for the time it was given (it does not stop at stability): the RPM
//! reported is that of the last MAD intervals, and `high` means the stability
//! test holds at that last interval.
//!
//! Constants (draft-08 §4.1 defaults):
//! - [`ID_NS`] = 1 s: interval duration (draft-09's working copy moved it to 5 s).
//! - [`MAD`] = 4 intervals: moving-average distance.
//! - [`TMP`] = 0.95: the trimmed mean keeps the values up to the 95th percentile.
//! - [`SDT`] = 0.05: standard deviation tolerance, relative.
//!
//! Grades of RPM (draft §1.2): ≥ 6000 (≤ 10 ms) excellent, ≥ 1000 (≤ 60 ms)
//! good, ≥ 300 (≤ 200 ms) fair, below poor. DSLReports' bufferbloat grade of
//! the added round-trip time under load (loaded mean minus idle mean):
//! < 5 ms A+, < 30 A, < 60 B, < 200 C, < 400 D, else F.

/// Interval duration (draft-08 §4.1 ID), ns.
pub const ID_NS: u64 = 1_000_000_000;
/// Moving-average distance, intervals (MAD).
pub const MAD: usize = 4;
/// Trimmed-mean percentage (TMP): the share of values kept.
pub const TMP: f64 = 0.95;
/// Standard deviation tolerance (SDT), relative to the current value.
pub const SDT: f64 = 0.05;

/// Single-sided trimmed mean: the mean of the ⌈keep·n⌉ smallest finite
/// values (NaN when there are none).
pub fn trimmed_mean(xs: &[f64], keep: f64) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    // ceil of a product like 0.95 * 20 = 19.000000000000004 must stay 19
    let k = ((v.len() as f64 * keep) - 1e-9).ceil().clamp(1.0, v.len() as f64) as usize;
    v[..k].iter().sum::<f64>() / k as f64
}

/// The draft's 95 % trimmed mean.
pub fn tm(xs: &[f64]) -> f64 {
    trimmed_mean(xs, TMP)
}

/// One responsiveness figure and what it is made of (times in ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rpm {
    pub tm_tcp_f: f64,
    pub tm_http_f: f64,
    pub tm_http_l: f64,
    /// 60000 / mean of the foreign times present
    pub foreign: f64,
    /// 60000 / TM(http_l)
    pub loaded: f64,
    /// the draft's: (foreign + loaded) / 2, or the one that exists
    pub rpm: f64,
    /// drafts ≤ 04 and goresponsiveness: 60000 / (½·foreign ms + ½·self ms)
    pub time_weighted: f64,
}

/// RPM of one set of probes (draft-08 §4.2.1.2, the TCP-only case). A kind
/// without samples is left out: without `http_f` (a server that does not
/// answer the foreign request) the foreign time is TM(tcp_f) alone; without
/// self probes the RPM is the foreign one.
pub fn rpm(tcp_f: &[f64], http_f: &[f64], http_l: &[f64]) -> Rpm {
    let (a, b, l) = (tm(tcp_f), tm(http_f), tm(http_l));
    let fs: Vec<f64> = [a, b].into_iter().filter(|x| x.is_finite()).collect();
    let f_ms = if fs.is_empty() { f64::NAN } else { fs.iter().sum::<f64>() / fs.len() as f64 };
    let (foreign, loaded) = (60_000.0 / f_ms, 60_000.0 / l);
    let both = |x: f64, y: f64, f: fn(f64, f64) -> f64| match (x.is_finite(), y.is_finite()) {
        (true, true) => f(x, y),
        (true, false) => x,
        (false, true) => y,
        _ => f64::NAN,
    };
    Rpm {
        tm_tcp_f: a,
        tm_http_f: b,
        tm_http_l: l,
        foreign,
        loaded,
        rpm: both(foreign, loaded, |x, y| (x + y) / 2.0),
        time_weighted: 60_000.0 / both(f_ms, l, |x, y| (x + y) / 2.0),
    }
}

/// The draft's class of an RPM (§1.2).
pub fn rpm_class(rpm: f64) -> &'static str {
    if !rpm.is_finite() {
        "unknown"
    } else if rpm >= 6000.0 {
        "excellent"
    } else if rpm >= 1000.0 {
        "good"
    } else if rpm >= 300.0 {
        "fair"
    } else {
        "poor"
    }
}

/// DSLReports' bufferbloat grade of an added round-trip time under load (ms).
pub fn bloat_grade(added_ms: f64) -> &'static str {
    match added_ms {
        x if !x.is_finite() => "?",
        x if x < 5.0 => "A+",
        x if x < 30.0 => "A",
        x if x < 60.0 => "B",
        x if x < 200.0 => "C",
        x if x < 400.0 => "D",
        _ => "F",
    }
}

/// Population standard deviation.
fn sd(v: &[f64]) -> f64 {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
}

/// Stable at the last of `v`: the last [`MAD`] values are finite and their
/// standard deviation is within [`SDT`] of the last.
pub fn stable(v: &[f64]) -> bool {
    if v.len() < MAD {
        return false;
    }
    let w = &v[v.len() - MAD..];
    w.iter().all(|x| x.is_finite()) && sd(w) <= SDT * w[MAD - 1].abs()
}

/// Probes of one phase: (issue time since the phase began, s; ms).
#[derive(Debug, Default, Clone)]
pub struct Samples {
    pub tcp_f: Vec<(f64, f64)>,
    pub http_f: Vec<(f64, f64)>,
    pub http_l: Vec<(f64, f64)>,
}

/// The draft's evaluation of one loaded phase.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// RPM over the probes of the last MAD intervals
    pub last: Rpm,
    /// intervals that ran in full
    pub intervals: usize,
    /// per interval i ≥ MAD-1: RPM over the probes of intervals i-MAD+1..=i
    pub moving_rpm: Vec<f64>,
    /// per interval i ≥ MAD-1: goodput (bit/s) over intervals i-MAD+1..=i
    pub moving_goodput_bps: Vec<f64>,
    /// first interval (end time, s since the phase began) at which goodput was stable
    pub goodput_stable_at_s: Option<f64>,
    /// first interval end (s) at which responsiveness was stable, goodput stable before or then
    pub rpm_stable_at_s: Option<f64>,
    /// "low" / "medium" / "high" (§4.3.1)
    pub confidence: &'static str,
}

/// Evaluate a phase of `dur_s` seconds: `samples` (times since the phase
/// began) and `bytes_by_interval[i]` the bytes the load moved in interval i.
pub fn evaluate(samples: &Samples, bytes_by_interval: &[u64], dur_s: f64) -> Verdict {
    let id_s = ID_NS as f64 / 1e9;
    let n = ((dur_s / id_s) + 1e-9).floor() as usize;
    let pick = |v: &[(f64, f64)], a: f64, b: f64| -> Vec<f64> { v.iter().filter(|x| x.0 >= a && x.0 < b).map(|x| x.1).collect() };
    let window = |i: usize| {
        let (a, b) = ((i + 1).saturating_sub(MAD) as f64 * id_s, (i + 1) as f64 * id_s);
        rpm(&pick(&samples.tcp_f, a, b), &pick(&samples.http_f, a, b), &pick(&samples.http_l, a, b))
    };
    let mut moving_rpm = Vec::new();
    let mut moving_goodput_bps = Vec::new();
    let (mut g_at, mut r_at) = (None, None);
    for i in (MAD - 1)..n {
        moving_rpm.push(window(i).rpm);
        let bytes: u64 = (i + 1 - MAD..=i).map(|k| bytes_by_interval.get(k).copied().unwrap_or(0)).sum();
        moving_goodput_bps.push(bytes as f64 * 8.0 / (MAD as f64 * id_s));
        let end = (i + 1) as f64 * id_s;
        if g_at.is_none() && stable(&moving_goodput_bps) {
            g_at = Some(end);
        }
        if g_at.is_some() && r_at.is_none() && stable(&moving_rpm) {
            r_at = Some(end);
        }
    }
    let last = if n >= 1 { window(n - 1) } else { rpm(&[], &[], &[]) };
    let confidence = if n < MAD {
        "low"
    } else if g_at.is_some() && stable(&moving_rpm) {
        "high"
    } else {
        "medium"
    };
    Verdict { last, intervals: n, moving_rpm, moving_goodput_bps, goodput_stable_at_s: g_at, rpm_stable_at_s: r_at, confidence }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_mean_keeps_the_values_up_to_the_nearest_rank_95th_percentile() {
        // 20 values: P95 is the 19th, so 1000 is dropped and the mean of 1..=19 is 10
        let mut v: Vec<f64> = (1..=19).map(|x| x as f64).collect();
        v.push(1000.0);
        assert_eq!(tm(&v), 10.0);
        // 10 values: P95 is the 10th (ceil 9.5), nothing is dropped
        let v: Vec<f64> = (1..=10).map(|x| x as f64).collect();
        assert_eq!(tm(&v), 5.5);
        // 21 values: keep ceil(19.95) = 20
        let v: Vec<f64> = (1..=21).map(|x| x as f64).collect();
        assert_eq!(tm(&v), 10.5);
        assert!(tm(&[]).is_nan());
        assert_eq!(tm(&[f64::NAN, 4.0]), 4.0);
    }

    #[test]
    fn rpm_averages_the_foreign_and_the_loaded_responsiveness_as_draft_08_does() {
        // foreign (20 + 40) / 2 = 30 ms -> 2000; loaded 60 ms -> 1000; RPM 1500
        let r = rpm(&[20.0; 10], &[40.0; 10], &[60.0; 10]);
        assert_eq!((r.foreign, r.loaded, r.rpm), (2000.0, 1000.0, 1500.0));
        // the older drafts' weighted mean of times: 60000 / (15 + 30) = 1333.33
        assert_eq!(r.time_weighted, 60_000.0 / 45.0);
        assert_eq!(rpm_class(r.rpm), "good");
        // a steady 20 ms everywhere is 3000 either way
        let r = rpm(&[20.0; 5], &[20.0; 5], &[20.0; 5]);
        assert_eq!((r.rpm, r.time_weighted), (3000.0, 3000.0));
    }

    #[test]
    fn a_missing_kind_of_probe_is_left_out_not_counted_as_zero() {
        // an older server answers no foreign request: foreign = TM(tcp_f) alone
        let r = rpm(&[30.0], &[], &[60.0]);
        assert_eq!((r.foreign, r.rpm), (2000.0, 1500.0));
        // no self probes: the foreign RPM
        assert_eq!(rpm(&[30.0], &[30.0], &[]).rpm, 2000.0);
        assert!(rpm(&[], &[], &[]).rpm.is_nan());
    }

    #[test]
    fn the_rpm_classes_and_bufferbloat_grades_follow_their_bands() {
        assert_eq!([6000.0, 5999.0, 1000.0, 300.0, 299.9, f64::NAN].map(rpm_class), ["excellent", "good", "good", "fair", "poor", "unknown"]);
        assert_eq!([0.0, 4.99, 5.0, 29.9, 30.0, 59.9, 60.0, 199.0, 200.0, 399.0, 400.0, f64::NAN].map(bloat_grade),
                   ["A+", "A+", "A", "A", "B", "B", "C", "C", "D", "D", "F", "?"]);
    }

    #[test]
    fn stability_needs_mad_values_within_five_percent_of_the_last() {
        assert!(!stable(&[100.0, 100.0, 100.0]));
        assert!(stable(&[50.0, 100.0, 100.0, 100.0, 100.0]));
        // 96, 100, 104, 100: sd = 2.83 <= 5
        assert!(stable(&[96.0, 100.0, 104.0, 100.0]));
        // 90, 100, 110, 100: sd = 7.07 > 5
        assert!(!stable(&[90.0, 100.0, 110.0, 100.0]));
    }

    #[test]
    fn a_steady_phase_is_stable_with_high_confidence_and_a_short_one_low() {
        // 8 s: one foreign and one self probe of 50 ms every 100 ms, 1 MB every second
        let mut s = Samples::default();
        for k in 0..80 {
            let t = k as f64 * 0.1;
            s.tcp_f.push((t, 50.0));
            s.http_f.push((t, 50.0));
            s.http_l.push((t + 0.05, 50.0));
        }
        let v = evaluate(&s, &[1_000_000; 8], 8.0);
        assert_eq!(v.intervals, 8);
        assert_eq!(v.last.rpm, 1200.0);
        assert_eq!(v.moving_rpm.len(), 5);
        assert_eq!(v.moving_goodput_bps[0], 8e6);
        // goodput stable once 4 moving averages exist (interval 7 ends at 7 s); RPM then too
        assert_eq!((v.goodput_stable_at_s, v.rpm_stable_at_s, v.confidence), (Some(7.0), Some(7.0), "high"));
        let v = evaluate(&s, &[1_000_000; 3], 3.0);
        assert_eq!((v.intervals, v.confidence), (3, "low"));
        assert!(v.moving_rpm.is_empty());
        // the last window is what the figure is made of: a queue that grows through the phase
        let mut g = Samples::default();
        for k in 0..80 {
            let t = k as f64 * 0.1;
            g.tcp_f.push((t, 10.0 + 10.0 * t));
            g.http_l.push((t, 10.0 + 10.0 * t));
        }
        let v = evaluate(&g, &[1_000_000; 8], 8.0);
        assert_eq!(v.confidence, "medium");
        // window 4 s..8 s: times 50..89 ms, TM drops the top 2 of 40 (ceil 38): mean of 50..87 = 68.5 ms
        assert!((v.last.tm_tcp_f - 68.5).abs() < 1e-9, "{}", v.last.tm_tcp_f);
    }
}
