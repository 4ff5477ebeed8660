//! Each verb of the [`podvisor_client::Backend`] as a typed `kube::Api<K>` call: the kind,
//! known only at run time, picks its k8s-openapi type from the one table of kinds
//! (`podvisor_core::for_each_kind!`), and kube-rs builds the request (path, parameters,
//! body) and decodes the answer as that type.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use either::Either;
use futures_util::StreamExt;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Api;
use kube::core::{Status, WatchEvent as KubeEvent, params as kp};
use podvisor_client::{
    AnyObject, Deleted, Error, Object, ObjectList, Result, Subresource, WatchEvent, WatchStream,
};
use podvisor_core::Kind;

use super::noted::Noted;
use crate::error::{from_kube, from_status};

/// What a request is about: one object (`name`), or a collection (`name` empty) in
/// `namespace` (`None`: every namespace, or a cluster-scoped kind).
#[derive(Debug, Clone, Copy)]
pub(super) struct At<'a> {
    pub(super) namespace: Option<&'a str>,
    pub(super) name: &'a str,
}

/// An `Api` for `K` in `namespace`: namespaced kinds are constrained to it (every
/// namespace when `None`), cluster-scoped kinds have no namespace.
pub(crate) trait Place: Sized {
    fn api<K>(client: kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = Self, DynamicType = ()>;
}

impl Place for NamespaceResourceScope {
    fn api<K>(client: kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = Self, DynamicType = ()>,
    {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }
}

impl Place for ClusterResourceScope {
    fn api<K>(client: kube::Client, _: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = Self, DynamicType = ()>,
    {
        Api::all(client)
    }
}

/// The `Api` of `K` at `namespace`, whatever `K`'s scope.
pub(crate) fn api<K>(client: kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<DynamicType = ()>,
    K::Scope: Place,
{
    <K::Scope as Place>::api::<K>(client, namespace)
}

/// The verbs of one kind, with kube-rs' parameters.
#[async_trait]
pub(super) trait Verbs: Sync {
    async fn get(&self, c: kube::Client, at: At<'_>) -> Result<AnyObject>;

    async fn list(
        &self,
        c: kube::Client,
        at: At<'_>,
        lp: &kp::ListParams,
    ) -> Result<ObjectList<AnyObject>>;

    async fn watch(
        &self,
        c: kube::Client,
        at: At<'_>,
        wp: &kp::WatchParams,
        version: &str,
    ) -> Result<WatchStream<AnyObject>>;

    async fn create(
        &self,
        c: kube::Client,
        at: At<'_>,
        o: AnyObject,
        pp: &kp::PostParams,
    ) -> Result<AnyObject>;

    async fn replace(
        &self,
        c: kube::Client,
        at: At<'_>,
        o: AnyObject,
        sub: Subresource,
        pp: &kp::PostParams,
    ) -> Result<AnyObject>;

    async fn patch(
        &self,
        c: kube::Client,
        at: At<'_>,
        sub: Subresource,
        patch: &kp::Patch<&serde_json::Value>,
        pp: &kp::PatchParams,
    ) -> Result<AnyObject>;

    async fn delete(
        &self,
        c: kube::Client,
        at: At<'_>,
        dp: &kp::DeleteParams,
    ) -> Result<Deleted<AnyObject>>;
}

/// [`Verbs`] for the k8s-openapi type `K`.
struct Typed<K>(PhantomData<fn() -> K>);

macro_rules! verbs_table {
    ($($kind:ident => $ty:ty, $singular:literal, [$($short:literal),*], $status:literal, $spec:literal;)*) => {
        /// The verbs of `kind`, typed.
        pub(super) fn verbs(kind: Kind) -> &'static dyn Verbs {
            match kind {
                $(Kind::$kind => &Typed::<$ty>(PhantomData)),*
            }
        }
    };
}

podvisor_core::for_each_kind!(verbs_table);

/// kube-rs' error, met acting on `at`, as podvisor's.
fn failed<K: Object>(at: At<'_>) -> impl FnOnce(kube::Error) -> Error + '_ {
    move |e| from_kube(e, K::TYPE.as_str(), at.name)
}

/// `o` as `K` (it is one: the table picked `K` by `o`'s kind).
fn typed<K: Object>(o: AnyObject) -> Result<Arc<K>> {
    K::from_any(o).map_err(|o| Error::Internal(format!("a {} is not a {}", o.kind(), K::TYPE)))
}

#[async_trait]
impl<K> Verbs for Typed<K>
where
    K: Object + Default + kube::Resource<DynamicType = ()>,
    <K as kube::Resource>::Scope: Place,
{
    async fn get(&self, c: kube::Client, at: At<'_>) -> Result<AnyObject> {
        let o = api::<Noted<K>>(c, at.namespace).get(at.name).await;
        o.map(|o| AnyObject::new(o.surfaced()))
            .map_err(failed::<K>(at))
    }

    async fn list(
        &self,
        c: kube::Client,
        at: At<'_>,
        lp: &kp::ListParams,
    ) -> Result<ObjectList<AnyObject>> {
        let list = api::<Noted<K>>(c, at.namespace).list(lp).await;
        let list = list.map_err(failed::<K>(at))?;
        Ok(ObjectList {
            items: list
                .items
                .into_iter()
                .map(|o| AnyObject::new(o.surfaced()))
                .collect(),
            resource_version: list.metadata.resource_version.unwrap_or_default(),
            continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
        })
    }

    async fn watch(
        &self,
        c: kube::Client,
        at: At<'_>,
        wp: &kp::WatchParams,
        version: &str,
    ) -> Result<WatchStream<AnyObject>> {
        let events = api::<Noted<K>>(c, at.namespace).watch(wp, version).await;
        let events = events.map_err(failed::<K>(at))?;
        let stream = events.map(|e| {
            e.map_err(|e| from_kube(e, K::TYPE.as_str(), ""))
                .and_then(event::<K>)
        });
        Ok(stream.boxed())
    }

    async fn create(
        &self,
        c: kube::Client,
        at: At<'_>,
        o: AnyObject,
        pp: &kp::PostParams,
    ) -> Result<AnyObject> {
        let o = typed::<K>(o)?;
        let made = api::<K>(c, at.namespace).create(pp, &o).await;
        made.map(AnyObject::new).map_err(failed::<K>(at))
    }

    async fn replace(
        &self,
        c: kube::Client,
        at: At<'_>,
        o: AnyObject,
        sub: Subresource,
        pp: &kp::PostParams,
    ) -> Result<AnyObject> {
        let (o, api) = (typed::<K>(o)?, api::<K>(c, at.namespace));
        let replaced = match sub.path() {
            None => api.replace(at.name, pp, &o).await,
            Some(sub) => api.replace_subresource(sub, at.name, pp, &*o).await,
        };
        replaced.map(AnyObject::new).map_err(failed::<K>(at))
    }

    async fn patch(
        &self,
        c: kube::Client,
        at: At<'_>,
        sub: Subresource,
        patch: &kp::Patch<&serde_json::Value>,
        pp: &kp::PatchParams,
    ) -> Result<AnyObject> {
        let api = api::<K>(c, at.namespace);
        let patched = match sub.path() {
            None => api.patch(at.name, pp, patch).await,
            Some(sub) => api.patch_subresource(sub, at.name, pp, patch).await,
        };
        patched.map(AnyObject::new).map_err(failed::<K>(at))
    }

    async fn delete(
        &self,
        c: kube::Client,
        at: At<'_>,
        dp: &kp::DeleteParams,
    ) -> Result<Deleted<AnyObject>> {
        let answer = api::<K>(c, at.namespace).delete(at.name, dp).await;
        Ok(deleted(answer.map_err(failed::<K>(at))?, at))
    }
}

fn event<K: Object + kube::Resource<DynamicType = ()>>(
    e: KubeEvent<Noted<K>>,
) -> Result<WatchEvent<AnyObject>> {
    Ok(match e {
        KubeEvent::Added(o) => WatchEvent::Added(AnyObject::new(o.surfaced())),
        KubeEvent::Modified(o) => WatchEvent::Modified(AnyObject::new(o.surfaced())),
        KubeEvent::Deleted(o) => WatchEvent::Deleted(AnyObject::new(o.surfaced())),
        KubeEvent::Bookmark(b) => WatchEvent::Bookmark(b.metadata.resource_version),
        KubeEvent::Error(s) => return Err(from_status(*s, K::TYPE.as_str(), "")),
    })
}

/// What a delete answered: the object (marked, or its last state), or a `Status` saying it
/// is gone (kinds that do not return deleted objects).
fn deleted<K: Object + Default>(answer: Either<K, Status>, at: At<'_>) -> Deleted<AnyObject> {
    let o = match answer {
        Either::Left(o) => o,
        Either::Right(_) => {
            let mut gone = K::default();
            let meta = k8s_openapi::Metadata::metadata_mut(&mut gone);
            meta.name = Some(at.name.to_string());
            meta.namespace = at.namespace.map(str::to_string);
            return Deleted::Gone(AnyObject::new(gone));
        }
    };
    let meta = k8s_openapi::Metadata::metadata(&o);
    let waiting = meta.finalizers.as_ref().is_some_and(|f| !f.is_empty())
        || meta.deletion_grace_period_seconds.is_some_and(|g| g > 0);
    if meta.deletion_timestamp.is_some() && waiting {
        Deleted::Marked(AnyObject::new(o))
    } else {
        Deleted::Gone(AnyObject::new(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> kube::Client {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn each_kind_is_asked_for_at_its_own_collection() {
        use k8s_openapi::api::apps::v1::ReplicaSet;
        use k8s_openapi::api::core::v1::{Node, Pod};
        use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
        assert_eq!(
            api::<Pod>(client(), Some("default")).resource_url(),
            "/api/v1/namespaces/default/pods"
        );
        assert_eq!(api::<Pod>(client(), None).resource_url(), "/api/v1/pods");
        assert_eq!(
            api::<Node>(client(), Some("default")).resource_url(),
            "/api/v1/nodes"
        );
        assert_eq!(
            api::<ReplicaSet>(client(), Some("a")).resource_url(),
            "/apis/apps/v1/namespaces/a/replicasets"
        );
        assert_eq!(
            api::<ClusterRoleBinding>(client(), Some("a")).resource_url(),
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        );
    }

    #[test]
    fn a_status_for_an_answer_is_the_named_object_gone() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let at = At {
            namespace: Some("ns"),
            name: "c",
        };
        let Deleted::Gone(o) = deleted::<ConfigMap>(Either::Right(Status::success()), at) else {
            panic!("not gone");
        };
        assert_eq!(
            (o.kind(), o.namespace(), o.name()),
            (Kind::ConfigMap, "ns", "c")
        );
    }

    #[test]
    fn a_deleted_object_is_marked_only_while_a_grace_period_or_finalizer_keeps_it() {
        use k8s_openapi::api::core::v1::Pod;
        let at = At {
            namespace: Some("ns"),
            name: "p",
        };
        let mut pod = Pod::default();
        pod.metadata.deletion_timestamp = Some(podvisor_core::time::now());
        pod.metadata.deletion_grace_period_seconds = Some(30);
        let marked = deleted(Either::Left(pod.clone()), at);
        assert!(matches!(marked, Deleted::Marked(_)), "{marked:?}");
        pod.metadata.deletion_grace_period_seconds = Some(0);
        let gone = deleted(Either::Left(pod.clone()), at);
        assert!(matches!(gone, Deleted::Gone(_)), "{gone:?}");
        pod.metadata.finalizers = Some(vec!["example.com/keep".into()]);
        let kept = deleted(Either::Left(pod), at);
        assert!(matches!(kept, Deleted::Marked(_)), "{kept:?}");
    }
}
