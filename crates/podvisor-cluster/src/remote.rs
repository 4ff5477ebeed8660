//! [`RemoteClient`]: podvisor's verbs as requests to a kube-apiserver.

use std::path::Path;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use futures_util::StreamExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{Request, WatchEvent as KubeEvent, params as kp};
use podvisor_client::{
    AnyObject, Backend, DeleteParams, Deleted, Error, ListParams, ObjectList, Patch, PostParams,
    Propagation, Result, Scope, Subresource, Target, WatchEvent, WatchStream,
};
use podvisor_core::Kind;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{ConnectError, from_kube, from_status};
use crate::paths::collection;

/// The field manager podvisor's writes are recorded under.
const MANAGER: &str = "podvisor";

/// A kube-apiserver, through kube-rs. Clones share one connection and one set of
/// credentials, which [`RemoteClient::reload`] replaces for all of them at once (a rotated
/// client certificate): requests from then on use the new ones.
#[derive(Clone)]
pub struct RemoteClient {
    client: Arc<RwLock<kube::Client>>,
}

impl RemoteClient {
    pub fn new(client: kube::Client) -> Self {
        Self {
            client: Arc::new(RwLock::new(client)),
        }
    }

    /// The kube-rs client underneath (for the cluster's own kinds: CSRs, leases).
    pub(crate) fn kube(&self) -> kube::Client {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes the credentials of the kubeconfig at `path` from now on.
    pub async fn reload(&self, path: &Path) -> std::result::Result<(), ConnectError> {
        let fresh = Self::from_kubeconfig(path).await?.kube();
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(())
    }

    /// A client with the credentials and server of the kubeconfig at `path` (its current
    /// context).
    pub async fn from_kubeconfig(path: &Path) -> std::result::Result<Self, ConnectError> {
        let shown = path.display().to_string();
        let kubeconfig =
            Kubeconfig::read_from(path).map_err(|source| ConnectError::Kubeconfig {
                path: shown.clone(),
                source,
            })?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|source| ConnectError::Kubeconfig {
                    path: shown.clone(),
                    source,
                })?;
        let client = kube::Client::try_from(config).map_err(|source| ConnectError::Client {
            path: shown,
            source,
        })?;
        Ok(Self::new(client))
    }

    /// The object the request answers.
    async fn object(
        &self,
        req: std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>,
        kind: Kind,
        name: &str,
    ) -> Result<AnyObject> {
        decode(kind, &self.text(req, kind, name).await?)
    }

    async fn text(
        &self,
        req: std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>,
        kind: Kind,
        name: &str,
    ) -> Result<String> {
        let req = req.map_err(|e| Error::BadRequest(e.to_string()))?;
        self.kube()
            .request_text(req)
            .await
            .map_err(|e| from_kube(e, kind, name))
    }
}

fn decode(kind: Kind, json: &str) -> Result<AnyObject> {
    AnyObject::from_json(kind, json.as_bytes())
        .map_err(|e| Error::Internal(format!("a {kind} from the API cannot be read: {e}")))
}

fn encode(o: &AnyObject) -> Result<Vec<u8>> {
    o.to_json()
        .map_err(|e| Error::BadRequest(format!("the object cannot be encoded: {e}")))
}

/// The namespace a write goes to: the object's own, `default` if it names none.
fn namespace_of(o: &AnyObject) -> Option<&str> {
    let ns = o.namespace();
    o.kind()
        .namespaced()
        .then_some(if ns.is_empty() { "default" } else { ns })
}

fn selectors(lp: &ListParams) -> (Option<String>, Option<String>) {
    let labels = (!lp.labels.is_empty()).then(|| lp.labels.to_string());
    let fields = (!lp.fields.is_empty()).then(|| lp.fields.to_string());
    (labels, fields)
}

fn list_params(lp: &ListParams) -> kp::ListParams {
    let (label_selector, field_selector) = selectors(lp);
    kp::ListParams {
        label_selector,
        field_selector,
        limit: lp.limit.and_then(|l| u32::try_from(l).ok()),
        continue_token: lp.continue_token.clone(),
        ..kp::ListParams::default()
    }
}

fn watch_params(lp: &ListParams) -> kp::WatchParams {
    let (label_selector, field_selector) = selectors(lp);
    kp::WatchParams {
        label_selector,
        field_selector,
        bookmarks: true,
        ..kp::WatchParams::default()
    }
}

fn post_params(pp: &PostParams) -> kp::PostParams {
    kp::PostParams {
        dry_run: pp.dry_run,
        field_manager: Some(MANAGER.into()),
    }
}

fn patch_params(pp: &PostParams) -> kp::PatchParams {
    kp::PatchParams {
        dry_run: pp.dry_run,
        field_manager: Some(MANAGER.into()),
        ..kp::PatchParams::default()
    }
}

fn delete_params(dp: &DeleteParams) -> kp::DeleteParams {
    let preconditions = (dp.precondition_uid.is_some()
        || dp.precondition_resource_version.is_some())
    .then(|| kp::Preconditions {
        uid: dp.precondition_uid.clone(),
        resource_version: dp.precondition_resource_version.clone(),
    });
    kp::DeleteParams {
        dry_run: dp.dry_run,
        grace_period_seconds: dp.grace_seconds.and_then(|g| u32::try_from(g.max(0)).ok()),
        propagation_policy: Some(match dp.propagation {
            Propagation::Background => kp::PropagationPolicy::Background,
            Propagation::Foreground => kp::PropagationPolicy::Foreground,
            Propagation::Orphan => kp::PropagationPolicy::Orphan,
        }),
        preconditions,
    }
}

/// A list answer, its items decoded by kind.
#[derive(Deserialize)]
struct RawList {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta,
    #[serde(default)]
    items: Vec<Box<RawValue>>,
}

/// Just enough of an answer to tell a `Status` from an object.
#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: String,
}

/// What a delete answered: the object (marked, or its last state), or a `Status` saying it
/// is gone (kinds that do not return deleted objects).
fn deleted(kind: Kind, t: Target<'_>, text: &str) -> Result<Deleted<AnyObject>> {
    let probe: KindOnly = serde_json::from_str(text)
        .map_err(|e| Error::Internal(format!("a delete's answer cannot be read: {e}")))?;
    if probe.kind == "Status" {
        let mut gone = decode(kind, "{}")?;
        let meta = gone.meta_mut();
        meta.name = Some(t.name.to_string());
        meta.namespace = t.namespace.map(str::to_string);
        return Ok(Deleted::Gone(gone));
    }
    let o = decode(kind, text)?;
    let meta = o.meta();
    let waiting = meta.finalizers.as_ref().is_some_and(|f| !f.is_empty())
        || meta.deletion_grace_period_seconds.is_some_and(|g| g > 0);
    Ok(if meta.deletion_timestamp.is_some() && waiting {
        Deleted::Marked(o)
    } else {
        Deleted::Gone(o)
    })
}

fn event(kind: Kind, e: KubeEvent<Box<RawValue>>) -> Result<WatchEvent<AnyObject>> {
    let object = |raw: Box<RawValue>| decode(kind, raw.get());
    Ok(match e {
        KubeEvent::Added(o) => WatchEvent::Added(object(o)?),
        KubeEvent::Modified(o) => WatchEvent::Modified(object(o)?),
        KubeEvent::Deleted(o) => WatchEvent::Deleted(object(o)?),
        KubeEvent::Bookmark(b) => WatchEvent::Bookmark(b.metadata.resource_version),
        KubeEvent::Error(s) => return Err(from_status(*s, kind, "")),
    })
}

#[async_trait]
impl Backend for RemoteClient {
    async fn get(&self, t: Target<'_>) -> Result<AnyObject> {
        let req = Request::new(collection(t.kind, t.namespace));
        let req = req.get(t.name, &kp::GetParams::default());
        self.object(req, t.kind, t.name).await
    }

    async fn list(&self, s: Scope<'_>, lp: &ListParams) -> Result<ObjectList<AnyObject>> {
        let req = Request::new(collection(s.kind, s.namespace)).list(&list_params(lp));
        let text = self.text(req, s.kind, "").await?;
        let list: RawList = serde_json::from_str(&text)
            .map_err(|e| Error::Internal(format!("a {} list cannot be read: {e}", s.kind)))?;
        let items = list.items.iter().map(|raw| decode(s.kind, raw.get()));
        Ok(ObjectList {
            items: items.collect::<Result<_>>()?,
            resource_version: list.metadata.resource_version.unwrap_or_default(),
            continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
        })
    }

    async fn watch(
        &self,
        s: Scope<'_>,
        lp: &ListParams,
        version: &str,
    ) -> Result<WatchStream<AnyObject>> {
        let kind = s.kind;
        let req = Request::new(collection(kind, s.namespace))
            .watch(&watch_params(lp), version)
            .map_err(|e| Error::BadRequest(e.to_string()))?;
        let events = self
            .kube()
            .request_events::<Box<RawValue>>(req)
            .await
            .map_err(|e| from_kube(e, kind, ""))?;
        let stream = events.map(move |e| {
            e.map_err(|e| from_kube(e, kind, ""))
                .and_then(|e| event(kind, e))
        });
        Ok(stream.boxed())
    }

    async fn create(&self, object: AnyObject, pp: &PostParams) -> Result<AnyObject> {
        let kind = object.kind();
        let req = Request::new(collection(kind, namespace_of(&object)));
        let req = req.create(&post_params(pp), encode(&object)?);
        self.object(req, kind, object.name()).await
    }

    async fn replace(
        &self,
        object: AnyObject,
        sub: Subresource,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        let (kind, name) = (object.kind(), object.name());
        let req = Request::new(collection(kind, namespace_of(&object)));
        let (pp, body) = (post_params(pp), encode(&object)?);
        let req = match sub {
            Subresource::Main => req.replace(name, &pp, body),
            other => req.replace_subresource(other.path().unwrap_or_default(), name, &pp, body),
        };
        self.object(req, kind, name).await
    }

    async fn patch(
        &self,
        t: Target<'_>,
        sub: Subresource,
        patch: &Patch,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        let mut pp = patch_params(pp);
        let patch: kp::Patch<&serde_json::Value> = match patch {
            Patch::Json(ops) => kp::Patch::Json(ops.clone()),
            Patch::Merge(v) => kp::Patch::Merge(v),
            Patch::Strategic(v) => kp::Patch::Strategic(v),
            Patch::Apply {
                config,
                manager,
                force,
            } => {
                pp.field_manager = Some(manager.clone());
                pp.force = *force;
                kp::Patch::Apply(config)
            }
        };
        let req = Request::new(collection(t.kind, t.namespace));
        let req = match sub {
            Subresource::Main => req.patch(t.name, &pp, &patch),
            other => req.patch_subresource(other.path().unwrap_or_default(), t.name, &pp, &patch),
        };
        self.object(req, t.kind, t.name).await
    }

    async fn delete(&self, t: Target<'_>, dp: &DeleteParams) -> Result<Deleted<AnyObject>> {
        let req = Request::new(collection(t.kind, t.namespace)).delete(t.name, &delete_params(dp));
        let text = self.text(req, t.kind, t.name).await?;
        deleted(t.kind, t, &text)
    }
}
