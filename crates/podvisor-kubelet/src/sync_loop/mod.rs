//! The sync loop actor (the kubelet's `syncLoop`): where desired pods, runtime events and
//! housekeeping meet. It takes config sources' snapshots (admitting new pods), turns PLEG
//! events into syncs, and every housekeeping period forgets finished pods and kills
//! podvisor's pods that no config wants. It is also the source a restarted pod-workers
//! dispatcher rebuilds from. (When each pod is synced again is the dispatcher's business.)
//!
//! Restart: it starts empty and waits for the sources' next snapshots (the manifest source
//! sends one on every rescan); until every expected source has been heard from, it kills
//! nothing, so a restart alone never stops a pod.

mod eviction;
mod gate;
pub mod gc;
mod housekeeping;
mod pods;
mod tasks;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::{Phase, PodExt, PodUid, SharedPod};
use podvisor_cri::Runtime;
use serde::Serialize;
use tracing::{info, warn};

use pods::{Change, PodManager, deleted};
pub use podvisor_core::fit::Allocatable;

use crate::kuberuntime::config::NodeConfig;
use crate::protocol::cache::DeleteStatus;
use crate::protocol::eviction::{EvictPod, NodePressure};
use crate::protocol::lifecycle::{PlegEventKind, PodLifecycleEvent};
use crate::protocol::probes::{ProbeSync, RetainProbes};
use crate::protocol::sources::{DesiredPods, GetDesiredPods, Rescan, SourcePods};
use crate::protocol::status::{FinishedPods, ForgetPod, PodRejected, RecordEvent, RetainPods};
use crate::protocol::updates::{
    KillPodOptions, SyncKnownPods, UpdatePod, UpdatePodOptions, UpdateType,
};

#[derive(Debug, Clone)]
pub struct SyncLoopConfig {
    /// Runtime pods labelled with this node are the agent's own (see `labels::owned_by`).
    pub node_name: String,
    /// Sources that must each send a snapshot before orphans may be killed.
    pub sources: Vec<&'static str>,
    pub allocatable: Allocatable,
    pub housekeeping_period: Duration,
    /// Exited instances kept per container (the newest is the container's last state).
    pub keep_dead_per_container: usize,
}

impl Default for SyncLoopConfig {
    fn default() -> Self {
        Self {
            node_name: String::new(),
            sources: vec![crate::manifest_source::SOURCE],
            allocatable: Allocatable {
                pods: 110,
                cpu_milli: i64::MAX,
                memory_bytes: i64::MAX,
            },
            housekeeping_period: Duration::from_secs(2),
            keep_dead_per_container: 2,
        }
    }
}

/// Everything the sync loop talks to.
pub struct SyncLoopDeps {
    pub runtime: Arc<dyn Runtime>,
    pub update: Recipient<UpdatePod>,
    pub known: Recipient<SyncKnownPods>,
    pub rejected: Recipient<PodRejected>,
    pub forget: Recipient<ForgetPod>,
    pub retain: Recipient<RetainPods>,
    /// The pods that finished, asked once at each start, so a pod that completed before a
    /// restart is not run again.
    pub phases: Recipient<FinishedPods>,
    pub cache_delete: Recipient<DeleteStatus>,
    /// Readiness, readable by `/readyz`: every source has been heard from.
    pub sources_ready: Arc<AtomicBool>,
    /// Where pods' directories live, for housekeeping's sweep of those nobody knows.
    pub node: NodeConfig,
    /// The config sources, asked for a full snapshot whenever the loop (re)starts, so a
    /// restarted loop has its desired pods at once, not at the next periodic rescan.
    pub sources: Vec<Recipient<Rescan>>,
    /// The prober, kept to the pods still known by housekeeping.
    pub probes: Option<Recipient<RetainProbes>>,
    /// Where an eviction's event goes (the status manager).
    pub events: Recipient<RecordEvent>,
    /// The node's pressure conditions: a new pod is admitted under them as the kubelet's
    /// eviction manager admits.
    pub pressure: NodePressure,
}

pub struct SyncLoop {
    deps: Arc<SyncLoopDeps>,
    config: SyncLoopConfig,
    pods: PodManager,
    housekeeping_running: bool,
    /// Pods evicted by this instance (each is killed and told of once), while desired.
    evicted: HashSet<PodUid>,
    /// A measurement of emptyDir usage is under way.
    measuring: bool,
    /// Every source had sent its pods when the last snapshot was applied.
    settled: bool,
    /// Pods that had finished when this instance started, until their source adds them.
    finished: HashMap<PodUid, Phase>,
    /// Which housekeeping passes list the runtime, and which sweep the disk and cgroups.
    listings: gate::Gate,
    sweeps: gate::Gate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncLoopSummary {
    pub desired: usize,
    pub rejected: usize,
    pub all_sources_seen: bool,
}

impl SyncLoop {
    pub fn new(deps: Arc<SyncLoopDeps>, config: SyncLoopConfig) -> Self {
        let pods = PodManager::new(config.sources.clone());
        Self {
            deps,
            config,
            pods,
            housekeeping_running: false,
            evicted: HashSet::new(),
            measuring: false,
            settled: false,
            finished: HashMap::new(),
            listings: gate::Gate::new(gate::LIST_EVERY),
            sweeps: gate::Gate::new(gate::SWEEP_EVERY),
        }
    }

    /// A pod that had finished when the loop started gets its phase back (a manifest's pod
    /// has no status of its own): the pod workers see it is done instead of running it
    /// again.
    fn finished_phase(&mut self, p: SharedPod) -> SharedPod {
        let Some(phase) = self.finished.remove(p.uid()) else {
            return p;
        };
        if p.phase().is_some_and(Phase::is_terminal) {
            return p;
        }
        p.edited(|p| {
            p.status.get_or_insert_with(Default::default).phase = Some(phase.as_str().to_string());
        })
    }

    fn send(&self, opts: UpdatePodOptions) {
        if let Err(e) = self.deps.update.try_send(UpdatePod(opts)) {
            warn!(error = ?e, "pod workers refused an update; housekeeping sends it again");
        }
    }

    fn add(&mut self, p: SharedPod) {
        // Pressure is asked only of pods added after the first full snapshot: the pods a
        // restarted loop is given again were admitted before, and run.
        let pressure = match self.settled && self.pods.get(p.uid()).is_none() {
            true => podvisor_eviction::admit::admit(&p, &self.deps.pressure.get()),
            false => Ok(()),
        };
        let admitted = match pressure {
            Ok(()) => self.pods.admit(&p, &self.config.allocatable),
            Err(message) => Err(self.pods.reject(&p, eviction::REASON, message)),
        };
        match admitted {
            Ok(()) => {
                info!(pod = p.name(), pod_uid = %p.uid(), "pod added");
                self.send(UpdatePodOptions::new(UpdateType::Create, p));
            }
            Err(r) => {
                warn!(pod = p.name(), reason = r.reason, message = %r.message, "pod rejected");
                self.deps.rejected.do_send(PodRejected {
                    pod: p,
                    reason: r.reason,
                    message: r.message,
                });
            }
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Add(p) => self.add(p),
            Change::Update(p) => {
                if self.pods.update(&p) {
                    self.send(UpdatePodOptions::new(UpdateType::Update, p));
                }
            }
            Change::Remove(p) => {
                info!(pod = p.name(), pod_uid = %p.uid(), "pod removed");
                if self.pods.remove(p.uid()) {
                    self.send(UpdatePodOptions::kill(
                        deleted(&p),
                        KillPodOptions::default(),
                    ));
                } else {
                    // Rejected pods never ran; nothing to stop.
                    self.deps.forget.do_send(ForgetPod {
                        uid: p.uid().clone(),
                    });
                }
            }
        }
    }

    fn apply_all(&mut self, changes: Vec<Change>) {
        for change in changes {
            self.apply(change);
        }
        self.settled = self.pods.all_sources_seen();
        self.deps
            .sources_ready
            .store(self.settled, Ordering::Relaxed);
    }
}

impl Actor for SyncLoop {
    type Context = Context<Self>;
}

impl SupervisedActor for SyncLoop {
    const KIND: &'static str = "sync-loop";
    type Summary = SyncLoopSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        self.deps.sources_ready.store(false, Ordering::Relaxed);
        let phases = self.deps.phases.clone();
        let ask = async move { phases.send(FinishedPods).await.unwrap_or_default() };
        ctx.wait(
            ask.into_actor(self)
                .map(|finished, act, _| act.finished = finished),
        );
        for source in &self.deps.sources {
            source.do_send(Rescan);
        }
        ctx.run_interval(self.config.housekeeping_period, |act, ctx| {
            act.housekeeping(ctx)
        });
    }

    fn summary(&self) -> SyncLoopSummary {
        let (desired, rejected) = self.pods.counts();
        SyncLoopSummary {
            desired,
            rejected,
            all_sources_seen: self.pods.all_sources_seen(),
        }
    }
}

impl Handler<SourcePods> for SyncLoop {
    type Result = ();
    fn handle(&mut self, msg: SourcePods, _: &mut Context<Self>) {
        let changes = self.pods.set_source(msg.source, msg.pods);
        let changes = changes
            .into_iter()
            .map(|c| match c {
                Change::Add(p) => Change::Add(self.finished_phase(p)),
                other => other,
            })
            .collect();
        self.apply_all(changes);
    }
}

impl Handler<PodLifecycleEvent> for SyncLoop {
    type Result = ();
    fn handle(&mut self, e: PodLifecycleEvent, ctx: &mut Context<Self>) {
        // A removal changes nothing a sync could act on.
        if e.kind != PlegEventKind::ContainerRemoved
            && let Some(p) = self.pods.get(&e.uid).cloned()
        {
            self.send(UpdatePodOptions::new(UpdateType::Sync, p));
        }
        if e.kind == PlegEventKind::ContainerDied && self.pods.get(&e.uid).is_some() {
            self.collect_garbage(e.uid, ctx);
        }
    }
}

impl Handler<ProbeSync> for SyncLoop {
    type Result = ();
    fn handle(&mut self, e: ProbeSync, _: &mut Context<Self>) {
        if let Some(p) = self.pods.get(&e.uid).cloned() {
            self.send(UpdatePodOptions::new(UpdateType::Sync, p));
        }
    }
}

impl Handler<EvictPod> for SyncLoop {
    type Result = ();
    fn handle(&mut self, e: EvictPod, _: &mut Context<Self>) {
        // Only a pod still desired and running: the manager's view may be a pass old.
        let Some(p) = self.pods.get(e.pod.uid()).cloned() else {
            return;
        };
        if !p.is_terminal() {
            self.evict(p, e.message, Some(e.grace));
        }
    }
}

impl Handler<GetDesiredPods> for SyncLoop {
    type Result = MessageResult<GetDesiredPods>;
    fn handle(&mut self, _: GetDesiredPods, _: &mut Context<Self>) -> Self::Result {
        MessageResult(DesiredPods {
            pods: self.pods.desired(),
            all_sources_seen: self.pods.all_sources_seen(),
        })
    }
}
