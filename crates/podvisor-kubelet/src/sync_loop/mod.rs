//! The sync loop actor (the kubelet's `syncLoop`): where desired pods, runtime events and
//! timers meet. It takes config sources' snapshots (admitting new pods), turns PLEG
//! events into syncs, drains the pod workers' due resyncs every second, and every
//! housekeeping period forgets finished pods and kills podvisor's pods that no config
//! wants. It is also the source a restarted pod-workers dispatcher rebuilds from.
//!
//! Restart: it starts empty and waits for the sources' next snapshots (the manifest source
//! sends one on every rescan); until every expected source has been heard from, it kills
//! nothing, so a restart alone never stops a pod.

pub mod admission;
pub mod gc;
pub mod housekeeping;
pub mod pods;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_cri::Runtime;
use serde::Serialize;
use tracing::{debug, info, warn};

pub use admission::{Allocatable, Rejection};
pub use pods::{Change, PodManager, deleted};

use crate::kuberuntime::cleanup;
use crate::kuberuntime::config::NodeConfig;
use crate::manifest_source::Rescan;
use crate::pleg::{PlegEventKind, PodLifecycleEvent};
use crate::pod_workers::{
    DesiredPods, DrainDue, GetDesiredPods, KillPodOptions, PodWorkerState, SyncKnownPods,
    UpdatePod, UpdatePodOptions, UpdateType, pod as podinfo,
};
use crate::status_cache::DeleteStatus;
use crate::status_manager::{ForgetPod, PodRejected, RetainPods, TerminalPhases};

// ---- messages ------------------------------------------------------------------------------

/// A config source's full snapshot of the pods it wants.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SourcePods {
    pub source: String,
    pub pods: Vec<Arc<Pod>>,
}

/// The UIDs of the pods the loop considers desired.
#[derive(Message)]
#[rtype(result = "HashSet<String>")]
pub struct DesiredUids;

// ---- actor ---------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct SyncLoopConfig {
    /// Runtime pods labelled with this node are the agent's own (see `labels::owned_by`).
    pub node_name: String,
    /// Sources that must each send a snapshot before orphans may be killed.
    pub sources: Vec<String>,
    pub allocatable: Allocatable,
    /// How often due resyncs are drained.
    pub sync_period: Duration,
    pub housekeeping_period: Duration,
    /// Exited instances kept per container (the newest is the container's last state).
    pub keep_dead_per_container: usize,
}

impl Default for SyncLoopConfig {
    fn default() -> Self {
        Self {
            node_name: String::new(),
            sources: vec!["file".into()],
            allocatable: Allocatable {
                pods: 110,
                cpu_milli: i64::MAX,
                memory_bytes: i64::MAX,
            },
            sync_period: Duration::from_secs(1),
            housekeeping_period: Duration::from_secs(2),
            keep_dead_per_container: 2,
        }
    }
}

/// Everything the sync loop talks to.
pub struct SyncLoopDeps {
    pub runtime: Arc<dyn Runtime>,
    pub update: Recipient<UpdatePod>,
    pub drain: Recipient<DrainDue>,
    pub known: Recipient<SyncKnownPods>,
    pub rejected: Recipient<PodRejected>,
    pub forget: Recipient<ForgetPod>,
    pub retain: Recipient<RetainPods>,
    /// Last known phases, so a pod that completed before a restart is not run again.
    pub phases: Recipient<TerminalPhases>,
    pub cache_delete: Recipient<DeleteStatus>,
    /// Readiness, readable by `/readyz`: every source has been heard from.
    pub sources_ready: Arc<AtomicBool>,
    /// Where pods' directories live, for housekeeping's sweep of those nobody knows.
    pub node: NodeConfig,
    /// The config sources, asked for a full snapshot whenever the loop (re)starts, so a
    /// restarted loop has its desired pods at once, not at the next periodic rescan.
    pub sources: Vec<Recipient<Rescan>>,
}

pub struct SyncLoop {
    deps: Arc<SyncLoopDeps>,
    config: SyncLoopConfig,
    pods: PodManager,
    housekeeping_running: bool,
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
        }
    }

    fn send(&self, opts: UpdatePodOptions) {
        if let Err(e) = self.deps.update.try_send(UpdatePod(opts)) {
            warn!(error = ?e, "pod workers refused an update; housekeeping sends it again");
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Add(p) => match self.pods.admit(&p, &self.config.allocatable) {
                Ok(()) => {
                    info!(pod = %p.metadata.name.as_deref().unwrap_or(""), pod_uid = %podinfo::uid(&p), "pod added");
                    self.send(UpdatePodOptions::new(UpdateType::Create, p));
                }
                Err(r) => {
                    warn!(pod = %p.metadata.name.as_deref().unwrap_or(""), reason = r.reason, message = %r.message, "pod rejected");
                    self.deps.rejected.do_send(PodRejected {
                        pod: p,
                        reason: r.reason.into(),
                        message: r.message,
                    });
                }
            },
            Change::Update(p) => {
                if self.pods.update(&p) {
                    self.send(UpdatePodOptions::new(UpdateType::Update, p));
                }
            }
            Change::Remove(p) => {
                info!(pod = %p.metadata.name.as_deref().unwrap_or(""), pod_uid = %podinfo::uid(&p), "pod removed");
                if self.pods.remove(podinfo::uid(&p)) {
                    self.send(UpdatePodOptions::kill(
                        deleted(&p),
                        KillPodOptions::default(),
                    ));
                } else {
                    // Rejected pods never ran; nothing to stop.
                    self.deps.forget.do_send(ForgetPod {
                        uid: podinfo::uid(&p).to_string(),
                    });
                }
            }
        }
    }

    fn apply_all(&mut self, changes: Vec<Change>) {
        for change in changes {
            self.apply(change);
        }
        self.deps
            .sources_ready
            .store(self.pods.all_sources_seen(), Ordering::Relaxed);
    }

    fn resync_due(&mut self, ctx: &mut Context<Self>) {
        let drain = self.deps.drain.clone();
        ctx.spawn(
            async move { drain.send(DrainDue).await.unwrap_or_default() }
                .into_actor(self)
                .map(|due, act, _| {
                    for uid in due {
                        if let Some(p) = act.pods.get(&uid).cloned() {
                            act.send(UpdatePodOptions::new(UpdateType::Sync, p));
                        }
                    }
                }),
        );
    }

    /// Forgets what is gone and kills what nobody wants. Skipped until every source has
    /// been heard from: before that, a pod missing from config may only be not yet read.
    fn housekeeping(&mut self, ctx: &mut Context<Self>) {
        if !self.pods.all_sources_seen() || self.housekeeping_running {
            return;
        }
        self.housekeeping_running = true;
        let desired = self.pods.desired_uids();
        let (known, runtime) = (self.deps.known.clone(), self.deps.runtime.clone());
        ctx.spawn(
            async move {
                let states = known.send(SyncKnownPods(desired)).await.ok();
                let running = runtime.list_pods().await;
                (states, running)
            }
            .into_actor(self)
            .map(|(states, running), act, ctx| {
                act.housekeeping_running = false;
                let Some(states) = states else { return };
                act.after_housekeeping(states, running, ctx);
            }),
        );
    }

    fn after_housekeeping(
        &mut self,
        states: BTreeMap<String, PodWorkerState>,
        running: Result<Vec<podvisor_cri::Pod>, podvisor_cri::CriError>,
        ctx: &mut Context<Self>,
    ) {
        let running = running
            .map_err(|e| warn!(error = %e, "housekeeping cannot list the runtime"))
            .ok();
        let plan = housekeeping::plan(&mut self.pods, &states, running, &self.config.node_name);
        let (deps, forget, retain) = (self.deps.clone(), plan.forget, plan.retain);
        let forget_statuses = move || {
            for uid in forget {
                deps.forget.do_send(ForgetPod { uid: uid.clone() });
                deps.cache_delete.do_send(DeleteStatus { uid });
            }
            deps.retain.do_send(RetainPods(retain));
        };
        // A pod leaves `get pods` only once its directories are gone: whoever waits for it
        // to disappear (a script, a user re-adding the same manifest) finds them gone too.
        match plan.keep_dirs {
            Some(keep) => self.sweep_dirs(keep, forget_statuses, ctx),
            None => forget_statuses(),
        }
        for u in plan.updates {
            if let Some(rp) = &u.running_pod {
                info!(pod_uid = %rp.0.pod.uid, pod = %rp.0.pod.name, "runtime pod in no config: killing it");
            }
            self.send(u);
        }
    }

    fn sweep_dirs(
        &self,
        known: HashSet<String>,
        then: impl FnOnce() + Send + 'static,
        ctx: &mut Context<Self>,
    ) {
        let node = self.deps.node.clone();
        ctx.spawn(
            async move {
                let _ = tokio::task::spawn_blocking(move || {
                    for dir in cleanup::orphaned_dirs(&node, &known) {
                        match std::fs::remove_dir_all(&dir) {
                            Ok(()) => info!(dir = %dir.display(), "removed the directory of a pod nobody knows"),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => warn!(dir = %dir.display(), error = %e, "cannot remove an orphaned pod directory"),
                        }
                    }
                })
                .await;
                then();
            }
            .into_actor(self),
        );
    }

    /// Removes a pod's dead containers (with their logs) and sandboxes beyond what
    /// `gc::garbage` keeps, so a crash-looping pod does not pile them up.
    fn collect_garbage(&self, uid: String, ctx: &mut Context<Self>) {
        let runtime = self.deps.runtime.clone();
        let keep = self.config.keep_dead_per_container;
        ctx.spawn(
            async move {
                let Ok(status) = runtime.pod_status(&uid).await else {
                    return;
                };
                let garbage = gc::garbage(&status, keep);
                for (id, log) in garbage.containers {
                    debug!(pod_uid = %uid, id = %id, "removing dead container");
                    if runtime.remove_container(&id).await.is_ok()
                        && std::path::Path::new(&log).is_absolute()
                    {
                        let _ = tokio::fs::remove_file(&log).await;
                    }
                }
                for id in garbage.sandboxes {
                    debug!(pod_uid = %uid, sandbox = %id, "removing dead sandbox");
                    let _ = runtime.remove_sandbox(&id).await;
                }
            }
            .into_actor(self),
        );
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
        for source in &self.deps.sources {
            source.do_send(Rescan);
        }
        ctx.run_interval(self.config.sync_period, |act, ctx| act.resync_due(ctx));
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
    fn handle(&mut self, msg: SourcePods, ctx: &mut Context<Self>) {
        let changes = self.pods.set_source(&msg.source, msg.pods);
        let added: Vec<String> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Add(p) => Some(podinfo::uid(p).to_string()),
                _ => None,
            })
            .collect();
        if added.is_empty() {
            return self.apply_all(changes);
        }
        // A manifest's pod has no status of its own: a pod that completed before the agent
        // restarted gets its last phase back, so the pod workers see it is done instead of
        // running it again. Waited for, so changes stay in order.
        let phases = self.deps.phases.clone();
        ctx.wait(
            async move { phases.send(TerminalPhases(added)).await.unwrap_or_default() }
                .into_actor(self)
                .map(move |terminal, act, _| {
                    let changes = changes
                        .into_iter()
                        .map(|c| match c {
                            Change::Add(p) => match terminal.get(podinfo::uid(&p)) {
                                Some(phase) => Change::Add(with_phase(&p, phase)),
                                None => Change::Add(p),
                            },
                            other => other,
                        })
                        .collect();
                    act.apply_all(changes);
                }),
        );
    }
}

fn with_phase(p: &Pod, phase: &str) -> Arc<Pod> {
    let mut p = p.clone();
    p.status.get_or_insert_with(Default::default).phase = Some(phase.to_string());
    Arc::new(p)
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

impl Handler<GetDesiredPods> for SyncLoop {
    type Result = MessageResult<GetDesiredPods>;
    fn handle(&mut self, _: GetDesiredPods, _: &mut Context<Self>) -> Self::Result {
        MessageResult(DesiredPods {
            pods: self.pods.desired(),
            all_sources_seen: self.pods.all_sources_seen(),
        })
    }
}

impl Handler<DesiredUids> for SyncLoop {
    type Result = MessageResult<DesiredUids>;
    fn handle(&mut self, _: DesiredUids, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.pods.desired_uids())
    }
}
