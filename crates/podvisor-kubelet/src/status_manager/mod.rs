//! The status manager actor: every pod's Kubernetes status, computed from what the syncs
//! report (runtime status and waiting reasons), with its recent events, persisted in the
//! state directory so it survives agent restarts. The CLI's `get pods` and `describe pod`
//! read it through the local API.

pub mod convert;
mod store;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_cri::PodStatus;
use serde::Serialize;
use tracing::{info, warn};

pub use convert::{Waiting, api_status, phase};
pub use store::{MAX_EVENTS, PodEvent, PodRecord, Store, StoreError};

use crate::pod_workers::StatusFn;

// ---- messages ------------------------------------------------------------------------------

/// A sync saw the pod's runtime status (and why some containers wait).
#[derive(Message)]
#[rtype(result = "()")]
pub struct PodSynced {
    pub pod: Arc<Pod>,
    pub status: Arc<PodStatus>,
    pub waiting: HashMap<String, Waiting>,
    pub terminating: bool,
}

/// The pod's termination completed; `status_fns` adjust its final status.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PodTerminated {
    pub pod: Arc<Pod>,
    pub status: Arc<PodStatus>,
    pub status_fns: Vec<StatusFn>,
}

/// Admission refused the pod: it is Failed with this reason and runs nothing.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PodRejected {
    pub pod: Arc<Pod>,
    pub reason: String,
    pub message: String,
}

/// Something happened to the pod (the kubelet's events: Created, Started, Killing,
/// BackOff, Failed...). Carries the pod, so an event of a pod's first sync is kept even
/// before its first status.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordEvent {
    pub pod: Arc<Pod>,
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

/// The pod is gone for good: forget it and its file.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetPod {
    pub uid: String,
}

/// Housekeeping's list of every pod still known (in config, or being stopped): statuses of
/// any other pod are dropped. This is what clears statuses remembered from before a
/// restart for pods whose manifests went away meanwhile.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RetainPods(pub HashSet<String>);

/// Every known pod, sorted by namespace and name.
#[derive(Message)]
#[rtype(result = "Vec<PodRecord>")]
pub struct ListPods;

/// Of these pods, the ones whose last known phase is terminal (Succeeded or Failed), with
/// that phase: a pod that completed before an agent restart must not run again.
#[derive(Message)]
#[rtype(result = "HashMap<String, String>")]
pub struct TerminalPhases(pub Vec<String>);

/// One pod, by UID or by name (`name` or `namespace/name`).
#[derive(Message)]
#[rtype(result = "Option<PodRecord>")]
pub struct GetPod(pub String);

// ---- actor ---------------------------------------------------------------------------------

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn now_time() -> Time {
    // jiff's `now` needs its std feature; the nanosecond constructor does not.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    convert::time(nanos).unwrap_or(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH))
}

pub struct StatusManager {
    store: Store,
    pods: BTreeMap<String, PodRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusManagerSummary {
    pub pods: usize,
    pub by_phase: BTreeMap<String, usize>,
}

impl StatusManager {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            store: Store::new(dir),
            pods: BTreeMap::new(),
        }
    }

    /// Stores the pod with `status`, keeping what must not move: its start time, and the
    /// transition time of every condition whose value did not change. Writes the file only
    /// if something changed.
    fn set(&mut self, pod: &Arc<Pod>, mut status: ApiPodStatus) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let previous = self.pods.get(&uid).and_then(|r| r.pod.status.clone());
        status.start_time = previous
            .as_ref()
            .and_then(|p| p.start_time.clone())
            .or_else(|| Some(now_time()));
        let old_conditions = previous
            .as_ref()
            .and_then(|p| p.conditions.clone())
            .unwrap_or_default();
        for c in status.conditions.iter_mut().flatten() {
            c.last_transition_time = old_conditions
                .iter()
                .find(|o| o.type_ == c.type_ && o.status == c.status)
                .and_then(|o| o.last_transition_time.clone())
                .or_else(|| Some(now_time()));
        }
        let (before, after) = (
            phase_and_ready(previous.as_ref()),
            phase_and_ready(Some(&status)),
        );
        if before != after {
            // The transitions an operator follows a pod by; also what the agent benchmark
            // times, from the log, without polling the API.
            info!(
                pod = pod.metadata.name.as_deref().unwrap_or(""),
                pod_uid = %uid,
                phase = after.0.unwrap_or(""),
                ready = after.1,
                "pod status changed"
            );
        }
        let mut new_pod = (**pod).clone();
        new_pod.status = Some(status);
        let record = self.pods.entry(uid).or_insert_with(|| PodRecord {
            pod: Arc::new(Pod::default()),
            events: Vec::new(),
        });
        if *record.pod == new_pod {
            return;
        }
        record.pod = Arc::new(new_pod);
        if let Err(e) = self.store.save(record) {
            warn!(error = %e, "pod status not persisted");
        }
    }
}

fn phase_and_ready(status: Option<&ApiPodStatus>) -> (Option<&str>, bool) {
    let phase = status.and_then(|s| s.phase.as_deref());
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True");
    (phase, ready)
}

impl Actor for StatusManager {
    type Context = Context<Self>;
}

impl SupervisedActor for StatusManager {
    const KIND: &'static str = "status-manager";
    type Summary = StatusManagerSummary;

    /// Reloads every persisted status: after a restart (of the actor or of the agent)
    /// `get pods` answers at once, and the next sync of each pod refreshes it.
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {
        self.pods = self.store.load();
    }

    fn summary(&self) -> StatusManagerSummary {
        let mut by_phase = BTreeMap::new();
        for r in self.pods.values() {
            let phase = r
                .pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Unknown".into());
            *by_phase.entry(phase).or_insert(0) += 1;
        }
        StatusManagerSummary {
            pods: self.pods.len(),
            by_phase,
        }
    }
}

impl Handler<PodSynced> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodSynced, _: &mut Context<Self>) {
        let status = api_status(&msg.pod, &msg.status, &msg.waiting, msg.terminating);
        self.set(&msg.pod, status);
    }
}

impl Handler<PodTerminated> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodTerminated, _: &mut Context<Self>) {
        let mut status = api_status(&msg.pod, &msg.status, &HashMap::new(), true);
        for f in &msg.status_fns {
            f(&mut status);
        }
        self.set(&msg.pod, status);
    }
}

impl Handler<PodRejected> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodRejected, _: &mut Context<Self>) {
        let status = ApiPodStatus {
            phase: Some("Failed".into()),
            reason: Some(msg.reason.clone()),
            message: Some(msg.message.clone()),
            ..Default::default()
        };
        self.set(&msg.pod, status);
        let uid = msg.pod.metadata.uid.clone().unwrap_or_default();
        if let Some(r) = self.pods.get_mut(&uid) {
            r.record_event(PodEvent {
                time_unix_ms: now_ms(),
                kind: "Warning".into(),
                reason: msg.reason,
                message: msg.message,
                count: 1,
            });
            let _ = self.store.save(r);
        }
    }
}

impl Handler<RecordEvent> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: RecordEvent, _: &mut Context<Self>) {
        let uid = msg.pod.metadata.uid.clone().unwrap_or_default();
        let r = self.pods.entry(uid).or_insert_with(|| PodRecord {
            pod: msg.pod.clone(),
            events: Vec::new(),
        });
        r.record_event(PodEvent {
            time_unix_ms: now_ms(),
            kind: if msg.warning { "Warning" } else { "Normal" }.into(),
            reason: msg.reason,
            message: msg.message,
            count: 1,
        });
        if let Err(e) = self.store.save(r) {
            warn!(error = %e, "pod events not persisted");
        }
    }
}

impl Handler<ForgetPod> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: ForgetPod, _: &mut Context<Self>) {
        if self.pods.remove(&msg.uid).is_some() {
            self.store.remove(&msg.uid);
        }
    }
}

impl Handler<RetainPods> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: RetainPods, _: &mut Context<Self>) {
        let stale: Vec<String> = self
            .pods
            .keys()
            .filter(|uid| !msg.0.contains(*uid))
            .cloned()
            .collect();
        for uid in stale {
            info!(pod_uid = %uid, "forgetting the status of a pod nobody knows any more");
            self.pods.remove(&uid);
            self.store.remove(&uid);
        }
    }
}

impl Handler<ListPods> for StatusManager {
    type Result = MessageResult<ListPods>;
    fn handle(&mut self, _: ListPods, _: &mut Context<Self>) -> Self::Result {
        let mut pods: Vec<PodRecord> = self.pods.values().cloned().collect();
        pods.sort_by(|a, b| {
            let key = |r: &PodRecord| {
                (
                    r.pod.metadata.namespace.clone(),
                    r.pod.metadata.name.clone(),
                )
            };
            key(a).cmp(&key(b))
        });
        MessageResult(pods)
    }
}

impl Handler<TerminalPhases> for StatusManager {
    type Result = MessageResult<TerminalPhases>;
    fn handle(
        &mut self,
        TerminalPhases(uids): TerminalPhases,
        _: &mut Context<Self>,
    ) -> Self::Result {
        let phases = uids
            .into_iter()
            .filter_map(|uid| {
                let phase = self.pods.get(&uid)?.pod.status.as_ref()?.phase.clone()?;
                matches!(phase.as_str(), "Succeeded" | "Failed").then_some((uid, phase))
            })
            .collect();
        MessageResult(phases)
    }
}

impl Handler<GetPod> for StatusManager {
    type Result = MessageResult<GetPod>;
    fn handle(&mut self, GetPod(key): GetPod, _: &mut Context<Self>) -> Self::Result {
        if let Some(r) = self.pods.get(&key) {
            return MessageResult(Some(r.clone()));
        }
        let (ns, name) = key
            .split_once('/')
            .map_or((None, key.as_str()), |(n, m)| (Some(n), m));
        let found = self.pods.values().find(|r| {
            r.pod.metadata.name.as_deref() == Some(name)
                && ns.is_none_or(|n| r.pod.metadata.namespace.as_deref() == Some(n))
        });
        MessageResult(found.cloned())
    }
}
