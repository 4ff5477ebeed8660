//! Why a streaming request was refused or ended, and the HTTP status a client is told.

use podvisor_cri::CriError;

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// No credentials, or wrong ones: 401.
    #[error("Unauthorized")]
    Unauthorized,
    /// The client may not: 403.
    #[error("{0}")]
    Forbidden(String),
    /// Streaming is not served here: 503.
    #[error("{0}")]
    Unavailable(String),
    /// The request itself is wrong (options, container, ports): 400.
    #[error("{0}")]
    BadRequest(String),
    /// The pod or container does not exist (or is not running): 404.
    #[error("{0}")]
    NotFound(String),
    /// More sessions than the node allows at once: 429.
    #[error("too many streaming sessions on this node (at most {0}); try again later")]
    TooMany(usize),
    /// The runtime would not prepare the session: 500.
    #[error("the container runtime refused the session: {0}")]
    Runtime(#[from] CriError),
    /// The runtime's stream server could not be reached or spoke nonsense: 502.
    #[error("the runtime's stream server: {0}")]
    Upstream(String),
    /// The client's request head was malformed or too large: 400.
    #[error("malformed request: {0}")]
    Malformed(String),
    #[error("stream I/O: {0}")]
    Io(#[from] std::io::Error),
    /// Nothing moved either way for longer than the idle limit.
    #[error("no traffic for {0:?}: closed")]
    Idle(std::time::Duration),
}

impl StreamError {
    /// The HTTP status answered for this refusal.
    pub fn code(&self) -> u16 {
        match self {
            Self::BadRequest(_) | Self::Malformed(_) => 400,
            Self::Unauthorized => 401,
            Self::Forbidden(_) => 403,
            Self::Unavailable(_) => 503,
            Self::NotFound(_) => 404,
            Self::TooMany(_) => 429,
            Self::Runtime(e) if e.is_not_found() => 404,
            Self::Runtime(_) | Self::Io(_) => 500,
            Self::Upstream(_) => 502,
            Self::Idle(_) => 408,
        }
    }

    /// The metav1.Status reason for [`Self::code`].
    pub fn reason(&self) -> &'static str {
        match self.code() {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            503 => "ServiceUnavailable",
            404 => "NotFound",
            429 => "TooManyRequests",
            408 => "Timeout",
            _ => "InternalError",
        }
    }
}
