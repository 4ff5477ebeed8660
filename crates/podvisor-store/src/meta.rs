//! What the store sets and keeps on every write, as kube-apiserver's registry does: on
//! create the UID, the creation time, a generated name, the first generation and a reset
//! status; on update the fields no client may change, the stored status (or everything but
//! it, for a status write), and a generation bumped by spec changes only.

use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};
use serde_json::{Map, Value, json};

use crate::error::StoreError;
use crate::object::Resource;

/// The largest object the store keeps, as etcd's default request limit.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

pub(crate) fn now() -> Value {
    serde_json::to_value(podvisor_core::time::now()).unwrap_or(Value::Null)
}

fn invalid(path: &str, value: &str, detail: &str) -> StoreError {
    StoreError::Invalid {
        kind: "object",
        name: String::new(),
        errors: FieldErrors(vec![FieldError::invalid(
            &FieldPath::new(path),
            value,
            detail,
        )]),
    }
}

/// Five characters for a `generateName`, from a fresh UUID's randomness.
fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4().as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

fn meta_mut(v: &mut Value) -> Result<&mut Map<String, Value>, StoreError> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| StoreError::BadRequest("the body is not a JSON object".into()))?;
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    meta.as_object_mut()
        .ok_or_else(|| invalid("metadata", "", "must be an object"))
}

/// Sets the type fields, or refuses a body of another kind.
fn check_type(res: &Resource, v: &mut Value) -> Result<(), StoreError> {
    let want = (res.api_version(), res.kind.as_str());
    let obj = v
        .as_object_mut()
        .ok_or_else(|| StoreError::BadRequest("the body is not a JSON object".into()))?;
    for (field, want) in [("apiVersion", want.0.as_str()), ("kind", want.1)] {
        match obj.get(field).and_then(Value::as_str) {
            None | Some("") => {
                obj.insert(field.into(), Value::String(want.into()));
            }
            Some(got) if got == want => {}
            Some(got) => {
                return Err(StoreError::BadRequest(format!(
                    "{field} {got:?} does not match the resource ({want})"
                )));
            }
        }
    }
    Ok(())
}

/// Fills in the namespace from the request path, or refuses a body naming another one.
pub(crate) fn check_namespace(
    res: &Resource,
    v: &mut Value,
    path_ns: Option<&str>,
) -> Result<(), StoreError> {
    let meta = meta_mut(v)?;
    if !res.namespaced() {
        meta.remove("namespace");
        return Ok(());
    }
    let ns = path_ns.unwrap_or("default");
    match meta.get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            meta.insert("namespace".into(), ns.into());
            Ok(())
        }
        Some(got) if got == ns => Ok(()),
        Some(got) => Err(StoreError::BadRequest(format!(
            "the namespace of the provided object ({got}) does not match the namespace sent on the request ({ns})"
        ))),
    }
}

/// A new object's server-set fields.
pub(crate) fn prepare_create(
    res: &Resource,
    v: &mut Value,
    path_ns: Option<&str>,
) -> Result<(), StoreError> {
    check_type(res, v)?;
    check_namespace(res, v, path_ns)?;
    let meta = meta_mut(v)?;
    let name = meta.get("name").and_then(Value::as_str).unwrap_or_default();
    if name.is_empty() {
        let prefix = meta.get("generateName").and_then(Value::as_str);
        let Some(prefix) = prefix.filter(|p| !p.is_empty()) else {
            return Err(StoreError::Invalid {
                kind: res.kind.as_str(),
                name: String::new(),
                errors: FieldErrors(vec![FieldError::required(
                    &FieldPath::new("metadata.name"),
                    "name or generateName is required",
                )]),
            });
        };
        let name = format!("{prefix}{}", name_suffix());
        meta.insert("name".into(), name.into());
    }
    meta.insert("uid".into(), uuid::Uuid::new_v4().to_string().into());
    meta.insert("creationTimestamp".into(), now());
    for server_only in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
    ] {
        meta.remove(server_only);
    }
    if res.has_spec {
        meta.insert("generation".into(), 1.into());
    }
    reset_status(res, v);
    stamp_taints(res, v, None);
    Ok(())
}

/// A node's NoExecute taints carry `timeAdded`: kept from the stored taint of the same key,
/// value and effect, else the time it first appears (unless the client gave one). The
/// taint eviction scheduler counts tolerations from it, so a restart never restarts a
/// countdown.
fn stamp_taints(res: &Resource, new: &mut Value, old: Option<&Value>) {
    if res.kind != podvisor_core::Kind::Node {
        return;
    }
    let identity = |t: &Value| (t["key"].clone(), t["value"].clone(), t["effect"].clone());
    let before: Vec<&Value> = old
        .and_then(|o| o["spec"]["taints"].as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let Some(taints) = new["spec"]["taints"].as_array_mut() else {
        return;
    };
    for t in taints.iter_mut().filter(|t| t["effect"] == "NoExecute") {
        let kept = before
            .iter()
            .find(|o| identity(o) == identity(t))
            .map(|o| o["timeAdded"].clone())
            .filter(|a| a.is_string());
        match kept {
            Some(at) => t["timeAdded"] = at,
            None if t["timeAdded"].is_string() => {}
            None => t["timeAdded"] = now(),
        }
    }
}

/// Status is the server's to set: what a create asks for is replaced by the kind's first.
fn reset_status(res: &Resource, v: &mut Value) {
    use podvisor_core::Kind;
    let first = match res.kind {
        Kind::Pod => json!({"phase": "Pending"}),
        Kind::ReplicaSet => json!({"replicas": 0}),
        Kind::Namespace => json!({"phase": "Active"}),
        _ => return,
    };
    v["status"] = first;
}

/// The object an update stores: `new` with what a client cannot change taken from `old`.
pub(crate) fn prepare_update(
    res: &Resource,
    old: &Value,
    mut new: Value,
    status_only: bool,
) -> Result<Value, StoreError> {
    if status_only {
        let mut out = old.clone();
        out["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        return Ok(out);
    }
    check_type(res, &mut new)?;
    let old_meta = &old["metadata"];
    let meta = meta_mut(&mut new)?;
    for keep in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
    ] {
        match old_meta.get(keep) {
            Some(v) => meta.insert(keep.into(), v.clone()),
            None => meta.remove(keep),
        };
    }
    if res.has_status {
        new["status"] = old.get("status").cloned().unwrap_or(Value::Null);
    }
    stamp_taints(res, &mut new, Some(old));
    if res.has_spec && old.get("spec") != new.get("spec") {
        let generation = old_meta["generation"].as_i64().unwrap_or(0) + 1;
        new["metadata"]["generation"] = generation.into();
    }
    Ok(new)
}

/// The object's final form: its revision set and its size checked.
pub(crate) fn seal(v: &mut Value, revision: u64) -> Result<Vec<u8>, StoreError> {
    if v.get("status").is_some_and(Value::is_null)
        && let Some(o) = v.as_object_mut()
    {
        o.remove("status");
    }
    v["metadata"]["resourceVersion"] = revision.to_string().into();
    let bytes = serde_json::to_vec(v).map_err(|e| StoreError::BadRequest(e.to_string()))?;
    if bytes.len() > MAX_OBJECT_BYTES {
        return Err(StoreError::TooLarge {
            size: bytes.len(),
            limit: MAX_OBJECT_BYTES,
        });
    }
    Ok(bytes)
}
