//! create, update (PUT), patch, delete, deletecollection, and a pod's eviction.

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use podvisor_store::actor::{Create, Delete, Deleted, List, Update};
use podvisor_store::{DeleteOptions, Propagation, StoredObject, WriteOptions};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{ApiState, Params, body, read};
use crate::admission;
use crate::status::ApiError;
use crate::target::Target;
use podvisor_core::pod::MIRROR_ANNOTATION;

/// A patch retried this many times when the object changed between read and write.
const PATCH_ATTEMPTS: usize = 5;

fn opts(p: &Params) -> WriteOptions {
    WriteOptions {
        dry_run: p.dry_run(),
    }
}

pub(super) async fn create(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let mut v = body::parse(&body::content_type(req), &raw)?;
    if let (Some(ns), Some(meta)) = (
        &t.namespace,
        v.get_mut("metadata").and_then(Value::as_object_mut),
    ) && meta.get("namespace").is_none()
    {
        meta.insert("namespace".into(), ns.clone().into());
    }
    if p.strict() {
        admission::strict(&t.resource, &v)?;
    }
    let msg = Create {
        resource: t.resource,
        namespace: t.namespace.clone(),
        body: v,
        opts: opts(p),
    };
    let o = state.ask(msg).await?;
    Ok(body::object(&o, true))
}

/// Checks and stores `new` as the next version of `old`.
async fn replace(
    state: &ApiState,
    t: &Target,
    mut new: Value,
    p: &Params,
) -> Result<Arc<StoredObject>, ApiError> {
    let name = t.name.clone().unwrap_or_default();
    if new["metadata"]["name"].as_str().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            new["metadata"]["name"]
        )));
    }
    new["metadata"]["name"] = name.into();
    if let Some(ns) = &t.namespace {
        new["metadata"]["namespace"] = ns.clone().into();
    }
    let status_only = t.subresource.as_deref() == Some("status");
    if !status_only && p.strict() {
        admission::strict(&t.resource, &new)?;
    }
    let msg = Update {
        resource: t.resource,
        body: new,
        status_only,
        opts: opts(p),
    };
    state.ask(msg).await
}

pub(super) async fn update(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let new = body::parse(&body::content_type(req), &raw)?;
    let o = replace(state, &t, new, p).await?;
    Ok(body::object(&o, false))
}

/// JSON patches longer than this are refused (kube-apiserver's limit).
const MAX_JSON_PATCH_OPS: usize = 10_000;

/// A JSON patch, one operation at a time: `copy` can double the document at every step, so
/// the size is checked after each one and a patch that grows it past twice the largest
/// object is refused before it can exhaust memory.
fn apply_json_patch(target: &mut Value, patch: Value) -> Result<(), ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(patch)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
    if ops.0.len() > MAX_JSON_PATCH_OPS {
        let message = format!(
            "the JSON patch has {} operations; the limit is {MAX_JSON_PATCH_OPS}",
            ops.0.len()
        );
        return Err(ApiError::new(413, "RequestEntityTooLarge", message));
    }
    let limit = 2 * podvisor_store::MAX_OBJECT_BYTES;
    for op in ops.0 {
        let copies = matches!(op, json_patch::PatchOperation::Copy(_));
        json_patch::patch(target, &json_patch::Patch(vec![op]))
            .map_err(|e| ApiError::new(422, "Invalid", format!("the JSON patch failed: {e}")))?;
        if copies && serde_json::to_vec(target).map_or(0, |b| b.len()) > limit {
            let message = format!("the JSON patch makes the object larger than {limit} bytes");
            return Err(ApiError::new(413, "RequestEntityTooLarge", message));
        }
    }
    Ok(())
}

pub(super) fn apply_patch(
    content_type: &str,
    target: &mut Value,
    raw: &[u8],
) -> Result<(), ApiError> {
    let patch: Value = serde_json::from_slice(raw)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    let ct = content_type.split(';').next().unwrap_or_default().trim();
    match ct {
        "application/json-patch+json" => apply_json_patch(target, patch),
        "application/merge-patch+json" => {
            json_patch::merge(target, &patch);
            Ok(())
        }
        "application/strategic-merge-patch+json" => crate::smp::apply(target, &patch),
        other => Err(ApiError::unsupported_media(other)),
    }
}

/// The resourceVersion a patch names as its precondition, if any (a merge or strategic
/// patch with `metadata.resourceVersion`, or a JSON patch that sets or tests it).
fn patch_precondition(raw: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(raw).ok()?;
    if let Some(rv) = v["metadata"]["resourceVersion"].as_str() {
        return Some(rv.to_string());
    }
    v.as_array()?
        .iter()
        .find(|op| op["path"] == "/metadata/resourceVersion" && op["value"].is_string())
        .and_then(|op| op["value"].as_str().map(str::to_string))
}

pub(super) async fn patch(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let ct = body::content_type(req);
    // A patch that names a resourceVersion is a precondition: a stale one is a 409, never
    // retried. One that names none applies to whatever is current, retrying conflicts.
    let precondition = patch_precondition(&raw);
    let mut attempt = 0;
    loop {
        let old = read::fetch(state, &t).await?;
        let mut v = old.value();
        apply_patch(&ct, &mut v, &raw)?;
        let against = precondition
            .clone()
            .unwrap_or_else(|| old.revision.to_string());
        v["metadata"]["resourceVersion"] = against.into();
        match replace(state, &t, v, p).await {
            Err(e)
                if e.reason == "Conflict"
                    && precondition.is_none()
                    && attempt + 1 < PATCH_ATTEMPTS =>
            {
                attempt += 1
            }
            Err(e) => return Err(e),
            Ok(o) => return Ok(body::object(&o, false)),
        }
    }
}

/// A body that may be empty (DELETE, eviction), parsed per its content type.
fn optional_body(req: &HttpRequest, raw: &[u8]) -> Result<Value, ApiError> {
    if raw.is_empty() {
        return Ok(json!({}));
    }
    body::parse(&body::content_type(req), raw)
}

/// DeleteOptions from the body (kubectl sends them there) and the query.
fn delete_options(b: &Value, p: &Params) -> Result<DeleteOptions, ApiError> {
    let policy = b["propagationPolicy"]
        .as_str()
        .or(p.propagation_policy.as_deref());
    let dry_run = b["dryRun"]
        .as_array()
        .is_some_and(|d| d.iter().any(|x| x == "All"));
    Ok(DeleteOptions {
        grace_seconds: b["gracePeriodSeconds"].as_i64().or(p.grace_period_seconds),
        precondition_uid: b["preconditions"]["uid"].as_str().map(str::to_string),
        precondition_revision: b["preconditions"]["resourceVersion"]
            .as_str()
            .and_then(|r| r.parse().ok()),
        propagation: policy
            .map(Propagation::parse)
            .transpose()?
            .unwrap_or_default(),
        dry_run: dry_run || p.dry_run(),
    })
}

async fn delete_one(
    state: &ApiState,
    t: &Target,
    name: &str,
    opts: DeleteOptions,
) -> Result<Deleted, ApiError> {
    let msg = Delete {
        resource: t.resource,
        namespace: t.namespace.clone().unwrap_or_default(),
        name: name.to_string(),
        opts,
    };
    state.ask(msg).await
}

pub(super) async fn delete(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let opts = delete_options(&optional_body(req, &raw)?, p)?;
    let name = t.name.clone().unwrap_or_default();
    let o = match delete_one(state, &t, &name, opts).await? {
        Deleted::Marked(o) | Deleted::Gone(o) => o,
    };
    let mut r = body::object(&o, false);
    if o.value()["metadata"]["annotations"][MIRROR_ANNOTATION].is_string() {
        let warning = format!(
            "299 - \"pod {name} mirrors a static pod from the node's manifest directory: it keeps running and its mirror comes back; remove its manifest file to stop it\""
        );
        if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&warning) {
            r.headers_mut().insert(actix_web::http::header::WARNING, v);
        }
    }
    Ok(r)
}

pub(super) async fn delete_collection(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let options = optional_body(req, &raw)?;
    let list = List {
        selector: read::selector(&t, p)?,
        limit: None,
        continue_token: None,
    };
    let page = state.ask(list).await?;
    for o in &page.items {
        let opts = delete_options(&options, p)?;
        // Across namespaces (`DELETE /api/v1/pods`), each in its own.
        let mut target = t.clone();
        target.namespace = (!o.namespace.is_empty()).then(|| o.namespace.clone());
        match delete_one(state, &target, &o.name, opts).await {
            Ok(_) | Err(ApiError { code: 404, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let b = body::list(&t.resource, &page.items, page.revision, None);
    Ok(HttpResponse::Ok().content_type("application/json").body(b))
}

/// POST pods/{name}/eviction: a delete with the eviction's options (no disruption budgets
/// exist here to refuse it).
pub(super) async fn evict(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let b = optional_body(req, &raw)?;
    let opts = delete_options(&b["deleteOptions"], &Params::default())?;
    let name = t.name.clone().unwrap_or_default();
    delete_one(state, &t, &name, opts).await?;
    Ok(HttpResponse::Created().json(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_patch_that_doubles_the_object_is_refused_before_memory_runs_out() {
        let mut target = json!({"a": "x".repeat(1000)});
        let ops: Vec<Value> = (0..40)
            .map(|i| json!({"op": "copy", "from": "", "path": format!("/a{i}")}))
            .collect();
        let raw = serde_json::to_vec(&ops).unwrap();
        let e = apply_patch("application/json-patch+json", &mut target, &raw).unwrap_err();
        assert_eq!(e.code, 413, "{e}");
        let ok = serde_json::to_vec(&json!([{"op": "copy", "from": "/a", "path": "/b"}])).unwrap();
        let mut fresh = json!({"a": "x"});
        apply_patch("application/json-patch+json", &mut fresh, &ok).unwrap();
        assert_eq!(fresh["b"], "x");
    }

    #[test]
    fn a_patch_naming_a_resource_version_is_a_precondition() {
        let merge = br#"{"metadata":{"resourceVersion":"42"},"data":{"a":"1"}}"#;
        assert_eq!(patch_precondition(merge).as_deref(), Some("42"));
        let json = br#"[{"op":"test","path":"/metadata/resourceVersion","value":"7"}]"#;
        assert_eq!(patch_precondition(json).as_deref(), Some("7"));
        assert_eq!(patch_precondition(br#"{"data":{"a":"1"}}"#), None);
    }
}
