//! The server's control line under random and mutated input (issue 16 §1),
//! on stable Rust in every `cargo test`: `ServerLimits::admit` never panics,
//! and what it admits respects the limits. (`fuzz/` has the same property as
//! a cargo-fuzz target, run for a bounded time by `make test` where
//! cargo-fuzz and a nightly toolchain are installed.)

use bloatlab_probe::tcp::ServerLimits;

mod common;
use common::Rng;

const SEEDS: &[&str] = &[
    r#"{"cookie":1,"streams":1,"reverse":false,"duration_ns":10000000000,"bytes":null,"cc":"cubic","info_interval_ns":10000000}"#,
    r#"{"cookie":18446744073709551615,"streams":128,"reverse":true,"duration_ns":18446744073709551615,"bytes":18446744073709551615,"cc":null,"info_interval_ns":1}"#,
    r#"{"cookie":0,"streams":0,"reverse":true,"duration_ns":0,"bytes":0,"cc":"","info_interval_ns":0}"#,
];
const PIECES: &[&str] = &["{", "}", "\"", ":", ",", "[", "]", "null", "true", "-1", "1e309", "18446744073709551616", "\\u0000",
                          "\"streams\"", "\"duration_ns\"", "\"info_interval_ns\"", "\"cc\"", "0", "9999999999999999999999"];

fn check(lims: &[ServerLimits], line: &str) {
    for lim in lims {
        if let Ok((p, deadline)) = lim.admit(line) {
            assert!(p.streams >= 1 && p.streams <= lim.max_streams, "{line}");
            assert_ne!(p.duration_ns, Some(0), "{line}");
            if lim.max_duration_ns > 0 {
                assert!(deadline.is_some_and(|d| d <= lim.max_duration_ns), "{line}");
            }
        }
    }
}

#[test]
fn random_and_mutated_control_lines_never_panic_and_admit_only_what_the_limits_allow() {
    let lims = [ServerLimits::default(), ServerLimits::none()];
    let mut rng = Rng(0x5eed_0016);
    let mut admitted = 0;
    for i in 0..60_000 {
        let line: String = match i % 3 {
            // random bytes (as lossy UTF-8)
            0 => {
                let n = rng.below(200) as usize;
                let b = rng.bytes(n);
                String::from_utf8_lossy(&b).into_owned()
            }
            // a valid line with a few bytes changed
            1 => {
                let mut b = SEEDS[rng.below(SEEDS.len() as u64) as usize].as_bytes().to_vec();
                for _ in 0..1 + rng.below(4) as usize {
                    let j = rng.below(b.len() as u64) as usize;
                    b[j] = rng.next() as u8;
                }
                String::from_utf8_lossy(&b).into_owned()
            }
            // a valid line with a value spliced in
            _ => {
                let s = SEEDS[rng.below(SEEDS.len() as u64) as usize];
                let at = rng.below(s.len() as u64) as usize;
                let at = (0..=at).rev().find(|&k| s.is_char_boundary(k)).unwrap_or(0);
                format!("{}{}{}", &s[..at], PIECES[rng.below(PIECES.len() as u64) as usize], &s[at..])
            }
        };
        check(&lims, &line);
        if ServerLimits::none().admit(&line).is_ok() {
            admitted += 1;
        }
    }
    // the mutations must reach the admitted path too, or the test checks little
    assert!(admitted > 100, "only {admitted} lines admitted");
    for s in SEEDS {
        check(&lims, s);
    }
}
