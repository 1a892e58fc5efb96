//! Fuzz the TCP server's control line: `cargo +nightly fuzz run control`.
//! Property: `ServerLimits::admit` never panics on any line, under the public
//! server's limits and under none (the emulator's private servers); what it
//! admits respects the limits (streams, a positive length within the cap).
#![no_main]
use bloatlab_probe::tcp::ServerLimits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    for lim in [ServerLimits::default(), ServerLimits::none()] {
        if let Ok((p, deadline)) = lim.admit(line) {
            assert!(p.streams >= 1 && p.streams <= lim.max_streams);
            assert_ne!(p.duration_ns, Some(0));
            if lim.max_duration_ns > 0 {
                assert!(deadline.is_some_and(|d| d <= lim.max_duration_ns));
            }
        }
    }
});
