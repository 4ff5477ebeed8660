//! Which calls are bounded together, and how many may run at once by default.

/// How many mutations the agent lets run at once unless told otherwise (chosen with
/// burst-bench, docs/benchmarks.md).
pub const DEFAULT_MUTATIONS: usize = 8;

/// The calls that change the runtime's state, which a busy runtime slows down under and
/// which are bounded together (`CriClient::with_mutation_limit`). StopContainer is not
/// among them: it lasts as long as the container takes to stop, up to its grace period,
/// which is the container's time, not the runtime's; bounded, a burst of deletions of
/// containers that ignore SIGTERM would stop a few at a time, a grace period each.
pub const MUTATIONS: [&str; 6] = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "StartContainer",
    "RemoveContainer",
];
