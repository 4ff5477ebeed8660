//! Waiting for a followed log to grow: inotify on the container's log directory (a write
//! to its file, and the new file a rotation leaves), so a follower gets a line as soon as
//! it is written and costs nothing while the container is quiet. Where inotify cannot be
//! had (the process is out of instances), it looks again every 200 ms.

use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt;
use inotify::{EventStream, Inotify, WatchMask};

const POLL: Duration = Duration::from_millis(200);

pub(crate) struct Growth {
    events: Option<EventStream<Vec<u8>>>,
}

impl Growth {
    pub(crate) fn watch(dir: &Path) -> Self {
        let events = Inotify::init().and_then(|inotify| {
            let mask = WatchMask::MODIFY | WatchMask::CREATE | WatchMask::MOVED_TO;
            inotify.watches().add(dir, mask)?;
            inotify.into_event_stream(vec![0u8; 1024])
        });
        match events {
            Ok(events) => Self {
                events: Some(events),
            },
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "no inotify for a log follow; polling");
                Self { events: None }
            }
        }
    }

    /// Waits until the directory changes or `at_most` passes; `true` if it changed.
    pub(crate) async fn wait(&mut self, at_most: Duration) -> bool {
        let Some(events) = self.events.as_mut() else {
            tokio::time::sleep(POLL.min(at_most)).await;
            return true;
        };
        match tokio::time::timeout(at_most, events.next()).await {
            Ok(Some(Ok(_))) => true,
            Ok(_) => {
                // The instance broke: poll from now on.
                self.events = None;
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_wakes_the_wait_and_silence_lets_it_time_out() {
        let dir = std::env::temp_dir().join(format!("podvisor-growth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut growth = Growth::watch(&dir);
        assert!(growth.events.is_some(), "inotify is available here");
        assert!(!growth.wait(Duration::from_millis(50)).await);
        let file = dir.join("0.log");
        let writer = tokio::spawn({
            let file = file.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                std::fs::write(file, "line\n").unwrap();
            }
        });
        let t0 = std::time::Instant::now();
        assert!(growth.wait(Duration::from_secs(5)).await);
        assert!(t0.elapsed() < Duration::from_secs(1));
        writer.await.unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
