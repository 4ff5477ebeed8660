//! A pod's network as the kernel counts it in the pod's network namespace
//! (`/proc/<pid>/net/dev` of its sandbox's process), as cAdvisor reads it, for the pods the
//! runtime's sandbox stats say nothing of the network of (containerd 1.6 has no
//! ListPodSandboxStats; 2.1 measures only the namespaces it keeps a path to). A pod on the
//! host's network has no figures of its own. Each sandbox's process id is asked of the
//! runtime once and kept while the sandbox is ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use podvisor_cri::{InterfaceSample, Pod, Runtime, SandboxState, SandboxUsage};

/// Sandbox id → the process holding its namespaces.
pub(crate) type Pids = Arc<Mutex<HashMap<String, u32>>>;

/// `measured` with a network for every ready sandbox of `pods` the runtime gave none.
pub(crate) async fn complete(
    runtime: &dyn Runtime,
    pods: &[Pod],
    mut measured: Vec<SandboxUsage>,
    pids: &Pids,
) -> Vec<SandboxUsage> {
    let ready: Vec<_> = pods
        .iter()
        .filter_map(|p| {
            let s = p
                .sandboxes
                .iter()
                .filter(|s| s.state == SandboxState::Ready);
            s.max_by_key(|s| s.created_at)
                .map(|s| (s.id.clone(), p.pod.clone()))
        })
        .collect();
    if let Ok(mut known) = pids.lock() {
        known.retain(|id, _| ready.iter().any(|(r, _)| r == id));
    }
    for (id, pod) in ready {
        if measured
            .iter()
            .any(|m| m.id == id && !m.interfaces.is_empty())
        {
            continue;
        }
        let Some(pid) = pid(runtime, &id, pids).await else {
            continue;
        };
        let Some(interfaces) = read(pid) else {
            continue;
        };
        let at = podvisor_core::time::now_nanos();
        match measured.iter_mut().find(|m| m.id == id) {
            Some(m) => (m.interfaces, m.network_at_ns) = (interfaces, at),
            None => measured.push(SandboxUsage {
                id,
                pod,
                network_at_ns: at,
                interfaces,
                processes: None,
            }),
        }
    }
    measured
}

async fn pid(runtime: &dyn Runtime, id: &str, pids: &Pids) -> Option<u32> {
    let known = pids.lock().ok().and_then(|k| k.get(id).copied());
    if known.is_some() {
        return known;
    }
    let pid = runtime.sandbox_pid(id).await.ok().flatten()?;
    if let Ok(mut k) = pids.lock() {
        k.insert(id.to_string(), pid);
    }
    Some(pid)
}

/// The interfaces of `pid`'s network namespace; `None` when it is the host's or gone.
fn read(pid: u32) -> Option<Vec<InterfaceSample>> {
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok()?;
    if std::fs::read_link("/proc/self/ns/net").ok()? == ns {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/dev")).ok()?;
    Some(parse(&text))
}

/// `/proc/net/dev`: every interface but `lo`, `eth0` first.
fn parse(text: &str) -> Vec<InterfaceSample> {
    let mut out: Vec<InterfaceSample> = text
        .lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let f: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect();
            // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs
            (f.len() >= 11).then(|| InterfaceSample {
                name: name.trim().to_string(),
                rx_bytes: Some(f[0]),
                rx_errors: Some(f[2]),
                tx_bytes: Some(f[8]),
                tx_errors: Some(f[10]),
            })
        })
        .filter(|i| i.name != "lo")
        .collect();
    out.sort_by_key(|i| i.name != "eth0");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_dev_is_read_as_the_kernel_writes_it() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       5       1    0    0    0     0          0         0        5       1    0    0    0     0       0          0
  net1:       7       1    0    0    0     0          0         0        9       1    0    0    0     0       0          0
  eth0:    1006      11    2    0    0     0          0         0      472       6    3    0    0     0       0          0
";
        let all = parse(text);
        let names: Vec<_> = all.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["eth0", "net1"]);
        assert_eq!(
            (
                all[0].rx_bytes,
                all[0].rx_errors,
                all[0].tx_bytes,
                all[0].tx_errors
            ),
            (Some(1006), Some(2), Some(472), Some(3))
        );
        assert_eq!(read(std::process::id()), None, "the host's own namespace");
    }
}
