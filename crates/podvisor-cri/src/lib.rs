//! podvisor's view of the container runtime: a CRI `runtime.v1` client for containerd, the
//! [`Runtime`] trait the kubelet logic drives (at the level of the kubelet's own runtime
//! interface: pods, not raw RPCs), and (feature `fake`) an in-memory `FakeRuntime` for
//! unit tests.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod proto {
    //! Generated CRI `runtime.v1` types and gRPC clients.
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("runtime.v1");
}

pub mod client;
pub mod containerd;
pub mod endpoint;
pub mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod labels;
pub mod model;
pub mod observe;
pub mod runtime;
pub mod sample;

pub use client::{CriClient, Timeouts};
pub use containerd::CriRuntime;
pub use endpoint::{DEFAULT_ENDPOINT, Endpoint, EndpointError};
pub use error::CriError;
#[cfg(any(test, feature = "fake"))]
pub use fake::FakeRuntime;
pub use model::*;
pub use observe::{CallObserver, Observer, operation_type};
pub use proto::LinuxContainerResources;
pub use runtime::{EventStream, Runtime};
