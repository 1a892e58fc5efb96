//! The unit grammar of the scenario language, written once. The Python
//! scenario layer calls these functions through the native module
//! (`python/bloatlab/units.py`), and the probe's and the emulator's command
//! lines call them directly, so `"1500"`, `"10 ms"` or `"1 BDP"` mean the same
//! thing everywhere. `docs/scenario.md` is the reference.
//!
//! Grammar: optional spaces, a number (`[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?`),
//! optional spaces, a unit (letters, `µ`, `%`, `/`), optional spaces; at most
//! [`TEXT_MAX`] characters.
//!
//! - rates are SI bits per second like tc: `bit`, `Kbit`, `Mbit`, `Gbit`, case
//!   insensitive, also written `bit/s`/`Mbit/s`/...; 1 Mbit = 10^6 bit/s. Byte
//!   rates with a capital `B`: `Bps`, `KBps` (`kBps`), `MBps`, `GBps` and
//!   `B/s`, `KB/s`, `MB/s`, `GB/s` = 8 bit/s per byte (a speed test's MB/s).
//!   `bps`, `kbps`, `Mbps`, `Gbps` (a lowercase `b`, any case before it) are
//!   refused as ambiguous, naming both readings: tc reads `mbps` as megabytes
//!   per second, a speed test's `Mbps` is megabits — 8x apart. Must be
//!   positive.
//! - durations: `ns`, `us` (`µs`), `ms`, `s`, `min`. Zero is allowed, negative not.
//! - sizes: `B`, `KB` (`kB`) = 1000 B, `MB`, `GB`, `KiB` = 1024 B, `MiB`, `GiB`;
//!   a number without a unit is bytes (as a TOML integer is).
//! - fractions: `"1%"` or a bare `0.01`, within [0, 1].
//! - buffers: a size, or packets (`pkt`, `pkts`, `p`) or bandwidth-delay
//!   products (`bdp`), those two case insensitive (`"1 BDP"`).
//!
//! Values become integers of base units (ns, bytes, bit/s) rounded half to
//! even, as Python's `round` does, and must fit an `i64` ([`MAX_INT`]): every
//! engine holds them as 64-bit integers.

use crate::time::Nanos;

/// The largest value any engine holds (ns, bytes and bit/s are 64-bit there).
pub const MAX_INT: u64 = i64::MAX as u64;
/// Texts longer than this are refused before they are parsed.
pub const TEXT_MAX: usize = 100;
/// Bad values are echoed at most this long in messages.
pub const ECHO_MAX: usize = 60;
/// A buffer of this many bandwidth-delay products is refused as a typo.
pub const BDP_MAX: f64 = 1e6;
/// Bytes per packet when a buffer is given in packets (the scenario's MTU).
pub const PACKET_BYTES: u64 = 1500;

/// A bad text, cut to [`ECHO_MAX`] characters for a message.
pub fn echo(s: &str) -> String {
    let n = s.chars().count();
    if n <= ECHO_MAX {
        s.to_string()
    } else {
        format!("{}... ({n} characters)", s.chars().take(ECHO_MAX).collect::<String>())
    }
}

/// `(number, unit)` of a text in the grammar, or the message for `what`.
fn split<'a>(s: &'a str, example: &str, what: &str) -> Result<(f64, &'a str), String> {
    let err = || format!("expected {what} like \"{example}\", got \"{}\"", echo(s));
    if s.chars().count() > TEXT_MAX {
        return Err(err());
    }
    let t = s.trim();
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            frac_digits += 1;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return Err(err());
    }
    // an exponent only when digits follow ("5e" is a number and the unit "e")
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let d = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > d {
            i = j;
        }
    }
    let v: f64 = t[..i].parse().map_err(|_| err())?;
    if !v.is_finite() {
        return Err(err());
    }
    let unit = t[i..].trim_start();
    if !unit.chars().all(|c| c.is_ascii_alphabetic() || c == 'µ' || c == '%' || c == '/') {
        return Err(err());
    }
    Ok((v, unit))
}

/// `x` as an integer of base units, rounded half to even; refused above [`MAX_INT`].
fn bounded(x: f64, s: &str, what: &str) -> Result<u64, String> {
    let v = x.round_ties_even();
    if v > MAX_INT as f64 {
        return Err(format!(
            "{what} \"{}\" is too large (the engines hold at most 9.22e+18 base units)",
            echo(s)
        ));
    }
    Ok(v.max(0.0) as u64)
}

/// `"100Mbit"` → 100_000_000 bit/s. Must be positive.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s, "100Mbit", "a rate")?;
    // bytes: a capital B (case matters here, as in "MB" against "Mb")
    let bytes = match unit {
        "Bps" | "B/s" => Some(8.0),
        "KBps" | "kBps" | "KB/s" | "kB/s" => Some(8e3),
        "MBps" | "MB/s" => Some(8e6),
        "GBps" | "GB/s" => Some(8e9),
        _ => None,
    };
    let lower = unit.to_ascii_lowercase();
    if bytes.is_none() && matches!(lower.as_str(), "bps" | "kbps" | "mbps" | "gbps") {
        let (p, name) = match lower.as_bytes()[0] {
            b'k' => ("K", "kilo"),
            b'm' => ("M", "mega"),
            b'g' => ("G", "giga"),
            _ => ("", ""),
        };
        return Err(format!(
            "\"{}\" is ambiguous: tc reads {unit} as {name}bytes per second, a speed test as {name}bits per second (8x apart); \
             write \"{}{p}bit\" for bits or \"{}{p}Bps\" for bytes",
            echo(s),
            fmt_num(v),
            fmt_num(v)
        ));
    }
    let mult = match bytes {
        Some(m) => m,
        None => match lower.as_str() {
            "bit" | "bit/s" => 1.0,
            "kbit" | "kbit/s" => 1e3,
            "mbit" | "mbit/s" => 1e6,
            "gbit" | "gbit/s" => 1e9,
            _ => {
                return Err(format!(
                    "expected a rate like \"100Mbit\" (units: bit, Kbit, Mbit, Gbit; bytes: Bps, KBps, MBps, GBps), got \"{}\"",
                    echo(s)
                ))
            }
        },
    };
    if v * mult < 0.5 {
        return Err(format!("expected a positive rate, got \"{}\"", echo(s)));
    }
    let bps = bounded(v * mult, s, "the rate")?;
    if bps == 0 {
        return Err(format!("expected a positive rate, got \"{}\"", echo(s)));
    }
    Ok(bps)
}

/// `"10ms"` → 10_000_000 ns. Zero is allowed (callers that need > 0 check).
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let (v, unit) = split(s, "10ms", "a duration")?;
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        _ => {
            return Err(format!(
                "expected a duration like \"10ms\" (units: ns, us, ms, s, min), got \"{}\"",
                echo(s)
            ))
        }
    };
    if v < 0.0 {
        return Err(format!("expected a non-negative duration, got \"{}\"", echo(s)));
    }
    bounded(v * mult, s, "the duration")
}

/// `"375KB"` → 375_000 bytes; `"1500"` → 1500 bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s, "375KB", "a size")?;
    let mult = size_unit(unit).ok_or_else(|| {
        format!(
            "expected a size like \"375KB\" (units: B, KB, MB, GB, KiB, MiB, GiB), got \"{}\"",
            echo(s)
        )
    })?;
    if v < 0.0 {
        return Err(format!("expected a non-negative size, got \"{}\"", echo(s)));
    }
    bounded(v * mult, s, "the size")
}

fn size_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "B" | "" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// `"1%"` or `"0.01"` → 0.01. Must lie in [0, 1].
pub fn parse_ratio(s: &str) -> Result<f64, String> {
    let (num, unit) = split(s, "1%", "a fraction")?;
    let v = match unit {
        "%" => num / 100.0,
        "" => num,
        _ => return Err(format!("expected a fraction like \"1%\" or 0.01, got \"{}\"", echo(s))),
    };
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("expected a value in [0, 1] (0%..100%), got '{}'", echo(s)));
    }
    Ok(v)
}

/// A queue's size as the scenario writes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Buffer {
    Bytes(u64),
    Packets(u64),
    /// bandwidth-delay products of the path it sits on
    Bdp(f64),
}

/// `"375KB"`, `"1000pkt"`, `"0.5bdp"` or `"1 BDP"`. Must be positive.
pub fn parse_buffer(s: &str) -> Result<Buffer, String> {
    let err = || format!("expected a buffer like \"375KB\", \"1000pkt\" or \"1bdp\", got '{}'", echo(s));
    let (v, unit) = split(s, "375KB", "a size").map_err(|_| err())?;
    let lower = unit.to_ascii_lowercase();
    let positive = || format!("expected a positive buffer, got \"{}\"", echo(s));
    let too_large = || format!("\"{}\" is too large a buffer", echo(s));
    match lower.as_str() {
        "bdp" => {
            if v <= 0.0 {
                return Err(positive());
            }
            if v > BDP_MAX {
                return Err(too_large());
            }
            Ok(Buffer::Bdp(v))
        }
        "pkt" | "pkts" | "p" => {
            if v <= 0.0 {
                return Err(positive());
            }
            if v.fract() != 0.0 {
                return Err(format!("expected a whole number of packets, got \"{}\"", echo(s)));
            }
            if v * PACKET_BYTES as f64 > MAX_INT as f64 {
                return Err(too_large());
            }
            Ok(Buffer::Packets(v as u64))
        }
        _ => {
            let mult = size_unit(unit).filter(|_| v >= 0.0).ok_or_else(err)?;
            match bounded(v * mult, s, "the size").map_err(|_| too_large())? {
                0 => Err(positive()),
                b => Ok(Buffer::Bytes(b)),
            }
        }
    }
}

/// A number as a user would write it back in a suggestion (no trailing ".0").
fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_rates_have_a_capital_b_and_lowercase_bps_is_refused_naming_both_readings() {
        for (text, bps) in [
            ("100MBps", 800_000_000u64),
            ("100MB/s", 800_000_000),
            ("12.5 MB/s", 100_000_000),
            ("1GBps", 8_000_000_000),
            ("500KBps", 4_000_000),
            ("500kB/s", 4_000_000),
            ("1000Bps", 8_000),
            ("1000 B/s", 8_000),
            ("100Mbit", 100_000_000),
            ("100mbit", 100_000_000),
            ("100 Mbit/s", 100_000_000),
        ] {
            assert_eq!(parse_rate(text).unwrap(), bps, "{text}");
        }
        for text in ["100mbps", "100Mbps", "100MBPS", "64kbps", "1Gbps", "9600bps", "100mBps"] {
            let e = parse_rate(text).unwrap_err();
            assert!(e.contains("ambiguous") || e.contains("expected a rate"), "{text}: {e}");
        }
        let e = parse_rate("100Mbps").unwrap_err();
        assert_eq!(
            e,
            "\"100Mbps\" is ambiguous: tc reads Mbps as megabytes per second, a speed test as megabits per second (8x apart); \
             write \"100Mbit\" for bits or \"100MBps\" for bytes"
        );
    }
    #[test]
    fn rates_are_si_like_tc() {
        assert_eq!(parse_rate("100Mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1.5Gbit").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("64kbit").unwrap(), 64_000);
        assert_eq!(parse_rate("100 Mbit/s").unwrap(), 100_000_000);
        assert_eq!(parse_rate("2e3 kbit/s").unwrap(), 2_000_000);
        assert_eq!(parse_rate("fast").unwrap_err(), "expected a rate like \"100Mbit\", got \"fast\"");
        assert!(parse_rate("0Mbit").unwrap_err().contains("positive"));
        assert!(parse_rate("0.4bit").unwrap_err().contains("positive"));
        assert!(parse_rate("1e30Gbit").unwrap_err().contains("too large"));
        assert!(parse_rate("10 parsecs").unwrap_err().contains("units: bit, Kbit, Mbit, Gbit"));
    }
    #[test]
    fn durations_round_half_to_even_like_python() {
        assert_eq!(parse_duration("10ms").unwrap(), 10_000_000);
        assert_eq!(parse_duration(" 10 ms ").unwrap(), 10_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("2.5ns").unwrap(), 2);
        assert_eq!(parse_duration("3.5ns").unwrap(), 4);
        assert_eq!(parse_duration("1e3ms").unwrap(), 1_000_000_000);
        assert_eq!(parse_duration("0s").unwrap(), 0);
        assert!(parse_duration("-1ms").unwrap_err().contains("non-negative"));
        assert!(parse_duration("10 MS").unwrap_err().contains("units: ns, us, ms, s, min"));
        assert!(parse_duration("nan s").is_err());
        assert!(parse_duration("inf s").is_err());
        assert!(parse_duration(&"1".repeat(101)).is_err());
    }
    #[test]
    fn sizes_and_bare_bytes() {
        assert_eq!(parse_size("375KB").unwrap(), 375_000);
        assert_eq!(parse_size("1KiB").unwrap(), 1024);
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert_eq!(parse_size("1500 B").unwrap(), 1500);
        assert!(parse_size("3 parsecs").is_err());
        assert!(parse_size("-1KB").unwrap_err().contains("non-negative"));
    }
    #[test]
    fn fractions() {
        assert_eq!(parse_ratio("1%").unwrap(), 0.01);
        assert_eq!(parse_ratio("0.25").unwrap(), 0.25);
        assert!(parse_ratio("101%").is_err());
        assert!(parse_ratio("1 dB").is_err());
    }
    #[test]
    fn buffers_in_bytes_packets_and_bdp_any_case() {
        assert_eq!(parse_buffer("1 BDP").unwrap(), Buffer::Bdp(1.0));
        assert_eq!(parse_buffer("0.5bdp").unwrap(), Buffer::Bdp(0.5));
        assert_eq!(parse_buffer("1000pkt").unwrap(), Buffer::Packets(1000));
        assert_eq!(parse_buffer("100 Pkts").unwrap(), Buffer::Packets(100));
        assert_eq!(parse_buffer("375KB").unwrap(), Buffer::Bytes(375_000));
        assert_eq!(parse_buffer("1500").unwrap(), Buffer::Bytes(1500));
        assert!(parse_buffer("0bdp").unwrap_err().contains("positive"));
        assert!(parse_buffer("1.5pkt").unwrap_err().contains("whole number"));
        assert!(parse_buffer("2e6bdp").unwrap_err().contains("too large"));
        assert!(parse_buffer("1 parsec").unwrap_err().starts_with("expected a buffer like"));
        assert!(parse_buffer("0B").unwrap_err().contains("positive"));
    }
    #[test]
    fn long_texts_are_echoed_cut() {
        let long = format!("{}x", "9".repeat(200));
        let e = parse_size(&long).unwrap_err();
        assert!(e.contains("... (201 characters)"), "{e}");
    }
}
