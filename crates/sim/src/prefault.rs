//! The samples' columns made resident by a second thread a little ahead of
//! the sampler's writes (issue 34 §5).
//!
//! A thousand flows sampled every 10 ms for 10 s write ~985 000 rows, 60 MB of
//! fresh anonymous memory in the reserved columns ([`FlowSeries::reserve`]).
//! Its first touch is the kernel clearing each page (`clear_page_erms`,
//! ~40 ms of a 0.5-s process on this project's VM), on the engine's thread at
//! the sampler's first write into a page. Here a helper thread asks the kernel
//! to fault the next pages in (`madvise(MADV_POPULATE_WRITE)`, Linux ≥ 5.14:
//! "as if writing to each page, but without actually writing") while the
//! engine simulates, so on a machine with a second core the clearing leaves
//! the engine's critical path. The memory's contents are not changed (a page
//! is populated with zeros before the engine writes it, or left as the engine
//! wrote it), so the results are the same byte for byte.
//!
//! The helper stays at most [`AHEAD_ROWS`] rows ahead of the rows written: a
//! scenario whose flows end early writes far fewer rows than the columns
//! reserve, and only what is about to be written becomes resident (bounded
//! RSS, as without the helper). On another system, or when the kernel refuses
//! the advice (older than 5.14: EINVAL), the engine's writes fault the pages
//! in as before.

use bloatlab_schema::series::FlowSeries;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Rows the helper keeps resident ahead of the sampler: 2 MB of each 8-byte
/// column (one huge page, the columns are offered them), ~100 ms of the
/// 1000-flow run's sampling; the RSS above what is written is at most
/// ~17 MB (nine columns, the u32 one half).
const AHEAD_ROWS: usize = (2 << 20) / 8;
/// Columns smaller than this are not worth a thread (a few flows: a few
/// hundred KB fault in within a millisecond).
const MIN_BYTES: usize = 4 << 20;
/// How long the helper waits before looking at the sampler's progress again.
const POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// A running helper; dropping it stops and joins the thread.
pub struct Prefault {
    written: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Prefault {
    /// Start a helper over the spare capacity of `s`'s 8-byte and 4-byte
    /// columns (not the 1-byte `state` codes), or None when they are small
    /// or the thread cannot start. The columns must not be reallocated
    /// while it runs: the engine reserved the most rows it writes.
    pub fn start(s: &FlowSeries) -> Option<Prefault> {
        #[cfg(target_os = "linux")]
        {
            let cap = s.t.capacity() - s.t.len();
            if cap * 8 < MIN_BYTES {
                return None;
            }
            // (base address of the spare capacity, bytes per row)
            fn col<T>(v: &Vec<T>) -> (usize, usize) {
                (v.as_ptr() as usize + v.len() * std::mem::size_of::<T>(), std::mem::size_of::<T>())
            }
            let cols = [
                col(&s.flow),
                col(&s.t),
                col(&s.cwnd_bytes),
                col(&s.inflight_bytes),
                col(&s.srtt_ms),
                col(&s.pacing_rate_bps),
                col(&s.delivery_rate_bps),
                col(&s.delivered_bytes),
                col(&s.retransmits),
            ];
            let caps = [
                s.flow.capacity() - s.flow.len(),
                cap,
                s.cwnd_bytes.capacity() - s.cwnd_bytes.len(),
                s.inflight_bytes.capacity() - s.inflight_bytes.len(),
                s.srtt_ms.capacity() - s.srtt_ms.len(),
                s.pacing_rate_bps.capacity() - s.pacing_rate_bps.len(),
                s.delivery_rate_bps.capacity() - s.delivery_rate_bps.len(),
                s.delivered_bytes.capacity() - s.delivered_bytes.len(),
                s.retransmits.capacity() - s.retransmits.len(),
            ];
            let rows = caps.into_iter().min().unwrap_or(0);
            let written = Arc::new(AtomicUsize::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let (w, st) = (written.clone(), stop.clone());
            let thread = std::thread::Builder::new()
                .name("bloatlab-prefault".into())
                .spawn(move || helper(&cols, rows, &w, &st))
                .ok()?;
            Some(Prefault { written, stop, thread: Some(thread) })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = s;
            None
        }
    }

    /// The sampler has written `rows` rows since the helper started.
    #[inline]
    pub fn progress(&self, rows: usize) {
        self.written.store(rows, Ordering::Relaxed);
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(target_os = "linux")]
fn helper(cols: &[(usize, usize)], rows: usize, written: &AtomicUsize, stop: &AtomicBool) {
    const PAGE: usize = 4096;
    let mut done = 0usize; // rows populated in every column
    while done < rows && !stop.load(Ordering::Relaxed) {
        let target = (written.load(Ordering::Relaxed) + AHEAD_ROWS).min(rows);
        if target <= done {
            std::thread::sleep(POLL);
            continue;
        }
        for &(base, size) in cols {
            // the pages of rows [done, target) of this column; the first column page may hold what
            // precedes the spare capacity (not ours to touch): from the next page boundary there
            let start = base + done * size;
            let a = if done == 0 { start.next_multiple_of(PAGE) } else { start / PAGE * PAGE };
            let b = (base + target * size) / PAGE * PAGE;
            if b > a {
                // SAFETY: [a, b) lies within the column's allocation, which lives (unmoved) until
                // this thread is joined; the advice faults pages in without changing their contents.
                let r = unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_POPULATE_WRITE) };
                if r != 0 {
                    return; // a kernel without the advice: the engine's writes fault the pages in
                }
            }
        }
        done = target;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_starts_for_large_columns_only_and_leaves_what_is_written_as_written() {
        let mut small = FlowSeries::default();
        small.reserve(1000);
        assert!(Prefault::start(&small).is_none());
        let mut s = FlowSeries::default();
        let rows = 3 * AHEAD_ROWS; // 6 MB an 8-byte column: the helper runs and waits for the writes
        s.reserve(rows);
        let p = Prefault::start(&s);
        #[cfg(target_os = "linux")]
        assert!(p.is_some());
        for i in 0..rows {
            s.t.push(i as f64);
            s.cwnd_bytes.push(i as u64 + 1);
            if i % 1000 == 0 {
                if let Some(p) = &p {
                    p.progress(s.t.len());
                }
            }
        }
        drop(p);
        assert!(s.t.iter().enumerate().all(|(i, &t)| t == i as f64));
        assert!(s.cwnd_bytes.iter().enumerate().all(|(i, &c)| c == i as u64 + 1));
    }
}
