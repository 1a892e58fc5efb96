//! The one random-number generator type of bloatlab. Always seeded by the caller
//! (scenario seed mixed with a stream id), never from the OS, so a run is a
//! pure function of its scenario and seed.

use rand::SeedableRng;
pub use rand::Rng as RngExt;

/// xoshiro256++: fast, small state, good statistical quality; not cryptographic.
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

/// Stream ids (mixed with the scenario seed) of a bottleneck direction d
/// (0 down, 1 up): its random loss draws from `LOSS_STREAM + d`, its qdisc
/// (PIE's and RED's drops, CAKE's and fq_codel's hash perturbation) from
/// `QDISC_STREAM + d`. Both engines use them, so one seed loses the same
/// packets on both while the packets arrive alike: packet i of a direction
/// is lost in the simulator iff it is in the emulator (a run's draws are
/// one realisation of the loss process; comparing the engines on different
/// draws compares two realisations, which at a cliff can differ by 4x:
/// docs/fidelity.md, "nsperf's random_loss").
pub const LOSS_STREAM: u64 = 0x4c4f_5353_0000; // "LOSS"
pub const QDISC_STREAM: u64 = 0x5144_4953_0000; // "QDIS"
/// The simulator's receiving-host timing noise (`rx_jitter`: crates/sim/src/world.rs), flow i's draws from
/// `RX_STREAM + i`; the emulator has none to draw.
pub const RX_STREAM: u64 = 0x5258_4a49_0000; // "RXJI"

/// An RNG for stream `stream` of a run seeded with `seed`: independent streams
/// (one per link direction, per flow, ...) so adding a flow does not change the
/// loss pattern another link sees.
pub fn stream(seed: u64, stream: u64) -> Rng {
    // splitmix64 of (seed, stream) to spread nearby seeds apart.
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    Rng::seed_from_u64(z)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn same_seed_and_stream_give_the_same_sequence() {
        let a: Vec<u64> = (0..4).map(|_| 0).scan(stream(7, 1), |r, _| Some(r.gen::<u64>())).collect();
        let b: Vec<u64> = (0..4).map(|_| 0).scan(stream(7, 1), |r, _| Some(r.gen::<u64>())).collect();
        let c: Vec<u64> = (0..4).map(|_| 0).scan(stream(7, 2), |r, _| Some(r.gen::<u64>())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
