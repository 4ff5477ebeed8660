//! Patches: JSON patch (each operation costed before it runs), merge patch, strategic
//! merge patch (linear in its inputs). Pure functions of the object and the patch; the
//! store's actor runs them off its thread (`patching.rs`).

mod strategic;

pub(crate) use strategic::{apply as strategic_merge, merge_key, merges_as_set};

use podvisor_client::{AnyObject, Error, Patch};
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};
use serde_json::Value;

use crate::meta::MAX_OBJECT_BYTES;
use crate::object::{Resource, StoredObject};

/// JSON patches longer than this are refused (kube-apiserver's limit).
const MAX_JSON_PATCH_OPS: usize = 10_000;

/// `base` with `patch` applied, decoded as its kind (`strict`: fields the kind does not
/// know are refused). Pure: it reads nothing but its arguments, so it can run anywhere.
pub fn patched(
    res: &Resource,
    base: &StoredObject,
    patch: &Patch,
    strict: bool,
) -> Result<AnyObject, Error> {
    patched_doc(res, base, base.value(), patch, strict)
}

/// As [`patched`], from `base` already decoded (`typed`): the patch applies to its JSON
/// value, made by serializing, so the write decodes the object once before the patch and
/// once after it, where it decoded the stored JSON twice (as a value, and typed for the
/// update).
pub fn patched_typed(
    res: &Resource,
    (base, typed): (&StoredObject, &AnyObject),
    patch: &Patch,
    strict: bool,
) -> Result<AnyObject, Error> {
    let doc = typed
        .to_value()
        .map_err(|e| Error::Internal(format!("a stored {} cannot be written: {e}", res.kind)))?;
    patched_doc(res, base, doc, patch, strict)
}

fn patched_doc(
    res: &Resource,
    base: &StoredObject,
    mut doc: Value,
    patch: &Patch,
    strict: bool,
) -> Result<AnyObject, Error> {
    apply(&mut doc, patch, res.kind.as_str(), &base.name)?;
    let patched = crate::decode::object(res, doc, strict)?;
    if patched.name() != base.name || (res.namespaced() && patched.namespace() != base.namespace) {
        return Err(Error::BadRequest(
            "a patch may not change the object's name or namespace".into(),
        ));
    }
    Ok(patched)
}

/// Applies `patch` to `target` (an object of `kind` named `name`, for errors).
pub fn apply(target: &mut Value, patch: &Patch, kind: &str, name: &str) -> Result<(), Error> {
    match patch {
        Patch::Json(ops) => json_patch(target, ops, kind, name),
        Patch::Merge(p) => {
            json_patch::merge(target, p);
            Ok(())
        }
        Patch::Strategic(p) => strategic::apply(target, p),
        Patch::Apply { .. } => Err(Error::BadRequest(
            "an apply patch is the store's to make (Store::apply)".into(),
        )),
    }
}

/// Bytes a JSON patch may copy (`copy` clones its value), all operations together: the
/// document may grow by no more than that.
const MAX_JSON_PATCH_COPIED: usize = 2 * MAX_OBJECT_BYTES;

/// Array elements a JSON patch may shift (an `add` or `remove` inside an array moves the
/// elements after it), all operations together.
const MAX_JSON_PATCH_SHIFTED: usize = 1 << 24;

/// A JSON patch, one operation at a time, each costed before it runs: what `copy` clones
/// and what inserts and removals shift in arrays are counted against budgets, so no patch
/// within the limits costs more than a few passes over the largest object (10,000 copies
/// of a megabyte, or inserts at the head of a long array, were seconds of work each).
/// Values from the body itself (`add`, `replace`, `test`) cost what the body holds.
fn json_patch(
    target: &mut Value,
    ops: &json_patch::Patch,
    kind: &str,
    name: &str,
) -> Result<(), Error> {
    if ops.0.len() > MAX_JSON_PATCH_OPS {
        return Err(Error::BadRequest(format!(
            "the JSON patch has {} operations; the limit is {MAX_JSON_PATCH_OPS}",
            ops.0.len()
        )));
    }
    let (mut copied, mut shifted) = (0usize, 0usize);
    for op in &ops.0 {
        let (c, s) = cost(target, op, MAX_JSON_PATCH_COPIED - copied);
        copied += c;
        shifted += s;
        if copied > MAX_JSON_PATCH_COPIED {
            return Err(Error::TooLarge {
                size: copied,
                limit: MAX_JSON_PATCH_COPIED,
            });
        }
        if shifted > MAX_JSON_PATCH_SHIFTED {
            return Err(Error::BadRequest(format!(
                "the JSON patch shifts more than {MAX_JSON_PATCH_SHIFTED} array elements"
            )));
        }
        json_patch::patch(target, std::slice::from_ref(op)).map_err(|e| Error::Invalid {
            kind: kind.to_string(),
            name: name.to_string(),
            errors: FieldErrors(vec![FieldError::invalid(
                &FieldPath::new("patch"),
                "",
                &format!("the JSON patch failed: {e}"),
            )]),
        })?;
    }
    Ok(())
}

/// What `op` would cost on `doc`: bytes copied (counted up to `room` and a little past),
/// and array elements shifted.
fn cost(doc: &Value, op: &json_patch::PatchOperation, room: usize) -> (usize, usize) {
    use json_patch::PatchOperation as Op;
    match op {
        Op::Copy(c) => (
            doc.pointer(c.from.as_str()).map_or(0, |v| weight(v, room)),
            shift(doc, c.path.as_str()),
        ),
        Op::Move(m) => (0, shift(doc, m.from.as_str()) + shift(doc, m.path.as_str())),
        Op::Add(a) => (0, shift(doc, a.path.as_str())),
        Op::Remove(r) => (0, shift(doc, r.path.as_str())),
        Op::Replace(_) | Op::Test(_) => (0, 0),
    }
}

/// How many elements an insert or removal at `path` may shift: the length of the array
/// it is in (none outside an array).
fn shift(doc: &Value, path: &str) -> usize {
    let parent = path.rfind('/').map_or("", |i| &path[..i]);
    match doc.pointer(parent) {
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

/// About the size of `patch` as JSON, counted no further than a little past `room`.
pub(crate) fn weight_of(patch: &Patch, room: usize) -> usize {
    use json_patch::PatchOperation as Op;
    match patch {
        Patch::Merge(v) | Patch::Strategic(v) => weight(v, room),
        Patch::Apply { config, .. } => weight(config, room),
        Patch::Json(ops) => {
            let mut w = 0;
            for op in &ops.0 {
                w += 64
                    + match op {
                        Op::Add(a) => weight(&a.value, room),
                        Op::Replace(r) => weight(&r.value, room),
                        Op::Test(t) => weight(&t.value, room),
                        Op::Remove(_) | Op::Move(_) | Op::Copy(_) => 0,
                    };
                if w > room {
                    break;
                }
            }
            w
        }
    }
}

/// About the size of `v` as JSON, counted no further than a little past `room`.
fn weight(v: &Value, room: usize) -> usize {
    let mut stack = vec![v];
    let mut w = 0;
    while let Some(v) = stack.pop() {
        w += match v {
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                stack.extend(a);
                2
            }
            Value::Object(m) => {
                for (k, x) in m {
                    w += k.len() + 4;
                    stack.push(x);
                }
                2
            }
            _ => 8,
        };
        if w > room {
            break;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ops(v: Value) -> Patch {
        Patch::Json(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn a_json_patch_that_doubles_the_object_is_refused_before_memory_runs_out() {
        let mut target = json!({"a": "x".repeat(1000)});
        let copies: Vec<Value> = (0..40)
            .map(|i| json!({"op": "copy", "from": "", "path": format!("/a{i}")}))
            .collect();
        let e = apply(&mut target, &ops(Value::Array(copies)), "ConfigMap", "c").unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let mut fresh = json!({"a": "x"});
        let one = ops(json!([{"op": "copy", "from": "/a", "path": "/b"}]));
        apply(&mut fresh, &one, "ConfigMap", "c").unwrap();
        assert_eq!(fresh["b"], "x");
        let failing = ops(json!([{"op": "test", "path": "/a", "value": "y"}]));
        let e = apply(&mut fresh, &failing, "ConfigMap", "c").unwrap_err();
        assert!(matches!(e, Error::Invalid { .. }), "{e}");
    }
}
