//! Why a volume cannot be set up or an environment cannot be made: each message says which
//! object, key or field, as the kubelet's events and waiting messages do.

use std::path::PathBuf;

/// Why an object could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SourceError {
    /// The API did not answer (the cluster away, a timeout); nothing is known of the object.
    #[error("{0}")]
    Unavailable(String),
    /// The node may not read it (a cluster's node authorizer answers 403 for an object no
    /// pod of the node refers to).
    #[error("{0}")]
    Forbidden(String),
    /// This node cannot issue what was asked (a token, standalone).
    #[error("{0}")]
    Unsupported(String),
}

#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        kind: &'static str,
        namespace: String,
        name: String,
    },
    #[error("{what} has no key {key:?}")]
    MissingKey { what: String, key: String },
    #[error("{kind} {namespace}/{name}: {source}")]
    Source {
        kind: &'static str,
        namespace: String,
        name: String,
        source: SourceError,
    },
    #[error("service-account token for {service_account:?}: {source}")]
    Token {
        service_account: String,
        source: SourceError,
    },
    #[error("two sources of the projected volume write {0:?}")]
    Conflict(String),
    #[error("the downward API does not give fieldPath {0:?} here")]
    FieldPath(String),
    #[error("the downward API does not give resource {0:?}")]
    Resource(String),
    #[error("resourceFieldRef names container {0:?}, which the pod does not have")]
    NoContainer(String),
    #[error("{0}")]
    Quantity(String),
    #[error("{0} is not supported")]
    Unsupported(String),
    #[error("path {0:?} must be relative, without '..'")]
    Path(String),
    #[error("volume {volume:?}: {source}")]
    Volume {
        volume: String,
        #[source]
        source: Box<VolumeError>,
    },
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a blocking task failed: {0}")]
    Blocking(String),
    #[error("{what}: {source}")]
    TooLong {
        what: String,
        source: podvisor_core::expand::TooLong,
    },
}

impl VolumeError {
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The API could not be asked (not: it answered no).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Source { source, .. } | Self::Token { source, .. } => {
                matches!(source, SourceError::Unavailable(_))
            }
            Self::Volume { source, .. } => source.is_unavailable(),
            _ => false,
        }
    }

    pub(crate) fn in_volume(self, volume: &str) -> Self {
        Self::Volume {
            volume: volume.to_string(),
            source: Box::new(self),
        }
    }
}
