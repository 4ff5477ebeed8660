//! The desired pods (the kubelet's pod manager), as plain data: what each config source
//! wants, which pods were admitted or rejected, and what a source's new snapshot changes.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::{PodExt, PodUid, SharedPod};

use podvisor_core::fit::{Allocatable, Rejection, admit};

/// What a source's new snapshot means for one pod.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    Add(SharedPod),
    Update(SharedPod),
    Remove(SharedPod),
}

#[derive(Default)]
pub(crate) struct PodManager {
    expected_sources: BTreeSet<&'static str>,
    seen_sources: BTreeSet<&'static str>,
    by_source: BTreeMap<&'static str, BTreeMap<PodUid, SharedPod>>,
    admitted: BTreeMap<PodUid, SharedPod>,
    rejected: BTreeSet<PodUid>,
    /// Removed from config, not yet forgotten by the pod workers; with the pod if it had
    /// been admitted (it must be stopped).
    removed: BTreeMap<PodUid, Option<SharedPod>>,
    /// Admitted pods that have run to completion (still in config): they hold no
    /// resources, so admission does not count them.
    terminated: BTreeSet<PodUid>,
}

impl PodManager {
    pub(crate) fn new(expected_sources: impl IntoIterator<Item = &'static str>) -> Self {
        Self {
            expected_sources: expected_sources.into_iter().collect(),
            ..Default::default()
        }
    }

    /// Every expected source has sent at least one snapshot: anything else in the runtime
    /// is an orphan.
    pub(crate) fn all_sources_seen(&self) -> bool {
        self.expected_sources.is_subset(&self.seen_sources)
    }

    /// Takes a source's full snapshot and returns the changes, additions in a stable
    /// order (by namespace and name).
    pub(crate) fn set_source(&mut self, source: &'static str, pods: Vec<SharedPod>) -> Vec<Change> {
        self.seen_sources.insert(source);
        let old = self.by_source.remove(source).unwrap_or_default();
        // A pod that did not change stays the copy everyone already holds (the workers,
        // admission, the status manager): a source's fresh copy of it would be one more.
        let new: BTreeMap<PodUid, SharedPod> = pods
            .into_iter()
            .map(|p| match old.get(p.uid()) {
                Some(o) if *o == p => (p.uid().clone(), o.clone()),
                _ => (p.uid().clone(), p),
            })
            .collect();
        self.by_source.insert(source, new.clone());
        let mut changes = Vec::new();
        for (uid, p) in &old {
            if !new.contains_key(uid) {
                changes.push(Change::Remove(p.clone()));
            }
        }
        let mut added: Vec<&SharedPod> = Vec::new();
        for (uid, p) in &new {
            match old.get(uid) {
                None => added.push(p),
                Some(o) if o != p => changes.push(Change::Update(p.clone())),
                Some(_) => {}
            }
        }
        added.sort_by_key(|p| p.key());
        changes.extend(added.into_iter().map(|p| Change::Add(p.clone())));
        changes
    }

    /// Admits the pod (it will run) or rejects it (it is Failed and never runs).
    pub(crate) fn admit(&mut self, p: &SharedPod, node: &Allocatable) -> Result<(), Rejection> {
        let uid = p.uid().clone();
        if let Some(known) = self.admitted.get_mut(&uid) {
            *known = p.clone();
            return Ok(());
        }
        let active: Vec<&Pod> = self
            .admitted
            .iter()
            .filter(|(uid, p)| !self.terminated.contains(*uid) && !p.is_terminal())
            .map(|(_, p)| p.pod())
            .collect();
        match admit(p, &active, node) {
            Ok(()) => {
                self.removed.remove(&uid);
                self.admitted.insert(uid, p.clone());
                Ok(())
            }
            Err(r) => {
                self.rejected.insert(uid);
                Err(r)
            }
        }
    }

    /// Rejects the pod for a reason of the caller's (node pressure).
    pub(crate) fn reject(
        &mut self,
        p: &SharedPod,
        reason: &'static str,
        message: String,
    ) -> Rejection {
        if !self.admitted.contains_key(p.uid()) {
            self.rejected.insert(p.uid().clone());
        }
        Rejection { reason, message }
    }

    pub(crate) fn update(&mut self, p: &SharedPod) -> bool {
        match self.admitted.get_mut(p.uid()) {
            Some(old) => {
                *old = p.clone();
                true
            }
            None => false,
        }
    }

    /// The pod left its config: it no longer counts as admitted, and is remembered until
    /// the pod workers forget it.
    pub(crate) fn remove(&mut self, uid: &PodUid) -> bool {
        self.rejected.remove(uid);
        let admitted = self.admitted.remove(uid);
        let was_admitted = admitted.is_some();
        self.removed.insert(uid.clone(), admitted);
        was_admitted
    }

    /// Removed pods that had been admitted: what must be (or have been) stopped.
    pub(crate) fn removed_pods(&self) -> impl Iterator<Item = &SharedPod> {
        self.removed.values().flatten()
    }

    /// What the pod workers last said has terminated (from housekeeping).
    pub(crate) fn set_terminated(&mut self, uids: impl IntoIterator<Item = PodUid>) {
        self.terminated = uids.into_iter().collect();
    }

    pub(crate) fn get(&self, uid: &PodUid) -> Option<&SharedPod> {
        self.admitted.get(uid)
    }

    /// Pods that should run (admitted and still in config).
    pub(crate) fn desired(&self) -> Vec<SharedPod> {
        self.admitted.values().cloned().collect()
    }

    pub(crate) fn desired_uids(&self) -> HashSet<PodUid> {
        self.admitted.keys().cloned().collect()
    }

    /// Every UID whose status is still worth showing: listed by a source (running,
    /// completed or rejected) or removed and still being stopped.
    pub(crate) fn known_uids(&self) -> HashSet<PodUid> {
        self.by_source
            .values()
            .flat_map(|m| m.keys())
            .chain(self.removed.keys())
            .cloned()
            .collect()
    }

    pub(crate) fn removed(&self) -> impl Iterator<Item = &PodUid> {
        self.removed.keys()
    }

    pub(crate) fn forget_removed(&mut self, uid: &PodUid) {
        self.removed.remove(uid);
    }

    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.admitted.len(), self.rejected.len())
    }
}

/// The pod as the pod workers must see it once its config is gone: deleted now, with its
/// own grace period, or the shorter one its deletion already asked for (a forced API
/// delete says 0).
pub(crate) fn deleted(p: &SharedPod) -> SharedPod {
    let own = p.spec_grace_period().seconds();
    let asked = p.metadata.deletion_grace_period_seconds;
    let grace = asked.map_or(own, |a| a.clamp(0, own));
    p.edited(|p| {
        p.metadata
            .deletion_timestamp
            .get_or_insert_with(podvisor_core::time::now);
        p.metadata.deletion_grace_period_seconds = Some(grace);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(uid: &str, name: &str, v: &str) -> SharedPod {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(name.into());
        p.metadata.resource_version = Some(v.into());
        SharedPod::new(p).unwrap()
    }

    #[test]
    fn snapshots_become_adds_updates_and_removes() {
        let mut m = PodManager::new(["file"]);
        assert!(!m.all_sources_seen());
        let changes = m.set_source("file", vec![p("b", "zeta", "1"), p("a", "alpha", "1")]);
        assert_eq!(
            changes,
            [
                Change::Add(p("a", "alpha", "1")),
                Change::Add(p("b", "zeta", "1"))
            ]
        );
        assert!(m.all_sources_seen());
        let changes = m.set_source("file", vec![p("a", "alpha", "2"), p("c", "new", "1")]);
        assert_eq!(
            changes,
            [
                Change::Remove(p("b", "zeta", "1")),
                Change::Update(p("a", "alpha", "2")),
                Change::Add(p("c", "new", "1"))
            ]
        );
        assert!(
            m.set_source("file", vec![p("a", "alpha", "2"), p("c", "new", "1")])
                .is_empty()
        );
    }

    #[test]
    fn removal_forgets_admission_and_remembers_the_uid() {
        let mut m = PodManager::new(["file"]);
        let node = Allocatable {
            pods: 10,
            cpu_milli: 1000,
            memory_bytes: 1 << 30,
        };
        let a = p("a", "a", "1");
        m.admit(&a, &node).unwrap();
        assert_eq!(m.desired().len(), 1);
        assert!(m.remove(&PodUid::from("a")));
        assert!(m.desired().is_empty());
        assert_eq!(m.removed().collect::<Vec<_>>(), ["a"]);
        assert!(
            m.known_uids().contains(&PodUid::from("a")),
            "known until it is forgotten"
        );
        m.forget_removed(&PodUid::from("a"));
        assert!(m.known_uids().is_empty());
        let d = deleted(&a);
        assert!(d.metadata.deletion_timestamp.is_some());
        assert_eq!(d.metadata.deletion_grace_period_seconds, Some(30));
        let forced = a.edited(|p| p.metadata.deletion_grace_period_seconds = Some(0));
        assert_eq!(
            deleted(&forced).metadata.deletion_grace_period_seconds,
            Some(0),
            "a forced delete keeps its zero"
        );
        let longer = a.edited(|p| p.metadata.deletion_grace_period_seconds = Some(600));
        assert_eq!(
            deleted(&longer).metadata.deletion_grace_period_seconds,
            Some(30),
            "never longer than the pod's own"
        );
    }

    #[test]
    fn rejected_and_listed_pods_are_known() {
        let mut m = PodManager::new(["file"]);
        let none = Allocatable {
            pods: 0,
            cpu_milli: 1000,
            memory_bytes: 1 << 30,
        };
        m.set_source("file", vec![p("a", "a", "1")]);
        assert!(m.admit(&p("a", "a", "1"), &none).is_err());
        assert!(m.desired_uids().is_empty());
        assert_eq!(m.known_uids().into_iter().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn finished_pods_do_not_count_for_admission() {
        let mut m = PodManager::new(["file"]);
        let one = Allocatable {
            pods: 1,
            cpu_milli: 1000,
            memory_bytes: 1 << 30,
        };
        m.admit(&p("job", "job", "1"), &one).unwrap();
        assert_eq!(
            m.admit(&p("b", "b", "1"), &one).unwrap_err().reason,
            "OutOfpods"
        );
        m.set_terminated([PodUid::from("job")]);
        m.admit(&p("b", "b", "1"), &one).unwrap();
        // A pod known to have completed before a restart does not count either.
        let mut m = PodManager::new(["file"]);
        let mut done = (*p("job", "job", "1")).clone();
        done.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        m.admit(&SharedPod::new(done).unwrap(), &one).unwrap();
        m.admit(&p("b", "b", "1"), &one).unwrap();
    }
}
