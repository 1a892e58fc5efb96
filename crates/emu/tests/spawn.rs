//! How the emulator starts its traffic generators (`supervise::spawn_in`):
//! through `bloatlab-emu enter` by `posix_spawn`, so that a start neither
//! copies nor write-protects the emulator's memory (a fork did both, and
//! stalled the link threads: docs/emulator.md "Timing quality"), in the
//! namespace asked for, and dying with the thread that started it.
//!
//! These need root (`setns`), as the emulator does; without it they say so and pass.

use bloatlab_emu::supervise::spawn_in;
use std::path::Path;
use std::process::Stdio;

const LAUNCHER: &str = env!("CARGO_BIN_EXE_bloatlab-emu");

fn root() -> bool {
    // SAFETY: no arguments.
    let r = unsafe { libc::geteuid() } == 0;
    if !r {
        eprintln!("skipped: needs root (setns), as the emulator does");
    }
    r
}

/// Minor page faults of the calling thread so far.
fn minor_faults() -> i64 {
    // SAFETY: rusage is plain data, filled by getrusage.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut u), 0);
        u.ru_minflt
    }
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn starting_a_child_leaves_every_page_of_the_emulator_writable_without_a_fault() {
    if !root() {
        return;
    }
    // 16 MiB the way a link thread's buffers are: written, resident, in 4 KiB pages.
    const PAGES: usize = 4096;
    const PAGE: usize = 4096;
    // SAFETY: a fresh private anonymous mapping, used only here and unmapped at the end.
    let mem = unsafe {
        let p = libc::mmap(std::ptr::null_mut(), PAGES * PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        assert_ne!(p, libc::MAP_FAILED);
        libc::madvise(p, PAGES * PAGE, libc::MADV_NOHUGEPAGE);
        std::slice::from_raw_parts_mut(p as *mut u8, PAGES * PAGE)
    };
    let write_all = |mem: &mut [u8], v: u8| {
        for i in 0..PAGES {
            // volatile: every page is written, as a link thread's packet buffers are
            unsafe { std::ptr::write_volatile(&mut mem[i * PAGE], v) };
        }
    };
    write_all(mem, 1);
    let f0 = minor_faults();
    write_all(mem, 2);
    let resident = minor_faults() - f0;
    assert!(resident < 64, "writing resident pages faulted {resident} times");

    let mut c = spawn_in(Path::new(LAUNCHER), "/proc/self/ns/net", &argv(&["/bin/true"]), Stdio::null(), Stdio::null(), Stdio::null()).unwrap();
    assert!(c.wait().unwrap().success());
    let f1 = minor_faults();
    write_all(mem, 3);
    let after = minor_faults() - f1;
    // A fork write-protects all 4096 pages (each write after it faults: measured 4096 with
    // the former fork + pre_exec); posix_spawn shares the address space until the exec.
    assert!(after < (PAGES / 8) as i64, "{after} page faults writing {PAGES} pages after a child's start: the start copied the address space");
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(mem.as_mut_ptr() as *mut libc::c_void, PAGES * PAGE) };
}

#[test]
fn a_child_runs_in_the_namespace_it_was_given() {
    if !root() {
        return;
    }
    // A fresh network namespace, held by a parked thread (no /run/netns entry to leave behind).
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        // SAFETY: unshare affects only this thread.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: {}", std::io::Error::last_os_error());
        // SAFETY: no arguments.
        let tid = unsafe { libc::gettid() };
        tx.send(format!("/proc/{}/task/{tid}/ns/net", std::process::id())).unwrap();
        let _ = done_rx.recv();
    });
    let ns = rx.recv().unwrap();
    let want = std::fs::read_link(&ns).unwrap();
    assert_ne!(want, std::fs::read_link("/proc/self/ns/net").unwrap(), "the test's namespace is not a new one");
    let c = spawn_in(Path::new(LAUNCHER), &ns, &argv(&["readlink", "/proc/self/ns/net"]), Stdio::piped(), Stdio::inherit(), Stdio::null()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want.to_string_lossy());
    done_tx.send(()).unwrap();
    holder.join().unwrap();
}

#[test]
fn a_child_dies_with_the_thread_that_started_it() {
    if !root() {
        return;
    }
    // Started from a thread that ends once the child is `sleep` (exec'd, death signal set):
    // the kernel's PR_SET_PDEATHSIG follows the starting thread, here as in a run (its main thread).
    let child = std::thread::spawn(|| {
        let c = spawn_in(Path::new(LAUNCHER), "/proc/self/ns/net", &argv(&["sleep", "30"]), Stdio::null(), Stdio::inherit(), Stdio::null()).unwrap();
        let comm = format!("/proc/{}/comm", c.id());
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(&comm).unwrap_or_default().trim() != "sleep" {
            assert!(std::time::Instant::now() < until, "the child never became `sleep`");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        c
    })
    .join()
    .unwrap();
    let mut child = child;
    use std::os::unix::process::ExitStatusExt;
    let st = child.wait().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGKILL), "{st}");
}

#[test]
fn a_missing_program_is_refused_at_once_and_a_failed_exec_is_said_by_the_launcher() {
    let e = spawn_in(Path::new(LAUNCHER), "/proc/self/ns/net", &argv(&["/nonexistent/bloatlab-probe"]), Stdio::null(), Stdio::null(), Stdio::null()).unwrap_err();
    assert_eq!(e, "cannot start /nonexistent/bloatlab-probe: no such file");
    if !root() {
        return;
    }
    let c = spawn_in(Path::new(LAUNCHER), "/proc/self/ns/net", &argv(&["no-such-command-bloatlab"]), Stdio::null(), Stdio::piped(), Stdio::null()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start no-such-command-bloatlab"), "{err}");
}
