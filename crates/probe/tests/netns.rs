//! Client and server in two network namespaces joined by a veth pair, the
//! way the emulator runs the probe (`ip netns exec NS bloatlab-probe ...`).
//! Needs root; otherwise it prints why it is skipped. The namespaces
//! (`bloatlab-pt-a-PID`, `bloatlab-pt-b-PID`) are removed even on failure.

mod common;
use common::*;
use std::process::Command;

struct Netns {
    a: String,
    b: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr)))
    }
}

impl Netns {
    fn create() -> Result<Netns, String> {
        let pid = std::process::id();
        let n = Netns { a: format!("bloatlab-pt-a-{pid}"), b: format!("bloatlab-pt-b-{pid}") };
        // from here on, Drop cleans up whatever was made
        ip(&["netns", "add", &n.a])?;
        ip(&["netns", "add", &n.b])?;
        let (va, vb) = (format!("blpa{}", pid % 100000), format!("blpb{}", pid % 100000));
        ip(&["link", "add", &va, "netns", &n.a, "type", "veth", "peer", "name", &vb, "netns", &n.b])?;
        ip(&["-n", &n.a, "addr", "add", "10.77.0.1/24", "dev", &va])?;
        ip(&["-n", &n.b, "addr", "add", "10.77.0.2/24", "dev", &vb])?;
        for (ns, dev) in [(&n.a, &va), (&n.b, &vb)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(n)
    }
    fn exec(&self, ns: &str, args: &[&str]) -> std::process::Output {
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

#[test]
fn client_and_server_work_across_namespaces_through_a_veth_pair() {
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: the namespace test needs root (ip netns); run the tests as root to include it");
        eprintln!("SKIPPED: the namespace test needs root (ip netns)");
        return;
    }
    let n = match Netns::create() {
        Ok(n) => n,
        Err(e) => panic!("could not build the namespaces: {e}"),
    };
    let pfx = ["ip", "netns", "exec", n.a.as_str()];
    let _srv = Server::start_with(&pfx, &["server"], "10.77.0.1:0");
    let port = _srv.port.clone();
    // UDP
    let o = n.exec(&n.b, &["udp", "client", "10.77.0.1", "-p", &port, "--interval", "1ms", "-t", "0.5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_of(&o);
    assert!(j["udp"]["received"].as_u64().unwrap() >= 490, "{}", j["udp"]);
    // TCP both ways, with a chosen cc
    for rev in [false, true] {
        let mut args = vec!["tcp", "client", "10.77.0.1", "-p", &port, "-n", "5MB", "-C", "bbr", "--json"];
        if rev {
            args.push("-R");
        }
        let o = n.exec(&n.b, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let j = json_of(&o);
        assert_eq!(j["flows"][0]["bytes_acked"], 5_000_000);
        assert_eq!(j["flows"][0]["cc"], "bbr");
        assert_eq!(j["flows"][0]["completed"], true);
    }
}
