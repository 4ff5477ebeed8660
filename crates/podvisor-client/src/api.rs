//! `Api<K>`: the typed face of a [`Client`] for one kind, in one namespace or all of them
//! (kube-rs' `kube::Api`). Objects come back as `Arc<K>`, decoded once by the backend and
//! shared with whoever else holds them.

use std::marker::PhantomData;
use std::sync::Arc;

use futures_util::StreamExt;

use crate::backend::{Client, Deleted, ObjectList, Scope, Target, WatchEvent, WatchStream};
use crate::error::{Error, Result};
use crate::object::{AnyObject, Object};
use crate::params::{DeleteParams, ListParams, Patch, PostParams, Subresource};

pub struct Api<K> {
    client: Client,
    namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Object> Api<K> {
    /// Every namespace (or a cluster-scoped kind).
    pub fn all(client: Client) -> Self {
        Self {
            client,
            namespace: None,
            kind: PhantomData,
        }
    }

    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Self {
            client,
            namespace: Some(namespace.to_string()),
            kind: PhantomData,
        }
    }

    /// The same API in another namespace.
    pub fn within(&self, namespace: &str) -> Self {
        Self::namespaced(self.client.clone(), namespace)
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn target<'a>(&'a self, name: &'a str) -> Target<'a> {
        Target {
            kind: K::TYPE,
            namespace: self.namespace.as_deref(),
            name,
        }
    }

    fn scope(&self) -> Scope<'_> {
        Scope {
            kind: K::TYPE,
            namespace: self.namespace.as_deref(),
        }
    }

    /// `obj` in this API's namespace (a namespace it names itself must be this one).
    fn placed(&self, mut obj: K) -> Result<AnyObject> {
        if let Some(ns) = &self.namespace {
            let meta = obj.metadata_mut();
            match meta.namespace.as_deref() {
                None | Some("") => meta.namespace = Some(ns.clone()),
                Some(own) if own == ns => {}
                Some(own) => {
                    return Err(Error::BadRequest(format!(
                        "the namespace of the object ({own}) does not match the namespace of the request ({ns})"
                    )));
                }
            }
        }
        Ok(K::into_any(Arc::new(obj)))
    }

    pub async fn get(&self, name: &str) -> Result<Arc<K>> {
        self.client
            .backend()
            .get(self.target(name))
            .await?
            .into_typed()
    }

    /// `None` when there is no object of that name.
    pub async fn get_opt(&self, name: &str) -> Result<Option<Arc<K>>> {
        match self.get(name).await {
            Ok(o) => Ok(Some(o)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn list(&self, lp: &ListParams) -> Result<ObjectList<Arc<K>>> {
        let page = self.client.backend().list(self.scope(), lp).await?;
        let items = page
            .items
            .into_iter()
            .map(AnyObject::into_typed)
            .collect::<Result<_>>()?;
        Ok(ObjectList {
            items,
            resource_version: page.resource_version,
            continue_token: page.continue_token,
        })
    }

    pub async fn watch(&self, lp: &ListParams, version: &str) -> Result<WatchStream<Arc<K>>> {
        let events = self
            .client
            .backend()
            .watch(self.scope(), lp, version)
            .await?;
        let typed = events.map(|e| -> Result<WatchEvent<Arc<K>>> {
            let e = e?;
            Ok(match e {
                WatchEvent::Added(o) => WatchEvent::Added(o.into_typed()?),
                WatchEvent::Modified(o) => WatchEvent::Modified(o.into_typed()?),
                WatchEvent::Deleted(o) => WatchEvent::Deleted(o.into_typed()?),
                WatchEvent::Bookmark(v) => WatchEvent::Bookmark(v),
            })
        });
        Ok(typed.boxed())
    }

    pub async fn create(&self, pp: &PostParams, obj: K) -> Result<Arc<K>> {
        let obj = self.placed(obj)?;
        self.client.backend().create(obj, pp).await?.into_typed()
    }

    async fn replace_part(&self, sub: Subresource, pp: &PostParams, obj: K) -> Result<Arc<K>> {
        let obj = self.placed(obj)?;
        self.client
            .backend()
            .replace(obj, sub, pp)
            .await?
            .into_typed()
    }

    /// Replaces the object (all but its status, for kinds with a status subresource); its
    /// `resourceVersion`, when set, must be the current one.
    pub async fn replace(&self, pp: &PostParams, obj: K) -> Result<Arc<K>> {
        self.replace_part(Subresource::Main, pp, obj).await
    }

    /// Replaces only the status.
    pub async fn replace_status(&self, pp: &PostParams, obj: K) -> Result<Arc<K>> {
        self.replace_part(Subresource::Status, pp, obj).await
    }

    pub async fn patch(&self, name: &str, pp: &PostParams, patch: &Patch) -> Result<Arc<K>> {
        let t = self.target(name);
        let b = self.client.backend();
        b.patch(t, Subresource::Main, patch, pp).await?.into_typed()
    }

    pub async fn patch_status(&self, name: &str, pp: &PostParams, patch: &Patch) -> Result<Arc<K>> {
        let t = self.target(name);
        let b = self.client.backend();
        b.patch(t, Subresource::Status, patch, pp)
            .await?
            .into_typed()
    }

    /// Keeps a copy of `obj`, another API's object (see [`crate::Backend::replicate`]): the
    /// object as kept, or `None` when the copy already said the same.
    pub async fn replicate(&self, obj: K) -> Result<Option<Arc<K>>> {
        let obj = self.placed(obj)?;
        let kept = self.client.backend().replicate(obj).await?;
        kept.map(AnyObject::into_typed).transpose()
    }

    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Deleted<Arc<K>>> {
        let d = self.client.backend().delete(self.target(name), dp).await?;
        Ok(match d {
            Deleted::Marked(o) => Deleted::Marked(o.into_typed()?),
            Deleted::Gone(o) => Deleted::Gone(o.into_typed()?),
        })
    }

    /// Reads the object, lets `edit` change it (answering `false` leaves it alone) and
    /// writes it back against the version read, as long as it stays the incarnation
    /// `uid` (when given); a conflict reads it again, up to `attempts` times. The object
    /// written, or `None` when it is gone, is another incarnation, or `edit` declined.
    pub async fn edit(
        &self,
        name: &str,
        uid: Option<&str>,
        sub: Subresource,
        attempts: usize,
        edit: impl Fn(&mut K) -> bool,
    ) -> Result<Option<Arc<K>>> {
        for _ in 0..attempts.max(1) {
            let Some(current) = self.get_opt(name).await? else {
                return Ok(None);
            };
            if uid.is_some_and(|u| current.metadata().uid.as_deref() != Some(u)) {
                return Ok(None);
            }
            let mut next = (*current).clone();
            if !edit(&mut next) {
                return Ok(None);
            }
            match self.replace_part(sub, &PostParams::default(), next).await {
                Ok(o) => return Ok(Some(o)),
                Err(Error::Conflict { .. }) => continue,
                Err(Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Err(Error::conflict(
            K::URL_PATH_SEGMENT,
            name,
            "the object kept changing",
        ))
    }
}
