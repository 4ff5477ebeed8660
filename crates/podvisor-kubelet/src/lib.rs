//! The kubelet's machinery as podvisor actors. See ARCHITECTURE.md.

pub mod groups;
pub mod pleg;
pub mod pod_workers;
pub mod status_cache;
