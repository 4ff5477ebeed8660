//! The prober and the actors around it: a pod's sync registers the pod's probes and asks
//! what they found (a failed liveness or startup probe means a kill; a sidecar's startup
//! probe gates the next init container); a terminating pod's liveness and startup probes
//! stop, a terminated pod's all of them; housekeeping keeps the prober to the pods still
//! known. The prober tells the status manager what readiness and startup probes decided
//! and the sync loop when a pod must be looked at now.

use std::collections::HashSet;

use actix::Message;
use podvisor_core::{PodUid, SharedPod};
use podvisor_probe::{ProbeResult, Verdicts};

/// From a pod's sync: probe this pod as it is now, and say what the probes found.
#[derive(Message)]
#[rtype(result = "Verdicts")]
pub struct SyncProbes {
    pub pod: SharedPod,
}

/// A pod's termination started (liveness and startup probes stop; readiness goes on) or
/// ended (every probe stops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbesEnd {
    Terminating,
    Terminated,
}

/// `ProbesEnd` for one pod.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct EndProbes {
    pub uid: PodUid,
    pub end: ProbesEnd,
}

/// Housekeeping's list of the pods still known: the probes of any other stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RetainProbes(pub HashSet<PodUid>);

/// A readiness or startup probe's verdict on a container instance changed.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct ProbeChanged(pub ProbeResult);

/// Look at this pod now: a probe's verdict calls for its sync.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct ProbeSync {
    pub uid: PodUid,
}

/// Send every current verdict again (a restarted status manager lost them).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct ResendProbeResults;
