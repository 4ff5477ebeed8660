//! A container's log as `kubectl logs` and the kubelet's `/containerLogs` give it: decoded
//! from the CRI log file a chunk at a time (never read whole), from the last `tailLines`
//! or a time on, up to `limitBytes`, with or without timestamps, and when following, what
//! is appended until that instance of the container stops.

mod file;
mod wait;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;

use file::{Decode, LogReader};

/// What of the log to give.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub tail_lines: Option<usize>,
    pub limit_bytes: Option<u64>,
    pub timestamps: bool,
    /// Only lines written at or after this time.
    pub since: Option<jiff::Timestamp>,
}

/// How long a followed log may stay quiet before the follow asks whether its container
/// still runs.
const QUIET: Duration = Duration::from_secs(1);

/// The output of the log at `path`. With `still_running`, what is appended after the end
/// follows until it answers false (asked at most once a second while the log is quiet).
pub async fn log_stream<F, Fut>(
    path: PathBuf,
    options: &LogOptions,
    still_running: Option<F>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + 'static
where
    F: FnMut() -> Fut + 'static,
    Fut: Future<Output = bool>,
{
    let offset = match options.tail_lines {
        Some(n) => file::tail_offset(&path, n).await,
        None => 0,
    };
    let growth = still_running
        .as_ref()
        .and_then(|_| path.parent().map(wait::Growth::watch));
    let decode = Decode::new(options.timestamps, options.since);
    let reader = LogReader::new(path, offset, options.limit_bytes, decode);
    let state = (reader, still_running, growth, tokio::time::Instant::now());
    futures_util::stream::unfold(
        state,
        |(mut reader, mut follow, mut growth, mut asked)| async move {
            while !reader.done() {
                if let Some(text) = reader.next().await {
                    if !text.is_empty() {
                        return Some((Ok(Bytes::from(text)), (reader, follow, growth, asked)));
                    }
                    continue;
                }
                let running = follow.as_mut()?;
                if let Some(g) = growth.as_mut() {
                    g.wait(QUIET).await;
                }
                // At most once a quiet period (the directory may change for another file, a
                // later instance's log).
                if asked.elapsed() >= QUIET {
                    asked = tokio::time::Instant::now();
                    if !running().await {
                        // What it wrote before it stopped, then the end.
                        follow = None;
                    }
                }
            }
            None
        },
    )
}
