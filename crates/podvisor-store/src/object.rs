//! What the store holds: one object as its JSON bytes plus the parsed fields selectors
//! need, and the changes watchers see.

use std::sync::Arc;

use bytes::Bytes;
use podvisor_core::{Kind, Uid};
use serde_json::Value;

/// A kind as the API serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub kind: Kind,
    /// "" for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub short_names: &'static [&'static str],
    /// Whether `status` is a subresource: the main resource's writes keep the stored
    /// status and status writes keep everything else.
    pub has_status: bool,
    /// Whether a spec change bumps `metadata.generation`.
    pub has_spec: bool,
}

impl Resource {
    pub const ALL: [Resource; 7] = [
        r(Kind::Pod, "", "pods", "pod", &["po"], true, true),
        r(Kind::Node, "", "nodes", "node", &["no"], true, true),
        r(
            Kind::Namespace,
            "",
            "namespaces",
            "namespace",
            &["ns"],
            true,
            true,
        ),
        r(
            Kind::ConfigMap,
            "",
            "configmaps",
            "configmap",
            &["cm"],
            false,
            false,
        ),
        r(Kind::Secret, "", "secrets", "secret", &[], false, false),
        r(Kind::Event, "", "events", "event", &["ev"], false, false),
        r(
            Kind::ReplicaSet,
            "apps",
            "replicasets",
            "replicaset",
            &["rs"],
            true,
            true,
        ),
    ];

    pub fn of(kind: Kind) -> Resource {
        *Self::ALL
            .iter()
            .find(|r| r.kind == kind)
            .unwrap_or(&Self::ALL[0])
    }

    pub fn find(group: &str, plural: &str) -> Option<Resource> {
        Self::ALL
            .into_iter()
            .find(|r| r.group == group && r.plural == plural)
    }

    pub fn namespaced(&self) -> bool {
        self.kind.namespaced()
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// How errors name it: `pods`, `replicasets.apps`.
    pub fn qualified(&self) -> &'static str {
        match self.kind {
            Kind::ReplicaSet => "replicasets.apps",
            _ => self.plural,
        }
    }
}

const fn r(
    kind: Kind,
    group: &'static str,
    plural: &'static str,
    singular: &'static str,
    short_names: &'static [&'static str],
    has_status: bool,
    has_spec: bool,
) -> Resource {
    Resource {
        kind,
        group,
        version: "v1",
        plural,
        singular,
        short_names,
        has_status,
        has_spec,
    }
}

/// One stored object. Cheap to clone (the JSON is shared).
#[derive(Debug, Clone)]
pub struct StoredObject {
    pub kind: Kind,
    /// Empty for cluster-scoped kinds.
    pub namespace: String,
    pub name: String,
    pub uid: Uid,
    pub revision: u64,
    pub labels: Vec<(String, String)>,
    /// The fields a field selector can name, beyond `metadata.name`/`metadata.namespace`.
    pub fields: Vec<(&'static str, String)>,
    /// Its `ownerReferences`, for garbage collection without parsing every object.
    pub owners: Vec<OwnerRef>,
    /// Whether it is marked for deletion and what still holds it.
    pub deleting: bool,
    pub finalizers: Vec<String>,
    /// The object as served, `resourceVersion` included.
    pub json: Bytes,
}

/// One of an object's `ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub kind: String,
    pub name: String,
    pub uid: Uid,
    pub block_owner_deletion: bool,
}

fn owner_refs(meta: &Value) -> Vec<OwnerRef> {
    meta["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| OwnerRef {
            kind: r["kind"].as_str().unwrap_or_default().to_string(),
            name: r["name"].as_str().unwrap_or_default().to_string(),
            uid: Uid::from(r["uid"].as_str().unwrap_or_default()),
            block_owner_deletion: r["blockOwnerDeletion"] == true,
        })
        .collect()
}

impl StoredObject {
    /// Parses what selectors need out of a complete object.
    pub(crate) fn new(kind: Kind, value: &Value, json: Bytes) -> Self {
        let meta = &value["metadata"];
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let labels = meta["labels"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), s(v))).collect())
            .unwrap_or_default();
        Self {
            kind,
            namespace: s(&meta["namespace"]),
            name: s(&meta["name"]),
            uid: Uid::from(meta["uid"].as_str().unwrap_or_default()),
            revision: meta["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0),
            labels,
            fields: selectable_fields(kind, value),
            owners: owner_refs(meta),
            deleting: meta["deletionTimestamp"].is_string(),
            finalizers: meta["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect(),
            json,
        }
    }

    /// Whether `uid` is one of its owners.
    pub fn owned_by(&self, uid: &str) -> bool {
        self.owners.iter().any(|o| *o.uid == *uid)
    }

    /// An object as the store would hold `value` (for tests and tools; the store itself
    /// builds them from the bytes it writes).
    pub fn from_value(kind: Kind, value: &Value) -> Self {
        let json = serde_json::to_vec(value).unwrap_or_default();
        Self::new(kind, value, Bytes::from(json))
    }

    /// An empty object of `kind`: asks which fields a field selector may name.
    pub fn probe(kind: Kind) -> Self {
        Self::new(kind, &Value::Null, Bytes::new())
    }

    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// Parses the object as its typed form.
    pub fn typed<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_slice(&self.json).ok()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn field(&self, path: &str) -> Option<&str> {
        match path {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            _ => self
                .fields
                .iter()
                .find(|(k, _)| *k == path)
                .map(|(_, v)| v.as_str()),
        }
    }
}

/// The fields kube-apiserver lets a field selector name for each kind (the common ones).
fn selectable_fields(kind: Kind, v: &Value) -> Vec<(&'static str, String)> {
    let paths: &[(&'static str, &[&str])] = match kind {
        Kind::Pod => &[
            ("spec.nodeName", &["spec", "nodeName"]),
            ("spec.restartPolicy", &["spec", "restartPolicy"]),
            ("spec.schedulerName", &["spec", "schedulerName"]),
            ("spec.serviceAccountName", &["spec", "serviceAccountName"]),
            ("status.phase", &["status", "phase"]),
            ("status.podIP", &["status", "podIP"]),
        ],
        Kind::Node => &[("spec.unschedulable", &["spec", "unschedulable"])],
        Kind::Namespace => &[("status.phase", &["status", "phase"])],
        Kind::Secret => &[("type", &["type"])],
        Kind::Event => &[
            ("involvedObject.kind", &["involvedObject", "kind"]),
            ("involvedObject.name", &["involvedObject", "name"]),
            ("involvedObject.namespace", &["involvedObject", "namespace"]),
            ("involvedObject.uid", &["involvedObject", "uid"]),
            ("reason", &["reason"]),
            ("type", &["type"]),
        ],
        Kind::ConfigMap | Kind::ReplicaSet => &[],
    };
    paths
        .iter()
        .map(|(name, path)| {
            let at = path.iter().fold(v, |v, p| &v[*p]);
            let text = match at {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (*name, text)
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(c: u8) -> Option<Self> {
        [ChangeType::Added, ChangeType::Modified, ChangeType::Deleted]
            .into_iter()
            .find(|t| t.code() == c)
    }
}

/// One write as watchers see it. A deletion carries the object's last state with the
/// deletion's revision as its `resourceVersion`.
#[derive(Debug, Clone)]
pub struct Change {
    pub revision: u64,
    pub kind: ChangeType,
    pub object: Arc<StoredObject>,
    /// Its state before this change, when known: what tells a selecting watcher that an
    /// object came into its selection or left it.
    pub prev: Option<Arc<StoredObject>>,
}
