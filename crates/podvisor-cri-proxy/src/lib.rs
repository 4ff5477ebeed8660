//! A fault-injecting CRI proxy for tests and benchmarks: a small gRPC server between the
//! agent and the runtime. It forwards every call byte for byte (any method, streams
//! included, so it needs no copy of the CRI schema to pass calls on) and, on the test's
//! command, delays, fails, hangs or drops calls of any method, or only those about one
//! pod or container; it records every call, and it can serve a container event stream
//! of its own that the test feeds (on containerd 1.6 too, which streams nothing).
//!
//! ```no_run
//! # async fn f() -> Result<(), podvisor_cri_proxy::ProxyError> {
//! use podvisor_cri_proxy::{Action, CriProxy, Fault};
//! let proxy = CriProxy::start("unix:///run/containerd/containerd.sock", "/tmp/proxy.sock").await?;
//! // the agent runs with runtime_endpoint = proxy.endpoint()
//! proxy.add(Fault::on("CreateContainer", Action::Drop).times(1));
//! # Ok(()) }
//! ```

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod events;
mod record;
mod rules;
mod serve;
mod upstream;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use podvisor_cri::Endpoint;
use podvisor_cri::proto::ContainerEventResponse;
use tokio::net::UnixListener;
use tokio::task::JoinHandle;

pub use record::{Call, MUTATING, Outcome};
pub use rules::{Action, Fault, FaultId};

use serve::{Shared, lock};

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("the runtime endpoint: {0}")]
    Endpoint(#[from] podvisor_cri::EndpointError),
    #[error("cannot listen on {path}: {source}")]
    Listen {
        path: String,
        source: std::io::Error,
    },
}

/// How many calls the record keeps (the newest).
const RECORD_LIMIT: usize = 200_000;

/// A running proxy. Dropping it stops it: its socket goes, and so does every connection.
pub struct CriProxy {
    shared: Arc<Shared>,
    socket: PathBuf,
    task: JoinHandle<()>,
}

impl CriProxy {
    /// Listens on `socket` (replacing a stale file) and forwards to the runtime at
    /// `upstream` (`unix:///...`). Must run inside a tokio runtime.
    pub async fn start(upstream: &str, socket: impl AsRef<Path>) -> Result<Self, ProxyError> {
        let upstream = Endpoint::parse(upstream)?;
        let socket = socket.as_ref().to_path_buf();
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).map_err(|source| ProxyError::Listen {
            path: socket.display().to_string(),
            source,
        })?;
        let shared = Arc::new(Shared {
            upstream: upstream::Upstream::new(upstream.path().to_path_buf()),
            rules: Mutex::default(),
            record: Mutex::new(record::Record::new(RECORD_LIMIT)),
            events: Mutex::default(),
        });
        let task = tokio::spawn(serve::serve(listener, shared.clone()));
        Ok(Self {
            shared,
            socket,
            task,
        })
    }

    /// The endpoint to give the agent (`unix:///...`).
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Puts a fault in force; earlier faults are matched first.
    pub fn add(&self, fault: Fault) -> FaultId {
        lock(&self.shared.rules).add(fault)
    }

    pub fn remove(&self, id: FaultId) {
        lock(&self.shared.rules).remove(id);
    }

    /// Removes every fault: everything is forwarded again.
    pub fn clear(&self) {
        lock(&self.shared.rules).clear();
    }

    /// The calls that arrived at `t` or later, oldest first.
    pub fn calls_since(&self, t: Instant) -> Vec<Call> {
        lock(&self.shared.record).since(t)
    }

    /// The most calls that `matching` accepts that were in flight at once since `t`
    /// (answered calls only: each from its arrival to its answer).
    pub fn most_at_once(&self, t: Instant, matching: impl Fn(&Call) -> bool) -> usize {
        self.most_spans_at_once(t, |c| matching(c).then_some(c.took))
    }

    /// As [`most_at_once`](Self::most_at_once), each call counted from its arrival for
    /// the span `span` gives it (`None`: not counted); e.g. only while a call can hold
    /// a permit the agent gives back after a while.
    pub fn most_spans_at_once(
        &self,
        t: Instant,
        span: impl Fn(&Call) -> Option<Duration>,
    ) -> usize {
        let calls = self.calls_since(t);
        record::most_overlapping(
            calls
                .iter()
                .filter(|c| c.outcome == Outcome::Forwarded)
                .filter_map(|c| span(c).map(|d| (c.at, d.min(c.took)))),
        )
    }

    /// Sends `events` on every event stream the proxy serves (`Action::ServeEvents`);
    /// answers how many streams got them.
    pub fn inject_events(&self, events: &[ContainerEventResponse]) -> usize {
        let frames: Vec<_> = events.iter().map(events::frame).collect();
        lock(&self.shared.events).send(&frames)
    }

    /// How many served event streams are open (a test waits for the agent's).
    pub fn event_streams(&self) -> usize {
        lock(&self.shared.events).open()
    }
}

impl Drop for CriProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}
