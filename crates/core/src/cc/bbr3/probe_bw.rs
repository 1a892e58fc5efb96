//! BBRv3's PROBE_BW state machine: DOWN → CRUISE → REFILL → UP → DOWN, and
//! when to probe (2-3 s of wall clock, or sooner for Reno coexistence: after
//! min(63, BDP) rounds). Kernel functions of the same names in the v3 `tcp_bbr.c`.

use super::*;

impl Bbr3 {
    /// `bbr_is_probing_bandwidth`: STARTUP, REFILL and UP.
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.core.mode == Mode::Startup
            || (self.core.mode == Mode::ProbeBw && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }

    /// `bbr_has_elapsed_in_phase`: `interval_us` since the phase started.
    fn has_elapsed_in_phase(&self, c: &ConnView, interval_us: u32) -> bool {
        to_us(c.now) as i64 - (self.core.cycle_mstamp + interval_us as u64) as i64 > 0
    }

    /// `bbr_is_reno_coexistence_probe_time`: a Reno flow with our BDP would
    /// probe (lose a packet) every BDP rounds; probe no less often, up to 63.
    fn is_reno_coexistence_probe_time(&self, c: &ConnView, w: &Window) -> bool {
        let rounds = BW_PROBE_MAX_ROUNDS.min(self.target_inflight(c, w));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_pick_probe_wait`: 0..1 random rounds, 2..3 s random wall clock.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.gen_range(0..BW_PROBE_RAND_ROUNDS);
        self.probe_wait_us = BW_PROBE_BASE_US + self.rng.gen_range(0..BW_PROBE_RAND_US);
    }

    /// `bbr_start_bw_probe_refill`: reset the lower bounds, send at bw for a round.
    pub(super) fn start_bw_probe_refill(&mut self, c: &ConnView, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.core.next_rtt_delivered = c.delivered;
        self.cycle_idx = Phase::Refill;
    }

    /// `bbr_start_bw_probe_up`.
    pub(super) fn start_bw_probe_up(&mut self, c: &ConnView, ctx: &Ctx, w: &Window) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.core.next_rtt_delivered = c.delivered;
        self.core.cycle_mstamp = to_us(c.now);
        self.reset_full_bw();
        self.full_bw = ctx.sample_bw;
        self.cycle_idx = Phase::Up;
        self.raise_inflight_hi_slope(w);
    }

    /// `bbr_start_bw_probe_down`: start the wall clock and draw the next probe time.
    pub(super) fn start_bw_probe_down(&mut self, c: &ConnView) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET; // inflight_hi stops growing
        self.pick_probe_wait();
        self.core.cycle_mstamp = to_us(c.now);
        self.ack_phase = AckPhase::ProbeStopping;
        self.core.next_rtt_delivered = c.delivered;
        self.cycle_idx = Phase::Down;
    }

    /// `bbr_start_bw_probe_cruise`.
    pub(super) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle_idx = Phase::Cruise;
    }

    /// `bbr_check_time_to_probe_bw`.
    fn check_time_to_probe_bw(&mut self, c: &ConnView, w: &Window) -> bool {
        // ECN marks but no loss in this cycle: reprobe quickly once they stop.
        if self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && c.ca_state == CaState::Open {
            let v = ((self.inflight_hi as u64 * ECN_REPROBE_GAIN as u64) >> BBR_SCALE).max(1);
            let n = 63 - v.leading_zeros(); // ilog2
            self.start_bw_probe_refill(c, n);
            return true;
        }
        if self.has_elapsed_in_phase(c, self.probe_wait_us) || self.is_reno_coexistence_probe_time(c, w) {
            self.start_bw_probe_refill(c, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`: inflight below both the headroom and the BDP.
    fn check_time_to_cruise(&self, c: &ConnView, w: &Window, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(c, w, bw as u64, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`.
    pub(super) fn update_cycle_phase(&mut self, c: &ConnView, rs: &RateSample, ctx: &Ctx, w: &Window) {
        if !self.core.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(c, rs, ctx, w) {
            return;
        }
        if self.core.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(c, w, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(c, w);
            }
            Phase::Refill => {
                if self.core.round_start {
                    // From now on the samples reflect REFILL's (maybe too big) flight.
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(c, ctx, w);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if c.is_cwnd_limited && w.cwnd >= self.inflight_hi {
                    // inflight_hi is what limits growth: not a plateau.
                    self.reset_full_bw();
                    self.full_bw = ctx.sample_bw;
                } else if self.full_bw_now {
                    done = true; // bw plateaued: pipe full
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(c);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(c, w) {
                    return;
                }
                if self.check_time_to_cruise(c, w, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}
