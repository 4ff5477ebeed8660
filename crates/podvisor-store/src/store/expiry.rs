//! Events expire: kube-apiserver keeps them for a TTL (an hour by default) and so does the
//! store, so a node that runs for months keeps a bounded number of them.

use podvisor_client::{AnyObject, Error, PostParams};
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
            .filter_map(|(_, o)| o.object().ok())
            .filter(|o| event_time_ms(o).is_some_and(|t| t < cutoff_ms))
            .take(max)
            .map(Write::Remove)
            .collect();
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        self.commit(writes, PostParams::default())
    }
}

/// When an Event last happened: `lastTimestamp`, `eventTime`, or its creation.
fn event_time_ms(o: &AnyObject) -> Option<u64> {
    let AnyObject::Event(e) = o else { return None };
    let at = e
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    u64::try_from(at.as_millisecond()).ok()
}
