//! Blocking calls interrupted by a signal (EINTR) go on, as Linux programs
//! must: a `connect()` interrupted while its SYN waits for a retransmission
//! still connects (connect(2): it completes asynchronously), and one whose
//! peer refuses meanwhile reports the refusal, not "Interrupted system call".
//! Under load, a SIGTERM that arrived while the probe connected used to end
//! the run with no result.
//!
//! How the connect is held up: a listener with backlog 0 takes one
//! connection into its accept queue and drops the SYN of the next
//! (`sk_acceptq_is_full`, tcp_conn_request), so that connect blocks until its
//! first SYN retransmission, 1 s later (TCP_TIMEOUT_INIT). Meanwhile SIGUSR1,
//! caught by a handler installed without SA_RESTART (as the probe installs
//! its SIGINT/SIGTERM handler), is sent to the connecting thread every 50 ms.
//! This file is its own test process: the handler touches no other test.

use bloatlab_probe::tcp::stream::connect;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

static CAUGHT: AtomicU64 = AtomicU64::new(0);
/// the tests signal one at a time, so that each counts only its own signals
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

extern "C" fn on_usr1(_: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::SeqCst);
}

fn install_usr1_without_restart() {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

/// A loopback listener with an accept queue of one (listen backlog 0).
fn listener_backlog_0() -> (TcpListener, SocketAddr) {
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as u16;
        sa.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        assert_eq!(libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32), 0);
        assert_eq!(libc::listen(fd, 0), 0);
        let l = TcpListener::from_raw_fd(fd);
        let a = l.local_addr().unwrap();
        (l, a)
    }
}

/// Connect from another thread while the accept queue is full, signalling
/// that thread every 50 ms for `signal_for`; `meanwhile` runs once the
/// signals have started. Returns connect's result and how many signals the
/// thread caught.
fn interrupted_connect(addr: SocketAddr, signal_for: Duration, meanwhile: impl FnOnce()) -> (Result<TcpStream, String>, u64) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    install_usr1_without_restart();
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        tx.send(unsafe { libc::pthread_self() }).unwrap();
        connect(addr, None, None)
    });
    let thread = rx.recv().unwrap();
    let before = CAUGHT.load(Ordering::SeqCst);
    let t = Instant::now();
    let mut meanwhile = Some(meanwhile);
    while t.elapsed() < signal_for && !h.is_finished() {
        unsafe { libc::pthread_kill(thread, libc::SIGUSR1) };
        std::thread::sleep(Duration::from_millis(50));
        if t.elapsed() > Duration::from_millis(300) {
            if let Some(f) = meanwhile.take() {
                f();
            }
        }
    }
    let r = h.join().unwrap();
    (r, CAUGHT.load(Ordering::SeqCst) - before)
}

#[test]
fn a_connect_interrupted_by_a_signal_completes_when_the_server_takes_it() {
    let (l, addr) = listener_backlog_0();
    let _first = TcpStream::connect(addr).unwrap(); // fills the accept queue
    // 300 ms in, the queue is emptied: the retransmitted SYN at ~1 s is taken
    let (r, caught) = interrupted_connect(addr, Duration::from_millis(1500), || {
        let _ = l.accept().unwrap();
    });
    let mut c = r.unwrap_or_else(|e| panic!("the interrupted connect failed: {e}"));
    assert!(caught >= 5, "the connecting thread caught only {caught} signals");
    assert_eq!(c.peer_addr().unwrap(), addr);
    // it is a working connection
    let (mut s, _) = l.accept().unwrap();
    c.write_all(b"ping").unwrap();
    let mut b = [0u8; 4];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"ping");
}

#[test]
fn a_connect_interrupted_by_a_signal_reports_the_refusal_that_followed() {
    let (l, addr) = listener_backlog_0();
    let first = TcpStream::connect(addr).unwrap();
    // 300 ms in, the listener goes away: the retransmitted SYN is answered by a reset
    let (r, caught) = interrupted_connect(addr, Duration::from_millis(1500), move || {
        drop(l);
        drop(first);
    });
    let e = r.err().expect("a connect to a closed port succeeded");
    assert!(e.contains("refused"), "{e}");
    assert!(caught >= 5, "the connecting thread caught only {caught} signals");
}
