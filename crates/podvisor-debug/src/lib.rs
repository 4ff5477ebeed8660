//! The debug endpoint: what an operator opens to see inside a running podvisor. It reads
//! the actor [`Registry`](podvisor_actors::Registry) (never the actors themselves, so a
//! stuck actor is still visible) and the health checks.
//!
//! Routes: `GET /debug/actors` (JSON tree, paginated), `GET /debug/actors/{id}`,
//! `GET /debug` (HTML, auto-refreshing), `GET /metrics` (Prometheus text), `GET /healthz`,
//! `GET /readyz`. Bound to loopback by default; a non-loopback address is refused unless
//! a bearer token is configured, and then every route but the health checks requires it.
//! Builds with the `fault-injection` feature add `POST /debug/fault/panic/{id}`, served
//! only when the config opts in as well.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod auth;
mod charts;
pub mod client;
pub mod health;
pub mod history;
mod html;
mod metrics;
mod routes;
mod server;
mod state;

pub use health::{Check, CheckError, Health};
pub use server::{DEFAULT_ADDRESS, DebugConfig, DebugError, DebugServer, MoreMetrics};
pub use state::check_token;
