//! `udp client --echo` against echo servers that are not ours (issue 14 §1):
//! the seed 002 server in C (compiled here with `cc`), a Python one, and a
//! Python one that damages and drops answers on purpose.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The seed's board server: recvfrom then sendto of the same buffer.
const SEED_SERVER_C: &str = r#"
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#define BUFLEN 64
int main(void) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a; memset(&a, 0, sizeof a);
    a.sin_family = AF_INET; a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); a.sin_port = 0;
    bind(s, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a; getsockname(s, (struct sockaddr *)&a, &l);
    printf("%d\n", ntohs(a.sin_port)); fflush(stdout);
    while (1) {
        char buf[BUFLEN]; struct sockaddr_in from; socklen_t fl = sizeof from;
        int n = recvfrom(s, buf, BUFLEN, 0, (struct sockaddr *)&from, &fl);
        if (n > 0) sendto(s, buf, n, 0, (struct sockaddr *)&from, fl);
    }
}
"#;

/// Python echo; every `DAMAGE`-th answer has a byte changed, every
/// `DROP`-th is not sent, every `GARBAGE`-th is preceded by a stray datagram
/// (0 = never).
const PY_SERVER: &str = r#"
import socket, sys
damage, drop, garbage = (int(x) for x in sys.argv[1:4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
i = 0
while True:
    b, a = s.recvfrom(65536)
    i += 1
    if drop and i % drop == 0:
        continue
    if garbage and i % garbage == 0:
        s.sendto(b"This is packet 999999999\n", a)
    if damage and i % damage == 0:
        b = b[:20] + bytes([b[20] ^ 0xff]) + b[21:]
    s.sendto(b, a)
"#;

struct Echo(Child, String);
impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
fn start(mut cmd: Command) -> Echo {
    let mut c = cmd.stdout(Stdio::piped()).spawn().expect("start echo server");
    let mut line = String::new();
    BufReader::new(c.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    Echo(c, format!("127.0.0.1:{}", line.trim()))
}

fn c_server() -> Option<Echo> {
    let dir = std::env::temp_dir().join(format!("bloatlab-probe-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("server.c"), SEED_SERVER_C).unwrap();
    let exe = dir.join("server");
    let ok = Command::new("cc").args(["-O2", "-o"]).arg(&exe).arg(dir.join("server.c")).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        eprintln!("SKIP: no C compiler (cc) to build the seed's echo server");
        return None;
    }
    Some(start(Command::new(exe)))
}

fn py_server(damage: u32, drop: u32, garbage: u32) -> Echo {
    let mut c = Command::new("python3");
    c.args(["-c", PY_SERVER, &damage.to_string(), &drop.to_string(), &garbage.to_string()]);
    start(c)
}

#[test]
fn echo_mode_measures_the_seeds_c_server_byte_for_byte() {
    let Some(s) = c_server() else { return };
    let o = run(&["udp", "client", &s.1, "--echo", "--count", "2000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = &json_of(&o)["echo"];
    assert_eq!(e["sent"], 2000);
    assert_eq!(e["received"], 2000, "{e}");
    assert_eq!(e["mismatched"], 0);
    assert_eq!(e["lost"], 0);
    let p50 = e["rtt_us"]["p50"].as_f64().unwrap();
    assert!(p50 > 0.5 && p50 < 5000.0, "loopback round trip p50 {p50} µs");
    // the text output: the seed's Avg/Min/Max and slow answers over --limit
    let o = run(&["udp", "client", &s.1, "--echo", "--count", "200", "--limit", "1ns"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Avg: ") && out.contains("Min: ") && out.contains("Max: "), "{out}");
    assert_eq!(out.matches("Slow answer #").count(), 200, "every answer is slower than 1 ns:\n{out}");
}

#[test]
fn damaged_answers_are_mismatches_drops_are_losses_and_neither_stalls() {
    // every 10th answer damaged, every 7th dropped, every 13th preceded by a stray
    let s = py_server(10, 7, 13);
    let t = std::time::Instant::now();
    let o = run(&["udp", "client", &s.1, "--echo", "--count", "700", "--timeout", "20ms", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = &json_of(&o)["echo"];
    // of 700 requests 100 are dropped (multiples of 7); of the 600 answered,
    // the multiples of 10 that are not multiples of 7 are damaged: 70 - 10 = 60
    assert_eq!(e["lost"], 100, "{e}");
    assert_eq!(e["mismatched"], 60, "{e}");
    assert_eq!(e["received"], 540, "{e}");
    assert!(e["stray"].as_u64().unwrap() >= 40, "strays counted apart: {e}");
    // 100 timeouts of 20 ms = 2 s; a damaged answer must cost no timeout
    assert!(t.elapsed().as_secs_f64() < 2.0 + 3.0, "took {:?}", t.elapsed());
}

#[test]
fn echo_mode_on_a_schedule_against_a_python_server() {
    let s = py_server(0, 0, 0);
    let o = run(&["udp", "client", &s.1, "--echo", "--count", "300", "--interval", "1ms", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = &json_of(&o)["echo"];
    assert_eq!(e["received"], 300, "{e}");
    assert_eq!(e["lost"], 0);
}

#[test]
fn bad_echo_arguments_exit_2_naming_the_flag() {
    for (args, flag) in [
        (&["udp", "client", "127.0.0.1:9", "--echo", "--count", "0"][..], "--count"),
        (&["udp", "client", "127.0.0.1:9", "--echo", "--size", "20"][..], "--size"),
        (&["udp", "client", "127.0.0.1:0", "--echo"][..], "HOST"),
        (&["udp", "client", "127.0.0.1", "--count", "0"][..], "--count"),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_plain_echo_server_is_detected_and_measured_in_echo_mode() {
    // without --echo: our own requests come back verbatim, so the client stops after a few and
    // measures the server as an echo server (issue 14 §1: "or detected automatically")
    let s = py_server(0, 0, 0);
    let t = std::time::Instant::now();
    let o = run(&["udp", "client", &s.1, "--count", "300", "--interval", "1ms", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("a plain UDP echo server"), "{}", stderr(&o));
    let e = &json_of(&o)["echo"];
    assert_eq!(e["sent"], 300, "{e}");
    assert_eq!(e["received"], 300, "{e}");
    assert_eq!(e["mismatched"], 0, "{e}");
    assert!(t.elapsed().as_secs_f64() < 5.0, "took {:?}", t.elapsed());
}
