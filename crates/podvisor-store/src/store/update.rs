//! Replacing and patching an object (or only its status): the stored object checked and
//! decoded once per write.

use std::sync::Arc;

use podvisor_client::{AnyObject, Error, Patch, PostParams, Subresource};

use super::{Store, Write};
use crate::delete;
use crate::meta;
use crate::object::{Change, ChangeType, Resource, StoredObject};
use crate::{kinds, patch};

impl Store {
    /// The stored object `new` replaces, once its `resourceVersion` (when it names one) is
    /// checked against the stored one.
    fn current(&self, res: &Resource, new: &AnyObject) -> Result<Arc<StoredObject>, Error> {
        let ns = if res.namespaced() {
            new.namespace()
        } else {
            ""
        };
        let old = self.get(res.kind, ns, new.name())?;
        let asked = new.resource_version();
        if !asked.is_empty() && asked != old.revision.to_string() {
            return Err(Error::conflict(
                &res.qualified(),
                new.name(),
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        meta::check_uid(res, new, &old.uid)?;
        Ok(old)
    }

    /// Replaces an object (or only its status). A `resourceVersion` in it must be the
    /// stored one. A status write is not admitted again: the object it changes already
    /// was, and a typed status cannot make it unreadable.
    pub fn update(
        &mut self,
        res: &Resource,
        new: AnyObject,
        sub: Subresource,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error> {
        self.update_from(res, new, None, sub, opts)
    }

    /// As [`Self::update`], with the stored object already decoded when the caller has it
    /// (`old_object`, a patch's base): the stored JSON is decoded once per write.
    fn update_from(
        &mut self,
        res: &Resource,
        mut new: AnyObject,
        old_object: Option<AnyObject>,
        sub: Subresource,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error> {
        let old = self.current(res, &new)?;
        let old_object = match old_object {
            Some(o) => o,
            None => old.object()?,
        };
        let status_only = sub == Subresource::Status;
        match sub {
            Subresource::EphemeralContainers => {
                new = kinds::with_ephemeral_containers(&old_object, &new)?;
            }
            Subresource::Resize => new = kinds::with_resize(&old_object, &new)?,
            Subresource::Main | Subresource::Status => {}
        }
        if !status_only {
            for check in &self.admission {
                check.admit(self, res, &mut new, Some(&old), sub)?;
            }
        }
        let mut new = meta::prepare_update(res, &old_object, new, status_only);
        self.take_ownership(&old_object, &mut new, status_only)?;
        let mut writes = if delete::removable_after_update(&new) {
            let mut w = self.delete_dependents(&old);
            w.insert(0, Write::Remove(new));
            w
        } else {
            vec![Write::Put(ChangeType::Modified, new)]
        };
        writes.extend(self.release_owners(&writes));
        self.commit(writes, opts)
    }

    /// Patches an object (or only its status), in the same write as it is read, so no
    /// other write comes between. A `resourceVersion` the patch sets is a precondition.
    /// (The store's actor works patches out on another thread and writes them if the
    /// object is still the one they were made from: `patching.rs`.)
    pub fn patch(
        &mut self,
        res: &Resource,
        (ns, name): (&str, &str),
        p: &Patch,
        sub: Subresource,
        (strict, opts): (bool, PostParams),
    ) -> Result<Vec<Change>, Error> {
        if let Patch::Apply {
            config,
            manager,
            force,
        } = p
        {
            if sub != Subresource::Main {
                return Err(Error::BadRequest(
                    "podvisor applies server-side to the main resource only, not to status".into(),
                ));
            }
            return self.apply(res, (ns, name), (config, manager, *force), (strict, opts));
        }
        let ns = if res.namespaced() { ns } else { "" };
        let old = self.get(res.kind, ns, name)?;
        let old_object = old.object()?;
        let patched = patch::patched_typed(res, (&old, &old_object), p, strict)?;
        self.update_from(res, patched, Some(old_object), sub, opts)
    }
}
