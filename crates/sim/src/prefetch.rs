//! A hint to the CPU to bring a cache line in ahead of its use: no effect on
//! any value, only on when memory is waited for.
//!
//! Used where the engine walks every flow in a known order (the sampler,
//! `World::sample`): with a thousand flows each flow's state is a handful of
//! cold cache lines by the time it is read again, and the walk's loads only
//! overlap as far as the CPU's own window reaches (a `Box<dyn>` control's
//! label is two dependent loads). Prefetching a few flows ahead lets those
//! misses overlap with the work on the flows before.

/// Prefetch the cache line holding `*p` into every cache level (`prefetcht0`
/// on x86-64; nothing elsewhere). Never faults, whatever `p` points to.
#[inline(always)]
pub fn line<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program can observe and cannot fault, even for an invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const u8 as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
