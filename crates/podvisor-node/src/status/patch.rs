//! The status write as the kubelet's status manager makes it: a two-way strategic merge
//! patch from the stored status to the node's, naming the pod's UID as a precondition.
//! Lists with a merge key (conditions by type, pod and host IPs by address) carry only what
//! changed, `$patch: delete` for what went and `$setElementOrder` for the order; other
//! lists are replaced whole (containerStatuses has no merge strategy); a field that went
//! is sent as null. No resourceVersion: another writer's change between read and write
//! (a controller's condition) is merged, not a conflict.

use k8s_openapi::api::core::v1::PodStatus;
use podvisor_client::merge_keys::merge_key;
use serde_json::{Map, Value, json};

/// The patch that turns `stored` into `ours` on the pod `uid`.
pub(crate) fn status_patch(uid: &str, stored: Option<&PodStatus>, ours: &PodStatus) -> Value {
    let old = serde_json::to_value(stored.cloned().unwrap_or_default()).unwrap_or_default();
    let new = serde_json::to_value(ours).unwrap_or_default();
    let status = match (&old, &new) {
        (Value::Object(o), Value::Object(n)) => Value::Object(diff_map(o, n)),
        _ => new.clone(),
    };
    json!({"metadata": {"uid": uid}, "status": status})
}

/// What changed from `old` to `new`: changed fields, nulls for the removed.
fn diff_map(old: &Map<String, Value>, new: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in new {
        let Some(was) = old.get(k).filter(|was| *was != v) else {
            if !old.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
            continue;
        };
        match (merge_key(k), was, v) {
            (Some(key), Value::Array(o), Value::Array(n)) => diff_list(&mut out, (k, key), o, n),
            (_, Value::Object(o), Value::Object(n)) => {
                out.insert(k.clone(), Value::Object(diff_map(o, n)));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    for k in old.keys().filter(|k| !new.contains_key(*k)) {
        out.insert(k.clone(), Value::Null);
    }
    out
}

/// A merging list's patch into `out`: the changed and new elements (each as its own
/// diff), deletions for the ones gone, and the new order.
fn diff_list(
    out: &mut Map<String, Value>,
    (field, key): (&str, &str),
    old: &[Value],
    new: &[Value],
) {
    let find = |list: &[Value], k: &Value| list.iter().find(|e| e.get(key) == Some(k)).cloned();
    let mut items = Vec::new();
    let mut order = Vec::new();
    for e in new {
        let Some(k) = e.get(key) else { continue };
        order.push(json!({ key: k }));
        match (find(old, k), e) {
            (Some(was), _) if was == *e => {}
            (Some(Value::Object(o)), Value::Object(n)) => {
                let mut d = diff_map(&o, n);
                d.insert(key.to_string(), k.clone());
                items.push(Value::Object(d));
            }
            _ => items.push(e.clone()),
        }
    }
    for e in old {
        let Some(k) = e.get(key) else { continue };
        if find(new, k).is_none() {
            items.push(json!({ key: k, "$patch": "delete" }));
        }
    }
    out.insert(format!("$setElementOrder/{field}"), Value::Array(order));
    out.insert(field.to_string(), Value::Array(items));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(v: Value) -> PodStatus {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_what_changed_goes_with_the_uid() {
        let old = status(json!({"phase": "Pending", "message": "m", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
            {"type": "Initialized", "status": "True"}]}));
        let new = status(json!({"phase": "Running", "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True"}]}));
        let p = status_patch("u1", Some(&old), &new);
        assert_eq!(
            p,
            json!({"metadata": {"uid": "u1"}, "status": {
                "phase": "Running", "message": null,
                "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}],
                "conditions": [{"type": "Ready", "status": "True", "reason": null}]}})
        );
    }

    #[test]
    fn a_condition_or_address_gone_is_deleted_and_other_lists_replaced() {
        let old = status(
            json!({"podIPs": [{"ip": "10.0.0.1"}], "conditions": [{"type": "X", "status": "True"}],
            "containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0}]}),
        );
        let new = status(
            json!({"podIPs": [{"ip": "10.0.0.2"}], "containerStatuses": [
            {"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 1}]}),
        );
        let p = status_patch("u", Some(&old), &new);
        let s = &p["status"];
        assert_eq!(
            s["conditions"],
            Value::Null,
            "no conditions at all: the field goes"
        );
        assert_eq!(
            s["podIPs"],
            json!([{"ip": "10.0.0.2"}, {"ip": "10.0.0.1", "$patch": "delete"}])
        );
        assert_eq!(s["containerStatuses"][0]["restartCount"], 1);
        assert_eq!(s["containerStatuses"][0]["name"], "a", "replaced whole");
    }

    #[test]
    fn nothing_changed_is_an_empty_status() {
        let s = status(json!({"phase": "Running"}));
        assert_eq!(status_patch("u", Some(&s), &s)["status"], json!({}));
    }
}
