//! ListPodSandbox and ListContainers, two ways: whole (every field, as CRI defines them) and
//! as *views*, which decode only what podvisor reads of a listing.
//!
//! The PLEG lists the runtime every second, and housekeeping and log rotation list it
//! too. Whole, a listing of 500 pods is some 580 KB carrying every label and annotation of
//! every sandbox and container (the pod's own labels and annotations, the kubelet's keys,
//! the spec hash...): decoded into owned maps, some 20,000 strings a second, most of the
//! idle agent's allocations. A view decodes ids, names, states and times, and keeps each
//! map entry as a slice of the response (no copy, no allocation), from which the few keys
//! podvisor reads back are taken ([`crate::labels`]).

use std::collections::HashSet;

use bytes::Bytes;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;

use super::CriClient;
use crate::error::CriError;
use crate::labels;
use crate::model::{self, PodRef, Sandbox};
use crate::proto::*;

/// A sandbox as a view of `PodSandbox` (same field numbers; the rest is skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SandboxView {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<PodSandboxMetadata>,
    #[prost(int32, tag = "3")]
    pub state: i32,
    #[prost(int64, tag = "4")]
    pub created_at: i64,
    /// Map entries as they came (`MapEntry` messages), sliced from the response.
    #[prost(bytes = "bytes", repeated, tag = "5")]
    pub labels: Vec<Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SandboxListing {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<SandboxView>,
}

/// A container as a view of `Container` (same field numbers; image fields skipped).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ContainerView {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub pod_sandbox_id: String,
    #[prost(message, optional, tag = "3")]
    pub metadata: Option<ContainerMetadata>,
    #[prost(int32, tag = "6")]
    pub state: i32,
    #[prost(int64, tag = "7")]
    pub created_at: i64,
    #[prost(bytes = "bytes", repeated, tag = "8")]
    pub labels: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "9")]
    pub annotations: Vec<Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ContainerListing {
    #[prost(message, repeated, tag = "1")]
    pub containers: Vec<ContainerView>,
}

/// One unary call decoded into `Resp`, which need not be the method's own response type:
/// any message with the same field numbers reads the same bytes.
pub(super) async fn call_as<Req, Resp>(
    channel: Channel,
    path: &'static str,
    req: Req,
) -> Result<tonic::Response<Resp>, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unknown(format!("Service was not ready: {e}")))?;
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    grpc.unary(
        tonic::Request::new(req),
        PathAndQuery::from_static(path),
        codec,
    )
    .await
}

impl CriClient {
    pub async fn list_pod_sandbox(
        &self,
        filter: Option<PodSandboxFilter>,
    ) -> Result<Vec<PodSandbox>, CriError> {
        let req = ListPodSandboxRequest { filter };
        self.unary(
            "ListPodSandbox",
            self.timeouts.call,
            call!(self.runtime, list_pod_sandbox, req),
        )
        .await
        .map(|r| r.items)
    }

    pub async fn list_containers(
        &self,
        filter: Option<ContainerFilter>,
    ) -> Result<Vec<Container>, CriError> {
        let req = ListContainersRequest { filter };
        self.unary(
            "ListContainers",
            self.timeouts.call,
            call!(self.runtime, list_containers, req),
        )
        .await
        .map(|r| r.containers)
    }

    /// The runtime's sandboxes and containers (those of pod `uid` only, if given), as
    /// views: the same two calls as [`Self::list_pod_sandbox`] and
    /// [`Self::list_containers`], made concurrently.
    pub(crate) async fn list_views(
        &self,
        uid: Option<&str>,
    ) -> Result<(Vec<SandboxView>, Vec<ContainerView>), CriError> {
        let selector = || {
            uid.map(|uid| [(labels::POD_UID.to_string(), uid.to_string())].into())
                .unwrap_or_default()
        };
        let sandboxes = ListPodSandboxRequest {
            filter: uid.map(|_| PodSandboxFilter {
                label_selector: selector(),
                ..Default::default()
            }),
        };
        let containers = ListContainersRequest {
            filter: uid.map(|_| ContainerFilter {
                label_selector: selector(),
                ..Default::default()
            }),
        };
        let (channel, limit) = (self.channel.clone(), self.timeouts.call);
        // Boxed, as `call!` boxes the others: a gRPC call's state is large.
        let sandboxes = self.unary(
            "ListPodSandbox",
            limit,
            Box::pin(call_as::<_, SandboxListing>(
                channel.clone(),
                "/runtime.v1.RuntimeService/ListPodSandbox",
                sandboxes,
            )),
        );
        let containers = self.unary(
            "ListContainers",
            limit,
            Box::pin(call_as::<_, ContainerListing>(
                channel,
                "/runtime.v1.RuntimeService/ListContainers",
                containers,
            )),
        );
        let (s, c) = tokio::try_join!(sandboxes, containers)?;
        Ok((s.items, c.containers))
    }
}

/// A map entry's key and value (a `MapEntry` message: key = 1, value = 2; either may be
/// absent when empty). `None` if it is not a well-formed entry of two strings.
fn split_entry(mut e: &[u8]) -> Option<(&str, &str)> {
    let (mut key, mut value) = ("", "");
    while !e.is_empty() {
        let tag = varint(&mut e)?;
        // Both fields are length-delimited (wire type 2); anything else is not an entry.
        if tag & 7 != 2 {
            return None;
        }
        let len = usize::try_from(varint(&mut e)?).ok()?;
        let field = e.get(..len)?;
        e = &e[len..];
        match tag >> 3 {
            1 => key = std::str::from_utf8(field).ok()?,
            2 => value = std::str::from_utf8(field).ok()?,
            _ => {}
        }
    }
    Some((key, value))
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The value of `key` among raw map entries.
pub(crate) fn entry<'a>(entries: &'a [Bytes], key: &str) -> Option<&'a str> {
    entries
        .iter()
        .filter_map(|e| split_entry(e))
        .find_map(|(k, v)| (k == key).then_some(v))
}

impl From<SandboxView> for Sandbox {
    fn from(s: SandboxView) -> Self {
        let m = s.metadata.unwrap_or_default();
        let state = PodSandboxState::try_from(s.state).unwrap_or_default();
        Self {
            managed_by: entry(&s.labels, labels::MANAGED_BY).map(str::to_string),
            id: s.id,
            pod: PodRef {
                uid: m.uid,
                name: m.name,
                namespace: m.namespace,
            },
            attempt: m.attempt,
            state: state.into(),
            created_at: s.created_at,
        }
    }
}

impl ContainerView {
    /// The model's container; `listed` holds the ids of the sandboxes the same listing
    /// showed (a container whose sandbox it did not show names its pod by its labels).
    fn into_container(self, listed: &HashSet<&str>) -> model::Container {
        let m = self.metadata.unwrap_or_default();
        let state = ContainerState::try_from(self.state).unwrap_or_default();
        let labelled_pod = (!listed.contains(self.pod_sandbox_id.as_str())).then(|| {
            let get = |k| entry(&self.labels, k).unwrap_or_default().to_string();
            PodRef {
                uid: get(labels::POD_UID),
                name: get(labels::POD_NAME),
                namespace: get(labels::POD_NAMESPACE),
            }
        });
        model::Container {
            managed_by: entry(&self.labels, labels::MANAGED_BY).map(str::to_string),
            grace_period: entry(&self.annotations, labels::GRACE_PERIOD)
                .and_then(|g| g.parse().ok()),
            labelled_pod,
            id: self.id,
            sandbox_id: self.pod_sandbox_id,
            name: m.name,
            attempt: m.attempt,
            state: state.into(),
            created_at: self.created_at,
        }
    }
}

/// A listing's views as the model's sandboxes and containers.
pub(crate) fn into_model(
    sandboxes: Vec<SandboxView>,
    containers: Vec<ContainerView>,
) -> (Vec<Sandbox>, Vec<model::Container>) {
    let containers = {
        let listed: HashSet<&str> = sandboxes.iter().map(|s| s.id.as_str()).collect();
        containers
            .into_iter()
            .map(|c| c.into_container(&listed))
            .collect()
    };
    (
        sandboxes.into_iter().map(Sandbox::from).collect(),
        containers,
    )
}

/// A ListPodSandbox and a ListContainers answer (encoded) as podvisor's views read them
/// (what [`crate::Runtime::list_pods`] decodes): for benchmarks.
pub fn decode_views(
    sandboxes: Bytes,
    containers: Bytes,
) -> Result<(Vec<Sandbox>, Vec<model::Container>), prost::DecodeError> {
    use prost::Message;
    let s = SandboxListing::decode(sandboxes)?;
    let c = ContainerListing::decode(containers)?;
    Ok(into_model(s.items, c.containers))
}

/// The ids of one pod's sandboxes and containers in a listing (each container with its
/// sandbox's id).
pub(crate) fn ids(sandboxes: Vec<SandboxView>, containers: Vec<ContainerView>) -> model::ListedIds {
    model::ListedIds {
        sandboxes: sandboxes.into_iter().map(|s| s.id).collect(),
        containers: containers
            .into_iter()
            .map(|c| (c.id, c.pod_sandbox_id))
            .collect(),
    }
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
