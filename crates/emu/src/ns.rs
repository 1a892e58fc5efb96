//! The emulator's network namespaces: creation, configuration, teardown, and
//! the clean-up of what a killed run left behind.
//!
//! A run takes a *slot* N (0..[`MAX_SLOTS`]): an exclusive `flock` on
//! `/run/bloatlab/emu-slot-N.lock`, held for the run's lifetime and released
//! by the kernel even after SIGKILL. Slot N owns exactly two namespaces,
//! `bloatlab-emuN-c` (client) and `bloatlab-emuN-s` (server), each with one
//! TUN device `blt0`, addresses 10.77.N.1 (client) and 10.77.N.2 (server).
//! So runs work side by side (up to MAX_SLOTS), and a namespace named like
//! ours whose slot lock nobody holds is stale and may be removed. Nothing
//! else is ever touched: not the root namespace's devices or sysctls, not
//! other `bloatlab-*` namespaces (the probe's, for instance).

use crate::sys;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::Command;

pub const MAX_SLOTS: u32 = 8;
const LOCK_DIR: &str = "/run/bloatlab";
pub const TUN_NAME: &str = "blt0";

/// GSO super-packets and partial checksums through the TUN devices (crate::gso):
/// on unless `BLOATLAB_EMU_OFFLOAD=0` (the A/B switch of bench/emu: the same
/// emulator with every packet segmented and checksummed by the kernel).
pub fn offload() -> bool {
    std::env::var("BLOATLAB_EMU_OFFLOAD").map_or(true, |v| v != "0")
}

/// Due segments of one flow written back as one GSO write (crate::gso::coalesce),
/// as GRO does in a receiving NIC's driver: on (with offload) unless
/// `BLOATLAB_EMU_COALESCE=0`. The default since 2026-11-23: the fidelity table
/// with it (docs/emulator.md, bench/emu/fidelity-coalesce.json) is no worse
/// (median goodput error 3.6 % vs 4.6 % on seed 1) — at <= 500 Mbit/s only
/// 0.2-0.4 % of segments are due together — and at 10 Gbit/s it is what lets the
/// receiving kernel keep up (8.8 vs 3.8 Gbit/s, bench/emu/GSO-repeats.md).
pub fn coalesce() -> bool {
    offload() && std::env::var("BLOATLAB_EMU_COALESCE").map_or(true, |v| v != "0")
}

/// Socket-buffer limits inside the namespaces: min, default, max bytes. The
/// max (128 MiB) exceeds twice the BDP of 1 Gbit/s x 500 ms, so the window
/// never limits a flow unless the scenario asks for it.
const TCP_RMEM: &str = "4096 131072 134217728";
const TCP_WMEM: &str = "4096 16384 134217728";
/// The namespaces' default congestion control. Every generator sets its
/// connection's control with `TCP_CONGESTION`, but a server sets it on the
/// accepted socket, after the kernel has initialised the default control for
/// it (`tcp_init_transfer`). A pacing default (BBR: `bbr_init` moves
/// `sk_pacing_status` to `SK_PACING_NEEDED`, and `tcp_reinit_congestion_control`
/// never moves it back) then leaves every download paced by the kernel's
/// internal pacing whatever control it switches to. Measured before this was
/// set (the machine's default is bbr, which new namespaces inherit): a "CUBIC"
/// download at 500 Mbit/s, 200 ms, 100 KB FIFO left slow start at cwnd 5.6 MB
/// with no loss, its packets reaching the link two at a time 5-10 ms apart
/// (2 x 1500 B / pacing_rate), 155-204 Mbit/s instead of an unpaced CUBIC's
/// burst losses. Reno's init touches no pacing state, and reno is always built in.
const DEFAULT_CC: &str = "reno";
/// Ephemeral ports stay out of the flows' (20000+) and probes' (30000+) server ports.
const LOCAL_PORT_RANGE: &str = "40000 60999";
/// TUN transmit ring: deep enough that the kernel never drops in front of the emulator.
const TUN_TXQUEUELEN: &str = "10000";
/// The TUN devices' root qdisc, set explicitly on each. A new device takes
/// `net.core.default_qdisc`, which is global (the root namespace's, not per
/// namespace): on a host whose default is `fq` every kernel flow would be
/// paced by `sch_fq` (and CUBIC's HyStart would see a paced socket,
/// tcp_cubic.c `hystart_update`) whatever the scenario says. pfifo_fast is
/// what every stored run had (`meta.sysctls`) and is always built in
/// (net/sched/sch_generic.c); a kernel flow is paced only when its
/// scenario says `pacing = true` (`SO_MAX_PACING_RATE`, the generator's
/// `--pacing`) or its control paces by itself (BBR). `lo` is not pinned:
/// a device without a queue (`IFF_NO_QUEUE`) always gets `noqueue`.
pub const TUN_QDISC: &str = "pfifo_fast";

pub fn client_ns(slot: u32) -> String {
    format!("bloatlab-emu{slot}-c")
}
pub fn server_ns(slot: u32) -> String {
    format!("bloatlab-emu{slot}-s")
}
pub fn client_ip(slot: u32) -> String {
    format!("10.77.{slot}.1")
}
pub fn server_ip(slot: u32) -> String {
    format!("10.77.{slot}.2")
}
fn lock_path(slot: u32) -> String {
    format!("{LOCK_DIR}/emu-slot-{slot}.lock")
}

/// `bloatlab-emuN-c` / `-s` → Some(N).
fn slot_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("bloatlab-emu")?;
    let num = rest.strip_suffix("-c").or_else(|| rest.strip_suffix("-s"))?;
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse().ok()
}

/// Run iproute2's `tool` (`ip`, `tc`) with `args`: its output, or why it failed.
fn iproute2(tool: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(tool).args(args).output().map_err(|e| format!("cannot run `{tool}`: {e}"))?;
    if !out.status.success() {
        return Err(format!("`{tool} {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> Result<(), String> {
    iproute2("ip", args).map(drop)
}

fn tc(args: &[&str]) -> Result<String, String> {
    iproute2("tc", args)
}

/// The kind of a device's root qdisc in namespace `ns` (`pfifo_fast`), from
/// `tc qdisc show`: its first line is the root's (`qdisc KIND HANDLE: dev ...`).
pub fn root_qdisc(ns: &str, dev: &str) -> Result<String, String> {
    let out = tc(&["-n", ns, "qdisc", "show", "dev", dev, "root"])?;
    qdisc_kind(&out).ok_or_else(|| format!("`tc -n {ns} qdisc show dev {dev} root` named no qdisc: {out:?}"))
}

fn qdisc_kind(tc_show: &str) -> Option<String> {
    let mut w = tc_show.lines().next()?.split_whitespace();
    (w.next()? == "qdisc").then_some(())?;
    w.next().map(str::to_owned)
}

/// Replace the root qdisc the device took from the host's default with
/// [`TUN_QDISC`], and check that it holds.
fn pin_root_qdisc(ns: &str, dev: &str) -> Result<(), String> {
    tc(&["-n", ns, "qdisc", "replace", "dev", dev, "root", TUN_QDISC])?;
    match root_qdisc(ns, dev)? {
        k if k == TUN_QDISC => Ok(()),
        k => Err(format!("{ns}: {dev}'s root qdisc is {k} after setting {TUN_QDISC}")),
    }
}

fn our_namespaces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.retain(|n| slot_of(n).is_some());
    v.sort();
    v
}

/// The emulator's working directory (the generators' output): one per
/// process, named after its pid so that a stale one can be told apart.
pub fn workdir(pid: u32) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("bloatlab-emu-{pid}"))
}

/// The pid a temporary directory of ours belongs to: `bloatlab-emu-PID`
/// (the emulator's, [`workdir`]) or `bloatlab-cli-PID-...` (the Python CLI's,
/// python/bloatlab/engines/emu.py).
fn temp_dir_owner(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix("bloatlab-emu-") {
        return if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) { rest.parse().ok() } else { None };
    }
    let rest = name.strip_prefix("bloatlab-cli-")?;
    let (pid, _) = rest.split_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Remove the temporary directories of emulator and CLI processes that no
/// longer exist (a SIGKILL leaves them behind). Returns the paths removed.
pub fn remove_stale_temp_dirs() -> Vec<String> {
    let tmp = std::env::temp_dir();
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(&tmp) else { return removed };
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_dir_owner(&name) else { continue };
        if pid == std::process::id() || sys::alive(pid) || !e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        if std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path().display().to_string());
        }
    }
    removed.sort();
    removed
}

/// Remove the namespaces of slots nobody holds (left by a killed run) and
/// the temporary directories of dead emulator/CLI processes. With `all`,
/// also the namespaces of running emulators (they will fail). Returns the
/// names removed.
pub fn cleanup(all: bool) -> Result<Vec<String>, String> {
    let _ = std::fs::create_dir_all(LOCK_DIR);
    let mut removed = Vec::new();
    for name in our_namespaces() {
        let slot = slot_of(&name).unwrap();
        // Holding the lock while deleting keeps a starting run from taking the slot meanwhile.
        let lock = sys::try_lock(&lock_path(slot)).map_err(|e| format!("{}: {e}", lock_path(slot)))?;
        if lock.is_none() && !all {
            continue;
        }
        kill_processes_in(&name);
        ip(&["netns", "del", &name])?;
        removed.push(name);
    }
    removed.extend(remove_stale_temp_dirs());
    Ok(removed)
}

/// Namespaces of emulators running now (their slot is locked).
pub fn running() -> Vec<String> {
    our_namespaces()
        .into_iter()
        .filter(|n| matches!(sys::try_lock(&lock_path(slot_of(n).unwrap())), Ok(None)))
        .collect()
}

/// A held slot.
pub struct Slot {
    pub n: u32,
    _lock: File,
}

pub fn acquire_slot() -> Result<Slot, String> {
    std::fs::create_dir_all(LOCK_DIR).map_err(|e| format!("{LOCK_DIR}: {e}"))?;
    for n in 0..MAX_SLOTS {
        if let Some(f) = sys::try_lock(&lock_path(n)).map_err(|e| format!("{}: {e}", lock_path(n)))? {
            return Ok(Slot { n, _lock: f });
        }
    }
    Err(format!(
        "{MAX_SLOTS} emulator runs are already running (namespaces: {}); wait for one to finish",
        running().join(", ")
    ))
}

fn write_sysctl(path: &str, value: &str) -> std::io::Result<()> {
    std::fs::write(format!("/proc/sys/{path}"), value)
        .map_err(|e| std::io::Error::new(e.kind(), format!("/proc/sys/{path}: {e}")))
}

/// Read a sysctl in namespace `ns` (`net/ipv4/tcp_rmem`), or in ours if None.
pub fn read_sysctl(ns: Option<&str>, path: &str) -> String {
    let p = format!("/proc/sys/{path}");
    let rd = move || Ok(std::fs::read_to_string(&p).unwrap_or_default().trim().replace('\t', " "));
    match ns {
        Some(ns) => sys::in_netns(ns, rd).unwrap_or_default(),
        None => rd().unwrap_or_default(),
    }
}

/// The two namespaces of a slot, their TUN devices and addresses. Dropping
/// it deletes the namespaces (the TUN devices go with the last descriptor).
pub struct Netns {
    pub slot: Slot,
    pub client: String,
    pub server: String,
    pub client_ip: String,
    pub server_ip: String,
    pub tun_client: OwnedFd,
    pub tun_server: OwnedFd,
    pub ns_client_fd: OwnedFd,
    pub ns_server_fd: OwnedFd,
}

impl Netns {
    pub fn create(slot: Slot) -> Result<Netns, String> {
        let n = slot.n;
        let (c, s) = (client_ns(n), server_ns(n));
        // Leftovers of this very slot (a killed run): ours, the lock proves it.
        for name in [&c, &s] {
            if std::path::Path::new(&format!("/run/netns/{name}")).exists() {
                ip(&["netns", "del", name])?;
            }
        }
        let mut created = Vec::new();
        let res = (|| {
            let mut tuns = Vec::new();
            for (name, addr) in [(&c, client_ip(n)), (&s, server_ip(n))] {
                ip(&["netns", "add", name])?;
                created.push(name.clone());
                let tun = sys::in_netns(name, || {
                    write_sysctl("net/ipv6/conf/all/disable_ipv6", "1")?;
                    write_sysctl("net/ipv6/conf/default/disable_ipv6", "1")?;
                    write_sysctl("net/ipv4/tcp_rmem", TCP_RMEM)?;
                    write_sysctl("net/ipv4/tcp_wmem", TCP_WMEM)?;
                    write_sysctl("net/ipv4/ip_local_port_range", LOCAL_PORT_RANGE)?;
                    write_sysctl("net/ipv4/tcp_no_metrics_save", "1")?;
                    write_sysctl("net/ipv4/tcp_congestion_control", DEFAULT_CC)?;
                    sys::open_tun(TUN_NAME, offload())
                })
                .map_err(|e| format!("setting up namespace {name}: {e}"))?;
                ip(&["-n", name, "link", "set", "lo", "up"])?;
                ip(&["-n", name, "addr", "add", &format!("{addr}/24"), "dev", TUN_NAME])?;
                ip(&["-n", name, "link", "set", TUN_NAME, "txqueuelen", TUN_TXQUEUELEN, "up"])?;
                pin_root_qdisc(name, TUN_NAME)?;
                tuns.push(tun);
            }
            let tun_server = tuns.pop().unwrap();
            let tun_client = tuns.pop().unwrap();
            let ns_client_fd = sys::open_netns(&c).map_err(|e| e.to_string())?;
            let ns_server_fd = sys::open_netns(&s).map_err(|e| e.to_string())?;
            Ok::<_, String>((tun_client, tun_server, ns_client_fd, ns_server_fd))
        })();
        match res {
            Ok((tun_client, tun_server, ns_client_fd, ns_server_fd)) => Ok(Netns {
                slot,
                client: c,
                server: s,
                client_ip: client_ip(n),
                server_ip: server_ip(n),
                tun_client,
                tun_server,
                ns_client_fd,
                ns_server_fd,
            }),
            Err(e) => {
                for name in created {
                    let _ = ip(&["netns", "del", &name]);
                }
                Err(e)
            }
        }
    }

    /// `/run/netns/NAME` of one side (what `bloatlab-emu enter` joins).
    pub fn ns_path(&self, server_side: bool) -> String {
        sys::netns_path(if server_side { &self.server } else { &self.client })
    }

    pub fn ns_fd(&self, server_side: bool) -> RawFd {
        if server_side { self.ns_server_fd.as_raw_fd() } else { self.ns_client_fd.as_raw_fd() }
    }

    /// A TUN drop counter (`rx_dropped`, `tx_dropped`) in one namespace.
    pub fn tun_stat(&self, server_side: bool, what: &str) -> u64 {
        let ns = if server_side { &self.server } else { &self.client };
        // /proc/thread-self/net/dev follows the reading thread's namespace (sysfs would not).
        let text = sys::in_netns(ns, || std::fs::read_to_string("/proc/thread-self/net/dev")).unwrap_or_default();
        let col = match what {
            "rx_dropped" => 3,
            "tx_dropped" => 11,
            _ => return 0,
        };
        for l in text.lines() {
            if let Some(rest) = l.trim().strip_prefix(&format!("{TUN_NAME}:")) {
                return rest.split_whitespace().nth(col).and_then(|v| v.parse().ok()).unwrap_or(0);
            }
        }
        0
    }
}

/// SIGKILL every process whose network namespace is `/run/netns/<ns>` (what a
/// shell's command or server left running there). Only processes inside our
/// own namespaces can match.
pub fn kill_processes_in(ns: &str) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = std::fs::metadata(format!("/run/netns/{ns}")) else { return 0 };
    let want = format!("net:[{}]", md.ino());
    let me = std::process::id();
    let mut n = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        if std::fs::read_link(format!("/proc/{pid}/ns/net")).is_ok_and(|l| l.to_string_lossy() == want) {
            sys::kill(pid, libc::SIGKILL);
            n += 1;
        }
    }
    n
}

impl Drop for Netns {
    fn drop(&mut self) {
        kill_processes_in(&self.client);
        kill_processes_in(&self.server);
        let _ = ip(&["netns", "del", &self.client]);
        let _ = ip(&["netns", "del", &self.server]);
    }
}

/// Is a TCP (or UDP) socket listening on `port` in namespace `ns`?
pub fn listening(ns: &str, port: u16, udp: bool) -> bool {
    let file = if udp { "/proc/thread-self/net/udp" } else { "/proc/thread-self/net/tcp" };
    let text = sys::in_netns(ns, move || std::fs::read_to_string(file)).unwrap_or_default();
    let want = format!(":{port:04X}");
    text.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1].ends_with(&want) && (udp || f[3] == "0A")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn temp_dirs_name_their_owner() {
        assert_eq!(temp_dir_owner("bloatlab-emu-1234"), Some(1234));
        assert_eq!(temp_dir_owner("bloatlab-cli-99-abc_x"), Some(99));
        assert_eq!(temp_dir_owner("bloatlab-emu-"), None);
        assert_eq!(temp_dir_owner("bloatlab-emu-12x"), None);
        assert_eq!(temp_dir_owner("bloatlab-cli-abc-1"), None);
        assert_eq!(temp_dir_owner("bloatlab-cli-12"), None);
        assert_eq!(temp_dir_owner("bloatlab-shell-12-x"), None);
        assert_eq!(temp_dir_owner("bloatlab-emu-12-kept"), None); // BLOATLAB_EMU_KEEP's: kept
        assert_eq!(workdir(7).file_name().and_then(|n| temp_dir_owner(n.to_str()?)), Some(7));
    }

    #[test]
    fn the_root_qdisc_is_the_first_line_of_tc_qdisc_show() {
        let show = "qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n";
        assert_eq!(qdisc_kind(show).as_deref(), Some("pfifo_fast"));
        assert_eq!(qdisc_kind("qdisc fq 8001: root refcnt 2 limit 10000p\nqdisc x 0: parent 1:\n").as_deref(), Some("fq"));
        assert_eq!(qdisc_kind(""), None);
        assert_eq!(qdisc_kind("Cannot find device \"blt0\"\n"), None);
    }

    #[test]
    fn only_names_of_our_own_shape_belong_to_a_slot() {
        assert_eq!(slot_of("bloatlab-emu3-c"), Some(3));
        assert_eq!(slot_of("bloatlab-emu12-s"), Some(12));
        assert_eq!(slot_of("bloatlab-probe-a"), None);
        assert_eq!(slot_of("bloatlab-emu-c"), None);
        assert_eq!(slot_of("bloatlab-emu3-x"), None);
        assert_eq!(slot_of("other"), None);
    }
}

// ---------------------------------------------------------------- the reaper

/// When the CLI died too (its process group was killed), the reaper looks
/// once more for its temporary directory after this long (a dying process's
/// /proc entry and files may lag its death by a few ms).
const REAP_AGAIN_MS: u64 = 100;

/// Start the reaper: `bloatlab-emu reap PID CLI_PID` (this executable again)
/// in a session of its own, so that a `kill -9` of the emulator or of its
/// whole process group does not reach it. It waits for the emulator to
/// exit, however it exits, and then removes what no running emulator holds
/// ([`cleanup`]: the namespaces of free slots and the temporary directories
/// of dead processes). A normal run has removed its own by then: the reaper
/// finds nothing. It inherits no descriptor of ours (every one is
/// close-on-exec), so it never holds the slot's lock. Best effort: a
/// machine that cannot start it still cleans up at the next run.
pub fn spawn_reaper() {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else { return };
    let me = std::process::id();
    let cli = std::os::unix::process::parent_id();
    let mut cmd = Command::new(exe);
    cmd.args(["reap", &me.to_string(), &cli.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid(2) is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let _ = cmd.spawn(); // not waited for: it outlives us by design (init reaps it)
}

/// The reaper's body (see [`spawn_reaper`]): block until `pid` exits (a
/// pidfd becomes readable when it does; without pidfd_open, poll its
/// /proc entry every 50 ms) and clean up; if the CLI `cli` is gone too,
/// look for its temporary directory once more after [`REAP_AGAIN_MS`].
pub fn reap(pid: u32, cli: u32) {
    // SAFETY: pidfd_open(2) with a pid and no flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) } as i32;
    if fd >= 0 {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; -1: wait for as long as the emulator runs.
        while unsafe { libc::poll(&mut p, 1, -1) } < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {}
        // SAFETY: fd came from pidfd_open above.
        unsafe { libc::close(fd) };
    } else {
        while sys::alive(pid) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let _ = cleanup(false);
    if !sys::alive(cli) {
        std::thread::sleep(std::time::Duration::from_millis(REAP_AGAIN_MS));
        remove_stale_temp_dirs();
    }
}
