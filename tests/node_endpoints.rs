//! What monitoring and configuration tools read of a node, read through `:10250` as they
//! read it: `/configz` (the configuration, as a `KubeletConfiguration`), `/metrics/cadvisor`
//! (parsed by Prometheus' own parser, with cAdvisor's names and labels, the container's
//! series naming its runtime id and cgroup), `/stats/summary` (filesystems, the pod's
//! network, its volume and its ephemeral storage, measured from a pod that wrote a known
//! amount) and the node's own metrics on `/metrics`.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;
use serde_json::Value;

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: writer
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["sh", "-c", "dd if=/dev/urandom of=/data/blob bs=1M count=8 && echo written && exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    emptyDir: {}
"#;

/// Each answer of `kubelet_server.py ... endpoints`, by name: (code, body).
fn ask(agent: &Agent, port: &str) -> HashMap<String, (String, String)> {
    let token = agent.token();
    let args = [
        "tests/python/kubelet_server.py",
        port,
        &token,
        "writer",
        "main",
        "endpoints",
    ];
    let out = common::python().args(args).output().unwrap();
    common::succeeded(out)
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let name = parts.next().unwrap_or_default().to_string();
            let code = parts.next().unwrap_or_default().to_string();
            let body: String = serde_json::from_str(parts.next().unwrap_or("\"\"")).unwrap();
            (name, (code, body))
        })
        .collect()
}

/// The exposition through Prometheus' parser: every sample as (name, labels, value).
fn parse(text: &str) -> Vec<(String, Value, f64)> {
    let families = common::parse_exposition(text);
    families
        .values()
        .flat_map(|f| f["samples"].as_array().cloned().unwrap_or_default())
        .map(|s| {
            let name = s[0].as_str().unwrap().to_string();
            (name, s[1].clone(), common::metric_value(&s[2]))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configz_cadvisor_summary_and_node_metrics_are_read_as_tools_read_them() {
    let agent = Agent::start("endpoints").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(POD);
    wait_for("writer wrote", Duration::from_secs(90), || {
        k.jsonpath(&["pod", "writer"], "{.status.phase}") == "Running"
            && k.ok(&["logs", "writer"]).contains("written")
    })
    .await;
    let port = k.jsonpath(
        &["node", &agent.node],
        "{.status.daemonEndpoints.kubeletEndpoint.Port}",
    );
    let uid = k.jsonpath(&["pod", "writer"], "{.metadata.uid}");
    let cid = k.jsonpath(
        &["pod", "writer"],
        "{.status.containerStatuses[0].containerID}",
    );
    let cid = cid.trim_start_matches("containerd://").to_string();

    let a = ask(&agent, &port);
    for name in ["configz", "cadvisor", "summary", "metrics"] {
        assert_eq!(a[name].0, "200", "{name}: {}", a[name].1);
    }
    configz(&agent, &a["configz"].1);
    summary(&a["summary"].1, &uid);
    cadvisor(&a["cadvisor"].1, &uid, &cid);
    let node = parse(&a["metrics"].1);
    let one = |name: &str| {
        node.iter()
            .find(|(n, ..)| n == name)
            .map(|(_, l, v)| (l.clone(), *v))
    };
    let (labels, v) = one("kubelet_node_name").expect("kubelet_node_name");
    assert_eq!(
        (labels["node"].as_str(), v),
        (Some(agent.node.as_str()), 1.0)
    );
    assert!(one("process_resident_memory_bytes").unwrap().1 > 1e6);
    assert!(one("process_start_time_seconds").unwrap().1 > 1.7e9);
    let ttl = one("kubelet_certificate_manager_client_ttl_seconds")
        .unwrap()
        .1;
    assert!(
        ttl.is_infinite(),
        "standalone: no client certificate, {ttl}"
    );
}

fn configz(agent: &Agent, body: &str) {
    let v: Value = serde_json::from_str(body).unwrap();
    let c = &v["kubeletconfig"];
    assert_eq!(c["kind"], "KubeletConfiguration", "{v}");
    assert_eq!(c["apiVersion"], "kubelet.config.k8s.io/v1beta1");
    let manifests = agent.dir.join("manifests");
    assert_eq!(c["staticPodPath"], manifests.display().to_string(), "{c}");
    assert_eq!(c["authentication"]["anonymous"]["enabled"], false);
    assert!(c["maxPods"].as_u64().is_some_and(|n| n > 0));
}

fn cadvisor(text: &str, uid: &str, cid: &str) {
    let samples = parse(text);
    let find = |name: &str, container: &str| {
        samples
            .iter()
            .find(|(n, l, _)| n == name && l["pod"] == "writer" && l["container"] == container)
            .map(|(_, l, v)| (l.clone(), *v))
            .unwrap_or_else(|| panic!("no {name} of container {container:?} in:\n{text}"))
    };
    let (labels, cpu) = find("container_cpu_usage_seconds_total", "main");
    assert!(cpu > 0.0, "dd used CPU: {cpu}");
    assert_eq!(labels["name"], cid, "the runtime's id: {labels}");
    assert_eq!(labels["namespace"], "default");
    let id = labels["id"].as_str().unwrap();
    assert!(
        id.contains(uid) && id.ends_with(cid),
        "the container's cgroup: {id}"
    );
    assert_eq!(labels["image"], "localhost/podvisor/busybox:test");
    let keys: Vec<&String> = labels.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "container",
            "cpu",
            "id",
            "image",
            "name",
            "namespace",
            "pod"
        ]
    );
    assert!(find("container_memory_working_set_bytes", "main").1 > 0.0);
    let (pod, _) = find("container_memory_working_set_bytes", "");
    assert!(
        pod["id"].as_str().unwrap().ends_with(&format!("pod{uid}")),
        "{pod}"
    );
    let (net, _) = find("container_network_receive_bytes_total", "");
    assert_eq!(net["interface"], "eth0", "{net}");
    let root = samples
        .iter()
        .any(|(n, l, v)| n == "container_cpu_usage_seconds_total" && l["id"] == "/" && *v > 0.0);
    assert!(root, "the machine's series: {text}");
    assert!(
        samples
            .iter()
            .any(|(n, _, v)| n == "machine_cpu_cores" && *v >= 1.0)
    );
}

fn summary(body: &str, uid: &str) {
    let s: Value = serde_json::from_str(body).unwrap();
    let fs = &s["node"]["fs"];
    assert!(
        fs["capacityBytes"].as_u64() > Some(0),
        "nodefs: {}",
        s["node"]
    );
    assert!(fs["inodesFree"].as_u64().is_some(), "{fs}");
    let image_fs = &s["node"]["runtime"]["imageFs"];
    assert!(
        image_fs["capacityBytes"].as_u64() > Some(0),
        "imageFs: {image_fs}"
    );
    assert!(
        image_fs["usedBytes"].as_u64().is_some(),
        "imageFs: {image_fs}"
    );
    assert!(s["node"]["rlimit"]["maxpid"].as_i64() > Some(0));
    let pods = s["pods"].as_array().unwrap();
    let pod = pods
        .iter()
        .find(|p| p["podRef"]["uid"] == uid)
        .expect("the pod");
    let eight = 8u64 << 20;
    let volume = pod["volume"].as_array().unwrap();
    let data = volume.iter().find(|v| v["name"] == "data").expect("data");
    assert!(data["usedBytes"].as_u64() >= Some(eight), "{data}");
    assert!(data["capacityBytes"].as_u64() > data["usedBytes"].as_u64());
    let eph = pod["ephemeral-storage"]["usedBytes"].as_u64();
    assert!(
        eph >= Some(eight),
        "ephemeral storage: {}",
        pod["ephemeral-storage"]
    );
    let main = &pod["containers"][0];
    assert_eq!(pod["network"]["name"], "eth0", "{}", pod["network"]);
    assert!(
        pod["network"]["rxBytes"].as_u64().is_some(),
        "{}",
        pod["network"]
    );
    assert!(main["rootfs"]["time"].is_string(), "{main}");
    assert!(main["rootfs"]["usedBytes"].as_u64().is_some(), "{main}");
    assert!(main["logs"]["usedBytes"].as_u64() > Some(0), "{main}");
    assert!(
        pod["process_stats"]["process_count"].as_u64() >= Some(1),
        "{pod}"
    );
}
