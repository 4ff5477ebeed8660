//! [`RemoteClient`]: podvisor's verbs as requests to a kube-apiserver, each a typed
//! `kube::Api<K>` call (`typed`); what is left here is the client and its credentials, and
//! podvisor's request parameters as kube-rs' (the store behind the same `Backend` takes
//! podvisor's own).

use std::path::Path;
use std::sync::{Arc, RwLock};

mod noted;
mod typed;

use async_trait::async_trait;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::params as kp;
use podvisor_client::{
    AnyObject, Backend, DeleteParams, Deleted, ListParams, ObjectList, Patch, PostParams,
    Propagation, Result, Scope, Subresource, Target, WatchStream,
};

use crate::error::ConnectError;
use typed::{At, verbs};

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

    /// An `Api` for one of the cluster's own kinds (CSRs, Leases, reviews, Services,
    /// tokens), on the same connection and credentials as every other request.
    pub(crate) fn api<K>(&self, namespace: Option<&str>) -> kube::Api<K>
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: typed::Place,
    {
        typed::api(self.kube(), namespace)
    }
}

/// The namespace a write goes to: the object's own, `default` if it names none.
fn namespace_of(o: &AnyObject) -> Option<&str> {
    let ns = o.namespace();
    o.kind()
        .namespaced()
        .then_some(if ns.is_empty() { "default" } else { ns })
}

fn at<'a>(namespace: Option<&'a str>, name: &'a str) -> At<'a> {
    At { namespace, name }
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

#[async_trait]
impl Backend for RemoteClient {
    async fn get(&self, t: Target<'_>) -> Result<AnyObject> {
        let at = at(t.namespace, t.name);
        verbs(t.kind).get(self.kube(), at).await
    }

    async fn list(&self, s: Scope<'_>, lp: &ListParams) -> Result<ObjectList<AnyObject>> {
        let at = at(s.namespace, "");
        verbs(s.kind).list(self.kube(), at, &list_params(lp)).await
    }

    async fn watch(
        &self,
        s: Scope<'_>,
        lp: &ListParams,
        version: &str,
    ) -> Result<WatchStream<AnyObject>> {
        let (at, wp) = (at(s.namespace, ""), watch_params(lp));
        verbs(s.kind).watch(self.kube(), at, &wp, version).await
    }

    async fn create(&self, object: AnyObject, pp: &PostParams) -> Result<AnyObject> {
        let at = at(namespace_of(&object), object.name());
        let verbs = verbs(object.kind());
        verbs
            .create(self.kube(), at, object.clone(), &post_params(pp))
            .await
    }

    async fn replace(
        &self,
        object: AnyObject,
        sub: Subresource,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        let at = at(namespace_of(&object), object.name());
        let verbs = verbs(object.kind());
        verbs
            .replace(self.kube(), at, object.clone(), sub, &post_params(pp))
            .await
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
        let at = at(t.namespace, t.name);
        verbs(t.kind).patch(self.kube(), at, sub, &patch, &pp).await
    }

    async fn delete(&self, t: Target<'_>, dp: &DeleteParams) -> Result<Deleted<AnyObject>> {
        let at = at(t.namespace, t.name);
        verbs(t.kind)
            .delete(self.kube(), at, &delete_params(dp))
            .await
    }
}
