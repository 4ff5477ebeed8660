//! The kubelet's machinery as podvisor actors. See ARCHITECTURE.md.

pub mod groups;
pub mod pleg;
pub mod status_cache;
