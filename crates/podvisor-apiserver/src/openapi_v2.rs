//! OpenAPI v2 in protobuf (gnostic's `openapi_v2.Document`), which kubectl downloads to
//! validate a kind it cannot hand to the server (one without PATCH: TokenReview) and for
//! `kubectl explain --output plaintext-openapiv2`. The JSON document's definitions are
//! carried over field by field: `$ref`, type, description, format, required, items,
//! properties, additionalProperties, allOf, and the `x-` extensions (their value as YAML
//! text, which JSON is).

use prost::Message;
use serde_json::Value;

#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    definitions: Option<Named>,
}

#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
}

#[derive(Clone, PartialEq, Message)]
struct Paths {}

/// `Definitions` and `Properties`: named schemas.
#[derive(Clone, PartialEq, Message)]
struct Named {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedSchema {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct Schema {
    #[prost(string, tag = "1")]
    reference: String,
    #[prost(string, tag = "2")]
    format: String,
    #[prost(string, tag = "4")]
    description: String,
    #[prost(string, repeated, tag = "19")]
    required: Vec<String>,
    #[prost(message, optional, tag = "21")]
    additional_properties: Option<AdditionalProperties>,
    #[prost(message, optional, tag = "22")]
    type_: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    items: Option<Items>,
    #[prost(message, repeated, tag = "24")]
    all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    properties: Option<Named>,
    #[prost(message, repeated, tag = "31")]
    vendor_extension: Vec<NamedAny>,
}

/// A oneof on the wire: a schema, or a boolean.
#[derive(Clone, PartialEq, Message)]
struct AdditionalProperties {
    #[prost(message, optional, boxed, tag = "1")]
    schema: Option<Box<Schema>>,
    #[prost(bool, optional, tag = "2")]
    boolean: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Items {
    #[prost(message, repeated, tag = "1")]
    schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedAny {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, Message)]
struct AnyValue {
    #[prost(string, tag = "2")]
    yaml: String,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn named(m: Option<&serde_json::Map<String, Value>>, depth: usize) -> Option<Named> {
    let m = m?;
    let additional_properties = m
        .iter()
        .map(|(name, s)| NamedSchema {
            name: name.clone(),
            value: Some(schema(s, depth + 1)),
        })
        .collect();
    Some(Named {
        additional_properties,
    })
}

fn schema(v: &Value, depth: usize) -> Schema {
    if depth > 64 {
        return Schema::default();
    }
    let types = match &v["type"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(a) => a.iter().map(text).collect(),
        _ => Vec::new(),
    };
    let additional_properties = match &v["additionalProperties"] {
        Value::Bool(b) => Some(AdditionalProperties {
            schema: None,
            boolean: Some(*b),
        }),
        s @ Value::Object(_) => Some(AdditionalProperties {
            schema: Some(Box::new(schema(s, depth + 1))),
            boolean: None,
        }),
        _ => None,
    };
    let vendor_extension = v
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, x)| NamedAny {
            name: k.clone(),
            value: Some(AnyValue {
                yaml: x.to_string(),
            }),
        })
        .collect();
    Schema {
        reference: text(&v["$ref"]),
        format: text(&v["format"]),
        description: text(&v["description"]),
        required: v["required"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect(),
        additional_properties,
        type_: (!types.is_empty()).then_some(TypeItem { value: types }),
        items: v["items"].is_object().then(|| Items {
            schema: vec![schema(&v["items"], depth + 1)],
        }),
        all_of: v["allOf"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| schema(s, depth + 1))
            .collect(),
        properties: named(v["properties"].as_object(), depth),
        vendor_extension,
    }
}

/// The protobuf form of the JSON v2 document `doc`.
pub(crate) fn encode(doc: &Value) -> Vec<u8> {
    Document {
        swagger: "2.0".into(),
        info: Some(Info {
            title: text(&doc["info"]["title"]),
            version: text(&doc["info"]["version"]),
        }),
        paths: Some(Paths {}),
        definitions: named(doc["definitions"].as_object(), 0),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_carry_their_types_references_and_extensions() {
        let doc = json!({"info": {"title": "t", "version": "1"}, "definitions": {"io.k8s.X": {
            "type": "object", "description": "an x", "required": ["a"],
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "X", "version": "v1"}],
            "properties": {"a": {"allOf": [{"$ref": "#/definitions/io.k8s.Y"}]},
                "m": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
        let d = Document::decode(encode(&doc).as_slice()).unwrap();
        let x = d.definitions.unwrap().additional_properties.remove(0);
        assert_eq!(x.name, "io.k8s.X");
        let s = x.value.unwrap();
        assert_eq!(
            (s.description.as_str(), s.required.clone()),
            ("an x", vec!["a".to_string()])
        );
        assert_eq!(
            s.vendor_extension[0].name,
            "x-kubernetes-group-version-kind"
        );
        let props = s.properties.unwrap().additional_properties;
        assert_eq!(
            props[0].value.as_ref().unwrap().all_of[0].reference,
            "#/definitions/io.k8s.Y"
        );
        let map = props[1]
            .value
            .as_ref()
            .unwrap()
            .additional_properties
            .as_ref()
            .unwrap();
        assert_eq!(
            map.schema.as_ref().unwrap().type_.as_ref().unwrap().value,
            ["string"]
        );
    }
}
