//! Request bodies (JSON, YAML, or protobuf for the kinds `proto` reads) and response bodies (objects as stored, lists assembled
//! from stored bytes without re-serialising them).

use actix_web::HttpResponse;
use actix_web::web::Bytes;
use podvisor_client::AnyObject;
use podvisor_store::{Resource, StoredObject};
use serde_json::Value;

use crate::status::ApiError;

pub fn parse(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    if content_type.contains("protobuf") {
        return crate::proto::decode(content_type, body);
    }
    if content_type.contains("cbor") {
        return Err(ApiError::unsupported_media(content_type));
    }
    let v: Value = if content_type.contains("yaml") {
        yaml(body)?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?
    };
    Ok(v)
}

/// The object a request body carries, decoded once as its resource's type; with
/// `strict`, fields the kind does not know are refused.
pub fn object_of(
    req: &actix_web::HttpRequest,
    raw: &[u8],
    res: &Resource,
    strict: bool,
) -> Result<AnyObject, ApiError> {
    let v = parse(&content_type(req), raw)?;
    Ok(podvisor_store::decode::object(res, v, strict)?)
}

/// One YAML document, decoded on a budget (aliases cannot expand a small body into
/// gigabytes: `podvisor_core::decode`).
fn yaml(body: &[u8]) -> Result<Value, ApiError> {
    let bad = |e: &dyn std::fmt::Display| {
        ApiError::bad_request(format!("the body is not valid YAML: {e}"))
    };
    let text = std::str::from_utf8(body).map_err(|e| bad(&e))?;
    let mut docs = podvisor_core::decode::yaml_documents(text).map_err(|e| bad(&e))?;
    match docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(docs.remove(0)),
        n => Err(bad(&format!(
            "{n} documents, where one object was expected"
        ))),
    }
}

pub fn content_type(req: &actix_web::HttpRequest) -> String {
    req.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string()
}

pub fn accept(req: &actix_web::HttpRequest) -> &str {
    req.headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
}

pub fn object(o: &StoredObject, created: bool) -> HttpResponse {
    let mut r = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    r.content_type("application/json").body(o.json.clone())
}

pub fn json(v: &Value) -> HttpResponse {
    HttpResponse::Ok().json(v)
}

/// `{"kind":"PodList",...,"items":[...]}` from the stored objects' bytes.
pub fn list(
    res: &Resource,
    items: &[std::sync::Arc<StoredObject>],
    revision: u64,
    cont: Option<&str>,
) -> Bytes {
    let mut meta = serde_json::json!({"resourceVersion": revision.to_string()});
    if let Some(c) = cont {
        meta["continue"] = c.into();
    }
    let head = format!(
        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
        res.kind.as_str(),
        res.api_version(),
        meta
    );
    let size = head.len() + items.iter().map(|o| o.json.len() + 1).sum::<usize>() + 2;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(head.as_bytes());
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&o.json);
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nine levels of nine aliases: a 1 KiB body that would expand to 9^9 strings.
    fn laughs() -> String {
        let mut y = String::from(
            "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for i in 1..10 {
            let p = format!("*a{}", i - 1);
            let refs = [p.as_str(); 9].join(",");
            y.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        y
    }

    #[test]
    fn a_yaml_alias_bomb_is_refused_not_expanded() {
        let body = laughs();
        assert!(body.len() < 1024);
        let t0 = std::time::Instant::now();
        let r = parse("application/yaml", body.as_bytes());
        assert!(r.is_err(), "expanded instead of refused");
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn one_anchor_referenced_thousands_of_times_is_refused_with_the_reason() {
        let mut y = String::from("a: &a [");
        y.push_str(&vec!["x"; 1000].join(","));
        y.push_str("]\nb: [");
        y.push_str(&vec!["*a"; 20_000].join(","));
        y.push_str("]\n");
        let e = parse("application/yaml", y.as_bytes()).unwrap_err();
        assert!(format!("{e:?}").contains("aliases repeat"), "{e:?}");
    }

    #[test]
    fn deep_nesting_is_refused_in_either_syntax() {
        let deep = "[".repeat(100_000);
        assert!(parse("application/yaml", deep.as_bytes()).is_err());
        assert!(parse("application/json", deep.as_bytes()).is_err());
    }
}
