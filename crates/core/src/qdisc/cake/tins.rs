//! CAKE's DiffServ tins: DSCP → tin tables, per-tin shaper rates, DRR
//! weights and COBALT parameters.
//!
//! Source: Linux `net/sched/sch_cake.c` (v6.x): the `diffserv3`,
//! `diffserv4`, `diffserv8`, `precedence` and `besteffort` tables,
//! `cake_config_*`, `cake_set_rate`; tc-cake(8).
//!
//! Each tin has a *threshold rate*: while it sends below it, the tin has
//! priority (higher tins first); above it, it competes by its weight
//! (`tin_quantum`) with the others. Rates here are bytes/s, as the kernel
//! keeps them (`TCA_CAKE_BASE_RATE64` is bytes/s).
//!
//! | mode | tins (index: name, DSCPs, threshold, weight) |
//! |---|---|
//! | besteffort | 0: all, 100%, 65535 |
//! | diffserv3 (default) | 0: best effort 100% 1024; 1: bulk (CS1) 1/16, 64; 2: voice (CS7, CS6, EF, VA, TOS4) 1/4, 256 |
//! | diffserv4 | 0: best effort 100% 1024; 1: bulk (CS1) 1/16, 64; 2: video (AF4x, AF3x, CS3, AF2x, TOS4, CS2, TOS1) 1/2, 512; 3: voice (CS7, CS6, EF, VA, CS5, CS4) 1/4, 256 |
//! | diffserv8, precedence | 8 tins, each 7/8 of the previous in rate and weight, from 100% and 256 |

use super::cobalt::CobaltParams;
use crate::time::NS_PER_SEC;

/// Tin of each of the 64 DSCPs.
pub const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2, 5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2, 6, 2, 3, 2, 3, 2,
    3, 2, 6, 2, 2, 2, 6, 2, 6, 2, 7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2,
];
pub const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 3, 0, 2, 0, 2, 0,
    2, 0, 3, 0, 0, 0, 3, 0, 3, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
];
pub const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
];
/// `precedence`: the top three DSCP bits.
pub fn precedence(dscp: u8) -> u8 {
    (dscp & 63) >> 3
}

/// `CAKE_DIFFSERV_*`, in the kernel's numbering (the scenario's choice index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TinMode {
    Diffserv3 = 0,
    Diffserv4 = 1,
    Diffserv8 = 2,
    Besteffort = 3,
    Precedence = 4,
}

pub const TIN_MODE_NAMES: &[&str] = &["diffserv3", "diffserv4", "diffserv8", "besteffort", "precedence"];

impl TinMode {
    pub fn from_index(i: usize) -> Option<Self> {
        [TinMode::Diffserv3, TinMode::Diffserv4, TinMode::Diffserv8, TinMode::Besteffort, TinMode::Precedence]
            .get(i)
            .copied()
    }

    /// The tin a packet with `dscp` goes to.
    pub fn tin_of(self, dscp: u8) -> usize {
        let d = (dscp & 63) as usize;
        (match self {
            TinMode::Besteffort => 0,
            TinMode::Diffserv3 => DIFFSERV3[d],
            TinMode::Diffserv4 => DIFFSERV4[d],
            TinMode::Diffserv8 => DIFFSERV8[d],
            TinMode::Precedence => precedence(d as u8),
        }) as usize
    }
}

/// One tin's configuration (the static part of `struct cake_tin_data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TinCfg {
    /// Threshold rate, bytes/s (0 = unlimited).
    pub rate_bps: u64,
    /// ns per byte, scaled by 2^rate_shft (0 = unlimited).
    pub rate_ns: u64,
    pub rate_shft: u32,
    /// Flow DRR quantum, bytes.
    pub flow_quantum: u16,
    /// Tin DRR weight (unlimited mode only).
    pub tin_quantum: u16,
    pub cparams: CobaltParams,
}

/// `cake_set_rate`: shaper arithmetic and auto-tuned COBALT parameters for a
/// tin of `rate` bytes/s, MTU `mtu` bytes, user `target` and `rtt` (interval) in ns.
pub fn set_rate(rate: u64, mtu: u32, target_ns: u64, rtt_ns: u64) -> TinCfg {
    // Convert byte rate into time-per-byte so it always unwedges in
    // reasonable time; 64 B/s is the floor.
    const MIN_RATE: u64 = 64;
    let mut t = TinCfg { flow_quantum: 1514, ..Default::default() };
    if rate > 0 {
        t.flow_quantum = (rate >> 12).clamp(300, 1514) as u16;
        let mut shft = 34u32;
        let mut ns = (NS_PER_SEC << shft) / rate.max(MIN_RATE);
        while ns >> 34 != 0 {
            ns >>= 1;
            shft -= 1;
        }
        t.rate_ns = ns;
        t.rate_shft = shft;
    }
    t.rate_bps = rate;
    let byte_target_ns = (mtu as u64 * t.rate_ns) >> t.rate_shft;
    let target = (byte_target_ns * 3 / 2).max(target_ns);
    t.cparams = CobaltParams {
        target,
        interval: (rtt_ns + target - target_ns).max(target * 2),
        mtu_time: byte_target_ns,
        p_inc: 1 << 24, // 1/256
        p_dec: 1 << 20, // 1/4096
    };
    t
}

/// `cake_config_*`: the tins of `mode` for a base rate of `rate` bytes/s.
pub fn configure(mode: TinMode, rate: u64, mtu: u32, target_ns: u64, rtt_ns: u64) -> Vec<TinCfg> {
    let tin = |r: u64, q: u16| TinCfg { tin_quantum: q, ..set_rate(r, mtu, target_ns, rtt_ns) };
    match mode {
        TinMode::Besteffort => vec![tin(rate, 65535)],
        TinMode::Diffserv3 => vec![tin(rate, 1024), tin(rate >> 4, 1024 >> 4), tin(rate >> 2, 1024 >> 2)],
        TinMode::Diffserv4 => vec![
            tin(rate, 1024),
            tin(rate >> 4, 1024 >> 4),
            tin(rate >> 1, 1024 >> 1),
            tin(rate >> 2, 1024 >> 2),
        ],
        TinMode::Diffserv8 | TinMode::Precedence => {
            let (mut r, mut q) = (rate, 256u32);
            (0..8)
                .map(|_| {
                    let t = tin(r, q.max(1) as u16);
                    r = (r * 7) >> 3;
                    q = (q * 7) >> 3;
                    t
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    #[test]
    fn dscp_tables_put_ef_in_voice_and_cs1_in_bulk() {
        // EF = 46, CS1 = 8, CS0 = 0, AF41 = 34.
        assert_eq!(TinMode::Diffserv3.tin_of(46), 2);
        assert_eq!(TinMode::Diffserv3.tin_of(8), 1);
        assert_eq!(TinMode::Diffserv3.tin_of(34), 0);
        assert_eq!(TinMode::Diffserv4.tin_of(46), 3);
        assert_eq!(TinMode::Diffserv4.tin_of(34), 2);
        assert_eq!(TinMode::Diffserv4.tin_of(0), 0);
        assert_eq!(TinMode::Besteffort.tin_of(46), 0);
    }

    #[test]
    fn set_rate_autotunes_target_and_interval_at_low_rates() {
        // 10 Mbit/s = 1.25e6 B/s: 800 ns/B, an MTU of 1514 B takes 1.2112 ms.
        let t = set_rate(1_250_000, 1514, 5 * NS_PER_MS, 100 * NS_PER_MS);
        assert_eq!(t.flow_quantum, 305);
        assert_eq!(t.cparams.mtu_time, 1_211_200);
        assert_eq!(t.cparams.target, 5 * NS_PER_MS);
        assert_eq!(t.cparams.interval, 100 * NS_PER_MS);
        // 1 Mbit/s: MTU time 12.1 ms, so target = 1.5 MTU = 18.2 ms and the interval grows alike.
        let t = set_rate(125_000, 1514, 5 * NS_PER_MS, 100 * NS_PER_MS);
        assert_eq!(t.cparams.target, 18_168_000);
        assert_eq!(t.cparams.interval, 113_168_000);
        assert_eq!(t.flow_quantum, 300);
    }

    #[test]
    fn diffserv4_thresholds_are_full_sixteenth_half_and_quarter() {
        let t = configure(TinMode::Diffserv4, 1_600_000, 1514, 5 * NS_PER_MS, 100 * NS_PER_MS);
        let rates: Vec<u64> = t.iter().map(|t| t.rate_bps).collect();
        assert_eq!(rates, vec![1_600_000, 100_000, 800_000, 400_000]);
        let w: Vec<u16> = t.iter().map(|t| t.tin_quantum).collect();
        assert_eq!(w, vec![1024, 64, 512, 256]);
    }
}
