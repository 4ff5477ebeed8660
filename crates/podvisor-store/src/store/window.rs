//! The change window: the newest changes, which watches resume from. Bounded by count and
//! by bytes, and by age: beyond the newest [`WINDOW_MIN`], a change older than
//! [`WINDOW_FRESH`] goes, so what a burst wrote (every version of every pod, each pinning
//! its JSON) is not held for as long as the node is quiet.

use std::time::{Duration, Instant};

use super::{Store, WINDOW_BYTES, key};
use crate::object::{Change, ChangeType};

/// How long a change stays resumable whatever else: kube-apiserver's watch cache keeps 75 s
/// of changes (`eventFreshDuration`) for the watches that reconnect.
pub const WINDOW_FRESH: Duration = Duration::from_secs(75);
/// The newest changes the window keeps however old (kube-apiserver's smallest watch cache).
pub const WINDOW_MIN: usize = 100;
/// Writes this close together share one mark: the marks stay few in a burst.
const MARK_GRAIN: Duration = Duration::from_secs(1);

impl Store {
    /// How many of the oldest changes make room for `changes`: beyond the window's length,
    /// and beyond [`WINDOW_BYTES`] (a watch that needs them relists).
    pub(super) fn to_drop(&self, changes: &[Change]) -> usize {
        let size = |c: &Change| c.object.json.len();
        let mut drop = (self.window.len() + changes.len()).saturating_sub(self.window_len);
        let dropped: usize = self.window.iter().take(drop).map(size).sum();
        let mut bytes = self.window_bytes + changes.iter().map(size).sum::<usize>() - dropped;
        while bytes > WINDOW_BYTES && drop < self.window.len() {
            bytes -= size(&self.window[drop]);
            drop += 1;
        }
        drop
    }

    pub(super) fn publish(&mut self, changes: &[Change], drop: usize) {
        for c in changes {
            let k = key(c.object.kind, &c.object.namespace, &c.object.name);
            match c.kind {
                ChangeType::Deleted => self.objects.remove(&k),
                _ => self.objects.insert(k, c.object.clone()),
            };
        }
        self.window_bytes += changes.iter().map(|c| c.object.json.len()).sum::<usize>();
        self.window.extend(changes.iter().cloned());
        self.drain_window(drop);
        if let Some(last) = changes.last() {
            self.mark(last.revision);
        }
    }

    /// Records that the window's changes through `revision` were written now.
    pub(super) fn mark(&mut self, revision: u64) {
        let now = Instant::now();
        match self.marks.back_mut() {
            Some((at, r)) if now.duration_since(*at) < MARK_GRAIN => *r = revision,
            _ => self.marks.push_back((now, revision)),
        }
    }

    /// Drops the changes older than [`WINDOW_FRESH`] at `now`, beyond the newest
    /// [`WINDOW_MIN`] (or the window's length, if smaller); returns how many went. The
    /// durable log follows at the next write.
    pub fn expire_window(&mut self, now: Instant) -> usize {
        let Some(cutoff) = now.checked_sub(WINDOW_FRESH) else {
            return 0;
        };
        while let Some(&(at, revision)) = self.marks.front() {
            if at > cutoff {
                break;
            }
            self.stale_through = self.stale_through.max(revision);
            self.marks.pop_front();
        }
        let stale = self
            .window
            .iter()
            .take_while(|c| c.revision <= self.stale_through)
            .count();
        let keep = WINDOW_MIN.min(self.window_len);
        let drop = stale.min(self.window.len().saturating_sub(keep));
        self.drain_window(drop);
        drop
    }

    fn drain_window(&mut self, drop: usize) {
        let gone: usize = self.window.drain(..drop).map(|c| c.object.json.len()).sum();
        self.window_bytes -= gone;
    }
}
