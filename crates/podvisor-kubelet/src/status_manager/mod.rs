//! The status manager actor: every pod's Kubernetes status and its recent events. It
//! follows the status cache (every runtime status the PLEG stores), so a pod shows Running
//! as soon as the runtime says so; the syncs add why containers wait, and terminations the
//! final adjustments. Every change goes to its sink (the status writer, which writes it to
//! the API). It keeps no copy of its own on disk: the API is the one durable copy, and a
//! (re)started status manager starts from the statuses the API holds (`PriorStatuses`),
//! as the kubelet's starts from its API pods' and mirror pods' statuses.

mod inputs;
mod queries;
mod record;
mod starts;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_core::{Phase, PodExt, PodUid, SharedPod};
use podvisor_cri::PodStatus;
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::api_status::probes::{ProbeResults, ProbeView};
use inputs::Inputs;
use record::{keep_times, kept_finished, phase_and_ready, same_but_status, terminal};

use crate::protocol::cache::StatusChanged;
use crate::protocol::probes::{ProbeChanged, ResendProbeResults};
use crate::protocol::status::{
    EventType, ForgetPod, PodEvent, PodRecord, PodRejected, PodSynced, PodTerminated,
    PriorStatuses, PublishedStatus, RecordEvent, RetainPods,
};
use podvisor_actors::Recipient;

/// How long a (re)started status manager waits for the API's statuses before it starts
/// without them (each pod's next sync computes its status anyway).
const PRIOR_WAIT: Duration = Duration::from_secs(5);

pub struct StatusManager {
    records: BTreeMap<PodUid, PodRecord>,
    /// What each pod's status is computed from (pods this instance has seen a sync of).
    inputs: HashMap<PodUid, Inputs>,
    /// The newest runtime status of every pod the cache has reported, and as of when.
    runtime: HashMap<PodUid, (Arc<PodStatus>, Option<Instant>)>,
    /// Told of every status change (the status writer writes them to the API).
    sink: Option<Recipient<PublishedStatus>>,
    /// Where the statuses of before this start are (the API's, through the status writer).
    prior: Option<Recipient<PriorStatuses>>,
    /// What readiness and startup probes decided, per pod.
    probes: HashMap<PodUid, ProbeResults>,
    /// Asked to tell every verdict again when this actor (re)starts.
    prober: Option<Recipient<ResendProbeResults>>,
    /// Pods starting, for the kubelet's pod start metrics.
    starts: starts::Starts,
    /// Pods per phase, counted only after a record changed: the summary is read after each
    /// message, and counting 500 records each time was 500 idle pods' busiest code.
    by_phase: std::cell::RefCell<Option<BTreeMap<String, usize>>>,
    /// The node's address (each pod's `hostIP`).
    host_ip: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusManagerSummary {
    pub pods: usize,
    pub by_phase: BTreeMap<String, usize>,
}

impl Default for StatusManager {
    fn default() -> Self {
        Self::new()
    }
}

impl StatusManager {
    pub fn new() -> Self {
        Self {
            records: BTreeMap::new(),
            inputs: HashMap::new(),
            runtime: HashMap::new(),
            sink: None,
            prior: None,
            probes: HashMap::new(),
            prober: None,
            starts: starts::Starts::default(),
            by_phase: Default::default(),
            host_ip: None,
        }
    }

    /// Gives each pod's status the node's address.
    pub fn with_host_ip(mut self, host_ip: Option<String>) -> Self {
        self.host_ip = host_ip;
        self
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

    /// Starts, every time, from the statuses `prior` answers.
    pub fn with_prior(mut self, prior: Option<Recipient<PriorStatuses>>) -> Self {
        self.prior = prior;
        self
    }

    fn publish(&self, uid: &PodUid, terminated: bool) {
        if let (Some(sink), Some(r)) = (&self.sink, self.records.get(uid)) {
            let Some(status) = &r.status else { return };
            sink.do_send(PublishedStatus::Changed {
                pod: r.pod.clone(),
                status: status.clone(),
                terminated,
            });
        }
    }

    /// Recomputes the pod's status from its inputs.
    fn refresh(&mut self, uid: &PodUid) {
        let Some(inputs) = self.inputs.get(uid) else {
            return;
        };
        let runtime = self.runtime.get(uid).map(|(s, _)| s.as_ref());
        let previous = self.records.get(uid).and_then(|r| r.status.as_deref());
        let view = ProbeView::new(self.probes.get(uid), previous);
        let status = inputs.status(runtime, view, self.host_ip.as_deref());
        let (pod, terminated) = (inputs.pod.clone(), inputs.terminated);
        if self.set(&pod, status) {
            self.publish(&uid.clone(), terminated);
        }
    }

    /// Stores the pod given (not a copy) and beside it `status`, keeping its start time and
    /// unchanged conditions' transition times, every time cut to the second as the API
    /// keeps it. Says whether something changed.
    fn set(&mut self, pod: &SharedPod, mut status: ApiPodStatus) -> bool {
        let uid = pod.uid().clone();
        let previous = self.records.get(&uid).and_then(|r| r.status.as_deref());
        if let Some(done) = previous.filter(|p| terminal(p) && !terminal(&status)) {
            // A finished pod stays finished (the kubelet's rule): its containers are removed
            // once it terminated, and a runtime status without them must not make it
            // Pending again.
            status = kept_finished(done, &status);
        }
        keep_times(previous, &mut status);
        self.starts.saw(&uid, pod, previous, &status);
        record::normalize_times(&mut status);
        let (before, after) = (phase_and_ready(previous), phase_and_ready(Some(&status)));
        if before != after {
            // The transitions an operator follows a pod by; also what the agent benchmark
            // times, from the log, without polling the API.
            info!(pod = pod.name(), pod_uid = %uid, phase = after.0.unwrap_or(""), ready = after.1, "pod status changed");
        }
        let record = self
            .records
            .entry(uid)
            .or_insert_with(|| PodRecord::new(pod.arc().clone()));
        let same_pod = same_but_status(&record.pod, pod.arc());
        // The newest copy is kept either way: the one the sync loop holds.
        record.pod = pod.arc().clone();
        if same_pod && record.status.as_deref() == Some(&status) {
            return false;
        }
        record.status = Some(Arc::new(status));
        self.changed();
        true
    }

    /// A record changed: the phase counts are counted again when next read.
    fn changed(&mut self) {
        self.by_phase.replace(None);
    }

    /// The records a start begins with: the API's statuses.
    fn seed(&mut self, prior: Vec<Arc<Pod>>) {
        for pod in prior {
            let Some(uid) = pod.metadata.uid.as_deref().map(PodUid::from) else {
                continue;
            };
            self.records
                .entry(uid)
                .or_insert_with(|| PodRecord::from_api(pod));
        }
        self.changed();
    }

    fn event(&mut self, pod: &SharedPod, kind: EventType, reason: &str, message: String) {
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
        self.changed();
    }

    fn forget(&mut self, uid: &PodUid) {
        self.starts.forget(uid);
        self.inputs.remove(uid);
        self.probes.remove(uid);
        self.runtime.remove(uid);
        let record = self.records.remove(uid);
        if record.is_some() {
            self.changed();
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

    /// Starts from the statuses the API holds (before any message): a pod that finished
    /// before a restart stays finished, start and transition times are kept, and the next
    /// sync of each pod refreshes the rest.
    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        if let Some(prober) = &self.prober {
            prober.do_send(ResendProbeResults);
        }
        let Some(prior) = self.prior.clone() else {
            return;
        };
        let load = async move {
            match tokio::time::timeout(PRIOR_WAIT, prior.send(PriorStatuses)).await {
                Ok(Ok(pods)) => pods,
                Ok(Err(e)) => {
                    warn!(error = %e, "the API's statuses could not be read; starting without them");
                    Vec::new()
                }
                Err(_) => {
                    warn!("the API's statuses did not come in time; starting without them");
                    Vec::new()
                }
            }
        };
        ctx.wait(load.into_actor(self).map(|pods, act, _| act.seed(pods)));
    }

    fn summary(&self) -> StatusManagerSummary {
        let by_phase = self
            .by_phase
            .borrow_mut()
            .get_or_insert_with(|| {
                let mut by_phase = BTreeMap::new();
                for r in self.records.values() {
                    let phase = r.phase().map_or("Unknown", Phase::as_str);
                    *by_phase.entry(phase.to_string()).or_insert(0) += 1;
                }
                by_phase
            })
            .clone();
        StatusManagerSummary {
            pods: self.records.len(),
            by_phase,
        }
    }
}

impl Handler<StatusChanged> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: StatusChanged, _: &mut Context<Self>) {
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
            self.refresh(&msg.uid);
        }
    }
}

impl Handler<ProbeChanged> for StatusManager {
    type Result = ();
    fn handle(&mut self, ProbeChanged(r): ProbeChanged, _: &mut Context<Self>) {
        self.probes.entry(r.uid.clone()).or_default().set(&r);
        self.refresh(&r.uid);
    }
}

impl Handler<PodSynced> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodSynced, _: &mut Context<Self>) {
        let uid = msg.pod.uid().clone();
        let mut inputs = Inputs::new(msg.pod);
        inputs.waiting = msg.waiting;
        inputs.resize_error = msg.resize_error;
        self.inputs.insert(uid.clone(), inputs);
        self.refresh(&uid);
    }
}

impl Handler<PodTerminated> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodTerminated, _: &mut Context<Self>) {
        let uid = msg.pod.uid().clone();
        let mut inputs = Inputs::new(msg.pod);
        inputs.terminated = true;
        inputs.status_fns = msg.status_fns;
        self.inputs.insert(uid.clone(), inputs);
        self.refresh(&uid);
    }
}

impl Handler<PodRejected> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: PodRejected, _: &mut Context<Self>) {
        // A rejected pod runs nothing: its status is the refusal, whatever else is reported.
        self.inputs.remove(msg.pod.uid());
        let status = ApiPodStatus {
            phase: Some(Phase::Failed.as_str().into()),
            reason: Some(msg.reason.into()),
            message: Some(msg.message.clone()),
            ..Default::default()
        };
        if self.set(&msg.pod, status) {
            self.publish(msg.pod.uid(), true);
        }
        self.event(&msg.pod, EventType::Warning, msg.reason, msg.message);
    }
}

impl Handler<RecordEvent> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: RecordEvent, _: &mut Context<Self>) {
        self.event(&msg.pod, msg.kind, msg.reason, msg.message);
    }
}

impl Handler<ForgetPod> for StatusManager {
    type Result = ();
    fn handle(&mut self, msg: ForgetPod, _: &mut Context<Self>) {
        self.forget(&msg.uid);
    }
}

impl Handler<RetainPods> for StatusManager {
    type Result = ();
    fn handle(&mut self, RetainPods(keep): RetainPods, _: &mut Context<Self>) {
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
            self.forget(&uid);
        }
    }
}
