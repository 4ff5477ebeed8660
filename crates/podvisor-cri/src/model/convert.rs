//! From CRI's protobuf messages to the model's plain types.

use super::*;

fn labels(map: Labels) -> Labels {
    map
}

fn pod_ref(meta: Option<proto::PodSandboxMetadata>) -> (PodRef, u32) {
    let m = meta.unwrap_or_default();
    (
        PodRef {
            uid: m.uid,
            name: m.name,
            namespace: m.namespace,
        },
        m.attempt,
    )
}

impl From<proto::PodSandboxState> for SandboxState {
    fn from(s: proto::PodSandboxState) -> Self {
        match s {
            proto::PodSandboxState::SandboxReady => Self::Ready,
            proto::PodSandboxState::SandboxNotready => Self::NotReady,
        }
    }
}

impl From<SandboxState> for proto::PodSandboxState {
    fn from(s: SandboxState) -> Self {
        match s {
            SandboxState::Ready => Self::SandboxReady,
            SandboxState::NotReady => Self::SandboxNotready,
        }
    }
}

impl From<proto::ContainerState> for ContainerState {
    fn from(s: proto::ContainerState) -> Self {
        match s {
            proto::ContainerState::ContainerCreated => Self::Created,
            proto::ContainerState::ContainerRunning => Self::Running,
            proto::ContainerState::ContainerExited => Self::Exited,
            proto::ContainerState::ContainerUnknown => Self::Unknown,
        }
    }
}

impl From<ContainerState> for proto::ContainerState {
    fn from(s: ContainerState) -> Self {
        match s {
            ContainerState::Created => Self::ContainerCreated,
            ContainerState::Running => Self::ContainerRunning,
            ContainerState::Exited => Self::ContainerExited,
            ContainerState::Unknown => Self::ContainerUnknown,
        }
    }
}

impl From<proto::PodSandboxStatus> for SandboxStatus {
    fn from(s: proto::PodSandboxStatus) -> Self {
        let state = s.state().into();
        let (pod, attempt) = pod_ref(s.metadata);
        let host_network = s
            .linux
            .as_ref()
            .and_then(|l| l.namespaces.as_ref())
            .and_then(|n| n.options.as_ref())
            .is_some_and(|o| o.network() == proto::NamespaceMode::Node);
        let network = s.network.unwrap_or_default();
        Self {
            id: s.id,
            pod,
            attempt,
            state,
            created_at: s.created_at,
            ip: Some(network.ip).filter(|ip| !ip.is_empty()),
            additional_ips: network.additional_ips.into_iter().map(|i| i.ip).collect(),
            host_network,
            labels: labels(s.labels),
            annotations: labels(s.annotations),
        }
    }
}

impl From<proto::ContainerStatus> for ContainerStatus {
    fn from(c: proto::ContainerStatus) -> Self {
        let state = c.state().into();
        let meta = c.metadata.unwrap_or_default();
        let mut status = Self {
            id: c.id,
            sandbox_id: String::new(),
            name: meta.name,
            attempt: meta.attempt,
            state,
            created_at: c.created_at,
            started_at: c.started_at,
            finished_at: c.finished_at,
            exit_code: c.exit_code,
            image: c.image.map(|i| i.image).unwrap_or_default(),
            image_ref: c.image_ref,
            reason: c.reason,
            message: c.message,
            labels: labels(c.labels),
            annotations: labels(c.annotations),
            log_path: c.log_path,
            user: c.user.and_then(|u| u.linux).map(|l| ContainerUser {
                uid: l.uid,
                gid: l.gid,
                supplemental_groups: l.supplemental_groups,
            }),
            resources: c
                .resources
                .and_then(|r| r.linux)
                .map(|l| ContainerResources {
                    cpu_shares: l.cpu_shares,
                    cpu_quota: l.cpu_quota,
                    cpu_period: l.cpu_period,
                    memory_limit: l.memory_limit_in_bytes,
                }),
        };
        if let Some(m) = super::termination::message(&status) {
            status.message = m;
        }
        status
    }
}

impl From<proto::Image> for Image {
    fn from(i: proto::Image) -> Self {
        Self {
            id: i.id,
            repo_tags: i.repo_tags,
            repo_digests: i.repo_digests,
            size: i.size,
            pinned: i.pinned,
            user: match i.uid {
                Some(uid) => ImageUser::Uid(uid.value),
                None => ImageUser::Name(i.username),
            },
        }
    }
}

impl From<proto::ContainerEventType> for ContainerEventKind {
    fn from(t: proto::ContainerEventType) -> Self {
        match t {
            proto::ContainerEventType::ContainerCreatedEvent => Self::Created,
            proto::ContainerEventType::ContainerStartedEvent => Self::Started,
            proto::ContainerEventType::ContainerStoppedEvent => Self::Stopped,
            proto::ContainerEventType::ContainerDeletedEvent => Self::Deleted,
        }
    }
}

impl From<proto::ContainerEventResponse> for ContainerEvent {
    fn from(e: proto::ContainerEventResponse) -> Self {
        let kind = e.container_event_type().into();
        let Some(sandbox) = e.pod_sandbox_status.map(SandboxStatus::from) else {
            return Self {
                container_id: e.container_id,
                kind,
                created_at: e.created_at,
                pod: None,
                pod_labels: Labels::new(),
                snapshot: None,
            };
        };
        let containers = e
            .containers_statuses
            .into_iter()
            .map(|c| ContainerStatus {
                sandbox_id: sandbox.id.clone(),
                ..c.into()
            })
            .collect();
        let (pod, pod_labels) = (sandbox.pod.clone(), sandbox.labels.clone());
        let snapshot = PodStatus::assemble(&pod.uid, vec![sandbox], containers);
        Self {
            container_id: e.container_id,
            kind,
            created_at: e.created_at,
            pod: Some(pod),
            pod_labels,
            snapshot: Some(Box::new(snapshot)),
        }
    }
}

/// Groups listed sandboxes and containers into pods by UID. A container joins the pod of
/// its sandbox; one whose sandbox is gone falls back to its pod-UID label, so a container
/// orphaned by a half-finished teardown is still found and cleaned up.
pub fn group_pods(sandboxes: Vec<Sandbox>, containers: Vec<Container>) -> Vec<Pod> {
    let mut pods: BTreeMap<String, Pod> = BTreeMap::new();
    let mut uid_of_sandbox = std::collections::HashMap::new();
    for s in sandboxes {
        uid_of_sandbox.insert(s.id.clone(), s.pod.uid.clone());
        let pod = pods.entry(s.pod.uid.clone()).or_default();
        if pod.pod.uid.is_empty() {
            pod.pod = s.pod.clone();
        }
        pod.sandboxes.push(s);
    }
    for c in containers {
        let (uid, labelled) = match uid_of_sandbox.get(&c.sandbox_id) {
            Some(uid) => (uid.clone(), None),
            None => {
                let named = c.labelled_pod.clone().unwrap_or_default();
                (named.uid.clone(), Some(named))
            }
        };
        let pod = pods.entry(uid).or_default();
        if pod.pod.uid.is_empty()
            && let Some(named) = labelled
        {
            pod.pod = named;
        }
        pod.containers.push(c);
    }
    for pod in pods.values_mut() {
        pod.sandboxes
            .sort_by_key(|s| std::cmp::Reverse(s.created_at));
        pod.containers
            .sort_by_key(|c| std::cmp::Reverse(c.created_at));
    }
    pods.into_values().collect()
}
