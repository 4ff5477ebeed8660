//! `kubectl exec`, `attach`, `port-forward` (and `cp`, tar through exec): the node's
//! streaming sessions. The runtime prepares a session (CRI Exec, Attach, PortForward) and
//! serves it on its own stream server; podvisor proxies the client's upgraded connection
//! there untouched (SPDY or WebSocket), as the kubelet does: no redirect, no re-framing.
//! Its callers (podvisor's API, the kubelet server) authenticate, find the pod and check
//! the request; this crate bounds sessions, idle time and memory.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod error;
mod first_request;
pub mod front;
pub mod head;
pub mod logs;
mod proxy;
mod reply;
mod rewind;
mod session;
mod slots;
mod streams;
mod watched;

pub use error::StreamError;
pub use head::{RequestHead, Sniffed, read_request};
pub use reply::{refusal, refuse};
pub use rewind::Rewind;
pub use session::{API_NAMES, KUBELET_NAMES, Session, StreamNames, Verb};
pub use streams::{PodTarget, StreamLimits, Streams};
