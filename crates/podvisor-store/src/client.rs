//! The store as a [`podvisor_client::Backend`]: what the node's own actors and controllers
//! talk to when the node's desired state is its own store. Every call is one message to
//! the store actor, and the answer decoded on the caller's side.

use async_trait::async_trait;
use futures_util::StreamExt;
use podvisor_actors::{ActorRef, MailboxError};
use podvisor_client::{
    AnyObject, Backend, Client, DeleteParams, Deleted, Error, ListParams, ObjectList, Patch,
    PostParams, Result, Scope, Subresource, Target, WatchEvent as ApiEvent, WatchStream,
};
use tokio::sync::mpsc;

use crate::actor::{
    Create, Delete, Get, List, PatchObject, Replace, StoreActor, Watch, WatchEvent,
};
use crate::object::ChangeType;
use crate::replicate::Replicate;
use crate::selector::Selector;

/// A client of the store actor.
#[derive(Clone)]
pub struct LocalClient {
    store: ActorRef<StoreActor>,
}

impl LocalClient {
    pub fn new(store: ActorRef<StoreActor>) -> Self {
        Self { store }
    }

    /// A [`Client`] over the store actor.
    pub fn client(store: &ActorRef<StoreActor>) -> Client {
        Client::new(Self::new(store.clone()))
    }
}

fn unavailable(e: MailboxError) -> Error {
    Error::Unavailable(format!("the store actor: {e}"))
}

/// A watch's version: "" and "0" mean "from what exists now".
fn revision(version: &str) -> Result<Option<u64>> {
    match version {
        "" | "0" => Ok(None),
        v => v
            .parse()
            .map(Some)
            .map_err(|_| Error::BadRequest(format!("invalid resourceVersion {v:?}"))),
    }
}

fn event(e: WatchEvent) -> Result<ApiEvent<AnyObject>> {
    match e {
        WatchEvent::Bookmark(rev) => Ok(ApiEvent::Bookmark(rev.to_string())),
        WatchEvent::Change(c) => {
            let o = c.object.object()?;
            Ok(match c.kind {
                ChangeType::Added => ApiEvent::Added(o),
                ChangeType::Modified => ApiEvent::Modified(o),
                ChangeType::Deleted => ApiEvent::Deleted(o),
            })
        }
    }
}

fn events(rx: mpsc::Receiver<WatchEvent>) -> WatchStream<AnyObject> {
    futures_util::stream::unfold(rx, |mut rx| async move {
        let e = rx.recv().await?;
        Some((event(e), rx))
    })
    .boxed()
}

impl LocalClient {
    async fn ask<M, T>(&self, msg: M) -> Result<T>
    where
        StoreActor: actix::Handler<M>,
        M: actix::Message<Result = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.store.send(msg).await.map_err(unavailable)?
    }
}

#[async_trait]
impl Backend for LocalClient {
    async fn get(&self, t: Target<'_>) -> Result<AnyObject> {
        let msg = Get {
            kind: t.kind,
            namespace: t.namespace.unwrap_or_default().to_string(),
            name: t.name.to_string(),
        };
        self.ask(msg).await?.object()
    }

    async fn list(&self, s: Scope<'_>, lp: &ListParams) -> Result<ObjectList<AnyObject>> {
        let msg = List {
            selector: Selector::of(s.kind, s.namespace, lp),
            limit: lp.limit,
            continue_token: lp.continue_token.clone(),
        };
        let page = self.ask(msg).await?;
        Ok(ObjectList {
            items: page
                .items
                .iter()
                .map(|o| o.object())
                .collect::<Result<_>>()?,
            resource_version: page.revision.to_string(),
            continue_token: page.continue_token,
        })
    }

    async fn watch(
        &self,
        s: Scope<'_>,
        lp: &ListParams,
        version: &str,
    ) -> Result<WatchStream<AnyObject>> {
        let msg = Watch {
            selector: Selector::of(s.kind, s.namespace, lp),
            from: revision(version)?,
        };
        Ok(events(self.ask(msg).await?))
    }

    async fn create(&self, object: AnyObject, pp: &PostParams) -> Result<AnyObject> {
        let namespace = Some(object.namespace().to_string()).filter(|n| !n.is_empty());
        let msg = Create {
            namespace,
            object,
            opts: *pp,
        };
        self.ask(msg).await?.object()
    }

    async fn replace(
        &self,
        object: AnyObject,
        sub: Subresource,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        let msg = Replace {
            object,
            sub,
            opts: *pp,
            manager: None,
        };
        self.ask(msg).await?.object()
    }

    async fn patch(
        &self,
        t: Target<'_>,
        sub: Subresource,
        patch: &Patch,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        let msg = PatchObject {
            kind: t.kind,
            namespace: t.namespace.unwrap_or_default().to_string(),
            name: t.name.to_string(),
            patch: patch.clone(),
            sub,
            strict: false,
            opts: *pp,
            manager: None,
        };
        self.ask(msg).await?.object()
    }

    async fn delete(&self, t: Target<'_>, dp: &DeleteParams) -> Result<Deleted<AnyObject>> {
        let msg = Delete {
            kind: t.kind,
            namespace: t.namespace.unwrap_or_default().to_string(),
            name: t.name.to_string(),
            opts: dp.clone(),
        };
        match self.ask(msg).await? {
            Deleted::Marked(o) => Ok(Deleted::Marked(o.object()?)),
            Deleted::Gone(o) => Ok(Deleted::Gone(o.object()?)),
        }
    }

    async fn replicate(&self, object: AnyObject) -> Result<Option<AnyObject>> {
        let kept = self.ask(Replicate { object }).await?;
        kept.map(|o| o.object()).transpose()
    }
}
