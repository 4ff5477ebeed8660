//! Naming objects: the kinds podvisor knows and a key for one object, in the spirit of
//! kube-runtime's `ObjectRef`: kind, namespace and name identify it (that is what equality
//! and hashing use); the UID, when known, tells one incarnation from the next.

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

pub use crate::kinds::Kind;
use crate::uid::Uid;

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One object: kind, namespace (for namespaced kinds) and name, plus its UID when known.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: String,
    /// Not part of the identity: two keys of one name are equal across incarnations.
    pub uid: Option<Uid>,
}

impl ObjectKey {
    pub fn new(kind: Kind, namespace: Option<&str>, name: &str) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
            uid: None,
        }
    }

    pub fn pod(namespace: &str, name: &str) -> Self {
        Self::new(Kind::Pod, Some(namespace), name)
    }

    pub fn with_uid(mut self, uid: Uid) -> Self {
        self.uid = Some(uid);
        self
    }

    fn identity(&self) -> (Kind, Option<&str>, &str) {
        (self.kind, self.namespace.as_deref(), &self.name)
    }
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.identity().cmp(&other.identity())
    }
}

/// `Pod default/web`, `Node n1`.
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_kind_namespace_and_name_not_the_uid() {
        let a = ObjectKey::pod("default", "web").with_uid(Uid::from("1"));
        let b = ObjectKey::pod("default", "web").with_uid(Uid::from("2"));
        assert_eq!(a, b);
        assert_ne!(a, ObjectKey::pod("other", "web"));
        assert_ne!(a, ObjectKey::new(Kind::ReplicaSet, Some("default"), "web"));
        assert_eq!(a.to_string(), "Pod default/web");
        assert_eq!(
            ObjectKey::new(Kind::Node, None, "n1").to_string(),
            "Node n1"
        );
        assert!(!Kind::Node.namespaced() && Kind::Secret.namespaced());
    }
}
