//! The store's side of server-side apply: the merge (`crate::apply`) made inside the
//! write, then a create or an update like any other.

use podvisor_client::{Error, PostParams, Subresource};

use super::Store;
use crate::decode;
use crate::object::{Change, Resource};

impl Store {
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
        let now = serde_json::to_value(podvisor_core::time::now()).unwrap_or_default();
        let a = crate::apply::Apply {
            config,
            manager,
            force,
            now,
        };
        let mut doc = crate::apply::apply(live.as_ref(), &a, res.qualified(), name)?;
        doc["metadata"]["name"] = name.into();
        if res.namespaced() {
            doc["metadata"]["namespace"] = ns.into();
        }
        let object = decode::object(res, doc, strict)?;
        match live {
            Some(_) => self.update(res, object, Subresource::Main, opts),
            None => self.create(res, object, Some(ns), opts),
        }
    }
}
