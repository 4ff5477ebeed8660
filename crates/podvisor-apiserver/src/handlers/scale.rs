//! replicasets/{name}/scale: the Scale view of a ReplicaSet (`kubectl scale`).

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use k8s_openapi::api::apps::v1::ReplicaSet;
use podvisor_client::{Error as ClientError, PostParams, Subresource};
use podvisor_core::labels::selector_string;
use podvisor_store::actor::Replace;
use serde_json::{Value, json};

use super::{ApiState, body, read, write};
use crate::status::ApiError;
use crate::target::Target;

fn scale_of(rs: &ReplicaSet) -> Value {
    let spec = rs.spec.as_ref();
    let selector = spec
        .map(|s| selector_string(&s.selector))
        .unwrap_or_default();
    let m = &rs.metadata;
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": m.name, "namespace": m.namespace, "uid": m.uid,
            "resourceVersion": m.resource_version, "creationTimestamp": m.creation_timestamp},
        "spec": {"replicas": spec.and_then(|s| s.replicas).unwrap_or(1)},
        "status": {"replicas": rs.status.as_ref().map_or(0, |s| s.replicas), "selector": selector},
    })
}

async fn fetch(state: &ApiState, t: &Target) -> Result<std::sync::Arc<ReplicaSet>, ApiError> {
    Ok(read::fetch(state, t).await?.typed::<ReplicaSet>()?)
}

pub(super) async fn get(state: &ApiState, t: Target) -> Result<HttpResponse, ApiError> {
    Ok(body::json(&scale_of(&*fetch(state, &t).await?)))
}

/// The Scale a request asks for: its body (PUT), or the current Scale patched (PATCH). The
/// resourceVersion of a patched Scale is the client's only if the patch names one.
fn asked(req: &HttpRequest, raw: &[u8], current: &ReplicaSet) -> Result<Value, ApiError> {
    if req.method() != actix_web::http::Method::PATCH {
        return body::parse(&body::content_type(req), raw);
    }
    let mut scale = scale_of(current);
    scale["metadata"]["resourceVersion"] = Value::Null;
    let patch = write::patch_of(&body::content_type(req), raw)?;
    podvisor_store::patch::apply(
        &mut scale,
        &patch,
        "Scale",
        current.metadata.name.as_deref().unwrap_or_default(),
    )?;
    Ok(scale)
}

pub(super) async fn set(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let mut attempt = 0;
    loop {
        let rs = fetch(state, &t).await?;
        let scale = asked(req, &raw, &rs)?;
        let mut next = (*rs).clone();
        next.spec.get_or_insert_with(Default::default).replicas = Some(replicas(&scale)?);
        let precondition = scale["metadata"]["resourceVersion"]
            .as_str()
            .filter(|v| !v.is_empty());
        if let Some(v) = precondition {
            next.metadata.resource_version = Some(v.to_string());
        }
        let msg = Replace {
            object: podvisor_client::AnyObject::new(next),
            sub: Subresource::Main,
            opts: PostParams::default(),
        };
        match state.store.send(msg).await.map_err(ApiError::unavailable)? {
            Ok(o) => return Ok(body::json(&scale_of(&*o.typed::<ReplicaSet>()?))),
            Err(ClientError::Conflict { .. }) if precondition.is_none() && attempt < 4 => {
                attempt += 1
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn replicas(scale: &Value) -> Result<i32, ApiError> {
    scale["spec"]["replicas"]
        .as_i64()
        .and_then(|r| i32::try_from(r).ok())
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                "spec.replicas: must be a number between 0 and 2147483647",
            )
        })
}
