//! Patches applied to the stored object inside the write, so a patch never races another
//! write: JSON patch (checked as it grows), merge patch, strategic merge patch.

mod strategic;

pub(crate) use strategic::{apply as strategic_merge, merge_key, merges_as_set};

use podvisor_client::{Error, Patch};
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};
use serde_json::Value;

use crate::meta::MAX_OBJECT_BYTES;

/// JSON patches longer than this are refused (kube-apiserver's limit).
const MAX_JSON_PATCH_OPS: usize = 10_000;

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

/// A JSON patch, one operation at a time: `copy` can double the document at every step, so
/// the size is checked after each one and a patch that grows it past twice the largest
/// object is refused before it can exhaust memory.
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
    let limit = 2 * MAX_OBJECT_BYTES;
    for op in &ops.0 {
        let copies = matches!(op, json_patch::PatchOperation::Copy(_));
        json_patch::patch(target, std::slice::from_ref(op)).map_err(|e| Error::Invalid {
            kind: kind.to_string(),
            name: name.to_string(),
            errors: FieldErrors(vec![FieldError::invalid(
                &FieldPath::new("patch"),
                "",
                &format!("the JSON patch failed: {e}"),
            )]),
        })?;
        let size = if copies {
            serde_json::to_vec(target).map_or(0, |b| b.len())
        } else {
            0
        };
        if size > limit {
            return Err(Error::TooLarge { size, limit });
        }
    }
    Ok(())
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
