//! Admission: what every create and every replace goes through before it is stored, in
//! order, whoever writes (the API for kubectl, a controller, the node's own actors), with
//! the store's contents in view and no other write in between. A check may change the
//! object (defaulting, binding a pod to the node) or refuse it (an invalid object, a pod the
//! node cannot take); a later check sees what an earlier one made of it. What they check is
//! the API's business (`podvisor-apiserver`); the store only runs them, on the typed object
//! decoded once. Status writes and the store's own bookkeeping (deletion marks,
//! dependents, expiry) are not admitted.

use std::sync::Arc;

use podvisor_client::{AnyObject, Error, Subresource};
use podvisor_core::Kind;

use crate::object::{Resource, StoredObject};
use crate::selector::Selector;

/// What a check may read of the store, as it stands inside the write.
pub trait Objects {
    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Arc<StoredObject>>;

    /// Every object `sel` selects.
    fn select(&self, sel: &Selector) -> Vec<Arc<StoredObject>>;
}

pub trait Admission: Send + Sync {
    /// Admits `object`, about to be created (`old` is `None`) or to replace `old` (through
    /// `sub`, the main resource or a pod's ephemeral containers): changes it, or refuses
    /// it with the reason.
    fn admit(
        &self,
        store: &dyn Objects,
        res: &Resource,
        object: &mut AnyObject,
        old: Option<&StoredObject>,
        sub: Subresource,
    ) -> Result<(), Error>;
}
