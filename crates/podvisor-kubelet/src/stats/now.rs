//! The node's figures measured now, without the containers' (what the eviction manager
//! reads at each pass): memory, the node's and the images' filesystems, process ids; and
//! whether the images have a filesystem of their own.

use std::path::Path;

use podvisor_core::stats::{MemoryStats, NodeStats, RuntimeStats};
use podvisor_cri::Runtime;

use super::{Paths, book, disk, node};

/// The node now.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeNow {
    pub node: NodeStats,
    /// The images are on another filesystem than the pods' directories.
    pub dedicated_image_fs: bool,
}

pub(super) async fn measure(runtime: &dyn Runtime, name: &str, paths: &Paths) -> NodeNow {
    let at_ns = podvisor_core::time::now_nanos();
    let pods = paths.pods.clone();
    let host = tokio::task::spawn_blocking(move || node::read(at_ns, &pods))
        .await
        .ok();
    let image = super::image_fs(runtime).await;
    let dedicated_image_fs = image
        .as_ref()
        .is_some_and(|(f, _)| !disk::same_device(Path::new(&f.mountpoint), &paths.pods));
    let image_fs = image.map(|(f, on)| book::fs_used(&f, on.as_ref()));
    let memory = host.as_ref().and_then(|h| {
        let m = h.memory?;
        Some(MemoryStats {
            time: podvisor_core::time::from_nanos(m.at_ns)?,
            available_bytes: h.memory_available,
            usage_bytes: m.usage,
            working_set_bytes: Some(m.working_set),
            rss_bytes: None,
        })
    });
    NodeNow {
        node: NodeStats {
            node_name: name.to_string(),
            start_time: None,
            cpu: None,
            memory,
            fs: host.as_ref().and_then(|h| h.fs.clone()),
            runtime: Some(RuntimeStats { image_fs }),
            rlimit: host.and_then(|h| h.rlimit),
        },
        dedicated_image_fs,
    }
}
