//! The actor layer under every podvisor component: supervision with restart backoff and
//! escalation, mailboxes that count and survive restarts, and the registry the debug
//! endpoint reads. See ARCHITECTURE.md ("Actors and supervision").

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod actor;
mod clock;
pub mod due;
pub mod histogram;
pub mod id;
pub mod mailbox;
pub mod panic_capture;
mod pump;
pub mod registry;
pub mod supervisor;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use actor::{StartInfo, SupervisedActor, publish_now};
pub use due::DueQueue;
pub use id::ActorId;
pub use mailbox::{ActorRef, Lifecycle, MailboxError, MailboxSnapshot, Recipient, SendError};
pub use pump::{ChildExit, ExitReason};
pub use registry::{ActorSnapshot, Registry, TreeSnapshot};
pub use supervisor::{
    ChildSpec, Reserved, Restart, Scope, Shutdown, StartChild, StopChild, Strategy, Supervisor,
    SupervisorConfig, start_root,
};
