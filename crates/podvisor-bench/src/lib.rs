//! Shared pieces of podvisor's benchmarks: latency statistics and the raw-CRI floor
//! (the same calls podvisor makes, issued directly), so every benchmark can measure its
//! figure and the floor side by side in one run.

pub mod agent;
pub mod alloc;
pub mod api_requests;
pub mod args;
pub mod cpu;
pub mod fetch;
pub mod floor;
pub mod hops;
pub mod nodes;
pub mod procstat;
pub mod replay;
pub mod schedule;
pub mod stats;
pub mod status_diff;
