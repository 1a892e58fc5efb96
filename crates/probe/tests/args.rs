//! Bad arguments exit with status 2 and name the argument.

mod common;
use common::*;

fn assert_bad(args: &[&str], names: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(2), "{args:?} -> {}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(names), "{args:?}: the error names {names}:\n{e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn bad_arguments_exit_2_naming_the_argument() {
    assert_bad(&["udp", "client", "127.0.0.1", "--size", "8"], "--size");
    assert_bad(&["udp", "client", "127.0.0.1", "--size", "2000"], "--size");
    assert_bad(&["udp", "client", "127.0.0.1", "--send-interval", "fast"], "--send-interval");
    assert_bad(&["udp", "client", "127.0.0.1", "--interval", "fast"], "--send-interval"); // its older name, an alias
    assert_bad(&["udp", "client", "127.0.0.1", "--rt", "fifo:200"], "--rt");
    assert_bad(&["udp", "client", "127.0.0.1", "--rt", "idle:3"], "--rt");
    assert_bad(&["udp", "client", "127.0.0.1", "--pin", "4096"], "--pin");
    assert_bad(&["udp", "client", "127.0.0.1", "--count", "5", "-t", "1"], "--count");
    assert_bad(&["udp", "client", "127.0.0.1", "--size", "20", "--secret", "x"], "--size");
    assert_bad(&["udp", "server", "--bind", "nowhere"], "--bind");
    assert_bad(&["tcp", "client", "127.0.0.1", "-t", "fast"], "--time");
    assert_bad(&["tcp", "client", "127.0.0.1", "-n", "3 parsecs"], "--bytes");
    assert_bad(&["tcp", "client", "127.0.0.1", "-t", "1", "-n", "1MB"], "--time");
    assert_bad(&["tcp", "client", "127.0.0.1", "-P", "0"], "--parallel");
    assert_bad(&["tcp", "client", "127.0.0.1", "-p", "70000"], "--port");
    assert_bad(&["tcp", "client", "127.0.0.1", "--info-interval", "0ms"], "--info-interval");
    assert_bad(&["tcp", "client", "no.such.host.invalid"], "HOST");
    assert_bad(&["load", "127.0.0.1", "--down", "0", "--up", "0"], "--down");
    assert_bad(&["frobnicate"], "frobnicate");
}

#[test]
fn help_exits_0() {
    assert!(run(&["--help"]).status.success());
    assert!(run(&["udp", "client", "--help"]).status.success());
}

/// iperf3 users type `-w 1M`: refused by name with why, not clap's "to pass '-w' as a value, use '-- -w'"
/// (issue 35).
#[test]
fn iperf3_flags_we_do_not_have_are_refused_by_name() {
    for flag in ["-w", "--window", "-M", "-O"] {
        let o = run(&["-c", "127.0.0.1", flag, "1M"]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let e = stderr(&o);
        assert!(e.starts_with(&format!("error: {flag}: iperf3's flag")) && !e.contains("-- -"), "{flag}: {e}");
    }
}
