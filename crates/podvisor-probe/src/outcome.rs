//! What one run of a probe found.

/// The result of one probe run, with the message the kubelet would put in its event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Success, with something worth saying (an HTTP redirect that was not followed).
    Warning(String),
    Failure(String),
    /// The probe could not be run at all (the runtime failed the exec call): says nothing
    /// about the container, so it counts neither way.
    Error(String),
}

impl Outcome {
    /// Success or failure, for the thresholds; `None` for an error.
    pub fn passed(&self) -> Option<bool> {
        match self {
            Outcome::Success | Outcome::Warning(_) => Some(true),
            Outcome::Failure(_) => Some(false),
            Outcome::Error(_) => None,
        }
    }
}

/// The longest output of a probe that is kept (the kubelet's 10 KiB).
pub const MAX_OUTPUT: usize = 10 * 1024;

/// `bytes` as text, at most [`MAX_OUTPUT`] of them, without a trailing newline.
pub fn output_text(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(MAX_OUTPUT)];
    String::from_utf8_lossy(cut).trim_end().to_string()
}
