//! The messages the kubelet's actors exchange, one file per edge between them. A message
//! lives with neither of the two actors it connects, so no actor module depends on another
//! to speak to it (and no two modules depend on each other through their messages).
//!
//! | file | from → to |
//! |---|---|
//! | `sources.rs` | config sources → sync loop; sync loop → sources and the dispatcher (desired pods) |
//! | `updates.rs` | sync loop (and housekeeping) → pod-workers dispatcher |
//! | `work.rs` | dispatcher ↔ pod worker |
//! | `cache.rs` | PLEG → status cache → pod workers, status manager |
//! | `lifecycle.rs` | PLEG → sync loop; pod workers → PLEG |
//! | `status.rs` | syncer, sync loop, API → status manager |
//! | `images.rs` | syncer → image manager |
//! | `probes.rs` | syncer, sync loop, status manager → prober; prober → sync loop, status manager |
//! | `manifests.rs` | API → manifest source |
//! | `sync.rs` | pod worker → the sync functions (`PodSyncer`, implemented over CRI) |
//! | `eviction.rs` | eviction manager → sync loop, image garbage collector, the node's events; its pressure to admission and the Node |

pub mod cache;
pub mod eviction;
pub mod images;
pub mod lifecycle;
pub mod manifests;
pub mod probes;
pub mod sources;
pub mod status;
pub mod sync;
pub mod updates;
pub mod work;
