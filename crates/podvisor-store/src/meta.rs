//! What the store sets and keeps on every write, as kube-apiserver's registry does: on
//! create the UID, the creation time, a generated name, the first generation and a reset
//! status; on update the fields no client may change, the stored status (or everything but
//! it, for a status write), and a generation bumped by spec changes only.

use bytes::Bytes;
use podvisor_client::{AnyObject, Error};
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};

use crate::kinds;
use crate::object::Resource;

/// The largest object the store keeps, as etcd's default request limit.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// Five characters for a `generateName`, from a fresh UUID's randomness.
fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4().as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// Fills in the namespace from the request path, or refuses a body naming another one.
pub(crate) fn check_namespace(
    res: &Resource,
    o: &mut AnyObject,
    path_ns: Option<&str>,
) -> Result<(), Error> {
    if !res.namespaced() {
        if o.meta().namespace.is_some() {
            o.meta_mut().namespace = None;
        }
        return Ok(());
    }
    let ns = path_ns.unwrap_or("default");
    match o.meta().namespace.as_deref() {
        None | Some("") => {
            o.meta_mut().namespace = Some(ns.to_string());
            Ok(())
        }
        Some(got) if got == ns => Ok(()),
        Some(got) => Err(Error::BadRequest(format!(
            "the namespace of the provided object ({got}) does not match the namespace sent on the request ({ns})"
        ))),
    }
}

/// A write may name the object's UID (the kubelet's status patch does, as a precondition)
/// but not change it: kube-apiserver's answer, Invalid, when it differs.
pub(crate) fn check_uid(res: &Resource, new: &AnyObject, stored: &str) -> Result<(), Error> {
    let uid = new.meta().uid.as_deref().unwrap_or_default();
    if uid.is_empty() || uid == stored {
        return Ok(());
    }
    Err(Error::Invalid {
        kind: res.kind.as_str().to_string(),
        name: new.name().to_string(),
        errors: FieldErrors(vec![FieldError::invalid(
            &FieldPath::new("metadata.uid"),
            uid,
            "field is immutable",
        )]),
    })
}

/// A new object's server-set fields.
pub(crate) fn prepare_create(
    res: &Resource,
    o: &mut AnyObject,
    path_ns: Option<&str>,
) -> Result<(), Error> {
    check_namespace(res, o, path_ns)?;
    let meta = o.meta_mut();
    if meta.name.as_deref().unwrap_or_default().is_empty() {
        let Some(prefix) = meta.generate_name.as_deref().filter(|p| !p.is_empty()) else {
            return Err(Error::Invalid {
                kind: res.kind.as_str().to_string(),
                name: String::new(),
                errors: FieldErrors(vec![FieldError::required(
                    &FieldPath::new("metadata.name"),
                    "name or generateName is required",
                )]),
            });
        };
        meta.name = Some(format!("{prefix}{}", name_suffix()));
    }
    meta.uid = Some(uuid::Uuid::new_v4().to_string());
    meta.creation_timestamp = Some(podvisor_core::time::now());
    meta.deletion_timestamp = None;
    meta.deletion_grace_period_seconds = None;
    meta.resource_version = None;
    meta.generation = res.has_spec.then_some(1);
    kinds::reset_status(o);
    kinds::generate_selector(o);
    kinds::stamp_taints(o, None);
    Ok(())
}

/// The object an update stores: `new` with what a client cannot change taken from `old`;
/// for a status write, `old` with the status of `new`.
pub(crate) fn prepare_update(
    res: &Resource,
    old: &AnyObject,
    mut new: AnyObject,
    status_only: bool,
) -> AnyObject {
    if status_only {
        let mut out = old.clone();
        kinds::copy_status(&mut out, &new);
        return out;
    }
    let (before, meta) = (old.meta().clone(), new.meta_mut());
    meta.uid = before.uid;
    meta.creation_timestamp = before.creation_timestamp;
    meta.deletion_timestamp = before.deletion_timestamp;
    meta.deletion_grace_period_seconds = before.deletion_grace_period_seconds;
    meta.generation = before.generation;
    meta.namespace = before.namespace;
    // An update that leaves managedFields out keeps them, as kube-apiserver does.
    if meta.managed_fields.is_none() {
        meta.managed_fields = before.managed_fields;
    }
    if res.has_status {
        kinds::copy_status(&mut new, old);
    }
    kinds::stamp_taints(&mut new, Some(old));
    if res.has_spec && kinds::spec_differs(old, &new) {
        new.meta_mut().generation = Some(before.generation.unwrap_or(0) + 1);
    }
    new
}

/// The object's final form: its revision set (none for a dry run's create), its JSON made
/// once and its size checked.
/// Readers decode the JSON, so what they see is exactly what it says (times, for one, keep
/// only their seconds there); the typed object returned only names and indexes it.
pub(crate) fn seal(mut o: AnyObject, revision: Option<u64>) -> Result<(AnyObject, Bytes), Error> {
    o.meta_mut().resource_version = revision.map(|r| r.to_string());
    let mut bytes = o
        .to_json()
        .map_err(|e| Error::BadRequest(format!("the object cannot be encoded: {e}")))?;
    if bytes.len() > MAX_OBJECT_BYTES {
        return Err(Error::TooLarge {
            size: bytes.len(),
            limit: MAX_OBJECT_BYTES,
        });
    }
    // The encoder doubles its buffer as it goes: what the store keeps (every version in
    // the change window) would hold a third more than its bytes on average.
    bytes.shrink_to_fit();
    Ok((o, Bytes::from(bytes)))
}
