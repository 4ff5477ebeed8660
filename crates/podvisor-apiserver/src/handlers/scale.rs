//! replicasets/{name}/scale: the Scale view of a ReplicaSet (`kubectl scale`).

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use podvisor_core::labels::selector_string;
use podvisor_store::StoredObject;
use podvisor_store::WriteOptions;
use podvisor_store::actor::Update;
use serde_json::{Value, json};

use super::{ApiState, body, read, write};
use crate::status::ApiError;
use crate::target::Target;

fn scale_of(o: &StoredObject) -> Value {
    let v = o.value();
    let selector: LabelSelector =
        serde_json::from_value(v["spec"]["selector"].clone()).unwrap_or_default();
    let selector = selector_string(&selector);
    let m = &v["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": v["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": v["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

pub(super) async fn get(state: &ApiState, t: Target) -> Result<HttpResponse, ApiError> {
    let o = read::fetch(state, &t).await?;
    Ok(body::json(&scale_of(&o)))
}

pub(super) async fn set(
    req: &HttpRequest,
    raw: Bytes,
    state: &ApiState,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let patching = req.method() == actix_web::http::Method::PATCH;
    let mut attempt = 0;
    loop {
        let o = read::fetch(state, &t).await?;
        let mut scale = scale_of(&o);
        if patching {
            // The patch applies to the current Scale; the resourceVersion that came with it
            // was ours, not the client's precondition (unless the patch names one).
            scale["metadata"]["resourceVersion"] = Value::Null;
            write::apply_patch(&body::content_type(req), &mut scale, &raw)?;
        } else {
            scale = body::parse(&body::content_type(req), &raw)?;
        }
        let mut v = o.value();
        v["spec"]["replicas"] = replicas(&scale)?.into();
        let asked = scale["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        let precondition = !asked.is_empty();
        v["metadata"]["resourceVersion"] = if precondition {
            asked.into()
        } else {
            o.revision.to_string().into()
        };
        let msg = Update {
            resource: t.resource,
            body: v,
            status_only: false,
            opts: WriteOptions::default(),
        };
        match state.store.send(msg).await.map_err(ApiError::unavailable)? {
            Ok(o) => return Ok(body::json(&scale_of(&o))),
            Err(podvisor_store::StoreError::Conflict { .. }) if !precondition && attempt < 4 => {
                attempt += 1
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn replicas(scale: &Value) -> Result<i64, ApiError> {
    scale["spec"]["replicas"]
        .as_i64()
        .filter(|r| *r >= 0 && *r <= i64::from(i32::MAX))
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                "spec.replicas: must be a number between 0 and 2147483647",
            )
        })
}
