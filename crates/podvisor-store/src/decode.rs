//! An object's one typed decode, from what a client sent (a request body, a patched
//! object): its type fields checked against the resource, and the fields its kind does not
//! know collected on the way, so `fieldValidation=Strict` (what kubectl sends) refuses
//! them as kube-apiserver does; otherwise they are dropped.

use podvisor_client::{AnyObject, Error};
use serde_json::Value;

use crate::object::Resource;

/// Unknown fields named in a strict refusal, at most.
const MAX_NAMED: usize = 20;

/// Removes empty type fields (the resource sets them) and refuses a body of another kind.
fn check_type(res: &Resource, v: &mut Value) -> Result<(), Error> {
    let want = (res.api_version(), res.kind.as_str());
    let obj = v
        .as_object_mut()
        .ok_or_else(|| Error::BadRequest("the body is not a JSON object".into()))?;
    for (field, want) in [("apiVersion", want.0.as_str()), ("kind", want.1)] {
        match obj.get(field) {
            None => {}
            Some(Value::String(got)) if got == want => {}
            Some(Value::String(got)) if got.is_empty() => {
                obj.remove(field);
            }
            Some(Value::Null) => {
                obj.remove(field);
            }
            Some(got) => {
                return Err(Error::BadRequest(format!(
                    "{field} {got} does not match the resource ({want})"
                )));
            }
        }
    }
    Ok(())
}

/// Decodes `v` as an object of `res`; with `strict`, unknown fields are refused.
pub fn object(res: &Resource, mut v: Value, strict: bool) -> Result<AnyObject, Error> {
    check_type(res, &mut v)?;
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| {
        if unknown.len() < MAX_NAMED {
            unknown.push(podvisor_client::unknown::field_path(&path));
        }
    };
    let de = serde_ignored::Deserializer::new(v, &mut note);
    let o = AnyObject::decode(res.kind, de).map_err(|e| {
        Error::BadRequest(format!("the {} could not be decoded: {e}", res.singular))
    })?;
    if strict && !unknown.is_empty() {
        let list: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        return Err(Error::BadRequest(format!(
            "strict decoding error: {}",
            list.join(", ")
        )));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use podvisor_core::Kind;
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_fields_are_named_when_strict_and_dropped_otherwise() {
        let res = Resource::of(Kind::Pod);
        let body = json!({"apiVersion": "", "metadata": {"name": "p", "bogus": 1},
            "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolice": "x"}]}});
        let e = object(&res, body.clone(), true).unwrap_err().to_string();
        assert!(e.contains("\"metadata.bogus\""), "{e}");
        assert!(e.contains("\"spec.containers[0].imagePullPolice\""), "{e}");
        let o = object(&res, body, false).unwrap();
        assert_eq!(o.name(), "p");
        let wrong = object(&res, json!({"kind": "Node"}), false).unwrap_err();
        assert!(
            wrong.to_string().contains("does not match the resource"),
            "{wrong}"
        );
    }
}
