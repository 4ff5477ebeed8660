//! What differs between two nodes' statuses of the same pod spec: a differential check
//! (node-bench). Values that differ by nature (times, IDs, addresses) count only by their
//! presence.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

/// Fields whose values differ between any two runs.
const VOLATILE: [&str; 11] = [
    "startTime",
    "startedAt",
    "finishedAt",
    "lastTransitionTime",
    "lastProbeTime",
    "containerID",
    "imageID",
    "podIP",
    "ip",
    "hostIP",
    "observedGeneration",
];

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{prefix}.{k}");
                if VOLATILE.contains(&k.as_str()) {
                    out.insert(p, "<set>".into());
                } else {
                    flatten(&p, v, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                // Conditions are keyed by type, not by position.
                let key = v
                    .get("type")
                    .and_then(Value::as_str)
                    .map_or(i.to_string(), str::to_string);
                flatten(&format!("{prefix}[{key}]"), v, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

fn fields(p: &Pod) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let status = serde_json::to_value(&p.status).unwrap_or(Value::Null);
    flatten("status", &status, &mut out);
    out
}

/// Prints the fields that differ between `a` (podvisor's) and `b` (the kubelet's).
pub fn print(a: &Pod, b: &Pod) {
    let (fa, fb) = (fields(a), fields(b));
    println!("## the same Running pod's status on each node: the fields that differ\n");
    println!("| field | podvisor | kubelet |\n|---|---|---|");
    let mut same = 0;
    for key in fa.keys().chain(fb.keys().filter(|k| !fa.contains_key(*k))) {
        let (x, y) = (fa.get(key), fb.get(key));
        if x == y {
            same += 1;
            continue;
        }
        let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(absent)".into());
        println!("| `{key}` | {} | {} |", show(x), show(y));
    }
    println!("\n{same} fields the same.\n");
}
