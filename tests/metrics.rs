//! The kubelet's metrics on `/metrics`, as a kubelet's dashboards and alerts read them:
//! the exposition is parsed by Prometheus' own Python parser (which refuses a malformed
//! one), and each metric has the kubelet's name, type, labels and buckets, with values
//! that follow what the agent did (pods started through a manifest and the API).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use serde_json::Value;

type Families = BTreeMap<String, Value>;

async fn scrape(agent: &Agent) -> Families {
    let text = podvisor_debug::client::get(&agent.endpoint, "/metrics", None)
        .await
        .expect("/metrics");
    common::parse_exposition(&text)
}

/// Every sample named `name` whose labels include `labels`: (labels, value).
fn samples(f: &Families, name: &str, labels: &[(&str, &str)]) -> Vec<(Value, f64)> {
    f.values()
        .flat_map(|fam| fam["samples"].as_array().cloned().unwrap_or_default())
        .filter(|s| s[0] == name)
        .filter(|s| labels.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| (s[1].clone(), common::metric_value(&s[2])))
        .collect()
}

fn value(f: &Families, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(f, name, labels).iter().map(|(_, v)| v).sum()
}

fn family<'a>(f: &'a Families, name: &str) -> &'a Value {
    f.get(name)
        .unwrap_or_else(|| panic!("no family {name} in {:?}", f.keys()))
}

/// The upper bounds of a histogram's buckets, in order.
fn buckets(f: &Families, name: &str) -> Vec<String> {
    let mut les: Vec<(f64, String)> = samples(f, &format!("{name}_bucket"), &[])
        .into_iter()
        .map(|(l, _)| l["le"].as_str().unwrap().to_string())
        .map(|le| (le.parse().unwrap_or(f64::INFINITY), le))
        .collect();
    les.sort_by(|a, b| a.0.total_cmp(&b.0));
    les.dedup();
    les.into_iter().map(|(_, le)| le).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelets_metrics_are_served_with_its_names_labels_and_buckets() {
    let agent = Agent::start("metrics").await;
    agent.write(
        "file.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: file}\nspec:\n  terminationGracePeriodSeconds: 1\n  initContainers:\n  - {name: init, image: localhost/podvisor/busybox:test, command: [\"true\"]}\n  containers:\n  - {name: c, image: localhost/podvisor/busybox:test, command: [sleep, \"3600\"]}\n",
    );
    // An image that is nowhere: its pull fails, a start error with the kubelet's code.
    agent.write(
        "nowhere.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: nowhere}\nspec:\n  containers:\n  - {name: c, image: localhost/podvisor/nowhere:1}\n",
    );
    Kubectl::for_agent(&agent).ok(&[
        "run",
        "api",
        "--image=localhost/podvisor/busybox:test",
        "--restart=Never",
        "--",
        "sleep",
        "3600",
    ]);
    common::eventually("both pods running", Duration::from_secs(60), || async {
        let pods = agent.pods().await;
        let running = pods
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        (running == 2).then_some(())
    })
    .await;
    // The running gauges follow relists: every second on containerd 1.6, every 10 s (the
    // safety relist) beside containerd 1.7's event stream.
    let deadline = std::time::Instant::now() + Duration::from_secs(25);
    let f = loop {
        let f = scrape(&agent).await;
        let running = value(
            &f,
            "kubelet_running_containers",
            &[("container_state", "running")],
        );
        // Three sandboxes run: the image-less pod's too.
        if value(&f, "kubelet_running_pods", &[]) == 3.0 && running == 2.0 {
            break f;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "running pods never 2: {f:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };

    for (fam, kind) in [
        ("kubelet_pod_start_sli_duration_seconds", "histogram"),
        ("kubelet_pod_start_duration_seconds", "histogram"),
        ("kubelet_pod_worker_duration_seconds", "histogram"),
        ("kubelet_pleg_relist_duration_seconds", "histogram"),
        ("kubelet_pleg_relist_interval_seconds", "histogram"),
        ("kubelet_pleg_last_seen_seconds", "gauge"),
        ("kubelet_running_pods", "gauge"),
        ("kubelet_running_containers", "gauge"),
        ("kubelet_runtime_operations", "counter"),
        ("kubelet_runtime_operations_duration_seconds", "histogram"),
        ("kubelet_runtime_operations_errors", "counter"),
        ("kubelet_started_containers", "counter"),
        ("kubelet_started_containers_errors", "counter"),
    ] {
        let fam = family(&f, fam);
        assert_eq!(fam["type"], kind, "{fam}");
        assert!(
            fam["help"].as_str().unwrap().starts_with("[ALPHA] "),
            "{fam}"
        );
    }
    // The kubelet's buckets.
    let pod_start = buckets(&f, "kubelet_pod_start_duration_seconds");
    assert_eq!(pod_start.first().map(String::as_str), Some("0.5"));
    assert_eq!(pod_start.len(), 26, "25 bounds and +Inf: {pod_start:?}");
    assert_eq!(
        buckets(&f, "kubelet_pleg_relist_duration_seconds")[..3],
        ["0.005", "0.01", "0.025"]
    );
    let runtime = buckets(&f, "kubelet_runtime_operations_duration_seconds");
    assert_eq!(runtime.len(), 15, "{runtime:?}");
    assert_eq!(runtime[13], "745.0580596923828");

    // Values that follow what the agent did.
    for op in [
        "run_podsandbox",
        "create_container",
        "start_container",
        "list_podsandbox",
    ] {
        let calls = value(
            &f,
            "kubelet_runtime_operations_total",
            &[("operation_type", op)],
        );
        assert!(calls >= 2.0, "{op}: {calls}");
    }
    let started = |t| {
        value(
            &f,
            "kubelet_started_containers_total",
            &[("container_type", t)],
        )
    };
    assert!(started("container") >= 2.0 && started("init_container") >= 1.0);
    let running = value(
        &f,
        "kubelet_running_containers",
        &[("container_state", "running")],
    );
    assert_eq!(running, 2.0);
    let exited = value(
        &f,
        "kubelet_running_containers",
        &[("container_state", "exited")],
    );
    assert_eq!(exited, 1.0, "the init container");
    let counts = |name| value(&f, &format!("{name}_count"), &[]);
    assert!(counts("kubelet_pod_start_duration_seconds") >= 2.0);
    assert!(counts("kubelet_pod_start_sli_duration_seconds") >= 2.0);
    assert!(counts("kubelet_pleg_relist_duration_seconds") >= 1.0);
    let create = value(
        &f,
        "kubelet_pod_worker_duration_seconds_count",
        &[("operation_type", "create")],
    );
    assert!(create >= 2.0, "{create}");
    let seen = value(&f, "kubelet_pleg_last_seen_seconds", &[]);
    let now = podvisor_core::time::now_unix_ms() as f64 / 1e3;
    assert!(now - seen < 30.0, "PLEG last seen {seen}, now {now}");
    // The actors' own metrics are still there, beside them.
    assert_eq!(family(&f, "podvisor_actors")["type"], "gauge");
}
