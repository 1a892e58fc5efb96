//! Distribution summaries shared by every engine, so that "p99" means the same
//! thing whether a number came from the simulator, the emulator or a probe.
//!
//! Percentiles use linear interpolation between closest ranks (numpy's default,
//! `method="linear"`), so Python-side recomputation gives identical values.

/// mean, p50, p95, p99, max of a sample, in the sample's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Dist {
    pub n: usize,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// Percentile `q` in [0, 100] of an ascending-sorted slice (numpy "linear").
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    percentile_at(sorted.len(), |i| sorted[i], q)
}

/// Percentile `q` of `n` > 0 ascending values, `at(i)` the i-th (numpy "linear").
fn percentile_at(n: usize, at: impl Fn(usize) -> f64, q: f64) -> f64 {
    let pos = (q / 100.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    at(lo) + (at(hi) - at(lo)) * frac
}

impl Dist {
    /// Summarise `xs` (sorted in place). Empty input gives NaNs and n = 0.
    pub fn of(xs: &mut [f64]) -> Dist {
        if xs.iter().all(|x| x.is_sign_positive()) {
            // delays and RTTs: with no sign bit set, the bit patterns order as `total_cmp` does
            // (a positive NaN above +inf), and integers sort ~30 % faster (5 M samples)
            xs.sort_unstable_by_key(|x| x.to_bits());
        } else {
            xs.sort_unstable_by(|a, b| a.total_cmp(b));
        }
        dist_sorted(xs.len(), |i| xs[i], xs.iter().copied())
    }
}

/// Durations in integer nanoseconds, kept for a [`Dist`] in milliseconds: the simulator's per-packet queueing
/// delays and per-ACK RTT samples (millions a run at 1 Gbit/s). Held as `u32` while every sample is below
/// 2^32 ns (4.29 s), as `u64` from the first that is not, so a run's samples take half the memory of `f64`
/// milliseconds: half the fresh pages to fault in and half the bytes to sort.
///
/// [`NsSamples::dist_ms`] is bit for bit [`Dist::of`] over the `f64` milliseconds `ns as f64 / 1e6`: that map
/// is non-decreasing on integers below 2^53 (the conversion is exact there and a correctly rounded division by a
/// positive constant keeps order), so the integers' ascending order is an ascending order of the milliseconds, and
/// the mean sums the same values in the same order.
#[derive(Debug, Clone)]
pub enum NsSamples {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Default for NsSamples {
    fn default() -> Self {
        NsSamples::Narrow(Vec::new())
    }
}

impl NsSamples {
    #[inline]
    pub fn push(&mut self, ns: u64) {
        match self {
            NsSamples::Narrow(v) => match u32::try_from(ns) {
                Ok(x) => v.push(x),
                Err(_) => {
                    let mut w: Vec<u64> = Vec::with_capacity(v.capacity().max(v.len() + 1));
                    w.extend(v.iter().map(|&x| x as u64));
                    w.push(ns);
                    *self = NsSamples::Wide(w);
                }
            },
            NsSamples::Wide(v) => v.push(ns),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            NsSamples::Narrow(v) => v.len(),
            NsSamples::Wide(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples in milliseconds, in the order they came (for tests and small callers).
    pub fn ms(&self) -> Vec<f64> {
        match self {
            NsSamples::Narrow(v) => v.iter().map(|&x| x as f64 / 1e6).collect(),
            NsSamples::Wide(v) => v.iter().map(|&x| x as f64 / 1e6).collect(),
        }
    }

    /// The last sample in milliseconds.
    pub fn last_ms(&self) -> Option<f64> {
        match self {
            NsSamples::Narrow(v) => v.last().map(|&x| x as f64 / 1e6),
            NsSamples::Wide(v) => v.last().map(|&x| x as f64 / 1e6),
        }
    }

    /// [`Dist::of`] the samples in milliseconds (sorts them in place).
    pub fn dist_ms(&mut self) -> Dist {
        match self {
            NsSamples::Narrow(v) => {
                v.sort_unstable();
                dist_sorted(v.len(), |i| v[i] as f64 / 1e6, v.iter().map(|&x| x as f64 / 1e6))
            }
            NsSamples::Wide(v) => {
                v.sort_unstable();
                dist_sorted(v.len(), |i| v[i] as f64 / 1e6, v.iter().map(|&x| x as f64 / 1e6))
            }
        }
    }
}

/// The [`Dist`] of `n` ascending values, `at(i)` the i-th, `all` them in order (as `Dist::of` computes it).
fn dist_sorted(n: usize, at: impl Fn(usize) -> f64, all: impl Iterator<Item = f64>) -> Dist {
    if n == 0 {
        return Dist { n: 0, mean: f64::NAN, p50: f64::NAN, p95: f64::NAN, p99: f64::NAN, max: f64::NAN };
    }
    let pct = |q: f64| percentile_at(n, &at, q);
    Dist { n, mean: all.sum::<f64>() / n as f64, p50: pct(50.0), p95: pct(95.0), p99: pct(99.0), max: at(n - 1) }
}

/// Jain's fairness index of a set of throughputs: (Σx)² / (n·Σx²), 1 = fair.
pub fn jain(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        return 1.0;
    }
    s * s / (xs.len() as f64 * s2)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn percentiles_match_numpy_linear() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        let d = Dist::of(&mut v);
        assert_eq!(d.p50, 2.5);
        assert!((d.p95 - 3.85).abs() < 1e-12);
        assert_eq!(d.max, 4.0);
        assert_eq!(d.mean, 2.5);
    }
    #[test]
    fn non_negative_samples_sort_by_their_bits_as_total_cmp_orders_them() {
        let v = vec![3.5, 0.0, f64::INFINITY, 1e-300, 2.0, f64::MIN_POSITIVE, 1e300, 0.0, 7.25];
        let (mut a, mut b) = (v.clone(), v.clone());
        a.sort_unstable_by(|x, y| x.total_cmp(y));
        let d = Dist::of(&mut b);
        assert_eq!(a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), b.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_eq!((d.n, d.max), (9, f64::INFINITY));
        // a negative value (or -0.0) takes the total_cmp path: -0.0 before 0.0
        let mut c = vec![0.0, -1.0, -0.0, 2.0];
        Dist::of(&mut c);
        assert_eq!(c.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), [-1.0f64, -0.0, 0.0, 2.0].map(f64::to_bits));
    }

    #[test]
    fn jain_of_equal_shares_is_one_and_of_one_hog_is_one_over_n() {
        assert!((jain(&[5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[9.0, 0.0, 0.0]) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn nanosecond_samples_give_the_dist_of_their_milliseconds_bit_for_bit_also_once_widened() {
        // a spread of values with ties, sub-ms parts that do not divide evenly, and a 0
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut ns: Vec<u64> = (0..20_000)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % 300_000_001
            })
            .collect();
        ns.extend([0, 7, 7, 1_234_567, 3]);
        for wide in [false, true] {
            let mut xs = ns.clone();
            if wide {
                xs.insert(100, 5_000_000_000); // 5 s: past u32's 4.29 s
            }
            let mut s = NsSamples::default();
            for &x in &xs {
                s.push(x);
            }
            assert_eq!(matches!(s, NsSamples::Wide(_)), wide);
            assert_eq!(s.len(), xs.len());
            let mut ms: Vec<f64> = xs.iter().map(|&x| x as f64 / 1e6).collect();
            assert_eq!(s.ms().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), ms.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            let (a, b) = (Dist::of(&mut ms), s.dist_ms());
            let bits = |d: Dist| [d.mean, d.p50, d.p95, d.p99, d.max].map(f64::to_bits);
            assert_eq!((a.n, bits(a)), (b.n, bits(b)));
        }
        let d = NsSamples::default().dist_ms();
        assert!(d.n == 0 && d.mean.is_nan() && d.max.is_nan());
    }
}
