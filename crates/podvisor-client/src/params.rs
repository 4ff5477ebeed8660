//! What a request asks besides its object: which objects (selectors, pages), how to write
//! (dry run), how to delete (grace, preconditions, dependents), and how to patch.

use serde_json::Value;

use crate::error::Error;
use crate::selector::{FieldSelector, LabelSelector};

/// Which objects a list or watch wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// At most this many items per page (`None`: all).
    pub limit: Option<usize>,
    /// The token of the page before (`ObjectList::continue_token`).
    pub continue_token: Option<String>,
}

impl ListParams {
    pub fn fields(mut self, fields: FieldSelector) -> Self {
        self.fields = fields;
        self
    }

    pub fn labels(mut self, labels: LabelSelector) -> Self {
        self.labels = labels;
        self
    }

    /// `field=value`.
    pub fn field_equals(self, field: &str, value: &str) -> Self {
        self.fields(FieldSelector::equals(field, value))
    }
}

/// How a write is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PostParams {
    /// Checked and answered, never stored.
    pub dry_run: bool,
}

/// The part of an object a write replaces or patches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Subresource {
    /// Everything but the status (for kinds with a status subresource).
    #[default]
    Main,
    /// Only the status.
    Status,
    /// Only a pod's `spec.ephemeralContainers` (`pods/ephemeralcontainers`: debuggers
    /// added to a running pod).
    EphemeralContainers,
    /// Only the CPU and memory of a pod's containers, and their `resizePolicy`
    /// (`pods/resize`: in-place resize).
    Resize,
}

impl Subresource {
    /// Its name in a request path (`None` for the main resource).
    pub fn path(self) -> Option<&'static str> {
        match self {
            Subresource::Main => None,
            Subresource::Status => Some("status"),
            Subresource::EphemeralContainers => Some("ephemeralcontainers"),
            Subresource::Resize => Some("resize"),
        }
    }
}

/// What happens to objects that name the deleted one in their `ownerReferences`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted with their owner.
    #[default]
    Background,
    /// The owner stays, held by the `foregroundDeletion` finalizer, until no dependent
    /// that blocks it (`blockOwnerDeletion`) is left.
    Foreground,
    /// Dependents stay, without the owner reference.
    Orphan,
}

impl Propagation {
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            other => Err(Error::BadRequest(format!(
                "propagationPolicy {other:?} is not one of Background, Foreground, Orphan"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Background => "Background",
            Self::Foreground => "Foreground",
            Self::Orphan => "Orphan",
        }
    }
}

/// How a delete is made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// `None`: the object's own (a pod's `terminationGracePeriodSeconds`, else 30).
    pub grace_seconds: Option<i64>,
    /// Only if the object is still this incarnation.
    pub precondition_uid: Option<String>,
    /// Only if the object is still at this version.
    pub precondition_resource_version: Option<String>,
    pub propagation: Propagation,
    pub dry_run: bool,
}

impl DeleteParams {
    /// What a node agent sends once a pod has stopped: remove it now, if it is still the
    /// incarnation it stopped.
    pub fn now_if_uid(uid: &str) -> Self {
        Self {
            grace_seconds: Some(0),
            precondition_uid: Some(uid.to_string()),
            ..Self::default()
        }
    }

    /// Gracefully, if it is still the incarnation `uid`.
    pub fn if_uid(uid: &str) -> Self {
        Self {
            precondition_uid: Some(uid.to_string()),
            ..Self::default()
        }
    }
}

/// A patch, in one of the three forms the API takes. The documents are JSON: a patch is
/// about the object's serialised form, whatever its type.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// RFC 6902 (`application/json-patch+json`).
    Json(json_patch::Patch),
    /// RFC 7386 (`application/merge-patch+json`).
    Merge(Value),
    /// Kubernetes' strategic merge patch (`application/strategic-merge-patch+json`).
    Strategic(Value),
    /// Server-side apply (`application/apply-patch+yaml`): the manager's whole intent.
    Apply {
        config: Value,
        manager: String,
        force: bool,
    },
}

impl Patch {
    /// The media type the API takes it as.
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Json(_) => "application/json-patch+json",
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
            Patch::Apply { .. } => "application/apply-patch+yaml",
        }
    }
}
