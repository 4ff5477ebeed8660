//! The store survives SIGKILL: 200 creates through kubectl while the agent is killed at
//! random points lose no acknowledged object, and a watch resumed afterwards from the
//! revision before the first create sees every create, in order.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;

const CREATES: usize = 200;

/// A small, seeded generator: which creates the agent is killed after.
fn kill_points(seed: u64, n: usize) -> Vec<usize> {
    let mut x = seed;
    let mut out: Vec<usize> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            10 + (x % (CREATES as u64 - 20)) as usize
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn configmap(i: usize) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i:03}}}\ndata: {{i: \"{i}\"}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_creates_loses_no_acknowledged_object() {
    let mut agent = Agent::start("api-sigkill").await;
    let k = Kubectl::for_agent(&agent);
    let list = k.ok(&["get", "--raw", "/api/v1/namespaces/default/configmaps"]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let start: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let seed = std::process::id() as u64 | 1;
    let kills = kill_points(seed, 4);
    let mut acknowledged = Vec::new();
    for i in 0..CREATES {
        let name = format!("cm-{i:03}");
        if !kills.contains(&i) {
            if k.run_with(&["create", "-f", "-"], &configmap(i)).ok {
                acknowledged.push(name);
            }
            continue;
        }
        // Killed while this create is in flight: it may or may not be acknowledged, and
        // nothing acknowledged may be lost.
        let yaml = configmap(i);
        let k2 = k.clone();
        let create = std::thread::spawn(move || k2.run_with(&["create", "-f", "-"], &yaml).ok);
        tokio::time::sleep(Duration::from_millis(20 + (seed + i as u64) % 60)).await;
        agent.kill9();
        if create.join().unwrap() {
            acknowledged.push(name);
        }
        agent.restart().await;
    }
    assert!(
        acknowledged.len() >= CREATES - kills.len(),
        "seed {seed}: only {} creates succeeded",
        acknowledged.len()
    );
    let names = k.ok(&[
        "get",
        "configmaps",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    let stored: Vec<&str> = names.split_whitespace().collect();
    for name in &acknowledged {
        assert!(
            stored.contains(&name.as_str()),
            "seed {seed}: acknowledged {name} was lost"
        );
    }
    // The resumed watch: every create since `start`, in the order they were acknowledged.
    let path = format!(
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={start}&timeoutSeconds=2"
    );
    let raw = k.ok(&["get", "--raw", &path]);
    let mut seen = Vec::new();
    let mut last_rv = start;
    for line in raw.lines() {
        let ev: serde_json::Value = serde_json::from_str(line).unwrap();
        let rv: u64 = ev["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            rv > last_rv,
            "seed {seed}: revisions go up: {rv} after {last_rv}"
        );
        last_rv = rv;
        assert_eq!(ev["type"], "ADDED", "{line}");
        seen.push(
            ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    // A create whose answer the kill cut off may still have been committed: the watch
    // shows exactly what is stored, and every acknowledged create among it, in order.
    let mut stored_sorted: Vec<String> = stored
        .iter()
        .filter(|s| s.starts_with("cm-"))
        .map(|s| s.to_string())
        .collect();
    let mut seen_sorted = seen.clone();
    stored_sorted.sort();
    seen_sorted.sort();
    assert_eq!(
        seen_sorted, stored_sorted,
        "seed {seed}: the watch saw every stored create"
    );
    let in_order: Vec<&String> = seen.iter().filter(|n| acknowledged.contains(n)).collect();
    let acknowledged: Vec<&String> = acknowledged.iter().collect();
    assert_eq!(
        in_order, acknowledged,
        "seed {seed}: the watch saw every acknowledged create, in order"
    );
}
