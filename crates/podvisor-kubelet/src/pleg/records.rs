//! The relist diff, as plain data: the previous and current runtime record of every pod,
//! and the lifecycle events that turn one into the other.

use std::collections::{BTreeSet, HashMap};

use podvisor_cri::{ContainerEventKind, ContainerState, ListedIds, Pod, PodStatus, SandboxState};

use podvisor_core::PodUid;

use crate::protocol::lifecycle::{PlegEventKind, PodLifecycleEvent};

/// A container's (or sandbox's) state as far as events are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Running,
    Exited,
    /// Created but not started, or state unknown: something changed, nothing to name.
    Unknown,
    Absent,
}

impl From<ContainerState> for Seen {
    fn from(s: ContainerState) -> Self {
        match s {
            ContainerState::Running => Seen::Running,
            ContainerState::Exited => Seen::Exited,
            ContainerState::Created | ContainerState::Unknown => Seen::Unknown,
        }
    }
}

impl From<SandboxState> for Seen {
    fn from(s: SandboxState) -> Self {
        match s {
            SandboxState::Ready => Seen::Running,
            SandboxState::NotReady => Seen::Exited,
        }
    }
}

/// One container in a runtime record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ContainerRecord {
    id: String,
    name: String,
    sandbox_id: String,
    seen: Seen,
}

/// What the diff needs of a pod's runtime record: ids, names and states, nothing else
/// (labels and images are dropped on the way in), so comparing two relists is cheap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RuntimeRecord {
    containers: Vec<ContainerRecord>,
    sandboxes: Vec<(String, Seen)>,
}

impl From<Pod> for RuntimeRecord {
    fn from(p: Pod) -> Self {
        Self {
            containers: p
                .containers
                .into_iter()
                .map(|c| ContainerRecord {
                    seen: c.state.into(),
                    id: c.id,
                    name: c.name,
                    sandbox_id: c.sandbox_id,
                })
                .collect(),
            sandboxes: p
                .sandboxes
                .into_iter()
                .map(|s| {
                    let state = s.state.into();
                    (s.id, state)
                })
                .collect(),
        }
    }
}

impl RuntimeRecord {
    fn container(&self, id: &str) -> Seen {
        self.containers
            .iter()
            .find(|c| c.id == id)
            .map_or(Seen::Absent, |c| c.seen)
    }

    fn sandbox(&self, id: &str) -> Seen {
        self.sandboxes
            .iter()
            .find(|s| s.0 == id)
            .map_or(Seen::Absent, |s| s.1)
    }
}

fn state_of(r: Option<&RuntimeRecord>, id: &str, sandbox: bool) -> Seen {
    match r {
        None => Seen::Absent,
        Some(r) if sandbox => r.sandbox(id),
        Some(r) => r.container(id),
    }
}

/// The events for one container whose state went from `old` to `new`.
fn transition(old: Seen, new: Seen) -> &'static [PlegEventKind] {
    use PlegEventKind::*;
    if old == new {
        return &[];
    }
    match new {
        Seen::Running => &[ContainerStarted],
        Seen::Exited => &[ContainerDied],
        Seen::Unknown => &[ContainerChanged],
        // Seen exiting before: it is only gone now. Otherwise it died unseen, then went.
        Seen::Absent if old == Seen::Exited => &[ContainerRemoved],
        Seen::Absent => &[ContainerDied, ContainerRemoved],
    }
}

/// Every event that turns `old` into `new` for pod `uid`. Container changes give
/// container events; a change of the sandboxes alone gives one `PodSync`.
pub(crate) fn compute_events(
    uid: &PodUid,
    old: Option<&RuntimeRecord>,
    new: Option<&RuntimeRecord>,
) -> Vec<PodLifecycleEvent> {
    if old == new {
        return Vec::new();
    }
    let mut events = Vec::new();
    let mut seen = BTreeSet::new();
    for ContainerRecord { id, name, .. } in old.iter().chain(new.iter()).flat_map(|r| &r.containers)
    {
        if !seen.insert(id.as_str()) {
            continue;
        }
        for kind in transition(state_of(old, id, false), state_of(new, id, false)) {
            events.push(PodLifecycleEvent {
                uid: uid.clone(),
                kind: *kind,
                id: id.clone(),
                container: name.clone(),
            });
        }
    }
    if events.is_empty() {
        let changed = old
            .iter()
            .chain(new.iter())
            .flat_map(|r| &r.sandboxes)
            .map(|(id, _)| id)
            .find(|id| state_of(old, id, true) != state_of(new, id, true));
        if let Some(id) = changed {
            events.push(PodLifecycleEvent {
                uid: uid.clone(),
                kind: PlegEventKind::PodSync,
                id: id.clone(),
                container: String::new(),
            });
        }
    }
    events
}

/// The events a CRI container event stands for (evented mode). `Created` stands for none:
/// the start that follows is what matters.
pub(crate) fn translate(kind: ContainerEventKind) -> &'static [PlegEventKind] {
    use PlegEventKind::*;
    match kind {
        ContainerEventKind::Created => &[],
        ContainerEventKind::Started => &[ContainerStarted],
        ContainerEventKind::Stopped => &[ContainerDied],
        ContainerEventKind::Deleted => &[ContainerDied, ContainerRemoved],
    }
}

/// A pod's record rebuilt from its full status, so a targeted re-inspection is diffed
/// like a relist. `None` when the runtime holds nothing of the pod.
pub(crate) fn record_from_status(status: &PodStatus) -> Option<RuntimeRecord> {
    if status.sandboxes.is_empty() && status.containers.is_empty() {
        return None;
    }
    Some(RuntimeRecord {
        containers: status
            .containers
            .iter()
            .map(|c| ContainerRecord {
                id: c.id.clone(),
                name: c.name.clone(),
                sandbox_id: c.sandbox_id.clone(),
                seen: c.state.into(),
            })
            .collect(),
        sandboxes: status
            .sandboxes
            .iter()
            .map(|s| (s.id.clone(), s.state.into()))
            .collect(),
    })
}

#[derive(Default)]
struct Record {
    old: Option<RuntimeRecord>,
    current: Option<RuntimeRecord>,
}

impl Record {
    /// The pod's events were delivered: current becomes old. `false`: it is gone.
    fn settle(&mut self) -> bool {
        match self.current.take() {
            Some(r) => {
                self.old = Some(r);
                true
            }
            None => false,
        }
    }
}

/// The previous ("old") and latest ("current") runtime record of every pod.
#[derive(Default)]
pub struct PodRecords {
    pods: HashMap<PodUid, Record>,
}

impl PodRecords {
    /// Takes a relist: every known pod's current record becomes what the runtime listed
    /// (nothing, if it is gone).
    pub fn set_current(&mut self, pods: Vec<Pod>) {
        for r in self.pods.values_mut() {
            r.current = None;
        }
        for mut pod in pods {
            // The listing is ours: move the UID out instead of copying it.
            let uid = PodUid::from(std::mem::take(&mut pod.pod.uid));
            self.pods.entry(uid).or_default().current = Some(pod.into());
        }
    }

    /// Sets one pod's current record (a targeted re-inspection).
    pub(crate) fn set_one(&mut self, uid: &PodUid, record: Option<RuntimeRecord>) {
        self.pods.entry(uid.clone()).or_default().current = record;
    }

    pub(crate) fn events(&self, uid: &PodUid) -> Vec<PodLifecycleEvent> {
        match self.pods.get(uid) {
            Some(r) => compute_events(uid, r.old.as_ref(), r.current.as_ref()),
            None => Vec::new(),
        }
    }

    /// The diff of a whole relist in one pass: settles every pod with nothing to report
    /// (unless `force` says it must be inspected anyway) and returns the others with their
    /// events, to settle with [`PodRecords::update`] once inspected.
    pub fn changes(
        &mut self,
        force: impl Fn(&PodUid) -> bool,
    ) -> Vec<(PodUid, Vec<PodLifecycleEvent>)> {
        let mut out = Vec::new();
        self.pods.retain(|uid, r| {
            let events = compute_events(uid, r.old.as_ref(), r.current.as_ref());
            if events.is_empty() && !force(uid) {
                return r.settle();
            }
            out.push((uid.clone(), events));
            true
        });
        out
    }

    /// The pod's events have been delivered: current becomes old; a pod that is gone is
    /// forgotten.
    pub fn update(&mut self, uid: &PodUid) {
        if let Some(r) = self.pods.get_mut(uid)
            && !r.settle()
        {
            self.pods.remove(uid);
        }
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub(crate) fn contains(&self, uid: &PodUid) -> bool {
        self.pods.contains_key(uid)
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The ids the latest relist showed of pod `uid` (none if it showed nothing).
    pub(crate) fn listed(&self, uid: &PodUid) -> ListedIds {
        let Some(r) = self.pods.get(uid).and_then(|r| r.current.as_ref()) else {
            return ListedIds::default();
        };
        ListedIds {
            sandboxes: r.sandboxes.iter().map(|(id, _)| id.clone()).collect(),
            containers: r
                .containers
                .iter()
                .map(|c| (c.id.clone(), c.sandbox_id.clone()))
                .collect(),
        }
    }

    /// A container's name, from the last records (a deleted container is no longer in
    /// the runtime to ask).
    pub(crate) fn container_name(&self, uid: &PodUid, container_id: &str) -> Option<String> {
        let r = self.pods.get(uid)?;
        r.current
            .iter()
            .chain(r.old.iter())
            .flat_map(|p| &p.containers)
            .find(|c| c.id == container_id)
            .map(|c| c.name.clone())
    }

    /// Whether the pod's latest record shows container `id` started: running, or exited
    /// since.
    pub(crate) fn shows_started(&self, uid: &PodUid, id: &str) -> bool {
        let Some(r) = self.pods.get(uid) else {
            return false;
        };
        let latest = r.current.as_ref().or(r.old.as_ref());
        matches!(
            latest.map(|l| l.container(id)),
            Some(Seen::Running | Seen::Exited)
        )
    }

    /// The pod's one sandbox by its latest record, if it has exactly one.
    pub(crate) fn only_sandbox(&self, uid: &PodUid) -> Option<&str> {
        let r = self.pods.get(uid)?;
        match r.current.as_ref().or(r.old.as_ref())?.sandboxes.as_slice() {
            [(id, _)] => Some(id),
            _ => None,
        }
    }

    /// The pod a container belongs to, from the last records.
    pub(crate) fn pod_of_container(&self, container_id: &str) -> Option<PodUid> {
        self.pods.iter().find_map(|(uid, r)| {
            r.old
                .iter()
                .chain(r.current.iter())
                .any(|p| p.containers.iter().any(|c| c.id == container_id))
                .then(|| uid.clone())
        })
    }
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
