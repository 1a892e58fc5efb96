//! One binary anywhere (issue 14 §5): the x86-64 musl build
//! (`cargo build --release -p bloatlab-probe --target x86_64-unknown-linux-musl`,
//! which scripts/test.sh runs first) is statically linked and runs alone in
//! an empty chroot: no libc, no /proc, no /dev. It serves UDP there and
//! measures a server outside. Needs root (chroot); otherwise, or without the
//! musl build, it prints SKIPPED with the reason.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

fn static_binary() -> PathBuf {
    match std::env::var_os("BLOATLAB_PROBE_STATIC") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/x86_64-unknown-linux-musl/release/bloatlab-probe"),
    }
}

/// No PT_INTERP program header: nothing to load before main (ELF64 LE).
fn is_static_elf(b: &[u8]) -> bool {
    let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as usize;
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) as usize;
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 {
        return false;
    }
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    (0..phnum).all(|k| {
        let o = phoff + k * phentsize;
        o + 4 <= b.len() && u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) != 3 // PT_INTERP
    })
}

#[test]
fn the_static_binary_runs_alone_in_an_empty_chroot() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the chroot test needs root; run the tests as root to include it");
        eprintln!("SKIPPED: the chroot test needs root");
        return;
    }
    let bin = static_binary();
    let Ok(bytes) = std::fs::read(&bin) else {
        println!("SKIPPED: no static build at {} (cargo build --release -p bloatlab-probe --target x86_64-unknown-linux-musl)", bin.display());
        eprintln!("SKIPPED: no static build at {}", bin.display());
        return;
    };
    assert!(is_static_elf(&bytes), "{} has a program interpreter: not statically linked", bin.display());
    let root = std::env::temp_dir().join(format!("bloatlab-chroot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    struct Rm(PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _rm = Rm(root.clone());
    std::fs::copy(&bin, root.join("bloatlab-probe")).unwrap();
    let entries: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries, ["bloatlab-probe"], "the chroot holds the binary alone");
    let r = root.to_str().unwrap();
    let o = Command::new("chroot").args([r, "/bloatlab-probe", "--version"]).output().unwrap();
    assert!(o.status.success(), "--version in the chroot: {}", stderr(&o));
    assert!(stdout(&o).starts_with("bloatlab-probe "), "{}", stdout(&o));
    // a server inside the chroot, measured from outside
    let mut srv = Command::new("chroot")
        .args([r, "/bloatlab-probe", "udp", "server", "--bind", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(srv.stderr.as_mut().unwrap()), &mut line).unwrap();
    let port = line.trim().rsplit(':').next().unwrap_or_default().to_string();
    let o = run(&["udp", "client", "127.0.0.1", "-p", &port, "--count", "1000", "--json"]);
    let _ = srv.kill();
    let _ = srv.wait();
    assert!(o.status.success(), "server said {line:?}: {}", stderr(&o));
    assert_eq!(json_of(&o)["udp"]["received"], 1000);
    // a client inside the chroot against a server outside, TCP too
    let out = Server::start(&["server"]);
    let o = Command::new("chroot").args([r, "/bloatlab-probe", "udp", "client", "127.0.0.1", "-p", &out.port, "--count", "1000", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json_of(&o)["udp"]["received"], 1000);
    let o = Command::new("chroot").args([r, "/bloatlab-probe", "tcp", "client", "127.0.0.1", "-p", &out.port, "-t", "0.5", "-C", "reno", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert!(j["flows"][0]["goodput_mbps"].as_f64().unwrap() > 10.0, "{}", j["flows"][0]);
    assert_eq!(j["flows"][0]["cc"], "reno");
}
