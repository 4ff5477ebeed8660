//! The kubelet's eviction signals, the node conditions they drive and the resources
//! their evictions reclaim.

use serde::Serialize;

/// What the eviction manager observes (the kubelet's `Signal`s podvisor measures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Signal {
    #[serde(rename = "memory.available")]
    MemoryAvailable,
    #[serde(rename = "nodefs.available")]
    NodeFsAvailable,
    #[serde(rename = "nodefs.inodesFree")]
    NodeFsInodesFree,
    #[serde(rename = "imagefs.available")]
    ImageFsAvailable,
    #[serde(rename = "imagefs.inodesFree")]
    ImageFsInodesFree,
    #[serde(rename = "pid.available")]
    PidAvailable,
}

impl Signal {
    pub const ALL: [Signal; 6] = [
        Signal::MemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::PidAvailable,
    ];

    /// The kubelet's name (`memory.available`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }

    pub fn parse(name: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The node condition the signal's thresholds set.
    pub fn pressure(self) -> Pressure {
        match self {
            Signal::MemoryAvailable => Pressure::Memory,
            Signal::PidAvailable => Pressure::Pid,
            _ => Pressure::Disk,
        }
    }

    /// What evicting a pod for this signal reclaims.
    pub fn resource(self) -> Resource {
        match self {
            Signal::MemoryAvailable => Resource::Memory,
            Signal::NodeFsAvailable | Signal::ImageFsAvailable => Resource::EphemeralStorage,
            Signal::NodeFsInodesFree | Signal::ImageFsInodesFree => Resource::Inodes,
            Signal::PidAvailable => Resource::Pids,
        }
    }

    /// Whether the figures are bytes (else counts: inodes, process ids).
    pub fn in_bytes(self) -> bool {
        matches!(
            self,
            Signal::MemoryAvailable | Signal::NodeFsAvailable | Signal::ImageFsAvailable
        )
    }

    /// Whether the signal is about a filesystem (bytes or inodes).
    pub fn on_disk(self) -> bool {
        self.pressure() == Pressure::Disk
    }

    /// Whether the signal is about the images' filesystem.
    pub fn on_image_fs(self) -> bool {
        matches!(self, Signal::ImageFsAvailable | Signal::ImageFsInodesFree)
    }
}

/// A node pressure condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Pressure {
    Memory,
    Disk,
    Pid,
}

impl Pressure {
    pub const ALL: [Pressure; 3] = [Pressure::Memory, Pressure::Disk, Pressure::Pid];

    /// The Node condition's type.
    pub fn condition(self) -> &'static str {
        match self {
            Pressure::Memory => "MemoryPressure",
            Pressure::Disk => "DiskPressure",
            Pressure::Pid => "PIDPressure",
        }
    }

    /// The taint the node carries while under it (NoSchedule).
    pub fn taint_key(self) -> &'static str {
        match self {
            Pressure::Memory => "node.kubernetes.io/memory-pressure",
            Pressure::Disk => "node.kubernetes.io/disk-pressure",
            Pressure::Pid => "node.kubernetes.io/pid-pressure",
        }
    }

    /// The kubelet's reason and message for the condition, under pressure or not.
    pub fn reason(self, under: bool) -> (&'static str, &'static str) {
        match (self, under) {
            (Pressure::Memory, true) => (
                "KubeletHasInsufficientMemory",
                "kubelet has insufficient memory available",
            ),
            (Pressure::Memory, false) => (
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            (Pressure::Disk, true) => ("KubeletHasDiskPressure", "kubelet has disk pressure"),
            (Pressure::Disk, false) => ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            (Pressure::Pid, true) => (
                "KubeletHasInsufficientPID",
                "kubelet has insufficient PID available",
            ),
            (Pressure::Pid, false) => (
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
        }
    }
}

/// A resource an eviction reclaims (the kubelet's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Resource {
    Memory,
    EphemeralStorage,
    Inodes,
    Pids,
}

impl Resource {
    pub fn name(self) -> &'static str {
        match self {
            Resource::Memory => "memory",
            Resource::EphemeralStorage => "ephemeral-storage",
            Resource::Inodes => "inodes",
            Resource::Pids => "pids",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signal_has_its_kubelet_name_condition_and_resource() {
        for s in Signal::ALL {
            assert_eq!(Signal::parse(s.name()), Some(s));
        }
        assert_eq!(Signal::parse("allocatableMemory.available"), None);
        assert_eq!(
            Signal::NodeFsInodesFree.pressure().condition(),
            "DiskPressure"
        );
        assert_eq!(Signal::PidAvailable.resource().name(), "pids");
        assert_eq!(
            Pressure::Memory.reason(false).0,
            "KubeletHasSufficientMemory"
        );
    }
}
