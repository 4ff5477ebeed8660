//! The fake runtime's bookkeeping: sandboxes, containers and images, and the transitions
//! containerd applies to them. Plain data with no async and no clock of its own: callers
//! pass the time in, so every transition is deterministic.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::CriError;
use crate::labels;
use crate::model::*;
use crate::proto::{ContainerConfig, NamespaceMode, PodSandboxConfig};

use super::resources::applied;

/// How a fake container's process behaves once started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Exit on its own this long after starting (`None`: run until stopped).
    pub exits_after: Option<std::time::Duration>,
    pub exit_code: i32,
    /// Ignore SIGTERM: a stop takes the whole grace period and ends in SIGKILL (137).
    pub ignores_sigterm: bool,
    /// What `exec_sync` in this container answers.
    pub exec: ExecResult,
}

impl Default for Program {
    fn default() -> Self {
        Self {
            exits_after: None,
            exit_code: 0,
            ignores_sigterm: false,
            exec: ExecResult {
                stdout: Vec::new(),
                stderr: Vec::new(),
                exit_code: 0,
            },
        }
    }
}

impl Program {
    pub fn runs_forever() -> Self {
        Self::default()
    }

    pub fn exits_after(after: std::time::Duration, exit_code: i32) -> Self {
        Self {
            exits_after: Some(after),
            exit_code,
            ..Self::default()
        }
    }

    pub fn ignoring_sigterm(mut self) -> Self {
        self.ignores_sigterm = true;
        self
    }
}

pub(super) struct FakeSandbox {
    pub status: SandboxStatus,
    pub reserved_name: String,
    pub log_directory: String,
}

pub(super) struct FakeContainer {
    pub status: ContainerStatus,
    pub sandbox_id: String,
    pub program: Program,
    pub reserved_name: String,
}

/// Exit codes of a process killed by SIGTERM and SIGKILL.
pub const SIGTERM_EXIT: i32 = 143;
pub const SIGKILL_EXIT: i32 = 137;

#[derive(Default)]
pub(super) struct State {
    pub sandboxes: BTreeMap<String, FakeSandbox>,
    pub containers: BTreeMap<String, FakeContainer>,
    pub images: BTreeSet<String>,
    pub pullable: BTreeSet<String>,
    /// Images whose registry wants a login: the user it takes.
    pub logins: BTreeMap<String, String>,
    pub programs: BTreeMap<String, Program>,
    reserved: BTreeSet<String>,
    next_id: u64,
    next_ip: u32,
}

fn labels_of(map: &Labels) -> Labels {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

impl State {
    fn new_id(&mut self, kind: &str) -> String {
        self.next_id += 1;
        format!("{kind}{:060x}", self.next_id)
    }

    fn reserve(&mut self, op: &'static str, name: String) -> Result<String, CriError> {
        if !self.reserved.insert(name.clone()) {
            // containerd refuses a second sandbox/container with the same name and attempt.
            return Err(CriError::AlreadyExists {
                op,
                message: format!("failed to reserve name {name:?}: name is reserved"),
            });
        }
        Ok(name)
    }

    pub fn run_sandbox(&mut self, cfg: &PodSandboxConfig, now: i64) -> Result<String, CriError> {
        let meta = cfg.metadata.clone().unwrap_or_default();
        let reserved_name = self.reserve(
            "RunPodSandbox",
            format!(
                "{}_{}_{}_{}",
                meta.name, meta.namespace, meta.uid, meta.attempt
            ),
        )?;
        let host_network = cfg
            .linux
            .as_ref()
            .and_then(|l| l.security_context.as_ref())
            .and_then(|s| s.namespace_options.as_ref())
            .is_some_and(|n| n.network() == NamespaceMode::Node);
        let ip = (!host_network).then(|| {
            self.next_ip += 1;
            format!("10.88.{}.{}", self.next_ip / 250, self.next_ip % 250 + 2)
        });
        let id = self.new_id("s");
        let status = SandboxStatus {
            id: id.clone(),
            pod: PodRef {
                uid: meta.uid,
                name: meta.name,
                namespace: meta.namespace,
            },
            attempt: meta.attempt,
            state: SandboxState::Ready,
            created_at: now,
            ip,
            additional_ips: Vec::new(),
            host_network,
            labels: labels_of(&cfg.labels),
            annotations: labels_of(&cfg.annotations),
        };
        self.sandboxes.insert(
            id.clone(),
            FakeSandbox {
                status,
                reserved_name,
                log_directory: cfg.log_directory.clone(),
            },
        );
        Ok(id)
    }

    /// Stops a sandbox: every container in it is killed, then the sandbox is not ready.
    /// Returns the containers that stopped (for events).
    pub fn stop_sandbox(&mut self, id: &str, now: i64) -> Result<Vec<String>, CriError> {
        let sandbox = self
            .sandboxes
            .get_mut(id)
            .ok_or_else(|| CriError::not_found("StopPodSandbox", format!("sandbox {id}")))?;
        sandbox.status.state = SandboxState::NotReady;
        let running: Vec<String> = self
            .containers
            .iter()
            .filter(|(_, c)| c.sandbox_id == id && c.status.state == ContainerState::Running)
            .map(|(id, _)| id.clone())
            .collect();
        for cid in &running {
            self.exit(cid, SIGKILL_EXIT, "Error", now);
        }
        Ok(running)
    }

    pub fn remove_sandbox(&mut self, id: &str, now: i64) -> Result<Vec<String>, CriError> {
        if !self.sandboxes.contains_key(id) {
            // containerd treats removing a missing sandbox as done.
            return Ok(Vec::new());
        }
        self.stop_sandbox(id, now)?;
        let mine: Vec<String> = self
            .containers
            .iter()
            .filter(|(_, c)| c.sandbox_id == id)
            .map(|(id, _)| id.clone())
            .collect();
        for cid in &mine {
            self.remove_container(cid, now)?;
        }
        if let Some(s) = self.sandboxes.remove(id) {
            self.reserved.remove(&s.reserved_name);
        }
        Ok(mine)
    }

    /// The container's image, if it is present: by name, or by the id ImageStatus gave
    /// (what the kubelet layer passes, as with containerd).
    fn present_image(&self, cfg: &ContainerConfig) -> Result<String, CriError> {
        let image = cfg
            .image
            .as_ref()
            .map(|i| i.image.clone())
            .unwrap_or_default();
        if self
            .images
            .iter()
            .any(|i| *i == image || super::fake_image(i).id == image)
        {
            Ok(image)
        } else {
            Err(CriError::not_found(
                "CreateContainer",
                format!("image {image:?}"),
            ))
        }
    }

    pub fn create_container(
        &mut self,
        sandbox_id: &str,
        cfg: &ContainerConfig,
        now: i64,
    ) -> Result<String, CriError> {
        let sandbox = self.sandboxes.get(sandbox_id).ok_or_else(|| {
            CriError::not_found("CreateContainer", format!("sandbox {sandbox_id}"))
        })?;
        if sandbox.status.state != SandboxState::Ready {
            return Err(CriError::failed(
                "CreateContainer",
                format!("sandbox {sandbox_id} is not ready"),
            ));
        }
        let image = self.present_image(cfg)?;
        let meta = cfg.metadata.clone().unwrap_or_default();
        let pod = sandbox.status.pod.clone();
        let log_path = format!("{}/{}", sandbox.log_directory, cfg.log_path);
        let reserved_name = format!(
            "{}_{}_{}_{}_{}",
            meta.name, pod.name, pod.namespace, pod.uid, meta.attempt
        );
        let reserved_name = self.reserve("CreateContainer", reserved_name)?;
        let program = self.programs.get(&meta.name).cloned().unwrap_or_default();
        let id = self.new_id("c");
        let mut container_labels = labels_of(&cfg.labels);
        container_labels
            .entry(labels::POD_UID.to_string())
            .or_insert(pod.uid);
        let status = ContainerStatus {
            id: id.clone(),
            sandbox_id: sandbox_id.to_string(),
            name: meta.name,
            attempt: meta.attempt,
            state: ContainerState::Created,
            created_at: now,
            started_at: 0,
            finished_at: 0,
            exit_code: 0,
            image,
            image_ref: "sha256:fake".to_string(),
            reason: String::new(),
            message: String::new(),
            labels: container_labels,
            annotations: labels_of(&cfg.annotations),
            log_path,
            user: Some(ContainerUser::default()),
            resources: cfg
                .linux
                .as_ref()
                .and_then(|l| l.resources.as_ref())
                .map(applied),
        };
        self.containers.insert(
            id.clone(),
            FakeContainer {
                status,
                sandbox_id: sandbox_id.to_string(),
                program,
                reserved_name,
            },
        );
        Ok(id)
    }

    pub fn start_container(&mut self, id: &str, now: i64) -> Result<Program, CriError> {
        let c = self
            .containers
            .get_mut(id)
            .ok_or_else(|| CriError::not_found("StartContainer", format!("container {id}")))?;
        if c.status.state != ContainerState::Created {
            return Err(CriError::failed(
                "StartContainer",
                format!("container {id} is {:?}, not created", c.status.state),
            ));
        }
        c.status.state = ContainerState::Running;
        c.status.started_at = now;
        Ok(c.program.clone())
    }

    /// Marks a running container exited. Returns false if it was not running (so a timer
    /// racing with a stop never exits a container twice).
    pub fn exit(&mut self, id: &str, code: i32, reason: &str, now: i64) -> bool {
        match self.containers.get_mut(id) {
            Some(c) if c.status.state == ContainerState::Running => {
                c.status.state = ContainerState::Exited;
                c.status.exit_code = code;
                c.status.finished_at = now;
                c.status.reason = if code == 0 { "Completed" } else { reason }.to_string();
                true
            }
            _ => false,
        }
    }

    pub fn remove_container(&mut self, id: &str, now: i64) -> Result<(), CriError> {
        // Like containerd, removing a running container kills it first.
        self.exit(id, SIGKILL_EXIT, "Error", now);
        if let Some(c) = self.containers.remove(id) {
            self.reserved.remove(&c.reserved_name);
        }
        Ok(())
    }

    /// What containerd sends with an event: one sandbox and its containers (less `gone`).
    pub fn sandbox_snapshot(&self, sandbox_id: &str, gone: Option<&str>) -> PodStatus {
        let Some(sandbox) = self.sandboxes.get(sandbox_id) else {
            return PodStatus::default();
        };
        let containers = self
            .containers
            .values()
            .filter(|c| c.sandbox_id == sandbox_id && Some(c.status.id.as_str()) != gone)
            .map(|c| c.status.clone())
            .collect();
        let uid = sandbox.status.pod.uid.clone();
        PodStatus::assemble(&uid, vec![sandbox.status.clone()], containers)
    }

    pub fn pod_status(&self, uid: &str) -> PodStatus {
        let sandboxes = self
            .sandboxes
            .values()
            .filter(|s| s.status.pod.uid == uid)
            .map(|s| s.status.clone())
            .collect();
        let containers = self
            .containers
            .values()
            .filter(|c| c.status.labels.get(labels::POD_UID).map(String::as_str) == Some(uid))
            .map(|c| c.status.clone())
            .collect();
        PodStatus::assemble(uid, sandboxes, containers)
    }
}
