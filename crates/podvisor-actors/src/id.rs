//! Actor identities: `kind` alone for singletons (`sync-loop`), `kind/key` for actors there
//! are many of (`pod-worker/<pod uid>`).

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActorId(Arc<str>);

impl Serialize for ActorId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl ActorId {
    pub fn new(kind: &str, key: Option<&str>) -> Self {
        match key {
            Some(key) => Self(format!("{kind}/{key}").into()),
            None => Self(kind.into()),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ActorId {
    fn from(s: &str) -> Self {
        Self(s.into())
    }
}
