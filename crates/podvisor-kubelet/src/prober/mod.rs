//! The prober actor (kind `prober`, the kubelet's prober manager): every startup, readiness
//! and liveness probe of the node in one scheduler (`podvisor_probe::Probes`, one delay
//! queue, a bounded number of runs at once), its runs spawned into this actor's context.
//! It learns a pod's probes from the pod's syncs (`SyncProbes`, answered with what the
//! probes found), its containers' instances from the status cache (`StatusChanged`), and
//! tells the status manager what readiness and startup probes decided (`ProbeChanged`),
//! the sync loop when a pod must be synced now (`ProbeSync`), and the pod's events
//! (`Unhealthy`, `ProbeWarning`).
//!
//! Each run is counted for `/metrics/probes` (`metrics.rs`).
//!
//! Restart: nothing is kept (the probe metrics start again). The new instance asks the
//! sync loop for the desired pods and the status cache for their statuses, and probes
//! again from there; a container already running is probed within one period (spread
//! out), and until a probe decides, the status manager keeps the readiness it last
//! published for that instance.

mod metrics;

use std::sync::Arc;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor, due};
use podvisor_core::PodUid;
use podvisor_cri::Runtime;
use podvisor_probe::{
    Effect, Limits, Outcome, ProbeKey, Probes, ProbesSummary, Run, Target, Verdicts,
};
use tokio::time::Instant;
use tracing::debug;

use crate::metrics::Metrics;
use crate::protocol::cache::{GetStatus, StatusChanged};
use crate::protocol::probes::{
    EndProbes, ProbeChanged, ProbeSync, ProbesEnd, ResendProbeResults, RetainProbes, SyncProbes,
};
use crate::protocol::sources::GetDesiredPods;
use crate::protocol::status::{EventType, RecordEvent};
pub use metrics::ProbeMetrics;
use metrics::Series;

/// How many probes run at once, at most (the rest wait their turn, in order), and of
/// those how many execs (see docs/benchmarks.md, probe-bench, for how they were chosen).
pub const DEFAULT_LIMITS: Limits = Limits { total: 64, exec: 8 };

/// What the prober talks to.
pub struct ProberDeps {
    pub runtime: Arc<dyn Runtime>,
    pub results: Recipient<ProbeChanged>,
    pub events: Recipient<RecordEvent>,
    pub sync: Recipient<ProbeSync>,
    pub desired: Recipient<GetDesiredPods>,
    pub cache: Recipient<GetStatus>,
    pub limits: Limits,
    pub metrics: Metrics,
}

pub struct Prober {
    deps: Arc<ProberDeps>,
    probes: Probes,
    series: Series,
}

impl Prober {
    pub fn new(deps: Arc<ProberDeps>) -> Self {
        let probes = Probes::new(deps.limits, podvisor_core::time::now_nanos());
        Self {
            deps,
            probes,
            series: Series::default(),
        }
    }

    fn on_due(&mut self, key: ProbeKey, _: Instant, ctx: &mut Context<Self>) {
        if let Some(run) = self.probes.due(key, Instant::now()) {
            self.launch(run, ctx);
        }
    }

    fn launch(&mut self, run: Run, ctx: &mut Context<Self>) {
        let target = Target {
            runtime: self.deps.runtime.clone(),
            container_id: run.container_id.clone(),
            pod_ip: run.pod_ip,
        };
        let (key, id, started) = (run.key, run.container_id, Instant::now());
        let probe = podvisor_probe::run::probe(run.action, target, run.timeout);
        ctx.spawn(probe.into_actor(self).map(move |outcome, act, ctx| {
            act.count(&key, &outcome, started.elapsed());
            act.finished(&key, &id, outcome, ctx);
        }));
    }

    fn count(&mut self, key: &ProbeKey, outcome: &Outcome, took: std::time::Duration) {
        if let Some(pod) = self.probes.pod(&key.uid) {
            let m = &self.deps.metrics.probes;
            self.series.observe(m, key, pod, outcome, took);
        }
    }

    /// Removes the metric series of probes that ended: of pod `only`, or of any pod.
    fn prune_series(&mut self, only: Option<&PodUid>) {
        let probes = &self.probes;
        let m = &self.deps.metrics.probes;
        let keep = |key: &ProbeKey| only.is_some_and(|u| key.uid != *u) || probes.has_probe(key);
        self.series.prune(m, keep);
    }

    fn finished(&mut self, key: &ProbeKey, id: &str, outcome: Outcome, ctx: &mut Context<Self>) {
        debug!(pod_uid = %key.uid, container = %key.container, probe = %key.kind, ?outcome, "probe ran");
        let effects = self.probes.finish(key, id, outcome, Instant::now());
        self.apply(effects);
        while let Some(run) = self.probes.next_waiting(Instant::now()) {
            self.launch(run, ctx);
        }
    }

    fn apply(&self, effects: Vec<Effect>) {
        for e in effects {
            match e {
                Effect::Result(r) => self.deps.results.do_send(ProbeChanged(r)),
                Effect::Sync(uid) => self.deps.sync.do_send(ProbeSync { uid }),
                Effect::Event {
                    pod,
                    reason,
                    message,
                } => self.deps.events.do_send(RecordEvent {
                    pod,
                    kind: EventType::Warning,
                    reason,
                    message,
                }),
            }
        }
    }

    /// Learns the desired pods and their statuses again (after a restart).
    fn relearn(&mut self, ctx: &mut Context<Self>) {
        let (desired, cache) = (self.deps.desired.clone(), self.deps.cache.clone());
        let fetch = async move {
            let pods = desired
                .send(GetDesiredPods)
                .await
                .map(|d| d.pods)
                .unwrap_or_default();
            let mut out = Vec::with_capacity(pods.len());
            // As the workers tell it: a pod without probes is never sent (`SyncProbes`).
            for pod in pods.into_iter().filter(|p| podvisor_probe::has_probes(p)) {
                let status = cache
                    .send(GetStatus {
                        uid: pod.uid().clone(),
                    })
                    .await
                    .ok();
                out.push((pod, status));
            }
            out
        };
        ctx.spawn(fetch.into_actor(self).map(|pods, act, _| {
            let (now, wall) = (Instant::now(), podvisor_core::time::now_nanos());
            for (pod, status) in pods {
                let uid = pod.uid().clone();
                let _ = act.probes.set_pod(pod, now, wall);
                if let Some(s) = status.filter(|s| s.error.is_none()) {
                    act.probes.set_status(&uid, s.status, now, wall);
                }
            }
        }));
    }

    /// Asks the status cache for a pod's status the scheduler has not seen yet (its
    /// changes arrive by themselves from then on).
    fn fetch_status(&self, uid: PodUid, ctx: &mut Context<Self>) {
        let cache = self.deps.cache.clone();
        let ask = async move {
            cache
                .send(GetStatus { uid: uid.clone() })
                .await
                .ok()
                .map(|s| (uid, s))
        };
        ctx.spawn(ask.into_actor(self).map(|answer, act, _| {
            if let Some((uid, s)) = answer.filter(|(_, s)| s.error.is_none()) {
                let (now, wall) = (Instant::now(), podvisor_core::time::now_nanos());
                act.probes.set_status(&uid, s.status, now, wall);
            }
        }));
    }
}

impl Actor for Prober {
    type Context = Context<Self>;
}

impl SupervisedActor for Prober {
    const KIND: &'static str = "prober";
    type Summary = ProbesSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.probes = Probes::new(self.deps.limits, podvisor_core::time::now_nanos());
        due::drive(ctx, |a: &mut Self| a.probes.queue(), Self::on_due);
        if start.is_restart() {
            self.series = Series::default();
            self.deps.metrics.probes.reset();
            self.relearn(ctx);
        }
    }

    fn summary(&self) -> ProbesSummary {
        self.probes.summary()
    }
}

impl Handler<SyncProbes> for Prober {
    type Result = MessageResult<SyncProbes>;
    fn handle(&mut self, msg: SyncProbes, ctx: &mut Context<Self>) -> Self::Result {
        let uid: PodUid = msg.pod.uid().clone();
        let (now, wall) = (Instant::now(), podvisor_core::time::now_nanos());
        if self.probes.set_pod(msg.pod, now, wall) {
            self.fetch_status(uid.clone(), ctx);
        }
        self.prune_series(Some(&uid));
        let verdicts: Verdicts = self.probes.verdicts(&uid);
        MessageResult(verdicts)
    }
}

impl Handler<StatusChanged> for Prober {
    type Result = ();
    fn handle(&mut self, msg: StatusChanged, _: &mut Context<Self>) {
        if msg.data.error.is_none() {
            let (now, wall) = (Instant::now(), podvisor_core::time::now_nanos());
            self.probes.set_status(&msg.uid, msg.data.status, now, wall);
        }
    }
}

impl Handler<EndProbes> for Prober {
    type Result = ();
    fn handle(&mut self, msg: EndProbes, _: &mut Context<Self>) {
        match msg.end {
            ProbesEnd::Terminating => {
                let (now, wall) = (Instant::now(), podvisor_core::time::now_nanos());
                self.probes.stop_liveness_and_startup(&msg.uid, now, wall);
            }
            ProbesEnd::Terminated => self.probes.remove(&msg.uid),
        }
        self.prune_series(Some(&msg.uid));
    }
}

impl Handler<RetainProbes> for Prober {
    type Result = ();
    fn handle(&mut self, RetainProbes(keep): RetainProbes, _: &mut Context<Self>) {
        self.probes.retain(&keep);
        self.prune_series(None);
    }
}

impl Handler<ResendProbeResults> for Prober {
    type Result = ();
    fn handle(&mut self, _: ResendProbeResults, _: &mut Context<Self>) {
        for r in self.probes.results() {
            self.deps.results.do_send(ProbeChanged(r));
        }
    }
}
