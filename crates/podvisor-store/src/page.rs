//! Lists in pages: `limit` and the opaque `continue` token.

use std::sync::Arc;

use crate::error::StoreError;
use crate::object::StoredObject;

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    pub items: Vec<Arc<StoredObject>>,
    pub revision: u64,
    /// Set when `limit` cut the list: pass it back to continue after the last item.
    pub continue_token: Option<String>,
}

/// Continue tokens are opaque to clients: the last key, hex-encoded.
pub(crate) fn encode_token(k: &str) -> String {
    k.bytes().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn decode_token(t: &str) -> Result<String, StoreError> {
    let bad = || StoreError::BadRequest(format!("invalid continue token {t:?}"));
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
