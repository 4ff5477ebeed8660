//! Checks that run inside a create, with the store's contents in view and no other write in
//! between: what admission needs when the answer depends on other objects and must not race
//! them (a node's capacity when two pods are created for its last slot at once).
//! The store runs them; what they check is the API's business (`podvisor-apiserver`).

use serde_json::Value;

use crate::error::StoreError;
use crate::object::Resource;
use crate::store::Store;

pub trait Admission: Send + Sync {
    /// Refuses `object` (about to be created, its server-set fields filled in) with a
    /// [`StoreError::Forbidden`], or lets it through.
    fn admit(&self, store: &Store, res: &Resource, object: &Value) -> Result<(), StoreError>;
}
