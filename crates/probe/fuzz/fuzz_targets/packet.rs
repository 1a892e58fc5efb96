//! Fuzz the UDP echo packet parser: `cargo +nightly fuzz run packet`.
//! Property: parse never panics, with or without a key, and an accepted
//! packet's payload lies inside it; make_reply on an accepted request keeps
//! its length, and the server's answer to an accepted up-train request is no
//! longer than it (no amplification), also once past the cookie (the server's
//! slots, their data and reports); the up-train answer parser never panics.
#![no_main]
use bloatlab_probe::{train_up, wire};
use libfuzzer_sys::fuzz_target;
use std::sync::{Mutex, OnceLock};

/// One server for the whole run: what the inputs leave in it carries over.
fn server() -> &'static Mutex<train_up::Trains> {
    static S: OnceLock<Mutex<train_up::Trains>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(train_up::Trains::new()))
}

fuzz_target!(|data: &[u8]| {
    let key = wire::Key::new(b"fuzz");
    let _ = train_up::parse_up_answer(data);
    for k in [None, Some(&key)] {
        if let Ok(p) = wire::parse(data, k) {
            assert!(p.payload.len() + wire::HEADER_LEN <= data.len());
            if p.kind == wire::Kind::Request {
                let mut b = data.to_vec();
                wire::make_reply(&mut b, 1, || 2, k);
                assert_eq!(b.len(), data.len());
                assert!(wire::parse(&b, k).is_ok());
            }
            let from = std::net::SocketAddr::from(([192, 0, 2, 1], 4000));
            if p.kind == wire::Kind::UpRequest {
                let mut t = server().lock().unwrap();
                if let (_, Some(a)) = t.respond_up(from, p.session, data, k, 1_000_000_000, Some(0)) {
                    assert!(a.len() <= data.len(), "an answer of {} B to {} B", a.len(), data.len());
                }
                // past the cookie: the request again with the cookie the server hands this session (a start's bytes
                // 24..40), so that starts make slots and reports answer from them
                if data.len() >= 40 && data.len() <= wire::MAX_PACKET {
                    let ask = train_up::build_start(p.session, 1, 64, 0, &[0; 16], k);
                    if let (_, Some(a)) = t.respond_up(from, p.session, &ask, k, 1_000_000_000, Some(0)) {
                        if let Some(train_up::UpAnswer::Start { cookie, .. }) = train_up::parse_up_answer(&a) {
                            let mut b = data.to_vec();
                            b[24..40].copy_from_slice(&cookie);
                            wire::sign(&mut b, k);
                            if let (_, Some(a)) = t.respond_up(from, p.session, &b, k, 1_000_000_001, Some(1)) {
                                assert!(a.len() <= b.len(), "an answer of {} B to {} B", a.len(), b.len());
                            }
                        }
                    }
                }
            }
            if p.kind == wire::Kind::TrainData {
                // a data packet into whatever slot the inputs left (none, or one a start above made)
                let mut t = server().lock().unwrap();
                let _ = t.up_data(from, p.session, p.seq, data.len(), 5, k.is_none(), 1_000_000_002);
            }
        }
    }
});
