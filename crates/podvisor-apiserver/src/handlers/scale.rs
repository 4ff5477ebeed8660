//! replicasets/{name}/scale and deployments/{name}/scale: the Scale view of a ReplicaSet
//! or Deployment (`kubectl scale`), read from and written to the object's JSON.

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use podvisor_client::{AnyObject, Error as ClientError, Subresource};
use podvisor_core::Kind;
use podvisor_core::labels::selector_string;
use podvisor_store::StoredObject;
use podvisor_store::actor::Replace;
use serde_json::{Value, json};

use super::{ApiState, Params, body, read, write};
use crate::status::ApiError;
use crate::target::Target;

fn scale_of(o: &Value) -> Value {
    let selector: LabelSelector =
        serde_json::from_value(o["spec"]["selector"].clone()).unwrap_or_default();
    let m = &o["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": o["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": o["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": selector_string(&selector)},
    })
}

fn json_of(o: &StoredObject) -> Result<Value, ApiError> {
    serde_json::from_slice(&o.json).map_err(|e| {
        ApiError::new(
            500,
            "InternalError",
            format!("stored object unreadable: {e}"),
        )
    })
}

async fn fetch(state: &ApiState, t: &Target) -> Result<Value, ApiError> {
    let o = read::fetch(state, t).await?;
    if !matches!(o.kind, Kind::ReplicaSet | Kind::Deployment) {
        return Err(ApiError::method_not_allowed("scale"));
    }
    json_of(&o)
}

pub(super) async fn get(state: &ApiState, t: Target) -> Result<HttpResponse, ApiError> {
    Ok(body::json(&scale_of(&fetch(state, &t).await?)))
}

/// The Scale a request asks for: its body (PUT), or the current Scale patched (PATCH). The
/// resourceVersion of a patched Scale is the client's only if the patch names one.
fn asked(req: &HttpRequest, raw: &[u8], current: &Value) -> Result<Value, ApiError> {
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
        current["metadata"]["name"].as_str().unwrap_or_default(),
    )?;
    Ok(scale)
}

pub(super) async fn set(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let mut attempt = 0;
    loop {
        let current = fetch(state, &t).await?;
        let scale = asked(req, &raw, &current)?;
        let mut next = current.clone();
        next["spec"]["replicas"] = replicas(&scale)?.into();
        let precondition = scale["metadata"]["resourceVersion"]
            .as_str()
            .filter(|v| !v.is_empty());
        if let Some(v) = precondition {
            next["metadata"]["resourceVersion"] = v.into();
        }
        let object = AnyObject::decode(t.resource.kind, next)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let msg = Replace {
            object,
            sub: Subresource::Main,
            opts: write::opts(p),
            manager: write::manager(req, p),
        };
        match state.store.send(msg).await.map_err(ApiError::unavailable)? {
            Ok(o) => return Ok(body::json(&scale_of(&json_of(&o)?))),
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
