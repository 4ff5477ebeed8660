//! The objects podvisor reads and writes: each a k8s-openapi type, shared as `Arc<K>` once
//! decoded, and [`AnyObject`], the same objects with their kind erased, which is what a
//! [`crate::Backend`] carries (one object-safe interface for every kind).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podvisor_core::Kind;
use serde::Deserialize;

/// A Kubernetes object of a kind podvisor knows.
pub trait Object:
    k8s_openapi::Resource
    + k8s_openapi::Metadata<Ty = ObjectMeta>
    + Clone
    + PartialEq
    + std::fmt::Debug
    + serde::Serialize
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
    const TYPE: Kind;

    fn into_any(this: Arc<Self>) -> AnyObject;

    /// The object, when `any` is one of this kind; else `any` back.
    fn from_any(any: AnyObject) -> Result<Arc<Self>, AnyObject>;
}

macro_rules! objects {
    ($($kind:ident => $ty:ty, $singular:literal, [$($short:literal),*], $status:literal, $spec:literal;)*) => {
        /// One object of any kind podvisor knows, shared.
        #[derive(Debug, Clone, PartialEq)]
        pub enum AnyObject {
            $($kind(Arc<$ty>)),*
        }

        $(impl Object for $ty {
            const TYPE: Kind = Kind::$kind;

            fn into_any(this: Arc<Self>) -> AnyObject {
                AnyObject::$kind(this)
            }

            fn from_any(any: AnyObject) -> Result<Arc<Self>, AnyObject> {
                match any {
                    AnyObject::$kind(o) => Ok(o),
                    other => Err(other),
                }
            }
        })*

        impl AnyObject {
            pub fn kind(&self) -> Kind {
                match self {
                    $(AnyObject::$kind(_) => Kind::$kind),*
                }
            }

            pub fn meta(&self) -> &ObjectMeta {
                use k8s_openapi::Metadata;
                match self {
                    $(AnyObject::$kind(o) => o.metadata()),*
                }
            }

            /// The metadata to change: the object is copied first if it is shared.
            pub fn meta_mut(&mut self) -> &mut ObjectMeta {
                use k8s_openapi::Metadata;
                match self {
                    $(AnyObject::$kind(o) => Arc::make_mut(o).metadata_mut()),*
                }
            }

            /// The object as JSON, with its `apiVersion` and `kind`.
            pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
                match self {
                    $(AnyObject::$kind(o) => serde_json::to_vec(o.as_ref())),*
                }
            }

            /// The object as a JSON value, with its `apiVersion` and `kind`.
            pub fn to_value(&self) -> serde_json::Result<serde_json::Value> {
                match self {
                    $(AnyObject::$kind(o) => serde_json::to_value(o.as_ref())),*
                }
            }

            /// Decodes one object of `kind` from any serde input (JSON bytes, a JSON value,
            /// a deserializer that records ignored fields).
            pub fn decode<'de, D: serde::Deserializer<'de>>(
                kind: Kind,
                d: D,
            ) -> Result<Self, D::Error> {
                count_decode();
                match kind {
                    $(Kind::$kind => <$ty>::deserialize(d).map(|o| AnyObject::$kind(Arc::new(o)))),*
                }
            }
        }
    };
}

podvisor_core::for_each_kind!(objects);

thread_local! {
    static DECODES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many objects this thread has decoded: typed ([`AnyObject::decode`]), or as JSON
/// values where a backend counts them. What tests count a write's decodes with.
pub fn decodes_on_this_thread() -> u64 {
    DECODES.with(std::cell::Cell::get)
}

/// Counts one decode on this thread ([`decodes_on_this_thread`]).
pub fn count_decode() {
    DECODES.with(|d| d.set(d.get() + 1));
}

impl AnyObject {
    pub fn new<K: Object>(o: K) -> Self {
        K::into_any(Arc::new(o))
    }

    pub fn from_json(kind: Kind, bytes: &[u8]) -> serde_json::Result<Self> {
        Self::decode(kind, &mut serde_json::Deserializer::from_slice(bytes))
    }

    pub fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or_default()
    }

    /// "" for cluster-scoped kinds.
    pub fn namespace(&self) -> &str {
        self.meta().namespace.as_deref().unwrap_or_default()
    }

    pub fn uid(&self) -> &str {
        self.meta().uid.as_deref().unwrap_or_default()
    }

    pub fn resource_version(&self) -> &str {
        self.meta().resource_version.as_deref().unwrap_or_default()
    }

    /// The object as `K`, or an error naming both kinds (a backend that answered another
    /// kind than asked for).
    pub fn into_typed<K: Object>(self) -> crate::Result<Arc<K>> {
        K::from_any(self).map_err(|other| {
            crate::Error::Internal(format!(
                "the API answered a {} where a {} was asked for",
                other.kind(),
                K::TYPE
            ))
        })
    }
}

/// The accessors every consumer writes again otherwise.
pub trait ObjectExt {
    fn name_str(&self) -> &str;
    fn namespace_str(&self) -> &str;
    fn uid_str(&self) -> &str;
}

impl<K: Object> ObjectExt for K {
    fn name_str(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or_default()
    }

    fn namespace_str(&self) -> &str {
        self.metadata().namespace.as_deref().unwrap_or_default()
    }

    fn uid_str(&self) -> &str {
        self.metadata().uid.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    use super::*;

    #[test]
    fn an_object_keeps_its_kind_through_erasure_and_json() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        let any = AnyObject::new(cm.clone());
        assert_eq!(any.kind(), Kind::ConfigMap);
        let back = AnyObject::from_json(Kind::ConfigMap, &any.to_json().unwrap()).unwrap();
        assert_eq!(back, any);
        assert_eq!(*back.clone().into_typed::<ConfigMap>().unwrap(), cm);
        let e = back.into_typed::<Pod>().unwrap_err();
        assert!(e.to_string().contains("ConfigMap where a Pod"), "{e}");
        assert!(AnyObject::from_json(Kind::Pod, br#"{"kind":"Node"}"#).is_err());
    }
}
