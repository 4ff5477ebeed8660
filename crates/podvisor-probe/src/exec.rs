//! Exec probes and hooks: a command run in the container through CRI `ExecSync`, bounded by
//! the probe's timeout (the runtime enforces it; the client's own deadline only catches a
//! runtime that hangs).

use std::time::Duration;

use podvisor_cri::{CriError, Runtime};

use crate::outcome::{Outcome, output_text};

/// Runs `cmd` in container `id`. Exit code 0 is success, any other a failure with the
/// command's output (stdout then stderr, at most 10 KiB); a command that outlives
/// `timeout` fails; a call the runtime could not carry out is an error.
pub(crate) async fn exec(
    runtime: &dyn Runtime,
    id: &str,
    cmd: &[String],
    timeout: Duration,
) -> Outcome {
    match runtime.exec_sync(id, cmd, timeout).await {
        Ok(r) if r.exit_code == 0 => Outcome::Success,
        Ok(r) => {
            let mut out = r.stdout;
            out.extend_from_slice(&r.stderr);
            let text = output_text(&out);
            Outcome::Failure(if text.is_empty() {
                format!("command {:?} exited with {}", cmd.join(" "), r.exit_code)
            } else {
                text
            })
        }
        Err(e) if timed_out(&e) => Outcome::Failure(format!(
            "command timed out: {:?} timed out after {}",
            cmd.join(" "),
            seconds(timeout)
        )),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// The runtime's own deadline (containerd answers DeadlineExceeded) or the client's.
fn timed_out(e: &CriError) -> bool {
    match e {
        CriError::Timeout { .. } => true,
        CriError::Failed { code, .. } => *code == tonic::Code::DeadlineExceeded,
        _ => false,
    }
}

/// A duration as Go prints whole seconds: `1s`.
pub(crate) fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs())
}
