//! How podvisor checks a container (the kubelet's `pkg/probe` and the rules of its prober
//! manager), below the kubelet's prober actor: probes and hooks as [`Action`]s resolved
//! against their container, the four ways to run one (exec through CRI `ExecSync`, HTTP
//! GET, TCP connect, gRPC health), each probe's thresholds ([`worker`]) and every probe of
//! the node in one scheduler with one delay queue ([`Probes`]). Plain data and async
//! functions: no actor here, so every rule is tested without one.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod action;
mod exec;
mod grpc;
mod http;
pub mod outcome;
pub mod probes;
pub mod run;
pub mod spec;
mod tcp;
mod worker;

pub use action::{Action, ActionError, HttpGet, Scheme};
pub use outcome::Outcome;
pub use probes::{
    Effect, Failed, Limits, ProbeKey, ProbeResult, Probes, ProbesSummary, Run, Verdicts,
};
pub use run::{HookError, Target};
pub use spec::{ProbeKind, ProbeSpec, has_probes};
