//! `metrics.k8s.io/v1beta1`, what `kubectl top` reads (metrics-server serves it in a
//! cluster): `NodeMetrics` and `PodMetrics` made from the node agent's usage summary (the
//! kubelet's `/stats/summary`), which the API is handed as a [`crate::UsageSource`] so it knows
//! nothing of the kubelet. CPU is the rate over the agent's last sampling window, in
//! nanocores; memory the working set. A pod is shown once every container of it has both
//! (metrics-server drops a pod with any container missing), so the first answers after a
//! pod starts, or after the agent starts sampling, can be empty: kubectl then says
//! "metrics not available yet", as it does with metrics-server.

use actix_web::web::{Data, Path, Query};
use actix_web::{HttpResponse, web};
use podvisor_core::stats::{ContainerStats, PodStats, Summary};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::handlers::ApiState;
use crate::status::ApiError;

pub const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";
/// How long each CPU figure is averaged over, at most: the agent's sampling period.
const WINDOW: &str = "10s";

pub fn group() -> Value {
    let gv = json!({"groupVersion": GROUP_VERSION, "version": "v1beta1"});
    json!({"name": "metrics.k8s.io", "versions": [gv], "preferredVersion": gv})
}

pub fn resources() -> Value {
    let r = |name: &str, kind: &str, namespaced: bool| {
        json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind,
            "verbs": ["get", "list"]})
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
        "resources": [r("nodes", "NodeMetrics", false), r("pods", "PodMetrics", true)]})
}

/// An answer, or the error's Status.
fn respond(r: Result<HttpResponse, ApiError>) -> HttpResponse {
    r.unwrap_or_else(|e| e.respond())
}

async fn nodes(state: Data<ApiState>) -> HttpResponse {
    respond(nodes_of(state).await)
}

async fn node(state: Data<ApiState>, name: Path<String>) -> HttpResponse {
    respond(node_of(state, name).await)
}

async fn all_pods(state: Data<ApiState>, q: Query<Selector>) -> HttpResponse {
    respond(all_pods_of(state, q).await)
}

async fn pods_in(state: Data<ApiState>, ns: Path<String>, q: Query<Selector>) -> HttpResponse {
    respond(pods_in_of(state, ns, q).await)
}

async fn pod(state: Data<ApiState>, path: Path<(String, String)>) -> HttpResponse {
    respond(pod_of(state, path).await)
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    let base = "/apis/metrics.k8s.io/v1beta1";
    cfg.route(&format!("{base}/nodes"), web::get().to(nodes))
        .route(&format!("{base}/nodes/{{name}}"), web::get().to(node))
        .route(&format!("{base}/pods"), web::get().to(all_pods))
        .route(
            &format!("{base}/namespaces/{{ns}}/pods"),
            web::get().to(pods_in),
        )
        .route(
            &format!("{base}/namespaces/{{ns}}/pods/{{name}}"),
            web::get().to(pod),
        );
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Selector {
    label_selector: Option<String>,
}

async fn summary(state: &ApiState) -> Result<Summary, ApiError> {
    let source = state
        .usage
        .as_ref()
        .ok_or_else(|| ApiError::not_found("the requested resource (metrics.k8s.io)"))?;
    source()
        .await
        .ok_or_else(|| ApiError::unavailable("the node's usage cannot be read right now"))
}

fn quantity_cpu(nano: u64) -> String {
    format!("{nano}n")
}

fn quantity_memory(bytes: u64) -> String {
    format!("{}Ki", bytes / 1024)
}

fn node_metrics(s: &Summary) -> Option<Value> {
    let cpu = s.node.cpu.as_ref()?;
    let memory = s.node.memory.as_ref()?.working_set_bytes?;
    Some(json!({
        "metadata": {"name": s.node.node_name, "creationTimestamp": podvisor_core::time::now()},
        "timestamp": cpu.time, "window": WINDOW,
        "usage": {"cpu": quantity_cpu(cpu.usage_nano_cores?), "memory": quantity_memory(memory)},
    }))
}

fn container_usage(c: &ContainerStats) -> Option<Value> {
    let cpu = c.cpu.as_ref()?.usage_nano_cores?;
    let memory = c.memory.as_ref()?.working_set_bytes?;
    Some(json!({"name": c.name,
        "usage": {"cpu": quantity_cpu(cpu), "memory": quantity_memory(memory)}}))
}

/// A pod's metrics, if every container of it has both figures.
fn pod_metrics(p: &PodStats) -> Option<Value> {
    let containers: Option<Vec<Value>> = p.containers.iter().map(container_usage).collect();
    let containers = containers.filter(|c| !c.is_empty())?;
    Some(json!({
        "metadata": {"name": p.pod_ref.name, "namespace": p.pod_ref.namespace,
            "creationTimestamp": podvisor_core::time::now()},
        "timestamp": p.cpu.as_ref()?.time, "window": WINDOW, "containers": containers,
    }))
}

fn list(kind: &str, items: Vec<Value>) -> HttpResponse {
    HttpResponse::Ok().json(
        json!({"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {},
        "items": items}),
    )
}

fn one(kind: &str, mut item: Value) -> HttpResponse {
    item["kind"] = kind.into();
    item["apiVersion"] = GROUP_VERSION.into();
    HttpResponse::Ok().json(item)
}

async fn nodes_of(state: Data<ApiState>) -> Result<HttpResponse, ApiError> {
    let s = summary(&state).await?;
    Ok(list(
        "NodeMetricsList",
        node_metrics(&s).into_iter().collect(),
    ))
}

async fn node_of(state: Data<ApiState>, name: Path<String>) -> Result<HttpResponse, ApiError> {
    let s = summary(&state).await?;
    let found = node_metrics(&s).filter(|_| s.node.node_name == *name);
    let m = found.ok_or_else(|| ApiError::not_found(&format!("nodemetrics \"{name}\"")))?;
    Ok(one("NodeMetrics", m))
}

/// The pods of `namespace` (all when `None`) that `selector` picks, by the store's labels.
async fn pods_of(
    state: &ApiState,
    namespace: Option<&str>,
    selector: &Selector,
) -> Result<Vec<Value>, ApiError> {
    let s = summary(state).await?;
    let picked = match selector.label_selector.as_deref().filter(|l| !l.is_empty()) {
        Some(l) => Some(crate::handlers::read::names(state, namespace, l).await?),
        None => None,
    };
    Ok(s.pods
        .iter()
        .filter(|p| namespace.is_none_or(|ns| p.pod_ref.namespace == ns))
        .filter(|p| {
            let key = (p.pod_ref.namespace.clone(), p.pod_ref.name.clone());
            picked.as_ref().is_none_or(|names| names.contains(&key))
        })
        .filter_map(pod_metrics)
        .collect())
}

async fn all_pods_of(state: Data<ApiState>, q: Query<Selector>) -> Result<HttpResponse, ApiError> {
    Ok(list("PodMetricsList", pods_of(&state, None, &q).await?))
}

async fn pods_in_of(
    state: Data<ApiState>,
    ns: Path<String>,
    q: Query<Selector>,
) -> Result<HttpResponse, ApiError> {
    Ok(list(
        "PodMetricsList",
        pods_of(&state, Some(&ns), &q).await?,
    ))
}

async fn pod_of(
    state: Data<ApiState>,
    path: Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (ns, name) = path.into_inner();
    let pods = pods_of(&state, Some(&ns), &Selector::default()).await?;
    let m = pods
        .into_iter()
        .find(|p| p["metadata"]["name"] == name.as_str())
        .ok_or_else(|| ApiError::not_found(&format!("podmetrics \"{name}\"")))?;
    Ok(one("PodMetrics", m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_core::stats::{CpuStats, MemoryStats, PodReference};

    fn container(name: &str, rate: Option<u64>) -> ContainerStats {
        let t = podvisor_core::time::now();
        ContainerStats {
            name: name.into(),
            start_time: Some(t.clone()),
            cpu: Some(CpuStats {
                time: t.clone(),
                usage_nano_cores: rate,
                usage_core_nano_seconds: Some(1),
            }),
            memory: Some(MemoryStats {
                available_bytes: None,
                time: t,
                usage_bytes: None,
                working_set_bytes: Some(4 << 20),
                rss_bytes: None,
            }),
            rootfs: None,
            logs: None,
            runtime_id: String::new(),
        }
    }

    #[test]
    fn a_pod_is_shown_once_every_container_has_a_rate() {
        let t = podvisor_core::time::now();
        let mut pod = PodStats {
            pod_ref: PodReference {
                name: "web".into(),
                namespace: "default".into(),
                uid: "u".into(),
            },
            start_time: Some(t.clone()),
            containers: vec![container("a", Some(1_500_000)), container("b", None)],
            cpu: Some(CpuStats {
                time: t,
                usage_nano_cores: None,
                usage_core_nano_seconds: None,
            }),
            memory: None,
            network: None,
            volumes: vec![],
            ephemeral_storage: None,
            process_stats: None,
        };
        assert!(pod_metrics(&pod).is_none(), "b has no rate yet");
        pod.containers[1] = container("b", Some(0));
        let m = pod_metrics(&pod).unwrap();
        assert_eq!(m["containers"][0]["usage"]["cpu"], "1500000n");
        assert_eq!(m["containers"][0]["usage"]["memory"], "4096Ki");
        assert_eq!(m["metadata"]["namespace"], "default");
    }
}
