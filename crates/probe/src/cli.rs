//! The `bloatlab-probe` command line. Bad arguments exit with status 2 and a
//! message naming the argument (clap's own errors do the same).

use crate::report::{fmt_us, Latency, Output};
use crate::{echo, iperf3, load, sys, tcp, train, udp};
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
    /// A packet train from the server (download): the port's rate behind a policer and its bucket
    Train(UdpTrainArgs),
}

/// `udp train`: the server sends N packets back to back; the client reads
/// the head's spacing (the port's rate), the tail's rate after the first
/// loss (a policer's rate) and the bytes before it (its bucket).
#[derive(Args, Debug)]
struct UdpTrainArgs {
    host: String,
    #[arg(short, long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// packets in the train (the server sends at most 4096); 1000 full packets outlast a
    /// 10-ms bucket up to ~1.2 Gbit/s
    #[arg(long, default_value_t = train::DEFAULT_COUNT, value_parser = clap::value_parser!(u32).range(1..=train::MAX_COUNT as i64))]
    count: u32,
    /// UDP payload bytes of each packet: 1472 = full 1500-B IPv4 packets (64..1472)
    #[arg(long, default_value_t = train::DEFAULT_SIZE as u64, value_parser = clap::value_parser!(u64).range(train::MIN_SIZE as u64..=train::MAX_SIZE as u64))]
    size: u64,
    #[arg(long)]
    secret: Option<String>,
    /// how long an answer may take before the request is sent again (twice)
    #[arg(long, default_value = "1s", value_parser = positive_dur)]
    timeout: u64,
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
    /// no self probes: the load connections carry raw bytes (the RPM's loaded
    /// part then comes from their TCP_INFO smoothed RTT)
    #[arg(long)]
    no_self_probes: bool,
    /// three loaded phases of -t each: download only, upload only, both at once
    #[arg(long)]
    sequential: bool,
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

/// A duration with a unit; a bare `0` is accepted (it needs none).
fn dur(s: &str) -> Result<u64, String> {
    if s.trim().parse::<f64>() == Ok(0.0) {
        return Ok(0);
    }
    units::parse_duration(s)
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

/// iperf3 flags bloatlab-probe does not take, each refused by name with why (not clap's generic message).
const IPERF3_UNSUPPORTED: &[(&str, &str)] = &[
    ("-w|--window", "the socket buffers are left to the kernel's autotuning (tcp_rmem/tcp_wmem), which a flow needs to fill a long path; limit a flow's rate with -b instead"),
    ("-M|--set-mss", "the MSS is the path's (1448 B of payload on a 1500-B MTU), as the scenarios assume"),
    ("-N|--no-delay", "bulk streams write whole buffers; Nagle never holds them"),
    ("-Z|--zerocopy", "not implemented"),
    ("-O|--omit", "the series has every sample from t = 0; leave the ramp out when reading it"),
    ("-u|--udp", "UDP tests are `bloatlab-probe udp client HOST` (round trips) or `load` (latency under load)"),
];

/// iperf3's own command lines, as its users type them: `-c HOST [...]` is
/// `tcp client HOST --iperf3 [...]`, `-s [-1]` is `server` (`tcp server
/// --one-off` with `-1`); either takes `-p PORT` and defaults to iperf3's
/// port 5201. The other flags pass through (`-t -i -C -R -P -n -b -J`);
/// ones we do not have are refused by name. Anything else is unchanged.
pub fn iperf3_style(args: Vec<String>) -> Vec<String> {
    let first = args.get(1).map(String::as_str).unwrap_or("");
    let is = |a: &str, short: &str, long: &str| a == short || a == long;
    let client = args.iter().position(|a| is(a, "-c", "--client"));
    let server = args.iter().position(|a| is(a, "-s", "--server"));
    if !first.starts_with('-') || matches!(first, "-h" | "--help" | "-V" | "--version") || (client.is_none() && server.is_none()) {
        return args;
    }
    let mut rest: Vec<String> = Vec::new();
    let mut port: Option<String> = None;
    let mut host: Option<String> = None;
    let mut one_off = false;
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        if is(a, "-c", "--client") {
            host = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if is(a, "-s", "--server") {
            i += 1;
            continue;
        }
        if is(a, "-p", "--port") {
            port = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if is(a, "-1", "--one-off") {
            one_off = true;
            i += 1;
            continue;
        }
        if let Some((_, why)) = IPERF3_UNSUPPORTED.iter().find(|(names, _)| names.split('|').any(|n| n == a || a.starts_with(&format!("{n}=")))) {
            // clap would say "unexpected argument '-w' found; to pass '-w' as a value, use '-- -w'"
            eprintln!("error: {a}: iperf3's flag is not one bloatlab-probe has: {why}");
            std::process::exit(2);
        }
        rest.push(args[i].clone());
        i += 1;
    }
    let port = port.unwrap_or_else(|| crate::iperf3::DEFAULT_PORT.to_string());
    let mut out = vec![args[0].clone()];
    match (client, host) {
        (Some(_), Some(h)) => {
            out.extend(["tcp".into(), "client".into(), h, "--iperf3".into(), "-p".into(), port]);
        }
        (Some(_), None) => {
            out.extend(["tcp".into(), "client".into()]); // clap names the missing HOST
        }
        (None, _) => {
            let sub: &[&str] = if one_off { &["tcp", "server", "--one-off"] } else { &["server"] };
            out.extend(sub.iter().map(|s| s.to_string()));
            out.extend(["--bind".into(), format!("[::]:{port}")]);
        }
    }
    out.extend(rest);
    out
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

fn udp_server(bind: SocketAddr, o: &UdpServerOpts, what: Option<&str>) -> R {
    let sock = UdpSocket::bind(bind).map_err(|e| (1, format!("--bind {bind}: {e}")))?;
    // the UDP server's own thread (`server` runs the TCP server in another, unpinned)
    o.sched.apply()?;
    eprintln!(
        "bloatlab-probe {} server listening on {}{}",
        what.unwrap_or("udp"),
        sock.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        if o.secret.is_some() { " (HMAC required)" } else { "" }
    );
    let cfg = udp::ServerCfg {
        secret: o.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        max_pps: o.max_pps,
        max_duration_ns: o.max_duration,
        verbose: o.verbose,
        busy_poll: o.sched.busy_poll,
    };
    let st = udp::serve(&sock, &cfg, &|| false).map_err(|e| (1, e.to_string()))?;
    eprintln!(
        "udp server: replied {}, ignored {} {:?}, rate-limited {}, duration-limited {}, trains {} (refused {})",
        st.replied, st.ignored, st.ignored_by, st.rate_limited, st.duration_limited, st.trains, st.trains_refused
    );
    Ok(0)
}

/// `udp train`: ask for a train, receive it, print what it tells.
fn udp_train(a: UdpTrainArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    let cfg = train::TrainCfg {
        addr,
        count: a.count,
        size: a.size as usize,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        timeout_ns: a.timeout,
    };
    let r = train::run_train(&cfg).map_err(|e| (1, e))?;
    let mut an = train::analyse(a.count, r.wire_bytes, &r.arrivals);
    if let Some(d) = r.local_drops.filter(|&d| d > 0) {
        an.notes.push(format!("this client's socket dropped {d} packets (its receive buffer was full): those losses are not the path's"));
    }
    let (server_sent, span_ns, errors) = match r.done {
        Some((n, s, e)) => (Some(n), Some(s), Some(e)),
        None => {
            // the DONE answer was lost: the span from the received packets' send times
            let lo = r.arrivals.iter().map(|x| x.tx_ns).min();
            let hi = r.arrivals.iter().map(|x| x.tx_ns).max();
            (None, lo.zip(hi).map(|(l, h)| h - l), None)
        }
    };
    let send_mbps = match (span_ns, server_sent.unwrap_or(a.count)) {
        (Some(s), n) if s > 0 && n > 1 => Some((n as u64 - 1) as f64 * r.wire_bytes as f64 * 8e3 / s as f64),
        _ => None,
    };
    if a.json {
        let mut t = an.to_json();
        let o = t.as_object_mut().unwrap();
        o.insert("size".into(), json!(a.size));
        o.insert("wire_bytes".into(), json!(r.wire_bytes));
        o.insert("server_sent".into(), json!(server_sent));
        o.insert("server_send_errors".into(), json!(errors));
        o.insert("send_ms".into(), json!(span_ns.map(|s| s as f64 / 1e6)));
        o.insert("send_from".into(), json!(if r.done.is_some() { "server" } else { "received packets' send times" }));
        o.insert("send_mbps".into(), json!(send_mbps));
        o.insert("local_drops".into(), json!(r.local_drops));
        o.insert("duplicates".into(), json!(r.duplicates));
        o.insert("foreign".into(), json!(r.foreign));
        o.insert("handshake_rtt_ms".into(), json!(r.handshake_rtt_ns as f64 / 1e6));
        o.insert("timestamps".into(), json!(if r.kernel_ts { "kernel rx (SO_TIMESTAMPNS)" } else { "user" }));
        o.insert("rates".into(), json!("Mbit/s of IP packets (UDP payload + 28 B over IPv4, + 48 B over IPv6)"));
        let out = json!({"test": "udp-train", "host": a.host, "server": addr.to_string(), "version": env!("CARGO_PKG_VERSION"), "train": t});
        println!("{out}");
        return Ok(0);
    }
    let f = |v: Option<f64>| v.map(|x| format!("{} Mbit/s", train::sig(x))).unwrap_or_else(|| "-".into());
    println!("UDP train from {addr}: {} packets of {} B ({} B on the wire)", a.count, a.size, r.wire_bytes);
    println!(
        "received {} of {}, lost {}{}",
        an.received,
        an.sent,
        an.lost.len(),
        an.first_loss.map(|i| format!(" (first at #{i})")).unwrap_or_default()
    );
    println!(
        "head: {} packets, {} B in {:.3} ms: leading rate {} (the port's, if the bucket let the head through)",
        an.head_packets,
        an.head_bytes,
        an.head_span_ns as f64 / 1e6,
        f(an.leading_mbps)
    );
    println!(
        "tail: {} packets after the first loss: {} (the policed rate; over their arrivals {}, over their send times {})",
        an.tail_packets,
        f(an.tail_mbps),
        f(an.tail_arrival_mbps),
        f(an.tail_send_mbps)
    );
    if let Some(b) = an.bucket_bytes {
        println!(
            "bucket ~{:.0} B (the head's bytes and half a packet, less what the policed rate refilled while it passed; {} B if the policer sat behind the port)",
            b,
            an.bucket_min_bytes.map(|x| format!("{x:.0}")).unwrap_or_else(|| "?".into())
        );
    }
    println!(
        "the server sent it in {} ({}){}",
        span_ns.map(|s| format!("{:.3} ms", s as f64 / 1e6)).unwrap_or_else(|| "?".into()),
        f(send_mbps),
        if r.done.is_none() { ", from the received packets' send times (its DONE was lost)" } else { "" }
    );
    for n in &an.notes {
        println!("note: {n}");
    }
    Ok(0)
}

/// The UDP client's configuration from its arguments (`count` None: `-t`).
fn udp_cfg(a: &UdpClientArgs, addr: SocketAddr, count: Option<u64>, report_ns: u64, t0: u64) -> udp::ClientCfg {
    udp::ClientCfg {
        addr,
        count,
        duration_ns: a.time,
        interval_ns: a.interval,
        size: a.size as usize,
        busy_poll: a.sched.busy_poll,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        timeout_ns: a.timeout.max(1_000_000),
        give_up_ns: a.give_up.max(a.timeout),
        report_ns,
        t0_mono: t0,
        stop_at_mono: None,
    }
}

fn udp_client(mut a: UdpClientArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    if a.echo {
        return echo_client(a, addr);
    }
    udp::flags_for(a.size as usize, a.secret.is_some()).map_err(|e| (2, e))?;
    if a.compare_sched {
        return compare_sched(a, addr);
    }
    a.sched.apply()?;
    let t0 = sys::mono_ns();
    // neither -t nor --count: a test of DEFAULT_UDP_TIME_NS, as iperf3's 10 s (500 000 requests
    // were ~14 hours of ping-pong on a 100-ms path)
    if a.time.is_none() && a.count.is_none() {
        a.time = Some(DEFAULT_UDP_TIME_NS);
    }
    let count = a.count;
    let cfg = udp_cfg(&a, addr, count, if a.json { 0 } else { a.report }, t0);
    if !a.json {
        println!(
            "UDP {} to {addr}, {} B requests, {}",
            if a.interval == 0 { "ping-pong".to_string() } else { format!("every {}", fmt_us(a.interval as f64 / 1e3)) },
            a.size,
            match (cfg.count, cfg.duration_ns) {
                (Some(n), _) => format!("{n} requests"),
                (_, Some(d)) => format!("{:.3} s", d as f64 / 1e9),
                _ => String::new(),
            }
        );
    }
    let r = udp::run_client(&cfg).map_err(|e| (1, e))?;
    if r.received == 0 && r.echoed >= udp::ECHO_DETECT && !a.echo && a.secret.is_none() {
        // detected: a plain echo server answers (seed 002's board); measure it as one
        eprintln!("{addr} echoes the requests verbatim: a plain UDP echo server, not bloatlab-probe server; measuring it with --echo");
        let a = UdpClientArgs { echo: true, size: a.size.max(echo::MIN_SIZE as _), ..a };
        return echo_client(a, addr);
    }
    let mut rtt = r.rtt_us.clone();
    let lat = Latency::of(&mut rtt);
    let mut u = r.user_rtt_us.clone();
    let ulat = Latency::of(&mut u);
    let mut s = r.server_us.clone();
    let slat = Latency::of(&mut s);
    let mut ip = r.ipdv_us.clone();
    let ipdv = Latency::of(&mut ip);
    let mut late = r.send_late_us.clone();
    let late = Latency::of(&mut late);
    let lost = r.sent - r.received.min(r.sent);
    let loss = if r.sent > 0 { lost as f64 / r.sent as f64 } else { 0.0 };
    let rate = r.sent as f64 / r.elapsed_s.max(1e-9);
    let offset = udp::Offset::estimate(&r.owd_up_ns, &r.owd_down_ns);
    let (up, down) = match &offset {
        Some(o) => {
            let (mut u, mut d) = o.one_way_us(&r.owd_up_ns, &r.owd_down_ns);
            (Latency::of(&mut u), Latency::of(&mut d))
        }
        None => (Latency::of(&mut []), Latency::of(&mut [])),
    };
    let code = if r.stop_reason.as_deref().map(|s| s != "interrupted").unwrap_or(false) { 1 } else { 0 };
    if a.json {
        let mut o = Output::new("udp", scenario("udp", &a.host), t0);
        o.duration_s = r.elapsed_s;
        o.probes = vec![r.probe_raw(0)];
        o.meta_extra.insert("timestamps".into(), json!(if r.kernel_ts { "kernel rx (SO_TIMESTAMPNS), user tx" } else { "user" }));
        o.extra.insert(
            "udp".into(),
            json!({"sent": r.sent, "received": r.received, "lost": lost, "loss": loss, "duplicates": r.duplicates,
                   "reordered": r.reordered, "mismatched": r.mismatched, "foreign": r.foreign,
                   "send_rate_pps": rate, "rtt_us": lat.to_json_us(), "user_rtt_us": ulat.to_json_us(),
                   "ipdv_us": ipdv.to_json_us(), "server_processing_us": slat.to_json_us(),
                   "send_lateness_us": late.to_json_us(), "server_timestamps": r.server_ts,
                   "clock_offset_us": offset.map(|o| o.offset_ns / 1e3), "clock_offset_bound_us": offset.map(|o| o.bound_ns / 1e3),
                   "clocks_synchronised": offset.map(|o| o.synchronised()), "one_way_label": offset.map(|o| o.label()),
                   "one_way_up_us": offset.map(|_| up.to_json_us()), "one_way_down_us": offset.map(|_| down.to_json_us()),
                   "stop_reason": r.stop_reason}),
        );
        o.extra.insert("histogram".into(), lat.to_json_us()["histogram"].clone());
        o.extra.insert("problem".into(), json!(r.stop_reason));
        print_json(&o);
    } else {
        println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        if let Some(why) = &r.stop_reason {
            println!("stopped early: {why}; summary of what was measured:");
        }
        println!(
            "sent {} received {} lost {} ({:.3} %) duplicates {} reordered {} payload mismatches {} in {:.3} s ({:.0} req/s)",
            r.sent, r.received, lost, loss * 100.0, r.duplicates, r.reordered, r.mismatched, r.elapsed_s, rate
        );
        println!(
            "rtt  min {} mean {} max {} stddev {}",
            fmt_us(lat.min), fmt_us(lat.mean), fmt_us(lat.max), fmt_us(lat.stddev)
        );
        println!("rtt  p50 {} p90 {} p99 {} p99.9 {}   ({} timestamps)", fmt_us(lat.p50), fmt_us(lat.p90), fmt_us(lat.p99), fmt_us(lat.p999),
                 if r.kernel_ts { "kernel rx" } else { "user-space" });
        println!("rtt (user-space rx) p50 {} p99 {}", fmt_us(ulat.p50), fmt_us(ulat.p99));
        println!("ipdv mean {} p50 {} p99 {} max {}", fmt_us(ipdv.mean), fmt_us(ipdv.p50), fmt_us(ipdv.p99), fmt_us(ipdv.max));
        if r.server_ts {
            println!("server processing p50 {} p99 {} max {}", fmt_us(slat.p50), fmt_us(slat.p99), fmt_us(slat.max));
        }
        if let Some(o) = &offset {
            println!("one-way up   p50 {} p99 {} min {}   down p50 {} p99 {} min {}", fmt_us(up.p50), fmt_us(up.p99), fmt_us(up.min), fmt_us(down.p50), fmt_us(down.p99), fmt_us(down.min));
            println!("  ({})", o.label());
        }
        if a.interval > 0 {
            println!("send lateness p50 {} p99 {} max {}", fmt_us(late.p50), fmt_us(late.p99), fmt_us(late.max));
        }
        if a.hist || lat.n > 0 {
            println!("histogram (rtt):\n{}", lat.hist_text());
        }
    }
    Ok(code)
}

/// One host scheduling policy of `--compare-sched`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sched {
    Default,
    Nice20,
    Rr99,
    FifoDma,
}

impl Sched {
    const ALL: [Sched; 4] = [Sched::Default, Sched::Nice20, Sched::Rr99, Sched::FifoDma];
    fn name(self) -> &'static str {
        match self {
            Sched::Default => "default (SCHED_OTHER, nice 0)",
            Sched::Nice20 => "nice -20",
            Sched::Rr99 => "SCHED_RR 99",
            Sched::FifoDma => "SCHED_FIFO 99 + cpu_dma_latency 0",
        }
    }
    /// Enter the policy; what it holds (the cpu_dma_latency request) lives as long as the returned value.
    fn enter(self) -> Result<Option<sys::CpuDmaLatency>, String> {
        match self {
            Sched::Default => Ok(None),
            Sched::Nice20 => sys::set_nice(-20).map(|_| None),
            Sched::Rr99 => sys::apply_rt(sys::RtPolicy::Rr(99)).map(|_| None),
            Sched::FifoDma => {
                let hold = sys::hold_cpu_dma_latency(0)?;
                sys::apply_rt(sys::RtPolicy::Fifo(99))?;
                Ok(Some(hold))
            }
        }
    }
    fn leave(self) {
        let _ = sys::set_sched_other();
        let _ = sys::set_nice(0);
    }
}

/// `udp client --compare-sched`: the same test under each policy, one after
/// the other, a histogram each with log-scaled bars (the tail is what differs).
fn compare_sched(a: UdpClientArgs, addr: SocketAddr) -> R {
    if let Some(cpu) = a.sched.pin {
        sys::pin_cpu(cpu).map_err(|e| (2, e))?;
    }
    sys::tight_timer_slack();
    let count = if a.time.is_none() { Some(a.count.unwrap_or(100_000)) } else { None };
    if !a.json {
        println!(
            "UDP {} to {addr}, {} B requests, {} per policy, 4 policies",
            if a.interval == 0 { "ping-pong".to_string() } else { format!("every {}", fmt_us(a.interval as f64 / 1e3)) },
            a.size,
            match (count, a.time) {
                (Some(n), _) => format!("{n} requests"),
                (_, Some(d)) => format!("{:.3} s", d as f64 / 1e9),
                _ => String::new(),
            }
        );
    }
    let mut rows = Vec::new();
    let mut failed = false;
    for pol in Sched::ALL {
        let held = match pol.enter() {
            Ok(h) => h,
            Err(e) => {
                pol.leave();
                if !a.json {
                    println!("\n== {}: skipped: {e}", pol.name());
                }
                rows.push(json!({"policy": pol.name(), "skipped": e}));
                continue;
            }
        };
        let cfg = udp_cfg(&a, addr, count, 0, sys::mono_ns());
        let r = udp::run_client(&cfg);
        drop(held);
        pol.leave();
        let r = r.map_err(|e| (1, e))?;
        let mut rtt = r.rtt_us.clone();
        let lat = Latency::of(&mut rtt);
        failed |= r.stop_reason.is_some();
        if !a.json {
            println!("\n== {}: sent {} received {}  rtt p50 {} p99 {} p99.9 {} max {}   ({} timestamps)",
                     pol.name(), r.sent, r.received, fmt_us(lat.p50), fmt_us(lat.p99), fmt_us(lat.p999), fmt_us(lat.max),
                     if r.kernel_ts { "kernel rx" } else { "user-space" });
            print!("{}", lat.hist_text_log());
        }
        rows.push(json!({"policy": pol.name(), "sent": r.sent, "received": r.received, "rtt_us": lat.to_json_us(), "stop_reason": r.stop_reason}));
        if sys::stopped() {
            break;
        }
    }
    if a.json {
        println!("{}", json!({"test": "udp-compare-sched", "host": a.host, "histogram_bars": "log10(1 + count)", "policies": rows}));
    } else {
        println!("\n(bars: log10(1 + count), so single outliers show)");
    }
    Ok(if failed { 1 } else { 0 })
}

fn tcp_client(a: TcpClientArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    if let Some(p) = a.cport {
        if p as u64 + a.parallel - 1 > 65535 {
            return Err((2, format!("--cport {p}: with -P {} the ports run past 65535", a.parallel)));
        }
    }
    let t0 = sys::mono_ns();
    let cfg = tcp::ClientCfg {
        addr,
        cc: a.cc.clone(),
        pacing: a.pacing,
        streams: a.parallel as usize,
        reverse: a.reverse,
        duration_ns: if a.bytes.is_some() { None } else { Some(a.time.unwrap_or(10_000_000_000)) },
        bytes: a.bytes,
        rate_bps: a.bitrate,
        onoff_ticks: match (a.on, a.off) {
            (Some(on), Some(off)) => {
                if on % tcp::APP_TICK_NS != 0 || off % tcp::APP_TICK_NS != 0 {
                    return Err((2, "--on/--off: the application writes every 10 ms; give whole multiples of 10ms".into()));
                }
                Some((on / tcp::APP_TICK_NS, off / tcp::APP_TICK_NS))
            }
            _ => None,
        },
        cport: a.cport,
        info_interval_ns: a.info_interval,
        report_ns: if a.json { 0 } else { a.report },
        t0_mono: t0,
        first_id: 0,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        wait_go: a.wait_go,
        done_file: a.done_file.clone(),
        self_probes: None,
    };
    if !a.json {
        println!("Connecting to host {}, port {}{}", a.host, addr.port(), if a.reverse { " (reverse: the server sends)" } else { "" });
    }
    if a.iperf3 {
        return iperf3_client(&a, &cfg, None);
    }
    let r = match tcp::run_client_or_iperf3(&cfg).map_err(|e| (e.status, e.msg))? {
        tcp::Answer::Iperf3(opened) => {
            eprintln!("{}: the server speaks iperf3's protocol (a stock iperf3 -s); running the test in it (--iperf3)", addr);
            return iperf3_client(&a, &cfg, Some(opened));
        }
        tcp::Answer::Bloatlab(r) => *r,
    };
    if a.json {
        print_json(&tcp::output(&cfg, &r, scenario("tcp", &a.host)));
    } else {
        tcp::print_summary(&r, a.reverse);
    }
    if let Some(p) = &r.problem {
        eprintln!("bloatlab-probe: {p}");
        return Ok(if sys::stopped() { 0 } else { 1 });
    }
    Ok(0)
}

/// `tcp client --iperf3`: a test against a stock iperf3 server. `opened`:
/// the control connection of bloatlab's client, whose opening the iperf3
/// server took for this test (`tcp::Answer::Iperf3`).
fn iperf3_client(a: &TcpClientArgs, cfg: &tcp::ClientCfg, opened: Option<iperf3::Opened>) -> R {
    let run = match opened {
        Some(o) => iperf3::run_opened(o, cfg, a.report, !a.json),
        None => iperf3::run_client(cfg, a.report, !a.json),
    }
    .map_err(|e| (e.status, e.msg))?;
    if a.json {
        let o = tcp::output(cfg, &run.result, scenario("tcp", &a.host));
        println!("{}", serde_json::to_string_pretty(&iperf3::json_output(cfg, &run, &a.host, cfg.addr.port(), &o)).unwrap());
    } else {
        iperf3::print_summary(&run, a.reverse);
    }
    if let Some(p) = &run.result.problem {
        eprintln!("bloatlab-probe: {p}");
        return Ok(if sys::stopped() { 0 } else { 1 });
    }
    Ok(0)
}

fn load_cmd(a: LoadArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    if a.down + a.up == 0 {
        return Err((2, "--down/--up: at least one flow is needed".into()));
    }
    let t0 = sys::mono_ns();
    let cfg = load::LoadCfg {
        addr,
        down: a.down as usize,
        up: a.up as usize,
        cc: a.cc.clone(),
        duration_ns: a.time,
        idle_ns: a.idle,
        probe_interval_ns: a.probe_interval,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        t0_mono: t0,
        verbose: a.verbose,
        self_probes: !a.no_self_probes,
        sequential: a.sequential,
    };
    if !a.json {
        println!("latency under load against {addr}: {:.1} s idle, then {} down + {} up flows for {:.1} s", a.idle as f64 / 1e9, a.down, a.up, a.time as f64 / 1e9);
    }
    let mut r = load::run(&cfg).map_err(|e| (e.status, e.msg))?;
    r.output.scenario = scenario("load", &a.host);
    if a.json {
        print_json(&r.output);
    } else {
        print!("{}", r.text);
    }
    if let Some(p) = &r.problem {
        eprintln!("bloatlab-probe: {p}");
        return Ok(if sys::stopped() { 0 } else { 1 });
    }
    Ok(0)
}

/// `udp client --echo`: any UDP echo server (see [`echo`]).
fn echo_client(a: UdpClientArgs, addr: SocketAddr) -> R {
    if (a.size as usize) < echo::MIN_SIZE {
        return Err((2, format!("--size {}: --echo needs at least {} bytes (\"This is packet N\\n\")", a.size, echo::MIN_SIZE)));
    }
    a.sched.apply()?;
    let cfg = echo::EchoCfg {
        addr,
        count: a.count.unwrap_or(500_000),
        interval_ns: a.interval,
        size: a.size as usize,
        timeout_ns: a.timeout.max(1_000_000),
        limit_ns: a.limit,
        busy_poll: a.sched.busy_poll,
        give_up_ns: a.give_up.max(a.timeout),
    };
    if !a.json {
        println!("UDP echo {} to {addr}, {} B \"This is packet N\" requests, {} requests", if a.interval == 0 { "ping-pong".to_string() } else { format!("every {}", fmt_us(a.interval as f64 / 1e3)) }, a.size, cfg.count);
    }
    let t0 = sys::mono_ns();
    let r = echo::run(&cfg).map_err(|e| (2, e))?;
    let mut rtt = r.rtt_us.clone();
    let lat = Latency::of(&mut rtt);
    let loss = if r.sent > 0 { r.lost as f64 / r.sent as f64 } else { 0.0 };
    if a.json {
        let mut o = Output::new("udp", scenario("udp-echo", &a.host), t0);
        o.duration_s = r.elapsed_s;
        o.meta_extra.insert("timestamps".into(), json!("user-space, client only (echo server)"));
        o.extra.insert(
            "echo".into(),
            json!({"sent": r.sent, "received": r.received, "lost": r.lost, "loss": loss, "mismatched": r.mismatched,
                   "stray": r.stray, "size": a.size, "timeout_us": cfg.timeout_ns as f64 / 1e3,
                   "rtt_us": lat.to_json_us(), "limit_us": a.limit.map(|l| l as f64 / 1e3), "slow_count": r.slow_count,
                   "slow": r.slow.iter().map(|(n, us)| json!([n, us])).collect::<Vec<_>>(), "interrupted": r.interrupted,
                   "stop_reason": r.stop_reason}),
        );
        o.extra.insert("histogram".into(), lat.to_json_us()["histogram"].clone());
        print_json(&o);
    } else {
        for (n, us) in &r.slow {
            println!("Slow answer #{n}: {}", fmt_us(*us));
        }
        if r.slow_count > r.slow.len() as u64 {
            println!("... {} slow answers in all (first {} listed)", r.slow_count, r.slow.len());
        }
        println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        if let Some(why) = &r.stop_reason {
            println!("stopped early: {why}; summary of what was measured:");
        }
        println!(
            "sent {} answered {} lost {} ({:.3} %) mismatched {} stray {} in {:.3} s",
            r.sent, r.received, r.lost, loss * 100.0, r.mismatched, r.stray, r.elapsed_s
        );
        println!("Avg: {}  Min: {}  Max: {}", fmt_us(lat.mean), fmt_us(lat.min), fmt_us(lat.max));
        println!("p50 {} p90 {} p99 {} p99.9 {}   (user-space timestamps)", fmt_us(lat.p50), fmt_us(lat.p90), fmt_us(lat.p99), fmt_us(lat.p999));
        if lat.n > 0 {
            println!("histogram (rtt, log-scale buckets):\n{}", lat.hist_text());
        }
    }
    Ok(if r.stop_reason.is_some() { 1 } else { 0 })
}
