//! The kubelet's machinery as podvisor actors. See ARCHITECTURE.md.

pub mod agent;
pub mod groups;
pub mod kuberuntime;
pub mod manifest_source;
pub mod pleg;
pub mod pod_workers;
pub mod quantity;
pub mod status_cache;
pub mod status_manager;
pub mod sync_loop;
