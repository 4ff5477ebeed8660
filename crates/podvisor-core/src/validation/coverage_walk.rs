//! Walks a k8s-openapi type's nested types through its `Deserialize` impl: a deserializer
//! fed a path of field names descends through each (looking through `Option`, lists and
//! maps) and reports the struct found at its end, with its name and fields, or that the
//! path ends at a plain value. So every type nested in a pod's spec is found from the
//! code itself, and a type or field a new Kubernetes adds shows up on an upgrade.

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};

/// What a path ends at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    Struct(&'static str, Vec<&'static str>),
    Leaf,
}

#[derive(Debug)]
struct Found(Shape);

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Found(Shape::Leaf)
    }
}

/// Descends along `path`; at its end, reports what it finds.
#[derive(Clone)]
struct Probe<'p> {
    path: &'p [&'static str],
}

/// A map of one entry: the next field of the path, its value probed further.
struct OneField<'p> {
    probe: Probe<'p>,
    key: Option<&'static str>,
}

impl<'de, 'p> de::MapAccess<'de> for OneField<'p> {
    type Error = Found;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Found> {
        match self.key.take() {
            Some(k) => {
                let d: StrDeserializer<'_, Found> = k.into_deserializer();
                seed.deserialize(d).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Found> {
        seed.deserialize(self.probe.clone())
    }
}

/// A list of one element, or a map of one entry (`"k"`), whose value is probed.
struct One<'p> {
    probe: Probe<'p>,
    key: bool,
}

impl<'de, 'p> de::SeqAccess<'de> for One<'p> {
    type Error = Found;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Found> {
        seed.deserialize(self.probe.clone()).map(Some)
    }
}

impl<'de, 'p> de::MapAccess<'de> for One<'p> {
    type Error = Found;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Found> {
        if std::mem::take(&mut self.key) {
            let d: StrDeserializer<'_, Found> = "k".into_deserializer();
            return seed.deserialize(d).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Found> {
        seed.deserialize(self.probe.clone())
    }
}

impl<'de, 'p> Deserializer<'de> for Probe<'p> {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(Found(Shape::Leaf))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Found> {
        match self.path.split_first() {
            None => Err(Found(Shape::Struct(name, fields.to_vec()))),
            Some((first, rest)) => visitor.visit_map(OneField {
                probe: Probe { path: rest },
                key: Some(first),
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Found> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_seq(One {
            probe: self,
            key: false,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Found> {
        visitor.visit_map(One {
            probe: self,
            key: true,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct tuple tuple_struct enum identifier ignored_any
    }
}

/// What the value at `path` in a `T` is.
pub(super) fn shape<T: DeserializeOwned>(path: &[&'static str]) -> Shape {
    match T::deserialize(Probe { path }) {
        Err(Found(s)) => s,
        Ok(_) => Shape::Leaf,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodSpec;

    use super::*;

    #[test]
    fn paths_reach_nested_types_through_lists_options_and_maps() {
        let Shape::Struct(name, fields) = shape::<PodSpec>(&[]) else {
            panic!("PodSpec is a struct")
        };
        assert_eq!(name, "PodSpec");
        assert!(fields.contains(&"containers"));
        let port = shape::<PodSpec>(&["containers", "ports"]);
        assert!(
            matches!(&port, Shape::Struct("ContainerPort", f) if f.contains(&"hostPort")),
            "{port:?}"
        );
        assert!(
            matches!(shape::<PodSpec>(&["overhead"]), Shape::Leaf),
            "a map of quantities"
        );
        assert!(matches!(shape::<PodSpec>(&["hostname"]), Shape::Leaf));
        assert!(matches!(
            shape::<PodSpec>(&[
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]),
            Shape::Struct("NodeSelector", _)
        ));
    }
}
