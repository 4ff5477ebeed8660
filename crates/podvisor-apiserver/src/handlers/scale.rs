//! replicasets/{name}/scale: the Scale view of a ReplicaSet (`kubectl scale`).

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use podvisor_store::StoredObject;
use podvisor_store::WriteOptions;
use podvisor_store::actor::Update;
use serde_json::{Value, json};

use super::{ApiState, body, read, write};
use crate::status::ApiError;
use crate::target::Target;

fn scale_of(o: &StoredObject) -> Value {
    let v = o.value();
    let selector = v["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, x)| format!("{k}={}", x.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
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
    let o = read::fetch(state, &t).await?;
    let mut scale = scale_of(&o);
    if req.method() == actix_web::http::Method::PATCH {
        write::apply_patch(&body::content_type(req), &mut scale, &raw)?;
    } else {
        scale = body::parse(&body::content_type(req), &raw)?;
    }
    let replicas = scale["spec"]["replicas"]
        .as_i64()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                "spec.replicas: must be a number greater than or equal to 0",
            )
        })?;
    let mut v = o.value();
    v["spec"]["replicas"] = replicas.into();
    let asked = scale["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if !asked.is_empty() {
        v["metadata"]["resourceVersion"] = asked.into();
    }
    let msg = Update {
        resource: t.resource,
        body: v,
        status_only: false,
        opts: WriteOptions::default(),
    };
    let o = state
        .store
        .send(msg)
        .await
        .map_err(ApiError::unavailable)??;
    Ok(body::json(&scale_of(&o)))
}
