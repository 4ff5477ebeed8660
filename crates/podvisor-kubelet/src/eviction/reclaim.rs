//! What the node frees before any pod goes under disk pressure (the kubelet's node-level
//! reclaim): every dead container of its pods but each name's newest (whose exit is the
//! container's last state), their dead sandboxes, and, when the images' filesystem is
//! short (or is the node's), every unused image.

use podvisor_cri::Runtime;
use tracing::{info, warn};

use crate::sync_loop::gc;

/// Removes the dead containers and sandboxes of the node's pods: how many containers.
pub(crate) async fn dead_containers(runtime: &dyn Runtime, node: &str) -> usize {
    let pods = match runtime.list_pods().await {
        Ok(p) => p,
        Err(e) => {
            warn!(error = %e, "cannot list the runtime to remove dead containers");
            return 0;
        }
    };
    let mut removed = 0;
    for p in pods
        .iter()
        .filter(|p| podvisor_cri::labels::owned_by(p, node))
    {
        let Ok(status) = runtime.pod_status(&p.pod.uid).await else {
            continue;
        };
        removed += gc::remove(runtime, &p.pod.uid, gc::garbage(&status, 0)).await;
    }
    if removed > 0 {
        info!(removed, "removed dead containers to relieve disk pressure");
    }
    removed
}
