//! create, update (PUT), patch, delete, deletecollection, and a pod's eviction.

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use podvisor_client::{DeleteParams, Deleted, Patch, PostParams, Propagation, Subresource};
use podvisor_core::pod::MIRROR_ANNOTATION;
use podvisor_store::StoredObject;
use podvisor_store::actor::{Create, Delete, List, PatchObject, Replace};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{ApiState, Params, body, guards, read};
use crate::status::ApiError;
use crate::target::Target;

pub(super) fn opts(p: &Params) -> PostParams {
    PostParams {
        dry_run: p.dry_run(),
    }
}

fn subresource(t: &Target) -> Subresource {
    match t.subresource.as_deref() {
        Some("status") => Subresource::Status,
        Some("ephemeralcontainers") => Subresource::EphemeralContainers,
        Some("resize") => Subresource::Resize,
        _ => Subresource::Main,
    }
}

pub(super) async fn create(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let object = body::object_of(req, &raw, &t.resource, p.strict())?;
    guards::refuse_mirror(&t, object.name(), guards::claims_mirror(&object))?;
    guards::may_bind(req, state, &t, &object).await?;
    let msg = Create {
        namespace: t.namespace.clone(),
        object,
        opts: opts(p),
    };
    let o = state.ask(msg).await?;
    Ok(body::object(&o, true))
}

pub(super) async fn update(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let sub = subresource(&t);
    let strict = sub == Subresource::Main && p.strict();
    let mut object = body::object_of(req, &raw, &t.resource, strict)?;
    let name = t.name.clone().unwrap_or_default();
    if !object.name().is_empty() && object.name() != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            object.name()
        )));
    }
    let meta = object.meta_mut();
    meta.name = Some(name);
    if let Some(ns) = &t.namespace {
        meta.namespace = Some(ns.clone());
    }
    guards::may_bind(req, state, &t, &object).await?;
    let msg = Replace {
        object,
        sub,
        opts: opts(p),
        manager: manager(req, p),
    };
    let o = state.ask(msg).await?;
    Ok(body::object(&o, false))
}

/// The patch a request carries, by its content type.
pub(super) fn patch_of(content_type: &str, raw: &[u8]) -> Result<Patch, ApiError> {
    let doc: Value = serde_json::from_slice(raw)
        .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?;
    match content_type.split(';').next().unwrap_or_default().trim() {
        "application/json-patch+json" => serde_json::from_value(doc)
            .map(Patch::Json)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}"))),
        "application/merge-patch+json" => Ok(Patch::Merge(doc)),
        "application/strategic-merge-patch+json" => Ok(Patch::Strategic(doc)),
        other => Err(ApiError::unsupported_media(other)),
    }
}

/// A patch is applied by the store inside its write: nothing can come between the read
/// and the write, and a `resourceVersion` the patch names is a precondition.
pub(super) async fn patch(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let sub = subresource(&t);
    let content_type = body::content_type(req);
    let patch = if content_type.starts_with("application/apply-patch") {
        let manager = p.field_manager.clone().filter(|m| !m.is_empty());
        let config = body::parse(&content_type, &raw)?;
        let claims = !config["metadata"]["annotations"][MIRROR_ANNOTATION].is_null();
        guards::refuse_mirror(&t, t.name.as_deref().unwrap_or_default(), claims)?;
        guards::may_bind_patched(req, state, &t, Some(&config)).await?;
        Patch::Apply {
            config,
            manager: manager.ok_or_else(|| {
                ApiError::bad_request(
                    "PATCH requests with application/apply-patch+yaml require fieldManager",
                )
            })?,
            force: p.force.unwrap_or(false),
        }
    } else {
        guards::may_bind_patched(req, state, &t, None).await?;
        patch_of(&content_type, &raw)?
    };
    let msg = PatchObject {
        kind: t.resource.kind,
        namespace: t.namespace.clone().unwrap_or_default(),
        name: t.name.clone().unwrap_or_default(),
        patch,
        sub,
        strict: sub == Subresource::Main && p.strict(),
        opts: opts(p),
        manager: manager(req, p),
    };
    let o = state.ask(msg).await?;
    Ok(body::object(&o, false))
}

/// Who a write is for, as server-side apply records it: `fieldManager`, else the client's
/// name from its User-Agent (`kubectl/v1.32.3 (...)` is `kubectl`), as kube-apiserver does.
pub(super) fn manager(req: &HttpRequest, p: &Params) -> Option<String> {
    let given = p
        .field_manager
        .clone()
        .filter(|m| !m.is_empty() && m.len() <= 128);
    given.or_else(|| {
        let agent = req.headers().get(actix_web::http::header::USER_AGENT)?;
        let name = agent.to_str().ok()?.split('/').next()?.trim();
        (!name.is_empty() && name.len() <= 128).then(|| name.to_string())
    })
}

/// A body that may be empty (DELETE, eviction), parsed per its content type.
fn optional_body(req: &HttpRequest, raw: &[u8]) -> Result<Value, ApiError> {
    if raw.is_empty() {
        return Ok(json!({}));
    }
    body::parse(&body::content_type(req), raw)
}

/// DeleteOptions from the body (kubectl sends them there) and the query.
fn delete_options(b: &Value, p: &Params) -> Result<DeleteParams, ApiError> {
    let values: Vec<&str> = match &b["dryRun"] {
        Value::Null => Vec::new(),
        Value::Array(d) => d.iter().map(|x| x.as_str().unwrap_or("")).collect(),
        _ => return Err(ApiError::bad_request("dryRun: must be a list of strings")),
    };
    super::check_dry_run(values.iter().copied())?;
    let dry_run = !values.is_empty();
    Ok(DeleteParams {
        grace_seconds: b["gracePeriodSeconds"].as_i64().or(p.grace_period_seconds),
        precondition_uid: b["preconditions"]["uid"].as_str().map(str::to_string),
        precondition_resource_version: b["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_string),
        propagation: propagation(b, p)?,
        dry_run: dry_run || p.dry_run(),
    })
}

/// `propagationPolicy`, or the deprecated `orphanDependents` clients still send (true:
/// Orphan, false: Background); both at once are refused, as kube-apiserver refuses them.
fn propagation(b: &Value, p: &Params) -> Result<Propagation, ApiError> {
    let policy = b["propagationPolicy"]
        .as_str()
        .or(p.propagation_policy.as_deref());
    let orphan = b["orphanDependents"].as_bool().or(p.orphan_dependents);
    match (orphan, policy) {
        (Some(o), Some(_)) => Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "orphanDependents: Invalid value: {o}: orphanDependents and deletionPropagation cannot be both set"
            ),
        )),
        (Some(true), None) => Ok(Propagation::Orphan),
        (Some(false), None) => Ok(Propagation::Background),
        (None, policy) => Ok(policy
            .map(Propagation::parse)
            .transpose()?
            .unwrap_or_default()),
    }
}

async fn delete_one(
    state: &ApiState,
    t: &Target,
    name: &str,
    opts: DeleteParams,
) -> Result<Deleted<Arc<StoredObject>>, ApiError> {
    let msg = Delete {
        kind: t.resource.kind,
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
    let o = delete_one(state, &t, &name, opts).await?.into_inner();
    let mut r = body::object(&o, false);
    let mirror = o.object().is_ok_and(|o| {
        let annotations = o.meta().annotations.as_ref();
        annotations.is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
    });
    if mirror {
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

/// POST pods/{name}/eviction: a delete with the eviction's DeleteOptions (no disruption
/// budgets exist here to refuse it); of the query, only a dry run holds for it too, as
/// kube-apiserver's `propagateDryRun` has it (an eviction is a create).
pub(super) async fn evict(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let b = optional_body(req, &raw)?;
    let query = Params {
        dry_run: p.dry_run.clone(),
        ..Params::default()
    };
    let opts = delete_options(&b["deleteOptions"], &query)?;
    let name = t.name.clone().unwrap_or_default();
    delete_one(state, &t, &name, opts).await?;
    Ok(HttpResponse::Created().json(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_read_by_its_content_type() {
        let merge = br#"{"data":{"a":"1"}}"#;
        let p = patch_of("application/merge-patch+json", merge).unwrap();
        assert!(matches!(p, Patch::Merge(_)));
        let ops = br#"[{"op":"test","path":"/metadata/resourceVersion","value":"7"}]"#;
        assert!(matches!(
            patch_of("application/json-patch+json", ops).unwrap(),
            Patch::Json(_)
        ));
        assert!(patch_of("application/json-patch+json", merge).is_err());
        let e = patch_of("application/cbor", merge).unwrap_err();
        assert_eq!(e.code, 415);
    }
}
