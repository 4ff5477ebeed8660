//! Runtime endpoints as the kubelet spells them (`unix:///run/containerd/containerd.sock`).
//! Only unix sockets are accepted: CRI runtimes listen on one, and refusing TCP keeps a
//! typo from sending container configs across the network.

use std::fmt;
use std::path::{Path, PathBuf};

/// The endpoint used when none is configured: the system containerd.
pub const DEFAULT_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("runtime endpoint {0:?} is not a unix socket (expected unix:///path/to.sock)")]
    NotUnix(String),
    #[error("runtime endpoint {0:?} has an empty or relative socket path")]
    BadPath(String),
}

/// A parsed unix-socket endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    path: PathBuf,
}

impl Endpoint {
    /// Accepts `unix:///abs/path` and, for convenience, a bare absolute path.
    pub fn parse(raw: &str) -> Result<Self, EndpointError> {
        let path = match raw.strip_prefix("unix://") {
            Some(rest) => rest,
            None if raw.starts_with('/') => raw,
            None => return Err(EndpointError::NotUnix(raw.to_string())),
        };
        if !path.starts_with('/') {
            return Err(EndpointError::BadPath(raw.to_string()));
        }
        Ok(Self {
            path: PathBuf::from(path),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unix://{}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unix_urls_and_bare_paths() {
        let e = Endpoint::parse("unix:///run/x.sock").unwrap();
        assert_eq!(e.path(), Path::new("/run/x.sock"));
        assert_eq!(e.to_string(), "unix:///run/x.sock");
        assert_eq!(Endpoint::parse("/run/x.sock").unwrap(), e);
    }

    #[test]
    fn rejects_tcp_and_relative_paths() {
        assert!(matches!(
            Endpoint::parse("tcp://127.0.0.1:1234"),
            Err(EndpointError::NotUnix(_))
        ));
        assert!(matches!(
            Endpoint::parse("unix://run/x.sock"),
            Err(EndpointError::BadPath(_))
        ));
        assert!(matches!(
            Endpoint::parse(""),
            Err(EndpointError::NotUnix(_))
        ));
    }
}
