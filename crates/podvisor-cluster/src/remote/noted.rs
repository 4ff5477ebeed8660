//! An object as the cluster sent it, with the fields its type does not know noted rather
//! than dropped: an API server newer than podvisor's types (1.37's) may add fields to pods,
//! and running a pod without one would ignore it silently. The fields (outside `status`,
//! which the node writes) are named in the object's [`UNKNOWN_FIELDS`] annotation, where
//! the node's admission finds them and refuses the pod by name.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};

pub use podvisor_core::validation::UNKNOWN_FIELDS;

/// The most fields one object's annotation names.
const MAX_NAMED: usize = 20;

#[derive(Debug, Clone)]
pub(crate) struct Noted<K> {
    pub object: K,
    pub unknown: Vec<String>,
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Noted<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut unknown = Vec::new();
        let object = serde_ignored::deserialize(d, |path| {
            let field = podvisor_client::unknown::field_path(&path);
            if unknown.len() < MAX_NAMED && field != "status" && !field.starts_with("status.") {
                unknown.push(field);
            }
        })?;
        Ok(Self { object, unknown })
    }
}

impl<K: kube::Resource> Noted<K> {
    /// The object; a pod with its unknown fields named in its annotation (of other kinds
    /// the node runs nothing: they are logged).
    pub(crate) fn surfaced(mut self) -> K
    where
        K: kube::Resource<DynamicType = ()>,
    {
        if !self.unknown.is_empty() {
            let meta = self.object.meta_mut();
            tracing::warn!(
                kind = %K::kind(&()),
                name = meta.name.as_deref().unwrap_or_default(),
                fields = %self.unknown.join(", "),
                "the cluster sent fields this node's types do not know"
            );
            if K::kind(&()) != "Pod" {
                return self.object;
            }
            let list = self.unknown.join(",");
            meta.annotations
                .get_or_insert_with(Default::default)
                .insert(UNKNOWN_FIELDS.into(), list);
        }
        self.object
    }
}

impl<K: kube::Resource<DynamicType = ()>> kube::Resource for Noted<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        self.object.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.object.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_a_newer_server_adds_are_named_in_the_annotation_but_not_status_ones() {
        let sent = json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "futureKnob": 1}],
                     "futureField": {"a": 1}},
            "status": {"futureStatus": true}
        });
        let noted: Noted<Pod> = serde_json::from_value(sent).unwrap();
        assert_eq!(
            noted.unknown,
            ["spec.containers[0].futureKnob", "spec.futureField"]
        );
        let pod = noted.surfaced();
        let note = &pod.metadata.annotations.unwrap()[UNKNOWN_FIELDS];
        assert_eq!(note, "spec.containers[0].futureKnob,spec.futureField");
        let known: Noted<Pod> =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}))
                .unwrap();
        assert!(known.surfaced().metadata.annotations.is_none());
    }
}
