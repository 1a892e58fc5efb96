//! Reading and checking the `qdisc_params` of the AQMs (codel, fq_codel,
//! red, pie, fq_pie) from a [`QdiscConfig`]. Each AQM file declares its
//! [`ParamSpec`] table; these helpers read a value with that table's default
//! and refuse what the kernel would refuse, naming the key.

use super::{ParamSpec, QdiscConfig};

/// The reader of one qdisc's parameters.
pub(crate) struct Params<'a> {
    cfg: &'a QdiscConfig,
    specs: &'static [ParamSpec],
}

impl<'a> Params<'a> {
    /// Refuses a parameter the table does not know.
    pub fn new(cfg: &'a QdiscConfig, specs: &'static [ParamSpec]) -> Result<Self, String> {
        for (k, v) in &cfg.params {
            if !specs.iter().any(|s| s.name == k) {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(format!(
                    "qdisc_params.{k}: unknown parameter of {} (known: {})",
                    cfg.kind,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ));
            }
            if !v.is_finite() {
                return Err(format!("qdisc_params.{k}: expected a finite number, got {v}"));
            }
        }
        Ok(Params { cfg, specs })
    }

    fn raw(&self, name: &str) -> f64 {
        let d = self.specs.iter().find(|s| s.name == name).map(|s| s.default).unwrap_or(0.0);
        self.cfg.param(name, d)
    }

    /// A whole number in `[min, max]`.
    pub fn int(&self, name: &str, min: u64, max: u64) -> Result<u64, String> {
        let v = self.raw(name);
        if v.fract() != 0.0 || v < min as f64 || v > max as f64 {
            return Err(format!("qdisc_params.{name}: expected a whole number in [{min}, {max}], got {v}"));
        }
        Ok(v as u64)
    }

    /// A duration in ns, in `[min_ns, max_ns]`.
    pub fn time(&self, name: &str, min_ns: u64, max_ns: u64) -> Result<u64, String> {
        let v = self.raw(name);
        if v < min_ns as f64 || v > max_ns as f64 {
            return Err(format!(
                "qdisc_params.{name}: expected a duration in [{}us, {}us], got {}ns",
                min_ns / 1000,
                max_ns / 1000,
                v
            ));
        }
        Ok(v.round() as u64)
    }

    /// 0/1.
    pub fn flag(&self, name: &str) -> Result<bool, String> {
        match self.raw(name) {
            v if v == 0.0 => Ok(false),
            v if v == 1.0 => Ok(true),
            v => Err(format!("qdisc_params.{name}: expected true or false, got {v}")),
        }
    }

    /// A fraction in `[min, max]`.
    pub fn ratio(&self, name: &str, min: f64, max: f64) -> Result<f64, String> {
        let v = self.raw(name);
        if !(min..=max).contains(&v) {
            return Err(format!("qdisc_params.{name}: expected a number in [{min}, {max}], got {v}"));
        }
        Ok(v)
    }
}
