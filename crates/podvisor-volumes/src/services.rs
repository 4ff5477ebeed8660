//! The environment a container learns its cluster's Services from, as the kubelet makes
//! it (`envvars.FromServices`): for each Service with a cluster IP, `<NAME>_SERVICE_HOST`,
//! `<NAME>_SERVICE_PORT` (and one per named port) and the Docker-link variables
//! (`<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>...`). The Services are those of the pod's
//! namespace when `enableServiceLinks` (the default) and, always, the API server's own
//! (`default/kubernetes`), which in-cluster clients find the API by.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;

fn env_name(name: &str) -> String {
    name.to_uppercase().replace('-', "_")
}

fn host_port(ip: &str, port: i32) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// The variables of one Service, in the kubelet's order.
fn one(s: &Service, out: &mut Vec<(String, String)>) {
    let spec = s.spec.as_ref();
    let Some(ip) = spec
        .and_then(|s| s.cluster_ip.as_deref())
        .filter(|ip| !ip.is_empty() && *ip != "None")
    else {
        return;
    };
    let ports = spec.and_then(|s| s.ports.as_deref()).unwrap_or(&[]);
    let Some(first) = ports.first() else { return };
    let name = env_name(s.metadata.name.as_deref().unwrap_or_default());
    out.push((format!("{name}_SERVICE_HOST"), ip.to_string()));
    out.push((format!("{name}_SERVICE_PORT"), first.port.to_string()));
    for p in ports {
        if let Some(pn) = p.name.as_deref().filter(|n| !n.is_empty()) {
            out.push((
                format!("{name}_SERVICE_PORT_{}", env_name(pn)),
                p.port.to_string(),
            ));
        }
    }
    let proto = |p: &k8s_openapi::api::core::v1::ServicePort| {
        p.protocol.clone().unwrap_or_else(|| "TCP".into())
    };
    let url = |p| format!("{}://{}", proto(p).to_lowercase(), host_port(ip, p.port));
    out.push((format!("{name}_PORT"), url(first)));
    for p in ports {
        let prefix = format!("{name}_PORT_{}_{}", p.port, proto(p).to_uppercase());
        out.push((prefix.clone(), url(p)));
        out.push((format!("{prefix}_PROTO"), proto(p).to_lowercase()));
        out.push((format!("{prefix}_PORT"), p.port.to_string()));
        out.push((format!("{prefix}_ADDR"), ip.to_string()));
    }
}

/// The variables of every Service given.
pub(crate) fn service_env(services: &[Arc<Service>]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in services {
        one(s, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str, ip: &str, ports: serde_json::Value) -> Arc<Service> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "spec": {"clusterIP": ip, "ports": ports}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn variables_as_the_kubelet_names_them() {
        let api = service(
            "kubernetes",
            "10.96.0.1",
            serde_json::json!([{"name": "https", "port": 443}]),
        );
        let db = service(
            "my-db",
            "10.96.0.9",
            serde_json::json!([
            {"name": "pg", "port": 5432}, {"port": 9187, "protocol": "UDP"}]),
        );
        let headless = service("raw", "None", serde_json::json!([{"port": 1}]));
        let env = service_env(&[api, db, headless]);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("KUBERNETES_SERVICE_HOST"), Some("10.96.0.1"));
        assert_eq!(get("KUBERNETES_SERVICE_PORT"), Some("443"));
        assert_eq!(get("KUBERNETES_SERVICE_PORT_HTTPS"), Some("443"));
        assert_eq!(get("KUBERNETES_PORT"), Some("tcp://10.96.0.1:443"));
        assert_eq!(get("KUBERNETES_PORT_443_TCP_ADDR"), Some("10.96.0.1"));
        assert_eq!(get("MY_DB_SERVICE_PORT_PG"), Some("5432"));
        assert_eq!(get("MY_DB_PORT_9187_UDP"), Some("udp://10.96.0.9:9187"));
        assert_eq!(get("MY_DB_PORT_9187_UDP_PROTO"), Some("udp"));
        assert!(
            get("RAW_SERVICE_HOST").is_none(),
            "a headless Service has none"
        );
        let v6 = service("v6", "fd00::1", serde_json::json!([{"port": 80}]));
        assert_eq!(service_env(&[v6])[2].1, "tcp://[fd00::1]:80");
    }
}
