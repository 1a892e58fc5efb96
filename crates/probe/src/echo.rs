//! UDP request/response against *any* echo server (`udp client --echo`):
//! the board of seed 002 that runs ten lines of C (`recvfrom` then `sendto`
//! of the same buffer), `socat`, inetd's echo, a Python loop.
//!
//! Payload as the seed writes it: `"This is packet N\n"` (N from 0), padded
//! with zero bytes to `--size`. A reply is matched to its request by the N
//! it carries, then checked byte for byte against what was sent:
//! - equal: answered, its round trip counted;
//! - N known but bytes differ: a *mismatch* (answered, counted apart, no RTT);
//! - no N, or N not outstanding: *stray* (a late answer to a request already
//!   given up, a duplicate, garbage). In ping-pong mode an unreadable reply of
//!   the request's length while exactly one request is outstanding is that
//!   request's mismatch, so one corrupted reply never stalls the sequence;
//! - nothing within `--timeout`: *lost* (never confused with a mismatch).
//!
//! Times are user-space CLOCK_MONOTONIC on this host (the echo server stamps
//! nothing). Requests go out in ping-pong (the next when the previous one is
//! answered, mismatched or timed out) or on a fixed `--interval` schedule.

use crate::sys;
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// The shortest payload that holds any request's text ("This is packet " +
/// 20 digits + "\n").
pub const MIN_SIZE: usize = 36;

#[derive(Debug, Clone)]
pub struct EchoCfg {
    pub addr: SocketAddr,
    /// requests to send (≥ 1)
    pub count: u64,
    /// 0 = ping-pong; else the schedule's period (ns)
    pub interval_ns: u64,
    /// payload bytes (≥ the request's text, see [`MIN_SIZE`])
    pub size: usize,
    /// a request not answered within this is lost (ns)
    pub timeout_ns: u64,
    /// answers slower than this are listed (ns)
    pub limit_ns: Option<u64>,
    /// spin instead of sleeping in poll
    pub busy_poll: bool,
    /// stop when nothing was answered for this long (server gone, ns)
    pub give_up_ns: u64,
}

#[derive(Debug, Clone, Default)]
pub struct EchoResult {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub mismatched: u64,
    pub stray: u64,
    /// RTT (µs) of every byte-exact answer, in arrival order
    pub rtt_us: Vec<f64>,
    /// (N, RTT µs) of answers slower than the limit, at most [`MAX_SLOW`]
    pub slow: Vec<(u64, f64)>,
    /// slow answers in all (also beyond the list)
    pub slow_count: u64,
    pub elapsed_s: f64,
    pub interrupted: bool,
    /// why the run ended before its count, if it did
    pub stop_reason: Option<String>,
}

/// Slow answers listed individually (the count goes on).
pub const MAX_SLOW: usize = 1000;

/// The seed's request text for N, zero-padded to `size`.
pub fn payload(seq: u64, size: usize) -> Vec<u8> {
    let mut b = format!("This is packet {seq}\n").into_bytes();
    b.resize(size.max(b.len()), 0);
    b
}

/// The N a reply carries, if it reads as a request of ours.
pub fn seq_of(reply: &[u8]) -> Option<u64> {
    let rest = reply.strip_prefix(b"This is packet ")?;
    let end = rest.iter().position(|&c| c == b'\n')?;
    if end == 0 || end > 20 || !rest[..end].iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

pub fn run(cfg: &EchoCfg) -> Result<EchoResult, String> {
    if cfg.count == 0 {
        return Err("--count: must be at least 1".into());
    }
    if cfg.size < MIN_SIZE {
        return Err(format!("--size {}: --echo needs at least {MIN_SIZE} bytes (\"This is packet N\\n\")", cfg.size));
    }
    let bind: SocketAddr = if cfg.addr.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
    let sock = UdpSocket::bind(bind).map_err(|e| format!("udp bind: {e}"))?;
    sock.connect(cfg.addr).map_err(|e| format!("udp connect {}: {e}", cfg.addr))?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let fd = sock.as_raw_fd();
    sys::set_buffers(fd, 4 << 20);
    let mut r = EchoResult::default();
    // outstanding requests: N -> send time (ascending in both)
    let mut out: BTreeMap<u64, u64> = BTreeMap::new();
    let mut buf = vec![0u8; 65536];
    let t0 = sys::mono_ns();
    let mut next_due = t0;
    let mut last_answer = t0;
    while !sys::stopped() {
        let now = sys::mono_ns();
        if now.saturating_sub(last_answer) > cfg.give_up_ns.max(cfg.timeout_ns) {
            r.stop_reason = Some(format!("no answer from {} for {:.1} s", cfg.addr, (now - last_answer) as f64 / 1e9));
            break;
        }
        // give up requests past their timeout
        while let Some((&n, &tx)) = out.first_key_value() {
            if now.saturating_sub(tx) < cfg.timeout_ns {
                break;
            }
            out.remove(&n);
            r.lost += 1;
        }
        let may_send = r.sent < cfg.count && if cfg.interval_ns == 0 { out.is_empty() } else { now >= next_due };
        if may_send {
            let n = r.sent;
            let p = payload(n, cfg.size);
            let tx = sys::mono_ns();
            match sock.send(&p) {
                Ok(_) => {}
                // ICMP port unreachable from an earlier request: this one is sent anyway (or lost)
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("udp send to {}: {e}", cfg.addr)),
            }
            out.insert(n, tx);
            r.sent += 1;
            next_due = next_due.saturating_add(cfg.interval_ns);
            continue;
        }
        if r.sent >= cfg.count && out.is_empty() {
            break;
        }
        // wait for a reply until the next send or the oldest timeout
        let mut wake = out.first_key_value().map(|(_, &tx)| tx + cfg.timeout_ns).unwrap_or(u64::MAX);
        if cfg.interval_ns > 0 && r.sent < cfg.count {
            wake = wake.min(next_due);
        }
        let wait = wake.saturating_sub(now).min(100_000_000);
        if !cfg.busy_poll && !sys::wait_readable(fd, wait) {
            continue;
        }
        loop {
            let len = match sock.recv(&mut buf) {
                Ok(l) => l,
                Err(_) => break,
            };
            let rx = sys::mono_ns();
            last_answer = rx;
            let reply = &buf[..len];
            match seq_of(reply) {
                Some(n) if out.contains_key(&n) => {
                    let tx = out.remove(&n).unwrap();
                    if reply == payload(n, cfg.size).as_slice() {
                        r.received += 1;
                        let us = (rx - tx) as f64 / 1e3;
                        r.rtt_us.push(us);
                        if cfg.limit_ns.is_some_and(|l| rx - tx > l) {
                            r.slow_count += 1;
                            if r.slow.len() < MAX_SLOW {
                                r.slow.push((n, us));
                            }
                        }
                    } else {
                        r.mismatched += 1;
                    }
                }
                None if cfg.interval_ns == 0 && out.len() == 1 && len == cfg.size => {
                    // ping-pong: the only request outstanding got a damaged answer
                    out.pop_first();
                    r.mismatched += 1;
                }
                _ => r.stray += 1,
            }
        }
    }
    r.interrupted = sys::stopped();
    r.lost += out.len() as u64 * u64::from(!r.interrupted);
    r.elapsed_s = (sys::mono_ns() - t0) as f64 / 1e9;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_the_seeds_text_padded_with_zeros() {
        let p = payload(7, 40);
        assert_eq!(&p[..17], b"This is packet 7\n");
        assert_eq!(p.len(), 40);
        assert!(p[17..].iter().all(|&b| b == 0));
        assert_eq!(seq_of(&p), Some(7));
        assert_eq!(seq_of(&payload(u64::MAX, MIN_SIZE)), Some(u64::MAX));
    }

    #[test]
    fn damaged_texts_carry_no_sequence_number() {
        for bad in [&b"This is packet \n"[..], b"This is packet 12", b"This is packet 1x\n", b"this is packet 1\n", b"", b"This is packet 99999999999999999999999\n"] {
            assert_eq!(seq_of(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn seq_of_survives_random_input() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = payload(x % 1000, 40);
            let i = (x >> 20) as usize % b.len();
            b[i] ^= (x >> 40) as u8;
            let _ = seq_of(&b[..(x >> 50) as usize % 41]);
        }
    }
}
