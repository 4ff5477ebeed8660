//! The store actor's side of copies of another API's objects (`Store::replicate`).

use std::sync::Arc;

use actix::prelude::*;
use podvisor_client::{AnyObject, Error};

use crate::actor::StoreActor;
use crate::object::{Resource, StoredObject};

/// Keeps a copy of another API's object: the copy as kept, or `None` when it said nothing
/// new.
#[derive(Message)]
#[rtype(result = "Result<Option<Arc<StoredObject>>, Error>")]
pub struct Replicate {
    pub object: AnyObject,
}

impl Handler<Replicate> for StoreActor {
    type Result = Result<Option<Arc<StoredObject>>, Error>;
    fn handle(&mut self, m: Replicate, _: &mut Context<Self>) -> Self::Result {
        let res = Resource::of(m.object.kind());
        let (uid, name) = (m.object.meta().uid.clone(), m.object.name().to_string());
        let changes = self.write(false, |s| s.replicate(&res, m.object))?;
        // The copy's own change (after its namespace's, or the old incarnation's removal).
        Ok(changes
            .into_iter()
            .rev()
            .find(|c| c.object.name == name && Some(c.object.uid.as_str()) == uid.as_deref())
            .map(|c| c.object))
    }
}
