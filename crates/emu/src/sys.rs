//! The few Linux system calls the emulator needs, wrapped so that the rest of
//! the crate never touches `libc` directly: the monotonic clock, TUN devices,
//! network namespaces (`setns`), timer slack, SCHED_FIFO, `/dev/cpu_dma_latency`,
//! `flock`, `ppoll`.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// CLOCK_MONOTONIC in nanoseconds. The same clock in every network namespace,
/// so the probe's `meta.t0_monotonic_ns` and ours line up.
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME in nanoseconds (the probe's packet stamps: a train's send
/// times and its kernel receive times, `SO_TIMESTAMPNS`).
pub fn real_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME at the CLOCK_MONOTONIC instant `mono` (ns; past or future),
/// both clocks read once, side by side: the realtime clock's reading of the
/// run's origin, against which the trains' stamps are placed. (The two clocks
/// drift apart only by NTP's slew, ppm: microseconds over a run.)
pub fn real_at_mono(mono: u64) -> u64 {
    let (m0, r) = (mono_ns(), real_ns());
    let m1 = mono_ns();
    // the realtime read between the two monotonic reads: the middle of them
    let m = m0 + (m1 - m0) / 2;
    (r as i128 + mono as i128 - m as i128) as u64
}

pub fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

fn last_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// `TUNSETIFF` = `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
/// Every read and write starts with a struct virtio_net_hdr (crate::gso).
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `TUNSETOFFLOAD` = `_IOW('T', 208, unsigned int)`.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Open a (non-persistent) TUN device `name` in the calling thread's network
/// namespace: IP packets behind a virtio-net header (crate::gso), non-blocking.
/// With `offload` the kernel may hand over TCPv4 GSO super-packets and leave
/// checksums partial (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN); without it
/// every packet comes segmented and checksummed, as from a plain TUN. The
/// device exists as long as the returned descriptor is open.
pub fn open_tun(name: &str, offload: bool) -> io::Result<OwnedFd> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/net/tun: {e}")))?;
    let mut req = IfReq { name: [0; 16], flags: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR, _pad: [0; 22] };
    let n = name.len().min(15);
    req.name[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out (40 bytes).
    if unsafe { libc::ioctl(f.as_raw_fd(), TUNSETIFF as _, &mut req) } < 0 {
        return Err(last_err("TUNSETIFF"));
    }
    let features: libc::c_uint = if offload { TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN } else { 0 };
    // SAFETY: TUNSETOFFLOAD takes the feature bits by value.
    if unsafe { libc::ioctl(f.as_raw_fd(), TUNSETOFFLOAD as _, features as libc::c_ulong) } < 0 {
        return Err(last_err("TUNSETOFFLOAD"));
    }
    Ok(OwnedFd::from(f))
}

/// Run `f` on a fresh thread that has joined network namespace `ns`
/// (`/run/netns/<ns>`): sockets, TUN devices and `/proc/sys/net` files opened
/// there belong to that namespace. The calling thread is never moved.
pub fn in_netns<R: Send + 'static>(ns: &str, f: impl FnOnce() -> io::Result<R> + Send + 'static) -> io::Result<R> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let nsf = File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        // SAFETY: a valid namespace descriptor; affects only this thread.
        if unsafe { libc::setns(nsf.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
            return Err(last_err(&format!("setns {path}")));
        }
        f()
    })
    .join()
    .map_err(|_| io::Error::other("namespace helper thread panicked"))?
}

/// Where `ip netns` keeps namespace `ns`.
pub fn netns_path(ns: &str) -> String {
    format!("/run/netns/{ns}")
}

/// Open `/run/netns/<ns>` for `setns` in a child process.
pub fn open_netns(ns: &str) -> io::Result<OwnedFd> {
    let path = netns_path(ns);
    let f = File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    Ok(OwnedFd::from(f))
}

/// Join namespace `fd` and die with the parent: in `bloatlab-emu enter` (how the
/// generators start, [`enter_and_exec`]) and in the one forked child left,
/// `bloatlab shell`'s own command (pre_exec; a fork copies the emulator's page
/// tables: crate::supervise::spawn_in says why the generators do not fork).
///
/// # Safety
/// Only async-signal-safe calls: setns, prctl.
pub unsafe fn child_enter(fd: RawFd) -> io::Result<()> {
    if libc::setns(fd, libc::CLONE_NEWNET) < 0 {
        return Err(io::Error::last_os_error());
    }
    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `bloatlab-emu enter`'s body, in a child the emulator started with
/// `posix_spawn` (crate::supervise::spawn_in): join network namespace
/// `ns_path`, die with the emulator (`PR_SET_PDEATHSIG`, SIGKILL; if `parent`
/// is already gone, i.e. it died before the prctl, start nothing) and become
/// `argv` (PATH lookup as execvp). Returns only on failure, with the reason.
pub fn enter_and_exec(ns_path: &str, parent: u32, argv: &[String]) -> String {
    use std::os::unix::process::CommandExt;
    let Some(prog) = argv.first() else { return "no command to run".into() };
    let ns = match File::open(ns_path) {
        Ok(f) => f,
        Err(e) => return format!("{ns_path}: {e}"),
    };
    // SAFETY: a valid namespace descriptor; child_enter only calls setns and prctl, and this process is about
    // to exec.
    if let Err(e) = unsafe { child_enter(ns.as_raw_fd()) } {
        return format!("entering {ns_path}: {e}");
    }
    drop(ns);
    if std::os::unix::process::parent_id() != parent {
        return format!("the emulator (pid {parent}) is gone");
    }
    // The death signal survives exec (the probe has no set-user-ID bit or file capabilities).
    let e = std::process::Command::new(prog).args(&argv[1..]).exec();
    format!("cannot start {prog}: {e}")
}

/// Timer slack of the calling thread in ns (default 50 µs; 1 = as precise as hrtimers allow).
pub fn set_timer_slack(ns: u64) {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong) };
}

/// Make the calling thread SCHED_FIFO at `prio`. Returns false if refused.
pub fn set_fifo(prio: i32) -> bool {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: 0 = calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Hold `/dev/cpu_dma_latency` at 0 µs while the returned file is open
/// (CPU idle states with exit latency are avoided: wake-ups are 2-3x more punctual).
pub fn hold_cpu_dma_latency() -> Option<File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency").ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

/// Wait until one of `fds` (at most 2) is readable or `timeout_ns` elapsed (ppoll: hrtimer, ns resolution).
pub fn wait_readable_any(fds: &[RawFd], timeout_ns: u64) -> bool {
    let mut p = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; 2];
    let n = fds.len().min(2);
    for (q, &fd) in p.iter_mut().zip(&fds[..n]) {
        q.fd = fd;
    }
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as _, tv_nsec: (timeout_ns % 1_000_000_000) as _ };
    // SAFETY: n <= 2 valid pollfds, a valid timespec.
    let r = unsafe { libc::ppoll(p.as_mut_ptr(), n as libc::nfds_t, &ts, std::ptr::null()) };
    r > 0
}

/// Non-blocking read of one frame (virtio-net header + packet, crate::gso).
/// Ok(0) when none is waiting.
#[inline]
pub fn read_pkt(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
            _ => Err(e),
        };
    }
    Ok(n as usize)
}

/// Write one IP packet behind its virtio-net header (crate::gso::out_hdr).
/// Errors are counted by the caller, not fatal (a TUN whose namespace is going
/// away refuses writes).
#[inline]
pub fn write_pkt(fd: RawFd, buf: &[u8]) -> bool {
    write_frame(fd, &crate::gso::out_hdr(buf).bytes(), buf)
}

/// Write one packet behind the given virtio-net header (a GSO super-packet's).
#[inline]
pub fn write_frame(fd: RawFd, h: &[u8; crate::gso::HDR_LEN], buf: &[u8]) -> bool {
    let iov = [
        libc::iovec { iov_base: h.as_ptr() as *mut libc::c_void, iov_len: h.len() },
        libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() },
    ];
    // SAFETY: two valid iovecs over live buffers.
    let n = unsafe { libc::writev(fd, iov.as_ptr(), 2) };
    n == (h.len() + buf.len()) as isize
}

/// An exclusive, non-blocking `flock` on `path` (created if missing). None if
/// another process holds it. Released when the file closes, also on SIGKILL.
pub fn try_lock(path: &str) -> io::Result<Option<File>> {
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
    // SAFETY: valid fd.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(f))
}

pub fn kill(pid: u32, sig: i32) {
    // SAFETY: plain kill.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Install handlers for SIGINT, SIGTERM and SIGHUP that only set a flag
/// ([`interrupted`]), so that the main loop tears everything down itself.
pub fn install_stop_handlers() {
    extern "C" fn on_signal(sig: libc::c_int) {
        STOP_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
    }
    for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe { libc::signal(s, on_signal as *const () as libc::sighandler_t) };
    }
}

/// Die with the parent: the kernel sends SIGTERM when the process that
/// started us (the CLI) dies, even by SIGKILL, and the stop handlers then
/// tear everything down. If the parent is already gone (the kernel reparented
/// us before the prctl), behave as if SIGTERM had arrived.
pub fn stop_with_parent() {
    let parent = std::os::unix::process::parent_id();
    // SAFETY: plain prctl.
    let ok = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) } == 0;
    if ok && (parent == 1 || std::os::unix::process::parent_id() != parent) {
        STOP_SIGNAL.store(libc::SIGTERM, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Is process `pid` alive? A zombie (dead, not reaped yet) is not.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses (which may itself hold ')').
        Ok(stat) => stat.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])).unwrap_or(true),
        Err(_) => false,
    }
}

static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The stop signal received, if any (0 = none).
pub fn interrupted() -> i32 {
    STOP_SIGNAL.load(std::sync::atomic::Ordering::SeqCst)
}

/// "SIGTERM" for 15, etc. (the stop signals; others by number).
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        n => format!("signal {n}"),
    }
}

/// `uname -r`.
pub fn kernel_release() -> String {
    // SAFETY: utsname is plain data, filled by uname.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy().into_owned()
    }
}

/// A CString for exec arguments.
pub fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// Wrap a raw fd we own.
///
/// # Safety
/// `fd` must be an open descriptor owned by nobody else.
pub unsafe fn own(fd: RawFd) -> OwnedFd {
    OwnedFd::from_raw_fd(fd)
}
