//! The parameter tables of the qdiscs and the one reader all of them use.
//!
//! Every qdisc file declares its `PARAMS: &[ParamSpec]`: each parameter's
//! scenario key (`[link.down.qdisc_params] name = ...`), unit, Linux default,
//! accepted range and meaning. That table is the single source: the Python
//! scenario layer reads it (`_native.qdiscs()`) to parse units, `bloatlab
//! qdiscs` prints it, and [`Params`] reads a [`QdiscConfig`] through it, so
//! that a key the table does not name, a value out of its range or of the
//! wrong shape is refused with the key named, and a parameter left out takes
//! the table's default (no qdisc repeats a default in its code).
//!
//! Ranges are those the kernel (or tc) accepts where it checks them (times
//! that tc carries as a u32 of µs, CAKE's `overhead` -64..256, fq_codel's
//! `flows` 1..65536, ...); where Linux takes any u32/u64, so does the table.

use super::QdiscConfig;

/// The unit of a qdisc parameter, which tells the scenario layer how to
/// parse and validate it (`"5ms"` → ns, `"1514B"` → bytes, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A duration, stored in ns.
    Time,
    /// A size, stored in bytes.
    Size,
    /// A whole number (packets, flows, ...).
    Count,
    /// true/false, stored as 1/0.
    Bool,
    /// A fraction in [0, 1] (probabilities, weights).
    Ratio,
    /// A bit rate, stored in bit/s.
    Rate,
    /// A choice among named options, stored as the option's index in `choices`.
    Choice(&'static [&'static str]),
}

/// tc carries most times as a u32 of µs: the largest time it can express, ns.
pub const MAX_TC_TIME_NS: f64 = u32::MAX as f64 * 1000.0;
/// The largest u32, for counts and sizes Linux keeps in a u32.
pub const U32_MAX: f64 = u32::MAX as f64;
/// The largest u64 (any rate or size Linux keeps in a u64).
pub const U64_MAX: f64 = u64::MAX as f64;

/// One documented parameter of a qdisc: its scenario key, unit, Linux
/// default and accepted range (in base units: ns, bytes, bit/s, 0/1, index)
/// and meaning. Build with the constructors, which fix what a kind implies
/// (a bool is 0..1, a choice 0..n-1, a ratio 0..1).
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    /// Default in base units (ns, bytes, bit/s, 0/1, index).
    pub default: f64,
    /// Smallest and largest accepted value, in base units, inclusive.
    pub min: f64,
    pub max: f64,
    pub doc: &'static str,
}

impl ParamSpec {
    const fn new(name: &'static str, kind: ParamKind, default: f64, min: f64, max: f64, doc: &'static str) -> Self {
        ParamSpec { name, kind, default, min, max, doc }
    }
    /// A whole number in `[min, max]`.
    pub const fn count(name: &'static str, default: f64, min: f64, max: f64, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Count, default, min, max, doc)
    }
    /// A whole number of bytes in `[min, max]`.
    pub const fn size(name: &'static str, default: f64, min: f64, max: f64, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Size, default, min, max, doc)
    }
    /// A duration in ns in `[min, max]`.
    pub const fn time(name: &'static str, default: f64, min: f64, max: f64, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Time, default, min, max, doc)
    }
    /// A whole number of bit/s in `[min, max]`.
    pub const fn rate(name: &'static str, default: f64, min: f64, max: f64, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Rate, default, min, max, doc)
    }
    /// A fraction in [0, 1].
    pub const fn ratio(name: &'static str, default: f64, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Ratio, default, 0.0, 1.0, doc)
    }
    /// true or false.
    pub const fn flag(name: &'static str, default: bool, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Bool, if default { 1.0 } else { 0.0 }, 0.0, 1.0, doc)
    }
    /// One of `choices`, stored as its index; `default` is an index.
    pub const fn choice(name: &'static str, choices: &'static [&'static str], default: usize, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Choice(choices), default as f64, 0.0, (choices.len() - 1) as f64, doc)
    }

    /// `v` if this parameter accepts it, else what was expected (without the key).
    pub fn check(&self, v: f64) -> Result<f64, String> {
        let (lo, hi) = (self.min, self.max);
        let whole = v.fract() == 0.0;
        let inside = v.is_finite() && (lo..=hi).contains(&v);
        let ok = match self.kind {
            ParamKind::Time | ParamKind::Ratio => inside,
            _ => inside && whole,
        };
        if ok {
            return Ok(v);
        }
        Err(match self.kind {
            ParamKind::Time => format!("expected a duration in [{}us, {}us], got {v}ns", lo / 1000.0, hi / 1000.0),
            ParamKind::Size => format!("expected a whole number of bytes in [{lo}, {hi}], got {v}"),
            ParamKind::Count => format!("expected a whole number in [{lo}, {hi}], got {v}"),
            ParamKind::Rate => format!("expected a whole number of bit/s in [{lo}, {hi}], got {v}"),
            ParamKind::Ratio => format!("expected a number in [{lo}, {hi}], got {v}"),
            ParamKind::Bool => format!("expected true or false, got {v}"),
            ParamKind::Choice(names) => format!("expected one of {}, got index {v}", names.join(", ")),
        })
    }
}

/// One qdisc's parameters as a scenario gives them, checked against its
/// table: every value read through it is either one the scenario gave and
/// the table accepts, or the table's default.
#[derive(Debug, Clone)]
pub struct Params {
    specs: &'static [ParamSpec],
    values: Vec<f64>,
}

impl Params {
    /// Read `cfg.params` through `specs`: a key the table does not know, or
    /// a value it does not accept, is refused naming `qdisc_params.KEY`.
    pub fn new(cfg: &QdiscConfig, specs: &'static [ParamSpec]) -> Result<Self, String> {
        let mut p = Params::defaults(specs);
        for (k, v) in &cfg.params {
            let Some(i) = specs.iter().position(|s| s.name == k) else {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(format!(
                    "qdisc_params.{k}: unknown parameter of {} (known: {})",
                    cfg.kind,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ));
            };
            p.values[i] = specs[i].check(*v).map_err(|e| format!("qdisc_params.{k}: {e}"))?;
        }
        Ok(p)
    }

    /// Every parameter at the table's default.
    pub fn defaults(specs: &'static [ParamSpec]) -> Self {
        Params { specs, values: specs.iter().map(|s| s.default).collect() }
    }

    /// The value of parameter `name`, in base units.
    ///
    /// Panics if the table has no such parameter: that is a qdisc reading a
    /// key it did not declare, a bug that the tests building every qdisc
    /// from its defaults find.
    pub fn get(&self, name: &str) -> f64 {
        match self.specs.iter().position(|s| s.name == name) {
            Some(i) => self.values[i],
            None => panic!("a qdisc reads parameter \"{name}\", which its table does not declare"),
        }
    }

    /// A whole-number parameter whose range fits a u32.
    pub fn u32(&self, name: &str) -> u32 {
        self.get(name) as u32
    }

    /// A whole-number parameter (count, size, rate), or a duration in ns rounded to the nearest.
    pub fn u64(&self, name: &str) -> u64 {
        self.get(name).round() as u64
    }

    /// A whole-number parameter whose range may be negative (CAKE's `overhead`).
    pub fn i32(&self, name: &str) -> i32 {
        self.get(name) as i32
    }

    /// A boolean parameter.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) != 0.0
    }

    /// The index of a choice.
    pub fn index(&self, name: &str) -> usize {
        self.get(name) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[ParamSpec] = &[
        ParamSpec::time("target", 5e6, 1000.0, MAX_TC_TIME_NS, "t"),
        ParamSpec::count("limit", 1000.0, 1.0, U32_MAX, "l"),
        ParamSpec::flag("ecn", false, "e"),
        ParamSpec::choice("mode", &["a", "b", "c"], 2, "m"),
        ParamSpec::count("overhead", 0.0, -64.0, 256.0, "o"),
    ];

    fn cfg(params: &[(&str, f64)]) -> QdiscConfig {
        QdiscConfig { kind: "q".into(), params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(), ..Default::default() }
    }

    #[test]
    fn what_the_scenario_leaves_out_is_the_tables_default() {
        let p = Params::new(&cfg(&[("limit", 7.0)]), T).unwrap();
        assert_eq!((p.u64("target"), p.u32("limit"), p.flag("ecn"), p.index("mode"), p.i32("overhead")), (5_000_000, 7, false, 2, 0));
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_known_ones_listed() {
        let e = Params::new(&cfg(&[("foo", 1.0)]), T).unwrap_err();
        assert_eq!(e, "qdisc_params.foo: unknown parameter of q (known: target, limit, ecn, mode, overhead)");
        let e = Params::new(&cfg(&[("foo", 1.0)]), &[]).unwrap_err();
        assert_eq!(e, "qdisc_params.foo: unknown parameter of q (known: none)");
    }

    #[test]
    fn values_out_of_range_or_of_the_wrong_shape_are_refused_by_key() {
        for (k, v, msg) in [
            ("target", 999.0, "qdisc_params.target: expected a duration in [1us, 4294967295us], got 999ns"),
            ("limit", 0.0, "qdisc_params.limit: expected a whole number in [1, 4294967295], got 0"),
            ("limit", 2.5, "qdisc_params.limit: expected a whole number in [1, 4294967295], got 2.5"),
            ("limit", f64::NAN, "qdisc_params.limit: expected a whole number in [1, 4294967295], got NaN"),
            ("ecn", 2.0, "qdisc_params.ecn: expected true or false, got 2"),
            ("mode", 3.0, "qdisc_params.mode: expected one of a, b, c, got index 3"),
            ("overhead", -65.0, "qdisc_params.overhead: expected a whole number in [-64, 256], got -65"),
        ] {
            assert_eq!(Params::new(&cfg(&[(k, v)]), T).unwrap_err(), msg);
        }
        // a duration need not be whole: it is rounded when read
        assert_eq!(Params::new(&cfg(&[("target", 1000.6)]), T).unwrap().u64("target"), 1001);
        assert_eq!(Params::new(&cfg(&[("overhead", -64.0)]), T).unwrap().i32("overhead"), -64);
    }

    #[test]
    #[should_panic(expected = "which its table does not declare")]
    fn reading_an_undeclared_parameter_is_a_bug_caught_in_tests() {
        Params::defaults(T).get("interval");
    }
}
