//! Small helpers shared by the flow-queueing AQMs (fq_codel, fq_pie) and
//! the ECN-marking AQMs (codel, red, pie): flow-to-bucket hashing, ECN CE
//! marking, and the kernel's memory accounting of a packet (`truesize`).
//!
//! # Flow hashing
//!
//! Linux (`sch_fq_codel.c` / `sch_fq_pie.c`, v6.x) classifies a packet with
//! `reciprocal_scale(skb_get_hash(skb), flows_cnt)`: `skb_get_hash` is a
//! jhash of the flow keys (5-tuple) seeded with a per-boot random `hashrnd`,
//! and `reciprocal_scale(h, n) = (h * n) >> 32` maps the 32-bit hash into
//! `n` buckets. Different flows can therefore share a bucket (and a queue,
//! and a CoDel/PIE state), with the birthday-paradox odds of the kernel.
//!
//! We have no 5-tuple, only `meta.flow`, so [`flow_hash32`] mixes that 64-bit
//! key with a 32-bit seed (a splitmix64/murmur3-style finaliser, our own
//! code, not jhash: the numbers differ from the kernel's, the statistics —
//! uniform buckets, independent per seed — do not). The seed plays
//! `hashrnd`: [`BucketHasher`] draws it from the link's seeded RNG on the
//! first packet, so a run is reproducible for a scenario seed and a different
//! seed perturbs which flows collide, as a reboot does in Linux.

use super::{Ecn, PacketMeta};
use crate::rng::{Rng, RngExt};

/// 32-bit hash of a flow key under `seed` (stands in for `skb_get_hash`).
#[inline]
pub fn flow_hash32(flow: u64, seed: u32) -> u32 {
    let mut z = flow ^ (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    z = (z ^ (z >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    z ^= z >> 33;
    (z >> 32) as u32
}

/// Linux `reciprocal_scale(val, ep_ro)`: `val` scaled into `[0, ep_ro)`.
#[inline]
pub fn reciprocal_scale(val: u32, ep_ro: u32) -> u32 {
    ((val as u64 * ep_ro as u64) >> 32) as u32
}

/// Maps flows to one of `n` buckets, with a seed drawn lazily from the
/// caller's RNG (or fixed by [`BucketHasher::with_seed`]).
#[derive(Debug, Clone)]
pub struct BucketHasher {
    n: u32,
    seed: Option<u32>,
}

impl BucketHasher {
    pub fn new(n: u32) -> Self {
        BucketHasher { n, seed: None }
    }
    /// A fixed seed (tests, or to make two qdiscs hash alike).
    pub fn with_seed(n: u32, seed: u32) -> Self {
        BucketHasher { n, seed: Some(seed) }
    }
    /// The bucket of `flow`, drawing the seed from `rng` on first use.
    #[inline]
    pub fn bucket(&mut self, flow: u64, rng: &mut Rng) -> u32 {
        let seed = *self.seed.get_or_insert_with(|| rng.gen::<u32>());
        reciprocal_scale(flow_hash32(flow, seed), self.n)
    }
    /// The bucket of `flow` once the seed is known (None before the first packet).
    pub fn peek(&self, flow: u64) -> Option<u32> {
        self.seed.map(|s| reciprocal_scale(flow_hash32(flow, s), self.n))
    }
}

/// Linux `INET_ECN_set_ce`: mark an ECN-capable packet CE. Returns true for
/// ECT(0)/ECT(1) (now CE) and for a packet already CE (the kernel counts it as
/// marked too); false for Not-ECT, which the caller must drop instead.
#[inline]
pub fn inet_ecn_set_ce(meta: &mut PacketMeta) -> bool {
    match meta.ecn {
        Ecn::NotEct => false,
        Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce => {
            meta.ecn = Ecn::Ce;
            true
        }
    }
}

/// The kernel's memory cost of a packet (`skb->truesize`) as fq_codel and
/// fq_pie count it against `memory_limit`. Model: the linear data buffer is
/// kmalloc'ed as `len + NET_SKB_PAD (64) + sizeof(skb_shared_info) (320)`
/// rounded up to a power of two (kmalloc size classes), plus
/// `sizeof(struct sk_buff)` rounded to a cache line (256). A 1500-byte
/// packet costs 2304 bytes, a 52-byte ACK 768: typical of x86-64 v6.x with
/// a TUN/veth source. Real drivers differ (page frags, GRO); an estimate.
#[inline]
pub fn truesize(len: u32) -> u32 {
    const NET_SKB_PAD: u32 = 64;
    const SHINFO: u32 = 320;
    const SKB_STRUCT: u32 = 256;
    (len + NET_SKB_PAD + SHINFO).next_power_of_two() + SKB_STRUCT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocal_scale_maps_the_full_u32_range_onto_n_buckets() {
        assert_eq!(reciprocal_scale(0, 1024), 0);
        assert_eq!(reciprocal_scale(u32::MAX, 1024), 1023);
        assert_eq!(reciprocal_scale(1 << 31, 1024), 512);
    }

    #[test]
    fn a_different_seed_moves_flows_to_different_buckets() {
        let a: Vec<u32> = (0..64).map(|f| reciprocal_scale(flow_hash32(f, 1), 1024)).collect();
        let b: Vec<u32> = (0..64).map(|f| reciprocal_scale(flow_hash32(f, 2), 1024)).collect();
        assert_ne!(a, b);
        assert_eq!(a, (0..64).map(|f| reciprocal_scale(flow_hash32(f, 1), 1024)).collect::<Vec<_>>());
    }

    #[test]
    fn ten_thousand_flows_fill_1024_buckets_evenly() {
        let mut n = [0u32; 1024];
        for f in 0..10_240u64 {
            n[reciprocal_scale(flow_hash32(f, 7), 1024) as usize] += 1;
        }
        // Mean 10 per bucket; a uniform hash keeps every bucket within 0..=30.
        assert!(n.iter().all(|&c| c <= 30), "max {}", n.iter().max().unwrap());
        assert!(n.iter().filter(|&&c| c == 0).count() < 5);
    }

    #[test]
    fn ce_marking_refuses_not_ect_and_marks_ect() {
        let mut m = PacketMeta { ecn: Ecn::NotEct, ..Default::default() };
        assert!(!inet_ecn_set_ce(&mut m));
        assert_eq!(m.ecn, Ecn::NotEct);
        m.ecn = Ecn::Ect1;
        assert!(inet_ecn_set_ce(&mut m));
        assert_eq!(m.ecn, Ecn::Ce);
    }

    #[test]
    fn truesize_of_a_full_packet_is_2304_bytes() {
        assert_eq!(truesize(1500), 2304);
        assert_eq!(truesize(52), 768);
    }
}
