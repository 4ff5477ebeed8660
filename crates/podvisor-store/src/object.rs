//! What the store holds: one object as its JSON bytes and its typed form, plus the fields
//! selectors need, and the changes watchers see.

use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podvisor_client::{AnyObject, Error, Object, selector};
use podvisor_core::{Kind, Uid};

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

/// One stored object: its JSON as served (`resourceVersion` included) and, while it is
/// current, its typed form, decoded once when it was written and shared with every reader;
/// plus the fields selectors and the garbage collector read. Cheap to clone.
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
    /// Its `ownerReferences`, for garbage collection.
    pub owners: Vec<OwnerRef>,
    /// Whether it is marked for deletion and what still holds it.
    pub deleting: bool,
    pub finalizers: Vec<String>,
    /// The object as served, `resourceVersion` included.
    pub json: Bytes,
    /// The typed object: kept while it is current (`None` in the change window, where an
    /// old version is decoded again only if a watch resumes through it).
    typed: Option<AnyObject>,
}

/// One of an object's `ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub kind: String,
    pub name: String,
    pub uid: Uid,
    pub block_owner_deletion: bool,
}

fn owner_refs(meta: &ObjectMeta) -> Vec<OwnerRef> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|r| OwnerRef {
            kind: r.kind.clone(),
            name: r.name.clone(),
            uid: Uid::from(r.uid.as_str()),
            block_owner_deletion: r.block_owner_deletion == Some(true),
        })
        .collect()
}

impl StoredObject {
    /// The stored form of `object`, whose JSON is `json`.
    pub(crate) fn new(object: AnyObject, json: Bytes) -> Self {
        let meta = object.meta();
        let labels = meta
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Self {
            kind: object.kind(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: Uid::from(meta.uid.as_deref().unwrap_or_default()),
            revision: meta
                .resource_version
                .as_deref()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0),
            labels,
            fields: selector::field_values(&object),
            owners: owner_refs(meta),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
            json,
            typed: Some(object),
        }
    }

    /// Decodes stored JSON.
    pub fn from_json(kind: Kind, json: Bytes) -> Result<Self, Error> {
        let object = AnyObject::from_json(kind, &json)
            .map_err(|e| Error::Internal(format!("a stored {kind} cannot be read: {e}")))?;
        Ok(Self::new(object, json))
    }

    /// An object as the store would hold it (for tests and tools; the store builds them
    /// from the objects it writes).
    pub fn from_object(object: AnyObject) -> Self {
        let json = object.to_json().unwrap_or_default();
        Self::new(object, Bytes::from(json))
    }

    /// The same object without its typed form (what the change window keeps).
    pub(crate) fn cold(&self) -> Self {
        Self {
            typed: None,
            ..self.clone()
        }
    }

    /// The typed object (decoded again if this is an old version from the change window).
    pub fn object(&self) -> Result<AnyObject, Error> {
        match &self.typed {
            Some(o) => Ok(o.clone()),
            None => AnyObject::from_json(self.kind, &self.json).map_err(|e| {
                Error::Internal(format!("a stored {} cannot be read: {e}", self.kind))
            }),
        }
    }

    /// The typed object as `K`.
    pub fn typed<K: Object>(&self) -> Result<Arc<K>, Error> {
        self.object()?.into_typed()
    }

    /// The object as a JSON value (for tests and tools).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_slice(&self.json).unwrap_or_default()
    }

    /// Whether `uid` is one of its owners.
    pub fn owned_by(&self, uid: &str) -> bool {
        self.owners.iter().any(|o| *o.uid == *uid)
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

impl Change {
    /// The change as the window keeps it: without the typed objects, which are decoded
    /// again only if a watch resumes through it.
    pub(crate) fn cold(&self) -> Change {
        Change {
            revision: self.revision,
            kind: self.kind,
            object: Arc::new(self.object.cold()),
            prev: self.prev.as_ref().map(|p| Arc::new(p.cold())),
        }
    }
}
