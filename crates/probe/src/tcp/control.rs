//! bloatlab's control protocol for TCP tests, and what a test is on both
//! sides of it: the parameters a client sends ([`Params`]), the limits a
//! server grants ([`ServerLimits`]), the test a client asks for
//! ([`ClientCfg`]) and what it learns ([`ClientResult`], [`ClientError`]).
//! The last three are common to bloatlab's client (`super::client`) and
//! iperf3's (`crate::iperf3`), so the CLI reports either the same way.
//!
//! Follows iperf3's control connection in spirit (iperf 3.12,
//! `iperf_api.c` `send_parameters`/`get_parameters`, `send_results`), in
//! bloatlab's own wire format:
//!
//! Wire: a control connection opens with an iperf3 cookie whose first
//! characters are [`CTRL_COOKIE_TAG`] (37 B), then, framed as iperf3 frames
//! its JSON (u32 BE length + text), iperf3's parameters for the same test
//! with bloatlab's [`Params`] under the key `"bloatlab"` ([`opening`]). A
//! `bloatlab-probe` server answers with its JSON line; a stock iperf3 server
//! reads the cookie and the parameters as its own and answers
//! PARAM_EXCHANGE, and the client runs *this* test in iperf3's protocol
//! (`crate::iperf3::Opened`): detecting iperf3 costs no test, which matters
//! to `iperf3 -s -1`, whose one test is any connection (a connect-and-close
//! ends it: iperf 3.12 `main.c`, only an authentication failure or an idle
//! restart does not count). The older opening, `BLC1` + JSON line, is still
//! served. `BLD1` + cookie (u64 LE) + stream index (u32 LE) = data. Anything
//! else (e.g. a latency probe that only connects) is closed silently, unless
//! it is iperf3's or a foreign probe's (`super::server`). On the control
//! connection the server answers the parameters with one JSON line
//! (`{"ok": true, ...}` or `{"ok": false, "error": ...}`), and after the test
//! sends its own measurements as one JSON line; an interrupted reverse-test
//! client sends [`STOP_LINE`] during the test, an upload's client once its
//! senders have ended.
//!
//! A server on the internet ([`ServerLimits`], docs/probe.md "Server limits"):
//! every request is bounded — test length, streams, TCP_INFO sampling
//! interval and the samples a test may keep, concurrent tests, connections
//! being classified — and a request beyond a limit gets a refusal that names
//! it. With a secret, the server sends a random challenge and answers only a
//! client that returns HMAC-SHA256(secret, challenge ‖ parameter line).
//!
//! Constants:
//! - [`MAX_CTRL_LINE`] = 64 KiB: the longest control line either side reads
//!   (a parameter line is ~200 B; the server's result line is read by the
//!   client without this bound, since the client chose the server).
//! - [`CTRL_LINE_WAIT_NS`] = 10 s: the longest either side waits for a whole
//!   control line (64 KiB in 10 s is 52 kbit/s; a parameter line takes one
//!   RTT): a client that trickles its line cannot hold a server's thread.

use crate::report::FlowRaw;
use crate::report::FlowSeries;
use super::stream::is_timeout;
use crate::sys;
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

pub const MAX_CTRL_LINE: u64 = 64 * 1024;
pub const CTRL_LINE_WAIT_NS: u64 = 10_000_000_000;
/// What an interrupted reverse-test client sends on the control connection:
/// the server stops sending and reports (older servers ignore it). An
/// upload's client sends it too once its senders have ended: the server's
/// receivers then end at their first silence, without waiting for the reset
/// that ends a timed sender, which a policer may drop (`stream::run_receiver`;
/// older servers ignore it in an upload).
pub const STOP_LINE: &[u8] = b"stop\n";
/// The head of a results line the client asked deflated ([`Params::deflate_results`]): the rest is the JSON
/// document through zlib, in base64 ([`results_text`]); a plain line begins with `{`. The JSON of TCP_INFO
/// samples deflates about 5x (a 4-flow download's 52 KB to ~10 KB), and the line crosses the path just
/// measured: behind a 0.69-Mbit/s policer on a 1.9-Mbit/s port with a 2-packet FIFO (the campaign's seed 121
/// path 14) each burst of the line passed 3 packets and waited a retransmission timeout (~240 ms) for the next,
/// so 52 KB took 2.7 s.
pub const RESULTS_DEFLATED: &str = "deflate:";
pub(crate) const CTRL_MAGIC: &[u8; 4] = b"BLC1";
pub(crate) const DATA_MAGIC: &[u8; 4] = b"BLD1";
/// The first characters of the cookie that opens bloatlab's control
/// connection: iperf3 cookie characters (`[a-z2-7]`), 12 of them, so that a
/// stock iperf3 client's random cookie is one of ours once in 32^12 ≈ 10^18.
pub(crate) const CTRL_COOKIE_TAG: &[u8; 12] = b"bloatlabctl2";

/// The key of bloatlab's [`Params`] inside the opening's iperf3 parameters.
pub(crate) const OPENING_KEY: &str = "bloatlab";

/// A cookie that says "bloatlab's control connection" to a bloatlab-probe
/// server and is a valid cookie to a stock iperf3 server.
pub(crate) fn tagged_cookie() -> [u8; crate::iperf3::cookie::COOKIE_SIZE] {
    let mut c = crate::iperf3::cookie::make_cookie();
    c[..CTRL_COOKIE_TAG.len()].copy_from_slice(CTRL_COOKIE_TAG);
    c
}

/// The opening's bytes, written at once: the cookie, then `text` (iperf3's
/// parameters with ours under [`OPENING_KEY`]) framed as iperf3's
/// `JSON_write` frames it.
pub(crate) fn opening(cookie: &[u8; crate::iperf3::cookie::COOKIE_SIZE], text: &str) -> Vec<u8> {
    let mut m = Vec::with_capacity(cookie.len() + 4 + text.len());
    m.extend_from_slice(cookie);
    m.extend_from_slice(&(text.len() as u32).to_be_bytes());
    m.extend_from_slice(text.as_bytes());
    m
}

/// The server's read of the opening's framed parameters (after the
/// cookie): at most `max` bytes, all of them before `end` (CLOCK_MONOTONIC
/// ns; the clock is read after every read, so a trickle cannot renew it).
/// The length is checked before anything is allocated.
pub(crate) fn read_framed(c: &TcpStream, max: u64, end: u64) -> io::Result<String> {
    fn fill(mut c: &TcpStream, buf: &mut [u8], end: u64) -> io::Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match io::Read::read(&mut c, &mut buf[got..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(k) => got += k,
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
            if sys::mono_ns() > end || sys::stopped() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
            }
        }
        Ok(())
    }
    let mut n = [0u8; 4];
    fill(c, &mut n, end)?;
    let n = u32::from_be_bytes(n) as u64;
    if n > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("parameters of {n} bytes, longer than the {max} this server reads")));
    }
    let mut buf = vec![0u8; n as usize];
    fill(c, &mut buf, end)?;
    String::from_utf8(buf).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "parameters that are not UTF-8"))
}

/// Test parameters sent by the client.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Params {
    pub cookie: u64,
    pub streams: usize,
    pub reverse: bool,
    pub duration_ns: Option<u64>,
    pub bytes: Option<u64>,
    /// `-b`: the sender's application offers at most this many bit/s
    /// (written every [`APP_TICK_NS`]); None: as fast as the socket takes.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// `--on/--off` (with `-b`): the application writes for `on` write ticks,
    /// then is silent for `off`, repeating.
    #[serde(default)]
    pub onoff_ticks: Option<(u64, u64)>,
    pub cc: Option<String>,
    pub info_interval_ns: u64,
    /// `--pacing`: the sender paces at the kernel's pacing rate whatever its control
    #[serde(default)]
    pub pacing: bool,
    /// frame the data connections for self probes (`probewire`); a server
    /// that does answers `"self_probes": true`
    #[serde(default)]
    pub self_probes: bool,
    /// the server's results line deflated ([`RESULTS_DEFLATED`]); an older server
    /// ignores the key and sends the plain line, which the client reads as before
    #[serde(default)]
    pub deflate_results: bool,
}

/// Read one `\n`-terminated line of at most `max` bytes, all of it within
/// `give_up_ns`: what a server facing the network reads from a client that
/// may be hostile. A peer that never sends a newline cannot grow our memory
/// beyond `max`, and one that trickles bytes (one every few ms, a slowloris)
/// cannot hold the reading thread beyond `give_up_ns`: the clock is read
/// after every read, not only when the peer is silent.
pub(crate) fn read_line_max(r: &mut BufReader<&TcpStream>, give_up_ns: u64, max: u64) -> io::Result<String> {
    read_line_within(r, sys::mono_ns().saturating_add(give_up_ns), max, true)
}

/// Read one line, `\n`-terminated, that may take long to arrive but keeps
/// arriving: the server's results after a test, a JSON document of up to
/// hundreds of KB that crosses the path just measured — behind a policer
/// with a 3-KB bucket at 500 ms, or at 0.2 Mbit/s, that took longer than a
/// fixed 15 s and the client lost the results it had waited for. The wait
/// ends after `silence_ns` without a byte, or at `cap_ns` in all, or past
/// `max` bytes: what the client owes a server that trickles.
pub(crate) fn read_line_progress(r: &mut BufReader<&TcpStream>, silence_ns: u64, cap_ns: u64, max: u64) -> io::Result<String> {
    let now = sys::mono_ns();
    read_line_until(r, now.saturating_add(silence_ns.min(cap_ns)), max, false, Some((silence_ns, now.saturating_add(cap_ns))))
}

/// The writer a [`RESULTS_DEFLATED`] line's body goes through after its head: zlib, then base64 (the line stays
/// one line of text). Its `finish()?.finish()?` ends both before the newline.
pub(crate) fn deflated<W: Write>(w: W) -> flate2::write::ZlibEncoder<base64::write::EncoderWriter<'static, base64::engine::GeneralPurpose, W>> {
    let b64 = base64::write::EncoderWriter::new(w, &base64::engine::general_purpose::STANDARD);
    flate2::write::ZlibEncoder::new(b64, flate2::Compression::default())
}

/// The server's results line as JSON text: as it came, or inflated where it is [`RESULTS_DEFLATED`] (at most
/// `max` bytes inflated: what the client owes a server it chose, as for a plain line); None where it does not
/// decode.
pub(crate) fn results_text(line: String, max: u64) -> Option<String> {
    use base64::Engine;
    use std::io::Read;
    let Some(b64) = line.strip_prefix(RESULTS_DEFLATED) else { return Some(line) };
    let z = base64::engine::general_purpose::STANDARD.decode(b64.trim_end()).ok()?;
    let mut text = String::new();
    flate2::read::ZlibDecoder::new(&z[..]).take(max.saturating_add(1)).read_to_string(&mut text).ok()?;
    (text.len() as u64 <= max).then_some(text)
}

/// The line (newline included) is gathered as bytes and checked as UTF-8 once
/// whole: `BufRead::read_line` drops what it read when a read timeout falls
/// inside a multi-byte character. `end`: CLOCK_MONOTONIC ns; `whole`: the
/// deadline holds for the whole line, else only while the peer is silent.
/// Each read waits at most the socket's read timeout (WAKE on our sockets).
fn read_line_within(r: &mut BufReader<&TcpStream>, end: u64, max: u64, whole: bool) -> io::Result<String> {
    read_line_until(r, end, max, whole, None)
}

/// [`read_line_within`], and with `progress` = (silence, hard end) the
/// deadline moves to `silence` after each byte that arrives, never past the
/// hard end ([`read_line_progress`]).
fn read_line_until(r: &mut BufReader<&TcpStream>, mut end: u64, max: u64, whole: bool, progress: Option<(u64, u64)>) -> io::Result<String> {
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "timed out");
    let mut line = Vec::new();
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            // a read timeout, or a signal (EINTR): look at the clock, read again
            Err(e) if is_timeout(&e) => {
                if sys::mono_ns() > end {
                    return Err(timed_out());
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
        }
        let (n, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if (line.len() + n) as u64 > max {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("line longer than {max} bytes")));
        }
        line.extend_from_slice(&avail[..n]);
        r.consume(n);
        if let Some((silence, hard)) = progress {
            let now = sys::mono_ns();
            if now > hard && !done {
                return Err(timed_out());
            }
            end = now.saturating_add(silence).min(hard);
        }
        if done {
            return String::from_utf8(line).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "line is not UTF-8"));
        }
        if whole && sys::mono_ns() > end {
            return Err(timed_out());
        }
    }
}

/// What the server grants a client. Defaults (docs/probe.md) suit a public
/// server on a small VPS or a router; `0` lifts a limit (the emulator's
/// private one-off servers do that).
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// longest test (ns); a test without `-t` (a byte count) ends here too
    pub max_duration_ns: u64,
    /// data connections per test (`-P`)
    pub max_streams: usize,
    /// shortest TCP_INFO sampling interval (ns)
    pub min_info_interval_ns: u64,
    /// TCP_INFO samples a test may keep (streams × duration / interval):
    /// bounds the server's memory per test (~240 B a sample)
    pub max_samples: u64,
    /// tests running at once
    pub max_tests: usize,
    /// connections being read/classified at once (the worker pool): a
    /// connection beyond it is closed at once
    pub max_conns: usize,
    /// shared secret: only clients that answer the challenge get a test
    pub secret: Option<Vec<u8>>,
    /// how long a test's data connections may take to arrive after its
    /// control connection (ns); 0: as long as the control connection stays
    /// (the emulator's page objects wait for a free connection)
    pub data_wait_ns: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_duration_ns: 600_000_000_000,
            max_streams: 128,
            min_info_interval_ns: 10_000_000,
            max_samples: 200_000,
            max_tests: 8,
            max_conns: 256,
            secret: None,
            data_wait_ns: 10_000_000_000,
        }
    }
}

impl ServerLimits {
    /// The emulator's private servers: nothing bounded but the streams.
    pub fn none() -> Self {
        ServerLimits { max_duration_ns: 0, min_info_interval_ns: 0, max_samples: 0, max_tests: 0, max_conns: 0, ..Default::default() }
    }

    /// Why `p` is refused, or None. The message names the client's flag.
    pub fn refuse(&self, p: &Params) -> Option<String> {
        if p.streams == 0 || p.streams > self.max_streams {
            return Some(format!("-P: streams must be in 1..{} (this server's limit)", self.max_streams));
        }
        let lim = self.max_duration_ns;
        if lim > 0 {
            match p.duration_ns {
                Some(d) if d > lim => {
                    return Some(format!("-t: {} s is longer than this server allows ({} s)", d / 1_000_000_000, lim / 1_000_000_000))
                }
                _ => {}
            }
        }
        if p.duration_ns == Some(0) {
            return Some("-t: the test length must be positive".into());
        }
        if let Some(cc) = &p.cc {
            // Linux's names are at most TCP_CA_NAME_MAX - 1 = 15 bytes; a longer one is echoed only in part
            if cc.is_empty() || cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Some(format!("-C: not a congestion control name: \"{}\"", crate::sys::echo_name(cc)));
            }
        }
        if p.onoff_ticks.is_some() && p.rate_bps.is_none() {
            return Some("--on/--off: need -b (the rate of the on periods)".into());
        }
        if p.onoff_ticks.is_some_and(|(on, _)| on == 0) {
            return Some("--on: must be at least one 10 ms write".into());
        }
        if p.rate_bps == Some(0) {
            return Some("-b: the rate must be positive".into());
        }
        if p.info_interval_ns < self.min_info_interval_ns.max(1) {
            return Some(format!(
                "--info-interval: {} ns is shorter than this server allows ({} ms)",
                p.info_interval_ns,
                self.min_info_interval_ns as f64 / 1e6
            ));
        }
        if self.max_samples > 0 && p.reverse {
            let dur = p.duration_ns.unwrap_or(lim).max(1);
            let samples = (p.streams as u128) * (dur as u128) / (p.info_interval_ns as u128);
            if samples > self.max_samples as u128 {
                return Some(format!(
                    "--info-interval: {} streams sampled every {} ms for {} s is {samples} TCP_INFO samples, more than this server keeps per test ({}); sample less often",
                    p.streams,
                    p.info_interval_ns as f64 / 1e6,
                    dur as f64 / 1e9,
                    self.max_samples
                ));
            }
        }
        None
    }

    /// A client's parameter line, as the server takes it: the parameters and
    /// the test's enforced length, or why not (and whether a limit refused
    /// it). Pure, so that it is fuzzed (`fuzz/fuzz_targets/control.rs`) and
    /// tested with random lines: never panics, whatever the line.
    pub fn admit(&self, line: &str) -> Result<(Params, Option<u64>), (String, bool)> {
        let p: Params = serde_json::from_str(line).map_err(|e| (format!("bad parameters: {e}"), false))?;
        if let Some(why) = self.refuse(&p) {
            return Err((why, true));
        }
        let d = self.deadline_ns(&p);
        Ok((p, d))
    }

    /// The test's length as the server enforces it (None: unbounded).
    fn deadline_ns(&self, p: &Params) -> Option<u64> {
        match (p.duration_ns, self.max_duration_ns) {
            (Some(d), 0) => Some(d),
            (None, 0) => None,
            (Some(d), lim) => Some(d.min(lim)),
            (None, lim) => Some(lim),
        }
    }
}

/// What the challenge answer signs: the challenge, then the parameter line
/// exactly as sent (its newline included).
pub(crate) fn auth_data(challenge: &str, line: &str) -> String {
    format!("{challenge}{line}")
}

pub(crate) fn send_json(mut c: &TcpStream, v: &Value) -> io::Result<()> {
    let mut s = v.to_string();
    s.push('\n');
    let _ = c.set_write_timeout(Some(Duration::from_secs(10)));
    c.write_all(s.as_bytes())
}

/// The peer closed the control connection (EOF waiting), without blocking.
pub(crate) fn control_closed(c: &TcpStream) -> bool {
    if c.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = matches!(c.peek(&mut [0u8; 1]), Ok(0)) || matches!(c.take_error(), Ok(Some(_)));
    let _ = c.set_nonblocking(false);
    closed
}

#[derive(Debug, Clone)]
pub struct ClientCfg {
    pub addr: SocketAddr,
    pub cc: Option<String>,
    /// `--pacing`: the sender (this client, or the server with -R) paces at the
    /// kernel's pacing rate whatever its control (`SO_MAX_PACING_RATE`)
    pub pacing: bool,
    pub streams: usize,
    pub reverse: bool,
    pub duration_ns: Option<u64>,
    pub bytes: Option<u64>,
    /// `-b`: the sender offers at most this many bit/s
    pub rate_bps: Option<u64>,
    /// `--on/--off` in write ticks
    pub onoff_ticks: Option<(u64, u64)>,
    pub cport: Option<u16>,
    pub info_interval_ns: u64,
    /// interval report period, 0 = none (and no printing at all)
    pub report_ns: u64,
    pub t0_mono: u64,
    /// flow ids start here (the load test runs two clients)
    pub first_id: usize,
    /// answers a server's challenge (`--secret`)
    pub secret: Option<Vec<u8>>,
    /// open the data connections only after a line on standard input (the
    /// control connection is set up first): the emulator starts a page's
    /// objects when a connection of the page is free
    pub wait_go: bool,
    /// created when every data connection has ended (a download: its last
    /// byte read), before the server's results are awaited
    pub done_file: Option<std::path::PathBuf>,
    /// frame the data connections for self probes, issued through this board
    /// (used when the server agrees)
    pub self_probes: Option<Arc<crate::probewire::Board>>,
    /// a timed test's senders stop at its end instead of waiting up to
    /// `TIMED_ACK_GRACE_NS` for the acks of what they wrote (this client's
    /// sender aborts; a download asks the server to stop, as on Ctrl-C):
    /// `load --halt-at-end`, whose measurement ends with its phase
    pub halt_at_end: bool,
    /// the phase this client loads, whose end is decided while it runs
    /// (`load --until-stable`, crate::live): the streams register there, and
    /// the senders halt at its end as with `halt_at_end`
    pub live: Option<Arc<crate::live::Live>>,
    /// how long to go on asking a server that refused the test for want of a
    /// slot (its answer's `busy`: the tests it runs at once, in all or from
    /// one address), a try every `stream::WAKE` (100 ms, the server's own
    /// wake period, within which a finished test's thread returns); 0: give up at the first
    /// refusal, as iperf3 does. The load test's phases follow one another:
    /// the last phase's test holds its slot until the server's thread has
    /// sent its results and returned, which the client does not wait for
    /// (a `--sequential` "both" phase, two tests from one address, was
    /// refused on a loaded machine by its own server's per-address limit of 2)
    pub busy_wait_ns: u64,
}

/// Everything the client learned, ready for [`Output`].
pub struct ClientResult {
    pub flows: Vec<FlowRaw>,
    pub series: FlowSeries,
    pub cc: Option<String>,
    /// why the test ended early, if it did (server killed, Ctrl-C)
    pub problem: Option<String>,
    pub server_kernel: Option<String>,
    pub duration_s: f64,
    /// the client's local port of each data connection
    pub local_ports: Vec<u16>,
    /// the flows (ids) whose data connection never reached the server (its
    /// results name them, `missing`): the server read or sent nothing on them
    pub missing_flows: Vec<usize>,
    /// when the test's steps ended (CLOCK_MONOTONIC ns): where a test's time goes after its duration
    pub timing: Timing,
}

/// When a test's steps after its duration ended (CLOCK_MONOTONIC ns, 0 = not known): the load test reports
/// them (`load`'s phases, `timing_s`), so that a phase's wall time beyond its length can be told apart —
/// the senders' wait for their acks, the server's teardown, its results crossing the path.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    /// every data connection's worker ended here (a sender after its acks or grace, a receiver at its EOF or reset)
    pub streams_done: u64,
    /// the server's results began to go out (its clock: known on the same host only, `boot_id`)
    pub server_results: u64,
    /// the server's results line was read whole (or given up)
    pub results_read: u64,
    /// the results line's size (B)
    pub results_bytes: u64,
}

/// [`ClientError::status`] of `tcp::run_client` when it found a stock
/// iperf3 server (it answered PARAM_EXCHANGE to our opening) and its caller
/// cannot run iperf3's protocol (the load test); the CLI uses
/// `tcp::client::run_client_or_iperf3` and runs the test on the same
/// connection. Never an exit status.
pub const IPERF3_SERVER: i32 = -9;

/// A client error with the exit status it deserves (2: bad argument).
#[derive(Debug)]
pub struct ClientError {
    pub status: i32,
    pub msg: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results line as the server sends it where the client asked it deflated.
    fn deflated_line(json: &str) -> String {
        let mut out = RESULTS_DEFLATED.as_bytes().to_vec();
        let mut z = deflated(&mut out);
        z.write_all(json.as_bytes()).unwrap();
        z.finish().unwrap().finish().unwrap();
        out.push(b'\n');
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_deflated_results_line_reads_back_as_its_json_and_a_plain_one_as_it_came() {
        let json = format!("{{\"streams\":[{}],\"boot_id\":\"x\"}}", vec!["{\"t\":[0.033,0.066,0.099]}"; 200].join(","));
        let line = deflated_line(&json);
        assert!(line.len() * 5 < json.len(), "{} B deflated from {} B", line.len(), json.len());
        assert_eq!(line.lines().count(), 1, "one line");
        assert_eq!(results_text(line.clone(), 1 << 20).as_deref(), Some(json.as_str()));
        let plain = format!("{json}\n");
        assert_eq!(results_text(plain.clone(), 1 << 20), Some(plain));
    }

    #[test]
    fn an_older_clients_parameters_ask_for_the_plain_results_line() {
        // a client from before the key: the server sends the line it always sent
        let p: Params = serde_json::from_str(r#"{"cookie":1,"streams":4,"reverse":true,"duration_ns":5000000000,"bytes":null,"cc":"cubic","info_interval_ns":33000000}"#).unwrap();
        assert!(!p.deflate_results);
        let back: Value = serde_json::to_value(Params { deflate_results: true, ..p }).unwrap();
        assert_eq!(back["deflate_results"], Value::Bool(true));
    }

    #[test]
    fn a_deflated_results_line_beyond_the_bound_or_garbled_is_no_results() {
        // a line that inflates past what the client reads (a server that sends a zip bomb) is refused whole
        let big = "x".repeat(100_000);
        let line = deflated_line(&big);
        assert!(line.len() < 1000, "{} B", line.len());
        assert_eq!(results_text(line.clone(), 99_999), None);
        assert_eq!(results_text(line, 100_000).map(|t| t.len()), Some(100_000));
        assert_eq!(results_text(format!("{RESULTS_DEFLATED}not base64!\n"), 1 << 20), None);
        assert_eq!(results_text(format!("{RESULTS_DEFLATED}aGVsbG8=\n"), 1 << 20), None, "base64 but not zlib");
    }

    /// A loopback connection: (our reader's end, the peer's end).
    fn pair() -> (TcpStream, TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(super::super::stream::WAKE)).unwrap();
        (s, c)
    }

    /// A peer that sends `chunks` pieces of its line `gap_ms` apart, then the newline.
    fn slow_line(c: TcpStream, chunks: usize, gap_ms: u64) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let mut c = c;
            for _ in 0..chunks {
                if c.write_all(b"{\"x\": 1").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(gap_ms));
            }
            let _ = c.write_all(b"}\n");
        })
    }

    #[test]
    fn results_that_keep_coming_are_read_past_the_silence_and_a_pause_ends_them() {
        // 12 pieces 150 ms apart (1.8 s) with 400 ms of allowed silence: read whole
        let (s, c) = pair();
        let peer = slow_line(c, 12, 150);
        let got = read_line_progress(&mut BufReader::new(&s), 400_000_000, 10_000_000_000, 1 << 20).unwrap();
        assert!(got.starts_with("{\"x\": 1{") && got.ends_with("}\n"), "{got}");
        peer.join().unwrap();
        // a pause of 1 s with 400 ms allowed: given up
        let (s, c) = pair();
        let peer = slow_line(c, 3, 1000);
        let r = read_line_progress(&mut BufReader::new(&s), 400_000_000, 10_000_000_000, 1 << 20);
        assert_eq!(r.map_err(|e| e.kind()), Err(io::ErrorKind::TimedOut));
        drop(s);
        peer.join().unwrap();
        // progress never ends it past the cap: 1.5 s of pieces 100 ms apart against a 0.6-s cap
        let (s, c) = pair();
        let peer = slow_line(c, 15, 100);
        let t = std::time::Instant::now();
        let r = read_line_progress(&mut BufReader::new(&s), 400_000_000, 600_000_000, 1 << 20);
        assert_eq!(r.map_err(|e| e.kind()), Err(io::ErrorKind::TimedOut));
        assert!(t.elapsed() < Duration::from_millis(600 + 100 + 500));
        drop(s);
        peer.join().unwrap();
    }

    #[test]
    fn a_peer_trickling_its_line_is_given_up_at_the_deadline_not_at_its_newline() {
        let (s, mut c) = pair();
        // one byte every 20 ms for 3 s, then the newline: each read returns data before
        // the socket's 100-ms timeout, so only a clock read after every read stops it
        let peer = std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_secs(3) && c.write_all(b"a").is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.write_all(b"\n");
        });
        let t = std::time::Instant::now();
        let r = read_line_max(&mut BufReader::new(&s), 500_000_000, MAX_CTRL_LINE);
        let took = t.elapsed();
        assert_eq!(r.map_err(|e| e.kind()), Err(io::ErrorKind::TimedOut));
        // given up at the first read after 500 ms: the next byte (20 ms) or the read
        // timeout (100 ms), plus a ~60-ms VM pause and a timeslice or two of a loaded
        // machine; the peer's newline at 3 s is far beyond
        assert!(took < Duration::from_millis(500 + 100 + 500), "given up after {took:?}");
        drop(s);
        peer.join().unwrap();
    }

    #[test]
    fn a_line_longer_than_the_bound_is_refused_and_a_split_character_is_kept() {
        let (s, mut c) = pair();
        c.write_all(&vec![b'a'; 5000]).unwrap();
        let e = read_line_max(&mut BufReader::new(&s), 1_000_000_000, 4096).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        // a two-byte character whose halves arrive 300 ms apart (three read timeouts)
        let (s, mut c) = pair();
        let mut rd = BufReader::new(&s);
        let peer = std::thread::spawn(move || {
            c.write_all(&[b'{', 0xc3]).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            c.write_all(&[0xa9, b'}', b'\n']).unwrap();
            c
        });
        assert_eq!(read_line_max(&mut rd, 5_000_000_000, MAX_CTRL_LINE).unwrap(), "{\u{e9}}\n");
        let _ = peer.join();
    }

    #[test]
    fn on_off_needs_a_rate() {
        let mut p = params(1, true, Some(1_000_000_000), 10_000_000);
        p.onoff_ticks = Some((1, 1));
        assert!(ServerLimits::default().refuse(&p).unwrap().starts_with("--on/--off"));
    }

    #[test]
    fn a_zero_rate_is_refused_by_name() {
        let mut p = params(1, true, Some(1_000_000_000), 10_000_000);
        p.rate_bps = Some(0);
        assert!(ServerLimits::default().refuse(&p).unwrap().starts_with("-b"));
    }

    fn params(streams: usize, reverse: bool, duration_ns: Option<u64>, info_interval_ns: u64) -> Params {
        Params { cookie: 1, streams, reverse, duration_ns, bytes: None, rate_bps: None, onoff_ticks: None, cc: None, info_interval_ns, pacing: false, self_probes: false, deflate_results: false }
    }

    #[test]
    fn the_default_limits_refuse_each_excess_naming_the_clients_flag() {
        let l = ServerLimits::default();
        assert!(l.refuse(&params(4, true, Some(10_000_000_000), 10_000_000)).is_none());
        assert!(l.refuse(&params(0, false, Some(1), 10_000_000)).unwrap().starts_with("-P"));
        assert!(l.refuse(&params(129, false, Some(1), 10_000_000)).unwrap().starts_with("-P"));
        // 2^64-1 ns used to wrap to an immediate end; now it is too long
        assert!(l.refuse(&params(1, false, Some(u64::MAX), 10_000_000)).unwrap().starts_with("-t"));
        assert!(l.refuse(&params(1, false, Some(10_000_000_000), 0)).unwrap().starts_with("--info-interval"));
        assert!(l.refuse(&params(1, false, Some(10_000_000_000), 1_000_000)).unwrap().starts_with("--info-interval"));
        // 128 streams x 600 s / 10 ms = 7.68 M samples > 200 k kept per test
        assert!(l.refuse(&params(128, true, Some(600_000_000_000), 10_000_000)).unwrap().contains("samples"));
        // the server's deadline applies to byte-count tests too
        assert_eq!(l.deadline_ns(&params(1, true, None, 10_000_000)), Some(600_000_000_000));
        assert_eq!(ServerLimits::none().deadline_ns(&params(1, true, None, 1)), None);
        assert!(ServerLimits::none().refuse(&params(128, true, Some(u64::MAX), 1)).is_none());
    }
}
