//! `pods/exec`, `pods/attach` and `pods/portforward`: which requests they are, who may
//! make them, and what they are checked against (the pod as the API has it) before the
//! node's streaming sessions take over.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use podvisor_core::Kind;
use podvisor_store::actor::Get;
use podvisor_streaming::front::{Gate, TlsConn};
use podvisor_streaming::{PodTarget, Session, Sniffed, StreamError, Streams, Verb, refuse};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::handlers::ApiState;
use crate::target;

pub(crate) mod checks;

/// A streaming request, as its path names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    namespace: String,
    name: String,
    verb: Verb,
}

pub(crate) struct StreamGate {
    token: Arc<str>,
    state: ApiState,
}

impl StreamGate {
    pub(crate) fn new(token: Arc<str>, state: ApiState) -> StreamGate {
        StreamGate { token, state }
    }

    async fn session<C>(
        &self,
        io: &mut C,
        sniffed: &Sniffed,
        route: Route,
    ) -> Result<(), StreamError>
    where
        C: AsyncRead + AsyncWrite + Unpin,
    {
        let bearer = sniffed.head.header("authorization");
        if !podvisor_debug::auth::bearer_matches(bearer, &self.token) {
            return Err(StreamError::Unauthorized);
        }
        let streams = self.streams()?;
        let pod = self.pod(&route).await?;
        let session = Session::parse(route.verb, sniffed.head.query())?;
        let session = checks::session_for(&pod, route.verb, session)?;
        let target = PodTarget {
            namespace: route.namespace,
            name: route.name,
            uid: pod.metadata.uid.unwrap_or_default(),
        };
        let rest = sniffed.rest();
        streams
            .serve(io, &sniffed.head, rest, &target, &session)
            .await
    }

    fn streams(&self) -> Result<&Arc<Streams>, StreamError> {
        self.state.streams.as_ref().ok_or_else(|| {
            StreamError::Unavailable("this node's API serves no streaming sessions".into())
        })
    }

    async fn pod(&self, route: &Route) -> Result<Pod, StreamError> {
        let get = Get {
            kind: Kind::Pod,
            namespace: route.namespace.clone(),
            name: route.name.clone(),
        };
        let stored = self.state.ask(get).await.map_err(|e| match e.code {
            404 => StreamError::NotFound(e.message),
            _ => StreamError::Unavailable(e.message),
        })?;
        serde_json::from_slice(&stored.json)
            .map_err(|e| StreamError::Upstream(format!("the stored pod does not decode: {e}")))
    }
}

impl Gate for StreamGate {
    type Route = Route;

    /// The session an upgrade request asks for; `None` for every other request.
    fn route(&self, head: &podvisor_streaming::RequestHead) -> Option<Route> {
        if !head.is_upgrade() {
            return None;
        }
        route(head.path())
    }

    /// Serves the session, or answers why not.
    async fn serve(&self, mut io: TlsConn, sniffed: Sniffed, route: Route) {
        if let Err(e) = self.session(&mut io, &sniffed, route).await {
            tracing::debug!(error = %e, "API: streaming request refused");
            let _ = refuse(&mut io, &e).await;
        }
    }
}

/// `/api/v1/namespaces/{ns}/pods/{name}/{exec|attach|portforward}`.
fn route(path: &str) -> Option<Route> {
    let t = target::parse(path)?;
    if t.resource.kind != Kind::Pod {
        return None;
    }
    Some(Route {
        verb: Verb::from_subresource(t.subresource.as_deref()?)?,
        namespace: t.namespace?,
        name: t.name?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pods_streaming_subresources_route_here() {
        let r = route("/api/v1/namespaces/d/pods/web/exec").unwrap();
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("d", "web"));
        assert_eq!(r.verb, Verb::Exec);
        assert_eq!(
            route("/api/v1/namespaces/d/pods/web/portforward")
                .unwrap()
                .verb,
            Verb::PortForward
        );
        for other in [
            "/api/v1/namespaces/d/pods/web/log",
            "/api/v1/namespaces/d/pods/web",
            "/api/v1/namespaces/d/services/web/exec",
            "/api/v1/pods/exec",
        ] {
            assert_eq!(route(other), None, "{other}");
        }
    }
}
