//! What the fake's containers and pods use, as its stats calls answer.

use super::state::State;
use crate::model::*;

impl State {
    /// What each container uses at `now`: a running one 10 millicores since it started and
    /// 1 MiB; any other, nothing measured.
    pub fn usage(&self, now: i64) -> Vec<ContainerUsage> {
        self.containers
            .values()
            .map(|c| {
                let running = c.status.state == ContainerState::Running;
                let pod = self
                    .sandboxes
                    .get(&c.sandbox_id)
                    .map(|s| s.status.pod.clone());
                ContainerUsage {
                    id: c.status.id.clone(),
                    name: c.status.name.clone(),
                    pod: pod.unwrap_or_default(),
                    labels: c.status.labels.clone(),
                    cpu: running.then(|| CpuSample {
                        at_ns: now,
                        core_ns: u64::try_from(now - c.status.started_at).unwrap_or(0) / 100,
                    }),
                    memory: running.then_some(MemorySample {
                        at_ns: now,
                        working_set: 1 << 20,
                        usage: Some(1 << 20),
                        rss: None,
                    }),
                    rootfs: Some(FsSample {
                        at_ns: now,
                        mountpoint: "/fake/rootfs".into(),
                        used_bytes: 4096,
                        inodes_used: Some(1),
                    }),
                }
            })
            .collect()
    }

    /// Each ready sandbox `node` made (or with no maker): an `eth0` that received 1 KiB
    /// and sent 512 bytes.
    pub fn sandbox_usage(&self, node: &str, now: i64) -> Vec<SandboxUsage> {
        self.sandboxes
            .values()
            .filter(|s| s.status.state == SandboxState::Ready)
            .filter(|s| {
                let maker = s.status.labels.get(crate::labels::MANAGED_BY);
                maker.is_none_or(|m| m == node)
            })
            .map(|s| SandboxUsage {
                id: s.status.id.clone(),
                pod: s.status.pod.clone(),
                network_at_ns: now,
                interfaces: vec![InterfaceSample {
                    name: "eth0".into(),
                    rx_bytes: Some(1024),
                    rx_errors: Some(0),
                    tx_bytes: Some(512),
                    tx_errors: Some(0),
                }],
                processes: Some(1),
            })
            .collect()
    }

    /// One image filesystem, 1 MiB an image.
    pub fn image_fs(&self, now: i64) -> Vec<FsSample> {
        vec![FsSample {
            at_ns: now,
            mountpoint: "/fake/images".into(),
            used_bytes: (self.images.len() as u64) << 20,
            inodes_used: Some(self.images.len() as u64),
        }]
    }
}
