//! Where a pod's start goes, hop by hop, from the agent's own JSON log (no polling: the
//! agent is not slowed by being watched). The log lines used, each stamped by the agent:
//!
//! - `pod added` (the sync loop admitted it; names the pod and its UID),
//! - `syncing pod` (the first sync began, its plan made),
//! - `sandbox ready` (RunPodSandbox and its status answered),
//! - `container started` (CreateContainer and StartContainer answered),
//! - `pod status changed` with `ready` (the status manager published it Running and ready).
//!
//! The agent must log them: `podvisor_kubelet::sync_loop=info`,
//! `podvisor_kubelet::kuberuntime=debug`, `podvisor_kubelet::status_manager=info` ([`FILTER`]).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::stats::Samples;

/// The log filter the hops need.
pub const FILTER: &str = "warn,podvisor_kubelet::status_manager=info,podvisor_kubelet::sync_loop=info,podvisor_kubelet::kuberuntime=debug";

/// The hops, in order: each from the previous mark (the first from the manifest's write).
pub const HOPS: [&str; 5] = [
    "written → added (inotify, read, parse, sync loop)",
    "added → sync begins (dispatcher, worker, first status)",
    "sync → sandbox ready (RunPodSandbox, its status)",
    "sandbox → container started (image, create, start)",
    "started → reported ready (PLEG, cache, status manager)",
];

#[derive(Default)]
struct Marks {
    name: String,
    added: Option<Timestamp>,
    syncing: Option<Timestamp>,
    sandbox: Option<Timestamp>,
    started: Option<Timestamp>,
    ready: Option<Timestamp>,
}

fn first(slot: &mut Option<Timestamp>, at: Timestamp) {
    slot.get_or_insert(at);
}

/// Every pod's marks in the log at `path`, by UID.
fn marks(path: &Path) -> anyhow::Result<HashMap<String, Marks>> {
    let mut by_uid: HashMap<String, Marks> = HashMap::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let f = &v["fields"];
        let (Some(ts), Some(uid)) = (v["timestamp"].as_str(), f["pod_uid"].as_str()) else {
            continue;
        };
        let at: Timestamp = ts
            .parse()
            .map_err(|e| anyhow::anyhow!("log timestamp {ts:?}: {e}"))?;
        let m = by_uid.entry(uid.to_string()).or_default();
        match f["message"].as_str().unwrap_or_default() {
            "pod added" => {
                let name = f["pod"].as_str().unwrap_or_default().to_string();
                m.name = name;
                first(&mut m.added, at);
            }
            "syncing pod" => first(&mut m.syncing, at),
            "sandbox ready" => first(&mut m.sandbox, at),
            "container started" => first(&mut m.started, at),
            "pod status changed" if f["ready"] == true => first(&mut m.ready, at),
            _ => {}
        }
    }
    Ok(by_uid)
}

fn between(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Duration> {
    Duration::try_from(b? - a?).ok()
}

/// Each hop's samples for the pods named in `written` (agent name → when its manifest was
/// written), from the log at `path`.
pub fn hops(path: &Path, written: &HashMap<String, Timestamp>) -> anyhow::Result<Vec<Samples>> {
    let mut out: Vec<Samples> = HOPS.iter().map(|_| Samples::new()).collect();
    for m in marks(path)?.into_values() {
        let Some(&t0) = written.get(&m.name) else {
            continue;
        };
        let points = [Some(t0), m.added, m.syncing, m.sandbox, m.started, m.ready];
        for (i, w) in points.windows(2).enumerate() {
            if let Some(d) = between(w[0], w[1]) {
                out[i].push(d);
            }
        }
    }
    Ok(out)
}

/// Each pod's whole start (manifest written → reported ready), from the log at `path`.
pub fn totals(path: &Path, written: &HashMap<String, Timestamp>) -> anyhow::Result<Samples> {
    let mut out = Samples::new();
    for m in marks(path)?.into_values() {
        if let Some(d) = written
            .get(&m.name)
            .and_then(|t0| between(Some(*t0), m.ready))
        {
            out.push(d);
        }
    }
    Ok(out)
}

/// The wall clock now, comparable with the log's timestamps (same machine, same clock).
pub fn wall_now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::new(d.as_secs() as i64, d.subsec_nanos() as i32).unwrap_or_default()
}
