//! The language's values: each checker takes a value as written in the TOML
//! file and gives it in base units (ns, bytes, bit/s), or the message saying
//! what form was expected (the caller adds the key path). Unit strings are
//! read by the one grammar of `bloatlab_core::units`.

use super::value::{echo, py_repr};
use bloatlab_core::time::Nanos;
use bloatlab_core::units::{self, Buffer, MAX_INT, PACKET_BYTES};
use serde_json::Value;

pub type Check<T> = Result<T, String>;

/// The application's write clock: on/off periods are whole multiples of it.
pub const APP_TICK_NS: Nanos = crate::scenario::APP_TICK_NS;

/// DiffServ code point names (RFC 2474 class selectors, RFC 2597 assured
/// forwarding AFxy = 8x + 2y, RFC 3246 EF, RFC 5865 VOICE-ADMIT, RFC 8622 LE).
pub fn dscp_names() -> Vec<(String, u8)> {
    let mut v: Vec<(String, u8)> = vec![("BE".into(), 0), ("DF".into(), 0), ("LE".into(), 1), ("EF".into(), 46), ("VA".into(), 44)];
    v.extend((0..8).map(|n| (format!("CS{n}"), 8 * n)));
    for x in 1..5u8 {
        for y in 1..4u8 {
            v.push((format!("AF{x}{y}"), 8 * x + 2 * y));
        }
    }
    v
}

fn is_int(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) if !n.is_f64() => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)),
        _ => None,
    }
}

fn text<'a>(v: &'a Value, example: &str, what: &str) -> Check<&'a str> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(format!("expected {what} like \"{example}\", got {}", echo(other))),
    }
}

pub fn string(v: &Value) -> Check<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("expected a string, got {}", py_repr(other))),
    }
}

pub fn choice(v: &Value, choices: &[&str]) -> Check<String> {
    let s = string(v)?;
    if choices.contains(&s.as_str()) {
        Ok(s)
    } else {
        Err(format!("unknown value \"{s}\" (expected one of: {})", choices.join(", ")))
    }
}

pub fn whole(v: &Value, lo: i128, hi: Option<i128>) -> Check<i128> {
    let Some(n) = is_int(v) else {
        return Err(format!("expected a whole number, got {}", py_repr(v)));
    };
    if n < lo || hi.is_some_and(|h| n > h) {
        let range = match hi {
            None => format!(">= {lo}"),
            Some(h) => format!("in [{lo}, {h}]"),
        };
        return Err(format!("expected a whole number {range}, got {n}"));
    }
    Ok(n)
}

pub fn boolean(v: &Value) -> Check<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(format!("expected true or false, got {}", py_repr(other))),
    }
}

pub fn rate(v: &Value) -> Check<u64> {
    units::parse_rate(text(v, "100Mbit", "a rate")?)
}

pub fn duration(v: &Value) -> Check<Nanos> {
    units::parse_duration(text(v, "10ms", "a duration")?)
}

pub fn positive_duration(v: &Value) -> Check<Nanos> {
    let ns = duration(v)?;
    if ns == 0 {
        return Err(format!("expected a positive duration, got \"{}\"", echo(v)));
    }
    Ok(ns)
}

pub fn size(v: &Value) -> Check<u64> {
    if let Some(n) = is_int(v) {
        if n < 0 {
            return Err(format!("expected a non-negative size, got {n}"));
        }
        if n > MAX_INT as i128 {
            return Err(format!("the size {n} is too large (the engines hold at most {:.3e} base units)", MAX_INT as f64));
        }
        return Ok(n as u64);
    }
    units::parse_size(text(v, "375KB", "a size")?)
}

pub fn positive_size(v: &Value) -> Check<u64> {
    let s = size(v)?;
    if s == 0 {
        return Err(format!("expected a positive size, got \"{}\"", echo(v)));
    }
    Ok(s)
}

pub fn ratio(v: &Value) -> Check<f64> {
    match v {
        Value::Bool(_) => Err(format!("expected a fraction like \"1%\" or 0.01, got {}", py_repr(v))),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if !(0.0..=1.0).contains(&x) {
                return Err(format!("expected a value in [0, 1] (0%..100%), got {}", py_repr(v)));
            }
            Ok(x)
        }
        other => units::parse_ratio(text(other, "1%", "a fraction")?),
    }
}

/// A buffer: `("bytes", n)`, `("pkts", n)` or `("bdp", x)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BufferAmount {
    Bytes(u64),
    Pkts(u64),
    Bdp(f64),
}

pub fn buffer(v: &Value) -> Check<BufferAmount> {
    if let Some(n) = is_int(v) {
        if n <= 0 {
            return Err(format!("expected a positive buffer, got \"{n}\""));
        }
        return Ok(BufferAmount::Bytes(size(v)?));
    }
    let Value::String(s) = v else {
        return Err(format!("expected a buffer like \"375KB\", \"1000pkt\" or \"1bdp\", got {}", echo(v)));
    };
    Ok(match units::parse_buffer(s)? {
        Buffer::Bytes(b) => BufferAmount::Bytes(b),
        Buffer::Packets(p) => BufferAmount::Pkts(p),
        Buffer::Bdp(x) => BufferAmount::Bdp(x),
    })
}

/// Packets or bytes, never BDPs (a device queue, the WiFi interface's buffer).
pub fn buffer_no_bdp(v: &Value, example: &str) -> Check<BufferAmount> {
    match buffer(v)? {
        BufferAmount::Bdp(_) => Err(format!("expected packets or bytes like {example}")),
        b => Ok(b),
    }
}

/// A drop/error probability: `"1%"` or a bare fraction `0.01`. A bare number
/// of 1 or more is refused: `loss = 1` almost always means "1 %", and
/// silently dropping every packet helps nobody.
pub fn loss(v: &Value) -> Check<f64> {
    let bare = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s.trim().chars().last().is_some_and(|c| c.is_ascii_digit()) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    if let Some(x) = bare {
        if x >= 1.0 {
            let g = general(x);
            let pct = general(x * 100.0);
            return Err(format!("a bare {g} would mean {pct} % loss; write \"{g}%\" for {g} percent (or \"100%\" if you mean it)"));
        }
        if let Value::String(_) = v {
            return ratio(&serde_json::json!(x));
        }
    }
    ratio(v)
}

/// A number as Python's `{:g}` writes it (6 significant digits, no trailing zeros).
pub fn general(x: f64) -> String {
    significant(x, 6)
}

/// A number as Python's `{:.Pg}` writes it: `p` significant digits, the
/// exponent form where the rounded value's exponent is below -4 or at least
/// `p`, trailing zeros dropped.
pub fn significant(x: f64, p: usize) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let p = p.max(1);
    let rounded = format!("{:.*e}", p - 1, x);
    let (m, e) = rounded.split_once('e').unwrap_or((&rounded, "0"));
    let exp = e.parse::<i32>().unwrap_or(0);
    let trim = |t: &str| if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_string() } else { t.to_string() };
    if exp < -4 || exp >= p as i32 {
        let (sign, d) = if exp < 0 { ('-', -exp) } else { ('+', exp) };
        return format!("{}e{sign}{d:02}", trim(m));
    }
    trim(&format!("{:.*}", (p as i32 - 1 - exp).max(0) as usize, x))
}

/// A plain number (not a boolean) in `[lo, hi]`.
pub fn number_in(v: &Value, lo: f64, hi: f64, what: &str) -> Check<f64> {
    match v {
        Value::Number(n) if n.as_f64().is_some_and(|x| (lo..=hi).contains(&x)) => Ok(n.as_f64().unwrap_or(lo)),
        other => Err(format!("expected {what}, got {}", py_repr(other))),
    }
}

pub fn dscp(v: &Value) -> Check<u8> {
    if let Value::String(s) = v {
        let up = s.trim().to_uppercase();
        if let Some((_, n)) = dscp_names().into_iter().find(|(name, _)| *name == up) {
            return Ok(n);
        }
    }
    if let Some(n) = is_int(v) {
        if (0..=63).contains(&n) {
            return Ok(n as u8);
        }
    }
    Err(format!("expected a DiffServ code point 0-63 or a name (EF, CS0-CS7, AF11-AF43, VA, LE), got {}", echo(v)))
}

/// An on/off period: the application writes every 10 ms, so a multiple of it.
pub fn app_period(v: &Value, positive: bool) -> Check<Nanos> {
    let ns = if positive { positive_duration(v)? } else { duration(v)? };
    if ns % APP_TICK_NS != 0 {
        return Err(format!("the application writes every 10 ms: give a multiple of 10ms, got \"{}\"", echo(v)));
    }
    Ok(ns)
}

/// A link's rate, or `"trace:FILE"` (a Mahimahi trace, read when the scenario is resolved).
#[derive(Debug, Clone, PartialEq)]
pub enum LinkRate {
    Rate(u64),
    Trace(String),
}

pub fn link_rate(v: &Value) -> Check<LinkRate> {
    if let Value::String(s) = v {
        if let Some(file) = s.strip_prefix("trace:") {
            return Ok(LinkRate::Trace(file.to_string()));
        }
    }
    rate(v).map(LinkRate::Rate)
}

/// A UDP payload of `lo..=hi` bytes.
fn udp_payload(v: &Value, lo: u64, hi: u64) -> Check<u64> {
    let s = size(v)?;
    if !(lo..=hi).contains(&s) {
        return Err(format!("expected a UDP payload of {lo}..{hi} bytes, got {s}"));
    }
    Ok(s)
}

pub fn probe_size(v: &Value) -> Check<u64> {
    udp_payload(v, 16, 1472)
}

pub fn train_size(v: &Value) -> Check<u64> {
    let (lo, hi) = crate::scenario::TRAIN_SIZE_BYTES;
    udp_payload(v, lo as u64, hi as u64)
}

pub fn burst_size(v: &Value) -> Check<u64> {
    let b = size(v)?;
    if b < PACKET_BYTES {
        return Err(format!("expected at least one full packet ({PACKET_BYTES} B), got {b} B"));
    }
    Ok(b)
}

pub fn object_size(v: &Value) -> Check<u64> {
    let s = size(v)?;
    if s == 0 {
        return Err(format!("expected a positive size, got {}", py_repr(v)));
    }
    Ok(s)
}

/// A station's PHY: `"mcs15"` (HT20, long GI) or a rate like `"144.4Mbit"` (>= 1 Mbit/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phy {
    Mcs(u32),
    Rate(u64),
    /// An 802.11b station: "dsss1", "dsss2" (clause 15), "cck5.5", "cck11" (clause 16), bit/s.
    Dsss(u64),
}

/// The 802.11b rates as a scenario names them, with their bit/s (the core's `airtime::DSSS_RATES`, in order).
pub const DSSS_PHYS: [(&str, u64); 4] = {
    let r = bloatlab_core::wifi::airtime::DSSS_RATES;
    [("dsss1", r[0]), ("dsss2", r[1]), ("cck5.5", r[2]), ("cck11", r[3])]
};

pub fn station_phy(v: &Value) -> Check<Phy> {
    if let Value::String(s) = v {
        let t = s.trim().to_lowercase();
        if let Some(&(_, r)) = DSSS_PHYS.iter().find(|(n, _)| *n == t) {
            return Ok(Phy::Dsss(r));
        }
        if t.starts_with("dsss") || t.starts_with("cck") {
            return Err(format!("expected an 802.11b rate \"dsss1\", \"dsss2\", \"cck5.5\" or \"cck11\", got \"{s}\""));
        }
        if let Some(idx) = t.strip_prefix("mcs") {
            return match idx.parse::<u32>() {
                Ok(i) if i <= 15 && idx.chars().all(|c| c.is_ascii_digit()) => Ok(Phy::Mcs(i)),
                _ => Err(format!("expected an HT MCS \"mcs0\"..\"mcs15\" or a rate like \"144.4Mbit\", got \"{s}\"")),
            };
        }
    }
    let r = rate(v).map_err(|_| format!("expected a PHY rate like \"144.4Mbit\" or an MCS like \"mcs15\", got {}", py_repr(v)))?;
    if r < 1_000_000 {
        return Err(format!("expected a PHY rate of at least 1Mbit, got \"{}\"", echo(v)));
    }
    Ok(Phy::Rate(r))
}

pub fn mpdu_error(v: &Value) -> Check<f64> {
    let e = loss(v)?;
    if e >= 1.0 {
        return Err(format!("expected an error rate below 100%, got {}", py_repr(v)));
    }
    Ok(e)
}

/// An AQL limit (`[wifi.aql]`): a positive duration in whole microseconds,
/// at most 2^32 - 1 µs (mac80211 counts airtime in µs and keeps its limits
/// in 32 bits).
pub fn aql_limit(v: &Value) -> Check<u64> {
    let ns = positive_duration(v)?;
    if ns % 1_000 != 0 {
        return Err(format!("expected whole microseconds (mac80211 counts airtime in µs), got \"{}\"", echo(v)));
    }
    let us = ns / 1_000;
    if us > u32::MAX as u64 {
        return Err(format!("expected at most 4294.967295s (mac80211 keeps its limits in 32 bits of µs), got \"{}\"", echo(v)));
    }
    Ok(us)
}

pub fn station_weight(v: &Value) -> Check<f64> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x > 0.0 && x <= 1000.0 {
                return Ok(x);
            }
            Err(format!("expected a number in (0, 1000], got {}", py_repr(v)))
        }
        other => Err(format!("expected a number in (0, 1000], got {}", py_repr(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_value_in_base_units_or_the_expected_form() {
        assert_eq!(duration(&json!("10ms")), Ok(10_000_000));
        assert_eq!(positive_duration(&json!("0s")), Err("expected a positive duration, got \"0s\"".into()));
        assert_eq!(duration(&json!(5)), Err("expected a duration like \"10ms\", got 5".into()));
        assert_eq!(size(&json!(1500)), Ok(1500));
        assert_eq!(size(&json!("1.5KB")), Ok(1500));
        assert_eq!(whole(&json!(3.0), 1, None), Err("expected a whole number, got 3.0".into()));
        assert_eq!(whole(&json!(0), 1, Some(10)), Err("expected a whole number in [1, 10], got 0".into()));
        assert_eq!(buffer(&json!("2bdp")), Ok(BufferAmount::Bdp(2.0)));
        assert_eq!(buffer(&json!(3000)), Ok(BufferAmount::Bytes(3000)));
        assert_eq!(dscp(&json!("ef")), Ok(46));
        assert_eq!(dscp(&json!("AF41")), Ok(34));
        assert_eq!(station_phy(&json!("mcs15")), Ok(Phy::Mcs(15)));
        assert_eq!(station_phy(&json!("DSSS1")), Ok(Phy::Dsss(1_000_000)));
        assert_eq!(station_phy(&json!("cck5.5")), Ok(Phy::Dsss(5_500_000)));
        assert_eq!(station_phy(&json!("dsss11")), Err("expected an 802.11b rate \"dsss1\", \"dsss2\", \"cck5.5\" or \"cck11\", got \"dsss11\"".into()));
        assert_eq!(link_rate(&json!("trace:x.up")), Ok(LinkRate::Trace("x.up".into())));
    }

    #[test]
    fn a_bare_loss_of_one_or_more_is_refused_as_a_percent_typo() {
        assert_eq!(loss(&json!(0.01)), Ok(0.01));
        assert_eq!(loss(&json!("1%")), Ok(0.01));
        assert_eq!(loss(&json!("0.02")), Ok(0.02));
        assert_eq!(loss(&json!(1)), Err("a bare 1 would mean 100 % loss; write \"1%\" for 1 percent (or \"100%\" if you mean it)".into()));
        assert_eq!(loss(&json!("2.5")).unwrap_err(), "a bare 2.5 would mean 250 % loss; write \"2.5%\" for 2.5 percent (or \"100%\" if you mean it)");
    }

    #[test]
    fn general_writes_numbers_as_python_g_does() {
        assert_eq!(general(1.0), "1");
        assert_eq!(general(2.5), "2.5");
        assert_eq!(general(250.0), "250");
        assert_eq!(general(1e7), "1e+07");
        assert_eq!(general(0.0001), "0.0001");
    }
}

#[cfg(test)]
mod significant_tests {
    use super::significant;

    #[test]
    fn significant_digits_as_python_formats_them() {
        // each pair checked against Python: f"{x:.{p}g}"
        for (x, p, py) in [
            (0.00012345, 3, "0.000123"),
            (0.000012345, 3, "1.23e-05"),
            (999.5, 3, "1e+03"),
            (123456.0, 6, "123456"),
            (1234567.0, 6, "1.23457e+06"),
            (4294967.296, 6, "4.29497e+06"),
            (-2.5, 6, "-2.5"),
            (100.0, 6, "100"),
        ] {
            assert_eq!(significant(x, p), py, "{x} .{p}g");
        }
    }
}
