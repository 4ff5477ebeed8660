//! YAML from whoever wrote it (a manifest file, an API body), decoded on a budget: a
//! document may hold at most so many nodes *after its aliases are expanded*, in proportion
//! to its size, so a few kilobytes of anchors referenced thousands of times (the "billion
//! laughs", or its quadratic cousin: one large anchor referenced many times) are refused
//! with a reason instead of taking the agent's memory (kube-apiserver's answer to
//! CVE-2019-11253 is the same kind of limit). The budget, the nesting depth and the number
//! of anchors are checked first by a streaming pass over the parser's events
//! (`shape.rs`), which holds nothing but its nesting, so a refused input costs about
//! nothing; only an input that passes is handed to serde_yaml_ng, whose values are counted
//! again as they are built, in case its parser sees more in a text than the other did.

mod shape;

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use shape::ShapeError;

/// Nodes an input may expand to: two per byte of it (a node takes at least two bytes
/// written out, so plain data fits four times over), at least `MIN_BUDGET` and at most
/// `MAX_BUDGET` (about 50 MB of decoded values at worst).
pub(crate) const NODES_PER_BYTE: usize = 2;
pub(crate) const MIN_BUDGET: usize = 10_000;
pub(crate) const MAX_BUDGET: usize = 500_000;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("document {document}: {source}")]
    Yaml {
        document: usize,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error(
        "document {document}: expands to more than {budget} nodes (a {bytes}-byte input may \
         hold {per_byte} per byte, {max} at most): aliases repeat more than a manifest needs"
    )]
    TooLarge {
        document: usize,
        budget: usize,
        bytes: usize,
        per_byte: usize,
        max: usize,
    },
    #[error("document {document}: nested more than {max} levels deep")]
    TooDeep { document: usize, max: usize },
    #[error("document {document}: more than {max} anchors")]
    TooManyAnchors { document: usize, max: usize },
    #[error("document {document}: {message}")]
    Syntax { document: usize, message: String },
}

/// Every non-empty document of `text`, as JSON values, within the budget `text`'s size
/// allows (shared by all its documents).
pub fn yaml_documents(text: &str) -> Result<Vec<Value>, DecodeError> {
    let budget = text
        .len()
        .saturating_mul(NODES_PER_BYTE)
        .clamp(MIN_BUDGET, MAX_BUDGET);
    let too_large = |document| DecodeError::TooLarge {
        document,
        budget,
        bytes: text.len(),
        per_byte: NODES_PER_BYTE,
        max: MAX_BUDGET,
    };
    shape::check(text, budget).map_err(|e| match e {
        ShapeError::TooLarge { document } => too_large(document),
        ShapeError::TooDeep { document } => DecodeError::TooDeep {
            document,
            max: shape::MAX_DEPTH,
        },
        ShapeError::TooManyAnchors { document } => DecodeError::TooManyAnchors {
            document,
            max: shape::MAX_ANCHORS,
        },
        ShapeError::Syntax { document, message } => DecodeError::Syntax { document, message },
    })?;
    let left = Cell::new(budget);
    let mut docs = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let document = i + 1;
        let v = Budgeted(&left).deserialize(doc).map_err(|source| {
            if left.get() == 0 {
                too_large(document)
            } else {
                DecodeError::Yaml { document, source }
            }
        })?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// Builds a JSON value, spending one unit of the budget per node.
struct Budgeted<'a>(&'a Cell<usize>);

impl Budgeted<'_> {
    fn spend<E: de::Error>(&self) -> Result<(), E> {
        match self.0.get() {
            0 => Err(E::custom("the node budget is spent")),
            n => {
                self.0.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budgeted<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budgeted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.spend()?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.spend()?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Budgeted(self.0))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend()?;
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(Budgeted(self.0))? {
            let key = match k {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let v = map.next_value_seed(Budgeted(self.0))?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_decodes_with_its_documents_and_keys_as_strings() {
        let docs = yaml_documents("a: 1\nb: [x, true, 1.5]\n---\n---\n3: c\n").unwrap();
        assert_eq!(docs.len(), 2, "the empty document is skipped");
        assert_eq!(docs[0]["b"][1], Value::Bool(true));
        assert_eq!(docs[1]["3"], "c");
    }

    #[test]
    fn one_anchor_referenced_thousands_of_times_is_refused_quickly() {
        // 1,000 scalars under one anchor, referenced 20,000 times: 20 million nodes from
        // about 65 KB (the 2.7 GB manifest).
        let mut y = String::from("a: &a [");
        y.push_str(&vec!["x"; 1000].join(","));
        y.push_str("]\nb: [");
        y.push_str(&vec!["*a"; 20_000].join(","));
        y.push_str("]\n");
        let t0 = std::time::Instant::now();
        let e = yaml_documents(&y).unwrap_err();
        assert!(
            matches!(e, DecodeError::TooLarge { document: 1, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("aliases"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn the_budget_is_shared_by_a_files_documents_and_a_few_aliases_pass() {
        let doc = "a: &a {x: 1, y: 2}\nb: *a\nc: *a\n";
        assert_eq!(yaml_documents(doc).unwrap()[0]["c"]["y"], 2);
        let mut many = String::new();
        for _ in 0..3 {
            many.push_str("---\nl: [");
            many.push_str(&vec!["1"; 6_000].join(","));
            many.push_str("]\n");
        }
        assert!(yaml_documents(&many).is_ok(), "plain data fits its budget");
        let e = yaml_documents("- not: [closed\n").unwrap_err();
        assert!(matches!(e, DecodeError::Syntax { .. }), "{e}");
    }
}
