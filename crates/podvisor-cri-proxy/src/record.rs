//! Every call the proxy saw, for tests that ask what the agent did to the runtime.

use std::time::{Duration, Instant};

use bytes::Bytes;

/// The CRI calls that change the runtime's state (a restarted actor must make none of
/// them while it rebuilds).
pub const MUTATING: [&str; 9] = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "RemoveContainer",
    "UpdateContainerResources",
    "PullImage",
];

/// How the proxy handled a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Passed to the runtime and its answer passed back (the runtime may have failed it).
    Forwarded,
    /// Answered by the proxy with an injected error.
    Failed,
    /// Never answered, never forwarded.
    Hung,
    /// Forwarded, and the answer withheld.
    Dropped,
    /// The runtime could not be reached.
    Unreachable,
    /// An event stream served by the proxy itself.
    Served,
}

/// One call: its method (`CreateContainer`), when it arrived, how long until its answer
/// (or until it was held), its request's bytes, and what became of it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub at: Instant,
    pub took: std::time::Duration,
    pub body: Bytes,
    pub outcome: Outcome,
}

impl Call {
    pub fn is_mutating(&self) -> bool {
        MUTATING.contains(&self.method.as_str())
    }

    /// Whether the request carries `needle` (a pod UID, a container id, a name).
    pub fn mentions(&self, needle: &str) -> bool {
        let needle = needle.as_bytes();
        !needle.is_empty() && self.body.windows(needle.len()).any(|w| w == needle)
    }
}

/// The calls kept, oldest first; past `limit` the oldest go (a test reads recent calls).
#[derive(Debug)]
pub(crate) struct Record {
    calls: std::collections::VecDeque<Call>,
    limit: usize,
}

impl Record {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            calls: Default::default(),
            limit,
        }
    }

    pub(crate) fn push(&mut self, call: Call) {
        if self.calls.len() == self.limit {
            self.calls.pop_front();
        }
        self.calls.push_back(call);
    }

    pub(crate) fn since(&self, t: Instant) -> Vec<Call> {
        self.calls.iter().filter(|c| c.at >= t).cloned().collect()
    }
}

/// The most of `spans` (each a start and how long) that overlap at one instant; one
/// ending as another starts does not overlap it.
pub(crate) fn most_overlapping(spans: impl Iterator<Item = (Instant, Duration)>) -> usize {
    let mut edges: Vec<(Instant, i32)> =
        spans.flat_map(|(at, d)| [(at, 1), (at + d, -1)]).collect();
    edges.sort_by_key(|&(at, d)| (at, d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, body: &'static [u8]) -> Call {
        Call {
            method: method.into(),
            at: Instant::now(),
            took: Duration::ZERO,
            body: Bytes::from_static(body),
            outcome: Outcome::Forwarded,
        }
    }

    #[test]
    fn the_record_keeps_the_newest_calls_and_tells_mutations() {
        let mut r = Record::new(2);
        let t0 = Instant::now();
        r.push(call("ListContainers", b""));
        r.push(call("CreateContainer", b"pod-1"));
        r.push(call("StopContainer", b"c-9"));
        let calls = r.since(t0);
        assert_eq!(calls.len(), 2);
        assert!(calls.iter().all(Call::is_mutating));
        assert!(calls[0].mentions("pod-1") && !calls[1].mentions("pod-1"));
        assert!(r.since(Instant::now() + Duration::from_secs(1)).is_empty());
    }

    #[test]
    fn overlaps_count_spans_at_one_instant_and_touching_ones_apart() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let spans = [(t, ms(10)), (t + ms(5), ms(10)), (t + ms(10), ms(1))];
        assert_eq!(most_overlapping(spans.into_iter()), 2);
        let touching = [(t, ms(10)), (t + ms(10), ms(10)), (t + ms(20), ms(10))];
        assert_eq!(most_overlapping(touching.into_iter()), 1);
        let nested = [(t, ms(100)), (t + ms(1), ms(5)), (t + ms(2), ms(1))];
        assert_eq!(most_overlapping(nested.into_iter()), 3);
        assert_eq!(most_overlapping(std::iter::empty()), 0);
    }
}
