//! What the store holds: one object as its JSON bytes, plus the fields selectors need, and
//! the changes watchers see.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podvisor_client::{AnyObject, Error, Object, selector};
use podvisor_core::{Kind, Uid};

/// The RBAC API group.
pub const RBAC: &str = Kind::Role.group();

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
    pub const ALL: [Resource; Kind::ALL.len()] = {
        let mut all = [r(Kind::Pod); Kind::ALL.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = r(Kind::ALL[i]);
            i += 1;
        }
        all
    };

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
        self.kind.api_version().to_string()
    }

    /// How errors name it: `pods`, `replicasets.apps`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The kind as the API serves it, from the one table (`podvisor_core::for_each_kind!`).
const fn r(kind: Kind) -> Resource {
    Resource {
        kind,
        group: kind.group(),
        version: kind.version(),
        plural: kind.plural(),
        singular: kind.singular(),
        short_names: kind.short_names(),
        has_status: kind.has_status(),
        has_spec: kind.has_spec(),
    }
}

/// One stored object: its JSON as served (`resourceVersion` included), plus the fields
/// selectors and the garbage collector read. Cheap to clone.
///
/// No typed form is kept: a typed pod takes several times its JSON's memory, about 20 KiB
/// per pod the agent runs once every version is read by some local reader
/// (docs/benchmarks.md, "The typed client"). A typed read of what the store keeps decodes
/// the JSON; the copy a write hands to its watchers and its writer ([`Self::shared`])
/// decodes it once for all of them.
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
    /// For an Event, when it last happened (milliseconds since the epoch), for expiry.
    pub happened_ms: Option<u64>,
    /// Whether it is marked for deletion and what still holds it.
    pub deleting: bool,
    pub finalizers: Vec<String>,
    /// The object as served, `resourceVersion` included.
    pub json: Bytes,
    /// The typed object, decoded at most once for every holder of this copy: only in
    /// transient copies ([`Self::with_typed`], [`Self::shared`]), never in what the store
    /// keeps.
    typed: Option<Arc<OnceLock<AnyObject>>>,
}

/// When an Event last happened: `lastTimestamp`, `eventTime`, or its creation.
fn event_time_ms(o: &AnyObject) -> Option<u64> {
    let AnyObject::Event(e) = o else { return None };
    let at = e
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    u64::try_from(at.as_millisecond()).ok()
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
            happened_ms: event_time_ms(&object),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
            json,
            typed: None,
        }
    }

    /// Decodes stored JSON.
    pub fn from_json(kind: Kind, json: Bytes) -> Result<Self, Error> {
        let object = AnyObject::from_json(kind, &json)
            .map_err(|e| Error::Internal(format!("a stored {kind} cannot be read: {e}")))?;
        Ok(Self::new(object, json))
    }

    /// A transient stored form of `object` that keeps it typed (for the store's own
    /// what-if copies, read typed at once and never stored).
    pub(crate) fn with_typed(object: AnyObject, json: Bytes) -> Self {
        Self {
            typed: Some(Arc::new(OnceLock::from(object.clone()))),
            ..Self::new(object, json)
        }
    }

    /// A copy whose typed object is decoded once, by the first of its holders to read it,
    /// and shared with the others (a write's watchers and its writer: one decode where
    /// each decoded its own).
    pub(crate) fn shared(&self) -> Self {
        Self {
            typed: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// The typed object: decoded from the JSON, or this copy's shared decode.
    pub fn object(&self) -> Result<AnyObject, Error> {
        let Some(cell) = &self.typed else {
            return self.decode();
        };
        if let Some(o) = cell.get() {
            return Ok(o.clone());
        }
        let o = self.decode()?;
        Ok(cell.get_or_init(|| o).clone())
    }

    fn decode(&self) -> Result<AnyObject, Error> {
        AnyObject::from_json(self.kind, &self.json)
            .map_err(|e| Error::Internal(format!("a stored {} cannot be read: {e}", self.kind)))
    }

    /// The typed object as `K`.
    pub fn typed<K: Object>(&self) -> Result<Arc<K>, Error> {
        self.object()?.into_typed()
    }

    /// The object as a JSON value (for tests and tools).
    pub fn value(&self) -> serde_json::Value {
        podvisor_client::count_decode();
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
