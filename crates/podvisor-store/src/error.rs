//! The store answers with the client's errors (`podvisor_client::Error`): it is the API's
//! backend, and its refusals are the API's. Database failures become `Internal`.

use podvisor_client::Error;

/// A database failure, as the store reports it.
pub(crate) fn failed(e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("the database failed: {e}"))
}
