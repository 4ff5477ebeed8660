//! Events expire: kube-apiserver keeps them for a TTL (an hour by default) and so does the
//! store, so a node that runs for months keeps a bounded number of them.

use podvisor_core::Kind;
use serde_json::Value;

use super::{Store, Write};
use crate::error::StoreError;
use crate::object::Change;
use crate::store::WriteOptions;

impl Store {
    /// Removes Events last seen before `cutoff_ms` (milliseconds since the epoch), at most
    /// `max` in one transaction, as kube-apiserver's event TTL does.
    pub fn expire_events(&mut self, cutoff_ms: u64, max: usize) -> Result<Vec<Change>, StoreError> {
        let writes: Vec<Write> = self
            .objects
            .range(format!("{}/", Kind::Event.as_str())..)
            .take_while(|(k, _)| k.starts_with("Event/"))
            .filter(|(_, o)| event_time_ms(&o.value()).is_some_and(|t| t < cutoff_ms))
            .take(max)
            .map(|(_, o)| Write::Remove(Kind::Event, o.value()))
            .collect();
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        self.commit(writes, WriteOptions::default())
    }
}

/// When an Event last happened: `lastTimestamp`, `eventTime`, or its creation.
fn event_time_ms(v: &Value) -> Option<u64> {
    let at = [
        &v["lastTimestamp"],
        &v["eventTime"],
        &v["metadata"]["creationTimestamp"],
    ]
    .into_iter()
    .find_map(|t| t.as_str())?;
    let t: k8s_openapi::jiff::Timestamp = at.parse().ok()?;
    u64::try_from(t.as_millisecond()).ok()
}
