//! The cluster's Services for the node's pods' environment, as the kubelet keeps them: a
//! list and watch of every Service (the Node authorizer lets nodes list and watch them),
//! so a container started a second after its Service was made finds the Service's
//! variables (a per-namespace list kept 20 s did not: the conformance suite's "should
//! contain environment variables for services" failed on it). Until the watch has listed
//! once, a namespace is listed directly; while the cluster cannot be reached, what was
//! last known answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use podvisor_volumes::{ServiceLister, SourceError};

use crate::RemoteClient;
use crate::error::{from_kube, source_error};

const TIMEOUT: Duration = Duration::from_secs(5);
/// How long a watch is asked to last before it is made again (the apiserver's default
/// bounds are 30 to 60 minutes; shorter keeps a quiet connection from being cut).
const WATCH_SECONDS: u32 = 290;
const RETRY_MIN: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Every Service by namespace and name, and whether that is the cluster's whole list.
#[derive(Default)]
struct Known {
    synced: bool,
    by_namespace: HashMap<String, BTreeMap<String, Arc<Service>>>,
}

impl Known {
    fn put(&mut self, s: Service) {
        let ns = s.metadata.namespace.clone().unwrap_or_default();
        let name = s.metadata.name.clone().unwrap_or_default();
        self.by_namespace
            .entry(ns)
            .or_default()
            .insert(name, Arc::new(s));
    }

    fn remove(&mut self, s: &Service) {
        let ns = s.metadata.namespace.as_deref().unwrap_or_default();
        if let Some(m) = self.by_namespace.get_mut(ns) {
            m.remove(s.metadata.name.as_deref().unwrap_or_default());
        }
    }

    fn namespace(&self, ns: &str) -> Vec<Arc<Service>> {
        self.by_namespace
            .get(ns)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}

pub struct ClusterServices {
    remote: RemoteClient,
    known: Arc<Mutex<Known>>,
    watching: std::sync::Once,
}

impl ClusterServices {
    pub fn new(remote: RemoteClient) -> Self {
        Self {
            remote,
            known: Arc::default(),
            watching: std::sync::Once::new(),
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the list and watch now, on the current tokio runtime, as the kubelet starts
    /// its Service informer when it starts: else the first container's environment lists
    /// its namespace's and `default`'s Services itself (107 ms of the first pod's start on a
    /// node, `node-bench --hops`).
    pub fn following(self) -> Self {
        self.watch();
        self
    }

    /// Starts the list and watch, once, on the runtime of the first caller.
    fn watch(&self) {
        self.watching.call_once(|| {
            let api: Api<Service> = self.remote.api(None);
            tokio::spawn(follow(api, self.known.clone()));
        });
    }

    /// Every Service of `ns`: from the watch once it has listed, else listed directly (the
    /// last known list answering when the cluster does not).
    async fn namespace(&self, ns: &str) -> Result<Vec<Arc<Service>>, SourceError> {
        self.watch();
        if self.known().synced {
            return Ok(self.known().namespace(ns));
        }
        let api: Api<Service> = self.remote.api(Some(ns));
        let failed = match tokio::time::timeout(TIMEOUT, api.list(&ListParams::default())).await {
            Ok(Ok(l)) => return Ok(l.items.into_iter().map(Arc::new).collect()),
            Ok(Err(e)) => source_error(from_kube(e, "Service", "")),
            Err(_) => SourceError::Unavailable(format!("no answer within {TIMEOUT:?}")),
        };
        let kept = self.known();
        match failed {
            SourceError::Unavailable(_) if kept.by_namespace.contains_key(ns) => {
                Ok(kept.namespace(ns))
            }
            refused => Err(refused),
        }
    }
}

/// Follows the Services for good; after a failure it lists again, backing off (with
/// jitter, so many nodes do not retry in step) while the cluster cannot be reached.
async fn follow(api: Api<Service>, known: Arc<Mutex<Known>>) {
    let mut delay = RETRY_MIN;
    loop {
        let started = tokio::time::Instant::now();
        let Err(e) = list_then_watch(&api, &known).await;
        if started.elapsed() > RETRY_MAX {
            delay = RETRY_MIN;
        }
        tracing::debug!(error = %e, "the Services' watch failed; listing again");
        let half = u64::try_from(delay.as_millis() / 2).unwrap_or(0);
        let jitter = Duration::from_millis(u64::from(rand_ms()) % (half + 1));
        tokio::time::sleep(delay + jitter).await;
        delay = (delay * 2).min(RETRY_MAX);
    }
}

/// Lists every Service, then follows the changes from that list's version, watch after
/// watch; an error (the version expired, the cluster away) lists again.
async fn list_then_watch(
    api: &Api<Service>,
    known: &Mutex<Known>,
) -> Result<std::convert::Infallible, kube::Error> {
    let list = api.list(&ListParams::default()).await?;
    let mut version = list.metadata.resource_version.clone().unwrap_or_default();
    {
        let mut k = known.lock().unwrap_or_else(|e| e.into_inner());
        *k = Known::default();
        list.items.into_iter().for_each(|s| k.put(s));
        k.synced = true;
    }
    // Bookmarks are on by default: the version moves on while nothing changes.
    let params = WatchParams::default().timeout(WATCH_SECONDS);
    loop {
        let mut events = api.watch(&params, &version).await?.boxed();
        while let Some(event) = events.try_next().await? {
            let mut k = known.lock().unwrap_or_else(|e| e.into_inner());
            let seen = match event {
                WatchEvent::Added(s) | WatchEvent::Modified(s) => {
                    let v = s.metadata.resource_version.clone();
                    k.put(s);
                    v
                }
                WatchEvent::Deleted(s) => {
                    k.remove(&s);
                    s.metadata.resource_version.clone()
                }
                WatchEvent::Bookmark(b) => Some(b.metadata.resource_version),
                WatchEvent::Error(e) => return Err(kube::Error::Api(e)),
            };
            version = seen.unwrap_or(version);
        }
    }
}

/// A few pseudo-random milliseconds (the jitter that keeps many nodes from retrying in step).
fn rand_ms() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    h.finish() as u32
}

#[async_trait]
impl ServiceLister for ClusterServices {
    async fn services(&self, ns: &str, links: bool) -> Result<Vec<Arc<Service>>, SourceError> {
        let mut out = if links {
            self.namespace(ns).await?
        } else {
            Vec::new()
        };
        if !(links && ns == "default") {
            let master = self.namespace("default").await?;
            out.extend(
                master
                    .into_iter()
                    .filter(|s| s.metadata.name.as_deref() == Some("kubernetes")),
            );
        }
        Ok(out)
    }
}
