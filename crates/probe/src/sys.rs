//! The thin layer over Linux that the probes need and std lacks: clocks,
//! Ctrl-C, real-time scheduling and CPU pinning, kernel receive timestamps
//! (`SO_TIMESTAMPNS`), `TCP_INFO`, `TCP_CONGESTION`.
//!
//! Sources: `include/uapi/linux/tcp.h` (struct tcp_info, Linux 6.18),
//! socket(7), tcp(7), sched(7), `Documentation/networking/timestamping.rst`.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT/SIGTERM; loops poll it and stop gracefully (summary so far).
pub static STOP: AtomicBool = AtomicBool::new(false);

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // second Ctrl-C: leave at once
        unsafe { libc::_exit(130) };
    }
}

/// Install the SIGINT/SIGTERM handler without SA_RESTART, so blocking socket
/// calls return EINTR and the loops notice [`STOP`].
pub fn install_signal_handlers() {
    unsafe {
        let mut sa: libc::sigaction = zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        // a peer that vanishes must give EPIPE, not kill us
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts: libc::timespec = unsafe { zeroed() };
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in ns: the clock of every `t` in our results.
pub fn mono_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns: the clock of kernel socket timestamps.
pub fn real_ns() -> u64 {
    clock(libc::CLOCK_REALTIME)
}

/// Sleep until CLOCK_MONOTONIC reaches `deadline` (absolute, no drift).
/// Returns early only when a caught signal interrupts it, i.e. on our
/// SIGINT/SIGTERM ([`STOP`]), which every caller looks at next; a stop signal
/// and SIGCONT restart it in the kernel (an absolute sleep, signal(7)).
pub fn sleep_until_mono(deadline: u64) {
    let ts = libc::timespec { tv_sec: (deadline / 1_000_000_000) as _, tv_nsec: (deadline % 1_000_000_000) as _ };
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

/// Timer slack of 1 ns instead of the default 50 µs, so short waits wake on time.
pub fn tight_timer_slack() {
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtPolicy {
    Fifo(i32),
    Rr(i32),
}

/// Parse `fifo:PRIO` / `rr:PRIO` (PRIO 1..99, like chrt).
pub fn parse_rt(s: &str) -> Result<RtPolicy, String> {
    let err = || format!("expected fifo:PRIO or rr:PRIO with PRIO in 1..99, got \"{s}\"");
    let (pol, prio) = s.split_once(':').ok_or_else(err)?;
    let prio: i32 = prio.parse().map_err(|_| err())?;
    if !(1..=99).contains(&prio) {
        return Err(err());
    }
    match pol {
        "fifo" => Ok(RtPolicy::Fifo(prio)),
        "rr" => Ok(RtPolicy::Rr(prio)),
        _ => Err(err()),
    }
}

/// A `sched_param` with this priority (musl's has more fields than glibc's: zeroed).
fn sched_param(prio: i32) -> libc::sched_param {
    let mut p: libc::sched_param = unsafe { zeroed() };
    p.sched_priority = prio;
    p
}

/// Apply SCHED_FIFO/SCHED_RR to the calling process, like `chrt`.
pub fn apply_rt(p: RtPolicy) -> Result<(), String> {
    let (pol, prio, name) = match p {
        RtPolicy::Fifo(x) => (libc::SCHED_FIFO, x, "fifo"),
        RtPolicy::Rr(x) => (libc::SCHED_RR, x, "rr"),
    };
    let param = sched_param(prio);
    if unsafe { libc::sched_setscheduler(0, pol, &param) } != 0 {
        let e = io::Error::last_os_error();
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            " (real-time scheduling needs root or CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least the priority)"
        } else {
            ""
        };
        return Err(format!("--rt {name}:{prio}: {e}{hint}"));
    }
    Ok(())
}

/// Pin the calling process to one CPU.
pub fn pin_cpu(cpu: usize) -> Result<(), String> {
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as usize;
    if cpu >= n.max(1) || cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("--pin {cpu}: this machine has CPUs 0..{}", n.saturating_sub(1)));
    }
    unsafe {
        let mut set: libc::cpu_set_t = zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("--pin {cpu}: {}", io::Error::last_os_error()));
        }
    }
    Ok(())
}

fn setsockopt<T>(fd: RawFd, level: i32, name: i32, v: &T) -> io::Result<()> {
    let r = unsafe { libc::setsockopt(fd, level, name, v as *const T as *const libc::c_void, size_of::<T>() as u32) };
    if r != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Ask the kernel to timestamp received packets (software, CLOCK_REALTIME).
pub fn enable_rx_timestamps(fd: RawFd) -> bool {
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1i32).is_ok()
}

/// SO_BUSY_POLL (µs): the kernel polls the device queue in recv. Raising it
/// needs CAP_NET_ADMIN; returns whether it took.
pub fn set_busy_poll(fd: RawFd, us: i32) -> bool {
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, &us).is_ok()
}

/// TCP_NOTSENT_LOWAT: the socket takes new data only while fewer than
/// `bytes` written bytes are still unsent (the rest of the send buffer is in
/// flight). Bounds how long a message waits behind its own connection's data.
pub fn set_notsent_lowat(fd: RawFd, bytes: i32) -> bool {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, &bytes).is_ok()
}

/// send(2) with MSG_MORE: the bytes stay in the socket's last skb until the
/// next write, which `tcp_sendmsg` appends to it, instead of leaving as a
/// segment of their own. Nothing pushes them but a later write or close.
pub fn send_more(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: buf is a valid slice for its length; fd is the caller's open socket.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_MORE | libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

pub fn set_buffers(fd: RawFd, bytes: i32) {
    let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &bytes);
    let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &bytes);
}

/// One received datagram: length, kernel receive time (CLOCK_REALTIME ns) if
/// the kernel gave one, and the sender's address.
pub struct Recv {
    pub len: usize,
    pub kernel_ns: Option<u64>,
    pub from: Option<std::net::SocketAddr>,
    /// datagrams the socket dropped so far for want of receive buffer
    /// (SO_RXQ_OVFL's counter, when [`enable_rxq_ovfl`] took)
    pub drops: Option<u32>,
}

/// SO_RXQ_OVFL: every datagram then carries the socket's count of datagrams
/// dropped because its receive buffer was full.
pub fn enable_rxq_ovfl(fd: RawFd) -> bool {
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, &1i32).is_ok()
}

/// IP_RECVERR (IPV6_RECVERR on an IPv6 socket) on or off. On, a datagram
/// this host's own qdisc or driver queue drops (fq's 100-packet flow limit,
/// a full ring) fails its send with ENOBUFS; off, Linux's UDP swallows that
/// error and the send succeeds (`udp_send_skb`: `-ENOBUFS && !recverr`).
/// Turned off, the kernel purges the socket's error queue
/// (`ip_setsockopt`), so a poll does not keep reporting POLLERR for the
/// ICMP errors queued meanwhile.
pub fn set_recverr(fd: RawFd, ipv6: bool, on: bool) -> bool {
    let v = on as i32;
    if ipv6 {
        setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, &v).is_ok()
    } else {
        setsockopt(fd, libc::IPPROTO_IP, libc::IP_RECVERR, &v).is_ok()
    }
}

/// SO_RCVBUFFORCE (CAP_NET_ADMIN: beyond net.core.rmem_max); false when refused.
pub fn force_rcvbuf(fd: RawFd, bytes: i32) -> bool {
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &bytes).is_ok()
}

/// recvmsg with the SCM_TIMESTAMPNS control message. `flags` e.g. MSG_DONTWAIT.
pub fn recv_ts(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<Recv> {
    unsafe {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        let mut cbuf = [0u64; 16];
        let mut addr: libc::sockaddr_storage = zeroed();
        let mut msg: libc::msghdr = zeroed();
        msg.msg_name = &mut addr as *mut _ as *mut libc::c_void;
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as u32;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 16]>() as _; // usize in glibc, u32 in musl
        let n = libc::recvmsg(fd, &mut msg, flags);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut kernel_ns = None;
        let mut drops = None;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                kernel_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let from = sockaddr_to_std(&addr, msg.msg_namelen);
        Ok(Recv { len: n as usize, kernel_ns, from, drops })
    }
}

fn sockaddr_to_std(a: &libc::sockaddr_storage, len: u32) -> Option<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
    unsafe {
        match a.ss_family as i32 {
            libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
                let s = &*(a as *const _ as *const libc::sockaddr_in);
                let ip = Ipv4Addr::from(u32::from_be(s.sin_addr.s_addr));
                Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(s.sin_port))))
            }
            libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
                let s = &*(a as *const _ as *const libc::sockaddr_in6);
                let ip = Ipv6Addr::from(s.sin6_addr.s6_addr);
                Some(SocketAddr::V6(SocketAddrV6::new(ip, u16::from_be(s.sin6_port), s.sin6_flowinfo, s.sin6_scope_id)))
            }
            _ => None,
        }
    }
}

/// Wait until `fd` is readable or `timeout_ns` passes (ppoll, ns resolution).
pub fn wait_readable(fd: RawFd, timeout_ns: u64) -> bool {
    wait_for(fd, libc::POLLIN, timeout_ns)
}

/// `--wait-go`: block until a line arrives on standard input (the emulator's go, `bloatlab-emu`'s
/// crates/emu/src/supervise.rs `Starts`). std's read retries an interrupted read, so the wait is in poll(2)
/// first: SIGTERM before the go line ends the waiting instead of leaving it blocked on its standard input.
/// Err: stopped, or standard input ended, before the line (in words, naming `--wait-go`).
pub fn wait_go_line() -> Result<(), String> {
    while !wait_readable(0, 100_000_000) {
        if stopped() {
            return Err("--wait-go: stopped before the go line".into());
        }
    }
    let mut go = String::new();
    match io::stdin().read_line(&mut go) {
        Ok(n) if n > 0 => Ok(()),
        _ => Err("--wait-go: standard input ended before the go line".into()),
    }
}

/// Wait until `fd` is writable (for a TCP socket with TCP_NOTSENT_LOWAT:
/// its unsent bytes fell below half the mark) or `timeout_ns` passes.
pub fn wait_writable(fd: RawFd, timeout_ns: u64) -> bool {
    wait_for(fd, libc::POLLOUT, timeout_ns)
}

fn wait_for(fd: RawFd, events: i16, timeout_ns: u64) -> bool {
    let mut p = libc::pollfd { fd, events, revents: 0 };
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as _, tv_nsec: (timeout_ns % 1_000_000_000) as _ };
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) > 0 }
}

/// `struct tcp_info` of `include/uapi/linux/tcp.h` up to `tcpi_total_rto_time`
/// (Linux 6.7+). Older kernels fill a prefix; the rest stays zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub app_limited: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// smoothed RTT, µs
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    /// congestion window, segments
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    /// bytes/s
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    /// µs
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    /// bytes/s
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time: u32,
}

impl TcpInfo {
    pub fn cwnd_bytes(&self) -> u64 {
        self.snd_cwnd as u64 * self.snd_mss as u64
    }
    /// Linux's tcp_packets_in_flight(): unacked - (sacked + lost) + retrans.
    pub fn inflight_bytes(&self) -> u64 {
        let pkts = (self.unacked as i64 - self.sacked as i64 - self.lost as i64 + self.retrans as i64).max(0);
        pkts as u64 * self.snd_mss as u64
    }
}

pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut ti = TcpInfo::default();
    let mut len = size_of::<TcpInfo>() as u32;
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut ti as *mut _ as *mut libc::c_void, &mut len) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ti)
}

/// The congestion controls this kernel offers.
pub fn available_cc() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Turn on the kernel's internal pacing for this socket whatever its
/// congestion control, as `sch_fq` on the host would pace it: a finite
/// `SO_MAX_PACING_RATE` moves `sk_pacing_status` from NONE to NEEDED
/// (net/core/sock.c); `u64::MAX - 1` bytes/s caps nothing.
pub fn set_internal_pacing(fd: RawFd) -> io::Result<()> {
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &(u64::MAX - 1))
}

/// End a TCP connection at once, as an application that no longer wants to send
/// what it wrote: `connect(AF_UNSPEC)` runs `tcp_disconnect` (net/ipv4/tcp.c), which
/// purges the send queue and sends a RST to the peer; the descriptor stays valid.
pub fn abort_connection(fd: RawFd) -> io::Result<()> {
    let sa = libc::sockaddr { sa_family: libc::AF_UNSPEC as libc::sa_family_t, sa_data: [0; 14] };
    let r = unsafe { libc::connect(fd, &sa, size_of::<libc::sockaddr>() as u32) };
    if r != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Set TCP_CONGESTION; on failure the error lists what the kernel has.
/// A name a peer sent, as an error message may echo it: at most
/// [`ECHO_MAX`] characters (a 60 KB `cc` gave a 60 KB reply), the rest
/// counted. Linux's control names are at most 15 bytes (`TCP_CA_NAME_MAX` 16).
pub fn echo_name(s: &str) -> String {
    if s.chars().count() <= ECHO_MAX {
        return s.to_string();
    }
    let head: String = s.chars().take(ECHO_MAX).collect();
    format!("{head}... ({} bytes)", s.len())
}

/// The most of a peer's string an error message echoes, characters.
pub const ECHO_MAX: usize = 32;

pub fn set_cc(fd: RawFd, cc: &str) -> Result<(), String> {
    let r = unsafe {
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr() as *const libc::c_void, cc.len() as u32)
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(format!(
            "congestion control \"{}\" is not available on this kernel ({e}); available: {}",
            echo_name(cc),
            available_cc().join(" ")
        ));
    }
    Ok(())
}

pub fn get_cc(fd: RawFd) -> Option<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as u32;
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r != 0 {
        return None;
    }
    let s = &buf[..len as usize];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Identifies this boot of this host: two processes with the same boot id
/// share CLOCK_MONOTONIC, so their series can be aligned exactly.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Random u64 from the kernel (session ids, cookies); not for the simulator.
pub fn random_u64() -> u64 {
    let mut v = 0u64;
    let r = unsafe { libc::getrandom(&mut v as *mut u64 as *mut libc::c_void, 8, 0) };
    if r != 8 {
        v = real_ns() ^ (std::process::id() as u64) << 32;
    }
    v
}

/// The calling thread's nice value (setpriority(2) on PRIO_PROCESS 0, which
/// Linux applies to the calling thread). Lowering it needs root or CAP_SYS_NICE.
pub fn set_nice(n: i32) -> Result<(), String> {
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) } != 0 {
        return Err(format!("nice {n}: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// Back to SCHED_OTHER (priority 0).
pub fn set_sched_other() -> Result<(), String> {
    let param = sched_param(0);
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
        return Err(format!("SCHED_OTHER: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// A PM QoS request held open on `/dev/cpu_dma_latency` (the kernel's
/// CPU wake-up latency limit, µs): while the file stays open, idle states
/// deeper than the limit are not entered (Documentation/power/pm_qos_interface.rst).
/// Dropping it closes the file and withdraws the request.
pub struct CpuDmaLatency(#[allow(dead_code)] std::fs::File);

pub fn hold_cpu_dma_latency(us: i32) -> Result<CpuDmaLatency, String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency").map_err(|e| format!("/dev/cpu_dma_latency: {e}"))?;
    f.write_all(&us.to_ne_bytes()).map_err(|e| format!("/dev/cpu_dma_latency: {e}"))?;
    Ok(CpuDmaLatency(f))
}
