//! An informer's local cache (client-go's indexer, kube-runtime's reflector store): the
//! typed objects a reflector delivers, shared with it (nothing is decoded here), by key,
//! with one optional secondary index (the ReplicaSet controller indexes pods by their
//! controller's UID). Applying an update answers what changed, old and new, which is what
//! a controller's event handlers need; a relist (`Reset`) answers the difference with what
//! was held.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use podvisor_client::{Object, WatchEvent};
use podvisor_core::{ObjectKey, Uid};

use crate::reflector::Update;

/// One object's change: `None` for absent (added: `old` is `None`; deleted: `new` is).
#[derive(Debug)]
pub struct Delta<T> {
    pub key: ObjectKey,
    pub old: Option<Arc<T>>,
    pub new: Option<Arc<T>>,
}

type Index<T> = fn(&T) -> Option<String>;
type Filter<T> = fn(&T) -> bool;

pub struct Cache<T> {
    objects: BTreeMap<ObjectKey, Arc<T>>,
    index: Option<Index<T>>,
    by_index: HashMap<String, HashSet<ObjectKey>>,
    keep: Option<Filter<T>>,
}

impl<T: Object> Default for Cache<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Object> Cache<T> {
    pub fn new() -> Self {
        Self {
            objects: BTreeMap::new(),
            index: None,
            by_index: HashMap::new(),
            keep: None,
        }
    }

    /// Holds only the objects `keep` accepts; one it stops accepting is answered as
    /// deleted. For a controller that can never act on some objects its reflector sees:
    /// holding them would cost memory for nothing.
    pub fn with_filter(mut self, keep: Filter<T>) -> Self {
        self.keep = Some(keep);
        self
    }

    /// The object, unless the filter refuses it.
    fn kept(&self, o: &Arc<T>) -> Option<Arc<T>> {
        self.keep.is_none_or(|keep| keep(o)).then(|| o.clone())
    }

    /// Also indexes every object by `index` (one value per object, or none).
    pub fn with_index(mut self, index: Index<T>) -> Self {
        self.index = Some(index);
        self
    }

    fn key(o: &T) -> ObjectKey {
        let meta = o.metadata();
        let ns = T::TYPE
            .namespaced()
            .then(|| meta.namespace.as_deref().unwrap_or_default());
        let name = meta.name.as_deref().unwrap_or_default();
        ObjectKey::new(T::TYPE, ns, name)
            .with_uid(Uid::from(meta.uid.as_deref().unwrap_or_default()))
    }

    fn put(&mut self, key: ObjectKey, new: Option<Arc<T>>) -> Delta<T> {
        let old = match &new {
            Some(v) => self.objects.insert(key.clone(), v.clone()),
            None => self.objects.remove(&key),
        };
        if let Some(f) = self.index {
            if let Some(i) = old.as_deref().and_then(f)
                && let Some(set) = self.by_index.get_mut(&i)
            {
                set.remove(&key);
                if set.is_empty() {
                    self.by_index.remove(&i);
                }
            }
            if let Some(i) = new.as_deref().and_then(f) {
                self.by_index.entry(i).or_default().insert(key.clone());
            }
        }
        Delta { key, old, new }
    }

    /// Applies what a reflector delivered; answers every change.
    pub fn apply(&mut self, update: Update<T>) -> Vec<Delta<T>> {
        match update {
            Update::Change(e) => {
                let (o, new) = match &e {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, self.kept(o)),
                    WatchEvent::Deleted(o) => (o, None),
                    WatchEvent::Bookmark(_) => return Vec::new(),
                };
                vec![self.put(Self::key(o), new)]
            }
            Update::Reset(items) => {
                let fresh: Vec<(ObjectKey, Option<Arc<T>>)> =
                    items.iter().map(|o| (Self::key(o), self.kept(o))).collect();
                let keep: HashSet<&ObjectKey> = fresh.iter().map(|(k, _)| k).collect();
                let gone: Vec<ObjectKey> = self
                    .objects
                    .keys()
                    .filter(|k| !keep.contains(k))
                    .cloned()
                    .collect();
                let mut out: Vec<Delta<T>> = gone.into_iter().map(|k| self.put(k, None)).collect();
                out.extend(fresh.into_iter().map(|(k, v)| self.put(k, v)));
                out
            }
        }
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<T>> {
        self.objects.get(key)
    }

    /// Every object of `namespace`, in name order.
    pub fn in_namespace<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a Arc<T>> + 'a {
        let start = ObjectKey::new(T::TYPE, Some(namespace), "");
        let ns = namespace.to_string();
        self.objects
            .range(start..)
            .take_while(move |(k, _)| k.namespace.as_deref() == Some(ns.as_str()))
            .map(|(_, v)| v)
    }

    /// The objects whose index value is `value`.
    pub fn indexed<'a>(&'a self, value: &str) -> impl Iterator<Item = &'a Arc<T>> + 'a {
        self.by_index
            .get(value)
            .into_iter()
            .flatten()
            .filter_map(|k| self.objects.get(k))
    }

    pub fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.objects.values()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn obj(ns: &str, name: &str, owner: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.namespace = Some(ns.into());
        cm.metadata.uid = Some(format!("u-{name}"));
        cm.metadata.labels = Some(BTreeMap::from([("owner".into(), owner.into())]));
        Arc::new(cm)
    }

    fn owner(v: &ConfigMap) -> Option<String> {
        v.metadata.labels.as_ref()?.get("owner").cloned()
    }

    fn modified(o: Arc<ConfigMap>) -> Update<ConfigMap> {
        Update::Change(WatchEvent::Modified(o))
    }

    #[test]
    fn changes_and_relists_answer_old_and_new_and_keep_the_index() {
        let mut c: Cache<ConfigMap> = Cache::new().with_index(owner);
        let d = c.apply(Update::Reset(vec![
            obj("a", "x", "o1"),
            obj("a", "y", "o1"),
            obj("b", "z", "o2"),
        ]));
        assert_eq!(d.len(), 3);
        assert_eq!(c.indexed("o1").count(), 2);
        let d = c.apply(modified(obj("a", "y", "o2")));
        assert!(d[0].old.is_some() && d[0].new.is_some());
        assert_eq!(c.indexed("o1").count(), 1, "moved to another index value");
        assert_eq!(c.indexed("o2").count(), 2);
        let names: Vec<&str> = c
            .in_namespace("a")
            .map(|v| v.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["x", "y"]);
        // A relist without z: z is deleted.
        let d = c.apply(Update::Reset(vec![
            obj("a", "x", "o1"),
            obj("a", "y", "o2"),
        ]));
        let gone: Vec<&str> = d
            .iter()
            .filter(|d| d.new.is_none())
            .map(|d| d.key.name.as_str())
            .collect();
        assert_eq!(gone, ["z"]);
        assert_eq!(c.indexed("o2").count(), 1);
        c.apply(Update::Change(WatchEvent::Deleted(obj("a", "x", "o1"))));
        assert_eq!(c.indexed("o1").count(), 0);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_filtered_cache_holds_only_what_it_accepts_and_answers_a_rejected_change_as_deleted() {
        fn ours(v: &ConfigMap) -> bool {
            owner(v).as_deref() == Some("o1")
        }
        let mut c: Cache<ConfigMap> = Cache::new().with_filter(ours);
        c.apply(Update::Reset(vec![
            obj("a", "x", "o1"),
            obj("a", "y", "o2"),
        ]));
        assert_eq!(c.len(), 1, "y is not held");
        let d = c.apply(modified(obj("a", "x", "o2")));
        assert!(d[0].old.is_some() && d[0].new.is_none(), "x left: deleted");
        assert!(c.is_empty());
        let d = c.apply(modified(obj("a", "y", "o1")));
        assert!(d[0].old.is_none() && d[0].new.is_some(), "y came in: added");
        let shared = obj("a", "y", "o1");
        c.apply(modified(shared.clone()));
        let held = c.values().next().unwrap();
        assert!(
            Arc::ptr_eq(held, &shared),
            "the cache shares what it is given"
        );
    }
}
