//! The API asks the manifest source which files it could not use.

use actix::Message;
use serde::{Deserialize, Serialize};

/// The manifests that could not be used, and why.
#[derive(Message)]
#[rtype(result = "Vec<ManifestError>")]
pub struct GetManifestErrors;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestError {
    pub path: String,
    pub reason: String,
}
