//! Lists in pages: `limit` and the opaque `continue` token.

use std::sync::Arc;

use crate::object::StoredObject;
use podvisor_client::Error;

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    pub items: Vec<Arc<StoredObject>>,
    pub revision: u64,
    /// Set when `limit` cut the list: pass it back to continue after the last item.
    pub continue_token: Option<String>,
}

/// Continue tokens are opaque to clients: the first page's revision and the last key,
/// hex-encoded. Every page of one list reports the first page's revision: the store keeps no
/// old versions to serve a snapshot from, so a client that watches from that revision
/// afterwards (as client-go's informers do) gets every change made while it paged, and ends
/// up with the same view a snapshot would have given.
pub(crate) fn encode_token(revision: u64, k: &str) -> String {
    format!("{revision}/{k}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The revision and the last key a continue token carries.
pub(crate) fn decode_token(t: &str) -> Result<(u64, String), Error> {
    let bad = || Error::BadRequest(format!("invalid continue token {t:?}"));
    let text = decode_hex(t)?;
    let (rev, key) = text.split_once('/').ok_or_else(bad)?;
    Ok((rev.parse().map_err(|_| bad())?, key.to_string()))
}

fn decode_hex(t: &str) -> Result<String, Error> {
    let bad = || Error::BadRequest(format!("invalid continue token {t:?}"));
    if !t.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes: Vec<u8> = (0..t.len())
        .step_by(2)
        .map(|i| t.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    String::from_utf8(bytes).map_err(|_| bad())
}
