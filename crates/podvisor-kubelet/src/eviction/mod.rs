//! The eviction manager actor (kind `eviction-manager`; the kubelet's eviction manager):
//! every monitoring period it measures the node (memory, the node's and the images'
//! filesystems, process ids; `stats::GetNodeStats`, no container stats), passes the
//! observations through the thresholds (`podvisor_eviction::Manager`) and publishes the
//! node's pressure conditions. When a threshold has been met for its grace period it
//! records `EvictionThresholdMet` on the Node, frees what the node itself holds first
//! (under disk pressure: dead containers, then unused images), and when that is not
//! enough evicts one pod, ranked as the kubelet ranks them, then waits for it to be gone
//! (at most 30 s) before the next.
//!
//! Restart: the thresholds' first-observed times and the conditions start empty; a
//! threshold still crossed is met again at the next pass (its grace period counted anew),
//! and a pod already evicted is Failed and not chosen again.

mod choose;
mod reclaim;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::{EventType, PodExt, PodUid};
use podvisor_cri::Runtime;
use podvisor_eviction::observe::observations;
use podvisor_eviction::{Manager, Observations, Pressure, Threshold};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::protocol::eviction::{DeleteUnusedImages, EvictPod, NodeEvent, NodePressure};
use crate::protocol::sources::GetDesiredPods;
use crate::stats::{GetNodeStats, NodeNow, SampleNow};
use choose::Choice;

/// How long an evicted pod is waited for before the next eviction (the kubelet's
/// `podCleanupTimeout`).
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct EvictionConfig {
    pub thresholds: Vec<Threshold>,
    /// `evictionPressureTransitionPeriod`.
    pub transition: Duration,
    /// `evictionMaxPodGracePeriod`, seconds.
    pub max_pod_grace: i64,
    /// How often the node is measured (the kubelet's 10 s).
    pub period: Duration,
}

/// Everything the manager talks to.
pub struct EvictionDeps {
    pub runtime: Arc<dyn Runtime>,
    pub node_name: String,
    pub node_stats: Recipient<GetNodeStats>,
    pub summary: Recipient<SampleNow>,
    pub pods: Recipient<GetDesiredPods>,
    pub evict: Recipient<EvictPod>,
    pub images: Recipient<DeleteUnusedImages>,
    pub events: Option<Recipient<NodeEvent>>,
    pub pressure: NodePressure,
}

pub struct EvictionManager {
    deps: Arc<EvictionDeps>,
    config: EvictionConfig,
    manager: Manager,
    busy: bool,
    /// The pod evicted last, and when, until it is gone.
    waiting: Option<(PodUid, Instant)>,
    last: Observations,
    evictions: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvictionSummary {
    pub conditions: Vec<&'static str>,
    pub observations: Observations,
    pub evictions: u64,
    pub waiting_for: Option<String>,
}

/// What acting on a met threshold came to.
enum Acted {
    Relieved,
    Waiting,
    Evicted(PodUid),
    Nothing,
}

impl EvictionManager {
    pub fn new(deps: Arc<EvictionDeps>, config: EvictionConfig) -> Self {
        let manager = Manager::new(config.thresholds.clone(), config.transition);
        Self {
            deps,
            config,
            manager,
            busy: false,
            waiting: None,
            last: Observations::new(),
            evictions: 0,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy || self.config.thresholds.is_empty() {
            return;
        }
        self.busy = true;
        let ask = self.deps.node_stats.send(GetNodeStats);
        ctx.spawn(ask.into_actor(self).map(|now, act, ctx| match now {
            Ok(now) => act.observed(now, ctx),
            Err(e) => {
                act.busy = false;
                warn!(error = %e, "the node's stats could not be asked for");
            }
        }));
    }

    fn observed(&mut self, now: NodeNow, ctx: &mut Context<Self>) {
        let obs = observations(&now.node);
        let pass = self.manager.pass(&obs, Instant::now());
        let before = self.deps.pressure.get();
        if before != pass.conditions {
            let names = |s: &std::collections::BTreeSet<Pressure>| match s.is_empty() {
                true => "none".to_string(),
                false => s
                    .iter()
                    .map(|p| p.condition())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            info!(from = %names(&before), to = %names(&pass.conditions), "node pressure changed");
        }
        self.deps.pressure.set(pass.conditions);
        self.last = obs.clone();
        let Some(&first) = pass.act_on.first() else {
            self.busy = false;
            return;
        };
        let threshold = self.manager.thresholds()[first].clone();
        let resource = threshold.signal.resource().name();
        warn!(
            signal = threshold.signal.name(),
            "eviction threshold met: attempting to reclaim {resource}"
        );
        self.node_event(
            EventType::Warning,
            "EvictionThresholdMet",
            format!("Attempting to reclaim {resource}"),
        );
        let plan = Plan {
            deps: self.deps.clone(),
            thresholds: self.manager.thresholds().to_vec(),
            observation: obs.get(&threshold.signal).copied(),
            threshold,
            dedicated_image_fs: now.dedicated_image_fs,
            max_pod_grace: self.config.max_pod_grace,
            waiting: self
                .waiting
                .as_ref()
                .filter(|(_, at)| at.elapsed() < CLEANUP_TIMEOUT)
                .map(|(uid, _)| uid.clone()),
        };
        ctx.spawn(plan.act().into_actor(self).map(|acted, act, _| {
            act.busy = false;
            match acted {
                Acted::Evicted(uid) => {
                    act.evictions += 1;
                    act.waiting = Some((uid, Instant::now()));
                }
                Acted::Relieved => {
                    info!(
                        "eviction manager: able to reduce resource pressure without evicting pods"
                    )
                }
                Acted::Waiting => {}
                Acted::Nothing => warn!("eviction manager: unable to evict any pods from the node"),
            }
        }));
    }

    fn node_event(&self, kind: EventType, reason: &'static str, message: String) {
        if let Some(events) = &self.deps.events {
            events.do_send(NodeEvent {
                kind,
                reason,
                message,
            });
        }
    }
}

/// One pass's work once a threshold must be acted on, off the actor.
struct Plan {
    deps: Arc<EvictionDeps>,
    thresholds: Vec<Threshold>,
    threshold: Threshold,
    observation: Option<podvisor_eviction::Observation>,
    dedicated_image_fs: bool,
    max_pod_grace: i64,
    waiting: Option<PodUid>,
}

impl Plan {
    async fn act(self) -> Acted {
        let signal = self.threshold.signal;
        if signal.on_disk()
            && self
                .reclaim_node(signal.on_image_fs() || !self.dedicated_image_fs)
                .await
        {
            return Acted::Relieved;
        }
        let Ok(desired) = self.deps.pods.send(GetDesiredPods).await else {
            return Acted::Nothing;
        };
        let still = |uid: &PodUid| {
            desired
                .pods
                .iter()
                .any(|p| p.uid() == uid && !p.is_terminal())
        };
        if self.waiting.as_ref().is_some_and(still) {
            return Acted::Waiting;
        }
        let disk = signal.on_disk();
        let Ok(Some(summary)) = self.deps.summary.send(SampleNow { disk }).await else {
            return Acted::Nothing;
        };
        let choice = Choice {
            threshold: &self.threshold,
            observation: self.observation,
            dedicated_image_fs: self.dedicated_image_fs,
            max_pod_grace: self.max_pod_grace,
        };
        let Some(evict) = choice.evict(&desired.pods, &summary) else {
            return Acted::Nothing;
        };
        let uid = evict.pod.uid().clone();
        match self.deps.evict.send(evict).await {
            Ok(()) => Acted::Evicted(uid),
            Err(_) => Acted::Nothing,
        }
    }

    /// Frees dead containers (and unused images when `images`); whether the node then
    /// meets no threshold, minimum reclaims counted.
    async fn reclaim_node(&self, images: bool) -> bool {
        reclaim::dead_containers(&*self.deps.runtime, &self.deps.node_name).await;
        if images {
            let freed = self.deps.images.send(DeleteUnusedImages).await.unwrap_or(0);
            info!(freed, "removed unused images to relieve disk pressure");
        }
        let Ok(now) = self.deps.node_stats.send(GetNodeStats).await else {
            return false;
        };
        let obs = observations(&now.node);
        let all = 0..self.thresholds.len();
        podvisor_eviction::state::met(&self.thresholds, all, &obs, true).is_empty()
    }
}

impl Actor for EvictionManager {
    type Context = Context<Self>;
}

impl SupervisedActor for EvictionManager {
    const KIND: &'static str = "eviction-manager";
    type Summary = EvictionSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        self.busy = false;
        self.tick(ctx);
        ctx.run_interval(self.config.period, |act, ctx| act.tick(ctx));
    }

    fn summary(&self) -> EvictionSummary {
        EvictionSummary {
            conditions: self
                .manager
                .conditions()
                .iter()
                .map(|p| p.condition())
                .collect(),
            observations: self.last.clone(),
            evictions: self.evictions,
            waiting_for: self.waiting.as_ref().map(|(uid, _)| uid.to_string()),
        }
    }
}
