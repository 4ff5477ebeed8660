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
    "started → reported ready (PLEG, cache, status manager; 0 if it heard first)",
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

/// From `a` to `b`; 0 when `b` was logged first (the status manager hears of a start
/// through the evented PLEG before the syncer has logged StartContainer's answer).
fn between(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Duration> {
    Some(Duration::try_from(b? - a?).unwrap_or_default())
}

/// The hops of a pod created through a cluster's API server: [`HOPS`] from its create,
/// then one more, to when whoever created it saw it Running and ready through a watch.
pub const CLUSTER_HOPS: [&str; 6] = [
    "created → added (API server, watch, pod source, sync loop)",
    HOPS[1],
    HOPS[2],
    HOPS[3],
    HOPS[4],
    "reported ready → seen so through a watch (status patch, API server)",
];

/// Each hop's samples ([`HOPS`]) for the pods named in `written` (agent name → when its
/// manifest was written), from the log at `path`.
pub fn hops(path: &Path, written: &HashMap<String, Timestamp>) -> anyhow::Result<Vec<Samples>> {
    hops_to(path, written, None)
}

/// Each hop's samples ([`CLUSTER_HOPS`]) for the pods named in `created` (name → when it
/// was created), each seen Running and ready at `seen` (name → when), from the log at
/// `path`.
pub fn cluster_hops(
    path: &Path,
    created: &HashMap<String, Timestamp>,
    seen: &HashMap<String, Timestamp>,
) -> anyhow::Result<Vec<Samples>> {
    hops_to(path, created, Some(seen))
}

fn hops_to(
    path: &Path,
    begun: &HashMap<String, Timestamp>,
    seen: Option<&HashMap<String, Timestamp>>,
) -> anyhow::Result<Vec<Samples>> {
    let n = HOPS.len() + usize::from(seen.is_some());
    let mut out: Vec<Samples> = (0..n).map(|_| Samples::new()).collect();
    for m in marks(path)?.into_values() {
        let Some(&t0) = begun.get(&m.name) else {
            continue;
        };
        let end = seen.and_then(|s| s.get(&m.name).copied());
        let points = [
            Some(t0),
            m.added,
            m.syncing,
            m.sandbox,
            m.started,
            m.ready,
            end,
        ];
        for (i, w) in points[..=n].windows(2).enumerate() {
            if let Some(d) = between(w[0], w[1]) {
                out[i].push(d);
            }
        }
    }
    Ok(out)
}

/// The CRI client's trace of each call (when it ended, how long it took), which
/// [`own_time`] needs in the agent's log beside [`FILTER`].
pub const CRI_CALLS: &str = "podvisor_cri::client=trace";

/// For each pod named in `begun`: its time from `pod added` to reported ready less the
/// time inside CRI calls then (the agent's own work: admission, workers, configs, volumes,
/// the PLEG and the status manager), from the log at `path` ([`FILTER`] and [`CRI_CALLS`]).
pub fn own_time(path: &Path, begun: &HashMap<String, Timestamp>) -> anyhow::Result<Samples> {
    let calls = cri_calls(path)?;
    let mut out = Samples::new();
    for m in marks(path)?.into_values() {
        let (Some(a), Some(r)) = (m.added, m.ready) else {
            continue;
        };
        if !begun.contains_key(&m.name) {
            continue;
        }
        let within: Vec<_> = calls
            .iter()
            .filter(|(s, e)| *e > a && *s < r)
            .map(|(s, e)| ((*s).max(a), (*e).min(r)))
            .collect();
        let busy = covered(within);
        out.push(
            between(Some(a), Some(r))
                .unwrap_or_default()
                .saturating_sub(busy),
        );
    }
    Ok(out)
}

/// Every CRI call in the log at `path`: when it began and ended.
fn cri_calls(path: &Path) -> anyhow::Result<Vec<(Timestamp, Timestamp)>> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let f = &v["fields"];
        if f["message"] != "CRI call" {
            continue;
        }
        let (Some(end), Some(took)) = (
            v["timestamp"]
                .as_str()
                .and_then(|t| t.parse::<Timestamp>().ok()),
            f["took"].as_str().and_then(debug_duration),
        ) else {
            continue;
        };
        let took = k8s_openapi::jiff::SignedDuration::try_from(took)?;
        out.push((end - took, end));
    }
    Ok(out)
}

/// How long the union of `spans` lasts.
fn covered(mut spans: Vec<(Timestamp, Timestamp)>) -> Duration {
    spans.sort();
    let mut total = Duration::ZERO;
    let mut current: Option<(Timestamp, Timestamp)> = None;
    for (s, e) in spans {
        match current {
            Some((cs, ce)) if s <= ce => current = Some((cs, ce.max(e))),
            _ => {
                total += current
                    .and_then(|(cs, ce)| between(Some(cs), Some(ce)))
                    .unwrap_or_default();
                current = Some((s, e));
            }
        }
    }
    total
        + current
            .and_then(|(cs, ce)| between(Some(cs), Some(ce)))
            .unwrap_or_default()
}

/// A `Duration` as `{:?}` prints it (`1.5s`, `149.59ms`, `526.6µs`, `80ns`).
fn debug_duration(text: &str) -> Option<Duration> {
    let unit = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(unit);
    let n: f64 = number.parse().ok()?;
    let scale = match unit {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" => 1e-6,
        "ns" => 1e-9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(n * scale))
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
    wall_at(std::time::SystemTime::now())
}

/// `at` as a log timestamp.
pub fn wall_at(at: std::time::SystemTime) -> Timestamp {
    let d = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Timestamp::new(d.as_secs() as i64, d.subsec_nanos() as i32).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_durations_are_read_back() {
        let read = |t: &str| debug_duration(t).map(|d| d.as_nanos());
        assert_eq!(read("1.5s"), Some(1_500_000_000));
        assert_eq!(read("149.593678ms"), Some(149_593_678));
        assert_eq!(read("526.638µs"), Some(526_638));
        assert_eq!(read("80ns"), Some(80));
        assert_eq!(read("12 parsecs"), None);
    }

    #[test]
    fn overlapping_calls_count_once() {
        let at = |ms: i64| Timestamp::from_millisecond(ms).unwrap();
        let spans = vec![(at(0), at(10)), (at(5), at(20)), (at(30), at(35))];
        assert_eq!(covered(spans), Duration::from_millis(25));
        assert_eq!(covered(Vec::new()), Duration::ZERO);
    }
}
