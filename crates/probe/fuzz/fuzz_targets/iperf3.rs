//! Fuzz the server's reading of an iperf3 client's parameters:
//! `cargo +nightly fuzz run iperf3`. Property: `iperf3::admit` never panics
//! on any JSON, under the public server's limits and under none; what it
//! admits respects the limits (streams, test length).
#![no_main]
use bloatlab_probe::iperf3;
use bloatlab_probe::tcp::ServerLimits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    for lim in [ServerLimits::default(), ServerLimits::none()] {
        if let Ok(a) = iperf3::admit(&v, &lim) {
            assert!(a.streams >= 1 && a.streams <= lim.max_streams);
            assert!(a.time_s > 0 || a.bytes > 0);
            if lim.max_duration_ns > 0 {
                assert!(a.time_s.saturating_mul(1_000_000_000) <= lim.max_duration_ns);
            }
        }
    }
});
