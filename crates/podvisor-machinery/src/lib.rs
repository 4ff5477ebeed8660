//! What podvisor's controllers and the node agent share on top of the typed client
//! (`podvisor-client`), in the spirit of client-go and kube-runtime.
//!
//! - [`reflector`]: list, then watch from the list's version, into an actor's context,
//!   resuming and relisting as the API requires.
//! - [`cache`]: an informer's typed local cache with a secondary index; applying an update
//!   answers what changed, old and new.
//! - [`workqueue`]: client-go's work queue (deduplicated keys, one sync per key at a time,
//!   delayed adds) with its default controller rate limiter; [`workers`]: a controller's
//!   bounded syncs over it, retries and counts.
//! - [`controller`]: the one controller runtime (kube-runtime's `Controller`): a
//!   [`controller::Reconciler`] says what its watches mean and how to sync a key; the
//!   actor around it owns the informers, the workers, the error policy and the Events.
//! - [`expectations`]: what a controller wrote and has not seen come back yet.
//! - [`events`]: the event recorder. Anyone who has something to say about an object sends
//!   it a [`events::RecordEvent`]; it deduplicates repeats into one Event whose `count`
//!   grows, drops bursts beyond a per-object allowance, and writes Events through the client,
//!   where `kubectl describe` and `kubectl get events` find them.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod backoff;
pub mod cache;
pub mod controller;
pub mod events;
pub mod expectations;
pub mod reflector;
pub mod workers;
pub mod workqueue;
