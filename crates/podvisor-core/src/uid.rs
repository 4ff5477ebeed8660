//! Object UIDs as types. A UID is cloned into every map and message that names its object,
//! so it is an `Arc<str>`: a clone is a reference count, and a lookup by `&str` works
//! through `Borrow<str>`.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! uid_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            pub fn new(uid: impl AsRef<str>) -> Self {
                Self(Arc::from(uid.as_ref()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        /// Reads as a `&str` wherever one is asked (a lookup, a log field); the other way
        /// round, a `&str` never passes for a UID.
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::new(s)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(Arc::from(s))
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d).map(Self::from)
            }
        }
    };
}

uid_type!(
    /// The UID of any Kubernetes object (`metadata.uid`).
    Uid
);

uid_type!(
    /// The UID of a pod: the key of every per-pod map in the node agent (pod workers,
    /// status cache, status manager, PLEG records). Distinct from [`Uid`] so a pod's key
    /// cannot be confused with another object's.
    PodUid
);

impl From<PodUid> for Uid {
    fn from(p: PodUid) -> Self {
        Self(p.0)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn a_uid_is_looked_up_by_str_and_serializes_as_a_plain_string() {
        let mut m = HashMap::new();
        m.insert(PodUid::from("abc"), 1);
        assert_eq!(m.get("abc"), Some(&1));
        let uid = PodUid::from("abc");
        assert_eq!(serde_json::to_string(&uid).unwrap(), "\"abc\"");
        let back: PodUid = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(back, uid);
        assert_eq!(format!("{uid} {uid:?}"), "abc \"abc\"");
        assert_eq!(Uid::from(uid).as_str(), "abc");
    }
}
