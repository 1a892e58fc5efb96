//! iperf3's cookie (iperf.h `COOKIE_SIZE`, iperf_util.c `make_cookie`): the
//! 37 bytes a control connection opens with and each data connection names
//! its test by. Its own module: bloatlab's own opening (tcp/control.rs)
//! wears one too, without depending on the rest of iperf3's protocol.

use crate::sys;

/// `COOKIE_SIZE` (iperf.h): 36 characters and a NUL.
pub const COOKIE_SIZE: usize = 37;
/// The characters of a cookie (`make_cookie` in iperf_util.c).
pub const COOKIE_CHARS: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

pub fn make_cookie() -> [u8; COOKIE_SIZE] {
    let mut c = [0u8; COOKIE_SIZE];
    for ch in c.iter_mut().take(COOKIE_SIZE - 1) {
        *ch = COOKIE_CHARS[(sys::random_u64() % 32) as usize];
    }
    c
}

/// The first bytes of a connection could be an iperf3 cookie.
pub fn looks_like_cookie(b: &[u8]) -> bool {
    b.iter().all(|c| COOKIE_CHARS.contains(c))
}

/// A whole cookie: 36 cookie characters and a NUL.
pub fn valid_cookie(c: &[u8; COOKIE_SIZE]) -> bool {
    looks_like_cookie(&c[..COOKIE_SIZE - 1]) && c[COOKIE_SIZE - 1] == 0
}
