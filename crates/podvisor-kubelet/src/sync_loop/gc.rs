//! Which of one pod's dead containers and sandboxes may go (the kubelet's container GC,
//! per pod): plain data, so the rules are tested without a runtime.
//!
//! Kept: every running container; the newest few exited instances per container name
//! (their exit codes and times are the pod's last states and restart counts, and its
//! crash-loop backoff); the newest instance of every name whatever its state (a `Created`
//! one may be being started right now); the newest sandbox; any sandbox that still holds a
//! kept container (removing a sandbox removes its containers with it).

use std::collections::BTreeMap;

use podvisor_cri::{ContainerState, PodStatus, Runtime, SandboxState};
use tracing::debug;

#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Garbage {
    /// `(container id, log file)`; the log goes with the container.
    pub containers: Vec<(String, String)>,
    pub sandboxes: Vec<String>,
}

pub(crate) fn garbage(status: &PodStatus, keep_exited: usize) -> Garbage {
    let mut out = Garbage::default();
    let mut exited_seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut newest_seen: BTreeMap<&str, ()> = BTreeMap::new();
    let mut kept_created_at = Vec::new();
    // Newest first, as `PodStatus` holds them.
    for c in &status.containers {
        let newest = newest_seen.insert(c.name.as_str(), ()).is_none();
        let remove = match c.state {
            ContainerState::Running | ContainerState::Unknown => false,
            ContainerState::Created => !newest,
            ContainerState::Exited => {
                let n = exited_seen.entry(c.name.as_str()).or_default();
                *n += 1;
                *n > keep_exited && !newest
            }
        };
        if remove {
            out.containers.push((c.id.clone(), c.log_path.clone()));
        } else {
            kept_created_at.push(c.created_at);
        }
    }
    // A container belongs to the newest sandbox created before it.
    let holds_kept = |i: usize| {
        let start = status.sandboxes[i].created_at;
        let end = i
            .checked_sub(1)
            .map_or(i64::MAX, |newer| status.sandboxes[newer].created_at);
        kept_created_at.iter().any(|&t| t >= start && t < end)
    };
    for (i, s) in status.sandboxes.iter().enumerate().skip(1) {
        if s.state == SandboxState::NotReady && !holds_kept(i) {
            out.sandboxes.push(s.id.clone());
        }
    }
    out
}

/// Removes one pod's garbage (its dead containers with their logs, then its dead
/// sandboxes): how many containers went.
pub(crate) async fn remove(runtime: &dyn Runtime, uid: &str, garbage: Garbage) -> usize {
    let mut removed = 0;
    for (id, log) in garbage.containers {
        debug!(pod_uid = %uid, id = %id, "removing dead container");
        if runtime.remove_container(&id).await.is_ok() {
            removed += 1;
            if std::path::Path::new(&log).is_absolute() {
                let _ = tokio::fs::remove_file(&log).await;
                let log = std::path::PathBuf::from(log);
                let _ =
                    tokio::task::spawn_blocking(move || crate::log_rotation::remove_rotated(&log))
                        .await;
            }
        }
    }
    for id in garbage.sandboxes {
        debug!(pod_uid = %uid, sandbox = %id, "removing dead sandbox");
        let _ = runtime.remove_sandbox(&id).await;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_cri::{ContainerStatus, PodRef, SandboxStatus};

    fn sb(id: &str, created: i64, ready: bool) -> SandboxStatus {
        SandboxStatus {
            id: id.into(),
            pod: PodRef::default(),
            attempt: 0,
            state: if ready {
                SandboxState::Ready
            } else {
                SandboxState::NotReady
            },
            created_at: created,
            ip: None,
            additional_ips: vec![],
            host_network: false,
            labels: Default::default(),
            annotations: Default::default(),
        }
    }

    fn c(name: &str, created: i64, state: ContainerState) -> ContainerStatus {
        ContainerStatus {
            id: format!("{name}-{created}"),
            sandbox_id: String::new(),
            name: name.into(),
            attempt: 0,
            state,
            created_at: created,
            started_at: created,
            finished_at: 0,
            exit_code: 0,
            image: String::new(),
            image_ref: String::new(),
            reason: String::new(),
            message: String::new(),
            labels: Default::default(),
            annotations: Default::default(),
            log_path: format!("/logs/{name}/{created}.log"),
            user: None,
            resources: None,
        }
    }

    fn pod(sandboxes: Vec<SandboxStatus>, mut containers: Vec<ContainerStatus>) -> PodStatus {
        containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        let mut sandboxes = sandboxes;
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        PodStatus {
            sandboxes,
            containers,
            ..Default::default()
        }
    }

    #[test]
    fn a_crash_loop_keeps_its_newest_exited_instances_and_their_logs_go_with_the_rest() {
        use ContainerState::*;
        let s = pod(
            vec![sb("s0", 0, true)],
            vec![
                c("a", 1, Exited),
                c("a", 2, Exited),
                c("a", 3, Exited),
                c("a", 4, Running),
            ],
        );
        let g = garbage(&s, 2);
        assert_eq!(
            g.containers,
            [("a-1".to_string(), "/logs/a/1.log".to_string())]
        );
        assert!(g.sandboxes.is_empty());
    }

    #[test]
    fn a_stale_created_container_goes_but_the_newest_may_be_starting() {
        use ContainerState::*;
        let s = pod(
            vec![sb("s0", 0, true)],
            vec![c("a", 1, Created), c("a", 2, Created)],
        );
        let g = garbage(&s, 2);
        assert_eq!(g.containers.len(), 1);
        assert_eq!(g.containers[0].0, "a-1");
    }

    #[test]
    fn an_old_sandbox_holding_a_kept_container_stays() {
        use ContainerState::*;
        // OnFailure after a reboot: "done" succeeded in s0 and is not run again, so its
        // record (and s0) must stay; "failed" runs again in s1.
        let s = pod(
            vec![sb("s0", 0, false), sb("s1", 10, true)],
            vec![
                c("done", 1, Exited),
                c("failed", 2, Exited),
                c("failed", 11, Running),
            ],
        );
        assert_eq!(garbage(&s, 2), Garbage::default());
        // An old sandbox whose containers are all gone is removed.
        let s = pod(
            vec![sb("s0", 0, false), sb("s1", 10, false), sb("s2", 20, true)],
            vec![c("a", 11, Exited), c("a", 21, Running)],
        );
        assert_eq!(garbage(&s, 2).sandboxes, ["s0"]);
        // The newest sandbox always stays, even dead.
        let s = pod(vec![sb("s0", 0, false)], vec![]);
        assert!(garbage(&s, 2).sandboxes.is_empty());
    }
}
