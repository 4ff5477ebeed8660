//! What every object goes through before it is stored, whoever writes it (kubectl through
//! the API, a controller, the node's own actors), on the typed object the writer decoded
//! once: defaulted (`defaults`), a pod bound to this node, and validated. Pods use the same
//! `validate_pod` as the manifest directory: one validation path for both. An update may
//! change only what Kubernetes lets it change. [`ObjectAdmission`] runs inside the store's
//! writes (the first of its admission checks, before node fit); `fieldValidation=Strict`,
//! which is about the request, is the decoder's (`podvisor_store::decode`).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodSpec, Toleration};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding, RoleRef};
use podvisor_client::{AnyObject, Error, Subresource};
use podvisor_core::Kind;
use podvisor_core::pod::MIRROR_ANNOTATION;
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath, names, validate_pod};
use podvisor_store::{Admission, Objects, Resource, StoredObject};

use crate::defaults;

/// What admission needs to know of the node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Pods created without `spec.nodeName` are bound here.
    pub node_name: String,
}

fn invalid(res: &Resource, name: &str, errors: FieldErrors) -> Error {
    Error::Invalid {
        kind: res.kind.as_str().to_string(),
        name: name.to_string(),
        errors,
    }
}

/// The name an object is checked by: its own, or the one it will get.
fn name_of(o: &AnyObject) -> String {
    let meta = o.meta();
    match meta.name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => format!("{}xxxxx", meta.generate_name.as_deref().unwrap_or_default()),
    }
}

fn check_name(res: &Resource, o: &AnyObject) -> Result<(), Error> {
    let name = name_of(o);
    let path = FieldPath::new("metadata").child("name");
    let err = if name.is_empty() {
        Some(FieldError::required(
            &path,
            "name or generateName is required",
        ))
    } else if res.kind == Kind::Namespace {
        names::label(&path, &name)
    } else if res.group == podvisor_store::RBAC {
        names::path_segment(&path, &name)
    } else {
        names::subdomain(&path, &name)
    };
    match err {
        Some(e) => Err(invalid(res, &name, FieldErrors(vec![e]))),
        None => Ok(()),
    }
}

/// Binds (a pod without a node, to `node`), defaults and validates a pod.
fn check_pod(
    res: &Resource,
    pod: &mut Pod,
    name: &str,
    node: &str,
    old: Option<&Pod>,
) -> Result<(), Error> {
    if let Some(spec) = pod.spec.as_mut()
        && !node.is_empty()
        && spec.node_name.as_deref().unwrap_or_default().is_empty()
    {
        spec.node_name = Some(node.to_string());
    }
    defaults::pod(pod);
    let mut named = pod.clone();
    named.metadata.name = Some(name.to_string());
    if let Err(errors) = validate_pod(&named)
        && !ratcheted(&errors, old)
    {
        return Err(invalid(res, name, errors));
    }
    Ok(())
}

/// An update keeps what its stored pod already had: a pod stored before a rule was added
/// (by an older podvisor) can still have its status written, as Kubernetes ratchets its
/// validation. Only errors the old pod had as well are let through.
fn ratcheted(errors: &FieldErrors, old: Option<&Pod>) -> bool {
    let Some(old) = old else { return false };
    let Err(had) = validate_pod(&defaulted(old)) else {
        return false;
    };
    errors.0.iter().all(|e| had.0.contains(e))
}

/// The stored pod with today's defaults, so an update is compared with what it would be
/// if stored now (defaults added by a newer podvisor are no change of the client's).
fn defaulted(old: &Pod) -> Pod {
    let mut p = old.clone();
    defaults::pod(&mut p);
    p
}

fn pod_of(o: Option<&StoredObject>) -> Option<Arc<Pod>> {
    o.and_then(|o| o.typed::<Pod>().ok())
}

fn rs_of(o: Option<&StoredObject>) -> Option<Arc<ReplicaSet>> {
    o.and_then(|o| o.typed::<ReplicaSet>().ok())
}

/// Defaults and validates by kind; answers what an update may not change.
fn admit_typed(
    res: &Resource,
    o: &mut AnyObject,
    node: &str,
    (old, sub): (Option<&StoredObject>, Subresource),
) -> Result<Vec<FieldError>, Error> {
    let name = name_of(o);
    match o {
        AnyObject::Pod(p) => {
            let old = pod_of(old);
            let pod = Arc::make_mut(p);
            check_pod(res, pod, &name, node, old.as_deref())?;
            Ok(match (old, sub) {
                (None, _) => crate::ephemeral::on_create(pod),
                (Some(o), Subresource::EphemeralContainers) => {
                    crate::ephemeral::update_errors(&o, pod)
                }
                (Some(o), Subresource::Resize) => crate::resize::update_errors(&defaulted(&o), pod),
                (Some(o), _) => pod_update_errors(&defaulted(&o), pod),
            })
        }
        AnyObject::Secret(s) => {
            defaults::secret(Arc::make_mut(s));
            Ok(Vec::new())
        }
        AnyObject::ReplicaSet(rs) => {
            let rs = Arc::make_mut(rs);
            defaults::replica_set(rs);
            crate::validate::replica_set(rs).map_err(|e| invalid(res, &name, e))?;
            Ok(rs_of(old).map_or_else(Vec::new, |o| selector_changed(&o, rs)))
        }
        AnyObject::Deployment(d) => {
            let old = old.and_then(|o| o.typed::<Deployment>().ok());
            crate::workloads::deployment(Arc::make_mut(d), old.as_deref())
                .map_err(|e| invalid(res, &name, e))
        }
        AnyObject::Job(j) => {
            let old = old.and_then(|o| o.typed::<Job>().ok());
            crate::workloads::job(Arc::make_mut(j), old.as_deref())
                .map_err(|e| invalid(res, &name, e))
        }
        AnyObject::RoleBinding(b) => {
            let was = old.and_then(|o| o.typed::<RoleBinding>().ok());
            Ok(role_ref_changed(
                was.map(|o| o.role_ref.clone()),
                &b.role_ref,
            ))
        }
        AnyObject::ClusterRoleBinding(b) => {
            let was = old.and_then(|o| o.typed::<ClusterRoleBinding>().ok());
            Ok(role_ref_changed(
                was.map(|o| o.role_ref.clone()),
                &b.role_ref,
            ))
        }
        _ => Ok(Vec::new()),
    }
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
        _: &dyn Objects,
        res: &Resource,
        object: &mut AnyObject,
        old: Option<&StoredObject>,
        sub: Subresource,
    ) -> Result<(), Error> {
        check_name(res, object)?;
        let errors = admit_typed(res, object, &self.node.node_name, (old, sub))?;
        if errors.is_empty() {
            return Ok(());
        }
        Err(invalid(res, object.name(), FieldErrors(errors)))
    }
}

/// The spec with what an update may change blanked out: pods may change only their
/// containers' images, `activeDeadlineSeconds`, tolerations and the grace period.
fn immutable_view(spec: Option<&PodSpec>) -> PodSpec {
    let mut s = spec.cloned().unwrap_or_default();
    for c in s
        .containers
        .iter_mut()
        .chain(s.init_containers.iter_mut().flatten())
    {
        c.image = None;
    }
    s.active_deadline_seconds = None;
    s.tolerations = None;
    s.termination_grace_period_seconds = None;
    s
}

fn tolerations(p: &Pod) -> Vec<Toleration> {
    let all = p.spec.as_ref().and_then(|s| s.tolerations.clone());
    all.unwrap_or_default()
        .into_iter()
        .map(|t| Toleration {
            toleration_seconds: None,
            ..t
        })
        .collect()
}

fn mirror_of(p: &Pod) -> Option<&String> {
    p.metadata.annotations.as_ref()?.get(MIRROR_ANNOTATION)
}

/// Whether the pod is a static pod's mirror (the node made it; admission lets it pass).
pub(crate) fn is_mirror(p: &Pod) -> bool {
    mirror_of(p).is_some()
}

/// What a pod update may not change, as Kubernetes: the spec but images, tolerations
/// (added, or their `tolerationSeconds` changed), `activeDeadlineSeconds` and the grace
/// period; existing tolerations; the mirror annotation.
fn pod_update_errors(old: &Pod, new: &Pod) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if immutable_view(old.spec.as_ref()) != immutable_view(new.spec.as_ref()) {
        errors.push(FieldError::forbidden(
            &FieldPath::new("spec"),
            "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        ));
    }
    let now = tolerations(new);
    if !tolerations(old).iter().all(|t| now.contains(t)) {
        errors.push(FieldError::forbidden(
            &FieldPath::new("spec").child("tolerations"),
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    if mirror_of(old) != mirror_of(new) {
        let path = FieldPath::new("metadata")
            .child("annotations")
            .key(MIRROR_ANNOTATION);
        errors.push(FieldError::forbidden(&path, "field is immutable"));
    }
    errors
}

/// A binding's `roleRef` never changes (who may write a binding is judged by the role it
/// names): refused as kube-apiserver refuses it.
fn role_ref_changed(old: Option<RoleRef>, new: &RoleRef) -> Vec<FieldError> {
    match old {
        Some(o) if o != *new => {
            let value = serde_json::to_string(new).unwrap_or_default();
            vec![FieldError::invalid(
                &FieldPath::new("roleRef"),
                &value,
                "cannot change roleRef",
            )]
        }
        _ => Vec::new(),
    }
}

/// A ReplicaSet's `spec.selector` must not change.
fn selector_changed(old: &ReplicaSet, new: &ReplicaSet) -> Vec<FieldError> {
    let selector = |rs: &ReplicaSet| rs.spec.selector.clone();
    if selector(old) == selector(new) {
        return Vec::new();
    }
    let value = serde_json::to_string(&selector(new)).unwrap_or_default();
    let path = FieldPath::new("spec").child("selector");
    vec![FieldError::invalid(&path, &value, "field is immutable")]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_pod_stored_before_a_rule_or_a_default_existed_can_still_be_updated() {
        let res = Resource::of(Kind::Pod);
        // Stored by an older podvisor: a stop signal, and a probe without its defaults.
        let old = pod(
            json!({"metadata": {"name": "web"}, "spec": {"nodeName": "n",
            "containers": [{"name": "c", "image": "i:1",
                "readinessProbe": {"exec": {"command": ["true"]}},
                "lifecycle": {"stopSignal": "SIGUSR1"}}]}}),
        );
        let mut update = old.clone();
        update.status = Some(serde_json::from_value(json!({"phase": "Running"})).unwrap());
        check_pod(&res, &mut update, "web", "n", Some(&old)).expect("ratcheted");
        assert!(pod_update_errors(&defaulted(&old), &update).is_empty());
        // Without an old pod (a create), or with a new mistake, it is refused.
        let mut create = old.clone();
        assert!(check_pod(&res, &mut create, "web", "n", None).is_err());
        let mut worse = old.clone();
        worse.spec.as_mut().unwrap().containers[0].liveness_probe = Some(Default::default());
        let e = check_pod(&res, &mut worse, "web", "n", Some(&old)).unwrap_err();
        assert!(e.to_string().contains("livenessProbe"), "{e}");
    }
}
