//! Which calls are bounded together, and how many may run at once by default.

use std::future::Future;
use std::time::Duration;

/// How many mutations the agent lets run at once unless told otherwise (chosen with
/// burst-bench, docs/benchmarks.md).
pub const DEFAULT_MUTATIONS: usize = 8;

/// The calls that change the runtime's state, which a busy runtime slows down under and
/// which are bounded together (`CriClient::with_mutation_limit`).
pub const MUTATIONS: [&str; 6] = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "StartContainer",
    "RemoveContainer",
];

/// StopContainer takes a permit too, but holds it only this long: a stop is the
/// runtime's work while the container exits at its SIGTERM (most do, at once), and the
/// container's own time after that, up to its grace period. Unbounded, 500 stops at once
/// took containerd 1.6 a minute each (500 pods removed in 90 s, against 61 s with stops
/// bounded); held for the whole call, containers that ignore SIGTERM would stop a few
/// at a time, a grace period each.
pub const STOP_HOLD: Duration = Duration::from_secs(1);

/// Runs `call`, giving `permit` back after `hold` if the call is still running then.
pub(crate) async fn holding_for<P, F: Future>(
    permit: Option<P>,
    hold: Duration,
    call: F,
) -> F::Output {
    tokio::pin!(call);
    tokio::select! {
        out = &mut call => out,
        () = tokio::time::sleep(hold) => {
            drop(permit);
            call.await
        }
    }
}
