//! The filter a list or watch applies: a kind, a namespace, and the client's label and
//! field selectors, matched against what each stored object has parsed out.

use podvisor_client::{FieldSelector, LabelSelector, ListParams};
use podvisor_core::Kind;

use crate::object::{Change, ChangeType, StoredObject};

/// Which objects a list or watch wants.
#[derive(Debug, Clone)]
pub struct Selector {
    pub kind: Kind,
    /// `None`: all namespaces.
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selector {
    pub fn all(kind: Kind) -> Self {
        Self {
            kind,
            namespace: None,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
        }
    }

    pub fn in_namespace(mut self, ns: Option<&str>) -> Self {
        self.namespace = ns.map(str::to_string);
        self
    }

    pub fn matches(&self, o: &StoredObject) -> bool {
        o.kind == self.kind
            && self.namespace.as_ref().is_none_or(|ns| *ns == o.namespace)
            && self.fields.matches(|f| o.field(f))
            && self.labels.matches(|k| o.label(k))
    }

    /// The change as a watcher with this selector sees it, as kube-apiserver words it: an
    /// object that comes into the selection is ADDED, one that leaves it DELETED (with its
    /// new state), one that stays MODIFIED; `None` when it was never in it.
    pub fn view(&self, c: &Change) -> Option<Change> {
        let was = match c.kind {
            ChangeType::Added => false,
            ChangeType::Deleted => self.matches(c.prev.as_deref().unwrap_or(&c.object)),
            ChangeType::Modified => match &c.prev {
                Some(p) => self.matches(p),
                None => self.matches(&c.object),
            },
        };
        let is = c.kind != ChangeType::Deleted && self.matches(&c.object);
        let kind = match (was, is) {
            (false, false) => return None,
            (false, true) => ChangeType::Added,
            (true, true) => ChangeType::Modified,
            (true, false) => ChangeType::Deleted,
        };
        Some(Change { kind, ..c.clone() })
    }
}

impl Selector {
    /// What a client's list or watch asks for.
    pub fn of(kind: Kind, namespace: Option<&str>, lp: &ListParams) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_string),
            labels: lp.labels.clone(),
            fields: lp.fields.clone(),
        }
    }
}
