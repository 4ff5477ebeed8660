//! Reading the store: lists (in pages), and the changes a watch resumes from.

use std::sync::Arc;

use super::Store;
use super::key;
use crate::object::{Change, StoredObject};
use crate::page::{ListPage, decode_token, encode_token};
use crate::selector::Selector;
use podvisor_client::Error;

impl Store {
    pub fn list(
        &self,
        sel: &Selector,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<ListPage, Error> {
        let prefix = match &sel.namespace {
            Some(ns) => format!("{}/{ns}/", sel.kind.as_str()),
            None => format!("{}/", sel.kind.as_str()),
        };
        let (revision, after) = match continue_token.filter(|t| !t.is_empty()) {
            Some(t) => {
                let (rev, k) = decode_token(t)?;
                (rev.min(self.revision), Some(k))
            }
            None => (self.revision, None),
        };
        let start = after.clone().unwrap_or_else(|| prefix.clone());
        let limit = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut more = None;
        for (k, o) in self.objects.range(start..) {
            if !k.starts_with(&prefix) {
                break;
            }
            if after.as_ref() == Some(k) || !sel.matches(o) {
                continue;
            }
            if items.len() == limit {
                more = items.last().map(|o: &Arc<StoredObject>| {
                    encode_token(revision, &key(o.kind, &o.namespace, &o.name))
                });
                break;
            }
            items.push(o.clone());
        }
        Ok(ListPage {
            items,
            revision,
            continue_token: more,
        })
    }

    /// Every change after `revision` that `sel` matches, in order; `Gone` when the window
    /// no longer reaches back that far.
    pub fn changes_since(&self, revision: u64, sel: &Selector) -> Result<Vec<Change>, Error> {
        let oldest = self.oldest_resumable();
        if revision < oldest {
            return Err(Error::Gone(format!("{revision} ({oldest})")));
        }
        Ok(self
            .window
            .iter()
            .filter(|c| c.revision > revision)
            .filter_map(|c| sel.view(c))
            .collect())
    }
}
