//! What the eviction manager asks of others, and what it tells of the node: evict a pod
//! (sync loop), free unused images (image garbage collector), an event on the Node
//! (whoever records the node's events), and the node's pressure conditions, shared with
//! the sync loop's admission and the node registrar.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use actix::prelude::*;
use podvisor_core::{EventType, GracePeriod, SharedPod};
use podvisor_eviction::Pressure;

/// Evict the pod: kill it with `grace` at most, and make it Failed, `Evicted`, with
/// `message` (and a `DisruptionTarget` condition and a Warning event saying so).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct EvictPod {
    pub pod: SharedPod,
    pub message: String,
    pub grace: GracePeriod,
}

/// Remove every image no container uses (past the minimum age, never a pinned one);
/// answers the bytes freed.
#[derive(Message, Debug)]
#[rtype(result = "u64")]
pub struct DeleteUnusedImages;

/// An event about the node itself (`EvictionThresholdMet`, `FreeDiskSpaceFailed`, ...).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct NodeEvent {
    pub kind: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// The node's pressure conditions as the eviction manager last reported them; read by
/// admission and by whoever writes the Node.
#[derive(Debug, Clone, Default)]
pub struct NodePressure(Arc<RwLock<BTreeSet<Pressure>>>);

impl NodePressure {
    pub fn get(&self) -> BTreeSet<Pressure> {
        self.0.read().map(|p| p.clone()).unwrap_or_default()
    }

    pub(crate) fn set(&self, now: BTreeSet<Pressure>) {
        if let Ok(mut p) = self.0.write() {
            *p = now;
        }
    }
}
