//! A real store behind a `Backend` that fails the calls a test picks: how the node's
//! writers are shown to retry what a real API refuses for a while.

use async_trait::async_trait;
use podvisor_actors::ChildSpec;
use podvisor_client::{
    AnyObject, Backend, DeleteParams, Deleted, Error, ListParams, ObjectList, Patch, PostParams,
    Result, Scope, Subresource, Target, WatchStream,
};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};

/// A call a fault can refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Get,
    Delete,
    Replicate,
}

type Fault = Box<dyn Fn(Call, &Target<'_>) -> Option<Error> + Send + Sync>;

/// The store, but for the calls `fault` answers with an error.
pub struct Faulty {
    pub store: LocalClient,
    pub fault: Fault,
}

impl Faulty {
    fn refuse(&self, call: Call, t: &Target<'_>) -> Result<()> {
        (self.fault)(call, t).map_or(Ok(()), Err)
    }
}

#[async_trait]
impl Backend for Faulty {
    async fn get(&self, t: Target<'_>) -> Result<AnyObject> {
        self.refuse(Call::Get, &t)?;
        self.store.get(t).await
    }
    async fn list(&self, s: Scope<'_>, lp: &ListParams) -> Result<ObjectList<AnyObject>> {
        self.store.list(s, lp).await
    }
    async fn watch(
        &self,
        s: Scope<'_>,
        lp: &ListParams,
        v: &str,
    ) -> Result<WatchStream<AnyObject>> {
        self.store.watch(s, lp, v).await
    }
    async fn create(&self, o: AnyObject, pp: &PostParams) -> Result<AnyObject> {
        self.store.create(o, pp).await
    }
    async fn replace(&self, o: AnyObject, sub: Subresource, pp: &PostParams) -> Result<AnyObject> {
        self.store.replace(o, sub, pp).await
    }
    async fn patch(
        &self,
        t: Target<'_>,
        sub: Subresource,
        p: &Patch,
        pp: &PostParams,
    ) -> Result<AnyObject> {
        self.store.patch(t, sub, p, pp).await
    }
    async fn delete(&self, t: Target<'_>, dp: &DeleteParams) -> Result<Deleted<AnyObject>> {
        self.refuse(Call::Delete, &t)?;
        self.store.delete(t, dp).await
    }
    async fn replicate(&self, o: AnyObject) -> Result<Option<AnyObject>> {
        let t = Target {
            kind: o.kind(),
            namespace: Some(o.namespace()),
            name: o.name(),
        };
        self.refuse(Call::Replicate, &t)?;
        self.store.replicate(o).await
    }
}

/// A store of its own (under the temp dir, named `name`), and a client of it.
pub fn store(name: &str) -> LocalClient {
    let dir = std::env::temp_dir().join(format!("podvisor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 100,
    };
    LocalClient::new(ChildSpec::of(move || StoreActor::new(cfg.clone(), 64)).start_unsupervised())
}
