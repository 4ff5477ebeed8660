//! What the probes said of a pod's container instances, and how a container's `started`
//! and `ready` follow from it (the kubelet's `UpdatePodStatus`): without a startup probe a
//! running container has started; without a readiness probe a started one is ready; with
//! one, the probe's verdict on that very instance decides. Until a verdict arrives, the
//! status already published for that instance stands (so neither a restart of the agent
//! nor one of the prober makes a ready pod unready for a period); a new instance starts
//! not started and not ready.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, PodStatus as ApiPodStatus};
use podvisor_probe::{ProbeKind, ProbeResult};

/// The probes' verdicts for one pod: by container and kind, the instance and the verdict.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeResults(HashMap<(String, ProbeKind), (String, bool)>);

impl ProbeResults {
    pub(crate) fn set(&mut self, r: &ProbeResult) {
        self.0.insert(
            (r.container.clone(), r.kind),
            (r.container_id.clone(), r.passed),
        );
    }

    fn get(&self, container: &str, kind: ProbeKind, id: &str) -> Option<bool> {
        match self.0.get(&(container.to_string(), kind)) {
            Some((instance, passed)) if instance == id => Some(*passed),
            _ => None,
        }
    }
}

/// The container ID as statuses show it.
pub(crate) fn container_id(id: &str) -> String {
    format!("containerd://{id}")
}

/// What decides `started` and `ready` of a pod's running instances.
#[derive(Clone, Copy, Default)]
pub(crate) struct ProbeView<'a> {
    results: Option<&'a ProbeResults>,
    previous: Option<&'a ApiPodStatus>,
}

impl<'a> ProbeView<'a> {
    pub(crate) fn new(
        results: Option<&'a ProbeResults>,
        previous: Option<&'a ApiPodStatus>,
    ) -> Self {
        Self { results, previous }
    }

    /// What was published for this instance of `c`, if anything.
    fn published(&self, c: &Container, id: &str) -> Option<&'a ContainerStatus> {
        let want = container_id(id);
        let p = self.previous?;
        p.container_statuses
            .iter()
            .flatten()
            .chain(p.init_container_statuses.iter().flatten())
            .find(|s| s.name == c.name && s.container_id.as_deref() == Some(want.as_str()))
    }

    fn verdict(&self, c: &Container, kind: ProbeKind, id: &str) -> Option<bool> {
        self.results.and_then(|r| r.get(&c.name, kind, id))
    }

    /// Whether running instance `id` of `c` has started.
    pub(crate) fn started(&self, c: &Container, id: &str) -> bool {
        if c.startup_probe.is_none() {
            return true;
        }
        self.verdict(c, ProbeKind::Startup, id)
            .or_else(|| self.published(c, id).and_then(|s| s.started))
            .unwrap_or(false)
    }

    /// Whether running instance `id` of `c` is ready.
    pub(crate) fn ready(&self, c: &Container, id: &str) -> bool {
        if !self.started(c, id) {
            return false;
        }
        if c.readiness_probe.is_none() {
            return true;
        }
        self.verdict(c, ProbeKind::Readiness, id)
            .or_else(|| self.published(c, id).map(|s| s.ready))
            .unwrap_or(false)
    }
}
