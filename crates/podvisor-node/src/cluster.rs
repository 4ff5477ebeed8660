//! A node of a cluster: the cluster's pods and Node copied down into the node's store
//! (`replica`), and the node's statuses and deletions copied up (`uplink`). Every other
//! actor of the node (the pod source, the status writer, the taint eviction scheduler)
//! works on the store as it does standalone, so the node runs on while the cluster is
//! away, and nothing but these two knows there is a cluster.

mod admit;
pub mod first_copies;
pub mod replica;
pub mod uplink;

pub use first_copies::FirstCopies;
pub use replica::ClusterReplica;
pub use uplink::ClusterUplink;
