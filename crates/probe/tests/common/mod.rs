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

/// Wait for a child with a deadline; panics (after killing it) if it hangs.
pub fn wait_output(mut child: Child, limit: Duration) -> Output {
    let t = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return child.wait_with_output().unwrap();
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("process hung past {limit:?}; stdout:\n{}", String::from_utf8_lossy(&o.stdout));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

