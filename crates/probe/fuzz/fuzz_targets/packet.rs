//! Fuzz the UDP echo packet parser: `cargo +nightly fuzz run packet`.
//! Property: parse never panics, with or without a key, and an accepted
//! packet's payload lies inside it; make_reply on an accepted request keeps
//! its length (no amplification).
#![no_main]
use bloatlab_probe::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key = wire::Key::new(b"fuzz");
    for k in [None, Some(&key)] {
        if let Ok(p) = wire::parse(data, k) {
            assert!(p.payload.len() + wire::HEADER_LEN <= data.len());
            if p.kind == wire::Kind::Request {
                let mut b = data.to_vec();
                wire::make_reply(&mut b, 1, || 2, k);
                assert_eq!(b.len(), data.len());
                assert!(wire::parse(&b, k).is_ok());
            }
        }
    }
});
