//! Standalone, the node's API issues no service-account tokens: a pod that projects one is
//! refused at once, naming the field and why, instead of waiting for ever for its volume.
//! (In a cluster the cluster's TokenRequest API issues them and this check is not made.)

use k8s_openapi::api::core::v1::Pod;
use podvisor_client::{AnyObject, Error};
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath};
use podvisor_store::{Admission, Objects, Resource, StoredObject};

pub struct NoTokens;

const WHY: &str = "podvisor's own API issues no service-account tokens: mount a Secret instead, or join the node to a cluster";

/// Every token projection of the pod, as a field error.
fn token_projections(pod: &Pod) -> FieldErrors {
    let mut errs = FieldErrors(Vec::new());
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or(&[]);
    for (i, v) in volumes.iter().enumerate() {
        let sources = v.projected.as_ref().and_then(|p| p.sources.as_deref());
        for (j, s) in sources.unwrap_or(&[]).iter().enumerate() {
            if s.service_account_token.is_some() {
                let path = FieldPath::new("spec").child("volumes").index(i);
                let path = path.child("projected").child("sources").index(j);
                errs.push(FieldError::forbidden(
                    &path.child("serviceAccountToken"),
                    WHY,
                ));
            }
        }
    }
    errs
}

impl Admission for NoTokens {
    fn admit(
        &self,
        _: &dyn Objects,
        _: &Resource,
        object: &mut AnyObject,
        old: Option<&StoredObject>,
    ) -> Result<(), Error> {
        let AnyObject::Pod(pod) = object else {
            return Ok(());
        };
        let errors = token_projections(pod);
        if old.is_some() || errors.is_empty() {
            return Ok(());
        }
        Err(Error::Invalid {
            kind: "Pod".into(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_token_projection_is_named() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [], "volumes": [
                {"name": "a", "emptyDir": {}},
                {"name": "b", "projected": {"sources": [
                    {"configMap": {"name": "c"}},
                    {"serviceAccountToken": {"path": "token"}}
                ]}}
            ]}
        }))
        .unwrap();
        let errs = token_projections(&pod);
        assert_eq!(errs.0.len(), 1);
        assert_eq!(
            errs.0[0].field,
            "spec.volumes[1].projected.sources[1].serviceAccountToken"
        );
        assert!(token_projections(&Pod::default()).is_empty());
    }
}
