//! Strategic merge patch (what `kubectl apply` and `kubectl patch` send for built-in
//! kinds), for the kinds podvisor serves: maps merge key by key, `null` deletes, lists of
//! objects with a merge key (containers by `name`, ports by `containerPort`, ...) merge
//! element by element, `finalizers` merge as a set, other lists are replaced. The
//! directives `$patch` (replace, delete, merge), `$setElementOrder/<list>`,
//! `$deleteFromPrimitiveList/<list>` and `$retainKeys` are honoured.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use podvisor_client::Error;

pub(crate) use podvisor_client::merge_keys::{merge_key, merges_as_set};

/// Applies `patch` to `target`.
pub(crate) fn apply(target: &mut Value, patch: &Value) -> Result<(), Error> {
    let patch = patch
        .as_object()
        .ok_or_else(|| Error::BadRequest("a strategic merge patch must be a JSON object".into()))?;
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        merge_map(t, patch)?;
    }
    Ok(())
}

fn directive(m: &Map<String, Value>) -> Option<&str> {
    m.get("$patch").and_then(Value::as_str)
}

fn without_directives(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), strip(v)))
        .collect()
}

/// A value from a patch, as stored: directives removed at every depth.
fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(without_directives(m)),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

/// A value's identity for set and key lookups: its JSON text (keys and set members are
/// scalars, so this is short).
fn ident(v: &Value) -> String {
    v.to_string()
}

fn merge_map(t: &mut Map<String, Value>, p: &Map<String, Value>) -> Result<(), Error> {
    match directive(p) {
        Some("replace") => {
            *t = without_directives(p);
            return Ok(());
        }
        Some("delete") => {
            t.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "unknown patch directive {other:?}"
            )));
        }
    }
    for (k, pv) in p {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(gone)) = (t.get_mut(field), pv.as_array()) {
                let gone: HashSet<String> = gone.iter().map(ident).collect();
                list.retain(|v| !gone.contains(&ident(v)));
            }
        } else if k.starts_with('$') {
            continue;
        } else if pv.is_null() {
            t.remove(k);
        } else {
            merge_field(t, k, pv)?;
        }
    }
    for (k, order) in p {
        if let Some(field) = k.strip_prefix("$setElementOrder/")
            && let (Some(Value::Array(list)), Some(order)) = (t.get_mut(field), order.as_array())
        {
            reorder(list, order, merge_key(field));
        }
    }
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        let keep: HashSet<&str> = keep.iter().filter_map(Value::as_str).collect();
        t.retain(|k, _| keep.contains(k.as_str()));
    }
    Ok(())
}

fn merge_field(t: &mut Map<String, Value>, k: &str, pv: &Value) -> Result<(), Error> {
    match (t.get_mut(k), pv) {
        (Some(Value::Object(tm)), Value::Object(pm)) => {
            if directive(pm) == Some("delete") {
                t.remove(k);
                return Ok(());
            }
            merge_map(tm, pm)
        }
        (Some(Value::Array(tl)), Value::Array(pl)) => {
            match merge_key(k) {
                Some(key) if pl.iter().all(Value::is_object) => merge_list(tl, pl, key)?,
                _ if merges_as_set(k) => {
                    let mut have: HashSet<String> = tl.iter().map(ident).collect();
                    for v in pl {
                        if have.insert(ident(v)) {
                            tl.push(v.clone());
                        }
                    }
                }
                _ => *tl = pl.iter().map(strip).collect(),
            }
            Ok(())
        }
        _ => {
            t.insert(k.to_string(), strip(pv));
            Ok(())
        }
    }
}

/// Merges patch elements into a list by their `key`: each found through an index of the
/// list (one pass each, however long both are), deletions removed in one pass at the end.
fn merge_list(t: &mut Vec<Value>, p: &[Value], key: &str) -> Result<(), Error> {
    if p.iter()
        .any(|e| e.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *t = p
            .iter()
            .filter(|e| e.get("$patch").is_none())
            .map(strip)
            .collect();
        return Ok(());
    }
    let mut at: HashMap<String, usize> = HashMap::with_capacity(t.len());
    for (i, e) in t.iter().enumerate() {
        if let Some(id) = e.get(key) {
            at.entry(ident(id)).or_insert(i);
        }
    }
    let mut deleted = HashSet::new();
    for pe in p {
        let Value::Object(pm) = pe else { continue };
        let id = pm.get(key).map(ident);
        let found = id.as_ref().and_then(|id| at.get(id).copied());
        match (directive(pm), found) {
            (Some("delete"), Some(i)) => {
                deleted.insert(i);
                // A later element with this key is a new one.
                if let Some(id) = &id {
                    at.remove(id);
                }
            }
            (Some("delete"), None) => {}
            (_, Some(i)) => {
                if let Value::Object(tm) = &mut t[i] {
                    merge_map(tm, pm)?;
                }
            }
            (_, None) => {
                if let Some(id) = id {
                    at.insert(id, t.len());
                }
                t.push(Value::Object(without_directives(pm)));
            }
        }
    }
    if !deleted.is_empty() {
        let mut i = 0;
        t.retain(|_| {
            i += 1;
            !deleted.contains(&(i - 1))
        });
    }
    Ok(())
}

/// Puts the elements `order` names first, in its order; the others keep theirs after.
fn reorder(list: &mut [Value], order: &[Value], key: Option<&str>) {
    let id = |v: &Value| match key {
        Some(k) => v.get(k).map(ident),
        None => Some(ident(v)),
    };
    let mut wanted: HashMap<String, usize> = HashMap::with_capacity(order.len());
    for (i, o) in order.iter().enumerate() {
        if let Some(w) = id(o) {
            wanted.entry(w).or_insert(i);
        }
    }
    list.sort_by_cached_key(|v| {
        id(v)
            .and_then(|i| wanted.get(&i).copied())
            .unwrap_or(usize::MAX)
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn patched(mut t: serde_json::Value, p: serde_json::Value) -> serde_json::Value {
        super::apply(&mut t, &p).unwrap();
        t
    }

    #[test]
    fn containers_merge_by_name_and_nulls_delete() {
        let pod = json!({"metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"containers": [
                {"name": "web", "image": "v1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "side", "image": "s1"}]}});
        let out = patched(
            pod,
            json!({"metadata": {"labels": {"b": null, "c": "3"}},
            "spec": {"containers": [{"name": "web", "image": "v2",
                "env": [{"name": "Y", "$patch": "delete"}, {"name": "Z", "value": "3"}]}]}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"a": "1", "c": "3"}));
        let web = &out["spec"]["containers"][0];
        assert_eq!(web["image"], "v2");
        assert_eq!(
            web["env"],
            json!([{"name": "X", "value": "1"}, {"name": "Z", "value": "3"}])
        );
        assert_eq!(
            out["spec"]["containers"][1]["image"], "s1",
            "the other container stays"
        );
    }

    #[test]
    fn kubectl_directives_order_replace_and_retain() {
        let t = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}],
            "tolerations": [{"key": "x"}], "volumes": [{"name": "v", "emptyDir": {}}]},
            "metadata": {"finalizers": ["f1"]}});
        let out = patched(
            t,
            json!({
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "b", "image": "i"}],
                "tolerations": [{"key": "y"}],
                "volumes": [{"name": "v", "hostPath": {"path": "/x"}, "$retainKeys": ["name", "hostPath"]}]},
            "metadata": {"finalizers": ["f2"], "$deleteFromPrimitiveList/finalizers": ["f1"]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "b", "image": "i"}, {"name": "a"}])
        );
        assert_eq!(
            out["spec"]["tolerations"],
            json!([{"key": "y"}]),
            "no merge key: replaced"
        );
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "v", "hostPath": {"path": "/x"}}])
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["f2"]));
    }

    #[test]
    fn a_replace_directive_replaces_the_list() {
        let t = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let out = patched(
            t,
            json!({"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name": "c"}]));
        assert!(super::apply(&mut json!({}), &json!([1])).is_err());
    }
}
