//! The Kubernetes version podvisor speaks: its API types (k8s-openapi's `v1_37`), the
//! version its API server reports, the kubelet version its Node shows and the
//! `User-Agent` of its probes all come from here, so they never disagree.

pub const MAJOR: &str = "1";
pub const MINOR: &str = "37";
/// `v1.37.0-podvisor-<podvisor's version>`.
pub const GIT_VERSION: &str = concat!("v1.37.0-podvisor-", env!("CARGO_PKG_VERSION"));
/// What a kubelet's probes send as `User-Agent` (`kube-probe/<major>.<minor>`).
pub const PROBE_USER_AGENT: &str = "kube-probe/1.37";
