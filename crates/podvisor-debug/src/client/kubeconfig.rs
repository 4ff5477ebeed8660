//! The part of a kubeconfig a client needs: the current context's server, CA and token.

use std::path::Path;

use base64::Engine as _;
use serde_yaml_ng::Value;

use super::ClientError;

pub(super) struct Kubeconfig {
    pub server: String,
    pub ca_pem: Vec<u8>,
    pub token: Option<String>,
}

/// The entry of `list` named `name` (or the first, when no name is given).
fn named<'a>(v: &'a Value, list: &str, name: Option<&str>) -> Option<&'a Value> {
    let items = v.get(list)?.as_sequence()?;
    match name {
        Some(n) => items
            .iter()
            .find(|i| i.get("name").and_then(Value::as_str) == Some(n)),
        None => items.first(),
    }
}

fn text<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a str> {
    v?.get(key)?.as_str()
}

pub(super) fn read(path: &Path) -> Result<Kubeconfig, ClientError> {
    let bad = |reason: String| ClientError::Kubeconfig {
        path: path.display().to_string(),
        reason,
    };
    let raw = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let v: Value = serde_yaml_ng::from_str(&raw).map_err(|e| bad(e.to_string()))?;
    let current = v.get("current-context").and_then(Value::as_str);
    let context = named(&v, "contexts", current).and_then(|c| c.get("context"));
    let cluster = named(&v, "clusters", text(context, "cluster")).and_then(|c| c.get("cluster"));
    let user = named(&v, "users", text(context, "user")).and_then(|u| u.get("user"));
    let server = text(cluster, "server").ok_or_else(|| bad("no cluster server".into()))?;
    let ca = text(cluster, "certificate-authority-data")
        .ok_or_else(|| bad("no certificate-authority-data".into()))?;
    let ca_pem = base64::engine::general_purpose::STANDARD
        .decode(ca.trim())
        .map_err(|e| bad(format!("certificate-authority-data: {e}")))?;
    Ok(Kubeconfig {
        server: server.to_string(),
        ca_pem,
        token: text(user, "token").map(str::to_string),
    })
}
