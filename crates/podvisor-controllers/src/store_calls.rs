//! The store calls both controllers make, with a mailbox failure (the store actor stopped
//! or restarting) turned into a store error, so a sync fails and is retried.

use std::sync::Arc;

use podvisor_actors::{MailboxError, Recipient};
use podvisor_core::Kind;
use podvisor_store::actor::Get;
use podvisor_store::{StoreError, StoredObject};

pub(crate) fn mailbox(e: MailboxError) -> StoreError {
    StoreError::Db(e.to_string())
}

/// The current object, or `None` when there is none of that name.
pub(crate) async fn get(
    get: &Recipient<Get>,
    kind: Kind,
    ns: &str,
    name: &str,
) -> Result<Option<Arc<StoredObject>>, StoreError> {
    let msg = Get {
        kind,
        namespace: ns.into(),
        name: name.into(),
    };
    match get.send(msg).await.map_err(mailbox)? {
        Ok(o) => Ok(Some(o)),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
