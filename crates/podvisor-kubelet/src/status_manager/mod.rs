//! The status manager actor: every pod's Kubernetes status and its recent events. It
//! follows the status cache (every runtime status the PLEG stores), so a pod shows Running
//! as soon as the runtime says so; the syncs add why containers wait, and terminations the
//! final adjustments. Statuses are persisted in the state directory off the actor thread,
//! so they survive agent restarts. The API reads them.

mod conditions;
pub mod convert;
mod inputs;
mod persist;
mod phase;
mod probes;
mod queries;
mod record;
mod starts;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_core::{Phase, PodExt, PodUid, SharedPod};
use podvisor_cri::PodStatus;
use serde::Serialize;
use tokio::time::Instant;
use tracing::info;

use inputs::Inputs;
use persist::Disk;
use probes::{ProbeResults, ProbeView};
use record::{keep_times, phase_and_ready, terminal};

use crate::protocol::cache::StatusChanged;
use crate::protocol::probes::{ProbeChanged, ResendProbeResults};
use crate::protocol::status::{
    EventType, ForgetPod, PodEvent, PodRecord, PodRejected, PodSynced, PodTerminated,
    PublishedStatus, RecordEvent, RetainPods,
};
use podvisor_actors::Recipient;

pub struct StatusManager {
    disk: Disk,
    records: BTreeMap<PodUid, PodRecord>,
    /// What each pod's status is computed from (pods this instance has seen a sync of).
    inputs: HashMap<PodUid, Inputs>,
    /// The newest runtime status of every pod the cache has reported, and as of when.
    runtime: HashMap<PodUid, (Arc<PodStatus>, Option<Instant>)>,
    dirty: persist::Dirty,
    /// Told of every status change (the node's store writes them back to the API).
    sink: Option<Recipient<PublishedStatus>>,
    /// What readiness and startup probes decided, per pod.
    probes: HashMap<PodUid, ProbeResults>,
    /// Asked to tell every verdict again when this actor (re)starts.
    prober: Option<Recipient<ResendProbeResults>>,
    /// Pods starting, for the kubelet's pod start metrics.
    starts: starts::Starts,
    /// Pods per phase, counted again only after a record changed: the summary is read
    /// after every message, and counting 500 records each time was the agent's busiest
    /// code with 500 idle pods.
    by_phase: std::cell::RefCell<Option<BTreeMap<String, usize>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusManagerSummary {
    pub pods: usize,
    pub by_phase: BTreeMap<String, usize>,
    /// Pods whose status is waiting to be written.
    pub unwritten: usize,
}

impl StatusManager {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            disk: Disk::new(dir),
            records: BTreeMap::new(),
            inputs: HashMap::new(),
            runtime: HashMap::new(),
            dirty: persist::Dirty::default(),
            sink: None,
            probes: HashMap::new(),
            prober: None,
            starts: starts::Starts::default(),
            by_phase: Default::default(),
        }
    }

    /// Observes pod starts in `metrics` (`kubelet_pod_start_*`).
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.starts = starts::Starts::new(metrics);
        self
    }

    /// Asks `prober` for every probe verdict at each (re)start.
    pub fn with_prober(mut self, prober: Option<Recipient<ResendProbeResults>>) -> Self {
        self.prober = prober;
        self
    }

    /// Also tells `sink` of every status change.
    pub fn with_sink(mut self, sink: Option<Recipient<PublishedStatus>>) -> Self {
        self.sink = sink;
        self
    }

    fn publish(&self, uid: &PodUid, terminated: bool) {
        if let (Some(sink), Some(r)) = (&self.sink, self.records.get(uid)) {
            sink.do_send(PublishedStatus::Changed {
                pod: r.pod.clone(),
                terminated,
            });
        }
    }

    /// Recomputes the pod's status from its inputs.
    fn refresh(&mut self, uid: &PodUid, ctx: &mut Context<Self>) {
        let Some(inputs) = self.inputs.get(uid) else {
            return;
        };
        let runtime = self.runtime.get(uid).map(|(s, _)| s.as_ref());
        let previous = self.records.get(uid).and_then(|r| r.pod.status.as_ref());
        let view = ProbeView::new(self.probes.get(uid), previous);
        let status = inputs.status(runtime, view);
        let (pod, terminated) = (inputs.pod.clone(), inputs.terminated);
        if self.set(&pod, status, ctx) {
            self.publish(&uid.clone(), terminated);
        }
    }

    /// Stores the pod with `status`, keeping what must not move: its start time, and the
    /// transition time of every condition whose value did not change. Writes the file only
    /// if something changed, and says whether it did.
    fn set(&mut self, pod: &SharedPod, mut status: ApiPodStatus, ctx: &mut Context<Self>) -> bool {
        let uid = pod.uid().clone();
        let previous = self.records.get(&uid).and_then(|r| r.pod.status.as_ref());
        if let Some(done) = previous.filter(|p| terminal(p) && !terminal(&status)) {
            // A finished pod stays finished (the kubelet's rule): its containers are removed
            // once it terminated, and a runtime status without them must not make it
            // Pending again.
            status = done.clone();
        }
        keep_times(previous, &mut status);
        self.starts.saw(&uid, pod, previous, &status);
        let (before, after) = (phase_and_ready(previous), phase_and_ready(Some(&status)));
        if before != after {
            // The transitions an operator follows a pod by; also what the agent benchmark
            // times, from the log, without polling the API.
            info!(pod = pod.name(), pod_uid = %uid, phase = after.0.unwrap_or(""), ready = after.1, "pod status changed");
        }
        let mut new_pod: Pod = (**pod.arc()).clone();
        new_pod.status = Some(status);
        let record = self
            .records
            .entry(uid.clone())
            .or_insert_with(|| PodRecord::new(Arc::new(Pod::default())));
        if *record.pod == new_pod {
            return false;
        }
        record.pod = Arc::new(new_pod);
        self.changed(&uid, ctx);
        true
    }

    /// The pod's record changed: write it (soon, off this thread).
    fn changed(&mut self, uid: &PodUid, ctx: &mut Context<Self>) {
        self.by_phase.replace(None);
        self.dirty.mark(uid);
        self.write(ctx);
    }

    fn write(&mut self, ctx: &mut Context<Self>) {
        let Some(batch) = self.dirty.take(&self.records) else {
            return;
        };
        let disk = self.disk.clone();
        ctx.spawn(
            async move {
                let _ = tokio::task::spawn_blocking(move || disk.write(batch)).await;
            }
            .into_actor(self)
            .map(|(), act, ctx| {
                act.dirty.written();
                act.write(ctx);
            }),
        );
    }

    fn event(
        &mut self,
        pod: &SharedPod,
        kind: EventType,
        reason: &str,
        message: String,
        ctx: &mut Context<Self>,
    ) {
        let r = self
            .records
            .entry(pod.uid().clone())
            .or_insert_with(|| PodRecord::new(pod.arc().clone()));
        let event = PodEvent {
            time_unix_ms: podvisor_core::time::now_unix_ms(),
            kind,
            reason: reason.to_string(),
            message,
            count: 1,
        };
        if let Some(sink) = &self.sink {
            sink.do_send(PublishedStatus::Event {
                pod: pod.arc().clone(),
                event: event.clone(),
            });
        }
        r.record_event(event);
        self.changed(pod.uid(), ctx);
    }

    fn forget(&mut self, uid: &PodUid, ctx: &mut Context<Self>) {
        self.starts.forget(uid);
        self.inputs.remove(uid);
        self.probes.remove(uid);
        self.runtime.remove(uid);
        let record = self.records.remove(uid);
        if record.is_some() {
            self.changed(uid, ctx);
        }
        if let Some(sink) = &self.sink {
            sink.do_send(PublishedStatus::Gone {
                uid: uid.clone(),
                pod: record.map(|r| r.pod),
            });
        }
    }
}

impl Actor for StatusManager {
    type Context = Context<Self>;
}

impl SupervisedActor for StatusManager {
    const KIND: &'static str = "status-manager";
    type Summary = StatusManagerSummary;

    /// Reloads every persisted status (on the blocking pool, before any message): after a
    /// restart (of the actor or of the agent) `get pods` answers at once, and the next sync
    /// of each pod refreshes it.
    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        if let Some(prober) = &self.prober {
            prober.do_send(ResendProbeResults);
        }
        let disk = self.disk.clone();
        ctx.wait(
            async move {
                tokio::task::spawn_blocking(move || disk.load())
                    .await
                    .unwrap_or_default()
            }
            .into_actor(self)
            .map(|records, act, _| {
                act.records = records;
                act.by_phase.replace(None);
            }),
        );
    }

    fn summary(&self) -> StatusManagerSummary {
        let by_phase = self
            .by_phase
            .borrow_mut()
            .get_or_insert_with(|| {
                let mut by_phase = BTreeMap::new();
                for r in self.records.values() {
                    let phase = r.pod.phase().map_or("Unknown", Phase::as_str);
                    *by_phase.entry(phase.to_string()).or_insert(0) += 1;
                }
                by_phase
            })
            .clone();
        StatusManagerSummary {
            pods: self.records.len(),
            by_phase,
            unwritten: self.dirty.len(),
        }
    }
}

impl Handler<StatusChanged> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: StatusChanged, ctx: &mut Context<Self>) {
        // An inspection that failed says nothing about the pod: keep what was known.
        if msg.data.error.is_some() {
            return;
        }
        let newer = self
            .runtime
            .get(&msg.uid)
            .is_none_or(|(_, at)| msg.data.modified >= *at);
        if newer {
            self.runtime
                .insert(msg.uid.clone(), (msg.data.status, msg.data.modified));
            self.refresh(&msg.uid, ctx);
        }
    }
}

impl Handler<ProbeChanged> for StatusManager {
    type Result = ();
    fn handle(&mut self, ProbeChanged(r): ProbeChanged, ctx: &mut Context<Self>) {
        self.probes.entry(r.uid.clone()).or_default().set(&r);
        self.refresh(&r.uid, ctx);
    }
}

impl Handler<PodSynced> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodSynced, ctx: &mut Context<Self>) {
        let uid = msg.pod.uid().clone();
        let mut inputs = Inputs::new(msg.pod);
        inputs.waiting = msg.waiting;
        self.inputs.insert(uid.clone(), inputs);
        self.refresh(&uid, ctx);
    }
}

impl Handler<PodTerminated> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodTerminated, ctx: &mut Context<Self>) {
        let uid = msg.pod.uid().clone();
        let mut inputs = Inputs::new(msg.pod);
        inputs.terminated = true;
        inputs.status_fns = msg.status_fns;
        self.inputs.insert(uid.clone(), inputs);
        self.refresh(&uid, ctx);
    }
}

impl Handler<PodRejected> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodRejected, ctx: &mut Context<Self>) {
        // A rejected pod runs nothing: its status is the refusal, whatever else is reported.
        self.inputs.remove(msg.pod.uid());
        let status = ApiPodStatus {
            phase: Some(Phase::Failed.as_str().into()),
            reason: Some(msg.reason.into()),
            message: Some(msg.message.clone()),
            ..Default::default()
        };
        if self.set(&msg.pod, status, ctx) {
            self.publish(msg.pod.uid(), true);
        }
        self.event(&msg.pod, EventType::Warning, msg.reason, msg.message, ctx);
    }
}

impl Handler<RecordEvent> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: RecordEvent, ctx: &mut Context<Self>) {
        self.event(&msg.pod, msg.kind, msg.reason, msg.message, ctx);
    }
}

impl Handler<ForgetPod> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: ForgetPod, ctx: &mut Context<Self>) {
        self.forget(&msg.uid, ctx);
    }
}

impl Handler<RetainPods> for StatusManager {
    type Result = ();
    fn handle(&mut self, RetainPods(keep): RetainPods, ctx: &mut Context<Self>) {
        let stale: Vec<PodUid> = self
            .records
            .keys()
            .chain(self.runtime.keys())
            .filter(|uid| !keep.contains(*uid))
            .cloned()
            .collect();
        for uid in stale {
            if self.records.contains_key(&uid) {
                info!(pod_uid = %uid, "forgetting the status of a pod nobody knows any more");
            }
            self.forget(&uid, ctx);
        }
    }
}
