//! The change window: the newest changes, bounded by count and by bytes, which watches
//! resume from.

use super::{Store, WINDOW_BYTES, key};
use crate::object::{Change, ChangeType};

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
        let gone: usize = self.window.drain(..drop).map(|c| c.object.json.len()).sum();
        self.window_bytes -= gone;
    }
}
