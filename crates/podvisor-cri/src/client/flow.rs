//! Which calls are bounded together, how many may run at once by default, each call's
//! deadline, and the calls that run to their end whoever waits for them.

use std::future::Future;
use std::time::Duration;

use crate::CriError;

/// How many mutations the agent lets run at once unless told otherwise: two for each core
/// it may use, at least 4 and at most 16. containerd's work for a burst is CPU-bound: on
/// 2 cores it starts pods as fast with 4 in flight as with 8 to 32, and each call waits
/// less inside it (burst-bench); 100 pods bound at once in a cluster had their containers
/// created 0.4 s after their sandbox was begun with 4 in flight, 0.75-0.85 s with 8 (p50,
/// node-bench; docs/benchmarks.md).
pub fn default_mutations() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    mutations_for(cores)
}

/// The default bound for a machine of `cores`.
fn mutations_for(cores: usize) -> usize {
    cores.saturating_mul(2).clamp(4, 16)
}

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

/// `call` under the client-side deadline `limit`, its failures as [`CriError`].
pub(crate) async fn deadline<T>(
    endpoint: String,
    op: &'static str,
    limit: Duration,
    call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, CriError> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(resp)) => Ok(resp.into_inner()),
        // The deadline we sent ran out on the runtime's side.
        Ok(Err(status)) if status.code() == tonic::Code::DeadlineExceeded => {
            Err(CriError::Timeout { op, after: limit })
        }
        Ok(Err(status)) => Err(CriError::from_status(op, &endpoint, status)),
        Err(_) => Err(CriError::Timeout { op, after: limit }),
    }
}

/// Runs `work` on a task of its own, which its caller's giving up does not stop.
pub(crate) async fn to_the_end<T: Send + 'static>(
    op: &'static str,
    work: impl Future<Output = Result<T, CriError>> + Send + 'static,
) -> Result<T, CriError> {
    match tokio::spawn(work).await {
        Ok(result) => result,
        Err(e) => Err(CriError::failed(op, format!("the call's task ended: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_bound_is_two_calls_a_core_between_4_and_16() {
        let bounds: Vec<usize> = [0, 1, 2, 3, 4, 8, 9, 64, usize::MAX]
            .into_iter()
            .map(mutations_for)
            .collect();
        assert_eq!(bounds, [4, 4, 4, 6, 8, 16, 16, 16, 16]);
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(default_mutations(), mutations_for(cores));
    }
}
