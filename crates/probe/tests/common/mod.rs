//! Helpers shared by the probe's integration tests: run the binary, start a
//! server on an ephemeral loopback port and learn its address.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bloatlab-probe")
}

pub fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run bloatlab-probe")
}

pub fn json_of(out: &Output) -> serde_json::Value {
    let s = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(s.trim()).unwrap_or_else(|e| {
        panic!("stdout is not one JSON object ({e}):\n{s}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr))
    })
}

/// A server process; killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: String,
    pub port: String,
}

impl Server {
    /// `args` e.g. ["udp", "server"]; binds 127.0.0.1:0 and reads the port
    /// from the "listening on" line.
    pub fn start(args: &[&str]) -> Server {
        Self::start_with(&[], args, "127.0.0.1:0")
    }
    pub fn start_with(prefix: &[&str], args: &[&str], bind: &str) -> Server {
        let mut cmd = if prefix.is_empty() {
            Command::new(bin())
        } else {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]).arg(bin());
            c
        };
        let mut child = cmd.args(args).args(["--bind", bind]).stderr(Stdio::piped()).stdout(Stdio::null()).spawn().expect("spawn server");
        let mut rd = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        rd.read_line(&mut line).unwrap();
        let addr = line.trim().rsplit(' ').find(|w| w.contains(':')).unwrap_or_else(|| panic!("no address in {line:?}")).to_string();
        let port = addr.rsplit(':').next().unwrap().to_string();
        // keep draining stderr so the server never blocks on a full pipe
        std::thread::spawn(move || {
            let mut s = String::new();
            while rd.read_line(&mut s).map(|n| n > 0).unwrap_or(false) {
                s.clear();
            }
        });
        Server { child, addr, port }
    }
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Wait for a child up to `limit`, its piped stdout and stderr read while it
/// runs: a child that writes more than a pipe holds (64 KiB: a timed test's
/// JSON with its TCP_INFO series) would otherwise block on the write and look
/// hung. `Err` (its output so far) where it was still running at the limit
/// and was killed.
pub fn collect(mut child: Child, limit: Duration) -> Result<Output, Output> {
    fn drain<R: std::io::Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    }
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let t = Instant::now();
    let (status, hung) = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break (status, false);
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            break (child.wait().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let o = Output { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() };
    if hung {
        Err(o)
    } else {
        Ok(o)
    }
}

/// Wait for a child with a deadline ([`collect`]); panics (after killing it) if it hangs.
pub fn wait_output(child: Child, limit: Duration) -> Output {
    collect(child, limit).unwrap_or_else(|o| panic!("process hung past {limit:?}; stdout:\n{}", String::from_utf8_lossy(&o.stdout)))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// xorshift64*: a seeded, dependency-free generator, so that a failing
/// random input can be replayed (soak.rs, control_fuzz.rs).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform-ish in 0..n (n = 0 counts as 1).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}


/// `ip ARGS`, its stderr as the error.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr)))
    }
}

/// Two network namespaces joined by a veth pair, `NET.1` in `a`, `NET.2` in
/// `b` (`net` like "10.77.0"); with `tbf_rate`, both veth ends are shaped by
/// tbf at that rate (64 KB bucket, 50 ms queue), each direction its own
/// bottleneck. Needs root. Removed on drop, also after a failure.
pub struct Netns {
    pub a: String,
    pub b: String,
    /// the veth ends in `a` and `b`
    pub dev_a: String,
    pub dev_b: String,
}

impl Netns {
    pub fn create(tag: &str, net: &str, tbf_rate: Option<&str>) -> Result<Netns, String> {
        let pid = std::process::id();
        let (va, vb) = (format!("bl{tag}a{}", pid % 100000), format!("bl{tag}b{}", pid % 100000));
        let n = Netns { a: format!("bloatlab-{tag}-a-{pid}"), b: format!("bloatlab-{tag}-b-{pid}"), dev_a: va.clone(), dev_b: vb.clone() };
        // from here on, Drop cleans up whatever was made
        ip(&["netns", "add", &n.a])?;
        ip(&["netns", "add", &n.b])?;
        ip(&["link", "add", &va, "netns", &n.a, "type", "veth", "peer", "name", &vb, "netns", &n.b])?;
        ip(&["-n", &n.a, "addr", "add", &format!("{net}.1/24"), "dev", &va])?;
        ip(&["-n", &n.b, "addr", "add", &format!("{net}.2/24"), "dev", &vb])?;
        for (ns, dev) in [(&n.a, &va), (&n.b, &vb)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            if let Some(rate) = tbf_rate {
                let o = Command::new("ip")
                    .args(["netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "50ms"])
                    .output()
                    .map_err(|e| format!("tc: {e}"))?;
                if !o.status.success() {
                    return Err(format!("tc tbf on {dev}: {}", String::from_utf8_lossy(&o.stderr)));
                }
            }
        }
        Ok(n)
    }
    /// Our binary in namespace `ns`.
    pub fn exec(&self, ns: &str, args: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", ns, bin()]).args(args).output().unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // deleting a namespace deletes its veth end, and with it the pair
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}
