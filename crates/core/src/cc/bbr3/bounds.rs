//! BBRv3's model bounds: the short-term lower bounds `bw_lo`/`inflight_lo`
//! (cut by loss and ECN while not probing) and the long-term upper bound
//! `inflight_hi` (set by loss/ECN while probing, raised by probing), and the
//! congestion signals they are computed from. Kernel functions of the same
//! names in the v3 `tcp_bbr.c`.

use super::*;

impl Bbr3 {
    /// `bbr_update_latest_delivery_signals`: max rate and volume delivered
    /// this (loss) round; detect the start of a loss round.
    pub(super) fn update_latest_delivery_signals(&mut self, c: &ConnView, rs: &RateSample, ctx: &Ctx) {
        self.loss_round_start = false;
        if rs.interval / NS_PER_US as i64 <= 0 || rs.acked_sacked == 0 {
            return; // not a valid observation
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0).min(u32::MAX as i64) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = c.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals`: once per loss round, restart the filters.
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.loss_round_start {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.max(0).min(u32::MAX as i64) as u32;
        }
    }

    /// `bbr_update_congestion_signals`: feed bw_hi; per loss round, adapt the lower bounds.
    pub(super) fn update_congestion_signals(&mut self, rs: &RateSample, ctx: &Ctx, w: &Window) {
        if rs.interval / NS_PER_US as i64 <= 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(w);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_take_max_bw_sample`: into the current cycle's slot.
    pub(super) fn take_max_bw_sample(&mut self, bw: u32) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    /// `bbr_advance_max_bw_filter`: keep the max of the last 1-2 cycles.
    pub(super) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return; // no samples in this cycle: keep the old one
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// `bbr_ecn_cut`: 1 - alpha · ecn_factor, in 1/256.
    pub(super) fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * ECN_FACTOR) >> BBR_SCALE)
    }

    /// `bbr_init_lower_bounds`: start from max_bw and cwnd.
    fn init_lower_bounds(&mut self, init_bw: bool, w: &Window) {
        if init_bw && self.bw_lo == UNSET {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = w.cwnd;
        }
    }

    /// `bbr_adapt_lower_bounds`: once per round with loss/ECN, outside probing,
    /// cut bw_lo/inflight_lo by beta (not below this round's delivery) and
    /// inflight_lo by alpha · ecn_factor.
    pub(super) fn adapt_lower_bounds(&mut self, w: &Window) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET;
        if self.ecn_in_round {
            self.init_lower_bounds(false, w);
            ecn_inflight_lo = ((self.inflight_lo as u64 * self.ecn_cut() as u64) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(true, w);
            let loss_cut = (BBR_UNIT - BETA) as u64;
            self.bw_lo = self.bw_latest.max(((self.bw_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
            self.inflight_lo = self.inflight_latest.max(((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET;
        self.inflight_lo = UNSET;
    }

    /// `bbr_reset_congestion_signals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_is_inflight_too_high`: > 2 % of the flight lost, or > 50 % CE.
    pub(super) fn is_inflight_too_high(&self, lost: u32, tx_in_flight: u32, rs: &RateSample) -> bool {
        if lost > 0 && tx_in_flight > 0 {
            let loss_thresh = ((tx_in_flight as u64 * LOSS_THRESH as u64) >> BBR_SCALE) as u32;
            if lost > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible {
            let ecn_thresh = (rs.delivered * ECN_THRESH as i64) >> BBR_SCALE;
            if rs.delivered_ce > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb`: the flight at which the loss rate
    /// crossed 2 %, solving (lost_prev + x) / (inflight_prev + x) = thresh.
    pub(super) fn inflight_hi_from_lost_skb(&self, lost: u32, tx_in_flight: u32, pcount: u32) -> u32 {
        let inflight_prev = tx_in_flight as i64 - pcount as i64;
        let lost_prev = lost as i64 - pcount as i64;
        if inflight_prev < 0 || lost_prev < 0 {
            return UNSET;
        }
        let loss_budget = ((inflight_prev as u64 * LOSS_THRESH as u64) + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev as u64 >= loss_budget {
            0 // earlier losses already crossed the threshold
        } else {
            ((loss_budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT - LOSS_THRESH) as u64
        };
        (inflight_prev as u64 + lost_prefix).min(u32::MAX as u64) as u32
    }

    /// `bbr_inflight_with_headroom`: 15 % below inflight_hi, at least 4.
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = (((self.inflight_hi as u64 * INFLIGHT_HEADROOM as u64) >> BBR_SCALE) as u32).max(1);
        (self.inflight_hi.saturating_sub(headroom)).max(CWND_MIN_TARGET)
    }

    /// `bbr_bound_cwnd_for_inflight_model`: probing phases may use all of
    /// inflight_hi; cruising and PROBE_RTT keep the headroom; inflight_lo caps all.
    pub(super) fn bound_cwnd_for_inflight_model(&mut self, w: &mut Window) {
        let mut cap = UNSET;
        if self.core.mode == Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.core.mode == Mode::ProbeRtt || (self.core.mode == Mode::ProbeBw && self.cycle_idx == Phase::Cruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(CWND_MIN_TARGET);
        w.cwnd = w.cwnd.min(cap);
    }

    /// `bbr_target_inflight`: the BDP, unless congestion cut cwnd.
    pub(super) fn target_inflight(&self, c: &ConnView, w: &Window) -> u32 {
        let bdp = self.inflight(c, w, self.bbr_bw() as u64, BBR_UNIT);
        bdp.min(w.cwnd)
    }

    /// `bbr_handle_inflight_too_high`: once per probe, inflight_hi = the
    /// flight that was too much (at least 70 % of the target); PROBE_UP ends.
    pub(super) fn handle_inflight_too_high(&mut self, c: &ConnView, w: &Window, app_limited: bool, tx_in_flight: u32) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false; // react once per probe
        if !app_limited {
            let floor = ((self.target_inflight(c, w) as u64 * (BBR_UNIT - BETA) as u64) >> BBR_SCALE) as u32;
            self.inflight_hi = tx_in_flight.max(floor);
        }
        if self.core.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(c);
        }
    }

    /// `bbr_raise_inflight_hi_slope`: each PROBE_UP round doubles the growth.
    pub(super) fn raise_inflight_hi_slope(&mut self, w: &Window) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (w.cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`: +1 per bw_probe_up_cnt packets acked
    /// while cwnd-limited at inflight_hi.
    fn probe_inflight_hi_upward(&mut self, c: &ConnView, rs: &RateSample, w: &Window) {
        if !c.is_cwnd_limited || w.cwnd < self.inflight_hi {
            return; // not using inflight_hi fully: do not grow it
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.core.round_start {
            self.raise_inflight_hi_slope(w);
        }
    }

    /// `bbr_adapt_upper_bounds`: react to too-high probes, raise inflight_hi
    /// when a higher flight proved safe. Returns true if it changed the phase.
    pub(super) fn adapt_upper_bounds(&mut self, c: &ConnView, rs: &RateSample, ctx: &Ctx, w: &Window) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.core.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.core.round_start {
            // End of the samples from probing: forget the previous cycle's bw.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.core.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // A probe that reached inflight_hi without trouble: probe again at once.
            if self.core.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(c, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(ctx.lost, ctx.tx_in_flight, rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(c, w, rs.is_app_limited, ctx.tx_in_flight);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false; // no excess-queue signal yet
            }
            if ctx.tx_in_flight > self.inflight_hi {
                self.inflight_hi = ctx.tx_in_flight; // a higher flight was safe
            }
            if self.core.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(c, rs, w);
            }
        }
        false
    }
}
