//! Copies of another API's objects: in a cluster, the pods bound to this node and the
//! Node itself are the cluster's, and the store keeps them so the node runs its pods (and
//! an agent restarted meanwhile adopts them) while the cluster cannot be reached.
//!
//! A copy takes the metadata and spec as the other API has them (admitted there, so not
//! again here) and, for a pod, keeps the status this node wrote: the node owns a pod's
//! status, and its own copy is the newer. The conditions others set there (a readiness
//! gate's, which the pod's readiness follows) are the copy's, over the node's of the same
//! type. A Node's status the node writes to the cluster itself, so the cluster's is taken.
//! A copy never takes back a deletion this node has started (its taint eviction), and a
//! copy that says nothing new writes nothing.

use k8s_openapi::api::core::v1::Namespace;
use podvisor_client::{AnyObject, Error, PostParams};
use podvisor_core::Kind;

use super::{Store, Write};
use crate::kinds;
use crate::object::{Change, ChangeType, Resource};

impl Store {
    /// Keeps `object` as a copy (see the module's comment).
    pub fn replicate(
        &mut self,
        res: &Resource,
        mut object: AnyObject,
    ) -> Result<Vec<Change>, Error> {
        if object.name().is_empty() || object.meta().uid.as_deref().unwrap_or_default().is_empty() {
            return Err(Error::BadRequest(
                "a copy needs the other API's name and UID".into(),
            ));
        }
        if !res.namespaced() {
            object.meta_mut().namespace = None;
        }
        let ns = object.namespace().to_string();
        let mut writes = Vec::new();
        if res.namespaced() && self.get(Kind::Namespace, "", &ns).is_err() {
            writes.push(Write::Put(ChangeType::Added, namespace(&ns)));
        }
        match self.get(res.kind, &ns, object.name()).ok() {
            None => writes.push(Write::Put(ChangeType::Added, object)),
            Some(old) if old.uid.as_str() == object.meta().uid.as_deref().unwrap_or_default() => {
                let old_object = old.object()?;
                keep_ours(res, &mut object, &old_object);
                object.meta_mut().resource_version = Some(old.revision.to_string());
                if object.to_json().is_ok_and(|j| j == old.json) {
                    return Ok(Vec::new());
                }
                writes.push(Write::Put(ChangeType::Modified, object));
            }
            // Another incarnation under the same name: the old one is gone there.
            Some(old) => {
                writes.push(Write::Remove(old.object()?));
                writes.push(Write::Put(ChangeType::Added, object));
            }
        }
        self.commit(writes, PostParams::default())
    }
}

/// What the node owns in its copy: a pod's status, and a deletion it started.
fn keep_ours(res: &Resource, copy: &mut AnyObject, ours: &AnyObject) {
    if res.kind == Kind::Pod {
        let foreign = kinds::foreign_conditions(copy);
        kinds::copy_status(copy, ours);
        kinds::set_foreign_conditions(copy, foreign);
    }
    let (mine, theirs) = (ours.meta(), copy.meta_mut());
    if mine.deletion_timestamp.is_some() && theirs.deletion_timestamp.is_none() {
        theirs.deletion_timestamp = mine.deletion_timestamp.clone();
        theirs.deletion_grace_period_seconds = mine.deletion_grace_period_seconds;
    }
}

fn namespace(name: &str) -> AnyObject {
    let mut n = Namespace::default();
    n.metadata.name = Some(name.to_string());
    n.metadata.uid = Some(uuid::Uuid::new_v4().to_string());
    n.metadata.creation_timestamp = Some(podvisor_core::time::now());
    let mut o = AnyObject::new(n);
    kinds::reset_status(&mut o);
    o
}
