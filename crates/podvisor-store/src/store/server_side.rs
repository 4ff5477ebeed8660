//! The store's side of server-side apply: the merge (`crate::apply`) made inside the
//! write, then a create or an update like any other.

use podvisor_client::{AnyObject, Error, PostParams, Subresource};

use super::Store;
use crate::decode;
use crate::object::{Change, Resource};

impl Store {
    /// Runs `write` on behalf of `manager`.
    pub fn as_writer<T>(
        &mut self,
        manager: Option<String>,
        write: impl FnOnce(&mut Self) -> T,
    ) -> T {
        self.writer = manager;
        let out = write(self);
        self.writer = None;
        out
    }

    /// An update that is not an apply, of an object some manager applied: the fields it
    /// changes become the writer's (an `Update` entry), no longer the appliers', so a later
    /// apply that leaves them out does not take them away. Objects never applied pay
    /// nothing; an update that rewrites `managedFields` itself is taken as it is.
    pub(super) fn take_ownership(
        &self,
        old: &AnyObject,
        new: &mut AnyObject,
        status_only: bool,
    ) -> Result<(), Error> {
        let before = old.meta().managed_fields.as_ref();
        if status_only
            || before.is_none_or(Vec::is_empty)
            || new.meta().managed_fields.as_ref() != before
        {
            return Ok(());
        }
        let to_value = |o: &AnyObject| -> Result<serde_json::Value, Error> {
            let bytes = o
                .to_json()
                .map_err(|e| Error::Internal(format!("an object as JSON: {e}")))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| Error::Internal(format!("an object as JSON: {e}")))
        };
        let (was, mut now) = (to_value(old)?, to_value(new)?);
        let writer = self.writer.as_deref().unwrap_or("podvisor");
        let now_time = serde_json::to_value(podvisor_core::time::now()).unwrap_or_default();
        if crate::apply::take_changed(&was, &mut now, writer, now_time)? {
            *new = decode::object(&Resource::of(new.kind()), now, false)?;
        }
        Ok(())
    }
    /// A server-side apply of `config` by `manager` (`apply/`): the object created if it
    /// does not exist, else updated with the merge, in one write.
    pub fn apply(
        &mut self,
        res: &Resource,
        (ns, name): (&str, &str),
        (config, manager, force): (&serde_json::Value, &str, bool),
        (strict, opts): (bool, PostParams),
    ) -> Result<Vec<Change>, Error> {
        let ns = if res.namespaced() { ns } else { "" };
        let live = match self.get(res.kind, ns, name) {
            Ok(o) => Some(o.value()),
            Err(Error::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        crate::apply::check(config, &res.api_version(), res.kind.as_str(), name)?;
        let now = serde_json::to_value(podvisor_core::time::now()).unwrap_or_default();
        let a = crate::apply::Apply {
            config,
            manager,
            force,
            now,
        };
        let mut doc = crate::apply::apply(live.as_ref(), &a, &res.qualified(), name)?;
        if let Some(meta) = doc["metadata"].as_object_mut() {
            meta.insert("name".into(), name.into());
            if res.namespaced() {
                meta.insert("namespace".into(), ns.into());
            }
        }
        let object = decode::object(res, doc, strict)?;
        match live {
            Some(_) => self.update(res, object, Subresource::Main, opts),
            None => self.create(res, object, Some(ns), opts),
        }
    }
}
