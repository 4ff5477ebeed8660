//! get and list.

use actix_web::{HttpRequest, HttpResponse};
use podvisor_client::{FieldSelector, LabelSelector};
use podvisor_store::actor::{Get, List};
use podvisor_store::{Selector, StoredObject};
use std::sync::Arc;

use super::{ApiState, Params, body};
use crate::status::ApiError;
use crate::table::{self, Include};
use crate::target::Target;

/// The selector a list or watch asks for.
pub(super) fn selector(t: &Target, p: &Params) -> Result<Selector, ApiError> {
    let kind = t.resource.kind;
    let labels = LabelSelector::parse(p.label_selector.as_deref().unwrap_or(""))?;
    let fields = FieldSelector::parse_for(kind, p.field_selector.as_deref().unwrap_or(""))?;
    Ok(Selector {
        kind,
        namespace: t.namespace.clone(),
        labels,
        fields,
    })
}

pub(super) async fn fetch(state: &ApiState, t: &Target) -> Result<Arc<StoredObject>, ApiError> {
    let get = Get {
        kind: t.resource.kind,
        namespace: t.namespace.clone().unwrap_or_default(),
        name: t.name.clone().unwrap_or_default(),
    };
    state.ask(get).await
}

pub(super) async fn get(
    req: &HttpRequest,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let o = fetch(state, &t).await?;
    if table::wanted(body::accept(req)) {
        let include = Include::parse(p.include_object.as_deref());
        return Ok(body::json(&table::table(
            o.kind,
            &[&o],
            o.revision,
            None,
            include,
            true,
        )));
    }
    Ok(body::object(&o, false))
}

pub(super) async fn list(
    req: &HttpRequest,
    state: &ApiState,
    p: &Params,
    t: Target,
) -> Result<HttpResponse, ApiError> {
    let list = List {
        selector: selector(&t, p)?,
        limit: p.limit,
        continue_token: p.continue_token.clone(),
    };
    let page = state.ask(list).await?;
    let cont = page.continue_token.as_deref();
    if table::wanted(body::accept(req)) {
        let include = Include::parse(p.include_object.as_deref());
        let items: Vec<&StoredObject> = page.items.iter().map(|o| o.as_ref()).collect();
        let tbl = table::table(t.resource.kind, &items, page.revision, cont, include, true);
        return Ok(body::json(&tbl));
    }
    let bytes = body::list(&t.resource, &page.items, page.revision, cont);
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(bytes))
}

/// The (namespace, name) of every stored pod of `namespace` (all when `None`) that the
/// label selector `labels` picks (`kubectl top pod -l`).
pub(crate) async fn names(
    state: &ApiState,
    namespace: Option<&str>,
    labels: &str,
) -> Result<std::collections::HashSet<(String, String)>, ApiError> {
    let selector = Selector {
        kind: podvisor_core::Kind::Pod,
        namespace: namespace.map(str::to_string),
        labels: LabelSelector::parse(labels)?,
        ..Selector::all(podvisor_core::Kind::Pod)
    };
    let page = state
        .ask(List {
            selector,
            limit: None,
            continue_token: None,
        })
        .await?;
    Ok(page
        .items
        .iter()
        .map(|o| (o.namespace.clone(), o.name.clone()))
        .collect())
}
