//! cake-autorate's control loop for one direction: from one-way-delay samples
//! and the achieved rate to CAKE's shaper rate.
//!
//! Source: lynxthecat/cake-autorate, `cake-autorate.sh` and `defaults.sh` at
//! commit 94238bef6184ffde3c5e44d4f72784a140849571 (2026-08-19, "Reset
//! reflector response deadline on activation (#408)"). The arithmetic is the
//! script's own integer arithmetic (bash `(( ))`: i64, division truncating
//! toward zero; rates in kbit/s, times in µs, alphas scaled by 10^6, rate
//! factors by 10^3), so that one event in gives the script's rate out.
//!
//! Model in a nutshell: the shaper rate `r` is raised while the link is loaded
//! and no bufferbloat is seen, cut when the delay grows, and drifts back to a
//! base rate when the link is idle:
//!
//! ```text
//!   every ping response (sample)            every monitor interval (200 ms)
//!   owd -> baseline EWMA -> delta           achieved = bytes out of CAKE / interval
//!   delta > thr ? into k-of-n window        load = achieved / r  (HIGH if > 75 %)
//!            |
//!            v
//!   bufferbloat (>= 3 of last 6)? --yes--> r *= 0.99 .. 0.75 (scaled by avg delta), refractory 300 ms
//!            | no
//!   load HIGH (and a fresh achieved rate)? --yes--> r *= 1.00 .. 1.04 (scaled by avg delta)
//!            | no (LOW or IDLE)
//!   every 1 s: r -> base by x0.99 (from above) or x1.01 (from below)
//!   finally r = clamp(r, min, max)
//! ```
//!
//! The baseline follows the OWD down fast (alpha 0.9) and up slowly (alpha
//! 0.001), so a standing queue is seen as delay for a long time while a path
//! change to a shorter route is taken at once. Each reflector keeps its own
//! baseline (`dl_owd_baselines_us[pinger]`), updated only by its own
//! responses: with 6 pingers round-robin, one every 300 ms, not every 50-ms
//! sample. The delay window and the average delta are shared by all pingers
//! (one `delays_idx`).
//!
//! Load states (per direction, `load_state` in the script): IDLE (achieved ≤
//! `connection_active_thr`), LOW (active, ≤ 75 % of the shaper rate), HIGH
//! (> 75 %). Bufferbloat is a flag recomputed on every sample.
//!
//! Constants, all `defaults.sh` (the script's units):
//! - `owd_delta_delay_thr` 30 ms: an OWD this far above its baseline is a
//!   "delayed" sample; compensated (raised) by one maximal wire packet's
//!   serialization at the current shaper rate (`set_shaper_rates`), which
//!   matters below ~12 Mbit/s.
//! - `avg_owd_delta_max_adjust_up_thr` 10 ms, `avg_owd_delta_max_adjust_down_thr`
//!   60 ms: where the increase factor reaches its maximum (1.04) and the
//!   decrease factor its maximum (0.75); linear between these and the delay
//!   threshold (both compensated the same way).
//! - `bufferbloat_detection_window` 6 samples, `bufferbloat_detection_thr` 3:
//!   bufferbloat is 3 delayed samples among the last 6.
//! - `alpha_baseline_increase` 0.001, `alpha_baseline_decrease` 0.9; the
//!   baseline starts at 100 ms (`dl_owd_baselines_us=100000`).
//! - `shaper_rate_min/max_adjust_down_bufferbloat` 0.99/0.75,
//!   `shaper_rate_min/max_adjust_up_load_high` 1.0/1.04,
//!   `shaper_rate_adjust_down/up_load_low` 0.99/1.01.
//! - `high_load_thr` 0.75; `connection_active_thr_kbps` 2000 (must not exceed
//!   the minimum rate, the script refuses it).
//! - `bufferbloat_refractory_period_ms` 300 (longer than the 6 × 50 ms the
//!   window needs to refill), `decay_refractory_period_ms` 1000.
//! - Rates: min 5000, base 20000, max 80000 kbit/s (download defaults; a
//!   scenario always gives its own).
//! - Samples: `no_pingers` 6 × one ping per `reflector_ping_interval_s` 0.3 s
//!   = one sample every 50 ms (`ping_response_interval_us`, fping's
//!   `--interval`), from the pingers in turn (fping's round robin, each
//!   pinger in its own time slot, `sleep_until_next_pinger_time_slot`); each
//!   pinger's baseline starts at 100 ms. In a lab every reflector sits behind
//!   the same queue, so the six baselines see the same OWDs, 50 ms apart.
//! - `monitor_achieved_rates_interval_ms` 200.
//! - Max wire packet 1500 B = 12 000 bit (MTU 1500, no CAKE overhead).
//!
//! Starlink satellite switch compensation (SSS), off by default as in
//! `defaults.sh` (`sss_compensation=0`). Source: it is *not* in commit
//! 94238be: cake-autorate removed it in 16bd1aed81b5db63ed73173c5407d6b10e7ec3fe
//! (2024-03-26, "Remove Starlink satellite switching compensation": "given
//! insufficient evidence that it helps especially given recent improvements
//! to Starlink connections", CHANGELOG v3.2). We port it from that commit's
//! parent, 66dba8e7e52ffb8fc027d4f4ae5f2de812beb6df (2024-03-26), whose
//! `update_shaper_rate` is the one above but for the high-load raise (a fixed
//! `shaper_rate_adjust_up_load_high` there; 94238be scales it by the average
//! delta, and we keep 94238be's). Its purpose (CHANGELOG 2022-07-01): "to
//! preemptively reduce shaper rates prior to switch thereby to help prevent or
//! at least reduce the otherwise large RTT spikes associate[d] with the
//! switching".
//!
//! ```text
//!   every sample, after the bufferbloat flag:
//!     timestamp_usecs_past_minute = t_start_us % 60000000
//!     if  sss_time - pre < that < sss_time + post  for any sss_time (strict, no wrap at the minute):
//!         load_condition += "_sss"
//!   update_shaper_rate: the first case that matches wins, and the SSS cases come first:
//!     ul*sss: r = min                       t_last_decay = t_start
//!     dl*sss: r = min(r, base)              t_last_decay = t_start
//!     *bb* ... *high* ... *low*|*idle* ...  (as above)
//!   finally r = clamp(r, min, max)
//! ```
//!
//! So inside a window the bufferbloat cut and the high-load raise are
//! skipped (the delay window and the deltas still advance; neither
//! `t_last_bufferbloat` nor the achieved-rate flag is touched, so a raise on
//! the last reading may come on the first sample after the window), and the
//! decay timer restarts: after the window the rate only climbs back by the
//! high-load raise (4 % per 200-ms reading at most), or decays toward base no
//! sooner than 1 s later. The script's `t_start_us` is the wall clock
//! (`${EPOCHREALTIME/.}`, Unix time in µs), so its windows sit at fixed
//! seconds past each UTC minute, where Starlink reconfigures (every 15 s, at
//! 12/27/42/57 s past the minute). The lab has no wall clock: the controller
//! takes the scenario's time, the clock its trace follows too (the
//! simulator's t = 0; the emulator's link clock starts the flows' set-up
//! lead, 0.14 s at 40 ms RTT, before the scenario's t = 0, and gives that as
//! `Params::clock_origin_ns`), and the seconds past the minute are that time
//! mod 60 s. The Starlink-like trace
//! (`python/bloatlab/traces.py`) puts its first epoch change at 12 s of that
//! time and the next every 15 s, so the windows meet its switches as a
//! dish's windows meet its epochs against UTC.
//!
//! The last release with SSS, v3.1.1, does not restart the decay timer in
//! the window (66dba8e does, and we follow 66dba8e); the windows and the
//! rates are the same.
//!
//! SSS constants (`defaults.sh` at 66dba8e, the same in v3.1.1):
//! - `sss_times_s` 12.0, 27.0, 42.0, 57.0 s past the minute: Starlink's
//!   15-s reconfiguration schedule (converted with `printf %.0f "${s}e6"`,
//!   i.e. rounded to whole µs).
//! - `sss_compensation_pre_duration_ms` 300: the window opens this long
//!   before the switch, so the rate is down before it ("preemptively").
//! - `sss_compensation_post_duration_ms` 200: and closes this long after it
//!   (defaults.sh gives no reason; it covers our trace's 100-ms handover dip).
//!
//! Left out (the script has them, a lab link does not need them): reflector
//! rotation and health, the per-reflector `owd_delta_ewma` (used only for
//! reflector health), the sleep function, stall detection, the global ping
//! timeout, the monitor interval's stretch to 10 wire-packet RTTs below
//! ~1 Mbit/s, and responses older than 500 ms (none in a lab). One controller
//! runs per direction with that direction's OWD, as with `pinger_method=tsping`
//! or `irtt`; the default `fping` takes half the RTT as both OWDs, so there a
//! delay in either direction cuts both rates (and the 30-ms threshold is 60 ms
//! of RTT added in one direction).
//!
//! Checked line by line against 94238be's main loop (2026-11-25, issue 31):
//! the load states (`SARS`: `load_percent = 100*achieved/shaper`, HIGH above
//! `high_load_thr_percent`, else LOW above `connection_active_thr_kbps`;
//! `medium_load_thr` went in d092a0b, 2022-12-10, "Remove medium rate
//! logic"), the raise (`achieved_rate_updated` and
//! the bufferbloat refractory period; factor from the window's average delta;
//! `t_last_decay_us` restarted), the cut, the decay toward base, the
//! thresholds' compensation at the rate last set, the achieved rate (bytes
//! over the nominal 200-ms interval, every 200 ms) and the shared 6-sample
//! window match. One mismatch was found and fixed: the baselines are per
//! pinger (above); the model had kept one baseline for all samples, which
//! rose six times as fast under a standing queue.

use crate::time::Nanos;

/// The script's load states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    Idle,
    Low,
    High,
}

/// `connection_active_thr_kbps` of `defaults.sh`: an achieved rate below it is an idle
/// direction, and the script refuses a minimum rate below it.
pub const CONNECTION_ACTIVE_THR_KBPS: i64 = 2000;

/// Parameters, in the script's units (see the constants above).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub min_kbps: i64,
    pub base_kbps: i64,
    pub max_kbps: i64,
    /// Time between two OWD samples (all pingers together), ns.
    pub ping_interval_ns: Nanos,
    /// `no_pingers`: the samples come from this many reflectors in turn, each with its own OWD baseline.
    pub pingers: usize,
    /// Time between two achieved-rate readings, ns.
    pub monitor_interval_ns: Nanos,
    pub owd_delta_delay_thr_us: i64,
    pub avg_owd_delta_max_adjust_up_thr_us: i64,
    pub avg_owd_delta_max_adjust_down_thr_us: i64,
    pub detection_window: usize,
    pub detection_thr: usize,
    /// Scaled by 10^6.
    pub alpha_baseline_increase: i64,
    pub alpha_baseline_decrease: i64,
    /// Scaled by 10^3.
    pub min_adjust_down_bufferbloat: i64,
    pub max_adjust_down_bufferbloat: i64,
    pub min_adjust_up_load_high: i64,
    pub max_adjust_up_load_high: i64,
    pub adjust_down_load_low: i64,
    pub adjust_up_load_low: i64,
    pub high_load_thr_percent: i64,
    pub connection_active_thr_kbps: i64,
    pub bufferbloat_refractory_us: i64,
    pub decay_refractory_us: i64,
    pub max_wire_packet_size_bits: i64,
    /// Starlink satellite switch compensation (`sss_compensation=1`); None: off, as in `defaults.sh`.
    pub sss: Option<Sss>,
    /// The lab's wall clock: the time (on the clock `now` is given in) of the scenario's t = 0. The
    /// switch windows' seconds past the minute are those of `now - clock_origin_ns`. 0 in the
    /// simulator; the emulator's link clock starts its set-up lead earlier (`measure_from`).
    pub clock_origin_ns: Nanos,
}

/// Starlink satellite switch compensation's settings (cake-autorate 66dba8e `defaults.sh`, the script's units).
#[derive(Debug, Clone, PartialEq)]
pub struct Sss {
    /// `sss_times_s`, in µs past the minute.
    pub times_us: Vec<i64>,
    /// `sss_compensation_pre_duration_ms`, µs.
    pub pre_us: i64,
    /// `sss_compensation_post_duration_ms`, µs.
    pub post_us: i64,
    /// The direction: upload (`ul*sss`: the rate goes to min) or download (`dl*sss`: to at most base).
    pub upload: bool,
}

/// One minute, µs: the script's `t_start_us%60000000`.
pub const MINUTE_US: i64 = 60_000_000;

impl Sss {
    /// `defaults.sh` (66dba8e): switches at 12, 27, 42 and 57 s past the minute, 300 ms before to 200 ms after.
    pub fn defaults(upload: bool) -> Sss {
        Sss { times_us: vec![12_000_000, 27_000_000, 42_000_000, 57_000_000], pre_us: 300_000, post_us: 200_000, upload }
    }

    /// The script's test: is `t_us` (its `t_start_us`) strictly inside a window? No wrap at the minute.
    pub fn active(&self, t_us: i64) -> bool {
        // `%` of a non-negative time, as the script's; a time before the scenario's t = 0 (the
        // emulator's lead) is in the minute before it (59.86 s past it for -0.14 s).
        let past_minute = t_us.rem_euclid(MINUTE_US);
        self.times_us.iter().any(|&s| past_minute > s - self.pre_us && past_minute < s + self.post_us)
    }

    /// Bounds the script does not check but a lab scenario must respect, naming the key.
    pub fn check(&self) -> Result<(), String> {
        if self.pre_us < 0 {
            return Err(format!("sss.pre: must not be negative, got {} µs", self.pre_us));
        }
        if self.post_us < 0 {
            return Err(format!("sss.post: must not be negative, got {} µs", self.post_us));
        }
        for (i, &t) in self.times_us.iter().enumerate() {
            if !(0..=MINUTE_US).contains(&t) {
                return Err(format!("sss.times.{i}: must lie within 0-60 s past the minute, got {} µs", t));
            }
        }
        Ok(())
    }
}

impl Params {
    /// `defaults.sh` around the given rates.
    pub fn defaults(min_kbps: i64, base_kbps: i64, max_kbps: i64) -> Params {
        Params {
            min_kbps,
            base_kbps,
            max_kbps,
            ping_interval_ns: 50_000_000,
            pingers: 6,
            monitor_interval_ns: 200_000_000,
            owd_delta_delay_thr_us: 30_000,
            avg_owd_delta_max_adjust_up_thr_us: 10_000,
            avg_owd_delta_max_adjust_down_thr_us: 60_000,
            detection_window: 6,
            detection_thr: 3,
            alpha_baseline_increase: 1_000,
            alpha_baseline_decrease: 900_000,
            min_adjust_down_bufferbloat: 990,
            max_adjust_down_bufferbloat: 750,
            min_adjust_up_load_high: 1000,
            max_adjust_up_load_high: 1040,
            adjust_down_load_low: 990,
            adjust_up_load_low: 1010,
            high_load_thr_percent: 75,
            connection_active_thr_kbps: CONNECTION_ACTIVE_THR_KBPS,
            bufferbloat_refractory_us: 300_000,
            decay_refractory_us: 1_000_000,
            max_wire_packet_size_bits: 12_000,
            sss: None,
            clock_origin_ns: 0,
        }
    }

    /// The script's start-up checks, each naming the key it is about.
    pub fn check(&self) -> Result<(), String> {
        if self.min_kbps < 1 {
            return Err("min: must be at least 1 kbit/s".into());
        }
        if self.min_kbps > self.max_kbps {
            return Err(format!("min ({} kbit/s) must not exceed max ({} kbit/s)", self.min_kbps, self.max_kbps));
        }
        if self.base_kbps < self.min_kbps || self.base_kbps > self.max_kbps {
            return Err(format!("base: must satisfy min <= base <= max, got {} <= {} <= {} kbit/s", self.min_kbps, self.base_kbps, self.max_kbps));
        }
        if self.ping_interval_ns == 0 {
            return Err("ping_interval: must be > 0".into());
        }
        if self.pingers == 0 {
            return Err("pingers: must be at least 1".into());
        }
        if self.monitor_interval_ns == 0 {
            return Err("monitor_interval: must be > 0".into());
        }
        if self.detection_window == 0 || self.detection_thr > self.detection_window {
            return Err("detection_thr: cannot be greater than detection_window (and the window needs one sample)".into());
        }
        if self.connection_active_thr_kbps > self.min_kbps {
            return Err(format!(
                "min: cake-autorate needs the minimum rate at or above its connection-active threshold ({} kbit/s)",
                self.connection_active_thr_kbps
            ));
        }
        if let Some(sss) = &self.sss {
            sss.check()?;
        }
        Ok(())
    }
}

/// One direction's controller state.
#[derive(Debug, Clone)]
pub struct Controller {
    pub p: Params,
    /// The shaper rate CAKE is set to, kbit/s.
    rate_kbps: i64,
    /// One OWD baseline per pinger (`dl_owd_baselines_us[pinger]`), µs.
    baselines_us: Vec<i64>,
    /// The pinger whose response comes next (round robin).
    pinger: usize,
    delays: Vec<bool>,
    deltas_us: Vec<i64>,
    idx: usize,
    sum_delays: usize,
    sum_deltas_us: i64,
    achieved_kbps: i64,
    achieved_updated: bool,
    load: Load,
    t_last_bufferbloat_us: i64,
    t_last_decay_us: i64,
    /// The last sample's verdict (for logs and tests).
    pub bufferbloat: bool,
    /// The last sample fell in a satellite switch window (the script's `_sss` load condition).
    pub sss_active: bool,
}

impl Controller {
    /// Start at the base rate, at time `now` (the script's `t_start_us` of its start-up).
    pub fn new(p: Params, now: Nanos) -> Result<Controller, String> {
        p.check()?;
        let n = p.detection_window;
        let t0 = (now / 1000) as i64;
        Ok(Controller {
            rate_kbps: p.base_kbps,
            baselines_us: vec![100_000; p.pingers],
            pinger: 0,
            delays: vec![false; n],
            deltas_us: vec![0; n],
            idx: 0,
            sum_delays: 0,
            sum_deltas_us: 0,
            achieved_kbps: 0,
            achieved_updated: false,
            load: Load::Idle,
            t_last_bufferbloat_us: t0,
            t_last_decay_us: t0,
            bufferbloat: false,
            sss_active: false,
            p,
        })
    }

    pub fn rate_kbps(&self) -> i64 {
        self.rate_kbps
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_kbps as u64 * 1000
    }

    pub fn load(&self) -> Load {
        self.load
    }

    /// The baseline of the pinger that answered last, µs.
    pub fn baseline_us(&self) -> i64 {
        let n = self.p.pingers;
        self.baselines_us[(self.pinger + n - 1) % n]
    }

    /// `set_shaper_rates`' compensation: one maximal wire packet at the current rate, µs.
    fn compensation_us(&self) -> i64 {
        (1000 * self.p.max_wire_packet_size_bits) / self.rate_kbps
    }

    /// The script's `SARS` message: the achieved rate over the last monitor interval.
    pub fn on_achieved_rate(&mut self, achieved_kbps: i64) {
        self.achieved_kbps = achieved_kbps;
        self.achieved_updated = true;
        let load_percent = 100 * achieved_kbps / self.rate_kbps;
        self.load = if load_percent > self.p.high_load_thr_percent {
            Load::High
        } else if achieved_kbps > self.p.connection_active_thr_kbps {
            Load::Low
        } else {
            Load::Idle
        };
    }

    /// One ping response: its one-way delay (µs) at time `now`. Returns the new shaper rate, kbit/s.
    pub fn on_owd_sample(&mut self, now: Nanos, owd_us: i64) -> i64 {
        let t = (now / 1000) as i64;
        let delta = self.update_baseline(owd_us);
        self.update_window(delta);
        let avg = self.sum_deltas_us / self.p.detection_window as i64;
        self.bufferbloat = self.sum_delays >= self.p.detection_thr;
        // The script's `t_start_us` is the wall clock: the scenario's time (negative in the emulator's lead).
        let wall_us = t - (self.p.clock_origin_ns / 1000) as i64;
        self.sss_active = self.p.sss.as_ref().is_some_and(|s| s.active(wall_us));
        if self.sss_active {
            self.compensate_for_switch(t);
        } else if self.bufferbloat {
            self.cut_for_bufferbloat(t, avg);
        } else if self.load == Load::High {
            self.raise_for_load(t, avg);
        } else {
            self.decay_to_base(t);
        }
        self.rate_kbps = self.rate_kbps.clamp(self.p.min_kbps, self.p.max_kbps);
        self.rate_kbps
    }

    /// The answering pinger's baseline EWMA (`alpha` 0.001 upwards, 0.9
    /// downwards); returns the sample's delta to it. The next pinger answers next.
    fn update_baseline(&mut self, owd_us: i64) -> i64 {
        let b = &mut self.baselines_us[self.pinger];
        let a = if owd_us >= *b { self.p.alpha_baseline_increase } else { self.p.alpha_baseline_decrease };
        *b = (a * owd_us + (1_000_000 - a) * *b) / 1_000_000;
        let delta = owd_us - *b;
        self.pinger = (self.pinger + 1) % self.p.pingers;
        delta
    }

    /// The k-of-n window of delayed samples and the sum of the deltas.
    fn update_window(&mut self, delta_us: i64) {
        let thr = self.p.owd_delta_delay_thr_us + self.compensation_us();
        let i = self.idx;
        if self.delays[i] {
            self.sum_delays -= 1;
        }
        self.delays[i] = delta_us > thr;
        if self.delays[i] {
            self.sum_delays += 1;
        }
        self.sum_deltas_us += delta_us - self.deltas_us[i];
        self.deltas_us[i] = delta_us;
        self.idx = (i + 1) % self.p.detection_window;
    }

    /// A satellite switch window (`ul*sss`/`dl*sss`): upload to the minimum,
    /// download to at most the base rate; the decay timer restarts.
    fn compensate_for_switch(&mut self, t: i64) {
        let upload = self.p.sss.as_ref().is_some_and(|s| s.upload);
        self.rate_kbps = if upload { self.p.min_kbps } else { self.rate_kbps.min(self.p.base_kbps) };
        self.t_last_decay_us = t;
    }

    /// Bufferbloat: cut by 0.99 .. 0.75, linear in the average delta between
    /// the delay threshold and `avg_owd_delta_max_adjust_down_thr`.
    fn cut_for_bufferbloat(&mut self, t: i64, avg: i64) {
        if t <= self.t_last_bufferbloat_us + self.p.bufferbloat_refractory_us {
            return;
        }
        let c = self.compensation_us();
        let (thr, down_thr) = (self.p.owd_delta_delay_thr_us + c, self.p.avg_owd_delta_max_adjust_down_thr_us + c);
        let factor = if down_thr <= thr {
            1000
        } else if avg - thr > 0 {
            (1000 * (avg - thr) / (down_thr - thr)).min(1000)
        } else {
            0
        };
        let (lo, hi) = (self.p.min_adjust_down_bufferbloat, self.p.max_adjust_down_bufferbloat);
        let adjust = 1000 * lo - factor * (lo - hi);
        self.rate_kbps = self.rate_kbps * adjust / 1_000_000;
        self.t_last_bufferbloat_us = t;
        self.t_last_decay_us = t;
    }

    /// High load: raise by 1.00 .. 1.04, most when the average delta is at or
    /// below `avg_owd_delta_max_adjust_up_thr`, once per achieved-rate reading.
    fn raise_for_load(&mut self, t: i64, avg: i64) {
        if !(self.achieved_updated && t > self.t_last_bufferbloat_us + self.p.bufferbloat_refractory_us) {
            return;
        }
        let c = self.compensation_us();
        let (thr, up_thr) = (self.p.owd_delta_delay_thr_us + c, self.p.avg_owd_delta_max_adjust_up_thr_us + c);
        let factor = if thr <= up_thr {
            1000
        } else if thr - avg > 0 {
            (1000 * (thr - avg) / (thr - up_thr)).min(1000)
        } else {
            0
        };
        let (lo, hi) = (self.p.min_adjust_up_load_high, self.p.max_adjust_up_load_high);
        let adjust = 1000 * lo - factor * (lo - hi);
        self.rate_kbps = self.rate_kbps * adjust / 1_000_000;
        self.achieved_updated = false;
        self.t_last_decay_us = t;
    }

    /// Low or idle load: every decay period, one step back toward the base rate.
    fn decay_to_base(&mut self, t: i64) {
        if t <= self.t_last_decay_us + self.p.decay_refractory_us {
            return;
        }
        let base = self.p.base_kbps;
        if self.rate_kbps > base {
            self.rate_kbps = (self.rate_kbps * self.p.adjust_down_load_low / 1000).max(base);
        } else if self.rate_kbps < base {
            self.rate_kbps = (self.rate_kbps * self.p.adjust_up_load_low / 1000).min(base);
        }
        self.t_last_decay_us = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: Nanos = 1_000_000;

    fn ctl() -> Controller {
        Controller::new(Params::defaults(5000, 20000, 80000), 0).unwrap()
    }

    /// One pinger: every sample updates the same baseline (the arithmetic of one reflector's EWMA).
    fn one_pinger() -> Controller {
        Controller::new(Params { pingers: 1, ..Params::defaults(5000, 20000, 80000) }, 0).unwrap()
    }

    /// Feed `n` samples of `owd_us`, one every 50 ms from `t0`; returns the time after the last.
    fn feed(c: &mut Controller, t0: Nanos, n: usize, owd_us: i64) -> Nanos {
        let mut t = t0;
        for _ in 0..n {
            t += 50 * MS;
            c.on_owd_sample(t, owd_us);
        }
        t
    }

    #[test]
    fn the_baseline_falls_by_ninety_percent_of_the_gap_and_rises_by_a_thousandth() {
        let mut c = one_pinger();
        c.on_owd_sample(50 * MS, 20_000);
        // 0.9 * 20000 + 0.1 * 100000
        assert_eq!(c.baseline_us(), 28_000);
        c.on_owd_sample(100 * MS, 1_028_000);
        // (1000 * 1028000 + 999000 * 28000) / 10^6 = 1028 + 27972
        assert_eq!(c.baseline_us(), 29_000);
    }

    #[test]
    fn three_delayed_samples_of_six_cut_the_rate_by_the_delta_scaled_factor() {
        let mut c = one_pinger();
        // Three samples at 10 ms: the baseline falls 100000 -> 19000 -> 10900 -> 10090 µs
        // (deltas -9000, -900, -90).
        let t = feed(&mut c, 100 * MS, 3, 10_000);
        assert_eq!(c.baseline_us(), 10_090);
        // Samples 70 ms above: the baseline creeps up by a thousandth of the gap,
        // 10160, 10229, 10298 (deltas 69930, 69861, 69792); the third makes 3 of 6 delayed.
        let t = feed(&mut c, t, 2, 80_090);
        assert!(!c.bufferbloat);
        assert_eq!(c.rate_kbps(), 20_000);
        c.on_owd_sample(t + 50 * MS, 80_090);
        assert!(c.bufferbloat);
        assert_eq!(c.baseline_us(), 10_298);
        // avg = (-9990 + 209583) / 6 = 33265; compensation at 20 Mbit/s 12000 * 1000 / 20000 = 600 µs,
        // so thr 30600 and down_thr 60600; factor = 1000 * 2665 / 30000 = 88;
        // adjust = 990000 - 88 * (990 - 750) = 968880; rate = 20000 * 968880 / 10^6 = 19377.
        assert_eq!(c.rate_kbps(), 19_377);
    }

    #[test]
    fn each_of_the_six_pingers_keeps_its_own_baseline_updated_only_by_its_own_responses() {
        let mut c = ctl();
        // The first response (pinger 0) at 20 ms: its baseline 0.9 * 20000 + 0.1 * 100000 = 28000, delta -8000.
        c.on_owd_sample(50 * MS, 20_000);
        assert_eq!(c.baseline_us(), 28_000);
        // The second comes from pinger 1, whose baseline is still the initial 100 ms: 28000 again
        // (one shared baseline would be at 0.9 * 20000 + 0.1 * 28000 = 20800).
        c.on_owd_sample(100 * MS, 20_000);
        assert_eq!(c.baseline_us(), 28_000);
        assert_eq!(c.baselines_us, vec![28_000, 28_000, 100_000, 100_000, 100_000, 100_000]);
        // Pinger 0 again after all six: 20800.
        feed(&mut c, 100 * MS, 5, 20_000);
        assert_eq!(c.baseline_us(), 20_800);
    }

    #[test]
    fn a_standing_delay_raises_each_baseline_once_per_300_ms_not_once_per_sample() {
        // Baselines at 10 ms, then 3 s of samples 30 ms (60 samples, 10 per pinger): each baseline rises by a
        // thousandth of the gap 10 times, 10000 -> 10020 -> 10039 -> ... -> 10191 (one shared baseline, updated
        // by all 60: 11134).
        let mut c = ctl();
        c.baselines_us = vec![10_000; 6];
        let t = feed(&mut c, 0, 60, 30_000);
        assert_eq!(c.baselines_us, vec![10_191; 6]);
        // One sample of an empty queue pulls only its own pinger's baseline down (0.1 * 10191 = 1019); the next
        // pinger still measures 30 ms against 10191: delta 19790 (a shared baseline: 30000 - 1141 = 28859).
        c.on_owd_sample(t + 50 * MS, 0);
        assert_eq!(c.baseline_us(), 1_019);
        c.on_owd_sample(t + 100 * MS, 30_000);
        assert_eq!(c.baseline_us(), 10_210);
        assert_eq!(c.deltas_us[(c.idx + 5) % 6], 19_790);
    }

    /// A baseline of 10 ms and a full window of samples 100 ms above it (every one delayed).
    fn all_delayed_by_100_ms(c: &mut Controller) {
        c.baselines_us = vec![10_000; 6];
        c.deltas_us = vec![100_000; 6];
        c.sum_deltas_us = 600_000;
        c.delays = vec![true; 6];
        c.sum_delays = 6;
    }

    #[test]
    fn a_cut_at_the_maximum_average_delta_is_exactly_three_quarters() {
        let mut c = ctl();
        all_delayed_by_100_ms(&mut c);
        // A sample far above (avg stays >= 60.6 ms): factor 1000, rate 20000 * 0.75.
        c.on_owd_sample(400 * MS, 110_000);
        assert_eq!(c.rate_kbps(), 15_000);
        // Inside the 300-ms refractory period nothing more happens.
        c.on_owd_sample(700 * MS, 110_000);
        assert_eq!(c.rate_kbps(), 15_000);
        // Just after it, another cut.
        c.on_owd_sample(700 * MS + 1000, 110_000);
        assert_eq!(c.rate_kbps(), 11_250);
    }

    #[test]
    fn high_load_with_no_delay_raises_by_four_percent_once_per_reading() {
        let mut c = ctl();
        let t = feed(&mut c, 0, 7, 10_000); // t = 350 ms > 300 ms refractory from t0 = 0
        c.on_achieved_rate(16_000); // 80 % of 20000 > 75 %
        assert_eq!(c.load(), Load::High);
        c.on_owd_sample(t + 50 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 20_800);
        // No new reading: no new raise.
        c.on_owd_sample(t + 100 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 20_800);
        c.on_achieved_rate(20_000);
        c.on_owd_sample(t + 150 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 21_632);
    }

    #[test]
    fn load_is_high_above_75_percent_low_when_active_and_idle_below_2_mbit() {
        let mut c = ctl();
        c.on_achieved_rate(15_001); // 100 * 15001 / 20000 = 75: not above 75
        assert_eq!(c.load(), Load::Low);
        c.on_achieved_rate(15_200); // 76 %
        assert_eq!(c.load(), Load::High);
        c.on_achieved_rate(2_000);
        assert_eq!(c.load(), Load::Idle);
    }

    #[test]
    fn idle_the_rate_decays_one_percent_a_second_toward_base_and_stops_there() {
        let mut c = ctl();
        c.rate_kbps = 20_100;
        c.on_owd_sample(1000 * MS, 10_000); // not after 1 s yet (strictly greater)
        assert_eq!(c.rate_kbps(), 20_100);
        c.on_owd_sample(1001 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 20_000); // 20100 * 0.99 = 19899 -> held at base
        c.rate_kbps = 10_000;
        c.on_owd_sample(2002 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 10_100);
    }

    #[test]
    fn the_rate_never_falls_below_the_minimum_however_long_the_bufferbloat() {
        let mut c = Controller::new(Params::defaults(5000, 20000, 80000), 0).unwrap();
        let mut t = 0;
        c.on_owd_sample(t, 10_000);
        for _ in 0..2000 {
            t += 50 * MS;
            c.on_owd_sample(t, 500_000);
            assert!(c.rate_kbps() >= 5000);
        }
        assert_eq!(c.rate_kbps(), 5000);
    }

    fn with_sss(upload: bool) -> Controller {
        let p = Params { sss: Some(Sss::defaults(upload)), ..Params::defaults(5000, 20000, 80000) };
        Controller::new(p, 0).unwrap()
    }

    #[test]
    fn the_switch_windows_follow_the_scenarios_clock_when_the_links_clock_starts_earlier() {
        // The emulator's link clock starts 140 ms before the scenario's t = 0 (its set-up lead): the
        // window around 12 s past the minute is (11.7, 12.2) s of scenario time = (11.84, 12.34) s of link time.
        let origin = 140 * MS;
        let p = Params { sss: Some(Sss::defaults(false)), clock_origin_ns: origin, ..Params::defaults(5000, 20000, 80000) };
        let mut c = Controller::new(p, 0).unwrap();
        c.on_owd_sample(11_800 * MS, 10_000); // scenario 11.66 s: before the window (link time alone put it inside)
        assert!(!c.sss_active);
        c.on_owd_sample(12_300 * MS, 10_000); // scenario 12.16 s: inside (link time alone put it after)
        assert!(c.sss_active);
        // Before the scenario's start (the lead): the end of the previous minute, no window.
        c.on_owd_sample(50 * MS, 10_000);
        assert!(!c.sss_active);
    }

    #[test]
    fn sss_is_off_by_default_as_in_defaults_sh() {
        let mut c = ctl();
        assert_eq!(c.p.sss, None);
        c.rate_kbps = 60_000;
        // 12 s past the minute, a switch time: nothing happens without sss (no decay: loaded at 80 %).
        c.on_achieved_rate(48_000);
        c.on_owd_sample(12_000 * MS, 10_000);
        assert!(!c.sss_active);
        assert_eq!(c.rate_kbps(), 62_400); // the high-load raise, 60000 * 1040 / 1000
    }

    #[test]
    fn the_switch_window_is_strictly_inside_300_ms_before_to_200_ms_after_each_switch_in_run_time_mod_60_s() {
        let s = Sss::defaults(false);
        // 12 s - 300 ms = 11.7 s is not inside (strict), one µs later is.
        assert!(!s.active(11_700_000));
        assert!(s.active(11_700_001));
        assert!(s.active(12_199_999));
        assert!(!s.active(12_200_000));
        // Every minute again: 71.9 s of run time is 11.9 s past the minute; 57.1 s and 117.1 s too.
        assert!(s.active(71_900_000));
        assert!(s.active(57_100_000) && s.active(117_100_000));
        assert!(!s.active(20_000_000));
        // No wrap at the minute: a switch at 0.1 s opens at 0 s, not at 59.8 s.
        let early = Sss { times_us: vec![100_000], ..Sss::defaults(false) };
        assert!(early.active(0) && early.active(299_999));
        assert!(!early.active(59_900_000));
    }

    #[test]
    fn in_a_switch_window_download_falls_to_base_and_upload_to_min_over_a_raise() {
        // Download above base (60 Mbit/s, base 20): to base; loaded, so the raise is skipped.
        let mut c = with_sss(false);
        c.rate_kbps = 60_000;
        c.on_achieved_rate(48_000);
        c.on_owd_sample(11_750 * MS, 10_000);
        assert!(c.sss_active);
        assert_eq!(c.rate_kbps(), 20_000);
        // Download below base stays where it is.
        let mut c = with_sss(false);
        c.rate_kbps = 15_000;
        c.on_achieved_rate(12_000);
        c.on_owd_sample(12_000 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 15_000);
        // Upload goes to min whatever the rate.
        let mut c = with_sss(true);
        c.rate_kbps = 15_000;
        c.on_owd_sample(12_000 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 5_000);
    }

    #[test]
    fn a_switch_window_skips_the_bufferbloat_cut_and_restarts_the_decay_timer_but_not_the_refractory_period() {
        let mut c = with_sss(false);
        c.rate_kbps = 30_000;
        all_delayed_by_100_ms(&mut c);
        // Bufferbloat inside the window: no cut by 0.75, the rate goes to base (20000), decay timer at 11.8 s.
        c.on_owd_sample(11_800 * MS, 110_000);
        assert!(c.bufferbloat && c.sss_active);
        assert_eq!(c.rate_kbps(), 20_000);
        assert_eq!(c.t_last_decay_us, 11_800_000);
        assert_eq!(c.t_last_bufferbloat_us, 0);
        // First sample after the window (12.25 s): the refractory period ran from t0, so the cut comes at once:
        // factor 1000 (avg far above 60 ms + 600 µs), 20000 * 0.75.
        c.on_owd_sample(12_250 * MS, 110_000);
        assert!(!c.sss_active);
        assert_eq!(c.rate_kbps(), 15_000);
    }

    #[test]
    fn after_a_window_an_idle_link_waits_a_full_decay_period_from_its_last_sample() {
        let mut c = with_sss(true);
        c.rate_kbps = 20_000;
        c.on_owd_sample(12_150 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 5_000);
        // Idle: decay toward base (20000) only after 1 s from the window's last sample (12.15 s).
        c.on_owd_sample(13_150 * MS, 10_000);
        assert_eq!(c.rate_kbps(), 5_000);
        c.on_owd_sample(13_150 * MS + 1000, 10_000);
        assert_eq!(c.rate_kbps(), 5_050); // 5000 * 1010 / 1000
    }

    #[test]
    fn sss_settings_out_of_range_are_refused_naming_the_key() {
        let bad = |s: Sss| Controller::new(Params { sss: Some(s), ..Params::defaults(5000, 20000, 80000) }, 0).unwrap_err();
        assert_eq!(bad(Sss { pre_us: -1, ..Sss::defaults(false) }), "sss.pre: must not be negative, got -1 µs");
        assert_eq!(bad(Sss { post_us: -5, ..Sss::defaults(false) }), "sss.post: must not be negative, got -5 µs");
        assert_eq!(
            bad(Sss { times_us: vec![12_000_000, 61_000_000], ..Sss::defaults(false) }),
            "sss.times.1: must lie within 0-60 s past the minute, got 61000000 µs"
        );
        assert!(bad(Sss { times_us: vec![-1], ..Sss::defaults(false) }).starts_with("sss.times.0:"));
    }

    #[test]
    fn crossed_bounds_and_a_zero_ping_interval_are_refused_naming_the_key() {
        let e = Controller::new(Params::defaults(30000, 20000, 10000), 0).unwrap_err();
        assert!(e.starts_with("min (30000 kbit/s) must not exceed max"), "{e}");
        let e = Controller::new(Params::defaults(5000, 90000, 80000), 0).unwrap_err();
        assert!(e.starts_with("base:"), "{e}");
        let p = Params { ping_interval_ns: 0, ..Params::defaults(5000, 20000, 80000) };
        assert_eq!(Controller::new(p, 0).unwrap_err(), "ping_interval: must be > 0");
        let e = Controller::new(Params::defaults(1000, 20000, 80000), 0).unwrap_err();
        assert!(e.starts_with("min:"), "{e}");
    }
}
