//! Events expire: kube-apiserver keeps them for a TTL (an hour by default) and so does the
//! store, so a node that runs for months keeps a bounded number of them.

use podvisor_client::{Error, PostParams};
use podvisor_core::Kind;

use super::{Store, Write};
use crate::object::Change;

impl Store {
    /// Removes Events last seen before `cutoff_ms` (milliseconds since the epoch), at most
    /// `max` in one transaction, as kube-apiserver's event TTL does.
    pub fn expire_events(&mut self, cutoff_ms: u64, max: usize) -> Result<Vec<Change>, Error> {
        let writes: Vec<Write> = self
            .objects
            .range(format!("{}/", Kind::Event.as_str())..)
            .take_while(|(k, _)| k.starts_with("Event/"))
            .filter(|(_, o)| o.happened_ms.is_some_and(|t| t < cutoff_ms))
            .take(max)
            .filter_map(|(_, o)| o.object().ok())
            .map(Write::Remove)
            .collect();
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        self.commit(writes, PostParams::default())
    }
}
