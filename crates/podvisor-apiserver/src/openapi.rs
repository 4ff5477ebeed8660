//! The little OpenAPI v3 that kubectl needs: for each group-version, the PATCH operation
//! of each kind, declaring the `fieldValidation` query parameter. Seeing it, kubectl
//! leaves validation to the server (it sends `fieldValidation=Strict`) instead of
//! downloading full schemas, and computes apply patches from its built-in types (no
//! `requestBody` is declared, so it does not look for schemas here).

use podvisor_store::Resource;
use serde_json::{Map, Value, json};

const GROUP_VERSIONS: [(&str, &str); 4] = [
    ("api/v1", ""),
    ("apis/apps/v1", "apps"),
    ("apis/batch/v1", "batch"),
    ("apis/rbac.authorization.k8s.io/v1", podvisor_store::RBAC),
];

pub fn root() -> Value {
    let paths: Map<String, Value> = GROUP_VERSIONS
        .iter()
        .map(|(path, _)| {
            let url = format!("/openapi/v3/{path}?hash={}", env!("CARGO_PKG_VERSION"));
            (path.to_string(), json!({"serverRelativeURL": url}))
        })
        .collect();
    json!({"paths": paths})
}

fn patch_path(r: &Resource) -> String {
    let base = if r.group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/v1", r.group)
    };
    if r.namespaced() {
        format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
    } else {
        format!("{base}/{}/{{name}}", r.plural)
    }
}

/// The document for `path` (`api/v1`, `apis/apps/v1`), or `None`.
pub fn group_version(path: &str) -> Option<Value> {
    let (_, group) = GROUP_VERSIONS.iter().find(|(p, _)| *p == path)?;
    let paths: Map<String, Value> = Resource::ALL
        .iter()
        .filter(|r| r.group == *group)
        .map(|r| {
            let op = json!({
                "operationId": format!("patch{}", r.kind.as_str()),
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind.as_str()},
            });
            (patch_path(r), json!({"patch": op}))
        })
        .collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "podvisor", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}
