//! What every object goes through before it is stored, whoever writes it (kubectl through
//! the API, a controller, the node's own actors): parsed as its k8s-openapi type (wrong
//! types refused, unknown fields dropped), defaulted (`defaults`), a pod bound to this node,
//! and validated. Pods use the same `validate_pod` as the manifest directory: one
//! validation path for both. [`ObjectAdmission`] runs inside the store's writes (the first
//! of its admission checks, before node fit); `fieldValidation=Strict`, which is about the
//! request, is checked by the API before ([`strict`]).

use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod};
use podvisor_core::Kind;
use podvisor_core::pod::MIRROR_ANNOTATION;
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath, names, validate_pod};
use podvisor_store::{Admission, Resource, Store, StoreError, StoredObject};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::defaults;
use crate::status::ApiError;

/// What admission needs to know of the node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Pods created without `spec.nodeName` are bound here.
    pub node_name: String,
}

/// Fields of `input` that its typed form dropped: unknown to the kind.
fn unknown_fields(input: &Value, typed: &Value, path: &str, out: &mut Vec<String>) {
    match (input, typed) {
        (Value::Object(i), Value::Object(t)) => {
            for (k, v) in i {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match t.get(k) {
                    None if !v.is_null() => out.push(p),
                    Some(tv) => unknown_fields(v, tv, &p, out),
                    None => {}
                }
            }
        }
        (Value::Array(i), Value::Array(t)) => {
            for (n, (iv, tv)) in i.iter().zip(t).enumerate() {
                unknown_fields(iv, tv, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

/// `fieldValidation=Strict` (what kubectl sends): unknown fields are refused, as
/// kube-apiserver does; otherwise admission drops them.
pub fn strict(res: &Resource, input: &Value) -> Result<(), ApiError> {
    let mut typed_form = input.clone();
    admit_typed(res, &mut typed_form, "", None)?;
    let mut unknown = Vec::new();
    unknown_fields(input, &typed_form, "", &mut unknown);
    match unknown.as_slice() {
        [] => Ok(()),
        fields => {
            let list: Vec<String> = fields
                .iter()
                .map(|f| format!("unknown field {f:?}"))
                .collect();
            Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                list.join(", ")
            )))
        }
    }
}

/// Parses `v` as its kind's type, fills in the defaults, and answers both forms.
fn typed<T: DeserializeOwned + Serialize>(
    res: &Resource,
    v: &Value,
    defaults: impl FnOnce(&mut T),
) -> Result<(T, Value), StoreError> {
    let mut t: T = serde_json::from_value(v.clone()).map_err(|e| {
        StoreError::BadRequest(format!("the {} could not be decoded: {e}", res.singular))
    })?;
    defaults(&mut t);
    let back = serde_json::to_value(&t).map_err(|e| StoreError::BadRequest(e.to_string()))?;
    Ok((t, back))
}

fn invalid(res: &Resource, name: &str, errors: FieldErrors) -> StoreError {
    StoreError::Invalid {
        kind: res.kind.as_str(),
        name: name.to_string(),
        errors,
    }
}

fn name_of(v: &Value) -> String {
    let meta = &v["metadata"];
    match meta["name"].as_str().filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        // Checked as the name it will get.
        None => format!("{}xxxxx", meta["generateName"].as_str().unwrap_or_default()),
    }
}

fn check_name(res: &Resource, v: &Value) -> Result<(), StoreError> {
    let name = name_of(v);
    let path = FieldPath::new("metadata").child("name");
    let err = if name.is_empty() {
        Some(FieldError::required(
            &path,
            "name or generateName is required",
        ))
    } else if res.kind == Kind::Namespace {
        names::label(&path, &name)
    } else {
        names::subdomain(&path, &name)
    };
    match err {
        Some(e) => Err(invalid(res, &name, FieldErrors(vec![e]))),
        None => Ok(()),
    }
}

fn check_pod(
    res: &Resource,
    v: &mut Value,
    node: &str,
    old: Option<&Value>,
) -> Result<(), StoreError> {
    let spec = v.get_mut("spec").and_then(Value::as_object_mut);
    if let Some(spec) = spec
        && !node.is_empty()
        && spec
            .get("nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
    {
        spec.insert("nodeName".into(), node.into());
    }
    let (mut pod, back): (Pod, Value) = typed(res, v, defaults::pod)?;
    pod.metadata.name = Some(name_of(v));
    if let Err(errors) = validate_pod(&pod)
        && !ratcheted(res, &errors, old)
    {
        return Err(invalid(res, &name_of(v), errors));
    }
    *v = back;
    Ok(())
}

/// An update keeps what its stored pod already had: a pod stored before a rule was added
/// (by an older podvisor) can still have its status written, as Kubernetes ratchets its
/// validation. Only errors the old pod had as well are let through.
fn ratcheted(res: &Resource, errors: &FieldErrors, old: Option<&Value>) -> bool {
    let Some(Ok((old_pod, _))) = old.map(|o| typed::<Pod>(res, o, defaults::pod)) else {
        return false;
    };
    let Err(had) = validate_pod(&old_pod) else {
        return false;
    };
    errors.0.iter().all(|e| had.0.contains(e))
}

/// The stored pod with today's defaults, so an update is compared with what it would be
/// if stored now (defaults added by a newer podvisor are no change of the client's).
fn defaulted(res: &Resource, old: &Value) -> Value {
    typed::<Pod>(res, old, defaults::pod).map_or_else(|_| old.clone(), |(_, v)| v)
}

/// Parses, defaults, binds (a pod without a node, to `node`) and validates.
fn admit_typed(
    res: &Resource,
    v: &mut Value,
    node: &str,
    old: Option<&Value>,
) -> Result<(), StoreError> {
    if !v.is_object() {
        return Err(StoreError::BadRequest(
            "the body is not a JSON object".into(),
        ));
    }
    *v = match res.kind {
        Kind::Pod => return check_pod(res, v, node, old),
        Kind::Node => typed::<Node>(res, v, |_| {})?.1,
        Kind::Namespace => typed::<Namespace>(res, v, |_| {})?.1,
        Kind::ConfigMap => typed::<ConfigMap>(res, v, |_| {})?.1,
        Kind::Secret => typed(res, v, defaults::secret)?.1,
        Kind::Event => typed::<Event>(res, v, |_| {})?.1,
        Kind::ReplicaSet => {
            let (rs, back) = typed(res, v, defaults::replica_set)?;
            crate::validate::replica_set(&rs).map_err(|e| invalid(res, &name_of(v), e))?;
            back
        }
    };
    Ok(())
}

/// The first admission check of every write: see the module's documentation.
pub struct ObjectAdmission {
    node: NodeInfo,
}

impl ObjectAdmission {
    pub fn new(node: NodeInfo) -> Self {
        Self { node }
    }
}

impl Admission for ObjectAdmission {
    fn admit(
        &self,
        _: &Store,
        res: &Resource,
        object: &mut Value,
        old: Option<&StoredObject>,
    ) -> Result<(), StoreError> {
        check_name(res, object)?;
        let old = old.map(StoredObject::value);
        admit_typed(res, object, &self.node.node_name, old.as_ref())?;
        let Some(old) = old else { return Ok(()) };
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let errors = match res.kind {
            Kind::Pod => pod_update_errors(&defaulted(res, &old), object),
            Kind::ReplicaSet => immutable(&old, object, "selector"),
            _ => Vec::new(),
        };
        if errors.is_empty() {
            return Ok(());
        }
        Err(invalid(res, &name, FieldErrors(errors)))
    }
}

/// The spec with what an update may change blanked out: pods may change only their
/// containers' images, `activeDeadlineSeconds`, tolerations and the grace period.
fn immutable_view(spec: &Value) -> Value {
    let mut s = spec.clone();
    for list in ["containers", "initContainers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                c["image"] = Value::Null;
            }
        }
    }
    if let Some(o) = s.as_object_mut() {
        for mutable in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
        ] {
            o.remove(mutable);
        }
    }
    s
}

/// What a pod update may not change, as Kubernetes: the spec but images, tolerations
/// (added, or their `tolerationSeconds` changed), `activeDeadlineSeconds` and the grace
/// period; existing tolerations; the mirror annotation.
fn pod_update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if immutable_view(&old["spec"]) != immutable_view(&new["spec"]) {
        errors.push(FieldError::forbidden(
            &FieldPath::new("spec"),
            "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        ));
    }
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(o) = t.as_object_mut() {
            o.remove("tolerationSeconds");
        }
        t
    };
    let now: Vec<Value> = new["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(without_seconds)
        .collect();
    let kept = old["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|t| now.contains(&without_seconds(t)));
    if !kept {
        errors.push(FieldError::forbidden(
            &FieldPath::new("spec").child("tolerations"),
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    let mirror = |v: &Value| v["metadata"]["annotations"][MIRROR_ANNOTATION].clone();
    if mirror(old) != mirror(new) {
        let path = FieldPath::new("metadata")
            .child("annotations")
            .key(MIRROR_ANNOTATION);
        errors.push(FieldError::forbidden(&path, "field is immutable"));
    }
    errors
}

/// `spec.<field>` must not change.
fn immutable(old: &Value, new: &Value, field: &str) -> Vec<FieldError> {
    if old["spec"][field] == new["spec"][field] {
        return Vec::new();
    }
    let path = FieldPath::new("spec").child(field);
    vec![FieldError::invalid(
        &path,
        &new["spec"][field].to_string(),
        "field is immutable",
    )]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pods() -> Resource {
        Resource::of(Kind::Pod)
    }

    #[test]
    fn a_pod_stored_before_a_rule_or_a_default_existed_can_still_be_updated() {
        // Stored by an older podvisor: a stop signal, and a probe without its defaults.
        let old = json!({"metadata": {"name": "web"}, "spec": {"nodeName": "n",
            "containers": [{"name": "c", "image": "i:1",
                "readinessProbe": {"exec": {"command": ["true"]}},
                "lifecycle": {"stopSignal": "SIGUSR1"}}]}});
        let mut update = old.clone();
        update["status"] = json!({"phase": "Running"});
        check_pod(&pods(), &mut update, "n", Some(&old)).expect("ratcheted");
        assert!(pod_update_errors(&defaulted(&pods(), &old), &update).is_empty());
        // Without an old pod (a create), or with a new mistake, it is refused.
        let mut create = old.clone();
        assert!(check_pod(&pods(), &mut create, "n", None).is_err());
        let mut worse = old.clone();
        worse["spec"]["containers"][0]["livenessProbe"] = json!({});
        let e = check_pod(&pods(), &mut worse, "n", Some(&old)).unwrap_err();
        assert!(e.to_string().contains("livenessProbe"), "{e}");
    }
}
