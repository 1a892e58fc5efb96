//! The `bloatlab-probe` command line. Bad arguments exit with status 2 and a
//! message naming the argument (clap's own errors do the same).
//!
//! Here: the arguments (clap) and their value parsers, and the dispatch;
//! [`iperf3_style`]: iperf3's own command lines translated; `udp_verbs`: the UDP
//! verbs (server, client, train, echo, the scheduling comparison); `tcp_verbs`:
//! the TCP verbs (client, iperf3 client, load).

mod iperf3_style;
mod tcp_verbs;
mod udp_verbs;

pub use iperf3_style::iperf3_style;
use tcp_verbs::*;
use udp_verbs::*;

use crate::report::{fmt_us, Latency, Output};
use crate::{echo, iperf3, live, load, sys, tcp, train, train_up, udp};
use bloatlab_core::units;
use clap::{Args, Parser, Subcommand};
use serde_json::json;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs, UdpSocket};

pub const DEFAULT_PORT: u16 = 5301;

#[derive(Parser, Debug)]
#[command(name = "bloatlab-probe", version, about = "bloatlab probes: UDP latency, TCP throughput, latency under load")]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// UDP request/response latency
    Udp {
        #[command(subcommand)]
        cmd: UdpCmd,
    },
    /// TCP throughput with TCP_INFO time series
    Tcp {
        #[command(subcommand)]
        cmd: TcpCmd,
    },
    /// TCP and UDP servers on one port (what `load` talks to)
    Server {
        #[arg(long, default_value = "0.0.0.0:5301", value_name = "ADDR:PORT")]
        bind: SocketAddr,
        #[command(flatten)]
        udp: UdpServerOpts,
        #[command(flatten)]
        tcp: TcpLimitOpts,
    },
    /// Latency under load (rrul-like) and responsiveness
    Load(LoadArgs),
}

#[derive(Subcommand, Debug)]
enum UdpCmd {
    /// Echo server
    Server {
        #[arg(long, default_value = "0.0.0.0:5301", value_name = "ADDR:PORT")]
        bind: SocketAddr,
        #[command(flatten)]
        opts: UdpServerOpts,
    },
    /// Latency client
    Client(UdpClientArgs),
    /// A packet train from the server (download; --up: to the server): the port's rate behind a policer and its bucket
    Train(UdpTrainArgs),
}

/// `udp train`: the server sends N packets back to back; the client reads
/// the head's spacing (the port's rate), the tail's rate after the first
/// loss (a policer's rate) and the bytes before it (its bucket). `--up`: the
/// client sends them, the server stamps their arrivals, the same reading.
#[derive(Args, Debug)]
struct UdpTrainArgs {
    host: String,
    /// the train goes up, client → server: the server records the arrivals and the client reads
    /// them back (the uplink's port, policer and queue)
    #[arg(long)]
    up: bool,
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// packets in the train (the server sends at most 4096); 1000 full packets outlast a
    /// 10-ms bucket up to ~1.2 Gbit/s
    #[arg(long, default_value_t = train::DEFAULT_COUNT, value_parser = clap::value_parser!(u32).range(1..=train::MAX_COUNT as i64))]
    count: u32,
    /// UDP payload bytes of each packet: 1472 = full 1500-B IPv4 packets (64..1472)
    #[arg(long, default_value_t = train::DEFAULT_SIZE as u64, value_parser = clap::value_parser!(u64).range(train::MIN_SIZE as u64..=train::MAX_SIZE as u64))]
    size: u64,
    /// pace the train at this rate (IP packets, e.g. "60Mbit") instead of back to back: at or below
    /// a port's rate its queue stays short, so the first loss is a policer's; the train may last at
    /// most 1 s at the server
    #[arg(long, value_parser = rate)]
    rate: Option<u64>,
    #[arg(long)]
    secret: Option<String>,
    /// how long an answer may take before the request is sent again (twice)
    #[arg(long, default_value = "1s", value_parser = positive_dur)]
    timeout: u64,
    /// the handshake first, then the train only after a line on standard input (down: the request
    /// that starts the server's train; up: the client's first packet)
    #[arg(long)]
    wait_go: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct UdpServerOpts {
    /// shared secret: only HMAC-signed requests are answered
    #[arg(long)]
    secret: Option<String>,
    /// per-client packet rate limit (packets/s, 0 = none)
    #[arg(long, default_value_t = 1_000_000)]
    max_pps: u64,
    /// longest UDP session per client and longest TCP test (e.g. 10min; 0 = none)
    #[arg(long, default_value = "10min", value_parser = dur)]
    max_duration: u64,
    /// of the UDP server (in `server`, its thread only)
    #[command(flatten)]
    sched: SchedOpts,
    #[arg(short, long)]
    verbose: bool,
}

/// How a UDP end is scheduled: the client's and the server's alike.
#[derive(Args, Debug)]
struct SchedOpts {
    /// real-time scheduling like chrt: fifo:PRIO or rr:PRIO
    #[arg(long, value_parser = sys::parse_rt)]
    rt: Option<sys::RtPolicy>,
    /// spin on the socket instead of sleeping (and SO_BUSY_POLL if allowed)
    #[arg(long)]
    busy_poll: bool,
    /// pin to this CPU
    #[arg(long)]
    pin: Option<usize>,
}

impl SchedOpts {
    /// Pin (a CPU we lack: exit 2) and take the real-time policy (refused: exit 1), for the calling thread.
    fn apply(&self) -> Result<(), (i32, String)> {
        if let Some(cpu) = self.pin {
            sys::pin_cpu(cpu).map_err(|e| (2, e))?;
        }
        if let Some(p) = self.rt {
            sys::apply_rt(p).map_err(|e| (1, e))?;
        }
        sys::tight_timer_slack();
        Ok(())
    }
}

/// What the TCP server grants one client (docs/probe.md, "Server limits").
#[derive(Args, Debug)]
struct TcpLimitOpts {
    /// most data connections in one test (-P)
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_streams: u64,
    /// shortest TCP_INFO sampling interval a client may ask for (0 = any)
    #[arg(long, default_value = "10ms", value_parser = dur)]
    min_info_interval: u64,
    /// TCP_INFO samples one test may keep: streams x length / interval (0 = no limit)
    #[arg(long, default_value_t = 200_000)]
    max_samples: u64,
    /// tests running at once (0 = no limit)
    #[arg(long, default_value_t = 8)]
    max_tests: usize,
    /// connections in service at once; more are closed at once (0 = no limit)
    #[arg(long, default_value_t = 256)]
    max_conns: usize,
    /// how long a test's data connections may take to arrive after its control connection (0 = while the control connection stays)
    #[arg(long, default_value = "10s", value_parser = dur)]
    data_wait: u64,
}

impl TcpLimitOpts {
    fn limits(&self, max_duration_ns: u64, secret: &Option<String>) -> tcp::ServerLimits {
        tcp::ServerLimits {
            max_duration_ns,
            max_streams: self.max_streams as usize,
            min_info_interval_ns: self.min_info_interval,
            max_samples: self.max_samples,
            max_tests: self.max_tests,
            max_conns: self.max_conns,
            secret: secret.as_ref().map(|s| s.as_bytes().to_vec()),
            data_wait_ns: self.data_wait,
        }
    }
}

/// `udp client`'s test length without -t or --count: iperf3's default (10 s).
const DEFAULT_UDP_TIME_NS: u64 = 10_000_000_000;

#[derive(Args, Debug)]
struct UdpClientArgs {
    host: String,
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// number of requests, instead of a test length (at least 1)
    #[arg(long, conflicts_with = "time", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// test length (seconds, or e.g. 500ms); default 10 s, as iperf3's, unless --count is given
    #[arg(short = 't', long = "time", value_parser = secs)]
    time: Option<u64>,
    /// time between requests: 0 = ping-pong (the next when the reply comes), else a fixed
    /// schedule (e.g. 10ms, 10us); `-i` is the report interval, as in iperf3
    #[arg(long = "send-interval", alias = "interval", default_value = "0", value_parser = dur)]
    interval: u64,
    /// UDP payload bytes
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(16..=1472))]
    size: u64,
    #[command(flatten)]
    sched: SchedOpts,
    #[arg(long)]
    secret: Option<String>,
    /// how long to wait for one reply
    #[arg(long, default_value = "1s", value_parser = dur)]
    timeout: u64,
    /// stop when nothing came back for this long
    #[arg(long, default_value = "3s", value_parser = dur)]
    give_up: u64,
    /// interval report period (seconds; 0 = none)
    #[arg(short = 'i', long = "report-interval", default_value = "1", value_parser = secs)]
    report: u64,
    /// print the histogram
    #[arg(long)]
    hist: bool,
    /// talk to any UDP echo server (payload "This is packet N", checked byte for byte)
    #[arg(long, conflicts_with_all = ["secret", "time"])]
    echo: bool,
    /// with --echo: list answers slower than this (e.g. 1ms)
    #[arg(long, value_parser = positive_dur, requires = "echo")]
    limit: Option<u64>,
    /// run the test once under each host scheduling policy (default, nice -20, SCHED_RR 99,
    /// SCHED_FIFO 99 with /dev/cpu_dma_latency held at 0) and print one histogram each
    #[arg(long, conflicts_with_all = ["rt", "echo"])]
    compare_sched: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum TcpCmd {
    Server {
        #[arg(long, default_value = "0.0.0.0:5301", value_name = "ADDR:PORT")]
        bind: SocketAddr,
        /// exit after one test
        #[arg(long)]
        one_off: bool,
        /// shared secret: a client must answer the server's challenge with it
        #[arg(long)]
        secret: Option<String>,
        /// longest test (e.g. 10min; 0 = none)
        #[arg(long, default_value = "10min", value_parser = dur)]
        max_duration: u64,
        #[command(flatten)]
        limits: TcpLimitOpts,
        #[arg(short, long)]
        verbose: bool,
    },
    Client(TcpClientArgs),
}

#[derive(Args, Debug)]
struct TcpClientArgs {
    /// the server (`bloatlab-probe tcp server`, or a stock `iperf3 -s`): HOST, HOST:PORT or [V6]:PORT
    host: String,
    /// the server's control port
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// congestion control of the sender (cubic, bbr, reno, ...)
    #[arg(short = 'C', long = "congestion")]
    cc: Option<String>,
    /// parallel streams
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=128))]
    parallel: u64,
    /// reverse: the server sends
    #[arg(short = 'R', long)]
    reverse: bool,
    /// the sender paces at the kernel's pacing rate whatever its congestion control (SO_MAX_PACING_RATE), as sch_fq on the sending host would
    #[arg(long)]
    pacing: bool,
    /// test length (seconds, or e.g. 500ms); default 10
    #[arg(short = 't', long = "time", value_parser = secs, conflicts_with = "bytes")]
    time: Option<u64>,
    /// send exactly this many bytes (e.g. 10MB) and report the completion time
    #[arg(short = 'n', long = "bytes", value_parser = size)]
    bytes: Option<u64>,
    /// the sender offers at most this rate (e.g. 5Mbit; written every 10 ms), like iperf3's -b; default: as fast as TCP goes
    #[arg(short = 'b', long = "bitrate", value_parser = rate)]
    bitrate: Option<u64>,
    /// with -b: the application writes for this long (whole 10 ms), then is silent for --off, repeating
    #[arg(long, value_parser = positive_dur, requires_all = ["bitrate", "off"])]
    on: Option<u64>,
    /// with --on: the silent part of each period (whole 10 ms)
    #[arg(long, value_parser = dur, requires = "on")]
    off: Option<u64>,
    /// local port of the (first) data connection
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    cport: Option<u16>,
    /// TCP_INFO sampling period
    #[arg(long, default_value = "10ms", value_parser = positive_dur)]
    info_interval: u64,
    /// shared secret, when the server asks for one
    #[arg(long)]
    secret: Option<String>,
    /// interval report period (seconds; 0 = none)
    #[arg(short = 'i', long = "interval", default_value = "1", value_parser = secs)]
    report: u64,
    /// open the data connection only after a line on standard input (the control connection first)
    #[arg(long)]
    wait_go: bool,
    /// create this file as soon as the data connection has ended (a download: its last byte read)
    #[arg(long, value_name = "PATH")]
    done_file: Option<std::path::PathBuf>,
    /// speak iperf3's protocol (a stock `iperf3 -s`; found by itself when the server answers like one)
    #[arg(long, conflicts_with_all = ["wait_go", "done_file", "secret", "on"])]
    iperf3: bool,
    /// JSON on stdout (-J: with --iperf3, iperf3's layout with bloatlab's result under "bloatlab")
    #[arg(short = 'J', long)]
    json: bool,
}

#[derive(Args, Debug)]
struct LoadArgs {
    /// the server (`bloatlab-probe server`): HOST, HOST:PORT or [V6]:PORT
    host: String,
    /// the server's port (TCP and UDP)
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// bulk flows server → client
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=64))]
    down: u64,
    /// bulk flows client → server
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=64))]
    up: u64,
    /// congestion control of the load's senders (cubic, bbr, reno, ...; default: each host's)
    #[arg(short = 'C', long = "congestion")]
    cc: Option<String>,
    /// loaded phase length (seconds)
    #[arg(short = 't', long = "time", default_value = "10", value_parser = positive_secs)]
    time: u64,
    /// idle phase length (seconds)
    #[arg(long, default_value = "2", value_parser = positive_secs)]
    idle: u64,
    /// UDP probe period
    #[arg(long, default_value = "10ms", value_parser = positive_dur)]
    probe_interval: u64,
    /// TCP_INFO sample period of the loaded flows (10ms..1s; the server's
    /// --min-info-interval may ask for more): the result carries one sample
    /// per flow per period, which a slow path must carry back
    #[arg(long, default_value = "10ms", value_parser = sample_interval)]
    sample_interval: u64,
    /// no self probes: the load connections carry raw bytes (the RPM's loaded
    /// part then comes from their TCP_INFO smoothed RTT)
    #[arg(long)]
    no_self_probes: bool,
    /// no foreign probes (the draft's separate connections, 10 a second):
    /// the UDP probes alone measure the round trip, and no phase waits up to
    /// 2 s after its end for a probe's handshake a loaded queue dropped (the
    /// RPM's foreign part is then unknown)
    #[arg(long)]
    no_foreign_probes: bool,
    /// three loaded phases of -t each: download only, upload only, both at once
    #[arg(long)]
    sequential: bool,
    /// the flows stop when their phase ends instead of waiting up to 2 s for
    /// the acks of what they wrote (a deep queue's worth): the phase is all
    /// the result holds, and the results come back over an emptied queue
    #[arg(long)]
    halt_at_end: bool,
    /// each loaded phase ends once the load is saturated (its goodput and the
    /// probes' round trip stable over a moving window, draft-ietf-ippm-
    /// responsiveness §4.3, after a queue or a loss), at twice that time so
    /// that its second half is saturated, not before FLOOR nor after -t; the
    /// flows then stop with it, as with --halt-at-end
    #[arg(long, value_name = "FLOOR", value_parser = positive_dur)]
    until_stable: Option<u64>,
    /// with --until-stable: nor before the flows delivered N full segments
    /// (1448 B of payload each), whatever the rate they ran at: the windows a
    /// phase's second half is read over then each hold enough packets (a
    /// FLOOR in seconds asks for the rate in advance)
    #[arg(long, value_name = "N", requires = "until_stable", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    floor_packets: Option<u64>,
    /// with --until-stable: only a standing queue shows the pipe found, not a
    /// loss (a path with random loss, where a loss-based load meets losses
    /// below the pipe's rate and may sit on a plateau under it)
    #[arg(long, requires = "until_stable")]
    queue_only: bool,
    /// each loaded phase ends a round trip after a flow first met a loss, or
    /// at -t if none did by then (a loss just before -t still gets its round
    /// trip): a loss-based load without HyStart (-C reno) overflows the
    /// bottleneck's buffer at the end of its slow start, and its round trip
    /// then is the buffer's depth; the flows stop with it, as with
    /// --halt-at-end
    #[arg(long, conflicts_with = "until_stable")]
    until_loss: bool,
    /// a loaded phase that runs to -t (from its start) stops its flows
    /// there where its second half (from the flows' first samples) spanned
    /// N loaded round trips (the probes' and the flows' own, the largest):
    /// what a reading over N round trips needs is then there; otherwise the
    /// flows wait for their acks, up to 2 s, and the link stays loaded
    /// meanwhile (the phase's JSON: `halt`)
    #[arg(long, value_name = "N", conflicts_with_all = ["until_loss", "halt_at_end"], value_parser = halt_rtts)]
    halt_rtts: Option<f64>,
    /// with --halt-rtts: and where that half carried M full segments (1448 B
    /// of payload each)
    #[arg(long, value_name = "M", requires = "halt_rtts", value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    halt_packets: Option<u64>,
    /// shared secret, when the server asks for one
    #[arg(long)]
    secret: Option<String>,
    /// the result as JSON on stdout instead of the text summary
    #[arg(long)]
    json: bool,
    /// per phase, the probes sent and answered (stderr)
    #[arg(short, long)]
    verbose: bool,
}

/// `load --sample-interval`: 10 ms (the server's default floor) to 1 s.
fn sample_interval(s: &str) -> Result<u64, String> {
    let ns = positive_dur(s)?;
    if !(10_000_000..=1_000_000_000).contains(&ns) {
        return Err(format!("expected 10ms..1s, got {s}"));
    }
    Ok(ns)
}

/// A duration with a unit; a bare `0` is accepted (it needs none).
fn dur(s: &str) -> Result<u64, String> {
    if s.trim().parse::<f64>() == Ok(0.0) {
        return Ok(0);
    }
    units::parse_duration(s)
}
/// `--halt-rtts`: a number of round trips, 1 to 1000 (beyond, no phase's second half spans them: the option
/// would never act).
fn halt_rtts(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (1.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("expected a number of round trips from 1 to 1000, got \"{s}\"")),
    }
}
fn positive_dur(s: &str) -> Result<u64, String> {
    match units::parse_duration(s)? {
        0 => Err(format!("expected a positive duration, got \"{s}\"")),
        v => Ok(v),
    }
}
/// seconds as a bare number (`10`, `0.5`) or a duration with a unit.
fn secs(s: &str) -> Result<u64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * 1e9).round() as u64),
        Ok(_) => Err(format!("expected a non-negative number of seconds, got \"{s}\"")),
        Err(_) => units::parse_duration(s),
    }
}
fn positive_secs(s: &str) -> Result<u64, String> {
    match secs(s)? {
        0 => Err(format!("expected a positive duration, got \"{s}\"")),
        v => Ok(v),
    }
}
fn rate(s: &str) -> Result<u64, String> {
    match units::parse_rate(s)? {
        0 => Err(format!("expected a positive rate, got \"{s}\"")),
        v => Ok(v),
    }
}
fn size(s: &str) -> Result<u64, String> {
    match units::parse_size(s)? {
        0 => Err(format!("expected a positive size, got \"{s}\"")),
        v => Ok(v),
    }
}

/// `host` may carry its own port: `HOST:PORT` or `[V6]:PORT` (then `port`
/// is not used).
fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    if let Ok(a) = host.parse::<SocketAddr>() {
        if a.port() == 0 {
            return Err(format!("HOST {host}: the port after ':' must be 1..65535"));
        }
        return Ok(a);
    }
    if let Some((h, p)) = host.rsplit_once(':') {
        if !h.contains(':') {
            let p: u16 = p.parse().ok().filter(|&p| p > 0).ok_or_else(|| format!("HOST {host}: the port after ':' must be 1..65535"))?;
            return resolve(h, p);
        }
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("HOST {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("HOST {host}: no address"))
}

fn scenario(test: &str, host: &str) -> serde_json::Value {
    json!({"test": test, "host": host, "args": std::env::args().skip(1).collect::<Vec<_>>()})
}

fn print_json(o: &Output) {
    use std::io::Write;
    // A reader that stopped early (`| head`) is not an error worth a panic: SIGPIPE is
    // ignored (sys::install_signal_handlers), so the write sees EPIPE; the test is over.
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{}", serde_json::to_string(&o.to_json()).unwrap()).and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("bloatlab-probe: writing the result: {e}");
            std::process::exit(1);
        }
    }
}

/// Run the CLI; returns the exit status.
pub fn main() -> i32 {
    let cli = Cli::parse_from(iperf3_style(std::env::args().collect())); // exits 2 on bad arguments
    sys::install_signal_handlers();
    match run(cli) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("bloatlab-probe: error: {msg}");
            code
        }
    }
}

type R = Result<i32, (i32, String)>;

fn run(cli: Cli) -> R {
    match cli.cmd {
        Cmd::Udp { cmd: UdpCmd::Server { bind, opts } } => udp_server(bind, &opts, None),
        Cmd::Udp { cmd: UdpCmd::Client(a) } => udp_client(a),
        Cmd::Udp { cmd: UdpCmd::Train(a) } => udp_train(a),
        Cmd::Tcp { cmd: TcpCmd::Server { bind, one_off, secret, max_duration, limits, verbose } } => {
            let l = TcpListener::bind(bind).map_err(|e| (1, format!("--bind {bind}: {e}")))?;
            eprintln!("bloatlab-probe tcp server listening on {}", l.local_addr().map(|a| a.to_string()).unwrap_or_default());
            tcp::serve_with(l, one_off, verbose, limits.limits(max_duration, &secret)).map_err(|e| (1, e.to_string()))?;
            Ok(0)
        }
        Cmd::Tcp { cmd: TcpCmd::Client(a) } => tcp_client(a),
        Cmd::Server { bind, udp, tcp: lim } => {
            let l = TcpListener::bind(bind).map_err(|e| (1, format!("--bind {bind}: {e}")))?;
            let bound = l.local_addr().unwrap_or(bind); // port 0: the UDP server takes the same port
            let limits = lim.limits(udp.max_duration, &udp.secret);
            let verbose = udp.verbose;
            let t = std::thread::spawn(move || tcp::serve_with(l, false, verbose, limits));
            let r = udp_server(bound, &udp, Some("tcp+udp"));
            let _ = t.join();
            r
        }
        Cmd::Load(a) => load_cmd(a),
    }
}
