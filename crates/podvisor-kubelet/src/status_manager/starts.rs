//! How long pods take to start, as the kubelet measures it (`kubelet_pod_start_duration_seconds`
//! and `kubelet_pod_start_sli_duration_seconds`), from the statuses the status manager
//! computes. A pod is tracked only if it had not started when this agent first saw it (a
//! pod adopted after a restart is not starting), once, and forgotten when it is.
//!
//! - *start duration*: from the first status this agent computed for the pod to the first
//!   one in phase Running (image pulls included);
//! - *start SLI*: from the pod's creation (its `creationTimestamp`; a static pod without
//!   one: when it was first seen) to the first status with every container running,
//!   without the time its init containers ran (the kubelet also leaves out image pulls:
//!   a pull is part of a container's creation here, and nothing can be pulled on a node
//!   without a registry, so none is left out).

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Pod, PodStatus as ApiPodStatus};
use podvisor_core::PodUid;
use tokio::time::Instant;

use crate::metrics::Metrics;

struct Starting {
    seen: Instant,
    created: SystemTime,
    running: bool,
}

#[derive(Default)]
pub(super) struct Starts {
    pods: HashMap<PodUid, Starting>,
    metrics: Metrics,
}

impl Starts {
    pub(super) fn new(metrics: Metrics) -> Self {
        Self {
            pods: HashMap::new(),
            metrics,
        }
    }

    /// Pod `uid` has `status` now, after `previous` (`None`: the first this agent made).
    pub(super) fn saw(
        &mut self,
        uid: &PodUid,
        pod: &Pod,
        previous: Option<&ApiPodStatus>,
        status: &ApiPodStatus,
    ) {
        if previous.is_none_or(|p| p.start_time.is_none()) && !self.pods.contains_key(uid) {
            if previous.is_some_and(|p| p.container_statuses.is_some()) {
                return; // known from before, never started: not a start we saw begin
            }
            let created =
                pod.metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or_else(SystemTime::now, |t| {
                        let nanos = u64::try_from(t.0.as_nanosecond()).unwrap_or(0);
                        SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos)
                    });
            self.pods.insert(
                uid.clone(),
                Starting {
                    seen: Instant::now(),
                    created,
                    running: false,
                },
            );
        }
        let Some(s) = self.pods.get_mut(uid) else {
            return;
        };
        if !s.running && status.phase.as_deref() == Some("Running") {
            s.running = true;
            let took = s.seen.elapsed().as_secs_f64();
            self.metrics.pod_start.observe(took);
        }
        if all_running(status) {
            let since = SystemTime::now()
                .duration_since(s.created)
                .unwrap_or_default();
            let sli = since.saturating_sub(init_time(status));
            self.metrics.pod_start_sli.observe(sli.as_secs_f64());
            self.pods.remove(uid);
        }
    }

    pub(super) fn forget(&mut self, uid: &PodUid) {
        self.pods.remove(uid);
    }
}

/// Every container is running (and there is at least one).
fn all_running(status: &ApiPodStatus) -> bool {
    let cs = status.container_statuses.as_deref().unwrap_or_default();
    !cs.is_empty()
        && cs
            .iter()
            .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// How long the init containers ran, one after another.
fn init_time(status: &ApiPodStatus) -> Duration {
    let inits = status
        .init_container_statuses
        .as_deref()
        .unwrap_or_default();
    inits
        .iter()
        .filter_map(|c| {
            let t = c.state.as_ref()?.terminated.as_ref()?;
            let (start, end) = (t.started_at.as_ref()?.0, t.finished_at.as_ref()?.0);
            let nanos = end.as_nanosecond() - start.as_nanosecond();
            u64::try_from(nanos).ok().map(Duration::from_nanos)
        })
        .sum()
}
