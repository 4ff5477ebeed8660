//! Config sources and the sync loop: each source sends its full snapshot of desired pods
//! (level-driven: the sync loop works out what changed). The sync loop asks a source for a
//! snapshot when it (re)starts, and answers whoever rebuilds from desired state.

use actix::Message;
use podvisor_core::SharedPod;

/// A config source's full snapshot of the pods it wants.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SourcePods {
    pub source: &'static str,
    pub pods: Vec<SharedPod>,
}

/// Send a full snapshot now (a restarted sync loop asks every source).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Rescan;

/// Asked of the sync loop by whoever rebuilds from desired state: a restarted dispatcher,
/// a restarted manifest source.
#[derive(Message)]
#[rtype(result = "DesiredPods")]
pub struct GetDesiredPods;

pub struct DesiredPods {
    pub pods: Vec<SharedPod>,
    /// Every config source has delivered its pods: what is not desired now is an orphan.
    pub all_sources_seen: bool,
}
