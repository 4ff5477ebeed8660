//! What podvisor's controllers and the node agent share on top of the store, in the spirit
//! of client-go and kube-runtime.
//!
//! - [`reflector`]: list, then watch from the list's revision, into an actor's context,
//!   resuming and relisting as the store requires.
//! - [`events`]: the event recorder. Anyone who has something to say about an object sends
//!   it a [`events::RecordEvent`]; it deduplicates repeats into one Event whose `count`
//!   grows, drops bursts beyond a per-object allowance, and writes Events to the store,
//!   where `kubectl describe` and `kubectl get events` find them.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod events;
pub mod reflector;
