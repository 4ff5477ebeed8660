//! The cluster's Services for the node's pods' environment, read as the node (the Node
//! authorizer lets nodes list Services, as the kubelet's informer does): those of a
//! namespace and the API server's own (`default/kubernetes`), each namespace's read kept
//! for a while and answering while the cluster cannot be reached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams};
use podvisor_volumes::{ServiceLister, SourceError};

use crate::RemoteClient;

const FRESH: Duration = Duration::from_secs(20);
const TIMEOUT: Duration = Duration::from_secs(5);

/// A namespace's Services, as read at a time.
type Read = (Instant, Vec<Arc<Service>>);

pub struct ClusterServices {
    remote: RemoteClient,
    read: Mutex<HashMap<String, Read>>,
}

impl ClusterServices {
    pub fn new(remote: RemoteClient) -> Self {
        Self {
            remote,
            read: Mutex::new(HashMap::new()),
        }
    }

    fn kept(&self, ns: &str) -> Option<Read> {
        let read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        read.get(ns).cloned()
    }

    /// Every Service of `ns`, kept `FRESH`, the kept list answering when the cluster does not.
    async fn namespace(&self, ns: &str) -> Result<Vec<Arc<Service>>, SourceError> {
        let kept = self.kept(ns);
        if let Some((at, list)) = &kept
            && at.elapsed() < FRESH
        {
            return Ok(list.clone());
        }
        let api: Api<Service> = Api::namespaced(self.remote.kube(), ns);
        let listed = match tokio::time::timeout(TIMEOUT, api.list(&ListParams::default())).await {
            Ok(Ok(l)) => l.items.into_iter().map(Arc::new).collect::<Vec<_>>(),
            Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
                return Err(SourceError::Forbidden(s.message));
            }
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {TIMEOUT:?}"),
                };
                return match kept {
                    Some((_, list)) => Ok(list),
                    None => Err(SourceError::Unavailable(why)),
                };
            }
        };
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        read.insert(ns.to_string(), (Instant::now(), listed.clone()));
        Ok(listed)
    }
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
