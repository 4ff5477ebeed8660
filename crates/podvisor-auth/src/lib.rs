//! Service accounts on a node standing alone, as kube-apiserver gives them to a cluster:
//!
//! - `signer.rs`: the node's ES256 key (kept in `<pki>/sa.key`) and the JWTs it signs,
//!   with Kubernetes' claims (`claims.rs`);
//! - `issue.rs`: TokenRequest (`serviceaccounts/token`), bound to a pod;
//! - `authn.rs`: a bearer token back to its caller (the API's authentication and
//!   TokenReview): signature, expiry, audience, and the account and pod still there;
//! - `rbac.rs`: RBAC's decision over the store's Roles and bindings; `escalation.rs` who
//!   may bind a role; `bootstrap.rs` the default ClusterRoles and bindings;
//! - `local.rs`: the kubelet's token manager for projected tokens, over the same signer.

// Functions stay short in production code (clippy.toml sets the limit); tests may run long.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod authn;
pub mod bootstrap;
mod claims;
mod error;
pub mod escalation;
mod issue;
mod local;
pub mod rbac;
mod signer;

pub use authn::{Authenticated, authenticate};
pub use claims::{Claims, Private, Ref, groups, username};
pub use error::AuthError;
pub use issue::{DEFAULT_EXPIRATION, MAX_EXPIRATION, MIN_EXPIRATION, issue};
pub use local::LocalTokens;
pub use signer::{ISSUER, KeyError, Signer};
