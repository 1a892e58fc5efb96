//! The receiver's advertised window and receive-buffer autotuning.
//!
//! Source: Linux v6.18 (the kernel of this machine, 6.18.44), `net/ipv4/tcp_output.c`
//! (`tcp_select_initial_window`, `tcp_select_window`, `__tcp_select_window`),
//! `net/ipv4/tcp_input.c` (`tcp_init_buffer_space`, `tcp_measure_rcv_mss`'s
//! `scaling_ratio`, `tcp_grow_window` / `__tcp_grow_window`,
//! `tcp_rcv_rtt_update` / `tcp_rcv_rtt_measure_ts`, `tcp_rcv_space_adjust`,
//! `tcp_rcvbuf_grow` as of "tcp: fix too slow tcp_rcvbuf_grow() action",
//! 2025-10), `net/ipv4/tcp.c` (`tcp_set_window_clamp`), `include/net/tcp.h`
//! (`tcp_win_from_space`, `tcp_space_from_win`, `tcp_space`, `tcp_full_space`).
//!
//! Model in a nutshell. Memory (`sk_rcvbuf`, skb `truesize`) and window
//! (payload bytes) are converted by `scaling_ratio`/256, the payload/truesize
//! ratio of the last full segment (50 % until one arrives). Three limits, each
//! tighter than the one before:
//!
//! ```text
//!   tcp_rmem[2] (cap) ≥ sk_rcvbuf ── ×ratio ──> window_clamp ≥ rcv_ssthresh ≥ advertised window
//!        DRS grows sk_rcvbuf once per receiver RTT       tcp_grow_window: + 2 MSS per segment
//! ```
//!
//! - the connection starts with `sk_rcvbuf = tcp_rmem[1]` (128 KiB): the SYN
//!   window is 64 KiB rounded down to whole MSS (45 × 1448 = 65 160 B),
//!   `window_clamp` 64 088 B (one MSS reserved, `tcp_init_buffer_space`);
//!   the first full segment sets the ratio (160/256 here) and
//!   `tcp_set_window_clamp` lifts the clamp to 62.5 % of `sk_rcvbuf`;
//! - `tcp_grow_window`: each in-order (and, with SACK, each out-of-order)
//!   segment of ≥ 128 B raises `rcv_ssthresh` by 2 × advmss up to what the
//!   clamp and the free buffer allow, and sets `icsk_ack.quick |= 1`: the
//!   segment is acked at once (the receiver's caller does that);
//! - DRS (`tcp_rcv_space_adjust` → `tcp_rcvbuf_grow`), after each skb the
//!   application reads: once the receiver's RTT estimate has passed since
//!   the last measure, if more bytes were read than last time (`copied`,
//!   less those still in the receive queue: a read of a block a filled hole
//!   released measures at its first skb, the rest not yet read), `sk_rcvbuf`
//!   becomes the space for a window of 2 × copied plus 2 × that times the
//!   growth rate (slow start doubles per RTT, and DRS is one RTT late), plus
//!   the out-of-order span, at most `tcp_rmem[2]`; `window_clamp` follows;
//! - `tcp_select_window`: the window is min(free space, `rcv_ssthresh`),
//!   aligned up to the window-scale unit, never below what is still offered
//!   (the right edge never moves left: `tcp_shrink_window` = 0).
//!
//! The receiver's RTT (`rcv_rtt_est`) comes from TCP timestamps
//! (`tcp_rcv_rtt_measure_ts`): the sender echoes the TSval (ms) of the latest
//! ACK it has seen; a full segment with a new echo gives a sample
//! now − echo (0 is discarded); lower samples are taken at once, higher ones
//! smoothed by 1/8.
//!
//! States: none beyond the numbers above; `rcv_ssthresh` only grows (the
//! application reads at once, so neither `tcp_clamp_window` nor memory
//! pressure ever shrinks it), `sk_rcvbuf` only grows, the window's right edge
//! only moves right.
//!
//! Simplifications: the receiving application reads everything at once after
//! each segment has been acked (a bulk sink, as the emulator's probe
//! receiver), so the receive queue holds the segments that arrived since the
//! last read (one, or those a filled hole released) and the out-of-order
//! queue when the window is computed, and no in-order data when DRS
//! measures; every segment is taken as full-sized; the
//! window-independent RTT sample (`tcp_rcv_rtt_measure`, which can only lower
//! the estimate and is never below the timestamp one on a path without
//! reordering) and the window-update ACK a read may send
//! (`tcp_cleanup_rbuf`) are not modelled; the first data echo the segment
//! that let the sender start (a download's request, an upload's SYN-ACK), so
//! the first RTT sample comes with the first data, as on the kernel (its
//! capture: the first segments echo the request's TSval; `ss -tmi`: DRS steps
//! to 244 316 and 493 014 B at rounds 3 and 4 of a 20-ms download, as the
//! model's); `rcvq_space.time` starts at the first data segment
//! (Linux: at connection establishment, the same instant for an upload and
//! one round earlier for a download).

use bloatlab_core::kernel::tcp_rtt_tsopt_us;
use bloatlab_core::time::{Nanos, NS_PER_US};

/// `TCP_RMEM_TO_WIN_SCALE`: `scaling_ratio` is payload/truesize in 1/256.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: 50 % until the first full segment is measured.
const DEFAULT_SCALING_RATIO: u32 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// `tcp_rmem[1]`, bytes: the initial `sk_rcvbuf` (Linux default, and the
/// emulator's namespaces, crates/emu/src/ns.rs).
pub const RMEM_DEFAULT: u64 = 131_072;
/// `tcp_rmem[2]`, bytes: the most DRS may grow `sk_rcvbuf` to. 128 MiB, as
/// the emulator sets it in its namespaces (crates/emu/src/ns.rs; recorded in
/// every emulator result's sysctls); this host's own default is 32 MiB
/// (Linux ≥ 6.16). It also sets the window scale.
pub const RMEM_MAX: u64 = 134_217_728;
/// `net.core.rmem_max`, bytes (this machine and the emulator's results):
/// only a lower bound in the window-scale choice.
const CORE_RMEM_MAX: u64 = 4_194_304;
/// `TCP_MAX_WSCALE`.
const MAX_WSCALE: u32 = 14;
/// `sysctl_tcp_app_win` (default 31): the share of the buffer kept from
/// the window is `maxwin >> 31`, i.e. none, but one MSS is reserved.
const APP_WIN: u32 = 31;
/// `TCP_MSS_DEFAULT`: the first guess of the peer's MSS (`tcp_initialize_rcv_mss`).
const MSS_DEFAULT: u32 = 536;
/// `TCP_INIT_CWND`: the first `rcvq_space.space` is at most this many advmss.
const INIT_CWND: u32 = 10;
/// `tcp_event_data_recv`: segments shorter than this do not grow the window.
const GROW_MIN_LEN: u32 = 128;
/// `SOCK_MIN_RCVBUF / 2`: the lowest window clamp (`tcp_set_window_clamp`),
/// bytes (SOCK_MIN_RCVBUF = 2 × (2048 + sizeof(struct sk_buff)) on x86-64).
const MIN_WINDOW_CLAMP: u32 = 2304;

/// `tcp_win_from_space`: window bytes a buffer of `space` bytes of memory holds.
fn win_from_space(ratio: u32, space: i64) -> i64 {
    (space * ratio as i64) >> RMEM_TO_WIN_SCALE
}

/// `tcp_space_from_win`: memory needed for a window of `win` bytes.
fn space_from_win(ratio: u32, win: u64) -> u64 {
    (win << RMEM_TO_WIN_SCALE) / ratio as u64
}

/// The receive window of one connection (the `tcp_sock` fields it needs).
#[derive(Debug, Clone)]
pub struct RcvWindow {
    /// advmss, bytes: the largest segment this side announced.
    advmss: u32,
    /// `skb->truesize` of a full segment, bytes.
    truesize: u32,
    /// `rx_opt.rcv_wscale`.
    pub wscale: u32,
    /// `tp->scaling_ratio` (payload/truesize × 256).
    pub ratio: u32,
    /// `sk->sk_rcvbuf`, bytes.
    pub rcvbuf: u64,
    /// `tp->window_clamp`, bytes: the largest window to advertise.
    pub window_clamp: u32,
    /// `tp->rcv_ssthresh`, bytes: the window offered so far in "slow start".
    pub rcv_ssthresh: u32,
    /// `tp->rcv_wnd`, bytes: the window last advertised, from `rcv_wup`.
    pub rcv_wnd: u32,
    /// `tp->rcv_wup`, bytes: rcv_nxt when the window was last advertised.
    rcv_wup: u64,
    /// `icsk_ack.rcv_mss`, bytes: the guess of the peer's MSS.
    rcv_mss: u32,
    /// `tp->rcvq_space.space`, bytes: copied in the last measured RTT.
    pub space: u32,
    /// `rcvq_space.seq` (bytes) and `.time` (None: before the first data).
    space_seq: u64,
    space_time: Option<Nanos>,
    /// `tp->rcv_rtt_est.rtt_us`: the receiver's RTT in µs << 3 (0: none yet).
    pub rtt_us8: u32,
    /// `tp->rcv_rtt_last_tsecr`.
    last_tsecr: Option<u32>,
}

impl RcvWindow {
    /// A connection as it is established: `tcp_select_initial_window` with
    /// `tcp_full_space` at the default ratio, then `tcp_init_buffer_space`.
    /// `advmss` is the MSS of the peer's data (1448 with timestamps),
    /// `truesize` the memory one such segment takes in the receiver.
    pub fn new(advmss: u32, truesize: u32) -> RcvWindow {
        let ratio = DEFAULT_SCALING_RATIO;
        let rcvbuf = RMEM_DEFAULT;
        let mut clamp = 65_535u64 << MAX_WSCALE;
        let space = RcvWindow::select_initial_window(advmss) as u64;
        let rcv_wnd = space as u32;
        let scale_space = space.max(RMEM_MAX).max(CORE_RMEM_MAX).min(clamp);
        let wscale = (scale_space.ilog2().saturating_sub(15)).min(MAX_WSCALE);
        clamp = clamp.min(65_535u64 << wscale);
        // tcp_init_buffer_space
        let maxwin = win_from_space(ratio, rcvbuf as i64) as u64;
        if clamp >= maxwin {
            clamp = maxwin;
            if maxwin > 4 * advmss as u64 {
                clamp = (maxwin - (maxwin >> APP_WIN)).max(4 * advmss as u64);
            }
        }
        if clamp > 2 * advmss as u64 && clamp + advmss as u64 > maxwin {
            clamp = (2 * advmss as u64).max(maxwin - advmss as u64); // reserve one segment
        }
        let rcv_ssthresh = rcv_wnd.min(clamp as u32);
        RcvWindow {
            advmss,
            truesize,
            wscale,
            ratio,
            rcvbuf,
            window_clamp: clamp as u32,
            rcv_ssthresh,
            rcv_wnd,
            rcv_wup: 0,
            rcv_mss: MSS_DEFAULT.min(advmss).min(rcv_wnd / 2),
            space: rcv_ssthresh.min(rcv_wnd).min(INIT_CWND * advmss),
            space_seq: 0,
            space_time: None,
            rtt_us8: 0,
            last_tsecr: None,
        }
    }

    /// `tcp_select_initial_window` for a fresh socket (`tcp_rmem[1]`, the
    /// default ratio, no clamp set: the largest scaled window), its space
    /// rounded down to whole `mss`: the window a SYN or SYN-ACK offers.
    /// The active opener quantizes by its advmss (1460: `tcp_connect_init`,
    /// no timestamp seen yet), the passive one by the MSS less the timestamp
    /// option (1448: `tcp_openreq_init_rwin`); so Linux's SYN offers 64 240
    /// bytes and its SYN-ACK 65 160.
    pub fn select_initial_window(mss: u32) -> u32 {
        let clamp = 65_535u64 << MAX_WSCALE;
        let mut space = (win_from_space(DEFAULT_SCALING_RATIO, RMEM_DEFAULT as i64) as u64).min(clamp);
        if space > mss as u64 {
            space -= space % mss as u64; // quantized to whole MSS
        }
        space as u32
    }

    /// The window the handshake offered (unscaled, in the SYN or SYN-ACK).
    pub fn initial(&self) -> u32 {
        self.rcv_wnd
    }

    /// `tcp_space`: window bytes the free buffer holds, the segments not yet
    /// read (`queued` of them) still charged.
    fn tcp_space(&self, queued: u32) -> i64 {
        win_from_space(self.ratio, self.rcvbuf as i64 - (queued as i64 * self.truesize as i64))
    }

    /// `tcp_set_window_clamp(val)` (no reserved memory).
    fn set_window_clamp(&mut self, val: u32) {
        let new = val.max(MIN_WINDOW_CLAMP);
        let old = self.window_clamp;
        if new == old {
            return;
        }
        self.window_clamp = new;
        if new < old {
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        }
    }

    /// `tcp_rcv_rtt_measure_ts`: a full data segment at `now` echoing the
    /// TSval `tsecr` (ms).
    pub fn on_tsecr(&mut self, now: Nanos, tsecr: u32) {
        if self.last_tsecr == Some(tsecr) {
            return;
        }
        self.last_tsecr = Some(tsecr);
        // zero samples are no samples; an echo from the future is none either
        if let Some(us) = tcp_rtt_tsopt_us(now, tsecr, 0).filter(|&us| us > 0) {
            self.rtt_update(us);
        }
    }

    /// `tcp_rcv_rtt_update(sample, win_dep = 0)` with an empty receive
    /// queue: a lower sample is taken at once, a higher one smoothed by 1/8.
    fn rtt_update(&mut self, sample_us: u32) {
        let old = self.rtt_us8;
        let m = sample_us << 3;
        self.rtt_us8 = if old == 0 || m < old { m } else { old - (old >> 3) + sample_us };
    }

    /// `tcp_measure_rcv_mss` for a full segment of `len` bytes (the first
    /// one sets `scaling_ratio` and, if it changed, the window clamp).
    fn measure_rcv_mss(&mut self, len: u32) {
        if len < self.rcv_mss {
            return;
        }
        if len != self.rcv_mss {
            let old = self.ratio;
            self.ratio = ((len << RMEM_TO_WIN_SCALE) / self.truesize).max(1);
            if old != self.ratio {
                let val = win_from_space(self.ratio, self.rcvbuf as i64) as u32;
                self.set_window_clamp(val);
                self.space = self.space.min(self.window_clamp);
            }
        }
        self.rcv_mss = len.min(self.advmss);
    }

    /// `tcp_grow_window` for a segment of `len` bytes just queued (`queued`
    /// segments unread, this one included). Returns true when it grew
    /// `rcv_ssthresh`: Linux then sets `icsk_ack.quick |= 1`.
    fn grow(&mut self, len: u32, queued: u32) -> bool {
        let room = (self.window_clamp as i64).min(self.tcp_space(queued)) - self.rcv_ssthresh as i64;
        if room <= 0 || len < GROW_MIN_LEN {
            return false;
        }
        let incr = if win_from_space(self.ratio, self.truesize as i64) <= len as i64 {
            2 * self.advmss
        } else {
            self.grow_slow(len)
        };
        if incr == 0 {
            return false;
        }
        let incr = incr.max(2 * len);
        self.rcv_ssthresh += (room as u32).min(incr);
        true
    }

    /// `__tcp_grow_window`: a segment with a poor payload/truesize ratio may
    /// still grow the window while it is small against `tcp_rmem[2]`.
    fn grow_slow(&self, len: u32) -> u32 {
        let mut truesize = win_from_space(self.ratio, self.truesize as i64) >> 1;
        let mut window = win_from_space(self.ratio, RMEM_MAX as i64) >> 1;
        while self.rcv_ssthresh as i64 <= window {
            if truesize <= len as i64 {
                return 2 * self.rcv_mss;
            }
            truesize >>= 1;
            window >>= 1;
        }
        0
    }

    /// An in-order segment of `len` bytes arrived at `now` (`tcp_event_data_recv`'s
    /// part): returns whether the window grew (ack at once).
    /// `queued`: the in-order segments not yet read, this one included. The
    /// receiver runs its two parts apart (its quick-ACK count comes between);
    /// the window's own tests drive both at once.
    #[cfg(test)]
    pub fn on_in_order(&mut self, now: Nanos, len: u32, queued: u32) -> bool {
        self.measure_in_order(now, len);
        self.grow_in_order(len, queued)
    }

    /// The first part of `on_in_order`: `tcp_event_data_recv` measures
    /// `icsk_ack.rcv_mss` before its quick-ACK count (`tcp_incr_quickack`
    /// divides by it) and grows the window after.
    pub fn measure_in_order(&mut self, now: Nanos, len: u32) {
        if self.space_time.is_none() {
            self.space_time = Some(now);
        }
        self.measure_rcv_mss(len);
    }

    /// The second part of `on_in_order`: `tcp_grow_window`.
    pub fn grow_in_order(&mut self, len: u32, queued: u32) -> bool {
        self.grow(len, queued.max(1))
    }

    /// An out-of-order segment of `len` bytes was queued (`tcp_data_queue_ofo`,
    /// SACK on): the window may grow (returns whether it did), and the buffer
    /// is resized for the out-of-order span (`ooo_bytes` from rcv_nxt to the
    /// end of the highest out-of-order segment).
    /// `charged`: the segments already in `sk_rmem_alloc` (unread and out of
    /// order), this one not yet: Linux charges it after `tcp_grow_window`.
    pub fn on_out_of_order(&mut self, len: u32, ooo_bytes: u64, charged: u32) -> bool {
        let grew = self.grow(len, charged);
        self.rcvbuf_grow(self.space, ooo_bytes);
        grew
    }

    /// `tcp_rcv_space_adjust` as `tcp_recvmsg_locked` calls it, after each
    /// skb it copies: at `now` the application has read up to `copied_seq`
    /// (bytes) and `inq` bytes are still in the receive queue
    /// (`rcv_nxt - copied_seq`), which Linux (≥ 6.16, "tcp: add receive
    /// queue awareness in tcp_rcv_space_adjust()") takes off what was
    /// copied; `ooo_bytes` as in [`Self::on_out_of_order`]. Once a receiver
    /// RTT has passed, the first skb of a read measures and starts the next
    /// interval at its own end, so the later skbs of the same read (the same
    /// `now`) measure nothing: a read of a block that a filled hole released
    /// measures one skb less the rest of the block (usually no growth), and
    /// the rest counts in the next interval.
    pub fn on_read(&mut self, now: Nanos, copied_seq: u64, inq: u64, ooo_bytes: u64) {
        let Some(t0) = self.space_time else { return };
        if self.rtt_us8 == 0 {
            return;
        }
        let time_us = (now - t0) / NS_PER_US;
        if time_us < (self.rtt_us8 >> 3) as u64 {
            return;
        }
        let copied = (copied_seq - self.space_seq) as i64 - inq as i64;
        if copied > self.space as i64 {
            self.rcvbuf_grow(copied.min(u32::MAX as i64) as u32, ooo_bytes);
        }
        self.space_seq = copied_seq;
        self.space_time = Some(now);
    }

    /// `tcp_rcvbuf_grow(newval)`.
    fn rcvbuf_grow(&mut self, newval: u32, ooo_bytes: u64) {
        let old = self.space;
        self.space = newval;
        // DRS is always one RTT late: twice what was copied ...
        let mut rcvwin = (newval as u64) << 1;
        // ... and slow start may double the rate again.
        let grow = rcvwin * (newval - old) as u64 / old as u64;
        rcvwin += grow << 1;
        rcvwin += ooo_bytes;
        let rcvbuf = space_from_win(self.ratio, rcvwin).min(RMEM_MAX);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(self.ratio, rcvbuf as i64) as u32;
        }
    }

    /// `tcp_select_window` when an ACK leaves with `rcv_nxt` (bytes) and
    /// `queued` segments unread (taken as at least one: the segment that
    /// caused the ACK, see the module docs): the window it carries (bytes, a
    /// multiple of the scale unit). The second value is false when Linux
    /// clears `icsk_ack.quick` (free space below half the buffer).
    pub fn select(&mut self, rcv_nxt: u64, queued: u32) -> (u32, bool) {
        let cur = (self.rcv_wup + self.rcv_wnd as u64).saturating_sub(rcv_nxt) as u32;
        let (mut new, keep_quick) = self.select_new(queued.max(1));
        let unit = 1u32 << self.wscale;
        if new < cur {
            new = cur.div_ceil(unit) * unit; // never shrink the offered window
        }
        self.rcv_wnd = new;
        self.rcv_wup = rcv_nxt;
        let field = new.min(65_535 << self.wscale) >> self.wscale;
        (field << self.wscale, keep_quick)
    }

    /// `__tcp_select_window` with `queued` segments unread, without side
    /// effects: what `__tcp_ack_snd_check` compares with `rcv_wnd` (the
    /// right edge would advance) and `tcp_cleanup_rbuf` with the window
    /// still open.
    pub fn window_now(&self, queued: u32) -> u32 {
        self.select_new(queued).0
    }

    /// `tcp_receive_window`: what is left of the last advertised window at
    /// `rcv_nxt` (bytes).
    pub fn receive_window(&self, rcv_nxt: u64) -> u32 {
        (self.rcv_wup + self.rcv_wnd as u64).saturating_sub(rcv_nxt) as u32
    }

    /// `tcp_incr_quickack`'s quota: `rcv_wnd / (2 × icsk_ack.rcv_mss)`, 2
    /// when that is 0, at most `max`.
    pub fn quickacks(&self, max: u32) -> u32 {
        let q = self.rcv_wnd / (2 * self.rcv_mss.max(1));
        (if q == 0 { 2 } else { q }).min(max)
    }

    /// `__tcp_select_window` with `queued` segments unread.
    fn select_new(&self, queued: u32) -> (u32, bool) {
        let mut mss = self.rcv_mss as i64;
        let mut free = self.tcp_space(queued);
        let allowed = win_from_space(self.ratio, self.rcvbuf as i64);
        let full = (self.window_clamp as i64).min(allowed);
        if mss > full {
            mss = full;
            if mss <= 0 {
                return (0, true);
            }
        }
        let mut keep_quick = true;
        if free < full >> 1 {
            keep_quick = false;
            free &= !((1i64 << self.wscale) - 1);
            if free < allowed >> 4 || free < mss {
                return (0, false);
            }
        }
        // window scaling on (wscale 12 here): no MSS rounding, aligned up to the
        // scale unit so that the window is not scaled away
        let free = free.min(self.rcv_ssthresh as i64);
        let unit = 1i64 << self.wscale;
        (((free + unit - 1) / unit * unit) as u32, keep_quick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloatlab_core::time::NS_PER_MS;

    /// A 1448-byte segment in a 2304-byte skb (a 1500-byte linear skb from a TUN).
    fn fresh() -> RcvWindow {
        RcvWindow::new(1448, 2304)
    }

    #[test]
    fn a_new_connection_offers_45_segments_and_scales_by_4096_for_a_128_mib_buffer() {
        let w = fresh();
        // 131 072 B at 50 % = 65 536, rounded down to whole MSS: 45 x 1448
        assert_eq!(w.initial(), 65_160);
        // the active opener's SYN quantizes by 1460 (as this machine's kernel offers in its captures)
        assert_eq!(RcvWindow::select_initial_window(1460), 64_240);
        // ilog2(134 217 728) - 15 = 12
        assert_eq!(w.wscale, 12);
        // tcp_init_buffer_space: 65 536 less one reserved MSS
        assert_eq!((w.window_clamp, w.rcv_ssthresh), (64_088, 64_088));
        // min(rcv_ssthresh, rcv_wnd, 10 x advmss)
        assert_eq!(w.space, 14_480);
        assert_eq!(w.rcv_mss, 536);
    }

    #[test]
    fn the_first_full_segment_sets_the_ratio_and_each_segment_grows_the_window_by_two_mss_until_the_buffer_is_reached() {
        let mut w = fresh();
        assert!(w.on_in_order(0, 1448, 1));
        // 1448 << 8 / 2304 = 160; the clamp follows 131 072 x 160/256 = 81 920,
        // rcv_ssthresh is lifted to the window offered (65 160), then + 2 x 1448
        assert_eq!((w.ratio, w.window_clamp, w.rcv_mss), (160, 81_920, 1448));
        assert_eq!(w.rcv_ssthresh, 65_160 + 2896);
        for n in 2..=5 {
            assert!(w.on_in_order(0, 1448, 1));
            assert_eq!(w.rcv_ssthresh, 65_160 + n * 2896, "segment {n}");
        }
        // the free buffer (131 072 - one 2304-byte skb) x 160/256 = 80 480 bounds it
        assert!(w.on_in_order(0, 1448, 1));
        assert_eq!(w.rcv_ssthresh, 80_480);
        assert!(!w.on_in_order(0, 1448, 1), "no room: no growth, no quick ACK");
        assert!(!fresh().on_in_order(0, 100, 1), "segments under 128 B never grow it");
    }

    #[test]
    fn the_advertised_window_is_rcv_ssthresh_aligned_up_to_the_scale_and_never_shrinks() {
        let mut w = fresh();
        w.on_in_order(0, 1448, 1);
        // min(80 480 free, 68 056) aligned up to 4096: 69 632
        assert_eq!(w.select(1448, 1), (69_632, true));
        assert_eq!((w.rcv_wnd, w.rcv_wup), (69_632, 1448));
        // an offer beyond what the buffer gives now is kept: right edge 1448 + 200 000
        w.rcv_wnd = 200_000;
        let cur: u32 = 200_000 - 1448 * 9; // at rcv_nxt = 10 segments
        assert_eq!(w.select(10 * 1448, 1).0, cur.div_ceil(4096) * 4096);
    }

    #[test]
    fn the_receiver_rtt_takes_a_lower_sample_at_once_and_smooths_a_higher_one() {
        let mut w = fresh();
        w.on_tsecr(100 * NS_PER_MS, 50);
        assert_eq!(w.rtt_us8, 50_000 << 3);
        // 80 ms: 400 000 - 50 000 + 80 000
        w.on_tsecr(200 * NS_PER_MS, 120);
        assert_eq!(w.rtt_us8, 430_000);
        w.on_tsecr(210 * NS_PER_MS, 120);
        assert_eq!(w.rtt_us8, 430_000, "the same echo gives no second sample");
        w.on_tsecr(300 * NS_PER_MS, 300);
        assert_eq!(w.rtt_us8, 430_000, "a zero sample is none");
        w.on_tsecr(331 * NS_PER_MS, 301);
        assert_eq!(w.rtt_us8, 30_000 << 3);
    }

    #[test]
    fn drs_waits_one_receiver_rtt_then_sizes_the_buffer_for_twice_the_bytes_read_and_their_growth() {
        let mut w = fresh();
        w.on_in_order(0, 1448, 1); // rcvq_space.time = 0, ratio 160
        w.on_tsecr(60 * NS_PER_MS, 10); // receiver RTT 50 ms
        w.on_read(49 * NS_PER_MS, 30 * 1448, 0, 0);
        assert_eq!((w.rcvbuf, w.space), (131_072, 14_480), "less than one RTT: nothing");
        w.on_read(50 * NS_PER_MS, 30 * 1448, 0, 0);
        // copied 43 440 > 14 480: rcvwin = 2 x 43 440 + 2 x 86 880 x 28 960 / 14 480 = 434 400,
        // rcvbuf = 434 400 x 256 / 160 = 695 040, clamp back at 160/256 = 434 400
        assert_eq!((w.space, w.rcvbuf, w.window_clamp), (43_440, 695_040, 434_400));
        // the window grows again, each segment acked at once
        assert!(w.on_in_order(51 * NS_PER_MS, 1448, 1));
        assert_eq!(w.rcv_ssthresh, 65_160 + 2 * 2896);
        // the next measure starts at 50 ms: fewer bytes read than last time: no change
        w.on_read(101 * NS_PER_MS, 40 * 1448, 0, 0);
        assert_eq!((w.space, w.rcvbuf), (43_440, 695_040));
    }

    #[test]
    fn tcp_rcvbuf_grow_matches_the_kernel_trace_of_its_fix() {
        // "tcp: fix too slow tcp_rcvbuf_grow() action" (2025-10), the trace after the fix,
        // scaling_ratio 219: space 40 960 -> copied 49 152 gives rcvbuf 160 875, clamp 137 623;
        // 49 152 -> 86 016 gives 502 741 and 430 079
        let mut w = fresh();
        w.ratio = 219;
        w.space = 40_960;
        w.rcvbuf_grow(49_152, 0);
        assert_eq!((w.rcvbuf, w.window_clamp), (160_875, 137_623));
        w.rcvbuf_grow(86_016, 0);
        assert_eq!((w.rcvbuf, w.window_clamp), (502_741, 430_079));
    }

    #[test]
    fn out_of_order_data_grow_the_buffer_by_their_span_and_tcp_rmem_max_caps_it() {
        let mut w = fresh();
        w.on_in_order(0, 1448, 1);
        // 2 x 14 480 + 100 segments of span = 173 760 B of window: 278 016 B of buffer
        w.on_out_of_order(1448, 100 * 1448, 1);
        assert_eq!((w.space, w.rcvbuf), (14_480, 278_016));
        w.space = 1 << 30;
        w.rcvbuf_grow(1 << 30, 0);
        assert_eq!(w.rcvbuf, RMEM_MAX);
    }
}
