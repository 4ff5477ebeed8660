//! Stopping a pod's containers, then its sandboxes (the kubelet's `killContainer` and
//! termination ordering). Each container is given its grace period: its preStop hook runs
//! first and its time counts against the grace; sidecars stop after every other
//! container and after the sidecars that follow them, waiting out of the same budget; the
//! runtime then sends SIGTERM and, at the deadline, SIGKILL. A container whose hook or
//! wait used up its grace still gets 2 s (Kubernetes' minimum window).

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Container;
use podvisor_core::{GracePeriod, PodExt, SharedPod};
use podvisor_cri::{ContainerState, PodStatus, SandboxState};
use podvisor_probe::{Action, Target};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::super::CriSyncer;
use super::order::stop_order;
use crate::protocol::status::EventType;
use crate::protocol::sync::SyncError;

/// The window a container is given to stop after its hook or its wait used its grace.
const MIN_WINDOW: Duration = Duration::from_secs(2);

/// One container to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stop {
    pub id: String,
    pub name: String,
    /// What the `Killing` event says (`Stopping container <name>` unless a reason says
    /// more).
    pub message: String,
    pub grace: GracePeriod,
}

impl Stop {
    pub(crate) fn new(id: &str, name: &str, grace: GracePeriod) -> Self {
        Self {
            id: id.to_string(),
            name: name.to_string(),
            message: format!("Stopping container {name}"),
            grace,
        }
    }
}

/// What of a pod still runs: its running (or created) containers, each to stop with
/// `grace`, and its ready sandboxes.
pub(crate) fn running_of(status: &PodStatus, grace: GracePeriod) -> (Vec<Stop>, Vec<String>) {
    (
        status
            .containers
            .iter()
            .filter(|c| matches!(c.state, ContainerState::Running | ContainerState::Created))
            .map(|c| Stop::new(&c.id, &c.name, grace))
            .collect(),
        status
            .sandboxes
            .iter()
            .filter(|s| s.state == SandboxState::Ready)
            .map(|s| s.id.clone())
            .collect(),
    )
}

/// The same, from the runtime's listing of a pod known only from the runtime (no spec at
/// hand): each container is given the grace period its pod had, which it carries as an
/// annotation, else `grace`.
pub(crate) fn running_of_listing(
    pod: &podvisor_cri::Pod,
    grace: GracePeriod,
) -> (Vec<Stop>, Vec<String>) {
    let own = |c: &podvisor_cri::Container| c.grace_period.map_or(grace, GracePeriod::from_seconds);
    (
        pod.containers
            .iter()
            .filter(|c| matches!(c.state, ContainerState::Running | ContainerState::Created))
            .map(|c| Stop::new(&c.id, &c.name, own(c)))
            .collect(),
        pod.sandboxes
            .iter()
            .filter(|s| s.state == SandboxState::Ready)
            .map(|s| s.id.clone())
            .collect(),
    )
}

/// The address hooks reach the pod at.
pub(crate) fn pod_ip(pod: &SharedPod, status: &PodStatus) -> String {
    match status.ips.first() {
        Some(ip) if !pod.host_network() => ip.clone(),
        _ => "127.0.0.1".to_string(),
    }
}

fn spec_of<'a>(pod: &'a SharedPod, name: &str) -> Option<&'a Container> {
    pod.init_containers()
        .iter()
        .chain(pod.containers())
        .find(|c| c.name == name)
}

impl CriSyncer {
    /// Stops the containers (concurrently, in the pod's termination order), then the
    /// sandboxes. What is gone already counts as stopped.
    pub(crate) async fn kill(
        &self,
        pod: &SharedPod,
        ip: &str,
        stops: &[Stop],
        sandboxes: &[String],
    ) -> Result<(), SyncError> {
        let names: Vec<&str> = stops.iter().map(|s| s.name.as_str()).collect();
        let order = stop_order(pod, &names);
        let done: HashMap<&str, CancellationToken> = names
            .iter()
            .map(|n| (*n, CancellationToken::new()))
            .collect();
        let results = join_all(stops.iter().map(|s| {
            let after: Vec<CancellationToken> = order
                .get(s.name.as_str())
                .into_iter()
                .flatten()
                .filter_map(|n| done.get(n.as_str()).cloned())
                .collect();
            let finished = done[s.name.as_str()].clone();
            async move {
                let r = self.stop_one(pod, ip, s, &after).await;
                finished.cancel();
                r
            }
        }))
        .await;
        results.into_iter().collect::<Result<(), SyncError>>()?;
        for id in sandboxes {
            match self.runtime.stop_sandbox(id).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    /// One container: its event, its preStop hook, its turn, then the runtime's stop.
    async fn stop_one(
        &self,
        pod: &SharedPod,
        ip: &str,
        s: &Stop,
        after: &[CancellationToken],
    ) -> Result<(), SyncError> {
        self.event(pod, EventType::Normal, "Killing", s.message.clone());
        let budget = s.grace.as_duration();
        let start = Instant::now();
        let hook =
            spec_of(pod, &s.name).and_then(|c| Some((c, c.lifecycle.as_ref()?.pre_stop.as_ref()?)));
        if let Some((c, h)) = hook {
            self.pre_stop(pod, ip, s, c, h, budget).await;
        }
        if !after.is_empty() {
            let rest = budget.saturating_sub(start.elapsed());
            let waits = join_all(after.iter().map(CancellationToken::cancelled));
            let _ = tokio::time::timeout(rest, waits).await;
        }
        let grace = if hook.is_some() || !after.is_empty() {
            budget.saturating_sub(start.elapsed()).max(MIN_WINDOW)
        } else {
            budget
        };
        match self.runtime.stop_container(&s.id, grace).await {
            Err(e) if !e.is_not_found() => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// Runs the preStop hook within `budget`; a failure is reported and the stop goes on.
    async fn pre_stop(
        &self,
        pod: &SharedPod,
        ip: &str,
        s: &Stop,
        c: &Container,
        h: &k8s_openapi::api::core::v1::LifecycleHandler,
        budget: Duration,
    ) {
        let action = match Action::of_hook(c, h) {
            Ok(a) => a,
            Err(e) => {
                warn!(pod_uid = %pod.uid(), container = %s.name, error = %e, "preStop hook cannot run");
                return self.event(
                    pod,
                    EventType::Warning,
                    "FailedPreStopHook",
                    "PreStopHook failed".into(),
                );
            }
        };
        let target = Target {
            runtime: self.runtime.clone(),
            container_id: s.id.clone(),
            pod_ip: ip.to_string(),
        };
        let who = format!("{}/{}", pod.namespace(), pod.name());
        let run = podvisor_probe::run::hook(&action, &target, &s.name, &who, Some(budget));
        match tokio::time::timeout(budget, run).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                warn!(pod_uid = %pod.uid(), container = %s.name, error = %e, "preStop hook failed");
                self.event(
                    pod,
                    EventType::Warning,
                    "FailedPreStopHook",
                    "PreStopHook failed".into(),
                );
            }
            Err(_) => {
                warn!(pod_uid = %pod.uid(), container = %s.name, grace = ?budget, "preStop hook outlasted the grace period");
            }
        }
    }
}
