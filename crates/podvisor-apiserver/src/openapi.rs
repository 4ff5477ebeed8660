//! OpenAPI v3 (one document per group-version) and v2 (one for all): the schemas of every
//! served kind (`openapi_schemas.rs`), which `kubectl explain` and clients that read
//! schemas use, and for each kind the PATCH operation declaring the `fieldValidation`
//! query parameter: seeing it, kubectl leaves validation to the server (it sends
//! `fieldValidation=Strict`); for a kind without it (TokenReview) kubectl validates
//! against the v2 schema itself, which it reads in protobuf (`openapi_v2.rs`). No `requestBody` is declared: kubectl computes apply
//! patches from its built-in types.

use bytes::Bytes;
use podvisor_store::Resource;
use serde_json::{Map, Value, json};

const GROUP_VERSIONS: [(&str, &str); 5] = [
    ("api/v1", ""),
    ("apis/apps/v1", "apps"),
    ("apis/batch/v1", "batch"),
    (
        "apis/authentication.k8s.io/v1",
        crate::discovery::AUTHENTICATION,
    ),
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
pub fn group_version(path: &str) -> Option<Bytes> {
    let (path, group) = GROUP_VERSIONS.iter().find(|(p, _)| *p == path)?;
    Some(crate::openapi_schemas::cached(path, || document(group)))
}

fn v2_document() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "podvisor", "version": env!("CARGO_PKG_VERSION")},
        "paths": {},
        "definitions": crate::openapi_schemas::definitions(None, "/definitions"),
    })
}

/// The OpenAPI v2 document: every served kind's definitions.
pub fn v2() -> Bytes {
    crate::openapi_schemas::cached("v2", v2_document)
}

/// The same in protobuf, as kubectl asks for it.
pub fn v2_protobuf() -> Bytes {
    crate::openapi_schemas::cached_bytes("v2.pb", || crate::openapi_v2::encode(&v2_document()))
}

fn document(group: &str) -> Value {
    let paths: Map<String, Value> = Resource::ALL
        .iter()
        .filter(|r| r.group == group)
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
    json!({
        "openapi": "3.0.0",
        "info": {"title": "podvisor", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": crate::openapi_schemas::definitions(Some(group), "/components/schemas")},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str) -> Value {
        serde_json::from_slice(&group_version(path).unwrap()).unwrap()
    }

    /// Every `$ref` in `v` names a definition in `defs`.
    fn refs_resolve(v: &Value, defs: &Map<String, Value>, prefix: &str) {
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    let name = r.strip_prefix(prefix).unwrap_or(r);
                    assert!(defs.contains_key(name), "dangling $ref {r}");
                }
                m.values().for_each(|x| refs_resolve(x, defs, prefix));
            }
            Value::Array(a) => a.iter().for_each(|x| refs_resolve(x, defs, prefix)),
            _ => {}
        }
    }

    #[test]
    fn each_group_version_has_its_kinds_schemas_tagged_and_complete() {
        let apps = doc("apis/apps/v1");
        let defs = apps["components"]["schemas"].as_object().unwrap();
        let d = &defs["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        let strategy = &defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
        assert!(
            strategy["description"]
                .as_str()
                .unwrap()
                .contains("strategy"),
            "{strategy}"
        );
        assert!(strategy["allOf"][0]["$ref"].is_string(), "{strategy}");
        refs_resolve(&apps, defs, "#/components/schemas/");
        let auth = doc("apis/authentication.k8s.io/v1");
        let review = &auth["components"]["schemas"]["io.k8s.api.authentication.v1.TokenReview"];
        assert_eq!(
            review["x-kubernetes-group-version-kind"][0]["kind"],
            "TokenReview"
        );
        assert_eq!(
            review["required"],
            json!(["spec"]),
            "metadata is never required"
        );
        assert!(doc("api/v1")["components"]["schemas"]["io.k8s.api.core.v1.Pod"].is_object());
        let v2: Value = serde_json::from_slice(&v2()).unwrap();
        let defs = v2["definitions"].as_object().unwrap();
        assert!(defs.contains_key("io.k8s.api.batch.v1.Job"));
        refs_resolve(&v2, defs, "#/definitions/");
    }
}
