//! Unit strings as the scenario language writes them, for Rust front ends
//! (the probe's and the emulator's command lines). The Python scenario layer
//! follows the same rules (`python/bloatlab/units.py`); `docs/scenario.md` is
//! the reference for both.
//!
//! - rates are SI bits per second like tc: `bit`, `Kbit`, `Mbit`, `Gbit` (`bps`,
//!   `kbps`, `mbps`, `gbps` accepted); 1 Mbit = 10^6 bit/s.
//! - durations: `ns`, `us`, `ms`, `s`, `min`.
//! - sizes: `B`, `KB` = 1000 B, `MB`, `GB`, `KiB` = 1024 B, `MiB`, `GiB`.

use crate::time::Nanos;

fn split(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    // "1e3ms": keep 'e' only when followed by a digit; simple grammar: number then unit.
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, unit.trim().to_string()))
}

/// `"100Mbit"` → 100_000_000 bit/s.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let err = || format!("expected a rate like \"100Mbit\", got \"{s}\"");
    let (v, unit) = split(s).ok_or_else(err)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "bit" | "bps" => 1.0,
        "kbit" | "kbps" => 1e3,
        "mbit" | "mbps" => 1e6,
        "gbit" | "gbps" => 1e9,
        _ => return Err(err()),
    };
    let r = v * mult;
    if r < 1.0 {
        return Err(format!("expected a positive rate, got \"{s}\""));
    }
    Ok(r.round() as u64)
}

/// `"10ms"` → 10_000_000 ns. Zero is allowed (callers that need > 0 check).
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let err = || format!("expected a duration like \"10ms\", got \"{s}\"");
    let (v, unit) = split(s).ok_or_else(err)?;
    let mult = match unit.as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(format!("expected a non-negative duration, got \"{s}\""));
    }
    Ok((v * mult).round() as Nanos)
}

/// `"375KB"` → 375_000 bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let err = || format!("expected a size like \"375KB\", got \"{s}\"");
    let (v, unit) = split(s).ok_or_else(err)?;
    let mult = match unit.as_str() {
        "B" | "" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(format!("expected a non-negative size, got \"{s}\""));
    }
    Ok((v * mult).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rates_are_si_like_tc() {
        assert_eq!(parse_rate("100Mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1.5Gbit").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("64kbit").unwrap(), 64_000);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0Mbit").is_err());
    }
    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("10ms").unwrap(), 10_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("375KB").unwrap(), 375_000);
        assert_eq!(parse_size("1KiB").unwrap(), 1024);
        assert!(parse_size("3 parsecs").is_err());
    }
}
