//! Handing freed memory back to the system. glibc keeps what a burst freed in its arenas
//! (free chunks among live ones, on pages it still holds): after 500 pods started at once,
//! the agent held 17 MiB more than it used for as long as it ran. `malloc_trim` returns
//! every whole free page; it walks the free lists, a few milliseconds at that size, so it
//! runs when a burst is over (the heap in use has fallen by [`SHRINK`] from its highest
//! since the last trim), looked at every [`PERIOD`], and at least every [`LOOKS`] looks (a
//! minute: churn frees pages without the total falling), on the blocking pool rather than
//! an actor's thread.

use std::time::Duration;

const PERIOD: Duration = Duration::from_secs(5);
/// How far the heap in use falls before a trim is worth its walk.
const SHRINK: usize = 1 << 20;
/// Looks between trims however the heap moved.
const LOOKS: u32 = 12;

/// When to trim, from the heap's bytes in use at each look.
#[derive(Debug, Default)]
struct Trimmer {
    /// The most in use since the last trim.
    peak: usize,
    /// Looks since the last trim.
    looks: u32,
}

impl Trimmer {
    /// Whether to trim now, with `in_use` bytes in use.
    fn due(&mut self, in_use: usize) -> bool {
        self.peak = self.peak.max(in_use);
        self.looks += 1;
        if self.peak - in_use < SHRINK && self.looks < LOOKS {
            return false;
        }
        (self.peak, self.looks) = (in_use, 0);
        true
    }
}

/// Looks at the heap, trims it when due; gives the trimmer back.
fn look(mut t: Trimmer) -> Trimmer {
    // SAFETY: mallinfo2 only reads the allocator's counters; malloc_trim only releases
    // free memory of the allocator's own arenas.
    unsafe {
        if t.due(libc::mallinfo2().uordblks) {
            libc::malloc_trim(0);
        }
    }
    t
}

/// Starts the trimming on the current runtime.
pub(crate) fn return_freed_memory() {
    actix::spawn(async {
        let mut tick = tokio::time::interval(PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut trimmer = Trimmer::default();
        loop {
            tick.tick().await;
            match tokio::task::spawn_blocking(move || look(trimmer)).await {
                Ok(t) => trimmer = t,
                Err(_) => return, // the runtime is shutting down
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn a_growing_heap_is_left_alone_for_a_minute() {
        let mut t = Trimmer::default();
        assert!(!(1..LOOKS as usize).any(|m| t.due(m * MIB)));
        assert!(t.due(LOOKS as usize * MIB), "a minute since the last trim");
        assert!(
            !t.due(LOOKS as usize * MIB),
            "and another minute from there"
        );
    }

    #[test]
    fn a_burst_that_ends_is_trimmed_once() {
        let mut t = Trimmer::default();
        assert!(!t.due(30 * MIB));
        assert!(t.due(20 * MIB), "fell by 10 MiB");
        assert!(!t.due(20 * MIB), "nothing freed since");
        assert!(!t.due(19 * MIB + MIB / 2), "half a MiB is not worth a walk");
        assert!(t.due(19 * MIB - 1), "a MiB below the last trim");
    }

    #[test]
    fn the_highest_since_the_last_trim_is_what_a_fall_is_measured_from() {
        let mut t = Trimmer::default();
        assert!(!t.due(10 * MIB));
        assert!(t.due(5 * MIB));
        assert!(!t.due(8 * MIB), "growing again");
        assert!(t.due(7 * MIB - 1), "a MiB below the new high");
    }
}
