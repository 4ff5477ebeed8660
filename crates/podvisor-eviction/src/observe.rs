//! The signals' observations from the node's part of the summary, as the kubelet's
//! `makeSignalObservations`: memory (available of available + working set), the node's
//! and the images' filesystems (bytes and inodes) and process ids (the kernel's maximum
//! less the tasks running).

use podvisor_core::stats::{FsStats, NodeStats};

use crate::signal::Signal;
use crate::state::{Observation, Observations};

pub fn observations(node: &NodeStats) -> Observations {
    let mut out = Observations::new();
    let mut put = |s: Signal, available: Option<u64>, capacity: Option<u64>| {
        if let (Some(a), Some(c)) = (available, capacity) {
            out.insert(
                s,
                Observation {
                    available: i64::try_from(a).unwrap_or(i64::MAX),
                    capacity: i64::try_from(c).unwrap_or(i64::MAX),
                },
            );
        }
    };
    if let Some(m) = &node.memory {
        let capacity = m
            .available_bytes
            .zip(m.working_set_bytes)
            .map(|(a, w)| a.saturating_add(w));
        put(Signal::MemoryAvailable, m.available_bytes, capacity);
    }
    let fs = |f: Option<&FsStats>| {
        (
            f.and_then(|f| f.available_bytes),
            f.and_then(|f| f.capacity_bytes),
        )
    };
    let inodes = |f: Option<&FsStats>| (f.and_then(|f| f.inodes_free), f.and_then(|f| f.inodes));
    let (a, c) = fs(node.fs.as_ref());
    put(Signal::NodeFsAvailable, a, c);
    let (a, c) = inodes(node.fs.as_ref());
    put(Signal::NodeFsInodesFree, a, c);
    let image = node.runtime.as_ref().and_then(|r| r.image_fs.as_ref());
    let (a, c) = fs(image);
    put(Signal::ImageFsAvailable, a, c);
    let (a, c) = inodes(image);
    put(Signal::ImageFsInodesFree, a, c);
    if let Some(r) = &node.rlimit
        && let (Some(max), Some(cur)) = (r.maxpid, r.curproc)
    {
        let available = u64::try_from(max.saturating_sub(cur)).unwrap_or(0);
        put(
            Signal::PidAvailable,
            Some(available),
            u64::try_from(max).ok(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_core::stats::{MemoryStats, RlimitStats, RuntimeStats};

    #[test]
    fn each_signal_is_read_from_its_part_of_the_summary() {
        let at = podvisor_core::time::now();
        let node = NodeStats {
            node_name: "n".into(),
            start_time: None,
            cpu: None,
            memory: Some(MemoryStats {
                time: at.clone(),
                available_bytes: Some(300),
                usage_bytes: None,
                working_set_bytes: Some(700),
                rss_bytes: None,
            }),
            fs: Some(FsStats {
                available_bytes: Some(10),
                capacity_bytes: Some(100),
                inodes_free: Some(5),
                inodes: Some(50),
                ..FsStats::default()
            }),
            runtime: Some(RuntimeStats { image_fs: None }),
            rlimit: Some(RlimitStats {
                time: at,
                maxpid: Some(32768),
                curproc: Some(768),
            }),
        };
        let o = observations(&node);
        let get = |s| o.get(&s).map(|o| (o.available, o.capacity));
        assert_eq!(get(Signal::MemoryAvailable), Some((300, 1000)));
        assert_eq!(get(Signal::NodeFsAvailable), Some((10, 100)));
        assert_eq!(get(Signal::NodeFsInodesFree), Some((5, 50)));
        assert_eq!(get(Signal::ImageFsAvailable), None);
        assert_eq!(get(Signal::PidAvailable), Some((32000, 32768)));
    }
}
