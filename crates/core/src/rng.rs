//! The one random-number generator type of bloatlab. Always seeded by the caller
//! (scenario seed mixed with a stream id), never from the OS, so a run is a
//! pure function of its scenario and seed.

use rand::SeedableRng;
pub use rand::Rng as RngExt;

/// xoshiro256++: fast, small state, good statistical quality; not cryptographic.
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

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
