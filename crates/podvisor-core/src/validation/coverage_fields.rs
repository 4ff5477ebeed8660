//! The fields of a k8s-openapi type, as its `Deserialize` impl names them: a deserializer
//! that records the field list `deserialize_struct` is given, then stops.

use serde::de::{self, Deserialize, Deserializer, Visitor};

#[derive(Debug)]
struct Found(Vec<&'static str>);

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fields found")
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Found(Vec::new())
    }
}

struct Capture;

impl<'de> Deserializer<'de> for Capture {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(Found(Vec::new()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Found> {
        Err(Found(fields.to_vec()))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// Every field name of `T`, in its serialized form.
pub(super) fn fields<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    match T::deserialize(Capture) {
        Err(Found(f)) => f,
        Ok(_) => Vec::new(),
    }
}
