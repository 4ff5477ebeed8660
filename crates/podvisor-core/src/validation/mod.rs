//! The one validation path for pods, from manifests and (next) from the API: Kubernetes'
//! field paths and error kinds, so a refusal names the field and the reason the way the
//! API server would.

mod alpha;
#[cfg(test)]
mod coverage_fields;
#[cfg(test)]
mod coverage_nested;
#[cfg(test)]
mod coverage_tests;
#[cfg(test)]
mod coverage_walk;
mod dns;
mod ephemeral;
pub mod field;
mod lifecycle;
pub mod names;
mod pod;
mod resize_policy;
mod restart;
pub mod security;
mod unsupported;
mod volumes;

pub use field::{FieldError, FieldErrorKind, FieldErrors, FieldPath};
pub use pod::validate_pod;
pub use unsupported::UNKNOWN_FIELDS;
pub use volumes::{ENV_FIELD_PATHS, FILE_FIELD_PATHS, RESOURCES};
