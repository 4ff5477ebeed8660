//! A node's own CRI configs, recorded through `podvisor-cri-proxy` while it started a pod,
//! and started again raw under a new name: the runtime's floor for the pod a node really
//! asks for, where [`crate::floor`] starts a minimal one. Each [`Variant`] leaves one part of
//! the node's configs out, so the difference says what that part costs inside the runtime.

use std::time::Instant;

use podvisor_cri::CriClient;
use podvisor_cri::proto::{
    ContainerConfig, CreateContainerRequest, PodSandboxConfig, RunPodSandboxRequest,
};
use podvisor_cri_proxy::Call;
use prost::Message;

use crate::floor::{PodStart, RawPod};

/// The sandbox and container configs a node sent for one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub sandbox: PodSandboxConfig,
    pub runtime_handler: String,
    pub container: ContainerConfig,
}

/// The message of a recorded gRPC request body (one frame: a flag byte, a 4-byte length).
fn decode<M: Message + Default>(body: &[u8]) -> Option<M> {
    let len = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
    M::decode(body.get(5..5 + len)?).ok()
}

impl Recorded {
    /// The last RunPodSandbox and CreateContainer among `calls` about pod `uid`.
    pub fn from_calls(calls: &[Call], uid: &str) -> Option<Self> {
        let last = |method: &str| {
            calls
                .iter()
                .rev()
                .find(|c| c.method == method && c.mentions(uid))
        };
        let run: RunPodSandboxRequest = decode(&last("RunPodSandbox")?.body)?;
        let create: CreateContainerRequest = decode(&last("CreateContainer")?.body)?;
        Some(Self {
            sandbox: run.config?,
            runtime_handler: run.runtime_handler,
            container: create.config?,
        })
    }

    fn uid(&self) -> &str {
        self.sandbox
            .metadata
            .as_ref()
            .map_or("", |m| m.uid.as_str())
    }

    /// The same pod as a new one: its UID, name, labels, annotations, cgroup parent and log
    /// directory say `uid` and `name`. Its mounts still name the recorded pod's files (the
    /// node made them; they stay while that pod runs).
    pub fn renamed(&self, uid: &str, name: &str) -> Self {
        let old = self.uid().to_string();
        let swap = |s: &str| {
            if old.is_empty() {
                s.to_string()
            } else {
                s.replace(&old, uid)
            }
        };
        let mut r = self.clone();
        if let Some(m) = r.sandbox.metadata.as_mut() {
            m.uid = uid.to_string();
            m.name = name.to_string();
        }
        for map in [
            &mut r.sandbox.labels,
            &mut r.sandbox.annotations,
            &mut r.container.labels,
            &mut r.container.annotations,
        ] {
            map.values_mut().for_each(|v| *v = swap(v));
        }
        r.sandbox.log_directory = swap(&r.sandbox.log_directory);
        if let Some(l) = r.sandbox.linux.as_mut() {
            l.cgroup_parent = swap(&l.cgroup_parent);
        }
        r
    }

    /// Starts this pod: RunPodSandbox, CreateContainer, StartContainer, as the floor does.
    pub async fn start(&self, cri: &CriClient) -> anyhow::Result<(RawPod, PodStart)> {
        std::fs::create_dir_all(&self.sandbox.log_directory)?;
        let t0 = Instant::now();
        let sandbox_id = cri
            .run_pod_sandbox(self.sandbox.clone(), &self.runtime_handler)
            .await?;
        let t1 = Instant::now();
        let container = cri
            .create_container(&sandbox_id, self.container.clone(), self.sandbox.clone())
            .await;
        let pod = RawPod {
            uid: self.uid().to_string(),
            sandbox_id,
            container_id: container.as_ref().cloned().unwrap_or_default(),
        };
        if let Err(e) = async { cri.start_container(&container?).await }.await {
            let _ = cri.stop_pod_sandbox(&pod.sandbox_id).await;
            let _ = cri.remove_pod_sandbox(&pod.sandbox_id).await;
            return Err(e.into());
        }
        let t2 = Instant::now();
        Ok((
            pod,
            PodStart {
                sandbox: t1 - t0,
                container: t2 - t1,
            },
        ))
    }
}

/// One part of a node's configs left out (or none: `AsSent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    AsSent,
    NoCgroupParent,
    NoDns,
    NoMounts,
    NoContainerLinux,
    NoSandboxSecurity,
    NoEnv,
}

impl Variant {
    pub const ALL: [Variant; 7] = [
        Variant::AsSent,
        Variant::NoCgroupParent,
        Variant::NoDns,
        Variant::NoMounts,
        Variant::NoContainerLinux,
        Variant::NoSandboxSecurity,
        Variant::NoEnv,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Variant::AsSent => "as the node sent them",
            Variant::NoCgroupParent => "without the cgroup parent",
            Variant::NoDns => "without the DNS config",
            Variant::NoMounts => "without the container's mounts",
            Variant::NoContainerLinux => "without the container's resources and security",
            Variant::NoSandboxSecurity => "without the sandbox's security context but namespaces",
            Variant::NoEnv => "without the container's environment",
        }
    }

    /// `r` with this variant's part left out.
    pub fn apply(self, r: &Recorded) -> Recorded {
        let mut r = r.clone();
        let linux = r.sandbox.linux.get_or_insert_with(Default::default);
        match self {
            Variant::AsSent => {}
            Variant::NoCgroupParent => linux.cgroup_parent.clear(),
            Variant::NoDns => r.sandbox.dns_config = None,
            Variant::NoMounts => r.container.mounts.clear(),
            Variant::NoContainerLinux => r.container.linux = None,
            Variant::NoSandboxSecurity => {
                let namespaces = linux
                    .security_context
                    .as_ref()
                    .and_then(|s| s.namespace_options.clone());
                linux.security_context = Some(Default::default());
                linux.security_context.as_mut().unwrap().namespace_options = namespaces;
            }
            Variant::NoEnv => r.container.envs.clear(),
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_cri::proto::{KeyValue, LinuxPodSandboxConfig, Mount, PodSandboxMetadata};
    use podvisor_cri::sample;

    fn recorded() -> Recorded {
        let uid = "0b7c-uid";
        let mut sandbox = sample::sandbox_config(uid, "s-0", false, &format!("/logs/ns_s-0_{uid}"));
        sandbox.linux.as_mut().unwrap().cgroup_parent = format!("/kubepods/besteffort/pod{uid}");
        sandbox
            .annotations
            .insert("kubernetes.io/config.seen".into(), uid.into());
        let mut container = sample::container_config(&sandbox, "c", &["sh"]);
        container.mounts.push(Mount {
            host_path: format!("/state/pods/{uid}/etc-hosts"),
            ..Default::default()
        });
        container.envs.push(KeyValue {
            key: "A".into(),
            value: "1".into(),
        });
        Recorded {
            sandbox,
            runtime_handler: String::new(),
            container,
        }
    }

    fn frame(m: &impl Message) -> bytes::Bytes {
        let body = m.encode_to_vec();
        let mut out = vec![0];
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out.into()
    }

    fn call(method: &str, body: bytes::Bytes) -> Call {
        Call {
            method: method.into(),
            at: Instant::now(),
            took: std::time::Duration::ZERO,
            body,
            outcome: podvisor_cri_proxy::Outcome::Forwarded,
        }
    }

    #[test]
    fn a_pods_configs_are_found_among_the_calls_and_decoded() {
        let r = recorded();
        let other = recorded().renamed("other-uid", "s-1");
        let calls = vec![
            call(
                "RunPodSandbox",
                frame(&RunPodSandboxRequest {
                    config: Some(r.sandbox.clone()),
                    runtime_handler: String::new(),
                }),
            ),
            call(
                "RunPodSandbox",
                frame(&RunPodSandboxRequest {
                    config: Some(other.sandbox.clone()),
                    runtime_handler: String::new(),
                }),
            ),
            call(
                "CreateContainer",
                frame(&CreateContainerRequest {
                    pod_sandbox_id: "x".into(),
                    config: Some(r.container.clone()),
                    sandbox_config: Some(r.sandbox.clone()),
                }),
            ),
        ];
        assert_eq!(Recorded::from_calls(&calls, "0b7c-uid"), Some(r));
        // The other pod has a sandbox but no container.
        assert_eq!(Recorded::from_calls(&calls, "other-uid"), None);
        // A body cut short is not a config.
        let cut = call(
            "RunPodSandbox",
            frame(&RunPodSandboxRequest::default()).slice(0..3),
        );
        assert_eq!(Recorded::from_calls(&[cut], ""), None);
    }

    #[test]
    fn renaming_moves_the_pods_own_names_and_keeps_its_mounts() {
        let r = recorded().renamed("new-uid", "replay-1");
        let meta: &PodSandboxMetadata = r.sandbox.metadata.as_ref().unwrap();
        assert_eq!(
            (meta.uid.as_str(), meta.name.as_str()),
            ("new-uid", "replay-1")
        );
        let linux: &LinuxPodSandboxConfig = r.sandbox.linux.as_ref().unwrap();
        assert_eq!(linux.cgroup_parent, "/kubepods/besteffort/podnew-uid");
        assert_eq!(r.sandbox.log_directory, "/logs/ns_s-0_new-uid");
        assert_eq!(
            r.sandbox.annotations["kubernetes.io/config.seen"],
            "new-uid"
        );
        assert!(r.container.labels.values().any(|v| v == "new-uid"));
        assert!(!format!("{:?}{:?}", r.sandbox.labels, r.container.labels).contains("0b7c"));
        assert_eq!(
            r.container.mounts[0].host_path,
            "/state/pods/0b7c-uid/etc-hosts"
        );
    }

    #[test]
    fn each_variant_leaves_out_its_part_only() {
        let r = recorded();
        assert_eq!(Variant::AsSent.apply(&r), r);
        let v = Variant::NoCgroupParent.apply(&r);
        assert!(v.sandbox.linux.as_ref().unwrap().cgroup_parent.is_empty());
        assert_eq!(v.container, r.container);
        assert!(Variant::NoMounts.apply(&r).container.mounts.is_empty());
        assert!(Variant::NoEnv.apply(&r).container.envs.is_empty());
        let v = Variant::NoSandboxSecurity.apply(&r);
        let sc = v.sandbox.linux.unwrap().security_context.unwrap();
        assert_eq!(
            sc.namespace_options,
            r.sandbox
                .linux
                .unwrap()
                .security_context
                .unwrap()
                .namespace_options
        );
    }
}
