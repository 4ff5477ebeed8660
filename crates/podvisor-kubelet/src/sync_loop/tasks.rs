//! The sync loop's background work: housekeeping (the kubelet's `HandlePodCleanups`,
//! decided in `housekeeping.rs`, carried out here) and garbage collection of a pod's dead
//! containers after one dies.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use actix::prelude::*;
use podvisor_core::{EventType, GracePeriod, PodExt, PodUid, SharedPod};
use podvisor_cri::CriError;
use tracing::{debug, info, warn};

use super::{SyncLoop, eviction, gc, housekeeping};
use crate::kuberuntime::cleanup;
use crate::kuberuntime::pod_cgroups::PodCgroups;
use crate::protocol::cache::DeleteStatus;
use crate::protocol::probes::RetainProbes;
use crate::protocol::status::{ForgetPod, RecordEvent, RetainPods};
use crate::protocol::updates::{KillPodOptions, PodWorkerState, SyncKnownPods, UpdatePodOptions};

impl SyncLoop {
    /// Forgets what is gone and kills what nobody wants. Skipped until every source has
    /// been heard from: before that, a pod missing from config may only be not yet read.
    pub(super) fn housekeeping(&mut self, ctx: &mut Context<Self>) {
        if !self.pods.all_sources_seen() || self.housekeeping_running {
            return;
        }
        self.housekeeping_running = true;
        let desired = self.pods.desired_uids();
        let removing = self.pods.removed().next().is_some();
        let list = self.listings.due(&desired, removing, Instant::now());
        let (known, runtime) = (self.deps.known.clone(), self.deps.runtime.clone());
        ctx.spawn(
            async move {
                let states = known.send(SyncKnownPods(desired)).await.ok();
                let running = if list {
                    Some(runtime.list_pods().await)
                } else {
                    None
                };
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
        states: BTreeMap<PodUid, PodWorkerState>,
        running: Option<Result<Vec<podvisor_cri::Pod>, CriError>>,
        ctx: &mut Context<Self>,
    ) {
        // Not listed this pass (`gate.rs`), or listing failed: nothing is swept or killed.
        let running = match running {
            Some(Err(e)) => {
                warn!(error = %e, "housekeeping cannot list the runtime");
                self.listings.again();
                None
            }
            Some(Ok(pods)) => Some(pods),
            None => None,
        };
        let plan = housekeeping::plan(&mut self.pods, &states, running, &self.config.node_name);
        let forgets = !plan.forget.is_empty();
        let (deps, forget, retain) = (self.deps.clone(), plan.forget, plan.retain);
        let forget_statuses = move || {
            for uid in forget {
                deps.forget.do_send(ForgetPod { uid: uid.clone() });
                deps.cache_delete.do_send(DeleteStatus { uid });
            }
            if let Some(probes) = &deps.probes {
                probes.do_send(RetainProbes(retain.clone()));
            }
            deps.retain.do_send(RetainPods(retain));
        };
        // A pod leaves `get pods` only once its directories are gone: whoever waits for it
        // to disappear (a script, a user re-adding the same manifest) finds them gone too.
        match plan.keep_dirs {
            Some(keep) if self.sweeps.due(&keep, forgets, Instant::now()) => {
                self.sweep_dirs(keep, forget_statuses, ctx)
            }
            _ => forget_statuses(),
        }
        for u in plan.updates {
            if let Some(rp) = &u.running_pod {
                info!(pod_uid = %rp.uid(), pod = u.name(), "runtime pod in no config: killing it");
            }
            self.send(u);
        }
        self.check_storage(ctx);
    }

    /// Evicts the pods whose emptyDir on disk holds more than its `sizeLimit` (only pods
    /// with such a volume are looked at; the walk runs off the actor's thread).
    fn check_storage(&mut self, ctx: &mut Context<Self>) {
        let desired = self.pods.desired();
        let live: HashSet<&PodUid> = desired.iter().map(|p| p.uid()).collect();
        self.evicted.retain(|uid| live.contains(uid));
        let watched: Vec<SharedPod> = desired
            .iter()
            .filter(|p| !p.is_static() && !p.is_terminal())
            .filter(|p| !self.evicted.contains(p.uid()) && !eviction::limited(p).is_empty())
            .cloned()
            .collect();
        // One measurement at a time: a slow walk is not stacked on.
        if watched.is_empty() || self.measuring {
            return;
        }
        self.measuring = true;
        let node = self.deps.node.clone();
        let measure = tokio::task::spawn_blocking(move || {
            watched
                .into_iter()
                .filter_map(|p| eviction::over_limit(&node, &p).map(|e| (p, e)))
                .collect::<Vec<_>>()
        });
        ctx.spawn(measure.into_actor(self).map(|over, act, _| {
            act.measuring = false;
            for (pod, ex) in over.unwrap_or_default() {
                act.evict(pod, ex.message(), None);
            }
        }));
    }

    /// Kills the pod (with at most `grace`) and makes it Failed, `Evicted`, with
    /// `message`; once per pod.
    pub(super) fn evict(&mut self, pod: SharedPod, message: String, grace: Option<GracePeriod>) {
        if !self.evicted.insert(pod.uid().clone()) {
            return;
        }
        warn!(pod = pod.name(), pod_uid = %pod.uid(), message = %message, "evicting the pod");
        self.deps.events.do_send(RecordEvent {
            pod: pod.clone(),
            kind: EventType::Warning,
            reason: eviction::REASON,
            message: message.clone(),
        });
        let kill = KillPodOptions {
            evict: true,
            grace_period_override: grace,
            status_fn: Some(eviction::evicted(message)),
            ..KillPodOptions::default()
        };
        self.send(UpdatePodOptions::kill(pod, kill));
    }

    fn sweep_dirs(
        &self,
        known: HashSet<PodUid>,
        then: impl FnOnce() + Send + 'static,
        ctx: &mut Context<Self>,
    ) {
        let node = self.deps.node.clone();
        ctx.spawn(
            async move {
                let _ = tokio::task::spawn_blocking(move || {
                    for dir in cleanup::orphaned_dirs(&node, &known) {
                        match crate::kuberuntime::subpath::remove_tree(&dir) {
                            Ok(()) => info!(dir = %dir.display(), "removed the directory of a pod nobody knows"),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => warn!(dir = %dir.display(), error = %e, "cannot remove an orphaned pod directory"),
                        }
                    }
                    if let Some(cgroups) = &node.pod_cgroups {
                        sweep_cgroups(cgroups, &known);
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
    pub(super) fn collect_garbage(&self, uid: PodUid, ctx: &mut Context<Self>) {
        let runtime = self.deps.runtime.clone();
        let keep = self.config.keep_dead_per_container;
        ctx.spawn(
            async move {
                let Ok(status) = runtime.pod_status(uid.as_str()).await else {
                    return;
                };
                gc::remove(&*runtime, uid.as_str(), gc::garbage(&status, keep)).await;
            }
            .into_actor(self),
        );
    }
}

/// Removes the cgroups of pods nobody knows (`pod_cgroups_sweep.rs`). Blocking.
fn sweep_cgroups(cgroups: &PodCgroups, known: &HashSet<PodUid>) {
    let swept = cgroups.sweep_orphans(known, std::time::SystemTime::now());
    if let Some(first) = swept.removed.first() {
        info!(pods = swept.removed.len(), first = %first, "removed the cgroups of pods nobody knows");
    }
    for e in swept.stayed {
        debug!(error = %e, "the cgroup of a pod nobody knows stays");
    }
}
