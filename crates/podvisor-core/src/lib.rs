//! podvisor's shared vocabulary, below every other crate that speaks of Kubernetes objects
//! (the kubelet's actors, the client, the store, the API and the controllers): typed UIDs and
//! object keys instead of bare strings, the pod phase and restart policy as enums, one
//! extension trait with the pod accessors everyone needs, a grace period that cannot be
//! zero, resource quantities, and the one validation path for pods, with Kubernetes'
//! field paths and error kinds.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod decode;
pub mod event;
pub mod expand;
pub mod fit;
pub mod grace;
pub mod intstr;
pub mod key;
pub mod kinds;
pub mod labels;
pub mod node_admit;
pub mod oom;
pub mod phase;
pub mod pod;
pub mod ports;
pub mod private_file;
pub mod qos;
pub mod quantity;
pub mod restart;
pub mod stats;
pub mod taints;
pub mod time;
pub mod uid;
pub mod validation;
pub mod version;

pub use event::EventType;
pub use grace::GracePeriod;
pub use key::{Kind, ObjectKey};
pub use phase::{Phase, RestartPolicy};
pub use pod::{MissingUid, PodExt, SharedPod};
pub use uid::{PodUid, Uid};
