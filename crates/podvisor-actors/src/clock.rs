//! A cheap monotonic clock for timestamping every queued message. The kernel's coarse
//! monotonic clock is read from a cached value (a few ns, against ~30 ns for a precise
//! read on these machines) and its resolution of a jiffy (1–4 ms) is plenty for "how long
//! has the oldest message waited". Handler timing uses the precise clock.

/// Milliseconds on the coarse monotonic clock (arbitrary epoch).
pub fn coarse_now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE exists on every
    // Linux podvisor supports, and the call has no other effects.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

#[cfg(test)]
mod tests {
    #[test]
    fn advances_with_real_time() {
        let a = super::coarse_now_ms();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = super::coarse_now_ms();
        assert!((25..200).contains(&(b - a)), "{a} -> {b}");
    }
}
