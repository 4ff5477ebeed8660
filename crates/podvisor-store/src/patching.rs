//! Patches worked out off the store's thread. The store's actor serves every API call and
//! every pod status of the node; a patch can be megabytes of work, so the actor only
//! reads the object it starts from and writes the result, and the patch itself runs on
//! the blocking pool. What comes between is caught as kube-apiserver's `GuaranteedUpdate`
//! catches it: the result is written only if the object is still the one it was made
//! from; otherwise the patch is worked out again from the new one. A `resourceVersion`
//! the patch sets stays a precondition, checked by the write. Server-side apply (field
//! sets budgeted in `apply/`) stays on the actor.

use std::sync::Arc;

use actix::prelude::*;
use podvisor_client::{AnyObject, Error, Patch, PostParams, Subresource};
use podvisor_core::Kind;

use crate::actor::{PatchObject, StoreActor, one};
use crate::object::{Resource, StoredObject};

/// How many times a patch is worked out before the writes racing it win (409).
const TRIES: usize = 8;

/// The object a patch starts from.
#[derive(Message)]
#[rtype(result = "Result<Arc<StoredObject>, Error>")]
struct PatchBase {
    kind: Kind,
    namespace: String,
    name: String,
}

/// A patched object, written if its object is still at revision `base`; `None` if it
/// changed meanwhile.
#[derive(Message)]
#[rtype(result = "Result<Option<Arc<StoredObject>>, Error>")]
struct CommitPatch {
    object: AnyObject,
    base: u64,
    sub: Subresource,
    opts: PostParams,
    manager: Option<String>,
}

impl Handler<PatchObject> for StoreActor {
    type Result = ResponseActFuture<Self, Result<Arc<StoredObject>, Error>>;

    fn handle(&mut self, m: PatchObject, ctx: &mut Context<Self>) -> Self::Result {
        if matches!(m.patch, Patch::Apply { .. }) || self.small(&m) {
            let res = Resource::of(m.kind);
            let at = (m.namespace.as_str(), m.name.as_str());
            let done = self.write(m.opts.dry_run, |s| {
                s.as_writer(m.manager, |s| {
                    s.patch(&res, at, &m.patch, m.sub, (m.strict, m.opts))
                })
            });
            return Box::pin(fut::ready(done.and_then(one)));
        }
        Box::pin(aside(ctx.address(), m).into_actor(self))
    }
}

impl StoreActor {
    /// Whether `m` is cheap enough to work out here: a small patch of a small object (a
    /// pod's status, a label) costs microseconds, less than the hops off the thread.
    fn small(&mut self, m: &PatchObject) -> bool {
        let ns = if Resource::of(m.kind).namespaced() {
            m.namespace.as_str()
        } else {
            ""
        };
        let Ok(base) = self.store().and_then(|s| s.get(m.kind, ns, &m.name)) else {
            return true; // the write answers why not, at once
        };
        let room = INLINE_BYTES.saturating_sub(base.json.len());
        room > 0 && crate::patch::weight_of(&m.patch, room) <= room
    }
}

/// Work that stays on the store's thread: the object and the patch together, about.
const INLINE_BYTES: usize = 64 * 1024;

/// Works `m` out on the blocking pool, and writes it through `store`.
async fn aside(store: Addr<StoreActor>, m: PatchObject) -> Result<Arc<StoredObject>, Error> {
    let gone = |e: MailboxError| Error::Unavailable(format!("the store stopped: {e}"));
    let res = Resource::of(m.kind);
    let patch = Arc::new(m.patch);
    for _ in 0..TRIES {
        let base = PatchBase {
            kind: m.kind,
            namespace: if res.namespaced() {
                m.namespace.clone()
            } else {
                String::new()
            },
            name: m.name.clone(),
        };
        let base = store.send(base).await.map_err(gone)??;
        let revision = base.revision;
        let (p, strict) = (patch.clone(), m.strict);
        let object = tokio::task::spawn_blocking(move || {
            crate::patch::patched(&Resource::of(base.kind), &base, &p, strict)
        })
        .await
        .map_err(|e| Error::Internal(format!("the patch's task failed: {e}")))??;
        let commit = CommitPatch {
            object,
            base: revision,
            sub: m.sub,
            opts: m.opts,
            manager: m.manager.clone(),
        };
        if let Some(done) = store.send(commit).await.map_err(gone)?? {
            return Ok(done);
        }
    }
    Err(Error::Conflict {
        resource: res.plural.to_string(),
        name: m.name,
        reason: "the object kept changing while the patch was applied; please try again".into(),
    })
}

impl Handler<PatchBase> for StoreActor {
    type Result = Result<Arc<StoredObject>, Error>;

    fn handle(&mut self, m: PatchBase, _: &mut Context<Self>) -> Self::Result {
        self.store()?.get(m.kind, &m.namespace, &m.name)
    }
}

impl Handler<CommitPatch> for StoreActor {
    type Result = Result<Option<Arc<StoredObject>>, Error>;

    fn handle(&mut self, m: CommitPatch, _: &mut Context<Self>) -> Self::Result {
        let res = Resource::of(m.object.kind());
        let ns = if res.namespaced() {
            m.object.namespace()
        } else {
            ""
        };
        let now = self.store()?.get(res.kind, ns, m.object.name())?;
        if now.revision != m.base {
            return Ok(None);
        }
        let written = self.write(m.opts.dry_run, |s| {
            s.as_writer(m.manager, |s| s.update(&res, m.object, m.sub, m.opts))
        })?;
        one(written).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use podvisor_actors::ChildSpec;
    use serde_json::json;

    use super::*;
    use crate::actor::{Create, Replace};
    use crate::store::StoreConfig;

    fn config_map(data: &str) -> AnyObject {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "cm", "namespace": "default"},
                "data": {"big": data}}))
            .unwrap();
        AnyObject::new(cm)
    }

    fn store(name: &str) -> podvisor_actors::ActorRef<StoreActor> {
        let dir =
            std::env::temp_dir().join(format!("podvisor-patching-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = StoreConfig {
            path: dir.join("s.redb"),
            window: 100,
        };
        ChildSpec::of(move || StoreActor::new(cfg.clone(), 16)).start_unsupervised()
    }

    /// A result worked out from a revision that is no longer the object's is not written;
    /// from the current one, it is.
    #[actix_rt::test]
    async fn a_patch_made_from_a_stale_revision_is_not_written() {
        let store = store("stale");
        let create = Create {
            namespace: Some("default".into()),
            object: config_map("a"),
            opts: PostParams::default(),
        };
        let first = store.send(create).await.unwrap().unwrap();
        let replace = Replace {
            object: config_map("b"),
            sub: Subresource::Main,
            opts: PostParams::default(),
            manager: None,
        };
        let second = store.send(replace).await.unwrap().unwrap();
        let commit = |base| CommitPatch {
            object: config_map("patched"),
            base,
            sub: Subresource::Main,
            opts: PostParams::default(),
            manager: None,
        };
        let stale = store.send(commit(first.revision)).await.unwrap().unwrap();
        assert!(stale.is_none());
        let done = store.send(commit(second.revision)).await.unwrap().unwrap();
        assert!(done.is_some_and(|o| o.value()["data"]["big"] == "patched"));
    }

    /// A patch too large for the store's thread is worked out aside and written, and one
    /// that names a stale resourceVersion is still refused.
    #[actix_rt::test]
    async fn a_large_patch_is_worked_out_aside_with_its_preconditions() {
        let store = store("aside");
        let big = "x".repeat(2 * INLINE_BYTES);
        let create = Create {
            namespace: Some("default".into()),
            object: config_map(&big),
            opts: PostParams::default(),
        };
        let made = store.send(create).await.unwrap().unwrap();
        let patch = |p: serde_json::Value| PatchObject {
            kind: Kind::ConfigMap,
            namespace: "default".into(),
            name: "cm".into(),
            patch: Patch::Strategic(p),
            sub: Subresource::Main,
            strict: false,
            opts: PostParams::default(),
            manager: None,
        };
        let done = store
            .send(patch(json!({"data": {"more": "y"}})))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.value()["data"]["more"], "y");
        assert_eq!(
            done.value()["data"]["big"].as_str().map(str::len),
            Some(big.len())
        );
        let stale = json!({"metadata": {"resourceVersion": made.revision.to_string()},
            "data": {"late": "z"}});
        let e = store.send(patch(stale)).await.unwrap().unwrap_err();
        assert!(matches!(e, Error::Conflict { .. }), "{e}");
    }
}
